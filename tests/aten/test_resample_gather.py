"""The gathers of src/aten/native/resample_gather.c (Note [Gathers by runs]): the reflection,
replication and circular pads' forwards and nearest upsampling on the CPU read their input
where it lies and copy runs of whole elements.  Against np.pad in the same dtype (a copy:
exact) for every pad width up to the largest each mode takes, in 1, 2 and 3 dims, on
contiguous, transposed, stepped-slice and expanded inputs of 1-, 2-, 4-, 8- and 16-byte
elements (uint8, float16, float32, float64, int64, complex64, complex128), size-0 batches,
and output rows split among threads at and across the parallel grain on 1 and 2 threads;
negative pads, out-of-range pads and dtypes as PyTorch's where torch is installed."""
import os

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_raises_like_torch, num_threads, rerun_with_capability, torch,
                     torch_ref)

F = ptl.nn.functional
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
DTYPES = {ptl.uint8: np.uint8, ptl.float16: np.float16, ptl.float32: np.float32,
          ptl.float64: np.float64, ptl.int64: np.int64, ptl.complex64: np.complex64,
          ptl.complex128: np.complex128}
GRAIN = 32768   # PTL_GRAIN_SIZE: a unit of the parallel loop is GRAIN / (out_w + 1) + 1 rows


def draw(shape, npdt, seed=0):
    g = np.random.default_rng(seed)
    a = g.uniform(-100, 100, shape)
    if np.issubdtype(npdt, np.complexfloating):
        a = a + 1j * g.uniform(-100, 100, shape)
    return a.astype(npdt) if npdt != np.uint8 else np.abs(a).astype(np.uint8)


def laid_out(a, dtype, layout):
    """(tensor, ndarray) holding a's values, the tensor laid out as asked."""
    if layout == "transposed":      # the last two dims' strides swapped
        return ptl.tensor(np.ascontiguousarray(a.swapaxes(-1, -2)), dtype=dtype) \
            .transpose(-1, -2), a
    if layout == "sliced":          # every dim stepped by 2
        wide = np.zeros(tuple(2 * s for s in a.shape), a.dtype)
        index = tuple(slice(None, None, 2) for _ in a.shape)
        wide[index] = a
        return ptl.tensor(wide, dtype=dtype)[index], a
    if layout == "expanded":        # the leading dim of stride 0
        b = np.broadcast_to(a[:1], a.shape)
        return ptl.tensor(np.ascontiguousarray(a[:1]), dtype=dtype).expand(*a.shape), b
    return ptl.tensor(a, dtype=dtype), a


def np_pad(a, pad, mode):
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(a, widths, mode=NP_MODE[mode])


def check(x, a, pad, mode):
    got = F.pad(x, pad, mode=mode).numpy()
    want = np_pad(a, pad, mode)
    assert got.shape == want.shape, (pad, mode)
    np.testing.assert_array_equal(got, want, err_msg=f"{mode} {pad}")


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_every_width_along_w(mode, layout, dtype):
    """(l, r) along W over every width a mode takes: reflect < W, the others <= W."""
    a = draw((2, 3, 5), DTYPES[dtype])
    x, a = laid_out(a, dtype, layout)
    top = 4 if mode == "reflect" else 5
    for left in range(top + 1):
        for right in range(top + 1):
            check(x, a, (left, right), mode)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.complex64, ptl.complex128], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_every_width_in_2d_and_3d(mode, layout, dtype):
    top = 2 if mode == "reflect" else 3
    a = draw((2, 3, 3, 4), DTYPES[dtype], seed=1)
    x, a = laid_out(a, dtype, layout)
    for h0 in range(top + 1):
        for h1 in range(top + 1):
            check(x, a, (1, top, h0, h1), mode)
            check(x, a, (h1, h0, 0, top, top - h0, h1), mode)


@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_size_zero_batch_and_one_wide_rows(mode):
    for dtype in (ptl.float32, ptl.complex128):
        x, a = laid_out(draw((0, 3, 5), DTYPES[dtype]), dtype, "contiguous")
        check(x, a, (2, 1), mode)
        if mode != "reflect":    # reflect needs pads < W = 1
            x, a = laid_out(draw((2, 3, 1), DTYPES[dtype]), dtype, "transposed")
            check(x, a, (1, 1, 1, 0), mode)


@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_rows_split_at_and_across_the_grain_on_one_and_two_threads(mode):
    w, pad = 600, (3, 3)
    per_unit = GRAIN // (w + sum(pad) + 1) + 1
    for rows in (per_unit, per_unit + 1, 2 * per_unit, 2 * per_unit + 1, 5 * per_unit - 1):
        for dtype in (ptl.float32, ptl.complex128):
            x, a = laid_out(draw((rows, w), DTYPES[dtype], seed=rows), dtype, "sliced")
            for threads in (1, 2):
                with num_threads(threads):
                    check(x, a, pad, mode)


def test_nearest_upsampling_reads_strided_input_in_place():
    a = draw((2, 3, 5, 7), np.float32, seed=2)
    for layout in ("contiguous", "transposed", "sliced", "expanded"):
        x, b = laid_out(a, ptl.float32, layout)
        for size in [(10, 14), (3, 4), (7, 9), (5, 7)]:
            iy = np.minimum(np.floor(np.arange(size[0]) * (b.shape[2] / size[0])),
                            b.shape[2] - 1).astype(int)
            ix = np.minimum(np.floor(np.arange(size[1]) * (b.shape[3] / size[1])),
                            b.shape[3] - 1).astype(int)
            want = b[:, :, iy][:, :, :, ix]
            got = F.interpolate(x, size=size, mode="nearest").numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{layout} {size}")


CLASSIC = ("Padding size should be less than", "Padding value causes wrapping around",
           "Padding size 2 is not supported", "input (")


@torch_ref
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_small_negative_and_out_of_range_pads_as_torch(mode):
    """Pads from -1 to 6 on a transposed [2, 3, 4, 5] input: torch's values, or its error
    type (and message, for the classic ones); circular from 0 (a negative pad with a wider
    one across reads uninitialised memory in PyTorch 2.13).  Crops to an empty dim are left
    out: PyTorch's answers there are accidents of its code (an empty tensor, or an overflow
    message)."""
    g = np.random.default_rng(3)
    for dtype in ("float32", "complex64"):
        a = draw((2, 3, 4, 5), getattr(np, dtype), seed=4)
        for _ in range(60):
            low = 0 if mode == "circular" else -1
            pad = tuple(int(p) for p in g.integers(low, 7, size=2 * int(g.integers(1, 3))))
            try:
                want = torch.nn.functional.pad(torch.tensor(a).transpose(-1, -2), pad,
                                               mode=mode)
            except (RuntimeError, NotImplementedError) as exc:
                first = str(exc).split("\n")[0]
                with pytest.raises(type(exc)) as ours:
                    F.pad(ptl.tensor(a).transpose(-1, -2), pad, mode=mode)
                if first.startswith(CLASSIC):
                    assert first.replace(" )", ")") in str(ours.value), (pad, first)
                continue
            got = F.pad(ptl.tensor(a).transpose(-1, -2), pad, mode=mode)
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(pad))


def test_complex_pads_refuse_widths_of_the_input_size_as_torch():
    for dtype in ("complex64", "complex128"):
        assert_raises_like_torch(
            lambda lib, dt=dtype: lib.nn.functional.pad(
                lib.zeros(1, 2, 3, dtype=getattr(lib, dt)), (3, 0), mode="reflect"),
            RuntimeError, "Padding size should be less than the corresponding input "
                          "dimension, but got: padding (3, 0) at dimension 2 of input [1, 2, 3]")
        assert_raises_like_torch(
            lambda lib, dt=dtype: lib.nn.functional.pad(
                lib.zeros(1, 2, 3, dtype=getattr(lib, dt)), (0, 4), mode="circular"),
            RuntimeError, "Padding value causes wrapping around more than once.")


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_rows_of_every_length_across_the_run_copies(mode, dtype):
    """Input rows of 1 to 40 and 63 to 66 elements (the interior run of 1-byte uint8 to
    16-byte complex128 elements at, under and over 32 bytes, from which a contiguous run is
    two 32-byte moves, and 64, over which it is one memcpy), pads of 0 to 3 on each side,
    contiguous and stepped: each element size's job (DEFINE_GATHER_ROWS_JOB), exact against
    np.pad, on 1 and 2 threads."""
    for w in list(range(1, 41)) + [63, 64, 65, 66]:
        a = draw((3, 2, w), DTYPES[dtype], seed=w)
        for layout in ("contiguous", "sliced"):
            x, b = laid_out(a, dtype, layout)
            for left, right in ((0, 0), (1, 2), (3, 3), (2, 0)):
                if max(left, right) >= w + (mode != "reflect"):   # reflect: < w, others <= w
                    continue
                for threads in (1, 2):
                    with num_threads(threads):
                        check(x, b, (left, right, 1, 0), mode)


@pytest.mark.parametrize("channels", [1, 2, 3, 4, 8, 9])
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_channels_last_pixels_of_every_job(mode, channels):
    """Channels-last pads gather pixels of C values: float32 pixels of 4, 8 and 16 bytes take
    those sizes' jobs, 12, 32 and 36 bytes the job for any size; exact against np.pad."""
    a = draw((2, channels, 5, 11), np.float32, seed=channels)
    x = ptl.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    for pad in ((2, 3, 1, 0), (0, 0, 4, 4), (10 if mode == "replicate" else 4, 1, 0, 2)):
        check(x, a, pad, mode)


@pytest.mark.parametrize("dtype", [ptl.uint8, ptl.float16, ptl.float32, ptl.float64], ids=str)
def test_nearest_x2_by_offsets_every_width_and_element_size(dtype):
    """Nearest upsampling by 2 repeats each input twice: runs of 2, so each row goes by byte
    offsets, 4 elements a step and the rest one by one (gather_at); output widths 2 to 22 and
    the element sizes it takes (1, 2, 4, 8 bytes), exact against NumPy's repeat."""
    for w in range(1, 12):
        a = draw((2, 1, 3, w), DTYPES[dtype], seed=w)
        x, b = laid_out(a, dtype, "contiguous")
        got = F.interpolate(x, scale_factor=2, mode="nearest").numpy()
        np.testing.assert_array_equal(got, b.repeat(2, axis=2).repeat(2, axis=3), err_msg=str(w))


@pytest.mark.parametrize("dtype", [ptl.uint8, ptl.float16, ptl.float32, ptl.complex128],
                         ids=str)
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_long_runs_across_the_vector_steps(mode, dtype):
    """Interior runs of more than 64 bytes go by vectors in order (copy_run_avx512: 256 bytes
    a step, then 64, the last vector ending at the run's end; copy_run_avx2: 128, then 32):
    rows whose interior is one element under, at and over each multiple of 32 bytes from 64
    to 544, at byte offsets 0 to 3 elements into the output row, exact against np.pad."""
    item = np.dtype(DTYPES[dtype]).itemsize
    widths = sorted({max(1, (32 * k) // item + d) for k in range(2, 18) for d in (-1, 0, 1)})
    for w in widths:
        a = draw((2, 3, w), DTYPES[dtype], seed=w)
        x, b = laid_out(a, dtype, "contiguous")
        for left, right in ((0, 0), (1, 2), (3, 1)):
            if max(left, right) < w:
                check(x, b, (left, right), mode)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_row_copies_of_each_capability(cap):
    """Reruns the row tests with AVX2's copy (32-byte vectors) and the portable one
    (memcpy)."""
    rerun_with_capability(__file__, cap, "-k", "runs or rows or every_width_along_w")
