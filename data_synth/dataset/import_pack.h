#pragma once
// The kforge half of `kforge tasks import` (data_synth/task/TASK_FORMAT.md, "Imported tasks"): after the
// Python importer (tools/dataset/task_import/) wrote DIR/tasks/<id>.yaml, DIR/skipped.jsonl and
// DIR/import_summary.json, every task file is parsed with kforge's own parser (a file it refuses
// is skipped with reason spec_error and the parser's message) and the tasks are packed as a dataset
// of the synthesis format (DATASET_FORMAT.md) in DIR/dataset.h5.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

struct SkippedModule {
  std::string file;
  std::optional<int64_t> row;
  std::string reason;  // the importer's codes (load_error, stochastic, ...) or spec_error
  std::string detail;
};

// One non-blank line of DIR/skipped.jsonl ({"file", "row", "reason", "detail"} a line, as
// pack_import_dir writes it): the module, or why the line is not one.
struct SkippedLine {
  std::optional<SkippedModule> module;
  std::string error;  // when there is no module
};
// Calls `each(line_number, line)` for every non-blank line of `path`, in order (1-based numbers);
// nothing when the file does not exist. Throws an io error when it exists but cannot be read.
void read_skipped_lines(const std::string& path, const std::function<void(int, const SkippedLine&)>& each);

struct ImportPack {
  Dataset dataset;                     // one row per task the parser took, ids in file order
  std::vector<SkippedModule> skipped;  // the importer's, then the parser's and the check's refusals
  double importer_seconds = 0;         // import_summary.json's "seconds" (0 when absent)
  // The check's counts (pack_import_dir's `check`): tasks it ran on, and tasks it left unchecked
  // (it returned kImportUnchecked: e.g. too large to run on this machine).
  int64_t checked = 0, unchecked = 0;
  std::map<std::string, int64_t> unchecked_by_reason;  // the check's `detail` ("flops unknown", ...)
  bool check_ran = false;

  std::map<std::string, int64_t> skipped_by_reason() const;
  // The table `kforge tasks import` prints: imported, skipped by reason, modules per second over
  // `seconds` (the importer's and the packing's time).
  std::string table(double seconds) const;
};

// One dataset row of an imported task: its spec (artifact included, base64), its program
// verbatim, the artifact's hash as the dedup key, the FLOP count or NaN, status cpu_ok.
DatasetRow imported_task_row(const TaskSpec& t);

// A check of every task the parser took (kforge tasks import passes the input checks of
// data_synth/reference/sensitivity.h): "" keeps the task, kImportUnchecked keeps it unchecked,
// any other value is the reason code of its skip, with `detail` its one-line explanation.
using ImportCheck = std::function<std::string(const TaskSpec& task, std::string& detail)>;
inline constexpr const char kImportUnchecked[] = "unchecked";
// The skip reasons kforge itself gives (the parser's and the check's); a new pack decides them again.
inline constexpr const char* kPackReasons[] = {"spec_error", "input_matters", "reference_failed"};

// Reads DIR/tasks/*.yaml (sorted by name), DIR/skipped.jsonl and DIR/import_summary.json when
// present; runs `check` (when given) on every task parsed; writes DIR/dataset.h5 and rewrites
// DIR/skipped.jsonl with the parser's and the check's refusals added (kPackReasons lines of an
// earlier pack of the same DIR are replaced, not repeated). Throws io errors for a missing
// DIR/tasks or an unreadable file.
ImportPack pack_import_dir(const std::string& dir, const std::string& command_line, const ImportCheck& check = nullptr);

}  // namespace kforge
