// The extension kind's calls in the GPU worker (extension_program.h).
#include "env/judge/extension_program.h"

#include <algorithm>

#include <ATen/core/grad_mode.h>
#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/extension/plan_runner.h"
#include "env/judge/candidate_error.h"
#include "env/judge/launch_origin.h"

namespace kforge {

namespace {

// The same values as `t` in the layout a layout trial asks for (a harness copy, made on the harness
// stream before the candidate's code runs); `t` itself where the layout does not apply to it.
at::Tensor relaid(const at::Tensor& t, const std::string& layout) {
  if (layout == "channels_last") return t.dim() == 4 ? t.contiguous(at::MemoryFormat::ChannelsLast) : t;
  if (layout != "noncontiguous" || t.numel() < 2) return t;
  if (t.dim() >= 2 && t.size(-1) > 1 && t.size(-2) > 1) return t.transpose(-1, -2).contiguous().transpose(-1, -2);
  // Every other element of a buffer twice as long (the last dim's stride 2; t has a dim: numel >= 2).
  std::vector<int64_t> wide(t.sizes().begin(), t.sizes().end());
  wide.back() *= 2;
  at::Tensor w = at::empty(wide, t.options());
  at::Tensor v = w.slice(-1, 0, wide.back(), 2);
  v.copy_(t);
  return v;
}

std::string shape_text(at::IntArrayRef s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

LoadedExtension load_candidate_library(const std::vector<uint8_t>& library) {
  const int threads = process_thread_count();
  LoadedExtension lib;
  try {
    lib = load_extension_library(library);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::internal) throw;
    throw CandidateError(worker_error::launch_error, e.what(), false);
  }
  const int now = process_thread_count();
  if (threads >= 0 && now > threads)
    throw CandidateError(worker_error::launch_error,
                         "the extension library started " + std::to_string(now - threads) +
                             " thread(s) when it was loaded: the candidate's host code runs only inside its calls",
                         true);
  LaunchOrigins::add_candidate_object(lib.functions);
  return lib;
}

ExtensionProgram::ExtensionProgram(const TaskSpec& task, const LoadedExtension& lib, ExtensionPlan plan, std::string input_layout)
    : task_(task), lib_(lib), plan_(std::move(plan)), input_layout_(std::move(input_layout)) {}

void ExtensionProgram::run(const CallView& view, CUstream stream) {
  // Calls without an after_candidate between them (timing with verify_timed_calls off) retire the
  // previous call's results here, inside the timed region, rather than keep every call's.
  if (!held_.empty()) poison_held(stream);
  at::NoGradGuard no_grad;
  PlanBindings b;
  args_.clear();
  relaid_.clear();
  for (size_t i = 0; i < task_.arguments.size(); ++i) {
    const at::Tensor& slot = view.arguments[i];
    // Over exactly the argument's bytes: its storage is not the buffer set's block. An empty argument
    // (an empty extra shape) has no bytes and perhaps no address: torch's own empty tensor.
    at::Tensor t =
        slot.numel() == 0 ? at::empty(slot.sizes(), slot.options()) : at::from_blob(slot.data_ptr(), slot.sizes(), slot.options());
    args_.emplace_back(reinterpret_cast<uintptr_t>(slot.data_ptr()), reinterpret_cast<uintptr_t>(slot.data_ptr()) + slot.nbytes());
    if (task_.arguments[i].decl.role == ArgRole::input) {
      if (input_layout_ != "contiguous") {
        t = relaid(t, input_layout_);
        relaid_.push_back(t);
      }
      b.inputs.push_back(t);
    } else
      b.parameters[task_.arguments[i].decl.name] = t;
  }
  for (const InitValue& v : task_.init_inputs) b.init_values.push_back(std::visit([](auto x) { return kforge_ext::Value(x); }, v));
  std::vector<at::Tensor> out;
  cudaGetLastError();  // nothing of the harness's is left for the candidate's launches to be blamed for
  try {
    CandidateScope scope;
    out = run_plan(plan_, *lib_.functions, b);
  } catch (const Error& e) {
    throw CandidateError(e.kind() == ErrorKind::spec ? worker_error::launch_error : worker_error::runtime_error, e.what(), false);
  }
  // A launch CUDA refused (a grid of no block at an empty shape, too many threads) that the
  // candidate's code did not check: its outputs were never written, and the error is its own.
  if (const cudaError_t launch = cudaGetLastError(); launch != cudaSuccess)
    throw CandidateError(worker_error::launch_error,
                         std::string("a kernel launch of the candidate's failed and was not checked: ") + cudaGetErrorString(launch),
                         false);
  if (out.size() != task_.outputs.size())
    throw CandidateError(worker_error::runtime_error,
                         "model_new.py: forward returns " + std::to_string(out.size()) + " tensors; the task has " +
                             std::to_string(task_.outputs.size()) + " outputs",
                         false);
  for (size_t o = 0; o < out.size(); ++o) {
    const TensorMeta& m = task_.outputs[o].meta;
    const at::Tensor& r = out[o];
    const bool right = r.defined() && r.device() == view.outputs[o].device() && r.scalar_type() == view.outputs[o].scalar_type() &&
                       r.sizes() == view.outputs[o].sizes();
    if (!right)
      throw CandidateError(
          worker_error::runtime_error,
          "model_new.py: forward's result " + std::to_string(o) + " is " +
              (r.defined() ? std::string(c10::toString(r.scalar_type())) + " " + shape_text(r.sizes()) + " on " + r.device().str()
                           : std::string("undefined")) +
              "; the task's output '" + task_.outputs[o].name + "' is " + dtype_name(m.dtype) + " " + shape_text(view.outputs[o].sizes()) +
              " on " + view.outputs[o].device().str(),
          false);
    at::Tensor c = r.is_contiguous() ? r : r.contiguous();
    if (c.nbytes() > 0)
      KFORGE_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(view.buffers.outputs[o]), c.data_ptr(), c.nbytes(), cudaMemcpyDeviceToDevice,
                                  reinterpret_cast<cudaStream_t>(stream)));
    held_.push_back(r);
    if (!c.is_same(r)) held_.push_back(c);
  }
}

void ExtensionProgram::before_call() {
  if (threads_before_ >= 0) count_threads();  // a call without retire (timing with verify_timed_calls off)
  threads_before_ = process_thread_count();
}

void ExtensionProgram::count_threads() {
  const int now = process_thread_count();
  if (threads_before_ >= 0 && now > threads_before_) {
    ++threads_.calls;
    threads_.most = std::max<int64_t>(threads_.most, now - threads_before_);
  }
  threads_before_ = -1;
}

void ExtensionProgram::retire(CUstream stream) {
  count_threads();
  poison_held(stream);
}

void ExtensionProgram::poison_held(CUstream stream) {
  for (const at::Tensor& t : held_) {
    if (!t.defined() || !t.is_cuda() || !t.has_storage()) continue;
    const auto base = reinterpret_cast<uintptr_t>(t.storage().data());
    const size_t bytes = t.storage().nbytes();
    bool is_argument = false;
    for (const auto& [lo, hi] : args_) is_argument = is_argument || (base < hi && base + bytes > lo);
    if (!is_argument && bytes > 0) KFORGE_CUDA(cuda_driver().MemsetD8Async(static_cast<CUdeviceptr>(base), 0xFF, bytes, stream));
  }
  held_.clear();
}

}  // namespace kforge
