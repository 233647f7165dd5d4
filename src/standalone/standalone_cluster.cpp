#include "gpushare/standalone/standalone_cluster.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/files/text_file.h"
#include "gpushare/files/yaml_json.h"
#include "gpushare/kube/claim_check.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/service/config_warnings.h"
#include "gpushare/service/pin_warnings.h"
#include "gpushare/standalone/cluster_file_check.h"

namespace gpushare::standalone {
using kube::Json;

namespace {

std::string read_text(const std::filesystem::path& path) {
  return files::read_text_file(path, "cluster file");
}

kube::Json parse_text(const std::string& text, const std::filesystem::path& path) {
  kube::Json parsed = kube::Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    try {
      parsed =
          files::yaml_to_json(text);  // JSON is YAML too, but a JSON parser is stricter and faster
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("cluster file {}: {}", path.string(), e.what()));
    }
  }
  return parsed;
}

}  // namespace

kube::Json read_cluster_file(const std::filesystem::path& path) {
  return parse_text(read_text(path), path);
}

kube::Json load_cluster_file(const std::filesystem::path& path, const kube::ResourceNames& names) {
  const std::string text = read_text(path);
  kube::Json list = parse_text(text, path);
  std::vector<std::string> fatal;
  for (const ClusterFileProblem& problem : check_cluster_list(list, names)) {
    // Lines are looked up only for problems: the JSON fast path above has no positions.
    const int line = line_of(text, problem.path);
    const std::string where = line > 0 ? fmt::format("{}:{}", path.string(), line) : path.string();
    if (problem.fatal) {
      fatal.push_back(fmt::format("{}: {}", where, problem.message));
    } else {
      spdlog::warn("{}: {}", where, problem.message);
    }
  }
  if (!fatal.empty()) {
    throw std::runtime_error(fmt::format("cluster file {} has {} mistake{}; not serving it:\n{}",
                                         path.string(), fatal.size(), fatal.size() == 1 ? "" : "s",
                                         fmt::join(fatal, "\n")));
  }
  return list;
}

StandaloneCluster::StandaloneCluster(const kube::Json& list, kube::ResourceNames names,
                                     std::optional<core::DraConfig> dra)
    : names_(std::move(names)), dra_(std::move(dra)) {
  const kube::Json* items = list.is_object() ? kube::find_key(list, "items") : nullptr;
  if (items == nullptr || !items->is_array()) {
    throw std::runtime_error("cluster file must be a v1 List with an items array");
  }
  for (std::size_t i = 0; i < items->size(); ++i) {
    const kube::Json& item = (*items)[i];
    const std::string kind = item.is_object() ? kube::get_string(item, "kind", "kind") : "";
    try {
      if (kind == "Node") {
        nodes_.push_back(kube::parse_node(item, names_));
        if (!nodes_.back().misconfiguration.empty()) {
          spdlog::warn("node {}: {}", nodes_.back().name, nodes_.back().misconfiguration);
        }
      } else if (kind == "Pod") {
        kube::PodInfo pod = kube::parse_pod(item, names_);
        if (pod.uid.empty()) pod.uid = "standalone-" + pod.key();
        if (auto allocation = kube::allocation_of(pod)) allocations_.push_back(*allocation);
        pods_.emplace(pod.key(), std::move(pod));
      } else if (kind == "ConfigMap") {
        if (auto unhealthy = kube::parse_unhealthy_configmap(item)) {
          for (const auto& warning : service::unhealthy_configmap_warnings(*unhealthy))
            spdlog::warn("{}", warning.message);
          unhealthy_.emplace_back(unhealthy->node, unhealthy->indices);
        }
      } else if (kube::is_dra_kind(kind) && dra_) {
        add_dra_object(kind, item.dump());
      } else if (kube::is_dra_kind(kind)) {
        spdlog::warn("cluster file item {}: ignoring {} (DRA is off)", i, kind);
      } else {
        spdlog::warn("cluster file item {}: ignoring kind \"{}\"", i, kind);
      }
    } catch (const kube::BadInput& e) {
      throw std::runtime_error(fmt::format("cluster file item {} ({}): {}", i, kind, e.what()));
    }
  }
}

// Through the same decoders as live mode's watches, so a file and an API server read alike.
void StandaloneCluster::add_dra_object(std::string_view kind, const std::string& text) {
  if (kind == "ResourceSlice") {
    dra_slices_.push_back(kube::parse_resource_slice(text));
  } else if (kind == "ResourceClaim") {
    dra_claims_.push_back(kube::parse_resource_claim(text));
  } else if (kind == "ResourceClaimTemplate") {
    dra_templates_.push_back(kube::parse_claim_template(text));
  } else {
    dra_classes_.push_back(kube::parse_device_class(text));
  }
}

void StandaloneCluster::populate(core::ClusterModel& model) const {
  for (const auto& [node, indices] : unhealthy_) model.set_unhealthy(node, indices);
  for (const auto& node : nodes_) model.upsert_node(node);
  if (dra_) {
    model.update_dra([&](core::DraState& state) {
      state.set_config(*dra_);
      state.replace_classes(dra_classes_);
      state.replace_slices(dra_slices_);
      state.replace_templates(dra_templates_);
      state.replace_claims(dra_claims_);
    });
    for (const std::string& warning : model.dra().warnings(
             [&](std::string_view node) { return model.find_node(node) != nullptr; })) {
      spdlog::warn("DRA: {}", warning);  // once, at start-up
    }
  }
  for (const auto& allocation : allocations_) {
    if (auto pod = pods_.find(allocation.namespace_name + "/" + allocation.name);
        pod != pods_.end()) {
      if (const std::string warning = kube::claim_warning(model, pod->second, allocation);
          !warning.empty()) {
        spdlog::warn("{}", warning);  // once, at start-up
      }
    }
    model.add_pod(allocation);
  }
  // Pending pods of the file pinned to models no node of it carries: said once, at start-up.
  service::UnmatchedPinWarnings unmatched;
  for (const auto& [key, pod] : pods_) {
    if (auto warning = unmatched.check(pod, model.gpu_models(), names_.gpu_model_label)) {
      spdlog::warn("{}", *warning);
    }
  }
}

std::optional<kube::PodInfo> StandaloneCluster::find_pod(std::string_view namespace_name,
                                                         std::string_view name) {
  std::lock_guard lock(mutex_);
  auto it = pods_.find(fmt::format("{}/{}", namespace_name, name));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

service::BindOutcome StandaloneCluster::bind(
    const kube::PodInfo& pod, std::string_view node,
    const std::map<std::string, std::string>& annotations) {
  std::lock_guard lock(mutex_);
  auto it = pods_.find(pod.key());
  if (it == pods_.end()) return {false, fmt::format("pod {} not found", pod.key()), false};
  if (!it->second.node_name.empty()) {
    return {false,
            fmt::format("pod {} is already assigned to node {}", pod.key(), it->second.node_name),
            false};
  }
  it->second.node_name = std::string(node);
  annotations_[pod.key()] = annotations;
  spdlog::info("standalone: pod {} bound to node {} in memory", pod.key(), node);
  return {true, "", false};
}

void StandaloneCluster::note_pod_seen(const kube::PodInfo& pod) {
  std::lock_guard lock(mutex_);
  if (auto it = pods_.find(pod.key()); it != pods_.end()) {
    // A pending pod re-created under the same name: remember the newer one.
    if (it->second.node_name.empty() && !pod.uid.empty()) it->second = pod;
    return;
  }
  if (remembered_.size() >= kMaxRememberedPods) {
    pods_.erase(remembered_.front());
    remembered_.pop_front();
  }
  kube::PodInfo copy = pod;
  if (copy.uid.empty()) copy.uid = "standalone-" + copy.key();
  remembered_.push_back(copy.key());
  pods_.emplace(copy.key(), std::move(copy));
}

inspect::PodPhaseLookup StandaloneCluster::pod_phases() {
  return [this](std::string_view, std::string_view namespace_name,
                std::string_view name) -> std::optional<std::string> {
    const auto pod = find_pod(namespace_name, name);
    return pod ? std::optional<std::string>(pod->phase) : std::nullopt;
  };
}

std::map<std::string, std::map<std::string, std::string>> StandaloneCluster::bound_annotations()
    const {
  std::lock_guard lock(mutex_);
  return annotations_;
}

}  // namespace gpushare::standalone
