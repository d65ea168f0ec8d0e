"""torch.fft (pytorchlite/fft.py) and its operators _fft_c2c, _fft_r2c and _fft_c2r (Note
[FFT kernel] in src/aten/native/fft.c): every function against numpy.fft in float64 on
lengths that take every radix path (4, 2, 3, 5, the generic small primes) and Bluestein,
multi-dim, non-contiguous, size-0, every norm, n / s padding and trimming, on 1 and 2
threads across the line-splitting threshold; gradcheck of each operator and of the
compositions (Note [FFT derivatives]); the errors with PyTorch's types and messages.

Tolerances, relative to the reference's norm (||got - ref|| / ||ref||, Frobenius): 1e-12
for complex128 / float64, whose arithmetic is double throughout; 1e-6 for complex64 /
float32, which compute in float32 for lengths of factors 2, 3, 5 (about 1.5e-7; Note
[FFT float32], tests/aten/test_fft_f32.py bounds it by PyTorch's) and in double, rounded
once, otherwise."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import assert_no_leak, assert_raises_like_torch, num_threads, torch, torch_ref

C64, C128 = ptl.complex64, ptl.complex128
TOL = {C128: 1e-12, ptl.float64: 1e-12, C64: 1e-6, ptl.float32: 1e-6}
NORMS = [None, "backward", "ortho", "forward"]
# 1 and 2; 3, 5, 7, 11, 13, 17 (radix 3, 5 and the generic butterfly); 4, 8, 16, 64, 128,
# 1024, 4096 (radix 4 then 2); mixed 12, 30, 100, 210, 1000; 97, 1031 (Bluestein)
LENGTHS = [1, 2, 3, 5, 7, 8, 11, 12, 13, 16, 17, 30, 64, 97, 100, 128, 210, 1000, 1024, 1031,
           4096]


def rand(shape, dtype, seed=0, layout="contiguous"):
    """(tensor, float64 / complex128 ndarray of the same values) laid out as asked:
    contiguous, transposed (the last two dims swapped in memory) or sliced (every other
    element of the last dim)."""
    gen = np.random.default_rng(seed)
    complex_ = dtype in (C64, C128)
    full = list(shape)
    if layout == "sliced":
        full[-1] *= 2
    if layout == "transposed":
        full[-2], full[-1] = full[-1], full[-2]
    a = gen.standard_normal(full)
    if complex_:
        a = a + 1j * gen.standard_normal(full)
    t = ptl.tensor(a, dtype=dtype)
    if layout == "sliced":
        t = t[..., ::2]
    if layout == "transposed":
        t = t.transpose(-2, -1)
    ref = t.numpy()
    return t, ref.astype(np.complex128 if complex_ else np.float64)


def check(got, ref, dtype):
    got = got.detach().resolve_conj().numpy()   # ihfft returns a conj view, as PyTorch
    assert got.shape == ref.shape, (got.shape, ref.shape)
    scale = np.linalg.norm(ref)
    err = np.linalg.norm(got.astype(ref.dtype) - ref)
    assert err <= TOL[dtype] * max(scale, 1e-300), (err / max(scale, 1e-300), TOL[dtype])


def np_norm(norm):
    return "backward" if norm is None else norm


SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


# ---- every length, every direction ----

@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", [C128, C64])
def test_fft_ifft_of_every_length(n, dtype):
    # 9 lines: one block of 8 lines through the lane kernels, one line alone
    x, a = rand((9, n), dtype, seed=n)
    for norm in NORMS:
        check(ptl.fft.fft(x, norm=norm), np.fft.fft(a, norm=np_norm(norm)), dtype)
        check(ptl.fft.ifft(x, norm=norm), np.fft.ifft(a, norm=np_norm(norm)), dtype)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_real_transforms_of_every_length(n, dtype):
    cdtype = C128 if dtype == ptl.float64 else C64
    x, a = rand((2, n), dtype, seed=n)
    z, b = rand((2, n // 2 + 1), cdtype, seed=n + 1)
    for norm in NORMS:
        nn = np_norm(norm)
        check(ptl.fft.rfft(x, norm=norm), np.fft.rfft(a, norm=nn), cdtype)
        check(ptl.fft.ihfft(x, norm=norm), np.fft.ihfft(a, norm=nn), cdtype)
        check(ptl.fft.fft(x, norm=norm), np.fft.fft(a, norm=nn), cdtype)   # real input
        check(ptl.fft.ifft(x, norm=norm), np.fft.ifft(a, norm=nn), cdtype)
        check(ptl.fft.irfft(z, n=n, norm=norm), np.fft.irfft(b, n=n, norm=nn), dtype)
        check(ptl.fft.hfft(z, n=n, norm=norm), np.fft.hfft(b, n=n, norm=nn), dtype)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_irfft_default_length_and_ignored_imaginary_parts(n):
    z, b = rand((4, n), C128, seed=3)
    check(ptl.fft.irfft(z), np.fft.irfft(b), ptl.float64)
    check(ptl.fft.hfft(z), np.fft.hfft(b), ptl.float64)


# ---- several dims ----

ND_CASES = [((4, 6), None, None), ((3, 4, 5), None, (0, 2)), ((3, 4, 5), (6, 3), None),
            ((3, 4, 5), (2, 7), (2, 0)), ((2, 3, 4, 6), None, (1, -1)), ((5, 7), (-1, 9), None)]


@pytest.mark.parametrize("shape,s,dim", ND_CASES)
@pytest.mark.parametrize("norm", NORMS)
def test_complex_nd(shape, s, dim, norm):
    x, a = rand(shape, C128, seed=len(shape))
    axes = dim
    ss = None if s is None else [a.shape[d] if v == -1 else v for v, d in
                                 zip(s, dim or range(a.ndim - len(s), a.ndim))]
    nn = np_norm(norm)
    check(ptl.fft.fftn(x, s=s, dim=dim, norm=norm), np.fft.fftn(a, ss, axes, norm=nn), C128)
    check(ptl.fft.ifftn(x, s=s, dim=dim, norm=norm), np.fft.ifftn(a, ss, axes, norm=nn), C128)
    xr, ar = rand(shape, ptl.float64, seed=7)
    check(ptl.fft.fftn(xr, s=s, dim=dim, norm=norm), np.fft.fftn(ar, ss, axes, norm=nn), C128)
    check(ptl.fft.rfftn(xr, s=s, dim=dim, norm=norm), np.fft.rfftn(ar, ss, axes, norm=nn),
          C128)
    check(ptl.fft.ihfftn(xr, s=s, dim=dim, norm=norm),
          np.conj(np.fft.rfftn(ar, ss, axes, norm=SWAP[norm])), C128)
    y, b = rand(shape, C128, seed=9)
    check(ptl.fft.irfftn(y, s=s, dim=dim, norm=norm), np.fft.irfftn(b, ss, axes, norm=nn),
          ptl.float64)
    check(ptl.fft.hfftn(y, s=s, dim=dim, norm=norm),
          np.fft.irfftn(np.conj(b), ss, axes, norm=SWAP[norm]), ptl.float64)


@pytest.mark.parametrize("norm", NORMS)
def test_two_dim_functions(norm):
    x, a = rand((3, 6, 10), C128, seed=2)
    xr, ar = rand((3, 6, 10), ptl.float64, seed=3)
    nn = np_norm(norm)
    check(ptl.fft.fft2(x, norm=norm), np.fft.fft2(a, norm=nn), C128)
    check(ptl.fft.ifft2(x, norm=norm), np.fft.ifft2(a, norm=nn), C128)
    check(ptl.fft.fft2(x, s=(4, 12), dim=(0, 2), norm=norm),
          np.fft.fft2(a, (4, 12), (0, 2), norm=nn), C128)
    check(ptl.fft.rfft2(xr, norm=norm), np.fft.rfft2(ar, norm=nn), C128)
    check(ptl.fft.irfft2(x, norm=norm), np.fft.irfft2(a, norm=nn), ptl.float64)
    check(ptl.fft.irfft2(x, s=(5, 7), norm=norm), np.fft.irfft2(a, (5, 7), norm=nn),
          ptl.float64)
    check(ptl.fft.hfft2(x, norm=norm), np.fft.irfft2(np.conj(a), norm=SWAP[norm]), ptl.float64)
    check(ptl.fft.ihfft2(xr, norm=norm), np.conj(np.fft.rfft2(ar, norm=SWAP[norm])), C128)


def test_zero_dim_input_of_fftn_is_itself():
    x = ptl.tensor(2.5 - 1j, dtype=C128)
    assert ptl.fft.fftn(x).shape == () and complex(ptl.fft.fftn(x).item()) == 2.5 - 1j
    r = ptl.fft.fftn(ptl.tensor(3.0))
    assert r.dtype == C64 and complex(r.item()) == 3


@torch_ref
@pytest.mark.parametrize("norm", NORMS)
def test_every_transform_matches_torch(norm):
    # hfftn / ihfftn have no NumPy twin: PyTorch is their second reference
    gen = np.random.default_rng(3)
    a = gen.standard_normal((4, 6, 5)) + 1j * gen.standard_normal((4, 6, 5))
    r = gen.standard_normal((4, 6, 10))
    for name in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                 "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
                 "ihfftn"]:
        src = r if name.startswith(("rfft", "ihfft")) else a
        ours = getattr(ptl.fft, name)(ptl.tensor(src), norm=norm).resolve_conj().numpy()
        theirs = getattr(torch.fft, name)(torch.tensor(src), norm=norm).resolve_conj().numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, err_msg=name)


def _np_nd(name):
    swap = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
    return {"fftn": np.fft.fftn, "ifftn": np.fft.ifftn, "rfftn": np.fft.rfftn,
            "irfftn": np.fft.irfftn,
            "hfftn": lambda x, s, axes, norm: np.fft.irfftn(np.conj(x), s, axes, swap[norm]),
            "ihfftn": lambda x, s, axes, norm: np.conj(np.fft.rfftn(x, s, axes, swap[norm]))}[name]


@pytest.mark.parametrize("seed", range(6))
def test_random_cases_against_numpy(seed):
    # random ranks, shapes, dtypes, layouts (contiguous, transposed, a slice of an expanded
    # tensor), dims (negative ones too), s and norms, 40 cases a seed
    gen = np.random.default_rng(seed)
    for _ in range(40):
        nd = int(gen.integers(1, 4))
        shape = tuple(int(v) for v in gen.integers(1, 12, nd))
        cplx, single = bool(gen.integers(0, 2)), bool(gen.integers(0, 2))
        dtype = (C64 if single else C128) if cplx else (ptl.float32 if single else ptl.float64)
        t, _ = rand(shape, dtype, seed=int(gen.integers(1 << 30)))
        layout = int(gen.integers(0, 3))
        if layout == 1 and nd >= 2:
            t = t.transpose(0, nd - 1).contiguous().transpose(0, nd - 1)
        elif layout == 2:
            t = t.unsqueeze(0).expand(3, *shape)[1]
        a = t.numpy().astype(np.complex128 if cplx else np.float64)
        dims = [int(d) for d in gen.permutation(nd)[:int(gen.integers(1, nd + 1))]]
        dims = [d - nd if gen.integers(0, 2) else d for d in dims]
        s = [int(gen.integers(1, 14)) for _ in dims] if gen.integers(0, 2) else None
        norm = [None, "ortho", "forward", "backward"][int(gen.integers(0, 4))]
        names = ["fftn", "ifftn"] + (["irfftn", "hfftn"] if cplx else ["rfftn", "ihfftn"])
        name = names[int(gen.integers(0, len(names)))]
        if name in ("irfftn", "hfftn") and s is None and a.shape[dims[-1]] == 1:
            continue   # 0 output points: the error tests cover it
        ref = _np_nd(name)(a, s, dims, norm=norm or "backward")
        got = getattr(ptl.fft, name)(t, s=s, dim=dims, norm=norm)
        check(got, ref, C64 if single else C128)   # the tolerance of the precision


# ---- layouts, padding, sizes ----

@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("dtype", [C128, C64, ptl.float64, ptl.float32])
def test_non_contiguous_inputs(layout, dtype):
    x, a = rand((6, 10), dtype, seed=4, layout=layout)
    assert not x.is_contiguous()
    cd = C64 if dtype in (C64, ptl.float32) else C128
    for dim in (0, 1):
        check(ptl.fft.fft(x, dim=dim), np.fft.fft(a, axis=dim), cd)
    check(ptl.fft.fftn(x), np.fft.fftn(a), cd)
    if dtype in (ptl.float64, ptl.float32):
        check(ptl.fft.rfftn(x), np.fft.rfftn(a), cd)
        check(ptl.fft.rfft(x, dim=0), np.fft.rfft(a, axis=0), cd)
    else:
        rd = ptl.float64 if dtype == C128 else ptl.float32
        check(ptl.fft.irfftn(x), np.fft.irfftn(a), rd)
        check(ptl.fft.irfft(x, dim=0), np.fft.irfft(a, axis=0), rd)


@pytest.mark.parametrize("shape", [(16, 24), (13, 9), (8, 8), (7, 40), (24, 5), (34, 18)])
def test_complex64_block_paths(shape):
    # contiguous complex64 lines of a block move as an 8x8 transpose of 8 points (and the
    # points past the last multiple of 8 one by one); lines 8 bytes apart (a transform
    # along dim 0) move a 64-byte row per point; both against the element-wise paths
    x, a = rand(shape, C64, seed=11)
    for dim in (0, 1):
        check(ptl.fft.fft(x, dim=dim), np.fft.fft(a, axis=dim), C64)
        check(ptl.fft.ifft(x, dim=dim, norm="ortho"), np.fft.ifft(a, axis=dim, norm="ortho"),
              C64)
    check(ptl.fft.fft2(x), np.fft.fft2(a), C64)
    # float32 lines: their (x_2j, x_2j+1) pairs move as complex64 words; the half spectra
    # of irfft / hfft come in as complex64 rows, their float32 pairs go out as words
    xr, ar = rand(shape, ptl.float32, seed=12)
    for dim in (0, 1):
        check(ptl.fft.rfft(xr, dim=dim), np.fft.rfft(ar, axis=dim), C64)
        check(ptl.fft.ihfft(xr, dim=dim), np.fft.ihfft(ar, axis=dim), C64)
        check(ptl.fft.irfft(x, dim=dim), np.fft.irfft(a, axis=dim), ptl.float32)
        check(ptl.fft.hfft(x, n=10, dim=dim), np.fft.hfft(a, n=10, axis=dim), ptl.float32)
    check(ptl.fft.rfft2(xr), np.fft.rfft2(ar), C64)
    check(ptl.fft.irfft2(x), np.fft.irfft2(a), ptl.float32)
    # the row moves give the element loops' bits: the same values every other element
    for fn, t in [(ptl.fft.rfft, xr), (ptl.fft.irfft, x), (ptl.fft.fft, x)]:
        spread = np.zeros((shape[0], 2 * shape[1]), t.numpy().dtype)
        spread[:, ::2] = t.numpy()
        for dim in (0, 1):
            np.testing.assert_array_equal(fn(t, dim=dim).numpy(),
                                          fn(ptl.tensor(spread)[:, ::2], dim=dim).numpy())


@pytest.mark.parametrize("n", [1, 3, 8, 13, 40])
def test_n_pads_and_trims(n):
    x, a = rand((3, 8), C128, seed=5)
    xr, ar = rand((3, 8), ptl.float64, seed=6)
    check(ptl.fft.fft(x, n=n), np.fft.fft(a, n=n), C128)
    check(ptl.fft.ifft(x, n=n, dim=0), np.fft.ifft(a, n=n, axis=0), C128)
    check(ptl.fft.rfft(xr, n=n), np.fft.rfft(ar, n=n), C128)
    check(ptl.fft.ihfft(xr, n=n), np.fft.ihfft(ar, n=n), C128)
    check(ptl.fft.irfft(x, n=n), np.fft.irfft(a, n=n), ptl.float64)
    check(ptl.fft.hfft(x, n=n), np.fft.hfft(a, n=n), ptl.float64)


def test_size_zero():
    z = ptl.zeros(0, 5, dtype=C64)
    assert ptl.fft.fft(z).shape == (0, 5)
    assert ptl.fft.rfft(ptl.zeros(0, 8)).shape == (0, 5)
    assert ptl.fft.irfft(ptl.zeros(0, 5, dtype=C128)).shape == (0, 8)
    assert ptl.fft.fftn(ptl.zeros(3, 0, 4), dim=(0, 2)).shape == (3, 0, 4)
    padded = ptl.fft.fft(ptl.zeros(2, 0), n=4)
    assert padded.shape == (2, 4) and not padded.abs().sum().item()
    assert ptl._fft_r2c(ptl.zeros(3, 0), [1], 0, True).shape == (3, 1)


def test_dtypes():
    assert ptl.fft.fft(ptl.arange(4)).dtype == C64
    assert ptl.fft.fft(ptl.ones(3, dtype=ptl.bool)).dtype == C64
    assert ptl.fft.rfft(ptl.ones(4, dtype=ptl.float64)).dtype == C128
    assert ptl.fft.irfft(ptl.ones(4, dtype=C64)).dtype == ptl.float32
    assert ptl.fft.irfft(ptl.ones(4, dtype=ptl.float64)).dtype == ptl.float64
    ptl.set_default_dtype(ptl.float64)
    try:
        assert ptl.fft.fft(ptl.arange(4)).dtype == C128
    finally:
        ptl.set_default_dtype(ptl.float32)
    check(ptl.fft.fft(ptl.arange(6)), np.fft.fft(np.arange(6.0)), C64)


def test_out():
    x, a = rand((3, 8), C128, seed=8)
    out = ptl.empty(0, dtype=C128)
    assert ptl.fft.fft(x, out=out) is out
    check(out, np.fft.fft(a), C128)
    r = ptl.empty(2, dtype=ptl.float64)
    assert ptl.fft.irfft(x, out=r) is r
    check(r, np.fft.irfft(a), ptl.float64)
    wide = ptl.empty(0, dtype=C128)
    ptl.fft.fft(x.to(C64), out=wide)
    assert wide.dtype == C128


# ---- threads ----

# FFT_GRAIN_POINTS = 16384 points per task: lines of n = 64 split in tasks of 256 lines, so
# 511 lines run on one thread and 512 on two; each task runs blocks of FFT_LANES = 8 lines
# through the lane kernels and its last lines one by one
@pytest.mark.parametrize("lines", [1, 7, 8, 9, 17, 255, 256, 511, 512, 513, 1030])
def test_threads_across_the_split(lines):
    x, a = rand((lines, 64), C128, seed=lines)
    xr, ar = rand((64, lines), ptl.float64, seed=lines)
    results = []
    for threads in (1, 2):
        with num_threads(threads):
            got = [ptl.fft.fft(x), ptl.fft.rfft(xr, dim=0), ptl.fft.irfft(x), ptl.fft.fft2(x)]
        check(got[0], np.fft.fft(a), C128)
        check(got[1], np.fft.rfft(ar, axis=0), C128)
        check(got[2], np.fft.irfft(a), ptl.float64)
        check(got[3], np.fft.fft2(a), C128)
        results.append([g.numpy() for g in got])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("n", LENGTHS + [194, 2062])   # and real halves through Bluestein
def test_lane_blocks_give_the_bits_of_lines_in_small_batches(n):
    # a block of 8 lines and lines of a 2-line batch (transformed one by one) agree to the
    # bit, so results do not depend on how lines fall into threads; a line alone may take
    # the four-step path (Note [Four-step]), checked against NumPy by the other tests
    x, _ = rand((8, n), C128, seed=n)
    xr, _ = rand((8, n), ptl.float64, seed=n)
    z, _ = rand((8, n // 2 + 1), C128, seed=n)
    for fn, a in [(ptl.fft.fft, x), (ptl.fft.rfft, xr), (lambda t: ptl.fft.irfft(t, n=n), z)]:
        block = fn(a).numpy()
        ref = {ptl.fft.fft: lambda b: np.fft.fft(b), ptl.fft.rfft: lambda b: np.fft.rfft(b)}.get(
            fn, lambda b: np.fft.irfft(b, n=n))
        check(fn(a), ref(a.numpy()), C128 if block.dtype == np.complex128 else ptl.float64)
        for i in range(0, 8, 2):
            np.testing.assert_array_equal(block[i:i + 2], fn(a[i:i + 2]).numpy())


def test_no_leaks():
    x, _ = rand((9, 12), C128)
    xr, _ = rand((3, 10), ptl.float64)

    def run():
        ptl.fft.fftn(x)
        ptl.fft.irfft2(x)
        ptl.fft.rfft(xr, n=97)
        z = x.detach().requires_grad_()
        ptl.fft.hfft(z).sum().backward()
    assert_no_leak(run)


def test_long_lines():
    # 2^18 points: the four-step path over a plan that has one of its own; 3 * 2^16 + 1 =
    # 7 * 28087: Bluestein over 2^19 points
    for n in (2 ** 18, 3 * 2 ** 16 + 1):
        x, a = rand((1, n), C128, seed=n)
        check(ptl.fft.fft(x), np.fft.fft(a), C128)
        xr, ar = rand((n,), ptl.float64, seed=n)
        check(ptl.fft.irfft(ptl.fft.rfft(xr), n=n), ar, ptl.float64)


def test_plans_for_many_lengths_at_once():
    # more lengths than the plan cache holds, twice, and back to the first
    for n in list(range(1, 40)) * 2:
        x, a = rand((2, n), C128, seed=n)
        check(ptl.fft.fft(x), np.fft.fft(a), C128)


# ---- helpers ----

@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_and_rfftfreq(n, d):
    if n:
        np.testing.assert_allclose(ptl.fft.fftfreq(n, d, dtype=ptl.float64).numpy(),
                                   np.fft.fftfreq(n, d), rtol=1e-15)
        np.testing.assert_allclose(ptl.fft.rfftfreq(n, d, dtype=ptl.float64).numpy(),
                                   np.fft.rfftfreq(n, d), rtol=1e-15)
    else:   # NumPy divides by zero; PyTorch gives [] and [nan]
        assert ptl.fft.fftfreq(0).shape == (0,)
        assert np.isnan(ptl.fft.rfftfreq(0).numpy()).all() and ptl.fft.rfftfreq(0).shape == (1,)
    assert ptl.fft.fftfreq(n, d).dtype == ptl.float32
    assert ptl.fft.fftfreq(4, requires_grad=True).requires_grad


@pytest.mark.parametrize("shape,dim", [((5,), None), ((4, 7), None), ((4, 7), 1),
                                       ((4, 7), (0, 1)), ((3, 4, 5), (-1, 0))])
def test_fftshift_and_ifftshift(shape, dim):
    a = np.arange(np.prod(shape)).reshape(shape)
    x = ptl.tensor(a)
    np.testing.assert_array_equal(ptl.fft.fftshift(x, dim).numpy(), np.fft.fftshift(a, dim))
    np.testing.assert_array_equal(ptl.fft.ifftshift(x, dim).numpy(), np.fft.ifftshift(a, dim))


# ---- autograd ----

def crand(*shape, seed=0):
    gen = np.random.default_rng(seed)
    a = gen.standard_normal(shape) + 1j * gen.standard_normal(shape)
    return ptl.tensor(a, dtype=C128).requires_grad_()


def frand(*shape, seed=0):
    return ptl.tensor(np.random.default_rng(seed).standard_normal(shape),
                      dtype=ptl.float64).requires_grad_()


@pytest.mark.parametrize("norm", [0, 1, 2])
def test_gradcheck_operators(norm):
    for forward in (True, False):
        assert gradcheck(lambda z: ptl._fft_c2c(z, [0, 2], norm, forward), (crand(3, 2, 4),))
    for onesided in (True, False):
        for n in (5, 6):
            assert gradcheck(lambda x: ptl._fft_r2c(x, [0, 1], norm, onesided),
                             (frand(3, n),))
    for n in (5, 6, 1, 2):
        assert gradcheck(lambda z: ptl._fft_c2r(z, [1], norm, n), (crand(2, n // 2 + 1),))
    assert gradcheck(lambda z: ptl._fft_c2r(z, [0, 1], norm, 6), (crand(3, 4),))
    # an input longer than the half spectrum: its extra bins get 0
    assert gradcheck(lambda z: ptl._fft_c2r(z, [1], norm, 4), (crand(2, 6),))


def test_gradgradcheck_operators():
    assert gradgradcheck(lambda z: ptl._fft_c2c(z, [1], 1, True), (crand(2, 5),))
    assert gradgradcheck(lambda x: ptl._fft_r2c(x, [1], 0, True), (frand(2, 6),))
    assert gradgradcheck(lambda z: ptl._fft_c2r(z, [1], 2, 7), (crand(2, 4),))


def test_gradcheck_compositions():
    assert gradcheck(lambda z: ptl.fft.fftn(z, dim=(0, 1), norm="ortho"), (crand(3, 4, 2),))
    assert gradcheck(lambda x: ptl.fft.fftn(x, s=(5, 3)), (frand(4, 4),))
    assert gradcheck(lambda x: ptl.fft.rfft(x, n=10), (frand(2, 7),))
    assert gradcheck(lambda x: ptl.fft.rfft(x, n=4), (frand(2, 7),))
    assert gradcheck(lambda z: ptl.fft.irfft(z, n=9), (crand(2, 4),))
    assert gradcheck(lambda z: ptl.fft.irfft(z, n=4), (crand(2, 6),))
    assert gradcheck(lambda z: ptl.fft.hfft(z, norm="forward"), (crand(3, 5),))
    assert gradcheck(lambda x: ptl.fft.ihfft(x), (frand(3, 6),))
    assert gradcheck(lambda z: ptl.fft.irfftn(z, s=(3, 6)), (crand(3, 4),))
    assert gradcheck(lambda x: ptl.fft.ifft(x), (frand(5),))


def test_grad_fn_names():
    z = crand(2, 4)
    x = frand(2, 4)
    assert type(ptl.fft.fft(z).grad_fn).__name__ == "FftC2CBackward0"
    assert type(ptl.fft.rfft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(ptl.fft.fft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(ptl.fft.irfft(z).grad_fn).__name__ == "FftC2RBackward0"


# ---- errors ----

X = lambda lib: lib.randn(4, 6)   # noqa: E731
Z = lambda lib: lib.complex(lib.randn(4, 6), lib.randn(4, 6))   # noqa: E731


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda t: t.fft.fft(X(t), norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda t: t.fft.fft(X(t), n=0), RuntimeError, "Invalid number of data points (0) specified"),
    (lambda t: t.fft.fft(X(t), n=-1), RuntimeError,
     "Invalid number of data points (-1) specified"),
    (lambda t: t.fft.fft(X(t), dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda t: t.fft.fft(t.tensor(1.)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda t: t.fft.rfft(t.tensor(1.)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda t: t.fft.fftn(X(t), dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda t: t.fft.fftn(X(t), s=(2,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda t: t.fft.fftn(X(t), s=(2, 2, 2)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda t: t.fft.fftn(X(t), s=(0, 2)), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.fftn(X(t), s=(-2, 3)), RuntimeError,
     "Invalid number of data points (-2) specified"),
    (lambda t: t.fft.fftn(X(t), dim=(0, 1, 2)), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda t: t.fft.fft2(t.randn(4)), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (lambda t: t.fft.irfft(Z(t), n=0), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.irfft(t.complex(t.randn(3, 1), t.randn(3, 1))), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.irfft(t.complex(t.randn(3, 0), t.randn(3, 0))), RuntimeError,
     "Invalid number of data points (-2) specified"),
    (lambda t: t.fft.irfftn(Z(t), s=(3, 0)), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.hfft(Z(t), n=0), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.rfft(Z(t)), RuntimeError,
     "rfft expects a real input tensor, but got ComplexFloat"),
    (lambda t: t.fft.ihfft(Z(t)), RuntimeError,
     "ihfft expects a real input tensor, but got ComplexFloat"),
    (lambda t: t.fft.rfft2(Z(t)), RuntimeError,
     "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    (lambda t: t.fft.ihfftn(Z(t)), RuntimeError,
     "Only supports floating-point dtypes, but found: ComplexFloat"),
    (lambda t: t.fft.rfft(t.randn(3, 0)), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.fft(t.randn(3, 0)), RuntimeError,
     "Invalid number of data points (0) specified"),
    (lambda t: t.fft.rfft(t.ones(4, dtype=t.float16)), RuntimeError, "Unsupported dtype Half"),
    (lambda t: t.fft.fft(t.ones(4, dtype=t.bfloat16)), RuntimeError,
     "Unsupported dtype BFloat16"),
    (lambda t: t.fft.rfftn(X(t), dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda t: t.fft.irfftn(Z(t), dim=()), RuntimeError,
     "irfftn must transform at least one axis"),
    (lambda t: t.fft.rfftn(t.tensor(1.)), RuntimeError, "rfftn must transform at least one axis"),
    (lambda t: t.fft.fft(X(t), out=t.empty(6)), RuntimeError,
     "fft expects a complex output tensor, but got Float"),
    (lambda t: t.fft.irfft(Z(t), out=t.empty(0, dtype=t.complex64)), RuntimeError,
     "irfft expects a floating point output tensor, but got ComplexFloat"),
    (lambda t: t.fft.hfftn(Z(t), out=t.empty(0, dtype=t.complex64)), RuntimeError,
     "hfftn expects a floating point output tensor, but got ComplexFloat"),
    (lambda t: t.fft.fftfreq(4, dtype=t.int64), RuntimeError,
     "fftfreq requires a floating point or complex dtype"),
    (lambda t: t.fft.fftshift(X(t), dim=3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    (lambda t: t.fft.fftshift(t.tensor(1.)), RuntimeError, "`shifts` required"),
    (lambda t: t.fft.fft(X(t), dim=1.0), TypeError,
     "fft_fft(): argument 'dim' must be int, not float"),
    (lambda t: t.fft.fft(X(t), n=2.5), TypeError,
     "fft_fft(): argument 'n' must be int, not float"),
    (lambda t: t.fft.fft(X(t).requires_grad_(), out=t.empty(0, dtype=t.complex64)),
     RuntimeError, "_fft_r2c(): functions with out=... arguments don't support automatic "
     "differentiation, but one of the arguments requires grad."),
    (lambda t: t.fft.fft2(X(t).requires_grad_(), out=t.empty(0, dtype=t.complex64)),
     RuntimeError, "_fft_c2c(): functions with out=..."),
    (lambda t: t.fft.rfftn(X(t).requires_grad_(), out=t.empty(0, dtype=t.complex64)),
     RuntimeError, "_fft_r2c(): functions with out=..."),
    (lambda t: t.fft.ihfft2(X(t).requires_grad_(), out=t.empty(0, dtype=t.complex64)),
     RuntimeError, "_fft_c2c(): functions with out=..."),
    (lambda t: t.fft.irfft2(Z(t).requires_grad_(), out=t.empty(0)), RuntimeError,
     "_fft_c2r(): functions with out=..."),
    (lambda t: t.fft.fft(X(t), n=True), TypeError,
     "fft_fft(): argument 'n' must be int, not bool"),
    (lambda t: t.fft.fft(X(t), norm=1), TypeError,
     "fft_fft(): argument 'norm' must be str, not int"),
])
def test_errors_match_torch(fn, exc, msg):
    assert_raises_like_torch(fn, exc, msg)


def test_operator_errors():
    z = ptl.complex(ptl.randn(4, 6), ptl.randn(4, 6))
    with pytest.raises(RuntimeError, match="_fft_c2c: dims must be unique"):
        ptl._fft_c2c(z, [1, 1], 0, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ptl._fft_c2c(z, [5], 0, True)
    with pytest.raises(RuntimeError, match="_fft_c2c: expected a complex input tensor"):
        ptl._fft_c2c(z.real, [1], 0, True)
    with pytest.raises(RuntimeError, match="_fft_r2c: expected a real input tensor"):
        ptl._fft_r2c(z, [1], 0, True)
    with pytest.raises(RuntimeError, match="_fft_c2r: expected a complex input tensor"):
        ptl._fft_c2r(z.real, [1], 0, 10)
    with pytest.raises(RuntimeError, match="_fft_c2c: invalid normalization 3"):
        ptl._fft_c2c(z, [1], 3, True)
    with pytest.raises(RuntimeError, match="_fft_c2r: expected last_dim_size >= 1, got 0"):
        ptl._fft_c2r(z, [1], 0, 0)
    with pytest.raises(RuntimeError, match="_fft_c2r: 12 points need 7 input bins"):
        ptl._fft_c2r(z, [1], 0, 12)
    with pytest.raises(RuntimeError, match="_fft_r2c: expected at least one dim"):
        ptl._fft_r2c(z.real, [], 0, True)


def test_meta_tensors_get_the_geometry():
    z = ptl.empty(3, 4, 6, dtype=C64, device="meta")
    x = ptl.empty(3, 4, 6, device="meta")
    for got, shape, dtype in [(ptl.fft.fft(z), (3, 4, 6), C64),
                              (ptl.fft.rfft(x), (3, 4, 4), C64),
                              (ptl.fft.irfftn(z, dim=(0, 2)), (3, 4, 10), ptl.float32),
                              (ptl.fft.fft2(x.double()), (3, 4, 6), C128),
                              (ptl._fft_r2c(x, [1], 2, False), (3, 4, 6), C64)]:
        assert got.is_meta and got.shape == shape and got.dtype == dtype
