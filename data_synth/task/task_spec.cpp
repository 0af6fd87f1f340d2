// The task format's reader: parse_task, load_task and spec_baselines (task_spec.h), and the
// derivations of a graph task. Its writer is task_spec_writer.cpp.
#include "data_synth/task/task_spec.h"

#include <cmath>
#include <cstring>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"
#include "data_synth/task/task_yaml.h"

namespace kforge {

using task_yaml::at_node;
using task_yaml::read_shape;

const char* task_source_name(TaskSource s) {
  switch (s) {
    case TaskSource::synth:
      return "synth";
    case TaskSource::kernelbench:
      return "kernelbench";
    case TaskSource::cuda_agent_ops:
      return "cuda-agent-ops";
    case TaskSource::samples:
      return "samples";
    case TaskSource::other:
      return "other";
  }
  return "?";
}

std::optional<TaskSource> task_source_from_name(const std::string& name) {
  if (name == "cuda_agent_ops") return TaskSource::cuda_agent_ops;  // the enum's spelling, as importers may write it
  for (TaskSource s : {TaskSource::synth, TaskSource::kernelbench, TaskSource::cuda_agent_ops, TaskSource::samples, TaskSource::other})
    if (name == task_source_name(s)) return s;
  return std::nullopt;
}

const char* task_source_names() { return "synth, kernelbench, cuda-agent-ops, samples, other"; }

const char* split_name(Split s) { return s == Split::train ? "train" : "heldout"; }

const char* reference_kind_name(ReferenceKind k) { return k == ReferenceKind::graph ? "graph" : "torchscript"; }
const char* module_mode_name(ModuleMode m) { return m == ModuleMode::train ? "train" : "eval"; }

namespace {

std::string scalar_or_list_text(const YamlNode& n) {
  if (n.is_sequence()) {
    std::string s = "[";
    for (const auto& item : n.items()) s += (s.size() > 1 ? ", " : "") + item.as<std::string>();
    return s + "]";
  }
  return n.as<std::string>();
}

// `least`: the smallest size a dim may take (1; 0 in an extra shape, an empty dimension).
DimEnv read_dims(const YamlNode& node, int64_t least = 1) {
  DimEnv dims;
  for (const auto& name : node.keys()) {
    YamlNode v = node.at(name);
    if (!is_identifier(name)) v.fail("dimension name '" + name + "' is not an identifier");
    int64_t value = v.as<int64_t>();
    if (value < least) v.fail("dimension " + name + " = " + std::to_string(value) + " must be >= " + std::to_string(least));
    dims[name] = value;
  }
  return dims;
}

bool close_enough(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 0.5; }

}  // namespace

void derive_task(TaskSpec& t) {
  KFORGE_CHECK(!t.imported(), spec,
               "task " << t.id << " is imported (a " << reference_kind_name(t.reference.kind)
                       << " reference): its arguments and outputs are stated, not derived from a graph");
  std::map<std::string, Draw> draws;
  for (const auto& a : t.arguments) draws[a.decl.name] = a.draw;
  t.resolved = resolve_graph(t.graph, t.dims);
  t.arguments.clear();
  for (const auto& decl : t.resolved.arguments) {
    auto it = draws.find(decl.name);
    Draw d = it == draws.end() ? decl.draw : it->second;
    t.arguments.push_back({decl, d});
  }
  t.outputs.clear();
  for (size_t i = 0; i < t.resolved.outputs.size(); ++i) t.outputs.push_back({t.graph.outputs[i], t.resolved.output_metas[i]});
  t.cost = {t.resolved.flops, t.resolved.min_bytes};
}

TaskSpec TaskSpec::with_dims(const DimEnv& overrides) const {
  if (imported()) {
    KFORGE_CHECK(
        overrides.empty(), spec,
        "task " << id << " is imported and has no dimensions to set ('" << overrides.begin()->first << "'): its shapes are the module's");
    return *this;
  }
  TaskSpec t = *this;
  for (const auto& [k, v] : overrides) {
    KFORGE_CHECK(t.dims.count(k), spec, "task " << id << " has no dimension '" << k << "'");
    KFORGE_CHECK(v >= 0, spec, "dimension " << k << " = " << v << " must be >= 0 (0: an empty dimension, in an extra shape)");
    t.dims[k] = v;
  }
  derive_task(t);
  return t;
}

TaskSpec TaskSpec::at_check_dims() const { return check_dims ? with_dims(*check_dims) : *this; }

TaskSpec TaskSpec::at_extra_dims(size_t i) const {
  KFORGE_CHECK(i < extra_dims.size(), spec, "task " << id << " has " << extra_dims.size() << " extra shapes, not " << i + 1);
  if (!imported()) return with_dims(extra_dims[i]);
  KFORGE_CHECK(i < imported_shapes.size(), internal, "task " << id << ": extra_dims without their imported shapes");
  const ImportedShape& x = imported_shapes[i];
  TaskSpec t = *this;
  size_t k = 0;
  for (auto& a : t.arguments)
    if (a.decl.role == ArgRole::input) a.decl.meta.shape = x.inputs.at(k++);
  for (size_t o = 0; o < t.outputs.size(); ++o) t.outputs[o].meta.shape = x.outputs.at(o);
  t.cost = {std::nullopt, task_yaml::footprint(t)};  // the module's FLOP count is its own size's
  return t;
}

TaskSpec make_task(std::string id, OpGraph graph, DimEnv dims, DType dtype, uint64_t seed) {
  TaskSpec t;
  t.id = std::move(id);
  t.graph = std::move(graph);
  t.dims = std::move(dims);
  t.dtype = dtype;
  t.seed = seed;
  t.tolerance = PrecisionConfig{}.for_dtype(dtype_name(dtype));
  t.provenance.generator = "kforge";
  derive_task(t);
  return t;
}

TaskSpec make_op_example_task(const OpDef& op, DType dtype) {
  OpGraph g;
  GraphNode node;
  node.id = "y";
  node.op = op.name;
  node.attrs = op.example.attrs;
  for (size_t i = 0; i < op.example.inputs.size(); ++i) {
    GraphInput in;
    in.name = "x" + std::to_string(i);
    for (int64_t d : op.example.inputs[i]) in.shape.push_back(DimExpr::constant(d));
    in.dtype = dtype_is_float(op.example.input_dtype(i)) ? dtype : op.example.input_dtype(i);
    g.inputs.push_back(in);
    node.inputs.push_back(in.name);
  }
  g.nodes.push_back(node);
  g.outputs = {"y"};
  TaskSpec t = make_task("op_" + op.name, g, {}, dtype, 1000 + std::hash<std::string>{}(op.name) % 1000);
  t.description = "the " + op.name + " operator on its example inputs";
  return t;
}

namespace {

// The operator graph of a spec (its inputs in the task dtype unless they say otherwise).
void read_graph(const YamlNode& graph, TaskSpec& t) {
  for (const auto& in : graph.at("inputs").items()) {
    GraphInput gi;
    gi.name = in.req<std::string>("name");
    for (const auto& d : in.at("shape").items()) gi.shape.push_back(at_node(d, [&] { return DimExpr::parse(d.as<std::string>()); }));
    gi.dtype = t.dtype;
    if (auto dt = in.find("dtype")) gi.dtype = at_node(*dt, [&] { return dtype_from_name(dt->as<std::string>()); });
    in.check_no_unknown_keys();
    t.graph.inputs.push_back(gi);
  }
  for (const auto& nn : graph.at("nodes").items()) {
    GraphNode node;
    node.id = nn.req<std::string>("id");
    node.op = nn.req<std::string>("op");
    node.inputs = nn.at("in").as<std::vector<std::string>>();
    if (auto attrs = nn.find("attrs"))
      for (const auto& k : attrs->keys()) node.attrs[k] = scalar_or_list_text(attrs->at(k));
    node.origin = nn.location();
    nn.check_no_unknown_keys();
    t.graph.nodes.push_back(node);
  }
  t.graph.outputs = graph.at("outputs").as<std::vector<std::string>>();
  graph.check_no_unknown_keys();
}

// A spec's stated arguments: they must be the graph's, in its order; their draws are taken.
void read_stated_arguments(const YamlNode& args, TaskSpec& t) {
  std::vector<YamlNode> items = args.items();
  if (items.size() != t.arguments.size()) {
    std::string expected;
    for (const auto& a : t.arguments) expected += (expected.empty() ? "" : ", ") + a.decl.name;
    args.fail("lists " + std::to_string(items.size()) + " arguments but the graph gives " + std::to_string(t.arguments.size()) + ": " +
              expected);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const YamlNode& a = items[i];
    TaskArgument& ta = t.arguments[i];
    std::string name = a.req<std::string>("name");
    if (name != ta.decl.name)
      a.at("name").fail("argument " + std::to_string(i) + " is '" + ta.decl.name + "' in the graph's order, not '" + name + "'");
    if (auto role = a.find("role"))
      if (role->as<std::string>() != arg_role_name(ta.decl.role))
        role->fail(std::string("role of '") + name + "' is " + arg_role_name(ta.decl.role));
    if (auto shape = a.find("shape"))
      if (read_shape(*shape) != ta.decl.meta.shape)
        shape->fail("shape of '" + name + "' is " + shape_str(ta.decl.meta.shape) + " by the graph, not " + shape_str(read_shape(*shape)));
    if (auto dt = a.find("dtype"))
      if (dt->as<std::string>() != dtype_name(ta.decl.meta.dtype))
        dt->fail("dtype of '" + name + "' is " + std::string(dtype_name(ta.decl.meta.dtype)));
    if (auto d = a.find("draw")) {
      ta.draw = at_node(*d, [&] { return Draw::from_yaml(*d); });
      at_node(*d, [&] {
        ta.draw.validate(ta.decl.meta.dtype);
        return 0;
      });
    }
    a.get<bool>("used", true);  // informational
    a.check_no_unknown_keys();
  }
}

// A spec's stated outputs: they must be the graph's.
void check_stated_outputs(const YamlNode& outs, const TaskSpec& t) {
  std::vector<YamlNode> items = outs.items();
  if (items.size() != t.outputs.size())
    outs.fail("lists " + std::to_string(items.size()) + " outputs but the graph has " + std::to_string(t.outputs.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    const YamlNode& o = items[i];
    std::string name = o.req<std::string>("name");
    if (name != t.outputs[i].name) o.at("name").fail("output " + std::to_string(i) + " is '" + t.outputs[i].name + "'");
    if (read_shape(o.at("shape")) != t.outputs[i].meta.shape)
      o.at("shape").fail("shape of output '" + name + "' is " + shape_str(t.outputs[i].meta.shape) + " by the graph");
    if (o.req<std::string>("dtype") != dtype_name(t.outputs[i].meta.dtype))
      o.at("dtype").fail(std::string("dtype of output '") + name + "' is " + dtype_name(t.outputs[i].meta.dtype));
    o.check_no_unknown_keys();
  }
}

Baselines read_baselines(const YamlNode& b) {
  Baselines out;
  if (auto v = b.find("eager_ms"); v && !v->is_null()) out.eager_ms = v->as<double>();
  if (auto v = b.find("compile_ms"); v && !v->is_null()) out.compile_ms = v->as<double>();
  for (auto* ms : {&out.eager_ms, &out.compile_ms})
    if (*ms && !(**ms > 0)) b.fail("baseline times must be > 0 ms");
  out.gpu = b.get<std::string>("gpu", "");
  out.torch_version = b.get<std::string>("torch", "");
  out.cuda_version = b.get<std::string>("cuda", "");
  out.method = b.get<std::string>("method", "");
  if (auto f = b.find("flags"))
    for (const auto& k : f->keys()) out.flags[k] = f->at(k).as<std::string>();
  if ((out.eager_ms || out.compile_ms) && (out.gpu.empty() || out.method.empty()))
    b.fail("baseline times need the gpu and the method that measured them");
  b.check_no_unknown_keys();
  return out;
}

// A graph task's dims, check_dims, graph, and the arguments, outputs and cost it states (which
// must agree with the graph; stated draws are taken).
void read_graph_body(const YamlNode& root, const std::optional<YamlNode>& ref, TaskSpec& t) {
  if (ref) task_yaml::read_graph_reference(*ref);
  if (auto p = root.find("program"))
    p->fail("only imported tasks (reference.kind: torchscript) state a program; a graph task's is rendered from its graph");
  t.dims = read_dims(root.at("dims"));
  if (auto n = root.find("check_dims")) {
    DimEnv cd = read_dims(*n);
    for (const auto& [k, v] : cd)
      if (!t.dims.count(k)) n->at(k).fail("'" + k + "' is not one of the task's dims");
    t.check_dims = cd;
  }
  std::vector<YamlNode> extra_items;
  if (auto n = root.find("extra_dims")) {
    if (!n->is_sequence()) n->fail("extra_dims is a list of dimension maps, e.g. [{B: 1}, {M: 67, N: 45}]");
    for (const YamlNode& item : n->items()) {
      DimEnv extra = read_dims(item, 0);
      if (extra.empty()) item.fail("an extra shape sets at least one of the task's dims");
      for (const auto& [k, v] : extra)
        if (!t.dims.count(k)) item.at(k).fail("'" + k + "' is not one of the task's dims");
      t.extra_dims.push_back(extra);
      extra_items.push_back(item);
    }
  }
  if (!root.has("graph")) root.fail("missing required key 'graph' (or a `reference: {kind: torchscript, ...}` block for an imported task)");
  YamlNode graph = root.at("graph");
  read_graph(graph, t);
  at_node(graph, [&] {
    derive_task(t);
    return 0;
  });
  for (size_t i = 0; i < extra_items.size(); ++i) {  // every extra shape resolves
    DimEnv d = t.dims;
    for (const auto& [k, v] : t.extra_dims[i]) d[k] = v;
    try {
      resolve_graph(t.graph, d);
    } catch (const Error& e) {  // located at the node that refuses: say which extra shape it is
      throw Error(e.kind() == ErrorKind::shape ? ErrorKind::shape : ErrorKind::spec,
                  extra_items[i].where() + ": the task does not resolve at this extra shape: " + e.what());
    }
  }
  if (auto args = root.find("arguments")) read_stated_arguments(*args, t);
  if (auto outs = root.find("outputs")) check_stated_outputs(*outs, t);
  if (auto cost = root.find("cost")) {
    double flops = cost->req<double>("flops"), bytes = cost->req<double>("min_bytes");
    if (!close_enough(flops, t.resolved.flops))
      cost->at("flops").fail("is " + std::to_string(flops) + " but the graph gives " + std::to_string(t.resolved.flops));
    if (!close_enough(bytes, t.resolved.min_bytes))
      cost->at("min_bytes").fail("is " + std::to_string(bytes) + " but the graph gives " + std::to_string(t.resolved.min_bytes));
    cost->check_no_unknown_keys();
  }
}

Provenance read_provenance(const YamlNode& p) {
  Provenance out;
  out.generator = p.req<std::string>("generator");
  out.seed = p.get<uint64_t>("seed", 0);
  out.format = p.get<std::string>("format", "");
  out.file = p.get<std::string>("file", "");
  out.file_sha256 = p.get<std::string>("file_sha256", "");
  out.tolerance_profile = p.get<std::string>("tolerance_profile", "");
  for (auto [key, field] : {std::pair{"row", &out.row}, std::pair{"level", &out.level}})
    if (auto n = p.find(key); n && !n->is_null()) *field = n->as<int64_t>();
  if (auto n = p.find("ops"); n && !n->is_null()) out.ops = n->as<std::vector<std::string>>();
  p.check_no_unknown_keys();
  return out;
}

// Every floating-point argument the reference reads varies between trials: with a constant draw
// (a norm's weight of 1, a bias of 0, in a module's initial state) a kernel that assumes the value
// instead of reading it would pass every trial. Integer and boolean constants stay allowed (an
// index or a count may have one valid value).
void check_float_arguments_vary(const TaskSpec& t, const std::string& origin) {
  for (const auto& a : t.arguments)
    KFORGE_CHECK(!(a.decl.used && dtype_is_float(a.decl.meta.dtype) && a.draw.dist == DrawDist::constant && numel(a.decl.meta.shape) > 0),
                 spec,
                 origin << ": argument '" << a.decl.name << "' is " << dtype_name(a.decl.meta.dtype) << " with a constant draw ("
                        << a.draw.describe()
                        << "): a kernel that assumes its value would pass every trial; draw it from a range "
                           "around the value (kforge tasks import uses uniform(v/2, 3v/2), or uniform(-0.5, 0.5) for 0)");
}

}  // namespace

TaskSpec parse_task(const std::string& yaml_text, const std::string& origin) {
  YamlNode root = YamlNode::parse(yaml_text, origin, ErrorKind::spec);
  if (!root.is_map()) root.fail("a task spec is a mapping (see data_synth/task/TASK_FORMAT.md)");
  TaskSpec t;
  int version = root.req<int>("kforge_task");
  if (version != TaskSpec::kFormatVersion)
    root.at("kforge_task").fail("format version " + std::to_string(version) + " is not supported (this kforge reads 1)");
  t.id = root.req<std::string>("id");
  if (t.id.empty() || t.id.find_first_of(" /\\\t\n") != std::string::npos)
    root.at("id").fail("id '" + t.id + "' must be non-empty, without spaces or slashes");
  {
    YamlNode n = root.at("source");
    std::string s = n.as<std::string>();
    auto source = task_source_from_name(s);
    if (!source) n.fail("unknown source '" + s + "' (" + task_source_names() + ")");
    t.source = *source;
  }
  {
    YamlNode n = root.at("split");
    std::string s = n.as<std::string>();
    if (s == "train")
      t.split = Split::train;
    else if (s == "heldout")
      t.split = Split::heldout;
    else
      n.fail("unknown split '" + s + "' (train, heldout)");
  }
  t.description = root.get<std::string>("description", "");
  t.seed = root.req<uint64_t>("seed");
  {
    YamlNode n = root.at("dtype");
    t.dtype = at_node(n, [&] { return dtype_from_name(n.as<std::string>()); });
  }
  auto ref = root.find("reference");
  if (ref && task_yaml::read_reference_kind(*ref) == ReferenceKind::torchscript)
    task_yaml::read_imported_body(root, *ref, t);
  else
    read_graph_body(root, ref, t);
  check_float_arguments_vary(t, origin);

  t.tolerance = PrecisionConfig{}.for_dtype(dtype_name(t.dtype));
  if (auto tol = root.find("tolerance")) {
    t.tolerance.atol = tol->req<double>("atol");
    t.tolerance.rtol = tol->req<double>("rtol");
    if (t.tolerance.atol < 0 || t.tolerance.rtol < 0 || (t.tolerance.atol == 0 && t.tolerance.rtol == 0))
      tol->fail("atol and rtol must be >= 0 and not both 0");
    tol->check_no_unknown_keys();
  }
  if (auto b = root.find("baselines")) t.baselines = read_baselines(*b);
  t.provenance = read_provenance(root.at("provenance"));
  root.check_no_unknown_keys();
  return t;
}

TaskSpec load_task(const std::string& path) { return parse_task(read_file(path, "the task file"), path); }

Baselines spec_baselines(const std::string& yaml_text, const std::string& origin) {
  const YamlNode root = YamlNode::parse(yaml_text, origin, ErrorKind::spec);
  const auto b = root.find("baselines");
  return b ? read_baselines(*b) : Baselines{};
}

}  // namespace kforge
