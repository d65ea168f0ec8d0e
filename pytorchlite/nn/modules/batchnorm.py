"""BatchNorm1d/2d/3d (torch/nn/modules/batchnorm.py) and their base _NormBase, which
InstanceNorm shares: affine weight and bias (ones/zeros; bias=False drops the bias) and
the running statistics buffers running_mean, running_var and num_batches_tracked (int64)."""
from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin, _materialize
from .module import Module


class _NormBase(Module):
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        fn = _C._functions
        if self.affine:
            self.weight = Parameter(fn["empty"](num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(fn["empty"](num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean",
                                 fn["zeros"](num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 fn["ones"](num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 fn["zeros"]((), device=device, dtype=_C.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        # Checkpoints older than version 2 have no num_batches_tracked: keep ours.
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, *args, **kwargs)


class _BatchNorm(_NormBase):
    """Training normalises with the batch statistics and folds them into the running ones
    (momentum None: a cumulative average over num_batches_tracked batches); eval uses the
    running statistics when they are tracked."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        if self.training:
            bn_training = True
        else:
            bn_training = self.running_mean is None and self.running_var is None
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _LazyNormBase(LazyModuleMixin):
    """num_features from the first input's dim 1 (as PyTorch's, also for an unbatched
    instance norm input).  The lazy instance norms share the batch norms' defaults
    (affine=True, track_running_stats=True), as PyTorch's do."""
    _inferred_size = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            n = (self.num_features,)
            _materialize(self, {k: n for k in ("weight", "bias", "running_mean", "running_var")
                                if isinstance(getattr(self, k), (UninitializedParameter,
                                                                 UninitializedBuffer))})


def _lazy_norm(norm):
    lazy = type("Lazy" + norm.__name__, (_LazyNormBase, norm), {
        "cls_to_become": norm, "__module__": __name__,
        "__doc__": f"A {norm.__name__} whose num_features comes from its first input."})
    return lazy


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy_norm(n) for n in (BatchNorm1d, BatchNorm2d, BatchNorm3d))


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics span every rank of a process group (Note
    [Synchronized batch norm]): with pytorchlite.distributed initialised and more than one
    rank, training mode normalises with the global batch's statistics; otherwise (eval, one
    rank, no process group) it is BatchNorm.  PyTorch synchronises CUDA tensors only; here the
    MPI backend synchronises CPU tensors too."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        from ... import distributed as dist
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        syncing = (self.training and dist.is_available() and dist.is_initialized())
        group = self.process_group or dist.group.WORLD
        if not (syncing and dist.get_world_size(group) > 1):
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        from ._functions import SyncBatchNormFunction
        tracked = self.track_running_stats
        return SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if tracked else None,
            self.running_var if tracked else None, self.eps, factor, group,
            dist.get_world_size(group))

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*D (at any depth) replaced by a SyncBatchNorm sharing its
        parameters and running statistics."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group,
                            bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
