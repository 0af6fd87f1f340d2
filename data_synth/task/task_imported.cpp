// The body of an imported task's YAML (program, reference, arguments, outputs, cost): read and
// validated as written, since there is no graph to derive it from; and written back.
#include <set>

#include "configs/sha256.h"
#include "data_synth/task/base64.h"
#include "data_synth/task/task_yaml.h"

namespace kforge::task_yaml {

namespace {

ArgRole read_role(const YamlNode& n) {
  std::string s = n.as<std::string>();
  for (ArgRole r : {ArgRole::input, ArgRole::parameter, ArgRole::buffer})
    if (s == arg_role_name(r)) return r;
  n.fail("unknown role '" + s + "' (input, parameter, buffer)");
  return ArgRole::input;
}

Shape read_checked_shape(const YamlNode& n, const std::string& what) {
  if (!n.is_sequence()) n.fail("the shape of " + what + " is a list of integers");
  Shape s = read_shape(n);
  for (int64_t d : s)
    if (d < 1) n.fail("the shape of " + what + " is " + shape_str(s) + ": every extent must be >= 1");
  try {
    numel(s);
  } catch (const Error& e) {
    n.fail(e.what());
  }
  return s;
}

DType read_dtype(const YamlNode& n) {
  return at_node(n, [&] { return dtype_from_name(n.as<std::string>()); });
}

void check_name(const YamlNode& n, const std::string& name, std::set<std::string>& seen, const char* what) {
  if (name.empty() || name.find_first_of(" \t\n,") != std::string::npos)
    n.fail(std::string(what) + " name '" + name + "' must be non-empty, without spaces or commas");
  if (!seen.insert(name).second)
    n.fail(std::string(what) + " name '" + name + "' is used twice (arguments and outputs share one namespace)");
}

void read_arguments(const YamlNode& args, TaskSpec& t, std::set<std::string>& names) {
  if (!args.is_sequence() || args.size() == 0) args.fail("an imported task lists its arguments (at least one)");
  for (const auto& a : args.items()) {
    TaskArgument ta;
    ta.decl.name = a.req<std::string>("name");
    check_name(a.at("name"), ta.decl.name, names, "argument");
    ta.decl.role = read_role(a.at("role"));
    ta.decl.meta.shape = read_checked_shape(a.at("shape"), "'" + ta.decl.name + "'");
    ta.decl.meta.dtype = read_dtype(a.at("dtype"));
    YamlNode d = a.at("draw");
    ta.draw = at_node(d, [&] { return Draw::from_yaml(d); });
    at_node(d, [&] {
      ta.draw.validate(ta.decl.meta.dtype);
      return 0;
    });
    ta.decl.draw = ta.draw;
    ta.decl.used = a.get<bool>("used", true);
    a.check_no_unknown_keys();
    t.arguments.push_back(ta);
  }
  if (t.arguments.front().decl.role != ArgRole::input)
    args.fail("the first argument of an imported task is a get_inputs() tensor (role input)");
  for (size_t i = 1; i < t.arguments.size(); ++i)
    if (t.arguments[i].decl.role == ArgRole::input && t.arguments[i - 1].decl.role != ArgRole::input)
      args[i].fail("inputs come first, then the state_dict entries: '" + t.arguments[i].decl.name + "' is an input after state");
}

void read_outputs(const YamlNode& outs, TaskSpec& t, std::set<std::string>& names) {
  if (!outs.is_sequence() || outs.size() == 0) outs.fail("an imported task lists its outputs (at least one)");
  for (const auto& o : outs.items()) {
    TaskOutput to;
    to.name = o.req<std::string>("name");
    check_name(o.at("name"), to.name, names, "output");
    to.meta.shape = read_checked_shape(o.at("shape"), "output '" + to.name + "'");
    to.meta.dtype = read_dtype(o.at("dtype"));
    o.check_no_unknown_keys();
    t.outputs.push_back(to);
  }
}

void read_cost(const std::optional<YamlNode>& cost, TaskSpec& t) {
  t.cost.min_bytes = footprint(t);  // what the contract defines it as, when the file leaves it out
  if (!cost) return;
  if (auto f = cost->find("flops"); f && !f->is_null()) {
    double flops = f->as<double>();
    if (!(flops >= 0)) f->fail("flops must be >= 0");
    t.cost.flops = flops;
  }
  if (auto b = cost->find("min_bytes")) {
    t.cost.min_bytes = b->as<double>();
    if (!(t.cost.min_bytes > 0)) b->fail("min_bytes must be > 0");
  }
  cost->check_no_unknown_keys();
}

void read_reference(const YamlNode& ref, TaskSpec& t) {
  t.reference.kind = ReferenceKind::torchscript;
  {
    YamlNode m = ref.at("module_mode");
    std::string s = m.as<std::string>();
    if (s == "train")
      t.reference.module_mode = ModuleMode::train;
    else if (s == "eval")
      t.reference.module_mode = ModuleMode::eval;
    else
      m.fail("unknown module_mode '" + s + "' (train, eval)");
  }
  YamlNode sha = ref.at("sha256");
  t.reference.sha256 = sha.as<std::string>();
  if (t.reference.sha256.size() != 64 || t.reference.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    sha.fail("is 64 lowercase hex digits, not '" + t.reference.sha256 + "'");
  YamlNode art = ref.at("artifact");
  t.reference.artifact = at_node(art, [&] { return base64_decode(art.as<std::string>()); });
  if (t.reference.artifact.empty()) art.fail("the TorchScript artifact is empty");
  std::string actual = sha256_hex(t.reference.artifact);
  if (actual != t.reference.sha256)
    sha.fail("is " + t.reference.sha256 + " but the artifact's bytes hash to " + actual + " (the artifact is not the one exported)");
  ref.check_no_unknown_keys();
}

// `extra_shapes` (issue 30): each {kind, constants, inputs, outputs}, the inputs one shape per
// argument of role input and the outputs one per output, each of the rank of the task's own.
void read_imported_shapes(const YamlNode& list, TaskSpec& t) {
  if (!list.is_sequence()) list.fail("extra_shapes is a list of {kind, constants, inputs, outputs}");
  std::vector<const TensorMeta*> ins, outs;
  for (const auto& a : t.arguments)
    if (a.decl.role == ArgRole::input) ins.push_back(&a.decl.meta);
  for (const auto& o : t.outputs) outs.push_back(&o.meta);
  auto shapes = [](const YamlNode& n, const std::vector<const TensorMeta*>& own, const char* what) {
    if (!n.is_sequence() || n.size() != own.size())
      n.fail(std::string("lists one shape per ") + what + " (" + std::to_string(own.size()) + ")");
    std::vector<Shape> out;
    for (size_t i = 0; i < own.size(); ++i) {
      Shape s = read_checked_shape(n[i], std::string(what) + " " + std::to_string(i));
      if (s.size() != own[i]->shape.size())
        n[i].fail("has rank " + std::to_string(s.size()) + "; the task's own " + what + " has " + std::to_string(own[i]->shape.size()));
      out.push_back(std::move(s));
    }
    return out;
  };
  for (const YamlNode& item : list.items()) {
    ImportedShape x;
    x.kind = item.req<std::string>("kind");
    if (x.kind.empty()) item.at("kind").fail("an extra shape's kind is not empty");
    YamlNode c = item.at("constants");
    if (!c.is_map() || c.keys().empty()) c.fail("constants maps the module's size constants to their values here (at least one)");
    for (const auto& name : c.keys()) {
      const int64_t v = c.at(name).as<int64_t>();
      if (v < 1) c.at(name).fail("a size constant is >= 1");
      x.constants[name] = v;
    }
    x.inputs = shapes(item.at("inputs"), ins, "input");
    x.outputs = shapes(item.at("outputs"), outs, "output");
    item.check_no_unknown_keys();
    t.extra_dims.push_back(x.constants);
    t.imported_shapes.push_back(std::move(x));
  }
}

}  // namespace

double footprint(const TaskSpec& t) {
  double bytes = 0;
  for (const auto& a : t.arguments) bytes += static_cast<double>(tensor_bytes(a.decl.meta.shape, a.decl.meta.dtype));
  for (const auto& o : t.outputs) bytes += static_cast<double>(tensor_bytes(o.meta.shape, o.meta.dtype));
  return bytes;
}

ReferenceKind read_reference_kind(const YamlNode& ref) {
  if (!ref.is_map()) ref.fail("reference is a mapping with a kind (graph, torchscript)");
  YamlNode k = ref.at("kind");
  std::string s = k.as<std::string>();
  if (s == reference_kind_name(ReferenceKind::graph)) return ReferenceKind::graph;
  if (s == reference_kind_name(ReferenceKind::torchscript)) return ReferenceKind::torchscript;
  k.fail("unknown reference kind '" + s + "' (graph, torchscript)");
  return ReferenceKind::graph;
}

void read_graph_reference(const YamlNode& ref) { ref.check_no_unknown_keys(); }

InitValue read_init_value(const YamlNode& v) {
  if (!v.is_scalar() || v.is_null()) v.fail("an init input is a bool or a number");
  const std::string text = v.raw().Scalar();
  if (text == "true" || text == "false") return text == "true";
  if (text.find_first_of(".eEnN") == std::string::npos) return v.as<int64_t>();  // no point, exponent, nan or inf
  return v.as<double>();
}

void read_imported_body(const YamlNode& root, const YamlNode& ref, TaskSpec& t) {
  for (const char* key : {"dims", "check_dims", "extra_dims", "graph"})
    if (auto n = root.find(key))
      n->fail(std::string("a task with a torchscript reference has no ") + key + " (its function is the exported module)");
  YamlNode program = root.at("program");
  t.program = program.as<std::string>();
  if (t.program.find_first_not_of(" \t\r\n") == std::string::npos) program.fail("the imported program is empty");
  read_reference(ref, t);
  std::set<std::string> names;
  read_arguments(root.at("arguments"), t, names);
  read_outputs(root.at("outputs"), t, names);
  read_cost(root.find("cost"), t);
  if (auto x = root.find("extra_shapes")) read_imported_shapes(*x, t);
  if (auto init = root.find("init_inputs")) {
    if (!init->is_sequence()) init->fail("init_inputs must be a list of bools and numbers (get_init_inputs())");
    for (const YamlNode& v : init->items()) t.init_inputs.push_back(read_init_value(v));
  }
}

namespace {

// A literal block keeps the text as is only when it ends with one line break, has no carriage
// return or other control character, and does not start with a space; else a quoted scalar (escapes).
bool literal_safe(const std::string& s) {
  if (s.empty() || s.back() != '\n' || (s.size() >= 2 && s[s.size() - 2] == '\n') || s.front() == ' ' || s.front() == '\n') return false;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return false;
  size_t line = 0;
  while (line < s.size()) {  // a line of spaces only (or a tab-led first line) confuses block indentation
    size_t end = s.find('\n', line);
    std::string ln = s.substr(line, end - line);
    if (!ln.empty() && ln.find_first_not_of(' ') == std::string::npos) return false;
    line = end + 1;
  }
  return s.front() != '\t';
}

std::string wrapped(const std::string& text, size_t width) {
  std::string out;
  for (size_t i = 0; i < text.size(); i += width) out += text.substr(i, width) + "\n";
  return out;
}

}  // namespace

void emit_imported_body(YAML::Emitter& e, const TaskSpec& t) {
  e << YAML::Key << "program" << YAML::Value;
  if (literal_safe(t.program))
    e << YAML::Literal << t.program;
  else
    e << YAML::DoubleQuoted << t.program;
  e << YAML::Key << "reference" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "kind" << YAML::Value << reference_kind_name(t.reference.kind);
  e << YAML::Key << "module_mode" << YAML::Value << module_mode_name(t.reference.module_mode);
  e << YAML::Key << "sha256" << YAML::Value << t.reference.sha256;
  e << YAML::Key << "artifact" << YAML::Value << YAML::Literal << wrapped(base64_encode(t.reference.artifact), 76);
  e << YAML::EndMap;
  e << YAML::Key << "arguments" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : t.arguments) emit_argument(e, a);
  e << YAML::EndSeq;
  e << YAML::Key << "outputs" << YAML::Value << YAML::BeginSeq;
  for (const auto& o : t.outputs) emit_output(e, o);
  e << YAML::EndSeq;
  if (!t.imported_shapes.empty()) {
    e << YAML::Key << "extra_shapes" << YAML::Value << YAML::BeginSeq;
    for (const ImportedShape& x : t.imported_shapes) {
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << x.kind << YAML::Key << "constants" << YAML::Value
        << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : x.constants) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap;
      for (const auto& [key, list] : {std::pair<const char*, const std::vector<Shape>*>{"inputs", &x.inputs}, {"outputs", &x.outputs}}) {
        e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const Shape& sh : *list) emit_shape(e, sh);
        e << YAML::EndSeq;
      }
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (t.init_inputs.empty()) return;
  e << YAML::Key << "init_inputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const InitValue& v : t.init_inputs) std::visit([&](auto x) { e << x; }, v);
  e << YAML::EndSeq;
}

}  // namespace kforge::task_yaml
