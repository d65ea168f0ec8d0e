/* derivatives.c -- the table of derivatives.def.  Mirrors the generated
 * torch/csrc/autograd/generated/Functions.cpp registry: one row per differentiable op,
 * naming its node, what the node saves and its formula (derivatives/<family>.c). */
#include <string.h>

#include "../c10/error.h"
#include "derivatives.h"

const PtlGradRow ptl_grad_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN) {PTL_OP_##OP, {.name = NAME, .apply = FN}, SAVE},
#define PTL_NONDIFF(OP, ARGS, NAME)
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_grad_row_count = (int)(sizeof(ptl_grad_rows) / sizeof(ptl_grad_rows[0]));

const PtlNondiffRow ptl_nondiff_rows[] = {
#define PTL_GRAD(OP, NAME, SAVE, FN)
#define PTL_NONDIFF(OP, ARGS, NAME) {PTL_OP_##OP, ARGS, NAME},
#include "derivatives.def"
#undef PTL_NONDIFF
#undef PTL_GRAD
};
const int ptl_nondiff_row_count = (int)(sizeof(ptl_nondiff_rows) / sizeof(ptl_nondiff_rows[0]));

/* The PTL_SAVE_* bit of `name` (len bytes) in schema sc, or 0 when it names nothing. */
static uint32_t
save_bit(const PtlSchema *sc, const char *name, size_t len)
{
    static const char *const results[] = {"result", "result1", "result2", "result3"};
    for (int i = 0; i < sc->nargs && i < PTL_SAVE_ARG_MAX; i++) {
        if (strlen(sc->args[i].name) == len && strncmp(sc->args[i].name, name, len) == 0) {
            return PTL_SAVE_ARG(i);
        }
    }
    for (int k = 0; k < 4 && k < sc->nrets; k++) {
        const char *rn = sc->rets_named ? sc->rets[k].name : "";
        if ((strlen(results[k]) == len && strncmp(results[k], name, len) == 0) ||
            (rn[0] != '\0' && strlen(rn) == len && strncmp(rn, name, len) == 0)) {
            return PTL_SAVE_RESULT << k;
        }
    }
    return 0;
}

int
ptl_grad_save_mask(int op, const char *names, uint32_t *mask)
{
    const PtlSchema *sc = &ptl_op(op)->schema;
    const char *p = names;
    *mask = 0;
    while (*p != '\0') {
        size_t len = strcspn(p, ", ");
        uint32_t bit = len > 0 ? save_bit(sc, p, len) : 0;
        if (len > 0 && bit == 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "derivatives.def: '%.*s' is neither an argument nor an output "
                                 "of %s%s%s",
                                 (int)len, p, sc->name, sc->overload[0] ? "." : "", sc->overload);
        }
        *mask |= bit;
        p += len;
        p += strspn(p, ", ");
    }
    return 0;
}
