#pragma once
// Evaluation reports (env/evaluator/eval_report.h) as the text a policy reads after compile(), verify(),
// profile() and submit(): short, what went wrong first, numbers with units. Sections the report
// lacks (a profile from an older GPU worker, a torch.compile baseline the task does not store) are
// said to be unavailable rather than left out silently.
#include <cstddef>
#include <string>

#include "data_synth/task/task_spec.h"
#include "env/evaluator/eval_report.h"
#include "reward/episode_reward.h"

namespace kforge {

// The compile stage: ok with per-kernel resources and the plan, or the error (a log trimmed to
// log_max_chars in the middle).
std::string compile_text(const EvalReport& report, size_t log_max_chars);
// Verification: passed / failed (which trial, which outputs, examples) / error / cheat.
std::string verify_text(const EvalReport& report, size_t log_max_chars);
// Timing against eager and against the task's torch.compile baseline rescaled by eager now / eager stored.
std::string timing_text(const EvalReport& report, const Baselines& baselines);
// The report's `profile` section (kernels, ceilings, achieved rates, counters), or why there is none.
// `counters_note`, when not empty, stands in for the counters' line (they were not read).
std::string profile_text(const EvalReport& report, const std::string& counters_note = "");
// The reward of a submission and the rule that fired.
std::string reward_text(const RewardResult& reward);
// Under history.reward_from: best_verified, the line saying how the best verified version fared
// when judged again as a submission (the reward's `confirmation`); "" without one.
std::string confirmation_text(const RewardResult& r);

}  // namespace kforge
