"""A fuzzer for the operators of src/aten/ops.def.

Every call is drawn from (seed, index) alone: an operator out of `_C._schemas()` and, per
argument type of its schema, a value that is usually plausible and sometimes hostile
(size-0, 0-dim, huge or negative sizes, every dtype, transposed, strided, expanded and offset
views, nan/inf/huge scalars, wrong types, out-of-range dims, lists of the wrong length).  The
call is written as Python source, so a finding's repro is the literal call.

Calls run in batches in child processes.  A Python exception is a good answer; a crash (a
signal or a sanitizer report) or a hang (no progress for --hang-after seconds) is a finding,
recorded with its repro, and the batch goes on in a fresh child after the failing call.

    python -m tools.fuzz.op_fuzzer --calls 5000              # release build, 5,000 calls
    python -m tools.fuzz.op_fuzzer --seed 7 --start 20000 --calls 100000 --jobs 2
    python -m tools.fuzz.op_fuzzer --repro 0:1234            # print and run one call
    python -m tools.fuzz.op_fuzzer --show 0:1234             # print it only
    python -m tools.fuzz.op_fuzzer --grad --ops '^(mul|exp|complex|polar)$' --calls 2000
    python -m tools.fuzz.op_fuzzer --torch --calls 20000 --jobs 1   # against torch
    python -m tools.fuzz.op_fuzzer --torch --repro 0:1234            # both outcomes

--ops REGEX draws only the operators whose name (without overload) matches.  --grad makes
every floating and complex tensor argument a leaf that requires grad and, after a call that
returns a result with a grad_fn, runs autograd.grad from it with a seeded gradient of its
dtype (complex gradients included), every other call with create_graph=True and then a
second backward through the first gradient.  A repro needs the same flags.

--torch (run with a Python that has torch) is differential: each call also runs in torch,
its source unchanged but its names bound to torch (tensors built from the same seeded NumPy
values), and tools/fuzz/differential.py compares the outcomes: a value, dtype, shape or
structure that differs (the arguments an in-place or out= call wrote included), a call one
side refuses and the other computes, and, as lower classes that do not fail the run,
differing exception types, refusals of meta tensors, dtypes torch lacks, argument parsers'
differences and torch's own crashes and hangs.  Random, uninitialised and tie-dependent
results are skipped or partly compared (differential.SKIP, COMPARED, each with its reason).

Exit status: 0 without findings (of a lower class only, with --torch), 1 with; with
--fail-on CLASSES only a crash, a hang or a difference of those classes fails (CI's smoke:
--fail-on value).  The children get a 1 GiB address-space limit
(not under AddressSanitizer, which reserves terabytes of shadow memory and takes
allocator_may_return_null instead), so a huge allocation is a MemoryError, not a swap storm.
"""
import argparse
import os
import random
import re
import select
import subprocess
import sys
import time

from tools.fuzz.differential import LOWER, MAJOR

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")
HUGE_INTS = (2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, -2**63, -2**31)
HOSTILE_INTS = (-1, -2, -7, 0, 65) + HUGE_INTS
SCALARS = ("float('nan')", "float('inf')", "float('-inf')", "1e308", "-1e308", "5e-324",
           "-0.0", "2**63", "-2**63 - 1", "2**64", "True", "False", "0", "-1", "1j")
STRINGS = ("none", "mean", "sum", "tanh", "same", "valid", "reflect", "replicate", "circular",
           "constant", "zeros", "border", "linear", "lower", "higher", "midpoint", "nearest",
           "bilinear", "fro", "nuc", "amax", "amin", "prod", "floor", "trunc", "ij", "xy",
           "ii", "ij->j", "i,i->", "...", "", "\\x00")
WRONG = ("'x'", "None", "[None]", "object()", "(1, 'a')", "{}", "3.5")
ATEN_PREFIX = "aten::"
STARTUP_SECONDS = 120


# ---- the values a call is made of (evaluated in the child) ----

def make_tensor(shape, dtype, layout, seed, leaves=None, lib=None):
    """A tensor of `shape` and `dtype` with seeded values, laid out as `layout` says:
    c contiguous, t transposed, s sliced with a step, e expanded, o at a storage offset, m on
    the meta device (no data: Note [Meta tensors] in src/c10/device.h).  With a `leaves`
    list (--grad) a floating or complex tensor is made from a leaf that requires grad,
    appended to it.  `lib` is the module that makes it: pytorchlite, or torch (--torch)."""
    import numpy as np
    ptl = lib
    if ptl is None:
        import pytorchlite as ptl
    rng = np.random.RandomState(seed)
    shape = tuple(shape)
    ndim = len(shape)
    if layout == "t" and ndim >= 2:
        base_shape = shape[::-1]
    elif layout == "s" and ndim >= 1:
        base_shape = shape[:-1] + (2 * shape[-1],)
    elif layout == "e" and ndim >= 1:
        base_shape = tuple(1 if i % 2 == 0 else n for i, n in enumerate(shape))
    elif layout == "o":
        base_shape = (int(np.prod(shape)) + 3,)
    else:
        base_shape = shape
    if dtype == "bool":
        values = rng.rand(*base_shape) < 0.5
    elif dtype.startswith(("int", "uint")):
        values = rng.randint(-3 if dtype != "uint8" else 0, 9, size=base_shape)
    else:
        values = rng.randn(*base_shape) * 3
        if dtype.startswith("complex"):
            values = values + 1j * rng.randn(*base_shape)
        if values.size and rng.rand() < 0.2:
            flat = values.reshape(-1)
            flat[rng.randint(flat.size)] = rng.choice([np.nan, np.inf, -np.inf])
    src_dtype = "float32" if dtype == "bfloat16" else dtype
    base = ptl.tensor(np.asarray(values).astype(src_dtype)).to(getattr(ptl, dtype))
    if leaves is not None and (base.is_floating_point() or base.is_complex()):
        leaves.append(base.requires_grad_())
    if layout == "t" and ndim >= 2:
        return base.permute(*range(ndim - 1, -1, -1))
    if layout == "s" and ndim >= 1:
        return base[..., ::2]
    if layout == "e" and ndim >= 1:
        return base.expand(*shape)
    if layout == "o":
        return base[3:].view(*shape)
    if layout == "m":
        return base.to("meta")
    return base


def namespace(leaves=None, lib=None):
    """The names a call's source uses, bound to pytorchlite or to the module `lib` (torch,
    for --torch); with a `leaves` list (--grad) its tensors collect there.  The tensors a call
    makes are listed in order under "made"."""
    ptl = lib
    if ptl is None:
        import pytorchlite as ptl
    made = []

    def tensor(shape, dtype, layout, seed):
        t = make_tensor(shape, dtype, layout, seed, leaves, ptl)
        made.append(t)
        return t
    return {"aten": ptl.ops.aten, "ptl": ptl, "T": tensor, "inf": float("inf"),
            "nan": float("nan"), "made": made}


# ---- the generator ----

def schema_rows(ops=None):
    """[(name, overload, [(type, name, default or None, keyword-only)])] of every aten op
    (whose name matches the regex `ops`, when given), in a fixed order."""
    from pytorchlite import _C
    rows = []
    for r in _C._schemas():
        s = r["schema"]
        if not s.startswith(ATEN_PREFIX):
            continue
        full = s[len(ATEN_PREFIX):s.index("(")]
        name, _, overload = full.partition(".")
        if ops is not None and not re.search(ops, name):
            continue
        rows.append((name, overload or "default", parse_args(s)))
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


def parse_args(schema):
    inner = schema[schema.index("(") + 1:schema.rindex(") ->")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    out, kw_only = [], False
    for p in parts:
        p = p.strip()
        if p == "*":
            kw_only = True
            continue
        decl, _, default = p.partition("=")
        typ, _, name = decl.rpartition(" ")
        out.append((typ.replace("SymInt", "int"), name, default or None, kw_only))   # an int here
    return out


class CallMaker:
    """Writes the source of call (seed, index)."""

    def __init__(self, rows):
        self.rows = rows

    def call(self, seed, index):
        rng = random.Random(f"{seed}:{index}")
        name, overload, args = self.rows[rng.randrange(len(self.rows))]
        self.rng = rng
        self.ndim = rng.choice((0, 1, 1, 2, 2, 3, 4, 5))
        self.shape = [rng.choice((0, 1, 1, 2, 3, 3, 4, 5)) for _ in range(self.ndim)]
        if rng.random() < 0.6:
            self.shape = [max(n, 1) for n in self.shape]
        self.dtype = rng.choice(("float32", "float32", "float64", "int64") + DTYPES)
        pos, kws, skipped = [], [], False
        for typ, arg, default, kw_only in args:
            if default is not None and rng.random() < 0.45:
                skipped = True
                continue
            value = self.value(typ, arg)
            if kw_only or skipped or rng.random() < 0.05:
                kws.append(f"{arg}={value}")
            else:
                pos.append(value)
        if rng.random() < 0.02:
            pos.append(self.value("int", "extra"))
        return f"aten.{name}.{overload}({', '.join(pos + kws)})"

    def tensor(self, arg):
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            shape = list(self.shape)
        elif r < 0.7:
            shape = [1 if rng.random() < 0.5 else n for n in self.shape[rng.randrange(
                len(self.shape) + 1):]]
        else:
            shape = [rng.choice((0, 1, 2, 3, 4)) for _ in range(rng.choice((0, 1, 2, 3, 4)))]
        dtype = self.dtype if rng.random() < 0.75 else rng.choice(DTYPES)
        if re.search(r"ind|target|label|offsets|boundaries", arg) and rng.random() < 0.7:
            dtype = "int64"
        if arg == "mask" and rng.random() < 0.7:
            dtype = "bool"
        layout = rng.choice("ccctseom")
        return f"T({tuple(shape)!r}, {dtype!r}, {layout!r}, {rng.randrange(2**16)})"

    def int_value(self):
        rng = self.rng
        r = rng.random()
        if r < 0.75:
            return str(rng.randint(-self.ndim - 1, self.ndim + 2))
        return str(rng.choice(HOSTILE_INTS))

    def int_list(self, fixed):
        rng = self.rng
        if fixed and rng.random() < 0.1:
            return self.int_value()
        n = fixed or self.ndim
        r = rng.random()
        if r < 0.15:
            n = rng.randint(0, 7)
        elif r < 0.25:
            return repr(list(self.shape))
        items = []
        for _ in range(n):
            items.append(self.int_value() if rng.random() < 0.3 else
                         str(rng.choice((0, 1, 1, 2, 2, 3))))
        return f"[{', '.join(items)}]"

    def value(self, typ, arg):
        rng = self.rng
        optional = typ.endswith("?") and not typ.endswith("?[]")
        base = typ.rstrip("?")
        if optional and rng.random() < 0.15:
            return "None"
        if rng.random() < 0.03:
            return rng.choice(WRONG)
        if base.startswith("Tensor") and not base.endswith("[]"):
            return self.tensor(arg) if rng.random() < 0.97 else rng.choice(SCALARS)
        if base in ("Tensor[]", "Tensor?[]"):
            n = rng.choice((0, 1, 2, 2, 3, 4))
            items = ["None" if base == "Tensor?[]" and rng.random() < 0.3 else self.tensor(arg)
                     for _ in range(n)]
            return f"[{', '.join(items)}]"
        if base == "int":
            return self.int_value()
        if base.startswith("int["):
            fixed = base[4:-1]
            return self.int_list(int(fixed) if fixed else 0)
        if base == "bool":
            return rng.choice(("True", "False", "True", "False", "2"))
        if base.startswith("bool["):
            n = int(base[5:-1] or 0) or rng.randint(0, 4)
            if rng.random() < 0.1:
                n = rng.choice((n - 1, n + 1))
            items = [rng.choice(("True", "False", "1", "0")) for _ in range(n)]
            return f"[{', '.join(items)}]"
        if base in ("Scalar", "float"):
            r = rng.random()
            if r < 0.5:
                return repr(round(rng.uniform(-4, 4), 3))
            if r < 0.7:
                return str(rng.randint(-3, 5))
            return rng.choice(SCALARS)
        if base == "ScalarType":
            return f"ptl.{rng.choice(DTYPES)}" if rng.random() < 0.95 else "99"
        if base == "Layout":
            return "ptl.strided"
        if base == "Device":
            return rng.choice(("'cpu'", "'cpu'", "'cuda'", "'meta'", "'cpu:1'", "-1"))
        if base == "Generator":
            return f"ptl.Generator().manual_seed({rng.randrange(100)})"
        if base == "MemoryFormat":
            return rng.choice(("ptl.contiguous_format", "ptl.preserve_format",
                               "ptl.channels_last"))
        if base == "str":
            return repr(rng.choice(STRINGS))
        return "None"


# ---- the child: runs calls, reports progress on stdout ----

def touch(result, depth=0):
    """Reads every element of a small result, so that a bad view or a short storage shows."""
    import pytorchlite as ptl
    if isinstance(result, ptl.Tensor):
        if result.numel() <= 100_000 and not result.is_meta:
            result.tolist()
    elif isinstance(result, (tuple, list)) and depth < 2:
        for r in result:
            touch(r, depth + 1)


def backward_through(result, leaves, second_order):
    """--grad: autograd.grad from the first result with a grad_fn to the leaves, with a
    seeded gradient of its dtype; with second_order, create_graph=True and a backward
    through the first gradient that has a grad_fn.  The gradients are read (touch)."""
    import pytorchlite as ptl
    outs = result if isinstance(result, (tuple, list)) else (result,)
    out = next((o for o in outs if isinstance(o, ptl.Tensor) and o.grad_fn is not None), None)
    if out is None or not leaves:
        return
    g = ptl.ones_like(out) * ((0.5 - 1j) if out.is_complex() else -1.5)
    grads = ptl.autograd.grad([out], leaves, [g], allow_unused=True,
                              create_graph=second_order)
    touch(list(grads))
    again = next((x for x in grads if x is not None and x.grad_fn is not None), None)
    if second_order and again is not None:
        gg = ptl.ones_like(again) * ((2 + 1j) if again.is_complex() else 0.5)
        touch(list(ptl.autograd.grad([again], leaves, [gg], allow_unused=True)))


def address_space():
    """Bytes of address space this process maps now (0 where /proc does not say)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_child(seed, start, count, ops=None, grad=False, torch=False):
    """Runs calls [start, start + count), writing each index before its call (and, with
    `torch`, "INDEX torch" before torch's side of it and one line "= INDEX CLASS DETAIL" or
    "= INDEX ok|skipped|absent" after it: tools/fuzz/differential.py)."""
    lib = None
    if torch:
        import torch as lib
        lib.set_num_threads(1)
    if os.environ.get("PTL_FUZZ_ADDRESS_LIMIT"):
        import resource
        # torch maps most of a gigabyte of libraries before it makes a tensor
        limit = int(os.environ["PTL_FUZZ_ADDRESS_LIMIT"]) + (address_space() if torch else 0)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import warnings
    warnings.simplefilter("ignore")
    maker = CallMaker(schema_rows(ops))
    out = sys.stdout
    for index in range(start, start + count):
        src = maker.call(seed, index)
        out.write(f"{index}\n")
        out.flush()
        if torch:
            out.write(f"= {index} {compare_call(src, index, lib, out)}\n")
            out.flush()
            continue
        leaves = [] if grad else None
        try:
            result = eval(src, namespace(leaves))
            touch(result)
            if grad:
                backward_through(result, leaves, index % 2 == 1)
        except Exception:
            pass
    out.write("done\n")
    out.flush()


def compare_call(src, index, torch, out):
    """--torch: runs `src` on pytorchlite and, unless its operator is skipped or torch lacks
    it, on torch; returns "CLASS DETAIL" for a difference, else ok, skipped or absent."""
    from tools.fuzz import differential
    ours = differential.outcome(src, namespace())
    if differential.op_name(src)[0] in differential.SKIP or differential.BAD_DTYPE.search(src):
        return "skipped"
    if not differential.torch_has(src):
        return "absent"
    out.write(f"{index} torch\n")
    out.flush()
    theirs = differential.outcome(src, namespace(lib=torch))
    found = differential.verdict(src, ours, theirs)
    return "ok" if found is None else " ".join(found)


# ---- the parent ----

def sanitizer_line(text):
    for line in text.splitlines():
        if "ERROR: AddressSanitizer" in line or "runtime error:" in line or \
                "ERROR: UndefinedBehaviorSanitizer" in line or "ERROR: LeakSanitizer" in line:
            return line.strip()
    return ""


def child_env():
    env = dict(os.environ)
    if "libasan" not in env.get("LD_PRELOAD", ""):
        env["PTL_FUZZ_ADDRESS_LIMIT"] = str(1 << 30)
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = ":".join(x for x in (asan, "allocator_may_return_null=1",
                                               "max_allocation_size_mb=1024") if x)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def mode_flags(a):
    """The command-line flags that choose the calls and how they run (--ops, --grad,
    --torch), for children and repros."""
    return (["--ops", a.ops] if a.ops is not None else []) + (["--grad"] if a.grad else []) + \
        (["--torch"] if a.torch else [])


def run_alone(seed, index, hang_after, env, root, flags):
    """Call `index` alone in a fresh child: (exit status, stderr), or None if it still makes
    no progress in time."""
    try:
        r = subprocess.run([sys.executable, "-m", "tools.fuzz.op_fuzzer", "--child", str(seed),
                            str(index), "1"] + flags, cwd=root, env=env, capture_output=True,
                           text=True,
                           timeout=hang_after + STARTUP_SECONDS)
    except subprocess.TimeoutExpired:
        return None
    return r.returncode, r.stderr


def run_batch(seed, start, count, hang_after, env, log, flags):
    """Runs calls [start, start + count) in children; returns the findings
    [(index, kind, detail)], the number of calls made, and (--torch) how many calls were
    compared, skipped or absent from torch {outcome: count}."""
    findings, made, tally = [], 0, {}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    while count > 0:
        err = open(log, "w+")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.fuzz.op_fuzzer", "--child", str(seed), str(start),
             str(count)] + flags, stdout=subprocess.PIPE, stderr=err, cwd=root, env=env,
            text=True)
        last, done, hung, in_torch = None, False, False, False
        while True:
            # importing pytorchlite on a busy machine is not a hang
            wait = hang_after if last is not None else hang_after + STARTUP_SECONDS
            ready, _, _ = select.select([proc.stdout], [], [], wait)
            if not ready:
                hung = True
                proc.kill()
                break
            line = proc.stdout.readline()
            if not line:
                break
            if line.strip() == "done":
                done = True
                break
            if line.startswith("= "):
                _, index, kind, *detail = line.split(" ", 3)
                kind = kind.strip()
                if detail:
                    findings.append((int(index), kind, detail[0].strip()))
                    if kind not in LOWER:   # as it comes, so that a stopped run keeps it
                        print(f"{kind} at {seed}:{index}: {detail[0].strip()}",
                              file=sys.stderr, flush=True)
                tally[kind] = tally.get(kind, 0) + 1
                continue
            last, in_torch = int(line.split()[0]), line.strip().endswith("torch")
        rc = proc.wait()
        proc.stdout.close()
        err.seek(0)
        stderr = err.read()
        err.close()
        report = sanitizer_line(stderr)
        if done and rc == 0 and not report:
            made += count
            break
        if last is None:
            findings.append((start, "startup", f"the child made no call (exit status {rc}, "
                                               f"hung: {hung}): {stderr.strip()[-300:]}"))
            break
        if hung and not in_torch:
            alone = run_alone(seed, last, hang_after, env, root, flags)
            if alone is not None:
                hung, (rc, stderr) = False, alone
                report = sanitizer_line(stderr)
                if rc == 0 and not report:   # a busy machine stalled the batch, not the call
                    made += last - start + 1
                    count -= last - start + 1
                    start = last + 1
                    continue
        if hung:
            kind, detail = "hang", f"no progress for {hang_after}s"
        elif report:
            kind, detail = "sanitizer", report
        elif rc < 0:
            kind, detail = "crash", f"signal {-rc}"
        else:
            kind, detail = "crash", f"exit status {rc}: {stderr.strip()[-300:]}"
        if in_torch:   # torch's side of a --torch call: not pytorchlite's finding
            kind = "torch-" + kind
        findings.append((last, kind, detail))
        print(f"{kind} at {seed}:{last}: {detail}", file=sys.stderr, flush=True)
        made += last - start + 1
        count -= last - start + 1
        start = last + 1
    return findings, made, tally


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tools.fuzz.op_fuzzer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="index of the first call")
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--batch", type=int, default=500, help="calls per child process")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--hang-after", type=float, default=60.0,
                   help="seconds without progress that count as a hang")
    p.add_argument("--repro", metavar="SEED:INDEX", help="print and run one call")
    p.add_argument("--show", metavar="SEED:INDEX", help="print one call")
    p.add_argument("--ops", metavar="REGEX", help="only the operators whose name matches")
    p.add_argument("--grad", action="store_true",
                   help="tensors require grad, and each call is followed by a backward")
    p.add_argument("--torch", action="store_true",
                   help="also run each call in torch and report the differences")
    p.add_argument("--fail-on", metavar="CLASSES", default=",".join(MAJOR),
                   help="--torch: the comma-separated classes of difference that fail the "
                        "run (default: %(default)s; crashes and hangs always do)")
    p.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.torch and a.grad:
        p.error("--torch compares forward results: it does not combine with --grad")
    a.fail_on = tuple(k for k in a.fail_on.split(",") if k)
    if any(k not in MAJOR + LOWER for k in a.fail_on):
        p.error(f"--fail-on takes classes of {', '.join(MAJOR + LOWER)}")
    if a.child:
        run_child(*a.child, ops=a.ops, grad=a.grad, torch=a.torch)
        return 0
    if a.repro or a.show:
        seed, _, index = (a.repro or a.show).partition(":")
        src = CallMaker(schema_rows(a.ops)).call(int(seed), int(index))
        print(src, flush=True)
        if a.repro and a.torch:
            return repro_against_torch(src)
        if a.repro:
            leaves = [] if a.grad else None
            result = eval(src, namespace(leaves))
            print(repr(result))
            if a.grad:
                backward_through(result, leaves, int(index) % 2 == 1)
        return 0
    return fuzz(a)


def repro_against_torch(src):
    """--repro with --torch: prints both outcomes and the verdict; 1 if they differ."""
    import torch
    from tools.fuzz import differential
    ours = differential.outcome(src, namespace())
    theirs = differential.outcome(src, namespace(lib=torch))
    print(f"ours:  {ours}\ntorch: {theirs}")
    found = differential.verdict(src, ours, theirs)
    print("same" if found is None else " ".join(found))
    return 0 if found is None else 1


def fuzz(a):
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    env = child_env()
    t0 = time.time()
    batches = [(s, min(a.batch, a.start + a.calls - s))
               for s in range(a.start, a.start + a.calls, a.batch)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(
            lambda b: run_batch(a.seed, b[0], b[1], a.hang_after, env,
                                os.path.join(tmp, f"stderr-{b[0]}"), mode_flags(a)), batches))
    # most important first; the lower classes of --torch do not fail the run
    findings = sorted((f for r in results for f in r[0]),
                      key=lambda f: (f[1] in LOWER, f[1] not in MAJOR,
                                     MAJOR.index(f[1]) if f[1] in MAJOR else 0, f))
    made = sum(r[1] for r in results)
    tally = {}
    for r in results:
        for kind, n in r[2].items():
            tally[kind] = tally.get(kind, 0) + n
    maker = CallMaker(schema_rows(a.ops))
    flags = " ".join(f"'{f}'" if f == a.ops else f for f in mode_flags(a))
    for index, kind, detail in findings:
        print(f"{kind}: {detail}\n    python -m tools.fuzz.op_fuzzer --repro {a.seed}:{index}"
              f" {flags}\n    {maker.call(a.seed, index)}")
    print(f"{made} calls (seed {a.seed}, indices {a.start}..{a.start + a.calls - 1}), "
          f"{len(findings)} findings, {time.time() - t0:.0f} s")
    if a.torch:
        print("against torch: " + ", ".join(f"{n} {kind}" for kind, n in sorted(tally.items())))
    return 1 if failed(findings, a.fail_on) else 0


def failed(findings, fail_on):
    """Whether [(index, kind, detail)] fails a run: a crash, hang or sanitizer report, or a
    --torch difference of a class in `fail_on`."""
    return any(kind in fail_on or kind not in MAJOR + LOWER for _, kind, _ in findings)


if __name__ == "__main__":
    sys.exit(main())
