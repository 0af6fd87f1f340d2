// NVRTC for a split .cu's device half (env/extension/nvrtc_cubin.h): which halves and flags it may
// build, and its stand-in C headers (env/extension/nvrtc_shim/) against the host's own, compiled and
// run with the build's C++ compiler: every type and value they define is glibc's and GCC's.
#include "env/extension/nvrtc_cubin.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "configs/remove_tree.h"
#include "env/extension/extension_build.h"

using namespace kforge;
namespace fs = std::filesystem;

TEST(NvrtcCubin, FlagsMapToNvrtcOrLeaveTheHalfToNvcc) {
  std::string why;
  auto o = nvrtc_options("sm_90a",
                         {"-O3", "-std=c++17", "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__", "-DTORCH_EXTENSION_NAME=m",
                          "-U__CUDA_NO_HALF2_OPERATORS__", "-use_fast_math", "-maxrregcount=64", "-Xptxas=-v", "-lineinfo"},
                         &why);
  ASSERT_TRUE(o.has_value()) << why;
  const std::vector<std::string> want = {"--gpu-architecture=sm_90a",
                                         "-std=c++17",
                                         "-D__CUDA_NO_HALF_OPERATORS__",
                                         "-DTORCH_EXTENSION_NAME=m",
                                         "-U__CUDA_NO_HALF2_OPERATORS__",
                                         "--use_fast_math",
                                         "--maxrregcount=64",
                                         "--ptxas-options=-v",
                                         "-lineinfo"};
  EXPECT_EQ(*o, want);
  // Host-compiler flags nvcc handles its own way: nvcc builds the half, as before.
  for (const char* f : {"-ffast-math", "-funroll-loops", "-Wall", "-w", "-Os2"}) {
    why.clear();
    EXPECT_FALSE(nvrtc_options("sm_90a", {"-O3", f}, &why).has_value()) << f;
    EXPECT_EQ(why, f);
  }
}

TEST(NvrtcCubin, HalvesNamingStdOrACompilersOwnMacroAreLeftToNvcc) {
  EXPECT_EQ(nvrtc_unsuitable("__global__ void k(float* __restrict__ p) { p[0] = fminf(p[1], 0.f); }"), "");
  EXPECT_EQ(nvrtc_unsuitable("__global__ __launch_bounds__(256) void k(float* p) {\n  p[0] = std::min(p[1], 0.f);\n}"),
            "uses std (line 2)");
  EXPECT_EQ(nvrtc_unsuitable("#ifdef __NVCC__\n#endif\n"), "uses __NVCC__ (line 1)");
  EXPECT_EQ(nvrtc_unsuitable("\n\n#if defined(__GNUC__)\n#endif\n"), "uses __GNUC__ (line 3)");
  EXPECT_EQ(nvrtc_unsuitable("#ifdef __CUDACC_RTC__\n#endif\n"), "uses __CUDACC_RTC__ (line 1)");
  EXPECT_EQ(nvrtc_unsuitable("using namespace std;"), "uses std (line 1)");
  // The driver API's names (cuda.h's stand-in is empty), the runtime's version macros, reserved macros.
  for (const char* id : {"CUresult", "CUdeviceptr", "cuInit", "CU_LAUNCH_PARAM_END", "CUDA_VERSION", "CUDART_VERSION", "_GLIBCXX_RELEASE",
                         "__CUDA_DEPRECATED", "__CUDACC_VER_MAJOR__", "RESOURCE_ABI_VERSION"})
    EXPECT_EQ(nvrtc_unsuitable(std::string("#if ") + id + "\n#endif\n"), std::string("uses ") + id + " (line 1)");
  // The runtime's types and CUDA's intrinsics are NVRTC's and nvcc's alike.
  EXPECT_EQ(nvrtc_unsuitable("__device__ float f(cudaStream_t s, __half h) { return __half2float(h) + __expf(1.f) + __ldg(&x); }"), "");
  // Comments and literals are not names; the split's own prelude names headers only.
  EXPECT_EQ(nvrtc_unsuitable("// std::min\n/* __NVCC__ */\nconst char* s = \"std::\";\n#include <cstdint>\n#include <algorithm>\n"), "");
  EXPECT_EQ(nvrtc_unsuitable("#if __CUDA_ARCH__ >= 900 && defined(__CUDACC__)\n#endif\n"), "");
}

namespace {

// A host program: each stand-in's typedefs and #defines, renamed, against the host's own names.
std::string shim_check_program(const std::string& shim_dir, int* checks) {
  std::set<std::string> macros;
  std::vector<std::pair<std::string, std::string>> defines, typedefs;
  const std::regex define(R"(^#define ([A-Z_0-9]+) (.+)$)"), type(R"(^typedef (.+) ([a-z_0-9]+);$)");
  for (const auto& e : fs::directory_iterator(shim_dir)) {
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, define)) {
        defines.emplace_back(m[1], m[2]);
        macros.insert(m[1]);
      } else if (std::regex_match(line, m, type)) {
        typedefs.emplace_back(m[2], m[1]);
      }
    }
  }
  // The device intrinsics the stand-ins spell bits with, on the host; floating values compared by their
  // bits (NAN equals nothing, 0.0 equals -0.0).
  std::string p =
      "#include <cstddef>\n#include <cstdint>\n#include <cfloat>\n#include <climits>\n#include <cmath>\n#include <cstdio>\n"
      "#include <cstring>\n#include <type_traits>\n"
      "static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }\n"
      "static double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }\n"
      "template <class T> bool same(T a, T b) {\n"
      "  if constexpr (std::is_floating_point<T>::value) return std::memcmp(&a, &b, sizeof a) == 0; else return a == b;\n}\n"
      "int main() {\n  int bad = 0;\n";
  for (const auto& [name, t] : typedefs) {
    p += "  { typedef " + t + " shim_t; if (!std::is_same<shim_t, ::" + name + ">::value) { std::puts(\"typedef " + name +
         " differs\"); bad = 1; } }\n";
    ++*checks;
  }
  for (const auto& [name, value] : defines) {
    std::string v = value;
    for (const auto& other : macros) v = std::regex_replace(v, std::regex("\\b" + other + "\\b"), "KFORGE_SHIM_" + other);
    p = "#define KFORGE_SHIM_" + name + " " + v + "\n" + p;
    p += "  if (!std::is_same<decltype(KFORGE_SHIM_" + name + "), decltype(" + name + ")>::value || !same<decltype(" + name +
         ")>(KFORGE_SHIM_" + name + ", " + name + ")) { std::puts(\"" + name + " differs\"); bad = 1; }\n";
    ++*checks;
  }
  return p + "  return bad;\n}\n";
}

}  // namespace

TEST(NvrtcCubin, TheStandInHeadersDefineWhatTheHostsDo) {
  const ExtensionToolchain tc = ExtensionToolchain::from_build();
  ASSERT_FALSE(tc.nvrtc_shim_dir.empty());
  int checks = 0;
  const fs::path dir = fs::temp_directory_path() / ("kforge-nvrtc-shim-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "check.cpp") << shim_check_program(tc.nvrtc_shim_dir, &checks);
  EXPECT_GE(checks, 82);  // every one of them read: stdint.h 12 types and 16 limits, stddef.h 2 types, float.h 17, limits.h 18, math.h 17
  const std::string cmd = tc.cxx + " -std=c++17 -o " + (dir / "check").string() + " " + (dir / "check.cpp").string() + " > " +
                          (dir / "log").string() + " 2>&1 && " + (dir / "check").string() + " >> " + (dir / "log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::stringstream log;
  log << std::ifstream(dir / "log").rdbuf();
  EXPECT_EQ(rc, 0) << log.str();
  remove_tree(dir.string());
}
