#include "rollout/trajectory_file.h"

#include <cstring>
#include <filesystem>

#include <hdf5.h>
#include <unistd.h>

#include "configs/error.h"
#include "data_synth/dataset/h5_handle.h"

namespace kforge {

namespace {

constexpr const char* kFormat = "kforge-trajectories";
constexpr int kFormatVersion = 1;

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
  H5Handle fapl(access_plist(), H5Pclose);
  row_type_ = index_row_type();
  H5Handle u8(H5Tcopy(H5T_NATIVE_UINT8), H5Tclose);
  if (std::filesystem::exists(path_)) {
    file_ = H5Fopen(path_.c_str(), H5F_ACC_RDWR, fapl.id);
    KFORGE_CHECK(file_ >= 0, io, path_ << ": cannot open the trajectory file for appending (not HDF5, or not writable)");
    KFORGE_CHECK(read_attr(file_, "format") == kFormat, io, path_ << ": not a kforge trajectory file (no format attribute '" << kFormat << "')");
    data_ = H5Dopen2(file_, "/trajectories/data", H5P_DEFAULT);
    index_ = H5Dopen2(file_, "/trajectories/index", H5P_DEFAULT);
    KFORGE_CHECK(data_ >= 0 && index_ >= 0, io, path_ << ": a kforge trajectory file without /trajectories/data and /trajectories/index");
    rows_ = extent(index_);
    // Bytes past the last indexed trajectory belong to an append that never committed: overwrite them.
    bytes_ = 0;
    if (rows_ > 0) {
      IndexRow last{};
      hsize_t at = rows_ - 1, one = 1;
      H5Handle fspace(H5Dget_space(index_), H5Sclose);
      H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, &at, nullptr, &one, nullptr);
      H5Handle mspace(H5Screate_simple(1, &one, nullptr), H5Sclose);
      KFORGE_CHECK(H5Dread(index_, row_type_, mspace.id, fspace.id, H5P_DEFAULT, &last) >= 0, io, path_ << ": cannot read the index");
      bytes_ = last.offset + last.length;
    }
  } else {
    file_ = H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.id);
    KFORGE_CHECK(file_ >= 0, io, path_ << ": cannot create the trajectory file");
    write_attr(file_, "format", kFormat);
    write_attr(file_, "format_version", std::to_string(kFormatVersion));
    write_attr(file_, "payload", "msgpack");
    data_ = create_extensible(file_, "/trajectories/data", u8.id, 1 << 16, true);
    index_ = create_extensible(file_, "/trajectories/index", row_type_, 64, false);
    KFORGE_CHECK(data_ >= 0 && index_ >= 0, io, path_ << ": cannot create the trajectory datasets");
    H5Fflush(file_, H5F_SCOPE_GLOBAL);
  }
}

TrajectoryFile::~TrajectoryFile() {
  if (data_ >= 0) H5Dclose(data_);
  if (index_ >= 0) H5Dclose(index_);
  if (row_type_ >= 0) H5Tclose(row_type_);
  if (file_ >= 0) H5Fclose(file_);
}

void TrajectoryFile::append(const Json& trajectory) {
  append_msgpack(Json::to_msgpack(trajectory), TrajectorySummary::of(trajectory));
}

void TrajectoryFile::append_msgpack(const std::vector<uint8_t>& bytes, const TrajectorySummary& s) {
  KFORGE_CHECK(!bytes.empty(), internal, "an empty trajectory");
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
  KFORGE_CHECK(append_at(index_, row_type_, rows_, 1, &row), io, path_ << ": writing a trajectory's index row failed");
  KFORGE_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0, io, path_ << ": flushing failed");
  if (fsync_) {
    void* handle = nullptr;
    if (H5Fget_vfd_handle(file_, H5P_DEFAULT, &handle) >= 0 && handle) ::fsync(*static_cast<int*>(handle));
  }
  bytes_ += bytes.size();
  ++rows_;
}

namespace {

std::vector<IndexRow> read_rows(hid_t file, hid_t row_type, const std::string& path) {
  H5Handle index(H5Dopen2(file, "/trajectories/index", H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(index.id >= 0, io, path << ": not a kforge trajectory file (no /trajectories/index)");
  std::vector<IndexRow> rows(extent(index.id));
  if (!rows.empty())
    KFORGE_CHECK(H5Dread(index.id, row_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0, io, path << ": cannot read the index");
  return rows;
}

}  // namespace

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
  for (const IndexRow& r : rows) {
    std::vector<uint8_t> bytes(r.length);
    hsize_t at = r.offset, n = r.length;
    H5Handle fspace(H5Dget_space(data.id), H5Sclose);
    H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, &at, nullptr, &n, nullptr);
    H5Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
    KFORGE_CHECK(H5Dread(data.id, H5T_NATIVE_UINT8, mspace.id, fspace.id, H5P_DEFAULT, bytes.data()) >= 0, io,
                 path << ": cannot read a trajectory");
    out.push_back(Json::from_msgpack(bytes));
  }
  return out;
}

}  // namespace kforge
