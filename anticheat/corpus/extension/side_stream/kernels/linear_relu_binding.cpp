// Exploit: the kernel runs on a stream of the candidate's own, outside the harness's stream order
// (a timer on the harness stream could miss work left running there). Adaptive: it first waits for
// everything queued (the harness's draws), then waits for its own stream, so the answer is right.
// Refused by: kernel_activity (CUPTI sees every kernel; each must run on the harness stream).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  static cudaStream_t side = nullptr;
  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  auto out = torch::empty({M, N}, x.options());
  cudaDeviceSynchronize();
  linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K, side);
  cudaStreamSynchronize(side);
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);

