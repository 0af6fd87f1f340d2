// Launch plans refused: each mistake a spec error that names its location in launch.yaml (and,
// where it can, the closest valid name). The plan task and helpers are launch_plan_fixture.h's.
#include <string>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "env/launch/launch_plan.h"
#include "tests/env/launch/launch_plan_fixture.h"

using namespace kforge;
using namespace kforge::launch_plan_fixture;

TEST(LaunchPlan, RejectsUnknownKernelAndSuggestsTheClosest) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: row_partial, grid: [1], block: [1], args: []}")),
                         "launch.yaml:2:14: launches[0].kernel: unknown kernel 'row_partial' (did you mean "
                         "'row_partials'?); kernel.cu's extern \"C\" __global__ functions: row_partials, finish,"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: k, grid: [1], block: [1]}"), task(), {}),
                         "launch.yaml:2:14: launches[0].kernel: unknown kernel 'k': kernel.cu defines no extern"));
}

TEST(LaunchPlan, RejectsUnknownTensorName) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [xx, y, R, C]}")),
                         "launch.yaml:2:52: launches[0].args[0]: unknown tensor 'xx' (did you mean 'x'?); the "
                         "tensors: x, fc.weight,"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: finish, grid: [1], block: [1], args: [fc.wieght, y, R, C]}")),
                        "launches[0].args[0]: unknown tensor 'fc.wieght' (did you mean 'fc.weight'?)"));
}

TEST(LaunchPlan, RejectsUnknownDimensionAndSuggestsTheClosest) {
  EXPECT_TRUE(StartsWith(error_of(one(R"(kernel: finish
    grid: [1]
    block: [1]
    args: [x, y, Rows, C])")),
                         "launch.yaml:5:18: launches[0].args[2]: unknown dimension 'Rows'; the task's dimensions: C, R"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [ceil_div(c, 256)], block: [1], args: [x, y, R, C]}")),
                         "launch.yaml:2:29: launches[0].grid[0]: unknown dimension 'c' (did you mean 'C'?)"));
}

TEST(LaunchPlan, RejectsTensorUsedInAnExpression) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [x], block: [1], args: [x, y, R, C]}")),
                         "launch.yaml:2:29: launches[0].grid[0]: 'x' is the input x, not a dimension"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, 2*y, C]}")),
                         "launch.yaml:2:58: launches[0].args[2]: 'y' is the output y, not a dimension"));
}

TEST(LaunchPlan, RejectsWorkspaceNameClashes) {
  auto plan = [](const std::string& name, const std::string& extra = "") {
    return "workspace:\n  - {name: " + name + ", dtype: float32, size: 4}\n" + extra +
           "launches:\n  - {kernel: nothing, grid: [1], block: [1]}\n";
  };
  EXPECT_TRUE(StartsWith(error_of(plan("x")),
                         "launch.yaml:2:12: workspace[0].name: workspace name 'x' is already "
                         "taken by the input x; choose a new name"));
  EXPECT_TRUE(HasSubstr(error_of(plan("y")), "workspace name 'y' is already taken by the output y"));
  EXPECT_TRUE(StartsWith(error_of(plan("C")),
                         "launch.yaml:2:12: workspace[0].name: workspace name 'C' is a "
                         "dimension of the task"));
  EXPECT_TRUE(StartsWith(error_of(plan("tmp", "  - {name: tmp, dtype: int32, size: 1}\n")),
                         "launch.yaml:3:12: workspace[1].name: workspace name 'tmp' is already taken by the "
                         "workspace tmp"));
  EXPECT_TRUE(HasSubstr(error_of(plan("fc.weight")), "workspace[0].name: workspace name 'fc.weight' is not an identifier"));
}

TEST(LaunchPlan, RejectsArgumentCountMismatch) {
  EXPECT_TRUE(StartsWith(error_of(one(R"(kernel: row_partials
    grid: [1]
    block: [1]
    args: [x, y, R])")),
                         "launch.yaml:5:11: launches[0].args: kernel 'row_partials' takes 4 arguments (const "
                         "float* x, float* partial, int R, int C), 3 are given"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1]}")),
                         "launch.yaml:2:5: launches[0]: kernel 'finish' takes 4 arguments"));
}

TEST(LaunchPlan, RejectsPointerOfWrongElementType) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: halves, grid: [1], block: [1], args: [x, y, C]}")),
                         "launch.yaml:2:52: launches[0].args[0]: input x is float32 but parameter 'x' (const "
                         "__half*) points to __half; a float32 tensor takes a float* (or void*) parameter"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: count, grid: [1], block: [1], args: [bn.running_mean, bn.running_var, y]}")),
                        "args[0]: buffer bn.running_mean is float32 but parameter 'steps' (const long long*) "
                        "points to long long; a float32 tensor takes a float* (or void*) parameter"));
}

TEST(LaunchPlan, RejectsOutputPassedToConstPointer) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: write_const, grid: [1], block: [1], args: [x, y]}")),
                         "launch.yaml:2:60: launches[0].args[1]: output y is passed to a const pointer "
                         "parameter 'y' (const float*); the kernel must write it"));
}

TEST(LaunchPlan, RejectsIntegerExpressionOrNumberForPointerParameter) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [R, y, R, C]}")),
                         "launch.yaml:2:52: launches[0].args[0]: 'R' is an integer expression but parameter "
                         "'partial' (const float*) is a pointer; pass a tensor: x, fc.weight,"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: finish, grid: [1], block: [1], args: [0.5, y, R, C]}")),
                        "args[0]: '0.5' is a number but parameter 'partial' (const float*) is a pointer"));
}

TEST(LaunchPlan, RejectsTensorForIntegerParameter) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, fc.bias, C]}")),
                         "launch.yaml:2:58: launches[0].args[2]: 'fc.bias' is the parameter fc.bias but "
                         "parameter 'R' (int) is a value, not a pointer"));
}

TEST(LaunchPlan, RejectsNonIntegralNumberForIntegerParameter) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, 0.5, C]}")),
                         "launch.yaml:2:58: launches[0].args[2]: '0.5' is not an integer but parameter 'R' "
                         "(int) is an integer"));
}

TEST(LaunchPlan, RejectsIntegersOutsideTheParameterType) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, R*C*1000000, C]}")),
                         "launch.yaml:2:58: launches[0].args[2]: 'R*C*1000000' is 12000000000, out of range for "
                         "parameter 'R' (int) [-2147483648, 2147483647]"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: affine, grid: [1], block: [1], args: [x, fc.weight, fc.bias, y, 1, 1, 1, -1]}")),
                        "args[7]: '-1' is -1, out of range for parameter 'm' (unsigned) [0, 4294967295]"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: affine, grid: [1], block: [1], args: [x, fc.weight, fc.bias, y, 1e39, 1, 1, 1]}")),
                        "args[4]: '1e39' is out of range for parameter 'alpha' (float)"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: affine, grid: [1], block: [1], args: [x, fc.weight, fc.bias, y, 1, 1e999, 1, 1]}")),
                        "args[5]: number '1e999' is out of range"));
}

TEST(LaunchPlan, RejectsParameterOfUnsupportedType) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: by_value, grid: [1], block: [1], args: [x, y]}")),
                         "launch.yaml:2:54: launches[0].args[0]: parameter 'v' (float4) has a type a launch plan "
                         "cannot pass"));
}

TEST(LaunchPlan, RejectsZeroOrNegativeGridAndBlockDims) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [4, R - 6], block: [1]}")),
                         "launch.yaml:2:33: launches[0].grid[1]: grid.y = R - 6 is 0; every grid dimension is at "
                         "least 1"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [-32]}")),
                         "launch.yaml:2:42: launches[0].block[0]: block.x = -32 is -32; every block dimension is at "
                         "least 1"));
}

TEST(LaunchPlan, RejectsBlocksOverTheThreadLimit) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1025]}")),
                         "launch.yaml:2:42: launches[0].block[0]: block.x = 1025 is 1025, over the GPU's limit of "
                         "1024 for block.x"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [32, 32, 2]}")),
                         "launch.yaml:2:42: launches[0].block: a block of 32 x 32 x 2 = 2048 threads is over the "
                         "limit of 1024"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: nothing, grid: [1], block: [1, 1, 65]}")),
                        "launches[0].block[2]: block.z = 65 is 65, over the GPU's limit of 64 for block.z"));
}

TEST(LaunchPlan, RejectsGridsOverTheLimits) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1, 65536], block: [1]}")),
                         "launch.yaml:2:33: launches[0].grid[1]: grid.y = 65536 is 65536, over the GPU's limit of "
                         "65535 for grid.y"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: nothing, grid: [R*C*1000000], block: [1]}")),
                        "grid[0]: grid.x = R*C*1000000 is 12000000000, over the GPU's limit of 2147483647"));
  DeviceLimits small;
  small.max_grid_dim[0] = 4;
  EXPECT_THROW(resolve_plan(LaunchPlan::parse(one("{kernel: nothing, grid: [R], block: [1]}"), "launch.yaml"), task(), kernels(), small),
               Error);
}

TEST(LaunchPlan, RejectsSharedMemoryOverTheLimitOrNegative) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1], shared_mem: 228 * 1024}")),
                         "launch.yaml:2:58: launches[0].shared_mem: shared_mem 228*1024 is 233472 bytes, over the "
                         "GPU's limit of 232448 bytes"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1], shared_mem: R - 7}")),
                         "launch.yaml:2:58: launches[0].shared_mem: shared_mem R - 7 is -1 bytes; it cannot be "
                         "negative"));
}

TEST(LaunchPlan, RejectsEmptyLaunches) {
  EXPECT_TRUE(StartsWith(error_of("launches: []\n"), "launch.yaml:1:11: launches: the list of launches is empty"));
  EXPECT_TRUE(HasSubstr(error_of("launches:\n"), "launches: the list of launches is empty"));
  EXPECT_TRUE(HasSubstr(error_of("workspace: []\n"), "missing required key 'launches'"));
  EXPECT_TRUE(StartsWith(error_of(""), "launch.yaml: the launch plan is empty"));
}

TEST(LaunchPlan, RejectsWorkspaceSizeBelowOne) {
  EXPECT_TRUE(StartsWith(error_of("workspace:\n  - {name: w, dtype: float32, size: R - 6}\nlaunches:\n"
                                  "  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:2:37: workspace[0].size: size R - 6 is 0 elements; a workspace has at least 1"));
}

TEST(LaunchPlan, RejectsBadDtype) {
  EXPECT_TRUE(StartsWith(error_of("workspace:\n  - {name: w, dtype: float, size: 4}\nlaunches:\n"
                                  "  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:2:22: workspace[0].dtype: unknown dtype 'float' (one of float32,"));
}

TEST(LaunchPlan, RejectsUnknownKeysAnywhere) {
  EXPECT_TRUE(StartsWith(error_of("launch:\n  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:1:1: launch: unknown key (did you mean 'launches'?)"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1], shared_memory: 0}")),
                         "launch.yaml:2:46: launches[0].shared_memory: unknown key (did you mean 'shared_mem'?)"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, gird: [1], block: [1]}")),
                         "launch.yaml:2:23: launches[0].gird: unknown key (did you mean 'grid'?)"));
  EXPECT_TRUE(StartsWith(error_of("workspace:\n  - {name: w, dtype: float32, size: 4, zeroed: true}\nlaunches:\n"
                                  "  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:2:40: workspace[0].zeroed: unknown key (did you mean 'zero'?)"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1]}\noptions: {fast_math: true}\n")),
                         "launch.yaml:3:11: options.fast_math: unknown key (known keys: maxrregcount use_fast_math)"));
}

TEST(LaunchPlan, RejectsMoreThanThreeGridOrBlockEntries) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1, 1, 1, 1], block: [1]}")),
                         "launch.yaml:2:29: launches[0].grid: grid has 4 entries; it takes 1 to 3 (x, y, z)"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: []}")),
                         "launch.yaml:2:41: launches[0].block: block has 0 entries; it takes 1 to 3 (x, y, z)"));
}

TEST(LaunchPlan, RejectsNameThatIsBothTensorAndDimension) {
  TaskSpec t = task();
  t.dims["x"] = 3;  // no shipped task has such a clash; the plan must not guess
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, R, C]}"), t),
                         "launch.yaml:2:52: launches[0].args[0]: 'x' is both the input x and a dimension of the "
                         "task; write (x) for the dimension"));
}

TEST(LaunchPlan, RejectsMalformedExpressionsWhenRead) {
  EXPECT_THROW(LaunchPlan::parse(one("{kernel: nothing, grid: [ceil_div(R)], block: [1]}"), "launch.yaml"), Error);
  EXPECT_TRUE(StartsWith(
      error_of(one("{kernel: nothing, grid: [ceil_div(R)], block: [1]}")),
      "launch.yaml:2:30: launches[0].grid[0]: bad dimension expression 'ceil_div(R)' at column 11: expected ',' in ceil_div(a, b)"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [1], block: [1], args: [x, y, R +, C]}")),
                         "launch.yaml:2:58: launches[0].args[2]: bad dimension expression 'R +' at column 4: expression ends too soon"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [R / (C - C)], block: [1]}")),
                         "launch.yaml:2:30: launches[0].grid[0]: dimension expression 'R/(C - C)' divides by zero"));
}

TEST(LaunchPlan, ExplainsAnExpressionCutByAFlowMapping) {
  EXPECT_TRUE(StartsWith(error_of("workspace:\n  - {name: w, dtype: float32, size: ceil_div(C, 2)}\nlaunches:\n"
                                  "  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:2:37: workspace[0].size: 'ceil_div(C' was cut at a comma: inside {...} write "
                         "the expression in quotes"));
  ResolvedPlan p = resolve(
      "workspace:\n  - {name: w, dtype: float32, size: 'ceil_div(C, 3)'}\nlaunches:\n"
      "  - {kernel: nothing, grid: [1], block: [1]}\n");
  EXPECT_EQ(p.workspace[0].elements, 667);
}

TEST(LaunchPlan, RejectsBadOptionsAndKernelNames) {
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1]}\noptions: {maxrregcount: 300}\n")),
                         "launch.yaml:3:25: options.maxrregcount: maxrregcount 300 is out of range"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1]}\noptions: {use_fast_math: yes}\n")),
                         "launch.yaml:3:26: options.use_fast_math: expected true or false, found 'yes'"));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: 'not a name', grid: [1], block: [1]}")),
                         "launch.yaml:2:14: launches[0].kernel: kernel name 'not a name' is not an identifier"));
  EXPECT_TRUE(StartsWith(error_of("launches:\n  - [nothing, 1, 1]\n"), "launch.yaml:2:5: launches[0]: expected a mapping"));
}

TEST(LaunchPlan, ReportsAnUnclosedParenthesisInABlockMappingAsBadSyntax) {
  EXPECT_TRUE(StartsWith(error_of("workspace:\n  - name: w\n    dtype: float32\n    size: ceil_div(C\nlaunches:\n"
                                  "  - {kernel: nothing, grid: [1], block: [1]}\n"),
                         "launch.yaml:4:11: workspace[0].size: bad dimension expression 'ceil_div(C'"));
}
