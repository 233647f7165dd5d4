#include "gpushare/extender/wire_types.h"

#include <charconv>
#include <initializer_list>
#include <cstring>

#include <fmt/format.h>

#include "gpushare/kube/annotations.h"
#include "json_scan.h"

namespace gpushare::extender {

using kube::BadInput;
using kube::find_key;
using kube::get_array;
using kube::get_object;
using kube::get_string;

namespace {

kube::PodInfo pod_member(const Json& body, const kube::ResourceNames& names) {
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

}  // namespace

std::vector<std::string> ExtenderArgs::offered_names() const {
  if (node_names) return *node_names;
  std::vector<std::string> names;
  if (node_texts) {
    names.reserve(node_texts->size());
    for (const NodeText& node : *node_texts) names.push_back(node.name);
  } else if (nodes) {
    names.reserve(nodes->size());
    for (const Json& node : *nodes) names.push_back(node_name_of(node));
  }
  return names;
}

Json parse_json_body(std::string_view body) {
  if (body.empty()) throw BadInput("empty request body");
  // nlohmann's lexer takes a NUL byte for the end of the input, so "{...}\0junk" would parse.
  // JSON text never holds a raw NUL (strings must escape it), so any NUL makes the body invalid,
  // as decode_extender_args_body and Go's decoder already say. Found by extender_args_fuzzer.
  if (body.find('\0') != std::string_view::npos) throw BadInput("request body is not valid JSON");
  Json parsed = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw BadInput("request body is not valid JSON");
  if (!parsed.is_object()) throw BadInput("request body must be a JSON object");
  return parsed;
}

ExtenderArgs decode_extender_args(const Json& body, const kube::ResourceNames& names) {
  ExtenderArgs args;
  args.pod = pod_member(body, names);
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

// ---------------------------------------------------------------------------------------------
// decode_extender_args_body: one validating pass over the text (json_scan.h). Member lookup
// mirrors find_key on the DOM nlohmann would have built: duplicate keys keep the last value
// (nlohmann's std::map), an exact key match wins, else the byte-wise smallest key that matches
// ignoring case. Errors are raised in decode_extender_args' order, after the whole body has
// been validated, so invalid JSON anywhere is reported as such, as before.
namespace {

using json_scan::Kind;
using json_scan::Scanner;

// One occurrence of a key that matches a wanted key ignoring case, with what its value held.
template <typename T>
struct Occurrence {
  std::string key;
  Kind kind = Kind::kNull;
  T value{};
};

template <typename T>
Occurrence<T>* find_occurrence(std::vector<Occurrence<T>>& found, std::string_view wanted) {
  Occurrence<T>* exact = nullptr;
  for (auto& o : found) {
    if (o.key == wanted) exact = &o;  // later duplicates replace earlier ones
  }
  if (exact != nullptr) return exact;
  Occurrence<T>* smallest = nullptr;
  for (auto& o : found) {
    if (smallest == nullptr || o.key <= smallest->key) smallest = &o;
  }
  return smallest;
}

// The occurrence find_key would return, if its value is not null.
template <typename T>
Occurrence<T>* present(std::vector<Occurrence<T>>& found, std::string_view wanted) {
  Occurrence<T>* o = find_occurrence(found, wanted);
  return o != nullptr && o->kind != Kind::kNull ? o : nullptr;
}

struct NameValue {
  std::string text;  // when the kind is string
};

struct MetadataValue {
  std::vector<Occurrence<NameValue>> names;
};

// metadata of one Node item: only its "name" matters.
MetadataValue scan_metadata(Scanner& s, std::string& key) {
  MetadataValue metadata;
  s.begin_object();
  bool first = true;
  while (s.next_member(key, first)) {
    if (!json_scan::equal_ignoring_case(key, "name")) {
      s.skip_value();
      continue;
    }
    Occurrence<NameValue>& name = metadata.names.emplace_back();
    name.key = key;
    name.kind = s.peek_kind();
    if (name.kind == Kind::kString) {
      s.read_string(name.value.text);
    } else {
      s.skip_value();
    }
  }
  return metadata;
}

struct ItemsValue {
  std::vector<NodeText> nodes;
  std::string error;  // the first item's problem, as node_name_of words it
};

// One Nodes.items[] element: its text span and metadata.name, or why it is not a Node.
void scan_item(Scanner& s, std::string& key, ItemsValue& items) {
  const Kind kind = s.peek_kind();
  const char* begin = s.position();
  std::string error;
  std::string name;
  if (kind != Kind::kObject) {
    s.skip_value();
    error = "Nodes.items[] must be Node objects with metadata";
  } else {
    std::vector<Occurrence<MetadataValue>> metadata;
    s.begin_object();
    bool first = true;
    while (s.next_member(key, first)) {
      if (!json_scan::equal_ignoring_case(key, "metadata")) {
        s.skip_value();
        continue;
      }
      Occurrence<MetadataValue>& found = metadata.emplace_back();
      found.key = key;
      found.kind = s.peek_kind();
      if (found.kind == Kind::kObject) {
        found.value = scan_metadata(s, key);
      } else {
        s.skip_value();
      }
    }
    auto* chosen = present(metadata, "metadata");
    if (chosen == nullptr) {
      error = "Nodes.items[] must be Node objects with metadata";
    } else if (chosen->kind != Kind::kObject) {
      error = fmt::format("node metadata must be an object, got {}", json_scan::kind_name(chosen->kind));
    } else if (auto* name_value = present(chosen->value.names, "name")) {
      if (name_value->kind != Kind::kString) {
        error = fmt::format("node metadata.name must be a string, got {}",
                            json_scan::kind_name(name_value->kind));
      } else {
        name = name_value->value.text;
      }
    }
    if (error.empty() && name.empty()) error = "Nodes.items[] has a node without a name";
  }
  if (!items.error.empty()) return;  // only the first problem is reported
  if (!error.empty()) {
    items.error = std::move(error);
    return;
  }
  items.nodes.push_back({std::move(name), std::string_view(begin, static_cast<std::size_t>(s.position() - begin))});
}

struct NodesValue {
  std::vector<Occurrence<ItemsValue>> items;
};

NodesValue scan_nodes(Scanner& s, std::string& key) {
  NodesValue nodes;
  s.begin_object();
  bool first = true;
  while (s.next_member(key, first)) {
    if (!json_scan::equal_ignoring_case(key, "items")) {
      s.skip_value();
      continue;
    }
    Occurrence<ItemsValue>& items = nodes.items.emplace_back();
    items.key = key;
    items.kind = s.peek_kind();
    if (items.kind != Kind::kArray) {
      s.skip_value();
      continue;
    }
    s.begin_array();
    bool first_item = true;
    while (s.next_element(first_item)) scan_item(s, key, items.value);
  }
  return nodes;
}

struct NamesValue {
  std::vector<std::string> names;
  bool all_strings = true;
};

NamesValue scan_names(Scanner& s) {
  NamesValue names;
  s.begin_array();
  bool first = true;
  while (s.next_element(first)) {
    if (s.peek_kind() == Kind::kString) {
      s.read_string(names.names.emplace_back());
    } else {
      names.all_strings = false;
      s.skip_value();
    }
  }
  return names;
}

struct Span {
  std::string_view text;
};

// The Pod as a DOM holding only what kube::parse_pod reads, built from the text without
// materialising the rest (env, volumes, tolerations, labels, managedFields...). parse_pod
// looks members up with find_key, so every member whose key matches a wanted one ignoring case
// is kept, whole when it is not the expected container; the result parses exactly as the
// full object would, errors included.
using Builder = Json (*)(Scanner&);
struct Wanted {
  std::string_view key;
  Builder build;
};

Json whole_value(Scanner& s) {
  const Kind kind = s.peek_kind();
  if (kind == Kind::kString) {
    std::string text;
    s.read_string(text);
    return Json(std::move(text));
  }
  const char* begin = s.position();
  s.skip_value();
  return Json::parse(begin, s.position());
}

Json pick_members(Scanner& s, std::initializer_list<Wanted> wanted) {
  if (s.peek_kind() != Kind::kObject) return whole_value(s);
  Json object = Json::object();
  std::string key;
  s.begin_object();
  bool first = true;
  while (s.next_member(key, first)) {
    const Wanted* match = nullptr;
    for (const Wanted& w : wanted) {
      if (json_scan::equal_ignoring_case(key, w.key)) match = &w;
    }
    if (match == nullptr) {
      s.skip_value();
    } else {
      object[key] = match->build(s);
    }
  }
  return object;
}

Json pod_annotations(Scanner& s) {
  // parse_pod reads the device-plugin annotations by exact key.
  if (s.peek_kind() != Kind::kObject) return whole_value(s);
  Json object = Json::object();
  std::string key;
  s.begin_object();
  bool first = true;
  while (s.next_member(key, first)) {
    if (key == kube::kAnnotationGpuIndex || key == kube::kAnnotationPodRequest ||
        key == kube::kAnnotationDeviceMemory || key == kube::kAnnotationAssigned ||
        key == kube::kAnnotationAssumeTime) {
      object[key] = whole_value(s);
    } else {
      s.skip_value();
    }
  }
  return object;
}

Json pod_metadata(Scanner& s) {
  return pick_members(s, {{"uid", whole_value},
                          {"name", whole_value},
                          {"namespace", whole_value},
                          {"resourceVersion", whole_value},
                          {"deletionTimestamp", whole_value},
                          {"annotations", pod_annotations}});
}

Json container_resources(Scanner& s) {
  return pick_members(s, {{"limits", whole_value}, {"requests", whole_value}});
}

Json pod_container(Scanner& s) {
  return pick_members(s, {{"name", whole_value}, {"resources", container_resources}});
}

// An array whose elements are pruned by `element`; anything else is kept whole.
template <Builder element>
Json array_of(Scanner& s) {
  if (s.peek_kind() != Kind::kArray) return whole_value(s);
  Json array = Json::array();
  s.begin_array();
  bool first = true;
  while (s.next_element(first)) array.push_back(element(s));
  return array;
}

// An init container also says whether it is a sidecar (restartPolicy Always).
Json pod_init_container(Scanner& s) {
  return pick_members(s, {{"name", whole_value},
                          {"resources", container_resources},
                          {"restartPolicy", whole_value}});
}

Json pod_spec(Scanner& s) {
  return pick_members(s, {{"nodeName", whole_value},
                          {"containers", array_of<pod_container>},
                          {"initContainers", array_of<pod_init_container>},
                          {"overhead", whole_value}});
}

Json pod_status(Scanner& s) { return pick_members(s, {{"phase", whole_value}}); }

Json pod_subset(std::string_view text) {
  Scanner s(text);
  return pick_members(s, {{"metadata", pod_metadata}, {"spec", pod_spec}, {"status", pod_status}});
}

}  // namespace

namespace {

// decode_extender_args_body, with node_texts viewing `body` itself.
ExtenderArgs decode_extender_args_viewing(std::string_view body, const kube::ResourceNames& names) {
  if (body.empty()) throw BadInput("empty request body");
  std::vector<Occurrence<Span>> pods;
  std::vector<Occurrence<NamesValue>> node_names;
  std::vector<Occurrence<NodesValue>> nodes;
  bool is_object = false;
  try {
    Scanner s(body);
    s.skip_bom();
    is_object = s.peek_kind() == Kind::kObject;
    if (!is_object) {
      s.skip_value();
    } else {
      std::string key;
      s.begin_object();
      bool first = true;
      while (s.next_member(key, first)) {
        const Kind kind = s.peek_kind();
        const char* begin = s.position();
        if (json_scan::equal_ignoring_case(key, "pod")) {
          s.skip_value();
          pods.push_back({key, kind, {std::string_view(begin, static_cast<std::size_t>(s.position() - begin))}});
        } else if (json_scan::equal_ignoring_case(key, "nodenames")) {
          auto& found = node_names.emplace_back();
          found.key = key;
          found.kind = kind;
          if (kind == Kind::kArray) {
            found.value = scan_names(s);
          } else {
            s.skip_value();
          }
        } else if (json_scan::equal_ignoring_case(key, "nodes")) {
          auto& found = nodes.emplace_back();
          found.key = key;
          found.kind = kind;
          if (kind == Kind::kObject) {
            found.value = scan_nodes(s, key);
          } else {
            s.skip_value();
          }
        } else {
          s.skip_value();
        }
      }
    }
    s.skip_ws();
    if (!s.at_end()) s.fail("unexpected characters after the JSON value");
  } catch (const json_scan::SyntaxError&) {
    throw BadInput("request body is not valid JSON");
  }
  if (!is_object) throw BadInput("request body must be a JSON object");

  ExtenderArgs args;
  auto* pod = find_occurrence(pods, "Pod");
  if (pod == nullptr || pod->kind == Kind::kNull) throw BadInput("missing Pod");
  if (pod->kind != Kind::kObject) {
    throw BadInput(fmt::format("Pod must be an object, got {}", json_scan::kind_name(pod->kind)));
  }
  args.pod = kube::parse_pod(pod_subset(pod->value.text), names);

  if (auto* found = present(node_names, "NodeNames")) {
    if (found->kind != Kind::kArray) {
      throw BadInput(fmt::format("NodeNames must be an array, got {}", json_scan::kind_name(found->kind)));
    }
    if (!found->value.all_strings) throw BadInput("NodeNames must hold strings");
    args.node_names = std::move(found->value.names);
  }
  if (auto* found = present(nodes, "Nodes")) {
    if (found->kind != Kind::kObject) {
      throw BadInput(fmt::format("Nodes must be an object, got {}", json_scan::kind_name(found->kind)));
    }
    args.node_texts.emplace();
    if (auto* items = present(found->value.items, "items")) {
      if (items->kind != Kind::kArray) {
        throw BadInput(fmt::format("Nodes.items must be an array, got {}", json_scan::kind_name(items->kind)));
      }
      if (!items->value.error.empty()) throw BadInput(items->value.error);
      args.node_texts = std::move(items->value.nodes);
    }
  }
  if (!args.node_names && !args.node_texts) throw BadInput("neither NodeNames nor Nodes is set");
  if (args.node_names) args.node_texts.reset();  // nodeCacheCapable: names are authoritative
  return args;
}

}  // namespace

ExtenderArgs decode_extender_args_body(std::string_view body, const kube::ResourceNames& names) {
  ExtenderArgs args = decode_extender_args_viewing(body, names);
  if (args.node_texts && !args.node_texts->empty()) {
    // The texts view the caller's buffer: re-point them into a copy the arguments own.
    const std::string_view first = args.node_texts->front().json;
    const std::string_view last = args.node_texts->back().json;
    const std::size_t offset = static_cast<std::size_t>(first.data() - body.data());
    auto source = std::make_shared<const std::string>(first.data(),
                                                      static_cast<std::size_t>(last.data() + last.size() - first.data()));
    for (NodeText& node : *args.node_texts) {
      node.json = std::string_view(source->data() + (node.json.data() - body.data()) - offset, node.json.size());
    }
    args.node_source = std::move(source);
  }
  return args;
}

ExtenderArgs decode_extender_args_body(std::string&& body, const kube::ResourceNames& names) {
  auto source = std::make_shared<const std::string>(std::move(body));
  ExtenderArgs args = decode_extender_args_viewing(*source, names);
  if (args.node_texts && !args.node_texts->empty()) args.node_source = std::move(source);
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
  args.pod = pod_member(body, names);
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

namespace {

bool valid_utf8(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p != end) {
    if (static_cast<unsigned char>(*p) < 0x80) {
      ++p;
      continue;
    }
    const int length = json_scan::utf8_sequence_length(p, end);
    if (length == 0) return false;
    p += length;
  }
  return true;
}

// Appends `text` as a JSON string exactly as nlohmann's dump(-1, ' ', false, replace) writes it
// (the slow path of Writer::string: text with characters to escape or non-ASCII bytes).
void append_escaped(std::string& out, std::string_view text, std::size_t special) {
  if (!valid_utf8(text.substr(special))) {
    out += Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out.push_back('"');
  out.append(text.data(), special);
  const char* run = text.data() + special;
  const char* end = text.data() + text.size();
  for (const char* p = run; p != end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(run, p);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
      }
    }
    run = p + 1;
  }
  out.append(run, end);
  out.push_back('"');
}

// Writes a reply into one buffer, sized up front from an estimate, with inline bounds checks.
class Writer {
 public:
  explicit Writer(std::size_t estimate) : buffer_(std::max<std::size_t>(estimate, 64), '\0') {
    p_ = buffer_.data();
    end_ = p_ + buffer_.size();
  }

  void raw(std::string_view text) {
    room(text.size());
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
  }
  void raw(char c) {
    room(1);
    *p_++ = c;
  }
  // A JSON string, byte for byte as nlohmann writes it.
  void string(std::string_view text) {
    const std::size_t special = json_scan::first_special(text);
    if (special != text.size()) {
      std::string escaped;
      append_escaped(escaped, text, special);
      raw(escaped);
      return;
    }
    room(text.size() + 2);
    *p_++ = '"';
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
    *p_++ = '"';
  }
  void integer(std::int64_t value) {
    room(24);
    p_ = std::to_chars(p_, end_, value).ptr;
  }
  void string_map(const std::map<std::string, std::string>& values) {
    raw('{');
    bool first = true;
    for (const auto& [key, value] : values) {
      if (!first) raw(',');
      first = false;
      string(key);
      raw(':');
      string(value);
    }
    raw('}');
  }
  std::string finish() {
    buffer_.resize(static_cast<std::size_t>(p_ - buffer_.data()));
    return std::move(buffer_);
  }

 private:
  void room(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) >= n) return;
    const std::size_t used = static_cast<std::size_t>(p_ - buffer_.data());
    buffer_.resize(std::max(buffer_.size() * 2, used + n));
    p_ = buffer_.data() + used;
    end_ = buffer_.data() + buffer_.size();
  }

  std::string buffer_;
  char* p_;
  char* end_;
};

}  // namespace

// The replies are written directly rather than through a DOM, byte for byte as nlohmann
// would dump them (keys in its sorted order, compact, invalid UTF-8 replaced).
std::string encode_filter_result(const FilterResult& result) {
  std::size_t estimate = 160 + result.error.size();
  for (const auto& name : result.node_names) estimate += name.size() + 3;
  for (const auto* map : {&result.failed, &result.failed_unresolvable}) {
    for (const auto& [node, reason] : *map) estimate += node.size() + reason.size() + 6;
  }
  if (result.node_texts) {
    for (std::string_view text : *result.node_texts) estimate += text.size() + 1;
  }
  Writer out(estimate);
  out.raw("{\"Error\":");
  out.string(result.error);
  out.raw(",\"FailedAndUnresolvableNodes\":");
  out.string_map(result.failed_unresolvable);
  out.raw(",\"FailedNodes\":");
  out.string_map(result.failed);
  out.raw(",\"NodeNames\":[");
  for (std::size_t i = 0; i < result.node_names.size(); ++i) {
    if (i > 0) out.raw(',');
    out.string(result.node_names[i]);
  }
  out.raw("],\"Nodes\":");
  if (result.nodes || result.node_texts) {
    out.raw("{\"apiVersion\":\"v1\",\"items\":[");
    bool first = true;
    if (result.nodes) {
      for (const Json& node : *result.nodes) {
        if (!first) out.raw(',');
        first = false;
        out.raw(node.dump(-1, ' ', false, Json::error_handler_t::replace));
      }
    } else {
      for (std::string_view text : *result.node_texts) {
        if (!first) out.raw(',');
        first = false;
        out.raw(text);
      }
    }
    out.raw("],\"kind\":\"NodeList\",\"metadata\":{}}");
  } else {
    out.raw("null");
  }
  out.raw('}');
  return out.finish();
}

std::string encode_priorities(const std::vector<HostPriority>& priorities) {
  std::size_t estimate = 2;
  for (const auto& priority : priorities) estimate += priority.host.size() + 24;
  Writer out(estimate);
  out.raw('[');
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    out.raw(i > 0 ? std::string_view(",{\"Host\":") : std::string_view("{\"Host\":"));
    out.string(priorities[i].host);
    out.raw(",\"Score\":");
    out.integer(priorities[i].score);
    out.raw('}');
  }
  out.raw(']');
  return out.finish();
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
