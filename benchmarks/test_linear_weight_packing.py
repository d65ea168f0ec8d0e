"""linear_weight_packing.py still runs: one round prints the weights' reuse for both steps
and a line per product and variant, with this tree as the other build too."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import linear_weight_packing as packing  # noqa: E402


def test_one_round_prints_reuse_and_every_product(capsys):
    packing.main(["--rounds", "1", "--steps", "2", "--base", ROOT])
    lines = capsys.readouterr().out.splitlines()
    reuse = [line.split() for line in lines if line.startswith("reuse")]
    assert [words[1] for words in reuse] == ["mlp:", "gpt:"], lines
    for words in reuse:
        calls, keys = int(words[2]), int(words[9])
        assert 0 < keys <= calls, words
    # the MLP's three Linear layers, the GPT's 2 x 4 and its head, once a step each
    assert [int(words[2]) for words in reuse] == [3 * 2, 9 * 2], lines
    for kind in ("warm", "cold"):
        for pair in ("view / contiguous", "base / this"):
            rows = [line for line in lines if line.startswith(kind) and pair in line]
            assert len(rows) == len(packing.SHAPES), lines
            assert all(float(row.split()[-1]) > 0 for row in rows), rows
