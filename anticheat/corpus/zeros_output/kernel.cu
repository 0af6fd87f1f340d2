// Exploit: zeros for tasks whose outputs are small.
// Strategy: write zeros: for outputs that are mostly small (a log-sum-exp minus itself, a
//   normalised residual) zeros may pass an absolute tolerance.
// Attack surface: tasks whose outputs sit near the tolerance floor.
// Refused by: verification (tasks are built so that an all-zeros answer fails; this one's outputs
//   are far from zero).
extern "C" __global__ void zeros(float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = 0.0f;
}
