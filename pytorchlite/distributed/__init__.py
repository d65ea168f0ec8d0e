"""torch.distributed on MPI: process groups, collectives on CPU tensors, object collectives,
and the launcher (python -m pytorchlite.distributed.run).  Mirrors torch/distributed/__init__.py.

Needs mpi4py and an MPI library (pip install "pytorchlite[distributed]" and, on Debian or
Ubuntu, apt-get install openmpi-bin libopenmpi-dev); without them is_available() is False and
init_process_group raises.  See docs/handbook/distributed.md."""
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__  # noqa: F401
from .distributed_c10d import (_DEFAULT_FIRST_BUCKET_BYTES,  # noqa: F401
                               _compute_bucket_assignment_by_size)
