#pragma once
// How many CUDA devices this process sees, asked of the CUDA runtime alone (no libtorch, no
// context): the server starts one GPU lane per device.
#include <string>

namespace kforge {

// 0 with `why` set when the runtime reports an error (no driver, no device).
int visible_gpu_count(std::string* why = nullptr);

}  // namespace kforge
