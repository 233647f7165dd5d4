#pragma once
#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace gpushare::logging {

// Configures spdlog's default logger: level (debug, info, warn, error) and format (text, json).
// JSON lines carry ts, level and msg, with the message escaped. Text lines escape the message
// with escape_control_characters, so that one log record is always one line.
void configure_logging(std::string_view level, std::string_view format);

// The formatter configure_logging installs for `format` ("text" or "json").
std::unique_ptr<spdlog::formatter> make_log_formatter(std::string_view format);

// Makes text from outside safe to log as part of one line: ASCII control characters become
// \n, \r, \t or \xNN, DEL \x7f, and the C1 controls (U+0080-U+009F) and Unicode line and
// paragraph separators (U+2028, U+2029) \u00NN / \u2028. Pod and node names, reasons and API
// errors come from outside; a newline in a PodName forged a whole log line in text format, and
// ESC sequences could rewrite a terminal. Everything else, invalid UTF-8 included, is kept.
// Applied to every text-format message by the logger, so no call site can forget it.
std::string escape_control_characters(std::string_view text);

}  // namespace gpushare::logging
