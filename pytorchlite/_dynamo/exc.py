"""torch._dynamo.exc: the exceptions torch.compile raises for bad arguments."""


class TorchDynamoException(RuntimeError):
    """The base of torch.compile's own errors (a RuntimeError, as PyTorch's)."""


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")
