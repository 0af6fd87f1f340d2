#include "env/judge/evaluator.h"

#include "env/gpu/gpu_request.h"

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "configs/checked_file.h"
#include "configs/error.h"
#include "env/process/clock.h"
#include "env/judge/kernel_signature.h"
#include "env/judge/launch_plan.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

const char* wire_kind(ResolvedArg::Kind k) {
  switch (k) {
    case ResolvedArg::buffer: return "buffer";
    case ResolvedArg::i32: return "i32";
    case ResolvedArg::u32: return "u32";
    case ResolvedArg::i64: return "i64";
    case ResolvedArg::u64: return "u64";
    case ResolvedArg::f32: return "f32";
    case ResolvedArg::f64: return "f64";
  }
  return "?";
}

// The resolved plan as the GPU worker reads it (gpu_worker.cpp parse_plan).
Json plan_to_wire(const ResolvedPlan& p) {
  Json ws = Json::array();
  for (const auto& w : p.workspace)
    ws.push_back({{"name", w.name}, {"dtype", dtype_name(w.dtype)}, {"elements", w.elements}, {"zero", w.zero}});
  Json launches = Json::array();
  for (const auto& l : p.launches) {
    Json args = Json::array();
    for (const auto& a : l.args) {
      if (a.kind == ResolvedArg::buffer) {
        const char* role = a.ref.role == BufferRole::output ? "output" : a.ref.role == BufferRole::workspace ? "workspace" : "argument";
        args.push_back({{"kind", role}, {"index", a.ref.index}});
      } else if (a.kind == ResolvedArg::f32 || a.kind == ResolvedArg::f64) {
        args.push_back({{"kind", wire_kind(a.kind)}, {"value", a.f}});
      } else {
        args.push_back({{"kind", wire_kind(a.kind)}, {"value", a.i}});
      }
    }
    launches.push_back({{"kernel", l.kernel},
                        {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                        {"block", {l.block[0], l.block[1], l.block[2]}},
                        {"shared_mem", l.shared_mem},
                        {"args", args},
                        {"where", l.where}});
  }
  return {{"workspace", ws}, {"launches", launches}};
}

DeviceLimits limits_from_hello(const Json& device) {
  DeviceLimits l;
  if (device.is_null()) return l;
  l.max_threads_per_block = device.value("max_threads_per_block", l.max_threads_per_block);
  for (int d = 0; d < 3; ++d) {
    l.max_block_dim[d] = device["max_block_dim"][d].get<int>();
    l.max_grid_dim[d] = device["max_grid_dim"][d].get<int64_t>();
  }
  l.max_dynamic_shared_bytes = device.value("max_dynamic_shared_bytes", l.max_dynamic_shared_bytes);
  return l;
}

Json error_json(const std::string& kind, const std::string& message) { return {{"kind", kind}, {"message", message}}; }

}  // namespace

Candidate Candidate::load(const std::string& dir) {
  KFORGE_CHECK(fs::is_directory(dir), io, dir << ": no such candidate directory");
  Candidate c;
  c.dir = dir;
  c.source = read_untrusted_file((fs::path(dir) / "kernel.cu").string(), kMaxFileBytes, "the candidate file");
  c.plan_text = read_untrusted_file((fs::path(dir) / "launch.yaml").string(), kMaxFileBytes, "the candidate file");
  return c;
}

Evaluator::Evaluator(EvalConfig config, int device, std::string compile_worker, std::string gpu_worker)
    : config_(std::move(config)) {
  if (compile_worker.empty()) compile_worker = find_worker_executable("kforge-compile-worker");
  if (gpu_worker.empty()) gpu_worker = find_worker_executable("kforge-worker");
  const WorkerConfig& w = config_.worker;
  std::string seccomp = w.seccomp ? "1" : "0";
  std::vector<std::string> compile_args = {"--mode", "compile", "--seccomp", seccomp};
  if (!w.compile_cache_dir.empty()) compile_args.insert(compile_args.end(), {"--cache-dir", w.compile_cache_dir});
  WorkerSpawn cs{compile_worker, compile_args, {}, w.max_file_bytes, w.max_open_files, w.compile_address_space_bytes,
                 w.start_timeout_s};
  WorkerSpawn gs{gpu_worker, {"--mode", "gpu", "--device", std::to_string(device), "--seccomp", seccomp},
                 {{"CUDA_CACHE_DISABLE", "1"}}, w.max_file_bytes, w.max_open_files, 0, w.start_timeout_s};
  compile_ = std::make_unique<WorkerProcess>(cs);
  gpu_ = std::make_unique<WorkerProcess>(gs);
}

Evaluator::~Evaluator() = default;

Json Evaluator::front_stages(const TaskSpec& task, const Candidate& cand, const std::string& arch, Json& gpu_plan,
                             std::string& cubin_hash, std::vector<uint8_t>& cubin) {
  Json report = {{"schema", "kforge.eval/1"}, {"task", task.id}, {"candidate", cand.dir}, {"verdict", "error"},
                 {"error", nullptr}, {"compile", nullptr}, {"plan", nullptr}, {"load", nullptr}, {"verify", nullptr},
                 {"timing", nullptr}};
  // The static anti-cheat scan, before anything is compiled.
  StaticReport st = run_static_checks(cand.source, cand.plan_text, anticheat_.static_checks);
  Json static_check = {{"name", "static"}, {"passed", st.passed}, {"message", ""}, {"evidence", {{"findings", Json::array()}}}};
  for (const CheckFinding& f : st.findings) {
    static_check["evidence"]["findings"].push_back({{"check", f.check}, {"line", f.line}, {"evidence", f.evidence}, {"message", f.message}});
    if (static_check["message"].get<std::string>().empty()) static_check["message"] = format_finding(f);
  }
  report["anticheat"] = anticheat_section({static_check});
  if (!st.passed) {
    report["verdict"] = "cheat";
    return report;
  }
  // The plan's syntax first: its compiler options are needed to compile.
  LaunchPlan plan;
  try {
    plan = LaunchPlan::parse(cand.plan_text, "launch.yaml");
  } catch (const Error& e) {
    report["error"] = error_json("compile_error", e.what());
    return report;
  }
  Json request = {{"type", "compile"},
                  {"source", cand.source},
                  {"options", {{"arch", arch}, {"use_fast_math", plan.options.use_fast_math}, {"maxrregcount", plan.options.maxrregcount}}}};
  WorkerReply r = compile_->call(request, config_.worker.compile_timeout_s);
  if (!r.ok) {
    std::string msg = r.error_kind == worker_error::timeout
                          ? "the compile did not finish within " + std::to_string(static_cast<int>(config_.worker.compile_timeout_s)) +
                                " s (compile_timeout_s); it was stopped"
                          : r.error_message;
    report["error"] = error_json(r.error_kind, msg);
    report["compile"] = {{"ok", false}, {"log", msg}, {"arch", arch}, {"wall_ms", r.wall_ms}};
    return report;
  }
  Json compile = r.body["compile"];
  compile["arch"] = arch;
  compile["wall_ms"] = r.wall_ms;
  report["compile"] = compile;
  if (!compile["ok"].get<bool>()) {
    report["error"] = error_json("compile_error", "the kernel does not compile:\n" + compile["log"].get<std::string>());
    return report;
  }
  try {
    ResolvedPlan resolved = resolve_plan(plan, task, parse_kernel_signatures(cand.source),
                                         limits_from_hello(gpu_->running() ? gpu_->hello().value("device", Json()) : Json()));
    gpu_plan = plan_to_wire(resolved);
    int64_t ws_bytes = 0;
    for (const auto& w : resolved.workspace) ws_bytes += w.elements * static_cast<int64_t>(dtype_size(w.dtype));
    report["plan"] = {{"launches", resolved.launches.size()}, {"workspace_bytes", ws_bytes}};
  } catch (const Error& e) {
    report["error"] = error_json("compile_error", e.what());
    return report;
  }
  cubin_hash = compile["hash"].get<std::string>();
  cubin = r.body["cubin"].get_binary();
  report["verdict"] = "pending";
  return report;
}

Json Evaluator::check(const TaskSpec& task, const Candidate& cand) {
  Json plan;
  std::string hash;
  std::vector<uint8_t> cubin;
  std::string arch = config_.worker.arch.empty() ? "sm_90a" : config_.worker.arch;
  Json report = front_stages(task, cand, arch, plan, hash, cubin);
  if (report["verdict"] == "pending") report["verdict"] = "checked";
  return report;
}

Json Evaluator::evaluate(const TaskSpec& task, const Candidate& cand, const EvalOptions& opt) {
  auto t0 = Clock::now();
  Json device;
  try {
    device = gpu_->hello().value("device", Json());
  } catch (const Error& e) {
    Json report = {{"schema", "kforge.eval/1"}, {"task", task.id}, {"candidate", cand.dir}, {"verdict", "error"},
                   {"error", error_json(worker_error::worker_crashed, e.what())}};
    return report;
  }
  std::string arch = !config_.worker.arch.empty() ? config_.worker.arch : device.value("arch", std::string("sm_90a"));
  Json plan;
  std::string hash;
  std::vector<uint8_t> cubin;
  Json report = front_stages(task, cand, arch, plan, hash, cubin);
  report["device"] = device;
  if (report["verdict"] != "pending") {
    report["wall_ms"] = ms_since(t0);
    return report;
  }
  GpuEvalRequest req;
  req.task_yaml = task_to_yaml(task);
  req.cubin = cubin;
  req.cubin_hash = hash + "/" + arch;
  req.plan = plan;
  req.max_workspace_bytes = config_.worker.max_workspace_bytes;
  req.verify = {opt.trials, opt.salt, config_.verify.report_mismatches, opt.probe_words};
  if (opt.time) req.time = config_.timing;
  req.profile = opt.profile;
  req.counters = opt.counters;
  req.counter_metrics = opt.counter_metrics;
  req.kernel_names = report["compile"].value("kernels", std::vector<std::string>{});
  req.anticheat = anticheat_.dynamic;
  const Json request = to_json(req);
  WorkerReply r = gpu_->call(request, config_.worker.request_timeout_s);
  if (r.ok) check_gpu_eval_reply_keys(r.body);
  report["gpu_request_wall_ms"] = r.wall_ms;
  for (const char* k : {"load", "verify", "timing", "profile", "phases"})
    if (r.body.contains(k)) report[k] = r.body[k];
  if (!r.ok) {
    std::string msg = r.error_message;
    if (r.error_kind == worker_error::timeout)
      msg = "the candidate did not finish within " + std::to_string(static_cast<int>(config_.worker.request_timeout_s)) +
            " s (request_timeout_s): a kernel that hangs; the GPU worker was killed and restarted";
    report["error"] = error_json(r.error_kind, msg);
    report["verdict"] = "error";
  } else if (!r.body["verify"]["passed"].get<bool>()) {
    report["verdict"] = "fail";
  } else if (r.body.contains("timing") && !r.body["timing"].value("outputs_right_after_timing", true)) {
    report["verdict"] = "fail";
    report["verify"]["reason"] = "outputs were wrong after timing";
  } else {
    report["verdict"] = "pass";
  }
  // The anti-cheat section: the static scan, then what the worker checked.
  std::vector<Json> checks = report["anticheat"]["checks"].get<std::vector<Json>>();
  if (r.body.contains("anticheat_checks"))
    for (const Json& c : r.body["anticheat_checks"]) checks.push_back(c);
  report["anticheat"] = anticheat_section(checks);
  // The verdict, by the one rule every reader applies (report_verdict).
  report["verdict"] = report_verdict(report);
  report["wall_ms"] = ms_since(t0);
  return report;
}

std::string report_verdict(const Json& report) {
  if (!report.is_object()) return "error";
  // A failed anti-cheat check makes it "cheat" whatever else happened, whoever wrote the report.
  if (report.contains("anticheat") && report["anticheat"].is_object() &&
      report["anticheat"].value("verdict", std::string()) == "cheat")
    return "cheat";
  return report.value("verdict", std::string("error"));
}

std::string format_report(const Json& r) {
  std::ostringstream os;
  os << std::fixed;
  os << "task " << r.value("task", "") << ", candidate " << r.value("candidate", "") << "\n";
  if (r.contains("device") && r["device"].is_object()) os << "device: " << r["device"].value("name", "") << " (" << r["device"].value("arch", "") << ")\n";
  const Json& c = r.contains("compile") ? r["compile"] : Json();
  if (c.is_object()) {
    os << "compile: " << (c.value("ok", false) ? "ok" : "FAILED") << std::setprecision(1) << " in " << c.value("compile_ms", c.value("wall_ms", 0.0))
       << " ms" << (c.value("cache_hit", false) ? " (cached)" : "") << ", " << c.value("arch", "") << "\n";
    if (c.contains("resources"))
      for (const auto& k : c["resources"])
        os << "  " << std::left << std::setw(24) << k.value("name", "") << std::right << " registers " << k.value("registers", 0)
           << ", static smem " << k.value("static_shared_bytes", 0) << " B, local " << k.value("local_bytes", 0)
           << " B, spills " << k.value("spill_store_bytes", 0) << "/" << k.value("spill_load_bytes", 0) << " B\n";
    std::string log = c.value("log", "");
    if (!log.empty() && !c.value("ok", false)) os << log << (log.back() == '\n' ? "" : "\n");
  }
  if (r.contains("load") && r["load"].is_object())
    for (const auto& k : r["load"]["kernels"])
      os << "  loaded " << k.value("name", "") << ": max threads per block " << k.value("max_threads_per_block", 0) << "\n";
  if (r.contains("verify") && r["verify"].is_object()) {
    const Json& v = r["verify"];
    os << "verify: " << (v.value("passed", false) ? "passed" : "FAILED") << " (" << v.value("trials_run", 0) << " trial(s))";
    if (!v.value("passed", false)) os << ": " << v.value("reason", "");
    os << "\n";
    if (v.contains("outputs"))
      for (const auto& o : v["outputs"]) {
        os << std::setprecision(3) << std::scientific << "  " << o.value("name", "") << ": max abs error " << o.value("max_abs_error", 0.0)
           << ", max rel error " << o.value("max_rel_error", 0.0) << std::fixed << ", mismatches " << o.value("mismatches", 0)
           << ", unwritten " << o.value("unwritten", 0) << "\n";
        for (const auto& e : o["examples"]) os << "    at " << e["index"].dump() << ": candidate " << e["candidate"].dump() << ", reference " << e["reference"].dump() << "\n";
      }
  }
  if (r.contains("timing") && r["timing"].is_object()) {
    const Json& t = r["timing"];
    auto row = [&](const char* name, const Json& s) {
      os << std::setprecision(4) << "  " << std::left << std::setw(10) << name << std::right << " median " << s.value("median_ms", 0.0)
         << " ms  mean " << s.value("mean_ms", 0.0) << "  std " << s.value("std_ms", 0.0) << "  min " << s.value("min_ms", 0.0)
         << "  p10 " << s.value("p10_ms", 0.0) << "  p90 " << s.value("p90_ms", 0.0) << "  n " << s.value("n", 0) << "\n";
    };
    os << "timing:\n";
    row("candidate", t["candidate"]);
    row("eager", t["reference"]);
    const Json& sp = t["speedup"];
    os << std::setprecision(3) << "  speedup over eager " << sp.value("point", 0.0) << "x (" << static_cast<int>(sp.value("confidence", 0.95) * 100)
       << "% CI " << sp.value("lo", 0.0) << " - " << sp.value("hi", 0.0) << ")\n";
    os << "  method: " << t.value("method", "") << "\n";
  }
  if (r.contains("anticheat") && r["anticheat"].is_object()) {
    const Json& a = r["anticheat"];
    os << "anti-cheat: " << a.value("verdict", "") << " (";
    bool first = true;
    for (const auto& c : a["checks"]) {
      os << (first ? "" : ", ") << c.value("name", "") << (c.value("passed", true) ? " ok" : " FAILED");
      first = false;
    }
    os << ")\n";
    if (a.value("verdict", "") == "cheat") os << "  " << a.value("check", "") << ": " << a.value("message", "") << "\n";
  }
  os << "verdict: " << report_verdict(r);
  if (r.contains("error") && r["error"].is_object()) os << " (" << r["error"].value("kind", "") << ": " << r["error"].value("message", "") << ")";
  os << "\n";
  return os.str();
}

}  // namespace kforge
