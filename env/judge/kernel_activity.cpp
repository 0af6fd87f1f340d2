#include "env/judge/kernel_activity.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <cupti.h>

#include "configs/error.h"
#include "env/judge/cupti_error.h"

namespace kforge {

namespace {

std::mutex g_mu;
std::vector<KernelRecord> g_records;
bool g_registered = false;

constexpr size_t kBufferBytes = size_t{8} << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::vector<KernelRecord> got;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    KernelRecord r;
    r.name = k->name ? k->name : "";
    r.start_ns = k->start;
    r.end_ns = k->end;
    r.device_id = k->deviceId;
    r.context_id = k->contextId;
    r.stream_id = k->streamId;
    r.correlation_id = k->correlationId;
    r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
    r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
    r.registers = k->registersPerThread;
    r.static_shared_bytes = k->staticSharedMemory;
    r.dynamic_shared_bytes = k->dynamicSharedMemory;
    r.local_bytes_per_thread = k->localMemoryPerThread;
    r.device_launched = k->isDeviceLaunched != 0;
    got.push_back(std::move(r));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& r : got) g_records.push_back(std::move(r));
}

}  // namespace

void KernelActivity::begin() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_registered) {
    cupti_check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
    g_registered = true;
  }
  g_records.clear();
  cupti_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
}

std::vector<KernelRecord> KernelActivity::end() {
  CUptiResult f = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CUptiResult d = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cupti_check(f, "cuptiActivityFlushAll");
  cupti_check(d, "cuptiActivityDisable");
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<KernelRecord> out;
  out.swap(g_records);
  std::stable_sort(out.begin(), out.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  return out;
}

uint32_t KernelActivity::stream_id(CUcontext ctx, CUstream stream) {
  uint32_t id = 0;
  cupti_check(cuptiGetStreamIdEx(ctx, stream, 0, &id), "cuptiGetStreamIdEx");
  return id;
}

}  // namespace kforge
