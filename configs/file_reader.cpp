#include "configs/file_reader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kforge {

namespace {

constexpr int64_t kUnbounded = -1;

// What went wrong, for the caller to word (read_file) or to swallow (try_read_file).
struct Failure {
  enum { none, cannot_open, is_directory, cannot_read, too_large } what = none;
  int error_number = 0;
  int64_t size = 0;
};

// Reads the file into `out`; returns what failed, if anything. The descriptor is closed on every path.
Failure read_whole(const std::string& path, int64_t max_bytes, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {Failure::cannot_open, errno, 0};
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {Failure::cannot_read, errno, 0};
  if (S_ISDIR(st.st_mode)) return {Failure::is_directory, 0, 0};
  if (max_bytes != kUnbounded && st.st_size > max_bytes) return {Failure::too_large, 0, st.st_size};
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return {Failure::cannot_read, errno, 0};
    if (n == 0) return {};
    out.append(buf, static_cast<size_t>(n));
    // A pipe has no size to check beforehand, and a file may grow: never much past the bound in memory.
    if (max_bytes != kUnbounded && static_cast<int64_t>(out.size()) > max_bytes)
      return {Failure::too_large, 0, static_cast<int64_t>(out.size())};
  }
}

// A relative path that cannot be opened is easier to fix knowing where it was looked for.
std::string full_path_note(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::absolute(path, ec).lexically_normal();
  return ec || full.string() == path ? "" : "; the full path tried: " + full.string();
}

std::string read_or_throw(const std::string& path, std::string_view what, int64_t max_bytes, ErrorKind too_large_kind) {
  std::string out;
  const Failure f = read_whole(path, max_bytes, out);
  const std::string head = path + ": ";
  switch (f.what) {
    case Failure::none:
      return out;
    case Failure::cannot_open:
      throw FileError(path, head + "cannot open " + std::string(what) + " (" + std::strerror(f.error_number) + ")" + full_path_note(path));
    case Failure::is_directory:
      throw FileError(path, head + "cannot read " + std::string(what) + ": it is a directory");
    case Failure::cannot_read:
      throw FileError(path, head + "cannot read " + std::string(what) + " (" + std::strerror(f.error_number) + ")");
    case Failure::too_large:
      throw_error(too_large_kind, head + std::to_string(f.size) + " bytes, over the limit of " + std::to_string(max_bytes));
  }
  return out;
}

}  // namespace

std::string read_file(const std::string& path, std::string_view what) { return read_or_throw(path, what, kUnbounded, ErrorKind::io); }

std::string read_file(const std::string& path, std::string_view what, const FileSizeLimit& limit) {
  return read_or_throw(path, what, limit.max_bytes, limit.kind);
}

std::optional<std::string> try_read_file(const std::string& path) {
  std::string out;
  if (read_whole(path, kUnbounded, out).what != Failure::none) return std::nullopt;
  return out;
}

}  // namespace kforge
