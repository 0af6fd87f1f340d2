"""How a host's GPU-stage work is spread over its GPUs: the rows left, one contiguous block per GPU,
and the CPUs in as many groups, both hardware threads of a core in the same group, so that the timing
processes never share a CPU. One place for tools/dataset/synth_dataset.sh,
tools/bench/kernelbench_gpu.sh and tools/dataset/baseline_ray/ (a node's share)."""
import collections
import os
import subprocess


def cpu_group(index, count):
    """The index-th of `count` groups of this machine's CPUs (lscpu's cores; without lscpu, one CPU a
    core); never empty: the whole affinity where a group would be."""
    cores = collections.defaultdict(list)
    try:
        out = subprocess.run(["lscpu", "-p=CPU,CORE"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if line and not line.startswith("#"):
            cpu, core = line.split(",")[:2]
            cores[int(core or cpu)].append(int(cpu))
    if not cores:
        cores = {c: [c] for c in sorted(os.sched_getaffinity(0))}
    keys = sorted(cores)
    mine = sorted(c for k in keys[index * len(keys) // count:(index + 1) * len(keys) // count] for c in cores[k])
    return mine or sorted(os.sched_getaffinity(0))


def write_gpu_lists(left, gpus, lists):
    """LISTS/ids-K.txt (the K-th contiguous block of the ids `left`) and LISTS/cpus-K.txt (the K-th CPU
    group, comma-separated, for taskset -c) for K < gpus."""
    for k in range(gpus):
        with open(os.path.join(lists, f"ids-{k}.txt"), "w") as f:
            f.writelines(t + "\n" for t in left[k * len(left) // gpus:(k + 1) * len(left) // gpus])
        with open(os.path.join(lists, f"cpus-{k}.txt"), "w") as f:
            f.write(",".join(map(str, cpu_group(k, gpus))))
