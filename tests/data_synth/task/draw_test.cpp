#include "data_synth/task/draw.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/yaml_reader.h"

using namespace kforge;

namespace {

std::vector<float> floats(const Draw& d, uint64_t stream, int64_t n) {
  std::vector<float> v(n);
  fill_draw(d, DType::float32, stream, n, v.data());
  return v;
}

void moments(const std::vector<float>& v, double& mean, double& std) {
  double s = 0, ss = 0;
  for (float x : v) s += x;
  mean = s / v.size();
  for (float x : v) ss += (x - mean) * (x - mean);
  std = std::sqrt(ss / (v.size() - 1));
}

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST(Draw, SameKeyGivesSameBytesDifferentTrialOrSaltDoesNot) {
  DrawKey k{42, 0, 7};
  Draw d = Draw::normal(0, 1);
  auto a = floats(d, draw_stream(k, 0), 1000);
  auto b = floats(d, draw_stream(k, 0), 1000);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
  auto other_trial = floats(d, draw_stream({42, 1, 7}, 0), 1000);
  auto other_salt = floats(d, draw_stream({42, 0, 8}, 0), 1000);
  auto other_arg = floats(d, draw_stream(k, 1), 1000);
  int same_trial = 0, same_salt = 0, same_arg = 0;
  for (int i = 0; i < 1000; ++i) {
    same_trial += a[i] == other_trial[i];
    same_salt += a[i] == other_salt[i];
    same_arg += a[i] == other_arg[i];
  }
  EXPECT_LT(same_trial, 20);
  EXPECT_LT(same_salt, 20);
  EXPECT_LT(same_arg, 20);
}

TEST(Draw, ElementsDoNotDependOnThreadSplit) {
  // 3M elements fill in parallel; the first 1000 must equal a small sequential fill.
  Draw d = Draw::uniform(-2, 3);
  uint64_t s = draw_stream({1, 2, 3}, 4);
  auto big = floats(d, s, 3 << 20);
  auto small = floats(d, s, 1000);
  EXPECT_EQ(0, std::memcmp(big.data(), small.data(), 1000 * 4));
}

TEST(Draw, NormalHasItsMomentsAndBoundedTails) {
  double mean, std;
  auto v = floats(Draw::normal(1.5, 2.0), draw_stream({9, 0, 0}, 0), 200000);
  moments(v, mean, std);
  EXPECT_NEAR(mean, 1.5, 0.02);
  EXPECT_NEAR(std, 2.0, 0.02);
  for (float x : v) ASSERT_LE(std::fabs(x - 1.5), 2.0 * 3.47);
}

TEST(Draw, UniformStaysInRangeAndCoversIt) {
  auto v = floats(Draw::uniform(-0.25, 0.75), draw_stream({3, 0, 0}, 0), 100000);
  float lo = 1, hi = -1;
  for (float x : v) {
    ASSERT_GE(x, -0.25f);
    ASSERT_LT(x, 0.75f);
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  EXPECT_LT(lo, -0.24f);
  EXPECT_GT(hi, 0.74f);
}

TEST(Draw, RandintAndConstantForIntegers) {
  std::vector<int64_t> v(10000);
  fill_draw(Draw::randint(-3, 4), DType::int64, 11, v.size(), v.data());
  std::vector<int> seen(7, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    seen[x + 3]++;
  }
  for (int c : seen) EXPECT_GT(c, 1000);
  std::vector<int32_t> c(5);
  fill_draw(Draw::constant(9), DType::int32, 1, 5, c.data());
  for (int32_t x : c) EXPECT_EQ(x, 9);
}

TEST(Draw, RejectsDrawsTheDtypeCannotHold) {
  EXPECT_THROW(Draw::normal(0, 1).validate(DType::int64), Error);
  EXPECT_THROW(Draw::uniform(1, 1).validate(DType::float32), Error);
  EXPECT_THROW(Draw::normal(0, -1).validate(DType::float32), Error);
  EXPECT_THROW(Draw::constant(0.5).validate(DType::int32), Error);
  EXPECT_NO_THROW(Draw::randint(0, 10).validate(DType::float16));
}

TEST(Draw, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(bits_to_float(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bfloat16_bits(bits_to_float(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bfloat16_bits(bits_to_float(0x3f808001)), 0x3f81);  // above half rounds up
  EXPECT_EQ(float_to_bfloat16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bfloat16_bits(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_bits(NAN) & 0x7fc0, 0x7fc0);
}

TEST(Draw, HalfRoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.5f), 0xc100);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);                      // rounds to infinity
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);         // tie rounds to even (zero)
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp rounds to 2
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half_bits(NAN) & 0x7e00, 0x7e00);
}

TEST(Draw, ReadsFromYamlStrictly) {
  Draw d = Draw::from_yaml(YamlNode::parse("{dist: uniform, low: -1, high: 2}", "d.yaml"));
  EXPECT_EQ(d, Draw::uniform(-1, 2));
  EXPECT_EQ(Draw::from_yaml(YamlNode::parse("{dist: normal}", "d.yaml")), Draw::normal(0, 1));
  EXPECT_THROW(Draw::from_yaml(YamlNode::parse("{dist: gamma}", "d.yaml")), Error);
  EXPECT_THROW(Draw::from_yaml(YamlNode::parse("{dist: normal, sigma: 2}", "d.yaml")), Error);
}

TEST(Draw, PythonExpressionMatchesTheDistribution) {
  EXPECT_EQ(Draw::normal(0, 1).python("B, D", DType::float32), "torch.randn((B, D), dtype=torch.float32)");
  EXPECT_EQ(Draw::normal(1, 0.1).python("C", DType::bfloat16), "torch.randn((C,), dtype=torch.bfloat16) * 0.1 + 1");
  EXPECT_EQ(Draw::uniform(0.5, 1.5).python("C", DType::float32), "torch.rand((C,), dtype=torch.float32) + 0.5");
}
