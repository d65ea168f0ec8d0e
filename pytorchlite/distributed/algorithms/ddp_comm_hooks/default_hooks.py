"""The built-in DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks.
default_hooks).  `state` is the process group to reduce over (None: the default group); each
hook returns a Future whose value is the bucket's averaged flat gradient."""
from ... import distributed_c10d as dist

__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]


def allreduce_hook(process_group, bucket):
    """Averages the bucket: divides by the world size, then an asynchronous SUM all_reduce."""
    tensor = bucket.buffer().div_(dist.get_world_size(process_group))
    work = dist.all_reduce(tensor, group=process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(dist.get_world_size(process_group))
    work = dist.all_reduce(compressed, group=process_group, async_op=True)

    def decompress(fut):
        return buffer.copy_(fut.value()[0])

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """allreduce_hook on a float16 copy of the bucket (half the bytes), cast back."""
    import pytorchlite as torch
    return _compress_hook(torch.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """allreduce_hook on a bfloat16 copy of the bucket, cast back."""
    import pytorchlite as torch
    return _compress_hook(torch.bfloat16, process_group, bucket)
