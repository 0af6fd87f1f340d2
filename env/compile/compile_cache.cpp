// The compiler's result caches (in memory, LRU; on disk, one file per content hash) and its
// precompiled-header files (least recently used ones removed past a count or a size).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "configs/file_reader.h"
#include "env/compile/nvrtc_compiler.h"

namespace fs = std::filesystem;

namespace kforge {

// ---------------------------------------------------------------------------------------------
// PCH files: least recently used ones go when there are too many or they take too much space.

void NvrtcCompiler::note_pch_file(const std::string& path, bool created) {
  std::lock_guard<std::mutex> lock(pch_files_mutex_);
  PchFile& f = pch_files_[path];
  f.last_use = ++pch_clock_;
  if (created || f.bytes == 0) {
    std::error_code ec;
    auto size = fs::file_size(path, ec);
    f.bytes = ec ? 0 : static_cast<size_t>(size);
  }
}

void NvrtcCompiler::prune_pch_files() {
  std::vector<std::string> victims;
  {
    std::lock_guard<std::mutex> lock(pch_files_mutex_);
    // Files NVRTC made that no message named (kept as the oldest).
    std::error_code ec;
    for (fs::directory_iterator it(pch_dir_, ec), end; !ec && it != end; it.increment(ec)) {
      std::string p = it->path().string();
      if (!pch_files_.count(p)) {
        std::error_code sec;
        auto size = fs::file_size(p, sec);
        pch_files_[p] = PchFile{sec ? 0 : static_cast<size_t>(size), 0};
      }
    }
    size_t bytes = 0;
    for (const auto& f : pch_files_) bytes += f.second.bytes;
    size_t count = pch_files_.size();
    while (count > 1 && (bytes > config_.pch_max_bytes || count > config_.pch_max_files)) {
      auto oldest = std::min_element(pch_files_.begin(), pch_files_.end(),
                                     [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
      victims.push_back(oldest->first);
      bytes -= oldest->second.bytes;
      --count;
      pch_files_.erase(oldest);
    }
  }
  if (victims.empty()) return;
  std::unique_lock<std::shared_mutex> lock(pch_mutex_);  // no compile is reading them now
  for (const std::string& v : victims) {
    std::error_code ec;
    fs::remove(v, ec);
  }
}

// ---------------------------------------------------------------------------------------------
// Result caches.

bool NvrtcCompiler::cache_get(const std::string& hash, CompileResult* out) {
  if (config_.cache_entries == 0) return false;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = index_.find(hash);
  if (it == index_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second);
  *out = *it->second;
  return true;
}

void NvrtcCompiler::cache_put(const CompileResult& result) {
  if (config_.cache_entries == 0 || result.hash.empty()) return;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = index_.find(result.hash);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  CompileResult stored = result;
  stored.cache_hit = false;
  lru_.push_front(std::move(stored));
  index_[result.hash] = lru_.begin();
  while (lru_.size() > config_.cache_entries) {
    index_.erase(lru_.back().hash);
    lru_.pop_back();
  }
}

namespace {

const char kDiskMagic[] = "kforge-nvrtc-result 1\n";

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

struct Reader {
  const std::string& s;
  size_t p = 0;
  bool good = true;
  uint64_t u64() {
    if (p + 8 > s.size()) {
      good = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<uint8_t>(s[p + i])) << (8 * i);
    p += 8;
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    if (!good || n > s.size() - p) {
      good = false;
      return {};
    }
    std::string v = s.substr(p, n);
    p += n;
    return v;
  }
};

}  // namespace

bool NvrtcCompiler::disk_get(const std::string& hash, CompileResult* out) const {
  if (config_.cache_dir.empty()) return false;
  std::optional<std::string> entry = try_read_file((fs::path(config_.cache_dir) / (hash + ".kfnvrtc")).string());
  if (!entry) return false;  // not cached (or unreadable): compile
  const std::string& data = *entry;
  if (data.rfind(kDiskMagic, 0) != 0) return false;
  Reader rd{data, sizeof(kDiskMagic) - 1};
  CompileResult r;
  r.hash = hash;
  r.ok = rd.u64() != 0;
  r.prelude = rd.u64() != 0;
  r.compile_ms = 0;
  r.pch = rd.str();
  r.log = rd.str();
  std::string cubin = rd.str();
  r.cubin.assign(cubin.begin(), cubin.end());
  uint64_t nk = rd.u64();
  for (uint64_t i = 0; rd.good && i < nk && i < 100000; ++i) r.kernels.push_back(rd.str());
  uint64_t nr = rd.u64();
  for (uint64_t i = 0; rd.good && i < nr && i < 100000; ++i) {
    KernelResources k;
    k.name = rd.str();
    k.registers = static_cast<int>(rd.u64());
    k.static_shared_bytes = static_cast<int>(rd.u64());
    k.local_bytes = static_cast<int>(rd.u64());
    k.spill_store_bytes = static_cast<int>(rd.u64());
    k.spill_load_bytes = static_cast<int>(rd.u64());
    k.const_bytes = static_cast<int>(rd.u64());
    k.max_threads_per_block = static_cast<int>(rd.u64());
    r.resources.push_back(k);
  }
  if (!rd.good || rd.p != data.size() || (r.ok && r.cubin.empty())) return false;
  *out = std::move(r);
  return true;
}

void NvrtcCompiler::disk_put(const CompileResult& r) const {
  if (config_.cache_dir.empty() || r.hash.empty()) return;
  std::string data = kDiskMagic;
  put_u64(data, r.ok);
  put_u64(data, r.prelude);
  put_str(data, r.pch);
  put_str(data, r.log);
  put_str(data, std::string(r.cubin.begin(), r.cubin.end()));
  put_u64(data, r.kernels.size());
  for (const std::string& k : r.kernels) put_str(data, k);
  put_u64(data, r.resources.size());
  for (const KernelResources& k : r.resources) {
    put_str(data, k.name);
    for (int v : {k.registers, k.static_shared_bytes, k.local_bytes, k.spill_store_bytes, k.spill_load_bytes, k.const_bytes,
                  k.max_threads_per_block})
      put_u64(data, static_cast<uint64_t>(v));
  }
  // Written aside, then renamed: a reader never sees half a file.
  fs::path final_path = fs::path(config_.cache_dir) / (r.hash + ".kfnvrtc");
  fs::path tmp = final_path;
  tmp += ".tmp" + std::to_string(getpid()) + "." + std::to_string(reinterpret_cast<uintptr_t>(&data));
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace kforge
