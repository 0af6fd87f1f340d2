#pragma once
// A task's function as a graph of 1 to 5 operators (a DAG: a node may feed several others, a node
// may take several tensors). Nodes are listed in execution order and may only use graph inputs and
// earlier nodes, so a cycle cannot be written. Resolving a graph against the task's dimensions
// checks every rule, infers every shape and lists the candidate's arguments.
#include <map>
#include <string>
#include <vector>

#include "data_synth/task/dim_expr.h"
#include "data_synth/task/op_registry.h"

namespace kforge {

constexpr int kMaxGraphOps = 5;

struct GraphInput {
  std::string name;
  std::vector<DimExpr> shape;
  DType dtype = DType::float32;
};

struct GraphNode {
  std::string id;
  std::string op;
  std::vector<std::string> inputs;           // graph input names or earlier node ids
  std::map<std::string, std::string> attrs;  // source text: "N", "1e-5", "[B, -1]", "true"
  std::string origin;                        // where it was written ("task.yaml:12:5"), for errors
};

struct OpGraph {
  std::vector<GraphInput> inputs;
  std::vector<GraphNode> nodes;
  std::vector<std::string> outputs;  // node ids
};

enum class ArgRole { input, parameter, buffer };
const char* arg_role_name(ArgRole r);

// One tensor the candidate receives, in order: graph inputs, then each node's parameters and
// buffers in state_dict order.
struct ArgumentDecl {
  std::string name;  // "x", "fc.weight"
  ArgRole role = ArgRole::input;
  TensorMeta meta;
  Draw draw;         // the default draw (a spec may override it)
  bool used = true;  // false for state the function never reads
};

struct TensorRef {
  bool is_node = false;  // else a graph input
  int index = 0;
};

struct ResolvedNode {
  OpCall call;
  TensorMeta out;
  std::vector<TensorRef> inputs;
  std::vector<int> params;  // argument indices of this node's parameters and buffers
  double flops = 0;
};

struct ResolvedGraph {
  std::vector<ArgumentDecl> arguments;
  std::vector<ResolvedNode> nodes;
  std::vector<TensorRef> outputs;
  std::vector<TensorMeta> output_metas;
  double flops = 0;      // lower bound, summed over nodes
  double min_bytes = 0;  // every used argument read once, every output written once
};

// Throws a spec error (or the operator's shape error, with the node named) for any broken rule.
ResolvedGraph resolve_graph(const OpGraph& graph, const DimEnv& dims);

// Names a graph may not use for inputs, nodes or dimensions (Python and the rendered module's own).
bool is_reserved_name(const std::string& name);

}  // namespace kforge
