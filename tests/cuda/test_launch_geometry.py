"""The host build of the pointwise kernels' offset calculator and launch geometry
(src/cuda/launch_geometry.h, compiled by nvcc for the device and by gcc for these hooks):
offsets against NumPy's unravel_index, the launch (grid, block, vector width) against a
brute force.  Needs no device and no nvcc: the hooks exist in every build."""
import math

import numpy as np
import pytest

from pytorchlite import _C

BLOCK = 256


def random_geometry(rng, ntensors):
    """sizes, one stride list per operand (elements): contiguous, transposed, broadcast
    (stride 0), sliced (stride > 1) or negative, over shapes including 0-dim and size 1."""
    ndim = int(rng.integers(0, 6))
    sizes = [int(rng.integers(1, 5)) for _ in range(ndim)]
    strides = []
    for _ in range(ntensors):
        kind = rng.integers(0, 5)
        contiguous = [int(np.prod(sizes[d + 1:])) for d in range(ndim)]
        if kind == 0 or ndim == 0:
            st = contiguous
        elif kind == 1:
            perm = rng.permutation(ndim)
            st = [contiguous[p] for p in perm]
        elif kind == 2:
            st = [0 if rng.integers(0, 2) else c for c in contiguous]
        elif kind == 3:
            st = [c * int(rng.integers(1, 4)) for c in contiguous]
        else:
            st = [-c if rng.integers(0, 2) else c for c in contiguous]
        strides.append(st)
    return sizes, strides


def test_offsets_match_numpy_unravel_on_random_geometries():
    rng = np.random.default_rng(0)
    for _ in range(300):
        ntensors = int(rng.integers(1, 5))
        sizes, strides = random_geometry(rng, ntensors)
        numel = int(np.prod(sizes))
        itemsize = int(rng.choice([1, 2, 4, 8]))
        byte_strides = [[s * itemsize for s in st] for st in strides]
        for linear in {0, numel - 1, int(rng.integers(0, numel))}:
            idx = np.unravel_index(linear, sizes) if sizes else ()
            want = tuple(int(np.dot(idx, st)) if sizes else 0 for st in byte_strides)
            assert _C._cuda_offsets_for_testing(sizes, byte_strides, linear) == want, \
                (sizes, byte_strides, linear)


def test_offsets_of_a_0dim_tensor_are_zero_and_a_size0_one_has_no_element():
    assert _C._cuda_offsets_for_testing([], [[], []], 0) == (0, 0)
    with pytest.raises(IndexError, match="linear index out of range"):
        _C._cuda_offsets_for_testing([3, 0, 2], [[0, 2, 1]], 0)
    with pytest.raises(IndexError, match="linear index out of range"):
        _C._cuda_offsets_for_testing([2], [[1]], 2)


def test_offsets_of_a_broadcast_and_a_transposed_operand():
    # out [2, 3] contiguous, a [3] broadcast over dim 0, b = c.T of a [3, 2]
    sizes = [2, 3]
    strides = [[12, 4], [0, 4], [4, 8]]
    got = [_C._cuda_offsets_for_testing(sizes, strides, i) for i in range(6)]
    assert got == [(0, 0, 0), (4, 4, 8), (8, 8, 16), (12, 0, 4), (16, 4, 12), (20, 8, 20)]


def brute_launch(sizes, byte_strides, addresses, itemsize, max_blocks):
    numel = int(np.prod(sizes))
    index = np.stack(np.unravel_index(np.arange(numel), sizes)) if sizes else None
    dense = not sizes or all(
        np.array_equal(np.asarray(st) @ index, np.arange(numel) * itemsize)
        for st in byte_strides)
    vec = 1
    if dense:
        for v in (16, 8, 4, 2):
            if v * itemsize <= 16 and all(a % (v * itemsize) == 0 for a in addresses):
                vec = v
                break
    grid = min(math.ceil(math.ceil(numel / vec) / BLOCK), max_blocks)
    return grid, BLOCK, vec


def test_launch_geometry_matches_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(400):
        ntensors = int(rng.integers(1, 4))
        sizes, strides = random_geometry(rng, ntensors)
        if rng.integers(0, 3) == 0:      # large enough to cap the grid
            sizes = [int(rng.integers(1, 70000))]
            strides = [[1] if rng.integers(0, 4) else [2] for _ in range(ntensors)]
        itemsize = int(rng.choice([1, 2, 4, 8]))
        byte_strides = [[s * itemsize for s in st] for st in strides]
        addresses = [int(rng.integers(0, 1 << 20)) * itemsize for _ in range(ntensors)]
        max_blocks = int(rng.choice([1, 3, 132 * 32]))
        got = _C._cuda_launch_for_testing(sizes, byte_strides, addresses, itemsize, max_blocks)
        want = brute_launch(sizes, byte_strides, addresses, itemsize, max_blocks)
        assert got == want, (sizes, byte_strides, addresses, itemsize, max_blocks)
        grid, block, vec = got
        numel = int(np.prod(sizes))
        # every element has a thread unless the grid is capped (the kernels loop then)
        assert grid == max_blocks or grid * block * vec >= numel


def test_launch_geometry_widest_loads_and_empty_tensors():
    # 16-byte aligned float32: four per load; float64: two; float16: eight
    assert _C._cuda_launch_for_testing([1024], [[4], [4]], [0, 4096], 4, 100) == (1, 256, 4)
    assert _C._cuda_launch_for_testing([1024], [[8], [8]], [0, 4096], 8, 100) == (2, 256, 2)
    assert _C._cuda_launch_for_testing([4096], [[2]], [32], 2, 100) == (2, 256, 8)
    # one operand off by 4 bytes: float32 one at a time
    assert _C._cuda_launch_for_testing([1024], [[4], [4]], [0, 4100], 4, 100) == (4, 256, 1)
    # transposed [2, 3]: strided, one element per thread
    assert _C._cuda_launch_for_testing([2, 3], [[12, 4], [4, 8]], [0, 0], 4, 100) == \
        (1, 256, 1)
    # size 0: nothing to launch
    assert _C._cuda_launch_for_testing([5, 0], [[0, 4]], [0], 4, 100)[0] == 0
    # 0-dim: one element, one block
    assert _C._cuda_launch_for_testing([], [[]], [4], 4, 100) == (1, 256, 1)


def test_hooks_reject_bad_geometry():
    with pytest.raises(ValueError, match="one stride per dimension"):
        _C._cuda_offsets_for_testing([2, 3], [[1]], 0)
    with pytest.raises(ValueError, match="too many dimensions or operands"):
        _C._cuda_offsets_for_testing([1] * 17, [[0] * 17], 0)
    with pytest.raises(ValueError, match="too many dimensions or operands"):
        _C._cuda_offsets_for_testing([2], [[1]] * 5, 0)
    with pytest.raises(ValueError, match=r"itemsize must be in \[1, 16\]"):
        _C._cuda_launch_for_testing([2], [[4]], [0], 32, 1)


def test_the_pointwise_dtype_table():
    """src/cuda/pointwise_dtypes.h's list as register_cuda.c asks it (Note [CUDA integer
    pointwise]): every kernel takes the float dtypes but gcd and lcm, which take the five
    integer dtypes alone; add, mul, neg, relu, abs and sign take both; the math family and the
    predicates (the last four kernels) take every dtype; no other kernel takes bool."""
    floats = {"float32", "float64", "float16", "bfloat16"}
    ints = {"uint8", "int8", "int16", "int32", "int64"}
    table = [set(t) for t in _C._cuda_pointwise_dtypes_for_testing()]
    assert table[0] == floats | ints                      # PTL_CUDA_OP_ADD, first in the enum
    assert table[-4:] == [floats | ints | {"bool"}] * 4   # MATH, MATH2, MATH3, PREDICATE
    table = table[:-4]
    assert sum(t == floats | ints for t in table) == 6
    assert sum(t == ints for t in table) == 2
    assert all(t in (floats, ints, floats | ints) for t in table)
