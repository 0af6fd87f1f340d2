// Which robustness draws (data_synth/reference/draw_family.h) are well-conditioned on a sample of a dataset's
// tasks, as the GPU worker decides them: per task, each variant's reference in the task dtype
// against the float64 reference on the same inputs, under the task's tolerance and the shipped
// margin. Prints one line per task and a summary; writes a results JSON (tools/bench/results/).
//
//   kforge_robustness_coverage datasets/synth/dataset.h5.xz [--n 240] [--skip 0] [--budget-s 240] [--json OUT]
//                              [--split on]
//
// --split on: where each task's conditioning time goes (ConditioningCost: the arguments' copies and
// members, the float64 reference, the reference in the task's dtypes, the comparison; the device
// waited for after each stage, so the total is a little slower), per task and summed.
//
// The sample is drawn across (dtype, first operator) groups in turn, so every dtype and operator
// family is represented rather than the most common ones. Its order is fixed (one seed), so
// `--skip K` goes on where a run that measured K tasks stopped: two device calls give one sample.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "anticheat/dynamic_checks.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/reference/draw_family.h"
#include "data_synth/reference/reference.h"
#include "env/cuda/cuda_probe.h"
#include "env/judge/call_bench.h"
#include "env/judge/draw_kernel.h"
#include "env/judge/timing.h"
#include "env/process/clock.h"

using namespace kforge;
using Json = nlohmann::json;

namespace {

struct CoverageArgs {
  std::string path, json_out;
  int n = 240, skip = 0;
  double budget_s = 240;
  bool split = false;
};

// The sample: across (first operator, dtype) groups in turn; groups_count gets how many groups.
std::vector<const DatasetRow*> draw_sample(const Dataset& ds, int n, size_t& groups_count) {
  std::map<std::string, std::vector<const DatasetRow*>> groups;
  for (const auto& r : ds.rows)
    if (!r.rejected()) groups[r.ops.substr(0, r.ops.find(',')) + "/" + r.dtype].push_back(&r);
  groups_count = groups.size();
  std::mt19937_64 rng(20261201);
  for (auto& [k, g] : groups) std::shuffle(g.begin(), g.end(), rng);
  // Groups in a shuffled order (not sorted by dtype), one task of each per round: a budget that
  // ends early still leaves every dtype and operator family represented.
  std::vector<std::vector<const DatasetRow*>*> order;
  for (auto& [k, g] : groups) order.push_back(&g);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<const DatasetRow*> sample;
  for (size_t round = 0; static_cast<int>(sample.size()) < n; ++round) {
    bool any = false;
    for (auto* g : order)
      if (round < g->size() && static_cast<int>(sample.size()) < n) {
        sample.push_back((*g)[round]);
        any = true;
      }
    if (!any) break;
  }
  return sample;
}

// The counts over the tasks conditioned so far, and a row per task for the JSON.
struct Coverage {
  std::map<std::string, int> usable_by_variant, applies_by_variant, tasks_by_dtype, covered_by_dtype;
  int done = 0, covered = 0, failed = 0;
  int unavailable = 0;  // tasks whose conditions the device had no memory for (the worker refuses to judge them)
  Json rows = Json::array();
  std::vector<double> ms;   // each task's conditioning
  ConditioningCost split;   // summed over the tasks (--split on)
  double eager_ms_sum = 0;  // the tasks' stored eager times, where known
  int eager_known = 0;
};

// One task: its variants conditioned on the device and counted; a line printed either way.
void condition_task(const DatasetRow& r, DeviceDrawer& drawer, const at::Device& dev, double margin, bool split, Coverage& cov) {
  TaskSpec task = parse_task(r.spec_yaml, r.id);
  // As the GPU worker conditions (GpuWorker::State::conditions_for): the task's own draw made again for every try.
  const PlainDraw draw = [&] {
    return draw_arguments_on_device(task, {task.seed, 12345, 678}, drawer, dev, at::cuda::getCurrentCUDAStream().stream());
  };
  auto t_task = std::chrono::steady_clock::now();
  TaskConditions tcs;
  ConditioningCost cost;
  try {
    tcs = condition_variants(task, draw, 99, margin, 2, device_member(drawer), split ? &cost : nullptr);
  } catch (const std::exception& e) {
    ++cov.failed;
    std::printf("%-22s %-9s ERROR %s\n", r.id.c_str(), r.dtype.c_str(), e.what());
    return;
  }
  double ms = ms_since(t_task);
  int usable = 0;
  std::string line;
  Json vs = Json::object();
  for (const auto& c : tcs.variants) {
    ++cov.applies_by_variant[variant_name(c.variant)];
    if (c.usable) {
      ++usable;
      ++cov.usable_by_variant[variant_name(c.variant)];
    }
    line += std::string(variant_name(c.variant)) + (c.usable ? "+ " : "- ");
    vs[variant_name(c.variant)] = {{"usable", c.usable}, {"worst_ratio", c.worst_ratio}, {"reason", c.reason}};
  }
  ++cov.done;
  ++cov.tasks_by_dtype[r.dtype];
  if (usable > 0) {
    ++cov.covered;
    ++cov.covered_by_dtype[r.dtype];
  }
  cov.rows.push_back({{"id", r.id}, {"dtype", r.dtype}, {"ops", r.ops}, {"plain_ratio", tcs.plain_ratio}, {"variants", vs}, {"ms", ms}});
  if (!tcs.unavailable.empty()) {
    ++cov.unavailable;
    cov.rows.back()["unavailable"] = tcs.unavailable;
    line = "UNAVAILABLE (" + tcs.unavailable.substr(0, 60) + ") " + line;
  }
  cov.ms.push_back(ms);
  if (std::isfinite(r.eager_ms) && r.eager_ms > 0) {
    cov.rows.back()["eager_ms"] = r.eager_ms;
    cov.eager_ms_sum += r.eager_ms;
    ++cov.eager_known;
  }
  if (split) {
    cov.rows.back()["split"] = {{"tries", cost.tries},
                                {"prepare_ms", cost.prepare_ms},
                                {"reference64_ms", cost.reference64_ms},
                                {"reference_ms", cost.reference_ms},
                                {"compare_ms", cost.compare_ms}};
    cov.split += cost;
  }
  std::printf("%-22s %-9s %-40.40s %5.0f ms  %s\n", r.id.c_str(), r.dtype.c_str(), r.ops.c_str(), ms, line.c_str());
  std::fflush(stdout);
  c10::cuda::CUDACachingAllocator::emptyCache();
}

// The summary lines, and the record's figures.
Json summarize(Coverage& cov, size_t groups_count) {
  std::printf(
      "\n%d tasks (%zu groups, %d errors): %d with at least one usable robustness draw (%.1f %%); %d unavailable (out of "
      "device memory: the worker refuses to judge them)\n",
      cov.done, groups_count, cov.failed, cov.covered, cov.done ? 100.0 * cov.covered / cov.done : 0.0, cov.unavailable);
  std::vector<double> ms = cov.ms;
  std::sort(ms.begin(), ms.end());
  double total = 0;
  for (double m : ms) total += m;
  if (!ms.empty())
    std::printf(
        "conditioning: %.0f ms p50, %.0f ms mean a task%s\n", ms[ms.size() / 2], total / static_cast<double>(ms.size()),
        cov.eager_known ? (", against " + std::to_string(cov.eager_ms_sum / cov.eager_known) + " ms of eager reference").c_str() : "");
  Json figures = {{"robustness_tasks_sampled_count", cov.done},
                  {"robustness_tasks_with_usable_draw_pct", cov.done ? 100.0 * cov.covered / cov.done : 0.0},
                  {"robustness_errors_count", cov.failed},
                  {"robustness_unavailable_count", cov.unavailable}};
  if (!ms.empty()) {
    figures["conditioning_ms_p50"] = ms[ms.size() / 2];
    figures["conditioning_ms_mean"] = total / static_cast<double>(ms.size());
  }
  if (cov.split.tries > 0) {
    const ConditioningCost& c = cov.split;
    const double sum = c.prepare_ms + c.reference64_ms + c.reference_ms + c.compare_ms;
    std::printf(
        "  split over %d reference pairs (%.1f a task): arguments and members %.1f %%, float64 reference %.1f %%, "
        "reference %.1f %%, comparison %.1f %%\n",
        c.tries, static_cast<double>(c.tries) / std::max(1, cov.done), 100 * c.prepare_ms / sum, 100 * c.reference64_ms / sum,
        100 * c.reference_ms / sum, 100 * c.compare_ms / sum);
    figures["conditioning_tries_per_task_mean"] = static_cast<double>(c.tries) / std::max(1, cov.done);
    figures["conditioning_prepare_pct"] = 100 * c.prepare_ms / sum;
    figures["conditioning_reference64_pct"] = 100 * c.reference64_ms / sum;
    figures["conditioning_reference_pct"] = 100 * c.reference_ms / sum;
    figures["conditioning_compare_pct"] = 100 * c.compare_ms / sum;
  }
  for (const auto& [v, k] : cov.applies_by_variant) {
    double pct = 100.0 * cov.usable_by_variant[v] / std::max(1, k);
    std::printf("  %-15s usable on %4d of %4d tasks it applies to (%.1f %%)\n", v.c_str(), cov.usable_by_variant[v], k, pct);
    figures["robustness_" + v + "_usable_pct"] = pct;
  }
  for (const auto& [d, k] : cov.tasks_by_dtype) {
    double pct = 100.0 * cov.covered_by_dtype[d] / std::max(1, k);
    std::printf("  %-9s %4d tasks, %.1f %% with a usable draw\n", d.c_str(), k, pct);
    figures["robustness_" + d + "_covered_pct"] = pct;
  }
  return figures;
}

void write_json(const CoverageArgs& a, const at::Device& dev, const cudaDeviceProp& prop, Json figures, Json rows) {
  DeviceInfo di = device_info(dev);
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const char* commit = std::getenv("KFORGE_COMMIT");
  Json doc = {{"gpu", prop.name},
              {"driver", di.driver_version},
              {"cuda", di.cuda_version},
              {"torch", di.torch_version},
              {"date", date},
              {"commit", commit ? commit : "unknown"},
              {"command", "kforge_robustness_coverage " + a.path + " --n " + std::to_string(a.n) + " --skip " + std::to_string(a.skip) +
                              (a.split ? " --split on" : "")},
              {"figures", figures},
              {"tasks", rows}};
  std::ofstream(a.json_out) << doc.dump(1) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET [--n N] [--skip K] [--budget-s S] [--json OUT] [--split on]\n", argv[0]);
    return 2;
  }
  CoverageArgs a;
  a.path = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--n")
      a.n = std::atoi(argv[i + 1]);
    else if (k == "--skip")
      a.skip = std::atoi(argv[i + 1]);
    else if (k == "--budget-s")
      a.budget_s = std::atof(argv[i + 1]);
    else if (k == "--json")
      a.json_out = argv[i + 1];
    else if (k == "--split")
      a.split = std::string(argv[i + 1]) == "on";
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    Dataset ds = read_dataset(a.path);
    size_t groups_count = 0;
    std::vector<const DatasetRow*> sample = draw_sample(ds, a.skip + a.n, groups_count);
    sample.erase(sample.begin(), sample.begin() + std::min<size_t>(sample.size(), std::max(0, a.skip)));
    at::Device dev(at::kCUDA, 0);
    c10::cuda::CUDAGuard guard(dev);
    apply_reference_precision();
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    DeviceDrawer drawer(device_arch(0));
    const double margin = DynamicCheckConfig{}.robustness_margin;
    Coverage cov;
    auto t0 = std::chrono::steady_clock::now();
    for (const DatasetRow* r : sample) {
      if (ms_since(t0) > a.budget_s * 1e3) break;
      condition_task(*r, drawer, dev, margin, a.split, cov);
    }
    Json figures = summarize(cov, groups_count);
    if (!a.json_out.empty()) write_json(a, dev, prop, figures, cov.rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "robustness_coverage: %s\n", e.what());
    return 1;
  }
  return 0;
}
