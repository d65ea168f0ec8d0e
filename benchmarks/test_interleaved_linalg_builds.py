"""interleaved_linalg_builds.py still runs: this tree imported a second time under the base's
package name gives the same bits, and one round prints a row with both builds' times."""
import os
import sys

import pytorchlite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import interleaved_linalg_builds as builds  # noqa: E402


def test_rows_of_this_tree_against_itself(capsys):
    old = pytorchlite.get_num_threads()
    try:
        builds.main([ROOT, "--rounds", "1", "--only", "linalg.qr 64x64 float64"])
    finally:
        pytorchlite.set_num_threads(old)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("linalg.qr")]
    assert len(rows) == 1 and "bits same" in rows[0], rows
    assert float(rows[0].split("this")[1].split()[0]) > 0, rows
