// Judgement::time(): the candidate and the reference interleaved call by call (timing.h), every
// timed candidate call prepared, checked and compared exactly as a verification call is.
#include <algorithm>
#include <limits>

#include "configs/error.h"
#include "env/process/clock.h"
#include "env/gpu/gpu_judgement.h"
#include "env/gpu/timing.h"
#include "reward/speedup.h"

namespace kforge {

namespace {

Json stats_json(const TimingStats& s) {
  return {{"median_ms", s.median}, {"mean_ms", s.mean}, {"std_ms", s.std}, {"min_ms", s.min}, {"max_ms", s.max},
          {"p10_ms", s.p10},       {"p90_ms", s.p90},   {"n", s.n},       {"rse", s.rse}};
}

double sum(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

// A timed call's draw: the task's own distribution, or (robustness_timed_share of the time) one of
// the task's usable robustness variants, so that no call can assume the usual statistics.
CallSpec Judgement::timed_spec() {
  CallSpec spec{s_.ids.next(), DrawVariant::plain, 0, -1};
  const double share = req_.anticheat.robustness_draws ? req_.anticheat.robustness_timed_share : 0.0;
  const double u = static_cast<double>(s_.ids.next() >> 11) * 0x1.0p-53;
  if (!usable_.empty() && u < share) {
    const VariantCondition& v = usable_[s_.ids.next() % usable_.size()];
    spec.variant = v.variant;
    spec.variant_seed = v.seeds[s_.ids.next() % v.seeds.size()];
  }
  return spec;
}

void Judgement::time() {
  auto t_time = std::chrono::steady_clock::now();
  const TimingConfig& tc = *req_.time;
  const bool check_each = req_.anticheat.verify_timed_calls;
  std::vector<at::Tensor> last_ref;
  const size_t first = bench_->calls();
  std::vector<TimedCall> calls(2);
  calls[0].call = [&] { bench_->run_candidate(); };
  calls[1].call = [&] { last_ref = bench_->run_reference(); };
  bool plain = true;  // the pair just prepared is on the task's own distribution: its times count
  if (check_each) {
    calls[0].before = [&] {
      CallSpec spec = timed_spec();
      plain = spec.variant == DrawVariant::plain;
      bench_->prepare(spec);
    };
    calls[0].counted = [&] { return plain; };
    calls[0].after = [&] { bench_->after_candidate(false); };
    calls[1].after = [&] {
      bench_->compare(last_ref);
      scrub(last_ref);
    };
  } else {
    // One draw for every timed call; only the last call's outputs are compared.
    bench_->prepare(timed_spec());
    bench_->after_candidate(false);
  }
  auto runs = time_interleaved(calls, s_.dev, tc);
  sync_candidate("timing");
  if (!check_each) {
    bench_->compare(last_ref);
    scrub(last_ref);
    sync_candidate("timing");
  }
  const double wall_ms = ms_since(t_time);
  const bool still_right = check_timed_calls(first, bench_->calls());
  SpeedupEstimate sp = estimate_speedup(runs[0].samples_ms, runs[1].samples_ms);
  reply_["timing"] = {{"candidate", stats_json(runs[0].stats)},
                      {"reference", stats_json(runs[1].stats)},
                      {"candidate_samples_ms", runs[0].samples_ms},
                      {"reference_samples_ms", runs[1].samples_ms},
                      {"speedup", {{"point", sp.point}, {"lo", sp.lo}, {"hi", sp.hi}, {"confidence", sp.confidence}, {"method", sp.method}}},
                      {"outputs_right_after_timing", still_right},
                      {"inputs_fresh_per_call", check_each},
                      {"robustness_pairs_not_counted", runs[0].uncounted_ms.size()},
                      {"method", runs[0].method + (check_each ? "; every call on fresh inputs at a random buffer set, checked like a "
                                                                "verification call after its pair; pairs on robustness draws "
                                                                "checked but not counted"
                                                              : "")}};
  if (req_.anticheat.speed_of_light && !task_.cost.flops) {
    // No FLOP count (an imported module with ops the importer could not count): no floor to hold it to.
    reply_["timing"]["checks_off"]["speed_of_light"] =
        "the task states no FLOP count (cost.flops), so it has no speed-of-light floor; the check is off for this task";
  } else if (req_.anticheat.speed_of_light) {
    auto t_ceil = std::chrono::steady_clock::now();
    const DeviceCeilings& ceil = s_.ceilings();  // measured once per worker: a start-up cost
    phases_["ceilings_ms"] = ms_since(t_ceil);
    SpeedOfLight sol = speed_of_light(task_.cost.min_bytes, *task_.cost.flops, ceil, req_.anticheat.sol_headroom);
    bool ok = runs[0].stats.median >= sol.floor_ms;
    add_check("speed_of_light", ok, "the measured time is below what the GPU's memory bandwidth and compute allow for this task",
              {{"median_ms", runs[0].stats.median}, {"floor_ms", sol.floor_ms}, {"bytes_floor_ms", sol.bytes_ms},
               {"flops_floor_ms", sol.flops_ms}, {"min_bytes", task_.cost.min_bytes}, {"flops", *task_.cost.flops},
               {"headroom", req_.anticheat.sol_headroom}, {"copy_gbps", ceil.copy_gbps}, {"matmul_tflops_fp32", ceil.matmul_tflops_fp32},
               {"matmul_tflops_fp16", ceil.matmul_tflops_fp16}});
  }
  phases_["time_ms"] = wall_ms;
  // What the checks around the timed calls cost: the stage's wall time less the timed calls themselves.
  const int64_t pairs = static_cast<int64_t>(bench_->calls() - first);
  const double timed =
      sum(runs[0].samples_ms) + sum(runs[1].samples_ms) + sum(runs[0].uncounted_ms) + sum(runs[1].uncounted_ms);
  phases_["timed_checks_ms"] = std::max(0.0, wall_ms - timed);
  phases_["timed_checks_ms_per_pair"] = pairs > 0 ? std::max(0.0, wall_ms - timed) / static_cast<double>(pairs) : 0.0;
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
    add_check("inputs_unchanged", changed_calls == 0, "the candidate changed its inputs during timed calls: inputs and parameters are read-only",
              {{"phase", "timing"}, {"calls", n}, {"calls_with_changes", changed_calls}, {"changed", changed_names}});
    add_check("buffer_bounds", guard_calls == 0, "the candidate wrote outside the buffers it was given during timed calls",
              {{"phase", "timing"}, {"calls", n}, {"calls_with_guard_writes", guard_calls}, {"guard_bytes", req_.anticheat.guard_bytes}});
  }
  const bool right = mism == 0 && unchecked == 0;
  if (each)
    add_check("timed_calls_verified", right,
              "outputs of timed calls were wrong although verification passed: every call must compute the task on its own inputs",
              {{"timed_pairs", n}, {"mismatching_elements", mism}, {"unwritten_elements", unwritten}, {"outputs_not_compared", unchecked},
               {"robustness_draws", robust}});
  return right;
}

}  // namespace kforge
