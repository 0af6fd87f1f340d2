#include "data_synth/task/render_python.h"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

const char* kTask = R"(kforge_task: 1
id: r1
source: synth
split: train
seed: 5
dtype: bfloat16
dims: {B: 4, C: 8}
graph:
  inputs:
    - {name: x, shape: [B, C]}
    - {name: y, shape: [B, C]}
  nodes:
    - {id: fc, op: linear, in: [x], attrs: {out_features: C}}
    - {id: mix, op: add, in: [fc, y]}
    - {id: sm, op: softmax, in: [mix], attrs: {dim: 1}}
  outputs: [sm, fc]
arguments:
  - {name: x, draw: {dist: uniform, low: -1, high: 1}}
  - {name: y}
  - {name: fc.weight}
  - {name: fc.bias}
provenance: {generator: test}
)";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(RenderPython, WritesTheKernelBenchFormat) {
  std::string py = render_python(parse_task(kTask, "t.yaml"));
  EXPECT_TRUE(contains(py, "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n")) << py;
  EXPECT_TRUE(contains(py, "B = 4\nC = 8\n")) << py;
  EXPECT_TRUE(contains(py, "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n")) << py;
  EXPECT_TRUE(contains(py, "        self.fc = nn.Linear(8, C, bias=True).to(torch.bfloat16)\n")) << py;
  EXPECT_TRUE(contains(py, "    def forward(self, x, y):\n")) << py;
  EXPECT_TRUE(contains(py, "        fc = self.fc(x)\n        mix = fc + y\n        sm = torch.softmax(mix, dim=1)\n")) << py;
  EXPECT_TRUE(contains(py, "        return sm, fc\n")) << py;
  EXPECT_TRUE(contains(py, "def get_inputs():\n    x = torch.rand((B, C), dtype=torch.bfloat16) * 2 + -1\n")) << py;
  EXPECT_TRUE(contains(py, "    y = torch.randn((B, C), dtype=torch.bfloat16)\n    return [x, y]\n")) << py;
  EXPECT_TRUE(contains(py, "def get_init_inputs():\n    return []\n")) << py;
}

TEST(RenderPython, EveryOperatorRendersAModuleOrAnExpression) {
  for (const auto& op : op_registry().all()) {
    std::string py = render_python(make_op_example_task(op));
    EXPECT_TRUE(contains(py, "        y = ")) << op.name << "\n" << py;
    if (op.params) {
      EXPECT_TRUE(contains(py, "        self.y = nn.")) << op.name << "\n" << py;
    }
  }
}
