#include "fakeapi/fake_apiserver.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "fakeapi/fake_apiserver_impl.h"
#include "fakeapi/fake_apiserver_tls.h"

namespace gpushare::testing {

using nlohmann::json;
using namespace fakeapi;

FakeApiServer::Impl::Impl(Options opts)
    : options(std::move(opts)),
      store(options.initial_resource_version, options.max_history),
      auth_enabled(options.accepted_tokens.has_value()),
      tokens(options.accepted_tokens.value_or(std::set<std::string>{})),
      framing(options.watch_framing),
      bookmark_interval(options.bookmark_interval) {}

void FakeApiServer::Impl::start(std::uint16_t requested_port) {
  std::unique_ptr<httplib::Server> server;
  FakeHttpServer* plain = nullptr;
  std::chrono::seconds keep_alive = options.keep_alive_timeout;
  if (options.tls) {
    const TlsMaterial& tls = localhost_tls_material();
    server = std::make_unique<httplib::SSLServer>(tls.cert_path.c_str(), tls.key_path.c_str());
    server->new_task_queue = thread_per_connection_queue();
    // httplib's own TLS connection loop only notices stop() after the keep-alive timeout.
    keep_alive = std::min(keep_alive, std::chrono::seconds(2));
  } else {
    auto owned = std::make_unique<FakeHttpServer>();
    plain = owned.get();
    server = std::move(owned);
  }
  if (!server->is_valid())
    throw std::runtime_error("fake apiserver: could not set up the HTTP server");
  server->set_keep_alive_timeout(keep_alive.count());
  // A real apiserver keeps connections for many requests; httplib's default is 5.
  server->set_keep_alive_max_count(100000);
  install_routes(*server);

  int bound = -1;
  if (requested_port == 0) {
    bound = server->bind_to_any_port("127.0.0.1");
  } else if (server->bind_to_port("127.0.0.1", requested_port)) {
    bound = requested_port;
  }
  if (bound <= 0) {
    throw std::runtime_error(
        fmt::format("fake apiserver: cannot listen on 127.0.0.1:{}", requested_port));
  }
  port = static_cast<std::uint16_t>(bound);
  {
    std::lock_guard lock(mutex);
    stopping = false;
  }
  httplib::Server* raw = server.get();
  listener = std::thread([raw] { raw->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so wait for it.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!raw->is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  http = std::move(server);
  plain_http = plain;
}

void FakeApiServer::Impl::stop() {
  if (!http) return;
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  if (plain_http != nullptr) plain_http->begin_shutdown();
  http->stop();
  if (listener.joinable()) listener.join();
  http.reset();
  plain_http = nullptr;
}

json FakeApiServer::Impl::stamp_new_object(Resource resource, json object, bool keep_uid) const {
  const ResourceInfo& ri = info(resource);
  if (!object.is_object()) throw bad_request("the object must be a JSON object");
  object["kind"] = ri.kind;
  object["apiVersion"] = ri.api_version;
  json& metadata = object["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  if (ri.namespaced) {
    if (!metadata.contains("namespace") || metadata["namespace"] == "")
      metadata["namespace"] = "default";
  } else {
    metadata.erase("namespace");
  }
  // Over HTTP the server always assigns the UID; a seeded object keeps the one it names, so
  // that what a test or a sample file says about it (a bind's PodUID) stays true.
  if (!keep_uid || !metadata.contains("uid") || !metadata["uid"].is_string() ||
      metadata["uid"] == "") {
    metadata["uid"] = new_uid();
  }
  metadata["creationTimestamp"] = rfc3339_now();
  metadata.erase("resourceVersion");
  metadata.erase("deletionTimestamp");
  metadata.erase("deletionGracePeriodSeconds");
  if (resource == Resource::Pods) {
    apply_pod_defaults(object);
    if (!object.contains("status") || !object["status"].is_object())
      object["status"] = json::object();
    if (!object["status"].contains("phase")) object["status"]["phase"] = "Pending";
  }
  return object;
}

const json& FakeApiServer::Impl::find_or_throw(Resource resource, std::string_view ns,
                                               std::string_view name) const {
  const json* object = store.find(resource, make_key(resource, ns, name));
  if (object == nullptr) throw not_found(info(resource).group, info(resource).plural, name);
  return *object;
}

// --- FakeApiServer ----------------------------------------------------------------------

FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->start(impl_->options.port);
}

FakeApiServer::~FakeApiServer() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->stop();
}

std::uint16_t FakeApiServer::port() const {
  return impl_->port;
}
std::string FakeApiServer::host() const {
  return "127.0.0.1";
}
std::string FakeApiServer::base_url() const {
  return fmt::format("{}://127.0.0.1:{}", impl_->options.tls ? "https" : "http", impl_->port);
}
bool FakeApiServer::uses_tls() const {
  return impl_->options.tls;
}
std::string FakeApiServer::ca_cert_pem() const {
  return impl_->options.tls ? localhost_tls_material().cert_pem : std::string();
}
std::filesystem::path FakeApiServer::ca_cert_path() const {
  return impl_->options.tls ? localhost_tls_material().cert_path : std::filesystem::path();
}

void FakeApiServer::write_kubeconfig(const std::filesystem::path& path, std::string_view token,
                                     std::string_view default_namespace) const {
  std::string cluster = fmt::format("    server: {}\n", base_url());
  if (uses_tls()) {
    cluster += fmt::format("    certificate-authority-data: {}\n", base64_encode(ca_cert_pem()));
  }
  const std::string user =
      token.empty() ? "  user: {}\n" : fmt::format("  user:\n    token: {}\n", token);
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\n"
      << "clusters:\n- name: fake\n  cluster:\n"
      << cluster << "users:\n- name: fake-user\n"
      << user << "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake-user\n"
      << "    namespace: " << default_namespace << "\n"
      << "current-context: fake\n";
  if (!out) throw std::runtime_error("cannot write kubeconfig " + path.string());
}

void FakeApiServer::stop_listening() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->stop();
}

void FakeApiServer::start_listening() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (!impl_->http) impl_->start(impl_->port);
}

void FakeApiServer::restart(StateOnRestart state) {
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->stop();
  if (state == StateOnRestart::Drop) {
    std::lock_guard store_lock(impl_->mutex);
    impl_->store.clear();
  }
  impl_->start(impl_->port);
}

bool FakeApiServer::is_listening() const {
  std::lock_guard lock(impl_->lifecycle_mutex);
  return impl_->http != nullptr;
}

// --- The truth ---------------------------------------------------------------------------

json FakeApiServer::create(Resource resource, json object) {
  json created;
  {
    std::lock_guard lock(impl_->mutex);
    object = impl_->stamp_new_object(resource, std::move(object), /*keep_uid=*/true);
    const std::string name = name_of(object);
    if (name.empty()) throw bad_request("metadata.name is required");
    if (impl_->store.find(resource, key_of(resource, object)) != nullptr) {
      throw already_exists(info(resource).group, info(resource).plural, name);
    }
    created = impl_->store.add(resource, std::move(object));
  }
  impl_->changed.notify_all();
  return created;
}

json FakeApiServer::replace(Resource resource, json object) {
  json replaced;
  {
    std::lock_guard lock(impl_->mutex);
    const ResourceInfo& ri = info(resource);
    if (!object.is_object()) throw bad_request("the object must be a JSON object");
    if (ri.namespaced && namespace_of(object).empty()) object["metadata"]["namespace"] = "default";
    const json& current = impl_->find_or_throw(resource, namespace_of(object), name_of(object));
    object["kind"] = ri.kind;
    object["apiVersion"] = ri.api_version;
    for (const char* field : {"uid", "creationTimestamp"}) {
      if (!object["metadata"].contains(field))
        object["metadata"][field] = current["metadata"][field];
    }
    if (resource == Resource::Pods) apply_pod_defaults(object);
    replaced = impl_->store.modify(resource, std::move(object));
  }
  impl_->changed.notify_all();
  return replaced;
}

json FakeApiServer::mutate(Resource resource, std::string_view ns, std::string_view name,
                           const std::function<void(json&)>& edit) {
  json mutated;
  {
    std::lock_guard lock(impl_->mutex);
    json object = impl_->find_or_throw(resource, ns, name);
    edit(object);
    // The key cannot change under an edit.
    object["metadata"]["name"] = name;
    if (info(resource).namespaced) object["metadata"]["namespace"] = ns;
    mutated = impl_->store.modify(resource, std::move(object));
  }
  impl_->changed.notify_all();
  return mutated;
}

json FakeApiServer::remove(Resource resource, std::string_view ns, std::string_view name) {
  json removed;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->find_or_throw(resource, ns, name);
    removed = impl_->store.erase(resource, make_key(resource, ns, name));
  }
  impl_->changed.notify_all();
  return removed;
}

std::optional<json> FakeApiServer::get(Resource resource, std::string_view ns,
                                       std::string_view name) const {
  std::lock_guard lock(impl_->mutex);
  const json* object = impl_->store.find(resource, make_key(resource, ns, name));
  if (object == nullptr) return std::nullopt;
  return *object;
}

std::vector<json> FakeApiServer::list(Resource resource, std::string_view ns) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<json> objects;
  for (const auto& [key, object] : impl_->store.objects(resource)) {
    if (ns.empty() || namespace_of(object) == ns) objects.push_back(object);
  }
  return objects;
}

std::string FakeApiServer::resource_version() const {
  std::lock_guard lock(impl_->mutex);
  return std::to_string(impl_->store.current_rv());
}

json FakeApiServer::finalize_pod_deletion(std::string_view ns, std::string_view name) {
  return remove(Resource::Pods, ns, name);
}

// --- Auth --------------------------------------------------------------------------------

void FakeApiServer::set_accepted_tokens(std::set<std::string> tokens) {
  std::lock_guard lock(impl_->mutex);
  impl_->auth_enabled = true;
  impl_->tokens = std::move(tokens);
}

void FakeApiServer::disable_auth() {
  std::lock_guard lock(impl_->mutex);
  impl_->auth_enabled = false;
}

// --- Watch hooks -------------------------------------------------------------------------

void FakeApiServer::close_all_watches() {
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& session : impl_->watches) session->close_requested = true;
  }
  impl_->changed.notify_all();
}

void FakeApiServer::drop_all_watches() {
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& session : impl_->watches) {
      session->drop_requested = true;
      if (session->connection != nullptr) session->connection->abort();
    }
  }
  impl_->changed.notify_all();
}

void FakeApiServer::send_bookmark_now() {
  {
    std::lock_guard lock(impl_->mutex);
    ++impl_->bookmark_generation;
  }
  impl_->changed.notify_all();
}

void FakeApiServer::set_bookmark_interval(std::chrono::milliseconds interval) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->bookmark_interval = interval;
    for (const auto& session : impl_->watches)
      session->next_periodic_bookmark = Clock::now() + interval;
  }
  impl_->changed.notify_all();
}

void FakeApiServer::set_watch_framing(WatchFraming framing) {
  std::lock_guard lock(impl_->mutex);
  impl_->framing = framing;
}

void FakeApiServer::hold_watch_events() {
  std::lock_guard lock(impl_->mutex);
  impl_->events_held = true;
}

void FakeApiServer::release_watch_events() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->events_held = false;
  }
  impl_->changed.notify_all();
}

std::size_t FakeApiServer::open_watch_count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->watches.size();
}

bool FakeApiServer::wait_for_open_watches(std::size_t count,
                                          std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] { return impl_->watches.size() >= count; });
}

// --- Connections -------------------------------------------------------------------------

void FakeApiServer::drop_all_connections() {
  {
    std::lock_guard lifecycle(impl_->lifecycle_mutex);
    if (impl_->plain_http != nullptr) impl_->plain_http->abort_all_connections();
  }
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& session : impl_->watches) session->drop_requested = true;
  }
  impl_->changed.notify_all();
}

std::size_t FakeApiServer::open_connection_count() const {
  std::lock_guard lifecycle(impl_->lifecycle_mutex);
  return impl_->plain_http != nullptr ? impl_->plain_http->open_connections() : 0;
}

// --- History -----------------------------------------------------------------------------

void FakeApiServer::compact(std::uint64_t rv) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->store.compact(rv);
  }
  impl_->changed.notify_all();
}

void FakeApiServer::compact_to_current() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->store.compact(impl_->store.current_rv());
  }
  impl_->changed.notify_all();
}

std::string FakeApiServer::compacted_resource_version() const {
  std::lock_guard lock(impl_->mutex);
  return std::to_string(impl_->store.compacted_rv());
}

std::size_t FakeApiServer::expire_watches() {
  std::size_t open = 0;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->store.compact(impl_->store.skip_rv());
    open = impl_->watches.size();
  }
  impl_->changed.notify_all();
  return open;
}

void FakeApiServer::expire_continue_tokens() {
  std::lock_guard lock(impl_->mutex);
  ++impl_->continue_generation;
}

// --- Faults ------------------------------------------------------------------------------

void FakeApiServer::inject_fault(RequestFault fault, int count) {
  if (count <= 0) return;
  std::lock_guard lock(impl_->mutex);
  impl_->faults.push_back({std::move(fault), count});
}

void FakeApiServer::fail_next(Verb verb, int count, int status,
                              std::optional<int> retry_after_seconds) {
  RequestFault fault;
  fault.verb = verb;
  fault.status = status;
  fault.retry_after_seconds = retry_after_seconds;
  inject_fault(std::move(fault), count);
}

void FakeApiServer::clear_faults() {
  std::lock_guard lock(impl_->mutex);
  impl_->faults.clear();
}

// --- Request log -------------------------------------------------------------------------

namespace {
bool record_matches(const RequestRecord& record, Verb verb, std::optional<Resource> resource) {
  return record.verb == verb && (!resource || record.resource == resource);
}
}  // namespace

std::size_t FakeApiServer::request_count(Verb verb, std::optional<Resource> resource) const {
  std::lock_guard lock(impl_->mutex);
  return static_cast<std::size_t>(std::count_if(
      impl_->log.begin(), impl_->log.end(),
      [&](const RequestRecord& record) { return record_matches(record, verb, resource); }));
}

std::vector<RequestRecord> FakeApiServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->log;
}

void FakeApiServer::clear_request_log() {
  std::lock_guard lock(impl_->mutex);
  impl_->log.clear();
}

bool FakeApiServer::wait_for_request_count(Verb verb, std::optional<Resource> resource,
                                           std::size_t count,
                                           std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] {
    return static_cast<std::size_t>(std::count_if(impl_->log.begin(), impl_->log.end(),
                                                  [&](const RequestRecord& record) {
                                                    return record_matches(record, verb, resource);
                                                  })) >= count;
  });
}

// --- Object builders ---------------------------------------------------------------------

json make_pod(std::string_view ns, std::string_view name, std::string_view node_name,
              std::string_view phase) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}},
              {"status", {{"phase", phase}}}};
  if (!node_name.empty()) pod["spec"]["nodeName"] = node_name;
  return pod;
}

json make_node(std::string_view name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"spec", json::object()},
          {"status", {{"capacity", json::object()}, {"allocatable", json::object()}}}};
}

json make_configmap(std::string_view ns, std::string_view name,
                    const std::map<std::string, std::string>& data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", data}};
}

json make_lease(std::string_view ns, std::string_view name, std::string_view holder) {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec", json::object()}};
  if (!holder.empty()) {
    lease["spec"]["holderIdentity"] = holder;
    lease["spec"]["leaseDurationSeconds"] = 15;
  }
  return lease;
}

}  // namespace gpushare::testing
