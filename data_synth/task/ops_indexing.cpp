// Lookups by index: embedding tables, and index_add (nondeterministic on the GPU: floating atomics).
#include "data_synth/task/op_registry.h"

#include <cmath>

namespace kforge {

void register_indexing_ops(OpRegistry& r) {
  {
    OpDef d;
    d.name = "embedding";
    d.category = OpCategory::indexing;
    d.summary = "rows of a learned table [num_embeddings, dim] picked by int64 indices (nn.Embedding)";
    d.attrs = {{"num_embeddings", AttrKind::integer, "", "table rows"},
               {"dim", AttrKind::integer, "", "row width"},
               {"dtype", AttrKind::text, "float32", "the table's dtype", {"float32", "float16", "bfloat16"}}};
    d.infer = [](const OpCall& c) {
      if (c.in[0].dtype != DType::int64) refuse(std::string("embedding's indices must be int64, got ") + dtype_name(c.in[0].dtype));
      if (c.i("num_embeddings") < 1 || c.i("dim") < 1) refuse("num_embeddings and dim must be >= 1");
      Shape s = c.shape();
      s.push_back(c.i("dim"));
      return TensorMeta{s, dtype_from_name(c.s("dtype"))};
    };
    d.input_draw = [](const OpCall& c, size_t) -> std::optional<Draw> { return Draw::randint(0, c.i("num_embeddings")); };
    // nn.Embedding's own init: normal(0, 1).
    d.params = [](const OpCall& c) {
      return std::vector<ParamDecl>{{"weight", {c.i("num_embeddings"), c.i("dim")}, dtype_from_name(c.s("dtype")), Draw::normal(0, 1)}};
    };
    d.flops = [](const OpCall&, const TensorMeta&) { return 0.0; };
    d.py_module = [](const OpCall& c) { return "nn.Embedding(" + c.attr("num_embeddings").py + ", " + c.attr("dim").py + ")"; };
    d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string& self) { return self + "(" + a[0] + ")"; };
    d.example = {{{4, 9}}, {{"num_embeddings", "13"}, {"dim", "6"}}, ""};
    d.example.input_dtypes = {DType::int64};
    d.bad_example = {{{4, 9}}, {{"num_embeddings", "13"}, {"dim", "6"}}, "must be int64"};
    r.add(d);
  }
  {
    OpDef d;
    d.name = "index_add";
    d.category = OpCategory::indexing;
    d.summary = "x with rows of src added at int64 row indices, duplicates accumulating (torch.index_add, dim 0)";
    d.min_inputs = d.max_inputs = 3;
    d.nondeterministic = true;  // CUDA accumulates duplicate indices with floating atomics
    d.infer = [](const OpCall& c) {
      if (!dtype_is_float(c.in[0].dtype) || c.in[2].dtype != c.in[0].dtype) refuse("index_add's x and src must share a floating dtype");
      if (c.in[1].dtype != DType::int64) refuse(std::string("index_add's indices must be int64, got ") + dtype_name(c.in[1].dtype));
      const Shape &x = c.shape(0), &idx = c.shape(1), &src = c.shape(2);
      if (x.empty() || idx.size() != 1 || src.size() != x.size() || src[0] != idx[0] ||
          !std::equal(x.begin() + 1, x.end(), src.begin() + 1))
        refuse("index_add takes x [N, *], indices [M] and src [M, *], got " + shape_str(x) + ", " + shape_str(idx) + ", " + shape_str(src));
      return c.in[0];
    };
    d.input_draw = [](const OpCall& c, size_t i) -> std::optional<Draw> {
      if (i == 1) return Draw::randint(0, c.shape(0)[0]);
      return std::nullopt;
    };
    d.flops = [](const OpCall& c, const TensorMeta&) { return static_cast<double>(numel(c.shape(2))); };
    d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string&) {
      return "torch.index_add(" + a[0] + ", 0, " + a[1] + ", " + a[2] + ")";
    };
    d.example = {{{7, 5}, {9}, {9, 5}}, {}, ""};
    d.example.input_dtypes = {DType::float32, DType::int64, DType::float32};
    d.bad_example = {{{7, 5}, {9}, {8, 5}}, {}, "index_add takes"};
    d.bad_example.input_dtypes = {DType::float32, DType::int64, DType::float32};
    r.add(d);
  }
}

}  // namespace kforge
