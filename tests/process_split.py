"""Two test processes for a whole-suite run: one pytest runs on one core, and CI's machine
(like most) has two.  When a run selects many tests (more than MIN_SECONDS of them by the
cost table) on a machine with two or more CPUs, this process keeps about half of the test
files and starts ONE child pytest on the same command line for the rest; the child runs the
test ids it is given (whole files, in their collected order) and writes its reports to a
file, and this process replays them as they come through pytest's own report hooks, as
pytest-xdist does: the progress line, the failures, the warnings, --durations, --junitxml
and the exit status count both processes' tests.  A test the child was given and never
reported (a crash, a hang ended by a signal, a test id it did not collect) is a failure here,
with the end of the child's output.

PTL_TEST_WORKERS=1 keeps a run in one process.  Runs that stop early or need one process
(-x / --maxfail, -s, --pdb, --lf / --ff / --nf / --sw, --collect-only, golden recording) never
split, and neither do runs with collection errors or runs of files outside tests/.

The files are dealt largest first to the less loaded process; the child starts behind by
the collection it repeats, priced from the table (its seconds per test collected, times the
tests collected), so that a selection is always dealt the same way.  The cost table,
split_costs.json, has one part a pass of CI (.ci/run): "all" for a run without
--only-with-extras, "only-with-extras" for one with it (the second pass selects other tests of
the files, and its tests compare with PyTorch); a file's cost is its seconds there per test
times the tests selected, and a file the part does not know costs the part's median seconds
per test (the median over its files) times its tests.

To refresh the table, on a host as quiet as can be (relative costs are what matter; at
`nice -n 10` beside other work), one process each, with every optional tool installed for the
second:
    PTL_TEST_WORKERS=1 pytest --junitxml=/tmp/all.xml
    PTL_TEST_WORKERS=1 pytest --only-with-extras --junitxml=/tmp/extras.xml
    python tests/process_split.py all /tmp/all.xml only-with-extras /tmp/extras.xml
A part's collection is its run's time less its tests' (junit's testsuite time and testcases);
both parts count it per test of the whole suite (the first part's tests), which the second
pass collects too before it keeps its own.  A pass may be named with several runs (parts of
the suite: each file's entry from the run with the most of its tests); a file no run has
keeps its entry."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET

import pytest

WORKERS_ENV = "PTL_TEST_WORKERS"
SHARE_ENV = "PTL_TEST_SHARE"      # in the child: the file of the test ids it runs
EVENTS_ENV = "PTL_TEST_EVENTS"    # in the child: the file its reports go to
MIN_SECONDS = 60.0                # a run estimated shorter stays in one process
# The child runs as a grandchild through a shell that exits at once, so that it is no child of
# this process (tests that list or reap their own children see only their own); the subshell
# between writes the child's pid, then its exit status ($0 is the status file; each file
# appears whole).
LAUNCH = ('("$@" & echo $! > "$0.part"; mv "$0.part" "$0.pid"; wait $!; '
          'echo $? > "$0.part"; mv "$0.part" "$0") &')
COSTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "split_costs.json")
NO_SPLIT_OPTIONS = ("maxfail", "usepdb", "trace", "lf", "failedfirst", "newfirst", "stepwise",
                    "stepwise_skip", "cacheclear", "collectonly")


def file_of(nodeid):
    return nodeid.split("::", 1)[0]


PASSES = ("all", "only-with-extras")
UNKNOWN_PER_TEST = 0.05   # seconds a test, where the table has nothing


def load_table(path):
    """The cost table at path ({} without one): {"collection": {pass: [seconds, tests]},
    pass: {file: [seconds, tests]}, ...}."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def load_costs(path, name):
    """({file: (seconds, tests)}, collection seconds per test collected) of the pass name in
    the cost table at path."""
    table = load_table(path)
    seconds, tests = table.get("collection", {}).get(name, (0.0, 0))
    costs = {k: tuple(v) for k, v in table.get(name, {}).items()}
    return costs, seconds / tests if tests else 0.0


def median_per_test(costs):
    per_test = sorted(s / n for s, n in costs.values() if n)
    if not per_test:
        return UNKNOWN_PER_TEST
    mid = len(per_test) // 2
    return per_test[mid] if len(per_test) % 2 else (per_test[mid - 1] + per_test[mid]) / 2


def estimate(groups, costs):
    """{file: estimated seconds} of the selected tests, grouped {file: [nodeid, ...]}."""
    median = median_per_test(costs)
    out = {}
    for path, ids in groups.items():
        seconds, n = costs.get(path, (median, 1))
        out[path] = seconds / max(n, 1) * len(ids)
    return out


def deal(cost, head_start):
    """Files for (this process, the child): largest first to the less loaded one; the child
    starts head_start seconds behind.  Deterministic: ties go by name."""
    load, share = [0.0, head_start], ([], [])
    for path in sorted(cost, key=lambda p: (-cost[p], p)):
        k = 0 if load[0] <= load[1] else 1
        load[k] += cost[path]
        share[k].append(path)
    return share


def should_split(config, session, tests_dir):
    workers = os.environ.get(WORKERS_ENV, "2")
    if workers not in ("1", "2"):
        raise pytest.UsageError(f"{WORKERS_ENV} must be 1 or 2, not {workers!r}")
    if workers == "1" or len(os.sched_getaffinity(0)) < 2 or session.testsfailed:
        return False
    if os.environ.get("PTL_RECORD_GOLDEN") == "1":   # golden.py writes one file per session
        return False
    if any(not str(item.path).startswith(tests_dir + os.sep) for item in session.items):
        return False
    if getattr(config.option, "capture", None) == "no":   # -s: the output is wanted as it comes
        return False
    return not any(getattr(config.option, name, None) for name in NO_SPLIT_OPTIONS)


class Parent:
    """The plugin of the process that splits: starts the child and replays its reports."""

    def __init__(self, config, tests_dir, costs, min_seconds, name):
        self.config = config
        self.tests_dir, self.costs, self.min_seconds = tests_dir, costs, min_seconds
        self.name = name   # the cost table's part
        self.started = time.monotonic()
        self.collected = 0
        self.child = None   # the status file while a child runs
        self.expected = []
        self.done = set()
        self.failed_replayed = False
        self.replaying = False
        self.events = None
        self.pending = ""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        self.collected = len(items)   # what the child collects too, before any deselection

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session):
        if should_split(self.config, session, self.tests_dir):
            self.start_child(session)
        try:
            result = yield
        except BaseException:
            self.stop_child()
            raise
        if self.child is not None:
            self.finish_child()
        return result

    def start_child(self, session):
        groups = {}
        for item in session.items:
            groups.setdefault(file_of(item.nodeid), []).append(item.nodeid)
        costs, collection = load_costs(self.costs, self.name)
        cost = estimate(groups, costs)
        if sum(cost.values()) < self.min_seconds:
            return
        head_start = collection * self.collected
        mine, theirs = deal(cost, head_start)
        if not mine or not theirs:
            return
        theirs = set(theirs)
        self.expected = [i.nodeid for i in session.items if file_of(i.nodeid) in theirs]
        session.items[:] = [i for i in session.items if file_of(i.nodeid) not in theirs]
        self.folder = tempfile.mkdtemp(prefix="ptl-split-")
        share = os.path.join(self.folder, "share")
        with open(share, "w") as f:
            f.write("\n".join(self.expected) + "\n")
        events = os.path.join(self.folder, "events")
        open(events, "w").close()
        args = [sys.executable, "-m", "pytest", *self.config.invocation_params.args]
        if not self.config.pluginmanager.is_blocked("cacheprovider"):
            args += ["-p", "no:cacheprovider"]   # this process keeps the cache of both
        if getattr(self.config.option, "xmlpath", None):
            args.append("--junitxml=" + os.path.join(self.folder, "child.xml"))
        env = dict(os.environ, **{SHARE_ENV: share, EVENTS_ENV: events})
        self.log = open(os.path.join(self.folder, "output"), "w+")
        self.child = os.path.join(self.folder, "status")
        subprocess.run(["sh", "-c", LAUNCH, self.child, *args], env=env, check=True,
                       cwd=self.config.invocation_params.dir, stdout=self.log,
                       stderr=subprocess.STDOUT)
        self.events = open(events)
        self.say(f"two processes (tests/process_split.py): this one runs {len(session.items)} "
                 f"tests of {len(mine)} files, a child {len(self.expected)} of {len(theirs)} "
                 f"(estimated {sum(cost[p] for p in mine):.0f} s and "
                 f"{sum(cost[p] for p in theirs):.0f} s after {head_start:.0f} s of "
                 f"collection; this one collected in {time.monotonic() - self.started:.0f} s)")

    def say(self, line):
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line)

    def stop_child(self):
        if self.child is not None:
            while not os.path.exists(self.child + ".pid"):   # the subshell is starting it
                time.sleep(0.01)
            with open(self.child + ".pid") as f, contextlib.suppress(ProcessLookupError):
                os.kill(int(f.read()), signal.SIGKILL)
            self.wait_child()
            self.cleanup()

    def wait_child(self, replay=False):
        """The child's exit status, once it has ended; replays its reports meanwhile."""
        while True:
            try:
                with open(self.child) as f:
                    return int(f.read())
            except FileNotFoundError:
                if replay:
                    self.replay()
                time.sleep(0.2)

    def cleanup(self):
        self.events.close()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.child = None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self):
        if self.child is not None and not self.replaying:
            self.replay()

    def replay(self):
        """Replays the child's complete event lines written so far."""
        self.replaying = True
        try:
            self.pending += self.events.read()
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self.replay_event(json.loads(line))
        finally:
            self.replaying = False

    def replay_event(self, event):
        hook = self.config.hook
        kind = event.pop("event")
        if kind == "logstart":
            hook.pytest_runtest_logstart(nodeid=event["nodeid"],
                                         location=tuple(event["location"]))
        elif kind == "logfinish":
            hook.pytest_runtest_logfinish(nodeid=event["nodeid"],
                                          location=tuple(event["location"]))
        elif kind == "report":
            report = hook.pytest_report_from_serializable(config=self.config,
                                                          data=event["data"])
            report.location = tuple(report.location)   # JSON made the tuples lists
            if isinstance(report.longrepr, list):        # a skip's (path, line, reason)
                report.longrepr = tuple(report.longrepr)
            self.failed_replayed |= report.failed
            if report.when == "teardown":
                self.done.add(report.nodeid)
            hook.pytest_runtest_logreport(report=report)
        elif kind == "warning":
            message = warnings.WarningMessage(event["message"], warning_category(event),
                                              event["filename"], event["lineno"])
            hook.pytest_warning_recorded.call_historic(kwargs=dict(
                warning_message=message, when=event["when"], nodeid=event["nodeid"],
                location=None))

    def finish_child(self):
        self.say(f"this process ran its share in {time.monotonic() - self.started:.0f} s; "
                 f"the child's tests so far: {len(self.done)} of {len(self.expected)}")
        rc = self.wait_child(replay=True)   # this process is done: the child's as they come
        self.replay()
        missing = [nodeid for nodeid in self.expected if nodeid not in self.done]
        if missing or rc not in (0, 1) or (rc == 1 and not self.failed_replayed):
            self.log.seek(0)
            output = self.log.read()[-6000:]
            nodeid = missing[0] if missing else self.expected[-1]
            text = (f"the second test process (tests/process_split.py) exited with code {rc} "
                    f"and did not report {len(missing)} of its {len(self.expected)} tests, "
                    f"from this one on; the end of its output:\n{output}")
            report = pytest.TestReport(nodeid, (file_of(nodeid), None, nodeid), {},
                                       "failed", text, "call")
            self.config.hook.pytest_runtest_logreport(report=report)
        self.say(f"the child ended at {time.monotonic() - self.started:.0f} s (exit code {rc})")
        self.cleanup()


def warning_category(event):
    category = getattr(sys.modules.get(event["module"]), event["category"], None)
    return category if isinstance(category, type) and issubclass(category, Warning) \
        else UserWarning


class Child:
    """The plugin of the child: keeps the test ids it was given and writes its reports."""

    def __init__(self, config, share, events):
        self.config = config
        with open(share) as f:
            self.share = [line for line in f.read().split("\n") if line]
        self.out = open(events, "a")

    def write(self, **event):
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        by_id = {item.nodeid: item for item in items}
        kept = [by_id[nodeid] for nodeid in self.share if nodeid in by_id]
        share = set(self.share)
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in share])
        items[:] = kept   # a test id not collected here is reported missing by the parent

    def pytest_runtest_logstart(self, nodeid, location):
        self.write(event="logstart", nodeid=nodeid, location=location)

    def pytest_runtest_logreport(self, report):
        data = self.config.hook.pytest_report_to_serializable(config=self.config,
                                                               report=report)
        self.write(event="report", data=data)

    def pytest_runtest_logfinish(self, nodeid, location):
        self.write(event="logfinish", nodeid=nodeid, location=location)

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        if when != "runtest":   # the parent collected and configured the same way
            return
        category = warning_message.category
        self.write(event="warning", message=str(warning_message.message),
                   module=category.__module__, category=category.__qualname__,
                   filename=warning_message.filename, lineno=warning_message.lineno,
                   when=when, nodeid=nodeid)

    def pytest_unconfigure(self):
        self.out.close()


def register(config, tests_dir, costs=COSTS, min_seconds=MIN_SECONDS, name="all"):
    """Called by the pytest_configure of the conftest.py in tests_dir (the tests that may
    split); costs is the cost table's path, name the part of it that prices this run."""
    if name not in PASSES:
        raise ValueError(f"the cost table has no part {name!r}")
    share = os.environ.pop(SHARE_ENV, None)
    events = os.environ.pop(EVENTS_ENV, None)   # a rerun's own child sessions are whole runs
    if share is not None:
        config.pluginmanager.register(Child(config, share, events), "ptl-split-child")
    else:
        config.pluginmanager.register(Parent(config, tests_dir, costs, min_seconds, name),
                                      "ptl-split-parent")


def costs_from_junit(path):
    """({file: [seconds, tests]}, collection seconds) from a --junitxml file (xunit2:
    classname is the module's dotted path, then any class; the collection is the testsuite's
    time less its testcases')."""
    costs = {}
    root = ET.parse(path).getroot()
    total = 0.0
    for case in root.iter("testcase"):
        seconds = float(case.get("time") or 0)
        total += seconds
        parts = (case.get("classname") or "").split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        if not parts:
            continue
        entry = costs.setdefault("/".join(parts) + ".py", [0.0, 0])
        entry[0] += seconds
        entry[1] += 1
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    elapsed = float(suite.get("time") or 0) if suite is not None else 0.0
    return ({k: [round(s, 2), n] for k, (s, n) in sorted(costs.items())},
            round(max(elapsed - total, 0.0), 1))


def refresh(path, runs):
    """Rewrites the cost table at path from runs [(pass, junit file)]: each file the runs of a
    pass have gets its entry from the one with the most of its tests (several runs: parts of
    the suite, or a run stopped early), and the pass's collection comes from its first run;
    a file no run has keeps its entry (a deleted test file's goes by hand).  The collection
    counts per test of the "all" part's tests."""
    table = load_table(path)
    collection = table.setdefault("collection", {})
    for name in dict(runs):
        if name not in PASSES:
            raise SystemExit(f"unknown pass {name!r}: one of {', '.join(PASSES)}")
        fresh = {}
        for i, junit in enumerate(junit for n, junit in runs if n == name):
            costs, seconds = costs_from_junit(junit)
            if i == 0:
                collection[name] = [seconds, 0]
            for file, entry in costs.items():
                if entry[1] > fresh.get(file, (0, 0))[1]:
                    fresh[file] = entry
        table.setdefault(name, {}).update(fresh)
    suite = sum(n for _, n in table.get("all", {}).values())
    for entry in collection.values():   # [seconds, tests collected]
        entry[1] = suite
    lines = ['"collection": ' + json.dumps(dict(sorted(collection.items())))]
    for name in PASSES:
        rows = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}"
                          for k, v in sorted(table.get(name, {}).items()))
        lines.append(f"{json.dumps(name)}: {{\n{rows}\n}}")
    with open(path, "w") as f:   # a file a line
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or len(args) % 2:
        raise SystemExit("usage: python tests/process_split.py PASS JUNIT_XML [PASS JUNIT_XML]"
                         f" (PASS: {' or '.join(PASSES)})")
    refresh(COSTS, list(zip(args[::2], args[1::2])))
