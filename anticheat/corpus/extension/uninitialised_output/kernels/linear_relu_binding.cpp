// Exploit: no kernel at all; the output is torch::empty, in the hope that the caching allocator
// hands back memory that still holds an earlier answer (the reference's, or this candidate's own
// from the previous call on the same draw).
// Refused by: verify (the GPU worker overwrites every tensor a call returned before torch gets its
// memory back, and scrubs the reference's outputs).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  return torch::empty({x.size(0), weight.size(0)}, x.options());
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);

