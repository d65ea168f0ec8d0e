"""searchsorted and bucketize on the CUDA path (src/cuda/search_plan.c and search.cu over
search_plan.h's per-thread binary search; Note [CUDA searchsorted]), checked on the host: with
_C._cuda_kernel_emulation on, summary.c's kernels on CPU tensors take the device's path (the
sorter's range read back, one emulated thread per value) and must give the CPU kernel's
positions exactly and NumPy's where NumPy defines them, for 1-D and batched boundaries,
left and right, a sorter, int32 and int64 results, every real dtype pair, ties, NaN and
+-inf, 0-dim and size-0 values, under tunings whose grids hold one block and many; the CPU
kernel's errors.  Needs no device."""
import numpy as np
import pytest

import pytorchlite as ptl
from kernel_emulation import TUNINGS, emulated

DTYPES = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16, ptl.bfloat16,
          ptl.float32, ptl.float64]


def sorted_values(rng, shape, dtype):
    v = np.sort(rng.integers(0, 9, size=shape), axis=-1)
    return ptl.tensor(v).to(dtype)


def queries(rng, shape, dtype, special):
    v = rng.integers(-1, 11, size=shape).astype(np.float64)
    if special and v.size and dtype.is_floating_point:
        v.reshape(-1)[0] = np.nan
        v.reshape(-1)[-1] = np.inf
    return ptl.tensor(v).to(dtype)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("bdt", DTYPES, ids=str)
def test_positions_are_the_cpu_kernels(tuning, bdt):
    rng = np.random.default_rng(0)
    for vdt in (bdt, ptl.float64, ptl.int64):
        for bshape, vshape in (((7,), (5,)), ((7,), (3, 40)), ((3, 6), (3, 4)),
                               ((2, 3, 5), (2, 3, 33)), ((6,), ()), ((4,), (0,)), ((0,), (3,))):
            b = sorted_values(rng, bshape, bdt)
            v = queries(rng, vshape, vdt, special=True)
            calls = [lambda: ptl.searchsorted(b, v), lambda: ptl.searchsorted(b, v, right=True),
                     lambda: ptl.searchsorted(b, v, side="right", out_int32=True),
                     lambda: ptl.searchsorted(b, v[..., ::2] if v.dim() else v)]
            if b.dim() == 1:
                calls += [lambda: ptl.bucketize(v, b), lambda: ptl.bucketize(v, b, right=True),
                          lambda: ptl.searchsorted(b, 3), lambda: ptl.bucketize(2.5, b)]
            if b.dim() == 1 and b.numel():
                perm = ptl.tensor(rng.permutation(b.numel()))
                shuffled = ptl.empty_like(b)
                shuffled[perm] = b
                calls.append(lambda: ptl.searchsorted(shuffled, v, sorter=perm))
            for fn in calls:
                want = fn()
                with emulated(TUNINGS[tuning]) as ran:
                    got = fn()
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got.numpy(), want.numpy())
                assert ran["search"] == (1 if got.numel() else 0)


def test_positions_match_numpy():
    rng = np.random.default_rng(1)
    b = np.sort(rng.standard_normal(50))
    v = rng.standard_normal((4, 30))
    with emulated(TUNINGS["small"]):
        left = ptl.searchsorted(ptl.tensor(b), ptl.tensor(v))
        right = ptl.searchsorted(ptl.tensor(b), ptl.tensor(v), right=True)
        rows = ptl.searchsorted(ptl.tensor(np.sort(v, 1)), ptl.tensor(v[:, :7]))
    np.testing.assert_array_equal(left.numpy(), np.searchsorted(b, v))
    np.testing.assert_array_equal(right.numpy(), np.searchsorted(b, v, side="right"))
    np.testing.assert_array_equal(rows.numpy(), [np.searchsorted(np.sort(r), r[:7]) for r in v])


def test_errors_are_the_cpu_kernels():
    b = ptl.tensor([3., 1., 2.])
    with emulated(TUNINGS["small"]) as ran:
        with pytest.raises(RuntimeError, match="torch.searchsorted\\(\\): sorter index out of "
                                               "range"):
            ptl.searchsorted(b, ptl.tensor([1.5]), sorter=ptl.tensor([1, 3, 0]))
        with pytest.raises(RuntimeError, match="torch.searchsorted\\(\\): sorter index out of "
                                               "range"):
            ptl.searchsorted(b, ptl.tensor([1.5]), sorter=ptl.tensor([1, -1, 0]))
        with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
            ptl.bucketize(ptl.tensor([1.]), ptl.ones(2, 2))
        with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
            ptl.searchsorted(b, ptl.tensor([1.]), right=True, side="left")
    assert ran["search"] == 0
