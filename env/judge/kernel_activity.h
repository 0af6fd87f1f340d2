#pragma once
// CUPTI activity records of the kernels a process runs (torch-free; links CUPTI). The GPU worker
// brackets the candidate's calls with begin()/end() to see every kernel they launched (name,
// start/end, stream, grid, block, registers, shared memory, device-side launch or not): the
// anti-cheat layer checks them (kernel_activity), profile() reports them.
//
// CUPTI's concurrent-kernel activity kind does not serialise kernels; it is enabled only while
// records are wanted, never during timing.
#include <cstdint>
#include <string>

#include <vector>
#include "configs/error.h"

#include <cuda.h>

namespace kforge {

struct KernelRecord {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t registers = 0, static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;
  bool device_launched = false;
  uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

class KernelActivity {
 public:
  // Starts collecting (records from earlier are dropped). Throws a runtime error with CUPTI's
  // message when CUPTI cannot be used here.
  static void begin();
  // Flushes, stops collecting and returns the records since begin(), in start order.
  static std::vector<KernelRecord> end();
  // CUPTI's id of a stream (as KernelRecord::stream_id reports it).
  static uint32_t stream_id(CUcontext ctx, CUstream stream);
};

// CUPTI activity collection that is always switched off again, however the calls end.
struct ActivityWindow {
  bool on = false;
  std::string unavailable;
  explicit ActivityWindow(bool want) {
    if (!want) return;
    try {
      KernelActivity::begin();
      on = true;
    } catch (const Error& e) {
      unavailable = e.what();
    }
  }
  std::vector<KernelRecord> finish() {
    if (!on) return {};
    on = false;
    return KernelActivity::end();
  }
  ~ActivityWindow() {
    if (on) {
      try {
        KernelActivity::end();
      } catch (...) {}
    }
  }
};

}  // namespace kforge
