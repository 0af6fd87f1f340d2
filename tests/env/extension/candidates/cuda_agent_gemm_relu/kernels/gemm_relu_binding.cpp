// The torch-side entry of gemm_relu.cu, registered as CUDA Agent's workdir does (REGISTER_BINDING).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void gemm_relu_launch(const float* x, const float* w, const float* b, float* y, int m, int n, int k,
                                 cudaStream_t stream);

static torch::Tensor gemm_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, int64_t variant) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "tensors must be on the GPU");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1), "x is [M, K], weight [N, K]");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && x.is_contiguous() && weight.is_contiguous(), "contiguous float32");
  TORCH_CHECK(variant == 0, "only variant 0 exists");
  auto y = torch::empty({x.size(0), weight.size(0)}, x.options());
  gemm_relu_launch(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                   static_cast<int>(x.size(0)), static_cast<int>(weight.size(0)), static_cast<int>(x.size(1)),
                   c10::cuda::getCurrentCUDAStream().stream());
  return y;
}

static void register_gemm_relu(pybind11::module& m) {
  m.def("gemm_relu_forward", &gemm_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("variant") = 0);
}

REGISTER_BINDING(gemm_relu, register_gemm_relu);
