#!/usr/bin/env python3
"""Runs a kernel candidate on the CPU emulation (emu.h) at reduced dims under draw-family members
and compares with a float64 torch reference: max |out - r64| / (atol + rtol |r64|) per output.
usage: run.py TASK_YAML CANDIDATE_DIR DIM=V ... [--members plain,outliers] [--seeds N]"""
import sys, os, re, math, subprocess, hashlib, yaml, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from draws import ih, unif, apply, MEMBERS
import torch.nn.functional as F
EMU = os.path.dirname(os.path.abspath(__file__))
DT = {'float32': torch.float32, 'float16': torch.float16, 'bfloat16': torch.bfloat16, 'int32': torch.int32, 'int64': torch.int64, 'bool': torch.bool}
CT = {'float32': 'float', 'float16': '__half', 'bfloat16': '__nv_bfloat16', 'int32': 'int', 'int64': 'long long', 'bool': 'bool'}

def ev(expr, dims):
    env = dict(dims); env.update(ceil_div=lambda a, b: -(-a // b), min=min, max=max)
    return int(eval(str(expr).replace('/', '//'), {}, env))

def reference(task, args, dims):
    t = task['id']; a = {x['name']: v for x, v in zip(task['arguments'], args)}
    if t == 'logsumexp_sub': x = a['x']; return [x - torch.logsumexp(x, -1, keepdim=True)]
    if t == 'softmax_rows': return [torch.softmax(a['x'], -1)]
    if t == 'gelu_scale_residual': x = a['x']; return [x + 0.5 * F.gelu(x, approximate='tanh')]
    if t == 'transpose_add': return [a['a'].T + a['b']]
    if t == 'linear_relu': return [torch.relu(a['x'] @ a['fc.weight'].T + a['fc.bias'])]
    if t == 'gated_linear': x = a['x']; return [x * torch.sigmoid(x @ a['gate.weight'].T + a['gate.bias'])]
    if t == 'groupnorm_silu': return [F.silu(F.group_norm(a['x'], 32, a['gn.weight'], a['gn.bias'], 1e-5))]
    if t == 'layernorm_gelu_bf16': x = a['x']; return [F.gelu(F.layer_norm(x, [x.shape[-1]], a['ln.weight'], a['ln.bias'], 1e-5))]
    if t == 'rmsnorm_linear_bf16': x = a['x']; return [F.rms_norm(x, [x.shape[-1]], a['norm.weight'], 1e-6) @ a['up.weight'].T]
    if t == 'floor_max': return [torch.maximum(a['x'], a['z'])]
    if t == 'mse_rows_bf16': return [F.mse_loss(a['pred'], a['target'])]
    if t == 'cross_entropy_rows': return [F.cross_entropy(a['logits'], a['target'])]
    raise SystemExit('no reference for ' + t)

def draw_of(arg):
    d = arg.get('draw', {})
    if d.get('dist') == 'normal': return ('normal', float(d.get('mean', 0)), float(d.get('std', 1)))
    if d.get('dist') == 'uniform': return ('uniform', float(d['low']), float(d['high']))
    return None

def split_top(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch == '(': depth += 1
        if ch == ')': depth -= 1
        if ch == ',' and depth == 0: out.append(cur.strip()); cur = ''
        else: cur += ch
    if cur.strip(): out.append(cur.strip())
    return out

def load_plan(path):
    lines = []
    for line in open(path):
        m = re.match(r'^(\s*(?:- )?\s*(?:grid|block|args):\s*)\[(.*)\]\s*(#.*)?$', line.rstrip('\n'))
        if m: line = m.group(1) + '[' + ', '.join('"%s"' % e for e in split_top(m.group(2))) + ']\n'
        lines.append(line)
    return yaml.safe_load(''.join(lines))

def build(task, cand, dims):
    plan = load_plan(os.path.join(cand, 'launch.yaml'))
    shapes = {}
    for x in task['arguments']: shapes[x['name']] = (x['dtype'], [ev(s, dims) for s in x['shape']] if 'shape_expr' in x else None)
    bufs = []  # (name, ctype, numel, kind, zero)
    for x in task['arguments']: bufs.append((x['name'], CT[x['dtype']], None, 'arg', False))
    for o in task['outputs']: bufs.append((o['name'], CT[o['dtype']], None, 'out', False))
    for w in plan.get('workspace', []) or []: bufs.append((w['name'], CT[w['dtype']], ev(w['size'], dims), 'ws', bool(w.get('zero', False))))
    names = {b[0]: i for i, b in enumerate(bufs)}
    lines = ['#include "emu.h"', '#include "kernel.cu"', '#include <cstdio>', '#include <cstdlib>', 'int main(int argc, char** argv) {',
             '  const char* dir = argv[1]; char path[4096]; std::vector<void*> B;']
    for i, b in enumerate(bufs):
        lines.append(f'  {{ snprintf(path, sizeof path, "%s/buf{i}.bin", dir); FILE* f = fopen(path, "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);'
                     f' void* p = malloc(n + 4096); memset(p, 0xA5, n + 4096); if (fread(p, 1, n, f) != (size_t)n) return 2; fclose(f); B.push_back(p); }}')
    for L in plan['launches']:
        g = (L['grid'] + [1, 1])[:3]; bl = (L['block'] + [1, 1])[:3]
        g = [ev(v, dims) for v in g]; bl = [ev(v, dims) for v in bl]
        args = []
        for a in L['args']:
            s = str(a)
            if s in names: args.append(f'({bufs[names[s]][1]}*)B[{names[s]}]')
            elif re.fullmatch(r'-?[0-9.]+(e-?[0-9]+)?', s) or s in ('inf', '-inf'): args.append(s if 'inf' not in s else ('INFINITY' if s == 'inf' else '-INFINITY'))
            else: args.append(f'(long long){ev(s, dims)}LL')
        lines.append(f'  emu_launch({L["kernel"]}, emu_dim3{{{g[0]}u,{g[1]}u,{g[2]}u}}, emu_dim3{{{bl[0]}u,{bl[1]}u,{bl[2]}u}}, {", ".join(args)});')
    for i, b in enumerate(bufs):
        if b[3] == 'out':
            lines.append(f'  {{ snprintf(path, sizeof path, "%s/out{i}.bin", dir); FILE* f = fopen(path, "wb"); snprintf(path, sizeof path, "%s/buf{i}.bin", dir); FILE* g = fopen(path, "rb"); fseek(g, 0, SEEK_END); long n = ftell(g); fclose(g); fwrite(B[{i}], 1, n, f); fclose(f); }}')
    lines.append('  return 0; }')
    return bufs, '\n'.join(lines) + '\n'

def main():
    task_path, cand = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]; members = ['plain']; seeds = 1; show = False
    dims_over = {}
    i = 0
    while i < len(rest):
        if rest[i] == '--members': members = MEMBERS if rest[i+1] == 'all' else rest[i+1].split(','); i += 2
        elif rest[i] == '--seeds': seeds = int(rest[i+1]); i += 2
        elif rest[i] == '--show': show = True; i += 1
        else: k, v = rest[i].split('='); dims_over[k] = int(v); i += 1
    task = yaml.safe_load(open(task_path))
    dims = dict(task['dims']); dims.update(dims_over)
    # shapes from the graph inputs / arguments at these dims: rebuild from the graph (inputs) and parameter rules
    shapes = arg_shapes(task, dims)
    bufs, src = build(task, cand, dims)
    key = hashlib.sha1((src + open(os.path.join(cand, 'kernel.cu')).read()).encode()).hexdigest()[:12]
    work = os.path.join(os.environ.get('KFORGE_EMU_WORK', '/tmp/kforge_emu'), key); os.makedirs(work, exist_ok=True)
    exe = os.path.join(work, 'a.out')
    if not os.path.exists(exe):
        open(os.path.join(work, 'driver.cpp'), 'w').write(src)
        subprocess.check_call(['g++', '-O2', '-fno-strict-aliasing', '-std=c++20', '-pthread', '-w', f'-I{EMU}', f'-I{cand}', '-I/usr/local/cuda/include',
                               os.path.join(work, 'driver.cpp'), '-o', exe])
    tol = task['tolerance']; atol, rtol = float(tol['atol']), float(tol['rtol'])
    draws = [draw_of(x) if x['dtype'] in ('float32', 'float16', 'bfloat16') else None for x in task['arguments']]
    n_elig = sum(d is not None for d in draws)
    for m in members:
        for s in range(seeds if m != 'scaled' else n_elig * seeds):
            g = torch.Generator().manual_seed(1000 + s)
            args = []
            for x, d, shp in zip(task['arguments'], draws, shapes):
                if d is None:
                    dd = x.get('draw', {}); args.append(torch.full(shp, float(dd.get('value', 0))) if dd.get('dist') == 'constant' else torch.randint(int(dd['low']), int(dd['high']), shp, generator=g).double())
                elif d[0] == 'normal': args.append(d[1] + d[2] * ih(shp, g))
                else: args.append(unif(shp, d[1], d[2], g))
            args = apply(m, draws, args, 77 + s, scaled_arg=s % max(n_elig, 1))
            typed = [a.to(DT[x['dtype']]) for a, x in zip(args, task['arguments'])]
            for i, (t, x) in enumerate(zip(typed, task['arguments'])):
                t.contiguous().view(torch.uint8).numpy().tofile(os.path.join(work, f'buf{i}.bin')) if t.numel() else open(os.path.join(work, f'buf{i}.bin'), 'wb').close()
            nargs = len(task['arguments'])
            outs_meta = task['outputs']
            for j, o in enumerate(outs_meta):
                n = math.prod(out_shape(task, o, dims)) if out_shape(task, o, dims) else 1
                poison = torch.full((n,), float('nan'), dtype=DT[o['dtype']])
                poison.view(torch.uint8).numpy().tofile(os.path.join(work, f'buf{nargs + j}.bin'))
            k = nargs + len(outs_meta)
            for b in bufs[k:]:
                nbytes = b[2] * {'float': 4, '__half': 2, '__nv_bfloat16': 2, 'int': 4, 'long long': 8, 'bool': 1}[b[1]]
                open(os.path.join(work, f'buf{k}.bin'), 'wb').write((b'\x00' if b[4] else b'\xff') * nbytes); k += 1
            r = subprocess.run([exe, work], capture_output=True, text=True)
            if r.returncode: print(m, 'run failed', r.returncode, r.stderr[-2000:]); continue
            x64 = [a.to(DT[x['dtype']]).double() if x['dtype'] != 'int64' else a.long() for a, x in zip(args, task['arguments'])]
            r64 = reference(task, x64, dims)
            rt = reference(task, [a.to(DT[x['dtype']]) if x['dtype'] != 'int64' else a.long() for a, x in zip(args, task['arguments'])], dims)
            for j, o in enumerate(outs_meta):
                out = torch.from_file(os.path.join(work, f'out{nargs + j}.bin'), size=r64[j].numel(), dtype=DT[o['dtype']]).double().view(r64[j].shape)
                ref = r64[j]; tr = rt[j].double()
                rat = (out - ref).abs() / (atol + rtol * ref.abs())
                rat = torch.where(torch.isnan(out) & torch.isnan(ref), torch.zeros_like(rat), rat)
                rat = torch.where(torch.isnan(rat), torch.full_like(rat, float('inf')), rat)
                rr = ((tr - ref).abs() / (atol + rtol * ref.abs())).max().item()
                bad = (rat > 1).sum().item()
                print(f'{m:15s} seed {s}: worst {rat.max().item():9.4f}  outside {bad:7d}/{rat.numel()}  (task-dtype reference {rr:.4f}){"  FAIL" if bad else ""}')
                if show and bad: idx = rat.view(-1).argmax(); print('   e.g.', out.view(-1)[idx].item(), ref.view(-1)[idx].item())

def arg_shapes(task, dims):
    # the derived `arguments` hold numbers at the task's dims; recompute from the graph at new dims
    inp = {x['name']: [ev(s, dims) for s in x['shape']] for x in task['graph']['inputs']}
    out = []
    for x in task['arguments']:
        if x['name'] in inp: out.append(inp[x['name']]); continue
        out.append(param_shape(task, x, dims))
    return out

def param_shape(task, x, dims):
    name = x['name']; mod, _, field = name.partition('.')
    node = next(n for n in task['graph']['nodes'] if n['id'] == mod)
    op = node['op']; at = node.get('attrs', {})
    inp = {i['name']: [ev(s, dims) for s in i['shape']] for i in task['graph']['inputs']}
    src = inp.get(node['in'][0])
    if op == 'linear':
        o = ev(at['out_features'], dims); k = src[-1] if src else None
        if src is None: k = ev(2 * dims['C'], dims)  # concat_permute_linear
        return [o, k] if field == 'weight' else [o]
    if op in ('group_norm', 'batch_norm'): return [src[1]]
    if op in ('layer_norm', 'rms_norm'): return [src[-1]]
    if op == 'conv2d':
        co = ev(at['out_channels'], dims); ks = at.get('kernel_size', 3)
        return [co, src[1], ks, ks] if field == 'weight' else [co]
    raise SystemExit('shape of ' + name)

def out_shape(task, o, dims):
    t = task['id']
    x = {i['name']: [ev(s, dims) for s in i['shape']] for i in task['graph']['inputs']}
    first = list(x.values())[0]
    if t in ('mse_rows_bf16', 'cross_entropy_rows'): return []
    if t == 'linear_relu': return [dims['M'], dims['N']]
    if t == 'gated_linear': return [dims['M'], dims['D']]
    if t == 'rmsnorm_linear_bf16': return [dims['T'], dims['I']]
    if t == 'transpose_add': return [dims['N'], dims['N']]
    return first

if __name__ == '__main__': main()
