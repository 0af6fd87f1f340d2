#pragma once
// Which code launched each kernel (issue 28: the extension kind is sealed by what runs, not by what
// its source says). While a window is open, CUPTI calls back on every CUDA runtime and driver API
// call. A call made while the candidate's host code runs (a CandidateScope on the harness thread) is
// attributed by its stack: the innermost frame outside CUPTI, the driver and the CUDA runtime names
// the shared object that made it, so `torch::mm` inside a binding is ATen's (and cuBLAS's) launch,
// not the candidate's, however the C++ reads. A call from any other thread is other_thread; one
// from the harness thread outside the scope is the harness's. A kernel's CUPTI activity record
// (kernel_activity.h) carries the correlation id of the API call that launched it.
//
// Torch-free; links CUPTI. One subscriber per process: the GPU worker's.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/judge/kernel_activity.h"

namespace kforge {

enum class LaunchOrigin {
  harness,        // the harness thread, outside the candidate's host code
  candidate,      // code of a library registered with add_candidate_object
  aten,           // libtorch / libc10 (ATen's kernels)
  cublas,         // libcublas, libcublasLt
  cudnn,          // libcudnn*
  other_library,  // any other shared object (cuFFT, NCCL, a library loaded at run time, ...)
  other_thread,   // a thread other than the harness's
  unknown,        // the stack did not reach code outside CUPTI, the driver and the runtime
};
const char* launch_origin_name(LaunchOrigin o);

// The origin of a call whose innermost frame outside CUPTI/driver/runtime lies in the shared object
// `path` (as the dynamic loader names it); is_candidate when it is a candidate's library, is_self
// when it is the harness's own executable. Pure, for tests.
LaunchOrigin origin_of_object(const std::string& path, bool is_candidate, bool is_self);
// Whether frames in `path` are skipped on the way to the launching code (CUPTI, the driver, the
// CUDA runtime, the C library).
bool is_cuda_plumbing(const std::string& path);

struct LaunchRecord {
  uint32_t correlation_id = 0;
  LaunchOrigin origin = LaunchOrigin::harness;
  std::string object;  // the launching shared object's file name (empty for the harness)
  std::string api;     // the API call (cuLaunchKernel, cudaLaunchKernel, ...)
};

class LaunchOrigins {
 public:
  // Opens a window: every API call from now on is recorded (records from earlier are dropped). The
  // calling thread is the harness's. Throws a runtime error with CUPTI's message where CUPTI cannot
  // subscribe (another subscriber, no CUPTI).
  static void begin();
  // Closes the window and returns its records.
  static std::vector<LaunchRecord> end();
  // A library whose code is the candidate's: `address` is any address inside it.
  static void add_candidate_object(const void* address);
};

// A window that is always closed again, however the calls end (as ActivityWindow).
struct OriginWindow {
  bool on = false;
  std::string unavailable;
  explicit OriginWindow(bool want);
  std::vector<LaunchRecord> finish();
  ~OriginWindow();
};

// The library_kernels check (anticheat/dynamic_checks.h) over one window: every kernel that ran,
// joined by correlation id to the API call that launched it. The harness's own are left out; the
// candidate's pass; ATen's, cuBLAS's and cuDNN's pass where `allowed` names them ("aten",
// "cublas", "cudnn"); any other origin, and a kernel whose launch was not seen, fails. The
// evidence counts kernels by origin and names them (a few per origin) with the launching objects.
struct OriginVerdict {
  bool ok = true;
  nlohmann::json evidence;
};
OriginVerdict judge_kernel_origins(const std::vector<KernelRecord>& kernels, const std::vector<LaunchRecord>& launches,
                                   const std::vector<std::string>& allowed);

// While alive on the harness thread, the API calls of that thread are the candidate's host code's,
// attributed by their stacks.
class CandidateScope {
 public:
  CandidateScope();
  ~CandidateScope();
  CandidateScope(const CandidateScope&) = delete;
  CandidateScope& operator=(const CandidateScope&) = delete;
};

// The number of threads of this process (/proc/self/task); -1 where it cannot be read.
int process_thread_count();

}  // namespace kforge
