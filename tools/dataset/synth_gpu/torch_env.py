"""The torch side of a task: precision flags, the environment record, building a task's module and
its input draws on the device, and freeing what a task left. Callers pass `torch` in (imported
lazily, so that --merge and input errors stay fast)."""
import platform
import re
import socket
import subprocess


def apply_flags(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = False


def flags_record(torch):
    return {
        "allow_tf32_cublas": str(torch.backends.cuda.matmul.allow_tf32).lower(),
        "allow_tf32_cudnn": str(torch.backends.cudnn.allow_tf32).lower(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_benchmark": str(torch.backends.cudnn.benchmark).lower(),
        "grad_mode": "no_grad",
        "module_mode": "eval",
        "compile_mode": "default",
    }


def environment(torch, device):
    env = {"torch": torch.__version__, "cuda": torch.version.cuda or "", "python": platform.python_version(),
           "host": socket.gethostname(), "device": device}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = ""
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        env["gpu"] = props.name
        env["l2_bytes"] = int(getattr(props, "L2_cache_size", 0))
        env["sm_count"] = props.multi_processor_count
        env["memory_gb"] = round(props.total_memory / 2**30, 1)
        env["cudnn"] = str(torch.backends.cudnn.version())
        try:
            idx = torch.device(device).index or 0
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
            env["driver"] = out[min(idx, len(out) - 1)].strip() if out else ""
        except (OSError, subprocess.SubprocessError):
            env["driver"] = ""
    else:
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                m = re.search(r"model name\s*:\s*(.*)", f.read())
                cpu = m.group(1).strip() if m else cpu
        except OSError:
            pass
        env["gpu"] = f"none (cpu: {cpu})"
        env["driver"] = ""
        env["threads"] = torch.get_num_threads()
    return env


def build_task(torch, task_id, program, dims, device, seed, module_mode="eval"):
    """exec the rendered program; Model (in `module_mode`: eval, or an imported module's train) and a
    draw() of fresh inputs on the device."""
    ns = {"__name__": "kforge_task_" + task_id}
    exec(compile(program, f"<kforge task {task_id}>", "exec"), ns)
    for k, v in (dims or {}).items():  # the check dims replace the module-level dims (CPU mode)
        if k in ns:
            ns[k] = int(v)
    torch.manual_seed(seed % (2**63))
    dev = torch.device(device)
    with dev:
        model = ns["Model"](*ns["get_init_inputs"]())
    model = model.to(dev).train(module_mode == "train")

    def draw():
        with dev:
            xs = ns["get_inputs"]()
        return [x.to(dev) if torch.is_tensor(x) else x for x in xs]

    return model, draw


def as_outputs(torch, out):
    if torch.is_tensor(out):
        return [out]
    if isinstance(out, (list, tuple)):
        return [o for o in out if torch.is_tensor(o)]
    return []


def cuda_healthy(torch, device):
    if not device.startswith("cuda"):
        return True
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device=device).add_(1).item() == 2
    except Exception:
        return False


def is_oom(e):
    text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    return "OutOfMemoryError" in text or "out of memory" in text.lower()


def release(torch, device, compiled=True, base=None):
    """Frees what a task left: Dynamo's caches (they hold the compiled module), reference cycles and
    the allocator's cache. The cycle pass (gc.collect) is skipped when the device is already back to
    `base` allocated bytes: it costs 0.1-0.2 s in a process that has imported Inductor, twice a task."""
    import gc
    if compiled:
        try:
            torch._dynamo.reset()
        except Exception:
            pass
    cuda = device.startswith("cuda")
    if base is None or not cuda or torch.cuda.memory_allocated() > base:
        gc.collect()
    if cuda:
        torch.cuda.empty_cache()

