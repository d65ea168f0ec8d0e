"""torch.profiler.profile over the legacy session (autograd/profiler.py): activities, the
step schedule, on_trace_ready, and "ProfilerStep#N" ranges."""
import enum
import gzip
import os
import socket
import time
import warnings

from .. import cuda
from ..autograd import profiler as _legacy


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does at a step: nothing, warm up (not recorded), record, or record
    and hand the trace to on_trace_ready at the end of the step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The action of each step: skip_first steps of NONE, then cycles of wait NONE steps,
    warmup WARMUP steps and active recorded steps (the last RECORD_AND_SAVE), repeat times
    (0: forever), then NONE; skip_first_wait=1 leaves out the first cycle's wait."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results")
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _record_always(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """An on_trace_ready that writes each trace to dir_name as
    <worker_name>.<time in ns>.pt.trace.json[.gz] (worker_name: "<host>_<pid>"), the layout
    TensorBoard's profiler plugin reads."""
    def handler_fn(prof):
        nonlocal worker_name
        os.makedirs(dir_name, exist_ok=True)
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class profile:
    """torch.profiler.profile: records CPU ops, backward nodes, record_function ranges (and,
    with profile_memory, allocations) of the thread that starts it, following schedule."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        self.activities = set(activities) if activities else supported_activities()
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        if ProfilerActivity.CUDA in self.activities and not cuda.is_available():
            warnings.warn("CUDA is not available, disabling CUDA profiling")
            self.activities.discard(ProfilerActivity.CUDA)
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _record_always
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self.profiler = None
        self._recording = False
        self._options = dict(record_shapes=record_shapes, profile_memory=profile_memory,
                             with_stack=with_stack, with_flops=with_flops,
                             with_modules=with_modules, acc_events=acc_events)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    def start(self):
        if self._recording:   # PyTorch would restart silently and lose the events so far
            raise RuntimeError("Profiler is already enabled on this thread")
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self):
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self):
        """Ends one step (a training iteration) and moves to the schedule's next action."""
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step()

    def _enter_step(self):
        if self.record_steps:
            self.step_rec_fn = _legacy.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _transit(self, previous, current):
        """Starts or stops recording between two actions (None: the profiler stops)."""
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.RECORD_AND_SAVE and current is not None:
            self._stop_trace()
            self._trace_ready()
        elif previous in recording and current not in recording:
            self._stop_trace()
            if current is None:
                self._trace_ready()
            else:
                warnings.warn(f"Incorrect schedule: {previous} followed by {current}")
        elif previous == ProfilerAction.WARMUP and current in (None, ProfilerAction.NONE):
            if current is not None:
                warnings.warn(f"Incorrect schedule: {previous} followed by {current}")
        if current in recording and not self._recording:
            self._start_trace()

    def _start_trace(self):
        keep = self.acc_events and self.profiler is not None
        if not keep:
            self.profiler = _legacy.profile(**self._options)
        self.profiler._start()
        self._keep = keep
        self._recording = True

    def _stop_trace(self):
        if not self._recording:
            return
        self.profiler._stop()
        self.profiler._collect(keep=self._keep)
        self._recording = False

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def events(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_chrome_trace(self, path, use_python_export=False, min_duration_us=0.0):
        """The last recorded cycle as a Chrome trace (path ending in .gz: gzipped).  Before
        the profiler stopped there is nothing to export: PyTorch's AttributeError."""
        if self.profiler is None or self.profiler.function_events is None or self._recording:
            raise AttributeError("'NoneType' object has no attribute 'save'")
        if os.fspath(path).endswith(".gz"):
            tmp = f"{os.fspath(path)[:-3]}.tmp{os.getpid()}"
            self.profiler.export_chrome_trace(tmp, min_duration_us=min_duration_us)
            with open(tmp, "rb") as f_in, gzip.open(path, "wb") as f_out:
                f_out.write(f_in.read())
            os.remove(tmp)
            return
        self.profiler.export_chrome_trace(path, min_duration_us=min_duration_us)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.profiler.export_stacks(path, metric)

    def overhead(self):
        """(ns per event, events, total us): what recording cost, measured at start."""
        return self.profiler.overhead()
