// Listening: a second extender on a port already served must fail to start, not share it.
// (httplib's default socket options set SO_REUSEPORT, under which both would listen and the
// kernel would split connections between them: a leftover follower would answer half the binds.)

#include <gtest/gtest.h>

#include <cerrno>

#include "contract/extender_fixture.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/http/listen_error.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

Json one_node() {
  return cluster_list({node_object("gpu-a", 2, 32)});
}

// An extender that has not bound yet, to try ports with.
class UnboundExtender {
 public:
  UnboundExtender()
      : standalone_(one_node(), kube::ResourceNames{}),
        store_(core::make_policy("binpack")),
        service_(store_, standalone_, metrics_, rejections_, service::ServiceConfig{}),
        server_(service_, store_, metrics_, rejections_, http::HttpServerOptions{}) {}
  int bind(int port) { return server_.bind("127.0.0.1", port); }

 private:
  standalone::StandaloneCluster standalone_;
  service::ModelStore store_;
  metrics::MetricRegistry metrics_;
  service::RejectionLog rejections_;
  service::SchedulingService service_;
  http::HttpServer server_;
};

TEST(Listen, ASecondServerOnABusyPortFailsToBind) {
  ExtenderUnderTest first(one_node());
  UnboundExtender second;
  EXPECT_EQ(second.bind(first.port()), -1);
  // The first one still answers.
  auto health = first.client().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(Listen, ABusyPortIsReportedWithTheReasonAndWhatToDo) {
  ExtenderUnderTest first(one_node());
  UnboundExtender second;
  LogCapture log;
  EXPECT_EQ(second.bind(first.port()), -1);
  const std::string text = log.text();
  EXPECT_NE(
      text.find(fmt::format("cannot listen on 127.0.0.1:{}: Address already in use", first.port())),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("is another gpushare-extender"), std::string::npos) << text;
  EXPECT_NE(text.find("--listen 127.0.0.1:PORT"), std::string::npos) << text;
}

TEST(Listen, EveryFailureNamesTheAddressAndTheReason) {
  EXPECT_EQ(http::listen_failure_message("127.0.0.1", 80, EACCES),
            "cannot listen on 127.0.0.1:80: Permission denied; ports below 1024 need root or "
            "CAP_NET_BIND_SERVICE: choose another port with --listen 127.0.0.1:PORT");
  EXPECT_NE(http::listen_failure_message("10.9.9.9", 39999, EADDRNOTAVAIL)
                .find("Cannot assign requested address; no network interface of this machine has "
                      "that address"),
            std::string::npos);
  EXPECT_NE(
      http::listen_failure_message("no-such-host.invalid", 39999, 0).find("cannot resolve host"),
      std::string::npos);
  EXPECT_EQ(http::listen_failure_message("::1", 1, EMFILE),
            "cannot listen on ::1:1: Too many open files");
}

TEST(Listen, APortIsReusableRightAfterAServerStops) {
  int port = -1;
  {
    ExtenderUnderTest first(one_node());
    port = first.port();
    ASSERT_TRUE(first.client().Get("/healthz"));  // leaves a connection in TIME_WAIT
  }
  UnboundExtender again;
  EXPECT_EQ(again.bind(port), port);
}

}  // namespace
}  // namespace gpushare::testing
