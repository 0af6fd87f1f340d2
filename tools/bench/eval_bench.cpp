// Benchmarks of the evaluation core on a GPU host, printing figures and writing one JSON result.
//
//   kforge_eval_bench overhead --out FILE [--repeats N]
//       For every shipped correct candidate: verify-only requests (5 trials) in a warm evaluator.
//       verify_overhead_ms = the request's wall time minus the GPU time of the candidate's and the
//       reference's kernels in it (so it includes the harness's own GPU work: draws, poisoning,
//       fingerprints, comparisons); verify_harness_gpu_ms = that harness GPU work alone (event
//       spans); verify_host_overhead_ms = the wall time minus all of those GPU spans (what the host
//       adds); verify_protocol_ms = the wall time minus the worker's own time (pipes, msgpack).
//       One row per request, with the harness GPU time split by stage (draw, member transform,
//       fingerprints, poison, the reference's input copy, compare; summed over the request's calls).
//       verify_harness_over_kernels = all requests' harness GPU time over their kernels' (issue 31's
//       goal), and its median and largest over the tasks (_task_p50, _task_max).
//   kforge_eval_bench aa --task T --candidate DIR --out FILE [--runs 30] [--target-rse X]
//       [--address-pool N] [--prepare-ahead on|off]: the timing noise target, the number of buffer
//       sets and whether the next timed call is prepared ahead on a side stream, for side-by-side
//       runs. Every timed call draws from a member of the task's draw family (the slowest member
//       sets the speedup); --anticheat off times the declared draw alone.
//   kforge_eval_bench profile --out FILE [--counters on|off] [--metrics A,B,...]
//       For every shipped correct candidate, in a warm worker (ceilings measured by a first request):
//       profile_overhead_ms = the worker's wall time of the profile phase (one call on fresh
//       inputs with CUPTI activity on, records read, occupancy computed) minus the GPU time of the
//       candidate's kernels in it. Timing never runs with CUPTI on. With --counters on, the
//       profile also reads hardware counters (CUPTI range profiler: user replay, kernel replay
//       if that fails), as the environment's profile() does by default: profile_counters_passes
//       is the replay count. --metrics: those metrics (configs/env.yaml tools.profile_metrics)
//       instead of the default list.
//   kforge_eval_bench reference --tasks DIR [--device cpu|cuda] [--calls N] [--out FILE]
//       The TorchScript reference of imported tasks against the graph reference of the same ops
//       on the same shapes (relu, linear+relu, softmax): median per-call wall time
//       (tools/bench/reference_overhead.cpp; DIR from tests/data_synth/make_imported_tasks.py).
//   kforge_eval_bench sequential [--requests N] [--pairs P] [--out FILE]
//       The sequential stopping rule on the GPU (tools/bench/sequential_bench.cpp): long runs timed
//       as timing.h times, replayed through the rule; how many decisions differ, pairs needed.
//   kforge_eval_bench shapes --out FILE [--repeats N] [--large-bytes B1,B2] [--time on|off]
//       What a task's other shapes cost per verify, today's kinds and a `large` shape at each
//       budget, side by side on the sample tasks (tools/bench/shapes_bench.cpp).
//   All but reference and sequential take --anticheat on|off (default on): off turns every dynamic anti-cheat check off
//   (state trials, fresh inputs and a comparison around every timed call, scrubbing, the speed of
//   light), to measure what the checks cost. aa also reports the wall time per timing request.
//       One candidate timed in N separate requests: the spread of its median, and how often a
//       request's samples were judged more than 5 % faster than another's (CI lower bound > 1.05).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "configs/error.h"
#include "env/evaluator/evaluator.h"
#include "reward/speedup.h"
#include "reward/timing_stats.h"
#include "tests/env/evaluator/candidates.h"
#include "tests/env/evaluator/report_json.h"
#include "tools/bench/bench_result.h"
#include "tools/bench/reference_overhead.h"
#include "tools/bench/sequential_bench.h"
#include "tools/bench/shapes_bench.h"

using namespace kforge;
using kforge::bench::arg_value;
using kforge::bench::median;
using kforge::bench::write_result;

namespace {

// (max - min) / median of a list, in percent.
double spread_pct(const std::vector<double>& v) {
  return (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / median(v) * 100;
}

AnticheatConfig anticheat_from_args(int argc, char** argv) {
  AnticheatConfig a;
  std::string v = arg_value(argc, argv, "--anticheat", "on");
  KFORGE_CHECK(v == "on" || v == "off", usage, "--anticheat takes on or off");
  if (v == "off") {
    a.dynamic.state_checks = a.dynamic.verify_timed_calls = a.dynamic.scrub_reference = false;
    a.dynamic.kernel_activity = a.dynamic.speed_of_light = a.dynamic.robustness_draws = false;
  }
  // For side-by-side runs: the pool size.
  a.dynamic.address_pool = std::stoi(arg_value(argc, argv, "--address-pool", std::to_string(a.dynamic.address_pool)));
  return a;
}

// The harness's verification stages (env/judge/call_bench.h HarnessStage), as the report's phases name them.
const char* const kStages[] = {"draw", "member", "fingerprint", "poison", "reference_copy", "compare"};

int overhead(int argc, char** argv) {
  int repeats = std::stoi(arg_value(argc, argv, "--repeats", "5"));
  Evaluator ev(EvalConfig{});
  ev.set_anticheat(anticheat_from_args(argc, argv));
  std::vector<double> overhead_ms, host_ms, harness_ms, host_overhead_ms, calls;
  std::map<std::string, std::vector<double>> stage_ms;       // per request, summed over its calls
  std::map<std::string, std::pair<double, double>> by_task;  // task: harness GPU ms, kernels' ms, over its requests
  std::printf("%-24s %-10s %9s %11s %11s %11s %11s %9s %6s", "task", "candidate", "wall ms", "kernels ms", "overhead ms", "harness ms",
              "host ms", "pipes ms", "calls");
  for (const char* k : kStages) std::printf(" %9.9s", k);
  std::printf("\n");
  for (const auto& c : kforge::testing::shipped_candidates()) {
    if (c.verdict != "pass") continue;
    std::fprintf(stderr, "overhead: %s/%s\n", c.task.c_str(), c.name.c_str());
    TaskSpec task = load_task(kforge::testing::task_path(c.task));
    Candidate cand = Candidate::load(c.dir);
    EvalOptions opt;
    opt.trials = 5;
    opt.time = false;
    ev.evaluate(task, cand, opt);  // warm: compile cache, module, reference
    for (int i = 0; i < repeats; ++i) {
      Json r = to_json(ev.evaluate(task, cand, opt));
      if (report_verdict(r) != "pass") {
        std::printf("%s/%s: %s\n", c.task.c_str(), c.name.c_str(), report_verdict(r).c_str());
        break;
      }
      double wall = r["gpu_request_wall_ms"].get<double>();
      const Json& p = r["phases"];
      double kernels = p["verify_candidate_gpu_ms"].get<double>() + p["verify_reference_gpu_ms"].get<double>();
      double worker = p["worker_ms"].get<double>();
      double harness = p.value("verify_harness_gpu_ms", 0.0);
      overhead_ms.push_back(wall - kernels);
      host_ms.push_back(wall - worker);
      harness_ms.push_back(harness);
      host_overhead_ms.push_back(wall - kernels - harness);
      calls.push_back(p.value("verify_calls", 0.0));
      by_task[c.task].first += harness;
      by_task[c.task].second += kernels;
      std::printf("%-24s %-10s %9.2f %11.2f %11.2f %11.2f %11.2f %9.2f %6.0f", c.task.c_str(), c.name.c_str(), wall, kernels,
                  wall - kernels, harness, wall - kernels - harness, wall - worker, calls.back());
      for (const char* k : kStages) {
        stage_ms[k].push_back(p.value(std::string("verify_harness_") + k + "_ms", 0.0));
        std::printf(" %9.2f", stage_ms[k].back());
      }
      std::printf("\n");
    }
  }
  KFORGE_CHECK(!overhead_ms.empty(), runtime, "no verify ran");
  auto q = [](std::vector<double> v, double at) {
    std::sort(v.begin(), v.end());
    return quantile_sorted(v, at);
  };
  auto p50 = [&](const std::vector<double>& v) { return q(v, 0.5); };
  auto p95 = [&](const std::vector<double>& v) { return q(v, 0.95); };
  Json fig = {{"verify_overhead_ms_p50", p50(overhead_ms)},
              {"verify_overhead_ms_p95", p95(overhead_ms)},
              {"verify_harness_gpu_ms_p50", p50(harness_ms)},
              {"verify_harness_gpu_ms_p95", p95(harness_ms)},
              {"verify_host_overhead_ms_p50", p50(host_overhead_ms)},
              {"verify_host_overhead_ms_p95", p95(host_overhead_ms)},
              {"verify_protocol_ms_p50", p50(host_ms)},
              {"verify_protocol_ms_p95", p95(host_ms)},
              {"verify_calls_p50", p50(calls)},
              {"verify_requests_count", overhead_ms.size()}};
  for (const char* k : kStages) fig[std::string("verify_harness_") + k + "_ms_p50"] = p50(stage_ms[k]);
  // The harness's GPU work over the kernels' own time (issue 31's goal): over every request, and
  // per task (memory-bound tasks sit far above compute-bound ones: the page of session 31).
  double all_h = 0, all_k = 0;
  std::vector<double> task_ratio;
  for (const auto& [task, hk] : by_task) {
    all_h += hk.first;
    all_k += hk.second;
    if (hk.second > 0) task_ratio.push_back(hk.first / hk.second);
  }
  if (all_k > 0) fig["verify_harness_over_kernels"] = all_h / all_k;
  if (!task_ratio.empty()) {
    fig["verify_harness_over_kernels_task_p50"] = p50(task_ratio);
    fig["verify_harness_over_kernels_task_max"] = *std::max_element(task_ratio.begin(), task_ratio.end());
  }
  std::cout << fig.dump(2) << "\n";
  write_result(
      arg_value(argc, argv, "--out", "eval_overhead.json"), ev.gpu_worker().hello()["device"],
      "kforge_eval_bench overhead --repeats " + std::to_string(repeats) + " --anticheat " + arg_value(argc, argv, "--anticheat", "on"),
      fig);
  return 0;
}

int profile(int argc, char** argv) {
  Evaluator ev(EvalConfig{});
  ev.set_anticheat(anticheat_from_args(argc, argv));
  std::string cv = arg_value(argc, argv, "--counters", "off");
  KFORGE_CHECK(cv == "on" || cv == "off", usage, "--counters takes on or off");
  const bool counters = cv == "on";
  std::vector<std::string> metrics;
  for (std::string rest = arg_value(argc, argv, "--metrics", ""); !rest.empty();) {
    size_t comma = rest.find(',');
    metrics.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  KFORGE_CHECK(metrics.empty() || counters, usage, "--metrics needs --counters on");
  std::vector<double> over;
  int passes = 0;
  std::map<std::string, std::vector<double>> counter_ms;  // the counters' wall time by part
  std::printf("%-24s %-10s %11s %11s %12s\n", "task", "candidate", "profile ms", "kernels ms", "overhead ms");
  bool warm = false;
  for (const auto& c : kforge::testing::shipped_candidates()) {
    if (c.verdict != "pass") continue;
    TaskSpec task = load_task(kforge::testing::task_path(c.task));
    Candidate cand = Candidate::load(c.dir);
    EvalOptions opt;
    opt.trials = 1;
    opt.time = false;
    opt.profile = true;
    opt.counters = counters;
    opt.counter_metrics = metrics;
    if (!warm) {
      ev.evaluate(task, cand, opt);  // the first profile measures the device's ceilings
      warm = true;
    }
    Json r = to_json(ev.evaluate(task, cand, opt));
    KFORGE_CHECK(report_verdict(r) == "pass" && r["profile"].is_object(), runtime, c.dir << ": " << format_report(r));
    double prof_ms = r["phases"]["profile_ms"].get<double>();
    double kern_ms = r["profile"]["kernel_time_ns"].get<double>() / 1e6;
    over.push_back(prof_ms - kern_ms);
    if (counters) {
      const Json& c = r["profile"]["counters"];
      KFORGE_CHECK(c.is_object() && (c.contains("kernels") || c.contains("unavailable")), runtime, c.dump());
      if (c.contains("unavailable")) std::printf("  counters unavailable: %s\n", c["unavailable"].dump().c_str());
      passes = std::max(passes, c.value("passes", 0));
      if (c.contains("ms"))
        for (const char* k : {"setup", "collect", "evaluate"}) counter_ms[k].push_back(c["ms"].value(k, 0.0));
    }
    std::printf("%-24s %-10s %11.2f %11.3f %12.2f\n", c.task.c_str(), c.name.c_str(), prof_ms, kern_ms, prof_ms - kern_ms);
  }
  std::sort(over.begin(), over.end());
  Json fig = {{"profile_overhead_ms_p50", quantile_sorted(over, 0.5)},
              {"profile_overhead_ms_p95", quantile_sorted(over, 0.95)},
              {"profile_requests_count", over.size()}};
  if (counters) fig["profile_counters_passes"] = passes;
  for (auto& [k, v] : counter_ms) {
    std::sort(v.begin(), v.end());
    fig["counters_" + k + "_ms_p50"] = quantile_sorted(v, 0.5);
  }
  std::cout << fig.dump(2) << "\n";
  write_result(
      arg_value(argc, argv, "--out", "eval_profile.json"), ev.gpu_worker().hello()["device"],
      "kforge_eval_bench profile --counters " + cv + (metrics.empty() ? "" : " --metrics " + arg_value(argc, argv, "--metrics", "")), fig);
  return 0;
}

int aa(int argc, char** argv) {
  int runs = std::stoi(arg_value(argc, argv, "--runs", "30"));
  std::string task_name = arg_value(argc, argv, "--task", "");
  std::string dir = arg_value(argc, argv, "--candidate", "");
  TaskSpec task = load_task(kforge::testing::task_path(task_name));
  Candidate cand = Candidate::load(dir);
  EvalConfig cfg;
  // For side-by-side runs: the stopping rule's noise target (configs/eval.yaml's timing.target_rse).
  cfg.timing.target_rse = std::stod(arg_value(argc, argv, "--target-rse", std::to_string(cfg.timing.target_rse)));
  // The next timed call prepared ahead on a side stream (configs/eval.yaml timing.prepare_ahead).
  const std::string ahead = arg_value(argc, argv, "--prepare-ahead", "on");
  KFORGE_CHECK(ahead == "on" || ahead == "off", spec, "--prepare-ahead takes on or off, not '" << ahead << "'");
  cfg.timing.prepare_ahead = ahead == "on";
  Evaluator ev(cfg);
  ev.set_anticheat(anticheat_from_args(argc, argv));
  std::vector<double> medians, ref_medians, speedups, walls, checks_per_pair, counted;
  std::map<std::string, std::vector<double>> stage_per_pair;
  std::vector<std::vector<double>> samples;
  for (int i = 0; i < runs; ++i) {
    EvalOptions opt;
    opt.trials = 1;
    Json r = to_json(ev.evaluate(task, cand, opt));
    KFORGE_CHECK(report_verdict(r) == "pass", runtime, "A/A run " << i << ": " << format_report(r));
    medians.push_back(r["timing"]["candidate"]["median_ms"].get<double>());
    ref_medians.push_back(r["timing"]["reference"]["median_ms"].get<double>());
    speedups.push_back(r["timing"]["speedup"]["point"].get<double>());
    if (r.contains("phases") && r["phases"].contains("timed_checks_ms_per_pair"))
      checks_per_pair.push_back(r["phases"]["timed_checks_ms_per_pair"].get<double>());
    walls.push_back(r["gpu_request_wall_ms"].get<double>());
    samples.push_back(r["timing"]["candidate_samples_ms"].get<std::vector<double>>());
    counted.push_back(static_cast<double>(samples.back().size()));
    // The timed calls' checks by stage, per counted pair (the warm-up's calls are in the sums).
    if (r.contains("phases"))
      for (const auto& [k, v] : r["phases"].items())
        if (k.rfind("timed_harness_", 0) == 0 && v.is_number())
          stage_per_pair[k].push_back(v.get<double>() / std::max(1.0, counted.back()));
    std::printf("run %2d: median %.4f ms (n %d), reference %.4f ms, speedup %.4f\n", i, medians.back(),
                static_cast<int>(samples.back().size()), ref_medians.back(), speedups.back());
  }
  double m = median(medians);
  double lo = *std::min_element(medians.begin(), medians.end()), hi = *std::max_element(medians.begin(), medians.end());
  int judged_faster = 0, pairs = 0;
  for (size_t i = 0; i < samples.size(); ++i)
    for (size_t j = 0; j < samples.size(); ++j) {
      if (i == j) continue;
      ++pairs;
      // "samples[i] faster than samples[j] by more than 5 %": the CI lower bound of ref/cand.
      if (estimate_speedup(samples[i], samples[j]).lo > 1.05) ++judged_faster;
    }
  Json fig = {{"aa_runs_count", runs},
              {"aa_median_ms", m},
              {"aa_median_spread_pct", spread_pct(medians)},
              {"aa_median_max_dev_pct", std::max(hi - m, m - lo) / m * 100},
              {"aa_pairs_count", pairs},
              {"aa_judged_5pct_faster_count", judged_faster},
              {"timing_request_wall_ms_p50", median(walls)},
              {"timed_pairs_counted_p50", median(counted)},
              // The same spread for what the reward reads: the reference timed interleaved with the
              // candidate, and their ratio (drift that hits both calls of a pair cancels in it).
              {"aa_reference_median_spread_pct", spread_pct(ref_medians)},
              {"aa_speedup_spread_pct", spread_pct(speedups)}};
  // What preparing and checking each timed pair costs (the time stage less the timed calls).
  if (!checks_per_pair.empty()) fig["timed_checks_ms_per_pair_p50"] = median(checks_per_pair);
  for (const auto& [k, v] : stage_per_pair) fig[k + "_per_pair_p50"] = median(v);
  std::cout << fig.dump(2) << "\n";
  write_result(arg_value(argc, argv, "--out", "eval_aa.json"), ev.gpu_worker().hello()["device"],
               "kforge_eval_bench aa --task " + task_name + " --candidate " + dir + " --runs " + std::to_string(runs) + " --anticheat " +
                   arg_value(argc, argv, "--anticheat", "on") + " --address-pool " + arg_value(argc, argv, "--address-pool", "3") +
                   " --target-rse " + arg_value(argc, argv, "--target-rse", std::to_string(cfg.timing.target_rse)) + " --prepare-ahead " +
                   ahead,
               fig);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress reaches a log even if the run is killed
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "overhead") return overhead(argc, argv);
    if (mode == "aa") return aa(argc, argv);
    if (mode == "profile") return profile(argc, argv);
    if (mode == "reference") return kforge::bench::reference_overhead(argc, argv);
    if (mode == "sequential") return kforge::bench::sequential(argc, argv);
    if (mode == "shapes") return kforge::bench::shapes(argc, argv);
    std::cerr << "usage: kforge_eval_bench overhead|aa|profile|reference|sequential|shapes [options] (see the header of "
                 "tools/bench/eval_bench.cpp)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kforge_eval_bench: " << e.what() << "\n";
    return 1;
  }
}
