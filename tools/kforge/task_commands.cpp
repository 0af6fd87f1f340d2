// kforge task show|render|run|fmt|dump, and kforge ops.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "data_synth/reference/reference.h"
#include "data_synth/task/render_python.h"
#include "data_synth/task/safetensors.h"
#include "data_synth/task/task_spec.h"
#include "env/judge/timing.h"
#include "tools/kforge/commands.h"

namespace fs = std::filesystem;

namespace kforge::cli {

namespace {

DimEnv parse_dims(const std::string& text) {
  DimEnv dims;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    KFORGE_CHECK(eq != std::string::npos, usage, "--dims takes NAME=VALUE[,NAME=VALUE...], got '" << item << "'");
    try {
      dims[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      KFORGE_FAIL(usage, "--dims: '" << item << "' has no integer value");
    }
  }
  return dims;
}

TaskSpec load_for_cli(const std::string& task, bool check_dims, const std::string& dims) {
  TaskSpec t = load_task(resolve_task_path(task));
  if (check_dims) t = t.at_check_dims();
  if (!dims.empty()) t = t.with_dims(parse_dims(dims));
  return t;
}

NamedBuffer to_buffer(const std::string& name, const at::Tensor& t_in, DType dtype) {
  at::Tensor t = t_in.contiguous().cpu();
  NamedBuffer b;
  b.name = name;
  b.meta = {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), dtype};
  const uint8_t* p = static_cast<const uint8_t*>(t.data_ptr());
  b.bytes.assign(p, p + t.numel() * t.element_size());
  return b;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) KFORGE_FAIL(io, path.string() << ": cannot write");
  out << text;
}

// Writes what the Python consistency check needs for one task.
void dump_task(const TaskSpec& t, const fs::path& dir, uint64_t trial, uint64_t salt) {
  fs::create_directories(dir);
  write_text(dir / "task.yaml", task_to_yaml(t));
  write_text(dir / "program.py", render_python(t));
  auto args = draw_arguments(t, {t.seed, trial, salt}, at::kCPU);
  auto outs = run_reference(t, args);
  std::vector<NamedBuffer> ab, ob;
  for (size_t i = 0; i < args.size(); ++i) ab.push_back(to_buffer(t.arguments[i].decl.name, args[i], t.arguments[i].decl.meta.dtype));
  for (size_t i = 0; i < outs.size(); ++i) ob.push_back(to_buffer(t.outputs[i].name, outs[i], t.outputs[i].meta.dtype));
  std::string inputs;
  for (const auto& a : t.arguments)
    if (a.decl.role == ArgRole::input) inputs += (inputs.empty() ? "" : ",") + a.decl.name;
  write_safetensors((dir / "args.safetensors").string(), ab, {{"inputs", inputs}, {"task", t.id}});
  write_safetensors((dir / "outputs.safetensors").string(), ob,
                    {{"atol", std::to_string(t.tolerance.atol)}, {"rtol", std::to_string(t.tolerance.rtol)}});
}

std::string fmt_num(double v, int precision = 4) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(precision);
  os << v;
  return os.str();
}

int run_task(const std::string& task, const std::string& device_name, uint64_t trial, const std::string& config_path, bool json,
             bool check_dims, const std::string& dims) {
  EvalConfig cfg = config_path.empty() ? EvalConfig{} : EvalConfig::load(config_path);
  TaskSpec t = load_for_cli(task, check_dims, dims);
  KFORGE_CHECK(device_name == "cpu" || device_name == "cuda", usage, "--device is cpu or cuda, not '" << device_name << "'");
  at::Device device = device_name == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (device.is_cuda() && !cuda_available()) KFORGE_FAIL(runtime, "--device cuda: no CUDA device is available on this machine");
  auto flags = apply_reference_precision();
  DeviceInfo info = device_info(device);
  auto args = draw_arguments(t, {t.seed, trial, cfg.draws.salt}, device);
  std::vector<at::Tensor> outs;
  try {
    outs = run_reference(t, args);
  } catch (const c10::Error& e) {
    KFORGE_FAIL(runtime, "reference failed: " << e.what_without_backtrace());
  }
  TimedRun timed = time_function([&] { run_reference(t, args); }, device, cfg.timing);
  double seconds = timed.stats.median / 1e3;

  nlohmann::ordered_json out_json = nlohmann::ordered_json::array();
  for (size_t i = 0; i < outs.size(); ++i) {
    at::Tensor o = outs[i].to(at::kDouble);
    bool finite = at::isfinite(o).all().item<bool>();
    out_json.push_back({{"name", t.outputs[i].name},
                        {"shape", t.outputs[i].meta.shape},
                        {"dtype", dtype_name(t.outputs[i].meta.dtype)},
                        {"mean_abs", o.abs().mean().item<double>()},
                        {"max_abs", o.abs().max().item<double>()},
                        {"finite", finite}});
  }
  if (json) {
    nlohmann::ordered_json j;
    j["task"] = t.id;
    j["device"] = {{"kind", device_name},
                   {"name", info.name},
                   {"torch", info.torch_version},
                   {"cuda", info.cuda_version},
                   {"driver", info.driver_version}};
    j["trial"] = trial;
    j["dims"] = t.dims;
    j["precision_flags"] = flags;
    j["outputs"] = out_json;
    j["timing"] = {{"median_ms", timed.stats.median},
                   {"mean_ms", timed.stats.mean},
                   {"std_ms", timed.stats.std},
                   {"min_ms", timed.stats.min},
                   {"max_ms", timed.stats.max},
                   {"p10_ms", timed.stats.p10},
                   {"p90_ms", timed.stats.p90},
                   {"n", timed.stats.n},
                   {"rse", timed.stats.rse},
                   {"warmup_calls", timed.warmup_calls},
                   {"l2_flush_bytes", timed.l2_flush_bytes},
                   {"method", timed.method}};
    j["cost"] = {{"flops", t.cost.flops ? nlohmann::ordered_json(*t.cost.flops) : nlohmann::ordered_json()},
                 {"min_bytes", t.cost.min_bytes}};
    j["achieved"] = {{"tflop_per_s", t.cost.flops ? nlohmann::ordered_json(*t.cost.flops / seconds / 1e12) : nlohmann::ordered_json()},
                     {"gb_per_s", t.cost.min_bytes / seconds / 1e9}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "task " << t.id << " (" << task_source_name(t.source) << ", " << split_name(t.split)
            << "): " << (t.imported() ? "imported module (TorchScript reference)" : std::to_string(t.graph.nodes.size()) + " operator(s)")
            << ", " << dtype_name(t.dtype) << "\n";
  std::cout << "device: " << info.name << " | torch " << info.torch_version;
  if (device.is_cuda()) std::cout << " | CUDA " << info.cuda_version << " | driver " << info.driver_version;
  std::cout << " | tf32 cublas=" << flags["allow_tf32_cublas"] << " cudnn=" << flags["allow_tf32_cudnn"] << "\n";
  for (const auto& o : out_json)
    std::cout << "output " << o["name"].get<std::string>() << " " << shape_str(o["shape"].get<Shape>()) << " "
              << o["dtype"].get<std::string>() << ": mean|x| " << fmt_num(o["mean_abs"].get<double>()) << ", max|x| "
              << fmt_num(o["max_abs"].get<double>()) << (o["finite"].get<bool>() ? ", all finite" : ", NOT FINITE") << "\n";
  std::cout << "reference time: " << timed.stats.summary() << "\n";
  std::cout << "achieved: " << (t.cost.flops ? fmt_num(*t.cost.flops / seconds / 1e12, 3) : std::string("(no FLOP count)")) << " TFLOP/s, "
            << fmt_num(t.cost.min_bytes / seconds / 1e9, 1) << " GB/s of minimum traffic\n";
  std::cout << "method: " << timed.method << "\n";
  return 0;
}

}  // namespace

void add_task_commands(CLI::App& app) {
  CLI::App* task = app.add_subcommand("task", "Inspect and run one task");
  task->require_subcommand(1);

  auto* show = task->add_subcommand("show", "Print the full task spec (derived fields included)");
  static std::string show_task;
  static bool show_check = false;
  show->add_option("TASK", show_task, "task file or sample name")->required();
  show->add_flag("--check-dims", show_check, "at the task's small check dimensions");
  set_action(show, [] {
    std::cout << task_to_yaml(load_for_cli(show_task, show_check, ""));
    return 0;
  });

  auto* render = task->add_subcommand("render", "Print the task as the PyTorch program the policy reads");
  static std::string render_task;
  static bool render_check = false;
  render->add_option("TASK", render_task, "task file or sample name")->required();
  render->add_flag("--check-dims", render_check, "at the task's small check dimensions");
  set_action(render, [] {
    std::cout << render_python(load_for_cli(render_task, render_check, ""));
    return 0;
  });

  auto* run = task->add_subcommand("run", "Run the task's C++ reference and time it");
  static std::string run_task_name, run_device = "cpu", run_config, run_dims;
  static uint64_t run_trial = 0;
  static bool run_json = false, run_check = false;
  run->add_option("TASK", run_task_name, "task file or sample name")->required();
  run->add_option("--device", run_device, "cpu or cuda")->capture_default_str();
  run->add_option("--trial", run_trial, "which trial's draws")->capture_default_str();
  run->add_option("--config", run_config, "evaluation config (configs/eval.yaml); defaults when omitted");
  run->add_option("--dims", run_dims, "override dimensions: NAME=VALUE,...");
  run->add_flag("--check-dims", run_check, "at the task's small check dimensions");
  run->add_flag("--json", run_json, "one JSON document instead of text");
  set_action(run, [] { return run_task(run_task_name, run_device, run_trial, run_config, run_json, run_check, run_dims); });

  auto* fmt = task->add_subcommand("fmt", "Check task files; with --write, rewrite them in full form");
  static std::vector<std::string> fmt_tasks;
  static bool fmt_write = false;
  fmt->add_option("TASK", fmt_tasks, "task files")->required();
  fmt->add_flag("--write", fmt_write, "rewrite each file with its derived fields");
  set_action(fmt, [] {
    for (const auto& f : fmt_tasks) {
      std::string path = resolve_task_path(f);
      TaskSpec t = load_task(path);
      if (fmt_write) write_text(path, task_to_yaml(t));
      std::cout << path << ": ok (" << t.id << ")" << (fmt_write ? ", written" : "") << "\n";
    }
    return 0;
  });

  auto* dump = task->add_subcommand("dump", "Write program.py, task.yaml, args and reference outputs (CPU) per task");
  static std::vector<std::string> dump_tasks;
  static std::string dump_out;
  static bool dump_all_ops = false, dump_check = false;
  static uint64_t dump_trial = 0, dump_salt = 0;
  dump->add_option("TASK", dump_tasks, "task files or sample names");
  dump->add_option("--out", dump_out, "output directory (one folder per task)")->required();
  dump->add_flag("--all-ops", dump_all_ops, "also every registered operator on its example inputs");
  dump->add_flag("--check-dims", dump_check, "tasks at their small check dimensions");
  dump->add_option("--trial", dump_trial, "which trial's draws")->capture_default_str();
  dump->add_option("--salt", dump_salt, "draw salt")->capture_default_str();
  set_action(dump, [] {
    KFORGE_CHECK(!dump_tasks.empty() || dump_all_ops, usage, "task dump needs TASK files or --all-ops");
    apply_reference_precision();
    int count = 0;
    if (dump_all_ops) {
      for (const auto& op : op_registry().all()) {
        dump_task(make_op_example_task(op), fs::path(dump_out) / ("op_" + op.name), dump_trial, dump_salt);
        ++count;
      }
    }
    for (const auto& name : dump_tasks) {
      TaskSpec t = load_for_cli(name, dump_check, "");
      dump_task(t, fs::path(dump_out) / t.id, dump_trial, dump_salt);
      ++count;
    }
    std::cout << "dumped " << count << " task(s) to " << dump_out << "\n";
    return 0;
  });
}

void add_ops_command(CLI::App& app) {
  auto* ops = app.add_subcommand("ops", "List the operator registry");
  static bool ops_json = false;
  ops->add_flag("--json", ops_json, "as JSON");
  set_action(ops, [] {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& op : op_registry().all()) {
      nlohmann::ordered_json attrs = nlohmann::ordered_json::array();
      for (const auto& a : op.attrs) attrs.push_back({{"name", a.name}, {"default", a.default_text}, {"doc", a.doc}});
      j.push_back({{"name", op.name},
                   {"category", category_name(op.category)},
                   {"inputs", {op.min_inputs, op.max_inputs}},
                   {"params", static_cast<bool>(op.params)},
                   {"summary", op.summary},
                   {"attrs", attrs}});
    }
    if (ops_json) {
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    for (const auto& o : j) {
      std::string attrs;
      for (const auto& a : o["attrs"]) {
        std::string d = a["default"].get<std::string>();
        attrs += (attrs.empty() ? "" : ", ") + a["name"].get<std::string>() + (d.empty() ? "" : "=" + d);
      }
      std::printf("%-12s %-19s %s%s\n", o["name"].get<std::string>().c_str(), o["category"].get<std::string>().c_str(),
                  o["summary"].get<std::string>().c_str(), attrs.empty() ? "" : ("  [" + attrs + "]").c_str());
    }
    std::cout << op_registry().all().size() << " operators\n";
    return 0;
  });
}

}  // namespace kforge::cli
