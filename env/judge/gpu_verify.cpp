// Judgement::verify(): the verification calls, each prepared, run, read back and judged on its own.
#include <algorithm>
#include <set>

#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "env/cuda/cuda_driver.h"
#include "env/cuda/cuda_events.h"
#include "env/judge/candidate_error.h"
#include "env/judge/gpu_judgement.h"
#include "env/judge/output_compare.h"
#include "env/process/clock.h"

namespace kforge {

// The plan. One block of the task's members (member_block: plain once, `scaled` once per approved
// seed, every other usable member once), the same composition the timed calls are drawn in, so
// that how often a member comes up says nothing about whether a call is verified or timed. Plain
// goes first, so that a kernel that is simply wrong fails where its mistake is plainly its own; the
// rest follow in random order, then calls on members picked at random from the block up to the
// requested trial count. The state trials close it: the last of those calls is drawn into the
// previous call's buffers (same_addresses: a shortcut caught there is refused under that name),
// then new_addresses repeats its values elsewhere. Every call's draw seed is fresh and secret;
// only new_addresses repeats the previous call's values.
std::vector<Judgement::Planned> Judgement::plan_verification() {
  std::vector<CallSpec> block = member_block();
  std::vector<Planned> calls;
  auto add = [&](const CallSpec& spec) {
    calls.push_back({spec.variant == DrawVariant::plain ? Mode::plain : Mode::robust, spec});
    calls.back().spec.draw_trial = s_.ids.next();
  };
  auto first_plain = std::find_if(block.begin(), block.end(), [](const CallSpec& c) { return c.variant == DrawVariant::plain; });
  std::iter_swap(block.begin(), first_plain);
  for (const CallSpec& spec : block) add(spec);
  while (static_cast<int>(calls.size()) < req_.verify.trials) add(block[s_.ids.next() % block.size()]);
  if (req_.anticheat.state_checks) {
    if (calls.size() > 1)
      calls.back().mode = Mode::same_addresses;
    else
      calls.push_back({Mode::same_addresses, {s_.ids.next(), DrawVariant::plain, 0, -1}});
    calls.push_back({Mode::new_addresses, {0, DrawVariant::plain, 0, -1}});  // values and slot fixed when it runs
  }
  return calls;
}

void Judgement::verify() {
  auto t_verify = std::chrono::steady_clock::now();
  const DynamicCheckConfig& ac = req_.anticheat;
  Json robustness = {{"enabled", ac.robustness_draws}, {"variants", Json::array()}, {"ran", Json::array()}};
  if (ac.robustness_draws) {
    // Measured by the worker, which conditions the task before the call bench holds its buffers
    // (robustness_conditioning_ms); here the conditions are the worker's, looked up.
    const TaskConditions& tc = s_.conditions_for(task_, task_key(req_), ac.robustness_margin);
    // Fail closed: without the conditions no robustness call would run, and a candidate that relies
    // on one member's statistics would pass unseen (softmax_rows on an 80 GB H100, 2026-12-05).
    if (!tc.unavailable.empty())
      throw CandidateError(worker_error::internal,
                           "the harness could not condition the robustness draws on this GPU (" + tc.unavailable +
                               "): the candidate is not judged without them",
                           false);
    robustness["plain_ratio"] = tc.plain_ratio;
    for (const auto& c : tc.variants) {
      robustness["variants"].push_back({{"name", variant_name(c.variant)},
                                        {"usable", c.usable},
                                        {"worst_ratio", c.worst_ratio},
                                        {"seeds_approved", c.seeds.size()},
                                        {"reason", c.reason}});
      if (c.usable) usable_.push_back(c);
    }
  }
  std::vector<Planned> calls = plan_verification();
  verify_ = {{"passed", true}, {"trials_run", 0}, {"failed_trial", nullptr}, {"reason", ""}};
  const bool extension = program_->launches_per_call() < 0;
  OriginWindow origins(extension && ac.kernel_activity);  // opened first: it sees every launch the activity records
  ActivityWindow activity(ac.kernel_activity);
  const size_t first = bench_->calls();
  bool all_ok = true;
  bench_->set_stage_timing(true);
  for (size_t t = 0; t < calls.size() && all_ok; ++t) {
    Planned p = calls[t];
    if (p.mode != Mode::new_addresses) robustness["ran"].push_back(variant_name(p.spec.variant));
    all_ok = verify_call(p, t);
  }
  bench_->set_stage_timing(false);
  const HarnessStageMs stages = bench_->take_stage_ms();
  for (int k = 0; k < kHarnessStages; ++k)
    phases_[std::string("verify_harness_") + harness_stage_name(static_cast<HarnessStage>(k)) + "_ms"] = stages[static_cast<size_t>(k)];
  phases_["verify_calls"] = static_cast<double>(bench_->calls() - first);
  if (all_ok) {
    const int64_t n = static_cast<int64_t>(bench_->calls() - first);
    add_check("inputs_unchanged", true, "", {{"calls", n}});
    add_check("buffer_bounds", true, "", {{"calls", n}, {"guard_bytes", ac.guard_bytes}});
    if (ac.robustness_draws) add_check("robustness_draws", true, "", robustness);
  }
  verify_["robustness"] = robustness;
  if (req_.verify.probe_words > 0) {
    sync_candidate("verification");
    verify_["probe"] = probe_json(first, bench_->calls());
  }
  // Every kernel of the candidate's module that ran during verification: on the harness stream,
  // launched by the harness (not from the device), as many as the plan launches per call (an
  // extension states no count).
  if (ac.kernel_activity) {
    if (activity.on) {
      sync_candidate("verification");
      std::vector<KernelRecord> recs = activity.finish();
      uint32_t harness_stream = KernelActivity::stream_id(s_.ctx, s_.stream());
      int64_t seen = 0, other_stream = 0, from_device = 0;
      std::map<std::string, int64_t> per_kernel;
      // An extension's host code launches what it decides, under names kforge does not know: every
      // kernel that ran is then held to the harness stream (the harness's and the reference's run
      // there too), and the kernels seen elsewhere are the ones named.
      for (const auto& k : recs) {
        if (!extension && !module_kernels_.count(k.name)) continue;
        const bool off = k.stream_id != harness_stream || k.device_launched;
        ++seen;
        if (!extension || off) ++per_kernel[k.name];
        if (k.stream_id != harness_stream) ++other_stream;
        if (k.device_launched) ++from_device;
      }
      const int64_t expected = extension ? -1 : program_->launches_per_call() * candidate_calls_;
      bool ok = (expected < 0 || seen == expected) && other_stream == 0 && from_device == 0;
      add_check("kernel_activity", ok,
                "the candidate's kernels ran other than as its launch plan says (other streams, launches from the device, or a "
                "different number of launches)",
                {{"candidate_calls", candidate_calls_},
                 {"launches_expected", expected},
                 {"launches_seen", seen},
                 {"per_kernel", per_kernel},
                 {"on_other_streams", other_stream},
                 {"launched_from_device", from_device},
                 {"harness_stream", harness_stream},
                 {"records_total", recs.size()}});
      if (extension) check_kernel_origins(recs, origins);
    } else {
      add_check("kernel_activity", true, "", {{"unavailable", activity.unavailable}});
    }
  }
  if (extension) check_host_threads("verification");
  phases_["verify_ms"] = ms_since(t_verify);
  phases_["verify_candidate_gpu_ms"] = cand_ms_;
  phases_["verify_reference_gpu_ms"] = ref_ms_;
  phases_["verify_harness_gpu_ms"] = harness_ms_;
  reply_["verify"] = verify_;
  reply_["anticheat_checks"] = checks_;
}

// library_kernels: which code launched every kernel of the verification calls (launch_origin.h).
void Judgement::check_kernel_origins(const std::vector<KernelRecord>& kernels, OriginWindow& origins) {
  if (!origins.on) {
    add_check("library_kernels", true, "", {{"unavailable", origins.unavailable}});
    return;
  }
  const OriginVerdict v = judge_kernel_origins(kernels, origins.finish(), req_.anticheat.extension_libraries);
  add_check("library_kernels", v.ok,
            "kernels that the candidate's own code did not launch ran during its calls (ATen, cuBLAS or cuDNN compute the config "
            "does not allow, another library, or another thread): the task must be computed by the candidate's kernels",
            v.evidence);
}

// host_threads: no thread of the candidate's host code outlived a call. Such a thread runs on in
// the worker, so the worker ends after replying (evaluate).
void Judgement::check_host_threads(const char* phase) {
  const HostThreads t = program_->host_threads();
  add_check("host_threads", t.calls == 0, "the candidate's host code left threads running after its calls: work must end with the call",
            {{"phase", phase}, {"calls_leaving_threads", t.calls}, {"most_threads_left", t.most}});
}

// Runs one verification call and judges its outputs; the record, the outputs' report and the first
// mismatch's reason (empty when right).
Judgement::Outcome Judgement::run_call(const CallSpec& spec, size_t index) {
  CUstream st = s_.stream();
  CudaEvents ev(6);
  ev.record(0, st);
  bench_->prepare(spec);
  s_.flush_l2(req_.time ? req_.time->l2_flush_factor : 2.0);  // as before every timed call
  ev.record(1, st);
  bench_->run_candidate();
  ++candidate_calls_;
  ev.record(2, st);
  bench_->after_candidate();
  sync_candidate("verification");
  ev.record(3, st);
  std::vector<at::Tensor> ref = bench_->run_reference();
  ev.record(4, st);
  bench_->compare(ref);
  ev.record(5, st);
  ev.synchronize(5);
  cand_ms_ += ev.ms(1, 2);
  ref_ms_ += ev.ms(3, 4);
  harness_ms_ += ev.ms(0, 1) + ev.ms(2, 3) + ev.ms(4, 5);
  Outcome out;
  out.rec = bench_->record(bench_->calls() - 1);
  const Tolerance tol = task_.tolerance;
  out.outputs = Json::array();
  for (size_t o = 0; o < task_.outputs.size(); ++o) {
    const std::string& name = task_.outputs[o].name;
    const at::Tensor& res = bench_->outputs()[o];
    const CallRecord& rec = out.rec;
    Json c;
    if (o >= ref.size())
      c = {{"name", name},         {"numel", res.numel()}, {"mismatches", res.numel()}, {"unwritten", 0},
           {"max_abs_error", 0.0}, {"max_rel_error", 0.0}, {"examples", Json::array()}};
    else if (rec.compared[o] && rec.outputs[o].mismatches == 0)
      c = {{"name", name},
           {"numel", res.numel()},
           {"mismatches", 0},
           {"unwritten", rec.outputs[o].unwritten},
           {"max_abs_error", rec.outputs[o].max_abs},
           {"max_rel_error", rec.outputs[o].max_rel},
           {"examples", Json::array()}};
    else
      c = compare_output(name, res, ref[o], task_.outputs[o].meta.dtype, tol, req_.verify.report_mismatches, rec.poison_id);
    int64_t bad = c["mismatches"].get<int64_t>();
    if (bad > 0 && out.reason.empty()) {
      int64_t unwritten = c["unwritten"].get<int64_t>();
      out.reason = "output " + name + ": " + std::to_string(bad) + " of " + std::to_string(c["numel"].get<int64_t>()) +
                   " elements outside tolerance" + (unwritten ? " (" + std::to_string(unwritten) + " never written)" : "");
    }
    out.outputs.push_back(c);
  }
  scrub(ref);
  verify_["outputs"] = out.outputs;
  verify_["inputs_modified"] = out.rec.inputs_changed;
  verify_["trials_run"] = static_cast<int>(index) + 1;
  return out;
}

// One verification call; false when it failed (the reason is in verify_ or in a failed check).
bool Judgement::verify_call(const Planned& p, size_t index) {
  CallSpec spec = p.spec;
  if (p.mode == Mode::same_addresses) spec.slot = bench_->last_spec().slot;
  if (p.mode == Mode::new_addresses) {
    spec.draw_trial = bench_->last_spec().draw_trial;
    spec.variant = bench_->last_spec().variant;
    spec.variant_seed = bench_->last_spec().variant_seed;
  }
  Outcome r = run_call(spec, index);
  auto fail = [&](const std::string& why) {
    verify_["passed"] = false;
    verify_["failed_trial"] = index;
    verify_["reason"] = why;
    return false;
  };
  const Json where = {{"trial", index}, {"variant", variant_name(spec.variant)}};
  // A shortcut that does not survive this call's member of the draw family.
  auto refuse_member = [&](Json evidence) {
    evidence["call"] = where;
    evidence["reason"] = r.reason;
    evidence["outputs"] = r.outputs;
    add_check("robustness_draws", false,
              std::string("with inputs drawn from a member of the task's draw family other than its declared draw (") +
                  variant_name(spec.variant) +
                  "), under which the reference is well-conditioned, the outputs left the task's tolerance: the candidate relies "
                  "on one member's statistics or computes below the task's precision",
              std::move(evidence));
    return false;
  };
  if (!r.rec.inputs_changed.empty()) {
    add_check("inputs_unchanged", false,
              "the candidate changed its input " + r.rec.inputs_changed[0] + ": inputs and parameters are read-only",
              {{"call", where}, {"changed", r.rec.inputs_changed}, {"phase", "verification"}});
    return fail("the candidate modified its input " + r.rec.inputs_changed[0]);
  }
  if (r.rec.guards_written > 0) {
    add_check("buffer_bounds", false, "the candidate wrote outside the buffers it was given",
              {{"call", where}, {"guard_regions_written", r.rec.guards_written}, {"phase", "verification"}});
    return fail("the candidate wrote outside its buffers");
  }
  const bool ok = r.reason.empty();
  switch (p.mode) {
    case Mode::plain:
      return ok ? true : fail(r.reason);
    case Mode::same_addresses:
    case Mode::new_addresses: {
      const bool same = p.mode == Mode::same_addresses;
      // The same-addresses trial draws a member like any call: failing it may be the member's doing.
      // The same member once more, on fresh values at another buffer set, tells which: failing that
      // too is the member (a shortcut that does not survive it), passing it is the addresses.
      if (!ok && same && spec.variant != DrawVariant::plain) {
        Outcome again = run_call({s_.ids.next(), spec.variant, spec.variant_seed, -1}, index + 1);
        if (!again.reason.empty() && again.rec.inputs_changed.empty() && again.rec.guards_written == 0)
          return refuse_member({{"again_reason", again.reason}});
      }
      // The candidate passed every earlier trial; failing here is answering from state.
      add_check(same ? "state_same_addresses" : "state_new_addresses", ok,
                same ? "with new input values at the addresses of the previous call, the outputs were wrong: results must not be kept "
                       "or keyed across calls"
                     : "with the same input values at new addresses, the outputs were wrong: results must not depend on where the "
                       "buffers are or on calls seen before",
                {{"trial", index}, {"reason", r.reason}, {"outputs", r.outputs}});
      return ok;
    }
    case Mode::robust: {
      if (ok) return true;
      // Which rule was broken: one more call on the task's own distribution tells a candidate that
      // leans on the usual draws (it passes that one) from one that stopped computing (it fails it).
      Outcome again = run_call({s_.ids.next(), DrawVariant::plain, 0, -1}, index + 1);
      if (!again.reason.empty() || !again.rec.inputs_changed.empty() || again.rec.guards_written > 0) {
        add_check("state_across_calls", false,
                  "after passing earlier calls, the candidate failed calls on the task's own inputs: results must not depend on "
                  "calls seen before",
                  {{"call", where}, {"reason", r.reason}, {"plain_call_reason", again.reason}});
        return false;
      }
      return refuse_member({{"plain_call_passed", true}});
    }
  }
  return ok;
}

}  // namespace kforge
