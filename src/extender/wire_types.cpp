#include "gpushare/extender/wire_types.h"

#include <fmt/format.h>

namespace gpushare::extender {

using kube::BadInput;
using kube::find_key;
using kube::get_array;
using kube::get_object;
using kube::get_string;

namespace {

kube::PodInfo decode_pod(const Json& body, const kube::ResourceNames& names) {
  const Json* pod = get_object(body, "Pod", "Pod");
  if (pod == nullptr) throw BadInput("missing Pod");
  return kube::parse_pod(*pod, names);
}

std::vector<std::string> string_list(const Json& array, std::string_view what) {
  std::vector<std::string> result;
  result.reserve(array.size());
  for (const Json& item : array) {
    if (!item.is_string()) throw BadInput(fmt::format("{} must hold strings", what));
    result.push_back(item.get<std::string>());
  }
  return result;
}

std::string node_name_of(const Json& node) {
  const Json* metadata = node.is_object() ? get_object(node, "metadata", "node metadata") : nullptr;
  if (metadata == nullptr) throw BadInput("Nodes.items[] must be Node objects with metadata");
  std::string name = get_string(*metadata, "name", "node metadata.name");
  if (name.empty()) throw BadInput("Nodes.items[] has a node without a name");
  return name;
}

std::int64_t integer_or_zero(const Json& object, std::string_view key, std::string_view what) {
  const Json* value = find_key(object, key);
  if (value == nullptr || value->is_null()) return 0;
  if (!value->is_number_integer()) throw BadInput(fmt::format("{} must be an integer", what));
  return value->get<std::int64_t>();
}

Json string_map(const std::map<std::string, std::string>& values) {
  Json object = Json::object();
  for (const auto& [key, value] : values) object[key] = value;
  return object;
}

}  // namespace

std::vector<std::string> ExtenderArgs::offered_names() const {
  if (node_names) return *node_names;
  std::vector<std::string> names;
  if (nodes) {
    names.reserve(nodes->size());
    for (const Json& node : *nodes) names.push_back(node_name_of(node));
  }
  return names;
}

Json parse_json_body(std::string_view body) {
  if (body.empty()) throw BadInput("empty request body");
  Json parsed = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw BadInput("request body is not valid JSON");
  if (!parsed.is_object()) throw BadInput("request body must be a JSON object");
  return parsed;
}

ExtenderArgs decode_extender_args(const Json& body, const kube::ResourceNames& names) {
  ExtenderArgs args;
  args.pod = decode_pod(body, names);
  if (const Json* node_names = get_array(body, "NodeNames", "NodeNames")) {
    args.node_names = string_list(*node_names, "NodeNames");
  }
  if (const Json* nodes = get_object(body, "Nodes", "Nodes")) {
    const Json* items = get_array(*nodes, "items", "Nodes.items");
    args.nodes.emplace();
    if (items != nullptr) {
      args.nodes->reserve(items->size());
      for (const Json& item : *items) {
        node_name_of(item);  // validates
        args.nodes->push_back(item);
      }
    }
  }
  if (!args.node_names && !args.nodes) throw BadInput("neither NodeNames nor Nodes is set");
  if (args.node_names && args.nodes) args.nodes.reset();  // nodeCacheCapable: names are authoritative
  return args;
}

BindingArgs decode_binding_args(const Json& body) {
  BindingArgs args;
  args.pod_name = get_string(body, "PodName", "PodName");
  args.pod_namespace = get_string(body, "PodNamespace", "PodNamespace");
  args.pod_uid = get_string(body, "PodUID", "PodUID");
  args.node = get_string(body, "Node", "Node");
  if (args.pod_name.empty()) throw BadInput("missing PodName");
  if (args.pod_namespace.empty()) throw BadInput("missing PodNamespace");
  if (args.node.empty()) throw BadInput("missing Node");
  return args;
}

PreemptionArgs decode_preemption_args(const Json& body, const kube::ResourceNames& names) {
  PreemptionArgs args;
  args.pod = decode_pod(body, names);
  if (const Json* meta = get_object(body, "NodeNameToMetaVictims", "NodeNameToMetaVictims")) {
    for (auto it = meta->begin(); it != meta->end(); ++it) {
      if (!it.value().is_object()) throw BadInput("NodeNameToMetaVictims values must be objects");
      MetaVictims victims;
      if (const Json* pods = get_array(it.value(), "Pods", "MetaVictims.Pods")) {
        for (const Json& pod : *pods) {
          if (!pod.is_object()) throw BadInput("MetaVictims.Pods[] must be objects");
          std::string uid = get_string(pod, "UID", "MetaPod.UID");
          if (uid.empty()) throw BadInput("MetaVictims.Pods[] without UID");
          victims.pod_uids.push_back(std::move(uid));
        }
      }
      victims.num_pdb_violations = integer_or_zero(it.value(), "NumPDBViolations", "NumPDBViolations");
      args.victims.emplace(it.key(), std::move(victims));
    }
  } else if (const Json* full = get_object(body, "NodeNameToVictims", "NodeNameToVictims")) {
    for (auto it = full->begin(); it != full->end(); ++it) {
      if (!it.value().is_object()) throw BadInput("NodeNameToVictims values must be objects");
      MetaVictims victims;
      if (const Json* pods = get_array(it.value(), "Pods", "Victims.Pods")) {
        for (const Json& pod : *pods) {
          kube::PodInfo info = kube::parse_pod(pod, names);
          if (info.uid.empty()) throw BadInput("Victims.Pods[] without metadata.uid");
          victims.pod_uids.push_back(info.uid);
          args.victim_pods.emplace(info.uid, std::move(info));
        }
      }
      victims.num_pdb_violations = integer_or_zero(it.value(), "NumPDBViolations", "NumPDBViolations");
      args.victims.emplace(it.key(), std::move(victims));
    }
  } else {
    throw BadInput("neither NodeNameToMetaVictims nor NodeNameToVictims is set");
  }
  return args;
}

std::string encode_filter_result(const FilterResult& result) {
  Json body;
  if (result.nodes) {
    body["Nodes"] = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", Json::object()},
                     {"items", *result.nodes}};
  } else {
    body["Nodes"] = nullptr;
  }
  body["NodeNames"] = result.node_names;
  body["FailedNodes"] = string_map(result.failed);
  body["FailedAndUnresolvableNodes"] = string_map(result.failed_unresolvable);
  body["Error"] = result.error;
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string encode_priorities(const std::vector<HostPriority>& priorities) {
  Json body = Json::array();
  for (const auto& priority : priorities) {
    body.push_back({{"Host", priority.host}, {"Score", priority.score}});
  }
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string encode_binding_result(std::string_view error) {
  return Json{{"Error", std::string(error)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims) {
  Json map = Json::object();
  for (const auto& [node, meta] : victims) {
    Json pods = Json::array();
    for (const auto& uid : meta.pod_uids) pods.push_back({{"UID", uid}});
    map[node] = {{"Pods", std::move(pods)}, {"NumPDBViolations", meta.num_pdb_violations}};
  }
  return Json{{"NodeNameToMetaVictims", std::move(map)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string encode_error(std::string_view error) {
  return Json{{"Error", std::string(error)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpushare::extender
