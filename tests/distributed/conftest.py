"""Fixtures of the distributed tests."""
import pytest


@pytest.fixture
def no_nccl_library(monkeypatch):
    """As where NCCL's library is not installed (Note [NCCL through ctypes])."""
    from pytorchlite.distributed import _nccl_group
    monkeypatch.setenv("PTL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2")
    monkeypatch.setattr(_nccl_group, "_lib", None)
    monkeypatch.setattr(_nccl_group, "_lib_error", None)
