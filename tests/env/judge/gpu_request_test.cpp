// The one contract between the evaluator and the GPU worker (env/judge/gpu_request.h): what one side
// writes the other reads back exactly, and a misspelt, unknown, missing or mistyped key is an
// error naming it, never a silent default.
#include "env/judge/gpu_request.h"

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

GpuEvalRequest sample() {
  GpuEvalRequest r;
  r.task_yaml = "id: t\n";
  r.cubin = {1, 2, 3, 250};
  r.cubin_hash = "abc/sm_90a";
  r.plan.workspace = {{"acc", DType::float32, 64, true}};
  WireLaunch l;
  l.kernel = "k1";
  l.where = "launch.yaml:3";
  l.grid[0] = 8;
  l.block[0] = 256;
  l.smem = 1024;
  l.args = {{WireArg::argument, 0}, {WireArg::output, 0}, {WireArg::workspace, 0}, {WireArg::i32, 0, -7}, {WireArg::f32, 0, 0, 0.5}};
  r.plan.launches = {l};
  r.max_workspace_bytes = 1234;
  r.verify = {7, 99, 3};
  TimingConfig t;
  t.max_reps = 77;
  t.l2_flush_factor = 3.0;
  t.prepare_ahead = false;  // the default is true
  r.time = t;
  r.profile = true;
  r.counters = true;
  r.counter_metrics = {"a", "b"};
  r.kernel_names = {"k1"};
  r.anticheat.robustness_margin = 0.25;
  r.verify.probe_words = 16;
  r.anticheat.address_pool = 4;
  r.anticheat.guard_bytes = 512;
  r.anticheat.state_checks = false;
  r.anticheat.extension_libraries = {"cublas"};
  return r;
}

std::string error_of(const Json& j) {
  try {
    parse_gpu_eval_request(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GpuRequest, RoundTripsEveryField) {
  GpuEvalRequest a = sample();
  GpuEvalRequest b = parse_gpu_eval_request(to_json(a));
  EXPECT_EQ(b.task_yaml, a.task_yaml);
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_EQ(b.cubin_hash, a.cubin_hash);
  EXPECT_EQ(to_json(b.plan), to_json(a.plan));
  ASSERT_EQ(b.plan.launches.size(), 1u);
  EXPECT_EQ(b.plan.launches[0].args[3].i, -7);
  EXPECT_EQ(b.plan.launches[0].where, "launch.yaml:3");
  EXPECT_EQ(b.max_workspace_bytes, 1234);
  EXPECT_EQ(b.verify.trials, 7);
  EXPECT_EQ(b.verify.salt, 99u);
  EXPECT_EQ(b.verify.report_mismatches, 3);
  ASSERT_TRUE(b.time.has_value());
  EXPECT_EQ(b.time->max_reps, 77);
  EXPECT_DOUBLE_EQ(b.time->l2_flush_factor, 3.0);
  EXPECT_FALSE(b.time->prepare_ahead);
  EXPECT_TRUE(b.profile);
  EXPECT_TRUE(b.counters);
  EXPECT_EQ(b.counter_metrics, a.counter_metrics);
  EXPECT_EQ(b.kernel_names, a.kernel_names);
  EXPECT_DOUBLE_EQ(b.anticheat.robustness_margin, 0.25);
  EXPECT_EQ(b.verify.probe_words, 16);
  EXPECT_EQ(b.anticheat.address_pool, 4);
  EXPECT_EQ(b.anticheat.guard_bytes, 512);
  EXPECT_FALSE(b.anticheat.state_checks);
  EXPECT_EQ(b.anticheat.extension_libraries, a.anticheat.extension_libraries);
}

TEST(GpuRequest, NoTimingIsNull) {
  GpuEvalRequest a = sample();
  a.time.reset();
  Json j = to_json(a);
  EXPECT_TRUE(j["time"].is_null());
  EXPECT_FALSE(parse_gpu_eval_request(j).time.has_value());
}

TEST(GpuRequest, CarriesNoTrialIdentity) {
  Json j = to_json(sample());
  EXPECT_FALSE(j["verify"].contains("first_trial")) << "trial identities are the worker's own";
  j["verify"]["first_trial"] = 5;
  EXPECT_NE(error_of(j).find("request.verify.first_trial is not a key"), std::string::npos) << error_of(j);
}

TEST(GpuRequest, RejectsAMisspeltTimingKey) {
  Json j = to_json(sample());
  j["time"]["max_rep"] = j["time"]["max_reps"];
  j["time"].erase("max_reps");
  std::string e = error_of(j);
  EXPECT_NE(e.find("request.time.max_reps is missing"), std::string::npos) << e;
}

TEST(GpuRequest, RejectsAnUnknownAnticheatSwitch) {
  Json j = to_json(sample());
  j["anticheat"]["precision_probe"] = true;
  EXPECT_NE(error_of(j).find("request.anticheat.precision_probe is not a key"), std::string::npos) << error_of(j);
}

TEST(GpuRequest, RejectsALibraryKforgeDoesNotTellApart) {
  Json j = to_json(sample());
  j["anticheat"]["extension_libraries"] = {"cublas", "cufft"};
  EXPECT_NE(error_of(j).find("request.anticheat.extension_libraries: 'cufft' is not aten, cublas or cudnn"), std::string::npos)
      << error_of(j);
}

TEST(GpuRequest, RejectsAWrongType) {
  Json j = to_json(sample());
  j["anticheat"]["state_checks"] = "yes";
  EXPECT_NE(error_of(j).find("request.anticheat.state_checks has the wrong type"), std::string::npos) << error_of(j);
  Json k = to_json(sample());
  k["cubin"] = "not binary";
  EXPECT_NE(error_of(k).find("request.cubin must be binary"), std::string::npos);
}

TEST(GpuRequest, RejectsAMissingTopLevelKey) {
  Json j = to_json(sample());
  j.erase("kernel_names");
  EXPECT_NE(error_of(j).find("request.kernel_names is missing"), std::string::npos);
}

TEST(GpuRequest, APlanWithAnUnknownOrMissingKeyIsRefusedByPath) {
  Json j = to_json(sample());
  j["plan"]["launches"][0]["args"][0]["offset"] = 4;
  EXPECT_NE(error_of(j).find("request.plan.launches[0].args[0].offset is not a key"), std::string::npos) << error_of(j);
  j = to_json(sample());
  j["plan"]["launches"][0].erase("where");
  EXPECT_NE(error_of(j).find("request.plan.launches[0].where is missing"), std::string::npos) << error_of(j);
  j = to_json(sample());
  j["plan"]["launches"][0]["args"][1]["kind"] = "texture";
  EXPECT_NE(error_of(j).find("unknown argument kind 'texture'"), std::string::npos) << error_of(j);
  j = to_json(sample());
  j["plan"]["launches"][0]["grid"][1] = 0;
  EXPECT_NE(error_of(j).find("empty grid or block"), std::string::npos) << error_of(j);
}

// The extension kind (issue 28): the library's bytes, its hash and the plan travel instead of the
// module, the launch plan and the kernel names; a request of one kind carrying the other kind's
// keys, or an unknown kind, is refused by name.
TEST(GpuRequest, AnExtensionRequestRoundTripsAndCarriesNoModule) {
  GpuEvalRequest r = sample();
  r.extension = GpuExtension{{0x7f, 'E', 'L', 'F', 0}, "libhash", Json{{"version", 1}, {"format", "cuda_agent"}}};
  const Json j = to_json(r);
  EXPECT_EQ(j["kind"], "extension");
  for (const char* k : {"cubin", "cubin_hash", "plan", "kernel_names"}) EXPECT_FALSE(j.contains(k)) << k;
  GpuEvalRequest back = parse_gpu_eval_request(j);
  ASSERT_TRUE(back.extension);
  EXPECT_EQ(back.extension->library, r.extension->library);
  EXPECT_EQ(back.extension->library_hash, "libhash");
  EXPECT_EQ(back.extension->plan, r.extension->plan);
  EXPECT_TRUE(back.cubin.empty());
  EXPECT_TRUE(back.plan.launches.empty());
  EXPECT_EQ(back.verify.trials, 7);

  Json mixed = j;
  mixed["cubin"] = Json::binary({1});
  EXPECT_NE(error_of(mixed).find("request.cubin is not a key"), std::string::npos) << error_of(mixed);
  Json text_library = j;
  text_library["extension"]["library"] = "not bytes";
  EXPECT_NE(error_of(text_library).find("request.extension.library must be binary"), std::string::npos) << error_of(text_library);
  Json unknown = j;
  unknown["kind"] = "triton";
  EXPECT_NE(error_of(unknown).find("request.kind must be kernel or extension"), std::string::npos) << error_of(unknown);
  Json kernel = to_json(sample());
  EXPECT_EQ(kernel["kind"], "kernel");
  kernel["extension"] = j["extension"];
  EXPECT_NE(error_of(kernel).find("request.extension is not a key"), std::string::npos) << error_of(kernel);
}
