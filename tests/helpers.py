"""Shared test helpers: random tensors in every layout, and NumPy float64 comparison.

Differential testing is the rule (shared/STYLE.md 2.9): build the same values in pytorchlite
and in NumPy, run the op on both, compare shape, then dtype, then values, and on failure
name the first mismatching element."""
import contextlib
import gc
import hashlib
import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl

try:
    import torch  # noqa: F401  (PyTorch, when installed, is a second reference)
except ImportError:  # pragma: no cover
    torch = None

# A test whose only reference is PyTorch carries this mark: without torch it is skipped with
# TORCH_MISSING as the reason (conftest.py), and `pytest -m torch_ref` selects these tests.
# A comparison with torch inside a test that also checks against NumPy runs under
# `if torch is not None:` instead, so the rest of the test runs everywhere.
torch_ref = pytest.mark.torch_ref
TORCH_MISSING = "PyTorch not installed: this compares with torch"

# The tests folder (on sys.path, see conftest.py) and the checkout's root above it.
TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)

# Whether this run's vector loops were capped by whoever started it (PTL_CPU_CAPABILITY).
CAPPED_BY_CALLER = "PTL_CPU_CAPABILITY" in os.environ


def skip_native_capability(cap):
    """Skips a rerun under PTL_CPU_CAPABILITY=cap where cap is what this CPU runs anyway (an
    AVX2 machine's "avx2" rerun would repeat the whole file unchanged)."""
    if ptl.backends.cpu.get_cpu_capability().lower() == cap:
        pytest.skip(f"this CPU's own capability is {cap}: the run itself tested these loops")


@contextlib.contextmanager
def num_threads(threads):
    """The block runs on `threads` threads; the count before it comes back after."""
    prev = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        yield
    finally:
        ptl.set_num_threads(prev)


def capability_reruns(path):
    """The test_lower_capabilities of a file that reruns itself whole with the AVX-512 tiles
    (avx2) or every vector path (default) switched off: `test_lower_capabilities =
    capability_reruns(__file__)`.  Skipped inside such a rerun."""
    @pytest.mark.skipif(os.environ.get("PTL_CPU_CAPABILITY") is not None,
                        reason="already running with a capability chosen by a parent run")
    @pytest.mark.parametrize("capability", ["avx2", "default"])
    def test_lower_capabilities(capability):
        rerun_with_capability(path, capability)
    return test_lower_capabilities


def rerun_with_capability(path, cap, *pytest_args):
    """Runs pytest on the test file `path` in a child process whose vector loops are capped
    at `cap` (PTL_CPU_CAPABILITY: "default" for the portable loops, "avx2"), and fails with
    the end of its output if any test there fails.  A cap equal to this CPU's own capability
    is skipped: the run itself has just tested those loops; so is every rerun of a run whose
    capability its caller chose (CI's capped pass, .ci/run, runs the whole file at each cap)."""
    if CAPPED_BY_CALLER:
        pytest.skip("already running with a capability chosen by a parent run")
    skip_native_capability(cap)
    env = dict(os.environ, PTL_CPU_CAPABILITY=cap)
    r = subprocess.run([sys.executable, "-m", "pytest", path, "-x", "-q",
                        "-p", "no:cacheprovider", *pytest_args], env=env, capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


# A folder for slow references computed once per test session (reference_once): conftest.py
# makes it and names it here for the capability reruns' child sessions.
REFERENCES_ENV = "PTL_TEST_REFERENCES"


def reference_once(key, compute, x):
    """compute(x), an array of x's shape from a slow reference (mpmath at 40 digits), computed
    once per test session: the file's capability reruns (rerun_with_capability), which test
    other loops on the same points, read the value the first run stored under key and x."""
    folder = os.environ.get(REFERENCES_ENV)
    if folder is None:
        return compute(x)
    x = np.ascontiguousarray(x)
    digest = hashlib.sha256(f"{key}|{x.dtype.str}|{x.shape}".encode() + x.tobytes())
    path = os.path.join(folder, digest.hexdigest() + ".npy")
    if os.path.exists(path):
        return np.load(path)
    value = compute(x)
    part = f"{path}.{os.getpid()}.part"
    with open(part, "wb") as f:
        np.save(f, value)
    os.replace(part, path)
    return value


NP_DTYPE = {
    ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
    ptl.int32: np.int32, ptl.int64: np.int64, ptl.float16: np.float16,
    ptl.bfloat16: np.float32, ptl.float32: np.float32, ptl.float64: np.float64,
}
ALL_DTYPES = list(NP_DTYPE)
FLOAT_DTYPES = [ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64]
COMPLEX_DTYPES = [ptl.complex64, ptl.complex128]
INT_DTYPES = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]

# Without a CUDA device, what a CUDA call raises: with CUDA kernels (the nvcc build) as
# PyTorch's CUDA build on a machine without a GPU, without them as its CPU-only build.  The
# torch.cuda functions turn the latter's RuntimeError into an AssertionError, as PyTorch does.
CUDA_KERNELS = bool(ptl._C._dispatch_has_kernel_for_dispatch_key("aten::copy_", "CUDA"))
NO_CUDA_MESSAGE = ("No CUDA GPUs are available" if CUDA_KERNELS
                   else "Torch not compiled with CUDA enabled")
NO_CUDA_ERROR = (RuntimeError, NO_CUDA_MESSAGE) if CUDA_KERNELS else \
    (AssertionError, NO_CUDA_MESSAGE)

# Shapes every op is tried on: 0-dim, size-0, 1-D, 2-D, 3-D.
SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 0, 3), (2, 3, 5)]
# Pairs that broadcast.
BROADCAST_PAIRS = [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((), (2, 3)),
                   ((5,), ()), ((0, 3), (1, 3)), ((2, 1, 4), (1, 3, 1))]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]

# Tolerances per dtype for float results compared with a float64 reference.
TOL = {ptl.float16: (1e-2, 1e-2), ptl.bfloat16: (2e-2, 2e-2), ptl.float32: (1e-5, 1e-6),
       ptl.float64: (1e-12, 1e-12)}


def rng(seed=0):
    return np.random.default_rng(seed)


def random_array(shape, dtype, gen, low=-5, high=5):
    """Values representable exactly in dtype (so both sides start from the same numbers)."""
    if dtype == ptl.bool:
        return gen.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in INT_DTYPES:
        info = np.iinfo(NP_DTYPE[dtype])
        lo, hi = max(low, info.min), min(high, info.max)
        return gen.integers(lo, hi + 1, size=shape).astype(NP_DTYPE[dtype])
    a = gen.uniform(low, high, size=shape)
    if dtype == ptl.float16:
        return a.astype(np.float16)
    if dtype == ptl.bfloat16:   # round to bfloat16 through pytorchlite itself
        return ptl.tensor(a.astype(np.float32)).to(ptl.bfloat16).float().numpy()
    return a.astype(NP_DTYPE[dtype])


def make(shape, dtype, layout="contiguous", seed=0, low=-5, high=5):
    """Returns (tensor, ndarray) with equal values; the tensor is laid out as asked:
    transposed (a permuted view), sliced (a stepped view) or expanded (stride 0)."""
    gen = rng(seed)
    shape = tuple(shape)
    if layout == "contiguous" or len(shape) == 0:
        a = random_array(shape, dtype, gen, low, high)
        return ptl.tensor(a, dtype=dtype), a
    if layout == "transposed":
        a = random_array(shape[::-1], dtype, gen, low, high)
        t = ptl.tensor(a, dtype=dtype).permute(*reversed(range(len(shape))))
        return t, a.transpose()
    if layout == "sliced":
        big = tuple(2 * s for s in shape)
        a = random_array(big, dtype, gen, low, high)
        idx = tuple(slice(None, None, 2) for _ in shape)
        return ptl.tensor(a, dtype=dtype)[idx], a[idx]
    if layout == "expanded":
        small = tuple(1 if i == 0 else s for i, s in enumerate(shape))
        a = random_array(small, dtype, gen, low, high)
        return ptl.tensor(a, dtype=dtype).expand(*shape), np.broadcast_to(a, shape)
    raise ValueError(layout)


def to_numpy(t):
    """A float64 (or exact integer/bool) NumPy copy of a pytorchlite tensor."""
    if t.dtype == ptl.bfloat16:
        return np.array(t.float().numpy(), dtype=np.float64)
    a = np.array(t.resolve_conj().numpy())   # a conj view's values, not its memory
    return a.astype(np.float64) if a.dtype.kind == "f" else \
        a.astype(np.complex128) if a.dtype.kind == "c" else a


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, equal_nan=True):
    """actual: a pytorchlite tensor; expected: an ndarray (or scalar) computed in float64 or
    exactly.  Checks shape, then dtype (when given), then values."""
    assert isinstance(actual, ptl.Tensor), f"expected a Tensor, got {type(actual)}"
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, \
        f"shape mismatch: got {tuple(actual.shape)}, expected {expected.shape}"
    if dtype is not None:
        assert actual.dtype == dtype, f"dtype mismatch: got {actual.dtype}, expected {dtype}"
    got = to_numpy(actual)
    if actual.dtype in FLOAT_DTYPES:
        r, a = TOL[actual.dtype]
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        ok = np.isclose(got, expected.astype(np.float64), rtol=r, atol=a, equal_nan=equal_nan)
    elif actual.dtype in COMPLEX_DTYPES:   # each part within its real dtype's tolerance
        r, a = TOL[ptl.float32 if actual.dtype == ptl.complex64 else ptl.float64]
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        expected = expected.astype(np.complex128)
        ok = (np.isclose(got.real, expected.real, rtol=r, atol=a, equal_nan=equal_nan) &
              np.isclose(got.imag, expected.imag, rtol=r, atol=a, equal_nan=equal_nan))
    else:
        ok = got == expected
    if not np.all(ok):
        bad = np.argwhere(~ok)[0] if got.ndim else ()
        bad = tuple(int(i) for i in bad)
        raise AssertionError(
            f"value mismatch at {bad}: got {got[bad]!r}, expected {expected[bad]!r} "
            f"({int((~ok).sum())} of {ok.size} differ)")


def same_each(got, ref):
    """Elementwise: got equals ref with the same sign (so zeros match in sign), or both are
    NaN (NumPy arrays)."""
    return ((got == ref) & (np.signbit(got) == np.signbit(ref))) | (np.isnan(got) &
                                                                    np.isnan(ref))


def assert_inplace_and_out_match(name, x, whole):
    """ptl.<name> in place (Tensor.<name>_) and with out= on the float64 values x give the
    bits `whole` (the functional result): they reach the same loops."""
    y = ptl.tensor(x.copy())
    getattr(y, name + "_")()
    assert np.array_equal(y.numpy(), whole)
    out = ptl.empty(len(x), dtype=ptl.float64)
    getattr(ptl, name)(ptl.tensor(x), out=out)
    assert np.array_equal(out.numpy(), whole)


def assert_raises_like_torch(fn, exc, msg):
    """fn(torch) (when PyTorch is installed, first, so that a stale expected message shows as
    such) and fn(pytorchlite) both raise exc with a message containing msg."""
    for lib in ([torch] if torch is not None else []) + [ptl]:
        with pytest.raises(exc, match=re.escape(msg)):
            fn(lib)


def collect_all(passes=16):
    """gc.collect() until a pass finds nothing: a tensor subclass with __torch_dispatch__ is
    freed by the cycle collector, and a wrapper held inside another one only by the next
    pass (Note [Python tensors] in src/python/python_dispatch.c)."""
    for _ in range(passes):
        if gc.collect() == 0:
            return


def logging_tensor(lib, log):
    """The canonical LoggingTensor for lib (pytorchlite or torch): wraps `elem`, appends
    str(func) to log, unwraps and rewraps with tree_map."""
    tree_map_ = importlib.import_module(lib.__name__ + ".utils._pytree").tree_map

    class LoggingTensor(lib.Tensor):
        __slots__ = ["elem"]

        @staticmethod
        def __new__(cls, elem, requires_grad=False):
            r = lib.Tensor._make_wrapper_subclass(
                cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
                dtype=elem.dtype, layout=elem.layout, device=elem.device,
                requires_grad=requires_grad)
            r.elem = elem.detach() if requires_grad else elem
            return r

        def __repr__(self):
            return super().__repr__(tensor_contents=f"{self.elem}")

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(e):
                return e.elem if isinstance(e, LoggingTensor) else e

            def wrap(e):
                return LoggingTensor(e) if isinstance(e, lib.Tensor) else e
            log.append(str(func))
            out = func(*tree_map_(unwrap, args), **tree_map_(unwrap, kwargs or {}))
            return tree_map_(wrap, out)
    return LoggingTensor


def assert_no_leak(fn, times=20):
    """After a first call of fn() (which may fill caches), `times` more calls leave
    pytorchlite's live object counts where they were."""
    fn()
    collect_all()
    before = ptl._C._live_counts()
    for _ in range(times):
        fn()
    collect_all()
    assert ptl._C._live_counts() == before


def graph_kinds(graph):
    """The kinds of a jit graph's nodes in order, those of nested blocks (If, Loop) included."""
    out = []

    def walk(nodes):
        for n in nodes:
            out.append(n.kind)
            for b in n.blocks:
                walk(b.nodes)
    walk(graph.nodes)
    return out


def crandn(shape, dtype=None, layout="contiguous", seed=0):
    """(tensor, complex128 ndarray) with equal values (drawn in complex128, rounded to dtype,
    complex128 by default), laid out as asked: contiguous, transposed (a permuted view),
    sliced (a stepped view), expanded (stride 0)."""
    dtype = ptl.complex128 if dtype is None else dtype
    gen = np.random.default_rng(seed)
    npz = np.complex64 if dtype == ptl.complex64 else np.complex128

    def draw(s):
        a = gen.standard_normal(s) + 1j * gen.standard_normal(s)
        return a.astype(npz).astype(np.complex128)
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        a = draw(shape[::-1])
        return ptl.tensor(a, dtype=dtype).permute(*reversed(range(len(shape)))), a.transpose()
    if layout == "sliced" and len(shape) >= 1:
        a = draw(tuple(2 * s for s in shape))
        index = tuple(slice(None, None, 2) for _ in shape)
        return ptl.tensor(a, dtype=dtype)[index], a[index]
    if layout == "expanded" and len(shape) >= 1:
        a = draw((1,) + shape[1:])
        return ptl.tensor(a, dtype=dtype).expand(*shape), np.broadcast_to(a, shape)
    a = draw(shape)
    return ptl.tensor(a, dtype=dtype), a


def assert_binary_bits_in_layouts(fn, a, x, dtype, each_alone):
    """fn(a, x) of the float64 arrays a, x (1-D, one size) converted to the ptl dtype gives
    the same bits strided, with each row of a[:9, None] broadcast against x as with that a
    alone, and (each_alone) each element as it comes alone: kernels whose blocks and lanes
    must not change an element's value."""
    def same(u, v):
        return u.shape == v.shape and bool(same_each(u, v).all())
    at, xt = ptl.tensor(a, dtype=dtype), ptl.tensor(x, dtype=dtype)
    got = fn(at, xt).numpy()
    strided = fn(ptl.tensor(np.repeat(a, 2), dtype=dtype)[::2],
                 ptl.tensor(np.repeat(x, 2), dtype=dtype)[::2]).numpy()
    assert same(strided, got), len(a)
    if each_alone:
        one = [fn(ptl.tensor([u], dtype=dtype), ptl.tensor([v], dtype=dtype)).item()
               for u, v in zip(a, x)]
        assert same(np.array(one, dtype=got.dtype), got), len(a)
    if len(a):
        rows = fn(at[:9, None], xt).numpy()
        for r in range(rows.shape[0]):
            alone = fn(ptl.full((len(a),), float(at[r].item()), dtype=dtype), xt).numpy()
            assert same(rows[r], alone), len(a)


def assert_large_sample_law(x, mean, var, mu4=None, seed=None):
    """x: a large sample of a law with this mean and variance (and fourth central moment mu4;
    3 var^2, the normal's, by default).  Its mean and variance lie within 5 standard errors,
    and where the standard deviation is 1e4 or more (the law's discreteness is then invisible)
    the standardised draws fall into 40 bins of equal normal probability as a chi-square test
    (p > 1e-4) allows.  The deviations are taken from `mean` in float64, so draws near 1e17
    keep their spread.  seed: printed on failure."""
    from scipy import stats

    n = x.size
    dev = np.asarray(x, dtype=np.float64) - mean
    mu4 = 3 * var * var if mu4 is None else mu4
    z_mean = dev.mean() / np.sqrt(var / n)
    z_var = (dev.var() - var) / np.sqrt(max(mu4 - var * var, 0.0) / n)
    assert abs(z_mean) < 5 and abs(z_var) < 5, (seed, z_mean, z_var, dev.var() / var)
    if var >= 1e8:
        edges = stats.norm.ppf(np.linspace(0, 1, 41)[1:-1])
        counts = np.bincount(np.searchsorted(edges, dev / np.sqrt(var)), minlength=40)
        chi2 = ((counts - n / 40) ** 2 / (n / 40)).sum()
        assert stats.chi2.sf(chi2, 39) > 1e-4, (seed, chi2)
