#!/usr/bin/env python3
"""What a CCCL header costs an NVRTC compile once NVRTC's automatic precompiled header (PCH) holds
it: for each header, a trivial kernel that includes it is compiled with `-pch` into a fresh PCH
directory (the first compile creates the PCH), then N times more (each uses it). Prints the PCH's
size, the compile time without a PCH, and the median time with it; the difference from a kernel
with no include at all is what the header costs every candidate that includes it. Needs NVRTC
and the CUDA toolkit's headers, no GPU.

    python3 tools/bench/nvrtc_header_cost.py [--cuda /usr/local/cuda] [--arch sm_90a] [--n 5]
        [--json OUT] [HEADER ...]
"""
import argparse
import ctypes
import ctypes.util
import datetime
import glob
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import results_doc

DEFAULT_HEADERS = ["cuda_fp16.h", "cuda/std/limits", "cuda/ptx", "cuda/std/type_traits", "cuda/std/cmath",
                   "cuda/std/utility", "cuda/std/functional", "cub/config.cuh", "cub/util_type.cuh",
                   "cub/warp/warp_reduce.cuh", "cub/block/block_reduce.cuh", "cub/block/block_scan.cuh"]
KERNEL = 'extern "C" __global__ void k(float* y) { y[0] = 1.f; }\n'


class Nvrtc:
    def __init__(self, cuda):
        cands = sorted(glob.glob(os.path.join(cuda, "lib64", "libnvrtc.so*")) + glob.glob(os.path.join(cuda, "lib", "libnvrtc.so*")))
        path = next((c for c in cands if ".alt." not in c), None) or ctypes.util.find_library("nvrtc")
        if not path:
            raise SystemExit(f"nvrtc_header_cost: no libnvrtc under {cuda} (--cuda) or on the loader's path")
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"
        self.seq = 0

    def compile(self, src, opts):
        """Milliseconds of nvrtcCompileProgram; raises with NVRTC's log on failure. Each source is
        made unique (a comment) so nothing but the PCH is reused."""
        self.seq += 1
        prog = ctypes.c_void_p()
        text = f"{src}// {os.getpid()}-{self.seq}\n".encode()
        if self.lib.nvrtcCreateProgram(ctypes.byref(prog), text, b"k.cu", 0, None, None) != 0:
            raise RuntimeError("nvrtcCreateProgram failed")
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        t0 = time.perf_counter()
        rc = self.lib.nvrtcCompileProgram(prog, len(opts), arr)
        ms = (time.perf_counter() - t0) * 1000.0
        if rc != 0:
            n = ctypes.c_size_t()
            self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value)
            self.lib.nvrtcGetProgramLog(prog, buf)
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
            raise RuntimeError(buf.value.decode(errors="replace")[:400])
        self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return ms


def measure(nv, header, base, n):
    src = (f"#include <{header}>\n" if header else "") + KERNEL
    d = tempfile.mkdtemp(prefix="kforge-pch-")
    try:
        pch = base + ["-pch", f"--pch-dir={d}", "--pch-verbose=false"]
        create = nv.compile(src, pch)
        use = [nv.compile(src, pch) for _ in range(n)]
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    plain = [nv.compile(src, base) for _ in range(max(1, n // 2))]
    return {"header": header or "(none)", "pch_mib": round(size / 2**20, 1), "no_pch_ms": round(statistics.median(plain), 1),
            "pch_create_ms": round(create, 1), "pch_use_ms_p50": round(statistics.median(use), 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("headers", nargs="*")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--n", type=int, default=5, help="compiles that use the PCH, per header (median)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    inc = os.path.join(a.cuda, "include")
    if not os.path.isdir(inc):
        print(f"nvrtc_header_cost: {inc} does not exist (--cuda)", file=sys.stderr)
        return 2
    nv = Nvrtc(a.cuda)
    base = [f"-arch={a.arch}", "-std=c++17", f"--include-path={os.path.join(inc, 'cccl')}", f"--include-path={inc}"]
    rows = [measure(nv, "", base, a.n)]
    for h in a.headers or DEFAULT_HEADERS:
        try:
            rows.append(measure(nv, h, base, a.n))
        except RuntimeError as e:
            print(f"nvrtc_header_cost: {h}: {e}", file=sys.stderr)
            return 1
    floor = rows[0]["pch_use_ms_p50"]
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"NVRTC {nv.version}, {a.arch}, {os.cpu_count()} CPUs ({cpu}); median of {a.n} compiles with the PCH")
    print("| header | PCH (MiB) | without PCH (ms) | PCH created (ms) | with PCH (ms) | over no include (ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| `{r['header']}` | {r['pch_mib']} | {r['no_pch_ms']} | {r['pch_create_ms']} | {r['pch_use_ms_p50']} | "
              f"{r['pch_use_ms_p50'] - floor:.1f} |")
    big = [r for r in rows[1:] if r["pch_mib"] >= 20]
    if len(big) >= 2:
        # least squares of the time with the PCH over its size: what a MiB of PCH costs to load
        xs, ys = [r["pch_mib"] for r in big], [r["pch_use_ms_p50"] for r in big]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"time with the PCH ~ {my - slope * mx:.1f} ms + {slope:.2f} ms per MiB of PCH (headers of 20 MiB or more)")
    else:
        slope = None
    if a.json:
        figures = {}
        for r in rows:
            key = "".join(c if c.isalnum() else "_" for c in r["header"].lower()).strip("_") or "none"
            figures[f"pch_use_ms_p50_{key}"] = r["pch_use_ms_p50"]
            figures[f"pch_mib_{key}"] = r["pch_mib"]
            figures[f"no_pch_ms_{key}"] = r["no_pch_ms"]
        if slope is not None:
            figures["pch_load_ms_per_mib"] = round(slope, 3)
        doc = {"gpu": "none (NVRTC only, no GPU)", "driver": "", "cuda": nv.version, "torch": "",
               "cpu": f"{os.cpu_count()} x {cpu}", "date": datetime.date.today().isoformat(),
               "commit": results_doc.commit(),
               "command": "python3 tools/bench/nvrtc_header_cost.py " + " ".join(sys.argv[1:]), "figures": figures,
               "details": {"rows": rows}}
        results_doc.write(a.json, doc, "nvrtc_header_cost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
