"""DistributedDataParallel: data-parallel training over a process group.  Mirrors
torch/nn/parallel/distributed.py and the Reducer of torch/csrc/distributed/c10d/reducer.cpp.

Note [DDP reducer]
~~~~~~~~~~~~~~~~~~
- At construction the parameters and buffers of rank 0 are broadcast to every rank.
- The trainable parameters are split into buckets (one dtype each) in reverse registration
  order, the order backward produces their gradients in, so the first bucket fills first.  A
  bucket closes once it holds bucket_cap_mb (25 MiB by default), and with the default cap the
  first one closes at 1 MiB (distributed._DEFAULT_FIRST_BUCKET_BYTES), so the first reduction
  starts early: PyTorch's layout once its reducer has rebuilt the buckets in the order the
  gradients came (after the first iteration; before, it has one bucket).
- The bookkeeping of backward is C (_C._Reducer, src/python/reducer.c): every parameter has a C
  post-accumulate-grad hook (Note [C post-accumulate-grad hooks] in src/autograd/autograd.h),
  so the engine marks it ready and counts down its bucket without a Python call.  When a
  bucket is complete (buckets go strictly in bucket order on every rank, as MPI requires), C
  copies its gradients into the bucket's flat tensor, through views of it shaped like each
  parameter, made once -- divided by the world size on the way, as PyTorch does, for the
  buckets DDP sums itself -- and calls _launch(b) once for the bucket.  _launch starts an
  asynchronous sum over the ranks (MPI_Iallreduce) while backward goes on, on the module's
  own communicator (Note [DDP bucket channel] in distributed/_mpi_group.py).  When all the
  ranks run on one machine the bucket is this rank's slot of an MPI shared-memory window:
  C signals that the slot is filled (an atomic counter in the window) before the launch, and
  _launch only makes the request that waits for the other ranks' slots; the final callback's
  write_grads then sums the slots straight into .grad (Note [DDP shared-memory buckets] in
  distributed/_shared_buckets.py).
- The first launch inside backward queues an engine final callback (queue_callback, Note
  [Final callbacks] in src/python/autograd_object.c), as PyTorch's reducer does: when the
  whole backward pass has finished, it waits for every bucket and writes the averages into
  .grad (C again).  So the last bucket's reduction overlaps whatever backward still computes
  after the module's last gradient (the inputs' gradients, other modules).  A reduction whose
  buckets all complete outside backward (every parameter unused and marked at forward) ends
  with its last bucket's launch.
- A world of one without a communication hook (and without gradient_as_bucket_view) has
  nothing to reduce: the average over one rank is the gradient itself, so the reducer only
  counts the buckets down (its `local` flag) and ends the reduction when the last one is
  complete, with no copy into the buckets or back and no launch: the hooks' bookkeeping (and
  the unfinished-reduction error) stays, and .grad is exactly what backward left, as the
  copies gave.  On the digits MLP that was 18-20 us a step (two copies of 68 KB, the
  one-rank MPI_Iallreduce and the final callback's Python).
- gradient_as_bucket_view=False (the default): .grad stays a tensor of its own; the averages
  are copied into it, so it never aliases the bucket that the next backward overwrites, and
  zero_grad (set_to_none or not) works as without DDP.  gradient_as_bucket_view=True: .grad
  becomes its view of the bucket when its gradient is copied in, as in PyTorch, so the copy
  back is saved, and a .grad that is still the view (zero_grad(set_to_none=False)) is not
  copied in either: backward accumulates into the bucket itself.
- find_unused_parameters=True walks the autograd graph of forward's outputs and marks the
  parameters it does not reach ready at once (their bucket slice is zero).  Per-parameter use
  counts are summed over the ranks after the last bucket, and parameters no rank used keep
  their .grad untouched, as PyTorch does.
- Without it, a parameter that gets no gradient leaves its bucket waiting; the next forward
  raises PyTorch's "Expected to have finished reduction" error with the parameter indices (and
  their names with PTL_DISTRIBUTED_DEBUG=INFO or DETAIL).
- The hooks act only between a forward that prepared a reduction and the end of that
  reduction, as PyTorch's: inside no_sync() forward prepares nothing, so gradients accumulate
  locally, and the first backward outside it all-reduces the accumulated sums; a second
  backward through the same graph (retain_graph) accumulates locally too.
- register_comm_hook(state, hook) replaces the all_reduce of each bucket: once the bucket's
  flat tensor holds its gradients (undivided), hook(state, GradBucket) returns a
  torch.futures.Future whose value is the reduced flat tensor (the hook averages:
  allreduce_hook divides by the world size before a SUM); the last bucket's launch waits on
  every future and copies each value into the .grad tensors.  The default hooks (all_reduce,
  float16 and bfloat16 compression) are in
  pytorchlite.distributed.algorithms.ddp_comm_hooks.default_hooks."""
import contextlib
import os

from ... import _C
from ...autograd import Variable
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
    """Parameters (indices into the reducer's list) whose gradients travel in one flat tensor;
    `views` are the pieces of it shaped like each parameter."""

    def __init__(self, index, indices, params):
        import pytorchlite as torch
        self.index = index                     # its place in reduction order
        self.indices = indices
        self.shapes = [params[i].shape for i in indices]
        self.offsets = []
        n = 0
        for i in indices:
            self.offsets.append(n)
            n += params[i].numel()
        self.flat = torch.zeros(n, dtype=params[indices[0]].dtype,
                                device=params[indices[0]].device)
        self.views = self.views_of(self.flat)
        self.message = None                    # the MPI message over flat (DDP sets it)
        self.shared = None                     # its index in DDP's SharedBuckets, if there
        self.work = None                       # the reduction's request, or the hook's Future

    def views_of(self, flat):
        """Pieces of flat (the bucket's numel) shaped like each parameter."""
        return [flat[o:o + s.numel()].view(s) for o, s in zip(self.offsets, self.shapes)]


class _Pass:
    """What DDP keeps about the running reduction, outside Module.__setattr__ (a microsecond
    per assignment, twice a step)."""

    __slots__ = ("finish_queued",)

    def __init__(self):
        self.finish_queued = False         # its final callback is queued


def _buckets(params, limits):
    """The gradient buckets, assigned as PyTorch's reducer rebuilds them after the first
    iteration (distributed._compute_bucket_assignment_by_size over the order in which the
    gradients become ready), with the reverse of the registration order standing for that
    order: backward produces the last layers' gradients first.  limits: the size limits in
    bytes (Note [DDP reducer])."""
    from ... import distributed as dist
    order = list(reversed(range(len(params))))
    assignment, _ = dist._compute_bucket_assignment_by_size([params[i] for i in order], limits)
    return [_Bucket(b, [order[k] for k in ks], params) for b, ks in enumerate(assignment)]


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


def _check_devices(devices, device_ids, output_device, pg):
    """A module on the CPU (device_ids and output_device None, PyTorch's message otherwise) or
    on one CUDA device of an nccl group (they may name that device)."""
    kinds = {d.type for d in devices}
    if kinds <= {"cpu"}:
        if device_ids is not None or output_device is not None:
            raise ValueError("DistributedDataParallel device_ids and output_device arguments "
                             "only work with single-device/multiple-device GPU modules or CPU "
                             f"modules, but got device_ids {device_ids}, output_device "
                             f"{output_device}, and module parameters {{device(type='cpu')}}.")
        return
    if kinds != {"cuda"} or len(devices) != 1:
        raise ValueError(f"DistributedDataParallel's module must be on the CPU or on one CUDA "
                         f"device, got parameters on {sorted(str(d) for d in devices)}")
    (device,) = devices
    if pg.nccl is None:
        raise ValueError(f"DistributedDataParallel of a module on {device} needs the nccl "
                         "backend: init_process_group('nccl')")
    for given in list(device_ids or []) + ([output_device] if output_device is not None
                                           else []):
        index = given.index if hasattr(given, "index") else int(given)
        if len(device_ids or []) > 1 or index != device.index:
            raise ValueError(f"device_ids {device_ids} and output_device {output_device} "
                             f"must name the module's device, {device}")


def _verify_layout(pg, buckets, find_unused):
    """Raises on every rank when the ranks' gradient buckets differ: after this check the
    bucket reductions need no fingerprints (Note [DDP bucket channel])."""
    from ... import distributed as dist
    mine = ([(b.flat.numel(), str(b.flat.dtype)) for b in buckets], bool(find_unused))
    layouts = [None] * pg.size
    dist.all_gather_object(layouts, mine, group=pg)
    for r, theirs in enumerate(layouts):
        if theirs != mine:
            raise RuntimeError(
                f"DDP expects same model across all ranks, but rank {pg.ranks[pg.rank]} has "
                f"gradient buckets (numel, dtype) {mine[0]} and find_unused_parameters="
                f"{mine[1]}, while rank {pg.ranks[r]} has {theirs[0]} and "
                f"find_unused_parameters={theirs[1]}.")


class DistributedDataParallel(Module):
    """Runs `module` on every rank of `process_group` and averages the gradients during
    backward (Note [DDP reducer]).  A CPU module's buckets are reduced by MPI, and its
    device_ids and output_device must be None; a CUDA module (one device, the nccl backend)
    takes None or that device in both, and its buckets, on the device, are reduced by NCCL."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        import pytorchlite as torch
        from ... import distributed as dist
        from ...distributed import distributed_c10d as c10d
        from ...distributed._mpi_group import BucketChannel, debug_level
        pg = c10d._group(process_group)
        devices = {p.device for p in module.parameters()}
        _check_devices(devices, device_ids, output_device, pg)
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        # the default cap starts with a small bucket, so the first reduction starts early
        first = (dist._DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None
                 else self.bucket_bytes_cap)
        limits = [first, self.bucket_bytes_cap] if first < self.bucket_bytes_cap else \
            [self.bucket_bytes_cap]
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self._param_names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._buffers_to_sync = [b for _, b in module.named_buffers()]
        self._buckets = _buckets(self._params, limits)
        _verify_layout(pg, self._buckets, find_unused_parameters)
        if init_sync:
            for t in [p for _, p in module.named_parameters()] + self._buffers_to_sync:
                dist.broadcast(t.detach(), src=pg.ranks[0], group=pg)
        self._channel = BucketChannel(pg)
        detail = debug_level() == "DETAIL"
        for bucket in self._buckets:
            bucket.desc = (f"DDP bucket {bucket.index} all_reduce(numel={bucket.flat.numel()}, "
                           f"dtype={bucket.flat.dtype})")
            # the channel sums the flat tensor itself; 16-bit floats (summed as float32) and
            # every bucket with PTL_DISTRIBUTED_DEBUG=DETAIL take the fingerprinted all_reduce
            if (bucket.flat.dtype not in (torch.float16, torch.bfloat16) and not detail
                    and not bucket.flat.is_cuda):
                bucket.message = c10d._buf(bucket.flat)
        self._shared = None if gradient_as_bucket_view else self._share_buckets()
        views = [None] * len(self._params)
        for bucket in self._buckets:
            for i, view in zip(bucket.indices, bucket.views):
                views[i] = view
        self._comm_hook = None        # (state, hook) of register_comm_hook
        self._used = None             # find_unused_parameters: which parameters forward used
        self._pass = _Pass()          # the running reduction's state
        self._reducer = _C._Reducer(self._params, [b.indices for b in self._buckets], views,
                                    self._launch, bool(gradient_as_bucket_view))
        for bucket in self._buckets:
            if bucket.shared is not None:
                k = bucket.shared
                self._reducer.share(bucket.index, pg.rank,
                                    [torch.from_numpy(a) for a in self._shared.arrays[k]],
                                    [torch.from_numpy(f) for f in self._shared.flags[k]],
                                    pg.stall_s)
        self._set_scales()

    def _share_buckets(self):
        """Moves the buckets the channel sums into MPI shared-memory windows when the ranks
        can share them (Note [DDP shared-memory buckets]); the SharedBuckets, or None."""
        import pytorchlite as torch
        from ...distributed import distributed_c10d as c10d
        from ...distributed._shared_buckets import SharedBuckets
        summed = [b for b in self._buckets if b.message is not None and b.flat.dtype in
                  (torch.float32, torch.float64, torch.complex64, torch.complex128)]
        shared = SharedBuckets.create(self._channel, [b.flat.numpy().dtype for b in summed],
                                      [b.flat.numel() for b in summed])
        if shared is not None:
            rank = self.process_group.rank
            for k, bucket in enumerate(summed):
                bucket.flat = torch.from_numpy(shared.arrays[k][rank])
                bucket.views = bucket.views_of(bucket.flat)
                bucket.message = c10d._buf(bucket.flat)
                bucket.shared = k
        return shared

    def _set_scales(self):
        """The buckets the channel sums get their gradients divided by the world size as they
        are copied in (Note [DDP reducer]); the others are averaged by their reduction.  A
        world of one without a communication hook has nothing to reduce."""
        self._reducer.local = (self.process_group.size == 1 and self._comm_hook is None
                               and not self.gradient_as_bucket_view)
        self._reducer.shared = self._comm_hook is None
        for bucket in self._buckets:
            own_sum = bucket.message is not None and self._comm_hook is None
            self._reducer.set_scale(bucket.index, 1.0 / self.process_group.size
                                    if own_sum else 1.0)

    # ---- forward ----
    def forward(self, *inputs, **kwargs):
        import pytorchlite as torch
        if self._reducer.armed:
            raise RuntimeError(self._unfinished_message())
        if self._shared is not None and self._shared.freed:
            raise RuntimeError("DistributedDataParallel: its process group was destroyed "
                               "(destroy_process_group freed its gradient buckets)")
        if self.broadcast_buffers and self.require_forward_param_sync and self._buffers_to_sync:
            from ... import distributed as dist
            for b in self._buffers_to_sync:
                dist.broadcast(b.detach(), src=self.process_group.ranks[0],
                               group=self.process_group)
        out = self._modules["module"](*inputs, **kwargs)
        if self.require_backward_grad_sync and torch.is_grad_enabled():
            self._prepare_for_backward(out)
        return out

    def _unfinished_message(self):
        rank = self.process_group.rank
        missing = self._reducer.unready()
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
        r = self._reducer
        r.prepare()
        self._pass.finish_queued = False
        if self.find_unused_parameters:
            reached = _reached_parameters(_output_tensors(out))
            self._used = [id(p) in reached for p in self._params]
            for i, used in enumerate(self._used):
                if not used:
                    r.mark_ready(i)

    # ---- backward (Note [DDP reducer]) ----
    def _launch(self, b):
        """Sums bucket b, whose flat tensor holds its gradients, over the ranks: in the
        background, except the last bucket, whose result is needed at once (Note [DDP bucket
        channel]), after which the reduction finishes."""
        bucket = self._buckets[b]
        last = b == len(self._buckets) - 1
        running = self._pass
        if not running.finish_queued and _C._current_graph_task_id() >= 0:
            Variable._execution_engine.queue_callback(self._finish)
            running.finish_queued = True
        if self._comm_hook is not None:
            from ... import distributed as dist
            state, hook = self._comm_hook
            bucket.work = hook(state, dist.GradBucket(bucket, self._params, last))
            if not isinstance(bucket.work, Future):
                raise RuntimeError(f"the DDP communication hook must return a "
                                   f"torch.futures.Future, got {type(bucket.work).__name__}")
        elif bucket.shared is not None:
            bucket.work = self._shared.reduction(self._reducer, b, bucket.desc)
        elif bucket.message is not None:
            bucket.work = self._channel.all_reduce(bucket.message, bucket.desc, blocking=last)
        else:        # 16-bit floats, or DETAIL mode (Note [DDP bucket channel])
            from ... import distributed as dist
            bucket.work = dist.all_reduce(bucket.flat, op=dist.ReduceOp.AVG,
                                          group=self.process_group, async_op=True)
        if last and not running.finish_queued:
            self._finish()

    def _finish(self):
        r = self._reducer
        used = None
        if self._used is not None:
            import pytorchlite as torch
            from ...distributed.distributed_c10d import _buf
            counts = torch.tensor(self._used, dtype=torch.int32)
            self._channel.all_reduce(_buf(counts), "DDP used-parameter all_reduce",
                                     blocking=True).wait()
            used = counts.tolist()
        for bucket in self._buckets:
            if isinstance(bucket.work, Future):
                flat = _hook_result(bucket.work.wait(), bucket)
                r.write_grads(bucket.index, bucket.views_of(flat), used)
            else:
                bucket.work.wait()
                r.write_grads(bucket.index, None, used)
        r.armed = False

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
        self._set_scales()

    def _get_ddp_logging_data(self):
        return {"bucket_cap_bytes": self.bucket_bytes_cap,
                "num_buckets": len(self._buckets),
                "find_unused_parameters": self.find_unused_parameters}
