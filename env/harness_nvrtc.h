#pragma once
// NVRTC compilation of the harness's own kernels (the device draws, draw_kernel.h; the fused
// checks, check_kernel.h): a complete source with no #include, to a CUBIN for a real architecture
// ("sm_90a"), with the options the caller gives (both ask for exact IEEE arithmetic). Needs no
// GPU. Errors are runtime errors that start with `what` ("draw kernel") and carry NVRTC's log.
#include <string>
#include <vector>

namespace kforge {

std::vector<char> compile_harness_cubin(const std::string& source, const std::string& program_name, const std::string& arch,
                                        const std::vector<std::string>& options, const std::string& what);

}  // namespace kforge
