"""The operands of the GEMM tests (test_gemm.py, test_gemm_small.py): random matrices and the
same values as a contiguous, transposed or column-strided pytorchlite matrix."""
import numpy as np

import pytorchlite as ptl


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


def operand(x, layout):
    """x as a pytorchlite matrix with the same values in the given layout."""
    if layout == "contiguous":
        return ptl.tensor(x)
    if layout == "transposed":
        return ptl.tensor(np.ascontiguousarray(x.T)).t()
    # every other column of a wider matrix: no unit stride
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, ::2] = x
    return ptl.tensor(wide)[:, ::2]
