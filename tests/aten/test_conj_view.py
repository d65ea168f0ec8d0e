"""conj() as a view with a conjugate bit (Note [Conjugate views] in src/aten/native/conjugate.c):
views of conj views and conj of views against NumPy's complex128, writes through conj views
landing in their base conjugated, ops mixing conj and plain operands, autograd through conj
views, and every reader of memory outside the dispatcher (item, tolist, numpy, DLPack,
save/load, pickling, printing)."""
import io
import pickle

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, assert_raises_like_torch, torch, torch_ref

C64, C128 = ptl.complex64, ptl.complex128


def crandn(shape, dtype=C128, seed=0):
    """(tensor, complex128 ndarray) with equal values"""
    gen = np.random.default_rng(seed)
    a = gen.standard_normal(shape) + 1j * gen.standard_normal(shape)
    a = a.astype(np.complex64 if dtype == C64 else np.complex128).astype(np.complex128)
    return ptl.tensor(a, dtype=dtype), a


def values(t):
    """t's values as complex128, read through tolist() (no numpy(), no resolve_conj())"""
    return np.array(t.tolist(), dtype=np.complex128).reshape(tuple(t.shape))


SHAPES = [(), (0,), (3,), (2, 0), (3, 4), (2, 3, 4)]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("shape", SHAPES)
def test_conj_is_a_view_with_the_bit(shape, dtype):
    x, a = crandn(shape, dtype)
    c = x.conj()
    assert c.is_conj() and ptl.is_conj(c) and not x.is_conj()
    assert c._storage_ptr() == x._storage_ptr() and c.dtype == dtype
    assert np.array_equal(values(c), a.conj())
    assert_close(c, a.conj(), dtype=dtype)
    assert not c.conj().is_conj() and np.array_equal(values(c.conj()), a)
    r = c.resolve_conj()
    assert not r.is_conj() and r._storage_ptr() != x._storage_ptr()
    assert np.array_equal(values(r), a.conj())
    assert x.resolve_conj() is x
    p = c.conj_physical()
    assert not p.is_conj() and np.array_equal(values(p), a)
    assert "Conjugate" in str(ptl._C._dispatch_keys(c))


def test_real_conj_is_an_alias_without_the_bit():
    x = ptl.arange(6.0).reshape(2, 3)
    c = x.conj()
    assert not c.is_conj() and c._storage_ptr() == x._storage_ptr()
    assert np.array_equal(c.numpy(), x.numpy())


def test_mH_H_adjoint_are_lazy():
    x, a = crandn((3, 4))
    for v in (x.mH, x.H, x.adjoint(), ptl.adjoint(x)):
        assert v.is_conj() and v._storage_ptr() == x._storage_ptr()
        assert np.array_equal(values(v), a.conj().T)
    b, ab = crandn((2, 3, 4), seed=1)
    assert b.mH.is_conj() and np.array_equal(values(b.mH), ab.conj().transpose(0, 2, 1))


VIEWS = {
    "slice": (lambda t: t[:, 1:3], lambda a: a[:, 1:3]),
    "step": (lambda t: t[::2], lambda a: a[::2]),
    "select": (lambda t: t[1], lambda a: a[1]),
    "transpose": (lambda t: t.transpose(0, 1), lambda a: a.transpose(1, 0)),
    "t": (lambda t: t.t(), lambda a: a.T),
    "view": (lambda t: t.view(12), lambda a: a.reshape(12)),
    "reshape": (lambda t: t.reshape(4, 3), lambda a: a.reshape(4, 3)),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "expand": (lambda t: t[None].expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4))),
    "permute": (lambda t: t.permute(1, 0), lambda a: a.transpose(1, 0)),
    "diagonal": (lambda t: t.diagonal(), lambda a: a.diagonal()),
    "as_strided": (lambda t: t.as_strided((2, 2), (1, 4), 1),
                   lambda a: np.lib.stride_tricks.as_strided(
                       a.reshape(-1)[1:], (2, 2), (16, 64))),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "unsqueeze": (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    "squeeze": (lambda t: t[:1].squeeze(0), lambda a: a[0]),
    "detach": (lambda t: t.detach(), lambda a: a),
    "unbind": (lambda t: t.unbind(0)[2], lambda a: a[2]),
    "real": (lambda t: t.real, lambda a: a.real),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_of_conj_and_conj_of_views(name):
    op, ref = VIEWS[name]
    x, a = crandn((3, 4))
    v = op(x.conj())
    w = op(x).conj()
    expect = np.ascontiguousarray(ref(a.conj()))
    for t in (v, w):
        assert np.allclose(values(t), expect, rtol=0, atol=0)
        if t.is_complex():
            assert t.is_conj()
            assert t._storage_ptr() == x._storage_ptr()
    if name == "real":
        assert not v.is_conj() and v._storage_ptr() == x._storage_ptr()


def test_reshape_that_copies_resolves():
    x, a = crandn((3, 4))
    r = x.conj().t().reshape(12)
    assert not r.is_conj() and r._storage_ptr() != x._storage_ptr()
    assert np.array_equal(values(r), a.conj().T.reshape(12))
    c = x.conj().t().contiguous()
    assert not c.is_conj() and np.array_equal(values(c), a.conj().T)
    assert x.conj().contiguous().is_conj()


def test_imag_of_conj_is_the_conjugates_imaginary_part():
    x, a = crandn((3, 4))
    assert np.array_equal(x.conj().imag.numpy(), -a.imag)


def test_writes_through_conj_views_land_conjugated():
    x, a = crandn((3, 4))
    c = x.conj()
    c[0, 1] = 5 + 1j
    a[0, 1] = 5 - 1j
    c[1] = ptl.tensor([1 + 2j, 3j, -1, 0.5 - 1j], dtype=C128)
    a[1] = np.conj([1 + 2j, 3j, -1, 0.5 - 1j])
    c[[2], [0]] = 7 - 7j
    a[2, 0] = 7 + 7j
    c[:, 3][ptl.tensor([True, False, True])] = 2j
    a[[0, 2], 3] = -2j
    assert np.array_equal(values(x), a)
    c.mul_(2j)
    a = (a.conj() * 2j).conj()
    assert np.allclose(values(x), a, rtol=1e-15, atol=0)
    c[:, :2].add_(ptl.ones(3, 2, dtype=C128) * (1 + 1j))
    a[:, :2] += 1 - 1j
    assert np.allclose(values(x), a, rtol=1e-15, atol=0)
    c.t()[1].zero_()
    a[:, 1] = 0
    y, b = crandn((3, 4), seed=3)
    ptl.add(y[2], 1, out=c[2])
    a[2] = (b[2] + 1).conj()
    assert np.allclose(values(x), a, rtol=1e-15, atol=0)
    assert c.is_conj()


def test_out_resizes_a_conj_view():
    x = ptl.zeros(0, dtype=C128)
    c = x.conj()
    y, b = crandn((3,), seed=1)
    r = ptl.mul(y, 2, out=c)
    assert r is c and c.is_conj() and tuple(c.shape) == (3,)
    assert np.allclose(values(c), 2 * b, rtol=1e-15, atol=0)
    assert np.allclose(values(c.conj()), (2 * b).conj(), rtol=1e-15, atol=0)


def test_copy_both_directions():
    x, a = crandn((3, 4))
    y, b = crandn((4, 3), seed=1)
    z = ptl.empty(3, 4, dtype=C128)
    z.copy_(y.t().conj())
    assert not z.is_conj() and np.array_equal(values(z), b.T.conj())
    x.conj().copy_(y.t())
    assert np.array_equal(values(x), b.T.conj())
    x.conj().copy_(y.conj().t())
    assert np.array_equal(values(x), b.T)
    w = ptl.empty(3, 4, dtype=C64)
    w.copy_(y.t().conj())
    assert np.allclose(values(w), b.T.conj().astype(np.complex64), rtol=0, atol=0)
    assert np.array_equal(ptl.empty(3, 4, dtype=ptl.float64).copy_(y.t().conj()).numpy(),
                          b.T.real)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)),
                                    ((0, 3), (1, 3))])
def test_binary_ops_mix_conj_and_plain(shapes):
    x, a = crandn(shapes[0])
    y, b = crandn(shapes[1], seed=2)
    for fx, fa in ((lambda t: t, lambda t: t), (lambda t: t.conj(), np.conj)):
        for fy, fb in ((lambda t: t, lambda t: t), (lambda t: t.conj(), np.conj)):
            X, Y, A, B = fx(x), fy(y), fa(a), fb(b)
            assert_close(X + Y, A + B)
            assert_close(X - 2 * Y, A - 2 * B)
            assert_close(X * Y, A * B)
            assert_close(X / (Y + 3), A / (B + 3))
            assert_close(X == Y, A == B)
            assert not (X * Y).is_conj()


def test_matmul_with_conj_operands():
    x, a = crandn((5, 3))
    y, b = crandn((5, 4), seed=1)
    assert_close(x.mH @ y, a.conj().T @ b)
    assert_close(ptl.mm(x.mH, y), a.conj().T @ b)
    assert_close(y.mH @ x.conj(), b.conj().T @ a.conj())
    bx, ba = crandn((2, 5, 3), seed=2)
    by, bb = crandn((2, 5, 4), seed=3)
    assert_close(ptl.bmm(bx.mH, by), ba.conj().transpose(0, 2, 1) @ bb)
    assert_close(bx.mH @ by, ba.conj().transpose(0, 2, 1) @ bb)
    v, av = crandn((5,), seed=4)
    assert_close(x.mH @ v, a.conj().T @ av)
    assert_close(ptl.dot(v.conj(), v), np.vdot(av, av))


def test_reductions_and_unary_of_conj():
    x, a = crandn((3, 4))
    c = x.conj()
    assert_close(c.sum(), a.conj().sum())
    assert_close(c.sum(1), a.conj().sum(1))
    assert_close(c.mean(0), a.conj().mean(0))
    assert_close(c.abs(), np.abs(a))
    assert_close(c.exp(), np.exp(a.conj()))
    assert_close(c.angle(), np.angle(a.conj()))
    assert_close(ptl.cat([c, x]), np.concatenate([a.conj(), a]))
    assert_close(ptl.stack([c, x]), np.stack([a.conj(), a]))
    assert_close(c[ptl.tensor([2, 0])], a.conj()[[2, 0]])
    assert_close(c.clone(), a.conj())
    assert not c.clone().is_conj()
    assert_close(c.to(ptl.complex64), a.conj().astype(np.complex64))
    assert_close(c.to(ptl.float64), a.real)


def test_readers_resolve():
    x, a = crandn((2, 3))
    c = x.conj()
    assert c[0, 1].item() == a[0, 1].conjugate()
    assert c[1, 2].item() == a[1, 2].conjugate()
    assert np.array_equal(np.array(c.tolist()), a.conj())
    assert np.array_equal(c.numpy(force=True), a.conj())
    s = ptl.tensor(1 + 2j, dtype=C128).conj()
    assert ptl.ones(2, dtype=C128).mul(s).tolist() == [1 - 2j, 1 - 2j]
    assert "-" in repr(ptl.tensor([1 + 1j]).conj())
    assert repr(ptl.tensor([1 + 1j]).conj()) == repr(ptl.tensor([1 - 1j]))


def test_save_load_and_pickle_keep_values():
    x, a = crandn((2, 3))
    buf = io.BytesIO()
    ptl.save({"c": x.conj(), "x": x}, buf)
    buf.seek(0)
    d = ptl.load(buf)
    assert d["c"].is_conj() and d["c"]._storage_ptr() == d["x"]._storage_ptr()
    assert np.array_equal(values(d["c"]), a.conj()) and np.array_equal(values(d["x"]), a)
    buf = io.BytesIO()
    ptl.save(x.conj(), buf)
    buf.seek(0)
    assert np.array_equal(values(ptl.load(buf)), a.conj())
    p = pickle.loads(pickle.dumps(x.conj()))
    assert np.array_equal(values(p), a.conj())


@torch_ref
def test_save_loads_in_torch():
    x, a = crandn((2, 3))
    buf = io.BytesIO()
    ptl.save({"c": x.conj(), "x": x}, buf)
    buf.seek(0)
    d = torch.load(buf)
    assert d["c"].is_conj() and np.array_equal(d["c"].resolve_conj().numpy(), a.conj())


def test_errors():
    x, _ = crandn((2, 3))
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that has conjugate "
                       "bit set. Use tensor.resolve_conj\\(\\).numpy\\(\\) instead."):
        x.conj().numpy()
    with pytest.raises(BufferError, match="Can't export tensors with the conjugate bit set"):
        x.conj().__dlpack__()
    with pytest.raises(BufferError, match="conjugate bit"):
        memoryview(x.conj())


@torch_ref
def test_errors_like_torch():
    for fn, msg in (
            (lambda lib: lib.view_as_real(lib.ones(2, dtype=lib.complex64).conj()),
             "view_as_real doesn't work on unresolved conjugated tensors."),
            (lambda lib: lib.ones(2, dtype=lib.complex64).conj().view(lib.float32),
             "torch.Tensor.view is not supported for conjugate view tensors when converting "
             "to a different dtype."),
            (lambda lib: lib.ones(2, dtype=lib.complex64).conj().numpy(),
             "Can't call numpy() on Tensor that has conjugate bit set.")):
        assert_raises_like_torch(fn, RuntimeError, msg)
    assert_raises_like_torch(
        lambda lib: lib.ones(2, dtype=lib.complex128, requires_grad=True).conj().mul_(2),
        RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place")


def test_gradcheck_through_conj_views():
    x, _ = crandn((3, 4))
    y, _ = crandn((4, 2), seed=1)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert ptl.autograd.gradcheck(lambda p, q: p.conj().t()[1:] @ q.conj(), (x.t(), y))
    assert ptl.autograd.gradcheck(lambda p: (p.mH * p).sum(1), (x[:, :3],))
    assert ptl.autograd.gradcheck(lambda p: p.conj().resolve_conj() * 2j, (x,))


@torch_ref
@pytest.mark.parametrize("case", ["mul_", "setitem", "copy_"])
def test_in_place_on_conj_view_with_grad_as_torch(case):
    a0 = np.random.default_rng(5).standard_normal((3, 2)) * (1 + 0.5j)
    b0 = np.random.default_rng(6).standard_normal((3, 2)) * (0.5 - 1j)
    grads = []
    for lib in (torch, ptl):
        a = lib.tensor(a0, dtype=lib.complex128, requires_grad=True)
        b = lib.tensor(b0, dtype=lib.complex128, requires_grad=True)
        x = a * 1
        c = x.conj()
        if case == "mul_":
            c.mul_(b)
        elif case == "setitem":
            c[1] = b[0] * 3j
        else:
            c[:, 1].copy_(b[:, 0])
        loss = (x * lib.tensor([[1 + 2j, 3 - 1j]], dtype=lib.complex128)).abs().sum()
        loss.backward()
        grads.append((np.array(x.detach().resolve_conj().numpy()), a.grad.numpy().copy(),
                      b.grad.numpy().copy()))
        assert c.is_conj() and c._base is x
    for got, ref in zip(grads[1], grads[0]):
        assert np.allclose(got, ref, rtol=1e-12, atol=1e-12)


@torch_ref
def test_is_conj_of_ops_as_torch():
    cases = [lambda t: t.conj(), lambda t: t.conj().t(), lambda t: t.conj()[0],
             lambda t: t.conj().contiguous(), lambda t: t.conj().t().contiguous(),
             lambda t: t.conj().clone(), lambda t: t.conj() + 1, lambda t: t.conj().detach(),
             lambda t: t.conj().conj(), lambda t: t.conj().resolve_conj(),
             lambda t: t.conj_physical(), lambda t: t.conj().real, lambda t: t.mH,
             lambda t: t.conj().view(3, 2), lambda t: t.conj().expand(2, 2, 3),
             lambda t: t.conj().unbind(0)[1], lambda t: t.conj().to(t.dtype)]
    for f in cases:
        want = f(torch.ones(2, 3, dtype=torch.complex64))
        got = f(ptl.ones(2, 3, dtype=ptl.complex64))
        assert got.is_conj() == want.is_conj() if want.is_complex() else not got.is_conj()
