#pragma once
// The split of a `.cu` file (issue 28): load_inline's CUDA source, a CUDA-Agent kernel file, a
// cpp_extension.load source. torch's load_inline compiles its CUDA sources with nvcc after torch's
// headers, whose front end parses them in full (42 s of a 42.5 s build on the H200 host), and nvcc
// runs its whole host chain (preprocessing twice, cudafe++, a host compile) for every changed kernel.
// The split reads the source with the one lexer of CUDA source (env/cuda_source/cuda_lexer.h) and
// writes two files:
//   - a torch-free `.cu` for a cubin (`nvcc -cubin`, or NVRTC where it may: nvrtc_cubin.h): the
//     device code (kernels, __device__ functions and variables, types holding device code) and what
//     both sides share (types, constants, #defines, includes other than torch's);
//   - a `.cpp` for g++ (with the precompiled torch header where the source includes torch's or its
//     own headers): the host code (the functions using torch, torch's includes, what both share),
//     each `K<<<grid, block[, smem[, stream]]>>>(args)` rewritten to
//     `(kforge_launch_K((grid), (block), (smem), (stream)))(args)` (smem and stream 0 when left out,
//     as `<<<>>>` takes them), a launcher type per launched kernel where the kernel was,
//       struct kforge_launch_K { dim3 ..; size_t ..; cudaStream_t ..;  kforge_launch_K(grid, block, smem, stream);
//                                void operator()(<K's params>) const; };
//     and at its end the call operators, which launch K from the device half's cubin
//     (split_launchers.h).
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
  std::string device_cu;              // ok: torch-free device code, for nvcc -cubin
  std::string host_cpp;               // ok: for g++, the launchers' call operators at its end
  bool host_uses_torch = false;       // ok: it includes torch's or the candidate's headers (the precompiled torch header then)
  std::vector<std::string> launched;  // the kernels launched from host code, a launcher each
  int launches = 0;                   // the launch sites rewritten
};

// `path` names the source in #line directives and reasons (load_inline's "cuda.cu"); `cubin_symbol`
// (an identifier) names the device half's cubin in the library (split_launchers.h).
CudaSplit split_cuda_source(const std::string& text, const std::string& path, const std::string& cubin_symbol = "kforge_cubin_0");

}  // namespace kforge
