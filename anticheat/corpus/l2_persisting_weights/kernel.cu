// Exploit: keep the weight resident in L2 across the harness's flush (access-property hints).
// Strategy: the 90 MB up-projection weight is read by every call. Reading it through
//   cuda::annotated_ptr<..., cuda::access_property::persisting> (and marking the activations
//   streaming) asks the L2 to keep the weight's lines in its persisting partition; the harness's
//   flush (it writes twice the L2's size at normal priority before each timed call) may then leave
//   part of the weight in cache, so the timed call reads it from L2 instead of HBM - a speed-up
//   from the harness's memory state, not from the kernel.
// Attack surface: L2 set-aside / persistence controls reachable from device code.
// Refused by: static (l2_residency: cuda::annotated_ptr, cuda::access_property).
#include <cuda_bf16.h>
#include <cuda/annotated_ptr>

// One thread per output element (slow but simple): up[t][i] = sum_h xn[t][h] * w[i][h],
// xn = bf16(x * rsqrt(mean(x^2) + eps) * g), computed on the fly.
extern "C" __global__ void __launch_bounds__(256)
rmsnorm_linear(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ g,
               const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ up, int T, int H, int I) {
  cuda::annotated_ptr<const __nv_bfloat16, cuda::access_property::persisting> wp(w);
  cuda::annotated_ptr<const __nv_bfloat16, cuda::access_property::streaming> xp(x);
  const int t = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T || i >= I) return;
  float ss = 0.0f;
  for (int h = 0; h < H; ++h) {
    const float v = __bfloat162float(xp[(size_t)t * H + h]);
    ss += v * v;
  }
  const float rstd = rsqrtf(ss / (float)H + 1e-6f);
  float acc = 0.0f;
  for (int h = 0; h < H; ++h) {
    const float xn = __bfloat162float(__float2bfloat16(__bfloat162float(xp[(size_t)t * H + h]) * rstd * __bfloat162float(g[h])));
    acc = fmaf(xn, __bfloat162float(wp[(size_t)i * H + h]), acc);
  }
  up[(long long)t * I + i] = __float2bfloat16(acc);
}
