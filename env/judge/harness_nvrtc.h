#pragma once
// NVRTC compilation of the harness's own kernels (the device draws, draw_kernel.h; the fused
// checks, check_kernel.h): a complete source with no #include, to a CUBIN for a real architecture
// ("sm_90a"), with the options the caller gives (both ask for exact IEEE arithmetic). Needs no
// GPU. Errors are runtime errors that start with `what` ("draw kernel") and carry NVRTC's log.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

namespace kforge {

std::vector<char> compile_harness_cubin(const std::string& source, const std::string& program_name, const std::string& arch,
                                        const std::vector<std::string>& options, const std::string& what);

// A harness CUBIN loaded into each CUDA context that uses it, on its first use there, with its
// functions looked up once per context (through the driver API, cuda_driver.h). Contexts are keyed
// by cuCtxGetId, unique for the process's lifetime: a context destroyed and re-created at the same
// address must not reuse a module that died with the old one. Thread-safe. CUDA failures are
// runtime errors (cuda_check.h) whose call starts with `what` ("draw kernel: cuModuleLoadData").
class HarnessModule {
 public:
  struct Loaded {
    CUmodule module = nullptr;
    std::vector<CUfunction> functions;  // in the order of the names given
    int sm_count = 0;
  };
  HarnessModule(std::vector<char> cubin, std::string arch, std::string what, std::vector<std::string> functions);
  ~HarnessModule();  // unloads, best effort: a module whose context is gone went with it
  HarnessModule(const HarnessModule&) = delete;
  HarnessModule& operator=(const HarnessModule&) = delete;

  // The module in the calling thread's current context (loaded there now if it is not yet).
  const Loaded& in_current_context();
  // "draw kernel": what the errors of this module start with.
  const std::string& what() const { return what_; }

  const std::string& arch() const { return arch_; }
  size_t cubin_bytes() const { return cubin_.size(); }

 private:
  std::vector<char> cubin_;
  std::string arch_, what_;
  std::vector<std::string> names_;
  std::mutex mu_;
  std::map<unsigned long long, Loaded> loaded_;  // by cuCtxGetId
};

}  // namespace kforge
