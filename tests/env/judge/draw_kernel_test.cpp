// The device draw kernel without a GPU: its source compiles with NVRTC for the GPUs kforge runs
// on, and its element code, compiled for the host, writes exactly fill_draw's bytes.
#include "env/judge/draw_kernel.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

struct Case {
  const char* what;
  Draw draw;
  DType dtype;
};

// Every dtype with every distribution it accepts, and draws that reach the conversions' edges:
// float16 overflow to inf and its subnormals, float32 subnormals, bfloat16 rounding far from 1.
std::vector<Case> cases() {
  return {
      {"normal f32", Draw::normal(0.37, 1.9), DType::float32},
      {"normal f16", Draw::normal(0.37, 1.9), DType::float16},
      {"normal bf16", Draw::normal(0.37, 1.9), DType::bfloat16},
      {"uniform f32", Draw::uniform(-0.25, 0.75), DType::float32},
      {"uniform f16", Draw::uniform(-0.25, 0.75), DType::float16},
      {"uniform bf16", Draw::uniform(-0.25, 0.75), DType::bfloat16},
      {"randint f32", Draw::randint(-3, 5), DType::float32},
      {"randint f16", Draw::randint(-3, 5), DType::float16},
      {"randint bf16", Draw::randint(-3, 5), DType::bfloat16},
      {"randint i32", Draw::randint(-3, 5), DType::int32},
      {"randint i64", Draw::randint(-3, 5), DType::int64},
      {"randint bool", Draw::randint(0, 2), DType::boolean},
      {"randint i64 full 2^32 range", Draw::randint(-2147483648LL, 2147483648LL), DType::int64},
      {"randint i32 wraps", Draw::randint(2147483000LL, 2147484000LL), DType::int32},
      {"constant f32", Draw::constant(0.1), DType::float32},
      {"constant f16", Draw::constant(-2.5e-6), DType::float16},
      {"constant bf16", Draw::constant(3.3e38), DType::bfloat16},
      {"constant i32", Draw::constant(-7), DType::int32},
      {"constant i64", Draw::constant(1e15), DType::int64},
      {"constant bool", Draw::constant(1), DType::boolean},
      {"uniform f16 overflowing", Draw::uniform(-70000, 70000), DType::float16},
      {"normal f16 subnormal", Draw::normal(0, 2e-5), DType::float16},
      {"uniform f32 subnormal", Draw::uniform(-1e-40, 1e-40), DType::float32},
      {"normal bf16 huge", Draw::normal(1e30, 3e37), DType::bfloat16},
      {"normal f32 overflowing", Draw::normal(0, 1e38), DType::float32},
      // A fused multiply-add instead of draw.cpp's two roundings changes ~2% of these floats.
      {"uniform f32 sensitive to contraction", Draw::uniform(0.1, 2.3), DType::float32},
  };
}

std::vector<uint8_t> cpu_fill(const Draw& d, DType t, uint64_t stream, int64_t n) {
  std::vector<uint8_t> v(dtype_size(t) * n, 0xab);
  fill_draw(d, t, stream, n, v.data());
  return v;
}

std::vector<uint8_t> device_code_fill(const Draw& d, DType t, uint64_t stream, int64_t n) {
  std::vector<uint8_t> v(dtype_size(t) * n, 0xcd);
  fill_draw_like_device(d, t, stream, n, v.data());
  return v;
}

int64_t first_mismatch(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t elem) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i / elem);
  return -1;
}

}  // namespace

TEST(DrawKernel, SourceCompilesWithNvrtcForHopperAndAmpere) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::vector<char> cubin = DeviceDrawer::compile(arch);
    ASSERT_GT(cubin.size(), 4u) << arch;
    EXPECT_EQ(0, std::memcmp(cubin.data(),
                             "\x7f"
                             "ELF",
                             4))
        << arch << ": a CUBIN is an ELF image";
  }
  DeviceDrawer drawer("sm_90a");
  EXPECT_EQ("sm_90a", drawer.arch());
  EXPECT_GT(drawer.cubin_bytes(), 0u);
}

// The per-context loader with no context to load into (no driver on a CI machine, or a thread
// without a current context): a runtime error that names the loader or the driver, never a crash.
// (Loading into a real context runs in every GPU test.)
TEST(HarnessModule, WithoutAContextLoadingIsARuntimeErrorNamingIt) {
  HarnessModule m(DeviceDrawer::compile("sm_90a"), "sm_90a", "draw kernel", {DeviceDrawer::kernel_name(DType::float32)});
  EXPECT_EQ(m.arch(), "sm_90a");
  EXPECT_GT(m.cubin_bytes(), 0u);
  std::string what;
  std::thread([&] {  // a fresh thread has no current context, with or without a driver
    try {
      m.in_current_context();
    } catch (const Error& e) {
      what = e.kind() == ErrorKind::runtime ? e.what() : std::string("wrong kind: ") + e.what();
    }
  })
      .join();
  EXPECT_TRUE(what.rfind("draw kernel: ", 0) == 0 || what.find("CUDA driver") != std::string::npos) << what;
}

TEST(DrawKernel, SourceDefinesOneKernelPerDtypeAndAsksForExactArithmetic) {
  std::string src = DeviceDrawer::source();
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean})
    EXPECT_NE(std::string::npos, src.find("KF_DRAW_KERNEL(" + std::string(DeviceDrawer::kernel_name(t)).substr(12) + ","))
        << DeviceDrawer::kernel_name(t);
  EXPECT_EQ(std::string("kforge_draw_bfloat16"), DeviceDrawer::kernel_name(DType::bfloat16));
  // The device primitives are the correctly rounded intrinsics, never plain operators NVVM may fuse.
  for (const char* intrinsic : {"__dadd_rn", "__dsub_rn", "__dmul_rn", "__double2float_rn", "__fadd_rn", "__fmul_rn"})
    EXPECT_NE(std::string::npos, src.find(intrinsic)) << intrinsic;
}

// Every kernel the drawer launches by name (the draws, the float dtypes' member kernels and the
// fingerprinting draws) is in the CUBIN NVRTC builds: a name the source lacks would only show when
// a GPU loads the module.
TEST(DrawKernel, TheCubinHoldsEveryKernelTheDrawerLaunches) {
  const std::vector<char> cubin = DeviceDrawer::compile("sm_90a");
  const std::string bytes(cubin.begin(), cubin.end());
  std::vector<std::string> names;
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean}) {
    names.push_back(DeviceDrawer::kernel_name(t));
    names.push_back(std::string("kforge_draw_fp_") + (DeviceDrawer::kernel_name(t) + std::strlen("kforge_draw_")));
  }
  for (const char* t : {"float32", "float16", "bfloat16"}) names.push_back(std::string("kforge_member_") + t);
  for (const std::string& name : names) EXPECT_NE(std::string::npos, bytes.find(name + '\0')) << name;
  EXPECT_EQ(std::string::npos, bytes.find(std::string("kforge_member_int32") + '\0')) << "members move float arguments only";
}

TEST(DrawKernel, CompileRefusesAVirtualArchitectureAndReportsNvrtcErrors) {
  try {
    DeviceDrawer::compile("compute_90");
    FAIL() << "compute_90 yields no CUBIN";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorKind::runtime, e.kind());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("compute_90"));
  }
  try {
    DeviceDrawer::compile("sm_1");
    FAIL() << "sm_1 is no architecture";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorKind::runtime, e.kind());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("sm_1"));
  }
}

TEST(DrawKernel, DeviceElementCodeWritesFillDrawBytesForEveryDtypeAndDistribution) {
  // 3M + 7 elements: fill_draw splits them over threads; the device code does one at a time.
  const int64_t n = 3'000'007;
  const uint64_t stream = draw_stream({0x5eed, 3, 0x5a17}, 2);
  for (const Case& c : cases()) {
    auto want = cpu_fill(c.draw, c.dtype, stream, n);
    auto got = device_code_fill(c.draw, c.dtype, stream, n);
    EXPECT_EQ(-1, first_mismatch(want, got, dtype_size(c.dtype))) << c.what << ": first differing element";
  }
}

TEST(DrawKernel, EdgeCaseDrawsReallyReachInfSubnormalsAndWrapping) {
  // Guards the case list above: each edge draw must produce the values it is there to test.
  const int64_t n = 100'000;
  auto halves = cpu_fill(Draw::uniform(-70000, 70000), DType::float16, 9, n);
  auto tiny_halves = cpu_fill(Draw::normal(0, 2e-5), DType::float16, 9, n);
  auto tiny_floats = cpu_fill(Draw::uniform(-1e-40, 1e-40), DType::float32, 9, n);
  int inf = 0, sub16 = 0, sub32 = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h, t;
    uint32_t f;
    std::memcpy(&h, &halves[2 * i], 2);
    std::memcpy(&t, &tiny_halves[2 * i], 2);
    std::memcpy(&f, &tiny_floats[4 * i], 4);
    inf += (h & 0x7fff) == 0x7c00;
    sub16 += (t & 0x7c00) == 0 && (t & 0x3ff) != 0;
    sub32 += (f & 0x7f800000u) == 0 && (f & 0x7fffffu) != 0;
  }
  EXPECT_GT(inf, n / 20);
  EXPECT_GT(sub16, n / 2);
  EXPECT_GT(sub32, n * 99 / 100);  // the rest round to zero
}

TEST(DrawKernel, DeviceConversionsMatchOnASweepOfFloatBitPatterns) {
  // Constant draws pass one double straight through the float, half and bfloat16 conversions:
  // a sweep over float bit patterns (all exponents, both signs; finite ones) plus the rounding
  // boundaries of half (65504, 65520, the subnormal grid) and bfloat16 (ties).
  std::vector<double> values = {65504.0,
                                65519.99,
                                65520.0,
                                65536.0,
                                6.103515625e-05,
                                6.1e-05,
                                5.960464477539063e-08,
                                2.98e-08,
                                2.9802322387695312e-08,
                                2.980232238769532e-08,
                                1.0 + 1.0 / 256,
                                1.0 + 3.0 / 512,
                                3.3895313892515355e38,
                                3.4028234663852886e38,
                                1e-45,
                                1.4e-45,
                                -0.0,
                                0.0};
  for (uint64_t u = 0; u < (1ull << 32); u += 65521) {
    uint32_t bits = static_cast<uint32_t>(u);
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isfinite(f)) values.push_back(f);
  }
  int checked = 0;
  for (double v : values) {
    for (DType t : {DType::float32, DType::float16, DType::bfloat16}) {
      auto want = cpu_fill(Draw::constant(v), t, 1, 1);
      auto got = device_code_fill(Draw::constant(v), t, 1, 1);
      EXPECT_EQ(want, got) << "constant " << v << " as " << dtype_name(t);
      ++checked;
    }
  }
  EXPECT_GT(checked, 150'000);
}

TEST(DrawKernel, InvalidDrawsAreRefusedAsFillDrawRefusesThem) {
  std::vector<uint8_t> buf(64);
  EXPECT_THROW(fill_draw_like_device(Draw::normal(0, 1), DType::int32, 1, 4, buf.data()), Error);
  EXPECT_THROW(fill_draw_like_device(Draw::uniform(1, 1), DType::float32, 1, 4, buf.data()), Error);
  EXPECT_THROW(fill_draw_like_device(Draw::constant(0.5), DType::int64, 1, 4, buf.data()), Error);
}
