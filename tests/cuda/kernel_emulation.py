"""The host emulation of the CUDA kernels for the CPU tests of their plans
(test_reduce_plan.py, test_nn_plan.py): the tunings that cross every threshold and the
context that turns the emulation on."""
import contextlib

from pytorchlite import _C

# (max_threads, target_blocks, max_grid, min_chunk): the smallest block, every split and a
# grid of one block (the kernels' grid-stride loops); a middle one whose thresholds sit at
# the shapes below; the default of a 132-SM device
TUNINGS = {
    "tiny": (32, 4, 1, 1),
    "small": (64, 6, 3, 8),
    "device": (512, 528, 4224, 4096),
}


@contextlib.contextmanager
def emulated(tuning):
    """Runs the block with the CUDA kernels emulated; yields the dict of what ran (filled on
    exit)."""
    ran = {}
    _C._cuda_kernel_emulation(tuning)
    try:
        yield ran
    finally:
        ran.update(_C._cuda_kernel_emulation(None))
