"""Shape ops on complex64/complex128 that reach the real kernels (complex.c's passthrough
list, Note [Complex dtypes]): the views movedim, moveaxis, swapaxes, swapdims, unflatten,
split, chunk, broadcast_to, squeeze and unfold; hstack and vstack; roll, rot90, repeat and
tile (shape.c's 16-byte gathers, Note [Gather by offset tables]); constant_pad_nd
(complex_parts.c passes a complex self to its CPU kernel); and the
composites on them (fftshift, diff, kron, block_diag).  Elements move exactly, so values are
compared for equality with NumPy complex128; result layouts against torch 2.13, for
permuted inputs too; gradients by gradcheck in complex128.  shape_gather.c's copy runs
without the GIL from PTL_GRAIN_SIZE elements on: the sizes below cross it, on 1 and 2
threads."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_close, assert_raises_like_torch, crandn, num_threads, torch,
                     torch_ref)
from pytorchlite.autograd import gradcheck

C64, C128 = ptl.complex64, ptl.complex128
LAYOUTS = ["contiguous", "transposed", "sliced"]


def same(t, a, dtype):
    assert_close(t, a, dtype, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_views(layout, dtype):
    x, a = crandn((2, 3, 4), dtype, layout)
    same(x.movedim(0, 2), np.moveaxis(a, 0, 2), dtype)
    same(x.movedim((0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)), dtype)
    same(ptl.moveaxis(x, -1, 0), np.moveaxis(a, -1, 0), dtype)
    same(x.swapaxes(0, 2), np.swapaxes(a, 0, 2), dtype)
    same(x.swapdims(1, 2), np.swapaxes(a, 1, 2), dtype)
    same(x.unflatten(2, (2, 2)), a.reshape(2, 3, 2, 2), dtype)
    same(x.split(2, 2)[1], a[:, :, 2:], dtype)
    same(x.split([1, 3], 2)[1], a[:, :, 1:], dtype)
    same(x.chunk(2, 1)[1], a[:, 2:], dtype)
    same(x.tensor_split(3, 2)[0], a[:, :, :2], dtype)
    same(x[:, :1].broadcast_to(2, 3, 4), np.broadcast_to(a[:, :1], (2, 3, 4)), dtype)
    same(x[:, :1, None].squeeze((1, 2)), a[:, 0], dtype)
    same(x.unfold(2, 2, 1), np.stack([a[:, :, i:i + 2] for i in range(3)], 2), dtype)
    same(x.unfold(0, 1, 1), a[None].transpose(1, 2, 3, 0), dtype)
    assert x.movedim(0, 2)._base is x or x.movedim(0, 2).data_ptr() == x.data_ptr()
    assert x.unfold(2, 2, 1).data_ptr() == x.data_ptr()


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_moves(layout, dtype):
    x, a = crandn((3, 4, 5), dtype, layout)
    same(x.roll(1, 0), np.roll(a, 1, 0), dtype)
    same(x.roll((2, -3), (1, 2)), np.roll(a, (2, -3), (1, 2)), dtype)
    same(x.roll(7), np.roll(a, 7), dtype)
    for k in range(-1, 5):
        same(ptl.rot90(x, k, [1, 2]), np.rot90(a, k, (1, 2)), dtype)
        same(ptl.rot90(x, k, [2, 0]), np.rot90(a, k, (2, 0)), dtype)
    same(x.repeat(2, 1, 3), np.tile(a, (2, 1, 3)), dtype)
    same(x.repeat(2, 1, 1, 1), np.tile(a, (2, 1, 1, 1)), dtype)
    same(x.tile((2,)), np.tile(a, 2), dtype)
    same(ptl.hstack([x, x[:, :1]]), np.hstack([a, a[:, :1]]), dtype)
    same(ptl.vstack([x[0], x[1]]), np.vstack([a[0], a[1]]), dtype)
    same(ptl.column_stack([x[0, 0], x[1, 0]]), np.column_stack([a[0, 0], a[1, 0]]), dtype)
    same(ptl.fft.fftshift(x), np.fft.fftshift(a), dtype)
    same(ptl.fft.ifftshift(x, dim=1), np.fft.ifftshift(a, axes=1), dtype)
    same(ptl.block_diag(x[0], x[1, :2]), np.block([[a[0], np.zeros((4, 5))],
                                                   [np.zeros((2, 5)), a[1, :2]]]), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_zero_dim_and_empty(dtype):
    x, a = crandn((), dtype)
    same(x.roll(1), a, dtype)
    same(x.repeat(2, 3), np.tile(a, (2, 3)), dtype)
    same(x.movedim(0, 0) if x.dim() else x, a, dtype)
    e, b = crandn((0, 3), dtype)
    same(e.roll(1, 0), b, dtype)
    same(e.repeat(2, 2), np.tile(b, (2, 2)), dtype)
    same(ptl.rot90(e), np.rot90(b), dtype)
    same(ptl.nn.functional.pad(e, (1, 1)), np.pad(b, ((0, 0), (1, 1))), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_constant_pad(layout, dtype):
    x, a = crandn((3, 4), dtype, layout)
    F = ptl.nn.functional
    same(F.pad(x, (1, 2)), np.pad(a, ((0, 0), (1, 2))), dtype)
    same(F.pad(x, (1, 2, 2, 0), value=2.5), np.pad(a, ((2, 0), (1, 2)), constant_values=2.5),
         dtype)
    same(F.pad(x, (-1, 1, 0, -2)), np.pad(a[:1, 1:], ((0, 0), (0, 1))), dtype)
    same(ptl.constant_pad_nd(x, (1, 1), 1 - 2j), np.pad(a, ((0, 0), (1, 1)),
                                                        constant_values=1 - 2j), dtype)
    same(ptl.nn.ZeroPad2d(1)(x[None]), np.pad(a[None], ((0, 0), (1, 1), (1, 1))), dtype)


def test_sizes_across_the_grain_on_one_and_two_threads():
    grain = 32768   # PTL_GRAIN_SIZE: shape_gather.c drops the GIL from here on
    for n in (grain - 1, grain, grain + 1, 2 * grain + 3):
        x, a = crandn((n,), C128, seed=n)
        for threads in (1, 2):
            with num_threads(threads):
                same(x.roll(5), np.roll(a, 5), C128)
                same(x.repeat(2), np.tile(a, 2), C128)
                same(ptl.rot90(x.view(1, n)), np.rot90(a.reshape(1, n)), C128)
                same(ptl.nn.functional.pad(x.view(1, n), (3, 2)),
                     np.pad(a.reshape(1, n), ((0, 0), (3, 2))), C128)


@torch_ref
def test_layouts_match_torch():
    a = np.random.default_rng(2).standard_normal((3, 4, 5)) * (1 - 1j)
    codes = ["x.roll(1, 0)", "x.roll(2)", "x.repeat(1, 2, 1)", "x.tile((2, 1, 1))",
             "x.movedim(0, 2)", "L.rot90(x, 1, [1, 2])", "L.rot90(x, 2, [0, 2])",
             "L.rot90(x, 3)", "L.rot90(x, 0)", "L.nn.functional.pad(x, (1, 1))",
             "x.unfold(1, 2, 1)", "L.hstack([x, x])", "L.fft.fftshift(x)"]
    for code in codes:
        for perm in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
            for dt in ("complex64", "float64"):
                x = ptl.tensor(a if dt == "complex64" else a.real,
                               dtype=getattr(ptl, dt)).permute(*perm)
                t = torch.tensor(a if dt == "complex64" else a.real,
                                 dtype=getattr(torch, dt)).permute(*perm)
                ours = eval(code, {"x": x, "L": ptl})  # noqa: S307
                theirs = eval(code, {"x": t, "L": torch})  # noqa: S307
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=code)
                assert ours.stride() == theirs.stride(), (code, perm, dt)


GRADS = {
    "roll": lambda z: z.roll((1, -1), (0, 1)),
    "rot90": lambda z: ptl.rot90(z, 1),
    "rot90_2": lambda z: ptl.rot90(z, 2),
    "repeat": lambda z: z.repeat(2, 1, 2),
    "tile": lambda z: z.tile((2,)),
    "movedim": lambda z: z.movedim(0, 1),
    "unfold": lambda z: z.unfold(1, 2, 1),
    "split": lambda z: z.split(3, 1)[1],
    "hstack": lambda z: ptl.hstack([z, 2 * z]),
    "pad": lambda z: ptl.nn.functional.pad(z, (1, 2, 0, 1), value=0.5),
    "fftshift": lambda z: ptl.fft.fftshift(z),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradcheck(name):
    for layout in ("contiguous", "transposed"):
        z, _ = crandn((3, 4), C128, layout, seed=7)
        assert gradcheck(GRADS[name], (z.detach().requires_grad_(),)), (name, layout)


ERRORS = [
    ("z.roll(1, 4)", IndexError, "Dimension out of range"),
    ("z.roll([1, 2], [0])", RuntimeError, "shifts and dimensions must align"),
    ("L.rot90(z)", RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    ("z.repeat(2, 3)[0:0].repeat(2)", RuntimeError, "Number of dimensions of repeat dims can not "
                                                    "be smaller than number of dimensions of "
                                                    "tensor"),
    ("z.unfold(0, 3, 1)", RuntimeError, "maximum size for tensor at dimension 0 is 2 but size "
                                        "is 3"),
    ("z.movedim(0, 3)", IndexError, "Dimension out of range"),
    ("L.constant_pad_nd(L.ones(2), (1, 1), 1j)", RuntimeError,
     "value cannot be converted to type float without overflow"),
    ("L.constant_pad_nd(L.ones(2, dtype=L.float64), (1, 1), 2j)", RuntimeError,
     "value cannot be converted to type double without overflow"),
    ("L.nn.functional.pad(z, (1, 1), value=1j)", TypeError,
     "pad(): argument 'value' (position 4) must be float, not complex"),
]


@pytest.mark.parametrize("code,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(code, exc, msg):
    assert_raises_like_torch(
        lambda lib: eval(code, {"L": lib, "z": lib.tensor([1 + 2j, 3 - 1j])}),  # noqa: S307
        exc, msg)
