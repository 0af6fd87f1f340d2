// Judgement::time(): the candidate and the reference interleaved call by call (timing.h), every
// timed candidate call prepared, checked and compared exactly as a verification call is.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "anticheat/task_precision.h"
#include "configs/error.h"
#include "env/judge/gpu_judgement.h"
#include "env/judge/timing.h"
#include "env/process/clock.h"
#include "reward/sequential.h"
#include "reward/speedup.h"

namespace kforge {

namespace {

Json stats_json(const TimingStats& s) {
  return {{"median_ms", s.median}, {"mean_ms", s.mean}, {"std_ms", s.std}, {"min_ms", s.min}, {"max_ms", s.max},
          {"p10_ms", s.p10},       {"p90_ms", s.p90},   {"n", s.n},        {"rse", s.rse}};
}

double sum(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

std::vector<CallSpec> Judgement::member_block() {
  std::vector<CallSpec> block{{0, DrawVariant::plain, 0, -1}};
  for (const VariantCondition& v : usable_) {
    if (v.variant == DrawVariant::scaled) {
      for (uint64_t seed : v.seeds) block.push_back({0, v.variant, seed, -1});
    } else {
      block.push_back({0, v.variant, v.seeds[s_.ids.next() % v.seeds.size()], -1});
    }
  }
  // Shuffled: the first plain call of verification is moved to the front by plan_verification.
  for (size_t i = block.size(); i > 1; --i) std::swap(block[i - 1], block[s_.ids.next() % i]);
  return block;
}

// The timed calls go through blocks of the task's members (member_block), each block a fresh random
// permutation: every member is timed as often as verification draws it, and which member comes
// next is not predictable from anything the candidate sees (it keeps no state between calls anyway).
CallSpec Judgement::timed_spec() {
  if (timed_block_.empty()) timed_block_ = member_block();
  CallSpec spec = timed_block_.back();
  timed_block_.pop_back();
  spec.draw_trial = s_.ids.next();
  return spec;
}

// The timed samples per member (each sample's stratum is its member).
std::vector<MemberSamples> Judgement::member_samples(const TimedRun& cand, const TimedRun& ref) {
  std::map<DrawVariant, MemberSamples> by;
  for (size_t i = 0; i < cand.samples_ms.size(); ++i) {
    const DrawVariant v = cand.strata.empty() ? DrawVariant::plain : static_cast<DrawVariant>(cand.strata.at(i));
    MemberSamples& m = by[v];
    m.member = variant_name(v);
    m.candidate_ms.push_back(cand.samples_ms[i]);
    m.reference_ms.push_back(ref.samples_ms[i]);
  }
  std::vector<MemberSamples> out;
  for (auto& [v, m] : by) out.push_back(std::move(m));
  return out;
}

void Judgement::time() {
  auto t_time = std::chrono::steady_clock::now();
  TimingConfig tc = *req_.time;
  const bool check_each = req_.anticheat.verify_timed_calls;
  // Enough rounds for 5 samples (estimate_speedup's minimum) of every member: any 6 blocks' worth
  // of consecutive calls holds 5 whole blocks.
  const int block = check_each ? static_cast<int>(member_block().size()) : 1;
  tc.min_reps = std::max(tc.min_reps, 6 * block);
  tc.max_reps = std::max(tc.max_reps, tc.min_reps);
  std::vector<at::Tensor> last_ref;
  DrawVariant drawn = DrawVariant::plain;  // the member of the round being prepared
  const size_t first = bench_->calls();
  std::vector<TimedCall> calls(2);
  calls[0].call = [&] { bench_->run_candidate(); };
  calls[1].call = [&] { last_ref = bench_->run_reference(); };
  std::optional<CallSpec> next;  // the next round's, prepared ahead (tc.prepare_ahead)
  if (check_each) {
    calls[0].before = [&] {
      const CallSpec spec = next ? *next : timed_spec();
      next.reset();
      drawn = spec.variant;
      bench_->prepare(spec);
    };
    calls[0].stratum = [&] { return static_cast<int>(drawn); };
    calls[0].after = [&] { bench_->after_candidate(); };
    calls[1].after = [&] {
      // The reference's timed call has ended: the next round's draw, guards and poison go on the
      // bench's side stream now, beside this round's compare (both outside the timed events). The
      // last round's is dropped after the loop (cancel_ahead).
      if (tc.prepare_ahead) {
        next = timed_spec();
        bench_->prepare_ahead(*next);
      }
      bench_->compare(last_ref);
      scrub(last_ref);
    };
  } else {
    // One draw for every timed call; only the last call's outputs are compared.
    bench_->prepare({s_.ids.next(), DrawVariant::plain, 0, -1});
    bench_->after_candidate();
  }
  // The sequential rule (reward/sequential.h): stop at the first look that settles every threshold.
  Decided decided;
  Json looks = Json::array();
  const SequentialOptions seq{tc.sequential_confidence, tc.sequential_growth};
  if (tc.sequential && !tc.decide_at.empty()) {
    decided = [&, schedule = LookSchedule(tc.min_reps, seq.growth)](const std::vector<std::vector<double>>& s) mutable {
      const auto n = static_cast<int64_t>(s[0].size());
      if (!schedule.due(n)) return false;
      const SequentialLook l = sequential_look(s[0], s[1], tc.decide_at, seq);
      looks.push_back({{"pairs", n}, {"lo", l.interval.lo}, {"hi", l.interval.hi}, {"decided", l.decided}});
      return l.decided;
    };
  }
  // The harness's stages timed by events around every call (outside the timed events): where the
  // timed calls' checks go (phases timed_harness_*_ms).
  bench_->set_stage_timing(check_each);
  auto runs = time_interleaved(calls, s_.dev, tc, decided);
  bench_->cancel_ahead();
  sync_candidate("timing");
  bench_->set_stage_timing(false);
  if (check_each) {
    const HarnessStageMs stages = bench_->take_stage_ms();
    for (int k = 0; k < kHarnessStages; ++k)
      phases_[std::string("timed_harness_") + harness_stage_name(static_cast<HarnessStage>(k)) + "_ms"] = stages[static_cast<size_t>(k)];
  }
  phases_["timed_warmup_ms"] = runs[0].warmup_ms;
  if (!check_each) {
    bench_->compare(last_ref);
    scrub(last_ref);
    sync_candidate("timing");
  }
  const double wall_ms = ms_since(t_time);
  const bool still_right = check_timed_calls(first, bench_->calls());
  const Json probe = req_.verify.probe_words > 0 ? probe_json(first, bench_->calls()) : Json();
  const MemberSpeedup sp = estimate_slowest_member_speedup(member_samples(runs[0], runs[1]));
  Json by_member = Json::array();
  for (const auto& [name, e] : sp.by_member) by_member.push_back({{"member", name}, {"point", e.point}, {"lo", e.lo}, {"hi", e.hi}});
  reply_["timing"] = {{"candidate", stats_json(runs[0].stats)},
                      {"reference", stats_json(runs[1].stats)},
                      {"candidate_samples_ms", runs[0].samples_ms},
                      {"reference_samples_ms", runs[1].samples_ms},
                      {"speedup",
                       {{"point", sp.overall.point},
                        {"lo", sp.overall.lo},
                        {"hi", sp.overall.hi},
                        {"confidence", sp.overall.confidence},
                        {"method", sp.overall.method},
                        {"member", sp.member},
                        {"by_member", by_member}}},
                      {"outputs_right_after_timing", still_right},
                      {"inputs_fresh_per_call", check_each},
                      {"method", runs[0].method + (check_each ? "; every call on fresh inputs from a member of the draw family (shuffled "
                                                                "blocks of every usable member) at a random buffer set, checked like a "
                                                                "verification call after its pair, and counted; judged by the slowest "
                                                                "member's speedup"
                                                              : "")}};
  reply_["timing"]["stop"] = runs[0].stop;
  if (decided)
    reply_["timing"]["sequential"] = {
        {"decide_at", tc.decide_at}, {"confidence", seq.confidence}, {"growth", seq.growth}, {"looks", looks}};
  if (!probe.is_null()) reply_["timing"]["probe"] = probe;
  if (req_.anticheat.speed_of_light && !task_.cost.flops) {
    // No FLOP count (an imported module with ops the importer could not count): no floor to hold it to.
    reply_["timing"]["checks_off"]["speed_of_light"] =
        "the task states no FLOP count (cost.flops), so it has no speed-of-light floor; the check is off for this task";
  } else if (req_.anticheat.speed_of_light) {
    auto t_ceil = std::chrono::steady_clock::now();
    const DeviceCeilings& ceil = s_.ceilings();  // measured once per worker: a start-up cost
    phases_["ceilings_ms"] = ms_since(t_ceil);
    const MathPrecision precision = task_math_precision(task_);  // the task's precision contract
    SpeedOfLight sol = speed_of_light(task_.cost.min_bytes, *task_.cost.flops, precision, ceil, req_.anticheat.sol_headroom);
    bool ok = runs[0].stats.median >= sol.floor_ms;
    add_check("speed_of_light", ok, "the measured time is below what the GPU's memory bandwidth and compute allow for this task",
              {{"median_ms", runs[0].stats.median},
               {"floor_ms", sol.floor_ms},
               {"bytes_floor_ms", sol.bytes_ms},
               {"flops_floor_ms", sol.flops_ms},
               {"min_bytes", task_.cost.min_bytes},
               {"flops", *task_.cost.flops},
               {"headroom", req_.anticheat.sol_headroom},
               {"precision", math_precision_name(precision)},
               {"peak_tflops", sol.peak_tflops},
               {"copy_gbps", ceil.copy_gbps},
               {"matmul_tflops_fp32", ceil.matmul_tflops_fp32},
               {"matmul_tflops_tf32", ceil.matmul_tflops_tf32},
               {"matmul_tflops_fp16", ceil.matmul_tflops_fp16}});
  }
  phases_["time_ms"] = wall_ms;
  // What the checks around the timed calls cost: the stage's wall time less the timed calls themselves.
  const int64_t pairs = static_cast<int64_t>(bench_->calls() - first);
  const double timed = sum(runs[0].samples_ms) + sum(runs[1].samples_ms);
  phases_["timed_checks_ms"] = std::max(0.0, wall_ms - timed);
  phases_["timed_checks_ms_per_pair"] = pairs > 0 ? std::max(0.0, wall_ms - timed) / static_cast<double>(pairs) : 0.0;
}

Json Judgement::probe_json(size_t first, size_t last) const {
  Json out = Json::array();
  for (size_t i = first; i < last; ++i) out.push_back({{"member", variant_name(bench_->record(i).variant)}, {"words", bench_->probe(i)}});
  return out;
}

// The records of calls [first, last): inputs unchanged, guards intact, outputs right, each call.
// Returns whether every compared output was right.
bool Judgement::check_timed_calls(size_t first, size_t last) {
  int64_t changed_calls = 0, guard_calls = 0, mism = 0, unwritten = 0, unchecked = 0, robust = 0;
  Json changed_names = Json::array();
  for (size_t i = first; i < last; ++i) {
    CallRecord r = bench_->record(i);
    if (!r.inputs_changed.empty()) {
      ++changed_calls;
      if (changed_names.empty()) changed_names = r.inputs_changed;
    }
    guard_calls += r.guards_written > 0 ? 1 : 0;
    robust += r.variant != DrawVariant::plain ? 1 : 0;
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      if (!r.compared[o]) {
        ++unchecked;
        continue;
      }
      mism += static_cast<int64_t>(r.outputs[o].mismatches);
      unwritten += static_cast<int64_t>(r.outputs[o].unwritten);
    }
  }
  const int64_t n = static_cast<int64_t>(last - first);
  const bool each = req_.anticheat.verify_timed_calls;
  if (each) {
    add_check("inputs_unchanged", changed_calls == 0,
              "the candidate changed its inputs during timed calls: inputs and parameters are read-only",
              {{"phase", "timing"}, {"calls", n}, {"calls_with_changes", changed_calls}, {"changed", changed_names}});
    add_check("buffer_bounds", guard_calls == 0, "the candidate wrote outside the buffers it was given during timed calls",
              {{"phase", "timing"}, {"calls", n}, {"calls_with_guard_writes", guard_calls}, {"guard_bytes", req_.anticheat.guard_bytes}});
  }
  const bool right = mism == 0 && unchecked == 0;
  if (program_->launches_per_call() < 0) check_host_threads("timing");
  if (each)
    add_check("timed_calls_verified", right,
              "outputs of timed calls were wrong although verification passed: every call must compute the task on its own inputs",
              {{"timed_pairs", n},
               {"mismatching_elements", mism},
               {"unwritten_elements", unwritten},
               {"outputs_not_compared", unchecked},
               {"robustness_draws", robust}});
  return right;
}

}  // namespace kforge
