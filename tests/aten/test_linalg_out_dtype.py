"""out_dtype of mm, bmm, addmm and baddbmm (PyTorch 2.13's .dtype overloads; Note [Products
with out_dtype] in src/aten/native/linalg.c): the input dtype, or float32 for float16 /
bfloat16 inputs, whose products then accumulate in float32 and are not rounded back.
Against NumPy in float64 (the half values are exact there), gradcheck, and the refusals with
PyTorch's texts (its meta functions'; its CPU build has no kernel for these overloads)."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import make, torch, torch_ref

HALVES = [ptl.float16, ptl.bfloat16]
MM_RULE = "^out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs$"
BMM_RULE = ("^out_dtype only supported for torch.float32 output with float16/bfloat16 inputs "
            "or same as input dtypes$")


def f64(t):
    return t.double().numpy()


# (op, operand shapes: self first for addmm / baddbmm)
CASES = [("mm", [(3, 5), (5, 4)]), ("mm", [(0, 5), (5, 2)]), ("mm", [(2, 0), (0, 3)]),
         ("mm", [(40, 300), (300, 7)]), ("bmm", [(2, 3, 5), (2, 5, 4)]),
         ("bmm", [(0, 3, 5), (0, 5, 4)]), ("addmm", [(4,), (3, 5), (5, 4)]),
         ("addmm", [(3, 4), (3, 5), (5, 4)]), ("baddbmm", [(1, 4), (2, 3, 5), (2, 5, 4)]),
         ("baddbmm", [(2, 3, 4), (2, 3, 5), (2, 5, 4)])]


def _operands(shapes, dtype, layout):
    return [make(s, dtype, layout, seed=i, low=-2, high=2)[0] for i, s in enumerate(shapes)]


def _reference(op, arrays, beta=1.0, alpha=1.0):
    if op in ("mm", "bmm"):
        return arrays[0] @ arrays[1]
    return beta * arrays[0] + alpha * (arrays[1] @ arrays[2])


@pytest.mark.parametrize("op,shapes", CASES)
@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_halves_accumulate_in_float32(op, shapes, dtype, layout):
    ts = _operands(shapes, dtype, layout)
    kw = {"beta": 0.5, "alpha": 2.0} if op in ("addmm", "baddbmm") else {}
    got = getattr(ptl, op)(*ts, out_dtype=ptl.float32, **kw)
    ref = _reference(op, [f64(t) for t in ts], **kw)
    assert got.dtype == ptl.float32 and tuple(got.shape) == ref.shape
    k = shapes[-1][-2]
    np.testing.assert_allclose(f64(got), ref, rtol=0, atol=4e-7 * (k + 2) * 4 * 4)
    # exactly the float32 product of the (exactly converted) operands
    same = getattr(ptl, op)(*[t.float() for t in ts], **kw)
    assert ptl.equal(got, same)


def test_float32_result_is_not_rounded_to_half():
    a = ptl.full((1, 3), 1.0, dtype=ptl.float16)
    b = ptl.tensor([[2048.0], [1.0], [0.0]], dtype=ptl.float16)
    assert ptl.mm(a, b).item() == 2048.0            # 2049 rounds to even in float16
    assert ptl.mm(a, b, out_dtype=ptl.float32).item() == 2049.0
    assert ptl.mm(a, b, ptl.float32).item() == 2049.0   # out_dtype is positional too


@pytest.mark.parametrize("op,shapes", CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.float16])
def test_same_dtype_is_the_plain_product(op, shapes, dtype):
    ts = _operands(shapes, dtype, "contiguous")
    got = getattr(ptl, op)(*ts, out_dtype=dtype)
    assert got.dtype == dtype and ptl.equal(got, getattr(ptl, op)(*ts))


def test_self_may_have_either_dtype():
    m1, m2 = make((3, 5), ptl.float16)[0], make((5, 4), ptl.float16)[0]
    for s in (make((3, 4), ptl.float16)[0], make((3, 4), ptl.float32)[0]):
        got = ptl.addmm(s, m1, m2, out_dtype=ptl.float32, beta=2)
        assert ptl.equal(got, ptl.addmm(s.float(), m1.float(), m2.float(), beta=2))
    b1, b2 = make((2, 3, 5), ptl.bfloat16)[0], make((2, 5, 4), ptl.bfloat16)[0]
    got = ptl.baddbmm(make((2, 3, 4), ptl.float32)[0], b1, b2, out_dtype=ptl.float32)
    assert got.dtype == ptl.float32


@pytest.mark.parametrize("op,shapes", CASES[:1] + CASES[4:5] + CASES[6:7] + CASES[8:9])
def test_gradcheck(op, shapes):
    ts = [t.requires_grad_() for t in _operands(shapes, ptl.float64, "contiguous")]
    assert gradcheck(lambda *a: getattr(ptl, op)(*a, out_dtype=ptl.float64), ts)


def test_half_inputs_get_half_gradients():
    a = make((3, 5), ptl.float16)[0].requires_grad_()
    b = make((5, 2), ptl.float16)[0].requires_grad_()
    ptl.mm(a, b, out_dtype=ptl.float32).sum().backward()
    assert a.grad.dtype == ptl.float16 and b.grad.dtype == ptl.float16
    np.testing.assert_allclose(f64(a.grad), np.ones((3, 2)) @ f64(b.detach()).T, rtol=1e-3)


ERRORS = [
    (lambda lib: lib.mm(lib.ones(2, 3), lib.ones(3, 4), out_dtype=lib.float16), MM_RULE),
    (lambda lib: lib.mm(lib.ones(2, 3, dtype=lib.float64), lib.ones(3, 4, dtype=lib.float64),
                        out_dtype=lib.float32), MM_RULE),
    (lambda lib: lib.mm(lib.ones(2, 3, dtype=lib.float16), lib.ones(3, 4, dtype=lib.float16),
                        out_dtype=lib.float64), MM_RULE),
    (lambda lib: lib.mm(lib.ones(2, 3, dtype=lib.int32), lib.ones(3, 4, dtype=lib.int32),
                        out_dtype=lib.int64), MM_RULE),
    (lambda lib: lib.addmm(lib.ones(2, 4), lib.ones(2, 3), lib.ones(3, 4),
                           out_dtype=lib.float16), MM_RULE),
    (lambda lib: lib.bmm(lib.ones(1, 2, 3), lib.ones(1, 3, 4), out_dtype=lib.int32), BMM_RULE),
    (lambda lib: lib.bmm(lib.ones(1, 2, 3, dtype=lib.float16),
                         lib.ones(1, 3, 4, dtype=lib.float16), out_dtype=lib.float64), BMM_RULE),
]

OUR_ERRORS = [
    (lambda: ptl.baddbmm(ptl.ones(1, 2, 4), ptl.ones(1, 2, 3), ptl.ones(1, 3, 4),
                         out_dtype=ptl.float16), BMM_RULE),
    (lambda: ptl.addmm(ptl.ones(2, 4, dtype=ptl.float64), ptl.ones(2, 3, dtype=ptl.float16),
                       ptl.ones(3, 4, dtype=ptl.float16), out_dtype=ptl.float32),
     "^self dtype must match either out_dtype or mat1 dtype$"),
    (lambda: ptl.baddbmm(ptl.ones(1, 2, 4, dtype=ptl.int64), ptl.ones(1, 2, 3, dtype=ptl.half),
                         ptl.ones(1, 3, 4, dtype=ptl.half), out_dtype=ptl.float32),
     "^self dtype must match either out_dtype or batch1 dtype$"),
    # operands of two dtypes: the product's own error
    (lambda: ptl.mm(ptl.ones(2, 3, dtype=ptl.half), ptl.ones(3, 4), out_dtype=ptl.float32),
     "^expected m1 and m2 to have the same dtype, but got: c10::Half != float$"),
    (lambda: ptl.bmm(ptl.ones(1, 2, 3, dtype=ptl.half), ptl.ones(1, 3, 4),
                     out_dtype=ptl.float32), "^expected scalar type Half but found Float$"),
    (lambda: ptl.mm(ptl.ones(2, 3, dtype=ptl.half), ptl.ones(4, 4, dtype=ptl.half),
                    out_dtype=ptl.float32),
     r"^mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x4\)$"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    with pytest.raises(RuntimeError, match=ERRORS[i][1]):
        ERRORS[i][0](ptl)


@pytest.mark.parametrize("i", range(len(OUR_ERRORS)))
def test_more_errors(i):
    with pytest.raises(RuntimeError, match=OUR_ERRORS[i][1]):
        OUR_ERRORS[i][0]()


def test_no_method_form():
    """PyTorch has the overloads as functions only."""
    with pytest.raises(TypeError):
        ptl.ones(2, 3).mm(ptl.ones(3, 2), out_dtype=ptl.float32)


class _OnMeta:
    """torch's namespace with every tensor made on the meta device: PyTorch's checks of these
    overloads run there (its CPU build has no kernel for them)."""

    def __getattr__(self, name):
        if name == "ones":
            return lambda *s, **kw: torch.ones(*s, device="meta", **kw)
        return getattr(torch, name)


@torch_ref
@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    with pytest.raises(RuntimeError, match=ERRORS[i][1]):
        ERRORS[i][0](_OnMeta())


@torch_ref
def test_torch_accepts_the_same_dtypes():
    meta = _OnMeta()
    for din, dout in [(torch.float16, torch.float32), (torch.bfloat16, torch.float32),
                      (torch.float32, torch.float32), (torch.int32, torch.int32)]:
        r = meta.mm(meta.ones(2, 3, dtype=din), meta.ones(3, 4, dtype=din), out_dtype=dout)
        assert r.dtype == dout
        r = meta.bmm(meta.ones(1, 2, 3, dtype=din), meta.ones(1, 3, 4, dtype=din),
                     out_dtype=dout)
        assert r.dtype == dout
    with pytest.raises(NotImplementedError, match="Could not run 'aten::mm.dtype' with "
                                                  "arguments from the 'CPU' backend"):
        torch.mm(torch.ones(2, 3), torch.ones(3, 4), out_dtype=torch.float32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out_dtype'"):
        torch.ones(2, 3).mm(torch.ones(3, 2), out_dtype=torch.float32)
