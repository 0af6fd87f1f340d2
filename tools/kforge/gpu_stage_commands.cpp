// What the synthesizer's GPU stage (tools/dataset/synth_gpu/) asks of kforge, so that it reimplements none
// of it: the tasks of a dataset as kforge resolves them (kforge tasks export-gpu), and the
// measured baselines written back into the HDF5 dataset (kforge tasks set-baselines) or into a
// task file (kforge task set-baselines). The contract is in tools/dataset/SYNTH_GPU.md.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/synth/synth_config.h"
#include "data_synth/task/task_spec.h"
#include "tools/kforge/commands.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace kforge::cli {

namespace {

// --shard k/N (one block of rows) or all/N (every block, each row tagged with its own).
struct Shard {
  std::vector<int> ks;
  int n = 1;
};

Shard parse_shard(const std::string& text) {
  std::smatch m;
  static const std::regex re("(\\d+|all)/(\\d+)");
  KFORGE_CHECK(std::regex_match(text, m, re), usage, "--shard is k/N with 0 <= k < N, or all/N, not '" << text << "'");
  Shard s;
  s.n = std::stoi(m[2].str());
  bool all = m[1].str() == "all";
  KFORGE_CHECK(s.n >= 1 && (all || std::stoi(m[1].str()) < s.n), usage, "--shard is k/N with 0 <= k < N, or all/N, not '" << text << "'");
  if (all)
    for (int k = 0; k < s.n; ++k) s.ks.push_back(k);
  else
    s.ks.push_back(std::stoi(m[1].str()));
  return s;
}

// Shard k of n: a contiguous block of rows (sizes differ by at most one).
std::pair<size_t, size_t> shard_rows(size_t rows, int k, int n) { return {k * rows / n, (k + 1) * rows / n}; }

// (row, shard) pairs in the order the stage does them.
std::vector<std::pair<size_t, int>> select_rows(const Dataset& d, const std::string& dataset, const Shard& s, const std::string& ids_path) {
  std::vector<std::pair<size_t, int>> out;
  if (ids_path.empty()) {
    for (int k : s.ks) {
      auto [lo, hi] = shard_rows(d.rows.size(), k, s.n);
      for (size_t i = lo; i < hi; ++i) out.emplace_back(i, k);
    }
    return out;
  }
  KFORGE_CHECK(s.ks.size() == 1, usage, "--ids takes --shard k/N (the part file it writes), not all/" << s.n);
  std::ifstream in(ids_path);
  KFORGE_CHECK(in && !fs::is_directory(ids_path), io, ids_path << ": cannot read the id list");
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < d.rows.size(); ++i) row_of.emplace(d.rows[i].id, i);
  std::vector<std::string> unknown;
  std::vector<char> taken(d.rows.size(), 0);
  std::string line;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    std::string id = line.substr(b, e - b + 1);
    auto it = row_of.find(id);
    if (it == row_of.end()) {
      unknown.push_back(id);
    } else if (!taken[it->second]) {
      taken[it->second] = 1;
      out.emplace_back(it->second, s.ks.front());
    }
  }
  KFORGE_CHECK(unknown.empty(), usage, ids_path << ": " << unknown.size() << " id(s) not in " << dataset << ", e.g. " << unknown.front());
  return out;
}

Json dims_json(const DimEnv& dims) {
  Json j = Json::object();
  for (const auto& [k, v] : dims) j[k] = v;
  return j;
}

Json timing_json(const TimingConfig& t) {
  return {{"warmup_count", t.warmup_count}, {"warmup_ms", t.warmup_ms}, {"min_reps", t.min_reps}, {"max_reps", t.max_reps},
          {"target_rse", t.target_rse},     {"budget_ms", t.budget_ms}, {"l2_flush", t.l2_flush}, {"l2_flush_factor", t.l2_flush_factor}};
}

Json task_json(const DatasetRow& r, size_t row, int shard, const std::string& dataset) {
  TaskSpec t = parse_task(r.spec_yaml, dataset + ": row " + std::to_string(row) + " (" + r.id + ")");
  Json outputs = Json::array();
  for (const auto& o : t.outputs) outputs.push_back({{"name", o.name}, {"shape", o.meta.shape}, {"dtype", dtype_name(o.meta.dtype)}});
  return {{"kind", "task"},
          {"id", r.id},
          {"row", row},
          {"shard", shard},
          {"graph_hash", r.graph_hash},
          {"est_runtime_ms", r.est_runtime_ms},
          {"dtype", r.dtype},
          {"split", r.split},
          {"family", r.family},
          {"n_ops", r.n_ops},
          {"status", r.status},
          {"seed", t.seed},
          {"dims", dims_json(t.dims)},
          {"check_dims", t.check_dims ? dims_json(*t.check_dims) : Json(nullptr)},
          // torchscript: an imported module, program_py its own source (no dims, no check_dims)
          {"reference", reference_kind_name(t.reference.kind)},
          // the mode the module runs in: eval for graph tasks; an imported module's own (KernelBench: train)
          {"module_mode", t.imported() ? module_mode_name(t.reference.module_mode) : "eval"},
          {"outputs", outputs},
          {"tolerance", {{"atol", t.tolerance.atol}, {"rtol", t.tolerance.rtol}}},
          {"program_py", r.program_py}};
}

struct ExportArgs {
  std::string dataset, shard = "0/1", ids, config, out;
};

int export_gpu(const ExportArgs& a) {
  Shard shard = parse_shard(a.shard);
  SynthConfig cfg = a.config.empty() ? SynthConfig{} : SynthConfig::load(a.config);
  Dataset d = read_dataset(a.dataset);
  auto rows = select_rows(d, a.dataset, shard, a.ids);
  std::ofstream file;
  if (a.out != "-") {
    file.open(a.out);
    KFORGE_CHECK(file, io, a.out << ": cannot write");
  }
  std::ostream& out = a.out == "-" ? std::cout : file;
  Json settings = {{"kind", "settings"},
                   {"dataset", a.dataset},
                   {"rows", d.rows.size()},
                   {"selected", rows.size()},
                   {"shards", shard.n},
                   {"config", cfg.origin},
                   {"window_ms", {cfg.window_ms_low, cfg.window_ms_high}},
                   {"min_informative_fraction", cfg.cpu_check.min_informative_fraction},
                   {"timing", timing_json(cfg.baseline_timing)},
                   {"tolerance_rule", "|out - ref| <= atol + rtol * |ref|, in double"},
                   {"summary_json", d.attrs.count("summary_json") ? d.attrs.at("summary_json") : ""}};
  out << settings.dump() << "\n";
  for (const auto& [i, k] : rows) out << task_json(d.rows[i], i, k, a.dataset).dump() << "\n";
  out.flush();
  KFORGE_CHECK(out, io, (a.out == "-" ? std::string("stdout") : a.out) << ": write failed");
  return 0;
}

// Six significant digits, as the baselines have always been stored.
double six_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

Baselines baselines_from_json(const Json& j, const std::string& where) {
  KFORGE_CHECK(j.is_object(), usage, where << ": baselines must be an object");
  auto ms = [&](const char* key, bool required) -> std::optional<double> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      KFORGE_CHECK(!required, usage, where << ": baselines." << key << " is required");
      return std::nullopt;
    }
    KFORGE_CHECK(it->is_number(), usage, where << ": baselines." << key << " must be a number");
    double v = it->get<double>();
    KFORGE_CHECK(std::isfinite(v) && v > 0, usage, where << ": baselines." << key << " must be > 0, not " << v);
    return six_digits(v);
  };
  auto str = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::string();
    KFORGE_CHECK(it->is_string(), usage, where << ": baselines." << key << " must be a string");
    return it->get<std::string>();
  };
  Baselines b;
  b.eager_ms = ms("eager_ms", true);
  b.compile_ms = ms("compile_ms", false);
  b.gpu = str("gpu");
  b.torch_version = str("torch");
  b.cuda_version = str("cuda");
  b.method = str("method");
  KFORGE_CHECK(!b.gpu.empty() && !b.method.empty(), usage, where << ": baselines.gpu and baselines.method must not be empty");
  if (auto f = j.find("flags"); f != j.end() && !f->is_null()) {
    KFORGE_CHECK(f->is_object(), usage, where << ": baselines.flags must be an object of strings");
    for (const auto& [k, v] : f->items()) {
      KFORGE_CHECK(v.is_string(), usage, where << ": baselines.flags." << k << " must be a string");
      b.flags[k] = v.get<std::string>();
    }
  }
  return b;
}

double ms_or_nan(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nan("");
  KFORGE_CHECK(it->is_number(), usage, where << ": " << key << " must be a number or null");
  return it->get<double>();
}

// One "row" line of set-baselines applied to its row.
void apply_row(DatasetRow& r, const Json& j, const std::string& where) {
  KFORGE_CHECK(j.value("graph_hash", r.graph_hash) == r.graph_hash, usage,
               where << ": graph_hash " << j.value("graph_hash", "") << " is not task " << r.id << "'s (" << r.graph_hash << ")");
  const std::string text = j.value("status", "");
  const std::optional<RowStatus> status = RowStatus::from_text(text);
  KFORGE_CHECK(status && status->kind != RowStatus::Kind::cpu_ok, usage,
               where << ": status is ok or rejected:<reason>, not '" << text << "'");
  r.status = status->text();
  r.eager_ms = ms_or_nan(j, "eager_ms", where);
  r.compile_ms = ms_or_nan(j, "compile_ms", where);
  r.compile_headroom = std::nan("");  // over the old compile_ms: kforge tasks headroom gives it again
  if (auto b = j.find("baseline"); b != j.end() && !b->is_null()) {
    KFORGE_CHECK(b->is_object(), usage, where << ": baseline must be an object");
    r.baseline_json = b->dump();
  }
  if (auto b = j.find("baselines"); b != j.end() && !b->is_null()) {
    KFORGE_CHECK(status->kind == RowStatus::Kind::ok, usage, where << ": baselines go only into a task whose status is ok");
    r.spec_yaml = spec_with_baselines(r.spec_yaml, baselines_from_json(*b, where), where);
  }
}

struct SetArgs {
  std::string dataset, from;
};

int set_baselines(const SetArgs& a) {
  KFORGE_CHECK(a.dataset.size() < 3 || a.dataset.compare(a.dataset.size() - 3, 3, ".xz") != 0, usage,
               a.dataset << ": a compressed dataset is read-only (unxz -k it first)");
  std::ifstream in(a.from);
  KFORGE_CHECK(in && !fs::is_directory(a.from), io, a.from << ": cannot read");
  Dataset d = read_dataset(a.dataset);
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < d.rows.size(); ++i) row_of.emplace(d.rows[i].id, i);
  std::string line;
  int n = 0, rows = 0, attrs = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = a.from + ":" + std::to_string(n);
    Json j;
    try {
      j = Json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      KFORGE_FAIL(usage, where << ": not JSON (" << e.what() << ")");
    }
    KFORGE_CHECK(j.is_object(), usage, where << ": each line is a JSON object");
    std::string kind = j.value("kind", "");
    if (kind == "attrs") {
      KFORGE_CHECK(j.contains("attrs") && j["attrs"].is_object(), usage, where << ": attrs must be an object of strings");
      for (const auto& [k, v] : j["attrs"].items()) {
        KFORGE_CHECK(v.is_string(), usage, where << ": attrs." << k << " must be a string");
        KFORGE_CHECK(k != "format" && k != "format_version", usage, where << ": attrs." << k << " is kforge's own");
        d.attrs[k] = v.get<std::string>();
      }
      ++attrs;
    } else {
      KFORGE_CHECK(kind == "row", usage, where << ": kind is row or attrs, not '" << kind << "'");
      std::string id = j.value("id", "");
      auto it = row_of.find(id);
      KFORGE_CHECK(it != row_of.end(), usage, where << ": no task '" << id << "' in " << a.dataset);
      apply_row(d.rows[it->second], j, where);
      ++rows;
    }
  }
  write_dataset(a.dataset, d);
  std::cout << "set-baselines: " << rows << " row(s) and " << attrs << " attribute line(s) into " << a.dataset << "\n";
  return 0;
}

// kforge task set-baselines FILE --from JSON: the task file with the baselines block replaced.
int set_file_baselines(const std::string& task_file, const std::string& from) {
  std::string text = read_file(task_file, "the task file");
  Json j;
  try {
    j = Json::parse(read_file(from, "the baselines"));
  } catch (const nlohmann::json::exception& e) {
    KFORGE_FAIL(usage, from << ": not JSON (" << e.what() << ")");
  }
  std::string out = spec_with_baselines(text, baselines_from_json(j, from), task_file);
  if (out == text) {
    std::cout << task_file << ": unchanged\n";
    return 0;
  }
  std::string tmp = task_file + ".tmp";
  {
    std::ofstream f(tmp);
    KFORGE_CHECK(f, io, tmp << ": cannot write");
    f << out;
    KFORGE_CHECK(f.flush(), io, tmp << ": write failed");
  }
  KFORGE_CHECK(std::rename(tmp.c_str(), task_file.c_str()) == 0, io, task_file << ": cannot move the new file into place");
  std::cout << task_file << ": baselines written\n";
  return 0;
}

}  // namespace

void add_gpu_stage_commands(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  CLI::App* task = app.get_subcommand("task");

  auto* exp = tasks->add_subcommand(
      "export-gpu", "The tasks of a shard (or an id list) as the GPU stage needs them: one JSON line of settings, then one per task");
  static ExportArgs ea;
  exp->add_option("DATASET", ea.dataset, "dataset.h5 (or dataset.h5.xz)")->required();
  exp->add_option("--shard", ea.shard, "k/N: the k-th of N contiguous blocks of rows; all/N: every block")->capture_default_str();
  exp->add_option("--ids", ea.ids, "these task ids (one per line, in order) instead of the shard's rows; needs --shard k/N");
  exp->add_option("--config", ea.config, "synthesis config (configs/synth.yaml): window, informative fraction, baseline_timing");
  exp->add_option("--out", ea.out, "JSONL file, or - for stdout")->default_val("-");
  set_action(exp, [] { return export_gpu(ea); });

  auto* set = tasks->add_subcommand("set-baselines", "Write the GPU stage's results (JSONL: row and attrs lines) into a dataset");
  static SetArgs sa;
  set->add_option("DATASET", sa.dataset, "dataset.h5, rewritten in place (a new file moved over it)")->required();
  set->add_option("--from", sa.from, "JSONL file of results")->required();
  set_action(set, [] { return set_baselines(sa); });

  auto* fset = task->add_subcommand("set-baselines", "Replace a task file's baselines block (every other line kept)");
  static std::string f_task, f_from;
  fset->add_option("TASK", f_task, "task file")->required();
  fset->add_option("--from", f_from, "JSON file: {eager_ms, compile_ms, gpu, torch, cuda, method, flags}")->required();
  set_action(fset, [] { return set_file_baselines(f_task, f_from); });
}

}  // namespace kforge::cli
