"""pytorchlite.profiler (torch.profiler): profile, schedule, tensorboard_trace_handler,
record_function.  See docs/handbook/profiling.md and Note [Profiler] in
src/autograd/profiler.h."""
from ..autograd.profiler import record_function
from ..autograd.profiler_util import DeviceType
from .profiler import (ProfilerAction, ProfilerActivity, profile, schedule, supported_activities,
                       tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function"]


def kineto_available():
    """There is no Kineto here: the recorder is pytorchlite's own."""
    return False
