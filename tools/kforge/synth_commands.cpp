// kforge synth, kforge tasks count|list|show|export over an HDF5 dataset, and kforge tasks pack (task
// files into a new dataset).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/reference/reference.h"
#include "data_synth/synth/cpu_checks.h"
#include "data_synth/synth/synth_pipeline.h"
#include "data_synth/task/render_python.h"
#include "data_synth/task/task_spec.h"
#include "tools/kforge/commands.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace kforge::cli {

namespace {

DatasetRow to_row(const KeptTask& k) {
  DatasetRow r;
  const TaskSpec& t = k.task;
  r.id = t.id;
  r.split = split_name(t.split);
  r.source = task_source_name(t.source);
  r.dtype = dtype_name(t.dtype);
  for (const auto& n : t.graph.nodes) r.ops += (r.ops.empty() ? "" : ",") + n.op;
  r.n_ops = static_cast<int32_t>(t.graph.nodes.size());
  r.spec_yaml = task_to_yaml(t);
  r.program_py = render_python(t);
  r.graph_hash = k.hash;
  r.op_sequence = k.sequence;
  r.family = k.family;
  r.est_runtime_ms = k.est_ms;
  r.flops = t.resolved.flops;
  r.min_bytes = t.resolved.min_bytes;
  r.eager_ms = r.compile_ms = std::numeric_limits<double>::quiet_NaN();
  return r;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  KFORGE_CHECK(out, io, path.string() << ": cannot write");
  out << text;
}

int run_synth(const std::string& config_path, const std::string& out_dir, int64_t target, bool quiet) {
  SynthConfig cfg = config_path.empty() ? SynthConfig{} : SynthConfig::load(config_path);
  if (target > 0) cfg.target_tasks = target;
  std::vector<std::unique_ptr<CandidateFilter>> filters;
  if (auto f = make_decontamination_filter(cfg.decontamination, KFORGE_SOURCE_DIR)) filters.push_back(std::move(f));
  if (cfg.cpu_check.enabled) {
    apply_reference_precision();
    at::set_num_threads(1);  // many small checks: threads cost more than they give
    filters.push_back(make_cpu_reference_filter(cfg.cpu_check));
  }
  SynthRunOptions opts;
  opts.out_dir = out_dir;
  if (!quiet) {
    opts.progress = [](const SynthProgress& p) {
      double rate = p.elapsed_s > 0 ? p.drawn / p.elapsed_s : 0;
      double kept_rate = p.elapsed_s > 0 ? p.kept / p.elapsed_s : 0;
      double left = kept_rate > 0 ? std::max<int64_t>(0, p.target - p.kept) / kept_rate : -1;
      std::fprintf(stderr, "synth: shard %lld | drawn %lld | kept %lld/%lld | %.1f candidates/s | elapsed %s | left ~%s\n",
                   static_cast<long long>(p.shard), static_cast<long long>(p.drawn), static_cast<long long>(p.kept),
                   static_cast<long long>(p.target), rate, duration(p.elapsed_s).c_str(), duration(left).c_str());
    };
  }
  SynthSummary summary;
  std::vector<KeptTask> kept = run_synthesis(cfg, filters, opts, summary);

  Dataset d;
  d.attrs["generator"] = "kforge-synth 1";
  d.attrs["seed"] = std::to_string(cfg.seed);
  d.attrs["config_yaml"] = config_path.empty() ? "" : read_file(config_path, "the synthesis config");
  d.attrs["summary_json"] = summary.json();
  d.attrs["gpu_stages"] = "pending: eager_runtime_window, torch_compile_build, baselines";
  for (const auto& k : kept) d.rows.push_back(to_row(k));
  fs::path out(out_dir);
  write_dataset((out / "dataset.h5").string(), d);
  write_text(out / "summary.json", summary.json() + "\n");
  write_text(out / "summary.txt", summary.table());
  std::cout << summary.table();
  std::cout << "wrote " << (out / "dataset.h5").string() << " (" << d.rows.size() << " tasks), summary.json, summary.txt\n";
  return 0;
}

// The family of a task's first operator, as the synthesizer names them; "" for one it never places first.
std::string first_family(const TaskSpec& t) {
  if (t.graph.nodes.empty()) return "";
  for (const auto& [family, ops] : synth_families())
    if (std::find(ops.begin(), ops.end(), t.graph.nodes.front().op) != ops.end()) return family;
  return "";
}

struct PackArgs {
  std::string out, config, generator = "kforge tasks pack 1";
  std::vector<std::string> tasks;
};

// kforge tasks pack: task files as a new dataset, one row each (status cpu_ok, the GPU stages
// pending), every derived column as kforge synth fills it, the spec column the file as written.
int pack_tasks(const PackArgs& a) {
  SynthConfig cfg = a.config.empty() ? SynthConfig{} : SynthConfig::load(a.config);
  Dataset d;
  std::set<std::string> ids;
  for (const auto& path : a.tasks) {
    std::string text = read_file(path, "the task file");
    TaskSpec t = parse_task(text, path);
    KFORGE_CHECK(ids.insert(t.id).second, usage, path << ": task id '" << t.id << "' is already in the pack");
    KeptTask k{t, first_family(t), canonical_graph_hash(t), canonical_op_sequence(t), estimate_eager_ms(t.resolved, t.dtype, cfg.cost)};
    DatasetRow r = to_row(k);
    r.spec_yaml = text;
    d.rows.push_back(std::move(r));
  }
  d.attrs["generator"] = a.generator;
  d.attrs["seed"] = "0";
  d.attrs["config_yaml"] = a.config.empty() ? "" : read_file(a.config, "the synthesis config");
  d.attrs["summary_json"] = nlohmann::ordered_json{{"drawn", d.rows.size()}, {"kept", d.rows.size()}}.dump();
  d.attrs["gpu_stages"] = "pending: eager_runtime_window, torch_compile_build, baselines";
  write_dataset(a.out, d);
  std::cout << "wrote " << a.out << " (" << d.rows.size() << " tasks)\n";
  return 0;
}

struct TasksArgs {
  std::string dataset, split, source, status, ops, id, format, out;
  int min_ops = 0, max_ops = 0;
  double min_headroom = 0;
  bool program = false, specs = false;
};

std::vector<const DatasetRow*> select(const Dataset& d, const TasksArgs& a) {
  RowFilter f;
  f.split = a.split;
  f.source = a.source;
  f.min_ops = a.min_ops;
  f.max_ops = a.max_ops;
  f.min_headroom = a.min_headroom;
  KFORGE_CHECK(a.min_headroom >= 0, usage, "--min-headroom must be >= 0 (0: no filter)");
  KFORGE_CHECK(a.split.empty() || a.split == "train" || a.split == "heldout", usage,
               "--split is train or heldout, not '" << a.split << "'");
  KFORGE_CHECK(a.source.empty() || task_source_from_name(a.source), usage,
               "--source is one of " << task_source_names() << ", not '" << a.source << "'");
  f.status = StatusFilter::parse(a.status);
  KFORGE_CHECK(a.min_ops >= 0 && a.max_ops >= 0, usage, "--min-ops and --max-ops must be >= 0");
  std::stringstream ss(a.ops);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) {
      KFORGE_CHECK(op_registry().find(item), usage, "--ops: " << op_registry().get(item).name);  // get() names the closest
      f.ops.push_back(item);
    }
  std::vector<const DatasetRow*> out;
  for (const auto& r : d.rows)
    if (f.matches(r)) out.push_back(&r);
  return out;
}

void add_filters(CLI::App* sub, TasksArgs& a) {
  sub->add_option("DATASET", a.dataset, "dataset.h5 written by kforge synth (or dataset.h5.xz, as shipped)")->required();
  sub->add_option("--split", a.split, "train or heldout");
  sub->add_option("--ops", a.ops, "comma-separated operators the task must all use");
  sub->add_option("--source", a.source, "synth, kernelbench, cuda-agent-ops, samples or other");
  sub->add_option("--status", a.status,
                  "ok (with baselines), cpu_ok (GPU stage pending), rejected, rejected:<filter>, or all; "
                  "without it, every task not rejected (the ones the server serves)");
  sub->add_option("--min-ops", a.min_ops, "at least this many operators");
  sub->add_option("--max-ops", a.max_ops, "at most this many operators");
  sub->add_option("--min-headroom", a.min_headroom,
                  "compile_headroom (torch.compile's time over the task's roofline, kforge tasks headroom) at least this; "
                  "rows without one are left out. 1.15: the payable split, where beating torch.compile by 5 % is in reach");
}

nlohmann::ordered_json row_json(const DatasetRow& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  return {{"id", r.id},
          {"split", r.split},
          {"source", r.source},
          {"dtype", r.dtype},
          {"ops", r.ops},
          {"n_ops", r.n_ops},
          {"family", r.family},
          {"status", r.status},
          {"graph_hash", r.graph_hash},
          {"op_sequence", r.op_sequence},
          {"est_runtime_ms", r.est_runtime_ms},
          {"flops", r.flops},
          {"min_bytes", r.min_bytes},
          {"eager_ms", num(r.eager_ms)},
          {"compile_ms", num(r.compile_ms)},
          {"compile_headroom", num(r.compile_headroom)},
          {"baseline", r.baseline_json.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json::parse(r.baseline_json)},
          {"spec_yaml", r.spec_yaml},
          {"program_py", r.program_py}};
}

}  // namespace

void add_synth_commands(CLI::App& app) {
  auto* synth = app.add_subcommand("synth", "Synthesise tasks: compose, size, filter (CPU stages), split, write DIR/dataset.h5");
  static std::string config, out;
  static int64_t target = 0;
  static bool quiet = false;
  synth->add_option("--config", config, "synthesis config (configs/synth.yaml); defaults when omitted");
  synth->add_option("--out", out, "output directory (shards/, dataset.h5, summary.json, summary.txt); resumes what is there")->required();
  synth->add_option("--target", target, "kept tasks to reach (overrides target_tasks)");
  synth->add_flag("--quiet", quiet, "no progress lines");
  set_action(synth, [] { return run_synth(config, out, target, quiet); });

  auto* tasks = app.add_subcommand("tasks", "Read a task dataset (HDF5), or pack task files into a new one");
  tasks->require_subcommand(1);
  static TasksArgs a;
  auto* count = tasks->add_subcommand("count", "Print how many tasks match");
  add_filters(count, a);
  set_action(count, [] {
    std::cout << select(read_dataset(a.dataset), a).size() << "\n";
    return 0;
  });
  auto* list = tasks->add_subcommand(
      "list", "One line per matching task: id, split, status, dtype, estimated ms, measured eager ms (- before the GPU stage), operators");
  add_filters(list, a);
  set_action(list, [] {
    Dataset d = read_dataset(a.dataset);
    for (const DatasetRow* r : select(d, a)) {
      char eager[32] = "-";
      if (std::isfinite(r->eager_ms)) std::snprintf(eager, sizeof eager, "%.2f", r->eager_ms);
      std::printf("%-28s %-8s %-8s %-8s %8.2f %8s  %s\n", r->id.c_str(), r->split.c_str(), r->status.c_str(), r->dtype.c_str(),
                  r->est_runtime_ms, eager, r->ops.c_str());
    }
    return 0;
  });
  auto* show = tasks->add_subcommand("show", "Print one task's spec (or its program)");
  show->add_option("DATASET", a.dataset, "dataset.h5")->required();
  show->add_option("ID", a.id, "task id")->required();
  show->add_flag("--program", a.program, "the PyTorch program instead of the spec");
  set_action(show, [] {
    Dataset d = read_dataset(a.dataset);
    for (const auto& r : d.rows)
      if (r.id == a.id) {
        std::cout << (a.program ? r.program_py : r.spec_yaml);
        return 0;
      }
    KFORGE_FAIL(usage, a.dataset << ": no task '" << a.id << "'");
  });
  auto* pack = tasks->add_subcommand("pack", "Write task files as a new dataset (status cpu_ok), ready for the GPU stage");
  static PackArgs pa;
  pack->add_option("OUT", pa.out, "dataset.h5 to write (replaced when it exists)")->required();
  pack->add_option("TASKS", pa.tasks, "task files, one row each in this order")->required();
  pack->add_option("--config", pa.config, "synthesis config whose cost model estimates est_runtime_ms (defaults when omitted)");
  pack->add_option("--generator", pa.generator, "the generator attribute")->capture_default_str();
  set_action(pack, [] { return pack_tasks(pa); });
  auto* exp = tasks->add_subcommand("export", "Write matching tasks as a KernelBench-style folder or JSONL");
  add_filters(exp, a);
  exp->add_option("--format", a.format, "kernelbench (one .py per task) or jsonl")->required();
  exp->add_option("--out", a.out, "folder (kernelbench) or file (jsonl)")->required();
  exp->add_flag("--specs", a.specs, "kernelbench: also write each task's spec as ID.yaml");
  set_action(exp, [] {
    KFORGE_CHECK(a.format == "kernelbench" || a.format == "jsonl", usage, "--format is kernelbench or jsonl, not '" << a.format << "'");
    Dataset d = read_dataset(a.dataset);
    auto rows = select(d, a);
    if (a.format == "jsonl") {
      std::ofstream f(a.out);
      KFORGE_CHECK(f, io, a.out << ": cannot write");
      for (const DatasetRow* r : rows) f << row_json(*r).dump() << "\n";
    } else {
      fs::create_directories(a.out);
      for (const DatasetRow* r : rows) {
        write_text(fs::path(a.out) / (r->id + ".py"), r->program_py);
        if (a.specs) write_text(fs::path(a.out) / (r->id + ".yaml"), r->spec_yaml);
      }
    }
    std::cout << "exported " << rows.size() << " task(s) to " << a.out << "\n";
    return 0;
  });
}

}  // namespace kforge::cli
