#include "gpushare/extender/logging.h"

#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace gpushare::extender {
namespace {

// %* : the log message as a JSON string body (escaped, without the surrounding quotes).
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string quoted =
        nlohmann::json(std::string(msg.payload.data(), msg.payload.size()))
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

}  // namespace

void configure_logging(std::string_view level, std::string_view format) {
  auto logger = std::make_shared<spdlog::logger>("gpushare",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
  }
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace gpushare::extender
