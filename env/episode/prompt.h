#pragma once
// The task prompt: a template (configs/prompt/kernel.md; extension.md for the extension kind) with {{placeholders}} filled from the
// task, the candidate format page, the tools, the limits and the reward rules. Researchers change
// the wording in the template, not in code. `{{!-- ... --}}` is a comment and is dropped.
#include <map>
#include <string>

#include "data_synth/task/task_spec.h"
#include "env/episode/env_config.h"
#include "reward/reward_config.h"

namespace kforge {

// Fills every {{name}} of `text` from `fields`. An unknown placeholder, or an unclosed {{ or
// comment, is a config error naming `origin`, its line and the placeholder.
std::string fill_template(const std::string& text, const std::string& origin, const std::map<std::string, std::string>& fields);

// The fields of a task prompt: task_id, description, program, dimensions, arguments, outputs,
// tolerance, dtype, format, tools, limits, reward (`extension`: the reward's text says an
// extension's inputs also come strided or channels-last).
std::map<std::string, std::string> prompt_fields(const TaskSpec& task, const std::string& format_page, const EnvConfig& env,
                                                 const RewardConfig& reward, bool extension = false);

// Reads the template and the format page the config names for the candidate kind and fills them
// in for the task.
std::string render_prompt(const TaskSpec& task, const EnvConfig& env, const RewardConfig& reward,
                          CandidateKind kind = CandidateKind::kernel);

}  // namespace kforge
