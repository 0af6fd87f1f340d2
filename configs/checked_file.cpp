#include "configs/checked_file.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "configs/error.h"

namespace kforge {

namespace {

// Closes the descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string too_large(const std::string& what, const std::string& path, int64_t size, int64_t max_bytes) {
  return what + " " + path + " is " + std::to_string(size) + " bytes; at most " + std::to_string(max_bytes) + " are accepted";
}

}  // namespace

std::string read_untrusted_file(const std::string& path, int64_t max_bytes, const std::string& what) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) {
    int e = errno;
    if (e == ELOOP) KFORGE_FAIL(io, what << " " << path << " is a symbolic link; only regular files are read");
    KFORGE_FAIL(io, what << " " << path << ": cannot open: " << std::strerror(e));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) KFORGE_FAIL(io, what << " " << path << ": cannot stat: " << std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file";
    KFORGE_FAIL(io, what << " " << path << " is " << kind << "; only regular files are read");
  }
  if (st.st_size > max_bytes) throw Error(ErrorKind::io, too_large(what, path, st.st_size, max_bytes));
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) KFORGE_FAIL(io, what << " " << path << ": cannot read: " << std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    // The file may have grown since fstat: never more than max_bytes + one buffer in memory.
    if (static_cast<int64_t>(out.size()) > max_bytes)
      throw Error(ErrorKind::io, too_large(what, path, static_cast<int64_t>(out.size()), max_bytes));
  }
  return out;
}

}  // namespace kforge
