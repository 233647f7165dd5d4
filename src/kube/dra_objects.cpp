#include "gpushare/kube/dra_objects.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "gpushare/kube/json_fields.h"
#include "gpushare/kube/quantity_json.h"

namespace gpushare::kube {
namespace {

json::Object object_of(const json::Value& value, std::string_view kind) {
  json::Object object;
  if (value.get_object().get(object) != simdjson::SUCCESS)
    throw BadInput(fmt::format("{} must be an object, got {}", kind, json::type_name(value)));
  return object;
}

struct Meta {
  std::string namespace_name, name, uid;
};

Meta meta_of(json::Object object, std::string_view kind) {
  const auto metadata = object_field(object, "metadata", kind);
  if (!metadata) throw BadInput(fmt::format("{} has no metadata", kind));
  Meta meta;
  meta.name = string_field(*metadata, "name", kind);
  meta.namespace_name = string_field(*metadata, "namespace", kind, "default");
  meta.uid = string_field(*metadata, "uid", kind);
  if (meta.name.empty()) throw BadInput(fmt::format("{} metadata.name is empty", kind));
  return meta;
}

// The object, checked, with its namespace, name (and uid) copied into `out`.
template <typename T>
json::Object named_object(const json::Value& value, std::string_view kind, T& out) {
  const json::Object object = object_of(value, kind);
  Meta meta = meta_of(object, kind);
  out.namespace_name = std::move(meta.namespace_name);
  out.name = std::move(meta.name);
  if constexpr (requires { out.uid; }) out.uid = std::move(meta.uid);
  return object;
}

std::int64_t int_field(json::Object object, std::string_view key, std::string_view what,
                       std::int64_t fallback) {
  const auto value = present_field(object, key);
  if (!value) return fallback;
  std::int64_t number = 0;
  if (value->get_int64().get(number) != simdjson::SUCCESS)
    throw BadInput(fmt::format("{} must be an integer", what));
  return number;
}

bool bool_field(json::Object object, std::string_view key) {
  const auto value = present_field(object, key);
  bool flag = false;
  return value && value->get_bool().get(flag) == simdjson::SUCCESS && flag;
}

// Bytes of a memory quantity ("80Gi"); BadInput naming `what` when it is not one.
std::int64_t bytes_of(const json::Value& value, std::string_view what) {
  return quantity_of(value, what).units_ceil();
}

// "memory" in a map keyed by capacity names, with or without a domain prefix; `driver` empty
// accepts any domain (a claim's request names no driver).
std::optional<json::Value> memory_member(json::Object map, std::string_view driver) {
  for (const auto field : map) {
    const std::string_view key = field.key;
    const bool match = key == "memory" || (driver.empty() ? key.ends_with("/memory")
                                                          : is_memory_capacity(key, driver));
    if (match && !field.value.is_null()) return field.value;
  }
  return std::nullopt;
}

core::DraDevice decode_device(json::Object device, std::string_view driver) {
  core::DraDevice result;
  result.name = string_field(device, "name", "ResourceSlice device name");
  // v1beta1 nests the device's fields under `basic`.
  json::Object fields = device;
  if (const auto basic = object_field(device, "basic", "ResourceSlice device basic"))
    fields = *basic;
  result.shareable = bool_field(fields, "allowMultipleAllocations");
  if (const auto attributes = object_field(fields, "attributes", "device attributes")) {
    for (const auto field : *attributes) {
      const std::string_view key = field.key;
      json::Object attribute;
      if (field.value.get_object().get(attribute) != simdjson::SUCCESS) continue;
      if (key == "productName" || key == fmt::format("{}/productName", driver))
        result.product = string_field(attribute, "string", "device attribute productName");
      std::string value;
      for (const auto typed : attribute) {
        std::string_view text;
        bool flag = false;
        std::int64_t number = 0;
        if (typed.value.get_string().get(text) == simdjson::SUCCESS) {
          value = text;
        } else if (typed.value.get_bool().get(flag) == simdjson::SUCCESS) {
          value = flag ? "true" : "false";
        } else if (typed.value.get_int64().get(number) == simdjson::SUCCESS) {
          value = std::to_string(number);
        }
      }
      // A bare attribute name is in the driver's domain.
      result.attributes.insert_or_assign(key.find('/') == std::string_view::npos
                                             ? fmt::format("{}/{}", driver, key)
                                             : std::string(key),
                                         std::move(value));
    }
  }
  if (const auto capacity = object_field(fields, "capacity", "device capacity")) {
    if (const auto memory = memory_member(*capacity, driver)) {
      try {
        // v1: {value: "80Gi"}; a bare quantity is read too.
        json::Object wrapped;
        const json::Value quantity = memory->get_object().get(wrapped) == simdjson::SUCCESS
                                         ? present_field(wrapped, "value").value_or(*memory)
                                         : *memory;
        result.memory_bytes = bytes_of(quantity, "capacity memory");
      } catch (const std::exception& e) {
        result.capacity_error = e.what();
      }
    }
  }
  return result;
}

// The ask of an `exactly` request, of a v1beta1 request, or of a firstAvailable subrequest.
core::DraDeviceAsk decode_ask(json::Object exact, std::string name) {
  core::DraDeviceAsk ask;
  ask.name = std::move(name);
  ask.device_class = string_field(exact, "deviceClassName", "deviceClassName");
  ask.all = string_field(exact, "allocationMode", "allocationMode") == "All";
  ask.count = int_field(exact, "count", "device request count", 1);
  if (ask.count < 1) throw BadInput(fmt::format("device request {} count < 1", ask.name));
  if (const auto capacity = object_field(exact, "capacity", "device request capacity")) {
    if (const auto asked = object_field(*capacity, "requests", "capacity requests")) {
      if (const auto memory = memory_member(*asked, {}))
        ask.memory_bytes = bytes_of(*memory, "capacity.requests.memory");
    }
  }
  return ask;
}

std::vector<core::DraRequest> decode_requests(json::Object spec, std::string_view what) {
  std::vector<core::DraRequest> requests;
  const auto devices = object_field(spec, "devices", what);
  if (!devices) return requests;
  const auto list = array_field(*devices, "requests", what);
  if (!list) return requests;
  for (const json::Value item : *list) {
    const json::Object request = object_of(item, "device request");
    std::string name = string_field(request, "name", "device request name");
    core::DraRequest result;
    const auto exactly = object_field(request, "exactly", "device request exactly");
    const auto first =
        exactly ? std::nullopt : array_field(request, "firstAvailable", "firstAvailable");
    if (first) {
      // Prioritised alternatives, in the order kube's allocator tries them.
      for (const json::Value sub : *first) {
        const json::Object subrequest = object_of(sub, "device subrequest");
        result.first_available.push_back(decode_ask(
            subrequest, fmt::format("{}/{}", name,
                                    string_field(subrequest, "name", "device subrequest name"))));
      }
      if (result.first_available.empty())
        throw BadInput(fmt::format("device request {} has an empty firstAvailable", name));
      static_cast<core::DraDeviceAsk&>(result) = result.first_available.front();
      result.name = std::move(name);
    } else {
      // v1 (and v1beta2): the fields under `exactly`; v1beta1: on the request itself.
      static_cast<core::DraDeviceAsk&>(result) = decode_ask(exactly.value_or(request), name);
    }
    requests.push_back(std::move(result));
  }
  return requests;
}

// The node of an allocation's nodeSelector when it names exactly one (kube-scheduler writes
// matchFields metadata.name In [node] for node-local devices).
std::string selected_node(json::Object selector) {
  const auto terms = array_field(selector, "nodeSelectorTerms", "nodeSelectorTerms");
  if (!terms) return {};
  for (const json::Value term_value : *terms) {
    json::Object term;
    if (term_value.get_object().get(term) != simdjson::SUCCESS) continue;
    for (const char* kind : {"matchFields", "matchExpressions"}) {
      const auto requirements = array_field(term, kind, "node selector requirements");
      if (!requirements) continue;
      for (const json::Value requirement_value : *requirements) {
        const json::Object requirement = object_of(requirement_value, "node selector requirement");
        const std::string key = string_field(requirement, "key", "node selector key");
        if (key != "metadata.name" && key != "kubernetes.io/hostname") continue;
        if (string_field(requirement, "operator", "node selector operator") != "In") continue;
        const auto values = array_field(requirement, "values", "node selector values");
        if (!values || values->size() != 1) continue;
        std::string_view node;
        if (values->at(0).get_string().get(node) == simdjson::SUCCESS) return std::string(node);
      }
    }
  }
  return {};
}

// CEL text, a little at a time: what a DeviceClass selector's clauses are read with.
class CelReader {
 public:
  explicit CelReader(std::string_view text) : text_(text) {}
  void space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool word(std::string_view w) {
    space();
    if (text_.substr(at_).starts_with(w)) {
      at_ += w.size();
      return true;
    }
    return false;
  }
  // A string literal in either quote.
  std::optional<std::string> quoted() {
    space();
    if (at_ >= text_.size() || (text_[at_] != '"' && text_[at_] != '\'')) return std::nullopt;
    const std::size_t end = text_.find(text_[at_], at_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string result(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return result;
  }
  std::string identifier() {
    space();
    const std::size_t from = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
      ++at_;
    return std::string(text_.substr(from, at_ - from));
  }
  // A literal as DraDevice::attributes holds it: a string, true/false or an integer.
  std::optional<std::string> literal() {
    if (auto text = quoted()) return text;
    const std::string bare = identifier();
    if (bare == "true" || bare == "false") return bare;
    if (!bare.empty() && std::all_of(bare.begin(), bare.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        }))
      return bare;
    return std::nullopt;
  }
  bool done() {
    space();
    return at_ == text_.size();
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

// One `&&` clause: `device.driver == "d"` or `device.attributes["domain"].name == value` (or
// ["name"]); false for any other form.
bool read_clause(std::string_view clause, core::DraDeviceClass& out) {
  CelReader cel(clause);
  if (cel.word("device.driver")) {
    if (!cel.word("==")) return false;
    auto driver = cel.quoted();
    if (!driver || !cel.done()) return false;
    out.driver = std::move(*driver);
    return true;
  }
  if (!cel.word("device.attributes") || !cel.word("[")) return false;
  const auto domain = cel.quoted();
  if (!domain || !cel.word("]")) return false;
  std::string name;
  if (cel.word(".")) {
    name = cel.identifier();
  } else if (cel.word("[")) {
    auto quoted = cel.quoted();
    if (!quoted || !cel.word("]")) return false;
    name = std::move(*quoted);
  }
  if (name.empty() || !cel.word("==")) return false;
  auto value = cel.literal();
  if (!value || !cel.done()) return false;
  out.attributes.push_back({fmt::format("{}/{}", *domain, name), std::move(*value)});
  return true;
}

// The clauses of a selector joined by `&&` (outside quotes), each read or kept as unread.
void read_selector(std::string_view expression, core::DraDeviceClass& out) {
  std::vector<std::string_view> clauses;
  char quote = 0;
  std::size_t from = 0;
  for (std::size_t i = 0; i < expression.size(); ++i) {
    const char c = expression[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '&' && i + 1 < expression.size() && expression[i + 1] == '&') {
      clauses.push_back(expression.substr(from, i - from));
      from = ++i + 1;
    }
  }
  clauses.push_back(expression.substr(from));
  for (std::string_view clause : clauses) {
    while (!clause.empty() && std::isspace(static_cast<unsigned char>(clause.front())))
      clause.remove_prefix(1);
    while (!clause.empty() && std::isspace(static_cast<unsigned char>(clause.back())))
      clause.remove_suffix(1);
    // One pair of parentheses around a whole clause.
    if (clause.size() >= 2 && clause.front() == '(' && clause.back() == ')' &&
        clause.find_first_of("()", 1) == clause.size() - 1)
      clause = clause.substr(1, clause.size() - 2);
    if (!read_clause(clause, out)) out.unread.emplace_back(clause);
  }
}

template <typename Decode>
auto parse_with(std::string_view text, std::string_view what, Decode&& decode) {
  thread_local json::Parser parser;
  return decode(parse_text(parser, text, what));
}

}  // namespace

bool is_memory_capacity(std::string_view name, std::string_view driver) {
  if (name == "memory") return true;
  return name.size() == driver.size() + 7 && name.starts_with(driver) &&
         name.substr(driver.size()) == "/memory";
}

core::DraSlice decode_resource_slice(const json::Value& value) {
  const json::Object object = object_of(value, "ResourceSlice");
  core::DraSlice slice;
  slice.name = meta_of(object, "ResourceSlice").name;
  const auto spec = object_field(object, "spec", "ResourceSlice spec");
  if (!spec) throw BadInput(fmt::format("ResourceSlice {} has no spec", slice.name));
  slice.driver = string_field(*spec, "driver", "ResourceSlice spec.driver");
  slice.node = string_field(*spec, "nodeName", "ResourceSlice spec.nodeName");
  if (const auto pool = object_field(*spec, "pool", "ResourceSlice spec.pool")) {
    slice.pool = string_field(*pool, "name", "ResourceSlice pool name");
    slice.generation = int_field(*pool, "generation", "ResourceSlice pool generation", 0);
    slice.slice_count =
        int_field(*pool, "resourceSliceCount", "ResourceSlice resourceSliceCount", 1);
  }
  if (const auto devices = array_field(*spec, "devices", "ResourceSlice spec.devices")) {
    for (const json::Value item : *devices)
      slice.devices.push_back(decode_device(object_of(item, "ResourceSlice device"), slice.driver));
  }
  return slice;
}

core::DraClaim decode_resource_claim(const json::Value& value) {
  core::DraClaim claim;
  const json::Object object = named_object(value, "ResourceClaim", claim);
  const std::string what = fmt::format("ResourceClaim {}", claim.key());
  if (const auto spec = object_field(object, "spec", what))
    claim.requests = decode_requests(*spec, what);
  const auto status = object_field(object, "status", what);
  if (!status) return claim;
  if (const auto allocation = object_field(*status, "allocation", what)) {
    claim.allocated = true;
    if (const auto selector = object_field(*allocation, "nodeSelector", what))
      claim.node = selected_node(*selector);
    const auto devices = object_field(*allocation, "devices", what);
    const auto results = devices ? array_field(*devices, "results", what) : std::nullopt;
    if (results) {
      for (const json::Value item : *results) {
        const json::Object result = object_of(item, "allocation result");
        core::DraResult r;
        r.request = string_field(result, "request", what);
        r.driver = string_field(result, "driver", what);
        r.pool = string_field(result, "pool", what);
        r.device = string_field(result, "device", what);
        r.share_id = string_field(result, "shareID", what);
        if (const auto consumed = object_field(result, "consumedCapacity", what)) {
          if (const auto memory = memory_member(*consumed, r.driver))
            r.consumed_bytes = bytes_of(*memory, what + " consumedCapacity memory");
        }
        claim.results.push_back(std::move(r));
      }
    }
  }
  if (const auto reserved = array_field(*status, "reservedFor", what)) {
    for (const json::Value item : *reserved) {
      const json::Object consumer = object_of(item, "reservedFor entry");
      if (string_field(consumer, "resource", what) == "pods")
        claim.reserved_for.push_back(string_field(consumer, "name", what));
    }
  }
  return claim;
}

core::DraClaimTemplate decode_claim_template(const json::Value& value) {
  core::DraClaimTemplate result;
  const json::Object object = named_object(value, "ResourceClaimTemplate", result);
  const std::string what =
      fmt::format("ResourceClaimTemplate {}/{}", result.namespace_name, result.name);
  if (const auto spec = object_field(object, "spec", what)) {
    if (const auto claim_spec = object_field(*spec, "spec", what))
      result.requests = decode_requests(*claim_spec, what);
  }
  return result;
}

core::DraDeviceClass decode_device_class(const json::Value& value) {
  const json::Object object = object_of(value, "DeviceClass");
  core::DraDeviceClass result;
  result.name = meta_of(object, "DeviceClass").name;
  const auto spec = object_field(object, "spec", "DeviceClass spec");
  const auto selectors =
      spec ? array_field(*spec, "selectors", "DeviceClass selectors") : std::nullopt;
  if (!selectors) return result;
  for (const json::Value item : *selectors) {
    const json::Object selector = object_of(item, "DeviceClass selector");
    const auto cel = object_field(selector, "cel", "DeviceClass selector cel");
    if (!cel) continue;
    read_selector(string_field(*cel, "expression", "cel expression"), result);
  }
  return result;
}

std::vector<core::DraPodClaim> decode_pod_claims(const json::Value& value) {
  std::vector<core::DraPodClaim> claims;
  json::Object pod;
  if (value.get_object().get(pod) != simdjson::SUCCESS) return claims;
  const auto spec = object_field(pod, "spec", "pod spec");
  const auto list =
      spec ? array_field(*spec, "resourceClaims", "pod spec.resourceClaims") : std::nullopt;
  if (!list) return claims;
  for (const json::Value item : *list) {
    const json::Object entry = object_of(item, "pod resourceClaims entry");
    core::DraPodClaim claim;
    claim.name = string_field(entry, "name", "pod resourceClaims name");
    claim.claim = string_field(entry, "resourceClaimName", "resourceClaimName");
    claim.template_name =
        string_field(entry, "resourceClaimTemplateName", "resourceClaimTemplateName");
    claims.push_back(std::move(claim));
  }
  const auto status = object_field(pod, "status", "pod status");
  const auto generated =
      status ? array_field(*status, "resourceClaimStatuses", "resourceClaimStatuses")
             : std::nullopt;
  if (generated) {
    // By name, so that a body of many entries costs linear time, not entries x statuses.
    std::unordered_multimap<std::string_view, core::DraPodClaim*> by_name;
    by_name.reserve(claims.size());
    for (auto& claim : claims) by_name.emplace(claim.name, &claim);
    for (const json::Value item : *generated) {
      const json::Object entry = object_of(item, "resourceClaimStatuses entry");
      const std::string name = string_field(entry, "name", "resourceClaimStatuses name");
      const auto [first, last] = by_name.equal_range(name);
      for (auto it = first; it != last; ++it) {
        if (it->second->claim.empty())
          it->second->claim = string_field(entry, "resourceClaimName", "resourceClaimName");
      }
    }
  }
  return claims;
}

core::DraSlice parse_resource_slice(std::string_view text) {
  return parse_with(text, "ResourceSlice", [](json::Value v) { return decode_resource_slice(v); });
}
core::DraClaim parse_resource_claim(std::string_view text) {
  return parse_with(text, "ResourceClaim", [](json::Value v) { return decode_resource_claim(v); });
}
core::DraClaimTemplate parse_claim_template(std::string_view text) {
  return parse_with(text, "ResourceClaimTemplate",
                    [](json::Value v) { return decode_claim_template(v); });
}
core::DraDeviceClass parse_device_class(std::string_view text) {
  return parse_with(text, "DeviceClass", [](json::Value v) { return decode_device_class(v); });
}

}  // namespace gpushare::kube
