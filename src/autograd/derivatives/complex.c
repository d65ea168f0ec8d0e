/* derivatives/complex.c -- derivative formulas of the ops of aten/native/complex.c (real,
 * imag, view_as_real, view_as_complex, complex, polar, angle, conj, conj_physical).  Mirrors
 * their rows of tools/autograd/derivatives.yaml and FunctionsManual.cpp.
 *
 * Note [Complex autograd]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 * PyTorch's convention, kept here: for a real loss L of a complex z = x + iy, z.grad is
 * dL/dx + i dL/dy (twice the Wirtinger derivative dL/dz*), so that gradient descent
 * z - lr * z.grad lowers L as it does for two real parameters.  A node receives g (that
 * gradient with respect to its output w) and returns, for each input z,
 *     conj(dw/dz) * g + conj(g) * dw/dz*            (PyTorch's autograd note)
 * which for a holomorphic w (exp, log, sqrt, reciprocal, mul, div) is g * conj(w'(z)):
 * derivatives/unary.c and binary.c conjugate their factors when they are complex (CONJ in
 * formula.h) and are unchanged for real ones.  The non-holomorphic ops write the formula out
 * (abs: g * z / |z|; angle, polar and the ops below).  A real input of a complex
 * computation gets the real part of its gradient (finish() in formula.h, PyTorch's
 * handle_r_to_c), and a complex input of a real one the gradient cast to complex.
 * A backward from a complex root needs an explicit gradient (engine.c: "grad can be
 * implicitly created only for real scalar outputs"). */
#include "../formula.h"

/* a tensor whose real part is re and imaginary part im (either may be a wrapped number) */
#define CPLX(RE, IM) f2(sc, PTL_OP_complex, (RE), (IM))
#define REAL(A) f1(sc, PTL_OP_real, (A))
#define IMAG(A) f1(sc, PTL_OP_imag, (A))

/* imag(self): dL/dy = g, so the gradient is i g */
int
imag_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, CPLX(zeros_of(sc, gi[0]), gi[0])));
}

/* view_as_real(self): the (..., 2) gradient read back as complex numbers */
int
view_as_real_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, f1(sc, PTL_OP_view_as_complex,
                                           f1(sc, PTL_OP_contiguous, gi[0]))));
}

/* view_as_complex(self): the gradient's parts as the last dim */
int
view_as_complex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, op1(PTL_OP_view_as_real, gi[0])) : 0;
}

/* complex(real, imag): the gradient's real part and imaginary part */
int
complex_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *g = gi[0];
    int is_complex = ptl_dtype_is_complex(g->dtype);
    if ((NEEDS(0) && give(n, go, 0, is_complex ? REAL(g) : g) < 0) ||
        (NEEDS(1) && give(n, go, 1, is_complex ? IMAG(g) : zeros_of(sc, g)) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* polar(abs, angle) = abs * e^{i angle}: with g = gr + i gi,
 *   d abs   = Re(conj(g) e^{i angle})   = gr cos + gi sin
 *   d angle = Re(conj(g) i result)      = abs (gi cos - gr sin) */
int
polar_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    PtlTensorImpl *r = sv(sc, n, 0), *theta = sv(sc, n, 1);
    PtlTensorImpl *g = gi[0];
    PtlTensorImpl *gr = ptl_dtype_is_complex(g->dtype) ? REAL(g) : g;
    PtlTensorImpl *gim = ptl_dtype_is_complex(g->dtype) ? IMAG(g) : zeros_of(sc, g);
    PtlTensorImpl *c = f1(sc, PTL_OP_cos, theta), *s = f1(sc, PTL_OP_sin, theta);
    if ((NEEDS(0) && give(n, go, 0, ADD(MUL(gr, c), MUL(gim, s))) < 0) ||
        (NEEDS(1) && give(n, go, 1, MUL(r, SUB(MUL(gim, c), MUL(gr, s)))) < 0)) {
        return scope_end(sc, -1);
    }
    return scope_end(sc, 0);
}

/* angle(self): for a complex z = x + iy, d atan2(y, x) = (-y dx + x dy) / |z|^2, so the
 * gradient is g i z / |z|^2, 0 at z = 0 (PyTorch's angle_backward); a real self's angle is
 * piecewise constant: zeros */
int
angle_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *z = sv(sc, n, 0);
    if (z != NULL && !ptl_dtype_is_complex(z->dtype)) {
        return scope_end(sc, give(n, go, 0, zeros_of(sc, z)));
    }
    PtlTensorImpl *x = REAL(z), *y = IMAG(z);
    PtlTensorImpl *r2 = ADD(MUL(x, x), MUL(y, y));
    PtlTensorImpl *scale = DIV(gi[0], ADD(r2, EQ(r2, num(sc, 0.0))));
    return scope_end(sc, give(n, go, 0, CPLX(NEG(MUL(y, scale)), MUL(x, scale))));
}

/* conj(self), conj_physical(self): the gradient's conjugate (a real one is its own) */
int
conj_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    return scope_end(sc, give(n, go, 0, CONJ(gi[0])));
}
