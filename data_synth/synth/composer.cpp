#include "data_synth/synth/composer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>

#include "configs/error.h"
#include "data_synth/synth/composer_builder.h"
#include "data_synth/synth/extra_shapes.h"

namespace kforge {

SynthRng::SynthRng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ULL + 0x6b666f726765ULL) {}

uint64_t SynthRng::next() {  // splitmix64
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double SynthRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
int64_t SynthRng::below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

double estimate_eager_ms(const ResolvedGraph& g, DType dtype, const CostModelConfig& cost) {
  auto peak = cost.peak_tflops.find(dtype_name(dtype));
  double tflops = peak == cost.peak_tflops.end() ? cost.peak_tflops.at("float32") : peak->second;
  double ms = 0;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ResolvedNode& n = g.nodes[ni];
    double bytes = static_cast<double>(numel(n.out.shape)) * dtype_size(n.out.dtype);
    for (const auto& m : n.call.in) bytes += static_cast<double>(numel(m.shape)) * dtype_size(m.dtype);
    for (int p : n.params) bytes += static_cast<double>(numel(g.arguments[p].meta.shape)) * dtype_size(g.arguments[p].meta.dtype);
    double t = std::max(n.flops / (tflops * 1e12), bytes / (cost.bandwidth_gb_s * 1e9));
    ms += t * 1e3 + cost.launch_overhead_us * 1e-3;
  }
  return ms;
}

double footprint_bytes(const ResolvedGraph& g) {
  double b = 0;
  for (const auto& a : g.arguments) b += static_cast<double>(numel(a.meta.shape)) * dtype_size(a.meta.dtype);
  for (const auto& n : g.nodes) b += static_cast<double>(numel(n.out.shape)) * dtype_size(n.out.dtype);
  return b;
}

const std::map<std::string, std::vector<std::string>>& synth_families() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"matmul", {"linear", "linear", "matmul", "bmm", "einsum"}},
      {"convolution", {"conv2d", "conv2d", "conv2d", "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}},
      {"elementwise",
       {"relu", "gelu", "silu", "sigmoid", "tanh", "mish", "hardswish", "softplus", "elu", "leaky_relu", "add", "mul", "maximum", "sub"}},
      {"reduction", {"sum", "mean", "amax", "amin", "logsumexp", "softmax", "log_softmax", "cumsum", "vector_norm", "var", "argmax"}},
      {"normalization", {"layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "l2_normalize"}},
      {"pooling", {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "upsample2d", "max_pool1d"}},
      {"attention", {"sdpa"}},
      {"loss", {"mse_loss", "smooth_l1_loss", "kl_div", "cross_entropy"}},
      {"embedding", {"embedding"}},
  };
  return f;
}

namespace {

using namespace compose;

// The first operator's node over fresh inputs, one function per group of operators; each draws
// from b.rng in the order the operator's shapes and attributes need.
void head_matmul(Builder& b, const std::string& op) {
  DType dt = b.dtype;
  if (op == "linear") {
    int64_t k = b.pick({512, 1024, 2048, 4096, 8192});
    Tensor x = b.rng.chance(0.6) ? b.input({kBuildBatch, k}, dt, {"B", "K"})
                                 : b.input({kBuildBatch, b.pick({64, 128, 256}), k}, dt, {"B", "L", "K"});
    b.node(op, {x}, {{"out_features", str(b.pick({512, 1024, 2048, 4096, 8192}))}, {"bias", b.rng.chance(0.7) ? "true" : "false"}});
  } else if (op == "matmul") {
    int64_t k = b.pick({512, 1024, 2048, 4096}), n = b.pick({512, 1024, 2048, 4096});
    Tensor x = b.rng.chance(0.5) ? b.input({kBuildBatch, k}, dt, {"B", "K"})
                                 : b.input({kBuildBatch, b.pick({64, 128, 256}), k}, dt, {"B", "M", "K"});
    Tensor w = b.input({k, n}, dt, {"K", "N"});
    b.node(op, {x, w});
  } else if (op == "bmm") {
    int64_t m = b.pick({64, 128, 256, 512}), k = b.pick({64, 128, 256, 512}), n = b.pick({64, 128, 256, 512});
    Tensor x = b.input({kBuildBatch, m, k}, dt, {"B", "M", "K"});
    Tensor y = b.input({kBuildBatch, k, n}, dt, {"B", "K", "N"});
    b.node(op, {x, y});
  } else if (op == "einsum") {
    if (b.rng.chance(0.5)) {
      int64_t h = b.pick({4, 8, 16}), l = b.pick({128, 256, 512}), d = b.pick({32, 64, 128});
      Tensor q = b.input({kBuildBatch, h, l, d}, dt, {"B", "G", "L", "E"});
      Tensor k = b.like(q);
      b.node(op, {q, k}, {{"equation", "bhid,bhjd->bhij"}});
    } else {
      int64_t l = b.pick({64, 128, 256}), k = b.pick({256, 512, 1024}), n = b.pick({256, 512, 1024});
      Tensor x = b.input({kBuildBatch, l, k}, dt, {"B", "L", "K"});
      Tensor w = b.input({k, n}, dt, {"K", "N"});
      b.node(op, {x, w}, {{"equation", "bik,kj->bij"}});
    }
  }
}

void head_conv(Builder& b, const std::string& op) {
  DType dt = b.dtype;
  auto conv_attrs = [&](int64_t co, int64_t k, int64_t stride, int64_t pad, int64_t groups) {
    return std::map<std::string, std::string>{{"out_channels", str(co)}, {"kernel_size", str(k)},
                                              {"stride", str(stride)},   {"padding", str(pad)},
                                              {"groups", str(groups)},   {"bias", b.rng.chance(0.7) ? "true" : "false"}};
  };
  if (op == "conv2d") {
    int64_t c = b.pick({3, 16, 32, 64, 128}), h = b.pick({32, 64, 112, 128, 224}), k = b.pick({1, 3, 3, 5, 7});
    Tensor x = b.input({kBuildBatch, c, h, h}, dt, {"B", "C", "H", "W"});
    bool depthwise = c >= 16 && b.rng.chance(0.15);
    int64_t co = depthwise ? c : b.pick({16, 32, 64, 128, 256});
    b.node(op, {x}, conv_attrs(co, k, b.rng.chance(0.7) ? 1 : 2, b.rng.chance(0.7) ? k / 2 : 0, depthwise ? c : 1));
  } else if (op == "conv1d") {
    int64_t c = b.pick({16, 32, 64, 128, 256}), l = b.pick({512, 1024, 4096, 16384}), k = b.pick({3, 5, 7, 9});
    Tensor x = b.input({kBuildBatch, c, l}, dt, {"B", "C", "L"});
    b.node(op, {x}, conv_attrs(b.pick({16, 32, 64, 128, 256}), k, b.rng.chance(0.8) ? 1 : 2, k / 2, 1));
  } else if (op == "conv3d") {
    int64_t c = b.pick({3, 8, 16, 32}), t = b.pick({8, 16}), h = b.pick({16, 32, 64}), k = b.pick({1, 3, 3});
    Tensor x = b.input({kBuildBatch, c, t, h, h}, dt, {"B", "C", "T", "H", "W"});
    b.node(op, {x}, conv_attrs(b.pick({8, 16, 32, 64}), k, 1, k / 2, 1));
  } else if (op == "conv_transpose1d" || op == "conv_transpose2d" || op == "conv_transpose3d") {
    int nd = op[op.size() - 2] - '0';  // conv_transpose2d -> 2
    int64_t c = b.pick({16, 32, 64, 128}), k = b.pick({2, 3, 4}), pad = k >= 3 ? 1 : 0;
    Shape s{kBuildBatch, c};
    std::vector<std::string> sym{"B", "C"};
    const char* names3[] = {"T", "H", "W"};
    for (int i = 0; i < nd; ++i) {
      s.push_back(nd == 1 ? b.pick({256, 1024, 4096}) : nd == 2 ? b.pick({16, 32, 64}) : b.pick({8, 16}));
      sym.push_back(nd == 1 ? "L" : names3[3 - nd + i]);
    }
    if (nd >= 2) s.back() = s[s.size() - 2];
    Tensor x = b.input(s, dt, sym);
    auto a = conv_attrs(b.pick({16, 32, 64}), k, 2, pad, 1);
    a["output_padding"] = str(k % 2 == 1 && b.rng.chance(0.5) ? 1 : 0);
    b.node(op, {x}, a);
  }
}

// Pooling, attention, the losses and the embedding.
void head_pool_attention_loss(Builder& b, const std::string& op, const OpDef& def) {
  DType dt = b.dtype;
  if (op == "max_pool2d" || op == "avg_pool2d" || op == "adaptive_avg_pool2d" || op == "upsample2d") {
    int64_t h = op == "upsample2d" ? b.pick({16, 32, 64}) : b.pick({32, 64, 112, 128});
    Tensor x = b.input({kBuildBatch, b.pick({16, 32, 64, 128}), h, h}, dt, {"B", "C", "H", "W"});
    if (op == "adaptive_avg_pool2d")
      b.node(op, {x}, {{"output_size", str(b.pick({1, 2, 4, 7}))}});
    else if (op == "upsample2d")
      b.node(op, {x}, {{"scale", "2"}, {"mode", b.rng.chance(0.5) ? "nearest" : "bilinear"}});
    else {
      int64_t k = b.pick({2, 3});
      b.node(op, {x}, {{"kernel_size", str(k)}, {"stride", "2"}, {"padding", k == 3 ? "1" : "0"}});
    }
  } else if (op == "max_pool1d") {
    Tensor x = b.input({kBuildBatch, b.pick({16, 32, 64}), b.pick({1024, 4096, 16384})}, dt, {"B", "C", "L"});
    b.node(op, {x}, {{"kernel_size", str(b.pick({2, 3, 4}))}, {"stride", "2"}});
  } else if (op == "sdpa") {
    int64_t h = b.pick({4, 8, 16}), l = b.pick({128, 256, 512, 1024, 2048}), d = b.pick({32, 64, 128});
    Tensor q = b.input({kBuildBatch, h, l, d}, dt, {"B", "G", "L", "E"});
    Tensor k = b.like(q), v = b.like(q);
    b.node(op, {q, k, v}, {{"is_causal", b.rng.chance(0.5) ? "true" : "false"}});
  } else if (op == "cross_entropy") {
    Tensor x = b.input({kBuildBatch, b.pick({100, 1000, 10000, 32000})}, dt, {"B", "V"});
    Tensor t = b.input({kBuildBatch}, DType::int64, {"B"});
    b.node(op, {x, t}, {{"reduction", b.rng.chance(0.8) ? "mean" : "sum"}});
  } else if (def.category == OpCategory::loss) {
    Tensor x = generic_input(b);
    Tensor y = b.like(x);
    std::map<std::string, std::string> a;
    if (op != "kl_div") a["reduction"] = b.rng.chance(0.8) ? "mean" : "sum";
    b.node(op, {x, y}, a);
  } else if (op == "embedding") {
    Tensor idx = b.input({kBuildBatch, b.pick({16, 64, 128, 512})}, DType::int64, {"B", "L"});
    b.node(op, {idx},
           {{"num_embeddings", str(b.pick({1000, 8192, 32000, 50257}))},
            {"dim", str(b.pick({128, 256, 512, 1024}))},
            {"dtype", dtype_name(dt)}});
  }
}

// Elementwise binary operators over a generic tensor and a second operand; the rest over one.
void head_generic(Builder& b, const std::string& op, const OpDef& def) {
  DType dt = b.dtype;
  if (def.category == OpCategory::elementwise_binary) {
    Tensor x = generic_input(b);
    b.cur = x;
    b.node(op, {x, second_operand(b)});
  } else {
    // Unary elementwise, reductions along a dim, normalisations: one generic tensor.
    b.cur = generic_input(b);
    if (def.category == OpCategory::elementwise_unary) {
      b.node(op, {b.cur}, unary_attrs(b, op));
      return;
    }
    int r = b.cur.rank();
    if (op == "group_norm" || op == "batch_norm" || op == "instance_norm") {
      if (r < 3) b.cur = b.input({kBuildBatch, b.pick({16, 32, 64, 128}), b.pick({56, 64, 128}), 64}, dt, {"B", "C", "H", "W"});
      if (op == "group_norm")
        b.node(op, {b.cur}, {{"groups", str(b.pick({2, 4, 8, 16}))}});
      else
        b.node(op, {b.cur});
      return;
    }
    if (op == "layer_norm" || op == "rms_norm") {
      b.node(op, {b.cur}, {{"normalized_dims", r >= 3 && b.rng.chance(0.3) ? "2" : "1"}});
      return;
    }
    std::string dim = str(-1 - b.rng.below(r - 1));
    if (op == "l2_normalize" || op == "softmax" || op == "log_softmax" || op == "cumsum")
      b.node(op, {b.cur}, {{"dim", dim}});
    else
      b.node(op, {b.cur}, {{"dim", dim}, {"keepdim", b.rng.chance(0.3) ? "true" : "false"}});
  }
}

bool is_one_of(const std::string& op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (op == n) return true;
  return false;
}

void head(Builder& b, const std::string& op) {
  const OpDef& def = op_registry().get(op);
  if (is_one_of(op, {"linear", "matmul", "bmm", "einsum"}))
    head_matmul(b, op);
  else if (is_one_of(op, {"conv2d", "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}))
    head_conv(b, op);
  else if (is_one_of(
               op, {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "upsample2d", "max_pool1d", "sdpa", "cross_entropy", "embedding"}) ||
           def.category == OpCategory::loss)
    head_pool_attention_loss(b, op, def);
  else
    head_generic(b, op, def);
}

// The task at small dims: B and the spatial dims shrunk as far as the graph still resolves.
std::optional<DimEnv> check_dims_for(const TaskSpec& t, const CpuCheckConfig& cc) {
  for (int64_t cap : {cc.check_spatial, 2 * cc.check_spatial, 4 * cc.check_spatial, int64_t{0}}) {
    DimEnv d = t.dims;
    d["B"] = std::min(d["B"], cc.check_batch);
    if (cap > 0)
      for (auto& [k, v] : d)
        if (kSpatialDims.count(k)) v = std::min(v, cap);
    try {
      resolve_graph(t.graph, d);
      return d;
    } catch (const Error&) {}
  }
  return std::nullopt;
}

}  // namespace

DrawOutcome Composer::draw(SynthRng& rng, const std::string& id, uint64_t task_seed) const {
  int n_ops = pick_weighted(rng, cfg_.ops_per_task);
  std::string family = pick_weighted(rng, cfg_.families);
  DType dtype = dtype_from_name(pick_weighted(rng, cfg_.dtypes));
  return draw_with(rng, id, task_seed, n_ops, family, dtype);
}

DrawOutcome Composer::draw_with(SynthRng& rng, const std::string& id, uint64_t task_seed, int n_ops, const std::string& family,
                                DType dtype) const {
  DrawOutcome out;
  auto fam = synth_families().find(family);
  KFORGE_CHECK(fam != synth_families().end(), config, "unknown operator family '" << family << "'");
  Builder b{rng, dtype, cfg_};
  try {
    // A loss gives a scalar nothing can follow: in a longer task it comes last, after a first
    // operator from another family.
    bool loss_last = family == "loss" && n_ops >= 2;
    const auto& first_ops = loss_last ? synth_families().at(rng.chance(0.5) ? "matmul" : "elementwise") : fam->second;
    head(b, rng.pick(first_ops));
    while (b.nodes < n_ops) {
      int slots = n_ops - b.nodes;
      const auto& recipes = follow_recipes();
      std::map<size_t, double> weights;
      for (size_t i = 0; i < recipes.size(); ++i) {
        bool is_loss = op_registry().get(recipes[i].op).category == OpCategory::loss;
        if (!loss_last || slots > 1 || is_loss) weights[i] = recipes[i].weight;
      }
      bool placed = false;
      for (int attempt = 0; attempt < 12 && !placed && !weights.empty(); ++attempt) {
        size_t i = pick_weighted(rng, weights);
        weights.erase(i);
        placed = recipes[i].apply(b, slots == 1, slots);
      }
      if (!placed) {
        out.rejected = "compose_failed";
        out.detail = "no operator accepts " + shape_str(b.cur.meta.shape) + " after " + b.ops.back();
        return out;
      }
    }
    b.graph.outputs = {b.cur.name};
  } catch (const Error& e) {
    out.rejected = "compose_failed";
    out.detail = e.what();
    return out;
  }

  SynthCandidate c;
  c.family = family;
  c.ops = b.ops;
  try {
    TaskSpec t = make_task(id, b.graph, b.dims, dtype, task_seed);
    // Size B for a log-uniform target time: the estimate is affine in B.
    double lo = std::log(cfg_.target_ms_low), hi = std::log(cfg_.target_ms_high);
    double target = std::exp(lo + (hi - lo) * rng.uniform());
    double e1 = estimate_eager_ms(t.resolved, dtype, cfg_.cost);
    DimEnv d2 = t.dims;
    d2["B"] = 2 * kBuildBatch;
    double e2 = estimate_eager_ms(resolve_graph(t.graph, d2), dtype, cfg_.cost);
    double slope = std::max((e2 - e1) / kBuildBatch, 1e-12), fixed = e1 - slope * kBuildBatch;
    int64_t batch = static_cast<int64_t>(std::llround((target - fixed) / slope));
    // The footprint is affine in B too: cap B where it would exceed max_task_gb.
    double f1 = footprint_bytes(t.resolved), f2 = footprint_bytes(resolve_graph(t.graph, d2));
    double f_slope = std::max((f2 - f1) / kBuildBatch, 1.0);
    int64_t fits = static_cast<int64_t>(std::floor((cfg_.max_task_gb * 1e9 - (f1 - f_slope * kBuildBatch)) / f_slope));
    batch = std::min(batch, fits);
    batch = std::clamp<int64_t>(batch, 1, cfg_.max_batch);
    t = t.with_dims({{"B", batch}});
    c.est_ms = estimate_eager_ms(t.resolved, dtype, cfg_.cost);
    if (c.est_ms < cfg_.window_ms_low || c.est_ms > cfg_.window_ms_high) {
      out.rejected = "est_runtime";
      out.detail = "estimated " + std::to_string(c.est_ms) + " ms at B=" + std::to_string(batch);
      return out;
    }
    if (footprint_bytes(t.resolved) > cfg_.max_task_gb * 1e9) {
      out.rejected = "memory";
      out.detail = std::to_string(footprint_bytes(t.resolved) / 1e9) + " GB";
      return out;
    }
    t.check_dims = check_dims_for(t, cfg_.cpu_check);
    t.extra_dims = draw_extra_dims(t, cfg_.extra_shapes);
    t.provenance.generator = "kforge-synth 1";
    std::string chain;
    for (const auto& o : c.ops) chain += (chain.empty() ? "" : " -> ") + o;
    t.description = "synthesised: " + chain;
    c.task = std::move(t);
  } catch (const Error& e) {
    out.rejected = "compose_failed";
    out.detail = e.what();
    return out;
  }
  out.candidate = std::move(c);
  return out;
}

}  // namespace kforge
