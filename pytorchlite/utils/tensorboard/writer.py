"""SummaryWriter (torch/utils/tensorboard/writer.py): scalars, scalar groups, histograms,
images and text as TensorBoard events.  The events are the tensorboard package's protocol
buffers, written by its EventFileWriter; only the conversions from tensors are ours.
add_graph is not implemented."""
import os
import socket
import struct
import time
import zlib
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.histogram_pb2 import HistogramProto
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.summary.writer.event_file_writer import EventFileWriter

__all__ = ["SummaryWriter"]


def _numpy(x):
    """A float64 / uint8 ndarray from a tensor, an array or a Python number."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _png(hwc):
    """PNG bytes of an HxWxC uint8 array (C = 1, 3 or 4): filter 0 rows, zlib, CRC chunks."""
    h, w, c = hwc.shape
    color = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + hwc[row].tobytes() for row in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _image_hwc(img, dataformats):
    """The image as HxWxC uint8: floats are taken as [0, 1] and scaled by 255, as PyTorch's
    add_image does; dataformats names the axes (CHW, HWC, HW, WH)."""
    a = _numpy(img)
    fmt = dataformats.upper()
    if len(fmt) != a.ndim or sorted(fmt) not in (sorted("CHW"), sorted("HW")):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not fit an image of "
                         f"shape {a.shape}")
    if "C" not in fmt:
        a, fmt = a[..., None], fmt + "C"
    a = np.transpose(a, [fmt.index(k) for k in "HWC"])
    if a.shape[2] not in (1, 3, 4):
        raise ValueError(f"add_image: an image has 1, 3 or 4 channels, got {a.shape[2]}")
    if a.dtype != np.uint8:
        a = (np.clip(a.astype(np.float64), 0, 1) * 255).round().astype(np.uint8)
    return np.ascontiguousarray(a)


class SummaryWriter:
    """Writes events for TensorBoard into log_dir (default runs/<date>_<host><comment>)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, \
            filename_suffix
        self._writer = None
        self._scalar_writers = {}
        self._open()

    def _open(self):
        if self._writer is None:
            self._writer = EventFileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                           self.filename_suffix)
            start = Event(wall_time=time.time(), file_version="brain.Event:2")
            if self.purge_step is not None:
                start.step = self.purge_step
                start.session_log.status = 1          # SessionLog.START purges later steps
                self.purge_step = None
            self._writer.add_event(start)
        return self._writer

    def get_logdir(self):
        return self.log_dir

    def _event(self, summary, global_step, walltime, writer=None):
        event = Event(wall_time=time.time() if walltime is None else walltime,
                      summary=summary)
        if global_step is not None:
            event.step = int(global_step)
        (writer or self._open()).add_event(event)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        value = float(_numpy(scalar_value).reshape(-1)[0]) if not isinstance(
            scalar_value, (int, float)) else float(scalar_value)
        self._event(Summary(value=[Summary.Value(tag=tag, simple_value=value)]), global_step,
                    walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each entry goes to its own run, log_dir/<main_tag>_<tag>, under the tag main_tag,
        so TensorBoard draws them in one chart."""
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            writer = self._scalar_writers.get(path)
            if writer is None:
                writer = self._scalar_writers[path] = EventFileWriter(
                    path, self.max_queue, self.flush_secs, self.filename_suffix)
            value = float(_numpy(value).reshape(-1)[0])
            self._event(Summary(value=[Summary.Value(tag=main_tag, simple_value=value)]),
                        global_step, walltime, writer)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """bins: a count, a NumPy bin rule, or "tensorflow" (NumPy's "auto" here)."""
        a = _numpy(values).astype(np.float64).reshape(-1)
        if a.size == 0:
            raise ValueError("The histogram is empty, please file a bug report.")
        counts, edges = np.histogram(a, bins="auto" if bins == "tensorflow" else bins)
        if max_bins is not None and len(counts) > max_bins:
            counts, edges = np.histogram(a, bins=max_bins)
        hist = HistogramProto(min=float(a.min()), max=float(a.max()), num=int(a.size),
                              sum=float(a.sum()), sum_squares=float((a * a).sum()),
                              bucket_limit=edges[1:].tolist(), bucket=counts.tolist())
        self._event(Summary(value=[Summary.Value(tag=tag, histo=hist)]), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        hwc = _image_hwc(img_tensor, dataformats)
        image = Summary.Image(height=hwc.shape[0], width=hwc.shape[1],
                              colorspace=hwc.shape[2], encoded_image_string=_png(hwc))
        self._event(Summary(value=[Summary.Value(tag=tag, image=image)]), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        value = Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)
        self._event(Summary(value=[value]), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        raise NotImplementedError("SummaryWriter.add_graph is not implemented in pytorchlite "
                                  "(it needs torch.jit tracing)")

    def flush(self):
        if self._writer is not None:
            self._writer.flush()
        for writer in self._scalar_writers.values():
            writer.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for writer in self._scalar_writers.values():
            writer.close()
        self._scalar_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
