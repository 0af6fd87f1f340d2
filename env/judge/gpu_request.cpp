#include "env/judge/gpu_request.h"

#include <cmath>

#include "configs/error.h"
#include "env/process/strict_json.h"

namespace kforge {

namespace {

Json timing_json(const TimingConfig& t) {
  return {{"warmup_count", t.warmup_count},
          {"warmup_ms", t.warmup_ms},
          {"min_reps", t.min_reps},
          {"max_reps", t.max_reps},
          {"target_rse", t.target_rse},
          {"budget_ms", t.budget_ms},
          {"l2_flush", t.l2_flush},
          {"l2_flush_factor", t.l2_flush_factor},
          {"sequential", t.sequential},
          {"sequential_confidence", t.sequential_confidence},
          {"sequential_growth", t.sequential_growth},
          {"prepare_ahead", t.prepare_ahead},
          {"decide_at", t.decide_at}};
}

TimingConfig timing_from(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  TimingConfig t;
  t.warmup_count = o.req<int>("warmup_count");
  t.warmup_ms = o.req<double>("warmup_ms");
  t.min_reps = o.req<int>("min_reps");
  t.max_reps = o.req<int>("max_reps");
  t.target_rse = o.req<double>("target_rse");
  t.budget_ms = o.req<double>("budget_ms");
  t.l2_flush = o.req<bool>("l2_flush");
  t.l2_flush_factor = o.req<double>("l2_flush_factor");
  t.sequential = o.req<bool>("sequential");
  t.sequential_confidence = o.req<double>("sequential_confidence");
  t.sequential_growth = o.req<double>("sequential_growth");
  t.prepare_ahead = o.req<bool>("prepare_ahead");
  t.decide_at = o.req<std::vector<double>>("decide_at");
  o.done();
  KFORGE_CHECK(t.min_reps >= 1 && t.max_reps >= t.min_reps, spec, path << ": min_reps and max_reps out of order");
  KFORGE_CHECK(t.sequential_confidence > 0 && t.sequential_confidence < 1 && t.sequential_growth > 1, spec,
               path << ": sequential_confidence must be in (0, 1) and sequential_growth above 1");
  for (double d : t.decide_at) KFORGE_CHECK(std::isfinite(d) && d > 0, spec, path << ": decide_at holds positive speedups");
  return t;
}

Json anticheat_json(const DynamicCheckConfig& d) {
  return {{"state_checks", d.state_checks},
          {"verify_timed_calls", d.verify_timed_calls},
          {"scrub_reference", d.scrub_reference},
          {"kernel_activity", d.kernel_activity},
          {"speed_of_light", d.speed_of_light},
          {"robustness_draws", d.robustness_draws},
          {"robustness_margin", d.robustness_margin},
          {"address_pool", d.address_pool},
          {"guard_bytes", d.guard_bytes},
          {"sol_headroom", d.sol_headroom},
          {"extension_libraries", d.extension_libraries}};
}

DynamicCheckConfig anticheat_from(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  DynamicCheckConfig d;
  d.state_checks = o.req<bool>("state_checks");
  d.verify_timed_calls = o.req<bool>("verify_timed_calls");
  d.scrub_reference = o.req<bool>("scrub_reference");
  d.kernel_activity = o.req<bool>("kernel_activity");
  d.speed_of_light = o.req<bool>("speed_of_light");
  d.robustness_draws = o.req<bool>("robustness_draws");
  d.robustness_margin = o.req<double>("robustness_margin");
  d.address_pool = o.req<int>("address_pool");
  d.guard_bytes = o.req<int64_t>("guard_bytes");
  d.sol_headroom = o.req<double>("sol_headroom");
  d.extension_libraries = o.req<std::vector<std::string>>("extension_libraries");
  o.done();
  for (const auto& name : d.extension_libraries)
    KFORGE_CHECK(is_extension_library(name), spec, path << ".extension_libraries: '" << name << "' is not aten, cublas or cudnn");
  KFORGE_CHECK(d.address_pool >= 2 && d.address_pool <= 8, spec, path << ".address_pool must be 2..8");
  KFORGE_CHECK(d.guard_bytes >= 256 && d.guard_bytes % 256 == 0, spec, path << ".guard_bytes must be a multiple of 256");
  return d;
}

}  // namespace

Json to_json(const GpuEvalRequest& r) {
  Json j = {{"type", "evaluate"},
            {"task_yaml", r.task_yaml},
            {"extra_shape", r.extra_shape},
            {"kind", r.extension ? "extension" : "kernel"},
            {"max_workspace_bytes", r.max_workspace_bytes},
            {"verify",
             {{"trials", r.verify.trials},
              {"salt", r.verify.salt},
              {"report_mismatches", r.verify.report_mismatches},
              {"probe_words", r.verify.probe_words}}},
            {"time", r.time ? timing_json(*r.time) : Json(nullptr)},
            {"profile", r.profile},
            {"counters", r.counters},
            {"counter_metrics", r.counter_metrics},
            {"anticheat", anticheat_json(r.anticheat)}};
  if (r.extension) {
    j["extension"] = {{"library", Json::binary(r.extension->library)},
                      {"library_hash", r.extension->library_hash},
                      {"plan", r.extension->plan},
                      {"input_layout", r.extension->input_layout}};
  } else {
    j["cubin"] = Json::binary(r.cubin);
    j["cubin_hash"] = r.cubin_hash;
    j["plan"] = to_json(r.plan);
    j["kernel_names"] = r.kernel_names;
  }
  return j;
}

bool is_input_layout(const std::string& name) { return name == "contiguous" || name == "noncontiguous" || name == "channels_last"; }

GpuEvalRequest parse_gpu_eval_request(const Json& j) {
  StrictObject o(j, "request");
  GpuEvalRequest r;
  KFORGE_CHECK(o.req<std::string>("type") == "evaluate", spec, "request.type must be evaluate");
  r.task_yaml = o.req<std::string>("task_yaml");
  r.extra_shape = o.req<int>("extra_shape");
  KFORGE_CHECK(r.extra_shape >= -1, spec, "request.extra_shape must be -1 (the task's own dims) or an index into its extra_dims");
  const std::string kind = o.req<std::string>("kind");
  KFORGE_CHECK(kind == "kernel" || kind == "extension", spec, "request.kind must be kernel or extension, not '" << kind << "'");
  if (kind == "kernel") {
    const Json& bin = o.raw("cubin");
    KFORGE_CHECK(bin.is_binary(), spec, "request.cubin must be binary");
    r.cubin = bin.get_binary();
    r.cubin_hash = o.req<std::string>("cubin_hash");
    r.plan = parse_wire_plan(o.raw("plan"), o.path("plan"));
    r.kernel_names = o.req<std::vector<std::string>>("kernel_names");
  } else {
    StrictObject e(o.raw("extension"), o.path("extension"));
    GpuExtension x;
    const Json& lib = e.raw("library");
    KFORGE_CHECK(lib.is_binary(), spec, "request.extension.library must be binary");
    x.library = lib.get_binary();
    x.library_hash = e.req<std::string>("library_hash");
    x.plan = e.raw("plan");
    KFORGE_CHECK(x.plan.is_object(), spec, "request.extension.plan must be an object");
    x.input_layout = e.req<std::string>("input_layout");
    KFORGE_CHECK(is_input_layout(x.input_layout), spec,
                 "request.extension.input_layout must be contiguous, noncontiguous or channels_last, not '" << x.input_layout << "'");
    e.done();
    r.extension = std::move(x);
  }
  r.max_workspace_bytes = o.req<int64_t>("max_workspace_bytes");
  {
    StrictObject v(o.raw("verify"), o.path("verify"));
    r.verify.trials = v.req<int>("trials");
    r.verify.salt = v.req<uint64_t>("salt");
    r.verify.report_mismatches = v.req<int>("report_mismatches");
    r.verify.probe_words = v.req<int>("probe_words");
    v.done();
    KFORGE_CHECK(r.verify.probe_words >= 0 && r.verify.probe_words <= 4096, spec, "request.verify.probe_words must be 0..4096");
    KFORGE_CHECK(r.verify.trials >= 1 && r.verify.trials <= 1000, spec, "request.verify.trials must be 1..1000");
  }
  const Json& t = o.raw("time");
  if (!t.is_null()) r.time = timing_from(t, o.path("time"));
  r.profile = o.req<bool>("profile");
  r.counters = o.req<bool>("counters");
  r.counter_metrics = o.req<std::vector<std::string>>("counter_metrics");
  r.anticheat = anticheat_from(o.raw("anticheat"), o.path("anticheat"));
  o.done();
  return r;
}

}  // namespace kforge
