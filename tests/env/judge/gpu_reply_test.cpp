// The GPU worker's reply (env/judge/gpu_reply.h) at its process edge: every shape of reply the worker
// sends parses strictly, and its sections write back as they came (the report built of them:
// tests/env/evaluator/eval_report_test.cpp).
#include "env/judge/gpu_reply.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "env/evaluator/eval_report.h"

using namespace kforge;

// Every shape of reply the GPU worker sends (gpu_worker.cpp, gpu_judgement.cpp, gpu_verify.cpp,
// gpu_time.cpp, output_compare.cpp, worker_loop.cpp), built by hand as those producers build it
// (no GPU here): each must parse strictly, and its sections write back as they came.
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// As the wire carries it: nlohmann writes NaN and Inf as null, and 3.0 reads back as a float but 3 as an integer.
Json wire(const Json& j) { return Json::parse(j.dump()); }

Json stats_of(double median) {  // gpu_time.cpp stats_json (n an int64)
  return {{"median_ms", median}, {"mean_ms", median}, {"std_ms", 0.0},    {"min_ms", median}, {"max_ms", median},
          {"p10_ms", median},    {"p90_ms", median},  {"n", int64_t{30}}, {"rse", 0.0}};
}

Json load_of() {  // gpu_judgement.cpp load(): int attributes from cuFuncGetAttribute
  return {{"kernels", Json::array({{{"name", "k"},
                                    {"registers", 32},
                                    {"static_shared_bytes", 0},
                                    {"local_bytes", 0},
                                    {"const_bytes", 0},
                                    {"max_threads_per_block", 1024}}})},
          {"module_cached", true}};
}

Json output_ok() {  // gpu_verify.cpp run_call, the fused compare's fast path
  return {{"name", "out"},        {"numel", int64_t{1024}}, {"mismatches", 0},          {"unwritten", uint64_t{0}},
          {"max_abs_error", 0.0}, {"max_rel_error", 1e-7},  {"examples", Json::array()}};
}

Json robustness_on() {  // gpu_verify.cpp verify(), robustness_draws on (seeds_approved a size_t)
  return {
      {"enabled", true},
      {"plain_ratio", 0.02},
      {"variants", Json::array({{{"name", "scaled"}, {"usable", true}, {"worst_ratio", 0.3}, {"seeds_approved", size_t{2}}, {"reason", ""}},
                                {{"name", "outliers"},
                                 {"usable", false},
                                 {"worst_ratio", kInf},
                                 {"seeds_approved", size_t{0}},
                                 {"reason", "the reference overflows"}}})},
      {"ran", {"plain", "scaled", "scaled", "plain"}}};
}

Json check(const std::string& name, bool passed, Json evidence) {
  return check_to_json({name, passed, passed ? "" : "broken", std::move(evidence)});
}

Json verify_passed(bool with_probe) {
  Json v = {{"passed", true},
            {"trials_run", 4},
            {"failed_trial", nullptr},
            {"reason", ""},
            {"outputs", Json::array({output_ok()})},
            {"inputs_modified", Json::array()},
            {"robustness", robustness_on()}};
  if (with_probe)  // probe_json: per call its member and the first words of workspace 0
    v["probe"] = Json::array(
        {{{"member", "plain"}, {"words", std::vector<int64_t>{1, -2, 3}}}, {{"member", "scaled"}, {"words", std::vector<int64_t>{}}}});
  return v;
}

Json timing_of(bool with_probe, bool checks_off) {  // gpu_time.cpp time()
  Json t = {{"candidate", stats_of(0.5)},
            {"reference", stats_of(1.0)},
            {"candidate_samples_ms", {0.5, 0.5}},
            {"reference_samples_ms", {1.0, 1.0}},
            {"speedup",
             {{"point", 2.0},
              {"lo", 1.9},
              {"hi", 2.1},
              {"confidence", 0.95},
              {"method", "bootstrap-percentile, slowest of 2 members"},
              {"member", "scaled"},
              {"by_member", Json::array({{{"member", "plain"}, {"point", 2.2}, {"lo", 2.0}, {"hi", 2.3}},
                                         {{"member", "scaled"}, {"point", 2.0}, {"lo", 1.9}, {"hi", 2.1}}})}}},
            {"outputs_right_after_timing", true},
            {"inputs_fresh_per_call", true},
            {"method", "cuda events; every call on fresh inputs"}};
  if (with_probe) t["probe"] = Json::array({{{"member", "plain"}, {"words", std::vector<int64_t>{7}}}});
  if (checks_off) t["checks_off"]["speed_of_light"] = "the task states no FLOP count (cost.flops), so it has no speed-of-light floor";
  return t;
}

Json profiled_kernel() {  // gpu_judgement.cpp kernel_json (CUPTI's uint32 stream id, int32 grid)
  return {{"name", "k"},
          {"duration_ns", uint64_t{4000}},
          {"grid", {int32_t{8}, 1, 1}},
          {"block", {256, 1, 1}},
          {"registers", int32_t{32}},
          {"shared_bytes", 0},
          {"static_shared_bytes", 0},
          {"dynamic_shared_bytes", 0},
          {"local_bytes_per_thread", uint32_t{0}},
          {"stream", uint32_t{13}},
          {"device_launched", false},
          {"occupancy", 1.0},
          {"blocks_per_sm", 8}};
}

Json ceilings_of() {
  return {{"dram_gbps", 4200.5}, {"fp32_tflops", 51.0}, {"tf32_tflops", 380.0}, {"fp16_tflops", 700.0}, {"method", "best of ..."}};
}

Json counters_on() {  // gpu_judgement.cpp profile(): CounterReport (size_t passes and runs)
  return {{"metrics", {"gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"}},
          {"unsupported", {"bogus"}},
          {"passes", size_t{6}},
          {"kernels",
           Json::array({{{"range", "0"},
                         {"metrics", {{"gpu__time_duration.sum", 4000.0}, {"sm__warps_active.avg.pct_of_peak_sustained_active", kNaN}}}}})},
          {"replay", "user"},
          {"calls", size_t{6}},
          {"ms", {{"setup", 12.0}, {"collect", 3.0}, {"evaluate", 0.5}}},
          {"setup_cached", false},
          {"method", "CUPTI range profiler, auto ranges (one per kernel), user replay"}};
}

Json phases_full() {
  return {{"load_ms", 0.2},
          {"robustness_conditioning_ms", 3.0},
          {"verify_ms", 5.0},
          {"verify_candidate_gpu_ms", 0.1},
          {"verify_reference_gpu_ms", 0.2},
          {"verify_harness_gpu_ms", 0.3},
          {"time_ms", 40.0},
          {"ceilings_ms", 900.0},
          {"timed_checks_ms", 10.0},
          {"timed_checks_ms_per_pair", 0.2},
          {"profile_ms", 30.0},
          {"worker_ms", 980.0}};
}

Json checks_full() {
  Json per_kernel = {{"k", int64_t{5}}};
  return Json::array(
      {check("inputs_unchanged", true, {{"calls", int64_t{5}}}),
       check("buffer_bounds", true, {{"calls", int64_t{5}}, {"guard_bytes", 256}}), check("robustness_draws", true, robustness_on()),
       check("state_same_addresses", true, {{"trial", size_t{3}}, {"reason", ""}, {"outputs", Json::array({output_ok()})}}),
       check("state_new_addresses", true, {{"trial", size_t{4}}, {"reason", ""}, {"outputs", Json::array({output_ok()})}}),
       check("kernel_activity", true,
             {{"candidate_calls", int64_t{5}},
              {"launches_expected", int64_t{5}},
              {"launches_seen", int64_t{5}},
              {"per_kernel", per_kernel},
              {"on_other_streams", 0},
              {"launched_from_device", 0},
              {"harness_stream", uint32_t{13}},
              {"records_total", size_t{9}}}),
       check("inputs_unchanged", true, {{"phase", "timing"}, {"calls", 60}, {"calls_with_changes", 0}, {"changed", Json::array()}}),
       check("buffer_bounds", true, {{"phase", "timing"}, {"calls", 60}, {"calls_with_guard_writes", 0}, {"guard_bytes", 256}}),
       check("timed_calls_verified", true,
             {{"timed_pairs", 60},
              {"mismatching_elements", 0},
              {"unwritten_elements", 0},
              {"outputs_not_compared", 0},
              {"robustness_draws", 30}}),
       check("speed_of_light", true,
             {{"median_ms", 0.5},
              {"floor_ms", 0.001},
              {"bytes_floor_ms", 0.001},
              {"flops_floor_ms", 0.0},
              {"min_bytes", 8192.0},
              {"flops", 1024.0},
              {"headroom", 0.5},
              {"precision", "float32"},
              {"peak_tflops", 51.0},
              {"copy_gbps", 4200.5},
              {"matmul_tflops_fp32", 51.0},
              {"matmul_tflops_tf32", 380.0},
              {"matmul_tflops_fp16", 700.0}})});
}

// Parses a reply as it comes off the wire, checks each section writes back as it came, and the
// report made of them writes, reads and writes again identically.
GpuEvalReply round_trip(const Json& produced) {
  const Json reply = wire(produced);
  GpuEvalReply r = parse_gpu_eval_reply(reply);
  auto same = [&](const char* key, const Json& back) {
    ASSERT_TRUE(reply.contains(key)) << key;
    EXPECT_EQ(back, reply[key]) << key << ": " << back.dump() << "\n vs " << reply[key].dump();
  };
  EXPECT_EQ(r.load.has_value(), reply.contains("load"));
  EXPECT_EQ(r.verify.has_value(), reply.contains("verify"));
  EXPECT_EQ(r.timing.has_value(), reply.contains("timing"));
  EXPECT_EQ(r.profile.has_value(), reply.contains("profile"));
  EXPECT_EQ(r.phases.has_value(), reply.contains("phases"));
  if (r.load) same("load", to_json(*r.load));
  if (r.verify) same("verify", to_json(*r.verify));
  if (r.timing) same("timing", to_json(*r.timing));
  if (r.profile) same("profile", to_json(*r.profile));
  if (r.phases) same("phases", measured_map_json(*r.phases));
  if (reply.contains("anticheat_checks")) {
    Json checks = Json::array();
    for (const auto& c : r.anticheat_checks) checks.push_back(check_to_json(c));
    same("anticheat_checks", checks);
  }
  EvalReport report;
  report.task = "t";
  report.candidate = "c";
  report.verdict = reply.value("ok", false) ? Verdict::pass : Verdict::error;
  if (!reply.value("ok", false))
    report.error = ReportError{reply["error"]["kind"].get<std::string>(), reply["error"]["message"].get<std::string>()};
  report.load = r.load;
  report.verify = r.verify;
  report.timing = r.timing;
  report.profile = r.profile;
  report.phases = r.phases;
  report.anticheat = AnticheatSection{r.anticheat_checks};
  report.gpu_request_wall_ms = 12.0;
  report.settle_verdict();
  const Json out = wire(to_json(report));
  const Json again = to_json(parse_eval_report(out));
  EXPECT_EQ(again.dump(), out.dump());
  return r;
}

}  // namespace

TEST(GpuEvalReply, TheHellosDeviceReadsAsTheWorkerWritesIt) {
  GpuDevice d;  // gpu_worker.cpp: cudaDeviceProp's ints, size_t total memory
  d.name = "NVIDIA H200";
  d.arch = "sm_90a";
  d.compute_capability = "9.0";
  d.sm_count = 132;
  d.l2_bytes = 62914560;
  d.total_memory_bytes = static_cast<int64_t>(size_t{150} << 30);
  d.max_threads_per_block = 1024;
  d.max_block_dim = {1024, 1024, 64};
  d.max_grid_dim = {2147483647, 65535, 65535};
  d.max_dynamic_shared_bytes = 232448;
  d.cuda = "13.0";
  d.driver_api = "13.0";
  d.torch = "2.9.0";
  Json hello = {{"ok", true},
                {"mode", "gpu"},
                {"device", to_json(d)},
                {"start_ms", {{"cuda_context", 300.0}, {"harness_kernels_compile", 200.0}, {"total", 310.0}}}};
  hello["seccomp"] = true;  // worker_main.cpp
  hello["startup"] = {
      {"preinit_ns", int64_t{1}}, {"main_ns", int64_t{2}}, {"ready_ns", int64_t{3}}, {"phases_ms", {{"gpu_worker_init", 310.0}}}};
  auto got = hello_device(wire(hello));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(to_json(*got), to_json(d));
  // A worker that could not start (no GPU): an error hello, no device.
  Json failed = error_reply(worker_error::internal, "GPU worker start failed: no CUDA device is available");
  failed["startup"] = {{"phases_ms", {{"failed", 1.0}}}};
  EXPECT_FALSE(hello_device(wire(failed)).has_value());
}

TEST(GpuEvalReply, ATimedProfiledReplyWithEveryCheckParses) {
  Json reply = {{"ok", true},
                {"load", load_of()},
                {"verify", verify_passed(false)},
                {"timing", timing_of(false, false)},
                {"anticheat_checks", checks_full()},
                {"phases", phases_full()}};
  reply["profile"] = {{"kernels", Json::array({profiled_kernel()})},
                      {"span_ns", uint64_t{4000}},
                      {"kernel_time_ns", uint64_t{4000}},
                      {"ceilings", ceilings_of()},
                      {"achieved", {{"gbps", 2.0}, {"dram_fraction", 0.0005}, {"basis", "b"}, {"tflops", 0.25}, {"fp32_fraction", 0.005}}},
                      {"counters", counters_on()}};
  GpuEvalReply r = round_trip(reply);
  ASSERT_TRUE(r.profile && r.profile->achieved && r.profile->achieved->tflops);
  EXPECT_TRUE(std::isnan(r.profile->counters.kernels.at(0).metrics.at("sm__warps_active.avg.pct_of_peak_sustained_active")));
  EXPECT_EQ(r.anticheat_checks.size(), 10u);
}

TEST(GpuEvalReply, VerificationOnlyWithoutRobustnessOrTimingParses) {
  // time and profile not asked; robustness_draws off (no plain_ratio); kernel_activity without CUPTI.
  Json v = verify_passed(false);
  v["robustness"] = {{"enabled", false}, {"variants", Json::array()}, {"ran", {"plain", "plain"}}};
  Json reply = {{"ok", true},
                {"load", load_of()},
                {"verify", v},
                {"anticheat_checks", Json::array({check("inputs_unchanged", true, {{"calls", 2}}),
                                                  check("kernel_activity", true, {{"unavailable", "CUPTI: insufficient privileges"}})})},
                {"phases",
                 {{"load_ms", 0.2},
                  {"verify_ms", 5.0},
                  {"verify_candidate_gpu_ms", 0.1},
                  {"verify_reference_gpu_ms", 0.2},
                  {"verify_harness_gpu_ms", 0.3},
                  {"worker_ms", 6.0}}}};
  round_trip(reply);
}

TEST(GpuEvalReply, AFailedVerificationWithNaNAndInfinityParses) {
  // output_compare.cpp: NaN examples are "nan", an Inf one is null on the wire; a float64 output's
  // max_rel_error over a subnormal reference is Inf (null); failed_trial is a size_t; a missing
  // reference output writes 0.0 errors; a failed state check carries the trial's outputs.
  Json bad = {{"name", "out"},
              {"numel", int64_t{1024}},
              {"mismatches", int64_t{3}},
              {"unwritten", int64_t{1}},
              {"max_abs_error", 2.5},
              {"max_rel_error", kInf},
              {"examples", Json::array({{{"index", std::vector<int64_t>{0, 3}}, {"candidate", "nan"}, {"reference", 1.0}},
                                        {{"index", std::vector<int64_t>{1, 0}}, {"candidate", kInf}, {"reference", -2.0}}})}};
  Json v = {{"passed", false},
            {"trials_run", 3},
            {"failed_trial", size_t{2}},
            {"reason", "output out: 3 of 1024 elements outside tolerance"},
            {"outputs", Json::array({bad})},
            {"inputs_modified", Json::array()},
            {"robustness", robustness_on()}};
  Json reply = {
      {"ok", true},
      {"load", load_of()},
      {"verify", v},
      {"anticheat_checks",
       Json::array({check("state_same_addresses", false, {{"trial", size_t{2}}, {"reason", "r"}, {"outputs", Json::array({bad})}})})},
      {"phases", phases_full()}};
  GpuEvalReply r = round_trip(reply);
  EXPECT_TRUE(std::isnan(r.verify->outputs.at(0).max_rel_error));
  EXPECT_EQ(*r.verify->failed_trial, 2);
  // inputs modified (gpu_verify.cpp: the rec's names).
  v["outputs"] = Json::array({output_ok()});
  v["inputs_modified"] = {"x"};
  v["reason"] = "the candidate modified its input x";
  reply["verify"] = v;
  reply["anticheat_checks"] = Json::array({check(
      "inputs_unchanged", false, {{"call", {{"trial", size_t{0}}, {"variant", "plain"}}}, {"changed", {"x"}}, {"phase", "verification"}})});
  round_trip(reply);
}

TEST(GpuEvalReply, ProbeWordsAndChecksOffParse) {
  Json reply = {{"ok", true},
                {"load", load_of()},
                {"verify", verify_passed(true)},
                {"timing", timing_of(true, true)},
                {"anticheat_checks", checks_full()},
                {"phases", phases_full()}};
  GpuEvalReply r = round_trip(reply);
  ASSERT_TRUE(r.verify->probe && r.timing->probe && r.timing->checks_off);
}

TEST(GpuEvalReply, MeasuredNumbersMayBeIntegersOrNull) {
  // A speedup over a 0 ms median is Inf, an interval of Infs NaN: null on the wire. Integer literals in double fields.
  Json t = timing_of(false, false);
  t["speedup"]["point"] = kInf;
  t["speedup"]["lo"] = kNaN;
  t["speedup"]["hi"] = kInf;
  t["speedup"]["by_member"][0]["point"] = kInf;
  t["candidate"]["median_ms"] = 0;
  t["candidate"]["rse"] = 0;
  t["candidate_samples_ms"] = {0, 1};
  Json reply = {{"ok", true}, {"load", load_of()}, {"verify", verify_passed(false)}, {"timing", t}, {"phases", {{"worker_ms", 3}}}};
  reply["profile"] = {{"kernels", Json::array({profiled_kernel()})},
                      {"span_ns", 0},
                      {"kernel_time_ns", 0},
                      {"ceilings", ceilings_of()},
                      {"counters", {{"unavailable", "hardware counters were not requested (EvalOptions::counters)"}}}};
  reply["profile"]["kernels"][0]["occupancy"] = 1;
  reply["profile"]["ceilings"]["dram_gbps"] = kInf;
  GpuEvalReply r = round_trip(reply);
  EXPECT_TRUE(std::isnan(r.timing->speedup.point));
  EXPECT_FALSE(r.profile->achieved.has_value());  // a span of 0: no achieved rates
  // Still strict about the type: a string is not a measured number.
  reply["timing"]["speedup"]["point"] = "2";
  EXPECT_THROW(parse_gpu_eval_reply(wire(reply)), Error);
}

TEST(GpuEvalReply, ProfileWithoutCuptiAndWithoutFlopsParses) {
  Json reply = {
      {"ok", true}, {"load", load_of()}, {"verify", verify_passed(false)}, {"timing", timing_of(false, true)}, {"phases", phases_full()}};
  reply["profile"] = {{"kernels", Json::array()},
                      {"unavailable", "CUPTI activity: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
                      {"counters", {{"unavailable", "CUPTI activity: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}}}};
  round_trip(reply);
  // CUPTI on, an imported task with no FLOP count: achieved's tflops and fp32_fraction are null.
  reply["profile"] = {
      {"kernels", Json::array({profiled_kernel()})},
      {"span_ns", uint64_t{4000}},
      {"kernel_time_ns", uint64_t{3000}},
      {"ceilings", ceilings_of()},
      {"achieved", {{"gbps", 2.0}, {"dram_fraction", 0.0005}, {"basis", "b"}, {"tflops", nullptr}, {"fp32_fraction", nullptr}}},
      {"counters", {{"unavailable", "CUPTI range profiler: no metric is supported"}}}};
  GpuEvalReply r = round_trip(reply);
  EXPECT_FALSE(r.profile->achieved->tflops.has_value());
}

TEST(GpuEvalReply, AFaultAfterVerificationKeepsTheSectionsAndChecksThatRan) {
  // What the judgement wrote before timing faulted (gpu_worker.cpp): load, verify and its checks,
  // and a timing section it had not finished (never in a reply: it is written when timing ends).
  Json partial = {{"ok", true}, {"load", load_of()}, {"verify", verify_passed(false)}, {"anticheat_checks", checks_full()}};
  Json err = error_reply_after(partial, worker_error::runtime_error, "the candidate failed while running (timing)", true);
  EXPECT_FALSE(err["ok"].get<bool>());
  EXPECT_TRUE(err["fatal"].get<bool>());
  EXPECT_EQ(err["error"]["kind"], worker_error::runtime_error);
  GpuEvalReply r = round_trip(err);
  ASSERT_TRUE(r.load && r.verify);
  EXPECT_TRUE(r.verify->passed);
  ASSERT_EQ(r.anticheat_checks.size(), checks_full().size());
  EXPECT_EQ(r.anticheat_checks.front().name, "inputs_unchanged");
  EXPECT_FALSE(r.timing.has_value());
  // Before verification ended nothing but the error is carried.
  Json bare = error_reply_after({{"ok", true}}, worker_error::launch_error, "k launched with 2048 threads per block", false);
  EXPECT_FALSE(bare.contains("load") || bare.contains("verify") || bare.contains("anticheat_checks") || bare.contains("fatal"));
}

TEST(GpuEvalReply, EveryErrorReplyParses) {
  // gpu_worker.cpp: a CandidateError carries load and verify when they were written, and phases.
  auto candidate_error = [](const char* kind, const std::string& msg, bool fatal) {
    Json err = error_reply(kind, msg, fatal);
    err["phases"] = {{"worker_ms", 2.0}};
    return err;
  };
  // A module that does not load, a kernel not in it: no load section yet.
  round_trip(candidate_error(worker_error::launch_error, "loading the compiled module: CUDA_ERROR_INVALID_IMAGE", false));
  // A launch over the limits: load written.
  Json e = candidate_error(worker_error::launch_error, "launch.yaml:3: k launched with 2048 threads per block", false);
  e["load"] = load_of();
  e["phases"]["load_ms"] = 0.3;
  round_trip(e);
  // A fault while verifying: load, no verify (it is written when verification ends), fatal.
  e = candidate_error(worker_error::runtime_error, "the candidate failed while running (verification): CUDA_ERROR_ILLEGAL_ADDRESS", true);
  e["load"] = load_of();
  round_trip(e);
  // A fault while timing or profiling: load, verify and the checks that ran, phases up to there.
  e = candidate_error(worker_error::runtime_error, "the candidate failed while running (timing): CUDA_ERROR_LAUNCH_FAILED", true);
  e["load"] = load_of();
  e["verify"] = verify_passed(true);
  e["anticheat_checks"] = Json::array({check("inputs_unchanged", true, {{"calls", int64_t{5}}})});
  e["phases"] = phases_full();
  round_trip(e);
  // libtorch failing (gpu_worker.cpp), a bad request or an internal error (worker_loop.cpp), the test hook's fatal reply.
  round_trip(error_reply(worker_error::internal, "libtorch failed: out of memory"));
  round_trip(error_reply(worker_error::runtime_error, "libtorch failed: x (after CUDA_ERROR_ILLEGAL_ADDRESS)", true));
  round_trip(error_reply(worker_error::bad_request, "request.verify.trials is missing"));
  round_trip(error_reply(worker_error::runtime_error, "simulated fatal error", true));
}
