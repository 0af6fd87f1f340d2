#pragma once
// The synthesis filters that run the task's C++ reference (libtorch, CPU) at its small check
// dimensions: it runs, it is deterministic (two runs agree bitwise), its outputs are finite, vary
// with the inputs (two trials differ beyond tolerance), and stand clear of the tolerance floor
// (an all-zeros answer and a constant answer both fail verification on enough elements), and
// every input matters (data_synth/reference/sensitivity.h, checks (a)-(c): each argument, a row
// and a channel of it, replaced by its mean moves the answer beyond tolerance; input_matters).
#include <memory>
#include <string>
#include <vector>

#include "data_synth/synth/synth_config.h"
#include "data_synth/synth/synth_pipeline.h"

namespace kforge {

std::unique_ptr<CandidateFilter> make_cpu_reference_filter(const CpuCheckConfig& cfg);

// The verdict on one task, for tests: "" when it passes, else the filter name.
std::string cpu_reference_verdict(const TaskSpec& task, const CpuCheckConfig& cfg);

// extra_shapes.h's EmptyShapeCheck: the reference run on the CPU at `at` (the task with an empty
// dimension), on its drawn (empty) arguments: "" when it runs and every output is empty, else why
// not (PyTorch refuses the empty input: an error; or an output has elements).
std::string reference_accepts_empty(const TaskSpec& at);

}  // namespace kforge
