"""torch.autograd.profiler: the profiling session (profile) and named ranges
(record_function) over the C recorder (Note [Profiler] in src/autograd/profiler.h).

One session runs at a time in a process; it records the ops of the thread that started it.
Ops that DataLoader worker processes run are not recorded: a forked worker inherits a
session that is no longer listening (its events stay in the worker and are dropped), so the
trace holds the main process's "enumerate(DataLoader)#..." ranges and nothing of the workers."""
import functools
import time

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, build_events  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class record_function:
    """A named range in the profile, as a context manager or a decorator; without a running
    profiler it costs one C call.  Ranges may close in any order: each keeps its own start
    and end (PyTorch's behaviour), and one that outlives its enclosing range is not its
    child."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args   # PyTorch keeps them beside the name; the trace has no place for them
        self._handle = 0

    def __enter__(self):
        self._handle = _C._record_function_enter(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _C._record_function_exit(self._handle)
        self._handle = 0
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper


class profile:
    """The legacy profiler (torch.autograd.profiler.profile): records while the context is
    open; function_events / key_averages() / table() / export_chrome_trace() afterwards."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.entered = False
        self.function_events = None
        self._events = []
        self._memory = []
        self._overhead_ns = 0.0

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._start()
        self.entered = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.enabled:
            return False
        self._stop()
        self._collect()
        return False

    def _start(self):
        _C._profiler_enable(self.record_shapes or self.with_flops, self.profile_memory,
                            self.with_stack)

    def _stop(self):
        _C._profiler_disable()

    def _collect(self, keep=False):
        """Reads the stopped session's events (added to the earlier ones when keep)."""
        events, memory = build_events(_C._profiler_events(), time.monotonic_ns(),
                                      record_shapes=self.record_shapes,
                                      with_flops=self.with_flops,
                                      profile_memory=self.profile_memory)
        self._overhead_ns = _C._profiler_overhead_ns()
        if keep:
            events = self._events + events
            memory = self._memory + memory
        self._events, self._memory = events, memory
        self.function_events = EventList(events, profile_memory=self.profile_memory,
                                         with_flops=self.with_flops,
                                         overhead=self._overhead_text(), memory_events=memory)

    def _overhead_text(self):
        n = len(self._events) + len(self._memory)
        total_us = n * self._overhead_ns / 1e3
        own = sum(e.self_cpu_time_total for e in self._events)
        share = f" ({100.0 * total_us / own:.2f}% of Self CPU time total)" if own > 0 else ""
        return (f"{self._overhead_ns:.0f}ns per event x {n} events = "
                f"{total_us / 1e3:.3f}ms{share}")

    def overhead(self):
        """What recording cost: (ns per event measured at start, events, total us)."""
        n = len(self._events) + len(self._memory)
        return self._overhead_ns, n, n * self._overhead_ns / 1e3

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def events(self):
        self._check_finish()
        return self.function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        if self.function_events is None:   # PyTorch: nothing recorded yet
            return EventList()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    def export_chrome_trace(self, path, min_duration_us=0.0):
        if self.function_events is None:   # PyTorch's error before the profiler stopped
            raise AttributeError("'NoneType' object has no attribute 'save'")
        return self.function_events.export_chrome_trace(path, min_duration_us=min_duration_us)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finish()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.function_events.export_stacks(path, metric)

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        self._check_finish()
        return str(self.function_events)
