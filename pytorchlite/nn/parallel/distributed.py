"""DistributedDataParallel: data-parallel training over a process group.  Mirrors
torch/nn/parallel/distributed.py and the Reducer of torch/csrc/distributed/c10d/reducer.cpp.

Note [DDP reducer]
~~~~~~~~~~~~~~~~~~
- At construction the parameters and buffers of rank 0 are broadcast to every rank.
- The trainable parameters are split into buckets of at most bucket_cap_mb (one dtype each), in
  reverse registration order: backward produces the last layers' gradients first, so the first
  bucket fills first.  Each parameter has a post-accumulate-grad hook (run after backward wrote
  its .grad); when every parameter of a bucket is ready, its gradients are copied into the
  bucket's flat tensor and an asynchronous all_reduce (MPI_Iallreduce) starts while backward goes
  on.  Buckets start strictly in bucket order on every rank, as MPI requires.
- The hook of the parameter that completes the last bucket reduces that bucket at once (a
  blocking all_reduce: nothing is left to overlap it with), waits for the others, divides by
  the world size (ReduceOp.AVG) and writes the averages back into the .grad tensors: a hook on
  the last bucket, not an engine final callback (pytorchlite's engine has no queue_callback).
  At that point every .grad of the module is final, so nothing of the model is left for backward
  to accumulate.
- find_unused_parameters=True walks the autograd graph of forward's outputs and marks the
  parameters it does not reach ready at once (their bucket slice is zero).  A used-parameter
  bitmap is all-reduced with the last bucket, and parameters no rank used keep their .grad
  untouched, as PyTorch does.
- Without it, a parameter that gets no gradient leaves its bucket waiting; the next forward
  raises PyTorch's "Expected to have finished reduction" error with the parameter indices (and
  their names with PTL_DISTRIBUTED_DEBUG=INFO or DETAIL).
- no_sync() turns the hooks off: gradients accumulate locally, and the first backward outside
  it all-reduces the accumulated sums.
- register_comm_hook(state, hook) replaces the all_reduce of each bucket: once the bucket's
  flat tensor holds its gradients, hook(state, GradBucket) returns a torch.futures.Future whose
  value is the reduced flat tensor (the hook averages: allreduce_hook divides by the world size
  before a SUM); the last bucket's hook waits on every future and copies each value into the
  .grad tensors.  The default hooks (all_reduce, float16 and bfloat16 compression) are in
  pytorchlite.distributed.algorithms.ddp_comm_hooks.default_hooks."""
import contextlib
import os

from ...futures import Future
from ..modules.module import Module

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n")


class _Bucket:
    """Parameters (indices into the reducer's list) whose gradients travel in one flat tensor."""

    def __init__(self, index, indices, params):
        import pytorchlite as torch
        self.index = index                     # its place in reduction order
        self.indices = indices
        self.offsets = []
        n = 0
        for i in indices:
            self.offsets.append(n)
            n += params[i].numel()
        self.flat = torch.zeros(n, dtype=params[indices[0]].dtype)
        self.pending = len(indices)
        self.work = None                       # the all_reduce's Work, or the hook's Future


def _buckets(params, cap_bytes):
    """Buckets in reverse parameter order, one dtype each, each at most cap_bytes (a parameter
    larger than the cap gets a bucket of its own)."""
    open_buckets, done = {}, []
    for i in reversed(range(len(params))):
        p = params[i]
        indices, size = open_buckets.get(p.dtype, ([], 0))
        nbytes = p.numel() * p.element_size()
        if indices and size + nbytes > cap_bytes:
            done.append(indices)
            indices, size = [], 0
        indices.append(i)
        open_buckets[p.dtype] = (indices, size + nbytes)
    done.extend(indices for indices, _ in open_buckets.values())
    return [_Bucket(b, indices, params)
            for b, indices in enumerate(sorted(done, key=lambda ix: -ix[0]))]


def _output_tensors(out):
    import pytorchlite as torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _output_tensors(o)]
    return []


def _reached_parameters(outputs):
    """ids of the leaf tensors the autograd graph of `outputs` accumulates into."""
    seen, reached = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return reached


def _hook_result(value, bucket):
    """The flat tensor a communication hook's future gave for `bucket`, checked."""
    import pytorchlite as torch
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if not isinstance(value, torch.Tensor) or value.numel() != bucket.flat.numel():
        raise RuntimeError(f"the DDP communication hook's future must hold a tensor of the "
                           f"bucket's {bucket.flat.numel()} elements, got {value!r:.80}")
    return value.reshape(-1)


class DistributedDataParallel(Module):
    """Runs `module` on every rank of `process_group` and averages the gradients during
    backward (Note [DDP reducer]).  The CPU process group has no devices: device_ids and
    output_device must be None."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        from ...distributed import distributed_c10d as c10d
        pg = c10d._group(process_group)
        if device_ids is not None or output_device is not None:
            raise ValueError("DistributedDataParallel device_ids and output_device arguments "
                             "only work with single-device/multiple-device GPU modules or CPU "
                             f"modules, but got device_ids {device_ids}, output_device "
                             f"{output_device}, and module parameters {{device(type='cpu')}}.")
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self._param_names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._buffers_to_sync = [b for _, b in module.named_buffers()]
        if init_sync:
            for t in [p for _, p in module.named_parameters()] + self._buffers_to_sync:
                dist.broadcast(t.detach(), src=pg.ranks[0], group=pg)
        self._buckets = _buckets(self._params, self.bucket_bytes_cap)
        self._bucket_of = {}
        for b, bucket in enumerate(self._buckets):
            for slot, i in enumerate(bucket.indices):
                self._bucket_of[i] = (b, slot)
        self._comm_hook = None        # (state, hook) of register_comm_hook
        self._expect_sync = False     # a forward prepared a reduction that has not finished
        self._ready = []
        self._next_bucket = 0
        self._used = None
        self._grad_hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(self._params)]

    # ---- forward ----
    def forward(self, *inputs, **kwargs):
        import pytorchlite as torch
        from ... import distributed as dist
        if self._expect_sync:
            raise RuntimeError(self._unfinished_message())
        if self.broadcast_buffers and self.require_forward_param_sync and self._buffers_to_sync:
            for b in self._buffers_to_sync:
                dist.broadcast(b.detach(), src=self.process_group.ranks[0],
                               group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if torch.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        return out

    def _unfinished_message(self):
        rank = self.process_group.rank
        missing = [i for i, r in enumerate(self._ready) if not r]
        msg = _UNFINISHED
        if os.environ.get("PTL_DISTRIBUTED_DEBUG", "OFF").upper() in ("INFO", "DETAIL"):
            names = ", ".join(self._param_names[i] for i in missing)
            msg += f"Parameters which did not receive grad for rank {rank}: {names}\n"
        msg += (f"Parameter indices which did not receive grad for rank {rank}: "
                f"{' '.join(str(i) for i in missing)}")
        if os.environ.get("PTL_DISTRIBUTED_DEBUG", "OFF").upper() == "OFF":
            msg += ("\n In addition, you can set the environment variable "
                    "PTL_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information "
                    "about which particular parameters did not receive gradient on this rank as "
                    "part of this error")
        return msg

    def _prepare_for_backward(self, out):
        self._expect_sync = True
        self._ready = [False] * len(self._params)
        self._next_bucket = 0
        for bucket in self._buckets:
            bucket.pending = len(bucket.indices)
            bucket.work = None
        self._used = None
        if self.find_unused_parameters:
            reached = _reached_parameters(_output_tensors(out))
            self._used = [id(p) in reached for p in self._params]
            for i, used in enumerate(self._used):
                if not used:
                    self._mark_ready(i)

    # ---- backward (Note [DDP reducer]) ----
    def _make_hook(self, i):
        def hook(param):
            if self._expect_sync and self.require_backward_grad_sync and not self._ready[i]:
                self._mark_ready(i)
        return hook

    def _mark_ready(self, i):
        self._ready[i] = True
        b, _ = self._bucket_of[i]
        self._buckets[b].pending -= 1
        while (self._next_bucket < len(self._buckets)
               and self._buckets[self._next_bucket].pending == 0):
            self._next_bucket += 1
            self._launch(self._buckets[self._next_bucket - 1],
                         last=self._next_bucket == len(self._buckets))
        if self._next_bucket == len(self._buckets):
            self._finish()

    def _launch(self, bucket, last):
        """Copies the bucket's gradients into its flat tensor and all-reduces it: in the
        background, except the last bucket, whose result is needed at once (a blocking
        all_reduce is cheaper there)."""
        from ... import distributed as dist
        for i, offset in zip(bucket.indices, bucket.offsets):
            p = self._params[i]
            piece = bucket.flat[offset:offset + p.numel()]
            if p.grad is None:
                piece.zero_()
            else:
                piece.copy_(p.grad.reshape(-1))
        if self._comm_hook is not None:
            state, hook = self._comm_hook
            bucket.work = hook(state, dist.GradBucket(bucket, self._params, last))
            if not isinstance(bucket.work, Future):
                raise RuntimeError(f"the DDP communication hook must return a "
                                   f"torch.futures.Future, got {type(bucket.work).__name__}")
            return
        bucket.work = dist.all_reduce(bucket.flat, op=dist.ReduceOp.AVG,
                                      group=self.process_group, async_op=not last)

    def _finish(self):
        import pytorchlite as torch
        from ... import distributed as dist
        used = None
        if self._used is not None:
            used = torch.tensor(self._used, dtype=torch.int32)
            dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self.process_group)
            used = used.tolist()
        for bucket in self._buckets:
            flat = bucket.flat
            if isinstance(bucket.work, Future):
                flat = _hook_result(bucket.work.wait(), bucket)
            elif bucket.work is not None:
                bucket.work.wait()
            for i, offset in zip(bucket.indices, bucket.offsets):
                if used is not None and not used[i]:
                    continue
                p = self._params[i]
                avg = flat[offset:offset + p.numel()].view(p.shape)
                if p.grad is None:
                    p.grad = avg.clone()
                else:
                    p.grad.copy_(avg)
        self._expect_sync = False

    # ---- the rest of the PyTorch API ----
    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally without all-reducing them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """Reduces each gradient bucket with hook(state, bucket) -> Future[Tensor] instead of
        DDP's all_reduce (Note [DDP reducer]); once, before training."""
        import inspect
        from ... import distributed as dist
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        params = inspect.signature(hook).parameters
        bucket = params.get("bucket")
        if bucket is not None and bucket.annotation not in (inspect.Parameter.empty,
                                                             dist.GradBucket):
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        self._comm_hook = (state, hook)

    def _get_ddp_logging_data(self):
        return {"bucket_cap_bytes": self.bucket_bytes_cap,
                "num_buckets": len(self._buckets),
                "find_unused_parameters": self.find_unused_parameters}
