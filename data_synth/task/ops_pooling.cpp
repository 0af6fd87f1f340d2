// Pooling (max and average windows, adaptive average) and upsampling of [N, C, *spatial].
#include "data_synth/task/op_registry.h"

namespace kforge {

namespace {

std::string nds(int nd) { return std::to_string(nd) + "d"; }

TensorMeta spatial_input(const OpCall& c, int nd) {
  require_float(c);
  const Shape& s = c.shape();
  if (static_cast<int>(s.size()) != nd + 2)
    refuse(c.op->name + " needs [N, C, " + std::to_string(nd) + " spatial dims], got " + shape_str(s));
  return c.in[0];
}

// max_pool1d/2d, avg_pool2d: square windows, PyTorch's floor mode.
OpDef pool(const std::string& kind, int nd) {
  OpDef d;
  d.name = kind + "_pool" + nds(nd);
  d.category = OpCategory::pooling;
  d.summary = kind + " over " + (nd == 1 ? "windows" : "square windows") + " of [N, C, *] (F." + d.name + ")";
  d.attrs = {{"kernel_size", AttrKind::integer, "", "window size"},
             {"stride", AttrKind::integer, "0", "step; 0 means kernel_size"},
             {"padding", AttrKind::integer, "0", "implicit padding on each side (at most kernel_size / 2)"}};
  d.infer = [nd](const OpCall& c) {
    TensorMeta m = spatial_input(c, nd);
    int64_t k = c.i("kernel_size"), s = c.i("stride") == 0 ? k : c.i("stride"), p = c.i("padding");
    if (k < 1 || s < 1 || p < 0) refuse(c.op->name + " needs kernel_size, stride >= 1 and padding >= 0");
    if (2 * p > k) refuse("padding " + std::to_string(p) + " must be at most half the kernel size " + std::to_string(k));
    for (int i = 0; i < nd; ++i) {
      int64_t o = (m.shape[2 + i] + 2 * p - k) / s + 1;
      if (m.shape[2 + i] + 2 * p < k) refuse("window " + std::to_string(k) + " does not fit the input " + shape_str(c.shape()));
      m.shape[2 + i] = o;
    }
    return m;
  };
  d.flops = [nd](const OpCall& c, const TensorMeta& out) {
    int64_t k = c.i("kernel_size"), kk = 1;
    for (int i = 0; i < nd; ++i) kk *= k;
    return static_cast<double>(numel(out.shape)) * kk;
  };
  std::string fn = "F." + d.name;
  d.py_expr = [fn](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    std::string stride = c.i("stride") == 0 ? c.attr("kernel_size").py : c.attr("stride").py;
    return fn + "(" + a[0] + ", kernel_size=" + c.attr("kernel_size").py + ", stride=" + stride + ", padding=" + c.attr("padding").py + ")";
  };
  Shape ex{2, 3}, bad{2, 3};
  for (int i = 0; i < nd; ++i) {
    ex.push_back(9 + 2 * i);
    bad.push_back(2);
  }
  d.example = {{ex}, {{"kernel_size", "3"}, {"stride", "2"}, {"padding", "1"}}, ""};
  d.bad_example = {{bad}, {{"kernel_size", "4"}}, "does not fit"};
  return d;
}

}  // namespace

void register_pooling_ops(OpRegistry& r) {
  r.add(pool("max", 1));
  r.add(pool("max", 2));
  r.add(pool("avg", 2));
  {
    OpDef d;
    d.name = "adaptive_avg_pool2d";
    d.category = OpCategory::pooling;
    d.summary = "average [N, C, H, W] down to [N, C, out, out] (F.adaptive_avg_pool2d)";
    d.attrs = {{"output_size", AttrKind::integer, "", "side of the square output"}};
    d.infer = [](const OpCall& c) {
      TensorMeta m = spatial_input(c, 2);
      int64_t o = c.i("output_size");
      if (o < 1 || o > m.shape[2] || o > m.shape[3])
        refuse("output_size " + std::to_string(o) + " must be in [1, min(H, W)] for the input " + shape_str(c.shape()));
      m.shape[2] = m.shape[3] = o;
      return m;
    };
    d.flops = [](const OpCall& c, const TensorMeta&) { return static_cast<double>(numel(c.shape())); };
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      return "F.adaptive_avg_pool2d(" + a[0] + ", " + c.attr("output_size").py + ")";
    };
    d.example = {{{2, 3, 11, 9}}, {{"output_size", "4"}}, ""};
    d.bad_example = {{{2, 3, 5, 5}}, {{"output_size", "6"}}, "must be in [1, min(H, W)]"};
    r.add(d);
  }
  {
    OpDef d;
    d.name = "upsample2d";
    d.category = OpCategory::pooling;
    d.summary = "scale [N, C, H, W] up by an integer factor, nearest or bilinear (F.interpolate)";
    d.attrs = {{"scale", AttrKind::integer, "2", "integer scale factor"},
               {"mode", AttrKind::text, "nearest", "nearest or bilinear (align_corners=False)", {"nearest", "bilinear"}}};
    d.infer = [](const OpCall& c) {
      TensorMeta m = spatial_input(c, 2);
      int64_t f = c.i("scale");
      if (f < 1 || f > 8) refuse("scale " + std::to_string(f) + " must be in [1, 8]");
      m.shape[2] *= f;
      m.shape[3] *= f;
      return m;
    };
    d.flops = [](const OpCall& c, const TensorMeta& out) { return (c.s("mode") == "bilinear" ? 8.0 : 1.0) * numel(out.shape); };
    d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
      std::string f = std::to_string(c.i("scale")) + ".0";
      std::string s = "F.interpolate(" + a[0] + ", scale_factor=" + f + ", mode=" + c.attr("mode").py;
      return s + (c.s("mode") == "bilinear" ? ", align_corners=False)" : ")");
    };
    d.example = {{{2, 3, 5, 6}}, {{"scale", "2"}, {"mode", "bilinear"}}, ""};
    d.bad_example = {{{2, 3, 5}}, {{"scale", "2"}}, "needs [N, C, 2 spatial dims]"};
    r.add(d);
  }
}

}  // namespace kforge
