"""pytorchlite.multiprocessing: a drop-in for the standard multiprocessing module
(torch/multiprocessing/__init__.py).

Everything of multiprocessing is re-exported (get_context, set_start_method, Process, Queue,
SimpleQueue, Pipe, Pool, cpu_count, ...).  Importing pytorchlite registers a ForkingPickler
reducer for Tensor, so every multiprocessing queue, pipe and pool -- under fork, spawn and
forkserver -- sends a CPU tensor as a handle to a shared-memory segment (moving its storage
there first) instead of as bytes: see reductions.py and Note [Shared memory lifetime] in
src/c10/storage_shm.c.  spawn / start_processes run a function in several processes and
wait for them (spawn.py)."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (  # noqa: F401
    ENV_VAR_PARALLEL_START, ProcessContext, ProcessExitedException, ProcessRaisedException,
    SpawnContext, spawn, start_processes)

__all__ = ["get_sharing_strategy", "get_all_sharing_strategies", "set_sharing_strategy"]
__all__ += multiprocessing.__all__

# Only PyTorch's default strategy exists here: segments are passed as file descriptors, their
# names unlinked at creation ("file_system" would leave names behind when a process dies).
_STRATEGIES = {"file_descriptor"}


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return "file_descriptor"


def set_sharing_strategy(new_strategy):
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported; pytorchlite "
                         f"implements {sorted(_STRATEGIES)}")


init_reductions()
