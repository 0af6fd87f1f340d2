// The synthesis filters that run the C++ reference on the CPU: a task that is constant, below the
// tolerance floor or blind to its inputs is rejected; a good one passes.
#include <gtest/gtest.h>

#include "data_synth/synth/cpu_checks.h"

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
