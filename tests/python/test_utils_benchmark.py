"""pytorchlite.utils.benchmark (torch.utils.benchmark): a Measurement's and a Compare table's
printed forms are PyTorch's for the same raw times (golden strings recorded from PyTorch),
the statistics equal NumPy's (linear-interpolation quantiles), and Timer runs its statement
with its globals and setup, on the thread count asked for, for the time asked for.  No test
here checks how fast anything is: timings are only checked to be positive and consistent."""
import pickle
import random
import timeit

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.utils.benchmark as B
from pytorchlite.utils.benchmark.utils import common
from golden import Raised, golden
from helpers import torch


def _tb():
    import torch.utils.benchmark as tb
    return tb


def _times(seed, n, base, spread):
    rng = random.Random(seed)
    return [base * (1 + spread * rng.random()) for _ in range(n)]


# (raw_times arguments, number_per_run, TaskSpec keywords): every branch of the printed form.
MEASUREMENTS = {
    "one": ((1, 1, 3e-6, 0.0), 1000, dict(stmt="x + 1", setup="pass")),
    "two": ((2, 2, 4e-8, 0.01), 100, dict(stmt="y = x * 2", setup="x = 1", num_threads=4)),
    "three_ms": ((3, 3, 2e-3, 0.05), 1, dict(stmt="f()", setup="a = 1\nb = 2",
                                              label="L", sub_label="s")),
    "four_seconds": ((4, 4, 12.0, 0.02), 1, dict(stmt="a\nb", setup="", description="d")),
    "warn_fluct": ((5, 9, 1e-4, 0.3), 10, dict(stmt="a\nb", setup="pass", sub_label="sub",
                                               num_threads=2)),
    "warn_gross": ((6, 31, 7e-7, 2.0), 10000, dict(stmt="g(x)", setup="pass", label="lab",
                                                   description="n=100", env="env1")),
    "steady": ((7, 50, 5.5e-9, 0.001), 1000000, dict(stmt="pass", setup="pass")),
    "empty_stmt": ((8, 5, 9e-1, 0.04), 1, dict(stmt="", setup="pass")),
}


def _measurement(lib_benchmark, key):
    (seed, n, base, spread), number, spec = MEASUREMENTS[key]
    return lib_benchmark.Measurement(number, _times(seed, n, base, spread),
                                     lib_benchmark.TaskSpec(**spec))


def _printed(m):
    """The printed form without its first line (the object's module and address)."""
    return repr(m).split("\n", 1)[1]


@pytest.mark.parametrize("key", sorted(MEASUREMENTS))
def test_measurement_printed_form_is_pytorchs(key):
    m = _measurement(B, key)
    first, rest = repr(m).split("\n", 1)
    assert first.startswith("<pytorchlite.utils.benchmark.utils.common.Measurement object at ")
    assert rest == golden(lambda: _printed(_measurement(_tb(), key)))


def test_measurement_printed_form_written_out():
    m = B.Measurement(100, [4.01e-4, 5.73e-4, 5.0e-4, 6.26e-4],
                      B.TaskSpec("x + y", "pass", label="Broadcasting add", sub_label="4x8"))
    assert _printed(m) == (
        "Broadcasting add: 4x8\n"
        "  Median: 5.37 us\n"
        "  IQR:    1.11 us (4.75 to 5.86)\n"
        "  4 measurements, 100 runs per measurement, 1 thread\n"
        "  WARNING: Interquartile range is 20.7% of the median measurement.\n"
        "           This could indicate system fluctuation.")


@pytest.mark.parametrize("key", sorted(MEASUREMENTS))
def test_measurement_statistics_against_numpy(key):
    m = _measurement(B, key)
    per_run = np.array(m.raw_times) / m.number_per_run
    assert m.times == [t / m.number_per_run for t in m.raw_times]
    np.testing.assert_allclose(m.median, np.median(per_run), rtol=1e-15)
    np.testing.assert_allclose(m.mean, np.mean(per_run), rtol=1e-15)
    p25, p75 = np.percentile(per_run, [25, 75])
    np.testing.assert_allclose(m.iqr, p75 - p25, rtol=1e-12, atol=1e-300)
    assert m.meets_confidence(0.5) == bool((p75 - p25) / np.median(per_run) < 0.5)
    assert m.has_warnings == bool((p75 - p25) / np.median(per_run) >= 0.1)
    assert golden(lambda: [_measurement(_tb(), key).significant_figures]) == \
        [m.significant_figures]


def test_quantiles_against_numpy_random_sizes():
    rng = np.random.default_rng(0)
    for n in list(range(1, 20)) + [63, 64, 65, 100, 1001]:
        raw = (rng.random(n) * 10 ** rng.uniform(-9, 0)).tolist()
        m = B.Measurement(1, raw, B.TaskSpec("s", "pass"))
        q25, q50, q75 = np.quantile(raw, [0.25, 0.5, 0.75])
        assert m.median == pytest.approx(q50, rel=1e-15, abs=0)
        assert m.iqr == pytest.approx(q75 - q25, rel=1e-12, abs=1e-300)
        assert m.mean == pytest.approx(np.mean(raw), rel=1e-14)
        assert 1 <= m.significant_figures <= 4


def test_quantiles_equal_torch_quantile_exactly():
    rng = np.random.default_rng(1)
    samples = [(rng.random(n) * 1e-6).tolist() for n in (1, 2, 3, 4, 6, 10, 33)]
    ours = [[common._quantile(sorted(s), q) for q in (0.25, 0.5, 0.75)] for s in samples]

    def theirs():
        return [torch.tensor(sorted(s), dtype=torch.float64).quantile(
            torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)).tolist() for s in samples]
    assert ours == golden(theirs)


def test_significant_figures_written_out():
    steady = B.Measurement(1, [1e-3] * 8, B.TaskSpec("s", "pass"))
    assert steady.iqr == 0 and steady.significant_figures == 4   # CI floor: 25 ns
    tiny = B.Measurement(1, [3e-8, 3e-8], B.TaskSpec("s", "pass"))
    assert tiny.significant_figures == 1                          # log10(1.2) -> 0 -> 1


VALUES = [1e-9, 9.99e-10, 1e-6, 9.9999e-7, 1.0000001e-6, 5e-4, 1e-3, 0.999, 1.0, 3.14159,
          12.0, 999.5, 1234.5678, 2.5e-7, 0.15, 0.25, 0.35, 7.0e-5]


def test_select_unit_and_trim_sigfig_are_pytorchs():
    ours = [[B.select_unit(v)[0] for v in VALUES],
            [B.trim_sigfig(v, n) for v in VALUES for n in (1, 2, 3, 4)],
            [B.trim_sigfig(-v, 2) for v in VALUES]]

    def theirs():
        tb = _tb()
        return [[tb.select_unit(v)[0] for v in VALUES],
                [tb.trim_sigfig(v, n) for v in VALUES for n in (1, 2, 3, 4)],
                [tb.trim_sigfig(-v, 2) for v in VALUES]]
    assert ours == golden(theirs)


def test_formatting_helpers_written_out():
    assert B.select_unit(2.5e-7) == ("ns", 1e-9)
    assert B.select_unit(1e-6) == ("us", 1e-6)
    assert B.select_unit(0.5) == ("ms", 1e-3)
    assert B.select_unit(3.0) == ("s", 1)
    assert B.select_unit(5e-13) == ("s", 1)   # below ns: PyTorch's table falls back to s
    assert B.trim_sigfig(3.14159, 2) == pytest.approx(3.1, rel=1e-7)
    assert B.trim_sigfig(1234.5678, 2) == 1200.0
    assert [B.unit_to_english(u) for u in ("ns", "us", "ms", "s")] == \
        ["nanosecond", "microsecond", "millisecond", "second"]
    assert B.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_formatting_helper_errors_are_pytorchs():
    cases = [lambda lib: lib.trim_sigfig(1.0, 1.5), lambda lib: lib.trim_sigfig(0.0, 2),
             lambda lib: lib.select_unit(0.0), lambda lib: lib.unit_to_english("ks")]
    for case in cases:
        expected = golden(lambda: case(_tb()))
        assert isinstance(expected, Raised)
        expected.check(lambda: case(B))


def test_taskspec_and_measurement_fields():
    spec = B.TaskSpec("a\nb", "x = 1", label=None, sub_label="s", description="d",
                      env="e", num_threads=3)
    assert spec.title == "stmt: (s)\n  a\n  b"
    assert spec.setup_str() == "setup: x = 1"
    assert spec.summarize() == "stmt: (s)\n  a\n  b\n\nd\nsetup: x = 1"
    assert hash(spec) == hash(B.TaskSpec("a\nb", "x = 1", "", None, "s", "d", "e", 3))
    with pytest.raises(Exception):
        spec.stmt = "c"   # frozen
    m = B.Measurement(10, [1.0, 2.0], spec, metadata={"k": 1})
    assert (m.stmt, m.setup, m.sub_label, m.description, m.env, m.num_threads) == \
        ("a\nb", "x = 1", "s", "d", "e", 3)
    assert m.title == spec.title and m.as_row_name == "s"
    assert B.Measurement(1, [1.0], B.TaskSpec("x", "pass")).env is None   # as PyTorch
    assert B.Measurement(1, [1.0], B.TaskSpec("", "pass")).as_row_name == "[Unknown]"
    with pytest.raises(AttributeError):
        m.no_such_field
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.median == m.median


def test_merge_groups_replicates_per_task_spec():
    a, b = B.TaskSpec("a", "pass"), B.TaskSpec("b", "pass")
    ms = [B.Measurement(10, [1.0, 2.0], a), B.Measurement(2, [3.0], b),
          B.Measurement(4, [8.0], a, metadata={"x": 1})]
    merged = B.Measurement.merge(ms)
    assert [m.task_spec for m in merged] == [a, b]
    assert [m.number_per_run for m in merged] == [1, 1]
    assert merged[0].times == [0.1, 0.2, 2.0] and merged[1].times == [1.5]
    assert all(m.metadata is None for m in merged)


# ---- Compare ------------------------------------------------------------------------------

def _compare_measurements(lib_benchmark, seed, labels=("lab",), threads=(1,), envs=(None,),
                          replicates=1, holes=False, n=9, spread=0.3):
    rng = random.Random(seed)
    out = []
    for label in labels:
        for num_threads in threads:
            for env in envs:
                for row, stmt in enumerate(("x + y", "torch.add(x, y)", "x.mul(y)")):
                    for col, description in enumerate(("n=1", "n=1000", "n=100000")):
                        if holes and (row + col) % 3 == 1:
                            continue
                        base = 10 ** (-7 + col) * (1 + row) / num_threads
                        spec = lib_benchmark.TaskSpec(
                            stmt, "pass", label=label, sub_label=None if row else "plus",
                            description=description, env=env, num_threads=num_threads)
                        for _ in range(replicates):
                            raw = [base * 100 * (1 + spread * rng.random()) for _ in range(n)]
                            out.append(lib_benchmark.Measurement(100, raw, spec))
    return out


COMPARES = {
    "plain": dict(seed=0),
    "threads": dict(seed=1, threads=(1, 2, 4)),
    "envs": dict(seed=2, envs=("base", "patched_build")),
    "labels": dict(seed=3, labels=("first", "second"), threads=(1, 2)),
    "replicates_holes": dict(seed=4, replicates=3, holes=True),
    "steady_one_run": dict(seed=5, n=1, spread=0.001),
    "steady": dict(seed=6, n=12, spread=0.01, threads=(1, 2)),
}
MODES = ["plain", "trim", "colorize", "colorize_rowwise", "warnings", "all"]


def _render(lib_benchmark, key, mode):
    c = lib_benchmark.Compare(_compare_measurements(lib_benchmark, **COMPARES[key]))
    if mode in ("trim", "all"):
        c.trim_significant_figures()
    if mode in ("colorize", "all"):
        c.colorize()
    if mode == "colorize_rowwise":
        c.colorize(rowwise=True)
    if mode in ("warnings", "all"):
        c.highlight_warnings()
    return str(c)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", sorted(COMPARES))
def test_compare_table_is_pytorchs(key, mode):
    assert _render(B, key, mode) == golden(lambda: _render(_tb(), key, mode))


def test_compare_table_written_out(capsys):
    spec = dict(setup="pass", label="add")
    ms = [B.Measurement(10, [2e-5, 2.2e-5, 2.1e-5, 2.05e-5],
                        B.TaskSpec("x + 1", description="small", **spec)),
          B.Measurement(10, [4e-4, 4.1e-4, 4.2e-4, 4.05e-4],
                        B.TaskSpec("x + 1", description="large", **spec)),
          B.Measurement(10, [3e-5, 3.1e-5, 3e-5, 3.05e-5],
                        B.TaskSpec("x.add(1)", description="small", **spec))]
    c = B.Compare(ms[:1])
    c.extend_results(ms[1:])
    c.print()
    assert capsys.readouterr().out == (
        "[------------- add --------------]\n"
        "                |  small  |  large\n"
        "1 threads: -----------------------\n"
        "      x + 1     |   2.1   |   40.8\n"
        "      x.add(1)  |   3.0   |       \n"
        "\n"
        "Times are in microseconds (us).\n"
        "\n")   # str() ends with a newline, and print adds one


def test_compare_errors_are_pytorchs():
    def bad(lib):
        return lib.Compare([1])
    golden(lambda: bad(_tb())).check(lambda: bad(B))
    assert B.Colorize("rowwise") is B.Colorize.ROWWISE


# ---- Timer --------------------------------------------------------------------------------

calls = {"stmt": 0, "setup": 0}
seen_threads = []


def bump(what):
    calls[what] += 1


def record_threads():
    seen_threads.append(ptl.get_num_threads())


def test_timer_runs_stmt_with_globals_and_setup():
    calls.update(stmt=0, setup=0)
    t = B.Timer("bump('stmt'); y = x + 1", setup="bump('setup'); x = 41",
                globals={"bump": bump}, label="count")
    m = t.timeit(number=250)
    # a warmup of max(250 // 100, 2) runs, then the 250 measured: setup before each
    assert calls == {"stmt": 252, "setup": 2}
    assert m.number_per_run == 250 and len(m.raw_times) == 1 and m.raw_times[0] > 0
    assert m.task_spec == B.TaskSpec("bump('stmt'); y = x + 1", "bump('setup'); x = 41",
                                     label="count")
    assert m.median == m.raw_times[0] / 250


def test_timer_default_globals_and_dedent():
    g = {"n": 3}
    t = B.Timer("""
        a = torch.ones(n)
        b = a + 1
    """, setup="\n    import math\n", globals=g)
    assert t._task_spec.stmt == "a = torch.ones(n)\nb = a + 1"
    assert t._task_spec.setup == "import math"
    assert t.timeit(3).number_per_run == 3
    assert g == {"n": 3}   # the caller's dict is copied, never filled in
    B.Timer("assert torch is pytorchlite", globals={"pytorchlite": ptl}).timeit(2)


def test_blocked_autorange_runs_for_min_run_time():
    blocks = []
    calls.update(stmt=0)
    t = B.Timer("bump('stmt')", globals={"bump": bump})
    m = t.blocked_autorange(callback=lambda number, time: blocks.append((number, time)),
                            min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02
    assert [b[1] for b in blocks] == m.raw_times
    assert all(b[0] == m.number_per_run for b in blocks)
    assert m.number_per_run in [10 ** k for k in range(10)]
    assert all(t > 0 for t in m.raw_times)
    # the block-size search also ran the statement, before the measured blocks
    assert calls["stmt"] > m.number_per_run * len(m.raw_times)


def test_adaptive_autorange_structure():
    t = B.Timer("x = [1] * 10")
    m = t.adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=0.5)
    assert len(m.raw_times) >= 1 and all(t > 0 for t in m.raw_times)
    assert sum(m.raw_times) >= 0.01
    # it stops before max_run_time only once more than 3 blocks meet the threshold
    assert sum(m.raw_times) > 0.5 or (len(m.raw_times) > 3 and m.meets_confidence(0.5))


# A virtual clock that the statement itself advances: the timings, and so every choice the
# autorange loops make (block size, how many blocks, when to stop), are deterministic and can
# be compared with PyTorch's exactly.
CLOCK_STMT = "clock[0] += step * (1 + spread * (k[0] * 7919 % 13) / 13); k[0] += 1"


def _virtual_runs(lib_benchmark, step, spread):
    def make():
        clock, k = [0.0], [0]
        return lib_benchmark.Timer(CLOCK_STMT, timer=lambda: clock[0],
                                   globals={"clock": clock, "k": k, "step": step,
                                            "spread": spread})
    blocks = []
    runs = [make().timeit(number=37),
            make().blocked_autorange(min_run_time=0.2),
            make().blocked_autorange(callback=lambda n, t: blocks.append([n, t]),
                                     min_run_time=0.001),
            make().adaptive_autorange(),
            make().adaptive_autorange(threshold=0.01, min_run_time=0.05, max_run_time=0.3)]
    return [[m.number_per_run, m.raw_times] for m in runs] + [blocks]


@pytest.mark.parametrize("step,spread", [(1e-6, 0.0), (3e-7, 0.5), (2e-3, 4.0), (0.3, 0.1)])
def test_autorange_decisions_are_pytorchs_on_a_virtual_clock(step, spread):
    ours = _virtual_runs(B, step, spread)
    assert ours == golden(lambda: _virtual_runs(_tb(), step, spread))
    timeit_run, blocked, _, adaptive, _, _ = ours
    assert timeit_run[0] == 37 and len(timeit_run[1]) == 1
    assert sum(blocked[1]) >= 0.2 and sum(adaptive[1]) >= 0.01


def test_num_threads_applied_and_restored(restore_threads):
    ptl.set_num_threads(2)
    seen_threads.clear()
    B.Timer("record_threads()", globals={"record_threads": record_threads}).timeit(5)
    B.Timer("record_threads()", globals={"record_threads": record_threads},
            num_threads=2).blocked_autorange(min_run_time=0.001)
    assert seen_threads[:7] == [1] * 7 and set(seen_threads[7:]) == {2}
    assert ptl.get_num_threads() == 2
    with pytest.raises(ZeroDivisionError):
        B.Timer("1 / 0").timeit(1)
    assert ptl.get_num_threads() == 2
    with B.set_torch_threads(1):
        assert ptl.get_num_threads() == 1
    assert ptl.get_num_threads() == 2


def _timer_errors():
    """Calls that PyTorch's Timer rejects, as functions of the benchmark module."""
    return [
        lambda lib: lib.Timer("x", language="rust"),
        lambda lib: lib.Timer(lambda: 1),
        lambda lib: lib.Timer("x", global_setup="#include <vector>"),
        lambda lib: lib.Timer("x", language="c++", globals={"a": 1},
                              timer=timeit.default_timer),
        lambda lib: lib.Timer("pass").repeat(),
        lambda lib: lib.Timer("pass").autorange(),
        lambda lib: lib.Timer("pass").collect_callgrind(repeats=0),
        lambda lib: lib.Timer("1 / 0").collect_callgrind(),
    ]


@pytest.mark.parametrize("index", range(len(_timer_errors())))
def test_timer_errors_are_pytorchs(index):
    case = _timer_errors()[index]
    expected = golden(lambda: case(_tb()))
    assert isinstance(expected, Raised)
    expected.check(lambda: case(B))


def test_language_values():
    assert B.Language.PYTHON.value == 0 and B.Language.CPP.value == 1
    for language in (B.Language.PYTHON, "py", "python"):
        assert B.Timer("pass", language=language)._language is B.Language.PYTHON
    t = B.Timer("int x = 1;", language="cpp", timer=timeit.default_timer)
    assert t._language is B.Language.CPP and t._task_spec.setup == ""
    with pytest.raises(NotImplementedError, match="cannot time C\\+\\+ statements"):
        t.timeit(1)


def test_collect_callgrind_without_valgrind(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match="^Missing: valgrind, callgrind_control, "
                                      "callgrind_annotate$"):
        B.Timer("pass").collect_callgrind()


def test_collect_callgrind_has_no_bindings(monkeypatch, tmp_path):
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        path = tmp_path / tool
        path.write_text("#!/bin/sh\nexit 1\n")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match="^Valgrind is not supported on this platform.$"):
        B.Timer("pass").collect_callgrind()


def test_public_names_match_pytorch():
    ours = set(B.__all__)
    assert ours == {"TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
                    "ordered_unique", "set_torch_threads", "Timer", "timer", "Language",
                    "Colorize", "Compare", "Fuzzer", "FuzzedParameter", "ParameterAlias",
                    "FuzzedTensor", "FuzzedSparseTensor"}
    assert all(hasattr(B, name) for name in ours)
    if torch is not None:
        assert ours <= set(dir(_tb()))
