"""pytorchlite.jit (torch.jit): trace a function or module, or script it from its source with
its control flow, into a typed graph IR that prints like TorchScript, optimise it (jit.passes,
freeze), save it without the model's code and load it anywhere (save/load,
`python -m pytorchlite.jit`)."""
from . import frontend, passes
from ._annotations import (Attribute, Final, annotate, export, fork, ignore, interface,
                           is_scripting, is_tracing, unused, wait)
from ._builtins import Error
from ._freeze import freeze, optimize_for_inference
from ._script import RecursiveScriptModule, ScriptModule, script
from ._serialization import load, save
from ._trace import (CacheInfo, ScriptFunction, TracedModule, TracerWarning, TracingCheckError,
                     trace)

__all__ = ["Error", "trace", "save", "load", "freeze", "optimize_for_inference", "passes",
           "TracerWarning", "TracingCheckError", "ScriptFunction", "TracedModule", "CacheInfo",
           "script", "ScriptModule", "RecursiveScriptModule", "frontend", "Attribute", "Final",
           "annotate", "export", "fork", "ignore", "interface", "is_scripting", "is_tracing",
           "unused", "wait"]
