"""tests/process_split.py, the two test processes of a whole-suite run: pytest runs in a child
on a small test folder whose conftest registers the plugin with a cost table that sends
test_big.py to the first process and test_small.py to the second (every test records the
process that ran it), and nothing the second process sees may be lost.  The table's part is
the one SPLIT_PART names (default "all")."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import process_split
from helpers import ROOT

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                reason="the run splits only on two or more CPUs")

CONFTEST = f"""
import os
import sys
sys.path.insert(0, {os.path.join(ROOT, "tests")!r})
import process_split

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_configure(config):
    process_split.register(config, HERE, os.path.join(HERE, "costs.json"), min_seconds=1,
                           name=os.environ.get("SPLIT_PART", "all"))
"""

RECORD = """
import os
import warnings

import pytest


def record(name):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids", name), "w") as f:
        f.write(str(os.getpid()))
"""

BIG = RECORD + """

@pytest.mark.parametrize("n", range(3))
def test_big(n):
    record(f"big{n}")


def test_big_has_no_child_process():   # the second process is not this one's child
    record("big3")
    me = str(os.getpid())
    children = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[1] == me:
                    children.append(pid)
        except OSError:
            pass
    assert children == []
"""

SMALL_PASSING = RECORD + """

def test_small():
    record("small")
    warnings.warn("a warning from the second process")


def test_small_skips():
    pytest.skip("a skip in the second process")


@pytest.mark.xfail(reason="an expected failure in the second process", strict=True)
def test_small_fails_as_expected():
    assert False
"""


def costs(part, collection=0.0, name="all"):
    """A cost table's text whose part name is part ({file: [seconds, tests]}), with the given
    collection seconds per test collected."""
    return json.dumps({"collection": {name: [collection, 1]}, name: part})


def make_suite(tmp_path, small=SMALL_PASSING):
    (tmp_path / "pids").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "costs.json").write_text(costs({"test_big.py": [50, 4],
                                                "test_small.py": [20, 1]}))
    (tmp_path / "test_big.py").write_text(BIG)
    (tmp_path / "test_small.py").write_text(textwrap.dedent(small))


def run(tmp_path, *args, env=None, preexec_fn=None):
    """(pytest's result, {test: pid of the process that ran it}) of a run in tmp_path."""
    full_env = {k: v for k, v in os.environ.items() if k != process_split.WORKERS_ENV}
    full_env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # hypothesis, pytest-benchmark: unused
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                       cwd=tmp_path, env=dict(full_env, **(env or {})), capture_output=True,
                       text=True, timeout=120, preexec_fn=preexec_fn)
    pids = {p.name: int(p.read_text()) for p in (tmp_path / "pids").iterdir()}
    return r, pids


def test_the_second_process_runs_its_share_and_reports_it(tmp_path):
    make_suite(tmp_path)
    junit = tmp_path / "junit.xml"
    r, pids = run(tmp_path, "--junitxml", str(junit))
    assert r.returncode == 0, r.stdout + r.stderr
    assert pids["big0"] == pids["big1"] == pids["big2"] == pids["big3"] != pids["small"]
    assert "5 passed, 1 skipped, 1 xfailed, 1 warning" in r.stdout
    assert "a warning from the second process" in r.stdout
    assert "[100%]" in r.stdout and "[1" + "50%]" not in r.stdout
    xml = junit.read_text()
    assert xml.count("<testcase ") == 7 and "a skip in the second process" in xml


def run_failing(tmp_path, small, *args):
    """The output of a run whose second process fails (one failure counted, both processes
    used)."""
    make_suite(tmp_path, small=RECORD + small)
    r, pids = run(tmp_path, *args)
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(set(pids.values())) == 2
    assert "1 failed, 4 passed" in r.stdout
    return r.stdout


def test_a_failure_in_the_second_process_fails_the_run(tmp_path):
    out = run_failing(tmp_path, """
def test_small():
    record("small")
    assert 1 + 1 == 3, "planted"
""")
    assert "FAILED test_small.py::test_small - AssertionError: planted" in out


def test_a_crash_of_the_second_process_fails_the_run(tmp_path):
    out = run_failing(tmp_path, """
def test_small():
    record("small")
    os.write(1, b"the last words\\n")
    os.abort()


def test_small_after():
    pass
""", "--capture=sys")
    assert "did not report 2 of its 2 tests" in out
    assert "the last words" in out
    assert "FAILED test_small.py::test_small" in out


def test_an_interrupted_run_ends_the_second_process(tmp_path):
    make_suite(tmp_path, small=RECORD + """
import time


def test_small():
    record("small")
    time.sleep(600)
""")
    (tmp_path / "test_big.py").write_text(BIG + """

def test_big_interrupted():
    import time
    small = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids", "small")
    for _ in range(1200):   # the second process has begun its test
        if os.path.exists(small) and os.path.getsize(small):
            break
        time.sleep(0.05)
    raise KeyboardInterrupt
""")
    r, pids = run(tmp_path)
    assert r.returncode == pytest.ExitCode.INTERRUPTED, r.stdout + r.stderr
    assert not os.path.exists(f"/proc/{pids['small']}")


def test_a_test_the_second_process_does_not_collect_fails_the_run(tmp_path):
    make_suite(tmp_path, small=RECORD + """
@pytest.mark.parametrize("pid", [os.getpid()])   # another id in each process
def test_small(pid):
    record("small")
""")
    r, pids = run(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "did not report 1 of its 1 tests" in r.stdout
    assert "small" not in pids


@pytest.mark.parametrize("args, env, preexec", [
    ((), {process_split.WORKERS_ENV: "1"}, None),
    (("-x",), {}, None),
    (("-s",), {}, None),
    (("--maxfail", "2"), {}, None),
    (("test_small.py::test_small",), {}, None),
    (("-k", "big"), {}, None),
    ((), {}, lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})),
], ids=["PTL_TEST_WORKERS=1", "-x", "-s", "--maxfail", "one-test", "-k", "one-cpu"])
def test_runs_that_stay_in_one_process(tmp_path, args, env, preexec):
    make_suite(tmp_path)
    r, pids = run(tmp_path, *args, env=env, preexec_fn=preexec)
    assert r.returncode == 0, r.stdout + r.stderr
    assert pids and len(set(pids.values())) == 1


def test_a_run_under_the_threshold_stays_in_one_process(tmp_path):
    make_suite(tmp_path)
    (tmp_path / "costs.json").write_text(costs({"test_big.py": [0.4, 4],   # 0.7 s < 1
                                                "test_small.py": [0.3, 3]}))
    r, pids = run(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(set(pids.values())) == 1


def test_other_worker_counts_are_refused(tmp_path):
    make_suite(tmp_path)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                       cwd=tmp_path, env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                                              **{process_split.WORKERS_ENV: "3"}),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR
    assert "PTL_TEST_WORKERS must be 1 or 2, not '3'" in r.stderr


def test_deal_is_largest_first_to_the_less_loaded_process():
    cost = {"a.py": 5.0, "b.py": 4.0, "c.py": 3.0, "d.py": 3.0, "e.py": 1.0}
    assert process_split.deal(cost, 0.0) == (["a.py", "d.py"], ["b.py", "c.py", "e.py"])
    assert process_split.deal(cost, 10.0) == (["a.py", "b.py", "c.py", "e.py"], ["d.py"])


def test_estimate_scales_known_files_and_prices_unknown_ones_at_the_median():
    table = {"a.py": (10.0, 4), "b.py": (2.0, 1)}   # 2.5 and 2 s a test: the median 2.25
    groups = {"a.py": ["a.py::x", "a.py::y"], "c.py": ["c.py::z"] * 3}
    assert process_split.estimate(groups, table) == {"a.py": 5.0, "c.py": 6.75}
    table["d.py"] = (0.5, 5)   # three files: the middle one's 2 s
    assert process_split.estimate(groups, table)["c.py"] == 6.0
    assert process_split.estimate({"c.py": ["c.py::z"]}, {}) == {
        "c.py": process_split.UNKNOWN_PER_TEST}


@pytest.mark.parametrize("collection, split", [(10.0, True), (80.0, False)])
def test_the_head_start_is_the_tables_collection_per_test_collected(tmp_path, collection,
                                                                       split):
    """The child starts behind by the table's collection seconds per test times the 7 tests
    collected: 80 s (test_big.py's 50 and test_small.py's 20 both to this process: one
    process) or 10 s (test_small.py to the child), however long the collection took here."""
    make_suite(tmp_path)
    (tmp_path / "costs.json").write_text(costs({"test_big.py": [50, 4], "test_small.py":
                                                [20, 1]}, collection / 7))
    r, pids = run(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (len(set(pids.values())) == 2) == split
    if split:
        assert f"after {collection:.0f} s of collection" in r.stdout


def test_the_part_of_the_table_is_the_runs(tmp_path):
    """A run priced by the "only-with-extras" part, whose collection sends every file to this
    process, does not split; the "all" part prices the files for a split."""
    make_suite(tmp_path)
    table = {"collection": {"all": [0.0, 1], "only-with-extras": [100.0, 1]},
             "all": {"test_big.py": [50, 4], "test_small.py": [20, 1]},
             "only-with-extras": {"test_big.py": [50, 4], "test_small.py": [20, 1]}}
    (tmp_path / "costs.json").write_text(json.dumps(table))
    r, pids = run(tmp_path, env={"SPLIT_PART": "only-with-extras"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(set(pids.values())) == 1
    shutil.rmtree(tmp_path / "pids")
    (tmp_path / "pids").mkdir()
    r, pids = run(tmp_path, env={"SPLIT_PART": "all"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(set(pids.values())) == 2


def test_an_unknown_part_is_refused(tmp_path):
    make_suite(tmp_path)
    r, _ = run(tmp_path, env={"SPLIT_PART": "extras"})
    assert r.returncode != 0
    assert "the cost table has no part 'extras'" in r.stdout + r.stderr


JUNIT = """<testsuites><testsuite time="10.25">
    <testcase classname="tests.aten.test_x" name="test_a" time="1.5"/>
    <testcase classname="tests.aten.test_x.TestGroup" name="test_b" time="0.25"/>
    <testcase classname="tests.test_ops" name="test_c" time="2"/>
    </testsuite></testsuites>"""


def test_the_cost_table_reads_a_junit_file(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    assert process_split.costs_from_junit(junit) == (
        {"tests/aten/test_x.py": [1.75, 2], "tests/test_ops.py": [2.0, 1]}, 6.5)


def test_refresh_writes_each_pass_and_keeps_the_others(tmp_path):
    """Both parts from their runs, the collection counted per test of the "all" part (3);
    a refresh of one pass keeps the other's part."""
    all_xml, extras_xml, table = tmp_path / "all.xml", tmp_path / "extras.xml", tmp_path / "t"
    all_xml.write_text(JUNIT)
    extras_xml.write_text(JUNIT.replace('time="10.25"', 'time="24.75"').replace(
        '<testcase classname="tests.test_ops" name="test_c" time="2"/>', ""))
    process_split.refresh(table, [("all", all_xml), ("only-with-extras", extras_xml)])
    assert process_split.load_costs(table, "all") == (
        {"tests/aten/test_x.py": (1.75, 2), "tests/test_ops.py": (2.0, 1)},
        pytest.approx(6.5 / 3))
    assert process_split.load_costs(table, "only-with-extras") == (
        {"tests/aten/test_x.py": (1.75, 2)}, pytest.approx(23 / 3))
    extras_xml.write_text(JUNIT.replace('time="10.25"', 'time="4.75"'))
    process_split.refresh(table, [("only-with-extras", extras_xml)])
    assert process_split.load_costs(table, "all")[0]["tests/test_ops.py"] == (2.0, 1)
    assert process_split.load_costs(table, "only-with-extras")[1] == pytest.approx(1 / 3)
    # a pass from two runs (parts of the suite): each file from the run with the most of its
    # tests, the collection from the first; a file neither has keeps its entry
    part = tmp_path / "part.xml"
    part.write_text("""<testsuite time="3">
        <testcase classname="tests.aten.test_x" name="test_a" time="0.5"/>
        <testcase classname="tests.test_y" name="test_d" time="1"/></testsuite>""")
    process_split.refresh(table, [("all", part), ("all", extras_xml)])
    assert process_split.load_costs(table, "all") == (
        {"tests/aten/test_x.py": (1.75, 2), "tests/test_ops.py": (2.0, 1),
         "tests/test_y.py": (1.0, 1)}, pytest.approx(1.5 / 4))
    with pytest.raises(SystemExit, match="unknown pass 'extras'"):
        process_split.refresh(table, [("extras", extras_xml)])
