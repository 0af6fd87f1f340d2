#include "env/judge/gpu_reply.h"

#include <cmath>
#include <limits>

#include "configs/error.h"
#include "env/process/strict_json.h"
#include "env/process/worker_protocol.h"

namespace kforge {

namespace {

template <typename T, typename Parse>
std::vector<T> parse_list(const Json& j, const std::string& path, Parse parse) {
  KFORGE_CHECK(j.is_array(), spec, path << " must be a list, got " << j.type_name());
  std::vector<T> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(parse(j[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

// A measured number (a time, a ratio, an error, a counter's value). JSON has no NaN or Inf and the
// worker's nlohmann writes them as null (a float64 output's max_rel_error over a subnormal
// reference, a speedup over a 0 ms median, a CUPTI ratio metric over no cycles): null reads back
// as NaN, and a NaN or Inf is written as null again. An integer literal (3) reads as 3.0.
double measured(const Json& v, const std::string& path) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  KFORGE_CHECK(v.is_number(), spec, path << " has the wrong type (" << v.type_name() << ")");
  return v.get<double>();
}
double measured(StrictObject& o, const std::string& key) { return measured(o.raw(key), o.path(key)); }
Json measured_json(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

std::vector<double> measured_list(const Json& j, const std::string& path) {
  KFORGE_CHECK(j.is_array(), spec, path << " must be a list, got " << j.type_name());
  std::vector<double> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(measured(j[i], path + "[" + std::to_string(i) + "]"));
  return out;
}
Json measured_list_json(const std::vector<double>& v) {
  Json out = Json::array();
  for (double x : v) out.push_back(measured_json(x));
  return out;
}

Json to_json(const LoadedKernel& k);
Json to_json(const MismatchExample& e);
Json to_json(const SpeedupOfMember& m);
Json to_json(const ProfiledKernel& k);

template <typename T>
Json list_json(const std::vector<T>& v) {
  Json out = Json::array();
  for (const auto& x : v) out.push_back(to_json(x));
  return out;
}

Json stats_json(const TimingStats& s) {
  return {{"median_ms", measured_json(s.median)}, {"mean_ms", measured_json(s.mean)},
          {"std_ms", measured_json(s.std)},       {"min_ms", measured_json(s.min)},
          {"max_ms", measured_json(s.max)},       {"p10_ms", measured_json(s.p10)},
          {"p90_ms", measured_json(s.p90)},       {"n", s.n},
          {"rse", measured_json(s.rse)}};
}

TimingStats parse_stats(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  TimingStats s;
  s.median = measured(o, "median_ms");
  s.mean = measured(o, "mean_ms");
  s.std = measured(o, "std_ms");
  s.min = measured(o, "min_ms");
  s.max = measured(o, "max_ms");
  s.p10 = measured(o, "p10_ms");
  s.p90 = measured(o, "p90_ms");
  s.n = o.req<int64_t>("n");
  s.rse = measured(o, "rse");
  o.done();
  return s;
}

Json to_json(const LoadedKernel& k) {
  return {{"name", k.name},
          {"registers", k.registers},
          {"static_shared_bytes", k.static_shared_bytes},
          {"local_bytes", k.local_bytes},
          {"const_bytes", k.const_bytes},
          {"max_threads_per_block", k.max_threads_per_block}};
}

LoadedKernel parse_loaded_kernel(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  LoadedKernel k;
  k.name = o.req<std::string>("name");
  k.registers = o.req<int>("registers");
  k.static_shared_bytes = o.req<int>("static_shared_bytes");
  k.local_bytes = o.req<int>("local_bytes");
  k.const_bytes = o.req<int>("const_bytes");
  k.max_threads_per_block = o.req<int>("max_threads_per_block");
  o.done();
  return k;
}

Json to_json(const MismatchExample& e) { return {{"index", e.index}, {"candidate", e.candidate}, {"reference", e.reference}}; }

MismatchExample parse_example(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  MismatchExample e{o.raw("index"), o.raw("candidate"), o.raw("reference")};
  o.done();
  return e;
}

OutputCheck parse_output_check(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  OutputCheck c;
  c.name = o.req<std::string>("name");
  c.numel = o.req<int64_t>("numel");
  c.mismatches = o.req<int64_t>("mismatches");
  c.unwritten = o.req<int64_t>("unwritten");
  c.max_abs_error = measured(o, "max_abs_error");
  c.max_rel_error = measured(o, "max_rel_error");
  c.examples = parse_list<MismatchExample>(o.raw("examples"), o.path("examples"), parse_example);
  o.done();
  return c;
}

Json to_json(const SpeedupOfMember& m) {
  return {{"member", m.member}, {"point", measured_json(m.point)}, {"lo", measured_json(m.lo)}, {"hi", measured_json(m.hi)}};
}

SpeedupOfMember parse_speedup_of_member(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  SpeedupOfMember m;
  m.member = o.req<std::string>("member");
  m.point = measured(o, "point");
  m.lo = measured(o, "lo");
  m.hi = measured(o, "hi");
  o.done();
  return m;
}

Json to_json(const ProfiledKernel& k) {
  return {{"name", k.name},
          {"duration_ns", k.duration_ns},
          {"grid", k.grid},
          {"block", k.block},
          {"registers", k.registers},
          {"shared_bytes", k.shared_bytes},
          {"static_shared_bytes", k.static_shared_bytes},
          {"dynamic_shared_bytes", k.dynamic_shared_bytes},
          {"local_bytes_per_thread", k.local_bytes_per_thread},
          {"stream", k.stream},
          {"device_launched", k.device_launched},
          {"occupancy", measured_json(k.occupancy)},
          {"blocks_per_sm", k.blocks_per_sm}};
}

ProfiledKernel parse_profiled_kernel(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ProfiledKernel k;
  k.name = o.req<std::string>("name");
  k.duration_ns = o.req<uint64_t>("duration_ns");
  k.grid = o.req<std::array<int64_t, 3>>("grid");
  k.block = o.req<std::array<int64_t, 3>>("block");
  k.registers = o.req<int64_t>("registers");
  k.shared_bytes = o.req<int64_t>("shared_bytes");
  k.static_shared_bytes = o.req<int64_t>("static_shared_bytes");
  k.dynamic_shared_bytes = o.req<int64_t>("dynamic_shared_bytes");
  k.local_bytes_per_thread = o.req<int64_t>("local_bytes_per_thread");
  k.stream = o.req<int64_t>("stream");
  k.device_launched = o.req<bool>("device_launched");
  k.occupancy = measured(o, "occupancy");
  k.blocks_per_sm = o.req<int64_t>("blocks_per_sm");
  o.done();
  return k;
}

Json counters_json(const ProfileCounters& c) {
  if (c.unavailable) return {{"unavailable", *c.unavailable}};
  Json kernels = Json::array();
  for (const auto& k : c.kernels) kernels.push_back({{"range", k.range}, {"metrics", measured_map_json(k.metrics)}});
  return {
      {"metrics", c.metrics},
      {"unsupported", c.unsupported},
      {"passes", c.passes},
      {"kernels", kernels},
      {"replay", c.replay},
      {"calls", c.calls},
      {"ms", {{"setup", measured_json(c.setup_ms)}, {"collect", measured_json(c.collect_ms)}, {"evaluate", measured_json(c.evaluate_ms)}}},
      {"setup_cached", c.setup_cached},
      {"method", c.method}};
}

ProfileCounters parse_counters(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ProfileCounters c;
  c.unavailable = o.opt<std::string>("unavailable");
  if (!c.unavailable) {
    c.metrics = o.req<std::vector<std::string>>("metrics");
    c.unsupported = o.req<std::vector<std::string>>("unsupported");
    c.passes = o.req<int64_t>("passes");
    c.kernels = parse_list<CounterKernel>(o.raw("kernels"), o.path("kernels"), [](const Json& k, const std::string& p) {
      StrictObject ko(k, p);
      CounterKernel ck;
      ck.range = ko.req<std::string>("range");
      ck.metrics = parse_measured_map(ko.raw("metrics"), ko.path("metrics"));
      ko.done();
      return ck;
    });
    c.replay = o.req<std::string>("replay");
    c.calls = o.req<int64_t>("calls");
    StrictObject ms(o.raw("ms"), o.path("ms"));
    c.setup_ms = measured(ms, "setup");
    c.collect_ms = measured(ms, "collect");
    c.evaluate_ms = measured(ms, "evaluate");
    ms.done();
    c.setup_cached = o.req<bool>("setup_cached");
    c.method = o.req<std::string>("method");
  }
  o.done();
  return c;
}

Json opt_json(const std::optional<double>& v) { return v ? measured_json(*v) : Json(nullptr); }

}  // namespace

std::map<std::string, double> parse_measured_map(const Json& j, const std::string& path) {
  KFORGE_CHECK(j.is_object(), spec, path << " must be a map, got " << j.type_name());
  std::map<std::string, double> out;
  for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = measured(it.value(), path + "." + it.key());
  return out;
}

Json measured_map_json(const std::map<std::string, double>& m) {
  Json out = Json::object();
  for (const auto& [k, v] : m) out[k] = measured_json(v);
  return out;
}

Json to_json(const GpuDevice& d) {
  return {{"name", d.name},
          {"arch", d.arch},
          {"compute_capability", d.compute_capability},
          {"sm_count", d.sm_count},
          {"l2_bytes", d.l2_bytes},
          {"total_memory_bytes", d.total_memory_bytes},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_block_dim", d.max_block_dim},
          {"max_grid_dim", d.max_grid_dim},
          {"max_dynamic_shared_bytes", d.max_dynamic_shared_bytes},
          {"cuda", d.cuda},
          {"driver_api", d.driver_api},
          {"torch", d.torch}};
}

GpuDevice parse_gpu_device(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  GpuDevice d;
  d.name = o.req<std::string>("name");
  d.arch = o.req<std::string>("arch");
  d.compute_capability = o.req<std::string>("compute_capability");
  d.sm_count = o.req<int>("sm_count");
  d.l2_bytes = o.req<int64_t>("l2_bytes");
  d.total_memory_bytes = o.req<int64_t>("total_memory_bytes");
  d.max_threads_per_block = o.req<int>("max_threads_per_block");
  d.max_block_dim = o.req<std::array<int, 3>>("max_block_dim");
  d.max_grid_dim = o.req<std::array<int64_t, 3>>("max_grid_dim");
  d.max_dynamic_shared_bytes = o.req<int64_t>("max_dynamic_shared_bytes");
  d.cuda = o.req<std::string>("cuda");
  d.driver_api = o.req<std::string>("driver_api");
  d.torch = o.req<std::string>("torch");
  o.done();
  return d;
}

std::optional<GpuDevice> hello_device(const Json& hello) {
  if (!hello.is_object() || !hello.contains("device") || hello["device"].is_null()) return std::nullopt;
  return parse_gpu_device(hello["device"], "hello.device");
}

Json to_json(const LoadSection& s) {
  Json j = {{"kernels", list_json(s.kernels)}, {"module_cached", s.module_cached}};
  if (s.extension_functions) j["extension_functions"] = *s.extension_functions;
  return j;
}

LoadSection parse_load_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  LoadSection s;
  s.kernels = parse_list<LoadedKernel>(o.raw("kernels"), o.path("kernels"), parse_loaded_kernel);
  s.module_cached = o.req<bool>("module_cached");
  if (o.has("extension_functions")) s.extension_functions = o.req<std::vector<std::string>>("extension_functions");
  o.done();
  return s;
}

Json to_json(const OutputCheck& c) {
  return {{"name", c.name},
          {"numel", c.numel},
          {"mismatches", c.mismatches},
          {"unwritten", c.unwritten},
          {"max_abs_error", measured_json(c.max_abs_error)},
          {"max_rel_error", measured_json(c.max_rel_error)},
          {"examples", list_json(c.examples)}};
}

Json to_json(const VerifySection& s) {
  Json j = {{"passed", s.passed},
            {"trials_run", s.trials_run},
            {"failed_trial", s.failed_trial ? Json(*s.failed_trial) : Json(nullptr)},
            {"reason", s.reason},
            {"inputs_modified", s.inputs_modified},
            {"outputs", list_json(s.outputs)},
            {"robustness", s.robustness}};
  if (s.probe) j["probe"] = *s.probe;
  return j;
}

VerifySection parse_verify_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  VerifySection s;
  s.passed = o.req<bool>("passed");
  s.trials_run = o.req<int64_t>("trials_run");
  s.failed_trial = o.opt<int64_t>("failed_trial");
  s.reason = o.req<std::string>("reason");
  s.inputs_modified = o.opt<std::vector<std::string>>("inputs_modified").value_or(std::vector<std::string>{});
  if (o.has("outputs")) s.outputs = parse_list<OutputCheck>(o.raw("outputs"), o.path("outputs"), parse_output_check);
  if (o.has("robustness")) s.robustness = o.raw("robustness");
  if (o.has("probe")) s.probe = o.raw("probe");
  o.done();
  return s;
}

Json to_json(const TimingSection& s) {
  Json by_member = list_json(s.speedup.by_member);
  Json j = {{"candidate", stats_json(s.candidate)},
            {"reference", stats_json(s.reference)},
            {"candidate_samples_ms", measured_list_json(s.candidate_samples_ms)},
            {"reference_samples_ms", measured_list_json(s.reference_samples_ms)},
            {"speedup",
             {{"point", measured_json(s.speedup.point)},
              {"lo", measured_json(s.speedup.lo)},
              {"hi", measured_json(s.speedup.hi)},
              {"confidence", measured_json(s.speedup.confidence)},
              {"method", s.speedup.method},
              {"member", s.speedup.member},
              {"by_member", by_member}}},
            {"outputs_right_after_timing", s.outputs_right_after_timing},
            {"inputs_fresh_per_call", s.inputs_fresh_per_call},
            {"method", s.method}};
  if (!s.stop.empty()) j["stop"] = s.stop;
  if (s.sequential) j["sequential"] = *s.sequential;
  if (s.probe) j["probe"] = *s.probe;
  if (s.checks_off) j["checks_off"] = *s.checks_off;
  return j;
}

TimingSection parse_timing_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  TimingSection s;
  s.candidate = parse_stats(o.raw("candidate"), o.path("candidate"));
  s.reference = parse_stats(o.raw("reference"), o.path("reference"));
  s.candidate_samples_ms = measured_list(o.raw("candidate_samples_ms"), o.path("candidate_samples_ms"));
  s.reference_samples_ms = measured_list(o.raw("reference_samples_ms"), o.path("reference_samples_ms"));
  {
    StrictObject sp(o.raw("speedup"), o.path("speedup"));
    s.speedup.point = measured(sp, "point");
    s.speedup.lo = measured(sp, "lo");
    s.speedup.hi = measured(sp, "hi");
    s.speedup.confidence = measured(sp, "confidence");
    s.speedup.method = sp.req<std::string>("method");
    s.speedup.member = sp.req<std::string>("member");
    s.speedup.by_member = parse_list<SpeedupOfMember>(sp.raw("by_member"), sp.path("by_member"), parse_speedup_of_member);
    sp.done();
  }
  s.outputs_right_after_timing = o.req<bool>("outputs_right_after_timing");
  s.inputs_fresh_per_call = o.req<bool>("inputs_fresh_per_call");
  s.method = o.req<std::string>("method");
  s.stop = o.opt<std::string>("stop").value_or("");
  if (o.has("sequential")) s.sequential = o.raw("sequential");
  if (o.has("probe")) s.probe = o.raw("probe");
  if (o.has("checks_off")) s.checks_off = o.raw("checks_off");
  o.done();
  return s;
}

Json to_json(const ProfileSection& s) {
  Json j = {{"kernels", list_json(s.kernels)}, {"counters", counters_json(s.counters)}};
  if (s.unavailable) j["unavailable"] = *s.unavailable;
  if (s.span_ns) j["span_ns"] = *s.span_ns;
  if (s.kernel_time_ns) j["kernel_time_ns"] = *s.kernel_time_ns;
  if (s.ceilings)
    j["ceilings"] = {{"dram_gbps", measured_json(s.ceilings->dram_gbps)},
                     {"fp32_tflops", measured_json(s.ceilings->fp32_tflops)},
                     {"tf32_tflops", measured_json(s.ceilings->tf32_tflops)},
                     {"fp16_tflops", measured_json(s.ceilings->fp16_tflops)},
                     {"method", s.ceilings->method}};
  if (s.achieved)
    j["achieved"] = {{"gbps", measured_json(s.achieved->gbps)},
                     {"dram_fraction", measured_json(s.achieved->dram_fraction)},
                     {"basis", s.achieved->basis},
                     {"tflops", opt_json(s.achieved->tflops)},
                     {"fp32_fraction", opt_json(s.achieved->fp32_fraction)}};
  return j;
}

ProfileSection parse_profile_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ProfileSection s;
  s.kernels = parse_list<ProfiledKernel>(o.raw("kernels"), o.path("kernels"), parse_profiled_kernel);
  s.unavailable = o.opt<std::string>("unavailable");
  s.span_ns = o.opt<uint64_t>("span_ns");
  s.kernel_time_ns = o.opt<uint64_t>("kernel_time_ns");
  if (o.has("ceilings")) {
    StrictObject c(o.raw("ceilings"), o.path("ceilings"));
    s.ceilings = ProfileCeilings{measured(c, "dram_gbps"), measured(c, "fp32_tflops"), measured(c, "tf32_tflops"),
                                 measured(c, "fp16_tflops"), c.req<std::string>("method")};
    c.done();
  }
  if (o.has("achieved")) {
    StrictObject a(o.raw("achieved"), o.path("achieved"));
    s.achieved = ProfileAchieved{measured(a, "gbps"), measured(a, "dram_fraction"), a.req<std::string>("basis"), a.opt<double>("tflops"),
                                 a.opt<double>("fp32_fraction")};
    a.done();
  }
  s.counters = parse_counters(o.raw("counters"), o.path("counters"));
  o.done();
  return s;
}

CheckOutcome parse_check(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  CheckOutcome c;
  c.name = o.req<std::string>("name");
  c.passed = o.req<bool>("passed");
  c.message = o.req<std::string>("message");
  c.evidence = o.raw("evidence");
  o.done();
  return c;
}

Json error_reply_after(const Json& partial, const std::string& kind, const std::string& message, bool fatal) {
  Json err = error_reply(kind, message, fatal);
  for (const char* k : {"load", "verify", "anticheat_checks"})
    if (partial.contains(k)) err[k] = partial[k];
  return err;
}

GpuEvalReply parse_gpu_eval_reply(const Json& reply) {
  StrictObject o(reply, "reply");
  for (const char* k : {"ok", "error", "fatal"}) o.opt<Json>(k);  // the framing's (worker_protocol.h)
  GpuEvalReply r;
  if (o.has("load")) r.load = parse_load_section(o.raw("load"), o.path("load"));
  if (o.has("verify")) r.verify = parse_verify_section(o.raw("verify"), o.path("verify"));
  if (o.has("timing")) r.timing = parse_timing_section(o.raw("timing"), o.path("timing"));
  if (o.has("profile")) r.profile = parse_profile_section(o.raw("profile"), o.path("profile"));
  if (o.has("anticheat_checks"))
    r.anticheat_checks = parse_list<CheckOutcome>(o.raw("anticheat_checks"), o.path("anticheat_checks"), parse_check);
  if (auto p = o.opt<Json>("phases")) r.phases = parse_measured_map(*p, o.path("phases"));
  o.done();
  return r;
}

}  // namespace kforge
