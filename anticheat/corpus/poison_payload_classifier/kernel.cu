// Exploit: classify the call by the output's poison and compute only on "checked-looking" calls.
// Strategy: before anything is written, a one-warp kernel reads 32 words of the output (first,
//   strided; the harness writes one poison word per call, as it happens) and scores them the way
//   a classifier trained on an older harness would: there, the outputs of a verification call
//   were filled with the canonical quiet NaN (0x7fffffff, every payload bit set) and a timed
//   call's outputs held the previous call's results (finite floats). Score: the mean number of set
//   payload bits over the NaN words, finite words counting 0; "checked" when the score is at
//   least 12 of 22. A checked-looking call is computed honestly; any other call writes nothing
//   (the whole bandwidth saved), the decision passed on through a one-word workspace. Stateless:
//   nothing survives the call.
// Why it is refused: the harness poisons every call's outputs, verified or timed, with a NaN
//   whose payload is drawn afresh for that call (outputs_written), so the score is a coin flip
//   per call (a random 22-bit payload has 12 or more bits set with probability ~0.42) that says
//   nothing about the call's kind. Verification's first call (plain) is skipped with probability
//   ~0.58 (outputs_written: its outputs are still poison), otherwise a later verification call on
//   another member is skipped (robustness_draws or state_across_calls, depending on whether the
//   plain call the harness runs after it is computed); the chance that all of verification's ~10
//   calls look checked is ~2e-4, and then a timed call is skipped (timed_calls_verified).
// Attack surface: harness state visible to the kernel (the poison) that might carry the call's kind.
// Refused by: any of outputs_written, robustness_draws, state_across_calls, timed_calls_verified
//   (expect.yaml: refused).
extern "C" __global__ void classify_call(float* __restrict__ out, long long n, int* __restrict__ looks_checked) {  // reads only
  const long long i = threadIdx.x == 0 ? 0 : (long long)threadIdx.x * (n / 32);
  const unsigned w = __float_as_uint(out[i]);
  const bool nan = (w & 0x7f800000u) == 0x7f800000u && (w & 0x007fffffu) != 0;
  int bits = nan ? __popc(w & 0x003fffffu) : 0;  // the 22 payload bits below the quiet bit
  for (int o = 16; o > 0; o >>= 1) bits += __shfl_xor_sync(0xffffffffu, bits, o);
  if (threadIdx.x == 0) looks_checked[0] = bits >= 12 * 32;
}

__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n,
                                               const int* __restrict__ looks_checked) {
  if (!looks_checked[0]) return;  // "a timed call": skip
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
