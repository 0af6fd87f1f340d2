#pragma once
// The CUDA devices this machine has, asked of the CUDA runtime alone (no libtorch, and no context
// is created), for callers that only need to know before starting GPU workers: `kforge demo`, and
// the rollout server, which starts one GPU lane per device.
#include <string>

namespace kforge {

// How many CUDA devices this process sees: 0 with `why` set when the runtime reports an error
// (e.g. "no CUDA-capable device is detected", "CUDA driver version is insufficient") or none.
int visible_gpu_count(std::string* why = nullptr);

// True when at least one CUDA device is visible; else false with `why` set.
bool cuda_device_present(std::string* why = nullptr);

// The NVRTC target of device `device` ("sm_90a" on an H200): Hopper and Blackwell get their
// architecture-specific targets (wgmma and setmaxnreg need sm_90a). Runtime errors are thrown.
std::string device_arch(int device);

}  // namespace kforge
