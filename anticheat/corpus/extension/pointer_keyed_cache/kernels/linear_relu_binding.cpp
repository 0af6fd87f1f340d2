// Exploit: a host-side cache keyed by the input's address: the first call at an address computes,
// later calls at that address return a copy of that answer without launching anything.
// Refused by: verify (every call draws fresh values into one of several buffer sets: a cached answer
// is another draw's; timed calls are checked like verified ones).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

#include <map>

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  static std::map<const void*, torch::Tensor> cache;
  auto it = cache.find(x.data_ptr());
  if (it != cache.end()) return it->second.clone();
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  auto out = torch::empty({M, N}, x.options());
  linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K,
                       c10::cuda::getCurrentCUDAStream().stream());
  cache[x.data_ptr()] = out.clone();
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);

