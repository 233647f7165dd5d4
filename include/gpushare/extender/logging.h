#pragma once
#include <string_view>

namespace gpushare::extender {

// Configures spdlog's default logger: level (debug, info, warn, error) and format (text, json).
// JSON lines carry ts, level and msg, with the message escaped.
void configure_logging(std::string_view level, std::string_view format);

}  // namespace gpushare::extender
