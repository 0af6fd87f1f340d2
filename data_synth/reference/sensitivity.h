#pragma once
// Every input matters (issue 25): does the task's answer depend on each of its arguments, on each
// row and channel of them, and on every element closely enough that a subsampling shortcut leaves
// the tolerance?
//
// The exploits behind it: a min/max whose one side always wins on the task's distribution (an
// input never read), a gate whose one branch never fires, a scalar loss over rows estimated from a
// fraction of them within tolerance. A kernel that skips such work passes verification; the task,
// not the kernel, is at fault, so synthesis and import refuse it.
//
// The arguments checked: every argument the function reads (`used`), with at least one element,
// whose draw is not a constant; for an imported module traced in train mode its buffers are left
// out (BatchNorm updates its running statistics but does not read them). Per draw d (a fresh trial
// of the task's own draw, the draw family's `plain` member) the reference r runs once, and for each
// checked argument:
//   (a) whole    the argument replaced by its mean (a constant; an integer argument by 0 where its
//                randint range holds 0, else its low bound);
//   (b) row      one random slice along dimension 0 replaced by the mean (floating, >= 2 dims);
//   (c) channel  one random slice along dimension 1 replaced by the mean (floating, >= 2 dims).
// An ablation "moves" the answer when at least one output element leaves the task's tolerance
// against r (tolerance.h's rule; non-finite values as the rule judges them; integer outputs: any
// difference). An argument matters when every ablation kind that applies to it moves the answer on
// every draw; the task fails the input checks when one does not.
//
// (d) The ablation figure (floating arguments of at least 100 elements): `ablation_trials` trials,
// each a fresh draw, each with a random `ablation_share` of the argument's elements (at least 1)
// replaced by its mean; the leave rate is the share of trials whose answer leaves the tolerance.
// First under the plain member; below `pass_rate` (with 16 trials: any trial inside), under each
// other member of the family in kRobustVariants order that applies to the task (draw_family.h),
// until one reaches `pass_rate`. The harness draws every member in verification and judges a
// candidate by its slowest member, so a subsampling shortcut must pass on every member: a member
// where the ablation always leaves catches it. The task passes (d) when every checked argument has
// such a member. Not every member is usable for every task in the harness (condition_variants
// refuses ill-conditioned ones): this check takes every member that applies.
//
// Deterministic: the draws, the rows, channels and elements chosen and the members' seeds are a
// function of the task and `seed`.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/reference/draw_family.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

struct SensitivityOptions {
  int draws = 2;                     // draws of the task's own distribution for (a)-(c)
  int ablation_trials = 16;          // trials per member for (d); 0 skips (d)
  double ablation_share = 0.01;      // share of an argument's elements replaced in (d)
  double pass_rate = 0.99;           // (d) passes under a member whose leave rate is at least this
  int64_t ablation_min_numel = 100;  // (d) only for floating arguments of at least this many elements
  uint64_t seed = 1;
  bool slices = true;       // run (b) and (c); false: the whole-argument ablation (a) only
  bool stop_early = false;  // return at the first argument that fails (a)-(c) (filters: the verdict only)
  // Diagnosis only (the verdict is unchanged): for each ablation kind (a)-(c) that fails under the
  // plain member, the first other member (kRobustVariants order, those that apply) under which it
  // moves the answer on every one of `draws` draws: whether the harness's other members would
  // catch a kernel that skips that input, row or channel.
  bool family_diagnosis = false;
  // How the arguments for a key are drawn on the device (default: fill_draw on the host, then a
  // copy: seconds per draw at full size; `kforge tasks sensitivity --device cuda` passes the GPU
  // worker's draw kernel, which writes the same bytes on the device).
  std::function<std::vector<at::Tensor>(const TaskSpec&, const DrawKey&)> draw;
  // How the draw family's members are applied to device tensors (apply_variant's `device`; the
  // same command passes the draw kernel's member kernel).
  DeviceMember member;
};

struct InputSensitivity {
  std::string name;
  std::string role;  // input, parameter, buffer
  bool floating = true;
  // Draws on which each ablation moved the answer (of SensitivityOptions::draws); nullopt where the
  // kind does not apply (row, channel: integer or fewer than 2 dims).
  int moved_whole = 0;
  std::optional<int> moved_row, moved_channel;
  bool matters_whole = true, matters_row = true, matters_channel = true;  // true where not applicable
  // family_diagnosis: for a kind that does not matter under plain, the first member under which it
  // does ("none" when no member does; "" when not diagnosed).
  std::string whole_member, row_member, channel_member;
  // (d): nullopt where it does not apply (integer, fewer than ablation_min_numel elements, no trials).
  std::optional<double> ablation_rate_plain;
  std::string best_member;  // the member with the highest rate (the first to reach pass_rate)
  std::optional<double> ablation_rate_best;
  bool matters() const { return matters_whole && matters_row && matters_channel; }
};

struct SensitivityReport {
  bool inputs_matter = true;    // (a)-(c) for every checked argument
  bool ablation_passed = true;  // (d) for every argument it applies to
  bool passed() const { return inputs_matter && ablation_passed; }
  // "" when passed; "input_matters" when (a)-(c) fail (reported first), else "ablation".
  std::string reason_code;
  std::string reason;  // e.g. "input y: replacing it by a constant leaves every output within tolerance on the task's draws"
  std::vector<InputSensitivity> inputs;
  std::optional<double> min_best_ablation_rate;  // over the arguments (d) applies to
  int64_t reference_runs = 0;
};

// Runs the checks on `task` as given (the caller picks the dims: at_check_dims() for the CPU) with
// its arguments drawn on `device`. Throws what run_reference throws.
SensitivityReport check_sensitivity(const TaskSpec& task, const at::Device& device, const SensitivityOptions& opts = {});

// The reason codes, in report order.
inline constexpr const char* kSensitivityReasons[] = {"input_matters", "ablation"};

}  // namespace kforge
