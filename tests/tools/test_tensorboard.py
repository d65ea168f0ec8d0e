"""pytorchlite.utils.tensorboard.SummaryWriter: the event files it writes are read back with
the tensorboard package's EventAccumulator, values compared with NumPy (histogram counts,
image pixels decoded from the PNG)."""
import os
import zlib

import numpy as np
import pytest

import pytorchlite as ptl

pytest.importorskip("tensorboard", reason="tensorboard is not installed (the `tools` extra)")
from pytorchlite.utils.tensorboard import SummaryWriter  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def read(path):
    acc = EventAccumulator(str(path), size_guidance={"images": 0, "histograms": 0,
                                                     "tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def png_pixels(data):
    """The pixels of a PNG written with filter 0 (ours), as HxWxC uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        chunks[kind] = chunks.get(kind, b"") + data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + data[pos + 8:pos + 8 + n]) == int.from_bytes(
            data[pos + 8 + n:pos + 12 + n], "big")
        pos += 12 + n
    w, h = int.from_bytes(chunks[b"IHDR"][:4], "big"), int.from_bytes(chunks[b"IHDR"][4:8], "big")
    c = {0: 1, 2: 3, 6: 4}[chunks[b"IHDR"][9]]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c)


def test_scalars_histogram_image_text_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(1000)
    img = rng.random((3, 4, 5))
    with SummaryWriter(tmp_path) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("acc", ptl.tensor(0.75), 9)
        w.add_histogram("weights", ptl.tensor(values), 3)
        w.add_image("img", ptl.tensor(img), 4)
        w.add_image("gray", ptl.tensor(img[0]), 5, dataformats="HW")
        w.add_image("hwc", ptl.tensor((img * 255).astype(np.uint8)).permute(1, 2, 0), 6,
                    dataformats="HWC")
        w.add_text("notes", "hello **world**", 7)
        w.add_scalars("run", {"train": 1.0, "val": ptl.tensor(2.0)}, 8)
        w.flush()
    acc = read(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [
        (s, np.float32(1.0 / (s + 1))) for s in range(5)]
    assert [(e.step, e.value) for e in acc.Scalars("acc")] == [(9, 0.75)]
    h = acc.Histograms("weights")[0]
    assert h.step == 3
    hv = h.histogram_value
    counts, edges = np.histogram(values, bins="auto")
    assert (hv.num, hv.min, hv.max) == (1000, values.min(), values.max())
    np.testing.assert_allclose([hv.sum, hv.sum_squares], [values.sum(), (values ** 2).sum()])
    assert list(hv.bucket) == counts.tolist()
    np.testing.assert_allclose(hv.bucket_limit, edges[1:])
    im = acc.Images("img")[0]
    assert (im.step, im.width, im.height) == (4, 5, 4)
    want = (np.clip(img, 0, 1) * 255).round().astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(png_pixels(im.encoded_image_string), want)
    np.testing.assert_array_equal(png_pixels(acc.Images("gray")[0].encoded_image_string)[..., 0],
                                  want[..., 0])
    np.testing.assert_array_equal(png_pixels(acc.Images("hwc")[0].encoded_image_string),
                                  (img * 255).astype(np.uint8).transpose(1, 2, 0))
    t = acc.Tensors("notes/text_summary")[0]
    assert t.step == 7 and list(t.tensor_proto.string_val) == [b"hello **world**"]
    for run, value in (("run_train", 1.0), ("run_val", 2.0)):
        assert [(e.step, e.value) for e in read(tmp_path / run).Scalars("run")] == [(8, value)]


def test_png_decodes_with_pillow(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")
    import io
    img = np.random.default_rng(1).random((3, 6, 7))
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", ptl.tensor(img), 0)
    data = read(tmp_path).Images("img")[0].encoded_image_string
    decoded = np.asarray(Image.open(io.BytesIO(data)))
    np.testing.assert_array_equal(decoded, (img * 255).round().astype(np.uint8).transpose(1, 2, 0))


def test_default_log_dir_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    with pytest.raises(ValueError, match="dataformats 'CHW' does not fit"):
        w.add_image("bad", ptl.zeros(4, 4))
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        w.add_image("bad", ptl.zeros(2, 4, 4))
    with pytest.raises(ValueError, match="The histogram is empty"):
        w.add_histogram("empty", ptl.zeros(0))
    with pytest.raises(NotImplementedError, match="add_graph"):
        w.add_graph(ptl.nn.Linear(2, 2), ptl.zeros(1, 2))
    w.close()
    w.close()
    assert os.listdir(w.get_logdir())
