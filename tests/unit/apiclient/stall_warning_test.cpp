// Requests to an API server that accepts and never answers are reported while they wait
// (ClientOptions::stall_warning), naming the server and the request in the API's words.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpushare/apiclient/api_client.h"
#include "support/log_capture.h"
#include "support/silent_listener.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::LogCapture;
using testing::SilentListener;

struct Hung {
  SilentListener listener;
  std::string server = fmt::format("http://127.0.0.1:{}", listener.port());
  ApiClient client = [this] {
    ClusterConfig config;
    config.server = server;
    ClientOptions options;
    options.stall_warning = 100ms;
    options.request_timeout = 400ms;
    options.retry.max_attempts = 1;
    return ApiClient(config, options);
  }();
};

TEST(StallWarning, NamesTheServerAndTheRequest) {
  Hung hung;
  struct Case {
    std::function<void(ApiClient&)> call;
    std::string what;
  };
  const std::vector<Case> cases = {
      {[](ApiClient& c) {
         (void)c.get("/api/v1/pods", {.query = {{"limit", "500"}}});
       },
       "list pods"},
      {[](ApiClient& c) { (void)c.get("/api/v1/namespaces/ml/pods/train-0"); },
       "get pod ml/train-0"},
      {[](ApiClient& c) {
         (void)c.post("/api/v1/namespaces/ml/pods/train-0/binding", Json::object(),
                      {.retry = false});
       },
       "bind pod ml/train-0"},
      {[](ApiClient& c) {
         (void)c.put("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gpushare-extender",
                     Json::object());
       },
       "update lease kube-system/gpushare-extender"},
      {[](ApiClient& c) {
         (void)c.watch("/api/v1/nodes", {{"resourceVersion", "5"}}, [](WatchEvent&&) {}, {},
                       {.timeout = 400ms});
       },
       "watch nodes"},
  };
  for (const Case& c : cases) {
    LogCapture log;
    c.call(hung.client);
    const std::string text = log.text();
    EXPECT_NE(text.find(fmt::format("API server {} has not answered {} for", hung.server, c.what)),
              std::string::npos)
        << c.what << "\n"
        << text;
    EXPECT_NE(text.find("connected, no response yet"), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("API server {}: {} ended after", hung.server, c.what)),
              std::string::npos)
        << text;
  }
}

TEST(StallWarning, ZeroNeverWarns) {
  SilentListener listener;
  ClusterConfig config;
  config.server = fmt::format("http://127.0.0.1:{}", listener.port());
  ClientOptions options;
  options.stall_warning = 0ms;
  options.request_timeout = 300ms;
  options.retry.max_attempts = 1;
  ApiClient client(config, options);
  LogCapture log;
  EXPECT_FALSE(client.get("/api/v1/pods").ok());
  EXPECT_EQ(log.text().find("has not answered"), std::string::npos) << log.text();
}

}  // namespace
}  // namespace gpushare::apiclient
