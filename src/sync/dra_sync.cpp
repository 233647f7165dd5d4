#include "gpushare/sync/dra_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/kube/dra_objects.h"

namespace gpushare::sync {

namespace {

// One resource kind: how its objects are decoded and applied to the model's DraState.
struct DraKind {
  std::string name;  // for logs
  // Decodes `object` and, with `state`, upserts it (or removes it when `deleted`).
  std::function<void(const json::Value& object, core::DraState& state, bool deleted)> apply;
  // Decodes `object` into the list being staged.
  std::function<void(const json::Value& object)> stage;
  // Replaces all objects of the kind in `state` by the staged ones.
  std::function<void(core::DraState& state)> replace;
  std::function<void()> clear;
};

}  // namespace

// One resource kind: decodes its objects and applies them to the model's DraState.
class DraSync::Handler final : public apiclient::ReflectorHandler {
 public:
  Handler(DraSync& owner, DraKind kind) : owner_(owner), kind_(std::move(kind)) {}

  void on_list_begin() override { kind_.clear(); }
  void on_list_item(const json::Value& object) override {
    try {
      kind_.stage(object);
    } catch (const std::exception& e) {
      spdlog::warn("ignoring {} object: {}", kind_.name, e.what());
    }
  }
  void on_replace(const std::string& rv) override {
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.update_dra([&](core::DraState& state) { kind_.replace(state); });
    });
    kind_.clear();
    spdlog::info("{} listed at resourceVersion {}", kind_.name, rv);
    if (!listed_) {
      listed_ = true;
      ++owner_.listed_kinds_;
    }
    owner_.check_warnings();
  }
  void on_event(apiclient::WatchEventType type, const json::Value& object) override {
    try {
      owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
        model.update_dra([&](core::DraState& state) {
          kind_.apply(object, state, type == apiclient::WatchEventType::kDeleted);
        });
      });
    } catch (const std::exception& e) {
      spdlog::warn("ignoring {} object: {}", kind_.name, e.what());
      return;
    }
    owner_.check_warnings();
  }

 private:
  DraSync& owner_;
  DraKind kind_;
  bool listed_ = false;  // listed once; reflector thread only
};

namespace {

// A Kind for objects decoded by `decode` into T, kept in DraState by upsert/remove/replace.
template <typename T, typename Decode, typename Key, typename Upsert, typename Remove,
          typename Replace>
DraKind make_kind(std::string name, Decode decode, Key key, Upsert upsert, Remove remove,
                  Replace replace) {
  auto staged = std::make_shared<std::vector<T>>();
  DraKind kind;
  kind.name = std::move(name);
  kind.apply = [=](const json::Value& object, core::DraState& state, bool deleted) {
    T decoded = decode(object);
    if (deleted) {
      (state.*remove)(key(decoded));
    } else {
      (state.*upsert)(std::move(decoded));
    }
  };
  kind.stage = [=](const json::Value& object) { staged->push_back(decode(object)); };
  kind.replace = [=](core::DraState& state) { (state.*replace)(std::move(*staged)); };
  kind.clear = [=] { staged->clear(); };
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
  std::vector<std::pair<std::string, DraKind>> kinds;
  kinds.emplace_back("resourceslices",
                     make_kind<core::DraSlice>("resourceslices", kube::decode_resource_slice,
                                               by_name, &DraState::upsert_slice,
                                               &DraState::remove_slice, &DraState::replace_slices));
  kinds.emplace_back("resourceclaims",
                     make_kind<core::DraClaim>("resourceclaims", kube::decode_resource_claim,
                                               by_key, &DraState::upsert_claim,
                                               &DraState::remove_claim, &DraState::replace_claims));
  kinds.emplace_back(
      "resourceclaimtemplates",
      make_kind<core::DraClaimTemplate>("resourceclaimtemplates", kube::decode_claim_template,
                                        by_key, &DraState::upsert_template,
                                        &DraState::remove_template, &DraState::replace_templates));
  kinds.emplace_back("deviceclasses", make_kind<core::DraDeviceClass>(
                                          "deviceclasses", kube::decode_device_class, by_name,
                                          &DraState::upsert_class, &DraState::remove_class,
                                          &DraState::replace_classes));
  for (auto& [resource, kind] : kinds) {
    handlers_.push_back(std::make_unique<Handler>(*this, std::move(kind)));
    apiclient::ReflectorOptions reflector;
    reflector.path = fmt::format("/apis/resource.k8s.io/v1/{}", resource);
    reflector.name = resource;
    if (options_.tune_reflector) options_.tune_reflector(reflector);
    reflectors_.push_back(
        std::make_unique<apiclient::Reflector>(client_, std::move(reflector), *handlers_.back()));
  }
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
