"""The kernels whose sums sit in 64-byte vectors on AVX-512 and in two 32-byte halves below
it, the same operations a lane at either width: linalg_decomp.c's QR panel (DEFINE_QR_PANEL:
qr, lstsq, svd's QR), linalg_eigh_dc.c's QL rotations (DEFINE_APPLY_SWEEP: eigh's leaves and
small matrices) and linalg_solve.c's one-column substitution (tri_one).  Sizes at and across
each one's thresholds (QR_BLOCK columns for the panel, its 8 / 16 lanes and pairs of vectors;
SWEEP_CHUNK columns for the rotations; TRI_GROUP rows and the lanes for tri_one) against
NumPy in float64; on an AVX-512 CPU the results at AVX2's width are the same bits (a child
process capped at avx2); the file reruns itself with the capability capped."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import CAPPED_BY_CALLER, capability_reruns

QR_BLOCK = 32     # linalg_decomp.c
SWEEP_CHUNK = 32  # linalg_eigh_dc.c
DC_LEAF = 32      # LINALG_DC_LEAF: larger eigh splits into leaves of the QL
GROUP = 8         # linalg_solve.c's TRI_GROUP
LANES = {np.float32: 16, np.float64: 8}
EPS = {np.float32: float(np.finfo(np.float32).eps), np.float64: float(np.finfo(np.float64).eps)}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])

test_lower_capabilities = capability_reruns(__file__)

# rows x columns: one block (the unblocked loops), across QR_BLOCK, a panel's columns shorter
# than one vector, than a pair and a few rows past them, and lstsq's [A b] tail
QR_SHAPES = [(QR_BLOCK, QR_BLOCK), (QR_BLOCK + 1, QR_BLOCK + 1), (40, 33), (QR_BLOCK + 9, 36),
             (QR_BLOCK + 17, 34), (QR_BLOCK + 33, 40), (64, 64), (97, 70), (130, 65)]
EIGH_SIZES = [SWEEP_CHUNK - 1, SWEEP_CHUNK, SWEEP_CHUNK + 1, 2 * SWEEP_CHUNK - 1, 2 * SWEEP_CHUNK,
              2 * SWEEP_CHUNK + 7, 100]
TRI_SIZES = [GROUP + 1, 2 * GROUP, 2 * GROUP + 1, 3 * GROUP + 1, 4 * GROUP + 1, 5 * GROUP + 3,
             8 * GROUP + 1, 100]


def _qr(m, n, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal((m, n)).astype(dtype)
    q, r = ptl.linalg.qr(ptl.tensor(a))
    return a, q.numpy(), r.numpy()


@pytest.mark.parametrize("m, n", QR_SHAPES)
@DTYPES
def test_blocked_qr_against_numpy(m, n, dtype):
    a, q, r = _qr(m, n, dtype)
    k = min(m, n)
    tol = 30 * max(m, n) * EPS[dtype]
    np.testing.assert_allclose(q @ r, a, atol=tol * np.abs(a).max())
    np.testing.assert_allclose(q.T.astype(np.float64) @ q, np.eye(k), atol=tol)
    assert np.all(np.tril(r, -1) == 0)
    # R is unique up to its rows' signs
    r_ref = np.linalg.qr(a.astype(np.float64), mode="r")
    np.testing.assert_allclose(np.abs(r), np.abs(r_ref), atol=tol * np.abs(r_ref).max())


@pytest.mark.parametrize("m, n", [(40, 33), (QR_BLOCK + 17, 34), (130, 65)])
@DTYPES
def test_lstsq_through_the_panel_against_numpy(m, n, dtype):
    g = np.random.default_rng(m + n)
    a, b = g.standard_normal((m, n)).astype(dtype), g.standard_normal((m, 1)).astype(dtype)
    x = ptl.linalg.lstsq(ptl.tensor(a), ptl.tensor(b)).solution.numpy()
    ref = np.linalg.lstsq(a.astype(np.float64), b.astype(np.float64), rcond=None)[0]
    tol = 30 * m * EPS[dtype] * np.linalg.cond(a.astype(np.float64))
    np.testing.assert_allclose(x, ref, atol=tol * np.abs(ref).max())


def _sym(n, seed=0):
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n))
    return a + a.T


@pytest.mark.parametrize("n", EIGH_SIZES)
@DTYPES
def test_eigh_rotations_against_numpy(n, dtype):
    a = _sym(n, n).astype(dtype)
    w, v = (t.numpy().astype(np.float64) for t in ptl.linalg.eigh(ptl.tensor(a)))
    ref = np.linalg.eigvalsh(a.astype(np.float64))
    scale = np.abs(ref).max()
    tol = 30 * n * EPS[dtype]
    np.testing.assert_allclose(w, ref, atol=tol * scale)
    np.testing.assert_allclose(a.astype(np.float64) @ v, v * w, atol=tol * scale)
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=tol)


def _triangle(n, upper, dtype, seed):
    g = np.random.default_rng(seed)
    t = g.uniform(-1, 1, (n, n)) / np.sqrt(n) + np.eye(n) * g.uniform(1, 2, n)
    return (np.triu(t) if upper else np.tril(t)).astype(dtype)


@pytest.mark.parametrize("n", TRI_SIZES)
@pytest.mark.parametrize("upper", [False, True])
@DTYPES
def test_one_column_substitution_against_numpy(n, upper, dtype):
    t = _triangle(n, upper, dtype, n)
    b = np.random.default_rng(n + 1).standard_normal((n, 1)).astype(dtype)
    x = ptl.linalg.solve_triangular(ptl.tensor(t), ptl.tensor(b), upper=upper).numpy()
    ref = np.linalg.solve(t.astype(np.float64), b.astype(np.float64))
    tol = 8 * n * EPS[dtype] * np.linalg.cond(t.astype(np.float64))
    np.testing.assert_allclose(x, ref, atol=tol * np.abs(ref).max())


def results():
    """Every kernel's outputs at a few sizes of each path, as {name: array}."""
    out = {}
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        for m, n in (QR_SHAPES[2], QR_SHAPES[-1]):
            _, out[f"q {m}x{n} {name}"], out[f"r {m}x{n} {name}"] = _qr(m, n, dtype)
        for n in (SWEEP_CHUNK + 1, 2 * SWEEP_CHUNK + 7):
            w, v = ptl.linalg.eigh(ptl.tensor(_sym(n, n).astype(dtype)))
            out[f"eigh w {n} {name}"], out[f"eigh v {n} {name}"] = w.numpy(), v.numpy()
        for n in (5 * GROUP + 3, 100):
            t = _triangle(n, False, dtype, n)
            b = np.ones((n, 1), dtype)
            out[f"tri {n} {name}"] = ptl.linalg.solve_triangular(
                ptl.tensor(t), ptl.tensor(b), upper=False).numpy()
    return out


@pytest.mark.skipif(CAPPED_BY_CALLER, reason="the capability was chosen by a parent run")
def test_same_bits_in_32_byte_vectors(tmp_path):
    if ptl.backends.cpu.get_cpu_capability().lower() != "avx512":
        pytest.skip("this CPU has no AVX-512: its one width is the one every test here ran")
    path = str(tmp_path / "avx2.npz")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; "
            "import test_linalg_vector_widths as t; np.savez(sys.argv[2], **t.results())")
    env = dict(os.environ, PTL_CPU_CAPABILITY="avx2")
    subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)),
                    path], env=env, check=True)
    capped = np.load(path)
    for name, got in results().items():
        assert got.tobytes() == capped[name].tobytes(), name
