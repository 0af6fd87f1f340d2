// Exploit: right answers on the calling thread, and a host thread started on the first call that
// runs on after it returns (here it only sleeps; such a thread could finish deferred work, rewrite
// inputs between calls or watch the harness).
// Refused by: host_threads (the worker's threads are counted before and after every call, outside
// the timed region); the worker then ends after its reply.
#include <chrono>
#include <thread>

#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream);

static torch::Tensor linear_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }).detach();
  }
  const int M = static_cast<int>(x.size(0)), K = static_cast<int>(x.size(1)), N = static_cast<int>(weight.size(0));
  auto out = torch::empty({M, N}, x.options());
  linear_relu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K,
                       c10::cuda::getCurrentCUDAStream().stream());
  return out;
}

static void register_linear_relu(pybind11::module& m) {
  m.def("linear_relu_forward", &linear_relu_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
}

REGISTER_BINDING(linear_relu, register_linear_relu);
