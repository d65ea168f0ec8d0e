"""pytorchlite's build, with nothing but the standard library and a C compiler.

It compiles src/**/*.c (and src/cuda/*.cu with nvcc when it is found) into pytorchlite._C, and
it is the PEP 517 backend pip calls (pyproject.toml names it), so `pip install -e .` installs no
build dependencies first: the whole install is the compile.  `python setup.py build_ext
--inplace [-j N] [--force]` runs the same build from a checkout.

Switches (environment):
  PTL_CUDA=0|1        force the CPU-only build / require the CUDA build (default: CUDA when
                      nvcc is found)
  PTL_DEBUG=1         -O0 -g, PTL_DEBUG defined (internal asserts abort)
  PTL_SANITIZE=address,undefined   compile and link with -fsanitize=...
  CC                  the C compiler (default: the one Python was built with)

Objects live in build/<flavour>-<python>/, one directory per flavour (release or debug,
sanitized or not, with or without CUDA), so that switching flavours reuses nothing.  An object
is rebuilt when its source, any header or .def under src/, or this file is newer: a second
`pip install -e .` compiles nothing.  The compiles run in parallel on every core, nvcc's
alongside gcc's, the largest sources first, through ccache when it is installed.
"""
import base64
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from glob import glob

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
# The installed C API headers (pytorchlite/include/pytorchlite/ptl_api.h): they live in the
# package, so a wheel and an editable install both carry them, and _C compiles against them.
INCLUDE = os.path.join("pytorchlite", "include")
# The files a wheel or an sdist must not carry: build products of any flavour and caches.
_SKIP = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.hypothesis|\.benchmarks)(/|$)"
                   r"|\.(pyc|so|o)$")


class Config:
    """What this build compiles, with which flags, into which directory (module docstring)."""

    def __init__(self):
        self.debug = os.environ.get("PTL_DEBUG", "0") not in ("", "0")
        self.sanitize = os.environ.get("PTL_SANITIZE", "")
        self.nvcc = _find_nvcc()
        self.cuda_home = _find_cuda_home(self.nvcc) if self.nvcc else None
        self.ccache = shutil.which("ccache")
        flavour = "-".join(["debug" if self.debug else "release"] +
                           (["sanitize", re.sub(r"\W+", "-", self.sanitize)]
                            if self.sanitize else []) +
                           ([] if self.nvcc else ["cpu"]))
        self.build_dir = os.path.join(ROOT, "build",
                                      f"{flavour}-{sys.implementation.cache_tag}")
        # -fno-trapping-math: nothing here unmasks or reads the floating-point exception
        # flags, and without it gcc treats every compare as a possible trap and will not
        # turn `x > 0 ? a : b` into a vector blend (Note [Select formulas]); no result changes.
        # -fno-math-errno: nothing reads errno after a math function either, and without it
        # sqrt cannot become a vector instruction (it must call libm to set EDOM for x < 0)
        cflags = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden", "-fno-strict-aliasing",
                  "-fno-trapping-math", "-fno-math-errno"]
        # Python's CFLAGS carry -g: a release build drops it (a quarter of the compile time);
        # a debug build keeps it, for gdb; a sanitizer build keeps only the line tables (-g1:
        # a report's frames still name file, line and inlined callers; a third less compile
        # time than -g); -O1 is what the sanitizers' authors advise, and compiles in half the
        # time of -O3
        cflags += (["-O0", "-g", "-DPTL_DEBUG"] if self.debug else
                   ["-O1", "-g1"] if self.sanitize else ["-O3", "-g0"])
        # below -O3 a helper taking vector arguments may stay a function of its own, compiled
        # for the baseline ISA while its AVX2 callers pass the vectors in registers: gcc warns
        # (-Wpsabi) and the results are garbage (gemm_complex.c's tiny_out_*, found by the
        # sanitized build), so there that warning stops the build
        if self.debug or self.sanitize:
            cflags.append("-Werror=psabi")
        ldflags = ["-lpthread", "-ldl"]
        if self.sanitize:
            cflags += [f"-fsanitize={self.sanitize}", "-fno-omit-frame-pointer",
                       "-DPTL_SANITIZE"]
            ldflags.append(f"-fsanitize={self.sanitize}")
        if self.nvcc:
            cflags.append("-DPTL_WITH_CUDA")
            ldflags += [f"-L{os.path.join(self.cuda_home, 'lib64')}", "-lcudart_static",
                        "-ldl", "-lrt"]
        cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC"))
        if self.ccache and os.path.basename(cc[0]) != "ccache":
            cc.insert(0, self.ccache)
        python_flags = [f for f in shlex.split(sysconfig.get_config_var("CFLAGS") or "")
                        if f != "-Wstrict-prototypes"]
        self.compile_cmd = (cc + python_flags +
                            shlex.split(sysconfig.get_config_var("CCSHARED") or "") +
                            ["-I", sysconfig.get_paths()["include"], "-I", INCLUDE])
        self.cflags = cflags
        self.link_cmd = shlex.split(sysconfig.get_config_var("LDSHARED"))
        if os.environ.get("CC"):  # CC may name a wrapper too ("ccache gcc"): link with the compiler
            self.link_cmd[:1] = [w for w in shlex.split(os.environ["CC"])
                                 if os.path.basename(w) != "ccache"]
        self.ldflags = ldflags

    def nvcc_cmd(self, cu, obj):
        # warnings are errors, nvcc's own and the host compiler's, as -Wall -Wextra keep the C
        # sources clean; no exceptions and no guarded statics (the host stubs of template
        # kernels use them), as the extension links no C++ runtime.  Through ccache when it
        # is installed (it knows nvcc): a header change would otherwise recompile every .cu.
        return ([self.ccache] if self.ccache else []) + [
            self.nvcc, "-c", cu, "-o", obj, "-O3", "-std=c++17", "-Werror", "all-warnings",
            "-Xcompiler", "-fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror,-fno-exceptions,"
                          "-fno-threadsafe-statics",
            "-DPTL_WITH_CUDA",
            "-gencode", "arch=compute_80,code=sm_80",
            "-gencode", "arch=compute_90,code=sm_90",
            "-gencode", "arch=compute_90,code=compute_90"]


def _find_nvcc():
    want = os.environ.get("PTL_CUDA")
    if want == "0":
        return None
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
                nvcc = os.path.join(home, "bin", "nvcc")
                break
    if nvcc is None and want == "1":
        raise SystemExit("PTL_CUDA=1 but nvcc was not found (set CUDA_HOME or PATH)")
    return nvcc


def _find_cuda_home(nvcc):
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                 os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))):
        if home and os.path.exists(os.path.join(home, "lib64", "libcudart_static.a")):
            return home
    raise SystemExit(f"nvcc found at {nvcc} but no lib64/libcudart_static.a next to it; set "
                     "CUDA_HOME or build CPU-only with PTL_CUDA=0")


def _older_than(target, mtime):
    """True when target is missing or was written before mtime."""
    return not os.path.exists(target) or os.path.getmtime(target) < mtime


def _run(cmd, verbose):
    if verbose:
        print(" ".join(cmd), flush=True)
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.stdout:
        print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"error: command failed with exit status {done.returncode}: "
                         f"{' '.join(cmd)}")


def build(jobs=None, force=False, verbose=True):
    """Compiles what is stale, links when an object is newer than the library, and copies the
    library to pytorchlite/_C<EXT_SUFFIX>; returns that path."""
    cfg = Config()

    def rel(pattern):
        return sorted(os.path.relpath(p, ROOT) for p in glob(os.path.join(ROOT, pattern),
                                                             recursive=True))

    headers = rel("src/**/*.h") + rel("src/**/*.def") + rel(f"{INCLUDE}/**/*.h")
    newest_input = max(os.path.getmtime(os.path.join(ROOT, p))
                       for p in headers + [os.path.relpath(__file__, ROOT)])
    work, objects = [], []
    for src in rel("src/**/*.c"):
        obj = os.path.join(cfg.build_dir, src[:-2] + ".o")
        objects.append(obj)
        if force or _older_than(obj, max(os.path.getmtime(os.path.join(ROOT, src)),
                                         newest_input)):
            cmd = cfg.compile_cmd + ["-c", src, "-o", obj] + cfg.cflags
            work.append((os.path.getsize(os.path.join(ROOT, src)), obj, cmd))
    for cu in rel("src/cuda/*.cu") if cfg.nvcc else []:
        obj = os.path.join(cfg.build_dir, cu + ".o")
        objects.append(obj)
        if force or _older_than(obj, max(os.path.getmtime(os.path.join(ROOT, cu)),
                                         newest_input)):
            work.append((float("inf"), obj, cfg.nvcc_cmd(cu, obj)))
    work.sort(key=lambda item: -item[0])
    for _, obj, _ in work:
        os.makedirs(os.path.dirname(obj), exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        for future in [pool.submit(_run, cmd, verbose) for _, _, cmd in work]:
            future.result()

    linked = os.path.join(cfg.build_dir, "_C" + EXT_SUFFIX)
    if force or _older_than(linked, max(map(os.path.getmtime, objects))):
        _run(cfg.link_cmd + objects + ["-o", linked] + cfg.ldflags, verbose)
    target = os.path.join(ROOT, "pytorchlite", "_C" + EXT_SUFFIX)
    if _older_than(target, os.path.getmtime(linked)) or force:
        shutil.copy2(linked, target)
    if verbose:
        print(f"pytorchlite._C: compiled {len(work)} of {len(objects)} objects "
              f"into {os.path.relpath(cfg.build_dir, ROOT)}", flush=True)
    return target


# ---- metadata, from pyproject.toml's [project] table ----

def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11: get_requires_for_build_* asked pip for tomli
        import tomli as tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}"]
    if "license" in p:
        lines.append(f"License: {p['license'].get('text', '')}")
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {dep}" for dep in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {dep}; extra == \"{extra}\"" for dep in deps]
    readme = p.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _dist_info():
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info", f"{p['name']}-{p['version']}"


def _wheel_tag():
    interpreter = "cp" + sysconfig.get_config_var("py_version_nodot")
    abi = interpreter + ("d" if hasattr(sys, "gettotalrefcount") else "")
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{interpreter}-{abi}-{platform}"


def _write_wheel(wheel_directory, files):
    """files: (name in the wheel, bytes).  Adds the dist-info and RECORD; returns the name."""
    dist_info, stem = _dist_info()
    tag = _wheel_tag()
    files = list(files) + [
        (f"{dist_info}/METADATA", _metadata().encode()),
        (f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: pytorchlite build_backend\n"
                                f"Root-Is-Purelib: false\nTag: {tag}\n").encode()),
    ]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel_name = f"{stem}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            zf.writestr(name, data)
    return wheel_name


def _package_files():
    """The package as a wheel holds it: every file under pytorchlite/ but build products and
    caches, plus the library just built."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "pytorchlite")):
        dirnames[:] = sorted(d for d in dirnames if not _SKIP.search(d + "/"))
        for name in sorted(filenames):
            path = os.path.relpath(os.path.join(dirpath, name), ROOT)
            if not _SKIP.search(path):
                out.append(path)
    return out + [os.path.join("pytorchlite", "_C" + EXT_SUFFIX)]


def _read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# ---- the PEP 517 / PEP 660 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return ["tomli"] if sys.version_info < (3, 11) else []


get_requires_for_build_editable = get_requires_for_build_wheel
get_requires_for_build_sdist = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info, _ = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w",
              encoding="utf-8") as f:
        f.write(_metadata())
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build()
    return _write_wheel(wheel_directory, [(p, _read(p)) for p in _package_files()])


_EDITABLE_FINDER = '''"""Finds pytorchlite in its checkout, {root!r}, and nothing else there."""
import importlib.machinery
import sys


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "pytorchlite":
            return None
        return importlib.machinery.PathFinder.find_spec(name, [{root!r}])


sys.meta_path.append(_Finder)
'''


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The library is built in the checkout; the wheel holds a finder that imports
    pytorchlite from there (only pytorchlite: tests/ or tools/ stay off sys.path)."""
    build()
    finder = "_pytorchlite_editable_finder"
    return _write_wheel(wheel_directory, [
        (f"{finder}.py", _EDITABLE_FINDER.format(root=ROOT).encode()),
        ("pytorchlite_editable.pth", f"import {finder}\n".encode()),
    ])


def build_sdist(sdist_directory, config_settings=None):
    _, stem = _dist_info()
    name = f"{stem}.tar.gz"
    top = ["README.md", "pyproject.toml", "setup.py"]
    trees = ["src", "pytorchlite", "tools", "tests", "docs", "examples", "benchmarks"]
    paths = [p for p in top if os.path.exists(os.path.join(ROOT, p))]
    for tree in trees:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = sorted(d for d in dirnames if not _SKIP.search(d + "/"))
            paths += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in sorted(filenames)
                      if not _SKIP.search(os.path.join(dirpath, f))]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        info = tarfile.TarInfo(f"{stem}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for path in paths:
            tar.add(os.path.join(ROOT, path), arcname=f"{stem}/{path}", recursive=False)
    return name
