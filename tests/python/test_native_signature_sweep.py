"""A fixed sweep of hostile calls (random arguments from a list of tensors, numbers, None,
tuples, strings; a random keyword among PyTorch's parameter names) of the Python functions
whose PyTorch twin is native: torch.linalg's, torch.special's and torch.fft's composites
(@native under linalg_*, special_*, fft_*), and the torch namespace's forms of the
nn.functional ops (torch.dropout, torch.batch_norm, ..., pytorchlite/_nn_ops.py).  Each call
has the outcome PyTorch 2.13's has (stored: the test runs without torch): the same exception
type, or a result of the same shape and dtype, and where PyTorch's argument parser names one
fault, the same message (Note [Native signatures] in src/python/arg_parse.c)."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from golden import answer
from helpers import torch

LINALG = ["cond", "diagonal", "eig", "eigvals", "householder_product", "lstsq", "lu",
          "lu_solve", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
          "norm", "pinv", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
          "vector_norm"]
SPECIAL = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p", "logit", "multigammaln",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
           "xlog1py", "xlogy", "zeta"]
FFT = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2",
       "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft",
       "rfft2", "rfftfreq", "rfftn"]
TORCH = ["adaptive_avg_pool1d", "adaptive_max_pool1d", "affine_grid_generator", "alpha_dropout",
         "alpha_dropout_", "avg_pool1d", "batch_norm", "bilinear",
         "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d",
         "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity", "ctc_loss", "dropout",
         "dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
         "feature_dropout_", "grid_sampler", "group_norm", "gru_cell", "hinge_embedding_loss",
         "instance_norm", "kl_div", "layer_norm", "logit", "lstm_cell", "margin_ranking_loss",
         "matrix_exp", "matrix_power", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
         "max_pool3d", "native_channel_shuffle", "pairwise_distance", "pdist", "pixel_shuffle",
         "pixel_unshuffle", "poisson_nll_loss", "prelu", "rms_norm", "rnn_relu_cell",
         "rnn_tanh_cell", "rrelu", "rrelu_", "selu", "selu_", "sinc", "triplet_margin_loss",
         "xlogy"]
SWEPT = ([("linalg", n) for n in LINALG] + [("special", n) for n in SPECIAL] +
         [("fft", n) for n in FFT] + [("", n) for n in TORCH])
KEYWORDS = ["dim", "out", "n", "norm", "ord", "keepdim", "dtype", "bogus", "input", "hermitian",
            "s", "eps", "atol", "driver"]
N_VALUES = 18
CALLS_PER_FUNCTION = 16

# what is left, each a check of PyTorch's kernels made in another order here or an accident
# of its FFT library: (module, function, argument indices, keyword) -> reason
LEFT = {
    # a complex x against a 0-size n: the dtype is refused before the shapes broadcast
    ("special", "chebyshev_polynomial_u", (17, 4), ()): "dtype before broadcast",
    ("special", "chebyshev_polynomial_w", (17, 0), ()): "dtype before broadcast",
    ("special", "zeta", (2, 17), ()): "dtype before broadcast",
    # MKL refuses an empty real input ("Inconsistent configuration parameters"); the empty
    # transform here is the empty result
    ("fft", "rfft", (4,), ()): "MKL's empty input",
    ("fft", "rfft", (4, 8), ()): "MKL's empty input",
    ("fft", "ihfft", (4,), ()): "MKL's empty input",
    # nn.functional's check of the dims, which torch.group_norm (native) leaves to size(1)
    ("", "group_norm", (2, 7, 15, 3), ()): "F's dims check",
    ("", "group_norm", (3, 7), ()): "F's dims check",
    # the kernel's dtype check before the shape check
    ("", "layer_norm", (17, 12), ()): "kernel check",
}
_PARSER = re.compile(r"^\w+\(\)(: argument '| received an invalid combination| got an "
                     r"unexpected| takes| missing)")
# Python's own arity and keyword messages: where the torch namespace's function is
# nn.functional's, a missing argument is Python's TypeError (the check runs on failure)
_PYTHON_ARITY = re.compile(r"^\w+\(\) (missing \d+ required positional argument|got an "
                           r"unexpected keyword|takes \d+ positional|got multiple values)")


def _values(lib):
    def mk(shape, dtype="float32"):
        a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
        return lib.tensor(a) if a.ndim else lib.tensor(float(a))
    return [mk((3, 3)), mk((2, 3, 3)), mk((4,)), mk(()), mk((0, 3)), lib.tensor([1, 0, 2]),
            -1, 0, 2, 0.5, float("nan"), None, (0, 1), "bad", True, mk((3, 3), "float64"),
            "ortho", lib.tensor([[1 + 1j, 2], [3, 4j]])]


def _calls():
    rng = np.random.default_rng(0)
    calls = []
    for module, name in SWEPT:
        for k in range(CALLS_PER_FUNCTION):
            idx = [int(i) for i in rng.integers(0, N_VALUES, rng.integers(1, 5))]
            if k < 6:   # a tensor first: the calls reach the later parameters
                idx = [[0, 1, 2, 15, 17, 3][k]] + idx[1:]
            kw = ()
            if k >= 12:
                kw = ((KEYWORDS[int(rng.integers(0, len(KEYWORDS)))],
                       int(rng.integers(0, N_VALUES))),)
            calls.append((module, name, tuple(idx), kw))
    return calls


CALLS = _calls()


def _outcome(lib, module, name, idx, kw):
    fn = getattr(getattr(lib, module) if module else lib, name)
    v = _values(lib)
    try:
        r = fn(*[v[i] for i in idx], **{k: v[i] for k, i in kw})
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return ["err", type(e).__name__, str(e).split("\n")[0]]
    r = r[0] if isinstance(r, (tuple, list)) else r
    return ["ok", list(r.shape), str(r.dtype).split(".")[-1]] if hasattr(r, "shape") else ["ok"]


def _same(theirs, ours):
    if theirs[:2] != ours[:2]:
        return False
    if theirs[0] == "ok":
        return theirs == ours
    if not _PARSER.match(theirs[2]) or "invalid combination" in theirs[2] + ours[2]:
        return True   # not the parser's, or the bindings' general form (one of the two)
    return theirs[2] == ours[2] or bool(_PYTHON_ARITY.match(ours[2]))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("module", ["linalg", "special", "fft", ""],
                         ids=["linalg", "special", "fft", "torch"])
def test_hostile_calls_have_torchs_outcome(module):
    bad = []
    for call in CALLS:
        if call[0] != module or call in LEFT:
            continue
        with np.errstate(all="ignore"):
            theirs = answer(lambda: _outcome(torch, *call), sub=repr(call))
        ours = _outcome(ptl, *call)
        if not _same(theirs, ours):
            bad.append(f"{call}: torch {theirs}, ours {ours}")
    assert not bad, f"{len(bad)} differ:\n" + "\n".join(bad)


def test_the_left_calls_are_swept_calls():
    assert set(LEFT) <= set(CALLS)
