#include "data_synth/task/task_spec.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

#include "configs/error.h"

using namespace kforge;
using kforge::testing::source_dir;
namespace fs = std::filesystem;

namespace {

std::vector<TaskSpec> samples() {
  std::vector<TaskSpec> out;
  for (const auto& e : fs::directory_iterator(source_dir() + "/datasets/samples"))
    if (e.path().extension() == ".yaml") out.push_back(load_task(e.path().string()));
  return out;
}

const char* kMinimal = R"(kforge_task: 1
id: t1
source: synth
split: train
seed: 5
dtype: float32
dims: {B: 4, D: 8}
graph:
  inputs:
    - {name: x, shape: [B, D]}
  nodes:
    - {id: fc, op: linear, in: [x], attrs: {out_features: 2*D}}
    - {id: act, op: gelu, in: [fc]}
  outputs: [act]
provenance: {generator: test, seed: 1}
)";

Error error_of(const std::string& yaml) {
  try {
    parse_task(yaml, "task.yaml");
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorKind::internal, "no error");
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(TaskSpec, DerivesArgumentsOutputsCostAndTolerance) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  ASSERT_EQ(t.arguments.size(), 3u);
  EXPECT_EQ(t.arguments[0].decl.name, "x");
  EXPECT_EQ(t.arguments[1].decl.name, "fc.weight");
  EXPECT_EQ(t.arguments[1].decl.meta.shape, (Shape{16, 8}));
  EXPECT_EQ(t.arguments[2].decl.meta.shape, (Shape{16}));
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].name, "act");
  EXPECT_EQ(t.outputs[0].meta.shape, (Shape{4, 16}));
  EXPECT_DOUBLE_EQ(t.tolerance.atol, 1e-4);
  EXPECT_DOUBLE_EQ(t.resolved.flops, 2.0 * 4 * 16 * 8 + 64);
}

TEST(TaskSpec, RoundTripsThroughYaml) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  std::string once = task_to_yaml(t);
  TaskSpec back = parse_task(once, "again.yaml");
  EXPECT_EQ(task_to_yaml(back), once);
  EXPECT_EQ(back.arguments.size(), t.arguments.size());
  EXPECT_EQ(back.arguments[1].draw, t.arguments[1].draw);
}

TEST(TaskSpec, StatedDrawsOverrideTheDefaults) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  std::string yaml = task_to_yaml(t);
  yaml = replaced(yaml, "{name: x, role: input, shape: [4, 8], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}",
                  "{name: x, role: input, shape: [4, 8], dtype: float32, draw: {dist: uniform, low: 0.5, high: 2}}");
  EXPECT_EQ(parse_task(yaml, "t.yaml").arguments[0].draw, Draw::uniform(0.5, 2));
}

// A floating-point argument the function reads must vary between trials (a kernel that assumed a
// constant's value would pass every one); integer constants and unread state stay allowed.
TEST(TaskSpec, AFloatArgumentWithAConstantDrawIsRefusedNamingIt) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  ASSERT_EQ(t.arguments[2].decl.name, "fc.bias");
  t.arguments[2].draw = Draw::constant(0);
  Error e = error_of(task_to_yaml(t));
  EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
  EXPECT_NE(std::string(e.what()).find("'fc.bias'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("constant draw"), std::string::npos) << e.what();
  for (const auto& s : samples()) {  // BatchNorm's num_batches_tracked: int64, constant, not read
    for (const auto& a : s.arguments) {
      if (a.draw.dist == DrawDist::constant) {
        EXPECT_TRUE(!dtype_is_float(a.decl.meta.dtype) || !a.decl.used) << s.id << " " << a.decl.name;
      }
    }
  }
}

TEST(TaskSpec, WithDimsRederivesShapesAndKeepsDraws) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  t.arguments[0].draw = Draw::uniform(0, 1);
  TaskSpec s = t.with_dims({{"D", 3}});
  EXPECT_EQ(s.arguments[1].decl.meta.shape, (Shape{6, 3}));
  EXPECT_EQ(s.arguments[0].draw, Draw::uniform(0, 1));
  EXPECT_THROW(t.with_dims({{"Q", 3}}), Error);
}

TEST(TaskSpec, MalformedSpecsGiveOneLocatedError) {
  struct Case {
    std::string from, to, expect;
  };
  std::vector<Case> cases = {
      {"dtype: float32", "dtype: float31", "task.yaml:6:8: dtype: unknown dtype 'float31'"},
      {"op: gelu", "op: gleu", "task.yaml:13:7: node 1 'act' (gleu): unknown operator 'gleu' (did you mean 'gelu'?)"},
      {"split: train", "split: test", "split: unknown split 'test'"},
      {"seed: 5", "seed: -5", "seed: expected a non-negative integer"},
      {"dims: {B: 4, D: 8}", "dims: {B: 4, D: 0}", "dimension D = 0 must be >= 1"},
      {"attrs: {out_features: 2*D}", "attrs: {out_features: 2*E}", "unknown dimension 'E'"},
      {"attrs: {out_features: 2*D}", "attrs: {outfeatures: 2*D}", "has no attribute 'outfeatures'"},
      {"provenance:", "provenanc:", "missing required key 'provenance'"},
      {"kforge_task: 1", "kforge_task: 2", "format version 2 is not supported"},
      {"outputs: [act]", "outputs: [actt]", "output 'actt' is not a node of the graph"},
      {"seed: 5", "seed: 5\nsead: 6", "task.yaml:6:1: sead: unknown key (did you mean 'seed'?)"},
  };
  for (const auto& c : cases) {
    Error e = error_of(replaced(kMinimal, c.from, c.to));
    EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << "got: " << e.what() << "\nexpected: " << c.expect;
    EXPECT_NE(e.kind(), ErrorKind::internal);
  }
}

TEST(TaskSpec, ImpossibleShapeIsAShapeErrorNamingTheNode) {
  std::string yaml = replaced(kMinimal, "{id: act, op: gelu, in: [fc]}", "{id: act, op: group_norm, in: [fc], attrs: {groups: 5}}");
  Error e = error_of(yaml);
  EXPECT_EQ(e.kind(), ErrorKind::shape);
  EXPECT_NE(std::string(e.what()).find("node 1 'act' (group_norm): groups 5 must divide the 16 channels"), std::string::npos) << e.what();
}

TEST(TaskSpec, StatedDerivedFieldsMustAgreeWithTheGraph) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  std::string yaml = task_to_yaml(t);
  Error e =
      error_of(replaced(yaml, "{name: fc.weight, role: parameter, shape: [16, 8]", "{name: fc.weight, role: parameter, shape: [8, 16]"));
  EXPECT_NE(std::string(e.what()).find("shape of 'fc.weight' is [16, 8] by the graph, not [8, 16]"), std::string::npos) << e.what();
  e = error_of(replaced(yaml, "- {name: fc.bias", "- {name: fc.b"));
  EXPECT_NE(std::string(e.what()).find("argument 2 is 'fc.bias' in the graph's order"), std::string::npos) << e.what();
  e = error_of(replaced(yaml, "cost: {flops: 1088", "cost: {flops: 2088"));
  EXPECT_NE(std::string(e.what()).find("cost.flops: is 2088"), std::string::npos) << e.what();
}

TEST(TaskSpec, BaselineTimesNeedTheirGpuAndMethod) {
  std::string yaml = std::string(kMinimal) + "baselines: {eager_ms: 2.5}\n";
  EXPECT_NE(std::string(error_of(yaml).what()).find("need the gpu and the method"), std::string::npos);
  yaml = std::string(kMinimal) +
         "baselines: {eager_ms: 2.5, compile_ms: 1.5, gpu: NVIDIA H200, torch: 2.11.0, cuda: '13.0', method: events, "
         "flags: {allow_tf32_cublas: 'false'}}\n";
  TaskSpec t = parse_task(yaml, "t.yaml");
  EXPECT_DOUBLE_EQ(*t.baselines.compile_ms, 1.5);
  EXPECT_EQ(parse_task(task_to_yaml(t), "u.yaml").baselines.gpu, "NVIDIA H200");
  // Versions are written quoted: other YAML readers (PyYAML) would read a plain 13.0 as a float.
  EXPECT_NE(task_to_yaml(t).find("cuda: \"13.0\""), std::string::npos) << task_to_yaml(t);
  EXPECT_NE(task_to_yaml(t).find("torch: \"2.11.0\""), std::string::npos) << task_to_yaml(t);
  EXPECT_EQ(parse_task(task_to_yaml(t), "u.yaml").baselines.cuda_version, "13.0");
  // Every string is quoted, as tools/dataset/synth_gpu.py writes it: a plain false is a boolean to PyYAML.
  EXPECT_NE(task_to_yaml(t).find("flags: {allow_tf32_cublas: \"false\"}"), std::string::npos) << task_to_yaml(t);
  EXPECT_NE(task_to_yaml(t).find("gpu: \"NVIDIA H200\""), std::string::npos) << task_to_yaml(t);
  EXPECT_NE(task_to_yaml(t).find("method: \"events\""), std::string::npos) << task_to_yaml(t);
}

TEST(TaskSpec, MissingFileIsAnIoError) {
  try {
    load_task("/nonexistent/task.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
}

TEST(Samples, AtLeastTwelveCoveringEveryCategoryOneToFiveOpsAndLowPrecision) {
  auto all = samples();
  EXPECT_GE(all.size(), 12u);
  std::set<OpCategory> cats;
  std::set<size_t> op_counts;
  std::set<DType> dtypes;
  std::set<std::string> ids;
  for (const auto& t : all) {
    SCOPED_TRACE(t.id);
    EXPECT_TRUE(ids.insert(t.id).second) << "duplicate id";
    for (const auto& n : t.resolved.nodes) cats.insert(n.call.op->category);
    op_counts.insert(t.graph.nodes.size());
    dtypes.insert(t.dtype);
    EXPECT_TRUE(t.check_dims.has_value()) << "samples carry small check_dims for CPU tests";
    // Full-size samples are meant to run 1-100 ms on an H200 (4.8 TB/s, 67 TFLOP/s float32): the
    // speed-of-light floor alone must not be a toy.
    double floor_ms = std::max(t.resolved.min_bytes / 4.8e12, t.resolved.flops / 67e12) * 1e3;
    EXPECT_GT(floor_ms, 0.1);
    // The file on disk is in full form (kforge task fmt --write).
    EXPECT_EQ(task_to_yaml(t), task_to_yaml(parse_task(task_to_yaml(t), "x")));
  }
  EXPECT_EQ(cats.size(), 7u);
  EXPECT_EQ(op_counts, (std::set<size_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(dtypes.count(DType::float32));
  EXPECT_TRUE(dtypes.count(DType::bfloat16) || dtypes.count(DType::float16));
}

TEST(OpExampleTask, EveryOperatorMakesAValidOneNodeTask) {
  for (const auto& op : op_registry().all()) {
    TaskSpec t = make_op_example_task(op);
    EXPECT_EQ(t.graph.nodes.size(), 1u);
    EXPECT_EQ(parse_task(task_to_yaml(t), "x").arguments.size(), t.arguments.size());
  }
}

TEST(TaskSpec, SpecWithBaselinesReplacesOnlyTheBlock) {
  TaskSpec t = parse_task(kMinimal, "task.yaml");
  std::string text = "# a comment kept\n" + task_to_yaml(t);
  Baselines b;
  b.eager_ms = 2.5;
  b.compile_ms = 1.25;
  b.gpu = "NVIDIA H200";
  b.torch_version = "2.11.0";
  b.cuda_version = "13.0";
  b.method = "cuda-events: \"quoted\"";
  b.flags = {{"allow_tf32_cublas", "false"}};
  std::string once = spec_with_baselines(text, b, "task.yaml");
  // The block where task_to_yaml writes it, the same text as task_to_yaml's, the rest untouched.
  TaskSpec with = t;
  with.baselines = b;
  EXPECT_EQ(once, "# a comment kept\n" + task_to_yaml(with));
  TaskSpec back = parse_task(once, "task.yaml");
  EXPECT_EQ(*back.baselines.eager_ms, 2.5);
  EXPECT_EQ(back.baselines.method, b.method);
  EXPECT_EQ(back.baselines.flags, b.flags);
  // A second write replaces the block; an empty one removes it.
  b.eager_ms = 3.0;
  std::string twice = spec_with_baselines(once, b, "task.yaml");
  EXPECT_EQ(*parse_task(twice, "task.yaml").baselines.eager_ms, 3.0);
  EXPECT_EQ(twice.find("baselines:"), twice.rfind("baselines:"));
  EXPECT_EQ(spec_with_baselines(twice, Baselines{}, "task.yaml"), text);
  // A result that is no task (the block's numbers must be > 0) is an error, not a file.
  b.eager_ms = -1.0;
  EXPECT_THROW(spec_with_baselines(text, b, "task.yaml"), Error);
}

TEST(TaskSpec, ExtraDimsRoundTripAndResizeTheTask) {
  TaskSpec t = parse_task(replaced(kMinimal, "dims: {B: 4, D: 8}", "dims: {B: 4, D: 8}\nextra_dims: [{B: 1}, {B: 3, D: 5}]"), "task.yaml");
  ASSERT_EQ(t.extra_dims, (std::vector<DimEnv>{{{"B", 1}}, {{"B", 3}, {"D", 5}}}));
  std::string once = task_to_yaml(t);
  EXPECT_NE(once.find("extra_dims:\n  - {B: 1}\n  - {B: 3, D: 5}\n"), std::string::npos) << once;
  TaskSpec back = parse_task(once, "again.yaml");
  EXPECT_EQ(back.extra_dims, t.extra_dims);
  EXPECT_EQ(task_to_yaml(back), once);
  TaskSpec at = t.at_extra_dims(1);
  EXPECT_EQ(at.dims, (DimEnv{{"B", 3}, {"D", 5}}));
  EXPECT_EQ(at.outputs[0].meta.shape, (Shape{3, 10}));
  try {
    t.at_extra_dims(2);
    ADD_FAILURE() << "a third extra shape was given";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec);
  }
  // Without extra_dims the key is not written.
  EXPECT_EQ(task_to_yaml(parse_task(kMinimal, "task.yaml")).find("extra_dims"), std::string::npos);
}

TEST(TaskSpec, BadExtraDimsAreErrorsNamingTheKey) {
  // group_norm's 4 groups must divide the 2*D channels: D = 3 does not resolve.
  std::string base = replaced(kMinimal, "{id: act, op: gelu, in: [fc]}", "{id: act, op: group_norm, in: [fc], attrs: {groups: 4}}");
  struct Case {
    std::string extra, expect;
  };
  std::vector<Case> cases = {
      {"extra_dims: [{Q: 1}]", "'Q' is not one of the task's dims"},
      {"extra_dims: [{B: -1}]", "dimension B = -1 must be >= 0"},
      {"extra_dims: {B: 1}", "extra_dims is a list of dimension maps"},
      {"extra_dims: [{}]", "an extra shape sets at least one of the task's dims"},
      {"extra_dims: [5]", "extra_dims"},
      {"extra_dims: [{B: 2}, {D: 3}]", "groups 4 must divide the 6 channels"},
  };
  for (const auto& c : cases) {
    Error e = error_of(replaced(base, "dims: {B: 4, D: 8}", "dims: {B: 4, D: 8}\n" + c.extra));
    std::string what = e.what();
    EXPECT_NE(what.find(c.expect), std::string::npos) << "got: " << what << "\nexpected: " << c.expect;
    EXPECT_NE(what.find("task.yaml:8:"), std::string::npos) << "the line of extra_dims: " << what;
    EXPECT_NE(what.find("extra_dims"), std::string::npos) << what;
    EXPECT_TRUE(e.kind() == ErrorKind::spec || e.kind() == ErrorKind::shape) << what;
  }
}
