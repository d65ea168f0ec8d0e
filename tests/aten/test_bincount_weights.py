"""bincount's typed weight loops (summary.c, Note [Typed bincount]): int64 values with float32
or float64 weights add in index order, so the sums have the bits of NumPy's sequential
np.add.at in the output dtype; contiguous and strided values and weights, minlength, and the
generic loop (int32 values, int64 weights) against np.bincount."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch


@pytest.mark.parametrize("wdt", [np.float32, np.float64], ids=str)
def test_typed_weight_loops_sequential_bits(wdt):
    rng = np.random.default_rng(6)
    for n, hi in [(0, 1), (1, 1), (7, 3), (1000, 10), (100000, 1000)]:
        a = rng.integers(0, hi, 2 * n)
        w = rng.standard_normal(2 * n).astype(wdt)
        for av, wv in [(a, w), (a[::2], w[::2]), (a[1::2], w[:n])]:
            for minlength in (0, hi + 5):
                want = np.zeros(max(minlength, av.max() + 1 if av.size else 0), wdt)
                np.add.at(want, av, wv)
                got = ptl.bincount(ptl.tensor(av), ptl.tensor(wv), minlength)
                assert got.dtype == (ptl.float32 if wdt == np.float32 else ptl.float64)
                np.testing.assert_array_equal(got.numpy(), want)


def test_generic_weight_loop():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 50, 3000).astype(np.int32)
    w = rng.integers(-5, 5, 3000)
    np.testing.assert_array_equal(ptl.bincount(ptl.tensor(a), ptl.tensor(w)).numpy(),
                                  np.bincount(a, w))
    wf = rng.standard_normal(3000).astype(np.float32)
    want = np.zeros(50, np.float32)
    np.add.at(want, a, wf)
    np.testing.assert_array_equal(ptl.bincount(ptl.tensor(a), ptl.tensor(wf)).numpy(), want)


def test_weight_errors():
    assert_raises_like_torch(lambda m: m.bincount(m.tensor([1, 2]), m.ones(3)), RuntimeError,
                             "weights should be 1-d and have the same length as input")
    assert_raises_like_torch(lambda m: m.bincount(m.tensor([1, 2]), m.ones(2), -1),
                             RuntimeError, "minlength should be >= 0")
    assert_raises_like_torch(lambda m: m.bincount(m.tensor([1, -2]), m.ones(2)), RuntimeError,
                             "bincount only supports 1-d non-negative integral inputs.")
