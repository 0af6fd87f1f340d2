"""KernelBench style: out = a * scale + b, and the row maxima of out, from load_inline sources."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

BLOCK = 256

cuda_header = """
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
"""

cuda_src = cuda_header + f"""
constexpr int kBlock = {BLOCK};

__global__ void scale_add_kernel(const float* a, const float* b, float* out, float scale, long long n) {{
  long long i = blockIdx.x * (long long)kBlock + threadIdx.x;
  if (i < n) out[i] = a[i] * scale + b[i];
}}

__global__ void row_max_kernel(const float* x, float* out, int cols) {{
  __shared__ float best[kBlock];
  const float* row = x + (long long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kBlock) m = fmaxf(m, row[c]);
  best[threadIdx.x] = m;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {{
    if (threadIdx.x < s) best[threadIdx.x] = fmaxf(best[threadIdx.x], best[threadIdx.x + s]);
    __syncthreads();
  }}
  if (threadIdx.x == 0) out[blockIdx.x] = best[0];
}}

torch::Tensor scale_add(torch::Tensor a, torch::Tensor b, double scale) {{
  auto out = torch::empty_like(a);
  const long long n = a.numel();
  const auto stream = c10::cuda::getCurrentCUDAStream().stream();
  scale_add_kernel<<<(n + kBlock - 1) / kBlock, kBlock, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                                     out.data_ptr<float>(), (float)scale, n);
  return out;
}}

torch::Tensor row_max(torch::Tensor x) {{
  auto out = torch::empty({{x.size(0)}}, x.options());
  const auto stream = c10::cuda::getCurrentCUDAStream().stream();
  row_max_kernel<<<x.size(0), kBlock, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), (int)x.size(1));
  return out;
}}
"""

cpp_src = (
    "torch::Tensor scale_add(torch::Tensor a, torch::Tensor b, double scale);\n"
    "torch::Tensor row_max(torch::Tensor x);"
)

fused = load_inline(
    name="scale_add_rowmax",
    cpp_sources=cpp_src,
    cuda_sources=[cuda_src],
    functions=["scale_add", "row_max"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3", "--use_fast_math"],
)


class ModelNew(nn.Module):
    def __init__(self, scale=-0.5):
        super().__init__()
        self.scale = scale
        self.ops = fused

    def forward(self, a, b):
        out = self.ops.scale_add(a.contiguous(), b.contiguous(), scale=self.scale)
        return out, fused.row_max(out)
