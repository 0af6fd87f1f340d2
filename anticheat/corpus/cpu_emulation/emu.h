// A CPU emulation of the CUDA device features the corpus's kernels use, so that they can be run
// without a GPU (anticheat/corpus/cpu_emulation/README.md): every CUDA thread of a block is a
// cooperative fiber (ucontext), blocks run one after another; __syncthreads and __syncwarp are
// fiber barriers (a returning thread drops out, as on the GPU); shuffles exchange through a per-warp
// slot array; __shared__ becomes a function-local static (one block runs at a time); WMMA fragments
// hold the whole 16x16 tile in every lane, one lane multiplies (sequential float accumulation) and
// stores. Numerics: host libm (expf, logf within an ulp, not the device's) and IEEE float
// arithmetic; fmaf is fused. Kernels are compiled as host C++ with -fno-strict-aliasing (they cast
// float* to float4* and uint4 to __nv_bfloat162 as CUDA code does).
#pragma once
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <mutex>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <functional>
#include <vector_types.h>
#include <vector_functions.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
inline emu_dim3 threadIdx, blockIdx;  // the running fiber's
inline emu_dim3 blockDim, gridDim;
inline unsigned long long emu_slots[32][32];
inline std::mutex emu_atomic_mu;

// Cooperative fibers (ucontext): one per CUDA thread of the block being run.
struct EmuFiber { ucontext_t ctx; int tid = 0; bool done = false; int waiting = 0; /* 1 block, 2 warp */ };
inline std::vector<EmuFiber> emu_fibers;
inline std::vector<char> emu_stacks;
inline ucontext_t emu_sched_ctx;
inline int emu_cur = -1, emu_nt = 0, emu_alive = 0;
inline int emu_block_waiting = 0;
inline std::vector<int> emu_warp_alive, emu_warp_waiting;
inline std::function<void()> emu_body;
constexpr size_t kEmuStack = 256 * 1024;

inline void emu_set_current(int f) {
  emu_cur = f;
  const int t = emu_fibers[f].tid;
  threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
}
inline void emu_release(int kind, int warp) {
  for (auto& f : emu_fibers)
    if (f.waiting == kind && (kind == 1 || f.tid / 32 == warp)) f.waiting = 0;
  if (kind == 1) emu_block_waiting = 0; else emu_warp_waiting[warp] = 0;
}
inline void emu_yield() { swapcontext(&emu_fibers[emu_cur].ctx, &emu_sched_ctx); }
inline void emu_block_barrier() {
  if (++emu_block_waiting == emu_alive) { emu_release(1, 0); return; }
  emu_fibers[emu_cur].waiting = 1;
  emu_yield();
}
inline void emu_warp_barrier() {
  const int w = emu_fibers[emu_cur].tid / 32;
  if (++emu_warp_waiting[w] == emu_warp_alive[w]) { emu_release(2, w); return; }
  emu_fibers[emu_cur].waiting = 2;
  emu_yield();
}
inline void emu_fiber_main() {
  emu_body();
  EmuFiber& f = emu_fibers[emu_cur];
  f.done = true;
  --emu_alive;
  const int w = f.tid / 32;
  --emu_warp_alive[w];
  if (emu_alive > 0 && emu_block_waiting == emu_alive) emu_release(1, 0);
  if (emu_warp_alive[w] > 0 && emu_warp_waiting[w] == emu_warp_alive[w]) emu_release(2, w);
  swapcontext(&f.ctx, &emu_sched_ctx);
}

inline int emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void __syncthreads() { emu_block_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_warp_barrier(); }
inline int __syncthreads_or(int p) {
  static int acc;
  __syncthreads(); if (emu_tid() == 0) acc = 0; __syncthreads();
  acc |= (p != 0); __syncthreads();
  int r = acc; __syncthreads(); return r;
}
inline int __syncthreads_count(int p) {
  static int acc;
  __syncthreads(); if (emu_tid() == 0) acc = 0; __syncthreads();
  acc += (p != 0); __syncthreads();
  int r = acc; __syncthreads(); return r;
}
template <class T> T emu_exchange(T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of a wide type");
  const int t = emu_tid(), w = t / 32, lane = t % 32;
  unsigned long long raw = 0; std::memcpy(&raw, &v, sizeof(T));
  emu_slots[w][lane] = raw;
  __syncwarp();
  raw = emu_slots[w][src_lane & 31];
  __syncwarp();
  T r; std::memcpy(&r, &raw, sizeof(T)); return r;
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m, int = 32) { return emu_exchange(v, (emu_tid() % 32) ^ m); }
template <class T> T __shfl_sync(unsigned, T v, int src, int = 32) { return emu_exchange(v, src); }
template <class T> T __shfl_down_sync(unsigned, T v, int d, int = 32) { int l = emu_tid() % 32; return emu_exchange(v, l + d < 32 ? l + d : l); }
template <class T> T __shfl_up_sync(unsigned, T v, int d, int = 32) { int l = emu_tid() % 32; return emu_exchange(v, l - d >= 0 ? l - d : l); }
inline unsigned __ballot_sync(unsigned, int p) {
  const int lane = emu_tid() % 32; unsigned bits = 0;
  for (int i = 0; i < 32; ++i) { int q = emu_exchange(p ? 1 : 0, i); if (q) bits |= 1u << i; }
  (void)lane; return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == 0xffffffffu; }
inline int __popc(unsigned v) { return __builtin_popcount(v); }

inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
inline int __float_as_int(float v) { int i; std::memcpy(&i, &v, 4); return i; }
inline float __uint_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
inline unsigned __float_as_uint(float v) { unsigned i; std::memcpy(&i, &v, 4); return i; }
inline long long __double_as_longlong(double v) { long long i; std::memcpy(&i, &v, 8); return i; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x < 0 ? 0.0f : x > 1 ? 1.0f : x; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
template <class T> T __ldg(const T* p) { return *p; }
template <class T> T __ldcs(const T* p) { return *p; }
template <class T> T __ldcg(const T* p) { return *p; }
template <class T> T __ldlu(const T* p) { return *p; }
template <class T> void __stcs(T* p, T v) { *p = v; }
template <class T> void __stcg(T* p, T v) { *p = v; }
template <class T> T atomicAdd(T* p, T v) { std::lock_guard<std::mutex> l(emu_atomic_mu); T o = *p; *p = o + v; return o; }
inline int atomicOr(int* p, int v) { std::lock_guard<std::mutex> l(emu_atomic_mu); int o = *p; *p = o | v; return o; }
inline unsigned atomicOr(unsigned* p, unsigned v) { std::lock_guard<std::mutex> l(emu_atomic_mu); unsigned o = *p; *p = o | v; return o; }
inline int atomicMax(int* p, int v) { std::lock_guard<std::mutex> l(emu_atomic_mu); int o = *p; if (v > o) *p = v; return o; }
inline void __threadfence() {}

// WMMA: each lane holds the whole tile.
namespace nvcuda { namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {};
struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static constexpr int num_elements = (std::is_same<Use, matrix_a>::value ? M * K : std::is_same<Use, matrix_b>::value ? K * N : M * N);
  T x[num_elements];
};
template <class F, class V> void fill_fragment(F& f, V v) { for (auto& e : f.x) e = v; }
// matrix_a (M x K): x[i*K + k]; matrix_b (K x N): x[k*N + n]; accumulator: x[i*N + n].
template <int M, int N, int K, class T> void load_matrix_sync(fragment<matrix_a, M, N, K, T, row_major>& f, const T* p, unsigned ld) {
  for (int i = 0; i < M; ++i) for (int k = 0; k < K; ++k) f.x[i * K + k] = p[i * ld + k];
}
template <int M, int N, int K, class T> void load_matrix_sync(fragment<matrix_a, M, N, K, T, col_major>& f, const T* p, unsigned ld) {
  for (int i = 0; i < M; ++i) for (int k = 0; k < K; ++k) f.x[i * K + k] = p[k * ld + i];
}
template <int M, int N, int K, class T> void load_matrix_sync(fragment<matrix_b, M, N, K, T, col_major>& f, const T* p, unsigned ld) {
  for (int k = 0; k < K; ++k) for (int n = 0; n < N; ++n) f.x[k * N + n] = p[n * ld + k];
}
template <int M, int N, int K, class T> void load_matrix_sync(fragment<matrix_b, M, N, K, T, row_major>& f, const T* p, unsigned ld) {
  for (int k = 0; k < K; ++k) for (int n = 0; n < N; ++n) f.x[k * N + n] = p[k * ld + n];
}
inline float emu_mma_buf[32][256];
template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  static_assert(M * N <= 256, "tile");
  const int w = emu_tid() / 32;
  if (emu_tid() % 32 == 0)  // one lane computes the warp's tile (every lane holds the same fragments)
    for (int i = 0; i < M; ++i) for (int n = 0; n < N; ++n) {
      float s = c.x[i * N + n];
      for (int k = 0; k < K; ++k) s += (float)a.x[i * K + k] * (float)b.x[k * N + n];
      emu_mma_buf[w][i * N + n] = s;
    }
  __syncwarp();
  std::memcpy(d.x, emu_mma_buf[w], sizeof(float) * M * N);
  __syncwarp();
}
template <int M, int N, int K> void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ld, layout_t l) {
  if (emu_tid() % 32 == 0)
    for (int i = 0; i < M; ++i) for (int n = 0; n < N; ++n) (l == mem_row_major ? p[i * ld + n] : p[n * ld + i]) = f.x[i * N + n];
  __syncwarp();
}
}}  // namespace nvcuda::wmma

// Runs kernel(args...) over grid x block, blocks one after another, threads as fibers.
template <class F, class... A> void emu_launch(F kernel, emu_dim3 grid, emu_dim3 block, A... args) {
  gridDim = grid; blockDim = block;
  const int nt = block.x * block.y * block.z;
  emu_fibers.assign(nt, EmuFiber{});
  if (emu_stacks.size() < nt * kEmuStack) emu_stacks.resize(nt * kEmuStack);
  emu_body = [&] { kernel(args...); };
  for (unsigned bz = 0; bz < grid.z; ++bz) for (unsigned by = 0; by < grid.y; ++by) for (unsigned bx = 0; bx < grid.x; ++bx) {
    blockIdx = {bx, by, bz};
    emu_nt = emu_alive = nt; emu_block_waiting = 0;
    emu_warp_alive.assign((nt + 31) / 32, 0); emu_warp_waiting.assign((nt + 31) / 32, 0);
    for (int t = 0; t < nt; ++t) {
      EmuFiber& f = emu_fibers[t];
      f = EmuFiber{}; f.tid = t; ++emu_warp_alive[t / 32];
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = emu_stacks.data() + t * kEmuStack;
      f.ctx.uc_stack.ss_size = kEmuStack;
      f.ctx.uc_link = nullptr;
      makecontext(&f.ctx, emu_fiber_main, 0);
    }
    while (emu_alive > 0) {
      bool ran = false;
      for (int t = 0; t < nt; ++t) {
        EmuFiber& f = emu_fibers[t];
        if (f.done || f.waiting) continue;
        emu_set_current(t);
        swapcontext(&emu_sched_ctx, &f.ctx);
        ran = true;
      }
      if (!ran && emu_alive > 0) { fprintf(stderr, "emu: deadlock in block (%u,%u,%u)\n", bx, by, bz); std::exit(3); }
    }
  }
}
