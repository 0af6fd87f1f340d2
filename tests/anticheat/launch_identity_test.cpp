// The launch_identity static check (anticheat/static_checks.h): reading which launch a call is
// (%gridid, %current_graph_exec, %envreg*) is refused in every spelling; other special registers
// and mere names are not.
#include <gtest/gtest.h>

#include "tests/anticheat/static_scan.h"

using namespace kforge;
using namespace kforge::testing::static_scan;

// ---- launch identity ------------------------------------------------------------------------

TEST(StaticChecks, RefusesGridIdReadInInlinePtx) {
  StaticReport r = scan(
      "__device__ unsigned long long launch() {\n"
      "  unsigned long long g;\n"
      "  asm volatile(\"mov.u64 %0, %%gridid;\" : \"=l\"(g));\n"
      "  return g;\n"
      "}\n");
  ASSERT_EQ(r.findings.size(), 1u) << dump(r);
  const CheckFinding& f = r.findings[0];
  EXPECT_EQ(f.check, "launch_identity");
  EXPECT_EQ(f.line, 3);
  EXPECT_EQ(f.evidence, "asm volatile(\"mov.u64 %0, %%gridid;\" : \"=l\"(g));");
  EXPECT_EQ(f.message,
            "reads the launch's grid id (%gridid) in inline PTX: reading the launch's identity is not allowed (the grid id "
            "numbers the launches on the GPU, so the distance between two calls' ids tells what the harness ran in "
            "between; a kernel's work may not depend on which call it is)");
}

TEST(StaticChecks, RefusesLaunchIdentityRegistersInEverySpelling) {
  StaticReport r = scan(
      "#define CAT(a, b) a##b\n"                                                                                // 1
      "#define STR2(x) #x\n"                                                                                    // 2
      "#define STR(x) STR2(x)\n"                                                                                // 3
      "__device__ void a(unsigned long long& g) { asm(\"mov.u64 %0, %%gri\" \"did;\" : \"=l\"(g)); }\n"         // 4
      "__device__ void b(unsigned long long& g) { asm(\"mov.u64 %0, %%\\x67ridid;\" : \"=l\"(g)); }\n"          // 5
      "__device__ void c(unsigned long long& g) { asm(\"mov.u64 %0, %%gr\\151did;\" : \"=l\"(g)); }\n"          // 6
      "__device__ void d(unsigned long long& g) { asm(\"mov.u64 %0, %%gri\\\n"                                  // 7
      "did;\" : \"=l\"(g)); }\n"                                                                                // 8
      "__device__ void e(unsigned long long& g) { asm(R\"(mov.u64 %0, %%gridid;)\" : \"=l\"(g)); }\n"           // 9
      "__device__ void f(unsigned long long& g) {\n"                                                            // 10
      "  asm(\"mov.u64 %0, %%\" STR(CAT(grid, id)) \";\" : \"=l\"(g));\n"                                       // 11
      "}\n"                                                                                                     // 12
      "__device__ void h(unsigned long long& g) { asm(\"mov.u64 %0, %%current_graph_exec;\" : \"=l\"(g)); }\n"  // 13
      "%:define GRAPH(r) asm(\"mov.u64 %0, %%current_\" \"graph_exec;\" : \"=l\"(r))\n"                         // 14
      "__device__ void i(unsigned long long& g) { GRAPH(g); }\n"                                                // 15
      "#define UNUSED_GRID \"mov.u64 %0, %%gridid;\"\n");                                                       // 16
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{4, "launch_identity"},
                                                             {5, "launch_identity"},
                                                             {6, "launch_identity"},
                                                             {7, "launch_identity"},
                                                             {9, "launch_identity"},
                                                             {11, "launch_identity"},
                                                             {13, "launch_identity"},
                                                             {14, "launch_identity"},
                                                             {15, "launch_identity"},
                                                             {16, "launch_identity"}}))
      << dump(r);
  bool named = false;
  for (const CheckFinding& f : r.findings)
    named |= f.line == 15 && f.message.find("through the macro 'GRAPH' defined on line 14") != std::string::npos;
  EXPECT_TRUE(named) << dump(r);
}

TEST(StaticChecks, RefusesLibraryReadersOfTheLaunchIdentity) {
  StaticReport r = scan(
      "#include <cuda/ptx>\n"                                                                     // 1
      "#define CAT(a, b) a##b\n"                                                                  // 2
      "__device__ unsigned long long a() { return __nvvm_read_ptx_sreg_gridid(); }\n"             // 3
      "__device__ unsigned long long b() { return cuda::ptx::get_sreg_gridid(); }\n"              // 4
      "__device__ unsigned long long c() { return cuda::ptx::get_sreg_current_graph_exec(); }\n"  // 5
      "__device__ void* d() { return (void*)cudaGetCurrentGraphExec(); }\n"                       // 6
      "__device__ unsigned long long e() { return CAT(__nvvm_read_ptx_sreg_, gridid)(); }\n"      // 7
      "__device__ unsigned long long f() { return __builtin_ptx_read_gridid(); }\n"               // 8
      "__device__ unsigned long long g() { return \\u0067et_sreg_gridid(); }\n"                   // 9
      "__device__ unsigned h() { return __nvvm_read_ptx_sreg_envreg3(); }\n"                      // 10
      "__device__ void i(unsigned& e) { asm(\"mov.u32 %0, %%envreg31;\" : \"=r\"(e)); }\n"        // 11
      "__device__ unsigned j(unsigned envreg7) { return envreg7; }\n");                           // 12: a name only
  EXPECT_EQ(found(r), (std::set<std::pair<int, std::string>>{{10, "launch_identity"},
                                                             {11, "launch_identity"},
                                                             {3, "launch_identity"},
                                                             {4, "launch_identity"},
                                                             {5, "launch_identity"},
                                                             {6, "launch_identity"},
                                                             {7, "launch_identity"},
                                                             {8, "launch_identity"},
                                                             {9, "launch_identity"}}))
      << dump(r);
}

TEST(StaticChecks, AllowsOtherSpecialRegistersAndNamesThatOnlyMentionTheGridId) {
  StaticReport r = scan(
      "struct Launch { int gridid; };\n"
      "__device__ int a(Launch l) { int gridid = blockIdx.x; return gridid + l.gridid; }\n"
      "__device__ int b() { unsigned current_graph_exec = 0; return (int)current_graph_exec; }\n"
      "__device__ unsigned c() { unsigned s; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(s)); return s; }\n"
      "__device__ unsigned d() { unsigned l; asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(l)); return l; }\n"
      "__device__ unsigned e() { unsigned w; asm(\"mov.u32 %0, %%warpid;\" : \"=r\"(w)); return w; }\n"
      "__device__ unsigned f() { return __nvvm_read_ptx_sreg_laneid() + cuda::ptx::get_sreg_smid(); }\n"
      "// asm(\"mov.u64 %0, %%gridid;\") in a comment\n"
      "__device__ const char* g() { return \"%gridid %current_graph_exec\"; }\n"
      "#define GRID_NOTE \"the grid id\"\n");
  EXPECT_TRUE(r.passed) << dump(r);
}

TEST(StaticChecks, AllowsLaunchIdentityWhenTheRuleIsOff) {
  const std::string src =
      "__device__ void a(unsigned long long& g) { asm(\"mov.u64 %0, %%gridid;\" : \"=l\"(g)); }\n"
      "__device__ unsigned long long b() { return cuda::ptx::get_sreg_gridid(); }\n";
  StaticCheckConfig c;
  c.forbid_launch_identity = false;
  EXPECT_TRUE(scan(src, c).passed) << dump(scan(src, c));
  EXPECT_EQ(count(scan(src), "launch_identity"), 2) << dump(scan(src));
}
