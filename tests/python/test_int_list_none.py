"""None for an int list argument, as PyTorch's argument parser reads it: where the schema's
default is [] (amax/amin's dim, roll's dims) None is that default; where the list has no
default, or another one, None is refused with a TypeError."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

X = np.arange(24.0).reshape(2, 3, 4) - 7.5


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_none_is_the_empty_default(layout):
    x = ptl.tensor(X)
    a = X
    if layout == "transposed":
        x, a = x.transpose(0, 2), np.swapaxes(X, 0, 2)
    assert ptl.amax(x, None).item() == a.max()
    assert x.amin(None).item() == a.min()
    assert ptl.amax(x, dim=None, keepdim=True).shape == (1, 1, 1)
    np.testing.assert_array_equal(ptl.amin(x, None, True).numpy(), a.min(keepdims=True))
    rolled = np.roll(a, 5)   # no dims: the flattened tensor rolls
    np.testing.assert_array_equal(ptl.roll(x, 5, None).numpy(), rolled)
    np.testing.assert_array_equal(x.roll(5, dims=None).numpy(), rolled)
    np.testing.assert_array_equal(x.roll((5,), None).numpy(), rolled)


def test_none_for_a_scalar_tensor_and_an_empty_one():
    assert ptl.amax(ptl.tensor(3.0), None).item() == 3.0
    assert ptl.roll(ptl.tensor(3.0), 1, None).item() == 3.0
    assert ptl.roll(ptl.zeros(0, 3), 2, None).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        ptl.amax(ptl.zeros(0, 3), None)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.logsumexp(x, None),             # int[1] dim: no default
    lambda lib, x: lib.flip(x, None),                  # int[] dims: no default
    lambda lib, x: lib.max_pool2d(x, 2, None, None),   # int[2] padding=0
    lambda lib, x: x.repeat(None),
    lambda lib, x: x.permute(None),
])
def test_none_is_refused_without_an_empty_default(call):
    for lib in ([torch] if torch is not None else []) + [ptl]:
        with pytest.raises(TypeError, match="NoneType"):
            call(lib, lib.ones(1, 4, 4))


@torch_ref
def test_values_match_torch():
    for name, args in [("amax", (None,)), ("amin", (None, True)), ("roll", (3, None))]:
        ours = getattr(ptl, name)(ptl.tensor(X), *args)
        theirs = getattr(torch, name)(torch.tensor(X), *args)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
