// The requests of the extender protocol (k8s.io/kube-scheduler/extender/v1), one decoder per
// message, on simdjson's DOM: ExtenderArgs (filter, prioritize), ExtenderBindingArgs (bind) and
// ExtenderPreemptionArgs (preempt). The Pod inside goes through the one pod decoder,
// kube::decode_pod. Members are matched as Go's decoder matches them (json::find_member): an
// exact key wins, else a key equal ignoring ASCII case; of duplicates the last. The replies are
// written in wire_encode.cpp.

#include "gpushare/wire/wire_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "gpushare/json/document.h"
#include "gpushare/json/source_spans.h"
#include "gpushare/kube/json_fields.h"
#include "gpushare/wire/warm_parser.h"

namespace gpushare::wire {

static_assert(kRequestBodyPadding >= simdjson::SIMDJSON_PADDING);

using kube::BadInput;

namespace {

// Bodies above this use the large-body parser; smaller ones one of the small-body parsers.
constexpr std::size_t kLargeBody = std::size_t{1} << 20;

// Large bodies come from kube-scheduler's full-Node filters, one after another while it works
// through its queue: they are decoded one at a time, and the parser they grew is kept for the
// next one for this long.
WarmParser& warm_parser() {
  static WarmParser warm(std::chrono::seconds(10));
  return warm;
}

// Bodies up to kLargeBody (every filter and prioritize) lease one of at most kSmallParsers
// parsers (one per core, 4 to 16), not one per HTTP worker thread: a parser keeps a multiple of
// the largest body it parsed (json::Parser::allocated_bytes), so the parser count, not
// --http-threads, bounds what they hold (docs/hardening.md), and each is freed 10 s after its
// last use. A decode is all CPU, so more of them at once than cores would not finish sooner: the
// next waits for a parser.
constexpr std::size_t kSmallParsers = 16;

WarmParser& small_parsers() {
  static WarmParser pool(
      std::chrono::seconds(10),
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 4, kSmallParsers));
  return pool;
}

// The parser of one request, leased for the decode.
class RequestParser {
 public:
  explicit RequestParser(std::size_t body_size)
      : pool_(body_size > kLargeBody ? warm_parser() : small_parsers()), leased_(pool_.take()) {}
  ~RequestParser() { pool_.give_back(std::move(leased_)); }
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  json::Parser& get() { return *leased_; }

 private:
  WarmParser& pool_;
  std::unique_ptr<json::Parser> leased_;
};

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Parses a whole request body: in place when `padded` (the buffer has SIMDJSON_PADDING bytes to
// spare after it), else through the parser's padded copy.
json::Object parse_request(json::Parser& parser, std::string_view body, bool padded) {
  if (body.empty()) throw BadInput("empty request body");
  // A UTF-8 byte-order mark is skipped, as nlohmann-json did before simdjson.
  if (body.starts_with(kByteOrderMark)) body.remove_prefix(kByteOrderMark.size());
  json::Value value;
  const simdjson::error_code error =
      padded ? parser.parse_padded(body, value) : parser.parse(body, value);
  if (error != simdjson::SUCCESS) throw BadInput("request body is not valid JSON");
  json::Object object;
  if (value.get_object().get(object) != simdjson::SUCCESS)
    throw BadInput("request body must be a JSON object");
  return object;
}

kube::PodInfo pod_member(json::Object body, const kube::ResourceNames& names) {
  const std::optional<json::Value> pod = kube::present_field(body, "Pod");
  if (!pod) throw BadInput("missing Pod");
  if (!pod->is_object())
    throw BadInput(fmt::format("Pod must be an object, got {}", json::type_name(*pod)));
  return kube::decode_pod(*pod, names);
}

// metadata.name of one Nodes.items[] element; BadInput for anything that is not a Node.
std::string node_name_of(json::Value node) {
  json::Object object;
  if (node.get_object().get(object) != simdjson::SUCCESS) {
    throw BadInput("Nodes.items[] must be Node objects with metadata");
  }
  const std::optional<json::Object> metadata =
      kube::object_field(object, "metadata", "node metadata");
  if (!metadata) throw BadInput("Nodes.items[] must be Node objects with metadata");
  std::string name = kube::string_field(*metadata, "name", "node metadata.name");
  if (name.empty()) throw BadInput("Nodes.items[] has a node without a name");
  return name;
}

// The text of each element of body[nodes_index][items_index], which the DOM has just validated
// as an array of objects: filter echoes surviving nodes back verbatim. `body` is the text the
// request parser parsed (byte-order mark removed), whose structural positions it still holds.
std::vector<std::string_view> item_texts(const json::Parser& parser, std::string_view body,
                                         std::size_t nodes_index, std::size_t items_index) {
  const std::array<std::size_t, 2> path{nodes_index, items_index};
  std::optional<std::vector<std::string_view>> texts =
      json::array_element_texts(body, parser.structural_positions(), path);
  // Not reached while simdjson lays out its structurals as version 3 does (SourceSpans tests).
  if (!texts) throw std::logic_error("Nodes.items: the parser's structural positions do not match");
  return std::move(*texts);
}

// The arguments, with node_texts viewing `body` (which must be padded, see parse_request).
ExtenderArgs decode_extender_args_viewing(std::string_view body, const kube::ResourceNames& names) {
  RequestParser parser(body.size());
  const json::Object top = parse_request(parser.get(), body, /*padded=*/true);
  ExtenderArgs args;
  args.pod = pod_member(top, names);
  if (const auto node_names = kube::array_field(top, "NodeNames", "NodeNames")) {
    args.node_names.emplace();
    // The names take no more bytes than the body they came in.
    args.node_names->reserve(node_names->size(), body.size());
    for (const json::Value name : *node_names) {
      std::string_view text;
      if (name.get_string().get(text) != simdjson::SUCCESS)
        throw BadInput("NodeNames must hold strings");
      args.node_names->push_back(text);
    }
  }
  const std::optional<json::Member> nodes = json::find_member_at(top, "Nodes");
  if (nodes && !nodes->value.is_null()) {
    const json::Object nodes_object = kube::as_object(nodes->value, "Nodes");
    args.node_texts.emplace();
    const std::optional<json::Member> items = json::find_member_at(nodes_object, "items");
    if (items && !items->value.is_null()) {
      json::Array array;
      if (items->value.get_array().get(array) != simdjson::SUCCESS) {
        throw BadInput(
            fmt::format("Nodes.items must be an array, got {}", json::type_name(items->value)));
      }
      std::vector<std::string> item_names;
      item_names.reserve(array.size());
      for (const json::Value item : array) item_names.push_back(node_name_of(item));
      if (!args.node_names) {
        if (body.starts_with(kByteOrderMark)) body.remove_prefix(kByteOrderMark.size());
        const std::vector<std::string_view> texts =
            item_texts(parser.get(), body, nodes->index, items->index);
        args.node_texts->reserve(texts.size());
        for (std::size_t i = 0; i < texts.size() && i < item_names.size(); ++i) {
          args.node_texts->push_back({std::move(item_names[i]), texts[i]});
        }
      }
    }
  }
  if (!args.node_names && !args.node_texts) throw BadInput("neither NodeNames nor Nodes is set");
  if (args.node_names) args.node_texts.reset();  // nodeCacheCapable: names are authoritative
  return args;
}

std::int64_t integer_or_zero(json::Object object, std::string_view key, std::string_view what) {
  const std::optional<json::Value> value = kube::present_field(object, key);
  if (!value) return 0;
  if (value->is_int64()) return value->get_int64().value_unsafe();
  // Beyond int64 (simdjson reads such a number as uint64): refused, as Go's decoder of the int64
  // field refuses it; a cast wrapped 18446744073709551615 to -1 and echoed that.
  if (value->is_uint64()) throw BadInput(fmt::format("{} is out of range (int64)", what));
  throw BadInput(fmt::format("{} must be an integer", what));
}

// The members of a map-like object in key order, the last of duplicates: the order in which the
// decoders before simdjson met them (a std::map), so the first problem reported is the same.
std::map<std::string_view, json::Value> members_by_key(json::Object object) {
  std::map<std::string_view, json::Value> members;
  for (const auto field : object) members.insert_or_assign(field.key, field.value);
  return members;
}

// Each node's victims in a NodeNameToMetaVictims or NodeNameToVictims map; `read_pod` reads one
// element of the node's Pods.
template <typename ReadPod>
void read_victims(json::Object map, std::string_view map_name, std::string_view pods_what,
                  PreemptionArgs& args, const ReadPod& read_pod) {
  for (const auto& [node, value] : members_by_key(map)) {
    json::Object victims_object;
    if (value.get_object().get(victims_object) != simdjson::SUCCESS) {
      throw BadInput(fmt::format("{} values must be objects", map_name));
    }
    MetaVictims victims;
    if (const auto pods = kube::array_field(victims_object, "Pods", pods_what)) {
      for (const json::Value pod : *pods) read_pod(pod, victims);
    }
    victims.num_pdb_violations =
        integer_or_zero(victims_object, "NumPDBViolations", "NumPDBViolations");
    args.victims.emplace(node, std::move(victims));
  }
}

}  // namespace

RequestParserBytes request_parser_bytes() {
  return {small_parsers().kept_bytes(), warm_parser().kept_bytes()};
}

std::vector<std::string> ExtenderArgs::offered_names() const {
  if (node_names) return node_names->strings();
  std::vector<std::string> names;
  if (node_texts) {
    names.reserve(node_texts->size());
    for (const NodeText& node : *node_texts) names.push_back(node.name);
  }
  return names;
}

ExtenderArgs decode_extender_args_body(std::string_view body, const kube::ResourceNames& names) {
  // A padded copy the arguments keep when they view it (full Node objects).
  std::string copy;
  copy.reserve(body.size() + kRequestBodyPadding);
  copy.assign(body);
  return decode_extender_args_body(std::move(copy), names);
}

ExtenderArgs decode_extender_args_body(std::string&& body, const kube::ResourceNames& names) {
  json::reserve_padding(body);
  auto source = std::make_shared<const std::string>(std::move(body));
  ExtenderArgs args = decode_extender_args_viewing(*source, names);
  if (args.node_texts && !args.node_texts->empty()) args.node_source = std::move(source);
  return args;
}

BindingArgs decode_binding_args(std::string_view body) {
  RequestParser parser(body.size());
  const json::Object top = parse_request(parser.get(), body, /*padded=*/false);
  BindingArgs args;
  args.pod_name = kube::string_field(top, "PodName", "PodName");
  args.pod_namespace = kube::string_field(top, "PodNamespace", "PodNamespace");
  args.pod_uid = kube::string_field(top, "PodUID", "PodUID");
  args.node = kube::string_field(top, "Node", "Node");
  if (args.pod_name.empty()) throw BadInput("missing PodName");
  if (args.pod_namespace.empty()) throw BadInput("missing PodNamespace");
  if (args.node.empty()) throw BadInput("missing Node");
  return args;
}

PreemptionArgs decode_preemption_args(std::string_view body, const kube::ResourceNames& names) {
  RequestParser parser(body.size());
  const json::Object top = parse_request(parser.get(), body, /*padded=*/false);
  PreemptionArgs args;
  args.pod = pod_member(top, names);
  if (const auto meta = kube::object_field(top, "NodeNameToMetaVictims", "NodeNameToMetaVictims")) {
    read_victims(*meta, "NodeNameToMetaVictims", "MetaVictims.Pods", args,
                 [](json::Value pod, MetaVictims& victims) {
                   json::Object pod_object;
                   if (pod.get_object().get(pod_object) != simdjson::SUCCESS)
                     throw BadInput("MetaVictims.Pods[] must be objects");
                   std::string uid = kube::string_field(pod_object, "UID", "MetaPod.UID");
                   if (uid.empty()) throw BadInput("MetaVictims.Pods[] without UID");
                   victims.pod_uids.push_back(std::move(uid));
                 });
  } else if (const auto full = kube::object_field(top, "NodeNameToVictims", "NodeNameToVictims")) {
    read_victims(*full, "NodeNameToVictims", "Victims.Pods", args,
                 [&](json::Value pod, MetaVictims& victims) {
                   kube::PodInfo info = kube::decode_pod(pod, names);
                   if (info.uid.empty()) throw BadInput("Victims.Pods[] without metadata.uid");
                   victims.pod_uids.push_back(info.uid);
                   args.victim_pods.emplace(info.uid, std::move(info));
                 });
  } else {
    throw BadInput("neither NodeNameToMetaVictims nor NodeNameToVictims is set");
  }
  return args;
}

}  // namespace gpushare::wire
