// The C++ reference on the CPU: every operator executes, draws become the tensors they promise,
// and every sample computes a deterministic function that depends on its inputs.
#include "data_synth/reference/reference.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

#include "configs/error.h"
#include "data_synth/reference/op_exec.h"

using namespace kforge;
using kforge::testing::source_dir;
namespace fs = std::filesystem;

namespace {

std::vector<TaskSpec> samples_at_check_dims() {
  std::vector<TaskSpec> out;
  for (const auto& e : fs::directory_iterator(source_dir() + "/datasets/samples"))
    if (e.path().extension() == ".yaml") out.push_back(load_task(e.path().string()).at_check_dims());
  return out;
}

}  // namespace

TEST(Reference, EveryRegisteredOperatorHasAnExecutor) {
  for (const auto& op : op_registry().all()) EXPECT_TRUE(has_executor(op.name)) << op.name;
}

TEST(Reference, EveryOperatorsOutputHasTheShapeItsRuleInfers) {
  for (const auto& op : op_registry().all()) {
    SCOPED_TRACE(op.name);
    for (DType dt : {DType::float32, DType::bfloat16}) {
      TaskSpec t = make_op_example_task(op, dt);
      auto args = draw_arguments(t, {t.seed, 0, 0}, at::kCPU);
      auto out = run_reference(t, args);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(std::vector<int64_t>(out[0].sizes().begin(), out[0].sizes().end()), t.outputs[0].meta.shape);
      EXPECT_EQ(out[0].scalar_type(), to_scalar_type(t.outputs[0].meta.dtype));
      EXPECT_TRUE(at::isfinite(out[0].to(at::kFloat)).all().item<bool>());
    }
  }
}

TEST(Reference, DrawnTensorsMatchTheRawDrawBytes) {
  for (DType dt : {DType::float32, DType::float16, DType::bfloat16}) {
    TensorMeta m{{3, 1000}, dt};
    at::Tensor t = draw_tensor(Draw::normal(0.5, 2), m, 77, at::kCPU);
    std::vector<uint8_t> raw(3000 * dtype_size(dt));
    fill_draw(Draw::normal(0.5, 2), dt, 77, 3000, raw.data());
    EXPECT_EQ(0, std::memcmp(t.data_ptr(), raw.data(), raw.size())) << dtype_name(dt);
  }
}

TEST(Reference, OurHalfAndBFloat16RoundingAgreesWithLibtorch) {
  // The draws round float32 to 16 bits themselves; libtorch's conversion must give the same bits.
  at::Tensor f = draw_tensor(Draw::normal(0, 1000), {{1 << 16}, DType::float32}, 5, at::kCPU);
  at::Tensor tiny = draw_tensor(Draw::normal(0, 1e-6), {{1 << 16}, DType::float32}, 6, at::kCPU);
  for (const at::Tensor& src : {f, tiny}) {
    const float* p = src.data_ptr<float>();
    at::Tensor h = src.to(at::kHalf), b = src.to(at::kBFloat16);
    const uint16_t* hp = static_cast<const uint16_t*>(h.data_ptr());
    const uint16_t* bp = static_cast<const uint16_t*>(b.data_ptr());
    for (int64_t i = 0; i < src.numel(); ++i) {
      ASSERT_EQ(float_to_half_bits(p[i]), hp[i]) << p[i];
      ASSERT_EQ(float_to_bfloat16_bits(p[i]), bp[i]) << p[i];
    }
  }
}

TEST(Reference, SamplesAreDeterministicAndVaryWithTheirInputs) {
  apply_reference_precision();
  for (const TaskSpec& t : samples_at_check_dims()) {
    SCOPED_TRACE(t.id);
    auto a0 = draw_arguments(t, {t.seed, 0, 0}, at::kCPU);
    auto a0b = draw_arguments(t, {t.seed, 0, 0}, at::kCPU);
    auto a1 = draw_arguments(t, {t.seed, 1, 0}, at::kCPU);
    auto o0 = run_reference(t, a0), o0b = run_reference(t, a0b), o1 = run_reference(t, a1);
    for (size_t i = 0; i < o0.size(); ++i) {
      EXPECT_TRUE(at::equal(o0[i], o0b[i])) << "same draws, same outputs";
      at::Tensor x = o0[i].to(at::kDouble), y = o1[i].to(at::kDouble);
      EXPECT_TRUE(at::isfinite(x).all().item<bool>());
      // Another trial's inputs change the output well beyond the tolerance ...
      double diff = (x - y).abs().max().item<double>();
      EXPECT_GT(diff, 10 * (t.tolerance.atol + t.tolerance.rtol * y.abs().max().item<double>()));
      // ... and an all-zero answer would fail the tolerance check.
      at::Tensor allowed = t.tolerance.atol + t.tolerance.rtol * x.abs();
      EXPECT_GT((x.abs() > allowed).to(at::kDouble).mean().item<double>(), 0.25)
          << "a good share of the outputs must stand clear of the tolerance floor";
    }
  }
}

TEST(Reference, WrongArgumentCountIsAnInternalError) {
  TaskSpec t = make_op_example_task(op_registry().get("relu"));
  EXPECT_THROW(run_reference(t, {}), Error);
}

// The conditioning's float64 runs free each intermediate after its last use (Intermediates): the
// outputs are the same bytes as when every intermediate is kept, on every sample; a value is freed
// after the last node that reads it, an output is kept, and a value nothing reads goes at once.
TEST(Reference, FreeingIntermediatesAfterTheirLastUseChangesNoOutput) {
  apply_reference_precision();
  int chains = 0;
  for (const TaskSpec& t : samples_at_check_dims()) {
    SCOPED_TRACE(t.id);
    if (t.imported()) continue;
    const ResolvedGraph& g = t.resolved;
    const std::vector<size_t> last = last_uses(g);
    ASSERT_EQ(last.size(), g.nodes.size());
    for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
      EXPECT_GE(last[ni], ni);
      for (size_t later = ni + 1; later < g.nodes.size(); ++later)
        for (const auto& r : g.nodes[later].inputs)
          if (r.is_node && static_cast<size_t>(r.index) == ni) EXPECT_GE(last[ni], later) << "freed before a node that reads it";
    }
    for (const auto& r : g.outputs)
      if (r.is_node) EXPECT_EQ(last[static_cast<size_t>(r.index)], g.nodes.size()) << "an output freed";
    for (size_t ni = 0; ni + 1 < g.nodes.size(); ++ni) chains += last[ni] < g.nodes.size() ? 1 : 0;
    auto args = draw_arguments(t, {t.seed, 3, 0}, at::kCPU);
    auto kept = run_reference(t, args), freed = run_reference(t, args, Intermediates::free_after_last_use);
    ASSERT_EQ(kept.size(), freed.size());
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_TRUE(at::equal(kept[i], freed[i])) << "output " << i;
  }
  EXPECT_GT(chains, 0) << "no sample has an intermediate to free";
}
