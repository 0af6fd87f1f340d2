#include "env/episode/report_text.h"

#include <array>
#include <iomanip>
#include <sstream>

#include "env/episode/observation.h"
#include "env/evaluator/eval_report.h"

namespace kforge {

namespace {

std::string fixed(double v, int precision) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << v;
  return os.str();
}

std::string sci(double v) {
  std::ostringstream os;
  os << std::scientific << std::setprecision(2) << v;
  return os.str();
}

std::string dims3(const std::array<int64_t, 3>& d) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
}

std::string error_line(const EvalReport& report, size_t log_max_chars) {
  if (!report.error) return "error: the evaluation failed without a reason\n";
  return "error (" + report.error->kind + "): " + trim_middle(report.error->message, log_max_chars) + "\n";
}

std::string cheat_line(const EvalReport& report) {
  const CheckOutcome* c = report.anticheat ? report.anticheat->failed() : nullptr;
  std::string check = c ? c->name : "";
  std::string message = c ? c->message : "";
  return "cheat: refused by the anti-cheat check '" + (check.empty() ? std::string("?") : check) + "'" +
         (message.empty() ? "" : ": " + message) + "\n";
}

std::string interval(const SpeedupSection& sp) {
  return fixed(sp.point, 3) + "x (" + fixed(sp.confidence * 100, 0) + " % CI " + fixed(sp.lo, 3) + " - " + fixed(sp.hi, 3) + ")";
}

void counters_text(std::ostream& os, const ProfileCounters& c) {
  if (c.unavailable) {
    os << "  hardware counters unavailable: " << *c.unavailable << "\n";
    return;
  }
  // The range profiler's values, one line per kernel (gpu_judgement.cpp, kernel_counters.h).
  os << "  hardware counters (" << c.passes << " replay pass(es)):\n";
  for (const auto& k : c.kernels) {
    os << "    " << (k.range.empty() ? std::string("kernel") : k.range) << ":";
    for (const auto& [m, v] : k.metrics) os << " " << m << " " << fixed(v, 1);
    os << "\n";
  }
}

}  // namespace

std::string compile_text(const EvalReport& report, size_t log_max_chars) {
  std::ostringstream os;
  // The static anti-cheat scan runs before the compiler.
  if (report.verdict == Verdict::cheat) return "compile: refused before compiling\n" + cheat_line(report);
  if (!report.compile || !report.compile->ok || (report.error && !report.plan)) {
    os << "compile: FAILED\n" << error_line(report, log_max_chars);
    return os.str();
  }
  const CompileSection& c = *report.compile;
  const bool cached = c.result && c.result->cache_hit;
  os << "compile: ok (" << c.arch << ", " << fixed(c.result ? c.result->compile_ms : c.wall_ms, 1) << " ms" << (cached ? ", cached" : "")
     << ")\n";
  if (c.result)
    for (const auto& k : c.result->resources)
      os << "  kernel " << k.name << ": " << k.registers << " registers, " << k.static_shared_bytes << " B static shared memory, "
         << k.local_bytes << " B local memory, spills " << k.spill_store_bytes << "/" << k.spill_load_bytes << " B (store/load)"
         << (k.max_threads_per_block > 0 ? ", max " + std::to_string(k.max_threads_per_block) + " threads per block" : std::string())
         << "\n";
  if (!c.log.empty()) os << "compiler output:\n" << trim_middle(c.log, log_max_chars) << (c.log.back() == '\n' ? "" : "\n");
  if (report.plan) os << "launch plan: " << report.plan->launches << " launch(es), " << report.plan->workspace_bytes << " B of workspace\n";
  return os.str();
}

namespace {

// The task's other shapes: a kernel must compute the operator at every size, not the one it was shown.
void shapes_text(std::ostream& os, const ShapesSection& sh) {
  if (sh.status == "not_tested") {
    os << "other shapes: not tested (" << sh.note << ")\n";
    return;
  }
  os << "other shapes: " << (sh.general() ? "passed" : "FAILED: it works only at this task's own shape or with contiguous inputs");
  if (!sh.note.empty()) os << " (" << sh.note << ")";
  os << "\n";
  for (const auto& t : sh.trials) {
    os << "  " << (t.layout.empty() ? "at" : "with " + t.layout + " inputs");
    for (const auto& [k, v] : t.dims) os << " " << k << "=" << v;
    os << ": " << (t.counted ? "" : "not counted, the harness could not run it: ")
       << (t.verdict == Verdict::pass ? "passed" : verdict_name(t.verdict)) << (t.reason.empty() ? "" : " (" + t.reason + ")") << "\n";
  }
}

}  // namespace

std::string verify_text(const EvalReport& report, size_t log_max_chars) {
  std::ostringstream os;
  if (report.verdict == Verdict::cheat) return cheat_line(report);
  if (!report.verify) {
    // Stopped before verifying: at the compile or plan stage, or before the candidate was reached.
    if (report.compile && !report.compiled()) return compile_text(report, log_max_chars);
    return error_line(report, log_max_chars);
  }
  const VerifySection& v = *report.verify;
  if (v.passed && report.verdict != Verdict::fail) {
    os << "verify: passed (" << v.trials_run << " trials with fresh inputs)\n";
  } else {
    os << "verify: FAILED";
    if (v.failed_trial) os << " in trial " << *v.failed_trial;
    os << (v.reason.empty() ? "" : ": " + v.reason) << "\n";
  }
  if (!v.inputs_modified.empty()) os << "  inputs modified by the candidate: " << Json(v.inputs_modified).dump() << "\n";
  for (const auto& o : v.outputs) {
    os << "  output " << o.name << ": max abs error " << sci(o.max_abs_error) << ", max rel error " << sci(o.max_rel_error) << ", "
       << o.mismatches << " of " << o.numel << " elements out of tolerance, " << o.unwritten << " never written\n";
    for (const auto& e : o.examples)
      os << "    at " << e.index.dump() << ": yours " << e.candidate.dump() << ", reference " << e.reference.dump() << "\n";
  }
  if (report.shapes) shapes_text(os, *report.shapes);
  if (report.verdict == Verdict::error) os << error_line(report, log_max_chars);
  return os.str();
}

std::string timing_text(const EvalReport& report, const Baselines& baselines) {
  if (!report.timing) return "timing: not measured\n";
  const TimingSection& t = *report.timing;
  std::ostringstream os;
  double cand = t.candidate.median, eager = t.reference.median;
  os << "timing (median per call, L2 flushed): yours " << fixed(cand, 4) << " ms (n " << t.candidate.n << "), eager PyTorch "
     << fixed(eager, 4) << " ms (n " << t.reference.n << ")\n";
  os << "  speedup over eager: " << interval(t.speedup) << "\n";
  if (baselines.compile_ms && baselines.eager_ms && *baselines.eager_ms > 0 && eager > 0 && cand > 0) {
    double compile_now = *baselines.compile_ms * eager / *baselines.eager_ms;
    os << "  torch.compile (stored " << fixed(*baselines.compile_ms, 4) << " ms beside eager " << fixed(*baselines.eager_ms, 4)
       << " ms, rescaled to now): " << fixed(compile_now, 4) << " ms; speedup over torch.compile " << fixed(compile_now / cand, 3) << "x\n";
  } else if (baselines.compile_ms) {
    os << "  torch.compile: stored " << fixed(*baselines.compile_ms, 4) << " ms but no eager time beside it to rescale it by\n";
  } else {
    os << "  torch.compile: this task stores no torch.compile time\n";
  }
  return os.str();
}

std::string profile_text(const EvalReport& report, const std::string& counters_note) {
  if (!report.profile) return "profiling unavailable (the evaluator reported no kernel profile)\n";
  const ProfileSection& p = *report.profile;
  if (p.unavailable && p.kernels.empty()) return "profiling unavailable: " + *p.unavailable + "\n";
  std::ostringstream os;
  os << "profile:\n";
  for (const auto& k : p.kernels)
    os << "  kernel " << k.name << ": " << fixed(static_cast<double>(k.duration_ns) / 1e6, 4) << " ms, grid " << dims3(k.grid) << ", block "
       << dims3(k.block) << ", " << k.registers << " registers, " << k.shared_bytes << " B shared memory, occupancy "
       << fixed(k.occupancy * 100, 0) << " %, stream " << k.stream << "\n";
  if (p.achieved && p.ceilings) {
    const ProfileAchieved& a = *p.achieved;
    const ProfileCeilings& ceil = *p.ceilings;
    os << "  achieved: " << fixed(a.gbps, 1) << " GB/s";
    if (ceil.dram_gbps > 0) os << " of " << fixed(ceil.dram_gbps, 0) << " GB/s DRAM (" << fixed(100 * a.gbps / ceil.dram_gbps, 1) << " %)";
    if (a.tflops) {
      os << ", " << fixed(*a.tflops, 2) << " TFLOP/s";
      if (ceil.fp32_tflops > 0)
        os << " of " << fixed(ceil.fp32_tflops, 1) << " FP32 TFLOP/s (" << fixed(100 * *a.tflops / ceil.fp32_tflops, 1) << " %)";
    }
    os << "\n";
  }
  if (p.ceilings) {
    const ProfileCeilings& c = *p.ceilings;
    // In the JSON's (alphabetical) order, as the policy has always read them.
    os << "  ceilings measured on this GPU: dram_gbps " << fixed(c.dram_gbps, 1) << " fp16_tflops " << fixed(c.fp16_tflops, 1)
       << " fp32_tflops " << fixed(c.fp32_tflops, 1) << " method " << Json(c.method).dump() << " tf32_tflops " << fixed(c.tf32_tflops, 1)
       << "\n";
  }
  if (counters_note.empty())
    counters_text(os, p.counters);
  else
    os << "  hardware counters: " << counters_note << "\n";
  return os.str();
}

std::string reward_text(const RewardResult& r) {
  std::ostringstream os;
  const auto& e = r.evidence;
  os << "reward: " << r.value << " (" << r.rule << ")";
  if (e.contains("eager") && e["eager"].is_object()) {
    const auto& g = e["eager"];
    os << "\n  over eager: speedup " << fixed(g["speedup"].value("point", 0.0), 3) << "x, CI " << fixed(g["speedup"].value("lo", 0.0), 3)
       << " - " << fixed(g["speedup"].value("hi", 0.0), 3) << "; decided on " << fixed(g.value("statistic", 0.0), 3) << " > "
       << g.value("threshold", 0.0) << ": " << (g.value("beats", false) ? "yes" : "no");
  }
  if (e.contains("torch_compile") && e["torch_compile"].is_object()) {
    const auto& c = e["torch_compile"];
    if (c.contains("speedup"))
      os << "\n  over torch.compile: speedup " << fixed(c["speedup"].value("point", 0.0), 3) << "x; decided on "
         << fixed(c.value("statistic", 0.0), 3) << " > " << c.value("threshold", 0.0) << ": " << (c.value("beats", false) ? "yes" : "no");
    if (c.contains("why")) os << "\n  torch.compile: " << c.value("why", std::string()) << " (" << c.value("policy", std::string()) << ")";
  }
  if (e.contains("why") && e["why"].is_string()) os << "\n  " << e["why"].get<std::string>();
  if (e.contains("check") && e["check"].is_string()) os << "\n  caught by the anti-cheat check '" << e["check"].get<std::string>() << "'";
  if (e.contains("last") && e["last"].is_object() && e.contains("version") && e["version"].is_number())
    os << "\n  the reward of v" << e["version"].get<int>() << ", the best verified version (history.reward_from: best_verified); the "
       << (e["last"].value("rule", std::string()) == "no_submission" ? "episode's own" : "submission's own") << " was "
       << e["last"].value("reward", 0.0) << " (" << e["last"].value("rule", std::string()) << ")";
  os << "\n" << confirmation_text(r);
  return os.str();
}

std::string confirmation_text(const RewardResult& r) {
  if (!r.evidence.contains("confirmation")) return "";
  const auto& c = r.evidence["confirmation"];
  std::ostringstream os;
  os << "  v" << c.value("version", 0) << ", the best verified version (" << c["selected"].value("rule", std::string()) << ", "
     << c["selected"].value("reward", 0.0) << "), ";
  if (c.value("ran", false))
    os << "was judged again as a submission: " << c.value("rule", std::string()) << " (" << c.value("reward", 0.0)
       << "); the lower of the two counts, and a catch is the cheating penalty\n";
  else
    os << "could not be judged again (" << c.value("why", std::string()) << "), so it gives no reward\n";
  return os.str();
}

}  // namespace kforge
