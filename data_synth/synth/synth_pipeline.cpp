#include "data_synth/synth/synth_pipeline.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"

namespace fs = std::filesystem;

namespace kforge {

namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

const std::vector<std::string> kComposeReasons = {"compose_failed", "est_runtime", "memory", "nondeterministic_op", "duplicate"};

class DecontaminationFilter : public CandidateFilter {
 public:
  DecontaminationFilter(std::vector<KernelBenchSignature> sigs, DecontaminationRule rule) : sigs_(std::move(sigs)), rule_(rule) {}
  std::string name() const override { return "decontaminate"; }
  std::vector<std::string> reasons() const override { return {"kernelbench_similar"}; }
  std::string check(HashedCandidate& c) override {
    return kernelbench_match(c.synth.task, sigs_, rule_).empty() ? "" : "kernelbench_similar";
  }

 private:
  std::vector<KernelBenchSignature> sigs_;
  DecontaminationRule rule_;
};

std::string shard_path(const std::string& dir, int64_t shard) {
  char name[64];
  std::snprintf(name, sizeof name, "shard-%05lld.json", static_cast<long long>(shard));
  return (fs::path(dir) / "shards" / name).string();
}

std::string fmt(double v, int precision) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(precision);
  os << v;
  return os.str();
}

}  // namespace

std::vector<std::string> runtime_bins() { return {"<1", "1-2", "2-5", "5-10", "10-20", "20-50", "50-100", ">100"}; }

std::string runtime_bin(double ms) {
  const double edges[] = {1, 2, 5, 10, 20, 50, 100};
  auto bins = runtime_bins();
  for (size_t i = 0; i < 7; ++i)
    if (ms < edges[i]) return bins[i];
  return bins.back();
}

std::unique_ptr<CandidateFilter> make_decontamination_filter(const DecontaminationConfig& cfg, const std::string& base_dir) {
  if (cfg.signatures.empty()) return nullptr;
  fs::path p = cfg.signatures;
  if (p.is_relative() && !fs::exists(p)) p = fs::path(base_dir) / p;
  DecontaminationRule rule{cfg.op_similarity, cfg.shape_similarity, cfg.sequence_only_min_ops};
  return std::make_unique<DecontaminationFilter>(load_kernelbench_signatures(p.string()), rule);
}

std::string SynthSummary::table() const {
  std::ostringstream os;
  auto row = [&](const std::string& k, const std::string& v) {
    os << "  " << k << std::string(k.size() < 26 ? 26 - k.size() : 1, ' ') << v << "\n";
  };
  auto pct = [&](int64_t n, int64_t of) { return std::to_string(n) + (of ? "  (" + fmt(100.0 * n / of, 1) + " %)" : ""); };
  os << "synthesis summary\n";
  row("candidates drawn", std::to_string(drawn));
  for (const auto& r : reasons) row("rejected: " + r, pct(rejected.count(r) ? rejected.at(r) : 0, drawn));
  row("passed every filter", pct(passed, drawn));
  row("kept (target)", std::to_string(kept));
  row("shards (resumed)", std::to_string(shards) + " (" + std::to_string(shards_resumed) + ")");
  row("time", fmt(seconds, 1) + " s");
  os << "operators per task\n";
  for (const auto& [n, c] : ops_histogram) row(std::to_string(n), pct(c, kept));
  os << "estimated eager runtime (ms, H200 ceilings)\n";
  for (const auto& b : runtime_bins())
    if (runtime_histogram.count(b)) row(b, pct(runtime_histogram.at(b), kept));
  os << "extra shapes per task (verification also runs these)\n";
  for (const auto& [n, c] : extra_shapes) row(std::to_string(n), pct(c, kept));
  os << "splits\n";
  for (const auto& [s, c] : splits) row(s, pct(c, kept));
  os << "dtypes\n";
  for (const auto& [s, c] : dtypes) row(s, pct(c, kept));
  os << "first-operator families\n";
  for (const auto& [s, c] : families) row(s, pct(c, kept));
  return os.str();
}

std::string SynthSummary::json() const {
  nlohmann::ordered_json j;
  j["drawn"] = drawn;
  j["passed"] = passed;
  j["kept"] = kept;
  nlohmann::ordered_json rej = nlohmann::ordered_json::object();
  for (const auto& r : reasons) rej[r] = rejected.count(r) ? rejected.at(r) : 0;
  j["rejected"] = rej;
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (const auto& [n, c] : ops_histogram) ops[std::to_string(n)] = c;
  j["ops_per_task"] = ops;
  nlohmann::ordered_json rt = nlohmann::ordered_json::object();
  for (const auto& b : runtime_bins()) rt[b] = runtime_histogram.count(b) ? runtime_histogram.at(b) : 0;
  j["est_runtime_ms"] = rt;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (const auto& [n, c] : extra_shapes) extra[std::to_string(n)] = c;
  j["extra_shapes"] = extra;
  j["splits"] = splits;
  j["dtypes"] = dtypes;
  j["families"] = families;
  j["op_counts"] = op_counts;
  j["shards"] = shards;
  j["shards_resumed"] = shards_resumed;
  j["seconds"] = seconds;
  return j.dump(2);
}

namespace {

// One run's state: the tasks kept and the hashes seen so far, over every shard, and the summary.
class SynthRun {
 public:
  SynthRun(const SynthConfig& cfg, std::vector<std::unique_ptr<CandidateFilter>>& filters, const SynthRunOptions& opts,
           SynthSummary& summary)
      : cfg_(cfg), filters_(filters), opts_(opts), summary_(summary), composer_(cfg) {}

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  int64_t kept_count() const { return static_cast<int64_t>(kept_.size()); }

  void report(int64_t shard, bool force) {
    if (!opts_.progress || (!force && elapsed() - last_progress_ < opts_.progress_interval_s)) return;
    last_progress_ = elapsed();
    opts_.progress({summary_.drawn, kept_count(), cfg_.target_tasks, shard, elapsed()});
  }

  // A shard a previous run wrote: its counts, hashes and kept tasks, as if drawn again.
  void resume_shard(const std::string& path) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(path, "the shard"));
      summary_.drawn += j.at("drawn").get<int64_t>();
      for (const auto& [k, v] : j.at("rejected").items()) summary_.rejected[k] += v.get<int64_t>();
      for (const auto& h : j.at("seen")) seen_.insert(h.get<std::string>());
      for (const auto& k : j.at("kept")) {
        KeptTask t;
        t.task = parse_task(k.at("spec").get<std::string>(), path);
        t.family = k.at("family").get<std::string>();
        t.hash = k.at("hash").get<std::string>();
        t.sequence = k.at("sequence").get<std::string>();
        t.est_ms = k.at("est_ms").get<double>();
        kept_.push_back(std::move(t));
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      KFORGE_FAIL(io, path << ": unreadable shard (" << e.what() << "); delete it to redo the shard");
    }
  }

  // A new shard: its candidates drawn from the shard's own generator and filtered, then the shard
  // written (to a temporary file renamed into place, so a killed run leaves no half shard).
  void make_shard(int64_t shard, const std::string& path) {
    nlohmann::ordered_json shard_json;
    nlohmann::ordered_json shard_kept = nlohmann::ordered_json::array(), shard_seen = nlohmann::ordered_json::array();
    std::map<std::string, int64_t> shard_rejected;
    SynthRng rng(mix(cfg_.seed, static_cast<uint64_t>(shard)));
    for (int64_t i = 0; i < cfg_.shard_candidates; ++i) {
      ++summary_.drawn;
      HashedCandidate c;
      std::string reason = draw_and_filter(rng, shard, i, c, shard_seen);
      if (!reason.empty()) {
        ++summary_.rejected[reason];
        ++shard_rejected[reason];
      } else {
        KeptTask t{c.synth.task, c.synth.family, c.hash, c.sequence, c.synth.est_ms};
        shard_kept.push_back(
            {{"spec", task_to_yaml(t.task)}, {"family", t.family}, {"hash", t.hash}, {"sequence", t.sequence}, {"est_ms", t.est_ms}});
        kept_.push_back(std::move(t));
      }
      report(shard, false);
    }
    shard_json["shard"] = shard;
    shard_json["drawn"] = cfg_.shard_candidates;
    shard_json["rejected"] = shard_rejected;
    shard_json["seen"] = shard_seen;
    shard_json["kept"] = shard_kept;
    std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      KFORGE_CHECK(out, io, tmp << ": cannot write");
      out << shard_json.dump() << "\n";
      KFORGE_CHECK(out.good(), io, tmp << ": write failed");
    }
    fs::rename(tmp, path);
  }

  // The kept tasks trimmed to the target, split, and counted into the summary.
  std::vector<KeptTask> finish() {
    summary_.passed = kept_count();
    if (kept_count() > cfg_.target_tasks) kept_.resize(static_cast<size_t>(cfg_.target_tasks));
    std::vector<TaskSpec> specs;
    for (const auto& k : kept_) specs.push_back(k.task);
    if (specs.size() >= 2) assign_splits(specs, cfg_.heldout_fraction, cfg_.seed);
    for (size_t i = 0; i < kept_.size(); ++i) kept_[i].task.split = specs[i].split;

    summary_.kept = kept_count();
    for (const auto& k : kept_) {
      ++summary_.ops_histogram[static_cast<int>(k.task.graph.nodes.size())];
      ++summary_.runtime_histogram[runtime_bin(k.est_ms)];
      ++summary_.extra_shapes[static_cast<int>(k.task.extra_dims.size())];
      ++summary_.dtypes[dtype_name(k.task.dtype)];
      ++summary_.families[k.family];
      ++summary_.splits[split_name(k.task.split)];
      for (const auto& n : k.task.graph.nodes) ++summary_.op_counts[n.op];
    }
    summary_.seconds = elapsed();
    return std::move(kept_);
  }

 private:
  // Candidate i of the shard into `c`; the reason it is rejected, or "" when it passed every filter.
  std::string draw_and_filter(SynthRng& rng, int64_t shard, int64_t i, HashedCandidate& c, nlohmann::ordered_json& shard_seen) {
    char id[64];
    std::snprintf(id, sizeof id, "syn%llu_%05lld_%04lld", static_cast<unsigned long long>(cfg_.seed), static_cast<long long>(shard),
                  static_cast<long long>(i));
    uint64_t task_seed = mix(mix(cfg_.seed, static_cast<uint64_t>(shard)), static_cast<uint64_t>(i)) >> 1;
    DrawOutcome d = composer_.draw(rng, id, task_seed);
    std::string reason = d.rejected;
    if (reason.empty()) {
      c.synth = std::move(*d.candidate);
      for (const auto& n : c.synth.task.resolved.nodes)
        if (n.call.op->nondeterministic) reason = "nondeterministic_op";
    }
    if (reason.empty()) {
      c.hash = canonical_graph_hash(c.synth.task);
      c.sequence = canonical_op_sequence(c.synth.task);
      if (!seen_.insert(c.hash).second)
        reason = "duplicate";
      else
        shard_seen.push_back(c.hash);
    }
    for (size_t k = 0; reason.empty() && k < filters_.size(); ++k) reason = filters_[k]->check(c);
    return reason;
  }

  const SynthConfig& cfg_;
  std::vector<std::unique_ptr<CandidateFilter>>& filters_;
  const SynthRunOptions& opts_;
  SynthSummary& summary_;
  Composer composer_;
  std::set<std::string> seen_;
  std::vector<KeptTask> kept_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  double last_progress_ = -1e9;
};

}  // namespace

std::vector<KeptTask> run_synthesis(const SynthConfig& cfg, std::vector<std::unique_ptr<CandidateFilter>>& filters,
                                    const SynthRunOptions& opts, SynthSummary& summary) {
  SynthRun run(cfg, filters, opts, summary);
  fs::create_directories(fs::path(opts.out_dir) / "shards");
  summary = SynthSummary{};
  summary.reasons = kComposeReasons;
  for (const auto& f : filters)
    for (const auto& r : f->reasons()) summary.reasons.push_back(r);

  for (int64_t shard = 0; shard < cfg.max_shards && run.kept_count() < cfg.target_tasks; ++shard) {
    std::string path = shard_path(opts.out_dir, shard);
    ++summary.shards;
    if (fs::exists(path)) {
      run.resume_shard(path);
      ++summary.shards_resumed;
      run.report(shard, false);
      continue;
    }
    run.make_shard(shard, path);
  }
  run.report(summary.shards, true);
  return run.finish();
}

}  // namespace kforge
