#pragma once
// kforge_eval_bench reference: the per-call cost of an imported task's TorchScript reference
// against the graph reference of the same ops on the same shapes (tools/bench/reference_overhead.cpp).
namespace kforge::bench {
int reference_overhead(int argc, char** argv);
}
