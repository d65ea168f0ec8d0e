"""ratio_table.py (docs/performance.md's headline table) still runs: one round of a step, a
convolution and a matmul row, against PyTorch."""
import pytest

import ratio_table


@pytest.mark.parametrize("row", ["MLP step", "conv 3->32, forward+backward", "matmul 128"])
def test_ratio_table_rows_run(row, capsys):
    pytest.importorskip("torch", reason="the table compares with PyTorch: pip install "
                        "torch==2.13.0")
    ratio_table.main(["--rounds", "1", "--only", row])
    out = capsys.readouterr().out
    assert out.startswith(row) and "torch / ours" in out, out
