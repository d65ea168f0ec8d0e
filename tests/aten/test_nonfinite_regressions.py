"""Regressions found by the non-finite sweep against PyTorch (test_nonfinite_vs_torch.py), each
checked here without torch: against NumPy in float64 or PyTorch's known value and message."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import num_threads
from pytorchlite import _C

HUGE = [1e308, 0.5, -1.0, 0.25, 1.5]


@pytest.mark.parametrize("n", [5, 17, 257, 2049, 4099])
@pytest.mark.parametrize("threads", [1, 2])
def test_var_of_huge_values_is_inf_not_nan(n, threads):
    # var_combine's first part multiplied delta * delta (inf) by a count of 0: nan
    a = np.random.default_rng(n).uniform(-2, 2, (3, n))
    a[0, 0] = a[1, n // 2] = a[2, n - 1] = 1e308
    with num_threads(threads):
        for x, dim in ((ptl.tensor(a), 1), (ptl.tensor(a.T.copy()), 0), (ptl.tensor(a), None)):
            v = ptl.var(x) if dim is None else ptl.var(x, dim)
            assert np.all(np.isposinf(v.numpy())), (dim, v)
            s = ptl.std(x) if dim is None else ptl.std(x, dim)
            assert np.all(np.isposinf(s.numpy())), (dim, s)


@pytest.mark.parametrize("n", [5, 64, 2049])
@pytest.mark.parametrize("threads", [1, 2])
def test_var_mean_of_values_whose_sum_overflows(n, threads):
    # the mean of a row whose sum overflows is finite (PyTorch's Welford mean): the block's
    # mean, and the weight n / total taken before delta * n
    a = np.random.default_rng(n).uniform(-2, 2, (2, n))
    a[:, 0] = a[:, -1] = 1e308
    exact = (a / n).sum(axis=1)
    with num_threads(threads):
        var, mean = ptl.var_mean(ptl.tensor(a), 1)
        np.testing.assert_allclose(mean.numpy(), exact, rtol=1e-12)
        assert np.all(np.isposinf(var.numpy()))
        var, mean = ptl.var_mean(ptl.tensor(a))
        np.testing.assert_allclose(mean.numpy(), exact.mean(), rtol=1e-12)


def test_var_of_one_huge_row():
    assert math.isinf(ptl.var(ptl.tensor(HUGE, dtype=ptl.float64)).item())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_batch_norm_with_nan_gives_nan_statistics(dtype):
    # the biased variance was clamped by v > 0 ? v : 0, which made nan 0: invstd 1 / sqrt(eps)
    a = np.random.default_rng(0).uniform(-2, 2, (4, 3, 5))
    a[1, 1, 2] = np.nan
    x = ptl.tensor(a, dtype=dtype)
    rm, rv = ptl.zeros(3, dtype=dtype), ptl.ones(3, dtype=dtype)
    out, save_mean, save_invstd = ptl.ops.aten.native_batch_norm(
        x, None, None, rm, rv, True, 0.1, 1e-5)
    assert np.isnan(save_invstd.numpy()[1]) and np.isnan(rv.numpy()[1])
    assert np.all(np.isnan(out.numpy()[:, 1]))
    for c in (0, 2):
        ref = a[:, c]
        np.testing.assert_allclose(out.numpy()[:, c], (ref - ref.mean()) / np.sqrt(
            ref.var() + 1e-5), rtol=1e-4 if dtype == ptl.float32 else 1e-9, atol=1e-5)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_group_norm_with_nan_gives_nan_rstd(dtype):
    a = np.random.default_rng(0).uniform(-2, 2, (2, 4, 3))
    a[0, 0, 0] = np.nan
    out, mean, rstd = ptl.ops.aten.native_group_norm(
        ptl.tensor(a, dtype=dtype), None, None, 2, 4, 3, 2, 1e-5)
    assert np.isnan(rstd.numpy()[0, 0]) and np.all(np.isfinite(rstd.numpy().ravel()[1:]))
    assert np.all(np.isnan(out.numpy()[0, :2]))
    assert np.all(np.isfinite(out.numpy()[0, 2:])) and np.all(np.isfinite(out.numpy()[1]))


@pytest.mark.parametrize("target", [np.nan, -0.5, 1.5])
def test_binary_cross_entropy_refuses_a_target_outside_0_1(target):
    x = ptl.tensor([0.2, 0.5, 0.7], dtype=ptl.float64)
    t = ptl.tensor([0.5, target, 1.0], dtype=ptl.float64)
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        ptl.nn.functional.binary_cross_entropy(x, t)


@pytest.mark.parametrize("values, lo, hi", [([0.5, np.nan, 1.0], 0, 0),
                                            ([np.nan, 0.5, 1.0], 0, 0),
                                            ([0.5, np.inf, 1.0], 0, 0),
                                            ([0.5, 0.7, 1.0], -np.inf, 1),
                                            ([0.5, 0.7, 1.0], 0, np.nan)])
def test_histc_refuses_a_range_that_is_not_finite(values, lo, hi):
    # the data's range skipped nan after the first element (PyTorch's propagates it)
    x = ptl.tensor(values, dtype=ptl.float64)
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[.*\] is not finite"):
        ptl.histc(x, 4, lo, hi)


# ---- grid_sampler: a grid coordinate that is not finite (Note [Grid sampler non-finite
# coordinates]) ----

_GS_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GS_PADS = {"zeros": 0, "border": 1, "reflection": 2}
_GS_FAR = 5.0   # a finite coordinate whose taps are all outside (zeros padding)


def _gs_run(x, g, mode, pad, align, go):
    """grid_sampler_{2,3}d's output, input gradient and grid gradient (float64 numpy)."""
    xt, gt = ptl.tensor(x).requires_grad_(), ptl.tensor(g).requires_grad_()
    op = ptl.ops.aten.grid_sampler_2d if x.ndim == 4 else ptl.ops.aten.grid_sampler_3d
    y = op(xt, gt, _GS_MODES[mode], _GS_PADS[pad], align)
    y.backward(ptl.tensor(go))
    return y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()


def _gs_case(nd, c, npts, seed):
    """Input (1, c, [3,] 4, 5), a grid of npts points and its bad points planted: nan or inf
    in the first component, the second, or all (rows 0..3 of `bad`)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (1, c) + ((3,) if nd == 3 else ()) + (4, 5))
    g = rng.uniform(-1.1, 1.1, (1,) + (1,) * (nd - 2) + (1, npts, nd))
    flat = g.reshape(npts, nd)
    bad = {0: [0], npts // 2: [1], npts - 1: list(range(nd)), npts // 3: [nd - 1]}
    vals = {0: np.nan, npts // 2: np.nan, npts - 1: np.nan, npts // 3: -np.inf}
    return x, g, flat, bad, vals


@pytest.mark.parametrize("nd, mode", [(2, "bilinear"), (2, "bicubic"), (3, "bilinear")])
@pytest.mark.parametrize("c", [1, 9])          # channels-last from GS_CL_MIN_C = 8 channels
@pytest.mark.parametrize("npts", [5, 64, 130])  # blocks of GS_BLOCK = 64 points
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_nan_coordinate_is_nan_with_zeros_padding(nd, mode, c, npts, align):
    # a nan (or inf) coordinate read zeros at taps it skipped: 0 where PyTorch's 2-d kernel
    # multiplies those zeros by its nan weights
    x, g, flat, bad, vals = _gs_case(nd, c, npts, seed=npts + c)
    clean = g.copy()
    for p, comps in bad.items():
        flat[p, comps] = vals[p]
        clean.reshape(npts, nd)[p, comps] = _GS_FAR
    go = np.random.default_rng(1).uniform(0.5, 1.5, x.shape[:2] + g.shape[1:-1])
    for threads in (1, 2):
        with num_threads(threads):
            y, gx, gg = _gs_run(x, g, mode, "zeros", align, go)
            y0, gx0, gg0 = _gs_run(x, clean, mode, "zeros", align, go)
        ys, y0s = y.reshape(c, npts), y0.reshape(c, npts)
        gg, gg0 = gg.reshape(npts, nd), gg0.reshape(npts, nd)
        good = [p for p in range(npts) if p not in bad]
        np.testing.assert_array_equal(ys[:, good], y0s[:, good])
        np.testing.assert_array_equal(gg[good], gg0[good])
        np.testing.assert_array_equal(gx, gx0)   # the bad points' taps take no gradient
        for p, comps in bad.items():
            assert np.all(np.isnan(ys[:, p])), (p, ys[:, p])
            for d in range(nd):
                nan = mode == "bicubic" or any(k != d for k in comps)
                assert np.isnan(gg[p, d]) if nan else gg[p, d] == 0, (p, d, gg[p])


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("pad", ["border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sampler_nan_coordinate_clips_to_the_first_pixel(nd, pad, mode):
    # border and reflection padding move a nan coordinate to pixel 0, as PyTorch's 2-d kernel
    x, g, flat, bad, vals = _gs_case(nd, 3, 70, seed=3)
    clean = g.copy()
    for p in (0, 35):
        flat[p, 0] = np.nan
        clean.reshape(70, nd)[p, 0] = -1.0   # pixel 0 with align_corners
    go = np.ones(x.shape[:2] + g.shape[1:-1])
    y, gx, _ = _gs_run(x, g, mode, pad, True, go)
    y0, gx0, _ = _gs_run(x, clean, mode, pad, True, go)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(gx, gx0)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_grid_sampler_nan_coordinate_on_the_device_path(mode):
    # the per-point functions the CUDA kernels run (emulated here) give the CPU's values
    x, g, flat, bad, vals = _gs_case(2, 2, 70, seed=5)
    for p, comps in bad.items():
        flat[p, comps] = vals[p]
    go = np.random.default_rng(2).uniform(0.5, 1.5, x.shape[:2] + g.shape[1:-1])
    want = _gs_run(x, g, mode, "zeros", False, go)
    _C._cuda_kernel_emulation((64, 6, 3, 8))
    try:
        got = _gs_run(x, g, mode, "zeros", False, go)
    finally:
        ran = _C._cuda_kernel_emulation(None)
    assert ran, "the emulated kernels did not run"
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# ---- flash attention: a nan score makes its row's output and logsumexp nan (Note
# [Attention with NaN]) ----

def _sdpa(q, k, v, causal=False, mask=None):
    out, lse = ptl.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, causal, attn_mask=mask)[:2]
    return out.numpy().astype(np.float64), lse.numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("S", [5, 64, 150])       # key blocks of SDPA_BK = 64
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_flash_attention_nan_query_gives_nan_logsumexp(dtype, S, causal, masked):
    # the row maximum skips nan, so a row of nan scores looked masked: lse +inf, output 0
    rng = np.random.default_rng(S)
    L = 40                                          # query blocks of SDPA_BQ = 32
    q, k, v = (rng.uniform(-1, 1, (1, 2, n, 8)) for n in (L, S, S))
    q[0, 0, 3, 2] = q[0, 1, 35, 0] = np.nan
    mask = None
    if masked:
        m = np.zeros((L, S))
        m[7, :] = -np.inf                           # a row with every key masked
        mask = ptl.tensor(m, dtype=dtype)
    for threads in (1, 2):
        with num_threads(threads):
            out, lse = _sdpa(*(ptl.tensor(a, dtype=dtype) for a in (q, k, v)), causal, mask)
        for h, r in ((0, 3), (1, 35)):
            assert np.all(np.isnan(out[0, h, r])) and np.isnan(lse[0, h, r]), (h, r)
        rest = np.ones((2, L), bool)
        rest[0, 3] = rest[1, 35] = False
        if masked:
            assert np.all(np.isposinf(lse[0, :, 7])) and np.all(out[0, :, 7] == 0)
            rest[:, 7] = False
        assert np.all(np.isfinite(lse[0][rest])) and np.all(np.isfinite(out[0][rest]))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("S", [5, 64, 150])
def test_flash_attention_nan_key_gives_nan_logsumexp(dtype, S):
    # the exponentials of a nan score are nan: l is nan, and lse = m + log(l) is too (it was
    # +inf: l > 0 is false for nan)
    rng = np.random.default_rng(S + 1)
    q, k, v = (rng.uniform(-1, 1, (1, 1, n, 4)) for n in (9, S, S))
    k[0, 0, S // 2, 1] = np.nan
    for causal in (False, True):
        out, lse = _sdpa(*(ptl.tensor(a, dtype=dtype) for a in (q, k, v)), causal)
        sees = np.arange(9) >= S // 2 if causal else np.ones(9, bool)
        assert np.all(np.isnan(lse[0, 0, sees])) and np.all(np.isnan(out[0, 0, sees]))
        assert np.all(np.isfinite(lse[0, 0, ~sees])) and np.all(np.isfinite(out[0, 0, ~sees]))


# ---- mode: each nan a value of its own (Note [Mode with NaN]) ----

def _np_mode(row):
    """PyTorch's algorithm over sort's order (stable, nan last): the first longest run of
    equal values (each nan a run of 1) and the last index in it."""
    order = np.argsort(row, kind="stable")
    s = row[order]
    best, best_len, i = 0, 0, 0
    while i < len(s):
        j = i + 1
        while j < len(s) and s[j] == s[i]:
            j += 1
        if j - i > best_len:
            best, best_len = j - 1, j - i
        i = j
    return s[best], order[best]


@pytest.mark.parametrize("n", [1, 5, 31, 32, 33, 100, 2049])   # SMALL_LANE = 32
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_mode_counts_each_nan_apart(n, dtype):
    # nans compared as sort keys were one value: two nans outvoted a number seen twice less
    rng = np.random.default_rng(n)
    a = rng.integers(0, max(2, n // 4), (6, n)).astype(np.float64)
    a[0, :] = np.nan                                   # all nan: nan, index 0
    a[1, : (n + 1) // 2] = np.nan                      # a majority of nans
    a[2, rng.choice(n, max(1, n // 3), replace=False)] = np.nan
    a[3, -1] = np.nan
    a[4, 0] = np.nan
    for threads in (1, 2):
        with num_threads(threads):
            for x, dim in ((ptl.tensor(a, dtype=dtype), 1),
                           (ptl.tensor(a.T.copy(), dtype=dtype), 0),
                           (ptl.tensor(a.T.copy(), dtype=dtype).t(), 1)):
                values, indices = ptl.mode(x, dim)
                for r in range(6):
                    want_v, want_i = _np_mode(a[r])
                    got_v, got_i = values[r].item(), indices[r].item()
                    assert (np.isnan(want_v) and np.isnan(got_v)) or got_v == want_v, (r, got_v)
                    assert got_i == want_i, (r, got_i, want_i)
    v, i = ptl.mode(ptl.tensor([np.nan, 1.0, np.nan, 1.0, np.nan], dtype=dtype))
    assert v.item() == 1.0 and i.item() == 3


def test_mode_counts_each_nan_apart_on_the_device_path():
    a = np.array([[np.nan, np.nan, 2.0, 1.0, np.nan], [np.nan] * 5, [3.0, np.nan, 3.0, 1.0, 1.0]])
    want = [_np_mode(r) for r in a]
    _C._cuda_kernel_emulation((64, 6, 3, 8))
    try:
        values, indices = ptl.mode(ptl.tensor(a), 1)
    finally:
        ran = _C._cuda_kernel_emulation(None)
    assert ran, "the emulated kernels did not run"
    for r, (v, i) in enumerate(want):
        assert (np.isnan(v) and np.isnan(values[r].item())) or values[r].item() == v
        assert indices[r].item() == i


# ---- float32 batch_norm with values near 1e38 (Note [Batch norm float overflow]) ----

@pytest.mark.parametrize("m", [5, 17, 300, 9000])   # float lanes of 32 and 8, chunks of 8192
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_norm_float32_near_1e38_normalizes(m, threads):
    # the float lanes squared x - K near 1e38 to inf: the channel normalized to 0
    rng = np.random.default_rng(m)
    a = rng.uniform(-2, 2, (m, 3)).astype(np.float32)
    a[0, 0] = 1e38                                     # K itself huge
    a[m // 2, 1] = a[m - 1, 1] = -1e38                 # far from K
    a[:, 2] *= 1e37                                    # every value large
    want = (a.astype(np.float64) - a.mean(0, dtype=np.float64)) / np.sqrt(
        a.astype(np.float64).var(0) + 1e-5)
    dy = rng.uniform(-1, 1, (m, 3)).astype(np.float32)
    x, w = ptl.tensor(a).requires_grad_(), ptl.ones(3).requires_grad_()
    with num_threads(threads):
        y = ptl.nn.functional.batch_norm(x, None, None, w, training=True)
        y.backward(ptl.tensor(dy))
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-5)
    # the backward's sums: grad_weight = sum(dy y); dx (near 1e-38) only finite, as float32
    # holds it
    np.testing.assert_allclose(w.grad.numpy(), (dy * want).sum(0), rtol=1e-4, atol=1e-4)
    assert np.all(np.isfinite(x.grad.numpy()))


# ---- special functions at the infinities (Note [Special functions at the infinities]) ----

_NAN_AT_INF = [ptl.special.bessel_j0, ptl.special.bessel_j1, ptl.special.airy_ai, ptl.i0,
               ptl.special.i1, ptl.special.modified_bessel_i0, ptl.special.modified_bessel_i1]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("n", [1, 7, 33, 300])   # the vector lanes, their tails, the blocks
def test_bessel_airy_i0_i1_are_nan_at_the_infinities(dtype, n):
    # PyTorch's float32 and float64 (and SciPy's j0, j1, y0, y1, airy, i0, i1) give NaN; ours
    # gave the limits 0 and +-inf
    a = np.random.default_rng(n).uniform(-3, 3, 2 * n)
    a[0], a[-2] = np.inf, -np.inf
    for x in (ptl.tensor(a, dtype=dtype), ptl.tensor(a, dtype=dtype)[::2]):
        inf = np.isinf(x.numpy())
        for f in _NAN_AT_INF + [ptl.special.bessel_y0, ptl.special.bessel_y1]:
            got = f(x).numpy()
            assert np.all(np.isnan(got[inf])), (f, got[inf])
            pos = ~inf & (x.numpy() > 0)
            assert np.all(np.isfinite(got[pos])), f
    for f in (ptl.special.i0e, ptl.special.i1e, ptl.special.spherical_bessel_j0):
        got = f(ptl.tensor([np.inf, -np.inf], dtype=dtype)).numpy()
        assert np.array_equal(got, [0.0, 0.0]), (f, got)   # as PyTorch's


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_zeta_and_polygamma_at_the_infinities(dtype):
    # PyTorch's: zeta(s, +inf) NaN but zeta(1, q) inf, zeta(s, -inf) inf (a pole);
    # trigamma 0 at +inf, NaN at -inf (no limit); polygamma(2, +inf) NaN (zeta's)
    s = ptl.tensor([2.0, 3.0, 1.0, 2.0], dtype=dtype)
    q = ptl.tensor([np.inf, np.inf, np.inf, -np.inf], dtype=dtype)
    np.testing.assert_array_equal(ptl.special.zeta(s, q).numpy(), [np.nan, np.nan, np.inf,
                                                                    np.inf])
    for x in (ptl.tensor([np.inf, -np.inf, 2.0] * 11, dtype=dtype),
              ptl.tensor([np.inf, -np.inf, 2.0] * 22, dtype=dtype)[::2]):
        t = ptl.polygamma(1, x).numpy()
        inf = x.numpy()
        assert np.all(t[inf == np.inf] == 0.0) and np.all(np.isnan(t[inf == -np.inf]))
        assert np.all(np.isnan(ptl.polygamma(2, x).numpy()[inf == np.inf]))


# ---- Chebyshev polynomials next to x = +-1 ----

def _cheb_ref(kind, k, x):
    import mpmath
    with mpmath.workdps(50):
        x = mpmath.mpf(x)
        if kind == "t":
            return mpmath.chebyt(k, x)
        u, u1 = mpmath.chebyu(k, x), mpmath.chebyu(k - 1, x)
        return {"u": u, "v": u - u1, "w": u + u1}[kind]


# the degrees at and across the kernels' switches: the recurrence to 16 (float64) or 256
# (float32's lanes), the closed forms above, the recurrence outside [-1, 1] to 1024
CHEB_DEGREES = [15, 16, 17, 40, 255, 256, 257, 1023, 1024, 1025]


@pytest.mark.parametrize("kind", "tuvw")
@pytest.mark.parametrize("shifted", [False, True])
def test_chebyshev_next_to_plus_minus_one(kind, shifted):
    # U and V took theta = acos x next to pi at x -> -1: sin((k + 1) theta) lost 3 to 6
    # digits (4e-10 relative at k = 17); outside, the recurrence lost k^2 / 100 ulps
    import mpmath
    name = ("shifted_" if shifted else "") + f"chebyshev_polynomial_{kind}"
    f = getattr(ptl.special, name)
    gen = np.random.default_rng(1)
    xs = []
    for d in (1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 0.3):
        for side in (1, -1):
            xs += [side * (1 - d * gen.uniform(0.5, 1)), side * (1 + d * gen.uniform(0.5, 1))]
    xs = np.array(xs)
    pts = (xs + 1) / 2 if shifted else xs   # the shifted ones at 2x - 1: x next to 0 and 1
    for dtype, tol in ((ptl.float64, None), (ptl.float32, 2.0 ** -21)):
        pd = ptl.tensor(pts, dtype=dtype)
        for k in CHEB_DEGREES:
            got = f(pd, ptl.tensor([float(k)] * len(pts), dtype=dtype)).numpy()
            for p, g in zip(pd.numpy().astype(np.float64), got.astype(np.float64)):
                xp = 2 * mpmath.mpf(p) - 1 if shifted else mpmath.mpf(p)
                ref = _cheb_ref(kind, k, xp)
                env = max(abs(ref), {"t": 1, "u": k + 1}.get(kind, 2 * k + 1)) \
                    if abs(xp) < 1 else abs(ref)
                err = float(abs(g - ref) / env)
                if tol is None and abs(ref) < 1e308:   # an ulp a degree outside [-1, 1]
                    bound = 48 + (k / 4 if abs(xp) < 1 else k)
                    assert err <= bound * 2.0 ** -52, (name, k, p, err / 2.0 ** -52)
                elif tol is not None and abs(ref) < 3e38:
                    assert err <= tol * (1 if abs(xp) < 1 else k / 16), (name, k, p, g, err)


# ---- lerp next to the top of the range ----

def _lerp_exact(a, b, w, dtype):
    """lerp's value rounded once from the exact a + w (b - a) (the fused form's, as PyTorch's
    vector kernel, is fma(w - 1, fl(b - a), b): within an ulp of it)"""
    from fractions import Fraction as F
    np_dt = np.float32 if dtype == ptl.float32 else np.float64
    out = []
    for x, y, z in zip(a, b, w):
        v = F(float(x)) + F(float(z)) * (F(float(y)) - F(float(x)))
        try:
            with np.errstate(over="ignore"):
                out.append(float(np_dt(float(v))))
        except OverflowError:
            out.append(math.inf if v > 0 else -math.inf)
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("n", [1, 5, 16, 37])   # the vector lanes and their tails
def test_lerp_whose_product_overflows_but_result_does_not(dtype, n):
    # end = 1e308 (float32: 1.5e38 from -1e38), weight -1.6: (w - 1) (end - start) overflows,
    # the result does not; ours computed end - (end - start) (1 - w) with the product rounded
    big = 1e308 if dtype == ptl.float64 else 1.5e38
    gen = np.random.default_rng(n)
    a = np.where(np.arange(n) % 2 == 0, gen.uniform(-2, 2, n), -big / 1.5)
    b = np.full(n, big)
    w = np.where(np.arange(n) % 3 == 0, -1.6, gen.uniform(-2.5, 2.5, n))
    w[np.arange(n) % 2 == 1] = -0.55
    np_dt = np.float32 if dtype == ptl.float32 else np.float64
    a, b, w = a.astype(np_dt), b.astype(np_dt), w.astype(np_dt)
    want = _lerp_exact(a, b, w, dtype)
    for start, end, weight in ((ptl.tensor(a), ptl.tensor(b), ptl.tensor(w)),
                               (ptl.tensor(np.repeat(a, 2))[::2], ptl.tensor(b[:1]),
                                ptl.tensor(np.repeat(w, 3))[::3])):
        got = ptl.lerp(start, end, weight).numpy().astype(np.float64)
        assert np.array_equal(np.isinf(got), np.isinf(want)), (got, want)
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np_dt).eps)
    got = ptl.lerp(ptl.tensor(a), ptl.tensor(b), -1.6).numpy().astype(np.float64)
    want = _lerp_exact(a, b, np.full(n, np_dt(-1.6)), dtype)
    assert np.all(np.isfinite(got)) or not np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np_dt).eps)


# ---- float32 products whose lanes leave the range ----

def _prod_class_ref(a, axis):
    """The exact product's float32 value along axis: its sign, inf, 0 or NaN, and its
    magnitude from the sum of logs (no underflow in between)"""
    with np.errstate(all="ignore"):
        nan = np.isnan(a).any(axis) | (np.isinf(a).any(axis) & (a == 0).any(axis))
        sign = np.where((np.signbit(a).sum(axis) % 2) == 1, -1.0, 1.0)
        logs = np.log(np.abs(a.astype(np.float64))).sum(axis)
        mag = np.exp(np.clip(logs, -800, 800))
    ref = np.where(logs > np.log(3.4028234663852886e38), np.inf, mag)
    ref = np.where(logs < np.log(2.0 ** -150), 0.0, ref)
    return np.where(nan, np.nan, sign * ref)


# the lengths at and across the float32 lanes (64), a strided run's block (1024), and the
# column kernels' rows and widths (16, 64, 128, 256)
PROD_SIZES = [(3, 63), (3, 65), (2, 1025), (2, 2049), (17, 129), (65, 257), (5, 4099)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", PROD_SIZES, ids=str)
def test_float32_prod_of_lanes_that_underflow_then_meet_inf(shape, threads):
    # 2049 values in [-2, 2] and an inf: a lane's product underflowed to 0, then 0 * inf =
    # NaN where the product is +-inf; a lane with 1e30 twice and 1e-30 twice overflowed
    R, n = shape
    gen = np.random.default_rng(R * n)
    for a in (gen.uniform(-2, 2, (R, n)), np.ones((R, n))):
        a = a.astype(np.float32)
        if a[0, 0] == 1.0:   # one lane's 1e30, 1e30, 1e-30, 1e-30 (values 64 apart)
            for c, v in zip(range(0, min(n, 256), 64), (1e30, 1e30, 1e-30, 1e-30)):
                a[:, c] = v
        else:
            a[:, n // 2] = np.inf
            a[R // 2, 0] = -np.inf
        with num_threads(threads):
            for x, dim, axis in ((ptl.tensor(a), 1, 1), (ptl.tensor(a.T.copy()), 0, 1),
                                 (ptl.tensor(a.T.copy()).t(), -1, 1),
                                 (ptl.tensor(a), None, None)):
                got = (ptl.prod(x) if dim is None else ptl.prod(x, dim)).numpy()
                ref = _prod_class_ref(a, axis)
                assert np.array_equal(np.isnan(got), np.isnan(ref)), (dim, got, ref)
                assert np.array_equal(np.isinf(got), np.isinf(ref)), (dim, got, ref)
                assert np.array_equal(got == 0, ref == 0), (dim, got, ref)
                fin = np.isfinite(ref)
                np.testing.assert_allclose(got[fin], ref[fin], rtol=2e-3)
                assert np.array_equal(np.sign(got[~np.isnan(ref)]),
                                      np.sign(ref[~np.isnan(ref)])), (dim, got, ref)
