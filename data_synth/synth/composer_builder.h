#pragma once
// The composer's inside, shared by composer.cpp (first operators, the draw) and
// composer_follows.cpp (the operators that follow): the graph under construction and its helpers.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "data_synth/synth/composer.h"

namespace kforge::compose {

inline constexpr int64_t kBuildBatch = 13;  // B while composing: a value no shape sampler draws
inline const std::set<std::string> kSpatialDims = {"H", "W", "L", "S", "T"};

inline std::string str(int64_t v) { return std::to_string(v); }

struct Tensor {
  std::string name;
  TensorMeta meta;
  int rank() const { return static_cast<int>(meta.shape.size()); }
  int64_t dim(int i) const { return meta.shape[i < 0 ? meta.shape.size() + i : i]; }
};

// The graph under construction, with every tensor's concrete shape at B = kBuildBatch.
struct Builder {
  SynthRng& rng;
  DType dtype;
  const SynthConfig& cfg;
  OpGraph graph;
  DimEnv dims{{"B", kBuildBatch}};
  std::vector<std::pair<int64_t, std::string>> names{{kBuildBatch, "B"}};  // value -> dim name, first wins
  std::vector<Tensor> tensors;                                             // inputs and nodes
  Tensor cur;
  std::vector<std::string> ops;
  int inputs = 0, nodes = 0;

  // A graph input; `sym` entries are dim names (declared here with their value) or "" for a constant.
  Tensor input(const Shape& shape, DType dt, std::vector<std::string> sym = {}) {
    GraphInput in;
    in.name = "x" + str(inputs++);
    in.dtype = dt;
    for (size_t i = 0; i < shape.size(); ++i) {
      std::string s = i < sym.size() ? sym[i] : "";
      if (!s.empty() && !dims.count(s)) {
        dims[s] = shape[i];
        names.push_back({shape[i], s});
      }
      if (s.empty())
        for (const auto& [v, n] : names)
          if (v == shape[i]) {
            s = n;
            break;
          }
      in.shape.push_back(s.empty() ? DimExpr::constant(shape[i]) : DimExpr::parse(s));
    }
    graph.inputs.push_back(in);
    Tensor t{in.name, {shape, dt}};
    tensors.push_back(t);
    return t;
  }
  Tensor like(const Tensor& t) { return input(t.meta.shape, t.meta.dtype); }

  Tensor node(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, std::string> attrs = {}) {
    const OpDef& def = op_registry().get(op);
    OpCall call;
    call.op = &def;
    call.id = "n" + str(nodes);
    for (const auto& t : in) call.in.push_back(t.meta);
    call.attrs = resolve_attrs(def, attrs, dims);
    TensorMeta out = def.infer(call);  // throws a shape error for a bad draw
    GraphNode n;
    n.id = call.id;
    n.op = op;
    for (const auto& t : in) n.inputs.push_back(t.name);
    n.attrs = std::move(attrs);
    graph.nodes.push_back(n);
    ++nodes;
    ops.push_back(op);
    cur = Tensor{n.id, out};
    tensors.push_back(cur);
    return cur;
  }

  int64_t pick(std::vector<int64_t> v) { return rng.pick(v); }
  bool is_float() const { return dtype_is_float(cur.meta.dtype); }
};

// First operators' helpers (composer_follows.cpp): a shape and an input of the generic kinds, the
// attributes of a unary operator, a second operand for a binary one.
Shape generic_shape(Builder& b, std::vector<std::string>& sym);
Tensor generic_input(Builder& b);
std::map<std::string, std::string> unary_attrs(Builder& b, const std::string& op);
Tensor second_operand(Builder& b);

using Follow = std::function<bool(Builder&, bool last, int slots)>;

struct FollowRecipe {
  std::string op;
  double weight;
  Follow apply;
};

const std::vector<FollowRecipe>& follow_recipes();

}  // namespace kforge::compose
