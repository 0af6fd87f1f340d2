// act = relu(batch_norm_eval(conv2d(x, w, cb, padding=1)))  (3x3, stride 1), float32, FFMA fp32.
// x [N, CI, H, W], w [CO, CI, 3, 3], cb [CO]; bn: (v - running_mean) / sqrt(running_var + eps) * g + beta.
// Direct convolution: a block computes a 16x16 output-pixel tile of one image for 32 output
// channels (one pixel x 32 channels per thread). Input channels are processed 8 at a time: the
// zero-padded 18x18 input patches and the 32x8x9 weights are staged in shared memory.
#define TW 16
#define TH 16
#define COT 32
#define CIT 8
#define PW (TW + 2)
#define PH (TH + 2)

extern "C" __global__ void __launch_bounds__(TW * TH)
conv_bn_relu(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ cb,
             const float* __restrict__ g, const float* __restrict__ beta, const float* __restrict__ rmean,
             const float* __restrict__ rvar, float* __restrict__ out, int N, int CI, int CO, int H, int W) {
  __shared__ float patch[CIT][PH][PW];
  __shared__ __align__(16) float ws[CIT][9][COT];  // ws[ci][ky*3+kx][co]

  const int tiles_w = (W + TW - 1) / TW;
  const int tile = blockIdx.x;
  const int h0 = (tile / tiles_w) * TH, w0 = (tile % tiles_w) * TW;
  const int co0 = blockIdx.y * COT;
  const int n = blockIdx.z;
  const int tx = threadIdx.x % TW, ty = threadIdx.x / TW;
  const int t = threadIdx.x;
  const long long HW = (long long)H * W;
  const float* xn = x + (long long)n * CI * HW;

  float acc[COT];
#pragma unroll
  for (int c = 0; c < COT; ++c) acc[c] = 0.0f;

  for (int ci0 = 0; ci0 < CI; ci0 += CIT) {
    // input patch rows h0-1 .. h0+16, cols w0-1 .. w0+16, zero outside the image / channel range
    for (int i = t; i < CIT * PH * PW; i += TW * TH) {
      const int ci = i / (PH * PW), rem = i % (PH * PW);
      const int yy = rem / PW, xx = rem % PW;
      const int ih = h0 - 1 + yy, iw = w0 - 1 + xx;
      float v = 0.0f;
      if (ci0 + ci < CI && ih >= 0 && ih < H && iw >= 0 && iw < W) v = xn[(long long)(ci0 + ci) * HW + (long long)ih * W + iw];
      patch[ci][yy][xx] = v;
    }
    // weights for 32 output channels x 8 input channels
    for (int i = t; i < COT * CIT * 9; i += TW * TH) {
      const int co = i / (CIT * 9), rem = i % (CIT * 9);
      const int ci = rem / 9, k = rem % 9;
      float v = 0.0f;
      if (co0 + co < CO && ci0 + ci < CI) v = w[((long long)(co0 + co) * CI + (ci0 + ci)) * 9 + k];
      ws[ci][k][co] = v;
    }
    __syncthreads();

#pragma unroll 1
    for (int ci = 0; ci < CIT; ++ci) {
#pragma unroll
      for (int k = 0; k < 9; ++k) {
        const float xv = patch[ci][ty + k / 3][tx + k % 3];
#pragma unroll
        for (int c4 = 0; c4 < COT / 4; ++c4) {
          const float4 wv = *reinterpret_cast<const float4*>(&ws[ci][k][c4 * 4]);
          acc[c4 * 4 + 0] = fmaf(xv, wv.x, acc[c4 * 4 + 0]);
          acc[c4 * 4 + 1] = fmaf(xv, wv.y, acc[c4 * 4 + 1]);
          acc[c4 * 4 + 2] = fmaf(xv, wv.z, acc[c4 * 4 + 2]);
          acc[c4 * 4 + 3] = fmaf(xv, wv.w, acc[c4 * 4 + 3]);
        }
      }
    }
    __syncthreads();  // before the next chunk overwrites patch / ws
  }

  const int oh = h0 + ty, ow = w0 + tx;
  if (oh < H && ow < W) {
#pragma unroll
    for (int c = 0; c < COT; ++c) {
      const int co = co0 + c;
      if (co < CO) {
        const float v = acc[c] + cb[co];
        const float bn = (v - rmean[co]) / sqrtf(rvar[co] + 1e-5f) * g[co] + beta[co];
        out[((long long)n * CO + co) * HW + (long long)oh * W + ow] = fmaxf(bn, 0.0f);
      }
    }
  }
}
