"""torch._dynamo: the names programs reach for around torch.compile (reset, list_backends,
config, exc, OptimizedModule).  pytorchlite captures no bytecode: Note [torch.compile runs
the code as written] in pytorchlite/compiler/__init__.py."""
from . import config, eval_frame, exc
from .eval_frame import OptimizedModule


def reset():
    """Forgets every compiled code cache: there is none to forget here."""


def list_backends(exclude_tags=("debug", "experimental")):
    from ..compiler import list_backends as _list_backends
    return _list_backends(exclude_tags)


__all__ = ["reset", "list_backends", "config", "exc", "eval_frame", "OptimizedModule"]
