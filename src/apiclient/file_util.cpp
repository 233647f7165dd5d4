#include "file_util.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpushare::apiclient::detail {

std::optional<std::string> read_file(const std::filesystem::path& path, std::string* reason) {
  auto failed = [reason](int error) -> std::optional<std::string> {
    if (reason != nullptr) *reason = std::strerror(error);
    return std::nullopt;
  };
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed(errno != 0 ? errno : EIO);  // the stream's open(2) set errno
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    return failed(EISDIR);  // a stream "opens" those
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return failed(EIO);
  return std::move(content).str();
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::string resolve_path(std::string_view path, const std::filesystem::path& base_dir) {
  if (path.empty()) return {};
  std::filesystem::path p(path);
  if (p.is_absolute()) return p.string();
  return (base_dir / p).lexically_normal().string();
}

}  // namespace gpushare::apiclient::detail
