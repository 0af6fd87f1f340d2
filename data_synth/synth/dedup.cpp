#include "data_synth/synth/dedup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"

namespace kforge {

namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex(uint64_t a, uint64_t b) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return buf;
}

std::string attr_text(const AttrValue& v) {
  switch (v.kind) {
    case AttrKind::integer:
      return std::to_string(v.i);
    case AttrKind::real:
      return shortest_double(v.f);
    case AttrKind::boolean:
      return v.b ? "1" : "0";
    case AttrKind::text:
      return v.s;
    case AttrKind::integers:
      return shape_str(v.ints);
  }
  return "";
}

// Each node's structural text, built from its inputs' (graph inputs by shape and dtype).
std::vector<std::string> node_texts(const TaskSpec& t, bool with_shapes) {
  const ResolvedGraph& g = t.resolved;
  std::vector<std::string> text(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ResolvedNode& n = g.nodes[i];
    std::string s = n.call.op->name;
    if (with_shapes) {
      s += "{";
      for (const auto& [k, v] : n.call.attrs) s += k + "=" + attr_text(v) + ";";
      s += "}" + shape_str(n.out.shape) + dtype_name(n.out.dtype);
    }
    s += "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const TensorRef& r = n.inputs[k];
      std::string in;
      if (r.is_node) {
        in = text[r.index];
      } else if (with_shapes) {
        const auto& m = g.arguments[r.index].meta;
        in = "#" + shape_str(m.shape) + dtype_name(m.dtype);
      } else {
        in = "#";
      }
      s += (k ? "," : "") + in;
    }
    text[i] = s + ")";
  }
  return text;
}

}  // namespace

std::string canonical_graph_hash(const TaskSpec& t) {
  auto text = node_texts(t, true);
  std::string all;
  for (const auto& r : t.resolved.outputs) all += text[r.index] + "|";
  return hex(fnv1a(all), fnv1a(all, 0x84222325cbf29ce4ULL));
}

std::string canonical_op_sequence(const TaskSpec& t) {
  auto text = node_texts(t, false);
  std::string all;
  for (const auto& r : t.resolved.outputs) all += (all.empty() ? "" : "|") + text[r.index];
  return all;
}

std::vector<std::string> op_names(const TaskSpec& t) {
  std::vector<std::string> out;
  for (const auto& n : t.graph.nodes) out.push_back(n.op);
  return out;
}

std::vector<KernelBenchSignature> load_kernelbench_signatures(const std::string& path) {
  const std::string text = read_file(path, "the KernelBench signature list (tools/dataset/kernelbench_signatures.py writes it)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    KFORGE_FAIL(config, path << ": not valid JSON: " << e.what());
  }
  KFORGE_CHECK(j.is_object() && j.contains("problems") && j["problems"].is_array(), config, path << ": expected {\"problems\": [...]}");
  std::vector<KernelBenchSignature> out;
  for (const auto& p : j["problems"]) {
    try {
      KernelBenchSignature s;
      s.name = p.at("name").get<std::string>();
      s.level = p.at("level").get<int>();
      s.ops = p.at("ops").get<std::vector<std::string>>();
      s.input_shapes = p.at("input_shapes").get<std::vector<std::vector<int64_t>>>();
      out.push_back(std::move(s));
    } catch (const std::exception& e) {
      KFORGE_FAIL(config, path << ": problem " << out.size() << ": " << e.what());
    }
  }
  return out;
}

double op_sequence_similarity(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() || b.empty()) return 0;
  std::vector<std::vector<int>> l(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) l[i][j] = a[i - 1] == b[j - 1] ? l[i - 1][j - 1] + 1 : std::max(l[i - 1][j], l[i][j - 1]);
  return static_cast<double>(l[a.size()][b.size()]) / static_cast<double>(std::max(a.size(), b.size()));
}

double shape_similarity(const std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b) {
  double best = 0;
  for (const auto& x : a)
    for (const auto& y : b) {
      if (x.size() != y.size() || x.empty()) continue;
      double s = 0;
      for (size_t i = 0; i < x.size(); ++i)
        s += static_cast<double>(std::min(x[i], y[i])) / static_cast<double>(std::max<int64_t>(1, std::max(x[i], y[i])));
      best = std::max(best, s / static_cast<double>(x.size()));
    }
  return best;
}

std::string kernelbench_match(const TaskSpec& t, const std::vector<KernelBenchSignature>& sigs, const DecontaminationRule& rule) {
  std::vector<std::string> ops = op_names(t);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& a : t.arguments)
    if (a.decl.role == ArgRole::input) shapes.push_back(a.decl.meta.shape);
  for (const auto& s : sigs) {
    if (op_sequence_similarity(ops, s.ops) < rule.op_similarity) continue;
    if (static_cast<int>(ops.size()) >= rule.sequence_only_min_ops) return s.name;
    if (shape_similarity(shapes, s.input_shapes) >= rule.shape_similarity) return s.name;
  }
  return "";
}

size_t assign_splits(std::vector<TaskSpec>& tasks, double fraction, uint64_t seed) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < tasks.size(); ++i) groups[canonical_op_sequence(tasks[i])].push_back(i);
  std::vector<std::pair<uint64_t, const std::string*>> order;
  for (const auto& [seq, members] : groups) order.push_back({fnv1a(seq, 0xcbf29ce484222325ULL ^ (seed * 0x9e3779b97f4a7c15ULL)), &seq});
  std::sort(order.begin(), order.end());
  for (auto& t : tasks) t.split = Split::train;
  size_t target = static_cast<size_t>(std::ceil(fraction * static_cast<double>(tasks.size())));
  size_t heldout = 0;
  // Whole groups in hash order until the share is reached, skipping groups that would overshoot it
  // twice over (then, if still short, any); the last group in the order always stays in train.
  std::vector<bool> taken(order.size(), false);
  for (int pass = 0; pass < 2 && heldout < target; ++pass)
    for (size_t k = 0; k + 1 < order.size() && heldout < target; ++k) {
      const auto& members = groups[*order[k].second];
      if (taken[k] || (pass == 0 && heldout + members.size() > 2 * target)) continue;
      taken[k] = true;
      for (size_t i : members) tasks[i].split = Split::heldout;
      heldout += members.size();
    }
  return heldout;
}

}  // namespace kforge
