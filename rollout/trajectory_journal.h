#pragma once
// The trajectory journal: an append-only file beside the HDF5 trajectory file (FILE.h5.journal)
// that is the commit point of every trajectory (rollout/TRAJECTORY_FORMAT.md, Durability). A
// record is one write of a checksummed header and the trajectory's msgpack bytes, synced before
// append() returns; a process killed mid-write leaves a torn tail, which opening truncates. The
// HDF5 file is folded from the journal and rebuilt from it when a kill left it damaged, because
// HDF5 itself has no crash-safe append.
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

class TrajectoryJournal {
 public:
  // Where one record's payload lies, and its checksum (to verify the HDF5 copy against).
  struct Entry {
    uint64_t payload_at = 0;
    uint32_t length = 0, crc = 0;
  };

  // Opens `path`, creating it when absent; scans every record and truncates a torn tail (what a
  // kill during append() leaves). Throws an io error naming the file when it cannot be opened,
  // or when it is not a journal.
  TrajectoryJournal(std::string path, bool fsync);
  ~TrajectoryJournal();
  TrajectoryJournal(const TrajectoryJournal&) = delete;
  TrajectoryJournal& operator=(const TrajectoryJournal&) = delete;

  // Appends record number count() and syncs it (fdatasync when fsync is on): the commit point.
  // On failure (a full disk, a file size limit) the file is cut back to its last record and an io
  // error says why; nothing was committed.
  void append(const std::vector<uint8_t>& bytes);
  std::vector<uint8_t> read(uint64_t seq) const;

  uint64_t count() const { return entries_.size(); }
  const Entry& entry(uint64_t seq) const { return entries_.at(seq); }
  // Bytes of a torn tail cut off when it was opened (0: it was whole).
  uint64_t torn_bytes() const { return torn_bytes_; }
  bool created() const { return created_; }
  const std::string& path() const { return path_; }

  static uint32_t checksum(const uint8_t* data, size_t n);

 private:
  void scan();
  std::string path_;
  bool fsync_;
  int fd_ = -1;
  uint64_t size_ = 0;  // bytes up to the end of the last whole record
  uint64_t torn_bytes_ = 0;
  bool created_ = false;
  std::vector<Entry> entries_;
};

}  // namespace kforge
