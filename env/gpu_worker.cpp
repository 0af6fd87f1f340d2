#include "env/gpu_worker.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "data_synth/reference.h"
#include "env/clock.h"
#include "env/cuda_driver.h"
#include "anticheat/dynamic_checks.h"
#include "env/check_kernel.h"
#include "env/draw_kernel.h"
#include "env/kernel_activity.h"
#include "env/kernel_counters.h"
#include "env/timing.h"
#include "env/worker_loop.h"
#include "reward/speedup.h"

namespace kforge {

namespace {

using Clock = std::chrono::steady_clock;

// Errors after which the context is unusable ("sticky"): the worker must exit.
bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

// A candidate failure with its typed kind; fatal when the context is lost.
struct CandidateError : std::runtime_error {
  std::string kind;
  bool fatal;
  CandidateError(std::string k, const std::string& msg, bool f) : std::runtime_error(msg), kind(std::move(k)), fatal(f) {}
};

[[noreturn]] void fail_cu(CUresult r, const std::string& what, const char* non_sticky_kind) {
  if (is_sticky(r)) throw CandidateError(worker_error::runtime_error, what + ": " + cu_error_text(r), true);
  throw CandidateError(non_sticky_kind, what + ": " + cu_error_text(r), false);
}

void check_harness_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  if (is_sticky(r)) throw CandidateError(worker_error::runtime_error, std::string(what) + ": " + cu_error_text(r), true);
  KFORGE_FAIL(runtime, what << ": " << cu_error_text(r));
}

// Bit patterns written into outputs before the candidate runs: NaN with a payload no arithmetic
// produces for floats, a sentinel for integers. An element still holding it was never written.
at::ScalarType bits_type(DType t) {
  switch (dtype_size(t)) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

at::Tensor as_bits(const at::Tensor& t, DType dtype) { return t.reshape({-1}).view(bits_type(dtype)); }

// The poison as the signed value a fill_ of the dtype's same-sized integer view takes.
int64_t poison_fill_value(DType dtype, uint64_t trial) {
  uint64_t bits = poison_bits_for_trial(dtype, trial);
  switch (dtype_size(dtype)) {
    case 1: return static_cast<int64_t>(static_cast<uint8_t>(bits));
    case 2: return static_cast<int64_t>(static_cast<int16_t>(bits));
    case 4: return static_cast<int64_t>(static_cast<int32_t>(bits));
    default: return static_cast<int64_t>(bits);
  }
}

void poison(at::Tensor& t, DType dtype, uint64_t trial) { as_bits(t, dtype).fill_(poison_fill_value(dtype, trial)); }

struct WireArg {
  enum Kind { argument, output, workspace, i32, u32, i64, u64, f32, f64 } kind;
  int index = 0;
  int64_t i = 0;
  double f = 0;
};
struct WireLaunch {
  std::string kernel, where;
  uint32_t grid[3], block[3], smem;
  std::vector<WireArg> args;
};
struct WireWorkspace {
  std::string name;
  DType dtype;
  int64_t elements;
  bool zero;
};
struct WirePlan {
  std::vector<WireWorkspace> workspace;
  std::vector<WireLaunch> launches;
};

WirePlan parse_plan(const Json& j, const TaskSpec& task, int64_t max_workspace_bytes) {
  WirePlan p;
  int64_t ws_bytes = 0;
  for (const auto& w : j.at("workspace")) {
    WireWorkspace ws{w.at("name").get<std::string>(), dtype_from_name(w.at("dtype").get<std::string>()),
                     w.at("elements").get<int64_t>(), w.at("zero").get<bool>()};
    KFORGE_CHECK(ws.elements >= 1, spec, "workspace " << ws.name << " has no elements");
    ws_bytes += ws.elements * static_cast<int64_t>(dtype_size(ws.dtype));
    p.workspace.push_back(ws);
  }
  if (ws_bytes > max_workspace_bytes)
    throw CandidateError(worker_error::launch_error,
                         "the workspace needs " + std::to_string(ws_bytes) + " bytes, over the limit of " +
                             std::to_string(max_workspace_bytes),
                         false);
  static const std::map<std::string, WireArg::Kind> kinds = {
      {"argument", WireArg::argument}, {"output", WireArg::output}, {"workspace", WireArg::workspace},
      {"i32", WireArg::i32}, {"u32", WireArg::u32}, {"i64", WireArg::i64}, {"u64", WireArg::u64},
      {"f32", WireArg::f32}, {"f64", WireArg::f64}};
  for (const auto& l : j.at("launches")) {
    WireLaunch wl;
    wl.kernel = l.at("kernel").get<std::string>();
    wl.where = l.value("where", "");
    for (int d = 0; d < 3; ++d) {
      wl.grid[d] = l.at("grid").at(d).get<uint32_t>();
      wl.block[d] = l.at("block").at(d).get<uint32_t>();
      KFORGE_CHECK(wl.grid[d] >= 1 && wl.block[d] >= 1, spec, "launch of " << wl.kernel << " has an empty grid or block");
    }
    wl.smem = l.at("shared_mem").get<uint32_t>();
    for (const auto& a : l.at("args")) {
      auto it = kinds.find(a.at("kind").get<std::string>());
      KFORGE_CHECK(it != kinds.end(), spec, "unknown argument kind " << a.at("kind"));
      WireArg w{it->second};
      size_t limit = 0;
      switch (w.kind) {
        case WireArg::argument: limit = task.arguments.size(); break;
        case WireArg::output: limit = task.outputs.size(); break;
        case WireArg::workspace: limit = p.workspace.size(); break;
        case WireArg::f32:
        case WireArg::f64: w.f = a.at("value").get<double>(); break;
        default: w.i = a.at("value").get<int64_t>(); break;
      }
      if (w.kind == WireArg::argument || w.kind == WireArg::output || w.kind == WireArg::workspace) {
        w.index = a.at("index").get<int>();
        KFORGE_CHECK(w.index >= 0 && static_cast<size_t>(w.index) < limit, spec, "buffer index " << w.index << " out of range");
      }
      wl.args.push_back(w);
    }
    p.launches.push_back(std::move(wl));
  }
  KFORGE_CHECK(!p.launches.empty(), spec, "the plan has no launches");
  return p;
}

// Three CUDA events for a trial's phases, released however the trial ends.
struct Events {
  cudaEvent_t e[6] = {};
  // Milliseconds between two recorded events (both complete).
  double ms(int a, int b) const {
    float v = 0;
    cudaEventElapsedTime(&v, e[a], e[b]);
    return v;
  }
  Events() {
    for (auto& x : e) cudaEventCreate(&x);
  }
  ~Events() {
    for (auto& x : e) cudaEventDestroy(x);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
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
      } catch (...) {
      }
    }
  }
};

// Device words for one trial's fused checks (zeroed), read back to the host with one copy.
struct CheckScratch {
  at::Tensor words, host;
  int64_t used = 0;
  CheckScratch(at::Device dev, int64_t n)
      : words(at::zeros({std::max<int64_t>(n, 1)}, at::TensorOptions().dtype(at::kLong).device(dev))) {}
  CUdeviceptr take(int64_t n) {
    KFORGE_CHECK(used + n <= words.numel(), internal, "check scratch too small");
    CUdeviceptr p = reinterpret_cast<CUdeviceptr>(words.data_ptr<int64_t>() + used);
    used += n;
    return p;
  }
  void read() { host = words.cpu(); }
  const uint64_t* host_words(CUdeviceptr slot) const {
    int64_t off = static_cast<int64_t>(slot - reinterpret_cast<CUdeviceptr>(words.data_ptr<int64_t>())) / 8;
    return reinterpret_cast<const uint64_t*>(host.data_ptr<int64_t>()) + off;
  }
};

Json stats_json(const TimingStats& s) {
  return {{"median_ms", s.median}, {"mean_ms", s.mean}, {"std_ms", s.std}, {"min_ms", s.min}, {"max_ms", s.max},
          {"p10_ms", s.p10}, {"p90_ms", s.p90}, {"n", s.n}, {"rse", s.rse}};
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

// Compares one candidate output with the reference's, in chunks so temporaries stay small.
// The slow path (libtorch, double precision, in chunks): the same rule as the fused kernel
// (check_kernel.h), plus a few mismatching elements with both values. Used when the fused
// compare found mismatches, or when the reference's output is not of the declared dtype.
Json compare_output(const std::string& name, const at::Tensor& cand, const at::Tensor& ref_in, DType dtype,
                    const Tolerance& tol, int max_examples, uint64_t trial) {
  const int64_t poison = poison_fill_value(dtype, trial);
  at::Tensor ref = ref_in.contiguous();
  const Shape shape(ref.sizes().begin(), ref.sizes().end());
  at::Tensor c_flat = cand.reshape({-1}), r_flat = ref.reshape({-1});
  at::Tensor c_bits = as_bits(cand, dtype);
  const int64_t n = c_flat.numel();
  constexpr int64_t kChunk = int64_t{1} << 25;
  int64_t mismatches = 0, unwritten = 0;
  double max_abs = 0, max_rel = 0;
  Json examples = Json::array();
  for (int64_t start = 0; start < n; start += kChunk) {
    int64_t len = std::min(kChunk, n - start);
    at::Tensor c = c_flat.narrow(0, start, len).to(at::kDouble);
    at::Tensor r = r_flat.narrow(0, start, len).to(at::kDouble);
    at::Tensor poisoned = c_bits.narrow(0, start, len).eq(poison);
    unwritten += poisoned.sum().item<int64_t>();
    at::Tensor both_finite = at::isfinite(c).logical_and(at::isfinite(r));
    at::Tensor err = (c - r).abs();
    at::Tensor over = err.gt(tol.atol + tol.rtol * r.abs());
    // Non-finite values must match exactly: the same infinity, or NaN where the reference has NaN.
    at::Tensor same_special = c.eq(r).logical_or(at::isnan(c).logical_and(at::isnan(r)));
    at::Tensor bad = at::where(both_finite, over, same_special.logical_not());
    if (dtype_is_float(dtype)) bad = bad.logical_or(poisoned);  // unwritten, even where the reference is NaN
    int64_t nbad = bad.sum().item<int64_t>();
    mismatches += nbad;
    at::Tensor fin_err = at::where(both_finite, err, at::zeros_like(err));
    max_abs = std::max(max_abs, fin_err.max().item<double>());
    at::Tensor rel = at::where(both_finite.logical_and(r.ne(0)), err / r.abs(), at::zeros_like(err));
    max_rel = std::max(max_rel, rel.max().item<double>());
    for (int64_t s = 0; nbad > 0 && s < len && static_cast<int>(examples.size()) < max_examples; s += 1 << 20) {
      int64_t sl = std::min<int64_t>(1 << 20, len - s);
      at::Tensor idx = bad.narrow(0, s, sl).nonzero().reshape({-1});
      for (int64_t k = 0; k < idx.numel() && static_cast<int>(examples.size()) < max_examples; ++k) {
        int64_t local = s + idx[k].item<int64_t>();
        int64_t flat = start + local;
        examples.push_back({{"index", unravel(flat, shape)},
                            {"candidate", c[local].item<double>()},
                            {"reference", r[local].item<double>()}});
      }
    }
  }
  // JSON cannot hold NaN: a report of a NaN value says "nan".
  for (auto& e : examples)
    for (const char* k : {"candidate", "reference"})
      if (std::isnan(e[k].get<double>())) e[k] = "nan";
  return {{"name", name},  {"numel", n},         {"mismatches", mismatches},  {"unwritten", unwritten},
          {"max_abs_error", max_abs}, {"max_rel_error", max_rel}, {"examples", examples}};
}

}  // namespace

struct GpuWorker::State {
  int device = 0;
  at::Device dev{at::kCUDA, 0};
  CUcontext ctx = nullptr;
  Json info;
  std::string arch;
  std::unique_ptr<DeviceDrawer> drawer;
  std::unique_ptr<DeviceChecker> checker;
  std::mt19937_64 keys{std::random_device{}()};  // fingerprint keys: the candidate never sees them
  std::map<std::string, CUmodule> modules;     // by cubin hash
  std::map<std::string, TaskSpec> tasks;       // by spec text
  int64_t max_optin_smem = 0;

  CUstream stream() const { return at::cuda::getCurrentCUDAStream(device).stream(); }

  const TaskSpec& task_for(const std::string& yaml) {
    auto it = tasks.find(yaml);
    if (it != tasks.end()) return it->second;
    if (tasks.size() > 64) tasks.clear();
    return tasks.emplace(yaml, parse_task(yaml, "request.task_yaml")).first->second;
  }

  // Enqueues the keyed fingerprint of a tensor's bytes into a new scratch word.
  CUdeviceptr fingerprint(const at::Tensor& t, uint64_t key, CheckScratch& scratch) {
    CUdeviceptr slot = scratch.take(DeviceChecker::kFingerprintWords);
    checker->fingerprint(reinterpret_cast<CUdeviceptr>(t.data_ptr()), t.numel() * static_cast<int64_t>(t.element_size()), key,
                         slot, stream());
    return slot;
  }

  // Draws a trial's values into existing argument buffers (same addresses, new values).
  void redraw_args(const TaskSpec& t, std::vector<at::Tensor>& args, uint64_t trial, uint64_t salt) {
    DrawKey key{t.seed, trial, salt};
    for (size_t i = 0; i < t.arguments.size() && i < args.size(); ++i)
      if (args[i].numel() > 0)
        drawer->fill(t.arguments[i].draw, t.arguments[i].decl.meta.dtype, draw_stream(key, i), args[i].numel(),
                     reinterpret_cast<CUdeviceptr>(args[i].data_ptr()), stream());
  }

  // The device's ceilings for the speed-of-light check, measured on first use: the best of a few
  // 1 GiB device-to-device copies, and of 8192^3 matmuls in float32 (TF32 off) and float16.
  DeviceCeilings ceilings_;
  const DeviceCeilings& ceilings() {
    if (ceilings_.valid()) return ceilings_;
    CUstream st = stream();
    cudaEvent_t a = nullptr, b = nullptr;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    auto best_ms = [&](const std::function<void()>& fn, int reps) {
      fn();  // warm-up
      float best = 1e30f;
      for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a, st);
        fn();
        cudaEventRecord(b, st);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        best = std::min(best, ms);
      }
      return static_cast<double>(best);
    };
    {
      const int64_t bytes = int64_t{1} << 30;
      at::Tensor src = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(dev)).fill_(7);
      at::Tensor dst = at::empty_like(src);
      double ms = best_ms([&] { cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice, st); }, 5);
      ceilings_.copy_gbps = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
    }
    const int64_t n = 8192;
    const double flops = 2.0 * n * n * n;
    for (auto dt : {at::kFloat, at::kHalf}) {
      at::Tensor x = at::randn({n, n}, at::TensorOptions().dtype(dt).device(dev));
      at::Tensor y = at::randn({n, n}, at::TensorOptions().dtype(dt).device(dev));
      at::Tensor z = at::empty({n, n}, at::TensorOptions().dtype(dt).device(dev));
      double ms = best_ms([&] { at::matmul_out(z, x, y); }, 3);
      (dt == at::kFloat ? ceilings_.matmul_tflops_fp32 : ceilings_.matmul_tflops_fp16) = flops / (ms * 1e-3) / 1e12;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    c10::cuda::CUDACachingAllocator::emptyCache();
    return ceilings_;
  }

  std::vector<at::Tensor> draw_args(const TaskSpec& t, uint64_t trial, uint64_t salt) {
    std::vector<at::Tensor> args;
    DrawKey key{t.seed, trial, salt};
    for (size_t i = 0; i < t.arguments.size(); ++i) {
      const TaskArgument& a = t.arguments[i];
      at::Tensor x = at::empty(a.decl.meta.shape, at::TensorOptions().dtype(to_scalar_type(a.decl.meta.dtype)).device(dev));
      if (x.numel() > 0)
        drawer->fill(a.draw, a.decl.meta.dtype, draw_stream(key, i), x.numel(),
                     reinterpret_cast<CUdeviceptr>(x.data_ptr()), stream());
      args.push_back(x);
    }
    return args;
  }
};

GpuWorker::GpuWorker(int device) : s_(std::make_unique<State>()) {
  s_->device = device;
  s_->dev = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device));
  KFORGE_CHECK(cuda_available(), runtime, "no CUDA device is available");
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
  // Create the primary context through the runtime (as libtorch does), then use it from the driver API.
  at::empty({1}, at::TensorOptions().device(s_->dev));
  check_harness_cu(cuda_driver().CtxGetCurrent(&s_->ctx), "cuCtxGetCurrent");
  apply_reference_precision();
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  int optin = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  s_->max_optin_smem = optin;
  // Hopper and Blackwell get their architecture-specific targets (wgmma, setmaxnreg need sm_90a).
  s_->arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ((prop.major == 9 || prop.major == 10) ? "a" : "");
  s_->drawer = std::make_unique<DeviceDrawer>(s_->arch);
  s_->checker = std::make_unique<DeviceChecker>(s_->arch);
  DeviceInfo di = device_info(s_->dev);
  s_->info = {{"name", prop.name},
              {"arch", s_->arch},
              {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
              {"sm_count", prop.multiProcessorCount},
              {"l2_bytes", prop.l2CacheSize},
              {"total_memory_bytes", prop.totalGlobalMem},
              {"max_threads_per_block", prop.maxThreadsPerBlock},
              {"max_block_dim", {prop.maxThreadsDim[0], prop.maxThreadsDim[1], prop.maxThreadsDim[2]}},
              {"max_grid_dim", {prop.maxGridSize[0], prop.maxGridSize[1], prop.maxGridSize[2]}},
              {"max_dynamic_shared_bytes", optin},
              {"cuda", di.cuda_version},
              {"driver_api", di.driver_version},
              {"torch", di.torch_version}};
}

GpuWorker::~GpuWorker() = default;

Json GpuWorker::hello() const { return {{"ok", true}, {"mode", "gpu"}, {"device", s_->info}}; }

Json GpuWorker::evaluate(const Json& req) {
  State& s = *s_;
  auto t_req = Clock::now();
  c10::cuda::CUDAGuard guard(s.dev);
  const TaskSpec& task = s.task_for(req.at("task_yaml").get<std::string>());
  Json reply = {{"ok", true}};
  Json phases = Json::object();
  try {
    // ---- load ----
    auto t_load = Clock::now();
    WirePlan plan = parse_plan(req.at("plan"), task, req.value("max_workspace_bytes", int64_t{16} << 30));
    std::string hash = req.at("cubin_hash").get<std::string>();
    CUmodule mod = nullptr;
    bool cached = s.modules.count(hash) > 0;
    if (cached) {
      mod = s.modules[hash];
    } else {
      const auto& bin = req.at("cubin").get_binary();
      CUresult r = cuda_driver().ModuleLoadData(&mod, bin.data());
      if (r != CUDA_SUCCESS) fail_cu(r, "loading the compiled module", worker_error::launch_error);
      if (s.modules.size() >= 256) {  // a long-running worker sees many candidates: drop the old modules
        for (auto& [h, m] : s.modules) cuda_driver().ModuleUnload(m);
        s.modules.clear();
      }
      s.modules[hash] = mod;
    }
    std::map<std::string, CUfunction> funcs;
    Json kernels = Json::array();
    for (const auto& l : plan.launches) {
      if (funcs.count(l.kernel)) continue;
      CUfunction f = nullptr;
      CUresult r = cuda_driver().ModuleGetFunction(&f, mod, l.kernel.c_str());
      if (r != CUDA_SUCCESS) throw CandidateError(worker_error::launch_error, l.where + ": kernel " + l.kernel + " is not in the compiled module", false);
      funcs[l.kernel] = f;
      auto attr = [&](CUfunction_attribute a) {
        int v = 0;
        cuda_driver().FuncGetAttribute(&v, a, f);
        return v;
      };
      kernels.push_back({{"name", l.kernel},
                         {"registers", attr(CU_FUNC_ATTRIBUTE_NUM_REGS)},
                         {"static_shared_bytes", attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)},
                         {"local_bytes", attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)},
                         {"const_bytes", attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)},
                         {"max_threads_per_block", attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)}});
    }
    reply["load"] = {{"kernels", kernels}, {"module_cached", cached}};
    // Launch-time limits, checked before anything runs so the error names the launch.
    for (const auto& l : plan.launches) {
      CUfunction f = funcs[l.kernel];
      int max_threads = 0, static_smem = 0;
      cuda_driver().FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
      cuda_driver().FuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
      int64_t threads = int64_t{l.block[0]} * l.block[1] * l.block[2];
      if (threads > max_threads)
        throw CandidateError(worker_error::launch_error,
                             l.where + ": " + l.kernel + " launched with " + std::to_string(threads) +
                                 " threads per block; it can take at most " + std::to_string(max_threads) +
                                 " (registers or __launch_bounds__)", false);
      if (static_cast<int64_t>(l.smem) + static_smem > s.max_optin_smem)
        throw CandidateError(worker_error::launch_error,
                             l.where + ": " + l.kernel + " asks for " + std::to_string(l.smem) + " bytes of dynamic shared memory (+" +
                                 std::to_string(static_smem) + " static); the GPU allows " + std::to_string(s.max_optin_smem) + " per block", false);
      if (l.smem > 48 * 1024) {
        CUresult r = cuda_driver().FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem));
        if (r != CUDA_SUCCESS) fail_cu(r, l.where + ": raising the shared memory limit of " + l.kernel, worker_error::launch_error);
      }
    }
    phases["load_ms"] = ms_since(t_load);

    std::vector<at::Tensor> args, outputs, workspace;
    // Launches the candidate's plan on the harness stream; the order of the list is the order of work.
    std::vector<std::vector<uint64_t>> slots;
    std::function<void()> run_candidate = [&] {
      CUstream st = s.stream();
      for (size_t w = 0; w < plan.workspace.size(); ++w)
        if (plan.workspace[w].zero)
          check_harness_cu(cuda_driver().MemsetD8Async(reinterpret_cast<CUdeviceptr>(workspace[w].data_ptr()), 0,
                                           workspace[w].numel() * workspace[w].element_size(), st), "zeroing workspace");
      for (const auto& l : plan.launches) {
        std::vector<uint64_t> values(l.args.size(), 0);
        std::vector<void*> params(l.args.size());
        for (size_t i = 0; i < l.args.size(); ++i) {
          const WireArg& a = l.args[i];
          void* slot = &values[i];
          switch (a.kind) {
            case WireArg::argument: values[i] = reinterpret_cast<uint64_t>(args[a.index].data_ptr()); break;
            case WireArg::output: values[i] = reinterpret_cast<uint64_t>(outputs[a.index].data_ptr()); break;
            case WireArg::workspace: values[i] = reinterpret_cast<uint64_t>(workspace[a.index].data_ptr()); break;
            case WireArg::i32: *static_cast<int32_t*>(slot) = static_cast<int32_t>(a.i); break;
            case WireArg::u32: *static_cast<uint32_t*>(slot) = static_cast<uint32_t>(a.i); break;
            case WireArg::i64: *static_cast<int64_t*>(slot) = a.i; break;
            case WireArg::u64: *static_cast<uint64_t*>(slot) = static_cast<uint64_t>(a.i); break;
            case WireArg::f32: *static_cast<float*>(slot) = static_cast<float>(a.f); break;
            case WireArg::f64: *static_cast<double*>(slot) = a.f; break;
          }
          params[i] = slot;
        }
        CUresult r = cuda_driver().LaunchKernel(funcs[l.kernel], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                                    l.smem, st, params.data(), nullptr);
        if (r != CUDA_SUCCESS) fail_cu(r, l.where + ": launching " + l.kernel, worker_error::launch_error);
      }
    };
    auto sync_candidate = [&](const char* when) {
      CUresult r = cuda_driver().StreamSynchronize(s.stream());
      if (r != CUDA_SUCCESS) fail_cu(r, std::string("the candidate failed while running (") + when + ")", worker_error::runtime_error);
    };
    auto alloc_outputs = [&](uint64_t trial) {
      // A new address every trial: the previous trial's buffers are still held while these are
      // made, and each starts at a different offset into its allocation.
      std::vector<at::Tensor> fresh;
      for (const auto& o : task.outputs) {
        int64_t pad = static_cast<int64_t>((trial * 7 + 1) % 13) * 256 / static_cast<int64_t>(dtype_size(o.meta.dtype));
        at::Tensor base = at::empty({numel(o.meta.shape) + pad}, at::TensorOptions().dtype(to_scalar_type(o.meta.dtype)).device(s.dev));
        at::Tensor t = base.narrow(0, pad, numel(o.meta.shape)).view(o.meta.shape);
        poison(t, o.meta.dtype, trial);
        fresh.push_back(t);
      }
      return fresh;
    };
    auto alloc_workspace = [&] {
      workspace.clear();
      for (const auto& w : plan.workspace) {
        at::Tensor t = at::empty({w.elements}, at::TensorOptions().dtype(to_scalar_type(w.dtype)).device(s.dev));
        as_bits(t, w.dtype).fill_(-1);  // undefined contents: all ones (NaN for floats)
        workspace.push_back(t);
      }
    };

    const Tolerance tol = task.tolerance;
    // Fused checks (check_kernel.h): compares of every output and fingerprints of every input,
    // enqueued on the harness stream into one device scratch that is read back with one copy.
    // (A reference output that is a strided view, e.g. a transpose, is made contiguous first: one
    // copy on the device, far cheaper than the slow path.)
    auto enqueue_compares = [&](CheckScratch& scratch, std::vector<at::Tensor>& ref, uint64_t trial) {
      std::vector<CUdeviceptr> slots(outputs.size(), 0);
      for (size_t o = 0; o < outputs.size() && o < ref.size(); ++o) {
        DType dt = task.outputs[o].meta.dtype;
        if (ref[o].scalar_type() != to_scalar_type(dt) || ref[o].numel() != outputs[o].numel() || !outputs[o].is_contiguous())
          continue;  // the slow path compares it
        if (!ref[o].is_contiguous()) ref[o] = ref[o].contiguous();
        slots[o] = scratch.take(DeviceChecker::kCompareWords);
        s.checker->compare(dt, reinterpret_cast<CUdeviceptr>(outputs[o].data_ptr()), reinterpret_cast<CUdeviceptr>(ref[o].data_ptr()),
                           outputs[o].numel(), tol.atol, tol.rtol, poison_bits_for_trial(dt, trial), slots[o], s.stream());
      }
      return slots;
    };
    // Per output: the fused result where it is clean, else the slow path with examples.
    auto read_compares = [&](const CheckScratch& scratch, const std::vector<CUdeviceptr>& slots, const std::vector<at::Tensor>& ref,
                             uint64_t trial, int examples) {
      Json outs = Json::array();
      for (size_t o = 0; o < outputs.size(); ++o) {
        const std::string& name = task.outputs[o].name;
        if (o >= ref.size()) {
          outs.push_back({{"name", name}, {"numel", outputs[o].numel()}, {"mismatches", outputs[o].numel()}, {"unwritten", 0},
                          {"max_abs_error", 0.0}, {"max_rel_error", 0.0}, {"examples", Json::array()}});
          continue;
        }
        if (slots[o]) {
          CompareStats st = CompareStats::from_words(scratch.host_words(slots[o]));
          if (st.mismatches == 0) {
            outs.push_back({{"name", name}, {"numel", outputs[o].numel()}, {"mismatches", 0}, {"unwritten", st.unwritten},
                            {"max_abs_error", st.max_abs}, {"max_rel_error", st.max_rel}, {"examples", Json::array()}});
            continue;
          }
        }
        outs.push_back(compare_output(name, outputs[o], ref[o], task.outputs[o].meta.dtype, tol, examples, trial));
      }
      return outs;
    };

    // ---- anti-cheat options (anticheat/dynamic_checks.h; absent: everything on) ----
    const Json ac = req.value("anticheat", Json::object());
    const bool state_checks = ac.value("state_checks", true);
    const bool verify_timed_calls = ac.value("verify_timed_calls", true);
    const bool scrub_reference = ac.value("scrub_reference", true);
    const bool sol_check = ac.value("speed_of_light", true);
    const bool activity_check = ac.value("kernel_activity", true);
    const bool precision_probe = ac.value("precision_probe", true);
    // The candidate module's kernels (all of them, not only those the plan names).
    std::set<std::string> module_kernels;
    for (const auto& k : req.value("kernel_names", Json::array())) module_kernels.insert(k.get<std::string>());
    for (const auto& l : plan.launches) module_kernels.insert(l.kernel);
    auto kernel_json = [&](const KernelRecord& k, CUfunction f) {
      int threads = k.block[0] * k.block[1] * k.block[2], blocks_per_sm = 0, max_threads_sm = 0;
      if (f) cuda_driver().OccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, f, threads, static_cast<size_t>(k.dynamic_shared_bytes));
      CUdevice d = 0;
      cuda_driver().CtxGetDevice(&d);
      cuda_driver().DeviceGetAttribute(&max_threads_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, d);
      double occ = max_threads_sm > 0 ? static_cast<double>(blocks_per_sm) * threads / max_threads_sm : 0.0;
      return Json{{"name", k.name}, {"duration_ns", k.duration_ns()}, {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                  {"block", {k.block[0], k.block[1], k.block[2]}}, {"registers", k.registers},
                  {"shared_bytes", k.static_shared_bytes + k.dynamic_shared_bytes}, {"static_shared_bytes", k.static_shared_bytes},
                  {"dynamic_shared_bytes", k.dynamic_shared_bytes}, {"local_bytes_per_thread", k.local_bytes_per_thread},
                  {"stream", k.stream_id}, {"device_launched", k.device_launched}, {"occupancy", std::min(1.0, occ)},
                  {"blocks_per_sm", blocks_per_sm}};
    };
    const double sol_headroom = ac.value("sol_headroom", 1.5);
    Json checks = Json::array();
    // The reference's outputs never outlive their comparison: overwritten with poison, then freed.
    auto scrub = [&](std::vector<at::Tensor>& ref) {
      c10::InferenceMode inference;  // the reference's outputs are inference tensors
      if (scrub_reference)
        for (auto& r : ref) {
          if (!r.defined() || r.numel() == 0) continue;
          if (r.is_floating_point()) r.fill_(std::numeric_limits<double>::quiet_NaN());
          else if (r.scalar_type() == at::kBool) r.fill_(true);
          else r.fill_(-1);
        }
      ref.clear();
    };

    // ---- verify ----
    // Trials: `trials` with fresh inputs at new addresses, then (state_checks) one with new values
    // at the last trial's addresses and one with the last values at new addresses, then (the
    // precision probe, for tasks with float32 inputs) one with those inputs over a wide range.
    const Json& vreq = req.at("verify");
    int trials = vreq.value("trials", 5);
    uint64_t first_trial = vreq.value("first_trial", uint64_t{0});
    uint64_t salt = vreq.value("salt", uint64_t{0});
    int max_examples = vreq.value("report_mismatches", 5);
    Json verify = {{"passed", true}, {"trials_run", 0}, {"failed_trial", nullptr}, {"reason", ""}};
    double cand_ms = 0, ref_ms = 0, harness_ms = 0;
    auto t_verify = Clock::now();
    std::vector<at::Tensor> previous_outputs, previous_args;
    Events ev;
    enum class TrialMode { fresh, same_addresses, new_addresses, precision_probe };
    struct TrialPlan {
      uint64_t trial;
      TrialMode mode;
    };
    std::vector<TrialPlan> plan_trials;
    for (int t = 0; t < trials; ++t) plan_trials.push_back({first_trial + static_cast<uint64_t>(t), TrialMode::fresh});
    if (state_checks && trials > 0) {
      plan_trials.push_back({first_trial + static_cast<uint64_t>(trials), TrialMode::same_addresses});
      plan_trials.push_back({first_trial + static_cast<uint64_t>(trials), TrialMode::new_addresses});
    }
    // The precision probe: float32 inputs drawn as usual, then each element scaled by 2^k, k uniform
    // in [-6, 6]: a dynamic range of 2^12 and the cancellations it brings, under the same tolerance.
    bool has_float32_input = false;
    for (const auto& a : task.arguments) has_float32_input |= a.decl.meta.dtype == DType::float32 && a.draw.dist != DrawDist::constant &&
                                                             a.draw.dist != DrawDist::randint;
    if (precision_probe && has_float32_input && trials > 0) {
      plan_trials.push_back({first_trial + static_cast<uint64_t>(trials) + 1, TrialMode::precision_probe});
    }
    ActivityWindow activity(activity_check);
    int64_t candidate_calls = 0;
    for (size_t t = 0; t < plan_trials.size(); ++t) {
      const uint64_t trial = plan_trials[t].trial;
      const TrialMode mode = plan_trials[t].mode;
      cudaEventRecord(ev.e[0], s.stream());
      if (mode == TrialMode::fresh || mode == TrialMode::precision_probe) {
        previous_args = args;  // held while the new ones are made: new addresses
        args = s.draw_args(task, trial, salt);
        previous_args.clear();
        if (mode == TrialMode::precision_probe) {
          at::Generator gen = at::cuda::detail::createCUDAGenerator(static_cast<c10::DeviceIndex>(s.device));
          gen.set_current_seed(trial * 0x9e3779b97f4a7c15ULL + task.seed);
          for (size_t i = 0; i < args.size(); ++i) {
            const TaskArgument& ta = task.arguments[i];
            if (ta.decl.meta.dtype != DType::float32 || ta.draw.dist == DrawDist::constant || ta.draw.dist == DrawDist::randint) continue;
            at::Tensor k = at::randint(-6, 7, args[i].sizes(), gen, args[i].options());
            args[i].mul_(at::exp2(k));
          }
        }
      } else if (mode == TrialMode::same_addresses) {
        s.redraw_args(task, args, trial, salt);
      } else {
        std::vector<at::Tensor> moved;
        for (const auto& a : args) moved.push_back(a.clone());
        previous_args = args;
        args = moved;
      }
      CheckScratch scratch(s.dev, static_cast<int64_t>(2 * args.size() + DeviceChecker::kCompareWords * task.outputs.size()));
      const uint64_t key = s.keys();
      std::vector<CUdeviceptr> before, after;
      for (const auto& a : args) before.push_back(s.fingerprint(a, key, scratch));
      if (mode == TrialMode::same_addresses) {
        for (size_t o = 0; o < outputs.size(); ++o) poison(outputs[o], task.outputs[o].meta.dtype, trial);
      } else {
        std::vector<at::Tensor> fresh = alloc_outputs(trial);
        previous_outputs = outputs;
        outputs = fresh;
      }
      alloc_workspace();
      cudaEventRecord(ev.e[1], s.stream());
      run_candidate();
      ++candidate_calls;
      cudaEventRecord(ev.e[2], s.stream());
      for (const auto& a : args) after.push_back(s.fingerprint(a, key, scratch));
      sync_candidate("verification");
      previous_outputs.clear();
      previous_args.clear();
      cudaEventRecord(ev.e[3], s.stream());
      std::vector<at::Tensor> ref = run_reference(task, args);
      cudaEventRecord(ev.e[4], s.stream());
      std::vector<CUdeviceptr> slots = enqueue_compares(scratch, ref, trial);
      cudaEventRecord(ev.e[5], s.stream());
      scratch.read();  // synchronises
      cand_ms += ev.ms(1, 2);
      ref_ms += ev.ms(3, 4);
      harness_ms += ev.ms(0, 1) + ev.ms(2, 3) + ev.ms(4, 5);
      Json outs = read_compares(scratch, slots, ref, trial, max_examples);
      scrub(ref);
      bool ok = true;
      std::string reason;
      for (const Json& c : outs) {
        if (c["mismatches"].get<int64_t>() > 0) {
          ok = false;
          if (reason.empty()) {
            int64_t unwritten = c["unwritten"].get<int64_t>();
            reason = "output " + c["name"].get<std::string>() + ": " + std::to_string(c["mismatches"].get<int64_t>()) + " of " +
                     std::to_string(c["numel"].get<int64_t>()) + " elements outside tolerance" +
                     (unwritten ? " (" + std::to_string(unwritten) + " never written)" : "");
          }
        }
      }
      Json modified = Json::array();
      for (size_t i = 0; i < args.size(); ++i)
        if (*scratch.host_words(before[i]) != *scratch.host_words(after[i])) modified.push_back(task.arguments[i].decl.name);
      if (!modified.empty()) {
        ok = false;
        if (reason.empty()) reason = "the candidate modified its input " + modified[0].get<std::string>();
      }
      if (mode != TrialMode::fresh) {
        // A state trial or the precision probe: the candidate passed every fresh trial; failing here
        // is answering from state, or computing below the task's precision.
        const char* name = mode == TrialMode::same_addresses   ? "state_same_addresses"
                           : mode == TrialMode::new_addresses  ? "state_new_addresses"
                                                               : "precision_probe";
        const char* what = mode == TrialMode::same_addresses
                               ? "with new input values at the addresses of the previous call, the outputs were wrong: results must not "
                                 "be kept or keyed across calls"
                           : mode == TrialMode::new_addresses
                               ? "with the same input values at new addresses, the outputs were wrong: results must not depend on "
                                 "where the buffers are or on calls seen before"
                               : "with float32 inputs spread over a wider range (each scaled by 2^-6 .. 2^6), the outputs left the "
                                 "task's tolerance: the candidate computes below the task's float32 precision";
        checks.push_back({{"name", name}, {"passed", ok}, {"message", ok ? "" : what},
                          {"evidence", {{"trial", trial}, {"reason", reason}, {"outputs", outs}}}});
        if (!ok) break;
        continue;
      }
      verify["outputs"] = outs;
      verify["inputs_modified"] = modified;
      verify["trials_run"] = static_cast<int>(t) + 1;
      if (!ok) {
        verify["passed"] = false;
        verify["failed_trial"] = t;
        verify["reason"] = reason;
        break;
      }
    }
    // Every kernel of the candidate's module that ran during verification: on the harness stream,
    // launched by the harness (not from the device), as many as the plan launches per call.
    if (activity_check) {
      if (activity.on) {
        sync_candidate("verification");
        std::vector<KernelRecord> recs = activity.finish();
        uint32_t harness_stream = KernelActivity::stream_id(s.ctx, s.stream());
        int64_t seen = 0, other_stream = 0, from_device = 0;
        std::map<std::string, int64_t> per_kernel;
        for (const auto& k : recs) {
          if (!module_kernels.count(k.name)) continue;
          ++seen;
          ++per_kernel[k.name];
          if (k.stream_id != harness_stream) ++other_stream;
          if (k.device_launched) ++from_device;
        }
        const int64_t expected = static_cast<int64_t>(plan.launches.size()) * candidate_calls;
        bool ok = seen == expected && other_stream == 0 && from_device == 0;
        checks.push_back({{"name", "kernel_activity"},
                          {"passed", ok},
                          {"message", ok ? "" : "the candidate's kernels ran other than as its launch plan says (other streams, launches from "
                                                "the device, or a different number of launches)"},
                          {"evidence", {{"candidate_calls", candidate_calls}, {"launches_expected", expected}, {"launches_seen", seen},
                                        {"per_kernel", per_kernel}, {"on_other_streams", other_stream},
                                        {"launched_from_device", from_device}, {"harness_stream", harness_stream},
                                        {"records_total", recs.size()}}}});
      } else {
        checks.push_back({{"name", "kernel_activity"}, {"passed", true}, {"message", ""},
                          {"evidence", {{"unavailable", activity.unavailable}}}});
      }
    }
    phases["verify_ms"] = ms_since(t_verify);
    phases["verify_candidate_gpu_ms"] = cand_ms;
    phases["verify_reference_gpu_ms"] = ref_ms;
    phases["verify_harness_gpu_ms"] = harness_ms;
    reply["verify"] = verify;
    reply["anticheat_checks"] = checks;
    bool state_ok = true;
    for (const auto& c : checks) state_ok = state_ok && c.value("passed", true);

    // ---- time ----
    if (req.contains("time") && !req["time"].is_null() && verify["passed"].get<bool>() && state_ok) {
      const Json& tj = req["time"];
      TimingConfig tc;
      tc.warmup_count = tj.value("warmup_count", tc.warmup_count);
      tc.warmup_ms = tj.value("warmup_ms", tc.warmup_ms);
      tc.min_reps = tj.value("min_reps", tc.min_reps);
      tc.max_reps = tj.value("max_reps", tc.max_reps);
      tc.target_rse = tj.value("target_rse", tc.target_rse);
      tc.budget_ms = tj.value("budget_ms", tc.budget_ms);
      tc.l2_flush = tj.value("l2_flush", tc.l2_flush);
      tc.l2_flush_factor = tj.value("l2_flush_factor", tc.l2_flush_factor);
      auto t_time = Clock::now();
      // Fresh random inputs for timing (never zeros), the candidate and eager reference interleaved.
      // With verify_timed_calls, every candidate call gets inputs drawn afresh in place (new values,
      // same addresses), poisoned outputs and workspace, all before the L2 flush that precedes it;
      // the reference then runs on the same inputs, and after the pair the outputs are compared
      // (into counters that accumulate on the device) and the reference's scrubbed.
      const uint64_t timing_trial = first_trial + 1000003;
      args = s.draw_args(task, timing_trial, salt);
      outputs = alloc_outputs(timing_trial);
      alloc_workspace();
      std::vector<at::Tensor> last_ref;
      CheckScratch timed(s.dev, static_cast<int64_t>(DeviceChecker::kCompareWords * task.outputs.size()));
      std::vector<CUdeviceptr> timed_slots;
      uint64_t call_trial = timing_trial;
      int64_t pairs = 0, unchecked = 0;
      std::vector<TimedCall> calls(2);
      calls[0].call = [&] { run_candidate(); };
      calls[1].call = [&] { last_ref = run_reference(task, args); };
      if (verify_timed_calls) {
        calls[0].before = [&] {
          ++call_trial;
          s.redraw_args(task, args, call_trial, salt);
          for (size_t o = 0; o < outputs.size(); ++o) poison(outputs[o], task.outputs[o].meta.dtype, call_trial);
          alloc_workspace();
        };
        calls[1].after = [&] {
          std::vector<CUdeviceptr> sl(outputs.size(), 0);
          for (size_t o = 0; o < outputs.size() && o < last_ref.size(); ++o) {
            DType dt = task.outputs[o].meta.dtype;
            if (last_ref[o].scalar_type() != to_scalar_type(dt) || last_ref[o].numel() != outputs[o].numel()) continue;
            at::Tensor r = last_ref[o].contiguous();
            if (timed_slots.size() <= o) timed_slots.resize(o + 1, 0);
            if (!timed_slots[o]) timed_slots[o] = timed.take(DeviceChecker::kCompareWords);
            s.checker->compare(dt, reinterpret_cast<CUdeviceptr>(outputs[o].data_ptr()), reinterpret_cast<CUdeviceptr>(r.data_ptr()),
                               outputs[o].numel(), tol.atol, tol.rtol, poison_bits_for_trial(dt, call_trial), timed_slots[o],
                               s.stream());
            sl[o] = timed_slots[o];
          }
          for (CUdeviceptr x : sl) unchecked += x ? 0 : 1;
          ++pairs;
          scrub(last_ref);
        };
      }
      auto runs = time_interleaved(calls, s.dev, tc);
      sync_candidate("timing");
      bool still_right = true;
      if (verify_timed_calls) {
        timed.read();
        uint64_t mism = 0, unwritten = 0;
        for (CUdeviceptr sl : timed_slots) {
          if (!sl) continue;
          CompareStats st = CompareStats::from_words(timed.host_words(sl));
          mism += st.mismatches;
          unwritten += st.unwritten;
        }
        still_right = mism == 0 && unchecked == 0;
        checks.push_back({{"name", "timed_calls_verified"},
                          {"passed", still_right},
                          {"message", still_right ? "" : "outputs of timed calls were wrong although verification passed: every call "
                                                         "must compute the task on its own inputs"},
                          {"evidence", {{"timed_pairs", pairs}, {"mismatching_elements", mism}, {"unwritten_elements", unwritten},
                                        {"outputs_not_compared", unchecked}}}});
      } else {
        // The last timed call's outputs must still be right.
        CheckScratch scratch(s.dev, static_cast<int64_t>(DeviceChecker::kCompareWords * task.outputs.size()));
        std::vector<CUdeviceptr> slots = enqueue_compares(scratch, last_ref, timing_trial);
        scratch.read();
        for (const Json& c : read_compares(scratch, slots, last_ref, timing_trial, 1))
          still_right = still_right && c["mismatches"].get<int64_t>() == 0;
      }
      scrub(last_ref);
      SpeedupEstimate sp = estimate_speedup(runs[0].samples_ms, runs[1].samples_ms);
      reply["timing"] = {{"candidate", stats_json(runs[0].stats)},
                         {"reference", stats_json(runs[1].stats)},
                         {"candidate_samples_ms", runs[0].samples_ms},
                         {"reference_samples_ms", runs[1].samples_ms},
                         {"speedup", {{"point", sp.point}, {"lo", sp.lo}, {"hi", sp.hi}, {"confidence", sp.confidence},
                                      {"method", sp.method}}},
                         {"outputs_right_after_timing", still_right},
                         {"inputs_fresh_per_call", verify_timed_calls},
                         {"method", runs[0].method + (verify_timed_calls ? "; inputs drawn afresh before every call, outputs checked after every pair" : "")}};
      if (sol_check) {
        const DeviceCeilings& ceil = s.ceilings();
        SpeedOfLight sol = speed_of_light(task.resolved.min_bytes, task.resolved.flops, ceil, sol_headroom);
        bool ok = runs[0].stats.median >= sol.floor_ms;
        checks.push_back({{"name", "speed_of_light"},
                          {"passed", ok},
                          {"message", ok ? "" : "the measured time is below what the GPU's memory bandwidth and compute allow for this task"},
                          {"evidence", {{"median_ms", runs[0].stats.median}, {"floor_ms", sol.floor_ms}, {"bytes_floor_ms", sol.bytes_ms},
                                        {"flops_floor_ms", sol.flops_ms}, {"min_bytes", task.resolved.min_bytes},
                                        {"flops", task.resolved.flops}, {"headroom", sol_headroom},
                                        {"copy_gbps", ceil.copy_gbps}, {"matmul_tflops_fp32", ceil.matmul_tflops_fp32},
                                        {"matmul_tflops_fp16", ceil.matmul_tflops_fp16}}}});
      }
      reply["anticheat_checks"] = checks;
      phases["time_ms"] = ms_since(t_time);
    }

    // ---- profile ----
    // One more call, on fresh inputs, with CUPTI activity on (never during timing): every kernel
    // the candidate launched, its occupancy, and the achieved rates against the measured ceilings.
    if (req.value("profile", false) && verify["passed"].get<bool>() && state_ok) {
      auto t_prof = Clock::now();
      const uint64_t prof_trial = first_trial + 2000003;
      args = s.draw_args(task, prof_trial, salt);
      outputs = alloc_outputs(prof_trial);
      alloc_workspace();
      sync_candidate("profile");
      Json prof = {{"kernels", Json::array()}};
      ActivityWindow window(true);
      if (window.on) {
        run_candidate();
        sync_candidate("profile");
        std::vector<KernelRecord> recs = window.finish();
        uint64_t first = 0, last = 0, busy = 0;
        for (const auto& k : recs) {
          if (!module_kernels.count(k.name)) continue;
          prof["kernels"].push_back(kernel_json(k, funcs.count(k.name) ? funcs[k.name] : nullptr));
          first = first ? std::min(first, k.start_ns) : k.start_ns;
          last = std::max(last, k.end_ns);
          busy += k.duration_ns();
        }
        const DeviceCeilings& ceil = s.ceilings();
        double span_s = last > first ? static_cast<double>(last - first) * 1e-9 : 0.0;
        prof["span_ns"] = last > first ? last - first : 0;
        prof["kernel_time_ns"] = busy;
        prof["ceilings"] = {{"dram_gbps", ceil.copy_gbps}, {"fp32_tflops", ceil.matmul_tflops_fp32}, {"fp16_tflops", ceil.matmul_tflops_fp16},
                            {"method", "best of 1 GiB device-to-device copies; best of 8192^3 matmuls (float32 TF32 off, float16)"}};
        if (span_s > 0) {
          double gbps = task.resolved.min_bytes / span_s / 1e9, tflops = task.resolved.flops / span_s / 1e12;
          prof["achieved"] = {{"gbps", gbps}, {"tflops", tflops}, {"dram_fraction", gbps / ceil.copy_gbps},
                              {"fp32_fraction", tflops / ceil.matmul_tflops_fp32},
                              {"basis", "the task's minimum bytes and FLOPs over the span of the candidate's kernels in one call"}};
        }
      } else {
        prof["unavailable"] = window.unavailable;
      }
      if (!req.value("counters", false)) {
        prof["counters"] = {{"unavailable", "hardware counters were not requested (EvalOptions::counters)"}};
      } else if (!window.unavailable.empty()) {
        prof["counters"] = {{"unavailable", window.unavailable}};
      } else {
        // The candidate's call under CUPTI's range profiler, once per pass the metrics need (user
        // replay; kernel replay if that fails), after timing, on the inputs of the profiled call.
        // The metrics asked for (EvalOptions::counter_metrics), else the default list.
        std::vector<std::string> metrics = default_counter_metrics();
        if (req.contains("counter_metrics") && req["counter_metrics"].is_array() && !req["counter_metrics"].empty())
          metrics = req["counter_metrics"].get<std::vector<std::string>>();
        CounterReport cr = collect_kernel_counters(s.ctx, s.device, metrics, [&] {
          run_candidate();
          sync_candidate("counters");
        });
        if (!cr.available) {
          prof["counters"] = {{"unavailable", cr.unavailable}};
        } else {
          Json kernels = Json::array();
          for (const auto& r : cr.ranges) {
            Json values = Json::object();
            for (size_t m = 0; m < cr.metrics.size() && m < r.values.size(); ++m) values[cr.metrics[m]] = r.values[m];
            kernels.push_back({{"range", r.name}, {"metrics", values}});
          }
          prof["counters"] = {{"metrics", cr.metrics}, {"unsupported", cr.unsupported}, {"passes", cr.passes}, {"kernels", kernels},
                              {"replay", cr.replay}, {"calls", cr.runs},
                              {"ms", {{"setup", cr.setup_ms}, {"collect", cr.collect_ms}, {"evaluate", cr.evaluate_ms}}},
                              {"setup_cached", cr.setup_cached},
                              {"method", "CUPTI range profiler, auto ranges (one per kernel), " + cr.replay + " replay"}};
        }
      }
      reply["profile"] = prof;
      phases["profile_ms"] = ms_since(t_prof);
    }
  } catch (const CandidateError& e) {
    Json err = error_reply(e.kind, e.what(), e.fatal);
    for (const char* k : {"load", "verify"})
      if (reply.contains(k)) err[k] = reply[k];
    phases["worker_ms"] = ms_since(t_req);
    err["phases"] = phases;
    if (e.fatal) throw FatalWorkerError(err);
    return err;
  } catch (const c10::Error& e) {
    // libtorch failing after the candidate ran means the context may be gone.
    CUresult r = cuda_driver().CtxSynchronize();
    Json err = error_reply(is_sticky(r) ? worker_error::runtime_error : worker_error::internal,
                           std::string("libtorch failed: ") + e.what_without_backtrace() +
                               (is_sticky(r) ? " (after " + cu_error_text(r) + ")" : ""),
                           is_sticky(r));
    if (is_sticky(r)) throw FatalWorkerError(err);
    return err;
  }
  phases["worker_ms"] = ms_since(t_req);
  reply["phases"] = phases;
  return reply;
}

}  // namespace kforge
