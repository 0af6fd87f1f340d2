#pragma once
// The launchers the split (cuda_split.h) writes for the kernels a host file launches, and how they
// reach the device code (issue 28's "one .cu changed" goal). The device half of a split `.cu` is
// compiled alone, with `nvcc -cubin` (its device passes only: no host preprocessing, cudafe++ or
// host compile); the builder links the cubin into the library as data, with the symbol of each
// launched kernel beside it (cubin_symbols.h), and the host half defines each launcher's call
// operator by launching the kernel from that cubin with cudaLaunchKernel (shim/kforge_cubin.h):
// the same CUDA runtime, stream and configuration as the `<<<>>>` it replaces, its errors in the same
// last-error state (a code may differ: shim/kforge_cubin.h), from
// code inside the candidate's library (so the launch's origin is still the candidate's,
// env/judge/launch_origin.h).
#include <string>
#include <vector>

namespace kforge {

struct LaunchedKernel {
  std::string name;                        // as declared (a plain name: the split launches no other)
  std::vector<std::string> params, names;  // the launcher's parameter declarations (named) and their names
};

// The launcher's type, the same tokens wherever it is declared: a launch configuration whose call
// operator takes the kernel's own parameter types.
std::string launcher_type(const LaunchedKernel& k);

// What the host half ends with when its device half is the cubin named `cubin_symbol` (an
// identifier; the builder's data object defines `cubin_symbol` and `cubin_symbol + "_names"`): the
// cubin's declarations, its library (loaded once, at the first launch), and each launcher's call
// operator.
std::string cubin_launchers(const std::vector<LaunchedKernel>& kernels, const std::string& cubin_symbol);

}  // namespace kforge
