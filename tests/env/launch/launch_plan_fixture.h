#pragma once
// The plan task and its kernel.cu that the launch plan tests resolve against, and their helpers:
// defined in launch_plan_test.cpp, shared with launch_plan_errors_test.cpp (one test executable).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "env/launch/launch_plan.h"

namespace kforge::launch_plan_fixture {

// The task of launch_plan_test.cpp's kTask, and the kernels of its kKernels.
const TaskSpec& task();
const std::vector<KernelSignature>& kernels();

ResolvedPlan resolve(const std::string& yaml, const TaskSpec& t = task());

// The message of the spec error that reading or resolving `yaml` throws.
std::string error_of(const std::string& yaml, const TaskSpec& t = task(), const std::vector<KernelSignature>& ks = kernels());

// A one-launch plan around `launch` (the lines after "launches:\n  - ").
std::string one(const std::string& launch);

::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix);
::testing::AssertionResult HasSubstr(const std::string& text, const std::string& part);

}  // namespace kforge::launch_plan_fixture
