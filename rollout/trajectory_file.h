#pragma once
// Finished trajectories recorded durably in one HDF5 file, append-only, readable with h5py
// (layout: rollout/TRAJECTORY_FORMAT.md). Each trajectory's msgpack bytes are appended to
// /trajectories/data, then one row describing it to /trajectories/index: the index row is the
// commit point, so a process killed mid-append leaves at most unreferenced bytes, and every
// trajectory whose append() returned is on disk (flushed, and fsynced when asked).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

using Json = nlohmann::json;

// The index row of a trajectory (also what listing tools show).
struct TrajectorySummary {
  std::string episode, task, termination_reason, end_cause;
  uint64_t seed = 0;
  int32_t gpu = -1;
  int32_t turns = 0;
  double episode_reward = 0;
  double started_unix = 0;
  double duration_s = 0;
  // Read from a trajectory map (rollout/TRAJECTORY_FORMAT.md); missing fields keep their defaults.
  static TrajectorySummary of(const Json& trajectory);
};

class TrajectoryFile {
 public:
  // Opens `path` for appending, creating it when absent. Throws an io error naming the file.
  explicit TrajectoryFile(std::string path, bool fsync = true);
  ~TrajectoryFile();
  TrajectoryFile(const TrajectoryFile&) = delete;
  TrajectoryFile& operator=(const TrajectoryFile&) = delete;

  void append(const Json& trajectory);
  void append_msgpack(const std::vector<uint8_t>& bytes, const TrajectorySummary& summary);
  uint64_t count() const { return rows_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool fsync_;
  int64_t file_ = -1, data_ = -1, index_ = -1, row_type_ = -1;
  uint64_t rows_ = 0, bytes_ = 0;
};

// Every recorded trajectory, in order (for tools and tests; Python readers use h5py).
std::vector<Json> read_trajectories(const std::string& path);
std::vector<TrajectorySummary> read_trajectory_index(const std::string& path);

}  // namespace kforge
