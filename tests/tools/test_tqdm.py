"""tqdm over a DataLoader: the bar's total is len(loader) (batches, with and without
drop_last, for map-style data), and it counts every batch."""
import io
import math

import pytest

import pytorchlite as ptl
from pytorchlite.utils.data import DataLoader, TensorDataset

tqdm = pytest.importorskip("tqdm", reason="tqdm is not installed (the `tools` extra)").tqdm


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                     (0, 4, False), (5, 8, True)])
def test_tqdm_over_a_dataloader(n, batch_size, drop_last):
    data = TensorDataset(ptl.arange(float(n)), ptl.arange(n))
    loader = DataLoader(data, batch_size=batch_size, shuffle=n > 0, drop_last=drop_last)
    want = n // batch_size if drop_last else math.ceil(n / batch_size)
    out = io.StringIO()
    bar = tqdm(loader, file=out, mininterval=0, ascii=True)
    assert bar.total == len(loader) == want
    seen = sum(x.numel() for x, _ in bar)
    bar.close()
    assert seen == (want * batch_size if drop_last else n)
    assert (f"{want}/{want}" if want else "0it") in out.getvalue()


def test_tqdm_over_workers():
    loader = DataLoader(TensorDataset(ptl.arange(12.0)), batch_size=5, num_workers=2)
    out = io.StringIO()
    batches = list(tqdm(loader, file=out, mininterval=0, ascii=True))
    assert len(batches) == len(loader) == 3 and "3/3" in out.getvalue()
