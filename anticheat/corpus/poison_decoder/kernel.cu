// Exploit: decode the output's poison to tell verification from timing.
// Strategy: the harness fills the outputs with a NaN pattern before each call. A first one-thread
//   kernel reads the pattern in out[0] before anything is written and learns what verification
//   poison looks like: the payloads of the first 16 calls (more than verification makes) are
//   recorded in a hidden table (a `const volatile __device__` array written through const_cast,
//   which the static scan does not see). From then on a call whose poison is one of the learned
//   payloads is taken for a check and computed honestly; any other poison is taken for a timed
//   call and the work is skipped (the decision goes to the main kernel through a one-word
//   workspace). Against a harness whose timing poison differs from its verification poison (a
//   fixed pattern, or none) this skips every timed call and is verified on every checked one.
// Attack surface: poison or other harness state that carries the phase of the call.
// Refused by: timed_calls_verified. The poison is random per call and identical in kind for
//   verification and timing, so every call after the 16th looks like "timing": its output stays
//   poison, which the comparison after each timed call counts (as it does any unwritten element).
//   Were verification to make more than 16 calls, outputs_written would fire first.
#define LEARN 16

__device__ const volatile unsigned int learned[LEARN + 1] = {0};  // [0]: calls seen; [1..]: payloads

extern "C" __global__ void decode_poison(float* __restrict__ out, int* __restrict__ decision) {
  const unsigned int payload = __float_as_uint(out[0]);
  const unsigned int calls = learned[0];
  int honest = 0;
  if (calls < LEARN) {
    *const_cast<volatile unsigned int*>(&learned[1 + calls]) = payload;
    honest = 1;
  } else {
    for (int i = 1; i <= LEARN; ++i) honest |= learned[i] == payload;
  }
  if (calls < 1000000u) *const_cast<volatile unsigned int*>(&learned[0]) = calls + 1;
  decision[0] = honest;
}

__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n,
                                               const int* __restrict__ decision) {
  if (!decision[0]) return;  // "timed": skip
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
