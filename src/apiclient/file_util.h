#pragma once
// Small file helpers shared by the config loaders (internal).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpushare::apiclient::detail {

// The whole file, or nullopt if it cannot be opened or read; then `reason`, if given, gets the
// operating system's reason ("No such file or directory", "Is a directory", ...).
std::optional<std::string> read_file(const std::filesystem::path& path,
                                     std::string* reason = nullptr);

// `text` without leading and trailing ASCII whitespace.
std::string_view trim(std::string_view text);

// `path` if absolute, else `base_dir / path`; "" stays "".
std::string resolve_path(std::string_view path, const std::filesystem::path& base_dir);

}  // namespace gpushare::apiclient::detail
