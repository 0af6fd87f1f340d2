// Scripted policies: the shipped ones load, replay their turns in order, loop when asked, and a
// malformed policy file is an error naming its line.
#include "env/episode/scripted_policy.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "env/episode/tool_call.h"
#include "tests/env/episode/episode_fixtures.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

std::string load_error(const std::string& yaml) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge_policy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "policy.yaml") << yaml;
  std::string what;
  try {
    ScriptedPolicy::load(dir.string());
  } catch (const Error& e) {
    what = e.what();
  }
  remove_tree(dir);
  return what;
}

}  // namespace

TEST(ScriptedPolicy, ReplaysTheDemoPolicyTurnByTurn) {
  ScriptedPolicy p = ScriptedPolicy::load(policy_dir("gelu_fused"));
  EXPECT_EQ(p.name(), "gelu_fused");
  EXPECT_EQ(p.task(), "gelu_scale_residual");
  EXPECT_FALSE(p.loops());
  ASSERT_EQ(p.actions().size(), 7u);
  Json first = *p.next();
  EXPECT_EQ(first["name"], "write_file");
  EXPECT_EQ(first["arguments"]["path"], "kernel.cu");
  EXPECT_EQ(first["arguments"]["content"], read_file(candidate_file("gelu_scale_residual", "fused", "kernel.cu")));
  p.next();
  EXPECT_EQ((*p.next())["name"], "list_files");
  Json text = *p.next();
  ASSERT_TRUE(text.is_string());
  EXPECT_EQ(parse_action(text).call->name, "compile");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(p.next().has_value());
  EXPECT_FALSE(p.next().has_value()) << "the script is over";
}

TEST(ScriptedPolicy, EveryShippedPolicyLoadsAndItsCallsNameKnownTools) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/datasets/samples/policies")) {
    if (!e.is_directory()) continue;
    ScriptedPolicy p = ScriptedPolicy::load(e.path().string());
    EXPECT_FALSE(p.task().empty()) << e.path();
    EXPECT_TRUE(std::filesystem::exists(sample_task(p.task()))) << p.task();
    ++n;
    if (p.name() == "garbage") continue;  // its calls are wrong on purpose
    for (const Json& a : p.actions()) EXPECT_TRUE(parse_action(a).call.has_value()) << e.path() << ": " << a.dump().substr(0, 100);
  }
  EXPECT_GE(n, 6);
}

TEST(ScriptedPolicy, APolicyNamesTheCandidateKindItPlaysAs) {
  ScriptedPolicy ext = ScriptedPolicy::load(policy_dir("linear_relu_extension"));
  EXPECT_EQ(ext.kind(), "extension");
  EXPECT_EQ(ext.reset_options(), (Json{{"kind", "extension"}}));
  EXPECT_EQ(ScriptedPolicy::load(policy_dir("gelu_fused")).reset_options(), Json::object()) << "no kind: the environment's default";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kforge_policy_kind_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "policy.yaml") << "task: linear_relu\nkind: triton\nturns:\n  - {call: compile}\n";
  EXPECT_THROW(ScriptedPolicy::load(dir.string()), Error);
  remove_tree(dir);
}

TEST(ScriptedPolicy, ALoopingPolicyStartsOver) {
  ScriptedPolicy p = ScriptedPolicy::load(policy_dir("endless_compile"));
  ASSERT_TRUE(p.loops());
  size_t n = p.actions().size();
  for (size_t i = 0; i < n; ++i) p.next();
  EXPECT_EQ(*p.next(), p.actions()[0]);
}

TEST(ScriptedPolicy, AMalformedPolicyIsAnErrorNamingItsLine) {
  EXPECT_NE(load_error("turns:\n  - {call: compile, text: hi}\n").find("policy.yaml:2:5: turns[0]: a turn has exactly one of"),
            std::string::npos)
      << load_error("turns:\n  - {call: compile, text: hi}\n");
  EXPECT_NE(load_error("turns:\n  - {write: kernel.cu, from: missing.cu}\n").find("cannot read"), std::string::npos);
  EXPECT_NE(load_error("turns:\n  - {call: compile, argumnets: {}}\n").find("unknown key (did you mean 'arguments'?)"), std::string::npos);
  EXPECT_NE(load_error("turns: []\n").find("must be a non-empty list"), std::string::npos);
  EXPECT_NE(load_error("turn: []\n").find("turns"), std::string::npos);
  EXPECT_THROW(ScriptedPolicy::load("/nonexistent/policy"), Error);
}
