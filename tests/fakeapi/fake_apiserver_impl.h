#pragma once
// Internals of FakeApiServer shared by its .cpp files (lifecycle and test API in
// fake_apiserver.cpp, HTTP handlers in fake_apiserver_http.cpp, watches in
// fake_apiserver_watch.cpp). Not for use by tests.

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "fakeapi/fake_apiserver.h"
#include "fakeapi/fake_apiserver_selectors.h"
#include "fakeapi/fake_apiserver_store.h"
#include "fakeapi/fake_apiserver_table.h"
#include "fakeapi/fake_apiserver_transport.h"

namespace gpushare::testing {
namespace fakeapi {

using Clock = std::chrono::steady_clock;

// One open watch. Guarded by Impl::mutex, except `connection` which is set once.
struct WatchSession {
  Resource resource = Resource::Pods;
  std::string ns;  // "" = all namespaces
  FieldSelector fields;
  LabelSelector labels;
  bool allow_bookmarks = false;
  std::optional<TableRequest> table;  // events carry one-row Tables (Accept: as=Table)
  std::uint64_t cursor = 0;           // every event with rv <= cursor has been considered
  std::vector<std::string> pending;   // frames made at start (initial ADDEDs, an ERROR)
  bool finish_after_pending = false;
  std::optional<Clock::time_point> deadline;  // timeoutSeconds
  Clock::time_point next_periodic_bookmark;
  std::uint64_t bookmarks_seen = 0;  // compared with Impl::bookmark_generation
  bool close_requested = false;
  bool drop_requested = false;
  Connection* connection = nullptr;  // nullptr over TLS; outlives the session's response
};

struct PendingFault {
  RequestFault fault;
  int remaining = 0;
};

// What a request addresses.
struct Route {
  enum class Kind {
    Unknown,
    Health,
    Version,
    Discovery,
    Collection,
    Object,
    Subresource,
    LegacyBindings
  };
  Kind kind = Kind::Unknown;
  Verb verb = Verb::Other;
  std::optional<Resource> resource;
  std::string ns;
  std::string name;
  std::string subresource;  // "binding", "status"
  bool method_allowed = true;
};

Route parse_route(std::string_view method, std::string_view path, bool watch_param);

// Discovery documents (/api, /api/v1, /apis, ...); nullopt for other paths.
std::optional<nlohmann::json> discovery_document(std::string_view path,
                                                 const FakeApiServerOptions& options,
                                                 std::uint16_t port);

// Continue tokens: base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"} as the real
// server makes them, plus the token generation for expire_continue_tokens().
struct ContinueToken {
  std::uint64_t rv = 0;  // 0: an "inconsistent" token continuing at the latest RV
  std::string start_after;
  std::uint64_t generation = 0;
};
std::string encode_continue(const ContinueToken& token);
ContinueToken decode_continue(std::string_view text);  // throws ApiError 400

// Query parameters of a list or watch (metav1.ListOptions).
struct ListParams {
  std::string resource_version;
  std::string resource_version_match;
  std::string continue_token;
  std::int64_t limit = 0;
  std::string field_selector;
  std::string label_selector;
  std::optional<bool> send_initial_events;
  bool allow_bookmarks = false;
  std::optional<std::int64_t> timeout_seconds;
};
ListParams parse_list_params(const httplib::Request& request);  // throws ApiError 400
// apimachinery's ValidateListOptions: 422 Invalid (ListOptions.meta.k8s.io) on bad combinations.
void validate_list_options(const ListParams& params, bool watch);
// Go's strconv.ParseBool; nullopt for anything else.
std::optional<bool> parse_bool(std::string_view text);
// A resourceVersion parameter as a number; throws ApiError 400.
std::uint64_t parse_resource_version(std::string_view text);

// Pod defaults the real server applies (restartPolicy, schedulerName, grace period).
void apply_pod_defaults(nlohmann::json& pod);

}  // namespace fakeapi

struct FakeApiServer::Impl {
  explicit Impl(Options options);

  // --- state guarded by `mutex` ---
  Options options;
  mutable std::mutex mutex;
  // Signalled on every store change, hook, request and stop; watches and waiters use it.
  mutable std::condition_variable changed;
  fakeapi::ObjectStore store;
  bool auth_enabled = false;
  std::set<std::string> tokens;
  WatchFraming framing = WatchFraming::OneEventPerChunk;
  bool events_held = false;
  std::chrono::milliseconds bookmark_interval{0};
  std::uint64_t bookmark_generation = 0;
  std::vector<std::shared_ptr<fakeapi::WatchSession>> watches;
  std::uint64_t continue_generation = 0;  // tokens older than this are expired
  // List items as serialised for the current state, by store key, valid while the object's
  // resourceVersion is unchanged (every write stamps a new one). Serialising 50 000 pods made
  // the fake, not the client under test, dominate large-list timings.
  struct SerializedItem {
    std::uint64_t rv = 0;
    std::shared_ptr<const std::string> text;  // shared with list responses being sent
  };
  std::map<Resource, std::map<std::string, SerializedItem, std::less<>>> list_item_cache;
  std::deque<fakeapi::PendingFault> faults;
  std::vector<RequestRecord> log;
  bool stopping = false;

  // --- the HTTP server, guarded by `lifecycle_mutex` ---
  std::mutex lifecycle_mutex;
  std::unique_ptr<httplib::Server> http;
  fakeapi::FakeHttpServer* plain_http = nullptr;  // == http.get() without TLS
  std::thread listener;
  std::uint16_t port = 0;

  void start(std::uint16_t requested_port);  // lifecycle_mutex held
  void stop();                               // lifecycle_mutex held
  void install_routes(httplib::Server& server);

  // HTTP (fake_apiserver_http.cpp).
  void handle(const httplib::Request& request, httplib::Response& response);
  void serve(const fakeapi::Route& route, const httplib::Request& request,
             httplib::Response& response);
  struct ListBody;
  // Answers a list: items are serialised (or taken from list_item_cache) under the lock, and
  // the body is streamed from those pieces after it is released.
  void serve_list(const fakeapi::Route& route, const httplib::Request& request,
                  httplib::Response& response);
  nlohmann::json http_create(const fakeapi::Route& route, const std::string& body);
  nlohmann::json http_update(const fakeapi::Route& route, const std::string& body);
  nlohmann::json http_patch(const fakeapi::Route& route, const httplib::Request& request);
  void http_delete(const fakeapi::Route& route, const httplib::Request& request,
                   httplib::Response& response);
  void http_bind(const fakeapi::Route& route, const std::string& body);
  // pods/eviction (fake_apiserver_eviction.cpp): the PodDisruptionBudget check, then the
  // pod's deletion.
  void http_evict(const fakeapi::Route& route, const std::string& body);
  // Validates and normalises an update of `current` (mutex held); nullopt for a no-op.
  std::optional<nlohmann::json> prepare_update(Resource resource, const nlohmann::json& current,
                                               nlohmann::json updated, bool status_subresource);
  std::optional<RequestFault> take_fault(Verb verb, std::optional<Resource> resource);
  // Sleeps for `delay` unless the server stops or the connection is dropped first.
  bool wait_interruptibly(std::chrono::milliseconds delay);

  // Watches (fake_apiserver_watch.cpp).
  void serve_watch(const fakeapi::Route& route, const httplib::Request& request,
                   httplib::Response& response);
  bool pump_watch(fakeapi::WatchSession& session, httplib::DataSink& sink);
  void unregister_watch(const std::shared_ptr<fakeapi::WatchSession>& session);

  // Store helpers (mutex held).
  nlohmann::json stamp_new_object(Resource resource, nlohmann::json object,
                                  bool keep_uid = false) const;
  const nlohmann::json& find_or_throw(Resource resource, std::string_view ns,
                                      std::string_view name) const;
};

}  // namespace gpushare::testing
