// The operators that follow the first one in a composed graph (each takes the current tensor, and
// maybe another; false when it does not fit), and the first operators' helpers.
#include <algorithm>
#include <cmath>

#include "configs/error.h"
#include "data_synth/synth/composer_builder.h"

namespace kforge::compose {

// ---- first operators: draw the inputs and apply the operator ----

Shape generic_shape(Builder& b, std::vector<std::string>& sym) {
  switch (b.rng.below(3)) {
    case 0:
      sym = {"B", "D"};
      return {kBuildBatch, b.pick({1024, 2048, 4096, 8192, 16384})};
    case 1:
      sym = {"B", "L", "D"};
      return {kBuildBatch, b.pick({128, 256, 512, 1024}), b.pick({256, 512, 768, 1024, 2048})};
    default: {
      sym = {"B", "C", "H", "W"};
      int64_t h = b.pick({32, 56, 64, 112, 128});
      return {kBuildBatch, b.pick({16, 32, 64, 128, 256}), h, h};
    }
  }
}

Tensor generic_input(Builder& b) {
  std::vector<std::string> sym;
  Shape s = generic_shape(b, sym);
  return b.input(s, b.dtype, sym);
}

std::map<std::string, std::string> unary_attrs(Builder& b, const std::string& op) {
  if (op == "leaky_relu") return {{"negative_slope", b.rng.pick(std::vector<std::string>{"0.01", "0.1", "0.2"})}};
  if (op == "gelu") return {{"approximate", b.rng.chance(0.3) ? "tanh" : "none"}};
  if (op == "clamp")
    return b.rng.chance(0.5) ? std::map<std::string, std::string>{{"min", "-1.0"}, {"max", "1.0"}}
                             : std::map<std::string, std::string>{{"min", "0.0"}, {"max", "6.0"}};
  if (op == "hardtanh") return {{"min_val", "-2.0"}, {"max_val", "2.0"}};
  if (op == "scale") return {{"alpha", b.rng.pick(std::vector<std::string>{"0.5", "2.0", "0.125"})}};
  if (op == "softplus") return {{"beta", b.rng.chance(0.5) ? "1.0" : "2.0"}};
  if (op == "elu") return {{"alpha", b.rng.chance(0.5) ? "1.0" : "0.5"}};
  if (op == "dropout") return {{"p", b.rng.chance(0.5) ? "0.1" : "0.2"}};
  return {};
}

// A second operand for a binary operator: an earlier tensor of the same shape (a residual), a new
// input of the same shape, or one that broadcasts (a row or per-channel vector).
Tensor second_operand(Builder& b) {
  if (b.rng.chance(b.cfg.residual_probability)) {
    std::vector<Tensor> same;
    for (const auto& t : b.tensors)
      if (t.name != b.cur.name && t.meta == b.cur.meta) same.push_back(t);
    if (!same.empty()) return b.rng.pick(same);
  }
  const Shape& s = b.cur.meta.shape;
  double u = b.rng.uniform();
  if (u < 0.5 || s.size() < 2) return b.like(b.cur);
  if (s.size() == 4 && u < 0.75) return b.input({s[1], 1, 1}, b.cur.meta.dtype);
  return b.input({s.back()}, b.cur.meta.dtype);
}

// ---- later operators: each takes the current tensor (and maybe another); false when it does not fit ----

namespace {

// A follow applies to a float tensor of rank >= 1.
bool fl(Builder& b) { return b.is_float() && b.cur.rank() >= 1; }

// Follows of unary and binary elementwise operators and where.
void add_elementwise_follows(std::vector<FollowRecipe>& r) {
  for (const char* op :
       {"relu",       "gelu",     "silu",     "sigmoid", "tanh",  "mish",   "hardswish", "hardsigmoid", "softplus", "elu",    "selu",
        "leaky_relu", "softsign", "hardtanh", "clamp",   "scale", "square", "sin",       "abs",         "exp",      "dropout"}) {
    std::string name = op;
    double w = name == "exp" || name == "dropout" || name == "square" ? 0.3 : 1.0;
    r.push_back({name, w, [name](Builder& b, bool, int) {
                   if (!fl(b)) return false;
                   b.node(name, {b.cur}, unary_attrs(b, name));
                   return true;
                 }});
  }
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
    std::string name = op;
    r.push_back({name, 2.0, [name](Builder& b, bool, int) {
                   if (!fl(b)) return false;
                   Tensor x = b.cur;
                   Tensor y = second_operand(b);
                   b.node(name, {x, y});
                   return true;
                 }});
  }
  r.push_back({"where", 1.0, [](Builder& b, bool, int slots) {
                 if (!fl(b) || slots < 2) return false;
                 Tensor x = b.cur, t = b.input({x.dim(-1)}, x.meta.dtype), y = b.like(x);
                 Tensor m = b.node("gt", {x, t});
                 b.node("where", {m, x, y});
                 return true;
               }});
}

// Follows of reductions and scans along a dim.
void add_reduction_follows(std::vector<FollowRecipe>& r) {
  for (const char* op : {"sum", "mean", "amax", "amin", "logsumexp", "vector_norm", "var", "prod", "argmax"}) {
    std::string name = op;
    r.push_back({name, name == "prod" || name == "argmax" ? 0.4 : 1.0, [name](Builder& b, bool last, int) {
                   if (!fl(b) || b.cur.rank() < 2 || (name == "argmax" && !last)) return false;
                   int d = 1 + static_cast<int>(b.rng.below(b.cur.rank() - 1));
                   if (name == "prod" && b.cur.dim(d) > 16) return false;
                   if (name == "var" && b.cur.dim(d) < 2) return false;
                   b.node(name, {b.cur}, {{"dim", str(d - b.cur.rank())}, {"keepdim", b.rng.chance(0.3) ? "true" : "false"}});
                   return true;
                 }});
  }
  for (const char* op : {"softmax", "log_softmax", "cumsum", "cumprod", "l2_normalize"}) {
    std::string name = op;
    r.push_back({name, name == "cumprod" ? 0.3 : 1.0, [name](Builder& b, bool, int) {
                   if (!fl(b) || b.cur.rank() < 2) return false;
                   int d = 1 + static_cast<int>(b.rng.below(b.cur.rank() - 1));
                   if (name == "cumprod" && b.cur.dim(d) > 16) return false;
                   b.node(name, {b.cur}, {{"dim", str(d - b.cur.rank())}});
                   return true;
                 }});
  }
}

// Follows of normalizations.
void add_normalization_follows(std::vector<FollowRecipe>& r) {
  r.push_back({"layer_norm", 1.2, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2 || b.cur.dim(-1) < 2) return false;
                 b.node("layer_norm", {b.cur});
                 return true;
               }});
  r.push_back({"rms_norm", 1.0, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2 || b.cur.dim(-1) < 2) return false;
                 b.node("rms_norm", {b.cur});
                 return true;
               }});
  r.push_back({"group_norm", 1.0, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 3) return false;
                 std::vector<int64_t> g;
                 for (int64_t k : {2, 4, 8, 16, 32})
                   if (b.cur.dim(1) % k == 0 && b.cur.dim(1) > k) g.push_back(k);
                 if (g.empty()) return false;
                 b.node("group_norm", {b.cur}, {{"groups", str(b.rng.pick(g))}});
                 return true;
               }});
  r.push_back({"batch_norm", 1.0, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2 || b.cur.rank() > 5) return false;
                 b.node("batch_norm", {b.cur});
                 return true;
               }});
  r.push_back({"instance_norm", 0.6, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 3 || b.cur.rank() > 5 || numel(b.cur.meta.shape) / (b.cur.dim(0) * b.cur.dim(1)) < 16)
                   return false;
                 b.node("instance_norm", {b.cur}, {{"affine", b.rng.chance(0.5) ? "true" : "false"}});
                 return true;
               }});
}

// Follows of linear, matmul and convolutions.
void add_matmul_conv_follows(std::vector<FollowRecipe>& r) {
  r.push_back({"linear", 2.0, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2 || b.cur.rank() > 3 || b.cur.dim(-1) > 16384) return false;
                 b.node("linear", {b.cur}, {{"out_features", str(b.pick({256, 512, 1024, 2048, 4096}))}});
                 return true;
               }});
  r.push_back({"matmul", 0.7, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2 || b.cur.dim(-1) > 8192) return false;
                 Tensor x = b.cur, w = b.input({x.dim(-1), b.pick({256, 512, 1024})}, x.meta.dtype);
                 b.node("matmul", {x, w});
                 return true;
               }});
  r.push_back(
      {"conv2d", 1.0, [](Builder& b, bool, int) {
         if (!fl(b) || b.cur.rank() != 4 || b.cur.dim(2) < 3 || b.cur.dim(3) < 3 || b.cur.dim(1) > 512) return false;
         int64_t k = b.pick({1, 3});
         b.node("conv2d", {b.cur}, {{"out_channels", str(b.pick({16, 32, 64, 128}))}, {"kernel_size", str(k)}, {"padding", str(k / 2)}});
         return true;
       }});
  r.push_back({"conv1d", 0.5, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 3 || b.cur.dim(2) < 3 || b.cur.dim(1) > 512) return false;
                 b.node("conv1d", {b.cur}, {{"out_channels", str(b.pick({16, 32, 64}))}, {"kernel_size", "3"}, {"padding", "1"}});
                 return true;
               }});
  r.push_back({"conv3d", 0.5, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 5 || b.cur.dim(2) < 3) return false;
                 b.node("conv3d", {b.cur}, {{"out_channels", str(b.pick({8, 16, 32}))}, {"kernel_size", "3"}, {"padding", "1"}});
                 return true;
               }});
}

// Follows of pooling, resampling and layout.
void add_pooling_layout_follows(std::vector<FollowRecipe>& r) {
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    std::string name = op;
    r.push_back({name, 0.8, [name](Builder& b, bool, int) {
                   if (!fl(b) || b.cur.rank() != 4 || b.cur.dim(2) < 4 || b.cur.dim(3) < 4) return false;
                   b.node(name, {b.cur}, {{"kernel_size", "2"}, {"stride", "2"}});
                   return true;
                 }});
  }
  r.push_back({"adaptive_avg_pool2d", 0.6, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 4 || b.cur.dim(2) < 8 || b.cur.dim(3) < 8) return false;
                 b.node("adaptive_avg_pool2d", {b.cur}, {{"output_size", str(b.pick({1, 4}))}});
                 return true;
               }});
  r.push_back({"upsample2d", 0.4, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 4 || b.cur.dim(2) * b.cur.dim(3) > 4096) return false;
                 b.node("upsample2d", {b.cur}, {{"scale", "2"}, {"mode", b.rng.chance(0.5) ? "nearest" : "bilinear"}});
                 return true;
               }});
  r.push_back({"max_pool1d", 0.4, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 3 || b.cur.dim(2) < 4) return false;
                 b.node("max_pool1d", {b.cur}, {{"kernel_size", "2"}, {"stride", "2"}});
                 return true;
               }});
  r.push_back({"transpose", 0.4, [](Builder& b, bool last, int) {
                 if (!fl(b) || b.cur.rank() < 3 || last) return false;
                 b.node("transpose", {b.cur}, {{"dim0", "-1"}, {"dim1", "-2"}});
                 return true;
               }});
  r.push_back({"permute", 0.3, [](Builder& b, bool last, int) {
                 if (!fl(b) || b.cur.rank() != 4 || last) return false;
                 b.node("permute", {b.cur}, {{"dims", b.rng.chance(0.5) ? "[0, 2, 3, 1]" : "[0, 3, 1, 2]"}});
                 return true;
               }});
  r.push_back({"flatten", 0.4, [](Builder& b, bool last, int) {
                 if (!fl(b) || b.cur.rank() < 3 || last) return false;
                 b.node("flatten", {b.cur}, {{"start_dim", "1"}, {"end_dim", "-1"}});
                 return true;
               }});
  r.push_back({"concat", 0.4, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() < 2) return false;
                 Tensor x = b.cur, y = b.like(x);
                 b.node("concat", {x, y}, {{"dim", "1"}});
                 return true;
               }});
}

// Follows of losses and attention.
void add_loss_attention_follows(std::vector<FollowRecipe>& r) {
  for (const char* op : {"mse_loss", "smooth_l1_loss", "kl_div"}) {
    std::string name = op;
    r.push_back({name, 0.4, [name](Builder& b, bool last, int) {
                   if (!fl(b) || !last) return false;
                   Tensor x = b.cur, y = b.like(x);
                   b.node(name, {x, y});
                   return true;
                 }});
  }
  r.push_back({"cross_entropy", 0.4, [](Builder& b, bool last, int) {
                 if (!fl(b) || !last || b.cur.rank() != 2 || b.cur.dim(0) != kBuildBatch) return false;
                 Tensor x = b.cur, t = b.input({kBuildBatch}, DType::int64);
                 b.node("cross_entropy", {x, t});
                 return true;
               }});
  r.push_back({"sdpa", 0.5, [](Builder& b, bool, int) {
                 if (!fl(b) || b.cur.rank() != 4 || b.cur.dim(3) > 256 || b.cur.dim(2) > 4096) return false;
                 Tensor q = b.cur, k = b.like(q), v = b.like(q);
                 b.node("sdpa", {q, k, v});
                 return true;
               }});
}

}  // namespace

const std::vector<FollowRecipe>& follow_recipes() {
  static const std::vector<FollowRecipe> recipes = [] {
    std::vector<FollowRecipe> r;
    add_elementwise_follows(r);
    add_reduction_follows(r);
    add_normalization_follows(r);
    add_matmul_conv_follows(r);
    add_pooling_layout_follows(r);
    add_loss_attention_follows(r);
    return r;
  }();
  return recipes;
}

}  // namespace kforge::compose
