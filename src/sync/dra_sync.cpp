#include "gpushare/sync/dra_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/kube/dra_objects.h"
#include "watch_handler.h"

namespace gpushare::sync {

namespace {

// What a DRA kind tells its DraSync.
struct DraHooks {
  std::function<void()> first_listed;  // the kind's first complete list
  std::function<void()> changed;       // after each change the model took
};

// The kind of DRA objects decoded by `decode` into T, kept in the model's DraState by
// upsert/remove/replace.
template <typename T, typename Decode, typename Key, typename Upsert, typename Remove,
          typename Replace>
WatchKind<T> make_kind(std::string name, service::ModelStore& store, DraHooks hooks, Decode decode,
                       Key key, Upsert upsert, Remove remove, Replace replace) {
  struct State {
    std::vector<T> staged;  // the list in progress
    bool listed = false;    // listed once
  };
  auto state = std::make_shared<State>();
  WatchKind<T> kind;
  kind.what = fmt::format("{} object", name);
  kind.decode = decode;
  kind.begin = [state] { state->staged.clear(); };
  kind.stage = [state](T object) { state->staged.push_back(std::move(object)); };
  kind.replace = [=, &store](const std::string& rv) {
    store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.update_dra([&](core::DraState& dra) { (dra.*replace)(std::move(state->staged)); });
    });
    state->staged.clear();
    spdlog::info("{} listed at resourceVersion {}", name, rv);
    if (!state->listed) {
      state->listed = true;
      hooks.first_listed();
    }
    hooks.changed();
  };
  kind.apply = [=, &store](apiclient::WatchEventType type, T object) {
    store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.update_dra([&](core::DraState& dra) {
        if (type == apiclient::WatchEventType::kDeleted) {
          (dra.*remove)(key(object));
        } else {
          (dra.*upsert)(std::move(object));
        }
      });
    });
    hooks.changed();
  };
  return kind;
}

}  // namespace

DraSync::DraSync(apiclient::ApiClient& client, service::ModelStore& store, DraSyncOptions options)
    : client_(client), store_(store), options_(std::move(options)) {}

DraSync::~DraSync() {
  stop();
}

bool DraSync::start() {
  const auto discovery = client_.get("/apis/resource.k8s.io/v1");
  if (!discovery.ok() && discovery.error().is_not_found()) {
    spdlog::info("DRA off: the API server does not serve resource.k8s.io/v1");
    return false;
  }
  if (!discovery.ok()) {
    spdlog::warn("DRA: discovery of resource.k8s.io/v1 failed ({}); watching it anyway",
                 discovery.error().describe());
  }
  enabled_ = true;
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    model.update_dra([&](core::DraState& state) { state.set_config(options_.config); });
  });
  using core::DraState;
  const auto by_name = [](const auto& object) { return object.name; };
  const auto by_key = [](const auto& object) { return object.namespace_name + "/" + object.name; };
  const DraHooks hooks{[this] { ++listed_kinds_; }, [this] { check_warnings(); }};
  const auto watch = [&](const std::string& resource, auto kind) {
    using T = typename decltype(kind)::Object;
    handlers_.push_back(std::make_unique<WatchHandler<T>>(std::move(kind)));
    reflectors_.push_back(make_reflector(client_,
                                         fmt::format("/apis/resource.k8s.io/v1/{}", resource),
                                         resource, options_.tune_reflector, *handlers_.back()));
  };
  watch("resourceslices",
        make_kind<core::DraSlice>("resourceslices", store_, hooks, kube::decode_resource_slice,
                                  by_name, &DraState::upsert_slice, &DraState::remove_slice,
                                  &DraState::replace_slices));
  watch("resourceclaims",
        make_kind<core::DraClaim>("resourceclaims", store_, hooks, kube::decode_resource_claim,
                                  by_key, &DraState::upsert_claim, &DraState::remove_claim,
                                  &DraState::replace_claims));
  watch("resourceclaimtemplates",
        make_kind<core::DraClaimTemplate>(
            "resourceclaimtemplates", store_, hooks, kube::decode_claim_template, by_key,
            &DraState::upsert_template, &DraState::remove_template, &DraState::replace_templates));
  watch("deviceclasses",
        make_kind<core::DraDeviceClass>("deviceclasses", store_, hooks, kube::decode_device_class,
                                        by_name, &DraState::upsert_class, &DraState::remove_class,
                                        &DraState::replace_classes));
  for (auto& reflector : reflectors_) reflector->start();
  spdlog::info("DRA on: devices of driver {} with a memory capacity are GPUs, 1 unit = {} bytes",
               options_.config.driver, options_.config.bytes_per_unit);
  return true;
}

void DraSync::stop() {
  for (auto& reflector : reflectors_) reflector->stop();
}

bool DraSync::synced() const {
  for (const auto& reflector : reflectors_) {
    if (!reflector->has_synced()) return false;
  }
  return true;
}

std::vector<std::string> DraSync::warnings() const {
  if (!enabled_ || listed_kinds_.load() < handlers_.size()) return {};
  return store_.read([](const core::ClusterModel& model, const core::PlacementPolicy&) {
    return model.dra().warnings(
        [&](std::string_view node) { return model.find_node(node) != nullptr; });
  });
}

std::vector<service::ConfigWarning> DraSync::config_warnings() const {
  std::vector<service::ConfigWarning> result;
  if (!enabled_ || listed_kinds_.load() < handlers_.size()) return result;
  const std::vector<core::DraWarning> problems =
      store_.read([](const core::ClusterModel& model, const core::PlacementPolicy&) {
        return model.dra().problems(
            [&](std::string_view node) { return model.find_node(node) != nullptr; });
      });
  const std::string kind(service::ConfigWarning::kDraObject);
  for (const core::DraWarning& problem : problems) {
    if (result.size() == kMaxConfigWarnings) {
      result.push_back({"", kind, "", "",
                        fmt::format("{} more DRA problems are not listed here; the log names "
                                    "each as it appears",
                                    problems.size() - kMaxConfigWarnings),
                        ""});
      break;
    }
    result.push_back({problem.object, kind, "", "", problem.message, problem.node});
  }
  return result;
}

void DraSync::check_warnings() {
  // Until every kind has been listed once, a claim may name a slice not listed yet; until the
  // nodes are, a node not listed yet would read as gone.
  if (listed_kinds_.load() < handlers_.size()) return;
  if (options_.nodes_listed && !options_.nodes_listed()) return;
  std::lock_guard lock(warnings_mutex_);
  // The first time, every problem standing; after that only those the change brought
  // (DraState::take_new_problems: the cost of what changed, not of the cluster).
  std::vector<std::string> fresh;
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    const auto known = [&](std::string_view node) { return model.find_node(node) != nullptr; };
    model.update_dra([&](core::DraState& state) {
      for (auto& problem : state.take_new_problems(known))
        fresh.push_back(std::move(problem.message));
      if (!logged_all_) fresh = state.warnings(known);
    });
  });
  logged_all_ = true;
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    if (i == 0 || fresh[i] != fresh[i - 1]) spdlog::warn("DRA: {}", fresh[i]);
  }
}

}  // namespace gpushare::sync
