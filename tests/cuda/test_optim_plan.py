"""The fused optimizer step kernels (src/cuda/optim.cu: one thread per element, the per-element
steps of src/aten/native/optim_step.h that the CPU kernel runs too; the hooks and emulation in
src/cuda/optim_plan.c) checked on the host: with _C._cuda_kernel_emulation on,
_fused_sgd_step_ and _fused_adam_step_ on CPU tensors take the CUDA path (the CPU kernel's
checks and bias corrections, then the kernel's grid-stride loop) and must write the CPU
kernel's bits into the parameter and every state tensor, over several steps, for every
option, float32 and float64, sizes below, at and above a grid's width under each tuning and
across the CPU's thread split (PTL_GRAIN_SIZE), the CPU reference on 1 and 2 threads.  The
device's own arithmetic (IEEE products rounded apart, sqrt and division) is compared on a
GPU by tests/cuda/test_cuda_kernels.py.  Needs no device and no nvcc."""
import contextlib

import numpy as np
import pytest

import pytorchlite as ptl
from kernel_emulation import TUNINGS, emulated

aten = ptl.ops.aten
# one grid's width under "tiny" (32) and "small" (192) and one "device" block (512), each
# +-1; 65537 crosses PTL_GRAIN_SIZE (32768) twice on the CPU side
SIZES = [0, 1, 31, 32, 33, 191, 192, 193, 511, 512, 513, 65537]

SGD_OPTIONS = [  # (momentum, dampening, weight_decay, nesterov, maximize)
    (0.0, 0.0, 0.0, False, False),
    (0.9, 0.0, 0.0, False, False),
    (0.9, 0.1, 1e-2, False, True),
    (0.9, 0.0, 1e-2, True, False),
]
ADAM_OPTIONS = [  # (weight_decay, amsgrad, maximize, decoupled)
    (0.0, False, False, False),
    (1e-2, False, False, False),
    (1e-2, True, True, False),
    (1e-1, True, False, True),
]


def state(rng, n, dtype, count):
    """count tensors of n random values in dtype; the gradient of a step is made per step."""
    return [ptl.tensor(rng.standard_normal(n), dtype=ptl.float64).to(dtype)
            for _ in range(count)]


def as_bytes(ts):
    return [t.view(ptl.uint8).numpy().tobytes() if t.numel() else b"" for t in ts]


def run_sgd(seed, n, dtype, opts, emulate):
    momentum, dampening, wd, nesterov, maximize = opts
    rng = np.random.default_rng(seed)
    p, = state(rng, n, dtype, 1)
    buf = ptl.empty(n, dtype=dtype) if momentum else None
    with emulated(emulate) if emulate else contextlib.nullcontext({}) as ran:
        for step in range(3):
            g, = state(rng, n, dtype, 1)
            aten._fused_sgd_step_(p, g, buf, 0.05, momentum, dampening, wd, nesterov,
                                  maximize, step == 0)
    return as_bytes([p] + ([buf] if buf is not None else [])), ran


def run_adam(seed, n, dtype, opts, emulate):
    wd, amsgrad, maximize, decoupled = opts
    rng = np.random.default_rng(seed)
    p, = state(rng, n, dtype, 1)
    m, v = ptl.zeros(n, dtype=dtype), ptl.zeros(n, dtype=dtype)
    vmax = ptl.zeros(n, dtype=dtype) if amsgrad else None
    if amsgrad and n > 2:
        vmax[1] = float("nan")   # max keeps a nan
    with emulated(emulate) if emulate else contextlib.nullcontext({}) as ran:
        for step in range(1, 4):
            g, = state(rng, n, dtype, 1)
            aten._fused_adam_step_(p, g, m, v, vmax, float(step), 1e-3, 0.9, 0.999, wd, 1e-8,
                                   maximize, decoupled)
    return as_bytes([p, m, v] + ([vmax] if vmax is not None else [])), ran


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_device_steps_write_the_cpu_kernels_bits(dtype, tuning, threads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for n in SIZES:
            for k, opts in enumerate(SGD_OPTIONS):
                want, _ = run_sgd(k, n, dtype, opts, None)
                got, ran = run_sgd(k, n, dtype, opts, TUNINGS[tuning])
                assert got == want, ("sgd", n, opts)
                assert ran["optim"] == (3 if n else 0)
            for k, opts in enumerate(ADAM_OPTIONS):
                want, _ = run_adam(k, n, dtype, opts, None)
                got, ran = run_adam(k, n, dtype, opts, TUNINGS[tuning])
                assert got == want, ("adam", n, opts)
                assert ran["optim"] == (3 if n else 0)
    finally:
        ptl.set_num_threads(old)


def test_bad_arguments_raise_before_the_device_path():
    p, g = ptl.ones(4), ptl.ones(4, dtype=ptl.float64)
    with emulated(TUNINGS["tiny"]) as ran:
        with pytest.raises(RuntimeError, match="grad must have the dtype of self"):
            aten._fused_sgd_step_(p, g, None, 0.1, 0.0, 0.0, 0.0, False, False, False)
        with pytest.raises(RuntimeError, match="expected a float32 or float64 tensor, got Half"):
            aten._fused_adam_step_(*[ptl.ones(4, dtype=ptl.float16)] * 4, None, 1.0, 0.1, 0.9,
                                   0.999, 0.0, 1e-8, False, False)
    assert ran["optim"] == 0
