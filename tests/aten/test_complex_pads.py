"""The complex64/complex128 pads and folds (src/aten/native/complex_parts.c, Note [Complex
ops by parts]; the forwards of the pads and im2col move whole elements in the real kernels on
the CPU): reflection, replication and circular pads in 1, 2 and 3 dims and their backwards,
unfold's backward, im2col (F.unfold) and col2im (F.fold).  Values against NumPy complex128
on contiguous, transposed and sliced inputs; gradients by gradcheck in complex128; errors are
the real kernels', as PyTorch's."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_close, assert_no_leak, assert_raises_like_torch, crandn, torch,
                     torch_ref)
from pytorchlite.autograd import gradcheck

C64, C128 = ptl.complex64, ptl.complex128
F = ptl.nn.functional
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def np_pad(a, pad, mode):
    """F.pad's (last dim first) pads as np.pad's widths."""
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(a, widths, mode=NP_MODE[mode])


CASES = [((2, 5), (1, 2)), ((2, 3, 5), (2, 1)), ((2, 4, 5), (1, 2, 2, 1)),
         ((1, 2, 4, 5), (0, 3, 1, 0)), ((1, 3, 4, 5), (1, 1, 2, 1, 1, 2)),
         ((3, 3, 4, 4), (1, 2, 1, 1, 0, 2))]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
@pytest.mark.parametrize("shape,pad", CASES, ids=str)
def test_pads(shape, pad, mode, layout, dtype):
    x, a = crandn(shape, dtype, layout)
    assert_close(F.pad(x, pad, mode=mode), np_pad(a, pad, mode), dtype, rtol=0, atol=0)


def test_im2col_col2im():
    x, a = crandn((2, 3, 4, 5), C128)
    cols = F.unfold(x, (2, 3), stride=(1, 2))
    want = np.stack([a[:, :, i:i + 2, j:j + 3].reshape(2, -1)
                     for i in range(3) for j in range(0, 3, 2)], -1)
    assert_close(cols, want, C128)
    back = F.fold(cols, (4, 5), (2, 3), stride=(1, 2))
    ones = F.fold(F.unfold(ptl.ones(2, 3, 4, 5, dtype=ptl.float64), (2, 3), stride=(1, 2)),
                  (4, 5), (2, 3), stride=(1, 2))
    assert_close(back, a * ones.numpy(), C128)
    assert_close(F.unfold(x.to(C64), 2), F.unfold(x, 2).numpy(), C64)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
def test_im2col_moves_whole_elements(layout, dtype):
    """F.unfold of a complex input on the CPU is the real kernel's copy of 8- or 16-byte
    elements: rows of the unit-stride run of 8 and more (and the shorter ones), strides,
    dilations and padding, against the patches taken in NumPy."""
    x, a = crandn((2, 3, 7, 19), dtype, layout)
    for k, d, p, st in [((2, 3), 1, 0, 1), (3, 1, 1, 1), ((3, 2), (2, 1), (1, 2), (2, 1)),
                        (1, 1, 0, 1), (5, 2, 2, 3), ((1, 9), 1, (0, 4), 1)]:
        k, d, p, st = ((v, v) if isinstance(v, int) else v for v in (k, d, p, st))
        ap = np.pad(a, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
        oh = (ap.shape[2] - d[0] * (k[0] - 1) - 1) // st[0] + 1
        ow = (ap.shape[3] - d[1] * (k[1] - 1) - 1) // st[1] + 1
        want = np.stack([ap[:, :, i * d[0]:i * d[0] + st[0] * (oh - 1) + 1:st[0],
                            j * d[1]:j * d[1] + st[1] * (ow - 1) + 1:st[1]]
                         for i in range(k[0]) for j in range(k[1])], 2)
        assert_close(F.unfold(x, k, dilation=d, padding=p, stride=st),
                     want.reshape(2, -1, oh * ow), dtype, rtol=0, atol=0)


def test_forwards_move_whole_elements_in_one_pass():
    """On the CPU the pads' forwards and im2col run the real kernel once on the complex
    tensor: no real/imag views, no join (the by-parts path ran it twice)."""
    x, _ = crandn((1, 2, 4, 5), C64, "transposed")
    with ptl.profiler.profile() as prof:
        for mode in ("reflect", "replicate", "circular"):
            F.pad(x, (1, 1, 1, 1), mode=mode)
        F.unfold(x, 2)
    names = {e.name for e in prof.events()}
    assert {"aten::reflection_pad2d", "aten::replication_pad2d", "aten::im2col"} <= names
    assert not names & {"aten::real", "aten::imag", "aten::complex"}, names


GRADS = {
    "reflect1d": lambda z: F.pad(z[None], (2, 1), mode="reflect"),
    "reflect2d": lambda z: F.pad(z[None, None], (1, 2, 1, 1), mode="reflect"),
    "reflect3d": lambda z: F.pad(z[None, None, None], (1, 1, 1, 2, 0, 0), mode="reflect"),
    "replicate1d": lambda z: F.pad(z[None], (2, 1), mode="replicate"),
    "replicate2d": lambda z: F.pad(z[None, None], (1, 2, 1, 1), mode="replicate"),
    "replicate3d": lambda z: F.pad(z[None, None, None], (1, 1, 1, 2, 0, 0), mode="replicate"),
    "circular1d": lambda z: F.pad(z[None], (2, 1), mode="circular"),
    "circular2d": lambda z: F.pad(z[None, None], (1, 2, 1, 1), mode="circular"),
    "unfold": lambda z: z.unfold(1, 2, 1),
    "im2col": lambda z: F.unfold(z[None, None], 2),
    "col2im": lambda z: F.fold(z[None], (2, 5), (2, 2)) if z.shape == (4, 4) else z,
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradcheck_and_gradgradcheck(name):
    for shape, layout in [((3, 4), "contiguous"), ((4, 4), "transposed")]:
        z, _ = crandn(shape, C128, layout, seed=3)
        z = z.detach().requires_grad_()
        assert gradcheck(GRADS[name], (z,)), (name, shape)
        assert ptl.autograd.gradgradcheck(GRADS[name], (z,)), (name, shape)


@torch_ref
@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_torch(name):
    z, a = crandn((4, 4), C128, seed=4)
    z = z.detach().requires_grad_()
    t = torch.tensor(a).requires_grad_()
    out = GRADS[name](z)
    torch_fns = {
        "reflect1d": lambda u: torch.nn.functional.pad(u[None], (2, 1), mode="reflect"),
        "reflect2d": lambda u: torch.nn.functional.pad(u[None, None], (1, 2, 1, 1),
                                                       mode="reflect"),
        "reflect3d": lambda u: torch.nn.functional.pad(u[None, None, None],
                                                       (1, 1, 1, 2, 0, 0), mode="reflect"),
        "replicate1d": lambda u: torch.nn.functional.pad(u[None], (2, 1), mode="replicate"),
        "replicate2d": lambda u: torch.nn.functional.pad(u[None, None], (1, 2, 1, 1),
                                                         mode="replicate"),
        "replicate3d": lambda u: torch.nn.functional.pad(u[None, None, None],
                                                         (1, 1, 1, 2, 0, 0), mode="replicate"),
        "circular1d": lambda u: torch.nn.functional.pad(u[None], (2, 1), mode="circular"),
        "circular2d": lambda u: torch.nn.functional.pad(u[None, None], (1, 2, 1, 1),
                                                        mode="circular"),
        "unfold": lambda u: u.unfold(1, 2, 1),
        "im2col": lambda u: torch.nn.functional.unfold(u[None, None], 2),
        "col2im": lambda u: torch.nn.functional.fold(u[None], (2, 5), (2, 2)),
    }
    ref_out = torch_fns[name](t)
    w = np.random.default_rng(5).standard_normal(tuple(out.shape)) * (1 + 2j)
    (out * ptl.tensor(w)).abs().sum().backward()
    (ref_out * torch.tensor(w)).abs().sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


ERRORS = [
    ("F.pad(z[None], (3, 3), mode='reflect')", RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    ("F.pad(z[0], (1, 1), mode='reflect')", NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor."),
    ("F.pad(z[None], (3, 3), mode='circular')", RuntimeError,
     "Padding value causes wrapping around more than once."),
    ("F.unfold(z[None], 2)", RuntimeError, "calculated shape of the array of sliding blocks as "
                                           "(0, 1), but its components must be at least one."),
    ("F.fold(z[None], (3, 3), 2)", RuntimeError, "Expected size of input's dimension 1 to be "
                                                 "divisible by the product of kernel_size"),
]


@pytest.mark.parametrize("code,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(code, exc, msg):
    assert_raises_like_torch(
        lambda lib: eval(code, {"F": lib.nn.functional,  # noqa: S307
                                "z": lib.tensor([[1 + 2j, 3 - 1j]])}), exc, msg)


def test_no_leaks():
    x, _ = crandn((1, 2, 4, 5), C128)
    assert_no_leak(lambda: (F.pad(x, (1, 1, 2, 0), mode="reflect"),
                            F.pad(x, (1, 1, 1, 1), mode="circular"), F.unfold(x, 2)))
