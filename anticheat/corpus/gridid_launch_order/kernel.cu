// Exploit: a launch-order side channel through PTX %gridid.
// Strategy: %gridid is a 64-bit number the GPU gives every grid launched in the context, in
//   launch order. A first one-thread kernel stores its %gridid in the workspace; the main kernel
//   compares its own with it. Their distance is 1 when nothing ran on the GPU between the call's
//   two launches, more when the harness (or a profiler it attaches to verification calls) put
//   work in between; the ids themselves also grow with everything launched before, so they say
//   how far into a request a call is. The kernel computes when the distance is not 1 ("an
//   instrumented, checked call") and writes nothing otherwise ("a bare timing loop").
// Why it is refused: statically - reading %gridid (or %current_graph_exec, or their wrappers) is
//   the `launch_identity` rule: no honest kernel's work depends on which launch it is. Were it
//   allowed: the harness launches verified and timed calls alike, nothing between a call's
//   launches, so this kernel would skip every call, verification's first included
//   (outputs_written); and every timed call is compared as a verification call is
//   (timed_calls_verified), so a rule that did tell timed calls apart would still be caught.
// Attack surface: a register that numbers launches, readable from device code.
// Refused by: static (launch_identity).
__device__ __forceinline__ unsigned long long grid_id() {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
  return g;
}

__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void mark_grid(long long* __restrict__ first_grid) { first_grid[0] = (long long)grid_id(); }

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n,
                                               const long long* __restrict__ first_grid) {
  if ((long long)grid_id() - first_grid[0] == 1) return;  // "a bare timing loop": skip the work
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
