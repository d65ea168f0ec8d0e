"""torch.batch_norm_update_stats (a training batch_norm's statistics and the running stats'
update), torch.norm_except_dim (weight_norm's norm) and torch.native_norm (torch.norm under
ATen's name): against NumPy in float64 on random shapes, gradcheck where differentiable,
PyTorch's values and messages (tests/golden.py)."""
import numpy as np
import pytest

import golden
import pytorchlite as ptl
from helpers import torch


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 2, 2, 2), (1, 3, 1)])
@pytest.mark.parametrize("momentum", [0.1, 0.0, 1.0])
def test_batch_norm_update_stats_matches_numpy(shape, momentum):
    a = _rand(*shape, seed=len(shape))
    c = shape[1]
    rows = np.moveaxis(a, 1, 0).reshape(c, -1)
    n = rows.shape[1]
    rm0, rv0 = _rand(c, seed=8), np.abs(_rand(c, seed=9))
    rm, rv = ptl.tensor(rm0), ptl.tensor(rv0)
    mean, var = ptl.batch_norm_update_stats(ptl.tensor(a), rm, rv, momentum)
    np.testing.assert_allclose(mean.numpy(), rows.mean(1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(var.numpy(), rows.var(1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rm.numpy(), (1 - momentum) * rm0 + momentum * rows.mean(1),
                               rtol=1e-12, atol=1e-14)
    unbiased = rows.var(1, ddof=1) if n > 1 else np.full(c, np.nan)
    np.testing.assert_allclose(rv.numpy(), (1 - momentum) * rv0 + momentum * unbiased,
                               rtol=1e-12, atol=1e-14)


def test_batch_norm_update_stats_like_torch():
    a = _rand(2, 3, 4, seed=1)

    def run(lib):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        mean, var = lib.batch_norm_update_stats(lib.tensor(a), rm, rv, 0.1)
        only_mean = lib.batch_norm_update_stats(lib.tensor(a), rm.clone(), None, 0.3)
        none = lib.batch_norm_update_stats(lib.tensor(a[:, :, :1]), None, None, 0.3)
        one_row = lib.ones(3, dtype=lib.float64)
        lib.batch_norm_update_stats(lib.tensor(a[:1, :, :1]), None, one_row, 0.5)
        return {"mean": mean, "var": var, "running_mean": rm, "running_var": rv,
                "only mean": only_mean[1], "no stats": none[0], "one row": one_row}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-14)


def test_batch_norm_update_stats_no_gradient():
    x = ptl.tensor(_rand(4, 2), requires_grad=True)
    mean, var = ptl.batch_norm_update_stats(x, None, None, 0.1)
    assert mean.grad_fn is None and var.grad_fn is None


BN_ERRORS = {
    "1-d input": lambda lib: lib.batch_norm_update_stats(lib.zeros(3), lib.zeros(3),
                                                         lib.ones(3), 0.1),
    "int input": lambda lib: lib.batch_norm_update_stats(lib.zeros(2, 3, dtype=lib.int32),
                                                         lib.zeros(3), lib.ones(3), 0.1),
    "mixed dtype": lambda lib: lib.batch_norm_update_stats(lib.zeros(2, 3, dtype=lib.float64),
                                                           lib.zeros(3), lib.ones(3), 0.1),
    "empty": lambda lib: lib.batch_norm_update_stats(lib.zeros(0, 3, 4), lib.zeros(3),
                                                     lib.ones(3), 0.1),
    "string momentum": lambda lib: lib.batch_norm_update_stats(lib.zeros(2, 3), None, None,
                                                               "a"),
}


@pytest.mark.parametrize("what", list(BN_ERRORS))
def test_batch_norm_update_stats_errors(what):
    def same(ours, theirs):
        return ours == "\n".join(ln for ln in theirs.split("\n") if "didn't match" not in ln)
    golden.assert_raises(lambda: BN_ERRORS[what](ptl), lambda: BN_ERRORS[what](torch),
                         compare=same)


def _np_norm_except_dim(a, p, dim):
    if dim == -1:
        return (np.abs(a) ** p).sum() ** (1 / p)
    others = tuple(k for k in range(a.ndim) if k != dim)
    return (np.abs(a) ** p).sum(axis=others, keepdims=True) ** (1 / p)


@pytest.mark.parametrize("shape,dim", [((4, 3, 2), 0), ((4, 3, 2), 1), ((4, 3, 2), 2),
                                       ((4, 3, 2), -1), ((5,), 0), ((3, 0), 0),
                                       ((2, 3), -2)])
@pytest.mark.parametrize("p", [2, 1, 3])
def test_norm_except_dim_matches_numpy(shape, dim, p):
    a = _rand(*shape, seed=3)
    got = ptl.norm_except_dim(ptl.tensor(a), p, dim)
    np.testing.assert_allclose(got.numpy(), _np_norm_except_dim(a, p, dim % len(shape)
                                                                 if dim != -1 else -1),
                               rtol=1e-12, atol=1e-14)


def test_norm_except_dim_strided_gradcheck():
    a = ptl.tensor(_rand(3, 4, seed=4)).t().requires_grad_()
    assert ptl.autograd.gradcheck(lambda v: ptl.norm_except_dim(v, 2, 1), (a,))
    assert ptl.autograd.gradcheck(lambda v: ptl.norm_except_dim(v, 3, -1), (a,))


def test_norm_except_dim_like_torch():
    a = _rand(2, 3, 4, seed=5)

    def run(lib):
        x = lib.tensor(a)
        return {"default": lib.norm_except_dim(x), "pow 3 dim 1": lib.norm_except_dim(x, 3, 1),
                "dim -1": lib.norm_except_dim(x, 2, -1), "last": lib.norm_except_dim(x, 2, 2),
                "pow 0": lib.norm_except_dim(x, 0, 0),
                "vector": lib.norm_except_dim(lib.tensor([3.0, -4.0]), 2, 0)}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-14)


NED_ERRORS = {
    "dim 3": lambda lib: lib.norm_except_dim(lib.zeros(2, 3, 4), 2, 3),
    "0-dim": lambda lib: lib.norm_except_dim(lib.tensor(3.0), 2, 0),
    "int": lambda lib: lib.norm_except_dim(lib.zeros(2, 3, dtype=lib.int64), 2, 0),
}


@pytest.mark.parametrize("what", list(NED_ERRORS))
def test_norm_except_dim_errors(what):
    golden.assert_raises(lambda: NED_ERRORS[what](ptl), lambda: NED_ERRORS[what](torch))


@pytest.mark.parametrize("p", [2, 1, 3, 0, float("inf"), -float("inf")])
def test_native_norm_matches_numpy(p):
    a = _rand(3, 4, seed=6)
    x = ptl.tensor(a)
    flat = np.abs(a).ravel()
    want = {0: np.count_nonzero(flat), float("inf"): flat.max(),
            -float("inf"): flat.min()}.get(p)
    want = (flat ** p).sum() ** (1 / p) if want is None else want
    np.testing.assert_allclose(ptl.native_norm(x, p).numpy(), want, rtol=1e-12)
    got = ptl.native_norm(x, p, [1], True, None)
    rows = [np.linalg.norm(r, p) for r in a]
    np.testing.assert_allclose(got.numpy(), np.array(rows)[:, None], rtol=1e-12)


def test_native_norm_overloads_and_gradcheck():
    x = ptl.tensor(_rand(2, 3, seed=7), requires_grad=True)
    assert ptl.native_norm(x).dtype == ptl.float64
    assert ptl.native_norm(x.float(), None, [0], False, ptl.float64).dtype == ptl.float64
    np.testing.assert_allclose(ptl.native_norm(x, None, [0], False, None).detach().numpy(),
                               np.linalg.norm(x.detach().numpy(), axis=0), rtol=1e-12)
    assert ptl.autograd.gradcheck(lambda v: ptl.native_norm(v, 3, [1], False, None), (x,))


def test_native_norm_like_torch_sparse():
    """PyTorch's native_norm takes only sparse tensors (a strided one raises
    NotImplementedError there): its values for the tensor made sparse."""
    a = _rand(2, 3, seed=8)

    def run(lib):
        x = lib.tensor(a)
        if lib is torch:
            x = x.to_sparse()
        return {f"p {p}": lib.native_norm(x, p) for p in (2, 1, 0, float("inf"))}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-14)


def test_native_norm_errors():
    """PyTorch's message for an integer tensor (made sparse there, as above)."""
    golden.assert_raises(lambda: ptl.native_norm(ptl.zeros(2, dtype=ptl.int32)),
                         lambda: torch.native_norm(torch.zeros(2, dtype=torch.int32).to_sparse()))
