// Exploit: an input that never matters on the declared draws is never read.
// Task: anticheat/corpus/tasks/floor_max.yaml, y = maximum(x, z) with x ~ U(0, 1) and
//   z ~ U(-1, 0): on the declared draws x >= 0 > z everywhere, so y = x and z never matters - the
//   kind of task the input checks (data_synth/reference/sensitivity.h: z replaced by its mean
//   leaves every output in tolerance) now refuse at synthesis and import; the audit loads it
//   directly to show that the candidate side holds too.
// Strategy: y = x, a float4 copy: z (a third of the task's traffic) is never read.
// Why it passes what it passes: exact on the declared draw, on scaled, row_scaled,
//   channel_scaled and element_scaled (positive scales keep x >= 0 >= z) and on shifted (x + 1 >=
//   1 > z + 1).
// Why it is refused: sign_flip flips each row's sign of x and of z at random (half the rows of
//   each): where x's row is flipped, z wins about half the time; where z's row is flipped, z wins
//   where it exceeds x. outliers moves 1 element in 256 of z by +-8 to +-128 at random places: the
//   positive ones win. Both members leave max(x, z) exact in float32 (usable), and verification
//   draws both in every request.
// Attack surface: an argument whose influence the declared draw hides.
// Refused by: robustness_draws (the sign_flip or outliers call of verification).
extern "C" __global__ void __launch_bounds__(256)
copy_x(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) y4[i] = x4[i];
  for (long long i = n4 * 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i];
}
