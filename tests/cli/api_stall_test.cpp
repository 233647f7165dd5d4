// An API server that accepts connections and never answers: the extender says
// so within --api-stall-warning, naming the server and the request, and keeps saying so with
// back-off. The threshold is 300 ms here so the test takes about a second.

#include <fmt/format.h>

#include <fstream>

#include "cli/binaries.h"

namespace gpushare::testing::cli_test {
namespace {

using namespace std::chrono_literals;

std::size_t count_of(std::string_view text, std::string_view what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

// A kubeconfig for `server`, without credentials.
std::filesystem::path kubeconfig_for(const std::string& server, const TempDir& dir) {
  const auto path = dir.path() / "hung.kubeconfig";
  std::ofstream(path) << fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: hung\n  cluster:\n    server: "
      "{}\ncontexts:\n- name: hung\n"
      "  context:\n    cluster: hung\ncurrent-context: hung\n",
      server);
  return path;
}

TEST(ApiStall, AHungApiServerIsReportedWithBackOff) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  SilentListener hung;
  TempDir dir;
  const std::string server = fmt::format("http://127.0.0.1:{}", hung.port());
  const auto kubeconfig = kubeconfig_for(server, dir);
  Subprocess process({extender, "--kubeconfig", kubeconfig.string(), "--listen", "127.0.0.1:0",
                      "--api-stall-warning", "300ms"});
  const std::string first = fmt::format("API server {} has not answered list nodes for", server);
  // Warned at 0.3 s, 0.6 s, 1.2 s, ...: wait for the second warning about the same request.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (count_of(process.stderr_text(), first) < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  process.kill();
  process.wait_exit(10s);
  process.join_readers();
  const std::string log = process.stderr_text();
  EXPECT_GE(count_of(log, first), 2u) << log;
  EXPECT_NE(log.find("(connected, no response yet); still waiting"), std::string::npos) << log;
  // Each of the three reflectors' lists is named.
  for (const char* what : {"list nodes", "list pods", "list configmaps"}) {
    EXPECT_NE(log.find(fmt::format("has not answered {} for", what)), std::string::npos)
        << what << "\n"
        << log;
  }
  // Back-off: the warnings about one request are at least 300 ms, then 600 ms, ... apart (the
  // waits are printed to 0.1 s).
  std::vector<double> waited;
  for (auto at = log.find(first); at != std::string::npos; at = log.find(first, at + 1)) {
    waited.push_back(std::stod(log.substr(at + first.size())));
  }
  ASSERT_GE(waited.size(), 2u);
  EXPECT_GE(waited[0], 0.25);
  EXPECT_GE(waited[1] - waited[0], 0.25) << log;
  if (waited.size() >= 3) {
    EXPECT_GE(waited[2] - waited[1], 0.55) << log;
  }
}

TEST(ApiStall, ZeroTurnsTheWarningOff) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  SilentListener hung;
  TempDir dir;
  const auto kubeconfig = kubeconfig_for(fmt::format("http://127.0.0.1:{}", hung.port()), dir);
  Subprocess process({extender, "--kubeconfig", kubeconfig.string(), "--listen", "127.0.0.1:0",
                      "--api-stall-warning", "0"});
  // Give it the time a 300 ms threshold would have needed several times over.
  ASSERT_TRUE(process.wait_for_stdout([](std::string_view) { return false; }, 1500ms) == false);
  process.kill();
  process.wait_exit(10s);
  process.join_readers();
  EXPECT_EQ(process.stderr_text().find("has not answered"), std::string::npos)
      << process.stderr_text();
  EXPECT_NE(process.stderr_text().find("starting list/watch"), std::string::npos)
      << process.stderr_text();
}

}  // namespace
}  // namespace gpushare::testing::cli_test
