// Matrix products (matmul with broadcast batch dims, bmm, linear layers) and 2-D convolution.
#include "data_synth/task/op_registry.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kforge {

namespace {

TensorMeta same_dtype_float(const OpCall& c) {
  require_float(c);
  for (const auto& t : c.in)
    if (t.dtype != c.dtype()) refuse("inputs have different dtypes");
  return c.in[0];
}

// PyTorch's default init bound for a layer with `fan_in` inputs: keeps activations O(1).
Draw fan_in_uniform(int64_t fan_in) {
  double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return Draw::uniform(-bound, bound);
}

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

int64_t conv_transpose_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t op, int64_t d) {
  return (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
}

// The share of a convolution's direct FLOPs that the cheapest algorithm the libraries run needs, so
// that the speed-of-light floor and the headroom do not count work a fast algorithm skips (issue 32).
// Only at stride 1 and dilation 1, the fast algorithms' domain (a transposed convolution at stride 1
// is a convolution); per (input channel, output channel) pair of a group:
//   Winograd F(4x4, 3x3) (2-D, k = 3): 6 x 6 = 36 products for 16 outputs, against 9 per output: 1/4;
//   FFT over tiles of T = 32 per dim (cuDNN's FFT_TILING): one complex multiply-add (8 flops) per
//   frequency, T^nd / 2 frequencies for real data, for (T - k + 1)^nd outputs, against 2 k^nd flops
//   per output: 2 (T / (T - k + 1))^nd / k^nd (0.253 at k = 3 in 2-D, 0.062 at k = 7).
// The transforms are left out (a floor, not an estimate); 1 where neither is cheaper (k = 1, 1-D k = 2).
double fast_conv_share(int nd, int64_t k, int64_t stride, int64_t dilation) {
  if (stride != 1 || dilation != 1 || k < 2) return 1.0;
  constexpr double kTile = 32;
  double share = 1.0;
  if (k < kTile) {
    const double kn = std::pow(static_cast<double>(k), nd);
    share = std::min(share, 2.0 * std::pow(kTile / (kTile - static_cast<double>(k) + 1), nd) / kn);
  }
  if (nd == 2 && k == 3) share = std::min(share, 36.0 / (16.0 * 9.0));
  return share;
}

int64_t ipow(int64_t b, int e) {
  int64_t r = 1;
  while (e-- > 0) r *= b;
  return r;
}

// nn.Conv1d/3d and nn.ConvTranspose1d/2d/3d (cubic kernels): [N, C, *spatial] with nd spatial dims.
OpDef conv_nd(int nd, bool transposed) {
  std::string nds = std::to_string(nd) + "d";
  OpDef d;
  d.name = (transposed ? "conv_transpose" : "conv") + nds;
  d.category = OpCategory::convolution;
  d.summary = std::string(transposed ? "transposed " : "") + nds + " convolution of [N, C, *] (nn." +
              (transposed ? "ConvTranspose" : "Conv") + nds + ", cubic kernel)";
  d.attrs = {{"out_channels", AttrKind::integer, "", "output channels"},
             {"kernel_size", AttrKind::integer, "", "kernel size in every spatial dim"},
             {"stride", AttrKind::integer, "1", "stride"},
             {"padding", AttrKind::integer, "0", "zero padding on each side"},
             {"dilation", AttrKind::integer, "1", "dilation"},
             {"groups", AttrKind::integer, "1", "channel groups"},
             {"bias", AttrKind::boolean, "true", "add a learned bias"}};
  if (transposed) d.attrs.push_back({"output_padding", AttrKind::integer, "0", "added to one side of the output (< stride or dilation)"});
  d.infer = [nd, transposed](const OpCall& c) {
    same_dtype_float(c);
    const Shape& s = c.shape();
    if (static_cast<int>(s.size()) != nd + 2)
      refuse(c.op->name + " needs [N, C, " + std::to_string(nd) + " spatial dims], got " + shape_str(s));
    int64_t co = c.i("out_channels"), k = c.i("kernel_size"), st = c.i("stride"), p = c.i("padding"), dl = c.i("dilation"),
            g = c.i("groups");
    int64_t op = transposed ? c.i("output_padding") : 0;
    if (co < 1 || k < 1 || st < 1 || p < 0 || dl < 1 || g < 1 || op < 0) refuse(c.op->name + " needs positive sizes and padding >= 0");
    if (transposed && op >= st && op >= dl) refuse("output_padding must be smaller than stride or dilation");
    if (s[1] % g != 0 || co % g != 0)
      refuse("groups " + std::to_string(g) + " must divide both " + std::to_string(s[1]) + " input and " + std::to_string(co) +
             " output channels");
    Shape out{s[0], co};
    for (int i = 0; i < nd; ++i) {
      int64_t o = transposed ? conv_transpose_out(s[2 + i], k, st, p, op, dl) : conv_out(s[2 + i], k, st, p, dl);
      if (o < 1)
        refuse("kernel " + std::to_string(k) + " (dilation " + std::to_string(dl) + ", padding " + std::to_string(p) +
               ") does not fit the input " + shape_str(s));
      out.push_back(o);
    }
    return TensorMeta{out, c.dtype()};
  };
  d.params = [nd, transposed](const OpCall& c) {
    int64_t ci = c.shape()[1], co = c.i("out_channels"), k = c.i("kernel_size"), g = c.i("groups");
    int64_t fan_in = (transposed ? co / g : ci / g) * ipow(k, nd);
    Shape w = transposed ? Shape{ci, co / g} : Shape{co, ci / g};
    for (int i = 0; i < nd; ++i) w.push_back(k);
    std::vector<ParamDecl> p{{"weight", w, c.dtype(), fan_in_uniform(fan_in)}};
    if (c.b("bias")) p.push_back({"bias", {co}, c.dtype(), fan_in_uniform(fan_in)});
    return p;
  };
  d.flops = [nd, transposed](const OpCall& c, const TensorMeta& out) {
    int64_t kk = ipow(c.i("kernel_size"), nd), g = c.i("groups");
    // Every input element meets every kernel tap of its group's output channels (transposed), or
    // every output element every tap of its group's input channels; at the cheapest algorithm's share.
    const double share = fast_conv_share(nd, c.i("kernel_size"), c.i("stride"), c.i("dilation"));
    if (transposed) return 2.0 * numel(c.shape()) * (c.i("out_channels") / g) * kk * share;
    return 2.0 * numel(out.shape) * (c.shape()[1] / g) * kk * share;
  };
  d.py_module = [nds, transposed](const OpCall& c) {
    std::string s = std::string("nn.") + (transposed ? "ConvTranspose" : "Conv") + nds + "(" + std::to_string(c.shape()[1]) + ", " +
                    c.attr("out_channels").py + ", kernel_size=" + c.attr("kernel_size").py + ", stride=" + c.attr("stride").py +
                    ", padding=" + c.attr("padding").py;
    if (transposed) s += ", output_padding=" + c.attr("output_padding").py;
    return s + ", dilation=" + c.attr("dilation").py + ", groups=" + c.attr("groups").py + ", bias=" + c.attr("bias").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  Shape ex{2, 4}, bad{2, 4};
  for (int i = 0; i < nd; ++i) {
    ex.push_back(7 + i);
    bad.push_back(3);
  }
  d.example = {{ex}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"stride", "2"}, {"padding", "1"}, {"groups", "2"}}, ""};
  if (transposed) d.example.attrs["output_padding"] = "1";
  d.bad_example = {{bad}, {{"out_channels", "6"}, {"kernel_size", "3"}, {"groups", "3"}}, "must divide"};
  return d;
}

// "bij,bjk->bik": two operands, letters only, each letter once per operand.
struct Einsum {
  std::string a, b, out;
};

Einsum parse_einsum(const std::string& eq) {
  auto arrow = eq.find("->");
  auto comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow)
    refuse("equation '" + eq + "' is not of the form 'ab,bc->ac'");
  Einsum e{eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1), eq.substr(arrow + 2)};
  for (const std::string* part : {&e.a, &e.b, &e.out}) {
    std::string seen;
    for (char ch : *part) {
      if (ch < 'a' || ch > 'z') refuse("equation '" + eq + "': only lowercase letters (no ellipsis, no spaces)");
      if (seen.find(ch) != std::string::npos) refuse("equation '" + eq + "': letter '" + std::string(1, ch) + "' repeats in one operand");
      seen += ch;
    }
  }
  for (char ch : e.out)
    if (e.a.find(ch) == std::string::npos && e.b.find(ch) == std::string::npos)
      refuse("equation '" + eq + "': output letter '" + std::string(1, ch) + "' is in no operand");
  return e;
}

void add_matmul(OpRegistry& r) {
  OpDef d;
  d.name = "matmul";
  d.category = OpCategory::matmul;
  d.summary = "a[..., M, K] @ b[..., K, N] with broadcast batch dims (torch.matmul)";
  d.min_inputs = d.max_inputs = 2;
  d.infer = [](const OpCall& c) {
    same_dtype_float(c);
    const Shape &a = c.shape(0), &b = c.shape(1);
    if (a.size() < 2 || b.size() < 2) refuse("matmul here takes inputs of rank >= 2, got " + shape_str(a) + " and " + shape_str(b));
    if (a.back() != b[b.size() - 2])
      refuse("inner dimensions differ: " + shape_str(a) + " @ " + shape_str(b) + " (" + std::to_string(a.back()) + " vs " +
             std::to_string(b[b.size() - 2]) + ")");
    Shape batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
    batch.push_back(a[a.size() - 2]);
    batch.push_back(b.back());
    return TensorMeta{batch, c.dtype()};
  };
  d.flops = [](const OpCall& c, const TensorMeta& out) { return 2.0 * numel(out.shape) * c.shape(0).back(); };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string&) {
    return "torch.matmul(" + a[0] + ", " + a[1] + ")";
  };
  d.example = {{{2, 5, 24}, {24, 7}}, {}, ""};
  d.bad_example = {{{5, 24}, {23, 7}}, {}, "inner dimensions differ"};
  r.add(d);
}

void add_bmm(OpRegistry& r) {
  OpDef d;
  d.name = "bmm";
  d.category = OpCategory::matmul;
  d.summary = "batched a[B, M, K] @ b[B, K, N] (torch.bmm)";
  d.min_inputs = d.max_inputs = 2;
  d.infer = [](const OpCall& c) {
    same_dtype_float(c);
    const Shape &a = c.shape(0), &b = c.shape(1);
    if (a.size() != 3 || b.size() != 3) refuse("bmm takes two rank-3 tensors, got " + shape_str(a) + " and " + shape_str(b));
    if (a[0] != b[0]) refuse("batch sizes differ: " + std::to_string(a[0]) + " vs " + std::to_string(b[0]));
    if (a[2] != b[1]) refuse("inner dimensions differ: " + shape_str(a) + " @ " + shape_str(b));
    return TensorMeta{{a[0], a[1], b[2]}, c.dtype()};
  };
  d.flops = [](const OpCall& c, const TensorMeta& out) { return 2.0 * numel(out.shape) * c.shape(0)[2]; };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string&) { return "torch.bmm(" + a[0] + ", " + a[1] + ")"; };
  d.example = {{{3, 5, 16}, {3, 16, 9}}, {}, ""};
  d.bad_example = {{{3, 5, 16}, {2, 16, 9}}, {}, "batch sizes differ"};
  r.add(d);
}

void add_linear(OpRegistry& r) {
  OpDef d;
  d.name = "linear";
  d.category = OpCategory::matmul;
  d.summary = "x[..., K] @ weight[N, K]^T + bias[N] (nn.Linear)";
  d.attrs = {{"out_features", AttrKind::integer, "", "N, the output features"}, {"bias", AttrKind::boolean, "true", "add a learned bias"}};
  d.infer = [](const OpCall& c) {
    same_dtype_float(c);
    Shape s = c.shape();
    if (s.empty()) refuse("linear needs an input of rank >= 1");
    if (c.i("out_features") < 1) refuse("out_features must be >= 1");
    s.back() = c.i("out_features");
    return TensorMeta{s, c.dtype()};
  };
  d.params = [](const OpCall& c) {
    int64_t k = c.shape().back(), n = c.i("out_features");
    std::vector<ParamDecl> p{{"weight", {n, k}, c.dtype(), fan_in_uniform(k)}};
    if (c.b("bias")) p.push_back({"bias", {n}, c.dtype(), fan_in_uniform(k)});
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta& out) { return 2.0 * numel(out.shape) * c.shape().back(); };
  d.py_module = [](const OpCall& c) {
    return "nn.Linear(" + std::to_string(c.shape().back()) + ", " + c.attr("out_features").py + ", bias=" + c.attr("bias").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{6, 40}}, {{"out_features", "24"}}, ""};
  d.bad_example = {{{6, 40}}, {{"out_features", "0"}}, "out_features"};
  r.add(d);
}

void add_conv2d(OpRegistry& r) {
  OpDef d;
  d.name = "conv2d";
  d.category = OpCategory::convolution;
  d.summary = "2-D convolution of [N, C, H, W] (nn.Conv2d, square kernel)";
  d.attrs = {{"out_channels", AttrKind::integer, "", "output channels"},
             {"kernel_size", AttrKind::integer, "", "square kernel size"},
             {"stride", AttrKind::integer, "1", "stride"},
             {"padding", AttrKind::integer, "0", "zero padding on each side"},
             {"dilation", AttrKind::integer, "1", "dilation"},
             {"groups", AttrKind::integer, "1", "channel groups"},
             {"bias", AttrKind::boolean, "true", "add a learned bias"}};
  d.infer = [](const OpCall& c) {
    same_dtype_float(c);
    const Shape& s = c.shape();
    if (s.size() != 4) refuse("conv2d needs [N, C, H, W], got " + shape_str(s));
    int64_t co = c.i("out_channels"), k = c.i("kernel_size"), st = c.i("stride"), p = c.i("padding"), dl = c.i("dilation"),
            g = c.i("groups");
    if (co < 1 || k < 1 || st < 1 || p < 0 || dl < 1 || g < 1) refuse("conv2d needs positive sizes and padding >= 0");
    if (s[1] % g != 0 || co % g != 0)
      refuse("groups " + std::to_string(g) + " must divide both " + std::to_string(s[1]) + " input and " + std::to_string(co) +
             " output channels");
    int64_t ho = conv_out(s[2], k, st, p, dl), wo = conv_out(s[3], k, st, p, dl);
    if (ho < 1 || wo < 1)
      refuse("kernel " + std::to_string(k) + " (dilation " + std::to_string(dl) + ") does not fit the " + std::to_string(s[2]) + "x" +
             std::to_string(s[3]) + " input with padding " + std::to_string(p));
    return TensorMeta{{s[0], co, ho, wo}, c.dtype()};
  };
  d.params = [](const OpCall& c) {
    int64_t ci = c.shape()[1], co = c.i("out_channels"), k = c.i("kernel_size"), g = c.i("groups");
    int64_t fan_in = ci / g * k * k;
    std::vector<ParamDecl> p{{"weight", {co, ci / g, k, k}, c.dtype(), fan_in_uniform(fan_in)}};
    if (c.b("bias")) p.push_back({"bias", {co}, c.dtype(), fan_in_uniform(fan_in)});
    return p;
  };
  d.flops = [](const OpCall& c, const TensorMeta& out) {
    int64_t k = c.i("kernel_size");
    return 2.0 * numel(out.shape) * (c.shape()[1] / c.i("groups")) * k * k * fast_conv_share(2, k, c.i("stride"), c.i("dilation"));
  };
  d.py_module = [](const OpCall& c) {
    return "nn.Conv2d(" + std::to_string(c.shape()[1]) + ", " + c.attr("out_channels").py + ", kernel_size=" + c.attr("kernel_size").py +
           ", stride=" + c.attr("stride").py + ", padding=" + c.attr("padding").py + ", dilation=" + c.attr("dilation").py +
           ", groups=" + c.attr("groups").py + ", bias=" + c.attr("bias").py + ")";
  };
  d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
  d.example = {{{2, 6, 11, 9}}, {{"out_channels", "8"}, {"kernel_size", "3"}, {"padding", "1"}, {"groups", "2"}}, ""};
  d.bad_example = {{{2, 6, 4, 4}}, {{"out_channels", "8"}, {"kernel_size", "7"}}, "does not fit"};
  r.add(d);
}

void add_einsum(OpRegistry& r) {
  OpDef d;
  d.name = "einsum";
  d.category = OpCategory::matmul;
  d.summary = "a two-operand Einstein summation, e.g. 'bhid,bhjd->bhij' (torch.einsum)";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"equation", AttrKind::text, "", "'ab,bc->ac': lowercase letters, two operands, no ellipsis"}};
  d.infer = [](const OpCall& c) {
    same_dtype_float(c);
    Einsum e = parse_einsum(c.s("equation"));
    std::map<char, int64_t> size;
    for (size_t k = 0; k < 2; ++k) {
      const std::string& letters = k == 0 ? e.a : e.b;
      const Shape& s = c.shape(k);
      if (letters.size() != s.size())
        refuse("operand " + std::to_string(k) + " '" + letters + "' has " + std::to_string(letters.size()) + " letters but the tensor " +
               shape_str(s) + " has rank " + std::to_string(s.size()));
      for (size_t i = 0; i < letters.size(); ++i) {
        auto [it, fresh] = size.emplace(letters[i], s[i]);
        if (!fresh && it->second != s[i])
          refuse("letter '" + std::string(1, letters[i]) + "' is " + std::to_string(it->second) + " in one place and " +
                 std::to_string(s[i]) + " in another");
      }
    }
    Shape out;
    for (char ch : e.out) out.push_back(size[ch]);
    return TensorMeta{out, c.dtype()};
  };
  d.flops = [](const OpCall& c, const TensorMeta& out) {
    Einsum e = parse_einsum(c.s("equation"));
    std::map<char, int64_t> size;
    for (size_t k = 0; k < 2; ++k)
      for (size_t i = 0; i < (k ? e.b : e.a).size(); ++i) size[(k ? e.b : e.a)[i]] = c.shape(k)[i];
    double all = 1;
    for (const auto& [ch, n] : size) all *= static_cast<double>(n);
    bool contracts = all > static_cast<double>(numel(out.shape));
    return contracts ? 2.0 * all : all;
  };
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "torch.einsum(" + c.attr("equation").py + ", " + a[0] + ", " + a[1] + ")";
  };
  d.example = {{{2, 3, 5, 8}, {2, 3, 7, 8}}, {{"equation", "bhid,bhjd->bhij"}}, ""};
  d.bad_example = {{{2, 5, 8}, {2, 7, 9}}, {{"equation", "bid,bjd->bij"}}, "letter 'd' is 8"};
  r.add(d);
}

}  // namespace

void register_matmul_conv_ops(OpRegistry& r) {
  add_matmul(r);
  add_bmm(r);
  add_linear(r);
  add_conv2d(r);
  r.add(conv_nd(1, false));
  r.add(conv_nd(3, false));
  r.add(conv_nd(1, true));
  r.add(conv_nd(2, true));
  r.add(conv_nd(3, true));
  add_einsum(r);
}

}  // namespace kforge
