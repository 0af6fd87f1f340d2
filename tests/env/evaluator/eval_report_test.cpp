// The typed evaluation report (env/evaluator/eval_report.h) and its JSON edge: a report in the
// documented schema (EVAL_REPORT.md) reads back into the struct and writes out byte for byte, and a
// key the schema does not have, or of the wrong type, is refused by name. The GPU worker's replies:
// tests/env/judge/gpu_reply_test.cpp.
#include "env/evaluator/eval_report.h"

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

// A report as the evaluator writes it for a passing, profiled candidate: every section present,
// each shaped as the GPU worker writes it (gpu_judgement.cpp, gpu_verify.cpp, gpu_time.cpp).
Json full_report() {
  Json stats = {{"median_ms", 1.5}, {"mean_ms", 1.6}, {"std_ms", 0.1}, {"min_ms", 1.4}, {"max_ms", 2.0},
                {"p10_ms", 1.45},   {"p90_ms", 1.8},  {"n", 40},       {"rse", 0.01}};
  return {
      {"schema", "kforge.eval/1"},
      {"task", "t"},
      {"candidate", "c"},
      {"kind", "kernel"},
      {"verdict", "pass"},
      {"error", nullptr},
      {"device",
       {{"name", "NVIDIA H200"},
        {"arch", "sm_90a"},
        {"compute_capability", "9.0"},
        {"sm_count", 132},
        {"l2_bytes", 52428800},
        {"total_memory_bytes", 150000000000},
        {"max_threads_per_block", 1024},
        {"max_block_dim", {1024, 1024, 64}},
        {"max_grid_dim", {2147483647, 65535, 65535}},
        {"max_dynamic_shared_bytes", 232448},
        {"cuda", "13.0"},
        {"driver_api", "13.0"},
        {"torch", "2.9.0"}}},
      {"compile",
       {{"ok", true},
        {"log", ""},
        {"kernels", {"k"}},
        {"resources", Json::array({{{"name", "k"},
                                    {"registers", 30},
                                    {"static_shared_bytes", 0},
                                    {"local_bytes", 0},
                                    {"spill_store_bytes", 0},
                                    {"spill_load_bytes", 0},
                                    {"const_bytes", 0},
                                    {"max_threads_per_block", 0}}})},
        {"compile_ms", 12.5},
        {"cache_hit", false},
        {"hash", "ab"},
        {"pch", "none"},
        {"arch", "sm_90a"},
        {"wall_ms", 20.0}}},
      {"plan", {{"launches", 1}, {"workspace_bytes", 0}}},
      {"load",
       {{"kernels", Json::array({{{"name", "k"},
                                  {"registers", 30},
                                  {"static_shared_bytes", 0},
                                  {"local_bytes", 0},
                                  {"const_bytes", 0},
                                  {"max_threads_per_block", 1024}}})},
        {"module_cached", false}}},
      {"verify",
       {{"passed", true},
        {"trials_run", 7},
        {"failed_trial", nullptr},
        {"reason", ""},
        {"inputs_modified", Json::array()},
        {"outputs", Json::array({{{"name", "out"},
                                  {"numel", 16},
                                  {"mismatches", 0},
                                  {"unwritten", 0},
                                  {"max_abs_error", 1e-7},
                                  {"max_rel_error", 2e-7},
                                  {"examples", Json::array()}}})},
        {"robustness", {{"enabled", true}, {"plain_ratio", 0.1}, {"variants", Json::array()}, {"ran", {"plain"}}}}}},
      {"timing",
       {{"candidate", stats},
        {"reference", stats},
        {"candidate_samples_ms", {1.5, 1.6}},
        {"reference_samples_ms", {1.5, 1.6}},
        {"speedup",
         {{"point", 1.0},
          {"lo", 0.9},
          {"hi", 1.1},
          {"confidence", 0.95},
          {"method", "bootstrap-percentile"},
          {"member", "plain"},
          {"by_member", Json::array({{{"member", "plain"}, {"point", 1.0}, {"lo", 0.9}, {"hi", 1.1}}})}}},
        {"outputs_right_after_timing", true},
        {"inputs_fresh_per_call", true},
        {"method", "cuda events"},
        {"checks_off", {{"speed_of_light", "no FLOP count"}}}}},
      {"anticheat",
       {{"verdict", "clean"},
        {"check", nullptr},
        {"message", ""},
        {"checks", Json::array({{{"name", "static"}, {"passed", true}, {"message", ""}, {"evidence", {{"findings", Json::array()}}}}})}}},
      {"profile",
       {{"kernels", Json::array({{{"name", "k"},
                                  {"duration_ns", 1000},
                                  {"grid", {1, 1, 1}},
                                  {"block", {256, 1, 1}},
                                  {"registers", 30},
                                  {"shared_bytes", 0},
                                  {"static_shared_bytes", 0},
                                  {"dynamic_shared_bytes", 0},
                                  {"local_bytes_per_thread", 0},
                                  {"stream", 7},
                                  {"device_launched", false},
                                  {"occupancy", 1.0},
                                  {"blocks_per_sm", 8}}})},
        {"span_ns", 1000},
        {"kernel_time_ns", 1000},
        {"ceilings", {{"dram_gbps", 4000.0}, {"fp32_tflops", 50.0}, {"tf32_tflops", 400.0}, {"fp16_tflops", 800.0}, {"method", "m"}}},
        {"achieved", {{"gbps", 100.0}, {"dram_fraction", 0.025}, {"basis", "b"}, {"tflops", nullptr}, {"fp32_fraction", nullptr}}},
        {"counters", {{"unavailable", "hardware counters were not requested (EvalOptions::counters)"}}}}},
      {"phases", {{"load_ms", 1.0}, {"verify_ms", 2.0}, {"worker_ms", 3.0}}},
      {"gpu_request_wall_ms", 30.0},
      {"wall_ms", 55.0}};
}

std::string error_of(const Json& j) {
  try {
    parse_eval_report(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(EvalReport, ReadsAndWritesTheDocumentedSchemaByteForByte) {
  const Json j = full_report();
  EvalReport r = parse_eval_report(j);
  EXPECT_EQ(r.verdict, Verdict::pass);
  ASSERT_TRUE(r.timing && r.profile && r.compile && r.compile->result);
  EXPECT_DOUBLE_EQ(r.timing->candidate.median, 1.5);
  EXPECT_EQ(r.compile->result->resources.at(0).registers, 30);
  EXPECT_FALSE(r.profile->achieved->tflops.has_value());
  EXPECT_EQ(to_json(r).dump(), j.dump());
}

TEST(EvalReport, AFailedCompileKeepsItsFourKeys) {
  Json j = full_report();
  for (const char* k : {"load", "verify", "timing", "plan"}) j[k] = nullptr;
  for (const char* k : {"profile", "phases", "gpu_request_wall_ms"}) j.erase(k);
  j["verdict"] = "error";
  j["error"] = {{"kind", "timeout"}, {"message", "stopped"}};
  j["compile"] = {{"ok", false}, {"log", "stopped"}, {"arch", "sm_90a"}, {"wall_ms", 3000.0}};
  EvalReport r = parse_eval_report(j);
  ASSERT_TRUE(r.compile);
  EXPECT_FALSE(r.compile->result.has_value());
  EXPECT_FALSE(r.compiled());
  EXPECT_EQ(to_json(r).dump(), j.dump());
}

TEST(EvalReport, AFailedAnticheatCheckMakesItACheatWhateverTheVerdictSays) {
  Json j = full_report();
  j["anticheat"]["checks"].push_back(
      {{"name", "speed_of_light"}, {"passed", false}, {"message", "too fast"}, {"evidence", Json::object()}});
  EvalReport r = parse_eval_report(j);
  EXPECT_EQ(r.verdict, Verdict::cheat);
  Json out = to_json(r);
  EXPECT_EQ(out["verdict"], "cheat");
  EXPECT_EQ(out["anticheat"]["verdict"], "cheat");
  EXPECT_EQ(out["anticheat"]["check"], "speed_of_light");
  EXPECT_NE(format_report(r).find("speed_of_light: too fast"), std::string::npos) << format_report(r);
}

TEST(EvalReport, UnknownMissingOrMistypedKeysAreRefusedByPath) {
  Json j = full_report();
  j["timing"]["speedup"]["median"] = 1.0;
  EXPECT_NE(error_of(j).find("report.timing.speedup.median is not a key"), std::string::npos) << error_of(j);
  j = full_report();
  j["verify"].erase("passed");
  EXPECT_NE(error_of(j).find("report.verify.passed is missing"), std::string::npos) << error_of(j);
  j = full_report();
  j["verify"]["trials_run"] = "7";
  EXPECT_NE(error_of(j).find("report.verify.trials_run has the wrong type"), std::string::npos) << error_of(j);
  j = full_report();
  j["verdict"] = "pending";
  EXPECT_NE(error_of(j).find("'pending' is not a verdict"), std::string::npos) << error_of(j);
}

TEST(EvalReport, TheOtherShapesSectionRoundTripsAndIsReadStrictly) {
  Json j = full_report();
  j["shapes"] = {
      {"status", "not_general"},
      {"trials",
       Json::array({{{"dims", {{"B", 1}}}, {"verdict", "pass"}, {"reason", ""}, {"wall_ms", 12.0}},
                    {{"dims", {{"C", 4093}, {"R", 31}}}, {"verdict", "fail"}, {"reason", "2 mismatches"}, {"wall_ms", 9.5}},
                    {{"dims", Json::object()}, {"layout", "noncontiguous"}, {"verdict", "pass"}, {"reason", ""}, {"wall_ms", 3.0}}})},
      {"note", ""},
      {"wall_ms", 22.0}};
  EvalReport r = parse_eval_report(j);
  ASSERT_TRUE(r.shapes);
  EXPECT_FALSE(r.shapes->general());
  ASSERT_EQ(r.shapes->trials.size(), 3u);
  EXPECT_EQ(r.shapes->trials[1].dims.at("C"), 4093);
  EXPECT_EQ(r.shapes->trials[1].layout, "");
  EXPECT_EQ(r.shapes->trials[2].layout, "noncontiguous");
  EXPECT_EQ(r.shapes->trials[1].verdict, Verdict::fail);
  EXPECT_EQ(r.verdict, Verdict::pass) << "the shapes are the reward's to weigh, not the verdict's";
  Json out = to_json(r);
  EXPECT_EQ(out["shapes"].dump(), j["shapes"].dump());
  EXPECT_NE(format_report(r).find("other shapes: not_general (2 of 3 passed)"), std::string::npos) << format_report(r);
  EXPECT_NE(format_report(r).find("noncontiguous inputs pass"), std::string::npos) << format_report(r);
  EXPECT_NE(format_report(r).find("C=4093 R=31 fail: 2 mismatches"), std::string::npos) << format_report(r);

  Json bad = j;
  bad["shapes"]["status"] = "mostly";
  EXPECT_NE(error_of(bad).find("report.shapes.status is 'mostly'"), std::string::npos) << error_of(bad);
  bad = j;
  bad["shapes"]["trials"][0]["dims"]["B"] = 1.5;
  EXPECT_NE(error_of(bad).find("report.shapes.trials[0].dims.B must be an integer"), std::string::npos) << error_of(bad);
  bad = j;
  bad["shapes"]["trials"][1].erase("verdict");
  EXPECT_NE(error_of(bad).find("report.shapes.trials[1].verdict is missing"), std::string::npos) << error_of(bad);
}

// A trial the harness could not run (its inputs out of GPU memory at a large shape) says nothing of
// the candidate: it neither fails it nor makes it general.
TEST(EvalReport, AShapeTrialTheHarnessCouldNotRunDecidesNothing) {
  auto trial = [](Verdict v, bool counted) {
    ShapeTrial t;
    t.dims = {{"N", 4093}};
    t.verdict = v;
    t.counted = counted;
    if (!counted) t.reason = "internal_error: libtorch failed: CUDA out of memory";
    return t;
  };
  ShapesSection s;
  s.trials = {trial(Verdict::pass, true), trial(Verdict::error, false)};
  s.settle();
  EXPECT_EQ(s.status, "general") << "the one counted trial passed";
  EXPECT_NE(s.note.find("1 trial(s) the harness could not run"), std::string::npos) << s.note;
  s.trials = {trial(Verdict::fail, true), trial(Verdict::error, false)};
  s.settle();
  EXPECT_EQ(s.status, "not_general") << "a counted failure still decides";
  s.trials = {trial(Verdict::error, false), trial(Verdict::error, false)};
  s.settle();
  EXPECT_EQ(s.status, "not_tested");
  EXPECT_NE(s.note.find("could not run any of its 2 trial(s)"), std::string::npos) << s.note;
  s.trials = {trial(Verdict::error, true)};  // the candidate's own error (a fault) counts
  s.settle();
  EXPECT_EQ(s.status, "not_general");
  s.trials.clear();
  s.settle();
  EXPECT_EQ(s.status, "not_tested");

  Json j = full_report();
  s.trials = {trial(Verdict::pass, true), trial(Verdict::error, false)};
  s.settle();
  j["shapes"] = to_json(s);
  EXPECT_EQ(j["shapes"]["trials"][1]["counted"], false);
  EXPECT_FALSE(j["shapes"]["trials"][0].contains("counted")) << "a counted trial is written as before";
  EvalReport r = parse_eval_report(j);
  ASSERT_TRUE(r.shapes);
  EXPECT_FALSE(r.shapes->trials[1].counted);
  EXPECT_TRUE(r.shapes->trials[0].counted);
  EXPECT_NE(format_report(r).find("other shapes: general (1 of 1 passed)"), std::string::npos) << format_report(r);
  EXPECT_NE(format_report(r).find("not counted, error: internal_error"), std::string::npos) << format_report(r);
  j["shapes"]["trials"][1]["counted"] = "no";
  EXPECT_NE(error_of(j).find("report.shapes.trials[1].counted has the wrong type"), std::string::npos) << error_of(j);
}

TEST(GpuEvalReply, AnErrorReplyCarriesItsPartialSections) {
  Json j = full_report();
  Json reply = {{"ok", false},
                {"error", {{"kind", "runtime_error"}, {"message", "fault"}}},
                {"fatal", true},
                {"load", j["load"]},
                {"phases", j["phases"]}};
  GpuEvalReply r = parse_gpu_eval_reply(reply);
  EXPECT_TRUE(r.load.has_value());
  EXPECT_FALSE(r.verify.has_value());
  reply["verfy"] = j["verify"];
  EXPECT_THROW(parse_gpu_eval_reply(reply), Error);
}
