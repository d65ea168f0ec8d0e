"""pytorchlite.multiprocessing.spawn / start_processes (torch/multiprocessing/spawn.py):
fn(i, *args) in each child, results back through files and queues, PyTorch's exceptions and
messages for a child that raises, exits with a code or is killed, the other children ended
after a failure, join=False's ProcessContext, and the start-method checks.  Every wait has a
deadline, so a broken join fails instead of hanging."""
import os
import pickle
import signal
import sys
import time
import warnings

import pytest

import pytorchlite.multiprocessing as mp
from golden import golden

# the module (its name is shadowed by the function in pytorchlite.multiprocessing, as in torch)
spawn_module = sys.modules["pytorchlite.multiprocessing.spawn"]

DEADLINE = 120.0   # seconds a test waits for its children before failing
MARK = "child"     # the parent sets "parent": a forked child keeps that, a spawned one not


# ---- the children's functions (top level, so that spawn can pickle them) ----

def write_index(i, directory, scale):
    with open(os.path.join(directory, f"out{i}"), "w") as f:
        f.write(f"{i * scale} {os.getpid()} {MARK}")


def put_square(i, queue):
    queue.put((i, i * i))


def raise_in_one(i, directory, failing):
    if i == failing:
        raise ValueError(f"boom {i}")
    write_index(i, directory, 1)


def exit_with_code(i, code):
    if i == 0:
        sys.exit(code)


def os_exit(i, code):
    os._exit(code)


def kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def sleep_unless_failing(i, failing, directory):
    if i == failing:
        # fail only once every other child is running, so that they must be ended
        while len(os.listdir(directory)) < 2:
            time.sleep(0.01)
        raise RuntimeError("child failed")
    open(os.path.join(directory, f"ready{i}"), "w").close()
    time.sleep(600)


def ignore_sigterm_then_sleep(i, failing, directory):
    if i != failing:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleep_unless_failing(i, failing, directory)


def succeed(i):
    pass


# ---- helpers ----

def join_with_deadline(context):
    """context.join() until it returns True (or raises); fails past DEADLINE."""
    end = time.monotonic() + DEADLINE
    try:
        while not context.join(timeout=1.0):
            assert time.monotonic() < end, "children still running past the deadline"
    finally:
        for p in context.processes:
            if p.is_alive():
                p.kill()
                p.join()


def outputs(directory, nprocs):
    result = []
    for i in range(nprocs):
        with open(os.path.join(directory, f"out{i}")) as f:
            value, pid, mark = f.read().split()
        result.append((int(value), int(pid), mark))
    return result


# ---- results ----

@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_spawn_runs_fn_with_index_and_args(tmp_path, nprocs):
    assert mp.spawn(write_index, args=(str(tmp_path), 10), nprocs=nprocs) is None
    got = outputs(tmp_path, nprocs)
    assert [v for v, _, _ in got] == [10 * i for i in range(nprocs)]
    assert len({pid for _, pid, _ in got} | {os.getpid()}) == nprocs + 1
    assert mp.active_children() == []


def test_results_through_a_queue():
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(put_square, args=(queue,), nprocs=3)
    assert sorted(queue.get() for _ in range(3)) == [(0, 0), (1, 1), (2, 4)]


def put_tensor(i, queue):
    import pytorchlite
    queue.put((i, pytorchlite.arange(4, dtype=pytorchlite.float64) * (i + 1)))


def test_tensors_through_a_queue_with_join_false():
    # A tensor travels as a shared-memory handle that the child serves until the parent has
    # taken it: the parent receives before joining (as PyTorch's file_descriptor strategy
    # needs the sender alive too).
    queue = mp.get_context("spawn").Queue()
    context = mp.spawn(put_tensor, args=(queue,), nprocs=2, join=False)
    got = dict(queue.get(timeout=DEADLINE) for _ in range(2))
    join_with_deadline(context)
    assert {i: t.tolist() for i, t in got.items()} == \
        {0: [0.0, 1.0, 2.0, 3.0], 1: [0.0, 2.0, 4.0, 6.0]}
    assert all(t.is_shared() for t in got.values())


@pytest.mark.parametrize("method", [m for m in ("fork", "forkserver")
                                    if m in mp.get_all_start_methods()])
def test_start_processes_other_methods(tmp_path, monkeypatch, method):
    monkeypatch.setattr(sys.modules[__name__], "MARK", "parent")
    mp.start_processes(write_index, args=(str(tmp_path), 2), nprocs=2, start_method=method)
    got = outputs(tmp_path, 2)
    assert [v for v, _, _ in got] == [0, 2]
    assert {m for _, _, m in got} == {"parent" if method == "fork" else "child"}


def test_parallel_start_with_forkserver(tmp_path, monkeypatch):
    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no forkserver start method on this platform")
    assert mp.ENV_VAR_PARALLEL_START == "TORCH_MP_PARALLEL_START"
    monkeypatch.setenv(mp.ENV_VAR_PARALLEL_START, "1")
    context = mp.start_processes(write_index, args=(str(tmp_path), 3), nprocs=3, join=False,
                                 start_method="forkserver")
    join_with_deadline(context)
    assert [v for v, _, _ in outputs(tmp_path, 3)] == [0, 3, 6]
    assert [p.pid for p in context.processes] == context.pids()


# ---- failures ----

def test_child_exception_reaches_the_parent(tmp_path):
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(raise_in_one, args=(str(tmp_path), 1), nprocs=2)
    err = info.value
    message = str(err)
    assert message.startswith("\n\n-- Process 1 terminated with the following error:\n"
                              "Traceback (most recent call last):\n")
    assert message.endswith("ValueError: boom 1\n")
    assert 'in raise_in_one\n' in message
    assert err.error_index == 1 and err.msg == message and err.error_pid > 0
    assert isinstance(err, spawn_module.ProcessException)
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.error_index, back.error_pid) == \
        (mp.ProcessRaisedException, message, 1, err.error_pid)


def test_child_exit_code():
    with pytest.raises(mp.ProcessExitedException) as info:
        mp.spawn(exit_with_code, args=(3,), nprocs=2)
    err = info.value
    assert str(err) == "process 0 terminated with exit code 3"
    assert (err.error_index, err.exit_code, err.signal_name) == (0, 3, None)
    back = pickle.loads(pickle.dumps(err))
    assert (back.exit_code, back.signal_name, back.error_pid) == (3, None, err.error_pid)


def test_child_os_exit():
    with pytest.raises(mp.ProcessExitedException,
                       match="^process 0 terminated with exit code 7$") as info:
        mp.spawn(os_exit, args=(7,))
    assert info.value.exit_code == 7


def test_child_killed_by_signal():
    with pytest.raises(mp.ProcessExitedException,
                       match="^process 0 terminated with signal SIGKILL$") as info:
        mp.spawn(kill_self)
    assert info.value.exit_code == -signal.SIGKILL and info.value.signal_name == "SIGKILL"


def test_other_children_are_terminated_after_a_failure(tmp_path):
    context = mp.spawn(sleep_unless_failing, args=(2, str(tmp_path)), nprocs=3, join=False)
    with pytest.raises(mp.ProcessRaisedException, match="RuntimeError: child failed\n$"):
        join_with_deadline(context)
    assert [p.is_alive() for p in context.processes] == [False] * 3
    assert [p.exitcode for p in context.processes] == [-signal.SIGTERM] * 2 + [1]
    assert not any(os.path.exists(f) for f in context.error_files)   # read, then removed


def test_sigkill_after_the_grace_period(tmp_path):
    context = mp.spawn(ignore_sigterm_then_sleep, args=(0, str(tmp_path)), nprocs=3,
                       join=False)
    with pytest.raises(mp.ProcessRaisedException) as info:
        end = time.monotonic() + DEADLINE
        while not context.join(timeout=1.0, grace_period=0.5):
            assert time.monotonic() < end
    assert info.value.error_index == 0
    assert [p.exitcode for p in context.processes] == [1] + [-signal.SIGKILL] * 2


def _failures(lib_mp, directory):
    """[exception class name, message (a traceback: its first line and last line)] of a
    child that exits with a code, one killed by a signal and one that raises."""
    out = []
    for fn, args, nprocs in ((exit_with_code, (3,), 2), (kill_self, (), 1),
                             (raise_in_one, (directory, 1), 2)):
        try:
            lib_mp.spawn(fn, args=args, nprocs=nprocs)
        except Exception as e:  # noqa: BLE001 -- the exception is the result
            lines = str(e).split("\n")
            out.append([type(e).__name__, e.error_index,
                        "\n".join(lines[:4]) + " ... " + "\n".join(lines[-2:])])
    return out


def test_failure_messages_are_pytorchs(tmp_path):
    def theirs():
        import torch.multiprocessing
        return _failures(torch.multiprocessing, str(tmp_path))
    assert _failures(mp, str(tmp_path)) == golden(theirs)


# ---- ProcessContext ----

def test_join_false_returns_the_context(tmp_path):
    context = mp.spawn(write_index, args=(str(tmp_path), 5), nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext)
    pids = context.pids()
    assert len(pids) == 2 and all(isinstance(p, int) for p in pids)
    assert sorted(context.sentinels.values()) == [0, 1]
    assert len(context.error_files) == 2
    join_with_deadline(context)
    assert context.sentinels == {} and context.join() is True
    assert [v for v, _, _ in outputs(tmp_path, 2)] == [0, 5]
    assert not any(os.path.exists(f) for f in context.error_files)


def test_join_timeout_returns_false_while_running(tmp_path):
    context = mp.spawn(sleep_unless_failing, args=(-1, str(tmp_path)), nprocs=1, join=False)
    try:
        assert context.join(timeout=0.01) is False
    finally:
        for p in context.processes:
            p.kill()
            p.join()


def test_spawn_context_is_the_old_name():
    with pytest.warns(UserWarning,
                      match="^SpawnContext is renamed to ProcessContext since 1.4 release.$"):
        context = mp.SpawnContext([], [])
    assert isinstance(context, mp.ProcessContext) and context.join() is True


# ---- start methods ----

def test_spawn_with_another_start_method_warns_and_spawns(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "MARK", "parent")
    with pytest.warns(FutureWarning) as record:
        mp.spawn(write_index, args=(str(tmp_path), 1), start_method="fork")
    assert str(record[0].message) == (
        "This method only supports start_method=spawn (got: fork).\n"
        "To use a different start_method use:\n\t\t"
        " torch.multiprocessing.start_processes(...)")
    assert outputs(tmp_path, 1)[0][2] == "child"   # a spawned child: the module re-imported


def test_bad_start_method():
    with pytest.raises(ValueError, match="^cannot find context for 'threads'$"):
        mp.start_processes(succeed, start_method="threads")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        mp.spawn(succeed, start_method="threads")   # deprecated: spawn is used anyway


def test_names_match_pytorch():
    names = {"ENV_VAR_PARALLEL_START", "ProcessContext", "ProcessExitedException",
             "ProcessRaisedException", "spawn", "SpawnContext", "start_processes"}
    assert all(hasattr(mp, n) for n in names)
    assert callable(mp.spawn) and mp.spawn is spawn_module.spawn
    assert set(spawn_module.__all__) == names - {"ENV_VAR_PARALLEL_START"} | \
        {"ProcessException"}
