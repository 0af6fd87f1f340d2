#include "data_synth/synth/cpu_checks.h"

#include <ATen/ATen.h>

#include "configs/error.h"
#include "data_synth/reference/reference.h"
#include "data_synth/reference/sensitivity.h"
#include "data_synth/reference/tolerance.h"

namespace kforge {

namespace {

const std::vector<std::string> kReasons = {"no_check_dims",         "cpu_budget",    "cpu_failed",
                                           "nondeterministic_run",  "nonfinite",     "invariant_to_inputs",
                                           "below_tolerance_floor", "near_constant", "input_matters"};

// The share of elements where `answer` fails the tolerance rule against `ref` (both finite here).
double failing_fraction(const at::Tensor& ref, const at::Tensor& answer, const Tolerance& tol) {
  return outside_tolerance(answer, ref, tol).to(at::kDouble).mean().item<double>();
}

class CpuReferenceFilter : public CandidateFilter {
 public:
  explicit CpuReferenceFilter(const CpuCheckConfig& cfg) : cfg_(cfg) {}
  std::string name() const override { return "cpu_reference"; }
  std::vector<std::string> reasons() const override { return kReasons; }
  std::string check(HashedCandidate& c) override { return cpu_reference_verdict(c.synth.task, cfg_); }

 private:
  CpuCheckConfig cfg_;
};

}  // namespace

std::string cpu_reference_verdict(const TaskSpec& task, const CpuCheckConfig& cfg) {
  if (!task.check_dims) return "no_check_dims";
  TaskSpec t = task.at_check_dims();
  double bytes = 0;
  for (const auto& a : t.arguments) bytes += static_cast<double>(numel(a.decl.meta.shape)) * dtype_size(a.decl.meta.dtype);
  for (const auto& n : t.resolved.nodes) bytes += static_cast<double>(numel(n.out.shape)) * dtype_size(n.out.dtype);
  if (t.resolved.flops > cfg.max_flops || bytes > cfg.max_bytes) return "cpu_budget";
  std::vector<at::Tensor> a0, b0, a1;
  try {
    auto args0 = draw_arguments(t, {t.seed, 0, 0}, at::kCPU);
    auto args1 = draw_arguments(t, {t.seed, 1, 0}, at::kCPU);
    a0 = run_reference(t, args0);
    b0 = run_reference(t, args0);
    a1 = run_reference(t, args1);
  } catch (const Error&) {
    return "cpu_failed";
  } catch (const std::exception&) {
    return "cpu_failed";
  }
  for (size_t i = 0; i < a0.size(); ++i)
    if (!at::equal(a0[i], b0[i])) return "nondeterministic_run";
  bool varies = false;
  for (size_t i = 0; i < a0.size(); ++i) {
    const at::Tensor& out = a0[i];
    if (!out.is_floating_point()) {
      varies = varies || !at::equal(out, a1[i]);
      continue;
    }
    if (!at::isfinite(out).all().item<bool>() || !at::isfinite(a1[i]).all().item<bool>()) return "nonfinite";
    varies = varies || failing_fraction(out, a1[i], t.tolerance) > 0;
    // An all-zeros answer must fail on a visible share of the elements ...
    if (failing_fraction(out, at::zeros_like(out), t.tolerance) < cfg.min_informative_fraction) return "below_tolerance_floor";
    // ... and so must the best constant (the mean), where there is more than one element.
    if (out.numel() > 1 &&
        failing_fraction(out, at::full_like(out, out.to(at::kDouble).mean().item<double>()), t.tolerance) < cfg.min_informative_fraction)
      return "near_constant";
  }
  if (!varies) return "invariant_to_inputs";
  if (cfg.input_matters) {
    SensitivityOptions o;
    o.draws = cfg.input_draws;
    o.slices = cfg.input_slices;
    o.ablation_trials = 0;  // the ablation figure is `kforge tasks sensitivity`'s, not a filter
    o.stop_early = true;
    try {
      if (!check_sensitivity(t, at::kCPU, o).inputs_matter) return "input_matters";
    } catch (const std::exception&) {
      return "cpu_failed";
    }
  }
  return "";
}

std::unique_ptr<CandidateFilter> make_cpu_reference_filter(const CpuCheckConfig& cfg) { return std::make_unique<CpuReferenceFilter>(cfg); }

std::string reference_accepts_empty(const TaskSpec& at) {
  // PyTorch warns of what an empty reduction would mean (var's degrees of freedom): the outputs say it.
  struct Quiet : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  } quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  try {
    c10::InferenceMode inference;
    std::vector<at::Tensor> out = run_reference(at, draw_arguments(at, {at.seed, 0, 0}, at::kCPU));
    for (const auto& o : out)
      if (o.numel() != 0) return "an output has " + std::to_string(o.numel()) + " elements at the empty shape";
    return out.empty() ? "no output" : "";
  } catch (const c10::Error& e) {
    return std::string("the reference refuses the empty shape: ") + e.what_without_backtrace();
  } catch (const Error& e) {
    return std::string("the reference refuses the empty shape: ") + e.what();
  }
}

}  // namespace kforge
