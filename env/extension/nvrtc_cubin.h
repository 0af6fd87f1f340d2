#pragma once
// The device half of a split .cu (cuda_split.h) compiled with NVRTC instead of nvcc -cubin, where
// that cannot change what is built (issue 28: one .cu changed). nvcc spends most of a small device
// half's time before its own code: it preprocesses with the host compiler and parses
// cuda_runtime.h's host declarations and the C++ headers of the split's prelude (0.45 s of 0.75 s
// for a trivial kernel on this project's CPU machine); NVRTC's built-in runtime header costs
// 0.04 s. The code generation after it (NVVM, ptxas) is the same toolkit's. The code is not byte for
// byte nvcc's: on the shipped linear_relu sample the PTX has the same floating-point, memory and
// barrier instructions (512 FFMA, 148 global loads, ...), and a few integer address operations differ
// (NVRTC's front end and runtime header are its own).
//
// NVRTC is used only where it reads the half as nvcc would:
//   - the half and every header of the candidate name no `std` (NVRTC has no C++ standard library;
//     cuda::std's would cost more than nvcc saves), no reserved macro (`__X__`, `__CUDA...`, `_X`)
//     but CUDA's keywords and the macros both compilers define alike (__NVCC__, __GNUC__,
//     __CUDACC_RTC__ differ), and none of the driver API's names (CU..., cuX...: NVRTC cannot read
//     cuda.h, which load_inline's source includes, and kforge's stand-in is empty) or CUDART_...;
//   - every flag has its NVRTC spelling (nvrtc_options);
//   - the prelude's C headers are kforge's stand-ins (env/extension/nvrtc_shim/): glibc's and GCC's
//     values on x86-64 Linux, and nothing else: a name they do not define fails the compile;
//   - no -default-device: a function without __device__ is host code to NVRTC and fails it.
// Any NVRTC failure runs nvcc in its place (kforge-nvrtc-cubin, nvrtc_cubin_main.cpp), so what
// NVRTC refuses costs only its own attempt, and nvcc's errors are the ones reported.
#include <optional>
#include <string>
#include <vector>

namespace kforge {

// The first line kforge-nvrtc-cubin writes to its log when nvcc built the half in NVRTC's place.
inline constexpr const char* kNvrtcFallbackMarker = "kforge-nvrtc-cubin: NVRTC did not compile it; nvcc builds it";

// Why NVRTC may read `text` (a device half, or a candidate header it includes) differently from
// nvcc: "uses std (line 3)", or "" when it may not.
std::string nvrtc_unsuitable(const std::string& text);

// NVRTC's options for nvcc's flags of a device half (-D, -U, -std, and extra_cuda_cflags after
// extension_flags' allow-list), for `arch`: std::nullopt, with the flag in `why`, when one has no
// NVRTC spelling that builds the same code (host-compiler flags nvcc handles its own way).
std::optional<std::vector<std::string>> nvrtc_options(const std::string& arch, const std::vector<std::string>& nvcc_flags,
                                                      std::string* why);

}  // namespace kforge
