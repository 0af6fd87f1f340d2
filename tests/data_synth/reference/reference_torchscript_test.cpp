// The reference of imported tasks: the module's TorchScript artifact (traced by pip torch in
// tests/data_synth/make_imported_tasks.py, as the importer does) loaded once per artifact and
// device and called with the drawn arguments, on the CPU.
#include "data_synth/reference/reference_torchscript.h"

#include <string>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "configs/error.h"
#include "data_synth/reference/reference.h"

using namespace kforge;

namespace {

TaskSpec fixture_task(const std::string& sub, const std::string& id) {
  return load_task(std::string(KFORGE_IMPORTED_FIXTURE_DIR) + "/" + sub + "/" + id + ".yaml");
}

std::vector<at::Tensor> args_of(const TaskSpec& t, uint64_t trial = 1) { return draw_arguments(t, {t.seed, trial, 0}, at::kCPU); }

Error error_of(const TaskSpec& t) {
  try {
    run_reference(t, args_of(t));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the reference ran";
  return Error(ErrorKind::internal, "");
}

}  // namespace

TEST(TorchScriptReference, ComputesTheModulesFunction) {
  TaskSpec t = fixture_task("tasks", "kb_l1_relu");
  ASSERT_TRUE(t.imported());
  auto args = args_of(t);
  auto out = run_reference(t, args);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].equal(at::relu(args[0])));
  EXPECT_TRUE(run_reference(t, args_of(t, 2))[0].equal(at::relu(args_of(t, 2)[0])));  // not a constant
}

TEST(TorchScriptReference, AgreesWithTheGraphReferenceOfTheSameOps) {
  // The graph twins have the same argument order, shapes and default draws as the imported modules.
  for (const auto& [imported, graph] : {std::pair{"kb_l1_relu", "graph_relu"}, std::pair{"kb_l2_linear_relu", "graph_linear_relu"},
                                        std::pair{"kb_l1_softmax", "graph_softmax"}}) {
    TaskSpec ts = fixture_task("tasks", imported), g = fixture_task("graph", graph);
    ASSERT_EQ(ts.arguments.size(), g.arguments.size()) << imported;
    for (size_t i = 0; i < ts.arguments.size(); ++i) EXPECT_EQ(ts.arguments[i].draw, g.arguments[i].draw) << imported << " " << i;
    auto args = args_of(ts);
    auto a = run_reference(ts, args), b = run_reference(g, args);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_TRUE(at::allclose(a[0], b[0], 1e-6, 1e-6)) << imported;
  }
}

TEST(TorchScriptReference, LoadsEachArtifactOncePerDevice) {
  TaskSpec t = fixture_task("tasks", "kb_l1_softmax");
  run_reference(t, args_of(t));
  const int64_t loads = torchscript_loads();
  for (int i = 0; i < 3; ++i) run_reference(t, args_of(t, i));
  TaskSpec again = fixture_task("tasks", "kb_l1_softmax");  // another TaskSpec, the same artifact
  run_reference(again, args_of(again));
  EXPECT_EQ(torchscript_loads(), loads);
  TaskSpec other = fixture_task("tasks", "kb_l1_relu");
  run_reference(other, args_of(other));
  run_reference(other, args_of(other));
  EXPECT_LE(torchscript_loads(), loads + 1);  // relu may have been loaded by an earlier test in this process
}

TEST(TorchScriptReference, ReturnsEveryOutputInOrder) {
  TaskSpec t = fixture_task("tasks", "kb_l1_two_outputs");
  auto args = args_of(t);
  auto out = run_reference(t, args);
  ASSERT_EQ(out.size(), 2u);
  at::Tensor s = args[0] + args[1];
  EXPECT_TRUE(at::allclose(out[0], s * 2.0));
  EXPECT_TRUE(at::allclose(out[1], s.mean(1)));
  EXPECT_FALSE(t.cost.flops.has_value());
}

TEST(TorchScriptReference, UsesTheStateItIsGivenNotTheModulesOwn) {
  TaskSpec t = fixture_task("tasks", "kb_l2_batchnorm_eval");
  ASSERT_EQ(t.reference.module_mode, ModuleMode::eval);
  auto args = args_of(t);
  at::Tensor x = args[0];
  // The module's initial state (weight 1, bias 0, mean 0, variance 1), then another one.
  for (int i : {1, 4}) args[i] = at::ones_like(args[i]);
  for (int i : {2, 3}) args[i] = at::zeros_like(args[i]);
  auto plain = run_reference(t, args)[0];
  EXPECT_TRUE(at::allclose(plain, x / std::sqrt(1 + 1e-5), 1e-5, 1e-6));
  args[1] = at::full_like(args[1], 2.0);  // bn.weight
  args[3] = at::full_like(args[3], 0.5);  // bn.running_mean
  auto moved = run_reference(t, args)[0];
  EXPECT_TRUE(at::allclose(moved, 2.0 * (x - 0.5) / std::sqrt(1 + 1e-5), 1e-5, 1e-5));
}

TEST(TorchScriptReference, RunsOnPromotedArguments) {
  // The robustness probe runs the reference on float64 copies of the arguments.
  TaskSpec t = fixture_task("tasks", "kb_l2_linear_relu");
  auto args = args_of(t);
  std::vector<at::Tensor> args64;
  for (const auto& a : args) args64.push_back(a.to(at::kDouble));
  auto r = run_reference(t, args)[0], r64 = run_reference(t, args64)[0];
  EXPECT_EQ(r64.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(r.to(at::kDouble), r64, 1e-5, 1e-5));
}

TEST(TorchScriptReference, OutputsThatDisagreeWithTheTaskAreSpecErrors) {
  TaskSpec shape = fixture_task("tasks", "kb_l1_relu");
  shape.outputs[0].meta.shape = {16, 255};
  Error e = error_of(shape);
  EXPECT_EQ(e.kind(), ErrorKind::spec);
  EXPECT_NE(std::string(e.what()).find("'y0'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("[16, 255]"), std::string::npos) << e.what();

  TaskSpec dtype = fixture_task("tasks", "kb_l1_relu");
  dtype.outputs[0].meta.dtype = DType::float16;
  e = error_of(dtype);
  EXPECT_EQ(e.kind(), ErrorKind::spec);
  EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();

  TaskSpec count = fixture_task("tasks", "kb_l1_two_outputs");
  count.outputs.pop_back();
  e = error_of(count);
  EXPECT_EQ(e.kind(), ErrorKind::spec);
  EXPECT_NE(std::string(e.what()).find("returns 2 tensor(s)"), std::string::npos) << e.what();
}

TEST(TorchScriptReference, ArtifactThatDoesNotLoadIsASpecError) {
  TaskSpec t = fixture_task("tasks", "kb_l1_relu");
  t.reference.artifact = "not a zip archive";
  t.reference.sha256 = std::string(64, 'e');  // another cache key
  Error e = error_of(t);
  EXPECT_EQ(e.kind(), ErrorKind::spec);
  EXPECT_NE(std::string(e.what()).find("does not load"), std::string::npos) << e.what();
}

TEST(TorchScriptReference, ArgumentsOfAnotherShapeFailAsRuntimeErrors) {
  TaskSpec t = fixture_task("tasks", "kb_l2_linear_relu");
  auto args = args_of(t);
  args[0] = at::randn({32, 7});
  try {
    run_reference(t, args);
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(std::string(e.what()).find("TorchScript reference failed"), std::string::npos) << e.what();
  }
}

// An artifact traced with torch's default flags bakes allow_tf32 = True into its convolution; the
// load turns it off (reference_torchscript.h), once, leaving what it computes on the CPU unchanged.
TEST(TorchScriptReference, ConvolutionsTracedWithTf32OnAreTurnedToFloat32) {
  torch::jit::Module m = torch::jit::load(std::string(KFORGE_IMPORTED_FIXTURE_DIR) + "/conv_tf32.pt");
  const at::Tensor x = at::randn({2, 3, 8, 8});
  const at::Tensor before = m.forward({x}).toTensor();
  EXPECT_EQ(float32_convolutions(m), 1);
  EXPECT_EQ(float32_convolutions(m), 0);  // nothing left to change
  EXPECT_TRUE(at::allclose(m.forward({x}).toTensor(), before));
}
