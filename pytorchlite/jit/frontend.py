"""torch.jit.frontend's exceptions: what jit.script raises for Python it cannot compile, with
the source line and a caret under the construct, as TorchScript prints them."""


class FrontendError(Exception):
    def __init__(self, source_range, msg):
        self.source_range = source_range
        self.msg = msg
        super().__init__(msg + ":\n" + source_range)


class NotSupportedError(FrontendError):
    """A construct TorchScript does not compile (keyword-only arguments with defaults...)."""


class UnsupportedNodeError(NotSupportedError):
    """A statement or expression kind the compiler has no rule for (lambda, try, global...)."""


__all__ = ["FrontendError", "NotSupportedError", "UnsupportedNodeError"]
