#include "gpushare/logging/logging.h"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>

namespace gpushare::logging {
namespace {

// The escape for the character starting at text[i] and how many bytes it replaces; length 0
// when the character is kept as it is.
struct Escape {
  std::string text;
  std::size_t length = 0;
};

Escape escape_at(std::string_view text, std::size_t i) {
  const auto byte = static_cast<unsigned char>(text[i]);
  switch (byte) {
    case '\n':
      return {"\\n", 1};
    case '\r':
      return {"\\r", 1};
    case '\t':
      return {"\\t", 1};
    default:
      break;
  }
  if (byte < 0x20 || byte == 0x7f) return {fmt::format("\\x{:02x}", byte), 1};
  // C1 controls, UTF-8 encoded as C2 80..C2 9F (U+009B is a terminal's CSI).
  if (byte == 0xc2 && i + 1 < text.size()) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (next >= 0x80 && next <= 0x9f) return {fmt::format("\\u{:04x}", next), 2};
  }
  // U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR (E2 80 A8/A9): line breaks to some
  // viewers.
  if (byte == 0xe2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80) {
    const auto last = static_cast<unsigned char>(text[i + 2]);
    if (last == 0xa8 || last == 0xa9) return {last == 0xa8 ? "\\u2028" : "\\u2029", 3};
  }
  return {};
}

template <typename Append>
void escape_into(std::string_view text, Append&& append) {
  std::size_t kept_from = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // Fast path: printable ASCII and UTF-8 lead/continuation bytes that start nothing escaped.
    if (byte >= 0x20 && byte != 0x7f && byte != 0xc2 && byte != 0xe2) {
      ++i;
      continue;
    }
    const Escape escape = escape_at(text, i);
    if (escape.length == 0) {
      ++i;
      continue;
    }
    append(text.substr(kept_from, i - kept_from));
    append(std::string_view(escape.text));
    i += escape.length;
    kept_from = i;
  }
  append(text.substr(kept_from));
}

// %* (text format): the log message with control characters escaped.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    escape_into(
        std::string_view(msg.payload.data(), msg.payload.size()),
        [&](std::string_view part) { dest.append(part.data(), part.data() + part.size()); });
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

// %* (JSON format): the log message as a JSON string body (escaped, without the surrounding
// quotes).
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string quoted = nlohmann::json(std::string(msg.payload.data(), msg.payload.size()))
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

}  // namespace

std::string escape_control_characters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  escape_into(text, [&](std::string_view part) { out.append(part); });
  return out;
}

std::unique_ptr<spdlog::formatter> make_log_formatter(std::string_view format) {
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
    return formatter;
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %*");
  return formatter;
}

void configure_logging(std::string_view level, std::string_view format) {
  auto logger = std::make_shared<spdlog::logger>("gpushare",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(make_log_formatter(format));
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace gpushare::logging
