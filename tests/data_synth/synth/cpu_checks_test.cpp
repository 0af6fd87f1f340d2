// The synthesis filters that run the C++ reference on the CPU: a task that is constant, below the
// tolerance floor or blind to its inputs is rejected; a good one passes.
#include <gtest/gtest.h>

#include "data_synth/synth/cpu_checks.h"

#include "configs/error.h"
#include "data_synth/synth/extra_shapes.h"

using namespace kforge;

namespace {

TaskSpec task(const std::string& nodes, const std::string& inputs = "[{name: x, shape: [B, D]}]") {
  std::string y =
      "kforge_task: 1\nid: t\nsource: synth\nsplit: train\nseed: 3\ndtype: float32\ndims: {B: 4, D: 64}\n"
      "check_dims: {B: 2, D: 64}\ngraph:\n  inputs: " +
      inputs + "\n  nodes:\n" + nodes + "  outputs: [y]\nprovenance: {generator: test}\n";
  return parse_task(y, "t.yaml");
}

}  // namespace

TEST(CpuChecks, AGoodTaskPasses) { EXPECT_EQ(cpu_reference_verdict(task("    - {id: y, op: gelu, in: [x]}\n"), {}), ""); }

TEST(CpuChecks, AnAllZerosOrTinyAnswerIsBelowTheFloor) {
  // x * 1e-6: every element is within atol of zero.
  EXPECT_EQ(cpu_reference_verdict(task("    - {id: y, op: scale, in: [x], attrs: {alpha: 1.0e-6}}\n"), {}), "below_tolerance_floor");
}

TEST(CpuChecks, AConstantAnswerIsNearConstant) {
  // softmax over a dim of size 1 is 1 everywhere.
  TaskSpec t = task("    - {id: y, op: softmax, in: [x], attrs: {dim: 2}}\n", "[{name: x, shape: [B, D, 1]}]");
  EXPECT_EQ(cpu_reference_verdict(t, {}), "near_constant");
}

TEST(CpuChecks, AnAnswerBlindToItsInputsIsRejected) {
  // An argmax over a dim of size 1 is 0 whatever the input.
  TaskSpec t = task("    - {id: y, op: argmax, in: [x], attrs: {dim: 2}}\n", "[{name: x, shape: [B, D, 1]}]");
  EXPECT_EQ(cpu_reference_verdict(t, {}), "invariant_to_inputs");
}

TEST(CpuChecks, NonFiniteOutputsAreRejected) {
  // exp(exp(exp(x))) overflows float32 for x >~ 1.2.
  TaskSpec t = task("    - {id: a, op: exp, in: [x]}\n    - {id: b, op: exp, in: [a]}\n    - {id: y, op: exp, in: [b]}\n");
  EXPECT_EQ(cpu_reference_verdict(t, {}), "nonfinite");
}

TEST(CpuChecks, BudgetAndMissingCheckDimsAreCounted) {
  CpuCheckConfig small;
  small.max_flops = 10;
  EXPECT_EQ(cpu_reference_verdict(task("    - {id: y, op: gelu, in: [x]}\n"), small), "cpu_budget");
  TaskSpec t = task("    - {id: y, op: gelu, in: [x]}\n");
  t.check_dims.reset();
  EXPECT_EQ(cpu_reference_verdict(t, {}), "no_check_dims");
}

TEST(CpuChecks, AnInputThatDoesNotMatterIsRejectedUnlessSwitchedOff) {
  // maximum(x, y) with y ~ normal(-100, 1): always x; y is never read.
  TaskSpec t = task("    - {id: y, op: maximum, in: [x, w]}\n", "[{name: x, shape: [B, D]}, {name: w, shape: [B, D]}]");
  t.arguments[1].draw = Draw::normal(-100, 1);
  EXPECT_EQ(cpu_reference_verdict(t, {}), "input_matters");
  CpuCheckConfig off;
  off.input_matters = false;
  EXPECT_EQ(cpu_reference_verdict(t, off), "");
}

// The empty extra shape (issue 30; extra_shapes.h): {B: 0} where every output is empty there and the
// reference, run on the CPU, accepts it; none where a reduction over B gives an answer of elements.
TEST(CpuChecks, AnEmptyBatchIsAnExtraShapeWhereTheReferenceAcceptsIt) {
  TaskSpec t = task("    - {id: y, op: gelu, in: [x]}\n");
  std::vector<ExtraShape> shapes = draw_extra_shapes(t, {}, reference_accepts_empty);
  ASSERT_FALSE(shapes.empty());
  EXPECT_EQ(shapes.back().kind, "empty");
  EXPECT_EQ(shapes.back().dims, (DimEnv{{"B", 0}}));
  TaskSpec at = t.with_dims({{"B", 0}});
  EXPECT_EQ(reference_accepts_empty(at), "");
  for (const auto& o : at.outputs) EXPECT_EQ(o.meta.shape.at(0), 0);
  // Without the reference's word there is no empty shape; with it, the shapes before are the same.
  std::vector<ExtraShape> plain = draw_extra_shapes(t, {});
  ASSERT_EQ(plain.size() + 1, shapes.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i].dims, shapes[i].dims);
  // The spec carries B: 0 through its text, and verification can resize the task there.
  TaskSpec back = parse_task(spec_with_extra_dims(task_to_yaml(t), draw_extra_dims(t, {}, reference_accepts_empty), "t"), "t");
  ASSERT_EQ(back.extra_dims.back(), (DimEnv{{"B", 0}}));
  EXPECT_EQ(back.at_extra_dims(back.extra_dims.size() - 1).dims.at("B"), 0);

  // mean over B: one value per column, NaN over no rows.
  TaskSpec reduced = task("    - {id: y, op: mean, in: [x], attrs: {dim: 0}}\n");
  for (const auto& s : draw_extra_shapes(reduced, {}, reference_accepts_empty)) EXPECT_NE(s.kind, "empty");
  EXPECT_NE(reference_accepts_empty(reduced.with_dims({{"B", 0}})), "");
}

TEST(CpuChecks, ADimOfZeroIsAnExtraShapeOnlyNeverTheTasksOwn) {
  EXPECT_THROW(task("    - {id: y, op: gelu, in: [x]}\n").with_dims({{"B", -1}}), Error);
  const std::string text = task_to_yaml(task("    - {id: y, op: gelu, in: [x]}\n"));
  std::string zero = text;
  zero.replace(zero.find("dims: {B: 4"), 11, "dims: {B: 0");
  EXPECT_THROW(parse_task(zero, "zero.yaml"), Error);
}
