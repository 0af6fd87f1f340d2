// A cheat: writes the right answer but also rewrites its input in place (x = relu(x)), which the
// harness's fingerprint of every input after every call refuses as a cheat.
extern "C" __global__ void relu(float* x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = fmaxf(x[i], 0.0f);
    y[i] = v;
    x[i] = v;
  }
}
