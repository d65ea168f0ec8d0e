"""autograd.forward_ad: dual levels, make_dual / unpack_dual tangents against NumPy float64
(analytic derivatives) and torch.autograd.forward_ad, and PyTorch's errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

fwAD = ptl.autograd.forward_ad


def _t(a):
    return ptl.from_numpy(np.array(a, dtype=np.float64))


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_tangent_of_pointwise_and_reductions(shape):
    rng = np.random.default_rng(0)
    x, tx = rng.standard_normal(shape), rng.standard_normal(shape)
    w, tw = rng.standard_normal(shape[-1:]), rng.standard_normal(shape[-1:])
    with fwAD.dual_level():
        dx, dw = fwAD.make_dual(_t(x), _t(tx)), fwAD.make_dual(_t(w), _t(tw))
        y = dx.sin() * dw + dx.exp()          # w broadcasts over x's rows
        s = y.sum()
        py, ty = fwAD.unpack_dual(y)
        ps, ts = fwAD.unpack_dual(s)
    dy = np.cos(x) * tx * w + np.sin(x) * tw + np.exp(x) * tx
    np.testing.assert_allclose(ty.numpy(), dy, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(py.numpy(), np.sin(x) * w + np.exp(x), rtol=1e-12)
    np.testing.assert_allclose(ts.numpy(), dy.sum(), rtol=1e-12, atol=1e-12)
    assert not py.requires_grad and ty.shape == py.shape


def test_matmul_non_contiguous_tangent_and_dual_itself():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    ta = rng.standard_normal((4, 3)).T            # non-contiguous tangent
    tangent = _t(ta.T).t()
    with fwAD.dual_level():
        da = fwAD.make_dual(_t(a), tangent)
        assert fwAD.unpack_dual(da).tangent is tangent
        assert np.shares_memory(fwAD.unpack_dual(da).primal.numpy(), da.detach().numpy())
        out = fwAD.unpack_dual(da @ _t(b)).tangent
        # a tensor that depends on no dual has no tangent
        assert fwAD.unpack_dual(_t(b) * 2).tangent is None
    np.testing.assert_allclose(out.numpy(), ta @ b, rtol=1e-12)
    assert fwAD.unpack_dual(da).tangent is None   # forgotten with the level


def test_primal_requiring_grad_keeps_its_graph():
    w = ptl.randn(3, dtype=ptl.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(w, ptl.ones(3, dtype=ptl.float64))
        primal, tangent = fwAD.unpack_dual(d * 3)
    assert primal.requires_grad
    primal.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 3.0)
    np.testing.assert_allclose(tangent.numpy(), 3.0)


def test_levels_and_errors():
    primal, tangent = fwAD.unpack_dual(ptl.ones(2))
    assert tangent is None and type(fwAD.unpack_dual(primal)).__name__ == "UnpackedDualTensor"
    with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but "
                                           "no level exists, make sure to enter_dual_level\\(\\)"
                                           " first."):
        fwAD.make_dual(ptl.ones(2), ptl.ones(2))
    with pytest.raises(RuntimeError, match="Dual level must be a positive number."):
        fwAD.exit_dual_level()
    with fwAD.dual_level() as level:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                             "but got: torch.int64"):
            fwAD.make_dual(ptl.ones(2, dtype=ptl.int64), ptl.ones(2))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or "
                                             "complex, but got: torch.int64"):
            fwAD.make_dual(ptl.ones(2), ptl.ones(2, dtype=ptl.int64))
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given "
                                               r"forward gradient is of size \[4\]\."):
            fwAD.make_dual(ptl.ones(3), ptl.ones(4))
        d = fwAD.make_dual(ptl.ones(2), ptl.ones(2))
        with pytest.raises(RuntimeError, match="Making a dual Tensor based on a Tensor that "
                                               "already has a forward gradient at the same "
                                               "level 0 is not supported."):
            fwAD.make_dual(d, ptl.ones(2))
        with pytest.raises(RuntimeError, match="Trying to exit a forward AD level that was not "
                                               "the last one"):
            fwAD.exit_dual_level(level=3)
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level(level=0)

    @fwAD.dual_level()
    def inside():
        return fwAD.unpack_dual(fwAD.make_dual(ptl.ones(1), ptl.ones(1)) * 2).tangent
    assert inside().tolist() == [2.0]
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(ptl.ones(2), ptl.ones(2))


@torch_ref
@pytest.mark.parametrize("case", ["tanh-mm", "softmax", "norm", "div-pow", "layer"])
def test_tangents_match_torch(case):
    rng = np.random.default_rng(2)
    x, tx = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    w, tw = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    fns = {"tanh-mm": lambda lib, a, b: (a @ b).tanh(),
           "softmax": lambda lib, a, b: lib.softmax(a * 2, dim=-1) + b.sum(),
           "norm": lambda lib, a, b: lib.linalg.vector_norm(a, dim=0) * b[0],
           "div-pow": lambda lib, a, b: (a.pow(2) + 1) / (b[:3, :4].abs() + 1),
           "layer": lambda lib, a, b: lib.nn.functional.layer_norm(a, (4,), b[0], b[1])}
    got = {}
    for lib in (ptl, torch):
        fw = lib.autograd.forward_ad
        T = (lambda a: ptl.from_numpy(a.copy())) if lib is ptl else torch.from_numpy
        with fw.dual_level():
            da, db = fw.make_dual(T(x), T(tx)), fw.make_dual(T(w), T(tw))
            p, t = fw.unpack_dual(fns[case](lib, da, db))
            got[lib] = (p.detach().numpy().copy(), t.numpy().copy())
    for ours, theirs in zip(got[ptl], got[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
