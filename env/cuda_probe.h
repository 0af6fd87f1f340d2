#pragma once
// Whether this machine has a CUDA device, asked of the CUDA runtime alone (no libtorch, and no
// context is created), for callers that only need to know before starting a GPU worker.
#include <string>

namespace kforge {

// True when at least one CUDA device is visible; else false with `why` set (e.g. "no CUDA-capable
// device is detected", "CUDA driver version is insufficient").
bool cuda_device_present(std::string* why = nullptr);

}  // namespace kforge
