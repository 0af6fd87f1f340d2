// Parsing actions into tool calls: structured, OpenAI-style and Hermes text; every malformed form
// is a sentence, never an exception.
#include "env/episode/tool_call.h"

#include <set>

#include <gtest/gtest.h>

using namespace kforge;
using Json = nlohmann::json;

TEST(ToolSchemas, AreFlatOpenAiFunctionSchemas) {
  const Json& s = tool_schemas();
  std::set<std::string> names;
  for (const auto& t : s) {
    EXPECT_EQ(t["type"], "function");
    const Json& f = t["function"];
    names.insert(f["name"].get<std::string>());
    EXPECT_FALSE(f["description"].get<std::string>().empty());
    EXPECT_EQ(f["parameters"]["type"], "object");
    EXPECT_EQ(f["parameters"]["additionalProperties"], false);
    for (const auto& [k, v] : f["parameters"]["properties"].items())
      EXPECT_TRUE(v["type"] == "string" || v["type"] == "integer" || v["type"] == "boolean") << "flat parameters only: " << k;
    for (const auto& r : f["parameters"]["required"]) EXPECT_TRUE(f["parameters"]["properties"].contains(r.get<std::string>()));
  }
  EXPECT_EQ(names, (std::set<std::string>{"write_file", "read_file", "list_files", "compile", "verify", "profile", "submit", "history",
                                          "restore", "diff"}));
  EXPECT_NE(tool_summary().find("- write_file(path, content): "), std::string::npos);
}

TEST(ParseAction, TakesAStructuredCall) {
  ParsedAction p = parse_action(Json{{"name", "write_file"}, {"arguments", {{"path", "kernel.cu"}, {"content", "x"}}}});
  ASSERT_TRUE(p.call) << p.error;
  EXPECT_EQ(p.call->name, "write_file");
  EXPECT_EQ(p.call->arguments["path"], "kernel.cu");
  ParsedAction no_args = parse_action(Json{{"name", "compile"}});
  ASSERT_TRUE(no_args.call) << no_args.error;
  EXPECT_TRUE(no_args.call->arguments.empty());
}

TEST(ParseAction, TakesAnOpenAiToolCallWithArgumentsAsJsonText) {
  Json a = {{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "read_file"}, {"arguments", "{\"path\": \"launch.yaml\"}"}}}};
  ParsedAction p = parse_action(a);
  ASSERT_TRUE(p.call) << p.error;
  EXPECT_EQ(p.call->arguments["path"], "launch.yaml");
  Json msg = {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({a, a})}};
  ParsedAction m = parse_action(msg);
  ASSERT_TRUE(m.call) << m.error;
  EXPECT_NE(m.note.find("2 tool calls found; only the first was run"), std::string::npos);
  ParsedAction bad = parse_action(Json{{"name", "read_file"}, {"arguments", "{path: x}"}});
  EXPECT_FALSE(bad.call);
  EXPECT_NE(bad.error.find("read_file: the arguments are not valid JSON"), std::string::npos);
}

TEST(ParseAction, TakesHermesToolCallTextAmidProse) {
  std::string text =
      "The kernel looks right, let me check it.\n<tool_call>\n{\"name\": \"verify\", \"arguments\": {}}\n</tool_call>\nThen profile.";
  ParsedAction p = parse_action(Json(text));
  ASSERT_TRUE(p.call) << p.error;
  EXPECT_EQ(p.call->name, "verify");
  EXPECT_TRUE(p.note.empty());
  ParsedAction two = parse_action_text("<tool_call>{\"name\": \"compile\"}</tool_call><tool_call>{\"name\": \"submit\"}</tool_call>");
  ASSERT_TRUE(two.call);
  EXPECT_EQ(two.call->name, "compile");
  EXPECT_NE(two.note.find("2 tool calls found"), std::string::npos);
  ParsedAction msg = parse_action(Json{{"role", "assistant"}, {"content", text}});
  ASSERT_TRUE(msg.call) << msg.error;
  EXPECT_EQ(msg.call->name, "verify");
}

TEST(ParseAction, MalformedTextSaysWhatWasWrong) {
  EXPECT_NE(parse_action_text("just thinking out loud").error.find("no tool call found"), std::string::npos);
  EXPECT_NE(parse_action_text("<tool_call>{\"name\": \"compile\"").error.find("not closed by </tool_call>"), std::string::npos);
  std::string bad_json = parse_action_text("<tool_call>{\"name\": \"compile\", \"arguments\": {</tool_call>").error;
  EXPECT_NE(bad_json.find("not valid JSON"), std::string::npos) << bad_json;
  EXPECT_NE(bad_json.find("{\"name\": \"compile\""), std::string::npos) << "shows what it read: " << bad_json;
  EXPECT_NE(bad_json.find("(parse error at line 1, column"), std::string::npos) << bad_json;
  EXPECT_NE(parse_action_text("<tool_call>[\"compile\"]</tool_call>").error.find("must be a JSON object"), std::string::npos);
}

TEST(ParseAction, UnknownToolsAndBadArgumentsAreNamed) {
  std::string unknown = parse_action(Json{{"name", "compil"}}).error;
  EXPECT_NE(unknown.find("unknown tool 'compil' (did you mean 'compile'?)"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("write_file, read_file, list_files, compile, verify, profile, submit"), std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "write_file"}, {"arguments", {{"path", "kernel.cu"}}}})
                .error.find("write_file: missing argument 'content'"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "read_file"}, {"arguments", {{"path", "a.cu"}, {"mode", "r"}}}})
                .error.find("read_file: unknown argument 'mode'"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "read_file"}, {"arguments", {{"pth", "a.cu"}}}}).error.find("(did you mean 'path'?)"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "compile"}, {"arguments", {{"fast", "yes"}}}}).error.find("it takes no arguments"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "write_file"}, {"arguments", {{"path", "k.cu"}, {"content", 42}}}})
                .error.find("'content' must be a string, not a number"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "compile"}, {"arguments", Json::array()}}).error.find("\"arguments\" must be an object"),
            std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", 7}}).error.find("\"name\" must be a string"), std::string::npos);
  EXPECT_NE(parse_action(Json{{"arguments", Json::object()}}).error.find("has no \"name\""), std::string::npos);
  EXPECT_NE(parse_action(Json{{"name", "compile"}, {"args", Json::object()}}).error.find("unknown field 'args'"), std::string::npos);
  EXPECT_NE(parse_action(Json::array({1, 2})).error.find("not an array"), std::string::npos);
  EXPECT_NE(parse_action(Json()).error.find("not null"), std::string::npos);
}

// One table: the schemas are the table's, in its order, and each tool's lane is where its work is.
TEST(ToolCall, TheToolTableGivesSchemasAndLanes) {
  const auto& table = tool_table();
  ASSERT_EQ(table.size(), tool_schemas().size());
  for (size_t i = 0; i < table.size(); ++i) EXPECT_EQ(tool_schemas()[i]["function"]["name"], table[i].name);
  auto lane = [](const char* action) { return lane_of(parse_action(nlohmann::json::parse(action))); };
  EXPECT_EQ(lane(R"({"name": "compile", "arguments": {}})"), Lane::compile);
  for (const char* gpu : {"verify", "profile", "submit"})
    EXPECT_EQ(lane((std::string(R"({"name": ")") + gpu + R"(", "arguments": {}})").c_str()), Lane::gpu) << gpu;
  EXPECT_EQ(lane(R"({"name": "read_file", "arguments": {"path": "kernel.cu"}})"), Lane::front);
  EXPECT_EQ(lane(R"({"name": "no_such_tool", "arguments": {}})"), Lane::front);  // the parse error is answered at the front
  EXPECT_EQ(lane(R"({"name": "verify", "arguments": {"extra": 1}})"), Lane::front);
}

// Dispatch reads the table: every Tool has exactly one row, and a parsed call carries its row's Tool.
TEST(ToolCall, EveryToolHasOneRowAndAParsedCallCarriesIt) {
  std::set<Tool> seen;
  for (const ToolSpec& t : tool_table()) {
    EXPECT_TRUE(seen.insert(t.tool).second) << t.name << " has a second row";
    EXPECT_EQ(&tool_spec(t.tool), &t);
    ParsedAction p = parse_action(Json{{"name", t.name},
                                       {"arguments", t.name == "write_file"  ? Json{{"path", "a"}, {"content", ""}}
                                                     : t.name == "read_file" ? Json{{"path", "a"}}
                                                     : t.name == "restore"   ? Json{{"version", 1}}
                                                     : t.name == "diff"      ? Json{{"a", 1}, {"b", 2}}
                                                                             : Json::object()}});
    ASSERT_TRUE(p.call) << t.name << ": " << p.error;
    EXPECT_EQ(p.call->tool, t.tool);
    EXPECT_EQ(p.call->name, t.name);
  }
}
