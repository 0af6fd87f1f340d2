#pragma once
// The candidate history of one episode (issue 30): every candidate a GPU tool judged (verify,
// profile, submit) is a version, numbered from 1 in the order first judged, with its files
// (judged_files: kernel.cu and launch.yaml, or an extension's model_new.py and sources), every verdict it got and its
// figures: the speedup over eager with its interval and the profile's key counters. A candidate
// judged again with the same bytes (candidate_content_hash) is the same version. The policy reads
// it through history(), restore(version), diff(a, b) and submit(version=N); the reward may come
// from the best verified version (configs/env.yaml history.reward_from); the trajectory records it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "env/episode/env_config.h"
#include "env/evaluator/eval_report.h"
#include "env/evaluator/evaluator.h"
#include "reward/episode_reward.h"

namespace kforge {

// What an evaluation report says, as the reward rules read it (defined in episode.cpp): a
// submission's outcome, and a version's.
SubmissionOutcome submission_outcome(const EvalReport& report);

// One judging of a version.
struct VersionJudging {
  int turn = 0;
  std::string tool;  // verify | profile | submit | confirm (best_verified's judging of the version it rewards)
  Verdict verdict = Verdict::error;
};

struct CandidateVersion {
  int number = 0;
  std::string content_hash;  // candidate_content_hash of its files
  Candidate files;           // its kind and judged files (workspace.h, judged_files)
  std::vector<VersionJudging> judgings;
  // The report its figures and its reward come from: the latest passing timed one, else the
  // latest passing one, else the latest one.
  SubmissionOutcome outcome;
  std::optional<SpeedupEstimate> speedup;        // over eager, from that report's timing
  std::optional<double> candidate_ms, eager_ms;  // medians, same report
  Json counters;                                 // the latest profile's key figures (profile_figures), or null

  // Every judging passed: only such a version may give the reward in best_verified mode (one
  // failure, a fault or a catch disqualifies it).
  bool verified() const;
  Verdict last_verdict() const { return judgings.back().verdict; }
};

// The key figures of a report's `profile` section: achieved bandwidth and FLOP rate, and per
// kernel its time, occupancy, registers and hardware counters (null when the report has none).
Json profile_figures(const EvalReport& report);

class CandidateHistory {
 public:
  // Records a judging of `candidate` by `tool` on `turn`; returns its version's number (a new one
  // unless these bytes were judged before).
  int record(const Candidate& candidate, const std::string& content_hash, const std::string& tool, int turn, const EvalReport& report);
  // The version numbered `number`, or null.
  const CandidateVersion* find(int number) const;
  const std::vector<CandidateVersion>& versions() const { return versions_; }
  bool empty() const { return versions_.empty(); }
  void clear() { versions_.clear(); }

  // What history() shows: one line per version, its verdicts, speedup and the tools that judged it.
  std::string text() const;
  // The versions as JSON (info["history"], the trajectory's `history`): each with its number,
  // hash, judgings, verdict, verified, speedup, medians and counters; with `files` when asked.
  Json to_json(bool with_files) const;

 private:
  std::vector<CandidateVersion> versions_;
};

// What diff(a, b) shows: a unified diff (3 lines of context) of each file of the two versions,
// "--- vA/kernel.cu" / "+++ vB/kernel.cu" headers and "@@ -l,n +l,n @@" hunks; a file that did
// not change says so. Line lists too long to diff exactly are shown as one replaced hunk.
std::string version_diff(const CandidateVersion& a, const CandidateVersion& b);
// One file's unified diff with labels `from` and `to` ("" when the texts are equal).
std::string unified_diff(const std::string& a, const std::string& b, const std::string& from, const std::string& to, int context = 3);

// A verified version's reward, computed as if it had been submitted (its deciding report).
struct VersionReward {
  int version = 0;
  RewardResult reward;
};

// The episode's reward under `mode`: `last` (the submission's, or no submission's) unless mode is
// best_verified, a verified version's reward is higher, and `last` is not a cheat (a catch is
// never laundered by an earlier honest version). The evidence is the chosen rule's, plus
// `reward_from`, `version` (the version that decided, null for last when nothing was submitted)
// and `last` ({rule, reward}) when a version's reward replaced it. Ties go to the later version.
RewardResult choose_episode_reward(RewardFrom mode, const RewardResult& last, std::optional<int> last_version,
                                   const std::vector<VersionReward>& verified);

}  // namespace kforge
