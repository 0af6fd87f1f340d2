#include "data_synth/task/op_registry.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "data_synth/task/dim_expr.h"

namespace kforge {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) KFORGE_FAIL(spec, "shape " << shape_str(s) << " has more elements than a 64-bit count holds");
  return n;
}

int64_t tensor_bytes(const Shape& s, DType dtype) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel(s), static_cast<int64_t>(dtype_size(dtype)), &bytes))
    KFORGE_FAIL(spec, "shape " << shape_str(s) << " of " << dtype_name(dtype) << " has more bytes than a 64-bit count holds");
  return bytes;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::elementwise_unary:
      return "elementwise_unary";
    case OpCategory::elementwise_binary:
      return "elementwise_binary";
    case OpCategory::reduction:
      return "reduction";
    case OpCategory::normalization:
      return "normalization";
    case OpCategory::matmul:
      return "matmul";
    case OpCategory::convolution:
      return "convolution";
    case OpCategory::layout:
      return "layout";
    case OpCategory::pooling:
      return "pooling";
    case OpCategory::attention:
      return "attention";
    case OpCategory::loss:
      return "loss";
    case OpCategory::indexing:
      return "indexing";
  }
  return "?";
}

void refuse(const std::string& reason) { throw_error(ErrorKind::shape, reason); }

const AttrValue& OpCall::attr(const std::string& name) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) KFORGE_FAIL(internal, "operator " << (op ? op->name : "?") << " reads undeclared attribute '" << name << "'");
  return it->second;
}
int64_t OpCall::i(const std::string& name) const { return attr(name).i; }
double OpCall::f(const std::string& name) const { return attr(name).f; }
bool OpCall::b(const std::string& name) const { return attr(name).b; }
const std::string& OpCall::s(const std::string& name) const { return attr(name).s; }
const std::vector<int64_t>& OpCall::ints(const std::string& name) const { return attr(name).ints; }

const AttrSpec* OpDef::find_attr(const std::string& name) const {
  for (const auto& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

OpRegistry::OpRegistry() {
  register_elementwise_ops(*this);
  register_reduction_ops(*this);
  register_normalization_ops(*this);
  register_matmul_conv_ops(*this);
  register_layout_ops(*this);
  register_pooling_ops(*this);
  register_attention_loss_ops(*this);
  register_indexing_ops(*this);
}

void OpRegistry::add(OpDef def) {
  KFORGE_CHECK(!index_.count(def.name), internal, "operator '" << def.name << "' registered twice");
  KFORGE_CHECK(def.infer && def.flops && def.py_expr, internal, "operator '" << def.name << "' lacks a rule");
  index_[def.name] = ops_.size();
  ops_.push_back(std::move(def));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &ops_[it->second];
}

const OpDef& OpRegistry::get(const std::string& name) const {
  if (const OpDef* d = find(name)) return *d;
  std::string hint = closest_match(name, names());
  KFORGE_FAIL(spec, "unknown operator '" << name << "'" << (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& op : ops_) out.push_back(op.name);
  return out;
}

const OpRegistry& op_registry() {
  static const OpRegistry registry;
  return registry;
}

int64_t normalize_dim(int64_t dim, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) {
    refuse("dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      refuse("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast (dim " + std::to_string(i) + ": " + std::to_string(da) +
             " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void require_float(const OpCall& c) {
  for (const auto& t : c.in)
    if (!dtype_is_float(t.dtype)) refuse(c.op->name + " expects floating inputs, got " + dtype_name(t.dtype));
}

std::string shortest_double(double v) {
  std::string s;
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << v;
    s = os.str();
    if (std::strtod(s.c_str(), nullptr) == v) break;
  }
  return s;
}

std::string py_float(double v) {
  std::string s = shortest_double(v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string py_ints(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

namespace {

// Splits "[a, min(b, c), -1]" at its top-level commas.
std::vector<std::string> split_list(const std::string& text, const std::string& where) {
  std::string t = text;
  auto trim = [](std::string s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  t = trim(t);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']')
    KFORGE_FAIL(spec, where << ": expected a list like [2, 3], got '" << text << "'");
  t = t.substr(1, t.size() - 2);
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : t) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !parts.empty()) parts.push_back(trim(cur));
  for (const auto& p : parts)
    if (p.empty()) KFORGE_FAIL(spec, where << ": empty element in list '" << text << "'");
  return parts;
}

}  // namespace

Attrs resolve_attrs(const OpDef& op, const std::map<std::string, std::string>& source, const std::map<std::string, int64_t>& dims) {
  for (const auto& [name, text] : source) {
    if (!op.find_attr(name)) {
      std::vector<std::string> known;
      for (const auto& a : op.attrs) known.push_back(a.name);
      std::string hint = closest_match(name, known);
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      KFORGE_FAIL(spec, "operator " << op.name << " has no attribute '" << name << "'"
                                    << (hint.empty() ? "" : " (did you mean '" + hint + "'?)")
                                    << " (attributes: " << (list.empty() ? "none" : list) << ")");
    }
  }
  Attrs out;
  for (const AttrSpec& spec : op.attrs) {
    auto it = source.find(spec.name);
    if (it == source.end() && spec.required())
      KFORGE_FAIL(spec, "operator " << op.name << " needs attribute '" << spec.name << "' (" << spec.doc << ")");
    std::string text = it == source.end() ? spec.default_text : it->second;
    std::string where = "operator " + op.name + " attribute '" + spec.name + "'";
    AttrValue v;
    v.kind = spec.kind;
    switch (spec.kind) {
      case AttrKind::integer: {
        DimExpr e = DimExpr::parse(text);
        v.i = e.eval(dims);
        v.py = e.python();
        break;
      }
      case AttrKind::real: {
        char* end = nullptr;
        v.f = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v.f))
          KFORGE_FAIL(spec, where << ": expected a finite number, got '" << text << "'");
        v.py = py_float(v.f);
        break;
      }
      case AttrKind::boolean:
        if (text != "true" && text != "false") KFORGE_FAIL(spec, where << ": expected true or false, got '" << text << "'");
        v.b = text == "true";
        v.py = v.b ? "True" : "False";
        break;
      case AttrKind::text: {
        bool ok = spec.choices.empty();
        for (const auto& c : spec.choices) ok = ok || c == text;
        if (!ok) {
          std::string list;
          for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
          KFORGE_FAIL(spec, where << ": '" << text << "' is not one of " << list);
        }
        v.s = text;
        v.py = "'" + text + "'";
        break;
      }
      case AttrKind::integers: {
        std::string py = "[";
        for (const auto& part : split_list(text, where)) {
          DimExpr e = DimExpr::parse(part);
          v.ints.push_back(e.eval(dims));
          py += (py.size() > 1 ? ", " : "") + e.python();
        }
        v.py = py + "]";
        break;
      }
    }
    out[spec.name] = v;
  }
  return out;
}

}  // namespace kforge
