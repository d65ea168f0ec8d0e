"""The complex sweep: every public callable that pytorchlite shares with PyTorch, called with
complex64 arguments in both libraries, and the calls where the two disagree.

Two sources of calls:
  - the aten operators of tests/opinfo.py's table, called as `ops.aten.<name>.<overload>`
    with each sample's floating tensors made complex64 (real and imaginary parts in the
    op's domain, laid out as the sample says);
  - the public Python names both libraries have (torch.*, Tensor methods,
    torch.nn.functional, torch.fft, torch.special, torch.linalg): a name whose aten op has
    samples takes them, called through the public name; any other takes the first of a few
    generic argument lists (one, two or three complex matrices, a square matrix, a matrix
    and a dim) that PyTorch accepts.

A call disagrees when PyTorch computes and pytorchlite raises ("gap"), both raise exceptions
of different types ("type"), or pytorchlite computes what PyTorch refuses ("extra").
tests/aten/test_complex_coverage.py compares the result with its EXPECTED_GAPS;
`python tests/aten/complex_coverage.py FILE` writes the list."""
import inspect
import os
import sys
import warnings

import numpy as np

_tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _tests not in sys.path:   # run as a script
    sys.path.insert(0, os.path.dirname(_tests))
    sys.path.insert(0, _tests)

import pytorchlite as ptl  # noqa: E402
from helpers import torch  # noqa: E402
import opinfo  # noqa: E402
from opinfo import DTYPE, GENERATOR, Sp, T  # noqa: E402

NP_COMPLEX = np.complex64


def _base_array(spec, domain, seed):
    """The complex (or, for a spec with a dtype of its own, real) values of one spec, before
    its layout view, and the view to apply."""
    gen = np.random.default_rng(seed)
    low = spec.low if spec.low is not None else domain[0]
    high = spec.high if spec.high is not None else domain[1]
    shape = spec.shape
    if spec.layout == "transposed" and len(shape):
        shape = shape[::-1]
    elif spec.layout == "sliced" and len(shape):
        shape = tuple(2 * s for s in shape)
    elif spec.layout == "expanded" and len(shape):
        shape = tuple(1 if i == 0 else s for i, s in enumerate(shape))
    if spec.values is not None:
        return np.asarray(spec.values, dtype=NP_COMPLEX)
    re = gen.uniform(low, high, size=shape)
    im = gen.uniform(low, high, size=shape)
    return (re + 1j * im).astype(NP_COMPLEX)


def _view(lib_t, spec):
    if spec.values is not None or not len(spec.shape) or spec.layout == "contiguous":
        return lib_t
    if spec.layout == "transposed":
        return lib_t.permute(*reversed(range(len(spec.shape))))
    if spec.layout == "sliced":
        return lib_t[tuple(slice(None, None, 2) for _ in spec.shape)]
    return lib_t.expand(*spec.shape)


class _Unsupported(Exception):
    """A sample the sweep cannot build in both libraries (sparse inputs)."""


def torch_dtype(dt):
    return getattr(torch, str(dt).split(".")[-1])


def _build(sample, domain, complex_dtype=ptl.complex64):
    """(ours_args, ours_kwargs, torch_args, torch_kwargs) of one sample."""
    counter = [0]

    def build(x):
        if isinstance(x, Sp):
            raise _Unsupported
        if isinstance(x, T):
            counter[0] += 1
            if x.dtype is not None:   # an index, a mask, a float64 constant: as it is
                t, _ = x.make(x.dtype, domain, counter[0])
                a = np.array(t.numpy())
                return t, torch.from_numpy(a)
            a = _base_array(x, domain, 1000 + counter[0])
            return (_view(ptl.tensor(a, dtype=complex_dtype), x),
                    _view(torch.tensor(a, dtype=torch_dtype(complex_dtype)), x))
        if x is DTYPE:
            return complex_dtype, torch_dtype(complex_dtype)
        if x is GENERATOR:
            return ptl.Generator().manual_seed(0), torch.Generator().manual_seed(0)
        if isinstance(x, ptl.dtype):
            return x, torch_dtype(x)
        if isinstance(x, (list, tuple)):
            pairs = [build(y) for y in x]
            return type(x)(p[0] for p in pairs), type(x)(p[1] for p in pairs)
        return x, x
    pa = [build(x) for x in sample.args]
    pk = {k: build(v) for k, v in sample.kwargs.items()}
    return ([p[0] for p in pa], {k: p[0] for k, p in pk.items()},
            [p[1] for p in pa], {k: p[1] for k, p in pk.items()})


def outcome(fn, *args, **kwargs):
    """("ok", None) or (exception type name, message)."""
    try:
        with warnings.catch_warnings():   # deprecations and the like: not the sweep's matter
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:   # the sweep records every refusal
        return type(e).__name__, str(e).split("\n")[0][:120]
    return "ok", None


def classify(ours, theirs):
    if ours[0] == theirs[0]:
        return None
    if theirs[0] == "ok":
        return "gap"
    if ours[0] == "ok":
        return "extra"
    return "type"


def _aten_op(lib, name):
    base, _, ov = name.partition(".")
    return getattr(getattr(lib.ops.aten, base), ov or "default")


def _sweep_samples(ours_fn, torch_fn, samples, domain, public=False):
    """The first disagreeing sample of a callable: (kind, sample, ours, torch), or None;
    and whether any sample ran in PyTorch (the callable was probed).  A public name
    reports two refusals of different types only when PyTorch ran one of the samples (the
    aten op's samples may not fit the public signature)."""
    probed, found = False, None
    for s in samples:
        try:
            oa, ok_, ta, tk = _build(s, domain)
        except _Unsupported:
            continue
        theirs = outcome(torch_fn, *ta, **tk)
        ours = outcome(ours_fn, *oa, **ok_)
        probed = probed or theirs[0] == "ok"
        kind = classify(ours, theirs)
        if kind in ("gap", "extra"):
            return (kind, repr(s), ours, theirs), True
        if kind is not None and found is None:
            found = (kind, repr(s), ours, theirs)
    if public and not probed:
        found = None
    return found, probed


def sweep_aten():
    """{"aten::<name>": (kind, sample, ours, torch)} over the op table."""
    out = {}
    for name, info in sorted(opinfo.TABLE.items()):
        if info.out_of is not None:
            continue   # its functional op's row covers its kernel
        if not any(t.dtype is None for s in info.samples for t in s.specs()):
            continue   # no floating input: complex does not reach it
        try:
            tfn = _aten_op(torch, name)
        except (AttributeError, RuntimeError):
            continue
        found, _ = _sweep_samples(_aten_op(ptl, name), tfn, info.samples, info.domain)
        if found is not None:
            out["aten::" + name] = found
    return out


# ---- the public Python names ----

NAMESPACES = [("torch", "", ""), ("torch.nn.functional", "nn.functional", ""),
              ("torch.fft", "fft", "fft_"), ("torch.special", "special", "special_"),
              ("torch.linalg", "linalg", "linalg_")]

# names the sweep does not call: process state, I/O, compilers, and the ones that block
SKIPPED = {
    "compile", "load", "save", "manual_seed", "seed", "initial_seed", "set_default_dtype",
    "set_default_tensor_type", "set_default_device", "set_printoptions", "set_num_threads",
    "set_num_interop_threads", "set_grad_enabled", "set_rng_state", "use_deterministic_algorithms",
    "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_warn_always",
    "set_flush_denormal", "set_anomaly_enabled", "set_autocast_enabled", "from_file",
    "share_memory_", "pin_memory", "cuda", "backward", "register_hook", "register_post_accumulate_grad_hook",
    "retain_grad", "set_", "storage", "untyped_storage", "data_ptr", "record_stream",
    "module_load", "resize_", "resize_as_", "to_sparse", "to_sparse_csr", "to_sparse_csc",
    "to_sparse_bsr", "to_sparse_bsc", "to_mkldnn", "vmap", "cond", "while_loop", "export",
    "get_default_dtype", "is_grad_enabled", "sym_int", "sym_float", "sym_not", "sym_max",
    "sym_min", "sym_ite", "sym_sum", "sym_fresh_size", "typename", "is_storage",
    "unravel_index", "autocast", "no_grad", "enable_grad", "inference_mode",
    "set_autocast_dtype", "set_autocast_cache_enabled", "apply_", "map_", "map2_",
    "allreduce", "broadcast_tensors", "result_type", "promote_types", "can_cast",
}


def _generic_args(lib, cdt):
    """Argument lists for a name without samples, in the order tried."""
    gen = np.random.default_rng(7)
    x = (gen.standard_normal((3, 4)) + 1j * gen.standard_normal((3, 4))).astype(NP_COMPLEX)
    y = (gen.standard_normal((3, 4)) + 1j * gen.standard_normal((3, 4))).astype(NP_COMPLEX)
    m = (gen.standard_normal((3, 3)) + 1j * gen.standard_normal((3, 3))).astype(NP_COMPLEX)
    t = lambda a: lib.tensor(a, dtype=cdt)  # noqa: E731
    return [(t(x),), (t(x), t(y)), (t(x), t(y), t(x)), (t(m),), (t(x), 0), (t(x), 1),
            (t(m), t(m))]


def _public_names(tmod, omod):
    names = []
    for n in sorted(set(dir(tmod)) & set(dir(omod))):
        if n.startswith("_") or n in SKIPPED:
            continue
        tv, ov = getattr(tmod, n, None), getattr(omod, n, None)
        if not callable(tv) or not callable(ov) or inspect.isclass(tv) or inspect.isclass(ov):
            continue
        names.append(n)
    return names


def _aten_samples(name, prefix):
    """The op table's samples and domain for a public name, when it has them."""
    rows = [info for key, info in sorted(opinfo.TABLE.items())
            if key.partition(".")[0] == prefix + name and info.samples and info.out_of is None]
    rows.sort(key=lambda info: "." in info.name)   # the overload-free row first
    return (rows[0].samples, rows[0].domain) if rows else None


def _sweep_generic(ofn, tfn):
    targs = _generic_args(torch, torch.complex64)
    for i, ta in enumerate(targs):
        theirs = outcome(tfn, *ta)
        if theirs[0] != "ok":
            continue
        ours = outcome(ofn, *_generic_args(ptl, ptl.complex64)[i])
        kind = classify(ours, theirs)
        return (None if kind is None else (kind, f"generic#{i}", ours, theirs)), True
    return None, False


def sweep_public():
    """({qualified name: (kind, sample, ours, torch)}, [names not probed])."""
    out, unprobed = {}, []
    for tname, oname, prefix in NAMESPACES:
        tmod = eval(tname, {"torch": torch})
        omod = ptl
        for part in filter(None, oname.split(".")):
            omod = getattr(omod, part)
        for n in _public_names(tmod, omod):
            found, probed = None, False
            sd = _aten_samples(n, prefix)
            if sd is not None:
                found, probed = _sweep_samples(getattr(omod, n), getattr(tmod, n), *sd,
                                               public=True)
            if found is None and not probed:
                found, probed = _sweep_generic(getattr(omod, n), getattr(tmod, n))
            qual = f"{tname}.{n}"
            if found is not None:
                out[qual] = found
            elif not probed:
                unprobed.append(qual)
    for n in _public_names(torch.Tensor, ptl.Tensor):
        qual = f"Tensor.{n}"

        def method(name):
            return lambda self, *a, **k: getattr(self, name)(*a, **k)
        fn = method(n)
        found, probed = None, False
        sd = _aten_samples(n, "")
        if sd is not None:
            found, probed = _sweep_samples(fn, fn, *sd, public=True)
        if found is None and not probed:
            found, probed = _sweep_generic(fn, fn)
        if found is not None:
            out[qual] = found
        elif not probed:
            unprobed.append(qual)
    return out, unprobed


# ---- the gradients ----

def _tensors(x):
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in _tensors(y)]
    return [x] if hasattr(x, "requires_grad") else []


def _grad_of(lib, fn, args, kwargs, leaves, seed):
    """d(sum re(conj(g) * out))/d(leaves) for random g (PyTorch's vector-Jacobian product of
    a complex function), or an outcome tuple when the call or its backward raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = [o for o in _tensors(fn(*args, **kwargs))
                    if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]
            if not outs:
                return ("no-grad", None)
            gen = np.random.default_rng(seed)
            gos = []
            for o in outs:
                g = gen.standard_normal(tuple(o.shape))
                if o.dtype.is_complex:
                    g = g + 1j * gen.standard_normal(tuple(o.shape))
                gos.append(lib.tensor(g, dtype=o.dtype))
            grads = lib.autograd.grad(outs, leaves, gos, allow_unused=True)
    except Exception as e:   # the sweep records every refusal
        return type(e).__name__, str(e).split("\n")[0][:120]
    return [None if g is None else np.array(g.detach().resolve_conj().numpy()
                                            if hasattr(g, "resolve_conj") else g.numpy())
            for g in grads]


def _grad_pair(sample, domain):
    """The sample in complex128 with every complex tensor a leaf, in both libraries."""
    oa, ok_, ta, tk = _build(sample, domain, ptl.complex128)
    ol = [t for t in _tensors(oa) + _tensors(list(ok_.values())) if t.dtype.is_complex]
    tl = [t for t in _tensors(ta) + _tensors(list(tk.values())) if t.dtype.is_complex]
    ol = [t.detach().requires_grad_(True) for t in ol]
    tl = [t.detach().requires_grad_(True) for t in tl]
    # put the leaves back where the sample had them
    oi, ti = iter(ol), iter(tl)

    def swap(x, it):
        if isinstance(x, (list, tuple)):
            return type(x)(swap(y, it) for y in x)
        if hasattr(x, "requires_grad") and x.dtype.is_complex:
            return next(it)
        return x
    oa = [swap(x, oi) for x in oa]
    ok_ = {k: swap(v, oi) for k, v in ok_.items()}
    ta = [swap(x, ti) for x in ta]
    tk = {k: swap(v, ti) for k, v in tk.items()}
    return (oa, ok_, ol), (ta, tk, tl)


def sweep_grads():
    """{"aten::<name>": (kind, sample, detail)} for the ops whose complex128 forward runs in
    both libraries: "grad-gap" (PyTorch differentiates, pytorchlite raises), "grad-value"
    (the gradients differ), "grad-extra" (pytorchlite differentiates what PyTorch refuses)."""
    out = {}
    for name, info in sorted(opinfo.TABLE.items()):
        if info.out_of is not None or info.grad not in ("check",) or info.inplace:
            continue
        if not any(t.dtype is None for s in info.samples for t in s.specs()):
            continue
        try:
            tfn = _aten_op(torch, name)
        except (AttributeError, RuntimeError):
            continue
        ofn = _aten_op(ptl, name)
        for i, s in enumerate(info.samples):
            if any(0 in t.shape for t in s.specs()):
                continue
            try:
                (oa, ok_, ol), (ta, tk, tl) = _grad_pair(s, info.domain)
            except _Unsupported:
                continue
            if not ol:
                continue
            if outcome(tfn, *ta, **tk)[0] != "ok" or outcome(ofn, *oa, **ok_)[0] != "ok":
                continue
            theirs = _grad_of(torch, tfn, ta, tk, tl, i)
            ours = _grad_of(ptl, ofn, oa, ok_, ol, i)
            t_ok, o_ok = isinstance(theirs, list), isinstance(ours, list)
            if t_ok and not o_ok:
                out["aten::" + name] = ("grad-gap", repr(s), ours)
                break
            if o_ok and not t_ok:
                if theirs[0] != "no-grad":
                    out["aten::" + name] = ("grad-extra", repr(s), theirs)
                    break
                continue
            if not t_ok:
                continue
            bad = _first_mismatch(ours, theirs)
            if bad is not None:
                out["aten::" + name] = ("grad-value", repr(s), bad)
                break
    return out


def _first_mismatch(ours, theirs):
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a is None and b is None:
            continue
        if a is None or b is None:
            return f"input {k}: ours={'None' if a is None else 'grad'} torch=" + \
                ("None" if b is None else "grad")
        a = np.broadcast_to(a, b.shape) if a.shape != b.shape and a.size == 1 else a
        if a.shape != b.shape:
            return f"input {k}: shape {a.shape} vs {b.shape}"
        if not np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True):
            j = np.unravel_index(np.argmax(np.abs(a - b)), a.shape) if a.ndim else ()
            return f"input {k}: ours {a[j]!r} torch {b[j]!r} at {j}"
    return None


def sweep():
    found = sweep_aten()
    public, unprobed = sweep_public()
    found.update(public)
    return found, unprobed


def format_report(found, unprobed):
    lines = ["# complex64 sweep vs torch " + torch.__version__ +
             " (tests/aten/complex_coverage.py): kind name  sample  ours  torch",
             "# gap: torch computes, we raise; type: both raise, other types; "
             "extra: we compute, torch raises"]
    for kind in ("gap", "type", "extra"):
        for name, (k, sample, ours, theirs) in sorted(found.items()):
            if k == kind:
                lines.append(f"{kind:5s} {name:45s} {sample}  ours={ours}  torch={theirs}")
    lines.append(f"# not probed (no sample or generic call that torch accepts): "
                 f"{len(unprobed)}")
    lines.append("# " + " ".join(unprobed))
    return "\n".join(lines) + "\n"


def format_grads(found):
    lines = ["# complex128 gradients vs torch (vector-Jacobian products with random complex "
             "grad_outputs): kind name  sample  detail"]
    for name, (kind, sample, detail) in sorted(found.items()):
        lines.append(f"{kind:10s} {name:40s} {sample}  {detail}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    f, u = sweep()
    text = format_report(f, u) + format_grads(sweep_grads())
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            fh.write(text)
    sys.stdout.write(text)
