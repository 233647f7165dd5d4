#include "endpoint.h"

#include <fmt/format.h>

#include "curl_handles.h"

namespace gpushare::apiclient::detail {
namespace {

std::string url_part(CURLU* url, CURLUPart part, unsigned flags = 0) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, flags) != CURLUE_OK || value == nullptr) return {};
  std::string out(value);
  curl_free(value);
  return out;
}

std::string strip_trailing_slashes(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

Endpoint make_endpoint(const ClusterConfig& config) {
  ensure_curl_initialized();
  UrlHandle url(curl_url());
  if (!url) throw std::bad_alloc();
  if (curl_url_set(url.get(), CURLUPART_URL, config.server.c_str(), 0) != CURLUE_OK) {
    throw ConfigError(
        fmt::format("invalid API server URL \"{}\" ({})", config.server, config.source));
  }
  const std::string scheme = url_part(url.get(), CURLUPART_SCHEME);
  if (scheme != "https" && scheme != "http") {
    throw ConfigError(fmt::format("API server URL \"{}\" must be http or https", config.server));
  }
  const std::string host = url_part(url.get(), CURLUPART_HOST);  // IPv6 comes bracketed
  const std::string port = url_part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  const std::string path = strip_trailing_slashes(url_part(url.get(), CURLUPART_PATH));

  Endpoint endpoint;
  if (config.tls_server_name.empty()) {
    endpoint.base_url = fmt::format("{}://{}:{}{}", scheme, host, port, path);
    return endpoint;
  }
  const std::string& name = config.tls_server_name;
  endpoint.base_url = fmt::format("{}://{}:{}{}", scheme, name, port, path);
  endpoint.connect_to = fmt::format("{}:{}:{}:{}", name, port, host, port);
  endpoint.host_header = fmt::format("Host: {}:{}", host, port);
  return endpoint;
}

}  // namespace gpushare::apiclient::detail
