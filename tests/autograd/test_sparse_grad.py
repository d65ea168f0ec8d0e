"""Autograd through sparse COO tensors (src/autograd/derivatives/sparse.c): the gradient of a
sparse argument of torch.sparse.mm is sparse with that argument's pattern, the dense side's
is S^T @ G; to_dense masks the gradient to the pattern; sparse_coo_tensor passes the
gradient at the indices to its values.  Checked against NumPy in float64 and with gradcheck
in float64 through functions of the values (gradcheck takes dense inputs)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, rng, torch, torch_ref
from pytorchlite.autograd import gradcheck, gradgradcheck

IND = [[0, 1, 1, 0], [2, 0, 2, 2]]   # (0, 2) twice: an uncoalesced pattern


def _pattern(ind, shape):
    p = np.zeros(shape, dtype=bool)
    p[tuple(np.asarray(ind))] = True
    return p


@pytest.mark.parametrize("make", ["leaf", "to_sparse"])
@pytest.mark.parametrize("n", [1, 3, 0])
def test_sparse_mm_gradients(make, n):
    gen = rng(1)
    vals, d = gen.standard_normal(4), gen.standard_normal((3, n))
    dense = np.zeros((2, 3))
    np.add.at(dense, tuple(np.asarray(IND)), vals)
    if make == "leaf":
        s = ptl.sparse_coo_tensor(ptl.tensor(IND), ptl.tensor(vals), (2, 3), requires_grad=True)
    else:
        s = ptl.tensor(dense).to_sparse().requires_grad_()
    D = ptl.tensor(d, requires_grad=True)
    out = ptl.sparse.mm(s, D)
    assert out.grad_fn.name() == "MmBackward0"
    g = gen.standard_normal((2, n))
    out.backward(ptl.tensor(g))
    assert s.grad.is_sparse and s.grad.shape == (2, 3)
    assert_close(s.grad.to_dense(), np.where(_pattern(IND, (2, 3)), g @ d.T, 0.0))
    assert_close(D.grad, dense.T @ g)


def test_sparse_grads_accumulate():
    s = ptl.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().requires_grad_()
    D = ptl.ones(2, 3, dtype=ptl.float32)
    for _ in range(2):
        ptl.sparse.mm(s, D).sum().backward()
    assert s.grad.is_sparse
    assert_close(s.grad.to_dense(), [[0.0, 6.0], [6.0, 0.0]])


def test_addmm_gradient_of_a_sparse_mat1():
    gen = rng(2)
    s = ptl.tensor(gen.standard_normal((3, 4)) * (gen.random((3, 4)) > 0.5)).to_sparse()
    s.requires_grad_()
    b, c = gen.standard_normal((4, 2)), gen.standard_normal((3, 2))
    B, C = ptl.tensor(b, requires_grad=True), ptl.tensor(c, requires_grad=True)
    ptl.sparse.addmm(C, s, B, beta=0.5, alpha=2.0).sum().backward()
    g = np.ones((3, 2))
    pattern = s.detach().to_dense().numpy() != 0
    assert s.grad.is_sparse
    assert_close(s.grad.to_dense(), np.where(pattern, 2.0 * g @ b.T, 0.0))
    assert_close(B.grad, 2.0 * s.detach().to_dense().numpy().T @ g)
    assert_close(C.grad, 0.5 * g)


def test_gradcheck_through_the_values():
    gen = rng(3)
    ind = ptl.tensor(IND)
    v = ptl.tensor(gen.standard_normal(4), requires_grad=True)
    D = ptl.tensor(gen.standard_normal((3, 2)), requires_grad=True)

    def f(v, D):
        return ptl.sparse.mm(ptl.sparse_coo_tensor(ind, v, (2, 3)), D)
    assert gradcheck(f, (v, D))
    assert gradgradcheck(f, (v, D))
    assert gradcheck(lambda v: ptl.sparse_coo_tensor(ind, v, (2, 3)).to_dense(), (v,))
    assert gradcheck(lambda v: ptl.sparse_coo_tensor(ind, v, (2, 3)).coalesce().values(), (v,))
    assert gradcheck(lambda v: (ptl.sparse_coo_tensor(ind, v, (2, 3)) * 3).to_dense(), (v,))
    w = ptl.tensor(gen.standard_normal((4, 2)), requires_grad=True)   # a dense dimension
    assert gradcheck(lambda w: ptl.sparse_coo_tensor(ptl.tensor([IND[0]]), w, (2, 2)).to_dense(),
                     (w,))


def test_to_dense_masks_the_gradient():
    x = ptl.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
    s = x.to_sparse()
    assert s.grad_fn.name() == "ToSparseBackward0"
    d = s.to_dense()
    assert d.grad_fn.name() == "ToDenseBackward0"
    (d * ptl.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert_close(x.grad, [[0.0, 2.0], [3.0, 0.0]])


def test_values_backward_is_sparse():
    s = ptl.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().requires_grad_()
    (s.values() * ptl.tensor([5.0, 7.0])).sum().backward()
    assert s.grad.is_sparse
    assert_close(s.grad.to_dense(), [[0.0, 5.0], [7.0, 0.0]])


@torch_ref
def test_gradients_like_torch():
    gen = rng(4)
    vals, d = gen.standard_normal(4), gen.standard_normal((3, 2))
    grads = []
    for lib in (ptl, torch):
        s = lib.sparse_coo_tensor(lib.tensor(IND), lib.tensor(vals), (2, 3), requires_grad=True)
        D = lib.tensor(d, requires_grad=True)
        (lib.sparse.mm(s, D) ** 2).sum().backward()
        grads.append((s.grad.to_dense().numpy(), D.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_sparse_and_dense_gradients_meet():
    # a non-leaf sparse tensor whose gradient arrives sparse (mm) and dense (sum)
    v = ptl.tensor([1.0, 2.0], dtype=ptl.float64, requires_grad=True)
    s = ptl.sparse_coo_tensor(ptl.tensor([[0, 1], [1, 0]]), v, (2, 2))
    D = ptl.ones(2, 3, dtype=ptl.float64)
    (ptl.sparse.mm(s, D).sum() + s.sum()).backward()
    assert_close(v.grad, [4.0, 4.0])
    # a sparse .grad that then receives a dense gradient becomes dense
    leaf = ptl.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().requires_grad_()
    ptl.sparse.mm(leaf, ptl.ones(2, 3)).sum().backward()
    leaf.sum().backward()
    assert not leaf.grad.is_sparse
    assert_close(leaf.grad, [[1.0, 4.0], [4.0, 1.0]])


def test_matmul_gradients_of_a_sparse_matrix():
    gen = rng(5)
    a = gen.standard_normal((3, 4)) * (gen.random((3, 4)) > 0.5)
    b, v = gen.standard_normal((4, 2)), gen.standard_normal(4)
    pattern = a != 0
    for other, g in ((b, np.ones((3, 2))), (v, np.ones(3))):
        s = ptl.tensor(a).to_sparse().requires_grad_()
        o = ptl.tensor(other, requires_grad=True)
        (s @ o).sum().backward()
        assert s.grad.is_sparse
        want = g @ b.T if other.ndim == 2 else np.outer(g, v)
        assert_close(s.grad.to_dense(), np.where(pattern, want, 0.0))
        assert_close(o.grad, a.T @ g)
