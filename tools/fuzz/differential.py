"""The differential half of tools/fuzz/op_fuzzer.py (--torch): one call's source runs on
pytorchlite and on PyTorch, and the two outcomes are compared.

An outcome is what the call raised, or what it returned together with every tensor the
call's `T(...)` built (so an in-place op or an out= argument is compared through the
arguments it mutated).  Both sides build their tensors from the same seeded NumPy values
(op_fuzzer.make_tensor with the module swapped), so they start equal.

The classes of a difference, most important first:
    value    both returned, and a dtype, a shape, a structure or a value differs
    accepts  pytorchlite returned where torch raised
    refuses  pytorchlite raised where torch returned
and the lower classes, which do not fail a run (LOWER):
    type     both raised, with different exception types
    meta     pytorchlite refused a call with a meta tensor (torch's meta kernels check
             less: dtypes and devices go unchecked there)
    dtype    pytorchlite computed a dtype that torch's kernel does not implement
    parser   the argument parsers differ: pytorchlite converted an argument (a number for
             a Tensor) that torch.ops' strict parser refuses (torch's Python functions
             convert it too), or refused one that torch.ops converts (2 for a bool, an
             int past 64 bits for a Scalar), or torch.ops returned a number where a
             number stood for out= (its boxed call converts the number to a tensor, writes
             it and hands back a number; torch's Python functions and pytorchlite.ops return
             the written tensor)
    torch-crash, torch-hang   torch's side of the call crashed or hung
Calls of an operator that torch lacks, and of the operators of SKIP, run on pytorchlite
only (they still find crashes and hangs)."""
import math
import re

import numpy as np

# The classes that fail a run (besides crashes and hangs), most important first
MAJOR = ("value", "accepts", "refuses")
LOWER = ("type", "meta", "dtype", "parser", "torch-crash", "torch-hang", "torch-sanitizer")

# Operators whose results are not a function of their arguments, or not defined by them.
SKIP = {
    **dict.fromkeys(
        ("_sample_dirichlet", "_standard_gamma", "bernoulli", "bernoulli_", "binomial",
         "cauchy_", "exponential_", "geometric_", "log_normal_", "multinomial",
         "native_dropout", "normal", "normal_", "poisson", "rand", "rand_like", "randint",
         "randint_like", "randn", "randn_like", "random_", "randperm", "uniform_"),
        "random: draws from a generator that is not torch's"),
    **dict.fromkeys(
        ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
         "resize_", "resize_as_"),
        "uninitialised memory in the result"),
    "set_": "shares storage by address: what it shows depends on the allocation",
    # its CPU kernel checks no index against num_weights: an index of 8 with 3 weights
    # writes past the gradient's buffer, and the child crashes later in unrelated code
    # (seed 24: call 519, the crash at call 560 or at exit); pytorchlite raises IndexError
    "embedding_dense_backward": "torch writes out of bounds for an index >= num_weights",
}

# A ScalarType argument of 99 (CallMaker's invalid dtype) crashes torch's ops: pytorchlite
# alone runs such a call.
BAD_DTYPE = re.compile(r"(?<!', )(?<![\w.'])99\b")

LAPACK = re.compile(r"linalg|det$|inverse|svd|cholesky|^lu|eig|qr|ldl|solve|lstsq")
# Operators that torch runs through MKL's or OpenBLAS's complex gemm/gemv, which scale the
# sums by alpha = 1 + 0i in some layouts and not others: an infinite part becomes nan there
# (1 * inf - 0 * im).  pytorchlite's complex engine takes an alpha of 1 as no scaling
# (gemm_complex.c), as torch's own dot does (which it leaves for BLAS's on strided vectors:
# dot of [-inf + 0i] and [4.9 - 0.4i], seed 46 call 1445, is -inf + nan i there).
BLAS = re.compile(r"^(_?addmm|addbmm|baddbmm|bmm|mm|mv|addmv|matmul|linear|einsum|tensordot|"
                  r"dot|vdot|inner|chain_matmul|linalg_multi_dot|_addmm_activation)$")
# torch's orthogonal polynomials at a non-finite x: nan for +-inf (the recurrence's
# inf - inf), and for nan a 0, a nan or an uninitialised double (6.9e-310) by polynomial;
# pytorchlite's are nan at nan and the leading term's sign times inf at +-inf (Note
# [Orthogonal polynomials] in src/aten/polynomial_math.h)
POLYNOMIAL = re.compile(r"^special_\w+_polynomial_\w+$")
META = re.compile(r"'m', \d+\)|device='meta'")
# a number given for out= (or a tuple of them), finite or written float('inf') / float('nan')
_NUMBER = r"(?:[-\d.e+]+|float\('-?(?:inf|nan)'\))"
NUMBER_OUT = re.compile(rf"\bout=\(?{_NUMBER}[,)]|\bout={_NUMBER}$")
# ... or for the self of an in-place op (torch.ops writes a tensor made of it and returns a
# number, ours the tensor), a complex one too
NUMBER_SELF = re.compile(rf"^aten\.\w+_\.\w+\((?:self=)?(?:{_NUMBER}j?|True|False)[,)]")
# pytorchlite's parser refusing one argument's type (the bindings' TypeError, or the
# RuntimeError of torch.ops' words that pytorchlite.ops raises): torch.ops converts more (2
# for a bool, an int past 64 bits for a Scalar)
ARG_TYPE = re.compile(r"\(\): argument '\w+' (\(position \d+\) )?must be .+, not \w+|"
                      r"^aten::\w+\(\) Expected a value of type '.+' for argument '\w+'")

# Operators some of whose results are defined only up to a choice (the order of equal keys,
# the sign or phase of a singular or eigen vector): the indices of the results compared.
COMPARED = {
    **dict.fromkeys(("sort", "topk"), ((0,), "the order of equal keys is unspecified")),
    **dict.fromkeys(("kthvalue", "median", "nanmedian", "mode"),
                    ((0,), "which of equal keys is returned is unspecified")),
    **dict.fromkeys(("_linalg_eigh", "linalg_eigh"),
                    ((0,), "an eigenvector's sign or phase is unspecified")),
    **dict.fromkeys(("_linalg_svd", "linalg_svd", "svd"),
                    ((1,), "a singular vector's sign or phase is unspecified")),
    # torch factors A^T of a row-major A (det(A) = det(A^T), no copy to column-major), so
    # its LU and pivots are another matrix's; pytorchlite's are A's (its backward reads them)
    "_linalg_det": ((0,), "the LU of A or of A^T, by A's layout"),
    "_linalg_slogdet": ((0, 1), "the LU of A or of A^T, by A's layout"),
}

# Operators whose torch results are less accurate than float64 in places: compared with a
# float32 tolerance
LOOSE = {
    **dict.fromkeys(
        ("special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
         "special_airy_ai"),
        "torch's float64 loses 5-6 digits (the Bessel functions for x in 5..7, airy_ai near "
        "-2.2); pytorchlite's agree with SciPy and mpmath there"),
    "_dirichlet_grad": "torch approximates it piecewise (to about 1e-7 in float64); "
                       "pytorchlite sums the exact series (src/aten/distributions.h)",
    "_standard_gamma_grad": "torch approximates it (1.7e-5 off at seed 47's call 182; 5e-4 "
                            "at alpha 0.1208, x 6.024, which still shows); pytorchlite's "
                            "matches mpmath's derivative (docs/decisions.md)",
}

# Operators whose second result, the mean, torch's Welford steps make nan of an infinite
# input but the last (inf - inf); pytorchlite's is torch.mean's: compared only where the
# inputs are finite
WELFORD_MEAN = dict.fromkeys(("var_mean", "std_mean"), "torch's mean of [1, inf, 2] is nan")

# Operators whose results pytorchlite defines as nan or inf where torch's formulas give
# numbers: the elements that are not finite in pytorchlite's result are not compared
UNDEFINED_THERE = {
    "_dirichlet_grad": "nan unless 0 <= x <= 1, alpha > 0 and total > alpha "
                       "(src/aten/distributions.h); torch's piecewise approximation gives 0 "
                       "or a number there",
    "_standard_gamma_grad": "nan unless alpha > 0 and x >= 0 (src/aten/distributions.h); "
                            "torch's approximation gives 0 or a number there",
    **dict.fromkeys(
        ("polygamma", "polygamma_"),
        "+-inf at the poles (x = 0, -1, -2...), where torch's reflection formula leaves a "
        "rounding error (1.7e16 for polygamma(1, -3.0) in float32); and +inf where n! "
        "zeta(n + 1, x) overflows for 0 < x < 1 (n = 2**31 - 1), where torch's zeta gives "
        "nan"),
}

TOLERANCES = {   # dtype: (rtol, atol); atol scales with the largest finite reference value
    "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "complex32": (1e-2, 1e-2),
    "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9), "complex128": (1e-7, 1e-9),
}
MAX_ELEMENTS = 100_000


def op_name(src):
    """'aten.NAME.OVERLOAD(...)' -> (NAME, OVERLOAD)."""
    m = re.match(r"aten\.(\w+)\.(\w+)\(", src)
    return m.group(1), m.group(2)


def torch_has(src):
    """Whether torch.ops.aten has the call's operator and overload."""
    import torch
    name, overload = op_name(src)
    try:
        getattr(getattr(torch.ops.aten, name), overload)
    except (AttributeError, RuntimeError):
        return False
    return True


def snapshot(value, depth=0):
    """A library-free copy of a result: a tensor becomes ('tensor', dtype, shape, ndarray or
    None for meta tensors and huge ones), a sequence a list, anything else itself (a dtype or
    a device as its str)."""
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "is_meta"):
        dtype = str(value.dtype).rpartition(".")[2]
        shape = tuple(value.shape)
        data = None
        if not value.is_meta and value.numel() <= MAX_ELEMENTS:
            t = value.detach()
            if str(t.layout).rpartition(".")[2] != "strided":
                t = t.to_dense()
            data = np.asarray(t.tolist(), dtype=numpy_type(dtype)).reshape(shape)
        return ("tensor", dtype, shape, data)
    if isinstance(value, (tuple, list)) and depth < 3:
        return [snapshot(v, depth + 1) for v in value]
    if isinstance(value, (bool, int, float, complex, str)) or value is None:
        return value
    return str(value).replace("pytorchlite", "torch")


def numpy_type(dtype):
    if dtype == "bool":
        return np.bool_
    if dtype.startswith("complex"):
        return np.complex128
    if dtype.startswith(("float", "bfloat")):
        return np.float64
    return np.int64


def outcome(src, namespace):
    """('raise', exception type name, message) or ('return', snapshot of the result,
    snapshots of the tensors the call built) of evaluating `src` in `namespace`, whose
    'T' records the tensors it makes in namespace['made']."""
    try:
        result = eval(src, namespace)
        return ("return", snapshot(result), [snapshot(t) for t in namespace["made"]])
    except Exception as e:   # noqa: BLE001 (any exception is an answer)
        return ("raise", type(e).__name__, str(e).split("\n")[0][:160])


def verdict(src, ours, theirs):
    """None when the outcomes agree, else (class, detail)."""
    # torch.ops' boxed argument parser raises RuntimeError where torch's Python functions
    # (and pytorchlite's ops.aten) raise TypeError
    parser = theirs[0] == "raise" and theirs[1] == "RuntimeError" and \
        theirs[2].startswith("aten::") and "Expected a value of type" in theirs[2]
    if ours[0] == "raise" and theirs[0] == "raise":
        if ours[1] != theirs[1] and not (ours[1] == "TypeError" and parser):
            return ("type", f"ours {ours[1]}: {ours[2]!r}; torch {theirs[1]}: {theirs[2]!r}")
        return None
    if ours[0] == "raise":
        kind = "meta" if "'Meta' backend" in ours[2] or META.search(src) else \
            "parser" if "received an invalid combination" in ours[2] or \
            ours[1] in ("TypeError", "RuntimeError") and ARG_TYPE.search(ours[2]) or \
            "Overflow when unpacking long" in ours[2] else "refuses"
        return (kind, f"ours {ours[1]}: {ours[2]!r}; torch returns")
    if theirs[0] == "raise":
        kind = "parser" if parser or theirs[2].startswith("aten::") and \
            "missing value for argument" in theirs[2] else \
            "dtype" if " not implemented for '" in theirs[2] else "accepts"
        return (kind, f"ours returns; torch {theirs[1]}: {theirs[2]!r}")
    got, want, args_got, args_want = ours[1], theirs[1], ours[2], theirs[2]
    if (NUMBER_OUT.search(src) or NUMBER_SELF.search(src)) and \
            not isinstance(want, (tuple, list)):
        return ("parser", f"ours returns a tensor; torch.ops returns {want!r} for a number "
                          "out= or in-place self")
    name = op_name(src)[0]
    if name in COMPARED and isinstance(got, list) and isinstance(want, list) and \
            len(got) == len(want):
        keep = COMPARED[name][0]
        got, want = [got[i] for i in keep], [want[i] for i in keep]
    if (LAPACK.search(name) or POLYNOMIAL.search(name) or
            BLAS.search(name) and complex_inputs(theirs[2])) and nonfinite(theirs[2]):
        # LAPACK promises nothing of a matrix with nan or inf: pivots, factors and
        # vectors are whatever its steps made; nor do torch's complex BLAS and polynomials
        # (BLAS, POLYNOMIAL above); shapes and dtypes are still compared, of the results
        # and of the tensors the call wrote
        got, want = strip_values(got), strip_values(want)
        args_got, args_want = strip_values(args_got), strip_values(args_want)
    if name in WELFORD_MEAN and nonfinite(theirs[2]) and isinstance(got, list) and \
            isinstance(want, list):
        got, want = got[:1], want[:1]
    if name.endswith("_ex") and failed_ex(want):
        # a linalg *_ex op that reports a failure in `info` leaves its other results
        # unspecified: only `info` is compared
        got, want = got[-1:], want[-1:]
    if name in UNDEFINED_THERE:
        want = finite_there(got, want)
        args_want = [finite_there(a, b) for a, b in zip(args_got, args_want)]
    tol = loosest(theirs[1], theirs[2])
    if name in LOOSE:
        tol = max(tol, TOLERANCES["float32"])
    diff = difference(got, want, "result", tol)
    for i, (a, b) in enumerate(zip(args_got, args_want)):
        diff = diff or difference(a, b, f"tensor argument {i}", tol)
    return None if diff is None else ("value", diff)


def finite_there(got, want):
    """want's snapshot with got's values wherever got's are not finite (UNDEFINED_THERE)"""
    if isinstance(got, tuple) and isinstance(want, tuple) and got[3] is not None and \
            want[3] is not None and got[3].shape == want[3].shape:
        return want[:3] + (np.where(np.isfinite(got[3]), want[3], got[3]),)
    return want


def nonfinite(snapshots):
    """Whether a floating or complex tensor among `snapshots` has a nan or an infinity."""
    return any(isinstance(s, tuple) and s[3] is not None and s[1] in TOLERANCES and
               not np.all(np.isfinite(s[3])) for s in snapshots)


def complex_inputs(snapshots):
    """Whether a tensor among `snapshots` is complex."""
    return any(isinstance(s, tuple) and s[1].startswith("complex") for s in snapshots)


def strip_values(s):
    """Snapshot `s` with its tensors' values dropped (only dtypes and shapes compared)."""
    if isinstance(s, list):
        return [strip_values(x) for x in s]
    return s[:3] + (None,) if isinstance(s, tuple) else s


def failed_ex(result):
    """Whether the last result of a *_ex op, its `info` tensor, has a nonzero element."""
    info = result[-1] if isinstance(result, list) and result else None
    return isinstance(info, tuple) and info[3] is not None and bool(np.any(info[3] != 0))


def loosest(*snapshots):
    """The loosest tolerance of the tensors in `snapshots` (the inputs and results of a call),
    an integer or bool tensor counting as float32: a float32 input written into a float64
    out= tensor is computed in float32, and so is an integer input of a floating op."""
    found = []

    def walk(s):
        if isinstance(s, list):
            for x in s:
                walk(x)
        elif isinstance(s, tuple):
            found.append(TOLERANCES.get(s[1], TOLERANCES["float32"]))
    walk(list(snapshots))
    return max(found) if found else TOLERANCES["float64"]


def difference(got, want, where, tol):
    """None, or a line saying where snapshot `got` first differs from `want`."""
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(got) != len(want):
            return f"{where}: ours {describe(got)}, torch {describe(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            d = difference(a, b, f"{where}[{i}]", tol)
            if d is not None:
                return d
        return None
    if isinstance(want, tuple) or isinstance(got, tuple):
        if not (isinstance(want, tuple) and isinstance(got, tuple)):
            return f"{where}: ours {describe(got)}, torch {describe(want)}"
        if got[1:3] != want[1:3]:
            return f"{where}: ours {describe(got)}, torch {describe(want)}"
        if got[3] is None or want[3] is None:
            return None
        return values_difference(got[3], want[3], got[1], where, tol)
    if isinstance(want, float) or isinstance(got, float):
        if isinstance(got, (int, float)) and isinstance(want, (int, float)) and \
                not isinstance(got, bool) and not isinstance(want, bool):
            a, b = np.array([got], np.float64), np.array([want], np.float64)
            return values_difference(a, b, "float64", where, tol)
    if type(got) is not type(want) or got != want:
        return f"{where}: ours {got!r}, torch {want!r}"
    return None


def describe(s):
    if isinstance(s, tuple):
        return f"{s[1]} {list(s[2])}"
    if isinstance(s, list):
        return f"a sequence of {len(s)}"
    return repr(s)


def values_difference(got, want, dtype, where, tol):
    """None, or where arrays `got` and `want` (of the compared library dtype `dtype`) first
    differ: exact for integers and bool; for floating and complex, nan and infinities in the
    same places and the finite values close, within the looser of `dtype`'s tolerance and
    `tol` (rtol, atol)."""
    if dtype not in TOLERANCES:
        bad = got != want
    elif np.iscomplexobj(want):
        return values_difference(got.real, want.real, dtype, where + " (real)", tol) or \
            values_difference(got.imag, want.imag, dtype, where + " (imag)", tol)
    else:
        rtol, atol = max(TOLERANCES[dtype], tol)
        finite = np.isfinite(want)
        scale = max(1.0, float(np.abs(want[finite]).max())) if finite.any() else 1.0
        with np.errstate(invalid="ignore"):
            close = np.abs(got - want) <= atol * scale + rtol * np.abs(want)
        same = (np.isnan(got) & np.isnan(want)) | (got == want) | (finite & close)
        bad = ~same
    if not bad.any():
        return None
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    count = int(bad.sum())
    return (f"{where} {dtype}: {count} of {want.size} differ; at {list(i)} ours "
            f"{fmt(got[i])}, torch {fmt(want[i])}")


def fmt(x):
    x = x.item() if hasattr(x, "item") else x
    return repr(x) if not isinstance(x, float) or math.isfinite(x) else str(x)
