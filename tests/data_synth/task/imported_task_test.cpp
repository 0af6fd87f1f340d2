// Imported tasks in the task format (TASK_FORMAT.md, "Imported tasks"): the program and the
// TorchScript reference round-trip byte for byte, the artifact's hash is checked, the stated
// arguments and outputs are validated, and what only graph tasks have is refused. No libtorch:
// the artifact's bytes are opaque here (tests/data_synth/reference/reference_torchscript_test.cpp runs them).
#include <string>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/sha256.h"
#include "data_synth/task/base64.h"
#include "data_synth/task/render_python.h"
#include "data_synth/task/task_spec.h"

using namespace kforge;

namespace {

const std::string kArtifact = std::string("PK\x03\x04\0\xff\x80 torchscript bytes\n", 26);
const std::string kProgram =
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n\n"
    "def get_inputs():\n    return [torch.randn(16, 256)]\n\n\ndef get_init_inputs():\n    return []\n";

// A YAML block holding `text` as a literal (every line indented by two spaces).
std::string literal(const std::string& text) {
  std::string out = "|\n";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    out += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string imported_yaml(
    const std::string& extra_top = "", const std::string& sha = sha256_hex(kArtifact),
    const std::string& arguments = "  - {name: x0, role: input, shape: [16, 256], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n",
    const std::string& outputs = "  - {name: y0, shape: [16, 256], dtype: float32}\n",
    const std::string& cost = "cost: {flops: 4096, min_bytes: 32768}\n") {
  return "kforge_task: 1\nid: kb_l1_relu\nsource: kernelbench\nsplit: heldout\ndescription: relu\nseed: 7\ndtype: float32\n" + extra_top +
         "program: " + literal(kProgram) + "reference:\n  kind: torchscript\n  module_mode: train\n  sha256: " + sha +
         "\n  artifact: " + base64_encode(kArtifact) + "\narguments:\n" + arguments + "outputs:\n" + outputs +
         "tolerance: {atol: 0.01, rtol: 0.01}\n" + cost +
         "provenance: {generator: kforge tasks import, format: kernelbench, file: \"KernelBench/level1/19_ReLU.py\", "
         "file_sha256: abc, row: null, level: 1, ops: null, tolerance_profile: cuda-agent}\n";
}

std::string error_of(const std::string& yaml) {
  try {
    parse_task(yaml, "t.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "parsed:\n" << yaml;
  return "";
}

}  // namespace

TEST(ImportedTask, ParsesTheContractsFields) {
  TaskSpec t = parse_task(imported_yaml(), "t.yaml");
  EXPECT_TRUE(t.imported());
  EXPECT_EQ(t.reference.kind, ReferenceKind::torchscript);
  EXPECT_EQ(t.reference.module_mode, ModuleMode::train);
  EXPECT_EQ(t.reference.artifact, kArtifact);
  EXPECT_EQ(t.program, kProgram);
  EXPECT_EQ(t.split, Split::heldout);
  ASSERT_EQ(t.arguments.size(), 1u);
  EXPECT_EQ(t.arguments[0].decl.name, "x0");
  EXPECT_EQ(t.arguments[0].decl.meta.shape, (Shape{16, 256}));
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].name, "y0");
  ASSERT_TRUE(t.cost.flops.has_value());
  EXPECT_EQ(*t.cost.flops, 4096);
  EXPECT_EQ(t.cost.min_bytes, 32768);
  EXPECT_EQ(t.tolerance.atol, 0.01);
  EXPECT_TRUE(t.dims.empty());
  EXPECT_FALSE(t.check_dims.has_value());
  EXPECT_TRUE(t.graph.nodes.empty());
  EXPECT_EQ(t.provenance.format, "kernelbench");
  EXPECT_EQ(t.provenance.level, 1);
  EXPECT_FALSE(t.provenance.row.has_value());
  EXPECT_FALSE(t.provenance.ops.has_value());
  EXPECT_EQ(t.provenance.tolerance_profile, "cuda-agent");
}

TEST(ImportedTask, RoundTripsThroughTaskToYaml) {
  TaskSpec t = parse_task(imported_yaml(), "t.yaml");
  std::string text = task_to_yaml(t);
  TaskSpec back = parse_task(text, "again.yaml");
  EXPECT_EQ(back.program, t.program);
  EXPECT_EQ(back.reference.artifact, t.reference.artifact);
  EXPECT_EQ(back.reference.sha256, t.reference.sha256);
  EXPECT_EQ(back.reference.module_mode, t.reference.module_mode);
  EXPECT_EQ(back.arguments.size(), t.arguments.size());
  EXPECT_EQ(back.outputs[0].meta.shape, t.outputs[0].meta.shape);
  EXPECT_EQ(back.cost.flops, t.cost.flops);
  EXPECT_EQ(back.provenance.file, t.provenance.file);
  EXPECT_EQ(back.provenance.level, t.provenance.level);
  EXPECT_EQ(task_to_yaml(back), text);  // a fixed point
}

// get_init_inputs() as the file's init_inputs: bools, integers and numbers, in order, kept by
// kind through a round trip; anything else is a spec error naming the key.
TEST(ImportedTask, InitInputsKeepTheirOrderAndKinds) {
  TaskSpec t = parse_task(imported_yaml("init_inputs: [4096, 0.5, true, -3, 1e-05]\n"), "t.yaml");
  ASSERT_EQ(t.init_inputs.size(), 5u);
  EXPECT_EQ(std::get<int64_t>(t.init_inputs[0]), 4096);
  EXPECT_EQ(std::get<double>(t.init_inputs[1]), 0.5);
  EXPECT_EQ(std::get<bool>(t.init_inputs[2]), true);
  EXPECT_EQ(std::get<int64_t>(t.init_inputs[3]), -3);
  EXPECT_EQ(std::get<double>(t.init_inputs[4]), 1e-05);
  TaskSpec back = parse_task(task_to_yaml(t), "again.yaml");
  EXPECT_EQ(back.init_inputs, t.init_inputs);
  EXPECT_TRUE(parse_task(imported_yaml(), "t.yaml").init_inputs.empty());
  EXPECT_EQ(task_to_yaml(parse_task(imported_yaml(), "t.yaml")).find("\ninit_inputs:"), std::string::npos);
  for (const char* bad : {"init_inputs: [[3, 3]]\n", "init_inputs: [relu]\n", "init_inputs: 3\n", "init_inputs: [~]\n"}) {
    try {
      parse_task(imported_yaml(bad), "t.yaml");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::spec) << bad;
      EXPECT_NE(std::string(e.what()).find("init_inputs"), std::string::npos) << e.what();
    }
  }
}

TEST(ImportedTask, ProgramSurvivesVerbatimWhateverItsWhitespace) {
  for (std::string program : {kProgram, kProgram.substr(0, kProgram.size() - 1), kProgram + "\n\n", std::string("  x = 1\n"),
                              std::string("a = 1\r\nb = '\xc3\xa9'\r\n"), std::string("x = 1\n   \n\ty = 2\n"), std::string("\tx = 1\n"),
                              std::string("# only a comment")}) {
    TaskSpec t = parse_task(imported_yaml(), "t.yaml");
    t.program = program;
    TaskSpec back = parse_task(task_to_yaml(t), "again.yaml");
    EXPECT_EQ(back.program, program);
  }
}

TEST(ImportedTask, ArtifactBytesSurviveEveryLength) {
  for (size_t n : {1u, 2u, 3u, 4u, 57u, 58u, 59u, 1000u}) {
    TaskSpec t = parse_task(imported_yaml(), "t.yaml");
    t.reference.artifact.clear();
    for (size_t i = 0; i < n; ++i) t.reference.artifact.push_back(static_cast<char>((i * 37 + 11) & 255));
    t.reference.sha256 = sha256_hex(t.reference.artifact);
    EXPECT_EQ(parse_task(task_to_yaml(t), "again.yaml").reference.artifact, t.reference.artifact) << n;
  }
}

TEST(ImportedTask, ArtifactWhoseHashDiffersIsASpecErrorNamingTheKey) {
  std::string e = error_of(imported_yaml("", std::string(64, '0')));
  EXPECT_NE(e.find("reference.sha256"), std::string::npos) << e;
  EXPECT_NE(e.find(sha256_hex(kArtifact)), std::string::npos) << e;
  EXPECT_NE(error_of(imported_yaml("", "XYZ")).find("64 lowercase hex"), std::string::npos);
}

TEST(ImportedTask, RefusesWhatOnlyGraphTasksHave) {
  for (const char* key : {"dims: {N: 4}\n", "check_dims: {N: 2}\n", "graph: {inputs: [], nodes: [], outputs: []}\n"}) {
    std::string e = error_of(imported_yaml(key));
    EXPECT_NE(e.find("has no"), std::string::npos) << e;
  }
}

TEST(ImportedTask, ValidatesTheStatedArgumentsAndOutputs) {
  const std::string x0 = "  - {name: x0, role: input, shape: [4], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n";
  auto arg_error = [&](const std::string& args) { return error_of(imported_yaml("", sha256_hex(kArtifact), args)); };
  EXPECT_NE(arg_error(x0 + x0).find("used twice"), std::string::npos);
  EXPECT_NE(arg_error("  - {name: x0, role: input, shape: [0, 4], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n").find(">= 1"),
            std::string::npos);
  EXPECT_NE(arg_error("  - {name: x0, role: input, shape: [4], dtype: float64, draw: {dist: normal, mean: 0, std: 1}}\n").find("dtype"),
            std::string::npos);
  EXPECT_NE(arg_error("  - {name: x0, role: weight, shape: [4], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n").find("role"),
            std::string::npos);
  EXPECT_NE(arg_error("  - {name: x0, role: input, shape: [4], dtype: float32}\n").find("draw"), std::string::npos);
  EXPECT_FALSE(arg_error("  - {name: x0, role: input, shape: [4], dtype: float32, draw: {dist: normal, mean: 0, std: -1}}\n").empty());
  EXPECT_NE(arg_error("  - {name: w, role: parameter, shape: [4], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n" + x0)
                .find("role input"),
            std::string::npos);
  // A float argument cannot be constant (kforge tasks import moves an all-equal state around its
  // value); an integer one can (num_batches_tracked).
  EXPECT_NE(arg_error(x0 + "  - {name: bn.weight, role: parameter, shape: [4], dtype: float32, draw: {dist: constant, value: 1}}\n")
                .find("'bn.weight' is float32 with a constant draw"),
            std::string::npos);
  EXPECT_NO_THROW(
      parse_task(imported_yaml("", sha256_hex(kArtifact),
                               x0 + "  - {name: n, role: buffer, shape: [1], dtype: int64, draw: {dist: constant, value: 0}}\n"),
                 "t.yaml"));
  // Outputs share the arguments' namespace (launch plans name tensors by name).
  std::string clash = error_of(imported_yaml("", sha256_hex(kArtifact), x0, "  - {name: x0, shape: [4], dtype: float32}\n"));
  EXPECT_NE(clash.find("used twice"), std::string::npos) << clash;
  EXPECT_NE(error_of(imported_yaml("", sha256_hex(kArtifact), x0, "  []\n")).find("outputs"), std::string::npos);
}

TEST(ImportedTask, CostWithoutFlopsMeansNoFlopCount) {
  TaskSpec t =
      parse_task(imported_yaml("", sha256_hex(kArtifact),
                               "  - {name: x0, role: input, shape: [16, 256], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n",
                               "  - {name: y0, shape: [16, 256], dtype: float32}\n", "cost: {min_bytes: 32768}\n"),
                 "t.yaml");
  EXPECT_FALSE(t.cost.flops.has_value());
  std::string text = task_to_yaml(t);
  EXPECT_EQ(text.find("flops"), std::string::npos) << text;
  EXPECT_FALSE(parse_task(text, "again.yaml").cost.flops.has_value());
  // Without a cost block, min_bytes is every argument and output once.
  TaskSpec no_cost =
      parse_task(imported_yaml("", sha256_hex(kArtifact),
                               "  - {name: x0, role: input, shape: [16, 256], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n",
                               "  - {name: y0, shape: [16, 256], dtype: float32}\n", ""),
                 "t.yaml");
  EXPECT_EQ(no_cost.cost.min_bytes, 2 * 16 * 256 * 4);
}

TEST(ImportedTask, DerivingAndResizingRefuseOrDoNothing) {
  TaskSpec t = parse_task(imported_yaml(), "t.yaml");
  try {
    derive_task(t);
    ADD_FAILURE() << "derive_task accepted an imported task";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec);
    EXPECT_NE(std::string(e.what()).find("imported"), std::string::npos) << e.what();
  }
  EXPECT_EQ(task_to_yaml(t.with_dims({})), task_to_yaml(t));
  EXPECT_EQ(task_to_yaml(t.at_check_dims()), task_to_yaml(t));
  EXPECT_THROW(t.with_dims({{"N", 4}}), Error);
}

// Issue 30: an imported task's other shapes are stated (the importer checked the artifact there):
// read into extra_dims (the constants) and imported_shapes, written back, and at_extra_dims gives
// the task with those inputs' and outputs' shapes, the parameters' kept, and no FLOP count.
TEST(ImportedTask, ExtraShapesAreReadWrittenAndApplied) {
  const std::string args =
      "  - {name: x0, role: input, shape: [16, 256], dtype: float32, draw: {dist: normal, mean: 0, std: 1}}\n"
      "  - {name: fc.weight, role: parameter, shape: [256], dtype: float32, draw: {dist: uniform, low: -0.1, high: 0.1}}\n";
  const std::string shapes =
      "extra_shapes:\n"
      "  - {kind: odd, constants: {batch_size: 9, dim: 255}, inputs: [[9, 255]], outputs: [[9, 255]]}\n"
      "  - {kind: batch_one, constants: {batch_size: 1}, inputs: [[1, 256]], outputs: [[1, 256]]}\n";
  TaskSpec t = parse_task(imported_yaml(shapes, sha256_hex(kArtifact), args), "t.yaml");
  ASSERT_EQ(t.extra_dims.size(), 2u);
  ASSERT_EQ(t.imported_shapes.size(), 2u);
  EXPECT_EQ(t.extra_dims[0], (DimEnv{{"batch_size", 9}, {"dim", 255}}));
  EXPECT_EQ(t.imported_shapes[1].kind, "batch_one");
  TaskSpec odd = t.at_extra_dims(0);
  EXPECT_EQ(odd.arguments[0].decl.meta.shape, (Shape{9, 255}));
  EXPECT_EQ(odd.arguments[1].decl.meta.shape, (Shape{256}));  // the state keeps its shape
  EXPECT_EQ(odd.outputs[0].meta.shape, (Shape{9, 255}));
  EXPECT_FALSE(odd.cost.flops.has_value());
  EXPECT_EQ(odd.cost.min_bytes, 4.0 * (9 * 255 + 256 + 9 * 255));
  EXPECT_EQ(t.at_extra_dims(1).arguments[0].decl.meta.shape, (Shape{1, 256}));
  EXPECT_THROW(t.at_extra_dims(2), Error);
  const std::string text = task_to_yaml(t);
  TaskSpec back = parse_task(text, "again.yaml");
  EXPECT_EQ(back.extra_dims, t.extra_dims);
  EXPECT_EQ(task_to_yaml(back), text);
  EXPECT_EQ(back.at_extra_dims(0).outputs[0].meta.shape, (Shape{9, 255}));
  EXPECT_TRUE(parse_task(imported_yaml(), "t.yaml").extra_dims.empty());

  auto bad = [&](const std::string& item) {
    return error_of(imported_yaml("extra_shapes:\n  - " + item + "\n", sha256_hex(kArtifact), args));
  };
  EXPECT_NE(bad("{kind: odd, constants: {b: 9}, inputs: [[9, 255], [3]], outputs: [[9, 255]]}").find("one shape per input (1)"),
            std::string::npos);
  EXPECT_NE(bad("{kind: odd, constants: {b: 9}, inputs: [[9, 255, 1]], outputs: [[9, 255]]}").find("rank 3"), std::string::npos);
  EXPECT_NE(bad("{kind: odd, constants: {b: 0}, inputs: [[9, 255]], outputs: [[9, 255]]}").find(">= 1"), std::string::npos);
  EXPECT_NE(bad("{kind: odd, constants: {}, inputs: [[9, 255]], outputs: [[9, 255]]}").find("at least one"), std::string::npos);
  EXPECT_NE(bad("{kind: odd, constants: {b: 9}, inputs: [[9, 255]], outputs: [[9, 255]], dims: {}}").find("dims"), std::string::npos);
  EXPECT_NE(bad("{kind: odd, constants: {b: 9}, inputs: [[9, 0]], outputs: [[9, 255]]}").find(">= 1"), std::string::npos);
}

TEST(ImportedTask, RenderPythonIsTheProgramVerbatim) {
  TaskSpec t = parse_task(imported_yaml(), "t.yaml");
  EXPECT_EQ(render_python(t), kProgram);
}

TEST(ImportedTask, GraphTasksMayStateTheirKindButNoProgram) {
  const std::string graph_task = R"(kforge_task: 1
id: g
source: synth
split: train
seed: 1
dtype: float32
dims: {N: 4}
graph:
  inputs: [{name: x, shape: [N]}]
  nodes: [{id: y, op: relu, in: [x]}]
  outputs: [y]
provenance: {generator: test}
)";
  TaskSpec g = parse_task(graph_task + "reference: {kind: graph}\n", "g.yaml");
  EXPECT_FALSE(g.imported());
  ASSERT_TRUE(g.cost.flops.has_value());
  EXPECT_EQ(g.cost.min_bytes, g.resolved.min_bytes);
  EXPECT_NE(error_of(graph_task + "program: \"x = 1\"\n").find("only imported tasks"), std::string::npos);
  EXPECT_NE(error_of(graph_task + "reference: {kind: onnx}\n").find("unknown reference kind"), std::string::npos);
  EXPECT_NE(error_of(graph_task + "reference: {kind: graph, sha256: abc}\n").find("sha256"), std::string::npos);
}

TEST(ImportedTask, AcceptsTheEnumSpellingOfTheCudaAgentSource) {
  std::string text = imported_yaml();
  text.replace(text.find("source: kernelbench"), 19, "source: cuda_agent_ops");
  EXPECT_EQ(parse_task(text, "t.yaml").source, TaskSource::cuda_agent_ops);
}

TEST(Base64, EncodesAndDecodesTheRfcVectors) {
  const std::pair<const char*, const char*> v[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : v) {
    EXPECT_EQ(base64_encode(plain), coded);
    EXPECT_EQ(base64_decode(coded), plain);
  }
  EXPECT_EQ(base64_decode("Zm9v\n YmFy\n"), "foobar");
  EXPECT_THROW(base64_decode("Zm9v!"), Error);
  EXPECT_THROW(base64_decode("Zm9"), Error);
  EXPECT_THROW(base64_decode("Zg==Zg=="), Error);
}
