#!/usr/bin/env python3
"""Float64 emulations behind the corpus headers' numbers, at the tasks' real inner sizes.
  numerics.py gemm_split [linear_relu|gated_linear]   bf16 hi/lo split (3 products) vs float64 and the float32 reference, per member
  numerics.py gemm_trunc [linear_relu|gated_linear]   every operand's low 7 mantissa bits dropped (reduced_mantissa), the same table
  numerics.py loss_subsample [R C]                     mse over one row in eight vs every row, per member (default R=4096 C=65536)
"""
import os, sys, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from draws import ih, unif, bf16, ratio, apply, MEMBERS

f32 = lambda t: t.float().double()

def gemm_split(task, method='split'):
    M, K = (256, 4096)
    N = 1024 if task == 'linear_relu' else K
    bd = 1 / 64
    draws = [('normal', 0, 1), ('uniform', -bd, bd), ('uniform', -bd, bd)]
    g = torch.Generator().manual_seed(0)
    x, w, b = ih((M, K), g), unif((N, K), -bd, bd, g), unif((N,), -bd, bd, g)
    def fwd(x, w, b, gemm):
        z = gemm(x, w) + b
        return torch.relu(z) if task == 'linear_relu' else x * torch.sigmoid(z)
    def split3(x, w):
        xh, wh = bf16(x), bf16(w)
        xl, wl = bf16(x - xh), bf16(w - wh)
        return f32(xh @ wh.T + xh @ wl.T + xl @ wh.T)
    def trunc7(t):  # float32 bits with the low 7 mantissa bits cleared
        return (t.float().view(torch.int32) & ~0x7F).view(torch.float32).double()
    def truncated(x, w):
        return trunc7(x) @ trunc7(w).T
    cheap, label = (split3, 'bf16x3 split') if method == 'split' else (truncated, '16-bit trunc')
    for v in MEMBERS:
        for s in ((0, 1, 2) if v == 'scaled' else (7,)):
          for k in ((8, 6, 4, 2, 1) if v == 'scaled' else (None,)):
            if v == 'scaled':  # argument s times 2^k
                xa, wa, ba = [f32(t * (2.0 ** k if i == s else 1.0)) for i, t in enumerate([x, w, b])]
            else:
                xa, wa, ba = [f32(t) for t in apply(v, draws, [x, w, b], s, scaled_arg=s)]
            r64 = fwd(xa, wa, ba, lambda a, c: a @ c.T)
            r32 = f32(fwd(xa.float(), wa.float(), ba.float(), lambda a, c: a @ c.T))
            e = f32(fwd(xa, wa, ba, cheap))
            R = lambda o: ratio(o, r64, 1e-4, 1e-4)
            print(f"{v + ('' if k is None else ' ' + 'xWb'[s] + ' 2^' + str(k)):15s} seed {s}: float32 reference {R(r32).max():8.3f}   {label} {R(e).max():9.3f} ({(R(e) > 1).sum().item()} of {e.numel()} outside)")

def loss_subsample(R=4096, C=65536, chunk=256):
    draws = [('normal', 0, 1), ('normal', 0, 1)]
    for v in MEMBERS:
        for seed in (1, 2):
            tot = sub = 0.0
            gk = torch.Generator().manual_seed(seed)
            kc = [torch.randint(-8, 9, (1, C), generator=gk).double() for _ in range(2)]  # channel_scaled: one draw per tensor
            ks = [(torch.randint(0, 2, (1,), generator=gk).double() * 2 - 1) * 3 for _ in range(2)]
            kk = torch.randint(1, 5, (1,), generator=gk).item()
            for c0 in range(0, R, chunk):
                g = torch.Generator().manual_seed(seed * 7919 + c0)
                a, b = ih((chunk, C), g), ih((chunk, C), g)
                if v == 'channel_scaled': a, b = a * 2 ** kc[0], b * 2 ** kc[1]
                elif v == 'shifted': a, b = a + ks[0], b + ks[1]
                elif v == 'scaled': a = a * 2 ** kk
                else: a, b = apply(v, draws, [a, b], seed * 31 + c0)
                d2 = ((bf16(a) - bf16(b)) ** 2).sum(1)
                tot += d2.sum().item(); sub += d2[0::8].sum().item()
            full, est = tot / (R * C), sub / (len(range(0, R, 8)) * C)
            print(f"{v:15s} seed {seed}: loss {full:11.5g}  one row in eight {est:11.5g}  {abs(est - full) / (0.01 + 0.01 * abs(full)):7.3f} of the tolerance")

if __name__ == '__main__':
    if sys.argv[1] == 'gemm_split': gemm_split(sys.argv[2] if len(sys.argv) > 2 else 'gated_linear')
    elif sys.argv[1] == 'gemm_trunc': gemm_split(sys.argv[2] if len(sys.argv) > 2 else 'gated_linear', 'trunc')
    elif sys.argv[1] == 'loss_subsample': loss_subsample(*[int(v) for v in sys.argv[2:4]])
    else: sys.exit(__doc__)
