/* derivatives/join.c -- derivative formulas of cat (concat, hstack, vstack) and stack
 * (aten/native/join.c): each input gets its slice of the gradient.  Mirrors their rows of
 * tools/autograd/derivatives.yaml. */
#include "../formula.h"

/* cat/concat/hstack/vstack: input i's slice of g along the concatenation dim, reshaped to
 * the input (hstack and vstack first lift inputs to 1-D / 2-D) */
int
cat_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int id = n->op->id, lift = 0;
    int64_t d, at = 0;
    if (id == PTL_OP_hstack) {
        d = gi[0]->dim == 1 ? 0 : 1;
        lift = 1;
    }
    else if (id == PTL_OP_vstack) {
        d = 0;
        lift = 2;
    }
    else {
        d = ptl_iv_to_int(&n->args[1]);
        d = d < 0 ? d + gi[0]->dim : d;
    }
    for (int i = 0; i < n->num_next; i++) {
        const PtlInputMeta *m = &n->input_meta[i];
        int64_t len;
        if (lift == 2) {
            len = m->dim < 2 ? 1 : m->sizes[0];
        }
        else if (lift == 1) {
            len = m->dim == 0 ? 1 : m->sizes[d];
        }
        else if (m->dim == 1 && m->sizes[0] == 0) {
            /* legacy cat skips 1-D empty inputs: their gradient is empty too */
            if (NEEDS(i) && give(n, go, i, zeros_input(sc, n, i, gi[0]->dtype)) < 0) {
                return scope_end(sc, -1);
            }
            scope_end(sc, 0);
            continue;
        }
        else {
            len = m->sizes[d];
        }
        PtlIValue v[4] = {ptl_iv_tensor(gi[0]), ptl_iv_int(d), ptl_iv_int(at), ptl_iv_int(len)};
        if (NEEDS(i) &&
            give(n, go, i, reshape_to(sc, fv(sc, PTL_OP_narrow, 4, v), m->sizes, m->dim)) < 0) {
            return scope_end(sc, -1);
        }
        scope_end(sc, 0);   /* each input's temporaries go before the next's */
        at += len;
    }
    return scope_end(sc, 0);
}

/* stack(tensors, dim): input i gets select(g, dim, i) */
int
stack_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int64_t d = ptl_iv_to_int(&n->args[1]);
    d = d < 0 ? d + gi[0]->dim : d;
    for (int i = 0; i < n->num_next; i++) {
        PtlIValue v[3] = {ptl_iv_tensor(gi[0]), ptl_iv_int(d), ptl_iv_int(i)};
        if (NEEDS(i) && give(n, go, i, fv(sc, PTL_OP_select_int, 3, v)) < 0) {
            return scope_end(sc, -1);
        }
        scope_end(sc, 0);
    }
    return scope_end(sc, 0);
}
