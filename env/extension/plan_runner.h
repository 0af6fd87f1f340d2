#pragma once
// Runs an extension plan (extension_plan.h) against the functions a candidate's library registered
// (shim/kforge_ext.h): forward's arguments are the task's inputs in order, init values the task's
// init inputs in order (or the plan's defaults), parameters the task's by state_dict name; each call
// goes through the registry with positional and keyword arguments and the binding's defaults. What
// `returns` names are the candidate's outputs. In the GPU worker; needs libtorch.
#include <map>
#include <string>
#include <vector>

#include <kforge_ext.h>

#include "env/extension/extension_plan.h"

namespace kforge {

struct PlanBindings {
  std::vector<at::Tensor> inputs;                // forward's arguments, in order
  std::map<std::string, at::Tensor> parameters;  // by state_dict name
  std::vector<kforge_ext::Value> init_values;    // ModelNew's init arguments, in order (may be fewer: defaults)
};

// Checks what the plan needs against the library and the task before anything runs: every function
// it calls is registered, every parameter name exists, forward's arity is the task's, every init
// argument has a value or a default. A mismatch is a spec error naming model_new.py's line.
void check_plan(const ExtensionPlan& plan, const std::vector<kforge_ext::Function>& functions, const PlanBindings& b);

// The outputs, in `returns` order. A call that throws (a TORCH_CHECK, a wrong argument type) is a
// runtime error "model_new.py:LINE: fn: what".
std::vector<at::Tensor> run_plan(const ExtensionPlan& plan, const std::vector<kforge_ext::Function>& functions, const PlanBindings& b);

}  // namespace kforge
