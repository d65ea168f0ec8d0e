/* graph_exec.c -- the program of Note [Graph programs]: building and running it. */
#include "graph_exec.h"

#include <string.h>

#include "../autograd/autograd.h"
#include "../aten/tensor_iterator.h"
#include "../c10/error.h"

#define FRAME_ON_STACK 64

static void
xincref(PtlTensorImpl *t)
{
    if (t != NULL) {
        ptl_incref(t);
    }
}

typedef enum StepKind {
    STEP_OP,
    STEP_LIST,
    STEP_UNPACK,
    STEP_FUSED,
} StepKind;

typedef struct Fusion {
    PtlProgramInstr prog[PTL_PROGRAM_MAX_REGS];
    double scalars[PTL_PROGRAM_MAX_REGS];
    int ninstr, nscalars;
    const PtlJitProgram *fallback;
} Fusion;

typedef struct Step {
    StepKind kind;
    int nin, nout;
    int *in;      /* slots read (-1: the schema default of an OP argument) */
    int *out;     /* slots written */
    const PtlOperator *op;   /* STEP_OP */
    int list_tag;            /* STEP_LIST */
    Fusion *fusion;          /* STEP_FUSED */
} Step;

struct PtlJitProgram {
    int nslots, ninputs;
    PtlIValue *constants;   /* [nslots]: the constants, None elsewhere; owned */
    uint8_t *written;       /* [nslots]: 1 for an input, a constant or a step's output */
    Step *steps;
    int nsteps, capacity;
    int *outputs;
    int noutputs;
};

void
ptl_jit_value_release(PtlIValue *v)
{
    if (v->owned && (v->tag == PTL_IV_INTLIST || v->tag == PTL_IV_DOUBLELIST ||
                     v->tag == PTL_IV_STRING)) {
        free(v->tag == PTL_IV_STRING ? (void *)v->u.s : (void *)v->u.il.data);
        v->tag = PTL_IV_NONE;
        v->owned = 0;
        return;
    }
    ptl_ivalue_release(v);
}

/* An owned copy of v (tensors retained, lists and strings copied); 0 or -1. */
static int
value_copy(const PtlIValue *v, PtlIValue *out)
{
    *out = *v;
    out->owned = 0;
    switch ((PtlIValueTag)v->tag) {
    case PTL_IV_TENSOR:
        ptl_incref(v->u.t);
        return 0;
    case PTL_IV_STRING: {
        const size_t len = strlen(v->u.s) + 1;
        char *s = malloc(len);
        if (s == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        memcpy(s, v->u.s, len);
        out->u.s = s;
        break;
    }
    case PTL_IV_INTLIST:
    case PTL_IV_DOUBLELIST:
    case PTL_IV_TENSORLIST: {
        const size_t n = (size_t)v->u.il.n, size = v->tag == PTL_IV_TENSORLIST
                                                       ? sizeof(PtlTensorImpl *) : 8;
        void *data = malloc(n ? n * size : 1);
        if (data == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        }
        if (n) {
            memcpy(data, v->u.il.data, n * size);
        }
        out->u.il.data = data;
        if (v->tag == PTL_IV_TENSORLIST) {
            for (size_t i = 0; i < n; i++) {
                xincref(v->u.tl.data[i]);
            }
        }
        break;
    }
    default:
        return 0;
    }
    out->owned = 1;
    return 0;
}

PtlJitProgram *
ptl_jit_program_new(int nslots, int ninputs)
{
    if (nslots < 0 || ninputs < 0 || ninputs > nslots) {
        ptl_error_set(PTL_ERR_RUNTIME, "a graph program needs 0 <= ninputs <= nslots, got %d "
                      "inputs and %d slots", ninputs, nslots);
        return NULL;
    }
    PtlJitProgram *p = calloc(1, sizeof(*p));
    if (p == NULL || (p->constants = calloc((size_t)nslots + 1, sizeof(PtlIValue))) == NULL ||
        (p->written = calloc((size_t)nslots + 1, 1)) == NULL) {
        ptl_jit_program_free(p);
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        return NULL;
    }
    p->nslots = nslots;
    p->ninputs = ninputs;
    memset(p->written, 1, (size_t)ninputs);
    return p;
}

void
ptl_jit_program_free(PtlJitProgram *p)
{
    if (p == NULL) {
        return;
    }
    for (int i = 0; p->constants != NULL && i < p->nslots; i++) {
        ptl_jit_value_release(&p->constants[i]);
    }
    for (int i = 0; i < p->nsteps; i++) {
        free(p->steps[i].in);
        free(p->steps[i].out);
        free(p->steps[i].fusion);
    }
    free(p->steps);
    free(p->constants);
    free(p->written);
    free(p->outputs);
    free(p);
}

static int
check_read(const PtlJitProgram *p, int slot, const char *what)
{
    if (slot < 0 || slot >= p->nslots || !p->written[slot]) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s reads slot %d, which no earlier node or "
                             "input defines", what, slot);
    }
    return 0;
}

static int
claim(PtlJitProgram *p, int slot, const char *what)
{
    if (slot < 0 || slot >= p->nslots || p->written[slot]) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s writes slot %d, which is out of range or "
                             "already defined", what, slot);
    }
    p->written[slot] = 1;
    return 0;
}

int
ptl_jit_program_set_constant(PtlJitProgram *p, int slot, PtlIValue v)
{
    if (claim(p, slot, "a constant") < 0) {
        return -1;
    }
    return value_copy(&v, &p->constants[slot]);
}

/* Appends a step reading in[0..nin) and writing out[0..nout); its slots are checked. */
static Step *
add_step(PtlJitProgram *p, StepKind kind, const int *in, int nin, const int *out, int nout,
         const char *what)
{
    for (int i = 0; i < nin; i++) {
        if ((kind != STEP_OP || in[i] != -1) && check_read(p, in[i], what) < 0) {
            return NULL;
        }
    }
    for (int i = 0; i < nout; i++) {
        if (claim(p, out[i], what) < 0) {
            return NULL;
        }
    }
    if (p->nsteps == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 16;
        Step *s = realloc(p->steps, sizeof(Step) * (size_t)cap);
        if (s == NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "out of memory");
            return NULL;
        }
        p->steps = s;
        p->capacity = cap;
    }
    Step *s = &p->steps[p->nsteps];
    memset(s, 0, sizeof(*s));
    s->in = malloc(sizeof(int) * (size_t)(nin + 1));
    s->out = malloc(sizeof(int) * (size_t)(nout + 1));
    if (s->in == NULL || s->out == NULL) {
        free(s->in);
        free(s->out);
        ptl_error_set(PTL_ERR_MEMORY, "out of memory");
        return NULL;
    }
    if (nin) {
        memcpy(s->in, in, sizeof(int) * (size_t)nin);
    }
    if (nout) {
        memcpy(s->out, out, sizeof(int) * (size_t)nout);
    }
    s->kind = kind;
    s->nin = nin;
    s->nout = nout;
    p->nsteps++;
    return s;
}

int
ptl_jit_program_add_op(PtlJitProgram *p, const PtlOperator *op, const int *args, int nargs,
                       const int *rets, int nrets)
{
    const PtlSchema *s = &op->schema;
    int full[PTL_SCHEMA_MAX_ARGS];
    if (nargs > s->nargs || nrets != s->nrets) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s%s%s takes %d arguments and returns %d "
                             "values, the node has %d inputs and %d outputs", s->name,
                             s->overload[0] ? "." : "", s->overload, s->nargs, s->nrets, nargs,
                             nrets);
    }
    for (int i = 0; i < s->nargs; i++) {
        full[i] = i < nargs ? args[i] : -1;
        if (full[i] == -1 && !s->args[i].has_default && !s->args[i].optional) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s%s%s: argument '%s' has no default "
                                 "and the node does not give it", s->name,
                                 s->overload[0] ? "." : "", s->overload,
                                 s->args[i].name);
        }
    }
    Step *st = add_step(p, STEP_OP, full, s->nargs, rets, nrets, s->name);
    if (st == NULL) {
        return -1;
    }
    st->op = op;
    return 0;
}

int
ptl_jit_program_add_list(PtlJitProgram *p, int tag, const int *items, int nitems, int out)
{
    if (tag != PTL_IV_INTLIST && tag != PTL_IV_DOUBLELIST && tag != PTL_IV_TENSORLIST) {
        return ptl_error_set(PTL_ERR_RUNTIME, "prim::ListConstruct: a graph program builds "
                             "int, float and tensor lists only");
    }
    Step *st = add_step(p, STEP_LIST, items, nitems, &out, 1, "prim::ListConstruct");
    if (st == NULL) {
        return -1;
    }
    st->list_tag = tag;
    return 0;
}

int
ptl_jit_program_add_unpack(PtlJitProgram *p, int list, const int *outs, int nouts)
{
    return add_step(p, STEP_UNPACK, &list, 1, outs, nouts, "prim::ListUnpack") ? 0 : -1;
}

int
ptl_jit_program_add_fusion(PtlJitProgram *p, const PtlProgramInstr *prog, int ninstr,
                           const double *scalars, int nscalars,
                           const PtlJitProgram *fallback, const int *inputs, int ninputs,
                           int out)
{
    if (ninstr < 1 || nscalars < 0 || ninputs < 1 ||
        ninputs + nscalars + ninstr > PTL_PROGRAM_MAX_REGS || fallback == NULL ||
        fallback->ninputs != ninputs || fallback->noutputs != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "prim::FusionGroup: a pointwise program of %d "
                             "instructions over %d tensors and %d scalars does not fit its "
                             "registers or its subgraph", ninstr, ninputs, nscalars);
    }
    for (int i = 0; i < ninstr; i++) {
        const int limit = ninputs + nscalars + i;
        if (prog[i].op < 0 || prog[i].op >= PTL_PROGRAM_OP_COUNT || prog[i].a < 0 ||
            prog[i].a >= limit || prog[i].b < 0 || prog[i].b >= limit) {
            return ptl_error_set(PTL_ERR_RUNTIME, "prim::FusionGroup: instruction %d of its "
                                 "pointwise program is invalid", i);
        }
    }
    Fusion *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    Step *st = add_step(p, STEP_FUSED, inputs, ninputs, &out, 1, "prim::FusionGroup");
    if (st == NULL) {
        free(f);
        return -1;
    }
    memcpy(f->prog, prog, sizeof(*prog) * (size_t)ninstr);
    if (nscalars) {
        memcpy(f->scalars, scalars, sizeof(double) * (size_t)nscalars);
    }
    f->ninstr = ninstr;
    f->nscalars = nscalars;
    f->fallback = fallback;
    st->fusion = f;
    return 0;
}

int
ptl_jit_program_set_outputs(PtlJitProgram *p, const int *slots, int n)
{
    for (int i = 0; i < n; i++) {
        if (check_read(p, slots[i], "the graph's return") < 0) {
            return -1;
        }
    }
    int *o = malloc(sizeof(int) * (size_t)(n + 1));
    if (o == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    if (n) {
        memcpy(o, slots, sizeof(int) * (size_t)n);
    }
    free(p->outputs);
    p->outputs = o;
    p->noutputs = n;
    return 0;
}

int
ptl_jit_program_num_inputs(const PtlJitProgram *p)
{
    return p->ninputs;
}

int
ptl_jit_program_num_outputs(const PtlJitProgram *p)
{
    return p->noutputs;
}

/* ---- running ---- */

/* Whether an argument of schema a may hold a value tagged tag (the graph's inputs are only
 * checked here, so a wrong one raises instead of reaching a kernel). */
static int
arg_accepts(const PtlArg *a, int tag)
{
    if (tag == PTL_IV_NONE) {
        return a->optional || (a->has_default && a->def.tag == PTL_IV_NONE);
    }
    switch ((PtlArgKind)a->kind) {
    case PTL_ARG_TENSOR:   /* a number becomes a wrapped-number tensor, as in eager calls */
        return tag == PTL_IV_TENSOR || tag == PTL_IV_INT || tag == PTL_IV_BOOL ||
               tag == PTL_IV_DOUBLE || tag == PTL_IV_COMPLEX;
    case PTL_ARG_INT:
    case PTL_ARG_BOOL: return tag == PTL_IV_INT || tag == PTL_IV_BOOL;
    case PTL_ARG_FLOAT: return tag == PTL_IV_INT || tag == PTL_IV_BOOL || tag == PTL_IV_DOUBLE;
    case PTL_ARG_SCALAR:   /* a complex too: Note [Complex Scalars] in aten/ivalue.h */
        return tag == PTL_IV_INT || tag == PTL_IV_BOOL || tag == PTL_IV_DOUBLE ||
               tag == PTL_IV_COMPLEX;
    case PTL_ARG_STR: return tag == PTL_IV_STRING;
    case PTL_ARG_DTYPE: return tag == PTL_IV_DTYPE;
    case PTL_ARG_DEVICE: return tag == PTL_IV_DEVICE;
    case PTL_ARG_LAYOUT: return tag == PTL_IV_LAYOUT;
    case PTL_ARG_MEMFORMAT: return tag == PTL_IV_MEMFORMAT;
    case PTL_ARG_GENERATOR: return tag == PTL_IV_GENERATOR;
    case PTL_ARG_TENSORLIST: return tag == PTL_IV_TENSORLIST;
    case PTL_ARG_INTLIST: return tag == PTL_IV_INTLIST;
    case PTL_ARG_FLOATLIST: return tag == PTL_IV_DOUBLELIST;
    default: return 0;
    }
}

static int
run_op(const Step *st, PtlIValue *frame)
{
    const PtlOperator *op = st->op;
    const PtlSchema *s = &op->schema;
    PtlIValue stack[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *wrapped[PTL_SCHEMA_MAX_ARGS];
    int nwrapped = 0, rc = 0;
    for (int i = 0; i < st->nin; i++) {
        PtlIValue *v = &stack[i];
        *v = st->in[i] >= 0 ? frame[st->in[i]] : s->args[i].def;
        v->owned = 0;
        if (PTL_UNLIKELY(!arg_accepts(&s->args[i], v->tag))) {
            rc = ptl_error_set(PTL_ERR_TYPE, "%s%s%s: argument '%s' must be %s, the graph "
                               "gave a value of another type", s->name,
                               s->overload[0] ? "." : "", s->overload, s->args[i].name,
                               ptl_arg_kind_name(s->args[i].kind));
            goto done;
        }
        if (s->args[i].kind == PTL_ARG_TENSOR && v->tag != PTL_IV_TENSOR &&
            v->tag != PTL_IV_NONE) {
            PtlTensorImpl *t = v->tag == PTL_IV_DOUBLE    ? ptl_wrapped_double(v->u.d)
                               : v->tag == PTL_IV_BOOL    ? ptl_wrapped_bool(v->u.b)
                               : v->tag == PTL_IV_COMPLEX ? ptl_wrapped_complex(v->u.z.re,
                                                                                v->u.z.im)
                                                          : ptl_wrapped_int(v->u.i);
            if (t == NULL) {
                rc = -1;
                goto done;
            }
            wrapped[nwrapped++] = t;
            *v = ptl_iv_tensor(t);
            v->owned = 0;
        }
        /* the graph's types allow an int for a float and a bool for an int */
        if (s->args[i].kind == PTL_ARG_FLOAT && (v->tag == PTL_IV_INT || v->tag == PTL_IV_BOOL)) {
            *v = ptl_iv_double(ptl_iv_to_double(v));
        }
        else if (s->args[i].kind == PTL_ARG_INT && v->tag == PTL_IV_BOOL) {
            *v = ptl_iv_int(v->u.b);
        }
    }
    if (ptl_dispatcher_call(op, stack) < 0) {
        rc = -1;
        goto done;
    }
    for (int k = 0; k < st->nout; k++) {
        frame[st->out[k]] = stack[k];
    }
done:
    while (nwrapped > 0) {
        ptl_decref(wrapped[--nwrapped]);
    }
    return rc;
}

static int
run_list(const Step *st, PtlIValue *frame)
{
    const size_t n = (size_t)st->nin;
    void *data = malloc(n ? n * 8 : 1);
    if (data == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    PtlIValue v = {.tag = st->list_tag, .owned = 1};
    for (size_t i = 0; i < n; i++) {
        const PtlIValue *e = &frame[st->in[i]];
        if (st->list_tag == PTL_IV_INTLIST) {
            ((int64_t *)data)[i] = ptl_iv_to_int(e);
        }
        else if (st->list_tag == PTL_IV_DOUBLELIST) {
            ((double *)data)[i] = ptl_iv_to_double(e);
        }
        else {
            PtlTensorImpl *t = e->tag == PTL_IV_TENSOR ? e->u.t : NULL;
            xincref(t);
            ((PtlTensorImpl **)data)[i] = t;
        }
    }
    v.u.il.data = data;
    v.u.il.n = (int64_t)n;
    frame[st->out[0]] = v;
    return 0;
}

static int
run_unpack(const Step *st, PtlIValue *frame)
{
    const PtlIValue *list = &frame[st->in[0]];
    if (list->tag != PTL_IV_TENSORLIST && list->tag != PTL_IV_INTLIST) {
        return ptl_error_set(PTL_ERR_RUNTIME, "prim::ListUnpack: expected a list");
    }
    if (list->u.il.n != st->nout) {
        return ptl_error_set(PTL_ERR_RUNTIME, "prim::ListUnpack: the graph expects %d items, "
                             "the list has %lld", st->nout, (long long)list->u.il.n);
    }
    for (int k = 0; k < st->nout; k++) {
        if (list->tag == PTL_IV_INTLIST) {
            frame[st->out[k]] = ptl_iv_int(list->u.il.data[k]);
        }
        else {
            xincref(list->u.tl.data[k]);
            frame[st->out[k]] = ptl_iv_tensor(list->u.tl.data[k]);
        }
    }
    return 0;
}

static int
run_fused(const Step *st, PtlIValue *frame)
{
    const Fusion *f = st->fusion;
    PtlTensorImpl *ts[PTL_PROGRAM_MAX_REGS];
    int grad = ptl_grad_mode_enabled(), ok = 1;
    for (int i = 0; i < st->nin; i++) {
        const PtlIValue *v = &frame[st->in[i]];
        if (v->tag != PTL_IV_TENSOR) {
            return ptl_error_set(PTL_ERR_RUNTIME, "prim::FusionGroup: input %d is not a "
                                 "tensor", i);
        }
        ts[i] = v->u.t;
        if (grad && ptl_requires_grad(ts[i])) {
            ok = 0;
        }
    }
    if (ok && ptl_pointwise_program_accepts(ts, st->nin)) {
        PtlTensorImpl *out = ptl_pointwise_program_run(f->prog, f->ninstr, ts, st->nin,
                                                       f->scalars, f->nscalars);
        if (out == NULL) {
            return -1;
        }
        frame[st->out[0]] = ptl_iv_tensor(out);
        return 0;
    }
    PtlIValue in[PTL_PROGRAM_MAX_REGS];
    for (int i = 0; i < st->nin; i++) {
        in[i] = ptl_iv_tensor(ts[i]);
    }
    return ptl_jit_program_run(f->fallback, in, &frame[st->out[0]]);
}

static int
run_steps(const PtlJitProgram *p, PtlIValue *frame)
{
    for (int i = 0; i < p->nsteps; i++) {
        const Step *st = &p->steps[i];
        int rc;
        switch (st->kind) {
        case STEP_OP: rc = run_op(st, frame); break;
        case STEP_LIST: rc = run_list(st, frame); break;
        case STEP_UNPACK: rc = run_unpack(st, frame); break;
        case STEP_FUSED: rc = run_fused(st, frame); break;
        default: rc = ptl_error_set(PTL_ERR_RUNTIME, "invalid graph program step"); break;
        }
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

int
ptl_jit_program_run(const PtlJitProgram *p, const PtlIValue *inputs, PtlIValue *outputs)
{
    PtlIValue local[FRAME_ON_STACK];
    PtlIValue *frame = local;
    if (p->nslots > FRAME_ON_STACK &&
        (frame = malloc(sizeof(PtlIValue) * (size_t)p->nslots)) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory");
    }
    memcpy(frame, p->constants, sizeof(PtlIValue) * (size_t)p->nslots);
    for (int i = 0; i < p->ninputs; i++) {
        frame[i] = inputs[i];
        frame[i].owned = 0;
    }
    int rc = run_steps(p, frame);
    int k = 0;
    for (; rc == 0 && k < p->noutputs; k++) {
        rc = value_copy(&frame[p->outputs[k]], &outputs[k]);
    }
    if (rc < 0) {
        while (k-- > 0) {
            ptl_jit_value_release(&outputs[k]);
        }
    }
    for (int i = 0; i < p->nsteps; i++) {
        for (int j = 0; j < p->steps[i].nout; j++) {
            ptl_jit_value_release(&frame[p->steps[i].out[j]]);
        }
    }
    if (frame != local) {
        free(frame);
    }
    return rc;
}
