// Exploit: a global variable declared in inline PTX.
// Strategy: no C++ global: a file-scope asm statement declares a .global counter and the kernel
// bumps it with an atom instruction, skipping the work after the verification calls.
// Attack surface: module-scope PTX declarations, invisible to a scan of C++ declarations.
asm(".global .align 4 .u32 kf_ptx_calls;");  // flagged: global_state

extern "C" __global__ void gelu_scale_residual_naive(const float* x, float* out, long long n) {
  unsigned int calls;
  asm volatile("atom.global.add.u32 %0, [kf_ptx_calls], 1;" : "=r"(calls));
  if (calls > 100000u) return;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + 0.25f * x[i] * (1.0f + tanhf(0.7978845608f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}
