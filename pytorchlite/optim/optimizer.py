"""optim.Optimizer (torch/optim/optimizer.py): param groups, defaults, per-parameter state,
state_dict / load_state_dict in PyTorch's structure, zero_grad, hooks.  Updates run as
in-place tensor ops, one set of calls per parameter: never per-element Python."""
import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C, cuda
from ..autograd.grad_mode import no_grad
from ..autograd.profiler import record_function


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init_subclass__(cls, **kwargs):
        """Each optimizer's step is a profiler range named as PyTorch names it."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None:
            name = f"Optimizer.step#{cls.__name__}.step"

            @functools.wraps(step)
            def profiled_step(self, *args, **kwargs):
                with record_function(name):
                    return step(self, *args, **kwargs)
            cls.step = profiled_step

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        if isinstance(params, _C.TensorBase):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.TensorBase):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, _C.TensorBase):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad = p.grad.detach()
                    p.grad.zero_()

    def state_dict(self):
        index = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            index.update({id(p): i for i, p in enumerate(group["params"], start)
                          if id(p) not in index})
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed
        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {index[id(k)]: v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        state_dict = deepcopy(state_dict)
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: (val.to(dtype=param.dtype) if isinstance(val, _C.TensorBase)
                                      and key != "step" and val.is_floating_point() else val)
                                for key, val in v.items()}
            else:
                state[k] = v
        new_groups = []
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            new_groups.append(new_group)
        self.__setstate__({"state": state, "param_groups": new_groups})

    def register_step_pre_hook(self, hook):
        from ..nn.modules.module import RemovableHandle
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        from ..nn.modules.module import RemovableHandle
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _cuda_graph_capture_health_check(self):
        """PyTorch's check that a step() captured in a CUDA graph is capturable.  Here the
        step counts of the optimizers with a `capturable` option live on the host, so a
        captured step would replay the capture's bias corrections forever: capture refuses
        them, capturable=True included."""
        if "capturable" not in self.defaults:
            return
        # is_initialized is cheap, and False wherever no device ran (a CPU-only build too)
        if not (cuda.is_initialized() and cuda.is_current_stream_capturing()):
            return
        name = type(self).__name__
        if not all(group["capturable"] for group in self.param_groups):
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of "
                               f"{name} but param_groups' capturable is False.")
        raise RuntimeError(f"{name}(capturable=True) cannot be captured in a CUDA graph: its "
                           f"step count lives on the host")

    def _run_step(self, closure, update):
        self._cuda_graph_capture_health_check()
        for hook in list(self._optimizer_step_pre_hooks.values()):
            hook(self, (), {})
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                update(group)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def step(self, closure=None):
        raise NotImplementedError
