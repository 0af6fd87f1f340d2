#include "data_synth/synth/extra_shapes.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "configs/error.h"
#include "data_synth/synth/composer.h"

namespace kforge {

namespace {

// Odd and off-by-one sizes stay at or above this: a dim of 1 turns an unbiased variance over it into
// NaN and makes PyTorch's instance norm refuse the input (only batch_one sets B to 1).
constexpr int64_t kMinDim = 2;
constexpr uint64_t kExtraShapeSalt = 0x6578747261736870ULL;  // "extrashp": a stream of its own beside the task's draws

// The task at its own dims, what every shape is held against.
struct OwnShape {
  const TaskSpec& task;
  ResolvedGraph resolved;
  double footprint = 0;
};

bool is_index_draw(const Draw& d) { return d.dist == DrawDist::randint; }

// The graph resolves at `dims` with every index draw as at the task's own dims: the task keeps its
// stored draws at other dims (TaskSpec::with_dims), so a smaller table or class count would leave
// indices out of range.
std::optional<ResolvedGraph> resolve_at(const OwnShape& own, const DimEnv& dims) {
  ResolvedGraph g;
  try {
    g = resolve_graph(own.task.graph, dims);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (g.arguments.size() != own.resolved.arguments.size()) return std::nullopt;
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    const Draw& base = own.resolved.arguments[i].draw;
    bool stated_index = i < own.task.arguments.size() && is_index_draw(own.task.arguments[i].draw);
    if ((is_index_draw(base) || stated_index) && !(g.arguments[i].draw == base)) return std::nullopt;
  }
  return g;
}

// `target` (a full dim map) when it resolves; else the task's dims with `target`'s values applied
// one dim at a time in name order, each kept when it resolves with those kept before.
DimEnv resolving_part(const OwnShape& own, const DimEnv& target) {
  if (resolve_at(own, target)) return target;
  DimEnv cur = own.task.dims;
  for (const auto& [k, v] : target) {
    if (cur.at(k) == v) continue;
    DimEnv trial = cur;
    trial[k] = v;
    if (resolve_at(own, trial)) cur = std::move(trial);
  }
  return cur;
}

// An odd size near d x f (f in [0.3, 0.7]): round(d x f) is at most d - 1, one less when even, and
// at least 3 (kMinDim and odd); d itself (no change) where no odd size lies in [3, d - 1].
int64_t odd_near(int64_t d, double f) {
  if (d <= 3) return d;
  int64_t v = std::llround(static_cast<double>(d) * f);
  if (v % 2 == 0) --v;
  return std::max<int64_t>(v, 3);
}

DimEnv odd_target(const TaskSpec& t) {
  uint64_t seed = t.seed ^ kExtraShapeSalt;
  SynthRng rng(seed);
  DimEnv d = t.dims;
  for (auto& [k, v] : d) {
    double f = 0.3 + 0.4 * rng.uniform();  // drawn for every dim, so one dim's size does not depend on the others'
    v = odd_near(v, f);
  }
  return d;
}

DimEnv off_by_one_target(const TaskSpec& t) {
  DimEnv d = t.dims;
  for (auto& [k, v] : d)
    if (v > kMinDim) --v;
  return d;
}

// Every output of the graph at these dims has no element.
bool outputs_empty(const ResolvedGraph& g) {
  for (const TensorMeta& m : g.output_metas)
    if (numel(m.shape) != 0) return false;
  return !g.output_metas.empty();
}

// The largest batch above the task's own whose footprint is at most `bytes`: only where no output
// reduces over B (each is empty at B = 0), so that every reduction keeps its length and the task's
// stored tolerance holds, and where the graph resolves with its index draws unchanged.
std::optional<DimEnv> large_target(const OwnShape& own, double bytes) {
  const auto b = own.task.dims.find("B");
  if (b == own.task.dims.end() || b->second < 1 || !(bytes > own.footprint)) return std::nullopt;
  auto at = [&](int64_t v) {
    DimEnv d = own.task.dims;
    d["B"] = v;
    return d;
  };
  const std::optional<ResolvedGraph> zero = resolve_at(own, at(0));
  if (!zero || !outputs_empty(*zero)) return std::nullopt;
  auto fits = [&](int64_t v) {
    const std::optional<ResolvedGraph> g = resolve_at(own, at(v));
    return g && footprint_bytes(*g) <= bytes;
  };
  int64_t lo = b->second;  // fits: its footprint is the task's own
  while (lo < (int64_t{1} << 40) && fits(lo * 2)) lo *= 2;
  for (int64_t hi = lo * 2; hi - lo > 1;) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  if (lo == b->second) return std::nullopt;
  return at(lo);
}

}  // namespace

std::vector<ExtraShape> draw_extra_shapes(const TaskSpec& t, const ExtraShapeConfig& cfg, const EmptyShapeCheck& empty_ok) {
  std::vector<ExtraShape> out;
  if (!cfg.enabled || t.imported()) return out;
  OwnShape own{t, resolve_graph(t.graph, t.dims)};
  own.footprint = footprint_bytes(own.resolved);

  std::vector<std::pair<std::string, DimEnv>> targets;  // full dim maps, in kind order
  targets.emplace_back("odd", resolving_part(own, odd_target(t)));
  if (auto b = t.dims.find("B"); b != t.dims.end() && b->second > 1) {
    DimEnv d = t.dims;
    d["B"] = 1;
    targets.emplace_back("batch_one", d);
  }
  targets.emplace_back("off_by_one", resolving_part(own, off_by_one_target(t)));
  if (empty_ok && t.dims.count("B")) {
    DimEnv d = t.dims;
    d["B"] = 0;
    targets.emplace_back("empty", d);
  }
  if (cfg.large_bytes > 0)
    if (std::optional<DimEnv> d = large_target(own, cfg.large_bytes)) targets.emplace_back("large", *d);

  std::vector<DimEnv> seen = {t.dims};
  for (const auto& [kind, full] : targets) {
    if (static_cast<int>(out.size()) >= cfg.max_shapes) break;
    if (std::find(seen.begin(), seen.end(), full) != seen.end()) continue;
    std::optional<ResolvedGraph> g = resolve_at(own, full);
    if (!g || (kind != "large" && footprint_bytes(*g) > own.footprint)) continue;
    if (kind == "empty" && (!outputs_empty(*g) || !empty_ok(t.with_dims({{"B", 0}})).empty())) continue;
    ExtraShape s{kind, {}, footprint_bytes(*g)};
    for (const auto& [k, v] : full)
      if (t.dims.at(k) != v) s.dims[k] = v;
    seen.push_back(full);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<DimEnv> draw_extra_dims(const TaskSpec& t, const ExtraShapeConfig& cfg, const EmptyShapeCheck& empty_ok) {
  std::vector<DimEnv> out;
  for (auto& s : draw_extra_shapes(t, cfg, empty_ok)) out.push_back(std::move(s.dims));
  return out;
}

std::string spec_with_extra_dims(const std::string& text, const std::vector<DimEnv>& extra, const std::string& origin) {
  // A top-level key starts a line with neither indentation, comment nor list marker.
  auto top_level = [](const std::string& ln) {
    return !ln.empty() && ln[0] != ' ' && ln[0] != '\t' && ln[0] != '#' && ln[0] != '-' && ln.find(':') != std::string::npos;
  };
  std::string block;
  if (!extra.empty()) {
    YAML::Emitter e;  // as task_to_yaml writes it
    e << YAML::BeginMap << YAML::Key << "extra_dims" << YAML::Value << YAML::BeginSeq;
    for (const DimEnv& d : extra) {
      e << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : d) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
    block = std::string(e.c_str()) + "\n";
  }
  std::istringstream in(text);
  std::string ln, out;
  bool skip = false, placed = false, last_kept = false;
  while (std::getline(in, ln)) {
    if (top_level(ln)) {
      skip = ln.rfind("extra_dims:", 0) == 0;
      if (!placed && ln.rfind("graph:", 0) == 0) {
        out += block;
        placed = true;
      }
    }
    last_kept = !skip;
    if (!skip) out += ln + "\n";
  }
  KFORGE_CHECK(placed, spec, origin << ": no top-level 'graph:' to put extra_dims before (an imported task has no dims)");
  if (!text.empty() && text.back() != '\n' && last_kept) out.pop_back();  // the last line as it was

  TaskSpec want = parse_task(text, origin);
  want.extra_dims = extra;
  TaskSpec got = parse_task(out, origin);
  KFORGE_CHECK(task_to_yaml(got) == task_to_yaml(want), spec,
               origin << ": the spec with extra_dims written is not the same task with those extra dims");
  return out;
}

}  // namespace kforge
