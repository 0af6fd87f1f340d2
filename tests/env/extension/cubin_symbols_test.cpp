// A cubin's kernels read from its ELF symbol table (env/extension/cubin_symbols.h): the entries of a
// cubin the real nvcc makes (extern "C", C++ linkage, static; not a __device__ function), the symbol
// of a launched kernel among them, and texts that are not a cubin refused as errors, never misread.
#include "env/extension/cubin_symbols.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "env/extension/extension_build.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

bool has_entry(const std::vector<CubinEntry>& v, const std::string& symbol, bool local) {
  return std::any_of(v.begin(), v.end(), [&](const CubinEntry& e) { return e.symbol == symbol && e.local == local; });
}

}  // namespace

TEST(CubinSymbols, TheEntriesOfARealCubinAndTheKernelsAmongThem) {
  const ExtensionToolchain tc = ExtensionToolchain::from_build();
  const fs::path dir = fs::temp_directory_path() / ("kforge-cubin-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.cu") << "static __global__ void sk(float* y) { y[0] = 1; }\n"
                                 "__device__ __noinline__ float helper(float a) { return a * 2; }\n"
                                 "__global__ void K(float* y, int n) { y[n] = helper(y[0]); }\n"
                                 "__global__ void Kx(float* y) { y[2] = 0; }\n"
                                 "extern \"C\" __global__ void ck(float* y) { y[1] = 3; }\n"
                                 "void host(float* y) { sk<<<1, 1>>>(y); K<<<1, 1>>>(y, 2); Kx<<<1, 1>>>(y); ck<<<1, 1>>>(y); }\n";
  const std::string cmd = tc.nvcc + " -cubin -arch=" + tc.arch + " " + (dir / "k.cu").string() + " -o " + (dir / "k.cubin").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::vector<CubinEntry> entries = cubin_entries(read_file((dir / "k.cubin").string(), "cubin"));
  EXPECT_EQ(entries.size(), 4u);
  EXPECT_TRUE(has_entry(entries, "ck", false));
  EXPECT_TRUE(has_entry(entries, "_Z1KPfi", false));
  EXPECT_TRUE(has_entry(entries, "_Z2KxPf", false));
  EXPECT_TRUE(has_entry(entries, "_Z2skPf", true));
  std::string why;
  EXPECT_EQ(kernel_symbol(entries, "K", &why), "_Z1KPfi");  // not Kx's, whose name only starts the same
  EXPECT_EQ(kernel_symbol(entries, "Kx", &why), "_Z2KxPf");
  EXPECT_EQ(kernel_symbol(entries, "ck", &why), "ck");
  EXPECT_EQ(kernel_symbol(entries, "sk", &why), "_Z2skPf");
  EXPECT_EQ(kernel_symbol(entries, "helper", &why), "");  // a device function is no entry
  EXPECT_EQ(why, "kernel 'helper' is not an entry of its cubin");
  remove_tree(dir.string());
}

TEST(CubinSymbols, AKernelMatchingTwiceHasNoSymbol) {
  std::string why;
  EXPECT_EQ(kernel_symbol({{"_Z1kPf", false}, {"_Z1kPi", false}}, "k", &why), "");
  EXPECT_EQ(why, "kernel 'k' matches 2 entries of its cubin");
  EXPECT_EQ(kernel_symbol({{"k", false}, {"_Z2kkPf", false}}, "k", &why), "k");
}

TEST(CubinSymbols, TextsThatAreNoCubinAreErrors) {
  EXPECT_THROW(cubin_entries(""), Error);
  EXPECT_THROW(cubin_entries(std::string(64, 'x')), Error);
  std::string elf(64, '\0');  // an ELF64 header whose section headers lie past the end
  elf.replace(0, 5,
              "\x7f"
              "ELF\x02");
  elf[58] = 64;    // e_shentsize
  elf[60] = 3;     // e_shnum
  elf[40] = 0x10;  // e_shoff = 0x10000
  elf[41] = 0;
  elf[42] = 1;
  try {
    cubin_entries(elf);
    FAIL() << "a cubin whose section headers lie outside it was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lies outside it"), std::string::npos) << e.what();
  }
}
