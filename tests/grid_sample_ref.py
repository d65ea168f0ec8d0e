"""NumPy float64 references of grid_sample's sampling rules, written from PyTorch's (every
mode, padding and align_corners), shared by the CPU kernel's tests
(tests/aten/test_grid_sampler_channels_last.py) and the CUDA kernels' plan tests
(tests/cuda/test_grid_sampler_plan.py)."""
import numpy as np

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def reflect(x, lo2, hi2):
    """x reflected into [lo2 / 2, hi2 / 2] (PyTorch's reflect_coordinates)"""
    if lo2 == hi2:
        return np.zeros_like(x)
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    x = np.abs(x - lo)
    extra, flips = np.fmod(x, span), np.floor(x / span)
    return np.where(flips % 2 == 0, extra + lo, span - extra + lo)


def padded(x, n, pad, align):
    if pad == "reflection":
        x = reflect(x, 0, 2 * (n - 1)) if align else reflect(x, -1, 2 * n - 1)
    return x if pad == "zeros" else np.clip(x, 0, n - 1)


def taps(g, n, mode, pad, align):
    """[(index, weight)] along one dim of size n for grid values g"""
    x = (g + 1) / 2 * (n - 1) if align else ((g + 1) * n - 1) / 2
    if mode != "bicubic":
        x = padded(x, n, pad, align)
    if mode == "nearest":
        return [(np.rint(x), np.ones_like(x))]
    x0 = np.floor(x)
    t = x - x0
    if mode == "bilinear":
        return [(x0, 1 - t), (x0 + 1, t)]
    a = -0.75

    def near(u):
        return ((a + 2) * u - (a + 3)) * u * u + 1

    def far(u):
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    w = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    return [(np.trunc(padded(x0 - 1 + k, n, pad, align)), w[k]) for k in range(4)]
