#pragma once
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace kforge::cli {

// Each subcommand registers a callback; run_selected runs the one the command line chose, so
// errors propagate to main's single handler (one line, non-zero exit).
void add_task_commands(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_demo_command(CLI::App& app);  // demo: a scripted episode on the GPU
void add_synth_commands(CLI::App& app);  // synth, tasks
void add_serve_commands(CLI::App& app);  // serve, record (rollout/)
void add_counters_command(CLI::App& app);  // counters: replay passes of a metric list (CUPTI host API)
void set_action(CLI::App* sub, std::function<int()> action);
int run_selected(CLI::App& app);

// A task argument: an existing path, or the name of a shipped sample (datasets/samples/NAME.yaml).
std::string resolve_task_path(const std::string& task);

}  // namespace kforge::cli
