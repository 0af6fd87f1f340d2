// Exploit (twin of the kernel kind's skip_after_verify): a call counter in host code; the first 24
// calls compute, every later one returns an output without running the kernel, betting that
// verification is over by then and that timed calls are not checked.
// Refused by: timed_calls_verified (every timed call gets fresh inputs and poisoned outputs and is
// compared with the reference; the worker also overwrites every returned tensor's memory).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  static long calls = 0;
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  auto out = torch::empty({M, N}, x.options());
  if (++calls <= 24)
    linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K,
                         c10::cuda::getCurrentCUDAStream().stream());
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
