#include "env/evaluator/evaluator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "configs/checked_file.h"
#include "configs/error.h"
#include "env/compile/compile_request.h"
#include "env/extension/extension_candidate.h"
#include "env/extension/source_rules.h"
#include "env/judge/gpu_request.h"
#include "env/launch/kernel_signature.h"
#include "env/launch/launch_plan.h"
#include "env/process/clock.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

DeviceLimits limits_of(const std::optional<GpuDevice>& device) {
  DeviceLimits l;
  if (!device) return l;
  l.max_threads_per_block = device->max_threads_per_block;
  for (int d = 0; d < 3; ++d) {
    l.max_block_dim[d] = device->max_block_dim[d];
    l.max_grid_dim[d] = device->max_grid_dim[d];
  }
  l.max_dynamic_shared_bytes = device->max_dynamic_shared_bytes;
  return l;
}

// The anti-cheat scan of the source, before anything is compiled.
CheckOutcome static_check(const StaticReport& st) {
  CheckOutcome c{"static", st.passed, "", {{"findings", Json::array()}}};
  for (const CheckFinding& f : st.findings) {
    c.evidence["findings"].push_back({{"check", f.check}, {"line", f.line}, {"evidence", f.evidence}, {"message", f.message}});
    if (c.message.empty()) c.message = format_finding(f);
  }
  return c;
}

}  // namespace

const char* candidate_kind_name(CandidateKind k) { return k == CandidateKind::extension ? "extension" : "kernel"; }

CandidateKind parse_candidate_kind(const std::string& name) {
  if (name == "kernel") return CandidateKind::kernel;
  if (name == "extension") return CandidateKind::extension;
  KFORGE_FAIL(usage, "'" << name << "' is not a candidate kind (kernel or extension)");
}

Candidate Candidate::load_extension(const std::string& path) {
  Candidate c;
  c.kind = CandidateKind::extension;
  c.dir = path;
  c.files = read_extension_files(path);
  return c;
}

Candidate Candidate::load(const std::string& dir) {
  KFORGE_CHECK(fs::is_directory(dir), io, dir << ": no such candidate directory");
  Candidate c;
  c.dir = dir;
  c.source = read_untrusted_file((fs::path(dir) / "kernel.cu").string(), kMaxFileBytes, "the candidate file");
  c.plan_text = read_untrusted_file((fs::path(dir) / "launch.yaml").string(), kMaxFileBytes, "the candidate file");
  return c;
}

Evaluator::Evaluator(EvalConfig config, int device, std::string compile_worker, std::string gpu_worker) : config_(std::move(config)) {
  if (compile_worker.empty()) compile_worker = find_worker_executable("kforge-compile-worker");
  if (gpu_worker.empty()) gpu_worker = find_worker_executable("kforge-worker");
  const WorkerConfig& w = config_.worker;
  std::string seccomp = w.seccomp ? "1" : "0";
  std::vector<std::string> compile_args = {"--mode", "compile", "--seccomp", seccomp};
  if (!w.compile_cache_dir.empty()) compile_args.insert(compile_args.end(), {"--cache-dir", w.compile_cache_dir});
  WorkerSpawn cs{compile_worker, compile_args, {}, w.max_file_bytes, w.max_open_files, w.compile_address_space_bytes, w.start_timeout_s};
  WorkerSpawn gs{gpu_worker,
                 {"--mode", "gpu", "--device", std::to_string(device), "--seccomp", seccomp},
                 {{"CUDA_CACHE_DISABLE", "1"}},
                 w.max_file_bytes,
                 w.max_open_files,
                 0,
                 w.start_timeout_s};
  compile_ = std::make_unique<WorkerProcess>(cs);
  gpu_ = std::make_unique<WorkerProcess>(gs);
}

Evaluator::~Evaluator() = default;

EvalReport Evaluator::front_stages(const TaskSpec& task, const Candidate& cand, const std::string& arch, std::optional<GpuInputs>& gpu) {
  EvalReport report;
  report.task = task.id;
  report.candidate = cand.dir;
  report.verdict = Verdict::error;
  report.anticheat = AnticheatSection{{static_check(run_static_checks(cand.source, cand.plan_text, anticheat_.static_checks))}};
  if (report.anticheat->failed()) {
    report.verdict = Verdict::cheat;
    return report;
  }
  // The plan's syntax first: its compiler options are needed to compile.
  LaunchPlan plan;
  try {
    plan = LaunchPlan::parse(cand.plan_text, "launch.yaml");
  } catch (const Error& e) {
    report.error = ReportError{worker_error::compile_error, e.what()};
    return report;
  }
  CompileRequest request{cand.source, {}};
  request.options.arch = arch;
  request.options.use_fast_math = plan.options.use_fast_math;
  request.options.maxrregcount = plan.options.maxrregcount;
  WorkerReply r = compile_->call(to_json(request), config_.worker.compile_timeout_s);
  if (!r.ok) {
    std::string msg = r.error_kind == worker_error::timeout
                          ? "the compile did not finish within " + std::to_string(static_cast<int>(config_.worker.compile_timeout_s)) +
                                " s (compile_timeout_s); it was stopped"
                          : r.error_message;
    report.error = ReportError{r.error_kind, msg};
    report.compile = CompileSection{false, msg, arch, r.wall_ms, std::nullopt};
    return report;
  }
  CompileResult compiled = parse_compile_reply(r.body);
  std::vector<uint8_t> cubin = std::move(compiled.cubin);
  compiled.cubin.clear();
  report.compile = CompileSection{compiled.ok, compiled.log, arch, r.wall_ms, compiled};
  if (!compiled.ok) {
    report.error = ReportError{worker_error::compile_error, "the kernel does not compile:\n" + compiled.log};
    return report;
  }
  try {
    std::vector<KernelSignature> kernels = parse_kernel_signatures(cand.source);
    DeviceLimits limits = limits_of(gpu_->running() ? hello_device(gpu_->hello()) : std::nullopt);
    ResolvedPlan resolved = resolve_plan(plan, task, kernels, limits);
    int64_t ws_bytes = 0;
    for (const auto& w : resolved.workspace) ws_bytes += w.elements * static_cast<int64_t>(dtype_size(w.dtype));
    report.plan = PlanSection{static_cast<int64_t>(resolved.launches.size()), ws_bytes};
    gpu = GpuInputs{wire_plan_of(resolved), compiled.hash, std::move(cubin), std::move(plan), std::move(kernels), limits};
  } catch (const Error& e) {
    report.error = ReportError{worker_error::compile_error, e.what()};
    return report;
  }
  return report;
}

ExtensionBuilder& Evaluator::extension_builder() {
  if (!extension_builder_) {
    ExtensionToolchain tc = ExtensionToolchain::from_build();
    extension_builder_ = std::make_unique<ExtensionBuilder>(tc, default_extension_cache_dir());
  }
  return *extension_builder_;
}

EvalReport Evaluator::extension_stages(const TaskSpec& task, const Candidate& cand, const std::string& arch,
                                       std::optional<GpuExtension>& gpu) {
  EvalReport report;
  report.task = task.id;
  report.candidate = cand.dir;
  report.kind = "extension";
  report.verdict = Verdict::error;
  auto t0 = Clock::now();
  ExtensionFront f = glue_extension(cand.files);
  // The static scan reads the device code the plan builds (its .cu files), as it reads a kernel kind's
  // kernel.cu: the same rules, each finding naming its file. Headers too, whatever their extension:
  // a .cu may include any of them (only headers: source_rules.h), so device code can sit in one.
  StaticReport scan;
  for (const auto& file : f.request.files) {
    const ExtensionFileKind kind = extension_file_kind(file.path);
    if (kind != ExtensionFileKind::cuda && kind != ExtensionFileKind::header) continue;
    StaticReport one = run_static_checks(file.text, "", anticheat_.static_checks);
    for (auto& finding : one.findings) {
      finding.file = file.path;
      scan.findings.push_back(std::move(finding));
    }
    scan.passed = scan.passed && one.passed;
  }
  report.anticheat = AnticheatSection{{static_check(scan)}};
  if (report.anticheat->failed()) {
    report.verdict = Verdict::cheat;
    return report;
  }
  f.request.arch = arch;  // the device's: the build for the GPU that runs it
  if (f.ok) build_extension(f, extension_builder());
  report.compile = CompileSection{f.ok, f.ok ? f.build.log : f.message, arch, ms_since(t0), std::nullopt};
  if (!f.plan_json.is_null() || f.build.total_ms > 0)
    report.extension =
        ExtensionSection{f.plan.format, f.glue_ms, f.build.total_ms, f.build.library_cached, f.build.steps, f.build.filesystem};
  if (!f.ok) {
    report.error = ReportError{f.error_kind == "timeout" ? worker_error::timeout : worker_error::compile_error, f.message};
    return report;
  }
  report.plan = PlanSection{static_cast<int64_t>(f.plan.calls.size()), 0};
  gpu = GpuExtension{std::move(f.library), f.build.hash, std::move(f.plan_json)};
  return report;
}

EvalReport Evaluator::check(const TaskSpec& task, const Candidate& cand, const std::string& target) {
  EvalReport report;
  bool front_ok = false;
  const std::string arch = !config_.worker.arch.empty() ? config_.worker.arch : !target.empty() ? target : std::string("sm_90a");
  if (cand.kind == CandidateKind::extension) {
    std::optional<GpuExtension> gpu;
    report = extension_stages(task, cand, arch, gpu);
    front_ok = gpu.has_value();
  } else {
    std::optional<GpuInputs> gpu;
    report = front_stages(task, cand, arch, gpu);
    front_ok = gpu.has_value();
  }
  if (front_ok) report.verdict = Verdict::checked;
  return report;
}

namespace {

// The GPU stages' sections and verdict, from the worker's reply.
void add_gpu_stages(EvalReport& report, const WorkerReply& r, double timeout_s) {
  report.gpu_request_wall_ms = r.wall_ms;
  GpuEvalReply reply = r.body.is_object() ? parse_gpu_eval_reply(r.body) : GpuEvalReply{};
  report.load = std::move(reply.load);
  report.verify = std::move(reply.verify);
  report.timing = std::move(reply.timing);
  report.profile = std::move(reply.profile);
  report.phases = std::move(reply.phases);
  if (!r.ok) {
    std::string msg = r.error_message;
    if (r.error_kind == worker_error::timeout)
      msg = "the candidate did not finish within " + std::to_string(static_cast<int>(timeout_s)) +
            " s (request_timeout_s): a kernel that hangs; the GPU worker was killed and restarted";
    report.error = ReportError{r.error_kind, msg};
    report.verdict = Verdict::error;
  } else if (!report.verify) {
    KFORGE_FAIL(internal, "the GPU worker's reply has no verify section");
  } else if (!report.verify->passed) {
    report.verdict = Verdict::fail;
  } else if (report.timing && !report.timing->outputs_right_after_timing) {
    report.verdict = Verdict::fail;
    report.verify->reason = "outputs were wrong after timing";
  } else {
    report.verdict = Verdict::pass;
  }
  // The anti-cheat section: the static scan, then what the worker checked.
  if (!report.anticheat) report.anticheat = AnticheatSection{};
  for (auto& c : reply.anticheat_checks) report.anticheat->checks.push_back(std::move(c));
}

// A judged call's verdict in a line: the error, the failed check, or why verification failed.
std::string reason_of(const EvalReport& r) {
  if (r.error) return r.error->kind + ": " + r.error->message;
  if (r.anticheat && r.anticheat->failed()) return r.anticheat->failed()->name + ": " + r.anticheat->failed()->message;
  if (r.verify && !r.verify->passed) return r.verify->reason;
  return "";
}

// The layouts an extension's forward is also given its inputs in (GpuExtension::input_layout):
// noncontiguous where an input has two or more elements, channels_last where one is 4-D.
std::vector<std::string> layout_trials_for(const TaskSpec& task) {
  bool strided = false, four_d = false;
  for (const auto& a : task.arguments) {
    if (a.decl.role != ArgRole::input) continue;
    strided = strided || numel(a.decl.meta.shape) >= 2;
    four_d = four_d || a.decl.meta.shape.size() == 4;
  }
  std::vector<std::string> out;
  if (strided) out.push_back("noncontiguous");
  if (four_d) out.push_back("channels_last");
  return out;
}

}  // namespace

ShapesSection Evaluator::shape_trials(const TaskSpec& task, GpuEvalRequest req, const GpuInputs* kernel, Verdict verdict) {
  ShapesSection s;
  s.status = "not_tested";
  if (verdict != Verdict::pass) {
    s.note = "it did not pass at the task's own shape";
    return s;
  }
  if (config_.verify.extra_shape_trials == 0) {
    s.note = "verify.extra_shape_trials is 0";
    return s;
  }
  auto t0 = Clock::now();
  if (kernel && plan_dim_names(kernel->launch_plan, task.dims).empty()) {
    // Every grid, block and argument is a number: the kernel cannot learn the shape it is given.
    s.status = "not_general";
    s.note = "the launch plan names none of the task's dims: it is written for one shape and cannot follow another";
    s.wall_ms = ms_since(t0);
    return s;
  }
  req.time.reset();
  req.profile = req.counters = false;
  req.counter_metrics.clear();
  req.verify.trials = config_.verify.extra_shape_trials;
  req.verify.probe_words = 0;
  // Plain draws only: the shapes ask whether it computes the operator at other sizes. The robustness
  // members judged it at the task's own shape; conditioned anew on a small shape (M = 1: a few
  // thousand outputs) they refused an honest GEMM's rounding (H100, 2026-12-05), and their float64
  // conditioning would cost more than the trials.
  req.anticheat.robustness_draws = false;
  auto judge = [&](ShapeTrial& trial) {
    EvalReport one;
    add_gpu_stages(one, gpu_->call(to_json(req), config_.worker.request_timeout_s), config_.worker.request_timeout_s);
    one.settle_verdict();
    trial.verdict = one.verdict;
    trial.reason = reason_of(one);
    // The harness's own failure (out of GPU memory for the inputs at a large shape, H100
    // 2026-12-07) is not the candidate's: the trial decides nothing. A candidate's own error
    // (its library throwing, a fault) is runtime_error or launch_error, and counts.
    trial.counted = !(one.error && one.error->kind == worker_error::internal);
  };
  for (size_t i = 0; i < task.extra_dims.size(); ++i) {
    auto t1 = Clock::now();
    ShapeTrial trial;
    trial.dims = task.extra_dims[i];
    const TaskSpec at = task.at_extra_dims(i);  // it resolves: the task's parser checked every extra shape
    bool planned = true;
    try {
      if (kernel) req.plan = wire_plan_of(resolve_plan(kernel->launch_plan, at, kernel->kernels, kernel->limits));
    } catch (const Error& e) {  // the plan's expressions give a launch the device refuses there
      planned = false;
      trial.verdict = Verdict::error;
      trial.reason = std::string("the launch plan does not resolve at this shape: ") + e.what();
    }
    if (planned) {
      req.extra_shape = static_cast<int>(i);
      judge(trial);
    }
    trial.wall_ms = ms_since(t1);
    s.trials.push_back(std::move(trial));
  }
  // An extension's forward takes tensors, so it may be handed its inputs in any layout PyTorch
  // allows: the same values, strided or channels-last, at the task's own shape. (A kernel-kind plan
  // receives pointers to contiguous buffers by its format: no layout to vary.)
  req.extra_shape = -1;
  if (req.extension) {
    // Making a strided input contiguous is ATen's copy (`x.contiguous()` in the binding, as CUDA Agent's
    // and KernelBench's extensions all do): allowed here, where nothing is timed. The task's own
    // shape, with contiguous inputs (where it is a no-op), judged library_kernels as configured.
    auto& libs = req.anticheat.extension_libraries;
    if (std::find(libs.begin(), libs.end(), "aten") == libs.end()) libs.push_back("aten");
    for (const std::string& layout : layout_trials_for(task)) {
      auto t1 = Clock::now();
      ShapeTrial trial;
      trial.layout = layout;
      req.extension->input_layout = layout;
      judge(trial);
      trial.wall_ms = ms_since(t1);
      s.trials.push_back(std::move(trial));
    }
  }
  s.settle();
  s.wall_ms = ms_since(t0);
  return s;
}

bool judged_at_other_shapes(const TaskSpec& task, bool extension) { return extension || (!task.extra_dims.empty() && !task.imported()); }

EvalReport Evaluator::evaluate(const TaskSpec& task, const Candidate& cand, const EvalOptions& opt) {
  auto t0 = Clock::now();
  std::optional<GpuDevice> device;
  try {
    device = hello_device(gpu_->hello());
  } catch (const Error& e) {
    EvalReport report;
    report.task = task.id;
    report.candidate = cand.dir;
    report.error = ReportError{worker_error::worker_crashed, e.what()};
    return report;
  }
  std::string arch = !config_.worker.arch.empty() ? config_.worker.arch : device ? device->arch : std::string("sm_90a");
  GpuEvalRequest req;
  EvalReport report;
  std::optional<GpuInputs> gpu;  // the kernel kind's
  if (cand.kind == CandidateKind::extension) {
    std::optional<GpuExtension> ext;
    report = extension_stages(task, cand, arch, ext);
    if (ext) req.extension = std::move(ext);
  } else {
    report = front_stages(task, cand, arch, gpu);
    if (gpu) {
      req.cubin = std::move(gpu->cubin);
      req.cubin_hash = gpu->cubin_hash + "/" + arch;
      req.plan = gpu->plan;
      req.kernel_names = report.compile->result->kernels;
    }
  }
  report.device = device;
  if (!report.compiled()) {
    report.wall_ms = ms_since(t0);
    return report;
  }
  req.task_yaml = task_to_yaml(task);
  req.max_workspace_bytes = config_.worker.max_workspace_bytes;
  req.verify = {opt.trials, opt.salt, config_.verify.report_mismatches, opt.probe_words};
  if (opt.time) {
    req.time = config_.timing;
    req.time->decide_at = opt.decide_at;
  }
  req.profile = opt.profile;
  req.counters = opt.counters;
  req.counter_metrics = opt.counter_metrics;
  req.anticheat = anticheat_.dynamic;
  WorkerReply r = gpu_->call(to_json(req), config_.worker.request_timeout_s);
  add_gpu_stages(report, r, config_.worker.request_timeout_s);
  report.settle_verdict();  // a failed anti-cheat check makes it "cheat"
  if (judged_at_other_shapes(task, req.extension.has_value()))
    report.shapes = shape_trials(task, std::move(req), gpu ? &*gpu : nullptr, report.verdict);
  report.wall_ms = ms_since(t0);
  return report;
}

}  // namespace kforge
