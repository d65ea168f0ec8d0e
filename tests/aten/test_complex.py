"""complex64 / complex128 (Note [Complex dtypes] in src/aten/native/complex.c): the dtypes and
their promotion, creation and conversion, the complex kernels against NumPy's complex128,
the views between complex and real tensors, and the errors of everything else."""
import io
import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.special

import pytorchlite as ptl
from helpers import assert_close, crandn, torch, torch_ref

C64, C128 = ptl.complex64, ptl.complex128
REAL_DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
               ptl.bfloat16, ptl.float32, ptl.float64]
NP_OF = {C64: np.complex64, C128: np.complex128}


LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]
SHAPES = [(), (0,), (3,), (2, 3), (0, 4), (2, 1, 3)]


def outcome(fn):
    """What fn() gives, for comparing with PyTorch: its repr, or the exception's type name
    and first message line."""
    try:
        return repr(fn())
    except Exception as exc:  # noqa: BLE001 -- the exception is the answer
        return type(exc).__name__, str(exc).split("\n")[0]


# ---- dtypes ----

def test_dtype_objects():
    assert ptl.cfloat is C64 and ptl.cdouble is C128
    assert str(C64) == "torch.complex64" and str(C128) == "torch.complex128"
    assert C64.itemsize == 8 and C128.itemsize == 16
    assert C64.is_complex and C128.is_complex and not ptl.float64.is_complex
    assert not C64.is_floating_point and C64.is_signed
    assert pickle.loads(pickle.dumps(C128)) is C128


def test_promotion_table():
    for d in REAL_DTYPES:
        wide = C128 if d == ptl.float64 else C64
        assert ptl.promote_types(d, C64) == wide and ptl.promote_types(C64, d) == wide
        assert ptl.promote_types(d, C128) == C128 and ptl.promote_types(C128, d) == C128
        assert not ptl.can_cast(C64, d) and ptl.can_cast(d, C128)
    assert ptl.promote_types(C64, C128) == C128
    assert ptl.can_cast(C128, C64)


@torch_ref
def test_promotion_matches_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "bfloat16", "float32",
             "float64", "complex64", "complex128"]
    for a in names:
        for b in ("complex64", "complex128"):
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b)))
            assert str(ptl.promote_types(getattr(ptl, a), getattr(ptl, b))) == want


def test_python_complex_scalars_promote():
    x = ptl.tensor([1.0, 2.0])
    assert (x * 1j).dtype == C64
    assert (ptl.tensor([1, 2]) * 1j).dtype == C64
    assert (ptl.tensor([True]) + 1j).dtype == C64
    assert (x.double() * 1j).dtype == C128
    assert (ptl.tensor([1, 2], dtype=C128) * 2.5).dtype == C128   # a float stays below
    assert (ptl.tensor(1.0, dtype=ptl.float64) * ptl.tensor([1j])).dtype == C64
    assert_close(x * (2 - 1j), np.array([1.0, 2.0]) * (2 - 1j))
    assert_close(1j - x, 1j - np.array([1.0, 2.0]))
    old = ptl.get_default_dtype()
    ptl.set_default_dtype(ptl.float64)
    try:
        assert (ptl.tensor([1, 2]) * 1j).dtype == C128
        assert ptl.tensor([1j]).dtype == C128
    finally:
        ptl.set_default_dtype(old)


# ---- creation, Python and NumPy exchange ----

def test_tensor_from_python_complex():
    t = ptl.tensor([1 + 2j, 3, 0.5])
    assert t.dtype == C64
    assert t.tolist() == [1 + 2j, 3 + 0j, 0.5 + 0j]
    assert all(type(v) is complex for v in t.tolist())
    s = ptl.tensor(1.5 - 2j, dtype=C128)
    assert s.dim() == 0 and s.item() == 1.5 - 2j and type(s.item()) is complex
    assert ptl.tensor([[1, 2], [3, 4]], dtype=C128).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        ptl.tensor([1j], dtype=ptl.float32)


def test_numpy_round_trip():
    for dt in (C64, C128):
        a = (np.arange(12).reshape(3, 4) + 1j * np.arange(12).reshape(3, 4)).astype(NP_OF[dt])
        t = ptl.from_numpy(a)
        assert t.dtype == dt and t.tolist() == a.tolist()
        a[0, 0] = 7 - 7j   # from_numpy shares memory
        assert t[0, 0].item() == 7 - 7j
        assert t.numpy().dtype == NP_OF[dt] and np.shares_memory(t.numpy(), a)
        strided = ptl.from_numpy(a[:, ::2].T)
        assert strided.tolist() == a[:, ::2].T.tolist()
        assert np.array_equal(np.asarray(t.t()), a.T)


def test_save_load_and_pickle():
    t, _ = crandn((2, 3), C128)
    c = t.to(C64)
    buf = io.BytesIO()
    ptl.save({"t": t, "c": c, "view": t.t()}, buf)
    buf.seek(0)
    back = ptl.load(buf)
    assert back["t"].dtype == C128 and back["t"].tolist() == t.tolist()
    assert back["c"].dtype == C64 and back["c"].tolist() == c.tolist()
    assert back["view"].tolist() == t.t().tolist()
    assert pickle.loads(pickle.dumps(t)).tolist() == t.tolist()


def test_dlpack_round_trip():
    t, a = crandn((2, 3), C64)
    back = ptl.from_dlpack(t)
    assert back.dtype == C64 and back.tolist() == t.tolist()
    n = np.from_dlpack(t)
    assert n.dtype == np.complex64 and np.array_equal(n, a)


@torch_ref
def test_repr_matches_torch():
    cases = ["tensor([1+2j, 3-1j])", "tensor([1+2j, 3-1j], dtype=t.complex128)",
             "tensor(1.5+2j)", "tensor([1e10+2j, 3-1j])", "tensor([1+2j, 3.5-1j])",
             "tensor([[0.25j, -1], [2+2j, 1e-5]])", "zeros(0, dtype=t.complex64)",
             "zeros(2, 0, dtype=t.complex128)", "tensor([1j, 2j]) * 1e-3"]
    for code in cases:
        want = repr(eval("t." + code, {"t": torch}))
        assert repr(eval("t." + code, {"t": ptl})) == want, code


def test_repr_without_torch():
    assert repr(ptl.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(ptl.tensor([1 + 2j], dtype=C128)) == "tensor([1.+2.j], dtype=torch.complex128)"
    assert repr(ptl.tensor(1.5 + 2j)) == "tensor(1.5000+2.j)"


# ---- conversions ----

@pytest.mark.parametrize("dst", REAL_DTYPES)
def test_complex_to_real_keeps_the_real_part(dst):
    t = ptl.tensor([1.0 + 2j, -3.0 - 0.5j, 0.0 + 1j, 0j], dtype=C128)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = t.to(dst)
    if dst == ptl.bool:   # nonzero when either part is: nothing is discarded, no warning
        assert got.tolist() == [True, True, True, False] and not w
        return
    assert "Casting complex values to real discards the imaginary part" in str(w[0].message)
    want = ptl.tensor([1.0, -3.0, 0.0, 0.0]).to(dst)
    assert got.dtype == dst and got.tolist() == want.tolist()


@pytest.mark.parametrize("src", REAL_DTYPES)
@pytest.mark.parametrize("dst", [C64, C128])
def test_real_to_complex(src, dst):
    base = ptl.tensor([[1, 0, 3], [2, 1, 0]]).to(src).t()   # non-contiguous
    got = base.to(dst)
    assert got.dtype == dst
    assert got.tolist() == [[complex(v) for v in row] for row in base.double().tolist()]


def test_complex_to_complex_and_copy_():
    t, a = crandn((3, 4), C128, "transposed")
    assert_close(t.to(C64), a.astype(np.complex64).astype(np.complex128))
    out = ptl.zeros(4, 3, dtype=C64)
    out.copy_(t.t())
    assert_close(out, a.T.astype(np.complex64))
    wide = ptl.zeros(2, 3, dtype=C128)
    wide.copy_(ptl.tensor([1.0, 2.0, 3.0]))   # broadcast, real into complex
    assert wide.tolist() == [[1, 2, 3], [1, 2, 3]]
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        ptl.zeros(3).copy_(ptl.tensor([1j, 2, 3]))


# ---- pointwise kernels against NumPy ----

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_binary(name, dtype, layout):
    op, ref = BINARY[name]
    for k, shape in enumerate(SHAPES):
        x, a = crandn(shape, dtype, layout, seed=k)
        y, b = crandn(shape[-1:], dtype, seed=k + 100)   # broadcast from the right
        assert_close(op(x, y), ref(a, b), dtype=dtype)
        assert_close(op(y, x), ref(b, a), dtype=dtype)
        assert_close(op(x, 2.5), ref(a, 2.5), dtype=dtype)
        assert_close(op(x, 0.5 - 2j), ref(a, 0.5 - 2j), dtype=dtype)
        r = ptl.tensor(np.linspace(1, 2, shape[-1] if shape else 1), dtype=ptl.float32)
        assert_close(op(x, r), ref(a, r.numpy().astype(np.float64)), dtype=dtype)


def test_binary_mixed_precision_and_alpha():
    x, a = crandn((2, 3), C64)
    y = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64)
    assert_close(x + y, a + y.numpy(), dtype=C128)
    assert_close(ptl.add(x, x, alpha=2), a + 2 * a)
    assert_close(ptl.sub(x, x.to(C128), alpha=0.5), a - 0.5 * a, dtype=C128)
    assert_close(ptl.rsub(x, 1.0), 1.0 - a)


def test_inplace_and_out():
    x, a = crandn((2, 3), C128)
    y, b = crandn((3,), C128, seed=3)
    x.mul_(y)
    assert_close(x, a * b)
    x.add_(1.0)
    assert_close(x, a * b + 1)
    x.div_(2j)
    assert_close(x, (a * b + 1) / 2j)
    out = ptl.empty(0, dtype=C128)
    ptl.sub(x, y, out=out)
    assert_close(out, (a * b + 1) / 2j - b)
    with pytest.raises(RuntimeError, match="result type ComplexDouble can't be cast to the "
                                           "desired output type Double"):
        ptl.add(x, y, out=ptl.empty(0, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast"):
        ptl.ones(3).mul_(1j)   # an in-place real tensor cannot hold a complex result


@pytest.mark.parametrize("dtype", [C64, C128])
def test_pow_of_reals_into_a_complex_out(dtype):
    """Real operands of pow with a complex out= tensor compute in their own dtype and are
    cast into it, as PyTorch's (a negative base to a fractional power is nan + 0j, not
    complex; pow(2.6, x, out=) had refused "pow_cpu" for Float); a complex exponent still
    computes in complex."""
    a = np.array([0.5, 1.0, -2.0, 0.0])
    x, i = ptl.tensor(a, dtype=ptl.float64), ptl.tensor([2, 3, -1, 0])
    with np.errstate(invalid="ignore", divide="ignore"):
        cases = [(lambda o: ptl.pow(2.618, x, out=o), 2.618 ** a),
                 (lambda o: ptl.pow(-2.618, x, out=o), np.power(-2.618, a)),
                 (lambda o: ptl.pow(x, 0.5, out=o), np.sqrt(a)),
                 (lambda o: ptl.pow(x, x, out=o), np.power(a, a)),
                 (lambda o: ptl.pow(x, 3, out=o), a ** 3),
                 (lambda o: ptl.pow(2, i.abs(), out=o), 2.0 ** np.abs([2, 3, -1, 0])),
                 (lambda o: ptl.pow(x, 1j, out=o), np.power(a.astype(complex), 1j))]
    for fn, want in cases:
        out = ptl.zeros(4, dtype=dtype)
        assert fn(out) is out
        assert_close(out, np.asarray(want, complex), dtype=dtype, equal_nan=True)


UNARY = {
    "neg": (ptl.neg, np.negative, 0),
    "exp": (ptl.exp, np.exp, 1e-5),
    "log": (ptl.log, np.log, 1e-5),
    "sqrt": (ptl.sqrt, np.sqrt, 1e-5),
    "abs": (ptl.abs, np.abs, 1e-5),
    "angle": (ptl.angle, np.angle, 1e-5),
    "conj": (ptl.conj, np.conj, 0),
    "conj_physical": (ptl.conj_physical, np.conj, 0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unary(name, dtype, layout):
    op, ref, _ = UNARY[name]
    real_result = name in ("abs", "angle")
    for k, shape in enumerate(SHAPES):
        x, a = crandn(shape, dtype, layout, seed=k)
        got = op(x)
        want_dtype = (ptl.float32 if dtype == C64 else ptl.float64) if real_result else dtype
        assert_close(got, ref(a), dtype=want_dtype)


def test_unary_inplace_and_special_values():
    x, a = crandn((4,), C128)
    x.exp_()
    assert_close(x, np.exp(a))
    x.neg_()
    assert_close(x, -np.exp(a))
    special = np.array([0j, -1 + 0j, complex(np.inf, 0), complex(0, np.inf), -4 + 0j])
    t = ptl.tensor(special, dtype=C64)
    with np.errstate(all="ignore"):
        assert_close(ptl.log(t), np.log(special.astype(np.complex64)))
        assert_close(ptl.sqrt(t), np.sqrt(special.astype(np.complex64)))
        assert_close(ptl.tensor([1 + 1j]) / 0, np.array([1 + 1j]) / np.complex128(0))
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        ptl.tensor([1j]).abs_()


def test_abs_out_and_angle_of_reals():
    x, a = crandn((2, 3), C128)
    out = ptl.empty(0, dtype=ptl.float64)
    assert ptl.abs(x, out=out) is out
    assert_close(out, np.abs(a))
    r = ptl.tensor([-2.0, 0.0, 3.0, float("nan")])
    assert_close(ptl.angle(r), np.array([np.pi, 0.0, 0.0, np.nan]))
    assert ptl.angle(ptl.tensor([-1, 2])).dtype == ptl.float32


@pytest.mark.parametrize("layout", LAYOUTS)
def test_eq_ne(layout):
    x, a = crandn((3, 4), C128, layout)
    y = x.clone()
    y[1, 2] = 5j
    b = np.array(a)
    b[1, 2] = 5j
    assert_close(x == y, a == b)
    assert_close(x != y, a != b)
    assert_close(x == 5j, a == 5j)
    assert_close(ptl.tensor([1.0, 2.0]) == ptl.tensor([1 + 0j, 2 + 1j]), np.array([True, False]))


# ---- reductions ----

@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sum_mean(dtype, layout):
    for k, shape in enumerate([(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]):
        x, a = crandn(shape, dtype, layout, seed=k)
        tol = dict(rtol=1e-5, atol=1e-5) if dtype == C64 else {}
        assert_close(x.sum(), a.sum(), dtype=dtype, **tol)
        with np.errstate(all="ignore"):
            assert_close(x.mean(), a.mean() if a.size else complex(np.nan, np.nan),
                         dtype=dtype, **tol)
        for d in range(-len(shape), len(shape)):
            for keep in (False, True):
                assert_close(x.sum(d, keepdim=keep), a.sum(d, keepdims=keep), **tol)
                with np.errstate(all="ignore"):
                    assert_close(x.mean(d, keepdim=keep), a.mean(d, keepdims=keep), **tol)
        if len(shape) >= 2:
            assert_close(x.sum((0, -1)), a.sum((0, -1)), **tol)


def test_sum_dtype_and_errors():
    x, a = crandn((2, 3), C64)
    assert_close(x.sum(dtype=C128), a.sum(), dtype=C128, rtol=1e-6)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert_close(x.sum(dtype=ptl.float64), a.real.sum(), dtype=ptl.float64, rtol=1e-6)
    assert_close(ptl.ones(3).sum(dtype=C64), np.array(3 + 0j), dtype=C64)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, 0))


# ---- views between complex and real ----

@pytest.mark.parametrize("layout", LAYOUTS)
def test_real_imag_are_views(layout):
    x, a = crandn((3, 4), C128, layout)
    re, im = x.real, x.imag
    assert re.dtype == ptl.float64 and im.dtype == ptl.float64
    assert_close(re, a.real)
    assert_close(im, a.imag)
    assert re.stride() == tuple(2 * s for s in x.stride())
    assert im.storage_offset() == 2 * x.storage_offset() + 1
    if layout != "expanded":
        y = x.clone()
        y.imag.fill_(7.0)   # writes through to the complex tensor
        assert_close(y, a.real + 7j)
        y.real.mul_(2)
        assert_close(y, 2 * a.real + 7j)
    r = ptl.tensor([1.0, 2.0])
    assert ptl.real(r).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes."):
        r.imag


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_view_as_real_and_back(dtype, layout):
    for k, shape in enumerate(SHAPES):
        x, a = crandn(shape, dtype, layout, seed=k)
        r = ptl.view_as_real(x)
        assert r.shape == tuple(shape) + (2,) and r.stride()[-1] == 1
        assert_close(r, np.stack([a.real, a.imag], -1))
        back = ptl.view_as_complex(r)
        assert back.dtype == dtype and back.stride() == x.stride()
        assert_close(back, a)


def test_view_as_complex_batched_noncontiguous():
    base = ptl.arange(48, dtype=ptl.float64).reshape(4, 3, 2, 2)
    v = base.permute(1, 0, 2, 3)   # batched and non-contiguous, last dim still stride 1
    z = ptl.view_as_complex(v)
    a = base.numpy().transpose(1, 0, 2, 3)
    assert_close(z, a[..., 0] + 1j * a[..., 1])
    z[0, 0, 0] = -1 - 1j   # a view: writes reach base
    assert base[0, 0, 0].tolist() == [-1.0, -1.0]
    assert ptl.view_as_complex(ptl.ones(5, 2)[1:]).shape == (4,)   # offset 2: even


@torch_ref
def test_view_as_errors_match_torch():
    for code in ["t.view_as_complex(t.ones(3))", "t.view_as_complex(t.ones(2, 3))",
                 "t.view_as_complex(t.ones(2, 2).t())",
                 "t.view_as_complex(t.ones(2, 4)[:, ::2])", "t.view_as_complex(t.ones(()))",
                 "t.view_as_real(t.ones(2))",
                 "t.view_as_complex(t.ones(8)[1:].as_strided((3, 2), (2, 1), 1))",
                 "t.view_as_complex(t.ones(9).as_strided((3, 2), (3, 1)))"]:
        assert outcome(lambda: eval(code, {"t": ptl})) == \
            outcome(lambda: eval(code, {"t": torch})), code


def test_view_as_errors():
    cases = [(ptl.ones(3), "Tensor must have a last dimension of size 2"),
             (ptl.ones(2, 2).t(), "Tensor must have a last dimension with stride 1"),
             (ptl.ones(()), "Input tensor must have one or more dimensions"),
             (ptl.ones(8)[1:].as_strided((3, 2), (2, 1), 1),
              "Tensor must have a storage_offset divisible by 2"),
             (ptl.ones(9).as_strided((3, 2), (3, 1)),
              "Tensor must have a stride divisible by 2 for all but last dimension"),
             (ptl.ones(3, 2, dtype=ptl.int32), "only supported for float and double tensors"),
             (ptl.ones(3, 2, dtype=ptl.float16), "pytorchlite has no complex32")]
    for t, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            ptl.view_as_complex(t)
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        ptl.view_as_real(ptl.ones(2))


# ---- complex() and polar() ----

@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_complex_and_polar(dtype):
    re = ptl.tensor(np.random.default_rng(1).standard_normal((3, 4)), dtype=dtype)
    im = ptl.tensor(np.random.default_rng(2).standard_normal((4,)), dtype=dtype)
    a, b = re.double().numpy(), im.double().numpy()
    want = C64 if dtype == ptl.float32 else C128
    assert_close(ptl.complex(re, im), a + 1j * b, dtype=want)
    assert_close(ptl.complex(re.t(), re[:, 0]), a.T + 1j * a[:, 0], dtype=want)   # strided
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == ptl.float32 else {}
    assert_close(ptl.polar(re.abs(), im), np.abs(a) * np.exp(1j * b), dtype=want, **tol)
    batched = ptl.complex(re.expand(2, 3, 4), im[None, None])
    assert_close(batched, np.broadcast_to(a + 1j * b, (2, 3, 4)))
    assert ptl.complex(ptl.ones(0, 2, dtype=dtype), ptl.ones(2, dtype=dtype)).shape == (0, 2)
    assert ptl.complex(ptl.tensor(1.0, dtype=dtype), ptl.tensor(2.0, dtype=dtype)).item() == 1 + 2j


def test_eig_style_wiring():
    """The shape linalg.eig builds its result with: real and imaginary parts as separate
    batched real tensors (here non-contiguous slices) joined by torch.complex and split back
    by view_as_real."""
    parts = ptl.tensor(np.random.default_rng(3).standard_normal((5, 4, 2)))
    wr, wi = parts[..., 0], parts[..., 1]   # stride 2: non-contiguous
    w = ptl.complex(wr, wi)
    assert w.dtype == C128 and w.shape == (5, 4)
    assert_close(w, parts.numpy()[..., 0] + 1j * parts.numpy()[..., 1])
    assert ptl.view_as_real(w).tolist() == parts.tolist()
    assert ptl.view_as_complex(parts).tolist() == w.tolist()


def test_complex_polar_errors():
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got "
                                           "scalar type Double for second argument"):
        ptl.complex(ptl.ones(2), ptl.ones(2, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match="but got Long and Long"):
        ptl.polar(ptl.ones(2, dtype=ptl.int64), ptl.ones(2, dtype=ptl.int64))
    with pytest.raises(RuntimeError, match="pytorchlite has no complex32"):
        ptl.complex(ptl.ones(2, dtype=ptl.float16), ptl.ones(2, dtype=ptl.float16))
    with pytest.raises(RuntimeError, match="must match the size"):
        ptl.complex(ptl.ones(2), ptl.ones(3))


# ---- byte-moving ops ----

def test_shape_and_copy_ops():
    x, a = crandn((3, 4), C64, "transposed")
    assert_close(x.contiguous(), a)
    assert x.contiguous().is_contiguous()
    assert_close(x.clone(), a)
    assert_close(x.reshape(12), a.reshape(12))
    assert_close(x.t(), a.T)
    assert_close(x[1], a[1])
    assert_close(x[:, 1:3], a[:, 1:3])
    assert_close(x.unsqueeze(0).squeeze(0), a)
    assert_close(x.flatten(), a.flatten())
    assert_close(ptl.cat([x, x[:1]]), np.concatenate([a, a[:1]]))
    assert_close(ptl.cat([x, ptl.ones(1, 4)]), np.concatenate([a, np.ones((1, 4))]))
    assert_close(ptl.stack([x, x], 1), np.stack([a, a], 1))
    assert_close(x[ptl.tensor([2, 0])], a[[2, 0]])
    assert_close(x.index_select(1, ptl.tensor([3, 1])), a[:, [3, 1]])
    assert_close(ptl.zeros_like(x), np.zeros_like(a))
    assert_close(ptl.ones_like(x), np.ones_like(a))
    assert_close(ptl.full((2,), 2.5, dtype=C128), np.full(2, 2.5 + 0j), dtype=C128)
    y = x.clone()
    y.fill_(3.0)
    assert_close(y, np.full((3, 4), 3 + 0j))
    y.zero_()
    assert_close(y, np.zeros((3, 4)))
    assert [p.tolist() for p in x.unbind(0)] == [r.tolist() for r in x]


# ---- what raises ----

@torch_ref
def test_unsupported_ops_match_torch():
    for code in ["z.max()", "z.min()", "t.max(z, 0)", "z.argmax()", "t.maximum(z, z)",
                 "z.sort()", "z.argsort()", "z.topk(1)", "z.clamp(0, 1)", "z.clamp_min(0)",
                 "t.relu(z)", "z.floor()", "z.sign()", "z < z", "z > 1", "z <= z",
                 "z % 2", "z.median()", "z.cummax(0)", "t.zeros(2).add_(z)"]:
        assert outcome(lambda: eval(code, {"z": ptl.tensor([1 + 2j, 3 - 1j]), "t": ptl})) == \
            outcome(lambda: eval(code, {"z": torch.tensor([1 + 2j, 3 - 1j]), "t": torch})), code


def test_unsupported_ops_raise():
    z = ptl.tensor([1 + 2j, 3 - 1j])
    cases = [(lambda: z.max(), NotImplementedError, "\"max_all\" not implemented for "
                                                    "'ComplexFloat'"),
             (lambda: ptl.max(z, 0), RuntimeError, "max\\(\\): does not support complex"),
             (lambda: z.sort(), RuntimeError, "Sort does not support complex dtypes on CPU"),
             (lambda: z.clamp(0, 1), NotImplementedError, "clamp is not supported for complex"),
             (lambda: z < z, NotImplementedError, "\"lt_cpu\" not implemented for "
                                                  "'ComplexFloat'"),
             (lambda: ptl.erf(z.to(C128)), NotImplementedError,
              "\"erf_cpu\" not implemented for 'ComplexDouble'"),
             (lambda: ptl.lgamma(z), NotImplementedError, "\"lgamma_cpu\" not implemented"),
             (lambda: ptl.arange(3, dtype=C64), NotImplementedError,
              "\"arange_cpu\" not implemented for 'ComplexFloat'"),
             (lambda: ptl.zeros(2).fill_(1j), RuntimeError,
              "value cannot be converted to type float without overflow"),
             (lambda: z.sign(), NotImplementedError, "Please use torch.sgn instead")]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()




# ---- in-place comparisons, rounding division, out= of real operands, sgn_, concat ----

@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS[:3])
def test_eq_ne_in_place_write_one_and_zero(dtype, layout):
    x, a = crandn((2, 3), dtype, layout, seed=1)
    b = a.copy()
    b[0, 1] += 1j
    other = ptl.tensor(b, dtype=dtype)
    for name, want in (("eq_", a == b), ("ne_", a != b), ("not_equal_", a != b)):
        y = x.clone()
        assert getattr(y, name)(other) is y
        assert_close(y, want.astype(NP_OF[dtype]), dtype=dtype, rtol=0, atol=0)
    y = x.clone()
    y.eq_(ptl.tensor(a[0], dtype=dtype))   # broadcast other; a Python number
    assert_close(y, (a == a[0]).astype(NP_OF[dtype]), dtype=dtype, rtol=0, atol=0)
    assert_close(x.clone().ne_(complex(a[1, 2])), (a != a[1, 2]).astype(NP_OF[dtype]),
                 rtol=0, atol=0)


def test_eq_in_place_of_a_real_self_compares_as_complex():
    z = ptl.tensor([1 + 1j, 2 + 0j])
    assert ptl.tensor([1.0, 2.0]).eq_(z).tolist() == [0.0, 1.0]
    assert ptl.tensor([1, 2]).ne_(z).tolist() == [1, 0]
    assert ptl.tensor([True, False]).eq_(ptl.tensor([1 + 0j, 2 + 0j])).tolist() == [True, False]
    nan = ptl.tensor([complex(float("nan"), 0)])
    assert nan.clone().eq_(nan).tolist() == [0j] and nan.clone().ne_(nan).tolist() == [1 + 0j]
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                       r"broadcast shape \[2, 2\]"):
        z.clone().eq_(ptl.tensor([[1 + 1j], [2]]))


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
def test_div_without_rounding_mode_is_complex_division(dtype):
    x, a = crandn((3, 4), dtype, "transposed", seed=2)
    y, b = crandn((4,), dtype, seed=3)
    want = (a / b).astype(NP_OF[dtype])
    assert_close(ptl.div(x, y, rounding_mode=None), want, dtype=dtype)
    z = x.clone()
    assert z.div_(y, rounding_mode=None) is z
    assert_close(z, want, dtype=dtype)
    out = ptl.empty(0, dtype=C128)
    assert ptl.div(x, y, rounding_mode=None, out=out) is out   # computed in x's dtype
    assert_close(out, want.astype(np.complex128), dtype=C128, rtol=1e-6, atol=1e-6)
    assert_close(ptl.div(x.real, y, rounding_mode=None), (a.real / b).astype(NP_OF[dtype]))


@torch_ref
def test_div_rounding_modes_and_real_operands_match_torch():
    def calls(lib):
        f, z = lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1 + 1j, 2 - 1j, 3j])
        cout = lib.empty(3, dtype=lib.complex64)
        yield lambda: lib.div(f, f, out=cout)
        yield lambda: lib.add(f, f, alpha=2, out=cout)
        yield lambda: lib.sub(f, f.flip(0), out=cout)
        yield lambda: lib.mul(f, f, out=lib.empty(3, dtype=lib.complex128))
        yield lambda: lib.div(z, f, rounding_mode=None, out=lib.empty(3))
        yield lambda: lib.div(z, f, rounding_mode="bad")
        for mode in ("trunc", "floor"):
            yield lambda: lib.div(f, f + 0.5, rounding_mode=mode, out=cout)
            yield lambda: lib.div(z, 2, rounding_mode=mode)
            yield lambda: lib.div(f.double(), z, rounding_mode=mode)
            yield lambda: f.clone().div_(z, rounding_mode=mode)
            yield lambda: lib.div(f, 1j, rounding_mode=mode)
    for ours, theirs in zip(calls(ptl), calls(torch)):
        assert outcome(ours) == outcome(theirs)


@pytest.mark.parametrize("dtype", [C64, C128], ids=str)
def test_sgn_in_place(dtype):
    x, a = crandn((3, 4), dtype, "sliced", seed=4)
    x = x.clone()
    x[0, 0] = 0
    a[0, 0] = 0
    with np.errstate(invalid="ignore"):
        want = np.where(a == 0, 0, a / np.abs(a)).astype(NP_OF[dtype])
    assert x.sgn_() is x
    assert_close(x, want, dtype=dtype)
    r = ptl.tensor([-2.0, 0.0, 3.0])
    assert r.sgn_().tolist() == [-1.0, 0.0, 1.0]


def test_concat_is_cat():
    x, a = crandn((2, 3), C64, "transposed", seed=5)
    y, b = crandn((1, 3), C128, seed=6)
    assert_close(ptl.concat([x, y], -2), np.concatenate([a, b], -2), dtype=C128)
    assert_close(ptl.concat([x, ptl.ones(2, 3)], 0),
                 np.concatenate([a, np.ones((2, 3))]).astype(np.complex64), dtype=C64)
    assert_close(ptl.ops.aten.concat([x, x], 1), np.concatenate([a, a], 1), dtype=C64)


@torch_ref
def test_refusals_match_torch():
    """pin_memory without an accelerator, flash attention and group norm refuse complex
    inputs as PyTorch does, after the checks it makes first (the layout, the query's dtype)."""
    def z(lib, *shape):
        return lib.ones(shape, dtype=lib.complex64)
    for call in [
            lambda lib: lib.ops.aten._pin_memory(z(lib, 2, 3)),
            lambda lib: z(lib, 2).pin_memory(),
            lambda lib: lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                z(lib, 1, 2, 3, 4), z(lib, 1, 2, 5, 4), z(lib, 1, 2, 5, 4)),
            lambda lib: lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                z(lib, 1, 2, 3, 4), lib.ones(1, 2, 5, 4), lib.ones(1, 2, 5, 4)),
            lambda lib: lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                z(lib, 2, 3, 4), z(lib, 2, 5, 4), z(lib, 2, 5, 4), 0.5),
            lambda lib: lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                lib.ones(1, 2, 3, 4), z(lib, 1, 2, 5, 4), z(lib, 1, 2, 5, 4)),
            lambda lib: lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                lib.ones(1, 2, 3, 4, dtype=lib.int64), z(lib, 2, 5, 4), z(lib, 2, 5, 4)),
            lambda lib: lib.ops.aten.native_group_norm(
                z(lib, 2, 4, 2, 2).transpose(2, 3), None, z(lib, 4), 2, 4, 4, 1, 1e-3),
            lambda lib: lib.ops.aten.native_group_norm(
                z(lib, 2, 4, 2, 2), None, None, 2, 4, 4, 1, 1e-3),
            lambda lib: lib.ops.aten.native_group_norm(
                z(lib, 2, 4, 2, 2), None, None, 2, 4, 3, 1, 1e-3),
            lambda lib: lib.ops.aten.native_group_norm(
                z(lib, 2, 4, 2, 2), None, None, 2, 4, 4, 3, 1e-3),
            lambda lib: lib.nn.functional.group_norm(z(lib, 2, 4, 2, 2), 2)]:
        assert outcome(lambda: call(ptl)) == outcome(lambda: call(torch))


# name -> the real function NumPy or math has of it; the complex fallback (complex.c) hands a
# pointwise op whose only complex tensor is its out= to the real kernel
REAL_INTO_COMPLEX = {"erf": scipy.special.erf, "erfc": scipy.special.erfc,
                     "lgamma": scipy.special.gammaln, "special_i0e": scipy.special.i0e,
                     "special_airy_ai": lambda x: scipy.special.airy(x)[0],
                     "frac": None, "floor": None, "abs": None}


@pytest.mark.parametrize("name", sorted(REAL_INTO_COMPLEX))
def test_a_pointwise_op_of_real_inputs_casts_into_a_complex_out(name):
    """PyTorch computes erf.out(float32, out=complex64) in float32 and casts; ops that keep
    their input's dtype (floor, frac, abs) demand an out= of that dtype, complex too."""
    a = np.array([[-3.0, -0.5, 0.0], [0.25, 2.0, 7.5]])
    x = ptl.tensor(a, dtype=ptl.float32).t()
    op = getattr(ptl.ops.aten, name).out
    for out_dtype in (ptl.complex64, ptl.complex128):
        out = ptl.empty(0, dtype=out_dtype)
        if REAL_INTO_COMPLEX[name] is None:
            with pytest.raises(RuntimeError, match="Found dtype Complex.* but expected Float"):
                op(x, out=out)
            continue
        assert op(x, out=out) is out
        want = REAL_INTO_COMPLEX[name](a.T.astype(np.float32).astype(np.float64))
        assert_close(out, want.astype(np.complex128), dtype=out_dtype, rtol=1e-5)


# binary ops that refuse complex inputs but, of real ones, cast their result into a complex
# out= as PyTorch's TensorIterator does (complex.c: real_into_complex_out; tools/fuzz --torch
# seed 11, call 299: fmax.out)
REAL_PAIR_INTO_COMPLEX = {
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "atan2": np.arctan2, "hypot": np.hypot, "igamma": scipy.special.gammainc,
    "igammac": scipy.special.gammaincc,
    "clamp_min": lambda a, b: np.maximum(a, b), "clamp_max": lambda a, b: np.minimum(a, b),
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


@pytest.mark.parametrize("name", sorted(REAL_PAIR_INTO_COMPLEX))
def test_a_binary_op_of_real_inputs_casts_into_a_complex_out(name):
    a = np.array([[0.5, 2.0, np.nan], [3.0, 0.25, 1.5]])
    b = np.array([1.0, 2.0, 0.75])
    x, y = ptl.tensor(a, dtype=ptl.float32).t().contiguous().t(), ptl.tensor(b)
    for out_dtype in (ptl.complex64, ptl.complex128):
        out = ptl.empty(0, dtype=out_dtype)
        got = getattr(ptl, name)(x, y, out=out)
        assert got is out and out.dtype == out_dtype
        # computed in float64 (float32 with float64 promotes), then cast
        want = REAL_PAIR_INTO_COMPLEX[name](a.astype(np.float32).astype(np.float64), b)
        assert_close(out, want.astype(np.complex128), dtype=out_dtype, rtol=1e-6)
        if torch is not None:
            tout = torch.empty(0, dtype=getattr(torch, str(out_dtype).split(".")[1]))
            getattr(torch, name)(torch.tensor(a, dtype=torch.float32), torch.tensor(b), out=tout)
            assert_close(out, tout.numpy().astype(np.complex128), dtype=out_dtype, rtol=1e-6)


def test_binary_ops_still_refuse_complex_inputs():
    z = ptl.tensor([1 + 1j, 2.0])
    r = ptl.tensor([1.0, 2.0])
    out = ptl.empty(2, dtype=ptl.complex64)
    for call, kind, msg in [
            (lambda: ptl.fmax(z, r, out=out), RuntimeError, "fmax not implemented for complex"),
            (lambda: ptl.maximum(r, z, out=out), NotImplementedError,
             "\"maximum_cpu\" not implemented for 'ComplexFloat'"),
            (lambda: ptl.atan2(z, z, out=out), NotImplementedError,
             "\"atan2_cpu\" not implemented for 'ComplexFloat'"),
            (lambda: ptl.gcd(r, r, out=out), NotImplementedError,
             "\"gcd_cpu\" not implemented for 'Float'"),
            (lambda: ptl.clamp(z, r, None, out=out), NotImplementedError,
             "clamp is not supported for complex types")]:
        with pytest.raises(kind, match=re.escape(msg)):
            call()


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_angle_of_half_types(dtype, layout):
    """angle of float16 and bfloat16 (torch computes them): pi rounded to the dtype for the
    negatives, 0 otherwise, nan kept (tools/fuzz seed 12, call 412)"""
    gen = np.random.default_rng(0)
    pi = ptl.tensor(np.pi, dtype=dtype).item()
    for shape in [(), (0, 3), (5, 7, 3)]:
        a = gen.uniform(-2, 2, shape)
        a.reshape(-1)[:2] = [np.nan, 0.0][:a.size]
        if layout == "transposed" and a.ndim:
            x = ptl.tensor(a.T.copy()).to(dtype).permute(*reversed(range(a.ndim)))
        elif layout == "sliced" and a.ndim:
            x = ptl.tensor(np.repeat(a, 2, axis=-1)).to(dtype)[..., ::2]
        else:
            x = ptl.tensor(a).to(dtype)
        got = ptl.angle(x)
        assert got.dtype == dtype and tuple(got.shape) == shape
        want = np.where(np.isnan(a), a, np.where(a < 0, pi, 0.0))
        np.testing.assert_array_equal(np.asarray(got.float().tolist()).reshape(shape), want)
