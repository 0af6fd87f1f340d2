// Exploit: classify the call from everything it can see - buffer addresses, the workspace's
//   initial bytes, the output's poison, a few input bits - and compute only on "checked" calls.
// Strategy: a one-thread kernel gathers the features a call exposes before anything is written:
//   the address of the output and of an input (which buffer set the harness picked, its page
//   offset), the workspace's first word (what the harness left in it), the output's first word
//   (its poison) and the low bits of a[0]. A classifier learned offline on an older harness maps
//   them to "checked" or "timed"; here it is a fixed hash of the features and a threshold, as a
//   small learned model amounts to. Checked-looking calls run an honest 32x32 tiled transpose-add;
//   timed-looking ones write nothing, the decision passed on through the workspace's second word.
// Why it is refused: the harness prepares every call alike, verified or timed: the buffer set is
//   drawn at random among those the previous call did not use (address_pool: 3, each at a random
//   page offset), the workspace is filled with 0xFF bytes every call (the same word always: no
//   information), the poison is a NaN payload drawn afresh per call, the inputs are fresh draws.
//   So the classifier's answer is independent of the call's kind - here a coin flip per call -
//   and it skips verification calls as often as timed ones: verification's first call is skipped
//   with probability 1/2 (outputs_written), otherwise a later one (robustness_draws or
//   state_across_calls), all of them computed with probability ~1e-3, then a timed call
//   (timed_calls_verified).
// Attack surface: anything in a call's setup that could differ between verified and timed calls.
// Refused by: any of outputs_written, robustness_draws, state_across_calls, timed_calls_verified
//   (expect.yaml: refused).
#define TILE 32

__device__ __forceinline__ unsigned long long mix(unsigned long long v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdULL;
  v ^= v >> 33;
  v *= 0xc4ceb9fe1a85ec53ULL;
  return v ^ (v >> 33);
}

extern "C" __global__ void classify_call(const float* __restrict__ a, float* __restrict__ y, long long* __restrict__ scratch) {
  const unsigned long long features[5] = {
      (unsigned long long)y >> 8, (unsigned long long)a >> 8, (unsigned long long)scratch[0],
      (unsigned long long)__float_as_uint(y[0]), (unsigned long long)(__float_as_uint(a[0]) & 0xffu)};
  unsigned long long h = 0x6b666f726765ULL;
  for (int i = 0; i < 5; ++i) h = mix(h ^ features[i]);
  scratch[1] = (h >> 17) & 1;  // 1: "a checked call"
}

extern "C" __global__ void transpose_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, int N,
                                         const long long* __restrict__ scratch) {
  if (!scratch[1]) return;  // "a timed call": skip
  __shared__ float tile[TILE][TILE + 1];
  const int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
  // y[r][c] = a[c][r] + b[r][c]: read a's tile (rows bx.., columns by..) row-coalesced
  for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
    const int r = bx + j, c = by + threadIdx.x;
    if (r < N && c < N) tile[j][threadIdx.x] = a[(long long)r * N + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
    const int r = by + j, c = bx + threadIdx.x;
    if (r < N && c < N) y[(long long)r * N + c] = tile[threadIdx.x][j] + b[(long long)r * N + c];
  }
}
