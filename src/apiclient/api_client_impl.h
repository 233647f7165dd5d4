#pragma once
// ApiClient internals shared by the request and watch code (internal).

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "curl_handles.h"
#include "endpoint.h"
#include "gpushare/apiclient/api_client.h"

namespace gpushare::apiclient {

// Per-attempt state reached from libcurl's C callbacks.
struct TransferContext {
  // Receives body bytes; returning false aborts the transfer. Must not throw.
  std::function<bool(std::string_view)> on_body;
  std::optional<std::chrono::seconds> retry_after;
  std::string content_type;
  long status = 0;             // from the last status line seen, so the body callback knows it
  bool body_rejected = false;  // on_body returned false
  char error_buffer[CURL_ERROR_SIZE] = {};
};

struct AttemptSpec {
  HttpMethod method = HttpMethod::kGet;
  std::string url;
  const std::string* body = nullptr;  // nullptr: no body
  std::string content_type;
  std::string token;
  long timeout_ms = 0;  // 0: none
  // Lists compress well; a watch must not be compressed: an encoder on the way may hold events
  // back until its buffer fills.
  bool accept_compression = true;
};

struct ApiClient::Impl {
  Impl(ClusterConfig cluster, ClientOptions client_options);

  std::string url_for(std::string_view path, const Query& query) const;

  // Resets and configures `easy` for one attempt. `headers` must outlive the transfer.
  void configure(CURL* easy, const AttemptSpec& spec, TransferContext& context,
                 detail::HeaderList& headers, detail::HeaderList& connect_to) const;

  // With a `decoder`, a 2xx body is fed to it instead of being collected (Response::body stays
  // empty); error bodies are still collected.
  Result<Response> send(const Request& request, ListDecoder* decoder = nullptr);
  Result<Response> attempt(const Request& request, const std::string& token, ListDecoder* decoder);
  bool should_retry(const Request& request, const ApiError& error) const;

  WatchResult watch(std::string_view path, const Query& query, const WatchCallback& on_event,
                    std::stop_token stop, const WatchOptions& options);
  WatchResult watch_attempt(const std::string& url, std::string_view what, const std::string& token,
                            const WatchCallback& on_event, std::stop_token stop,
                            const WatchOptions& options, long timeout_ms);
  // Runs a configured transfer, warning while the server does not answer it (stall_warning.h).
  detail::TransferOutcome run_watched(detail::TransferSlot& slot, std::stop_token stop,
                                      std::string what);

  const ClusterConfig config;
  const ClientOptions options;
  const detail::Endpoint endpoint;
  TokenSource tokens;
  detail::SlotPool pool;

  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> token_reloads{0};
  std::atomic<std::uint64_t> failures{0};
};

// Maps a libcurl result to our transport classification.
TransportFailure classify_curl_error(CURLcode code);

}  // namespace gpushare::apiclient
