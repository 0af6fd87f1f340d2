#pragma once
#include <cstdint>
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
void add_demo_command(CLI::App& app);    // demo: a scripted episode on the GPU
void add_synth_commands(CLI::App& app);  // synth, tasks
// tasks export-gpu, tasks set-baselines, task set-baselines (after the task and tasks commands)
void add_gpu_stage_commands(CLI::App& app);
void add_import_command(CLI::App& app);        // tasks import (after the tasks commands)
void add_sensitivity_command(CLI::App& app);   // tasks sensitivity (after the tasks commands)
void add_extra_shapes_command(CLI::App& app);  // tasks extra-shapes (after the tasks commands)
void add_recost_command(CLI::App& app);        // tasks recost (after the tasks commands)
void add_headroom_command(CLI::App& app);      // tasks headroom (after the tasks commands)
void add_serve_commands(CLI::App& app);        // serve, record (rollout/)
void add_counters_command(CLI::App& app);      // counters: replay passes of a metric list (CUPTI host API)
void set_action(CLI::App* sub, std::function<int()> action);
// The two arguments of a command that writes a dataset's rows, changed, into another file (tasks
// extra-shapes, recost, headroom): DATASET (a dataset.h5, or the shipped .h5.xz) and --out.
void add_dataset_rewrite_options(CLI::App* sub, std::string& in, std::string& out);
// Usage errors: --out compressed (it writes an .h5 to xz afterwards), or --out the dataset it reads.
void check_dataset_rewrite(const std::string& in, const std::string& out);
int run_selected(CLI::App& app);

// Start-up timestamps (the cold-start breakdown of `kforge eval`): mark_main() first thing in main.
void mark_main();
int64_t main_monotonic_ns();  // monotonic_ns() (env/process/worker_protocol.h) at main
double process_to_main_ms();  // the process's start (fork) to main, 1/CLK_TCK resolution (10 ms); -1 unknown

// `kforge` links no libtorch: it runs eval and demo itself and hands every other command line
// (help included) to kforge-full beside it, which has every command. Returns only on failure (1).
int exec_full(char** argv);

// The commands written in Python (python_commands.cpp): argv[1] is `report` (execs the project's
// Python with `-m kforge_client.report ARGS...`, argv[2:]) or `baseline` (tools/dataset/baseline_ray.py
// ARGS...); returns only on failure (1).
int exec_python_command(int argc, char** argv);

// A task argument: an existing path, or the name of a shipped sample (datasets/samples/NAME.yaml).
std::string resolve_task_path(const std::string& task);
// Seconds for a progress line: "42s", "3m07s", "2h05m"; "?" for a negative or non-finite value.
std::string duration(double seconds);
// The project's interpreter, in tools/python_env.sh's order: KFORGE_PYTHON_BIN, else
// $KFORGE_VENV/bin/python, else <source>/.venv/bin/python; empty when none of them is there.
std::string project_python();

}  // namespace kforge::cli
