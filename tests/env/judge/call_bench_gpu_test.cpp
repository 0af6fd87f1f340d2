// CallBench on a GPU: a call prepared ahead on the bench's side stream (prepare_ahead, issue 31's
// overlap of the next call's draw with the current call's compare) is the call prepare() makes in
// place: the candidate sees exactly the draw of its key, its record is as clean or as dirty as the
// candidate made it, and consecutive calls still use different buffer sets. A dropped ahead leaves
// nothing behind. Skipped (KFORGE_SKIPPED) without a CUDA device.
#include "env/judge/call_bench.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "data_synth/reference/reference.h"
#include "tests/skip_without_cuda.h"
#include "tests/support/device_arch.h"

using namespace kforge;
using kforge::testing::device_arch;

namespace {

TaskSpec sample_task(const std::string& name) {
  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  return load_task(std::string(root ? root : ".") + "/datasets/samples/" + name + ".yaml").at_check_dims();
}

// The task's own reference as the candidate (right on every call), on the call's buffers; it keeps
// a copy of the inputs it was given, and with `write_input` adds 1 to its first argument afterwards.
class ReferenceProgram final : public CandidateProgram {
 public:
  explicit ReferenceProgram(const TaskSpec& task) : task_(task) {}
  const std::vector<WireWorkspace>& workspace() const override { return workspace_; }
  void run(const CallView& view, CUstream stream) override {
    c10::cuda::CUDAStreamGuard on(at::cuda::getStreamFromExternal(stream, 0));
    std::vector<at::Tensor> args(view.arguments.begin(), view.arguments.end());
    std::vector<at::Tensor> copy;
    for (const auto& a : args) copy.push_back(a.clone());
    seen.push_back(std::move(copy));
    std::vector<at::Tensor> out = run_reference(task_, args);
    for (size_t o = 0; o < out.size(); ++o) view.outputs[o].copy_(out[o]);
    if (write_input) args[0].add_(1);
  }
  int64_t launches_per_call() const override { return -1; }

  std::vector<std::vector<at::Tensor>> seen;
  bool write_input = false;

 private:
  const TaskSpec& task_;
  std::vector<WireWorkspace> workspace_;
};

struct Rig {
  TaskSpec task;
  DeviceDrawer drawer{device_arch()};
  DeviceChecker checker{device_arch()};
  CallIds ids;
  ReferenceProgram program{task};
  BenchDevice device{at::Device(at::kCUDA, 0), at::cuda::getCurrentCUDAStream(0).stream(), &drawer, &checker};
  CallBench bench{task, program, device, DynamicCheckConfig{}, 7, ids};
  explicit Rig(const std::string& name) : task(sample_task(name)) {}
};

// One call as Judgement::time() makes it: the next call prepared ahead once the reference has run,
// before this call's compare.
void one_call(Rig& r, const CallSpec& spec, const CallSpec* next) {
  r.bench.prepare(spec);
  r.bench.run_candidate();
  r.bench.after_candidate();
  std::vector<at::Tensor> ref = r.bench.run_reference();
  if (next) r.bench.prepare_ahead(*next);
  r.bench.compare(ref);
}

bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a.cpu().view(at::kByte), b.cpu().view(at::kByte));
}

}  // namespace

TEST(CallBenchGpu, CallsPreparedAheadAreTheirDrawsCheckedAsInPlace) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Rig r("gelu_scale_residual");
  r.bench.set_stage_timing(true);
  constexpr int kCalls = 12;
  std::vector<CallSpec> specs;
  for (int i = 0; i < kCalls; ++i) specs.push_back({r.ids.next(), DrawVariant::plain, 0, -1});
  for (int i = 0; i < kCalls; ++i) one_call(r, specs[i], i + 1 < kCalls ? &specs[i + 1] : nullptr);
  r.bench.cancel_ahead();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  const HarnessStageMs stages = r.bench.take_stage_ms();
  EXPECT_GT(stages[static_cast<size_t>(HarnessStage::draw)], 0.0) << "the side stream's draws are timed too";
  EXPECT_GT(stages[static_cast<size_t>(HarnessStage::compare)], 0.0);
  ASSERT_EQ(r.bench.calls(), static_cast<size_t>(kCalls));
  ASSERT_EQ(r.program.seen.size(), static_cast<size_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) {
    const CallRecord rec = r.bench.record(static_cast<size_t>(i));
    EXPECT_TRUE(rec.inputs_changed.empty()) << "call " << i;
    EXPECT_EQ(rec.guards_written, 0) << "call " << i;
    ASSERT_FALSE(rec.outputs.empty());
    for (size_t o = 0; o < rec.outputs.size(); ++o) {
      EXPECT_TRUE(rec.compared[o]) << "call " << i;
      EXPECT_EQ(rec.outputs[o].mismatches, 0u) << "call " << i << " output " << o;
      EXPECT_EQ(rec.outputs[o].unwritten, 0u) << "call " << i << " output " << o;
    }
    if (i > 0) EXPECT_NE(rec.slot, r.bench.record(static_cast<size_t>(i - 1)).slot) << "consecutive calls share a buffer set";
    // What the candidate was given is the draw of its own key, byte for byte.
    const std::vector<at::Tensor> want =
        draw_arguments_on_device(r.task, {r.task.seed, specs[i].draw_trial, 7}, r.drawer, r.device.dev, r.device.stream);
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    for (size_t a = 0; a < want.size(); ++a) EXPECT_TRUE(same_bytes(r.program.seen[i][a], want[a])) << "call " << i << " argument " << a;
  }
}

TEST(CallBenchGpu, ADroppedAheadLeavesTheCallItsOwnDrawAndChecksStillSeeTheCandidate) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Rig r("gelu_scale_residual");
  r.program.write_input = true;
  const CallSpec first{r.ids.next(), DrawVariant::plain, 0, -1}, dropped{r.ids.next(), DrawVariant::plain, 0, -1},
      taken{r.ids.next(), DrawVariant::plain, 0, -1};
  one_call(r, first, &dropped);
  one_call(r, taken, nullptr);  // another spec than the one prepared ahead
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  const std::vector<at::Tensor> want =
      draw_arguments_on_device(r.task, {r.task.seed, taken.draw_trial, 7}, r.drawer, r.device.dev, r.device.stream);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(r.program.seen.size(), 2u);
  for (size_t a = 0; a < want.size(); ++a) EXPECT_TRUE(same_bytes(r.program.seen[1][a], want[a])) << "argument " << a;
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(r.bench.record(i).inputs_changed, std::vector<std::string>{r.task.arguments[0].decl.name})
        << "the candidate wrote its first input in call " << i;
  // And an ahead that is taken: the candidate's write is seen in a call prepared on the side stream.
  const CallSpec third{r.ids.next(), DrawVariant::plain, 0, -1}, fourth{r.ids.next(), DrawVariant::plain, 0, -1};
  one_call(r, third, &fourth);
  one_call(r, fourth, nullptr);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(r.bench.record(3).inputs_changed, std::vector<std::string>{r.task.arguments[0].decl.name});
}
