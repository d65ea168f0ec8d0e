"""The non-finite sweep of the operator table against PyTorch (tests/aten/
test_nonfinite_vs_torch.py drives it): every op of tests/opinfo.py with floating inputs that
torch.ops.aten has under the same name runs its samples with nan, inf, -inf, -0.0, a huge and
the dtype's tiniest normal value planted in one floating input at a time, at its first,
middle and last element, and must give PyTorch's result: the same nan and inf positions, the
same signs of infinities and of zeros where PyTorch's are signed, the finite values to a
tolerance."""
import numpy as np

import pytorchlite as ptl
from helpers import torch
from opinfo import GENERATOR, TABLE, Sp

FLOATING = (ptl.float32, ptl.float64)
COMPLEX = (ptl.complex64, ptl.complex128)


def planted_values(dtype):
    """The values planted: (label, value) in the dtype's kind."""
    big = 1e38 if dtype in (ptl.float32, ptl.complex64) else 1e308
    tiny = float(ptl.finfo(dtype).tiny)
    vals = [("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf), ("-0", -0.0),
            ("big", big), ("tiny", tiny)]
    if dtype in COMPLEX:
        vals += [("inf_j", complex(0, np.inf)), ("nan_j", complex(1, np.nan))]
    return vals


def torch_dtype(dtype):
    return getattr(torch, str(dtype).split(".")[-1])


def to_torch(x):
    """The torch twin of an argument (None where the argument has none)."""
    if isinstance(x, ptl.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, ptl.dtype):
        return torch_dtype(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(y) for y in x)
    return x


def torch_op(name):
    base, _, overload = name.partition(".")
    try:
        return getattr(getattr(torch.ops.aten, base), overload or "default")
    except (AttributeError, RuntimeError):
        return None


NOT_COMPARABLE = {
    "_pin_memory": "PyTorch's needs an accelerator",
    # random ops the table marks by neither a generator sample nor a zeros/ref gradient: their
    # draws are not PyTorch's, and a small sample's can match by chance (bernoulli.p on 6
    # elements did, so its planted runs were compared and failed)
    **dict.fromkeys(("bernoulli.p", "binomial", "multinomial", "native_dropout",
                     "normal.float_float", "rand", "rand_like", "randint", "randint.low",
                     "randint_like", "randint_like.low_dtype", "randint_like.Tensor", "randn",
                     "randn_like", "randperm", "_sample_dirichlet"),
                    "random: its draws are not PyTorch's"),
}


def _random(info):
    if info.grad in ("zeros", "ref"):
        return True
    return any(x is GENERATOR for s in info.samples for x in list(s.args)
               + list(s.kwargs.values()))


def sweep_names():
    """The functional ops of the table the sweep covers: floating dtypes, a torch twin (when
    torch is here), not random, no sparse samples, not an out= variant (it reuses its
    functional op's kernel)."""
    names = []
    for name, info in sorted(TABLE.items()):
        if not set(info.dtypes) & set(FLOATING + COMPLEX) or info.out_of is not None:
            continue
        if info.inplace or _random(info) or (torch is not None and torch_op(name) is None):
            continue
        if name in NOT_COMPARABLE:
            continue
        if any(isinstance(t, Sp) for s in info.samples for t in s.specs()):
            continue
        names.append(name)
    return names


def _flat_positions(n):
    return sorted({0, n // 2, n - 1}) if n else []


def plant(t, value, position):
    """Writes value at flat position `position` of tensor t (a copy when t is a view that
    overlaps itself).  Returns the tensor to use."""
    a = np.array(t.numpy())
    a.reshape(-1)[position] = value
    fresh = ptl.from_numpy(a)
    if any(s == 0 for s in t.stride()) and t.numel() > 1:
        return fresh
    t.copy_(fresh)
    return t


def _outputs(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def compare(got, want, rtol, atol):
    """None when pytorchlite's result `got` matches torch's `want`, else the difference."""
    got, want = _outputs(got), _outputs(want)
    if len(got) < len(want):
        return f"{len(got)} outputs, torch {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, torch.Tensor):
            if isinstance(g, ptl.Tensor) or (g != w and not (g != g and w != w)):
                return f"output {k}: {g!r} != {w!r}"
            continue
        if not isinstance(g, ptl.Tensor):
            return f"output {k}: not a tensor"
        if tuple(g.shape) != tuple(w.shape):
            return f"output {k}: shape {tuple(g.shape)} != {tuple(w.shape)}"
        if g.is_sparse:
            g, w = g.to_dense(), w.to_dense()
        a = np.array(g.detach().numpy())
        b = w.detach().resolve_conj().resolve_neg().numpy()
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            why = _compare_floats(a.astype(np.complex128), b.astype(np.complex128), rtol, atol)
            if why:
                return f"output {k}: {why}"
        elif not np.array_equal(a, b):
            bad = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
            return f"output {k}: at {bad[:4]}: {a.reshape(-1)[bad[:4]]} != " \
                f"{b.reshape(-1)[bad[:4]]}"
    return None


def _compare_floats(a, b, rtol, atol):
    for part in (np.real, np.imag):
        x, y = part(a).reshape(-1), part(b).reshape(-1)
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            i = np.flatnonzero(np.isnan(x) != np.isnan(y))
            return f"nan at {i[:4]}: ours {x[i[:4]]}, torch {y[i[:4]]}"
        inf = np.isinf(x) | np.isinf(y)
        if not np.array_equal(x[inf], y[inf]):
            i = np.flatnonzero(inf & (x != y))
            return f"inf at {i[:4]}: ours {x[i[:4]]}, torch {y[i[:4]]}"
        fin = np.isfinite(x) & np.isfinite(y)
        scale = np.maximum(np.abs(y[fin]), np.abs(x[fin]))
        err = np.abs(x[fin] - y[fin]) > atol + rtol * scale
        if err.any():
            i = np.flatnonzero(fin)[err]
            return f"values at {i[:4]}: ours {x[i[:4]]}, torch {y[i[:4]]}"
    return None


TOLERANCE = {ptl.float32: (2e-4, 1e-5), ptl.float64: (1e-7, 1e-10),
             ptl.complex64: (2e-4, 1e-5), ptl.complex128: (1e-7, 1e-10)}


def _call(f, args, kwargs):
    try:
        return f(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (the kind of failure is compared)
        return None, e


def run_sample(name, sample, dtype, label_value, which, position):
    """Runs one planted sample in both frameworks (label_value None: unplanted).  None, or
    a description of the difference."""
    info = TABLE[name]
    args, kwargs, _, _, _ = sample.make(dtype, info.domain)
    if label_value is None:
        return _run_both(name, info, args, kwargs, f"{name}{sample} {dtype}", FLOATING[1])
    floats = []

    def collect(container, key):
        x = container[key]
        if isinstance(x, ptl.Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex):
            floats.append((container, key))
        elif isinstance(x, list):
            for j in range(len(x)):
                collect(x, j)
    for i in range(len(args)):
        collect(args, i)
    for k in kwargs:
        collect(kwargs, k)
    if which >= len(floats):
        return None
    container, key = floats[which]
    t = container[key]
    positions = _flat_positions(t.numel())
    if position >= len(positions):
        return None
    label, value = label_value
    if isinstance(value, complex) and not t.dtype.is_complex:
        return None
    container[key] = plant(t, value, positions[position])
    where = f"{name}{sample} {dtype} {label} in input {which} at {positions[position]}"
    return _run_both(name, info, args, kwargs, where, t.dtype)


def _run_both(name, info, args, kwargs, where, dtype):
    targs, tkwargs = to_torch(args), {k: to_torch(v) for k, v in kwargs.items()}
    want, terr = _call(torch_op(name), targs, tkwargs)
    got, err = _call(info.op, args, kwargs)
    if terr is not None or err is not None:
        if (terr is None) != (err is None):
            return f"{where}: ours raised {err!r}, torch {terr!r}"
        return None
    rtol, atol = TOLERANCE[dtype] if dtype in TOLERANCE else TOLERANCE[ptl.float64]
    why = compare(got, want, max(rtol, info.rtol), max(atol, info.atol))
    if why is not None and dtype in WIDER:
        # PyTorch's float32 kernel is itself wrong where its float64 one, on the same
        # values, agrees with ours (nan from polynomial kernels at inf, overflow of squares)
        wide = WIDER[dtype]
        want64, terr = _call(torch_op(name), _widen(targs, wide), _widen(tkwargs, wide))
        if terr is None and compare(got, _narrow(want64, torch_dtype(dtype)), rtol,
                                    atol) is None:
            return None
    return None if why is None else f"{where}: {why}"


WIDER = {ptl.float32: ptl.float64, ptl.complex64: ptl.complex128}


def _widen(x, wide):
    if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
        return x.to(torch_dtype(wide) if x.is_complex() == wide.is_complex else
                    torch.float64)
    if isinstance(x, torch.dtype) and (x.is_floating_point or x.is_complex):
        return torch_dtype(wide) if x.is_complex == wide.is_complex else torch.float64
    if isinstance(x, dict):
        return {k: _widen(v, wide) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_widen(y, wide) for y in x)
    return x


def _narrow(x, dtype):
    """torch's float64 result rounded to the dtype under test (float outputs only)."""
    if isinstance(x, torch.Tensor) and x.dtype == torch.float64 and not dtype.is_complex:
        return x.to(dtype)
    if isinstance(x, torch.Tensor) and x.dtype == torch.complex128 and dtype.is_complex:
        return x.to(dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_narrow(y, dtype) for y in x)
    return x


def comparable_samples(name):
    """The samples whose unplanted values give PyTorch's result (the others differ by
    convention or randomness, which other tests cover) and hold no empty tensor."""
    out = []
    for sample in TABLE[name].samples:
        if any(0 in t.shape for t in sample.specs()):
            continue
        if run_sample(name, sample, ptl.float64, None, 0, 0) is None:
            out.append(sample)
    return out


def sweep(name, dtype):
    """Every difference of op `name` in `dtype` (a list of strings)."""
    out = []
    info = TABLE[name]
    for sample in comparable_samples(name):
        for lv in planted_values(dtype):
            for which in range(4):
                for position in range(3 if lv[0] in ("nan", "inf", "-inf") else 1):
                    why = run_sample(name, sample, dtype, lv, which, position)
                    if why:
                        out.append(why)
    return out


if __name__ == "__main__":
    import sys
    names = sys.argv[1:] or sweep_names()
    if names[0].startswith("--from="):
        names = [n for n in sweep_names() if n >= names[0][7:]]
    import time
    for n in names:
        t0 = time.time()
        print("#", n, flush=True)
        for d in TABLE[n].dtypes:
            if d in FLOATING + COMPLEX:
                diffs = sweep(n, d)
                for line in diffs[:3]:
                    print(line, flush=True)
                if len(diffs) > 3:
                    print(f"{n} {d}: {len(diffs)} differences", flush=True)
        if time.time() - t0 > 5:
            print(f"# {n}: {time.time() - t0:.1f} s", flush=True)
