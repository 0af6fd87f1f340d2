// Layout changes: transpose, permute, reshape, concatenation. No arithmetic; they count toward a
// task's bytes, not its FLOPs.
#include "data_synth/task/op_registry.h"

#include <algorithm>

namespace kforge {

namespace {

double no_flops(const OpCall&, const TensorMeta&) { return 0.0; }

std::string py_args(const std::vector<std::string>& a) {
  std::string s;
  for (const auto& x : a) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void add_transpose(OpRegistry& r) {
  OpDef d;
  d.name = "transpose";
  d.category = OpCategory::layout;
  d.summary = "swap two dimensions (torch.transpose)";
  d.attrs = {{"dim0", AttrKind::integer, "", "first dimension"}, {"dim1", AttrKind::integer, "", "second dimension"}};
  d.infer = [](const OpCall& c) {
    Shape s = c.shape();
    int64_t a = normalize_dim(c.i("dim0"), s.size()), b = normalize_dim(c.i("dim1"), s.size());
    std::swap(s[a], s[b]);
    return TensorMeta{s, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "torch.transpose(" + a[0] + ", " + c.attr("dim0").py + ", " + c.attr("dim1").py + ")";
  };
  d.example = {{{3, 5, 7}}, {{"dim0", "0"}, {"dim1", "-1"}}, ""};
  d.bad_example = {{{3, 5}}, {{"dim0", "0"}, {"dim1", "2"}}, "out of range"};
  r.add(d);
}

void add_permute(OpRegistry& r) {
  OpDef d;
  d.name = "permute";
  d.category = OpCategory::layout;
  d.summary = "reorder all dimensions (Tensor.permute)";
  d.attrs = {{"dims", AttrKind::integers, "", "a permutation of the dimensions"}};
  d.infer = [](const OpCall& c) {
    const Shape& s = c.shape();
    const auto& p = c.ints("dims");
    if (p.size() != s.size()) refuse("dims " + shape_str(p) + " must list all " + std::to_string(s.size()) + " dimensions");
    std::vector<bool> seen(s.size(), false);
    Shape out;
    for (int64_t d : p) {
      int64_t n = normalize_dim(d, s.size());
      if (seen[n]) refuse("dims " + shape_str(p) + " is not a permutation (dimension " + std::to_string(n) + " twice)");
      seen[n] = true;
      out.push_back(s[n]);
    }
    return TensorMeta{out, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return a[0] + ".permute(" + c.attr("dims").py + ")";
  };
  d.example = {{{3, 5, 7}}, {{"dims", "[2, 0, 1]"}}, ""};
  d.bad_example = {{{3, 5, 7}}, {{"dims", "[0, 0, 1]"}}, "not a permutation"};
  r.add(d);
}

void add_reshape(OpRegistry& r) {
  OpDef d;
  d.name = "reshape";
  d.category = OpCategory::layout;
  d.summary = "same elements in a new shape, at most one -1 (Tensor.reshape)";
  d.attrs = {{"shape", AttrKind::integers, "", "the new shape; one entry may be -1"}};
  d.infer = [](const OpCall& c) {
    Shape out = c.ints("shape");
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == -1) {
        if (infer_at >= 0) refuse("shape " + shape_str(out) + " has more than one -1");
        infer_at = static_cast<int64_t>(i);
      } else if (out[i] < 1) {
        refuse("shape " + shape_str(out) + " has a size below 1");
      } else {
        known *= out[i];
      }
    }
    int64_t n = numel(c.shape());
    if (infer_at >= 0) {
      if (n % known != 0) refuse("cannot reshape " + shape_str(c.shape()) + " into " + shape_str(out));
      out[infer_at] = n / known;
    }
    if (numel(out) != n) refuse("cannot reshape " + shape_str(c.shape()) + " (" + std::to_string(n) + " elements) into " + shape_str(out));
    return TensorMeta{out, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return a[0] + ".reshape(" + c.attr("shape").py + ")";
  };
  d.example = {{{4, 6, 5}}, {{"shape", "[4, -1]"}}, ""};
  d.bad_example = {{{4, 6, 5}}, {{"shape", "[7, -1]"}}, "cannot reshape"};
  r.add(d);
}

void add_concat(OpRegistry& r) {
  OpDef d;
  d.name = "concat";
  d.category = OpCategory::layout;
  d.summary = "join 2 to 4 tensors along a dimension (torch.cat)";
  d.min_inputs = 2;
  d.max_inputs = 4;
  d.attrs = {{"dim", AttrKind::integer, "0", "the dimension to join along"}};
  d.infer = [](const OpCall& c) {
    Shape out = c.shape(0);
    int64_t dim = normalize_dim(c.i("dim"), out.size());
    for (size_t i = 1; i < c.in.size(); ++i) {
      const Shape& s = c.shape(i);
      if (c.in[i].dtype != c.dtype()) refuse("inputs have different dtypes");
      if (s.size() != out.size()) refuse("inputs have different ranks: " + shape_str(c.shape(0)) + " and " + shape_str(s));
      for (size_t k = 0; k < s.size(); ++k)
        if (static_cast<int64_t>(k) != dim && s[k] != out[k])
          refuse("input " + std::to_string(i) + " " + shape_str(s) + " differs from " + shape_str(c.shape(0)) + " outside dim " +
                 std::to_string(dim));
      out[dim] += s[dim];
    }
    return TensorMeta{out, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "torch.cat([" + py_args(a) + "], dim=" + c.attr("dim").py + ")";
  };
  d.example = {{{3, 4, 5}, {3, 2, 5}, {3, 7, 5}}, {{"dim", "1"}}, ""};
  d.bad_example = {{{3, 4, 5}, {2, 4, 5}}, {{"dim", "1"}}, "outside dim"};
  r.add(d);
}

void add_flatten(OpRegistry& r) {
  OpDef d;
  d.name = "flatten";
  d.category = OpCategory::layout;
  d.summary = "merge dims start_dim..end_dim into one (torch.flatten)";
  d.attrs = {{"start_dim", AttrKind::integer, "1", "first dimension merged"},
             {"end_dim", AttrKind::integer, "-1", "last dimension merged"}};
  d.infer = [](const OpCall& c) {
    const Shape& s = c.shape();
    if (s.empty()) refuse("flatten needs a tensor of rank >= 1");
    int64_t a = normalize_dim(c.i("start_dim"), s.size()), b = normalize_dim(c.i("end_dim"), s.size());
    if (a > b) refuse("start_dim " + std::to_string(a) + " comes after end_dim " + std::to_string(b));
    Shape out(s.begin(), s.begin() + a);
    out.push_back(numel(Shape(s.begin() + a, s.begin() + b + 1)));
    out.insert(out.end(), s.begin() + b + 1, s.end());
    return TensorMeta{out, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "torch.flatten(" + a[0] + ", " + c.attr("start_dim").py + ", " + c.attr("end_dim").py + ")";
  };
  d.example = {{{3, 4, 5, 2}}, {{"start_dim", "1"}, {"end_dim", "2"}}, ""};
  d.bad_example = {{{3, 4, 5}}, {{"start_dim", "2"}, {"end_dim", "1"}}, "comes after"};
  r.add(d);
}

void add_unsqueeze(OpRegistry& r) {
  OpDef d;
  d.name = "unsqueeze";
  d.category = OpCategory::layout;
  d.summary = "insert a dimension of size 1 (torch.unsqueeze)";
  d.attrs = {{"dim", AttrKind::integer, "", "where the new dimension goes (in [-rank-1, rank])"}};
  d.infer = [](const OpCall& c) {
    Shape s = c.shape();
    int64_t dim = normalize_dim(c.i("dim"), s.size() + 1);
    s.insert(s.begin() + dim, 1);
    return TensorMeta{s, c.dtype()};
  };
  d.flops = no_flops;
  d.py_expr = [](const OpCall& c, const std::vector<std::string>& a, const std::string&) {
    return "torch.unsqueeze(" + a[0] + ", " + c.attr("dim").py + ")";
  };
  d.example = {{{3, 4}}, {{"dim", "1"}}, ""};
  d.bad_example = {{{3, 4}}, {{"dim", "3"}}, "out of range"};
  r.add(d);
}

}  // namespace

void register_layout_ops(OpRegistry& r) {
  add_transpose(r);
  add_permute(r);
  add_reshape(r);
  add_concat(r);
  add_flatten(r);
  add_unsqueeze(r);
}

}  // namespace kforge
