#include "data_synth/reference/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include <c10/core/InferenceMode.h>

#include "data_synth/reference/draw_family.h"
#include "data_synth/reference/reference.h"
#include "data_synth/reference/tolerance.h"

namespace kforge {

namespace {

// A small deterministic generator (splitmix64) for the rows, channels and members' seeds.
struct Rng {
  uint64_t state;
  uint64_t next() { return splitmix64(state++); }
  int64_t below(int64_t n) { return n > 0 ? static_cast<int64_t>(next() % static_cast<uint64_t>(n)) : 0; }
};

bool checked(const TaskSpec& t, const TaskArgument& a) {
  if (!a.decl.used || numel(a.decl.meta.shape) == 0 || a.draw.dist == DrawDist::constant) return false;
  // A module traced in train mode updates its buffers (BatchNorm's running statistics) without
  // reading them for the outputs.
  if (t.imported() && t.reference.module_mode == ModuleMode::train && a.decl.role == ArgRole::buffer) return false;
  return true;
}

// The constant an integer (or boolean) argument is replaced by: 0 where its range holds it, else its low bound.
double integer_constant(const Draw& d) {
  if (d.dist == DrawDist::randint && !(d.a <= 0 && 0 < d.b)) return d.a;
  return 0;
}

// The argument's mean, in its own dtype's arithmetic (float accumulation for the half types): the
// value it is replaced by is rounded to the dtype anyway.
double mean_of(const at::Tensor& x) { return x.mean().item<double>(); }

// True when at least one output element leaves the tolerance against `ref`.
bool moves(const std::vector<at::Tensor>& ref, const std::vector<at::Tensor>& out, const Tolerance& tol) {
  for (size_t o = 0; o < ref.size() && o < out.size(); ++o) {
    if (!ref[o].is_floating_point()) {
      if (!ref[o].equal(out[o])) return true;
      continue;
    }
    if (outside_tolerance(out[o], ref[o], tol).any().item<bool>()) return true;
  }
  return false;
}

bool all_finite(const std::vector<at::Tensor>& outs) {
  for (const auto& o : outs)
    if (o.is_floating_point() && !at::isfinite(o).all().item<bool>()) return false;
  return true;
}

class Runner {
 public:
  Runner(const TaskSpec& t, int64_t& runs) : t_(t), runs_(runs) {}
  // The reference on `args`; an imported module gets copies (train-mode BatchNorm writes its buffers).
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& args) {
    ++runs_;
    if (!t_.imported()) return run_reference(t_, args);
    std::vector<at::Tensor> copies;
    for (const auto& a : args) copies.push_back(a.clone());
    return run_reference(t_, copies);
  }

 private:
  const TaskSpec& t_;
  int64_t& runs_;
};

enum class Kind { whole, row, channel };

// args with argument i replaced by an ablated copy.
std::vector<at::Tensor> ablated(const TaskSpec& t, const std::vector<at::Tensor>& args, size_t i, Kind kind, Rng& rng) {
  std::vector<at::Tensor> out = args;
  at::Tensor x = args[i].clone();
  if (!x.is_floating_point()) {
    x.fill_(integer_constant(t.arguments[i].draw));
  } else {
    const double m = mean_of(args[i]);
    if (kind == Kind::whole)
      x.fill_(m);
    else if (kind == Kind::row)
      x.select(0, rng.below(x.size(0))).fill_(m);
    else
      x.select(1, rng.below(x.size(1))).fill_(m);
  }
  out[i] = x;
  return out;
}

// args with a random `share` of argument i's elements (at least 1) replaced by its mean.
std::vector<at::Tensor> subsampled(const std::vector<at::Tensor>& args, size_t i, double share, Rng& rng) {
  std::vector<at::Tensor> out = args;
  at::Tensor x = args[i].clone();
  const int64_t n = x.numel();
  const int64_t k = std::max<int64_t>(1, std::llround(share * static_cast<double>(n)));
  at::Generator gen = at::detail::createCPUGenerator(rng.next());
  // Distinct places where a permutation is cheap; beyond 2^20 elements places drawn with
  // replacement (about share/2 of them coincide: 0.5 % fewer places at 1 %).
  at::Tensor idx = n <= (int64_t{1} << 20) ? at::randperm(n, gen, at::TensorOptions().dtype(at::kLong)).narrow(0, 0, k)
                                           : at::randint(0, n, {k}, gen, at::TensorOptions().dtype(at::kLong));
  x.view({-1}).index_fill_(0, idx.to(x.device()), mean_of(args[i]));
  out[i] = x;
  return out;
}

std::string who(const TaskArgument& a) { return std::string(arg_role_name(a.decl.role)) + " " + a.decl.name; }

std::string on_draws(int moved, int draws) {
  const int inside = draws - moved;
  if (inside == draws) return "on the task's draws";
  std::ostringstream os;
  os << "on " << inside << " of " << draws << " draws";
  return os.str();
}

std::string rate_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", r);
  return buf;
}

// For each ablation kind that does not matter under plain, the first other member under which it
// moves the answer on every one of `draws` draws (SensitivityOptions::family_diagnosis).
void diagnose_family(const TaskSpec& task, const std::vector<size_t>& idx, int draws, Runner& run, Rng& rng,
                     const std::function<std::vector<at::Tensor>(uint64_t)>& draw_args, const DeviceMember& on_device, uint64_t& trial,
                     SensitivityReport& rep) {
  for (size_t k = 0; k < idx.size(); ++k) {
    InputSensitivity& s = rep.inputs[k];
    const std::pair<Kind, std::string*> kinds[] = {{Kind::whole, s.matters_whole ? nullptr : &s.whole_member},
                                                   {Kind::row, s.matters_row ? nullptr : &s.row_member},
                                                   {Kind::channel, s.matters_channel ? nullptr : &s.channel_member}};
    for (const auto& [kind, member] : kinds) {
      if (!member) continue;
      *member = "none";
      for (DrawVariant v : kRobustVariants) {
        if (!variant_applies(task, v)) continue;
        bool all = true;
        for (int d = 0; d < draws && all; ++d) {
          std::vector<at::Tensor> args = draw_args(trial++);
          apply_variant(task, v, rng.next(), args, on_device);
          std::vector<at::Tensor> ref = run(args);
          all = all_finite(ref) && moves(ref, run(ablated(task, args, idx[k], kind, rng)), task.tolerance);
        }
        if (all) {
          *member = variant_name(v);
          break;
        }
      }
    }
  }
}

// The reason of (a)-(c): the first input that does not matter, and how.
void name_the_input_that_does_not_matter(SensitivityReport& rep, const TaskSpec& task, const std::vector<size_t>& idx, int draws) {
  for (size_t k = 0; k < idx.size(); ++k) {
    const InputSensitivity& s = rep.inputs[k];
    if (s.matters()) continue;
    rep.inputs_matter = false;
    if (!rep.reason.empty()) continue;
    const TaskArgument& a = task.arguments[idx[k]];
    std::ostringstream os;
    if (!s.matters_whole)
      os << who(a) << ": replacing it by a constant leaves every output within tolerance " << on_draws(s.moved_whole, draws);
    else if (!s.matters_row)
      os << who(a) << ": replacing one row (a slice along dimension 0) by its mean leaves every output within tolerance "
         << on_draws(*s.moved_row, draws);
    else
      os << who(a) << ": replacing one channel (a slice along dimension 1) by its mean leaves every output within tolerance "
         << on_draws(*s.moved_channel, draws);
    rep.reason = os.str();
    rep.reason_code = kSensitivityReasons[0];
  }
}

// The reason of (d): an input whose ablation leaves the tolerance too rarely under every member.
void name_the_ablation_failure(SensitivityReport& rep, const TaskSpec& task, const std::vector<size_t>& idx,
                               const std::vector<size_t>& pending, const SensitivityOptions& opts, int trials) {
  for (size_t k : pending) {
    rep.ablation_passed = false;
    if (!rep.inputs_matter || rep.reason_code == kSensitivityReasons[1]) continue;
    const InputSensitivity& s = rep.inputs[k];
    std::ostringstream os;
    os << who(task.arguments[idx[k]]) << ": replacing " << rate_text(100 * opts.ablation_share)
       << " % of its elements by its mean leaves the tolerance on fewer than " << rate_text(100 * opts.pass_rate) << " % of " << trials
       << " trials under every member of the draw family (plain " << rate_text(s.ablation_rate_plain.value_or(0)) << ", best "
       << s.best_member << " " << rate_text(s.ablation_rate_best.value_or(0)) << ")";
    rep.reason = os.str();
    rep.reason_code = kSensitivityReasons[1];
  }
}

}  // namespace

SensitivityReport check_sensitivity(const TaskSpec& task, const at::Device& device, const SensitivityOptions& opts) {
  c10::InferenceMode inference;
  SensitivityReport rep;
  Runner run(task, rep.reference_runs);
  const uint64_t salt = splitmix64(opts.seed ^ splitmix64(task.seed + 0x5e75));
  Rng rng{splitmix64(salt + 1)};
  const int draws = std::max(1, opts.draws);
  std::function<std::vector<at::Tensor>(uint64_t)> draw_args = [&](uint64_t trial) {
    const DrawKey key{task.seed, trial, salt};
    return opts.draw ? opts.draw(task, key) : draw_arguments(task, key, device);
  };

  std::vector<size_t> idx;
  for (size_t i = 0; i < task.arguments.size(); ++i) {
    if (!checked(task, task.arguments[i])) continue;
    idx.push_back(i);
    InputSensitivity s;
    const TaskArgument& a = task.arguments[i];
    s.name = a.decl.name;
    s.role = arg_role_name(a.decl.role);
    s.floating = dtype_is_float(a.decl.meta.dtype);
    if (opts.slices && s.floating && a.decl.meta.shape.size() >= 2) s.moved_row = s.moved_channel = 0;
    rep.inputs.push_back(s);
  }

  // (a)-(c) on `draws` fresh draws of the task's own distribution.
  for (int d = 0; d < draws; ++d) {
    std::vector<at::Tensor> args = draw_args(static_cast<uint64_t>(d));
    std::vector<at::Tensor> ref = run(args);
    for (size_t k = 0; k < idx.size(); ++k) {
      InputSensitivity& s = rep.inputs[k];
      s.moved_whole += moves(ref, run(ablated(task, args, idx[k], Kind::whole, rng)), task.tolerance) ? 1 : 0;
      if (s.moved_row) {
        *s.moved_row += moves(ref, run(ablated(task, args, idx[k], Kind::row, rng)), task.tolerance) ? 1 : 0;
        *s.moved_channel += moves(ref, run(ablated(task, args, idx[k], Kind::channel, rng)), task.tolerance) ? 1 : 0;
      }
      s.matters_whole = s.moved_whole == d + 1;
      s.matters_row = !s.moved_row || *s.moved_row == d + 1;
      s.matters_channel = !s.moved_channel || *s.moved_channel == d + 1;
      if (opts.stop_early && !s.matters()) {
        rep.inputs_matter = false;
        break;
      }
    }
    if (opts.stop_early && !rep.inputs_matter) break;
  }
  uint64_t trial = static_cast<uint64_t>(draws);
  if (opts.family_diagnosis) diagnose_family(task, idx, draws, run, rng, draw_args, opts.member, trial, rep);
  name_the_input_that_does_not_matter(rep, task, idx, draws);
  if (opts.stop_early && !rep.inputs_matter) return rep;

  // (d) the ablation figure, member by member until every argument it applies to has a member
  // where every trial (pass_rate of them) leaves the tolerance.
  const int trials = std::max(0, opts.ablation_trials);
  std::vector<size_t> pending;  // positions in rep.inputs
  for (size_t k = 0; k < idx.size(); ++k) {
    const TaskArgument& a = task.arguments[idx[k]];
    if (trials > 0 && rep.inputs[k].floating && numel(a.decl.meta.shape) >= opts.ablation_min_numel) pending.push_back(k);
  }
  std::vector<DrawVariant> members = {DrawVariant::plain};
  for (DrawVariant v : kRobustVariants)
    if (variant_applies(task, v)) members.push_back(v);
  for (DrawVariant v : members) {
    if (pending.empty()) break;
    std::vector<int> leaves(pending.size(), 0);
    bool usable = true;
    for (int k = 0; k < trials && usable; ++k) {
      std::vector<at::Tensor> args = draw_args(trial++);
      apply_variant(task, v, rng.next(), args, opts.member);
      std::vector<at::Tensor> ref = run(args);
      // A member under which the reference itself is not finite is no member the harness would
      // draw for this task (condition_variants): it does not count.
      if (v != DrawVariant::plain && !all_finite(ref)) {
        usable = false;
        break;
      }
      for (size_t p = 0; p < pending.size(); ++p)
        leaves[p] += moves(ref, run(subsampled(args, idx[pending[p]], opts.ablation_share, rng)), task.tolerance) ? 1 : 0;
    }
    if (!usable) continue;
    std::vector<size_t> still;
    for (size_t p = 0; p < pending.size(); ++p) {
      InputSensitivity& s = rep.inputs[pending[p]];
      const double rate = static_cast<double>(leaves[p]) / trials;
      if (v == DrawVariant::plain) s.ablation_rate_plain = rate;
      if (!s.ablation_rate_best || rate > *s.ablation_rate_best) {
        s.ablation_rate_best = rate;
        s.best_member = variant_name(v);
      }
      if (rate < opts.pass_rate) still.push_back(pending[p]);
    }
    pending = std::move(still);
  }
  for (const auto& s : rep.inputs) {
    if (!s.ablation_rate_best) continue;
    rep.min_best_ablation_rate = std::min(rep.min_best_ablation_rate.value_or(1.0), *s.ablation_rate_best);
  }
  name_the_ablation_failure(rep, task, idx, pending, opts, trials);
  return rep;
}

}  // namespace kforge
