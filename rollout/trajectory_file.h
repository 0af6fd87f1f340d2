#pragma once
// Finished trajectories recorded durably in one HDF5 file, readable with h5py (layout:
// rollout/TRAJECTORY_FORMAT.md). The commit point is the journal beside it (FILE.h5.journal,
// rollout/trajectory_journal.h): append() writes and syncs the trajectory there first, then folds
// it into the HDF5 file, where each trajectory's bytes start a new chunk and so no append rewrites
// a chunk holding an earlier one. Opening checks the HDF5 file against the journal: rows it lacks
// are folded in, and a file a kill left damaged is moved aside and rebuilt from the journal, with
// a note on stderr and in notes(). Every trajectory whose append() returned survives a kill.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

using Json = nlohmann::json;
class TrajectoryJournal;

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
  // Opens `path` for appending, creating it (and its journal) when absent, and repairs what a
  // kill left. Throws an io error naming the file when it is not a kforge trajectory file, or is
  // damaged with no journal to rebuild it from.
  explicit TrajectoryFile(std::string path, bool fsync = true);
  ~TrajectoryFile();
  TrajectoryFile(const TrajectoryFile&) = delete;
  TrajectoryFile& operator=(const TrajectoryFile&) = delete;

  void append(const Json& trajectory);
  // Returns once the trajectory is committed (journaled and synced); throws an io error, having
  // committed nothing, when it cannot be. A failure to fold it into the HDF5 file does not throw:
  // the file is repaired on the next append or opening (behind() counts what waits).
  void append_msgpack(const std::vector<uint8_t>& bytes, const TrajectorySummary& summary);
  uint64_t count() const;   // committed trajectories
  uint64_t behind() const;  // committed but not yet in the HDF5 file
  const std::string& path() const { return path_; }
  // What opening and appending found and did, one line each (also printed on stderr).
  const std::vector<std::string>& notes() const { return notes_; }

  static std::string journal_path(const std::string& path) { return path + ".journal"; }

 private:
  void note(const std::string& line);
  void import_legacy();
  void open_h5();
  bool check_h5(std::string& why);
  void create_h5();
  void close_h5();
  void fold(uint64_t seq, const std::vector<uint8_t>& bytes, const TrajectorySummary& summary);
  void catch_up();

  std::string path_;
  bool fsync_;
  std::unique_ptr<TrajectoryJournal> journal_;
  int64_t file_ = -1, data_ = -1, index_ = -1, row_type_ = -1;
  uint64_t h5_rows_ = 0, bytes_ = 0;
  bool h5_ok_ = false;
  std::vector<std::string> notes_;
};

// Every recorded trajectory, in order (for tools and tests; Python readers use h5py).
std::vector<Json> read_trajectories(const std::string& path);
std::vector<TrajectorySummary> read_trajectory_index(const std::string& path);

}  // namespace kforge
