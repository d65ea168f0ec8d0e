"""Which tests reach PyTorch or an optional extra: CI's second pass (`pytest --only-with-extras`).

CI runs the whole suite twice: first as a new user does, without PyTorch or the optional
tools, then with them installed.  A test that never touches any of them runs the same both
times, so the second pass keeps only those that may: a test is kept when its function, its
fixtures, its parameters, or any function or class of the tests folder that these name
(followed by name, to any depth) refer to a module of PyTorch or of an optional tool, to a
string that imports or names one (a script run in a child process, importorskip("torch")), or
carries the torch_ref mark or a skipif mark that holds here or whose reason names PyTorch or an
install.  A test file that names an optional tool, or skips itself whole on an import of one,
is kept whole.  The search follows names: a name the code's module defines is taken as that global, any other as
an attribute of the test's class or of any module of the tests folder that the module sees (an
attribute of that name anywhere there keeps the test)."""
import inspect
import os
import re
import types

import helpers

# The packages whose presence changes what a test does (pyproject's optional extras, and
# PyTorch, the second reference).
OPTIONAL_ROOTS = frozenset({"torch", "onnx", "onnxruntime", "tensorboard", "mpi4py", "tqdm",
                            "torchviz", "graphviz", "PIL", "nvidia",
                            "tabulate"})
_ROOTS = "(?:" + "|".join(sorted(OPTIONAL_ROOTS)) + ")"
# A string that imports one (a script for a child process) or names one's module
# (importorskip("torch"), import_module("torch.nn.modules.linear")).
_IMPORTS_OPTIONAL = re.compile(
    r"\b(?:import|from)\s+" + _ROOTS + r"\b|^" + _ROOTS + r"(?:\.\w+)*\.?$")
# A skipif mark whose reason says this is about an optional package (or that holds here).
_NAMES_EXTRA = re.compile(r"torch|installed|" + _ROOTS, re.IGNORECASE)
# A test file that names one of these, or skips itself whole on an import of one, is kept whole
# (the demo shows tqdm's bar when it is installed; distributed and nccl load mpi4py and NVIDIA's
# wheels).  MPI is a word of its own (mpirun, mpi4py, require_mpi), not the letters inside
# "compiled"; distributed the package (pytorchlite.distributed, `import distributed`,
# "[distributed]"), not prose ("normally distributed"), is_distributed or a path in a comment.
_FILE_WORDS = re.compile(r"^\S.*importorskip\(\s*[\"']" + _ROOTS + r"|onnx|tensorboard|"
                         r"(?<![a-z])mpi|nccl|tqdm|torchviz|graphviz|\bPIL\b|demo|"
                         r"(?<![\w /])distributed\b|import distributed\b", re.MULTILINE)


def _is_optional_module(value):
    return (isinstance(value, types.ModuleType)
            and value.__name__.partition(".")[0] in OPTIONAL_ROOTS)


# _in_tests' answers by id, each with its object (held, so that the id stays its own): the
# searches of a whole suite ask about the same functions, classes and modules millions of
# times, and inspect.getsourcefile was most of the second pass's collection time.
_in_tests_known = {}


def _in_tests(obj):
    known = _in_tests_known.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    path = getattr(getattr(obj, "__code__", None), "co_filename", None)
    if path is None:
        try:
            path = inspect.getsourcefile(obj)
        except TypeError:
            path = None
    inside = path is not None and os.path.abspath(path).startswith(helpers.TESTS + os.sep)
    _in_tests_known[id(obj)] = (obj, inside)
    return inside


class _Search:
    """A depth-first walk from a test's callables through the names their code uses."""

    def __init__(self):
        self.seen = set()

    def reaches(self, value, owners=()):
        """True if value is, holds, or (through the names of its code) reaches an optional
        module.  owners: the objects (a class, modules of the tests folder) whose attributes
        the code's names may also mean."""
        if id(value) in self.seen:
            return False
        self.seen.add(id(value))
        if _is_optional_module(value):
            return True
        if isinstance(value, str):
            return bool(_IMPORTS_OPTIONAL.search(value))
        if isinstance(value, (list, tuple, set, frozenset)):
            return any(self.reaches(v, owners) for v in value)
        if isinstance(value, dict):
            return any(self.reaches(v, owners) for v in value.values())
        if isinstance(value, (staticmethod, classmethod)):
            return self.reaches(value.__func__, owners)
        if hasattr(value, "func") and hasattr(value, "args"):  # functools.partial
            return self.reaches(value.func, owners) or self.reaches(value.args, owners)
        if isinstance(value, type):
            return _in_tests(value) and any(self.reaches(v, (value,))
                                            for v in vars(value).values())
        if isinstance(value, (types.MethodType,)):
            return self.reaches(value.__func__, owners)
        if isinstance(value, types.FunctionType) and _in_tests(value):
            modules = tuple(v for v in value.__globals__.values()
                            if isinstance(v, types.ModuleType) and _in_tests(v))
            return self._code(value.__code__, value.__globals__, tuple(owners) + modules)
        return False

    def _code(self, code, globs, owners):
        """owners: as reaches' and the modules of the tests folder that globs holds (a nested
        function's or lambda's code shares its parent's)."""
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if self._code(const, globs, owners):
                    return True
            elif isinstance(const, str) and _IMPORTS_OPTIONAL.search(const):
                return True
        for name in code.co_names:
            if name in globs:
                if self.reaches(globs[name], owners):
                    return True
                continue
            for owner in owners:
                attr = inspect.getattr_static(owner, name, None)
                if attr is not None and self.reaches(attr, owners):
                    return True
        return False


_file_kept = {}


def uses_extras(item):
    """Whether the collected test item may reach PyTorch or an optional tool."""
    if item.get_closest_marker("torch_ref") is not None:
        return True
    for mark in item.iter_markers("skipif"):
        if (any(condition is True for condition in mark.args)
                or _NAMES_EXTRA.search(str(mark.kwargs.get("reason", "")))):
            return True
    path = str(item.fspath)
    if path not in _file_kept:
        with open(path, encoding="utf-8") as f:
            _file_kept[path] = bool(_FILE_WORDS.search(f.read()))
    if _file_kept[path]:
        return True
    function = getattr(item, "function", None)
    if function is None:
        return True
    search = _Search()
    owners = (item.cls,) if getattr(item, "cls", None) is not None else ()
    roots = [function]
    for defs in getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values():
        roots.extend(d.func for d in defs)
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        roots.extend(callspec.params.values())
    return any(search.reaches(r, owners) for r in roots)
