#pragma once
// Hardware counters of a candidate's kernels through CUPTI's range profiler (torch-free; links
// CUPTI): one range per kernel (auto ranges), user replay (`run` is called once per pass the
// metrics need), else kernel replay (CUPTI replays each kernel, saving and restoring the memory it
// touches: slower on large buffers). Each pass costs ~31 ms on the H200, and metrics take about one
// pass each (the SOL percentages more: results in tools/bench/RESULTS.md). Lent machines often
// keep performance counters to administrators (the driver's NVreg_RestrictProfilingToAdminUsers):
// every CUPTI failure comes back as `unavailable` with the step and CUPTI's message, never as an
// exception, so profile() reports what the machine allows.
#include <functional>
#include <string>
#include <vector>

#include <cuda.h>

namespace kforge {

struct CounterRange {
  std::string name;            // CUPTI's range name (the kernel's, in auto-range mode)
  std::vector<double> values;  // one per CounterReport::metrics entry
};

struct CounterReport {
  bool available = false;
  std::string unavailable;                               // why not, when !available
  std::vector<std::string> metrics;                      // the metrics collected
  std::vector<std::string> unsupported;                  // metrics this GPU or CUPTI refused
  size_t passes = 0;                                     // replay passes the metrics needed
  std::string replay;                                    // "user" (the call rerun once per pass) or "kernel (...why)"
  size_t runs = 0;                                       // calls of `run` it took
  bool setup_cached = false;                             // the host setup (metrics database, config image) was reused
  double setup_ms = 0, collect_ms = 0, evaluate_ms = 0;  // where the wall time went
  std::vector<CounterRange> ranges;                      // one per kernel launched by `run`
};

// The metrics profile() asks for (Hopper names): duration, DRAM bytes read and written, achieved
// occupancy, L2 hit rate (6 replay passes on the H200).
const std::vector<std::string>& default_counter_metrics();

// The replay passes `metrics` need together on `chip` (CUPTI's chip name: "GH100" for the H100
// and H200), from CUPTI's host API and the chip's metrics database alone: no GPU needed. Metrics
// the chip does not know are listed apart. Throws a runtime error naming the CUPTI step (or that
// none of the metrics is known).
struct CounterPasses {
  size_t passes = 0;
  std::vector<std::string> metrics, unsupported;
};
CounterPasses counter_passes(const std::string& chip, const std::vector<std::string>& metrics);

// Runs `run` (launches on the current context and synchronises; repeatable: it may be called once
// per pass) under the range profiler.
CounterReport collect_kernel_counters(CUcontext ctx, int device_index, const std::vector<std::string>& metrics,
                                      const std::function<void()>& run);

}  // namespace kforge
