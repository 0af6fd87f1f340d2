#include "env/episode/tool_call.h"

#include "configs/bounded_json.h"
#include "configs/error.h"
#include "configs/yaml_reader.h"

namespace kforge {

using Json = nlohmann::json;

namespace {

Json function(const char* name, const char* description, Json properties, Json required) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", description},
            {"parameters",
             {{"type", "object"},
              {"properties", std::move(properties)},
              {"required", std::move(required)},
              {"additionalProperties", false}}}}}};
}

std::vector<ToolSpec> build_table() {
  Json path = {{"type", "string"}, {"description", "a relative path in the workspace, e.g. kernel.cu, launch.yaml or model_new.py"}};
  auto version = [](const char* what) { return Json{{"type", "integer"}, {"description", what}}; };
  auto tool = [](Tool t, const char* name, Lane lane, const char* description, Json properties, Json required) {
    return ToolSpec{t, name, lane, function(name, description, std::move(properties), std::move(required))};
  };
  return {
      tool(Tool::write_file, "write_file", Lane::front, "Create or replace a file in the candidate workspace.",
           {{"path", path}, {"content", {{"type", "string"}, {"description", "the whole file"}}}}, {"path", "content"}),
      tool(Tool::read_file, "read_file", Lane::front, "Read a file of the candidate workspace.", {{"path", path}}, {"path"}),
      tool(Tool::list_files, "list_files", Lane::front, "List the files of the candidate workspace with their sizes.", Json::object(),
           Json::array()),
      tool(Tool::compile, "compile", Lane::compile,
           "Compile the candidate without running it (kernel.cu with NVRTC and launch.yaml checked against the task; "
           "or model_new.py read and the extension built): compiler errors, and per kernel its registers, shared memory, "
           "local memory and spills.",
           Json::object(), Json::array()),
      tool(Tool::verify, "verify", Lane::gpu,
           "Compile and run the candidate on the GPU over several trials with fresh random inputs "
           "and compare its outputs with the PyTorch reference.",
           Json::object(), Json::array()),
      tool(Tool::profile, "profile", Lane::gpu,
           "Verify, then time the candidate against eager PyTorch (and the task's torch.compile "
           "baseline) and report what each kernel did on the GPU.",
           {{"counters",
             {{"type", "boolean"},
              {"description",
               "also read the hardware counters of the candidate's kernels (DRAM bytes, warps active, L2 hit rate); "
               "the call is replayed once per counter pass, so it takes longer"}}}},
           Json::array()),
      tool(Tool::submit, "submit", Lane::gpu,
           "Submit the workspace's candidate (or the version named by `version`, from history()) for the "
           "final evaluation (more trials, full timing). This ends the episode and gives the reward.",
           {{"version", version("a version number from history(); omitted: the workspace's candidate")}}, Json::array()),
      tool(Tool::history, "history", Lane::front,
           "List the versions of the candidate judged so far (every verify, profile and submit keeps one), "
           "each with its verdicts and its speedup over eager with its confidence interval.",
           Json::object(), Json::array()),
      tool(Tool::restore, "restore", Lane::front,
           "Put a version's files (kernel.cu and launch.yaml, or the extension's) back into the workspace (other files are kept).",
           {{"version", version("the version number, from history()")}}, {"version"}),
      tool(Tool::diff, "diff", Lane::front, "Show what changed between two versions: a unified diff of each of their files.",
           {{"a", version("the older version's number")}, {"b", version("the newer version's number")}}, Json::array({"a", "b"})),
  };
}

const ToolSpec* find_tool(const std::string& name) {
  for (const ToolSpec& t : tool_table())
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> tool_names() {
  std::vector<std::string> names;
  for (const ToolSpec& t : tool_table()) names.push_back(t.name);
  return names;
}

std::string json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

// At most 200 bytes of a policy's text for a message, cut at a character boundary (the observation
// must stay valid UTF-8).
std::string excerpt(const std::string& text) {
  if (text.size() <= 200) return text;
  size_t n = 200;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  return text.substr(0, n) + "...";
}

// A tool call's JSON text, decoded with its nesting and size bounded before anything is built, and
// duplicate keys and numbers that overflow a double (1e999) refused: every failure is the sentence
// in `error`, never an exception or a crash (configs/bounded_json.h).
BoundedJson parse_call_json(const std::string& text) {
  JsonLimits limits;
  limits.max_depth = kMaxToolCallJsonDepth;
  limits.max_bytes = kMaxToolCallJsonBytes;
  return parse_json_bounded(text, limits);
}

// An integer argument as a model writes it: 3, "3" or "v3" (history() names versions v1, v2, ...).
std::optional<int64_t> integer_argument(const Json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_string()) return std::nullopt;
  std::string s = v.get<std::string>();
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.erase(0, 1);
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

// Checks a call against its tool's schema.
ParsedAction checked(const std::string& name, Json arguments) {
  ParsedAction out;
  if (name.empty()) {
    out.error = "the tool call has no \"name\"";
    return out;
  }
  const ToolSpec* spec = find_tool(name);
  if (!spec) {
    std::string names, close = closest_match(name, tool_names());
    for (const auto& n : tool_names()) names += (names.empty() ? "" : ", ") + n;
    out.error = "unknown tool '" + name + "'" + (close.empty() ? "" : " (did you mean '" + close + "'?)") + "; the tools are " + names;
    return out;
  }
  if (arguments.is_null()) arguments = Json::object();
  if (arguments.is_string()) {
    // OpenAI tool calls carry their arguments as JSON text.
    std::string text = arguments.get<std::string>();
    BoundedJson parsed = parse_call_json(text);
    if (!parsed.ok()) {
      out.error = name + ": the arguments are not valid JSON (" + parsed.error + "): " + excerpt(text);
      return out;
    }
    arguments = parsed.value.is_null() ? Json::object() : std::move(parsed.value);
  }
  if (!arguments.is_object()) {
    out.error = name + ": \"arguments\" must be an object, not " + json_type_name(arguments);
    return out;
  }
  const Json& parameters = spec->schema["function"]["parameters"];
  const Json& props = parameters["properties"];
  for (auto& [key, value] : arguments.items()) {
    if (!props.contains(key)) {
      std::vector<std::string> known;
      for (const auto& [k, v] : props.items()) known.push_back(k);
      std::string close = closest_match(key, known);
      out.error = name + ": unknown argument '" + key + "'" + (close.empty() ? "" : " (did you mean '" + close + "'?)") +
                  (known.empty() ? "; it takes no arguments" : "");
      return out;
    }
    if (props[key]["type"] == "string" && !value.is_string()) {
      out.error = name + ": argument '" + key + "' must be a string, not " + json_type_name(value);
      return out;
    }
    if (props[key]["type"] == "boolean") {  // true, false, or the words as a model may quote them
      if (value == "true" || value == "false") value = value == "true";
      if (!value.is_boolean()) {
        out.error = name + ": argument '" + key + "' must be true or false, not " +
                    (value.is_string() ? "'" + excerpt(value.get<std::string>()) + "'" : value.dump());
        return out;
      }
    }
    if (props[key]["type"] == "integer") {  // the integer arguments are version numbers, from 1
      std::optional<int64_t> n = integer_argument(value);
      if (!n || *n < 1 || *n > 1000000000) {
        out.error = name + ": argument '" + key + "' must be an integer >= 1 (a version number from history()), not " +
                    (value.is_string() ? "'" + excerpt(value.get<std::string>()) + "'" : value.dump());
        return out;
      }
      value = *n;
    }
  }
  for (const auto& req : parameters["required"]) {
    if (!arguments.contains(req.get<std::string>())) {
      out.error = name + ": missing argument '" + req.get<std::string>() + "'";
      return out;
    }
  }
  out.call = ToolCall{spec->tool, name, std::move(arguments)};
  return out;
}

ParsedAction from_object(const Json& a) {
  if (a.contains("function") && a["function"].is_object()) return from_object(a["function"]);
  if (a.contains("tool_calls") && a["tool_calls"].is_array() && !a["tool_calls"].empty()) {
    ParsedAction p = from_object(a["tool_calls"][0]);
    if (a["tool_calls"].size() > 1 && p.note.empty())
      p.note = std::to_string(a["tool_calls"].size()) + " tool calls found; only the first was run (one tool per turn)";
    return p;
  }
  if (!a.contains("name") && a.contains("content") && a["content"].is_string()) return parse_action_text(a["content"].get<std::string>());
  if (!a.contains("name")) {
    ParsedAction out;
    out.error = "the action has no \"name\"; call a tool as {\"name\": ..., \"arguments\": {...}}";
    return out;
  }
  if (!a["name"].is_string()) {
    ParsedAction out;
    out.error = "the tool call's \"name\" must be a string, not " + json_type_name(a["name"]);
    return out;
  }
  for (const auto& [k, v] : a.items()) {
    if (k != "name" && k != "arguments" && k != "id" && k != "type") {
      ParsedAction out;
      out.error = "the tool call has an unknown field '" + k + "'; it takes \"name\" and \"arguments\"";
      return out;
    }
  }
  return checked(a["name"].get<std::string>(), a.contains("arguments") ? a["arguments"] : Json::object());
}

// The part of assistant text addressed to the environment: everything outside <think>...</think>
// (ENVIRONMENT.md "Actions"). Text before a </think> that no <think> opened is thinking too (chat
// templates such as Qwen3's and DeepSeek-R1's open the block in the prompt), and an unclosed
// <think> hides the rest. `hidden` is set when any thinking was removed.
std::string outside_think(const std::string& text, bool& hidden) {
  static const std::string open = "<think>", close = "</think>";
  std::string out;
  size_t from = 0;
  size_t first_close = text.find(close), first_open = text.find(open);
  if (first_close != std::string::npos && (first_open == std::string::npos || first_close < first_open)) {
    hidden = true;
    from = first_close + close.size();
  }
  while (from < text.size()) {
    size_t o = text.find(open, from);
    out.append(text, from, o == std::string::npos ? std::string::npos : o - from);
    if (o == std::string::npos) break;
    hidden = true;
    size_t c = text.find(close, o + open.size());
    if (c == std::string::npos) break;
    from = c + close.size();
  }
  return out;
}

}  // namespace

const std::vector<ToolSpec>& tool_table() {
  static const std::vector<ToolSpec> table = build_table();
  return table;
}

const Json& tool_schemas() {
  static const Json schemas = [] {
    Json a = Json::array();
    for (const ToolSpec& t : tool_table()) a.push_back(t.schema);
    return a;
  }();
  return schemas;
}

const ToolSpec& tool_spec(Tool tool) {
  for (const ToolSpec& t : tool_table())
    if (t.tool == tool) return t;
  KFORGE_FAIL(internal, "tool " << static_cast<int>(tool) << " has no row in the tool table");
}

Lane lane_of(const ParsedAction& action) { return action.call ? tool_spec(action.call->tool).lane : Lane::front; }

std::string tool_summary() {
  std::string out;
  for (const auto& t : tool_schemas()) {
    const Json& f = t["function"];
    // Required parameters in their declared order, then the optional ones.
    std::string args;
    for (const auto& r : f["parameters"]["required"]) args += (args.empty() ? "" : ", ") + r.get<std::string>();
    for (const auto& [k, v] : f["parameters"]["properties"].items()) {
      bool required = false;
      for (const auto& r : f["parameters"]["required"]) required = required || r == k;
      if (!required) args += (args.empty() ? "" : ", ") + k;
    }
    out += "- " + f["name"].get<std::string>() + "(" + args + "): " + f["description"].get<std::string>() + "\n";
  }
  return out;
}

ParsedAction parse_action_text(const std::string& raw) {
  static const std::string open = "<tool_call>", close = "</tool_call>";
  ParsedAction out;
  bool hidden = false;
  std::string text = outside_think(raw, hidden);
  size_t a = text.find(open);
  if (a == std::string::npos) {
    out.error = std::string("no tool call found") + (hidden ? " outside <think>...</think> (calls inside it are not run)" : "") +
                "; call one tool per turn as <tool_call>{\"name\": \"compile\", \"arguments\": {}}</tool_call>";
    return out;
  }
  size_t body = a + open.size();
  size_t b = text.find(close, body);
  if (b == std::string::npos) {
    out.error = "<tool_call> is not closed by </tool_call>";
    return out;
  }
  int count = 0;
  for (size_t p = text.find(open); p != std::string::npos; p = text.find(open, p + open.size())) ++count;
  std::string inner = text.substr(body, b - body);
  BoundedJson j = parse_call_json(inner);
  if (!j.ok()) {
    out.error = "the text inside <tool_call> is not valid JSON (" + j.error + "): " + excerpt(inner);
    return out;
  }
  if (!j.value.is_object()) {
    out.error = "the text inside <tool_call> must be a JSON object {\"name\": ..., \"arguments\": {...}}, not " + json_type_name(j.value);
    return out;
  }
  out = from_object(j.value);
  if (count > 1 && out.note.empty()) out.note = std::to_string(count) + " tool calls found; only the first was run (one tool per turn)";
  return out;
}

ParsedAction parse_action(const Json& action) {
  if (action.is_string()) return parse_action_text(action.get<std::string>());
  if (action.is_object()) return from_object(action);
  ParsedAction out;
  out.error = "an action is a tool call {\"name\": ..., \"arguments\": {...}} or assistant text with <tool_call>...</tool_call>, not " +
              json_type_name(action);
  return out;
}

}  // namespace kforge
