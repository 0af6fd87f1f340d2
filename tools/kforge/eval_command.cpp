// kforge eval --task TASK --candidate DIR|FILE [--kind kernel|extension] [--json]: compile, verify and
// time one candidate.
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "configs/error.h"
#include "data_synth/task/task_spec.h"
#include "env/evaluator/evaluator.h"
#include "tools/kforge/commands.h"

namespace kforge::cli {

namespace {

double ms_between(int64_t from_ns, int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }

// One worker's start: the supervisor's and the worker's own figures (WorkerProcess::startup_report),
// its timestamps made milliseconds since main.
Json worker_start(const WorkerProcess& w, int64_t main_ns) {
  Json r = w.startup_report();
  if (!r.is_object()) return nullptr;
  for (const char* k : {"spawn", "hello", "ready"}) {
    std::string key = std::string(k) + "_at_ns";
    if (r.contains(key)) {
      r[std::string(k) + "_at_ms"] = ms_between(main_ns, r[key].get<int64_t>());
      r.erase(key);
    }
  }
  return r;
}

// The cold-start breakdown (env/evaluator/EVAL_REPORT.md `cold_start`).
struct Marks {
  int64_t launch_ns = 0, request_ns = 0, reply_ns = 0, stopped_ns = 0;
};

Json cold_start_section(const EvalReport& report, Evaluator& ev, const Marks& m) {
  int64_t main_ns = main_monotonic_ns();
  Json c = Json::object();
  double to_main = process_to_main_ms();
  c["process_to_main_ms"] = to_main >= 0 ? Json(to_main) : Json();
  int64_t pre = preinit_monotonic_ns();
  c["static_init_ms"] = pre > 0 ? Json(ms_between(pre, main_ns)) : Json();
  c["setup_ms"] = ms_between(main_ns, m.launch_ns);
  c["compile_worker"] = worker_start(ev.compile_worker(), main_ns);
  c["gpu_worker"] = worker_start(ev.gpu_worker(), main_ns);
  c["request_at_ms"] = ms_between(main_ns, m.request_ns);
  c["request_ms"] = ms_between(m.request_ns, m.reply_ns);
  c["shutdown_ms"] = ms_between(m.reply_ns, m.stopped_ns);
  double report_at = ms_between(main_ns, m.stopped_ns);
  c["main_to_report_ms"] = report_at;
  c["wall_ms"] = report_at + (to_main >= 0 ? to_main : 0.0);
  // The workers' own time on this candidate: the compile, and the GPU worker's request.
  double worker = 0;
  if (report.compile && report.compile->result) worker += report.compile->result->compile_ms;
  if (report.phases && report.phases->count("worker_ms")) worker += report.phases->at("worker_ms");
  c["worker_ms"] = worker;
  c["overhead_ms"] = c["wall_ms"].get<double>() - worker;
  return c;
}

std::string format_cold_start(const Json& c) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(0);
  auto num = [](const Json& j) { return j.is_number() ? j.get<double>() : 0.0; };
  os << "cold start: " << num(c["wall_ms"]) << " ms, " << num(c["overhead_ms"]) << " ms of it outside the workers' own "
     << num(c["worker_ms"]) << " ms (to main " << num(c["process_to_main_ms"]) << ", setup " << num(c["setup_ms"]);
  for (const char* w : {"compile_worker", "gpu_worker"}) {
    const Json& s = c[w];
    if (!s.is_object()) continue;
    os << "; " << (std::string(w) == "gpu_worker" ? "GPU" : "compile") << " worker "
       << (s.contains("ready_at_ms") ? "ready at " + std::to_string(static_cast<int>(num(s["ready_at_ms"])))
                                     : "answered at " + std::to_string(static_cast<int>(num(s["hello_at_ms"]))));
    if (s.contains("spawn_to_main_ms")) os << ": to main " << num(s["spawn_to_main_ms"]);
    if (s.contains("phases_ms"))
      for (const auto& [k, v] : s["phases_ms"].items()) os << ", " << k << " " << num(v);
  }
  os << "; request " << num(c["request_ms"]) << ", shutdown " << num(c["shutdown_ms"]) << ")\n";
  return os.str();
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* eval = app.add_subcommand("eval", "Judge a kernel candidate: compile, verify and time it against eager PyTorch");
  static std::string task_name, candidate_dir, config_path, anticheat_path, dims, kind = "kernel";
  static bool json = false, no_time = false, check_only = false;
  static int trials = 0;
  static uint64_t salt = 0;
  eval->add_option("--task", task_name, "task file or sample name")->required();
  eval->add_option("--candidate", candidate_dir,
                   "kernel kind: a directory with kernel.cu and launch.yaml; extension kind: a CUDA Agent workdir (model_new.py, "
                   "kernels/) or a model_new.py with load_inline sources")
      ->required();
  eval->add_option("--kind", kind, "kernel (default) or extension (env/extension/EXTENSION_FORMAT.md)")
      ->check(CLI::IsMember({"kernel", "extension"}));
  eval->add_option("--config", config_path, "evaluation config (configs/eval.yaml); defaults when omitted");
  eval->add_option("--anticheat-config", anticheat_path, "anti-cheat config (configs/anticheat.yaml); every check on when omitted");
  eval->add_option("--trials", trials, "verification trials (default: verify.trials of the config)");
  eval->add_option("--salt", salt, "draw salt (default: draws.salt of the config)");
  eval->add_flag("--no-time", no_time, "verify only");
  eval->add_flag("--check", check_only, "compile and check the launch plan only (no GPU needed)");
  eval->add_flag("--json", json, "one JSON document (schema kforge.eval/1, env/evaluator/EVAL_REPORT.md)");
  eval->footer(
      "Exit status: 0 when the candidate passed, 3 when it failed, errored or was refused as a cheat (the report says why), "
      "1 or 2 when kforge could not evaluate it (bad task, missing files, usage).");
  set_action(eval, [] {
    EvalConfig cfg = config_path.empty() ? EvalConfig{} : EvalConfig::load(config_path);
    TaskSpec task = load_task(resolve_task_path(task_name));
    Candidate cand =
        parse_candidate_kind(kind) == CandidateKind::extension ? Candidate::load_extension(candidate_dir) : Candidate::load(candidate_dir);
    Evaluator evaluator(cfg);
    if (!anticheat_path.empty()) evaluator.set_anticheat(AnticheatConfig::load(anticheat_path));
    // Both workers start at once: the GPU worker's libtorch and CUDA context while the compile
    // worker loads NVRTC (the evaluation waits for each only where it needs it). A one-shot eval
    // compiles one candidate, so the compile worker skips its warm-up (the CUB header built for
    // later candidates): on the H200 it took 2.2 s against 0.86 s for the GPU worker to be ready,
    // and delayed every compile behind it; a CUB candidate builds the header itself, in about the
    // same time as warm-up plus compile. A server keeps the warm-up (its workers live on).
    {
      std::vector<std::string>& args = evaluator.compile_worker().spawn_settings().args;
      args.insert(args.end(), {"--warm-up", "0"});
    }
    Marks marks;
    marks.launch_ns = monotonic_ns();
    evaluator.compile_worker().launch();
    if (!check_only) evaluator.gpu_worker().launch();
    EvalReport report;
    marks.request_ns = monotonic_ns();
    if (check_only) {
      report = evaluator.check(task, cand);
    } else {
      EvalOptions opt;
      opt.trials = trials > 0 ? trials : cfg.verify.trials;
      opt.time = !no_time;
      opt.salt = salt ? salt : cfg.draws.salt;
      report = evaluator.evaluate(task, cand, opt);
    }
    marks.reply_ns = monotonic_ns();
    // Stop both before the report is printed (so that it can say what stopping cost), their exits overlapping.
    evaluator.compile_worker().request_stop();
    evaluator.gpu_worker().request_stop();
    evaluator.compile_worker().stop();
    evaluator.gpu_worker().stop();
    marks.stopped_ns = monotonic_ns();
    // The user's edge: the report as JSON (env/evaluator/EVAL_REPORT.md), with kforge eval's cold_start.
    const Json cold_start = cold_start_section(report, evaluator, marks);
    if (json) {
      Json out = to_json(report);
      out["cold_start"] = cold_start;
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << format_report(report) << format_cold_start(cold_start);
    }
    return report.verdict == Verdict::pass || report.verdict == Verdict::checked ? 0 : 3;
  });
}

}  // namespace kforge::cli
