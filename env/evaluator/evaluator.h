#pragma once
// Judging a kernel candidate for a task, from the caller's side: it never creates a CUDA context.
// Stages, each with a typed outcome: compile (in a compile worker, with a time limit), plan
// (launch.yaml resolved against the task and the kernels' signatures), then load, verify and time
// in a GPU worker. The report is an EvalReport (eval_report.h; its JSON schema is
// env/evaluator/EVAL_REPORT.md).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anticheat/static_checks.h"
#include "configs/eval_config.h"
#include "data_synth/task/task_spec.h"
#include "env/evaluator/candidate_kind.h"
#include "env/evaluator/eval_report.h"
#include "env/extension/extension_build.h"
#include "env/judge/gpu_request.h"
#include "env/launch/launch_plan.h"
#include "env/launch/plan_wire.h"
#include "env/process/worker_client.h"

namespace kforge {

// Whether a passing candidate is also judged beyond the task's own shape (Evaluator::evaluate's
// shapes section, and what the prompt says of it): an extension always (its inputs' layouts at
// least); a kernel where the task has other shapes and is not imported (an imported task's plan is
// in numbers, with no dimension names to follow another shape).
bool judged_at_other_shapes(const TaskSpec& task, bool extension);

struct Candidate {
  CandidateKind kind = CandidateKind::kernel;
  std::string dir;
  std::string source;                        // kernel.cu
  std::string plan_text;                     // launch.yaml
  std::map<std::string, std::string> files;  // the extension kind's, by path inside the candidate
  // The most either file may hold when read from a directory: four times the episode workspace's
  // default max_file_bytes (env/episode/env_config.h), so that a kernel an episode accepts is
  // accepted here too, while a 10 MB one is refused before it is read.
  static constexpr int64_t kMaxFileBytes = int64_t{1} << 20;
  // Throws an io error naming the file: missing, a symbolic link, not a regular file (a FIFO), or
  // larger than kMaxFileBytes (configs/checked_file.h).
  static Candidate load(const std::string& dir);
  // The extension kind: a CUDA Agent workdir (a directory) or a model_new.py (a file);
  // read_extension_files (extension_candidate.h) says what is read and refused.
  static Candidate load_extension(const std::string& path);
};

struct EvalOptions {
  int trials = 5;
  bool time = true;
  uint64_t salt = 0;  // the episode's; trial identities are the GPU worker's own (gpu_request.h)
  // One more call with CUPTI activity on after timing: the report's `profile` section.
  bool profile = false;
  // With profile: hardware counters of the candidate's kernels through CUPTI's range profiler
  // (the call replayed once per pass after timing; the profile's `counters`). The environment's profile() asks for
  // them (configs/env.yaml tools.profile_counters); a bare evaluation does not.
  bool counters = false;
  // With counters: the metrics to read (empty: the worker's default list, default_counter_metrics).
  std::vector<std::string> counter_metrics;
  // Test hook of the call-classification probe (gpu_request.h, GpuVerifyRequest::probe_words).
  int probe_words = 0;
  // With time: the speedups over eager at which the caller's reward changes (reward/sequential.h,
  // decision_thresholds); the timing stops once they are settled (config timing.sequential). Empty:
  // it stops by the relative-standard-error target.
  std::vector<double> decide_at;
};

class Evaluator {
 public:
  // Worker executables are found with find_worker_executable unless given.
  explicit Evaluator(EvalConfig config, int device = 0, std::string compile_worker = "", std::string gpu_worker = "");
  ~Evaluator();

  EvalReport evaluate(const TaskSpec& task, const Candidate& candidate, const EvalOptions& options);
  // The compile and plan stages alone (no GPU needed): the report stops before loading, with the
  // verdict "checked" when both succeeded.
  // `target`: the arch to compile for where worker.arch names none ("": sm_90a); a rollout server's warm
  // compile names its GPU lane's, so that the lane's compile finds the result in the shared cache.
  EvalReport check(const TaskSpec& task, const Candidate& cand, const std::string& target = "");

  WorkerProcess& compile_worker() { return *compile_; }
  WorkerProcess& gpu_worker() { return *gpu_; }
  const EvalConfig& config() const { return config_; }
  // The anti-cheat checks (configs/anticheat.yaml); all on by default.
  void set_anticheat(AnticheatConfig config) { anticheat_ = std::move(config); }
  const AnticheatConfig& anticheat() const { return anticheat_; }

 private:
  // What the GPU stages need of the front stages: set only when compile and plan succeeded.
  struct GpuInputs {
    WirePlan plan;
    std::string cubin_hash;
    std::vector<uint8_t> cubin;
    // What resolves the plan again at another shape (shape_trials).
    LaunchPlan launch_plan;
    std::vector<KernelSignature> kernels;
    DeviceLimits limits;
  };
  // The static scan, compile and plan stages. The report's verdict is final unless `gpu` is set.
  EvalReport front_stages(const TaskSpec& task, const Candidate& candidate, const std::string& arch, std::optional<GpuInputs>& gpu);
  // The extension kind's: glue, plan, build (extension_candidate.h). The report's verdict is final
  // unless `gpu` is set.
  EvalReport extension_stages(const TaskSpec& task, const Candidate& candidate, const std::string& arch, std::optional<GpuExtension>& gpu);
  ExtensionBuilder& extension_builder();
  // The candidate at each of the task's other shapes (evaluator_shapes.cpp), verify only, once it
  // passed at its own: `request` is the one that judged it there, `kernel` the kernel kind's plan
  // (null for an extension, whose calls follow its inputs' shapes).
  ShapesSection shape_trials(const TaskSpec& task, GpuEvalRequest request, const GpuInputs* kernel, Verdict verdict);

  EvalConfig config_;
  AnticheatConfig anticheat_;
  std::unique_ptr<WorkerProcess> compile_;
  std::unique_ptr<WorkerProcess> gpu_;
  std::unique_ptr<ExtensionBuilder> extension_builder_;  // made on the first extension candidate
};

}  // namespace kforge
