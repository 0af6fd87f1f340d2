"""The task's draws and the draw family's members on the CPU (torch, float64): a mirror of
data_synth/task/draw.cpp (normal = Irwin-Hall(4) standardised, uniform on a 2^-24 grid) and
data_synth/reference/draw_family.cpp (same members, same parameters; not bit-exact: torch's CPU
generators, and each argument's member parameters drawn from its own generator)."""
import torch, math
def ih(shape, gen=None):
    u = torch.randint(0, 65536, (4,)+tuple(shape), dtype=torch.int64, generator=gen).sum(0).double()
    return (u - 131070.0) / math.sqrt(4*(65536.0**2-1)/12)
def unif(shape, lo, hi, gen=None):
    j = torch.randint(0, 1<<24, tuple(shape), dtype=torch.int64, generator=gen).double()
    return lo + (hi-lo)*j*2.0**-24
def bf16(t): return t.float().to(torch.bfloat16).double()
def f16(t): return t.float().to(torch.float16).double()
def ratio(out, ref, atol, rtol): return ((out-ref).abs()/(atol+rtol*ref.abs()))

# scaled: per argument the largest of 2^8, 2^6, 2^4, 2^2, 2^1 under which the reference stays
# well-conditioned (the harness's conditioning picks it); here one of them by the seed.
SCALED_EXPONENTS = [8, 6, 4, 2, 1]
MEMBERS = ['plain','scaled','shifted','row_scaled','channel_scaled','element_scaled','outliers','sign_flip']
def apply_one(v, draw, t, g):
    # draw: ('normal', mean, std) or ('uniform', lo, hi); t float64 tensor (modified copy returned)
    t = t.clone(); n = t.numel()
    spread = abs(draw[2]) if draw[0]=='normal' else abs(draw[2]-draw[1])
    signed = draw[0]=='normal' or draw[1] < 0
    r = lambda lo, hi, shape: torch.randint(lo, hi, shape, generator=g).double()
    if v=='scaled': return t*2.0**SCALED_EXPONENTS[g.initial_seed() % len(SCALED_EXPONENTS)],  # the harness: the largest the reference survives
    if v=='shifted':
        if draw[0]=='uniform': return t+spread,
        return t + (r(0,2,(1,))*2-1)*3*spread,
    if v=='row_scaled':
        if t.dim()<2: return t,
        last=t.shape[-1]; return (t.reshape(-1,last)*2.0**r(-8,9,(n//last,1))).reshape(t.shape),
    if v=='channel_scaled':
        if t.dim()<2: return t,
        c=t.shape[1]; o=t.shape[0]; return (t.reshape(o,c,-1)*2.0**r(-8,9,(1,c,1))).reshape(t.shape),
    if v=='element_scaled': return t*2.0**r(-6,7,tuple(t.shape)),
    if v=='outliers':
        # each element with probability m / n (the harness hashes the places: draw_member.h)
        m=min(n,max(16,n//256)); idx=(torch.rand(n,generator=g,dtype=torch.float64) < m/n).nonzero().flatten()
        s = r(0,2,(len(idx),))*2-1 if signed else torch.ones(len(idx),dtype=torch.float64)
        d = s*2.0**r(0,5,(len(idx),))*8*spread
        f=t.reshape(-1).clone(); f.index_add_(0,idx,d); return f.reshape(t.shape),
    if v=='sign_flip':
        last = t.shape[-1] if t.dim()>=2 else 1
        return (t.reshape(-1,last)*(r(0,2,(n//last,1))*2-1)).reshape(t.shape),
    return t,
def apply(v, draws, args, seed, scaled_arg=None):
    """args: list of float64 tensors; draws: list of draw tuples (None: not eligible). scaled moves one argument."""
    out=[a for a in args]
    elig=[i for i,d in enumerate(draws) if d is not None and (v not in ('row_scaled','channel_scaled') or args[i].dim()>=2)]
    if v=='plain' or not elig: return out
    if v=='scaled': elig=[elig[(scaled_arg if scaled_arg is not None else seed) % len(elig)]]
    for i in elig:
        g=torch.Generator().manual_seed(seed*1000+i)
        out[i]=apply_one(v,draws[i],args[i],g)[0]
    return out
