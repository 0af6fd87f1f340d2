#pragma once
// Actions: the tools a policy may call, published as OpenAI function schemas with flat
// parameters, and the parsing of one action into a checked tool call. An action is either
// structured ({"name", "arguments"}, or an OpenAI tool call {"function": {"name", "arguments":
// "<json text>"}}) or raw assistant text containing a Hermes-style
// <tool_call>{"name": ..., "arguments": {...}}</tool_call>. Whatever is wrong with an action
// (no call found, malformed JSON, an unknown tool, a missing, extra or mistyped argument) comes
// back as a sentence for the policy, never as an exception.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

struct ToolCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

struct ParsedAction {
  std::optional<ToolCall> call;  // set when the action is a valid call of a known tool
  std::string error;             // else what was wrong
  std::string note;              // e.g. "2 tool calls found; only the first was run"
};

// The tools as OpenAI function schemas: [{"type": "function", "function": {"name", "description",
// "parameters": {"type": "object", "properties", "required", "additionalProperties": false}}}].
const nlohmann::json& tool_schemas();
// One line per tool, "name(args): description", for the prompt.
std::string tool_summary();

ParsedAction parse_action(const nlohmann::json& action);
// Raw assistant text (the Hermes form).
ParsedAction parse_action_text(const std::string& text);

}  // namespace kforge
