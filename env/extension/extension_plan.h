#pragma once
// The extension plan (env/extension/EXTENSION_PLAN.md, version 1): model_new.py as data, read
// strictly on the C++ side, and the build request it implies. model_glue.py writes it; the GPU
// worker runs it (plan_runner.h). Torch-free.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/extension/extension_build.h"

namespace kforge {

// An argument or a returned value (EXTENSION_PLAN.md, "ARG").
struct ExtensionArg {
  enum class Kind { input, init_arg, parameter, literal, value };
  Kind kind = Kind::input;
  std::string name;              // input, init_arg, parameter or value name
  std::optional<int64_t> index;  // init_arg element or value tensor
  nlohmann::json literal;        // a number, bool or null (literal only)
  bool contiguous = false;
};

struct ExtensionCall {
  std::string fn;
  std::vector<ExtensionArg> args;
  std::vector<std::pair<std::string, ExtensionArg>> kwargs;
  std::string result;
  int64_t line = 0;
};

struct ExtensionInitArg {
  std::string name;
  std::optional<nlohmann::json> dflt;
};

struct ExtensionPlan {
  std::string format;  // cuda_agent | load_inline | cpp_extension_load
  std::string module;  // the name model_new.py gives the extension
  nlohmann::json sources = nlohmann::json::object();
  std::vector<ExtensionInitArg> init_args;
  std::vector<std::string> forward_args;
  std::vector<ExtensionCall> calls;
  std::vector<ExtensionArg> returns;
  // Every parameter (state_dict) name the plan reads, in first-use order.
  std::vector<std::string> parameters() const;
};

// Reads a plan; a missing, unknown or mistyped key, an unknown version or format, or a call that
// reads a result not yet made is a spec error naming its path.
ExtensionPlan parse_extension_plan(const nlohmann::json& j);

// What to build for a plan, from the candidate's files (path inside the candidate -> text):
// cuda_agent: every .cu/.cpp/.h/.cuh file under kernels/ and at the top; load_inline: its sources
// (load_inline_request); cpp_extension_load: the named files and the headers beside them.
ExtensionBuildRequest plan_build_request(const ExtensionPlan& plan, const std::map<std::string, std::string>& files);

}  // namespace kforge
