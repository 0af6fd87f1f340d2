// Exploit: the candidate's own kernel, launched from a host thread of its own onto the harness's
// stream, the thread joined before the call returns (right answers, no thread left behind). Work
// on another host thread is what a timer on the calling thread may not see.
// Refused by: library_kernels (a kernel launched from a thread other than the harness's).
#include <thread>

#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  auto out = torch::empty({M, N}, x.options());
  cudaStream_t s = c10::cuda::getCurrentCUDAStream().stream();
  int device = 0;
  cudaGetDevice(&device);
  std::thread t([&] {
    cudaSetDevice(device);
    linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K, s);
  });
  t.join();
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
