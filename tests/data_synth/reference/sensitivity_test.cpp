// Every input matters (data_synth/reference/sensitivity.h) on real tasks, on the CPU: a min/max whose
// one side always wins and a gate whose branch never fires are refused naming the input; a scalar
// loss's ablation figure is recorded as the numbers give it; the shipped samples and the imported
// fixture's tasks pass the input checks.
#include "data_synth/reference/sensitivity.h"

#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "data_synth/reference/reference.h"
#include "data_synth/synth/cpu_checks.h"
#include "env/judge/draw_kernel.h"
#include "tests/env/evaluator/candidates.h"

using namespace kforge;
using kforge::testing::task_path;

namespace {

// A graph task at small dims with stated draws (`arguments` lists every argument in order).
TaskSpec task(const std::string& inputs, const std::string& nodes, const std::string& arguments, const std::string& dtype = "float32",
              const std::string& dims = "{B: 8, D: 64}") {
  std::string y = "kforge_task: 1\nid: t\nsource: synth\nsplit: train\nseed: 11\ndtype: " + dtype + "\ndims: " + dims +
                  "\ncheck_dims: " + dims + "\ngraph:\n  inputs: " + inputs + "\n  nodes:\n" + nodes + "  outputs: [out]\n" +
                  (arguments.empty() ? "" : "arguments:\n" + arguments) + "provenance: {generator: test}\n";
  return parse_task(y, "t.yaml");
}

const InputSensitivity& input(const SensitivityReport& r, const std::string& name) {
  for (const auto& s : r.inputs)
    if (s.name == name) return s;
  throw std::runtime_error("no input " + name);
}

const at::Device kCpu(at::kCPU);

// The figures of two reports agree input by input.
void expect_same_report(const SensitivityReport& a, const SensitivityReport& b) {
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  EXPECT_EQ(a.reference_runs, b.reference_runs);
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].moved_whole, b.inputs[i].moved_whole);
    EXPECT_EQ(a.inputs[i].moved_row, b.inputs[i].moved_row);
    EXPECT_EQ(a.inputs[i].ablation_rate_plain, b.inputs[i].ablation_rate_plain);
    EXPECT_EQ(a.inputs[i].best_member, b.inputs[i].best_member);
  }
}

}  // namespace

TEST(Sensitivity, AMinimumWhoseOtherSideAlwaysWinsIsRefusedNamingIt) {
  // y ~ normal(100, 1) is never below x ~ normal(0, 1): minimum(x, y) is x, y is never read.
  TaskSpec t = task("[{name: x, shape: [B, D]}, {name: y, shape: [B, D]}]", "    - {id: out, op: minimum, in: [x, y]}\n",
                    "  - {name: x, draw: {dist: normal, mean: 0, std: 1}}\n  - {name: y, draw: {dist: normal, mean: 100, std: 1}}\n");
  SensitivityOptions o;
  o.ablation_trials = 4;
  SensitivityReport r = check_sensitivity(t, kCpu, o);
  EXPECT_FALSE(r.inputs_matter);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.reason_code, "input_matters");
  EXPECT_EQ(r.reason, "input y: replacing it by a constant leaves every output within tolerance on the task's draws") << r.reason;
  EXPECT_TRUE(input(r, "x").matters());
  EXPECT_FALSE(input(r, "y").matters_whole);
  EXPECT_EQ(input(r, "y").moved_whole, 0);
  // The family diagnosis leaves the verdict alone and says which other member, if any, would make y
  // count (row_scaled scales rows of x by up to 2^8, past y).
  SensitivityOptions diag = o;
  diag.family_diagnosis = true;
  SensitivityReport d = check_sensitivity(t, kCpu, diag);
  EXPECT_FALSE(d.inputs_matter);
  EXPECT_EQ(d.reason, r.reason);
  EXPECT_FALSE(input(d, "y").whole_member.empty());
  EXPECT_TRUE(input(d, "x").whole_member.empty()) << "x matters under plain: not diagnosed";
  std::cout << "minimum: y matters under member " << input(d, "y").whole_member << "\n";
  // The synthesis filter refuses it too; with the sides drawn alike it keeps it.
  EXPECT_EQ(cpu_reference_verdict(t, {}), "input_matters");
  TaskSpec fair = task("[{name: x, shape: [B, D]}, {name: y, shape: [B, D]}]", "    - {id: out, op: minimum, in: [x, y]}\n", "");
  EXPECT_EQ(cpu_reference_verdict(fair, {}), "");
  EXPECT_TRUE(check_sensitivity(fair, kCpu, o).inputs_matter);
}

TEST(Sensitivity, AGateWhoseBranchNeverFiresIsRefusedNamingTheBranch) {
  // where(x > th, a, b) with x ~ normal(0, 1) and th ~ normal(10, 1): always b; a is never read.
  TaskSpec t = task("[{name: a, shape: [B, D]}, {name: b, shape: [B, D]}, {name: x, shape: [B, D]}, {name: th, shape: [D]}]",
                    "    - {id: g, op: gt, in: [x, th]}\n    - {id: out, op: where, in: [g, a, b]}\n",
                    "  - {name: a}\n  - {name: b}\n  - {name: x}\n  - {name: th, draw: {dist: normal, mean: 10, std: 1}}\n");
  SensitivityOptions o;
  o.ablation_trials = 0;
  SensitivityReport r = check_sensitivity(t, kCpu, o);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.reason, "input a: replacing it by a constant leaves every output within tolerance on the task's draws") << r.reason;
  EXPECT_FALSE(input(r, "a").matters());
  EXPECT_TRUE(input(r, "b").matters());
  EXPECT_FALSE(input(r, "x").matters()) << "nor does the condition's input";
  EXPECT_EQ(cpu_reference_verdict(t, {}), "input_matters");
}

TEST(Sensitivity, ARowThatRarelyCountsIsRefusedByTheRowCheck) {
  // amax over dimension 0 of 64 rows and 4 columns: one row replaced by the mean changes the answer
  // only where it held a column's maximum (about 4 draws in 64), so on the task's draws it does not;
  // the whole input and one column replaced by the mean do.
  TaskSpec t = task("[{name: x, shape: [B, D]}]", "    - {id: out, op: amax, in: [x], attrs: {dim: 0}}\n", "", "float32", "{B: 64, D: 4}");
  SensitivityOptions o;
  o.ablation_trials = 0;
  SensitivityReport r = check_sensitivity(t, kCpu, o);
  const InputSensitivity& x = input(r, "x");
  EXPECT_TRUE(x.matters_whole);
  EXPECT_FALSE(x.matters_row);
  EXPECT_TRUE(x.matters_channel);
  EXPECT_EQ(r.reason_code, "input_matters");
  EXPECT_EQ(r.reason.rfind("input x: replacing one row (a slice along dimension 0) by its mean leaves every output within tolerance", 0),
            0u)
      << r.reason;
  // Without the slices only the whole-argument ablation runs: the task passes.
  o.slices = false;
  SensitivityReport w = check_sensitivity(t, kCpu, o);
  EXPECT_TRUE(w.inputs_matter) << w.reason;
  EXPECT_FALSE(input(w, "x").moved_row.has_value());
}

TEST(Sensitivity, AMeanLossRecordsItsAblationFigureAsTheNumbersGiveIt) {
  // mse_loss(x, z), a scalar mean over B * C * D elements. float32, 2 x 4 x 64: 1 % of x (5
  // elements) replaced by its mean moves the loss by about 5 * (x^2 - 2 x z) / 512 ~ 1e-2, against
  // a tolerance of about 3e-4: every trial leaves on the task's own draw. bfloat16, 2 x 2 x 32: a
  // row or a channel (half the elements) moves the loss far beyond 1e-2 + 1e-2 * 2, but 1 % (one
  // element, about (1 +- 2.4) / 128) mostly does not, on any member: the task fails the ablation.
  struct Case {
    std::string dtype, dims;
  };
  for (const Case& c : {Case{"float32", "{B: 2, C: 4, D: 64}"}, Case{"bfloat16", "{B: 2, C: 2, D: 32}"}}) {
    TaskSpec t = task("[{name: x, shape: [B, C, D]}, {name: z, shape: [B, C, D]}]", "    - {id: out, op: mse_loss, in: [x, z]}\n", "",
                      c.dtype, c.dims);
    SensitivityReport r = check_sensitivity(t, kCpu, {});
    EXPECT_TRUE(r.inputs_matter) << c.dtype << ": " << r.reason;
    ASSERT_EQ(r.inputs.size(), 2u);
    double lowest = 1;
    for (const auto& s : r.inputs) {
      ASSERT_TRUE(s.ablation_rate_plain) << s.name;
      ASSERT_TRUE(s.ablation_rate_best) << s.name;
      std::cout << c.dtype << " " << s.name << ": plain " << *s.ablation_rate_plain << ", best " << s.best_member << " "
                << *s.ablation_rate_best << "\n";
      EXPECT_GE(*s.ablation_rate_plain, 0);
      EXPECT_LE(*s.ablation_rate_plain, 1);
      EXPECT_GE(*s.ablation_rate_best, *s.ablation_rate_plain);
      EXPECT_FALSE(s.best_member.empty());
      // a rate is a count of 16 trials
      EXPECT_DOUBLE_EQ(*s.ablation_rate_best * 16, std::round(*s.ablation_rate_best * 16));
      lowest = std::min(lowest, *s.ablation_rate_best);
      if (*s.ablation_rate_plain >= 0.99) {
        EXPECT_EQ(s.best_member, "plain");
      }
    }
    ASSERT_TRUE(r.min_best_ablation_rate);
    EXPECT_DOUBLE_EQ(*r.min_best_ablation_rate, lowest);
    EXPECT_EQ(r.ablation_passed, lowest >= 0.99) << c.dtype;
    EXPECT_EQ(r.reason_code, r.ablation_passed ? "" : "ablation") << c.dtype;
    if (c.dtype == "float32") {
      EXPECT_DOUBLE_EQ(*input(r, "x").ablation_rate_plain, 1.0);
      EXPECT_EQ(input(r, "x").best_member, "plain");
      EXPECT_TRUE(r.passed());
    } else {
      EXPECT_LT(*input(r, "x").ablation_rate_plain, 0.99) << "bfloat16's tolerance hides 1 % of the elements on the task's draw";
      EXPECT_FALSE(r.passed());
      EXPECT_EQ(r.reason_code, "ablation");
      EXPECT_EQ(r.reason.rfind("input x: replacing 1 % of its elements by its mean leaves the tolerance on fewer than 99 % of 16 trials "
                               "under every member of the draw family (plain ",
                               0),
                0u)
          << r.reason;
    }
  }
}

TEST(Sensitivity, TheReportIsAFunctionOfTheTaskAndTheSeed) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  SensitivityOptions o;
  o.ablation_trials = 4;
  expect_same_report(check_sensitivity(t, kCpu, o), check_sensitivity(t, kCpu, o));
}

// kforge tasks sensitivity --device cuda draws through the hook with the GPU worker's draw kernel;
// here its element code compiled for the host (fill_draw_like_device) stands in for it: every draw
// goes through the hook, and the report is the one the host draws give.
TEST(Sensitivity, DrawsThroughTheHookGiveTheSameReport) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  SensitivityOptions o;
  o.ablation_trials = 4;
  SensitivityReport host = check_sensitivity(t, kCpu, o);
  int calls = 0;
  o.draw = [&calls](const TaskSpec& task, const DrawKey& key) {
    ++calls;
    std::vector<at::Tensor> args;
    for (size_t i = 0; i < task.arguments.size(); ++i) {
      const TensorMeta& m = task.arguments[i].decl.meta;
      args.push_back(at::empty(m.shape, at::TensorOptions().dtype(to_scalar_type(m.dtype))));
      fill_draw_like_device(task.arguments[i].draw, m.dtype, draw_stream(key, i), args.back().numel(), args.back().data_ptr());
    }
    return args;
  };
  SensitivityReport hooked = check_sensitivity(t, kCpu, o);
  EXPECT_GE(calls, o.draws + 4);  // (a)-(c)'s draws and (d)'s trials
  expect_same_report(host, hooked);
}

TEST(Sensitivity, EveryShippedSampleTaskPassesTheInputChecks) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& f : fs::directory_iterator(fs::path(kforge::testing::source_dir()) / "datasets" / "samples")) {
    if (f.path().extension() != ".yaml") continue;
    TaskSpec t = load_task(f.path().string()).at_check_dims();
    SensitivityOptions o;
    o.ablation_trials = 0;
    SensitivityReport r = check_sensitivity(t, kCpu, o);
    EXPECT_TRUE(r.inputs_matter) << t.id << ": " << r.reason;
    EXPECT_FALSE(r.inputs.empty()) << t.id;
    ++n;
  }
  EXPECT_EQ(n, 13);
}

TEST(Sensitivity, TheImportedFixturesTasksPassTheInputChecks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(KFORGE_IMPORTED_FIXTURE_DIR) / "tasks";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " (tests/data_synth/make_imported_tasks.py writes it)";
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    TaskSpec t = load_task(f.path().string());
    SensitivityOptions o;
    o.ablation_trials = 0;
    SensitivityReport r = check_sensitivity(t, kCpu, o);
    EXPECT_TRUE(r.inputs_matter) << t.id << ": " << r.reason;
    ++n;
  }
  EXPECT_GE(n, 5);
}
