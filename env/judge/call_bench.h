#pragma once
// The harness side of every candidate call in one evaluate request: one path for verification
// trials and timed calls alike, so the candidate cannot tell them apart, and one record of what
// the harness saw around each call. The guarantees, each enforced where it happens in
// call_bench.cpp:
//   - identities: every call's draw seed, poison value, fingerprint key, guard pattern and buffer
//     set come from CallIds (a generator seeded by the operating system), afresh per call and
//     never sent by the caller; nothing the candidate can read names the call.
//   - addresses: each call's inputs, outputs and workspace sit in one of `address_pool` buffer sets
//     picked at random (verification and timing alike), each buffer between guard regions that
//     begin at the byte after its last one.
//   - the reference never reads memory the candidate could have written: its inputs are copied
//     into harness-owned buffers after the candidate has run and its inputs' "after" fingerprints
//     were taken (in stream order), so they are the drawn values exactly when the call's inputs
//     are unchanged, and a call whose inputs changed fails anyway. (They used to be drawn again
//     from the call's seed: the same bytes, at the cost of a second draw and member transform and
//     a third fingerprint of every input.)
//   - every input and parameter, and every guard region, is fingerprinted under the call's key
//     before (the inputs by the draw, as it writes them) and after the candidate; the words holding those fingerprints and the output
//     comparison are zeroed after the candidate ran (it cannot pre-load them) and copied to host
//     memory before its next call (it cannot rewrite them later).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <cuda.h>

#include "anticheat/dynamic_checks.h"
#include "data_synth/reference/draw_family.h"
#include "data_synth/task/task_spec.h"
#include "env/cuda/cuda_events.h"
#include "env/judge/candidate_program.h"
#include "env/judge/check_kernel.h"
#include "env/judge/draw_kernel.h"

namespace kforge {

// The one source of trial identities in the GPU worker.
class CallIds {
 public:
  CallIds();
  uint64_t next() { return gen_(); }

 private:
  std::mt19937_64 gen_;
};

// What one call draws. draw_trial repeats only when a state trial asks for the same values.
struct CallSpec {
  uint64_t draw_trial = 0;
  DrawVariant variant = DrawVariant::plain;
  uint64_t variant_seed = 0;  // one of the variant's approved seeds (robust_draws.h)
  int slot = -1;              // buffer set; -1: picked at random
};

// What the harness saw around one call (read on the host after the stream is synchronised).
struct CallRecord {
  int slot = 0;
  DrawVariant variant = DrawVariant::plain;
  std::vector<std::string> inputs_changed;  // arguments whose bytes the candidate changed
  int64_t guards_written = 0;               // guard regions whose bytes changed
  std::vector<CompareStats> outputs;        // per output (when compared[o])
  std::vector<bool> compared;               // false: not compared on the device (shape or dtype differs)
  uint64_t poison_id = 0;                   // for the slow comparison path
};

// The stages of the harness's own GPU work around one call, for the split of its cost (timed by
// events when CallBench::set_stage_timing is on).
enum class HarnessStage { draw, member, fingerprint, poison, reference_copy, compare };
inline constexpr int kHarnessStages = 6;
const char* harness_stage_name(HarnessStage s);
using HarnessStageMs = std::array<double, kHarnessStages>;

struct BenchDevice {
  at::Device dev{at::kCUDA, 0};
  CUstream stream = nullptr;
  DeviceDrawer* drawer = nullptr;
  DeviceChecker* checker = nullptr;
};

class CallBench {
 public:
  CallBench(const TaskSpec& task, CandidateProgram& program, const BenchDevice& device, const DynamicCheckConfig& config, uint64_t salt,
            CallIds& ids);
  ~CallBench();
  CallBench(const CallBench&) = delete;
  CallBench& operator=(const CallBench&) = delete;

  // One call, in this order (each enqueues on the harness stream):
  void prepare(const CallSpec& spec);          // draw into a buffer set, poison, workspace, guards, fingerprints
  void run_candidate();                        // the candidate's call (candidate_program.h) on that buffer set
  void after_candidate();                      // fingerprints again; the inputs copied for the reference; the call retired
  std::vector<at::Tensor> run_reference();     // on the harness-owned inputs
  void compare(std::vector<at::Tensor>& ref);  // outputs against `ref`; the call's words to the host

  // The next call's prepare() enqueued now on the bench's side stream, behind everything enqueued on
  // the harness stream so far (the current call's candidate and reference calls), so that its draw,
  // guards and poison run beside what the harness stream does next (the current call's compare):
  // outside every timed event, into another buffer set than the current call's. prepare() with
  // the same spec then only makes the harness stream wait for it; prepare() with another spec, or
  // cancel_ahead(), drops it. Nothing is enqueued with fewer than two buffer sets (address_pool).
  void prepare_ahead(const CallSpec& spec);
  void cancel_ahead();

  // After a synchronisation: the record of call `i` (0-based, in order of prepare()).
  CallRecord record(size_t i) const;
  size_t calls() const { return specs_.size(); }
  const CallSpec& last_spec() const { return specs_.back(); }

  // The call-classification probe's hook (GpuVerifyRequest::probe_words): after every candidate
  // call, the first `words` 8-byte words of workspace buffer 0 are copied aside; probe(i) reads
  // call i's after a synchronisation.
  void set_probe_words(int words) { probe_words_ = words; }
  std::vector<int64_t> probe(size_t i) const;

  // The current call's outputs (for the slow comparison path).
  const std::vector<at::Tensor>& outputs() const;

  // Events around each stage of the calls prepared from now on (verification and the timed calls
  // turn it on; the events lie outside the timed calls' own). take_stage_ms(), after a synchronisation, sums the stages' milliseconds
  // over the calls recorded since the last take.
  void set_stage_timing(bool on) { stage_timing_ = on; }
  HarnessStageMs take_stage_ms();

 private:
  struct Slot;
  struct Log;
  // What names one call: its spec (slot chosen), fingerprint key, poison and guard pattern.
  struct Identity {
    CallSpec spec;
    uint64_t key = 0, poison_id = 0;
    uint8_t guard_byte = 0;
  };
  struct Ahead;
  Identity choose(const CallSpec& in);
  // prepare()'s GPU work for call `index` with identity `id`, on `st`; stage boundaries 0-4 into `events`.
  void enqueue_prepare(const Identity& id, size_t index, CUstream st, CudaEvents* events);
  void commit(const Identity& id, std::unique_ptr<CudaEvents> events);
  void mark(int boundary);  // a stage boundary of the current call (stage timing on)

  const TaskSpec& task_;
  CandidateProgram& program_;
  BenchDevice device_;
  DynamicCheckConfig config_;
  uint64_t salt_;
  CallIds& ids_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<at::Tensor> ref_args_;  // harness-owned: never passed to the candidate
  at::Tensor words_;                  // this call's device words: before | after
  std::unique_ptr<Log> log_;
  std::vector<CallSpec> specs_;  // per call, host-side: what was drawn and where
  std::vector<uint64_t> poison_ids_;
  std::vector<std::vector<bool>> compared_;
  bool stage_timing_ = false;
  std::vector<std::unique_ptr<CudaEvents>> stage_events_;  // per call since the last take (stage timing on)
  CudaEvents* current_events_ = nullptr;                   // the current call's (null: stage timing off when it was prepared)
  Identity now_{{0, DrawVariant::plain, 0, 0}};            // the current call's (its buffer set: now_.spec.slot; 0 before any)
  int probe_words_ = 0;
  std::vector<at::Tensor> probes_;  // per call (probe_words_ > 0): device copies of workspace 0's first words
  CUstream side_ = nullptr;         // prepare_ahead's stream (harness-owned)
  std::unique_ptr<Ahead> ahead_;    // the next call, prepared ahead
};

// Where fill_arguments adds each argument's fingerprint under `key`: the word at words + 8 i for
// argument i (zeroed by the caller); words 0: none taken.
struct DrawFingerprints {
  uint64_t key = 0;
  CUdeviceptr words = 0;
};
// Draws `key`'s values of every argument into `args` (the task's order, on the device) with the
// device drawer, byte for byte what the CPU draw gives (draw_kernel.h), each moved by its entry of
// `members` (variant_params; none where absent) and fingerprinted (`fingerprints`) in the same
// pass. Asynchronous on `stream`.
void fill_arguments(const TaskSpec& task, const DrawKey& key, DeviceDrawer& drawer, std::vector<at::Tensor>& args, CUstream stream,
                    const std::vector<MemberParams>& members = {}, const DrawFingerprints& fingerprints = {});
// The draw family's members applied to device tensors by the drawer's member kernel, on the
// tensor's device's current stream (apply_variant's `device`).
DeviceMember device_member(DeviceDrawer& drawer);
// The same into new tensors on `dev`.
std::vector<at::Tensor> draw_arguments_on_device(const TaskSpec& task, const DrawKey& key, DeviceDrawer& drawer, at::Device dev,
                                                 CUstream stream);

}  // namespace kforge
