"""pytorchlite.nn: modules, parameters, functional, init, utils (torch.nn)."""
from . import attention, functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import (  # noqa: F401
    Buffer, Parameter, UninitializedBuffer, UninitializedParameter)
from .parallel import DataParallel  # noqa: F401
