"""lobpcg (torch/_lobpcg.py): the k largest or smallest eigenpairs of a symmetric positive
definite generalized problem A x = lambda B x by the locally optimal block preconditioned
conjugate gradient method, over dense, sparse (COO) or batched dense A.

Note [LOBPCG iteration]
-----------------------
Each step does a Rayleigh-Ritz projection onto a search basis S = [X, P, W] of m rows: X
the current n eigenvector estimates, P the previous step's search direction, W the
preconditioned residuals iK (A X - B X diag(E)).  Eigenpairs whose backward-stable relative
residual |r_j| / (|x_j| (|A| + |e_j| |B|)) is below tol, counted from the first one in
order, are "converged"; their columns leave the search basis (soft locking), and iteration
stops when k have converged, after niter steps, or when a tracker sets
bvars["force_stop"].
- method="basic" (Knyazev 2001): S is used as it is, and the Rayleigh-Ritz step makes the
  small problem standard with a Cholesky factor of the scaled S^T B S (this fails when S
  loses rank, which is why the method is "less robust").
- method="ortho" (Duersch, Shao, Yang and Gu 2018): W is made B-orthonormal and
  B-orthogonal to [X, P] before use (repeated projection plus SVQB, Stathopoulos and Wu
  2002; with ortho_use_drop, columns that add little to the span are dropped), and P is
  rebuilt from the Ritz coefficients so that S stays B-orthonormal; the small problem is
  then a plain eigh.
The worker's state is the one PyTorch's tracker sees: iparams / fparams / bparams (m, n, k,
niter; tol and the ortho tolerances; largest, ortho_use_drop), ivars / fvars / bvars / tvars
(istep, converged_count, converged_end, iterations_left; the norms of X, A X and B X, the
orthogonalization errors; force_stop; rerr) and A, B, iK, E, X, S, R.
With X None the start is torch.randn((m, n)) from the default generator, whose numbers
differ from PyTorch's; with the same X both libraries run the same iteration.

Note [LOBPCG backward]
----------------------
When A requires grad, A is first symmetrized ((A + A^T) / 2, as PyTorch does, so that the
gradient is symmetric) and the eigenpairs (D, U) of the k found pairs get this gradient:
  A_grad = U (diag(D_grad) + F * (U^T U_grad)) U^T                 (within span(U))
         + sum_j Q (Q^T (d_j I - A) Q)^-1 Q^T U_grad[:, j] u_j^T    (its complement)
with F_ij = 1 / (d_j - d_i) off the diagonal and 0 on it, and Q an orthonormal basis of
the complement of span(U): eigenvector j moves within the complement by
(d_j I - A)^+ dA u_j there.  PyTorch computes the second term through the characteristic
polynomial of D applied to A and one Cholesky solve; both are the exact solution of the same
Sylvester equation.  As in PyTorch, B must be None and A dense and real for backward."""
from . import _C, linalg, sparse
from . import overrides as _overrides
from .autograd.function import Function

__all__ = ["lobpcg"]


def _mm(A, X):
    """A X with A None meaning the identity, A dense or sparse COO."""
    if A is None:
        return X
    return sparse.mm(A, X) if A.is_sparse else A @ X


def _qform(A, S):
    return S.mT @ _mm(A, S)


def _eigh(M, largest=False):
    E, Z = linalg.eigh(M, UPLO="U")
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


def _norm(t):
    return float(linalg.vector_norm(t))


class LOBPCG:
    """The iteration of one (m, m) problem (see Note [LOBPCG iteration])."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = _C._functions["zeros"]((n,), dtype=X.dtype, device=X.device)
        self.R = _C._functions["zeros"]((m, n), dtype=X.dtype, device=X.device)
        self.S = _C._functions["zeros"]((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars = {}
        self.ivars = {"istep": 0}
        self.fvars = {"_": 0.0}
        self.bvars = {"_": False}

    def __str__(self):
        names = ["iparams", "fparams", "bparams", "ivars", "fvars", "bvars", "tvars", "A", "B",
                 "iK", "X", "E"]
        return "LOBPCG:\n" + "".join(f"  {k}={getattr(self, k)}\n" for k in names)

    def run(self):
        self.update()
        if self.tracker is not None:
            self.call_tracker()
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.call_tracker()

    def call_tracker(self):
        self.tracker(self)

    def stop_iteration(self):
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def update(self):
        """One step: the first one measures the norms and sets the counters."""
        if self.ivars["istep"] == 0:
            x_norm = _norm(self.X)
            self.fvars["X_norm"] = x_norm
            self.fvars["A_norm"] = _norm(_mm(self.A, self.X)) / x_norm
            self.fvars["B_norm"] = _norm(_mm(self.B, self.X)) / x_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._step_ortho()
        else:
            self._step_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self):
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E

    def update_converged_count(self):
        """The number of leading eigenpairs whose relative residual is below tol."""
        previous = self.ivars["converged_count"]
        E, X, R = self.E, self.X, self.R
        rerr = linalg.vector_norm(R, 2, (0,)) / (linalg.vector_norm(X, 2, (0,)) * (
            self.fvars["A_norm"] + E[:X.shape[-1]].abs() * self.fvars["B_norm"]))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        if count < previous:
            raise AssertionError(f"the number of converged eigenpairs (was {previous}, got "
                                 f"{count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def _set_basis(self, P, W):
        """S = [X, P, W] (P may be None on the first step); converged_end = its width."""
        n = self.iparams["n"]
        np_ = 0 if P is None else P.shape[-1]
        self.S[:, :n] = self.X
        if P is not None:
            self.S[:, n:n + np_] = P
        end = n + np_ + W.shape[-1]
        self.S[:, n + np_:end] = W
        self.ivars["converged_end"] = end

    def _step_basic(self):
        n = self.iparams["n"]
        nc, ns = self.ivars["converged_count"], self.ivars["converged_end"]
        if self.ivars["istep"] == 0:
            Ri, E, Z = self._rayleigh_ritz(self.X)
            self.X[:] = self.X @ (Ri @ Z)
            self.E[:] = E
            self.update_residual()
            self.update_converged_count()
            self._set_basis(None, _mm(self.iK, self.R))
            return
        S = self.S[:, nc:ns]
        Ri, E, Z = self._rayleigh_ritz(S)
        self.X[:, nc:] = S @ (Ri @ Z[:, :n - nc])
        self.E[nc:] = E[:n - nc]
        P = S @ (Ri @ Z[:, n:2 * n - nc])
        self.update_residual()
        nc = self.update_converged_count()
        self._set_basis(P, _mm(self.iK, self.R[:, nc:]))

    def _step_ortho(self):
        n, largest = self.iparams["n"], self.bparams["largest"]
        nc, ns = self.ivars["converged_count"], self.ivars["converged_end"]
        if self.ivars["istep"] == 0:
            Ri, _, Z = self._rayleigh_ritz(self.X)
            self.X = self.X @ (Ri @ Z)
            self.update_residual()
            self.update_converged_count()
            self._set_basis(None, self._ortho(self.R, self.X))
            return
        S = self.S[:, nc:ns]
        E, Z = _eigh(_qform(self.A, S), largest)
        self.X[:, nc:] = S @ Z[:, :n - nc]
        self.E[nc:] = E[:n - nc]
        P = S @ (Z[:, n - nc:] @ linalg.qr(Z[:n - nc, n - nc:].mT).Q)
        self.update_residual()
        nc = self.update_converged_count()
        V = _C._functions["cat"]([self.X, P], 1)
        self._set_basis(P, self._ortho(self.R[:, nc:], V))

    def _rayleigh_ritz(self, S):
        """(Ri, E, Z): the Ritz values E and vectors S Ri Z of the search basis S."""
        Ri = self._rayleigh_ritz_transform(S)
        E, Z = _eigh(_qform(_qform(self.A, S), Ri), self.bparams["largest"])
        return Ri, E, Z

    def _rayleigh_ritz_transform(self, S):
        """Ri, upper triangular, with Ri^T S^T B S Ri = I: the Cholesky factor of S^T B S
        scaled to a unit diagonal, inverted and scaled back."""
        SBS = _qform(self.B, S)
        d = SBS.diagonal(0, -2, -1) ** -0.5
        R = linalg.cholesky(SBS * d * d.reshape(-1, 1), upper=True)
        return linalg.solve_triangular(R, d.diag_embed(), upper=True, left=False)

    def _svqb(self, U, drop, tau):
        """U with B-orthonormal columns (Duersch's algorithm 4): exact zero columns go;
        eigenvalues of the scaled Gram matrix below tau * max are dropped (drop) or raised
        to that floor."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nonzero = (d != 0).nonzero().flatten()
        if nonzero.numel() < d.numel():
            U = U[:, nonzero]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        scale = (d ** -0.5).reshape(-1, 1)
        E, Z = _eigh(UBU * scale * scale.mT)
        floor = tau * E.abs().max()
        if drop:
            keep = (E > floor).nonzero().flatten()
            E, Z, scale = E[keep], Z[:, keep], scale[keep]
        else:
            E = E.clamp(min=floor)
        return (U * scale.mT) @ (Z * E ** -0.5)

    def _ortho(self, U, V):
        """U made B-orthonormal and B-orthogonal to V (Duersch's algorithms 3 and 6): up
        to ortho_i_max projections, each followed by up to ortho_j_max SVQB passes; the
        relative errors go into fvars.  May return no columns."""
        m = self.iparams["m"]
        tol = self.fparams["ortho_tol"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [k for k in self.fvars if k.startswith("ortho_") and k.endswith("_rerr")]:
            del self.fvars[key]
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = linalg.vector_norm(_mm(self.B, V))
        BU = _mm(self.B, U)
        VBU = V.mT @ BU
        i = j = 0
        for i in range(self.iparams["ortho_i_max"]):
            U = U - V @ VBU
            drop, tau = False, self.fparams["ortho_tol_drop"]
            for j in range(self.iparams["ortho_j_max"]):
                if use_drop:
                    U = self._svqb(U, drop, tau)
                    drop, tau = True, self.fparams["ortho_tol_replace"]
                else:
                    U = self._svqb(U, False, self.fparams["ortho_tol_replace"])
                if U.numel() == 0:
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _mm(self.B, U)
                UBU = U.mT @ BU
                eye = _C._functions["eye"](UBU.shape[-1], dtype=UBU.dtype, device=UBU.device)
                rerr = _norm(UBU - eye) / float(linalg.vector_norm(BU) * linalg.vector_norm(U))
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tol:
                    break
            VBU = V.mT @ BU
            rerr = _norm(VBU) / float(BV_norm * linalg.vector_norm(U))
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tol:
                break
            if m < U.shape[-1] + V.shape[-1]:
                raise ValueError(f"Overdetermined shape of U: #B-cols(={self.B.shape[-1]}) >= "
                                 f"#U-cols(={U.shape[-1]}) + #V-cols(={V.shape[-1]}) must "
                                 "hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


def _params(A, k, X, n, niter, tol, largest, method, ortho_iparams, ortho_fparams,
            ortho_bparams, dtype):
    if tol is None:
        tol = {_C.float32: 1.2e-07, _C.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)
    return iparams, fparams, bparams


def _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
            ortho_fparams, ortho_bparams):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = A.dtype if A.dtype in (_C.float16, _C.float32, _C.float64) else _C.float32
    method = "ortho" if method is None else method
    iparams, fparams, bparams = _params(A, k, X, n, niter, tol, largest, method,
                                        ortho_iparams, ortho_fparams, ortho_bparams, dtype)
    m, n, k = iparams["m"], iparams["n"], iparams["k"]

    def solve(A_, B_, X_):
        if X_ is None:
            X_ = _C._functions["randn"]((m, n), dtype=dtype, device=A.device)
        if not (X_.dim() == 2 and tuple(X_.shape) == (m, n)):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.dim() == 2:
        return solve(A, B, X)
    batch = tuple(A.shape[:-2])
    count = 1
    for s in batch:
        count *= s
    bA = A.reshape((count, m, m))
    bB = None if B is None else B.reshape((count, m, m))
    bX = None if X is None else X.reshape((count,) + tuple(X.shape[-2:]))
    Es, Us = [], []
    for i in range(count):
        iparams["batch_index"] = i
        E, U = solve(bA[i], None if bB is None else bB[i], None if bX is None else bX[i])
        Es.append(E)
        Us.append(U)
    stack = _C._functions["stack"]
    return stack(Es).reshape(batch + (k,)), stack(Us).reshape(batch + (m, k))


def _eigenpairs_backward(D_grad, U_grad, A, D, U):
    """A's gradient from those of k eigenpairs (D, U) of symmetric A (Note [LOBPCG
    backward])."""
    m, k = U.shape[-2], U.shape[-1]
    Ut = U.mT
    F = D.unsqueeze(-2) - D.unsqueeze(-1)
    F.diagonal(0, -2, -1).fill_(float("inf"))
    inner = Ut @ U_grad * F.reciprocal()
    if D_grad is not None:
        inner = inner + D_grad.diag_embed()
    grad = U @ inner @ Ut
    if k == m:
        return grad
    Q = linalg.qr(U, mode="complete").Q[..., k:]
    eye = _C._functions["eye"](m, dtype=A.dtype, device=A.device)
    QtG = Q.mT @ U_grad
    cols = []
    for j in range(k):
        M = Q.mT @ (D[..., j, None, None] * eye - A) @ Q
        cols.append(Q @ linalg.solve(M, QtG[..., j:j + 1]))
    return grad + _C._functions["cat"](cols, -1) @ Ut


class _LOBPCGFunction(Function):
    @staticmethod
    def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                ortho_fparams, ortho_bparams):
        A = A if A.is_sparse else A.contiguous()
        if B is not None and not B.is_sparse:
            B = B.contiguous()
        D, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker,
                       ortho_iparams, ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A, B, D, U = ctx.saved_tensors
        if A.is_sparse or (B is not None and B.is_sparse and ctx.needs_input_grad[2]):
            raise ValueError("lobpcg.backward does not support sparse input yet. Note that "
                             "lobpcg.forward does though.")
        if A.dtype.is_complex or (B is not None and B.dtype.is_complex):
            raise ValueError("lobpcg.backward does not support complex input yet. Note that "
                             "lobpcg.forward does though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        if U_grad is None:
            U_grad = _C._functions["zeros_like"](U)
        return (_eigenpairs_backward(D_grad, U_grad, A, D, U),) + (None,) * 13


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E, X): the k largest (largest=True, the default) or smallest eigenvalues of the
    symmetric positive definite A x = lambda B x (B None: the identity) and their
    eigenvectors, for A (*, m, m) dense, batched or sparse; see Note [LOBPCG iteration]
    for X, n, iK, niter, tol, method ("ortho" or "basic"), tracker and the ortho_*
    dictionaries, and Note [LOBPCG backward] for gradients."""
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = None if B is None else (B + B.mT) / 2
        return _LOBPCGFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method,
                                     tracker, ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                   ortho_fparams, ortho_bparams)


# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
