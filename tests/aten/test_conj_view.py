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


def saved(obj):
    """A file holding ptl.save(obj), rewound"""
    buf = io.BytesIO()
    ptl.save(obj, buf)
    buf.seek(0)
    return buf


def test_save_load_and_pickle_keep_values():
    x, a = crandn((2, 3))
    d = ptl.load(saved({"c": x.conj(), "x": x}))
    assert d["c"].is_conj() and d["c"]._storage_ptr() == d["x"]._storage_ptr()
    assert np.array_equal(values(d["c"]), a.conj()) and np.array_equal(values(d["x"]), a)
    assert np.array_equal(values(ptl.load(saved(x.conj()))), a.conj())
    p = pickle.loads(pickle.dumps(x.conj()))
    assert np.array_equal(values(p), a.conj())


@torch_ref
def test_save_loads_in_torch():
    x, a = crandn((2, 3))
    d = torch.load(saved({"c": x.conj(), "x": x}))
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


# ---- every op of the table on conj views (tests/opinfo.py) ----
#
# Each op's samples run with their floating tensors made complex128 twice, in the same layout:
# plain, and as conj views of memory holding the conjugates (x.conj()), or as .mH of the
# conjugated transposes against .mT of the plain ones.  The two calls must agree: the same
# outputs, the same values in every tensor argument afterwards (in-place ops and out= write
# through conj views), and the same error where the plain call raises.  New complex kernels
# sit below the Conjugate key, so the table covers them as they land.

from opinfo import TABLE, Sp, T  # noqa: E402

# What an op on a conj view does differently from the op on plain values, and why.
NOT_LIKE_PLAIN = {
    "view_as_real": "refuses a conj view, with PyTorch's message (test_errors_like_torch)",
    "view.dtype": "refuses a conj view, with PyTorch's message (test_errors_like_torch)",
    "set_.source_Tensor": "self takes source's memory, not its bit: PyTorch's Conjugate key "
                          "falls through set_ too",
}
# Ops whose result on conj views is a new tensor here and a conj view in PyTorch, whose kernels
# compute on the operands' memory and conjugate the result lazily (dot(a.conj(), b.conj()) is
# dot(a, b).conj()): an accident of its implementation; the values agree (checked).
CONJ_RESULT = {
    "dot": "PyTorch: dot of two conj views is the conj view of dot of their memory",
    "matmul": "1-D @ 1-D is dot",
    "linalg_solve": "PyTorch solves left=False as the adjoint of a left solve, lazily",
    "_linalg_solve_ex": "as linalg_solve",
    "repeat_interleave.self_Tensor": "PyTorch's Conjugate key falls through repeat_interleave",
}
# Ops whose outputs hold memory nobody wrote: only shapes and dtypes compare.
UNINITIALIZED = {"empty_like", "empty.memory_format", "empty_strided", "new_empty",
                 "new_empty_strided", "resize_", "resize_as_"}


class _Skip(Exception):
    """A sample the sweep cannot make complex (a sparse tensor)."""


def _base_shape(shape, layout):
    if layout == "transposed":
        return shape[::-1]
    if layout == "sliced":
        return tuple(2 * s for s in shape)
    if layout == "expanded":
        return tuple(1 if i == 0 else s for i, s in enumerate(shape))
    return shape


def _laid_out(t, layout, shape):
    """t (made from the base memory) in the spec's layout: helpers.make's views."""
    if layout == "transposed":
        return t.permute(*reversed(range(len(shape))))
    if layout == "sliced":
        return t[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "expanded":
        return t.expand(*shape)
    return t


class CArg:
    """A floating spec T made complex128: random real and imaginary parts in the op's domain
    (the spec's values get a random imaginary part), in the spec's layout."""

    def __init__(self, spec, seed, domain):
        self.shape = spec.shape
        self.layout = spec.layout if spec.values is None and spec.shape else "contiguous"
        gen = np.random.default_rng(seed)
        if spec.values is not None:
            re = np.asarray(spec.values, dtype=np.float64)
            self.base = re + 1j * gen.uniform(-1, 1, re.shape)
        else:
            lo = spec.low if spec.low is not None else domain[0]
            hi = spec.high if spec.high is not None else domain[1]
            b = _base_shape(self.shape, self.layout)
            self.base = gen.uniform(lo, hi, b) + 1j * gen.uniform(lo, hi, b)
        self.values = _laid_out(_NpView(self.base), self.layout, self.shape).a

    def make(self, lib, kind):
        """plain: the values; conj: a conj view of their conjugates, laid out alike; mT / mH
        (2-D and up): .mT of the transposes / .mH of their conjugates"""
        if len(self.shape) < 2 and kind in ("mT", "mH"):
            kind = "plain" if kind == "mT" else "conj"
        if kind in ("plain", "conj"):
            mem = self.base if kind == "plain" else self.base.conj()
            t = _laid_out(lib.tensor(mem, dtype=lib.complex128), self.layout, self.shape)
            return t.conj() if kind == "conj" else t
        v = np.ascontiguousarray(np.swapaxes(self.values, -1, -2))
        if kind == "mT":
            return lib.tensor(v, dtype=lib.complex128).mT
        return lib.tensor(v.conj(), dtype=lib.complex128).mH


class _NpView:
    """_laid_out's views on an ndarray"""

    def __init__(self, a):
        self.a = a

    def permute(self, *dims):
        return _NpView(self.a.transpose(dims))

    def __getitem__(self, idx):
        return _NpView(self.a[idx])

    def expand(self, *shape):
        return _NpView(np.broadcast_to(self.a, shape))


def _torch_value(x):
    """A non-complex argument of the pytorchlite call as the torch call takes it."""
    if isinstance(x, ptl.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, ptl.Generator):
        return torch.Generator().manual_seed(0)
    if type(x).__module__.startswith("pytorchlite") and str(x).startswith("torch."):
        return getattr(torch, str(x)[len("torch."):])
    return x


def sweep_args(sample, domain, lib, kind):
    """(args, kwargs, complex?) of sample for lib, its floating tensors made complex as kind
    says (CArg.make); the other specs as tests/opinfo.py makes them."""
    counter, made = [0], [False]

    def build(x):
        if isinstance(x, Sp):
            raise _Skip
        if isinstance(x, T):
            counter[0] += 1
            if x.dtype in (None, ptl.float32, ptl.float64):
                made[0] = True
                return CArg(x, counter[0], domain).make(lib, kind)
            t, _ = x.make(ptl.float64, domain, counter[0])
            return t if lib is ptl else _torch_value(t)
        if x.__class__.__name__ == "DTYPE":
            return lib.complex128
        if x.__class__.__name__ == "GENERATOR":
            return lib.Generator().manual_seed(0)
        if isinstance(x, (list, tuple)):
            return type(x)(build(y) for y in x)
        return x if lib is ptl else _torch_value(x)
    args = [build(x) for x in sample.args]
    kwargs = {k: build(v) for k, v in sample.kwargs.items()}
    return args, kwargs, made[0]


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _leaves(v)]
    if isinstance(x, dict):
        return _leaves(list(x.values()))
    return [x]


def _array(t):
    """A tensor's values (a conj view's, not its memory's) as an ndarray"""
    if getattr(t, "is_sparse", False):
        t = t.to_dense()
    t = t.detach().resolve_conj()
    if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
        t = t.double()
    return np.array(t.numpy())


def _same(got, want, what, values=True):
    """got and want (outputs or arguments of the two calls, nested) hold the same values"""
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), f"{what}: {len(g)} leaves, expected {len(w)}"
    for k, (a, b) in enumerate(zip(g, w)):
        if isinstance(b, (bool, int, float, complex, str)) or b is None:
            assert a == b or (a != a and b != b), f"{what} {k}: {a!r} != {b!r}"
            continue
        if not hasattr(b, "is_conj"):   # a dtype, a Generator: not compared
            continue
        assert tuple(a.shape) == tuple(b.shape), f"{what} {k}: shape {tuple(a.shape)} != " \
                                                 f"{tuple(b.shape)}"
        assert str(a.dtype) == str(b.dtype), f"{what} {k}: dtype {a.dtype} != {b.dtype}"
        if not values:
            continue
        x, y = _array(a), _array(b)
        if x.dtype.kind in "fc":
            x, y = x.astype(np.complex128), y.astype(np.complex128)
            ok = np.ones(x.shape, dtype=bool)
            for part in (np.real, np.imag):
                ok &= np.isclose(part(x), part(y), rtol=1e-9, atol=1e-10, equal_nan=True)
        else:
            ok = x == y
        if not np.all(ok):
            bad = tuple(int(i) for i in np.argwhere(~ok)[0]) if x.ndim else ()
            raise AssertionError(f"{what} {k}: at {bad} {x[bad]!r} != {y[bad]!r}")


def _call(fn, args, kwargs, lib=ptl):
    lib.manual_seed(0)   # random ops draw the same numbers in both calls
    try:
        return fn(*args, **kwargs), None
    except Exception as e:   # noqa: BLE001  (the plain call's error is the reference)
        return None, e


def _out_tensors(expected, kind, lib):
    """out= tensors for expected's outputs: size 0 (resized by the op), conj views for
    complex ones when kind is a conj kind"""
    outs = []
    for e in _leaves(expected):
        o = lib.empty(0, dtype=e.dtype)
        outs.append(o.conj() if kind in ("conj", "mH") and e.dtype.is_complex else o)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _op_of(lib, name):
    base, _, overload = name.partition(".")
    return getattr(getattr(lib.ops.aten, base), overload or "default")


def _sweep_cases(info):
    """(sample index, plain kind, conj kind) of every sample the sweep runs"""
    for i, sample in enumerate(info.samples or []):
        specs = [t for t in sample.specs() if t.dtype in (None, ptl.float32, ptl.float64)]
        if not specs:
            continue
        yield i, "plain", "conj"
        if any(len(t.shape) >= 2 for t in specs):
            yield i, "mT", "mH"


def run_pair(info, sample, plain, conj, lib=ptl):
    """The op on plain and on conj arguments: ((result, error, args, kwargs) for each), or
    None when the sample has no complex form"""
    op = info.op if lib is ptl else _op_of(lib, info.name)
    runs = []
    for kind in (plain, conj):
        try:
            args, kwargs, made = sweep_args(sample, info.domain, lib, kind)
        except _Skip:
            return None
        if not made:
            return None
        if info.out_of is not None:
            functional = TABLE[info.out_of].op if lib is ptl else _op_of(lib, info.out_of)
            expected, err = _call(functional, args, kwargs, lib)
            if err is not None:
                return None
            kwargs["out"] = _out_tensors(expected, kind, lib)
        res, err = _call(op, args, kwargs, lib)
        runs.append((res, err, args, kwargs))
    return runs


SWEEP = sorted(name for name, info in TABLE.items()
               if ptl.float64 in info.dtypes or ptl.float32 in info.dtypes)


@pytest.mark.parametrize("name", SWEEP)
def test_op_on_conj_views_equals_op_on_values(name):
    info = TABLE[name]
    for i, plain, conj in _sweep_cases(info):
        runs = run_pair(info, info.samples[i], plain, conj)
        if runs is None:
            continue
        (want, werr, wargs, wkw), (got, gerr, gargs, gkw) = runs
        what = f"{name} sample {i} {info.samples[i]} {conj}"
        if name in NOT_LIKE_PLAIN:
            continue
        if werr is not None:
            assert gerr is not None, f"{what}: the plain call raised {werr!r}, this did not"
            assert type(gerr) is type(werr) and str(gerr) == str(werr), \
                f"{what}: raised {gerr!r}, the plain call {werr!r}"
            continue
        assert gerr is None, f"{what}: raised {gerr!r}; the plain call did not"
        values = name not in UNINITIALIZED
        _same(got, want, f"{what}: output", values)
        _same([gargs, gkw], [wargs, wkw], f"{what}: argument after the call", values)
        if info.inplace or info.out_of is not None:
            mutated = gargs[0] if info.inplace else gkw["out"]
            assert all(t.is_conj() == t.dtype.is_complex
                       for t in _leaves(mutated) if isinstance(t, ptl.Tensor)), \
                f"{what}: a conj view written through lost its bit"


def _substitute(x, new):
    if isinstance(x, ptl.Tensor):
        return new.get(id(x), x)
    if isinstance(x, (list, tuple)):
        return type(x)(_substitute(y, new) for y in x)
    return x


def _conj_function(info, args, kwargs, leaves, resolve):
    """f(*leaves): the op's floating and complex outputs with each leaf l passed as l.conj()
    (resolved when `resolve`); an in-place op's self is a conj view of a copy of its leaf"""
    def f(*xs):
        new = {}
        for k, (leaf, x) in enumerate(zip(leaves, xs)):
            if info.inplace and args and leaf is args[0]:
                x = x.clone()
            new[id(leaf)] = x.conj().resolve_conj() if resolve else x.conj()
        a = [_substitute(x, new) for x in args]
        kw = {key: _substitute(v, new) for key, v in kwargs.items()}
        out = info.grad_call(info.op, *a, **kw) if info.grad_call else info.op(*a, **kw)
        if info.grad_outputs is not None:
            out = info.grad_outputs(out)
        outs = out if isinstance(out, (list, tuple)) else (out,)
        return tuple(o for o in outs if isinstance(o, ptl.Tensor)
                     and (o.is_floating_point() or o.is_complex()))
    return f


def _passes(f, leaves):
    try:
        return ptl.autograd.gradcheck(f, leaves, raise_exception=False)
    except Exception:   # noqa: BLE001  (the op or its derivative refuses complex inputs)
        return False


GRAD_SWEEP = [name for name in SWEEP if TABLE[name].grad == "check"]


@pytest.mark.parametrize("name", GRAD_SWEEP)
def test_gradcheck_of_ops_on_conj_views(name):
    """Where gradcheck passes for the op on resolved conjugates, it passes through conj views
    (x.conj(), and x.mH of a transposed leaf)."""
    info = TABLE[name]
    for sample in info.gradcheck_samples()[:1]:
        for kind in ("plain", "mT"):
            try:
                args, kwargs, made = sweep_args(sample, info.domain, ptl, kind)
            except _Skip:
                continue
            leaves = [t for t in _leaves([args, kwargs])
                      if isinstance(t, ptl.Tensor) and t.dtype == ptl.complex128]
            if not made or not leaves or any(t.numel() == 0 for t in leaves):
                continue
            for t in leaves:
                t.requires_grad_(True)
            if not _passes(_conj_function(info, args, kwargs, leaves, True), leaves):
                continue
            f = _conj_function(info, args, kwargs, leaves, False)
            assert ptl.autograd.gradcheck(f, leaves), f"{name}{sample} {kind}"


@torch_ref
@pytest.mark.parametrize("name", SWEEP)
def test_op_on_conj_views_as_torch(name):
    """torch 2.13's op on the same conj views: the same is_conj() of complex results, the
    same values where the op on plain values agrees with torch's, and an error where torch
    refuses the conj view but not the plain values."""
    info = TABLE[name]
    try:
        _op_of(torch, name)
    except (AttributeError, RuntimeError):
        pytest.skip(f"torch has no aten::{name}")
    for i, plain, conj in _sweep_cases(info):
        ours = run_pair(info, info.samples[i], plain, conj)
        try:
            theirs = run_pair(info, info.samples[i], plain, conj, torch)
        except Exception:   # noqa: BLE001  (arguments torch does not take)
            continue
        if ours is None or theirs is None:
            continue
        what = f"{name} sample {i} {info.samples[i]} {conj}"
        (op_, oerr, _, _), (oc, ocerr, _, _) = ours
        (tp, terr, _, _), (tc, tcerr, _, _) = theirs
        if terr is None and tcerr is not None:
            assert ocerr is not None and type(ocerr) is type(tcerr), \
                f"{what}: torch raises {tcerr!r} on the conj view, this gave {ocerr!r}"
        if oerr is not None or terr is not None or ocerr is not None or tcerr is not None:
            continue
        got, want = _leaves(oc), _leaves(tc)
        if len(got) != len(want) or len(_leaves(op_)) != len(got):
            continue
        for k, (a, b, p, q) in enumerate(zip(got, want, _leaves(op_), _leaves(tp))):
            if (isinstance(b, torch.Tensor) and b.is_complex() and isinstance(a, ptl.Tensor)
                    and p.is_conj() == q.is_conj() and name not in CONJ_RESULT):
                assert a.is_conj() == b.is_conj(), \
                    f"{what}: output {k} is_conj() {a.is_conj()}, torch's {b.is_conj()}"
        try:
            _same(op_, tp, what, name not in UNINITIALIZED)
        except AssertionError:   # the op differs from torch's on plain values already
            continue
        _same(oc, tc, f"{what}: against torch", name not in UNINITIALIZED)

