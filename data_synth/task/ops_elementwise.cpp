// Elementwise operators: unary activations and arithmetic, and broadcasting binary arithmetic.
#include "data_synth/task/op_registry.h"

namespace kforge {

namespace {

TensorMeta same_as_input(const OpCall& c) {
  require_float(c);
  return c.in[0];
}

double per_output_element(const OpCall&, const TensorMeta& out) { return static_cast<double>(numel(out.shape)); }

OpDef unary(const std::string& name, const std::string& summary, std::function<std::string(const OpCall&, const std::string& x)> expr,
            std::vector<AttrSpec> attrs = {}, std::map<std::string, std::string> example_attrs = {}) {
  OpDef d;
  d.name = name;
  d.category = OpCategory::elementwise_unary;
  d.summary = summary;
  d.attrs = std::move(attrs);
  d.infer = same_as_input;
  d.flops = per_output_element;
  d.py_expr = [expr](const OpCall& c, const std::vector<std::string>& a, const std::string&) { return expr(c, a[0]); };
  d.example = {{{4, 33}}, std::move(example_attrs), ""};
  d.bad_example = {{{4, 33}}, d.example.attrs, "floating", DType::int64};
  return d;
}

OpDef binary(const std::string& name, const std::string& summary,
             std::function<std::string(const std::string& a, const std::string& b)> expr) {
  OpDef d;
  d.name = name;
  d.category = OpCategory::elementwise_binary;
  d.summary = summary;
  d.min_inputs = d.max_inputs = 2;
  d.infer = [](const OpCall& c) {
    require_float(c);
    if (c.in[0].dtype != c.in[1].dtype)
      refuse(std::string("inputs have different dtypes (") + dtype_name(c.in[0].dtype) + " and " + dtype_name(c.in[1].dtype) + ")");
    return TensorMeta{broadcast_shapes(c.shape(0), c.shape(1)), c.dtype()};
  };
  d.flops = per_output_element;
  d.py_expr = [expr](const OpCall&, const std::vector<std::string>& a, const std::string&) { return expr(a[0], a[1]); };
  d.example = {{{4, 33}, {33}}, {}, ""};
  d.bad_example = {{{4, 33}, {4, 32}}, {}, "do not broadcast"};
  return d;
}

}  // namespace

namespace {

// Unary elementwise operators.
void register_unary_ops(OpRegistry& r) {
  auto call = [](const std::string& fn) { return [fn](const OpCall&, const std::string& x) { return fn + "(" + x + ")"; }; };
  r.add(unary("relu", "max(x, 0)", call("torch.relu")));
  r.add(unary(
      "leaky_relu", "x if x > 0 else slope * x",
      [](const OpCall& c, const std::string& x) { return "F.leaky_relu(" + x + ", negative_slope=" + c.attr("negative_slope").py + ")"; },
      {{"negative_slope", AttrKind::real, "0.01", "slope for negative inputs"}}, {{"negative_slope", "0.2"}}));
  r.add(unary("gelu", "Gaussian error linear unit (exact or tanh approximation)",
              [](const OpCall& c, const std::string& x) {
                return c.s("approximate") == "none" ? "F.gelu(" + x + ")" : "F.gelu(" + x + ", approximate='tanh')";
              },
              {{"approximate", AttrKind::text, "none", "none or tanh", {"none", "tanh"}}}));
  r.add(unary("silu", "x * sigmoid(x)", call("F.silu")));
  r.add(unary("sigmoid", "1 / (1 + exp(-x))", call("torch.sigmoid")));
  r.add(unary("tanh", "hyperbolic tangent", call("torch.tanh")));
  r.add(unary("exp", "e^x", call("torch.exp")));
  r.add(unary("abs", "|x|", call("torch.abs")));
  {
    OpDef d = unary("clamp", "min(max(x, min), max)",
                    [](const OpCall& c, const std::string& x) {
                      return "torch.clamp(" + x + ", min=" + c.attr("min").py + ", max=" + c.attr("max").py + ")";
                    },
                    {{"min", AttrKind::real, "-1.0", "lower bound"}, {"max", AttrKind::real, "1.0", "upper bound"}},
                    {{"min", "-0.5"}, {"max", "0.75"}});
    d.infer = [](const OpCall& c) {
      require_float(c);
      if (!(c.f("min") < c.f("max"))) refuse("clamp needs min < max");
      return c.in[0];
    };
    d.bad_example = {{{4, 33}}, {{"min", "1.0"}, {"max", "0.0"}}, "min < max"};
    r.add(d);
  }
  r.add(unary("scale", "x * alpha", [](const OpCall& c, const std::string& x) { return x + " * " + c.attr("alpha").py; },
              {{"alpha", AttrKind::real, "2.0", "the factor"}}, {{"alpha", "0.125"}}));

  r.add(unary("mish", "x * tanh(softplus(x))", call("F.mish")));
  r.add(unary("hardswish", "x * relu6(x + 3) / 6", call("F.hardswish")));
  r.add(unary("hardsigmoid", "relu6(x + 3) / 6", call("F.hardsigmoid")));
  r.add(unary("softplus", "log(1 + exp(beta * x)) / beta (linear above threshold)",
              [](const OpCall& c, const std::string& x) {
                return "F.softplus(" + x + ", beta=" + c.attr("beta").py + ", threshold=" + c.attr("threshold").py + ")";
              },
              {{"beta", AttrKind::real, "1.0", "sharpness"}, {"threshold", AttrKind::real, "20.0", "linear above beta * x > threshold"}},
              {{"beta", "2.0"}}));
  r.add(unary("elu", "x if x > 0 else alpha * (exp(x) - 1)",
              [](const OpCall& c, const std::string& x) { return "F.elu(" + x + ", alpha=" + c.attr("alpha").py + ")"; },
              {{"alpha", AttrKind::real, "1.0", "scale of the negative part"}}, {{"alpha", "0.5"}}));
  r.add(unary("selu", "scaled exponential linear unit", call("torch.selu")));
  r.add(unary("softsign", "x / (1 + |x|)", call("F.softsign")));
  {
    OpDef d = unary("hardtanh", "clamp to [min_val, max_val] (F.hardtanh)",
                    [](const OpCall& c, const std::string& x) {
                      return "F.hardtanh(" + x + ", min_val=" + c.attr("min_val").py + ", max_val=" + c.attr("max_val").py + ")";
                    },
                    {{"min_val", AttrKind::real, "-1.0", "lower bound"}, {"max_val", AttrKind::real, "1.0", "upper bound"}},
                    {{"min_val", "-0.25"}, {"max_val", "2.0"}});
    d.infer = [](const OpCall& c) {
      require_float(c);
      if (!(c.f("min_val") < c.f("max_val"))) refuse("hardtanh needs min_val < max_val");
      return c.in[0];
    };
    d.bad_example = {{{4, 33}}, {{"min_val", "1.0"}, {"max_val", "-1.0"}}, "min_val < max_val"};
    r.add(d);
  }
  r.add(unary("square", "x * x", call("torch.square")));
  r.add(unary("sin", "sine", call("torch.sin")));
  {
    // The rendered call passes training=False: the function must not depend on the module's mode.
    OpDef d = unary("dropout", "dropout in evaluation mode: the identity",
                    [](const OpCall& c, const std::string& x) { return "F.dropout(" + x + ", p=" + c.attr("p").py + ", training=False)"; },
                    {{"p", AttrKind::real, "0.1", "drop probability (unused in evaluation)"}}, {{"p", "0.3"}});
    d.flops = [](const OpCall&, const TensorMeta&) { return 0.0; };
    d.infer = [](const OpCall& c) {
      require_float(c);
      if (!(c.f("p") >= 0 && c.f("p") < 1)) refuse("dropout needs 0 <= p < 1");
      return c.in[0];
    };
    d.bad_example = {{{4, 33}}, {{"p", "1.5"}}, "0 <= p < 1"};
    r.add(d);
  }
}

// Binary elementwise operators and where.
void register_binary_ops(OpRegistry& r) {
  r.add(binary("add", "a + b (broadcasting)", [](const std::string& a, const std::string& b) { return a + " + " + b; }));
  r.add(binary("sub", "a - b (broadcasting)", [](const std::string& a, const std::string& b) { return a + " - " + b; }));
  r.add(binary("mul", "a * b (broadcasting)", [](const std::string& a, const std::string& b) { return a + " * " + b; }));
  r.add(binary("maximum", "elementwise max (broadcasting)",
               [](const std::string& a, const std::string& b) { return "torch.maximum(" + a + ", " + b + ")"; }));
  r.add(binary("minimum", "elementwise min (broadcasting)",
               [](const std::string& a, const std::string& b) { return "torch.minimum(" + a + ", " + b + ")"; }));
  {
    OpDef d = binary("gt", "a > b (broadcasting), a boolean mask",
                     [](const std::string& a, const std::string& b) { return "torch.gt(" + a + ", " + b + ")"; });
    auto base = d.infer;
    d.infer = [base](const OpCall& c) { return TensorMeta{base(c).shape, DType::boolean}; };
    r.add(d);
  }
  {
    OpDef d;
    d.name = "where";
    d.category = OpCategory::elementwise_binary;
    d.summary = "cond ? a : b (broadcasting; cond is boolean)";
    d.min_inputs = d.max_inputs = 3;
    d.infer = [](const OpCall& c) {
      if (c.in[0].dtype != DType::boolean) refuse(std::string("where's condition must be boolean, got ") + dtype_name(c.in[0].dtype));
      for (size_t i = 1; i < 3; ++i)
        if (!dtype_is_float(c.in[i].dtype)) refuse(std::string("where expects floating values, got ") + dtype_name(c.in[i].dtype));
      if (c.in[1].dtype != c.in[2].dtype) refuse("where's values have different dtypes");
      return TensorMeta{broadcast_shapes(c.shape(0), broadcast_shapes(c.shape(1), c.shape(2))), c.in[1].dtype};
    };
    d.flops = per_output_element;
    d.py_expr = [](const OpCall&, const std::vector<std::string>& a, const std::string&) {
      return "torch.where(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
    };
    d.example = {{{4, 33}, {4, 33}, {33}}, {}, ""};
    d.example.input_dtypes = {DType::boolean};
    d.bad_example = {{{4, 33}, {4, 33}, {4, 33}}, {}, "must be boolean"};
    r.add(d);
  }
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  register_unary_ops(r);
  register_binary_ops(r);
}

}  // namespace kforge
