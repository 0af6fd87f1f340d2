#include "data_synth/task/op_registry.h"

#include <set>

#include <map>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "data_synth/task/op_graph.h"
#include "data_synth/task/task_spec.h"

using namespace kforge;

namespace {

OpCall call_for(const OpDef& op, const OpExample& ex) {
  OpCall c;
  c.op = &op;
  c.id = "y";
  for (size_t i = 0; i < ex.inputs.size(); ++i) c.in.push_back({ex.inputs[i], ex.input_dtype(i)});
  c.attrs = resolve_attrs(op, ex.attrs, {});
  return c;
}

}  // namespace

TEST(OpRegistry, HasAtLeast60OperatorsCoveringEveryCategory) {
  const auto& ops = op_registry().all();
  EXPECT_GE(ops.size(), 60u);
  std::set<OpCategory> cats;
  for (const auto& op : ops) cats.insert(op.category);
  EXPECT_EQ(cats.size(), 11u);
  // The families the synthesizer draws from (issue 7).
  for (const char* required : {"mish",
                               "hardswish",
                               "softplus",
                               "elu",
                               "gt",
                               "where",
                               "amin",
                               "argmax",
                               "prod",
                               "vector_norm",
                               "cumprod",
                               "instance_norm",
                               "einsum",
                               "conv1d",
                               "conv3d",
                               "conv_transpose2d",
                               "max_pool2d",
                               "avg_pool2d",
                               "adaptive_avg_pool2d",
                               "upsample2d",
                               "dropout",
                               "flatten",
                               "embedding",
                               "sdpa",
                               "cross_entropy",
                               "mse_loss",
                               "kl_div",
                               "smooth_l1_loss"})
    EXPECT_NE(op_registry().find(required), nullptr) << required;
  for (const char* required : {"softmax", "logsumexp", "cumsum", "layer_norm", "rms_norm", "group_norm", "batch_norm", "matmul", "linear",
                               "bmm", "conv2d", "transpose", "permute", "reshape", "concat"})
    EXPECT_NE(op_registry().find(required), nullptr) << required;
}

TEST(OpRegistry, EveryOperatorAcceptsItsExampleWithCostAndPython) {
  for (const auto& op : op_registry().all()) {
    SCOPED_TRACE(op.name);
    OpCall c = call_for(op, op.example);
    TensorMeta out = op.infer(c);
    EXPECT_GT(numel(out.shape), 0);
    double flops = op.flops(c, out);
    // Moving data is no arithmetic: layout changes, lookups and the identity cost bytes only.
    if (op.category == OpCategory::layout || op.name == "embedding" || op.name == "dropout")
      EXPECT_EQ(flops, 0);
    else
      EXPECT_GT(flops, 0);
    std::vector<std::string> args;
    for (size_t i = 0; i < c.in.size(); ++i) args.push_back("x" + std::to_string(i));
    EXPECT_FALSE(op.py_expr(c, args, "self.y").empty());
    if (op.params) {
      EXPECT_TRUE(static_cast<bool>(op.py_module)) << "an operator with parameters is rendered as a module";
      for (const auto& p : op.params(c)) p.draw.validate(p.dtype);
    }
  }
}

TEST(OpRegistry, EveryOperatorRefusesItsBadExampleWithAReason) {
  for (const auto& op : op_registry().all()) {
    SCOPED_TRACE(op.name);
    ASSERT_FALSE(op.bad_example.refusal.empty()) << "each operator documents a shape or attribute it refuses";
    try {
      OpCall c = call_for(op, op.bad_example);
      op.infer(c);
      ADD_FAILURE() << "accepted its bad example";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op.bad_example.refusal), std::string::npos) << e.what();
    }
  }
}

TEST(OpRegistry, UnknownOperatorSuggestsTheClosest) {
  try {
    op_registry().get("gleu");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec);
    EXPECT_STREQ(e.what(), "unknown operator 'gleu' (did you mean 'gelu'?)");
  }
}

TEST(OpRegistry, AttributeErrorsNameTheAttribute) {
  const OpDef& linear = op_registry().get("linear");
  auto msg = [&](std::map<std::string, std::string> attrs) {
    try {
      resolve_attrs(linear, attrs, {{"N", 8}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({}).find("needs attribute 'out_features'"), std::string::npos);
  EXPECT_NE(msg({{"out_features", "8"}, {"bias_", "true"}}).find("no attribute 'bias_' (did you mean 'bias'?)"), std::string::npos);
  EXPECT_NE(msg({{"out_features", "8"}, {"bias", "yes"}}).find("expected true or false"), std::string::npos);
  EXPECT_NE(msg({{"out_features", "M"}}).find("unknown dimension 'M'"), std::string::npos);
  Attrs a = resolve_attrs(linear, {{"out_features", "2*N"}}, {{"N", 8}});
  EXPECT_EQ(a.at("out_features").i, 16);
  EXPECT_EQ(a.at("out_features").py, "2*N");
  EXPECT_TRUE(a.at("bias").b);
}

TEST(OpRegistry, ShapeRulesGiveTheRightShapes) {
  auto out = [](const std::string& op, std::vector<Shape> in, std::map<std::string, std::string> attrs) {
    const OpDef& d = op_registry().get(op);
    return call_for(d, {in, attrs, ""}).op->infer(call_for(d, {in, attrs, ""})).shape;
  };
  EXPECT_EQ(out("matmul", {{7, 1, 5, 3}, {4, 3, 2}}, {}), (Shape{7, 4, 5, 2}));
  EXPECT_EQ(out("conv2d", {{2, 4, 17, 9}}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"stride", "2"}, {"padding", "1"}}),
            (Shape{2, 6, 9, 5}));
  EXPECT_EQ(out("sum", {{3, 4, 5}}, {{"dim", "-2"}, {"keepdim", "true"}}), (Shape{3, 1, 5}));
  EXPECT_EQ(out("reshape", {{3, 4, 5}}, {{"shape", "[-1, 10]"}}), (Shape{6, 10}));
  EXPECT_EQ(out("permute", {{3, 4, 5}}, {{"dims", "[2, 0, 1]"}}), (Shape{5, 3, 4}));
  EXPECT_EQ(out("concat", {{3, 4}, {3, 1}}, {{"dim", "-1"}}), (Shape{3, 5}));
  EXPECT_EQ(out("add", {{4, 1, 3}, {5, 1}}, {}), (Shape{4, 5, 3}));
}

TEST(OpRegistry, LinearOwnsWeightAndBiasInStateDictOrder) {
  const OpDef& d = op_registry().get("linear");
  OpCall c = call_for(d, {{{6, 40}}, {{"out_features", "24"}}, ""});
  auto p = d.params(c);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "weight");
  EXPECT_EQ(p[0].shape, (Shape{24, 40}));
  EXPECT_EQ(p[1].name, "bias");
  EXPECT_EQ(p[1].shape, (Shape{24}));
  EXPECT_EQ(d.py_module(c), "nn.Linear(40, 24, bias=True)");
}

// Causal sdpa counts only the (query, key) pairs PyTorch's top-left-aligned mask keeps: query i
// sees min(i + 1, Lk) keys (issue 32); without the mask every pair counts.
TEST(OpRegistry, CausalSdpaCountsOnlyTheUnmaskedPairs) {
  const OpDef& d = op_registry().get("sdpa");
  auto flops = [&](Shape q, Shape k, Shape v, const std::string& causal) {
    OpCall c = call_for(d, {{q, k, v}, {{"is_causal", causal}}, ""});
    return d.flops(c, d.infer(c));
  };
  // B=2, H=3, Dq=8, Dv=5: 2 * 2 * 3 * 13 = 156 flops per pair.
  // Lq=4 <= Lk=6: 1 + 2 + 3 + 4 = 10 pairs (of 24).
  EXPECT_EQ(flops({2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 5}, "true"), 156.0 * 10);
  EXPECT_EQ(flops({2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 5}, "false"), 156.0 * 24);
  // Lq=7 > Lk=3: 1 + 2 + 3 + 3 + 3 + 3 + 3 = 18 pairs (of 21).
  EXPECT_EQ(flops({2, 3, 7, 8}, {2, 3, 3, 8}, {2, 3, 3, 5}, "true"), 156.0 * 18);
  EXPECT_EQ(flops({2, 3, 7, 8}, {2, 3, 3, 8}, {2, 3, 3, 5}, "false"), 156.0 * 21);
  // Square: L (L + 1) / 2 pairs.
  EXPECT_EQ(flops({1, 1, 5, 4}, {1, 1, 5, 4}, {1, 1, 5, 4}, "true"), 2.0 * 8 * 15);
  EXPECT_EQ(flops({1, 1, 5, 4}, {1, 1, 5, 4}, {1, 1, 5, 4}, "false"), 2.0 * 8 * 25);
}

// Convolutions count the FLOPs of the cheapest algorithm the libraries run (issue 32): at stride 1
// and dilation 1, Winograd F(4x4, 3x3) for a 2-D 3x3 kernel (a quarter of the direct count), an FFT
// over 32-wide tiles otherwise, 2 (32 / (33 - k))^nd / k^nd of it, where that is below the direct
// count; strided, dilated and 1x1 convolutions stay direct.
TEST(OpRegistry, ConvolutionsCountTheCheapestAlgorithmsFlops) {
  auto flops = [](const std::string& op, Shape in, std::map<std::string, std::string> attrs) {
    const OpDef& d = op_registry().get(op);
    OpCall c = call_for(d, {{in}, attrs, ""});
    return d.flops(c, d.infer(c));
  };
  // conv2d [2, 4, 10, 10] -> 6 channels, k = 3, padding 1: 2 * (2 * 6 * 10 * 10) * 4 * 9 direct.
  const double direct3 = 2.0 * 2 * 6 * 10 * 10 * 4 * 9;
  EXPECT_DOUBLE_EQ(flops("conv2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"padding", "1"}}), direct3 / 4);
  EXPECT_DOUBLE_EQ(flops("conv2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"padding", "1"}, {"stride", "2"}}),
                   2.0 * 2 * 6 * 5 * 5 * 4 * 9);
  EXPECT_DOUBLE_EQ(flops("conv2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"padding", "2"}, {"dilation", "2"}}),
                   direct3);
  EXPECT_DOUBLE_EQ(flops("conv2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "1"}}), 2.0 * 2 * 6 * 10 * 10 * 4);
  // k = 7, padding 3: the FFT's 2 (32 / 26)^2 / 49 of the direct count.
  const double direct7 = 2.0 * 2 * 6 * 10 * 10 * 4 * 49;
  EXPECT_DOUBLE_EQ(flops("conv2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "7"}, {"padding", "3"}}),
                   direct7 * 2 * (32.0 / 26) * (32.0 / 26) / 49);
  // 1-D, k = 3: the FFT's 2 (32 / 30) / 3 = 0.711 of it; k = 2 in 1-D stays direct (the FFT's share is above 1).
  EXPECT_DOUBLE_EQ(flops("conv1d", {2, 4, 16}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"padding", "1"}}),
                   2.0 * 2 * 6 * 16 * 4 * 3 * (2 * (32.0 / 30) / 3));
  EXPECT_DOUBLE_EQ(flops("conv1d", {2, 4, 16}, {{"out_channels", "6"}, {"kernel_size", "2"}}), 2.0 * 2 * 6 * 15 * 4 * 2);
  // Transposed at stride 1 is a convolution: every input element meets every tap, at the FFT's share.
  EXPECT_DOUBLE_EQ(flops("conv_transpose2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "5"}}),
                   2.0 * 2 * 4 * 10 * 10 * 6 * 25 * (2 * (32.0 / 28) * (32.0 / 28) / 25));
  EXPECT_DOUBLE_EQ(flops("conv_transpose2d", {2, 4, 10, 10}, {{"out_channels", "6"}, {"kernel_size", "5"}, {"stride", "2"}}),
                   2.0 * 2 * 4 * 10 * 10 * 6 * 25);
}
