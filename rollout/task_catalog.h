#pragma once
// The tasks a server offers: the shipped samples, directories of task specs and synthesised
// datasets (data_synth/dataset/DATASET_FORMAT.md). Facts for listing and filtering are kept for every
// task; a spec is parsed when an episode first asks for it and kept (tasks are immutable).
// The samples (source `samples`) are served by name, but a listing beside other tasks holds them
// only when it asks for source `samples`: they are not rows of a dataset's splits or counts.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "data_synth/task/task_spec.h"
#include "rollout/protocol.h"

namespace kforge {

struct CatalogEntry {
  std::string name, split, source, dtype, description, origin;
  std::vector<std::string> ops;                // operator names in node order
  std::optional<double> eager_ms, compile_ms;  // the task's baselines, where measured
  std::string baseline_gpu;                    // the GPU model they were measured on ("" where unnamed)
  std::optional<double> compile_headroom;      // a dataset row's compile_headroom (DATASET_FORMAT.md), where known
  std::optional<int64_t> level;                // an imported KernelBench task's level (provenance.level)
  std::string tolerance_profile;               // an imported task's tolerance profile (kforge, cuda-agent)
  std::string spec_yaml;                       // for dataset rows: the spec text, parsed on first use
  std::shared_ptr<const TaskSpec> spec;
  std::string graph_hash;                      // a dataset row's (what an overlay of baselines must match)
  std::shared_ptr<const Baselines> baselines;  // an overlay's (overlay_baselines), put into the spec by find()
};

// A GPU model's name as `kforge baseline` names its key folders (tools/dataset/baseline_ray/keys.py,
// slug): lower case, runs of anything but letters, digits and '.' as one '-', no '-' or '.' at either
// end, at most 64 characters ("NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3").
std::string baseline_key_slug(const std::string& gpu_model);
// The merged baselines of `gpu_model` in `kforge baseline`'s output folder: KEY/dataset.h5 of a key
// folder <slug>__torch-<v>__cuda-<v>, of several (torch or CUDA versions) the newest; "" when none.
std::string merged_baselines_of(const std::string& dir, const std::string& gpu_model);

// Where a row the catalog does not serve was left out (named as left_out_stage_name gives it):
// gpu_stage (status rejected:<reason>), import (DIR/skipped.jsonl beside the dataset: the importer's
// reason), input_checks (status rejected:input_matters or rejected:ablation, tools/dataset/synth_refilter.py),
// not_measured (status cpu_ok with serve_unmeasured false), headroom (compile_headroom below
// tasks.min_headroom: reason `below`, or `unknown` where the row has none).
enum class LeftOutStage { gpu_stage, import, input_checks, not_measured, headroom };
const char* left_out_stage_name(LeftOutStage stage);

// Rows a dataset holds, or modules its import saw, that the catalog does not serve: the tasks an
// evaluation's denominator leaves out.
struct LeftOut {
  std::string source;
  LeftOutStage stage = LeftOutStage::gpu_stage;
  std::string reason;
  size_t rows = 0;
  // The KernelBench level, where the source has levels: an imported row's provenance.level, a
  // skipped module's nearest levelN folder (as the importer reads it). A benchmark's per-level
  // denominator counts these rows (kforge report's KernelBench table).
  std::optional<int> level;
};
// The level a module's path names by its nearest enclosing folder level1, level2, ... (the
// importer's rule, tools/dataset/task_import/sources.py), if any.
std::optional<int> level_of_module_path(const std::string& path);

class TaskCatalog {
 public:
  // Throws config/io/spec errors naming the file when a source cannot be read.
  void add_spec_dir(const std::string& dir);
  // A dataset.h5 or dataset.h5.xz (as shipped), or a directory holding one. Rows a GPU stage
  // rejected are left out; rows no GPU stage has measured yet too, unless `serve_unmeasured`; with
  // `min_headroom` > 0, rows whose compile_headroom is below it or unknown too (the payable split).
  void add_dataset(const std::string& path, bool serve_unmeasured = true, double min_headroom = 0);
  void add_task(std::shared_ptr<const TaskSpec> spec, const std::string& origin);
  // Baselines measured elsewhere for this catalog's dataset rows (issue 32): every `ok` row of
  // `dataset` (`kforge baseline`'s merge of one GPU model, torch and CUDA version, OUT/KEY/dataset.h5)
  // replaces the baselines of the served dataset row with the same id and graph hash by those its spec
  // holds (what serving that dataset would give), in the listing and in the spec an episode gets.
  // Returns how many rows it replaced; io/spec errors name the file.
  size_t overlay_baselines(const std::string& dataset);

  size_t size() const { return entries_.size(); }
  // Of them, the sample tasks (source `samples`).
  size_t samples() const { return samples_; }
  // Dataset rows served that no GPU stage has measured yet (status cpu_ok: no baselines, and a GPU
  // filter may still reject them): a dataset whose GPU stage is not finished.
  size_t unmeasured() const { return unmeasured_; }
  // Such rows left out (add_dataset's serve_unmeasured false).
  size_t unmeasured_left_out() const;
  // What add_dataset left out, by source, stage, reason and level (in that order; no level first).
  std::vector<LeftOut> left_out() const;
  // The tasks with a stored torch.compile time (the tier-3 baseline), by the GPU model it was
  // measured on ("" where unnamed), and how many have none: for health's `baselines` (issue 32).
  std::map<std::string, size_t> compile_baselines_by_gpu() const;
  size_t without_compile_baseline() const;
  // nullptr when there is no such task. Parses the spec on first use (throws spec errors).
  std::shared_ptr<const TaskSpec> find(const std::string& name);
  // The `tasks` method's result: {"tasks": [facts], "total": matches, "offset", "next_offset"?}.
  // Samples match only a filter with source `samples`, unless they are all the catalog holds.
  Json list(const TasksParams& filter, int64_t default_limit = 100) const;

 private:
  void insert(CatalogEntry e);
  void count_import_skips(const std::string& dataset_file, const std::string& source);
  std::map<std::string, CatalogEntry> entries_;  // by name: listing order is stable
  // (source, stage, reason, level or -1)
  std::map<std::tuple<std::string, LeftOutStage, std::string, int>, size_t> left_out_;
  size_t unmeasured_ = 0, samples_ = 0;
};

}  // namespace kforge
