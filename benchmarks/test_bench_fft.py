"""FFT benchmarks (Note [FFT kernel] in src/aten/native/fft.c, Note [FFT float32] in
fft_f32.c): fft of 1024 and 4096 complex64 points (a batch of 64 lines and one line) and
of 64 lines of 1000 points (not a power of two), rfft of 2^16 float32, fft2 of 256x256
complex64, and rfft / irfft of a batch of 64 float32 lines of 1024 points.  Each group runs
pytorchlite, NumPy and (when installed) PyTorch on the same data.

    taskset -c 1 /work/venv-torch/bin/python -m pytest benchmarks/test_bench_fft.py \
        --benchmark-enable -q
"""
import numpy as np
import pytest

from _impls import IMPLS, lib, make, randn


def crandn(shape):
    return (randn(shape) + 1j * randn(shape, seed=1)).astype(np.complex64)


def fft_of(impl, name):
    return getattr(np.fft, name) if impl == "numpy" else getattr(lib(impl).fft, name)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", [(1024,), (64, 1024), (4096,), (16, 4096), (64, 1000)])
def test_fft_complex64(benchmark, impl, shape):
    benchmark.group = f"fft {shape} complex64"
    benchmark(fft_of(impl, "fft"), make(impl, crandn(shape)))


@pytest.mark.parametrize("impl", IMPLS)
def test_rfft_float32(benchmark, impl):
    benchmark.group = "rfft 2^16 float32"
    benchmark(fft_of(impl, "rfft"), make(impl, randn(2 ** 16)))


@pytest.mark.parametrize("impl", IMPLS)
def test_rfft_irfft_batched_float32(benchmark, impl):
    benchmark.group = "rfft + irfft 64x1024 float32"
    rfft, irfft = fft_of(impl, "rfft"), fft_of(impl, "irfft")
    x = make(impl, randn((64, 1024)))
    benchmark(lambda: irfft(rfft(x)))


@pytest.mark.parametrize("impl", IMPLS)
def test_fft2_complex64(benchmark, impl):
    benchmark.group = "fft2 256x256 complex64"
    benchmark(fft_of(impl, "fft2"), make(impl, crandn((256, 256))))
