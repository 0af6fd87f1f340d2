// The verification's fused kernels without a GPU: the source compiles with NVRTC, and the element
// code (compiled for the host) follows the comparison rule and the fingerprint's properties as
// check_kernel.h states them, checked against plain definitions written here.
#include "env/judge/check_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

// The rule of check_kernel.h, written plainly over doubles.
CompareStats plain_rule(const std::vector<double>& c, const std::vector<double>& r, const std::vector<bool>& poisoned, bool float_dtype,
                        double atol, double rtol) {
  CompareStats s;
  for (size_t i = 0; i < c.size(); ++i) {
    bool bad;
    if (std::isfinite(c[i]) && std::isfinite(r[i])) {
      double err = std::fabs(c[i] - r[i]);
      volatile double lim = rtol * std::fabs(r[i]);  // no contraction into an FMA
      bad = err > atol + lim;
      s.max_abs = std::max(s.max_abs, err);
      if (r[i] != 0) s.max_rel = std::max(s.max_rel, err / std::fabs(r[i]));
    } else {
      bad = !(c[i] == r[i] || (std::isnan(c[i]) && std::isnan(r[i])));
    }
    if (poisoned[i] && float_dtype) bad = true;
    s.unwritten += poisoned[i];
    s.mismatches += bad;
  }
  return s;
}

void expect_same(const CompareStats& want, const CompareStats& got) {
  EXPECT_EQ(want.mismatches, got.mismatches);
  EXPECT_EQ(want.unwritten, got.unwritten);
  EXPECT_EQ(want.max_abs, got.max_abs);
  EXPECT_EQ(want.max_rel, got.max_rel);
}

uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST(CheckKernel, SourceCompilesWithNvrtc) {
  std::vector<char> cubin = DeviceChecker::compile("sm_90a");
  EXPECT_GT(cubin.size(), 1000u);
  EXPECT_THROW(DeviceChecker::compile("compute_90"), kforge::Error);
}

TEST(CheckKernel, Float32FollowsTheRuleWithNanInfAndPoison) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd;
  const double atol = 1e-3, rtol = 1e-2;
  const uint64_t poison = poison_bits_for_trial(DType::float32, 3);
  const int n = 20000;
  std::vector<uint32_t> cb(n), rb(n);
  for (int i = 0; i < n; ++i) {
    float r = nd(rng);
    float c = r + static_cast<float>(nd(rng) * (i % 3 == 0 ? 2e-2 : 1e-4));  // a third of them far off
    rb[i] = f2u(r);
    cb[i] = f2u(c);
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  rb[10] = cb[10] = f2u(nan);                                 // NaN where the reference has NaN: fine
  cb[11] = f2u(nan);                                          // NaN where it has a number: bad
  rb[12] = cb[12] = f2u(inf);                                 // the same infinity: fine
  rb[13] = f2u(inf), cb[13] = f2u(-inf);                      // the other infinity: bad
  rb[14] = f2u(nan), cb[14] = static_cast<uint32_t>(poison);  // unwritten where the reference is NaN: bad
  cb[15] = static_cast<uint32_t>(poison);                     // unwritten: bad
  rb[16] = f2u(0.f), cb[16] = f2u(5e-4f);                     // within atol of zero: fine, no relative error
  std::vector<double> c(n), r(n);
  std::vector<bool> poisoned(n);
  for (int i = 0; i < n; ++i) {
    c[i] = u2f(cb[i]);
    r[i] = u2f(rb[i]);
    poisoned[i] = cb[i] == poison;
  }
  CompareStats want = plain_rule(c, r, poisoned, true, atol, rtol);
  CompareStats got = compare_like_device(DType::float32, cb.data(), rb.data(), n, atol, rtol, poison);
  expect_same(want, got);
  EXPECT_GT(got.mismatches, 1000u);
  EXPECT_EQ(got.unwritten, 2u);
}

// The compare divides only where an element's relative error may raise the maximum so far: the
// maximum must still be exactly the one of dividing at every element, whatever the order (the
// device's threads see the elements in other orders than the host's loop), with ties, errors a
// rounding apart, huge and subnormal references.
TEST(CheckKernel, TheLargestRelativeErrorIsExactInEveryOrder) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> ud(1.f, 2.f);
  std::vector<std::pair<float, float>> pairs;  // (candidate, reference)
  for (int i = 0; i < 4000; ++i) {
    float r = ud(rng) * (i % 7 == 0 ? 1e30f : i % 11 == 0 ? 1e-40f : 1.f);  // 1e-40: a float32 subnormal
    float c = r;
    for (int k = 0; k <= i % 4; ++k) c = std::nextafter(c, 2 * c + 1);  // a few ulps up
    pairs.push_back({c, r});
    if (i % 5 == 0) pairs.push_back({c, r});    // exact ties
    if (i % 9 == 0) pairs.push_back({-c, -r});  // the same ratio, negative
  }
  auto run = [&](const std::vector<std::pair<float, float>>& v) {
    const size_t n = v.size();
    std::vector<uint32_t> cb(n), rb(n);
    std::vector<double> c(n), r(n);
    for (size_t i = 0; i < n; ++i) {
      cb[i] = f2u(v[i].first), rb[i] = f2u(v[i].second);
      c[i] = v[i].first, r[i] = v[i].second;
    }
    CompareStats want = plain_rule(c, r, std::vector<bool>(n, false), true, 0.0, 0.0);
    CompareStats got = compare_like_device(DType::float32, cb.data(), rb.data(), static_cast<int64_t>(n), 0.0, 0.0, 0);
    expect_same(want, got);
    return got.max_rel;
  };
  auto ratio = [](const std::pair<float, float>& p) { return std::fabs(double(p.first) - double(p.second)) / std::fabs(double(p.second)); };
  std::vector<std::pair<float, float>> v = pairs;
  std::sort(v.begin(), v.end(), [&](auto& a, auto& b) { return ratio(a) < ratio(b); });  // every element a new maximum
  const double top = run(v);
  EXPECT_GT(top, 0.0);
  std::reverse(v.begin(), v.end());  // the maximum first: every later division may be skipped
  EXPECT_EQ(run(v), top);
  for (int k = 0; k < 5; ++k) {
    std::shuffle(v.begin(), v.end(), rng);
    EXPECT_EQ(run(v), top);
  }
  // Relative errors a rounding apart: int64 values near 2^62 (exact doubles, 2^10 apart) whose
  // errors over references are m / (2^52 + k), neighbours in double; ascending, each one is a new
  // maximum by about an ulp, which a skip with no margin or too wide a one would miss.
  std::vector<std::pair<int64_t, int64_t>> close;
  for (int64_t k = 2000; k >= 0; --k)
    for (int64_t m : {int64_t{1} << 40, (int64_t{1} << 40) + 1}) {
      const int64_t r = (int64_t{1} << 62) + k * 1024, c = r + m * 1024;
      close.push_back({c, r});
    }
  auto run64 = [&](const std::vector<std::pair<int64_t, int64_t>>& w) {
    const size_t n = w.size();
    std::vector<int64_t> cb(n), rb(n);
    std::vector<double> c(n), r(n);
    for (size_t i = 0; i < n; ++i) {
      cb[i] = w[i].first, rb[i] = w[i].second;
      c[i] = static_cast<double>(w[i].first), r[i] = static_cast<double>(w[i].second);
    }
    CompareStats want = plain_rule(c, r, std::vector<bool>(n, false), false, 0.0, 0.0);
    CompareStats got = compare_like_device(DType::int64, cb.data(), rb.data(), static_cast<int64_t>(n), 0.0, 0.0, 0);
    expect_same(want, got);
    return got.max_rel;
  };
  const double top64 = run64(close);
  std::reverse(close.begin(), close.end());
  EXPECT_EQ(run64(close), top64);
  std::shuffle(close.begin(), close.end(), rng);
  EXPECT_EQ(run64(close), top64);
}

TEST(CheckKernel, HalfAndBfloat16ValuesDecodeExactly) {
  // |c - 0| for c of known bit patterns: the decoded value comes back as max_abs.
  struct Case {
    uint16_t bits;
    double value;
  };
  const Case half_cases[] = {{0x3C00, 1.0},
                             {0x0001, std::ldexp(1.0, -24)},
                             {0x7BFF, 65504.0},
                             {0x8400, -std::ldexp(1.0, -14)},
                             {0x03FF, 1023 * std::ldexp(1.0, -24)},
                             {0x3555, (1.0 + 341.0 / 1024.0) * 0.25}};
  for (const Case& k : half_cases) {
    uint16_t zero = 0;
    CompareStats s = compare_like_device(DType::float16, &k.bits, &zero, 1, 0, 0, 0x7E01);
    EXPECT_EQ(s.max_abs, std::fabs(k.value)) << std::hex << k.bits;
    EXPECT_EQ(s.mismatches, 1u);
  }
  uint16_t inf = 0x7C00, ninf = 0xFC00, hnan = 0x7E00;
  EXPECT_EQ(compare_like_device(DType::float16, &inf, &inf, 1, 0, 0, 0x7E01).mismatches, 0u);
  EXPECT_EQ(compare_like_device(DType::float16, &ninf, &inf, 1, 0, 0, 0x7E01).mismatches, 1u);
  EXPECT_EQ(compare_like_device(DType::float16, &hnan, &hnan, 1, 0, 0, 0x7E01).mismatches, 0u);
  uint16_t bf = 0x3FC0, bzero = 0;  // 1.5 in bfloat16
  EXPECT_EQ(compare_like_device(DType::bfloat16, &bf, &bzero, 1, 0, 0, 0x7FC1).max_abs, 1.5);
}

TEST(CheckKernel, IntegerAndBoolOutputsCompareExactly) {
  std::vector<int32_t> a = {1, -5, 7, 1 << 30, 0x5A5A0000}, b = {1, -5, 8, 1 << 30, 0x5A5A0000};
  CompareStats s = compare_like_device(DType::int32, a.data(), b.data(), 5, 0, 0, 0x5A5A0000);
  EXPECT_EQ(s.mismatches, 1u);  // the poison sentinel matching the reference is not a mismatch for integers...
  EXPECT_EQ(s.unwritten, 1u);   // ...but it is counted
  EXPECT_EQ(s.max_abs, 1.0);
  std::vector<int64_t> c = {int64_t{1} << 60, -3}, d = {(int64_t{1} << 60) + 4096, -3};
  EXPECT_EQ(compare_like_device(DType::int64, c.data(), d.data(), 2, 0, 0, 0).mismatches, 1u);
  std::vector<uint8_t> t = {0, 1, 1, 0x5A, 0xFF}, u = {0, 1, 0, 1, 1};
  CompareStats bs = compare_like_device(DType::boolean, t.data(), u.data(), 5, 0, 0, 0x5A);
  EXPECT_EQ(bs.mismatches, 3u);  // 1 vs 0, the poison byte, and 0xFF is not a bool
  EXPECT_EQ(bs.unwritten, 1u);
}

TEST(CheckKernel, FingerprintSeesEveryChangeAndDependsOnTheKey) {
  std::mt19937_64 rng(11);
  for (int64_t nbytes : {int64_t{8}, int64_t{13}, int64_t{4096}, int64_t{100003}}) {
    std::vector<uint8_t> buf(nbytes);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    const uint64_t key = rng();
    const uint64_t h = fingerprint_like_device(buf.data(), nbytes, key);
    EXPECT_EQ(h, fingerprint_like_device(buf.data(), nbytes, key));
    EXPECT_NE(h, fingerprint_like_device(buf.data(), nbytes, key ^ 1));
    std::set<uint64_t> seen = {h};
    for (int64_t pos : {int64_t{0}, nbytes / 2, nbytes - 1}) {
      for (int bit : {0, 7}) {
        std::vector<uint8_t> m = buf;
        m[pos] ^= static_cast<uint8_t>(1u << bit);
        EXPECT_TRUE(seen.insert(fingerprint_like_device(m.data(), nbytes, key)).second) << nbytes << " " << pos;
      }
    }
    if (nbytes >= 16) {  // two words swapped: same multiset of words, other positions
      std::vector<uint8_t> m = buf;
      for (int i = 0; i < 8; ++i) std::swap(m[i], m[8 + i]);
      EXPECT_NE(h, fingerprint_like_device(m.data(), nbytes, key));
    }
  }
}

TEST(CheckKernel, PoisonIsNanForFloatsAndVariesByTrial) {
  std::set<uint64_t> f32, f16, bf16, i32, i64;
  for (uint64_t t = 0; t < 50; ++t) {
    uint64_t p = poison_bits_for_trial(DType::float32, t);
    EXPECT_TRUE(std::isnan(u2f(static_cast<uint32_t>(p))));
    EXPECT_NE(p, 0x7FC00000u);
    EXPECT_NE(p, 0x7FFFFFFFu);
    f32.insert(p);
    uint64_t h = poison_bits_for_trial(DType::float16, t);
    EXPECT_EQ(h & 0x7C00u, 0x7C00u);
    EXPECT_NE(h & 0x3FFu, 0u);
    EXPECT_NE(h, 0x7FFFu);
    f16.insert(h);
    uint64_t b = poison_bits_for_trial(DType::bfloat16, t);
    EXPECT_EQ(b & 0x7F80u, 0x7F80u);
    EXPECT_NE(b & 0x7Fu, 0u);
    EXPECT_NE(b, 0x7FFFu);
    bf16.insert(b);
    i32.insert(poison_bits_for_trial(DType::int32, t));
    i64.insert(poison_bits_for_trial(DType::int64, t));
    EXPECT_EQ(poison_bits_for_trial(DType::boolean, t), 0x5Au);
  }
  EXPECT_GT(f32.size(), 45u);
  EXPECT_GT(f16.size(), 40u);
  EXPECT_GT(bf16.size(), 25u);
  EXPECT_GT(i32.size(), 45u);
  EXPECT_GT(i64.size(), 45u);
}
