#pragma once
// The evaluation report of one candidate, typed: what the evaluator returns, what the episode,
// the reward and the text the policy reads are computed from. It becomes JSON only at the edges
// (the GPU worker's reply, `kforge eval --json`, an episode's info and trajectory), through
// to_json() / parse_eval_report() in eval_report.cpp; the JSON is the schema of
// env/evaluator/EVAL_REPORT.md (`kforge.eval/1`), key for key.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "anticheat/dynamic_checks.h"
#include "env/compile/compile_request.h"
#include "env/extension/extension_build.h"
#include "env/judge/gpu_reply.h"

namespace kforge {

// pass: compiled, verified (and timed when asked); fail: computes the wrong function; cheat: an
// anti-cheat check refused it; error: did not build or run; checked: compile and plan only (check()).
enum class Verdict { pass, fail, cheat, error, checked };
const char* verdict_name(Verdict v);
// Throws a spec error for a name that is not a verdict.
Verdict parse_verdict(const std::string& name);

struct ReportError {
  std::string kind;  // worker_error::... (compile_error, launch_error, runtime_error, timeout, worker_crashed, ...)
  std::string message;
};

struct CompileSection {
  bool ok = false;
  std::string log;
  std::string arch;
  double wall_ms = 0;  // including the worker round trip
  // The compiler's answer (kernels, resources, time, cache, hash, PCH); absent when the compile
  // worker gave none (it timed out or died). Its cubin is not part of the report.
  std::optional<CompileResult> result;
};

// The extension kind's front stages (env/extension/extension_candidate.h): model_new.py read by
// model_glue.py, and the library's build with where its time went.
struct ExtensionSection {
  std::string format;  // cuda_agent | load_inline | cpp_extension_load
  double glue_ms = 0, build_ms = 0;
  bool library_cached = false;
  std::vector<BuildStep> steps;
  // Where the compilers could read and write: "confined" (Landlock: the toolchain, torch and the
  // build cache only) or "unconfined: why" (env/process/child_sandbox.h).
  std::string build_filesystem;
};

struct PlanSection {
  int64_t launches = 0;
  int64_t workspace_bytes = 0;
};

// The candidate at the task's other shapes (TaskSpec::extra_dims; issue 30), once it passed at its
// own: a kernel tuned to one size that is wrong at another computes the wrong function.
struct ShapeTrial {
  std::map<std::string, int64_t> dims;  // the shape: the task's dims this trial overrides
  // A layout trial (the extension kind, at the task's own shape; dims empty): noncontiguous or
  // channels_last, the inputs' memory layout forward was given (GpuExtension::input_layout).
  // Empty for a shape trial.
  std::string layout;
  Verdict verdict = Verdict::error;  // pass | fail | cheat | error
  std::string reason;                // not pass: why (the verify reason, the check, the error)
  double wall_ms = 0;
  // false: the harness, not the candidate, failed to run it (the worker's internal_error, e.g. out
  // of GPU memory for the inputs at a large shape): it says nothing of the candidate and decides
  // nothing (ShapesSection::settle).
  bool counted = true;
};
struct ShapesSection {
  // general: it passed at every other shape; not_general: it did not at one (or more);
  // not_tested: the task has other shapes but they did not run (`note` says why).
  std::string status;
  std::vector<ShapeTrial> trials;
  std::string note;  // not_tested: why; not_general with a plan naming none of the task's dims: that
  double wall_ms = 0;
  bool general() const { return status == "general"; }
  // status and note from the trials: not_general when a counted trial did not pass, general when
  // every counted one did, not_tested when none counts (or there is none).
  void settle();
  // How many trials count (ShapeTrial::counted), and how many of those passed.
  int counted() const;
  int counted_passed() const;
};

struct AnticheatSection {
  std::vector<CheckOutcome> checks;  // every check that ran, in order
  // The first failed check, or none: the verdict is "cheat" exactly when there is one.
  const CheckOutcome* failed() const;
};

struct EvalReport {
  std::string task, candidate;
  std::string kind = "kernel";  // the candidate's kind: kernel | extension
  Verdict verdict = Verdict::error;
  std::optional<ReportError> error;
  std::optional<GpuDevice> device;  // evaluate() only
  std::optional<CompileSection> compile;
  std::optional<ExtensionSection> extension;  // the extension kind only
  std::optional<PlanSection> plan;            // the extension kind: `launches` counts the plan's calls
  std::optional<LoadSection> load;
  std::optional<VerifySection> verify;
  std::optional<TimingSection> timing;
  std::optional<AnticheatSection> anticheat;
  std::optional<ProfileSection> profile;
  std::optional<ShapesSection> shapes;  // absent: the task has no other shapes
  std::optional<std::map<std::string, double>> phases;
  std::optional<double> gpu_request_wall_ms, wall_ms;
  // `kforge eval --json` only (EVAL_REPORT.md): where the command's wall time went, as it wrote it.
  std::optional<Json> cold_start;

  // A failed anti-cheat check makes a report "cheat" whatever else happened: the one rule every
  // reader applies, applied once where a report is finished (and where one is read).
  void settle_verdict();
  // The compile and plan stages succeeded.
  bool compiled() const { return compile && compile->ok && plan; }
};

Json to_json(const EvalReport& r);
Json to_json(const AnticheatSection& a);
Json to_json(const ShapesSection& s);
// Reads a report in the documented schema strictly (a spec error names the first unknown, missing
// or mistyped key) and settles its verdict.
EvalReport parse_eval_report(const Json& j);

// A human-readable table of a report (kforge eval without --json).
std::string format_report(const EvalReport& report);

}  // namespace kforge
