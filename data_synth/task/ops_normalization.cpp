// Normalisations with learned affine parameters: layer norm, RMS norm, group norm, batch norm in
// evaluation mode (running statistics, never batch statistics).
#include "data_synth/task/op_registry.h"

#include <cmath>

namespace kforge {

namespace {

const Draw kScaleDraw = Draw::normal(1.0, 0.1);  // weights near 1, as after training
const Draw kShiftDraw = Draw::normal(0.0, 0.1);

// The trailing `normalized_dims` dims of the input.
Shape normalized_shape(const OpCall& c) {
  int64_t k = c.i("normalized_dims");
  const Shape& s = c.shape();
  if (k < 1 || k > static_cast<int64_t>(s.size()))
    refuse("normalized_dims " + std::to_string(k) + " must be in [1, rank] for a tensor of rank " + std::to_string(s.size()));
  return Shape(s.end() - k, s.end());
}

TensorMeta check_float_same(const OpCall& c) {
  require_float(c);
  return c.in[0];
}

void add_layer_norm(OpRegistry& r) {
  OpDef d;
  d.name = "layer_norm";
  d.category = OpCategory::normalization;
  d.summary = "normalise over the trailing dims, then scale and shift (nn.LayerNorm)";
  d.attrs = {{"normalized_dims", AttrKind::integer, "1", "how many trailing dims are normalised"},
             {"eps", AttrKind::real, "1e-5", "added to the variance"},
             {"affine", AttrKind::boolean, "true", "learned weight and bias"}};
  d.infer = [](const OpCall& c) {
    normalized_shape(c);
    return check_float_same(c);
  };
  d.params = [](const OpCall& c) {
    std::vector<ParamDecl> p;
    if (c.b("affine")) {
      Shape s = normalized_shape(c);
      p.push_back({"weight", s, c.dtype(), kScaleDraw});
      p.push_back({"bias", s, c.dtype(), kShiftDraw});
    }
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 5.0 * numel(c.shape()); };
  d.py_module = [](const OpCall& c) {
    return "nn.LayerNorm(" + py_ints(normalized_shape(c)) + ", eps=" + c.attr("eps").py + ", elementwise_affine=" + c.attr("affine").py +
           ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{4, 7, 48}}, {}, ""};
  d.bad_example = {{{4, 48}}, {{"normalized_dims", "3"}}, "normalized_dims"};
  r.add(d);
}

void add_rms_norm(OpRegistry& r) {
  OpDef d;
  d.name = "rms_norm";
  d.category = OpCategory::normalization;
  d.summary = "x / sqrt(mean(x^2) + eps) over the trailing dims, then scale (nn.RMSNorm)";
  d.attrs = {{"normalized_dims", AttrKind::integer, "1", "how many trailing dims are normalised"},
             {"eps", AttrKind::real, "1e-6", "added to the mean square"},
             {"affine", AttrKind::boolean, "true", "learned weight"}};
  d.infer = [](const OpCall& c) {
    normalized_shape(c);
    return check_float_same(c);
  };
  d.params = [](const OpCall& c) {
    std::vector<ParamDecl> p;
    if (c.b("affine")) p.push_back({"weight", normalized_shape(c), c.dtype(), kScaleDraw});
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 4.0 * numel(c.shape()); };
  d.py_module = [](const OpCall& c) {
    return "nn.RMSNorm(" + py_ints(normalized_shape(c)) + ", eps=" + c.attr("eps").py + ", elementwise_affine=" + c.attr("affine").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{4, 7, 48}}, {{"normalized_dims", "2"}}, ""};
  d.bad_example = {{{4, 48}}, {{"normalized_dims", "0"}}, "normalized_dims"};
  r.add(d);
}

void add_group_norm(OpRegistry& r) {
  OpDef d;
  d.name = "group_norm";
  d.category = OpCategory::normalization;
  d.summary = "normalise channel groups of [N, C, *], then scale and shift per channel (nn.GroupNorm)";
  d.attrs = {{"groups", AttrKind::integer, "", "number of channel groups (divides C)"},
             {"eps", AttrKind::real, "1e-5", "added to the variance"},
             {"affine", AttrKind::boolean, "true", "learned weight and bias"}};
  d.infer = [](const OpCall& c) {
    const Shape& s = c.shape();
    if (s.size() < 2) refuse("group_norm needs [N, C, *], got " + shape_str(s));
    int64_t g = c.i("groups");
    if (g < 1 || s[1] % g != 0) refuse("groups " + std::to_string(g) + " must divide the " + std::to_string(s[1]) + " channels");
    return check_float_same(c);
  };
  d.params = [](const OpCall& c) {
    std::vector<ParamDecl> p;
    if (c.b("affine")) {
      Shape s{c.shape()[1]};
      p.push_back({"weight", s, c.dtype(), kScaleDraw});
      p.push_back({"bias", s, c.dtype(), kShiftDraw});
    }
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 5.0 * numel(c.shape()); };
  d.py_module = [](const OpCall& c) {
    return "nn.GroupNorm(" + c.attr("groups").py + ", " + std::to_string(c.shape()[1]) + ", eps=" + c.attr("eps").py +
           ", affine=" + c.attr("affine").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{3, 12, 5, 6}}, {{"groups", "4"}}, ""};
  d.bad_example = {{{3, 12, 5, 6}}, {{"groups", "5"}}, "must divide"};
  r.add(d);
}

void add_batch_norm(OpRegistry& r) {
  OpDef d;
  d.name = "batch_norm";
  d.category = OpCategory::normalization;
  d.summary = "batch norm in evaluation mode on [N, C, *]: running mean and variance, then scale and shift";
  d.attrs = {{"eps", AttrKind::real, "1e-5", "added to the running variance"}};
  d.infer = [](const OpCall& c) {
    const Shape& s = c.shape();
    if (s.size() < 2 || s.size() > 5) refuse("batch_norm needs [N, C], [N, C, L], [N, C, H, W] or [N, C, D, H, W], got " + shape_str(s));
    return check_float_same(c);
  };
  d.params = [](const OpCall& c) {
    Shape s{c.shape()[1]};
    return std::vector<ParamDecl>{
        {"weight", s, c.dtype(), kScaleDraw},
        {"bias", s, c.dtype(), kShiftDraw},
        {"running_mean", s, c.dtype(), Draw::normal(0.0, 0.2), true},
        {"running_var", s, c.dtype(), Draw::uniform(0.5, 1.5), true},
        // In the state_dict, so in the argument list; evaluation mode never reads it.
        {"num_batches_tracked", Shape{}, DType::int64, Draw::constant(0), true, false},
    };
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 2.0 * numel(c.shape()); };
  d.py_module = [](const OpCall& c) {
    size_t rank = c.shape().size();
    std::string kind = rank <= 3 ? "1d" : rank == 4 ? "2d" : "3d";
    return "nn.BatchNorm" + kind + "(" + std::to_string(c.shape()[1]) + ", eps=" + c.attr("eps").py + ")";
  };
  // F.batch_norm with training=False: evaluation mode whatever mode the module is in.
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string& self) {
    return "F.batch_norm(" + a[0] + ", " + self + ".running_mean, " + self + ".running_var, " + self + ".weight, " + self +
           ".bias, training=False, eps=" + c.attr("eps").py + ")";
  };
  d.example = {{{5, 6, 4, 3}}, {}, ""};
  d.bad_example = {{{6}}, {}, "needs [N, C"};
  r.add(d);
}

void add_instance_norm(OpRegistry& r) {
  OpDef d;
  d.name = "instance_norm";
  d.category = OpCategory::normalization;
  d.summary = "normalise each channel of each sample of [N, C, *] over its spatial dims (nn.InstanceNorm*d)";
  d.attrs = {{"eps", AttrKind::real, "1e-5", "added to the variance"}, {"affine", AttrKind::boolean, "false", "learned weight and bias"}};
  d.infer = [](const OpCall& c) {
    const Shape& s = c.shape();
    if (s.size() < 3 || s.size() > 5) refuse("instance_norm needs [N, C, L], [N, C, H, W] or [N, C, D, H, W], got " + shape_str(s));
    return check_float_same(c);
  };
  d.params = [](const OpCall& c) {
    std::vector<ParamDecl> p;
    if (c.b("affine")) {
      Shape s{c.shape()[1]};
      p.push_back({"weight", s, c.dtype(), kScaleDraw});
      p.push_back({"bias", s, c.dtype(), kShiftDraw});
    }
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 5.0 * numel(c.shape()); };
  // Without running statistics the module normalises by the input's own in both modes.
  d.py_module = [](const OpCall& c) {
    return "nn.InstanceNorm" + std::to_string(c.shape().size() - 2) + "d(" + std::to_string(c.shape()[1]) + ", eps=" + c.attr("eps").py +
           ", affine=" + c.attr("affine").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{3, 5, 6, 7}}, {{"affine", "true"}}, ""};
  d.bad_example = {{{3, 5}}, {}, "needs [N, C, L]"};
  r.add(d);
}

void add_l2_normalize(OpRegistry& r) {
  OpDef d;
  d.name = "l2_normalize";
  d.category = OpCategory::normalization;
  d.summary = "x / max(||x||_2, eps) along a dimension (F.normalize)";
  d.attrs = {{"dim", AttrKind::integer, "-1", "the dimension"}, {"eps", AttrKind::real, "1e-12", "lower bound of the norm"}};
  d.infer = [](const OpCall& c) {
    require_float(c);
    if (c.shape().empty()) refuse("l2_normalize needs a tensor of rank >= 1");
    normalize_dim(c.i("dim"), c.shape().size());
    return c.in[0];
  };
  d.flops = [](const OpCall& c, const TensorMeta&) { return 3.0 * numel(c.shape()); };
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "F.normalize(" + a[0] + ", p=2.0, dim=" + c.attr("dim").py + ", eps=" + c.attr("eps").py + ")";
  };
  d.example = {{{6, 17, 5}}, {{"dim", "1"}}, ""};
  d.bad_example = {{{6, 17}}, {{"dim", "3"}}, "out of range"};
  r.add(d);
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  add_layer_norm(r);
  add_rms_norm(r);
  add_group_norm(r);
  add_batch_norm(r);
  add_instance_norm(r);
  add_l2_normalize(r);
}

}  // namespace kforge
