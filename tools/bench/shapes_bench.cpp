// kforge_eval_bench shapes: what a task's other shapes (issue 30, TaskSpec::extra_dims) cost per
// verify, side by side in one warm evaluator, on the shipped sample tasks with one passing
// candidate each (the first in name order whose plan is written over the task's dims).
//
//   kforge_eval_bench shapes --out FILE [--repeats N] [--large-bytes B1,B2,...] [--time on|off]
//
// Per task, interleaved N times: a verify without other shapes, with the shapes kforge synth draws
// today (odd, batch one, off by one, empty: ExtraShapeConfig's defaults, the empty check by the CPU
// reference), and with those plus a `large` shape at each --large-bytes budget (the largest batch
// whose footprint fits it; default 2e9,8e9,32e9). An arm whose verify fails there (out of memory,
// say) is reported as failed and left out. Prints each verify's median wall time and its ratio to
// the verify without, each shape trial's median wall time by kind, and the footprints; the record's
// figures give the same per task (TASK_ARM_...) and the medians over tasks. --time on makes each
// verify time the candidate too (as the episode's verify() does); off (default): the 5
// verification trials alone.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "configs/error.h"
#include "data_synth/synth/composer.h"
#include "data_synth/synth/cpu_checks.h"
#include "data_synth/synth/extra_shapes.h"
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/candidates.h"
#include "tools/bench/bench_result.h"
#include "tools/bench/shapes_bench.h"

namespace kforge::bench {

namespace {

std::vector<double> parse_budgets(const std::string& list) {
  std::vector<double> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    double b = 0;
    try {
      b = std::stod(item);
    } catch (const std::exception&) {
      KFORGE_FAIL(usage, "--large-bytes takes a comma-separated list of byte counts, not '" << item << "'");
    }
    KFORGE_CHECK(b > 0, usage, "--large-bytes: every budget must be > 0, not " << item);
    out.push_back(b);
  }
  return out;
}

// One arm of the comparison: the task with these extra shapes (named by kind).
struct Arm {
  std::string name;
  std::vector<ExtraShape> shapes;
  std::vector<double> wall_ms, shapes_ms;
  std::map<std::string, std::vector<double>> trial_ms;  // by kind
  std::string status;
  std::string failed;  // a verify that did not pass (e.g. out of memory at a large size): why; the arm is left out
};

TaskSpec with_shapes(const TaskSpec& t, const std::vector<ExtraShape>& shapes) {
  TaskSpec out = t;
  out.extra_dims.clear();
  for (const auto& s : shapes) out.extra_dims.push_back(s.dims);
  return out;
}

std::string budget_name(double b) {  // large_8gb, large_500mb: a figure name's part (snake_case)
  char s[48];
  if (b >= 1e9 && std::fmod(b, 1e9) == 0)
    std::snprintf(s, sizeof s, "large_%.0fgb", b / 1e9);
  else
    std::snprintf(s, sizeof s, "large_%.0fmb", b / 1e6);
  return s;
}

// The arms of one task: none, today's kinds, and today's kinds plus a large shape per budget (an
// arm only where the large shape exists: the task's footprint is below the budget and no output
// reduces over B).
std::vector<Arm> arms_of(const TaskSpec& task, const std::vector<double>& budgets) {
  std::vector<Arm> arms{{"none", {}, {}, {}, {}, ""}};
  ExtraShapeConfig today;
  arms.push_back({"today", draw_extra_shapes(task, today, reference_accepts_empty), {}, {}, {}, ""});
  for (double b : budgets) {
    ExtraShapeConfig cfg = today;
    cfg.max_shapes = 5;
    cfg.large_bytes = b;
    std::vector<ExtraShape> s = draw_extra_shapes(task, cfg, reference_accepts_empty);
    if (!s.empty() && s.back().kind == "large") arms.push_back({budget_name(b), s, {}, {}, {}, ""});
  }
  return arms;
}

}  // namespace

int shapes(int argc, char** argv) {
  const std::string out = arg_value(argc, argv, "--out", "");
  KFORGE_CHECK(!out.empty(), usage, "shapes needs --out FILE");
  const int repeats = std::stoi(arg_value(argc, argv, "--repeats", "3"));
  KFORGE_CHECK(repeats >= 1, usage, "--repeats must be >= 1");
  const std::string budgets_arg = arg_value(argc, argv, "--large-bytes", "2e9,8e9,32e9");
  const std::vector<double> budgets = parse_budgets(budgets_arg);
  const std::string timed = arg_value(argc, argv, "--time", "off");
  KFORGE_CHECK(timed == "on" || timed == "off", usage, "--time takes on or off");

  EvalConfig cfg;
  Evaluator ev(cfg);
  EvalOptions opt;
  opt.trials = 5;
  opt.time = timed == "on";
  opt.salt = 91;
  std::map<std::string, bool> done;  // task: a candidate measured
  Json fig = Json::object();
  int measured = 0;
  std::map<std::string, std::vector<double>> ratio;                 // arm: verify with / without, one per task
  std::map<std::string, std::vector<double>> large_trial_over_own;  // budget: large trial / one own-shape trial
  for (const auto& c : kforge::testing::shipped_candidates()) {
    if (c.verdict != "pass" || done[c.task]) continue;
    TaskSpec task = load_task(kforge::testing::task_path(c.task));
    Candidate cand = Candidate::load(c.dir);
    std::vector<Arm> arms = arms_of(task, budgets);
    // Warm (compile cache, module, reference), and whether this candidate's plan is general at all.
    EvalReport warm = ev.evaluate(with_shapes(task, arms[1].shapes), cand, opt);
    if (warm.verdict != Verdict::pass || !warm.shapes || !warm.shapes->general()) {
      std::fprintf(stderr, "shapes: %s/%s skipped: %s %s\n", c.task.c_str(), c.name.c_str(), verdict_name(warm.verdict),
                   warm.shapes ? (warm.shapes->status + " " + warm.shapes->note).c_str() : "(no other shapes)");
      continue;
    }
    done[c.task] = true;
    std::fprintf(stderr, "shapes: %s/%s, %zu arms\n", c.task.c_str(), c.name.c_str(), arms.size());
    for (int i = -1; i < repeats; ++i)  // i = -1 warms the other sizes
      for (size_t a = i < 0 ? 2 : 0; a < arms.size(); ++a) {
        Arm& arm = arms[a];
        if (!arm.failed.empty()) continue;
        EvalReport r = ev.evaluate(with_shapes(task, arm.shapes), cand, opt);
        if (r.verdict != Verdict::pass) {
          KFORGE_CHECK(a > 0, runtime, c.task << "/" << c.name << " failed without other shapes: " << to_json(r).dump().substr(0, 600));
          arm.failed = std::string(verdict_name(r.verdict)) + " " + to_json(r).dump().substr(0, 300);
          std::fprintf(stderr, "shapes: %s/%s at arm %s: %s\n", c.task.c_str(), c.name.c_str(), arm.name.c_str(), arm.failed.c_str());
          continue;
        }
        if (i < 0) continue;
        arm.wall_ms.push_back(r.wall_ms.value_or(0));
        if (!r.shapes) continue;
        arm.status = r.shapes->status;
        arm.shapes_ms.push_back(r.shapes->wall_ms);
        for (size_t k = 0; k < r.shapes->trials.size() && k < arm.shapes.size(); ++k)
          arm.trial_ms[arm.shapes[k].kind].push_back(r.shapes->trials[k].wall_ms);
      }
    const double own_gb = footprint_bytes(task.resolved) / 1e9;
    const double base = median(arms[0].wall_ms);
    std::printf("%-22s %-10s own %.3g GB, verify %.1f ms\n", c.task.c_str(), c.name.c_str(), own_gb, base);
    const std::string tk = c.task + "_";  // per-task figures: TASK_ARM_... (snake_case, as the records want)
    fig[tk + "own_footprint_gb"] = own_gb;
    fig[tk + "verify_ms"] = base;
    for (size_t a = 1; a < arms.size(); ++a) {
      const Arm& arm = arms[a];
      const std::string ak = tk + arm.name + "_";
      if (!arm.failed.empty()) {
        fig[ak + "failed"] = 1;
        std::printf("  %-16s failed: %s\n", arm.name.c_str(), arm.failed.c_str());
        continue;
      }
      const double m = median(arm.wall_ms);
      ratio[arm.name].push_back(m / base);
      fig[ak + "verify_ms"] = m;
      fig[ak + "ratio_to_none"] = m / base;
      fig[ak + "shape_trials_ms"] = median(arm.shapes_ms);
      fig[ak + "general"] = arm.status == "general" ? 1 : 0;
      std::printf("  %-16s verify %8.1f ms (x%.2f), shape trials %8.1f ms:", arm.name.c_str(), m, m / base, median(arm.shapes_ms));
      for (const auto& s : arm.shapes) {
        const double t = median(arm.trial_ms.count(s.kind) ? arm.trial_ms.at(s.kind) : std::vector<double>{});
        const double gb = s.bytes / 1e9;
        fig[ak + s.kind + "_trial_ms"] = t;
        fig[ak + s.kind + "_footprint_gb"] = gb;
        std::printf(" %s %.1f ms (%.3g GB)", s.kind.c_str(), t, gb);
        if (s.kind == "large") large_trial_over_own[arm.name].push_back(t / (base / opt.trials));
      }
      std::printf("\n");
    }
    ++measured;
  }
  KFORGE_CHECK(measured > 0, runtime, "no sample task had a passing candidate general over its dims");
  fig["tasks_count"] = measured;
  fig["repeats"] = repeats;
  fig["timed"] = opt.time ? 1 : 0;
  for (const auto& [arm, v] : ratio) {
    fig[arm + "_tasks_count"] = v.size();
    fig[arm + "_verify_ratio_median"] = median(v);
    fig[arm + "_verify_ratio_max"] = *std::max_element(v.begin(), v.end());
    std::printf("%-16s on %zu tasks: verify with / without, median x%.2f, max x%.2f\n", arm.c_str(), v.size(), median(v),
                *std::max_element(v.begin(), v.end()));
  }
  for (const auto& [arm, v] : large_trial_over_own) {
    fig[arm + "_trial_over_own_trial_median"] = median(v);
    std::printf("%-16s a large trial / one own-shape trial: median x%.2f\n", arm.c_str(), median(v));
  }
  write_result(out, ev.gpu_worker().hello()["device"],
               "kforge_eval_bench shapes --repeats " + std::to_string(repeats) + " --large-bytes " + budgets_arg + " --time " + timed, fig);
  return 0;
}

}  // namespace kforge::bench
