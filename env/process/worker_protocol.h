#pragma once
// The protocol between a caller and its worker processes (compile workers and GPU workers): one
// shared header for both sides. Each message is a msgpack map, framed on a pipe by a 4-byte
// little-endian length. Sizes are checked on receipt; a malformed frame is an error, never a crash.
//
// Requests carry "type"; replies carry "ok" and either their result or
// "error": {"kind": ..., "message": ...}. A reply with "fatal": true means the worker's state is
// lost (a sticky CUDA error) and it exits after replying; the caller restarts it.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

using Json = nlohmann::json;

constexpr uint32_t kMaxFrameBytes = 1u << 30;
// Nesting accepted in a frame: reports and plans nest a handful of levels; deeper is refused.
constexpr int kMaxMessageDepth = 64;

// Error kinds a worker reply may carry (with the supervisor's own timeout and worker_crashed).
namespace worker_error {
constexpr const char* compile_error = "compile_error";
constexpr const char* launch_error = "launch_error";
constexpr const char* runtime_error = "runtime_error";
constexpr const char* timeout = "timeout";
constexpr const char* worker_crashed = "worker_crashed";
constexpr const char* bad_request = "bad_request";
constexpr const char* internal = "internal_error";
}  // namespace worker_error

enum class ReadStatus { ok, timeout, closed };

// Throws an io error when the pipe is closed or broken.
void write_frame(int fd, const Json& message);
// Waits up to timeout_ms (< 0: forever) for one whole frame. Throws an io error for a malformed one.
ReadStatus read_frame(int fd, Json& out, int timeout_ms);

Json error_reply(const std::string& kind, const std::string& message, bool fatal = false);

// CLOCK_MONOTONIC in nanoseconds (std::chrono::steady_clock): one clock for a caller and its
// workers, so the start-up timestamps a worker puts in its hello ("startup") compare with the
// caller's own.
int64_t monotonic_ns();
// monotonic_ns() when this process's dynamic loading was done, read by a .preinit_array hook
// before any static initialiser ran (libtorch's are long); 0 when the hook did not run.
int64_t preinit_monotonic_ns();

}  // namespace kforge
