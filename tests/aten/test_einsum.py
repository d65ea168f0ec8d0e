"""einsum, tensordot, cdist, pytorchlite.linalg (vector_norm, matrix_norm, norm, vecdot,
matmul) and renorm: values against NumPy in float64, errors against PyTorch's texts,
gradients by gradcheck/gradgradcheck and, on ties, against torch itself."""
import math
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from golden import golden
from helpers import FLOAT_DTYPES, LAYOUTS, assert_close, make, torch, torch_ref


# (equation, operand shapes)
EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("iji->j", [(3, 4, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij", [(3, 4), (1, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 2)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("Ab,bA", [(3, 4), (4, 3)]),
    ("aB,Bc->ca", [(3, 4), (4, 2)]),
    ("i j , j k -> i k", [(3, 4), (4, 2)]),
    ("...", [(2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i...->...", [(3, 2, 4)]),
    ("", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    ("bij,bjk->bik", [(0, 3, 4), (0, 4, 5)]),
    ("ijkl,jl->ik", [(2, 3, 4, 5), (3, 5)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ba,ca,da->bcd", [(2, 3), (4, 3), (2, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_einsum_matches_numpy(eq, shapes, layout):
    ops = [make(s, ptl.float64, layout, seed=i) for i, s in enumerate(shapes)]
    got = ptl.einsum(eq, *[t for t, _ in ops])
    expected = np.einsum(eq, *[a for _, a in ops])
    assert_close(got, expected, dtype=ptl.float64)
    assert_close(ptl.einsum(eq, [t for t, _ in ops]), expected)


def test_einsum_ellipsis_missing_from_output_is_summed():
    # numpy refuses '...->'; torch sums the ellipsis dims
    x, a = make((2, 3, 4), ptl.float64, "transposed")
    assert_close(ptl.einsum("...->", x), a.sum())
    assert_close(ptl.einsum("...ij->j", x), a.sum((0, 1)))
    if torch is not None:
        assert_close(ptl.einsum("...ij->j", x),
                     torch.einsum("...ij->j", torch.from_numpy(a.copy())).numpy())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [ptl.int64, ptl.int32])
def test_einsum_dtypes(dtype):
    (a, na), (b, nb) = make((3, 4), dtype, seed=1), make((2, 4, 5), dtype, seed=2)
    got = ptl.einsum("ij,bjk->bik", a, b)
    assert_close(got, np.einsum("ij,bjk->bik", na.astype(np.float64), nb.astype(np.float64)),
                 dtype=dtype)


def test_einsum_bool_and_mixed_dtypes_rejected():
    b = ptl.ones(2, 2, dtype=ptl.bool)
    with pytest.raises(NotImplementedError, match=re.escape("\"bmm\" not implemented for 'Bool'")):
        ptl.einsum("ij,jk", b, b)


def _raises(fn, exc, msg):
    with pytest.raises(exc, match="^" + re.escape(msg) + "$"):
        fn()


a23, b43 = ptl.randn(2, 3), ptl.randn(4, 3)
EINSUM_ERRORS = [
    (("ij,ij->ij", a23, b43),
     "einsum(): subscript i has size 4 for operand 1 which does not broadcast with previously seen size 2"),
    (("ij", a23, b43), "einsum(): more operands were provided than specified in the equation"),
    (("ij,jk,kl", a23, b43), "einsum(): fewer operands were provided than specified in the equation"),
    (("ij", ptl.randn(2, 3, 3)),
     "einsum(): the number of subscripts in the equation (2) does not match the number of dimensions (3) for operand 0 and no ellipsis was given"),
    (("i1", a23), "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    (("ij->-k", a23), "einsum(): invalid subscript given at index 4 in the equation string, subscripts must be in [a-zA-Z]"),
    (("ij-k", a23), "einsum(): invalid subscript given at index 2 in the equation string, subscripts must be in [a-zA-Z]"),
    (("ij->ij->", a23), "einsum(): invalid subscript given at index 6 in the equation string, subscripts must be in [a-zA-Z]"),
    (("ij->ii", a23), "einsum(): output subscript i appears more than once in the output"),
    (("ij->k", a23), "einsum(): output subscript k does not appear in the equation for any input operand"),
    (("ii->i", a23), "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    (("ijk...l", a23),
     "einsum(): the number of subscripts in the equation (4) is more than the number of dimensions (2) for operand 0"),
    (("i..j", a23), "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    (("...i...", a23), "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    (("ij->..", a23), "einsum(): found '.' for output that is not part of any ellipsis (...)"),
    (("ij->...i...", a23), "einsum(): found '.' for output but an ellipsis (...) was already found"),
    (("...ij,...jk", ptl.randn(2, 7, 3, 4), ptl.randn(5, 4, 3)),
     "einsum(): dimension 0 covered by ellipsis in operand 1has size 5 which does not broadcast with previously seen ellipsis with size 7 for the respective dimension"),
]


@pytest.mark.parametrize("args,msg", EINSUM_ERRORS, ids=[m[:40] for _, m in EINSUM_ERRORS])
def test_einsum_errors_match_torch(args, msg):
    """msg is torch's message, checked against torch itself when it is installed."""
    _raises(lambda: ptl.einsum(*args), RuntimeError, msg)
    if torch is not None:
        targs = [args[0]] + [torch.from_numpy(t.numpy()) for t in args[1:]]
        _raises(lambda: torch.einsum(*targs), RuntimeError, msg)


def test_einsum_no_operands():
    msg = ("einsum(): must specify the equation string and at least one operand, or at least "
           "one operand and its subscripts list")
    _raises(lambda: ptl.einsum("ij", []), ValueError, msg)


# the sublist form: (operand shapes, their subscript lists, the output's or None)
SUBLISTS = [
    ([(3, 4), (4, 5)], [[0, 1], [1, 2]], [0, 2]),
    ([(3, 4), (4, 5)], [[0, 1], [1, 2]], None),
    ([(2, 3, 4), (2, 4, 5)], [[26, 27, 28], [26, 28, 29]], [26, 27, 29]),
    ([(4, 4)], [[8, 8]], [8]),
    ([(4, 4)], [[8, 8]], None),
    ([(3,), (4,)], [[0], [1]], [1, 0]),
    ([(2, 3, 4), (4, 5)], [[Ellipsis, 0, 1], [1, 2]], [Ellipsis, 0, 2]),
    ([(2, 1, 3, 4), (5, 4, 2)], [[Ellipsis, 0, 1], [Ellipsis, 1, 2]], [Ellipsis, 0, 2]),
    ([(3, 2, 4)], [[0, Ellipsis]], [Ellipsis]),
    ([(3, 4)], [[25, 51]], []),
    ([()], [[]], None),
    ([(), ()], [[], []], []),
    ([(0, 4), (4, 5)], [[0, 1], [1, 2]], [0, 2]),
    ([(3, 0), (0, 5)], [[0, 1], [1, 2]], [0, 2]),
    ([(2, 3), (3, 4), (4, 5)], [(0, 1), (1, 2), (2, 3)], (0, 3)),
]


def _sublist_args(operands, subs, out):
    args = [x for pair in zip(operands, subs) for x in pair]
    return args if out is None else args + [out]


@pytest.mark.parametrize("shapes,subs,out", SUBLISTS, ids=[str(s[1:]) for s in SUBLISTS])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_einsum_sublist_form_matches_numpy(shapes, subs, out, layout):
    ops = [make(s, ptl.float64, layout, seed=i) for i, s in enumerate(shapes)]
    got = ptl.einsum(*_sublist_args([t for t, _ in ops], subs, out))
    expected = np.einsum(*_sublist_args([a for _, a in ops], subs, out))
    assert_close(got, expected, dtype=ptl.float64)


def test_einsum_sublist_subscripts_take_ints_like_torch():
    # bool, NumPy and 0-dim tensor subscripts are ints to torch's comparisons and chr()
    x, a = make((2, 3), ptl.float64, "transposed")
    for sub in ([False, True], [np.int64(0), np.int64(1)], [ptl.tensor(0), ptl.tensor(1)]):
        assert_close(ptl.einsum(x, sub, [sub[1]]), a.sum(0))


@torch_ref
@pytest.mark.parametrize("args,exc,msg", [
    ((a23, [0, 52]), ValueError,
     "einsum(): subscript in subscript list is not within the valid range [0, 52)"),
    ((a23, [0, -1]), ValueError,
     "einsum(): subscript in subscript list is not within the valid range [0, 52)"),
    ((a23, [0, 1], [60]), ValueError,
     "einsum(): subscript in subscript list is not within the valid range [0, 52)"),
    ((a23, [0, "x"]), TypeError, "'>=' not supported between instances of 'str' and 'int'"),
    ((a23, [0, 1.5]), TypeError, "'float' object cannot be interpreted as an integer"),
    ((a23, [0, 1], 5), TypeError, "'int' object is not iterable"),
    ((a23,), ValueError,
     "einsum(): must specify the equation string and at least one operand, or at least one "
     "operand and its subscripts list"),
    ((a23, [0]), RuntimeError,
     "einsum(): the number of subscripts in the equation (1) does not match the number of "
     "dimensions (2) for operand 0 and no ellipsis was given"),
    ((a23, [1, 1]), RuntimeError,
     "einsum(): subscript B is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ((a23, [0, 1], a23, [0, 1], [0, 1], [0]), TypeError,
     "expected Tensor as element 2 in argument 1, but got list"),
], ids=lambda v: str(v)[:30] if isinstance(v, str) else None)
def test_einsum_sublist_errors_match_torch(args, exc, msg):
    _raises(lambda: ptl.einsum(*args), exc, msg)
    targs = [torch.from_numpy(a.numpy()) if isinstance(a, ptl.Tensor) else a for a in args]
    _raises(lambda: torch.einsum(*targs), exc, msg)


def test_einsum_sublist_gradcheck():
    ops = [make(s, ptl.float64, "transposed", seed=i)[0].requires_grad_()
           for i, s in enumerate([(3, 4), (4, 2)])]
    fn = lambda x, y: ptl.einsum(x, [0, 1], y, [1, 2], [2, 0])  # noqa: E731
    assert gradcheck(fn, ops)
    assert gradgradcheck(fn, ops)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 2)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("...ij,...jk", [(2, 3, 4), (4, 2)]), ("bn,anm,bm->ba", [(2, 3), (2, 3, 4), (2, 4)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 2)]), ("ij,ij", [(3, 4), (1, 4)]), ("ij->", [(2, 3)]),
])
def test_einsum_gradcheck(eq, shapes):
    ops = [make(s, ptl.float64, "transposed", seed=i)[0].requires_grad_() for i, s in enumerate(shapes)]
    fn = lambda *xs: ptl.einsum(eq, *xs)  # noqa: E731
    assert gradcheck(fn, ops)
    assert gradgradcheck(fn, ops)


# ---- tensordot ----

@pytest.mark.parametrize("sa,sb,dims", [
    ((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 5), 1), ((3, 4), (5, 6), 0),
    ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((2, 3), (3, 2), ([1], [0])),
    ((0, 3), (3, 4), 1), ((3, 4), (1, 5), ([1], [0])), ((2, 3), (3,), ([-1], [-1])),
])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_tensordot_matches_numpy(sa, sb, dims, layout):
    (a, na), (b, nb) = make(sa, ptl.float64, layout, 1), make(sb, ptl.float64, layout, 2)
    got = ptl.tensordot(a, b, dims)
    if isinstance(dims, tuple) and sb[dims[1][0]] == 1 and sa[dims[0][0]] != 1:
        if torch is not None:
            ref = torch.tensordot(torch.from_numpy(na.copy()), torch.from_numpy(nb.copy()), dims)
            assert_close(got, ref.numpy(), dtype=ptl.float64)
        # a contracted dim of size 1 broadcasts against the other operand's, as in torch
        nb = np.repeat(nb, sa[dims[0][0]], axis=dims[1][0])
    assert_close(got, np.tensordot(na, nb, dims), dtype=ptl.float64)


def test_tensordot_int_and_out():
    a, b = ptl.arange(6).reshape(2, 3), ptl.arange(12).reshape(3, 4)
    assert_close(ptl.tensordot(a, b, 1), np.arange(6).reshape(2, 3) @ np.arange(12).reshape(3, 4),
                 dtype=ptl.int64)
    out = ptl.empty(2, 4, dtype=ptl.int64)
    assert ptl.tensordot(a, b, 1, out=out) is out
    assert_close(out, np.arange(6).reshape(2, 3) @ np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: ptl.tensordot(a23, b43, ([0, 1], [0])), RuntimeError, "both dimension lists should have same length"),
    (lambda: ptl.tensordot(a23, b43, ([1], [0])), RuntimeError,
     "contracted dimensions need to match, but first has size 3 in dim 1 and second has size 4 in dim 0"),
    (lambda: ptl.tensordot(a23, b43, ([2], [0])), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: ptl.tensordot(a23, b43, -1), RuntimeError, "tensordot expects dims >= 0, but got dims=-1"),
    (lambda: ptl.tensordot(a23, b43.double(), ([1], [1])), RuntimeError, "both inputs should have same dtype"),
])
def test_tensordot_errors(fn, exc, msg):
    _raises(fn, exc, msg)


def test_tensordot_gradcheck():
    a = make((3, 4, 2), ptl.float64, "transposed", 1)[0].requires_grad_()
    b = make((2, 4, 5), ptl.float64, "sliced", 2)[0].requires_grad_()
    fn = lambda x, y: ptl.tensordot(x, y, ([1, 2], [1, 0]))  # noqa: E731
    assert gradcheck(fn, [a, b])
    assert gradgradcheck(fn, [a, b])


# ---- cdist ----

def cdist_ref(x1, x2, p):
    """Every pair of rows by explicit loops (broadcast batch dims)."""
    batch = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    x1 = np.broadcast_to(x1, batch + x1.shape[-2:])
    x2 = np.broadcast_to(x2, batch + x2.shape[-2:])
    out = np.zeros(batch + (x1.shape[-2], x2.shape[-2]))
    for idx in np.ndindex(*batch):
        for i in range(x1.shape[-2]):
            for j in range(x2.shape[-2]):
                d = np.abs(x1[idx][i] - x2[idx][j])
                if p == 0:
                    out[idx][i, j] = np.count_nonzero(d)
                elif p == math.inf:
                    out[idx][i, j] = d.max(initial=0)
                else:
                    out[idx][i, j] = (d ** p).sum() ** (1 / p)
    return out


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, math.inf])
@pytest.mark.parametrize("s1,s2", [((3, 4), (5, 4)), ((2, 3, 4), (2, 5, 4)), ((2, 1, 3, 2), (4, 6, 2)),
                                   ((30, 3), (4, 3)), ((0, 3), (4, 3)), ((3, 0), (4, 0))])
def test_cdist_matches_loops(p, s1, s2):
    (x1, n1), (x2, n2) = make(s1, ptl.float64, "transposed", 1), make(s2, ptl.float64, "sliced", 2)
    assert_close(ptl.cdist(x1, x2, p), cdist_ref(n1, n2, p), dtype=ptl.float64)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_cdist_compute_modes(mode, dtype):
    (x1, n1), (x2, n2) = make((40, 5), dtype, seed=1), make((3, 5), dtype, seed=2)
    assert_close(ptl.cdist(x1, x2, compute_mode=mode), cdist_ref(n1.astype(np.float64), n2.astype(np.float64), 2),
                 dtype=dtype, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: ptl.cdist(ptl.randn(3), b43), RuntimeError, "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda: ptl.cdist(a23, ptl.randn(3)), RuntimeError, "cdist only supports at least 2D tensors, X2 got: 1D"),
    (lambda: ptl.cdist(a23, ptl.randn(4, 4)), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    (lambda: ptl.cdist(a23.long(), b43.long()), RuntimeError, "cdist only supports floating-point dtypes, X1 got: Long"),
    (lambda: ptl.cdist(a23, b43, p=-1), RuntimeError, "cdist only supports non-negative p values"),
    (lambda: ptl.cdist(a23, b43.double()), RuntimeError, "expected scalar type Float but found Double"),
    (lambda: ptl.cdist(a23, b43, compute_mode="x"), ValueError, "x is not a valid value for compute_mode"),
])
def test_cdist_errors(fn, exc, msg):
    _raises(fn, exc, msg)


@pytest.mark.parametrize("p,mode", [(p, "donot_use_mm_for_euclid_dist") for p in (1, 1.5, 2, 3, math.inf)]
                         + [(2, "use_mm_for_euclid_dist")])
def test_cdist_gradcheck(p, mode):
    x1 = make((2, 3, 4), ptl.float64, "transposed", 1)[0].requires_grad_()
    x2 = make((1, 5, 4), ptl.float64, "sliced", 2)[0].requires_grad_()
    fn = lambda a, b: ptl.cdist(a, b, p, compute_mode=mode)  # noqa: E731
    assert gradcheck(fn, [x1, x2])
    if mode == "use_mm_for_euclid_dist":
        assert gradgradcheck(fn, [x1, x2])
    else:
        # as in PyTorch, _cdist_backward has no derivative
        g, = ptl.autograd.grad(fn(x1, x2).sum(), x1, create_graph=True)
        with pytest.raises(NotImplementedError, match="_cdist_backward' is not implemented"):
            g.sum().backward()


def _torch_grads(fn_ptl, fn_torch, arrays):
    """The gradients of fn_ptl(...).sum() and (recorded, golden.py) of fn_torch(...).sum()
    with respect to each of arrays."""
    def torch_grads():
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        fn_torch(*ts).sum().backward()
        return [t.grad.tolist() for t in ts]
    xs = [ptl.tensor(a, requires_grad=True) for a in arrays]
    fn_ptl(*xs).sum().backward()
    return [x.grad.numpy() for x in xs], [np.array(g) for g in golden(torch_grads)]


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, math.inf])
def test_cdist_grads_with_ties_match_torch(p):
    # equal coordinates (zero differences) and a zero distance
    x1 = np.array([[0., 1., 2.], [1., 1., 1.]])
    x2 = np.array([[0., 1., 2.], [1., 0., 1.], [2., 2., 1.]])
    got, ref = _torch_grads(lambda a, b: ptl.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), [x1, x2])
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, atol=1e-12)


@pytest.mark.parametrize("p", [0.5, 1, 1.5, 2, 3, math.inf])
def test_cdist_float32_grads_match_float64(p):
    """float32 gradients are the float64 ones of the same values, to float rounding (the inf
    norm's were all 0: its distance, rounded to float32, was compared with a double
    difference)"""
    n1, n2 = (np.random.default_rng(s).standard_normal(shape).astype(np.float32)
              for s, shape in ((3, (2, 4, 3)), (4, (2, 5, 3))))
    grads = {}
    for dt in (ptl.float32, ptl.float64):
        a = ptl.tensor(n1).to(dt).requires_grad_()
        b = ptl.tensor(n2).to(dt).requires_grad_()
        ptl.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist").sum().backward()
        grads[dt] = (a.grad.double().numpy(), b.grad.double().numpy())
    for g32, g64 in zip(grads[ptl.float32], grads[ptl.float64]):
        assert np.abs(g64).max() > 0.5
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4)


def test_cdist_forward_internal():
    x1, x2 = make((2, 3, 4), ptl.float32)[0], make((2, 5, 4), ptl.float32, seed=1)[0]
    assert_close(ptl.ops.aten._cdist_forward(x1, x2, 1.0, None), cdist_ref(x1.numpy(), x2.numpy(), 1))
    with pytest.raises(RuntimeError, match=re.escape("_cdist_forward: expected x1 [*, P, M] and x2 [*, R, M]")):
        ptl.ops.aten._cdist_forward(x1, x2[0], 1.0, None)
    for dt in (ptl.float16, ptl.bfloat16):
        _raises(lambda: ptl.cdist(x1.to(dt), x2.to(dt)), NotImplementedError,
                f"\"cdist\" not implemented for '{'Half' if dt == ptl.float16 else 'BFloat16'}'")


# ---- linalg ----

NORM_SHAPES = [(5,), (3, 4), (2, 3, 4), (0, 3)]
ORDS = [2, 1, 0, 0.5, 3, math.inf, -math.inf, -1]


@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_vector_norm_matches_numpy(shape, ord, layout):
    x, a = make(shape, ptl.float64, layout)
    flat = a.reshape(-1)
    if flat.size == 0 and (ord < 0 or ord == math.inf):
        with pytest.raises(RuntimeError, match="does not have an identity"):
            ptl.linalg.vector_norm(x, ord)
        return
    assert_close(ptl.linalg.vector_norm(x, ord), np.linalg.norm(flat, ord), dtype=ptl.float64)
    if len(shape) >= 2 and 0 not in shape:
        assert_close(ptl.linalg.vector_norm(x, ord, dim=(0, -1), keepdim=True),
                     np.linalg.norm(np.moveaxis(a, (0, a.ndim - 1), (-2, -1)).reshape(a.shape[1:-1] + (-1,)),
                                    ord, axis=-1).reshape((1,) + a.shape[1:-1] + (1,)))
        assert_close(ptl.linalg.vector_norm(x, ord, dim=1), np.linalg.norm(a, ord, axis=1))


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.float32])
def test_vector_norm_dtypes(dtype):
    x, a = make((3, 4), dtype)
    assert_close(ptl.linalg.vector_norm(x), np.linalg.norm(a.astype(np.float64).reshape(-1)), dtype=dtype)
    assert_close(ptl.linalg_vector_norm(x, 3, [1], True), np.linalg.norm(a.astype(np.float64), 3, axis=1, keepdims=True),
                 dtype=dtype)
    assert_close(ptl.linalg.vector_norm(x, dtype=ptl.float64),
                 np.linalg.norm(a.astype(np.float64).reshape(-1)), dtype=ptl.float64)


@pytest.mark.parametrize("fn,msg", [
    (lambda: ptl.linalg.vector_norm(a23.long()), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ptl.linalg.vector_norm(a23, dtype=ptl.int64), "linalg.vector_norm: dtype should be floating point or complex, but got Long"),
    (lambda: ptl.linalg.vector_norm(a23, dtype=ptl.float16),
     "linalg.vector_norm: the dtype of the input (Float) should be convertible without narrowing to the specified dtype (Half)"),
    (lambda: ptl.linalg.matrix_norm(a23, 3), "linalg.matrix_norm: Order 3 not supported."),
    (lambda: ptl.linalg.matrix_norm(a23, "abc"), "linalg.matrix_norm: Order abc not supported."),
    (lambda: ptl.linalg.matrix_norm(ptl.randn(3)), "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    (lambda: ptl.linalg.matrix_norm(a23, dim=(0, 0)), "linalg.matrix_norm: dims must be different. Got (0, 0)"),
    (lambda: ptl.linalg.matrix_norm(a23, dim=(0,)), "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    (lambda: ptl.linalg.matrix_norm(a23.long()), "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ptl.linalg.norm(ptl.randn(2, 3, 4), 2), "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
    (lambda: ptl.linalg.norm(ptl.randn(2, 3, 4), dim=(0, 1, 2)), "linalg.norm: If dim is specified, it must be of length 1 or 2. Got [0, 1, 2]"),
    (lambda: ptl.linalg.vecdot(a23, a23.double()),
     "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Float and y of type Double instead"),
    (lambda: ptl.linalg.vecdot(a23.long(), a23.long()), "linalg.vecdot: Expected a floating point or complex tensor as input. Got Long"),
])
def test_linalg_errors(fn, msg):
    _raises(fn, RuntimeError, msg)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_matrix_norm_matches_numpy(ord, layout):
    x, a = make((2, 3, 4), ptl.float64, layout)
    assert_close(ptl.linalg.matrix_norm(x, ord), np.linalg.norm(a, ord, axis=(-2, -1)), dtype=ptl.float64)
    assert_close(ptl.linalg.matrix_norm(x, ord, dim=(2, 0), keepdim=True),
                 np.linalg.norm(a, ord, axis=(2, 0), keepdims=True))
    assert_close(ptl.linalg.norm(x[0], ord), np.linalg.norm(a[0], ord))


@pytest.mark.parametrize("ord", [None, 1, 2, math.inf, 0.5])
def test_norm_dispatch(ord):
    x, a = make((3, 4), ptl.float64, "transposed")
    assert_close(ptl.linalg.norm(x, ord, dim=1), np.linalg.norm(a, 2 if ord is None else ord, axis=1))
    assert_close(ptl.linalg.norm(x[0], ord), np.linalg.norm(a[0], ord))
    assert_close(ptl.linalg.norm(make((2, 3, 4), ptl.float64)[0]), np.linalg.norm(make((2, 3, 4), ptl.float64)[1].reshape(-1)))


def test_vecdot_and_matmul():
    (x, a), (y, b) = make((2, 3, 4), ptl.float64, "transposed", 1), make((3, 4), ptl.float64, "sliced", 2)
    assert_close(ptl.linalg.vecdot(x, y), (a * b).sum(-1))
    assert_close(ptl.linalg.vecdot(x, y, dim=1), (a * b).sum(1))
    assert_close(ptl.linalg.matmul(x, y.mT), a @ b.T)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf, -math.inf])
def test_vector_norm_gradcheck(ord):
    x = make((3, 4), ptl.float64, "transposed")[0].requires_grad_()
    fn = lambda t: ptl.linalg.vector_norm(t, ord, dim=1)  # noqa: E731
    assert gradcheck(fn, [x])
    if ord not in (math.inf, -math.inf):
        assert gradgradcheck(fn, [x])


@pytest.mark.parametrize("ord", ["fro", 1, math.inf])
def test_matrix_norm_gradcheck(ord):
    x = make((2, 3, 4), ptl.float64, "sliced")[0].requires_grad_()
    assert gradcheck(lambda t: ptl.linalg.matrix_norm(t, ord), [x])


@pytest.mark.parametrize("ord", [2, math.inf, 1])
def test_vector_norm_grads_with_ties_match_torch(ord):
    a = np.array([[3., -3., 1.], [0., 0., 0.]])
    got, ref = _torch_grads(lambda t: ptl.linalg.vector_norm(t, ord, dim=1),
                            lambda t: torch.linalg.vector_norm(t, ord, dim=1), [a])
    np.testing.assert_allclose(got[0], ref[0], atol=1e-12)


# ---- renorm ----

def renorm_ref(a, p, dim, maxnorm):
    moved = np.moveaxis(a, dim, 0)
    norms = np.linalg.norm(moved.reshape(moved.shape[0], -1), p, axis=1)
    fac = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * fac.reshape((-1,) + (1,) * (a.ndim - 1)), 0, dim)


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 5.0), (1, 1, 3.0), (3, -1, 0.0), (math.inf, 2, 2.0), (0.5, 0, 100.0)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_renorm_matches_numpy(p, dim, maxnorm, layout):
    x, a = make((3, 4, 2), ptl.float64, layout)
    assert_close(ptl.renorm(x, p, dim, maxnorm), renorm_ref(a, p, dim, maxnorm), dtype=ptl.float64)
    assert_close(x.renorm(p, dim, maxnorm), renorm_ref(a, p, dim, maxnorm))
    y = x.clone()
    assert y.renorm_(p, dim, maxnorm) is y
    assert_close(y, renorm_ref(a, p, dim, maxnorm))
    if torch is not None:
        ref = torch.renorm(torch.from_numpy(np.ascontiguousarray(a)), p, dim, maxnorm).numpy()
        assert_close(ptl.renorm(x, p, dim, maxnorm), ref)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: ptl.renorm(a23, 2, 0, -1), RuntimeError, "renorm: expected maxnorm to be >= 0 but got -1"),
    (lambda: ptl.renorm(a23, 0, 0, 1), RuntimeError, "renorm: non-positive-norm not supported"),
    (lambda: ptl.renorm(ptl.randn(3), 2, 0, 1), RuntimeError, "renorm: input needs at least 2 dimensions, got 1 dimensions"),
    (lambda: ptl.renorm(a23.long(), 2, 0, 1), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ptl.renorm(a23, 2, 2, 1), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
])
def test_renorm_errors(fn, exc, msg):
    _raises(fn, exc, msg)


@pytest.mark.parametrize("p", [2, 1, 1.5, 3, 0.5, math.inf])
def test_renorm_gradcheck(p):
    x = make((3, 4), ptl.float64, "transposed")[0].requires_grad_()
    fn = lambda t: ptl.renorm(t, p, 0, 4.0)  # noqa: E731
    assert gradcheck(fn, [x])
    y = make((3, 4), ptl.float64, "sliced")[0].requires_grad_()
    fn_ = lambda t: (t * 1).renorm_(p, 1, 3.0)  # noqa: E731
    assert gradcheck(fn_, [y])
    if not math.isinf(p):
        assert gradgradcheck(fn, [x])
        assert gradgradcheck(fn_, [y])


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf])
def test_renorm_grads_with_ties_match_torch(p):
    # zeros, ties for the max, a slice under maxnorm
    a = np.array([[3., -3., 0.], [0.1, 0.2, 0.3], [-2., 2., 2.], [0., 0., 0.]])
    got, ref = _torch_grads(lambda t: ptl.renorm(t, p, 0, 1.0), lambda t: torch.renorm(t, p, 0, 1.0), [a])
    np.testing.assert_allclose(got[0], ref[0], atol=1e-10)


# ---- the derivatives.def section of this topic: every row has a gradcheck here ----


def test_node_names_match_torch():
    x = ptl.randn(3, 4, requires_grad=True)
    ours = [ptl.linalg.vector_norm(x, dim=1).grad_fn.name(), ptl.cdist(x, x, 1).grad_fn.name(),
            ptl.renorm(x, 2, 0, 1).grad_fn.name(), (x * 1).renorm_(2, 0, 1).grad_fn.name()]

    def theirs():
        t = torch.randn(3, 4, requires_grad=True)
        return [type(y.grad_fn).__name__ for y in (
            torch.linalg.vector_norm(t, dim=1), torch.cdist(t, t, 1), torch.renorm(t, 2, 0, 1),
            (t * 1).renorm_(2, 0, 1))]
    assert ours == golden(theirs)


def test_no_leaks_on_success_and_error_paths():
    from pytorchlite import _C
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    y = ptl.randn(4, 5, dtype=ptl.float64, requires_grad=True)

    def work():
        for eq, ops in (("ij,jk", [x, y]), ("ii", [x[:, :3]]), ("ij,ij->", [x, x]), ("ij->ji", [x])):
            ptl.einsum(eq, *ops).sum().backward()
        ptl.tensordot(x, y, 1).sum().backward()
        for p in (1, 2, math.inf):
            ptl.cdist(x, y.mT, p).sum().backward()
        ptl.cdist(x, y.mT, compute_mode="use_mm_for_euclid_dist").sum().backward()
        ptl.renorm(x, 2, 0, 1).sum().backward()
        ptl.linalg.vector_norm(x, dim=1, dtype=ptl.float64).sum().backward()
        for fn in (lambda: ptl.einsum("ij,jk,kl", x, y), lambda: ptl.einsum("ij->k", x),
                   lambda: ptl.einsum("ii", x), lambda: ptl.tensordot(x, y, ([0], [0])),
                   lambda: ptl.cdist(x, y), lambda: ptl.renorm(x, 2, 5, 1),
                   lambda: ptl.linalg.vector_norm(x, dtype=ptl.float32)):
            with pytest.raises((RuntimeError, IndexError)):
                fn()

    import gc
    work()
    x.grad = y.grad = None
    gc.collect()
    before = _C._live_counts()
    work()
    x.grad = y.grad = None
    gc.collect()
    assert _C._live_counts() == before


@pytest.mark.parametrize("layout", LAYOUTS)
def test_linalg_cross(layout):
    """linalg.cross is aten::linalg_cross: dim defaults to -1 (torch.cross's default picks the
    first dim of size 3), broadcasting the other dims."""
    a, na = make((4, 3), ptl.float64, layout)
    b, nb = make((1, 3), ptl.float64, layout, seed=1)
    assert_close(ptl.linalg.cross(a, b), np.cross(na, nb))
    c, nc = make((3, 5), ptl.float64, layout, seed=2)
    assert_close(ptl.linalg.cross(c, c.flip(1), dim=0), np.cross(nc, nc[:, ::-1], axis=0))
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2")):
        ptl.linalg.cross(ptl.ones(2), ptl.ones(2))


@pytest.mark.parametrize("shape,exc,msg", [
    ((), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    ((2,), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ((5,), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
])
def test_pdist_forward_reads_sizes_as_pytorch(shape, exc, msg):
    """_pdist_forward (not torch.pdist, which checks in Python) reads size(0), returns an empty
    result for at most one row (any dim, dtype and p), and then reads size(1)"""
    _raises(lambda: ptl.ops.aten._pdist_forward(ptl.ones(shape)), exc, msg)
    for shape, dtype, p in [((0,), ptl.float32, 2.0), ((1,), ptl.int32, 2.0),
                            ((1,), ptl.float16, -1.0), ((1, 3), ptl.int64, 1.0),
                            ((0, 2, 2), ptl.float64, 2.0)]:
        r = ptl.ops.aten._pdist_forward(ptl.ones(shape, dtype=dtype), p)
        assert r.shape == (0,) and r.dtype == dtype
    _raises(lambda: ptl.nn.functional.pdist(ptl.ones(3)), RuntimeError,
            "pdist only supports 2D tensors, got: 1D")
    x = ptl.randn(4, 3, dtype=ptl.float64)
    _raises(lambda: ptl.ops.aten._pdist_forward(x.t()), RuntimeError,
            "_pdist_forward requires contiguous input")
    assert_close(ptl.nn.functional.pdist(x.t()), ptl.nn.functional.pdist(x.t().contiguous()))
    r = ptl.ops.aten._pdist_forward(ptl.ones(1, dtype=ptl.complex128))
    assert r.shape == (0,) and r.dtype == ptl.complex128
