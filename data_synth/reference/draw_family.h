#pragma once
// The draw family: every call a candidate gets, verification or timed, draws its inputs from one
// member of a family chosen at random for that call. `plain` is the task's declared draw; every
// other member is the declared draw transformed in place:
//   scaled          one argument times 2^k, k in [1, 8] (one input up against the others); the
//                   conditioning approves, per argument, the smallest of 2^1, 2^2, 2^4, 2^6, 2^8
//                   that brings the outputs' RMS to 16 x atol / rtol (else the largest) under
//                   which the reference stays well-conditioned, so outputs the absolute tolerance
//                   governs on the declared draw grow into the relative one (an attention output
//                   averaging 2048 rows of N(0, 1) values is ~0.05, where atol = 1e-2 admits a
//                   5-bit answer), and no further (beyond, an honest kernel's normwise rounding
//                   grows past atol where the outputs cross zero)
//   shifted         normal draws moved by +-3 std, uniform ones by their width
//   row_scaled      each row (the last dimension) times its own 2^k, k in [-8, 8]: row scales
//                   spanning orders of magnitude, so that no subset of rows stands for the rest
//   channel_scaled  each slice along dimension 1 times its own 2^k, k in [-8, 8]
//   element_scaled  each element times 2^k, k in [-6, 6]: heavy tails, dynamic range, cancellation
//   outliers        each element with probability 1 in 256 (16 expected at least), at places a hash
//                   of the seed picks, moved by 8 to 128 spreads
//   sign_flip       each row's sign flipped at random
// No member is special: the harness checks every call and counts every timed call, and the judged
// speed of a candidate is its slowest member's (reward/speedup.h), so recognising a member (its
// values are what they are: a draw can always be told from another by reading enough of it) buys
// a shortcut nothing unless the shortcut passes on every member.
//
// A member is applied in place to the float arguments whose draw is normal or uniform (integer
// indices, constants and masks are left alone), deterministically from a seed: every element's new
// value is a function of its value, its index and hashes of the seed (data_synth/task/draw_member.h,
// one definition for the host and the device). The GPU worker applies the member in the same pass
// that draws the values (DeviceDrawer::fill), the conditioning in place on a drawn copy: the same
// bytes, so the seeds the conditioning approved describe the values the calls get.
//
// Not every member suits every task: a float16 GEMM over inputs scaled by 16 may overflow, a
// logarithm of shifted inputs may leave its domain. condition_variants() decides per task which
// variants are well-conditioned: under each, the reference in the task's dtype must stay within
// `margin` x (atol + rtol |r64|) of the same reference run in float64 on the same inputs, with
// no non-finite value the float64 reference does not have. An honest kernel as precise as the
// reference therefore never fails a variant that is used.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/task/draw_member.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

// A member of the draw family (plain: the task's declared draw).
enum class DrawVariant { plain, scaled, shifted, row_scaled, channel_scaled, element_scaled, outliers, sign_flip };
// The members other than plain.
inline constexpr DrawVariant kRobustVariants[] = {DrawVariant::scaled,         DrawVariant::shifted,        DrawVariant::row_scaled,
                                                  DrawVariant::channel_scaled, DrawVariant::element_scaled, DrawVariant::outliers,
                                                  DrawVariant::sign_flip};
const char* variant_name(DrawVariant v);

// True when the variant changes at least one argument of the task.
bool variant_applies(const TaskSpec& task, DrawVariant v);
// What `v` under `seed` does to each argument (the task's order) of the given shapes, as the
// element code's parameters (data_synth/task/draw_member.h; kind 0 where it leaves one as drawn).
std::vector<MemberParams> variant_params(const TaskSpec& task, DrawVariant v, uint64_t seed, const std::vector<Shape>& shapes);
// Applies a member's parameters in place to a contiguous device tensor: the GPU worker's draw kernel
// (env/judge/draw_kernel.h, DeviceDrawer::apply_member) on the tensor's stream.
using DeviceMember = std::function<void(const MemberParams&, DType, at::Tensor&)>;
// Applies `v` in place to `args` (the task's argument order, contiguous, in the task's dtypes):
// CPU tensors with the element code on the host; device tensors with `device`, or (without one)
// through a host copy, slowly but with the same bytes.
void apply_variant(const TaskSpec& task, DrawVariant v, uint64_t seed, std::vector<at::Tensor>& args, const DeviceMember& device = {});

struct VariantCondition {
  DrawVariant variant = DrawVariant::plain;
  bool usable = false;
  double worst_ratio = 0;       // the largest max |r - r64| / (atol + rtol |r64|) over the seeds tried
  std::vector<uint64_t> seeds;  // the variant seeds under which the reference is well-conditioned
  std::string reason;           // why not usable
};

struct TaskConditions {
  double plain_ratio = 0;  // the same ratio on the task's own draw
  std::vector<VariantCondition> variants;
  // Non-empty when the harness could not measure a condition (the float64 reference ran out of
  // device memory), as opposed to a reference found ill-conditioned or without a float64 form. The variants
  // are then unknown, not unusable: a verification must not run without them (fail closed). The
  // variants after the one that ran out are not tried (`variants` ends there): every try has the
  // task's footprint, and the answer would not change.
  std::string unavailable;
};

// Where a conditioning's wall time goes, for benches (tools/bench/robustness_coverage.cpp): with it
// the conditioning waits for the device after each stage, so that each stage's time is its own.
struct ConditioningCost {
  int tries = 0;              // reference pairs run, the task's own draw included
  double prepare_ms = 0;      // the arguments copied and the member applied
  double reference64_ms = 0;  // the arguments in float64 and the reference run on them
  double reference_ms = 0;    // the reference in the task's dtypes
  double compare_ms = 0;      // the outputs checked and compared

  ConditioningCost& operator+=(const ConditioningCost& o) {
    tries += o.tries;
    prepare_ms += o.prepare_ms;
    reference64_ms += o.reference64_ms;
    reference_ms += o.reference_ms;
    compare_ms += o.compare_ms;
    return *this;
  }
};

// Every robust variant that applies to the task, each tried with `seeds_per_variant` seeds on one
// draw of the task's own distribution (`plain_args`). A seed is approved when its ratio is at most
// max(margin, plain_ratio) and at most 1: no worse-conditioned than the task's own draws, which
// honest kernels are held to anyway. Calls then use approved seeds only, so a variant's random
// parameters (exponents, signs, spike places) are ones the reference was seen to survive.
// `device` applies the members to device tensors (apply_variant); `cost`, when given, receives
// where the time went (ConditioningCost; slower). Every try works on its own copy of `plain_args`.
TaskConditions condition_variants(const TaskSpec& task, const std::vector<at::Tensor>& plain_args, uint64_t seed, double margin,
                                  int seeds_per_variant = 2, const DeviceMember& device = {}, ConditioningCost* cost = nullptr);
// The same, with the task's own draw made again by `draw_plain` for every try (the same bytes
// each time) instead of copied: no copy of the arguments is held across the float64 runs, so a
// try's peak is that of the task's own draw. On an 80 GB H100, 9 of 27 sampled float16 and
// bfloat16 tasks were conditioned on their own draw but ran out of memory on every member, each
// try holding a copy beside its float64 run (kforge_robustness_coverage, 2026-12-08); the worker
// then refuses to judge the task. How many of them this alone saves is not yet measured.
using PlainDraw = std::function<std::vector<at::Tensor>()>;
TaskConditions condition_variants(const TaskSpec& task, const PlainDraw& draw_plain, uint64_t seed, double margin,
                                  int seeds_per_variant = 2, const DeviceMember& device = {}, ConditioningCost* cost = nullptr);

}  // namespace kforge
