// kforge_eval_bench reference --tasks DIR [--device cpu|cuda] [--calls N] [--out FILE]
//
// The reference's per-call wall time, TorchScript (an imported task's module, loaded with
// torch::jit::load) against the graph reference (ATen calls) of the same ops on the same shapes and
// arguments: relu, linear+relu, softmax. DIR is what tests/data_synth/make_imported_tasks.py
// writes (tasks/ and graph/). Each call is timed on the host clock, synchronised with the device
// on cuda; the first TorchScript call (deserialising the artifact) is reported apart. Medians.
#include "tools/bench/reference_overhead.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/cuda/CUDAFunctions.h>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "data_synth/reference/reference.h"
#include "env/process/clock.h"
#include "tools/bench/bench_result.h"

namespace kforge::bench {

namespace {

struct CallTimes {
  double first_us = 0, median_us = 0, p10_us = 0, p90_us = 0;
};

CallTimes time_calls(const TaskSpec& t, const std::vector<at::Tensor>& args, bool cuda, int calls) {
  auto one = [&] {
    auto t0 = Clock::now();
    auto out = run_reference(t, args);
    if (cuda) c10::cuda::device_synchronize();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  CallTimes r;
  r.first_us = one();
  for (int i = 0; i < 20; ++i) one();  // warm-up
  std::vector<double> us;
  for (int i = 0; i < calls; ++i) us.push_back(one());
  std::sort(us.begin(), us.end());
  r.median_us = median(us);
  r.p10_us = us[us.size() / 10];
  r.p90_us = us[us.size() * 9 / 10];
  return r;
}

}  // namespace

int reference_overhead(int argc, char** argv) {
  const std::string dir = arg_value(argc, argv, "--tasks", ""), device_name = arg_value(argc, argv, "--device", "cpu");
  const int calls = std::stoi(arg_value(argc, argv, "--calls", "2000"));
  const std::string out_path = arg_value(argc, argv, "--out", "");
  KFORGE_CHECK(!dir.empty(), usage, "--tasks DIR (what tests/data_synth/make_imported_tasks.py --out DIR wrote) is required");
  KFORGE_CHECK(device_name == "cpu" || device_name == "cuda", usage, "--device is cpu or cuda");
  KFORGE_CHECK(calls >= 10, usage, "--calls is at least 10");
  const bool cuda = device_name == "cuda";
  const at::Device device = cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  at::set_num_threads(1);  // per-call overhead, not intra-op parallelism
  apply_reference_precision();
  const std::pair<const char*, const char*> pairs[] = {
      {"relu", "kb_l1_relu"}, {"linear_relu", "kb_l2_linear_relu"}, {"softmax", "kb_l1_softmax"}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::printf("%-12s %-14s %12s %12s %12s %12s %14s\n", "op", "shape", "graph_us", "torchscript_us", "overhead_us", "ratio", "ts_first_ms");
  for (const auto& [op, imported] : pairs) {
    TaskSpec g = load_task(dir + "/graph/graph_" + std::string(op) + ".yaml");
    TaskSpec ts = load_task(dir + "/tasks/" + imported + ".yaml");
    auto args = draw_arguments(ts, {ts.seed, 1, 0}, device);
    CallTimes tg = time_calls(g, args, cuda, calls), tt = time_calls(ts, args, cuda, calls);
    const std::string shape = shape_str(ts.arguments[0].decl.meta.shape);
    std::printf("%-12s %-14s %12.2f %14.2f %12.2f %12.2f %14.3f\n", op, shape.c_str(), tg.median_us, tt.median_us,
                tt.median_us - tg.median_us, tt.median_us / tg.median_us, tt.first_us / 1e3);
    rows.push_back({{"op", op},
                    {"shape", shape},
                    {"graph_median_us", tg.median_us},
                    {"graph_p10_us", tg.p10_us},
                    {"graph_p90_us", tg.p90_us},
                    {"torchscript_median_us", tt.median_us},
                    {"torchscript_p10_us", tt.p10_us},
                    {"torchscript_p90_us", tt.p90_us},
                    {"torchscript_first_call_ms", tt.first_us / 1e3},
                    {"overhead_us", tt.median_us - tg.median_us}});
  }
  const std::string reproduce =
      "build/tools/kforge_eval_bench reference --tasks " + dir + " --device " + device_name + " --calls " + std::to_string(calls);
  std::printf("calls per reference: %d (after 20 warm-up calls), one intra-op thread%s\nreproduce: %s\n", calls,
              cuda ? ", synchronised per call" : "", reproduce.c_str());
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    KFORGE_CHECK(f, io, out_path << ": cannot write");
    f << nlohmann::ordered_json{{"device", device_name}, {"calls", calls}, {"command", reproduce}, {"rows", rows}}.dump(2) << "\n";
  }
  return 0;
}

}  // namespace kforge::bench
