#include "env/launch/launch_plan.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"

namespace kforge {

namespace {

[[noreturn]] void fail_at(const std::string& where, const std::string& message) { throw_error(ErrorKind::spec, where + ": " + message); }

// Unclosed '(' minus ')' in a text.
int paren_balance(const std::string& s) {
  int b = 0;
  for (char c : s) b += c == '(' ? 1 : c == ')' ? -1 : 0;
  return b;
}

bool is_plain(const YamlNode& n) { return n.raw().Tag() == "?"; }

// Tensor names are identifiers with dots: x, fc.weight, layers.0.bn.running_var.
bool looks_like_tensor_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

// A floating-point literal: digits with a '.' or an exponent (integers are expressions), or an
// infinity. nullopt when `s` is not one; a literal beyond double's range is an error.
std::optional<double> number_literal(const std::string& s, const std::string& where) {
  static const std::map<std::string, double> infinities = {{"inf", INFINITY},   {"+inf", INFINITY},  {".inf", INFINITY},
                                                           {"+.inf", INFINITY}, {"-inf", -INFINITY}, {"-.inf", -INFINITY}};
  auto it = infinities.find(s);
  if (it != infinities.end()) return it->second;
  auto digit = [&](size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); };
  size_t i = 0, digits = 0;
  bool dot = false, exponent = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  while (digit(i)) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    dot = true, ++i;
    while (digit(i)) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    exponent = true, ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return std::nullopt;
    while (digit(i)) ++i;
  }
  if (i != s.size() || !(dot || exponent)) return std::nullopt;
  errno = 0;
  double v = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(v)) fail_at(where, "number '" + s + "' is out of range");
  return v;
}

struct Item {
  std::string text;
  std::string where;
  bool plain = true;
};

// The entries of an expression list. A scalar is a list of one. In a [...] flow list YAML ends a
// plain value at every comma, so `[R, ceil_div(C, 1024)]` arrives as "ceil_div(C" and "1024)":
// fragments are joined back while a parenthesis is open.
std::vector<Item> expression_items(const YamlNode& node, const char* what) {
  std::vector<Item> out;
  if (node.is_null()) node.fail(std::string("expected ") + what + ", found nothing");
  if (node.is_scalar()) return {{node.raw().Scalar(), node.where(), is_plain(node)}};
  if (!node.is_sequence()) node.fail(std::string("expected ") + what + ", found a mapping");
  int open = 0;
  for (const YamlNode& item : node.items()) {
    if (!item.is_scalar()) {
      item.fail(std::string("expected a value, found ") + (item.is_null() ? "nothing" : item.is_map() ? "a mapping" : "a list"));
    }
    std::string s = item.raw().Scalar();
    if (open > 0 && is_plain(item)) {
      out.back().text += ", " + s;
      open += paren_balance(s);
      continue;
    }
    out.push_back({s, item.location() + ": " + node.key_path() + "[" + std::to_string(out.size()) + "]", is_plain(item)});
    open = is_plain(item) ? paren_balance(s) : 0;
  }
  return out;
}

DimExpr parse_expression(const Item& item) {
  try {
    return DimExpr::parse(item.text);
  } catch (const Error& e) {
    fail_at(item.where, e.what());
  }
}

// In a {...} flow mapping YAML ends a plain value at a comma too, and the rest becomes a key:
// `{size: ceil_div(C, 2)}`. Say so before that key is reported as unknown.
void check_flow_cut(const YamlNode& map) {
  if (map.raw().Style() != YAML::EmitterStyle::Flow) return;
  for (const auto& kv : map.raw()) {
    const YAML::Node& v = kv.second;
    if (v.IsScalar() && v.Tag() == "?" && paren_balance(v.Scalar()) > 0) {
      std::ostringstream os;
      os << map.origin() << ":" << v.Mark().line + 1 << ":" << v.Mark().column + 1 << ": "
         << (map.key_path().empty() ? "" : map.key_path() + ".") << kv.first.Scalar() << ": '" << v.Scalar()
         << "' was cut at a comma: inside {...} write the expression in quotes";
      throw_error(ErrorKind::spec, os.str());
    }
  }
}

// Reads every known key of a map (so the rest are unknown), then rejects the unknown ones.
std::map<std::string, YamlNode> read_keys(const YamlNode& map, std::initializer_list<const char*> known, const char* what) {
  if (!map.is_map()) {
    map.fail(std::string("expected a mapping (") + what + "), found " +
             (map.is_null()       ? "nothing"
              : map.is_sequence() ? "a list"
                                  : "'" + map.raw().Scalar() + "'"));
  }
  check_flow_cut(map);
  std::map<std::string, YamlNode> out;
  for (const char* k : known)
    if (auto c = map.find(k)) out.emplace(k, *c);
  map.check_no_unknown_keys();
  return out;
}

std::vector<DimExpr> read_dims(const YamlNode& node, const char* key, std::vector<std::string>& wheres) {
  std::vector<Item> items = expression_items(node, "1 to 3 integer expressions");
  if (items.empty() || items.size() > 3) {
    node.fail(std::string(key) + " has " + std::to_string(items.size()) + " entries; it takes 1 to 3 (x, y, z)");
  }
  std::vector<DimExpr> out;
  for (const Item& it : items) {
    out.push_back(parse_expression(it));
    wheres.push_back(it.where);
  }
  return out;
}

PlanWorkspace read_workspace(const YamlNode& item) {
  auto keys = read_keys(item, {"name", "dtype", "size", "zero"}, "name, dtype, size and optional zero");
  PlanWorkspace w;
  w.where = item.where();
  for (const char* required : {"name", "dtype", "size"})
    if (!keys.count(required)) item.fail(std::string("missing required key '") + required + "'");
  const YamlNode& name = keys.at("name");
  w.name = name.as<std::string>();
  w.name_where = name.where();
  if (!is_identifier(w.name)) name.fail("workspace name '" + w.name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  const YamlNode& dtype = keys.at("dtype");
  try {
    w.dtype = dtype_from_name(dtype.as<std::string>());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::spec) throw;
    std::string m = e.what();
    if (m.rfind(dtype.location(), 0) == 0) throw;  // already located (a non-scalar)
    dtype.fail(m);
  }
  const YamlNode& size = keys.at("size");
  if (!size.is_scalar()) size.fail("expected an integer expression");
  w.size_where = size.where();
  w.size = parse_expression({size.raw().Scalar(), w.size_where});
  if (keys.count("zero")) w.zero = keys.at("zero").as<bool>();
  return w;
}

PlanLaunch read_launch(const YamlNode& item) {
  auto keys = read_keys(item, {"kernel", "grid", "block", "shared_mem", "args"}, "kernel, grid, block, optional shared_mem and args");
  PlanLaunch l;
  l.where = item.where();
  for (const char* required : {"kernel", "grid", "block"})
    if (!keys.count(required)) item.fail(std::string("missing required key '") + required + "'");
  const YamlNode& kernel = keys.at("kernel");
  l.kernel = kernel.as<std::string>();
  l.kernel_where = kernel.where();
  if (!is_identifier(l.kernel)) kernel.fail("kernel name '" + l.kernel + "' is not an identifier");
  l.grid = read_dims(keys.at("grid"), "grid", l.grid_where);
  l.block = read_dims(keys.at("block"), "block", l.block_where);
  if (keys.count("shared_mem")) {
    const YamlNode& sm = keys.at("shared_mem");
    if (!sm.is_scalar()) sm.fail("expected an integer expression (bytes)");
    l.shared_mem_where = sm.where();
    l.shared_mem = parse_expression({sm.raw().Scalar(), l.shared_mem_where});
  } else {
    l.shared_mem = DimExpr::constant(0);
    l.shared_mem_where = l.where;
  }
  l.args_where = l.where;
  if (keys.count("args")) {
    const YamlNode& args = keys.at("args");
    l.args_where = args.where();
    if (!args.is_null()) {
      if (!args.is_sequence()) args.fail("expected a list, one entry per kernel parameter");
      for (const Item& it : expression_items(args, "a list")) {
        PlanArg a;
        a.text = it.text;
        a.where = it.where;
        if (a.text.empty()) fail_at(a.where, "empty argument");
        if (auto v = number_literal(a.text, a.where)) {
          a.kind = PlanArg::number;
          a.value = *v;
        } else if (!looks_like_tensor_name(a.text)) {
          parse_expression(it);  // the syntax now, the names when resolving
        }
        l.args.push_back(a);
      }
    }
  }
  return l;
}

}  // namespace

LaunchPlan LaunchPlan::parse(const std::string& yaml_text, const std::string& origin) {
  YamlLimits limits;
  limits.max_bytes = kMaxPlanBytes;
  limits.max_depth = kMaxPlanDepth;
  YamlNode root = YamlNode::parse(yaml_text, origin, ErrorKind::spec, limits);
  if (root.is_null()) throw_error(ErrorKind::spec, origin + ": the launch plan is empty; it needs a 'launches' list");
  auto keys = read_keys(root, {"workspace", "launches", "options"}, "workspace, launches, options");
  LaunchPlan plan;
  if (keys.count("workspace")) {
    const YamlNode& ws = keys.at("workspace");
    if (!ws.is_null()) {
      if (!ws.is_sequence()) ws.fail("expected a list of buffers ({name, dtype, size, zero})");
      for (const YamlNode& item : ws.items()) plan.workspace.push_back(read_workspace(item));
    }
  }
  if (!keys.count("launches")) root.fail("missing required key 'launches'");
  const YamlNode& launches = keys.at("launches");
  if (launches.is_null() || (launches.is_sequence() && launches.size() == 0))
    launches.fail("the list of launches is empty; a plan launches at least one kernel");
  if (!launches.is_sequence()) launches.fail("expected a list of launches");
  for (const YamlNode& item : launches.items()) plan.launches.push_back(read_launch(item));
  if (keys.count("options") && !keys.at("options").is_null()) {
    const YamlNode& opt = keys.at("options");
    auto o = read_keys(opt, {"use_fast_math", "maxrregcount"}, "use_fast_math, maxrregcount");
    if (o.count("use_fast_math")) plan.options.use_fast_math = o.at("use_fast_math").as<bool>();
    if (o.count("maxrregcount")) {
      const YamlNode& m = o.at("maxrregcount");
      int64_t v = m.as<int64_t>();
      if (v < 0 || v > 255) m.fail("maxrregcount " + std::to_string(v) + " is out of range (0: the compiler's choice, else 1 to 255)");
      plan.options.maxrregcount = static_cast<int>(v);
    }
  }
  return plan;
}

LaunchPlan LaunchPlan::load_file(const std::string& path) {
  std::string text = read_file(path, "the launch plan", {static_cast<int64_t>(kMaxPlanBytes), ErrorKind::spec});
  size_t slash = path.find_last_of('/');
  return parse(text, slash == std::string::npos ? path : path.substr(slash + 1));
}

namespace {

const char* c_type_of(DType t) {
  switch (t) {
    case DType::float32:
      return "float";
    case DType::float16:
      return "__half";
    case DType::bfloat16:
      return "__nv_bfloat16";
    case DType::int32:
      return "int";
    case DType::int64:
      return "long long";
    case DType::boolean:
      return "bool";
  }
  return "void";
}

struct Tensor {
  BufferRef ref;
  DType dtype;
  std::string what;  // "input x", "parameter fc.weight", "output y", "workspace partial"
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

class Resolver {
 public:
  Resolver(const LaunchPlan& plan, const TaskSpec& task, const std::vector<KernelSignature>& kernels, const DeviceLimits& limits)
      : plan_(plan), task_(task), kernels_(kernels), limits_(limits) {
    for (const auto& [name, v] : task.dims) dim_names_.push_back(name);
    for (size_t i = 0; i < task.arguments.size(); ++i) {
      const ArgumentDecl& d = task.arguments[i].decl;
      BufferRole role = d.role == ArgRole::input ? BufferRole::input : BufferRole::parameter;
      add_tensor(d.name, {{role, static_cast<int>(i)}, d.meta.dtype, std::string(arg_role_name(d.role)) + " " + d.name});
    }
    for (size_t i = 0; i < task.outputs.size(); ++i) {
      const TaskOutput& o = task.outputs[i];
      add_tensor(o.name, {{BufferRole::output, static_cast<int>(i)}, o.meta.dtype, "output " + o.name});
    }
  }

  ResolvedPlan run() {
    ResolvedPlan out;
    out.options = plan_.options;
    KFORGE_CHECK(plan_.options.maxrregcount >= 0 && plan_.options.maxrregcount <= 255, spec,
                 "options.maxrregcount " << plan_.options.maxrregcount << " is out of range (0 to 255)");
    for (size_t i = 0; i < plan_.workspace.size(); ++i) out.workspace.push_back(workspace(i));
    KFORGE_CHECK(!plan_.launches.empty(), spec, "launches: the plan has no launches");
    for (const PlanLaunch& l : plan_.launches) {
      ResolvedLaunch r = launch(l);
      // At an empty shape a grid sized by the task's dims has no block: that launch does nothing and
      // is left out, as PyTorch skips a kernel over no elements.
      if (r.grid[0] && r.grid[1] && r.grid[2]) out.launches.push_back(std::move(r));
    }
    return out;
  }

  // Whether one of the task's dims is 0 (an extra shape's empty dimension, TASK_FORMAT.md).
  bool empty_shape() const {
    for (const auto& [k, v] : task_.dims)
      if (v == 0) return true;
    return false;
  }

 private:
  void add_tensor(const std::string& name, Tensor t) {
    if (!tensors_.count(name)) tensor_names_.push_back(name);
    tensors_.emplace(name, std::move(t));
  }

  const Tensor* tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

  bool is_dim(const std::string& name) const { return task_.dims.count(name) > 0; }

  ResolvedWorkspace workspace(size_t i) {
    const PlanWorkspace& w = plan_.workspace[i];
    if (!is_identifier(w.name)) fail_at(w.name_where, "workspace name '" + w.name + "' is not an identifier");
    if (const Tensor* t = tensor(w.name)) {
      fail_at(w.name_where, "workspace name '" + w.name + "' is already taken by the " + t->what + "; choose a new name");
    }
    if (is_dim(w.name)) fail_at(w.name_where, "workspace name '" + w.name + "' is a dimension of the task; choose a new name");
    int64_t n = eval(w.size, w.size_where);
    if (n == 0 && empty_shape()) n = 1;  // at an empty shape a workspace sized by its dims still gets an element
    if (n < 1) fail_at(w.size_where, "size " + w.size.str() + " is " + std::to_string(n) + " elements; a workspace has at least 1");
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(w.dtype)), &bytes))
      fail_at(w.size_where, "size " + std::to_string(n) + " elements is too large");
    add_tensor(w.name, {{BufferRole::workspace, static_cast<int>(i)}, w.dtype, "workspace " + w.name});
    return {w.name, w.dtype, n, w.zero};
  }

  // The value of an expression over the task's dims; unknown names and tensors used as numbers
  // are reported with suggestions.
  int64_t eval(const DimExpr& e, const std::string& where) const {
    for (const std::string& name : e.names()) {
      if (is_dim(name)) continue;
      if (const Tensor* t = tensor(name))
        fail_at(where,
                "'" + name + "' is the " + t->what + ", not a dimension; expressions use the task's dimensions: " + join(dim_names_));
      std::string hint = closest_match(name, dim_names_);
      fail_at(where, "unknown dimension '" + name + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                         "; the task's dimensions: " + join(dim_names_));
    }
    try {
      return e.eval(task_.dims);
    } catch (const Error& err) {
      fail_at(where, err.what());
    }
  }

  const KernelSignature& kernel(const PlanLaunch& l) const {
    std::vector<std::string> names;
    for (const KernelSignature& k : kernels_) {
      if (k.name == l.kernel) return k;
      names.push_back(k.name);
    }
    if (names.empty()) fail_at(l.kernel_where, "unknown kernel '" + l.kernel + "': kernel.cu defines no extern \"C\" __global__ function");
    std::string hint = closest_match(l.kernel, names);
    fail_at(l.kernel_where, "unknown kernel '" + l.kernel + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                                "; kernel.cu's extern \"C\" __global__ functions: " + join(names));
  }

  void dims3(const std::vector<DimExpr>& exprs, const std::vector<std::string>& wheres, const std::string& fallback, const char* what,
             const int64_t* max, uint32_t out[3]) const {
    if (exprs.empty() || exprs.size() > 3)
      fail_at(fallback, std::string(what) + " has " + std::to_string(exprs.size()) + " entries; it takes 1 to 3 (x, y, z)");
    static const char* axis = "xyz";
    for (size_t d = 0; d < exprs.size(); ++d) {
      const std::string& where = d < wheres.size() ? wheres[d] : fallback;
      int64_t v = eval(exprs[d], where);
      std::string said = std::string(what) + "." + axis[d] + " = " + exprs[d].str();
      // A grid of 0 blocks only at an empty shape (run() leaves that launch out); a block never.
      const int64_t least = std::string(what) == "grid" && empty_shape() ? 0 : 1;
      if (v < least) fail_at(where, said + " is " + std::to_string(v) + "; every " + what + " dimension is at least 1");
      if (v > max[d])
        fail_at(where,
                said + " is " + std::to_string(v) + ", over the GPU's limit of " + std::to_string(max[d]) + " for " + what + "." + axis[d]);
      out[d] = static_cast<uint32_t>(v);
    }
  }

  ResolvedLaunch launch(const PlanLaunch& l) {
    const KernelSignature& k = kernel(l);
    ResolvedLaunch r;
    r.kernel = l.kernel;
    r.where = l.where;
    int64_t block_max[3] = {limits_.max_block_dim[0], limits_.max_block_dim[1], limits_.max_block_dim[2]};
    dims3(l.grid, l.grid_where, l.where, "grid", limits_.max_grid_dim, r.grid);
    dims3(l.block, l.block_where, l.where, "block", block_max, r.block);
    int64_t threads = int64_t{r.block[0]} * r.block[1] * r.block[2];
    if (threads > limits_.max_threads_per_block) {
      std::string where = l.where + ".block";
      if (!l.block_where.empty()) {
        where = l.block_where[0];
        if (where.size() > 3 && where.compare(where.size() - 3, 3, "[0]") == 0) where.resize(where.size() - 3);
      }
      fail_at(where, "a block of " + std::to_string(r.block[0]) + " x " + std::to_string(r.block[1]) + " x " + std::to_string(r.block[2]) +
                         " = " + std::to_string(threads) + " threads is over the limit of " +
                         std::to_string(limits_.max_threads_per_block));
    }
    int64_t sm = eval(l.shared_mem, l.shared_mem_where);
    if (sm < 0)
      fail_at(l.shared_mem_where, "shared_mem " + l.shared_mem.str() + " is " + std::to_string(sm) + " bytes; it cannot be negative");
    if (sm > limits_.max_dynamic_shared_bytes)
      fail_at(l.shared_mem_where, "shared_mem " + l.shared_mem.str() + " is " + std::to_string(sm) + " bytes, over the GPU's limit of " +
                                      std::to_string(limits_.max_dynamic_shared_bytes) + " bytes of dynamic shared memory per block");
    r.shared_mem = static_cast<uint32_t>(sm);
    if (l.args.size() != k.params.size()) {
      std::string params;
      for (const KernelParam& p : k.params) params += (params.empty() ? "" : ", ") + p.type_text + (p.name.empty() ? "" : " " + p.name);
      fail_at(l.args_where, "kernel '" + k.name + "' takes " + std::to_string(k.params.size()) + " argument" +
                                (k.params.size() == 1 ? "" : "s") + " (" + params + "), " + std::to_string(l.args.size()) +
                                (l.args.size() == 1 ? " is" : " are") + " given");
    }
    for (size_t i = 0; i < l.args.size(); ++i) r.args.push_back(arg(l.args[i], k.params[i], i));
    return r;
  }

  static std::string param_text(const KernelParam& p, size_t index) {
    std::string who = p.name.empty() ? "parameter " + std::to_string(index) : "parameter '" + p.name + "'";
    return who + " (" + p.type_text + ")";
  }

  ResolvedArg arg(const PlanArg& a, const KernelParam& p, size_t index) const {
    const std::string& w = a.where;
    const std::string param = param_text(p, index);
    ResolvedArg r;
    if (p.kind == ParamKind::other)
      fail_at(w, param +
                     " has a type a launch plan cannot pass; use a pointer to a tensor's element type, "
                     "an integer type, float or double");
    const Tensor* t = a.kind == PlanArg::name_or_expr ? tensor(a.text) : nullptr;
    if (t && is_dim(a.text))
      fail_at(w, "'" + a.text + "' is both the " + t->what + " and a dimension of the task; write (" + a.text + ") for the dimension");
    if (p.kind == ParamKind::pointer) {
      if (!t) {
        if (a.kind == PlanArg::number || !looks_like_tensor_name(a.text) || is_dim(a.text)) {
          fail_at(w, "'" + a.text + "' is " + (a.kind == PlanArg::number ? "a number" : "an integer expression") + " but " + param +
                         " is a pointer; pass a tensor: " + join(tensor_names_));
        }
        std::string hint = closest_match(a.text, tensor_names_);
        fail_at(w, "unknown tensor '" + a.text + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                       "; the tensors: " + join(tensor_names_));
      }
      if (p.pointee_text != "void" && (!p.pointee || *p.pointee != t->dtype)) {
        fail_at(w, std::string(t->what) + " is " + dtype_name(t->dtype) + " but " + param + " points to " +
                       (p.pointee_text.empty() ? "?" : p.pointee_text) + "; a " + dtype_name(t->dtype) + " tensor takes a " +
                       c_type_of(t->dtype) + "* (or void*) parameter");
      }
      if (t->ref.role == BufferRole::output && p.is_const)
        fail_at(w, t->what + " is passed to a const pointer " + param + "; the kernel must write it");
      r.kind = ResolvedArg::buffer;
      r.ref = t->ref;
      return r;
    }
    if (t) fail_at(w, "'" + a.text + "' is the " + t->what + " but " + param + " is a value, not a pointer");
    bool is_float = p.kind == ParamKind::f32 || p.kind == ParamKind::f64;
    if (is_float) {
      r.kind = p.kind == ParamKind::f32 ? ResolvedArg::f32 : ResolvedArg::f64;
      r.f = a.kind == PlanArg::number ? a.value : static_cast<double>(eval(expression(a), w));
      if (p.kind == ParamKind::f32 && std::isfinite(r.f) && std::fabs(r.f) > std::numeric_limits<float>::max())
        fail_at(w, "'" + a.text + "' is out of range for " + param);
      return r;
    }
    int64_t v = 0;
    if (a.kind == PlanArg::number) {
      double d = a.value;
      if (!std::isfinite(d) || std::floor(d) != d) fail_at(w, "'" + a.text + "' is not an integer but " + param + " is an integer");
      if (d < -9.2233720368547758e18 || d >= 9.2233720368547758e18) fail_at(w, "'" + a.text + "' is out of range for " + param);
      v = static_cast<int64_t>(d);
    } else {
      v = eval(expression(a), w);
    }
    int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    switch (p.kind) {
      case ParamKind::i32:
        lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(), r.kind = ResolvedArg::i32;
        break;
      case ParamKind::u32:
        lo = 0, hi = std::numeric_limits<uint32_t>::max(), r.kind = ResolvedArg::u32;
        break;
      case ParamKind::i64:
        r.kind = ResolvedArg::i64;
        break;
      default:
        lo = 0, r.kind = ResolvedArg::u64;
        break;
    }
    if (v < lo || v > hi)
      fail_at(w, "'" + a.text + "' is " + std::to_string(v) + ", out of range for " + param + " [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    r.i = v;
    return r;
  }

  DimExpr expression(const PlanArg& a) const {
    try {
      return DimExpr::parse(a.text);
    } catch (const Error& e) {
      fail_at(a.where, e.what());
    }
  }

  const LaunchPlan& plan_;
  const TaskSpec& task_;
  const std::vector<KernelSignature>& kernels_;
  const DeviceLimits& limits_;
  std::map<std::string, Tensor> tensors_;
  std::vector<std::string> tensor_names_, dim_names_;
};

}  // namespace

ResolvedPlan resolve_plan(const LaunchPlan& plan, const TaskSpec& task, const std::vector<KernelSignature>& kernels,
                          const DeviceLimits& limits) {
  return Resolver(plan, task, kernels, limits).run();
}

std::set<std::string> plan_dim_names(const LaunchPlan& plan, const DimEnv& dims) {
  std::set<std::string> named;
  auto add = [&](const DimExpr& e) {
    for (const auto& n : e.names())
      if (dims.count(n)) named.insert(n);
  };
  for (const auto& w : plan.workspace) add(w.size);
  for (const auto& l : plan.launches) {
    for (const auto& e : l.grid) add(e);
    for (const auto& e : l.block) add(e);
    add(l.shared_mem);
    for (const auto& a : l.args) {
      if (a.kind != PlanArg::name_or_expr) continue;
      try {
        add(DimExpr::parse(a.text));
      } catch (const Error&) {  // a tensor's name such as "fc.weight" is no expression
      }
    }
  }
  return named;
}

}  // namespace kforge
