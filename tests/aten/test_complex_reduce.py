"""The scans and folds of complex64/complex128 (src/aten/native/complex_reduce.c, Note
[Complex folds]): cumsum, cumprod, prod, trace, count_nonzero, nonzero, all, any, var, std,
var_mean, std_mean and logsumexp, and the composites on them (vander, cumulative_trapezoid,
trapezoid, cov, corrcoef, nanmean's refusal).  Values against NumPy complex128 on 0-dim,
size-0, transposed, sliced and expanded inputs; dtype= as PyTorch; gradients by gradcheck in
complex128 (zeros in prod and cumprod included); PyTorch's results, layouts and messages
where torch is installed.  No kernel here splits its work between threads; prod runs in
vector lanes by blocks (crossed below: every lane tail, every column block), and cumsum runs
the real scan on view_as_real, whose tiles are crossed by the wide shapes below, on 1 and 2
threads."""
import os
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_close, assert_no_leak, assert_raises_like_torch, crandn,
                     num_threads, rerun_with_capability, torch, torch_ref)
from pytorchlite.autograd import gradcheck

C64, C128 = ptl.complex64, ptl.complex128
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
SHAPES = [(), (0,), (5,), (3, 4), (0, 3), (2, 3, 4)]


def tol(dtype, n=1):
    """Tolerances for a fold of n complex products."""
    return dict(rtol=1e-5 * max(n, 1), atol=1e-5 * max(n, 1)) if dtype == C64 else \
        dict(rtol=1e-12, atol=1e-12)


def dims_of(shape):
    return range(-len(shape), len(shape)) if shape else [0, -1]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_scans(shape, layout, dtype):
    x, a = crandn(shape, dtype, layout)
    for d in dims_of(shape):
        ax = d if shape else None
        n = shape[d] if shape else 1
        assert_close(x.cumsum(d), np.cumsum(a, ax).reshape(a.shape), dtype, **tol(dtype, n))
        assert_close(x.cumprod(d), np.cumprod(a, ax).reshape(a.shape), dtype, **tol(dtype, n))
        assert_close(ptl.cumsum(x, d, dtype=C128), np.cumsum(a, ax).reshape(a.shape), C128,
                     **tol(dtype, n))


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_prod(shape, layout, dtype):
    x, a = crandn(shape, dtype, layout)
    assert_close(x.prod(), np.prod(a), dtype, **tol(dtype, a.size))
    assert_close(x.prod(dtype=C128), np.prod(a), C128, **tol(dtype, a.size))
    for d in dims_of(shape):
        ax = d if shape else None
        n = shape[d] if shape else 1
        want = np.prod(a, ax, keepdims=True) if shape else a
        assert_close(x.prod(d, keepdim=True), want, dtype, **tol(dtype, n))
        assert_close(x.prod(d), np.prod(a, ax) if shape else a, dtype, **tol(dtype, n))


@torch_ref
def test_prod_and_cumprod_special_values_match_torch():
    vals = [complex("inf"), 1j, complex("nan"), 0, complex(1, float("inf")), -2 + 0.5j]
    for code in ["z[:2].prod()", "z[:2].cumprod(0)", "z[3:].prod()", "z[[0, 3]].prod()",
                 "z.cumprod(0)", "z[[1, 5, 4]].cumprod(0)", "z[[5, 3, 1]].prod()"]:
        ours = eval(code, {"z": ptl.tensor(vals, dtype=C128)})  # noqa: S307
        theirs = eval(code, {"z": torch.tensor(vals, dtype=torch.complex128)})  # noqa: S307
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=code)


def test_complex64_products_overflow_only_where_their_result_does():
    # as the real prod of float32 here (and PyTorch's cumprod): no overflow on the way
    z = ptl.tensor([1e30, 1e30, 1e-30], dtype=C64)
    assert_close(z.prod(), np.array(1e30 + 0j), C64)
    assert_close(z.cumprod(0), np.array([1e30, np.inf, 1e30]) + 0j, C64)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_prod_across_the_lane_tails_and_column_blocks(dtype):
    """Rows of 0 to 70 (the 16- and 32-lane loops of complex64, the 8- and 16-lane loops of
    complex128, and every tail of them), and 0 to 70 columns (blocks of 32 and 16, or 16 and
    8, then single columns), contiguous and transposed (made contiguous first)."""
    for n in range(71):
        x, a = crandn((3, n), dtype, seed=n)
        assert_close(x.prod(1), np.prod(a, 1), dtype, **tol(dtype, n))
        assert_close(x.prod(), np.prod(a), dtype, **tol(dtype, 3 * n))
        assert_close(x.prod(0), np.prod(a, 0), dtype, **tol(dtype, 3))
        y, b = crandn((n, 5), dtype, "transposed", seed=n)
        assert_close(y.prod(0), np.prod(b, 0), dtype, **tol(dtype, n))
        assert_close(y.prod(1), np.prod(b, 1), dtype, **tol(dtype, 5))
    x, a = crandn((2, 37, 45), dtype, seed=1)
    assert_close(x.prod(1), np.prod(a, 1), dtype, **tol(dtype, 37))


def test_complex64_lanes_that_leave_float_range_are_refolded_in_complex128():
    # a lane of 16 factors 1e5 (1e80: past float) then 16 of 1e-5, in a row (lanes k and
    # k + 32 share a chain) and in a column; and the same for 1e-5 first (an underflow)
    for big in (1e5, 1e-5):
        row = np.array([big if i % 32 < 16 else 1 / big for i in range(512)]) * (1 + 0j)
        want = np.prod(row.astype(np.complex64).astype(np.complex128))
        assert_close(ptl.tensor(row, dtype=C64).prod(), np.array(want), C64, rtol=1e-5)
        col = np.repeat(np.array([big] * 16 + [1 / big] * 16)[:, None] * (1 + 1j), 40, 1)
        want = np.prod(col.astype(np.complex64).astype(np.complex128), 0)
        assert_close(ptl.tensor(col, dtype=C64).prod(0), want, C64, rtol=1e-5)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
def test_portable_prod_and_count_nonzero_loops():
    """Reruns the prod and count_nonzero tests with the portable loops (no AVX2 lanes)."""
    rerun_with_capability(__file__, "default", "-k",
                          "prod or count_nonzero or nonzero_count or signed_zeros")


def test_real_and_complex_dtype_arguments():
    x, a = crandn((3, 4), C64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(x.cumsum(0, dtype=ptl.float32), np.cumsum(a.real, 0), ptl.float32)
        assert_close(x.prod(1, dtype=ptl.float64), np.prod(a.real, 1), ptl.float64)
        assert_close(x.cumprod(1, dtype=ptl.float64), np.cumprod(a.real, 1), ptl.float64)
    r = ptl.tensor([1.5, -2.0, 0.5])
    assert_close(r.cumsum(0, dtype=C64), np.cumsum([1.5, -2.0, 0.5]) + 0j, C64)
    assert_close(r.prod(dtype=C128), np.array(-1.5 + 0j), C128)
    assert_close(ptl.arange(1, 4).cumprod(0, dtype=C64), np.array([1, 2, 6]) + 0j, C64)


def test_cumsum_across_the_scan_tiles_on_one_and_two_threads():
    for shape, d in [((3, 70, 33), 1), ((130, 5), 0), ((4, 257), 1), ((513,), 0)]:
        x, a = crandn(shape, C128, seed=3)
        for threads in (1, 2):
            with num_threads(threads):
                assert_close(x.cumsum(d), np.cumsum(a, d))
                u = x / x.abs()   # unit moduli: the products stay near 1
                assert_close(u.cumprod(d), np.cumprod(a / np.abs(a), d), rtol=1e-10,
                             atol=1e-10)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_trace(layout, dtype):
    for shape in [(3, 4), (4, 3), (0, 2), (1, 1), (0, 0), (70, 65)]:
        x, a = crandn(shape, dtype, layout)
        assert_close(x.trace(), np.trace(a), dtype)
    x, a = crandn((5, 6), dtype, "expanded")
    assert_close(x.trace(), np.trace(a), dtype)
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        ptl.ones(3, dtype=C64).trace()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_nonzero_count_all_any(shape, layout):
    x, a = crandn(shape, C64, layout)
    m = np.random.default_rng(1).integers(0, 4, size=a.shape)
    parts = np.select([m == 0, m == 1, m == 2], [0j, a.real + 0j, 1j * a.imag], a)
    z = ptl.tensor(parts, dtype=C64)
    if layout == "transposed" and len(shape) >= 2:
        z = ptl.tensor(np.ascontiguousarray(parts.transpose()), dtype=C64).permute(
            *reversed(range(len(shape))))
    nz = parts != 0
    assert_close(ptl.count_nonzero(z), np.array(np.count_nonzero(nz)), ptl.int64)
    assert_close(z.nonzero(), np.argwhere(nz), ptl.int64)
    assert_close(z.all(), np.array(nz.all()), ptl.bool)
    assert_close(z.any(), np.array(nz.any()), ptl.bool)
    for d in (range(len(shape)) if shape else []):
        assert_close(ptl.count_nonzero(z, d), nz.sum(d), ptl.int64)
        assert_close(z.all(d), nz.all(d), ptl.bool)
        assert_close(z.any(d, keepdim=True), nz.any(d, keepdims=True), ptl.bool)
    if len(shape) == 3:
        assert_close(ptl.count_nonzero(z, (0, 2)), nz.sum((0, 2)), ptl.int64)
    assert_close(x.all(), np.array((a != 0).all()), ptl.bool)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_count_nonzero_of_special_parts_in_any_layout(dtype):
    vals = [0j, complex(-0.0, -0.0), complex(0, -0.0), complex(-0.0, 1e-44), complex(1e-44, 0),
            complex(0, float("nan")), complex(float("inf"), 0), 2 - 1j]
    a = np.array(vals * 6)[np.random.default_rng(7).permutation(48)].reshape(4, 3, 4)
    nz = a != 0
    for z, m in [(ptl.tensor(a, dtype=dtype), nz), (ptl.tensor(a, dtype=dtype).transpose(0, 2),
                                                    nz.transpose(2, 1, 0)),
                 (ptl.tensor(a, dtype=dtype)[::2, :, ::3], nz[::2, :, ::3]),
                 (ptl.tensor(a[:1], dtype=dtype).expand(5, 3, 4), np.broadcast_to(nz[:1],
                                                                                 (5, 3, 4)))]:
        assert_close(ptl.count_nonzero(z), np.array(np.count_nonzero(m)), ptl.int64)
        assert_close(ptl.count_nonzero(z, (0, 2)), m.sum((0, 2)), ptl.int64)
        assert_close(z.nonzero(), np.argwhere(m), ptl.int64)
        assert_close(z.any(1), m.any(1), ptl.bool)


def test_count_nonzero_and_trace_read_self_in_place():
    """On the CPU count_nonzero counts the parts' bits and trace sums the diagonal where it
    lies: no ne(self, 0) tensor, no diagonal view and sum."""
    x, _ = crandn((6, 5), C128, "sliced")
    with ptl.profiler.profile() as prof:
        ptl.count_nonzero(x)
        x.trace()
    names = {e.name for e in prof.events()}
    assert {"aten::count_nonzero", "aten::trace"} <= names
    assert not names & {"aten::ne", "aten::diagonal", "aten::sum"}, names


def test_nonzero_of_signed_zeros_and_nans():
    z = ptl.tensor([0j, complex(-0.0, -0.0), complex(0, -0.0), 1j, 1, complex("nan")],
                   dtype=C128)
    assert ptl.count_nonzero(z).item() == 3
    assert z.nonzero().flatten().tolist() == [3, 4, 5]
    assert [t.tolist() for t in z.nonzero(as_tuple=True)] == [[3, 4, 5]]
    assert ptl.argwhere(z).flatten().tolist() == [3, 4, 5]
    assert not z.all().item() and z[3:].all().item() and not z[:3].any().item()


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_var_std(layout, dtype):
    x, a = crandn((4, 5), dtype, layout)
    real = ptl.float32 if dtype == C64 else ptl.float64
    for d, c in [(None, 1), (0, 1), (1, 0), ((0, 1), 2)]:
        v = np.var(a, axis=d, ddof=c)
        assert_close(ptl.var(x, d, correction=c), v, real)
        assert_close(ptl.std(x, d, correction=c), np.sqrt(v), real)
        var, mean = ptl.var_mean(x, d, correction=c)
        assert_close(var, v, real)
        assert_close(mean, np.mean(a, axis=d), dtype)
        std, mean = ptl.std_mean(x, d, correction=c, keepdim=True)
        assert_close(std, np.sqrt(np.var(a, axis=d, ddof=c, keepdims=True)), real)
    assert_close(x.var(), np.var(a, ddof=1), real)
    assert_close(x.std(1, unbiased=False), np.std(a, 1), real)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_logsumexp(layout, dtype):
    x, a = crandn((3, 4), dtype, layout)
    x, a = 4 * x, 4 * a   # exact: a power of 2
    for d, keep in [(0, False), (1, True), ((0, 1), False), ((), False)]:
        ax = d if d != () else None
        want = np.log(np.sum(np.exp(a), axis=ax, keepdims=keep))
        assert_close(ptl.logsumexp(x, d, keepdim=keep), want, dtype)
    e, b = crandn((0, 3), dtype)
    assert_close(ptl.logsumexp(e, 0), np.full(3, -np.inf + 0j), dtype)
    assert_close(ptl.logsumexp(e, 1), np.zeros(0), dtype)
    big = ptl.tensor([1000 + 1j, 1000 - 2j], dtype=dtype)   # exp would overflow unshifted
    assert_close(ptl.logsumexp(big, 0), 1000 + np.log(np.exp(1j) + np.exp(-2j)), dtype)


def test_composites():
    x, a = crandn((3, 4), C128)
    assert_close(ptl.linalg.vander(x[0]), np.vander(a[0], increasing=True))
    assert_close(ptl.vander(x[0], 3), np.vander(a[0], 3))
    assert_close(ptl.cumulative_trapezoid(x), np.cumsum((a[:, 1:] + a[:, :-1]) / 2, 1))
    assert_close(ptl.trapezoid(x, dx=0.5, dim=0), np.trapezoid(a, dx=0.5, axis=0)
                 if hasattr(np, "trapezoid") else np.trapz(a, dx=0.5, axis=0))
    assert_close(ptl.cov(x), np.cov(a))
    assert_close(ptl.cov(x, correction=0), np.cov(a, bias=True))
    c = np.corrcoef(a)
    assert_close(ptl.corrcoef(x), np.clip(c.real, -1, 1) + 1j * np.clip(c.imag, -1, 1))
    assert ptl.corrcoef(x).dtype == C128


GRADS = {
    "cumsum": lambda z: z.cumsum(-1),
    "cumprod": lambda z: z.cumprod(0),
    "prod": lambda z: z.prod(),
    "prod_dim": lambda z: z.prod(-1, keepdim=True),
    "trace": lambda z: z.trace() if z.dim() == 2 else z.sum(),
    "var": lambda z: z.var(-1) if z.dim() else z.abs(),
    "std_mean": lambda z: ptl.std_mean(z, 0)[1] if z.dim() else z,
    "cumulative_trapezoid": lambda z: ptl.cumulative_trapezoid(z) if z.dim() else z,
    "logsumexp": lambda z: ptl.logsumexp(z, -1) if z.dim() else z.exp(),
}


def leaves(seed=0):
    """complex128 leaves: a matrix, a transposed one, one with a zero, one with two zeros in a
    row and a column, a 0-dim one and an empty one."""
    out = []
    a = np.random.default_rng(seed).standard_normal((3, 4)) + 1j * \
        np.random.default_rng(seed + 1).standard_normal((3, 4))
    out.append(ptl.tensor(a))
    out.append(ptl.tensor(a.T.copy()).t())
    one_zero = a.copy()
    one_zero[1, 2] = 0
    out.append(ptl.tensor(one_zero))
    two = a.copy()
    two[0, 1] = two[0, 3] = two[2, 1] = 0
    out.append(ptl.tensor(two))
    out.append(ptl.tensor(0.3 - 1.2j, dtype=C128))
    out.append(ptl.zeros(0, 3, dtype=C128))
    return [t.detach().requires_grad_() for t in out]


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradcheck(name):
    for z in leaves():
        assert gradcheck(GRADS[name], (z,)), (name, tuple(z.shape))


@torch_ref
@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_torch(name):
    for z in leaves(5):
        ours = z.detach().clone().requires_grad_()
        theirs = torch.tensor(z.detach().numpy()).requires_grad_()
        out = GRADS[name](ours)
        ref = eval("lambda z: " + {  # noqa: S307 -- the table above, for torch
            "cumsum": "z.cumsum(-1)", "cumprod": "z.cumprod(0)", "prod": "z.prod()",
            "prod_dim": "z.prod(-1, keepdim=True)",
            "trace": "z.trace() if z.dim() == 2 else z.sum()",
            "var": "z.var(-1) if z.dim() else z.abs()",
            "std_mean": "torch.std_mean(z, 0)[1] if z.dim() else z",
            "cumulative_trapezoid": "torch.cumulative_trapezoid(z) if z.dim() else z",
            "logsumexp": "torch.logsumexp(z, -1) if z.dim() else z.exp()",
        }[name], {"torch": torch})(theirs)
        w = np.random.default_rng(2).standard_normal(tuple(out.shape))
        ((out * ptl.tensor(w)).abs().sum() if out.is_complex() else
         (out * ptl.tensor(w)).sum()).backward()
        ((ref * torch.tensor(w)).abs().sum() if ref.is_complex() else
         (ref * torch.tensor(w)).sum()).backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-10, err_msg=name)


@torch_ref
def test_values_and_layouts_match_torch():
    a = np.random.default_rng(4).standard_normal((3, 4, 5)) * (1 + 0.5j)
    for code in ["x.cumsum(1)", "x.cumprod(0)", "x.prod(2)", "x.prod()", "x[0].trace()",
                 "L.count_nonzero(x, 1)", "x.nonzero()", "x.all(1)", "L.var(x, 1)",
                 "L.std_mean(x, (0, 2))[1]", "x.cumsum(0, dtype=L.complex64)",
                 "L.logsumexp(x, 1)", "L.logsumexp(x * 300, (0, 2), keepdim=True)"]:
        for perm in [(0, 1, 2), (2, 0, 1)]:
            ours = eval(code, {"x": ptl.tensor(a).permute(*perm), "L": ptl})  # noqa: S307
            theirs = eval(code, {"x": torch.tensor(a).permute(*perm), "L": torch})  # noqa: S307
            assert str(ours.dtype) == str(theirs.dtype), code
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6,
                                       err_msg=code)
            if code != "x.nonzero()":   # PyTorch's nonzero is column-major for any input
                assert ours.stride() == theirs.stride(), (code, perm)


ERRORS = [
    ("L.nansum(z)", RuntimeError, "nansum on CPU does not support complex inputs"),
    ("L.nansum(z, 0)", RuntimeError, "nansum on CPU does not support complex inputs"),
    ("L.nanmean(z)", RuntimeError, "nansum on CPU does not support complex inputs"),
    ("z.cumsum(1)", IndexError, "Dimension out of range"),
    ("z.prod(2)", IndexError, "Dimension out of range"),
    ("z.cumprod(-2)", IndexError, "Dimension out of range"),
    ("z[None, None].trace()", RuntimeError, "trace: expected a matrix, but got tensor with dim 3"),
    ("L.count_nonzero(z, 5)", IndexError, "Dimension out of range"),
    ("L.var(z, 3)", IndexError, "Dimension out of range"),
    ("L.var(z, correction=1j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("L.var(z.real, correction=1j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("z.clip(0, 1)", NotImplementedError, "clamp is not supported for complex types"),
    ("z.clamp(min=L.tensor(0.))", NotImplementedError, "clamp is not supported for complex types"),
    ("L.unique(z)", NotImplementedError, "\"unique\" not implemented for 'ComplexFloat'"),
    ("L.unique(z, dim=0)", NotImplementedError, "\"unique_dim\" not implemented for"),
    ("L.unique_consecutive(z)", NotImplementedError, "\"unique\" not implemented for"),
    ("z.amax()", NotImplementedError, "\"max_values_cpu\" not implemented for 'ComplexFloat'"),
    ("z.amin(0)", NotImplementedError, "\"min_values_cpu\" not implemented for 'ComplexFloat'"),
    ("L.histc(z)", NotImplementedError, "\"aminmax_cpu\" not implemented for 'ComplexFloat'"),
    ("L.nanmedian(z)", NotImplementedError, "\"median_cpu\" not implemented for 'ComplexFloat'"),
    ("L.searchsorted(z, z)", NotImplementedError, "\"searchsorted_out_cpu\" not implemented"),
    ("L.bucketize(z, z)", NotImplementedError, "\"searchsorted_out_cpu\" not implemented"),
    ("L.isin(z, z)", RuntimeError, "Unsupported input type encountered for isin(): ComplexFloat"),
    ("L.isin(z.real, z)", RuntimeError, "Unsupported input type encountered for isin(): "
                                        "ComplexFloat"),
]


@pytest.mark.parametrize("code,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(code, exc, msg):
    assert_raises_like_torch(
        lambda lib: eval(code, {"L": lib, "z": lib.tensor([1 + 2j, 3 - 1j])}),  # noqa: S307
        exc, msg)


def test_no_leaks():
    x, _ = crandn((3, 4), C128)
    assert_no_leak(lambda: (x.cumsum(0), x.cumprod(1), x.prod(), x.prod(0), x.trace(),
                            ptl.count_nonzero(x), x.nonzero(), x.all(), ptl.var_mean(x, 1),
                            x.std()))


@pytest.mark.parametrize("dtype", [ptl.bool, ptl.uint8, ptl.int16, ptl.int64], ids=str)
def test_an_integral_dtype_is_the_result_dtype_of_a_complex_fold(dtype):
    """prod, cumsum and cumprod of a complex tensor with an integral dtype= cast (the real
    part; bool: either part nonzero) and fold in that dtype, as PyTorch: int16 stays int16,
    not int64."""
    z, a = crandn((3, 4), ptl.complex64, "transposed", seed=2)
    c = np.trunc(a.real) + 0.25j
    x = ptl.tensor(c).to(ptl.complex64)
    npdt = {ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.int16: np.int16,
            ptl.int64: np.int64}[dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = c.astype(npdt)
        cases = [(ptl.prod(x, dtype=dtype), np.prod(r, dtype=npdt)),
                 (ptl.prod(x, 1, True, dtype=dtype), np.prod(r, 1, npdt, keepdims=True))]
        if dtype != ptl.bool:
            cases += [(ptl.cumsum(x, 0, dtype=dtype), np.cumsum(r, 0, npdt)),
                      (ptl.cumprod(x, 1, dtype=dtype), np.cumprod(r, 1, npdt))]
    for got, want in cases:
        assert got.dtype == dtype
        assert_close(got, np.asarray(want), dtype=dtype)
