#pragma once
// Typed view of configs/synth.yaml: how `kforge synth` draws, sizes, filters and splits tasks.
// Defaults live beside the fields; the YAML file documents them. Loading validates every value
// once and rejects unknown keys (errors name the key, the file and the line).
#include <cstdint>
#include <map>
#include <string>

#include "configs/eval_config.h"

namespace kforge {

class YamlNode;

// The rough ceilings of the target GPU that turn FLOP and byte counts into an estimated eager time.
struct CostModelConfig {
  double bandwidth_gb_s = 4000;                  // HBM bandwidth (H200: ~4.8 TB/s peak, ~4 achieved)
  std::map<std::string, double> peak_tflops = {  // per dtype, without TF32 for float32
      {"float32", 50},
      {"float16", 400},
      {"bfloat16", 400}};
  double launch_overhead_us = 5;  // per operator (eager launches one kernel or more each)
  static CostModelConfig from_yaml(const YamlNode& node);
};

struct CpuCheckConfig {
  bool enabled = true;                     // run the C++ reference on the CPU at reduced dims
  int64_t check_batch = 2;                 // B at the check dims
  int64_t check_spatial = 16;              // named spatial dims (H, W, L, D, S) shrink to at most this
  double max_flops = 4e8;                  // candidates whose check costs more are rejected (cpu_budget)
  double max_bytes = 256e6;                // same, for the bytes the check touches
  double min_informative_fraction = 0.01;  // an all-zeros or constant answer must fail on this share of elements
  // Every input matters (data_synth/reference/sensitivity.h, checks (a)-(c)): each argument, one
  // random row and one random channel of it, replaced by its mean must move the answer beyond
  // tolerance on each of `input_draws` draws (else input_matters).
  bool input_matters = true;
  bool input_slices = false;  // the row and channel ablations too (off at check dims: configs/synth.yaml)
  int input_draws = 2;
};

// Other shapes verification also runs a candidate at (issue 30; data_synth/synth/extra_shapes.h):
// an odd size, a batch of 1 and every dim one smaller, each only where the graph resolves there and
// the footprint does not grow.
struct ExtraShapeConfig {
  bool enabled = true;
  int max_shapes = 4;  // at most this many per task (1-5: one per kind; empty only where a reference check is given)
  // > 0: a `large` shape too, the largest batch whose footprint is at most this many bytes (the
  // largest size that fits a judge's share of the GPU); 0: none (the default until its cost per
  // verify is measured on a GPU)
  double large_bytes = 0;
};

struct DecontaminationConfig {
  std::string signatures = "datasets/kernelbench_signatures.json";  // "" disables it
  double op_similarity = 1.0;     // LCS(op sequences) / max length at or above which sequences count as similar ...
  double shape_similarity = 0.5;  // ... and shapes at or above which they are (1 = same shapes)
  int sequence_only_min_ops = 3;  // similar sequences this long are contamination whatever their shapes
};

struct SynthConfig {
  uint64_t seed = 1;                // the whole run is a pure function of the config and this seed
  int64_t target_tasks = 6900;      // kept tasks to reach (the GPU stage rejects about 10.5 %: >= 6000 remain)
  int64_t shard_candidates = 1000;  // candidates drawn per shard (the unit of resumption)
  int64_t max_shards = 1000;        // give up after this many shards
  std::map<int, double> ops_per_task = {{1, 0.04}, {2, 0.80}, {3, 0.10}, {4, 0.04}, {5, 0.02}};
  std::map<std::string, double> families = {  // the first operator's family
      {"matmul", 0.22},  {"convolution", 0.22}, {"elementwise", 0.10}, {"reduction", 0.10}, {"normalization", 0.12},
      {"pooling", 0.08}, {"attention", 0.06},   {"loss", 0.05},        {"embedding", 0.05}};
  std::map<std::string, double> dtypes = {{"float32", 0.7}, {"bfloat16", 0.2}, {"float16", 0.1}};
  double target_ms_low = 1.5;  // the batch is sized for a log-uniform estimated eager time in here
  double target_ms_high = 40;
  double window_ms_low = 1;  // candidates whose estimate falls outside are rejected (est_runtime)
  double window_ms_high = 100;
  double max_task_gb = 16;  // arguments + every intermediate, at the full dims
  int64_t max_batch = int64_t{1} << 22;
  double residual_probability = 0.25;  // a binary follow-up reuses an earlier node (a DAG, not a chain)
  double heldout_fraction = 0.06;      // at least this share of kept tasks goes to heldout (by operator sequence)
  CostModelConfig cost;
  CpuCheckConfig cpu_check;
  ExtraShapeConfig extra_shapes;
  DecontaminationConfig decontamination;
  // How the GPU stage (tools/dataset/synth_gpu/) times the eager and torch.compile baselines: env/judge/timing.h's
  // method, with fewer calls than the evaluator's (configs/eval.yaml timing): thousands of tasks.
  TimingConfig baseline_timing = default_baseline_timing();
  std::string origin;  // the file it came from ("" for defaults)

  static TimingConfig default_baseline_timing();
  static SynthConfig from_yaml(const YamlNode& node);
  static SynthConfig load(const std::string& path);
};

}  // namespace kforge
