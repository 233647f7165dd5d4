#include "gpushare/files/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gpushare::files {
namespace {

// Closes the descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  auto failure = [&](int error) {
    return std::runtime_error(
        fmt::format("cannot read {} {}: {}", what, path.string(), std::strerror(error)));
  };
  // POSIX calls rather than a stream, whose failures carry no reason (and which "opens" a
  // directory without complaint).
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) throw failure(errno);
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t count = ::read(file.get(), buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) throw failure(errno);
    if (count == 0) return text;
    text.append(buffer, static_cast<std::size_t>(count));
  }
}

}  // namespace gpushare::files
