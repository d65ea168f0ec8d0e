"""Complex Scalar arguments (Note [Complex Scalars] in src/aten/ivalue.h): a Python complex (or a
0-dim complex tensor) where an op takes a Scalar.  Values against NumPy's complex128 always,
dtypes, values and errors against PyTorch when it is installed, gradients by gradcheck in
complex128, and the paths that carry a Scalar besides a call (saved attributes, the tracer)."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.functional as ptl_functional
from helpers import assert_close, assert_raises_like_torch, num_threads, torch, torch_ref
from pytorchlite.autograd import gradcheck

C64, C128 = ptl.complex64, ptl.complex128
NP = {C64: np.complex64, C128: np.complex128, ptl.float32: np.float32,
      ptl.float64: np.float64, ptl.int64: np.int64}


def data(seed=0):
    """The arrays every case draws on (complex128 / float64 / int64 / bool NumPy values)."""
    g = np.random.default_rng(seed)
    z = g.standard_normal(5) + 1j * g.standard_normal(5)
    return {"z": z, "w": g.standard_normal(5) + 1j * g.standard_normal(5),
            "f": g.standard_normal(5), "i": np.array([1, -2, 3, 4, 5]),
            "m": np.array([True, False, True, True, False]),
            "A": g.standard_normal((3, 3)) + 1j * g.standard_normal((3, 3)),
            "B": g.standard_normal((3, 3)) + 1j * g.standard_normal((3, 3)),
            "v": g.standard_normal(3) + 1j * g.standard_normal(3),
            "b1": g.standard_normal((2, 3, 4)) + 1j * g.standard_normal((2, 3, 4)),
            "b2": g.standard_normal((2, 4, 3)) + 1j * g.standard_normal((2, 4, 3))}


def env(lib, d):
    """The names the cases use, as tensors of lib (pytorchlite or torch)."""
    t = lambda a, dt: lib.from_numpy(np.array(a)).to(getattr(lib, dt))  # noqa: E731
    return {"t": lib, "xf": t(d["f"], "float32"), "xd": t(d["f"], "float64"),
            "xi": t(d["i"], "int64"), "xc": t(d["z"], "complex64"),
            "xz": t(d["z"], "complex128"), "wz": t(d["w"], "complex128"),
            "m": t(d["m"], "bool"), "Az": t(d["A"], "complex128"), "Bz": t(d["B"], "complex128"),
            "Ac": t(d["A"], "complex64"), "Af": t(d["A"].real, "float32"),
            "vz": t(d["v"], "complex128"), "b1": t(d["b1"], "complex128"),
            "b2": t(d["b2"], "complex128")}


# (code, the NumPy value of the result given the arrays, its dtype)
VALUE_CASES = [
    ("xf * 1j", lambda d: d["f"].astype(np.float32) * 1j, C64),
    ("xd.add(1j)", lambda d: d["f"] + 1j, C128),
    ("xi + 1j", lambda d: d["i"] + 1j, C64),
    ("xc * (1 + 2j)", lambda d: d["z"].astype(np.complex64) * (1 + 2j), C64),
    ("xz.add(wz, alpha=2 - 1j)", lambda d: d["z"] + (2 - 1j) * d["w"], C128),
    ("xz.sub(wz, alpha=0.5j)", lambda d: d["z"] - 0.5j * d["w"], C128),
    ("t.rsub(xz, wz, alpha=1j)", lambda d: d["w"] - 1j * d["z"], C128),
    ("xc.add(xc, alpha=1j)", lambda d: (1 + 1j) * d["z"].astype(np.complex64), C64),
    ("t.full((2, 3), 1j)", lambda d: np.full((2, 3), 1j), C64),
    ("t.full((2,), 1 - 2j, dtype=t.complex128)", lambda d: np.full(2, 1 - 2j), C128),
    ("t.full((2,), 2 + 0j, dtype=t.float32)", lambda d: np.full(2, 2.0), ptl.float32),
    ("t.full_like(xz, 3j)", lambda d: np.full(5, 3j), C128),
    ("t.scalar_tensor(2 - 1j, dtype=t.complex64)", lambda d: np.array(2 - 1j), C64),
    ("xc.clone().fill_(1j)", lambda d: np.full(5, 1j), C64),
    ("xz.clone().fill_(1 - 2j)", lambda d: np.full(5, 1 - 2j), C128),
    ("xf.clone().fill_(2 + 0j)", lambda d: np.full(5, 2.0), ptl.float32),
    ("xz.masked_fill(m, 2 - 1j)", lambda d: np.where(d["m"], 2 - 1j, d["z"]), C128),
    ("xc.masked_fill(m, 1j)", lambda d: np.where(d["m"], 1j, d["z"]), C64),
    ("xz.clone().masked_fill_(m, -1j)", lambda d: np.where(d["m"], -1j, d["z"]), C128),
    ("xz.masked_fill(m, t.tensor(2j))", lambda d: np.where(d["m"], 2j, d["z"]), C128),
    ("t.index_fill(xz, 0, t.tensor([0, 3]), 2 - 1j)",
     lambda d: np.where(np.isin(np.arange(5), [0, 3]), 2 - 1j, d["z"]), C128),
    ("Az.clone().index_fill_(1, t.tensor([2]), t.tensor(1j))",
     lambda d: np.where(np.arange(3) == 2, 1j, d["A"]), C128),
    ("t.where(m, xf, 1j)", lambda d: np.where(d["m"], d["f"], 1j), C64),
    ("t.where(m, 1j, xf)", lambda d: np.where(d["m"], 1j, d["f"]), C64),
    ("t.where(m, xz, 1j)", lambda d: np.where(d["m"], d["z"], 1j), C128),
    ("t.where(m, xi, 1j)", lambda d: np.where(d["m"], d["i"], 1j), C64),
    ("t.where(m, xc, xz)", lambda d: np.where(d["m"], d["z"].astype(np.complex64), d["z"]),
     C128),
    ("xf == 1j", lambda d: d["f"] == 1j, ptl.bool),
    ("xz != xz[0].item()", lambda d: d["z"] != d["z"][0], ptl.bool),
    ("xz.eq(xz[1].item())", lambda d: d["z"] == d["z"][1], ptl.bool),
    ("t.pow(xf, 1j)", lambda d: d["f"].astype(np.complex64) ** 1j, C64),
    ("t.pow(xz, 1j)", lambda d: d["z"] ** 1j, C128),
    ("t.pow(xz, 0.5 - 0.25j)", lambda d: d["z"] ** (0.5 - 0.25j), C128),
    ("t.pow(xz, 2)", lambda d: d["z"] ** 2, C128),
    ("t.pow(xz, 3)", lambda d: d["z"] ** 3, C128),
    ("t.pow(xz, -2)", lambda d: d["z"] ** -2, C128),
    ("t.pow(xz, -1)", lambda d: 1 / d["z"], C128),
    ("t.pow(xz, 0.5)", lambda d: np.sqrt(d["z"]), C128),
    ("t.pow(xz, -0.5)", lambda d: 1 / np.sqrt(d["z"]), C128),
    ("t.pow(xz, 0)", lambda d: np.ones(5), C128),
    ("t.pow(xz, 1)", lambda d: d["z"], C128),
    ("t.pow(xz, 1.5)", lambda d: d["z"] ** 1.5, C128),
    ("t.pow(xz, wz)", lambda d: d["z"] ** d["w"], C128),
    ("t.pow(xi, 1j)", lambda d: d["i"].astype(np.complex64) ** 1j, C64),
    ("t.pow(1j, xf)", lambda d: 1j ** d["f"].astype(np.float32), C64),
    ("t.pow(2, xz)", lambda d: 2 ** d["z"], C128),
    ("xf ** 1j", lambda d: d["f"].astype(np.float32) ** 1j, C64),
    ("1j ** xz", lambda d: 1j ** d["z"], C128),
    ("xz.clone().pow_(2 - 1j)", lambda d: d["z"] ** (2 - 1j), C128),
    ("t.addmm(Az, Az, Bz, beta=1j, alpha=2 - 1j)",
     lambda d: 1j * d["A"] + (2 - 1j) * d["A"] @ d["B"], C128),
    ("t.addmm(Ac, Ac, Ac, beta=0.5j)",
     lambda d: 0.5j * d["A"] + d["A"] @ d["A"], C64),
    ("t.addmv(vz, Az, vz, beta=1j, alpha=2 - 1j)",
     lambda d: 1j * d["v"] + (2 - 1j) * d["A"] @ d["v"], C128),
    ("t.baddbmm(Az, b1, b2, beta=-1j, alpha=0.5 + 1j)",
     lambda d: -1j * d["A"] + (0.5 + 1j) * d["b1"] @ d["b2"], C128),
    ("t.addbmm(Az, b1, b2, beta=1j, alpha=2 - 1j)",
     lambda d: 1j * d["A"] + (2 - 1j) * (d["b1"] @ d["b2"]).sum(0), C128),
    ("t.addr(Az, vz, vz, beta=1j, alpha=2 - 1j)",
     lambda d: 1j * d["A"] + (2 - 1j) * np.outer(d["v"], d["v"]), C128),
    ("t.lerp(xz, wz, 0.25 + 0.5j)", lambda d: d["z"] + (0.25 + 0.5j) * (d["w"] - d["z"]), C128),
    ("t.lerp(xz, wz, 0.75 - 0.5j)", lambda d: d["z"] + (0.75 - 0.5j) * (d["w"] - d["z"]), C128),
    ("t.lerp(xz, wz, 0.5)", lambda d: d["z"] + 0.5 * (d["w"] - d["z"]), C128),
    ("t.lerp(xz, wz, wz)", lambda d: d["z"] + d["w"] * (d["w"] - d["z"]), C128),
    ("t.addcmul(xz, wz, xz, value=1j)", lambda d: d["z"] + 1j * d["w"] * d["z"], C128),
    ("t.addcmul(xz, wz, xz, value=2)", lambda d: d["z"] + 2 * d["w"] * d["z"], C128),
    ("t.addcmul(xz, xf, xi, value=2j)",
     lambda d: d["z"] + 2j * d["f"].astype(np.float32) * d["i"], C128),
    ("t.addcdiv(xz, wz, xz, value=1 - 1j)", lambda d: d["z"] + (1 - 1j) * d["w"] / d["z"], C128),
    ("xz.clone().addcmul_(wz, wz, value=1 - 1j)",
     lambda d: d["z"] + (1 - 1j) * d["w"] * d["w"], C128),
    ("xz.clone().add_(wz, alpha=1j)", lambda d: d["z"] + 1j * d["w"], C128),
    ("xz.add(wz, alpha=t.tensor(1j))", lambda d: d["z"] + 1j * d["w"], C128),
    ("t.sub(xz, 1j, alpha=2j)", lambda d: d["z"] + 2, C128),
    ("t.nn.functional.leaky_relu(xf, 0.5 + 0j)", lambda d: np.where(d["f"] > 0, d["f"],
                                                                     0.5 * d["f"]), ptl.float32),
]

# (code, exception type, PyTorch 2.13's message)
ERROR_CASES = [
    ("xf.add(xf, alpha=1j)", RuntimeError,
     "For non-complex input tensors, argument alpha must not be a complex number."),
    ("xd.clone().add_(xd, alpha=1j)", RuntimeError,
     "For non-complex input tensors, argument alpha must not be a complex number."),
    ("t.add(xf, xf, alpha=1j, out=t.empty(5, dtype=t.complex64))", RuntimeError,
     "For non-complex input tensors, argument alpha must not be a complex number."),
    ("xi.add(xi, alpha=1j)", RuntimeError,
     "For integral input tensors, argument alpha must not be a floating point number."),
    ("xf.clone().add_(1j)", RuntimeError,
     "result type ComplexFloat can't be cast to the desired output type Float"),
    ("xi.clone().mul_(1j)", RuntimeError,
     "result type ComplexFloat can't be cast to the desired output type Long"),
    ("xf.clone().pow_(1j)", RuntimeError,
     "result type ComplexFloat can't be cast to the desired output type Float"),
    ("t.full((2,), 1j, dtype=t.float32)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.full((2,), 1j, dtype=t.int64)", RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    ("t.full_like(xf, 1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.scalar_tensor(1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.scalar_tensor(1j, dtype=t.float16)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("t.scalar_tensor(1e300)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("xf.clone().fill_(1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("xd.clone().fill_(1j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("xi.clone().fill_(1j)", RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    ("xf.half().fill_(1j)", RuntimeError,
     "value cannot be converted to type c10::Half without overflow"),
    ("xc.clone().fill_(1e300j)", RuntimeError,
     "value cannot be converted to type c10::complex<float> without overflow"),
    ("xf.masked_fill(m, 1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("xf.masked_fill(m, t.tensor(2j))", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("xi.masked_fill(m, 1j)", RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    ("t.clamp(xf, 1j)", RuntimeError, "value cannot be converted to type double without overflow"),
    ("t.clamp(xf, max=1j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("t.clamp(xz, 1j)", NotImplementedError, "clamp is not supported for complex types"),
    ("t.clamp_min(xf, 1j)", NotImplementedError, "clamp is not supported for complex types"),
    ("xf.clamp_max(1j)", NotImplementedError, "clamp is not supported for complex types"),
    ("xf < 1j", NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    ("t.remainder(xf, 1j)", NotImplementedError,
     "\"remainder_cpu\" not implemented for 'ComplexFloat'"),
    ("t.addmm(Af, Af, Af, beta=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.addmv(Af[0], Af, Af[0], alpha=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.baddbmm(Af, Af[None], Af[None], alpha=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.addbmm(Af, Af[None], Af[None], alpha=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.addr(Af, Af[0], Af[0], alpha=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.addr(xi[:2, None] * xi[:2], xi[:2], xi[:2], alpha=1j)", RuntimeError,
     "For integral input tensors, argument alpha must not be a floating point number."),
    ("t.lerp(xf, xf, 0.5j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.lerp(xc, xz, 0.5)", RuntimeError,
     "expected dtype c10::complex<float> for `end` but got dtype c10::complex<double>"),
    ("t.lerp(xz, xz, xd)", RuntimeError,
     "expected dtype c10::complex<double> for `weight` but got dtype double"),
    ("t.addcmul(xf, xf, xf, value=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.addcdiv(xf, xf, xf, value=1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.index_fill(xf, 0, t.tensor([0, 2]), 1j)", RuntimeError,
     "index_fill_(): Converting complex Scalar to non-complex type is not supported"),
    ("t.nn.functional.leaky_relu(xf, 1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("t.nn.functional.pad(xf, (1, 1), value=1j)", TypeError,
     "pad(): argument 'value' (position 4) must be float, not complex"),
    ("t.histc(xf, 4, 1j, 2)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("t.arange(1j)", RuntimeError, "value cannot be converted to type double without overflow"),
    ("t.var(xf, correction=1j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("t.linalg.vector_norm(xf, 1j)", RuntimeError,
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."),
    ("t.norm(xf, 1j)", RuntimeError,
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."),
    ("t.renorm(Af, 1j, 0, 1.0)", RuntimeError, "renorm: p must be real-valued"),
    ("t.searchsorted(xf.sort().values, 1j)", NotImplementedError,
     "\"searchsorted_out_cpu\" not implemented for 'ComplexFloat'"),
]


def run(code, lib, d):
    return eval(code, env(lib, d))  # noqa: S307 -- the cases above, nothing else


def as_numpy(r):
    return r.detach().numpy() if hasattr(r, "numpy") else np.asarray(r)


@pytest.mark.parametrize("code,ref,dtype", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_against_numpy(code, ref, dtype):
    d = data()
    r = run(code, ptl, d)
    assert r.dtype == dtype, code
    tol = dict(rtol=2e-5, atol=2e-5) if dtype in (C64, ptl.float32) else \
        dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(as_numpy(r), ref(d), **tol, err_msg=code)


@torch_ref
@pytest.mark.parametrize("code", [c[0] for c in VALUE_CASES])
def test_values_against_torch(code):
    d = data()
    mine, theirs = run(code, ptl, d), run(code, torch, d)
    assert str(mine.dtype) == str(theirs.dtype) and tuple(mine.shape) == tuple(theirs.shape)
    single = str(theirs.dtype) in ("torch.complex64", "torch.float32")
    np.testing.assert_allclose(as_numpy(mine), theirs.numpy(), rtol=2e-5 if single else 1e-12,
                               atol=2e-5 if single else 1e-12, err_msg=code)


@pytest.mark.parametrize("code,exc,msg", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(code, exc, msg):
    d = data()
    assert_raises_like_torch(lambda lib: run(code, lib, d), exc, msg)


# ---- the kernels over layouts, sizes and threads ----

def layouts(shape, dtype, seed):
    """(tensor, complex128 array) pairs: contiguous, transposed, sliced, expanded."""
    g = np.random.default_rng(seed)
    out = []
    for kind in ("contiguous", "transposed", "sliced", "expanded"):
        if kind == "transposed" and len(shape) >= 2:
            a = g.standard_normal(shape[::-1]) + 1j * g.standard_normal(shape[::-1])
            t = ptl.from_numpy(a).to(dtype).permute(*reversed(range(len(shape))))
            a = a.transpose()
        elif kind == "sliced" and len(shape) >= 1:
            big = tuple(2 * s for s in shape)
            a = g.standard_normal(big) + 1j * g.standard_normal(big)
            idx = tuple(slice(None, None, 2) for _ in shape)
            t, a = ptl.from_numpy(a).to(dtype)[idx], a[idx]
        elif kind == "expanded" and len(shape) >= 1:
            a = g.standard_normal((1,) + shape[1:]) + 1j * g.standard_normal((1,) + shape[1:])
            t, a = ptl.from_numpy(a).to(dtype).expand(*shape), np.broadcast_to(a, shape)
        else:
            a = g.standard_normal(shape) + 1j * g.standard_normal(shape)
            t = ptl.from_numpy(np.array(a)).to(dtype)
        out.append((t, a.astype(NP[dtype]).astype(np.complex128)))
    return out


# shapes: 0-dim, size 0, small, at and one past the iterator's parallel grain (32768
# elements, PTL_GRAIN_SIZE), and over two grains (2 threads split it)
SHAPES = [(), (0,), (3, 4), (2, 0, 3), (32768,), (32769,), (300, 257)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [C64, C128])
def test_pointwise_kernels_over_layouts(threads, shape, dtype):
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == C64 else dict(rtol=1e-12, atol=1e-12)
    al, w = 0.75 - 1.25j, 0.3 + 0.6j
    with num_threads(threads):
        for (x, a), (y, b) in zip(layouts(shape, dtype, 1), layouts(shape, dtype, 2)):
            assert_close(ptl.add(x, y, alpha=al), a + al * b, **tol)
            assert_close(ptl.sub(x, y, alpha=al), a - al * b, **tol)
            assert_close(ptl.lerp(x, y, w), a + w * (b - a), **tol)
            assert_close(ptl.addcmul(x, x, y, value=al), a + al * a * b, **tol)
            assert_close(ptl.addcdiv(x, x, y, value=al), a + al * a / b, **tol)
            assert_close(ptl.pow(x, 1.5 - 0.5j), a ** (1.5 - 0.5j), **tol)
            assert_close(ptl.pow(x, 2), a * a, **tol)
            mask = x.real > 0
            m = np.asarray(a.real > 0)
            assert_close(x.masked_fill(mask, al), np.where(m, al, a), **tol)
            assert_close(ptl.where(mask, x, al), np.where(m, a, al), **tol)
            assert_close(ptl.full_like(x, al), np.full(np.shape(a), al), **tol)
            inplace = x.contiguous().clone()
            inplace.add_(y, alpha=al)
            assert_close(inplace, a + al * b, **tol)
            out = ptl.empty(0, dtype=dtype)
            ptl.addcmul(x, x, y, value=al, out=out)
            assert_close(out, a + al * a * b, **tol)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [C64, C128])
def test_scalar_operand_on_either_side(threads, shape, dtype):
    """A 0-dim complex tensor (or a Python complex on the right) beside a tensor: its
    stride-0 loop gives NumPy's values and the bits of the same op against a full tensor of
    it (a Python number on the left of / is reciprocal() * c, as PyTorch's __rtruediv__)"""
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == C64 else dict(rtol=1e-12, atol=1e-12)
    c = 0.75 - 1.25j
    with num_threads(threads):
        for x, a in layouts(shape, dtype, 3):
            full = ptl.full_like(x, c).contiguous()
            zero_dim = ptl.tensor(c, dtype=dtype)
            for fn, ref in ((lambda u, v: u + v, lambda u, v: u + v),
                            (lambda u, v: ptl.sub(u, v, alpha=2j), lambda u, v: u - 2j * v),
                            (lambda u, v: u * v, lambda u, v: u * v),
                            (lambda u, v: u / v, lambda u, v: u / v)):
                right, left = fn(x, zero_dim), fn(zero_dim, x)
                assert_close(right, ref(a, c), **tol)
                assert_close(left, ref(c, a), **tol)
                assert np.array_equal(right.numpy(), fn(x, full).numpy(), equal_nan=True)
                assert np.array_equal(left.numpy(), fn(full, x).numpy(), equal_nan=True)
                assert np.array_equal(fn(x, c).numpy(), right.numpy(), equal_nan=True)


def test_broadcast_and_real_operands():
    x = ptl.from_numpy(np.arange(6.0).reshape(2, 3)).to(C128)
    y = ptl.from_numpy(np.array([1.0, -1.0, 2.0]))   # a real float64 row, broadcast
    a, b = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0, 2.0])
    assert_close(ptl.add(x, y, alpha=1j), a + 1j * b)
    assert_close(ptl.addcmul(x, y, y[:1], value=2j), a + 2j * b * b[:1])
    assert_close(ptl.lerp(x, ptl.from_numpy(a[::-1].copy()).to(C128), 0.5j),
                 a + 0.5j * (a[::-1] - a))


# ---- gradients: PyTorch's conjugate convention, checked numerically ----

def r128(*shape, seed=0):
    g = np.random.default_rng(seed)
    a = g.standard_normal(shape) + 1j * g.standard_normal(shape)
    return ptl.from_numpy(a).requires_grad_()


GRAD_CASES = {
    "addmm": (lambda s, a, b: ptl.addmm(s, a, b, beta=1j, alpha=2 - 1j), [(3, 2), (3, 4), (4, 2)]),
    "addmv": (lambda s, a, v: ptl.addmv(s, a, v, beta=0.5 - 1j, alpha=1j), [(3,), (3, 4), (4,)]),
    "baddbmm": (lambda s, a, b: ptl.baddbmm(s, a, b, beta=-1j, alpha=0.5 + 2j),
                [(3, 2), (2, 3, 4), (2, 4, 2)]),
    "addbmm": (lambda s, a, b: ptl.addbmm(s, a, b, beta=1j, alpha=1 - 1j),
               [(3, 2), (2, 3, 4), (2, 4, 2)]),
    "addr": (lambda s, u, v: ptl.addr(s, u, v, beta=2j, alpha=1 + 1j), [(3, 4), (3,), (4,)]),
    "add": (lambda x, y: ptl.add(x, y, alpha=2 - 3j), [(4,), (4,)]),
    "sub": (lambda x, y: ptl.sub(x, y, alpha=2 - 3j), [(4,), (2, 4)]),
    "rsub": (lambda x, y: ptl.rsub(x, y, alpha=0.5j), [(4,), (4,)]),
    "lerp_scalar": (lambda x, y: ptl.lerp(x, y, 0.3 - 0.7j), [(4,), (4,)]),
    "lerp_tensor": (lambda x, y, w: ptl.lerp(x, y, w), [(4,), (4,), (4,)]),
    "addcmul": (lambda s, a, b: ptl.addcmul(s, a, b, value=1 - 2j), [(4,), (4,), (4,)]),
    "addcdiv": (lambda s, a, b: ptl.addcdiv(s, a, b, value=1 - 2j), [(4,), (4,), (4,)]),
    "pow_scalar_exponent": (lambda x: ptl.pow(x, 1.5 + 0.5j), [(4,)]),
    "pow_integer_exponent": (lambda x: ptl.pow(x, 3), [(4,)]),
    "pow_scalar_base": (lambda x: ptl.pow(2 - 1j, x), [(4,)]),
    "pow_tensors": (lambda x, y: ptl.pow(x, y), [(4,), (4,)]),
    "masked_fill": (lambda x: x.masked_fill(ptl.tensor([True, False, True, False]), 1j), [(4,)]),
    "where": (lambda x: ptl.where(ptl.tensor([True, False, True, False]), x, 2j), [(4,)]),
    "index_fill": (lambda x: x.index_fill(0, ptl.tensor([1, 3]), 1j), [(4,)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    assert gradcheck(fn, tuple(r128(*s, seed=i) for i, s in enumerate(shapes)))


@torch_ref
@pytest.mark.parametrize("name", ["addmm", "add", "lerp_scalar", "addcdiv", "pow_scalar_base"])
def test_gradients_match_torch(name):
    fn, shapes = GRAD_CASES[name]
    code = {"addmm": "t.addmm(s, a, b, beta=1j, alpha=2 - 1j)",
            "add": "t.add(s, a, alpha=2 - 3j)", "lerp_scalar": "t.lerp(s, a, 0.3 - 0.7j)",
            "addcdiv": "t.addcdiv(s, a, b, value=1 - 2j)",
            "pow_scalar_base": "t.pow(2 - 1j, s)"}[name]
    arrays = [r128(*sh, seed=i).detach().numpy() for i, sh in enumerate(shapes)]
    grads = []
    for lib in (ptl, torch):
        ins = [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]
        names = dict(zip("sab", ins), t=lib)
        out = eval(code, names)  # noqa: S307 -- the fixed code above
        out.abs().sum().backward()
        grads.append([x.grad.numpy() for x in ins])
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_real_input_gets_the_real_part_of_its_gradient():
    """pow(x, 1j) with a real x: x.grad is the real part of the complex chain, as PyTorch's."""
    a = np.array([0.5, 1.5, 2.0])
    x = ptl.from_numpy(a).requires_grad_()
    ptl.pow(x, 1j).abs().pow(2).sum().backward()   # |x^i|^2 = 1: zero gradient
    assert_close(x.grad, np.zeros(3), atol=1e-12)
    x.grad = None
    y = ptl.pow(x, 1j)
    y.real.sum().backward()   # d/dx cos(log x) = -sin(log x) / x
    assert_close(x.grad, -np.sin(np.log(a)) / a)


# ---- the Scalar itself: parser, saved attributes, the tracer ----

def test_zero_dim_complex_tensor_is_a_scalar():
    x = ptl.tensor([1 + 1j, 2 - 1j], dtype=C128)
    assert_close(x.add(x, alpha=ptl.tensor(1j)), np.array([1 + 1j, 2 - 1j]) * (1 + 1j))
    # one that requires grad takes a Tensor overload where there is one
    v = ptl.tensor(2j, dtype=C128, requires_grad=True)
    y = x.masked_fill(ptl.tensor([True, False]), v)
    y.real.sum().backward()
    assert_close(v.grad, np.array(1.0 + 0j))


def test_saved_alpha_is_complex():
    x = r128(3)
    y = ptl.add(x, x, alpha=2 - 1j)
    assert y.grad_fn._saved_alpha == 2 - 1j
    z = ptl.addmm(r128(2, 2), r128(2, 2), r128(2, 2), beta=1j)
    assert z.grad_fn._saved_beta == 1j and z.grad_fn._saved_alpha == 1
    if torch is not None:
        t = torch.ones(3, dtype=torch.complex128, requires_grad=True)
        assert torch.add(t, t, alpha=2 - 1j).grad_fn._saved_alpha == 2 - 1j


def test_python_fallback_is_gone():
    assert not hasattr(ptl_functional, "_complex_scalar_fallback")
    assert not hasattr(ptl._C, "_set_complex_scalar_fallback")


def test_trace_with_a_complex_constant():
    def f(x):
        return ptl.add(x, x, alpha=2 - 1j) * 1.5

    x = ptl.from_numpy(np.array([1 + 2j, -1j]))
    tr = ptl.jit.trace(f, x)
    assert "complex = prim::Constant[value=2.-1.j]()" in str(tr.graph)
    assert_close(tr(x), (np.array([1 + 2j, -1j]) * (3 - 1j)) * 1.5)
    if torch is not None:
        ttr = torch.jit.trace(lambda t: torch.add(t, t, alpha=2 - 1j) * 1.5,
                              torch.from_numpy(np.array([1 + 2j, -1j])))
        assert "complex = prim::Constant[value=2.-1.j]()" in str(ttr.graph)


def test_saved_trace_round_trips_a_complex_constant(tmp_path):
    def f(x):
        return ptl.add(x, x, alpha=0.1 - 1e-300j)

    x = ptl.from_numpy(np.array([1 + 2j, -1j]))
    tr = ptl.jit.trace(f, x)
    path = str(tmp_path / "m.pt")
    ptl.jit.save(tr, path)
    loaded = ptl.jit.load(path)
    assert_close(loaded(x), tr(x), rtol=0, atol=0)


def test_onnx_export_refuses_a_complex_constant():
    """ONNX operators take no complex scalars: the exporter's constant lookup says so (the
    onnx package is not needed to reach it)."""
    from pytorchlite.onnx import _export
    x = ptl.from_numpy(np.array([1 + 2j, -1j]))
    graph = ptl.jit.trace(lambda t: ptl.add(t, t, alpha=2 - 1j), x).graph
    ctx = object.__new__(_export._Context)
    ctx.producers = {o: n for n in graph.nodes for o in n.outputs}
    const = next(n for n in graph.nodes
                 if n.kind == "prim::Constant" and isinstance(n.attrs.get("value"), complex))
    with pytest.raises(RuntimeError, match="ONNX export: the complex constant"):
        ctx.const(const.outputs[0])


@pytest.mark.parametrize("dtype", [C64, C128])
def test_indexing_moves_whole_complex_elements(dtype):
    """x[idx] and index_select of complex128 moved 8 of each element's 16 bytes (their row
    moves knew element sizes up to 8)."""
    a = np.arange(12).reshape(3, 4) * (1 + 0.5j)
    x, idx = ptl.from_numpy(a).to(dtype), ptl.tensor([2, 0, 2])
    assert_close(x[idx], a[[2, 0, 2]], rtol=0, atol=0)
    assert_close(x[:, idx], a[:, [2, 0, 2]], rtol=0, atol=0)
    assert_close(x.index_select(1, idx), a[:, [2, 0, 2]], rtol=0, atol=0)
    assert_close(x.reshape(-1)[ptl.tensor([5, 11, 0])], a.reshape(-1)[[5, 11, 0]], rtol=0,
                 atol=0)
