#include "env/judge/gpu_judgement.h"

#include <algorithm>
#include <limits>
#include <set>

#include <c10/core/InferenceMode.h>
#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/candidate_error.h"
#include "env/judge/extension_program.h"
#include "env/judge/kernel_counters.h"
#include "env/process/clock.h"

namespace kforge {

namespace {

int func_attr(CUfunction f, CUfunction_attribute a) {
  int v = 0;
  KFORGE_CUDA(cuda_driver().FuncGetAttribute(&v, a, f));
  return v;
}

}  // namespace

Judgement::Judgement(GpuWorker::State& s, const GpuEvalRequest& req, const TaskSpec& task) : s_(s), req_(req), task_(task) {}
Judgement::~Judgement() = default;

bool Judgement::clean() const {
  if (!verify_.is_object() || !verify_.value("passed", false)) return false;
  for (const auto& c : checks_)
    if (!c.value("passed", true)) return false;
  return true;
}

void Judgement::sync_candidate(const char* when) {
  CUresult r = cuda_driver().StreamSynchronize(s_.stream());
  if (r != CUDA_SUCCESS) cuda_check(r, std::string("the candidate failed while running (") + when + ")", CudaBlame::candidate_run);
}

// The reference's outputs never outlive their comparison: overwritten with poison, then freed.
void Judgement::scrub(std::vector<at::Tensor>& ref) {
  c10::InferenceMode inference;  // the reference's outputs are inference tensors
  if (req_.anticheat.scrub_reference)
    for (auto& r : ref) {
      if (!r.defined() || r.numel() == 0) continue;
      if (r.is_floating_point())
        r.fill_(std::numeric_limits<double>::quiet_NaN());
      else if (r.scalar_type() == at::kBool)
        r.fill_(true);
      else
        r.fill_(-1);
    }
  ref.clear();
}

void Judgement::add_check(const std::string& name, bool passed, const std::string& message, Json evidence) {
  checks_.push_back(check_to_json({name, passed, passed ? "" : message, std::move(evidence)}));
  reply_["anticheat_checks"] = checks_;
}

void Judgement::load() {
  auto t_load = std::chrono::steady_clock::now();
  if (req_.extension)
    load_extension();
  else
    load_module();
  bench_ = std::make_unique<CallBench>(task_, *program_, s_.bench_device(), req_.anticheat, req_.verify.salt, s_.ids);
  bench_->set_probe_words(req_.verify.probe_words);
  phases_["load_ms"] = ms_since(t_load);
}

void Judgement::load_extension() {
  const GpuExtension& x = *req_.extension;
  ExtensionPlan plan;
  try {
    plan = parse_extension_plan(x.plan);
  } catch (const Error& e) {
    throw CandidateError(worker_error::launch_error, e.what(), false);
  }
  auto it = s_.extensions.find(x.library_hash);
  const bool cached = it != s_.extensions.end();
  if (!cached) it = s_.extensions.emplace(x.library_hash, load_candidate_library(x.library)).first;
  Json functions = Json::array();
  for (const auto& f : *it->second.functions) functions.push_back(f.name);
  reply_["load"] = {{"kernels", Json::array()}, {"module_cached", cached}, {"extension_functions", functions}};
  program_ = std::make_unique<ExtensionProgram>(task_, it->second, std::move(plan), x.input_layout);
}

void Judgement::load_module() {
  check_plan(req_.plan, task_, req_.max_workspace_bytes);
  plan_ = req_.plan;
  CUmodule mod = nullptr;
  bool cached = s_.modules.count(req_.cubin_hash) > 0;
  if (cached) {
    mod = s_.modules[req_.cubin_hash];
  } else {
    CUresult r = cuda_driver().ModuleLoadData(&mod, req_.cubin.data());
    cuda_check(r, "loading the compiled module", CudaBlame::candidate_launch);
    if (s_.modules.size() >= 256) {  // a long-running worker sees many candidates: drop the old modules
      for (auto& [h, m] : s_.modules) cuda_driver().ModuleUnload(m);
      s_.modules.clear();
    }
    s_.modules[req_.cubin_hash] = mod;
  }
  Json kernels = Json::array();
  for (const auto& l : plan_.launches) {
    if (funcs_.count(l.kernel)) continue;
    CUfunction f = nullptr;
    CUresult r = cuda_driver().ModuleGetFunction(&f, mod, l.kernel.c_str());
    if (r != CUDA_SUCCESS)
      throw CandidateError(worker_error::launch_error, l.where + ": kernel " + l.kernel + " is not in the compiled module", false);
    funcs_[l.kernel] = f;
    kernels.push_back({{"name", l.kernel},
                       {"registers", func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS)},
                       {"static_shared_bytes", func_attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)},
                       {"local_bytes", func_attr(f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)},
                       {"const_bytes", func_attr(f, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)},
                       {"max_threads_per_block", func_attr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)}});
  }
  reply_["load"] = {{"kernels", kernels}, {"module_cached", cached}};
  // Every kernel of the candidate's module, not only those the plan names (activity and profile).
  module_kernels_.insert(req_.kernel_names.begin(), req_.kernel_names.end());
  for (const auto& l : plan_.launches) module_kernels_.insert(l.kernel);
  // Launch-time limits, checked before anything runs so the error names the launch.
  for (const auto& l : plan_.launches) {
    CUfunction f = funcs_[l.kernel];
    int max_threads = func_attr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        static_smem = func_attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    int64_t threads = int64_t{l.block[0]} * l.block[1] * l.block[2];
    if (threads > max_threads)
      throw CandidateError(worker_error::launch_error,
                           l.where + ": " + l.kernel + " launched with " + std::to_string(threads) +
                               " threads per block; it can take at most " + std::to_string(max_threads) +
                               " (registers or __launch_bounds__)",
                           false);
    if (static_cast<int64_t>(l.smem) + static_smem > s_.max_optin_smem)
      throw CandidateError(worker_error::launch_error,
                           l.where + ": " + l.kernel + " asks for " + std::to_string(l.smem) + " bytes of dynamic shared memory (+" +
                               std::to_string(static_smem) + " static); the GPU allows " + std::to_string(s_.max_optin_smem) + " per block",
                           false);
    if (l.smem > 48 * 1024) {
      CUresult r = cuda_driver().FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem));
      cuda_check(r, l.where + ": raising the shared memory limit of " + l.kernel, CudaBlame::candidate_launch);
    }
  }
  program_ = std::make_unique<PlanProgram>(plan_, funcs_);
}

Json Judgement::kernel_json(const KernelRecord& k, CUfunction f) {
  int threads = k.block[0] * k.block[1] * k.block[2], blocks_per_sm = 0, max_threads_sm = 0;
  if (f)
    KFORGE_CUDA(
        cuda_driver().OccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, f, threads, static_cast<size_t>(k.dynamic_shared_bytes)));
  CUdevice d = 0;
  KFORGE_CUDA(cuda_driver().CtxGetDevice(&d));
  KFORGE_CUDA(cuda_driver().DeviceGetAttribute(&max_threads_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, d));
  double occ = max_threads_sm > 0 ? static_cast<double>(blocks_per_sm) * threads / max_threads_sm : 0.0;
  return Json{{"name", k.name},
              {"duration_ns", k.duration_ns()},
              {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
              {"block", {k.block[0], k.block[1], k.block[2]}},
              {"registers", k.registers},
              {"shared_bytes", k.static_shared_bytes + k.dynamic_shared_bytes},
              {"static_shared_bytes", k.static_shared_bytes},
              {"dynamic_shared_bytes", k.dynamic_shared_bytes},
              {"local_bytes_per_thread", k.local_bytes_per_thread},
              {"stream", k.stream_id},
              {"device_launched", k.device_launched},
              {"occupancy", std::min(1.0, occ)},
              {"blocks_per_sm", blocks_per_sm}};
}

// One more call, on fresh inputs, with CUPTI activity on (never during timing): every kernel the
// candidate launched, its occupancy, and the achieved rates against the measured ceilings.
void Judgement::profile() {
  auto t_prof = std::chrono::steady_clock::now();
  bench_->prepare({s_.ids.next(), DrawVariant::plain, 0, -1});
  sync_candidate("profile");
  Json prof = {{"kernels", Json::array()}};
  ActivityWindow window(true);
  if (window.on) {
    bench_->run_candidate();
    sync_candidate("profile");
    std::vector<KernelRecord> recs = window.finish();
    uint64_t first = 0, last = 0, busy = 0;
    for (const auto& k : recs) {
      if (!req_.extension && !module_kernels_.count(k.name)) continue;  // an extension's call is all that ran in the window
      prof["kernels"].push_back(kernel_json(k, funcs_.count(k.name) ? funcs_[k.name] : nullptr));
      first = first ? std::min(first, k.start_ns) : k.start_ns;
      last = std::max(last, k.end_ns);
      busy += k.duration_ns();
    }
    const DeviceCeilings& ceil = s_.ceilings();
    double span_s = last > first ? static_cast<double>(last - first) * 1e-9 : 0.0;
    prof["span_ns"] = last > first ? last - first : 0;
    prof["kernel_time_ns"] = busy;
    prof["ceilings"] = {{"dram_gbps", ceil.copy_gbps},
                        {"fp32_tflops", ceil.matmul_tflops_fp32},
                        {"tf32_tflops", ceil.matmul_tflops_tf32},
                        {"fp16_tflops", ceil.matmul_tflops_fp16},
                        {"method",
                         "best of 1 GiB device-to-device copies; best of 8192^3 matmuls (float32 TF32 off, float32 TF32 "
                         "allowed, float16)"}};
    if (span_s > 0) {
      double gbps = task_.cost.min_bytes / span_s / 1e9;
      prof["achieved"] = {{"gbps", gbps},
                          {"dram_fraction", gbps / ceil.copy_gbps},
                          {"basis", "the task's minimum bytes and FLOPs over the span of the candidate's kernels in one call"}};
      if (task_.cost.flops) {  // an imported task may state no FLOP count
        double tflops = *task_.cost.flops / span_s / 1e12;
        prof["achieved"]["tflops"] = tflops;
        prof["achieved"]["fp32_fraction"] = tflops / ceil.matmul_tflops_fp32;
      } else {
        prof["achieved"]["tflops"] = nullptr;
        prof["achieved"]["fp32_fraction"] = nullptr;
      }
    }
  } else {
    prof["unavailable"] = window.unavailable;
  }
  if (!req_.counters) {
    prof["counters"] = {{"unavailable", "hardware counters were not requested (EvalOptions::counters)"}};
  } else if (!window.unavailable.empty()) {
    prof["counters"] = {{"unavailable", window.unavailable}};
  } else {
    // The candidate's call under CUPTI's range profiler, once per pass the metrics need (user
    // replay; kernel replay if that fails), after timing, on the inputs of the profiled call.
    std::vector<std::string> metrics = req_.counter_metrics.empty() ? default_counter_metrics() : req_.counter_metrics;
    CounterReport cr = collect_kernel_counters(s_.ctx, s_.device, metrics, [&] {
      bench_->run_candidate();
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
      prof["counters"] = {{"metrics", cr.metrics},
                          {"unsupported", cr.unsupported},
                          {"passes", cr.passes},
                          {"kernels", kernels},
                          {"replay", cr.replay},
                          {"calls", cr.runs},
                          {"ms", {{"setup", cr.setup_ms}, {"collect", cr.collect_ms}, {"evaluate", cr.evaluate_ms}}},
                          {"setup_cached", cr.setup_cached},
                          {"method", "CUPTI range profiler, auto ranges (one per kernel), " + cr.replay + " replay"}};
    }
  }
  reply_["profile"] = prof;
  phases_["profile_ms"] = ms_since(t_prof);
}

}  // namespace kforge
