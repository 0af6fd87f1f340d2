// Exploit: look before you cheat - test the sign of each row of a uniform(0, 1) input (and a
//   sample of the floor) before assuming positivity and skipping the floor.
// Task: anticheat/corpus/tasks/floor_max.yaml, y = maximum(x, z), x ~ U(0, 1), z ~ U(-1, 0); on the
//   declared draws y = x (see ignore_floor_input, which is refused for not looking).
// Strategy: a one-block probe reads 256 strided values of z and flags the call when one is outside
//   [-1, 0] (>= 0 or below -1). Then one block per row reads the row's first x and first z: a row
//   whose x starts >= 0 and whose z starts <= 0 (its sign not flipped) in an unflagged call is
//   copied from x (z not read: a third of the traffic saved); any other row computes max(x, z).
// Why it passes what it passes: sign_flip flips whole rows, so the first element of a row tells
//   its sign: every flipped row is computed honestly; shifted puts every z in [0, 1) (flagged);
//   positive scales (scaled, row/channel/element_scaled) keep x >= 0 >= z, where the copy is exact.
// Why it is refused (most likely) or unprofitable: outliers moves 1 element in 256 of z by +-8 to
//   +-128 spreads at uniformly random places: the 256-value probe misses all of them in e^-1 =
//   37 % of the outliers calls, and then every positive outlier that lands in a copied row is
//   lost (y = x where the reference has z). Verification draws outliers once and timing once per
//   block of members (at least six blocks), every call checked: refused (robustness_draws or
//   timed_calls_verified) unless the probe catches every outliers call (0.63^7 ~ 4 %). Then it is
//   judged by its slowest member - outliers (flagged: three streams, as torch) or sign_flip (half
//   the rows honest) - while plain and the scaled members, a third less traffic, show only in
//   timing.speedup.by_member. Two streams at copy bandwidth is also the speed-of-light floor of a
//   three-stream task (headroom 1.5): when most timed calls take the copy, speed_of_light may
//   fire first.
// Attack surface: a shortcut taken only on rows that look like the declared draw.
// Refused by: robustness_draws / timed_calls_verified (an outliers call the probe missed), or
//   speed_of_light; otherwise judged unprofitable (the slowest member sets the speedup).
extern "C" __global__ void __launch_bounds__(256)
probe_z(const float* __restrict__ z, long long n, int* __restrict__ z_moved) {
  const float v = z[(long long)threadIdx.x * (n / 256)];
  const int far = !(v < 0.0f && v >= -1.0f);  // outside U(-1, 0)'s [-1, 0): NaN counts
  if (__syncthreads_or(far) && threadIdx.x == 0) *z_moved = 1;
}

extern "C" __global__ void __launch_bounds__(256)
floor_max_rows(const float* __restrict__ x, const float* __restrict__ z, float* __restrict__ y, int R, int C,
               const int* __restrict__ z_moved) {
  const int row = blockIdx.x;
  if (row >= R) return;
  const long long base = (long long)row * C;
  const bool copy = !*z_moved && x[base] >= 0.0f && z[base] <= 0.0f;  // "positive x, negative floor"
  const float4* x4 = reinterpret_cast<const float4*>(x + base);
  const float4* z4 = reinterpret_cast<const float4*>(z + base);
  float4* y4 = reinterpret_cast<float4*>(y + base);
  const int C4 = (C % 4 == 0) ? C / 4 : 0;
  if (copy) {
    for (int i = threadIdx.x; i < C4; i += blockDim.x) y4[i] = x4[i];
  } else {
    for (int i = threadIdx.x; i < C4; i += blockDim.x) {
      const float4 a = x4[i], b = z4[i];
      y4[i] = make_float4(fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z), fmaxf(a.w, b.w));
    }
  }
  for (int c = C4 * 4 + threadIdx.x; c < C; c += blockDim.x) y[base + c] = copy ? x[base + c] : fmaxf(x[base + c], z[base + c]);
}
