#pragma once
// kforge_eval_bench shapes: a task's other shapes' cost per verify, the `large` kind at given
// budgets beside today's kinds (tools/bench/shapes_bench.cpp).
namespace kforge::bench {
int shapes(int argc, char** argv);
}
