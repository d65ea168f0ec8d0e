"""Norms and moments of complex64/complex128 tensors (src/aten/native/complex_norm.c, Note
[Complex norms]): linalg.vector_norm for every ord, Tensor.norm / torch.norm,
linalg.norm, linalg.matrix_norm, linalg.cond, dist, F.normalize, F.pairwise_distance and
var / std / var_mean / std_mean, against NumPy in complex128 on random shapes (0-dim, size
0, broadcast and non-contiguous views) on one and two threads; the results are real
(float32 for complex64).  Overflow: the norms of values near 1e300 are finite where the
norm is.  Errors keep PyTorch 2.13's types and messages.  Gradients:
tests/autograd/test_complex_norm_grad.py."""
import math

import numpy as np
import pytest

import pytorchlite as ptl

from helpers import assert_raises_like_torch, torch, torch_ref

DTYPES = [(ptl.complex128, np.complex128, ptl.float64, 1e-12),
          (ptl.complex64, np.complex64, ptl.float32, 2e-5)]
LAYOUTS = ["contiguous", "transposed", "stepped", "broadcast"]
ORDS = [2, 1, 0, math.inf, -math.inf, 0.5, 3, -1, -2, 2.5]


@pytest.fixture(params=DTYPES, ids=["complex128", "complex64"])
def cdt(request):
    return request.param


def _crand(shape, seed):
    g = np.random.default_rng(seed)
    return g.standard_normal(shape) + 1j * g.standard_normal(shape)


def _tensor(shape, npdt, layout, seed=0):
    """(a pytorchlite tensor of `shape` laid out as `layout`, its values as complex128)"""
    if layout == "transposed" and len(shape) >= 2:
        a = _crand(shape[::-1], seed).astype(npdt)
        return ptl.tensor(a).permute(list(range(len(shape)))[::-1]), a.T.astype(np.complex128)
    if layout == "stepped" and len(shape) >= 1:
        big = _crand(shape[:-1] + (2 * shape[-1],), seed).astype(npdt)
        return ptl.tensor(big)[..., ::2], big[..., ::2].astype(np.complex128)
    if layout == "broadcast" and len(shape) >= 1:
        row = _crand(shape[-1:], seed).astype(npdt)
        return ptl.tensor(row).expand(shape), np.broadcast_to(row, shape).astype(np.complex128)
    a = _crand(shape, seed).astype(npdt)
    return ptl.tensor(a), a.astype(np.complex128)


def _np_norm(a, ord, axis, keepdim):
    m = np.abs(a)
    if ord == 0:
        r = (m != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    elif ord == math.inf:
        r = m.max(axis=axis, keepdims=keepdim, initial=0.0)
    elif ord == -math.inf:
        r = m.min(axis=axis, keepdims=keepdim)
    else:
        with np.errstate(divide="ignore"):
            r = (m ** ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(r)


def _close(got, want, rdt, tol):
    assert got.dtype == rdt
    got = got.numpy()
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((), None), ((5,), None), ((3, 4), None), ((3, 4), 1),
                                       ((2, 3, 4), (0, 2)), ((0, 3), 1), ((4, 0), 0),
                                       ((37, 65), -1)])
@pytest.mark.parametrize("ord", ORDS)
def test_vector_norm(cdt, layout, shape, dim, ord, threads):
    tdt, npdt, rdt, tol = cdt
    x, a = _tensor(shape, npdt, layout)
    empty_axis = a.size == 0 and (dim is None or any(
        a.shape[d] == 0 for d in ((dim,) if isinstance(dim, int) else dim)))
    if empty_axis and (ord < 0 or ord == math.inf):
        with pytest.raises(RuntimeError, match="does not have an identity"):
            ptl.linalg.vector_norm(x, ord, dim)
        return
    for keepdim in (False, True):
        axis = tuple(range(a.ndim)) if dim is None else dim
        want = _np_norm(a, ord, axis, keepdim)
        if dim is None and keepdim:
            want = want.reshape((1,) * a.ndim)
        _close(ptl.linalg.vector_norm(x, ord, dim, keepdim), want, rdt, tol)
    if dim is not None:
        d = [dim] if isinstance(dim, int) else list(dim)
        _close(x.norm(ord, d), _np_norm(a, ord, tuple(d), False), rdt, tol)
    if a.size or not (ord < 0 or ord == math.inf):
        _close(x.norm(ord), _np_norm(a, ord, None, False), rdt, tol)


def test_vector_norm_dtype_and_errors():
    x = ptl.tensor(_crand((3, 4), 1).astype(np.complex64))
    r = ptl.linalg.vector_norm(x, dtype=ptl.complex128)
    assert r.dtype == ptl.float64
    np.testing.assert_allclose(r.item(), np.linalg.norm(x.numpy().astype(np.complex128)),
                               rtol=1e-12)
    assert_raises_like_torch(
        lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.complex64), dtype=lib.float64),
        RuntimeError, "linalg.vector_norm: dtype should be complex for complex inputs, but got "
        "Double")
    assert_raises_like_torch(
        lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.complex128),
                                           dtype=lib.complex64),
        RuntimeError, "linalg.vector_norm: the dtype of the input (ComplexDouble) should be "
        "convertible without narrowing to the specified dtype (ComplexFloat)")
    assert_raises_like_torch(
        lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.complex64), 1j),
        RuntimeError, "linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    assert_raises_like_torch(
        lambda lib: lib.linalg.matrix_norm(lib.ones(3, 3, dtype=lib.complex64),
                                           dtype=lib.float32),
        RuntimeError, "linalg.matrix_norm: dtype should be complex for complex inputs, but got "
        "Float")


@pytest.mark.parametrize("ord", [2, 1, math.inf, 3, 0.5, -2])
def test_vector_norm_no_overflow(ord):
    """|z| is cabs (no overflow of re^2 + im^2), and a sum of |z|^p that overflows or
    underflows is computed again from |z| / max |z|."""
    for scale in (1e300, 1e-300):
        z = np.array([[3 + 4j, 3 - 4j, 0], [1j, 0, 0]]) * scale
        x = ptl.tensor(z, dtype=ptl.complex128)
        want = [_np_norm(row / scale, ord, None, False) * scale for row in z]
        got = ptl.linalg.vector_norm(x, ord, 1).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13)
    big = ptl.tensor([3e300 + 4e300j], dtype=ptl.complex128)
    assert ptl.linalg.vector_norm(big, ord).item() == pytest.approx(5e300, rel=1e-14)
    # inf and nan stay: an inf element's norm is inf (or 0 for a negative ord)
    inf = ptl.tensor([math.inf + 0j, 1], dtype=ptl.complex128)
    assert ptl.linalg.vector_norm(inf, ord).item() == (math.inf if ord > 0 else 1.0)
    # float32 parts (complex64): 1e30 squared overflows float32
    x = ptl.tensor([3e30 + 4e30j, 6e30 + 8e30j], dtype=ptl.complex64)
    want = _np_norm(np.array([5.0, 10.0]), ord, None, False) * 1e30
    assert ptl.linalg.vector_norm(x, ord).item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 3), (4, 4), (1, 1)])
def test_matrix_norm(cdt, layout, ord, shape):
    tdt, npdt, rdt, tol = cdt
    x, a = _tensor(shape, npdt, layout)
    want = np.linalg.norm(a, ord, axis=(-2, -1))
    _close(ptl.linalg.matrix_norm(x, ord), want, rdt, tol)
    _close(ptl.linalg.norm(x, ord, dim=(-2, -1)), want, rdt, tol)
    got = ptl.linalg.matrix_norm(x, ord, dim=(0, -1), keepdim=True)
    want = np.linalg.norm(a, ord, axis=(0, -1), keepdims=True)
    _close(got, want, rdt, tol)
    if len(shape) == 2:
        _close(ptl.linalg.norm(x, ord), np.linalg.norm(a, ord), rdt, tol)
    wide = ptl.linalg.matrix_norm(x, ord, dtype=ptl.complex128)
    assert wide.dtype == ptl.float64


@pytest.mark.parametrize("p", [None, "fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_cond(cdt, p):
    tdt, npdt, rdt, tol = cdt
    x, a = _tensor((3, 4, 4), npdt, "contiguous", 3)
    _close(ptl.linalg.cond(x, p), np.linalg.cond(a, p), rdt, tol * 100)
    singular = ptl.zeros(3, 3, dtype=tdt)
    if p not in (None, 2, -2):
        got = ptl.linalg.cond(singular, p).item()
        assert math.isnan(got) if p == "nuc" else got == math.inf


@pytest.mark.parametrize("p", [2, 1, 0, math.inf, 3])
def test_dist_normalize_pairwise(cdt, p):
    tdt, npdt, rdt, tol = cdt
    x, a = _tensor((3, 4), npdt, "contiguous", 1)
    y, b = _tensor((4,), npdt, "stepped", 2)
    _close(ptl.dist(x, y, p), _np_norm(a - b, p, None, False), rdt, tol)
    if p != 0:
        got = ptl.nn.functional.normalize(x, p, dim=1)
        assert got.dtype == tdt
        want = a / np.maximum(_np_norm(a, p, 1, True), 1e-12)
        np.testing.assert_allclose(got.numpy(), want, rtol=tol * 10, atol=tol * 10)
    _close(ptl.nn.functional.pairwise_distance(x, y, p),
           _np_norm(a - b + 1e-6, p, -1, False), rdt, tol)


def _np_var(a, axis, correction, keepdim):
    n = a.size // max(np.mean(a, axis=axis, keepdims=True).size, 1) if a.size else 0
    m = a.mean(axis=axis, keepdims=True) if a.size else a
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.abs(a - m) ** 2).sum(axis=axis, keepdims=keepdim) / max(n - correction, 0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((), None), ((7,), None), ((3, 4), None), ((3, 4), 0),
                                       ((2, 3, 4), (0, 2)), ((2, 3, 4), -1), ((0, 3), 1),
                                       ((33, 65), 1)])
@pytest.mark.parametrize("correction", [1, 0, 2.5])
@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
def test_var_std(cdt, layout, shape, dim, correction, threads):
    tdt, npdt, rdt, tol = cdt
    x, a = _tensor(shape, npdt, layout)
    axis = None if dim is None else dim
    for keepdim in (False, True):
        want = _np_var(a, axis, correction, keepdim)
        if dim is None and keepdim:
            want = np.reshape(want, (1,) * a.ndim)
        with np.errstate(invalid="ignore"):
            wmean = a.mean(axis=axis, keepdims=keepdim) if a.size else np.full(
                np.shape(want), np.nan)
        _close(ptl.var(x, dim, correction=correction, keepdim=keepdim), want, rdt, tol)
        _close(ptl.std(x, dim, correction=correction, keepdim=keepdim), np.sqrt(want), rdt,
               tol)
        for fn, f in ((ptl.var_mean, lambda w: w), (ptl.std_mean, np.sqrt)):
            r, mean = fn(x, dim, correction=correction, keepdim=keepdim)
            _close(r, f(want), rdt, tol)
            assert mean.dtype == tdt
            np.testing.assert_allclose(mean.numpy(), wmean, rtol=tol * 10, atol=tol * 10)
    if correction in (0, 1) and dim is not None:
        _close(x.var(dim, bool(correction)), _np_var(a, axis, correction, False), rdt, tol)
        _close(x.std(dim, bool(correction), True),
               np.sqrt(_np_var(a, axis, correction, True)), rdt, tol)
    if correction in (0, 1) and dim is None:
        _close(x.var(bool(correction)), _np_var(a, None, correction, False), rdt, tol)
        _close(ptl.std_mean(x, bool(correction))[0],
               np.sqrt(_np_var(a, None, correction, False)), rdt, tol)


def test_complex_on_cuda_refused_names_cuda():
    """Without a GPU there is nothing to run: the kernels' check is the fallback's text."""
    if ptl.cuda.is_available():
        x = ptl.ones(3, dtype=ptl.complex64, device="cuda")
        with pytest.raises(NotImplementedError, match="_cuda\" not implemented for "
                           "'ComplexFloat'"):
            ptl.linalg.vector_norm(x)


@torch_ref
@pytest.mark.parametrize("ord", ORDS)
def test_vector_norm_nonfinite_matches_torch(ord):
    vals = [complex(math.inf, 0), complex(0, -math.inf), complex(math.nan, 1),
            complex(1, math.nan), 0j, 3 + 4j]
    for i in range(len(vals)):
        for j in range(len(vals)):
            z = [vals[i], vals[j]]
            got = ptl.linalg.vector_norm(ptl.tensor(z, dtype=ptl.complex128), ord).item()
            want = torch.linalg.vector_norm(torch.tensor(z, dtype=torch.complex128),
                                            ord).item()
            assert got == want or (math.isnan(got) and math.isnan(want)), (z, got, want)


@torch_ref
def test_var_degrees_of_freedom_warning_matches_torch():
    for lib in (torch, ptl):
        x = lib.ones(1, dtype=lib.complex64)
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            assert math.isnan(lib.var(x).item())


@torch_ref
@pytest.mark.parametrize("dtype", ["complex128", "complex64", "float64", "float32"])
def test_torch_norm_forms_match_torch(dtype):
    """torch.norm / Tensor.norm: a string p ('fro', 'nuc'), dtype and out as PyTorch's
    torch.functional.norm routes them (vector_norm or matrix_norm)."""
    a = _crand((3, 4, 5), 9)
    a = a if dtype.startswith("complex") else a.real
    wide = {"complex128": "complex128", "complex64": "complex128", "float64": "float64",
            "float32": "float64"}[dtype]
    calls = [lambda lib, x: x.norm(), lambda lib, x: lib.norm(x, 3),
             lambda lib, x: x.norm(2, 1), lambda lib, x: lib.norm(x, "fro"),
             lambda lib, x: lib.norm(x[0], "nuc"), lambda lib, x: lib.norm(x, p=None),
             lambda lib, x: lib.norm(x, "fro", dim=(0, 1)),
             lambda lib, x: lib.norm(x, dtype=getattr(lib, wide)),
             lambda lib, x: x.norm(p=1, dim=[0, 2], keepdim=True),
             lambda lib, x: lib.norm(x, "nuc", dim=(1, 2), keepdim=True),
             lambda lib, x: x.norm(math.inf, -1, dtype=getattr(lib, wide))]
    for call in calls:
        got = call(ptl, ptl.tensor(a, dtype=getattr(ptl, dtype)))
        want = call(torch, torch.tensor(a, dtype=getattr(torch, dtype)))
        assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    out = ptl.empty(0, dtype=ptl.float64)
    ptl.norm(ptl.tensor(a), "fro", out=out)
    assert out.item() == pytest.approx(np.linalg.norm(a))
    assert_raises_like_torch(lambda lib: lib.norm(lib.ones(2, 2, 2), "fro", dim=(0, 1, 2)),
                             RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2")


def test_real_input_complex_dtype_and_cosine_similarity_refused():
    assert_raises_like_torch(
        lambda lib: lib.linalg.vector_norm(lib.ones(3), dtype=lib.complex64),
        RuntimeError, "linalg.vector_norm: dtype should be real for real inputs, but got "
        "ComplexFloat")
    assert_raises_like_torch(
        lambda lib: lib.nn.functional.cosine_similarity(lib.ones(2, 3, dtype=lib.complex64),
                                                        lib.ones(2, 3)),
        RuntimeError, "expected common dtype to be floating point, yet common dtype is "
        "ComplexFloat")
    assert_raises_like_torch(
        lambda lib: lib.nn.functional.cosine_similarity(lib.ones(2, 3, dtype=lib.int64),
                                                        lib.ones(2, 3, dtype=lib.int64)),
        RuntimeError, "expected common dtype to be floating point, yet common dtype is Long")


def test_cosine_similarity_broadcasts_in_the_common_dtype():
    a = np.random.default_rng(11).standard_normal((2, 3))
    b = np.random.default_rng(12).standard_normal(3).astype(np.float32).astype(np.float64)
    got = ptl.nn.functional.cosine_similarity(ptl.tensor(a), ptl.tensor(b, dtype=ptl.float32))
    assert got.dtype == ptl.float64
    want = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    half = ptl.nn.functional.cosine_similarity(ptl.ones(2, 3, dtype=ptl.float16),
                                               ptl.ones(2, 3, dtype=ptl.int64))
    assert half.dtype == ptl.float16


GRAIN = 32768   # c10/parallel.h's PTL_GRAIN_SIZE: the real reductions split from 2 * GRAIN


@pytest.mark.parametrize("shape,dim", [((2 * GRAIN - 1,), None), ((2 * GRAIN,), None),
                                       ((2 * GRAIN + 1,), None), ((GRAIN // 64, 64), 1),
                                       ((GRAIN // 64 + 1, 64), 1), ((3, 2 * GRAIN + 7), 1),
                                       ((2 * GRAIN + 7, 3), 0)])
def test_norm_and_var_across_the_reduction_thresholds(shape, dim, threads):
    x, a = _tensor(shape, np.complex128, "contiguous", 13)
    for ord in (2, 1, math.inf):
        _close(ptl.linalg.vector_norm(x, ord, dim), _np_norm(a, ord, dim, False),
               ptl.float64, 1e-12)
    _close(ptl.var(x, dim), _np_var(a, dim, 1, False), ptl.float64, 1e-12)
    r, m = ptl.std_mean(x, dim)
    _close(r, np.sqrt(_np_var(a, dim, 1, False)), ptl.float64, 1e-12)
    np.testing.assert_allclose(m.numpy(), a.mean(axis=dim), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_complex_scalar_arguments_refused(dtype):
    """A complex ord is refused, a complex correction converted as a double (refused with an
    imaginary part), for real and complex inputs alike."""
    def x(lib):
        return lib.ones(3, dtype=getattr(lib, dtype))
    for call in (lambda lib: lib.linalg.vector_norm(x(lib), 1j),
                 lambda lib: lib.linalg.vector_norm(x(lib), 1 + 0j),
                 lambda lib: lib.norm(x(lib), 2j), lambda lib: x(lib).norm(1 + 0j)):
        assert_raises_like_torch(call, RuntimeError, "linalg.vector_norm: Expected a "
                                 "non-complex scalar as the order of norm.")
    for call in (lambda lib: lib.var(x(lib), correction=1j),
                 lambda lib: lib.var_mean(x(lib), correction=1j),
                 lambda lib: lib.std(x(lib), 0, correction=2 - 1j)):
        assert_raises_like_torch(call, RuntimeError, "value cannot be converted to type double "
                                 "without overflow")
    assert ptl.var(x(ptl), correction=0j).item() == 0


def _np_renorm(a, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7)."""
    axes = tuple(d for d in range(a.ndim) if d != dim % a.ndim)
    norm = _np_norm(a, p, axes, True)
    return a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -1), ((0, 3), 1),
                                       ((4, 0), 0), ((2, 1, 3), 1)])
@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf])
def test_renorm(cdt, layout, shape, dim, p):
    dt, npdt, _, tol = cdt
    x, a = _tensor(shape, npdt, layout, seed=len(shape))
    x = x.to(dt)
    if p == math.inf and 0 in shape and x.numel() == 0 and shape[dim] != 0:
        with pytest.raises(RuntimeError, match="cannot compute the inf norm"):
            ptl.renorm(x, p, dim, 1.5)   # an empty slice has no max (PyTorch's error too)
        return
    want = _np_renorm(a, p, dim, 1.5)
    for got in (ptl.renorm(x, p, dim, 1.5), x.renorm(p, dim, 1.5)):
        assert got.dtype == dt
        np.testing.assert_allclose(got.numpy(), want, rtol=tol * 10, atol=tol * 10)
    y = x.clone()
    assert y.renorm_(p, dim, 1.5) is y
    np.testing.assert_allclose(y.numpy(), want, rtol=tol * 10, atol=tol * 10)


@torch_ref
def test_renorm_errors_match_torch():
    def z(lib):
        return lib.ones(3, 2, dtype=lib.complex64)
    for call, msg in [(lambda lib: lib.renorm(z(lib), 1j, 0, 1.0), "renorm: p must be real-valued"),
                      (lambda lib: lib.renorm(z(lib), 2, 0, 1j),
                       "renorm: maxnorm must be real-valued"),
                      (lambda lib: lib.renorm(z(lib), -1, 0, 1j),
                       "renorm: non-positive-norm not supported"),
                      (lambda lib: lib.renorm(z(lib), 0, 0, 1.0),
                       "renorm: non-positive-norm not supported"),
                      (lambda lib: lib.renorm(z(lib), 2, 0, -1.0),
                       "renorm: expected maxnorm to be >= 0 but got -1"),
                      (lambda lib: lib.renorm(lib.ones(3, dtype=lib.complex64), 2, 0, 1.0),
                       "renorm: input needs at least 2 dimensions, got 1 dimensions"),
                      (lambda lib: lib.renorm(lib.ones(3, 2), 2, 0, 2j),
                       "renorm: maxnorm must be real-valued")]:
        assert_raises_like_torch(call, RuntimeError, msg)


def test_pdist_forward_refuses_complex_after_its_trivial_results(cdt):
    dt = cdt[0]
    pdist = ptl.ops.aten._pdist_forward
    for shape, pairs in [((1, 2), 0), ((0, 2), 0), ((3, 0), 3), ((2, 0), 1), ((3, 0, 2), 3)]:
        r = pdist(ptl.ones(shape, dtype=dt), 2.0)
        assert r.dtype == dt and tuple(r.shape) == (pairs,) and (r.numpy() == 0).all()
    name = "ComplexDouble" if dt == ptl.complex128 else "ComplexFloat"
    with pytest.raises(NotImplementedError, match=f"\"pdist\" not implemented for '{name}'"):
        pdist(ptl.ones(3, 2, dtype=dt), 2.0)


@torch_ref
def test_pdist_and_cdist_refusals_match_torch():
    def z(lib, *shape):
        return lib.ones(shape, dtype=lib.complex64)
    def pdist(lib):
        return lib.ops.aten._pdist_forward

    def cdist(lib):
        return lib.ops.aten._cdist_forward
    for call, exc, msg in [
            (lambda lib: pdist(lib)(z(lib, 3, 2), 2.0), NotImplementedError,
             "\"pdist\" not implemented for 'ComplexFloat'"),
            (lambda lib: pdist(lib)(z(lib, 3, 2), -1.0), NotImplementedError,
             "\"pdist\" not implemented for 'ComplexFloat'"),
            (lambda lib: pdist(lib)(z(lib, 3, 2).t(), 2.0), RuntimeError,
             "_pdist_forward requires contiguous input"),
            (lambda lib: pdist(lib)(z(lib, 3), 2.0), IndexError,
             "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
            (lambda lib: pdist(lib)(z(lib), 2.0), IndexError,
             "Dimension specified as 0 but tensor has no dimensions"),
            (lambda lib: lib.nn.functional.pdist(z(lib, 3, 2)), RuntimeError,
             "pdist only supports floating-point dtypes"),
            (lambda lib: cdist(lib)(z(lib, 3, 2), z(lib, 2, 2), 2.0, None), RuntimeError,
             "cdist only supports floating-point dtypes, X1 got: ComplexFloat"),
            (lambda lib: cdist(lib)(lib.ones(3, 2), z(lib, 2, 2), 2.0, None), RuntimeError,
             "cdist only supports floating-point dtypes, X2 got: ComplexFloat"),
            (lambda lib: cdist(lib)(z(lib, 0, 2), z(lib, 2, 2), 2.0, None), RuntimeError,
             "cdist only supports floating-point dtypes, X1 got: ComplexFloat"),
            (lambda lib: cdist(lib)(z(lib, 3, 2), z(lib, 2, 3), 2.0, None), RuntimeError,
             "X1 and X2 must have the same number of columns. X1: 2 X2: 3"),
            (lambda lib: cdist(lib)(z(lib, 3), z(lib, 2, 3), 2.0, None), RuntimeError,
             "cdist only supports at least 2D tensors, X1 got: 1D"),
            (lambda lib: lib.cdist(z(lib, 3, 2), z(lib, 2, 2)), RuntimeError,
             "cdist only supports floating-point dtypes, X1 got: ComplexFloat")]:
        assert_raises_like_torch(call, exc, msg)
