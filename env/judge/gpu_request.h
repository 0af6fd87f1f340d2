#pragma once
// The one contract between the evaluator (the caller) and the GPU worker: both processes include
// this header, and neither builds or reads an evaluate request by hand. A request travels as a
// msgpack map (worker_protocol.h's framing); parse_gpu_eval_request() accepts exactly the keys
// to_json() writes, each with its type, so a misspelt or unknown key is a bad_request error that
// names it, never a silent default. The reply is typed in gpu_reply.h, read as strictly.
//
// What is not in a request, on purpose: trial identities. The seeds of every draw, every poison
// value and every fingerprint key are drawn inside the worker, afresh for each call, from a
// generator seeded by the operating system (CallIds in env/judge/call_bench.h); the caller sends only the
// episode's salt. So no request can repeat another's inputs, and nothing the policy sees names a
// call.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "anticheat/dynamic_checks.h"
#include "configs/eval_config.h"
#include "env/launch/plan_wire.h"
#include "env/process/worker_protocol.h"

namespace kforge {

struct GpuVerifyRequest {
  int trials = 5;             // plain trials asked for (robustness trials take some of them, see call_bench.h)
  uint64_t salt = 0;          // the episode's salt, mixed into every draw
  int report_mismatches = 5;  // mismatching elements reported per output
  // A test hook for the call-classification probe (tests/anticheat/call_probe_gpu_test.cpp): after
  // every candidate call, the first probe_words 8-byte words of the plan's first workspace buffer
  // come back in the reply (verify.probe, timing.probe) with the call's member. 0 (always, outside
  // that test): nothing is read back.
  int probe_words = 0;
};

// The extension kind's candidate (issue 28): the shared library the extension build made and the
// plan model_glue.py read from model_new.py (env/extension/EXTENSION_PLAN.md).
struct GpuExtension {
  std::vector<uint8_t> library;
  std::string library_hash;
  Json plan;
  // How the task's inputs (role input) reach forward (issue 30's layout trials): contiguous (as
  // drawn), noncontiguous (the same values in a strided layout: the last two dims' memory order
  // swapped, a 1-D input every other element) or channels_last (4-D inputs in NHWC memory order).
  // Parameters are always contiguous, as nn.Module keeps them.
  std::string input_layout = "contiguous";
};
// Whether `name` is one of GpuExtension::input_layout's values.
bool is_input_layout(const std::string& name);

struct GpuEvalRequest {
  std::string task_yaml;
  // Where the task is judged: -1 at its own dims, else at its extra_dims[extra_shape] (issue 30's
  // shape trials; the task's own text travels, so an empty dimension, which a task's own dims may
  // not be, reaches the worker as the parser's TaskSpec::at_extra_dims makes it).
  int extra_shape = -1;
  // The candidate: the kernel kind's module and launch plan (kind "kernel" on the wire), or an
  // extension (kind "extension": cubin, cubin_hash, plan and kernel_names are not sent).
  std::optional<GpuExtension> extension;
  std::vector<uint8_t> cubin;
  std::string cubin_hash;
  WirePlan plan;  // resolve_plan()'s output (plan_wire.h)
  int64_t max_workspace_bytes = int64_t{16} << 30;
  GpuVerifyRequest verify;
  std::optional<TimingConfig> time;  // absent: no timing
  bool profile = false;
  bool counters = false;
  std::vector<std::string> counter_metrics;  // empty: the default list
  std::vector<std::string> kernel_names;     // every kernel of the module
  DynamicCheckConfig anticheat;
};

Json to_json(const GpuEvalRequest& r);
// What names the request's task among others (its text and extra_shape): a key for what is kept per task.
inline std::string task_key(const GpuEvalRequest& r) { return std::to_string(r.extra_shape) + "\n" + r.task_yaml; }
// Throws Error(bad_request kind is the caller's: spec) naming the first unknown, missing or
// mistyped key, with its path ("request.time.max_reps").
GpuEvalRequest parse_gpu_eval_request(const Json& j);

}  // namespace kforge
