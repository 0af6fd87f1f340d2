// NVRTC for a split .cu's device half (nvrtc_cubin.h).
#include "env/extension/nvrtc_cubin.h"

#include <cctype>
#include <set>

#include "env/cuda_source/cuda_lexer.h"

namespace kforge {

namespace {

// Identifiers of the form __X__ that NVRTC and nvcc's device pass read alike: CUDA's keywords and
// the macros both define, or that the build passes to both. Any other (a compiler's own macro, such
// as __NVCC__, __GNUC__, __CUDACC_RTC__ or __x86_64__) may differ between the two.
bool same_in_both(const std::string& id) {
  static const std::set<std::string> same = {"__global__",
                                             "__device__",
                                             "__host__",
                                             "__shared__",
                                             "__constant__",
                                             "__managed__",
                                             "__grid_constant__",
                                             "__restrict__",
                                             "__forceinline__",
                                             "__noinline__",
                                             "__inline__",
                                             "__launch_bounds__",
                                             "__align__",
                                             "__CUDA_ARCH__",
                                             "__CUDACC__",
                                             "__func__",
                                             "__LINE__",
                                             "__FILE__",
                                             "__CUDA_NO_HALF_OPERATORS__",
                                             "__CUDA_NO_HALF_CONVERSIONS__",
                                             "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                                             "__CUDA_NO_HALF2_OPERATORS__"};
  return same.count(id) > 0;
}

// A name whose meaning may differ between the two: std; a compiler's or the C library's reserved
// macro; the driver API's names (cuda.h, which NVRTC cannot read and kforge's stand-in leaves empty)
// and CUDART_VERSION's kin (NVRTC's runtime header is its own).
bool may_differ(const std::string& id) {
  auto starts = [&](const char* p) { return id.rfind(p, 0) == 0; };
  if (id == "std") return true;
  if (id.size() > 4 && starts("__") && id.compare(id.size() - 2, 2, "__") == 0) return !same_in_both(id);
  if (starts("__CUDA")) return !same_in_both(id);
  if (id.size() > 1 && id[0] == '_' && std::isupper(static_cast<unsigned char>(id[1]))) return true;
  if (starts("CU") || starts("RESOURCE_ABI_")) return true;
  return id.size() > 2 && starts("cu") && std::isupper(static_cast<unsigned char>(id[2]));
}

}  // namespace

std::string nvrtc_unsuitable(const std::string& text) {
  for (const CudaToken& t : lex_cuda(text).tokens)
    if (t.kind == TokenKind::identifier && may_differ(t.text)) return "uses " + t.text + " (line " + std::to_string(t.line) + ")";
  return "";
}

std::optional<std::vector<std::string>> nvrtc_options(const std::string& arch, const std::vector<std::string>& nvcc_flags,
                                                      std::string* why) {
  std::vector<std::string> out = {"--gpu-architecture=" + arch};
  for (const auto& f : nvcc_flags) {
    if (f.rfind("-D", 0) == 0 || f.rfind("-U", 0) == 0 || f.rfind("-std=", 0) == 0 || f == "-lineinfo") {
      out.push_back(f);
    } else if (f.size() == 3 && f.rfind("-O", 0) == 0) {
      continue;  // the host compiler's level: nvcc's device code is optimised at every -O
    } else if (f == "--expt-relaxed-constexpr" || f == "--expt-extended-lambda") {
      continue;  // only host functions (refused by NVRTC) and lambdas (never split) need them
    } else if (f == "--use_fast_math" || f == "-use_fast_math") {
      out.push_back("--use_fast_math");
    } else if (f.rfind("-maxrregcount=", 0) == 0 || f.rfind("--maxrregcount=", 0) == 0) {
      out.push_back("--maxrregcount=" + f.substr(f.find('=') + 1));
    } else if (f == "-Xptxas=-v") {
      out.push_back("--ptxas-options=-v");
    } else {
      if (why) *why = f;
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace kforge
