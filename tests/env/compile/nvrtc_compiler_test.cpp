// The NVRTC compiler of kernel candidates, with real NVRTC (no GPU needed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "configs/error.h"
#include "configs/remove_tree.h"
#include "configs/sha256.h"
#include "env/compile/include_guard.h"
#include "env/compile/nvrtc_compiler.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const char* kAdd = R"(extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// One compiler for the tests that do not care about its configuration (its PCH and cache are
// shared, as in a warm worker).
NvrtcCompiler& shared_compiler() {
  static NvrtcCompiler compiler;
  return compiler;
}

std::string temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kforge-test-" + name + "-" + std::to_string(getpid()));
  remove_tree(p);
  fs::create_directories(p);
  return p.string();
}

TEST(NvrtcCompiler, CompilesASimpleKernelToACubinWithItsNameAndResources) {
  CompileResult r = shared_compiler().compile(kAdd, CompileOptions{});
  ASSERT_TRUE(r.ok) << r.log;
  ASSERT_GT(r.cubin.size(), 4u);
  EXPECT_EQ(std::string(r.cubin.begin(), r.cubin.begin() + 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(r.kernels, std::vector<std::string>{"add"});
  ASSERT_EQ(r.resources.size(), 1u);
  EXPECT_EQ(r.resources[0].name, "add");
  EXPECT_GT(r.resources[0].registers, 0);
  EXPECT_EQ(r.resources[0].spill_store_bytes, 0);
  EXPECT_EQ(r.resources[0].max_threads_per_block, 0);  // known once loaded on a GPU
  EXPECT_EQ(r.hash.size(), 64u);
  EXPECT_FALSE(r.cache_hit);
  EXPECT_GT(r.compile_ms, 0.0);
  EXPECT_TRUE(has(r.log, "Used ")) << r.log;  // ptxas' verbose report stays in the log
  EXPECT_FALSE(has(r.log, "precompiled header")) << r.log;
}

TEST(NvrtcCompiler, ReportsSharedLocalAndConstantMemoryOfEachExternCKernelInSourceOrder) {
  const char* src = R"(__constant__ float coeffs[64];
template <int N> __global__ void not_listed(float* y) { y[threadIdx.x] = N; }
template __global__ void not_listed<4>(float*);
extern "C" __global__ void zeta_tile(const float* x, float* y) {
  __shared__ float tile[256];
  tile[threadIdx.x] = x[threadIdx.x] * coeffs[threadIdx.x & 63];
  __syncthreads();
  y[threadIdx.x] = tile[255 - threadIdx.x];
}
extern "C" __global__ void alpha_local(const float* x, float* y, int n) {
  float a[64];
  for (int j = 0; j < 64; ++j) a[j] = x[(j * 7 + threadIdx.x) % n];
  y[threadIdx.x] = a[(int)x[1] & 63];
}
)";
  CompileResult r = shared_compiler().compile(src, CompileOptions{});
  ASSERT_TRUE(r.ok) << r.log;
  ASSERT_EQ(r.kernels, (std::vector<std::string>{"zeta_tile", "alpha_local"}));
  ASSERT_EQ(r.resources.size(), 2u);
  EXPECT_EQ(r.resources[0].static_shared_bytes, 1024);
  EXPECT_GE(r.resources[0].const_bytes, 256);
  EXPECT_EQ(r.resources[1].static_shared_bytes, 0);
  EXPECT_GE(r.resources[1].local_bytes, 256);  // the indexed array lives on the stack
}

TEST(NvrtcCompiler, MaxrregcountForcesSpills) {
  const char* src = R"(extern "C" __global__ void heavy(const float* x, float* y) {
  float v[40];
#pragma unroll
  for (int i = 0; i < 40; ++i) v[i] = x[threadIdx.x * 40 + i];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 40; ++i) s += v[i] * v[(i * 7 + 3) % 40] - v[39 - i];
#pragma unroll
  for (int i = 0; i < 40; ++i) y[threadIdx.x * 40 + i] = v[i] * s;
}
)";
  CompileOptions free_regs, few_regs;
  few_regs.maxrregcount = 24;
  CompileResult a = shared_compiler().compile(src, free_regs);
  CompileResult b = shared_compiler().compile(src, few_regs);
  ASSERT_TRUE(a.ok && b.ok) << a.log << b.log;
  EXPECT_GT(a.resources[0].registers, 24);
  EXPECT_LE(b.resources[0].registers, 24);
  EXPECT_GT(b.resources[0].spill_store_bytes, 0) << b.log;
}

TEST(NvrtcCompiler, SyntaxErrorFailsWithTheCompilersMessageAndLine) {
  const char* src =
      "extern \"C\" __global__ void broken(float* y) {\n"
      "  float z = 1.0f;\n"
      "  y[0] = z + undefined_name;\n"
      "}\n";
  CompileResult r = shared_compiler().compile(src, CompileOptions{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_TRUE(has(r.log, "kernel.cu(3)")) << r.log;
  EXPECT_TRUE(has(r.log, "undefined_name")) << r.log;
  EXPECT_TRUE(has(r.log, "error")) << r.log;
}

TEST(NvrtcCompiler, IncludesToolkitHalfBfloat16AndWmmaHeaders) {
  // mma.h includes its sibling "mma.hpp" by a quoted name: toolkit headers keep that ability.
  const char* src = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/cstdint>
#include <mma.h>
extern "C" __global__ void to_half(const float* x, __half* y, __nv_bfloat16* z, int n) {
  cuda::std::int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = __float2half(x[i]); z[i] = __float2bfloat16(x[i]); }
}
)";
  CompileResult r = shared_compiler().compile(src, CompileOptions{});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(r.kernels, std::vector<std::string>{"to_half"});
  EXPECT_FALSE(r.prelude);  // no CUB: no shared prelude
}

// What each refused construct says, and that NVRTC never saw the source.
void expect_refused(const std::string& src, const std::string& line_tag, const std::string& why) {
  CompileResult r = shared_compiler().compile(src, CompileOptions{});
  EXPECT_FALSE(r.ok) << src;
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_TRUE(has(r.log, line_tag)) << src << "\n---\n" << r.log;
  EXPECT_TRUE(has(r.log, why)) << src << "\n---\n" << r.log;
  EXPECT_FALSE(has(r.log, "ptxas")) << r.log;
  EXPECT_FALSE(has(r.log, "error:")) << r.log;  // no compiler diagnostic: refused before NVRTC
}

TEST(NvrtcCompiler, RefusesIncludesThatReachOutsideTheToolkit) {
  std::string k = "extern \"C\" __global__ void k(float* y) { y[0] = 1; }\n";
  expect_refused("#include </etc/hostname>\n" + k, "kernel.cu:1:", "absolute paths are not allowed");
  expect_refused("// header\n#include <cub/../../../../etc/hostname>\n" + k, "kernel.cu:2:", "'..' path components");
  expect_refused("#include \"helpers.h\"\n" + k, "kernel.cu:1:", "quoted includes are not allowed");
  expect_refused("#define HEADER </etc/hostname>\n#include HEADER\n" + k, "kernel.cu:2:", "computed include");
  expect_refused("#include_next <cuda_fp16.h>\n" + k, "kernel.cu:1:", "#include_next is not allowed");
  expect_refused("#pragma include_alias(<a.h>, </etc/hostname>)\n" + k, "kernel.cu:1:", "pragmas that name files");
  expect_refused("_Pragma(\"GCC dependency \\\"/etc/hostname\\\"\")\n" + k, "kernel.cu:1:", "pragmas that name files");
  expect_refused("#if __has_include(\"/etc/hostname\")\n#endif\n" + k, "kernel.cu:1:", "quoted header names");
  expect_refused("#define THRUST_MR_STD_MR_HEADER </etc/hostname>\n" + k, "kernel.cu:1:", "configure the toolkit headers");
  expect_refused("__device__ void f() { asm(\".INCBIN \\\"/etc/hostname\\\"\"); }\n" + k, "kernel.cu:1:", "'.incbin' or '.include'");
}

// The extension kind's policy (env/extension/source_rules.h): quoted names of the candidate's own
// files pass, anything that leaves it does not; the kernel kind's refusals stay.
TEST(NvrtcIncludeGuard, TheExtensionPolicyAllowsQuotedFilesOfTheCandidateOnly) {
  const IncludePolicy ext{true, false};
  EXPECT_TRUE(scan_kernel_source("#include \"../common.cuh\"\n#include \"tile.h\"\n#define _MY 1\n", "kernels/a.cu", ext).ok());
  EXPECT_FALSE(scan_kernel_source("#include \"../../x.h\"\n", "kernels/a.cu", ext).ok());
  EXPECT_FALSE(scan_kernel_source("#include \"/etc/hostname\"\n", "kernels/a.cu", ext).ok());
  EXPECT_FALSE(scan_kernel_source("#if __has_include(\"../../x.h\")\n#endif\n", "kernels/a.cu", ext).ok());
  EXPECT_FALSE(scan_kernel_source("#include_next \"tile.h\"\n", "kernels/a.cu", ext).ok());
  EXPECT_FALSE(scan_kernel_source("#include \"helper.cpp\"\n", "kernels/a.cu", ext).ok()) << "only headers";
  EXPECT_FALSE(scan_kernel_source("#include \"other.cu\"\n", "kernels/a.cu", ext).ok()) << "only headers";
  EXPECT_FALSE(scan_kernel_source("#include \"tile.h\"\n", "kernel.cu").ok()) << "the kernel kind is one file";
}

TEST(NvrtcIncludeGuard, SeesDirectivesThroughContinuationsCommentsAndDigraphs) {
  EXPECT_FALSE(scan_kernel_source("#inc\\\nlude \"x.h\"\n").ok());
  EXPECT_FALSE(scan_kernel_source("#inc\\\r\nlude \"x.h\"\n").ok());
  EXPECT_FALSE(scan_kernel_source("/* a */ # /* b */ include \"x.h\"\n").ok());
  EXPECT_FALSE(scan_kernel_source("%:include </etc/hostname>\n").ok());
  EXPECT_FALSE(scan_kernel_source("#if 0\n#include \"x.h\"\n#endif\n").ok());  // whatever the #if state
  EXPECT_FALSE(scan_kernel_source("/* multi\n line */ #include \"x.h\"\n").ok());
  EXPECT_FALSE(scan_kernel_source("#include <//etc/hostname>\n").ok());
  SourceScan s = scan_kernel_source("int a;\n\n#define Q \\\n  1\n#include \"q.h\"\n");
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_TRUE(has(s.errors[0], "kernel.cu:5:")) << s.errors[0];  // lines of the original file
}

TEST(NvrtcIncludeGuard, IgnoresIncludeTextInCommentsAndLiterals) {
  const char* src = R"SRC(// #include "comment.h"
/*
#include "block_comment.h"
*/
const char* s = "#include \"string.h\"";
const char* r = R"x(
#include "raw_string.h"
)x";
int sep = 1'000'000; char q = '"';
#define STR(x) #x
#pragma unroll 4
#include <cub/block/block_reduce.cuh>
)SRC";
  SourceScan scan = scan_kernel_source(src);
  EXPECT_TRUE(scan.ok()) << (scan.errors.empty() ? "" : scan.errors[0]);
  ASSERT_EQ(scan.includes.size(), 1u);
  EXPECT_EQ(scan.includes[0].header, "cub/block/block_reduce.cuh");
  EXPECT_EQ(scan.includes[0].line, 12);
  EXPECT_EQ(scan.first_non_include_line, 5);
}

TEST(NvrtcCompiler, CompilesCubBlockReduceThroughTheSharedPrecompiledPrelude) {
  NvrtcCompiler compiler;
  const char* reduce = R"(#include <cub/block/block_reduce.cuh>
extern "C" __global__ void row_sum(const float* x, float* y, int cols) {
  using Reduce = cub::BlockReduce<float, 256>;
  __shared__ typename Reduce::TempStorage tmp;
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += 256) s += x[blockIdx.x * cols + c];
  float total = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) y[blockIdx.x] = total;
}
)";
  CompileResult a = compiler.compile(reduce, CompileOptions{});
  ASSERT_TRUE(a.ok) << a.log;
  EXPECT_EQ(a.kernels, std::vector<std::string>{"row_sum"});
  EXPECT_GT(a.resources[0].static_shared_bytes, 0);
  if (!compiler.pch_available()) GTEST_SKIP() << "NVRTC " << compiler.nvrtc_version() << " has no PCH";
  EXPECT_TRUE(a.prelude);
  EXPECT_EQ(a.pch, "created");
  // Another CUB candidate, with other include lines and an error on its line 4: the same PCH
  // serves it, and the line is its own.
  const char* scan =
      "#include <cuda_fp16.h>\n#include <cub/warp/warp_scan.cuh>\n\n"
      "extern \"C\" __global__ void k(float* y) { y[0] = cub::WarpScan<float>::nothing; }\n";
  CompileResult b = compiler.compile(scan, CompileOptions{});
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.prelude);
  EXPECT_EQ(b.pch, "used");
  EXPECT_TRUE(has(b.log, "kernel.cu(4)")) << b.log;
  EXPECT_TRUE(has(b.log, "nothing")) << b.log;
  EXPECT_FALSE(has(b.log, "#line")) << b.log;
}

TEST(NvrtcCompiler, MacrosBeforeCubIncludesKeepTheCandidatesOwnOrder) {
  // A #define before the CUB include could configure CUB: no prelude goes before it. (#error is
  // fatal at once, so nothing of CUB is parsed: the test stays fast.)
  const char* src = "#define TILE 32\n#error stop here\n#include <cub/warp/warp_reduce.cuh>\n";
  SourceScan s = scan_kernel_source(src);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.first_non_include_line, 1);
  CompileResult r = shared_compiler().compile(src, CompileOptions{});
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.prelude);
  EXPECT_TRUE(has(r.log, "kernel.cu(2)")) << r.log;
  EXPECT_TRUE(has(r.log, "stop here")) << r.log;
}

TEST(NvrtcCompiler, FailureWithHostOnlyCcclHeadersExplainsWhatCompilesUnderNvrtc) {
  // (#error first: nothing of CUB is parsed, the test stays fast.)
  CompileResult r = shared_compiler().compile("#error stop\n#include <cub/cub.cuh>\n", CompileOptions{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.log, "cub/block/block_reduce.cuh")) << r.log;
  CompileResult plain = shared_compiler().compile("#error stop\n", CompileOptions{});
  EXPECT_FALSE(has(plain.log, "note (kforge)")) << plain.log;
}

TEST(NvrtcCompiler, SecondCompileOfTheSameSourceIsACacheHitAndOtherOptionsAreNot) {
  NvrtcCompiler compiler;
  std::string src = std::string(kAdd) + "// cache test\n";
  CompileResult first = compiler.compile(src, CompileOptions{});
  ASSERT_TRUE(first.ok) << first.log;
  CompileResult second = compiler.compile(src, CompileOptions{});
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.hash, first.hash);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.kernels, first.kernels);
  EXPECT_LT(second.compile_ms, first.compile_ms);
  CompileOptions fast;
  fast.use_fast_math = true;
  CompileResult third = compiler.compile(src, fast);
  EXPECT_FALSE(third.cache_hit);
  EXPECT_NE(third.hash, first.hash);
  CompileResult fourth = compiler.compile(src + " ", CompileOptions{});
  EXPECT_FALSE(fourth.cache_hit);
}

TEST(NvrtcCompiler, DiskCacheServesAnotherCompilerInstance) {
  std::string dir = temp_dir("nvrtc-cache");
  CompilerConfig config;
  config.cache_dir = dir;
  std::string src = std::string(kAdd) + "// disk cache test\n";
  CompileResult first;
  {
    NvrtcCompiler a(config);
    first = a.compile(src, CompileOptions{});
    ASSERT_TRUE(first.ok) << first.log;
  }
  NvrtcCompiler b(config);
  CompileResult again = b.compile(src, CompileOptions{});
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.cubin, first.cubin);
  EXPECT_EQ(again.resources.size(), 1u);
  EXPECT_EQ(again.resources[0].registers, first.resources[0].registers);
  EXPECT_EQ(again.log, first.log);
  remove_tree(dir);
}

TEST(NvrtcCompiler, LongLogsKeepHeadAndTailWithACutMarker) {
  std::string log;
  for (int i = 0; i < 1000; ++i) log += "kernel.cu(" + std::to_string(i) + "): error: something is wrong here\n";
  std::string t = trim_log(log, 2000);
  EXPECT_LE(t.size(), 2000u);
  EXPECT_EQ(t.rfind("kernel.cu(0): error", 0), 0u);
  EXPECT_TRUE(has(t, "kernel.cu(999): error: something is wrong here\n"));
  EXPECT_TRUE(has(t, " characters cut ...]"));
  size_t m = t.find("[... ");
  ASSERT_NE(m, std::string::npos);
  long cut = std::stol(t.substr(m + 5));
  size_t marker_len = t.find('\n', m) + 1 - m;
  EXPECT_EQ(static_cast<size_t>(cut), log.size() - (t.size() - marker_len));  // the number is exact
  EXPECT_EQ(trim_log("short\n", 2000), "short\n");

  CompilerConfig config;
  config.log_limit = 600;
  NvrtcCompiler compiler(config);
  std::string src = "extern \"C\" __global__ void k(float* y) {\n";
  for (int i = 0; i < 40; ++i) src += "  y[0] = missing_" + std::to_string(i) + ";\n";
  src += "}\n";
  CompileResult r = compiler.compile(src, CompileOptions{});
  EXPECT_FALSE(r.ok);
  EXPECT_LE(r.log.size(), 600u);
  EXPECT_TRUE(has(r.log, "characters cut")) << r.log;
  EXPECT_TRUE(has(r.log, "missing_0")) << r.log;
}

TEST(NvrtcCompiler, BadArchOrRegisterLimitIsAFailedCompileNotAnException) {
  for (const char* arch : {"sm90", "compute_90", "sm_9", "sm_1000", "sm_90b", "-I/etc sm_90"}) {
    CompileOptions o;
    o.arch = arch;
    CompileResult r = shared_compiler().compile(kAdd, o);
    EXPECT_FALSE(r.ok) << arch;
    EXPECT_TRUE(has(r.log, "bad arch")) << arch << ": " << r.log;
  }
  CompileOptions older;
  older.arch = "sm_80";
  EXPECT_TRUE(shared_compiler().compile(kAdd, older).ok);
  CompileOptions regs;
  regs.maxrregcount = 1000;
  CompileResult r = shared_compiler().compile(kAdd, regs);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.log, "maxrregcount")) << r.log;
}

TEST(NvrtcCompiler, PrunesLeastRecentlyUsedPrecompiledHeaders) {
  std::string dir = temp_dir("nvrtc-pch");
  CompilerConfig config;
  config.pch_dir = dir;
  config.pch_max_files = 1;
  config.cache_entries = 0;
  NvrtcCompiler compiler(config);
  if (!compiler.pch_available()) GTEST_SKIP() << "NVRTC " << compiler.nvrtc_version() << " has no PCH";
  std::string plain = kAdd;
  std::string half = std::string("#include <cuda_fp16.h>\n") + kAdd;
  auto files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
    return n;
  };
  EXPECT_TRUE(compiler.compile(plain, CompileOptions{}).ok);
  EXPECT_EQ(files(), 1u);
  CompileResult h = compiler.compile(half, CompileOptions{});
  EXPECT_TRUE(h.ok) << h.log;
  EXPECT_EQ(h.pch, "created");
  EXPECT_EQ(files(), 1u);  // the first one was removed
  CompileResult again = compiler.compile(plain + "// again\n", CompileOptions{});
  EXPECT_TRUE(again.ok) << again.log;  // its PCH is gone: NVRTC makes a new one
  EXPECT_EQ(again.pch, "created");
  EXPECT_EQ(files(), 1u);
  remove_tree(dir);
}

TEST(NvrtcCompiler, PrivatePchDirectoryIsRemovedWithTheCompiler) {
  std::string dir;
  {
    NvrtcCompiler compiler;
    if (!compiler.pch_available()) GTEST_SKIP() << "no PCH";
    dir = compiler.pch_dir();
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_TRUE(compiler.compile(kAdd, CompileOptions{}).ok);
  }
  EXPECT_FALSE(fs::exists(dir));
}

TEST(NvrtcCompiler, CompilesFromSeveralThreadsAtOnce) {
  NvrtcCompiler compiler;
  std::vector<CompileResult> results(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back(
        [&, t] { results[t] = compiler.compile(std::string(kAdd) + "// thread " + std::to_string(t) + "\n", CompileOptions{}); });
  for (auto& th : threads) th.join();
  for (const CompileResult& r : results) {
    EXPECT_TRUE(r.ok) << r.log;
    EXPECT_EQ(r.kernels, std::vector<std::string>{"add"});
  }
  EXPECT_NE(results[0].hash, results[1].hash);
}

TEST(NvrtcCompiler, ParsesPtxasVerboseReports) {
  const char* log = R"(ptxas info    : 4 bytes gmem
ptxas info    : Compiling entry function 'k_local' for 'sm_90a'
ptxas info    : Function properties for k_local
ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 256 bytes cumulative stack size
ptxas info    : Compile time = 24.982 ms
ptxas info    : Compiling entry function '_Z4tmplILi256EEvPf' for 'sm_90a'
ptxas info    : Function properties for _Z4tmplILi256EEvPf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0], 16 bytes cmem[2]
)";
  std::vector<KernelResources> k = parse_ptxas_info(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "k_local");
  EXPECT_EQ(k[0].registers, 24);
  EXPECT_EQ(k[0].local_bytes, 256);
  EXPECT_EQ(k[0].spill_store_bytes, 8);
  EXPECT_EQ(k[0].spill_load_bytes, 12);
  EXPECT_EQ(k[1].name, "_Z4tmplILi256EEvPf");
  EXPECT_EQ(k[1].static_shared_bytes, 1024);
  EXPECT_EQ(k[1].const_bytes, 16);  // the parameter bank cmem[0] does not count
}

TEST(NvrtcCompiler, Sha256MatchesKnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(NvrtcCompiler, CcclDirectoryCanBeForcedAndAWrongOneIsAnError) {
  std::string real = find_cccl_include_dir();
  setenv("KFORGE_CCCL_DIR", real.c_str(), 1);
  EXPECT_EQ(find_cccl_include_dir(), real);
  setenv("KFORGE_CCCL_DIR", "/nonexistent-kforge-cccl", 1);
  EXPECT_THROW(find_cccl_include_dir(), Error);
  unsetenv("KFORGE_CCCL_DIR");
  CompilerConfig config;
  config.include_dirs = {"/nonexistent-kforge-include"};
  EXPECT_THROW(NvrtcCompiler{config}, Error);
}

TEST(NvrtcCompiler, FindsTheToolkitHeaders) {
  fs::path cccl = find_cccl_include_dir();
  EXPECT_TRUE(fs::exists(cccl / "cub" / "block" / "block_reduce.cuh")) << cccl;
  EXPECT_TRUE(fs::exists(fs::path(find_cuda_include_dir()) / "cuda_fp16.h"));
  EXPECT_EQ(shared_compiler().include_dirs().size(), 2u);
  EXPECT_FALSE(shared_compiler().nvrtc_version().empty());
}

}  // namespace
}  // namespace kforge
