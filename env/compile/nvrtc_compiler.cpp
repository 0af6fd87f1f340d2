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
#include <regex>
#include <sstream>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "configs/sha256.h"
#include "env/compile/include_guard.h"
#include "env/process/clock.h"

#ifndef KFORGE_CUDA_TOOLKIT_INCLUDE
#define KFORGE_CUDA_TOOLKIT_INCLUDE ""
#endif

namespace fs = std::filesystem;

namespace kforge {

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
    KFORGE_CHECK(is_file(fs::path(forced) / "cub" / "version.cuh"), io, "KFORGE_CCCL_DIR=" << forced << " has no cub/version.cuh");
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
    KFORGE_CHECK(is_file(fs::path(forced) / "cuda_fp16.h"), io, "KFORGE_CUDA_INCLUDE_DIR=" << forced << " has no cuda_fp16.h");
    return fs::weakly_canonical(forced).string();
  }
  std::string tried;
  for (const fs::path& inc : toolkit_include_dirs()) {
    if (is_file(inc / "cuda_fp16.h")) return fs::weakly_canonical(inc).string();
    tried += (tried.empty() ? "" : ", ") + inc.string();
  }
  KFORGE_FAIL(io, "no CUDA toolkit headers (cuda_fp16.h) under " << tried << "; set KFORGE_CUDA_INCLUDE_DIR");
}

namespace {

struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

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
      remove_tree(it->path());
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
    if (std::optional<std::string> v = try_read_file((fs::path(d) / "cub" / "version.cuh").string()))
      key << "cub/version.cuh " << sha256_hex(*v) << "\n";
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
  if (!private_dir_.empty()) remove_tree(private_dir_);
}

std::string NvrtcCompiler::nvrtc_version() const { return std::to_string(nvrtc_major_) + "." + std::to_string(nvrtc_minor_); }

CompileResult NvrtcCompiler::compile(const std::string& source, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](CompileResult r) {
    r.compile_ms = ms_since(t0);
    return r;
  };

  std::ostringstream key;
  key << key_base_ << "arch " << options.arch << "\nfast_math " << bool_str(options.use_fast_math) << "\nmaxrregcount "
      << options.maxrregcount << "\nlineinfo " << bool_str(options.line_info) << "\nprelude " << bool_str(config_.cccl_prelude)
      << "\nlog_limit " << config_.log_limit << "\nsource\n"
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

// Why the options or the source cannot be compiled at all ("" if they can). `harness` is set when
// the reason is a harness setting (the GPU's arch), not the candidate's: such a refusal is not cached.
std::string NvrtcCompiler::refusal(const std::string& source, const CompileOptions& options, bool* harness) const {
  static const std::regex arch_re(R"(sm_(\d{2,3})([af]?))");
  std::smatch am;
  *harness = true;
  if (!std::regex_match(options.arch, am, arch_re))
    return "bad arch '" + options.arch + "': expected sm_<NN> with an optional a or f suffix (e.g. sm_90a)";
  int arch_num = std::stoi(am[1]);
  if (!supported_archs_.empty() && std::find(supported_archs_.begin(), supported_archs_.end(), arch_num) == supported_archs_.end()) {
    std::ostringstream os;
    os << "bad arch '" << options.arch << "': NVRTC " << nvrtc_version() << " supports sm_";
    for (size_t i = 0; i < supported_archs_.size(); ++i) os << (i ? ", " : "") << supported_archs_[i];
    return os.str();
  }
  *harness = false;
  if (options.maxrregcount < 0 || options.maxrregcount > 255)
    return "maxrregcount " + std::to_string(options.maxrregcount) + " is out of range (0 = no limit, at most 255)";
  if (source.size() > config_.max_source_bytes)
    return "kernel.cu is " + std::to_string(source.size()) + " bytes; the limit is " + std::to_string(config_.max_source_bytes);
  size_t nul = source.find('\0');
  if (nul != std::string::npos)
    return "kernel.cu:" + std::to_string(1 + std::count(source.begin(), source.begin() + nul, '\n')) +
           ": a NUL byte; kernel.cu must be text";
  return "";
}

// The program NVRTC compiles: the candidate's source, after the shared prelude when its CUB
// includes come before anything else (then #line makes its own lines read as kernel.cu:1...).
std::string NvrtcCompiler::program_text(const std::string& source, const SourceScan& scan, bool* prelude) const {
  *prelude = false;
  if (pch_available_ && config_.cccl_prelude) {
    bool heavy = false, clean = true;
    for (const IncludeDirective& inc : scan.includes) {
      if (inc.header.rfind("cub/", 0) == 0) {
        heavy = true;
        if (scan.first_non_include_line != 0 && inc.line > scan.first_non_include_line) clean = false;
      }
    }
    *prelude = heavy && clean;
  }
  std::string text;
  if (*prelude) {
    for (const std::string& h : prelude_headers()) text += "#include <" + h + ">\n";
    text += kPreludeStop;
    std::string quoted;
    for (char c : program_name_) {
      if (c == '"' || c == '\\') quoted.push_back('\\');
      quoted.push_back(c);
    }
    text += "#line 1 \"" + quoted + "\"\n";
  }
  return text + source;
}

// NVRTC's options. Nothing here names a path the candidate chose: -I gets the configured
// directories and the PCH directory is the compiler's own. (--no-source-include is not used: it
// also stops toolkit headers from finding their quoted siblings, e.g. crt/mma.h's "mma.hpp"; the
// program's own directory is the empty src/ instead.)
std::vector<std::string> NvrtcCompiler::nvrtc_options(const CompileOptions& options) const {
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
    opts.push_back("--pch-verbose=false");    // no "not compatible with PCH file ..." warnings
    opts.push_back("--pch-messages=true");    // "creating/using ... PATH": read, then removed
    opts.push_back("--diag-suppress=20283");  // "PCH creation disabled because #line ..."
  }
  return opts;
}

// The program's log, naming it kernel.cu (as the candidate knows it) rather than its private path;
// NVRTC's PCH messages are read (the files noted, r->pch set) and removed.
std::string NvrtcCompiler::program_log(nvrtcProgram prog, CompileResult* r) {
  std::string raw;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    raw.resize(log_size);
    nvrtcGetProgramLog(prog, &raw[0]);
    raw.resize(std::strlen(raw.c_str()));
  }
  for (size_t p = 0; (p = raw.find(program_name_, p)) != std::string::npos;) {
    raw.replace(p, program_name_.size(), "kernel.cu");
    p += 9;
  }
  if (!pch_available_) return raw;
  std::vector<std::pair<std::string, bool>> files;
  std::string log = strip_pch_messages(raw, &files);
  for (const auto& f : files) {
    note_pch_file(f.first, f.second);
    r->pch = f.second ? "created" : (r->pch == "created" ? "created" : "used");
  }
  if (nvrtcGetPCHCreateStatus(prog) == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) {
    // Grow NVRTC's PCH heap (process-wide) for next time, while no compile is running.
    size_t need = 0;
    if (nvrtcGetPCHHeapSizeRequired(prog, &need) == NVRTC_SUCCESS && need > 0 && need <= (size_t(4) << 30)) {
      std::unique_lock<std::shared_mutex> lock(pch_mutex_);
      size_t have = 0;
      nvrtcGetPCHHeapSize(&have);
      size_t want = (need + (size_t(64) << 20) - 1) / (size_t(64) << 20) * (size_t(64) << 20);
      if (want > have) nvrtcSetPCHHeapSize(want);
    }
  }
  prune_pch_files();
  return log;
}

namespace {

// The kernels of a compiled module (extern "C" entries, in source order) with their resources.
void read_kernels(const std::string& log, const std::string& source, CompileResult* r) {
  std::vector<std::string> names;
  for (const std::string& n : ptxas_entries(log))
    if (n.rfind("_Z", 0) != 0) names.push_back(n);  // extern "C": not mangled
  sort_by_source(names, source);
  std::vector<KernelResources> all = parse_ptxas_info(log);
  int module_const = module_constant_bytes(r->cubin);
  for (const std::string& n : names) {
    KernelResources k;
    k.name = n;
    for (const KernelResources& a : all)
      if (a.name == n) k = a;
    if (k.const_bytes == 0) k.const_bytes = module_const;
    r->resources.push_back(k);
  }
  r->kernels = std::move(names);
}

// A note for a failed compile that included host-side CUB or Thrust headers.
std::string host_header_note(const SourceScan& scan) {
  for (const IncludeDirective& inc : scan.includes)
    if (inc.header == "cub/cub.cuh" || inc.header.rfind("cub/device/", 0) == 0 || inc.header.rfind("thrust/", 0) == 0)
      return "note (kforge): NVRTC compiles device code only. CUB's device-wide algorithms (cub/cub.cuh, "
             "cub/device/...) and most of Thrust contain host code and do not compile here; include the block- "
             "and warp-level headers you use instead, e.g. <cub/block/block_reduce.cuh>, <cub/warp/warp_reduce.cuh>, "
             "or cuda/std headers.\n";
  return "";
}

}  // namespace

CompileResult NvrtcCompiler::compile_uncached(const std::string& source, const CompileOptions& options, bool* cacheable) {
  CompileResult r;
  r.pch = "none";
  *cacheable = true;  // the same source and options give the same result, failures included
  auto refuse = [&](const std::string& why) {
    r.ok = false;
    r.log = trim_log(why, config_.log_limit);
    return r;
  };
  bool harness = false;
  std::string why = refusal(source, options, &harness);
  if (!why.empty()) {
    *cacheable = !harness;
    return refuse(why);
  }
  // The include sandbox.
  SourceScan scan = scan_kernel_source(source, "kernel.cu");
  if (!scan.ok()) {
    std::string log;
    for (const std::string& e : scan.errors) log += e + "\n";
    log += "kernel.cu was not compiled: it may include only CUDA toolkit and CCCL headers, as #include <name>.\n";
    return refuse(log);
  }
  const std::string text = program_text(source, scan, &r.prelude);
  const std::vector<std::string> opts = nvrtc_options(options);
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
  std::string log = program_log(g.prog, &r);
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
    read_kernels(log, source, &r);
  } else if (res == NVRTC_ERROR_COMPILATION) {
    r.ok = false;
    // Running out of memory depends on the process' limits, not only on the source.
    if (log.find("catastrophic error: out of memory") != std::string::npos) *cacheable = false;
  } else {
    r.ok = false;
    if (res != NVRTC_ERROR_INVALID_OPTION) *cacheable = false;  // e.g. out of memory
    log += std::string(log.empty() || log.back() == '\n' ? "" : "\n") + "NVRTC failed: " + nvrtcGetErrorString(res) + "\n";
  }
  if (!r.ok) log += host_header_note(scan);
  r.log = trim_log(log, config_.log_limit);
  return r;
}

}  // namespace kforge
