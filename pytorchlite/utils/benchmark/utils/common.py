"""TaskSpec, Measurement and the number formatting helpers (torch/utils/benchmark/utils/
common.py).

The statistics are plain Python over the sorted per-run times; they reproduce what PyTorch's
tensor arithmetic gives, so that a printed Measurement or Compare table matches PyTorch's
byte for byte for the same raw times (see Note [Benchmark statistics as PyTorch computes
them]).

Note [Benchmark statistics as PyTorch computes them]
----------------------------------------------------
PyTorch computes these numbers with 0-dim tensors, and the dtype those tensors get decides
some printed digits:
- median and the quartiles come from a float64 tensor's quantile(): linear interpolation
  between the two order statistics around q * (n - 1), with ATen's lerp (which computes from
  the nearer end: below + w * (above - below) for w < 0.5, else above - (above - below) *
  (1 - w)).  _quantile does the same in Python floats, so the values are identical.
- `torch.tensor(python_float)` is float32: select_unit's and trim_sigfig's log10, the
  interquartile std of significant_figures and Compare's leading digits are float32
  computations.  _log10_f32 rounds the argument to float32, takes the double log10 and rounds
  that to float32; at the integer boundaries where floor/ceil/`// 3` look (powers of ten and
  their float32 neighbours) this equals ATen's float32 log10, and elsewhere it may differ by
  one float32 ulp, which no floor or ceil sees.  trim_sigfig's rounding and its product with
  the scale are float32 too (_f32 after each step), as is the square root of
  significant_figures' point count.
- The mean (not printed anywhere) is math.fsum / n."""
import collections
import contextlib
import ctypes
import dataclasses
import math
import textwrap

import pytorchlite

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns

# IQR / median above which a Measurement carries a warning, and above which it says so louder.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def _f32(x):
    """x rounded to float32 (inf beyond its range), as a Python float."""
    return ctypes.c_float(x).value


def _log10_f32(x):
    """float32 log10 of float32(x), as `torch.tensor(x).log10()` gives it (see the Note)."""
    x = _f32(x)
    if x != x or x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    if x == math.inf:
        return math.inf
    return _f32(math.log10(x))


def _quantile(sorted_values, q):
    """torch.quantile(q) (linear interpolation) of a non-empty sorted list of floats."""
    rank = q * (len(sorted_values) - 1)
    below_index = int(rank)
    weight = rank - below_index
    below = sorted_values[below_index]
    above = sorted_values[math.ceil(rank)]
    if abs(weight) < 0.5:
        return below + weight * (above - below)
    return above - (above - below) * (1 - weight)


def _pstd_f32(values):
    """Population standard deviation of the float32-rounded values, rounded to float32."""
    points = [_f32(v) for v in values]
    if not points:
        return math.nan
    mean = math.fsum(points) / len(points)
    return _f32(math.sqrt(math.fsum((p - mean) ** 2 for p in points) / len(points)))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer measures (everything but its globals)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        """The label (or the one-line stmt, or the indented stmt), with the sub_label."""
        sub = self.sub_label
        if self.label is not None:
            return self.label + (f": {sub}" if sub else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {sub}" if sub else "")
        head = f"stmt: ({sub})" if sub else "stmt:"
        return head + "\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self):
        if self.setup in ("pass", ""):
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self):
        """The TaskSpec part of a Measurement's printed form."""
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """One or more timings of a TaskSpec: raw_times[i] is the time of number_per_run runs.
    The statistics are per run (raw time / number_per_run)."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None  # the user's payload

    def __post_init__(self):
        self._sorted_times = ()
        self._warnings = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name):
        # The TaskSpec's fields read through (m.stmt, m.label, m.num_threads, ...).
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self):
        """A rough count of trustworthy digits of the median, from the spread of the middle
        half of the times (z = 1.645), clamped to [1, 4]."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        middle = self._sorted_times[n_total // 4:math.ceil(_f32(3 * n_total / 4))]
        std = _pstd_f32(middle)
        sqrt_n = _f32(math.sqrt(len(middle)))
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = _log10_f32(self._median / confidence_interval)
        return min(max(int(math.floor(relative_ci)), 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self):
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        ordered = self._sorted_times
        self._median = _quantile(ordered, 0.5)
        self._mean = math.fsum(ordered) / len(ordered)
        self._p25 = _quantile(ordered, 0.25)
        self._p75 = _quantile(ordered, 0.75)
        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            self._add_warning("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg):
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median "
                           f"measurement.\n           {msg}",)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        # PyTorch's property reads a misspelt attribute, fails, and falls through to the
        # TaskSpec field: the env is None when unset (not "Unspecified env").
        return self.task_spec.env

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} "
                         f"to {self._p75 / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads}")
        lines.append("\n".join(self._warnings))
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """One Measurement per TaskSpec, with number_per_run=1 and every replicate's per-run
        times (metadata is dropped: it may differ between replicates)."""
        groups = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in groups.items()]


def select_unit(t):
    """(unit, seconds per unit) that shows t seconds with 1 to 3 integer digits."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u):
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x, n):
    """x rounded to n significant figures (3.14159, 2 -> 3.1), in float32 as PyTorch's."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(_log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    return _f32(_f32(round(_f32(x / scale))) * _f32(scale))


def ordered_unique(elements):
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n):
    """pytorchlite's intra-op thread count is n inside the block, restored after it."""
    prior = pytorchlite.get_num_threads()
    try:
        pytorchlite.set_num_threads(n)
        yield
    finally:
        pytorchlite.set_num_threads(prior)
