// HTTP side of the fake API server: routing, auth, fault injection, and the list, get,
// create, update, patch, delete and binding handlers (watches are in fake_apiserver_watch.cpp).

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "fakeapi/fake_apiserver_impl.h"
#include "fakeapi/fake_apiserver_openapi.h"
#include "fakeapi/fake_apiserver_patch.h"
#include "fakeapi/fake_apiserver_protobuf.h"
#include "fakeapi/fake_apiserver_table.h"
#include "fakeapi/fake_apiserver_tls.h"

namespace gpushare::testing {

using nlohmann::json;
using namespace fakeapi;

namespace fakeapi {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const std::string_view segment = path.substr(0, slash);
    if (!segment.empty()) segments.push_back(segment);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

bool subresource_exists(Resource resource, std::string_view subresource) {
  if (subresource == "status") return info(resource).has_status;
  return resource == Resource::Pods && (subresource == "binding" || subresource == "eviction");
}

constexpr std::string_view kContinueExpiredMessage =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.";

constexpr std::string_view kPodUpdateForbidden =
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

json parse_json_body(std::string_view body) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    throw bad_request(fmt::format("the body of the request is not valid JSON: {}",
                                  std::string(body.substr(0, 80))));
  }
  return parsed;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The spec with the fields a pod update may change blanked out.
json immutable_pod_spec(json spec) {
  if (!spec.is_object()) return spec;
  for (const char* list : {"containers", "initContainers"}) {
    if (auto it = spec.find(list); it != spec.end() && it->is_array()) {
      for (json& container : *it) {
        if (container.is_object()) container.erase("image");
      }
    }
  }
  for (const char* field : {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                            "schedulingGates"}) {
    spec.erase(field);
  }
  return spec;
}

json without_resource_version(json object) {
  if (object.contains("metadata") && object["metadata"].is_object()) {
    object["metadata"].erase("resourceVersion");
  }
  return object;
}

// Serialises JSON values straight into one string (nlohmann's own serializer, reused: it
// flushes at the end of every dump, so raw punctuation can be appended in between).
class BodyWriter {
 public:
  explicit BodyWriter(std::string& out)
      : out_(out), serializer_(nlohmann::detail::output_adapter<char, std::string>(out), ' ') {}
  void raw(std::string_view text) { out_.append(text); }
  void value(const json& value) { serializer_.dump(value, false, false, 0); }
  void string(std::string_view text) {
    out_.push_back('"');
    // Keys and kinds of the fake are plain; anything else goes through the escaping dump.
    if (text.find_first_of("\"\\") == std::string_view::npos &&
        std::all_of(text.begin(), text.end(),
                    [](char c) { return static_cast<unsigned char>(c) >= 0x20; })) {
      out_.append(text);
      out_.push_back('"');
      return;
    }
    out_.pop_back();
    value(json(std::string(text)));
  }
  // A list item: the object without kind/apiVersion (list items carry none on the wire).
  void list_item(const json& object) {
    if (!object.is_object()) return value(object);
    out_.push_back('{');
    bool first = true;
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (it.key() == "kind" || it.key() == "apiVersion") continue;
      if (!first) out_.push_back(',');
      first = false;
      string(it.key());
      out_.push_back(':');
      value(it.value());
    }
    out_.push_back('}');
  }

 private:
  std::string& out_;
  nlohmann::detail::serializer<json> serializer_;
};

std::shared_ptr<const std::string> serialize_list_item(const json& object) {
  auto text = std::make_shared<std::string>();
  BodyWriter(*text).list_item(object);
  return text;
}

}  // namespace
}  // namespace fakeapi

// A list response as pieces: head, items separated by commas, "]}". Shared by the response's
// content provider, which may outlive the store entries the items came from.
struct FakeApiServer::Impl::ListBody {
  std::string head;
  std::vector<std::shared_ptr<const std::string>> items;
  static constexpr std::string_view kTail = "]}";

  std::size_t size() const {
    std::size_t total = head.size() + kTail.size() + (items.empty() ? 0 : items.size() - 1);
    for (const auto& item : items) total += item->size();
    return total;
  }

  // Writes up to `length` bytes from `offset`, batched into large writes. httplib asks for
  // consecutive offsets; the cursor only moves forward (a rewind restarts it).
  bool write(std::size_t offset, std::size_t length, httplib::DataSink& sink) {
    if (offset < cursor_offset_) {
      cursor_piece_ = 0;
      cursor_in_piece_ = 0;
      cursor_offset_ = 0;
    }
    buffer_.clear();
    const std::size_t wanted = std::min<std::size_t>(length, 256 * 1024);
    while (buffer_.size() < wanted) {
      const std::string_view piece = piece_at(cursor_piece_);
      if (piece.data() == nullptr) break;  // past the end
      const std::size_t skip = offset > cursor_offset_ ? offset - cursor_offset_ : 0;
      const std::size_t available = piece.size() - cursor_in_piece_;
      if (skip >= available) {  // catching up with `offset`
        cursor_offset_ += available;
        ++cursor_piece_;
        cursor_in_piece_ = 0;
        continue;
      }
      const std::size_t take = std::min(available - skip, wanted - buffer_.size());
      buffer_.append(piece.substr(cursor_in_piece_ + skip, take));
      cursor_in_piece_ += skip + take;
      cursor_offset_ += skip + take;
      offset = cursor_offset_;
      if (cursor_in_piece_ == piece.size()) {
        ++cursor_piece_;
        cursor_in_piece_ = 0;
      }
    }
    return !buffer_.empty() && sink.write(buffer_.data(), buffer_.size());
  }

 private:
  // Piece 0 is the head, then item, ",", item, ..., then the tail; null past the end.
  std::string_view piece_at(std::size_t index) const {
    if (index == 0) return head;
    --index;
    const std::size_t item_pieces = items.empty() ? 0 : 2 * items.size() - 1;
    if (index < item_pieces)
      return index % 2 == 0 ? std::string_view(*items[index / 2]) : std::string_view(",");
    if (index == item_pieces) return kTail;
    return {};
  }

  std::size_t cursor_piece_ = 0;
  std::size_t cursor_in_piece_ = 0;
  std::size_t cursor_offset_ = 0;  // body offset of the cursor
  std::string buffer_;
};

namespace fakeapi {
namespace {

std::string precondition_message(std::string_view what, std::string_view expected,
                                 std::string_view actual) {
  return fmt::format("Precondition failed: {} in precondition: {}, {} in object meta: {}", what,
                     expected, what, actual);
}

ApiError fault_error(const RequestFault& fault) {
  std::string message = fault.message;
  if (message.empty()) {
    switch (fault.status) {
      case 429:
        message = "Too many requests, please try again later.";
        break;
      case 410:
        message = "The resourceVersion for the provided list is too old.";
        break;
      case 500:
        message = "Internal error occurred: injected fault";
        break;
      case 503:
        message = "the server is currently unable to handle the request";
        break;
      default:
        message = fmt::format("injected fault (HTTP {})", fault.status);
    }
  }
  const std::string reason =
      fault.reason.empty() ? std::string(default_reason_for(fault.status)) : fault.reason;
  json details = json::object();
  if (fault.retry_after_seconds) details["retryAfterSeconds"] = *fault.retry_after_seconds;
  return ApiError(fault.status, reason, message, std::move(details));
}

void write_error(httplib::Response& response, const ApiError& error) {
  response.status = error.code();
  response.set_content(error.status_body().dump(), "application/json");
  if (auto retry_after = error.retry_after_seconds()) {
    response.set_header("Retry-After", std::to_string(*retry_after));
  }
}

void write_json(httplib::Response& response, int status, const json& body) {
  response.status = status;
  response.set_content(body.dump(), "application/json");
}

// Ends the current connection without a response: a TCP reset on plain HTTP; over TLS
// (httplib's own connection loop) the connection closes right after the headers.
void drop_current_connection(httplib::Response& response) {
  if (Connection* connection = FakeHttpServer::current_connection()) {
    connection->abort();
    return;
  }
  response.status = 200;
  response.set_chunked_content_provider("application/json",
                                        [](std::size_t, httplib::DataSink&) { return false; });
}

// The body of a write as JSON text. The fake reads JSON, and protobuf for the ConfigMaps that
// typed clients such as `kubectl create configmap` send that way (fake_apiserver_protobuf.h);
// YAML and other protobuf get the 415 of a server without those serializers.
std::string json_body_of(const httplib::Request& request) {
  const std::string content_type = request.get_header_value("Content-Type");
  std::string media_type = content_type.substr(0, content_type.find(';'));
  media_type.erase(std::remove(media_type.begin(), media_type.end(), ' '), media_type.end());
  if (media_type == kProtobufMediaType) return decode_protobuf_object(request.body).dump();
  if (!media_type.empty() && media_type != "application/json") {
    throw unsupported_media_type("application/json");
  }
  return request.body;
}

void set_pod_scheduled(json& pod) {
  json& status = pod["status"];
  if (!status.is_object()) status = json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (json& condition : conditions) {
    if (condition.value("type", "") != "PodScheduled") continue;
    // podutil.UpdatePodCondition: keep lastTransitionTime when the status does not change.
    const bool transition = condition.value("status", "") != "True";
    json updated = {
        {"type", "PodScheduled"},
        {"status", "True"},
        {"lastProbeTime", nullptr},
        {"lastTransitionTime", transition ? json(rfc3339_now()) : condition["lastTransitionTime"]}};
    condition = std::move(updated);
    return;
  }
  conditions.push_back({{"type", "PodScheduled"},
                        {"status", "True"},
                        {"lastProbeTime", nullptr},
                        {"lastTransitionTime", rfc3339_now()}});
}

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  if (text == "1" || text == "t" || text == "T" || text == "true" || text == "TRUE" ||
      text == "True")
    return true;
  if (text == "0" || text == "f" || text == "F" || text == "false" || text == "FALSE" ||
      text == "False")
    return false;
  return std::nullopt;
}

std::uint64_t parse_resource_version(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos ||
      text.size() > 19) {
    throw bad_request(fmt::format("invalid resource version: {}", text));
  }
  return std::stoull(std::string(text));
}

ListParams parse_list_params(const httplib::Request& request) {
  ListParams params;
  params.resource_version = request.get_param_value("resourceVersion");
  params.resource_version_match = request.get_param_value("resourceVersionMatch");
  params.continue_token = request.get_param_value("continue");
  params.field_selector = request.get_param_value("fieldSelector");
  params.label_selector = request.get_param_value("labelSelector");
  if (request.has_param("limit")) {
    const auto limit = parse_int(request.get_param_value("limit"));
    if (!limit) throw bad_request("limit: invalid value: " + request.get_param_value("limit"));
    params.limit = std::max<std::int64_t>(0, *limit);
  }
  if (request.has_param("timeoutSeconds")) {
    const auto timeout = parse_int(request.get_param_value("timeoutSeconds"));
    if (!timeout) throw bad_request("timeoutSeconds: invalid value");
    params.timeout_seconds = *timeout;
  }
  if (request.has_param("sendInitialEvents")) {
    params.send_initial_events = parse_bool(request.get_param_value("sendInitialEvents"));
    if (!params.send_initial_events) throw bad_request("sendInitialEvents: invalid value");
  }
  params.allow_bookmarks =
      parse_bool(request.get_param_value("allowWatchBookmarks")).value_or(false);
  return params;
}

void validate_list_options(const ListParams& params, bool watch) {
  std::vector<FieldError> errors;
  const std::string& match = params.resource_version_match;
  auto forbidden = [&](std::string field, std::string detail) {
    errors.push_back({std::move(field), "Forbidden", "FieldValueForbidden", std::move(detail)});
  };
  if (watch) {
    if (params.send_initial_events && match != "NotOlderThan") {
      forbidden("resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    }
    if (!match.empty()) {
      if (!params.send_initial_events) {
        forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
      }
      if (match != "NotOlderThan") {
        errors.push_back({"resourceVersionMatch", "Unsupported value", "FieldValueNotSupported",
                          fmt::format("\"{}\": supported values: \"NotOlderThan\"", match)});
      }
      if (!params.continue_token.empty()) {
        forbidden("resourceVersionMatch",
                  "resourceVersionMatch is forbidden when continue is provided");
      }
    }
  } else {
    if (!match.empty()) {
      if (params.resource_version.empty()) {
        forbidden("resourceVersionMatch",
                  "resourceVersionMatch is forbidden unless resourceVersion is provided");
      }
      if (!params.continue_token.empty()) {
        forbidden("resourceVersionMatch",
                  "resourceVersionMatch is forbidden when continue is provided");
      }
      if (match != "Exact" && match != "NotOlderThan") {
        errors.push_back(
            {"resourceVersionMatch", "Unsupported value", "FieldValueNotSupported",
             fmt::format("\"{}\": supported values: \"Exact\", \"NotOlderThan\", \"\"", match)});
      }
      if (match == "Exact" && params.resource_version == "0") {
        forbidden("resourceVersionMatch",
                  "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
      }
    }
    if (params.send_initial_events)
      forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list");
  }
  if (!errors.empty())
    throw invalid("ListOptions.meta.k8s.io", "meta.k8s.io", "ListOptions", "", errors);
}

std::string encode_continue(const ContinueToken& token) {
  const json body = {{"v", "meta.k8s.io/v1"},
                     {"rv", token.rv == 0 ? json(-1) : json(token.rv)},
                     {"start", token.start_after + std::string(1, '\0')},
                     {"gen", token.generation}};
  return base64_encode(body.dump(), /*url_safe_unpadded=*/true);
}

ContinueToken decode_continue(std::string_view text) {
  const auto bytes = base64_decode(text);
  const json body = bytes ? json::parse(*bytes, nullptr, false) : json();
  if (!body.is_object() || body.value("v", "") != "meta.k8s.io/v1" || !body.contains("rv") ||
      !body["rv"].is_number_integer() || !body.contains("start") || !body["start"].is_string()) {
    throw bad_request(
        "continue key is not valid: incorrect encoded start resourceVersion (version "
        "meta.k8s.io/v1)");
  }
  ContinueToken token;
  const std::int64_t rv = body["rv"].get<std::int64_t>();
  token.rv = rv > 0 ? static_cast<std::uint64_t>(rv) : 0;
  token.start_after = body["start"].get<std::string>();
  if (!token.start_after.empty() && token.start_after.back() == '\0') token.start_after.pop_back();
  token.generation = body.value("gen", std::uint64_t{0});
  return token;
}

void apply_pod_defaults(json& pod) {
  json& spec = pod["spec"];
  if (!spec.is_object()) spec = json::object();
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
  if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
  if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
}

Route parse_route(std::string_view method, std::string_view path, bool watch_param) {
  Route route;
  const std::vector<std::string_view> segments = split_path(path);
  auto allow = [&](std::initializer_list<std::pair<std::string_view, Verb>> verbs) {
    for (const auto& [allowed_method, verb] : verbs) {
      if (method == allowed_method) {
        route.verb = verb;
        return;
      }
    }
    route.method_allowed = false;
  };
  if (segments.size() == 1 &&
      (segments[0] == "healthz" || segments[0] == "livez" || segments[0] == "readyz")) {
    route.kind = Route::Kind::Health;
    allow({{"GET", Verb::Other}});
    return route;
  }
  std::string_view group;
  std::size_t rest = 0;
  if (segments.size() >= 2 && segments[0] == "api" && segments[1] == "v1") {
    rest = 2;
  } else if (segments.size() >= 3 && segments[0] == "apis" && segments[2] == "v1") {
    group = segments[1];
    rest = 3;
  }
  if (rest == 0 || segments.size() == rest) {
    route.kind = Route::Kind::Discovery;
    allow({{"GET", Verb::Discovery}});
    return route;
  }
  std::vector<std::string_view> tail(segments.begin() + static_cast<std::ptrdiff_t>(rest),
                                     segments.end());
  std::string_view plural;
  std::string_view name;
  std::string_view subresource;
  if (tail[0] == "namespaces" && tail.size() >= 3) {
    route.ns = tail[1];
    if (group.empty() && tail[2] == "bindings" && tail.size() == 3) {
      route.kind = Route::Kind::LegacyBindings;
      route.resource = Resource::Pods;
      allow({{"POST", Verb::Bind}});
      return route;
    }
    plural = tail[2];
    if (tail.size() >= 4) name = tail[3];
    if (tail.size() == 5) subresource = tail[4];
    if (tail.size() > 5) return route;
    const auto resource = resource_from_plural(group, plural);
    if (!resource || !info(*resource).namespaced) return route;
    route.resource = resource;
  } else {
    plural = tail[0];
    if (tail.size() >= 2) name = tail[1];
    if (tail.size() == 3) subresource = tail[2];
    if (tail.size() > 3) return route;
    const auto resource = resource_from_plural(group, plural);
    if (!resource) return route;
    // A namespaced resource is reachable without a namespace only as a collection.
    if (info(*resource).namespaced && !name.empty()) return route;
    route.resource = resource;
  }
  route.name = name;
  route.subresource = subresource;
  if (name.empty()) {
    route.kind = Route::Kind::Collection;
    allow({{"GET", watch_param ? Verb::Watch : Verb::List}, {"POST", Verb::Create}});
  } else if (subresource.empty()) {
    route.kind = Route::Kind::Object;
    allow({{"GET", Verb::Get},
           {"PUT", Verb::Update},
           {"PATCH", Verb::Patch},
           {"DELETE", Verb::Delete}});
  } else if (subresource_exists(*route.resource, subresource)) {
    route.kind = Route::Kind::Subresource;
    if (subresource == "binding") {
      allow({{"POST", Verb::Bind}});
    } else if (subresource == "eviction") {
      allow({{"POST", Verb::Evict}});
    } else {
      allow({{"GET", Verb::Get}, {"PUT", Verb::Update}, {"PATCH", Verb::Patch}});
    }
  } else {
    route.resource.reset();
  }
  return route;
}

}  // namespace fakeapi

// --- Dispatch ----------------------------------------------------------------------------

void FakeApiServer::Impl::install_routes(httplib::Server& server) {
  // httplib would gzip or brotli-compress JSON for clients that accept it, and it compresses
  // chunked bodies without flushing, which would hold watch events back. The real server
  // compresses only large non-watch responses; dropping Accept-Encoding keeps every response
  // plain. The Request object is a non-const local inside httplib, so this is well defined.
  server.set_pre_routing_handler([](const httplib::Request& request, httplib::Response&) {
    auto& headers = const_cast<httplib::Request&>(request).headers;
    headers.erase("Accept-Encoding");
    return httplib::Server::HandlerResponse::Unhandled;
  });
  auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    handle(request, response);
  };
  server.Get(".*", handler);
  server.Post(".*", handler);
  server.Put(".*", handler);
  server.Patch(".*", handler);
  server.Delete(".*", handler);
  server.Options(".*", handler);
}

std::optional<RequestFault> FakeApiServer::Impl::take_fault(Verb verb,
                                                            std::optional<Resource> resource) {
  std::lock_guard lock(mutex);
  for (auto it = faults.begin(); it != faults.end(); ++it) {
    if (it->fault.verb != verb || (it->fault.resource && it->fault.resource != resource)) continue;
    RequestFault fault = it->fault;
    if (--it->remaining <= 0) faults.erase(it);
    return fault;
  }
  return std::nullopt;
}

bool FakeApiServer::Impl::wait_interruptibly(std::chrono::milliseconds delay) {
  if (delay <= std::chrono::milliseconds::zero()) return true;
  Connection* connection = FakeHttpServer::current_connection();
  const auto deadline = Clock::now() + delay;
  std::unique_lock lock(mutex);
  while (!stopping && !(connection != nullptr && connection->aborted())) {
    const auto now = Clock::now();
    if (now >= deadline) return true;
    changed.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(50)));
  }
  return false;
}

void FakeApiServer::Impl::handle(const httplib::Request& request, httplib::Response& response) {
  const bool watch_param = parse_bool(request.get_param_value("watch")).value_or(false);
  Route route = parse_route(request.method, request.path, watch_param);
  // A server without DRA knows nothing under resource.k8s.io.
  if (!options.serve_dra && request.path.starts_with("/apis/resource.k8s.io")) route = Route{};
  {
    RequestRecord record;
    record.method = request.method;
    record.path = request.path;
    for (const auto& [key, value] : request.params) record.params.emplace(key, value);
    record.content_type = request.get_header_value("Content-Type");
    record.authorization = request.get_header_value("Authorization");
    record.verb = route.verb;
    record.resource = route.resource;
    record.namespace_name = route.ns;
    record.name = route.name;
    record.subresource = route.subresource;
    std::lock_guard lock(mutex);
    log.push_back(std::move(record));
  }
  changed.notify_all();

  // Returns true when the fault answered the request.
  auto apply_fault = [&](const RequestFault& fault) {
    if (!wait_interruptibly(fault.delay) || fault.drop_connection) {
      drop_current_connection(response);
      return true;
    }
    if (fault.status != 0) {
      write_error(response, fault_error(fault));
      return true;
    }
    return false;
  };

  try {
    if (route.kind != Route::Kind::Health) {
      std::lock_guard lock(mutex);
      if (auth_enabled) {
        const std::string header = request.get_header_value("Authorization");
        const bool bearer = header.size() > 7 && (header.compare(0, 7, "Bearer ") == 0 ||
                                                  header.compare(0, 7, "bearer ") == 0);
        if (!bearer || tokens.count(header.substr(7)) == 0) throw unauthorized();
      }
    }
    const std::optional<RequestFault> fault = take_fault(route.verb, route.resource);
    if (fault && !fault->apply_first && apply_fault(*fault)) return;
    serve(route, request, response);
    if (fault && fault->apply_first) apply_fault(*fault);
  } catch (const ApiError& error) {
    write_error(response, error);
  } catch (const std::exception& error) {
    write_error(response, ApiError(500, "InternalError",
                                   fmt::format("Internal error occurred: {}", error.what())));
  }
}

void FakeApiServer::Impl::serve(const Route& route, const httplib::Request& request,
                                httplib::Response& response) {
  if (route.kind == Route::Kind::Unknown) {
    throw ApiError(404, "NotFound", "the server could not find the requested resource");
  }
  if (!route.method_allowed) throw method_not_allowed();
  const bool sends_object = route.verb == Verb::Create || route.verb == Verb::Update ||
                            route.verb == Verb::Bind || route.verb == Verb::Evict ||
                            (route.verb == Verb::Delete && !request.body.empty());
  const std::string body = sends_object ? json_body_of(request) : std::string();
  if (route.resource && route.kind != Route::Kind::LegacyBindings &&
      (route.verb == Verb::Create || route.verb == Verb::Update || route.verb == Verb::Patch)) {
    const bool is_patch = route.verb == Verb::Patch;
    const auto patch_type = patch_type_from_content_type(request.get_header_value("Content-Type"));
    if (!is_patch || (patch_type && *patch_type != PatchType::Json)) {
      const json object = parse_json_body(is_patch ? request.body : body);
      for (const std::string& warning : validate_fields(
               *route.resource, object, is_patch, request.get_param_value("fieldValidation"))) {
        response.headers.emplace("Warning", "299 - " + json(warning).dump());
      }
    }
  }
  switch (route.kind) {
    case Route::Kind::Health:
      response.set_content("ok", "text/plain");
      return;
    case Route::Kind::Discovery:
    case Route::Kind::Version: {
      auto document = discovery_document(request.path, options, port);
      if (!document)
        throw ApiError(404, "NotFound", "the server could not find the requested resource");
      write_json(response, 200, *document);
      return;
    }
    case Route::Kind::LegacyBindings:
      http_bind(route, body);
      write_json(response, 201, success_status(201));
      return;
    case Route::Kind::Collection:
      if (route.verb == Verb::Watch) return serve_watch(route, request, response);
      if (route.verb == Verb::List) return serve_list(route, request, response);
      return write_json(response, 201, http_create(route, body));
    case Route::Kind::Object:
    case Route::Kind::Subresource:
      switch (route.verb) {
        case Verb::Bind:
          http_bind(route, body);
          return write_json(response, 201, success_status(201));
        case Verb::Evict:
          http_evict(route, body);
          return write_json(response, 201, success_status(201));
        case Verb::Get: {
          std::lock_guard lock(mutex);
          const json& object = find_or_throw(*route.resource, route.ns, route.name);
          const auto table = table_request(request.get_header_value("Accept"),
                                           request.get_param_value("includeObject"));
          if (!table || route.kind != Route::Kind::Object) return write_json(response, 200, object);
          response.status = 200;
          response.set_content(
              make_table(*route.resource, {&object}, *table,
                         {{"resourceVersion", string_at(object, "metadata", "resourceVersion")}})
                  .dump(),
              table_content_type(*table));
          return;
        }
        case Verb::Update:
          return write_json(response, 200, http_update(route, body));
        case Verb::Patch:
          return write_json(response, 200, http_patch(route, request));
        case Verb::Delete:
          return http_delete(route, request, response);
        default:
          throw method_not_allowed();
      }
    case Route::Kind::Unknown:
      break;
  }
  throw method_not_allowed();
}

// --- List --------------------------------------------------------------------------------

void FakeApiServer::Impl::serve_list(const Route& route, const httplib::Request& request,
                                     httplib::Response& response) {
  const Resource resource = *route.resource;
  const ResourceInfo& ri = info(resource);
  const ListParams params = parse_list_params(request);
  validate_list_options(params, /*watch=*/false);
  const FieldSelector fields = FieldSelector::parse(resource, params.field_selector);
  const LabelSelector labels = LabelSelector::parse(params.label_selector);
  const auto table =
      table_request(request.get_header_value("Accept"), request.get_param_value("includeObject"));

  std::unique_lock lock(mutex);
  const std::uint64_t current = store.current_rv();
  std::uint64_t snapshot_rv = current;
  std::string start_after;
  bool use_limit = params.limit > 0;
  if (!params.continue_token.empty()) {
    if (!params.resource_version.empty() && params.resource_version != "0") {
      throw bad_request("specifying resource version is not allowed when using continue");
    }
    const ContinueToken token = decode_continue(params.continue_token);
    if (token.generation < continue_generation ||
        (token.rv != 0 && token.rv < store.compacted_rv())) {
      // Like etcd, offer a token that continues inconsistently at the latest RV.
      throw expired(kContinueExpiredMessage)
          .with_metadata(
              {{"continue", encode_continue({0, token.start_after, continue_generation})}});
    }
    snapshot_rv = token.rv != 0 ? token.rv : current;
    start_after = token.start_after;
  } else if (params.resource_version == "0") {
    use_limit = false;  // served from the watch cache, which ignores limit
  } else if (!params.resource_version.empty()) {
    const std::uint64_t requested = parse_resource_version(params.resource_version);
    if (requested > current) throw too_large_resource_version(requested, current);
    const bool exact = params.resource_version_match == "Exact" ||
                       (params.resource_version_match.empty() && use_limit);
    if (exact) {
      if (requested < store.compacted_rv()) {
        throw expired("The resourceVersion for the provided list is too old.");
      }
      snapshot_rv = requested;
    }
  }

  // Borrow the live map when the snapshot is current (we hold the lock): copying 50 000
  // objects per page made large lists quadratic. Older snapshots are rebuilt from history.
  ObjectMap historical;
  if (snapshot_rv != current) historical = store.snapshot_at(resource, snapshot_rv);
  const ObjectMap& snapshot = snapshot_rv == current ? store.objects(resource) : historical;
  const std::string prefix = route.ns.empty() ? std::string() : route.ns + "/";
  auto it = start_after.empty() ? snapshot.lower_bound(prefix) : snapshot.upper_bound(start_after);
  if (!prefix.empty() && it != snapshot.end() && it->first < prefix)
    it = snapshot.lower_bound(prefix);
  auto in_scope = [&](const auto& entry) {
    return entry.first.compare(0, prefix.size(), prefix) == 0;
  };

  // Items are serialised one by one (nlohmann's serializer; building one list tree and dumping
  // it took seconds for 50 000 pods) and kept per object while its resourceVersion holds.
  auto list = std::make_shared<ListBody>();
  auto* cache = snapshot_rv == current ? &list_item_cache[resource] : nullptr;
  std::int64_t count = 0;
  std::string last_key;
  bool more = false;
  std::vector<const json*> table_objects;  // for a Table: rows are made under the lock
  for (; it != snapshot.end() && in_scope(*it); ++it) {
    if (use_limit && count == params.limit) {
      more = true;
      break;
    }
    last_key = it->first;
    if (!fields.matches(it->second) || !labels.matches(it->second)) continue;
    ++count;
    if (table) {
      table_objects.push_back(&it->second);
      continue;
    }
    if (cache == nullptr) {
      list->items.push_back(serialize_list_item(it->second));
      continue;
    }
    const std::uint64_t rv = rv_of(it->second);
    auto& entry = (*cache)[it->first];
    if (entry.rv != rv || entry.text == nullptr) {
      entry.text = serialize_list_item(it->second);
      entry.rv = rv;
    }
    list->items.push_back(entry.text);
  }
  // Deleted objects leave entries behind; start over once they are a sizeable share.
  if (cache != nullptr && cache->size() > snapshot.size() + snapshot.size() / 4 + 100)
    cache->clear();
  json metadata = {{"resourceVersion", std::to_string(snapshot_rv)}};
  if (more) {
    metadata["continue"] = encode_continue({snapshot_rv, last_key, continue_generation});
    if (fields.empty() && labels.empty()) {
      metadata["remainingItemCount"] = std::count_if(it, snapshot.end(), in_scope);
    }
  }
  if (table) {
    const json body = make_table(resource, table_objects, *table, std::move(metadata));
    lock.unlock();
    response.status = 200;
    response.set_content(body.dump(), table_content_type(*table));
    return;
  }
  lock.unlock();

  // The real server's order: kind, apiVersion, metadata, items.
  BodyWriter head(list->head);
  head.raw(R"({"kind":)");
  head.string(ri.list_kind);
  head.raw(R"(,"apiVersion":)");
  head.string(ri.api_version);
  head.raw(R"(,"metadata":)");
  head.value(metadata);
  head.raw(R"(,"items":[)");
  response.status = 200;
  // Streamed from the pieces with a Content-Length: no 100 MB copy, and the client starts
  // reading while the rest is written.
  response.set_content_provider(
      list->size(), "application/json",
      [list](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        return list->write(offset, length, sink);
      });
}

// --- Writes ------------------------------------------------------------------------------

json FakeApiServer::Impl::http_create(const Route& route, const std::string& body) {
  const Resource resource = *route.resource;
  const ResourceInfo& ri = info(resource);
  json object = parse_json_body(body);
  if (!object.is_object()) throw bad_request("the body of the request must be a JSON object");
  if (object.contains("kind") && object["kind"] != ri.kind) {
    throw bad_request(fmt::format("the object provided is unrecognized (must be of type {}): {}",
                                  ri.kind, object["kind"].dump()));
  }
  json& metadata = object["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  if (ri.namespaced) {
    const std::string body_ns = metadata.value("namespace", "");
    if (body_ns.empty()) {
      metadata["namespace"] = route.ns;
    } else if (body_ns != route.ns) {
      throw bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
  }
  if (metadata.value("name", "").empty()) {
    const std::string generate = metadata.value("generateName", "");
    if (generate.empty()) {
      throw invalid(ri.kind, ri.group, ri.kind, "",
                    {{"metadata.name", "Required value", "FieldValueRequired",
                      "name or generateName is required"}});
    }
    metadata["name"] = generate + new_uid().substr(0, 5);
  }
  if (!metadata.value("resourceVersion", "").empty()) {
    throw internal_unwrapped("resourceVersion should not be set on objects to be created");
  }
  json created;
  {
    std::lock_guard lock(mutex);
    object = stamp_new_object(resource, std::move(object));
    if (store.find(resource, key_of(resource, object)) != nullptr) {
      throw already_exists(ri.group, ri.plural, name_of(object));
    }
    created = store.add(resource, std::move(object));
  }
  changed.notify_all();
  return created;
}

std::optional<json> FakeApiServer::Impl::prepare_update(Resource resource, const json& current,
                                                        json updated, bool status_subresource) {
  const ResourceInfo& ri = info(resource);
  const std::string name = name_of(current);
  if (!updated.is_object()) throw bad_request("the body of the request must be a JSON object");
  if (updated.contains("kind") && updated["kind"] != ri.kind) {
    throw bad_request(
        fmt::format("the object provided is unrecognized (must be of type {})", ri.kind));
  }
  json& metadata = updated["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  if (metadata.value("name", "") != name) {
    throw bad_request(
        fmt::format("the name of the object ({}) does not match the name on the URL ({})",
                    metadata.value("name", ""), name));
  }
  if (ri.namespaced) {
    const std::string ns = metadata.value("namespace", "");
    if (!ns.empty() && ns != namespace_of(current)) {
      throw bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    metadata["namespace"] = namespace_of(current);
  }
  const std::string rv = metadata.value("resourceVersion", "");
  if (!rv.empty() && rv != string_at(current, "metadata", "resourceVersion")) {
    throw conflict(ri.group, ri.plural, name, kObjectModifiedMessage);
  }
  const std::string uid = metadata.value("uid", "");
  const std::string current_uid = string_at(current, "metadata", "uid");
  if (!uid.empty() && uid != current_uid) {
    throw conflict(ri.group, ri.plural, name, precondition_message("UID", uid, current_uid));
  }
  // Fields only the server sets.
  updated["kind"] = ri.kind;
  updated["apiVersion"] = ri.api_version;
  for (const char* field :
       {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"}) {
    if (current["metadata"].contains(field)) {
      metadata[field] = current["metadata"][field];
    } else {
      metadata.erase(field);
    }
  }
  if (ri.has_status) {
    if (status_subresource) {
      // The status subresource changes the status only.
      json merged = current;
      merged["status"] = updated.contains("status") ? updated["status"] : json::object();
      updated = std::move(merged);
    } else if (current.contains("status")) {
      updated["status"] = current["status"];
    } else {
      updated.erase("status");
    }
  }
  if (resource == Resource::Pods && !status_subresource) {
    apply_pod_defaults(updated);
    json defaulted_current = current;  // a test may have stored a pod without defaults
    apply_pod_defaults(defaulted_current);
    if (immutable_pod_spec(updated["spec"]) != immutable_pod_spec(defaulted_current["spec"])) {
      throw invalid(
          "Pod", "", "Pod", name,
          {{"spec", "Forbidden", "FieldValueForbidden", std::string(kPodUpdateForbidden)}});
    }
  }
  // Like the real server, a write that changes nothing is not a write: no new RV, no event.
  if (without_resource_version(updated) == without_resource_version(current)) return std::nullopt;
  return updated;
}

json FakeApiServer::Impl::http_update(const Route& route, const std::string& body) {
  const Resource resource = *route.resource;
  json updated = parse_json_body(body);
  json result;
  {
    std::lock_guard lock(mutex);
    const json& current = find_or_throw(resource, route.ns, route.name);
    if (updated.is_object() && resource == Resource::Leases &&
        string_at(updated, "metadata", "resourceVersion").empty()) {
      // The lease strategy does not allow unconditional updates.
      throw invalid("Lease.coordination.k8s.io", "coordination.k8s.io", "Lease", route.name,
                    {{"metadata.resourceVersion", "Invalid value", "FieldValueInvalid",
                      "0x0: must be specified for an update"}});
    }
    auto prepared =
        prepare_update(resource, current, std::move(updated), route.subresource == "status");
    if (!prepared) return current;
    result = store.modify(resource, std::move(*prepared));
  }
  changed.notify_all();
  return result;
}

json FakeApiServer::Impl::http_patch(const Route& route, const httplib::Request& request) {
  const Resource resource = *route.resource;
  const std::string content_type = request.get_header_value("Content-Type");
  const auto type = patch_type_from_content_type(content_type);
  if (!type) {
    throw unsupported_media_type(
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
        "application/strategic-merge-patch+json");
  }
  const json patch = parse_json_body(request.body);
  json result;
  {
    std::lock_guard lock(mutex);
    const json& current = find_or_throw(resource, route.ns, route.name);
    json patched = apply_patch(*type, resource, current, patch);
    auto prepared =
        prepare_update(resource, current, std::move(patched), route.subresource == "status");
    if (!prepared) return current;
    result = store.modify(resource, std::move(*prepared));
  }
  changed.notify_all();
  return result;
}

void FakeApiServer::Impl::http_delete(const Route& route, const httplib::Request& request,
                                      httplib::Response& response) {
  const Resource resource = *route.resource;
  const ResourceInfo& ri = info(resource);
  std::optional<std::int64_t> grace_period;
  if (request.has_param("gracePeriodSeconds")) {
    grace_period = parse_int(request.get_param_value("gracePeriodSeconds"));
    if (!grace_period) throw bad_request("gracePeriodSeconds: invalid value");
  }
  json options_body = json::object();
  if (!request.body.empty()) {
    options_body = parse_json_body(request.body);
    if (options_body.contains("gracePeriodSeconds") &&
        options_body["gracePeriodSeconds"].is_number_integer()) {
      grace_period = options_body["gracePeriodSeconds"].get<std::int64_t>();
    }
  }
  json result;
  bool return_object = resource == Resource::Pods;  // the pod registry returns the object
  {
    std::lock_guard lock(mutex);
    const json& current = find_or_throw(resource, route.ns, route.name);
    const std::string uid = string_at(options_body, "preconditions", "uid");
    const std::string current_uid = string_at(current, "metadata", "uid");
    if (!uid.empty() && uid != current_uid) {
      throw conflict(ri.group, ri.plural, route.name,
                     precondition_message("UID", uid, current_uid));
    }
    const std::string rv = string_at(options_body, "preconditions", "resourceVersion");
    const std::string current_rv = string_at(current, "metadata", "resourceVersion");
    if (!rv.empty() && rv != current_rv) {
      throw conflict(ri.group, ri.plural, route.name,
                     precondition_message("ResourceVersion", rv, current_rv));
    }
    const std::string key = make_key(resource, route.ns, route.name);
    bool delete_now = true;
    if (resource == Resource::Pods) {
      // strategy.go CheckGracefulDelete: unscheduled and finished pods go at once.
      std::int64_t grace = grace_period.value_or(
          current["spec"].value("terminationGracePeriodSeconds", std::int64_t{30}));
      const std::string phase = string_at(current, "status", "phase");
      if (string_at(current, "spec", "nodeName").empty() || phase == "Succeeded" ||
          phase == "Failed") {
        grace = 0;
      }
      const bool terminating = current["metadata"].contains("deletionTimestamp");
      if (grace > 0) {
        delete_now = false;
        const std::int64_t existing =
            current["metadata"].value("deletionGracePeriodSeconds", std::int64_t{-1});
        if (!terminating || grace < existing) {
          json updated = current;
          updated["metadata"]["deletionTimestamp"] = rfc3339_now(grace);
          updated["metadata"]["deletionGracePeriodSeconds"] = grace;
          result = store.modify(resource, std::move(updated));
        } else {
          result = current;
        }
      }
    }
    if (delete_now) result = store.erase(resource, key);
    if (!return_object) {
      json details = {{"name", route.name}, {"kind", ri.plural}, {"uid", current_uid}};
      if (!ri.group.empty()) details["group"] = ri.group;
      result = success_status(200, std::move(details));
    }
  }
  changed.notify_all();
  write_json(response, 200, result);
}

void FakeApiServer::Impl::http_bind(const Route& route, const std::string& body) {
  json binding = parse_json_body(body);
  if (!binding.is_object()) throw bad_request("the body of the request must be a JSON object");
  json& metadata = binding["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  const std::string body_ns = metadata.value("namespace", "");
  if (!body_ns.empty() && body_ns != route.ns) {
    throw bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  const std::string name = metadata.value("name", "");
  if (route.kind == Route::Kind::LegacyBindings) {
    if (name.empty()) {
      throw invalid("Binding", "", "Binding", "",
                    {{"metadata.name", "Required value", "FieldValueRequired",
                      "name or generateName is required"}});
    }
  } else if (name != route.name) {
    throw bad_request("name in URL does not match name in Binding object");
  }
  // ValidatePodBinding's errors reach the client unwrapped: HTTP 500 with no reason.
  const std::string target_kind = string_at(binding, "target", "kind");
  const std::string target_name = string_at(binding, "target", "name");
  if (!target_kind.empty() && target_kind != "Node") {
    throw internal_unwrapped(fmt::format(
        "target.kind: Unsupported value: \"{}\": supported values: \"Node\", \"<empty>\"",
        target_kind));
  }
  if (target_name.empty()) throw internal_unwrapped("target.name: Required value");

  {
    std::lock_guard lock(mutex);
    const json& pod = find_or_throw(Resource::Pods, route.ns, name);
    const std::string uid = metadata.value("uid", "");
    const std::string pod_uid = string_at(pod, "metadata", "uid");
    if (!uid.empty() && uid != pod_uid) {
      throw conflict("", "pods", name, precondition_message("UID", uid, pod_uid));
    }
    const std::string rv = metadata.value("resourceVersion", "");
    const std::string pod_rv = string_at(pod, "metadata", "resourceVersion");
    if (!rv.empty() && rv != pod_rv) {
      throw conflict("", "pods", name, precondition_message("ResourceVersion", rv, pod_rv));
    }
    if (pod["metadata"].contains("deletionTimestamp")) {
      throw conflict("", "pods/binding", name,
                     fmt::format("pod {} is being deleted, cannot be assigned to a host", name));
    }
    const std::string bound_to = string_at(pod, "spec", "nodeName");
    if (!bound_to.empty()) {
      throw conflict("", "pods/binding", name,
                     fmt::format("pod {} is already assigned to node \"{}\"", name, bound_to));
    }
    if (pod["spec"].contains("schedulingGates") && !pod["spec"]["schedulingGates"].empty()) {
      throw conflict("", "pods/binding", name,
                     fmt::format("pod {} has non-empty .spec.schedulingGates", name));
    }
    // setPodNodeAndMetadata: one guarded update, so watchers see one MODIFIED.
    json bound = pod;
    bound["spec"]["nodeName"] = target_name;
    if (metadata.contains("annotations") && metadata["annotations"].is_object()) {
      for (const auto& [key, value] : metadata["annotations"].items()) {
        bound["metadata"]["annotations"][key] = value;
      }
    }
    if (options.binding_copies_labels && metadata.contains("labels") &&
        metadata["labels"].is_object()) {
      for (const auto& [key, value] : metadata["labels"].items())
        bound["metadata"]["labels"][key] = value;
    }
    if (options.binding_clears_nominated_node_name && bound["status"].is_object()) {
      bound["status"].erase("nominatedNodeName");
    }
    set_pod_scheduled(bound);
    store.modify(Resource::Pods, std::move(bound));
  }
  changed.notify_all();
}

}  // namespace gpushare::testing
