"""The task's cost: flops and min_bytes, and the record of the aten ops one eager run calls (the
checks read it too: ops whose output shape depends on the values).

flops: torch.utils.flop_counter.FlopCounterMode counts the matrix products, convolutions and
attention it has formulas for; the other ops of the run are counted here as lower bounds, in
kforge's convention (TASK_FORMAT.md, "Cost"):
  - pointwise ops (aten's `pointwise` tag, and activations such as leaky_relu, hardswish that lack
    it): one per output element;
  - reductions (aten's `reduction` tag), softmax, log_softmax, the norms (layer, group, batch, RMS),
    cumulative sums and products: one per input element;
  - pooling and upsampling: one per output element;
  - CPU attention (_scaled_dot_product_flash_attention_for_cpu, which FlopCounterMode misses):
    FlopCounterMode's own attention formula; mv, dot: 2 per multiply-add;
  - views, copies, concatenation, padding, indexing, factories: zero.
Any other op is uncounted: then the task's flops are omitted (kforge turns its speed-of-light check
off) and the op names are noted in DIR/imported.jsonl and on stderr.
"""
import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, flop_registry, sdpa_flop_count

PER_INPUT = {"_softmax", "_log_softmax", "softmax", "log_softmax", "native_layer_norm", "native_group_norm",
             "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
             "_native_batch_norm_legit_functional", "_batch_norm_with_update", "_batch_norm_no_update",
             "_fused_rms_norm", "rms_norm", "cumsum", "cumsum_", "cumprod", "cumprod_", "logcumsumexp", "cummax", "cummin",
             "nll_loss_forward", "nll_loss2d_forward", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "_cdist_forward", "cosine_similarity",
             "_weight_norm_interface", "renorm"}
PER_OUTPUT = {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices",
              "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
              "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
              "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_linear1d", "upsample_bilinear2d",
              "upsample_bicubic2d", "upsample_trilinear3d", "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
              "_upsample_nearest_exact3d", "_upsample_bilinear2d_aa", "grid_sampler_2d", "pixel_shuffle", "pixel_unshuffle",
              "im2col", "col2im", "_embedding_bag", "topk", "sort", "kthvalue", "median", "mode", "clamp", "clamp_", "clip"}
# Elementwise ops aten does not tag `pointwise`: one per output element, as the tagged ones.
ELEMENTWISE = {"leaky_relu", "leaky_relu_", "hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_", "hardtanh",
               "hardtanh_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "gelu_", "silu", "silu_", "mish",
               "mish_", "softplus", "softshrink", "hardshrink", "threshold", "threshold_", "log_sigmoid_forward",
               "_prelu_kernel", "prelu", "glu", "rrelu_with_noise", "logit", "nan_to_num", "_softmax_backward_data"}
ZERO = {"clone", "copy_", "_to_copy", "to", "cat", "stack", "constant_pad_nd", "reflection_pad1d", "reflection_pad2d",
        "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "index", "index_select",
        "gather", "embedding", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like", "empty_strided", "full",
        "full_like", "fill_", "zero_", "arange", "linspace", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "repeat",
        "repeat_interleave", "flip", "roll", "_unsafe_view", "slice_scatter", "select_scatter", "diagonal_scatter",
        "index_put", "index_put_", "scatter", "scatter_", "tril", "triu", "tril_", "triu_", "new_zeros", "new_ones",
        "new_empty", "new_full", "new_empty_strided", "eye", "detach", "alias", "clone_", "contiguous", "_local_scalar_dense",
        "item", "resize_", "set_", "masked_scatter", "tile", "one_hot", "_pad_packed_sequence", "narrow_copy",
        "split_with_sizes_copy", "unbind_copy", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "select_copy", "slice_copy",
        "view_copy", "permute_copy", "expand_copy",
        "_reshape_copy", "unfold_copy", "t_copy", "transpose_copy", "squeeze_copy", "unsqueeze_copy", "as_strided_copy"}


def _numel(shape):
    return math.prod(shape) if shape is not None else 0


def _is_view(func):
    return any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns) and \
        func._schema.returns


def _first_tensor(tree):
    if isinstance(tree, torch.Tensor):
        return tree
    if isinstance(tree, (tuple, list)):
        for t in tree:
            found = _first_tensor(t)
            if found is not None:
                return found
    return None


class OpRecorder(TorchDispatchMode):
    """Records the ops of a run; counts the flops FlopCounterMode has no formula for."""

    def __init__(self):
        super().__init__()
        self.ops = set()
        self.dynamic_shape_ops = set()
        self.random_ops = set()
        self.uncounted = set()
        self.extra_flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.ops.add(name)
        if torch.Tag.dynamic_output_shape in func.tags:
            self.dynamic_shape_ops.add(name)
        if torch.Tag.nondeterministic_seeded in func.tags and "attention" not in name:
            self.random_ops.add(name)
        self.extra_flops += self.flops(func, name, args, out)
        return out

    def flops(self, func, name, args, out):
        if func.overloadpacket in flop_registry:
            return 0  # FlopCounterMode counts it
        first_out, first_in = _first_tensor(out), _first_tensor(args)
        if name == "_scaled_dot_product_flash_attention_for_cpu":
            return sdpa_flop_count(args[0].shape, args[1].shape, args[2].shape)
        if name in ("mv", "addmv"):
            mat = args[1] if name == "addmv" else args[0]
            return 2 * _numel(mat.shape)
        if name in ("dot", "vdot"):
            return 2 * args[0].numel()
        if name in ZERO or _is_view(func) or torch.Tag.dynamic_output_shape in func.tags:
            return 0
        if name in PER_OUTPUT:
            return first_out.numel() if first_out is not None else 0
        if name in PER_INPUT or torch.Tag.reduction in func.tags:
            return first_in.numel() if first_in is not None else 0
        if torch.Tag.pointwise in func.tags or name in ELEMENTWISE:
            return first_out.numel() if first_out is not None else 0
        self.uncounted.add(name)
        return 0


class CostRun:
    """`with CostRun() as c: ...` runs the code under FlopCounterMode and the recorder."""

    def __enter__(self):
        self.counter = FlopCounterMode(display=False)
        self.recorder = OpRecorder()
        self.counter.__enter__()
        self.recorder.__enter__()
        return self

    def __exit__(self, *exc):
        self.recorder.__exit__(*exc)
        self.counter.__exit__(*exc)
        return False

    @property
    def flops(self):
        """The total, or None when an op was uncounted."""
        if self.recorder.uncounted:
            return None
        return int(self.counter.get_total_flops()) + int(self.recorder.extra_flops)


def tensor_bytes(t):
    return t.numel() * t.element_size()
