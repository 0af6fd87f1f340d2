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
// A directory without model_new.py is refused unless need_model_new is false (files to lay over
// another candidate's, as the extension exploit corpus does).
std::map<std::string, std::string> read_extension_files(const std::string& path, bool need_model_new = true);

struct ExtensionFront {
  bool ok = false;
  std::string error_kind;  // compile_error (the glue or the build refused it) | timeout
  std::string message;
  ExtensionPlan plan;
  nlohmann::json plan_json;
  ExtensionBuildRequest request;  // what the plan builds (its .cu files are the device code the static scan reads)
  ExtensionBuildResult build;
  std::vector<uint8_t> library;
  double glue_ms = 0;
};

// model_glue.py on the files, the plan read, the build request made: ok, or the typed refusal.
ExtensionFront glue_extension(const std::map<std::string, std::string>& files, double glue_timeout_s = 30);
// The build of a glued front; the library's bytes when it succeeded.
void build_extension(ExtensionFront& front, ExtensionBuilder& builder);

// Where extension builds are cached: $KFORGE_EXTENSION_CACHE, else $XDG_CACHE_HOME/kforge/extensions,
// else ~/.cache/kforge/extensions.
std::string default_extension_cache_dir();

}  // namespace kforge
