// kforge tasks import: runs the Python importer (tools/dataset/task_import/, `python -m task_import`) on
// KernelBench / CUDA-Agent modules, then parses what it wrote with kforge's own task parser and
// packs it as DIR/dataset.h5 (data_synth/dataset/import_pack.h). The contract between the two halves is
// in data_synth/task/TASK_FORMAT.md, "Imported tasks".
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <ATen/Parallel.h>

#include "configs/error.h"
#include "data_synth/dataset/import_pack.h"
#include "data_synth/reference/reference.h"
#include "data_synth/reference/sensitivity.h"
#include "tools/kforge/commands.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

extern char** environ;

namespace fs = std::filesystem;

namespace kforge::cli {

namespace {

struct ImportArgs {
  std::string format, out, tolerance, split;
  std::vector<std::string> paths;
  int64_t seed = -1, limit = -1, jobs = -1;
  bool pack_only = false, no_input_check = false;
  double input_check_max_bytes = 256e6, input_check_max_flops = 2e9;
  double gpu_memory_gib = -1;  // the importer's default (an H200's) when not given
};

// The input checks of data_synth/reference/sensitivity.h, (a)-(c), on the CPU at the task's own
// size (an imported task has no check dims): a task with an argument, a row or a channel that does
// not move its answer beyond tolerance is skipped as input_matters. A task whose arguments and
// outputs exceed `max_bytes`, or whose forward takes more than `max_flops` (the checks run it a few
// times per argument), or whose flops are unknown (recurrent layers: minutes of CPU each at their
// own sizes, 242 s of the import in s16), is packed unchecked (kforge tasks sensitivity --device
// cuda checks it); `detail` says why (issue 29).
ImportCheck input_check(double max_bytes, double max_flops) {
  apply_reference_precision();
  return [max_bytes, max_flops](const TaskSpec& t, std::string& detail) -> std::string {
    double bytes = 0;
    for (const auto& a : t.arguments) bytes += static_cast<double>(numel(a.decl.meta.shape)) * dtype_size(a.decl.meta.dtype);
    for (const auto& o : t.outputs) bytes += static_cast<double>(numel(o.meta.shape)) * dtype_size(o.meta.dtype);
    if (bytes > max_bytes) {
      detail = "too large for the CPU check";
      return kImportUnchecked;
    }
    if (!t.cost.flops) {
      detail = "flops unknown";
      return kImportUnchecked;
    }
    if (*t.cost.flops > max_flops) {
      detail = "too costly for the CPU check";
      return kImportUnchecked;
    }
    SensitivityOptions o;
    o.ablation_trials = 0;
    o.stop_early = true;
    try {
      SensitivityReport r = check_sensitivity(t, at::Device(at::kCPU), o);
      if (r.inputs_matter) return "";
      detail = r.reason;
      return "input_matters";
    } catch (const std::exception& e) {
      detail = std::string("the reference failed on the CPU: ") + e.what();
      return "reference_failed";
    }
  };
}

// The interpreter tools/python_env.sh picks (project_python), or a typed error.
std::string python_interpreter() {
  std::string py = project_python();
  KFORGE_CHECK(!py.empty(), unsupported,
               "kforge tasks import needs Python: no venv at " << (fs::path(KFORGE_SOURCE_DIR) / ".venv").string()
                                                               << " (run tools/setup.sh) and KFORGE_PYTHON_BIN is not set");
  return py;
}

// Where the importer package lives: <source>/tools/dataset, or KFORGE_IMPORTER_PATH (another checkout).
std::string importer_path() {
  if (const char* p = std::getenv("KFORGE_IMPORTER_PATH"); p && *p) return p;
  return (fs::path(KFORGE_SOURCE_DIR) / "tools" / "dataset").string();
}

// Runs argv with PYTHONPATH=<importer path>[:PYTHONPATH]; stdout and stderr are the caller's.
int run_python(const std::vector<std::string>& argv) {
  std::string pythonpath = importer_path();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  std::vector<std::string> env_text = {"PYTHONPATH=" + pythonpath};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("PYTHONPATH=", 0) != 0) env_text.push_back(*e);
  std::vector<char*> envp, args;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  KFORGE_CHECK(rc == 0, unsupported, "cannot start " << argv[0] << " (" << std::strerror(rc) << "): set KFORGE_PYTHON_BIN");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) KFORGE_CHECK(errno == EINTR, runtime, "waiting for " << argv[0] << ": " << std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void run_importer(const ImportArgs& a) {
  const std::string py = python_interpreter();
  // A missing or broken package is told apart from the importer refusing its arguments.
  const char* probe = "import importlib.util, sys, task_import; sys.exit(importlib.util.find_spec('task_import.__main__') is None)";
  if (run_python({py, "-c", probe}) != 0)
    KFORGE_FAIL(unsupported, "the Python importer is not importable: `"
                                 << py << " -m task_import` cannot run with "
                                 << "PYTHONPATH=" << importer_path()
                                 << " (tools/dataset/task_import/ missing, or its packages: run tools/setup.sh)");
  std::vector<std::string> argv = {py, "-m", "task_import", "--format", a.format, "--out", a.out};
  if (!a.tolerance.empty()) argv.insert(argv.end(), {"--tolerance", a.tolerance});
  if (!a.split.empty()) argv.insert(argv.end(), {"--split", a.split});
  if (a.seed >= 0) argv.insert(argv.end(), {"--seed", std::to_string(a.seed)});
  if (a.limit >= 0) argv.insert(argv.end(), {"--limit", std::to_string(a.limit)});
  if (a.jobs > 0) argv.insert(argv.end(), {"--jobs", std::to_string(a.jobs)});
  if (a.gpu_memory_gib > 0) argv.insert(argv.end(), {"--gpu-memory-gib", std::to_string(a.gpu_memory_gib)});
  argv.insert(argv.end(), a.paths.begin(), a.paths.end());
  int rc = run_python(argv);
  KFORGE_CHECK(rc != 2, usage, "the importer refused its arguments (exit 2; its message is above)");
  KFORGE_CHECK(rc == 0, runtime, "the importer failed (exit " << rc << "; its messages are above)");
}

int import_tasks(const ImportArgs& a, const std::string& command_line) {
  KFORGE_CHECK(a.format == "kernelbench" || a.format == "cuda-agent", usage,
               "--format is kernelbench or cuda-agent, not '" << a.format << "'");
  KFORGE_CHECK(a.tolerance.empty() || a.tolerance == "kforge" || a.tolerance == "cuda-agent", usage,
               "--tolerance is kforge or cuda-agent, not '" << a.tolerance << "'");
  KFORGE_CHECK(a.split.empty() || a.split == "train" || a.split == "heldout", usage,
               "--split is train or heldout, not '" << a.split << "'");
  KFORGE_CHECK(a.pack_only || !a.paths.empty(), usage, "give the files or folders to import (or --pack-only)");
  auto t0 = std::chrono::steady_clock::now();
  if (!a.pack_only) run_importer(a);
  ImportPack p = pack_import_dir(a.out, command_line,
                                 a.no_input_check ? ImportCheck{} : input_check(a.input_check_max_bytes, a.input_check_max_flops));
  double pack_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Modules per second over the importer's own time when it said, else this command's.
  std::cout << p.table(p.importer_seconds > 0 ? p.importer_seconds : pack_s);
  std::cout << "wrote " << (fs::path(a.out) / "dataset.h5").string() << " (" << p.dataset.rows.size() << " tasks) and skipped.jsonl\n";
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  auto* imp = tasks->add_subcommand(
      "import", "Import KernelBench / CUDA-Agent modules as tasks with a TorchScript reference: DIR/tasks/*.yaml, DIR/dataset.h5");
  static ImportArgs a;
  static std::string command_line;
  imp->add_option("PATH", a.paths, "kernelbench: .py files or folders of them; cuda-agent: .parquet or .jsonl files");
  imp->add_option("--format", a.format, "kernelbench or cuda-agent")->required();
  imp->add_option("--out", a.out, "output directory (tasks/, skipped.jsonl, import_summary.json, dataset.h5)")->required();
  imp->add_option("--tolerance", a.tolerance, "kforge (the dtype's default) or cuda-agent (atol = rtol = 1e-2)");
  imp->add_option("--split", a.split, "train or heldout");
  imp->add_option("--seed", a.seed, "the importer's seed");
  imp->add_option("--limit", a.limit, "at most this many modules");
  imp->add_flag("--pack-only", a.pack_only, "do not run the importer: parse and pack what DIR/tasks already holds");
  imp->add_flag("--no-input-check", a.no_input_check,
                "do not run the input checks (every argument, row and channel must move the answer; else input_matters)");
  imp->add_option("--input-check-max-bytes", a.input_check_max_bytes,
                  "tasks whose arguments and outputs take more bytes are packed unchecked")
      ->capture_default_str();
  imp->add_option("--input-check-max-flops", a.input_check_max_flops,
                  "tasks whose forward takes more flops are packed unchecked (unknown flops: past a sixteenth of the bytes)")
      ->capture_default_str();
  imp->add_option("--gpu-memory-gib", a.gpu_memory_gib,
                  "memory of the GPU the tasks are judged on (the importer's default: an H200's); arguments may take a quarter");
  imp->add_option("--jobs", a.jobs, "modules the importer examines at once (its default: the CPUs it may use)");
  set_action(imp, [] {
    command_line = "kforge tasks import --format " + a.format + " --out " + a.out;
    for (const auto& p : a.paths) command_line += " " + p;
    return import_tasks(a, command_line);
  });
}

}  // namespace kforge::cli
