"""as_torch(): lets a library that does `import torch` run on pytorchlite.

Tools such as torchviz import `torch` and `torch.autograd` themselves, so `import pytorchlite
as torch` in the user's script does not reach them.  as_torch() makes the name `torch` (and
every `torch.<sub>` module) resolve to pytorchlite's module of the same path, in this process:
the modules are the same objects, never a second copy.  It refuses when a real PyTorch is
already imported, since the two cannot share the name."""
import importlib
import importlib.abc
import importlib.util
import sys

_PREFIX = "torch."


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves torch.<path> to the already loaded or importable pytorchlite.<path>."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(_PREFIX):
            return None
        try:
            module = importlib.import_module("pytorchlite." + name[len(_PREFIX):])
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(name, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


_finder = _TorchAliasFinder()


def as_torch():
    """Makes `import torch` (and `import torch.<sub>`) give pytorchlite's modules in this
    process, for libraries written against PyTorch; returns the pytorchlite module.  Call it
    before importing such a library."""
    import pytorchlite
    current = sys.modules.get("torch")
    if current is not None and current is not pytorchlite:
        raise RuntimeError("as_torch(): a real PyTorch is already imported in this process as "
                           "`torch`; pytorchlite cannot take its name")
    sys.modules["torch"] = pytorchlite
    for name, module in list(sys.modules.items()):
        if name.startswith("pytorchlite."):
            sys.modules.setdefault(_PREFIX + name[len("pytorchlite."):], module)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return pytorchlite
