// The fake API server binary's watch expiry (SIGUSR1, --expire-watches-every), which the relist
// benchmark (bench/sync/run.sh --relist) relies on: the extender's watches end with a 410 and it
// relists, at a newer resourceVersion, with the same objects.

#include <fmt/format.h>

#include <csignal>
#include <regex>

#include "cli/binaries.h"

namespace gpushare::testing::cli_test {
namespace {

using namespace std::chrono_literals;

// The resourceVersions of the extender's "pods listed: <count> at resourceVersion <rv>" lines.
std::vector<std::uint64_t> pod_lists(const std::string& log, int count) {
  std::vector<std::uint64_t> rvs;
  const std::regex line(fmt::format("pods listed: {} at resourceVersion ([0-9]+)", count));
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    rvs.push_back(std::stoull((*it)[1].str()));
  }
  return rvs;
}

// Starts the fake with `extra` arguments and the extender against it; waits for the first sync.
class Expiry : public ::testing::Test {
 protected:
  void start(const std::vector<std::string>& extra) {
    fake_binary_ = binary("gpushare-fake-apiserver");
    extender_binary_ = binary("gpushare-extender");
    if (fake_binary_.empty() || extender_binary_.empty()) GTEST_SKIP() << "programs not built";
    const std::string kubeconfig = (dir_.path() / "fake.kubeconfig").string();
    std::vector<std::string> argv = {fake_binary_, "--kubeconfig-out", kubeconfig, "--nodes",
                                     "2",          "--pods",           "6"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    fake_ = std::make_unique<Subprocess>(argv);
    ASSERT_TRUE(fake_->wait_for_stdout(
        [](std::string_view out) { return out.find("fake API server on") != out.npos; }, 30s))
        << fake_->stdout_text() << fake_->stderr_text();
    extender_ = std::make_unique<Subprocess>(std::vector<std::string>{
        extender_binary_, "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0"});
  }

  // Waits until the extender's log shows `lists` pod lists of all 6 pods.
  std::vector<std::uint64_t> wait_for_pod_lists(std::size_t lists) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (pod_lists(extender_->stderr_text(), 6).size() < lists &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    return pod_lists(extender_->stderr_text(), 6);
  }

  void TearDown() override {
    for (auto* process : {extender_.get(), fake_.get()}) {
      if (process == nullptr) continue;
      process->kill();
      process->wait_exit(10s);
      process->join_readers();
    }
  }

  TempDir dir_;
  std::string fake_binary_;
  std::string extender_binary_;
  std::unique_ptr<Subprocess> fake_;
  std::unique_ptr<Subprocess> extender_;
};

TEST_F(Expiry, SigUsr1EndsTheExtendersWatchesWith410AndItRelists) {
  start({});
  if (IsSkipped()) return;
  ASSERT_EQ(wait_for_pod_lists(1).size(), 1u) << extender_->stderr_text();
  // The extender opens its watches right after listing: expire until one has seen it.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (extender_->stderr_text().find("expired; relisting") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    fake_->signal(SIGUSR1);
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_NE(fake_->stdout_text().find("open watches end with 410"), std::string::npos)
      << fake_->stdout_text();
  const auto lists = wait_for_pod_lists(2);
  const std::string log = extender_->stderr_text();
  ASSERT_EQ(lists.size(), 2u) << log;
  EXPECT_GT(lists[1], lists[0]);  // the expiry moved the resourceVersion on
  EXPECT_NE(log.find(fmt::format("reflector pods: watch at resourceVersion {} expired; relisting",
                                 lists[0])),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(fmt::format("reflector pods: relisting from resourceVersion {}", lists[0])),
            std::string::npos)
      << log;
}

TEST_F(Expiry, ExpireWatchesEveryRepeatsIt) {
  start({"--expire-watches-every", "0.5"});
  if (IsSkipped()) return;
  // Each expiry after a sync makes the extender relist; its back-off (0.8 s, doubling) spaces them.
  const auto lists = wait_for_pod_lists(3);
  ASSERT_GE(lists.size(), 3u) << extender_->stderr_text() << fake_->stdout_text();
  EXPECT_LT(lists[0], lists[1]);
  EXPECT_LT(lists[1], lists[2]);
}

}  // namespace
}  // namespace gpushare::testing::cli_test
