"""Runs operators of tests/opinfo.py on meta copies of their samples and prints one JSON line
per operator: {"op": name, "status": s, "detail": ...} where s is

  match     the op returned on meta inputs for every sample the CPU kernel accepts, and each
            output has the CPU output's sizes, strides and dtype, on the meta device
  raises    every such sample raised a Python exception on meta inputs (detail: the first)
  mismatch  an output differs from the CPU one (detail: which)
  partial   some samples returned (matching) and some raised (detail: the first exception)

A crash ends the process without the operator's line; tests/aten/test_meta.py runs this
script in a subprocess and restarts it after the operator that crashed.
Usage: python meta_sweep.py [--skip N] [op names...] (default: every operator)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import pytorchlite as ptl  # noqa: E402
from opinfo import SCHEMAS, TABLE  # noqa: E402


def to_meta(x):
    """x's meta twin: same sizes, strides, storage offset and dtype (tensors in lists too)."""
    if isinstance(x, ptl.Tensor):
        if x.layout != ptl.strided:
            raise TypeError("sparse")
        span = x.storage_offset() + sum((n - 1) * st for n, st in zip(x.shape, x.stride())) + 1
        base = ptl.empty(span if x.numel() else 0, dtype=x.dtype, device="meta")
        return base.as_strided(x.shape, x.stride(), x.storage_offset() if x.numel() else 0)
    if isinstance(x, (list, tuple)):
        return type(x)(to_meta(y) for y in x)
    return x


def flat(x):
    if isinstance(x, ptl.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in flat(y)]
    return [x]


def compare(cpu, meta):
    a, b = flat(cpu), flat(meta)
    if len(a) != len(b):
        return f"{len(a)} outputs on the CPU, {len(b)} on meta"
    for i, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, ptl.Tensor) != isinstance(y, ptl.Tensor):
            return f"output {i}: {type(x).__name__} on the CPU, {type(y).__name__} on meta"
        if not isinstance(x, ptl.Tensor):
            continue
        if y.device.type != "meta":
            return f"output {i} is on {y.device}"
        got = (tuple(y.shape), y.stride(), y.dtype)
        want = (tuple(x.shape), x.stride(), x.dtype)
        if got != want:
            return f"output {i}: {got} on meta, {want} on the CPU"
    return None


def sweep(name):
    entry = TABLE[name]
    op = entry.op
    ok = raised = 0
    first_exc = None
    for sample in entry.samples:
        dtype = entry.dtypes[0]
        try:
            args, kwargs, _, _, _ = sample.make(dtype, entry.domain)
            margs, mkwargs = to_meta(args), {k: to_meta(v) for k, v in kwargs.items()}
            if not sample.specs() and "Device? device" in SCHEMAS[name]["schema"]:
                mkwargs["device"] = "meta"   # a factory
            cpu = op(*args, **kwargs)
        except Exception:   # the CPU kernel refuses it (or a sparse sample): nothing to compare
            continue
        try:
            meta = op(*margs, **mkwargs)
        except Exception as e:
            raised += 1
            first_exc = first_exc or f"{type(e).__name__}: {str(e)[:200]}"
            continue
        why = compare(cpu, meta)
        if why is not None:
            return "mismatch", f"{sample!r}: {why}"
        ok += 1
    if ok and raised:
        return "partial", first_exc
    if raised:
        return "raises", first_exc
    return "match", ok


def main(argv):
    skip = 0
    if argv[:1] == ["--skip"]:
        skip, argv = int(argv[1]), argv[2:]
    names = argv or sorted(TABLE)
    for name in names[skip:]:
        print(json.dumps({"op": name, "start": True}), flush=True)
        status, detail = sweep(name)
        print(json.dumps({"op": name, "status": status, "detail": detail}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
