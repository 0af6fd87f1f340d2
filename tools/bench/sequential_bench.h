#pragma once
// kforge_eval_bench sequential: the sequential stopping rule (reward/sequential.h) on GPU timing
// streams (tools/bench/sequential_bench.cpp).
namespace kforge::bench {
int sequential(int argc, char** argv);
}
