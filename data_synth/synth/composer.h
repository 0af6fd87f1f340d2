#pragma once
// Drawing candidate tasks: 1 to 5 operators composed into a DAG whose shapes flow, the first from a
// family drawn by weight, each later one from those that accept the tensor so far (some reuse an
// earlier tensor: residual adds, gates). Shapes are drawn per family; then the leading batch
// dimension B is sized so that the estimated eager time (FLOPs and bytes against the configured
// GPU ceilings) lands in a log-uniform target. Pure C++: no libtorch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data_synth/synth/synth_config.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

// A small deterministic generator: the same seed gives the same stream with every standard library.
class SynthRng {
 public:
  explicit SynthRng(uint64_t seed);
  uint64_t next();
  double uniform();          // [0, 1)
  int64_t below(int64_t n);  // [0, n)
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int64_t>(v.size())))];
  }
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

// Picks a key with probability proportional to its weight.
template <class K>
K pick_weighted(SynthRng& rng, const std::map<K, double>& weights) {
  double total = 0;
  for (const auto& [k, w] : weights) total += w;
  double x = rng.uniform() * total;
  for (const auto& [k, w] : weights) {
    if (x < w) return k;
    x -= w;
  }
  return weights.rbegin()->first;
}

// Estimated eager time on the configured GPU: per operator, the larger of FLOPs / peak and bytes
// (its inputs, parameters and output) / bandwidth, plus a launch overhead.
double estimate_eager_ms(const ResolvedGraph& g, DType dtype, const CostModelConfig& cost);
// Bytes of the arguments and of every operator's result.
double footprint_bytes(const ResolvedGraph& g);

struct SynthCandidate {
  TaskSpec task;                 // full dims, check_dims set when a smaller size resolves
  std::string family;            // of the first operator
  std::vector<std::string> ops;  // in node order
  double est_ms = 0;
};

struct DrawOutcome {
  std::optional<SynthCandidate> candidate;
  std::string rejected;  // when no candidate: compose_failed | est_runtime | memory
  std::string detail;
};

// The operators the synthesizer may place (deterministic ones only), per family.
const std::map<std::string, std::vector<std::string>>& synth_families();

class Composer {
 public:
  explicit Composer(const SynthConfig& config) : cfg_(config) {}
  // One candidate task named `id` whose draws use `task_seed`.
  DrawOutcome draw(SynthRng& rng, const std::string& id, uint64_t task_seed) const;
  // Forced choices, for tests: the number of operators and the first operator's family.
  DrawOutcome draw_with(SynthRng& rng, const std::string& id, uint64_t task_seed, int n_ops, const std::string& family, DType dtype) const;

 private:
  const SynthConfig& cfg_;
};

}  // namespace kforge
