"""one_hot, bincount, repeat_interleave, embedding_bag and affine_grid on the device path
(Note [Device one_hot and bincount] in src/aten/native/summary.c; repeat_interleave_device in
shape.c; Note [Device embedding bags] in embedding.c; Note [Device affine_grid] in
resample.c), and the later compositions below (each section names its Note), checked on the
host: with _C._cuda_kernel_emulation on they take the composition the CUDA tensors take (the
extremes or the sum by the emulated reduction kernels, read back; zeros, then scatter_,
index_add_ and cumsum by the emulated kernels) and must reproduce NumPy exactly (counts,
indices) or to rounding (weighted bins), with the CPU kernel's errors, under tunings with a
grid of one block and many.  Needs no device."""
import contextlib

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_one_hot_matches_numpy(tuning):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for shape in ((7,), (3, 4), (2, 3, 5), (), (0,), (600,)):
            v = rng.integers(0, 6, shape)
            t = ptl.tensor(v)
            for k in (-1, 6, 11):
                if k == -1 and v.size == 0:
                    continue
                n = v.max() + 1 if k == -1 else k
                want = (v[..., None] == np.arange(n)).astype(np.int64)
                got = F.one_hot(t, k)
                assert got.dtype == ptl.int64
                np.testing.assert_array_equal(got.numpy(), want)
        wide = ptl.tensor(rng.integers(0, 5, (3, 8)))[:, ::2]   # non-contiguous
        np.testing.assert_array_equal(F.one_hot(wide, 5).numpy(),
                                      (wide.numpy()[..., None] == np.arange(5)).astype(np.int64))
    assert ran["block_per_output"] + ran["thread_per_output"] > 0 and ran["scatter"] + \
        ran["scatter_chunked"] > 0


def test_one_hot_errors_are_the_cpu_kernels():
    with emulated(TUNINGS["small"]):
        with pytest.raises(RuntimeError, match="Class values must be non-negative."):
            F.one_hot(ptl.tensor([1, -2, 3]))
        with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
            F.one_hot(ptl.tensor([1, 5]), 5)
        with pytest.raises(RuntimeError, match="Can not infer total number of classes from "
                                               "empty tensor."):
            F.one_hot(ptl.tensor([], dtype=ptl.int64))
        with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
            F.one_hot(ptl.tensor([1, 2], dtype=ptl.int32))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.uint8, ptl.int16], ids=str)
def test_bincount_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(1)
    with emulated(TUNINGS[tuning]) as ran:
        for n in (0, 1, 5, 33, 700):
            v = rng.integers(0, 40, n)
            t = ptl.tensor(v).to(dtype)
            for minlength in (0, 3, 64):
                np.testing.assert_array_equal(ptl.bincount(t, minlength=minlength).numpy(),
                                              np.bincount(v, minlength=minlength))
                for wdt in (ptl.float64, ptl.float32, ptl.int64):
                    w = ptl.tensor(rng.standard_normal(n) * 3).to(wdt)
                    got = ptl.bincount(t, w, minlength)
                    want = np.bincount(v, w.to(ptl.float64).numpy(), minlength)
                    assert got.dtype == (ptl.float32 if wdt == ptl.float32 else ptl.float64)
                    tol = 1e-5 if wdt == ptl.float32 else 1e-12
                    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
        strided = ptl.tensor(rng.integers(0, 9, 40)).to(dtype)[::3]
        np.testing.assert_array_equal(ptl.bincount(strided).numpy(),
                                      np.bincount(strided.to(ptl.int64).numpy()))
    assert ran["block_per_output"] + ran["thread_per_output"] > 0 and ran["index_scatter"] > 0


def test_bincount_errors_are_the_cpu_kernels():
    with emulated(TUNINGS["tiny"]):
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
            ptl.bincount(ptl.tensor([3, -1, 2]))
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
            ptl.bincount(ptl.tensor([[1, 2]]))
        with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length"):
            ptl.bincount(ptl.tensor([1, 2]), ptl.tensor([1.0]))
        with pytest.raises(RuntimeError, match="minlength should be >= 0"):
            ptl.bincount(ptl.tensor([1, 2]), minlength=-1)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32], ids=str)
def test_repeat_interleave_matches_numpy(tuning, dtype):
    """Zero repeats first, inside and last, a single repeat, all zero, none; the index's
    dtype kept; output_size checked; the self forms built on it."""
    rng = np.random.default_rng(2)
    cases = [[2, 0, 3, 1, 0], [0, 0, 4], [0, 0], [], [1], list(rng.integers(0, 5, 300))]
    with emulated(TUNINGS[tuning]) as ran:
        for r in cases:
            t = ptl.tensor(r, dtype=dtype)
            got = ptl.repeat_interleave(t)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got.numpy(),
                                          np.repeat(np.arange(len(r)), np.array(r, dtype=int)))
            got = ptl.repeat_interleave(t, output_size=int(sum(r)))
            assert got.shape == (sum(r),)
        x = ptl.tensor(rng.standard_normal((3, 4)))
        reps = ptl.tensor([2, 0, 1])
        np.testing.assert_array_equal(ptl.repeat_interleave(x, reps, dim=0).numpy(),
                                      np.repeat(x.numpy(), [2, 0, 1], axis=0))
    assert ran["scan"] > 0 and ran["index_scatter"] > 0


def test_repeat_interleave_errors_are_the_cpu_kernels():
    with emulated(TUNINGS["small"]):
        with pytest.raises(RuntimeError, match="repeats can not be negative"):
            ptl.repeat_interleave(ptl.tensor([1, -1, 2]))
        with pytest.raises(RuntimeError, match="allocated size does not match required size"):
            ptl.repeat_interleave(ptl.tensor([1, 2]), output_size=4)
        with pytest.raises(RuntimeError, match="repeat_interleave only accept 1D vector"):
            ptl.repeat_interleave(ptl.tensor([[1, 2]]))


def test_nonzero_and_unique_walk_a_host_copy():
    """Note [Host walks for data-dependent sizes]: under the emulation the CUDA path's
    wrapper runs (the arguments swapped for host copies, the CPU kernel, the results moved
    back) and must give NumPy's nonzero and unique, with every optional output."""
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (4, 5)).astype(np.float64)
    x[0, 0], x[1, 1] = np.nan, -0.0
    t = ptl.tensor(x)
    v = rng.integers(0, 6, 40)
    with emulated(TUNINGS["small"]):
        np.testing.assert_array_equal(ptl.nonzero(t).numpy(), np.argwhere(x != 0))
        np.testing.assert_array_equal(ptl.nonzero(t[:, ::2]).numpy(),
                                      np.argwhere(x[:, ::2] != 0))
        assert ptl.nonzero(ptl.tensor(3.0)).shape == (1, 0)
        assert ptl.nonzero(ptl.zeros(0, 3)).shape == (0, 2)
        vals, inv, cnt = ptl.unique(ptl.tensor(v), return_inverse=True, return_counts=True)
        want = np.unique(v, return_inverse=True, return_counts=True)
        for got, w in zip((vals, inv, cnt), want):
            np.testing.assert_array_equal(got.numpy(), w)
        rows = rng.integers(0, 2, (9, 3))
        np.testing.assert_array_equal(ptl.unique(ptl.tensor(rows), dim=0).numpy(),
                                      np.unique(rows, axis=0))
        out, counts = ptl.unique_consecutive(ptl.tensor([1, 1, 2, 2, 2, 1]), return_counts=True)
        np.testing.assert_array_equal(out.numpy(), [1, 2, 1])
        np.testing.assert_array_equal(counts.numpy(), [2, 3, 1])


def embedding_bag_np(w, idx, bags, scale, nbags, mean):
    out = np.zeros((nbags, w.shape[1]))
    count = np.zeros(nbags)
    for i, b in enumerate(bags):
        out[b] += w[idx[i]] * (1.0 if scale is None else scale[i])
        count[b] += 1
    return out / np.maximum(count, 1)[:, None] if mean else out


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_embedding_bag_matches_numpy_and_its_gradient_the_cpu_kernels(tuning, dtype):
    """sum, mean (empty bags stay 0) and per-sample weights, forward and the weight's
    gradient, against NumPy float64 and the CPU kernel"""
    rng = np.random.default_rng(5)
    tol = 1e-12 if dtype == ptl.float64 else 1e-5
    for V, D, n, nbags in ((9, 4, 12, 5), (300, 40, 700, 33), (4, 1, 0, 3)):
        w = rng.standard_normal((V, D))
        idx = rng.integers(0, V, n)
        offsets = np.sort(rng.integers(0, n + 1, nbags - 1)) if n else np.zeros(nbags - 1, int)
        offsets = np.concatenate([[0], offsets])
        bags = np.searchsorted(offsets, np.arange(n), side="right") - 1
        scale = rng.standard_normal(n)
        for mean, sc in ((False, None), (True, None), (False, scale)):
            want = embedding_bag_np(w, idx, bags, sc, nbags, mean)
            g = rng.standard_normal((nbags, D))
            outs = []
            for emulate in (True, False):
                wt = ptl.tensor(w).to(dtype).requires_grad_(True)
                kw = {} if sc is None else {"per_sample_weights": ptl.tensor(sc).to(dtype)}
                with emulated(TUNINGS[tuning]) if emulate else contextlib.nullcontext() as ran:
                    out = F.embedding_bag(ptl.tensor(idx), wt, ptl.tensor(offsets),
                                          mode="mean" if mean else "sum", **kw)
                    out.backward(ptl.tensor(g).to(dtype))
                outs.append((out.detach().to(ptl.float64).numpy(),
                             wt.grad.to(ptl.float64).numpy()))
                if emulate and n:
                    assert ran["index_gather"] > 0 and ran["index_scatter"] > 0
            np.testing.assert_allclose(outs[0][0], want, rtol=tol, atol=tol)
            np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=tol, atol=tol)
            np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=tol, atol=tol)


def test_embedding_bag_bad_index_is_the_cpu_kernels_error():
    with emulated(TUNINGS["small"]):
        with pytest.raises(IndexError, match="index out of range in self"):
            F.embedding_bag(ptl.tensor([[0, 9]]), ptl.randn(4, 2))


def affine_base_np(size, align):
    """the base grid [vol, nd + 1]: rows (x, y, [z,] 1) of the normalized coordinates"""
    def coords(k):
        v = np.linspace(-1, 1, k) if k > 1 else np.zeros(1)
        return v if align or k <= 1 else v * (k - 1) / k
    sp = size[2:]
    mesh = np.meshgrid(*[coords(k) for k in sp], indexing="ij")   # [z,] y, x
    return np.stack(list(mesh[::-1]) + [np.ones(sp)], -1).reshape(-1, len(sp) + 1)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_affine_grid_and_its_gradient_match_numpy(tuning, dtype):
    rng = np.random.default_rng(6)
    tol = 1e-12 if dtype == ptl.float64 else 1e-5
    for size in ((2, 3, 4, 5), (1, 1, 1, 7), (3, 2, 3, 4, 5), (2, 1, 1, 1, 2)):
        nd = len(size) - 2
        theta = rng.standard_normal((size[0], nd, nd + 1))
        for align in (False, True):
            base = affine_base_np(size, align)
            want = (base @ theta.transpose(0, 2, 1)).reshape(size[:1] + size[2:] + (nd,))
            g = rng.standard_normal(want.shape)
            t = ptl.tensor(theta).to(dtype).requires_grad_(True)
            with emulated(TUNINGS[tuning]):
                grid = F.affine_grid(t, size, align_corners=align)
                grid.backward(ptl.tensor(g).to(dtype))
            assert grid.dtype == dtype and tuple(grid.shape) == want.shape
            np.testing.assert_allclose(grid.detach().to(ptl.float64).numpy(), want,
                                       rtol=tol, atol=tol)
            want_grad = g.reshape(size[0], -1, nd).transpose(0, 2, 1) @ base
            np.testing.assert_allclose(t.grad.to(ptl.float64).numpy(), want_grad,
                                       rtol=tol, atol=tol)


# ---- aminmax (two emulated reductions), trace (the sum over the diagonal's view) and
# diag_embed (a fill and a copy into the diagonal's view): the CPU kernel's results ----

AMM_DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
              ptl.bfloat16, ptl.float32, ptl.float64]


def amm_values(rng, shape, dtype):
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if not dtype.is_floating_point:
        return ptl.tensor(rng.integers(0 if dtype == ptl.uint8 else -50, 50, size=shape)).to(dtype)
    v = rng.standard_normal(shape)
    if v.size > 3:
        v.reshape(-1)[rng.integers(0, v.size)] = np.nan
    return ptl.tensor(v).to(dtype)


def same_or_nan(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    g, w = got.double().numpy(), want.double().numpy()
    np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", AMM_DTYPES, ids=str)
def test_aminmax_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(7)
    for shape in ((5,), (3, 7), (2, 40, 3), (), (4, 1)):
        base = amm_values(rng, shape, dtype)
        xs = [base] + ([base.t()] if base.dim() == 2 else [])
        for x in xs:
            for kw in [{}] + [{"dim": d, "keepdim": k} for d in range(-max(x.dim(), 1),
                                                                      max(x.dim(), 1))
                              for k in (False, True)]:
                want = ptl.aminmax(x, **kw)
                with emulated(TUNINGS[tuning]) as ran:
                    got = ptl.aminmax(x, **kw)
                for g, w in zip(got, want):
                    same_or_nan(g, w)
                assert ran["block_per_output"] + ran["thread_per_output"] >= 2
    with emulated(TUNINGS[tuning]):
        with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
            ptl.aminmax(ptl.zeros(0))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", AMM_DTYPES[1:], ids=str)
def test_trace_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(8)
    for shape in ((4, 4), (3, 7), (9, 2), (0, 3), (1, 1), (40, 40)):
        base = amm_values(rng, shape, dtype)
        for x in (base, base.t(), base[::2]):
            want = x.trace()
            with emulated(TUNINGS[tuning]):
                got = x.trace()
            assert got.dtype == want.dtype and got.shape == ()
            np.testing.assert_allclose(got.double().numpy(), want.double().numpy(),
                                       rtol=1e-3 if dtype in (ptl.float16, ptl.bfloat16) else 1e-12)
    with emulated(TUNINGS[tuning]):
        with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with "
                                               "dim 1"):
            ptl.ones(3).trace()


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", AMM_DTYPES, ids=str)
def test_diag_embed_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(9)
    for shape in ((3,), (2, 4), (2, 3, 2), (0,), (2, 0)):
        base = amm_values(rng, shape, dtype)
        for x in [base] + ([base.t()] if base.dim() == 2 else []):
            for offset, d1, d2 in ((0, -2, -1), (1, 0, 2), (-2, 1, 0), (3, -1, 0)):
                if max(d1, d2) > x.dim() or min(d1, d2) < -x.dim() - 1:
                    continue
                want = ptl.diag_embed(x, offset, d1, d2)
                with emulated(TUNINGS[tuning]):
                    got = ptl.diag_embed(x, offset, d1, d2)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert got.reshape(-1).view(ptl.uint8).numpy().tobytes() == \
                    want.reshape(-1).view(ptl.uint8).numpy().tobytes()
    with emulated(TUNINGS[tuning]):
        with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
            ptl.diag_embed(ptl.ones(2, 2), 0, 1, 1)


def test_trace_and_diag_embed_gradients_through_the_emulated_kernels():
    from pytorchlite.autograd import gradcheck
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    with emulated(TUNINGS["tiny"]):
        assert gradcheck(lambda t: t.trace(), (x,))
        assert gradcheck(lambda t: ptl.diag_embed(t, 1), (x,))
        assert gradcheck(lambda t: ptl.aminmax(t, dim=1)[1], (x,))


# ---- masked_scatter (Note [Device masked_scatter] in index_device.c) and renorm ----

def byte_view(t):
    return t.reshape(-1).contiguous().view(ptl.uint8).numpy().tobytes()

@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", AMM_DTYPES, ids=str)
def test_masked_scatter_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(10)
    for shape, mshape in (((4, 5), (5,)), ((3, 1), (3, 6)), ((2, 3, 4), (2, 3, 4)), ((), ()),
                          ((0, 3), (3,)), ((40,), (40,))):
        x = amm_values(rng, shape, dtype)
        mv = rng.integers(0, 2, size=mshape).astype(bool)
        m = ptl.tensor(mv)
        nset = int(np.broadcast_to(mv, np.broadcast_shapes(shape, mshape)).sum())
        src = amm_values(rng, (2 * nset + 2,), dtype)
        # the source contiguous, strided (every other element) and 2-D
        for s in (src, src[::2], src[:2 * nset].reshape(2, nset) if nset else src):
            want = x.masked_scatter(m, s)
            with emulated(TUNINGS[tuning]):
                got = x.masked_scatter(m, s)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert byte_view(got) == byte_view(want)
        if m.shape == x.shape:
            want, got = x.clone(), x.clone()
            want.masked_scatter_(m, src)
            with emulated(TUNINGS[tuning]):
                got.masked_scatter_(m, src)
            assert byte_view(got) == byte_view(want)


def test_masked_scatter_errors_and_gradient():
    from pytorchlite.autograd import gradcheck
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    src = ptl.randn(12, dtype=ptl.float64, requires_grad=True)
    m = ptl.tensor([True, False, True, True])
    with emulated(TUNINGS["small"]):
        with pytest.raises(RuntimeError, match="Number of elements of source < number of ones "
                                               "in mask"):
            x.detach().masked_scatter(m, ptl.randn(3, dtype=ptl.float64))
        with pytest.raises(RuntimeError, match="masked_scatter_ only supports boolean masks"):
            x.detach().masked_scatter(m.long(), src.detach())
        assert gradcheck(lambda a, b: a.masked_scatter(m, b), (x, src))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_renorm_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(11)
    for shape, dim, p, maxnorm in (((4, 5), 0, 2, 1.0), ((3, 4, 2), 1, 1, 0.5),
                                   ((5, 3), -1, 3.0, 2.0), ((2, 0), 0, 2, 1.0)):
        v = rng.standard_normal(shape)
        x = ptl.tensor(v).to(dtype)
        want = x.renorm(p, dim, maxnorm)
        with emulated(TUNINGS[tuning]):
            got = x.renorm(p, dim, maxnorm)
            got_ = x.clone().renorm_(p, dim, maxnorm)
        axes = tuple(d for d in range(v.ndim) if d != dim % v.ndim)
        norms = np.sum(np.abs(v) ** p, axis=axes, keepdims=True) ** (1 / p)
        ref = v * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1)
        tol = 1e-12 if dtype == ptl.float64 else 1e-5
        for g in (got, got_):
            np.testing.assert_allclose(g.double().numpy(), ref, rtol=tol, atol=tol)
            np.testing.assert_allclose(g.double().numpy(), want.double().numpy(), rtol=tol,
                                       atol=tol)
    with emulated(TUNINGS[tuning]):
        with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions"):
            ptl.ones(3).renorm(2, 0, 1.0)


# ---- histc (Note [Device histc] in summary.c): the CPU's bins exactly ----

@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64],
                         ids=str)
def test_histc_matches_numpy_and_the_cpu(tuning, dtype):
    rng = np.random.default_rng(12)
    for shape in ((1000,), (7, 9), (), (0,)):
        v = rng.standard_normal(shape)
        x = ptl.tensor(v).to(dtype)
        for c in ([x] + ([x.t()] if x.dim() == 2 else [])):
            for args in ((10,), (7, -1, 1), (5, 0.5, 0.5), (3, -0.3, 2.0), (1, 0, 0)):
                want = c.histc(*args)
                with emulated(TUNINGS[tuning]) as ran:
                    got = c.histc(*args)
                assert got.dtype == dtype and got.shape == want.shape
                np.testing.assert_array_equal(got.double().numpy(), want.double().numpy())
                assert x.numel() == 0 or ran["index_scatter"] + ran["scatter"] + \
                    ran["scatter_chunked"] + ran["index_gather"] > 0
    # NumPy's histogram where no value sits on an inner bin edge
    v = rng.standard_normal(500)
    with emulated(TUNINGS[tuning]):
        got = ptl.tensor(v).histc(8, -2, 2)
    np.testing.assert_array_equal(got.numpy(), np.histogram(v, 8, (-2, 2))[0])


def test_histc_errors_are_the_cpu_kernels():
    with emulated(TUNINGS["small"]):
        with pytest.raises(NotImplementedError, match="\"histogram_cpu\" not implemented for "
                                                      "'Long'"):
            ptl.tensor([1, 2]).histc()
        with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
            ptl.ones(3).histc(4, 2, 1)
        with pytest.raises(RuntimeError, match="bins must be > 0"):
            ptl.ones(3).histc(0)


# ---- linalg_cross and unfold_backward (Note [Device cross and unfold_backward] in
# shape_device.c) and cdist (Note [Device cdist] in linalg_norm.c) ----

CROSS_CASES = [((4, 3), (1, 3), -1), ((3, 5), (3, 5), 0), ((2, 3, 4), (2, 3, 4), 1),
               ((2, 1, 3), (1, 4, 3), 2), ((0, 3), (0, 3), 1), ((3,), (3,), 0)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.int32], ids=str)
def test_cross_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(13)
    for sa, sb, dim in CROSS_CASES:
        va, vb = (rng.integers(-9, 10, s) if not dtype.is_floating_point
                  else rng.standard_normal(s) for s in (sa, sb))
        a, b = ptl.tensor(va).to(dtype), ptl.tensor(vb).to(dtype)
        # the first operand also through a transposed (non-contiguous) view
        pairs = [(a, b, va)]
        if a.dim() == 2 and a.shape == b.shape:
            at = ptl.tensor(np.ascontiguousarray(va.T)).to(dtype).t()
            pairs.append((at, b, va))
        for x, y, vx in pairs:
            with emulated(TUNINGS[tuning]) as ran:
                got = ptl.linalg.cross(x, y, dim=dim)
            want = np.cross(vx, vb, axis=dim) if vx.size else np.zeros(
                np.broadcast_shapes(sa, sb))
            assert got.dtype == dtype and tuple(got.shape) == want.shape
            if dtype.is_floating_point:
                tol = 1e-12 if dtype == ptl.float64 else 2e-6
                np.testing.assert_allclose(got.double().numpy(), want, rtol=tol, atol=tol * 10)
            else:
                np.testing.assert_array_equal(got.numpy(), want)
            assert x.numel() == 0 or ran["shape_gather"] > 0


def test_cross_errors_and_gradient_through_the_emulated_kernels():
    from pytorchlite.autograd import gradcheck
    with emulated(TUNINGS["small"]):
        with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have "
                                               "length 3. Got 4 and 4"):
            ptl.linalg.cross(ptl.ones(2, 4), ptl.ones(2, 4))
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            ptl.linalg.cross(ptl.ones(3), ptl.ones(3, dtype=ptl.float64))
        a = ptl.randn(4, 3, dtype=ptl.float64, requires_grad=True)
        b = ptl.randn(1, 3, dtype=ptl.float64, requires_grad=True)
        assert gradcheck(lambda x, y: ptl.linalg.cross(x, y), (a, b))


# (input sizes, dim, size, step): overlapping windows, windows that just meet, windows with
# gaps, a window as long as the dim, a 0-dim input and empty windows
UNFOLD_CASES = [((7,), 0, 3, 1), ((2, 9, 3), 1, 4, 2), ((5, 6), 1, 2, 2), ((5, 6), 0, 2, 3),
                ((4,), 0, 4, 1), ((), 0, 1, 1), ((3, 4), 1, 0, 1), ((6,), 0, 1, 5)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float16, ptl.float32, ptl.float64, ptl.int64], ids=str)
def test_unfold_backward_is_the_cpu_kernels(tuning, dtype):
    """the same bits as the CPU loop: each element's windows added in the same order"""
    rng = np.random.default_rng(14)
    for sizes, dim, size, step in UNFOLD_CASES:
        gshape = ptl.zeros(sizes).unfold(dim, size, step).shape
        v = rng.integers(-50, 50, gshape) if dtype == ptl.int64 else \
            rng.standard_normal(gshape) * 10 ** rng.uniform(-3, 3, gshape)
        g = ptl.tensor(v).to(dtype)
        for gg in [g] + ([g.transpose(0, -1).contiguous().transpose(0, -1)] if g.dim() > 1
                         else []):
            want = ptl.ops.aten.unfold_backward(gg, list(sizes), dim, size, step)
            with emulated(TUNINGS[tuning]):
                got = ptl.ops.aten.unfold_backward(gg, list(sizes), dim, size, step)
            assert got.dtype == dtype and got.shape == want.shape
            assert byte_view(got) == byte_view(want)
            # and against NumPy: every window's element added back at its position
            ref = np.zeros(sizes)
            moved = np.moveaxis(ref, dim, -1) if ref.ndim else ref.reshape(1)
            gv = np.moveaxis(gg.double().numpy(), dim, -2) if ref.ndim else \
                gg.double().numpy().reshape(1, -1)
            for w in range(gv.shape[-2]):
                for j in range(size):
                    moved[..., w * step + j] += gv[..., w, j]
            tol = 1e-2 if dtype == ptl.float16 else 1e-5 if dtype == ptl.float32 else 1e-12
            np.testing.assert_allclose(got.double().numpy(), ref, rtol=tol, atol=tol)


def test_unfold_backward_gradient_through_the_emulated_kernels():
    from pytorchlite.autograd import gradcheck
    x = ptl.randn(3, 8, dtype=ptl.float64, requires_grad=True)
    with emulated(TUNINGS["tiny"]):
        for size, step in ((3, 1), (2, 2), (2, 3)):
            assert gradcheck(lambda t: t.unfold(1, size, step), (x,))
        with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
            ptl.ops.aten.unfold_backward(ptl.ones(3, 2), [4], 0, 2, 0)


def cdist_ref(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(np.float64)
    if np.isinf(p):
        return d.max(-1, initial=0.0)
    return (d ** p).sum(-1) ** (1 / p)


CDIST_PS = [0, 0.5, 1, 1.5, 2, 3, float("inf")]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_cdist_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(15)
    for s1, s2 in (((5, 4), (6, 4)), ((2, 3, 2), (2, 7, 2)), ((0, 3), (4, 3)), ((3, 0), (2, 0)),
                   ((1, 5), (1, 5))):
        va, vb = rng.standard_normal(s1), rng.standard_normal(s2)
        if s1 == (5, 4):
            vb[2] = va[1]          # a zero distance
        a, b = ptl.tensor(va).to(dtype), ptl.tensor(vb).to(dtype)
        for p in CDIST_PS:
            want = ptl.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist")
            with emulated(TUNINGS[tuning]):
                got = ptl.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist")
            assert got.dtype == dtype and got.shape == want.shape
            tol = 1e-12 if dtype == ptl.float64 else 2e-5
            np.testing.assert_allclose(got.double().numpy(), cdist_ref(va, vb, p), rtol=tol,
                                       atol=tol)


@pytest.mark.parametrize("p", CDIST_PS)
def test_cdist_backward_matches_the_cpu_kernel_and_gradcheck(p):
    from pytorchlite.autograd import gradcheck
    rng = np.random.default_rng(16)
    va, vb = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3))
    vb[0, 2] = va[0, 1]            # a zero distance: the formulas' 0 branch
    vb[1, 3, 0] = va[1, 2, 0]      # a zero difference in one column (p < 1's extra 0)
    g = ptl.tensor(rng.standard_normal((2, 4, 5)))
    for dtype in (ptl.float64, ptl.float32):
        a, b = ptl.tensor(va).to(dtype), ptl.tensor(vb).to(dtype)
        dist = ptl.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist")
        want = ptl.ops.aten._cdist_backward(g.to(dtype), a, b, p, dist)
        with emulated(TUNINGS["small"]):
            got = ptl.ops.aten._cdist_backward(g.to(dtype), a, b, p, dist)
        tol = 1e-12 if dtype == ptl.float64 else 1e-5
        np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=tol,
                                   atol=tol)
    if p not in (0, 0.5):          # p < 1 is not differentiable where a difference is 0
        x = ptl.tensor(rng.standard_normal((3, 2)), requires_grad=True)
        y = ptl.tensor(rng.standard_normal((4, 2)), requires_grad=True)
        with emulated(TUNINGS["tiny"]):
            assert gradcheck(lambda s, t: ptl.cdist(s, t, p, "donot_use_mm_for_euclid_dist"),
                             (x, y))


# ---- embedding_renorm_ (Note [Device embedding_renorm_] in embedding.c) ----

@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_embedding_renorm_matches_numpy(tuning, dtype):
    rng = np.random.default_rng(17)
    for idx_shape, idx_dtype in (((6,), ptl.int64), ((3, 4), ptl.int32), ((0,), ptl.int64)):
        for p, max_norm in ((2.0, 1.0), (1.0, 2.5), (3.0, 0.7)):
            v = rng.standard_normal((9, 5)) * 2
            iv = rng.integers(0, 9, idx_shape)
            w = ptl.tensor(v).to(dtype)
            want = w.clone()
            with ptl.no_grad():
                ptl.embedding_renorm_(want, ptl.tensor(iv).to(idx_dtype), max_norm, p)
                with emulated(TUNINGS[tuning]):
                    out = ptl.embedding_renorm_(w, ptl.tensor(iv).to(idx_dtype), max_norm, p)
            assert out is w
            ref = v.copy()
            for r in np.unique(iv):
                n = np.sum(np.abs(v[r]) ** p) ** (1 / p)
                if n > max_norm:
                    ref[r] = v[r] * (max_norm / (n + 1e-7))
            tol = 1e-12 if dtype == ptl.float64 else 1e-6
            np.testing.assert_allclose(w.double().numpy(), ref, rtol=tol, atol=tol)
            np.testing.assert_allclose(w.double().numpy(), want.double().numpy(), rtol=tol,
                                       atol=tol)


def test_embedding_renorm_errors_and_the_module_through_the_emulated_kernels():
    with emulated(TUNINGS["small"]), ptl.no_grad():
        w = ptl.randn(5, 3)
        with pytest.raises(IndexError, match="index out of range in self"):
            ptl.embedding_renorm_(w, ptl.tensor([1, 5]), 1.0, 2.0)
        with pytest.raises(IndexError, match="index out of range in self"):
            ptl.embedding_renorm_(w, ptl.tensor([-1]), 1.0, 2.0)
        with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to "
                                               "have one of the following scalar types"):
            ptl.embedding_renorm_(w, ptl.tensor([1.0]), 1.0, 2.0)
    emb = ptl.nn.Embedding(10, 4, max_norm=0.5)
    with emulated(TUNINGS["tiny"]):
        out = emb(ptl.tensor([[1, 2], [2, 7]]))
    assert float(out.norm(dim=-1).max()) <= 0.5 + 1e-6


# ---- frexp (Note [Device frexp] in unary.c): the CPU's bits ----

FREXP_SPECIAL = [0.0, -0.0, 1.0, -1.5, 0.75, 1e-40, -1e-45, 1e-310, 5e-324, np.inf, -np.inf,
                 np.nan, 1e30, -7e-20, 65504.0, 6e-8, 1e-5, 2.0 ** -126, 3.4e38, 2.0 ** -149]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64],
                         ids=str)
def test_frexp_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(18)
    wide = rng.standard_normal(300) * 10.0 ** rng.integers(-320, 300, 300)
    base = ptl.tensor(np.concatenate([FREXP_SPECIAL, wide])).to(dtype)
    for x in (base, base[::3], base[:20].reshape(4, 5).t(), base[5], base[:0]):
        m0, e0 = ptl.frexp(x)
        with emulated(TUNINGS[tuning]):
            m1, e1 = ptl.frexp(x)
        assert m1.dtype == dtype and e1.dtype == ptl.int32 and m1.shape == x.shape
        assert byte_view(m1) == byte_view(m0) and byte_view(e1) == byte_view(e0)
        # and NumPy's frexp (finite values; float16/bfloat16 as float32 values)
        v = x.double().numpy()
        fin = np.isfinite(v)
        nm, ne = np.frexp(v[fin])
        np.testing.assert_array_equal(m1.double().numpy()[fin], nm)
        np.testing.assert_array_equal(e1.numpy()[fin], ne)
    mo, eo = ptl.empty(0, dtype=dtype), ptl.empty(7, dtype=ptl.int32)
    with emulated(TUNINGS[tuning]):
        r = ptl.frexp(base[:6], out=(mo, eo))
    assert r[0] is mo and r[1] is eo and mo.shape == (6,) and eo.shape == (6,)
    assert byte_view(mo) == byte_view(ptl.frexp(base[:6])[0])


def test_frexp_errors_are_the_cpu_kernels():
    with emulated(TUNINGS["small"]):
        with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point "
                                               "dtypes"):
            ptl.frexp(ptl.tensor([1, 2]))
        with pytest.raises(RuntimeError, match=r"torch.frexp\(\) expects mantissa to have dtype "
                                               "float but got double"):
            ptl.frexp(ptl.ones(2), out=(ptl.empty(2, dtype=ptl.float64),
                                        ptl.empty(2, dtype=ptl.int32)))
        with pytest.raises(RuntimeError, match=r"torch.frexp\(\) expects exponent to have int "
                                               "dtype but got long int"):
            ptl.frexp(ptl.ones(2), out=(ptl.empty(2), ptl.empty(2, dtype=ptl.int64)))


# ---- _sample_dirichlet (random.c): the gamma draws over their float64 sum on the device ----

@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_sample_dirichlet_is_the_cpu_kernels(tuning, dtype):
    rng = np.random.default_rng(19)
    for shape in ((5, 4), (2, 3, 7), (3,), (), (0, 3), (4, 1)):
        alpha = ptl.tensor(rng.uniform(0.2, 3.0, shape)).to(dtype)
        want = ptl._sample_dirichlet(alpha, generator=ptl.Generator().manual_seed(3))
        with emulated(TUNINGS[tuning]):
            got = ptl._sample_dirichlet(alpha, generator=ptl.Generator().manual_seed(3))
        assert got.dtype == dtype and got.shape == want.shape
        tol = 1e-12 if dtype == ptl.float64 else 1e-6
        np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=tol,
                                   atol=tol)
        if alpha.numel():
            np.testing.assert_allclose(got.double().numpy().sum(-1) if got.dim() else
                                       got.double().numpy(), 1.0, rtol=1e-5)
