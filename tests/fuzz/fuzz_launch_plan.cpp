// libFuzzer target for launch plans (env/launch/launch_plan.h): launch.yaml as a policy writes it,
// read and then resolved against a fixed task and kernels. Anything but a kforge::Error escaping
// (a yaml-cpp exception, std::out_of_range, ...) is reported as a crash, as are signals and
// sanitizer reports.
#include <cstdint>
#include <string>

#include "configs/error.h"
#include "env/launch/launch_plan.h"

using namespace kforge;

namespace {

const char* kTask = R"(kforge_task: 1
id: fuzz_plan_task
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
    - {id: y, op: relu, in: [fc]}
  outputs: [y]
provenance: {generator: fuzz, seed: 1}
)";

const char* kKernels = R"(
extern "C" __global__ void row_partials(const float* x, float* partial, int R, int C) {}
extern "C" __global__ void affine(const float* x, const float* w, const float* b, float* y,
                                  float alpha, double beta, long long n, unsigned m) {}
extern "C" __global__ void copy_bytes(const void* src, void* dst, size_t bytes) {}
extern "C" __global__ void relu(const float* x, float* y, int n) {}
extern "C" __global__ void nothing() {}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const TaskSpec task = parse_task(kTask, "task.yaml");
  static const std::vector<KernelSignature> kernels = parse_kernel_signatures(kKernels);
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    resolve_plan(LaunchPlan::parse(text, "launch.yaml"), task, kernels);
  } catch (const Error&) {}
  return 0;
}
