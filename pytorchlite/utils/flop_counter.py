"""FlopCounterMode: count the floating-point operations of matrix products, convolutions and
attention, per module (torch.utils.flop_counter).

A dispatch mode (Note [Python dispatch key] in src/python/python_dispatch.c) sees every
operator that reaches the kernels, the backward's included, and a ModuleTracker says which
modules are running; each call of an operator with a formula adds its count to "Global" and
to every running module.  The formulas are PyTorch's conventions: a multiply-add is two
flops, a bias or an elementwise op is free, and a convolution's backward counts its input
gradient as a transposed convolution of the output gradient with the weight and its weight
gradient as a convolution of the input with the output gradient.
"""
from collections import defaultdict
from math import prod

from .. import ops
from .._tensor import Tensor
from ._python_dispatch import TorchDispatchMode
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

aten = ops.aten

flop_registry = {}


def _shape(value):
    return tuple(value.shape) if isinstance(value, Tensor) else value


def _with_shapes(formula):
    """formula called with every tensor argument (and the output, out_shape=) as its shape."""
    def counted(*args, out_val=None, **kwargs):
        args = [_shape_tree(a) for a in args]
        kwargs = {k: _shape_tree(v) for k, v in kwargs.items()}
        return formula(*args, out_shape=_shape_tree(out_val), **kwargs)
    return counted


def _shape_tree(value):
    if isinstance(value, (list, tuple)):
        return type(value)(_shape_tree(v) for v in value)
    return _shape(value)


def register_flop_formula(targets, get_raw=False):
    """Decorator: registers formula(*args, out_shape=..., **kwargs) -> int for each target
    (an OpOverloadPacket such as torch.ops.aten.mm); with get_raw the formula gets the
    tensors themselves (out_val=) instead of shapes."""
    def register(formula):
        counted = formula if get_raw else _with_shapes(formula)
        for target in targets if isinstance(targets, (list, tuple)) else (targets,):
            if not isinstance(target, type(aten.mm)):
                raise ValueError(
                    "register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. torch.ops.mylib.foo), got {target} which is of "
                    f"type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = counted
        return counted
    return register


def _matmul_flops(m, k, n, batch=1):
    """An (m, k) @ (k, n) product, batch times: one multiply and one add per term."""
    return 2 * batch * m * k * n


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """(m, k) @ (k, n)."""
    (m, k), (_, n) = a_shape, b_shape
    return _matmul_flops(m, k, n)


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, *args, out_shape=None, **kwargs):
    """bias + (m, k) @ (k, n): the bias is free."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """(b, m, k) @ (b, k, n)."""
    (b, m, k), (_, _, n) = a_shape, b_shape
    return _matmul_flops(m, k, n, b)


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, *args, out_shape=None, **kwargs):
    """bias + (b, m, k) @ (b, k, n): the bias is free."""
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """A convolution of x (N, C_in, *spatial) with w (C_out, C_in, *kernel) giving out:
    every point of the output's spatial grid (of the input's, when transposed) meets every
    kernel tap of every (C_out, C_in) pair, for each of the N samples."""
    batch = x_shape[0]
    grid = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return 2 * batch * prod(grid) * prod(kernel) * c_out * c_in


@register_flop_formula(aten.convolution)
def conv_flop(x_shape, w_shape, bias, stride, padding, dilation, transposed, *args,
              out_shape=None, **kwargs):
    return conv_flop_count(x_shape, w_shape, out_shape, transposed)


def _swap01(shape):
    return [shape[1], shape[0], *shape[2:]]


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, bias_sizes, stride, padding,
                       dilation, transposed, output_padding, groups, output_mask,
                       out_shape=None, **kwargs):
    """The input gradient is the opposite kind of convolution of grad_out with the weight;
    the weight gradient a convolution over the batch: of the input with grad_out, or of
    grad_out with the input when transposed (channels and batch swapped)."""
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        a, b = (grad_out_shape, x_shape) if transposed else (x_shape, grad_out_shape)
        flops += conv_flop_count(_swap01(a), _swap01(b), _swap01(out_shape[1]))
    return flops


def sdpa_flop_count(query_shape, key_shape, value_shape):
    """softmax(q @ k^T) @ v over (b, h, s_q, d) queries and (b, h, s_k, d / d_v) keys and
    values: two batched products of b * h matrices."""
    b, h, s_q, d_q = query_shape
    s_k, d_v = key_shape[-2], value_shape[-1]
    return _matmul_flops(s_q, d_q, s_k, b * h) + _matmul_flops(s_q, s_k, d_v, b * h)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape):
    """The fused backward recomputes the scores (q @ k^T), then forms grad_scores = grad_out
    @ v^T, grad_v = scores^T @ grad_out, grad_q = grad_scores @ k, grad_k = grad_scores^T @ q:
    five batched products."""
    b, h, s_q, d_q = query_shape
    s_k, d_v = key_shape[-2], value_shape[-1]
    bh = b * h
    return (_matmul_flops(s_q, d_q, s_k, bh) + _matmul_flops(s_q, d_v, s_k, bh) +
            _matmul_flops(s_k, s_q, d_v, bh) + _matmul_flops(s_q, s_k, d_q, bh) +
            _matmul_flops(d_q, s_q, s_k, bh))


@register_flop_formula(aten._scaled_dot_product_flash_attention_for_cpu)
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """Causal masking is not discounted (PyTorch's convention)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


@register_flop_formula(aten._scaled_dot_product_flash_attention_for_cpu_backward)
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs):
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


_SUFFIXES = ["", "K", "M", "B", "T"]


def get_suffix_str(number):
    """The unit the table shows number in: a thousand more digits per step, so that 1001M
    stays 1001M rather than 1.001B."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def convert_num_with_suffix(number, suffix):
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}{suffix}"


def convert_to_percent_str(num, denom):
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _format_table(rows, header, align):
    """rows under header in columns two spaces apart, each under a dashed rule its width,
    left or right aligned ('<' or '>'): tabulate's "simple" layout, which PyTorch prints."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(cells):
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] +
                     [line(r) for r in rows])


class FlopCounterMode:
    """with FlopCounterMode(display=True) as counter: ... counts the flops run inside;
    get_total_flops(), get_flop_counts() ({"Global": {aten.mm: n, ...}, "Net.fc1": ...}) and
    get_table(depth) read them, and display prints the table on exit."""

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if mods is not None:
            import warnings
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        custom = {k: v if getattr(v, "_get_raw", False) else _with_shapes(v)
                  for k, v in (custom_mapping or {}).items()}
        self.flop_registry = {**flop_registry, **custom}
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = get_suffix_str(total)
        subsumed = False

        def module_rows(name, indent):
            nonlocal subsumed
            counts = self.flop_counts[name]
            flops = sum(counts.values())
            subsumed |= flops >= total
            pad = " " * indent
            rows = [[pad + name, convert_num_with_suffix(flops, suffix),
                     convert_to_percent_str(flops, total)]]
            rows += [[f"{pad} - {op}", convert_num_with_suffix(n, suffix),
                      convert_to_percent_str(n, total)] for op, n in counts.items()]
            return rows

        rows = []
        for name in sorted(self.flop_counts):
            if name == "Global" or name.count(".") + 1 > depth:
                continue
            rows += module_rows(name, name.count("."))
        if "Global" in self.flop_counts and not subsumed:
            for row in rows:
                row[0] = " " + row[0]
            rows = module_rows("Global", 0) + rows
        if not rows:
            rows = [["Global", "0", "0%"]]
        return _format_table(rows, ["Module", "FLOP", "% Total"], "<>>")

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count_flops(self, packet, out, args, kwargs):
        formula = self.flop_registry.get(packet)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            for name in set(self.mod_tracker.parents):
                self.flop_counts[name][packet] += flops
        return out


class _FlopCounterMode(TorchDispatchMode):
    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        return self.counter._count_flops(func.overloadpacket, out, args, kwargs)
