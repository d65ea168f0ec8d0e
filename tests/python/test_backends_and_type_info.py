"""torch.finfo / iinfo, torch.broadcast_shapes, torch.backends, the matmul-precision and
determinism switches, torch.cuda's seeding functions without CUDA, and torch.nn.parallel:
golden values from the IEEE / two's-complement formats and NumPy, and PyTorch's own values
where it is installed."""
import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES, Raised, golden
from helpers import NO_CUDA_ERROR, torch

FLOATS = [ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64]
INTS = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.float32, ptl.float64])
def test_finfo_matches_numpy(dtype):
    f, ref = ptl.finfo(dtype), np.finfo(str(dtype).replace("torch.", ""))
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal) == (
        ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.tiny),
        float(ref.smallest_normal))
    assert f.resolution == 10.0 ** -ref.precision


def test_finfo_bfloat16_and_default():
    f = ptl.finfo(ptl.bfloat16)
    assert (f.bits, f.eps, f.tiny) == (16, 0.0078125, ptl.finfo(ptl.float32).tiny)
    assert f.max == float(np.float32(3.3895313892515355e+38))
    assert ptl.finfo() == ptl.finfo(ptl.float32) and ptl.finfo().dtype == "float32"
    assert repr(ptl.finfo(ptl.float32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")


@pytest.mark.parametrize("dtype, parts", [(ptl.complex64, ptl.float32),
                                          (ptl.complex128, ptl.float64)])
def test_finfo_of_complex_is_its_parts(dtype, parts):
    f, ref = ptl.finfo(dtype), np.finfo(str(dtype).replace("torch.", ""))
    assert f == ptl.finfo(parts) and f.dtype == str(parts).replace("torch.", "")
    assert (f.eps, f.max, f.tiny) == (float(ref.eps), float(ref.max), float(ref.tiny))


@pytest.mark.parametrize("dtype", INTS)
def test_iinfo_matches_numpy(dtype):
    i, ref = ptl.iinfo(dtype), np.iinfo(str(dtype).replace("torch.", ""))
    assert (i.bits, i.min, i.max, i.dtype) == (ref.bits, ref.min, ref.max, ref.dtype.name)
    assert repr(ptl.iinfo(ptl.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"


def test_type_info_errors():
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input type"):
        ptl.finfo(ptl.int32)
    with pytest.raises(TypeError, match=r"torch.iinfo\(\) requires an integer input type"):
        ptl.iinfo(ptl.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        ptl.iinfo(ptl.bool)
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input type"):
        ptl.finfo(ptl.bool)
    for lib in LIBRARIES:
        with pytest.raises(TypeError, match=r"^finfo\(\): argument 'type' \(position 1\) must "
                           "be torch.dtype, not int$"):
            lib.finfo(3)
        with pytest.raises(TypeError, match=r"^iinfo\(\): argument 'type' \(position 1\) must "
                           "be torch.dtype, not str$"):
            lib.iinfo("int8")


def test_type_info_matches_torch():
    fields = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    for d in FLOATS:
        f = ptl.finfo(d)
        t = golden(lambda: (lambda t: [repr(t)] + [getattr(t, k) for k in fields])(
            torch.finfo(getattr(torch, str(d).replace("torch.", "")))))
        assert repr(f) == t[0]
        for field, want in zip(fields, t[1:]):
            assert getattr(f, field) == want, (d, field)
    for d in INTS:
        i = ptl.iinfo(d)
        t = golden(lambda: (lambda t: (repr(t), t.bits, t.min, t.max, t.dtype))(
            torch.iinfo(getattr(torch, str(d).replace("torch.", "")))))
        assert (repr(i), i.bits, i.min, i.max, i.dtype) == t


SHAPES = [[(2, 1), (3,)], [2, (3, 1)], [], [(0,), (1,)], [(5, 1, 4), (3, 1), ()],
          [(1,), (1, 1, 1)], [(4, 0), (1, 1)]]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_broadcast_shapes_matches_numpy(shapes):
    got = ptl.broadcast_shapes(*shapes)
    assert isinstance(got, ptl.Size)
    assert tuple(got) == np.broadcast_shapes(*[(s,) if isinstance(s, int) else s for s in shapes])


def test_broadcast_shapes_errors():
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 4 at "
                                           r"-1! Mismatching argument at index 1 had \(3, 4\); "
                                           r"but expected shape should be broadcastable to "
                                           r"\[1, 2\]"):
        ptl.broadcast_shapes((2,), (3, 4))
    with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative"):
        ptl.broadcast_shapes((-1,))


def test_broadcast_shapes_matches_torch():
    for shapes in SHAPES + [[(2, 3), (4,)], [(2,), (3, 4)]]:
        expected = golden(lambda: torch.broadcast_shapes(*shapes))
        if isinstance(expected, Raised):
            assert expected.type_name == "RuntimeError"
            expected.check(lambda: ptl.broadcast_shapes(*shapes))
            continue
        assert tuple(ptl.broadcast_shapes(*shapes)) == tuple(expected)


def test_backend_flags_have_pytorch_defaults_and_can_be_set():
    b = ptl.backends
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32) == (
        True, False, False, True)
    assert b.cuda.matmul.allow_tf32 is False
    assert (b.cudnn.is_available(), b.mps.is_available(), b.mps.is_built()) == (False,) * 3
    assert b.opt_einsum.enabled is False and b.opt_einsum.is_available() is False
    assert b.cpu.get_cpu_capability() == ptl._C._config()["cpu_capability"]
    assert b.cuda.is_built() == ptl.cuda.is_built()
    b.cudnn.benchmark = True
    try:
        assert ptl.backends.cudnn.benchmark is True
    finally:
        b.cudnn.benchmark = False


def test_matmul_precision_and_determinism_switches():
    assert ptl.get_float32_matmul_precision() == "highest"
    try:
        ptl.set_float32_matmul_precision("high")
        assert ptl.get_float32_matmul_precision() == "high"
        assert ptl.backends.cuda.matmul.allow_tf32 is True
    finally:
        ptl.set_float32_matmul_precision("highest")
    assert ptl.backends.cuda.matmul.allow_tf32 is False
    with pytest.raises(RuntimeError, match="Invalid precision"):
        ptl.set_float32_matmul_precision("low")
    assert ptl.are_deterministic_algorithms_enabled() is False
    try:
        ptl.use_deterministic_algorithms(True, warn_only=True)
        assert ptl.are_deterministic_algorithms_enabled()
        assert ptl.is_deterministic_algorithms_warn_only_enabled()
    finally:
        ptl.use_deterministic_algorithms(False)
    with pytest.raises(TypeError, match="argument 'mode' .* must be bool, not str"):
        ptl.use_deterministic_algorithms("a")


def test_cuda_seeding_without_cuda():
    # programs seed CUDA unconditionally: without a CUDA backend that does nothing ...
    ptl.cuda.manual_seed(1)
    ptl.cuda.manual_seed_all(2)
    ptl.cuda.seed()
    ptl.cuda.seed_all()
    # ... and reading the device's generator needs CUDA
    for fn in (ptl.cuda.initial_seed, ptl.cuda.get_rng_state):
        with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
            fn()


def test_data_parallel_runs_the_module_unchanged():
    gen = np.random.default_rng(0)
    m = ptl.nn.Linear(3, 2)
    dp = ptl.nn.DataParallel(m)
    assert dp.module is m and dp.device_ids == []
    x = ptl.tensor(gen.standard_normal((4, 3)), dtype=ptl.float32)
    np.testing.assert_array_equal(dp(x).detach().numpy(), m(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert "(module): Linear(in_features=3, out_features=2, bias=True)" in repr(dp)
    np.testing.assert_array_equal(ptl.nn.parallel.data_parallel(m, x).detach().numpy(),
                                  m(x).detach().numpy())
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        ptl.nn.parallel.DistributedDataParallel(m)
