#pragma once
// One evaluate request inside the GPU worker, as a table of stages (GpuWorker::evaluate):
//   load()     the candidate: the kernel kind's module, its kernels' attributes and launch limits
//              checked before anything runs; or the extension kind's library and plan
//   verify()   plain, state and robustness calls, each read back and judged on its own
//   time()     candidate and reference interleaved, every timed call checked like a verified one
//   profile()  one more call under CUPTI (activity, then hardware counters when asked)
// Each stage adds its section to the reply and its named checks to `anticheat_checks`.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <cuda.h>

#include "env/judge/call_bench.h"
#include "env/judge/candidate_program.h"
#include "env/judge/gpu_request.h"
#include "env/judge/gpu_worker_state.h"
#include "env/judge/kernel_activity.h"
#include "env/judge/launch_origin.h"
#include "env/judge/plan_launcher.h"
#include "env/judge/timing.h"
#include "reward/speedup.h"

namespace kforge {

class Judgement {
 public:
  Judgement(GpuWorker::State& s, const GpuEvalRequest& req, const TaskSpec& task);
  ~Judgement();

  void load();
  void verify();
  void time();
  void profile();
  // Whether verification passed and no check failed (timing and profile run only then).
  bool clean() const;
  // Whether the candidate left threads running in the worker (host_threads): the worker must end.
  bool left_threads() const { return program_ && program_->host_threads().calls > 0; }
  Json& reply() { return reply_; }
  Json& phases() { return phases_; }

 private:
  enum class Mode { plain, same_addresses, new_addresses, robust };
  struct Planned {
    Mode mode;
    CallSpec spec;
  };
  struct Outcome {
    CallRecord rec;
    Json outputs;        // per output, as the report gives them
    std::string reason;  // the first mismatch; empty when every output is right
  };
  std::vector<Planned> plan_verification();
  Outcome run_call(const CallSpec& spec, size_t index);
  bool verify_call(const Planned& p, size_t index);
  bool check_timed_calls(size_t first, size_t last);
  // The probe hook's words of calls [first, last) with each call's member (GpuVerifyRequest::probe_words).
  Json probe_json(size_t first, size_t last) const;
  // One block of the task's members, shuffled: plain once, `scaled` once per approved seed, every
  // other usable member once with one of its approved seeds (draw seeds left for the caller).
  std::vector<CallSpec> member_block();
  // The next timed call's draw: the members in shuffled blocks, each member once per block.
  CallSpec timed_spec();
  std::vector<MemberSamples> member_samples(const TimedRun& cand, const TimedRun& ref);
  void sync_candidate(const char* when);
  void scrub(std::vector<at::Tensor>& ref);
  void add_check(const std::string& name, bool passed, const std::string& message, Json evidence);
  void check_kernel_origins(const std::vector<KernelRecord>& kernels, OriginWindow& origins);
  void check_host_threads(const char* phase);
  void load_module();     // the kernel kind
  void load_extension();  // the extension kind
  Json kernel_json(const KernelRecord& k, CUfunction f);

  GpuWorker::State& s_;
  const GpuEvalRequest& req_;
  const TaskSpec& task_;
  WirePlan plan_;
  std::map<std::string, CUfunction> funcs_;
  std::set<std::string> module_kernels_;  // the kernel kind's (the extension kind's are every kernel its call launches)
  std::unique_ptr<CandidateProgram> program_;
  std::unique_ptr<CallBench> bench_;
  std::vector<VariantCondition> usable_;  // well-conditioned members of the draw family other than plain, with their seeds
  std::vector<CallSpec> timed_block_;     // what is left of the current block of timed members
  Json reply_ = {{"ok", true}};
  Json phases_ = Json::object();
  Json checks_ = Json::array();
  Json verify_;
  int64_t candidate_calls_ = 0;
  double cand_ms_ = 0, ref_ms_ = 0, harness_ms_ = 0;
};

}  // namespace kforge
