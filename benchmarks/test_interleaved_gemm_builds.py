"""interleaved_gemm_builds.py still runs: this tree imported a second time under the base's
package name is a separate package whose products give this tree's bits, and one round of
the MLP's forward products prints a speed-up for each."""
import os
import sys

import numpy as np

import pytorchlite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import interleaved_gemm_builds as builds  # noqa: E402


def test_base_copy_is_a_separate_package_with_the_same_products(tmp_path, capsys):
    base = builds.import_base(ROOT, str(tmp_path))
    assert base.__name__ == builds.BASE_NAME and base is not pytorchlite
    g = np.random.default_rng(0)
    a, b = g.standard_normal((37, 70)).astype(np.float32), g.standard_normal((70, 19))
    b = b.astype(np.float32)
    got = base.mm(base.tensor(a), base.tensor(b).t().contiguous().t())
    want = pytorchlite.mm(pytorchlite.tensor(a), pytorchlite.tensor(b).t().contiguous().t())
    assert type(got).__module__.startswith(builds.BASE_NAME + ".")
    assert np.array_equal(got.numpy(), want.numpy())
    np.testing.assert_allclose(want.numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)

    builds.main([ROOT, "--rounds", "1", "--only", "mlp fwd"])
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("mlp fwd")]
    assert len(rows) == 3, lines
    assert all(float(row.split()[-1]) > 0 for row in rows), rows
