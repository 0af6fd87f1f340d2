#include "configs/yaml_reader.h"

#include <functional>

#include <gtest/gtest.h>

using namespace kforge;

namespace {

Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorKind::internal, "no error thrown");
}

}  // namespace

TEST(YamlReader, UnknownKeyIsAnErrorNamingFileLineKeyAndSuggestion) {
  YamlNode root = YamlNode::parse("timing:\n  warmup_cont: 3\n", "cfg.yaml");
  YamlNode t = root.at("timing");
  EXPECT_EQ(t.get<int>("warmup_count", 7), 7);
  Error e = error_of([&] { t.check_no_unknown_keys(); });
  EXPECT_EQ(e.kind(), ErrorKind::config);
  EXPECT_STREQ(e.what(), "cfg.yaml:2:3: timing.warmup_cont: unknown key (did you mean 'warmup_count'?)");
}

TEST(YamlReader, UnknownKeyFarFromAnyKnownListsTheKnownKeys) {
  YamlNode root = YamlNode::parse("alpha: 1\nzzzzzzzz: 2\n", "c.yaml");
  root.get<int>("alpha", 0);
  root.get<int>("beta", 0);
  Error e = error_of([&] { root.check_no_unknown_keys(); });
  EXPECT_NE(std::string(e.what()).find("known keys: alpha beta"), std::string::npos) << e.what();
}

TEST(YamlReader, WrongTypesAreErrorsNamingTheKey) {
  YamlNode root = YamlNode::parse("a: 1.5\nb: yes\nc: [1, 2]\nd: abc\n", "f.yaml");
  EXPECT_NE(std::string(error_of([&] { root.req<int>("a"); }).what()).find("f.yaml:1:4: a: expected an integer, found '1.5'"),
            std::string::npos);
  EXPECT_NE(std::string(error_of([&] { root.req<bool>("b"); }).what()).find("b: expected true or false, found 'yes'"), std::string::npos);
  EXPECT_NE(std::string(error_of([&] { root.req<std::string>("c"); }).what()).find("c: expected a string, found a list"),
            std::string::npos);
  EXPECT_NE(std::string(error_of([&] { root.req<double>("d"); }).what()).find("d: expected a number, found 'abc'"), std::string::npos);
}

TEST(YamlReader, MissingRequiredKeyNamesIt) {
  YamlNode root = YamlNode::parse("x: 1\n", "f.yaml");
  Error e = error_of([&] { root.at("y"); });
  EXPECT_NE(std::string(e.what()).find("missing required key 'y'"), std::string::npos) << e.what();
}

TEST(YamlReader, MalformedYamlGivesLocationAndKind) {
  Error e = error_of([] { YamlNode::parse("a: [1, 2\n", "bad.yaml", ErrorKind::spec); });
  EXPECT_EQ(e.kind(), ErrorKind::spec);
  EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("not valid YAML"), std::string::npos);
}

TEST(YamlReader, MissingFileIsAnIoError) {
  Error e = error_of([] { YamlNode::load_file("/nonexistent/kforge.yaml"); });
  EXPECT_EQ(e.kind(), ErrorKind::io);
  EXPECT_NE(std::string(e.what()).find("/nonexistent/kforge.yaml: cannot open file"), std::string::npos);
}

TEST(YamlReader, SequenceItemsCarryTheirIndexInThePath) {
  YamlNode root = YamlNode::parse("xs:\n  - {n: 1}\n  - {n: oops}\n", "s.yaml");
  auto items = root.at("xs").items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].req<int>("n"), 1);
  Error e = error_of([&] { items[1].req<int>("n"); });
  EXPECT_NE(std::string(e.what()).find("xs[1].n: expected an integer"), std::string::npos) << e.what();
}

TEST(ClosestMatch, SuggestsOnlyCloseWords) {
  EXPECT_EQ(closest_match("gleu", {"gelu", "relu", "silu"}), "gelu");
  EXPECT_EQ(closest_match("completely_different", {"gelu", "relu"}), "");
}
