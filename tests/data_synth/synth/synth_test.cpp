// Synthesis without libtorch: composition and shape flow, sizing, reproducibility, the operator
// mix, dedup hashes, decontamination, splits, the config's errors, the HDF5 round trip.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/remove_tree.h"
#include "configs/yaml_reader.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/synth/composer.h"
#include "data_synth/synth/dedup.h"
#include "data_synth/synth/synth_config.h"
#include "data_synth/synth/synth_pipeline.h"
#include "data_synth/task/render_python.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

std::vector<SynthCandidate> draw_many(const SynthConfig& cfg, uint64_t seed, int n) {
  Composer c(cfg);
  SynthRng rng(seed);
  std::vector<SynthCandidate> out;
  for (int i = 0; i < n; ++i) {
    DrawOutcome d = c.draw(rng, "t" + std::to_string(i), 100 + i);
    if (d.candidate) out.push_back(*d.candidate);
  }
  return out;
}

TaskSpec parse(const std::string& yaml) { return parse_task(yaml, "test.yaml"); }

const char* kChain = R"(kforge_task: 1
id: a
source: synth
split: train
seed: 1
dtype: float32
dims: {B: 8, D: 64}
graph:
  inputs: [{name: x, shape: [B, D]}]
  nodes:
    - {id: fc, op: linear, in: [x], attrs: {out_features: 32}}
    - {id: act, op: relu, in: [fc]}
  outputs: [act]
provenance: {generator: test}
)";

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kforge_synth_test_" + name + "_" + std::to_string(::getpid()));
  remove_tree(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

TEST(Composer, EveryCandidateResolvesWithFlowingShapesAndRenders) {
  SynthConfig cfg;
  auto cands = draw_many(cfg, 7, 300);
  ASSERT_GT(cands.size(), 200u);
  for (const auto& c : cands) {
    SCOPED_TRACE(c.task.id);
    // The spec round-trips through YAML (every derived field re-checked against the graph).
    TaskSpec back = parse_task(task_to_yaml(c.task), "roundtrip");
    EXPECT_EQ(back.resolved.output_metas, c.task.resolved.output_metas);
    EXPECT_GE(c.task.graph.nodes.size(), 1u);
    EXPECT_LE(c.task.graph.nodes.size(), 5u);
    EXPECT_EQ(c.ops.size(), c.task.graph.nodes.size());
    EXPECT_GE(c.est_ms, cfg.window_ms_low);
    EXPECT_LE(c.est_ms, cfg.window_ms_high);
    EXPECT_LE(footprint_bytes(c.task.resolved), cfg.max_task_gb * 1e9);
    for (const auto& n : c.task.resolved.nodes) EXPECT_FALSE(n.call.op->nondeterministic) << n.call.op->name;
    std::string py = render_python(c.task);
    EXPECT_NE(py.find("class Model(nn.Module)"), std::string::npos);
    if (c.task.check_dims) {
      EXPECT_LE(c.task.at_check_dims().dims.at("B"), cfg.cpu_check.check_batch);
    }
  }
}

TEST(Composer, SameSeedSameCandidatesDifferentSeedDifferent) {
  SynthConfig cfg;
  auto a = draw_many(cfg, 11, 40), b = draw_many(cfg, 11, 40), c = draw_many(cfg, 12, 40);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(task_to_yaml(a[i].task), task_to_yaml(b[i].task));
  std::set<std::string> ha, hc;
  for (const auto& x : a) ha.insert(canonical_graph_hash(x.task));
  for (const auto& x : c) hc.insert(canonical_graph_hash(x.task));
  EXPECT_NE(ha, hc);
}

TEST(Composer, OperatorCountFollowsTheConfiguredMix) {
  SynthConfig cfg;
  cfg.ops_per_task = {{2, 0.9}, {5, 0.1}};
  auto cands = draw_many(cfg, 3, 400);
  std::map<size_t, int> hist;
  for (const auto& c : cands) ++hist[c.task.graph.nodes.size()];
  EXPECT_EQ(hist.count(1), 0u);
  EXPECT_GT(hist[2], 0.75 * cands.size());
  EXPECT_GT(hist[5], 0);  // the tail is reached
  EXPECT_EQ(hist.count(3) + hist.count(4), 0u);
}

TEST(Composer, EveryFamilyComposesIntoTwoOperatorTasks) {
  SynthConfig cfg;
  Composer c(cfg);
  for (const auto& [family, ops] : synth_families()) {
    SCOPED_TRACE(family);
    SynthRng rng(5);
    int ok = 0;
    for (int i = 0; i < 30; ++i) {
      DrawOutcome d = c.draw_with(rng, "f", 1, 2, family, DType::float32);
      if (d.candidate) {
        ++ok;
        EXPECT_EQ(d.candidate->task.graph.nodes.size(), 2u);
      }
    }
    EXPECT_GT(ok, 10);
  }
}

TEST(Composer, BatchIsSizedIntoTheRuntimeWindow) {
  SynthConfig cfg;
  cfg.target_ms_low = cfg.target_ms_high = 10;
  auto cands = draw_many(cfg, 9, 100);
  int near = 0;
  for (const auto& c : cands) near += c.est_ms > 5 && c.est_ms < 20;
  EXPECT_GT(near, 0.7 * cands.size());  // the rest hit the batch floor, ceiling or memory cap
}

TEST(CostModel, EstimateIsTheLargerOfComputeAndMemoryPlusLaunches) {
  TaskSpec t = parse(kChain).with_dims({{"B", 1 << 20}});
  CostModelConfig cost;
  cost.launch_overhead_us = 0;
  double ms = estimate_eager_ms(t.resolved, DType::float32, cost);
  // linear: 2*B*64*32 flops vs (B*64 + B*32)*4 bytes + weights; relu: B*32*4*2 bytes.
  double b = 1 << 20;
  double lin = std::max(2 * b * 64 * 32 / 50e12, ((b * 64 + b * 32) * 4 + (32 * 64 + 32) * 4) / 4e12);
  double relu = b * 32 * 4 * 2 / 4e12;
  EXPECT_NEAR(ms, (lin + relu) * 1e3, 1e-9);
}

TEST(Dedup, HashIgnoresNamesButNotShapesOrAttributes) {
  std::string renamed = kChain;
  for (auto [from, to] : {std::pair<std::string, std::string>{"fc", "lin"}, {"act", "out"}, {"{name: x", "{name: inp"}, {"[x]", "[inp]"}}) {
    size_t p;
    while ((p = renamed.find(from)) != std::string::npos) renamed.replace(p, from.size(), to);
  }
  TaskSpec a = parse(kChain), b = parse(renamed);
  EXPECT_EQ(canonical_graph_hash(a), canonical_graph_hash(b));
  EXPECT_NE(canonical_graph_hash(a), canonical_graph_hash(a.with_dims({{"B", 9}})));
  std::string other = kChain;
  other.replace(other.find("out_features: 32"), 16, "out_features: 33");
  EXPECT_NE(canonical_graph_hash(a), canonical_graph_hash(parse(other)));
  EXPECT_EQ(canonical_op_sequence(a), "relu(linear(#))");
  EXPECT_EQ(canonical_op_sequence(a), canonical_op_sequence(parse(other)));
}

TEST(Decontamination, SimilaritiesAndTheRule) {
  EXPECT_DOUBLE_EQ(op_sequence_similarity({"linear", "relu"}, {"linear", "relu"}), 1.0);
  EXPECT_DOUBLE_EQ(op_sequence_similarity({"linear", "relu"}, {"linear", "mul", "relu"}), 2.0 / 3);
  EXPECT_DOUBLE_EQ(op_sequence_similarity({}, {"relu"}), 0.0);
  EXPECT_DOUBLE_EQ(shape_similarity({{8, 64}}, {{8, 64}}), 1.0);
  EXPECT_DOUBLE_EQ(shape_similarity({{8, 64}}, {{16, 64}}), 0.75);
  EXPECT_DOUBLE_EQ(shape_similarity({{8, 64}}, {{8, 64, 1}}), 0.0);

  TaskSpec t = parse(kChain);
  KernelBenchSignature same{"level2/x.py", 2, {"linear", "relu"}, {{8, 64}}};
  KernelBenchSignature far_shapes{"level2/y.py", 2, {"linear", "relu"}, {{4096, 8192}}};
  KernelBenchSignature other_ops{"level2/z.py", 2, {"conv2d", "relu"}, {{8, 64}}};
  DecontaminationRule rule;
  EXPECT_EQ(kernelbench_match(t, {other_ops, same}, rule), "level2/x.py");
  EXPECT_EQ(kernelbench_match(t, {far_shapes, other_ops}, rule), "");
  rule.sequence_only_min_ops = 2;  // then the sequence alone is enough
  EXPECT_EQ(kernelbench_match(t, {far_shapes}, rule), "level2/y.py");
}

TEST(Decontamination, ShippedSignatureListLoadsAndCoversThreeLevels) {
  const char* src = std::getenv("KFORGE_SOURCE_DIR");
  auto sigs = load_kernelbench_signatures(std::string(src ? src : ".") + "/datasets/kernelbench_signatures.json");
  std::set<int> levels;
  for (const auto& s : sigs) levels.insert(s.level);
  EXPECT_GE(sigs.size(), 200u);
  EXPECT_EQ(levels, (std::set<int>{1, 2, 3}));
}

TEST(Splits, HeldoutIsAtLeastTheFractionAndDisjointBySequence) {
  SynthConfig cfg;
  auto cands = draw_many(cfg, 21, 400);
  std::vector<TaskSpec> tasks;
  for (const auto& c : cands) tasks.push_back(c.task);
  size_t heldout = assign_splits(tasks, 0.06, 1);
  EXPECT_GE(heldout, static_cast<size_t>(std::ceil(0.06 * tasks.size())));
  EXPECT_LT(heldout, tasks.size() / 2);
  std::set<std::string> train, held;
  size_t counted = 0;
  for (const auto& t : tasks) {
    (t.split == Split::train ? train : held).insert(canonical_op_sequence(t));
    counted += t.split == Split::heldout;
  }
  EXPECT_EQ(counted, heldout);
  for (const auto& s : held) EXPECT_EQ(train.count(s), 0u) << s;
  // Deterministic for a seed.
  std::vector<TaskSpec> again = tasks;
  assign_splits(again, 0.06, 1);
  for (size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(tasks[i].split, again[i].split);
}

TEST(SynthConfig, ShippedConfigLoadsAndEqualsTheDefaults) {
  const char* src = std::getenv("KFORGE_SOURCE_DIR");
  SynthConfig c = SynthConfig::load(std::string(src ? src : ".") + "/configs/synth.yaml");
  SynthConfig d;
  EXPECT_EQ(c.seed, d.seed);
  EXPECT_EQ(c.target_tasks, d.target_tasks);
  EXPECT_EQ(c.ops_per_task, d.ops_per_task);
  EXPECT_EQ(c.families, d.families);
  EXPECT_EQ(c.dtypes, d.dtypes);
  EXPECT_EQ(c.cost.peak_tflops, d.cost.peak_tflops);
  EXPECT_DOUBLE_EQ(c.cpu_check.max_flops, d.cpu_check.max_flops);
  EXPECT_EQ(c.cpu_check.input_matters, d.cpu_check.input_matters);
  EXPECT_TRUE(c.cpu_check.input_matters) << "every input matters is on by default";
  EXPECT_EQ(c.cpu_check.input_draws, d.cpu_check.input_draws);
  EXPECT_EQ(c.cpu_check.input_slices, d.cpu_check.input_slices);
  EXPECT_EQ(c.decontamination.signatures, d.decontamination.signatures);
  // The GPU stage's timing settings, pinned in the file (tools/dataset/synth_gpu/ reads them through kforge).
  for (const TimingConfig* t : {&c.baseline_timing, &d.baseline_timing}) {
    EXPECT_EQ(t->warmup_count, 3);
    EXPECT_DOUBLE_EQ(t->warmup_ms, 50);
    EXPECT_EQ(t->min_reps, 10);
    EXPECT_EQ(t->max_reps, 100);
    EXPECT_DOUBLE_EQ(t->target_rse, 0.01);
    EXPECT_DOUBLE_EQ(t->budget_ms, 3000);
    EXPECT_TRUE(t->l2_flush);
    EXPECT_DOUBLE_EQ(t->l2_flush_factor, 2);
  }
}

TEST(SynthConfig, BaselineTimingKeepsTheStageDefaultsForKeysLeftOut) {
  SynthConfig c = SynthConfig::from_yaml(YamlNode::parse("baseline_timing: {min_reps: 5, max_reps: 6}\n", "synth.yaml"));
  EXPECT_EQ(c.baseline_timing.min_reps, 5);
  EXPECT_EQ(c.baseline_timing.max_reps, 6);
  EXPECT_DOUBLE_EQ(c.baseline_timing.warmup_ms, 50);     // the stage's, not the evaluator's 25
  EXPECT_DOUBLE_EQ(c.baseline_timing.target_rse, 0.01);  // not 0.002
  try {
    SynthConfig::from_yaml(YamlNode::parse("baseline_timing:\n  l2_flush_factor: 1\n", "synth.yaml"));
    ADD_FAILURE() << "a flush of less than 2x L2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(std::string(e.what()).find("l2_flush_factor"), std::string::npos) << e.what();
  }
}

TEST(SynthConfig, ErrorsNameTheKeyFileAndLine) {
  auto msg = [](const std::string& text) {
    try {
      SynthConfig::from_yaml(YamlNode::parse(text, "synth.yaml"));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::config);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("seed: 1\ntarget_taks: 5\n").find("synth.yaml:2"), std::string::npos);
  EXPECT_NE(msg("seed: 1\ntarget_taks: 5\n").find("target_tasks"), std::string::npos);
  EXPECT_NE(msg("families: {matmull: 1}\n").find("did you mean 'matmul'"), std::string::npos);
  EXPECT_NE(msg("ops_per_task: {7: 1}\n").find("1 to 5"), std::string::npos);
  EXPECT_NE(msg("heldout_fraction: 0.01\n").find("at least 5 %"), std::string::npos);
  EXPECT_NE(msg("cpu_check: {max_flop: 3}\n").find("max_flop"), std::string::npos);
  EXPECT_NE(msg("cpu_check: {input_draws: 0}\n").find("input_draws"), std::string::npos);
  EXPECT_NE(msg("target_tasks: many\n").find("target_tasks"), std::string::npos);
}

TEST(Pipeline, ResumedRunEqualsUninterruptedRun) {
  SynthConfig cfg;
  cfg.target_tasks = 60;
  cfg.shard_candidates = 25;
  cfg.decontamination.signatures = "";
  std::vector<std::unique_ptr<CandidateFilter>> none;
  fs::path a = temp_dir("a"), b = temp_dir("b");
  SynthSummary sa, sb;
  auto full = run_synthesis(cfg, none, {a.string(), nullptr, 1}, sa);
  // Interrupted after the first shard: only it remains; the rerun resumes from it.
  cfg.target_tasks = 1;
  run_synthesis(cfg, none, {b.string(), nullptr, 1}, sb);
  ASSERT_TRUE(fs::exists(b / "shards" / "shard-00000.json"));
  ASSERT_FALSE(fs::exists(b / "shards" / "shard-00001.json"));
  cfg.target_tasks = 60;
  auto resumed = run_synthesis(cfg, none, {b.string(), nullptr, 1}, sb);
  EXPECT_EQ(sb.shards_resumed, 1);
  ASSERT_EQ(full.size(), resumed.size());
  ASSERT_EQ(full.size(), 60u);
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(full[i].hash, resumed[i].hash);
    EXPECT_EQ(full[i].task.split, resumed[i].task.split);
  }
  EXPECT_EQ(sa.drawn, sb.drawn);
  std::set<std::string> hashes;
  for (const auto& k : full) EXPECT_TRUE(hashes.insert(k.hash).second) << "duplicate kept";
  remove_tree(a);
  remove_tree(b);
}

TEST(Dataset, Hdf5RoundTripKeepsEveryColumn) {
  fs::path dir = temp_dir("h5");
  Dataset d;
  d.attrs["generator"] = "test";
  for (int i = 0; i < 3; ++i) {
    DatasetRow r;
    r.id = "t" + std::to_string(i);
    r.split = i == 2 ? "heldout" : "train";
    r.source = "synth";
    r.dtype = "float32";
    r.ops = i ? "linear,relu" : "conv2d";
    r.n_ops = i ? 2 : 1;
    r.spec_yaml = "kforge_task: 1\n# é\n";
    r.program_py = "import torch\n";
    r.est_runtime_ms = 1.5 + i;
    r.eager_ms = i == 1 ? 2.0 : std::nan("");
    d.rows.push_back(r);
  }
  std::string path = (dir / "d.h5").string();
  write_dataset(path, d);
  Dataset back = read_dataset(path);
  ASSERT_EQ(back.rows.size(), 3u);
  EXPECT_EQ(back.attrs["generator"], "test");
  EXPECT_EQ(back.attrs["format"], "kforge-dataset");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.rows[i].id, d.rows[i].id);
    EXPECT_EQ(back.rows[i].spec_yaml, d.rows[i].spec_yaml);
    EXPECT_EQ(back.rows[i].n_ops, d.rows[i].n_ops);
    EXPECT_DOUBLE_EQ(back.rows[i].est_runtime_ms, d.rows[i].est_runtime_ms);
  }
  EXPECT_TRUE(std::isnan(back.rows[0].eager_ms));
  EXPECT_DOUBLE_EQ(back.rows[1].eager_ms, 2.0);
  RowFilter f;
  f.ops = {"relu"};
  f.split = "train";
  EXPECT_FALSE(f.matches(back.rows[0]));
  EXPECT_TRUE(f.matches(back.rows[1]));
  EXPECT_FALSE(f.matches(back.rows[2]));
  RowFilter g;
  g.max_ops = 1;
  EXPECT_TRUE(g.matches(back.rows[0]));
  EXPECT_FALSE(g.matches(back.rows[1]));
  // --status: exact, or "rejected" for any rejection.
  back.rows[1].status = "ok";
  back.rows[2].status = "rejected:eager_runtime_window";
  RowFilter st;
  st.status = StatusFilter::parse("ok");
  EXPECT_FALSE(st.matches(back.rows[0]));
  EXPECT_TRUE(st.matches(back.rows[1]));
  st.status = StatusFilter::parse("rejected");
  EXPECT_FALSE(st.matches(back.rows[1]));
  EXPECT_TRUE(st.matches(back.rows[2]));
  st.status = StatusFilter::parse("rejected:torch_compile_build");
  EXPECT_FALSE(st.matches(back.rows[2]));
  st.status = StatusFilter::parse("cpu_ok");
  EXPECT_TRUE(st.matches(back.rows[0]));
  // Without --status a rejected row is left out (what the server serves); "all" takes every row.
  RowFilter none;
  EXPECT_TRUE(none.matches(back.rows[0]));
  EXPECT_TRUE(none.matches(back.rows[1]));
  EXPECT_FALSE(none.matches(back.rows[2]));
  st.status = StatusFilter::parse("all");
  for (const auto& r : back.rows) EXPECT_TRUE(st.matches(r));
  // Not a dataset: an io error naming the file.
  std::ofstream(dir / "junk.h5") << "junk";
  try {
    read_dataset((dir / "junk.h5").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.h5"), std::string::npos);
  }
  remove_tree(dir);
}
