#include "data_synth/task/op_graph.h"

#include <algorithm>
#include <set>

#include "configs/error.h"

namespace kforge {

const char* arg_role_name(ArgRole r) {
  switch (r) {
    case ArgRole::input:
      return "input";
    case ArgRole::parameter:
      return "parameter";
    case ArgRole::buffer:
      return "buffer";
  }
  return "?";
}

bool is_reserved_name(const std::string& name) {
  static const std::set<std::string> reserved = {// Python keywords and names the rendered program uses.
                                                 "False",   "None",     "True",    "and",      "as",       "assert",     "async",
                                                 "await",   "break",    "class",   "continue", "def",      "del",        "elif",
                                                 "else",    "except",   "finally", "for",      "from",     "global",     "if",
                                                 "import",  "in",       "is",      "lambda",   "nonlocal", "not",        "or",
                                                 "pass",    "raise",    "return",  "try",      "while",    "with",       "yield",
                                                 "self",    "torch",    "nn",      "F",        "Model",    "get_inputs", "get_init_inputs",
                                                 "super",   "min",      "max",     "print",    "len",      "range",      "list",
                                                 "tuple",   "int",      "float",   "type",     "object",   "input",      "id",
                                                 "forward", "training", "weight",  "bias"};
  return reserved.count(name) > 0;
}

namespace {

std::string node_where(const GraphNode& n, size_t index) {
  std::string w = n.origin.empty() ? "" : n.origin + ": ";
  return w + "node " + std::to_string(index) + " '" + n.id + "' (" + n.op + ")";
}

void check_name(const std::string& name, const std::string& what) {
  KFORGE_CHECK(is_identifier(name), spec, what << " '" << name << "' is not a valid identifier");
  KFORGE_CHECK(!is_reserved_name(name), spec, what << " '" << name << "' is a reserved name");
}

// Every input and node must contribute to an output: a dead branch is work a candidate may skip.
void check_every_part_reaches_an_output(const OpGraph& graph, const ResolvedGraph& g) {
  std::vector<bool> node_live(g.nodes.size(), false), input_live(graph.inputs.size(), false);
  for (const auto& r : g.outputs) node_live[r.index] = true;
  for (int ni = static_cast<int>(g.nodes.size()) - 1; ni >= 0; --ni) {
    if (!node_live[ni]) continue;
    for (const auto& r : g.nodes[ni].inputs) (r.is_node ? node_live[r.index] : input_live[r.index]) = true;
  }
  for (size_t ni = 0; ni < g.nodes.size(); ++ni)
    KFORGE_CHECK(node_live[ni], spec, node_where(graph.nodes[ni], ni) << ": its result reaches no output");
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    KFORGE_CHECK(input_live[i], spec, "input '" << graph.inputs[i].name << "' is not used by any output");
}

}  // namespace

ResolvedGraph resolve_graph(const OpGraph& graph, const DimEnv& dims) {
  ResolvedGraph g;
  KFORGE_CHECK(!graph.inputs.empty(), spec, "the graph has no inputs");
  KFORGE_CHECK(!graph.nodes.empty(), spec, "the graph has no operators");
  KFORGE_CHECK(static_cast<int>(graph.nodes.size()) <= kMaxGraphOps, spec,
               "the graph has " << graph.nodes.size() << " operators; a task composes 1 to " << kMaxGraphOps);
  KFORGE_CHECK(!graph.outputs.empty(), spec, "the graph has no outputs");

  std::map<std::string, TensorRef> names;
  for (const auto& [d, v] : dims) {
    check_name(d, "dimension");
    names[d] = TensorRef{};  // reserve: dims share the Python namespace
  }
  std::set<std::string> dim_names;
  for (const auto& [d, v] : dims) dim_names.insert(d);

  std::vector<TensorMeta> input_metas;
  const bool empty_dims = std::any_of(dims.begin(), dims.end(), [](const auto& d) { return d.second == 0; });
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const GraphInput& in = graph.inputs[i];
    check_name(in.name, "input");
    KFORGE_CHECK(!names.count(in.name), spec, "input name '" << in.name << "' is used twice (or is a dimension)");
    names[in.name] = TensorRef{false, static_cast<int>(i)};
    Shape s;
    for (const DimExpr& e : in.shape) {
      int64_t v = e.eval(dims);
      // 0 only where a dim is 0 (an extra shape's empty dimension): at a task's own dims an input
      // dimension of 0 is a mistake of its expressions.
      KFORGE_CHECK(v >= (empty_dims ? 0 : 1), spec, "input '" << in.name << "': dimension " << e.str() << " = " << v << " must be >= 1");
      s.push_back(v);
    }
    try {
      tensor_bytes(s, in.dtype);
    } catch (const Error& e) {
      throw Error(ErrorKind::spec, "input '" + in.name + "': " + e.what());
    }
    input_metas.push_back({s, in.dtype});
    g.arguments.push_back(
        {in.name, ArgRole::input, {s, in.dtype}, dtype_is_float(in.dtype) ? Draw::normal(0, 1) : Draw::randint(0, 2), true});
  }

  auto meta_of = [&](const TensorRef& r) { return r.is_node ? g.nodes[r.index].out : input_metas[r.index]; };
  const OpRegistry& reg = op_registry();
  for (size_t ni = 0; ni < graph.nodes.size(); ++ni) {
    const GraphNode& n = graph.nodes[ni];
    std::string where = node_where(n, ni);
    try {
      check_name(n.id, "node id");
      KFORGE_CHECK(!names.count(n.id), spec, "id '" << n.id << "' is already used by an input, node or dimension");
      const OpDef& op = reg.get(n.op);
      int arity = static_cast<int>(n.inputs.size());
      if (arity < op.min_inputs || arity > op.max_inputs) {
        KFORGE_FAIL(spec,
                    op.name << " takes "
                            << (op.min_inputs == op.max_inputs ? std::to_string(op.min_inputs)
                                                               : std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs))
                            << " input(s), got " << arity);
      }
      ResolvedNode rn;
      rn.call.op = &op;
      rn.call.id = n.id;
      for (const auto& src : n.inputs) {
        auto it = names.find(src);
        bool defined_later = false;
        for (size_t later = ni; later < graph.nodes.size(); ++later) defined_later |= graph.nodes[later].id == src;
        KFORGE_CHECK(it != names.end() && !dim_names.count(src), spec,
                     "input '" << src << "' "
                               << (defined_later ? "is defined at or after this node (list nodes in execution order)"
                                                 : "is not a graph input or an earlier node"));
        rn.inputs.push_back(it->second);
        rn.call.in.push_back(meta_of(it->second));
      }
      rn.call.attrs = resolve_attrs(op, n.attrs, dims);
      rn.out = op.infer(rn.call);
      tensor_bytes(rn.out.shape, rn.out.dtype);  // refuses an output size that wraps around
      rn.flops = op.flops(rn.call, rn.out);
      if (op.params) {
        for (const ParamDecl& p : op.params(rn.call)) {
          rn.params.push_back(static_cast<int>(g.arguments.size()));
          g.arguments.push_back({n.id + "." + p.name, p.buffer ? ArgRole::buffer : ArgRole::parameter, {p.shape, p.dtype}, p.draw, p.used});
        }
      }
      // Graph inputs an operator reads as indices are drawn in its range.
      if (op.input_draw)
        for (size_t k = 0; k < rn.inputs.size(); ++k)
          if (!rn.inputs[k].is_node)
            if (auto d = op.input_draw(rn.call, k)) g.arguments[rn.inputs[k].index].draw = *d;
      names[n.id] = TensorRef{true, static_cast<int>(ni)};
      g.flops += rn.flops;
      g.nodes.push_back(std::move(rn));
    } catch (const Error& e) {
      throw Error(e.kind() == ErrorKind::shape ? ErrorKind::shape : ErrorKind::spec, where + ": " + e.what());
    }
  }

  std::set<std::string> seen_outputs;
  for (const auto& o : graph.outputs) {
    auto it = names.find(o);
    KFORGE_CHECK(it != names.end() && !dim_names.count(o), spec, "output '" << o << "' is not a node of the graph");
    KFORGE_CHECK(it->second.is_node, spec, "output '" << o << "' is a graph input; outputs must be computed by an operator");
    KFORGE_CHECK(seen_outputs.insert(o).second, spec, "output '" << o << "' is listed twice");
    g.outputs.push_back(it->second);
    g.output_metas.push_back(g.nodes[it->second.index].out);
  }

  check_every_part_reaches_an_output(graph, g);

  // tensor_bytes refuses a size that wraps around; every tensor is counted, used or not (all are allocated).
  for (const auto& a : g.arguments) {
    try {
      int64_t bytes = tensor_bytes(a.meta.shape, a.meta.dtype);
      if (a.used) g.min_bytes += static_cast<double>(bytes);
    } catch (const Error& e) {
      throw Error(ErrorKind::spec, "argument '" + a.name + "': " + e.what());
    }
  }
  for (const auto& m : g.output_metas) g.min_bytes += static_cast<double>(tensor_bytes(m.shape, m.dtype));
  return g;
}

}  // namespace kforge
