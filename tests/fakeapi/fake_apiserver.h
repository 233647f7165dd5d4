#pragma once
// An in-process fake Kubernetes API server for integration and fault tests.
//
// It speaks the real wire protocol (JSON over HTTP/1.1, optionally TLS) on 127.0.0.1 with an
// ephemeral port, for core/v1 nodes, pods, configmaps (+ pods/binding, pods/status,
// nodes/status, the legacy bindings collection) and coordination.k8s.io/v1 leases, and
// reproduces the edge cases of docs protocol-reference.md §6: string resourceVersions from one
// global counter, paged lists with continue tokens, exact-RV reads and 410s after
// compaction, watches with synthetic ADDEDs, bookmarks, selector enter/leave events,
// in-stream 410s and arbitrary chunk framing, Binding semantics, patches, graceful pod
// deletion, bearer-token auth and Status bodies. kubectl works against it: server-side
// Tables (fake_apiserver_table.cpp), OpenAPI v3 with strict field validation
// (fake_apiserver_openapi.cpp) and protobuf ConfigMap bodies (fake_apiserver_protobuf.cpp).
//
// Tests seed and change the truth directly (create/replace/mutate/remove), which produces
// the same watch events as writes over HTTP, and use the hooks below to inject faults.
// All members are thread-safe.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fakeapi/fake_apiserver_status.h"
#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing {

// How watch events are cut into HTTP chunks. A client must parse a stream of JSON values,
// not lines or chunks; the non-default modes prove that it does.
enum class WatchFraming {
  OneEventPerChunk,  // what a real server usually does (it flushes once per event)
  SplitEvents,       // every event is written as three chunks, cut mid-JSON
  CoalesceEvents,    // all events ready at the same time go into one chunk
  SplitAndCoalesce,  // ready events are concatenated and cut into 16-byte chunks
};

// A failure injected into the next matching request(s).
struct RequestFault {
  Verb verb = Verb::List;
  std::optional<Resource> resource;  // nullopt: any resource
  // The HTTP status to answer with; 0 means "no failure" (only the delay applies).
  int status = 500;
  std::string reason;   // "" -> the usual reason for `status` (429 -> TooManyRequests, ...)
  std::string message;  // "" -> a generic message
  std::optional<int> retry_after_seconds;  // Retry-After header and details.retryAfterSeconds
  std::chrono::milliseconds delay{0};      // hang this long before answering
  // For writes: perform the write first, then delay and/or fail ("late success": the client
  // sees an error or a time-out although the change happened).
  bool apply_first = false;
  // Reset the TCP connection instead of answering (after the delay, and after the write if
  // apply_first). Over TLS the connection is closed after the response headers instead.
  bool drop_connection = false;
};

// One request as the server saw it.
struct RequestRecord {
  std::string method;
  std::string path;
  std::map<std::string, std::string> params;
  std::string content_type;
  std::string authorization;  // the Authorization header, if any
  Verb verb = Verb::Other;
  std::optional<Resource> resource;
  std::string namespace_name;
  std::string name;
  std::string subresource;
};

struct FakeApiServerOptions {
  std::uint16_t port = 0;  // 0: an ephemeral port on 127.0.0.1
  bool tls = false;        // serve HTTPS with a self-signed cert (ca_cert_pem())
  // Accepted bearer tokens; nullopt disables authentication.
  std::optional<std::set<std::string>> accepted_tokens;
  std::uint64_t initial_resource_version = 100;
  std::size_t max_history = 10000;  // events kept; older ones are compacted away
  WatchFraming watch_framing = WatchFraming::OneEventPerChunk;
  // Periodic BOOKMARKs on watches that allow them; 0 = only send_bookmark_now().
  std::chrono::milliseconds bookmark_interval{0};
  // The server ends every watch by itself (cleanly) after this × a random factor in [1, 2),
  // like --min-request-timeout; 0 = only at timeoutSeconds or through the hooks.
  std::chrono::milliseconds watch_lifetime{0};
  // Like servers with the WatchList gate (1.34+): a ""/"0" watch with bookmarks allowed
  // gets a BOOKMARK annotated k8s.io/initial-events-end after its synthetic ADDEDs.
  bool initial_events_end_bookmark = true;
  // Binding behaviour gated on in 1.35: copy Binding labels, clear nominatedNodeName.
  bool binding_copies_labels = true;
  bool binding_clears_nominated_node_name = true;
  std::string server_git_version = "v1.34.0";
  // Serve resource.k8s.io/v1 (DRA); false: a server without it (404s, absent from discovery).
  bool serve_dra = true;
  // Idle keep-alive connections are closed after this (TLS: at most 2 s, because httplib's
  // TLS loop only notices a stop after it).
  std::chrono::seconds keep_alive_timeout{30};
};

class FakeApiServer {
 public:
  using Options = FakeApiServerOptions;
  using Json = nlohmann::json;
  enum class StateOnRestart { Keep, Drop };

  explicit FakeApiServer(Options options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // --- Where it listens -------------------------------------------------------------------
  std::uint16_t port() const;
  std::string host() const;      // "127.0.0.1"
  std::string base_url() const;  // "http://127.0.0.1:<port>" or https
  bool uses_tls() const;
  std::string ca_cert_pem() const;             // empty without TLS
  std::filesystem::path ca_cert_path() const;  // empty without TLS
  // A kubeconfig for this server (token auth if `token` is not empty, CA data with TLS).
  void write_kubeconfig(const std::filesystem::path& path, std::string_view token = "",
                        std::string_view default_namespace = "default") const;

  // --- Lifecycle --------------------------------------------------------------------------
  // Like the process dying: watches end without their final chunk, connections close, the
  // port refuses connections until start_listening().
  void stop_listening();
  void start_listening();  // on the same port
  void restart(StateOnRestart state);
  bool is_listening() const;

  // --- The truth, bypassing HTTP (no auth, no faults, no update validation) ----------------
  // Each write takes the next resourceVersion and produces the watch event a real write
  // would. Failures throw ApiError (e.g. 409 AlreadyExists, 404 NotFound).
  // create() keeps a metadata.uid the object names (an HTTP create never does) and makes one
  // up otherwise.
  Json create(Resource resource, Json object);
  Json replace(Resource resource, Json object);  // unconditional; may change anything
  // Reads the object, lets `edit` change it, writes it back (always a MODIFIED, even if
  // nothing changed). `edit` runs under the server's lock: it must not call the server.
  Json mutate(Resource resource, std::string_view ns, std::string_view name,
              const std::function<void(Json&)>& edit);
  Json remove(Resource resource, std::string_view ns, std::string_view name);  // immediate
  std::optional<Json> get(Resource resource, std::string_view ns, std::string_view name) const;
  std::vector<Json> list(Resource resource, std::string_view ns = "") const;
  std::string resource_version() const;  // the current global RV
  // The kubelet's final word on a gracefully deleted pod: DELETED now.
  Json finalize_pod_deletion(std::string_view ns, std::string_view name);

  // --- Authentication ---------------------------------------------------------------------
  void set_accepted_tokens(std::set<std::string> tokens);  // replaces the set (rotation)
  void disable_auth();

  // --- Watches ----------------------------------------------------------------------------
  void close_all_watches();  // clean end: final chunk, EOF
  void drop_all_watches();   // abrupt end: no final chunk (connection reset on plain HTTP)
  void send_bookmark_now();  // to every watch that allows bookmarks
  void set_bookmark_interval(std::chrono::milliseconds interval);
  void set_watch_framing(WatchFraming framing);
  // While held, watches deliver nothing; on release, everything pending goes out at once
  // (with CoalesceEvents: in one chunk).
  void hold_watch_events();
  void release_watch_events();
  std::size_t open_watch_count() const;
  bool wait_for_open_watches(std::size_t count, std::chrono::milliseconds timeout) const;

  // --- Connections ------------------------------------------------------------------------
  void drop_all_connections();  // TCP reset of every open connection (plain HTTP)
  std::size_t open_connection_count() const;

  // --- History ----------------------------------------------------------------------------
  // Forget history up to `rv` (at most the current RV): watches from older RVs get an
  // in-stream 410, exact-RV and continued lists an HTTP 410.
  void compact(std::uint64_t rv);
  void compact_to_current();
  std::string compacted_resource_version() const;
  void expire_continue_tokens();  // every token issued so far gets 410 Expired
  // What a client sees when the server's watch window moves past it (etcd compaction behind a
  // slow or restarted watch cache): the RV moves on without an event and history is compacted
  // to it, so every open watch ends with an in-stream ERROR 410 and any watch or exact list
  // from an older RV gets 410 too; a not-older-than list still succeeds. Returns how many
  // watches were open.
  std::size_t expire_watches();

  // --- Faults -----------------------------------------------------------------------------
  void inject_fault(RequestFault fault, int count = 1);
  void fail_next(Verb verb, int count, int status, std::optional<int> retry_after_seconds = {});
  void clear_faults();

  // --- Request log ------------------------------------------------------------------------
  std::size_t request_count(Verb verb, std::optional<Resource> resource = {}) const;
  std::vector<RequestRecord> requests() const;
  void clear_request_log();
  bool wait_for_request_count(Verb verb, std::optional<Resource> resource, std::size_t count,
                              std::chrono::milliseconds timeout) const;

 private:
  struct Impl;  // fake_apiserver_impl.h
  std::unique_ptr<Impl> impl_;
};

// Minimal objects for seeding. Pods get one container named "main".
nlohmann::json make_pod(std::string_view ns, std::string_view name, std::string_view node_name = "",
                        std::string_view phase = "Pending");
nlohmann::json make_node(std::string_view name);
nlohmann::json make_configmap(std::string_view ns, std::string_view name,
                              const std::map<std::string, std::string>& data = {});
nlohmann::json make_lease(std::string_view ns, std::string_view name, std::string_view holder = "");

}  // namespace gpushare::testing
