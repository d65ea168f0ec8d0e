"""The result-layout sweep of the operator table against PyTorch (tests/aten/
test_result_strides.py drives it): every op of tests/opinfo.py that torch.ops.aten has under
the same name runs its samples (and 4-d versions of its (2, 3)-shaped ones) with every tensor
argument laid out alike: as the sample makes it, contiguous, transposed (dims reversed),
channels_last (4-d tensors) and stepped (every other element of each dim).  Each output
tensor must have torch's layout: the same strides over the dims of size > 1 (a size-1 or
empty dim's stride is not observable: PyTorch's own vary) and so the same is_contiguous() and
is_contiguous(memory_format=channels_last).
`python tests/aten/stride_sweep.py [ops...]` prints every difference."""
import numpy as np

import pytorchlite as ptl
from nonfinite_sweep import to_torch, torch_op
from helpers import torch
from opinfo import TABLE, S, Sp, T

LAYOUTS = ("sample", "contiguous", "transposed", "channels_last", "stepped")
NOT_COMPARABLE = {"_pin_memory": "PyTorch's needs an accelerator"}


def relayout(t, layout):
    """A copy of tensor t's values laid out as `layout` says (unchanged where the layout does
    not apply to t's dims: channels_last is for 4-d tensors)."""
    if layout == "sample" or t.layout != ptl.strided or t.dim() == 0:
        return t
    a = np.ascontiguousarray(t.numpy())
    if layout == "transposed" and a.ndim >= 2:
        rev = tuple(reversed(range(a.ndim)))
        return ptl.tensor(np.ascontiguousarray(a.transpose(rev)), dtype=t.dtype).permute(*rev)
    if layout == "channels_last" and a.ndim == 4:
        b = np.ascontiguousarray(a.transpose(0, 2, 3, 1))
        return ptl.tensor(b, dtype=t.dtype).permute(0, 3, 1, 2)
    if layout == "stepped":
        idx = tuple(slice(None, None, 2) for _ in a.shape)
        big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
        big[idx] = a
        return ptl.tensor(big, dtype=t.dtype)[idx]
    return ptl.tensor(a, dtype=t.dtype)


def mirror(x):
    """torch's twin of a pytorchlite argument: tensors with the same sizes and strides, over a
    copy of the memory they span."""
    if isinstance(x, ptl.Tensor) and x.layout == ptl.strided:
        span = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride())) if x.numel() else 0
        flat = x.as_strided((span,), (1,), x.storage_offset()) if span else x.reshape(0)
        base = torch.from_numpy(np.array(flat.numpy()))
        return base.as_strided(tuple(x.shape), x.stride(), 0)
    if isinstance(x, (list, tuple)):
        return type(x)(mirror(y) for y in x)
    return to_torch(x)


def four_d(sample):
    """sample with its (2, 3) tensors made (2, 3, 4, 5) and its (3,) ones (5,), where every
    tensor is one of those (a pointwise or broadcasting sample); None otherwise."""
    specs = sample.specs()
    if not any(t.shape == (2, 3) for t in specs) or \
            any(t.shape not in ((2, 3), (3,)) or t.values is not None for t in specs):
        return None
    new = {(2, 3): (2, 3, 4, 5), (3,): (5,)}

    def walk(x):
        if isinstance(x, T):
            return T(*new[x.shape], low=x.low, high=x.high, dtype=x.dtype, grad=x.grad)
        if isinstance(x, (list, tuple)):
            return type(x)(walk(y) for y in x)
        return x
    return S(*[walk(x) for x in sample.args], **{k: walk(v) for k, v in sample.kwargs.items()})


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _leaves(v)]
    return [x]


def layout_of(t):
    """What of t's layout is observable: the strides of its dims of size > 1 (None for the
    others), and its two contiguity flags."""
    return (tuple(s if n > 1 else None for n, s in zip(t.shape, t.stride())),
            t.is_contiguous(),
            t.dim() == 4 and t.is_contiguous(memory_format=ptl.channels_last))


def _call(f, args, kwargs, lib):
    lib.manual_seed(0)
    try:
        return f(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (only runs that both libraries accept compare)
        return None, e


def _out_like(x, lib):
    """out= tensors for the functional results x: size 0, resized by the op"""
    if isinstance(x, (list, tuple)):
        return type(x)(_out_like(y, lib) for y in x)
    return lib.empty(0, dtype=x.dtype)


def run(name, sample, layout):
    """None, or the first output whose layout differs from torch's"""
    info = TABLE[name]
    dtype = ptl.float64 if ptl.float64 in info.dtypes else info.dtypes[0]
    args, kwargs, _, _, _ = sample.make(dtype, info.domain)
    args = [relayout(x, layout) if isinstance(x, ptl.Tensor) else
            type(x)(relayout(y, layout) if isinstance(y, ptl.Tensor) else y for y in x)
            if isinstance(x, (list, tuple)) else x for x in args]
    kwargs = {k: relayout(v, layout) if isinstance(v, ptl.Tensor) else v
              for k, v in kwargs.items()}
    targs, tkwargs = mirror(args), {k: mirror(v) for k, v in kwargs.items()}
    if info.out_of is not None:
        want, err = _call(TABLE[info.out_of].op, args, kwargs, ptl)
        if err is not None:
            return None
        kwargs["out"] = _out_like(want, ptl)
        tkwargs["out"] = _out_like(mirror(want), torch)
    got, err = _call(info.op, args, kwargs, ptl)
    want, terr = _call(torch_op(name), targs, tkwargs, torch)
    if err is not None or terr is not None:
        return None
    for k, (g, w) in enumerate(zip(_leaves(got), _leaves(want))):
        if not isinstance(g, ptl.Tensor) or not isinstance(w, torch.Tensor):
            continue
        if g.layout != ptl.strided or w.layout != torch.strided or \
                tuple(g.shape) != tuple(w.shape) or g.numel() == 0:
            continue
        ours = layout_of(g)
        theirs = (tuple(s if n > 1 else None for n, s in zip(w.shape, w.stride())),
                  w.is_contiguous(),
                  w.dim() == 4 and w.is_contiguous(memory_format=torch.channels_last))
        if ours != theirs:
            return f"{name}{sample} {layout}: output {k} shape {tuple(g.shape)} strides " \
                   f"{g.stride()}, torch's {w.stride()}"
    return None


def sweep_names():
    """The ops of the table the sweep covers: a torch twin, no sparse samples."""
    return [name for name, info in sorted(TABLE.items())
            if name not in NOT_COMPARABLE and torch_op(name) is not None and info.samples
            and not any(isinstance(t, Sp) for s in info.samples for t in s.specs())]


def sweep(names=None):
    """op name -> its first layout difference from torch, for every op that has one"""
    found = {}
    for name in names or sweep_names():
        samples = list(TABLE[name].samples)
        samples += [s for s in map(four_d, samples) if s is not None]
        for sample in samples:
            for layout in LAYOUTS:
                why = run(name, sample, layout)
                if why is not None:
                    found.setdefault(name, why)
                    break
            if name in found:
                break
    return found


if __name__ == "__main__":
    import sys
    for n, why in sorted(sweep(sys.argv[1:]).items()):
        print(why)
