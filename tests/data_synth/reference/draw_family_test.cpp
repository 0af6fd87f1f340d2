// The draw family (data_synth/reference/draw_family.h) on the CPU, on sample tasks at their check sizes: each
// variant is deterministic per seed (what lets the GPU worker draw the reference's inputs again
// after the candidate ran), touches only the arguments it may, and the conditioning approves a
// variant only where the task-dtype reference stays close to float64.
#include "data_synth/reference/draw_family.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "data_synth/reference/reference.h"
#include "data_synth/reference/tolerance.h"
#include "tests/env/evaluator/candidates.h"

using namespace kforge;
using kforge::testing::task_path;

namespace {

std::vector<at::Tensor> draw(const TaskSpec& t, uint64_t trial) {
  return draw_arguments(t, DrawKey{t.seed, trial, 7}, at::Device(at::kCPU));
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& a) {
  std::vector<at::Tensor> out;
  for (const auto& x : a) out.push_back(x.clone());
  return out;
}

int changed(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i].equal(b[i]) ? 0 : 1;
  return n;
}

}  // namespace

TEST(RobustDraws, EveryVariantIsTheSameBytesForTheSameSeedAndOthersForAnother) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  auto plain = draw(t, 1);
  for (DrawVariant v : kRobustVariants) {
    ASSERT_TRUE(variant_applies(t, v)) << variant_name(v);
    auto a = clones(plain), b = clones(plain);
    apply_variant(t, v, 42, a);
    apply_variant(t, v, 42, b);
    EXPECT_EQ(changed(a, b), 0) << variant_name(v) << ": not deterministic";
    EXPECT_GT(changed(plain, a), 0) << variant_name(v) << ": changed nothing";
    int differ = 0;  // scaled has 24 outcomes here (3 arguments x 8 exponents): some seeds coincide
    for (uint64_t seed = 43; seed < 51; ++seed) {
      auto c = clones(plain);
      apply_variant(t, v, seed, c);
      differ += changed(a, c) > 0 ? 1 : 0;
    }
    if (v != DrawVariant::shifted) {
      EXPECT_GE(differ, 4) << variant_name(v) << ": the seed hardly matters";
    }
  }
}

TEST(RobustDraws, ScaledMovesExactlyOneArgumentUpByAPowerOfTwo) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  auto plain = draw(t, 2);
  std::set<int> moved_args;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    auto a = clones(plain);
    apply_variant(t, DrawVariant::scaled, seed, a);
    ASSERT_EQ(changed(plain, a), 1) << "seed " << seed;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].equal(plain[i])) continue;
      moved_args.insert(static_cast<int>(i));
      at::Tensor nz = plain[i].ne(0);
      double ratio = (a[i].masked_select(nz) / plain[i].masked_select(nz)).mean().item<double>();
      EXPECT_TRUE(ratio == 2 || ratio == 4 || ratio == 8 || ratio == 16 || ratio == 32 || ratio == 64 || ratio == 128 || ratio == 256)
          << ratio;
    }
  }
  EXPECT_EQ(moved_args.size(), plain.size()) << "every argument is moved by some seed";
}

TEST(RobustDraws, OutliersMoveAbout1In256ElementsAtPlacesNoWindowPredicts) {
  TaskSpec t = load_task(task_path("softmax_rows")).at_check_dims();
  // A tensor larger than the check dims (a member reads its shape from the tensor).
  at::manual_seed(5);
  std::vector<at::Tensor> plain{at::randn({256, 1024})};
  const int64_t n = plain[0].numel();
  const int64_t m = n / 256;
  int64_t windows_without = 0, windows = 0;
  for (uint64_t seed = 9; seed < 13; ++seed) {
    auto a = clones(plain);
    apply_variant(t, DrawVariant::outliers, seed, a);
    at::Tensor moved_mask = a[0].ne(plain[0]).flatten();
    const int64_t moved = moved_mask.sum().item<int64_t>();
    // each element moves with probability m / n: a binomial count, within 5 standard deviations
    EXPECT_NEAR(static_cast<double>(moved), static_cast<double>(m), 5 * std::sqrt(static_cast<double>(m)));
    // each at least 8 spreads (std 1) away and at most 128
    at::Tensor d = (a[0] - plain[0]).abs().masked_select(a[0].ne(plain[0]));
    EXPECT_GE(d.min().item<double>(), 8.0 - 1e-3);
    EXPECT_LE(d.max().item<double>(), 128.0 + 1e-3);
    // Uniform places: about e^-1 of the 256-element windows hold none (a window test finds nothing).
    at::Tensor per_window = moved_mask.view({-1, 256}).sum(1);
    windows_without += per_window.eq(0).sum().item<int64_t>();
    windows += per_window.numel();
  }
  const double share = static_cast<double>(windows_without) / static_cast<double>(windows);
  EXPECT_GT(share, 0.3) << "outliers must not fall one per window";
  EXPECT_LT(share, 0.45);
}

TEST(RobustDraws, RowChannelAndSignMembersScaleWholeSlices) {
  TaskSpec t = load_task(task_path("softmax_rows")).at_check_dims();
  auto plain = draw(t, 4);
  const int64_t rows = plain[0].size(0), cols = plain[0].size(1);
  auto r = clones(plain), c = clones(plain), s = clones(plain);
  apply_variant(t, DrawVariant::row_scaled, 3, r);
  apply_variant(t, DrawVariant::channel_scaled, 3, c);
  apply_variant(t, DrawVariant::sign_flip, 3, s);
  at::Tensor nz = plain[0].abs().gt(1e-3);
  at::Tensor rr = (r[0] / plain[0]).where(nz, at::full({}, std::nan(""), plain[0].options()));
  at::Tensor cr = (c[0] / plain[0]).where(nz, at::full({}, std::nan(""), plain[0].options()));
  at::Tensor sr = (s[0] / plain[0]).where(nz, at::full({}, std::nan(""), plain[0].options()));
  // one factor per row (row_scaled, sign_flip) or per column (channel_scaled), powers of two in
  // [2^-8, 2^8] or +-1; and the factors differ between rows / columns
  at::Tensor row_f = std::get<0>(at::nanmedian(rr, 1)), col_f = std::get<0>(at::nanmedian(cr, 0)),
             sign_f = std::get<0>(at::nanmedian(sr, 1));
  EXPECT_TRUE(at::allclose(rr, row_f.unsqueeze(1).expand({rows, cols}), 1e-6, 0, true) || rr.isnan().any().item<bool>());
  EXPECT_LE(row_f.abs().max().item<double>(), 256.0);
  EXPECT_GE(row_f.abs().min().item<double>(), 1.0 / 256);
  EXPECT_GT(at::log2(row_f).max().item<double>() - at::log2(row_f).min().item<double>(), 8.0) << "row scales span orders of magnitude";
  EXPECT_GT(at::log2(col_f).max().item<double>() - at::log2(col_f).min().item<double>(), 8.0);
  EXPECT_TRUE(sign_f.abs().eq(1).all().item<bool>());
  EXPECT_TRUE(sign_f.eq(1).any().item<bool>() && sign_f.eq(-1).any().item<bool>());
}

TEST(RobustDraws, ConstantAndIntegerArgumentsAreNeverTouched) {
  for (const char* name : {"cumsum_max_sub", "conv_bn_relu", "attention_fp16", "layernorm_gelu_bf16"}) {
    TaskSpec t = load_task(task_path(name)).at_check_dims();
    auto plain = draw(t, 4);
    for (DrawVariant v : kRobustVariants) {
      if (!variant_applies(t, v)) continue;
      auto a = clones(plain);
      apply_variant(t, v, 5, a);
      for (size_t i = 0; i < a.size(); ++i) {
        const TaskArgument& arg = t.arguments[i];
        bool may = dtype_is_float(arg.decl.meta.dtype) && (arg.draw.dist == DrawDist::normal || arg.draw.dist == DrawDist::uniform);
        if (!may) {
          EXPECT_TRUE(a[i].equal(plain[i])) << name << " " << arg.decl.name << " " << variant_name(v);
        }
      }
    }
  }
}

TEST(RobustDraws, ConditioningApprovesWellConditionedVariantsWithTheirSeeds) {
  TaskSpec t = load_task(task_path("softmax_rows")).at_check_dims();
  TaskConditions c = condition_variants(t, draw(t, 5), 11, 0.5);
  EXPECT_LT(c.plain_ratio, 0.5);
  ASSERT_EQ(c.variants.size(), 7u);
  for (const auto& v : c.variants) {
    EXPECT_TRUE(v.usable) << variant_name(v.variant) << ": " << v.reason;
    EXPECT_FALSE(v.seeds.empty());
    EXPECT_LE(v.worst_ratio, 0.5);
  }
}

TEST(RobustDraws, ConditioningRefusesVariantsTheReferenceCannotPass) {
  // A tolerance far below float32's rounding: the reference itself leaves it against float64,
  // on the plain draw too (so the bound is 1 tolerance), and no variant is approved.
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  t.tolerance.atol = t.tolerance.rtol = 1e-12;
  TaskConditions c = condition_variants(t, draw(t, 6), 12, 0.5);
  EXPECT_GT(c.plain_ratio, 1.0);
  for (const auto& v : c.variants) {
    EXPECT_FALSE(v.usable) << variant_name(v.variant);
    EXPECT_TRUE(v.seeds.empty());
    EXPECT_NE(v.reason.find("of the tolerance"), std::string::npos) << v.reason;
  }
}

// An imported task's TorchScript reference runs on the float64 copies the conditioning makes, so
// its variants are conditioned as a graph task's are (relu and linear+relu are exact or close).
TEST(RobustDraws, ConditioningWorksOnImportedTasks) {
  TaskSpec t = load_task(std::string(KFORGE_IMPORTED_FIXTURE_DIR) + "/tasks/kb_l2_linear_relu.yaml");
  ASSERT_TRUE(t.imported());
  TaskConditions c = condition_variants(t, draw(t, 1), 99, 0.5);
  ASSERT_FALSE(c.variants.empty());
  int usable = 0;
  for (const auto& v : c.variants) {
    EXPECT_EQ(v.reason.find("no float64 reference"), std::string::npos) << variant_name(v.variant) << ": " << v.reason;
    usable += v.usable ? 1 : 0;
  }
  EXPECT_GT(usable, 0);
}

// scaled's conditioning takes, per argument, the smallest power of two under which the outputs'
// scale reaches 16 x atol / rtol, else the largest the reference is well-conditioned under: softmax
// of rows is exact under any scale and its outputs never grow, so its one argument moves by 2^8.
TEST(RobustDraws, ScaledTakesTheLargestWellConditionedPowerWhenOutputsNeverGrow) {
  TaskSpec t = load_task(task_path("softmax_rows")).at_check_dims();
  auto plain = draw(t, 7);
  TaskConditions c = condition_variants(t, plain, 13, 0.5);
  const VariantCondition* scaled = nullptr;
  for (const auto& v : c.variants)
    if (v.variant == DrawVariant::scaled) scaled = &v;
  ASSERT_NE(scaled, nullptr);
  ASSERT_EQ(scaled->seeds.size(), 1u);
  auto a = clones(plain);
  apply_variant(t, DrawVariant::scaled, scaled->seeds[0], a);
  at::Tensor nz = plain[0].ne(0);
  EXPECT_DOUBLE_EQ((a[0].masked_select(nz) / plain[0].masked_select(nz)).mean().item<double>(), 256.0);
}

// scaled is picked at the edge: in a float32 task every approved power keeps the reference within
// half the bound (an honest kernel's accumulated rounding adds about the reference's again); in a
// 16-bit task within the bound itself.
TEST(RobustDraws, ScaledKeepsAFloat32ReferenceWithinHalfTheBound) {
  auto ratio = [](const TaskSpec& t, const std::vector<at::Tensor>& args) {
    std::vector<at::Tensor> args64;
    for (const auto& a : args) args64.push_back(a.is_floating_point() ? a.to(at::kDouble) : a);
    std::vector<at::Tensor> r = run_reference(t, args), r64 = run_reference(t, args64);
    double worst = 0;
    for (size_t o = 0; o < r.size(); ++o)
      worst = std::max(worst, tolerance_ratio(r[o].to(at::kDouble), r64[o], t.tolerance).max().item<double>());
    return worst;
  };
  for (const char* name : {"groupnorm_silu", "gated_linear", "layernorm_gelu_bf16"}) {
    TaskSpec t = load_task(task_path(name)).at_check_dims();
    auto plain = draw(t, 3);
    const double margin = 0.5;
    TaskConditions c = condition_variants(t, plain, 21, margin);
    const double bound = std::min(1.0, std::max(margin, c.plain_ratio));
    const double limit = t.dtype == DType::float32 ? bound / 2 : bound;
    for (const auto& v : c.variants) {
      if (v.variant != DrawVariant::scaled) continue;
      EXPECT_FALSE(v.seeds.empty()) << name;
      for (uint64_t s : v.seeds) {
        auto a = clones(plain);
        apply_variant(t, DrawVariant::scaled, s, a);
        EXPECT_LE(ratio(t, a), limit) << name << " seed " << s;
      }
    }
  }
}

// Where the outputs grow with an argument (groupnorm_silu's gamma and beta, gated_linear's inputs),
// scaled moves it by the smallest power of two that brings the outputs' scale to 16 x atol / rtol
// (the relative tolerance governs), not further: one step less stays below that scale.
TEST(RobustDraws, ScaledStopsAtThePowerWhereTheRelativeToleranceGoverns) {
  auto rms = [](const TaskSpec& t, const std::vector<at::Tensor>& args) {
    double r = 0;
    for (const at::Tensor& o : run_reference(t, args)) r = std::max(r, o.to(at::kDouble).square().mean().sqrt().item<double>());
    return r;
  };
  int stopped_early = 0;
  for (const char* name : {"groupnorm_silu", "gated_linear"}) {
    TaskSpec t = load_task(task_path(name)).at_check_dims();
    const double target = 16 * t.tolerance.atol / t.tolerance.rtol;
    auto plain = draw(t, 4);
    TaskConditions c = condition_variants(t, plain, 31, 0.5);
    for (const auto& v : c.variants) {
      if (v.variant != DrawVariant::scaled) continue;
      ASSERT_FALSE(v.seeds.empty()) << name;
      for (uint64_t s : v.seeds) {
        auto a = clones(plain);
        apply_variant(t, DrawVariant::scaled, s, a);
        size_t moved = a.size();
        double power = 1;
        for (size_t i = 0; i < a.size(); ++i) {
          at::Tensor nz = plain[i].ne(0);
          double f = (a[i].masked_select(nz) / plain[i].masked_select(nz)).mean().item<double>();
          if (f != 1) moved = i, power = f;
        }
        ASSERT_LT(moved, a.size()) << name << " seed " << s;
        if (power == 256) continue;  // the largest: nothing to say about the scale it reached
        EXPECT_GE(rms(t, a), target) << name << " argument " << moved << " x" << power;
        if (power > 2) {
          auto less = clones(plain);
          less[moved].mul_(power == 4 ? 2 : power / 4);
          EXPECT_LT(rms(t, less), target) << name << " argument " << moved << " x" << power;
          ++stopped_early;
        }
      }
    }
  }
  EXPECT_GT(stopped_early, 0);
}

// The conditioning's measure (max_tolerance_ratio, tolerance.h): the largest tolerance_ratio, the
// same number as the rule's own over random outputs in each float dtype; a non-finite value named by
// its side, the ratio before its chunk kept; 0/0 under atol 0 counting as none of the tolerance.
TEST(RobustDraws, TheConditioningsRatioIsTheRulesLargestAndNamesANonFiniteSide) {
  const Tolerance tol{1e-3, 1e-2};
  at::manual_seed(5);
  const at::Tensor ref64 = at::randn({4099}, at::kDouble);
  for (at::ScalarType dt : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const at::Tensor out = (ref64 + 1e-3 * at::randn({4099}, at::kDouble)).to(dt);
    std::string reason;
    double sumsq = 0;
    const double m = max_tolerance_ratio(out, ref64, tol, reason, &sumsq);
    EXPECT_TRUE(reason.empty()) << reason;
    EXPECT_DOUBLE_EQ(m, tolerance_ratio(out, ref64, tol).max().item<double>()) << dt;
    EXPECT_NEAR(sumsq, ref64.square().sum().item<double>(), 1e-9 * sumsq);
  }
  const at::Tensor out = ref64.to(at::kFloat);
  at::Tensor overflowed = out.clone();
  overflowed[77] = std::numeric_limits<float>::infinity();
  std::string reason;
  max_tolerance_ratio(overflowed, ref64, tol, reason);
  EXPECT_EQ(reason, "the reference overflows in its dtype");
  at::Tensor nan64 = ref64.clone();
  nan64[3] = std::nan("");
  reason.clear();
  max_tolerance_ratio(out, nan64, tol, reason);
  EXPECT_EQ(reason, "the float64 reference has non-finite values");
  // atol 0: the zeros both sides agree on use nothing; one output off zero uses an infinite share
  const at::Tensor zeros = at::zeros({16}, at::kDouble);
  at::Tensor near = zeros.clone();
  near[2] = 0.5;
  at::Tensor off = (near + 1e-3 * near).to(at::kFloat);
  reason.clear();
  EXPECT_NEAR(max_tolerance_ratio(off, near, Tolerance{0, 1e-2}, reason), 0.1, 1e-5);
  EXPECT_TRUE(reason.empty());
  at::Tensor stray = zeros.to(at::kFloat);
  stray[5] = 1e-20f;
  EXPECT_TRUE(std::isinf(max_tolerance_ratio(stray, zeros, Tolerance{0, 1e-2}, reason)));
}

// The worker conditions on its task's own draw made again for every try (no copy held across the
// float64 runs): the same conditions as from a held draw, one draw per reference pair.
TEST(RobustDraws, ConditioningOnADrawMadeAgainDecidesAsOnAHeldOne) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  const TaskConditions held = condition_variants(t, draw(t, 5), 11, 0.5);
  int draws = 0;
  ConditioningCost cost;
  const PlainDraw again = [&] {
    ++draws;
    return draw(t, 5);
  };
  const TaskConditions redrawn = condition_variants(t, again, 11, 0.5, 2, {}, &cost);
  EXPECT_EQ(draws, cost.tries);
  EXPECT_GT(cost.tries, static_cast<int>(redrawn.variants.size()));
  EXPECT_DOUBLE_EQ(redrawn.plain_ratio, held.plain_ratio);
  ASSERT_EQ(redrawn.variants.size(), held.variants.size());
  for (size_t i = 0; i < held.variants.size(); ++i) {
    EXPECT_EQ(redrawn.variants[i].usable, held.variants[i].usable) << variant_name(held.variants[i].variant);
    EXPECT_EQ(redrawn.variants[i].seeds, held.variants[i].seeds) << variant_name(held.variants[i].variant);
    EXPECT_DOUBLE_EQ(redrawn.variants[i].worst_ratio, held.variants[i].worst_ratio) << variant_name(held.variants[i].variant);
  }
}

// Out of device memory, the conditions are unavailable (fail closed) and nothing more is tried:
// on the task's own draw (libtorch's error, or the reference executor's wrapping of it), or on the
// first variant whose every try ran out (every try has the task's footprint).
TEST(RobustDraws, OutOfMemoryMakesTheConditionsUnavailableWithoutTryingFurther) {
  TaskSpec t = load_task(task_path("gated_linear")).at_check_dims();
  int draws = 0;
  int fail_from = 1;  // the draw that runs out first (1: the task's own)
  const PlainDraw running_out = [&] {
    if (++draws >= fail_from) TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate 58.00 GiB");
    return draw(t, 5);
  };
  TaskConditions own = condition_variants(t, running_out, 11, 0.5);
  EXPECT_EQ(own.unavailable.rfind("no float64 reference of the task's own draw", 0), 0u) << own.unavailable;
  EXPECT_TRUE(own.variants.empty());
  EXPECT_EQ(draws, 1);

  const PlainDraw wrapped = [&] {
    ++draws;
    KFORGE_FAIL(runtime, "task x, node 'n1' (layer_norm): libtorch failed: CUDA out of memory. Tried to allocate 19.87 GiB");
    return draw(t, 5);
  };
  draws = 0;
  TaskConditions executor = condition_variants(t, wrapped, 11, 0.5);
  EXPECT_NE(executor.unavailable.find("out of memory"), std::string::npos) << executor.unavailable;
  EXPECT_EQ(draws, 1);

  draws = 0;
  fail_from = 2;  // the task's own draw fits; every member's try runs out
  ConditioningCost cost;
  TaskConditions members = condition_variants(t, running_out, 11, 0.5, 2, {}, &cost);
  ASSERT_EQ(members.variants.size(), 1u) << "the variants after the first that ran out were tried";
  EXPECT_EQ(members.variants[0].variant, DrawVariant::scaled);
  EXPECT_FALSE(members.variants[0].usable);
  EXPECT_EQ(members.unavailable.rfind("scaled: no float64 reference", 0), 0u) << members.unavailable;
  EXPECT_EQ(cost.tries, 1) << "only the task's own draw reached a reference";
  EXPECT_GT(draws, 1);
}
