"""Module full backward hooks (torch/utils/hooks.py's BackwardHook): the module's tensor inputs
and outputs pass through identity autograd Functions (BackwardHookFunctionBackward nodes).
The outputs' node sees grad_output (pre-hooks may replace it); the inputs' node sees
grad_input, and the full hooks get (module, grad_input, grad_output) and may replace
grad_input."""
import warnings

from .. import _C
from ..autograd.function import Function


class BackwardHookFunction(Function):
    """Identity on a group of tensors; only marks the point where hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return tuple(a.view_as(a) for a in args)

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One module call's hook state: setup_input_hook before forward, setup_output_hook
    after it."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_index = []

    @staticmethod
    def _wrap(args, fn):
        index = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        if not index or not any(args[i].requires_grad for i in index):
            return args, None
        new = BackwardHookFunction.apply(*[args[i] for i in index])
        if not isinstance(new, tuple):
            new = (new,)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        grad_fn = next((t.grad_fn for t in new if t.grad_fn is not None), None)
        if grad_fn is not None:
            fn(grad_fn, index, len(args))
        return tuple(out), grad_fn

    def setup_input_hook(self, args):
        def attach(grad_fn, index, n):
            self.input_index, self.n_inputs = index, n

            def hook(grad_input, _):
                if self.grad_outputs is None:
                    return None
                res = [None] * n
                for i, g in zip(index, grad_input):
                    res[i] = g
                res = tuple(res)
                for h in self.user_hooks:
                    out = h(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                    if len(out) != len(res):
                        raise RuntimeError("Backward hook returned an invalid number of "
                                           f"grad_input, got {len(out)}, but expected "
                                           f"{len(res)}")
                    res = out
                self.grad_outputs = None
                return tuple(res[i] for i in index)
            grad_fn.register_hook(hook)
        self.n_inputs = len(args)
        new, _ = self._wrap(args, attach)
        return new

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        outs = (result,) if single else result

        def attach(grad_fn, index, n):
            def hook(grad_output):
                res = [None] * n
                for i, g in zip(index, grad_output):
                    res[i] = g
                res = tuple(res)
                for h in self.user_pre_hooks:
                    out = h(self.module, res)
                    if out is None:
                        continue
                    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                    if len(out) != len(res):
                        raise RuntimeError("Backward pre hook returned an invalid number of "
                                           f"grad_output, got {len(out)}, but expected {len(res)}")
                    res = out
                self.grad_outputs = res
                if not self.input_index and self.user_hooks:
                    # no input requires grad: the hooks run now with grad_input all None
                    warnings.warn("Full backward hook is firing when gradients are computed with "
                                  "respect to module outputs since no inputs require gradients. "
                                  "See https://docs.pytorch.org/docs/main/generated/torch.nn."
                                  "Module.html#torch.nn.Module.register_full_backward_hook for "
                                  "more details.", stacklevel=5)
                    for h in self.user_hooks:
                        if h(self.module, (None,) * self.n_inputs, res) is not None:
                            raise RuntimeError("Backward hook for Modules where no input "
                                               "requires gradient should always return None "
                                               "or None for all gradients.")
                    self.grad_outputs = None
                return tuple(res[i] for i in index)
            grad_fn.register_prehook(hook)
        new, _ = self._wrap(outs, attach)
        return new[0] if single else new
