#include "rollout/task_catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "configs/error.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/dataset/import_pack.h"
#include "data_synth/dataset/row_status.h"
#include "data_synth/task/dtype.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

const std::string kSamples = task_source_name(TaskSource::samples);

std::vector<std::string> split_ops(const std::string& csv) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    if (end > start) out.push_back(csv.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

void TaskCatalog::insert(CatalogEntry e) {
  auto it = entries_.find(e.name);
  KFORGE_CHECK(it == entries_.end(), config,
               "task '" << e.name << "' is served twice: from " << it->second.origin << " and from " << e.origin);
  std::string name = e.name;
  if (e.source == kSamples) ++samples_;
  entries_.emplace(std::move(name), std::move(e));
}

void TaskCatalog::add_task(std::shared_ptr<const TaskSpec> spec, const std::string& origin) {
  CatalogEntry e;
  e.name = spec->id;
  e.split = split_name(spec->split);
  e.source = task_source_name(spec->source);
  e.dtype = dtype_name(spec->dtype);
  e.description = spec->description;
  e.origin = origin;
  for (const auto& n : spec->graph.nodes) e.ops.push_back(n.op);
  if (spec->imported() && spec->provenance.ops) e.ops = *spec->provenance.ops;  // an imported module's own op list
  e.eager_ms = spec->baselines.eager_ms;
  e.compile_ms = spec->baselines.compile_ms;
  e.baseline_gpu = spec->baselines.gpu;
  e.level = spec->provenance.level;
  e.tolerance_profile = spec->provenance.tolerance_profile;
  e.spec = std::move(spec);
  insert(std::move(e));
}

void TaskCatalog::add_spec_dir(const std::string& dir) {
  KFORGE_CHECK(fs::is_directory(dir), io, dir << ": no such task directory");
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() == ".yaml") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) add_task(std::make_shared<const TaskSpec>(load_task(f.string())), f.string());
}

void TaskCatalog::add_dataset(const std::string& path, bool serve_unmeasured, double min_headroom) {
  std::string file = path;
  if (fs::is_directory(path)) {  // dataset.h5, or the shipped dataset.h5.xz
    file = (fs::path(path) / "dataset.h5").string();
    if (!fs::exists(file) && fs::exists(file + ".xz")) file += ".xz";
    KFORGE_CHECK(fs::exists(file), io, path << ": holds neither dataset.h5 nor dataset.h5.xz");
  }
  Dataset d = read_dataset(file);
  std::string imported_source;  // the source of the dataset's imported rows, for its import's skips
  for (auto& row : d.rows) {
    const std::optional<TaskSource> source = task_source_from_name(row.source);
    const bool imported = source == TaskSource::kernelbench || source == TaskSource::cuda_agent_ops;
    if (imported && imported_source.empty()) imported_source = row.source;
    const RowStatus status = read_status(row.status, file + ": row '" + row.id + "'");
    // A row left out, counted by its stage and reason, and by its level where it is an imported one
    // (its spec parsed for that: a few hundred rows at most; -1: no level). A rejected row whose spec
    // no longer parses is still left out, at no level: it is not served either way.
    auto leave_out = [&](LeftOutStage stage, const std::string& reason) {
      int level = -1;
      if (imported) {
        try {
          level = parse_task(row.spec_yaml, file + ":" + row.id).provenance.level.value_or(-1);
        } catch (const Error&) {
          level = -1;
        }
      }
      ++left_out_[{row.source, stage, reason, level}];
    };
    if (status.rejected()) {
      // The input checks reject after the GPU stage: their own stage.
      leave_out(status.rejected_by_input_checks() ? LeftOutStage::input_checks : LeftOutStage::gpu_stage, status.reason);
      continue;
    }
    const bool measured = status.kind == RowStatus::Kind::ok;
    if (!measured && !serve_unmeasured) {
      leave_out(LeftOutStage::not_measured, "");
      continue;
    }
    if (min_headroom > 0 && !(row.compile_headroom >= min_headroom)) {
      leave_out(LeftOutStage::headroom, std::isfinite(row.compile_headroom) ? "below" : "unknown");
      continue;
    }
    CatalogEntry e;
    e.name = row.id;
    e.split = row.split;
    e.source = row.source;
    e.dtype = row.dtype;
    e.ops = split_ops(row.ops);
    if (std::isfinite(row.eager_ms) && row.eager_ms > 0) e.eager_ms = row.eager_ms;  // NaN until measured
    if (std::isfinite(row.compile_ms) && row.compile_ms > 0) e.compile_ms = row.compile_ms;
    if (std::isfinite(row.compile_headroom)) e.compile_headroom = row.compile_headroom;
    if (!row.baseline_json.empty()) {
      const Json b = Json::parse(row.baseline_json, nullptr, false);  // unreadable: no GPU named
      if (b.is_object() && b.contains("gpu") && b["gpu"].is_string()) e.baseline_gpu = b["gpu"].get<std::string>();
    }
    e.origin = file;
    e.graph_hash = row.graph_hash;
    if (imported) {
      // Imported rows (a few hundred at most) are parsed now: the listing names their level and
      // tolerance profile, and their TorchScript artifact is decoded once.
      auto spec = std::make_shared<const TaskSpec>(parse_task(row.spec_yaml, file + ":" + row.id));
      e.level = spec->provenance.level;
      e.tolerance_profile = spec->provenance.tolerance_profile;
      e.description = spec->description;
      e.spec = std::move(spec);
    } else {
      e.spec_yaml = std::move(row.spec_yaml);
    }
    insert(std::move(e));
    if (!measured) ++unmeasured_;
  }
  count_import_skips(file, imported_source);
}

// The modules `kforge tasks import` skipped, from DIR/skipped.jsonl beside DIR/dataset.h5, by
// reason; a line that is not a skipped module counts as reason "unreadable".
void TaskCatalog::count_import_skips(const std::string& dataset_file, const std::string& source) {
  const std::string src = source.empty() ? "imported" : source;
  read_skipped_lines((fs::path(dataset_file).parent_path() / "skipped.jsonl").string(), [&](int, const SkippedLine& l) {
    const std::optional<int> level = l.module ? level_of_module_path(l.module->file) : std::nullopt;
    ++left_out_[{src, LeftOutStage::import, l.module ? l.module->reason : "unreadable", level ? *level : -1}];
  });
}

std::optional<int> level_of_module_path(const std::string& path) {
  for (fs::path p = fs::path(path).parent_path(); !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    const std::string name = p.filename().string();
    const bool digits =
        name.size() > 5 && name.size() <= 9 && std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && name.compare(0, 5, "level") == 0) return std::stoi(name.substr(5));
  }
  return std::nullopt;
}

const char* left_out_stage_name(LeftOutStage stage) {
  switch (stage) {
    case LeftOutStage::gpu_stage:
      return "gpu_stage";
    case LeftOutStage::import:
      return "import";
    case LeftOutStage::input_checks:
      return "input_checks";
    case LeftOutStage::not_measured:
      return "not_measured";
    case LeftOutStage::headroom:
      return "headroom";
  }
  return "";
}

size_t TaskCatalog::unmeasured_left_out() const {
  size_t n = 0;
  for (const auto& [key, rows] : left_out_)
    if (std::get<1>(key) == LeftOutStage::not_measured) n += rows;
  return n;
}

std::vector<LeftOut> TaskCatalog::left_out() const {
  std::vector<LeftOut> out;
  for (const auto& [key, rows] : left_out_) {
    const int level = std::get<3>(key);
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), rows, level >= 0 ? std::optional<int>(level) : std::nullopt});
  }
  return out;
}

std::shared_ptr<const TaskSpec> TaskCatalog::find(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  CatalogEntry& e = it->second;
  if (!e.spec) {
    e.spec = std::make_shared<const TaskSpec>(parse_task(e.spec_yaml, e.origin + ":" + e.name));
    e.description = e.spec->description;
    e.spec_yaml.clear();
    e.spec_yaml.shrink_to_fit();
  }
  if (e.baselines) {  // an overlay not yet applied to the spec
    auto with = std::make_shared<TaskSpec>(*e.spec);
    with->baselines = *e.baselines;
    e.spec = std::move(with);
    e.baselines.reset();
  }
  return e.spec;
}

std::string baseline_key_slug(const std::string& gpu_model) {
  std::string s;
  for (char c : gpu_model) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::isalnum(static_cast<unsigned char>(l)) || l == '.')
      s += l;
    else if (s.empty() || s.back() != '-')
      s += '-';
  }
  auto edge = [](char c) { return c == '-' || c == '.'; };
  size_t start = 0;
  while (start < s.size() && edge(s[start])) ++start;
  s = s.substr(start);
  while (!s.empty() && edge(s.back())) s.pop_back();
  s = s.substr(0, 64);
  while (!s.empty() && edge(s.back())) s.pop_back();
  return s.empty() ? "unknown" : s;
}

std::string merged_baselines_of(const std::string& dir, const std::string& gpu_model) {
  const std::string prefix = baseline_key_slug(gpu_model) + "__torch-";
  fs::path best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find("__cuda-", prefix.size()) == std::string::npos) continue;
    const fs::path merged = it->path() / "dataset.h5";
    std::error_code tec;
    const auto t = fs::last_write_time(merged, tec);
    if (!tec && (best.empty() || t > best_time)) best = merged, best_time = t;
  }
  return best.string();
}

size_t TaskCatalog::overlay_baselines(const std::string& dataset) {
  const Dataset d = read_dataset(dataset);
  size_t replaced = 0;
  for (const auto& row : d.rows) {
    if (read_status(row.status, dataset + ": row '" + row.id + "'").kind != RowStatus::Kind::ok) continue;
    auto it = entries_.find(row.id);
    if (it == entries_.end() || it->second.graph_hash.empty() || it->second.graph_hash != row.graph_hash) continue;
    // The baselines the merge wrote into the row's spec: what an episode gets when it serves that dataset.
    Baselines b = spec_baselines(row.spec_yaml, dataset + ":" + row.id);
    CatalogEntry& e = it->second;
    e.eager_ms = b.eager_ms;
    e.compile_ms = b.compile_ms;
    e.baseline_gpu = b.gpu;
    e.baselines = std::make_shared<const Baselines>(std::move(b));
    ++replaced;
  }
  return replaced;
}

Json TaskCatalog::list(const TasksParams& f, int64_t default_limit) const {
  Json tasks = Json::array();
  int64_t total = 0;
  const int64_t limit = f.limit.value_or(default_limit);
  // Samples beside other tasks (a dataset, spec directories): listed when asked for by source.
  const bool samples_asked = (f.source && *f.source == kSamples) || samples_ == entries_.size();
  for (const auto& [name, e] : entries_) {
    if (f.split && e.split != *f.split) continue;
    if (f.source && e.source != *f.source) continue;
    if (e.source == kSamples && !samples_asked) continue;
    const std::vector<std::string>& ops = e.ops;  // a lambda may not capture a structured binding before C++20
    bool has_all =
        std::all_of(f.ops.begin(), f.ops.end(), [&](const std::string& op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); });
    if (!has_all) continue;
    if (total >= f.offset && static_cast<int64_t>(tasks.size()) < limit) {
      tasks.push_back({{"name", e.name},
                       {"split", e.split},
                       {"source", e.source},
                       {"dtype", e.dtype},
                       {"ops", e.ops},
                       {"n_ops", e.ops.size()},
                       {"description", e.description},
                       {"eager_ms", e.eager_ms ? Json(*e.eager_ms) : Json()},
                       {"compile_ms", e.compile_ms ? Json(*e.compile_ms) : Json()},
                       {"compile_headroom", e.compile_headroom ? Json(*e.compile_headroom) : Json()}});
      if (e.level) tasks.back()["level"] = *e.level;
      if (!e.tolerance_profile.empty()) tasks.back()["tolerance_profile"] = e.tolerance_profile;
    }
    ++total;
  }
  Json out = {{"tasks", tasks}, {"total", total}, {"offset", f.offset}};
  int64_t next = f.offset + static_cast<int64_t>(tasks.size());
  out["next_offset"] = next < total ? Json(next) : Json();
  return out;
}

std::map<std::string, size_t> TaskCatalog::compile_baselines_by_gpu() const {
  std::map<std::string, size_t> by;
  for (const auto& [name, e] : entries_)
    if (e.compile_ms) ++by[e.baseline_gpu];
  return by;
}

size_t TaskCatalog::without_compile_baseline() const {
  size_t n = 0;
  for (const auto& [name, e] : entries_) n += e.compile_ms ? 0 : 1;
  return n;
}

}  // namespace kforge
