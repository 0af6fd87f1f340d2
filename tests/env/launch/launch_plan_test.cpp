// Launch plans read and resolved against the plan task (launch_plan_fixture.h, defined here): good
// plans, the plan file, KERNEL_FORMAT.md's example and the shipped candidates. The plans refused
// with their located spec errors are in launch_plan_errors_test.cpp.
#include "env/launch/launch_plan.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "configs/remove_tree.h"
#include "tests/test_paths.h"

#include "configs/error.h"
#include "configs/file_reader.h"
#include "tests/env/launch/launch_plan_fixture.h"

using namespace kforge;
using namespace kforge::launch_plan_fixture;
using kforge::testing::source_dir;
namespace fs = std::filesystem;

namespace {

// Arguments: x [R, C], fc.weight [C, C], fc.bias [C], bn.weight, bn.bias, bn.running_mean,
// bn.running_var [C], bn.num_batches_tracked (int64, a buffer); output y [R, C].
const char* kTask = R"(kforge_task: 1
id: plan_task
source: synth
split: train
seed: 5
dtype: float32
dims: {R: 6, C: 2000}
graph:
  inputs:
    - {name: x, shape: [R, C]}
  nodes:
    - {id: fc, op: linear, in: [x], attrs: {out_features: C}}
    - {id: bn, op: batch_norm, in: [fc]}
    - {id: y, op: relu, in: [bn]}
  outputs: [y]
provenance: {generator: test, seed: 1}
)";

const char* kKernels = R"(
extern "C" __global__ void row_partials(const float* x, float* partial, int R, int C) {}
extern "C" __global__ void finish(const float* partial, float* y, int R, int parts) {}
extern "C" __global__ void affine(const float* x, const float* w, const float* b, float* y,
                                  float alpha, double beta, long long n, unsigned m) {}
extern "C" __global__ void copy_bytes(const void* src, void* dst, size_t bytes) {}
extern "C" __global__ void halves(const __half* x, __half* y, int n) {}
extern "C" __global__ void count(const long long* steps, const float* var, float* y) {}
extern "C" __global__ void write_const(const float* x, const float* y) {}
extern "C" __global__ void by_value(float4 v, float* y) {}
extern "C" __global__ void nothing() {}
)";

}  // namespace

namespace kforge::launch_plan_fixture {

const TaskSpec& task() {
  static const TaskSpec t = parse_task(kTask, "task.yaml");
  return t;
}

const std::vector<KernelSignature>& kernels() {
  static const std::vector<KernelSignature> k = parse_kernel_signatures(kKernels);
  return k;
}

ResolvedPlan resolve(const std::string& yaml, const TaskSpec& t) {
  return resolve_plan(LaunchPlan::parse(yaml, "launch.yaml"), t, kernels());
}

std::string error_of(const std::string& yaml, const TaskSpec& t, const std::vector<KernelSignature>& ks) {
  try {
    resolve_plan(LaunchPlan::parse(yaml, "launch.yaml"), t, ks);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
    return e.what();
  }
  return "no error";
}

std::string one(const std::string& launch) { return "launches:\n  - " + launch; }

::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix) {
  if (text.compare(0, prefix.size(), prefix) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  expected to start with: " << prefix;
}

::testing::AssertionResult HasSubstr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  expected to contain: " << part;
}

}  // namespace kforge::launch_plan_fixture

TEST(LaunchPlan, ResolvesMultiLaunchPlanWithWorkspace) {
  ResolvedPlan p = resolve(R"(workspace:
  - name: partial
    dtype: float32
    size: R * ceil_div(C, 1024)
    zero: true
launches:
  - kernel: row_partials
    grid: [R, ceil_div(C, 1024)]
    block: [256]
    shared_mem: 0
    args: [x, partial, R, C]
  - kernel: finish
    grid: [ceil_div(R, 256)]
    block: [256]
    args: [partial, y, R, ceil_div(C, 1024)]
options:
  use_fast_math: true
  maxrregcount: 64
)");
  ASSERT_EQ(p.workspace.size(), 1u);
  EXPECT_EQ(p.workspace[0].name, "partial");
  EXPECT_EQ(p.workspace[0].dtype, DType::float32);
  EXPECT_EQ(p.workspace[0].elements, 12);
  EXPECT_TRUE(p.workspace[0].zero);
  ASSERT_EQ(p.launches.size(), 2u);
  const ResolvedLaunch& a = p.launches[0];
  EXPECT_EQ(a.kernel, "row_partials");
  EXPECT_EQ(a.where, "launch.yaml:7:5: launches[0]");
  EXPECT_EQ((std::vector<uint32_t>{a.grid[0], a.grid[1], a.grid[2]}), (std::vector<uint32_t>{6, 2, 1}));
  EXPECT_EQ((std::vector<uint32_t>{a.block[0], a.block[1], a.block[2]}), (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(a.shared_mem, 0u);
  ASSERT_EQ(a.args.size(), 4u);
  EXPECT_EQ(a.args[0].kind, ResolvedArg::buffer);
  EXPECT_EQ(a.args[0].ref, (BufferRef{BufferRole::input, 0}));
  EXPECT_EQ(a.args[1].ref, (BufferRef{BufferRole::workspace, 0}));
  EXPECT_EQ(a.args[2].kind, ResolvedArg::i32);
  EXPECT_EQ(a.args[2].i, 6);
  EXPECT_EQ(a.args[3].i, 2000);
  const ResolvedLaunch& b = p.launches[1];
  EXPECT_EQ(b.grid[0], 1u);
  EXPECT_EQ(b.args[1].ref, (BufferRef{BufferRole::output, 0}));
  EXPECT_EQ(b.args[3].i, 2);  // "ceil_div(C" and "1024)" joined back after YAML split them
  EXPECT_TRUE(p.options.use_fast_math);
  EXPECT_EQ(p.options.maxrregcount, 64);
}

TEST(LaunchPlan, Resolves3DGridBlockAndSharedMemory) {
  ResolvedPlan p = resolve(one(R"(kernel: finish
    grid: [2, 3, R]
    block: [8, 8, 4]
    shared_mem: 4 * C + 16
    args: [x, y, R, 1])"));
  const ResolvedLaunch& l = p.launches[0];
  EXPECT_EQ((std::vector<uint32_t>{l.grid[0], l.grid[1], l.grid[2]}), (std::vector<uint32_t>{2, 3, 6}));
  EXPECT_EQ((std::vector<uint32_t>{l.block[0], l.block[1], l.block[2]}), (std::vector<uint32_t>{8, 8, 4}));
  EXPECT_EQ(l.shared_mem, 8016u);
  EXPECT_FALSE(p.options.use_fast_math);
  EXPECT_EQ(p.options.maxrregcount, 0);
}

TEST(LaunchPlan, PassesNumbersToFloatParametersAndExpressionsToIntegers) {
  ResolvedPlan p = resolve(one(R"(kernel: affine
    grid: ceil_div(R*C, 256)
    block: 256
    args: [x, fc.weight, fc.bias, y, 0.125, -1e-5, R*C, C - 1])"));
  const ResolvedLaunch& l = p.launches[0];
  EXPECT_EQ(l.grid[0], 47u);  // a scalar is a list of one
  EXPECT_EQ(l.block[0], 256u);
  ASSERT_EQ(l.args.size(), 8u);
  EXPECT_EQ(l.args[1].ref, (BufferRef{BufferRole::parameter, 1}));
  EXPECT_EQ(l.args[2].ref, (BufferRef{BufferRole::parameter, 2}));
  EXPECT_EQ(l.args[4].kind, ResolvedArg::f32);
  EXPECT_DOUBLE_EQ(l.args[4].f, 0.125);
  EXPECT_EQ(l.args[5].kind, ResolvedArg::f64);
  EXPECT_DOUBLE_EQ(l.args[5].f, -1e-5);
  EXPECT_EQ(l.args[6].kind, ResolvedArg::i64);
  EXPECT_EQ(l.args[6].i, 12000);
  EXPECT_EQ(l.args[7].kind, ResolvedArg::u32);
  EXPECT_EQ(l.args[7].i, 1999);
}

TEST(LaunchPlan, AcceptsIntegersForFloatsAndIntegralNumbersForIntegers) {
  ResolvedPlan p = resolve(one(R"(kernel: affine
    grid: [1]
    block: [1]
    args: [x, fc.weight, fc.bias, y, C, 2, 3.0, 1e3])"));
  const ResolvedLaunch& l = p.launches[0];
  EXPECT_DOUBLE_EQ(l.args[4].f, 2000.0);
  EXPECT_DOUBLE_EQ(l.args[5].f, 2.0);
  EXPECT_EQ(l.args[6].i, 3);
  EXPECT_EQ(l.args[7].i, 1000);
}

TEST(LaunchPlan, ResolvesBuffersByDottedNameAndVoidPointersTakeAnyDtype) {
  ResolvedPlan p = resolve(R"(launches:
  - {kernel: count, grid: [1], block: [32], args: [bn.num_batches_tracked, bn.running_var, y]}
  - {kernel: copy_bytes, grid: [1], block: [32], args: [bn.num_batches_tracked, y, 8]}
)");
  const TaskSpec& t = task();
  ASSERT_EQ(t.arguments.size(), 8u);
  const auto& a = p.launches[0].args;
  EXPECT_EQ(a[0].ref, (BufferRef{BufferRole::parameter, 7}));  // a buffer counts as a parameter
  EXPECT_EQ(t.arguments[7].decl.name, "bn.num_batches_tracked");
  EXPECT_EQ(a[1].ref, (BufferRef{BufferRole::parameter, 6}));
  EXPECT_EQ(t.arguments[6].decl.name, "bn.running_var");
  EXPECT_EQ(p.launches[1].args[2].kind, ResolvedArg::u64);
  EXPECT_EQ(p.launches[1].args[2].i, 8);
}

TEST(LaunchPlan, ResolvesHalfPointersForAFloat16Task) {
  std::string yaml = kTask;
  yaml.replace(yaml.find("dtype: float32"), 14, "dtype: float16");
  TaskSpec half = parse_task(yaml, "task.yaml");
  ResolvedPlan p = resolve(one("{kernel: halves, grid: [R], block: [256], args: [x, y, C]}"), half);
  EXPECT_EQ(p.launches[0].args[1].ref, (BufferRef{BufferRole::output, 0}));
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: finish, grid: [R], block: [256], args: [x, y, R, C]}"), half),
                         "launch.yaml:2:54: launches[0].args[0]: input x is float16 but parameter 'partial' "
                         "(const float*) points to float; a float16 tensor takes a __half* (or void*) parameter"));
}

TEST(LaunchPlan, KernelWithoutParametersTakesNoArgs) {
  ResolvedPlan p = resolve(one("{kernel: nothing, grid: [1], block: [1]}"));
  EXPECT_TRUE(p.launches[0].args.empty());
  EXPECT_TRUE(StartsWith(error_of(one("{kernel: nothing, grid: [1], block: [1], args: [R]}")),
                         "launch.yaml:2:52: launches[0].args: kernel 'nothing' takes 0 arguments (), 1 is given"));
}

TEST(LaunchPlan, ParsesNumberLiteralsAndKeepsEachArgumentsLocation) {
  LaunchPlan p = LaunchPlan::parse(one(R"(kernel: affine
    grid: [1]
    block: [1]
    args:
      - x
      - fc.weight
      - 'fc.bias'
      - y
      - .5
      - -inf
      - min(R,
            C)
      - 7)"),
                                   "launch.yaml");
  const auto& a = p.launches[0].args;
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[0].kind, PlanArg::name_or_expr);
  EXPECT_EQ(a[2].text, "fc.bias");
  EXPECT_EQ(a[4].kind, PlanArg::number);
  EXPECT_DOUBLE_EQ(a[4].value, 0.5);
  EXPECT_EQ(a[5].kind, PlanArg::number);
  EXPECT_TRUE(std::isinf(a[5].value) && a[5].value < 0);
  EXPECT_EQ(a[6].kind, PlanArg::name_or_expr);
  EXPECT_EQ(a[6].where, "launch.yaml:12:9: launches[0].args[6]");
  EXPECT_EQ(a[7].where, "launch.yaml:14:9: launches[0].args[7]");
  ResolvedPlan r = resolve_plan(p, task(), kernels());
  EXPECT_EQ(r.launches[0].args[6].i, 6);  // a block scalar may span lines
}

TEST(LaunchPlan, LoadsAPlanFileAndNamesItByItsFileName) {
  fs::path dir = fs::temp_directory_path() / ("kforge_plan_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "launch.yaml") << "launches:\n  - {kernel: nothing, grid: [0], block: [1]}\n"; }
  LaunchPlan p = LaunchPlan::load_file((dir / "launch.yaml").string());
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].where, "launch.yaml:2:5: launches[0]");
  try {
    LaunchPlan::load_file((dir / "missing.yaml").string());
    ADD_FAILURE() << "a missing file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
  remove_tree(dir);
}

// The example the policy reads in env/launch/KERNEL_FORMAT.md is a valid plan for softmax_rows.
TEST(LaunchPlan, KernelFormatExampleResolvesAgainstSoftmaxRows) {
  std::string doc = read_file(fs::path(source_dir()) / "env" / "launch" / "KERNEL_FORMAT.md");
  size_t start = doc.find("```yaml\n");
  ASSERT_NE(start, std::string::npos);
  start += 8;
  size_t end = doc.find("```", start);
  ASSERT_NE(end, std::string::npos);
  TaskSpec t = load_task(source_dir() + "/datasets/samples/softmax_rows.yaml");
  ResolvedPlan p = resolve_plan(LaunchPlan::parse(doc.substr(start, end - start), "launch.yaml"), t, kernels());
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.workspace[0].elements, 131072 * 8);
  EXPECT_EQ(p.launches[0].grid[1], 8u);
  EXPECT_EQ(p.launches[1].args[3].i, 8);
}

// Every candidate under datasets/samples/candidates/<task>/<name>/ resolves against its task,
// unless its expect.yaml says it is a compile_error: then it may fail, but only with a spec error.
TEST(LaunchPlan, ShippedCandidatesResolveAgainstTheirTasks) {
  fs::path root = fs::path(source_dir()) / "datasets" / "samples" / "candidates";
  if (!fs::exists(root)) GTEST_SKIP() << "no candidates under " << root;
  int checked = 0;
  for (const auto& task_dir : fs::directory_iterator(root)) {
    if (!task_dir.is_directory()) continue;
    fs::path task_file = fs::path(source_dir()) / "datasets" / "samples" / (task_dir.path().filename().string() + ".yaml");
    ASSERT_TRUE(fs::exists(task_file)) << task_dir.path() << " has no task " << task_file;
    TaskSpec t = load_task(task_file.string());
    for (const auto& cand : fs::directory_iterator(task_dir.path())) {
      if (!cand.is_directory() || !fs::exists(cand.path() / "launch.yaml")) continue;
      SCOPED_TRACE(cand.path().string());
      bool compile_error = false;
      if (fs::exists(cand.path() / "expect.yaml")) {
        // Only the verdict line matters here (the rest of expect.yaml is other suites' business).
        std::istringstream expect(read_file(cand.path() / "expect.yaml"));
        for (std::string line; std::getline(expect, line);)
          if (line.rfind("verdict:", 0) == 0) compile_error = line.find("compile_error") != std::string::npos;
      }
      std::string plan_text = read_file(cand.path() / "launch.yaml");
      std::string source = read_file(cand.path() / "kernel.cu");
      if (compile_error) {
        try {
          resolve_plan(LaunchPlan::parse(plan_text, "launch.yaml"), t, parse_kernel_signatures(source));
        } catch (const Error& e) {
          EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
          EXPECT_TRUE(StartsWith(e.what(), "launch.yaml")) << e.what();
        }
      } else {
        EXPECT_NO_THROW({
          try {
            resolve_plan(LaunchPlan::parse(plan_text, "launch.yaml"), t, parse_kernel_signatures(source));
          } catch (const Error& e) {
            ADD_FAILURE() << e.what();
            throw;
          }
        });
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no candidate directories under " << root;
  RecordProperty("candidates_checked", checked);
  std::cout << "checked " << checked << " candidates\n";
}

TEST(LaunchPlan, SaysWhichOfTheTasksDimsItsExpressionsName) {
  auto names = [](const std::string& yaml) { return plan_dim_names(LaunchPlan::parse(yaml, "launch.yaml"), task().dims); };
  EXPECT_EQ(names(one("{kernel: row_partials, grid: [6, 2], block: [256], args: [x, partial, 6, 2000]}")), std::set<std::string>{})
      << "a plan of numbers is written for one shape";
  EXPECT_EQ(names(one("{kernel: row_partials, grid: [6, 2], block: [256], args: [x, y, R, 2000]}")), std::set<std::string>{"R"})
      << "an argument naming a dim";
  EXPECT_EQ(names(one("{kernel: row_partials, grid: [ceil_div(C, 1024)], block: [256], args: [x, y, 6, 2000]}")),
            std::set<std::string>{"C"})
      << "a grid expression";
  EXPECT_EQ(names("workspace:\n  - {name: p, dtype: float32, size: R * 4}\n" +
                  one("{kernel: row_partials, grid: [1], block: [256], args: [x, p, 6, 2000]}")),
            std::set<std::string>{"R"})
      << "a workspace size";
  EXPECT_EQ(names(one("{kernel: affine, grid: [1], block: [1], args: [x, fc.weight, fc.bias, y, 1.5, 2, 3, 4]}")), std::set<std::string>{})
      << "tensor names and numbers name no dim";
}

// An extra shape's empty dimension (issue 30): a grid sized by the task's dims has no block there,
// and that launch is left out (as PyTorch launches nothing over no elements); a workspace sized 0
// gets one element. At the task's own dims a grid of 0 is still the plan's mistake.
TEST(LaunchPlan, AtAnEmptyShapeALaunchWithNoBlockIsLeftOut) {
  const char* plan = R"(workspace:
  - {name: partial, dtype: float32, size: R * 4}
launches:
  - kernel: row_partials
    grid: [ceil_div(R, 2)]
    block: [256]
    args: [x, partial, R, C]
  - kernel: nothing
    grid: [1]
    block: [32]
)";
  ResolvedPlan own = resolve(plan);
  ASSERT_EQ(own.launches.size(), 2u);
  EXPECT_EQ(own.workspace[0].elements, 24);
  TaskSpec empty = task().with_dims({{"R", 0}});
  ResolvedPlan at = resolve(plan, empty);
  ASSERT_EQ(at.launches.size(), 1u) << "the grid of ceil_div(R, 2) = 0 blocks is left out";
  EXPECT_EQ(at.launches[0].kernel, "nothing");
  EXPECT_EQ(at.workspace[0].elements, 1);
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: nothing, grid: [R - 6], block: [32]}")), "every grid dimension is at least 1"));
  EXPECT_TRUE(HasSubstr(error_of(one("{kernel: nothing, grid: [1], block: [R]}"), empty), "every block dimension is at least 1"));
}
