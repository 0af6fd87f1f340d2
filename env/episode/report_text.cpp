#include "env/episode/report_text.h"

#include <iomanip>
#include <sstream>

#include "env/episode/observation.h"

namespace kforge {

namespace {

bool is_obj(const Json& j, const char* key) { return j.is_object() && j.contains(key) && j[key].is_object(); }

double num(const Json& j, const char* key, double fallback = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

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

std::string dims3(const Json& j) {
  if (!j.is_array()) return "?";
  std::string s = "[";
  for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + j[i].dump();
  return s + "]";
}

std::string error_line(const Json& report, size_t log_max_chars) {
  const Json& e = report.contains("error") ? report["error"] : Json();
  if (!e.is_object()) return "error: the evaluation failed without a reason\n";
  return "error (" + str(e, "kind") + "): " + trim_middle(str(e, "message"), log_max_chars) + "\n";
}

std::string cheat_line(const Json& report) {
  const Json& a = is_obj(report, "anticheat") ? report["anticheat"] : Json::object();
  std::string check = str(a, "check");
  return "cheat: refused by the anti-cheat check '" + (check.empty() ? std::string("?") : check) + "'" +
         (str(a, "message").empty() ? "" : ": " + str(a, "message")) + "\n";
}

std::string interval(const Json& sp) {
  return fixed(num(sp, "point"), 3) + "x (" + fixed(num(sp, "confidence", 0.95) * 100, 0) + " % CI " + fixed(num(sp, "lo"), 3) +
         " - " + fixed(num(sp, "hi"), 3) + ")";
}

}  // namespace

std::string compile_text(const Json& report, size_t log_max_chars) {
  std::ostringstream os;
  // The static anti-cheat scan runs before the compiler.
  if (report.value("verdict", std::string()) == "cheat" || (is_obj(report, "anticheat") && str(report["anticheat"], "verdict") == "cheat"))
    return "compile: refused before compiling\n" + cheat_line(report);
  const Json& c = is_obj(report, "compile") ? report["compile"] : Json::object();
  bool ok = c.value("ok", false);
  if (!ok || (report.contains("error") && report["error"].is_object() && !is_obj(report, "plan"))) {
    os << "compile: FAILED\n" << error_line(report, log_max_chars);
    return os.str();
  }
  os << "compile: ok (" << str(c, "arch") << ", " << fixed(num(c, "compile_ms", num(c, "wall_ms")), 1) << " ms"
     << (c.value("cache_hit", false) ? ", cached" : "") << ")\n";
  if (c.contains("resources") && c["resources"].is_array())
    for (const auto& k : c["resources"])
      os << "  kernel " << str(k, "name") << ": " << num(k, "registers") << " registers, " << num(k, "static_shared_bytes")
         << " B static shared memory, " << num(k, "local_bytes") << " B local memory, spills " << num(k, "spill_store_bytes") << "/"
         << num(k, "spill_load_bytes") << " B (store/load)"
         << (num(k, "max_threads_per_block") > 0 ? ", max " + fixed(num(k, "max_threads_per_block"), 0) + " threads per block" : std::string())
         << "\n";
  std::string log = str(c, "log");
  if (!log.empty()) os << "compiler output:\n" << trim_middle(log, log_max_chars) << (log.back() == '\n' ? "" : "\n");
  if (is_obj(report, "plan"))
    os << "launch plan: " << num(report["plan"], "launches") << " launch(es), " << num(report["plan"], "workspace_bytes")
       << " B of workspace\n";
  return os.str();
}

std::string verify_text(const Json& report, size_t log_max_chars) {
  std::ostringstream os;
  std::string verdict = report.value("verdict", std::string("error"));
  bool cheat = verdict == "cheat" || (is_obj(report, "anticheat") && str(report["anticheat"], "verdict") == "cheat");
  if (cheat) return cheat_line(report);
  if (!is_obj(report, "verify")) {
    // Stopped before verifying: at the compile or plan stage, or before the candidate was reached.
    if (is_obj(report, "compile") && (!report["compile"].value("ok", false) || !is_obj(report, "plan"))) return compile_text(report, log_max_chars);
    return error_line(report, log_max_chars);
  }
  const Json& v = report["verify"];
  if (v.value("passed", false) && verdict != "fail") {
    os << "verify: passed (" << num(v, "trials_run") << " trials with fresh inputs)\n";
  } else {
    os << "verify: FAILED";
    if (v.contains("failed_trial") && !v["failed_trial"].is_null()) os << " in trial " << v["failed_trial"].dump();
    std::string reason = str(v, "reason");
    os << (reason.empty() ? "" : ": " + reason) << "\n";
  }
  if (v.contains("inputs_modified") && v["inputs_modified"].is_array() && !v["inputs_modified"].empty())
    os << "  inputs modified by the candidate: " << v["inputs_modified"].dump() << "\n";
  if (v.contains("outputs") && v["outputs"].is_array())
    for (const auto& o : v["outputs"]) {
      os << "  output " << str(o, "name") << ": max abs error " << sci(num(o, "max_abs_error")) << ", max rel error "
         << sci(num(o, "max_rel_error")) << ", " << num(o, "mismatches") << " of " << num(o, "numel") << " elements out of tolerance, "
         << num(o, "unwritten") << " never written\n";
      if (o.contains("examples") && o["examples"].is_array())
        for (const auto& e : o["examples"])
          os << "    at " << (e.contains("index") ? e["index"].dump() : "?") << ": yours " << (e.contains("candidate") ? e["candidate"].dump() : "?")
             << ", reference " << (e.contains("reference") ? e["reference"].dump() : "?") << "\n";
    }
  if (verdict == "error") os << error_line(report, log_max_chars);
  return os.str();
}

std::string timing_text(const Json& report, const Baselines& baselines) {
  if (!is_obj(report, "timing")) return "timing: not measured\n";
  const Json& t = report["timing"];
  std::ostringstream os;
  double cand = num(t["candidate"], "median_ms"), eager = num(t["reference"], "median_ms");
  os << "timing (median per call, L2 flushed): yours " << fixed(cand, 4) << " ms (n " << num(t["candidate"], "n") << "), eager PyTorch "
     << fixed(eager, 4) << " ms (n " << num(t["reference"], "n") << ")\n";
  if (is_obj(t, "speedup")) os << "  speedup over eager: " << interval(t["speedup"]) << "\n";
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

std::string profile_text(const Json& report) {
  if (!is_obj(report, "profile")) return "profiling unavailable (the evaluator reported no kernel profile)\n";
  const Json& p = report["profile"];
  std::ostringstream os;
  if (p.contains("unavailable") && !p.contains("kernels"))
    return "profiling unavailable: " + (p["unavailable"].is_string() ? p["unavailable"].get<std::string>() : p["unavailable"].dump()) + "\n";
  os << "profile:\n";
  if (p.contains("kernels") && p["kernels"].is_array()) {
    for (const auto& k : p["kernels"]) {
      os << "  kernel " << str(k, "name") << ": " << fixed(num(k, "duration_ns") / 1e6, 4) << " ms, grid " << dims3(k.value("grid", Json()))
         << ", block " << dims3(k.value("block", Json())) << ", " << num(k, "registers") << " registers, " << num(k, "shared_bytes")
         << " B shared memory";
      if (k.contains("occupancy") && k["occupancy"].is_number()) os << ", occupancy " << fixed(k["occupancy"].get<double>() * 100, 0) << " %";
      if (k.contains("stream")) os << ", stream " << k["stream"].dump();
      os << "\n";
    }
  }
  const Json& ceil = is_obj(p, "ceilings") ? p["ceilings"] : Json::object();
  if (is_obj(p, "achieved")) {
    const Json& a = p["achieved"];
    os << "  achieved: ";
    if (a.contains("gbps")) {
      os << fixed(num(a, "gbps"), 1) << " GB/s";
      if (num(ceil, "dram_gbps") > 0) os << " of " << fixed(num(ceil, "dram_gbps"), 0) << " GB/s DRAM (" << fixed(100 * num(a, "gbps") / num(ceil, "dram_gbps"), 1) << " %)";
    }
    if (a.contains("tflops")) {
      os << (a.contains("gbps") ? ", " : "") << fixed(num(a, "tflops"), 2) << " TFLOP/s";
      if (num(ceil, "fp32_tflops") > 0)
        os << " of " << fixed(num(ceil, "fp32_tflops"), 1) << " FP32 TFLOP/s (" << fixed(100 * num(a, "tflops") / num(ceil, "fp32_tflops"), 1) << " %)";
    }
    os << "\n";
  }
  if (!ceil.empty()) {
    os << "  ceilings measured on this GPU:";
    for (const auto& [k, v] : ceil.items()) os << " " << k << " " << (v.is_number() ? fixed(v.get<double>(), 1) : v.dump());
    os << "\n";
  }
  if (is_obj(p, "counters") && p["counters"].contains("unavailable")) {
    const Json& u = p["counters"]["unavailable"];
    os << "  hardware counters unavailable: " << (u.is_string() ? u.get<std::string>() : u.dump()) << "\n";
  } else if (is_obj(p, "counters") && p["counters"].contains("kernels") && p["counters"]["kernels"].is_array()) {
    // The range profiler's values, one line per kernel (worker's gpu_worker.cpp, kernel_counters.h).
    const Json& c = p["counters"];
    os << "  hardware counters (" << c.value("passes", 0) << " replay pass(es)):\n";
    for (const auto& k : c["kernels"]) {
      os << "    " << k.value("range", std::string("kernel")) << ":";
      if (k.contains("metrics") && k["metrics"].is_object())
        for (const auto& [m, v] : k["metrics"].items()) os << " " << m << " " << (v.is_number() ? fixed(v.get<double>(), 1) : v.dump());
      os << "\n";
    }
  } else if (p.contains("counters") && p["counters"].is_object() && !p["counters"].empty()) {
    os << "  counters:";
    for (const auto& [k, v] : p["counters"].items()) os << " " << k << "=" << v.dump();
    os << "\n";
  } else if (p.contains("unavailable")) {
    os << "  hardware counters unavailable: " << (p["unavailable"].is_string() ? p["unavailable"].get<std::string>() : p["unavailable"].dump()) << "\n";
  }
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
  os << "\n";
  return os.str();
}

}  // namespace kforge
