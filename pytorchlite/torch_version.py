"""torch.torch_version: TorchVersion, the version string that compares as a version.

`torch.__version__ >= "2.0"`, `>= (2, 0)` and `>= packaging.version.Version("2.0")` compare
release numbers, not characters (as a plain str "10.0" < "9.0" would).  A string that is not a
PEP 440 version ("parrot") falls back to str comparison, as PyTorch's does.  The parser is
the subset of PEP 440 versions take in practice (release, a/b/rc, .post, .dev, +local), so the
package needs no third-party library; see docs/decisions.md for the version we claim."""
import re
from collections.abc import Iterable

__all__ = ["TorchVersion", "internal_version"]

# what pytorchlite itself is at (the distribution's version in pyproject.toml)
internal_version = "0.1.0"
# the PyTorch release whose API pytorchlite follows and its tests compare against
API_VERSION = "2.13.0"

_PEP440 = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c|pre|preview)[-_.]?(\d*))?"
                     r"(?:[-_.]?post[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?"
                     r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc",
        "preview": "rc"}
_INF = float("inf")


class _InvalidVersion(ValueError):
    pass


def _key(text):
    """A tuple ordering versions as PEP 440 does: release (trailing zeros dropped), then
    dev < pre < final < post, then the local label (absent < present, numbers above words)."""
    m = _PEP440.fullmatch(text.strip())
    if m is None:
        raise _InvalidVersion(text)
    release, pre, pre_n, post, dev, local = m.groups()
    nums = [int(x) for x in release.split(".")]
    while len(nums) > 1 and nums[-1] == 0:
        nums.pop()
    if pre is not None:
        pre_key = (0, _PRE[pre.lower()], int(pre_n or 0))
    elif dev is not None and post is None:
        pre_key = (-1, "", 0)            # 1.0.dev0 sorts before 1.0a0
    else:
        pre_key = (1, "", 0)
    post_key = int(post or 0) if post is not None else -1
    dev_key = int(dev or 0) if dev is not None else _INF
    local_key = () if local is None else tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", local))
    return (tuple(nums), pre_key, post_key, dev_key, local_key)


def _other_key(other):
    if isinstance(other, str):
        return _key(other)
    if type(other).__name__ == "Version" and hasattr(other, "release"):  # packaging's
        return _key(str(other))
    if isinstance(other, Iterable):
        return _key(".".join(str(item) for item in other))
    raise _InvalidVersion(other)


class TorchVersion(str):
    """A str that compares with strings, tuples such as (2, 0) and packaging Versions as a
    version does (torch.torch_version.TorchVersion)."""

    __slots__ = ()

    def _compare(self, other, method):
        try:
            return getattr(_key(self), method)(_other_key(other))
        except _InvalidVersion:
            return getattr(str, method)(self, other)

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


__version__ = TorchVersion(f"{API_VERSION}+ptl{internal_version}")
