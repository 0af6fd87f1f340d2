#include "data_synth/op_exec.h"

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

const std::map<std::string, Exec>& executors() {
  static const std::map<std::string, Exec> table = {
      // elementwise unary
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
      // reductions
      {"sum", [](const OpCall& c, const T& x, const T&) { return at::sum(x[0], {c.i("dim")}, c.b("keepdim")); }},
      {"mean", [](const OpCall& c, const T& x, const T&) { return at::mean(x[0], {c.i("dim")}, c.b("keepdim")); }},
      {"amax", [](const OpCall& c, const T& x, const T&) { return at::amax(x[0], {c.i("dim")}, c.b("keepdim")); }},
      {"logsumexp", [](const OpCall& c, const T& x, const T&) { return at::logsumexp(x[0], {c.i("dim")}, c.b("keepdim")); }},
      {"softmax", [](const OpCall& c, const T& x, const T&) { return at::softmax(x[0], c.i("dim")); }},
      {"log_softmax", [](const OpCall& c, const T& x, const T&) { return at::log_softmax(x[0], c.i("dim")); }},
      {"cumsum", [](const OpCall& c, const T& x, const T&) { return at::cumsum(x[0], c.i("dim")); }},
      // normalisations
      {"layer_norm",
       [](const OpCall& c, const T& x, const T& p) {
         return at::layer_norm(x[0], trailing(x[0], c.i("normalized_dims")), param_or_undefined(p, 0),
                               param_or_undefined(p, 1), c.f("eps"));
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
      // matrix products and convolution
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
  };
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
