#include "rollout/trajectory_file.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <hdf5.h>
#include <unistd.h>

#include "configs/error.h"
#include "data_synth/dataset/h5_handle.h"
#include "rollout/trajectory_journal.h"

namespace kforge {

namespace {

constexpr const char* kFormat = "kforge-trajectories";
constexpr int kFormatVersion = 1;
// Each trajectory starts a new chunk of /trajectories/data, so an append never rewrites a chunk
// that holds committed bytes (a kill during a deflate chunk's rewrite could tear it).
constexpr hsize_t kDataChunk = 1 << 16;

// The index row as stored (fixed-size fields only: appends never touch a global heap).
struct IndexRow {
  uint64_t offset, length, seed;
  int32_t gpu, turns;
  double episode_reward, started_unix, duration_s;
  char episode[64];
  char task[256];
  char termination_reason[32];
  char end_cause[32];
};

struct QuietHdf5 {
  QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};

hid_t fixed_string(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  return t;
}

hid_t index_row_type() {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(IndexRow));
  H5Tinsert(t, "offset", HOFFSET(IndexRow, offset), H5T_NATIVE_UINT64);
  H5Tinsert(t, "length", HOFFSET(IndexRow, length), H5T_NATIVE_UINT64);
  H5Tinsert(t, "seed", HOFFSET(IndexRow, seed), H5T_NATIVE_UINT64);
  H5Tinsert(t, "gpu", HOFFSET(IndexRow, gpu), H5T_NATIVE_INT32);
  H5Tinsert(t, "turns", HOFFSET(IndexRow, turns), H5T_NATIVE_INT32);
  H5Tinsert(t, "episode_reward", HOFFSET(IndexRow, episode_reward), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "started_unix", HOFFSET(IndexRow, started_unix), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "duration_s", HOFFSET(IndexRow, duration_s), H5T_NATIVE_DOUBLE);
  H5Handle s64(fixed_string(sizeof(IndexRow::episode)), H5Tclose), s256(fixed_string(sizeof(IndexRow::task)), H5Tclose),
      s32(fixed_string(sizeof(IndexRow::termination_reason)), H5Tclose);
  H5Tinsert(t, "episode", HOFFSET(IndexRow, episode), s64.id);
  H5Tinsert(t, "task", HOFFSET(IndexRow, task), s256.id);
  H5Tinsert(t, "termination_reason", HOFFSET(IndexRow, termination_reason), s32.id);
  H5Tinsert(t, "end_cause", HOFFSET(IndexRow, end_cause), s32.id);
  return t;
}

template <size_t N>
void put(char (&dst)[N], const std::string& s) {
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), std::min(N, s.size()));
}
template <size_t N>
std::string get(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

hsize_t extent(hid_t ds) {
  H5Handle space(H5Dget_space(ds), H5Sclose);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.id, &n, nullptr);
  return n;
}

// Appends n elements of mem_type to a 1-D extensible dataset at position `at`.
bool append_at(hid_t ds, hid_t mem_type, hsize_t at, hsize_t n, const void* data) {
  hsize_t size = at + n;
  if (H5Dset_extent(ds, &size) < 0) return false;
  H5Handle fspace(H5Dget_space(ds), H5Sclose);
  if (H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, &at, nullptr, &n, nullptr) < 0) return false;
  H5Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
  return H5Dwrite(ds, mem_type, mspace.id, fspace.id, H5P_DEFAULT, data) >= 0;
}

hid_t create_extensible(hid_t file, const char* name, hid_t type, hsize_t chunk, bool deflate) {
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  H5Handle space(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
  H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(dcpl.id, 1, &chunk);
  if (deflate) H5Pset_deflate(dcpl.id, 1);
  H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.id, 1);
  return H5Dcreate2(file, name, type, space.id, lcpl.id, dcpl.id, H5P_DEFAULT);
}

void write_attr(hid_t obj, const char* name, const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id, H5T_VARIABLE);
  H5Tset_cset(type.id, H5T_CSET_UTF8);
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle a(H5Acreate2(obj, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* p = value.c_str();
  H5Awrite(a.id, type.id, &p);
}

std::string read_attr(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return "";
  H5Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id, H5T_VARIABLE);
  H5Tset_cset(type.id, H5T_CSET_UTF8);
  char* p = nullptr;
  if (H5Aread(a.id, type.id, &p) < 0 || !p) return "";
  std::string s(p);
  H5free_memory(p);
  return s;
}

// The writer takes no file lock, so that h5py may read the file while a server appends to it.
hid_t access_plist() {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_file_locking(fapl, 0, 1);
  return fapl;
}

double number(const Json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string text(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<IndexRow> read_rows(hid_t file, hid_t row_type, const std::string& path) {
  H5Handle index(H5Dopen2(file, "/trajectories/index", H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(index.id >= 0, io, path << ": not a kforge trajectory file (no /trajectories/index)");
  std::vector<IndexRow> rows(extent(index.id));
  if (!rows.empty())
    KFORGE_CHECK(H5Dread(index.id, row_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0, io, path << ": cannot read the index");
  return rows;
}

// One trajectory's bytes, or false when HDF5 cannot read them.
bool read_bytes(hid_t data, const IndexRow& r, std::vector<uint8_t>& bytes) {
  bytes.resize(r.length);
  hsize_t at = r.offset, n = r.length;
  H5Handle fspace(H5Dget_space(data), H5Sclose);
  if (fspace.id < 0 || r.offset + r.length > extent(data) || r.length == 0) return false;
  if (H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, &at, nullptr, &n, nullptr) < 0) return false;
  H5Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
  return H5Dread(data, H5T_NATIVE_UINT8, mspace.id, fspace.id, H5P_DEFAULT, bytes.data()) >= 0;
}

std::string unix_stamp() {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

TrajectorySummary TrajectorySummary::of(const Json& t) {
  TrajectorySummary s;
  if (!t.is_object()) return s;
  s.episode = text(t, "episode");
  s.task = text(t, "task");
  s.termination_reason = text(t, "termination_reason");
  s.end_cause = text(t, "end_cause");
  if (t.contains("seed") && t["seed"].is_number_integer() && (t["seed"].is_number_unsigned() || t["seed"].get<int64_t>() >= 0))
    s.seed = t["seed"].get<uint64_t>();
  s.gpu = static_cast<int32_t>(number(t, "gpu", -1));
  s.turns = t.contains("turns") && t["turns"].is_array() ? static_cast<int32_t>(t["turns"].size()) : 0;
  s.episode_reward = number(t, "episode_reward");
  s.started_unix = number(t, "started_unix");
  s.duration_s = number(t, "duration_s");
  return s;
}

TrajectoryFile::TrajectoryFile(std::string path, bool fsync) : path_(std::move(path)), fsync_(fsync) {
  static QuietHdf5 quiet;
  row_type_ = index_row_type();
  const std::string jpath = journal_path(path_);
  if (std::filesystem::exists(path_) && !std::filesystem::exists(jpath)) {
    import_legacy();
  } else {
    journal_ = std::make_unique<TrajectoryJournal>(jpath, fsync_);
  }
  if (journal_->torn_bytes() > 0)
    note("the journal's torn tail (" + std::to_string(journal_->torn_bytes()) +
         " bytes of an append a kill interrupted, never acknowledged) was cut off");
  open_h5();
}

TrajectoryFile::~TrajectoryFile() {
  close_h5();
  if (row_type_ >= 0) H5Tclose(row_type_);
}

uint64_t TrajectoryFile::count() const { return journal_->count(); }
uint64_t TrajectoryFile::behind() const { return journal_->count() - (h5_ok_ ? h5_rows_ : 0); }

void TrajectoryFile::note(const std::string& line) {
  notes_.push_back(line);
  std::cerr << "kforge: trajectory file " << path_ << ": " << line << std::endl;
}

// A file written before journals existed: its readable rows become the journal, in order.
void TrajectoryFile::import_legacy() {
  H5Handle fapl(access_plist(), H5Pclose);
  H5Handle file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, fapl.id), H5Fclose);
  KFORGE_CHECK(file.id >= 0, io,
               path_ << ": cannot open the trajectory file (not HDF5, or damaged), and there is no journal (" << journal_path(path_)
                     << ") to rebuild it from");
  KFORGE_CHECK(read_attr(file.id, "format") == kFormat, io,
               path_ << ": not a kforge trajectory file (no format attribute '" << kFormat << "')");
  H5Handle data(H5Dopen2(file.id, "/trajectories/data", H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(data.id >= 0, io, path_ << ": a kforge trajectory file without /trajectories/data");
  std::vector<IndexRow> rows = read_rows(file.id, row_type_, path_);
  journal_ = std::make_unique<TrajectoryJournal>(journal_path(path_), fsync_);
  std::vector<uint8_t> bytes;
  for (const IndexRow& r : rows) {
    if (!read_bytes(data.id, r, bytes)) {
      note("row " + std::to_string(journal_->count()) + " and the " + std::to_string(rows.size() - journal_->count() - 1) +
           " after it cannot be read (a file written without a journal, damaged by a kill); they are left in the file moved aside");
      break;
    }
    journal_->append(bytes);
  }
}

void TrajectoryFile::close_h5() {
  for (int64_t* h : {&data_, &index_})
    if (*h >= 0) H5Dclose(*h), *h = -1;
  if (file_ >= 0) H5Fclose(file_), file_ = -1;
  h5_ok_ = false;
}

// Every row the HDF5 file holds is readable and byte for byte the journal's record; rows past
// the journal's, or a file HDF5 cannot open, fail the check.
bool TrajectoryFile::check_h5(std::string& why) {
  H5Handle fapl(access_plist(), H5Pclose);
  file_ = H5Fopen(path_.c_str(), H5F_ACC_RDWR, fapl.id);
  if (file_ < 0) return why = "HDF5 cannot open it", false;
  if (read_attr(file_, "format") != kFormat) return why = "no format attribute '" + std::string(kFormat) + "'", false;
  data_ = H5Dopen2(file_, "/trajectories/data", H5P_DEFAULT);
  index_ = H5Dopen2(file_, "/trajectories/index", H5P_DEFAULT);
  if (data_ < 0 || index_ < 0) return why = "no /trajectories/data or /trajectories/index", false;
  std::vector<IndexRow> rows;
  try {
    rows = read_rows(file_, row_type_, path_);
  } catch (const Error&) {
    return why = "its index cannot be read", false;
  }
  if (rows.size() > journal_->count())
    return why = std::to_string(rows.size()) + " rows, more than the journal's " + std::to_string(journal_->count()), false;
  std::vector<uint8_t> bytes;
  uint64_t end = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& e = journal_->entry(i);
    if (rows[i].length != e.length || rows[i].offset < end || !read_bytes(data_, rows[i], bytes) ||
        TrajectoryJournal::checksum(bytes.data(), bytes.size()) != e.crc)
      return why = "row " + std::to_string(i) + " is unreadable or differs from the journal", false;
    end = rows[i].offset + rows[i].length;
  }
  h5_rows_ = rows.size();
  bytes_ = (end + kDataChunk - 1) / kDataChunk * kDataChunk;
  return true;
}

void TrajectoryFile::create_h5() {
  H5Handle fapl(access_plist(), H5Pclose);
  H5Handle u8(H5Tcopy(H5T_NATIVE_UINT8), H5Tclose);
  file_ = H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.id);
  KFORGE_CHECK(file_ >= 0, io, path_ << ": cannot create the trajectory file");
  write_attr(file_, "format", kFormat);
  write_attr(file_, "format_version", std::to_string(kFormatVersion));
  write_attr(file_, "payload", "msgpack");
  data_ = create_extensible(file_, "/trajectories/data", u8.id, kDataChunk, true);
  index_ = create_extensible(file_, "/trajectories/index", row_type_, 1, false);
  KFORGE_CHECK(data_ >= 0 && index_ >= 0, io, path_ << ": cannot create the trajectory datasets");
  KFORGE_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0, io, path_ << ": flushing failed");
  h5_rows_ = bytes_ = 0;
}

// Opens the HDF5 file and brings it level with the journal; a file that fails the check is
// moved aside (FILE.h5.damaged-UNIXTIME) and rebuilt from the journal.
void TrajectoryFile::open_h5() {
  close_h5();
  if (std::filesystem::exists(path_)) {
    std::string why;
    if (!check_h5(why)) {
      close_h5();
      std::string aside = path_ + ".damaged-" + unix_stamp();
      std::filesystem::rename(path_, aside);
      note(why + ": moved aside to " + aside + " and rebuilt from the journal (" + std::to_string(journal_->count()) + " trajectories)");
    }
  }
  if (file_ < 0) create_h5();
  h5_ok_ = true;
  catch_up();
}

void TrajectoryFile::catch_up() {
  while (h5_rows_ < journal_->count()) {
    std::vector<uint8_t> bytes = journal_->read(h5_rows_);
    fold(h5_rows_, bytes, TrajectorySummary::of(Json::from_msgpack(bytes)));
  }
}

void TrajectoryFile::append(const Json& trajectory) { append_msgpack(Json::to_msgpack(trajectory), TrajectorySummary::of(trajectory)); }

void TrajectoryFile::append_msgpack(const std::vector<uint8_t>& bytes, const TrajectorySummary& s) {
  KFORGE_CHECK(!bytes.empty(), internal, "an empty trajectory");
  journal_->append(bytes);  // the commit point; throws when nothing was committed
  try {
    if (!h5_ok_)
      open_h5();  // a failure earlier: check, repair and catch up (this one included)
    else
      fold(journal_->count() - 1, bytes, s);
  } catch (const std::exception& e) {
    close_h5();
    note(std::string("the HDF5 file fell behind the journal (repaired on the next append or opening): ") + e.what());
  }
}

// Appends one trajectory to the HDF5 file at a fresh chunk: its bytes, its index row, a flush.
// (The journal, not this file, is synced: it is what a kill cannot take back.)
void TrajectoryFile::fold(uint64_t seq, const std::vector<uint8_t>& bytes, const TrajectorySummary& s) {
  KFORGE_CHECK(seq == h5_rows_, internal, path_ << ": folding record " << seq << " after row " << h5_rows_);
  KFORGE_CHECK(append_at(data_, H5T_NATIVE_UINT8, bytes_, bytes.size(), bytes.data()), io,
               path_ << ": writing a trajectory's bytes failed");
  IndexRow row{};
  row.offset = bytes_;
  row.length = bytes.size();
  row.seed = s.seed;
  row.gpu = s.gpu;
  row.turns = s.turns;
  row.episode_reward = s.episode_reward;
  row.started_unix = s.started_unix;
  row.duration_s = s.duration_s;
  put(row.episode, s.episode);
  put(row.task, s.task);
  put(row.termination_reason, s.termination_reason);
  put(row.end_cause, s.end_cause);
  KFORGE_CHECK(append_at(index_, row_type_, h5_rows_, 1, &row), io, path_ << ": writing a trajectory's index row failed");
  KFORGE_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0, io, path_ << ": flushing failed");
  bytes_ = (bytes_ + bytes.size() + kDataChunk - 1) / kDataChunk * kDataChunk;
  ++h5_rows_;
}

std::vector<TrajectorySummary> read_trajectory_index(const std::string& path) {
  static QuietHdf5 quiet;
  H5Handle fapl(access_plist(), H5Pclose);
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.id), H5Fclose);
  KFORGE_CHECK(file.id >= 0, io, path << ": cannot open the trajectory file");
  H5Handle type(index_row_type(), H5Tclose);
  std::vector<TrajectorySummary> out;
  for (const IndexRow& r : read_rows(file.id, type.id, path)) {
    TrajectorySummary s;
    s.episode = get(r.episode);
    s.task = get(r.task);
    s.termination_reason = get(r.termination_reason);
    s.end_cause = get(r.end_cause);
    s.seed = r.seed;
    s.gpu = r.gpu;
    s.turns = r.turns;
    s.episode_reward = r.episode_reward;
    s.started_unix = r.started_unix;
    s.duration_s = r.duration_s;
    out.push_back(s);
  }
  return out;
}

std::vector<Json> read_trajectories(const std::string& path) {
  static QuietHdf5 quiet;
  H5Handle fapl(access_plist(), H5Pclose);
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.id), H5Fclose);
  KFORGE_CHECK(file.id >= 0, io, path << ": cannot open the trajectory file");
  H5Handle type(index_row_type(), H5Tclose);
  std::vector<IndexRow> rows = read_rows(file.id, type.id, path);
  H5Handle data(H5Dopen2(file.id, "/trajectories/data", H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(data.id >= 0, io, path << ": no /trajectories/data");
  std::vector<Json> out;
  std::vector<uint8_t> bytes;
  for (const IndexRow& r : rows) {
    KFORGE_CHECK(read_bytes(data.id, r, bytes), io, path << ": cannot read trajectory " << out.size());
    out.push_back(Json::from_msgpack(bytes));
  }
  return out;
}

}  // namespace kforge
