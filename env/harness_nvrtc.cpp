#include "env/harness_nvrtc.h"

#include <nvrtc.h>

#include "configs/error.h"

namespace kforge {

std::vector<char> compile_harness_cubin(const std::string& source, const std::string& program_name, const std::string& arch,
                                        const std::vector<std::string>& options, const std::string& what) {
  // GetCUBIN needs a real architecture; a compute_XX target would yield PTX only.
  KFORGE_CHECK(arch.rfind("sm_", 0) == 0, runtime,
               what << ": architecture '" << arch << "' is not a real GPU architecture like sm_90a");
  auto check = [&](nvrtcResult r, const char* step) {
    KFORGE_CHECK(r == NVRTC_SUCCESS, runtime, what << ": " << step << " failed: " << nvrtcGetErrorString(r));
  };
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), program_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::vector<std::string> opts = {"--gpu-architecture=" + arch};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  nvrtcResult compiled = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::string log;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, &log[0]);
    log.resize(log_size - 1);
  }
  if (compiled != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    KFORGE_FAIL(runtime, what << ": NVRTC could not compile for " << arch << ": " << nvrtcGetErrorString(compiled) << "\n" << log);
  }
  std::vector<char> cubin;
  size_t size = 0;
  nvrtcResult r = nvrtcGetCUBINSize(prog, &size);
  if (r == NVRTC_SUCCESS) {
    cubin.resize(size);
    r = nvrtcGetCUBIN(prog, cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  check(r, "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace kforge
