"""The collectives on 2 and 4 ranks against NumPy (workers/collectives_match_numpy.py)."""
import pytest

import mpi_job


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_match_numpy(nproc):
    rc, out = mpi_job.mpirun(nproc, "collectives_match_numpy.py", timeout=120)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out
