#pragma once
// A task dataset in one HDF5 file (layout: data_synth/dataset/DATASET_FORMAT.md): one row per task in
// column datasets under /tasks, readable with h5py. No libtorch.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data_synth/dataset/row_status.h"

namespace kforge {

struct DatasetRow {
  std::string id, split, source, dtype;
  std::string ops;  // operator names in node order, comma-separated
  int32_t n_ops = 0;
  std::string spec_yaml;   // the full task spec (kforge task format)
  std::string program_py;  // the rendered PyTorch program
  std::string graph_hash, op_sequence, family;
  double est_runtime_ms = 0, flops = 0, min_bytes = 0;
  double eager_ms = 0, compile_ms = 0;  // NaN until the GPU baseline stage fills them
  std::string baseline_json;            // "" until then: {"gpu", "torch", "cuda", "method", ...}
  std::string status = "cpu_ok";        // the column's text: cpu_ok, then ok or rejected:<filter> after the GPU stages
  // compile_ms over the task's roofline on the baselines' GPU (kforge tasks headroom; DATASET_FORMAT.md
  // "Headroom"): NaN until that command fills it, where compile_ms or the cost is missing, and after
  // set-baselines changes compile_ms. A file written before the column reads as NaN.
  double compile_headroom = std::numeric_limits<double>::quiet_NaN();

  // The status parsed (row_status.h); a spec error naming the row when it is none of those.
  RowStatus parsed_status() const { return read_status(status, "row '" + id + "'"); }
  // A GPU stage filtered it out: neither `kforge tasks` (without --status) nor the server takes it.
  bool rejected() const { return parsed_status().rejected(); }
};

struct Dataset {
  std::map<std::string, std::string> attrs;  // root attributes: format, version, generator, config, summary
  std::vector<DatasetRow> rows;
};

constexpr int kDatasetFormatVersion = 1;

// Throws an io error naming the file on failure. read_dataset also reads a file xz-compressed as a
// whole (PATH ending in .xz, as datasets are shipped) through a temporary copy; it needs `xz`.
void write_dataset(const std::string& path, const Dataset& d);
Dataset read_dataset(const std::string& path);

// Row selection as the `kforge tasks` filters give it; an empty or zero field does not filter.
struct RowFilter {
  std::string split, source;
  // By default every row a GPU stage did not reject (ok, and cpu_ok where none has run), the rows
  // the server serves; StatusFilter::parse reads --status (all, rejected, or one status exactly).
  StatusFilter status;
  std::vector<std::string> ops;  // every one must be in the task
  int min_ops = 0, max_ops = 0;
  // compile_headroom at least this (> 0); a row whose headroom is unknown (NaN) does not match.
  double min_headroom = 0;
  bool matches(const DatasetRow& r) const;
};

}  // namespace kforge
