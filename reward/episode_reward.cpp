#include "reward/episode_reward.h"

#include <algorithm>
#include <cmath>

#include "configs/error.h"
#include "reward/timing_stats.h"

namespace kforge {

using OJson = nlohmann::ordered_json;

const char* verdict_name(SubmissionOutcome::Verdict v) {
  switch (v) {
    case SubmissionOutcome::Verdict::pass:
      return "pass";
    case SubmissionOutcome::Verdict::fail:
      return "fail";
    case SubmissionOutcome::Verdict::error:
      return "error";
    case SubmissionOutcome::Verdict::cheat:
      return "cheat";
  }
  return "error";
}

StoredCompileRatio stored_compile_ratio(const StoredBaseline& b) {
  StoredCompileRatio r;
  auto positive = [](const std::optional<double>& ms) { return ms && std::isfinite(*ms) && *ms > 0; };
  if (!b.compile_ms)
    r.missing = "the task stores no torch.compile time";
  else if (!positive(b.compile_ms))
    r.missing = "the task's stored torch.compile time is not a positive time";
  else if (positive(b.eager_ms))
    r.factor = *b.compile_ms / *b.eager_ms;
  else {
    r.unscaled = true;
    r.missing = "the task stores a torch.compile time but no eager time to rescale it by";
  }
  return r;
}

namespace {

OJson interval_json(const SpeedupEstimate& s) {
  return {{"point", s.point}, {"lo", s.lo}, {"hi", s.hi}, {"confidence", s.confidence}, {"method", s.method}, {"resamples", s.resamples}};
}

SpeedupEstimate scaled(SpeedupEstimate s, double factor) {
  s.point *= factor;
  s.lo *= factor;
  s.hi *= factor;
  return s;
}

// The statistic the mode decides on, and whether it clears the threshold (strictly: a tie at the
// threshold is not "more than").
struct Decision {
  double statistic = 0;
  bool beats = false;
};
Decision decide(const DecisionConfig& d, const SpeedupEstimate& s, double threshold) {
  Decision out;
  out.statistic = d.mode == DecisionMode::ci_lower_bound ? s.lo : s.point;
  out.beats = out.statistic > threshold;
  return out;
}

RewardResult failure(double value, const char* rule, const SubmissionOutcome& o, OJson extra = OJson::object()) {
  RewardResult r;
  r.value = value;
  r.rule = rule;
  r.evidence = {{"rule", rule}, {"reward", value}, {"verdict", verdict_name(o.verdict)}};
  if (!o.error_kind.empty()) r.evidence["error_kind"] = o.error_kind;
  if (!o.reason.empty()) r.evidence["reason"] = o.reason;
  for (auto& [k, v] : extra.items()) r.evidence[k] = v;
  return r;
}

OJson earlier_json(const EarlierCheat& e) {
  return {{"check", e.check}, {"turn", e.turn}, {"tool", e.tool}, {"same_candidate", e.same_candidate}};
}

std::string caught_text(const EarlierCheat& e) {
  return "caught by the anti-cheat check '" + e.check + "' on turn " + std::to_string(e.turn) + (e.tool.empty() ? "" : " (" + e.tool + ")");
}

// torch.compile's time now over eager's time now, from the task's stored baseline (rescaled by the
// eager time measured now, or as stored under compile_baseline.allow_unscaled); none when the
// task cannot give one (`missing` says why). `comp_ev` gets the evidence.
std::optional<double> compile_factor(const RewardConfig& config, const StoredBaseline& baseline, const std::string& device,
                                     double eager_now_ms, OJson& comp_ev, std::string& missing) {
  const StoredCompileRatio stored = stored_compile_ratio(baseline);
  std::optional<double> factor = stored.factor;
  // Both GPU models known and different: another model's torch.compile ratio (issue 32).
  const bool other_gpu = !baseline.gpu.empty() && !device.empty() && baseline.gpu != device;
  if (other_gpu && config.compile_baseline.other_gpu == OtherGpuBaseline::refuse && (factor || stored.unscaled)) {
    missing = "the task's torch.compile baseline was measured on " + baseline.gpu + ", and this judge runs on " + device +
              " (compile_baseline.other_gpu: refuse; `kforge baseline` measures this GPU's)";
    comp_ev = {{"available", false}, {"stored_gpu", baseline.gpu}, {"device", device}};
    return std::nullopt;
  }
  if (factor) {
    comp_ev = {{"available", true},
               {"stored_ms", *baseline.compile_ms},
               {"stored_eager_ms", *baseline.eager_ms},
               {"rescale", "stored torch.compile time x (eager median now / eager time stored)"}};
    if (eager_now_ms > 0) {
      comp_ev["eager_now_ms"] = eager_now_ms;
      comp_ev["rescaled_ms"] = *baseline.compile_ms * eager_now_ms / *baseline.eager_ms;
    }
  } else if (stored.unscaled && config.compile_baseline.allow_unscaled && eager_now_ms > 0) {
    // Unscaled: the stored compile time as it is, against the candidate's median now.
    factor = *baseline.compile_ms / eager_now_ms;
    comp_ev = {{"available", true},
               {"stored_ms", *baseline.compile_ms},
               {"stored_eager_ms", nullptr},
               {"rescale", "none: no eager time stored beside it (compile_baseline.allow_unscaled)"},
               {"rescaled_ms", *baseline.compile_ms}};
  } else {
    missing = stored.missing;
  }
  if (!baseline.gpu.empty() && comp_ev.is_object()) comp_ev["stored_gpu"] = baseline.gpu;
  if (factor && other_gpu)
    comp_ev["other_gpu"] = "rescaled across GPU models (compile_baseline.other_gpu: rescale): stored on " + baseline.gpu + ", judged on " +
                           device + "; torch.compile's ratio to eager may differ between them";
  return factor;
}

// A cheat caught once is not scored as an honest mistake later: the very candidate caught, or any
// submission that does not pass after a catch, gets the cheating penalty. Nothing otherwise.
std::optional<RewardResult> earlier_cheat_penalty(const FailureConfig& f, const SubmissionOutcome& o) {
  if (o.earlier_cheat && o.verdict != SubmissionOutcome::Verdict::cheat &&
      (o.earlier_cheat->same_candidate || o.verdict != SubmissionOutcome::Verdict::pass)) {
    const EarlierCheat& e = *o.earlier_cheat;
    std::string why = e.same_candidate
                          ? "this candidate was " + caught_text(e) + " earlier in the episode; a cheat caught once stays caught"
                          : "a candidate was " + caught_text(e) + " earlier in the episode and the submission did not pass (" +
                                verdict_name(o.verdict) + "); after a caught cheat only a passing submission is judged on its merit";
    // The verdict is the episode's (reports count it as a cheat, never as correct or wrong); the
    // submission's own stays beside it.
    return failure(f.cheat, "cheat", o,
                   {{"verdict", "cheat"},
                    {"submission_verdict", verdict_name(o.verdict)},
                    {"check", e.check},
                    {"cheat_caught_earlier", earlier_json(e)},
                    {"why", why}});
  }
  return std::nullopt;
}

}  // namespace

RewardResult submission_reward(const RewardConfig& config, const SubmissionOutcome& o, const StoredBaseline& baseline) {
  const FailureConfig& f = config.failures;
  if (std::optional<RewardResult> penalty = earlier_cheat_penalty(f, o)) return *penalty;
  switch (o.verdict) {
    case SubmissionOutcome::Verdict::cheat:
      return failure(f.cheat, "cheat", o, {{"check", o.cheat_check}});
    case SubmissionOutcome::Verdict::error:
      if (o.compile_stage) return failure(f.compile_error, "compile_error", o);
      return failure(f.run_error, "run_error", o);
    case SubmissionOutcome::Verdict::fail:
      return failure(f.verify_fail, "verify_fail", o);
    case SubmissionOutcome::Verdict::pass:
      break;
  }
  if (o.shapes_status == "not_general" && config.shapes.not_general == NotGeneral::penalty)
    return failure(config.shapes.penalty, "not_general", o,
                   {{"shapes", o.shapes},
                    {"why", "it passed at the task's own shape but not at another of its shapes (shapes.not_general: penalty)"}});

  const DecisionConfig& d = config.decision;
  RewardResult r;
  r.evidence = {{"rule", nullptr}, {"reward", nullptr}, {"verdict", "pass"}, {"mode", decision_mode_name(d.mode)}};
  if (!o.device.empty()) r.evidence["device"] = o.device;
  if (!o.shapes_status.empty()) r.evidence["shapes"] = o.shapes;

  // The speedup over eager: recomputed from the samples with the reward's own interval settings,
  // else the evaluator's interval.
  std::optional<SpeedupEstimate> eager;
  std::string source;
  std::string untimed_why;
  const int min_n = d.interval.min_samples;
  if (static_cast<int>(o.candidate_ms.size()) >= min_n && static_cast<int>(o.eager_ms.size()) >= min_n) {
    try {
      eager = estimate_speedup(o.candidate_ms, o.eager_ms, d.interval);
      source = "recomputed from the timing samples";
    } catch (const Error& e) {
      untimed_why = std::string("the timing samples are unusable: ") + e.what();
    }
  }
  if (!eager && untimed_why.empty() && o.reported_speedup) {
    eager = o.reported_speedup;
    source = "the evaluator's interval (too few samples to recompute)";
  }
  if (!eager) {
    if (untimed_why.empty()) untimed_why = "the submission was not timed";
    r.value = config.tiers.correct;
    r.rule = "correct_untimed";
    r.evidence["rule"] = r.rule;
    r.evidence["reward"] = r.value;
    r.evidence["why"] = untimed_why;
    return r;
  }

  OJson eager_ev = {{"speedup", interval_json(*eager)}, {"source", source}};
  double eager_now_ms = 0, cand_ms = 0;
  if (!o.candidate_ms.empty() && !o.eager_ms.empty()) {
    cand_ms = TimingStats::from_samples(o.candidate_ms).median;
    eager_now_ms = TimingStats::from_samples(o.eager_ms).median;
    eager_ev["candidate_median_ms"] = cand_ms;
    eager_ev["eager_median_ms"] = eager_now_ms;
    eager_ev["samples"] = {{"candidate", o.candidate_ms.size()}, {"eager", o.eager_ms.size()}};
  }
  Decision de = decide(d, *eager, d.eager_threshold);
  eager_ev["threshold"] = d.eager_threshold;
  eager_ev["statistic"] = de.statistic;
  eager_ev["beats"] = de.beats;
  r.evidence["eager"] = eager_ev;

  // The speedup over torch.compile, from the stored baseline rescaled to now.
  OJson comp_ev;
  std::string missing;
  std::optional<double> factor = compile_factor(config, baseline, o.device, eager_now_ms, comp_ev, missing);  // compile now / eager now

  bool beats_compile = false;
  if (!factor && config.compile_baseline.when_missing == MissingCompileBaseline::as_eager) {
    factor = 1.0;
    comp_ev = {{"available", false}, {"why", missing}, {"policy", "as_eager: torch.compile taken to be as fast as eager"}};
  }
  if (factor) {
    SpeedupEstimate sc = scaled(*eager, *factor);
    Decision dc = decide(d, sc, d.compile_threshold);
    comp_ev["speedup"] = interval_json(sc);
    comp_ev["threshold"] = d.compile_threshold;
    comp_ev["statistic"] = dc.statistic;
    comp_ev["beats"] = dc.beats;
    beats_compile = dc.beats;
  } else {
    comp_ev = {{"available", false}, {"why", missing}, {"policy", "eager_only: faster_than_both cannot be reached"}, {"beats", false}};
  }
  r.evidence["torch_compile"] = comp_ev;

  double tier;
  if (de.beats && beats_compile) {
    r.rule = "faster_than_both";
    tier = config.tiers.faster_than_both;
  } else if (de.beats) {
    r.rule = "faster_than_eager";
    tier = config.tiers.faster_than_eager;
  } else {
    r.rule = "correct";
    tier = config.tiers.correct;
  }
  r.value = tier;
  r.evidence["tier_reward"] = tier;
  const ShapingConfig& s = config.shaping;
  if (s.log_speedup_weight != 0) {
    // On the same statistic the tiers use, so the shaping does not pay for noise either.
    double stat = std::max(de.statistic, 1e-300);
    double ln = std::clamp(std::log(stat), -s.log_speedup_clip, s.log_speedup_clip);
    double bonus = s.log_speedup_weight * ln;
    r.value += bonus;
    r.evidence["log_speedup"] = {{"statistic", de.statistic}, {"ln_clipped", ln}, {"weight", s.log_speedup_weight}, {"bonus", bonus}};
  }
  r.evidence["rule"] = r.rule;
  r.evidence["reward"] = r.value;
  return r;
}

RewardResult no_submission_reward(const RewardConfig& config, const std::string& reason, const std::optional<EarlierCheat>& earlier_cheat) {
  RewardResult r;
  if (earlier_cheat) {
    r.value = config.failures.cheat;
    r.rule = "cheat";
    r.evidence = {{"rule", r.rule},
                  {"reward", r.value},
                  {"verdict", "cheat"},
                  {"submission_verdict", nullptr},
                  {"check", earlier_cheat->check},
                  {"cheat_caught_earlier", earlier_json(*earlier_cheat)},
                  {"why", "a candidate was " + caught_text(*earlier_cheat) + " and the episode ended without a submission: " + reason}};
    return r;
  }
  r.value = config.failures.no_submission;
  r.rule = "no_submission";
  r.evidence = {{"rule", r.rule}, {"reward", r.value}, {"verdict", nullptr}, {"why", "the episode ended without a submission: " + reason}};
  return r;
}

TurnShaping turn_shaping(const ShapingConfig& config, bool first_compile_now, bool first_verify_now) {
  TurnShaping t;
  t.evidence = OJson::object();
  if (config.per_turn != 0) {
    t.value += config.per_turn;
    t.evidence["per_turn"] = config.per_turn;
  }
  if (first_compile_now && config.first_compile != 0) {
    t.value += config.first_compile;
    t.evidence["first_compile"] = config.first_compile;
  }
  if (first_verify_now && config.first_verify != 0) {
    t.value += config.first_verify;
    t.evidence["first_verify"] = config.first_verify;
  }
  return t;
}

}  // namespace kforge
