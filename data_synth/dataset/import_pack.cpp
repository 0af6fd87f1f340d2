#include "data_synth/dataset/import_pack.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "data_synth/task/render_python.h"

namespace kforge {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const char kSpecError[] = "spec_error";

std::vector<SkippedModule> read_skipped(const fs::path& path) {
  std::vector<SkippedModule> out;
  read_skipped_lines(path.string(), [&](int n, const SkippedLine& l) {
    KFORGE_CHECK(l.module, io, path.string() << ":" << n << ": " << l.error);
    // an earlier pack's own refusals (spec_error, the check's): this one decides again
    if (std::find(std::begin(kPackReasons), std::end(kPackReasons), l.module->reason) == std::end(kPackReasons)) out.push_back(*l.module);
  });
  return out;
}

void write_skipped(const fs::path& path, const std::vector<SkippedModule>& skipped) {
  std::string tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    KFORGE_CHECK(out, io, tmp << ": cannot write");
    for (const auto& s : skipped)
      out << Json{{"file", s.file}, {"row", s.row ? Json(*s.row) : Json()}, {"reason", s.reason}, {"detail", s.detail}}.dump() << "\n";
    KFORGE_CHECK(out, io, tmp << ": write failed");
  }
  fs::rename(tmp, path);
}

Json summary_json(const ImportPack& p) {
  Json skipped = Json::object();
  for (const auto& [k, v] : p.skipped_by_reason()) skipped[k] = v;
  Json j = {{"imported", p.dataset.rows.size()}, {"skipped", skipped}, {"importer_seconds", p.importer_seconds}};
  if (p.check_ran) {
    j["input_checks"] = {{"checked", p.checked}, {"unchecked", p.unchecked}};
    if (!p.unchecked_by_reason.empty()) j["input_checks"]["unchecked_by_reason"] = p.unchecked_by_reason;
  }
  return j;
}

}  // namespace

void read_skipped_lines(const std::string& path, const std::function<void(int, const SkippedLine&)>& each) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  KFORGE_CHECK(in, io, path << ": cannot read");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    SkippedLine l;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const std::exception& e) {
      l.error = std::string("not a JSON object: ") + e.what();
      each(n, l);
      continue;
    }
    if (!(j.is_object() && j.contains("reason") && j["reason"].is_string())) {
      l.error = "a skipped module is {\"file\", \"row\", \"reason\", \"detail\"}";
      each(n, l);
      continue;
    }
    SkippedModule s;
    s.reason = j["reason"].get<std::string>();
    s.file = j.value("file", "");
    if (j.contains("row") && j["row"].is_number_integer()) s.row = j["row"].get<int64_t>();
    s.detail = j.value("detail", "");
    l.module = std::move(s);
    each(n, l);
  }
}

std::map<std::string, int64_t> ImportPack::skipped_by_reason() const {
  std::map<std::string, int64_t> out;
  for (const auto& s : skipped) ++out[s.reason];
  return out;
}

std::string ImportPack::table(double seconds) const {
  std::ostringstream os;
  const int64_t imported = static_cast<int64_t>(dataset.rows.size()), n_skipped = static_cast<int64_t>(skipped.size());
  os << "imported  " << imported << "\n";
  os << "skipped   " << n_skipped << "\n";
  for (const auto& [reason, n] : skipped_by_reason())
    os << "  " << reason << std::string(std::max<size_t>(1, 22 - reason.size()), ' ') << n << "\n";
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.2f", seconds > 0 ? (imported + n_skipped) / seconds : 0.0);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  os << "modules   " << imported + n_skipped << " in " << secs << " s (" << rate << " modules/s)\n";
  if (check_ran) {
    const auto by = skipped_by_reason();
    os << "input checks: " << checked << " task(s) checked, " << (by.count("input_matters") ? by.at("input_matters") : 0)
       << " refused (input_matters)";
    if (unchecked) {
      os << ", " << unchecked << " left unchecked (";
      bool first = true;
      for (const auto& [why, n] : unchecked_by_reason) {
        os << (first ? "" : ", ") << n << " " << why;
        first = false;
      }
      if (unchecked_by_reason.empty()) os << "too large for the CPU check";
      os << "; the GPU sensitivity check is left to check them)";
    }
    os << "\n";
  }
  return os.str();
}

DatasetRow imported_task_row(const TaskSpec& t) {
  KFORGE_CHECK(t.imported(), internal, "task " << t.id << " is not an imported task");
  DatasetRow r;
  r.id = t.id;
  r.split = split_name(t.split);
  r.source = task_source_name(t.source);
  r.dtype = dtype_name(t.dtype);
  if (t.provenance.ops)
    for (const auto& op : *t.provenance.ops) r.ops += (r.ops.empty() ? "" : ",") + op;
  r.n_ops = t.provenance.ops ? static_cast<int32_t>(t.provenance.ops->size()) : 0;
  r.spec_yaml = task_to_yaml(t);
  r.program_py = render_python(t);
  r.graph_hash = t.reference.sha256;  // the exported function's identity: the dedup key
  r.family = t.provenance.format;
  r.est_runtime_ms = 0;  // no cost model for an arbitrary module: the GPU stage measures it
  r.flops = t.cost.flops ? *t.cost.flops : std::numeric_limits<double>::quiet_NaN();
  r.min_bytes = t.cost.min_bytes;
  r.eager_ms = r.compile_ms = std::numeric_limits<double>::quiet_NaN();
  return r;
}

ImportPack pack_import_dir(const std::string& dir_text, const std::string& command_line, const ImportCheck& check) {
  const fs::path dir(dir_text), tasks_dir = dir / "tasks";
  KFORGE_CHECK(fs::is_directory(tasks_dir), io, tasks_dir.string() << ": no such directory (the importer writes DIR/tasks/<id>.yaml)");
  ImportPack p;
  p.skipped = read_skipped(dir / "skipped.jsonl");
  if (fs::exists(dir / "import_summary.json")) {
    Json s = Json::parse(read_file(dir / "import_summary.json", "the import summary"), nullptr, false);
    if (s.is_object() && s.contains("seconds") && s["seconds"].is_number()) p.importer_seconds = s["seconds"].get<double>();
  }
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(tasks_dir))
    if (f.is_regular_file() && f.path().extension() == ".yaml") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::set<std::string> ids;
  for (const auto& f : files) {
    try {
      TaskSpec t = parse_task(read_file(f, "the task file"), f.string());
      KFORGE_CHECK(t.imported(), spec, f.string() << ": not an imported task (no `reference: {kind: torchscript}`)");
      KFORGE_CHECK(ids.insert(t.id).second, spec, f.string() << ": id '" << t.id << "' is already taken by another task file");
      if (check) {
        p.check_ran = true;
        std::string detail, reason = check(t, detail);
        if (reason == kImportUnchecked) {
          ++p.unchecked;
          ++p.unchecked_by_reason[detail.empty() ? std::string("too large for the CPU check") : detail];
        } else {
          ++p.checked;
          if (!reason.empty()) {
            // Named by its module, as the importer names its own skips, so that a benchmark's
            // per-level denominator finds the level (KernelBench's levelN folders; a task file
            // path has none: efficientnetb2 went uncounted at level 3, s31). The detail names the task.
            const std::string module = t.provenance.file.empty() ? f.string() : t.provenance.file;
            p.skipped.push_back({module, t.provenance.row, reason, t.id + ": " + detail});
            continue;
          }
        }
      }
      p.dataset.rows.push_back(imported_task_row(t));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::io) throw;
      p.skipped.push_back({f.string(), std::nullopt, kSpecError, e.what()});
    }
  }
  p.dataset.attrs["generator"] = "kforge tasks import";
  p.dataset.attrs["config_yaml"] = command_line;
  p.dataset.attrs["summary_json"] = summary_json(p).dump();
  p.dataset.attrs["gpu_stages"] = "pending: eager_runtime_window, torch_compile_build, baselines";
  write_dataset((dir / "dataset.h5").string(), p.dataset);
  write_skipped(dir / "skipped.jsonl", p.skipped);
  return p;
}

}  // namespace kforge
