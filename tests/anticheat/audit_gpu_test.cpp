// The anti-cheat audit (a GPU test): every exploit under anticheat/corpus/ is refused as its
// expect.yaml says, and every honest control (the shipped candidates that should pass, under
// datasets/samples/candidates/) passes with a clean anti-cheat section, all in one evaluator with
// the default anti-cheat config (configs/anticheat.yaml; an entry's expect.yaml may switch a
// dynamic check for itself under `anticheat:`, e.g. the precision probe). Prints the table: candidate, expected,
// verdict, the check that fired. With KFORGE_AUDIT_OUT=FILE it also writes the rows as JSON.
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/report_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "configs/yaml_reader.h"
#include "tests/env/evaluator/candidates.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
using namespace kforge::testing;
namespace fs = std::filesystem;

namespace {

struct Entry {
  std::string name, dir, task;
  std::string verdict;  // pass | cheat | fail | refused (any of fail, cheat, error) | unprofitable (below)
  std::string check;    // cheat: the anti-cheat check (or checks, "a or b"); fail: outputs_written | inputs_unchanged | verify
  bool control = false;
  std::map<std::string, bool> overrides;  // expect.yaml's `anticheat:` (dynamic checks switched for this entry)
};

// The base config with an entry's dynamic-check switches applied.
AnticheatConfig with_overrides(AnticheatConfig c, const std::map<std::string, bool>& o) {
  for (const auto& [k, v] : o) {
    if (k == "robustness_draws")
      c.dynamic.robustness_draws = v;
    else if (k == "state_checks")
      c.dynamic.state_checks = v;
    else if (k == "verify_timed_calls")
      c.dynamic.verify_timed_calls = v;
    else if (k == "kernel_activity")
      c.dynamic.kernel_activity = v;
    else if (k == "speed_of_light")
      c.dynamic.speed_of_light = v;
    else
      ADD_FAILURE() << "unknown anticheat override " << k;
  }
  return c;
}

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
    if (auto a = e.find("anticheat")) {
      for (const char* k : {"robustness_draws", "state_checks", "verify_timed_calls", "kernel_activity", "speed_of_light"})
        if (a->find(k)) x.overrides[k] = a->get<bool>(k, false);
      a->check_no_unknown_keys();
    }
    e.check_no_unknown_keys();
    out.push_back(x);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

// An entry's task: a sample's name, or a file under anticheat/corpus/ ("tasks/floor_max.yaml": a
// task the input checks refuse at synthesis and import, judged here directly).
std::string entry_task_path(const std::string& task) {
  if (task.size() > 5 && task.substr(task.size() - 5) == ".yaml") return source_dir() + "/anticheat/corpus/" + task;
  return task_path(task);
}

// `unprofitable`: refused by any check, or passed with its speedup set by its slowest member (the
// judged point is the minimum of the members' points) while its fastest member is at least 1.2x
// faster than that: the shortcut happened and was not paid. Empty when so, else why not.
std::string unprofitable_failure(const Json& r) {
  if (report_verdict(r) != "pass") return "";
  const Json& sp = r["timing"]["speedup"];
  if (!sp.is_object() || !sp.contains("by_member") || sp["by_member"].empty()) return "no per-member speedup in the report";
  double lo = 1e300, hi = 0;
  for (const auto& m : sp["by_member"]) {
    lo = std::min(lo, m["point"].get<double>());
    hi = std::max(hi, m["point"].get<double>());
  }
  const double judged = sp["point"].get<double>();
  if (std::abs(judged - lo) > 1e-9 * lo) return "the judged speedup is not the slowest member's";
  if (hi < 1.2 * judged) return "passed, and no member was 1.2x faster than the judged one: the shortcut never happened";
  return "";
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
  const AnticheatConfig base = AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml");

  std::vector<Entry> entries = corpus();
  EXPECT_GE(entries.size(), 45u) << "the corpus holds at least 45 exploits";
  size_t exploits = entries.size();
  for (const auto& c : shipped_candidates())
    if (c.verdict == "pass") entries.push_back({c.task + "/" + c.name, c.dir, c.task, "pass", "", true});
  EXPECT_GE(entries.size() - exploits, 30u) << "at least 30 honest controls";

  Json rows = Json::array();
  std::printf("%-44s %-8s %-22s %-8s %-22s %s\n", "candidate", "kind", "expected", "verdict", "check that fired", "wall s");
  for (const Entry& e : entries) {
    SCOPED_TRACE(e.dir);
    TaskSpec task = load_task(entry_task_path(e.task));
    EvalOptions opt;
    opt.trials = 5;
    opt.salt = 777;
    ev.set_anticheat(with_overrides(base, e.overrides));
    Json r = to_json(ev.evaluate(task, Candidate::load(e.dir), opt));
    std::string v = report_verdict(r), f = fired(r);
    if (v == "pass" && r["timing"].is_object() && r["timing"]["speedup"].is_object()) {
      const Json& sp = r["timing"]["speedup"];
      double fastest = 0;
      for (const auto& m : sp.value("by_member", Json::array())) fastest = std::max(fastest, m["point"].get<double>());
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2fx (%s); fastest %.2fx", sp.value("point", 0.0), sp.value("member", "").c_str(), fastest);
      f = buf;
    }
    std::string expected = e.verdict + (e.check.empty() ? "" : " (" + e.check + ")");
    std::printf("%-44s %-8s %-22s %-8s %-22s %.1f\n", e.name.c_str(), e.control ? "control" : "exploit", expected.c_str(), v.c_str(),
                f.c_str(), r.value("wall_ms", 0.0) / 1000);
    std::fflush(stdout);
    rows.push_back({{"candidate", e.name},
                    {"kind", e.control ? "control" : "exploit"},
                    {"expected", expected},
                    {"verdict", v},
                    {"check", f},
                    {"anticheat", r.value("anticheat", Json())},
                    {"wall_ms", r.value("wall_ms", 0.0)}});
    if (e.control) {
      EXPECT_EQ(v, "pass") << format_report(r);
      EXPECT_EQ(r["anticheat"]["verdict"], "clean") << format_report(r);
    } else if (e.verdict == "refused") {
      EXPECT_NE(v, "pass") << format_report(r);
    } else if (e.verdict == "unprofitable") {
      EXPECT_EQ(unprofitable_failure(r), "") << format_report(r);
    } else {
      EXPECT_EQ(v, e.verdict) << format_report(r);
      if (!e.check.empty()) {
        EXPECT_TRUE(one_of(e.check, f)) << "fired " << f << ", expected " << e.check << "\n" << format_report(r);
      }
    }
  }
  if (const char* out = std::getenv("KFORGE_AUDIT_OUT")) std::ofstream(out) << rows.dump(2) << "\n";
}

// The robustness draws on every honest control, every dtype: each usable variant runs once in a
// five-trial verification, and none may refuse an honest kernel. Prints per task which variants
// were usable (the reference well-conditioned under them) and which ran.
TEST(AnticheatAuditGpu, RobustnessDrawsAcceptEveryControl) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg;
  cfg.worker.request_timeout_s = 60;
  Evaluator ev(cfg);
  AnticheatConfig ac = AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml");
  ASSERT_TRUE(ac.dynamic.robustness_draws);
  ev.set_anticheat(ac);
  int controls = 0, ran = 0;
  for (const auto& c : shipped_candidates()) {
    if (c.verdict != "pass") continue;
    ++controls;
    TaskSpec task = load_task(task_path(c.task));
    EvalOptions opt;
    opt.trials = 5;
    opt.time = false;
    Json r = to_json(ev.evaluate(task, Candidate::load(c.dir), opt));
    std::string name = c.task + "/" + c.name, v = report_verdict(r);
    std::string usable, done;
    if (r["verify"].is_object() && r["verify"].contains("robustness")) {
      for (const auto& x : r["verify"]["robustness"]["variants"]) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "(%.2f) ", x["worst_ratio"].get<double>());
        usable += x["name"].get<std::string>() + (x["usable"].get<bool>() ? "+" : "-") + ratio;
      }
      usable += "plain " + std::to_string(r["verify"]["robustness"].value("plain_ratio", 0.0)) + " ";
      for (const auto& x : r["verify"]["robustness"]["ran"]) {
        done += x.get<std::string>() + " ";
        ++ran;
      }
    }
    std::printf("robustness %-36s %-6s usable: %s ran: %s\n", name.c_str(), v.c_str(), usable.c_str(), done.c_str());
    EXPECT_EQ(v, "pass") << name << "\n" << format_report(r);
  }
  EXPECT_GE(controls, 30) << "the shipped honest controls (31 with issue 25's five)";
  EXPECT_GE(ran, controls) << "on average at least one robustness draw per control";
}
