"""The gather / scatter / advanced-index family on complex64 and complex128 (Note [Complex
dtypes] in src/aten/native/complex.c passes them through to the CPU kernels): gather,
take_along_dim, scatter (src, value, reduce add/multiply), scatter_add, scatter_reduce
(sum, mean, prod; amax/amin refuse), index_add (complex alpha), index_put_ / x[idx] = v
(accumulate too), index_copy, masked_scatter, put_ and take.  Values against NumPy
complex128 (moves exactly), errors with PyTorch's types and messages, gradients by
gradcheck in complex128.  The row walk of scatter_gather.c handles index rows in chunks of
ROW_CHUNK = 256 (Note [Index row walk]): rows of 255, 256, 257 and 513 cross it; no kernel
here splits its work between threads, and 1 and 2 threads must agree."""
import itertools

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_close, assert_no_leak, assert_raises_like_torch, num_threads, torch,
                     torch_ref)
from pytorchlite.autograd import gradcheck

ZDTYPES = [ptl.complex64, ptl.complex128]
NPZ = {ptl.complex64: np.complex64, ptl.complex128: np.complex128}
IDX = [ptl.int64, ptl.int32]
ROW_CHUNK = 256


def crand(shape, seed=0):
    g = np.random.default_rng(seed)
    return g.standard_normal(shape) + 1j * g.standard_normal(shape)


def zt(a, dtype, noncontig=False):
    """a (complex128 ndarray) as a pytorchlite tensor of dtype; noncontig: the same values
    in a transposed (2-D and up) or strided (1-D) layout."""
    a = np.asarray(a)
    if noncontig and a.ndim >= 2:
        t = ptl.from_numpy(np.ascontiguousarray(np.swapaxes(a, 0, 1))).to(dtype)
        return t.transpose(0, 1)
    if noncontig and a.ndim == 1:
        b = np.zeros(2 * len(a), dtype=complex)
        b[::2] = a
        return ptl.from_numpy(b).to(dtype)[::2]
    return ptl.from_numpy(a.copy()).to(dtype)


def rounded(a, dtype):
    """a's values as dtype holds them, back in complex128 (the reference's inputs)"""
    return np.asarray(a).astype(NPZ[dtype]).astype(np.complex128)


def it(a, dtype=ptl.int64):
    return ptl.from_numpy(np.asarray(a, dtype=np.int64)).to(dtype)


def exact(dtype):
    return {"rtol": 0, "atol": 0}


def fold_tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == ptl.complex64 else {}


# ---- NumPy references ----

def np_gather(x, dim, idx):
    out = np.empty(idx.shape, dtype=np.complex128)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = x[tuple(src)]
    return out


def np_scatter(x, dim, idx, src, reduce=None, include_self=True):
    """x.scatter*(dim, idx, src) with reduce None (replace), sum, prod or mean, in
    index order; src an array of index's rank at least, or a number."""
    out = x.astype(np.complex128).copy()
    count = np.zeros(x.shape, dtype=np.int64)
    for pos in np.ndindex(*idx.shape):
        d = list(pos)
        d[dim] = idx[pos]
        d = tuple(d)
        v = src[pos] if isinstance(src, np.ndarray) else src
        if reduce is None or (not include_self and count[d] == 0):
            out[d] = v
        elif reduce == "prod":
            out[d] = out[d] * v
        else:
            out[d] = out[d] + v
        count[d] += 1
    if reduce == "mean":
        c = count + (1 if include_self else 0)
        out = np.where(count > 0, out / np.maximum(c, 1), out)
    return out


# ---- gather, take_along_dim ----

GATHER_CASES = [  # x shape, dim, index shape
    ((3, 4), 1, (3, 2)), ((3, 4), 0, (5, 4)), ((2, 3, 4), 2, (2, 3, 6)), ((2, 3, 4), 1, (1, 2, 2)),
    ((4,), 0, (7,)), ((), 0, ()), ((0, 3), 1, (0, 2)), ((3, 4), 1, (3, 0)),
    ((2, 300), 1, (2, 255)), ((2, 300), 1, (2, 256)), ((2, 300), 1, (2, 257)),
    ((3, 600), 1, (3, 513)), ((600, 2), 0, (513, 2)),
]


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("idt", IDX)
@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_gather(dtype, idt, noncontig, threads):
    g = np.random.default_rng(1)
    for k, (xs, dim, isz) in enumerate(GATHER_CASES):
        x = crand(xs, seed=k)
        size = xs[dim] if xs else 1
        idx = g.integers(0, max(size, 1), size=isz)
        with num_threads(threads):
            got = ptl.gather(zt(x, dtype, noncontig), dim, zt_idx(idx, idt, noncontig))
        assert_close(got, np_gather(rounded(x, dtype).reshape(xs or (1,)), dim,
                                    idx.reshape(isz or (1,))).reshape(isz), dtype=dtype,
                     **exact(dtype))


def zt_idx(idx, idt, noncontig=False):
    if noncontig and idx.ndim >= 2:
        return it(np.ascontiguousarray(np.swapaxes(idx, 0, 1)), idt).transpose(0, 1)
    return it(idx, idt)


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_gather_last_dim_unit_strides(dtype):
    """x.gather(-1, idx) with contiguous int64 rows: gather_unit_i64 moves 1-8 byte elements
    and hands complex128's 16 bytes to the fused loop; complex64 is its 8-byte case"""
    for n in (3, 255, 256, 257, 1000):
        x = crand((4, n), seed=n)
        idx = np.random.default_rng(n).integers(0, n, size=(4, n))
        got = zt(x, dtype).gather(-1, it(idx))
        assert_close(got, np.take_along_axis(rounded(x, dtype), idx, -1), dtype=dtype,
                     **exact(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_take_along_dim(dtype):
    x = crand((3, 4), seed=2)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    got = ptl.take_along_dim(zt(x, dtype), it(idx), 1)
    assert_close(got, np.take_along_axis(rounded(x, dtype), idx, 1), **exact(dtype))
    # broadcast: index (1, 2) against x (3, 4) along dim 1; x (3, 1) against (3, 5) along 0
    b = np.array([[3, 0]])
    got = ptl.take_along_dim(zt(x, dtype), it(b), 1)
    assert_close(got, np.take_along_axis(rounded(x, dtype), np.broadcast_to(b, (3, 2)), 1),
                 **exact(dtype))
    col = crand((3, 1), seed=3)
    i2 = np.random.default_rng(4).integers(0, 3, size=(2, 5))
    got = ptl.take_along_dim(zt(col, dtype), it(i2), 0)
    want = np.take_along_axis(np.broadcast_to(rounded(col, dtype), (3, 5)), i2, 0)
    assert_close(got, want, **exact(dtype))
    flat = ptl.take_along_dim(zt(x, dtype), it([11, 0, 5]))
    assert_close(flat, rounded(x, dtype).reshape(-1)[[11, 0, 5]], **exact(dtype))


# ---- scatter, scatter_add, scatter_reduce ----

SCATTER_CASES = [  # self shape, dim, index shape, src shape
    ((3, 4), 1, (3, 2), (3, 4)), ((5, 4), 0, (3, 4), (3, 4)),
    ((2, 3, 4), 2, (2, 2, 6), (2, 3, 7)), ((4,), 0, (6,), (6,)), ((), 0, (), ()),
    ((0, 3), 1, (0, 2), (0, 2)), ((3, 4), 1, (3, 0), (3, 1)),
    ((2, 40), 1, (2, 255), (2, 255)), ((2, 40), 1, (2, 256), (2, 256)),
    ((2, 40), 1, (2, 257), (2, 257)), ((3, 50), 1, (3, 513), (3, 513)),
]

REDUCTIONS = [  # (how we call it, the reference's reduce, include_self)
    ("scatter", None, True), ("scatter_add", "sum", True), ("reduce_add", "sum", True),
    ("reduce_multiply", "prod", True),
    ("sum", "sum", True), ("sum", "sum", False), ("mean", "mean", True),
    ("mean", "mean", False), ("prod", "prod", True), ("prod", "prod", False),
]


def call_scatter(lib_x, how, dim, index, src, include_self, inplace):
    if how == "scatter":
        return lib_x.scatter_(dim, index, src) if inplace else lib_x.scatter(dim, index, src)
    if how == "scatter_add":
        return (lib_x.scatter_add_(dim, index, src) if inplace
                else lib_x.scatter_add(dim, index, src))
    if how.startswith("reduce_"):
        red = how[len("reduce_"):]
        return (lib_x.scatter_(dim, index, src, reduce=red) if inplace
                else lib_x.scatter(dim, index, src, reduce=red))
    f = lib_x.scatter_reduce_ if inplace else lib_x.scatter_reduce
    return f(dim, index, src, how, include_self=include_self)


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("how,reduce,include_self", REDUCTIONS)
@pytest.mark.parametrize("idt", IDX)
@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_family(dtype, how, reduce, include_self, idt, threads):
    g = np.random.default_rng(5)
    for k, (xs, dim, isz, ssz) in enumerate(SCATTER_CASES):
        x, src = crand(xs, seed=k), crand(ssz, seed=100 + k)
        size = xs[dim] if xs else 1
        if how == "scatter":   # distinct targets per line: the result is then defined
            idx = np_distinct_index(g, xs, dim, isz)
            if idx is None:
                continue
        else:
            idx = g.integers(0, max(size, 1), size=isz)
        for inplace, noncontig in itertools.product([False, True], [False, True]):
            tx = zt(x, dtype, noncontig)
            with num_threads(threads):
                got = call_scatter(tx, how, dim, zt_idx(idx, idt, noncontig),
                                   zt(src, dtype, noncontig), include_self, inplace)
            if inplace:
                assert got is tx
            s1 = rounded(src, dtype).reshape(ssz or (1,))
            s1 = s1[tuple(slice(0, n) for n in (isz or (1,)))]
            want = np_scatter(rounded(x, dtype).reshape(xs or (1,)), dim,
                              idx.reshape(isz or (1,)), s1, reduce, include_self).reshape(xs)
            tol = exact(dtype) if reduce is None else fold_tol(dtype)
            assert_close(got, want, dtype=dtype, **tol)


def np_distinct_index(g, xs, dim, isz):
    """An index of shape isz into a self of shape xs whose values are distinct along dim
    within each line (None when dim is too short)"""
    size = xs[dim] if xs else 1
    n = isz[dim] if isz else 1
    if n > size:
        return None
    shape = isz or (1,)
    out = np.empty(shape, dtype=np.int64)
    moved = np.moveaxis(out, dim, -1)
    for pos in np.ndindex(*moved.shape[:-1]):
        moved[pos] = g.permutation(size)[:n]
    return out.reshape(isz)


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_value(dtype, reduce):
    """the Scalar forms: a complex value (and a real one) scattered, added or multiplied"""
    x = crand((3, 5), seed=7)
    idx = np.array([[0, 4, 0], [2, 2, 1], [3, 1, 1]])
    for v in (1.5 - 2j, 3.0):
        kw = {} if reduce is None else {"reduce": reduce}
        got = zt(x, dtype).scatter(1, it(idx), v, **kw)
        ref = {None: None, "add": "sum", "multiply": "prod"}[reduce]
        want = np_scatter(rounded(x, dtype), 1, idx, complex(v), ref)
        assert_close(got, want, dtype=dtype, **fold_tol(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_scatter_src_broadcast_like_index(dtype):
    """src larger than index: only index's window of it is read; a 0-dim complex tensor src
    scatters its value"""
    x, src = crand((4, 6), seed=8), crand((5, 9), seed=9)
    idx = np.array([[5, 0], [1, 1], [2, 3]])
    got = zt(x, dtype).scatter_add(1, it(idx), zt(src, dtype))
    want = np_scatter(rounded(x, dtype), 1, idx, rounded(src, dtype)[:3, :2], "sum")
    assert_close(got, want, **fold_tol(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("red", ["amax", "amin"])
def test_scatter_reduce_amax_amin_refuse(dtype, red):
    name = "ComplexFloat" if dtype == ptl.complex64 else "ComplexDouble"

    def f(lib):
        x = lib.zeros(3, dtype=getattr(lib, str(dtype).split(".")[-1]))
        x.scatter_reduce(0, lib.tensor([0, 1]), x[:2].clone(), red)
    assert_raises_like_torch(
        f, NotImplementedError,
        f"\"scatter_gather_tensor_cpu_reduce_{red}\" not implemented for '{name}'")


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_scatter_gather_index_errors(dtype):
    """out-of-range indices (either sign) raise PyTorch's message, int32 and int64 alike"""
    def lib_dtype(lib):
        return getattr(lib, str(dtype).split(".")[-1])
    for idt in ("int64", "int32"):
        for bad in (4, -1):
            def g(lib, bad=bad, idt=idt):
                x = lib.zeros(2, 4, dtype=lib_dtype(lib))
                lib.gather(x, 1, lib.tensor([[0, bad]], dtype=getattr(lib, idt)))
            assert_raises_like_torch(
                g, RuntimeError, f"index {bad} is out of bounds for dimension 1 with size 4")

            def s(lib, bad=bad, idt=idt):
                x = lib.zeros(2, 4, dtype=lib_dtype(lib))
                x.scatter_add_(1, lib.tensor([[bad, 0]], dtype=getattr(lib, idt)), x.clone())
            assert_raises_like_torch(
                s, RuntimeError, f"index {bad} is out of bounds for dimension 1 with size 4")

    def mixed(lib):
        x = lib.zeros(3, dtype=lib_dtype(lib))
        x.scatter_(0, lib.tensor([0]), lib.zeros(1))
    assert_raises_like_torch(mixed, RuntimeError,
                             "scatter(): Expected self.dtype to be equal to src.dtype")


# ---- index_add, index_copy, index_put_ / setitem, put_, take, masked_scatter ----

@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("idt", IDX)
@pytest.mark.parametrize("alpha", [1, 2.5, 1 - 2j])
@pytest.mark.parametrize("threads", [1, 2])
def test_index_add(dtype, idt, alpha, threads):
    g = np.random.default_rng(10)
    for xs, dim, n in [((5, 3), 0, 7), ((5, 3), 1, 4), ((4,), 0, 6), ((), 0, 2), ((0, 3), 1, 2),
                       ((5, 3), 0, 0), ((3, 300), 0, 5), ((300, 2), 1, 3)]:
        x = crand(xs, seed=n)
        n = n if xs else 1
        size = xs[dim] if xs else 1
        ssz = list(xs or (1,))
        ssz[dim] = n
        src = crand(ssz, seed=n + 1) if xs else crand((), seed=n + 1)
        idx = g.integers(0, max(size, 1), size=n)
        for noncontig in (False, True):
            with num_threads(threads):
                got = zt(x, dtype, noncontig).index_add(
                    dim, it(idx, idt), zt(src, dtype, noncontig), alpha=alpha)
            want = rounded(x, dtype).reshape(xs or (1,)).copy()
            s1 = rounded(src, dtype).reshape(ssz)
            for j, k in enumerate(idx):
                sl = [slice(None)] * len(ssz)
                sl[dim] = k
                s2 = [slice(None)] * len(ssz)
                s2[dim] = j
                want[tuple(sl)] += complex(alpha) * s1[tuple(s2)]
            assert_close(got, want.reshape(xs), dtype=dtype, **fold_tol(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_index_add_complex_alpha_rows(dtype):
    """index_add_row_complex (vectorized, with restrict): rows of every length around the
    vector widths"""
    for n in list(range(1, 10)) + [15, 16, 17, 33]:
        x, src = crand((4, n), seed=n), crand((3, n), seed=n + 50)
        idx = np.array([3, 0, 3])
        got = zt(x, dtype).index_add(0, it(idx), zt(src, dtype), alpha=2 - 1j)
        want = rounded(x, dtype).copy()
        np.add.at(want, idx, (2 - 1j) * rounded(src, dtype))
        assert_close(got, want, dtype=dtype, **fold_tol(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("idt", IDX)
def test_index_copy(dtype, idt):
    for xs, dim, idx in [((5, 3), 0, [4, 0, 2]), ((5, 3), 1, [2, 0]), ((6,), 0, [5, 1]),
                         ((), 0, [0]), ((5, 3), 0, [])]:
        x = crand(xs, seed=len(idx))
        ssz = list(xs or (1,))
        ssz[dim] = len(idx)
        src = crand(ssz, seed=3) if xs else crand((), seed=3)
        for noncontig in (False, True):
            got = zt(x, dtype, noncontig).index_copy(dim, it(idx, idt),
                                                    zt(src, dtype, noncontig))
            want = rounded(x, dtype).reshape(xs or (1,)).copy()
            sl = [slice(None)] * len(ssz)
            sl[dim] = np.array(idx, dtype=np.int64)
            want[tuple(sl)] = rounded(src, dtype).reshape(ssz)
            assert_close(got, want.reshape(xs), dtype=dtype, **exact(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_index_put(dtype, accumulate, threads):
    x = crand((5, 4, 3), seed=11)
    cases = [  # indices (int64 arrays or slices), value shape
        ((np.array([0, 3, 3]),), (3, 4, 3)),
        ((np.array([0, 3, 3]),), (4, 3)),                      # broadcast over the first dim
        ((np.array([4, 1]), np.array([0, 3])), (2, 3)),
        ((np.array([4, 1]), np.array([0, 0])), (3,)),
        ((slice(None), np.array([1, 1, 2])), (5, 3, 3)),
        ((np.array([[1, 2], [2, 2]]),), (1,)),
        ((np.array([], dtype=np.int64),), (0, 4, 3)),
        ((np.array(2),), ()),
    ]
    for k, (ix, vs) in enumerate(cases):
        v = crand(vs, seed=20 + k)
        for noncontig in (False, True):
            tx = zt(x, dtype, noncontig)
            tix = tuple(i if isinstance(i, slice) else it(i) for i in ix)
            with num_threads(threads):
                if any(isinstance(i, slice) for i in ix):
                    if accumulate:
                        continue
                    tx[tix] = zt(v, dtype)
                else:
                    tx.index_put_(tix, zt(v, dtype, noncontig), accumulate=accumulate)
            want = rounded(x, dtype).copy()
            if accumulate:
                np.add.at(want, ix, np.broadcast_to(rounded(v, dtype), want[ix].shape))
            else:
                want[ix] = rounded(v, dtype)
            assert_close(tx, want, dtype=dtype, **fold_tol(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_setitem_and_mask(dtype):
    x = crand((4, 3), seed=12)
    tx = zt(x, dtype)
    tx[it([3, 0])] = 2 - 1j
    m = np.array([True, False, True, False])
    tx[ptl.from_numpy(m)] = zt(crand((2, 3), seed=13), dtype)
    want = rounded(x, dtype)
    want[[3, 0]] = 2 - 1j
    want[m] = rounded(crand((2, 3), seed=13), dtype)
    assert_close(tx, want, **exact(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_put_and_take(dtype, accumulate):
    x = crand((3, 4), seed=14)
    idx = np.array([0, 11, -1, 5, 5])
    v = crand(5, seed=15)
    for noncontig in (False, True):
        tx = zt(x, dtype, noncontig)
        tx.put_(it(idx), zt(v, dtype, noncontig), accumulate=accumulate)
        want = rounded(x, dtype).reshape(-1).copy()
        if accumulate:
            np.add.at(want, idx, rounded(v, dtype))
        else:
            want[[0, 11, 5]] = rounded(v, dtype)[[0, 1, 4]]
            want[-1] = rounded(v, dtype)[2]
        assert_close(tx, want.reshape(3, 4), **fold_tol(dtype))
        ti = np.array([[0, -12], [7, 3]])
        got = zt(x, dtype, noncontig).take(it(ti))
        assert_close(got, rounded(x, dtype).reshape(-1)[ti], **exact(dtype))
    assert_close(zt(crand((), seed=1), dtype).take(it([0, -1])),
                 rounded(crand((), seed=1), dtype).reshape(1)[[0, -1]], **exact(dtype))
    assert_close(zt(x, dtype).take(it(np.zeros((0,), np.int64))),
                 np.zeros(0, np.complex128), **exact(dtype))


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_index_errors(dtype):
    def lib_dtype(lib):
        return getattr(lib, str(dtype).split(".")[-1])

    def take(lib):
        lib.zeros(2, 3, dtype=lib_dtype(lib)).take(lib.tensor([6]))
    assert_raises_like_torch(take, IndexError, "out of range: tried to access index 6 on a "
                                               "tensor of 6 elements.")

    def put(lib):
        lib.zeros(2, 3, dtype=lib_dtype(lib)).put_(lib.tensor([-7]),
                                                   lib.zeros(1, dtype=lib_dtype(lib)))
    assert_raises_like_torch(put, IndexError, "out of range: tried to access index -7 on a "
                                              "tensor of 6 elements.")

    def put_idx(lib):
        x = lib.zeros(2, 3, dtype=lib_dtype(lib))
        x[lib.tensor([2])] = lib.ones(3, dtype=lib_dtype(lib))
    assert_raises_like_torch(put_idx, IndexError,
                             "index 2 is out of bounds for dimension 0 with size 2")

    def add(lib):
        x = lib.zeros(2, 3, dtype=lib_dtype(lib))
        x.index_add_(0, lib.tensor([0]), lib.zeros(1, 3))
    assert_raises_like_torch(add, RuntimeError, "index_add_(): self (")

    def put_dtype(lib):
        x = lib.zeros(2, 3, dtype=lib_dtype(lib))
        x.index_put_((lib.tensor([0]),), lib.zeros(3))
    assert_raises_like_torch(put_dtype, RuntimeError,
                             "Index put requires the source and destination dtypes match")


@pytest.mark.parametrize("dtype", ZDTYPES)
def test_masked_scatter(dtype):
    x = crand((3, 4), seed=16)
    src = crand((4, 4), seed=17)
    m = np.random.default_rng(18).random((3, 4)) > 0.4
    for noncontig in (False, True):
        got = zt(x, dtype, noncontig).masked_scatter(ptl.from_numpy(m), zt(src, dtype, noncontig))
        want = rounded(x, dtype).copy()
        want[m] = rounded(src, dtype).reshape(-1)[:m.sum()]
        assert_close(got, want, **exact(dtype))
    # mask broadcast over the rows
    row = np.array([True, False, False, True])
    got = zt(x, dtype).masked_scatter(ptl.from_numpy(row), zt(src, dtype))
    want = rounded(x, dtype).copy()
    want[np.broadcast_to(row, (3, 4))] = rounded(src, dtype).reshape(-1)[:6]
    assert_close(got, want, **exact(dtype))

    def short(lib):
        d = getattr(lib, str(dtype).split(".")[-1])
        lib.zeros(3, dtype=d).masked_scatter(lib.tensor([True, True, True]),
                                             lib.zeros(2, dtype=d))
    assert_raises_like_torch(short, RuntimeError,
                             "Number of elements of source < number of ones in mask")


# ---- autograd ----

def r128(*shape, seed=0):
    return ptl.from_numpy(crand(shape, seed=seed)).requires_grad_()


I2 = [[0, 1, 2], [2, 0, 1]]
GRAD_CASES = {
    "gather": (lambda x: ptl.gather(x, 1, it(I2)), [(3, 4)]),
    "gather_int32": (lambda x: ptl.gather(x, 1, it(I2, ptl.int32)), [(3, 4)]),
    "take_along_dim": (lambda x: ptl.take_along_dim(x, it(I2), 1), [(2, 4)]),
    "scatter": (lambda x, s: x.scatter(1, it(I2), s), [(3, 4), (2, 3)]),
    "scatter_value": (lambda x: x.scatter(1, it(I2), 1 + 2j), [(3, 4)]),
    "scatter_add": (lambda x, s: x.scatter_add(1, it([[0, 1, 1], [2, 2, 2]]), s),
                    [(3, 4), (2, 3)]),
    "index_add": (lambda x, s: x.index_add(0, it([0, 2, 0]), s), [(3, 4), (3, 4)]),
    "index_add_alpha": (lambda x, s: x.index_add(0, it([0, 2, 0]), s, alpha=1 - 2j),
                        [(3, 4), (3, 4)]),
    "index_put": (lambda x, s: x.index_put((it([0, 2]),), s), [(3, 4), (2, 4)]),
    "index_put_accumulate": (lambda x, s: x.index_put((it([0, 2, 0]),), s, accumulate=True),
                             [(3, 4), (3, 4)]),
    "index_copy": (lambda x, s: x.index_copy(0, it([2, 0]), s), [(3, 4), (2, 4)]),
    "masked_scatter": (lambda x, s: x.masked_scatter(
        ptl.tensor([[True, False, True, False]] * 3), s), [(3, 4), (3, 4)]),
    "take": (lambda x: x.take(it([0, 5, 11, 5])), [(3, 4)]),
    "put_accumulate": (lambda x, s: x.put(it([0, 5, 11, 5]), s, accumulate=True),
                       [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    assert gradcheck(fn, tuple(r128(*s, seed=i) for i, s in enumerate(shapes)))


@pytest.mark.parametrize("red", ["sum", "mean", "prod"])
def test_scatter_reduce_refuses_complex_autograd(red):
    """PyTorch's throw_error_for_complex_autograd: a complex scatter_reduce that records a
    node raises after the forward; without grad it computes"""
    def f(lib):
        x = lib.zeros(3, dtype=lib.complex128, requires_grad=True)
        x.scatter_reduce(0, lib.tensor([0, 1]), lib.ones(2, dtype=lib.complex128), red)
    assert_raises_like_torch(f, RuntimeError, "scatter_reduce does not support automatic "
                                              "differentiation for outputs with complex dtype.")
    x = ptl.zeros(3, dtype=ptl.complex128, requires_grad=True)
    with ptl.no_grad():
        y = x.scatter_reduce(0, it([0, 1]), ptl.ones(2, dtype=ptl.complex128), red)
    assert not y.requires_grad
    assert_no_leak(lambda: pytest.raises(RuntimeError, x.scatter_reduce, 0, it([0, 1]),
                                         ptl.ones(2, dtype=ptl.complex128), red))


@pytest.mark.parametrize("call", ["scatter", "scatter_reduce_add", "index_add_alpha"])
def test_real_tensor_complex_scalar(call):
    """a real tensor with a complex Scalar (value, alpha) that has an imaginary part: c10's
    checked_convert error, as before these ops took complex tensors; 0 imaginary converts"""
    def f(lib, v):
        x = lib.zeros(2, 3)
        i = lib.tensor([[0, 1], [2, 0]])
        if call == "scatter":
            return x.scatter_(1, i, v)
        if call == "scatter_reduce_add":
            return x.scatter_(1, i, v, reduce="add")
        return x.index_add(0, lib.tensor([0]), lib.ones(1, 3), alpha=v)
    assert_raises_like_torch(lambda lib: f(lib, 1 + 2j), RuntimeError,
                             "value cannot be converted to type float without overflow")
    got = f(ptl, 2 + 0j)
    want = f(ptl, 2.0)
    assert_close(got, want.numpy(), dtype=ptl.float32, rtol=0, atol=0)


@pytest.mark.parametrize("zeros", [[], [1], [0, 2]])
def test_inplace_scatter_reduce_prod_gradcheck(zeros):
    """prod's gradient is g times the conjugate of the others' product (PyTorch 2.13's is
    unconjugated and fails gradcheck); a lone zero of self or src and none"""
    x0, s0 = crand((4,), seed=32), crand((3,), seed=33)
    x0[zeros[:1]] = 0
    s0[zeros[1:]] = 0

    def f(x, s):
        return x.clone().scatter_reduce_(0, ptl.tensor([0, 2, 0]), s, "prod")
    assert gradcheck(f, (ptl.from_numpy(x0).requires_grad_(),
                         ptl.from_numpy(s0).requires_grad_()))


@torch_ref
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_inplace_scatter_reduce_gradients_match_torch(red):
    """the in-place scatter_reduce_ records its node on a complex tensor, as PyTorch's does
    (only the out-of-place op refuses); sum's and mean's gradients are PyTorch's (prod's
    differs: see test_inplace_scatter_reduce_prod_gradcheck)"""
    x0, s0 = crand((4,), seed=30), crand((3,), seed=31)
    grads = []
    for lib in (torch, ptl):
        x = lib.from_numpy(x0.copy()).requires_grad_()
        s = lib.from_numpy(s0.copy()).requires_grad_()
        y = x.clone().scatter_reduce_(0, lib.tensor([0, 2, 0]), s, red)
        y.abs().sum().backward()
        grads.append((x.grad.detach().numpy(), s.grad.detach().numpy()))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
