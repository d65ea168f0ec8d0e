"""The Francis sweeps' deferred updates of linalg_eig.c (Note [Nonsymmetric eigensolver],
step 4): the rows' part inside the active block beyond a run of SWEEP_NEAR reflections,
applied after the run by sweep_rows, and the columns' part above the bulge, transposed into
scratch by tiles in registers (8 x 8 with AVX-512, 4 x 4 elsewhere) within blocks of
EIG_COL_BLOCK rows (the partial tiles and blocks element by element), the reflections that reach all of a block's rows with two
rows carried in registers (a last block's lanes past its rows zero).  All keep each entry's
arithmetic, so eig and eigvals are checked at and across those sizes (active blocks of a
run and one more, a tile and one more, a row block and one more) against numpy.linalg
(LAPACK's geev) in float64: the eigenvalue sets, A V = V diag(w), unit eigenvectors; with
and without the vectors (eigvals updates only the active block, eig the whole of T and Z),
batched, on 1 and 2 threads."""
import numpy as np
import pytest

import pytorchlite as ptl

from test_linalg_eig import _check, _eigvals, _match, _parts

SWEEP_NEAR = 8
TILE = 4   # AVX2's and the portable tiles; AVX-512's are SWEEP_NEAR's size, 8
COL_BLOCK = 32
SIZES = [TILE - 1, TILE, TILE + 1, SWEEP_NEAR - 1, SWEEP_NEAR, SWEEP_NEAR + 1, SWEEP_NEAR + 2,
         SWEEP_NEAR + 3, 2 * SWEEP_NEAR + 3, COL_BLOCK - 1, COL_BLOCK, COL_BLOCK + 1, COL_BLOCK + 2,
         2 * COL_BLOCK + 5, 100]


@pytest.mark.parametrize("n", SIZES)
def test_eig_and_eigvals_across_runs_and_tiles(n, threads):
    for seed in range(2):
        a = np.random.default_rng(seed * 100 + n).standard_normal((n, n))
        w, V = _parts(ptl.tensor(a))
        _check(a, w, V)
        values = _eigvals(a)
        assert _match(values, np.linalg.eigvals(a)) <= 1e-10 * np.abs(a).max() * n
        assert _match(values, w) <= 1e-12 * np.abs(w).max()


@pytest.mark.parametrize("n", [SWEEP_NEAR + 1, COL_BLOCK + 1, 2 * COL_BLOCK + 5])
def test_badly_scaled_and_graded_across_runs(n, threads):
    # columns scaled over six decades (balancing evens them) and a graded Hessenberg-like
    # matrix whose entries fall off away from the diagonal: many small subdiagonal entries,
    # so sweeps start and split at many places inside the runs
    g = np.random.default_rng(n)
    scaled = g.standard_normal((n, n)) * np.logspace(0, 6, n)
    i, j = np.indices((n, n))
    graded = g.standard_normal((n, n)) * 10.0 ** (-np.maximum(i - j, 0))
    for a in (scaled, graded):
        w, V = _parts(ptl.tensor(a))
        ref = np.linalg.eigvals(a)
        assert _match(w, ref) <= 1e-9 * np.abs(ref).max()
        assert _match(_eigvals(a), ref) <= 1e-9 * np.abs(ref).max()
        assert np.allclose(np.linalg.norm(V, axis=0), 1, rtol=0, atol=1e-12)


def test_batch_across_runs_matches_one_by_one(threads):
    sizes = [SWEEP_NEAR + 3, COL_BLOCK + 2]
    for n in sizes:
        a = np.random.default_rng(n).standard_normal((3, n, n))
        wr, wi, vr, vi = (x.numpy() for x in ptl.linalg._eig_split(ptl.tensor(a), True))
        vals = ptl.linalg._eig_split(ptl.tensor(a), False)
        for b in range(3):
            one = [x.numpy() for x in ptl.linalg._eig_split(ptl.tensor(a[b]), True)]
            for got, ref in zip((wr[b], wi[b], vr[b], vi[b]), one):
                assert np.array_equal(got, ref)
            assert np.array_equal(vals[0].numpy()[b], one[0])
            assert np.array_equal(vals[1].numpy()[b], one[1])


def test_size_zero_and_one():
    for shape in [(0, 0), (2, 0, 0), (1, 1), (3, 1, 1)]:
        a = np.random.default_rng(0).standard_normal(shape)
        w = ptl.linalg.eigvals(ptl.tensor(a))
        assert tuple(w.shape) == shape[:-1]
        if a.size:
            assert np.array_equal(w.numpy().real, a[..., 0])
