#include "env/judge/harness_nvrtc.h"

#include <nvrtc.h>

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"

namespace kforge {

std::vector<char> compile_harness_cubin(const std::string& source, const std::string& program_name, const std::string& arch,
                                        const std::vector<std::string>& options, const std::string& what) {
  // GetCUBIN needs a real architecture; a compute_XX target would yield PTX only.
  KFORGE_CHECK(arch.rfind("sm_", 0) == 0, runtime, what << ": architecture '" << arch << "' is not a real GPU architecture like sm_90a");
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

HarnessModule::HarnessModule(std::vector<char> cubin, std::string arch, std::string what, std::vector<std::string> functions)
    : cubin_(std::move(cubin)), arch_(std::move(arch)), what_(std::move(what)), names_(std::move(functions)) {}

HarnessModule::~HarnessModule() {
  // Best effort: the driver's error for a module whose context is already gone is of no use here.
  for (auto& [id, l] : loaded_) {
    (void)id;
    if (l.module) cuda_driver().ModuleUnload(l.module);
  }
}

const HarnessModule::Loaded& HarnessModule::in_current_context() {
  const CudaDriver& drv = cuda_driver();
  // The call's name is built only when it failed: this runs before every launch of the module.
  auto check = [&](CUresult r, const std::string& step) {
    if (r != CUDA_SUCCESS) cuda_check(r, what_ + ": " + step);
  };
  CUcontext ctx = nullptr;
  check(drv.CtxGetCurrent(&ctx), "cuCtxGetCurrent");
  KFORGE_CHECK(ctx != nullptr, runtime, what_ << ": no current CUDA context in this thread");
  unsigned long long id = 0;
  check(drv.CtxGetId(ctx, &id), "cuCtxGetId");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(id);
  if (it != loaded_.end()) return it->second;
  Loaded l;
  check(drv.ModuleLoadData(&l.module, cubin_.data()), "cuModuleLoadData (" + arch_ + " CUBIN)");
  try {
    l.functions.resize(names_.size());
    for (size_t i = 0; i < names_.size(); ++i)
      check(drv.ModuleGetFunction(&l.functions[i], l.module, names_[i].c_str()), "cuModuleGetFunction");
    CUdevice dev = 0;
    check(drv.CtxGetDevice(&dev), "cuCtxGetDevice");
    check(drv.DeviceGetAttribute(&l.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
  } catch (...) {
    drv.ModuleUnload(l.module);
    throw;
  }
  return loaded_.emplace(id, std::move(l)).first->second;
}

}  // namespace kforge
