"""pytorchlite.onnx.export (torch/onnx/utils.py, torch/onnx/symbolic_opset*.py): traces the
model with jit.trace, folds what depends only on constants (jit.passes), and writes each
aten node as ONNX nodes built with the `onnx` package's helpers.

Note [ONNX export]
Parameters and buffers become initializers named by their state_dict key, and the traced
inputs become graph inputs (named input_names, else the forward's argument names).  Each
converter in _CONVERTERS writes one aten operator; an operator without one raises, naming it.
Python numbers and 0-dim constant tensors that meet a tensor in an elementwise operator become
initializers of that operator's dtype, since ONNX operators do not promote types.  Reshapes
keep the traced shape except where leading dimensions equal the input's at the same places:
those are written 0 ("copy the input's"); otherwise the first dimension is written -1
("inferred") when no other is.  So a model traced at one batch size runs at any batch size
the dynamic_axes name (other traced sizes, such as a sequence length, stay fixed).
"""
import math

from .. import jit
from .._tensor import Tensor
from ..jit import _ir, passes

_ONNX_DTYPES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16",
                "int64": "INT64", "int32": "INT32", "int16": "INT16", "int8": "INT8",
                "uint8": "UINT8", "bool": "BOOL", "bfloat16": "BFLOAT16"}


def _onnx():
    """The onnx package and NumPy (which onnx needs): imported at export, never with
    pytorchlite, whose runtime needs neither."""
    try:
        import numpy
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:   # pragma: no cover
        raise ImportError("pytorchlite.onnx.export needs the `onnx` package: "
                          "pip install 'pytorchlite[onnx]'") from e
    return onnx, helper, numpy_helper, numpy


class _Context:
    """What converters write into: nodes, initializers and the names of values."""

    def __init__(self, graph, opset):
        self.onnx, self.helper, self.numpy_helper, self.np = _onnx()
        self.graph = graph
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.names = {}
        self.producers = {o: n for n in graph.nodes for o in n.outputs}
        self.counter = 0

    def fresh(self, hint):
        self.counter += 1
        return f"{hint}_{self.counter}"

    def name(self, v):
        n = self.names.get(v)
        if n is None:
            p = self.producers.get(v)
            if p is not None and p.kind == "prim::Constant" and isinstance(
                    p.attrs.get("value"), Tensor):
                n = self.initializer(p.attrs["value"].detach().numpy(), "const")
            else:
                n = self.fresh("v")
            self.names[v] = n
        return n

    def const(self, v):
        """The Python value of a constant input (lists of constants too); KeyError if not."""
        p = self.producers.get(v)
        if p is None:
            raise KeyError(v)
        if p.kind == "prim::Constant":
            x = p.attrs.get("value")
            x = x.item() if isinstance(x, Tensor) and x.dim() == 0 else x
            if isinstance(x, complex):   # a complex Scalar (alpha=1j ...)
                raise RuntimeError("ONNX export: the complex constant "
                                   f"{x} is not supported (ONNX operators take no complex "
                                   "scalars)")
            return x
        if p.kind == "prim::ListConstruct":
            return [self.const(i) for i in p.inputs]
        raise KeyError(v)

    def is_const(self, v):
        try:
            self.const(v)
            return True
        except KeyError:
            return False

    def initializer(self, array, hint):
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(self.np.asarray(array), name))
        return name

    def ints(self, values, hint="shape"):
        return self.initializer(self.np.asarray(values, dtype="int64"), hint)

    def add(self, op, inputs, outputs=None, **attrs):
        outputs = outputs or [self.fresh(op.lower())]
        self.nodes.append(self.helper.make_node(op, inputs, outputs, **attrs))
        return outputs[0]

    def out(self, node, k=0):
        return self.name(node.outputs[k])

    def dtype_of(self, v):
        fields = _ir.tensor_type_fields(v.type)
        return fields[0] if fields else None

    def operand(self, v, dtype):
        """A tensor input of an elementwise operator, as dtype: constants are written in it,
        other values cast when they differ (Note [ONNX export])."""
        if self.is_const(v) and not isinstance(self.const(v), (list, Tensor)):
            return self.initializer(self.np.asarray(self.const(v), dtype=dtype), "scalar")
        name = self.name(v)
        have = self.dtype_of(v)
        if have is not None and have != dtype:
            return self.add("Cast", [name], to=self._elem(dtype))
        return name

    def _elem(self, dtype):
        if dtype not in _ONNX_DTYPES:
            raise RuntimeError(f"ONNX export: dtype {dtype} is not supported")
        return getattr(self.onnx.TensorProto, _ONNX_DTYPES[dtype])


def _unsupported(ctx, n):
    raise RuntimeError(f"Exporting the operator '{n.kind}' to ONNX opset version {ctx.opset} "
                       "is not supported.")


def _elementwise(op):
    def convert(ctx, n):
        dtype = ctx.dtype_of(n.outputs[0])
        ins = [ctx.operand(v, dtype) for v in n.inputs[:2]]
        if len(n.inputs) > 2 and op in ("Add", "Sub") and ctx.const(n.inputs[2]) != 1:
            alpha = ctx.operand(n.inputs[2], dtype)
            ins[1] = ctx.add("Mul", [ins[1], alpha])
        ctx.add(op, ins, [ctx.out(n)])
    return convert


def _unary(op):
    def convert(ctx, n):
        ctx.add(op, [ctx.name(n.inputs[0])], [ctx.out(n)])
    return convert


def _compare(op):
    def convert(ctx, n):
        dtype = ctx.dtype_of(n.inputs[0])
        ctx.add(op, [ctx.operand(n.inputs[0], dtype), ctx.operand(n.inputs[1], dtype)],
                [ctx.out(n)])
    return convert


def _rank(v):
    fields = _ir.tensor_type_fields(v.type)
    return len(fields[1])


def _t(ctx, n):
    r = _rank(n.inputs[0])
    if r < 2:
        ctx.add("Identity", [ctx.name(n.inputs[0])], [ctx.out(n)])
    else:
        ctx.add("Transpose", [ctx.name(n.inputs[0])], [ctx.out(n)], perm=[1, 0])


def _transpose(ctx, n):
    r = _rank(n.inputs[0])
    a, b = (d % r for d in (ctx.const(n.inputs[1]), ctx.const(n.inputs[2])))
    perm = list(range(r))
    perm[a], perm[b] = perm[b], perm[a]
    ctx.add("Transpose", [ctx.name(n.inputs[0])], [ctx.out(n)], perm=perm)


def _permute(ctx, n):
    r = _rank(n.inputs[0])
    ctx.add("Transpose", [ctx.name(n.inputs[0])], [ctx.out(n)],
            perm=[d % r for d in ctx.const(n.inputs[1])])


def _addmm(ctx, n):
    bias, a, b = (ctx.name(v) for v in n.inputs[:3])
    ctx.add("Gemm", [a, b, bias], [ctx.out(n)], beta=float(ctx.const(n.inputs[3])),
            alpha=float(ctx.const(n.inputs[4])))


def _reshape(ctx, n):
    src = _ir.tensor_type_fields(n.inputs[0].type)[1]
    shape = list(ctx.const(n.inputs[1]))
    out_sizes = _ir.tensor_type_fields(n.outputs[0].type)[1]
    shape = [s if s != -1 else -1 for s in shape]
    for i, s in enumerate(shape):   # Note [ONNX export]: leading equal dims are copied
        if i < len(src) and src[i] == s and all(src[j] == out_sizes[j] for j in range(i + 1)):
            shape[i] = 0
        else:
            break
    if shape and shape[0] != 0 and -1 not in shape:
        shape[0] = -1   # Note [ONNX export]: the batch dimension is inferred
    ctx.add("Reshape", [ctx.name(n.inputs[0]), ctx.ints(shape)], [ctx.out(n)])


def _flatten(ctx, n):
    r = _rank(n.inputs[0])
    start, end = ctx.const(n.inputs[1]) % max(r, 1), ctx.const(n.inputs[2]) % max(r, 1)
    if end == r - 1:
        ctx.add("Flatten", [ctx.name(n.inputs[0])], [ctx.out(n)], axis=start)
        if start == 0:
            ctx.nodes[-1].output[0] = ctx.fresh("flat")
            ctx.add("Reshape", [ctx.nodes[-1].output[0], ctx.ints([-1])], [ctx.out(n)])
        return
    _unsupported(ctx, n)


def _identity(ctx, n):
    ctx.add("Identity", [ctx.name(n.inputs[0])], [ctx.out(n)])


def _conv(ctx, n):
    x, w, b = n.inputs[:3]
    stride, padding, dilation = (ctx.const(v) for v in n.inputs[3:6])
    transposed, groups = ctx.const(n.inputs[6]), ctx.const(n.inputs[8])
    if transposed:
        _unsupported(ctx, n)
    ins = [ctx.name(x), ctx.name(w)]
    if not (ctx.is_const(b) and ctx.const(b) is None):
        ins.append(ctx.name(b))
    k = len(stride)
    ctx.add("Conv", ins, [ctx.out(n)], strides=list(stride), pads=list(padding) * 2,
            dilations=list(dilation), group=int(groups),
            kernel_shape=list(_ir.tensor_type_fields(w.type)[1][2:2 + k]))


def _max_pool(ctx, n):
    if len(n.outputs) > 1 and any(n.outputs[1] in m.inputs for m in ctx.graph.nodes):
        _unsupported(ctx, n)
    kernel, stride, padding, dilation, ceil = (ctx.const(v) for v in n.inputs[1:6])
    stride = stride or kernel
    ctx.add("MaxPool", [ctx.name(n.inputs[0])], [ctx.out(n)], kernel_shape=list(kernel),
            strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
            ceil_mode=int(ceil))


def _softmax(op):
    def convert(ctx, n):
        axis = ctx.const(n.inputs[1])
        dtype = ctx.const(n.inputs[2]) if len(n.inputs) > 2 else None
        src = ctx.name(n.inputs[0])
        if dtype is not None:
            src = ctx.add("Cast", [src], to=ctx._elem(str(dtype).split(".")[-1]))
        ctx.add(op, [src], [ctx.out(n)], axis=axis)
    return convert


def _embedding(ctx, n):
    ctx.add("Gather", [ctx.name(n.inputs[0]), ctx.name(n.inputs[1])], [ctx.out(n)], axis=0)


def _layer_norm(ctx, n):
    if ctx.opset < 17:
        _unsupported(ctx, n)
    for extra in n.outputs[1:]:
        if any(extra in m.inputs for m in ctx.graph.nodes) or extra in ctx.graph.outputs:
            _unsupported(ctx, n)
    shape = ctx.const(n.inputs[1])
    ins = [ctx.name(n.inputs[0])]
    for v in n.inputs[2:4]:
        ins.append("" if ctx.is_const(v) and ctx.const(v) is None else ctx.name(v))
    while ins and ins[-1] == "":
        ins.pop()
    ctx.add("LayerNormalization", ins, [ctx.out(n)], axis=-len(shape),
            epsilon=float(ctx.const(n.inputs[4])))


def _group_norm(ctx, n):
    """native_group_norm (input, weight, bias, N, C, HxW, group, eps): InstanceNormalization
    of the input seen as [N, group, -1] (unit scale, zero shift), back to the input's shape,
    then the weight and bias per channel.  ONNX's GroupNormalization scales per group in opset
    18 and per channel from 21; this decomposition means the same in every opset."""
    for extra in n.outputs[1:]:
        if any(extra in m.inputs for m in ctx.graph.nodes) or extra in ctx.graph.outputs:
            _unsupported(ctx, n)
    dtype = ctx.dtype_of(n.outputs[0])
    group = ctx.const(n.inputs[6])
    rank = len(_ir.tensor_type_fields(n.inputs[0].type)[1])
    x = ctx.name(n.inputs[0])
    unit = [ctx.initializer(ctx.np.full(group, fill, dtype=dtype), "gn") for fill in (1, 0)]
    normed = ctx.add("InstanceNormalization",
                     [ctx.add("Reshape", [x, ctx.ints([0, group, -1])])] + unit,
                     epsilon=float(ctx.const(n.inputs[7])))
    y = ctx.add("Reshape", [normed, ctx.add("Shape", [x])])
    per_channel = ctx.ints([-1] + [1] * (rank - 2))
    for v, op in ((n.inputs[1], "Mul"), (n.inputs[2], "Add")):
        if not (ctx.is_const(v) and ctx.const(v) is None):
            y = ctx.add(op, [y, ctx.add("Reshape", [ctx.name(v), per_channel])])
    ctx.add("Identity", [y], [ctx.out(n)])


def _batch_norm(ctx, n):
    """native_batch_norm in eval mode (the running statistics): BatchNormalization, with
    ones and zeros written for an absent weight and bias."""
    if ctx.const(n.inputs[5]):
        _unsupported(ctx, n)
    for extra in n.outputs[1:]:
        if any(extra in m.inputs for m in ctx.graph.nodes) or extra in ctx.graph.outputs:
            _unsupported(ctx, n)
    dtype = ctx.dtype_of(n.outputs[0])
    channels = _ir.tensor_type_fields(n.inputs[0].type)[1][1]
    ins = [ctx.name(n.inputs[0])]
    for v, fill in zip(n.inputs[1:5], (1, 0, 0, 1)):
        absent = ctx.is_const(v) and ctx.const(v) is None
        ins.append(ctx.initializer(ctx.np.full(channels, fill, dtype=dtype), "bn")
                   if absent else ctx.name(v))
    ctx.add("BatchNormalization", ins, [ctx.out(n)], epsilon=float(ctx.const(n.inputs[7])))


def _gelu(ctx, n):
    dtype = ctx.dtype_of(n.outputs[0])
    x = ctx.name(n.inputs[0])

    def c(v):
        return ctx.initializer(ctx.np.asarray(v, dtype=dtype), "scalar")
    if ctx.const(n.inputs[1]) == "tanh":
        cube = ctx.add("Mul", [ctx.add("Mul", [x, x]), x])
        inner = ctx.add("Mul", [ctx.add("Add", [x, ctx.add("Mul", [cube, c(0.044715)])]),
                                c(math.sqrt(2 / math.pi))])
        t = ctx.add("Add", [ctx.add("Tanh", [inner]), c(1.0)])
    else:
        t = ctx.add("Add", [ctx.add("Erf", [ctx.add("Div", [x, c(math.sqrt(2.0))])]), c(1.0)])
    ctx.add("Mul", [ctx.add("Mul", [x, t]), c(0.5)], [ctx.out(n)])


def _masked_fill(ctx, n):
    dtype = ctx.dtype_of(n.outputs[0])
    ctx.add("Where", [ctx.name(n.inputs[1]), ctx.operand(n.inputs[2], dtype),
                      ctx.name(n.inputs[0])], [ctx.out(n)])


def _split(ctx, n):
    size, dim = ctx.const(n.inputs[1]), ctx.const(n.inputs[2])
    total = _ir.tensor_type_fields(n.inputs[0].type)[1][dim]
    sizes = [min(size, total - i) for i in range(0, total, size)]
    unpack = next((m for m in ctx.graph.nodes
                   if m.kind == "prim::ListUnpack" and m.inputs[0] is n.outputs[0]), None)
    if unpack is None:
        _unsupported(ctx, n)
    ctx.add("Split", [ctx.name(n.inputs[0]), ctx.ints(sizes, "split")],
            [ctx.name(o) for o in unpack.outputs], axis=dim)


def _matmul(ctx, n):
    ctx.add("MatMul", [ctx.name(n.inputs[0]), ctx.name(n.inputs[1])], [ctx.out(n)])


def _unsqueeze(ctx, n):
    ctx.add("Unsqueeze", [ctx.name(n.inputs[0]), ctx.ints([ctx.const(n.inputs[1])], "axes")],
            [ctx.out(n)])


def _cat(ctx, n):
    items = ctx.producers[n.inputs[0]].inputs
    ctx.add("Concat", [ctx.name(v) for v in items], [ctx.out(n)], axis=ctx.const(n.inputs[1]))


def _mean_dim(ctx, n):
    if n.overload != "dim":
        _unsupported(ctx, n)
    dims, keep = ctx.const(n.inputs[1]), ctx.const(n.inputs[2])
    if ctx.opset >= 18:
        ctx.add("ReduceMean", [ctx.name(n.inputs[0]), ctx.ints(dims, "axes")], [ctx.out(n)],
                keepdims=int(keep))
    else:
        ctx.add("ReduceMean", [ctx.name(n.inputs[0])], [ctx.out(n)], axes=list(dims),
                keepdims=int(keep))


_CONVERTERS = {
    "aten::add": _elementwise("Add"), "aten::sub": _elementwise("Sub"),
    "aten::mul": _elementwise("Mul"), "aten::div": _elementwise("Div"),
    "aten::maximum": _elementwise("Max"), "aten::minimum": _elementwise("Min"),
    "aten::eq": _compare("Equal"), "aten::lt": _compare("Less"),
    "aten::gt": _compare("Greater"),
    "aten::relu": _unary("Relu"), "aten::sigmoid": _unary("Sigmoid"),
    "aten::tanh": _unary("Tanh"), "aten::exp": _unary("Exp"), "aten::log": _unary("Log"),
    "aten::sqrt": _unary("Sqrt"), "aten::neg": _unary("Neg"), "aten::abs": _unary("Abs"),
    "aten::erf": _unary("Erf"), "aten::reciprocal": _unary("Reciprocal"),
    "aten::t": _t, "aten::transpose": _transpose, "aten::permute": _permute,
    "aten::addmm": _addmm, "aten::mm": _matmul, "aten::matmul": _matmul,
    "aten::bmm": _matmul,
    "aten::view": _reshape, "aten::reshape": _reshape,
    "aten::flatten": _flatten, "aten::contiguous": _identity, "aten::clone": _identity,
    "aten::alias": _identity, "aten::detach": _identity, "aten::dropout": _identity,
    "aten::convolution": _conv, "aten::max_pool2d_with_indices": _max_pool,
    "aten::softmax": _softmax("Softmax"), "aten::log_softmax": _softmax("LogSoftmax"),
    "aten::embedding": _embedding, "aten::native_layer_norm": _layer_norm,
    "aten::native_batch_norm": _batch_norm, "aten::native_group_norm": _group_norm,
    "aten::gelu": _gelu, "aten::masked_fill": _masked_fill, "aten::split": _split,
    "aten::unsqueeze": _unsqueeze, "aten::cat": _cat, "aten::mean": _mean_dim,
}


def _value_info(ctx, name, v, dynamic):
    fields = _ir.tensor_type_fields(v.type)
    if fields is None:
        raise RuntimeError(f"ONNX export: value '{name}' of type {v.type} is not a tensor")
    dims = [dynamic.get(i, s) for i, s in enumerate(fields[1])]
    return ctx.helper.make_tensor_value_info(name, ctx._elem(fields[0]), dims)


def _dynamic(dynamic_axes, name):
    axes = (dynamic_axes or {}).get(name, {})
    if isinstance(axes, (list, tuple)):
        return {a: f"{name}_dynamic_axes_{a + 1}" for a in axes}
    return dict(axes)


def _build(model, args, input_names, output_names, dynamic_axes, opset_version):
    traced = jit.trace(model, args, check_trace=False)
    module = traced if isinstance(traced, jit.TracedModule) else None
    graph = passes.copy_graph(traced.graph)
    passes.propagate_constants(graph)
    passes.eliminate_dead_code(graph)
    ctx = _Context(graph, opset_version)
    inputs = graph.inputs[1:] if module is not None else graph.inputs
    names = list(input_names or [])
    for i, v in enumerate(inputs):
        ctx.names[v] = names[i] if i < len(names) else (v.name or f"input.{i + 1}")
    if module is not None:
        where = {graph.inputs[0]: (module, "")}
        for n in graph.nodes:
            if n.kind != "prim::GetAttr":
                continue
            owner, prefix = where[n.inputs[0]]
            key = n.attrs["name"]
            if key in owner._modules:
                where[n.outputs[0]] = (owner._modules[key], prefix + key + ".")
                continue
            t = owner._parameters.get(key, owner._buffers.get(key))
            ctx.names[n.outputs[0]] = prefix + key
            n.outputs[0].type = _ir.tensor_type(t)   # the copy's types: converters read sizes
            ctx.initializers.append(
                ctx.numpy_helper.from_array(t.detach().numpy(), prefix + key))
    out = graph.outputs[0]
    producer = ctx.producers.get(out)
    outs = list(producer.inputs) if producer is not None and \
        producer.kind == "prim::TupleConstruct" else [out]
    onames = list(output_names or [])
    for i, v in enumerate(outs):
        if i < len(onames):
            ctx.names[v] = onames[i]
        elif v not in ctx.names:
            ctx.names[v] = f"output{i}" if len(outs) > 1 else "output"
    for n in graph.nodes:
        if n.kind in ("prim::Constant", "prim::GetAttr", "prim::ListConstruct",
                      "prim::ListUnpack", "prim::TupleConstruct"):
            continue
        _CONVERTERS.get(n.kind, _unsupported)(ctx, n)
    for i, v in enumerate(outs):   # an output that is an input or an initializer
        if ctx.producers.get(v) is None or ctx.producers[v].kind in ("prim::GetAttr",
                                                                       "prim::Constant"):
            ctx.add("Identity", [ctx.name(v)], [f"output{i}"])
            ctx.names[v] = f"output{i}"
    g = ctx.helper.make_graph(
        ctx.nodes, "main_graph",
        [_value_info(ctx, ctx.names[v], v, _dynamic(dynamic_axes, ctx.names[v]))
         for v in inputs],
        [_value_info(ctx, ctx.names[v], v, _dynamic(dynamic_axes, ctx.names[v]))
         for v in outs],
        initializer=ctx.initializers)
    proto = ctx.helper.make_model(g, producer_name="pytorchlite",
                                  opset_imports=[ctx.helper.make_opsetid("", opset_version)])
    proto.ir_version = min(proto.ir_version, 8)
    ctx.onnx.checker.check_model(proto)
    return proto, [ctx.names[v] for v in inputs]


def export(model, args, f, export_params=True, verbose=False, training=None,
           input_names=None, output_names=None, operator_export_type=None,
           opset_version=17, do_constant_folding=True, dynamic_axes=None,
           keep_initializers_as_inputs=None, custom_opsets=None, verify=False):
    """Exports model (a Module or function) traced on args to the ONNX file f (a path or a
    writable binary file); see Note [ONNX export].  With verify=True the file is run with
    onnxruntime on args and compared with eager mode: the largest absolute difference is
    returned (and a RuntimeError raised above 1e-4)."""
    if opset_version < 13:
        raise ValueError(f"opset_version {opset_version} is not supported (13 or later)")
    if not export_params:
        raise ValueError("export_params=False is not supported")
    if isinstance(args, (Tensor, list)):
        args = (args,)
    args = tuple(args)
    proto, in_names = _build(model, args, input_names, output_names, dynamic_axes,
                             opset_version)
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        with open(f, "wb") as fh:
            fh.write(data)
    if verbose:
        print(_onnx()[1].printable_graph(proto.graph))
    if verify:
        return _verify(model, args, data, in_names)
    return None


def _verify(model, args, data, in_names):
    try:
        import onnxruntime
    except ImportError as e:   # pragma: no cover
        raise ImportError("export(verify=True) needs onnxruntime: "
                          "pip install 'pytorchlite[onnx]'") from e
    from ..autograd import no_grad
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    leaves = [a for a in args if isinstance(a, Tensor)]
    got = session.run(None, {n: t.numpy() for n, t in zip(in_names, leaves)})
    with no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    import numpy as np
    diff = max((float(np.max(np.abs(g - e.numpy()))) if g.size else 0.0)
               for g, e in zip(got, expected))
    if diff > 1e-4:
        raise RuntimeError(f"ONNX export verification failed: the largest difference from "
                           f"eager mode is {diff}")
    return diff
