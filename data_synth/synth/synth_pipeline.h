#pragma once
// `kforge synth`: draws candidates shard by shard, runs each through the filter stages, keeps the
// survivors, and finally splits them and writes the dataset. Everything here is libtorch-free; a
// stage that needs libtorch or a GPU implements CandidateFilter elsewhere and is handed in.
//
// Resumable by shard: shard k draws from (seed, k) alone and is written atomically when done
// (shards/shard-NNNNN.json); a restarted run reads the finished shards (their kept tasks feed the
// dedup set) and continues with the first missing one, so it ends with the same dataset.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "data_synth/synth/composer.h"
#include "data_synth/synth/dedup.h"
#include "data_synth/synth/synth_config.h"

namespace kforge {

// A composed task with its canonical identity, as the filter stages see it (env/evaluator/evaluator.h's
// Candidate is a kernel candidate: a different thing, and one name per type keeps the binaries
// that link both free of ODR clashes).
struct HashedCandidate {
  SynthCandidate synth;
  std::string hash;      // canonical graph hash
  std::string sequence;  // canonical operator sequence
};

// One filter stage. check() returns "" to keep the candidate or the name of the filter that
// rejected it (counted in the report). Stages run in order, cheap before expensive.
class CandidateFilter {
 public:
  virtual ~CandidateFilter() = default;
  virtual std::string name() const = 0;
  // The rejection names this stage can give, in report order.
  virtual std::vector<std::string> reasons() const = 0;
  virtual std::string check(HashedCandidate& c) = 0;
};

struct KeptTask {
  TaskSpec task;
  std::string family, hash, sequence;
  double est_ms = 0;
};

struct SynthSummary {
  int64_t drawn = 0;
  int64_t passed = 0;  // passed every filter (before trimming to target_tasks)
  int64_t kept = 0;
  std::vector<std::string> reasons;                  // report order
  std::map<std::string, int64_t> rejected;           // per filter
  std::map<int, int64_t> ops_histogram;              // operators per kept task
  std::map<std::string, int64_t> runtime_histogram;  // estimated eager ms, by bin label
  std::map<int, int64_t> extra_shapes;               // kept tasks by their number of extra shapes (extra_dims)
  std::map<std::string, int64_t> dtypes, families, splits, op_counts;
  int64_t shards = 0, shards_resumed = 0;
  double seconds = 0;
  std::string table() const;  // the human summary
  std::string json() const;   // for tools/dataset/synth_plots.py
};

// The runtime bins of the report, in order ("1-2", "2-5", ...).
std::vector<std::string> runtime_bins();
std::string runtime_bin(double ms);

struct SynthProgress {
  int64_t drawn = 0, kept = 0, target = 0, shard = 0;
  double elapsed_s = 0;
};

struct SynthRunOptions {
  std::string out_dir;
  std::function<void(const SynthProgress&)> progress;  // called now and then
  double progress_interval_s = 2.0;
};

// KernelBench decontamination (signatures resolved against base_dir when relative); nullptr when
// the config gives no signature file. Dedup is the pipeline's own (its set survives resumption).
std::unique_ptr<CandidateFilter> make_decontamination_filter(const DecontaminationConfig& cfg, const std::string& base_dir);

// Runs (or resumes) the synthesis; returns the kept tasks with splits assigned, and the summary.
std::vector<KeptTask> run_synthesis(const SynthConfig& cfg, std::vector<std::unique_ptr<CandidateFilter>>& filters,
                                    const SynthRunOptions& opts, SynthSummary& summary);

}  // namespace kforge
