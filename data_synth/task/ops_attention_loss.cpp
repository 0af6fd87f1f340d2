// Scaled dot-product attention and the common losses (scalar results).
#include "data_synth/task/op_registry.h"

#include <algorithm>

namespace kforge {

namespace {

const AttrSpec kReduction{"reduction", AttrKind::text, "mean", "mean or sum over the elements", {"mean", "sum"}};

void same_float_dtypes(const OpCall& c) {
  require_float(c);
  for (const auto& t : c.in)
    if (t.dtype != c.dtype()) refuse("inputs have different dtypes");
}

// A loss of two same-shaped tensors reduced to a scalar.
OpDef pair_loss(const std::string& name, const std::string& summary, double flops_per_element) {
  OpDef d;
  d.name = name;
  d.category = OpCategory::loss;
  d.summary = summary;
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {kReduction};
  d.infer = [](const OpCall& c) {
    same_float_dtypes(c);
    if (c.shape(0) != c.shape(1))
      refuse("prediction " + shape_str(c.shape(0)) + " and target " + shape_str(c.shape(1)) + " differ in shape");
    return TensorMeta{{}, c.dtype()};
  };
  d.flops = [flops_per_element](const OpCall& c, const TensorMeta&) { return flops_per_element * numel(c.shape()); };
  d.example = {{{6, 17}, {6, 17}}, {}, ""};
  d.bad_example = {{{6, 17}, {6, 16}}, {}, "differ in shape"};
  return d;
}

}  // namespace

void register_attention_loss_ops(OpRegistry& r) {
  {
    OpDef d;
    d.name = "sdpa";
    d.category = OpCategory::attention;
    d.summary = "softmax(q k^T / sqrt(d)) v over [B, H, L, D] (F.scaled_dot_product_attention)";
    d.min_inputs = d.max_inputs = 3;
    d.attrs = {{"is_causal", AttrKind::boolean, "false", "mask keys after each query"}};
    d.infer = [](const OpCall& c) {
      same_float_dtypes(c);
      const Shape &q = c.shape(0), &k = c.shape(1), &v = c.shape(2);
      if (q.size() != 4 || k.size() != 4 || v.size() != 4)
        refuse("sdpa takes q, k, v of shape [B, H, L, D], got " + shape_str(q) + ", " + shape_str(k) + ", " + shape_str(v));
      if (q[0] != k[0] || q[1] != k[1] || k[0] != v[0] || k[1] != v[1]) refuse("q, k and v must share batch and heads");
      if (q[3] != k[3]) refuse("q and k head dims differ: " + std::to_string(q[3]) + " vs " + std::to_string(k[3]));
      if (k[2] != v[2]) refuse("k and v lengths differ: " + std::to_string(k[2]) + " vs " + std::to_string(v[2]));
      return TensorMeta{{q[0], q[1], q[2], v[3]}, c.dtype()};
    };
    // q k^T and the weighted sum of v: 2 (Dq + Dv) flops per (query, key) pair it computes. Causal
    // attention (PyTorch's top-left-aligned mask, torch.ones(Lq, Lk).tril()) lets query i see
    // min(i + 1, Lk) keys, not all Lk (issue 32).
    d.flops = [](const OpCall& c, const TensorMeta&) {
      const Shape &q = c.shape(0), &k = c.shape(1), &v = c.shape(2);
      const double lq = static_cast<double>(q[2]), lk = static_cast<double>(k[2]);
      double pairs = lq * lk;
      if (c.b("is_causal")) {
        const double tri = std::min(lq, lk);  // rows 0 .. tri-1 see i + 1 keys, the rest all Lk
        pairs = tri * (tri + 1) / 2 + (lq - tri) * lk;
      }
      return 2.0 * q[0] * q[1] * pairs * (q[3] + v[3]);
    };
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      return "F.scaled_dot_product_attention(" + a[0] + ", " + a[1] + ", " + a[2] + ", is_causal=" + c.attr("is_causal").py + ")";
    };
    d.example = {{{2, 3, 7, 8}, {2, 3, 9, 8}, {2, 3, 9, 5}}, {{"is_causal", "true"}}, ""};
    d.bad_example = {{{2, 3, 7, 8}, {2, 3, 9, 6}, {2, 3, 9, 5}}, {}, "head dims differ"};
    r.add(d);
  }
  {
    OpDef d;
    d.name = "cross_entropy";
    d.category = OpCategory::loss;
    d.summary = "cross-entropy of logits [N, C] against class indices [N] (F.cross_entropy)";
    d.min_inputs = d.max_inputs = 2;
    d.attrs = {kReduction};
    d.infer = [](const OpCall& c) {
      if (!dtype_is_float(c.in[0].dtype)) refuse("cross_entropy's logits must be floating");
      if (c.in[1].dtype != DType::int64) refuse(std::string("cross_entropy's targets must be int64, got ") + dtype_name(c.in[1].dtype));
      const Shape &x = c.shape(0), &t = c.shape(1);
      if (x.size() != 2 || t.size() != 1 || x[0] != t[0])
        refuse("cross_entropy takes logits [N, C] and targets [N], got " + shape_str(x) + " and " + shape_str(t));
      return TensorMeta{{}, c.in[0].dtype};
    };
    d.input_draw = [](const OpCall& c, size_t i) -> std::optional<Draw> {
      if (i == 1) return Draw::randint(0, c.shape(0)[1]);
      return std::nullopt;
    };
    d.flops = [](const OpCall& c, const TensorMeta&) { return 4.0 * numel(c.shape(0)); };
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      return "F.cross_entropy(" + a[0] + ", " + a[1] + ", reduction=" + c.attr("reduction").py + ")";
    };
    d.example = {{{6, 10}, {6}}, {}, ""};
    d.example.input_dtypes = {DType::float32, DType::int64};
    d.bad_example = {{{6, 10}, {5}}, {}, "takes logits [N, C] and targets [N]"};
    d.bad_example.input_dtypes = {DType::float32, DType::int64};
    r.add(d);
  }
  {
    OpDef d = pair_loss("mse_loss", "mean (or sum) of squared differences (F.mse_loss)", 3);
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      return "F.mse_loss(" + a[0] + ", " + a[1] + ", reduction=" + c.attr("reduction").py + ")";
    };
    r.add(d);
  }
  {
    OpDef d = pair_loss("smooth_l1_loss", "Huber-like loss with threshold beta (F.smooth_l1_loss)", 4);
    d.attrs.push_back({"beta", AttrKind::real, "1.0", "quadratic below |a - b| < beta"});
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      return "F.smooth_l1_loss(" + a[0] + ", " + a[1] + ", reduction=" + c.attr("reduction").py + ", beta=" + c.attr("beta").py + ")";
    };
    d.example.attrs = {{"beta", "0.5"}};
    r.add(d);
  }
  {
    // Both arguments are log-probabilities (log_target=True), so any real input is valid.
    OpDef d = pair_loss("kl_div", "KL divergence of log-probabilities, batch mean (F.kl_div, log_target=True)", 4);
    d.attrs = {};
    d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string&) {
      return "F.kl_div(" + a[0] + ", " + a[1] + ", reduction='batchmean', log_target=True)";
    };
    r.add(d);
  }
}

}  // namespace kforge
