#pragma once
// Warnings about an API server that accepted a request but does not answer it (internal).
//
// A hung API server (or a proxy in front of one) keeps the connection open and says nothing;
// without these a list or bind waits out its whole time-out, and its retries, in silence. While a
// transfer has no response yet, the first warning comes after ClientOptions::stall_warning (T),
// the next ones T, 2T, 4T, ... after the one before (at most 5 minutes apart), each naming the
// server, the request and how long it has waited; a late answer is logged too.

#include <chrono>
#include <string>
#include <string_view>

#include "curl_handles.h"
#include "gpushare/apiclient/clock.h"
#include "gpushare/apiclient/http_method.h"
#include "gpushare/apiclient/query.h"

namespace gpushare::apiclient {

// "list pods", "watch nodes", "bind pod default/web-0", "update lease kube-system/gpushare", ...
std::string describe_request(HttpMethod method, std::string_view path, const Query& query);

class StallWarning {
 public:
  // `threshold` 0 disables the warnings.
  StallWarning(std::chrono::milliseconds threshold, std::string server, std::string what,
               SteadyClock clock);
  // Called by the transfer loop; `easy` tells whether a response has started and whether the
  // connection is up.
  void check(CURL* easy);
  // After the transfer: if it was warned about, says whether an answer came in the end.
  void finish(CURL* easy);
  // How often check() must run to keep to the threshold.
  std::chrono::milliseconds check_interval() const;

 private:
  const std::chrono::milliseconds threshold_;
  const std::string server_;
  const std::string what_;
  const SteadyClock clock_;
  const SteadyTime start_;
  std::chrono::milliseconds next_warning_;  // since start_
  std::chrono::milliseconds interval_;      // to the warning after the next
  int warnings_ = 0;
};

}  // namespace gpushare::apiclient
