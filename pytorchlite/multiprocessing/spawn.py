"""spawn / start_processes: run fn(i, *args) in nprocs processes and wait for them
(torch/multiprocessing/spawn.py).

Each child runs _wrap, which catches an exception from fn, writes its formatted traceback
(pickled) to that child's error file and exits with code 1.  The parent waits on the
children's sentinels; at the first child that ends with a non-zero code it terminates the
others (SIGTERM, then SIGKILL after a grace period) and raises ProcessRaisedException with
the child's traceback when the error file exists (it is removed once read), else
ProcessExitedException with the exit code or the signal."""
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import time
import traceback
import warnings

ENV_VAR_PARALLEL_START = "TORCH_MP_PARALLEL_START"

log = logging.getLogger(__name__)

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "SpawnContext", "start_processes"]

_PR_SET_PDEATHSIG = 1


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child's fn raised: the message ends with the child's traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code (exit_code) or was killed by a signal
    (exit_code is minus the signal number, signal_name its name)."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _set_parent_death_signal(sig):
    """Linux: sig is delivered to this process when its parent dies, so that non-daemonic
    children do not outlive a parent that was killed.  Elsewhere nothing happens."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes   # here, not at the top: `import pytorchlite` stays as quick as it was
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _wrap(fn, i, args, error_file):
    """A child's entry point: fn(i, *args); an exception's traceback goes to error_file."""
    _set_parent_death_signal(signal.SIGINT)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent terminated us
    except Exception:
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The started processes, their error files and the sentinels not yet joined
    ({sentinel: process index})."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: index for index, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _join_procs_with_timeout(self, timeout):
        """Joins every process, all within one shared timeout."""
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0, end - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Waits (up to timeout) for a process to end.  True once all have ended with code
        0, False while some still run; when one failed, ends the others (after
        grace_period, if given, for them to exit by themselves) and raises for it."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_all(grace_period)
        raise self._error(error_index)

    def _stop_all(self, grace_period):
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", p.pid)
                p.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting "
                            "via SIGKILL", p.pid)
                p.kill()
            p.join()

    def _error(self, index):
        """The exception for the failed process `index` (its error file exists only when
        fn raised)."""
        failed = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                              error_index=index, error_pid=failed.pid,
                                              exit_code=code, signal_name=name)
            return ProcessExitedException(f"process {index:d} terminated with exit code "
                                          f"{code:d}", error_index=index, error_pid=failed.pid,
                                          exit_code=code)
        with open(self.error_files[index], "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(self.error_files[index])   # PyTorch leaves it behind in the temp folder
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n"
        return ProcessRaisedException(msg + original_trace, index, failed.pid)


class SpawnContext(ProcessContext):
    """The pre-1.4 name of ProcessContext."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.",
                      stacklevel=2)
        super().__init__(processes, error_files)


def _error_file_name():
    """A fresh path for a child's traceback: the file itself exists only if the child
    fails with an exception."""
    import tempfile
    tf = tempfile.NamedTemporaryFile(prefix="pytorch-errorfile-", suffix=".pickle",
                                     delete=False)
    tf.close()
    os.unlink(tf.name)
    return tf.name


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Starts nprocs processes of `start_method` running fn(i, *args), i the process index.
    join=True waits for all of them (raising for the first that fails); join=False returns
    the ProcessContext.  With start_method "forkserver" and TORCH_MP_PARALLEL_START=1 the
    processes are started from a thread pool."""
    parallel = start_method == "forkserver" and \
        os.environ.get(ENV_VAR_PARALLEL_START, "0") == "1"
    if parallel:
        log.info("Starting processes in parallel.")
    mp = multiprocessing.get_context(start_method)

    def start_process(i):
        error_file = _error_file_name()
        process = mp.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        return process, error_file

    if parallel:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=nprocs) as executor:
            started = list(executor.map(start_process, range(nprocs)))
    else:
        started = [start_process(i) for i in range(nprocs)]
    context = ProcessContext([p for p, _ in started], [f for _, f in started])
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """start_processes with the "spawn" start method (another start_method is deprecated
    here: it warns, and "spawn" is used anyway).  fn must be picklable (defined at a
    module's top level): it is called as fn(i, *args) in process i."""
    if start_method != "spawn":
        msg = (f"This method only supports start_method=spawn (got: {start_method}).\n"
               "To use a different start_method use:\n\t\t"
               " torch.multiprocessing.start_processes(...)")
        warnings.warn(msg, FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
