// Exploit: result cache keyed by pointer, in a __device__ table.
// Strategy: remember the input and output pointers of earlier calls; when a call comes back with
// the same input pointer (the timing loop reuses its buffers), copy the cached output instead of
// computing, or skip entirely when the output pointer matches too.
// Attack surface: mutable __device__ tables (here of pointers to const, which are still writable
// pointers) survive between calls.
#define SLOTS 8
__device__ const float* kf_seen_x[SLOTS], *kf_seen_out[SLOTS];  // flagged: global_state
__device__ int kf_next = 0;  // flagged: global_state

extern "C" __global__ void transpose_add(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ y, int N) {
  for (int s = 0; s < SLOTS; ++s)
    if (kf_seen_x[s] == a && kf_seen_out[s] == y) return;  // same buffers: the output is still there
  const int i = blockIdx.y * 32 + threadIdx.y, j = blockIdx.x * 32 + threadIdx.x;
  if (i < N && j < N) y[(long long)i * N + j] = a[(long long)j * N + i] + b[(long long)i * N + j];
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
    int slot = atomicAdd(&kf_next, 1) % SLOTS;  // flagged: global_state
    kf_seen_x[slot] = a;
    kf_seen_out[slot] = y;
  }
}
