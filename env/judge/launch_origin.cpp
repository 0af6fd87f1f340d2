// Which code launched each kernel (launch_origin.h).
#include "env/judge/launch_origin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include <cupti.h>

#include "configs/error.h"
#include "env/judge/cupti_error.h"

namespace kforge {

namespace {

std::mutex g_mu;
std::vector<LaunchRecord> g_records;    // under g_mu
std::set<uintptr_t> g_candidate_bases;  // under g_mu
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_on{false};
std::atomic<long> g_harness_tid{0};
thread_local int t_scope = 0;

long this_tid() { return syscall(SYS_gettid); }

std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

uintptr_t self_base() {
  static const uintptr_t base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&self_base), &info) ? reinterpret_cast<uintptr_t>(info.dli_fbase) : uintptr_t{0};
  }();
  return base;
}

constexpr int kMaxFrames = 96;

struct Frames {
  uintptr_t ip[kMaxFrames];
  int n = 0;
};

_Unwind_Reason_Code collect_frame(struct _Unwind_Context* ctx, void* arg) {
  auto* f = static_cast<Frames*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0 || f->n >= kMaxFrames) return _URC_END_OF_STACK;
  f->ip[f->n++] = ip;
  return _URC_NO_REASON;
}

// The launching code of an API call made inside a CandidateScope: the first frame, innermost
// first, past this callback's own frames and CUDA's plumbing. A return address is looked up one
// byte back so that a call ending its function is not read as the next function's.
LaunchRecord attribute_by_stack(const char* api) {
  Frames f;
  _Unwind_Backtrace(collect_frame, &f);
  LaunchRecord r;
  r.api = api ? api : "";
  r.origin = LaunchOrigin::unknown;
  bool in_callback = true;
  for (int k = 0; k < f.n; ++k) {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(f.ip[k] - 1), &info) || !info.dli_fname) continue;  // code of no object
    const auto base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    const bool self = base == self_base();
    if (in_callback && self) continue;
    in_callback = false;
    const std::string path = info.dli_fname;
    if (is_cuda_plumbing(path)) continue;
    r.origin = origin_of_object(path, g_candidate_bases.count(base) > 0, self);
    r.object = file_name(path);
    return r;
  }
  return r;
}

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (!g_on.load(std::memory_order_acquire)) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard<std::mutex> lock(g_mu);
  LaunchRecord r;
  if (this_tid() != g_harness_tid.load()) {
    r.origin = LaunchOrigin::other_thread;
    r.api = cb->functionName ? cb->functionName : "";
  } else if (t_scope > 0) {
    r = attribute_by_stack(cb->functionName);
  }
  r.correlation_id = cb->correlationId;
  g_records.push_back(std::move(r));
}

}  // namespace

const char* launch_origin_name(LaunchOrigin o) {
  switch (o) {
    case LaunchOrigin::harness:
      return "harness";
    case LaunchOrigin::candidate:
      return "candidate";
    case LaunchOrigin::aten:
      return "aten";
    case LaunchOrigin::cublas:
      return "cublas";
    case LaunchOrigin::cudnn:
      return "cudnn";
    case LaunchOrigin::other_library:
      return "other_library";
    case LaunchOrigin::other_thread:
      return "other_thread";
    case LaunchOrigin::unknown:
      return "unknown";
  }
  return "unknown";
}

bool is_cuda_plumbing(const std::string& path) {
  const std::string f = file_name(path);
  for (const char* p : {"libcupti.", "libcuda.so", "libcudart.", "libc.so", "libpthread.", "ld-linux", "libgcc_s."})
    if (starts_with(f, p)) return true;
  return false;
}

LaunchOrigin origin_of_object(const std::string& path, bool is_candidate, bool is_self) {
  if (is_candidate) return LaunchOrigin::candidate;
  if (is_self) return LaunchOrigin::harness;
  const std::string f = file_name(path);
  if (starts_with(f, "libtorch") || starts_with(f, "libc10")) return LaunchOrigin::aten;
  if (starts_with(f, "libcublas")) return LaunchOrigin::cublas;
  if (starts_with(f, "libcudnn")) return LaunchOrigin::cudnn;
  return LaunchOrigin::other_library;
}

void LaunchOrigins::begin() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_subscriber) cupti_check(cuptiSubscribe(&g_subscriber, on_api_call, nullptr), "cuptiSubscribe");
  cupti_check(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(RUNTIME_API)");
  cupti_check(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(DRIVER_API)");
  g_records.clear();
  g_harness_tid = this_tid();
  g_on.store(true, std::memory_order_release);
}

std::vector<LaunchRecord> LaunchOrigins::end() {
  g_on.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_subscriber) {
    cupti_check(cuptiEnableDomain(0, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(RUNTIME_API)");
    cupti_check(cuptiEnableDomain(0, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(DRIVER_API)");
  }
  std::vector<LaunchRecord> out;
  out.swap(g_records);
  return out;
}

void LaunchOrigins::add_candidate_object(const void* address) {
  Dl_info info{};
  KFORGE_CHECK(dladdr(address, &info) && info.dli_fbase, internal, "an extension library's address is in no loaded object");
  std::lock_guard<std::mutex> lock(g_mu);
  g_candidate_bases.insert(reinterpret_cast<uintptr_t>(info.dli_fbase));
}

OriginWindow::OriginWindow(bool want) {
  if (!want) return;
  try {
    LaunchOrigins::begin();
    on = true;
  } catch (const Error& e) {
    unavailable = e.what();
  }
}

std::vector<LaunchRecord> OriginWindow::finish() {
  if (!on) return {};
  on = false;
  return LaunchOrigins::end();
}

OriginWindow::~OriginWindow() {
  if (on) {
    try {
      LaunchOrigins::end();
    } catch (...) {}
  }
}

OriginVerdict judge_kernel_origins(const std::vector<KernelRecord>& kernels, const std::vector<LaunchRecord>& launches,
                                   const std::vector<std::string>& allowed) {
  constexpr size_t kNamesShown = 8;
  std::unordered_map<uint32_t, const LaunchRecord*> by_id;
  for (const auto& l : launches) by_id.emplace(l.correlation_id, &l);
  std::map<std::string, int64_t> counts;
  std::map<std::string, std::map<std::string, int64_t>> names;
  std::map<std::string, std::set<std::string>> objects;
  int64_t refused = 0;
  for (const auto& k : kernels) {
    auto it = by_id.find(k.correlation_id);
    std::string origin = "unattributed";
    if (it != by_id.end()) {
      if (it->second->origin == LaunchOrigin::harness) continue;
      origin = launch_origin_name(it->second->origin);
      if (!it->second->object.empty()) objects[origin].insert(it->second->object);
    }
    const bool library = origin == "aten" || origin == "cublas" || origin == "cudnn";
    const bool pass = origin == "candidate" || (library && std::find(allowed.begin(), allowed.end(), origin) != allowed.end());
    refused += pass ? 0 : 1;
    ++counts[origin];
    auto& n = names[origin];
    if (n.size() < kNamesShown || n.count(k.name)) ++n[k.name];
  }
  OriginVerdict v;
  v.ok = refused == 0;
  v.evidence = {{"kernels_by_origin", counts}, {"kernel_names", names},        {"launching_objects", objects},
                {"refused_kernels", refused},  {"allowed_libraries", allowed}, {"api_calls_seen", launches.size()}};
  return v;
}

CandidateScope::CandidateScope() { ++t_scope; }
CandidateScope::~CandidateScope() { --t_scope; }

int process_thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

}  // namespace kforge
