#include "rollout/trajectory_journal.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "configs/error.h"

namespace kforge {

namespace {

constexpr char kFileMagic[16] = {'k', 'f', 'o', 'r', 'g', 'e', '-', 't', 'j', 'o', 'u', 'r', 'n', 'a', 'l', '1'};
constexpr uint32_t kRecordMagic = 0x4A54464B;  // "KFTJ" little-endian
constexpr size_t kHeaderBytes = 24;            // magic u32, seq u64, length u32, payload crc u32, header crc u32

struct Header {
  uint32_t magic, length, crc;
  uint64_t seq;
};

void encode(uint8_t* h, uint64_t seq, uint32_t length, uint32_t crc) {
  std::memcpy(h, &kRecordMagic, 4);
  std::memcpy(h + 4, &seq, 8);
  std::memcpy(h + 12, &length, 4);
  std::memcpy(h + 16, &crc, 4);
  uint32_t hcrc = TrajectoryJournal::checksum(h, 20);
  std::memcpy(h + 20, &hcrc, 4);
}

// A whole header of record `seq`, or nothing (a torn or foreign tail).
bool decode(const uint8_t* h, uint64_t seq, Header& out) {
  uint32_t hcrc;
  std::memcpy(&out.magic, h, 4);
  std::memcpy(&out.seq, h + 4, 8);
  std::memcpy(&out.length, h + 12, 4);
  std::memcpy(&out.crc, h + 16, 4);
  std::memcpy(&hcrc, h + 20, 4);
  return out.magic == kRecordMagic && hcrc == TrajectoryJournal::checksum(h, 20) && out.seq == seq;
}

bool read_all(int fd, uint64_t at, uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, at += got, n -= got;
  }
  return true;
}

std::string why() { return std::strerror(errno); }

}  // namespace

uint32_t TrajectoryJournal::checksum(const uint8_t* data, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib's length is a uInt
    uInt part = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = crc32(c, data, part);
    data += part, n -= part;
  }
  return static_cast<uint32_t>(c);
}

TrajectoryJournal::TrajectoryJournal(std::string path, bool fsync) : path_(std::move(path)), fsync_(fsync) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0 && errno == ENOENT) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    KFORGE_CHECK(fd_ >= 0, io, path_ << ": cannot create the trajectory journal: " << why());
    created_ = true;
    bool ok = ::write(fd_, kFileMagic, sizeof(kFileMagic)) == static_cast<ssize_t>(sizeof(kFileMagic)) && (!fsync_ || ::fsync(fd_) == 0);
    KFORGE_CHECK(ok, io, path_ << ": cannot write the trajectory journal's header: " << why());
  }
  KFORGE_CHECK(fd_ >= 0, io, path_ << ": cannot open the trajectory journal: " << why());
  scan();
}

TrajectoryJournal::~TrajectoryJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void TrajectoryJournal::scan() {
  struct stat st {};
  KFORGE_CHECK(::fstat(fd_, &st) == 0, io, path_ << ": " << why());
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  uint8_t magic[sizeof(kFileMagic)];
  if (file_size < sizeof(kFileMagic)) {
    // A kill while the journal was being created: nothing was ever committed to it.
    KFORGE_CHECK(::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, kFileMagic, sizeof(kFileMagic), 0) == sizeof(kFileMagic), io,
                 path_ << ": cannot rewrite the trajectory journal's header: " << why());
    torn_bytes_ = file_size;
    size_ = sizeof(kFileMagic);
    return;
  }
  KFORGE_CHECK(read_all(fd_, 0, magic, sizeof(magic)) && std::memcmp(magic, kFileMagic, sizeof(magic)) == 0, io,
               path_ << ": not a kforge trajectory journal (it does not start with 'kforge-tjournal1')");
  uint64_t at = sizeof(kFileMagic);
  std::vector<uint8_t> payload;
  for (;;) {
    uint8_t h[kHeaderBytes];
    Header head{};
    if (at + kHeaderBytes > file_size || !read_all(fd_, at, h, kHeaderBytes) || !decode(h, entries_.size(), head)) break;
    if (at + kHeaderBytes + head.length > file_size) break;
    payload.resize(head.length);
    if (!read_all(fd_, at + kHeaderBytes, payload.data(), head.length) || checksum(payload.data(), head.length) != head.crc) break;
    entries_.push_back({at + kHeaderBytes, head.length, head.crc});
    at += kHeaderBytes + head.length;
  }
  size_ = at;
  torn_bytes_ = file_size - at;
  if (torn_bytes_ > 0)
    KFORGE_CHECK(::ftruncate(fd_, static_cast<off_t>(at)) == 0 && (!fsync_ || ::fsync(fd_) == 0), io,
                 path_ << ": cannot cut the torn tail (" << torn_bytes_ << " bytes) off the trajectory journal: " << why());
}

void TrajectoryJournal::append(const std::vector<uint8_t>& bytes) {
  KFORGE_CHECK(!bytes.empty() && bytes.size() < (uint64_t{1} << 32), io,
               path_ << ": a trajectory of " << bytes.size() << " bytes cannot be journaled (1 byte to 4 GiB)");
  uint8_t h[kHeaderBytes];
  uint32_t crc = checksum(bytes.data(), bytes.size());
  encode(h, entries_.size(), static_cast<uint32_t>(bytes.size()), crc);
  iovec iov[2] = {{h, kHeaderBytes}, {const_cast<uint8_t*>(bytes.data()), bytes.size()}};
  const uint64_t total = kHeaderBytes + bytes.size();
  // One positioned write at the end of the last whole record: a failed earlier attempt's bytes
  // are overwritten, never left between two records.
  ssize_t wrote = ::pwritev(fd_, iov, 2, static_cast<off_t>(size_));
  int err = wrote < 0 ? errno : (static_cast<uint64_t>(wrote) < total ? ENOSPC : 0);
  if (err == 0 && fsync_ && ::fdatasync(fd_) != 0) err = errno;
  if (err != 0) {
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      // Left as is: the next append overwrites it, and opening cuts a torn tail.
    }
    KFORGE_FAIL(io, path_ << ": journaling a trajectory failed: " << std::strerror(err));
  }
  entries_.push_back({size_ + kHeaderBytes, static_cast<uint32_t>(bytes.size()), crc});
  size_ += total;
}

std::vector<uint8_t> TrajectoryJournal::read(uint64_t seq) const {
  const Entry& e = entries_.at(seq);
  std::vector<uint8_t> bytes(e.length);
  KFORGE_CHECK(read_all(fd_, e.payload_at, bytes.data(), e.length) && checksum(bytes.data(), e.length) == e.crc, io,
               path_ << ": record " << seq << " of the trajectory journal cannot be read back");
  return bytes;
}

}  // namespace kforge
