// Reductions along one dimension, softmax-like normalisations along one dimension, and scans.
#include "data_synth/task/op_registry.h"

namespace kforge {

namespace {

const AttrSpec kDim{"dim", AttrKind::integer, "-1", "the dimension (negative counts from the end)"};
const AttrSpec kKeepdim{"keepdim", AttrKind::boolean, "false", "keep the reduced dimension with size 1"};

// Reduces one dim: the output drops it (or keeps it with size 1).
OpDef reduce(const std::string& name, const std::string& summary, const std::string& torch_fn, double flops_per_input) {
  OpDef d;
  d.name = name;
  d.category = OpCategory::reduction;
  d.summary = summary;
  d.attrs = {kDim, kKeepdim};
  d.infer = [](const OpCall& c) {
    require_float(c);
    if (c.shape().empty()) refuse(c.op->name + " needs a tensor of rank >= 1");
    int64_t dim = normalize_dim(c.i("dim"), c.shape().size());
    Shape out = c.shape();
    if (c.b("keepdim"))
      out[dim] = 1;
    else
      out.erase(out.begin() + dim);
    return TensorMeta{out, c.dtype()};
  };
  d.flops = [flops_per_input](const OpCall& c, const TensorMeta&) { return flops_per_input * static_cast<double>(numel(c.shape())); };
  d.py_expr = [torch_fn](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return torch_fn + "(" + a[0] + ", dim=" + c.attr("dim").py + ", keepdim=" + c.attr("keepdim").py + ")";
  };
  d.example = {{{6, 17, 5}}, {{"dim", "1"}}, ""};
  d.bad_example = {{{6, 17}}, {{"dim", "2"}}, "out of range"};
  return d;
}

// Same shape out; works along one dim.
OpDef along(const std::string& name, const std::string& summary, const std::string& torch_fn, double flops_per_input) {
  OpDef d;
  d.name = name;
  d.category = OpCategory::reduction;
  d.summary = summary;
  d.attrs = {kDim};
  d.infer = [](const OpCall& c) {
    require_float(c);
    if (c.shape().empty()) refuse(c.op->name + " needs a tensor of rank >= 1");
    normalize_dim(c.i("dim"), c.shape().size());
    return c.in[0];
  };
  d.flops = [flops_per_input](const OpCall& c, const TensorMeta&) { return flops_per_input * static_cast<double>(numel(c.shape())); };
  d.py_expr = [torch_fn](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return torch_fn + "(" + a[0] + ", dim=" + c.attr("dim").py + ")";
  };
  d.example = {{{6, 17, 5}}, {{"dim", "-2"}}, ""};
  d.bad_example = {{{6, 17}}, {{"dim", "-3"}}, "out of range"};
  return d;
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  r.add(reduce("sum", "sum along a dimension", "torch.sum", 1));
  r.add(reduce("mean", "mean along a dimension", "torch.mean", 1));
  r.add(reduce("amax", "maximum along a dimension", "torch.amax", 1));
  r.add(reduce("logsumexp", "log(sum(exp(x))) along a dimension, stably", "torch.logsumexp", 3));
  r.add(along("softmax", "softmax along a dimension", "torch.softmax", 3));
  r.add(along("log_softmax", "log of softmax along a dimension", "torch.log_softmax", 3));
  r.add(along("cumsum", "inclusive prefix sum along a dimension", "torch.cumsum", 1));
  r.add(reduce("amin", "minimum along a dimension", "torch.amin", 1));
  r.add(reduce("prod", "product along a dimension", "torch.prod", 1));
  r.add(reduce("vector_norm", "Euclidean norm along a dimension", "torch.linalg.vector_norm", 2));
  r.add(reduce("var", "unbiased variance along a dimension", "torch.var", 3));
  {
    OpDef d = reduce("argmax", "index of the maximum along a dimension (int64)", "torch.argmax", 1);
    auto base = d.infer;
    d.infer = [base](const OpCall& c) { return TensorMeta{base(c).shape, DType::int64}; };
    r.add(d);
  }
  r.add(along("cumprod", "inclusive prefix product along a dimension", "torch.cumprod", 1));
}

}  // namespace kforge
