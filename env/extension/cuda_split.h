#pragma once
// The split of a load_inline CUDA source (issue 28): torch's load_inline compiles its CUDA sources
// with nvcc after torch's headers, whose front end parses them in full (42 s of a 42.5 s build on
// the H200 host). The split reads the source with the one lexer of CUDA source
// (env/cuda_source/cuda_lexer.h) and writes two files:
//   - a torch-free `.cu` for nvcc: the device code (kernels, __device__ functions and variables,
//     types holding device code), what both sides share (types, constants, #defines, includes other
//     than torch's), and one generated launcher per launched kernel: a type holding a launch
//     configuration whose call operator launches the kernel with it,
//       struct kforge_launch_K { dim3 ..; size_t ..; cudaStream_t ..;  kforge_launch_K(grid, block, smem, stream);
//                                void operator()(<K's params>) const; };
//       void kforge_launch_K::operator()(<K's params>) const { K<<<grid, block, smem, stream>>>(<K's params>); }
//   - a `.cpp` for g++ with the precompiled torch header: the host code (the functions using torch,
//     torch's includes, what both share), each `K<<<grid, block[, smem[, stream]]>>>(args)` rewritten
//     to `(kforge_launch_K((grid), (block), (smem), (stream)))(args)` (smem and stream 0 when left out,
//     as `<<<>>>` takes them), the launchers' types where the kernels were.
// The call operator has the kernel's own parameter types, so the call converts the arguments exactly
// as the launch did, and the configuration is evaluated before the arguments (C++17 sequences a
// call's callee first), as `<<<>>>` does (nvcc pushes it, then evaluates the arguments): the same
// kernel, on the same stream, with the same configuration.
//
// Anything the split cannot classify safely is refused with the reason, and the source is built as
// it is (today's path): conditional compilation around declarations, namespaces and extern blocks,
// macros that hold device code or a launch, launches of template kernels (or with template
// arguments, or through anything but the kernel's plain name), host code naming a device symbol
// other than in a launch (cudaMemcpyToSymbol, cudaFuncSetAttribute, a kernel's address), device
// code naming a host declaration, device lambdas, device code using torch's types (at::Half,
// PackedTensorAccessor), __host__ __device__ functions that are not inline, kernel parameters with
// defaults or of array or function type.
#include <string>
#include <vector>

namespace kforge {

struct CudaSplit {
  bool ok = false;
  std::string why;                    // not ok: why the source is built unsplit ("cuda.cu:12: ...")
  std::string device_cu;              // ok: torch-free, for nvcc
  std::string host_cpp;               // ok: for g++ with the precompiled torch header
  std::vector<std::string> launched;  // the kernels launched from host code, a launcher each
  int launches = 0;                   // the launch sites rewritten
};

// `path` names the source in #line directives and reasons (load_inline's "cuda.cu").
CudaSplit split_cuda_source(const std::string& text, const std::string& path);

}  // namespace kforge
