// kforge_eval_bench sequential [--requests N] [--pairs P] [--mib M] [--out FILE]
//
// Issue 31's proof of the sequential rule on the GPU. One reference, a copy of M MiB (default
// 512) on the device, is timed interleaved with four kinds of candidate: the same copy (A/A), and
// copies of M/1.04, M/1.06 and M/1.45 MiB (a bandwidth-bound copy's time follows its bytes, so
// they sit just below and just above the 1.05x step, and beyond torch.compile's). Every request is
// a long run: P pairs (default 300) timed exactly as timing.h times them (warm-up, L2 flush and
// events around every call, interleaved), with the rule off. Each run is then replayed through
// sequential_stop() with the thresholds of the default reward config and a stored torch.compile
// time 0.8x eager's (1.05 and 1.3125): since the rule only reads the pairs so far, its stop on a
// run is where the worker would have stopped on the same pairs. Printed and written: per kind,
// the decisions (submission_reward's rule on the stopped prefix against the whole run) that
// differ, and the pairs needed against P.
#include "tools/bench/sequential_bench.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "configs/error.h"
#include "env/judge/timing.h"
#include "reward/episode_reward.h"
#include "reward/reward_config.h"
#include "reward/sequential.h"
#include "tools/bench/bench_result.h"

namespace kforge::bench {

namespace {

std::string rule_on(const RewardConfig& config, const StoredBaseline& base, const TimedRun& cand, const TimedRun& ref, size_t n) {
  SubmissionOutcome o;
  o.verdict = SubmissionOutcome::Verdict::pass;
  o.candidate_ms.assign(cand.samples_ms.begin(), cand.samples_ms.begin() + static_cast<std::ptrdiff_t>(n));
  o.eager_ms.assign(ref.samples_ms.begin(), ref.samples_ms.begin() + static_cast<std::ptrdiff_t>(n));
  return submission_reward(config, o, base).rule;
}

}  // namespace

int sequential(int argc, char** argv) {
  const int requests = std::stoi(arg_value(argc, argv, "--requests", "60"));
  const int pairs = std::stoi(arg_value(argc, argv, "--pairs", "300"));
  const int64_t mib = std::stoll(arg_value(argc, argv, "--mib", "512"));
  KFORGE_CHECK(cuda_available(), runtime, "kforge_eval_bench sequential times on a GPU; no CUDA device is available here");
  const at::Device dev(at::kCUDA, 0);
  const int64_t n = mib << 20;
  const at::Tensor src = at::rand({n / 4}, at::TensorOptions().device(dev));
  at::Tensor dst = at::empty_like(src);
  auto copy = [&](int64_t elems) { return [&, elems] { dst.narrow(0, 0, elems).copy_(src.narrow(0, 0, elems)); }; };

  RewardConfig config;
  StoredBaseline base;
  base.eager_ms = 2.0;
  base.compile_ms = 1.6;
  const std::vector<double> thresholds = *decision_thresholds(config, base);
  TimingConfig tc;
  tc.min_reps = tc.max_reps = pairs;
  tc.budget_ms = 1e9;
  const int64_t first_look = TimingConfig{}.min_reps;

  nlohmann::json kinds = nlohmann::json::array();
  int total = 0, differ_total = 0;
  double pairs_total = 0;
  for (double speedup : {1.0, 1.04, 1.06, 1.45}) {
    const auto elems = static_cast<int64_t>(static_cast<double>(n / 4) / speedup);
    int differ = 0;
    double needed = 0;
    std::vector<double> point;
    for (int i = 0; i < requests; ++i) {
      std::vector<TimedCall> calls{{copy(elems), nullptr, nullptr, nullptr}, {copy(n / 4), nullptr, nullptr, nullptr}};
      const std::vector<TimedRun> runs = time_interleaved(calls, dev, tc);
      const auto stop = static_cast<size_t>(sequential_stop(runs[0].samples_ms, runs[1].samples_ms, thresholds, first_look));
      const std::string at_stop = rule_on(config, base, runs[0], runs[1], stop);
      const std::string long_run = rule_on(config, base, runs[0], runs[1], runs[0].samples_ms.size());
      differ += at_stop != long_run ? 1 : 0;
      needed += static_cast<double>(stop);
      point.push_back(runs[1].stats.median / runs[0].stats.median);
      std::printf("speedup %.2fx request %3d: stopped at %zu of %d pairs, %s (long run: %s), point %.4f\n", speedup, i, stop, pairs,
                  at_stop.c_str(), long_run.c_str(), point.back());
    }
    std::sort(point.begin(), point.end());
    kinds.push_back({{"built_speedup", speedup},
                     {"measured_speedup_p50", point[point.size() / 2]},
                     {"requests", requests},
                     {"decisions_differ", differ},
                     {"pairs_needed_mean", needed / requests},
                     {"pairs_long_run", pairs}});
    total += requests;
    differ_total += differ;
    pairs_total += needed;
  }
  const nlohmann::json fig = {{"thresholds", thresholds},
                              {"copy_mib", mib},
                              {"requests", total},
                              {"decisions_differ", differ_total},
                              {"decisions_differ_pct", 100.0 * differ_total / total},
                              {"pairs_needed_mean", pairs_total / total},
                              {"pairs_long_run", pairs},
                              {"kinds", kinds}};
  std::printf("%s\n", fig.dump(2).c_str());
  const DeviceInfo info = device_info(dev);
  write_result(arg_value(argc, argv, "--out", "eval_sequential.json"),
               {{"name", info.name}, {"cuda", info.cuda_version}, {"torch", info.torch_version}},
               "kforge_eval_bench sequential --requests " + std::to_string(requests) + " --pairs " + std::to_string(pairs) + " --mib " +
                   std::to_string(mib),
               fig);
  return differ_total * 100 <= total ? 0 : 1;
}

}  // namespace kforge::bench
