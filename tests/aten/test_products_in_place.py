"""The matrix products written into their destination (Note [Products written in place] in
src/aten/native/linalg.c): addmm_, baddbmm_, addmv_ and addbmm_, and the out= overloads of
addmm, baddbmm, addmv, addbmm and bmm.  Against NumPy in float64 (exact for the integer
dtypes) on random shapes with size 0 (k = 0 scales self by beta), every layout of self, out
and the operands, beta = 0 over NaN, a destination that is also an operand, autograd through
a non-leaf (gradcheck in float64), and every refusal with PyTorch's exception and text."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_raises_like_torch, make, rng, to_numpy, torch

LAYOUTS = ["contiguous", "transposed", "sliced"]
FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]
INTS = [ptl.int64, ptl.int32, ptl.int16, ptl.int8, ptl.uint8]
COMPLEX = [ptl.complex64, ptl.complex128]


def shapes_of(op, m, k, n, b=2):
    """self's (the product's) shape and the operands' for op."""
    return {"addmm": [(m, n), (m, k), (k, n)], "baddbmm": [(b, m, n), (b, m, k), (b, k, n)],
            "addmv": [(m,), (m, k), (k,)], "addbmm": [(m, n), (b, m, k), (b, k, n)]}[op]


def product(op, a, b):
    return (a @ b).sum(0) if op == "addbmm" else a @ b


def operands(op, m, k, n, dtype, layouts, seed):
    ts, arrays = [], []
    for i, (shape, layout) in enumerate(zip(shapes_of(op, m, k, n), layouts)):
        if dtype.is_complex:
            part = ptl.float32 if dtype == ptl.complex64 else ptl.float64
            real, _ = make(shape, part, layout, seed=seed + i, low=-2, high=2)
            imag, _ = make(shape, part, layout, seed=seed + 10 + i, low=-2, high=2)
            t = ptl.complex(real, imag)
            t = t if layout == "contiguous" else _relayout(t, layout)
        else:
            t = make(shape, dtype, layout, seed=seed + i, low=-3, high=3)[0]
        ts.append(t)
        x = to_numpy(t)
        arrays.append(x if x.dtype.kind in "fc" else x.astype(np.int64))
    return ts, arrays


def _relayout(t, layout):
    """A copy of t with the layout make() gives (transposed or sliced)."""
    if layout == "transposed":
        return t.permute(*reversed(range(t.dim()))).contiguous().permute(
            *reversed(range(t.dim())))
    big = ptl.zeros([2 * s for s in t.shape], dtype=t.dtype)
    view = big[tuple(slice(None, None, 2) for _ in t.shape)]
    view.copy_(t)
    return view


def scalars(dtype):
    if dtype.is_complex:
        return 0.5 - 1j, 2 + 0.5j
    if dtype.is_floating_point:
        return 0.5, -2.0
    return 3, -2


def tolerance(dtype, k):
    if dtype in (ptl.float16, ptl.bfloat16):
        return {"rtol": 2e-2, "atol": 0.1 * max(k, 1)}
    if dtype in (ptl.float32, ptl.complex64):
        return {"rtol": 1e-5, "atol": 1e-5 * max(k, 1)}
    return {}


SIZES = [(3, 4, 5), (0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (33, 70, 19)]


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addmv", "addbmm"])
@pytest.mark.parametrize("dtype", FLOATS + INTS + COMPLEX)
def test_in_place_matches_numpy(op, dtype):
    gen = rng(len(op) * 100 + len(str(dtype)))
    for m, k, n in SIZES:
        if op == "addmv" and n != SIZES[0][2]:
            continue
        layouts = [LAYOUTS[i] for i in gen.integers(0, 3, size=3)]
        (s, a, b), (sa, aa, ba) = operands(op, m, k, n, dtype, layouts, int(gen.integers(99)))
        beta, alpha = scalars(dtype)
        ptr, strides, version = s.data_ptr(), s.stride(), s._version
        got = getattr(s, op + "_")(a, b, beta=beta, alpha=alpha)
        assert got is s and s.data_ptr() == ptr and s.stride() == strides
        assert s._version > version
        ref = beta * sa + alpha * product(op, aa, ba)
        if not (dtype.is_floating_point or dtype.is_complex):   # two's-complement wrap
            ref = ref.astype(np.int64).astype(to_numpy(ptl.zeros(1, dtype=dtype)).dtype)
        assert_close(s, ref, dtype=dtype, **tolerance(dtype, k))


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addmv", "addbmm", "bmm"])
@pytest.mark.parametrize("out_layout", ["resized", "contiguous", "transposed", "sliced"])
def test_out_writes_into_out(op, out_layout):
    m, k, n = 4, 5, 3
    self_shape = {"addmm": (n,), "baddbmm": (1, n), "addmv": (1,), "addbmm": (m, 1)}.get(op)
    shapes = shapes_of("baddbmm" if op == "bmm" else op, m, k, n)
    a, aa = make(shapes[1], ptl.float64, "transposed", seed=1)
    b, ba = make(shapes[2], ptl.float64, "sliced", seed=2)
    args, kw, ref = (a, b), {}, product(op, aa, ba)
    if self_shape is not None:
        s, sa = make(self_shape, ptl.float64, seed=3)
        args, kw = (s, a, b), {"beta": 0.5, "alpha": 2.0}
        ref = 0.5 * sa + 2.0 * ref
    if out_layout == "resized":
        out = ptl.zeros(7, dtype=ptl.float64)
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            got = getattr(ptl, op)(*args, out=out, **kw)
    else:
        out = make(ref.shape, ptl.float64, out_layout, seed=4)[0]
        ptr, strides = out.data_ptr(), out.stride()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = getattr(ptl, op)(*args, out=out, **kw)
        assert out.data_ptr() == ptr and out.stride() == strides
    assert got is out
    assert_close(out, ref, dtype=ptl.float64)


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addmv", "addbmm"])
def test_beta_zero_ignores_nan_in_self(op):
    shapes = shapes_of(op, 3, 4, 2)
    (s, a, b), (_, aa, ba) = operands(op, 3, 4, 2, ptl.float64, LAYOUTS[:1] * 3, 5)
    s.fill_(float("nan"))
    getattr(s, op + "_")(a, b, beta=0, alpha=2)
    assert_close(s, 2 * product(op, aa, ba))
    out = ptl.full(shapes[0], float("inf"), dtype=ptl.float64)
    getattr(ptl, op)(ptl.full(shapes[0], float("nan"), dtype=ptl.float64), a, b, beta=0,
                     out=out)
    assert_close(out, product(op, aa, ba))


def test_destination_that_is_an_operand():
    """The product of the operands as they were before the call (PyTorch's BLAS returns an
    accident of its blocking there: Note [Products written in place])."""
    x, xa = make((6, 6), ptl.float64, seed=1)
    y, ya = make((6, 6), ptl.float64, seed=2)
    x.addmm_(x, y)
    x1 = xa + xa @ ya
    assert_close(x, x1)
    y.t().addmm_(x.t(), y, beta=2)   # self a transposed view of mat2's memory
    y1 = (2 * ya.T + x1.T @ ya).T
    assert_close(y, y1)
    ptl.mm(y, x, out=x)
    assert_close(x, y1 @ x1)
    c, ca = make((3, 4, 4), ptl.float64, seed=3)
    d, da = make((3, 4, 4), ptl.float64, seed=4)
    ptl.baddbmm(c, c, d, out=d)
    assert_close(d, ca + ca @ da)
    v, va = make((5,), ptl.float64, seed=5)
    m, ma = make((5, 5), ptl.float64, seed=6)
    v.addmv_(m, v)
    assert_close(v, va + ma @ va)
    s, sa = make((4, 3), ptl.float64, seed=7)
    out = s[:, :2]   # out= overlapping self, self broadcast over out's columns
    a, aa = make((4, 2), ptl.float64, seed=8)
    ptl.addmm(s[:, :1], a, ptl.eye(2, dtype=ptl.float64), out=out)
    assert_close(out, sa[:, :1] + aa)


def test_sparse_mat1_into_a_dense_destination():
    """addmm_ and addmm.out with a sparse COO mat1 (its SparseCPU kernel) write into the
    dense self or out."""
    s, sa = make((3, 2), ptl.float64, "transposed", seed=1)
    m1 = ptl.sparse_coo_tensor(ptl.tensor([[0, 2, 1], [1, 0, 2]]),
                               ptl.tensor([1.5, -2.0, 3.0], dtype=ptl.float64), (3, 4))
    d, da = make((4, 2), ptl.float64, seed=2)
    ref = 0.5 * sa + 2 * (m1.to_dense().numpy() @ da)
    out = ptl.empty(0, dtype=ptl.float64)
    assert ptl.addmm(s, m1, d, beta=0.5, alpha=2, out=out) is out
    assert_close(out, ref)
    version = s._version
    assert s.addmm_(m1, d, beta=0.5, alpha=2) is s and s._version > version
    assert_close(s, ref)


def test_integer_scalars_truncate_as_torch():
    """Integer products truncate beta and alpha (PyTorch's Scalar::to<int64_t>)."""
    s = ptl.ones(2, 3, dtype=ptl.int64)
    a, aa = make((2, 4), ptl.int64, seed=1)
    b, ba = make((2, 4, 3), ptl.int64, seed=2)
    s.addbmm_(a.expand(2, 2, 4), b, beta=2.5, alpha=1)
    assert_close(s, 2 + (np.stack([aa, aa]) @ ba).sum(0), dtype=ptl.int64)


def _grad_inputs(op, seed):
    ts, _ = operands(op, 3, 4, 2, ptl.float64, ["contiguous", "transposed", "sliced"], seed)
    return [t.detach().requires_grad_() for t in ts]


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addmv", "addbmm"])
def test_gradcheck_through_a_non_leaf(op):
    inputs = _grad_inputs(op, 11)

    def fn(s, a, b):
        return getattr(s * 1, op + "_")(a, b, beta=0.5, alpha=-2)
    assert gradcheck(fn, inputs)
    y = getattr(inputs[0] * 1, op + "_")(*inputs[1:])
    assert type(y.grad_fn).__name__ == {"addmv": "AddmvBackward0",
                                        "baddbmm": "BaddbmmBackward0"}.get(op, "AddmmBackward0")


def test_saved_operand_overwritten_raises_at_backward():
    a, b = _grad_inputs("addmm", 12)[1:]
    x = a * 1
    x[:, :2].addmm_(x, b[:, :1].expand(4, 2).contiguous())   # mat1 is self's base
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


E = RuntimeError
BAD_INPLACE = "Bad in-place call: input tensor "
OUT_DTYPE = "Expected out tensor to have dtype float, but got double instead"
OVERLAP = "unsupported operation: more than one element of the written-to tensor"
ERRORS = [
    (lambda t: t.randn(3).addmm_(t.randn(2, 4), t.randn(4, 3)), E,
     BAD_INPLACE + "size [3] and output tensor size [2, 3] should match"),
    (lambda t: t.randn(1, 3).addmm_(t.randn(2, 4), t.randn(4, 3)), E,
     BAD_INPLACE + "size [1, 3] and output tensor size [2, 3] should match"),
    (lambda t: t.randn(2, 3, dtype=t.float64).addmm_(t.randn(2, 4), t.randn(4, 3)), E,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda t: t.randn(2, 3).addmm_(t.randn(2, 4), t.randn(5, 3)), E,
     "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)"),
    (lambda t: t.zeros(1).expand(2, 3).addmm_(t.randn(2, 4), t.randn(4, 3)), E, OVERLAP),
    (lambda t: t.zeros(2, 3, dtype=t.bool).addmm_(t.ones(2, 4, dtype=t.bool),
                                                   t.ones(4, 3, dtype=t.bool)),
     NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda t: t.zeros(2, 3).addmm_(t.randn(2, 4), t.randn(4, 3), alpha=1j), E,
     "value cannot be converted to type float without overflow"),
    (lambda t: t.randn(3).baddbmm_(t.randn(2, 2, 4), t.randn(2, 4, 3)), E,
     BAD_INPLACE + "size [3] and output tensor size [2, 2, 3] should match"),
    (lambda t: t.randn(2, 2, 3).baddbmm_(t.randn(2, 2, 4), t.randn(2, 4, 3, dtype=t.float64)),
     E, BAD_INPLACE + "dtype float and output tensor dtype double should match"),
    (lambda t: t.randn(2, 2, 3).baddbmm_(t.randn(2, 2, 4), t.randn(3, 4, 3)), E,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    (lambda t: t.randn(1).addmv_(t.randn(2, 4), t.randn(4)), E,
     BAD_INPLACE + "size [1] and output tensor size [2] should match"),
    (lambda t: t.randn(3).addmv_(t.randn(2, 4), t.randn(4)), E,
     "size mismatch, got input (3), mat (2x4), vec (4)"),
    (lambda t: t.randn(2, 3).addbmm_(t.randn(2, 2, 4), t.randn(2, 5, 3)), E,
     "Incompatible matrix sizes for bmm (2x4 and 5x3)"),
    (lambda t: t.randn(2, 3).addbmm_(t.randn(2, 2, 4), t.randn(3, 4, 3)), E,
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda t: t.randn(2, 3).addbmm_(t.randn(2, 2, 4), t.randn(2, 4, 3, dtype=t.float64)), E,
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda t: t.addmm(t.zeros(3), t.randn(2, 4), t.randn(4, 3),
                       out=t.zeros(2, 3, dtype=t.float64)), E, OUT_DTYPE),
    (lambda t: t.addmm(t.zeros(3), t.randn(2, 4), t.randn(4, 3), out=t.zeros(1).expand(2, 3)),
     E, OVERLAP),
    (lambda t: t.baddbmm(t.zeros(3), t.randn(2, 2, 4), t.randn(2, 4, 3),
                         out=t.zeros(2, 2, 3, dtype=t.float64)), E, OUT_DTYPE),
    (lambda t: t.addmv(t.zeros(1), t.randn(2, 4), t.randn(4), out=t.zeros(2, dtype=t.float64)),
     E, OUT_DTYPE),
    (lambda t: t.bmm(t.randn(2, 2, 4), t.randn(2, 4, 3), out=t.zeros(2, 2, 3, dtype=t.float64)),
     E, OUT_DTYPE),
    (lambda t: t.bmm(t.randn(2, 2, 4), t.randn(2, 4, 3, dtype=t.float64), out=t.zeros(1)), E,
     "Expected out tensor to have dtype double, but got float instead"),
    (lambda t: t.bmm(t.ones(2, 2, 4, dtype=t.bool), t.ones(2, 4, 3, dtype=t.bool),
                     out=t.zeros(2, 2, 3, dtype=t.bool)),
     NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    (lambda t: t.zeros(2, 3, requires_grad=True).addmm_(t.randn(2, 4), t.randn(4, 3)), E,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    (lambda t: t.addmm(t.zeros(3, requires_grad=True), t.randn(2, 4), t.randn(4, 3),
                       out=t.zeros(2, 3)), E,
     "addmm(): functions with out=... arguments don't support automatic differentiation, "
     "but one of the arguments requires grad."),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_match_torch(fn, exc, msg):
    assert_raises_like_torch(fn, exc, msg)


def test_torch_agrees_on_values():
    if torch is None:
        pytest.skip("PyTorch not installed: the NumPy references above still ran")
    s, sa = make((3, 4), ptl.float32, "transposed", seed=1)
    a, aa = make((3, 5), ptl.float32, seed=2)
    b, ba = make((5, 4), ptl.float32, "sliced", seed=3)
    ts = torch.tensor(sa, dtype=torch.float32)
    ts.addmm_(torch.tensor(aa, dtype=torch.float32), torch.tensor(ba, dtype=torch.float32),
              beta=0.5, alpha=2)
    s.addmm_(a, b, beta=0.5, alpha=2)
    np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-6, atol=1e-5)
