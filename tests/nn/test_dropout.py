"""F.dropout2d / nn.Dropout2d on inputs that are not 4-D: PyTorch's warnings, and its
(N, C, ...) reading of them (2-D: each element on its own; 3-D: whole rows of L)."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F

from helpers import torch

DEPRECATED_2D = (
    "dropout2d: Received a 2-D input to dropout2d, which is deprecated and will result in an "
    "error in a future release. To retain the behavior and silence this warning, please use "
    "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs "
    "with 2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D "
    "or 4D inputs).")
THREE_D = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
    "dim. This behavior will change in a future release to interpret the input as one without "
    "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
    "behavior, please switch to using dropout1d instead.")


def messages(fn):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in record if w.category is UserWarning]


def test_two_dim_input_warns_and_drops_elements():
    ptl.manual_seed(0)
    out, msgs = messages(lambda: ptl.nn.Dropout2d(0.5)(ptl.ones(40, 50)))
    assert msgs == [DEPRECATED_2D]
    a = out.numpy()
    assert set(np.unique(a).tolist()) <= {0.0, 2.0}
    assert 0.3 < (a == 0).mean() < 0.7
    assert len({tuple(row) for row in a}) > 1   # not one mask per row or column


def test_three_dim_input_is_n_c_l():
    ptl.manual_seed(0)
    out, msgs = messages(lambda: F.dropout2d(ptl.ones(8, 16, 5), 0.5))
    assert msgs == [THREE_D]
    a = out.numpy()
    assert np.all(a.min(-1) == a.max(-1))   # whole rows of L kept or zeroed
    assert len(np.unique(a[:, :, 0].min(1))) <= 2 and 0 < (a == 0).mean() < 1


def test_four_dim_input_does_not_warn():
    _, msgs = messages(lambda: F.dropout2d(ptl.ones(2, 3, 4, 4), 0.5))
    assert msgs == []


def test_eval_mode_and_one_dim():
    x = ptl.ones(3, 4)
    _, msgs = messages(lambda: F.dropout2d(x, 0.5, training=False))
    assert msgs == [DEPRECATED_2D]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert F.dropout2d(x, 0.5, training=False) is x
        with pytest.raises(RuntimeError, match="^Feature dropout requires at least 2 dimensions "
                                               "in the input$"):
            F.dropout2d(ptl.ones(3), 0.5)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 3, 4, 4), (1, 2, 3, 4, 4)])
def test_warnings_as_torch(shape):
    _, mine = messages(lambda: F.dropout2d(ptl.ones(*shape), 0.5))
    _, ref = messages(lambda: torch.nn.functional.dropout2d(torch.ones(*shape), 0.5))
    assert mine == ref
