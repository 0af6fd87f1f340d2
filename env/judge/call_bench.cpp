#include "env/judge/call_bench.h"

#include <algorithm>

#include <ATen/cuda/CUDAContext.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "data_synth/reference/reference.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/output_compare.h"

namespace kforge {

namespace {

constexpr int64_t kAlign = 256;
constexpr int64_t kPage = int64_t(2) << 20;  // the GPU's large page
int64_t round_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

CUdeviceptr ptr_of(const at::Tensor& t) { return reinterpret_cast<CUdeviceptr>(t.data_ptr()); }
int64_t bytes_of(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

CallIds::CallIds() {
  std::random_device rd;
  std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
  gen_.seed(seq);
}

// One buffer set: a single allocation holding every buffer of a call, each between guards, from a
// random offset, so its addresses differ from the other sets' and from request to request. The
// offset is a whole number of 2 MiB pages: every buffer then sits at the same place within its
// pages in every set and request: sets and requests differ in which pages they use, not in how
// their buffers fall on them (a candidate's time should not depend on the draw of an offset).
struct CallBench::Slot {
  at::Tensor block;
  std::vector<at::Tensor> args, outputs, workspace;
  std::vector<std::pair<CUdeviceptr, int64_t>> guards;
  CallBuffers buffers;
};

// Host copies of every call's words, in pinned memory the candidate has no address of.
struct CallBench::Log {
  int64_t words_per_call = 0;
  static constexpr int64_t kChunk = 64;
  std::vector<at::Tensor> chunks;
  uint64_t* at(size_t call) {
    size_t c = call / kChunk;
    while (chunks.size() <= c)
      chunks.push_back(at::empty({kChunk * words_per_call}, at::TensorOptions().dtype(at::kLong).pinned_memory(true)));
    return reinterpret_cast<uint64_t*>(chunks[c].data_ptr<int64_t>()) + (call % kChunk) * words_per_call;
  }
  const uint64_t* at(size_t call) const {
    return reinterpret_cast<const uint64_t*>(chunks.at(call / kChunk).data_ptr<int64_t>()) + (call % kChunk) * words_per_call;
  }
};

// The next call prepared ahead: its identity, its stage events, and the two points that order it
// (0: where the harness stream was when it was enqueued; 1: its end on the side stream).
struct CallBench::Ahead {
  CallSpec asked;
  Identity id;
  std::unique_ptr<CudaEvents> stages;
  CudaEvents sync{2};
};

CallBench::CallBench(const TaskSpec& task, CandidateProgram& program, const BenchDevice& device, const DynamicCheckConfig& config,
                     uint64_t salt, CallIds& ids)
    : task_(task), program_(program), device_(device), config_(config), salt_(salt), ids_(ids), log_(std::make_unique<Log>()) {
  const int64_t guard = config_.guard_bytes;
  struct Buf {
    at::ScalarType type;
    Shape shape;
    int64_t bytes;
  };
  std::vector<Buf> bufs;
  for (const auto& a : task_.arguments)
    bufs.push_back(
        {to_scalar_type(a.decl.meta.dtype), a.decl.meta.shape, numel(a.decl.meta.shape) * int64_t(dtype_size(a.decl.meta.dtype))});
  for (const auto& o : task_.outputs)
    bufs.push_back({to_scalar_type(o.meta.dtype), o.meta.shape, numel(o.meta.shape) * int64_t(dtype_size(o.meta.dtype))});
  for (const auto& w : program_.workspace())
    bufs.push_back({to_scalar_type(w.dtype), {w.elements}, w.elements * int64_t(dtype_size(w.dtype))});
  int64_t total = guard;
  for (const auto& b : bufs) total += round_up(b.bytes) + guard;
  const size_t na = task_.arguments.size(), no = task_.outputs.size();
  for (int p = 0; p < config_.address_pool; ++p) {
    auto s = std::make_unique<Slot>();
    int64_t offset = kPage * static_cast<int64_t>(ids_.next() % 8);
    s->block = at::empty({total + offset}, at::TensorOptions().dtype(at::kByte).device(device_.dev));
    // Every buffer starts 256-byte aligned (as cudaMalloc's); everything between two buffers is
    // guard, from the byte right after a buffer's last one (a tail of up to 7 bytes, fingerprinted
    // byte by byte, then 8-byte aligned guard bytes up to the next buffer).
    int64_t cur = offset;
    s->guards.push_back({ptr_of(s->block) + cur, guard});
    cur += guard;
    for (size_t b = 0; b < bufs.size(); ++b) {
      at::Tensor t = s->block.narrow(0, cur, bufs[b].bytes).view(bufs[b].type).view(bufs[b].shape);
      const int64_t end = cur + bufs[b].bytes, aligned = (end + 7) / 8 * 8, next = cur + round_up(bufs[b].bytes) + guard;
      if (aligned > end) s->guards.push_back({ptr_of(s->block) + end, aligned - end});
      s->guards.push_back({ptr_of(s->block) + aligned, next - aligned});
      cur = next;
      (b < na ? s->args : b < na + no ? s->outputs : s->workspace).push_back(t);
    }
    for (const auto& t : s->args) s->buffers.arguments.push_back(ptr_of(t));
    for (const auto& t : s->outputs) s->buffers.outputs.push_back(ptr_of(t));
    for (const auto& t : s->workspace) {
      s->buffers.workspace.push_back(ptr_of(t));
      s->buffers.workspace_bytes.push_back(bytes_of(t));
    }
    slots_.push_back(std::move(s));
  }
  for (const auto& a : task_.arguments)  // harness-owned: copied into after each candidate call
    ref_args_.push_back(at::empty(a.decl.meta.shape, at::TensorOptions().dtype(to_scalar_type(a.decl.meta.dtype)).device(device_.dev)));
  const int64_t ng = static_cast<int64_t>(slots_[0]->guards.size());
  // before: args, guards | after: args, guards, compares
  log_->words_per_call = (int64_t(na) + ng) + (int64_t(na) + ng + DeviceChecker::kCompareWords * int64_t(no));
  words_ = at::zeros({log_->words_per_call}, at::TensorOptions().dtype(at::kLong).device(device_.dev));
}

CallBench::~CallBench() {
  // The side stream's work writes into the buffer sets: the harness stream (where their memory goes
  // back to the caching allocator) waits for it first. No throw here (a lost context fails both).
  if (ahead_) cudaStreamWaitEvent(device_.stream, ahead_->sync.at(1), 0);
  ahead_.reset();
  if (side_) cudaStreamDestroy(side_);
}

const std::vector<at::Tensor>& CallBench::outputs() const { return slots_[now_.spec.slot]->outputs; }

void fill_arguments(const TaskSpec& task, const DrawKey& key, DeviceDrawer& drawer, std::vector<at::Tensor>& args, CUstream stream,
                    const std::vector<MemberParams>& members, const DrawFingerprints& fingerprints) {
  for (size_t i = 0; i < task.arguments.size() && i < args.size(); ++i)
    if (args[i].numel() > 0)
      drawer.fill(task.arguments[i].draw, task.arguments[i].decl.meta.dtype, draw_stream(key, i), args[i].numel(), ptr_of(args[i]), stream,
                  i < members.size() ? members[i] : MemberParams{}, fingerprints.key, fingerprints.words ? fingerprints.words + 8 * i : 0);
}

DeviceMember device_member(DeviceDrawer& drawer) {
  return [&drawer](const MemberParams& m, DType dtype, at::Tensor& t) {
    drawer.apply_member(m, dtype, t.numel(), ptr_of(t), at::cuda::getCurrentCUDAStream(t.device().index()).stream());
  };
}

std::vector<at::Tensor> draw_arguments_on_device(const TaskSpec& task, const DrawKey& key, DeviceDrawer& drawer, at::Device dev,
                                                 CUstream stream) {
  std::vector<at::Tensor> args;
  for (const auto& a : task.arguments)
    args.push_back(at::empty(a.decl.meta.shape, at::TensorOptions().dtype(to_scalar_type(a.decl.meta.dtype)).device(dev)));
  fill_arguments(task, key, drawer, args, stream);
  return args;
}

const char* harness_stage_name(HarnessStage s) {
  switch (s) {
    case HarnessStage::draw:
      return "draw";
    case HarnessStage::member:
      return "member";
    case HarnessStage::fingerprint:
      return "fingerprint";
    case HarnessStage::poison:
      return "poison";
    case HarnessStage::reference_copy:
      return "reference_copy";
    case HarnessStage::compare:
      return "compare";
  }
  return "?";
}

// Boundaries 0-4 in prepare() (on the stream that prepares the call), 5-7 in after_candidate(), 8-9 in
// compare(). The reference's copies of the inputs are made in the after-fingerprints' read (5-6):
// 6-7 holds only the probe's clone.
void CallBench::mark(int boundary) {
  if (stage_timing_ && current_events_) current_events_->record(boundary, device_.stream);
}

HarnessStageMs CallBench::take_stage_ms() {
  HarnessStageMs ms{};
  auto at = [&](HarnessStage s) -> double& { return ms[static_cast<size_t>(s)]; };
  for (const auto& ev : stage_events_) {
    ev->synchronize(9);
    at(HarnessStage::draw) += ev->ms(0, 1);
    at(HarnessStage::member) += ev->ms(1, 2);
    at(HarnessStage::fingerprint) += ev->ms(2, 3) + ev->ms(5, 6);
    at(HarnessStage::poison) += ev->ms(3, 4);
    at(HarnessStage::reference_copy) += ev->ms(6, 7);
    at(HarnessStage::compare) += ev->ms(8, 9);
  }
  stage_events_.clear();
  current_events_ = nullptr;
  return ms;
}

CallBench::Identity CallBench::choose(const CallSpec& in) {
  Identity id;
  id.spec = in;
  // A call's buffer set is picked at random among those the previous call did not use (only a state
  // trial asks for the previous one): verification and timed calls alike.
  if (id.spec.slot < 0 || id.spec.slot >= static_cast<int>(slots_.size())) {
    const int n = static_cast<int>(slots_.size());
    id.spec.slot =
        specs_.empty() ? static_cast<int>(ids_.next() % n) : static_cast<int>((specs_.back().slot + 1 + ids_.next() % (n - 1)) % n);
  }
  id.key = ids_.next();
  id.poison_id = ids_.next();
  id.guard_byte = static_cast<uint8_t>(ids_.next());
  return id;
}

void CallBench::commit(const Identity& id, std::unique_ptr<CudaEvents> events) {
  specs_.push_back(id.spec);
  now_ = id;
  poison_ids_.push_back(id.poison_id);
  compared_.push_back({});
  current_events_ = events.get();
  if (events) stage_events_.push_back(std::move(events));
}

void CallBench::enqueue_prepare(const Identity& id, size_t index, CUstream st, CudaEvents* events) {
  Slot& s = *slots_[id.spec.slot];
  auto rec = [&](int boundary) {
    if (events) events->record(boundary, st);
  };
  c10::InferenceMode inference;
  rec(0);
  // The "before" fingerprints go to the host before the candidate runs: it never sees them on the
  // device. The arguments' are taken by the draw as it writes them, and the member is applied in
  // the same pass (draw_kernel.h): the member stage is empty, the fingerprint stage the guards'.
  const size_t na = s.args.size(), ng = s.guards.size();
  const int64_t before_words = static_cast<int64_t>(na + ng);
  KFORGE_CUDA(cuda_driver().MemsetD8Async(ptr_of(words_), 0, before_words * 8, st));
  std::vector<Shape> shapes;
  for (const auto& a : s.args) shapes.emplace_back(a.sizes().begin(), a.sizes().end());
  fill_arguments(task_, {task_.seed, id.spec.draw_trial, salt_}, *device_.drawer, s.args, st,
                 variant_params(task_, id.spec.variant, id.spec.variant_seed, shapes), {id.key, ptr_of(words_)});
  rec(1);
  rec(2);
  for (const auto& [p, n] : s.guards) KFORGE_CUDA(cuda_driver().MemsetD8Async(p, id.guard_byte, n, st));
  for (size_t g = 0; g < ng; ++g)
    device_.checker->fingerprint(s.guards[g].first, s.guards[g].second, id.key, ptr_of(words_) + 8 * (na + g), st);
  KFORGE_CUDA(cudaMemcpyAsync(log_->at(index), words_.data_ptr(), before_words * 8, cudaMemcpyDeviceToHost, st));
  rec(3);
  {
    c10::cuda::CUDAStreamGuard on(at::cuda::getStreamFromExternal(st, device_.dev.index()));  // the poison's fill_ on `st`
    for (size_t o = 0; o < s.outputs.size(); ++o) poison_output(s.outputs[o], task_.outputs[o].meta.dtype, id.poison_id);
  }
  for (size_t w = 0; w < s.workspace.size(); ++w)
    KFORGE_CUDA(cuda_driver().MemsetD8Async(ptr_of(s.workspace[w]), 0xFF, bytes_of(s.workspace[w]), st));
  rec(4);
}

void CallBench::prepare(const CallSpec& in) {
  const bool same = ahead_ && ahead_->asked.draw_trial == in.draw_trial && ahead_->asked.variant == in.variant &&
                    ahead_->asked.variant_seed == in.variant_seed && ahead_->asked.slot == in.slot;
  if (same) {
    // Prepared on the side stream already: the harness stream (and so the candidate's call) waits for it.
    KFORGE_CUDA(cudaStreamWaitEvent(device_.stream, ahead_->sync.at(1), 0));
    commit(ahead_->id, std::move(ahead_->stages));
    ahead_.reset();
  } else {
    cancel_ahead();
    const Identity id = choose(in);
    commit(id, stage_timing_ ? std::make_unique<CudaEvents>(10) : nullptr);
    enqueue_prepare(id, specs_.size() - 1, device_.stream, current_events_);
  }
  program_.before_call();
}

void CallBench::prepare_ahead(const CallSpec& spec) {
  cancel_ahead();
  if (slots_.size() < 2 || specs_.empty()) return;
  if (!side_) KFORGE_CUDA(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
  auto a = std::make_unique<Ahead>();
  a->asked = spec;
  a->id = choose(spec);  // after specs_.back(), the current call: another buffer set than the one it still reads
  if (a->id.spec.slot == specs_.back().slot) return;
  if (stage_timing_) a->stages = std::make_unique<CudaEvents>(10);
  a->sync.record(0, device_.stream);
  KFORGE_CUDA(cudaStreamWaitEvent(side_, a->sync.at(0), 0));
  enqueue_prepare(a->id, specs_.size(), side_, a->stages.get());
  a->sync.record(1, side_);
  ahead_ = std::move(a);
}

void CallBench::cancel_ahead() {
  if (!ahead_) return;
  // Whatever the harness stream does next comes after it (the buffer set, the words, the log slot).
  KFORGE_CUDA(cudaStreamWaitEvent(device_.stream, ahead_->sync.at(1), 0));
  ahead_.reset();
}

void CallBench::run_candidate() {
  const Slot& s = *slots_[now_.spec.slot];
  program_.run({s.buffers, s.args, s.outputs}, device_.stream);
}

void CallBench::after_candidate() {
  Slot& s = *slots_[now_.spec.slot];
  CUstream st = device_.stream;
  const size_t na = s.args.size(), ng = s.guards.size();
  const int64_t before_words = static_cast<int64_t>(na + ng);
  CUdeviceptr after = ptr_of(words_) + 8 * before_words;
  mark(5);
  // Zeroed only now: whatever the candidate wrote there is gone.
  KFORGE_CUDA(cuda_driver().MemsetD8Async(after, 0, (log_->words_per_call - before_words) * 8, st));
  // The reference's inputs: the call's inputs as they are after the candidate ran, copied into
  // harness-owned buffers in the same read that takes their "after" fingerprints. Unchanged inputs
  // (the "after" fingerprints equal the "before" ones) are the drawn values; changed ones fail the
  // call. (Copied only now, never before the candidate's call: whatever it wrote anywhere during
  // its call, the reference reads what this copy wrote after it.)
  for (size_t i = 0; i < na; ++i)
    if (s.args[i].numel() > 0)
      device_.checker->fingerprint_copy(ptr_of(s.args[i]), ptr_of(ref_args_[i]), bytes_of(s.args[i]), now_.key, after + 8 * i, st);
  for (size_t g = 0; g < ng; ++g) device_.checker->fingerprint(s.guards[g].first, s.guards[g].second, now_.key, after + 8 * (na + g), st);
  mark(6);
  c10::InferenceMode inference;
  if (probe_words_ > 0) {
    const int64_t n = s.workspace.empty() ? 0 : std::min<int64_t>(probe_words_, bytes_of(s.workspace[0]) / 8);
    probes_.resize(specs_.size());
    if (n > 0)
      probes_.back() = at::from_blob(s.workspace[0].data_ptr(), {n}, at::TensorOptions().dtype(at::kLong).device(device_.dev)).clone();
  }
  program_.retire(st);
  mark(7);
}

std::vector<at::Tensor> CallBench::run_reference() { return kforge::run_reference(task_, ref_args_); }

void CallBench::compare(std::vector<at::Tensor>& ref) {
  Slot& s = *slots_[now_.spec.slot];
  CUstream st = device_.stream;
  const size_t na = s.args.size(), ng = s.guards.size();
  const int64_t before_words = static_cast<int64_t>(na + ng);
  CUdeviceptr cmp = ptr_of(words_) + 8 * (before_words + na + ng);
  mark(8);
  const Tolerance tol = task_.tolerance;
  for (size_t o = 0; o < s.outputs.size() && o < ref.size(); ++o) {
    DType dt = task_.outputs[o].meta.dtype;
    if (ref[o].scalar_type() != to_scalar_type(dt) || ref[o].numel() != s.outputs[o].numel()) continue;
    if (!ref[o].is_contiguous()) ref[o] = ref[o].contiguous();
    device_.checker->compare(dt, ptr_of(s.outputs[o]), ptr_of(ref[o]), s.outputs[o].numel(), tol.atol, tol.rtol,
                             poison_bits_for_trial(dt, now_.poison_id), cmp + 8 * DeviceChecker::kCompareWords * o, st);
  }
  // Which outputs were compared is the harness's own knowledge: kept host-side.
  for (size_t o = 0; o < s.outputs.size(); ++o)
    compared_.back().push_back(o < ref.size() && ref[o].scalar_type() == to_scalar_type(task_.outputs[o].meta.dtype) &&
                               ref[o].numel() == s.outputs[o].numel());
  uint64_t* host = log_->at(specs_.size() - 1) + before_words;
  KFORGE_CUDA(cudaMemcpyAsync(host, reinterpret_cast<void*>(ptr_of(words_) + 8 * before_words), (log_->words_per_call - before_words) * 8,
                              cudaMemcpyDeviceToHost, st));
  mark(9);
}

std::vector<int64_t> CallBench::probe(size_t i) const {
  if (i >= probes_.size() || !probes_[i].defined()) return {};
  at::Tensor h = probes_[i].cpu();
  return std::vector<int64_t>(h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel());
}

CallRecord CallBench::record(size_t i) const {
  const size_t na = task_.arguments.size(), no = task_.outputs.size(), ng = slots_[0]->guards.size();
  const uint64_t* w = log_->at(i);
  const uint64_t* before_args = w;
  const uint64_t* before_guards = w + na;
  const uint64_t* after_args = w + na + ng;
  const uint64_t* after_guards = after_args + na;
  const uint64_t* cmp = after_guards + ng;
  CallRecord r;
  r.slot = specs_.at(i).slot;
  r.variant = specs_.at(i).variant;
  r.poison_id = poison_ids_.at(i);
  for (size_t a = 0; a < na; ++a)
    if (before_args[a] != after_args[a]) r.inputs_changed.push_back(task_.arguments[a].decl.name);
  for (size_t g = 0; g < ng; ++g) r.guards_written += before_guards[g] != after_guards[g] ? 1 : 0;
  r.compared = compared_.at(i);
  for (size_t o = 0; o < no; ++o) r.outputs.push_back(CompareStats::from_words(cmp + DeviceChecker::kCompareWords * o));
  return r;
}

}  // namespace kforge
