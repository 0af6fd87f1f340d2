// Hostile tool calls (issue 26): whatever a policy sends in a tool call is a sentence for it,
// never a crash, an exception or an `internal` error, and only text outside <think> is run.
#include "env/episode/tool_call.h"

#include <string>

#include <gtest/gtest.h>

using namespace kforge;
using Json = nlohmann::json;

namespace {

// Parses without letting anything escape: a thrown exception fails the test with its text.
ParsedAction parse(const Json& action) {
  try {
    return parse_action(action);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "parse_action threw: " << e.what();
  }
  return {};
}

void expect_refused(const ParsedAction& p, const std::string& why) {
  EXPECT_FALSE(p.call);
  EXPECT_NE(p.error.find(why), std::string::npos) << p.error;
}

}  // namespace

TEST(HostileToolCall, A150000DeepArgumentInHermesTextIsRefusedNotACrash) {
  std::string deep = std::string(150000, '[') + std::string(150000, ']');
  std::string text = "<tool_call>{\"name\": \"compile\", \"arguments\": " + deep + "}</tool_call>";
  expect_refused(parse(Json(text)), "nested deeper than 16 levels");
}

TEST(HostileToolCall, A150000DeepOpenAiArgumentsStringIsRefusedNotACrash) {
  std::string deep = std::string(150000, '[') + std::string(150000, ']');
  Json call = {{"type", "function"}, {"function", {{"name", "write_file"}, {"arguments", deep}}}};
  ParsedAction p = parse(call);
  expect_refused(p, "write_file: the arguments are not valid JSON (nested deeper than 16 levels)");
  EXPECT_LT(p.error.size(), 400u) << "the echo of the arguments is cut";
}

TEST(HostileToolCall, ANumberThatOverflowsADoubleIsAMalformedActionNotInternal) {
  expect_refused(parse(Json("<tool_call>{\"name\": \"compile\", \"arguments\": {\"x\": 1e999}}</tool_call>")),
                 "number overflow parsing '1e999'");
  expect_refused(parse(Json{{"name", "read_file"}, {"arguments", "{\"path\": 1e999}"}}), "number overflow parsing '1e999'");
}

TEST(HostileToolCall, DuplicateArgumentKeysAreRefusedNotLastWins) {
  std::string dup = "{\"path\": \"kernel.cu\", \"content\": \"a\", \"content\": \"b\"}";
  expect_refused(parse(Json{{"name", "write_file"}, {"arguments", dup}}), "duplicate key 'content'");
  expect_refused(parse(Json("<tool_call>{\"name\": \"compile\", \"name\": \"submit\"}</tool_call>")), "duplicate key 'name'");
}

TEST(HostileToolCall, ACallInsideThinkIsNotRun) {
  std::string submit = "<tool_call>{\"name\": \"submit\"}</tool_call>";
  std::string compile = "<tool_call>{\"name\": \"compile\"}</tool_call>";
  ParsedAction only_thought = parse(Json("<think>maybe " + submit + " now?</think> I will think more."));
  expect_refused(only_thought, "no tool call found outside <think>...</think>");

  ParsedAction after = parse(Json("<think>not yet: " + submit + "</think>\n" + compile));
  ASSERT_TRUE(after.call) << after.error;
  EXPECT_EQ(after.call->name, "compile");
  EXPECT_TRUE(after.note.empty()) << "the call inside <think> is not counted: " << after.note;

  // The template opened the block in the prompt: text before a lone </think> is thinking.
  ParsedAction opened_by_template = parse(Json("let me " + submit + "</think>" + compile));
  ASSERT_TRUE(opened_by_template.call) << opened_by_template.error;
  EXPECT_EQ(opened_by_template.call->name, "compile");

  // An unclosed <think> hides the rest of the text.
  expect_refused(parse(Json("<think>" + submit)), "outside <think>");
  ParsedAction before_unclosed = parse(Json(compile + "<think>" + submit));
  ASSERT_TRUE(before_unclosed.call) << before_unclosed.error;
  EXPECT_EQ(before_unclosed.call->name, "compile");
}
