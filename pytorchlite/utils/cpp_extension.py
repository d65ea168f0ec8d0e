"""pytorchlite.utils.cpp_extension (torch/utils/cpp_extension.py): compile C, C++ and CUDA
extensions against pytorchlite's C API (include/pytorchlite/ptl_api.h) at run time with
`load` / `load_inline`, or from a setup.py with `CppExtension` / `CUDAExtension` and
`BuildExtension`.

An extension registers operators with PTL_LIBRARY blocks (run when the library loads) and, as
a Python module, may expose plain C functions (load_inline's `functions`).  Every module gets a
generated init (PyInit_<name>) unless a source defines one: it raises the registration error
of the extension's blocks, such as an ABI version mismatch, as an exception.

Builds are cached in PTL_EXTENSIONS_DIR (default ~/.cache/pytorchlite_extensions/<py>/<name>),
one directory per hash of the sources, flags, compilers, architecture and C API version, which
appears only once its build succeeded: a second load compiles nothing and a failed build
leaves nothing behind.  A lock file (flock, with the holder's pid) keeps two processes from
building the same extension at once.  Sources compile with ninja when it is installed, else in
parallel threads.
"""
import contextlib
import ctypes
import errno
import fcntl
import hashlib
import importlib.util
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytorchlite

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HEADER = os.path.join(_PACKAGE, "include", "pytorchlite", "ptl_api.h")
_EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
_C_EXTENSIONS = (".c",)
_CXX_EXTENSIONS = (".cpp", ".cc", ".cxx", ".C")
_CUDA_EXTENSIONS = (".cu",)
LOCK_TIMEOUT = 600.0   # seconds a build waits for another process's build of the same name


def _api_version():
    """(major, minor) of the C API the installed header declares."""
    with open(_HEADER, encoding="utf-8") as f:
        text = f.read()
    found = dict(re.findall(r"#define PTL_API_VERSION_(MAJOR|MINOR) (\d+)", text))
    return int(found["MAJOR"]), int(found["MINOR"])


def _cuda_home():
    """CUDA_HOME, else /usr/local/cuda, else the directory above nvcc's; None without CUDA."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isdir(os.path.join(home, "include")):
            return home
    nvcc = shutil.which("nvcc")
    return os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) if nvcc else None


CUDA_HOME = _cuda_home()


def include_paths(cuda=False):
    """The directories an extension's sources include from: pytorchlite's headers and
    Python's (and CUDA's when cuda)."""
    paths = [os.path.join(_PACKAGE, "include"), sysconfig.get_paths()["include"]]
    if cuda:
        if CUDA_HOME is None:
            raise RuntimeError("CUDA_HOME is not set and nvcc was not found")
        paths.append(os.path.join(CUDA_HOME, "include"))
    return paths


def library_paths(cuda=False):
    """The directories an extension links from.  The C API needs none (an extension binds
    to the _C already loaded, Note [C ABI]); CUDA's runtime lives in lib64."""
    if not cuda:
        return []
    if CUDA_HOME is None:
        raise RuntimeError("CUDA_HOME is not set and nvcc was not found")
    return [os.path.join(CUDA_HOME, "lib64")]


def _cache_root():
    root = os.environ.get("PTL_EXTENSIONS_DIR")
    if root is None:
        root = os.path.join(os.path.expanduser("~"), ".cache", "pytorchlite_extensions")
    return os.path.join(root, f"py{sys.version_info[0]}{sys.version_info[1]}")


def _compilers():
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "gcc")
    cxx = shlex.split(os.environ.get("CXX") or "g++")
    nvcc = shutil.which("nvcc") or (os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME
                                    else "nvcc")
    return cc, cxx, nvcc


def _tool_id(cmd):
    """The compiler as the cache key sees it: its resolved path and modification time (a
    cheaper stand-in for running `--version` on every load)."""
    path = shutil.which(cmd[0]) or cmd[0]
    try:
        return f"{os.path.realpath(path)}@{os.path.getmtime(path)}"
    except OSError:
        return path


# ---- generated module code ----

_C_TYPES = {
    "int64_t": ("long long", "PyLong_AsLongLong", "PyLong_FromLongLong"),
    "long": ("long long", "PyLong_AsLongLong", "PyLong_FromLongLong"),
    "long long": ("long long", "PyLong_AsLongLong", "PyLong_FromLongLong"),
    "int": ("long long", "PyLong_AsLongLong", "PyLong_FromLongLong"),
    "int32_t": ("long long", "PyLong_AsLongLong", "PyLong_FromLongLong"),
    "double": ("double", "PyFloat_AsDouble", "PyFloat_FromDouble"),
    "float": ("double", "PyFloat_AsDouble", "PyFloat_FromDouble"),
    "bool": ("int", "PyObject_IsTrue", "PyBool_FromLong"),
    "_Bool": ("int", "PyObject_IsTrue", "PyBool_FromLong"),
}


def _ctype(text, fn, what):
    """'tensor', 'void' or a key of _C_TYPES for a declared type."""
    t = " ".join(text.replace("const ", " ").replace("*", " * ").split())
    if t in ("PtlApiTensor *", "struct PtlApiTensor *"):
        return "tensor"
    if t == "void" and what == "return":
        return "void"
    if t in _C_TYPES:
        return t
    raise ValueError(f"load_inline: function '{fn}' has {what} type '{text.strip()}'; the "
                     f"bindings support PtlApiTensor *, {', '.join(sorted(_C_TYPES))} and "
                     "a void return")


_TYPE_WORDS = {"long", "int", "double", "float", "bool", "_Bool", "int64_t", "int32_t", "void"}


def _signature(source, fn):
    """(return type, [parameter types]) of C function fn as the source declares it."""
    m = re.search(r"(?:^|[;{}])\s*([A-Za-z_][\w\s*]*?)\s*\b" + re.escape(fn)
                  + r"\s*\(([^)]*)\)\s*[{;]", source, re.M)
    if m is None:
        raise ValueError(f"load_inline: no declaration of function '{fn}' in cpp_sources")
    ret = re.sub(r"\b(static|extern|inline)\b", " ", m.group(1))
    types = []
    for p in m.group(2).split(","):
        toks = p.replace("*", " * ").split()
        if len(toks) > 1 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and \
                toks[-1] not in _TYPE_WORDS:
            toks = toks[:-1]   # the parameter's name
        if toks and toks != ["void"]:
            types.append(_ctype(" ".join(toks), fn, "parameter"))
    return _ctype(ret, fn, "return"), types


def _binding(fn, doc, ret, params):
    lines = [f"static PyObject *\nptl_bind_{fn}(PyObject *self, PyObject *const *args, "
             "Py_ssize_t nargs)\n{",
             "    (void)self;",
             f"    if (nargs != {len(params)}) {{",
             f"        PyErr_Format(PyExc_TypeError, \"{fn}() takes {len(params)} positional "
             "arguments but %zd were given\", nargs);",
             "        return NULL;", "    }"]
    call = []
    for i, t in enumerate(params):
        if t == "tensor":
            lines += [f"    PtlApiTensor *a{i} = "
                      f"ptl_api_python_to_tensor(args[{i}], {i}, \"{fn}\");",
                      f"    if (a{i} == NULL) {{", "        return NULL;", "    }"]
        else:
            ctype, conv, _ = _C_TYPES[t]
            lines += [f"    {ctype} a{i} = {conv}(args[{i}]);",
                      "    if (PyErr_Occurred()) {", "        return NULL;", "    }"]
        call.append(f"a{i}")
    args = ", ".join(call)
    # the function failed (error slot set) or a warning it issued became an exception
    failed = "ptl_api_error_kind() != PTL_API_ERROR_NONE || ptl_api_python_warn() < 0"
    if ret == "tensor":
        lines += [f"    PtlApiTensor *r = {fn}({args});",
                  f"    if (r != NULL && ({failed})) {{",
                  "        ptl_api_release(r);", "        r = NULL;", "    }",
                  "    return (PyObject *)ptl_api_python_from_tensor(r);", "}"]
    elif ret == "void":
        lines += [f"    {fn}({args});", f"    if ({failed}) {{",
                  "        return (PyObject *)ptl_api_python_raise();", "    }",
                  "    Py_RETURN_NONE;", "}"]
    else:
        ctype, _, back = _C_TYPES[ret]
        lines += [f"    {ctype} r = {fn}({args});", f"    if ({failed}) {{",
                  "        return (PyObject *)ptl_api_python_raise();", "    }",
                  f"    return {back}(r);", "}"]
    entry = (f"    {{\"{fn}\", (PyCFunction)(void (*)(void))ptl_bind_{fn}, METH_FASTCALL, "
             f"{_c_string(doc)}}},")
    return "\n".join(lines) + "\n", entry


def _c_string(text):
    if text is None:
        return "NULL"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_MODULE_PRELUDE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

#include <pytorchlite/ptl_api.h>
"""


def _module_source(name, source="", functions=None):
    """The module half of an extension: bindings of `functions` (declared in source) and
    PyInit_<name>, which raises the extension's registration error (Note [C ABI])."""
    if isinstance(functions, str):
        functions = [functions]
    if functions is None:
        functions = {}
    elif not isinstance(functions, dict):
        functions = {f: None for f in functions}
    bodies, entries = [], []
    for fn, doc in functions.items():
        ret, params = _signature(source, fn)
        body, entry = _binding(fn, doc, ret, params)
        bodies.append(body)
        entries.append(entry)
    major, minor = _api_version()
    return "\n".join(bodies) + f"""
static PyMethodDef ptl_extension_methods[] = {{
{chr(10).join(entries)}
    {{NULL, NULL, 0, NULL}},
}};

static struct PyModuleDef ptl_extension_module = {{
    PyModuleDef_HEAD_INIT, "{name}", NULL, -1, ptl_extension_methods, NULL, NULL, NULL, NULL,
}};

PyMODINIT_FUNC
PyInit_{name}(void)
{{
    if (ptl_api_python_check_load() < 0) {{
        return NULL;
    }}
    PyObject *m = PyModule_Create(&ptl_extension_module);
    if (m != NULL && PyModule_AddStringConstant(m, "__ptl_api_version__", "{major}.{minor}") < 0) {{
        Py_CLEAR(m);
    }}
    return m;
}}
"""


def _defines_init(name, texts):
    pattern = re.compile(r"\bPyInit_" + re.escape(name) + r"\b|\bPYBIND11_MODULE\b")
    return any(pattern.search(t) for t in texts)


# ---- the build ----

def _flags(name, extra_cflags, extra_cuda_cflags, extra_include_paths, with_cuda):
    incs = [f"-I{p}" for p in include_paths(cuda=with_cuda) + list(extra_include_paths or [])]
    common = ["-fPIC", "-O2", f"-DPTL_EXTENSION_NAME={name}"] + incs
    cflags = common + list(extra_cflags or [])
    cxxflags = common + ["-std=c++17"] + list(extra_cflags or [])
    cudaflags = (["-O2", "-std=c++17", "-Xcompiler", "-fPIC", f"-DPTL_EXTENSION_NAME={name}"]
                 + incs + list(extra_cuda_cflags or []))
    return cflags, cxxflags, cudaflags


def _link_flags(extra_ldflags, with_cuda):
    # -z now: a missing symbol fails the load with its name instead of aborting at a call
    flags = ["-shared", "-Wl,-z,now"]
    if with_cuda:
        flags += [f"-L{p}" for p in library_paths(cuda=True)] + ["-lcudart"]
    return flags + list(extra_ldflags or [])


def _object_rules(sources, build_dir, cc, cxx, nvcc, flags):
    """[(object, command)] for each source."""
    cflags, cxxflags, cudaflags = flags
    rules = []
    for i, src in enumerate(sources):
        base = os.path.splitext(os.path.basename(src))[0]
        obj = os.path.join(build_dir, f"{i}_{base}.o")
        if src.endswith(_CUDA_EXTENSIONS):
            cmd = [nvcc, "-c", src, "-o", obj] + cudaflags
        elif src.endswith(_CXX_EXTENSIONS):
            cmd = cxx + ["-c", src, "-o", obj] + cxxflags
        elif src.endswith(_C_EXTENSIONS):
            cmd = cc + ["-c", src, "-o", obj] + cflags
        else:
            raise ValueError(f"don't know how to compile {src} (a C, C++ or CUDA source)")
        rules.append((obj, cmd))
    return rules


def _run_ninja(build_dir, rules, link, verbose):
    quote = lambda args: " ".join(shlex.quote(a).replace("$", "$$") for a in args)  # noqa: E731
    lines = ["ninja_required_version = 1.3", "rule run", "  command = $cmd", ""]
    for obj, cmd in rules:
        lines += [f"build {obj.replace(':', '$:')}: run", f"  cmd = {quote(cmd)}"]
    out = link[link.index("-o") + 1]
    objs = " ".join(o.replace(":", "$:") for o, _ in rules)
    lines += [f"build {out.replace(':', '$:')}: run {objs}", f"  cmd = {quote(link)}", ""]
    with open(os.path.join(build_dir, "build.ninja"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    cmd = ["ninja", "-C", build_dir] + (["-v"] if verbose else [])
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run_threads(build_dir, rules, link, verbose):
    def run(cmd):
        if verbose:
            print(" ".join(cmd), flush=True)
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=build_dir)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        done = list(pool.map(run, [cmd for _, cmd in rules]))
    failed = [d for d in done if d.returncode != 0]
    if failed:
        failed[0].stdout = "".join(d.stdout for d in done)
        return failed[0]
    result = run(link)
    result.stdout = "".join(d.stdout for d in done) + result.stdout
    return result


def _compile(name, sources, build_dir, flags, extra_ldflags, with_cuda, verbose):
    """Compiles and links sources into build_dir/<name><EXT_SUFFIX>; RuntimeError with the
    compiler's output when that fails."""
    cc, cxx, nvcc = _compilers()
    rules = _object_rules(sources, build_dir, cc, cxx, nvcc, flags)
    uses_cxx = any(s.endswith(_CXX_EXTENSIONS + _CUDA_EXTENSIONS) for s in sources)
    target = os.path.join(build_dir, name + _EXT_SUFFIX)
    link = ((cxx if uses_cxx else cc) + [o for o, _ in rules] + ["-o", target]
            + _link_flags(extra_ldflags, with_cuda))
    if shutil.which("ninja"):
        result = _run_ninja(build_dir, rules, link, verbose)
    else:
        result = _run_threads(build_dir, rules, link, verbose)
    if verbose and result.stdout:
        print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        raise RuntimeError(f"Error building extension '{name}':\n{result.stdout}")
    return target


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


@contextlib.contextmanager
def _build_lock(directory, name, verbose):
    """Holds directory/lock while the body runs.  The lock is an flock, which the kernel
    drops when its holder dies, so a build killed half-way never blocks the next; the file
    holds the holder's pid, which names who we wait for and tells a killed holder's leftover
    from a live one.  Waits at most LOCK_TIMEOUT seconds."""
    path = os.path.join(directory, "lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"timed out after {LOCK_TIMEOUT:.0f} s waiting for the "
                                       f"build of extension '{name}' by process "
                                       f"{_lock_holder(fd)} (lock file {path})") from None
                time.sleep(0.05)
        holder = _lock_holder(fd)
        if holder and holder != os.getpid() and not _pid_alive(holder) and verbose:
            print(f"Clearing the lock left by process {holder}, which is gone: {path}",
                  flush=True)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _lock_holder(fd):
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def _build_key(name, sources, texts, flags, extra_ldflags, with_cuda, is_python_module):
    h = hashlib.sha256()
    cc, cxx, nvcc = _compilers()
    with open(_HEADER, "rb") as f:
        header = f.read()
    parts = [name, repr(_api_version()), platform.machine(), sys.implementation.cache_tag,
             repr(flags), repr(extra_ldflags), repr(with_cuda), repr(is_python_module),
             _tool_id(cc), _tool_id(cxx), _tool_id([nvcc]) if with_cuda else "", ]
    for p in parts:
        h.update(p.encode() + b"\0")
    h.update(header)
    for src, text in zip(sources, texts):
        h.update(src.encode() + b"\0" + text + b"\0")
    return h.hexdigest()[:20]


def _load_built(name, path, is_python_module):
    if not is_python_module:
        ctypes.CDLL(path)
        pytorchlite._C._extension_check_load()
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pytorchlite._C._extension_check_load()
    return module


def _jit_compile(name, sources, generated, extra_cflags, extra_cuda_cflags, extra_ldflags,
                 extra_include_paths, build_directory, verbose, with_cuda, is_python_module):
    """generated: {file name: text} written into the build directory and compiled with
    sources."""
    sources = [os.path.abspath(s) for s in sources]
    texts = []
    for s in sources:
        with open(s, "rb") as f:
            texts.append(f.read())
    gen_names = sorted(generated)
    texts += [generated[g].encode() for g in gen_names]
    all_names = sources + gen_names
    if with_cuda is None:
        with_cuda = any(s.endswith(_CUDA_EXTENSIONS) for s in all_names)
    flags = _flags(name, extra_cflags, extra_cuda_cflags, extra_include_paths, with_cuda)
    key = _build_key(name, all_names, texts, flags, extra_ldflags, with_cuda, is_python_module)
    root = build_directory or os.path.join(_cache_root(), name)
    final_dir = os.path.join(root, key)
    target = os.path.join(final_dir, name + _EXT_SUFFIX)
    if not os.path.exists(target):
        os.makedirs(root, exist_ok=True)
        with _build_lock(root, name, verbose):
            if not os.path.exists(target):
                if verbose:
                    print(f"Building extension module {name}...", flush=True)
                tmp = tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=root)
                try:
                    # generated sources are named relative to the build directory, where
                    # the compiles run: __FILE__ and the compiler's messages say "main.c"
                    paths = sources + gen_names
                    for g in gen_names:
                        with open(os.path.join(tmp, g), "w", encoding="utf-8") as f:
                            f.write(generated[g])
                    _compile(name, paths, tmp, flags, extra_ldflags, with_cuda, verbose)
                    os.replace(tmp, final_dir)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
    elif verbose:
        print(f"No modifications detected for re-loaded extension module {name}, skipping "
              "build step...", flush=True)
    if verbose:
        print(f"Loading extension module {name}...", flush=True)
    return _load_built(name, target, is_python_module)


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
         is_python_module=True):
    """Compiles sources (C, C++, CUDA) into an extension, cached, and loads it: as a Python
    module named `name` when is_python_module (returned), else into the process as a plain
    library (its PTL_LIBRARY blocks register; returns None)."""
    if isinstance(sources, str):
        sources = [sources]
    generated = {}
    if is_python_module:
        texts = []
        for s in sources:
            with open(s, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
        if not _defines_init(name, texts):
            generated[f"{name}_module.c"] = _MODULE_PRELUDE + _module_source(name)
    return _jit_compile(name, sources, generated, extra_cflags, extra_cuda_cflags,
                        extra_ldflags, extra_include_paths, build_directory, verbose, with_cuda,
                        is_python_module)


def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                language="c"):
    """load() from source strings.  cpp_sources (a string or a list) are one translation
    unit, C unless language="c++"; cuda_sources one .cu file (declare the functions the C
    side calls `extern "C"`).  functions: names (or {name: docstring}) of C functions in
    cpp_sources taking and returning PtlApiTensor * and numbers, exposed on the module."""
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if isinstance(cuda_sources, str):
        cuda_sources = [cuda_sources]
    if language not in ("c", "c++"):
        raise ValueError(f"language must be 'c' or 'c++', not {language!r}")
    source = "\n".join(cpp_sources)
    main = _MODULE_PRELUDE + "\n" + source + "\n"
    if is_python_module:
        main += _module_source(name, source, functions)
    generated = {"main.c" if language == "c" else "main.cpp": main}
    if cuda_sources:
        generated["cuda.cu"] = "#include <pytorchlite/ptl_api.h>\n" + "\n".join(cuda_sources)
    return _jit_compile(name, [], generated, extra_cflags, extra_cuda_cflags, extra_ldflags,
                        extra_include_paths, build_directory, verbose, with_cuda,
                        is_python_module)


# ---- setup.py ----

def CppExtension(name, sources, *args, **kwargs):
    """A setuptools.Extension for C/C++ sources, with pytorchlite's include path."""
    from setuptools import Extension
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths()
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + library_paths()
    return Extension(name, sources, *args, **kwargs)


def CUDAExtension(name, sources, *args, **kwargs):
    """CppExtension plus CUDA's headers and runtime; .cu sources compile with nvcc."""
    from setuptools import Extension
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths(cuda=True)
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + library_paths(cuda=True)
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["cudart"]
    kwargs.setdefault("language", "c++")
    return Extension(name, sources, *args, **kwargs)


_BUILD_EXTENSION = None


def _build_extension_class():
    global _BUILD_EXTENSION
    if _BUILD_EXTENSION is not None:
        return _BUILD_EXTENSION
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):
        """setuptools' build_ext for CppExtension / CUDAExtension: adds each module's init
        (unless a source defines PyInit_<name>), compiles C as C, C++ with -std=c++17 and
        .cu with nvcc, and links with -z now.  extra_compile_args may be a list or
        {"cxx": [...], "nvcc": [...]}, as in PyTorch."""

        def build_extensions(self):
            for ext in self.extensions:
                self._add_module_init(ext)
                ext.extra_link_args = list(ext.extra_link_args or []) + ["-Wl,-z,now"]
            self.compiler.src_extensions += list(_CUDA_EXTENSIONS)
            original = self.compiler._compile

            def compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts):
                args = extra_postargs
                if isinstance(args, dict):
                    args = args.get("nvcc" if src.endswith(_CUDA_EXTENSIONS) else "cxx", [])
                args = list(args or [])
                if src.endswith(_CUDA_EXTENSIONS):
                    _, _, nvcc = _compilers()
                    cmd = ([nvcc, "-c", src, "-o", obj, "-Xcompiler", "-fPIC", "-std=c++17"]
                           + pp_opts + args)
                    self.spawn(cmd)
                    return
                if src.endswith(_CXX_EXTENSIONS):
                    args = ["-std=c++17"] + args
                original(obj, src, ext, cc_args, args, pp_opts)

            self.compiler._compile = compile_one
            super().build_extensions()

        def _add_module_init(self, ext):
            base_name = ext.name.rsplit(".", 1)[-1]
            texts = []
            for s in ext.sources:
                with open(s, encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
            if _defines_init(base_name, texts):
                return
            os.makedirs(self.build_temp, exist_ok=True)
            path = os.path.join(self.build_temp, f"{base_name}_module.c")
            with open(path, "w", encoding="utf-8") as f:
                f.write(_MODULE_PRELUDE + _module_source(base_name))
            ext.sources = list(ext.sources) + [path]

        @classmethod
        def with_options(cls, **options):
            """A BuildExtension whose constructor gets options, as PyTorch's."""
            class WithOptions(cls):
                def __init__(self, *args, **kwargs):
                    kwargs.update(options)
                    super().__init__(*args, **kwargs)

            return WithOptions

    _BUILD_EXTENSION = BuildExtension
    return BuildExtension


def __getattr__(attr):
    # BuildExtension subclasses setuptools' build_ext: made on first use, so that importing
    # this module does not need setuptools (only a user's setup.py does)
    if attr == "BuildExtension":
        return _build_extension_class()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
