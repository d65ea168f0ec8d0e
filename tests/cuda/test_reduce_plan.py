"""The reduction and softmax kernels' plans and index arithmetic (src/cuda/reduce_plan.c and
reduce_plan.h, compiled by gcc here and by nvcc for reduce.cu), checked on the host: with
_C._cuda_kernel_emulation on, reductions and softmax of CPU tensors go through the CUDA path
(reduce.c's plan handed over, the plan chosen, the kernels' per-thread loops, warp/block
combination tree, split and second pass run on the host), and must reproduce NumPy: exactly
for integers, to float tolerance for floats, over random shapes, dims, keepdim,
non-contiguous, broadcast (stride 0), 0-dim and size-0 inputs, under tunings small enough
that every threshold of the plan is crossed; cumsum and cumprod the CPU kernel's bits.  Needs
no device and no nvcc."""
import contextlib

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from kernel_emulation import TUNINGS, emulated

def random_input(rng, dtype, ndim=None):
    """A random tensor and its NumPy float64 (or int64) copy: contiguous, transposed, sliced,
    expanded (stride 0) or 0-dim/size-0 shapes."""
    ndim = int(rng.integers(0, 5)) if ndim is None else ndim
    shape = [int(rng.choice([0, 1, 2, 3, 5, 8, 33])) if rng.integers(0, 8) == 0
             else int(rng.integers(1, 9)) for _ in range(ndim)]
    integral = dtype in (ptl.int64, ptl.int32, ptl.uint8, ptl.bool)
    if dtype == ptl.bool:
        base = rng.integers(0, 2, size=shape)
    elif integral:
        base = rng.integers(0 if dtype == ptl.uint8 else -4, 5, size=shape)
    else:
        base = rng.standard_normal(shape)
    t = ptl.tensor(base).to(dtype)
    kind = int(rng.integers(0, 4))
    if kind == 1 and ndim >= 2:
        t = t.transpose(0, ndim - 1).contiguous().transpose(0, ndim - 1)
    elif kind == 2 and ndim >= 1:
        big = ptl.tensor(np.repeat(base, 2, axis=ndim - 1)).to(dtype)
        t = big[..., ::2]
    elif kind == 3 and ndim >= 1 and shape[0] == 1:
        shape[0] = 4
        t = t.expand(*shape)
    return t, t.to(ptl.float64).numpy() if not integral else t.to(ptl.int64).numpy()


def random_dims(rng, ndim):
    """A random non-empty set of dims, every dim (a fifth of the time), or [] for 0-dim."""
    if ndim == 0 or rng.integers(0, 5) == 0:
        return list(range(ndim))
    k = int(rng.integers(1, ndim + 1))
    return sorted(int(d) for d in rng.choice(ndim, size=k, replace=False))


def random_cases(rng, dtype, n):
    """n random reductions: (tensor, its NumPy copy, dims, keepdim, NumPy axes)."""
    for _ in range(n):
        t, x = random_input(rng, dtype)
        dims = random_dims(rng, t.dim())
        yield t, x, dims, bool(rng.integers(0, 2)), tuple(dims)


FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-10, ptl.float32: 1e-4, ptl.float16: 2e-2, ptl.bfloat16: 1e-1}


def check_close(got, want, dtype):
    got = got.to(ptl.float64).numpy() if got.dtype != ptl.int64 else got.numpy()
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype in TOL:
        np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.uint8, ptl.bool], ids=str)
def test_integer_reductions_are_exact(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for t, x, dims, keep, axes in random_cases(rng, dtype, 60):
            check_close(t.sum(dims, keepdim=keep), x.sum(axis=axes, keepdims=keep), None)
            if t.dim() > 0:
                d = int(rng.integers(0, t.dim()))
                check_close(t.prod(d, keepdim=keep), x.prod(axis=d, keepdims=keep), None)
            if x.size == 0 or dtype == ptl.bool:
                continue
            check_close(t.amax(dims, keepdim=keep), x.max(axis=axes, keepdims=keep), None)
            check_close(t.amin(dims, keepdim=keep), x.min(axis=axes, keepdims=keep), None)
            # ties are frequent (values in [-4, 5)): the first index wins, as NumPy's
            check_close(t.argmax(), np.argmax(x), None)
            if t.dim() > 0:
                d = int(rng.integers(0, t.dim()))
                values, indices = t.max(d, keepdim=keep)
                check_close(values, x.max(axis=d, keepdims=keep), None)
                check_close(indices, np.expand_dims(x.argmax(axis=d), d) if keep
                            else x.argmax(axis=d), None)
                check_close(t.argmin(d), x.argmin(axis=d), None)
    assert ran["block_per_output"] > 0 and ran["thread_per_output"] > 0
    if tuning != "device":
        assert ran["split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.bool, ptl.uint8, ptl.int64, ptl.float32, ptl.float16,
                                   ptl.float64], ids=str)
def test_all_any_and_count_nonzero_are_exact(tuning, dtype):
    """The truth reductions: bool results (uint8 stays uint8 for all/any), int64 counts,
    NaN and -0.0 as NumPy counts them, an empty reduction's identity."""
    rng = np.random.default_rng(7)
    out_dt = np.uint8 if dtype == ptl.uint8 else bool
    with emulated(TUNINGS[tuning]) as ran:
        for t, x, dims, keep, axes in random_cases(rng, dtype, 50):
            if dtype.is_floating_point and t.numel() > 0:
                t = t.clone()
                t[(0,) * t.dim()] = float("nan")
                t[(-1,) * t.dim()] = -0.0
                x = t.to(ptl.float64).numpy()
            nz = x != 0
            got = t.all(dims, keepdim=keep) if dims else t.all()
            want = nz.all(axis=axes, keepdims=keep) if dims else np.array(nz.all())
            assert got.dtype == (ptl.uint8 if dtype == ptl.uint8 else ptl.bool)
            np.testing.assert_array_equal(got.numpy(), want.astype(out_dt))
            got = t.any(dims, keepdim=keep) if dims else t.any()
            want = nz.any(axis=axes, keepdims=keep) if dims else np.array(nz.any())
            np.testing.assert_array_equal(got.numpy(), want.astype(out_dt))
            got = ptl.count_nonzero(t, dims)
            assert got.dtype == ptl.int64
            np.testing.assert_array_equal(got.numpy(), nz.sum(axis=axes))
    assert ran["block_per_output"] + ran["thread_per_output"] > 0
    if tuning != "device":
        assert ran["split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_linalg_vector_norm_and_its_gradient_match_numpy(tuning, dtype):
    """linalg.vector_norm (norm's kernel under its own op, a dtype conversion first) and
    F.normalize, whose backward runs through it."""
    rng = np.random.default_rng(8)
    with emulated(TUNINGS[tuning]) as ran:
        for t, x, dims, keep, axes in random_cases(rng, dtype, 30):
            for ord_ in (2, 1, float("inf"), -float("inf"), 0, 3.0):
                if x.size == 0 and ord_ in (float("inf"), -float("inf")):
                    continue
                got = ptl.linalg.vector_norm(t, ord_, dims, keepdim=keep)
                a = np.abs(x)
                want = (a.max(axis=axes, keepdims=keep) if ord_ == float("inf") else
                        a.min(axis=axes, keepdims=keep) if ord_ == -float("inf") else
                        (a != 0).sum(axis=axes, keepdims=keep) if ord_ == 0 else
                        (a ** ord_).sum(axis=axes, keepdims=keep) ** (1 / ord_))
                check_close(got, want, dtype)
            wide = ptl.linalg.vector_norm(t, 2, dims, keepdim=keep, dtype=ptl.float64)
            assert wide.dtype == ptl.float64
            check_close(wide, np.sqrt((x ** 2).sum(axis=axes, keepdims=keep)), ptl.float64)
        x = ptl.tensor(rng.standard_normal((4, 7))).requires_grad_(True)
        y = ptl.nn.functional.normalize(x, dim=1)
        y.backward(ptl.ones(4, 7))
    xv = x.detach().numpy()
    n = np.linalg.norm(xv, axis=1, keepdims=True)
    np.testing.assert_allclose(y.detach().numpy(), xv / n, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 1 / n - xv * xv.sum(1, keepdims=True) / n ** 3,
                               rtol=1e-10, atol=1e-12)
    assert ran["block_per_output"] + ran["thread_per_output"] > 0


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:Degrees of freedom")
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_reductions_match_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    with emulated(TUNINGS[tuning]) as ran:
        for t, x, dims, keep, axes in random_cases(rng, dtype, 40):
            with np.errstate(all="ignore"):
                check_close(t.sum(dims, keepdim=keep), x.sum(axis=axes, keepdims=keep), dtype)
                check_close(t.mean(dims, keepdim=keep), x.mean(axis=axes, keepdims=keep), dtype)
                n = int(np.prod([x.shape[a] for a in axes]))
                for corr in (0, 1):
                    want = x.var(axis=axes, ddof=corr, keepdims=keep) if n > corr else \
                        np.full(x.sum(axis=axes, keepdims=keep).shape, np.nan)
                    with pytest.warns(UserWarning) if n <= corr else contextlib.nullcontext():
                        check_close(t.var(dims, correction=corr, keepdim=keep), want, dtype)
                        std, mean = ptl.std_mean(t, dims, correction=corr, keepdim=keep)
                    check_close(std, np.sqrt(want), dtype)
                    check_close(mean, x.mean(axis=axes, keepdims=keep), dtype)
                for p in (2, 1, 3.5, 0):
                    want = (np.abs(x) ** p).sum(axis=axes, keepdims=keep) if p else \
                        (x != 0).sum(axis=axes, keepdims=keep)
                    check_close(ptl.norm(t, p, dims, keepdim=keep),
                                want ** (1 / p) if p else want, dtype)
            if x.size == 0:
                continue
            check_close(t.amax(dims, keepdim=keep), x.max(axis=axes, keepdims=keep), dtype)
            check_close(ptl.norm(t, float("inf"), dims, keepdim=keep),
                        np.abs(x).max(axis=axes, keepdims=keep), dtype)
            check_close(t.argmin(), np.argmin(x), None)
    assert ran["block_per_output"] > 0 and ran["thread_per_output"] > 0
    if tuning != "device":
        assert ran["split"] > 0


def logsumexp_np(x, axes, keep):
    with np.errstate(all="ignore"):
        return np.logaddexp.reduce(x, axis=axes, keepdims=keep) if x.size else \
            np.full(x.sum(axis=axes, keepdims=keep).shape, -np.inf)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS + [ptl.int64], ids=str)
def test_logsumexp_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(11)
    with emulated(TUNINGS[tuning]) as ran:
        for t, x, dims, keep, axes in random_cases(rng, dtype, 40):
            want = logsumexp_np(x.astype(np.float64), axes, keep)
            check_close(ptl.logsumexp(t, dims, keepdim=keep), want,
                        dtype if dtype != ptl.int64 else ptl.float32)
    assert ran["block_per_output"] > 0 and ran["thread_per_output"] > 0
    if tuning != "device":
        assert ran["split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_logsumexp_of_infinities_and_nan(tuning):
    """NaN anywhere gives NaN, +inf anywhere else +inf, all -inf -inf, in every order the
    threads, the block tree and the split combine them."""
    inf, nan = np.inf, np.nan
    for n in (3, 40, 300):
        x = np.zeros((6, n))
        x[0, :] = -inf
        x[1, n // 2] = inf
        x[2, 0], x[2, n - 1] = inf, nan
        x[3, 0], x[3, n - 1] = nan, inf
        x[4, n - 1] = inf
        x[5, 1:] = -inf
        with emulated(TUNINGS[tuning]):
            got = ptl.logsumexp(ptl.tensor(x), 1).numpy()
            got_t = ptl.logsumexp(ptl.tensor(x.T.copy()).t(), 1).numpy()
        want = [-inf, inf, nan, nan, inf, 0.0]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_t, want)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_nan_propagates_and_argmax_takes_the_first_nan(tuning):
    x = np.arange(200, dtype=np.float64).reshape(4, 50) % 7
    x[1, 30] = x[1, 40] = np.nan
    x[3, 0] = np.nan
    t = ptl.tensor(x)
    with emulated(TUNINGS[tuning]):
        check_close(t.amax(1), x.max(axis=1), ptl.float64)
        check_close(t.min(1)[0], x.min(axis=1), ptl.float64)
        check_close(t.argmax(1), x.argmax(axis=1), None)
        check_close(t.argmin(1), x.argmin(axis=1), None)
        check_close(t.t().argmax(0), x.argmax(axis=1), None)
        check_close(t.argmax(), np.argmax(x), None)
        check_close(ptl.nansum(t, 1), np.nansum(x, axis=1), ptl.float64)
        check_close(t.sum(0), x.sum(axis=0), ptl.float64)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("layout", ["rows", "columns"])
def test_every_threshold_of_the_plan(tuning, layout):
    """Outputs and reduction lengths at and around each threshold: a warp (32) of outputs,
    a warp of reduced elements, the block size, 2 min_chunk (the split), target_blocks and
    max_grid blocks (the grid-stride loops)."""
    threads, target, grid, chunk = TUNINGS[tuning]
    sizes = sorted({0, 1, 2, 31, 32, 33, threads - 1, threads, threads + 1, 2 * chunk - 1,
                    2 * chunk, 2 * chunk + 1})
    nouts = sorted({1, 31, 32, 33, target - 1, target, target + 1, grid * 32 + 1,
                    grid * threads + 1} - {0})
    rng = np.random.default_rng(2)
    with emulated(TUNINGS[tuning]) as ran:
        for nout in nouts:
            for R in sizes:
                if nout * R > 300000:
                    continue
                x = rng.integers(-3, 4, size=(nout, R))
                t = ptl.tensor(x)
                if layout == "columns":
                    t, x = ptl.tensor(x.T.copy()).t(), x
                check_close(t.sum(1), x.sum(axis=1), None)
                if R:
                    check_close(t.argmax(1), x.argmax(axis=1), None)
                    f = t.to(ptl.float64)
                    check_close(f.var(1, correction=0), x.var(axis=1), ptl.float64)
    assert ran["block_per_output"] > 0 and ran["thread_per_output"] > 0 and ran["split"] > 0


def test_a_reduction_of_nothing_of_a_size0_input_and_of_a_0dim_one():
    with emulated(TUNINGS["small"]):
        e = ptl.zeros(3, 0, dtype=ptl.float64)
        check_close(e.sum(1), np.zeros(3), ptl.float64)
        check_close(e.prod(1), np.ones(3), ptl.float64)
        check_close(e.mean(1), np.full(3, np.nan), ptl.float64)
        assert e.sum(0).shape == (0,)
        s = ptl.tensor(2.5, dtype=ptl.float64)
        check_close(s.sum(), 2.5, ptl.float64)
        check_close(s.argmax(), 0, None)
        check_close(ptl.ones(4, 1, 3, dtype=ptl.float64).sum(1), np.ones((4, 3)), ptl.float64)


def softmax_np(x, axis, log):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return (x - m) - np.log(s) if log else e / s


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32, ptl.float16], ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_and_its_backward_match_numpy(tuning, dtype, log):
    rng = np.random.default_rng(3)
    fn = ptl.log_softmax if log else ptl.softmax
    with emulated(TUNINGS[tuning]) as ran:
        for _ in range(25):
            t, x = random_input(rng, dtype, ndim=int(rng.integers(0, 4)))
            if rng.integers(0, 4) == 0:   # long lines: several warps, more than a block
                t = ptl.tensor(rng.standard_normal((3, 1500))).to(dtype)
                x = t.to(ptl.float64).numpy()
            d = int(rng.integers(0, t.dim())) if t.dim() else 0
            t = t.detach().requires_grad_(True)
            y = fn(t, d)
            with np.errstate(all="ignore"):
                want = softmax_np(x, d if x.ndim else None, log)
            check_close(y.detach(), want, dtype)
            g = rng.standard_normal(x.shape)
            y.backward(ptl.tensor(g).to(dtype))
            yw = np.exp(want) if log else want
            sum_axis = dict(axis=d, keepdims=True) if x.ndim else {}
            grad = g - yw * g.sum(**sum_axis) if log else yw * (g - (g * yw).sum(**sum_axis))
            check_close(t.grad, grad, {ptl.float16: ptl.bfloat16}.get(dtype, dtype))
    assert ran["softmax_block_per_line"] > 0 and ran["softmax_thread_per_line"] > 0


def test_softmax_of_infinite_and_nan_lines():
    x = np.array([[-np.inf, -np.inf, -np.inf], [1.0, np.inf, 0.0], [np.nan, 1.0, 2.0],
                  [1.0, 2.0, 3.0]])
    with emulated(TUNINGS["small"]):
        for log in (False, True):
            fn = ptl.log_softmax if log else ptl.softmax
            with np.errstate(all="ignore"):
                check_close(fn(ptl.tensor(x), 1), softmax_np(x, 1, log), ptl.float64)
                check_close(fn(ptl.tensor(x.T.copy()), 0), softmax_np(x.T, 0, log),
                            ptl.float64)


def test_cross_entropy_runs_through_the_emulated_log_softmax():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((6, 5))
    target = rng.integers(0, 5, size=6)
    with emulated(TUNINGS["small"]) as ran:
        loss = ptl.nn.functional.cross_entropy(ptl.tensor(logits), ptl.tensor(target))
    want = -softmax_np(logits, 1, True)[np.arange(6), target].mean()
    check_close(loss, want, ptl.float64)
    assert ran["softmax_block_per_line"] == 1 and ran["softmax_thread_per_line"] == 0


def test_emulation_tuning_is_validated():
    for bad in [(48, 1, 1, 1), (16, 1, 1, 1), (2048, 1, 1, 1), (32, 0, 1, 1), (32, 1, 0, 1),
                (32, 1, 1, 0)]:
        with pytest.raises(ValueError, match="max_threads must be a power of two"):
            _C._cuda_kernel_emulation(bad)
    with pytest.raises(TypeError):
        _C._cuda_kernel_emulation((32, 1))
    assert _C._cuda_kernel_emulation(None)["split"] == 0


# ---- cumsum and cumprod (Note [CUDA scans]) ----

SCAN_DTYPES = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16, ptl.int64, ptl.int32,
               ptl.uint8, ptl.bool]


def as_array(t):
    """t's values (float dtypes through float64: exact)"""
    return t.to(ptl.float64).numpy() if t.is_floating_point() else t.numpy()


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=str)
def test_cumsum_and_cumprod_have_the_cpu_bits_and_match_numpy(tuning, dtype):
    """one thread per line in the CPU's order: the CPU kernel's values and dtype (its
    contiguous tile path and its line path alike), and NumPy's (exactly for integers)"""
    rng = np.random.default_rng(40)
    cases = []
    for _ in range(25):
        x = random_input(rng, dtype)[0]
        cases.append((x, int(rng.integers(0, x.dim())) if x.dim() else 0))
    big = ptl.tensor(rng.standard_normal((40, 70)) * 0.1 + 1).to(dtype)
    for x, dim in cases + [(big, 0), (big, 1), (big.t(), 0)]:
        for prod in (False, True):
            fn = (lambda t: t.cumprod(dim)) if prod else (lambda t: t.cumsum(dim))
            want = fn(x)
            with emulated(TUNINGS[tuning]) as ran:
                got = fn(x)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(as_array(got), as_array(want))
            assert ran["scan"] == (1 if x.numel() else 0)
            if not x.is_floating_point() and x.dim():
                ref = (np.cumprod if prod else np.cumsum)(x.numpy().astype(np.int64), axis=dim)
                np.testing.assert_array_equal(got.numpy(), ref)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_scans_with_a_dtype_and_their_gradients(tuning):
    rng = np.random.default_rng(41)
    x = ptl.tensor(rng.standard_normal((4, 6)) + 2, requires_grad=True)
    i = ptl.tensor(rng.integers(-3, 4, (5, 7)))
    with emulated(TUNINGS[tuning]):
        got = i.cumsum(1, dtype=ptl.int32), x.detach().float().cumsum(0, dtype=ptl.float64)
        assert ptl.autograd.gradcheck(lambda x: x.cumsum(1), (x,))
        assert ptl.autograd.gradcheck(lambda x: x.cumprod(0), (x,))
    assert got[0].dtype == ptl.int32 and got[1].dtype == ptl.float64
    np.testing.assert_array_equal(got[0].numpy(), np.cumsum(i.numpy(), 1))
    np.testing.assert_array_equal(got[1].numpy(),
                                  np.cumsum(x.detach().float().double().numpy(), 0))
