#pragma once
// NVRTC compilation of `kernel` candidates (env/launch/KERNEL_FORMAT.md): kernel.cu is device code only,
// compiled in-process to a cubin for one architecture, with per-kernel resources read from ptxas'
// verbose output. No CUDA context or GPU is needed.
//
// - Include sandbox: env/compile/include_guard.h scans the source first; NVRTC then gets only the
//   configured include directories (-I) and --no-source-include, never an option naming another
//   path of the candidate's choosing, so kernel.cu can reach nothing but toolkit headers.
// - Speed: NVRTC's automatic precompiled headers (-pch, CUDA 12.8+) in a private directory. A
//   candidate that includes CUB is compiled after a fixed "prelude" of the common CUB
//   block/warp headers, followed by a header-stop token and `#line 1 "kernel.cu"`: every such
//   candidate then shares one PCH, whatever its own include lines are (NVRTC only reuses a PCH
//   when the initial directives are identical). Candidates with code or other directives before
//   their CUB includes keep their own order (no prelude). warm_up() creates the prelude's PCH.
//   Note: only device-level CCCL compiles under NVRTC: cub/block, cub/warp, cub/thread, cuda/std,
//   cuda/...; cub/cub.cuh, cub/device and most of Thrust need host code (a failed compile that
//   includes them gets a note saying so).
// - Results are cached by a content hash (in memory, LRU; optionally on disk).
// - compile() never throws for a bad candidate: compile errors, refused includes, bad options
//   come back as ok=false with the reason in log. It is thread-safe (NVRTC serialises PCH use).
// The compile time limit is enforced by the supervisor, which kills the compile worker.
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "env/compile/compile_log.h"

struct _nvrtcProgram;  // nvrtc.h's nvrtcProgram

namespace kforge {

struct SourceScan;  // include_guard.h

struct CompileOptions {
  std::string arch = "sm_90a";  // NVRTC -arch=sm_XX[a|f] (a cubin needs a real sm_ target)
  bool use_fast_math = false;   // --use_fast_math
  int maxrregcount = 0;         // --maxrregcount=N when > 0 (at most 255)
  bool line_info = true;        // -lineinfo
};

struct CompilerConfig {
  // The only directories #include <...> may reach besides NVRTC's built-in headers. Empty: the
  // CCCL directory (find_cccl_include_dir) and the toolkit's include directory
  // (find_cuda_include_dir), which holds cuda_fp16.h and cuda_bf16.h (NVRTC 13 has no built-in
  // copies of them).
  std::vector<std::string> include_dirs;
  bool use_pch = true;         // NVRTC automatic precompiled headers (-pch) when available
  bool cccl_prelude = true;    // compile CUB candidates after the shared prelude (see above)
  size_t cache_entries = 256;  // in-memory LRU of results keyed by content hash (0: no cache)
  std::string cache_dir;       // optional on-disk cache of results ("" = none)
  // Where the PCH files go: "" = pch/ in the compiler's private directory, made under $TMPDIR (or
  // /tmp) and removed by the destructor (directories left by killed workers are removed by the
  // next compiler).
  std::string pch_dir;
  size_t pch_max_bytes = size_t(2) << 30;  // PCH files kept, least recently used removed first
  size_t pch_max_files = 16;
  size_t log_limit = 16000;           // characters of CompileResult::log (head and tail kept)
  size_t max_source_bytes = 1 << 20;  // a larger kernel.cu is refused
};

// Per extern "C" __global__ kernel, from ptxas' verbose output and the cubin (no GPU needed).
struct KernelResources {
  std::string name;
  int registers = 0;
  int static_shared_bytes = 0;
  int local_bytes = 0;  // stack frame per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int const_bytes = 0;            // user constant memory of the module (__constant__ banks, not parameters)
  int max_threads_per_block = 0;  // 0 = unknown until loaded on a GPU
};

struct CompileResult {
  bool ok = false;
  std::string log;                   // what the compiler printed, trimmed (head and tail, with a marker)
  std::vector<uint8_t> cubin;        // SASS for `arch`
  std::vector<std::string> kernels;  // extern "C" __global__ names, in source order
  std::vector<KernelResources> resources;
  double compile_ms = 0;  // wall time of this call
  bool cache_hit = false;
  std::string hash;  // SHA-256 (hex) of source, options, NVRTC version, include dirs, recipe
  // How NVRTC's PCH served this compile: "used", "created", "none" (cache hits: as first compiled).
  std::string pch;
  bool prelude = false;  // compiled after the shared CCCL prelude
};

class NvrtcCompiler {
 public:
  // Throws (io/config) when an include directory is missing or the PCH directory cannot be made.
  explicit NvrtcCompiler(CompilerConfig config = {});
  ~NvrtcCompiler();
  NvrtcCompiler(const NvrtcCompiler&) = delete;
  NvrtcCompiler& operator=(const NvrtcCompiler&) = delete;

  // Never throws for a bad candidate: compile errors, forbidden includes etc. come back with
  // ok=false and a reason in log. Thread-safe.
  CompileResult compile(const std::string& source, const CompileOptions& options);

  // Compiles a tiny kernel that includes CUB (not cached), creating the prelude's PCH for
  // `options`, so that the first real CUB candidate does not pay for it. Returns that compile.
  CompileResult warm_up(const CompileOptions& options = {});

  std::string nvrtc_version() const;  // "13.0"
  const std::vector<std::string>& include_dirs() const { return include_dirs_; }
  const std::string& pch_dir() const { return pch_dir_; }
  bool pch_available() const { return pch_available_; }

  // The headers of the shared prelude, in order.
  static const std::vector<std::string>& prelude_headers();

 private:
  // *cacheable: false when the result does not follow from source and options alone.
  CompileResult compile_uncached(const std::string& source, const CompileOptions& options, bool* cacheable);
  // The pieces of compile_uncached (nvrtc_compiler.cpp).
  std::string refusal(const std::string& source, const CompileOptions& options, bool* harness) const;
  std::string program_text(const std::string& source, const SourceScan& scan, bool* prelude) const;
  std::vector<std::string> nvrtc_options(const CompileOptions& options) const;
  std::string program_log(::_nvrtcProgram* prog, CompileResult* r);
  bool cache_get(const std::string& hash, CompileResult* out);
  void cache_put(const CompileResult& result);
  bool disk_get(const std::string& hash, CompileResult* out) const;
  void disk_put(const CompileResult& result) const;
  void note_pch_file(const std::string& path, bool created);
  void prune_pch_files();

  CompilerConfig config_;
  std::vector<std::string> include_dirs_;
  std::string key_base_;  // hashed with every source: NVRTC version, include dirs, CCCL version
  int nvrtc_major_ = 0, nvrtc_minor_ = 0;
  std::vector<int> supported_archs_;
  bool pch_available_ = false;
  std::string private_dir_;   // removed by the destructor
  std::string program_name_;  // <private_dir_>/src/kernel.cu (src/ is empty)
  std::string pch_dir_;

  std::mutex cache_mutex_;
  std::list<CompileResult> lru_;  // most recent first
  std::unordered_map<std::string, std::list<CompileResult>::iterator> index_;

  // Compiles hold it shared; removing PCH files or resizing NVRTC's PCH heap hold it exclusively.
  std::shared_mutex pch_mutex_;
  std::mutex pch_files_mutex_;
  struct PchFile {
    size_t bytes = 0;
    uint64_t last_use = 0;
  };
  std::map<std::string, PchFile> pch_files_;
  uint64_t pch_clock_ = 0;
};

// The CCCL headers directory (the one holding cub/, cuda/, thrust/): $KFORGE_CCCL_DIR if set,
// else <toolkit>/include/cccl (CUDA 13 layout) or <toolkit>/include (CUDA 12), the toolkit found
// from the build's CUDA toolkit, $CUDA_PATH, $CUDA_HOME or /usr/local/cuda. Throws io if none.
std::string find_cccl_include_dir();
// The toolkit's include directory (cuda_fp16.h): $KFORGE_CUDA_INCLUDE_DIR if set, else as above.
std::string find_cuda_include_dir();

}  // namespace kforge
