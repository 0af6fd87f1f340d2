// kforge eval --task TASK --candidate DIR [--json]: compile, verify and time one kernel candidate.
#include <iostream>

#include <CLI/CLI.hpp>

#include "configs/error.h"
#include "data_synth/task_spec.h"
#include "env/evaluator.h"
#include "tools/kforge/commands.h"

namespace kforge::cli {

void add_eval_command(CLI::App& app) {
  auto* eval = app.add_subcommand("eval", "Judge a kernel candidate: compile, verify and time it against eager PyTorch");
  static std::string task_name, candidate_dir, config_path, anticheat_path, dims;
  static bool json = false, no_time = false, check_only = false;
  static int trials = 0;
  static uint64_t salt = 0;
  eval->add_option("--task", task_name, "task file or sample name")->required();
  eval->add_option("--candidate", candidate_dir, "directory with kernel.cu and launch.yaml")->required();
  eval->add_option("--config", config_path, "evaluation config (configs/eval.yaml); defaults when omitted");
  eval->add_option("--anticheat-config", anticheat_path, "anti-cheat config (configs/anticheat.yaml); every check on when omitted");
  eval->add_option("--trials", trials, "verification trials (default: verify.trials of the config)");
  eval->add_option("--salt", salt, "draw salt (default: draws.salt of the config)");
  eval->add_flag("--no-time", no_time, "verify only");
  eval->add_flag("--check", check_only, "compile and check the launch plan only (no GPU needed)");
  eval->add_flag("--json", json, "one JSON document (schema kforge.eval/1, env/EVAL_REPORT.md)");
  eval->footer("Exit status: 0 when the candidate passed, 3 when it failed, errored or was refused as a cheat (the report says why), "
               "1 or 2 when kforge could not evaluate it (bad task, missing files, usage).");
  set_action(eval, [] {
    EvalConfig cfg = config_path.empty() ? EvalConfig{} : EvalConfig::load(config_path);
    TaskSpec task = load_task(resolve_task_path(task_name));
    Candidate cand = Candidate::load(candidate_dir);
    Evaluator evaluator(cfg);
    if (!anticheat_path.empty()) evaluator.set_anticheat(AnticheatConfig::load(anticheat_path));
    Json report;
    if (check_only) {
      report = evaluator.check(task, cand);
    } else {
      EvalOptions opt;
      opt.trials = trials > 0 ? trials : cfg.verify.trials;
      opt.time = !no_time;
      opt.salt = salt ? salt : cfg.draws.salt;
      report = evaluator.evaluate(task, cand, opt);
    }
    if (json) std::cout << report.dump(2) << "\n";
    else std::cout << format_report(report);
    std::string v = report_verdict(report);
    return v == "pass" || v == "checked" ? 0 : 3;
  });
}

}  // namespace kforge::cli
