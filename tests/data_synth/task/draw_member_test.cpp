// The draw family's element code on the host (data_synth/task/draw_member.h): the quotient its
// device form computes by a product is the exact one, float16 and bfloat16 values are widened
// exactly, each member does what its parameters say element by element, and a member on an
// argument that is not a float is refused.
#include "data_synth/task/draw_member.h"

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "data_synth/task/draw.h"

using namespace kforge;

namespace {

MemberParams params(int kind, unsigned long long last, unsigned long long channels, unsigned long long inner) {
  return member_layout(kind, 0xabcdef12345ULL + static_cast<unsigned long long>(kind), last, channels, inner);
}

std::vector<float> normal(int64_t n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n));
  fill_draw(Draw::normal(0, 1), DType::float32, stream, n, v.data());
  return v;
}

}  // namespace

TEST(DrawMember, TheQuotientByAProductIsTheExactOne) {
  std::mt19937_64 gen(7);
  const unsigned long long divisors[] = {1,
                                         2,
                                         3,
                                         7,
                                         509,
                                         1001,
                                         4096,
                                         65537,
                                         1000003,
                                         6700417,
                                         (1ULL << 31) - 1,
                                         (1ULL << 31) + 11,
                                         (1ULL << 32) - 1,
                                         1ULL << 32,
                                         (1ULL << 40) + 15};
  for (unsigned long long d : divisors) {
    for (int k = 0; k < 30000; ++k) {
      // numerators under 2^32 (the magic numbers) and up to 2^52 (the products), and the multiples
      // of d and their neighbours, where either errs first
      const unsigned long long n = k % 3 == 0 ? gen() >> 32 : k % 3 == 1 ? gen() >> 12 : (gen() >> 40) * d + (k % 5) - 2;
      ASSERT_EQ(n / d, exact_quotient(n, d)) << n << " / " << d;
    }
    for (unsigned long long n : {0ULL, d - 1, d, (1ULL << 32) - 1, 1ULL << 32}) ASSERT_EQ(n / d, exact_quotient(n, d)) << n << " / " << d;
  }
}

TEST(DrawMember, EveryFloat16AndBfloat16IsWidenedExactly) {
  // Scaled by 2^0, a value is widened, multiplied by 1 and narrowed: every non-NaN comes back as it was.
  MemberParams m = params(1, 1, 1, 1);
  m.exponent = 0;
  for (DType t : {DType::float16, DType::bfloat16}) {
    std::vector<uint16_t> bits(65536), out(65536);
    for (uint32_t b = 0; b < 65536; ++b) bits[b] = static_cast<uint16_t>(b);
    out = bits;
    apply_member_elements(m, t, out.data(), 0, 65536);
    int64_t changed = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      const bool nan = t == DType::float16 ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff) : (b & 0x7f80) == 0x7f80 && (b & 0x7f);
      if (!nan) changed += out[b] != bits[b];
    }
    EXPECT_EQ(0, changed) << dtype_name(t);
  }
}

TEST(DrawMember, EachMemberMovesElementsAsItsParametersSay) {
  const int64_t rows = 40, channels = 20, last = 64, n = rows * last;  // rows of 64; [8, 20, 16] for channels
  const std::vector<float> v = normal(n, 3);
  auto moved = [&](const MemberParams& m) {
    std::vector<float> out = v;
    apply_member_elements(m, DType::float32, out.data(), 0, n);
    return out;
  };
  {  // scaled: every element times 2^exponent
    MemberParams m = params(1, last, 1, 1);
    m.exponent = 5;
    auto out = moved(m);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i] * 32.0f, out[i]);
  }
  {  // shifted: every element plus add
    MemberParams m = params(2, last, 1, 1);
    m.add = -3.0f;
    auto out = moved(m);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i] + -3.0f, out[i]);
  }
  {  // row_scaled and sign_flip: one factor per row of `last`, powers of two in [2^-8, 2^8] or -1
    for (int kind : {3, 7}) {
      auto out = moved(params(kind, last, 1, 1));
      std::vector<float> factors;
      for (int64_t r = 0; r < rows; ++r) {
        const float f = out[r * last] / v[r * last];
        factors.push_back(f);
        for (int64_t j = 0; j < last; ++j) ASSERT_EQ(v[r * last + j] * f, out[r * last + j]) << "kind " << kind << " row " << r;
        const int e = std::ilogb(f);
        if (kind == 3) EXPECT_TRUE(std::fabs(f) == std::ldexp(1.0f, e) && e >= -8 && e <= 8 && f > 0) << f;
        if (kind == 7) EXPECT_EQ(1.0f, std::fabs(f));
      }
      // rows differ: many powers of two (row_scaled), both signs (sign_flip)
      EXPECT_GE(std::set<float>(factors.begin(), factors.end()).size(), kind == 3 ? 8u : 2u) << "kind " << kind;
    }
  }
  {  // channel_scaled: one factor per slice of dimension 1 of [8, 20, 16]
    const int64_t inner = 16, outer = n / (channels * inner);
    auto out = moved(params(4, last, channels, inner));
    for (int64_t c = 0; c < channels; ++c) {
      const float f = out[c * inner] / v[c * inner];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t i = (o * channels + c) * inner + j;
          ASSERT_EQ(v[i] * f, out[i]) << "channel " << c;
        }
    }
  }
  {  // element_scaled: each element its own power of two in [2^-6, 2^6]
    auto out = moved(params(5, last, 1, 1));
    std::set<int> exponents;
    for (int64_t i = 0; i < n; ++i) {
      const float f = out[i] / v[i];
      exponents.insert(std::ilogb(f));
      ASSERT_EQ(std::ldexp(1.0f, std::ilogb(f)), f);
    }
    EXPECT_EQ(13u, exponents.size());
  }
  {  // outliers: the threshold's share moves, by 8 to 128 times add's spread, both ways
    MemberParams m = params(6, last, 1, 1);
    m.threshold = outlier_threshold(n / 8, n);
    m.add = 8.0f;
    m.signed_domain = 1;
    auto out = moved(m);
    int64_t count = 0, up = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (out[i] == v[i]) continue;
      ++count;
      const float d = std::fabs(out[i] - v[i]);
      EXPECT_GE(d, 8.0f - 1e-3f);
      EXPECT_LE(d, 128.0f + 1e-3f);
      up += out[i] > v[i];
    }
    EXPECT_NEAR(static_cast<double>(count), n / 8.0, 5 * std::sqrt(n / 8.0));
    EXPECT_GT(up, 0);
    EXPECT_LT(up, count);
    EXPECT_EQ(1ULL << 32, outlier_threshold(16, 10)) << "every element of a tiny argument";
    EXPECT_EQ(0ULL, outlier_threshold(0, 10));
  }
}

TEST(DrawMember, AMemberOnAnIntegerArgumentIsRefusedAndKindZeroChangesNothing) {
  std::vector<int32_t> ints(16, 3);
  EXPECT_THROW(apply_member_elements(params(5, 1, 1, 1), DType::int32, ints.data(), 0, 16), Error);
  std::vector<float> v = normal(16, 1), out = v;
  apply_member_elements(params(0, 1, 1, 1), DType::float32, out.data(), 0, 16);
  EXPECT_EQ(0, std::memcmp(v.data(), out.data(), 16 * sizeof(float)));
}
