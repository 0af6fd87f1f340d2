#include "data_synth/task/op_graph.h"

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

GraphInput input(const std::string& name, std::vector<std::string> shape) {
  GraphInput in;
  in.name = name;
  for (const auto& d : shape) in.shape.push_back(DimExpr::parse(d));
  return in;
}

GraphNode node(const std::string& id, const std::string& op, std::vector<std::string> in, std::map<std::string, std::string> attrs = {}) {
  return GraphNode{id, op, std::move(in), std::move(attrs), ""};
}

std::string error_of(const OpGraph& g, const DimEnv& dims = {{"B", 4}, {"D", 8}}) {
  try {
    resolve_graph(g, dims);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

OpGraph diamond() {
  // x -> linear -> relu -> add(x, .) -> layer_norm: x feeds two nodes.
  OpGraph g;
  g.inputs = {input("x", {"B", "D"})};
  g.nodes = {node("fc", "linear", {"x"}, {{"out_features", "D"}}), node("act", "relu", {"fc"}), node("res", "add", {"x", "act"}),
             node("ln", "layer_norm", {"res"})};
  g.outputs = {"ln"};
  return g;
}

}  // namespace

TEST(OpGraph, ResolvesADagWithSharedInputs) {
  ResolvedGraph r = resolve_graph(diamond(), {{"B", 4}, {"D", 8}});
  ASSERT_EQ(r.nodes.size(), 4u);
  EXPECT_EQ(r.output_metas[0].shape, (Shape{4, 8}));
  // arguments: x, then fc.weight, fc.bias, then ln.weight, ln.bias
  std::vector<std::string> names;
  for (const auto& a : r.arguments) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "fc.weight", "fc.bias", "ln.weight", "ln.bias"}));
  EXPECT_EQ(r.arguments[1].role, ArgRole::parameter);
  EXPECT_EQ(r.arguments[1].meta.shape, (Shape{8, 8}));
  EXPECT_EQ(r.nodes[2].inputs[0].is_node, false);
  EXPECT_EQ(r.nodes[2].inputs[1].index, 1);
  // FLOPs: linear 2*4*8*8 + relu 32 + add 32 + layer_norm 5*32
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 4 * 8 * 8 + 32 + 32 + 5 * 32);
  // bytes: x, weight, bias, ln weight, bias, output (float32)
  EXPECT_DOUBLE_EQ(r.min_bytes, 4.0 * (32 + 64 + 8 + 8 + 8 + 32));
}

TEST(OpGraph, SupportsSeveralOutputs) {
  OpGraph g = diamond();
  g.outputs = {"act", "ln"};
  ResolvedGraph r = resolve_graph(g, {{"B", 4}, {"D", 8}});
  EXPECT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.min_bytes, 4.0 * (32 + 64 + 8 + 8 + 8 + 32 + 32));
}

TEST(OpGraph, RejectsForwardReferencesAndUnknownTensors) {
  OpGraph g = diamond();
  std::swap(g.nodes[0], g.nodes[1]);
  EXPECT_NE(error_of(g).find("input 'fc' is defined at or after this node"), std::string::npos) << error_of(g);
  g = diamond();
  g.nodes[1].inputs = {"nope"};
  EXPECT_NE(error_of(g).find("input 'nope' is not a graph input or an earlier node"), std::string::npos);
}

TEST(OpGraph, RejectsDeadNodesAndUnusedInputs) {
  OpGraph g = diamond();
  g.outputs = {"act"};
  EXPECT_NE(error_of(g).find("node 2 'res' (add): its result reaches no output"), std::string::npos) << error_of(g);
  g = diamond();
  g.inputs.push_back(input("unused", {"B"}));
  EXPECT_NE(error_of(g).find("input 'unused' is not used by any output"), std::string::npos);
}

TEST(OpGraph, LimitsTheGraphToFiveOperators) {
  OpGraph g;
  g.inputs = {input("x", {"B"})};
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    g.nodes.push_back(node("n" + std::to_string(i), "relu", {prev}));
    prev = "n" + std::to_string(i);
  }
  g.outputs = {prev};
  EXPECT_NE(error_of(g).find("has 6 operators; a task composes 1 to 5"), std::string::npos);
}

TEST(OpGraph, ShapeRefusalNamesTheNode) {
  OpGraph g;
  g.inputs = {input("a", {"B", "D"}), input("b", {"D", "B+1"})};
  g.nodes = {node("m", "matmul", {"a", "a"})};
  g.outputs = {"m"};
  try {
    resolve_graph(g, {{"B", 4}, {"D", 8}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
    EXPECT_NE(std::string(e.what()).find("node 0 'm' (matmul): inner dimensions differ"), std::string::npos) << e.what();
  }
}

TEST(OpGraph, RejectsBadNamesArityAndOutputs) {
  OpGraph g = diamond();
  g.nodes[0].id = "x";
  EXPECT_NE(error_of(g).find("id 'x' is already used"), std::string::npos);
  g = diamond();
  g.nodes[1].id = "class";
  EXPECT_NE(error_of(g).find("reserved name"), std::string::npos);
  g = diamond();
  g.nodes[2].inputs = {"x"};
  EXPECT_NE(error_of(g).find("add takes 2 input(s), got 1"), std::string::npos);
  g = diamond();
  g.outputs = {"x"};
  EXPECT_NE(error_of(g).find("output 'x' is a graph input"), std::string::npos);
  g = diamond();
  g.outputs = {"ln", "ln"};
  EXPECT_NE(error_of(g).find("listed twice"), std::string::npos);
  g = diamond();
  g.nodes[3].op = "layernorm";
  EXPECT_NE(error_of(g).find("unknown operator 'layernorm' (did you mean 'layer_norm'?)"), std::string::npos);
}

TEST(OpGraph, InputDimensionsMustBePositive) {
  OpGraph g = diamond();
  g.inputs[0] = input("x", {"B - 4", "D"});
  EXPECT_NE(error_of(g).find("must be >= 1"), std::string::npos);
}
