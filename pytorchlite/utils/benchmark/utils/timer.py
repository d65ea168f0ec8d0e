"""Timer: timeit.Timer with replicates, thread control and a Measurement as its result
(torch/utils/benchmark/utils/timer.py).

A Python statement is timed by the standard library's timeit.Timer.  C++ statements
(language="cpp") are accepted and described as PyTorch does, but pytorchlite cannot compile
them (PyTorch builds them against its C++ API with a JIT toolchain), so timing one raises
NotImplementedError.  Callgrind instruction counts need the valgrind client-request
bindings PyTorch compiles into torch._C; pytorchlite has none, so collect_callgrind raises
the OSError PyTorch raises where those bindings or valgrind's tools are missing."""
import enum
import shutil
import statistics
import textwrap
import timeit as _timeit

import pytorchlite

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer():
    """timeit.default_timer, after waiting for the accelerator's queued work (if any)."""
    if pytorchlite.accelerator.is_available():
        pytorchlite.accelerator.synchronize()
    return _timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class CPPTimer:
    """Holds a C++ statement; timing it needs a C++ toolchain pytorchlite does not have."""

    def __init__(self, stmt, setup, global_setup, timer, globals):
        if timer is not _timeit.default_timer and pytorchlite.accelerator.is_available():
            raise NotImplementedError(
                "PyTorch was built with accelerators and an accelerator is present; however "
                "Timer does not yet support accelerator measurements. If your code is CPU "
                "only, pass `timer=timeit.default_timer` to the Timer's constructor to "
                "indicate this. (Note that this will produce incorrect results if an "
                "accelerator is in fact used, as Timer will not synchronize the accelerator.)")
        if globals:
            raise ValueError("C++ timing does not support globals.")
        self._stmt = textwrap.dedent(stmt)
        self._setup = textwrap.dedent(setup)
        self._global_setup = textwrap.dedent(global_setup)

    def timeit(self, number):
        raise NotImplementedError(
            "pytorchlite cannot time C++ statements (language='cpp'): it has no C++ API to "
            "compile them against; time a Python statement instead")


def _strip_block(code):
    """Dedented, without the newline that opens a triple-quoted block or trailing space."""
    code = textwrap.dedent(code)
    return (code[1:] if code[:1] == "\n" else code).rstrip()


class Timer:
    """Measures a statement (`stmt`, run after `setup`, with `globals`): see PyTorch's
    torch.utils.benchmark.Timer.  label, sub_label, description and env describe the
    measurement for printing and for Compare; num_threads is pytorchlite's thread count
    while it runs (1 by default, so that measurements are comparable)."""

    _timer_cls = _timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        # A copy: timeit adds __builtins__ to the dict it runs in.
        self._globals = dict(globals or {})
        timer_kwargs = {}
        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", pytorchlite)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most likely this code "
                    "can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            if self._timer_cls is not _timeit.Timer:
                raise AssertionError("_timer_cls has already been swapped.")
            self._timer_cls = CPPTimer
            setup = "" if setup == "pass" else setup
            self._language = Language.CPP
            timer_kwargs["global_setup"] = global_setup
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt, setup = _strip_block(stmt), _strip_block(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=dict(self._globals), **timer_kwargs)
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number):
        # No statement takes under 1 ns; this also keeps ratios finite.
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number, times):
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def timeit(self, number=1000000):
        """Runs stmt `number` times (after a warmup of number // 100, at least 2): a
        Measurement of one raw time."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return self._measurement(number, [self._timeit(number=number)])

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time,
                                   max_run_time=None, callback=None):
        """Times blocks until min_run_time is spent and stop_hook agrees, or max_run_time
        is passed."""
        total_time = 0.0
        can_stop = False
        times = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time):
        """The smallest power of ten of runs per block whose time dwarfs the timer's own
        overhead (1e-4 of it, and at least min_run_time / 1000); doubles as the warmup."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = statistics.median_low([self._timeit(0) for _ in range(5)])
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a fixed number of runs (see _estimate_block_size), timed until their
        total reaches min_run_time.  callback(number, time) sees every block."""
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), lambda times: True,
            min_run_time=min_run_time, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Like blocked_autorange, but goes on (up to max_run_time) until more than 3 blocks
        have IQR / median below threshold."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            return len(times) > 3 and \
                self._measurement(number, times).meets_confidence(threshold=threshold)

        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), stop_hook, min_run_time, max_run_time,
            callback=callback)
        return self._measurement(number, times)

    def collect_callgrind(self, number=100, *, repeats=None, collect_baseline=True,
                          retain_out_file=False):
        """Instruction counts under Callgrind: not available in pytorchlite (see the module
        docstring).  The arguments and the statement are checked as PyTorch checks them."""
        if not isinstance(self._task_spec.stmt, str):
            raise ValueError("`collect_callgrind` currently only supports string `stmt`")
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        self._timeit(1)
        if self._language != Language.PYTHON and self._globals:
            raise AssertionError("_timer globals are only supported for Python timers")
        missing = [cmd for cmd in ("valgrind", "callgrind_control", "callgrind_annotate")
                   if shutil.which(cmd) is None]
        if missing:
            raise OSError("Missing: " + ", ".join(missing))
        raise OSError("Valgrind is not supported on this platform.")
