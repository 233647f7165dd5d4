#include "fakeapi/fake_apiserver_patch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "fakeapi/fake_apiserver_status.h"

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

// patchMergeKey of list fields (from k8s.io/api struct tags), by dotted path with "[]" for
// list elements. Lists not named here are atomic (replaced whole), as upstream.
const std::map<std::string, std::string, std::less<>>& merge_keys(Resource resource) {
  static const std::map<std::string, std::string, std::less<>> kPod = {
      {"metadata.ownerReferences", "uid"},
      {"spec.containers", "name"},
      {"spec.initContainers", "name"},
      {"spec.ephemeralContainers", "name"},
      {"spec.containers[].env", "name"},
      {"spec.initContainers[].env", "name"},
      {"spec.containers[].ports", "containerPort"},
      {"spec.initContainers[].ports", "containerPort"},
      {"spec.containers[].volumeMounts", "mountPath"},
      {"spec.initContainers[].volumeMounts", "mountPath"},
      {"spec.containers[].volumeDevices", "devicePath"},
      {"spec.volumes", "name"},
      {"spec.imagePullSecrets", "name"},
      {"spec.hostAliases", "ip"},
      {"spec.schedulingGates", "name"},
      {"spec.resourceClaims", "name"},
      {"status.conditions", "type"},
      {"status.podIPs", "ip"},
  };
  static const std::map<std::string, std::string, std::less<>> kNode = {
      {"metadata.ownerReferences", "uid"},
      {"spec.taints", "key"},
      {"status.conditions", "type"},
      {"status.addresses", "type"},
  };
  static const std::map<std::string, std::string, std::less<>> kOther = {
      {"metadata.ownerReferences", "uid"},
  };
  switch (resource) {
    case Resource::Pods:
      return kPod;
    case Resource::Nodes:
      return kNode;
    default:
      return kOther;
  }
}

// Lists of scalars with patchStrategy "merge": merged as sets.
bool is_merged_scalar_list(Resource resource, std::string_view path) {
  if (path == "metadata.finalizers") return true;
  return resource == Resource::Nodes && path == "spec.podCIDRs";
}

std::string child_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";
constexpr std::string_view kRetainKeys = "$retainKeys";

json strip_directives(json value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (!it.key().empty() && it.key()[0] == '$') {
        it = value.erase(it);
      } else {
        *it = strip_directives(*it);
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (json& element : value) element = strip_directives(element);
  }
  return value;
}

class StrategicMerger {
 public:
  explicit StrategicMerger(Resource resource) : resource_(resource) {}

  json merge_map(json original, const json& patch, const std::string& path) const {
    if (!patch.is_object()) throw bad_request("strategic merge patch must be a JSON object");
    if (auto directive = patch.find(kPatchDirective); directive != patch.end()) {
      const std::string value = directive->is_string() ? directive->get<std::string>() : "";
      if (value == "replace") return strip_directives(patch);
      if (value == "delete") return json();  // caller removes the key
      if (value != "merge") {
        throw bad_request(fmt::format("Unknown patch type: {} in map: {}", value, patch.dump()));
      }
    }
    if (!original.is_object()) original = json::object();
    for (auto it = patch.begin(); it != patch.end(); ++it) {
      const std::string& key = it.key();
      if (key == kPatchDirective || key == kRetainKeys || key.rfind(kSetElementOrder, 0) == 0)
        continue;
      if (key.rfind(kDeleteFromPrimitiveList, 0) == 0) {
        const std::string field = key.substr(kDeleteFromPrimitiveList.size());
        if (!it->is_array()) throw bad_request("invalid $deleteFromPrimitiveList: not a list");
        if (auto target = original.find(field); target != original.end() && target->is_array()) {
          json kept = json::array();
          for (const json& element : *target) {
            if (std::find(it->begin(), it->end(), element) == it->end()) kept.push_back(element);
          }
          *target = std::move(kept);
        }
        continue;
      }
      const json& value = *it;
      const std::string here = child_path(path, key);
      if (value.is_null()) {
        original.erase(key);
      } else if (value.is_object()) {
        json merged = merge_map(original.contains(key) ? original[key] : json(), value, here);
        if (merged.is_null()) {
          original.erase(key);  // {"$patch":"delete"}
        } else {
          original[key] = std::move(merged);
        }
      } else if (value.is_array()) {
        original[key] =
            merge_list(original.contains(key) ? original[key] : json::array(), value, here);
      } else {
        original[key] = value;
      }
    }
    return original;
  }

 private:
  json merge_list(json original, const json& patch, const std::string& path) const {
    if (!original.is_array()) original = json::array();
    const auto& keys = merge_keys(resource_);
    if (auto found = keys.find(path); found != keys.end()) {
      return merge_keyed_list(std::move(original), patch, path, found->second);
    }
    if (is_merged_scalar_list(resource_, path)) {
      for (const json& element : patch) {
        if (std::find(original.begin(), original.end(), element) == original.end()) {
          original.push_back(element);
        }
      }
      return original;
    }
    // Atomic list, unless it says {"$patch":"replace"} (which means the same thing here).
    json replaced = json::array();
    for (const json& element : patch) {
      if (element.is_object() && element.contains(kPatchDirective)) continue;
      replaced.push_back(strip_directives(element));
    }
    return replaced;
  }

  json merge_keyed_list(json original, const json& patch, const std::string& path,
                        const std::string& merge_key) const {
    const std::string element_path = path + "[]";
    for (const json& element : patch) {
      if (!element.is_object()) throw bad_request(fmt::format("list {} must hold objects", path));
      const std::string directive =
          element.contains(kPatchDirective) && element[kPatchDirective].is_string()
              ? element[kPatchDirective].get<std::string>()
              : "";
      if (directive == "replace") {
        // {"$patch":"replace"} as an element replaces the whole list with the other elements.
        json replaced = json::array();
        for (const json& other : patch) {
          if (!other.contains(kPatchDirective)) replaced.push_back(strip_directives(other));
        }
        return replaced;
      }
      auto key = element.find(merge_key);
      if (key == element.end()) {
        throw bad_request(fmt::format("map: {} does not contain declared merge key: {}",
                                      element.dump(), merge_key));
      }
      auto match = std::find_if(original.begin(), original.end(), [&](const json& candidate) {
        return candidate.is_object() && candidate.contains(merge_key) &&
               candidate[merge_key] == *key;
      });
      if (directive == "delete") {
        if (match != original.end()) original.erase(match);
      } else if (match != original.end()) {
        *match = merge_map(*match, element, element_path);
      } else {
        original.push_back(merge_map(json::object(), element, element_path));
      }
    }
    return original;
  }

  Resource resource_;
};

std::string media_type(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  type.erase(
      std::remove_if(type.begin(), type.end(), [](unsigned char c) { return std::isspace(c); }),
      type.end());
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

}  // namespace

std::optional<PatchType> patch_type_from_content_type(std::string_view content_type) {
  const std::string type = media_type(content_type);
  if (type == "application/strategic-merge-patch+json") return PatchType::Strategic;
  if (type == "application/merge-patch+json") return PatchType::Merge;
  if (type == "application/json-patch+json") return PatchType::Json;
  return std::nullopt;
}

json apply_patch(PatchType type, Resource resource, const json& original, const json& patch) {
  switch (type) {
    case PatchType::Merge: {
      if (!patch.is_object()) throw bad_request("merge patch must be a JSON object");
      json result = original;
      result.merge_patch(patch);
      return result;
    }
    case PatchType::Json: {
      if (!patch.is_array()) {
        throw bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
      }
      for (const json& operation : patch) {
        if (!operation.is_object() || !operation.contains("op") || !operation.contains("path")) {
          throw bad_request(fmt::format("invalid JSON patch operation: {}", operation.dump()));
        }
      }
      try {
        return original.patch(patch);
      } catch (const json::exception& error) {
        // patch.go: an operation that cannot be applied is a 422 with no reason of its own.
        throw ApiError(422, "Invalid", error.what());
      }
    }
    case PatchType::Strategic:
      return StrategicMerger(resource).merge_map(original, patch, "");
  }
  throw std::logic_error("unknown patch type");
}

}  // namespace gpushare::testing::fakeapi
