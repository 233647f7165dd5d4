#pragma once
// The Kubernetes API-server client: JSON requests over libcurl with TLS, bearer-token rotation,
// keep-alive connection reuse, retries with backoff, and streaming watches.
//
// Thread safety: one ApiClient is shared by every reflector and bind thread; all members are
// safe to call concurrently. Each call borrows a pooled connection for its duration.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "gpushare/apiclient/api_error.h"
#include "gpushare/apiclient/backoff.h"
#include "gpushare/apiclient/clock.h"
#include "gpushare/apiclient/cluster_config.h"
#include "gpushare/apiclient/http_method.h"
#include "gpushare/apiclient/list_decoder.h"
#include "gpushare/apiclient/query.h"
#include "gpushare/apiclient/result.h"
#include "gpushare/apiclient/token_source.h"
#include "gpushare/apiclient/watch_event.h"

namespace gpushare::apiclient {

using Json = nlohmann::json;

enum class PatchType { kStrategicMerge, kMerge, kJsonPatch };
std::string_view content_type_of(PatchType type);

// "gpushare/<version>".
std::string default_user_agent();

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds request_timeout{60000};  // whole exchange, for non-watch requests
  // A request (a watch included) that has had no response for this long is logged as a warning
  // naming the server and the request, then again with back-off (2x, 4x, ... at most every
  // 5 minutes) until it ends. 0: never.
  std::chrono::milliseconds stall_warning{30000};
  std::string user_agent = default_user_agent();
  RetryPolicy retry;
  std::size_t max_idle_connections = 8;       // pooled handles kept for keep-alive reuse
  std::size_t max_response_bytes = 1u << 30;  // guard against a runaway body
  std::chrono::milliseconds token_refresh_interval = TokenSource::kDefaultRefreshInterval;
  SteadyClock clock = real_steady_clock();
  Sleeper sleeper = real_sleeper();  // used for retry delays
  RandomSource random = default_random_source();
};

struct RequestOptions {
  Query query{};
  // Retries on connection errors, 429 and 5xx. Default: on for GET/PUT/PATCH/DELETE, off for
  // POST (a Binding POST that reached the server must not be sent twice unless asked for).
  std::optional<bool> retry{};
  std::optional<std::chrono::milliseconds> timeout{};  // overrides ClientOptions::request_timeout
  std::stop_token stop{};  // aborts the transfer and any retry wait promptly
};

struct Request {
  HttpMethod method = HttpMethod::kGet;
  std::string path;  // e.g. "/api/v1/nodes"; appended to the server URL
  std::string body;
  std::string content_type;  // of `body`; default application/json when a body is given
  RequestOptions options;
};

struct Response {
  int status = 0;
  std::string body;
  std::string content_type;
};

struct WatchOptions {
  // Cap on the whole stream. Default: the query's timeoutSeconds plus a minute (so a silently
  // dead connection is noticed), or no cap without timeoutSeconds.
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_event_bytes = 64u << 20;
};

// What a list response says besides its items.
struct ListPage {
  Json metadata = Json::object();  // resourceVersion, continue, remainingItemCount
  std::string resource_version;
  std::string continue_token;  // "" on the last page
  std::size_t items = 0;       // items handed to the callback
  std::size_t body_bytes = 0;  // decoded (after any Content-Encoding) body size
};

// Receives one list item as soon as it has been read, parsed by simdjson: the element is valid
// during the call only. An exception aborts the list: list() returns a decode error that names it.
using ListItemCallback = std::function<void(const json::Value& item)>;

// Called on the watching thread for each ADDED/MODIFIED/DELETED/BOOKMARK event. An exception
// ends the watch with WatchEnd::kHandlerError.
using WatchCallback = std::function<void(WatchEvent&& event)>;

// Monotonic counters, for metrics.
struct ClientCounters {
  std::uint64_t requests = 0;       // attempts sent (retries included, watches included)
  std::uint64_t retries = 0;        // attempts after the first because of a retryable error
  std::uint64_t token_reloads = 0;  // immediate token re-reads after a 401 that changed it
  std::uint64_t failures = 0;       // calls that returned an error
};

class ApiClient {
 public:
  // Throws ConfigError for an unusable config (unparsable server URL).
  explicit ApiClient(ClusterConfig config, ClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // One logical call: retries and the 401 token re-read happen inside. 2xx → Response;
  // anything else → ApiError.
  Result<Response> send(const Request& request);

  // Convenience wrappers that send/parse JSON. An empty 2xx body yields a null Json.
  Result<Json> get(std::string_view path, RequestOptions options = {});
  Result<Json> post(std::string_view path, const Json& body, RequestOptions options = {});
  Result<Json> put(std::string_view path, const Json& body, RequestOptions options = {});
  Result<Json> patch(std::string_view path, const Json& body, PatchType type,
                     RequestOptions options = {});
  Result<Json> remove(std::string_view path, RequestOptions options = {});  // DELETE

  // GETs a list and decodes the body while it arrives (ListDecoder): each item goes to `on_item`
  // as soon as it is complete; neither the whole body nor its JSON tree is ever held. Items
  // come before the body is known to be complete: stage them, and apply them only if list()
  // succeeds. Retried like get(), but never once an attempt has handed over an item.
  Result<ListPage> list(std::string_view path, const ListItemCallback& on_item,
                        RequestOptions options = {});

  // Streams `path?watch=1&<query>` and calls `on_event` for every event until the stream ends,
  // an ERROR event arrives, or `stop` is requested (noticed within milliseconds, even while the
  // stream is idle). Not retried: the caller (a reflector) owns that policy. A 401 is answered
  // once by re-reading the token file.
  WatchResult watch(std::string_view path, const Query& query, const WatchCallback& on_event,
                    std::stop_token stop, const WatchOptions& options = {});

  const ClusterConfig& config() const;
  ClientCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpushare::apiclient
