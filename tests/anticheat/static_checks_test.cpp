#include "anticheat/static_checks.h"

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "configs/file_reader.h"
#include "tests/anticheat/static_scan.h"
#include "tests/env/evaluator/candidates.h"

using namespace kforge;
using namespace kforge::testing::static_scan;
using kforge::testing::shipped_candidates;
using kforge::testing::source_dir;

namespace {}  // namespace

// ---- timers ---------------------------------------------------------------------------------

TEST(StaticChecks, RefusesClockCallsInEverySpelling) {
  StaticReport r = scan(
      "__device__ long long a() { return clock64(); }\n"
      "__device__ long long b() { return clock(); }\n"
      "__device__ long long c() { return ::clock64(); }\n"
      "__device__ void d() { __nanosleep(100); }\n"
      "__device__ long long e() { return \\u0063lock64(); }\n"
      "__device__ long long f() { return clo\\\n"
      "ck64(); }\n"
      "__device__ long long g() { return __builtin_readcyclecounter(); }\n"
      "template <class B, class T> __device__ bool h(B& bar, T tok) { return bar.try_wait_for(tok, 100); }\n");
  for (int line : {1, 2, 3, 4, 5, 6, 8, 9}) EXPECT_TRUE(flags(r, "timer", line)) << "line " << line << "\n" << dump(r);
  EXPECT_FALSE(r.passed);
}

TEST(StaticChecks, RefusesLibraryWrappersOfTheTimers) {
  StaticReport r = scan(
      "#include <cuda/std/chrono>\n"
      "#include <cuda/ptx>\n"
      "__device__ long long a() { return cuda::std::chrono::system_clock::now().time_since_epoch().count(); }\n"
      "__device__ long long b() { return cuda::ptx::get_sreg_globaltimer(); }\n"
      "__device__ long long c() { return cuda::ptx::get_sreg_clock64(); }\n"
      "__device__ long long d() { return __nvvm_read_ptx_sreg_globaltimer(); }\n");
  for (int line : {3, 4, 5, 6}) EXPECT_TRUE(flags(r, "timer", line)) << "line " << line << "\n" << dump(r);
}

TEST(StaticChecks, RefusesGlobalTimerReadInInlinePtx) {
  StaticReport r = scan(
      "__device__ unsigned long long now() {\n"
      "  unsigned long long t;\n"
      "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
      "  return t;\n"
      "}\n");
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const CheckFinding& f = r.findings[0];
  EXPECT_EQ(f.check, "timer");
  EXPECT_EQ(f.file, "kernel.cu");
  EXPECT_EQ(f.line, 3);
  EXPECT_EQ(f.evidence, "asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));");
  EXPECT_EQ(f.message,
            "reads the GPU timer (%globaltimer) in inline PTX: timing-dependent code is not allowed "
            "(a kernel's work may not depend on time)");
  EXPECT_EQ(format_finding(f), "kernel.cu:3: " + f.message + "\n    " + f.evidence);
}

TEST(StaticChecks, RefusesGlobalTimerReadSplitAcrossLiterals) {
  StaticReport r = scan(
      "__device__ unsigned long long now() {\n"
      "  unsigned long long t;\n"
      "  asm volatile(\"mov.u64 %0, %%glob\"\n"
      "               \"alti\" \"mer;\" : \"=l\"(t));\n"
      "  return t;\n"
      "}\n");
  EXPECT_TRUE(flags(r, "timer", 3)) << dump(r);
}

TEST(StaticChecks, RefusesTimerRegistersWrittenWithEscapesOrContinuations) {
  StaticReport r = scan(
      "__device__ void a(unsigned long long& t) { asm(\"mov.u64 %0, %%glob\\x61ltimer;\" : \"=l\"(t)); }\n"
      "__device__ void b(unsigned long long& t) { asm(\"mov.u64 %0, %%glob\\141ltimer;\" : \"=l\"(t)); }\n"
      "__device__ void c(unsigned long long& t) { asm(\"mov.u64 %0, %%glob\\\n"
      "altimer;\" : \"=l\"(t)); }\n"
      "__device__ void d(unsigned long long& t) { asm(R\"(mov.u64 %0, %%clock64;)\" : \"=l\"(t)); }\n"
      "__device__ void e(unsigned& t) { asm(\"mov.u32 %0, %%clock_hi;\" : \"=r\"(t)); }\n"
      "__device__ void f(unsigned& t) { asm(\"mov.u32 %0, %%pm3;\" : \"=r\"(t)); }\n"
      "__device__ void g() { asm volatile(\"nanosleep.u32 1000;\"); }\n");
  for (int line : {1, 2, 3, 5, 6, 7, 8}) EXPECT_TRUE(flags(r, "timer", line)) << "line " << line << "\n" << dump(r);
}

TEST(StaticChecks, RefusesTimerHiddenInMacros) {
  StaticReport r = scan(
      "#define NOW() clock64()\n"                                               // 1
      "#define CAT(a, b) a##b\n"                                                // 2
      "#define STR2(x) #x\n"                                                    // 3
      "#define STR(x) STR2(x)\n"                                                // 4
      "__device__ long long a() { return NOW(); }\n"                            // 5
      "__device__ long long b() { return CAT(clo, ck64)(); }\n"                 // 6
      "__device__ void c(unsigned long long& t) {\n"                            // 7
      "  asm(\"mov.u64 %0, %%\" STR(CAT(global, timer)) \";\" : \"=l\"(t));\n"  // 8
      "}\n"
      "%:define LATER clock\n"                            // 10
      "__device__ long long d() { return LATER(); }\n");  // 11
  for (int line : {1, 5, 6, 8, 10, 11}) EXPECT_TRUE(flags(r, "timer", line)) << "line " << line << "\n" << dump(r);
  bool named = false;
  for (const CheckFinding& f : r.findings)
    named |= f.line == 5 && f.message.find("through the macro 'NOW' defined on line 1") != std::string::npos;
  EXPECT_TRUE(named) << dump(r);
}

TEST(StaticChecks, RefusesUnusedMacroThatNamesATimer) {
  StaticReport r = scan("#define TICK(r) asm volatile(\"mov.u64 %0, %%global\" \"timer;\" : \"=l\"(r))\n");
  EXPECT_TRUE(flags(r, "timer", 1)) << dump(r);
  EXPECT_NE(r.findings.at(0).message.find("in the macro 'TICK'"), std::string::npos);
}

TEST(StaticChecks, RefusesPreprocessorInsideInlinePtx) {
  StaticReport r = scan("__device__ void f(unsigned long long& t) { asm(\"#define R %%glo\\nmov.u64 %0, R;\" : \"=l\"(t)); }\n");
  EXPECT_TRUE(flags(r, "timer", 1)) << dump(r);
}

TEST(StaticChecks, ScansTheLiveBranchesOfConditionalsAndSkipsIfZero) {
  StaticReport r = scan(
      "#if 0\n"
      "__device__ long long a() { return clock64(); }\n"
      "#else\n"
      "__device__ long long b() { return clock64(); }\n"
      "#endif\n"
      "#ifdef NEVER_DEFINED\n"
      "__device__ long long c() { return clock64(); }\n"
      "#endif\n");
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{4, "timer"}, {7, "timer"}})) << dump(r);
}

TEST(StaticChecks, CommentsAndUnrelatedStringsDoNotTrigger) {
  StaticReport r = scan(
      "// clock64() %globaltimer printf malloc __device__ int calls;\n"
      "/* asm(\"mov.u64 %0, %%globaltimer;\"); static int n; */\n"
      "static_assert(sizeof(int) == 4, \"no clock64(), %globaltimer, printf or malloc here\");\n"
      "#define NOTE \"uses no clock\"\n"
      "__device__ const char* note() { return \"%globaltimer %clock64 printf\"; }\n"
      "__device__ char c() { return '%'; }\n"
      "extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }  // printf(\"done\");\n");
  EXPECT_TRUE(r.passed) << dump(r);
}

TEST(StaticChecks, AllowsTimersWhenTheRuleIsOff) {
  StaticCheckConfig c;
  c.forbid_timers = false;
  EXPECT_TRUE(scan("__device__ long long a() { return clock64(); }\n", c).passed);
  EXPECT_FALSE(scan("__device__ long long a() { return clock64(); }\n").passed);
}

// ---- printf ---------------------------------------------------------------------------------

TEST(StaticChecks, RefusesDevicePrintfInEverySpelling) {
  StaticReport r = scan(
      "#define LOG(...) printf(__VA_ARGS__)\n"                            // 1
      "#define P CAT(pri, ntf)\n"                                         // 2
      "#define CAT(a, b) a##b\n"                                          // 3
      "__device__ void a(float v) { printf(\"%f\\n\", v); }\n"            // 4
      "__device__ void b(float v) { LOG(\"%f\\n\", v); }\n"               // 5
      "__device__ void c(float v) { P(\"%f\\n\", v); }\n"                 // 6
      "__device__ void d(const char* f, void* a) { vprintf(f, a); }\n");  // 7
  for (int line : {1, 4, 5, 6, 7}) EXPECT_TRUE(flags(r, "printf", line)) << "line " << line << "\n" << dump(r);
  StaticCheckConfig off;
  off.forbid_printf = false;
  EXPECT_TRUE(scan("__device__ void a(float v) { printf(\"%f\\n\", v); }\n", off).passed);
}

// ---- global state ---------------------------------------------------------------------------

TEST(StaticChecks, RefusesMutableDeviceGlobalsInEverySpelling) {
  StaticReport r = scan(
      "__device__ unsigned int calls;\n"                                        // 1
      "__device__ unsigned long long total = 0;\n"                              // 2
      "static __device__ int hidden;\n"                                         // 3
      "__device__ int direct(0);\n"                                             // 4
      "__device__ int braced{0};\n"                                             // 5
      "__device__ float* last_out;\n"                                           // 6
      "__device__ const float* last_in;\n"                                      // 7
      "template <int N> __device__ int per_size = 0;\n"                         // 8
      "namespace { __device__ int anon; }\n"                                    // 9
      "extern \"C\" { __device__ int c_linkage; }\n"                            // 10
      "__attribute__((device)) int attr;\n"                                     // 11
      "#define GLOBAL __device__\n"                                             // 12
      "GLOBAL int via_macro;\n"                                                 // 13
      "__device__ struct { int n; } anon_struct;\n"                             // 14
      "__device__ const int fixed = 1, *movable;\n"                             // 15
      "__device__ int (*fn_ptr)(int);\n"                                        // 16
      "__managed__ int managed;\n"                                              // 17
      "__attribute__((managed)) __attribute__((device)) int managed_attr;\n");  // 18
  for (int line = 1; line <= 18; ++line) {
    if (line == 12) continue;  // the #define
    EXPECT_TRUE(flags(r, "global_state", line)) << "line " << line << "\n" << dump(r);
  }
  EXPECT_EQ(count(r, "global_state"), 17) << dump(r);
  for (const CheckFinding& f : r.findings) EXPECT_EQ(f.message.find("'fixed'"), std::string::npos) << f.message;
}

TEST(StaticChecks, RefusesStaticVariablesThatPersistBetweenCalls) {
  StaticReport r = scan(
      "__device__ int f() {\n"                          // 1
      "  static int calls = 0;\n"                       // 2
      "  for (static int i = 0; i < 1;) {}\n"           // 3
      "  auto l = []() { static int n; return n; };\n"  // 4
      "  static const float* last;\n"                   // 5
      "  static int lazy = [] { return 1; }();\n"       // 6
      "  return calls + l();\n"
      "}\n"
      "struct Counter { static int n; };\n"                                             // 9
      "static int file_scope;\n"                                                        // 10
      "__device__ int g() <% static int digraph_braces; return digraph_braces; %>\n");  // 11
  for (int line : {2, 3, 4, 5, 6, 9, 10, 11}) EXPECT_TRUE(flags(r, "global_state", line)) << "line " << line << "\n" << dump(r);
}

TEST(StaticChecks, RefusesStaticHiddenBehindAnUnbalancedElseBranch) {
  // The #else branch is dead for the compiler but holds a `}` the scan sees; the static must
  // still be refused although the scan now thinks it is outside the function.
  StaticReport r = scan(
      "__device__ int f() {\n"
      "#if 1\n"
      "#else\n"
      "}\n"
      "#endif\n"
      "  static int calls = 0;\n"
      "  return ++calls;\n"
      "}\n");
  EXPECT_TRUE(flags(r, "global_state", 6)) << dump(r);
}

TEST(StaticChecks, RefusesAtomicsOnPersistentVariablesOnly) {
  StaticReport r = scan(
      "__device__ unsigned int calls;\n"
      "extern \"C\" __global__ void k(float* y, unsigned* hist) {\n"
      "  unsigned c = atomicAdd(&calls, 1u);\n"
      "  atomicAdd(&y[0], 1.0f);\n"
      "  atomicInc(hist + threadIdx.x, 7u);\n"
      "  y[1] = c;\n"
      "}\n");
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{1, "global_state"}, {3, "global_state"}})) << dump(r);
  EXPECT_NE(r.findings.at(1).message.find("'calls' ('atomicAdd')"), std::string::npos) << dump(r);
}

TEST(StaticChecks, RefusesDeviceHeapAllocation) {
  StaticReport r = scan(
      "__device__ void f(float* buf) {\n"
      "  int* a = (int*)malloc(64);\n"
      "  int* b = new int[4];\n"
      "  int* c = new int;\n"
      "  float* d = new (buf) float(1.0f);\n"  // placement new: fine
      "  free(a);\n"
      "  void* e = ::operator new(64);\n"
      "}\n");
  EXPECT_EQ(found(r),
            (std::set<std::pair<int, std::string>>{{2, "global_state"}, {3, "global_state"}, {4, "global_state"}, {7, "global_state"}}))
      << dump(r);
}

TEST(StaticChecks, RefusesGlobalVariableDeclaredInInlinePtx) {
  StaticReport r = scan(
      "asm(\".global .align 4 .u32 ptx_calls;\");\n"
      "__device__ void f(unsigned& c) { asm volatile(\"atom.global.add.u32 %0, [ptx_calls], 1;\" : \"=r\"(c)); }\n"
      "__device__ void g(const float* p, float& v) { asm(\"ld.global.nc.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(p)); }\n");
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{1, "global_state"}})) << dump(r);
}

TEST(StaticChecks, AcceptsConstantSharedLocalAndConstTables) {
  StaticReport r = scan(
      "#include <cuda_fp16.h>\n"
      "__constant__ float kc[4] = {1, 2, 3, 4};\n"
      "__device__ const float kt[] = {1.f, 2.f, 3.f};\n"
      "__device__ float const kt2[2] = {1.f, 2.f};\n"
      "__device__ constexpr float kce[] = {1.f};\n"
      "__device__ const float* const kp = kt;\n"
      "__device__ inline constexpr int kN = 4;\n"
      "static constexpr int kM = 3;\n"
      "const int kK = 2;\n"
      "__device__ float f(float x);\n"
      "__device__ float g(float, const float* = nullptr);\n"
      "__device__ float4 operator+(float4 a, float4 b);\n"
      "template <typename T> __device__ T h(T a, const T* b = nullptr);\n"
      "static __device__ __forceinline__ float sq(float v) { return v * v; }\n"
      "struct Tile {\n"
      "  static constexpr int kRows = 32;\n"
      "  __device__ static float run(float x) { return x; }\n"
      "  static __device__ int proto(int);\n"
      "};\n"
      "extern \"C\" __global__ void k(float* y, const float* x) {\n"
      "  __shared__ float s[256];\n"
      "  __shared__ union { float a[4]; int b[4]; } u;\n"
      "  extern __shared__ float dyn[];\n"
      "  static __shared__ float s2[32];\n"
      "  static constexpr int kLocal = 3;\n"
      "  static const float tab[3] = {1, 2, 3};\n"
      "  float acc[8] = {0};\n"
      "  int v = static_cast<int>(x[0]);\n"
      "  float* p = new (&acc[0]) float(1.0f);\n"
      "  atomicAdd(&y[0], 1.0f);\n"
      "  auto lam = [&](int i) { return acc[i]; };\n"
      "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\" :: \"r\"(0), \"l\"(x));\n"
      "  y[1] = s[0] + u.a[0] + dyn[0] + s2[0] + kLocal + tab[0] + v + lam(0) + *p + kc[0] + kt[0] + kt2[0] +\n"
      "         kce[0] + kp[0] + kN + kM + kK + Tile::run(sq(1.0f));\n"
      "}\n");
  EXPECT_TRUE(r.passed) << dump(r);
}

TEST(StaticChecks, AllowsGlobalStateWhenTheRuleIsOff) {
  StaticCheckConfig c;
  c.forbid_global_state = false;
  EXPECT_TRUE(scan("__device__ int calls;\n__device__ void f() { static int n; atomicAdd(&calls, 1); malloc(4); }\n", c).passed);
}

// ---- L2 residency hints ---------------------------------------------------------------------

TEST(StaticChecks, RefusesL2ResidencyHintsInEverySpelling) {
  StaticReport r = scan(
      "#include <cuda/annotated_ptr>\n"                                                                     // 1
      "__device__ unsigned long long pol() { unsigned long long p;\n"                                       // 2
      "  asm volatile(\"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\" : \"=l\"(p)); return p; }\n"  // 3
      "__device__ float a(const float* x) { float v; asm(\"ld.global.L2::evict_last.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(x)); return v; "
      "}\n"                                                                                                    // 4
      "__device__ float b(const float* x, unsigned long long p) { float v;\n"                                  // 5
      "  asm(\"ld.global.L2::cache_hint.f32 %0, [%1], %2;\" : \"=f\"(v) : \"l\"(x), \"l\"(p)); return v; }\n"  // 6
      "__device__ float c(const float* x) { cuda::annotated_ptr<const float, cuda::access_property::persisting> p(x, 1 << 20); return "
      "p[0]; }\n"                                                                                                     // 7
      "__device__ void d(float* x) { cuda::apply_access_property(x, 4096, cuda::access_property::persisting{}); }\n"  // 8
      "__device__ int e() { return (int)cudaAccessPropertyPersisting; }\n"                                            // 9
      "__device__ void f(const float* x) { asm(\"prefetch.global.L2::evict_\" \"last [%0];\" :: \"l\"(x)); }\n"       // 10
      "#define HINT \"L2::cache_\\x68int\"\n"                                                                         // 11
      "__device__ float g(const float* x, unsigned long long p) { float v; asm(\"ld.global.\" HINT \".f32 %0, [%1], %2;\" : \"=f\"(v) "
      ": \"l\"(x), \"l\"(p)); return v; }\n"  // 12
      "template <class T> __device__ T h(const T* x) { return cuda::ptx::ld_L1_evict_last_L2_cache_hint(cuda::ptx::space_global, x, "
      "0ull); }\n"                                                                                                   // 13
      "__device__ unsigned long long j(unsigned long long (*mk)(int)) { return mk(EVICT_LAST); }\n"                  // 14
      "__device__ void i(float* x) { cuda::associate_access_property(x, cuda::access_property::streaming{}); }\n");  // 15
  for (int line : {3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15}) EXPECT_TRUE(flags(r, "l2_residency", line)) << "line " << line << "\n" << dump(r);
  for (const CheckFinding& f : r.findings) EXPECT_EQ(f.check, "l2_residency") << dump(r);
  EXPECT_NE(r.findings.at(0).message.find("L2 residency hints are not allowed"), std::string::npos) << dump(r);
}

TEST(StaticChecks, AllowsHonestCacheHintsAndMentionsOfEvictLast) {
  StaticReport r = scan(
      "// keep the weights hot with evict_last? no: the harness flushes the L2 and refuses it\n"
      "/* cuda::access_property::persisting, createpolicy, .L2::cache_hint */\n"
      "__device__ float a(const float* x) { return __ldg(x) + __ldcs(x + 1) + __ldlu(x + 2) + __ldcg(x + 3); }\n"
      "__device__ void b(float* y, float v) { __stcs(y, v); __stwt(y + 1, v); }\n"
      "__device__ float c(const float* x) { float v; asm(\"ld.global.L1::evict_first.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(x)); return v; }\n"
      "__device__ float d(const float* x) { float v; asm(\"ld.global.nc.L1::no_allocate.L2::256B.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(x)); "
      "return v; }\n"
      "__device__ void e(const float* x) { asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(x)); }\n"
      "__device__ void f(float* x) { asm volatile(\"discard.global.L2 [%0], 128;\" :: \"l\"(x)); }\n"
      "__device__ const char* g() { return \"evict_last createpolicy cache_hint\"; }\n"
      "__device__ float h(const float* evict_first_ptr) { return evict_first_ptr[0]; }\n");
  EXPECT_TRUE(r.passed) << dump(r);
}

TEST(StaticChecks, AllowsL2HintsWhenTheRuleIsOff) {
  StaticCheckConfig c;
  c.forbid_l2_residency = false;
  StaticReport r = scan(
      "__device__ float a(const float* x) { float v; asm(\"ld.global.L2::evict_last.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(x)); return v; }\n"
      "__device__ int e() { return (int)cudaAccessPropertyPersisting; }\n",
      c);
  EXPECT_TRUE(r.passed) << dump(r);
}

// ---- inline assembly, configured names, macro limits ----------------------------------------

TEST(StaticChecks, AllowsInlinePtxByDefaultAndRefusesItWhenForbidden) {
  const std::string src =
      "#define LDG(v, p) asm(\"ld.global.nc.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(p))\n"  // 1
      "__device__ void a(const float* p, float& v) { LDG(v, p); }\n"                    // 2
      "__device__ void b() { asm volatile(\"cp.async.wait_all;\" ::: \"memory\"); }\n"  // 3
      "__device__ void c() { __asm__ __volatile__(\"membar.gl;\"); }\n";                // 4
  EXPECT_TRUE(scan(src).passed) << dump(scan(src));
  StaticCheckConfig c;
  c.forbid_inline_asm = true;
  StaticReport r = scan(src, c);
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{1, "inline_asm"}, {2, "inline_asm"}, {3, "inline_asm"}, {4, "inline_asm"}}))
      << dump(r);
}

TEST(StaticChecks, RefusesConfiguredIdentifiers) {
  StaticCheckConfig c;
  c.forbidden_identifiers = {"__trap", "__brkpt"};
  StaticReport r = scan(
      "#define STOP() __trap()\n"
      "__device__ void a() { __trap(); }\n"
      "__device__ void b() { STOP(); }\n"
      "__device__ void d() { __threadfence(); }  // __brkpt in a comment\n",
      c);
  EXPECT_EQ(found(r),
            (std::set<std::pair<int, std::string>>{{1, "forbidden_identifier"}, {2, "forbidden_identifier"}, {3, "forbidden_identifier"}}))
      << dump(r);
  EXPECT_NE(r.findings.at(1).message.find("uses '__trap', which is not allowed here"), std::string::npos) << dump(r);
  EXPECT_TRUE(scan("__device__ void a() { __trap(); }\n").passed);
}

TEST(StaticChecks, RefusesMacroBombsQuicklyAndSurvivesSelfReference) {
  auto start = std::chrono::steady_clock::now();
  StaticReport r = scan(
      "#define A(x) x x x x x x x x x x\n"
      "#define B(x) A(A(A(x)))\n"
      "#define C(x) B(B(B(x)))\n"
      "__device__ void f() { C(1); }\n"
      "#define X X\n"
      "#define Y Z\n"
      "#define Z Y\n"
      "__device__ void g() { X; Y; }\n");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(flags(r, "macro_expansion", 4)) << dump(r);
  EXPECT_EQ(count(r, "macro_expansion"), 1) << dump(r);
  EXPECT_LT(s, 5.0);
}

TEST(StaticChecks, NeverThrowsOnBrokenSource) {
  for (const char* src : {"", "\"unterminated", "/* unterminated", "#define", "#define F(", "F(((", "}}}{{{", "R\"x(", "asm(", "\\",
                          "#if 0\n", "__device__ int", "static", "?\?=define X clock64()"})
    EXPECT_NO_THROW(scan(src)) << src;
}

// ---- the shipped candidates and the exploit corpus -------------------------------------------

// Every shipped candidate is honest or merely wrong/faulting: none breaks a static rule.
TEST(StaticChecks, EveryShippedCandidatePasses) {
  auto candidates = shipped_candidates();
  ASSERT_FALSE(candidates.empty()) << "no candidates under " << source_dir();
  for (const auto& c : candidates) {
    namespace fs = std::filesystem;
    StaticReport r = run_static_checks(read_file(fs::path(c.dir) / "kernel.cu"), read_file(fs::path(c.dir) / "launch.yaml"), {});
    EXPECT_TRUE(r.passed) << c.task << "/" << c.name << "\n" << dump(r);
  }
}

// anticheat/corpus/static_scan/*.cu (the corpus's source-only part): one exploit a file, its header naming strategy and attack
// surface; each line a check must refuse ends in "flagged: <check>[, <check>]". The findings
// must be exactly those.
TEST(StaticChecks, RefusesEveryExploitOnItsMarkedLines) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(source_dir()) / "anticheat" / "corpus" / "static_scan";
  ASSERT_TRUE(fs::exists(dir)) << dir;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cu") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 5u);
  const std::regex mark(R"(flagged: ([a-z0-9_]+(, [a-z0-9_]+)*)\s*$)");
  for (const fs::path& p : files) {
    std::string src = read_file(p);
    EXPECT_NE(src.find("Strategy:"), std::string::npos) << p;
    EXPECT_NE(src.find("Attack surface:"), std::string::npos) << p;
    std::set<std::pair<int, std::string>> expected;
    std::istringstream in(src);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, mark)) continue;
      std::istringstream checks(m[1].str());
      std::string check;
      while (std::getline(checks, check, ',')) expected.insert({n, check.substr(check.find_first_not_of(' '))});
    }
    ASSERT_FALSE(expected.empty()) << p << " marks no line";
    StaticReport r = scan(src);
    EXPECT_FALSE(r.passed) << p.filename() << ": cheat succeeded";
    EXPECT_EQ(found(r), expected) << p.filename() << "\n" << dump(r);
  }
}
