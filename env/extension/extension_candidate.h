#pragma once
// The extension kind's front stages, on the caller's side (no libtorch, no GPU): a candidate's files
// (a CUDA Agent workdir, or a model_new.py with load_inline sources) read, model_new.py turned into
// a plan by model_glue.py (the venv's Python, isolated, with a time limit; it parses, never runs,
// the file), the plan read strictly (extension_plan.h) and the library built (extension_build.h).
// What the GPU worker then loads is the library's bytes and the plan.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/extension/extension_build.h"
#include "env/extension/extension_plan.h"

namespace kforge {

// A candidate's files by path inside it. A directory: model_new.py and every file under kernels/
// (and .cu/.cpp/.h/.cuh at the top); a file: that file as model_new.py. At most 64 files of at most
// 1 MiB each; symbolic links, FIFOs and paths with ".." are refused (an io error naming the file).
std::map<std::string, std::string> read_extension_files(const std::string& path);

struct ExtensionFront {
  bool ok = false;
  std::string error_kind;  // compile_error (the glue or the build refused it) | timeout
  std::string message;
  ExtensionPlan plan;
  nlohmann::json plan_json;
  ExtensionBuildResult build;
  std::vector<uint8_t> library;
  double glue_ms = 0;
};

// Glue, plan, build; the library's bytes when everything succeeded.
ExtensionFront prepare_extension(const std::map<std::string, std::string>& files, ExtensionBuilder& builder, double glue_timeout_s = 30);

// Where extension builds are cached: $KFORGE_EXTENSION_CACHE, else $XDG_CACHE_HOME/kforge/extensions,
// else ~/.cache/kforge/extensions.
std::string default_extension_cache_dir();

}  // namespace kforge
