"""The profiler's events and their summaries (torch/autograd/profiler_util.py): FunctionEvent,
FunctionEventAvg, EventList with key_averages, table, export_chrome_trace and export_stacks.

Events come from the C recorder (src/autograd/profiler.c, Note [Profiler]) as tuples; this
module turns them into PyTorch's objects: times in microseconds, children and parents by time
containment on one thread, memory attributed to every event whose time range holds it."""
import bisect
import enum
import json
import math
import os
import threading
from collections import defaultdict

# ORDER KIND: PtlProfilerEventKind in src/autograd/profiler.h
_OP, _BACKWARD, _EVALUATE, _RANGE, _MEMORY = range(5)
# the argument type codes of an input record (PTL_PROF_ARG_* in profiler.h; None is -2 and
# shows as "", as every code not named here)
_ARG_SCALAR, _ARG_LIST, _ARG_TENSORLIST = -1, -3, -4
# ORDER DTYPE: PTL_FORALL_DTYPES in src/c10/dtype.h, as PyTorch's traces name the types
_TYPE_NAMES = ("bool", "unsigned char", "signed char", "short int", "int", "long int",
               "c10::Half", "c10::BFloat16", "float", "double")
_EVALUATE_PREFIX = "autograd::engine::evaluate_function: "


class DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _node_name(name):
    """PyTorch names the leaf accumulator by its C++ class."""
    return "torch::autograd::AccumulateGrad" if name == "AccumulateGrad" else name


def _flops(name, shapes, values):
    """PyTorch's FLOP formulas (torch/csrc/profiler/util.cpp): 2*M*K*N for a matrix product,
    numel for add and mul, and conv2d's 2*N*OH*OW*KH*KW*C*OC/groups (recorded here on
    aten::convolution, which conv2d calls, when the weight is 4-D and not transposed)."""
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = shapes[0:2] if name == "aten::mm" else shapes[1:3]
            return 2 * a[0] * a[1] * b[1]
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = shapes[0:2] if name == "aten::bmm" else shapes[1:3]
            return 2 * a[0] * a[1] * a[2] * b[2]
        if name in ("aten::add", "aten::mul"):
            return math.prod(shapes[0])
        if name == "aten::convolution":
            x, w = shapes[0], shapes[1]
            stride, padding, dilation, transposed = values[3], values[4], values[5], values[6]
            groups = values[8][0]
            if len(w) != 4 or transposed[0]:
                return 0
            out = [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
                   for i in range(2)]
            return 2 * x[0] * out[0] * out[1] * w[2] * w[3] * x[1] * w[0] // groups
    except (IndexError, TypeError):
        return 0
    return 0


class FunctionEvent:
    """One recorded op call, backward node, or record_function range (times in us)."""

    def __init__(self, id, name, thread, start_us, end_us, sequence_nr=-1, depth=0,
                 input_shapes=None, input_types=None, concrete_inputs=None, stack=None,
                 flops=0, is_user_annotation=False, fwd_thread=None):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.sequence_nr = sequence_nr
        self.depth = depth
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_types = input_types if input_types is not None else []
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.stack = list(stack) if stack else []
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.fwd_thread = fwd_thread
        self.cpu_children = []
        self.cpu_parent = None
        self.cpu_memory_usage = 0
        self.device_type = DeviceType.CPU
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.is_async = False
        self.is_legacy = False
        self.node_id = -1
        self.overload_name = ""
        self.count = 1
        self.use_device = None

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """The events of one key (name, and shapes or stack when grouped by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.use_device = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_parent = None
        self.cpu_children = None
        self.device_type = DeviceType.CPU
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.input_shapes = other.input_shapes
            self.overload_name = other.overload_name
            self.stack = other.stack
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.is_user_annotation = other.is_user_annotation
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvent (or of FunctionEventAvg, from key_averages)."""

    def __init__(self, *args, profile_memory=False, with_flops=False, overhead=None,
                 memory_events=(), **kwargs):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._overhead = overhead
        self._memory_events = list(memory_events)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """PyTorch's summary table, plus one footer line with the profiler's own cost."""
        return _build_table(self, sort_by=sort_by, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only, time_unit=time_unit,
                            overhead=self._overhead)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [evt.key]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        averages = EventList(stats.values(), profile_memory=self._profile_memory,
                             with_flops=self._with_flops, overhead=self._overhead)
        for evt in averages:
            evt.stack = evt.stack[:group_by_stack_n] if evt.stack else []
            if not group_by_input_shapes:
                evt.input_shapes = ""
        return averages

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
        total.key = "Total"
        return total

    def export_chrome_trace(self, path, min_duration_us=0.0):
        """Writes Chrome's trace format (chrome://tracing, Perfetto): one complete event
        ("ph": "X") per event of at least min_duration_us, flows ("s"/"f", cat "fwdbwd")
        from each forward op to the backward node it created, and the allocated bytes as a
        counter track ("ph": "C").  The file is written whole, then renamed into place."""
        _write_chrome_trace(self, path, min_duration_us)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """One line per Python stack (outermost frame first, ';'-separated) and the metric
        summed over the events that entered C from it, in integer microseconds."""
        totals = defaultdict(float)
        for evt in self:
            if evt.stack:
                totals[";".join(reversed(evt.stack))] += getattr(evt, metric)
        with open(path, "w") as f:
            for stack, value in totals.items():
                f.write(f"{stack} {int(value)}\n")


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None,
                 overhead=None):
    if len(events) == 0:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda evt: getattr(evt, sort_by), reverse=True)
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops_scale = None
    if with_flops:
        positive = [e.flops for e in events if e.flops > 0]
        if positive:
            units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            level = int(max(0.0, min(math.log10(min(positive)) / 3, len(units) - 1.0)))
            flops_scale = 10.0 ** (-3 * level)
            headers.append(f"Total {units[level]}")
            widths.append(12)
            aligns.append(">")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt_time(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    def trim_path(path):
        if len(path) > src_width:
            path = path[len(path) - src_width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(evt.self_cpu_time_total, total),
               fmt_time(evt.self_cpu_time_total), _format_time_share(evt.cpu_time_total, total),
               fmt_time(evt.cpu_time_total), fmt_time(evt.cpu_time)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if has_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim_path(evt.stack[0]) if evt.stack else "")
        if flops_scale is not None:
            row.append("--" if evt.flops <= 0 else f"{evt.flops * flops_scale:8.3f}")
        lines.append(row_format.format(*row))
        if stacks:
            blanks = [""] * (len(headers) - 1)
            for entry in (evt.stack or [])[1:]:
                lines.append(row_format.format(*(blanks + [trim_path(entry)])))
            lines.append(row_format.format(*([""] * len(headers))))
    lines += [separator, f"Self CPU time total: {fmt_time(total)}"]
    if overhead is not None:
        lines.append(f"Profiler overhead: {overhead}")
    return "".join(line + "\n" for line in lines)


def _thread_ids():
    """C records pthread_self(), which is threading's ident; traces show the OS thread id."""
    return {t.ident: t.native_id for t in threading.enumerate()}


def _decode_inputs(codes, values):
    shapes, types, concrete = [], [], []
    for code, vals in zip(codes, values):
        if code >= 0:
            shapes.append(list(vals))
            types.append(_TYPE_NAMES[code] if code < len(_TYPE_NAMES) else "")
            concrete.append("")
            continue
        shapes.append([])
        types.append({_ARG_SCALAR: "Scalar", _ARG_LIST: "ScalarList",
                      _ARG_TENSORLIST: "TensorList"}.get(code, ""))
        if code == _ARG_SCALAR and vals:
            concrete.append(str(vals[0]))
        elif code == _ARG_LIST:
            concrete.append(str(list(vals)))
        else:
            concrete.append("")
    return shapes, types, concrete


def build_events(raw, stop_ns, record_shapes=False, with_flops=False, profile_memory=False):
    """FunctionEvents from the recorder's tuples (_C._profiler_events), sorted by start on
    each thread, with parents, children, memory and FLOPs filled in; and the memory events
    as (thread, ts_us, bytes, total_bytes)."""
    native = _thread_ids()
    events, memory = [], []
    for (kind, name, start, end, tid, seq, depth, nbytes, total, inputs, eid, stack) in raw:
        thread = native.get(tid, tid)
        if kind == _MEMORY:
            memory.append((thread, start / 1e3, nbytes, total))
            continue
        if end < 0:   # a range still open when the profiler stopped
            end = stop_ns
        shapes = types = concrete = None
        flops = 0
        if inputs is not None:
            shapes, types, concrete = _decode_inputs(*inputs)
            if with_flops:
                flops = _flops(name, shapes, inputs[1])
            if not record_shapes:
                shapes = types = concrete = None
        if kind == _EVALUATE:
            name = _EVALUATE_PREFIX + _node_name(name)
        elif kind == _BACKWARD:
            name = _node_name(name)
        events.append(FunctionEvent(eid, name, thread, start / 1e3, end / 1e3,
                                    sequence_nr=seq, depth=depth, input_shapes=shapes,
                                    input_types=types, concrete_inputs=concrete, stack=stack,
                                    flops=flops, is_user_annotation=kind == _RANGE,
                                    fwd_thread=thread if kind in (_BACKWARD, _EVALUATE) else None))
    events.sort(key=lambda e: (e.time_range.start, -e.time_range.end, e.depth))
    _link_children(events)
    for evt in events:   # an op a kernel called was entered from its caller's Python stack
        if not evt.stack and evt.cpu_parent is not None and not evt.is_user_annotation:
            evt.stack = evt.cpu_parent.stack
    if profile_memory:
        _attribute_memory(events, memory)
    return events, memory


def _link_children(events):
    """A parent is the innermost earlier event on the same thread whose range holds the
    child's; a range that ends after its enclosing one (record_function exited out of order)
    is nobody's child, as in PyTorch."""
    open_by_thread = defaultdict(list)
    for evt in events:
        stack = open_by_thread[evt.thread]
        while stack and stack[-1].time_range.end <= evt.time_range.start:
            stack.pop()
        if stack and evt.time_range.end <= stack[-1].time_range.end:
            evt.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(evt)
        stack.append(evt)


def _attribute_memory(events, memory):
    by_thread = defaultdict(lambda: ([], [0]))
    for thread, ts, nbytes, _ in sorted(memory, key=lambda m: m[1]):
        times, sums = by_thread[thread]
        times.append(ts)
        sums.append(sums[-1] + nbytes)
    for evt in events:
        if evt.thread not in by_thread:
            continue
        times, sums = by_thread[evt.thread]
        lo = bisect.bisect_left(times, evt.time_range.start)
        hi = bisect.bisect_right(times, evt.time_range.end)
        evt.cpu_memory_usage = sums[hi] - sums[lo]


def _trace_lanes(events):
    """The track (tid) of each event: its thread's, except for a range that outlives the
    slice it started in (record_function exited out of order), which goes to a track of its
    own: Perfetto drops a slice that overlaps its neighbour on one track."""
    lanes, names = {}, {}
    open_by_thread = defaultdict(list)
    spare = max((e.thread for e in events), default=0) + 1
    for e in events:
        stack = open_by_thread[e.thread]
        while stack and stack[-1].time_range.end <= e.time_range.start:
            stack.pop()
        if stack and e.time_range.end > stack[-1].time_range.end:
            lanes[id(e)] = spare
            names[spare] = f"thread {e.thread} (overlapping ranges)"
            spare += 1
            continue
        lanes[id(e)] = e.thread
        names[e.thread] = f"thread {e.thread}"
        stack.append(e)
    return lanes, names


def _write_chrome_trace(events, path, min_duration_us):
    pid = os.getpid()
    kept = [e for e in events if e.cpu_time_total >= min_duration_us]
    lanes, lane_names = _trace_lanes(kept)
    trace = []
    for lane, name in sorted(lane_names.items()):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": lane,
                      "args": {"name": name}})
    # the forward end of a flow is the innermost op that created the node (matmul calls mm:
    # both carry the number, mm starts the arrow), its backward end the node's formula
    forward, backward = {}, {}
    for e in kept:
        if e.sequence_nr < 0:
            continue
        if e.fwd_thread is None:
            if e.sequence_nr not in forward or e.depth > forward[e.sequence_nr].depth:
                forward[e.sequence_nr] = e
        elif not e.name.startswith(_EVALUATE_PREFIX):
            backward[e.sequence_nr] = e
    for e in kept:
        args = {"External id": e.id}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_types
            args["Concrete Inputs"] = e.concrete_inputs
        if e.flops:
            args["flops"] = e.flops
        trace.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                      "name": e.name, "pid": pid, "tid": lanes[id(e)],
                      "ts": round(e.time_range.start, 3), "dur": round(e.cpu_time_total, 3),
                      "args": args})
    flow_id = 0
    for seq, fwd in forward.items():
        bwd = backward.get(seq)
        if bwd is None:
            continue
        flow_id += 1
        trace.append({"ph": "s", "id": flow_id, "pid": pid, "tid": lanes[id(fwd)],
                      "ts": round(fwd.time_range.start, 3), "cat": "fwdbwd", "name": "fwdbwd"})
        trace.append({"ph": "f", "id": flow_id, "pid": pid, "tid": lanes[id(bwd)],
                      "ts": round(bwd.time_range.start, 3), "cat": "fwdbwd", "name": "fwdbwd",
                      "bp": "e"})
    for thread, ts, _, total in events._memory_events:
        trace.append({"ph": "C", "name": "CPU Memory", "pid": pid, "tid": thread,
                      "ts": round(ts, 3), "args": {"Total Allocated": total}})
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceName": os.fspath(path),
           "profile_memory": int(events._profile_memory), "with_flops": int(events._with_flops),
           "traceEvents": trace}
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
