#include "env/judge/gpu_worker.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "data_synth/reference/reference.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/cuda/cuda_events.h"
#include "env/cuda/cuda_probe.h"
#include "env/judge/candidate_error.h"
#include "env/judge/gpu_judgement.h"
#include "env/judge/gpu_reply.h"
#include "env/judge/gpu_request.h"
#include "env/judge/gpu_worker_state.h"
#include "env/judge/timing.h"
#include "env/process/clock.h"
#include "env/process/worker_loop.h"

namespace kforge {

namespace {

// cuBLAS's TF32 setting, set for one measurement and restored exactly after it (also when it
// throws). setAllowTF32CuBLAS sets the legacy float32 matmul precision and the CUDA matmul fp32
// precision together; restoring the legacy one by name also sets the MKLDNN matmul precision, so
// all three are saved and put back. The worker runs with TF32 off (apply_reference_precision).
class CublasTf32Scope {
 public:
  explicit CublasTf32Scope(bool allow)
      : ctx_(at::globalContext()),
        legacy_(ctx_.float32MatmulPrecision()),
        cuda_(ctx_.float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL)),
        mkldnn_(ctx_.float32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL)) {
    ctx_.setAllowTF32CuBLAS(allow);
  }
  ~CublasTf32Scope() {
    ctx_.setFloat32MatmulPrecision(legacy_ == at::Float32MatmulPrecision::HIGHEST ? "highest"
                                   : legacy_ == at::Float32MatmulPrecision::HIGH  ? "high"
                                                                                  : "medium");
    ctx_.setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, cuda_);
    ctx_.setFloat32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL, mkldnn_);
  }
  CublasTf32Scope(const CublasTf32Scope&) = delete;
  CublasTf32Scope& operator=(const CublasTf32Scope&) = delete;

 private:
  at::Context& ctx_;
  const at::Float32MatmulPrecision legacy_;
  const at::Float32Precision cuda_, mkldnn_;
};

}  // namespace

CUstream GpuWorker::State::stream() const { return at::cuda::getCurrentCUDAStream(device).stream(); }

const TaskSpec& GpuWorker::State::task_for(const GpuEvalRequest& req) {
  const std::string key = task_key(req);
  auto it = tasks.find(key);
  if (it != tasks.end()) return it->second;
  if (tasks.size() > 64) {
    tasks.clear();
    conditions.clear();
  }
  TaskSpec t = parse_task(req.task_yaml, "request.task_yaml");
  if (req.extra_shape >= 0) t = t.at_extra_dims(static_cast<size_t>(req.extra_shape));
  return tasks.emplace(key, std::move(t)).first->second;
}

const TaskConditions& GpuWorker::State::conditions_for(const TaskSpec& task, const std::string& yaml, double margin) {
  std::string key = std::to_string(margin) + "\n" + yaml;
  auto it = conditions.find(key);
  if (it != conditions.end()) return it->second;
  // The float64 reference needs several times the task's memory: what earlier requests left in
  // the caching allocator goes back to the device first.
  c10::cuda::CUDACachingAllocator::emptyCache();
  TaskConditions c;
  {
    // One draw of the task's own distribution (a fresh secret trial), made again for each try of a
    // variant on it (the same bytes: no copy held across the float64 runs).
    const DrawKey key{task.seed, ids.next(), ids.next()};
    const PlainDraw draw = [&] { return draw_arguments_on_device(task, key, *drawer, dev, stream()); };
    c = condition_variants(task, draw, ids.next(), margin, 2, device_member(*drawer));
  }
  // The float64 temporaries go back too: the call bench's one large block comes next.
  c10::cuda::CUDACachingAllocator::emptyCache();
  if (!c.unavailable.empty()) {  // not kept: a later request may find the memory
    unmeasured = std::move(c);
    return unmeasured;
  }
  return conditions.emplace(key, std::move(c)).first->second;
}

void GpuWorker::State::flush_l2(double factor) {
  if (!l2_flush || l2_flush->factor() != factor) l2_flush = std::make_unique<L2Flush>(dev, factor);
  (*l2_flush)(0x5a, stream());
}

// The best of a few 1 GiB device-to-device copies, and of 8192^3 matmuls in float32 (TF32 off),
// float32 with TF32 allowed, and float16. Each float32 matmul sets cuBLAS's TF32 setting for itself
// and restores the worker's afterwards.
const DeviceCeilings& GpuWorker::State::ceilings() {
  if (ceilings_.valid()) return ceilings_;
  CUstream st = stream();
  CudaEvents ev(2);
  auto best_ms = [&](const std::function<void()>& fn, int reps) {
    fn();  // warm-up
    float best = 1e30f;
    for (int i = 0; i < reps; ++i) {
      ev.record(0, st);
      fn();
      ev.record(1, st);
      ev.synchronize(1);
      best = std::min(best, static_cast<float>(ev.ms(0, 1)));
    }
    return static_cast<double>(best);
  };
  {
    const int64_t bytes = int64_t{1} << 30;
    at::Tensor src = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(dev)).fill_(7);
    at::Tensor dst = at::empty_like(src);
    double ms = best_ms([&] { KFORGE_CUDA(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice, st)); }, 5);
    ceilings_.copy_gbps = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
  }
  const int64_t n = 8192;
  const double flops = 2.0 * n * n * n;
  struct Measure {
    at::ScalarType dtype;
    bool tf32;  // float32 only: TF32 allowed for this matmul
    double* tflops;
  };
  for (const Measure& m :
       {Measure{at::kFloat, false, &ceilings_.matmul_tflops_fp32}, Measure{at::kFloat, true, &ceilings_.matmul_tflops_tf32},
        Measure{at::kHalf, false, &ceilings_.matmul_tflops_fp16}}) {
    at::Tensor x = at::randn({n, n}, at::TensorOptions().dtype(m.dtype).device(dev));
    at::Tensor y = at::randn({n, n}, at::TensorOptions().dtype(m.dtype).device(dev));
    at::Tensor z = at::empty({n, n}, at::TensorOptions().dtype(m.dtype).device(dev));
    double ms = 0;
    {
      CublasTf32Scope tf32(m.tf32);
      ms = best_ms([&] { at::matmul_out(z, x, y); }, 3);
    }
    *m.tflops = flops / (ms * 1e-3) / 1e12;
  }
  c10::cuda::CUDACachingAllocator::emptyCache();
  return ceilings_;
}

GpuWorker::GpuWorker(int device) : s_(std::make_unique<State>()) {
  auto t0 = Clock::now();
  s_->device = device;
  s_->dev = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device));
  KFORGE_CHECK(cuda_available(), runtime, "no CUDA device is available");
  s_->arch = device_arch(device);
  // The harness kernels compile (NVRTC, CPU only) while the context is created.
  auto kernels = std::async(std::launch::async, [arch = s_->arch] {
    auto t = Clock::now();
    auto d = std::make_unique<DeviceDrawer>(arch);
    auto c = std::make_unique<DeviceChecker>(arch);
    return std::make_tuple(std::move(d), std::move(c), ms_since(t));
  });
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
  // Create the primary context through the runtime (as libtorch does), then use it from the driver API.
  at::empty({1}, at::TensorOptions().device(s_->dev));
  const double context_ms = ms_since(t0);
  KFORGE_CUDA(cuda_driver().CtxGetCurrent(&s_->ctx));
  apply_reference_precision();
  cudaDeviceProp prop{};
  KFORGE_CUDA(cudaGetDeviceProperties(&prop, device));
  int optin = 0;
  KFORGE_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  s_->max_optin_smem = optin;
  auto [drawer, checker, kernels_ms] = kernels.get();
  s_->drawer = std::move(drawer);
  s_->checker = std::move(checker);
  s_->start_ms = {{"cuda_context", context_ms}, {"harness_kernels_compile", kernels_ms}, {"total", ms_since(t0)}};
  DeviceInfo di = device_info(s_->dev);
  GpuDevice d;
  d.name = prop.name;
  d.arch = s_->arch;
  d.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_block_dim = {prop.maxThreadsDim[0], prop.maxThreadsDim[1], prop.maxThreadsDim[2]};
  d.max_grid_dim = {prop.maxGridSize[0], prop.maxGridSize[1], prop.maxGridSize[2]};
  d.max_dynamic_shared_bytes = optin;
  d.cuda = di.cuda_version;
  d.driver_api = di.driver_version;
  d.torch = di.torch_version;
  s_->info = to_json(d);  // the hello's device (gpu_reply.h): the evaluator reads it with parse_gpu_device
}

GpuWorker::~GpuWorker() = default;

Json GpuWorker::hello() const { return {{"ok", true}, {"mode", "gpu"}, {"device", s_->info}, {"start_ms", s_->start_ms}}; }

// The table of contents: parse the contract, then load, verify, time, profile.
Json GpuWorker::evaluate(const Json& request) {
  auto t_req = Clock::now();
  const GpuEvalRequest req = parse_gpu_eval_request(request);
  c10::cuda::CUDAGuard guard(s_->dev);
  const TaskSpec& task = s_->task_for(req);
  // The robustness conditions (once per task in a worker) before the call bench holds its buffers:
  // their float64 reference is the largest allocation a request makes.
  const auto t_cond = Clock::now();
  if (req.anticheat.robustness_draws) s_->conditions_for(task, task_key(req), req.anticheat.robustness_margin);
  Judgement j(*s_, req, task);
  j.phases()["robustness_conditioning_ms"] = ms_since(t_cond);
  try {
    j.load();
    j.verify();
    if (req.time && j.clean()) j.time();
    if (req.profile && j.clean()) j.profile();
  } catch (const CandidateError& e) {
    Json err = error_reply_after(j.reply(), e.kind, e.what(), e.fatal);
    j.phases()["worker_ms"] = ms_since(t_req);
    err["phases"] = j.phases();
    if (e.fatal || s_->extensions_full()) throw FatalWorkerError(err);
    return err;
  } catch (const c10::Error& e) {
    // libtorch failing after the candidate ran means the context may be gone.
    CUresult r = cuda_driver().CtxSynchronize();
    Json err = error_reply_after(
        j.reply(), is_sticky(r) ? worker_error::runtime_error : worker_error::internal,
        std::string("libtorch failed: ") + e.what_without_backtrace() + (is_sticky(r) ? " (after " + cuda_error_text(r) + ")" : ""),
        is_sticky(r));
    j.phases()["worker_ms"] = ms_since(t_req);
    err["phases"] = j.phases();
    if (is_sticky(r)) throw FatalWorkerError(err);
    return err;
  }
  j.phases()["worker_ms"] = ms_since(t_req);
  j.reply()["phases"] = j.phases();
  // A candidate's thread would run on into the next request, and loaded libraries are never
  // unloaded: either way the worker ends after this reply (the next request starts a fresh one).
  if (j.left_threads() || s_->extensions_full()) throw FatalWorkerError(j.reply());
  return j.reply();
}

}  // namespace kforge
