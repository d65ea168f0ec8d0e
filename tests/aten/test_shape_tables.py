"""The offset tables of flip, roll, repeat, rot90 and diag_embed (shape.c, Note [Gather by
offset tables]) and shape_gather.c's test of a reversed innermost table: filled by a loop of
their own (table_line), taken from the CPU allocator, and scanned in blocks of 64 entries
and a tail (rows at and across each block's end).
Values against NumPy, exact, on 1 and 2 threads; 0-dim, size-0, non-contiguous and
broadcast (stride-0) inputs."""
import numpy as np
import pytest

import pytorchlite as ptl

from helpers import assert_close, make, num_threads

# row lengths at and across the scan's blocks of 64 entries, and long 1-D rows
LENGTHS = [1, 2, 3, 63, 64, 65, 127, 128, 129, 191, 192, 193, 4096, 65537]
DTYPES = [ptl.int8, ptl.int16, ptl.float32, ptl.float64, ptl.int64]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", LENGTHS)
def test_flip_of_vectors(n, threads):
    with num_threads(threads):
        for dt in DTYPES:
            t, a = make((n,), dt, seed=n)
            assert_close(t.flip(0), np.flip(a, 0), dtype=dt)
            assert_close(t[::2].flip(0), np.flip(a[::2], 0), dtype=dt)
            assert_close(t.view(1, n).flip(1), np.flip(a.reshape(1, n), 1), dtype=dt)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [63, 64, 65, 129, 193])
def test_tables_that_are_not_reversed(n, threads):
    """roll, repeat and rot90 tables are no reversed walk (the scan stops in its first block
    or, for a row shorter than 64, its tail); roll by one of two elements is one"""
    with num_threads(threads):
        for dt in (ptl.int16, ptl.float32, ptl.int64):
            t, a = make((3, n), dt, seed=n)
            for s in (1, n - 1, 64, n // 2):
                assert_close(t.roll(s, 1), np.roll(a, s, 1), dtype=dt)
            assert_close(t.repeat(2, 3), np.tile(a, (2, 3)), dtype=dt)
            assert_close(t.flip(0), np.flip(a, 0), dtype=dt)
            assert_close(t.flip((0, 1)), np.flip(a), dtype=dt)
            assert_close(ptl.rot90(t, 1, (0, 1)), np.rot90(a, 1, (0, 1)), dtype=dt)
        t, a = make((5, 2), ptl.float32)
        assert_close(t.roll(1, 1), np.roll(a, 1, 1), dtype=ptl.float32)


def test_tables_of_empty_scalar_and_broadcast_inputs():
    t, a = make((), ptl.float32)
    assert_close(t.flip([]), a, dtype=ptl.float32)
    for shape in [(0,), (3, 0), (0, 70)]:
        t, a = make(shape, ptl.float64)
        assert_close(t.flip(-1), np.flip(a, -1), dtype=ptl.float64)
        assert_close(t.roll(1, -1), np.roll(a, 1, -1), dtype=ptl.float64)
    t, a = make((1, 130), ptl.float32)
    e, ea = t.expand(4, 130), np.broadcast_to(a, (4, 130))
    assert_close(e.flip(0), np.flip(ea, 0), dtype=ptl.float32)
    assert_close(e.flip(1), np.flip(ea, 1), dtype=ptl.float32)
    assert_close(e.flip((0, 1)), np.flip(ea), dtype=ptl.float32)
    t, a = make((70, 3), ptl.int32, layout="transposed")
    assert_close(t.flip(1), np.flip(a, 1), dtype=ptl.int32)
    assert_close(ptl.diag_embed(t), np.stack([np.diag(r) for r in a]), dtype=ptl.int32)


def test_tables_come_back_to_the_allocator():
    t = ptl.arange(1 << 16, dtype=ptl.float32)
    before = ptl.cpu.memory_allocated()
    for _ in range(3):
        out = t.flip(0)
    del out
    assert ptl.cpu.memory_allocated() == before
    np.testing.assert_array_equal(t.flip(0).numpy(), np.arange(1 << 16, dtype=np.float32)[::-1])
