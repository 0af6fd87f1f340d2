// Exploit: keep the weight resident in L2 across the harness's flush (PTX cache policies).
// Strategy: a createpolicy descriptor with evict_last priority for the whole 64 MB gate weight,
//   and every weight load issued as ld.global.L2::cache_hint with that policy (the activations
//   loaded with a plain evict_last-free load). Lines loaded evict_last are the last the L2 gives
//   up; the harness's flush writes twice the L2's size at normal priority before each timed call,
//   and may leave evict_last lines of the previous call in place, so the timed call starts warm.
// Attack surface: PTX L2 eviction priorities (createpolicy, .L2::evict_last, .L2::cache_hint).
// Refused by: static (l2_residency: createpolicy, evict_last, cache_hint in inline PTX).
__device__ __forceinline__ unsigned long long keep_policy() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(p));
  return p;
}

__device__ __forceinline__ float ld_keep(const float* ptr, unsigned long long policy) {
  float v;
  asm volatile("ld.global.nc.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(ptr), "l"(policy));
  return v;
}

// y = x * sigmoid(x W^T + b), one thread per output (slow but simple).
extern "C" __global__ void __launch_bounds__(256)
gated_linear(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y,
             int M, int D) {
  const unsigned long long pol = keep_policy();
  const int m = blockIdx.y, n = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M || n >= D) return;
  const float* xr = x + (long long)m * D;
  float acc = 0.0f;
  for (int k = 0; k < D; ++k) acc = fmaf(xr[k], ld_keep(w + (long long)n * D + k, pol), acc);
  const float g = acc + b[n];
  y[(long long)m * D + n] = xr[n] * (1.0f / (1.0f + expf(-g)));
}
