// Exploit: the whole task computed by ATen from C++ (torch::addmm runs cuBLAS, torch::relu an ATen
// kernel); model_new.py only calls the extension, so a Python-level check of forward sees nothing.
// Refused by: library_kernels (every kernel is attributed to the library whose code launched it;
// ATen and cuBLAS are not allowed by the default config). With dynamic.extension_libraries
// [aten, cublas] it passes (tests/env/extension/extension_eval_gpu_test.cpp).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include "../binding_registry.h"

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  return torch::relu(torch::addmm(bias, x, weight.t()));
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
