// The anti-cheat audit (a GPU test): every exploit under anticheat/corpus/ is refused as its
// expect.yaml says, and every honest control (the shipped candidates that should pass, under
// datasets/samples/candidates/) passes with a clean anti-cheat section, all in one evaluator with
// the default anti-cheat config (configs/anticheat.yaml). Prints the table: candidate, expected,
// verdict, the check that fired. With KFORGE_AUDIT_OUT=FILE it also writes the rows as JSON.
#include "env/evaluator.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <gtest/gtest.h>

#include "configs/yaml_reader.h"
#include "tests/env/candidates.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
using namespace kforge::testing;
namespace fs = std::filesystem;

namespace {

struct Entry {
  std::string name, dir, task;
  std::string verdict;  // pass | cheat | fail | refused (any of fail, cheat, error)
  std::string check;    // cheat: the anti-cheat check; fail: outputs_written | inputs_unchanged | verify
  bool control = false;
};

std::vector<Entry> corpus() {
  std::vector<Entry> out;
  for (const auto& d : fs::directory_iterator(fs::path(source_dir()) / "anticheat" / "corpus")) {
    if (!fs::exists(d.path() / "expect.yaml")) continue;
    YamlNode e = YamlNode::load_file((d.path() / "expect.yaml").string());
    Entry x;
    x.name = d.path().filename().string();
    x.dir = d.path().string();
    x.task = e.req<std::string>("task");
    x.verdict = e.req<std::string>("verdict");
    x.check = e.get<std::string>("check", "");
    e.check_no_unknown_keys();
    out.push_back(x);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

// What refused (or passed) it, in a few words.
std::string fired(const Json& r) {
  std::string v = report_verdict(r);
  if (v == "cheat") return r["anticheat"].value("check", "");
  if (v == "error") return r["error"].is_object() ? r["error"].value("kind", "") : "error";
  if (v == "fail") {
    const Json& vf = r["verify"];
    if (vf.is_object()) {
      if (vf.contains("inputs_modified") && !vf["inputs_modified"].empty()) return "inputs_unchanged";
      if (vf.value("reason", "").find("never written") != std::string::npos) return "outputs_written";
      return "verify";
    }
    return "fail";
  }
  return "-";
}

}  // namespace

TEST(AnticheatAuditGpu, EveryExploitRefusedEveryControlAccepted) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg;
  cfg.worker.compile_timeout_s = 20;
  cfg.worker.request_timeout_s = 60;
  cfg.timing.budget_ms = 1500;
  Evaluator ev(cfg);
  ev.set_anticheat(AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml"));

  std::vector<Entry> entries = corpus();
  ASSERT_GE(entries.size(), 15u) << "the corpus holds at least 15 exploits";
  size_t exploits = entries.size();
  for (const auto& c : shipped_candidates())
    if (c.verdict == "pass") entries.push_back({c.task + "/" + c.name, c.dir, c.task, "pass", "", true});
  ASSERT_GE(entries.size() - exploits, 15u) << "at least 15 honest controls";

  Json rows = Json::array();
  std::printf("%-44s %-8s %-22s %-8s %-22s %s\n", "candidate", "kind", "expected", "verdict", "check that fired", "wall s");
  for (const Entry& e : entries) {
    SCOPED_TRACE(e.dir);
    TaskSpec task = load_task(task_path(e.task));
    EvalOptions opt;
    opt.trials = 5;
    opt.salt = 777;
    Json r = ev.evaluate(task, Candidate::load(e.dir), opt);
    std::string v = report_verdict(r), f = fired(r);
    std::string expected = e.verdict + (e.check.empty() ? "" : " (" + e.check + ")");
    std::printf("%-44s %-8s %-22s %-8s %-22s %.1f\n", e.name.c_str(), e.control ? "control" : "exploit", expected.c_str(), v.c_str(),
                f.c_str(), r.value("wall_ms", 0.0) / 1000);
    std::fflush(stdout);
    rows.push_back({{"candidate", e.name}, {"kind", e.control ? "control" : "exploit"}, {"expected", expected}, {"verdict", v},
                    {"check", f}, {"anticheat", r.value("anticheat", Json())}, {"wall_ms", r.value("wall_ms", 0.0)}});
    if (e.control) {
      EXPECT_EQ(v, "pass") << format_report(r);
      EXPECT_EQ(r["anticheat"]["verdict"], "clean") << format_report(r);
    } else if (e.verdict == "refused") {
      EXPECT_NE(v, "pass") << format_report(r);
    } else {
      EXPECT_EQ(v, e.verdict) << format_report(r);
      if (!e.check.empty()) EXPECT_EQ(f, e.check) << format_report(r);
    }
  }
  if (const char* out = std::getenv("KFORGE_AUDIT_OUT")) std::ofstream(out) << rows.dump(2) << "\n";
}
