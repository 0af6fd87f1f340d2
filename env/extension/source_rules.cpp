// The extension candidate's source and flag rules (source_rules.h).
#include "env/extension/source_rules.h"

#include <filesystem>
#include <regex>

#include "configs/error.h"
#include "env/compile/include_guard.h"

namespace kforge {

ExtensionFileKind extension_file_kind(const std::string& path) {
  if (is_header_path(path)) return ExtensionFileKind::header;
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".cu") return ExtensionFileKind::cuda;
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return ExtensionFileKind::host;
  return ExtensionFileKind::other;
}

void check_extension_path(const std::string& path) {
  static const std::regex ok(R"([A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*)");
  KFORGE_CHECK(std::regex_match(path, ok) && path.find("..") == std::string::npos, spec,
               "extension file path '" << path << "' must be relative, inside the candidate, of letters, digits, '_', '-', '.'");
}

void check_extension_includes(const std::string& path, const std::string& text) {
  // The kernel kind's scan (the one lexer of CUDA source), with the candidate's own files
  // includable by a quoted name; the toolkit-configuring macros are torch's business here.
  const SourceScan scan = scan_kernel_source(text, path, IncludePolicy{true, false});
  if (scan.ok()) return;
  std::string all;
  for (const auto& e : scan.errors) all += (all.empty() ? "" : "\n") + e;
  KFORGE_FAIL(spec, all);
}

std::vector<std::string> extension_flags(const std::vector<std::string>& flags, const std::string& what) {
  static const std::regex allowed(
      R"(-O[0-3s]|-ffast-math|--use_fast_math|-use_fast_math|-funroll-loops|-w|-Wall|-Wextra|-lineinfo|-std=c\+\+(14|17|20)|)"
      R"(--expt-relaxed-constexpr|--expt-extended-lambda|-Xptxas=-v|-maxrregcount=[0-9]+|--maxrregcount=[0-9]+|)"
      R"(-U__CUDA_NO_HALF_OPERATORS__|-U__CUDA_NO_HALF_CONVERSIONS__|-U__CUDA_NO_BFLOAT16_CONVERSIONS__|-U__CUDA_NO_HALF2_OPERATORS__|)"
      R"(-D[A-Z][A-Z0-9_]*(=[A-Za-z0-9_.]+)?)");
  std::vector<std::string> out;
  for (const auto& f : flags) {
    if (f.empty()) continue;  // KernelBench's extra_cflags=[""]
    KFORGE_CHECK(
        std::regex_match(f, allowed) && f.rfind("-D__", 0) != 0 && f.rfind("-DTORCH", 0) != 0, spec,
        what << ": flag '" << f << "' is not allowed (optimisation, fast math, warnings, -std, register limits and plain -D macros are)");
    out.push_back(f);
  }
  return out;
}

}  // namespace kforge
