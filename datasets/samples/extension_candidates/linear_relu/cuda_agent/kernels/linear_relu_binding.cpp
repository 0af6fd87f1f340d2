// act = relu(x @ W^T + b) as a CUDA-Agent-format binding: checks, the output allocated through
// torch, the launcher on the current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "inputs must be CUDA tensors");
  TORCH_CHECK(x.dtype() == torch::kFloat32 && weight.dtype() == torch::kFloat32, "float32 only");
  x = x.contiguous();
  weight = weight.contiguous();
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  TORCH_CHECK(weight.size(1) == K && bias.numel() == N, "shapes do not match");
  auto out = torch::empty({M, N}, x.options());
  if (out.numel() == 0) return out;  // an empty batch: no block to launch
  linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K,
                       c10::cuda::getCurrentCUDAStream().stream());
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
