#include "env/compile/nvrtc_compiler.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "configs/error.h"
#include "env/process/clock.h"
#include "env/compile/include_guard.h"

#ifndef KFORGE_CUDA_TOOLKIT_INCLUDE
#define KFORGE_CUDA_TOOLKIT_INCLUDE ""
#endif

namespace fs = std::filesystem;

namespace kforge {

// ---------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4): the content hash of cache keys.

namespace {

struct Sha256 {
  std::array<uint32_t, 8> h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                            0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block[64];
  size_t used = 0;
  uint64_t total = 0;

  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void compress(const uint8_t* p) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }

  void update(const void* data, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    total += n;
    while (n > 0) {
      size_t take = std::min(n, size_t(64) - used);
      std::memcpy(block + used, p, take);
      used += take;
      p += take;
      n -= take;
      if (used == 64) {
        compress(block);
        used = 0;
      }
    }
  }

  std::string hex() {
    uint64_t bits = total * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (used != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (uint32_t v : h)
      for (int s = 28; s >= 0; s -= 4) out.push_back(digits[(v >> s) & 0xf]);
    return out;
  }
};

}  // namespace

std::string sha256_hex(const std::string& data) {
  Sha256 s;
  s.update(data.data(), data.size());
  return s.hex();
}

// ---------------------------------------------------------------------------------------------
// Finding the toolkit's headers.

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Include directories of CUDA toolkits this process may use, most specific first.
std::vector<fs::path> toolkit_include_dirs() {
  std::vector<fs::path> dirs;
  std::string built = KFORGE_CUDA_TOOLKIT_INCLUDE;
  if (!built.empty()) dirs.emplace_back(built);
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
    std::string root = env_or_empty(var);
    if (!root.empty()) dirs.push_back(fs::path(root) / "include");
  }
  dirs.emplace_back("/usr/local/cuda/include");
  return dirs;
}

}  // namespace

std::string find_cccl_include_dir() {
  std::string forced = env_or_empty("KFORGE_CCCL_DIR");
  if (!forced.empty()) {
    KFORGE_CHECK(is_file(fs::path(forced) / "cub" / "version.cuh"), io,
                 "KFORGE_CCCL_DIR=" << forced << " has no cub/version.cuh");
    return fs::weakly_canonical(forced).string();
  }
  std::string tried;
  for (const fs::path& inc : toolkit_include_dirs()) {
    if (is_file(inc / "cccl" / "cub" / "version.cuh")) return fs::weakly_canonical(inc / "cccl").string();
    if (is_file(inc / "cub" / "version.cuh")) return fs::weakly_canonical(inc).string();
    tried += (tried.empty() ? "" : ", ") + inc.string();
  }
  KFORGE_FAIL(io, "no CCCL headers (cub/version.cuh) under " << tried << "; set KFORGE_CCCL_DIR");
}

std::string find_cuda_include_dir() {
  std::string forced = env_or_empty("KFORGE_CUDA_INCLUDE_DIR");
  if (!forced.empty()) {
    KFORGE_CHECK(is_file(fs::path(forced) / "cuda_fp16.h"), io,
                 "KFORGE_CUDA_INCLUDE_DIR=" << forced << " has no cuda_fp16.h");
    return fs::weakly_canonical(forced).string();
  }
  std::string tried;
  for (const fs::path& inc : toolkit_include_dirs()) {
    if (is_file(inc / "cuda_fp16.h")) return fs::weakly_canonical(inc).string();
    tried += (tried.empty() ? "" : ", ") + inc.string();
  }
  KFORGE_FAIL(io, "no CUDA toolkit headers (cuda_fp16.h) under " << tried << "; set KFORGE_CUDA_INCLUDE_DIR");
}

// ---------------------------------------------------------------------------------------------
// Logs and ptxas output.

std::string trim_log(const std::string& log, size_t limit) {
  limit = std::max<size_t>(limit, 96);
  if (log.size() <= limit) return log;
  const size_t avail = limit - 48;  // room for the marker
  const size_t head_len = avail * 2 / 3;
  const size_t tail_len = avail - head_len;
  size_t head_end = head_len;
  size_t nl = log.rfind('\n', head_len - 1);
  if (nl != std::string::npos && nl + 1 >= head_len / 2) head_end = nl + 1;
  size_t tail_begin = log.size() - tail_len;
  size_t nl2 = log.find('\n', tail_begin > 0 ? tail_begin - 1 : 0);
  if (nl2 != std::string::npos && nl2 + 1 <= tail_begin + tail_len / 2) tail_begin = nl2 + 1;
  std::ostringstream os;
  os << log.substr(0, head_end);
  if (head_end > 0 && log[head_end - 1] != '\n') os << '\n';
  os << "[... " << (tail_begin - head_end) << " characters cut ...]\n";
  os << log.substr(tail_begin);
  return os.str();
}

std::vector<KernelResources> parse_ptxas_info(const std::string& log) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex frame_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  static const std::regex cmem_re(R"((\d+) bytes cmem\[(\d+)\])");
  std::vector<KernelResources> out;
  auto find = [&](const std::string& name) -> KernelResources& {
    for (auto& k : out)
      if (k.name == name) return k;
    out.push_back(KernelResources{});
    out.back().name = name;
    return out.back();
  };
  KernelResources* cur = nullptr;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("ptxas", 0) != 0) continue;
    if (std::regex_search(line, m, entry_re)) {
      cur = &find(m[1]);
    } else if (std::regex_search(line, m, props_re)) {
      cur = &find(m[1]);
    } else if (cur && std::regex_search(line, m, frame_re)) {
      cur->local_bytes = std::stoi(m[1]);
      cur->spill_store_bytes = std::stoi(m[2]);
      cur->spill_load_bytes = std::stoi(m[3]);
    } else if (cur && std::regex_search(line, m, regs_re)) {
      cur->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem_re)) cur->static_shared_bytes = std::stoi(m[1]);
      for (auto it = std::sregex_iterator(line.begin(), line.end(), cmem_re); it != std::sregex_iterator(); ++it)
        if ((*it)[2] != "0") cur->const_bytes += std::stoi((*it)[1]);
    }
  }
  return out;
}

namespace {

std::vector<std::string> ptxas_entries(const std::string& log) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), entry_re); it != std::sregex_iterator(); ++it) {
    std::string n = (*it)[1];
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return names;
}

// Bytes of the module-level constant banks of a cubin (".nv.constantN", N > 0: __constant__ data;
// ".nv.constant0.KERNEL" is the parameter bank of one kernel). 0 if the ELF is not understood.
int module_constant_bytes(const std::vector<uint8_t>& elf) {
  auto rd = [&](size_t off, size_t n) -> uint64_t {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(elf[off + i]) << (8 * i);
    return v;
  };
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF", 4) != 0 || elf[4] != 2 || elf[5] != 1) return 0;
  uint64_t shoff = rd(0x28, 8);
  uint64_t shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2), shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.size()) return 0;
  uint64_t str_off = rd(shoff + shstrndx * shentsize + 0x18, 8);
  uint64_t str_size = rd(shoff + shstrndx * shentsize + 0x20, 8);
  if (str_off + str_size > elf.size()) return 0;
  uint64_t total = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    size_t sh = shoff + i * shentsize;
    uint64_t name = rd(sh, 4);
    if (name >= str_size) continue;
    const char* s = reinterpret_cast<const char*>(elf.data() + str_off + name);
    size_t max_len = str_size - name;
    std::string n(s, strnlen(s, max_len));
    const std::string prefix = ".nv.constant";
    if (n.rfind(prefix, 0) != 0) continue;
    std::string bank = n.substr(prefix.size());
    if (bank.empty() || bank == "0" || !std::all_of(bank.begin(), bank.end(), ::isdigit)) continue;
    total += rd(sh + 0x20, 8);
  }
  return static_cast<int>(std::min<uint64_t>(total, 1u << 30));
}

// Orders names by where they first appear in the source (as whole words).
void sort_by_source(std::vector<std::string>& names, const std::string& source) {
  auto pos = [&](const std::string& n) {
    size_t p = 0;
    while ((p = source.find(n, p)) != std::string::npos) {
      bool left = p == 0 || !(std::isalnum(static_cast<unsigned char>(source[p - 1])) || source[p - 1] == '_');
      size_t e = p + n.size();
      bool right = e >= source.size() || !(std::isalnum(static_cast<unsigned char>(source[e])) || source[e] == '_');
      if (left && right) return p;
      p = e;
    }
    return std::string::npos;
  };
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    size_t pa = pos(a), pb = pos(b);
    return pa != pb ? pa < pb : a < b;
  });
}

struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

const char* kPchLineMarker = "precompiled header file \"";

// Removes NVRTC's PCH messages ("kernel.cu": creating/using precompiled header file "PATH") from
// the log, returning the files named (created ones flagged).
std::string strip_pch_messages(const std::string& log, std::vector<std::pair<std::string, bool>>* files) {
  std::string out;
  std::istringstream in(log);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    size_t m = line.find(kPchLineMarker);
    if (line.rfind("\"kernel.cu\": ", 0) == 0 && m != std::string::npos) {
      size_t b = m + std::strlen(kPchLineMarker);
      size_t e = line.find('"', b);
      if (e != std::string::npos) files->push_back({line.substr(b, e - b), line.find("creating") != std::string::npos});
      continue;
    }
    if (!first) out.push_back('\n');
    out += line;
    first = false;
  }
  if (!log.empty() && log.back() == '\n' && !out.empty()) out.push_back('\n');
  return out;
}

// Removes kforge-nvrtc-<pid>-* directories whose process is gone (a killed compile worker).
void remove_stale_private_dirs(const fs::path& parent) {
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    const std::string prefix = "kforge-nvrtc-";
    if (n.rfind(prefix, 0) != 0) continue;
    long pid = std::strtol(n.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == static_cast<long>(getpid())) continue;
    if (kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

std::string bool_str(bool b) { return b ? "1" : "0"; }

// The prelude's header-stop: the first token outside a directive ends NVRTC's PCH; #line then
// makes the candidate's own lines read as kernel.cu:1...
const char* kPreludeStop = "namespace kforge_pch_header_stop {}\n";

}  // namespace

// ---------------------------------------------------------------------------------------------
// The compiler.

const std::vector<std::string>& NvrtcCompiler::prelude_headers() {
  static const std::vector<std::string> headers = {
      "cuda_fp16.h",
      "cuda_bf16.h",
      "cub/block/block_reduce.cuh",
      "cub/block/block_scan.cuh",
      "cub/block/block_load.cuh",
      "cub/block/block_store.cuh",
      "cub/warp/warp_reduce.cuh",
      "cub/warp/warp_scan.cuh",
  };
  return headers;
}

NvrtcCompiler::NvrtcCompiler(CompilerConfig config) : config_(std::move(config)) {
  std::vector<std::string> dirs = config_.include_dirs;
  if (dirs.empty()) dirs = {find_cccl_include_dir(), find_cuda_include_dir()};
  for (const std::string& d : dirs) {
    std::error_code ec;
    KFORGE_CHECK(fs::is_directory(d, ec), io, "include directory " << d << " does not exist");
    include_dirs_.push_back(fs::canonical(d).string());
  }

  KFORGE_CHECK(nvrtcVersion(&nvrtc_major_, &nvrtc_minor_) == NVRTC_SUCCESS, runtime, "nvrtcVersion failed");
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    supported_archs_.resize(n);
    nvrtcGetSupportedArchs(supported_archs_.data());
  }

  // What else decides a compile's result: the NVRTC version, the include directories and the
  // CCCL release in them.
  std::ostringstream key;
  key << "kforge-nvrtc-compile 1\nnvrtc " << nvrtc_version() << "\n";
  for (const std::string& d : include_dirs_) {
    key << "include " << d << "\n";
    std::ifstream v(fs::path(d) / "cub" / "version.cuh");
    if (v) {
      std::stringstream ss;
      ss << v.rdbuf();
      key << "cub/version.cuh " << sha256_hex(ss.str()) << "\n";
    }
  }
  key_base_ = key.str();

  pch_available_ = config_.use_pch && (nvrtc_major_ > 12 || (nvrtc_major_ == 12 && nvrtc_minor_ >= 8));

  // A private directory: src/ stays empty and is where NVRTC believes kernel.cu lives (the
  // front end searches a quoted include's fallback in the source's directory, which would
  // otherwise be the worker's working directory); pch/ holds the precompiled headers.
  std::string tmp = env_or_empty("TMPDIR");
  if (tmp.empty() || !fs::is_directory(tmp)) tmp = "/tmp";
  remove_stale_private_dirs(tmp);
  std::string templ = (fs::path(tmp) / ("kforge-nvrtc-" + std::to_string(getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  KFORGE_CHECK(mkdtemp(buf.data()) != nullptr, io, "cannot make a directory " << templ << ": " << std::strerror(errno));
  private_dir_ = buf.data();
  std::error_code ec;
  fs::create_directory(fs::path(private_dir_) / "src", ec);
  KFORGE_CHECK(!ec, io, "cannot make " << private_dir_ << "/src: " << ec.message());
  program_name_ = (fs::path(private_dir_) / "src" / "kernel.cu").string();
  if (pch_available_) {
    fs::path pch = config_.pch_dir.empty() ? fs::path(private_dir_) / "pch" : fs::path(config_.pch_dir);
    fs::create_directories(pch, ec);
    KFORGE_CHECK(fs::is_directory(pch), io, "cannot make the PCH directory " << pch.string());
    pch_dir_ = fs::canonical(pch).string();
  }
  if (!config_.cache_dir.empty()) {
    std::error_code ec;
    fs::create_directories(config_.cache_dir, ec);
    KFORGE_CHECK(fs::is_directory(config_.cache_dir), io, "cannot make the cache directory " << config_.cache_dir);
  }
}

NvrtcCompiler::~NvrtcCompiler() {
  std::error_code ec;
  if (!private_dir_.empty()) fs::remove_all(private_dir_, ec);
}

std::string NvrtcCompiler::nvrtc_version() const {
  return std::to_string(nvrtc_major_) + "." + std::to_string(nvrtc_minor_);
}

CompileResult NvrtcCompiler::compile(const std::string& source, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](CompileResult r) {
    r.compile_ms = ms_since(t0);
    return r;
  };

  std::ostringstream key;
  key << key_base_ << "arch " << options.arch << "\nfast_math " << bool_str(options.use_fast_math) << "\nmaxrregcount "
      << options.maxrregcount << "\nlineinfo " << bool_str(options.line_info) << "\nprelude "
      << bool_str(config_.cccl_prelude) << "\nlog_limit " << config_.log_limit << "\nsource\n"
      << source;
  std::string hash = sha256_hex(key.str());

  CompileResult cached;
  if (cache_get(hash, &cached) || disk_get(hash, &cached)) {
    cached.cache_hit = true;
    if (config_.cache_entries > 0) cache_put(cached);  // a disk hit enters memory (and refreshes LRU)
    return finish(std::move(cached));
  }

  bool cacheable = false;
  CompileResult r;
  try {
    r = compile_uncached(source, options, &cacheable);
  } catch (const std::exception& e) {  // a bug or an exhausted resource, not the candidate's fault
    r = CompileResult{};
    r.log = std::string("internal error while compiling: ") + e.what();
    cacheable = false;
  }
  r.hash = hash;
  if (cacheable) {
    cache_put(r);
    disk_put(r);
  }
  return finish(std::move(r));
}

CompileResult NvrtcCompiler::warm_up(const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  const std::string source =
      "#include <cub/block/block_reduce.cuh>\n"
      "extern \"C\" __global__ void kforge_warm_up(const float* x, float* y) {\n"
      "  using Reduce = cub::BlockReduce<float, 128>;\n"
      "  __shared__ typename Reduce::TempStorage tmp;\n"
      "  float s = Reduce(tmp).Sum(x[threadIdx.x]);\n"
      "  if (threadIdx.x == 0) y[0] = s;\n"
      "}\n";
  bool cacheable = false;
  CompileResult r = compile_uncached(source, options, &cacheable);
  r.compile_ms = ms_since(t0);
  return r;
}

CompileResult NvrtcCompiler::compile_uncached(const std::string& source, const CompileOptions& options,
                                              bool* cacheable) {
  CompileResult r;
  r.pch = "none";
  *cacheable = true;  // the same source and options give the same result, failures included
  auto refuse = [&](const std::string& why) {
    r.ok = false;
    r.log = trim_log(why, config_.log_limit);
    return r;
  };

  // Options first (they come from the candidate's launch.yaml and the GPU).
  static const std::regex arch_re(R"(sm_(\d{2,3})([af]?))");
  std::smatch am;
  if (!std::regex_match(options.arch, am, arch_re)) {
    *cacheable = false;  // a harness setting, not the candidate's
    return refuse("bad arch '" + options.arch + "': expected sm_<NN> with an optional a or f suffix (e.g. sm_90a)");
  }
  int arch_num = std::stoi(am[1]);
  if (!supported_archs_.empty() &&
      std::find(supported_archs_.begin(), supported_archs_.end(), arch_num) == supported_archs_.end()) {
    std::ostringstream os;
    os << "bad arch '" << options.arch << "': NVRTC " << nvrtc_version() << " supports sm_";
    for (size_t i = 0; i < supported_archs_.size(); ++i) os << (i ? ", " : "") << supported_archs_[i];
    *cacheable = false;
    return refuse(os.str());
  }
  if (options.maxrregcount < 0 || options.maxrregcount > 255)
    return refuse("maxrregcount " + std::to_string(options.maxrregcount) + " is out of range (0 = no limit, at most 255)");
  if (source.size() > config_.max_source_bytes)
    return refuse("kernel.cu is " + std::to_string(source.size()) + " bytes; the limit is " +
                  std::to_string(config_.max_source_bytes));
  size_t nul = source.find('\0');
  if (nul != std::string::npos)
    return refuse("kernel.cu:" + std::to_string(1 + std::count(source.begin(), source.begin() + nul, '\n')) +
                  ": a NUL byte; kernel.cu must be text");

  // The include sandbox.
  SourceScan scan = scan_kernel_source(source, "kernel.cu");
  if (!scan.ok()) {
    std::string log;
    for (const std::string& e : scan.errors) log += e + "\n";
    log += "kernel.cu was not compiled: it may include only CUDA toolkit and CCCL headers, as #include <name>.\n";
    return refuse(log);
  }

  // The shared prelude, for CUB candidates whose includes come before anything else.
  bool prelude = false;
  if (pch_available_ && config_.cccl_prelude) {
    bool heavy = false, clean = true;
    for (const IncludeDirective& inc : scan.includes) {
      if (inc.header.rfind("cub/", 0) == 0) {
        heavy = true;
        if (scan.first_non_include_line != 0 && inc.line > scan.first_non_include_line) clean = false;
      }
    }
    prelude = heavy && clean;
  }
  std::string text;
  if (prelude) {
    for (const std::string& h : prelude_headers()) text += "#include <" + h + ">\n";
    text += kPreludeStop;
    std::string quoted;
    for (char c : program_name_) {
      if (c == '"' || c == '\\') quoted.push_back('\\');
      quoted.push_back(c);
    }
    text += "#line 1 \"" + quoted + "\"\n";
  }
  text += source;
  r.prelude = prelude;

  // Options. Nothing here names a path the candidate chose: -I gets the configured directories
  // and the PCH directory is the compiler's own. (--no-source-include is not used: it also stops
  // toolkit headers from finding their quoted siblings, e.g. crt/mma.h's "mma.hpp"; the program's
  // own directory is the empty src/ instead.)
  std::vector<std::string> opts;
  opts.push_back("-arch=" + options.arch);
  opts.push_back("-std=c++17");
  opts.push_back("--ptxas-options=-v");
  if (options.line_info) opts.push_back("-lineinfo");
  if (options.use_fast_math) opts.push_back("--use_fast_math");
  if (options.maxrregcount > 0) opts.push_back("--maxrregcount=" + std::to_string(options.maxrregcount));
  for (const std::string& d : include_dirs_) opts.push_back("--include-path=" + d);
  if (pch_available_) {
    opts.push_back("-pch");
    opts.push_back("--pch-dir=" + pch_dir_);
    opts.push_back("--pch-verbose=false");   // no "not compatible with PCH file ..." warnings
    opts.push_back("--pch-messages=true");   // "creating/using ... PATH": read, then removed
    opts.push_back("--diag-suppress=20283");  // "PCH creation disabled because #line ..."
  }
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());

  ProgramGuard g;
  nvrtcResult cr = nvrtcCreateProgram(&g.prog, text.c_str(), program_name_.c_str(), 0, nullptr, nullptr);
  if (cr != NVRTC_SUCCESS) {
    *cacheable = false;
    return refuse(std::string("NVRTC could not create the program: ") + nvrtcGetErrorString(cr));
  }
  nvrtcResult res;
  {
    std::shared_lock<std::shared_mutex> lock(pch_mutex_);
    res = nvrtcCompileProgram(g.prog, static_cast<int>(argv.size()), argv.data());
  }
  std::string raw;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(g.prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    raw.resize(log_size);
    nvrtcGetProgramLog(g.prog, &raw[0]);
    raw.resize(std::strlen(raw.c_str()));
  }

  // The log names the program by its private path: the candidate knows it as kernel.cu.
  for (size_t p = 0; (p = raw.find(program_name_, p)) != std::string::npos;) {
    raw.replace(p, program_name_.size(), "kernel.cu");
    p += 9;
  }
  std::string log = raw;
  if (pch_available_) {
    std::vector<std::pair<std::string, bool>> files;
    log = strip_pch_messages(raw, &files);
    for (const auto& f : files) {
      note_pch_file(f.first, f.second);
      r.pch = f.second ? "created" : (r.pch == "created" ? "created" : "used");
    }
    if (nvrtcGetPCHCreateStatus(g.prog) == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) {
      // Grow NVRTC's PCH heap (process-wide) for next time, while no compile is running.
      size_t need = 0;
      if (nvrtcGetPCHHeapSizeRequired(g.prog, &need) == NVRTC_SUCCESS && need > 0 && need <= (size_t(4) << 30)) {
        std::unique_lock<std::shared_mutex> lock(pch_mutex_);
        size_t have = 0;
        nvrtcGetPCHHeapSize(&have);
        size_t want = (need + (size_t(64) << 20) - 1) / (size_t(64) << 20) * (size_t(64) << 20);
        if (want > have) nvrtcSetPCHHeapSize(want);
      }
    }
    prune_pch_files();
  }

  if (res == NVRTC_SUCCESS) {
    size_t n = 0;
    if (nvrtcGetCUBINSize(g.prog, &n) == NVRTC_SUCCESS && n > 0) {
      r.cubin.resize(n);
      if (nvrtcGetCUBIN(g.prog, reinterpret_cast<char*>(r.cubin.data())) != NVRTC_SUCCESS) r.cubin.clear();
    }
    if (r.cubin.empty()) {
      *cacheable = false;
      return refuse(log + "\nNVRTC compiled kernel.cu but returned no cubin for " + options.arch);
    }
    r.ok = true;
  } else if (res == NVRTC_ERROR_COMPILATION) {
    r.ok = false;
    // Running out of memory depends on the process' limits, not only on the source.
    if (log.find("catastrophic error: out of memory") != std::string::npos) *cacheable = false;
  } else {
    r.ok = false;
    if (res != NVRTC_ERROR_INVALID_OPTION) *cacheable = false;  // e.g. out of memory
    log += std::string(log.empty() || log.back() == '\n' ? "" : "\n") + "NVRTC failed: " + nvrtcGetErrorString(res) + "\n";
  }

  if (r.ok) {
    std::vector<std::string> names;
    for (const std::string& n : ptxas_entries(log))
      if (n.rfind("_Z", 0) != 0) names.push_back(n);  // extern "C": not mangled
    sort_by_source(names, source);
    std::vector<KernelResources> all = parse_ptxas_info(log);
    int module_const = module_constant_bytes(r.cubin);
    for (const std::string& n : names) {
      KernelResources k;
      k.name = n;
      for (const KernelResources& a : all)
        if (a.name == n) k = a;
      if (k.const_bytes == 0) k.const_bytes = module_const;
      r.resources.push_back(k);
    }
    r.kernels = std::move(names);
  }
  if (!r.ok) {
    bool host_headers = false;
    for (const IncludeDirective& inc : scan.includes)
      host_headers = host_headers || inc.header == "cub/cub.cuh" || inc.header.rfind("cub/device/", 0) == 0 ||
                     inc.header.rfind("thrust/", 0) == 0;
    if (host_headers)
      log += "note (kforge): NVRTC compiles device code only. CUB's device-wide algorithms (cub/cub.cuh, "
             "cub/device/...) and most of Thrust contain host code and do not compile here; include the block- "
             "and warp-level headers you use instead, e.g. <cub/block/block_reduce.cuh>, <cub/warp/warp_reduce.cuh>, "
             "or cuda/std headers.\n";
  }
  r.log = trim_log(log, config_.log_limit);
  return r;
}

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
      auto oldest = std::min_element(pch_files_.begin(), pch_files_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
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
  std::ifstream in(fs::path(config_.cache_dir) / (hash + ".kfnvrtc"), std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
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
    for (int v : {k.registers, k.static_shared_bytes, k.local_bytes, k.spill_store_bytes, k.spill_load_bytes,
                  k.const_bytes, k.max_threads_per_block})
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
