// The task format's writer: task_to_yaml and spec_with_baselines (task_spec.h), and the emit_*
// pieces imported tasks share (task_yaml.h). Its reader is task_spec.cpp.
#include "data_synth/task/task_spec.h"

#include <sstream>
#include <string>
#include <vector>

#include "data_synth/task/task_yaml.h"

namespace kforge {

using task_yaml::num;

namespace task_yaml {

void emit_shape(YAML::Emitter& e, const Shape& s) {
  e << YAML::Flow << YAML::BeginSeq;
  for (int64_t d : s) e << d;
  e << YAML::EndSeq;
}

void emit_draw(YAML::Emitter& e, const Draw& d) {
  e << YAML::Flow << YAML::BeginMap;
  switch (d.dist) {
    case DrawDist::normal:
      e << YAML::Key << "dist" << YAML::Value << "normal" << YAML::Key << "mean" << YAML::Value << num(d.a) << YAML::Key << "std"
        << YAML::Value << num(d.b);
      break;
    case DrawDist::uniform:
      e << YAML::Key << "dist" << YAML::Value << "uniform" << YAML::Key << "low" << YAML::Value << num(d.a) << YAML::Key << "high"
        << YAML::Value << num(d.b);
      break;
    case DrawDist::randint:
      e << YAML::Key << "dist" << YAML::Value << "randint" << YAML::Key << "low" << YAML::Value << static_cast<int64_t>(d.a) << YAML::Key
        << "high" << YAML::Value << static_cast<int64_t>(d.b);
      break;
    case DrawDist::constant:
      e << YAML::Key << "dist" << YAML::Value << "constant" << YAML::Key << "value" << YAML::Value << num(d.a);
      break;
  }
  e << YAML::EndMap;
}

void emit_argument(YAML::Emitter& e, const TaskArgument& a) {
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << a.decl.name << YAML::Key << "role" << YAML::Value
    << arg_role_name(a.decl.role) << YAML::Key << "shape" << YAML::Value;
  emit_shape(e, a.decl.meta.shape);
  e << YAML::Key << "dtype" << YAML::Value << dtype_name(a.decl.meta.dtype) << YAML::Key << "draw" << YAML::Value;
  emit_draw(e, a.draw);
  if (!a.decl.used) e << YAML::Key << "used" << YAML::Value << false;
  e << YAML::EndMap;
}

void emit_output(YAML::Emitter& e, const TaskOutput& o) {
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << o.name << YAML::Key << "shape" << YAML::Value;
  emit_shape(e, o.meta.shape);
  e << YAML::Key << "dtype" << YAML::Value << dtype_name(o.meta.dtype) << YAML::EndMap;
}

}  // namespace task_yaml

namespace {

void emit_baselines(YAML::Emitter& e, const Baselines& b) {
  e << YAML::Key << "baselines" << YAML::Value << YAML::BeginMap;
  if (b.eager_ms) e << YAML::Key << "eager_ms" << YAML::Value << num(*b.eager_ms);
  if (b.compile_ms) e << YAML::Key << "compile_ms" << YAML::Value << num(*b.compile_ms);
  // Every string quoted: a plain 13.0 or 2.10 is a float to other YAML readers (13, 2.1), and a
  // plain false a boolean.
  e << YAML::Key << "gpu" << YAML::Value << YAML::DoubleQuoted << b.gpu << YAML::Key << "torch" << YAML::Value << YAML::DoubleQuoted
    << b.torch_version << YAML::Key << "cuda" << YAML::Value << YAML::DoubleQuoted << b.cuda_version << YAML::Key << "method" << YAML::Value
    << YAML::DoubleQuoted << b.method;
  if (!b.flags.empty()) {
    e << YAML::Key << "flags" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : b.flags) e << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

void emit_dims(YAML::Emitter& e, const DimEnv& dims) {
  e << YAML::Flow << YAML::BeginMap;
  for (const auto& [k, v] : dims) e << YAML::Key << k << YAML::Value << v;
  e << YAML::EndMap;
}

void emit_attr(YAML::Emitter& e, const std::string& text) {
  if (!text.empty() && text.front() == '[') {
    // Re-split the list text at top-level commas.
    std::string inner = text.substr(1, text.size() - 2);
    e << YAML::Flow << YAML::BeginSeq;
    int depth = 0;
    std::string cur;
    auto flush = [&] {
      size_t b = cur.find_first_not_of(' '), en = cur.find_last_not_of(' ');
      if (b != std::string::npos) e << cur.substr(b, en - b + 1);
      cur.clear();
    };
    for (char c : inner) {
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (c == ',' && depth == 0)
        flush();
      else
        cur += c;
    }
    flush();
    e << YAML::EndSeq;
  } else {
    e << text;
  }
}

void emit_graph_body(YAML::Emitter& e, const TaskSpec& t) {
  e << YAML::Key << "dims" << YAML::Value;
  emit_dims(e, t.dims);
  if (t.check_dims) {
    e << YAML::Key << "check_dims" << YAML::Value;
    emit_dims(e, *t.check_dims);
  }
  if (!t.extra_dims.empty()) {
    e << YAML::Key << "extra_dims" << YAML::Value << YAML::BeginSeq;
    for (const DimEnv& d : t.extra_dims) emit_dims(e, d);
    e << YAML::EndSeq;
  }
  e << YAML::Key << "graph" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "inputs" << YAML::Value << YAML::BeginSeq;
  for (const auto& in : t.graph.inputs) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << in.name << YAML::Key << "shape" << YAML::Value << YAML::Flow
      << YAML::BeginSeq;
    for (const auto& d : in.shape) e << d.str();
    e << YAML::EndSeq;
    if (in.dtype != t.dtype) e << YAML::Key << "dtype" << YAML::Value << dtype_name(in.dtype);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : t.graph.nodes) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "id" << YAML::Value << n.id << YAML::Key << "op" << YAML::Value << n.op << YAML::Key
      << "in" << YAML::Value << YAML::Flow << n.inputs;
    if (!n.attrs.empty()) {
      e << YAML::Key << "attrs" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : n.attrs) {
        e << YAML::Key << k << YAML::Value;
        emit_attr(e, v);
      }
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "outputs" << YAML::Value << YAML::Flow << t.graph.outputs;
  e << YAML::EndMap;

  e << YAML::Key << "arguments" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : t.arguments) task_yaml::emit_argument(e, a);
  e << YAML::EndSeq;
  e << YAML::Key << "outputs" << YAML::Value << YAML::BeginSeq;
  for (const auto& o : t.outputs) task_yaml::emit_output(e, o);
  e << YAML::EndSeq;
}

// Imported tasks write every provenance key (null where it does not apply), others the two.
void emit_provenance(YAML::Emitter& e, const Provenance& p) {
  e << YAML::Key << "provenance" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "generator" << YAML::Value << p.generator
    << YAML::Key << "seed" << YAML::Value << p.seed;
  if (!p.format.empty()) {
    auto opt = [&](const char* key, const std::optional<int64_t>& v) {
      e << YAML::Key << key << YAML::Value;
      if (v)
        e << *v;
      else
        e << YAML::Null;
    };
    e << YAML::Key << "format" << YAML::Value << p.format << YAML::Key << "file" << YAML::Value << YAML::DoubleQuoted << p.file << YAML::Key
      << "file_sha256" << YAML::Value << p.file_sha256;
    opt("row", p.row);
    opt("level", p.level);
    e << YAML::Key << "ops" << YAML::Value;
    if (p.ops)
      e << YAML::Flow << *p.ops;
    else
      e << YAML::Null;
    e << YAML::Key << "tolerance_profile" << YAML::Value << p.tolerance_profile;
  }
  e << YAML::EndMap;
}

}  // namespace

std::string task_to_yaml(const TaskSpec& t) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "kforge_task" << YAML::Value << TaskSpec::kFormatVersion;
  e << YAML::Key << "id" << YAML::Value << t.id;
  e << YAML::Key << "source" << YAML::Value << task_source_name(t.source);
  e << YAML::Key << "split" << YAML::Value << split_name(t.split);
  if (!t.description.empty()) e << YAML::Key << "description" << YAML::Value << t.description;
  e << YAML::Key << "seed" << YAML::Value << t.seed;
  e << YAML::Key << "dtype" << YAML::Value << dtype_name(t.dtype);
  if (t.imported())
    task_yaml::emit_imported_body(e, t);
  else
    emit_graph_body(e, t);
  e << YAML::Key << "tolerance" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "atol" << YAML::Value
    << num(t.tolerance.atol) << YAML::Key << "rtol" << YAML::Value << num(t.tolerance.rtol) << YAML::EndMap;
  e << YAML::Key << "cost" << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (t.cost.flops) e << YAML::Key << "flops" << YAML::Value << num(*t.cost.flops);
  e << YAML::Key << "min_bytes" << YAML::Value << num(t.cost.min_bytes) << YAML::EndMap;
  if (!t.baselines.empty()) emit_baselines(e, t.baselines);
  emit_provenance(e, t.provenance);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::string spec_with_baselines(const std::string& text, const Baselines& b, const std::string& origin) {
  // A top-level key starts a line with neither indentation, comment nor list marker.
  auto top_level = [](const std::string& ln) {
    return !ln.empty() && ln[0] != ' ' && ln[0] != '\t' && ln[0] != '#' && ln[0] != '-' && ln.find(':') != std::string::npos;
  };
  std::vector<std::string> kept;
  std::istringstream in(text);
  std::string ln;
  bool skip = false, last_kept = false;
  while (std::getline(in, ln)) {
    if (top_level(ln)) skip = ln.rfind("baselines:", 0) == 0;
    last_kept = !skip;
    if (!skip) kept.push_back(ln + "\n");
  }
  if (!text.empty() && text.back() != '\n' && last_kept) kept.back().pop_back();  // the last line as it was
  std::string block;
  if (!b.empty()) {
    YAML::Emitter e;
    e << YAML::BeginMap;
    emit_baselines(e, b);
    e << YAML::EndMap;
    block = std::string(e.c_str()) + "\n";
  }
  std::string out;
  bool placed = false;
  for (const auto& k : kept) {
    if (!placed && k.rfind("provenance:", 0) == 0) {
      out += block;
      placed = true;
    }
    out += k;
  }
  if (!placed) out += (out.empty() || out.back() == '\n' ? "" : "\n") + block;
  parse_task(out, origin);  // the result must still be a task
  return out;
}

}  // namespace kforge
