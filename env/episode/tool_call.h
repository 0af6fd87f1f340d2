#pragma once
// Actions: the tools a policy may call, published as OpenAI function schemas with flat
// parameters, and the parsing of one action into a checked tool call. An action is either
// structured ({"name", "arguments"}, or an OpenAI tool call {"function": {"name", "arguments":
// "<json text>"}}) or raw assistant text containing a Hermes-style
// <tool_call>{"name": ..., "arguments": {...}}</tool_call>. Whatever is wrong with an action
// (no call found, malformed JSON, an unknown tool, a missing, extra or mistyped argument) comes
// back as a sentence for the policy, never as an exception. JSON text inside an action (Hermes
// text, an OpenAI arguments string) is decoded with its nesting and size bounded, duplicate keys
// and numbers that overflow a double refused; <tool_call> text inside <think>...</think> is not run.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// Bounds on a tool call's JSON text: a valid call nests two levels ({"name", "arguments": {...}}),
// and the protocol's payload limit (rollout/PROTOCOL.md) bounds its size anyway.
constexpr int kMaxToolCallJsonDepth = 16;
constexpr size_t kMaxToolCallJsonBytes = size_t{16} << 20;

// The tools a policy may call. Each has one row in tool_table() (its name, lane and schema); the
// parser sets a call's Tool from that row and the episode runs the call by it (KernelEnv::run_tool),
// so no code compares tool names.
enum class Tool { write_file, read_file, list_files, compile, verify, profile, submit, history, restore, diff };

struct ToolCall {
  Tool tool{};
  std::string name;  // the tool's name in the table
  nlohmann::json arguments = nlohmann::json::object();
};

struct ParsedAction {
  std::optional<ToolCall> call;  // set when the action is a valid call of a known tool
  std::string error;             // else what was wrong
  std::string note;              // e.g. "2 tool calls found; only the first was run"
};

// Where a tool's call runs in a rollout server: its front thread, a compile worker, or a GPU's worker.
enum class Lane { front, compile, gpu };

// One tool: which it is, its name, where its calls run, and its OpenAI function schema.
struct ToolSpec {
  Tool tool{};
  std::string name;
  Lane lane = Lane::front;
  nlohmann::json schema;
};
// The tools, in one table that the action parser, the schemas, the prompt's summary, the server's
// lanes and the episode's dispatch all read.
const std::vector<ToolSpec>& tool_table();
// The table's row of `tool`.
const ToolSpec& tool_spec(Tool tool);
// Where a parsed action's step runs: its tool's lane (an action that does not parse: the front,
// where the episode answers with the parse error).
Lane lane_of(const ParsedAction& action);

// The tools as OpenAI function schemas: [{"type": "function", "function": {"name", "description",
// "parameters": {"type": "object", "properties", "required", "additionalProperties": false}}}].
const nlohmann::json& tool_schemas();
// One line per tool, "name(args): description", for the prompt.
std::string tool_summary();

ParsedAction parse_action(const nlohmann::json& action);
// Raw assistant text (the Hermes form): the first <tool_call> outside <think>...</think> blocks.
ParsedAction parse_action_text(const std::string& raw);

}  // namespace kforge
