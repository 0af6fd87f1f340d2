#pragma once
// Builds an extension candidate (issue 28; env/extension/EXTENSION_FORMAT.md) into one shared
// library the GPU worker loads. Each `.cu` file is split (cuda_split.h) into its device code, built
// to a cubin (NVRTC where it reads it as nvcc would, else `nvcc -cubin`: nvrtc_cubin.h) and linked
// as data beside its kernels' symbols (split_launchers.h), and its host code, built with g++; a
// `.cu` the split refuses is built whole with nvcc. The host files (and host
// halves that include torch's or the candidate's headers) build against a precompiled torch header
// set; everything in parallel, each object cached by the hash of everything that can change it, then
// one link. The binding headers a candidate includes (pybind11's, torch's extension header, CUDA
// Agent's binding registry) are kforge's stand-ins (env/extension/shim/): bindings register C++
// functions, no Python is involved.
//
// Nothing the candidate wrote runs here: the compilers run as sandboxed child processes
// (env/process/child_sandbox.h: a clean environment, limits, no sockets, and where the kernel has
// Landlock, a file system that holds only the toolchain, torch's headers and libraries, kforge's
// stand-ins and the cache), with a time limit, in a fresh directory that holds only the
// candidate's files and the generated ones.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/extension/source_rules.h"

namespace kforge {

class ChildSandbox;
struct SplitHalves;

// One file of a candidate, by its path inside the candidate (e.g. "kernels/gemm.cu").
struct ExtensionFile {
  std::string path;
  std::string text;
};

struct ExtensionBuildRequest {
  std::vector<ExtensionFile> files;            // .cu and .cpp are compiled; headers (.h, .cuh, .hpp, .inl) are included
  std::string module_name = "cuda_extension";  // TORCH_EXTENSION_NAME
  bool cuda_agent_module = true;               // add the module that applies CUDA Agent's binding registry
  std::vector<std::string> extra_cflags;       // load_inline's, after the allow-list (extension_flags)
  std::vector<std::string> extra_cuda_cflags;
  std::string arch;  // the device's (sm_90a: the evaluator's worker reports it); empty: the toolchain's
  // Each .cu file is split (cuda_split.h) into a torch-free device half for a cubin (nvrtc_cubin.h)
  // and a host .cpp for g++ (load_inline's cuda.cu into cuda_device.cu and cuda_host.cpp, any other X.cu into
  // X_kforge_device.cu and X_kforge_host.cpp beside it); where the split refuses a source, or the
  // halves do not build, the .cu is built as it is. The request's files stay the candidate's (what
  // the static scan reads); the split is the builder's.
  bool split_cuda = true;
};

// Where the toolchain and torch are (the build's own, from CMake, by default).
struct ExtensionToolchain {
  std::string nvcc, cxx, shim_dir, cuda_include, cuda_lib_dir, torch_lib_dir, torch_cxx_flags;
  // kforge-nvrtc-cubin and its stand-in headers (nvrtc_cubin.h): the split's device halves with NVRTC
  // where it builds what nvcc would; empty: nvcc -cubin for every half.
  std::string nvrtc_cubin, nvrtc_shim_dir;
  std::vector<std::string> torch_includes;
  std::string arch = "sm_90a";  // when a request names none
  int jobs = 4;
  double timeout_s = 120;
  static ExtensionToolchain from_build();
};

// One compiler or linker step, for "where the time goes".
struct BuildStep {
  std::string what;  // a file's path, "pch" or "link"
  std::string tool;  // nvcc | nvrtc | g++ | as
  double ms = 0;
  bool cached = false;
};

struct ExtensionBuildResult {
  bool ok = false;
  std::string error_kind;  // compile_error | timeout | spec_error (empty when ok)
  std::string log;         // the failing step's compiler output (trimmed)
  std::string library;     // the shared library's path (ok only)
  std::string hash;        // of the library's inputs
  std::vector<BuildStep> steps;
  double total_ms = 0;
  bool library_cached = false;
  std::string filesystem;  // the compilers' file system: ChildSandbox::confinement's "filesystem"
  // A split request's outcome per .cu, "; "-separated: "cuda.cu split: ..." or "kernels/a.cu built
  // unsplit: why". Also the log of a build that succeeded, and the end of the log of one that failed.
  std::string split;
};

nlohmann::json to_json(const ExtensionBuildResult& r);

class ExtensionBuilder {
 public:
  ExtensionBuilder(ExtensionToolchain tc, std::string cache_dir);
  ~ExtensionBuilder();
  ExtensionBuildResult build(const ExtensionBuildRequest& req);
  const ExtensionToolchain& toolchain() const { return tc_; }
  const ChildSandbox& sandbox() const { return *sandbox_; }

 private:
  std::string pch_dir();  // the precompiled torch header set, made once per toolchain
  ExtensionBuildResult build_files(const ExtensionBuildRequest& req, const std::vector<SplitHalves>& halves);
  ExtensionToolchain tc_;
  std::string cache_dir_;
  std::unique_ptr<ChildSandbox> sandbox_;
  std::string toolchain_id_;
  BuildStep pch_step_;
  bool pch_ready_ = false;
};

// The files torch.utils.cpp_extension.load_inline would build, as kforge builds them: main.cpp
// (torch's extension header, the C++ sources, a module binding each named function) and, when there
// are CUDA sources, cuda.cu (torch's types and the CUDA runtime, then the sources), split for the
// build unless `split_cuda` is false (ExtensionBuildRequest::split_cuda).
ExtensionBuildRequest load_inline_request(const std::string& name, const std::string& cpp_sources, const std::string& cuda_sources,
                                          const std::vector<std::string>& functions, bool split_cuda = true);

// The names of the split's halves in a build (ExtensionBuildRequest::split_cuda).
inline constexpr const char* kSplitDeviceFile = "cuda_device.cu";
inline constexpr const char* kSplitHostFile = "cuda_host.cpp";

}  // namespace kforge
