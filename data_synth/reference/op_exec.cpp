#include "data_synth/reference/op_exec.h"

#include <functional>
#include <map>

#include "configs/error.h"

namespace kforge {

namespace {

using Exec = std::function<at::Tensor(const OpCall&, const std::vector<at::Tensor>&, const std::vector<at::Tensor>&)>;
using T = std::vector<at::Tensor>;

at::Tensor param_or_undefined(const T& p, size_t i) { return i < p.size() ? p[i] : at::Tensor(); }

std::vector<int64_t> trailing(const at::Tensor& x, int64_t k) {
  auto s = x.sizes();
  return std::vector<int64_t>(s.end() - k, s.end());
}

void add_elementwise_executors(std::map<std::string, Exec>& m) {
  m.insert({// elementwise unary
            {"relu", [](const OpCall&, const T& x, const T&) { return at::relu(x[0]); }},
            {"leaky_relu", [](const OpCall& c, const T& x, const T&) { return at::leaky_relu(x[0], c.f("negative_slope")); }},
            {"gelu", [](const OpCall& c, const T& x, const T&) { return at::gelu(x[0], c.s("approximate")); }},
            {"silu", [](const OpCall&, const T& x, const T&) { return at::silu(x[0]); }},
            {"sigmoid", [](const OpCall&, const T& x, const T&) { return at::sigmoid(x[0]); }},
            {"tanh", [](const OpCall&, const T& x, const T&) { return at::tanh(x[0]); }},
            {"exp", [](const OpCall&, const T& x, const T&) { return at::exp(x[0]); }},
            {"abs", [](const OpCall&, const T& x, const T&) { return at::abs(x[0]); }},
            {"clamp", [](const OpCall& c, const T& x, const T&) { return at::clamp(x[0], c.f("min"), c.f("max")); }},
            {"scale", [](const OpCall& c, const T& x, const T&) { return at::mul(x[0], at::Scalar(c.f("alpha"))); }},
            // elementwise binary
            {"add", [](const OpCall&, const T& x, const T&) { return at::add(x[0], x[1]); }},
            {"sub", [](const OpCall&, const T& x, const T&) { return at::sub(x[0], x[1]); }},
            {"mul", [](const OpCall&, const T& x, const T&) { return at::mul(x[0], x[1]); }},
            {"maximum", [](const OpCall&, const T& x, const T&) { return at::maximum(x[0], x[1]); }},
            {"minimum", [](const OpCall&, const T& x, const T&) { return at::minimum(x[0], x[1]); }},
            // more activations
            {"mish", [](const OpCall&, const T& x, const T&) { return at::mish(x[0]); }},
            {"hardswish", [](const OpCall&, const T& x, const T&) { return at::hardswish(x[0]); }},
            {"hardsigmoid", [](const OpCall&, const T& x, const T&) { return at::hardsigmoid(x[0]); }},
            {"softplus", [](const OpCall& c, const T& x, const T&) { return at::softplus(x[0], c.f("beta"), c.f("threshold")); }},
            {"elu", [](const OpCall& c, const T& x, const T&) { return at::elu(x[0], c.f("alpha")); }},
            {"selu", [](const OpCall&, const T& x, const T&) { return at::selu(x[0]); }},
            // F.softsign is `input / (input.abs() + 1)` in Python: the same two ATen calls.
            {"softsign", [](const OpCall&, const T& x, const T&) { return at::div(x[0], at::add(at::abs(x[0]), 1)); }},
            {"hardtanh", [](const OpCall& c, const T& x, const T&) { return at::hardtanh(x[0], c.f("min_val"), c.f("max_val")); }},
            {"square", [](const OpCall&, const T& x, const T&) { return at::square(x[0]); }},
            {"sin", [](const OpCall&, const T& x, const T&) { return at::sin(x[0]); }},
            {"dropout", [](const OpCall& c, const T& x, const T&) { return at::dropout(x[0], c.f("p"), /*train=*/false); }},
            {"gt", [](const OpCall&, const T& x, const T&) { return at::gt(x[0], x[1]); }},
            {"where", [](const OpCall&, const T& x, const T&) { return at::where(x[0], x[1], x[2]); }}});
}

void add_reductions_executors(std::map<std::string, Exec>& m) {
  m.insert({// reductions
            {"sum", [](const OpCall& c, const T& x, const T&) { return at::sum(x[0], {c.i("dim")}, c.b("keepdim")); }},
            {"mean", [](const OpCall& c, const T& x, const T&) { return at::mean(x[0], {c.i("dim")}, c.b("keepdim")); }},
            {"amax", [](const OpCall& c, const T& x, const T&) { return at::amax(x[0], {c.i("dim")}, c.b("keepdim")); }},
            {"logsumexp", [](const OpCall& c, const T& x, const T&) { return at::logsumexp(x[0], {c.i("dim")}, c.b("keepdim")); }},
            {"softmax", [](const OpCall& c, const T& x, const T&) { return at::softmax(x[0], c.i("dim")); }},
            {"log_softmax", [](const OpCall& c, const T& x, const T&) { return at::log_softmax(x[0], c.i("dim")); }},
            {"cumsum", [](const OpCall& c, const T& x, const T&) { return at::cumsum(x[0], c.i("dim")); }},
            // more reductions
            {"amin", [](const OpCall& c, const T& x, const T&) { return at::amin(x[0], {c.i("dim")}, c.b("keepdim")); }},
            {"prod", [](const OpCall& c, const T& x, const T&) { return at::prod(x[0], c.i("dim"), c.b("keepdim")); }},
            {"vector_norm", [](const OpCall& c, const T& x,
                               const T&) { return at::linalg_vector_norm(x[0], 2, at::IntArrayRef{c.i("dim")}, c.b("keepdim")); }},
            {"var", [](const OpCall& c, const T& x,
                       const T&) { return at::var(x[0], at::IntArrayRef{c.i("dim")}, /*unbiased=*/true, c.b("keepdim")); }},
            {"argmax", [](const OpCall& c, const T& x, const T&) { return at::argmax(x[0], c.i("dim"), c.b("keepdim")); }},
            {"cumprod", [](const OpCall& c, const T& x, const T&) { return at::cumprod(x[0], c.i("dim")); }}});
}

void add_normalizations_executors(std::map<std::string, Exec>& m) {
  m.insert({// normalisations
            {"layer_norm",
             [](const OpCall& c, const T& x, const T& p) {
               return at::layer_norm(x[0], trailing(x[0], c.i("normalized_dims")), param_or_undefined(p, 0), param_or_undefined(p, 1),
                                     c.f("eps"));
             }},
            {"rms_norm",
             [](const OpCall& c, const T& x, const T& p) {
               return at::rms_norm(x[0], trailing(x[0], c.i("normalized_dims")), param_or_undefined(p, 0), c.f("eps"));
             }},
            {"group_norm",
             [](const OpCall& c, const T& x, const T& p) {
               return at::group_norm(x[0], c.i("groups"), param_or_undefined(p, 0), param_or_undefined(p, 1), c.f("eps"));
             }},
            {"batch_norm",
             [](const OpCall& c, const T& x, const T& p) {
               // F.batch_norm(training=False) -> torch.batch_norm(..., cudnn_enabled=torch.backends.cudnn.enabled)
               return at::batch_norm(x[0], p[0], p[1], p[2], p[3], /*training=*/false, /*momentum=*/0.1, c.f("eps"),
                                     at::globalContext().userEnabledCuDNN());
             }},
            // more normalisations
            {"instance_norm",
             [](const OpCall& c, const T& x, const T& p) {
               return at::instance_norm(x[0], param_or_undefined(p, 0), param_or_undefined(p, 1), {}, {}, /*use_input_stats=*/true,
                                        /*momentum=*/0.1, c.f("eps"), at::globalContext().userEnabledCuDNN());
             }},
            {"l2_normalize", [](const OpCall& c, const T& x, const T&) {
               // F.normalize: input / input.norm(2, dim, keepdim=True).clamp_min(eps).expand_as(input)
               at::Tensor n = at::linalg_vector_norm(x[0], 2, at::IntArrayRef{c.i("dim")}, true).clamp_min(c.f("eps"));
               return at::div(x[0], n.expand_as(x[0]));
             }}});
}

void add_products_layout_executors(std::map<std::string, Exec>& m) {
  m.insert({// matrix products and convolution
            {"matmul", [](const OpCall&, const T& x, const T&) { return at::matmul(x[0], x[1]); }},
            {"bmm", [](const OpCall&, const T& x, const T&) { return at::bmm(x[0], x[1]); }},
            {"linear", [](const OpCall&, const T& x, const T& p) { return at::linear(x[0], p[0], param_or_undefined(p, 1)); }},
            {"conv2d",
             [](const OpCall& c, const T& x, const T& p) {
               int64_t s = c.i("stride"), pd = c.i("padding"), d = c.i("dilation");
               return at::conv2d(x[0], p[0], param_or_undefined(p, 1), {s, s}, {pd, pd}, {d, d}, c.i("groups"));
             }},
            // layout
            {"transpose", [](const OpCall& c, const T& x, const T&) { return at::transpose(x[0], c.i("dim0"), c.i("dim1")); }},
            {"permute", [](const OpCall& c, const T& x, const T&) { return x[0].permute(c.ints("dims")); }},
            {"reshape", [](const OpCall& c, const T& x, const T&) { return x[0].reshape(c.ints("shape")); }},
            {"concat", [](const OpCall& c, const T& x, const T&) { return at::cat(x, c.i("dim")); }},
            {"flatten", [](const OpCall& c, const T& x, const T&) { return at::flatten(x[0], c.i("start_dim"), c.i("end_dim")); }},
            {"unsqueeze", [](const OpCall& c, const T& x, const T&) { return at::unsqueeze(x[0], c.i("dim")); }},
            // more products and convolutions
            {"einsum", [](const OpCall& c, const T& x, const T&) { return at::einsum(c.s("equation"), x); }},
            {"conv1d",
             [](const OpCall& c, const T& x, const T& p) {
               return at::conv1d(x[0], p[0], param_or_undefined(p, 1), {c.i("stride")}, {c.i("padding")}, {c.i("dilation")}, c.i("groups"));
             }},
            {"conv3d",
             [](const OpCall& c, const T& x, const T& p) {
               int64_t s = c.i("stride"), pd = c.i("padding"), d = c.i("dilation");
               return at::conv3d(x[0], p[0], param_or_undefined(p, 1), {s, s, s}, {pd, pd, pd}, {d, d, d}, c.i("groups"));
             }},
            {"conv_transpose1d",
             [](const OpCall& c, const T& x, const T& p) {
               return at::conv_transpose1d(x[0], p[0], param_or_undefined(p, 1), {c.i("stride")}, {c.i("padding")}, {c.i("output_padding")},
                                           c.i("groups"), {c.i("dilation")});
             }},
            {"conv_transpose2d",
             [](const OpCall& c, const T& x, const T& p) {
               int64_t s = c.i("stride"), pd = c.i("padding"), d = c.i("dilation"), op = c.i("output_padding");
               return at::conv_transpose2d(x[0], p[0], param_or_undefined(p, 1), {s, s}, {pd, pd}, {op, op}, c.i("groups"), {d, d});
             }},
            {"conv_transpose3d", [](const OpCall& c, const T& x, const T& p) {
               int64_t s = c.i("stride"), pd = c.i("padding"), d = c.i("dilation"), op = c.i("output_padding");
               return at::conv_transpose3d(x[0], p[0], param_or_undefined(p, 1), {s, s, s}, {pd, pd, pd}, {op, op, op}, c.i("groups"),
                                           {d, d, d});
             }}});
}

void add_pooling_attention_indexing_executors(std::map<std::string, Exec>& m) {
  m.insert(
      {// pooling and upsampling
       {"max_pool1d",
        [](const OpCall& c, const T& x, const T&) {
          int64_t k = c.i("kernel_size"), s = c.i("stride") == 0 ? k : c.i("stride");
          return at::max_pool1d(x[0], {k}, {s}, {c.i("padding")}, {1}, false);
        }},
       {"max_pool2d",
        [](const OpCall& c, const T& x, const T&) {
          int64_t k = c.i("kernel_size"), s = c.i("stride") == 0 ? k : c.i("stride"), p = c.i("padding");
          return at::max_pool2d(x[0], {k, k}, {s, s}, {p, p}, {1, 1}, false);
        }},
       {"avg_pool2d",
        [](const OpCall& c, const T& x, const T&) {
          int64_t k = c.i("kernel_size"), s = c.i("stride") == 0 ? k : c.i("stride"), p = c.i("padding");
          return at::avg_pool2d(x[0], {k, k}, {s, s}, {p, p}, false, true, std::nullopt);
        }},
       {"adaptive_avg_pool2d",
        [](const OpCall& c, const T& x, const T&) {
          return at::adaptive_avg_pool2d(x[0], {c.i("output_size"), c.i("output_size")});
        }},
       {"upsample2d",
        [](const OpCall& c, const T& x, const T&) {
          // F.interpolate(scale_factor=f) passes no output size and the scale factors as doubles.
          double f = static_cast<double>(c.i("scale"));
          std::vector<double> scales{f, f};
          if (c.s("mode") == "bilinear") return at::upsample_bilinear2d(x[0], std::nullopt, false, at::ArrayRef<double>(scales));
          return at::upsample_nearest2d(x[0], std::nullopt, at::ArrayRef<double>(scales));
        }},
       // attention and losses (reduction: at::Reduction::Mean = 1, Sum = 2)
       {"sdpa", [](const OpCall& c, const T& x,
                   const T&) { return at::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, c.b("is_causal")); }},
       {"cross_entropy", [](const OpCall& c, const T& x,
                            const T&) { return at::cross_entropy_loss(x[0], x[1], {}, c.s("reduction") == "sum" ? 2 : 1, -100, 0.0); }},
       {"mse_loss", [](const OpCall& c, const T& x, const T&) { return at::mse_loss(x[0], x[1], c.s("reduction") == "sum" ? 2 : 1); }},
       {"smooth_l1_loss", [](const OpCall& c, const T& x,
                             const T&) { return at::smooth_l1_loss(x[0], x[1], c.s("reduction") == "sum" ? 2 : 1, c.f("beta")); }},
       {"kl_div",
        [](const OpCall&, const T& x, const T&) {
          // F.kl_div(reduction='batchmean'): the sum divided by the batch size, in Python.
          return at::div(at::kl_div(x[0], x[1], /*Sum=*/2, /*log_target=*/true), x[0].size(0));
        }},
       // indexing
       {"embedding", [](const OpCall&, const T& x, const T& p) { return at::embedding(p[0], x[0]); }},
       {"index_add", [](const OpCall&, const T& x, const T&) { return at::index_add(x[0], 0, x[1], x[2]); }}});
}

const std::map<std::string, Exec>& executors() {
  static const std::map<std::string, Exec> table = [] {
    std::map<std::string, Exec> m;
    add_elementwise_executors(m);
    add_reductions_executors(m);
    add_normalizations_executors(m);
    add_products_layout_executors(m);
    add_pooling_attention_indexing_executors(m);
    return m;
  }();
  return table;
}

}  // namespace

bool has_executor(const std::string& op) { return executors().count(op) > 0; }

at::Tensor execute_op(const OpCall& call, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& params) {
  auto it = executors().find(call.op->name);
  KFORGE_CHECK(it != executors().end(), unsupported, "operator " << call.op->name << " has no libtorch executor");
  return it->second(call, inputs, params);
}

}  // namespace kforge
