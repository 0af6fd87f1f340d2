"""The reason codes of a skipped module and the exception that carries one."""

# Reason codes of DIR/skipped.jsonl (the contract's, in its order).
REASONS = ("load_error", "stochastic", "non_tensor_output", "data_dependent_shape", "custom_cuda", "constant_output",
           "trace_mismatch", "unsupported_dtype", "too_large", "needs_network")

# kforge's dtype names (data_synth/task/dtype.h) for the torch dtypes a task may hold.
DTYPE_NAMES = {"torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
               "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool"}
FLOAT_DTYPES = ("float32", "float16", "bfloat16")


class Skip(Exception):
    """A module that is not imported: one of REASONS and a one-line detail."""

    def __init__(self, reason, detail):
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def one_line(text, limit=400):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def dtype_name(torch_dtype):
    """kforge's name of a torch dtype, or None when a task cannot hold it."""
    return DTYPE_NAMES.get(str(torch_dtype))
