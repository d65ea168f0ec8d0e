"""torch.stft / torch.istft (pytorchlite/_stft.py) on top of torch.fft: against a NumPy
reference written from the definition (frames of the reflect-padded signal times the
centred window, transformed), the round trip istft(stft(x)) == x, gradcheck through both,
the errors; and against PyTorch itself where it is installed."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import torch, torch_ref

RNG = np.random.default_rng(7)


def np_stft(x, n_fft, hop, window, center=True, pad_mode="reflect", normalized=False,
            onesided=True):
    """x (B, L) float64 or complex128; window already n_fft long."""
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0), (p, p)], mode=pad_mode)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    f = np.stack([x[:, t * hop:t * hop + n_fft] * window for t in range(frames)], 1)
    spec = np.fft.rfft(f, axis=-1) if onesided else np.fft.fft(f, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    return spec.transpose(0, 2, 1)


def centred(window, n_fft):
    left = (n_fft - len(window)) // 2
    return np.concatenate([np.zeros(left), window, np.zeros(n_fft - len(window) - left)])


CASES = [dict(n_fft=16), dict(n_fft=16, hop_length=3), dict(n_fft=15, win_length=9),
         dict(n_fft=16, center=False), dict(n_fft=16, normalized=True),
         dict(n_fft=8, pad_mode="constant"), dict(n_fft=16, onesided=False),
         dict(n_fft=32, hop_length=32 // 4, win_length=20)]


@pytest.mark.parametrize("case", CASES)
def test_stft_matches_numpy(case):
    x = RNG.standard_normal((2, 100))
    n_fft = case["n_fft"]
    win_length = case.get("win_length", n_fft)
    hop = case.get("hop_length", n_fft // 4)
    w = np.hanning(win_length + 1)[:-1]
    got = ptl.stft(ptl.tensor(x), window=ptl.tensor(w), return_complex=True, **case)
    ref = np_stft(x, n_fft, hop, centred(w, n_fft), case.get("center", True),
                  case.get("pad_mode", "reflect"), case.get("normalized", False),
                  case.get("onesided", True))
    assert got.shape == ref.shape and got.dtype == ptl.complex128
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    one = ptl.stft(ptl.tensor(x[0]), window=ptl.tensor(w), return_complex=True, **case)
    np.testing.assert_allclose(one.numpy(), ref[0], rtol=1e-12, atol=1e-12)


def test_stft_of_complex_input_and_default_window():
    x = RNG.standard_normal((1, 64)) + 1j * RNG.standard_normal((1, 64))
    got = ptl.stft(ptl.tensor(x), 16)
    assert got.dtype == ptl.complex128
    np.testing.assert_allclose(got.numpy(), np_stft(x, 16, 4, np.ones(16), onesided=False),
                               rtol=1e-12, atol=1e-12)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        real = ptl.stft(ptl.tensor(x.real), 16, return_complex=False)
    np.testing.assert_allclose(real.numpy()[..., 0] + 1j * real.numpy()[..., 1],
                               np_stft(x.real, 16, 4, np.ones(16)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [dict(n_fft=16), dict(n_fft=16, hop_length=5),
                                  dict(n_fft=15, win_length=11), dict(n_fft=16, center=False),
                                  dict(n_fft=16, normalized=True), dict(n_fft=16,
                                                                        onesided=False)])
def test_istft_inverts_stft(case):
    x = ptl.tensor(RNG.standard_normal((3, 120)))
    win = ptl.hann_window(case.get("win_length", case["n_fft"]), dtype=ptl.float64)
    if not case.get("center", True):   # the first and last samples carry no window weight
        win = win + 0.1
    spec = ptl.stft(x, window=win, return_complex=True, **case)
    length = 120 if not case.get("center", True) else None
    y = ptl.istft(spec, window=win, length=length, **case)
    n = y.shape[-1]
    np.testing.assert_allclose(y.numpy(), x.numpy()[:, :n], rtol=1e-10, atol=1e-12)
    assert n >= 120 - case.get("hop_length", 4)
    back = ptl.istft(spec, window=win, return_complex=True,
                     **{**case, "onesided": False}) if case.get("onesided") is False else None
    if back is not None:
        np.testing.assert_allclose(back.numpy().real, x.numpy()[:, :back.shape[-1]],
                                   rtol=1e-10, atol=1e-12)


def test_istft_length_and_warnings():
    x = ptl.tensor(RNG.standard_normal(100))
    spec = ptl.stft(x, 16, window=ptl.ones(16, dtype=ptl.float64), return_complex=True)
    with pytest.warns(UserWarning, match="A window was not provided"):
        y = ptl.istft(spec, 16, length=90)
    np.testing.assert_allclose(y.numpy(), x.numpy()[:90], rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match="The length of signal is shorter than the length"):
        y = ptl.istft(spec, 16, window=ptl.ones(16, dtype=ptl.float64), length=130)
    # the 8 samples past the signal are the reflect padding's, then zeros (as PyTorch)
    assert y.shape == (130,) and not y[108:].abs().sum().item()
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        ptl.stft(x, 16, return_complex=False)


def test_gradcheck():
    x = ptl.tensor(RNG.standard_normal((1, 24)), requires_grad=True)
    w = ptl.hann_window(8, dtype=ptl.float64)
    assert gradcheck(lambda a: ptl.stft(a, 8, window=w, return_complex=True), (x,))
    spec = ptl.stft(x.detach(), 8, window=w, return_complex=True).requires_grad_()
    assert gradcheck(lambda s: ptl.istft(s, 8, window=w), (spec,))


@pytest.mark.parametrize("fn,msg", [
    (lambda x: ptl.stft(x, 16), "stft requires the return_complex parameter be given for real "
     "inputs"),
    (lambda x: ptl.stft(x, 200, center=False, return_complex=True),
     "expected 0 < n_fft < 100, but got n_fft=200"),
    (lambda x: ptl.stft(x, 16, hop_length=0, return_complex=True),
     "expected hop_length > 0, but got hop_length=0"),
    (lambda x: ptl.stft(x, 16, win_length=20, return_complex=True),
     "expected 0 < win_length <= n_fft, but got win_length=20"),
    (lambda x: ptl.stft(x, 16, window=ptl.ones(10), return_complex=True),
     "expected a 1D window tensor of size equal to win_length=16, but got window with size "
     "[10]"),
    (lambda x: ptl.stft(x[None], 16, return_complex=True), "expected a 1D or 2D tensor"),
    (lambda x: ptl.stft(ptl.complex(x, x), 16, onesided=True, return_complex=True),
     "Cannot have onesided output if window or input is complex"),
    (lambda x: ptl.istft(x, 16), "istft requires a complex-valued input tensor matching the "
     "output from stft with return_complex=True."),
    (lambda x: ptl.istft(ptl.stft(x, 16, window=ptl.hann_window(16), return_complex=True), 20,
                         window=ptl.hann_window(20)),
     "expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / "
     "2 + 1 when onesided=True, but got 9"),
    (lambda x: ptl.istft(ptl.stft(x, 16, window=ptl.hann_window(16), return_complex=True), 16,
                         hop_length=16, window=ptl.hann_window(16)),
     "window overlap add min"),
])
def test_errors(fn, msg):
    x = ptl.randn(2, 100)
    with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(x)
    assert msg in str(info.value)


def np_aligned_stft(x, n_fft, hop, window):
    """center=False, align_to_window=True: frame t is x[t * hop:t * hop + len(window)] under
    the window, placed in n_fft points as the centred window is."""
    wl = len(window)
    left = (n_fft - wl) // 2
    frames = 1 + (x.shape[-1] - wl) // hop
    f = np.zeros(x.shape[:1] + (frames, n_fft))
    for t in range(frames):
        f[:, t, left:left + wl] = x[:, t * hop:t * hop + wl] * window
    return np.fft.rfft(f, axis=-1).transpose(0, 2, 1)


ALIGNED = [dict(n_fft=10, hop_length=4, win_length=6), dict(n_fft=11, hop_length=3,
                                                          win_length=4),
           dict(n_fft=8, hop_length=2, win_length=7), dict(n_fft=8, hop_length=1, win_length=1),
           dict(n_fft=16, hop_length=5, win_length=16), dict(n_fft=9, hop_length=3,
                                                             win_length=5)]


@pytest.mark.parametrize("case", ALIGNED)
def test_stft_align_to_window(case):
    x = RNG.standard_normal((2, 41))
    w = RNG.uniform(0.5, 1.5, case["win_length"])
    got = ptl.stft(ptl.tensor(x), window=ptl.tensor(w), center=False, return_complex=True,
                   align_to_window=True, **case)
    ref = np_aligned_stft(x, case["n_fft"], case["hop_length"], w)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    plain = ptl.stft(ptl.tensor(x), window=ptl.tensor(w), center=False, return_complex=True,
                     align_to_window=False, **case)
    np.testing.assert_allclose(plain.numpy(), np_stft(x, case["n_fft"], case["hop_length"],
                                                      centred(w, case["n_fft"]), center=False),
                               rtol=1e-12, atol=1e-12)


def test_stft_align_to_window_gradcheck():
    x = ptl.tensor(RNG.standard_normal((1, 23)), requires_grad=True)
    w = ptl.hann_window(5, dtype=ptl.float64) + 0.1
    assert gradcheck(lambda a: ptl.stft(a, 8, 3, 5, window=w, center=False,
                                        return_complex=True, align_to_window=True), (x,))


@pytest.mark.parametrize("kw,msg", [
    (dict(center=True, align_to_window=True),
     "^stft align_to_window should only be set when center = false$"),
    (dict(align_to_window=False),
     "^stft align_to_window should only be set when center = false$"),
    (dict(center=False, align_to_window=True, hop_length=0),
     r"^stft\(torch.DoubleTensor\[41\], n_fft=10, hop_length=0, win_length=10, window=None, "
     r"normalized=0, onesided=None, return_complex=1, align_to_window=1\) : expected "
     r"hop_length > 0, but got hop_length=0$"),
    (dict(center=False, hop_length=0),
     r"align_to_window=None\) : expected hop_length > 0, but got hop_length=0$"),
    (dict(n_fft=50, win_length=5, center=False, align_to_window=True),
     r"align_to_window=1\) : expected 0 < n_fft < 41, but got n_fft=5$"),
])
def test_stft_align_to_window_errors(kw, msg):
    kw = {"n_fft": 10, **kw}
    x = ptl.tensor(RNG.standard_normal(41))
    if kw["n_fft"] == 50:
        x = x[:4]
        msg = msg.replace("41", "4")
    with pytest.raises(RuntimeError, match=msg):
        ptl.stft(x, return_complex=True, **kw)


@torch_ref
@pytest.mark.parametrize("case", [ALIGNED[i] for i in (0, 1, 4, 5)])   # torch raises on 2, 3
def test_stft_align_to_window_matches_torch(case):
    a = RNG.standard_normal((2, 41))
    w = RNG.uniform(0.5, 1.5, case["win_length"])
    ours = ptl.stft(ptl.tensor(a), window=ptl.tensor(w), center=False, return_complex=True,
                    align_to_window=True, **case)
    theirs = torch.stft(torch.tensor(a), window=torch.tensor(w), center=False,
                        return_complex=True, align_to_window=True, **case)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@torch_ref
@pytest.mark.parametrize("case", CASES)
def test_stft_and_istft_match_torch(case):
    a = RNG.standard_normal((2, 100))
    w = np.hanning(case.get("win_length", case["n_fft"]) + 1)[:-1]
    ours = ptl.stft(ptl.tensor(a), window=ptl.tensor(w), return_complex=True, **case)
    theirs = torch.stft(torch.tensor(a), window=torch.tensor(w), return_complex=True, **case)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    if case.get("center", True) and "pad_mode" not in case:
        kw = {k: v for k, v in case.items() if k != "pad_mode"}
        np.testing.assert_allclose(
            ptl.istft(ours, window=ptl.tensor(w), **kw).numpy(),
            torch.istft(theirs, window=torch.tensor(w), **kw).numpy(), rtol=1e-10, atol=1e-12)
