#pragma once
// Other shapes a graph task's verification also runs a candidate at (issue 30), so that a kernel
// hard-coded to the task's own shape fails. Five kinds, each drawn from the task's seed and dims alone:
//   odd:        every dim d > 3 an odd size near d x f, f in [0.3, 0.7] per dim, at least 3 (a
//               multiple of no power of two: tile sizes of 8 to 128 never divide it);
//   batch_one:  {B: 1}, where the task has a B > 1;
//   off_by_one: every dim d > 2 as d - 1;
//   empty:      {B: 0}, an empty batch, where the operator allows one: every output is then empty
//               too (no reduction over B, whose answer would be a NaN or an error), and the task's
//               reference, run there by the caller's EmptyShapeCheck (libtorch, which this library
//               does not link), accepts it. No check given: no empty shape.
//   large:      {B: the largest batch whose footprint is at most ExtraShapeConfig::large_bytes} (the
//               largest size that fits), only with large_bytes > 0 and only where every output is
//               empty at B = 0 (no output reduces over B, so no reduction grows and the stored
//               tolerance still holds); the one kind allowed a footprint above the task's own.
// Only batch_one makes a dim 1: a dim of 1 turns an unbiased variance over it into NaN and makes
// PyTorch's instance norm refuse the input, and B is the batch by the synthesizer's convention.
// Where a whole map does not resolve (heads, groups, reshapes constrain some dims), its dims are
// tried one by one in name order, each kept when it resolves with those kept before. A shape is
// kept only when the graph resolves there, no index draw (randint) changes (the task keeps its
// stored draws at other dims: TaskSpec::with_dims), it differs from the task's dims and from the
// shapes before it, and its footprint (arguments and every result) is at most the task's own:
// shapes only shrink (but `large`, whose reductions keep their length), so the reductions are no
// longer and the task's stored tolerance still holds.
#include <functional>
#include <string>
#include <vector>

#include "data_synth/synth/synth_config.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

struct ExtraShape {
  std::string kind;  // odd | batch_one | off_by_one | empty | large
  DimEnv dims;       // the dims it changes, at their new values (an entry of TaskSpec::extra_dims)
  double bytes = 0;  // its footprint: the arguments and every result there (composer.h footprint_bytes)
};

// Whether the task's reference runs at `at` (the task at its empty shape): empty when it does, else
// why not (the operator refuses an empty input).
using EmptyShapeCheck = std::function<std::string(const TaskSpec& at)>;

// At most cfg.max_shapes shapes in kind order; none for an imported task or when disabled. The
// empty kind only with `empty_ok`.
std::vector<ExtraShape> draw_extra_shapes(const TaskSpec& t, const ExtraShapeConfig& cfg, const EmptyShapeCheck& empty_ok = {});
// The same, as TaskSpec::extra_dims holds them.
std::vector<DimEnv> draw_extra_dims(const TaskSpec& t, const ExtraShapeConfig& cfg, const EmptyShapeCheck& empty_ok = {});

// The spec text with its top-level `extra_dims:` block replaced by `extra` (inserted before
// `graph:`, where task_to_yaml writes it; removed when `extra` is empty); every other line is kept
// as it was. Throws a spec error naming `origin` when the result does not parse or is not the same
// task with these extra dims.
std::string spec_with_extra_dims(const std::string& text, const std::vector<DimEnv>& extra, const std::string& origin);

}  // namespace kforge
