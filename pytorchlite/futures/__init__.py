"""torch.futures: a Future holds the result of an asynchronous computation, such as a
collective started with async_op=True (Work.get_future()) or a DDP communication hook.
Mirrors torch/futures/__init__.py and c10's ivalue::Future.

A Future completes once, with a value (set_result) or an error (set_exception); wait() blocks
until then and returns the value or raises the error; then(callback) chains a new Future that
completes with callback(self) once this one completes (with the callback's exception, if it
raises).  Callbacks run in the thread that completes the Future, or at once when it already
has.  A Future made by Work.get_future() completes when its Work does: done(), wait() and
value() drive the Work, since MPI requests make progress only when a rank tests them."""
import threading
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Future", "collect_all", "wait_all"]


class Future(Generic[T]):
    """Future(*, devices=None): an empty future to complete with set_result/set_exception."""

    def __init__(self, *, devices=None):
        self._cond = threading.Condition()
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._devices = list(devices or [])

    # ---- completion ----
    def _poll(self):
        """Tests whatever completes this future (a Work) once; whether it has completed."""
        return self._done

    def _drive(self):
        """Blocks until the future completes (driving what completes it)."""
        with self._cond:
            while not self._done:
                self._cond.wait()

    def _complete(self, value, error):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result):
        """Completes the future with `result`; runs the callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Completes the future with the exception `result`: wait() and value() raise it."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    # ---- reading ----
    def done(self):
        """Whether the future has completed (with a value or an error)."""
        return self._poll()

    def wait(self):
        """Blocks until the future completes; returns its value or raises its error."""
        self._drive()
        return self.value()

    def value(self):
        """The value of a completed future (raises its error)."""
        if not self._poll():
            raise RuntimeError("value() called on a Future that has not completed: call wait() "
                               "first")
        if self._error is not None:
            raise self._error
        return self._value

    # ---- chaining ----
    def add_done_callback(self, callback):
        """Runs callback(self) once the future completes (at once when it has)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A new Future completed with callback(self) once this one completes; an exception
        the callback raises becomes the new future's error, a RuntimeError naming it (as
        PyTorch's)."""
        out = _Dependent([self])

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:   # the chained future carries the callback's error
                err = RuntimeError(f"Got the following error when running the callback: "
                                   f"{type(e).__name__}: {e}")
                err.__cause__ = e
                out._complete(None, err)
                return
            out._complete(result, None)

        self.add_done_callback(run)
        return out

    def __repr__(self):
        return f"<{type(self).__name__} done={self._done}>"


class _Dependent(Future):
    """A future completed by callbacks on `parents` (then, collect_all): testing or driving it
    tests or drives them, since a parent may be a Work that only progresses when asked."""

    def __init__(self, parents):
        super().__init__()
        self._parents = list(parents)

    def _poll(self):
        if not self._done:
            for f in self._parents:
                f._poll()
        return self._done

    def _drive(self):
        for f in self._parents:
            f._drive()
        super()._drive()


def collect_all(futures):
    """A Future that completes with the list of `futures` once every one has completed."""
    futures = list(futures)
    out = _Dependent(futures)
    if not futures:
        out.set_result([])
        return out
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out._complete(futures, None)

    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """Waits for every future; returns their values (raises the first error)."""
    return [f.wait() for f in collect_all(futures).wait()]
