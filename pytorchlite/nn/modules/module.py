"""nn.Module (torch/nn/modules/module.py): registration of parameters, buffers and submodules,
traversal, state_dict, train/eval, dtype/device moves, hooks and PyTorch's repr."""
import itertools
import warnings
from collections import OrderedDict, namedtuple

from ... import _C, __future__
from ..._tensor import Tensor
from ..parameter import Buffer, Parameter, UninitializedBuffer, UninitializedTensorMixin

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeysRepr(_IncompatibleKeys):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _keep_object_on_conversion(t, converted):
    """Whether _apply sets t's data to `converted` instead of making a new object: when both
    live on the same kind of device (PyTorch's _has_compatible_shallow_copy_type) and the
    overwrite switch of torch.__future__ is off."""
    if __future__.get_swap_module_params_on_conversion():
        return True
    return (t.device.type == converted.device.type and
            not __future__.get_overwrite_module_params_on_conversion())


class RemovableHandle:
    """What register_*_hook returns: .remove() unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks_dict):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward and before the
    module's own pre-hooks (a process-wide hook, as PyTorch's)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook):
    """hook(module, args, output) -> None or a new output, after every module's forward and
    before the module's own forward hooks."""
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle


def _non_default_options(module, defaults):
    """", name=value" for each (name, default) of `defaults` whose attribute on module differs
    from the default (by identity for None and bools, by value otherwise): the tail that
    extra_repr shows."""
    parts = []
    for name, default in defaults:
        value = getattr(module, name)
        if default is None or isinstance(default, bool):
            same = value is default
        else:
            same = value == default
        if not same:
            parts.append(f", {name}={value!r}")
    return "".join(parts)


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line if line.strip() else ""
                                        for line in lines[1:])


class Module:
    """Base class for all neural network modules."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", OrderedDict())
        sa(self, "_buffers", OrderedDict())
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", OrderedDict())
        sa(self, "_forward_pre_hooks", OrderedDict())
        sa(self, "_forward_pre_hooks_with_kwargs", set())
        sa(self, "_forward_hooks", OrderedDict())
        sa(self, "_forward_hooks_with_kwargs", set())
        sa(self, "_backward_hooks", OrderedDict())
        sa(self, "_state_dict_hooks", OrderedDict())
        sa(self, "_state_dict_pre_hooks", OrderedDict())
        sa(self, "_load_state_dict_pre_hooks", OrderedDict())
        sa(self, "_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ----
    def _check_new_name(self, kind, name, table):
        """torch's checks on the name of a buffer or parameter about to enter self.<table>."""
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        self._check_new_name("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        self._check_new_name("parameter", name, "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    # ---- attribute protocol ----
    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _C._module_getattr_slot(cls, Module.__getattr__)   # Note [Module attribute lookup]

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                marked = isinstance(value, (Buffer, UninitializedBuffer))
                if marked or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    persistent = value.persistent if marked else \
                        name not in self._non_persistent_buffers_set
                    if isinstance(value, Buffer):
                        value = Tensor._make_subclass(Tensor, value, value.requires_grad)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ---- traversal ----
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate=True):
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ---- modes ----
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    p.grad = g.detach()
                p.grad.zero_()

    # ---- moves ----
    def _apply(self, fn, recurse=True):
        """Converts every parameter, gradient and buffer with fn (the children's too when
        recurse).  A parameter keeps its object and takes the converted data
        (`param.data = fn(param)`), as PyTorch's _apply does unless
        torch.__future__.set_overwrite_module_params_on_conversion(True): tied weights stay one
        Parameter and optimizers keep pointing at the model's parameters."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with _C_no_grad():
                new = fn(param)
            grad = param.grad
            if _keep_object_on_conversion(param, new):
                param.data = new
                out = param
            else:
                out = Parameter(new, param.requires_grad)
                self._parameters[key] = out
            if grad is not None:
                with _C_no_grad():
                    new_grad = fn(grad)
                if _keep_object_on_conversion(grad, new_grad):
                    grad.data = new_grad
                    out.grad = grad
                else:
                    out.grad = new_grad.requires_grad_(grad.requires_grad)
        for key, buf in self._buffers.items():
            if isinstance(buf, UninitializedTensorMixin):   # stays lazy, with fn's dtype/device
                buf.data = fn(buf)
            elif buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """to(device, dtype, memory_format=...): memory_format lays out the 4-d and 5-d
        parameters and buffers (torch.channels_last for a CNN's weights), as PyTorch's."""
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        memory_format = kwargs.get("memory_format")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                device = a
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            warnings.warn(
                "Complex modules are a new feature under active development whose design may "
                "change, and some modules might not work as expected when using complex tensors "
                "as parameters or buffers. Please file an issue at "
                "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a "
                "complex module does not work as expected.", stacklevel=2)

        def convert(t):
            # floating and complex tensors take the dtype; integer buffers keep theirs
            to = dtype if t.is_floating_point() or t.is_complex() else None
            if memory_format is not None and t.dim() in (4, 5):
                return t.to(device=device, dtype=to, memory_format=memory_format)
            return t.to(device=device, dtype=to)
        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """Replaces every parameter and buffer with an uninitialised tensor of its shape and
        dtype on device, copying nothing: how a model built on the meta device gets memory
        (then its reset_parameters() or a state_dict fills it)."""
        return self._apply(lambda t: _C._op("aten::empty_like")(t, device=device),
                           recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def share_memory(self):
        """Moves every parameter, gradient and buffer into shared memory (Tensor.share_memory_),
        for multiprocessing workers that update one model (Hogwild)."""
        return self._apply(lambda t: t.share_memory_())

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    # ---- state dict ----
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                         self._buffers.items())
                       if v is not None and k not in self._non_persistent_buffers_set}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                                  f"or Tensor-like object from checkpoint but received {type(input_param)}")
                continue
            if isinstance(param, UninitializedTensorMixin):
                continue   # both uninitialized: LazyModuleMixin's load hook left it so
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{input_param.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            try:
                if assign:
                    if name in self._parameters:
                        setattr(self, name, Parameter(input_param, param.requires_grad))
                    else:
                        self._buffers[name] = input_param
                else:
                    with _C_no_grad():
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the '
                                  f"model are {param.shape} and whose dimensions in the checkpoint "
                                  f"are {input_param.shape}, an exception occurred : {ex.args}.")
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        state_dict = OrderedDict(state_dict)

        def load(module, prefix=""):
            for hook in module._load_state_dict_pre_hooks.values():
                hook(state_dict, prefix, {}, strict, missing_keys, unexpected_keys, error_msgs)
            module._load_from_state_dict(state_dict, prefix, {}, True, missing_keys,
                                         unexpected_keys, error_msgs, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
        load(self)
        # keys that belong to no submodule prefix at all
        result = _IncompatibleKeysRepr(missing_keys, unexpected_keys)
        for hook in self._load_state_dict_post_hooks.values():
            hook(self, result)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            hint = _prefix_hint(missing_keys, unexpected_keys)
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}{}".format(
                type(self).__name__, "\n\t".join(error_msgs), hint))
        return result

    # ---- hooks ----
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = lambda *a: hook(self, *a)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        hooks = self.__dict__.setdefault("_full_backward_hooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        hooks = self.__dict__.setdefault("_backward_pre_hooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        for hook in list(_global_forward_pre_hooks.values()) if _global_forward_pre_hooks else ():
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        full = list(self.__dict__.get("_full_backward_hooks", {}).values())
        pre = list(self.__dict__.get("_backward_pre_hooks", {}).values())
        bw_hook = None
        if full or pre:
            from ...utils.hooks import BackwardHook
            bw_hook = BackwardHook(self, full, pre)
            args = bw_hook.setup_input_hook(args)
        out = self.forward(*args, **kwargs)
        if bw_hook is not None:
            out = bw_hook.setup_output_hook(out)
        for hook in list(_global_forward_hooks.values()) if _global_forward_hooks else ():
            result = hook(self, args, out)
            if result is not None:
                out = result
        for hid, hook in list(self._forward_hooks.items()):
            result = hook(self, args, kwargs, out) if hid in self._forward_hooks_with_kwargs \
                else hook(self, args, out)
            if result is not None:
                out = result
        return out

    def compile(self, *args, **kwargs):
        """Compiles this module's forward with torch.compile's arguments, checked as
        PyTorch's; the module runs as written (Note [torch.compile runs the code as written]
        in pytorchlite/compiler/__init__.py)."""
        from ...compiler import compile as compile_fn
        compile_fn(self.forward, *args, **kwargs)

    # ---- printing ----
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __setstate__(self, state):
        self.__dict__.update(state)


_C._module_getattr_slot(Module, Module.__getattr__)   # Note [Module attribute lookup]


def _prefix_hint(missing, unexpected):
    """Beyond PyTorch: keys that differ only by a common prefix (DataParallel's "module.",
    torch.compile's "_orig_mod.") get a one-line fix in the error."""
    if not missing or not unexpected:
        return ""
    for p in ("module.", "_orig_mod."):
        if all(k.startswith(p) for k in unexpected) and \
                {k[len(p):] for k in unexpected} >= set(missing):
            return (f"\n\tHint: the checkpoint's keys carry the prefix '{p}' (saved from a wrapped "
                    f"model). Load it with:\n\t  model.load_state_dict({{k.removeprefix('{p}'): v "
                    f"for k, v in state_dict.items()}})")
        if all(k.startswith(p) for k in missing) and \
                {k[len(p):] for k in missing} <= set(unexpected):
            return (f"\n\tHint: the model's keys carry the prefix '{p}' but the checkpoint's do not. "
                    f"Load it into the unwrapped model (model.module / model._orig_mod), or with:\n"
                    f"\t  model.load_state_dict({{'{p}' + k: v for k, v in state_dict.items()}})")
    return ""


class _C_no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
