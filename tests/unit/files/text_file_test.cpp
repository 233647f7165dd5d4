// read_text_file: the whole file, whatever its size or bytes, and errors that name what was
// being read, its path and the operating system's reason.

#include "gpushare/files/text_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace gpushare::files {
namespace {

// A directory of its own under the system's temporary directory, removed with what it holds.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpushare-files-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The message of what `read` throws, or "" when it does not throw.
template <typename Read>
std::string failure_of(const Read& read) {
  try {
    read();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ReadTextFile, ReturnsEveryByteOfAFileLargerThanOneRead) {
  const TempDir dir;
  std::string text;
  for (int i = 0; text.size() < 200 * 1024; ++i) text += "line " + std::to_string(i) + "\n";
  text += std::string("nul \0 inside", 12);
  const auto file = dir.write("big.txt", text);
  EXPECT_EQ(read_text_file(file, "cluster file"), text);
}

TEST(ReadTextFile, AnEmptyFileIsAnEmptyString) {
  const TempDir dir;
  EXPECT_EQ(read_text_file(dir.write("empty.yaml", ""), "config file"), "");
}

TEST(ReadTextFile, AMissingFileNamesWhatWasReadItsPathAndTheReason) {
  const TempDir dir;
  const auto missing = dir.path() / "absent.yaml";
  EXPECT_EQ(failure_of([&] { read_text_file(missing, "cluster file"); }),
            "cannot read cluster file " + missing.string() + ": No such file or directory");
}

TEST(ReadTextFile, ADirectoryIsRefusedWithTheReason) {
  const TempDir dir;
  EXPECT_EQ(failure_of([&] { read_text_file(dir.path(), "config file"); }),
            "cannot read config file " + dir.path().string() + ": Is a directory");
}

}  // namespace
}  // namespace gpushare::files
