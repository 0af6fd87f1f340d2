// The checks YamlNode::parse makes before and after yaml-cpp reads a text (issue 26): duplicate
// keys, nesting, size and alias expansion are errors with their line, never a crash or a silently
// dropped value.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "configs/yaml_reader.h"

using namespace kforge;

namespace {

std::string error_of(const std::function<void()>& f, ErrorKind want = ErrorKind::config) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(YamlLimits, DuplicateKeyIsRefusedWithBothLines) {
  std::string e = error_of([] { YamlNode::parse("port: 1\nname: a\nport: 2\n", "server.yaml"); });
  EXPECT_EQ(e, "server.yaml:3:1: duplicate key 'port' (first at line 1); a key may appear once in a mapping");
}

TEST(YamlLimits, DuplicateKeyIsRefusedInNestedAndFlowMappings) {
  EXPECT_NE(error_of([] { YamlNode::parse("a:\n  - {x: 1, x: 2}\n", "t.yaml", ErrorKind::spec); }, ErrorKind::spec)
                .find("t.yaml:2:12: duplicate key 'x' (first at line 2)"),
            std::string::npos);
  EXPECT_NE(error_of([] { YamlNode::parse("a:\n  b: 1\n  c: 2\n  b: 3\n", "t.yaml"); }).find("t.yaml:4:3: duplicate key 'b'"),
            std::string::npos);
  // The same key in two different mappings is fine.
  YamlNode ok = YamlNode::parse("a: {x: 1}\nb: {x: 2}\n", "t.yaml");
  EXPECT_EQ(ok.at("b").req<int>("x"), 2);
}

TEST(YamlLimits, ListOrMappingAsKeyIsRefused) {
  EXPECT_NE(error_of([] { YamlNode::parse("? [a, b]\n: 1\n", "k.yaml"); }).find("a key must be a plain value"), std::string::npos);
}

TEST(YamlLimits, DeepFlowNestingIsRefusedBeforeYamlCppRecurses) {
  std::string e = error_of([] { YamlNode::parse("a: " + repeat("[", 150000) + "\n", "deep.yaml"); });
  EXPECT_NE(e.find("deep.yaml:1:68: flow collections nested deeper than 64 levels"), std::string::npos) << e;
  EXPECT_NE(error_of([] { YamlNode::parse(repeat("{a: ", 20000), "deep.yaml"); }).find("nested deeper than 64"), std::string::npos);
}

TEST(YamlLimits, DeepBlockNestingIsRefused) {
  // Compact sequences nest one level per "- " on a single line.
  std::string e = error_of([] { YamlNode::parse(repeat("- ", 20000) + "x\n", "deep.yaml"); });
  EXPECT_NE(e.find("over the limit of 256"), std::string::npos) << e;
  // Under the text bound the exact depth is checked on the tree.
  std::string nested;
  for (int i = 0; i < 70; ++i) nested += std::string(i, ' ') + "k:\n";
  EXPECT_NE(error_of([&] { YamlNode::parse(nested + std::string(70, ' ') + "v\n", "deep.yaml"); }).find("nested deeper than 64 levels"),
            std::string::npos);
  EXPECT_NO_THROW(YamlNode::parse(repeat("[", 60) + repeat("]", 60), "ok.yaml"));
}

TEST(YamlLimits, BracketsInTextDoNotCount) {
  // Quoted scalars, comments, block scalars and brackets inside plain words are text, not nesting.
  std::string text = "a: \"" + repeat("[", 100) + "\"\n" + "b: '" + repeat("{", 100) + "'\n" + "# " + repeat("[", 100) + "\nc: x" +
                     repeat("[", 100) + "\nprogram: |\n  " + repeat("(", 10) + repeat("[", 100) + "\n  don't [\nd: 1\n";
  YamlNode root = YamlNode::parse(text, "text.yaml");
  EXPECT_EQ(root.req<int>("d"), 1);
  EXPECT_EQ(root.req<std::string>("program").substr(10, 3), "[[[");
}

TEST(YamlLimits, OversizedTextIsRefusedBeforeParsing) {
  YamlLimits small;
  small.max_bytes = 64;
  std::string e = error_of([&] { YamlNode::parse("a: " + std::string(100, 'x'), "big.yaml", ErrorKind::spec, small); }, ErrorKind::spec);
  EXPECT_EQ(e, "big.yaml: 103 bytes of YAML, over the limit of 64");
}

TEST(YamlLimits, AliasExpansionIsBounded) {
  // Nine levels of ten aliases each: 10^9 nodes if walked naively.
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + repeat(prev + ", ", 9) + prev + "]\n";
  }
  EXPECT_NE(error_of([&] { YamlNode::parse(text, "bomb.yaml"); }).find("YAML nodes (aliases included)"), std::string::npos);
}
