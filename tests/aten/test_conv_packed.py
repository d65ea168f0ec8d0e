"""The float32 convolution kernels of conv_packed.c (Note [Packed float32 convolution]) and
conv_packed_wgrad.c (Note [Packed weight gradient]): forward,
input gradient (a convolution with the flipped weight; for a stride, one per output phase: Note
[Input gradient by output phases]) and weight gradient, against the float64 path of the same op
(conv.c's im2col + GEMM, itself checked against NumPy and PyTorch in test_conv.py), across every
threshold of their blocking:

- windows: one per input channel and phase of the stride read (1 for stride 1, up to 4 for
  stride 2 in 2-D, 9 for stride 3; a 1x1 or dilated kernel reads fewer; for stride 1 without
  padding a copy of the image, "flat"), or compact ones, one
  per column offset of the kernel and phase of the other dims (Note [Compact windows for
  small images]): taken at COMPACT_NUM / COMPACT_DEN of the phase planes' lanes or fewer,
  for output rows of at most 16 pixels reading at most 32 padded elements;
- the forward's tiles store into the output directly where every flat index is an output
  pixel (compact 2-D, 1-D, 1x1 without padding) or the blocks are whole output rows
  (FWD_ROWS_CASES, Note [Row-aligned slivers]: rows computing FWD_ROWS_NUM / FWD_ROWS_DEN
  of the flat lanes and just over, fewer rows than blocks wanted, one row's windows at and
  over PK_BLOCK_BYTES), else through a buffer;
- PK_NR = 32 pixels per sliver (a short last sliver, of at most 16 pixels: one vector, or
  more), PK_MR = 8 output channels per forward tile (a short last tile); the AVX2 engine's
  tiles are PK2_MR = 6 channels x 16 pixels, a last tile of fewer channels computing only
  its rows (AVX2_CASES: 8 pixels or fewer: one vector);
- PK_BLOCK_BYTES: one or several pixel blocks per (sample, group); a batch smaller than
  twice the threads cuts its samples into more blocks (forward only);
- WG_MR = 8 taps x WG_NR = 32 output channels per weight-gradient tile (short ones), or
  WG_NARROW_MR = 16 taps x WG_NARROW_NR = 16 channels where a group has at most 16; on
  AVX2 WG2_MR = 6 x WG2_NR = 16, or WG2_NARROW_MR = 12 x WG2_NARROW_NR = 8 where a group
  has at most 8, over 8 x 8 transposes of the output gradient (WGRAD2_CASES);
- WG_BATCH_PIXELS: one or several samples summed by one tile;
- the partial weight gradients: one chunk per batch of tasks, from WG_CHUNKS_MIN to
  WG_CHUNKS, no more than the tasks (one chunk for one task), and the WG_CHUNK_BYTES cap
  down to WG_CHUNKS_MIN at most; chunk 0 sums into the result itself;
- groups, dilation, padding 0 / 1 / 2, 1-D and 3-D, transposed convolutions (their input
  gradient is a plain convolution), non-contiguous and channels_last inputs;
- the input gradient's output phases (PHASE_CASES): compact shared windows or phase planes,
  phases of unequal size or without pixels, phases no tap reaches (zeros), step-2 copies of
  runs of 8, 9, 16 and 20, step 3, and the cases left to img_fwd (dilation with a stride,
  padding past a phase's reach, a strided 1x1 kernel);
- the weight gradient by rows (ROWS_CASES, Note [Weight gradient by rows]): WG_ROWS_KDIM
  taps a group and one more, three channels a task up to WG_ROWS_WIDE_KDIM taps and two
  above, above WG_ROWS_KDIM up to WG_ROWS_SPLIT_KDIM (and one more: the tiles) four
  channels a task and blocks of 4, 5 and 6 taps (at most WG_ROWS_SPLIT_MP), short last
  tasks, output rows filling WG_ROWS_NUM / WG_ROWS_DEN of their vectors
  and just under, stride along the rows or only the columns, border rows and columns,
  groups, an odd channel count, 3-D, several blocks of WG_ROWS_BLOCK_BYTES samples, and on
  two threads the tasks in blocks of taps (a thread's share starting inside a group).

Every result is compared on one thread and on two; both must have the same bits (the
blocks, batches and chunks depend on the shape only).  The checks pass on any CPU; on one
with AVX2 but not AVX-512 every kernel runs the AVX2 engine (the weight gradient by rows is
AVX-512 only: there the tiles take it); test_fallback_path runs every case with
PTL_CPU_CAPABILITY=avx2 (the AVX2 engine on an AVX-512 machine) and a few with =default
(the im2col path)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from test_conv_wgrad_pairs import pairs_fit

SRC = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "src", "aten", "native", f)
    for f in ("conv_packed.c", "conv_packed_wgrad.c", "conv_wgrad_rows.c")]


def c_define(name):
    text = ""
    for path in SRC:
        with open(path) as f:
            text += f.read()
    m = re.search(r"^#define\s+%s\s+(.+?)\s*(?:/\*.*)?$" % name, text, re.M)
    expr = re.sub(r"\((?:int64_t|size_t)\)", "", m.group(1))
    assert re.fullmatch(r"[\d\s()+*<]+", expr), expr
    return eval(expr)


@pytest.fixture(autouse=True)
def direct_path_only():
    """These are the direct kernels' tests: the Winograd path (conv_winograd.c), which the
    automatic mode takes for some of their 3x3 stride-1 shapes, is switched off."""
    old = ptl._C._conv_winograd_mode(2)
    yield
    ptl._C._conv_winograd_mode(old)


PK_MR, PK_NR, PK_BLOCK_BYTES, PK2_MR = 8, 32, 256 * 1024, 6
WG_MR, WG_NR, WG_BATCH_PIXELS, WG_CHUNKS, WG_CHUNK_BYTES = 8, 32, 1024, 8, 1 << 25
WG_CHUNKS_MIN = 2
WG_NARROW_MR, WG_NARROW_NR = 16, 16
WG2_MR, WG2_NR, WG2_NARROW_MR, WG2_NARROW_NR = 6, 16, 12, 8
COMPACT_NUM, COMPACT_DEN = 9, 10
FWD_ROWS_NUM, FWD_ROWS_DEN = 9, 8
WG_ROWS_KDIM, WG_ROWS_NUM, WG_ROWS_DEN, WG_ROWS_BLOCK_BYTES = 12, 3, 4, 512 * 1024
WG_ROWS_WIDE_KDIM, WG_ROWS_SPLIT_MP, WG_ROWS_RUN = 9, 6, 64
ROWS_PLAIN_ACC = 24


def test_constants():
    """The thresholds this file's cases are built around are the kernel's."""
    for name in ("PK_MR", "PK2_MR", "PK_NR", "PK_BLOCK_BYTES", "WG_MR", "WG_NR", "WG_BATCH_PIXELS",
                 "WG_CHUNKS", "WG_CHUNK_BYTES", "WG_NARROW_MR", "WG_NARROW_NR", "COMPACT_NUM",
                 "COMPACT_DEN", "WG_ROWS_KDIM", "WG_ROWS_NUM", "WG_ROWS_DEN",
                 "WG_ROWS_BLOCK_BYTES", "WG_ROWS_WIDE_KDIM", "WG_ROWS_RUN", "ROWS_PLAIN_ACC",
                 "WG_ROWS_SPLIT_MP", "WG_CHUNKS_MIN", "WG2_MR",
                 "WG2_NR", "WG2_NARROW_MR", "WG2_NARROW_NR", "FWD_ROWS_NUM", "FWD_ROWS_DEN"):
        assert c_define(name) == globals()[name], name


def layout(xs, ws, stride, pad, dil, groups):
    """The kernel's windows of one (sample, group) (cols_init): the output's extents (padded
    to three dims), windows per channel, flat row width, 1 + the last output pixel's flat
    index, whether the layout is compact (Note [Compact windows for small images]), the
    largest tap offset and the channels per group."""
    nd = len(xs) - 2
    k, img = list(ws[2:]), list(xs[2:])
    out = [(img[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    k, img, out = [1] * (3 - nd) + k, [1] * (3 - nd) + img, [1] * (3 - nd) + out
    pad, dil = [0] * (3 - nd) + list(pad), [1] * (3 - nd) + list(dil)
    st = [1] * (3 - nd) + list(stride)
    cpg = xs[1] // groups
    hq, wplane = [-(-(img[i] + 2 * pad[i]) // st[i]) for i in (1, 2)]

    def span_of(wq):
        return ((out[0] - 1) * hq + out[1] - 1) * wq + out[2]

    fits = out[2] <= 16 and (k[2] - 1) * dil[2] + (out[2] - 1) * st[2] < 32
    compact = fits and (-(-span_of(out[2]) // 16) * COMPACT_DEN
                        <= -(-span_of(wplane) // 16) * COMPACT_NUM)
    wq = out[2] if compact else wplane
    taps = [(kz * dil[0], ky * dil[1], kx * dil[2]) for kz in range(k[0])
            for ky in range(k[1]) for kx in range(k[2])]
    nph = len({(t[0] % st[0], t[1] % st[1], t[2] if compact else t[2] % st[2]) for t in taps})
    reach = max(((t[0] // st[0]) * hq + t[1] // st[1]) * wq + (0 if compact else t[2] // st[2])
                for t in taps)
    return out, nph, wq, span_of(wq), compact, reach, cpg


def blocking(xs, ws, stride, pad, dil, groups, min_blocks=1):
    """The kernel's blocking of one (sample, group) by slivers (cols_init): windows per
    channel, pixels per block, blocks, pixels in all (1 + the last output pixel's flat
    index), and whether the layout is compact."""
    _, nph, _, span, compact, reach, cpg = layout(xs, ws, stride, pad, dil, groups)
    per = max((PK_BLOCK_BYTES // (cpg * nph * 4) - reach) // PK_NR, 1)
    nsl = -(-span // PK_NR)
    nblk = min(max(-(-nsl // per), min_blocks), nsl)
    nq = -(-nsl // nblk) * PK_NR
    return nph, nq, -(-span // nq), span, compact


def fwd_rows(xs, ws, stride, pad, dil, groups, min_blocks=1):
    """Whether the forward's blocks are output rows (Note [Row-aligned slivers]), and then
    rows per block and blocks; min_blocks is ceil(2 * threads / (samples * groups)), 1 from
    two tasks a thread."""
    out, nph, wq, span, compact, reach, cpg = layout(xs, ws, stride, pad, dil, groups)
    row_lanes, nrows = -(-out[2] // 16) * 16, out[1]
    room = PK_BLOCK_BYTES // (cpg * nph * 4) - reach
    if (compact or out[0] != 1 or nrows < 2 or nrows < min_blocks or room < row_lanes
            or nrows * row_lanes * FWD_ROWS_DEN > -(-span // 16) * 16 * FWD_ROWS_NUM):
        return False, None, None
    per = max((room - (row_lanes - wq)) // wq, 1)
    nblk = min(max(-(-nrows // per), min_blocks), nrows)
    rpb = -(-nrows // nblk)
    return True, rpb, -(-nrows // rpb)


def wgrad_chunks(xs, ws, stride, pad, dil, groups):
    """(samples per tile, chunks) of the weight gradient."""
    _, nq, nblk, _, _ = blocking(xs, ws, stride, pad, dil, groups)
    n, co = xs[0], ws[0]
    kdim = int(np.prod(ws[1:]))
    batch = min(max(WG_BATCH_PIXELS // nq, 1), n)
    ntasks = n * groups * nblk
    most = WG_CHUNK_BYTES // (co * kdim * 4)
    return batch, min(max(min(ntasks // batch, WG_CHUNKS, most), WG_CHUNKS_MIN), ntasks)


# (x shape, w shape, stride, padding, dilation, groups, what it crosses)
CASES = [
    ((2, 3, 9, 43), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, short sliver, short forward tile, one weight-gradient tile"),
    ((3, 32, 16, 16), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, the benchmark's 32->64, two channel slivers of the weight gradient"),
    ((1, 16, 17, 17), (24, 16, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "stride 1, padding 0, one sample: cut into blocks for the threads"),
    ((2, 8, 13, 13), (40, 8, 3, 3), (1, 1), (2, 2), (2, 2), 1,
     "stride 1, dilation 2, padding 2, 40 channels: a short second channel sliver"),
    ((2, 64, 40, 40), (16, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, windows over PK_BLOCK_BYTES: several blocks per sample"),
    ((2, 64, 40, 40), (16, 64, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "stride 1, padding 0: flat windows (copies of the image) in several blocks, the last "
     "past the image's end"),
    ((9, 4, 8, 8), (8, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, 8x8: weight-gradient tiles over several samples, 9 tasks in WG_CHUNKS_MIN "
     "chunks (a batch cut at a chunk's end)"),
    ((20, 2, 6, 6), (3, 2, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "stride 1 1x1, 20 tasks in 2 chunks, kdim 2 (short tap tile)"),
    ((9, 2, 32, 32), (4, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, 32x32: one sample a batch, 9 tasks in WG_CHUNKS chunks"),
    ((1, 48, 1, 1), (256, 3, 1, 1), (1, 1), (0, 0), (1, 1), 16,
     "1x1 groups 16, one sample: 16 tasks, 8 chunks wanted"),
    ((1, 12288, 1, 1), (2048, 768, 1, 1), (1, 1), (0, 0), (1, 1), 16,
     "1x1 groups 16: partial gradients over WG_CHUNK_BYTES, fewer chunks"),
    ((2, 2048, 1, 1), (2050, 2048, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "1x1, a gradient over half of WG_CHUNK_BYTES: still WG_CHUNKS_MIN chunks"),
    ((2, 12, 9, 10), (12, 1, 3, 3), (1, 1), (1, 1), (1, 1), 12,
     "stride 1, depthwise (groups 12)"),
    ((3, 6, 10, 7), (9, 2, 3, 2), (1, 1), (1, 0), (1, 2), 3,
     "stride 1, groups 3, rectangular kernel and dilation"),
    ((2, 8, 15, 35), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "stride 2 (4 phases), short sliver"),
    ((2, 6, 13, 21), (10, 6, 3, 3), (2, 1), (0, 1), (1, 1), 1,
     "stride (2, 1) (2 phases)"),
    ((2, 3, 38, 37), (20, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "stride 2 (4 phases), output rows of 19 (stride-2 runs over two vectors, padding at both "
     "ends), 20 channels (a short transpose block)"),
    ((2, 32, 66, 66), (8, 32, 3, 3), (2, 2), (0, 0), (1, 1), 1,
     "stride 2 (4 phases), windows over PK_BLOCK_BYTES: several blocks"),
    ((3, 4, 12, 50), (6, 2, 5, 5), (3, 3), (2, 2), (1, 1), 2,
     "stride 3 (9 phases), groups 2, 5x5"),
    ((3, 3, 12, 12), (16, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, 3 -> 16 (a stem): narrow weight-gradient tiles, kdim 27 (a short tap tile)"),
    ((2, 4, 9, 9), (17, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, 17 channels: the wide weight-gradient tile, short"),
    ((4, 6, 16, 15), (10, 6, 1, 1), (2, 2), (0, 0), (1, 1), 1,
     "stride 2 1x1 (1 phase of 4 read): the ResNet shortcut"),
    ((4, 6, 16, 15), (10, 3, 1, 1), (2, 2), (0, 0), (1, 1), 2,
     "groups 2, stride 2 1x1: the shortcut's weight gradient on the tiles"),
    ((2, 5, 15, 35), (6, 5, 3, 3), (2, 2), (2, 2), (2, 2), 1,
     "stride 2, dilation 2 (1 phase of 4 read, taps 1 apart in it)"),
    ((8, 512, 4, 4), (288, 512, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "stride 1, a large gradient: 8 samples in one batch, WG_CHUNKS_MIN chunks"),
    ((3, 32, 13, 13), (64, 32, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "compact: 13x13, 32 -> 64 (the CNN's second convolution; its input gradient is a "
     "compact 13x13 output of 11x11 with padding 2)"),
    ((2, 8, 15, 15), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "compact: stride 2 (6 windows), rows reading 17 padded elements (two loads)"),
    ((2, 8, 15, 15), (16, 4, 3, 3), (2, 2), (1, 1), (1, 1), 2,
     "groups 2, compact, stride 2: the weight gradient on the tiles, not by row pairs"),
    ((3, 4, 12, 12), (6, 2, 5, 5), (3, 3), (2, 2), (1, 1), 2,
     "compact: stride 3, groups 2, 5x5 (15 windows)"),
    ((2, 5, 15, 15), (6, 5, 3, 3), (2, 2), (2, 2), (2, 2), 1,
     "compact: stride 2, dilation 2 (3 windows)"),
    ((2, 6, 15, 15), (6, 3, 3, 3), (2, 2), (2, 2), (2, 2), 2,
     "groups 2, compact, stride 2, dilation 2: the weight gradient on the tiles"),
    ((2, 5, 12, 11), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "compact at the ratio: 9 lane vectors for the phase planes' 10"),
    ((2, 5, 11, 14), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "phase planes just over the ratio: 10 lane vectors for 11"),
    ((2, 3, 9, 16), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "compact: output rows of 16 pixels"),
    ((2, 3, 8, 17), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "phase planes: output rows of 17 pixels (the ratio met)"),
    ((2, 2, 6, 32), (3, 2, 3, 3), (1, 1), (0, 0), (1, 8), 1,
     "compact: a row reads 32 padded elements (dilation 8)"),
    ((2, 2, 6, 33), (3, 2, 3, 2), (1, 1), (0, 0), (1, 17), 1,
     "phase planes: a row would read 33 padded elements (dilation 17, the ratio met)"),
    ((1, 16, 13, 13), (24, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "compact, one sample cut into blocks for the threads: rows split between blocks"),
    ((2, 160, 13, 13), (8, 160, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "compact, windows over PK_BLOCK_BYTES: several blocks per sample"),
    ((2, 3, 40, 3), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "compact: output rows of one pixel"),
]


def conv_all(x, w, b, stride, pad, dil, groups, gy):
    """y, dx, dw, db of F.conv{1,2,3}d as numpy float64."""
    x = x.detach().requires_grad_()
    w = w.detach().requires_grad_()
    b = b.detach().requires_grad_()
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    y = conv(x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)
    y.backward(gy.to(y.dtype))
    return [t.detach().double().numpy() for t in (y, x.grad, w.grad, b.grad)]


def check_case(xs, ws, stride, pad, dil, groups, seed, make_x=None):
    gen = np.random.default_rng(seed)
    x = gen.standard_normal(xs)
    w = gen.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    b = gen.standard_normal(ws[0])
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(xs)]
    yshape = tuple(conv(ptl.tensor(x), ptl.tensor(w), stride=stride, padding=pad, dilation=dil,
                        groups=groups).shape)
    gy = gen.standard_normal(yshape)
    ref = conv_all(ptl.tensor(x), ptl.tensor(w), ptl.tensor(b), stride, pad, dil, groups,
                   ptl.tensor(gy))
    threads = ptl.get_num_threads()
    results = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            xt = ptl.tensor(x, dtype=ptl.float32)
            if make_x is not None:
                xt = make_x(xt)
            results.append(conv_all(xt, ptl.tensor(w, dtype=ptl.float32),
                                    ptl.tensor(b, dtype=ptl.float32), stride, pad, dil,
                                    groups, ptl.tensor(gy, dtype=ptl.float32)))
    finally:
        ptl.set_num_threads(threads)
    for name, r, got1, got2 in zip(("forward", "input grad", "weight grad", "bias grad"), ref,
                                   *results):
        scale = max(np.abs(r).max(initial=0.0), 1.0)
        np.testing.assert_allclose(got1, r, rtol=0, atol=2e-5 * scale, err_msg=name)
        np.testing.assert_array_equal(got1, got2, err_msg=name + ": 1 vs 2 threads")


@pytest.mark.parametrize("case", CASES, ids=[c[-1] for c in CASES])
def test_conv2d_packed_thresholds(case):
    xs, ws, stride, pad, dil, groups, _ = case
    check_case(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws))


def flat_windows(xs, ws, stride, pad, dil, groups):
    """Whether the windows are copies of the image (cols_init's flat)."""
    return not blocking(xs, ws, stride, pad, dil, groups)[4] and set(stride) == {1} and \
        set(pad) == {0}


def test_cases_cross_their_thresholds():
    """Each case is where its label says: the blockings below are the kernel's."""
    by = {c[-1]: c[:-1] for c in CASES}
    case = by["stride 1, padding 0: flat windows (copies of the image) in several blocks, the "
              "last past the image's end"]
    _, nq, nblk, _, _ = blocking(*case)
    reach = 2 * case[0][3] + 2
    assert flat_windows(*case) and nblk == 2 and nq + -(-(nq + reach) // 16) * 16 > \
        case[0][2] * case[0][3]
    assert flat_windows(*by["stride 1 1x1, 20 tasks in 2 chunks, kdim 2 (short tap tile)"])
    assert not flat_windows(*by["stride 2 1x1 (1 phase of 4 read): the ResNet shortcut"])
    nph, nq, nblk, _, compact = blocking(*by["stride 1, windows over PK_BLOCK_BYTES: several "
                                             "blocks per sample"])
    assert nph == 1 and nblk >= 2 and not compact
    nph, nq, nblk, _, compact = blocking(*by["stride 2 (4 phases), windows over PK_BLOCK_BYTES: "
                                             "several blocks"])
    assert nph == 4 and nblk >= 2 and not compact
    case = by["stride 1, padding 0, one sample: cut into blocks for the threads"]
    assert blocking(*case, min_blocks=4)[2] == 4 and blocking(*case)[2] == 1
    assert_weight_grad_chunks(by)
    for label, nph in (("stride 2 (4 phases), short sliver", 4),
                       ("stride 3 (9 phases), groups 2, 5x5", 9),
                       ("stride 2 1x1 (1 phase of 4 read): the ResNet shortcut", 1),
                       ("stride 2, dilation 2 (1 phase of 4 read, taps 1 apart in it)", 1)):
        assert blocking(*by[label])[0] == nph and not blocking(*by[label])[4], label
    # last slivers of the forward: 19 pixels (two vectors), 8 (one vector)
    for label, nph, tail in (
            ("stride 1, short sliver, short forward tile, one weight-gradient tile", 1, 19),
            ("stride (2, 1) (2 phases)", 2, 8)):
        f, nq, nblk, span, compact = blocking(*by[label])
        assert f == nph and nblk == 1 and span % PK_NR == tail and not compact, \
            (label, f, nblk, span % PK_NR)
    assert by["stride 1, dilation 2, padding 2, 40 channels: a short second channel sliver"][1][0] \
        % WG_NR != 0
    # the narrow weight-gradient tile up to WG_NARROW_NR channels a group, the wide one above
    ws = by["stride 1, 3 -> 16 (a stem): narrow weight-gradient tiles, kdim 27 (a short tap "
            "tile)"][1]
    assert ws[0] == WG_NARROW_NR and np.prod(ws[1:]) % WG_NARROW_MR != 0
    assert by["stride 1, 17 channels: the wide weight-gradient tile, short"][1][0] \
        == WG_NARROW_NR + 1


def assert_weight_grad_chunks(by):
    """The chunk counts of the weight gradient: one for one task, WG_CHUNKS_MIN, between,
    WG_CHUNKS, and the WG_CHUNK_BYTES cap between them and at WG_CHUNKS_MIN."""
    def chunks(label):
        (case,) = [c for lb, c in by.items() if lb.startswith(label)]
        ntasks = case[0][0] * case[5] * blocking(*case)[2]
        return ntasks, wgrad_chunks(*case)

    assert chunks("stride 1, padding 0, one sample") == (1, (1, 1))
    assert chunks("stride 1, 8x8") == (9, (9, WG_CHUNKS_MIN))
    assert chunks("stride 1 1x1, 20 tasks") == (20, (16, WG_CHUNKS_MIN))
    assert chunks("stride 1, groups 3")[1][1] == 3 > WG_CHUNKS_MIN
    assert chunks("stride 1, 32x32: one sample a batch") == (9, (1, WG_CHUNKS))
    assert chunks("1x1 groups 16, one sample") == (16, (1, WG_CHUNKS))
    ntasks, (_, n) = chunks("1x1 groups 16: partial gradients over WG_CHUNK_BYTES")
    assert ntasks == 16 and WG_CHUNKS_MIN < n < WG_CHUNKS
    (case,) = [c for lb, c in by.items() if lb.startswith("1x1, a gradient over half")]
    assert WG_CHUNK_BYTES // (np.prod(case[1]) * 4) < WG_CHUNKS_MIN
    assert chunks("1x1, a gradient over half") == (2, (2, WG_CHUNKS_MIN))


def lanes(xs, ws, stride, pad, dil, compact):
    """For a 2-D convolution: the tiles' lane vectors for one (sample, group) in either
    layout, the output's width, and the last padded column (from 0) that a row reads."""
    out = [(xs[2 + i] + 2 * pad[i] - dil[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1
           for i in range(2)]
    wq = out[1] if compact else -(-(xs[3] + 2 * pad[1]) // stride[1])
    span = (out[0] - 1) * wq + out[1]
    return -(-span // 16), out[1], (ws[3] - 1) * dil[1] + (out[1] - 1) * stride[1]


def test_compact_cases_cross_their_thresholds():
    """The compact layout's cases are where their labels say, each threshold met exactly on
    one side and missed on the other."""
    by = {c[-1]: c[:-1] for c in CASES}

    def case(prefix):
        (label,) = [k for k in by if k.startswith(prefix)]
        return by[label]

    def ratio(c):
        return lanes(*c[:5], True)[0], lanes(*c[:5], False)[0]

    c = case("compact at the ratio")
    assert ratio(c) == (9, 10) and blocking(*c)[4]
    c = case("phase planes just over the ratio")
    assert ratio(c) == (10, 11) and not blocking(*c)[4]
    assert 9 * COMPACT_DEN == 10 * COMPACT_NUM and 10 * COMPACT_DEN > 11 * COMPACT_NUM
    c = case("compact: output rows of 16 pixels")
    assert lanes(*c[:5], True)[1] == 16 and blocking(*c)[4]
    c = case("phase planes: output rows of 17 pixels")
    comp, flat = ratio(c)
    assert lanes(*c[:5], True)[1] == 17 and comp * COMPACT_DEN <= flat * COMPACT_NUM
    assert not blocking(*c)[4]
    c = case("compact: a row reads 32 padded elements")
    assert lanes(*c[:5], True)[2] == 31 and blocking(*c)[4]
    c = case("phase planes: a row would read 33")
    comp, flat = ratio(c)
    assert lanes(*c[:5], True)[2] == 32 and comp * COMPACT_DEN <= flat * COMPACT_NUM
    assert not blocking(*c)[4]
    for prefix, nph in (("compact: 13x13", 3), ("compact: stride 2 (6", 6),
                        ("compact: stride 3", 15), ("compact: stride 2, dilation 2", 3),
                        ("compact: output rows of one", 3)):
        assert blocking(*case(prefix))[0] == nph and blocking(*case(prefix))[4], prefix
    # the input gradient of the 13x13 case: 11x11 with padding 2, flipped weight
    assert blocking((3, 64, 11, 11), (32, 64, 3, 3), (1, 1), (2, 2), (1, 1), 1)[4]
    _, nq, nblk, _, compact = blocking(*case("compact, one sample cut"), min_blocks=4)
    assert compact and nblk > 1 and nq % 13 != 0
    _, nq, nblk, _, compact = blocking(*case("compact, windows over PK_BLOCK_BYTES"))
    assert compact and nblk > 1 and nq % 11 != 0
    # the forward's tiles store straight into the output where every flat index is a pixel
    # (compact 2-D); a compact 3-D layout keeps the rows past the output's height (a 6x6
    # output read from planes 8 high: 228 flat indices for 180 pixels) and copies
    assert blocking((2, 3, 5, 6, 7), (4, 3, 3, 3, 2), (1, 1, 1), (1, 1, 0), (1, 1, 1), 1)[3:] \
        == (228, True)
    # the 8x8 case is compact: 64 pixels in 64 lanes
    _, nq, nblk, span, compact = blocking(*case("stride 1, 8x8"))
    assert compact and span == 64 and nblk == 1


# The forward by rows (Note [Row-aligned slivers]), 2-D unless said; each also runs the
# input gradient (for stride 1 the same kind of convolution) and the weight gradient.
FWD_ROWS_CASES = [
    ((2, 3, 32, 32), (32, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows: 32x32, 3 -> 32 (the benchmark's first layer), rows of one whole sliver"),
    ((2, 3, 3, 40), (10, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows at the ratio: 144 lanes for the flat 128, rows of a sliver and 8 pixels"),
    ((2, 3, 4, 24), (10, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "flat slivers just over the ratio: 128 lanes for the flat 112"),
    ((2, 3, 5, 48), (10, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows: rows of 48 (a sliver and a half one)"),
    ((2, 4, 4, 62), (9, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows: rows of 62 (a short last sliver of 30, two masked vectors)"),
    ((2, 64, 29, 64), (8, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows, windows over PK_BLOCK_BYTES: 29 rows in blocks of 10 (13 fit), a last of 9"),
    ((2, 64, 3, 320), (4, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows: one row's windows within PK_BLOCK_BYTES, a block a row"),
    ((2, 64, 3, 340), (4, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "flat slivers: one row's windows over PK_BLOCK_BYTES"),
    ((1, 4, 30, 32), (8, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "by rows, one sample cut into blocks of rows for the threads (a short last block)"),
    ((1, 3, 3, 32), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "3 rows: by rows on one thread, flat slivers on two (4 blocks wanted)"),
    ((2, 3, 34, 34), (6, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "by rows over flat windows (stride 1, padding 0)"),
    ((2, 3, 64, 64), (16, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "by rows, stride 2 (4 phases)"),
    ((2, 3, 3, 6, 32), (4, 3, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1,
     "by rows, 3-D with an output one deep"),
    ((2, 3, 4, 6, 32), (4, 3, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1,
     "flat slivers, 3-D with an output two deep"),
]


@pytest.mark.parametrize("case", FWD_ROWS_CASES, ids=[c[-1] for c in FWD_ROWS_CASES])
def test_fwd_rows(case):
    xs, ws, stride, pad, dil, groups, _ = case
    check_case(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws))


def test_fwd_rows_cases_cross_their_thresholds():
    """Each case of FWD_ROWS_CASES is where its label says, each threshold met on one side
    and missed on the other: the layouts below are the kernel's."""
    by = {c[-1]: c[:-1] for c in FWD_ROWS_CASES}

    def case(prefix):
        (label,) = [k for k in by if k.startswith(prefix)]
        return by[label]

    def lane_counts(c):
        out, _, _, span, _, _, _ = layout(*c)
        return out[1] * -(-out[2] // 16) * 16, -(-span // 16) * 16

    assert fwd_rows(*case("by rows: 32x32")) == (True, 32, 1)
    assert lane_counts(case("by rows: 32x32")) == (1024, 1088)
    assert lane_counts(case("by rows at the ratio")) == (144, 128)
    assert 144 * FWD_ROWS_DEN == 128 * FWD_ROWS_NUM and fwd_rows(*case("by rows at the"))[0]
    assert lane_counts(case("flat slivers just over")) == (128, 112)
    assert 128 * FWD_ROWS_DEN > 112 * FWD_ROWS_NUM
    assert not fwd_rows(*case("flat slivers just over"))[0]
    for prefix, width in (("by rows: rows of 48", 48), ("by rows: rows of 62", 62)):
        assert fwd_rows(*case(prefix))[0] and layout(*case(prefix))[0][2] == width
    c = case("by rows, windows over")
    out, nph, wq, _, _, reach, cpg = layout(*c)
    assert (PK_BLOCK_BYTES // (cpg * nph * 4) - reach - (64 - wq)) // wq == 13
    assert fwd_rows(*c) == (True, 10, 3)
    c = case("by rows: one row's windows within")
    out, nph, wq, _, _, reach, cpg = layout(*c)
    room = PK_BLOCK_BYTES // (cpg * nph * 4) - reach
    assert fwd_rows(*c) == (True, 1, 3) and room >= 320 and room - 320 < wq
    c = case("flat slivers: one row's windows over")
    out, nph, wq, span, _, reach, cpg = layout(*c)
    assert PK_BLOCK_BYTES // (cpg * nph * 4) - reach < -(-out[2] // 16) * 16
    assert out[1] * 352 * FWD_ROWS_DEN <= -(-span // 16) * 16 * FWD_ROWS_NUM
    assert not fwd_rows(*c)[0]
    c = case("by rows, one sample cut")
    assert fwd_rows(*c, min_blocks=4) == (True, 8, 4) and fwd_rows(*c, min_blocks=2) == \
        (True, 15, 2)
    c = case("3 rows")
    assert fwd_rows(*c, min_blocks=2)[0] and not fwd_rows(*c, min_blocks=4)[0]
    assert lane_counts(c)[0] < lane_counts(c)[1]
    c = case("by rows over flat windows")
    assert flat_windows(*c) and fwd_rows(*c) == (True, 32, 1)
    c = case("by rows, stride 2")
    assert layout(*c)[1] == 4 and fwd_rows(*c)[0]
    assert fwd_rows(*case("by rows, 3-D"))[0]
    c = case("flat slivers, 3-D")
    assert not fwd_rows(*c)[0] and layout(*c)[0][0] == 2 and not layout(*c)[4]
    # the flat sliver cases keep their layout: 17 x 33 is 18 rows of 48 lanes for the flat
    # 1096 (over the ratio); the 32x32 weight-gradient case is by rows
    assert not fwd_rows((2, 5, 15, 35), (6, 5, 3, 3), (2, 2), (2, 2), (2, 2), 1)[0]
    assert fwd_rows((9, 2, 32, 32), (4, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1)[0]


@pytest.mark.parametrize("nd", [1, 3])
def test_conv_packed_1d_3d(nd):
    if nd == 1:
        check_case((3, 5, 40), (7, 5, 3), (1,), (1,), (1,), 1, seed=1)
        check_case((3, 5, 40), (7, 5, 4), (2,), (2,), (1,), 1, seed=2)
    else:
        check_case((2, 3, 5, 6, 7), (4, 3, 3, 3, 2), (1, 1, 1), (1, 1, 0), (1, 1, 1), 1, seed=3)
        check_case((2, 4, 6, 5, 7), (6, 2, 2, 3, 3), (2, 1, 2), (0, 1, 1), (1, 2, 1), 2, seed=4)


@pytest.mark.parametrize("seed", range(4))
def test_conv_packed_random_geometry(seed):
    """Random 1-D/2-D/3-D geometries: strides 1-3 per dim (1 to 27 phases, of which a kernel
    may read few), dilation, padding, groups, batch 0-2, every result against the float64
    path on 1 and 2 threads."""
    gen = np.random.default_rng(100 + seed)
    for _ in range(12):
        nd = int(gen.integers(1, 4))
        stride, dil = tuple(gen.integers(1, 4, nd)), tuple(gen.integers(1, 3, nd))
        k, pad = gen.integers(1, 4, nd), tuple(gen.integers(0, 3, nd))
        groups = int(gen.integers(1, 3))
        img = [int(gen.integers(1, 10)) + (k[i] - 1) * dil[i] for i in range(nd)]
        xs = (int(gen.integers(0, 3)), groups * int(gen.integers(1, 4)), *img)
        ws = (groups * int(gen.integers(1, 20)), xs[1] // groups, *k)
        check_case(xs, ws, stride, pad, dil, groups, seed=int(gen.integers(1 << 30)))


@pytest.mark.parametrize("layout", ["transposed", "channels_last", "sliced"])
def test_conv_packed_noncontiguous(layout):
    makers = {
        "transposed": lambda t: t.transpose(2, 3).contiguous().transpose(2, 3),
        "channels_last": lambda t: t.contiguous(memory_format=ptl.channels_last),
        "sliced": lambda t: ptl.stack([t, -t], 4).flatten(3)[:, :, :, ::2],
    }
    check_case((2, 8, 10, 12), (16, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1, seed=5,
               make_x=makers[layout])
    check_case((2, 8, 10, 12), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1, seed=6,
               make_x=makers[layout])


@pytest.mark.parametrize("stride,padding,output_padding,groups", [
    ((1, 1), (1, 1), (0, 0), 1), ((2, 2), (1, 1), (1, 1), 1), ((1, 2), (0, 1), (0, 1), 2)])
def test_conv_transpose_packed(stride, padding, output_padding, groups):
    """A transposed convolution's input gradient is a plain convolution (col_fwd) and its
    weight gradient the same primitive with the roles swapped."""
    gen = np.random.default_rng(7)
    x = gen.standard_normal((3, 8, 9, 11))
    w = gen.standard_normal((8, 12 // groups, 3, 3)) / 9
    outs = []
    for dt in (ptl.float64, ptl.float32):
        xt = ptl.tensor(x, dtype=dt, requires_grad=True)
        wt = ptl.tensor(w, dtype=dt, requires_grad=True)
        y = F.conv_transpose2d(xt, wt, stride=stride, padding=padding,
                               output_padding=output_padding, groups=groups)
        gy = ptl.tensor(np.random.default_rng(8).standard_normal(tuple(y.shape)), dtype=dt)
        y.backward(gy)
        outs.append([t.detach().double().numpy() for t in (y, xt.grad, wt.grad)])
    for name, r, got in zip(("forward", "input grad", "weight grad"), *outs):
        np.testing.assert_allclose(got, r, rtol=0, atol=2e-5 * max(np.abs(r).max(), 1.0),
                                   err_msg=name)


@pytest.mark.skipif("PTL_CPU_CAPABILITY" in os.environ,
                    reason="already running with a capability chosen by a parent run")
@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_fallback_path(capability):
    """With AVX-512 masked off (PTL_CPU_CAPABILITY=avx2) every kernel runs the AVX2 engine
    (every case of this file, the AVX2 weight-gradient tiles' also against NumPy), with AVX2
    too (=default) the im2col path (a few cases), in a child process."""
    code = (
        "import sys; sys.path[:0] = %r\n"
        "import test_conv_packed as t, pytorchlite as ptl\n"
        "assert ptl.backends.cpu.get_cpu_capability() != 'AVX512'\n"
        "avx2 = ptl.backends.cpu.get_cpu_capability() == 'AVX2'\n"
        "cases = (t.CASES + t.AVX2_CASES + t.WGRAD2_CASES + t.PHASE_CASES + t.ROWS_CASES\n"
        "         + t.FWD_ROWS_CASES)\n"
        "for c in cases if avx2 else (t.CASES[0], t.CASES[2], t.CASES[9]) + tuple(t.AVX2_CASES):\n"
        "    t.check_case(*c[:-1], seed=11)\n"
        "for c in t.WGRAD2_CASES if avx2 else ():\n"
        "    t.check_weight_grad_numpy(*c[:-1], seed=12)\n"
        "print('ok')\n" % [os.path.dirname(os.path.abspath(__file__)),
                            os.path.dirname(os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__))))])
    env = dict(os.environ, PTL_CPU_CAPABILITY=capability)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# The AVX2 forward tile (PK2_MR channels x 16 pixels, one vector for 8 pixels or fewer):
# channel counts at and across multiples of PK2_MR, flat spans whose last sliver has 7, 8, 9,
# 15, 16, 17 pixels or a whole PK_NR (1-D, padding 0: the span is the output's width).
AVX2_CASES = [
    ((2, 3, 7 + 2), (5, 3, 3), 1, 0, 1, 1, "5 channels, 7 pixels"),
    ((2, 3, 8 + 2), (6, 3, 3), 1, 0, 1, 1, "6 channels, 8 pixels"),
    ((2, 3, 9 + 2), (7, 3, 3), 1, 0, 1, 1, "7 channels, 9 pixels"),
    ((2, 4, 15 + 2), (12, 4, 3), 1, 0, 1, 1, "12 channels, 15 pixels"),
    ((2, 4, 16 + 2), (13, 4, 3), 1, 0, 1, 1, "13 channels, 16 pixels"),
    ((2, 4, 17 + 2), (11, 4, 3), 1, 0, 1, 1, "11 channels, 17 pixels"),
    ((2, 4, 32 + 2 + 24), (18, 4, 3), 1, 0, 1, 1, "18 channels, a sliver and 24 pixels"),
    ((2, 4, 64 + 2), (19, 4, 3), 1, 0, 1, 1, "19 channels, two whole slivers"),
    ((2, 6, 9, 11), (14, 3, 3, 3), 2, 1, 1, 2, "groups of 7 channels, stride 2, padding"),
    ((2, 4, 32 + 2 + 8), (1, 4, 3), 1, 0, 1, 1, "1 channel, a sliver and 8 pixels"),
    ((2, 4, 32 + 2 + 5), (2, 4, 3), 1, 0, 1, 1, "2 channels, a sliver and 5 pixels"),
    ((2, 3, 32 + 2 + 12), (3, 3, 3), 1, 0, 1, 1, "3 channels, a sliver and 12 pixels"),
    ((2, 3, 17 + 2), (3, 3, 3), 1, 0, 1, 1, "3 channels, 17 pixels"),
    ((2, 4, 32 + 2 + 3), (4, 4, 3), 1, 0, 1, 1, "4 channels, a sliver and 3 pixels"),
    ((2, 4, 32 + 2 + 10), (10, 4, 3), 1, 0, 1, 1, "10 channels, a sliver and 10 pixels"),
    ((2, 4, 16 + 2), (8, 4, 3), 1, 0, 1, 1, "8 channels, 16 pixels"),
    ((2, 3, 8 + 2), (9, 3, 3), 1, 0, 1, 1, "9 channels, 8 pixels"),
    ((2, 3, 14 + 2), (5, 3, 3), 1, 0, 1, 1, "5 channels, 14 pixels"),
    ((2, 3, 20 + 2), (20, 3, 3), 1, 0, 1, 1, "20 channels, 20 pixels"),
    ((2, 3, 12, 32), (32, 3, 3, 3), 1, 1, 1, 1, "32 channels by rows of 32"),
]


def test_avx2_tile_cases_cross_their_thresholds():
    """The 1-D cases put every size of the last tile (1 to PK2_MR channels, each its own
    rows) on slivers of at most 8 pixels (one vector), of 9 to 16 (one half) and of 17 to
    PK_NR (two halves)."""
    seen = set()
    for xs, ws, *_ in AVX2_CASES:
        if len(xs) == 3:
            span, last = xs[2] - ws[2] + 1, (ws[0] - 1) % PK2_MR + 1
            for s0 in range(0, span, PK_NR):
                nr = min(PK_NR, span - s0)
                seen.add((last, 1 if nr <= 8 else 2 if nr <= 16 else 4))
    assert {(r, v) for r in range(1, PK2_MR + 1) for v in (1, 2, 4)} <= seen


@pytest.mark.parametrize("case", AVX2_CASES, ids=[c[-1] for c in AVX2_CASES])
def test_avx2_tile_thresholds(case):
    """On 1 and 2 threads against the float64 path (check_case)."""
    xs, ws, stride, pad, dil, groups, _ = case
    check_case(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws))


# The AVX2 weight-gradient tiles (WG2_MR x WG2_NR, WG2_NARROW_MR x WG2_NARROW_NR up to 8
# channels a group) and the 8 x 8 transposes of the output gradient: channel counts at and
# across 8, 16 and 32, tap counts at and across multiples of 6 and 12, runs of output pixels
# of 7, 8, 9, 16 and 17 (1-D, padding 0: a run is the output's width).
WGRAD2_CASES = [
    ((2, 12, 9, 9), (8, 12, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "8 channels, 12 taps: one whole narrow tile"),
    ((2, 13, 9, 9), (9, 13, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "9 channels, 13 taps: a short wide tile, two of 6 taps and one of 1"),
    ((2, 1, 10, 10), (7, 1, 5, 5), (1, 1), (2, 2), (1, 1), 1,
     "7 channels, 25 taps: short narrow tiles, 12 + 12 + 1 taps"),
    ((2, 2, 9, 9), (16, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "16 channels, 18 taps: one wide tile across, three of 6 taps"),
    ((2, 8, 11, 11), (17, 8, 1, 3), (1, 1), (0, 1), (1, 1), 1,
     "17 channels, 24 taps: a wide tile and one of 1 channel"),
    ((2, 3, 10, 10), (33, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "33 channels: two wide tiles and one of 1 channel"),
    ((2, 4, 9), (8, 4, 3), (1,), (0,), (1,), 1, "runs of 7 pixels, 8 channels"),
    ((2, 4, 10), (9, 4, 3), (1,), (0,), (1,), 1, "runs of 8 pixels, 9 channels"),
    ((2, 4, 11), (5, 4, 3), (1,), (0,), (1,), 1, "runs of 9 pixels, 5 channels"),
    ((2, 4, 18), (16, 4, 3), (1,), (0,), (1,), 1, "runs of 16 pixels, 16 channels"),
    ((2, 4, 19), (20, 4, 3), (1,), (0,), (1,), 1, "runs of 17 pixels, 20 channels"),
    ((2, 6, 9, 11), (14, 3, 3, 3), (2, 2), (1, 1), (1, 1), 2,
     "groups of 7 channels, stride 2, padding"),
    ((1, 16, 16, 16), (16, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "one sample, stride 2 (compact windows): one task, one chunk"),
]


def check_weight_grad_numpy(xs, ws, stride, pad, dil, groups, seed):
    """The float32 weight gradient (convolution_backward) against NumPy in float64, on one
    and two threads."""
    gen = np.random.default_rng(seed)
    x = gen.standard_normal(xs)
    out = [(xs[2 + i] + 2 * pad[i] - dil[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1
           for i in range(len(xs) - 2)]
    gy = gen.standard_normal((xs[0], ws[0], *out))
    ref = weight_grad_ref(x, gy, ws, stride, pad, dil, groups)
    for nt in (1, 2):
        threads = ptl.get_num_threads()
        try:
            ptl.set_num_threads(nt)
            _, gw, _ = ptl.ops.aten.convolution_backward(
                ptl.tensor(gy, dtype=ptl.float32), ptl.tensor(x, dtype=ptl.float32),
                ptl.zeros(ws), None, list(stride), list(pad), list(dil), False,
                [0] * len(stride), groups, [0, 1, 0])
        finally:
            ptl.set_num_threads(threads)
        np.testing.assert_allclose(gw.double().numpy(), ref, rtol=0,
                                   atol=2e-5 * max(np.abs(ref).max(), 1.0))


@pytest.mark.parametrize("case", WGRAD2_CASES, ids=[c[-1] for c in WGRAD2_CASES])
def test_avx2_weight_grad_tiles(case):
    """Against the float64 path (check_case) and NumPy, on 1 and 2 threads; on an AVX-512
    machine the AVX2 engine runs them in test_fallback_path."""
    xs, ws, stride, pad, dil, groups, _ = case
    check_case(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws))
    check_weight_grad_numpy(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws) + 3)


def test_avx2_weight_grad_cases_cross_their_thresholds():
    """The cases are where their labels say: channels a group and taps against the tiles,
    run lengths against the 8 x 8 transposes."""
    by = {c[-1]: c[:-1] for c in WGRAD2_CASES}

    def shape(prefix):
        (case,) = [c for lb, c in by.items() if lb.startswith(prefix)]
        return case[1][0] // case[5], int(np.prod(case[1][1:]))

    assert shape("8 channels, 12 taps") == (WG2_NARROW_NR, WG2_NARROW_MR)
    assert shape("9 channels, 13 taps") == (WG2_NARROW_NR + 1, 2 * WG2_MR + 1)
    assert shape("7 channels, 25 taps") == (WG2_NARROW_NR - 1, 2 * WG2_NARROW_MR + 1)
    assert shape("16 channels, 18 taps") == (WG2_NR, 3 * WG2_MR)
    assert shape("17 channels, 24 taps") == (WG2_NR + 1, 4 * WG2_MR)
    assert shape("33 channels")[0] == 2 * WG2_NR + 1
    assert shape("groups of 7")[0] < WG2_NARROW_NR
    runs = {xs[2] - ws[2] + 1 for xs, ws, *_ in by.values() if len(xs) == 3}
    assert {7, 8, 9, 16, 17} <= runs
    (one,) = [c for lb, c in by.items() if lb.startswith("one sample")]
    assert blocking(*one)[2] == 1 and blocking(*one)[4] and wgrad_chunks(*one)[1] == 1


@pytest.mark.parametrize("n", [0, 1])
def test_compact_small_batches(n):
    """The compact layout with an empty batch and with one sample (cut into blocks for the
    threads)."""
    assert blocking((n, 4, 8, 8), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1)[4]
    check_case((n, 4, 8, 8), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1, seed=12 + n)
    check_case((n, 6, 13, 13), (5, 6, 3, 3), (1, 1), (0, 0), (1, 1), 1, seed=14 + n)


def phase_dims(img, out, k, s, p, d):
    """Note [Input gradient by output phases] along one dim: (nj, a_lo, na, pad) for each
    phase r < s (phase_dim in conv.c)."""
    res = []
    for r in range(s):
        nj = -(-(k - r) // s) if r < k else 0
        a_lo = (p - r + s - 1) // s
        last = img - 1 + p - r
        na = max(last // s - a_lo + 1, 0) if last >= 0 else 0
        res.append((nj, a_lo, na, (d if s == 1 else 1) * (nj - 1) - a_lo))
    return res


def phase_plan(xs, ws, stride, pad, dil):
    """How the input gradient runs: None where img_fwd takes it (dilation with a stride, a
    phase that would need negative padding, a strided 1x1 kernel), else the phases' shared
    geometry along the last dim, (columns, kernel, padding), and whether its windows are
    compact (2-D)."""
    nd = len(xs) - 2
    img, k = xs[2:], ws[2:]
    out = [(img[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    if np.prod(stride) > 1 and np.prod(k) == 1:
        return None
    geo = []
    for i in range(nd):
        if stride[i] > 1 and dil[i] != 1:
            return None
        ph = [q for q in phase_dims(img[i], out[i], k[i], stride[i], pad[i], dil[i])
              if q[0] > 0 and q[2] > 0]
        if any(q[3] < 0 for q in ph):
            return None
        dd = dil[i] if stride[i] == 1 else 1
        P = max(q[3] for q in ph)
        geo.append((out[i], max(q[2] for q in ph), max(q[0] + (P - q[3]) // dd for q in ph), P,
                    dd))
    # the windows of the last two dims (cols_init): compact where it fits and saves a tenth
    (_, hc, _, _, _), (wi, wc, wk, wp, wd) = ([(1, 1, 1, 0, 1)] * (2 - nd) + geo)[-2:]
    wplane = max(wi + 2 * wp, wc + wd * (wk - 1))
    compact = wc <= 16 and (wk - 1) * wd + wc - 1 < 32 and \
        -(-((hc - 1) * wc + wc) // 16) * COMPACT_DEN <= -(-((hc - 1) * wplane + wc) // 16) * \
        COMPACT_NUM
    return wc, wk, wp, compact


def input_grad_ref(gy, w, xs, stride, pad, dil, groups):
    """The input gradient of a convolution in float64 NumPy, tap by tap: each tap adds
    gy times its weight into the strided slice of the padded input it read."""
    nd = len(xs) - 2
    gx = np.zeros((xs[0], xs[1]) + tuple(xs[2 + i] + 2 * pad[i] for i in range(nd)))
    cpg, opg = xs[1] // groups, w.shape[0] // groups
    out = gy.shape[2:]
    for kk in np.ndindex(*w.shape[2:]):
        sl = tuple(slice(kk[i] * dil[i], kk[i] * dil[i] + stride[i] * (out[i] - 1) + 1,
                         stride[i]) for i in range(nd))
        for grp in range(groups):
            wk = w[(slice(grp * opg, (grp + 1) * opg), slice(None)) + kk]   # (opg, cpg)
            contrib = np.einsum("no...,oc->nc...", gy[:, grp * opg:(grp + 1) * opg], wk)
            gx[(slice(None), slice(grp * cpg, (grp + 1) * cpg)) + sl] += contrib
    inner = tuple(slice(pad[i], pad[i] + xs[2 + i]) for i in range(nd))
    return gx[(slice(None), slice(None)) + inner]


# (x shape, w shape, stride, padding, dilation, groups, what it crosses): the input gradient
# of strided convolutions (Note [Input gradient by output phases])
PHASE_CASES = [
    ((2, 8, 16, 16), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "ResNet's 3x3 stride 2 on 16x16: 8x8 phases, compact shared windows, runs of 8"),
    ((2, 4, 32, 32), (8, 4, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "3x3 stride 2 on 32x32: 16x16 phases, phase-plane windows, runs of 16"),
    ((2, 3, 15, 17), (5, 3, 3, 3), (2, 2), (0, 0), (1, 1), 1,
     "padding 0, odd sizes: phases of 7 and 8 columns"),
    ((2, 3, 9, 40), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "runs of 20: a whole and a part vector of the step-2 copy"),
    ((2, 3, 10, 18), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "runs of 9: one lane into the second vector of the step-2 copy"),
    ((2, 3, 12, 12), (4, 3, 5, 5), (3, 3), (2, 2), (1, 1), 1,
     "stride 3, 5x5: 9 phases of 2 or 1 taps a dim, strided copies of step 3"),
    ((2, 4, 11, 11), (6, 4, 1, 1), (2, 2), (0, 0), (1, 1), 1,
     "1x1 stride 2 (the ResNet shortcut: img_fwd)"),
    ((2, 4, 11, 11), (6, 4, 1, 2), (2, 2), (0, 0), (1, 1), 1,
     "1x2 stride 2: two phases, two of zeros"),
    ((2, 4, 11, 11), (6, 4, 2, 2), (3, 3), (0, 0), (1, 1), 1,
     "2x2 stride 3: four one-tap phases, five of zeros"),
    ((2, 6, 10, 12), (9, 2, 3, 3), (2, 2), (1, 1), (1, 1), 3,
     "stride 2, groups 3"),
    ((2, 4, 13, 11), (6, 4, 3, 3), (2, 1), (1, 2), (1, 2), 1,
     "stride (2, 1) with dilation 2 along the stride-1 dim: 2 phases"),
    ((2, 3, 1, 5), (4, 3, 1, 3), (2, 2), (0, 1), (1, 1), 1,
     "an image one row high: the second row phase has no pixel"),
    ((1, 16, 32, 32), (16, 16, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "one sample, cut into blocks for the threads: runs split between blocks"),
    ((2, 3, 12, 12), (4, 3, 3, 3), (2, 2), (2, 2), (1, 1), 1,
     "padding 2 with 3x3 stride 2: a phase would need padding -1 (img_fwd)"),
    ((2, 3, 12, 12), (4, 3, 3, 3), (2, 2), (1, 1), (2, 2), 1,
     "dilation 2 with stride 2 (img_fwd)"),
]


@pytest.mark.parametrize("case", PHASE_CASES, ids=[c[-1] for c in PHASE_CASES])
def test_input_grad_phases(case):
    """Each case against the float64 path on 1 and 2 threads (check_case) and its input
    gradient against NumPy."""
    xs, ws, stride, pad, dil, groups, _ = case
    seed = sum(xs) + sum(ws) + 1
    check_case(xs, ws, stride, pad, dil, groups, seed=seed)
    gen = np.random.default_rng(seed)
    w = gen.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    out = [(xs[2 + i] + 2 * pad[i] - dil[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1
           for i in range(len(xs) - 2)]
    gy = gen.standard_normal((xs[0], ws[0], *out))
    ref = input_grad_ref(gy, w, xs, stride, pad, dil, groups)
    for nt in (1, 2):
        threads = ptl.get_num_threads()
        try:
            ptl.set_num_threads(nt)
            gx, _, _ = ptl.ops.aten.convolution_backward(
                ptl.tensor(gy, dtype=ptl.float32), ptl.zeros(xs), ptl.tensor(w, dtype=ptl.float32),
                None, list(stride), list(pad), list(dil), False, [0] * len(stride), groups,
                [1, 0, 0])
        finally:
            ptl.set_num_threads(threads)
        np.testing.assert_allclose(gx.double().numpy(), ref, rtol=0,
                                   atol=2e-5 * max(np.abs(ref).max(), 1.0))


def test_input_grad_phase_cases_cross_their_thresholds():
    """The cases are where their labels say."""
    by = {c[-1]: c[:-1] for c in PHASE_CASES}

    def plan(prefix):
        (label,) = [k for k in by if k.startswith(prefix)]
        return phase_plan(*by[label][:5])

    assert plan("ResNet's 3x3 stride 2 on 16x16") == (8, 2, 0, True)
    assert plan("3x3 stride 2 on 32x32") == (16, 2, 0, False)
    assert plan("runs of 20")[0] == 20 and plan("runs of 9")[0] == 9
    assert plan("padding 0, odd sizes") is not None
    assert plan("stride 3, 5x5")[:3] == (4, 2, 0)
    assert plan("padding 2 with 3x3 stride 2") is None and plan("dilation 2 with stride") is None
    assert plan("1x1 stride 2") is None and plan("1x2 stride 2") is not None
    # padding 1 is the largest that 3x3 stride 2 runs by phases
    assert phase_plan((2, 3, 12, 12), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1)) is not None
    assert phase_dims(1, 1, 1, 2, 0, 1)[1][2] == 0   # the one-row image's second row phase


def rows_path(xs, ws, stride, pad, dil, groups):
    """Whether the weight gradient runs by rows (Note [Weight gradient by rows]): where the
    row pairs (Note [Weight gradient by row pairs], tried first) do not take it."""
    if len(xs) == 4 and pairs_fit(xs[1], xs[2], xs[3], ws[0], tuple(ws[2:]), tuple(stride),
                                  tuple(pad), tuple(dil), groups):
        return False
    cols = (xs[-1] + 2 * pad[-1] - dil[-1] * (ws[-1] - 1) - 1) // stride[-1] + 1
    return stride[-1] in (1, 2) and cols * WG_ROWS_DEN >= -(-cols // 16) * 16 * WG_ROWS_NUM


def rows_copy(xs, ws, stride, pad, dil, groups):
    """The copy by rows of one sample and group: (floats a phase row, floats of the copy of
    one sample, output row vectors of one sample)."""
    nd = len(xs) - 2
    k, img = [1] * (3 - nd) + list(ws[2:]), [1] * (3 - nd) + list(xs[2:])
    st, pd, dl = ([1] * (3 - nd) + list(stride), [0] * (3 - nd) + list(pad),
                  [1] * (3 - nd) + list(dil))
    out = [(img[i] + 2 * pd[i] - dl[i] * (k[i] - 1) - 1) // st[i] + 1 for i in range(3)]
    ext = [(out[i] - 1) * st[i] + (k[i] - 1) * dl[i] + 1 for i in range(2)]
    wq = out[2] + (k[2] - 1) * dl[2] // st[2]
    cpg = xs[1] // groups
    return wq, cpg * ext[0] * ext[1] * st[2] * wq, out[0] * out[1] * -(-out[2] // 16)


def rows_samples(xs, ws, stride, pad, dil, groups):
    """Samples a block of the weight gradient by rows: its copy within WG_ROWS_BLOCK_BYTES
    unless that leaves fewer than WG_ROWS_RUN row vectors, at most the batch."""
    _, per, run = rows_copy(xs, ws, stride, pad, dil, groups)
    nb = WG_ROWS_BLOCK_BYTES // (per * 4)
    nb = nb if nb * run >= WG_ROWS_RUN else -(-WG_ROWS_RUN // run)
    return min(nb, xs[0])


def rows_tap_blocks(kdim):
    """The taps of each task's block by rows: all of them up to WG_ROWS_KDIM, else
    ceil(kdim / WG_ROWS_SPLIT_MP) nearly equal blocks."""
    if kdim <= WG_ROWS_KDIM:
        return [kdim]
    nb = -(-kdim // WG_ROWS_SPLIT_MP)
    return [(b + 1) * kdim // nb - b * kdim // nb for b in range(nb)]


def weight_grad_ref(x, gy, ws, stride, pad, dil, groups):
    """The weight gradient in float64 NumPy, tap by tap."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    cpg, opg = x.shape[1] // groups, ws[0] // groups
    out = gy.shape[2:]
    gw = np.zeros(ws)
    for kk in np.ndindex(*ws[2:]):
        sl = tuple(slice(kk[i] * dil[i], kk[i] * dil[i] + stride[i] * (out[i] - 1) + 1,
                         stride[i]) for i in range(nd))
        for grp in range(groups):
            xs_ = xp[(slice(None), slice(grp * cpg, (grp + 1) * cpg)) + sl]
            red = [0] + list(range(2, 2 + nd))
            gw[(slice(grp * opg, (grp + 1) * opg), slice(None)) + kk] = np.tensordot(
                gy[:, grp * opg:(grp + 1) * opg], xs_, axes=(red, red))
    return gw


# (x shape, w shape, stride, padding, dilation, groups, what it crosses): weight gradients
# by rows
ROWS_CASES = [
    ((4, 1, 28, 28), (32, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "the CNN's first layer: 1 -> 32 3x3 on 28x28, rows of 26 (2 vectors)"),
    ((3, 1, 14, 14), (5, 1, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "padding 1: border rows and columns read zeros; 5 channels (an odd last pair)"),
    ((2, 3, 10, 14), (7, 3, 2, 2), (1, 1), (0, 0), (1, 1), 1,
     "kdim 12 (WG_ROWS_KDIM), rows of 13, two channels a task (a short last one)"),
    ((2, 10, 6, 14), (4, 10, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "kdim 10: two channels a task"),
    ((2, 1, 9, 14), (4, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "kdim 9 (WG_ROWS_WIDE_KDIM): three channels a task (a short last one)"),
    ((2, 13, 10, 14), (7, 13, 1, 1), (1, 1), (0, 0), (1, 1), 1,
     "kdim 13: blocks of 4, 4, 5 taps, four channels a task (a short last one)"),
    ((2, 2, 9, 14), (3, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "kdim 18: three blocks of 6 taps (WG_ROWS_SPLIT_MP), one short task"),
    ((3, 3, 20, 24), (16, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "kdim 27: 3 -> 16 3x3, padding 1, blocks of 5 and 6"),
    ((2, 4, 9, 14), (5, 4, 1, 7), (1, 1), (0, 3), (1, 1), 1,
     "kdim 28: blocks of 5 and 6 taps, padding 3 along the rows"),
    ((2, 4, 9, 15), (6, 2, 3, 2), (1, 1), (1, 0), (1, 1), 2,
     "groups 2 of kdim 12: one block"),
    ((2, 6, 9, 15), (10, 3, 3, 2), (1, 1), (1, 1), (1, 2), 2,
     "groups 2 of kdim 18, dilation 2: blocks of 6, a short last task"),
    ((40, 3, 32, 32), (9, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "kdim 27 over WG_ROWS_BLOCK_BYTES: two blocks of samples"),
    ((2, 1, 5, 6, 14), (4, 1, 2, 2, 5), (1, 2, 1), (1, 0, 2), (1, 1, 1), 1,
     "3-D, kdim 20: blocks of 5 taps"),
    ((2, 1, 9, 14), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "rows of 12 (3/4 of a vector: at the ratio)"),
    ((2, 1, 9, 13), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "rows of 11 (under the ratio: the tiles)"),
    ((2, 1, 9, 26), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "rows of 24 (at the ratio over two vectors)"),
    ((2, 1, 9, 25), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "rows of 23 (under it: the tiles)"),
    ((2, 1, 19, 14), (4, 1, 3, 3), (2, 1), (1, 1), (1, 1), 1,
     "stride 2 along the columns only"),
    ((2, 1, 19, 20), (4, 1, 3, 3), (1, 2), (1, 1), (1, 1), 1,
     "stride 2 along the rows, rows of 10 (under the ratio): the tiles"),
    ((2, 1, 19, 38), (4, 1, 3, 3), (1, 3), (1, 1), (1, 1), 1,
     "stride 3 along the rows: the tiles"),
    ((2, 16, 32, 32), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "16 -> 16 3x3 on 32x32 (the benchmark's): kdim 144 in 24 blocks of 6, rows of two "
     "whole vectors"),
    ((3, 32, 32, 32), (64, 32, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "32 -> 64 3x3 stride 2 on 32x32 (16 -> 32, the benchmark's, runs by row pairs; here their "
     "lanes' buffer is over WP_ACC_BYTES): rows of one whole vector, phase rows of 17"),
    ((1, 16, 32, 32), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 2,
     "stride 2, batch 1, groups 2 (one group runs by row pairs)"),
    ((2, 6, 9, 51), (9, 6, 5, 5), (1, 2), (0, 0), (1, 1), 1,
     "stride 2, rows of 24 (a masked second vector), padding 0, kdim 150"),
    ((2, 3, 12, 30), (5, 3, 3, 3), (2, 2), (2, 2), (2, 2), 1,
     "stride 2, dilation 2, padding 2, rows of 15 (one masked vector)"),
    ((2, 2, 10, 25), (3, 2, 3, 3), (1, 2), (1, 0), (1, 1), 1,
     "stride 2 on an odd width, rows of 12 (at the ratio)"),
    ((2, 16, 32, 32), (32, 16, 1, 1), (2, 2), (0, 0), (1, 1), 1,
     "stride 2 1x1 (one phase read), kdim 16: blocks of 5, 5, 6"),
    ((2, 1, 12, 34), (7, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1,
     "27 accumulators (over ROWS_PLAIN_ACC): whole vectors through masked loads, rows of 32"),
    ((2, 2, 6, 29), (4, 2, 2, 2), (1, 1), (0, 0), (1, 1), 1,
     "kdim 8: 24 accumulators (ROWS_PLAIN_ACC), plain loads, then a masked vector"),
    ((8, 64, 24, 24), (8, 64, 3, 3), (2, 2), (1, 1), (1, 1), 1,
     "64 channels, rows of one vector: blocks raised to WG_ROWS_RUN row vectors"),
    ((2, 2, 4, 6, 30), (3, 2, 2, 2, 3), (2, 1, 2), (0, 1, 1), (1, 1, 1), 1,
     "3-D, stride 2 along the rows and z"),
    ((2, 4, 20, 32), (4, 1, 3, 3), (2, 2), (1, 1), (1, 1), 4,
     "depthwise, stride 2"),
    ((2, 32, 9, 16), (8, 16, 3, 3), (1, 1), (1, 1), (1, 1), 2,
     "groups 2 of kdim 144, two channels a group's last task"),
    ((8, 6, 16, 32), (12, 2, 3, 3), (1, 1), (1, 1), (1, 1), 3,
     "groups 3 of kdim 18, 9 tasks: on two threads (by taps) a share starts inside a group, "
     "at a block of taps that straddles two channels"),
    ((2, 2, 12, 14), (4, 1, 3, 3), (1, 1), (2, 2), (2, 2), 2,
     "groups 2, dilation 2, padding 2"),
    ((2, 4, 8, 16), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4,
     "depthwise: one output channel a group (a pair of one)"),
    ((70, 1, 64, 64), (3, 1, 3, 3), (1, 1), (1, 1), (1, 1), 1,
     "inputs over WG_ROWS_BLOCK_BYTES: three blocks of samples"),
    ((2, 1, 5, 6, 14), (3, 1, 2, 2, 3), (1, 2, 1), (1, 0, 1), (1, 1, 1), 1,
     "3-D, stride 2 along y"),
]


@pytest.mark.parametrize("case", ROWS_CASES, ids=[c[-1] for c in ROWS_CASES])
def test_weight_grad_rows(case):
    """Each case against the float64 path on 1 and 2 threads (check_case), its weight
    gradient against NumPy."""
    xs, ws, stride, pad, dil, groups, _ = case
    seed = sum(xs) + sum(ws) + 2
    check_case(xs, ws, stride, pad, dil, groups, seed=seed)
    check_weight_grad_numpy(xs, ws, stride, pad, dil, groups, seed)


def test_weight_grad_rows_cases_cross_their_thresholds():
    """The cases are where their labels say."""
    by = {c[-1]: c[:-1] for c in ROWS_CASES}
    expect = {label: ": the tiles" not in label for label in by}
    for label, case in by.items():
        assert rows_path(*case) == expect[label], label
    kd = {label: int(np.prod(c[1][1:])) for label, c in by.items()}
    (k12,) = [lb for lb in by if lb.startswith("kdim 12")]
    (k9,) = [lb for lb in by if lb.startswith("kdim 9")]
    assert kd[k12] == WG_ROWS_KDIM and by[k12][1][0] % 2 == 1
    assert kd["kdim 10: two channels a task"] == WG_ROWS_WIDE_KDIM + 1
    assert kd[k9] == WG_ROWS_WIDE_KDIM and by[k9][1][0] % 3 == 1
    blocks = {label: rows_tap_blocks(kd[label]) for label in by}
    k13 = "kdim 13: blocks of 4, 4, 5 taps, four channels a task (a short last one)"
    assert kd[k13] == WG_ROWS_KDIM + 1 and blocks[k13] == [4, 4, 5] and by[k13][1][0] % 4
    k18 = "kdim 18: three blocks of 6 taps (WG_ROWS_SPLIT_MP), one short task"
    assert blocks[k18] == [WG_ROWS_SPLIT_MP] * 3 and by[k18][1][0] < 4
    assert blocks["kdim 27: 3 -> 16 3x3, padding 1, blocks of 5 and 6"] == [5, 5, 6, 5, 6]
    assert set(blocks["kdim 28: blocks of 5 and 6 taps, padding 3 along the rows"]) == {5, 6}
    assert blocks["groups 2 of kdim 12: one block"] == [WG_ROWS_KDIM]
    assert blocks["3-D, kdim 20: blocks of 5 taps"] == [5] * 4
    (k144,) = [lb for lb in by if lb.startswith("16 -> 16 3x3")]
    assert blocks[k144] == [WG_ROWS_SPLIT_MP] * 24
    assert set(blocks["stride 2 1x1 (one phase read), kdim 16: blocks of 5, 5, 6"]) == {5, 6}
    split = [b for b in blocks.values() if len(b) > 1]
    assert max(max(b) for b in split) == WG_ROWS_SPLIT_MP and {4, 5, 6} <= set(sum(split, []))
    # the accumulators a task keeps: plain loads of whole vectors up to ROWS_PLAIN_ACC
    (k27acc,) = [lb for lb in by if lb.startswith("27 accumulators")]
    assert kd[k27acc] * 3 > ROWS_PLAIN_ACC and rows_copy(*by[k27acc])[2] == 2 * 10
    (k8,) = [lb for lb in by if lb.startswith("kdim 8: 24 accumulators")]
    assert kd[k8] * 3 == ROWS_PLAIN_ACC
    # phase rows: cols + the largest shift of a tap
    (s2,) = [lb for lb in by if lb.startswith("32 -> 64 3x3 stride 2")]
    assert rows_copy(*by[s2])[0] == 17
    # blocks of samples: by WG_ROWS_BLOCK_BYTES, and raised to WG_ROWS_RUN row vectors
    for label, blk in (("kdim 27 over WG_ROWS_BLOCK_BYTES: two blocks of samples", 2),
                       ("inputs over WG_ROWS_BLOCK_BYTES: three blocks of samples", 3)):
        xs, nb = by[label][0], rows_samples(*by[label])
        assert nb == WG_ROWS_BLOCK_BYTES // (rows_copy(*by[label])[1] * 4), label
        assert -(-xs[0] // nb) == blk and xs[0] % nb != 0, label
    (krun,) = [lb for lb in by if lb.startswith("64 channels, rows of one vector")]
    _, per, run = rows_copy(*by[krun])
    nb = rows_samples(*by[krun])
    assert (WG_ROWS_BLOCK_BYTES // (per * 4)) * run < WG_ROWS_RUN <= nb * run
    assert (nb - 1) * run < WG_ROWS_RUN and by[krun][0][0] % nb != 0 and by[krun][0][0] > nb


def weight_grads_on_one_and_two_threads(x, gy, ws, stride, pad, groups):
    """The float32 weight gradient of conv2d(x) given gy, on one thread and then two."""
    threads = ptl.get_num_threads()
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            yield ptl.ops.aten.convolution_backward(
                ptl.tensor(gy, dtype=ptl.float32), ptl.tensor(x, dtype=ptl.float32),
                ptl.zeros(ws), None, list(stride), list(pad), [1, 1], False, [0, 0], groups,
                [0, 1, 0])[1].numpy()
    finally:
        ptl.set_num_threads(threads)


@pytest.mark.parametrize("xs, ws, stride, pad, groups", [
    ((2, 2, 6, 28), (4, 2, 3, 3), (1, 1), (0, 0), 1),     # rows on AVX-512, tiles on AVX2
    ((2, 3, 12, 30), (5, 3, 3, 3), (1, 1), (1, 1), 1),    # padding 1: an edge pixel
    ((2, 3, 11, 13), (5, 3, 3, 3), (3, 3), (1, 1), 1),    # stride 3: the tiles on both
    ((1, 4, 9, 9), (4, 2, 2, 2), (1, 1), (0, 0), 2),      # groups, an even kernel
    ((2, 8, 7, 7), (16, 8, 1, 1), (1, 1), (0, 0), 1),     # 1x1
    ((2, 3, 8, 32), (4, 3, 3, 3), (2, 2), (1, 1), 1),     # stride 2: pack_pair_pad1's rows
])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_weight_grad_nonfinite_lands_where_the_sum_puts_it(xs, ws, stride, pad, groups, value):
    """Note [Packed weight gradient and non-finite inputs]: a non-finite pixel reaches only
    the taps that read it, on every path (tiles, rows, pairs) and thread count, as in the
    float64 reference; finite inputs never leave the packed path's values."""
    gen = np.random.default_rng(len(xs) + xs[-1])
    x = gen.standard_normal(xs)
    x[-1, -1, xs[2] // 2, -1] = value
    ref_y = F.conv2d(ptl.tensor(np.nan_to_num(x, posinf=0, neginf=0)), ptl.tensor(
        np.zeros(ws)), stride=stride, padding=pad, groups=groups)
    gy = gen.standard_normal(tuple(ref_y.shape))
    ref = weight_grad_ref(x, gy, ws, stride, pad, (1, 1), groups)
    for got in weight_grads_on_one_and_two_threads(x, gy, ws, stride, pad, groups):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        fin = np.isfinite(ref)
        assert 0 < fin.sum() < fin.size
        np.testing.assert_allclose(got[fin], ref[fin], rtol=0, atol=1e-4)


def test_weight_grad_rows_inf_past_a_row():
    """An Inf in the input is summed only where a tap reads it: the lanes past an output
    row (a masked last vector) read nothing, so the taps that never reach the Inf stay
    finite, as in the float64 reference."""
    gen = np.random.default_rng(5)
    xs, ws = (2, 2, 6, 28), (4, 2, 3, 3)
    assert rows_path(xs, ws, (1, 1), (0, 0), (1, 1), 1)
    x = gen.standard_normal(xs)
    x[1, 1, 3, -1] = np.inf                    # read by the taps of kernel column 2 only
    gy = gen.standard_normal((2, 4, 4, 26))
    ref = weight_grad_ref(x, gy, ws, (1, 1), (0, 0), (1, 1), 1)
    for got in weight_grads_on_one_and_two_threads(x, gy, ws, (1, 1), (0, 0), 1):
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
        fin = np.isfinite(ref)
        assert fin[:, :, :, :2].all() and not fin[:, 1, :, 2].any()
        np.testing.assert_allclose(got[fin], ref[fin], rtol=0, atol=1e-4)


# The AVX2 engine's stride-2 window rows (pack_run2): 8 outputs at a time from two loads of
# 8 image columns each (row_load8: one load inside the row, a permuted load of the row's first
# or last 8 across one end, one element at a time in a row narrower than 8), the last len % 8
# outputs one at a time, the two phases of a 3-wide kernel from the same loads.  Rows of
# phase planes (not compact: outputs wider than 16) over images 33 to 48 wide and padding 0
# to 3 put the loads across either end at every offset.
STRIDE2_ROWS_CASES = [((2, 3, 5, w), (4, 3, k, k), 2, p, 1, 1, f"width {w}, {k}x{k}, pad {p}")
                      for w in (33, 34, 39, 48) for k in (1, 3) for p in (0, 1, 3)
                      if k > 1 or p == 0]
STRIDE2_ROWS_CASES += [((2, 3, 9, w), (4, 3, 3, 3), 2, 1, 1, 1, f"width {w}, 3x3, pad 1")
                       for w in (3, 5, 7, 8, 9)]
# pack_pair_pad1: the whole rows of the two phases of a 3-wide kernel from padded column 1
# of an image whose width is a multiple of 16 (widths 32 and 64, and 48 above; 40, 47 and 49
# beside them take pack_run2), and rows a block boundary cuts (64 channels: two blocks of
# PK_BLOCK_BYTES, the rows at their ends partial, so pack_run2's).
STRIDE2_ROWS_CASES += [((2, 3, 5, w), (4, 3, 3, 3), 2, 1, 1, 1, f"width {w}, 3x3, pad 1")
                       for w in (32, 40, 47, 49, 64)]
STRIDE2_ROWS_CASES += [((1, 64, 32, 32), (2, 64, 3, 3), 2, 1, 1, 1,
                        "width 32, 3x3, pad 1, two blocks")]


@pytest.mark.parametrize("case", STRIDE2_ROWS_CASES, ids=[c[-1] for c in STRIDE2_ROWS_CASES])
def test_stride2_window_rows(case):
    xs, ws, stride, pad, dil, groups, _ = case
    check_case(xs, ws, stride, pad, dil, groups, seed=sum(xs) + sum(ws) + pad)


def test_stride2_window_rows_cross_their_thresholds():
    """The wide cases run phase planes (not compact windows) with each padding and widths at
    every remainder class that matters (a multiple of 8, one past, two past, one short); the
    narrow ones hold rows of fewer than 8 columns, exactly 8 and more."""
    wide = [c for c in STRIDE2_ROWS_CASES if c[0][3] >= 33]
    for xs, ws, stride, pad, dil, groups, label in wide:
        assert not layout(xs, ws, (stride,) * 2, (pad,) * 2, (dil,) * 2, groups)[4], label
    assert {c[3] for c in wide} == {0, 1, 3}
    assert {c[0][3] % 8 for c in wide} >= {0, 1, 2, 7}
    assert {c[0][3] for c in STRIDE2_ROWS_CASES if c[0][3] < 32} >= {7, 8, 9}
    pair = [c for c in STRIDE2_ROWS_CASES if c[1][3] == 3 and c[3] == 1 and c[0][3] >= 32]
    assert {c[0][3] % 16 == 0 for c in pair} == {True, False}
    for xs, ws, stride, pad, dil, groups, label in pair:
        assert not layout(xs, ws, (stride,) * 2, (pad,) * 2, (dil,) * 2, groups)[4], label
    (cut,) = [c for c in pair if c[-1].endswith("two blocks")]
    _, nq, nblk, _, _ = blocking(cut[0], cut[1], (2, 2), (1, 1), (1, 1), 1)
    assert nblk >= 2 and nq % layout(cut[0], cut[1], (2, 2), (1, 1), (1, 1), 1)[2] != 0
