// ApiClient::watch: one streaming GET whose body is cut into events as it arrives.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "api_client_impl.h"
#include "gpushare/apiclient/watch_framer.h"
#include "stall_warning.h"

namespace gpushare::apiclient {
namespace {

constexpr std::size_t kMaxErrorBody = 64 * 1024;
// Margin over timeoutSeconds before we give up on a stream the server should have ended.
constexpr std::chrono::milliseconds kWatchTimeoutMargin{60000};

std::optional<std::chrono::milliseconds> server_timeout_of(const Query& query) {
  const std::string* value = find_query_value(query, "timeoutSeconds");
  if (value == nullptr) return std::nullopt;
  long seconds = 0;
  const auto [end, error] = std::from_chars(value->data(), value->data() + value->size(), seconds);
  if (error != std::errc() || end != value->data() + value->size() || seconds <= 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(seconds);
}

WatchResult ended(WatchEnd end, std::optional<ApiError> error, WatchResult result) {
  result.end = end;
  result.error = std::move(error);
  return result;
}

}  // namespace

WatchResult ApiClient::Impl::watch(std::string_view path, const Query& query,
                                   const WatchCallback& on_event, std::stop_token stop,
                                   const WatchOptions& watch_options) {
  Query full_query{{"watch", "1"}};
  for (const auto& entry : query) {
    if (entry.first != "watch") full_query.push_back(entry);
  }
  long timeout_ms = 0;
  if (watch_options.timeout) {
    timeout_ms = static_cast<long>(watch_options.timeout->count());
  } else if (const auto server_timeout = server_timeout_of(query)) {
    timeout_ms = static_cast<long>((*server_timeout + kWatchTimeoutMargin).count());
  }
  const std::string url = url_for(path, full_query);

  const std::string token = tokens.current();
  const std::string what = describe_request(HttpMethod::kGet, path, full_query);
  WatchResult result = watch_attempt(url, what, token, on_event, stop, watch_options, timeout_ms);
  if (result.end == WatchEnd::kHttpError && result.error && result.error->is_unauthorized() &&
      tokens.file_backed()) {
    if (const std::string reloaded = tokens.reload_now(); reloaded != token) {
      ++token_reloads;
      result = watch_attempt(url, what, reloaded, on_event, stop, watch_options, timeout_ms);
    }
  }
  if (result.end != WatchEnd::kClosed && result.end != WatchEnd::kStopped) ++failures;
  return result;
}

WatchResult ApiClient::Impl::watch_attempt(const std::string& url, std::string_view what,
                                           const std::string& token, const WatchCallback& on_event,
                                           std::stop_token stop, const WatchOptions& watch_options,
                                           long timeout_ms) {
  auto lease = pool.acquire();
  CURL* easy = lease->easy.get();
  TransferContext context;
  WatchResult result;
  WatchFramer framer(watch_options.max_event_bytes);
  json::Parser parser;  // the events' parser, reused from event to event
  std::vector<std::string> frames;
  std::string error_body;
  long status = 0;
  bool decided = false;  // the body handler chose how the watch ends

  auto decide = [&](WatchEnd end, ApiError error) {
    result.end = end;
    result.error = std::move(error);
    decided = true;
    return false;  // abort the transfer
  };

  context.on_body = [&](std::string_view chunk) -> bool {
    if (stop.stop_requested()) return false;
    if (status == 0) {
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      result.established = status == 200;
    }
    if (status != 200) {
      // A Status explaining the failure; keep enough of it to decode.
      error_body.append(
          chunk.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
      return true;
    }
    frames.clear();
    // Events framed before a bad byte are valid and are delivered before the error.
    std::optional<std::string> framing_error;
    try {
      framer.feed(chunk, frames);
    } catch (const FramingError& e) {
      framing_error = e.what();
    }
    for (auto& frame : frames) {
      WatchEvent event{};
      try {
        event = parse_watch_event(frame, parser);
      } catch (const std::exception& e) {
        return decide(WatchEnd::kDecodeError, decode_error(e.what()));
      }
      if (event.type == WatchEventType::kError) {
        return decide(WatchEnd::kErrorEvent, error_from_status_value(event.object));
      }
      try {
        on_event(std::move(event));
      } catch (const std::exception& e) {
        return decide(WatchEnd::kHandlerError,
                      decode_error(fmt::format("watch event handler failed: {}", e.what())));
      } catch (...) {
        return decide(WatchEnd::kHandlerError, decode_error("watch event handler failed"));
      }
      ++result.events;
    }
    if (framing_error) return decide(WatchEnd::kDecodeError, decode_error(*framing_error));
    return true;
  };

  AttemptSpec spec;
  spec.method = HttpMethod::kGet;
  spec.url = url;
  spec.token = token;
  spec.timeout_ms = timeout_ms;
  spec.accept_compression = false;
  detail::HeaderList headers;
  detail::HeaderList connect_to;
  configure(easy, spec, context, headers, connect_to);
  if (context.error_buffer[0] != '\0') {
    return ended(WatchEnd::kTransportError,
                 transport_error(TransportFailure::kOther, context.error_buffer), result);
  }

  ++requests;
  const auto outcome = run_watched(*lease, stop, std::string(what));
  if (decided) return result;
  if (outcome.stopped || stop.stop_requested()) return ended(WatchEnd::kStopped, {}, result);

  const long http_status = outcome.http_status != 0 ? outcome.http_status : status;
  result.established = http_status == 200;
  if (!outcome.multi_error.empty()) {
    return ended(WatchEnd::kTransportError,
                 transport_error(TransportFailure::kOther, "libcurl: " + outcome.multi_error),
                 result);
  }
  if (http_status != 0 && http_status != 200) {
    return ended(
        WatchEnd::kHttpError,
        error_from_response(static_cast<int>(http_status), error_body, context.retry_after),
        result);
  }
  if (outcome.code != CURLE_OK) {
    const std::string message = context.error_buffer[0] != '\0'
                                    ? std::string(context.error_buffer)
                                    : std::string(curl_easy_strerror(outcome.code));
    return ended(WatchEnd::kTransportError,
                 transport_error(classify_curl_error(outcome.code), "watch: " + message), result);
  }
  if (framer.mid_value()) {
    return ended(
        WatchEnd::kTransportError,
        transport_error(TransportFailure::kConnectionLost, "watch stream ended inside an event"),
        result);
  }
  return ended(WatchEnd::kClosed, {}, result);
}

}  // namespace gpushare::apiclient
