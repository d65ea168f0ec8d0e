/* schema.h -- operator schemas, parsed from PyTorch's schema syntax.  Mirrors
 * ATen/core/function_schema.h and torch/csrc/jit/frontend/function_schema_parser.cpp.
 *
 *   add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
 *   max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
 *   add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
 */
#ifndef PTL_ATEN_SCHEMA_H
#define PTL_ATEN_SCHEMA_H

#include <stdint.h>

#include "ivalue.h"

#define PTL_SCHEMA_MAX_ARGS 24
#define PTL_SCHEMA_MAX_RETS 4

typedef enum PtlArgKind {
    PTL_ARG_TENSOR = 0,
    PTL_ARG_INT,
    PTL_ARG_FLOAT,
    PTL_ARG_BOOL,
    PTL_ARG_STR,
    PTL_ARG_SCALAR,
    PTL_ARG_DTYPE,
    PTL_ARG_DEVICE,
    PTL_ARG_LAYOUT,
    PTL_ARG_MEMFORMAT,
    PTL_ARG_GENERATOR,
    PTL_ARG_TENSORLIST,
    PTL_ARG_INTLIST,
    PTL_ARG_FLOATLIST,
    PTL_ARG_KIND_COUNT
} PtlArgKind;

typedef struct PtlArg {
    char name[32];
    uint8_t kind;         /* PtlArgKind */
    uint8_t optional;     /* T? */
    uint8_t kwarg_only;   /* after `*` */
    uint8_t alias_write;  /* Tensor(a!) */
    char alias_set;       /* 'a' in Tensor(a) / Tensor(a!), 0 when none */
    uint8_t symint;       /* spelled SymInt or SymInt[] (an int to us) */
    int32_t list_len;     /* N of int[N]; 0 when unsized */
    uint8_t elem_optional;/* Tensor?[] */
    uint8_t elem_bool;    /* bool[N]: an int list of 0 and 1 */
    uint8_t has_default;
    PtlIValue def;        /* the default as an IValue (lists point into def_list) */
    int64_t def_list[PTL_MAX_DIMS];
    char def_str[24];
} PtlArg;

typedef struct PtlSchema {
    char name[64];        /* "aten::add" */
    char overload[32];    /* "Tensor", or "" */
    int nargs;
    int nrets;
    int rets_named;       /* returns carry names: (Tensor values, Tensor indices) */
    int rets_tuple;       /* returns were written in parentheses */
    int inplace;          /* self is Tensor(a!) */
    int out_index;        /* index of the first kwarg-only Tensor(a!) (out=), or -1 */
    PtlArg args[PTL_SCHEMA_MAX_ARGS];
    PtlArg rets[PTL_SCHEMA_MAX_RETS];
} PtlSchema;

/* Parses `text` (namespace optional, "aten" by default); 0, or -1 with a RuntimeError
 * that quotes the text and the position. */
int ptl_schema_parse(const char *text, PtlSchema *out);
/* Writes the schema back in canonical form; returns the length (like snprintf). */
int ptl_schema_format(const PtlSchema *s, char *buf, size_t n);
const char *ptl_arg_kind_name(PtlArgKind k);

#endif
