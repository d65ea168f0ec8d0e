"""torch._dynamo.exc: the exceptions torch.compile raises for bad arguments and failing
backends."""


class TorchDynamoException(RuntimeError):
    """The base of torch.compile's own errors (a RuntimeError, as PyTorch's)."""


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


class BackendCompilerFailed(TorchDynamoException):
    """A callable backend raised inner_exception (chained as __cause__); the message starts
    as PyTorch's."""

    def __init__(self, backend_fn, inner_exception):
        self.backend_name = getattr(backend_fn, "__name__", "?")
        self.inner_exception = inner_exception
        super().__init__(f"backend={self.backend_name!r} raised:\n"
                         f"{type(inner_exception).__name__}: {inner_exception}")
