"""torch.hub: pretrained weights from a URL into a local cache, and models from a hubconf.py
(in a local directory, or in a GitHub repository downloaded as an archive).

The cache is get_dir(): set_dir's path, else $TORCH_HOME/hub, $TORCH_HOME defaulting to
$XDG_CACHE_HOME/torch or ~/.cache/torch (PyTorch's layout, so a cache PyTorch filled serves
pytorchlite too).  Weights go to <hub>/checkpoints/<the URL's file name>; a name with a
"-<hex>." part carries the first hex digits of the file's SHA-256, checked with
check_hash=True.  A hubconf.py names its entry points as module-level callables and may list
`dependencies`, modules that must import.  Differences: trust_repo never asks (the
repository's hubconf.py runs, as PyTorch runs a trusted one) and skip_validation has nothing
to skip (no GitHub API call checks the ref before the archive download).  list and help take
source= as load does."""
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

_hub_dir = None
_HASH = re.compile(r"-([a-f0-9]*)\.")
_CHUNK = 1 << 16


def get_dir():
    """The hub cache directory (module docstring)."""
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.path.expanduser(os.getenv(
        "TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(torch_home, "hub")


def set_dir(d):
    """Makes d the hub cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """url's bytes written to dst (through a temporary file beside it, so an interrupted
    download leaves no partial dst); with hash_prefix, the SHA-256 must start with it."""
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    digest = hashlib.sha256()
    with urllib.request.urlopen(urllib.request.Request(url, headers={
            "User-Agent": "pytorchlite.hub"})) as response, \
            tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        total = response.headers.get("Content-Length") if hasattr(response, "headers") else None
        done = 0
        try:
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                tmp.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress and total:
                    sys.stderr.write(f"\r{100 * done // int(total):3d}%")
            if progress and total:
                sys.stderr.write("\n")
            tmp.close()
            if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest.hexdigest()}")')
            shutil.move(tmp.name, dst)
        finally:
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """The object saved at url (a state_dict, usually), downloaded once into model_dir
    (default <hub>/checkpoints) and loaded from there with torch.load."""
    from .serialization import load
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        found = _HASH.search(name) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress=progress)
    return load(cached, map_location=map_location, weights_only=weights_only)


# ---- models from a hubconf.py ----

def _parse_repo(github):
    """'owner/name[:ref]' -> (owner, name, ref); ref defaults to 'main'."""
    repo, _, ref = github.partition(":")
    if repo.count("/") != 1:
        raise ValueError(f'Invalid input: repo_info should be in the form of '
                         f'"repo_owner/repo_name[:ref]", but got {github}')
    owner, name = repo.split("/")
    return owner, name, ref or "main"


def _archive_url(owner, name, ref):
    return f"https://github.com/{owner}/{name}/zipball/{ref}"


def _github_dir(github, force_reload, verbose):
    """The local checkout of a GitHub repository's archive under the hub directory."""
    owner, name, ref = _parse_repo(github)
    hub = get_dir()
    os.makedirs(hub, exist_ok=True)
    folder = os.path.join(hub, "_".join((owner, name, ref.replace("/", "_"))))
    if os.path.exists(folder) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {folder}\n")
        return folder
    archive = folder + ".zip"
    download_url_to_file(_archive_url(owner, name, ref), archive, progress=False)
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(archive) as z:
        top = z.namelist()[0].split("/")[0]
        z.extractall(hub)
    os.remove(archive)
    shutil.move(os.path.join(hub, top), folder)
    return folder


def _hubconf(folder):
    path = os.path.join(folder, "hubconf.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"Cannot find hubconf.py in {folder}")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    missing = [d for d in getattr(module, "dependencies", [])
               if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def _folder(repo_or_dir, source, force_reload, verbose):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    return _github_dir(repo_or_dir, force_reload, verbose)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True,
         source="github"):  # noqa: A001 - PyTorch's name
    """The entry points of a repository's (or, with source="local", a directory's)
    hubconf.py."""
    module = _hubconf(_folder(github, source, force_reload, verbose))
    return [name for name in dir(module) if callable(getattr(module, name)) and
            not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check",
         source="github"):  # noqa: A001 - PyTorch's name
    """The docstring of an entry point."""
    return _entry(_hubconf(_folder(github, source, force_reload, False)), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """The model an entry point of hubconf.py builds: entry(*args, **kwargs)."""
    module = _hubconf(_folder(repo_or_dir, source, force_reload, verbose))
    return _entry(module, model)(*args, **kwargs)
