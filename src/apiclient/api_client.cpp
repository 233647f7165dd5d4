#include "gpushare/apiclient/api_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

#include "api_client_impl.h"
#include "gpushare/version.h"
#include "stall_warning.h"

namespace gpushare::apiclient {
namespace {

bool header_name_is(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  return std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
}

std::string_view header_value(std::string_view line, std::size_t name_length) {
  std::string_view value = line.substr(name_length + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  return value;
}

std::size_t on_header_line(char* data, std::size_t size, std::size_t count, void* user) {
  auto* context = static_cast<TransferContext*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    // A new response (after a 100 Continue, say): forget the previous one's headers.
    context->retry_after.reset();
    context->content_type.clear();
    context->status = 0;
    if (const auto space = line.find(' '); space != std::string_view::npos) {
      const auto code = line.substr(space + 1);
      long status = 0;
      const auto [end, error] = std::from_chars(code.data(), code.data() + code.size(), status);
      if (error == std::errc()) context->status = status;
    }
  } else if (header_name_is(line, "retry-after")) {
    // Only the delta-seconds form: the API server never sends an HTTP date.
    const auto value = header_value(line, 11);
    long seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error == std::errc() && end == value.data() + value.size() && seconds >= 0) {
      context->retry_after = std::chrono::seconds(seconds);
    }
  } else if (header_name_is(line, "content-type")) {
    context->content_type = std::string(header_value(line, 12));
  }
  return size * count;
}

std::size_t on_body_bytes(char* data, std::size_t size, std::size_t count, void* user) {
  auto* context = static_cast<TransferContext*>(user);
  const std::size_t length = size * count;
  bool accepted = false;
  try {
    accepted = context->on_body(std::string_view(data, length));
  } catch (...) {
    accepted = false;  // never let an exception unwind through libcurl
  }
  if (!accepted) {
    context->body_rejected = true;
    return 0;  // any count other than `length` makes libcurl abort with CURLE_WRITE_ERROR
  }
  return length;
}

// Collects the first failing curl_easy_setopt, so configuration errors surface as one error.
struct OptionSetter {
  CURL* easy;
  CURLcode first_error = CURLE_OK;

  template <typename T>
  void operator()(CURLoption option, T value) {
    const CURLcode result = curl_easy_setopt(easy, option, value);
    if (result != CURLE_OK && first_error == CURLE_OK) first_error = result;
  }
};

}  // namespace

std::string_view content_type_of(PatchType type) {
  switch (type) {
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
  }
  return "application/strategic-merge-patch+json";
}

std::string default_user_agent() {
  return "gpushare/" + std::string(version());
}

TransportFailure classify_curl_error(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      return TransportFailure::kConnect;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportFailure::kDns;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return TransportFailure::kTls;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportFailure::kConnectionLost;
    default:
      return TransportFailure::kOther;
  }
}

ApiClient::Impl::Impl(ClusterConfig cluster, ClientOptions client_options)
    : config(std::move(cluster)),
      options(std::move(client_options)),
      endpoint(detail::make_endpoint(config)),
      tokens(config.bearer_token, config.token_file, options.clock, options.token_refresh_interval),
      pool(options.max_idle_connections) {}

std::string ApiClient::Impl::url_for(std::string_view path, const Query& query) const {
  std::string url = endpoint.base_url;
  if (!path.starts_with('/')) url.push_back('/');
  url.append(path);
  if (!query.empty()) {
    url.push_back('?');
    url += to_query_string(query);
  }
  return url;
}

void ApiClient::Impl::configure(CURL* easy, const AttemptSpec& spec, TransferContext& context,
                                detail::HeaderList& headers, detail::HeaderList& connect_to) const {
  curl_easy_reset(easy);  // keeps the connection cache, DNS cache and TLS sessions
  OptionSetter set{easy};
  set(CURLOPT_URL, spec.url.c_str());
  set(CURLOPT_NOSIGNAL, 1L);  // many threads: no SIGALRM-based DNS timeouts
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
  set(CURLOPT_TIMEOUT_MS, spec.timeout_ms);
  set(CURLOPT_USERAGENT, options.user_agent.c_str());
  if (spec.accept_compression) set(CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl decodes
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_ERRORBUFFER, context.error_buffer);
  set(CURLOPT_WRITEFUNCTION, &on_body_bytes);
  set(CURLOPT_WRITEDATA, static_cast<void*>(&context));
  set(CURLOPT_HEADERFUNCTION, &on_header_line);
  set(CURLOPT_HEADERDATA, static_cast<void*>(&context));

  headers.append("Accept: application/json");
  if (!spec.token.empty()) headers.append("Authorization: Bearer " + spec.token);
  if (spec.body != nullptr) {
    headers.append("Content-Type: " + (spec.content_type.empty() ? std::string("application/json")
                                                                 : spec.content_type));
  }
  headers.append("Expect:");  // no 100-continue round trip for large bodies
  if (!endpoint.host_header.empty()) headers.append(endpoint.host_header);
  set(CURLOPT_HTTPHEADER, headers.get());

  switch (spec.method) {
    case HttpMethod::kGet:
      set(CURLOPT_HTTPGET, 1L);
      break;
    case HttpMethod::kPost:
      set(CURLOPT_POST, 1L);
      break;
    default:
      set(CURLOPT_CUSTOMREQUEST, to_string(spec.method).data());
      break;
  }
  if (spec.body != nullptr) {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(spec.body->size()));
    set(CURLOPT_POSTFIELDS, spec.body->data());
  } else if (spec.method == HttpMethod::kPost) {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(0));
    set(CURLOPT_POSTFIELDS, "");
  }

  // TLS. A configured CA replaces the system trust store entirely, as in client-go.
  if (!config.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_COPY};
    set(CURLOPT_CAINFO_BLOB, &blob);
    set(CURLOPT_CAINFO, static_cast<const char*>(nullptr));
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  } else if (!config.ca_file.empty()) {
    set(CURLOPT_CAINFO, config.ca_file.c_str());
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!config.client_cert_pem.empty()) {
    curl_blob blob{const_cast<char*>(config.client_cert_pem.data()), config.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLCERT_BLOB, &blob);
    set(CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!config.client_cert_file.empty()) {
    set(CURLOPT_SSLCERT, config.client_cert_file.c_str());
    set(CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!config.client_key_pem.empty()) {
    curl_blob blob{const_cast<char*>(config.client_key_pem.data()), config.client_key_pem.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLKEY_BLOB, &blob);
    set(CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!config.client_key_file.empty()) {
    set(CURLOPT_SSLKEY, config.client_key_file.c_str());
    set(CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (config.insecure_skip_tls_verify) {
    set(CURLOPT_SSL_VERIFYPEER, 0L);
    set(CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!endpoint.connect_to.empty()) {
    connect_to.append(endpoint.connect_to);
    set(CURLOPT_CONNECT_TO, connect_to.get());
  }
  if (!config.proxy_url.empty()) set(CURLOPT_PROXY, config.proxy_url.c_str());

  if (set.first_error != CURLE_OK) {
    // Reported by the caller through the error buffer: the transfer will not be attempted.
    std::snprintf(context.error_buffer, CURL_ERROR_SIZE, "libcurl option rejected: %s",
                  curl_easy_strerror(set.first_error));
  }
}

detail::TransferOutcome ApiClient::Impl::run_watched(detail::TransferSlot& slot,
                                                     std::stop_token stop, std::string what) {
  StallWarning stall(options.stall_warning, config.server, std::move(what), options.clock);
  detail::TransferTicker ticker{stall.check_interval(),
                                [&stall](CURL* easy) { stall.check(easy); }};
  const auto outcome =
      detail::run_transfer(slot, stop, options.stall_warning.count() > 0 ? &ticker : nullptr);
  stall.finish(slot.easy.get());
  return outcome;
}

Result<Response> ApiClient::Impl::attempt(const Request& request, const std::string& token,
                                          ListDecoder* decoder) {
  auto lease = pool.acquire();
  TransferContext context;
  std::string body;
  bool too_large = false;
  bool undecodable = false;
  std::string callback_error;
  if (decoder != nullptr) decoder->reset();
  context.on_body = [&](std::string_view chunk) {
    if (decoder != nullptr && context.status >= 200 && context.status < 300) {
      try {
        undecodable = !decoder->feed(chunk);
      } catch (const std::exception& e) {
        callback_error = e.what();
        return false;
      } catch (...) {
        callback_error = "unknown exception";
        return false;
      }
      return !undecodable;
    }
    if (body.size() + chunk.size() > options.max_response_bytes) {
      too_large = true;
      return false;
    }
    body.append(chunk);
    return true;
  };

  AttemptSpec spec;
  spec.method = request.method;
  spec.url = url_for(request.path, request.options.query);
  if (!request.body.empty() || request.method == HttpMethod::kPut ||
      request.method == HttpMethod::kPatch) {
    spec.body = &request.body;
  }
  spec.content_type = request.content_type;
  spec.token = token;
  spec.timeout_ms =
      static_cast<long>(request.options.timeout.value_or(options.request_timeout).count());

  detail::HeaderList headers;
  detail::HeaderList connect_to;
  configure(lease->easy.get(), spec, context, headers, connect_to);
  if (context.error_buffer[0] != '\0') {
    return transport_error(TransportFailure::kOther, context.error_buffer);
  }
  if (decoder != nullptr) {
    // Bigger reads for a streamed list: fewer callbacks, fewer items split across reads.
    curl_easy_setopt(lease->easy.get(), CURLOPT_BUFFERSIZE, 512L * 1024L);
  }

  ++requests;
  const auto outcome =
      run_watched(*lease, request.options.stop,
                  describe_request(request.method, request.path, request.options.query));
  if (outcome.stopped) return stopped_error();
  if (!callback_error.empty()) {
    return decode_error(fmt::format("list item rejected by the handler: {}", callback_error));
  }
  if (undecodable) {
    return decode_error(
        fmt::format("{} {}: {}", to_string(request.method), request.path, decoder->error()));
  }
  if (too_large) {
    return decode_error(fmt::format("response to {} {} exceeds {} bytes", to_string(request.method),
                                    request.path, options.max_response_bytes));
  }
  if (!outcome.multi_error.empty()) {
    return transport_error(TransportFailure::kOther, "libcurl: " + outcome.multi_error);
  }
  if (outcome.code != CURLE_OK) {
    std::string message = context.error_buffer[0] != '\0' ? std::string(context.error_buffer)
                                                          : curl_easy_strerror(outcome.code);
    return transport_error(
        classify_curl_error(outcome.code),
        fmt::format("{} {}: {}", to_string(request.method), request.path, message));
  }
  const int status = static_cast<int>(outcome.http_status);
  if (status >= 200 && status < 300) {
    if (decoder != nullptr && !decoder->finish()) {
      return decode_error(
          fmt::format("{} {}: {}", to_string(request.method), request.path, decoder->error()));
    }
    return Response{status, std::move(body), std::move(context.content_type)};
  }
  return error_from_response(status, body, context.retry_after);
}

bool ApiClient::Impl::should_retry(const Request& request, const ApiError& error) const {
  if (!request.options.retry.value_or(request.method != HttpMethod::kPost)) return false;
  if (error.is_transport()) {
    switch (error.transport) {
      case TransportFailure::kConnect:
      case TransportFailure::kDns:
      case TransportFailure::kTimeout:
      case TransportFailure::kConnectionLost:
        return true;
      default:
        return false;  // TLS and configuration problems do not heal by retrying
    }
  }
  if (!error.is_status()) return false;
  return error.http_code == 429 ||
         (error.http_code >= 500 && error.http_code != 501 && error.http_code != 505);
}

Result<Response> ApiClient::Impl::send(const Request& request, ListDecoder* decoder) {
  bool token_reloaded = false;
  int retry_index = 0;
  for (;;) {
    const std::string token = tokens.current();
    auto result = attempt(request, token, decoder);
    if (result.ok()) return result;
    const ApiError& error = result.error();
    if (error.is_stopped()) return result;
    if (decoder != nullptr && decoder->item_count() > 0) {
      // Items already handed over cannot be taken back: the caller restarts the whole list.
      ++failures;
      return result;
    }

    if (error.is_unauthorized() && !token_reloaded && tokens.file_backed()) {
      // The token may have rotated since the last periodic read: re-read once, right away.
      token_reloaded = true;
      if (tokens.reload_now() != token) {
        ++token_reloads;
        continue;
      }
    }

    if (!should_retry(request, error) || retry_index + 1 >= options.retry.max_attempts) {
      ++failures;
      return result;
    }
    std::chrono::milliseconds delay;
    if (const auto asked = error.server_retry_delay()) {
      delay = std::min<std::chrono::milliseconds>(*asked, options.retry.max_server_delay);
    } else {
      delay = options.retry.jittered_delay(retry_index, options.random());
    }
    spdlog::debug("apiclient: {} {} failed ({}); retry {} in {} ms", to_string(request.method),
                  request.path, error.describe(), retry_index + 1, delay.count());
    if (!options.sleeper(delay, request.options.stop)) return stopped_error();
    ++retry_index;
    ++retries;
  }
}

ApiClient::ApiClient(ClusterConfig config, ClientOptions options) {
  detail::ensure_curl_initialized();
  impl_ = std::make_unique<Impl>(std::move(config), std::move(options));
}

ApiClient::~ApiClient() = default;

const ClusterConfig& ApiClient::config() const {
  return impl_->config;
}

ClientCounters ApiClient::counters() const {
  return ClientCounters{impl_->requests.load(), impl_->retries.load(), impl_->token_reloads.load(),
                        impl_->failures.load()};
}

Result<Response> ApiClient::send(const Request& request) {
  try {
    return impl_->send(request);
  } catch (const std::exception& e) {
    // Allocation failures and the like: reported as a value, never thrown across threads.
    ++impl_->failures;
    return transport_error(TransportFailure::kOther, e.what());
  }
}

namespace {

Result<Json> parse_json_response(Result<Response> response) {
  if (!response.ok()) return response.error();
  const std::string& body = response.value().body;
  if (body.empty()) return Json();
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return decode_error("response body is not valid JSON");
  return parsed;
}

}  // namespace

Result<Json> ApiClient::get(std::string_view path, RequestOptions options) {
  return parse_json_response(
      send(Request{HttpMethod::kGet, std::string(path), {}, {}, std::move(options)}));
}

Result<ListPage> ApiClient::list(std::string_view path, const ListItemCallback& on_item,
                                 RequestOptions options) {
  try {
    ListDecoder decoder(
        [&](const json::Value& item) { on_item(item); },
        std::min(impl_->options.max_response_bytes, ListDecoder::kDefaultMaxValueBytes));
    auto response = impl_->send(
        Request{HttpMethod::kGet, std::string(path), {}, {}, std::move(options)}, &decoder);
    if (!response.ok()) return response.error();
    ListPage page;
    page.resource_version = decoder.resource_version();
    page.continue_token = decoder.continue_token();
    page.items = decoder.item_count();
    page.body_bytes = decoder.bytes_read();
    page.metadata = decoder.metadata();
    return page;
  } catch (const std::exception& e) {
    ++impl_->failures;
    return transport_error(TransportFailure::kOther, e.what());
  }
}

Result<Json> ApiClient::post(std::string_view path, const Json& body, RequestOptions options) {
  return parse_json_response(send(Request{HttpMethod::kPost, std::string(path), body.dump(),
                                          "application/json", std::move(options)}));
}

Result<Json> ApiClient::put(std::string_view path, const Json& body, RequestOptions options) {
  return parse_json_response(send(Request{HttpMethod::kPut, std::string(path), body.dump(),
                                          "application/json", std::move(options)}));
}

Result<Json> ApiClient::patch(std::string_view path, const Json& body, PatchType type,
                              RequestOptions options) {
  return parse_json_response(send(Request{HttpMethod::kPatch, std::string(path), body.dump(),
                                          std::string(content_type_of(type)), std::move(options)}));
}

Result<Json> ApiClient::remove(std::string_view path, RequestOptions options) {
  return parse_json_response(
      send(Request{HttpMethod::kDelete, std::string(path), {}, {}, std::move(options)}));
}

WatchResult ApiClient::watch(std::string_view path, const Query& query,
                             const WatchCallback& on_event, std::stop_token stop,
                             const WatchOptions& options) {
  try {
    return impl_->watch(path, query, on_event, std::move(stop), options);
  } catch (const std::exception& e) {
    WatchResult result;
    result.end = WatchEnd::kTransportError;
    result.error = transport_error(TransportFailure::kOther, e.what());
    return result;
  }
}

}  // namespace gpushare::apiclient
