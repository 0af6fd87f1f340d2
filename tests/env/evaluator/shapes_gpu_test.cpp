// A task's other shapes on the GPU (issue 30, TaskSpec::extra_dims): a kernel tuned to the task's
// own size is refused at another while an honest general one passes; a plan of numbers is not
// general without a run; a candidate that faults at another shape leaves the worker usable; an
// extension follows its inputs' shapes. The extra trials' cost is printed beside the verify's,
// measured side by side (the same candidate with and without the task's other shapes).
#include <algorithm>
#include <iostream>
#include <vector>

#include <gtest/gtest.h>

#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/candidates.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

EvalConfig shapes_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 10;
  c.worker.request_timeout_s = 60;
  c.verify.extra_shape_trials = 2;
  return c;
}

// softmax_rows (R = 131072 rows of C = 8192) with a batch of one row, odd sizes and sizes off by one.
TaskSpec softmax_with_shapes() {
  TaskSpec t = load_task(task_path("softmax_rows"));
  t.extra_dims = {{{"R", 1}}, {{"C", 4093}, {"R", 333}}, {{"C", 8191}, {"R", 131071}}};
  return t;
}

// One 256-thread block per row, any C: the max, the sum of exponentials, then the outputs, each a
// strided loop over the row and a shared-memory tree.
const char* kGeneralSoftmax = R"(
#define NT 256
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float red[NT];
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = NT / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + s]) : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const float out = red[0];
  __syncthreads();
  return out;
}
extern "C" __global__ void __launch_bounds__(NT) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < C; c += NT) m = fmaxf(m, xr[c]);
  m = block_reduce(m, true);
  float l = 0.0f;
  for (int c = threadIdx.x; c < C; c += NT) l += expf(xr[c] - m);
  const float inv = 1.0f / block_reduce(l, false);
  for (int c = threadIdx.x; c < C; c += NT) yr[c] = expf(xr[c] - m) * inv;
}
)";
const char* kGeneralPlan = "launches:\n  - {kernel: softmax_rows, grid: [R], block: [256], args: [x, y, R, C]}\n";

Candidate inline_candidate(const std::string& name, const std::string& source, const std::string& plan) {
  Candidate c;
  c.dir = "inline:" + name;
  c.source = source;
  c.plan_text = plan;
  return c;
}

EvalOptions verify_only() {
  EvalOptions o;
  o.trials = 3;
  o.time = false;
  o.salt = 77;
  return o;
}

void print_shapes(const std::string& name, const EvalReport& r) {
  std::cout << name << ": verdict " << verdict_name(r.verdict);
  if (r.shapes) {
    std::cout << ", shapes " << r.shapes->status << " in " << r.shapes->wall_ms << " ms"
              << (r.shapes->note.empty() ? "" : " (" + r.shapes->note + ")");
    for (const auto& t : r.shapes->trials) {
      std::cout << "\n   " << (t.layout.empty() ? "" : " " + t.layout);
      for (const auto& [k, v] : t.dims) std::cout << " " << k << "=" << v;
      std::cout << ": " << verdict_name(t.verdict) << " in " << t.wall_ms << " ms"
                << (t.reason.empty() ? "" : " (" + t.reason.substr(0, 160) + ")");
    }
  }
  std::cout << std::endl;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST(ShapesGpu, ATunedKernelIsRefusedAtAnotherShapeWhileAGeneralOnePasses) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(shapes_config());
  const TaskSpec task = softmax_with_shapes();

  EvalReport general = ev.evaluate(task, inline_candidate("general", kGeneralSoftmax, kGeneralPlan), verify_only());
  print_shapes("general", general);
  ASSERT_EQ(general.verdict, Verdict::pass) << format_report(general);
  ASSERT_TRUE(general.shapes);
  EXPECT_EQ(general.shapes->status, "general") << format_report(general);
  ASSERT_EQ(general.shapes->trials.size(), 3u);
  for (const auto& t : general.shapes->trials) EXPECT_EQ(t.verdict, Verdict::pass) << t.reason;

  // The shipped online softmax: right and fast at C = 8192, written for C % 4 == 0 and C <= 8192.
  const std::string online = source_dir() + "/datasets/samples/candidates/softmax_rows/online";
  EvalReport tuned = ev.evaluate(task, Candidate::load(online), verify_only());
  print_shapes("online (C % 4 == 0 only)", tuned);
  ASSERT_EQ(tuned.verdict, Verdict::pass) << "right at the task's own shape";
  ASSERT_TRUE(tuned.shapes);
  EXPECT_EQ(tuned.shapes->status, "not_general");
  ASSERT_EQ(tuned.shapes->trials.size(), 3u);
  EXPECT_EQ(tuned.shapes->trials[0].verdict, Verdict::pass) << "R = 1 keeps C = 8192: " << tuned.shapes->trials[0].reason;
  EXPECT_NE(tuned.shapes->trials[1].verdict, Verdict::pass) << "C = 4093 is no multiple of 4";

  // The same kernel with a plan of numbers: nothing tells it another shape, so it is not run there.
  Candidate fixed = Candidate::load(online);
  fixed.dir = "inline:fixed_plan";
  fixed.plan_text = "launches:\n  - {kernel: softmax_rows, grid: [131072], block: [256], args: [x, y, 131072, 8192]}\n";
  EvalReport fx = ev.evaluate(task, fixed, verify_only());
  print_shapes("online, a plan of numbers", fx);
  ASSERT_EQ(fx.verdict, Verdict::pass);
  ASSERT_TRUE(fx.shapes);
  EXPECT_EQ(fx.shapes->status, "not_general");
  EXPECT_TRUE(fx.shapes->trials.empty());
  EXPECT_NE(fx.shapes->note.find("names none of the task's dims"), std::string::npos) << fx.shapes->note;

  // Whatever a shape trial did to the worker (a misaligned float4 load faults it), the next request is judged.
  EvalReport again = ev.evaluate(task, inline_candidate("general", kGeneralSoftmax, kGeneralPlan), verify_only());
  EXPECT_EQ(again.verdict, Verdict::pass) << format_report(again);
  EXPECT_TRUE(again.shapes && again.shapes->general());

  // A task without other shapes and the option off: no trial runs.
  EvalConfig off = shapes_config();
  off.verify.extra_shape_trials = 0;
  Evaluator ev_off(off);
  EvalReport untested = ev_off.evaluate(task, Candidate::load(online), verify_only());
  ASSERT_TRUE(untested.shapes);
  EXPECT_EQ(untested.shapes->status, "not_tested");
  EXPECT_FALSE(ev_off.evaluate(load_task(task_path("softmax_rows")), Candidate::load(online), verify_only()).shapes.has_value());
}

// An empty dimension (issue 30): at R = 0 the general plan's grid [R] has no block, so its launch is
// left out and nothing runs; the outputs are empty and the trial passes. A kernel of a fixed grid
// that writes its first row whatever R is writes where the empty output has no byte: refused.
TEST(ShapesGpu, AtAnEmptyShapeALaunchOfNoBlockIsLeftOutAndAStrayWriteIsCaught) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(shapes_config());
  TaskSpec task = load_task(task_path("softmax_rows"));
  task.extra_dims = {{{"R", 0}}};
  EvalReport general = ev.evaluate(task, inline_candidate("general", kGeneralSoftmax, kGeneralPlan), verify_only());
  print_shapes("general at R = 0", general);
  ASSERT_EQ(general.verdict, Verdict::pass) << format_report(general);
  ASSERT_TRUE(general.shapes);
  ASSERT_EQ(general.shapes->trials.size(), 1u);
  EXPECT_EQ(general.shapes->trials[0].verdict, Verdict::pass) << general.shapes->trials[0].reason;

  // Rows by a grid-stride loop over a fixed grid of 264 blocks, and a "warm-up" store to row 0
  // before the loop: right whenever R >= 1, a write past an empty output at R = 0.
  std::string stray = kGeneralSoftmax;
  stray.replace(stray.find("  const int row = blockIdx.x;\n  if (row >= R) return;"),
                std::string("  const int row = blockIdx.x;\n  if (row >= R) return;").size(),
                "  if (blockIdx.x == 0 && threadIdx.x == 0) y[0] = 0.0f;\n  for (int row = blockIdx.x; row < R; row += gridDim.x) {");
  stray.replace(stray.rfind("}"), 1, "}\n}");
  const std::string stray_plan = "launches:\n  - {kernel: softmax_rows, grid: [264], block: [256], args: [x, y, R, C]}\n";
  EvalReport r = ev.evaluate(task, inline_candidate("stray", stray, stray_plan), verify_only());
  print_shapes("fixed grid, a store to row 0, at R = 0", r);
  ASSERT_EQ(r.verdict, Verdict::pass) << format_report(r);
  ASSERT_TRUE(r.shapes);
  EXPECT_EQ(r.shapes->status, "not_general");
  ASSERT_EQ(r.shapes->trials.size(), 1u);
  EXPECT_NE(r.shapes->trials[0].verdict, Verdict::pass);
  // The empty output has no byte to write: the store faults (H100: an illegal address) or lands in a guard.
  const std::string& why = r.shapes->trials[0].reason;
  EXPECT_TRUE(why.find("illegal") != std::string::npos || why.find("buffer") != std::string::npos) << why;
}

TEST(ShapesGpu, TheExtraTrialsCostMeasuredSideBySide) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(shapes_config());
  const TaskSpec with = softmax_with_shapes();
  TaskSpec without = with;
  without.extra_dims.clear();
  const Candidate general = inline_candidate("general", kGeneralSoftmax, kGeneralPlan);
  EvalOptions opt;  // a verify as the episode's verify() runs it: 5 trials and timing
  opt.salt = 78;
  ev.evaluate(without, general, opt);  // warm: compile cache, worker
  std::vector<double> base, extra, shapes;
  for (int i = 0; i < 5; ++i) {  // interleaved
    EvalReport a = ev.evaluate(without, general, opt);
    EvalReport b = ev.evaluate(with, general, opt);
    ASSERT_EQ(a.verdict, Verdict::pass);
    ASSERT_EQ(b.verdict, Verdict::pass);
    ASSERT_TRUE(b.shapes && b.shapes->general());
    base.push_back(*a.wall_ms);
    extra.push_back(*b.wall_ms);
    shapes.push_back(b.shapes->wall_ms);
  }
  std::cout << "verify (5 trials + timing) of softmax_rows, median of 5 interleaved: without other shapes " << median(base)
            << " ms, with 3 other shapes x 2 trials " << median(extra) << " ms (ratio " << median(extra) / median(base)
            << "), of which the shape trials " << median(shapes) << " ms" << std::endl;
  EXPECT_GT(median(shapes), 0.0);
}
