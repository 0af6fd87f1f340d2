// Hostile launch plans (issue 26): each of these used to kill the process that read the plan
// (SIGFPE, SIGSEGV) or was read silently wrong. Each is now a spec error naming its line.
#include <string>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "env/launch/launch_plan.h"

using namespace kforge;

namespace {

const char* kTask = R"(kforge_task: 1
id: hostile_plan_task
source: synth
split: train
seed: 5
dtype: float32
dims: {N: 4096}
graph:
  inputs:
    - {name: x, shape: [N]}
  nodes:
    - {id: y, op: relu, in: [x]}
  outputs: [y]
provenance: {generator: test, seed: 1}
)";

std::string error_of(const std::string& yaml) {
  static const TaskSpec task = parse_task(kTask, "task.yaml");
  static const std::vector<KernelSignature> kernels =
      parse_kernel_signatures(R"(extern "C" __global__ void relu(const float* x, float* y, int n) {})");
  try {
    resolve_plan(LaunchPlan::parse(yaml, "launch.yaml"), task, kernels);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
    return e.what();
  }
  return "no error";
}

std::string plan_with_grid(const std::string& grid) {
  return "launches:\n  - kernel: relu\n    grid: [\"" + grid + "\"]\n    block: [256]\n    args: [x, y, N]\n";
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

::testing::AssertionResult HasSubstr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text.substr(0, 400) << "\n  expected to contain: " << part;
}

}  // namespace

TEST(LaunchPlanHostile, Int64MinOverMinusOneInAGridIsAnOverflowErrorOnItsLine) {
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid("(0 - 9223372036854775807 - 1) / (0 - 1)")),
                        "launch.yaml:3:12: launches[0].grid[0]: dimension expression"));
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid("(0 - 9223372036854775807 - 1) / (0 - 1)")), "overflows 64 bits (/)"));
}

TEST(LaunchPlanHostile, ModuloOfInt64MinByMinusOneIsAZeroGridNotASignal) {
  EXPECT_TRUE(HasSubstr(
      error_of(plan_with_grid("(0 - 9223372036854775807 - 1) % (0-1)")),
      "launch.yaml:3:12: launches[0].grid[0]: grid.x = (0 - 9223372036854775807 - 1)%(0 - 1) is 0; every grid dimension is at least 1"));
}

TEST(LaunchPlanHostile, NegatedInt64MinIsAnOverflowError) {
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid("-(0 - 9223372036854775807 - 1)")), "overflows 64 bits (negation)"));
}

TEST(LaunchPlanHostile, TwentyThousandParenthesesAreASpecError) {
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid(repeat("(", 20000) + "1" + repeat(")", 20000))),
                        "launch.yaml:3:12: launches[0].grid[0]: dimension expression of 40001 characters is longer than "
                        "the limit of 4096"));
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid(repeat("(", 100) + "1" + repeat(")", 100))), "nested deeper than 64 levels"));
}

TEST(LaunchPlanHostile, TwentyThousandTermSumIsASpecError) {
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid("1" + repeat(" + 1", 20000))), "longer than the limit of 4096"));
  EXPECT_TRUE(HasSubstr(error_of(plan_with_grid("1" + repeat("+1", 1000))), "more than 256 operators"));
  // The same through an argument, which is parsed as an expression when it is not a name.
  std::string sum_arg = "launches:\n  - {kernel: relu, grid: [1], block: [1], args: [x, y, \"1" + repeat("+1", 1000) + "\"]}\n";
  EXPECT_TRUE(HasSubstr(error_of(sum_arg), "launch.yaml:2:56: launches[0].args[2]: bad dimension expression"));
}

TEST(LaunchPlanHostile, DeeplyNestedYamlIsRefusedBeforeYamlCppRecurses) {
  EXPECT_TRUE(HasSubstr(error_of("launches: " + repeat("[", 150000)), "launch.yaml:1:27: flow collections nested deeper than 16 levels"));
  EXPECT_TRUE(HasSubstr(error_of("launches:\n" + repeat("- ", 20000) + "x\n"), "launch.yaml:2:"));
}

TEST(LaunchPlanHostile, OversizedPlanIsRefused) {
  std::string big = "# " + std::string(kMaxPlanBytes, 'x') + "\nlaunches: []\n";
  EXPECT_TRUE(HasSubstr(error_of(big), "bytes of YAML, over the limit of 262144"));
}

TEST(LaunchPlanHostile, DuplicateKeyIsRefusedWithItsLine) {
  std::string plan = "launches:\n  - kernel: relu\n    grid: [16]\n    block: [256]\n    grid: [1]\n    args: [x, y, N]\n";
  EXPECT_EQ(error_of(plan), "launch.yaml:5:5: duplicate key 'grid' (first at line 3); a key may appear once in a mapping");
  EXPECT_TRUE(HasSubstr(error_of("launches: []\nlaunches: []\n"), "launch.yaml:2:1: duplicate key 'launches'"));
}
