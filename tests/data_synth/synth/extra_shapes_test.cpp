// The extra shapes verification also runs a candidate at (issue 30; data_synth/synth/extra_shapes.h):
// on the shipped samples and on freshly composed tasks every shape resolves, shrinks the footprint,
// differs from the task's dims and is drawn the same way twice; index draws never change; the spec
// text gets them without its other lines moving.
#include "data_synth/synth/extra_shapes.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"
#include "data_synth/synth/composer.h"

using namespace kforge;
using kforge::testing::source_dir;
namespace fs = std::filesystem;

namespace {

std::vector<std::pair<std::string, TaskSpec>> sample_texts() {
  std::vector<std::pair<std::string, TaskSpec>> out;
  for (const auto& e : fs::directory_iterator(source_dir() + "/datasets/samples"))
    if (e.path().extension() == ".yaml") {
      std::string text = read_file(e.path().string(), "a sample");
      out.emplace_back(text, parse_task(text, e.path().string()));
    }
  return out;
}

std::vector<TaskSpec> composed(int n) {
  SynthConfig cfg;
  Composer c(cfg);
  SynthRng rng(11);
  std::vector<TaskSpec> out;
  for (int i = 0; i < n; ++i) {
    DrawOutcome d = c.draw(rng, "t" + std::to_string(i), 500 + i);
    if (d.candidate) out.push_back(d.candidate->task);
  }
  return out;
}

DimEnv merged(const TaskSpec& t, const DimEnv& over) {
  DimEnv d = t.dims;
  for (const auto& [k, v] : over) d[k] = v;
  return d;
}

// Every promise of draw_extra_shapes on one task.
void expect_valid_shapes(const TaskSpec& t, const std::vector<ExtraShape>& shapes) {
  SCOPED_TRACE(t.id);
  const double own = footprint_bytes(resolve_graph(t.graph, t.dims));
  std::vector<DimEnv> seen = {t.dims};
  for (const ExtraShape& s : shapes) {
    SCOPED_TRACE(s.kind);
    ASSERT_FALSE(s.dims.empty());
    DimEnv full = merged(t, s.dims);
    EXPECT_EQ(std::find(seen.begin(), seen.end(), full), seen.end()) << "a repeated shape, or the task's own";
    seen.push_back(full);
    TaskSpec at = t.with_dims(s.dims);  // resolves, as verification will resize it
    EXPECT_LE(footprint_bytes(at.resolved), own);
    for (size_t i = 0; i < at.arguments.size(); ++i)
      if (t.arguments[i].decl.draw.dist == DrawDist::randint) {
        EXPECT_EQ(at.resolved.arguments[i].draw, t.arguments[i].decl.draw);
      }
    for (const auto& [k, v] : s.dims) {
      EXPECT_LT(v, t.dims.at(k)) << k;
      EXPECT_GE(v, s.kind == "batch_one" ? 1 : 2) << k << ": only batch_one makes a dim 1";
      if (s.kind == "odd") {
        EXPECT_EQ(v % 2, 1) << k << " = " << v;
      } else if (s.kind == "off_by_one") {
        EXPECT_EQ(v, t.dims.at(k) - 1) << k;
      }
    }
    if (s.kind == "batch_one") {
      EXPECT_EQ(s.dims, (DimEnv{{"B", 1}}));
    }
  }
}

}  // namespace

TEST(ExtraShapes, SampleTasksGetShapesThatResolveShrinkAndAreDrawnTheSameTwice) {
  int with_any = 0;
  for (const auto& [text, t] : sample_texts()) {
    auto shapes = draw_extra_shapes(t, {});
    expect_valid_shapes(t, shapes);
    EXPECT_LE(shapes.size(), 3u);
    auto again = draw_extra_shapes(t, {});
    ASSERT_EQ(again.size(), shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(again[i].dims, shapes[i].dims);
    EXPECT_EQ(draw_extra_dims(t, {}).size(), shapes.size());
    with_any += !shapes.empty();
  }
  EXPECT_GE(with_any, 10) << "most samples have a dim that can shrink";
}

TEST(ExtraShapes, ComposedTasksCarryTheirShapesAndEachIsValid) {
  auto tasks = composed(260);
  ASSERT_GE(tasks.size(), 200u);
  size_t with_any = 0, odd = 0;
  for (const TaskSpec& t : tasks) {
    auto shapes = draw_extra_shapes(t, {});
    expect_valid_shapes(t, shapes);
    std::vector<DimEnv> dims;
    for (const auto& s : shapes) dims.push_back(s.dims);
    EXPECT_EQ(t.extra_dims, dims) << t.id << ": the composer stores what draw_extra_dims gives";
    with_any += !shapes.empty();
    for (const auto& s : shapes) odd += s.kind == "odd";
    // The spec carries them through YAML, and the task resolves at each.
    TaskSpec back = parse_task(task_to_yaml(t), "roundtrip");
    EXPECT_EQ(back.extra_dims, t.extra_dims);
    for (size_t i = 0; i < back.extra_dims.size(); ++i) EXPECT_NO_THROW(back.at_extra_dims(i));
  }
  EXPECT_GT(with_any, tasks.size() * 9 / 10);
  EXPECT_GT(odd, tasks.size() / 2);
}

TEST(ExtraShapes, IndexRangesAreNeverShrunk) {
  // The targets draw from [0, C): C stays, since the task keeps its stored draws at other dims.
  TaskSpec t = parse_task(R"(kforge_task: 1
id: ce
source: synth
split: train
seed: 3
dtype: float32
dims: {B: 64, C: 10}
graph:
  inputs: [{name: x, shape: [B, C]}, {name: y, shape: [B], dtype: int64}]
  nodes:
    - {id: loss, op: cross_entropy, in: [x, y]}
  outputs: [loss]
provenance: {generator: test}
)",
                          "ce.yaml");
  auto shapes = draw_extra_shapes(t, {});
  expect_valid_shapes(t, shapes);
  ASSERT_EQ(shapes.size(), 3u);
  for (const auto& s : shapes) EXPECT_EQ(s.dims.count("C"), 0u) << s.kind;
}

TEST(ExtraShapes, NoneForImportedTasksOrWhenDisabledAndAtMostMaxShapes) {
  TaskSpec imported;
  imported.reference.kind = ReferenceKind::torchscript;
  EXPECT_TRUE(draw_extra_dims(imported, {}).empty());
  TaskSpec t = sample_texts().front().second;
  ExtraShapeConfig off;
  off.enabled = false;
  EXPECT_TRUE(draw_extra_dims(t, off).empty());
  ExtraShapeConfig one;
  one.max_shapes = 1;
  for (const auto& [text, s] : sample_texts()) EXPECT_LE(draw_extra_dims(s, one).size(), 1u);
}

TEST(ExtraShapes, SpecTextGetsTheBlockBeforeGraphAndKeepsEveryOtherLine) {
  for (const auto& [text, t] : sample_texts()) {
    SCOPED_TRACE(t.id);
    auto extra = draw_extra_dims(t, {});
    std::string out = spec_with_extra_dims(text, extra, t.id);
    TaskSpec back = parse_task(out, t.id);
    EXPECT_EQ(back.extra_dims, extra);
    // Only the block was added: taking it out again gives the text back, and so does writing it twice.
    EXPECT_EQ(spec_with_extra_dims(out, {}, t.id), text);
    EXPECT_EQ(spec_with_extra_dims(out, extra, t.id), out);
    if (!extra.empty()) {
      EXPECT_LT(out.find("extra_dims:\n  - {"), out.find("\ngraph:"));
    }
  }
  std::string imported = "kforge_task: 1\nid: m\nreference: {kind: torchscript}\n";
  EXPECT_THROW(spec_with_extra_dims(imported, {{{"B", 1}}}, "m"), Error);
}

TEST(ExtraShapes, ConfigKeysAreCheckedLikeTheirNeighbours) {
  SynthConfig c = SynthConfig::from_yaml(YamlNode::parse("extra_shapes: {enabled: false, max_shapes: 2}\n", "synth.yaml"));
  EXPECT_FALSE(c.extra_shapes.enabled);
  EXPECT_EQ(c.extra_shapes.max_shapes, 2);
  EXPECT_EQ(c.extra_shapes.large_bytes, 0) << "no large shape unless asked for";
  EXPECT_EQ(
      SynthConfig::from_yaml(YamlNode::parse("extra_shapes: {max_shapes: 5, large_bytes: 1.0e9}\n", "s.yaml")).extra_shapes.large_bytes,
      1.0e9);
  for (const char* bad : {"extra_shapes: {max_shapes: 0}\n", "extra_shapes: {max_shapes: 6}\n", "extra_shapes: {max_shape: 2}\n"}) {
    try {
      SynthConfig::from_yaml(YamlNode::parse(bad, "synth.yaml"));
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::config);
      EXPECT_NE(std::string(e.what()).find("max_shape"), std::string::npos) << e.what();
    }
  }
}

// The largest size that fits (issue 30): with large_bytes, a `large` shape {B: the largest batch whose
// footprint is at most it}, only where no output reduces over B; each promise checked by hand.
TEST(ExtraShapes, TheLargeShapeIsTheLargestBatchThatFitsWhereNoOutputReducesOverB) {
  auto task = [](const std::string& nodes, const std::string& outputs) {
    return parse_task(R"(kforge_task: 1
id: big
source: synth
split: train
seed: 5
dtype: float32
dims: {B: 8, N: 100}
graph:
  inputs: [{name: x, shape: [B, N]}]
  nodes:
)" + nodes + "  outputs: [" +
                          outputs + "]\nprovenance: {generator: test}\n",
                      "big.yaml");
  };
  // relu over [B, N] float32: 800 B of input and 800 B of output per row of B.
  TaskSpec rows = task("    - {id: r, op: relu, in: [x]}\n", "r");
  const double own = footprint_bytes(resolve_graph(rows.graph, rows.dims));
  ASSERT_EQ(own, 8 * 800.0);
  ExtraShapeConfig cfg;
  cfg.max_shapes = 5;
  cfg.large_bytes = 1000 * 800.0 + 799;  // room for B = 1000, not 1001
  std::vector<ExtraShape> shapes = draw_extra_shapes(rows, cfg);
  ASSERT_FALSE(shapes.empty());
  EXPECT_EQ(shapes.back().kind, "large");
  EXPECT_EQ(shapes.back().dims, (DimEnv{{"B", 1000}}));
  const TaskSpec at = rows.with_dims(shapes.back().dims);
  EXPECT_LE(footprint_bytes(at.resolved), cfg.large_bytes);
  for (const auto& s : shapes) EXPECT_EQ(s.bytes, footprint_bytes(rows.with_dims(s.dims).resolved)) << s.kind << ": its footprint";
  // Off by default; none when the task already fills the budget, or with room for no larger batch.
  for (const auto& s : draw_extra_shapes(rows, {})) EXPECT_NE(s.kind, "large");
  cfg.large_bytes = own;
  for (const auto& s : draw_extra_shapes(rows, cfg)) EXPECT_NE(s.kind, "large");
  cfg.large_bytes = 9 * 800.0 - 1;
  for (const auto& s : draw_extra_shapes(rows, cfg)) EXPECT_NE(s.kind, "large");
  // A sum over B: the output is not empty at B = 0, and a longer reduction would outgrow the
  // tolerance: no large shape.
  cfg.large_bytes = 1e9;
  TaskSpec summed = task("    - {id: s, op: sum, in: [x], attrs: {dim: 0}}\n", "s");
  for (const auto& s : draw_extra_shapes(summed, cfg)) EXPECT_NE(s.kind, "large") << "a reduction over B";
  // A sum over N alone keeps B: the large shape is taken, its footprint within the budget.
  TaskSpec per_row = task("    - {id: s, op: sum, in: [x], attrs: {dim: 1}}\n", "s");
  bool large = false;
  for (const auto& s : draw_extra_shapes(per_row, cfg))
    if (s.kind == "large") {
      large = true;
      EXPECT_GT(s.dims.at("B"), 8);
      EXPECT_LE(footprint_bytes(per_row.with_dims(s.dims).resolved), 1e9);
      EXPECT_GT(footprint_bytes(per_row.with_dims({{"B", s.dims.at("B") + 1}}).resolved), 1e9) << "the largest that fits";
    }
  EXPECT_TRUE(large);
}
