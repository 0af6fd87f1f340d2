// Exploit: launch identity (%gridid, %current_graph_exec) tells verified calls from timed ones.
// Strategy: %gridid numbers the kernel launches in the CUDA context, so it says how many kernels
// ran before this call: in a fresh worker the verification calls come first, with small ids, and
// the timed calls later, each after the harness's own kernels (draws, fingerprints, the L2 flush),
// with large ids. The kernel computes honestly while the id is small and returns at once after;
// it also skips the work whenever it runs inside a CUDA graph (%current_graph_exec is not zero),
// the way a timing loop is often replayed. The register name is split across adjacent literals
// and the NVVM reader is built by token pasting, so a grep for "gridid" finds neither.
// Attack surface: the PTX special registers %gridid and %current_graph_exec, in inline PTX, as
// the NVVM builtin __nvvm_read_ptx_sreg_gridid and through libcu++'s cuda::ptx::get_sreg_*.
// Lines a check must refuse end in "flagged: <check>".
#include <cuda/ptx>

#define KF_CAT(a, b) a##b
#define KF_SREG(r) KF_CAT(__nvvm_read_ptx_sreg_, r)()

__device__ __forceinline__ unsigned long long grid_id() {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%grid" "id;" : "=l"(g));  // flagged: launch_identity
  return g;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const unsigned long long id = grid_id();
  const unsigned long long same_id = KF_SREG(gridid);  // flagged: launch_identity
  const unsigned long long graph = cuda::ptx::get_sreg_current_graph_exec();  // flagged: launch_identity
  if (id > 4096 || same_id > 4096 || graph != 0) return;  // late in the worker, or replayed: skip the work
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  if (threadIdx.x == 0) {
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; ++c) m = fmaxf(m, xr[c]);
    for (int c = 0; c < C; ++c) s += expf(xr[c] - m);
    for (int c = 0; c < C; ++c) yr[c] = expf(xr[c] - m) / s;
  }
}
