#include "data_synth/dataset/dataset_h5.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>

#include <hdf5.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "configs/error.h"
#include "data_synth/dataset/h5_handle.h"

namespace kforge {

namespace {

hid_t string_type() {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

void check(bool ok, const std::string& path, const std::string& what) { KFORGE_CHECK(ok, io, path << ": HDF5 " << what << " failed"); }

void write_strings(hid_t group, const std::string& name, const std::vector<std::string>& v, const std::string& path) {
  H5Handle type(string_type(), H5Tclose);
  hsize_t n = v.size();
  H5Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Handle ds(H5Dcreate2(group, name.c_str(), type.id, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  check(ds.id >= 0, path, "creating " + name);
  std::vector<const char*> ptrs;
  for (const auto& s : v) ptrs.push_back(s.c_str());
  if (!v.empty()) check(H5Dwrite(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0, path, "writing " + name);
}

template <class T>
void write_numbers(hid_t group, const std::string& name, const std::vector<T>& v, hid_t mem_type, hid_t file_type,
                   const std::string& path) {
  hsize_t n = v.size();
  H5Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Handle ds(H5Dcreate2(group, name.c_str(), file_type, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  check(ds.id >= 0, path, "creating " + name);
  if (!v.empty()) check(H5Dwrite(ds.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, path, "writing " + name);
}

hsize_t length(hid_t ds) {
  H5Handle space(H5Dget_space(ds), H5Sclose);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.id, &n, nullptr);
  return n;
}

std::vector<std::string> read_strings(hid_t group, const std::string& name, const std::string& path) {
  H5Handle ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(ds.id >= 0, io, path << ": not a kforge dataset (no /tasks/" << name << ")");
  hsize_t n = length(ds.id);
  std::vector<char*> ptrs(n, nullptr);
  H5Handle type(string_type(), H5Tclose);
  if (n) check(H5Dread(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0, path, "reading " + name);
  std::vector<std::string> out;
  for (char* p : ptrs) out.emplace_back(p ? p : "");
  if (n) {
    H5Handle space(H5Dget_space(ds.id), H5Sclose);
    H5Dvlen_reclaim(type.id, space.id, H5P_DEFAULT, ptrs.data());
  }
  return out;
}

template <class T>
std::vector<T> read_numbers(hid_t group, const std::string& name, hid_t mem_type, const std::string& path) {
  H5Handle ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
  KFORGE_CHECK(ds.id >= 0, io, path << ": not a kforge dataset (no /tasks/" << name << ")");
  std::vector<T> out(length(ds.id));
  if (!out.empty()) check(H5Dread(ds.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0, path, "reading " + name);
  return out;
}

// The string columns, in file order, with their member.
const std::vector<std::pair<const char*, std::string DatasetRow::*>>& string_columns() {
  static const std::vector<std::pair<const char*, std::string DatasetRow::*>> c = {
      {"id", &DatasetRow::id},
      {"split", &DatasetRow::split},
      {"source", &DatasetRow::source},
      {"dtype", &DatasetRow::dtype},
      {"ops", &DatasetRow::ops},
      {"spec_yaml", &DatasetRow::spec_yaml},
      {"program_py", &DatasetRow::program_py},
      {"graph_hash", &DatasetRow::graph_hash},
      {"op_sequence", &DatasetRow::op_sequence},
      {"family", &DatasetRow::family},
      {"baseline_json", &DatasetRow::baseline_json},
      {"status", &DatasetRow::status},
  };
  return c;
}

const std::vector<std::pair<const char*, double DatasetRow::*>>& double_columns() {
  static const std::vector<std::pair<const char*, double DatasetRow::*>> c = {
      {"est_runtime_ms", &DatasetRow::est_runtime_ms}, {"flops", &DatasetRow::flops},
      {"min_bytes", &DatasetRow::min_bytes},           {"eager_ms", &DatasetRow::eager_ms},
      {"compile_ms", &DatasetRow::compile_ms},         {"compile_headroom", &DatasetRow::compile_headroom},
  };
  return c;
}

// Columns added after format version 1 shipped: a file without one reads as its default.
bool optional_column(const std::string& name) { return name == "compile_headroom"; }

// HDF5 prints its own error stack to stderr; kforge reports errors itself.
struct QuietHdf5 {
  QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};

}  // namespace

void write_dataset(const std::string& path, const Dataset& d) {
  static QuietHdf5 quiet;
  std::string tmp = path + ".tmp";
  {
    H5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    KFORGE_CHECK(file.id >= 0, io, path << ": cannot create the HDF5 file");
    std::map<std::string, std::string> attrs = d.attrs;
    attrs["format"] = "kforge-dataset";
    attrs["format_version"] = std::to_string(kDatasetFormatVersion);
    H5Handle stype(string_type(), H5Tclose);
    for (const auto& [k, v] : attrs) {
      H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
      H5Handle a(H5Acreate2(file.id, k.c_str(), stype.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      const char* p = v.c_str();
      check(a.id >= 0 && H5Awrite(a.id, stype.id, &p) >= 0, path, "writing attribute " + k);
    }
    H5Handle group(H5Gcreate2(file.id, "tasks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    check(group.id >= 0, path, "creating /tasks");
    for (const auto& [name, member] : string_columns()) {
      std::vector<std::string> v;
      for (const auto& r : d.rows) v.push_back(r.*member);
      write_strings(group.id, name, v, path);
    }
    for (const auto& [name, member] : double_columns()) {
      std::vector<double> v;
      for (const auto& r : d.rows) v.push_back(r.*member);
      write_numbers(group.id, name, v, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, path);
    }
    std::vector<int32_t> n_ops;
    for (const auto& r : d.rows) n_ops.push_back(r.n_ops);
    write_numbers(group.id, "n_ops", n_ops, H5T_NATIVE_INT32, H5T_STD_I32LE, path);
    check(H5Fflush(file.id, H5F_SCOPE_GLOBAL) >= 0, path, "flush");
  }
  KFORGE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, io, path << ": cannot move the finished file into place");
}

namespace {

Dataset read_hdf5(const std::string& path) {
  static QuietHdf5 quiet;
  KFORGE_CHECK(std::filesystem::exists(path), io, path << ": no such file");
  KFORGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, io, path << ": not an HDF5 file");
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  KFORGE_CHECK(file.id >= 0, io, path << ": cannot open");
  Dataset d;
  auto read_attr = [](hid_t loc, const char* name, const H5A_info_t*, void* data) -> herr_t {
    auto* attrs = static_cast<std::map<std::string, std::string>*>(data);
    H5Handle a(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
    H5Handle type(H5Aget_type(a.id), H5Tclose);
    if (H5Tget_class(type.id) != H5T_STRING || !H5Tis_variable_str(type.id)) return 0;  // not ours: skip
    H5Handle mem(string_type(), H5Tclose);
    char* p = nullptr;
    if (H5Aread(a.id, mem.id, &p) >= 0 && p) {
      (*attrs)[name] = p;
      H5free_memory(p);
    }
    return 0;
  };
  hsize_t idx = 0;
  H5Aiterate2(file.id, H5_INDEX_NAME, H5_ITER_INC, &idx, read_attr, &d.attrs);
  KFORGE_CHECK(d.attrs["format"] == "kforge-dataset", io, path << ": not a kforge dataset (format attribute missing)");
  KFORGE_CHECK(d.attrs["format_version"] == std::to_string(kDatasetFormatVersion), unsupported,
               path << ": dataset format version " << d.attrs["format_version"] << " (this kforge reads " << kDatasetFormatVersion << ")");
  H5Handle group(H5Gopen2(file.id, "tasks", H5P_DEFAULT), H5Gclose);
  KFORGE_CHECK(group.id >= 0, io, path << ": not a kforge dataset (no /tasks)");
  auto n_ops = read_numbers<int32_t>(group.id, "n_ops", H5T_NATIVE_INT32, path);
  d.rows.resize(n_ops.size());
  for (size_t i = 0; i < n_ops.size(); ++i) d.rows[i].n_ops = n_ops[i];
  for (const auto& [name, member] : string_columns()) {
    auto v = read_strings(group.id, name, path);
    KFORGE_CHECK(v.size() == d.rows.size(), io, path << ": /tasks/" << name << " has " << v.size() << " rows, not " << d.rows.size());
    for (size_t i = 0; i < v.size(); ++i) d.rows[i].*member = v[i];
  }
  for (const auto& [name, member] : double_columns()) {
    if (optional_column(name) && H5Lexists(group.id, name, H5P_DEFAULT) <= 0) continue;
    auto v = read_numbers<double>(group.id, name, H5T_NATIVE_DOUBLE, path);
    KFORGE_CHECK(v.size() == d.rows.size(), io, path << ": /tasks/" << name << " has " << v.size() << " rows, not " << d.rows.size());
    for (size_t i = 0; i < v.size(); ++i) d.rows[i].*member = v[i];
  }
  return d;
}

// The shipped dataset is xz-compressed as a whole (HDF5 cannot compress variable-length strings):
// PATH.h5.xz is read through a temporary copy that `xz -dc` writes, removed afterwards.
Dataset read_xz(const std::string& path) {
  KFORGE_CHECK(std::filesystem::is_regular_file(path), io, path << ": no such file");
  std::string tmpl = (std::filesystem::temp_directory_path() / "kforge-dataset-XXXXXX.h5").string();
  int fd = mkstemps(tmpl.data(), 3);
  KFORGE_CHECK(fd >= 0, io, path << ": cannot make a temporary file to decompress it into");
  struct Remove {
    std::string p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{tmpl};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO);
  const char* argv[] = {"xz", "-dc", "--", path.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "xz", &fa, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  KFORGE_CHECK(rc == 0, io, path << ": cannot run xz to decompress it (install xz-utils, or unxz the file)");
  KFORGE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, io, path << ": xz could not decompress it");
  try {
    return read_hdf5(tmpl);
  } catch (const Error& e) {
    KFORGE_FAIL(io, path << " (decompressed): " << e.what());
  }
}

}  // namespace

Dataset read_dataset(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".xz") == 0) return read_xz(path);
  return read_hdf5(path);
}

bool RowFilter::matches(const DatasetRow& r) const {
  if (!split.empty() && r.split != split) return false;
  if (!source.empty() && r.source != source) return false;
  if (!status.matches(r.parsed_status())) return false;
  if (min_ops > 0 && r.n_ops < min_ops) return false;
  if (max_ops > 0 && r.n_ops > max_ops) return false;
  if (min_headroom > 0 && !(r.compile_headroom >= min_headroom)) return false;  // NaN: unknown, left out
  if (!ops.empty()) {
    std::vector<std::string> have;
    std::stringstream ss(r.ops);
    std::string item;
    while (std::getline(ss, item, ',')) have.push_back(item);
    for (const auto& o : ops)
      if (std::find(have.begin(), have.end(), o) == have.end()) return false;
  }
  return true;
}

}  // namespace kforge
