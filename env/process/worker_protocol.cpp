#include "env/process/worker_protocol.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include "configs/bounded_json.h"
#include "configs/error.h"

namespace kforge {

namespace {

int64_t g_preinit_ns = 0;
void record_preinit(int, char**, char**) { g_preinit_ns = monotonic_ns(); }
// Runs in executables only, after the dynamic loader mapped and relocated every library and before
// their initialisers (an executable that links this file gets it; a shared library would not).
__attribute__((section(".preinit_array"), used)) void (*const kforge_preinit_hook)(int, char**, char**) = &record_preinit;

void write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      KFORGE_FAIL(io, "worker pipe write failed: " << std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads exactly n bytes before the deadline. Returns false on timeout; throws on EOF/errors.
bool read_all(int fd, uint8_t* p, size_t n, std::chrono::steady_clock::time_point deadline, bool forever, bool& closed) {
  while (n > 0) {
    int wait_ms = -1;
    if (!forever) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      wait_ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, wait_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      KFORGE_FAIL(io, "worker pipe poll failed: " << std::strerror(errno));
    }
    if (r == 0) return false;
    ssize_t got = ::read(fd, p, n);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      KFORGE_FAIL(io, "worker pipe read failed: " << std::strerror(errno));
    }
    if (got == 0) {
      closed = true;
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

void write_frame(int fd, const Json& message) {
  std::vector<uint8_t> body = Json::to_msgpack(message);
  KFORGE_CHECK(body.size() <= kMaxFrameBytes, io, "message of " << body.size() << " bytes exceeds the frame limit");
  uint32_t n = static_cast<uint32_t>(body.size());
  uint8_t head[4] = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 24)};
  write_all(fd, head, 4);
  write_all(fd, body.data(), body.size());
}

ReadStatus read_frame(int fd, Json& out, int timeout_ms) {
  bool forever = timeout_ms < 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(forever ? 0 : timeout_ms);
  bool closed = false;
  uint8_t head[4];
  if (!read_all(fd, head, 4, deadline, forever, closed)) return closed ? ReadStatus::closed : ReadStatus::timeout;
  uint32_t n = head[0] | (head[1] << 8) | (head[2] << 16) | (static_cast<uint32_t>(head[3]) << 24);
  KFORGE_CHECK(n <= kMaxFrameBytes, io, "frame of " << n << " bytes exceeds the limit of " << kMaxFrameBytes);
  std::vector<uint8_t> body(n);
  if (!read_all(fd, body.data(), n, deadline, forever, closed)) return closed ? ReadStatus::closed : ReadStatus::timeout;
  // Depth-bounded: the compile worker runs NVRTC on the policy's source, so its frames are decoded
  // like any untrusted peer's (configs/bounded_json.h), a deep one refused instead of recursed into.
  JsonLimits bounds;
  bounds.max_depth = kMaxMessageDepth;
  bounds.max_bytes = body.size();
  bounds.allow_binary = true;
  BoundedJson decoded = parse_msgpack_bounded(std::string_view(reinterpret_cast<const char*>(body.data()), body.size()), bounds);
  KFORGE_CHECK(decoded.ok(), io, "malformed worker message: " << decoded.error);
  out = std::move(decoded.value);
  KFORGE_CHECK(out.is_object(), io, "worker message is not a map");
  return ReadStatus::ok;
}

Json error_reply(const std::string& kind, const std::string& message, bool fatal) {
  Json j = {{"ok", false}, {"error", {{"kind", kind}, {"message", message}}}};
  if (fatal) j["fatal"] = true;
  return j;
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t preinit_monotonic_ns() { return g_preinit_ns; }

}  // namespace kforge
