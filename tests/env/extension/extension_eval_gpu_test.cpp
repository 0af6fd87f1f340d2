// The extension kind judged end to end on the GPU (issue 28): the two honest linear_relu samples
// (CUDA Agent's workdir and load_inline) through `Evaluator::evaluate` with timing, and every entry
// of the extension exploit corpus (anticheat/corpus/extension/) refused by the check it names. The
// same evaluator, GPU worker, verification, timed-call checks and timing as the kernel kind.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <gtest/gtest.h>

#include "configs/yaml_reader.h"
#include "env/evaluator/evaluator.h"
#include "env/extension/extension_candidate.h"
#include "tests/env/evaluator/candidates.h"
#include "tests/skip_without_cuda.h"
#include "tests/test_paths.h"

using namespace kforge;
using namespace kforge::testing;
namespace fs = std::filesystem;

namespace {

EvalConfig config() {
  EvalConfig cfg;
  cfg.worker.compile_timeout_s = 60;
  cfg.worker.request_timeout_s = 120;
  cfg.timing.budget_ms = 1500;
  return cfg;
}

// What refused it, as the kernel kind's audit names it.
std::string fired(const EvalReport& r) {
  if (r.verdict == Verdict::cheat) return r.anticheat && r.anticheat->failed() ? r.anticheat->failed()->name : "cheat";
  if (r.verdict == Verdict::error) return r.error ? r.error->kind : "error";
  if (r.verdict == Verdict::fail) return r.verify && !r.verify->inputs_modified.empty() ? "inputs_unchanged" : "verify";
  return "-";
}

void print_row(const std::string& name, const EvalReport& r) {
  double speedup = r.timing ? r.timing->speedup.point : 0;
  std::printf("%-28s %-6s %-18s speedup %.3f  build %.0f ms  wall %.0f ms\n", name.c_str(), verdict_name(r.verdict), fired(r).c_str(),
              speedup, r.extension ? r.extension->build_ms : 0.0, r.wall_ms.value_or(0));
  std::fflush(stdout);
}

}  // namespace

TEST(ExtensionEvalGpu, BothFormatsOfAnHonestCandidatePassAndAreTimed) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(config());
  ev.set_anticheat(AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml"));
  const TaskSpec task = load_task(task_path("linear_relu"));
  const std::string root = source_dir() + "/datasets/samples/extension_candidates/linear_relu/";
  for (const std::string fmt : {"cuda_agent", "load_inline"}) {
    SCOPED_TRACE(fmt);
    const std::string path = fmt == "cuda_agent" ? root + fmt : root + fmt + "/model_new.py";
    EvalOptions opt;
    opt.trials = 5;
    opt.profile = true;
    EvalReport r = ev.evaluate(task, Candidate::load_extension(path), opt);
    print_row(fmt, r);
    ASSERT_EQ(r.verdict, Verdict::pass) << format_report(r);
    EXPECT_EQ(r.kind, "extension");
    ASSERT_TRUE(r.extension);
    EXPECT_EQ(r.extension->format, fmt);
    ASSERT_TRUE(r.load && r.load->extension_functions);
    EXPECT_FALSE(r.load->extension_functions->empty());
    ASSERT_TRUE(r.timing) << format_report(r);
    EXPECT_GT(r.timing->speedup.point, 0.05);
    EXPECT_TRUE(r.timing->outputs_right_after_timing);
    // Every check the kernel kind runs ran here too, and passed.
    ASSERT_TRUE(r.anticheat);
    std::set<std::string> ran;
    for (const auto& c : r.anticheat->checks) ran.insert(c.name);
    for (const char* c :
         {"inputs_unchanged", "buffer_bounds", "kernel_activity", "timed_calls_verified", "library_kernels", "host_threads"})
      EXPECT_TRUE(ran.count(c)) << c << " did not run\n" << format_report(r);
    // Every kernel of the calls was attributed: the candidate's own, launched from its library.
    for (const auto& c : r.anticheat->checks) {
      if (c.name != "library_kernels") continue;
      std::cout << "library_kernels evidence: " << c.evidence.dump() << "\n";
      ASSERT_FALSE(c.evidence.contains("unavailable")) << c.evidence.dump();
      EXPECT_GT(c.evidence["kernels_by_origin"].value("candidate", 0), 0) << c.evidence.dump();
      EXPECT_EQ(c.evidence["refused_kernels"], 0) << c.evidence.dump();
    }
    // The profile sees the candidate's own kernel (an extension's kernels are whatever its call launched).
    ASSERT_TRUE(r.profile);
    EXPECT_FALSE(r.profile->kernels.empty()) << format_report(r);
    std::cout << format_report(r);
    // The second request reuses the library the worker loaded, and the build's cache.
    EvalReport again = ev.evaluate(task, Candidate::load_extension(path), opt);
    EXPECT_EQ(again.verdict, Verdict::pass) << format_report(again);
    ASSERT_TRUE(again.load && again.extension);
    EXPECT_TRUE(again.load->module_cached);
    EXPECT_TRUE(again.extension->library_cached);
  }
}

// Every entry as its expect.yaml says: an exploit refused by its check, or a boundary entry
// (`verdict: pass`, e.g. reduced_mantissa: within the float32 contract) accepted.
TEST(ExtensionEvalGpu, EveryExtensionExploitIsRefusedByItsCheck) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(config());
  ev.set_anticheat(AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml"));
  int entries = 0;
  for (const auto& d : fs::directory_iterator(fs::path(source_dir()) / "anticheat" / "corpus" / "extension")) {
    if (!fs::exists(d.path() / "expect.yaml")) continue;
    ++entries;
    const std::string name = d.path().filename().string();
    SCOPED_TRACE(name);
    YamlNode e = YamlNode::load_file((d.path() / "expect.yaml").string());
    const std::string verdict = e.req<std::string>("verdict"), check = e.req<std::string>("check"), base = e.req<std::string>("base");
    const TaskSpec task = load_task(task_path(e.req<std::string>("task")));
    e.check_no_unknown_keys();
    Candidate c = Candidate::load_extension(source_dir() + "/" + base);
    for (const auto& [rel, text] : read_extension_files(d.path().string(), false)) c.files[rel] = text;
    c.dir = d.path().string();
    EvalOptions opt;
    opt.trials = 5;
    EvalReport r = ev.evaluate(task, c, opt);
    print_row(name, r);
    const bool as_expected = one_of(verdict, verdict_name(r.verdict)) && one_of(check, fired(r));
    EXPECT_TRUE(as_expected) << "expected " << verdict << " (" << check << "), got " << verdict_name(r.verdict) << " (" << fired(r) << ")\n"
                             << format_report(r) << "\nanti-cheat: " << (r.anticheat ? to_json(*r.anticheat).dump() : "none")
                             << "\nverify: " << (r.verify ? to_json(*r.verify).dump().substr(0, 4000) : "none");
  }
  EXPECT_GE(entries, 36);
}

// ATen and cuBLAS compute inside C++ is refused by default and passes where the config allows those
// libraries (CUDA Agent's rules allow cuBLAS for GEMMs): the decision is the config's, made from
// what ran, with the launching libraries named in the evidence.
TEST(ExtensionEvalGpu, LibraryKernelsPassOnlyWhereTheConfigAllowsThem) {
  KFORGE_SKIP_WITHOUT_CUDA();
  const TaskSpec task = load_task(task_path("linear_relu"));
  const fs::path dir = fs::path(source_dir()) / "anticheat" / "corpus" / "extension" / "aten_compute";
  Candidate c = Candidate::load_extension(source_dir() + "/datasets/samples/extension_candidates/linear_relu/cuda_agent");
  for (const auto& [rel, text] : read_extension_files(dir.string(), false)) c.files[rel] = text;
  c.dir = dir.string();
  EvalOptions opt;
  opt.trials = 5;
  for (const bool allowed : {false, true}) {
    SCOPED_TRACE(allowed ? "aten and cublas allowed" : "default config");
    AnticheatConfig ac = AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml");
    if (allowed) ac.dynamic.extension_libraries = {"aten", "cublas"};
    Evaluator ev(config());
    ev.set_anticheat(ac);
    EvalReport r = ev.evaluate(task, c, opt);
    print_row(allowed ? "aten_compute (allowed)" : "aten_compute (default)", r);
    ASSERT_TRUE(r.anticheat) << format_report(r);
    const CheckOutcome* lk = nullptr;
    for (const auto& k : r.anticheat->checks)
      if (k.name == "library_kernels") lk = &k;
    ASSERT_TRUE(lk) << format_report(r);
    std::cout << "library_kernels evidence: " << lk->evidence.dump() << "\n";
    EXPECT_GT(lk->evidence["kernels_by_origin"].value("aten", 0) + lk->evidence["kernels_by_origin"].value("cublas", 0), 0)
        << lk->evidence.dump();
    EXPECT_EQ(lk->evidence["kernels_by_origin"].value("candidate", 0), 0) << lk->evidence.dump();
    if (allowed) {
      EXPECT_EQ(r.verdict, Verdict::pass) << format_report(r);
      EXPECT_TRUE(lk->passed);
    } else {
      EXPECT_EQ(r.verdict, Verdict::cheat) << format_report(r);
      EXPECT_EQ(fired(r), "library_kernels");
    }
  }
}

// Issue 30: an extension is verified at the task's other shapes too, called on inputs of those
// shapes (it has no launch plan to resolve). The honest load_inline sample reads its sizes from its
// tensors, so it follows them; what each trial gave is printed.
TEST(ExtensionEvalGpu, AnExtensionIsVerifiedAtTheTasksOtherShapes) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg = config();
  cfg.verify.extra_shape_trials = 1;
  Evaluator ev(cfg);
  TaskSpec task = load_task(task_path("linear_relu"));
  task.extra_dims = {{{"M", 1}}, {{"K", 1023}, {"M", 333}, {"N", 517}}};
  const std::string path = source_dir() + "/datasets/samples/extension_candidates/linear_relu/load_inline/model_new.py";
  EvalOptions opt;
  opt.trials = 2;
  opt.time = false;
  EvalReport r = ev.evaluate(task, Candidate::load_extension(path), opt);
  std::cout << format_report(r);
  ASSERT_EQ(r.verdict, Verdict::pass) << format_report(r);
  ASSERT_TRUE(r.shapes);
  ASSERT_EQ(r.shapes->trials.size(), 3u) << "both shapes and the strided layout ran: " << format_report(r);
  EXPECT_EQ(r.shapes->trials[2].layout, "noncontiguous");
  for (const auto& t : r.shapes->trials) EXPECT_EQ(t.verdict, Verdict::pass) << t.layout << ": " << t.reason;
  EXPECT_TRUE(r.shapes->general()) << "the honest GEMM follows its tensors' shapes";
}

// Issue 30: an empty batch and a strided input. The shipped CUDA-Agent binding makes x contiguous
// and launches nothing over no rows, so it is general; the same binding without either reads the
// strided x as if it were contiguous (wrong values) and launches a grid of no block at M = 0 (a
// launch error its code never checked): not_general, each trial saying why.
TEST(ExtensionEvalGpu, AnEmptyBatchAndStridedInputsTellAGeneralBindingFromANaiveOne) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg = config();
  cfg.verify.extra_shape_trials = 1;
  Evaluator ev(cfg);
  TaskSpec task = load_task(task_path("linear_relu"));
  task.extra_dims = {{{"M", 0}}};
  const std::string base = source_dir() + "/datasets/samples/extension_candidates/linear_relu/cuda_agent";
  EvalOptions opt;
  opt.trials = 2;
  opt.time = false;
  EvalReport general = ev.evaluate(task, Candidate::load_extension(base), opt);
  std::cout << format_report(general);
  ASSERT_EQ(general.verdict, Verdict::pass) << format_report(general);
  ASSERT_TRUE(general.shapes);
  ASSERT_EQ(general.shapes->trials.size(), 2u) << format_report(general);
  EXPECT_EQ(general.shapes->trials[0].dims.at("M"), 0);
  EXPECT_EQ(general.shapes->trials[1].layout, "noncontiguous");
  for (const auto& t : general.shapes->trials) EXPECT_EQ(t.verdict, Verdict::pass) << t.layout << ": " << t.reason;
  EXPECT_TRUE(general.shapes->general());

  Candidate naive = Candidate::load_extension(base);
  const std::string binding = "kernels/linear_relu_binding.cpp";
  ASSERT_TRUE(naive.files.count(binding));
  for (const char* line : {"  x = x.contiguous();\n", "  weight = weight.contiguous();\n",
                           "  if (out.numel() == 0) return out;  // an empty batch: no block to launch\n"}) {
    const size_t at = naive.files[binding].find(line);
    ASSERT_NE(at, std::string::npos) << line;
    naive.files[binding].erase(at, std::string(line).size());
  }
  naive.dir += "#naive";
  EvalReport r = ev.evaluate(task, naive, opt);
  std::cout << format_report(r);
  ASSERT_EQ(r.verdict, Verdict::pass) << "right with the contiguous inputs of the task's own shape: " << format_report(r);
  ASSERT_TRUE(r.shapes);
  EXPECT_EQ(r.shapes->status, "not_general");
  ASSERT_EQ(r.shapes->trials.size(), 2u);
  EXPECT_EQ(r.shapes->trials[0].verdict, Verdict::error) << r.shapes->trials[0].reason;
  EXPECT_NE(r.shapes->trials[0].reason.find("launch"), std::string::npos) << r.shapes->trials[0].reason;
  EXPECT_EQ(r.shapes->trials[1].verdict, Verdict::fail) << r.shapes->trials[1].reason;
}
