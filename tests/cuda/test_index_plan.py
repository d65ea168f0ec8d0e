"""The index and join kernels' plans and index arithmetic (src/cuda/index_plan.c and
index_plan.h, compiled by gcc here and by nvcc for index.cu), checked on the host: with
_C._cuda_kernel_emulation on, gather, scatter (src, value, reduce=), scatter_add,
scatter_reduce, advanced indexing, index_select / index_add / index_copy / index_fill /
index_put, cat / stack, masked_fill, take, flip, roll, rot90, repeat, tril and triu on CPU
tensors go through the CUDA path (the
CPU kernel's checks and output, then the kernels' per-thread loops and grid loops run on the
host) and must reproduce a NumPy reference that rounds each step as the kernels do (exact
for integers, float32 and float64; float16 and bfloat16 within their rounding, and bit for
bit the CPU kernel's), under tunings that give grids of one block (grid-stride loops) and
many, scatters whose rows are one chunk and many, for every dtype, int32 and int64 indices,
repeated and negative indices, 0-dim, size-0 and non-contiguous tensors, every error path
and the gradients. Needs no device and no nvcc."""
import numpy as np
import pytest

import pytorchlite as ptl
from kernel_emulation import TUNINGS, emulated

DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64]
INTS = {ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64}
# NumPy's type for the exact step-by-step reference (None: float16 / bfloat16, compared
# with a tolerance to float64 and bit for bit with the CPU kernel)
NP = {ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
      ptl.int32: np.int32, ptl.int64: np.int64, ptl.float32: np.float32,
      ptl.float64: np.float64, ptl.float16: None, ptl.bfloat16: None}


def values(rng, shape, dtype):
    """random values of dtype (small integers, so that products stay exact in float64)"""
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if dtype in INTS:
        lo = 0 if dtype == ptl.uint8 else -4
        return ptl.tensor(rng.integers(lo, 5, size=shape)).to(dtype)
    return ptl.tensor(rng.standard_normal(shape) * 2).to(dtype)


def as_f64(t):
    return t.to(ptl.float64).numpy()


def bits(t):
    """t's raw bytes (exact comparison, NaN included)"""
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def layouts(rng, shape, dtype, make=values):
    """t of `shape` contiguous and as a non-contiguous view (a transposed copy, then a
    slice with a step), the same values"""
    t = make(rng, shape, dtype)
    if len(shape) < 2:
        big = make(rng, tuple(2 * s for s in shape), dtype)
        sl = big[tuple(slice(None, None, 2) for _ in shape)] if shape else big
        sl.copy_(t)
        return [t, sl]
    tr = t.transpose(0, 1).contiguous().transpose(0, 1)
    return [t, tr]


def index_of(rng, shape, size, dtype=ptl.int64):
    return ptl.tensor(rng.integers(0, max(size, 1), size=shape)).to(dtype)


def gather_ref(x, dim, idx):
    out = np.empty(idx.shape, x.dtype)
    for c in np.ndindex(*idx.shape):
        s = list(c)
        if x.ndim:
            s[dim] = idx[c]
        out[c] = x[tuple(s)] if x.ndim else x
    return out


def round_bf16(x):
    """x rounded to bfloat16 (to nearest, ties to even), as a float"""
    u = np.array(x, np.float32).view(np.uint32)
    u = (u + np.uint32(0x7FFF) + ((u >> 16) & 1)) & np.uint32(0xFFFF0000)
    return float(u.view(np.float32))


ROUND = {ptl.float16: lambda x: float(np.float16(x)), ptl.bfloat16: round_bf16}


def scatter_ref(self, dim, idx, src, reduce, include_self, npt, rnd=None):
    """self (reduce)= src at idx in index's row-major order, each step rounded to npt (None:
    float64, rounded by rnd); reduce as scatter_reduce names it, or None"""
    out = self.astype(np.float64 if npt is None else npt).copy()
    count = np.zeros(out.shape, np.int64)
    for c in np.ndindex(*idx.shape):
        t = list(c)
        if out.ndim:
            t[dim] = idx[c]
        t = tuple(t)
        v = src[c] if np.ndim(src) else src
        first = not include_self and count[t] == 0
        if reduce is None or first:
            out[t] = v
        elif reduce in ("sum", "mean"):
            out[t] = out[t] + v if out.dtype != np.bool_ else out[t] or v
        elif reduce == "prod":
            out[t] = out[t] * v if out.dtype != np.bool_ else out[t] and v
        elif reduce == "amax":
            out[t] = v if v > out[t] or np.isnan(v) and not np.isnan(out[t]) else out[t]
        else:
            out[t] = v if v < out[t] or np.isnan(v) and not np.isnan(out[t]) else out[t]
        out[t] = out[t] if rnd is None else rnd(out[t])
        count[t] += 1
    if reduce == "mean":
        for t in np.ndindex(*out.shape):
            if count[t] == 0:
                continue
            c = count[t] + include_self
            out[t] = out[t] // c if np.issubdtype(out.dtype, np.integer) else out[t] / c
            out[t] = out[t] if rnd is None else rnd(out[t])
    return out


# (self shape, index shape, dim): 0-dim, 1-D, 2-D and 3-D, size 0, index smaller than self
# in the other dims, dims given negative; rows and fibers around the tunings' thresholds
SHAPES = [((), (), 0), ((5,), (7,), 0), ((5,), (0,), 0), ((1,), (40,), -1),
          ((4, 6), (3, 5), 0), ((4, 6), (3, 5), 1), ((3, 70), (2, 65), -1),
          ((70, 3), (130, 2), 0), ((2, 3, 4), (2, 2, 4), 1), ((2, 3, 4), (1, 3, 9), 2),
          ((3, 0), (3, 0), 1), ((0, 4), (2, 4), 1)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for sshape, ishape, dim in SHAPES:
            if 0 in sshape and 0 not in ishape:
                continue
            size = sshape[dim] if sshape else 1
            for itype in (ptl.int64, ptl.int32):
                for x in layouts(rng, sshape, dtype):
                    for idx in layouts(rng, ishape, itype, lambda r, s, d: index_of(r, s, size, d)):
                        got = x.gather(dim, idx)
                        want = gather_ref(as_f64(x), dim % max(len(sshape), 1), idx.numpy())
                        assert got.dtype == dtype and tuple(got.shape) == ishape
                        np.testing.assert_array_equal(as_f64(got), want)
    assert ran["gather"] > 0


REDUCES = [("scatter", None, True), ("scatter_value", None, True), ("add", "sum", True),
           ("multiply", "prod", True), ("scatter_add", "sum", True)] + [
    ("two", r, inc) for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)]


def run_scatter(kind, x, dim, idx, src, reduce, include_self, inplace):
    if kind == "scatter":
        return x.scatter_(dim, idx, src) if inplace else x.scatter(dim, idx, src)
    if kind == "scatter_value":
        v = 1 if x.dtype in INTS else 1.5
        return x.scatter_(dim, idx, v) if inplace else x.scatter(dim, idx, v)
    if kind in ("add", "multiply"):
        return (x.scatter_(dim, idx, src, reduce=kind) if inplace
                else x.scatter(dim, idx, src, reduce=kind))
    if kind == "scatter_add":
        return x.scatter_add_(dim, idx, src) if inplace else x.scatter_add(dim, idx, src)
    fn = x.scatter_reduce_ if inplace else x.scatter_reduce
    return fn(dim, idx, src, reduce, include_self=include_self)


@pytest.mark.filterwarnings("ignore:overflow")   # integer products wrap, as the kernels'
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_family_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(1)
    npt = NP[dtype]
    for sshape, ishape, dim in SHAPES:
        if 0 in sshape and 0 not in ishape:
            continue
        size = sshape[dim] if sshape else 1
        d = dim % max(len(sshape), 1)
        for kind, reduce, inc in REDUCES:
            if (reduce == "mean" and dtype == ptl.bool) or (
                    kind == "multiply" and dtype == ptl.bool):
                continue
            for inplace in (False, True):
                xs = layouts(rng, sshape, dtype)
                src = layouts(rng, ishape, dtype)[1]
                # int32 indices, repeated (few rows: many values per element)
                idx = index_of(rng, ishape, min(size, 3), ptl.int32 if inplace else ptl.int64)
                want_cpu = run_scatter(kind, xs[0].clone(), dim, idx, src, reduce, inc, inplace)
                for x in xs:
                    before = x.clone()
                    with emulated(TUNINGS[tuning]):
                        got = run_scatter(kind, x, dim, idx, src, reduce, inc, inplace)
                    assert (got is x) == inplace
                    assert bits(got) == bits(want_cpu), (sshape, ishape, kind, reduce, inc)
                    v = (1 if dtype in INTS else 1.5) if kind == "scatter_value" else None
                    s = as_f64(src) if v is None else v
                    if npt is not None:
                        s = np.asarray(s).astype(npt) if v is None else npt(v)
                        want = scatter_ref(before.numpy().astype(npt), d, idx.numpy(), s,
                                           reduce, inc, npt)
                        np.testing.assert_array_equal(got.numpy(), want)
                    else:
                        want = scatter_ref(as_f64(before), d, idx.numpy(), s, reduce, inc, None,
                                           ROUND[dtype])
                        rtol = 1e-3 if dtype == ptl.float16 else 1e-2
                        np.testing.assert_allclose(as_f64(got), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_scatter_plans_one_chunk_and_many(tuning):
    """Many fibers over few rows (one chunk when the fibers alone fill target_blocks full
    blocks: 280000 under the device tuning) and one long fiber into many rows (chunked under
    every tuning): scatter_add and the mean in float32 repeat the CPU kernel's bits."""
    rng = np.random.default_rng(2)
    cases = []
    for sshape, ishape, dim in (((2, 280000), (3, 280000), 0), ((1000,), (5000,), 0),
                                ((33, 65), (40, 65), 0)):
        idx = index_of(rng, ishape, sshape[dim])
        src = values(rng, ishape, ptl.float32)
        cases.append((sshape, dim, idx, src, ptl.zeros(sshape).scatter_add(dim, idx, src),
                      ptl.ones(sshape).scatter_reduce(dim, idx, src, "mean")))
    with emulated(TUNINGS[tuning]) as ran:
        for sshape, dim, idx, src, want, want_mean in cases:
            assert bits(ptl.zeros(sshape).scatter_add(dim, idx, src)) == bits(want)
            mean = ptl.ones(sshape).scatter_reduce(dim, idx, src, "mean")
            assert bits(mean) == bits(want_mean)
    assert ran["scatter_chunked"] > 0
    if tuning == "device":
        assert ran["scatter"] > 0


def test_amax_and_amin_take_nan_as_the_cpu_kernel():
    x = ptl.tensor([[1.0, float("nan"), 3.0], [0.0, 5.0, -1.0]])
    src = ptl.tensor([[float("nan"), 2.0, 4.0], [2.0, float("nan"), -3.0]])
    idx = ptl.tensor([[1, 0, 0], [1, 0, 1]])
    for reduce in ("amax", "amin"):
        for inc in (True, False):
            want = x.scatter_reduce(0, idx, src, reduce, include_self=inc)
            with emulated(TUNINGS["tiny"]):
                got = x.scatter_reduce(0, idx, src, reduce, include_self=inc)
            assert bits(got) == bits(want)


def cpu_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# bad indices: too large, negative, several (the first in row-major order is reported)
BAD = [[[0, 3, 1], [2, 0, 1]], [[0, 1, -1], [2, 0, 1]], [[0, 1, 2], [7, -2, 9]],
       [[0, 1, 2], [2, 0, 5]]]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("itype", [ptl.int64, ptl.int32], ids=str)
def test_bad_indices_raise_the_cpu_kernels_error(tuning, itype):
    x = ptl.arange(9.0).reshape(3, 3)
    src = ptl.ones(2, 3)
    for bad in BAD:
        idx = ptl.tensor(bad).to(itype)
        calls = [lambda: x.gather(0, idx), lambda: x.scatter(0, idx, src),
                 lambda: x.scatter(0, idx, 2.0), lambda: x.scatter_add(0, idx, src),
                 lambda: x.scatter(0, idx, src, reduce="multiply"),
                 lambda: x.scatter_reduce(0, idx, src, "mean", include_self=False),
                 lambda: x.t().gather(1, idx.t()), lambda: x.clone().scatter_add_(0, idx, src)]
        for fn in calls:
            want = cpu_error(fn)
            with emulated(TUNINGS[tuning]):
                got = cpu_error(fn)
            assert got == want
    assert "out of bounds for dimension 0 with size 3" in want[1]


def test_argument_errors_are_the_cpu_kernels():
    """The checks stay the CPU kernel's: they raise before any kernel runs."""
    x = ptl.zeros(3, 4)
    idx = ptl.tensor([[0, 1]])
    calls = [lambda: x.gather(0, idx.float()), lambda: x.gather(0, ptl.tensor([0, 1])),
             lambda: x.gather(0, ptl.zeros(2, 5, dtype=ptl.int64)),
             lambda: x.scatter(0, idx, ptl.ones(1, 2, dtype=ptl.float64)),
             lambda: x.scatter(0, idx, ptl.ones(1, 1)),
             lambda: x.scatter_reduce(0, idx, ptl.ones(1, 2), "median"),
             lambda: x.scatter(0, idx, ptl.ones(1, 2), reduce="max"),
             lambda: x.bool().scatter_reduce(0, idx, ptl.ones(1, 2).bool(), "mean"),
             lambda: x.gather(2, idx)]
    for fn in calls:
        want = cpu_error(fn)
        with emulated(TUNINGS["small"]) as ran:
            got = cpu_error(fn)
        assert got == want
        assert ran["gather"] == ran["scatter"] == ran["scatter_chunked"] == 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradients_through_gather_and_scatter(tuning):
    """gather's backward is a scatter_add, scatter's and scatter_add's a gather (and a
    scatter of zeros): all through the emulated kernels, the CPU kernel's bits and NumPy's
    values in float64."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((5, 7))
    idx = ptl.tensor(rng.integers(0, 5, size=(9, 7)))
    gv = rng.standard_normal((9, 7))
    sv = rng.standard_normal((9, 7))

    def grads():
        x = ptl.tensor(xv).requires_grad_(True)
        s = ptl.tensor(sv).requires_grad_(True)
        (x.gather(0, idx) * ptl.tensor(gv)).sum().backward()
        gx = x.grad.clone()
        x.grad = None
        y = x.scatter(0, idx[:5], s[:5]) * 2 + x.scatter_add(0, idx, s)
        (y * ptl.tensor(xv)).sum().backward()
        return gx, x.grad, s.grad

    want = grads()
    with emulated(TUNINGS[tuning]) as ran:
        got = grads()
    for g, w in zip(got, want):
        assert bits(g) == bits(w)
    ref = np.zeros_like(xv)
    np.add.at(ref, (idx.numpy(), np.arange(7)[None, :].repeat(9, 0)), gv)
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=1e-12, atol=1e-12)
    assert ran["gather"] > 0 and ran["scatter"] + ran["scatter_chunked"] > 0


@pytest.mark.parametrize("threads", [1, 2])
def test_results_do_not_depend_on_the_thread_count(threads):
    rng = np.random.default_rng(5)
    idx = index_of(rng, (300, 40), 50)
    src = values(rng, (300, 40), ptl.float32)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        want = ptl.zeros(50, 40).scatter_add(0, idx, src)
        with emulated(TUNINGS["small"]):
            got = ptl.zeros(50, 40).scatter_add(0, idx, src)
    finally:
        ptl.set_num_threads(old)
    assert bits(got) == bits(want)


# ---- advanced indexing and the index_* family (index.c's tables, index.cu's kernels) ----

def np_of(t):
    """t as NumPy (float64 for float16 and bfloat16)"""
    return as_f64(t) if t.dtype in (ptl.float16, ptl.bfloat16) else t.numpy()


def index_cases(rng, x):
    """(name, fn(x) -> tensor, NumPy reference of np x or None) over a [4, 5, 6] x"""
    i = ptl.tensor([3, -1, 0, 3, 2])             # repeated and negative
    i32 = ptl.tensor([[1, 0], [-4, 1]]).int()
    j = ptl.tensor([4, 0, 4])
    mask = ptl.tensor(rng.integers(0, 2, size=(4, 5)).astype(bool))
    istr = ptl.tensor([0, 9, 2, 9, 1, 9, 3])[::2]   # non-contiguous index
    return [
        ("x[i]", lambda t: t[i], lambda a: a[i.numpy()]),
        ("x[:, j]", lambda t: t[:, j], lambda a: a[:, j.numpy()]),
        ("x[i32]", lambda t: t[i32], lambda a: a[i32.numpy()]),
        ("x[i, :, i]", lambda t: t[i, :, i], lambda a: a[i.numpy(), :, i.numpy()]),
        ("x[:, j, j]", lambda t: t[:, j, j], lambda a: a[:, j.numpy(), j.numpy()]),
        ("x[mask]", lambda t: t[mask], lambda a: a[mask.numpy()]),
        ("x[istr]", lambda t: t[istr], lambda a: a[istr.numpy()]),
        ("x[empty]", lambda t: t[ptl.tensor([], dtype=ptl.int64)], lambda a: a[[]]),
        ("index_select 0", lambda t: t.index_select(0, istr), lambda a: a[istr.numpy()]),
        ("index_select 2", lambda t: t.index_select(2, j), lambda a: a[:, :, j.numpy()]),
        ("index_select 0-dim", lambda t: t[1, 2, 3].index_select(0, ptl.tensor([0, 0])),
         lambda a: np.array([a[1, 2, 3]] * 2)),
    ]


def put_cases(rng, x):
    """(name, fn(x) -> tensor): the scatters, in place on x or functional"""
    dt = x.dtype
    i = ptl.tensor([3, -1, 0, 3, 3])
    j = ptl.tensor([4, 0, 4, 4])
    v = values(rng, (5, 5, 6), dt)
    vt = values(rng, (6, 5, 5), dt).permute(2, 1, 0)         # non-contiguous values
    row = values(rng, (6,), dt)
    src1 = values(rng, (4, 4, 6), dt)
    src1t = values(rng, (4, 6, 4), dt).transpose(1, 2)    # non-contiguous source
    one = True if dt == ptl.bool else 2
    mask = ptl.tensor(rng.integers(0, 2, size=(4, 5)).astype(bool))
    cases = [
        ("put", lambda t: t.index_put_((i,), v)),
        ("put acc", lambda t: t.index_put_((i,), v, accumulate=True)),
        ("put acc strided", lambda t: t.index_put((i,), vt, accumulate=True)),
        ("put broadcast row", lambda t: t.index_put((i, ptl.tensor([1])), row, accumulate=True)),
        ("setitem number", lambda t: t.__setitem__((slice(None), j), one) or t),
        ("put mask", lambda t: t.index_put_((mask,), row)),
        ("index_copy", lambda t: t.index_copy(1, ptl.tensor([4, 0, 2, 1]), src1t)),
        ("index_fill", lambda t: t.index_fill(2, ptl.tensor([5, -1, 0]), one)),
        ("index_fill_ 0-dim", lambda t: t[0, 0, 0].index_fill_(0, ptl.tensor(0), one)),
    ]
    if dt != ptl.bool:
        cases += [("index_add", lambda t: t.index_add(1, j, src1[:, :4], alpha=3)),
                  ("index_add_", lambda t: t.index_add_(0, i[:4] % 4, v[:4]))]
    return cases


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_advanced_indexing_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(6)
    base = values(rng, (4, 5, 6), dtype)
    xs = [base, base.transpose(0, 2).contiguous().transpose(0, 2)]
    for name, fn, ref in index_cases(rng, base):
        want = fn(base)
        for x in xs:
            with emulated(TUNINGS[tuning]):
                got = fn(x)
            assert got.shape == want.shape and bits(got) == bits(want), name
            np.testing.assert_array_equal(np_of(got), ref(np_of(base)))
    for name, fn in put_cases(rng, base):
        want = fn(base.clone())
        for x in xs:
            with emulated(TUNINGS[tuning]) as ran:
                got = fn(x.clone())
            assert got.shape == want.shape and bits(got) == bits(want), name
            assert ran["index_scatter"] > 0, name


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64], ids=str)
def test_index_put_accumulate_matches_numpy_add_at(dtype):
    """Repeated indices accumulate in index order, one rounding per value: np.add.at's."""
    rng = np.random.default_rng(7)
    x = values(rng, (50, 3), dtype)
    i = ptl.tensor(rng.integers(-50, 50, size=700))
    v = values(rng, (700, 3), dtype)
    for tuning in TUNINGS.values():
        with emulated(tuning):
            got = x.index_put((i,), v, accumulate=True)
            added = x.index_add(0, i % 50, v, alpha=2)
        want = x.numpy().copy()
        np.add.at(want, i.numpy(), v.numpy())
        np.testing.assert_array_equal(got.numpy(), want)
        want = x.numpy().copy()
        np.add.at(want, i.numpy() % 50, v.numpy() * 2)
        np.testing.assert_array_equal(added.numpy(), want)


def test_index_errors_are_the_cpu_kernels():
    x = ptl.zeros(4, 5)
    calls = [lambda: x[ptl.tensor([4])], lambda: x[:, ptl.tensor([0, -6])],
             lambda: x.index_select(0, ptl.tensor([0, 4])),
             lambda: x.index_select(1, ptl.tensor([-1])),
             lambda: x.clone().index_add_(0, ptl.tensor([7]), ptl.ones(1, 5)),
             lambda: x.index_copy(0, ptl.tensor([-1]), ptl.ones(1, 5)),
             lambda: x.index_fill(1, ptl.tensor([9]), 1.0),
             lambda: x.index_put((ptl.tensor([1, 2]),), ptl.ones(3, 5)),
             lambda: x[ptl.tensor([[True, False]])],
             lambda: x[ptl.tensor([0.5])]]
    for fn in calls:
        want = cpu_error(fn)
        with emulated(TUNINGS["tiny"]) as ran:
            got = cpu_error(fn)
        assert got == want
        assert ran["index_gather"] == ran["index_scatter"] == 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradients_through_indexing_and_index_select(tuning):
    """x[i]'s and index_select's backward accumulate with repeated indices (index_put /
    index_add through the emulated kernels): the CPU kernel's bits."""
    rng = np.random.default_rng(8)
    xv = rng.standard_normal((30, 8))
    i = ptl.tensor(rng.integers(-30, 30, size=100))
    gv = ptl.tensor(rng.standard_normal((100, 8)))

    def grads():
        x = ptl.tensor(xv).float().requires_grad_(True)
        (x[i] * gv.float()).sum().backward()
        (x.index_select(0, i % 30) * gv.float()).sum().backward()
        (x[:, ptl.tensor([1, 1, 7])] ** 2).sum().backward()
        return x.grad

    want = grads()
    with emulated(TUNINGS[tuning]) as ran:
        got = grads()
    assert bits(got) == bits(want)
    assert ran["index_gather"] > 0 and ran["index_scatter"] > 0


# ---- cat (join.c's checks, index.cu's one launch over the inputs' table) ----

def cat_inputs(rng, dtype, dim, n, shape=(3, 4, 5)):
    """n inputs joined along dim: sizes along dim 0 to 7, contiguous, transposed or sliced"""
    out = []
    for k in range(n):
        s = list(shape)
        s[dim] = int(rng.integers(0, 8))
        t = values(rng, tuple(s), dtype)
        if k % 3 == 1:
            t = t.transpose(0, 2).contiguous().transpose(0, 2)
        elif k % 3 == 2:
            s2 = list(s)
            s2[-1] *= 2
            t = values(rng, tuple(s2), dtype)[..., ::2]
        out.append(t)
    return out


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(9)
    cases = []
    for dim in (0, 1, 2, -1):
        for n in (1, 2, 7, 40):
            ts = cat_inputs(rng, dtype, dim % 3, n)
            cases.append((ts, dim))
    # the legacy [0]-shaped input, ignored by the shape checks
    cases.append(([values(rng, (2, 3), dtype), ptl.empty(0, dtype=dtype),
                   values(rng, (4, 3), dtype)], 0))
    cases.append(([ptl.empty(0, dtype=dtype)], 0))
    for ts, dim in cases:
        want = ptl.cat(ts, dim)
        with emulated(TUNINGS[tuning]) as ran:
            got = ptl.cat(ts, dim)
        assert got.shape == want.shape and got.dtype == dtype and bits(got) == bits(want)
        keep = [np_of(t) for t in ts if tuple(t.shape) != (0,)]
        if keep:
            np.testing.assert_array_equal(np_of(got), np.concatenate(keep, dim))
        assert ran["cat"] == (got.numel() > 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_cat_of_mixed_dtypes_and_the_joins_built_on_it(tuning):
    rng = np.random.default_rng(10)
    a = values(rng, (2, 3), ptl.int32)
    b = values(rng, (4, 3), ptl.float32)
    c = values(rng, (1, 3), ptl.float16)
    d = values(rng, (2, 3), ptl.bool)
    calls = [lambda: ptl.cat([a, b, c, d]), lambda: ptl.cat([d, a]),
             lambda: ptl.stack([a, d, a.t().contiguous().t()], 1),
             lambda: ptl.stack([b[0], b[1]], -1), lambda: ptl.hstack([b, b[:, :1]]),
             lambda: ptl.hstack([b[0], c[0]]), lambda: ptl.vstack([b[0], b]),
             lambda: ptl.concat([b, b], 1)]
    for fn in calls:
        want = fn()
        with emulated(TUNINGS[tuning]) as ran:
            got = fn()
        assert got.dtype == want.dtype and bits(got) == bits(want)
        assert ran["cat"] == 1


def test_cat_errors_are_the_cpu_kernels():
    x = ptl.zeros(2, 3)
    calls = [lambda: ptl.cat([]), lambda: ptl.cat([x, ptl.zeros(2, 4)]),
             lambda: ptl.cat([x, ptl.zeros(3)]), lambda: ptl.cat([x, ptl.tensor(1.0)]),
             lambda: ptl.cat([x, x], 2), lambda: ptl.stack([x, ptl.zeros(3, 2)])]
    for fn in calls:
        want = cpu_error(fn)
        with emulated(TUNINGS["tiny"]) as ran:
            got = cpu_error(fn)
        assert got == want
        assert ran["cat"] == 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradients_through_cat_and_stack(tuning):
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((3, k)) for k in (2, 5, 1)]
    g = ptl.tensor(rng.standard_normal((3, 8)))

    def grads():
        ts = [ptl.tensor(x).requires_grad_(True) for x in xs]
        (ptl.cat(ts, 1) * g).sum().backward()
        (ptl.stack([ts[0], ts[0] * 2], 0) ** 2).sum().backward()
        return [t.grad for t in ts]

    want = grads()
    with emulated(TUNINGS[tuning]) as ran:
        got = grads()
    for a, b in zip(got, want):
        assert bits(a) == bits(b)
    np.testing.assert_array_equal(got[1].numpy(), g.numpy()[:, 2:7])
    assert ran["cat"] >= 2


# ---- masked_fill and take (Note [CUDA masked_fill and take]) ----

def fill_value(dtype):
    return True if dtype == ptl.bool else (3 if dtype in INTS else -1.25)


def masked_fill_cases(rng, dtype):
    """(self, mask, value): broadcast masks, a transposed self, 0-dim and size-0 tensors,
    Scalar and 0-dim Tensor values"""
    v = fill_value(dtype)
    x = values(rng, (3, 4, 5), dtype)
    m = lambda *s: ptl.tensor(rng.integers(0, 2, size=s).astype(bool))  # noqa: E731
    return [
        (x, m(3, 4, 5), v), (x, m(4, 1), v), (x, m(5), ptl.tensor(v).to(dtype)),
        (x.transpose(0, 2), m(3, 4, 5).transpose(0, 2), v),
        (x[:, ::2, 1:], m(1, 2, 4), ptl.tensor(v)), (values(rng, (), dtype), m(), v),
        (values(rng, (6,), dtype), ptl.tensor(True), v), (values(rng, (0, 3), dtype), m(3), v),
        (values(rng, (70, 33), dtype), m(70, 33), v),   # past one block of every tuning
    ]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_fill_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(20)
    for x, m, v in masked_fill_cases(rng, dtype):
        want = x.masked_fill(m, v)
        y = x.clone()
        y.masked_fill_(m, v)
        with emulated(TUNINGS[tuning]) as ran:
            got = x.masked_fill(m, v)
            z = x.clone()
            z.masked_fill_(m, v)
        value = v.item() if isinstance(v, ptl.Tensor) else v
        ref = np.where(m.numpy(), np.array(value).astype(np_of(x).dtype), np_of(x))
        np.testing.assert_array_equal(np_of(got), ref)
        assert bits(got) == bits(want) and bits(z) == bits(y)
        assert got.shape == want.shape and got.stride() == want.stride()
        assert ran["select"] == (2 if x.numel() else 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_masked_fill_keeps_the_cpu_errors_and_its_gradient(tuning):
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    m = ptl.tensor(np.random.default_rng(21).integers(0, 2, (3, 4)).astype(bool))
    calls = [lambda: x.detach().masked_fill(m.to(ptl.uint8), 1.0),
             lambda: x.detach().masked_fill(m, ptl.ones(2)),
             lambda: x.detach().masked_fill_(ptl.ones(2, 3, 4, dtype=ptl.bool), 1.0)]
    for fn in calls:
        want = cpu_error(fn)
        with emulated(TUNINGS[tuning]):
            assert cpu_error(fn) == want
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(lambda x: x.masked_fill(m, 0.5) * x, (x,))


def take_cases(rng, dtype):
    """(self, index): any layouts, negative indices, 0-dim and size-0 tensors"""
    x = values(rng, (4, 5, 3), dtype)
    i = lambda n, *s: ptl.tensor(rng.integers(-n, n, size=s))  # noqa: E731
    return [
        (x, i(60, 7)), (x.transpose(0, 2), i(60, 3, 4)), (x[:, ::2], i(36, 2, 5)[:, ::2]),
        (x, i(60, 4, 3).t()), (values(rng, (), dtype), i(1)), (values(rng, (), dtype), i(1, 5)),
        (x, i(60, 0)), (values(rng, (0, 2), dtype), i(1, 0)),
        (values(rng, (40, 40), dtype), i(1600, 300)),   # past one block of every tuning
    ]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_take_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(22)
    for x, idx in take_cases(rng, dtype):
        want = x.take(idx)
        with emulated(TUNINGS[tuning]) as ran:
            got = x.take(idx)
        np.testing.assert_array_equal(np_of(got), np_of(x).reshape(-1)[idx.numpy()])
        assert bits(got) == bits(want) and got.shape == idx.shape
        assert ran["take"] == (1 if idx.numel() else 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_take_raises_the_cpu_error_for_the_first_bad_index(tuning):
    x = ptl.arange(12.0).reshape(3, 4)
    for bad in ([[0, 12], [5, 1]], [[0, 1], [-13, 20]], [[30, 1], [-13, 2]]):
        for idx in (ptl.tensor(bad), ptl.tensor(bad).t()):
            want = cpu_error(lambda: x.take(idx))
            with emulated(TUNINGS[tuning]):
                assert cpu_error(lambda: x.take(idx)) == want
            assert want[0] is IndexError
    assert cpu_error(lambda: x.take(ptl.tensor([0, 2], dtype=ptl.int32)))[0] is RuntimeError


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradcheck_of_take_through_the_emulation(tuning):
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    idx = ptl.tensor([[0, -1, 5], [5, 11, 2]])
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(lambda x: x.take(idx), (x,))
        assert ptl.autograd.gradcheck(lambda x: x.t().take(idx), (x,))


# ---- shape.c's movers: flip, roll, rot90, repeat (offset tables), tril, triu ----

MOVERS = [
    ("flip", lambda t: t.flip(1)), ("flip2", lambda t: t.flip((0, -1))),
    ("roll", lambda t: t.roll((2, -1), (1, 2))), ("roll flat", lambda t: t.roll(-7)),
    ("rot90", lambda t: t.rot90(1, (1, 2))), ("rot90 3", lambda t: t.rot90(3, (0, 2))),
    ("repeat", lambda t: t.repeat(2, 1, 3, 1)), ("tril", lambda t: t.tril()),
    ("triu", lambda t: t.triu(1)), ("tril -2", lambda t: t.tril(-2)),
    ("tril_", lambda t: t.clone().tril_(2)),
    ("triu_ strided", lambda t: t.clone().mT.triu_(-1).mT),
]


def mover_inputs(rng, dtype):
    """a [3, 4, 5] tensor contiguous, transposed and sliced; a size-0 one; one past a block"""
    x = values(rng, (3, 4, 5), dtype)
    big = values(rng, (2, 40, 37), dtype)
    strided = values(rng, (3, 8, 10), dtype)[:, ::2, ::2]
    return [x, x.transpose(0, 2).contiguous().transpose(0, 2), strided,
            values(rng, (3, 0, 5), dtype), big]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_flip_roll_rot90_repeat_tril_triu_have_the_cpu_bits(tuning, dtype):
    rng = np.random.default_rng(23)
    for x in mover_inputs(rng, dtype):
        for name, fn in MOVERS:
            want = fn(x)
            with emulated(TUNINGS[tuning]) as ran:
                got = fn(x)
            assert got.shape == want.shape and bits(got) == bits(want), name
            if x.numel() and name.startswith(("tril", "triu")):
                assert ran["triangle"] == 1
            elif x.numel():
                assert ran["shape_gather"] == 1


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_movers_of_0_dim_tensors_and_their_gradients(tuning):
    rng = np.random.default_rng(24)
    s = ptl.tensor(2.5)
    x = ptl.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
    with emulated(TUNINGS[tuning]):
        assert bits(s.flip(())) == bits(s) and bits(s.roll(3)) == bits(s)
        assert bits(s.repeat(2, 3)) == bits(ptl.full((2, 3), 2.5))
        for name, fn in MOVERS:
            assert ptl.autograd.gradcheck(fn, (x,)), name
    np.testing.assert_array_equal(np.flip(x.detach().numpy(), 1), x.flip(1).detach().numpy())
    np.testing.assert_array_equal(np.tril(x.detach().numpy(), -2),
                                  x.tril(-2).detach().numpy())


def where_cases(rng, dtype):
    """(condition, self, other): broadcasting, transposed operands, Python numbers and 0-dim
    tensors (passed by value), mixed dtypes (promoted by the iterator), 0-dim, size-0"""
    x, y = values(rng, (3, 4, 5), dtype), values(rng, (4, 1), dtype)
    c = lambda *s: ptl.tensor(rng.integers(0, 2, size=s).astype(bool))  # noqa: E731
    num = True if dtype == ptl.bool else 2
    return [
        (c(3, 4, 5), x, y), (c(5), x, num), (c(4, 1), num, x), (ptl.tensor(True), x, y),
        (c(5, 4, 3).transpose(0, 2), x.transpose(0, 2).contiguous().transpose(0, 2), y),
        (c(3, 4, 5), x, ptl.tensor(num).to(dtype)), (c(3, 4, 5), x, values(rng, (5,), ptl.int64)),
        (c(), values(rng, (), dtype), values(rng, (), dtype)), (c(1, 5), x[:0], y[:1]),
        (c(70, 33), values(rng, (70, 33), dtype), num),   # past one block of every tuning
    ]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_where_matches_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(25)
    for cond, a, b in where_cases(rng, dtype):
        want = ptl.where(cond, a, b)
        out = ptl.empty(0, dtype=want.dtype)
        with emulated(TUNINGS[tuning]) as ran:
            got = ptl.where(cond, a, b)
            ptl.where(cond, a, b, out=out)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert bits(got) == bits(want) and bits(out) == bits(want)
        npv = [np_of(v) if isinstance(v, ptl.Tensor) else v for v in (a, b)]
        ref = np.where(cond.numpy(), *npv).astype(np_of(want).dtype)
        np.testing.assert_array_equal(np_of(got), ref)
        assert ran["select"] == (2 if want.numel() else 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_where_keeps_the_cpu_errors_and_its_gradient(tuning):
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    c = ptl.tensor(np.random.default_rng(26).integers(0, 2, (3, 4)).astype(bool))
    calls = [lambda: ptl.where(c.to(ptl.int64), x, 0.0),
             lambda: ptl.where(c, x.detach(), 0.0, out=ptl.empty(0, dtype=ptl.float32)),
             lambda: ptl.where(c, x.detach(), ptl.ones(5))]
    for fn in calls:
        want = cpu_error(fn)
        with emulated(TUNINGS[tuning]):
            assert cpu_error(fn) == want
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(lambda x: ptl.where(c, x * x, -x), (x,))


PREDICATES = [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
              ("gt", np.greater), ("ge", np.greater_equal), ("logical_and", np.logical_and),
              ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]


def predicate_cases(rng, dtype):
    """(a, b): broadcast, transposed, Python numbers and 0-dim tensors (by value), mixed
    dtypes, NaN, int64 values float64 cannot tell apart, 0-dim and size-0"""
    x, y = values(rng, (3, 4, 5), dtype), values(rng, (4, 1), dtype)
    if dtype.is_floating_point:
        x[0, 0, :2] = float("nan")
    num = True if dtype == ptl.bool else 1
    cases = [(x, y), (x, num), (x.transpose(0, 2), values(rng, (5, 4, 3), dtype)),
             (x, ptl.tensor(num).to(dtype)), (x, values(rng, (5,), ptl.float32)),
             (values(rng, (), dtype), values(rng, (), dtype)), (x[:0], y),
             (values(rng, (70, 33), dtype), values(rng, (33,), dtype))]
    if dtype == ptl.int64:
        big = 2 ** 62
        cases.append((ptl.tensor([big, big + 1, -big]), ptl.tensor([big + 1, big + 1, -big])))
    return cases


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_comparisons_and_logical_ops_match_numpy_and_the_cpu_kernel(tuning, dtype):
    rng = np.random.default_rng(27)
    for a, b in predicate_cases(rng, dtype):
        for name, ref in PREDICATES:
            if name.startswith("logical") and not isinstance(b, ptl.Tensor):
                continue   # the logical ops take tensors only, as PyTorch's
            fn = getattr(ptl, name)
            want = fn(a, b)
            with emulated(TUNINGS[tuning]) as ran:
                got = fn(a, b)
                out = ptl.empty(0, dtype=ptl.bool)
                fn(a, b, out=out)
            assert got.dtype == ptl.bool and got.shape == want.shape
            assert bits(got) == bits(want) and bits(out) == bits(want), name
            npv = [np_of(v) if isinstance(v, ptl.Tensor) else v for v in (a, b)]
            np.testing.assert_array_equal(got.numpy(), ref(*npv), err_msg=name)
            assert ran["select"] == (2 if want.numel() else 0)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_in_place_comparisons_write_through_a_bool_temporary(tuning):
    rng = np.random.default_rng(28)
    x, y = values(rng, (4, 6), ptl.float32), values(rng, (6,), ptl.float32)
    for name, _ in PREDICATES:
        want = getattr(x.clone(), name + "_")(y)
        with emulated(TUNINGS[tuning]):
            got = getattr(x.clone(), name + "_")(y)
        assert got.dtype == ptl.float32 and bits(got) == bits(want), name
