#include "rollout/lanes.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <cuda_runtime_api.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "env/cuda/cuda_probe.h"
#include "env/episode/tool_call.h"

namespace kforge {

const char* lane_name(Lane lane) {
  switch (lane) {
    case Lane::front:
      return "front";
    case Lane::compile:
      return "compile";
    case Lane::gpu:
      return "gpu";
  }
  return "?";
}

bool WorkQueue::push(StepJobPtr job) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopped_ || q_.size() >= max_) return false;
    q_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

StepJobPtr WorkQueue::pop() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [this] { return stopped_ || !q_.empty(); });
  if (stopped_) return nullptr;
  // A step someone waits for goes before a warm compile (scheduler.warm_compiles), which only saves
  // a GPU lane's time later; among each, first come first served.
  auto it = std::find_if(q_.begin(), q_.end(), [](const StepJobPtr& j) { return !j->warm; });
  if (it == q_.end()) it = q_.begin();
  StepJobPtr job = std::move(*it);
  q_.erase(it);
  job->state = StepJob::running;
  ++running_;
  return job;
}

bool WorkQueue::remove(const StepJobPtr& job) {
  std::lock_guard<std::mutex> lock(m_);
  auto it = std::find(q_.begin(), q_.end(), job);
  if (it == q_.end()) return false;
  q_.erase(it);
  job->state = StepJob::cancelled;
  return true;
}

std::deque<StepJobPtr> WorkQueue::drain() {
  std::lock_guard<std::mutex> lock(m_);
  std::deque<StepJobPtr> out;
  out.swap(q_);
  for (auto& j : out) j->state = StepJob::cancelled;
  return out;
}

void WorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopped_ = true;
  }
  cv_.notify_all();
}

void WorkQueue::finished(double service_s) {
  {
    std::lock_guard<std::mutex> lock(m_);
    mean_service_s_ = 0.8 * mean_service_s_ + 0.2 * service_s;
  }
  --running_;
  ++done_;
}

size_t WorkQueue::queued() const {
  std::lock_guard<std::mutex> lock(m_);
  return q_.size();
}

double WorkQueue::retry_after(int threads, double min_s) const {
  std::lock_guard<std::mutex> lock(m_);
  double ahead = static_cast<double>(q_.size()) + 1;
  double s = ahead * mean_service_s_ / std::max(1, threads);
  return std::clamp(s, min_s, 300.0);
}

Inbox::Inbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) { KFORGE_CHECK(fd_ >= 0, runtime, "eventfd failed"); }

Inbox::~Inbox() { ::close(fd_); }

void Inbox::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(m_);
    q_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  ssize_t n = ::write(fd_, &one, sizeof one);
  (void)n;  // a full counter already wakes the reader
}

size_t Inbox::run_all() {
  uint64_t count = 0;
  ssize_t n = ::read(fd_, &count, sizeof count);
  (void)n;
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(m_);
    batch.swap(q_);
  }
  for (auto& fn : batch) fn();
  return batch.size();
}

const char* const kNoGpuKind = "no_gpu";

namespace {

// Why no GPU is visible, in words true on this machine: the CUDA runtime's own error ("CUDA driver
// version is insufficient for CUDA runtime version") is what it says when there is no driver at all.
std::string why_no_gpu(const std::string& cuda_error) {
  std::error_code ec;
  bool driver = std::filesystem::exists("/proc/driver/nvidia/version", ec) || std::filesystem::exists("/dev/nvidiactl", ec);
  if (!driver) return "no GPU is visible: no NVIDIA driver is loaded on this machine (no /proc/driver/nvidia/version, no /dev/nvidiactl)";
  const std::string cuda = cuda_error.empty() ? std::string() : " (CUDA: " + cuda_error + ")";
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"))
    return std::string("no GPU is visible: CUDA_VISIBLE_DEVICES is '") + cvd + "'" + cuda;
  if (cuda_error.find("insufficient") != std::string::npos) {
    std::string version = try_read_file("/proc/driver/nvidia/version").value_or("");
    version = version.substr(0, version.find('\n'));
    return "no GPU is usable: the NVIDIA driver is older than this build's CUDA runtime needs (" +
           (version.empty() ? std::string("driver version unknown") : version) + ")";
  }
  return "no GPU is visible" + cuda;
}

}  // namespace

GpuLanes detect_gpu_lanes(int configured) {
  GpuLanes g;
  const char* consequence = "; verify, profile and submit answer no_gpu (compile still works)";
  if (configured == 0) {
    g.summary = std::string("no GPU lanes (scheduler.gpus is 0)") + consequence;
    return g;
  }
  std::string why;
  const int visible = visible_gpu_count(&why);
  for (int d = 0; d < visible; ++d) {
    cudaDeviceProp p{};
    g.names.push_back(cudaGetDeviceProperties(&p, d) == cudaSuccess ? std::string(p.name) : std::string("(name unknown)"));
  }
  cudaGetLastError();
  std::ostringstream found;
  for (int d = 0; d < visible; ++d) found << (d ? ", " : "") << "GPU " << d << " " << g.names[d];
  KFORGE_CHECK(configured <= visible, config,
               "scheduler.gpus is " << configured << " but " << visible << " GPU(s) are visible"
                                    << (visible ? " (" + found.str() + ")" : ": " + why_no_gpu(why))
                                    << "; -1 starts one lane per visible GPU");
  g.count = configured < 0 ? visible : configured;
  if (g.count == 0) {
    g.summary = "no GPU lanes: " + why_no_gpu(why) + consequence;
    return g;
  }
  std::ostringstream os;
  os << g.count << (g.count == 1 ? " GPU lane: " : " GPU lanes: ");
  for (int d = 0; d < g.count; ++d) os << (d ? ", " : "") << "GPU " << d << " " << g.names[d];
  if (g.count < visible) os << " (scheduler.gpus is " << g.count << "; " << visible << " visible)";
  g.summary = os.str();
  return g;
}

EvalReport LaneJudge::check(const TaskSpec& task, const Candidate& candidate) {
  KFORGE_CHECK(compile_, internal, "compile() reached a judge without a compile worker (a scheduling bug)");
  return compile_->check(task, candidate);
}

EvalReport LaneJudge::evaluate(const TaskSpec& task, const Candidate& candidate, const EvalOptions& options) {
  if (!has_gpus_)  // nothing to judge on: the episode shows it as it is (env/episode/episode.cpp, tool_evaluate)
    throw NotJudged(kNoGpuKind,
                    "nothing was judged: this server has no GPU (none visible, or scheduler.gpus is 0) and verify, "
                    "profile and submit need one; compile() still works and the episode goes on");
  KFORGE_CHECK(gpu_, internal, "a GPU tool reached a judge without a GPU worker (a scheduling bug)");
  return gpu_->evaluate(task, candidate, options);
}

}  // namespace kforge
