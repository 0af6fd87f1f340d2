#include "env/judge/timing.h"

#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/process/clock.h"

namespace kforge {

namespace {

// The relative standard error of the mean of `s`, stratified by `strata` when given: sqrt(sum over
// strata of n_h var_h) / N over the mean (the spread between strata is by design, not noise).
double stratified_rse(const std::vector<double>& s, const std::vector<int>& strata) {
  if (strata.empty()) return relative_standard_error(s);
  std::map<int, std::vector<double>> by;
  for (size_t i = 0; i < s.size(); ++i) by[strata[i]].push_back(s[i]);
  double n = static_cast<double>(s.size()), total = 0, var_sum = 0;
  for (const auto& [h, v] : by) {
    double m = 0;
    for (double x : v) m += x;
    total += m;
    m /= static_cast<double>(v.size());
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    if (v.size() > 1) var_sum += ss / static_cast<double>(v.size() - 1) * static_cast<double>(v.size());
  }
  const double mean = total / n;
  return mean > 0 ? std::sqrt(var_sum) / n / mean : 0.0;
}

// `all`: the samples of each function so far (one per round); `strata`: each round's stratum.
// Sets `stop` to why, when it says stop.
bool done(const std::vector<std::vector<double>>& all, const std::vector<int>& strata, const TimingConfig& c, Clock::time_point t0,
          const Decided& decided, std::string& stop) {
  int64_t n = static_cast<int64_t>(all.front().size());
  if (n >= c.max_reps) return (stop = "max_reps"), true;
  if (n < c.min_reps) return false;
  if (ms_since(t0) > c.budget_ms) return (stop = "budget"), true;
  if (decided) return decided(all) && ((stop = "decided"), true);
  for (const auto& s : all)
    if (stratified_rse(s, strata) >= c.target_rse) return false;
  return (stop = "rse"), true;
}

std::string method_text(const TimingConfig& c, const at::Device& device, double flush_bytes, int warmup, bool sequential) {
  std::ostringstream os;
  if (device.is_cuda()) {
    os << "cuda-events per call on the current stream; ";
    if (c.l2_flush)
      os << "L2 flushed (" << static_cast<int64_t>(flush_bytes / (1 << 20)) << " MiB written) and persisting L2 reset before each call; ";
    else
      os << "no L2 flush; ";
  } else {
    os << "steady_clock per call; ";
  }
  os << warmup << " warm-up calls (>= " << c.warmup_count << " and >= " << c.warmup_ms << " ms); median of n until ";
  if (sequential)
    os << "the sequential rule decided (n >= ";
  else
    os << "rse < " << c.target_rse * 100 << "% (n >= ";
  os << c.min_reps << ") or " << c.budget_ms << " ms or n = " << c.max_reps;
  return os.str();
}

}  // namespace

bool cuda_available() { return at::hasCUDA() && at::cuda::device_count() > 0; }

DeviceInfo device_info(const at::Device& device) {
  DeviceInfo info;
  info.torch_version = TORCH_VERSION;
  if (device.is_cpu()) {
    info.name = "cpu";
    return info;
  }
  KFORGE_CHECK(cuda_available(), runtime, "no CUDA device is available on this machine");
  cudaDeviceProp prop{};
  int index = device.has_index() ? device.index() : 0;
  cuda_check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  info.name = prop.name;
  info.l2_bytes = prop.l2CacheSize;
  info.sm_count = prop.multiProcessorCount;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  info.cuda_version = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  info.driver_version = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  return info;
}

L2Flush::L2Flush(const at::Device& device, double factor) : factor_(factor) {
  if (factor <= 0) return;
  const double bytes = factor * static_cast<double>(device_info(device).l2_bytes);
  buf_ = at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).device(device));
}

void L2Flush::operator()(int pattern, void* stream) const {
  if (!buf_.defined()) return;
  cuda_check(cudaMemsetAsync(buf_.data_ptr(), pattern & 0xff, buf_.numel(), static_cast<cudaStream_t>(stream)), "L2 flush",
             CudaBlame::kforge_unless_sticky);
  cuda_check(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache", CudaBlame::kforge_unless_sticky);
}

TimedRun time_function(const std::function<void()>& fn, const at::Device& device, const TimingConfig& c) {
  return time_interleaved({fn}, device, c).front();
}

std::vector<TimedRun> time_interleaved(const std::vector<std::function<void()>>& fns, const at::Device& device, const TimingConfig& c) {
  std::vector<TimedCall> calls;
  for (const auto& f : fns) calls.push_back({f, nullptr, nullptr});
  return time_interleaved(calls, device, c);
}

namespace {

// Every timed round's times (one per function) and its stratum.
struct RoundSamples {
  std::vector<std::vector<double>> samples;
  std::vector<int> strata;
  bool stratified = false;
  explicit RoundSamples(size_t k) : samples(k) {}
  void add(const std::vector<double>& ms, int stratum) {
    for (size_t j = 0; j < ms.size(); ++j) samples[j].push_back(ms[j]);
    if (stratified) strata.push_back(stratum);
  }
};

}  // namespace

std::vector<TimedRun> time_interleaved(const std::vector<TimedCall>& calls, const at::Device& device, const TimingConfig& c,
                                       const Decided& decided) {
  KFORGE_CHECK(!calls.empty(), internal, "time_interleaved needs at least one function");
  const size_t k = calls.size();
  // Runs call j's `before`; the round's stratum (asked of the first function).
  auto before = [&](size_t j) {
    if (calls[j].before) calls[j].before();
    return j == 0 && calls[0].stratum ? calls[0].stratum() : 0;
  };
  auto after = [&](size_t j) {
    if (calls[j].after) calls[j].after();
  };
  RoundSamples rs(k);
  rs.stratified = static_cast<bool>(calls[0].stratum);
  int warmup = 0;
  double flush_bytes = 0, warmup_ms = 0;
  std::string stop;
  auto t_warm = Clock::now();
  if (device.is_cpu()) {
    while (warmup < c.warmup_count || ms_since(t_warm) < c.warmup_ms) {
      for (size_t j = 0; j < k; ++j) {
        before(j);
        calls[j].call();
        after(j);
      }
      ++warmup;
    }
    warmup_ms = ms_since(t_warm);
    auto t0 = Clock::now();
    std::vector<double> ms(k);
    while (!done(rs.samples, rs.strata, c, t0, decided, stop)) {
      int stratum = 0;
      for (size_t j = 0; j < k; ++j) {
        int h = before(j);
        if (j == 0) stratum = h;
        auto t = Clock::now();
        calls[j].call();
        ms[j] = ms_since(t);
        after(j);
      }
      rs.add(ms, stratum);
    }
  } else {
    KFORGE_CHECK(cuda_available(), runtime, "no CUDA device is available on this machine");
    c10::cuda::CUDAGuard guard(device);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    const L2Flush flush(device, c.l2_flush ? c.l2_flush_factor : 0.0);
    flush_bytes = flush.bytes();
    auto flush_l2 = [&](int i) { flush(i, stream); };
    while (warmup < c.warmup_count || ms_since(t_warm) < c.warmup_ms) {
      for (size_t j = 0; j < k; ++j) {
        before(j);
        flush_l2(warmup);
        calls[j].call();
        after(j);
      }
      cuda_check(cudaStreamSynchronize(stream), "warm-up", CudaBlame::kforge_unless_sticky);
      ++warmup;
    }
    warmup_ms = ms_since(t_warm);
    // Events are recorded in batches; a batch is read after one synchronisation.
    constexpr int kBatch = 8;
    std::vector<cudaEvent_t> events(2 * kBatch * k, nullptr);
    auto destroy = [&] {
      for (auto e : events)
        if (e) cudaEventDestroy(e);
    };
    try {
      for (auto& e : events) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
      auto t0 = Clock::now();
      std::vector<int> stratum(kBatch);
      std::vector<double> ms(k);
      while (!done(rs.samples, rs.strata, c, t0, decided, stop)) {
        int batch = static_cast<int>(std::min<int64_t>(kBatch, c.max_reps - static_cast<int64_t>(rs.samples[0].size())));
        for (int i = 0; i < batch; ++i) {
          for (size_t j = 0; j < k; ++j) {
            int h = before(j);
            if (j == 0) stratum[i] = h;
            flush_l2(i);
            cuda_check(cudaEventRecord(events[2 * (i * k + j)], stream), "cudaEventRecord", CudaBlame::kforge_unless_sticky);
            calls[j].call();
            cuda_check(cudaEventRecord(events[2 * (i * k + j) + 1], stream), "cudaEventRecord", CudaBlame::kforge_unless_sticky);
            after(j);
          }
        }
        cuda_check(cudaStreamSynchronize(stream), "timed calls", CudaBlame::kforge_unless_sticky);
        for (int i = 0; i < batch; ++i) {
          for (size_t j = 0; j < k; ++j) {
            float e = 0;
            cuda_check(cudaEventElapsedTime(&e, events[2 * (i * k + j)], events[2 * (i * k + j) + 1]), "cudaEventElapsedTime",
                       CudaBlame::kforge_unless_sticky);
            ms[j] = e;
          }
          rs.add(ms, stratum[i]);
        }
      }
    } catch (...) {
      destroy();
      throw;
    }
    destroy();
  }
  std::vector<TimedRun> runs(k);
  for (size_t j = 0; j < k; ++j) {
    runs[j].samples_ms = rs.samples[j];
    runs[j].strata = rs.strata;
    runs[j].stats = TimingStats::from_samples(rs.samples[j]);
    runs[j].warmup_calls = warmup;
    runs[j].warmup_ms = warmup_ms;
    runs[j].l2_flush_bytes = flush_bytes;
    runs[j].stop = stop;
    runs[j].method = method_text(c, device, flush_bytes, warmup, static_cast<bool>(decided)) +
                     (k > 1 ? "; interleaved with " + std::to_string(k - 1) + " other function(s)" : "");
  }
  return runs;
}

}  // namespace kforge
