// The split of a .cu file (env/extension/cuda_split.h, issue 28): the device code to a torch-free .cu
// (for nvcc -cubin), the host code to a .cpp with each launch a call of the kernel's launcher (same
// grid, block, shared memory and stream), which launches it from the cubin, and the forms the split
// cannot read safely refused with their reason (the builder then builds the source as it is). The
// splits are built with the real nvcc and g++ in extension_build_test.cpp.
#include "env/extension/cuda_split.h"

#include <gtest/gtest.h>

#include <string>

using namespace kforge;

namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// load_inline's cuda.cu: torch's types and the CUDA runtime, then the candidate's CUDA sources.
std::string cuda_cu(const std::string& sources) {
  return "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + sources;
}

const char* kScale = R"(#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#define BLOCK 256
struct Params { float s; long long n; };
constexpr int kVec = 1;
__device__ __forceinline__ float twice(float v) { return 2.f * v; }
__global__ void scale(const float* __restrict__ x, float* y, Params p) {
  extern __shared__ float tile[];
  long long i = blockIdx.x * (long long)BLOCK + threadIdx.x;
  if (i < p.n) y[i] = twice(x[i]) * p.s;
}
__global__ void fill(float* y, int) {}
torch::Tensor scale_all(torch::Tensor x, double s) {
  auto y = torch::empty_like(x);
  Params p{static_cast<float>(s), x.numel()};
  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  scale<<<(x.numel() + BLOCK - 1) / BLOCK, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), p);
  scale<<<dim3(1, 2), dim3(BLOCK), BLOCK * sizeof(float)>>>(x.data_ptr<float>(), y.data_ptr<float>(), p);
  scale<<<std::max<long long>(1, x.numel() / BLOCK), BLOCK, 0, stream>>>(
      x.data_ptr<float>(),  // the input
      y.data_ptr<float>(), p);
  fill<<<1, 32, 0, stream>>>(y.data_ptr<float>(), 0);
  return y;
}
)";

}  // namespace

TEST(CudaSplit, DeviceCodeGoesToATorchFreeCuAndLaunchesBecomeLauncherCalls) {
  const CudaSplit s = split_cuda_source(cuda_cu(kScale), "cuda.cu");
  ASSERT_TRUE(s.ok) << s.why;
  EXPECT_EQ(s.launches, 4);
  ASSERT_EQ(s.launched.size(), 2u);
  EXPECT_EQ(s.launched[0], "fill");
  EXPECT_EQ(s.launched[1], "scale");
  // The device half: no torch, the kernels, the device function, what both share; no launcher (the
  // host half launches from the device half's cubin).
  EXPECT_FALSE(has(s.device_cu, "torch/")) << s.device_cu;
  EXPECT_FALSE(has(s.device_cu, "torch::")) << s.device_cu;
  EXPECT_FALSE(has(s.device_cu, "c10")) << s.device_cu;
  EXPECT_TRUE(has(s.device_cu, "__global__ void scale(")) << s.device_cu;
  EXPECT_TRUE(has(s.device_cu, "__device__ __forceinline__ float twice")) << s.device_cu;
  EXPECT_TRUE(has(s.device_cu, "#define BLOCK 256")) << s.device_cu;
  EXPECT_TRUE(has(s.device_cu, "struct Params")) << s.device_cu;
  EXPECT_TRUE(has(s.device_cu, "#line 7 \"cuda.cu\"")) << s.device_cu;  // errors name the source's lines
  EXPECT_FALSE(has(s.device_cu, "kforge_launch")) << s.device_cu;
  EXPECT_FALSE(has(s.device_cu, "<<<")) << s.device_cu;
  EXPECT_FALSE(has(s.device_cu, "scale_all")) << s.device_cu;
  EXPECT_TRUE(s.host_uses_torch);
  // A launcher per launched kernel: a launch configuration whose call operator launches the kernel
  // from the cubin, with the kernel's own parameters (an unnamed one named for it).
  const std::string scale_type =
      "struct kforge_launch_scale {\n  dim3 kforge_grid_, kforge_block_;\n  size_t kforge_smem_;\n  cudaStream_t kforge_stream_;\n"
      "  kforge_launch_scale(dim3 grid, dim3 block, size_t smem, cudaStream_t stream)\n"
      "      : kforge_grid_(grid), kforge_block_(block), kforge_smem_(smem), kforge_stream_(stream) {}\n"
      "  void operator()(const float * __restrict__ x, float * y, Params p) const;\n};\n";
  EXPECT_TRUE(has(s.host_cpp,
                  "void kforge_launch_scale::operator()(const float * __restrict__ x, float * y, Params p) const {\n"
                  "  static const cudaKernel_t kernel = kforge_cubin::kernel(kforge_cubin_0_library(), kforge_cubin_0_names, \"scale\");\n"
                  "  void* args[] = {(void*)&x, (void*)&y, (void*)&p};\n"
                  "  kforge_cubin::launch(kernel, kforge_grid_, kforge_block_, args, kforge_smem_, kforge_stream_);\n}"))
      << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "void kforge_launch_fill::operator()(float * y, int kforge_p1) const {\n")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "  void* args[] = {(void*)&y, (void*)&kforge_p1};\n")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp,
                  "#include <kforge_cubin.h>\nextern \"C\" __attribute__((visibility(\"hidden\"))) const unsigned char kforge_cubin_0[];"))
      << s.host_cpp;

  // The host half: torch's includes, the host function, the shared declarations, no device code.
  EXPECT_TRUE(has(s.host_cpp, "#include <c10/cuda/CUDAStream.h>")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "#define BLOCK 256")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "struct Params")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "constexpr int kVec = 1;")) << s.host_cpp;
  EXPECT_FALSE(has(s.host_cpp, "__global__")) << s.host_cpp;
  EXPECT_FALSE(has(s.host_cpp, "twice")) << s.host_cpp;
  EXPECT_FALSE(has(s.host_cpp, "<<<")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, scale_type)) << s.host_cpp;  // the same type, token for token
  // Each launch keeps its grid, block, shared memory and stream (0 and 0 when <<<>>> left them out),
  // evaluated before its arguments, which are as written.
  EXPECT_TRUE(has(s.host_cpp,
                  "(kforge_launch_scale(((x.numel() + BLOCK - 1) / BLOCK), (BLOCK), 0, 0))(x.data_ptr<float>(), y.data_ptr<float>(), p);"))
      << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "(kforge_launch_scale((dim3(1, 2)), (dim3(BLOCK)), (BLOCK * sizeof(float)), 0))(x.data_ptr<float>(), "))
      << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp,
                  "(kforge_launch_scale((std::max<long long>(1, x.numel() / BLOCK)), (BLOCK), (0), (stream)))(\n"
                  "      x.data_ptr<float>(),  // the input\n      y.data_ptr<float>(), p);"))
      << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "(kforge_launch_fill((1), (32), (0), (stream)))(y.data_ptr<float>(), 0);")) << s.host_cpp;
}

TEST(CudaSplit, WhatTheSplitCannotReadSafelyIsRefusedWithItsReason) {
  auto refused = [](const std::string& source, const std::string& needle) {
    const CudaSplit s = split_cuda_source(cuda_cu(source), "cuda.cu");
    EXPECT_FALSE(s.ok) << source;
    EXPECT_TRUE(has(s.why, needle)) << source << "\n -> " << s.why;
    EXPECT_TRUE(s.why.rfind("cuda.cu:", 0) == 0) << s.why;
  };
  const std::string host_head = "torch::Tensor f(torch::Tensor x) {\n";
  const std::string host_tail = "  return x;\n}\n";
  // A template kernel launched with template arguments (AT_DISPATCH's form), or deduced.
  refused("template <typename T> __global__ void k(T* p) {}\n" + host_head + "  k<float><<<1, 1>>>(x.data_ptr<float>());\n" + host_tail,
          "template arguments");
  refused("template <typename T> __global__ void k(T* p) {}\n" + host_head + "  k<<<1, 1>>>(x.data_ptr<float>());\n" + host_tail,
          "template kernel 'k'");
  refused("template <typename T> __global__ void k(T* p) {}\n" + host_head +
              "  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"k\", ([&] { k<scalar_t><<<1, 1>>>(x.data_ptr<scalar_t>()); }));\n" +
              host_tail,
          "template arguments");
  // Macros that make kernels or launches.
  refused("#define KERNEL(n) __global__ void n(float* p) {}\nKERNEL(a)\n", "a macro holds device code");
  refused("__global__ void k() {}\n#define LAUNCH k<<<1, 1>>>()\n", "a macro holds a kernel launch");
  // Device lambdas in host code.
  refused("__global__ void k() {}\n" + host_head + "  auto f = [] __device__ (float v) { return v; };\n" + host_tail, "device lambda");
  // Host code naming a device symbol other than in a launch.
  refused("__constant__ float c[4];\n" + host_head + "  cudaMemcpyToSymbol(c, x.data_ptr<float>(), 16);\n" + host_tail,
          "device symbol 'c'");
  refused(
      "__global__ void k() {}\n" + host_head + "  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n" + host_tail,
      "device symbol 'k'");
  // torch's types in device code; device code naming a host function.
  refused("__global__ void k(torch::PackedTensorAccessor32<float, 2> a) {}\n", "device code uses torch's");
  refused("int host_only(int v) { return v; }\n__device__ int g(int v) { return host_only(v); }\n", "'host_only', which the split");
  // Namespaces, conditional compilation around declarations, launching what is not a kernel here.
  refused("namespace {\n__global__ void k() {}\n}\n", "namespace");
  refused("#ifdef FAST\n__global__ void k() {}\n#endif\n", "conditional compilation");
  refused("#ifndef C10_WARP_SIZE\n#define C10_WARP_SIZE 32\n#endif\n", "conditional compilation on 'C10_WARP_SIZE'");
  refused("__global__ void k(float* p) {\n#if defined(USE_ROCM)\n  p[0] = 1;\n#endif\n}\n", "conditional compilation on 'USE_ROCM'");
  refused(host_head + "  other<<<1, 1>>>();\n" + host_tail, "not a kernel of this source");
  refused("__host__ __device__ float h(float v) { return v; }\n", "not inline");
  refused("__global__ void k(float* p, int n = 4) {}\n", "default argument");
  // Malformed text is a refusal (the compiler then reports it on cuda.cu as written), never a misread.
  refused("void f( { ) }\n", "braces opened inside parentheses");
  refused("int x = 1 );\n", "an unmatched ')'");
  refused("__global__ void k() {}\n" + host_head + "  k<<<1, 1>>>(;\n" + host_tail, "");
  refused("/* never closed\n__global__ void k() {}\n", "an unterminated comment");
  // What is fine: conditional directives around no declaration, __host__ __device__ inline helpers.
  const CudaSplit ok = split_cuda_source(
      cuda_cu("#ifndef TILE\n#define TILE 32\n#endif\n__host__ __device__ inline int cdiv(int a, int b) { return (a + b - 1) / b; }\n"
              "__global__ void k(float* p) {}\n" +
              host_head + "  k<<<cdiv(x.numel(), TILE), TILE>>>(x.data_ptr<float>());\n" + host_tail),
      "cuda.cu");
  ASSERT_TRUE(ok.ok) << ok.why;
  EXPECT_TRUE(has(ok.device_cu, "inline int cdiv")) << ok.device_cu;
  EXPECT_TRUE(has(ok.host_cpp, "inline int cdiv")) << ok.host_cpp;
  EXPECT_TRUE(has(ok.host_cpp, "(kforge_launch_k((cdiv(x.numel(), TILE)), (TILE), 0, 0))(x.data_ptr<float>());")) << ok.host_cpp;
}

// A CUDA-Agent kernel file: raw kernels and an extern "C" launcher, no torch. Its host half needs no
// precompiled torch header (a quoted include would: the candidate's header may include torch's), and
// its launchers name the cubin the builder gives it.
TEST(CudaSplit, ACudaAgentKernelFileSplitsWithoutTorch) {
  const std::string src =
      "#include <cuda_runtime.h>\n__global__ void relu(const float* x, float* y, long n) {\n"
      "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n"
      "__global__ void nothing() {}\n"
      "extern \"C\" void relu_launcher(const float* x, float* y, long n, cudaStream_t s) {\n"
      "  relu<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);\n  nothing<<<1, 1, 0, s>>>();\n}\n";
  const CudaSplit s = split_cuda_source(src, "kernels/relu.cu", "kforge_cubin_3");
  ASSERT_TRUE(s.ok) << s.why;
  EXPECT_FALSE(s.host_uses_torch);
  EXPECT_EQ(s.launches, 2);
  EXPECT_TRUE(has(s.host_cpp, "extern \"C\" void relu_launcher(")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "(kforge_launch_relu(((n + 255) / 256), (256), (0), (s)))(x, y, n);")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "kforge_cubin::kernel(kforge_cubin_3_library(), kforge_cubin_3_names, \"relu\")")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "void kforge_launch_nothing::operator()() const {\n")) << s.host_cpp;
  EXPECT_TRUE(has(s.host_cpp, "  void** args = nullptr;\n")) << s.host_cpp;
  EXPECT_TRUE(has(s.device_cu, "#line 2 \"kernels/relu.cu\"")) << s.device_cu;
  EXPECT_FALSE(has(s.device_cu, "relu_launcher")) << s.device_cu;
  EXPECT_TRUE(split_cuda_source("#include \"common.cuh\"\n" + src, "kernels/relu.cu").host_uses_torch);
}
