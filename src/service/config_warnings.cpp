#include "gpushare/service/config_warnings.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpushare::service {

std::vector<ConfigWarning> unhealthy_configmap_warnings(const kube::UnhealthyGpus& parsed) {
  std::vector<ConfigWarning> warnings;
  const std::string marked =
      parsed.indices.empty() ? "none" : fmt::format("{}", fmt::join(parsed.indices, ","));
  for (const auto& [key, value] : parsed.unknown_keys) {
    warnings.push_back(
        {parsed.object, std::string(ConfigWarning::kUnknownKey), key, value,
         fmt::format("ConfigMap {}: data key \"{}\" (value \"{}\") is not read, only \"gpus\" "
                     "is; GPUs of node {} marked unhealthy: {}",
                     parsed.object, key, value, parsed.node, marked),
         parsed.node});
  }
  for (const auto& entry : parsed.rejected) {
    warnings.push_back(
        {parsed.object, std::string(ConfigWarning::kBadValue), "gpus", entry,
         fmt::format("ConfigMap {}: data.gpus entry \"{}\" is not a GPU index and is ignored; "
                     "GPUs of node {} marked unhealthy: {}",
                     parsed.object, entry, parsed.node, marked),
         parsed.node});
  }
  return warnings;
}

bool ConfigWarnings::set(const std::string& object, std::vector<ConfigWarning> warnings) {
  std::lock_guard lock(mutex_);
  auto it = by_object_.find(object);
  if (warnings.empty()) {
    if (it == by_object_.end()) return false;
    by_object_.erase(it);
    return true;
  }
  if (it != by_object_.end() && it->second == warnings) return false;
  by_object_.insert_or_assign(object, std::move(warnings));
  return true;
}

std::size_t ConfigWarnings::retain_only(const std::vector<std::string>& objects) {
  std::lock_guard lock(mutex_);
  return std::erase_if(by_object_, [&](const auto& entry) {
    return std::find(objects.begin(), objects.end(), entry.first) == objects.end();
  });
}

std::vector<ConfigWarning> ConfigWarnings::all() const {
  std::lock_guard lock(mutex_);
  std::vector<ConfigWarning> out;
  for (const auto& [object, warnings] : by_object_)
    out.insert(out.end(), warnings.begin(), warnings.end());
  return out;
}

std::map<std::string, std::size_t> ConfigWarnings::count_by_kind() const {
  std::map<std::string, std::size_t> counts{{std::string(ConfigWarning::kUnknownKey), 0},
                                            {std::string(ConfigWarning::kBadValue), 0}};
  std::lock_guard lock(mutex_);
  for (const auto& [object, warnings] : by_object_) {
    for (const auto& warning : warnings) ++counts[warning.kind];
  }
  return counts;
}

}  // namespace gpushare::service
