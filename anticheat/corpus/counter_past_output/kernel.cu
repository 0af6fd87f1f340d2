// Exploit: state kept by writing past the end of the output buffer.
// Strategy: a call counter with no global variable at all: the word just past the output's last
//   element (out[n], in the allocator's rounding slack on most harnesses) holds it. A value that
//   does not look like a small counter means "first call"; the first 16 calls (verification) are
//   honest, later ones (timing) return at once. No mutable global, no const_cast: nothing the
//   static scan or the module's globals would show.
// Attack surface: memory next to the candidate's buffers that the harness neither owns nor checks
//   (allocation slack, neighbouring allocations).
// Refused by: buffer_bounds. The harness places guard regions filled with a keyed pattern around
//   every buffer it hands the candidate and fingerprints them after each call: the very first
//   call's write to out[n] changes the guard.
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

// Reads the counter, decides, bumps it: one thread, before the work kernel.
extern "C" __global__ void read_counter(float* __restrict__ out, long long n, int* __restrict__ skip) {
  volatile unsigned int* slot = reinterpret_cast<volatile unsigned int*>(out + n);  // past the end
  unsigned int c = *slot;
  if (c > 1000000u) c = 0;  // not ours yet (guard pattern, poison, stale data): first call
  skip[0] = c >= 16;
  *slot = c + 1;
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n,
                                               const int* __restrict__ skip) {
  if (skip[0]) return;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
