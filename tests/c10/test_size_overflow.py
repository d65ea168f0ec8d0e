"""Sizes, strides and offsets whose byte count does not fit in int64 raise PyTorch's
RuntimeError on every path that allocates or places a tensor over a storage (Note [Storage
bytes] in src/c10/tensor_impl.h), instead of wrapping to a small allocation the kernels
overrun or to strides that alias rows."""
import io
import re

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import assert_close, torch, torch_ref

BIG = 1 << 62


def overflow_msg(sizes, strides=None):
    msg = f"Storage size calculation overflowed with sizes={list(sizes)}"
    if strides is not None:
        msg += f" and strides={list(strides)}"
    return "^" + re.escape(msg) + "$"


# (name, call on a library, the sizes and strides PyTorch names; None: contiguous)
CASES = [
    ("expand_clone", lambda L: L.zeros(1).expand(BIG).clone(), (BIG,), (1,)),
    ("expand_contiguous", lambda L: L.zeros(1).expand(BIG).contiguous(), (BIG,), None),
    ("empty_strided_fill", lambda L: L.empty_strided((BIG,), (1,)).fill_(1), (BIG,), (1,)),
    ("empty_strided_aliasing_rows", lambda L: L.empty_strided((2, 2), (BIG, 1)), (2, 2),
     (BIG, 1)),
    ("empty_strided_outer", lambda L: L.empty_strided((BIG, 2), (2, BIG)), (BIG, 2), (2, BIG)),
    ("empty", lambda L: L.empty(BIG), (BIG,), None),
    ("empty_bytes", lambda L: L.empty(1 << 61, 4), (1 << 61, 4), None),
    ("empty_numel", lambda L: L.empty(1 << 40, 1 << 40), (1 << 40, 1 << 40), None),
    ("zeros", lambda L: L.zeros(BIG), (BIG,), None),
    ("full", lambda L: L.full((1 << 31, 1 << 31), 1.0), (1 << 31, 1 << 31), None),
    ("as_strided", lambda L: L.zeros(4).as_strided((BIG,), (1,)), (BIG,), (1,)),
    ("as_strided_stride", lambda L: L.zeros(4).as_strided((2, 2), (BIG, 1)), (2, 2), (BIG, 1)),
    ("as_strided_offset", lambda L: L.zeros(4).as_strided((2,), (1,), BIG), (2,), (1,)),
    ("adaptive_max_pool2d", lambda L: L.nn.functional.adaptive_max_pool2d(
        L.ones(1, 4, 5), [BIG, BIG]), (1, BIG, BIG), None),
]


@pytest.mark.parametrize("name,call,sizes,strides", CASES, ids=[c[0] for c in CASES])
def test_overflowing_storage_raises(name, call, sizes, strides):
    with pytest.raises(RuntimeError, match=overflow_msg(sizes, strides)):
        call(ptl)


@torch_ref
@pytest.mark.parametrize("name,call,sizes,strides", CASES, ids=[c[0] for c in CASES])
def test_overflowing_storage_message_matches_torch(name, call, sizes, strides):
    with pytest.raises(RuntimeError, match=overflow_msg(sizes, strides)):
        call(torch)


def test_materialising_a_huge_expand_raises():
    # TensorIterator allocates the output with the expanded strides
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with "
                                           rf"sizes=\[{BIG}\]"):
        ptl.zeros(1).expand(BIG) + 1


def test_adaptive_avg_pool2d_output_that_cannot_exist_raises():
    with pytest.raises(RuntimeError, match=overflow_msg((1, BIG, BIG))):
        F.adaptive_avg_pool2d(ptl.ones(1, 4, 5), [BIG, BIG])


def test_adaptive_pool_window_tables_that_cannot_be_allocated_raise():
    with pytest.raises(MemoryError):
        F.adaptive_max_pool2d(ptl.ones(1, 4, 5), [1, 1 << 60])


def test_stride_zero_tensor_with_too_many_elements_raises():
    with pytest.raises(RuntimeError, match=r"^numel: integer multiplication overflow$"):
        ptl.empty_strided((1 << 40, 1 << 40), (0, 0))


def test_huge_expanded_tensor_in_a_checkpoint_is_refused():
    # _rebuild_tensor_v2 of a 1-element storage viewed as (2**62,) with stride 0: a valid
    # geometry whose materialisation cannot be done.  load() counts a tensor's bytes against
    # max_bytes (Note [Checkpoint size limits]), so the file is refused before any use; the
    # same tensor made in memory raises on use (test_materialising_a_huge_expand_raises)
    t = ptl.zeros(1).expand(BIG)
    buf = io.BytesIO()
    ptl.save(t, buf)
    for max_bytes in (None, 2**64 - 1):
        buf.seek(0)
        with pytest.raises(RuntimeError, match=r"is 18446744073709551616 bytes, more than "
                                               r"max_bytes="):
            ptl.load(buf, max_bytes=max_bytes)


@pytest.mark.parametrize("sizes,strides,offset", [
    ((), (), 0), ((0,), (1,), 0), ((2, 0, 3), (0, 5, 1), 7), ((3, 4), (4, 1), 0),
    ((3, 4), (1, 3), 0), ((2, 3), (0, 1), 2)])
def test_storage_bytes_of_valid_geometries(sizes, strides, offset):
    # empty_strided sizes its storage to reach the last element; as_strided over it is in
    # bounds exactly then
    numel = int(np.prod(sizes)) if sizes else 1
    t = ptl.empty_strided(sizes, strides, dtype=ptl.float64)
    assert t.shape == sizes and t.stride() == strides
    base = ptl.zeros(offset + (1 + sum((s - 1) * st for s, st in zip(sizes, strides))
                               if numel else 0))
    v = base.as_strided(sizes, strides, offset)
    assert v.shape == sizes and v.stride() == strides
    if numel:
        with pytest.raises(RuntimeError, match=r"^setStorage: sizes, strides and storage "
                                               r"offset out of bounds"):
            base.as_strided(sizes, strides, offset + 1)


def test_resizing_an_out_tensor_beyond_int64_raises():
    out = ptl.zeros(4)
    with pytest.raises(RuntimeError, match=overflow_msg((BIG,))):
        ptl.add(ptl.zeros(1).expand(BIG), 1, out=out)
    assert out.shape == (4,)


@pytest.mark.parametrize("call", [
    lambda: ptl.ops.aten.upsample_bicubic2d.default(ptl.ones(0, 4, 3, 1), [1, BIG], True, None,
                                                      1.975),
    lambda: ptl.ops.aten.upsample_nearest1d.default(ptl.ones(0, 2, 3), [BIG], None),
    lambda: ptl.ops.aten.upsample_nearest1d_backward.default(ptl.ones(3, 3, 1), [BIG], [3, 3, 1],
                                                               None),
], ids=["bicubic2d", "nearest1d", "nearest1d_backward"])
def test_resampling_maps_for_an_output_that_cannot_exist_raise(call):
    # an empty batch makes the output itself 0 bytes; the per-output-position index and
    # weight maps of 2**62 entries would wrap their byte count (a fuzzer finding)
    with pytest.raises((MemoryError, RuntimeError)):
        call()
