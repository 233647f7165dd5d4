#pragma once
// The server URL split for libcurl, including the tls-server-name rewrite (internal).

#include <string>

#include "gpushare/apiclient/cluster_config.h"

namespace gpushare::apiclient::detail {

struct Endpoint {
  // Prefix for request URLs, without a trailing '/': scheme://host:port/optional/prefix.
  std::string base_url;
  // With tls-server-name: the URL carries that name (so SNI and certificate verification use
  // it) and CURLOPT_CONNECT_TO sends the connection to the real address. Empty otherwise.
  std::string connect_to;
  std::string host_header;  // "Host: <real host:port>" when the URL host was rewritten
};

// Throws ConfigError if the server URL cannot be parsed or is not http(s).
Endpoint make_endpoint(const ClusterConfig& config);

}  // namespace gpushare::apiclient::detail
