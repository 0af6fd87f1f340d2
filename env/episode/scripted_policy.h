#pragma once
// A scripted policy: replays a directory's policy.yaml, one action per turn, for demos and tests
// (including policies that misbehave on purpose: garbage calls, path escapes, endless compiles).
//
//   # datasets/samples/policies/<name>/policy.yaml
//   task: gelu_scale_residual            # the sample task it was written for (optional)
//   description: one line
//   loop: false                          # true: start over after the last turn (until a limit)
//   kind: extension                      # the candidate kind it writes (reset option kind; optional)
//   turns:
//     - {write: kernel.cu, from: ../../candidates/gelu_scale_residual/fused/kernel.cu}
//     - {write: notes.md, content: "inline text"}
//     - {call: compile}
//     - {call: read_file, arguments: {path: kernel.cu}}
//     - {text: "assistant text with <tool_call>{...}</tool_call>"}
//     - {action: <any YAML value, sent as the JSON action as it is>}
//
// `from` paths are relative to the policy's directory (they are the policy's own files, read
// when it is loaded; the workspace never sees a host path).
#include <optional>
#include <string>
#include <vector>

#include "env/process/worker_protocol.h"

namespace kforge {

class ScriptedPolicy {
 public:
  // Throws io errors for missing files and config errors ("file:line:col: key: what") for the rest.
  static ScriptedPolicy load(const std::string& dir);

  // The next action, or nullopt when the script is done (never, with loop: true).
  std::optional<Json> next();
  void restart() { cursor_ = 0; }

  const std::string& name() const { return name_; }
  const std::string& task() const { return task_; }
  const std::string& description() const { return description_; }
  // "kernel", "extension", or "" (the environment's default): the reset option `kind` to play it with.
  const std::string& kind() const { return kind_; }
  // The reset options the policy needs ({"kind": ...} when it names one).
  Json reset_options() const;
  const std::vector<Json>& actions() const { return actions_; }
  bool loops() const { return loop_; }

 private:
  std::string name_, task_, description_, kind_;
  std::vector<Json> actions_;
  bool loop_ = false;
  size_t cursor_ = 0;
};

}  // namespace kforge
