#pragma once
// The operator registry: every PyTorch operator a task graph may use, and what it knows about
// itself — its shape rule (refusing shapes it cannot take, with a reason), the parameters it owns,
// its FLOP count, and how it renders as PyTorch source. How each executes in libtorch lives in
// op_exec.cpp (the only part that needs libtorch); op_registry_test checks both cover the same ops.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data_synth/task/draw.h"
#include "data_synth/task/dtype.h"

namespace kforge {

using Shape = std::vector<int64_t>;

// The number of elements of `s`, and of bytes at `dtype`. A product past int64 is a spec error
// (it used to wrap, e.g. to 0, and the task then claimed flops: 0, min_bytes: 0).
int64_t numel(const Shape& s);
int64_t tensor_bytes(const Shape& s, DType dtype);
std::string shape_str(const Shape& s);  // "[4, 1024]"

struct TensorMeta {
  Shape shape;
  DType dtype = DType::float32;
  bool operator==(const TensorMeta& o) const { return shape == o.shape && dtype == o.dtype; }
};

enum class OpCategory {
  elementwise_unary,
  elementwise_binary,
  reduction,
  normalization,
  matmul,
  convolution,
  layout,
  pooling,  // pooling and upsampling
  attention,
  loss,
  indexing,  // embedding lookups, index_add
};
const char* category_name(OpCategory c);

enum class AttrKind { integer, real, boolean, text, integers };

// A resolved attribute value and the Python source that produced it ("N", "1e-05", "[B, -1]").
struct AttrValue {
  AttrKind kind = AttrKind::integer;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::string py;
};
using Attrs = std::map<std::string, AttrValue>;

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::string default_text;  // empty: required
  std::string doc;
  std::vector<std::string> choices;  // for text attributes
  bool required() const { return default_text.empty(); }
};

struct OpDef;

// One application of an operator: its input metadata and resolved attributes.
struct OpCall {
  const OpDef* op = nullptr;
  std::string id;  // the graph node id (its Python name and its parameters' prefix)
  std::vector<TensorMeta> in;
  Attrs attrs;

  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;
  bool b(const std::string& name) const;
  const std::string& s(const std::string& name) const;
  const std::vector<int64_t>& ints(const std::string& name) const;
  const AttrValue& attr(const std::string& name) const;
  const Shape& shape(size_t input = 0) const { return in.at(input).shape; }
  DType dtype() const { return in.at(0).dtype; }
};

// A parameter or buffer an operator owns, in PyTorch's state_dict order for its module.
struct ParamDecl {
  std::string name;  // local name: "weight", "running_var"
  Shape shape;
  DType dtype;
  Draw draw;
  bool buffer = false;
  bool used = true;  // false for state the function ignores (BatchNorm's num_batches_tracked)
};

// An input set on which the operator is valid, and one it must refuse (for tests and synthesis).
struct OpExample {
  std::vector<Shape> inputs;
  std::map<std::string, std::string> attrs;
  std::string refusal;              // for a bad example: a piece of the reason it must give
  DType dtype = DType::float32;     // the dtype of every input ...
  std::vector<DType> input_dtypes;  // ... unless given per input (indices, masks)
  DType input_dtype(size_t i) const { return i < input_dtypes.size() ? input_dtypes[i] : dtype; }
};

struct OpDef {
  std::string name;
  OpCategory category;
  std::string summary;
  int min_inputs = 1;
  int max_inputs = 1;
  std::vector<AttrSpec> attrs;

  // Output metadata; calls refuse(...) for shapes or attributes it cannot take.
  std::function<TensorMeta(const OpCall&)> infer;
  // Parameters and buffers (none when unset).
  std::function<std::vector<ParamDecl>(const OpCall&)> params;
  // A lower bound on the floating-point operations.
  std::function<double(const OpCall&, const TensorMeta& out)> flops;
  // Python: the module built in __init__ (empty when the op has none) ...
  std::function<std::string(const OpCall&)> py_module;
  // ... and the forward expression, given the inputs' names and "self.<id>".
  std::function<std::string(const OpCall&, const std::vector<std::string>& args, const std::string& self)> py_expr;

  // How a graph input feeding input slot `i` must be drawn where the default (normal for floats,
  // randint(0, 2) for integers) is wrong, e.g. indices within range. Unset or nullopt: the default.
  std::function<std::optional<Draw>(const OpCall&, size_t input)> input_draw;
  // Nondeterministic by nature on the GPU (floating atomics): hand-written tasks may use it, the
  // synthesizer never does (a task must give the same answer twice).
  bool nondeterministic = false;

  OpExample example;
  OpExample bad_example;

  const AttrSpec* find_attr(const std::string& name) const;
};

// Throws the shape error an operator's rule gives for inputs it refuses.
[[noreturn]] void refuse(const std::string& reason);

class OpRegistry {
 public:
  OpRegistry();
  // nullptr when unknown.
  const OpDef* find(const std::string& name) const;
  // Throws a spec error naming the closest known operator.
  const OpDef& get(const std::string& name) const;
  const std::vector<OpDef>& all() const { return ops_; }
  std::vector<std::string> names() const;

  void add(OpDef def);

 private:
  std::vector<OpDef> ops_;
  std::map<std::string, size_t> index_;
};

const OpRegistry& op_registry();

// Resolves attribute source text ("N", "1e-5", "[B, -1]") against the op's attribute specs and the
// task's dimensions; fills defaults; throws a spec error for unknown, missing or mistyped ones.
Attrs resolve_attrs(const OpDef& op, const std::map<std::string, std::string>& source, const std::map<std::string, int64_t>& dims);

// Per-category registration (ops_*.cpp).
void register_elementwise_ops(OpRegistry& r);
void register_reduction_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_matmul_conv_ops(OpRegistry& r);
void register_layout_ops(OpRegistry& r);
void register_pooling_ops(OpRegistry& r);
void register_attention_loss_ops(OpRegistry& r);
void register_indexing_ops(OpRegistry& r);

// Shape helpers shared by the rules.
int64_t normalize_dim(int64_t dim, size_t rank);         // refuses out-of-range dims
Shape broadcast_shapes(const Shape& a, const Shape& b);  // refuses incompatible ones
std::string shortest_double(double v);                   // the shortest text that reads back as v
std::string py_float(double v);                          // Python literal for a float attribute
std::string py_ints(const Shape& s);                     // "[2, 3]"
void require_float(const OpCall& c);                     // refuses non-floating inputs

}  // namespace kforge
