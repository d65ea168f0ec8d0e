"""Benchmarks print ratios, not absolute times: every group measures pytorchlite next to a
reference run in the same process (NumPy always; PyTorch when it is installed).

    pytest benchmarks/ --benchmark-enable -q
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


import pytest


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or not bs.benchmarks:
        return
    groups = {}
    for b in bs.benchmarks:
        stats = getattr(b.stats, "stats", b.stats)
        impl = (b.params or {}).get("impl")
        if stats is None or impl is None:
            continue
        groups.setdefault(b.group, {})[impl] = stats.min
    tr = terminalreporter
    tr.write_sep("=", "pytorchlite speed ratios (reference time / pytorchlite time; > 1 is faster)")
    for group, times in sorted(groups.items()):
        ours = times.get("pytorchlite")
        if ours is None:
            continue
        parts = [f"{ref} {times[ref] / ours:5.2f}x" for ref in ("numpy", "torch", "eager")
                 if ref in times]
        tr.write_line(f"{group:<40} pytorchlite {ours * 1e6:10.2f} us   " + "   ".join(parts))
