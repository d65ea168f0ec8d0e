/* schema.c -- a recursive-descent parser for operator schemas.  Mirrors
 * torch/csrc/jit/frontend/function_schema_parser.cpp (behaviour, not code). */
#include "schema.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c10/error.h"

typedef struct Parser {
    const char *text;
    const char *p;
} Parser;

static int
fail(Parser *ps, const char *what)
{
    return ptl_error_set(PTL_ERR_RUNTIME, "schema parse error: %s at position %d in '%s'", what,
                         (int)(ps->p - ps->text), ps->text);
}

static void
skip_ws(Parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n') {
        ps->p++;
    }
}

static int
accept(Parser *ps, const char *tok)
{
    skip_ws(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* Reads an identifier into buf; 0 when there is none. */
static int
ident(Parser *ps, char *buf, size_t n)
{
    skip_ws(ps);
    size_t len = 0;
    if (!(isalpha((unsigned char)*ps->p) || *ps->p == '_')) {
        return 0;
    }
    while (isalnum((unsigned char)ps->p[len]) || ps->p[len] == '_') {
        len++;
    }
    if (len >= n) {
        return 0;
    }
    memcpy(buf, ps->p, len);
    buf[len] = '\0';
    ps->p += len;
    return 1;
}

static const struct {
    const char *name;
    PtlArgKind kind;
} base_types[] = {
    {"Tensor", PTL_ARG_TENSOR},     {"int", PTL_ARG_INT},          {"SymInt", PTL_ARG_INT},
    {"float", PTL_ARG_FLOAT},       {"bool", PTL_ARG_BOOL},        {"str", PTL_ARG_STR},
    {"Scalar", PTL_ARG_SCALAR},     {"ScalarType", PTL_ARG_DTYPE}, {"Device", PTL_ARG_DEVICE},
    {"Layout", PTL_ARG_LAYOUT},     {"MemoryFormat", PTL_ARG_MEMFORMAT},
    {"Generator", PTL_ARG_GENERATOR},
};

static const char *const kind_names[PTL_ARG_KIND_COUNT] = {
    "Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Layout",
    "MemoryFormat", "Generator", "Tensor[]", "int[]", "float[]",
};

const char *
ptl_arg_kind_name(PtlArgKind k)
{
    return (k >= 0 && k < PTL_ARG_KIND_COUNT) ? kind_names[k] : "?";
}

static int
parse_type(Parser *ps, PtlArg *a)
{
    char tname[32], what[64];
    size_t i;
    const char *start = ps->p;
    if (!ident(ps, tname, sizeof(tname))) {
        return fail(ps, "expected a type");
    }
    for (i = 0; i < sizeof(base_types) / sizeof(base_types[0]); i++) {
        if (strcmp(tname, base_types[i].name) == 0) {
            break;
        }
    }
    if (i == sizeof(base_types) / sizeof(base_types[0])) {
        snprintf(what, sizeof(what), "unknown type '%s'", tname);
        ps->p = start;
        return fail(ps, what);
    }
    a->kind = (uint8_t)base_types[i].kind;
    a->symint = strcmp(tname, "SymInt") == 0;
    if (*ps->p == '(') {   /* alias annotation: (a), (a!), (a0!), (a -> *) */
        ps->p++;
        if (!isalpha((unsigned char)*ps->p)) {
            return fail(ps, "expected an alias set name such as 'a'");
        }
        a->alias_set = *ps->p;
        while (isalnum((unsigned char)*ps->p)) {
            ps->p++;
        }
        if (*ps->p == '!') {
            a->alias_write = 1;
            ps->p++;
        }
        accept(ps, "-> *");
        if (*ps->p != ')') {
            return fail(ps, "expected ')' to close the alias annotation");
        }
        ps->p++;
    }
    if (*ps->p == '?') {   /* element optional (Tensor?[]) or plain optional */
        ps->p++;
        if (*ps->p == '[') {
            a->elem_optional = 1;
        }
        else {
            a->optional = 1;
        }
    }
    if (*ps->p == '[') {
        ps->p++;
        int32_t n = 0;
        while (isdigit((unsigned char)*ps->p)) {
            if (n > (INT32_MAX - 9) / 10) {
                return fail(ps, "list length too large");
            }
            n = n * 10 + (*ps->p++ - '0');
        }
        if (*ps->p != ']') {
            return fail(ps, "expected ']'");
        }
        ps->p++;
        a->list_len = n;
        switch (a->kind) {
        case PTL_ARG_TENSOR: a->kind = PTL_ARG_TENSORLIST; break;
        case PTL_ARG_INT: a->kind = PTL_ARG_INTLIST; break;
        case PTL_ARG_BOOL:
            a->kind = PTL_ARG_INTLIST;
            a->elem_bool = 1;
            break;
        case PTL_ARG_FLOAT: a->kind = PTL_ARG_FLOATLIST; break;
        default: return fail(ps, "unsupported list element type");
        }
        /* a sized number list is filled from one value (its default, or a single int
         * argument), into room for PTL_MAX_DIMS values */
        if (a->kind != PTL_ARG_TENSORLIST && n > PTL_MAX_DIMS) {
            return fail(ps, "fixed list length above the maximum number of dimensions");
        }
        if (*ps->p == '?') {
            ps->p++;
            a->optional = 1;
        }
    }
    return 0;
}

static int
parse_default(Parser *ps, PtlArg *a)
{
    skip_ws(ps);
    a->has_default = 1;
    if (accept(ps, "None")) {
        a->def = ptl_iv_none();
        return 0;
    }
    if (accept(ps, "True") || accept(ps, "False")) {
        a->def = ptl_iv_bool(ps->p[-1] == 'e' && ps->p[-2] == 'u');
        return 0;
    }
    if (*ps->p == '"' || *ps->p == '\'') {
        char q = *ps->p++;
        size_t n = 0;
        while (*ps->p && *ps->p != q) {
            if (n + 1 < sizeof(a->def_str)) {
                a->def_str[n++] = *ps->p;
            }
            ps->p++;
        }
        if (*ps->p != q) {
            return fail(ps, "unterminated string");
        }
        ps->p++;
        a->def_str[n] = '\0';
        a->def = ptl_iv_string(a->def_str);
        return 0;
    }
    if (*ps->p == '[') {
        int64_t n = 0;
        ps->p++;
        skip_ws(ps);
        while (*ps->p != ']') {
            char *end;
            errno = 0;
            long long v = strtoll(ps->p, &end, 10);
            if (end == ps->p || n >= PTL_MAX_DIMS || errno == ERANGE) {
                return fail(ps, "bad list default");
            }
            a->def_list[n++] = v;
            ps->p = end;
            skip_ws(ps);
            if (*ps->p == ',') {
                ps->p++;
                skip_ws(ps);
            }
        }
        ps->p++;
        if (n == 1 && a->list_len > 1) {   /* int[2] stride=1 style broadcast */
            for (int i = 1; i < a->list_len; i++) {
                a->def_list[i] = a->def_list[0];
            }
            n = a->list_len;
        }
        a->def = ptl_iv_intlist(a->def_list, n);
        return 0;
    }
    if (isalpha((unsigned char)*ps->p)) {   /* enum-like defaults: contiguous_format, Mean */
        char word[sizeof(a->def_str)];
        if (!ident(ps, word, sizeof(word))) {
            return fail(ps, "bad default value");
        }
        if (strcmp(word, "inf") == 0) {
            a->def = ptl_iv_double(INFINITY);
            return 0;
        }
        memcpy(a->def_str, word, sizeof(word));
        a->def = ptl_iv_string(a->def_str);
        if (a->kind == PTL_ARG_MEMFORMAT) {
            for (int f = 0; f < PTL_MEMORY_FORMAT_COUNT; f++) {
                if (strcmp(word, ptl_memory_format_name((PtlMemoryFormat)f)) == 0) {
                    a->def = ptl_iv_memory_format((PtlMemoryFormat)f);
                }
            }
            if (a->def.tag != PTL_IV_MEMFORMAT) {
                ps->p -= strlen(word);
                return fail(ps, "unknown memory format");
            }
        }
        if (a->kind == PTL_ARG_INT && strcmp(word, "Mean") == 0) {
            a->def = ptl_iv_int(1);
        }
        else if (a->kind == PTL_ARG_INT || a->kind == PTL_ARG_FLOAT ||
                 a->kind == PTL_ARG_BOOL || a->kind == PTL_ARG_SCALAR ||
                 a->kind == PTL_ARG_TENSOR) {
            ps->p -= strlen(word);
            return fail(ps, "expected a number, True, False or None as the default");
        }
        return 0;
    }
    char *end;
    const char *start = ps->p;
    errno = 0;
    long long iv = strtoll(start, &end, 10);
    int out_of_range = errno == ERANGE;
    if (end == start) {
        if (strncmp(start, "-inf", 4) == 0) {
            ps->p += 4;
            a->def = ptl_iv_double(-INFINITY);
            return 0;
        }
        return fail(ps, "bad default value");
    }
    if (*end == '.' || *end == 'e' || *end == 'E') {
        double dv = strtod(start, &end);
        ps->p = end;
        a->def = ptl_iv_double(dv);
        return 0;
    }
    if (out_of_range) {
        return fail(ps, "integer default out of range");
    }
    ps->p = end;
    if (a->kind == PTL_ARG_FLOAT) {
        a->def = ptl_iv_double((double)iv);
    }
    else if (a->kind == PTL_ARG_INTLIST) {   /* int[2] padding=0 */
        int n = a->list_len > 0 ? a->list_len : 1;
        for (int i = 0; i < n; i++) {
            a->def_list[i] = iv;
        }
        a->def = ptl_iv_intlist(a->def_list, n);
    }
    else {
        a->def = ptl_iv_int(iv);
    }
    return 0;
}

static int
parse_arg(Parser *ps, PtlArg *a, int kwarg_only, int is_return)
{
    memset(a, 0, sizeof(*a));
    a->kwarg_only = (uint8_t)kwarg_only;
    if (parse_type(ps, a) < 0) {
        return -1;
    }
    skip_ws(ps);
    if (!ident(ps, a->name, sizeof(a->name))) {
        if (!is_return) {
            return fail(ps, "expected an argument name");
        }
        a->name[0] = '\0';
    }
    if (!is_return && accept(ps, "=")) {
        /* def_str keeps the default's text as written (a str default's without its quotes),
         * which the TypeError for a bad call prints (src/python/arg_errors.c) */
        skip_ws(ps);
        const char *start = ps->p;
        if (parse_default(ps, a) < 0) {
            return -1;
        }
        if (a->def_str[0] == '\0') {
            size_t n = (size_t)(ps->p - start);
            n = n < sizeof(a->def_str) ? n : sizeof(a->def_str) - 1;
            memcpy(a->def_str, start, n);
            a->def_str[n] = '\0';
        }
        return 0;
    }
    return 0;
}

int
ptl_schema_parse(const char *text, PtlSchema *s)
{
    Parser ps = {text, text};
    char word[64];
    int kwarg_only = 0;

    memset(s, 0, sizeof(*s));
    s->out_index = -1;
    if (!ident(&ps, word, sizeof(word))) {
        return fail(&ps, "expected an operator name");
    }
    if (ps.p[0] == ':' && ps.p[1] == ':') {
        char opname[64];
        ps.p += 2;
        if (!ident(&ps, opname, sizeof(opname))) {
            return fail(&ps, "expected an operator name after '::'");
        }
        size_t nw = strlen(word), no = strlen(opname);
        if (nw + 2 + no >= sizeof(s->name)) {
            return fail(&ps, "operator name too long");
        }
        memcpy(s->name, word, nw);
        memcpy(s->name + nw, "::", 2);
        memcpy(s->name + nw + 2, opname, no + 1);
    }
    else {
        snprintf(s->name, sizeof(s->name), "aten::%.56s", word);
    }
    if (*ps.p == '.') {
        ps.p++;
        if (!ident(&ps, s->overload, sizeof(s->overload))) {
            return fail(&ps, "expected an overload name after '.'");
        }
    }
    if (!accept(&ps, "(")) {
        return fail(&ps, "expected '('");
    }
    if (!accept(&ps, ")")) {
        do {
            if (accept(&ps, "*")) {
                kwarg_only = 1;
                continue;
            }
            if (s->nargs == PTL_SCHEMA_MAX_ARGS) {
                return fail(&ps, "too many arguments");
            }
            if (parse_arg(&ps, &s->args[s->nargs], kwarg_only, 0) < 0) {
                return -1;
            }
            s->nargs++;
        } while (accept(&ps, ","));
        if (!accept(&ps, ")")) {
            return fail(&ps, "expected ')'");
        }
    }
    if (!accept(&ps, "->")) {
        return fail(&ps, "expected '->'");
    }
    skip_ws(&ps);
    if (accept(&ps, "(")) {
        s->rets_tuple = 1;
        if (!accept(&ps, ")")) {
            do {
                if (s->nrets == PTL_SCHEMA_MAX_RETS) {
                    return fail(&ps, "too many returns");
                }
                if (parse_arg(&ps, &s->rets[s->nrets], 0, 1) < 0) {
                    return -1;
                }
                s->rets_named |= s->rets[s->nrets].name[0] != '\0';
                s->nrets++;
            } while (accept(&ps, ","));
            if (!accept(&ps, ")")) {
                return fail(&ps, "expected ')' after returns");
            }
        }
    }
    else {
        if (parse_arg(&ps, &s->rets[0], 0, 1) < 0) {
            return -1;
        }
        s->nrets = 1;
    }
    skip_ws(&ps);
    if (*ps.p != '\0') {
        return fail(&ps, "trailing characters");
    }
    s->inplace = s->nargs > 0 && s->args[0].kind == PTL_ARG_TENSOR && s->args[0].alias_write;
    for (int i = 0; i < s->nargs; i++) {
        if (s->args[i].kwarg_only && s->args[i].alias_write && s->out_index < 0) {
            s->out_index = i;
        }
    }
    return 0;
}

static int
format_type(const PtlArg *a, char *buf, size_t n)
{
    const char *base = a->symint ? "SymInt" : kind_names[a->kind];
    char alias[8] = "";
    if (a->alias_set) {
        snprintf(alias, sizeof(alias), "(%c%s)", a->alias_set, a->alias_write ? "!" : "");
    }
    if (a->kind >= PTL_ARG_TENSORLIST) {
        const char *elem = a->kind == PTL_ARG_TENSORLIST ? "Tensor"
                           : a->elem_bool                ? "bool"
                           : a->symint                   ? "SymInt"
                           : a->kind == PTL_ARG_INTLIST  ? "int"
                                                         : "float";
        char len[8] = "";
        if (a->list_len) {
            snprintf(len, sizeof(len), "%d", a->list_len);
        }
        return snprintf(buf, n, "%s%s%s[%s]%s", elem, alias, a->elem_optional ? "?" : "", len,
                        a->optional ? "?" : "");
    }
    return snprintf(buf, n, "%s%s%s", base, alias, a->optional ? "?" : "");
}

static int
format_default(const PtlArg *a, char *buf, size_t n)
{
    const PtlIValue *v = &a->def;
    switch (v->tag) {
    case PTL_IV_NONE: return snprintf(buf, n, "None");
    case PTL_IV_BOOL: return snprintf(buf, n, "%s", v->u.b ? "True" : "False");
    case PTL_IV_INT: return snprintf(buf, n, "%lld", (long long)v->u.i);
    case PTL_IV_DOUBLE: return snprintf(buf, n, "%g", v->u.d);
    case PTL_IV_COMPLEX: return snprintf(buf, n, "%g%+gj", v->u.z.re, v->u.z.im);
    case PTL_IV_STRING:
        return a->kind == PTL_ARG_STR ? snprintf(buf, n, "\"%s\"", v->u.s)
                                      : snprintf(buf, n, "%s", v->u.s);
    case PTL_IV_INTLIST:
        return (int)strlen(ptl_format_sizes(buf, n, v->u.il.n, v->u.il.data));
    case PTL_IV_MEMFORMAT:
        return snprintf(buf, n, "%s", ptl_memory_format_name((PtlMemoryFormat)v->u.i));
    default: return snprintf(buf, n, "?");
    }
}

int
ptl_schema_format(const PtlSchema *s, char *buf, size_t n)
{
    size_t off = 0;
    int star = 0;
#define PUT(...)                                                              \
    do {                                                                      \
        int k_ = snprintf(buf + off, off < n ? n - off : 0, __VA_ARGS__);     \
        off += k_ > 0 ? (size_t)k_ : 0;                                       \
        if (off > n) {                                                        \
            off = n;                                                          \
        }                                                                     \
    } while (0)
    PUT("%s%s%s(", s->name, s->overload[0] ? "." : "", s->overload);
    for (int i = 0; i < s->nargs; i++) {
        char t[64], d[96];
        const PtlArg *a = &s->args[i];
        if (a->kwarg_only && !star) {
            PUT("%s*", i ? ", " : "");
            star = 1;
        }
        format_type(a, t, sizeof(t));
        PUT("%s%s %s", (i || star) ? ", " : "", t, a->name);
        if (a->has_default) {
            format_default(a, d, sizeof(d));
            PUT("=%s", d);
        }
    }
    PUT(") -> ");
    if (s->rets_tuple) {
        PUT("(");
    }
    for (int i = 0; i < s->nrets; i++) {
        char t[64];
        format_type(&s->rets[i], t, sizeof(t));
        PUT("%s%s%s%s", i ? ", " : "", t, s->rets[i].name[0] ? " " : "", s->rets[i].name);
    }
    if (s->rets_tuple) {
        PUT(")");
    }
#undef PUT
    return (int)off;
}
