// The extension kind's front stages through the evaluator, on the CPU (issue 28): a CUDA Agent
// workdir read, glued, planned and built by `Evaluator::check` (the report says which kind it judged
// and where the build's time went); what the glue or the reader refuses is a typed error naming the
// file, with nothing built.
#include "env/extension/extension_candidate.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/remove_tree.h"
#include "configs/yaml_reader.h"
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/candidates.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = std::string(KFORGE_SOURCE_DIR_TEST) + "/datasets/samples/";

TaskSpec linear_relu() { return load_task(kSamples + "linear_relu.yaml"); }

}  // namespace

TEST(ExtensionCandidate, TheEvaluatorChecksACudaAgentWorkdir) {
  setenv("KFORGE_EXTENSION_CACHE", KFORGE_EXT_TEST_CACHE, 1);
  Evaluator ev(EvalConfig{});
  Candidate c = Candidate::load_extension(kSamples + "extension_candidates/linear_relu/cuda_agent");
  EXPECT_EQ(c.kind, CandidateKind::extension);
  EXPECT_TRUE(c.files.count("model_new.py") && c.files.count("kernels/linear_relu.cu") && c.files.count("kernels/linear_relu_binding.cpp"));
  EvalReport r = ev.check(linear_relu(), c);
  ASSERT_EQ(r.verdict, Verdict::checked) << format_report(r);
  EXPECT_EQ(r.kind, "extension");
  ASSERT_TRUE(r.extension);
  EXPECT_EQ(r.extension->format, "cuda_agent");
  EXPECT_GT(r.extension->glue_ms, 0);
  std::set<std::string> built;
  for (const auto& s : r.extension->steps) built.insert(s.what);
  // A library already in the cache (an earlier run) is not built again: no steps then. Else the
  // kernel file was split (its device code to a cubin) and linked.
  EXPECT_TRUE(r.extension->library_cached || (built.count("kernels/linear_relu_kforge_device.cu") &&
                                              built.count("kernels/linear_relu_kforge_host.cpp") && built.count("link")))
      << format_report(r);
  ASSERT_TRUE(r.plan);
  EXPECT_EQ(r.plan->launches, 1);  // one extension call
  // The report says so in its JSON and reads back.
  const Json j = to_json(r);
  EXPECT_EQ(j["kind"], "extension");
  EXPECT_EQ(parse_eval_report(j).extension->steps.size(), r.extension->steps.size());
}

// The static scan reads an extension's device code as it reads a kernel.cu, before anything is built:
// a kernel that reads the global timer is refused, the finding naming its file and line.
TEST(ExtensionCandidate, TheStaticScanReadsTheExtensionsDeviceCode) {
  setenv("KFORGE_EXTENSION_CACHE", KFORGE_EXT_TEST_CACHE, 1);
  Evaluator ev(EvalConfig{});
  Candidate c = Candidate::load_extension(kSamples + "extension_candidates/linear_relu/cuda_agent");
  c.files["kernels/timer.cu"] =
      "__global__ void spin(unsigned long long* t) {\n"
      "  unsigned long long v;\n"
      "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(v));\n"
      "  *t = v;\n"
      "}\n";
  EvalReport r = ev.check(linear_relu(), c);
  EXPECT_EQ(r.verdict, Verdict::cheat) << format_report(r);
  ASSERT_TRUE(r.anticheat && r.anticheat->failed());
  EXPECT_EQ(r.anticheat->failed()->name, "static");
  EXPECT_NE(r.anticheat->failed()->message.find("kernels/timer.cu:3"), std::string::npos) << r.anticheat->failed()->message;
  EXPECT_FALSE(r.compile);  // refused before the build
}

TEST(ExtensionCandidate, GlueAndReaderRefusalsAreTypedErrors) {
  setenv("KFORGE_EXTENSION_CACHE", KFORGE_EXT_TEST_CACHE, 1);
  Evaluator ev(EvalConfig{});
  Candidate c;
  c.kind = CandidateKind::extension;
  c.dir = "inline";
  // A ModelNew that falls back to PyTorch: outside the format, refused by the glue before any build.
  c.files["model_new.py"] =
      "import torch\nimport cuda_extension\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
      "        try:\n            return cuda_extension.f(x)\n        except Exception:\n            return torch.relu(x)\n";
  c.files["kernels/f_binding.cpp"] = "// unused\n";
  EvalReport r = ev.check(linear_relu(), c);
  EXPECT_EQ(r.verdict, Verdict::error);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind, "compile_error");
  EXPECT_NE(r.error->message.find("model_new.py:"), std::string::npos) << r.error->message;
  EXPECT_FALSE(r.compiled());

  EXPECT_THROW(Candidate::load_extension("/nonexistent/candidate"), Error);
  const fs::path dir = fs::path(KFORGE_EXT_TEST_CACHE) / ("reader-" + std::to_string(getpid()));
  fs::create_directories(dir / "kernels");
  EXPECT_THROW(Candidate::load_extension(dir.string()), Error);  // no model_new.py
  std::ofstream(dir / "model_new.py") << "x = 1\n";
  fs::create_symlink("/etc/passwd", dir / "kernels" / "leak.cu");
  EXPECT_THROW(Candidate::load_extension(dir.string()), Error);  // a symbolic link is refused
  fs::remove(dir / "kernels" / "leak.cu");
  EXPECT_EQ(Candidate::load_extension(dir.string()).files.size(), 1u);
  remove_tree(dir.string());
  EXPECT_THROW(parse_candidate_kind("triton"), Error);
}

// The extension corpus's entries that the static scan refuses are refused without a GPU, by the
// check their expect.yaml names (the GPU test judges every entry end to end); nothing is built.
TEST(ExtensionCandidate, CorpusEntriesOfTheStaticScanAreRefusedBeforeAnyBuild) {
  setenv("KFORGE_EXTENSION_CACHE", KFORGE_EXT_TEST_CACHE, 1);
  Evaluator ev(EvalConfig{});
  ev.set_anticheat(AnticheatConfig::load(std::string(KFORGE_SOURCE_DIR_TEST) + "/configs/anticheat.yaml"));
  int static_entries = 0;
  for (const auto& d : fs::directory_iterator(fs::path(KFORGE_SOURCE_DIR_TEST) / "anticheat" / "corpus" / "extension")) {
    if (!fs::exists(d.path() / "expect.yaml")) continue;
    YamlNode e = YamlNode::load_file((d.path() / "expect.yaml").string());
    if (e.req<std::string>("check") != "static") continue;
    ++static_entries;
    SCOPED_TRACE(d.path().filename().string());
    Candidate c = Candidate::load_extension(std::string(KFORGE_SOURCE_DIR_TEST) + "/" + e.req<std::string>("base"));
    for (const auto& [rel, text] : read_extension_files(d.path().string(), false)) c.files[rel] = text;
    EvalReport r = ev.check(load_task(kSamples + e.req<std::string>("task") + ".yaml"), c);
    EXPECT_TRUE(kforge::testing::one_of(e.req<std::string>("verdict"), verdict_name(r.verdict))) << format_report(r);
    ASSERT_TRUE(r.anticheat && r.anticheat->failed()) << format_report(r);
    EXPECT_EQ(r.anticheat->failed()->name, "static");
    EXPECT_FALSE(r.compile) << "refused before the build";
  }
  EXPECT_GE(static_entries, 9);
}
