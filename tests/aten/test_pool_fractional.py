"""F.fractional_max_pool2d / 3d (+ _with_indices) and nn.FractionalMaxPool2d / 3d
(src/aten/native/pool_fractional.c): values and indices against a NumPy reference that draws
the windows in the samples' own precision (Note [Fractional pooling windows]), batched,
unbatched, size-0, non-contiguous and channels_last inputs, 1 and 2 threads, gradcheck,
every error with PyTorch's type and message, and bit-equality with torch for the same
_random_samples when it is installed."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_close, assert_no_leak, assert_raises_like_torch, make, num_threads, \
    torch, torch_ref

_NP = {ptl.float64: np.float64, ptl.float32: np.float32, ptl.float16: np.float16}


def _starts(u, n_in, n_out, k, dt):
    """The window starts along one dim from sample u, each operation rounded to dt"""
    seq = [0] * max(n_out, 0)
    if n_out > 1:
        alpha = dt(dt(n_in - k) / dt(n_out - 1))
        for i in range(n_out - 1):
            seq[i] = int(dt(dt(dt(i) + dt(u)) * alpha)) - int(dt(dt(u) * alpha))
    if n_out > 0:
        seq[-1] = n_in - k
    return seq


def _np_fractional(a, samples, k, out, dt):
    """(values, indices) of a fractional max pooling of the float64 array a (2-D or 3-D:
    nd = len(k)) with the windows of samples (an array of dtype dt)"""
    nd = len(k)
    x = a if a.ndim == nd + 2 else a[None]
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    y = np.empty((n, c) + tuple(out))
    idx = np.empty((n, c) + tuple(out), dtype=np.int64)
    which = [1, 0] if nd == 2 else [0, 1, 2]   # the sample of each dim
    for b in range(n):
        for ch in range(c):
            starts = [_starts(samples[b, ch, which[d]], sp[d], out[d], k[d], dt)
                      for d in range(nd)]
            plane = x[b, ch].reshape(-1)
            for pos in np.ndindex(*out):
                lo = [starts[d][pos[d]] for d in range(nd)]
                best, at = -math.inf, int(np.ravel_multi_index(lo, sp))
                for off in np.ndindex(*k):
                    q = int(np.ravel_multi_index([lo[d] + off[d] for d in range(nd)], sp))
                    if plane[q] > best or np.isnan(plane[q]):
                        best, at = plane[q], q
                y[(b, ch) + pos], idx[(b, ch) + pos] = best, at
    if a.ndim == nd + 1:
        return y[0], idx[0]
    return y, idx


def _pool(nd):
    return F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d


CASES = [
    # shape, kernel_size, output_size
    ((2, 3, 9, 10), (3, 3), (4, 5)),
    ((3, 7, 8), (2, 3), (5, 4)),
    ((1, 2, 5, 6), (5, 6), (1, 1)),
    ((2, 2, 6, 5), (1, 1), (6, 5)),
    ((2, 2, 6, 5), (2, 1), (3, 5)),
    ((2, 3, 6, 9, 10), (3, 3, 3), (2, 4, 5)),
    ((2, 5, 4, 6), (2, 2, 3), (1, 2, 2)),
    ((1, 1, 7, 3, 5), (1, 2, 1), (6, 1, 4)),
]


@pytest.mark.parametrize("shape, k, out", CASES)
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_fractional_max_pool_against_numpy(shape, k, out, dtype, layout):
    nd = len(k)
    x, a = make(shape, dtype, layout, seed=len(shape) + sum(out))
    n = shape[0] if len(shape) == nd + 2 else 1
    c = shape[-nd - 1]
    u = np.random.default_rng(sum(k)).random((n + 1, c, nd)).astype(_NP[dtype])
    samples = ptl.tensor(u)[1:]    # a strided view; N' = N
    want, want_idx = _np_fractional(a.astype(np.float64), u[1:], k, out, _NP[dtype])
    y, idx = _pool(nd)(x, k, output_size=out, return_indices=True, _random_samples=samples)
    assert_close(y, want, dtype=dtype, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), want_idx)
    assert y.is_contiguous() and idx.dtype == ptl.int64


def test_float16_windows_are_drawn_in_float16():
    """A float16 input's windows come from float16 arithmetic (different starts than the
    same samples give in float32 for some samples)"""
    x, a = make((2, 8, 31, 29), ptl.float16, seed=3)
    u = np.random.default_rng(5).random((2, 8, 2)).astype(np.float16)
    want, want_idx = _np_fractional(a.astype(np.float64), u, (2, 3), (12, 9), np.float16)
    y, idx = F.fractional_max_pool2d(x, (2, 3), (12, 9), return_indices=True,
                                     _random_samples=ptl.tensor(u))
    assert y.dtype == ptl.float16
    assert_close(y, want, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), want_idx)
    # the backward adds in float16, output by output, as PyTorch does
    g = np.random.default_rng(6).standard_normal(want.shape).astype(np.float16)
    gi = ptl.ops.aten.fractional_max_pool2d_backward(ptl.tensor(g), x, [2, 3], [12, 9], idx)
    ref = np.zeros(a.shape, dtype=np.float16).reshape(2, 8, -1)
    for b, c in np.ndindex(2, 8):
        for o, at in enumerate(want_idx[b, c].reshape(-1)):
            ref[b, c, at] = np.float16(ref[b, c, at] + g[b, c].reshape(-1)[o])
    assert gi.dtype == ptl.float16
    assert np.array_equal(gi.numpy(), ref.reshape(a.shape))


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("nan_every", [7, 2])
def test_channels_last_nan_and_ties(nd, dtype, nan_every):
    """NaN wins over any number and a later NaN over an earlier one (every other element
    NaN: runs of them in one window); ties go to the first maximum."""
    shape = (2, 3, 7, 8) if nd == 2 else (2, 3, 5, 7, 8)
    x, a = make(shape, dtype, seed=nd)
    a = a.copy()
    a.reshape(-1)[::nan_every] = np.nan
    a.reshape(-1)[3::5] = 1.0       # ties: the first maximum wins
    x = ptl.tensor(a)
    fmt = ptl.channels_last if nd == 2 else ptl.channels_last_3d
    u = np.random.default_rng(1).random((2, 3, nd)).astype(a.dtype)
    k, out = (2,) * nd, (3,) * nd
    want, want_idx = _np_fractional(a.astype(np.float64), u, k, out, u.dtype.type)
    y, idx = _pool(nd)(x.contiguous(memory_format=fmt), k, out, return_indices=True,
                       _random_samples=ptl.tensor(u))
    assert_close(y, want, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), want_idx)
    assert y.is_contiguous()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("planes", [1, 30, 64])
def test_planes_split_over_threads(threads, planes):
    """Planes run in parallel when a plane's work is below the grain (32768 elements): 64
    planes of 30 x 30 -> 9 x 9 split in two, 30 stay in one chunk"""
    x, a = make((planes, 30, 30), ptl.float32, seed=planes)
    u = np.random.default_rng(2).random((1, planes, 2)).astype(np.float32)
    want, want_idx = _np_fractional(a.astype(np.float64), u, (3, 2), (9, 9), np.float32)
    with num_threads(threads):
        y, idx = F.fractional_max_pool2d(x, (3, 2), (9, 9), return_indices=True,
                                         _random_samples=ptl.tensor(u))
        g = ptl.ones(y.shape)
        gi = ptl.ops.aten.fractional_max_pool2d_backward(g, x, [3, 2], [9, 9], idx)
    assert_close(y, want, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), want_idx)
    counts = np.zeros(a.size)
    for p in range(planes):
        np.add.at(counts, p * 900 + want_idx[p].reshape(-1), 1.0)
    assert_close(gi, counts.reshape(a.shape))


@pytest.mark.parametrize("nd", [2, 3])
def test_size_zero_and_output_ratio(nd):
    pool = _pool(nd)
    sp = (6, 7, 8)[-nd:]
    y = pool(ptl.ones((0, 3) + sp), 2, output_size=(2,) * nd,
             _random_samples=ptl.rand(0, 3, nd))
    assert tuple(y.shape) == (0, 3) + (2,) * nd
    y = pool(ptl.ones((2, 3) + sp), 2, output_size=(0,) + (2,) * (nd - 1),
             _random_samples=ptl.rand(2, 3, nd))
    assert tuple(y.shape) == (2, 3, 0) + (2,) * (nd - 1)
    # output_ratio: int(size * ratio) per dim; a scalar ratio for every dim
    y = pool(ptl.randn((2, 3) + sp), 2, output_ratio=0.5)
    assert tuple(y.shape) == (2, 3) + tuple(int(s * 0.5) for s in sp)
    y = pool(ptl.randn((3,) + sp), 2, output_ratio=(0.5,) * (nd - 1) + (0.3,))
    assert tuple(y.shape) == (3,) + tuple(int(s * 0.5) for s in sp[:-1]) + (int(sp[-1] * .3),)


@pytest.mark.parametrize("nd", [2, 3])
def test_extra_sample_rows_are_ignored(nd):
    """random_samples may hold more rows than the batch (size(0) >= N): the first N count"""
    x = ptl.randn((2, 3) + (6, 7, 8)[-nd:])
    u = ptl.rand(5, 3, nd)
    a, ia = _pool(nd)(x, 2, (3,) * nd, return_indices=True, _random_samples=u)
    b, ib = _pool(nd)(x, 2, (3,) * nd, return_indices=True, _random_samples=u[:2].clone())
    assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(ia.numpy(), ib.numpy())


def test_samples_are_drawn_from_the_generator():
    x = ptl.randn(2, 3, 9, 10)
    ptl.manual_seed(7)
    a = F.fractional_max_pool2d(x, 2, output_size=5)
    ptl.manual_seed(7)
    b = F.fractional_max_pool2d(x, 2, output_size=5)
    ptl.manual_seed(7)
    u = ptl.rand(2, 3, 2)
    c = F.fractional_max_pool2d(x, 2, output_size=5, _random_samples=u)
    assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(a.numpy(), c.numpy())
    # the module keeps given samples as a buffer, else draws at every call
    m = ptl.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3), _random_samples=ptl.rand(1, 2, 3))
    z = ptl.randn(1, 2, 5, 6, 7)
    assert np.array_equal(m(z).numpy(), m(z).numpy())
    assert "_random_samples" in dict(m.named_buffers())


@pytest.mark.parametrize("nd", [2, 3])
def test_gradcheck(nd):
    shape = (2, 2, 7, 6) if nd == 2 else (1, 2, 5, 6, 5)
    x = ptl.tensor(np.random.default_rng(nd).standard_normal(shape), requires_grad=True)
    u = ptl.tensor(np.random.default_rng(4).random((shape[0], 2, nd)))
    k, out = (2,) * nd, (3,) * nd
    assert gradcheck(lambda t: _pool(nd)(t, k, out, _random_samples=u), (x,))
    assert gradgradcheck(lambda t: _pool(nd)(t, k, out, _random_samples=u), (x,))
    y = _pool(nd)(x, k, out, _random_samples=u)
    assert type(y.grad_fn).__name__ == f"FractionalMaxPool{nd}DBackward0"


def test_modules():
    m = ptl.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    assert repr(m) == "FractionalMaxPool2d()"
    assert m.kernel_size == (3, 3) and m.output_ratio == (0.5, 0.5) and m.output_size is None
    y, i = m(ptl.randn(2, 3, 10, 12))
    assert tuple(y.shape) == (2, 3, 5, 6) and tuple(i.shape) == (2, 3, 5, 6)
    m3 = ptl.nn.FractionalMaxPool3d((1, 2, 2), output_size=2)
    assert m3.output_size == (2, 2, 2)
    assert tuple(m3(ptl.randn(3, 4, 5, 6)).shape) == (3, 2, 2, 2)


def _nn_error(build, exc, msg):
    assert_raises_like_torch(lambda lib: build(lib.nn), exc, msg)


def test_module_errors():
    _nn_error(lambda nn: nn.FractionalMaxPool2d(3), ValueError,
              "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio")
    _nn_error(lambda nn: nn.FractionalMaxPool3d(3), ValueError,
              "FractionalMaxPool3d requires specifying either an output size, or a pooling ratio")
    _nn_error(lambda nn: nn.FractionalMaxPool2d(3, 2, 0.5), ValueError,
              "only one of output_size and output_ratio may be specified")
    _nn_error(lambda nn: nn.FractionalMaxPool2d(3, output_ratio=1.5), ValueError,
              "output_ratio must be between 0 and 1 (got 1.5)")
    _nn_error(lambda nn: nn.FractionalMaxPool3d(3, output_ratio=(0.5, 0.5, 0)), ValueError,
              "output_ratio must be between 0 and 1 (got (0.5, 0.5, 0))")
    _nn_error(lambda nn: nn.FractionalMaxPool3d(0, output_ratio=0.5), ValueError,
              "kernel_size must be greater than 0, but got 0")
    _nn_error(lambda nn: nn.FractionalMaxPool3d((2, 0, 2), output_ratio=0.5), ValueError,
              "kernel_size must be greater than 0, but got (2, 0, 2)")


X2, X3 = (2, 3, 9, 10), (2, 3, 6, 9, 10)

# (input shape, kernel_size, output_size, samples shape or dtype change, exception, message)
FORWARD_ERRORS = [
    (X2, 3, (8, 9), None, RuntimeError,
     "fractional_max_pool2d(): pool height 3 too large relative to input height 9"),
    (X2, 3, (4, 9), None, RuntimeError,
     "fractional_max_pool2d(): pool width 3 too large relative to input width 10"),
    (X2, 3, (4, 5, 6), None, RuntimeError,
     "fractional_max_pool2d: output_size must either be a single Int or tuple of Ints"),
    (X2, (3, 3, 3), (4, 5), None, RuntimeError,
     "fractional_max_pool2d: kernel_size must either be a single Int or tuple of Ints"),
    (X2, 3, (-1, 5), None, RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, 3, -1, 5]"),
    (X2, 3, (4, 5), (1, 3, 2), RuntimeError,
     "Expect _random_samples.size(0) no less then input batch size."),
    (X2, 3, (4, 5), (2, 2, 2), RuntimeError,
     "Expect _random_samples.size(1) equals to input channel size."),
    (X2, 3, (4, 5), (2, 3, 3), RuntimeError,
     "Expect _random_samples.size(2) equals to 2; got 3."),
    (X2, 3, (4, 5), (2, 3), RuntimeError, "Expect _random_samples to have 3 dimensions, got 2"),
    (X2, 3, (4, 5), "float64", RuntimeError,
     "Expect _random_samples to have the same dtype as input"),
    ((9, 10), 3, (4, 5), (1, 9, 2), RuntimeError,
     "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: [9, 10]"),
    ((2, 0, 9, 10), 3, (4, 5), (2, 0, 2), RuntimeError,
     "fractional_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
     "but got[2, 0, 9, 10] with dimension 1 being empty."),
    ((2, 3, 0, 10), 3, (4, 5), None, RuntimeError,
     "fractional_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
     "but got[2, 3, 0, 10] with dimension 2 being empty."),
    (X3, 3, (4, 4, 5), None, RuntimeError,
     "fractional_max_pool3d_out(): pool time 3 too large relative to input time 6"),
    (X3, 3, (3, 7, 5), None, RuntimeError,
     "fractional_max_pool3d_out(): pool height 3 too large relative to input height 9"),
    (X3, 3, (3, 4, 8), None, RuntimeError,
     "fractional_max_pool3d_out(): pool width 3 too large relative to input width 10"),
    (X3, (3, 3), (2, 4, 5), None, RuntimeError,
     "fractional_max_pool3d: kernel_size must either be a single Int or tuple of three Ints"),
    (X3, 3, (2, 4), None, RuntimeError,
     "fractional_max_pool3d: output_size must either be a single Int or tuple of three Ints"),
    (X3, 3, (2, 4, 5), (2, 3, 2), RuntimeError,
     "Expect _random_samples.size(2) equals to 3; got 2."),
    ((6, 9, 10), 3, (2, 4, 5), (1, 6, 3), RuntimeError,
     "fractional_max_pool3d_out(): Expected 4D or 5D tensor, but got: [6, 9, 10]"),
    ((2, 3, 0, 9, 10), 3, (2, 4, 5), None, RuntimeError,
     "fractional_max_pool3d_out(): Expected input to have non-zero size for non-batch "
     "dimensions, but got[2, 3, 0, 9, 10] with dimension 2 being empty."),
]


@pytest.mark.parametrize("shape, k, out, samples, exc, msg", FORWARD_ERRORS)
def test_forward_errors(shape, k, out, samples, exc, msg):
    nd = 3 if len(shape) == 5 or "pool3d" in msg else 2

    def run(lib):
        x = lib.ones(shape)
        if samples == "float64":
            u = lib.rand(2, 3, nd, dtype=lib.float64)
        elif samples is None:
            u = lib.rand(shape[0] if len(shape) == nd + 2 else 1, shape[-nd - 1], nd)
        else:
            u = lib.rand(samples)
        pool = lib.nn.functional.fractional_max_pool2d if nd == 2 else \
            lib.nn.functional.fractional_max_pool3d
        pool(x, k, output_size=out, _random_samples=u)
    assert_raises_like_torch(run, exc, msg)


def test_functional_and_dtype_errors():
    assert_raises_like_torch(lambda lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(1, 1, 4, 4), 2), ValueError,
        "fractional_max_pool2d requires specifying either an output_size or an output_ratio")
    assert_raises_like_torch(lambda lib: lib.nn.functional.fractional_max_pool3d(
        lib.ones(1, 1, 4, 4, 4), 2), ValueError,
        "fractional_max_pool3d requires specifying either an output_size or an output_ratio")
    assert_raises_like_torch(lambda lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(1, 1, 4, 4), 2, output_ratio=(0.5, 0.5, 0.5)), ValueError,
        "fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints.")
    assert_raises_like_torch(lambda lib: lib.nn.functional.fractional_max_pool2d(
        lib.ones(1, 1, 4, 4, dtype=lib.int32), 2, output_size=2,
        _random_samples=lib.ones(1, 1, 2, dtype=lib.int32)), NotImplementedError,
        "\"fractional_max_pool2d_out_frame\" not implemented for 'Int'")


BACKWARD_ERRORS = [
    # 2-D: grad_output / indices shapes, indices and grad dtypes
    (2, (2, 3, 4, 4), (2, 3, 4, 5), "int64", "float32",
     "fractional_max_pool2d_backward(): gradOutput sizes unexpected"),
    (2, (2, 3, 4, 5), (2, 3, 4, 4), "int64", "float32",
     "fractional_max_pool2d_backward(): indices sizes unexpected"),
    (2, (2, 3, 4, 5), (2, 3, 4, 5), "int32", "float32", "expected scalar type Long but found Int"),
    (2, (2, 3, 4, 5), (2, 3, 4, 5), "int64", "float64",
     "expected scalar type Float but found Double"),
    # 3-D: time, height, width of grad_output
    (3, (2, 3, 3, 4, 5), (2, 3, 2, 4, 5), "int64", "float32",
     "fractional_max_pool3d_backward_out(): gradOutput time unexpected"),
    (3, (2, 3, 2, 3, 5), (2, 3, 2, 4, 5), "int64", "float32",
     "fractional_max_pool3d_backward_out(): gradOutput height unexpected"),
    (3, (2, 3, 2, 4, 4), (2, 3, 2, 4, 5), "int64", "float32",
     "fractional_max_pool3d_backward_out(): gradOutput width unexpected"),
    (3, (2, 3, 2, 4, 5), (2, 3, 2, 4, 5), "int32", "float32",
     "expected scalar type Long but found Int"),
]


@pytest.mark.parametrize("nd, gshape, ishape, idt, gdt, msg", BACKWARD_ERRORS)
def test_backward_errors(nd, gshape, ishape, idt, gdt, msg):
    def run(lib):
        x = lib.ones(X2 if nd == 2 else X3)
        out = [4, 5] if nd == 2 else [2, 4, 5]
        g = lib.ones(gshape, dtype=getattr(lib, gdt))
        idx = lib.zeros(ishape, dtype=getattr(lib, idt))
        op = getattr(lib.ops.aten, f"fractional_max_pool{nd}d_backward")
        op(g, x, [3] * nd, out, idx)
    assert_raises_like_torch(run, RuntimeError, msg)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1e12])
def test_samples_that_put_a_window_outside_are_refused(bad):
    """Any finite sample of moderate size, even outside [0, 1), keeps the windows inside the
    input; NaN, infinite or huge ones raise where PyTorch reads out of bounds"""
    x = ptl.randn(1, 2, 9, 10)
    u = ptl.tensor([[[0.5, 0.5], [0.25, bad]]])
    with pytest.raises(RuntimeError, match="fractional_max_pool2d: the random sample .* puts a "
                       "pooling window outside the input along its height"):
        F.fractional_max_pool2d(x, 3, (4, 5), _random_samples=u)
    y = F.fractional_max_pool2d(x, 3, (4, 5), _random_samples=ptl.tensor([[[3.5, -2.0]] * 2]))
    assert tuple(y.shape) == (1, 2, 4, 5)


@pytest.mark.parametrize("nd", [2, 3])
def test_backward_refuses_indices_outside_the_plane(nd):
    """PyTorch fails an internal assert there; we raise a RuntimeError naming the index"""
    x = ptl.ones(X2 if nd == 2 else X3)
    out = [4, 5] if nd == 2 else [2, 4, 5]
    idx = ptl.full([2, 3] + out, 90 if nd == 2 else 540, dtype=ptl.int64)
    op = getattr(ptl.ops.aten, f"fractional_max_pool{nd}d_backward")
    with pytest.raises(RuntimeError, match="index %d is out of bounds for an input plane of %d "
                       "elements" % (idx[0, 0].reshape(-1)[0].item(), 90 if nd == 2 else 540)):
        op(ptl.ones(idx.shape), x, [3] * nd, out, idx)


def test_no_leaks_on_success_and_error_paths():
    x = ptl.randn(2, 3, 9, 10, requires_grad=True)
    u = ptl.rand(2, 3, 2)

    def calls():
        F.fractional_max_pool2d(x, 3, (4, 5), _random_samples=u).sum().backward()
        F.fractional_max_pool3d(ptl.randn(1, 2, 5, 6, 7), 2, (2, 3, 3))
        for bad in (ptl.rand(2, 3, 3), ptl.rand(2, 3, 2, dtype=ptl.float64),
                    ptl.tensor([[[0.5, math.nan]] * 3] * 2)):
            with pytest.raises(RuntimeError):
                F.fractional_max_pool2d(x, 3, (4, 5), _random_samples=bad)
        with pytest.raises(RuntimeError):
            ptl.ops.aten.fractional_max_pool2d_backward(
                ptl.ones(2, 3, 4, 5), x.detach(), [3, 3], [4, 5],
                ptl.full((2, 3, 4, 5), 99, dtype=ptl.int64))
    assert_no_leak(calls)


@torch_ref
@pytest.mark.parametrize("shape, k, out", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_matches_torch_bit_for_bit(shape, k, out, dtype):
    nd = len(k)
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    n = shape[0] if len(shape) == nd + 2 else 1
    u = np.random.default_rng(sum(out)).random((n, shape[-nd - 1], nd))
    res = []
    for lib in (ptl, torch):
        x = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        pool = getattr(lib.nn.functional, f"fractional_max_pool{nd}d")
        y, i = pool(x, k, out, return_indices=True,
                    _random_samples=lib.tensor(u, dtype=getattr(lib, dtype)))
        # several outputs share winners: float16 sums round as PyTorch's do
        y.backward(lib.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)) * 9,
                              dtype=getattr(lib, dtype)))
        res.append((y.detach().float().numpy(), i.numpy(), x.grad.float().numpy()))
    assert np.array_equal(res[0][0], res[1][0], equal_nan=True)
    assert np.array_equal(res[0][1], res[1][1])
    assert np.array_equal(res[0][2], res[1][2])
