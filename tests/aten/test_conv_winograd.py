"""The Winograd F(4x4, 3x3) float32 convolution of conv_winograd.c (Note [Winograd
convolution]): forward and the input gradient of a 3x3 stride-1 convolution, and its weight
gradient by F(3x3, 4x4) (Note [Winograd weight gradient]), against NumPy in float64 (and the
float64 path's gradient), across the thresholds of its blocking:

- WINO_TILES tiles a task: several samples a task when a sample has fewer tiles (batches that
  are not a multiple of the samples per task), exactly WINO_TILES tiles a sample, and bands of
  tile rows of one sample when it has more (a short last band);
- WINO_BUF_BYTES: fewer tiles a task for wide channel counts;
- WINO_WEIGHT_PARALLEL: the weight's transform and packing on one thread and on the threads;
- WINO_SCAN_PARALLEL: the scan for an Inf or NaN on one thread and in shares on the threads;
- the weight gradient's chunks of tasks: fewer tasks than WINO_WGRAD_CHUNKS, as many, more
  and uneven, and fewer chunks where their sums would pass WINO_WGRAD_BYTES; their sum and
  output transform on one thread and on the threads (WINO_OUT_PARALLEL);
- partial tiles (outputs not a multiple of 4), padding 0 / 1 / 2 (the input gradient's 2 / 1
  / 0), channel counts not multiples of the 8-lane vectors, batch 1 and several, size 0;
- the mode switch (`_C._conv_winograd_mode`: 0 automatic, 1 always, 2 never) that the tests
  use to force the path, and the automatic crossover (each engine's WinoRule table, Note
  [Winograd crossover]).

float32 Winograd results differ from the direct sum in the last bits; the tests hold them to
WINO_RTOL of the sum of the terms' magnitudes (the error grows with the transforms' constants,
not with cancellation in the result)."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import rerun_with_capability

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "src", "aten", "native", "conv_winograd.c")
WINO_RTOL = 1e-4


def c_define(name):
    with open(SRC) as f:
        m = re.search(r"^#define\s+%s\s+(.+?)\s*(?:/\*.*)?$" % name, f.read(), re.M)
    assert re.fullmatch(r"[\d\s()+*<]+", m.group(1)), m.group(1)
    return eval(m.group(1))


def c_rules(name):
    """The (width, least, sum) rows of one of conv_winograd.c's WinoRule tables."""
    with open(SRC) as f:
        m = re.search(r"^static const WinoRule %s\[\] = \{(.*)\};$" % name, f.read(), re.M)
    rows = re.findall(r"\{(\d+), (\d+), (\d+)\}", m.group(1))
    assert rows and len(rows) == m.group(1).count("{")
    return [tuple(int(v) for v in r) for r in rows]


TILES = c_define("WINO_TILES")
BUF = c_define("WINO_BUF_BYTES")
CHUNKS = c_define("WINO_WGRAD_CHUNKS")
WGRAD_BYTES = c_define("WINO_WGRAD_BYTES")
RULES = {"AVX2": c_rules("WINO_AVX2_RULES"), "AVX512": c_rules("WINO_AVX512_RULES")}
WGRAD_RULES = {"AVX2": c_rules("WINO_AVX2_WGRAD_RULES"),
               "AVX512": c_rules("WINO_AVX512_WGRAD_RULES")}


class mode:
    """Forces the Winograd mode inside a with block."""

    def __init__(self, m):
        self.m = m

    def __enter__(self):
        self.old = ptl._C._conv_winograd_mode(self.m)

    def __exit__(self, *exc):
        ptl._C._conv_winograd_mode(self.old)


ALWAYS, NEVER, AUTO = 1, 2, 0


def conv_ref(x, w, b, p):
    """y and the sum of |terms| in float64 (a 3x3 stride-1 convolution)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, ci, h, wd = x.shape
    co = w.shape[0]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = h + 2 * p - 2, wd + 2 * p - 2
    y = np.zeros((n, co, oh, ow))
    mag = np.zeros((n, co, oh, ow))
    for a in range(3):
        for c in range(3):
            win = xp[:, :, a:a + oh, c:c + ow]
            y += np.einsum("ncij,oc->noij", win, w[:, :, a, c])
            mag += np.einsum("ncij,oc->noij", np.abs(win), np.abs(w[:, :, a, c]))
    if b is not None:
        y += b[None, :, None, None]
        mag += np.abs(b)[None, :, None, None]
    return y, mag


def check_close(got, ref, mag):
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= WINO_RTOL * mag + 1e-30), (err / np.maximum(mag, 1e-30)).max()


def run(x, w, b, p, m, threads=None):
    """Forward, input gradient and weight gradient (for a fixed output gradient) under mode
    m."""
    old = ptl.get_num_threads()
    if threads is not None:
        ptl.set_num_threads(threads)
    try:
        with mode(m):
            xt = ptl.tensor(x, requires_grad=True)
            wt = ptl.tensor(w, requires_grad=True)
            y = F.conv2d(xt, wt, None if b is None else ptl.tensor(b), padding=p)
            gy = np.cos(np.arange(y.numel(), dtype=np.float32)).reshape(tuple(y.shape))
            y.backward(ptl.tensor(gy))
            return y.detach().numpy(), xt.grad.numpy(), gy, wt.grad.numpy()
    finally:
        ptl.set_num_threads(old)


def wgrad_ref(x, gy, p):
    """The weight gradient and the sum of |terms| in float64 (3x3, stride 1)."""
    x, gy = x.astype(np.float64), gy.astype(np.float64)
    oh, ow = gy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    dw = np.zeros((gy.shape[1], x.shape[1], 3, 3))
    mag = np.zeros_like(dw)
    for a in range(3):
        for c in range(3):
            win = xp[:, :, a:a + oh, c:c + ow]
            dw[:, :, a, c] = np.einsum("noij,ncij->oc", gy, win)
            mag[:, :, a, c] = np.einsum("noij,ncij->oc", np.abs(gy), np.abs(win))
    return dw, mag


def tiles_of(h, w, p):
    return ((h + 2 * p - 2 + 3) // 4) * ((w + 2 * p - 2 + 3) // 4)


# (n, ci, co, h, w, p): partial tiles, paddings, odd channels, and the task thresholds
SIDE = int(TILES ** 0.5)
CASES = [
    (2, 5, 7, 9, 11, 1),          # partial tiles both ways, channels under one vector
    (1, 33, 17, 16, 16, 0),       # padding 0, 14x14 output
    (3, 16, 9, 13, 6, 2),         # padding 2
    (1, 8, 8, 3, 3, 0),           # one 1x1 output: one partial tile
    (1, 8, 8, 1, 1, 1),           # 1x1 input, padding 1
    (26, 9, 10, 8, 8, 1),         # 4 tiles a sample: 24 samples a task, a short last task
    (2, 8, 16, 4 * 8, 4 * 12, 1),  # exactly 96 tiles a sample (checked below)
    (1, 8, 8, 4 * 11 + 1, 4 * 11, 1),  # more than WINO_TILES: bands with a short last one
    (2, 64, 72, 10, 10, 1),       # WINO_BUF_BYTES caps the tiles a task
    (2, 31, 33, 6, 7, 1),         # the weight's transform on the calling thread, just under
    (2, 32, 32, 6, 7, 1),         # WINO_WEIGHT_PARALLEL channel pairs, and on the threads
]
WEIGHT_PARALLEL = c_define("WINO_WEIGHT_PARALLEL")


def test_case_thresholds():
    assert tiles_of(4 * 8, 4 * 12, 1) == TILES
    assert tiles_of(4 * 11 + 1, 4 * 11, 1) > TILES
    assert TILES % tiles_of(8, 8, 1) == 0 and 26 % (TILES // tiles_of(8, 8, 1)) > 0
    assert BUF // (36 * 4 * (64 + 72)) < TILES
    assert 31 * 33 < WEIGHT_PARALLEL <= 32 * 32


@pytest.mark.parametrize("n,ci,co,h,w,p", CASES)
def test_forward_and_input_grad_match_numpy(n, ci, co, h, w, p):
    rng = np.random.default_rng(n * 1000 + ci * 10 + p)
    x = rng.standard_normal((n, ci, h, w)).astype(np.float32)
    wt = rng.standard_normal((co, ci, 3, 3)).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32)
    y, gx, gy, gw = run(x, wt, b, p, ALWAYS)
    ref, mag = conv_ref(x, wt, b, p)
    check_close(y, ref, mag)
    # the input gradient is the convolution of gy with the flipped, transposed weight
    wf = np.ascontiguousarray(wt[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    gref, gmag = conv_ref(gy, wf, None, 2 - p)
    check_close(gx, gref, gmag)
    check_close(gw, *wgrad_ref(x, gy, p))
    # the direct path gives nearly the same, but not the same bits: Winograd ran
    yd, gxd, _, gwd = run(x, wt, b, p, NEVER)
    assert not np.array_equal(y, yd)
    assert not np.array_equal(gx, gxd)
    assert not np.array_equal(gw, gwd)
    # the thread count changes no bit
    y1, gx1, _, gw1 = run(x, wt, b, p, ALWAYS, threads=1)
    y2, gx2, _, gw2 = run(x, wt, b, p, ALWAYS, threads=2)
    assert np.array_equal(y1, y2) and np.array_equal(gx1, gx2) and np.array_equal(gw1, gw2)
    assert np.array_equal(y1, y) and np.array_equal(gw1, gw)


def wgrad_tasks(n, ci, co, h, w, p):
    """wino_plan's task count for the weight gradient of this convolution."""
    cip, cop = -(-ci // 8) * 8, -(-co // 8) * 8
    th, tw = -(-(h + 2 * p - 2) // 4), -(-(w + 2 * p - 2) // 4)
    want = min(max(BUF // (36 * 4 * (cip + cop)), 12), TILES)
    if th * tw <= want:
        return -(-n // (want // (th * tw)))
    return n * -(-th // max(want // tw, 1))


# (n, ci, co, h, w, p): the weight gradient's chunks (Note [Winograd weight gradient]): fewer
# tasks than WINO_WGRAD_CHUNKS, exactly as many, more (uneven chunks), and channel counts
# whose sums' slabs pass WINO_WGRAD_BYTES (fewer chunks)
WGRAD_CASES = [(2, 8, 8, 8, 8, 1), (CHUNKS, 9, 7, 4 * 11 + 1, 4 * 11, 1),
               (2 * CHUNKS + 1, 9, 7, 4 * 11 + 1, 4 * 11, 1), (3, 8, 16, 4 * 20, 4 * 20, 1)]
# the output's slab sum and transform: on the calling thread just under WINO_OUT_PARALLEL
# floats of slabs, on the threads just over it (shares of WINO_OUT_GRAIN floats, a last
# block of fewer than 8 channel pairs)
OUT_PARALLEL, OUT_GRAIN = c_define("WINO_OUT_PARALLEL"), c_define("WINO_OUT_GRAIN")
OUT_CASES = [(CHUNKS, 13, 35, 4 * 11 + 1, 4 * 11, 1), (CHUNKS, 13, 36, 4 * 11 + 1, 4 * 11, 1)]


# channel counts whose chunk sums pass WINO_WGRAD_BYTES: two slabs fit, not three
WIDE = int((WGRAD_BYTES / (36 * 4 * 2.5)) ** 0.5)


def test_wgrad_case_thresholds():
    assert [wgrad_tasks(*c) for c in WGRAD_CASES[:3]] == [1, CHUNKS * 2, (2 * CHUNKS + 1) * 2]
    assert wgrad_tasks(*WGRAD_CASES[3]) % CHUNKS > 0
    assert WGRAD_BYTES // (36 * 4 * WIDE * WIDE) == 2 and wgrad_tasks(40, WIDE, WIDE, 4, 4, 1) > 2
    floats = [CHUNKS * 36 * c[1] * c[2] for c in OUT_CASES]
    assert all(wgrad_tasks(*c) >= CHUNKS for c in OUT_CASES)
    assert floats[0] < OUT_PARALLEL <= floats[1] and 36 * 13 * 36 > 2 * OUT_GRAIN
    assert (13 * 36) % 8 > 0


@pytest.mark.parametrize("n,ci,co,h,w,p", WGRAD_CASES + OUT_CASES)
def test_weight_grad_chunks_match_numpy(n, ci, co, h, w, p):
    rng = np.random.default_rng(n + ci + h)
    x = rng.standard_normal((n, ci, h, w)).astype(np.float32)
    wt = rng.standard_normal((co, ci, 3, 3)).astype(np.float32)
    _, _, gy, gw = run(x, wt, None, p, ALWAYS, threads=2)
    check_close(gw, *wgrad_ref(x, gy, p))
    assert np.array_equal(gw, run(x, wt, None, p, ALWAYS, threads=1)[3])


def test_weight_grad_of_wide_channels_uses_fewer_chunks():
    """Channel counts whose chunk sums pass WINO_WGRAD_BYTES: fewer chunks, the same sums."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, WIDE, 4, 4)).astype(np.float32)
    wt = rng.standard_normal((WIDE, WIDE, 3, 3)).astype(np.float32) * 0.01
    _, _, gy, gw = run(x, wt, None, 1, ALWAYS, threads=2)
    check_close(gw, *wgrad_ref(x, gy, 1))
    assert np.array_equal(gw, run(x, wt, None, 1, ALWAYS, threads=1)[3])


def test_no_bias_and_noncontiguous_input():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((3, 12, 14, 10)).astype(np.float32)
    wt = rng.standard_normal((11, 12, 3, 3)).astype(np.float32)
    with mode(ALWAYS):
        xt = ptl.tensor(base).transpose(2, 3)      # (3, 12, 10, 14), not contiguous
        assert not xt.is_contiguous()
        y = F.conv2d(xt, ptl.tensor(wt), padding=1).numpy()
        ys = F.conv2d(xt[:, :, ::2], ptl.tensor(wt)).numpy()
    ref, mag = conv_ref(base.transpose(0, 1, 3, 2), wt, None, 1)
    check_close(y, ref, mag)
    ref, mag = conv_ref(base.transpose(0, 1, 3, 2)[:, :, ::2], wt, None, 0)
    check_close(ys, ref, mag)


def test_empty_batch():
    with mode(ALWAYS):
        x = ptl.zeros(0, 8, 6, 6, requires_grad=True)
        y = F.conv2d(x, ptl.ones(8, 8, 3, 3), ptl.ones(8), padding=1)
        assert tuple(y.shape) == (0, 8, 6, 6)
        y.sum().backward()
        assert tuple(x.grad.shape) == (0, 8, 6, 6)


def test_module_training_step_close_to_direct():
    """A Conv2d layer's forward, input and weight gradients under both modes."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 16, 12, 12)).astype(np.float32)
    out = {}
    for m in (ALWAYS, NEVER):
        ptl.manual_seed(0)
        conv = ptl.nn.Conv2d(16, 24, 3, padding=1)
        xt = ptl.tensor(x, requires_grad=True)
        conv(xt).square().sum().backward()
        with mode(m):
            xt.grad = None
            conv.zero_grad()
            y = conv(xt)
            y.square().sum().backward()
        out[m] = (y.detach().numpy(), xt.grad.numpy(), conv.weight.grad.numpy())
    for a, b in zip(out[ALWAYS], out[NEVER]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())


def test_float64_gradcheck_and_untaken_shapes():
    """float64, strides, dilation, groups and other kernel sizes keep the direct path (their
    results equal mode NEVER's bits); float64 gradcheck of the same op."""
    rng = np.random.default_rng(5)
    x = ptl.tensor(rng.standard_normal((2, 8, 9, 9)).astype(np.float32))
    w3 = ptl.tensor(rng.standard_normal((8, 8, 3, 3)).astype(np.float32))
    w2 = ptl.tensor(rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    w5 = ptl.tensor(rng.standard_normal((8, 8, 5, 5)).astype(np.float32))
    calls = [lambda: F.conv2d(x, w3, stride=2), lambda: F.conv2d(x, w3, dilation=2),
             lambda: F.conv2d(x, w2, groups=2), lambda: F.conv2d(x, w5, padding=2),
             lambda: F.conv2d(x.double(), w3.double(), padding=1)]
    for f in calls:
        with mode(ALWAYS):
            a = f().numpy()
        with mode(NEVER):
            b = f().numpy()
        assert np.array_equal(a, b)
    with mode(ALWAYS):
        xd = ptl.randn(1, 2, 5, 6, dtype=ptl.float64, requires_grad=True)
        wd = ptl.randn(3, 2, 3, 3, dtype=ptl.float64, requires_grad=True)
        assert ptl.autograd.gradcheck(lambda a, b: F.conv2d(a, b, padding=1), (xd, wd))


def winograd_expected(cap, width, ci, co, rules=RULES):
    """Note [Winograd crossover]: any row of the engine's table admits the shape."""
    return any(width >= w and min(ci, co) >= least and ci + co >= total
               for w, least, total in rules.get(cap, []))


def test_crossover_tables_are_ordered():
    """Each row is a shape that the direct path loses on; a row admitting all that another
    admits would make that one dead."""
    for rules in list(RULES.values()) + list(WGRAD_RULES.values()):
        for a in rules:
            assert a[2] >= 2 * a[1]   # least <= sum / 2: a shape (least, sum - least) exists
            assert not any(b != a and all(x <= y for x, y in zip(b, a)) for b in rules)


def test_automatic_crossover():
    """mode 0 takes Winograd where a row of the engine's table (width, least, sum) admits the
    output width, the smaller channel count and ci + co; the direct path elsewhere and on the
    portable engine.  The input gradient (whose output is the input) follows the same rule,
    the weight gradient its own table.  Each row's corner and one step below it in each of the
    three, for the engine running."""
    rng = np.random.default_rng(9)
    cap = ptl.backends.cpu.get_cpu_capability()
    cases = []
    rows = [r for t in (RULES, WGRAD_RULES) for k in ("AVX512", "AVX2") for r in t[k]]
    for width, least, total in rows:
        for w, ci, co in ((width, least, total - least), (width - 1, least, total - least),
                          (width, least - 1, total - least + 1), (width, least, total - least - 1)):
            cases += [(w, ci, co), (w, co, ci)]
    for width, ci, co in sorted(set(cases)):
        taken = winograd_expected(cap, width, ci, co)
        taken_w = winograd_expected(cap, width, ci, co, WGRAD_RULES)
        x = ptl.tensor(rng.standard_normal((1, ci, 3, width)).astype(np.float32))
        w = ptl.tensor(rng.standard_normal((co, ci, 3, 3)).astype(np.float32))
        gy = ptl.tensor(rng.standard_normal((1, co, 3, width)).astype(np.float32))
        out = []
        for m in (AUTO, ALWAYS if taken else NEVER, ALWAYS if taken_w else NEVER):
            with mode(m):
                y = F.conv2d(x, w, padding=1)
                dx, dw, _ = ptl.ops.aten.convolution_backward(
                    gy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
                out.append((y.numpy(), dx.numpy(), dw.numpy()))
        assert np.array_equal(out[0][0], out[1][0]), (width, ci, co)
        assert np.array_equal(out[0][1], out[1][1]), (width, ci, co)
        assert np.array_equal(out[0][2], out[2][2]), (width, ci, co)
    paths = []
    for m in (ALWAYS, NEVER):
        with mode(m):
            paths.append(F.conv2d(x, w, padding=1).numpy())
    assert not np.array_equal(*paths)   # the two paths' bits differ on these shapes


@pytest.mark.parametrize("cap", ["avx2", "default"])
def test_automatic_crossover_of_each_engine(cap):
    rerun_with_capability(__file__, cap, "-k", "automatic_crossover and not each_engine")


def test_mode_argument_checked():
    for bad in (3, -1, "always"):
        with pytest.raises(ValueError, match="expects 0, 1 or 2"):
            ptl._C._conv_winograd_mode(bad)


def test_nonfinite_inputs_keep_the_direct_path():
    """An Inf in the input or weight would spread NaN over whole tiles through the transforms;
    such calls run the direct path, so Inf and NaN land where the direct sum puts them."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 8, 10, 10)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    x[0, 3, 4, 5] = np.inf
    x[1, 2, 7, 1] = np.nan
    wbad = w.copy()
    wbad[2, 1, 0, 0] = -np.inf
    # the input gradient reads gy and w only: with x's Inf it stays on Winograd; the weight
    # gradient reads x and gy: with w's Inf it stays on Winograd
    for xa, wa, grad_direct in ((x, w, False), (np.nan_to_num(x), wbad, True)):
        ya, gxa, _, gwa = run(xa, wa, None, 1, ALWAYS)
        yb, gxb, _, gwb = run(xa, wa, None, 1, NEVER)
        np.testing.assert_array_equal(ya, yb)
        assert np.array_equal(gxa, gxb, equal_nan=True) == grad_direct
        assert np.array_equal(gwa, gwb, equal_nan=True) != grad_direct
    # the same data made finite takes Winograd again
    ya, _, _, _ = run(np.nan_to_num(x), w, None, 1, ALWAYS)
    yb, _, _, _ = run(np.nan_to_num(x), w, None, 1, NEVER)
    assert not np.array_equal(ya, yb)


SCAN_PARALLEL, SCAN_GRAIN = c_define("WINO_SCAN_PARALLEL"), c_define("WINO_SCAN_GRAIN")


@pytest.mark.parametrize("side", [45, 48])
@pytest.mark.parametrize("where", ["first", "last share", "last"])
@pytest.mark.parametrize("threads", [1, 2])
def test_nonfinite_scan_over_its_threshold(side, where, threads):
    """The input's scan for an Inf (on the threads from WINO_SCAN_PARALLEL floats, in shares
    of WINO_SCAN_GRAIN) finds it in any share: the forward then runs the direct path."""
    shape = (2, 16, side, side)
    size = int(np.prod(shape))
    assert (size < SCAN_PARALLEL) == (side == 45) and size > 3 * SCAN_GRAIN
    x = np.random.default_rng(side).standard_normal(shape).astype(np.float32)
    at = {"first": 0, "last share": size - SCAN_GRAIN // 2, "last": size - 1}[where]
    x.reshape(-1)[at] = np.inf
    w = np.random.default_rng(1).standard_normal((8, 16, 3, 3)).astype(np.float32)
    ya = run(x, w, None, 1, ALWAYS, threads=threads)[0]
    yb = run(x, w, None, 1, NEVER, threads=threads)[0]
    np.testing.assert_array_equal(ya, yb)
    assert not np.isfinite(ya).all()
