"""Parameters PyTorch 2.13 has that were missing here: Module.modules(remove_duplicate), the
lazy norms' bias, Tensor.dim_order(ambiguity_check).  Torch's answers are stored."""
import pytest

import pytorchlite as torch


def test_modules_keeps_duplicates_when_asked():
    relu = torch.nn.ReLU()
    seq = torch.nn.Sequential(relu, relu)
    assert len(list(seq.modules())) == 2
    assert len(list(seq.modules(remove_duplicate=False))) == 3


@pytest.mark.parametrize("lazy", [torch.nn.LazyBatchNorm1d, torch.nn.LazyInstanceNorm1d])
def test_lazy_norms_take_bias(lazy):
    m = lazy(bias=False)
    assert "bias=False" in repr(m)
    m(torch.randn(4, 3, 5))
    assert m.bias is None and m.weight.shape == (3,)
    with_bias = lazy()
    with_bias(torch.randn(4, 3, 5))
    assert with_bias.bias.shape == (3,)


def test_dim_order_ambiguity_check():
    x = torch.randn(2, 1, 3)
    assert x.dim_order() == (0, 1, 2)
    with pytest.raises(RuntimeError, match="^The tensor does not have unique dim order, or "
                                           "cannot map to exact one of the given memory "
                                           "formats.$"):
        x.dim_order(ambiguity_check=True)
    y = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert y.dim_order(ambiguity_check=True) == (0, 2, 3, 1)
    assert y.dim_order(ambiguity_check=[torch.channels_last, torch.contiguous_format]) == \
        (0, 2, 3, 1)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        x.dim_order(ambiguity_check=3)
