// BUG (deliberate): a compile that practically never ends. Each thread computes OUTS = 8 outputs of
// one row, and every K = 4096-term dot product is "fully unrolled" through binary template
// recursion with __forceinline__: the compiler must inline 8 * 4096 = 32768 FMAs (plus 65536 loads)
// into one straight-line kernel. Template depth stays tiny (log2), so no front-end limit trips;
// the optimiser's super-linear passes then run for a very long time with modest memory (NVRTC 13.0
// on this source: OUTS = 1 took 33 s, OUTS = 4 more than 15 min at ~0.5 GB). The math itself
// would be correct. The harness must stop the compile and report timeout.
#define KDIM 4096
#define OUTS 8

template <int L> struct Dot {
  __device__ static __forceinline__ float run(float acc, const float* __restrict__ xr, const float* __restrict__ wr) {
    return Dot<L - L / 2>::run(Dot<L / 2>::run(acc, xr, wr), xr + L / 2, wr + L / 2);
  }
};
template <> struct Dot<1> {
  __device__ static __forceinline__ float run(float acc, const float* __restrict__ xr, const float* __restrict__ wr) {
    return fmaf(xr[0], wr[0], acc);
  }
};

template <int O> struct Outs {
  __device__ static __forceinline__ void run(const float* __restrict__ xr, const float* __restrict__ W,
                                             const float* __restrict__ bias, float* __restrict__ yr, int n0) {
    Outs<O / 2>::run(xr, W, bias, yr, n0);
    Outs<O - O / 2>::run(xr, W, bias, yr, n0 + O / 2);
  }
};
template <> struct Outs<1> {
  __device__ static __forceinline__ void run(const float* __restrict__ xr, const float* __restrict__ W,
                                             const float* __restrict__ bias, float* __restrict__ yr, int n0) {
    float acc = Dot<KDIM>::run(0.0f, xr, W + (long long)n0 * KDIM);
    yr[n0] = fmaxf(acc + bias[n0], 0.0f);
  }
};

// One thread per (row m, group of OUTS consecutive columns); requires K == 4096 and N % 8 == 0.
extern "C" __global__ void linear_relu_unrolled(const float* __restrict__ x, const float* __restrict__ W,
                                                const float* __restrict__ bias, float* __restrict__ out, int M, int N) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long groups = N / OUTS;
  if (tid >= (long long)M * groups) return;
  const int m = (int)(tid / groups);
  const int n0 = (int)(tid % groups) * OUTS;
  Outs<OUTS>::run(x + (long long)m * KDIM, W, bias, out + (long long)m * N, n0);
}
