#pragma once
// Reading the files named on the command line (--config, --cluster-file), with errors that name
// the file and the operating system's reason.

#include <filesystem>
#include <string>
#include <string_view>

namespace gpushare::files {

// The whole file. Throws std::runtime_error "cannot read <what> <path>: <reason>" (e.g. "No such
// file or directory", "Permission denied", "Is a directory").
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

}  // namespace gpushare::files
