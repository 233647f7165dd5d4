#pragma once
// The build's version. Its one source is `project(gpushare VERSION ...)` in CMakeLists.txt,
// compiled into cmake/version.cpp.in; CHANGELOG.md's newest entry names the same version
// (tests/release/version_test.cpp checks every binary's --version against it).

#include <string>
#include <string_view>

namespace gpushare {

std::string_view version();     // "0.2.0"
std::string_view git_commit();  // the commit the build was configured at; empty outside git

// What every binary's --version prints: "gpushare 0.2.0 (1a2b3c4)".
std::string version_string();

}  // namespace gpushare
