// configs/anticheat.yaml's `static:` section read into AnticheatConfig (anticheat/static_checks.h):
// the shipped file holds the defaults, every key is read, unknown keys and bad values are errors
// naming the key and the file.
#include "anticheat/static_checks.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::testing::source_dir;

namespace {

std::string config_error(const std::string& yaml) {
  try {
    AnticheatConfig::from_yaml(YamlNode::parse(yaml, "anticheat.yaml"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(AnticheatConfig, ShippedFileLoadsWithTheDefaults) {
  AnticheatConfig c = AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml");
  StaticCheckConfig d;
  EXPECT_EQ(c.static_checks.forbid_timers, d.forbid_timers);
  EXPECT_EQ(c.static_checks.forbid_inline_asm, d.forbid_inline_asm);
  EXPECT_EQ(c.static_checks.forbid_printf, d.forbid_printf);
  EXPECT_EQ(c.static_checks.forbid_global_state, d.forbid_global_state);
  EXPECT_EQ(c.static_checks.forbid_l2_residency, d.forbid_l2_residency);
  EXPECT_EQ(c.static_checks.forbid_launch_identity, d.forbid_launch_identity);
  EXPECT_EQ(c.static_checks.forbidden_identifiers, d.forbidden_identifiers);
  EXPECT_TRUE(d.forbid_timers && !d.forbid_inline_asm && d.forbid_printf && d.forbid_global_state && d.forbid_l2_residency &&
              d.forbid_launch_identity);
}

TEST(AnticheatConfig, ReadsEveryKey) {
  AnticheatConfig c = AnticheatConfig::from_yaml(
      YamlNode::parse("static:\n  forbid_timers: false\n  forbid_inline_asm: true\n  forbid_printf: false\n"
                      "  forbid_global_state: false\n  forbid_l2_residency: false\n  forbid_launch_identity: false\n"
                      "  forbidden_identifiers: [__trap, malloc]\n",
                      "anticheat.yaml"));
  EXPECT_FALSE(c.static_checks.forbid_timers);
  EXPECT_TRUE(c.static_checks.forbid_inline_asm);
  EXPECT_FALSE(c.static_checks.forbid_printf);
  EXPECT_FALSE(c.static_checks.forbid_global_state);
  EXPECT_FALSE(c.static_checks.forbid_l2_residency);
  EXPECT_FALSE(c.static_checks.forbid_launch_identity);
  EXPECT_EQ(c.static_checks.forbidden_identifiers, (std::vector<std::string>{"__trap", "malloc"}));
}

TEST(AnticheatConfig, UnknownKeyIsAnErrorNamingKeyAndFile) {
  EXPECT_EQ(config_error("static:\n  forbid_timer: true\n"),
            "anticheat.yaml:2:3: static.forbid_timer: unknown key (did you mean 'forbid_timers'?)");
  EXPECT_NE(config_error("statik: {}\n").find("anticheat.yaml:1:1: statik: unknown key"), std::string::npos)
      << config_error("statik: {}\n");
}

TEST(AnticheatConfig, BadValuesAreErrorsNamingTheKey) {
  EXPECT_NE(config_error("static: {forbid_printf: 1}\n").find("static.forbid_printf"), std::string::npos)
      << config_error("static: {forbid_printf: 1}\n");
  EXPECT_NE(config_error("static: {forbidden_identifiers: [\"cuda::std::chrono\"]}\n")
                .find("static.forbidden_identifiers: 'cuda::std::chrono' is not an identifier"),
            std::string::npos)
      << config_error("static: {forbidden_identifiers: [\"cuda::std::chrono\"]}\n");
}
