// Text from outside (pod and node names, reasons, errors) cannot forge or hide log lines.

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "contract/extender_fixture.h"
#include "gpushare/logging/logging.h"

namespace gpushare::testing {
namespace {

TEST(LogEscaping, ControlCharactersAreEscaped) {
  using logging::escape_control_characters;
  EXPECT_EQ(escape_control_characters("plain ns/pod-1 ✓"), "plain ns/pod-1 ✓");
  EXPECT_EQ(escape_control_characters("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(escape_control_characters(std::string("nul\0esc\x1b[2Jdel\x7f", 15)),
            "nul\\x00esc\\x1b[2Jdel\\x7f");
  EXPECT_EQ(escape_control_characters("csi\xc2\x9bm nel\xc2\x85"), "csi\\u009bm nel\\u0085");
  EXPECT_EQ(escape_control_characters("ls\xe2\x80\xa8ps\xe2\x80\xa9"), "ls\\u2028ps\\u2029");
  EXPECT_EQ(escape_control_characters("\xc2\xa9 \xe2\x80\x94"),
            "\xc2\xa9 \xe2\x80\x94");  // © and — stay
  EXPECT_EQ(escape_control_characters("trailing\xc2"), "trailing\xc2");
  EXPECT_EQ(escape_control_characters(""), "");
}

// Captures what the default logger writes, in the given format, for the test's duration.
class CapturedLog {
 public:
  explicit CapturedLog(std::string_view format) : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_formatter(logging::make_log_formatter(format));
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::vector<std::string> lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> out;
    std::istringstream in(stream_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

constexpr const char* kForged =
    "2030-01-01T00:00:00.000 I bound pod default/forged to node n1 gpu 0";

// A PodName with a newline used to put a line of the attacker's choosing into the log.
TEST(LogInjection, ANewlineInAPodNameCannotForgeALogLine) {
  ExtenderUnderTest extender(cluster_list({node_object("n1", 2, 32)}));
  for (const std::string format : {"text", "json"}) {
    CapturedLog log(format);
    const std::string name = std::string("evil\n") + kForged;
    const auto [status, reply] = extender.post("bind", Json{{"PodName", name},
                                                            {"PodNamespace", "default\r\x1b[2K"},
                                                            {"PodUID", "u"},
                                                            {"Node", "n1\n"}});
    EXPECT_NE(status, 200) << reply.dump();
    const std::vector<std::string> lines = log.lines();
    ASSERT_FALSE(lines.empty()) << format;
    bool mentioned = false;
    for (const std::string& line : lines) {
      EXPECT_NE(line.rfind("2030-01-01", 0), 0u) << format << ": forged line: " << line;
      EXPECT_EQ(line.find('\r'), std::string::npos) << format << ": " << line;
      EXPECT_EQ(line.find('\x1b'), std::string::npos) << format << ": " << line;
      mentioned = mentioned || line.find("evil\\n2030-01-01") != std::string::npos;
    }
    EXPECT_TRUE(mentioned) << format << ": the escaped name is still logged";
  }
}

}  // namespace
}  // namespace gpushare::testing
