/*
 * rule.c -- the registry's rule language: a recursive-descent parser into a
 * small tree, and its evaluator (spec/verify.md [VER-REG-07..09]).
 *
 * Values are exact integers (int64_t; an overflow is an evaluation error) or
 * binary32 values of f32 fields and C99 hex-float literals, which may only be
 * operands of a comparison, decided exactly on the reals (NaN compares false
 * except with !=).  A quoted name is the index of that name in the enum field
 * it is compared with.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rule.h"

const char *const kvq_op_rule_names[KVQ_RULE_NOPRULES] = { "valid", "meta_half", "amb_lo", "amb_hi" };

typedef enum nkind {
    N_INT, N_FLT, N_STR, N_FIELD, N_OPRULE, N_NEG, N_NOT, N_BIN, N_COND, N_CALL
} nkind;

typedef enum bop {
    B_OR, B_AND, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_ADD, B_SUB, B_MUL, B_DIV, B_MOD,
    B_MIN, B_MAX, B_CDIV
} bop;

typedef struct node {
    nkind kind;
    int isf;              /* a float value: a comparison's operand only */
    size_t pos;           /* column (0-based) in the text */
    size_t start, end;    /* the node's text: [start, end) */
    int64_t i;            /* N_INT */
    double f;             /* N_FLT */
    const kvq_field *fld; /* N_FIELD */
    int oprule;           /* N_OPRULE */
    bop op;               /* N_BIN, N_CALL */
    char name[48];        /* N_STR */
    int a, b, c;          /* children (indices) */
} node;

struct kvq_rule {
    const kvq_op *op;
    const char *text;
    node *n;
    int nn, cap, root;
};

/* ---- parser ------------------------------------------------------------------ */

typedef struct parser {
    const char *s;
    size_t p;
    kvq_rule *r;
    const kvq_op *op;
    const kvq_field *self;
    char *err;
    size_t errlen;
    int failed;
} parser;

static int perr(parser *P, size_t pos, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    if (P->failed) return -1;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(P->err, P->errlen, "rule '%s' column %zu: %s", P->s, pos + 1, what);
    P->failed = 1;
    return -1;
}

static int newnode(parser *P, nkind k, size_t pos)
{
    kvq_rule *r = P->r;
    if (r->nn == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        node *nv = realloc(r->n, (size_t)cap * sizeof *nv);
        if (nv == NULL) return perr(P, pos, "out of memory");
        r->n = nv, r->cap = cap;
    }
    memset(&r->n[r->nn], 0, sizeof r->n[r->nn]);
    r->n[r->nn].kind = k;
    r->n[r->nn].pos = r->n[r->nn].start = r->n[r->nn].end = pos;
    r->n[r->nn].a = r->n[r->nn].b = r->n[r->nn].c = -1;
    return r->nn++;
}

static node *N(parser *P, int i)
{
    return &P->r->n[i];
}

static void skip(parser *P)
{
    while (P->s[P->p] == ' ' || P->s[P->p] == '\t') P->p++;
}

/* The next token is t (consumed when it is). */
static int accept(parser *P, const char *t)
{
    size_t n = strlen(t);
    skip(P);
    if (strncmp(P->s + P->p, t, n) != 0) return 0;
    /* '<' is not the start of '<=', '!' not of '!=', '=' alone is no operator */
    if ((n == 1 && (t[0] == '<' || t[0] == '>' || t[0] == '!') && P->s[P->p + 1] == '=') ||
        (n == 1 && (t[0] == '&' || t[0] == '|')))
        return 0;
    P->p += n;
    return 1;
}

static int expr(parser *P);

static int is_ident_char(char ch, int first)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           (!first && ch >= '0' && ch <= '9');
}

static int is_scalar(const kvq_field *f)
{
    return f->type == KVQ_FT_U32 || f->type == KVQ_FT_ENUM || f->type == KVQ_FT_F32 ||
           f->type == KVQ_FT_STATUS;
}

/* The field an identifier names in this rule's scope (NULL: none). */
static const kvq_field *bind(parser *P, const char *name)
{
    const kvq_op *op = P->op;
    int before = P->self != NULL; /* still before self in the schema */
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        if (f == P->self) before = 0;
        if (!is_scalar(f) || strcmp(f->key, name) != 0) continue;
        /* the case's scalars anywhere; a record's own only before self */
        if (f->role == KVQ_ROLE_CASE || f->role == KVQ_ROLE_INPUT) return f;
        if (before && f->role == P->self->role) return f;
    }
    return NULL;
}

static int primary_(parser *P)
{
    size_t pos;
    int k;
    skip(P);
    pos = P->p;
    if (accept(P, "(")) {
        k = expr(P);
        if (k < 0) return -1;
        if (!accept(P, ")")) return perr(P, P->p, "expected ')'");
        return k;
    }
    if (P->s[pos] == '"') {
        size_t e = pos + 1;
        while (P->s[e] && P->s[e] != '"') e++;
        if (P->s[e] != '"') return perr(P, pos, "unterminated quoted name");
        if (e - pos - 1 == 0 || e - pos - 1 >= sizeof N(P, 0)->name) return perr(P, pos, "bad quoted name");
        if ((k = newnode(P, N_STR, pos)) < 0) return -1;
        memcpy(N(P, k)->name, P->s + pos + 1, e - pos - 1);
        N(P, k)->name[e - pos - 1] = '\0';
        P->p = e + 1;
        return k;
    }
    if (P->s[pos] >= '0' && P->s[pos] <= '9') {
        size_t e = pos;
        int hex = P->s[pos] == '0' && (P->s[pos + 1] == 'x' || P->s[pos + 1] == 'X');
        if (hex) {
            e = pos + 2;
            while (strchr("0123456789abcdefABCDEF", P->s[e]) != NULL && P->s[e]) e++;
            if (P->s[e] == '.' || P->s[e] == 'p' || P->s[e] == 'P') { /* a C99 hex float */
                char *end;
                double d = strtod(P->s + pos, &end);
                size_t ee = (size_t)(end - P->s);
                int hasp = 0;
                for (size_t q = pos; q < ee; q++) hasp |= P->s[q] == 'p' || P->s[q] == 'P';
                if (ee <= e || !hasp || is_ident_char(P->s[ee], 0) || P->s[ee] == '.')
                    return perr(P, pos, "malformed hex float (0x1.8p-3)");
                if ((k = newnode(P, N_FLT, pos)) < 0) return -1;
                N(P, k)->f = d;
                N(P, k)->isf = 1;
                P->p = ee;
                return k;
            }
            if (e == pos + 2) return perr(P, pos, "0x without hex digits");
        } else {
            while (P->s[e] >= '0' && P->s[e] <= '9') e++;
        }
        if (is_ident_char(P->s[e], 0) || P->s[e] == '.') return perr(P, e, "malformed number (no suffixes, no decimal fractions)");
        {
            uint64_t v = 0;
            for (size_t q = hex ? pos + 2 : pos; q < e; q++) {
                char ch = P->s[q];
                unsigned d = ch <= '9' ? (unsigned)(ch - '0') : (unsigned)((ch | 0x20) - 'a' + 10);
                uint64_t base = hex ? 16u : 10u;
                if (v > ((uint64_t)INT64_MAX - d) / base) return perr(P, pos, "number out of range");
                v = v * base + d;
            }
            if ((k = newnode(P, N_INT, pos)) < 0) return -1;
            N(P, k)->i = (int64_t)v;
        }
        P->p = e;
        return k;
    }
    if (is_ident_char(P->s[pos], 1)) {
        char name[48];
        size_t e = pos;
        while (is_ident_char(P->s[e], 0)) e++;
        if (e - pos >= sizeof name) return perr(P, pos, "name too long");
        memcpy(name, P->s + pos, e - pos);
        name[e - pos] = '\0';
        P->p = e;
        if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0 || strcmp(name, "cdiv") == 0) {
            int a, b;
            if (!accept(P, "(")) return perr(P, P->p, "expected '(' after %s", name);
            if ((a = expr(P)) < 0) return -1;
            if (!accept(P, ",")) return perr(P, P->p, "expected ',' (%s takes two arguments)", name);
            if ((b = expr(P)) < 0) return -1;
            if (!accept(P, ")")) return perr(P, P->p, "expected ')'");
            if (N(P, a)->isf || N(P, b)->isf) return perr(P, pos, "a float is only compared, never an argument of %s", name);
            if ((k = newnode(P, N_CALL, pos)) < 0) return -1;
            N(P, k)->op = name[0] == 'c' ? B_CDIV : name[1] == 'i' ? B_MIN : B_MAX;
            N(P, k)->a = a, N(P, k)->b = b;
            return k;
        }
        {
            const kvq_field *f = bind(P, name);
            if (f != NULL) {
                if ((k = newnode(P, N_FIELD, pos)) < 0) return -1;
                N(P, k)->fld = f;
                N(P, k)->isf = f->type == KVQ_FT_F32;
                return k;
            }
        }
        if (P->self != NULL && (strcmp(name, "valid") == 0 || strcmp(name, "meta_half") == 0)) {
            if ((k = newnode(P, N_OPRULE, pos)) < 0) return -1;
            N(P, k)->oprule = name[0] == 'v' ? KVQ_RULE_VALID : KVQ_RULE_META_HALF;
            return k;
        }
        return perr(P, pos, "'%s' is not a scalar field of %s%s", name, P->op->name,
                    P->self != NULL ? " before this one" : "");
    }
    if (P->s[pos] == '\0') return perr(P, pos, "expected a number, a name or '(' at the end");
    return perr(P, pos, "expected a number, a name or '('");
}

/* A primary with its text's span (a parenthesised one: the inside). */
static int primary(parser *P)
{
    size_t start;
    int k, paren;
    skip(P);
    start = P->p;
    paren = P->s[start] == '(';
    k = primary_(P);
    if (k >= 0 && !paren) N(P, k)->start = start, N(P, k)->end = P->p;
    return k;
}

static int unary(parser *P)
{
    size_t pos;
    int k, a;
    skip(P);
    pos = P->p;
    if (accept(P, "!") || (P->s[pos] == '-' && accept(P, "-"))) {
        int neg = P->s[pos] == '-';
        if ((a = unary(P)) < 0) return -1;
        if (N(P, a)->isf || N(P, a)->kind == N_STR) return perr(P, pos, "'%c' of a float or a quoted name", neg ? '-' : '!');
        if ((k = newnode(P, neg ? N_NEG : N_NOT, pos)) < 0) return -1;
        N(P, k)->a = a;
        N(P, k)->end = N(P, a)->end;
        return k;
    }
    return primary(P);
}

static int binary(parser *P, bop op, int a, int b, size_t pos)
{
    int k;
    int cmp = op >= B_EQ && op <= B_GE;
    node *na = N(P, a), *nb = N(P, b);
    if (cmp && (na->kind == N_STR || nb->kind == N_STR)) {
        node *s = na->kind == N_STR ? na : nb, *f = na->kind == N_STR ? nb : na;
        if (f->kind != N_FIELD || f->fld->type != KVQ_FT_ENUM)
            return perr(P, s->pos, "a quoted name is compared with an enum field only");
        for (uint32_t i = 0; i < f->fld->nnames; i++)
            if (strcmp(f->fld->names[i], s->name) == 0) {
                s->kind = N_INT;
                s->i = i;
                break;
            }
        if (s->kind == N_STR) return perr(P, s->pos, "\"%s\" is not a name of %s", s->name, f->fld->key);
    } else if (na->kind == N_STR || nb->kind == N_STR) {
        return perr(P, (na->kind == N_STR ? na : nb)->pos, "a quoted name is compared with an enum field only");
    }
    if (!cmp && (na->isf || nb->isf)) return perr(P, pos, "a float is only compared, never in arithmetic or logic");
    if ((k = newnode(P, N_BIN, pos)) < 0) return -1;
    N(P, k)->op = op;
    N(P, k)->a = a, N(P, k)->b = b;
    N(P, k)->start = N(P, a)->start, N(P, k)->end = N(P, b)->end;
    return k;
}

static int mul(parser *P)
{
    int a = unary(P), b;
    while (a >= 0) {
        size_t pos;
        bop op;
        skip(P);
        pos = P->p;
        if (accept(P, "*")) op = B_MUL;
        else if (accept(P, "/")) op = B_DIV;
        else if (accept(P, "%")) op = B_MOD;
        else break;
        if ((b = unary(P)) < 0) return -1;
        a = binary(P, op, a, b, pos);
    }
    return a;
}

static int add(parser *P)
{
    int a = mul(P), b;
    while (a >= 0) {
        size_t pos;
        bop op;
        skip(P);
        pos = P->p;
        if (accept(P, "+")) op = B_ADD;
        else if (accept(P, "-")) op = B_SUB;
        else break;
        if ((b = mul(P)) < 0) return -1;
        a = binary(P, op, a, b, pos);
    }
    return a;
}

static int rel(parser *P)
{
    int a = add(P), b;
    while (a >= 0) {
        size_t pos;
        bop op;
        skip(P);
        pos = P->p;
        if (accept(P, "<=")) op = B_LE;
        else if (accept(P, ">=")) op = B_GE;
        else if (accept(P, "<")) op = B_LT;
        else if (accept(P, ">")) op = B_GT;
        else break;
        if ((b = add(P)) < 0) return -1;
        a = binary(P, op, a, b, pos);
    }
    return a;
}

static int eq(parser *P)
{
    int a = rel(P), b;
    while (a >= 0) {
        size_t pos;
        bop op;
        skip(P);
        pos = P->p;
        if (accept(P, "==")) op = B_EQ;
        else if (accept(P, "!=")) op = B_NE;
        else break;
        if ((b = rel(P)) < 0) return -1;
        a = binary(P, op, a, b, pos);
    }
    return a;
}

static int and_(parser *P)
{
    int a = eq(P), b;
    while (a >= 0) {
        size_t pos;
        skip(P);
        pos = P->p;
        if (strncmp(P->s + P->p, "&&", 2) != 0) break;
        P->p += 2;
        if ((b = eq(P)) < 0) return -1;
        a = binary(P, B_AND, a, b, pos);
    }
    return a;
}

static int or_(parser *P)
{
    int a = and_(P), b;
    while (a >= 0) {
        size_t pos;
        skip(P);
        pos = P->p;
        if (strncmp(P->s + P->p, "||", 2) != 0) break;
        P->p += 2;
        if ((b = and_(P)) < 0) return -1;
        a = binary(P, B_OR, a, b, pos);
    }
    return a;
}

static int expr(parser *P)
{
    int a = or_(P), b, c, k;
    size_t pos;
    if (a < 0) return -1;
    skip(P);
    pos = P->p;
    if (!accept(P, "?")) return a;
    if ((b = expr(P)) < 0) return -1;
    if (!accept(P, ":")) return perr(P, P->p, "expected ':' of '?:'");
    if ((c = expr(P)) < 0) return -1; /* right-associative: a ? b : c ? d : e */
    if (N(P, a)->isf || N(P, b)->isf || N(P, c)->isf) return perr(P, pos, "a float is only compared, never an operand of '?:'");
    if (N(P, a)->kind == N_STR || N(P, b)->kind == N_STR || N(P, c)->kind == N_STR)
        return perr(P, pos, "a quoted name is compared with an enum field only");
    if ((k = newnode(P, N_COND, pos)) < 0) return -1;
    N(P, k)->a = a, N(P, k)->b = b, N(P, k)->c = c;
    N(P, k)->start = N(P, a)->start, N(P, k)->end = N(P, c)->end;
    return k;
}

kvq_rule *kvq_rule_parse(const char *text, const kvq_op *op, const kvq_field *self, char *err,
                         size_t errlen)
{
    parser P;
    kvq_rule *r = calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memset(&P, 0, sizeof P);
    P.s = text, P.r = r, P.op = op, P.self = self, P.err = err, P.errlen = errlen;
    r->op = op;
    r->text = text;
    r->root = expr(&P);
    if (r->root >= 0) {
        skip(&P);
        if (P.s[P.p] != '\0') perr(&P, P.p, "unexpected '%c'", P.s[P.p]);
        else if (r->n[r->root].isf) perr(&P, 0, "a rule's value is an integer, not a float");
        else if (r->n[r->root].kind == N_STR) perr(&P, 0, "a quoted name is compared with an enum field only");
    }
    if (P.failed || r->root < 0) {
        kvq_rule_free(r);
        return NULL;
    }
    return r;
}

void kvq_rule_free(kvq_rule *r)
{
    if (r == NULL) return;
    free(r->n);
    free(r);
}

/* ---- evaluation --------------------------------------------------------------- */

typedef struct val {
    int isf;
    int64_t i;
    double f;
} val;

typedef struct ectx {
    const kvq_rule *r;
    const kvq_case *c;
    const void *rec;
    char *err;
    size_t errlen;
} ectx;

static int eerr(ectx *E, const node *n, const char *what)
{
    snprintf(E->err, E->errlen, "column %zu: %s", n->pos + 1, what);
    return 0;
}

static int field_value(ectx *E, const kvq_field *f, val *v)
{
    const kvq_case *c = E->c;
    const char *base;
    v->isf = 0;
    if (f->type == KVQ_FT_STATUS) {
        v->i = c->status;
        return 1;
    }
    base = f->role == KVQ_ROLE_CASE ? (const char *)c : f->role == KVQ_ROLE_INPUT ? (const char *)c->in
                                                                                    : (const char *)E->rec;
    if (base == NULL) { /* a record not there (an expected field of an error case) */
        v->i = 0;
        return 1;
    }
    if (f->type == KVQ_FT_F32) {
        float x;
        memcpy(&x, base + f->offset, sizeof x);
        v->isf = 1;
        v->f = (double)x;
        return 1;
    }
    {
        uint32_t u;
        memcpy(&u, base + f->offset, sizeof u);
        v->i = u;
    }
    return 1;
}

/* a <=> b exactly: -1, 0, 1, or 2 when unordered (NaN) */
static int compare(const val *a, const val *b)
{
    if (!a->isf && !b->isf) return a->i < b->i ? -1 : a->i > b->i;
    if (a->isf && b->isf) {
        if (isnan(a->f) || isnan(b->f)) return 2;
        return a->f < b->f ? -1 : a->f > b->f;
    }
    {
        double f = a->isf ? a->f : b->f;
        int64_t i = a->isf ? b->i : a->i;
        int r; /* f <=> i */
        if (isnan(f)) return 2;
        if (f >= 0x1p63) r = 1;
        else if (f < -0x1p63) r = -1;
        else {
            double t = trunc(f);
            int64_t ti = (int64_t)t;
            if (ti != i) r = ti < i ? -1 : 1;
            else r = f > t ? 1 : f < t ? -1 : 0;
        }
        return a->isf ? r : -r;
    }
}

static int eval(ectx *E, int k, val *v);

static int eval_int(ectx *E, int k, int64_t *x)
{
    val v;
    if (!eval(E, k, &v)) return 0;
    *x = v.i;
    return 1;
}

static int eval(ectx *E, int k, val *v)
{
    const node *n = &E->r->n[k];
    int64_t a, b;
    v->isf = 0;
    switch (n->kind) {
    case N_INT: v->i = n->i; return 1;
    case N_FLT: v->isf = 1, v->f = n->f; return 1;
    case N_STR: return eerr(E, n, "quoted name");
    case N_FIELD: return field_value(E, n->fld, v);
    case N_OPRULE: {
        char sub[200];
        if (!kvq_op_rule_eval(E->c, (kvq_op_rule_id)n->oprule, 0, &v->i, sub, sizeof sub)) {
            snprintf(E->err, E->errlen, "%s: %s", kvq_op_rule_names[n->oprule], sub);
            return 0;
        }
        return 1;
    }
    case N_NEG:
        if (!eval_int(E, n->a, &a)) return 0;
        if (a == INT64_MIN) return eerr(E, n, "overflow");
        v->i = -a;
        return 1;
    case N_NOT:
        if (!eval_int(E, n->a, &a)) return 0;
        v->i = !a;
        return 1;
    case N_COND:
        if (!eval_int(E, n->a, &a)) return 0;
        return eval(E, a ? n->b : n->c, v);
    case N_CALL:
        if (!eval_int(E, n->a, &a) || !eval_int(E, n->b, &b)) return 0;
        if (n->op == B_MIN) v->i = a < b ? a : b;
        else if (n->op == B_MAX) v->i = a > b ? a : b;
        else {
            int64_t q, r;
            if (b == 0) return eerr(E, n, "cdiv by zero");
            if (a == INT64_MIN && b == -1) return eerr(E, n, "overflow");
            q = a / b, r = a % b;
            v->i = q + (r != 0 && ((r > 0) == (b > 0))); /* ceiling */
        }
        return 1;
    case N_BIN:
        break;
    }
    if (n->op == B_AND || n->op == B_OR) {
        if (!eval_int(E, n->a, &a)) return 0;
        if (n->op == B_AND ? !a : !!a) {
            v->i = n->op == B_OR;
            return 1;
        }
        if (!eval_int(E, n->b, &b)) return 0;
        v->i = b != 0;
        return 1;
    }
    if (n->op >= B_EQ && n->op <= B_GE) {
        val x, y;
        int r;
        if (!eval(E, n->a, &x) || !eval(E, n->b, &y)) return 0;
        r = compare(&x, &y);
        switch (n->op) {
        case B_EQ: v->i = r == 0; break;
        case B_NE: v->i = r != 0; break;
        case B_LT: v->i = r == -1; break;
        case B_LE: v->i = r == -1 || r == 0; break;
        case B_GT: v->i = r == 1; break;
        default: v->i = r == 1 || r == 0; break;
        }
        return 1;
    }
    if (!eval_int(E, n->a, &a) || !eval_int(E, n->b, &b)) return 0;
    switch (n->op) {
    case B_ADD: if (__builtin_add_overflow(a, b, &v->i)) return eerr(E, n, "overflow"); return 1;
    case B_SUB: if (__builtin_sub_overflow(a, b, &v->i)) return eerr(E, n, "overflow"); return 1;
    case B_MUL: if (__builtin_mul_overflow(a, b, &v->i)) return eerr(E, n, "overflow"); return 1;
    case B_DIV: case B_MOD:
        if (b == 0) return eerr(E, n, n->op == B_DIV ? "division by zero" : "remainder by zero");
        if (a == INT64_MIN && b == -1) return eerr(E, n, "overflow");
        v->i = n->op == B_DIV ? a / b : a % b;
        return 1;
    default:
        return eerr(E, n, "bad operator");
    }
}

int kvq_rule_eval(const kvq_rule *r, const kvq_case *c, const void *rec, int64_t *v, char *err,
                  size_t errlen)
{
    ectx E = { r, c, rec, err, errlen };
    val x;
    if (!eval(&E, r->root, &x)) return 0;
    *v = x.i;
    return 1;
}

/* The first conjunct of a top-level chain of && that is false (or does not
 * evaluate) in c: its text into buf. */
static int first_false(const kvq_rule *r, int k, const kvq_case *c, char *buf, size_t len)
{
    const node *n = &r->n[k];
    ectx E;
    val v;
    char e[8];
    if (n->kind == N_BIN && n->op == B_AND)
        return first_false(r, n->a, c, buf, len) || first_false(r, n->b, c, buf, len);
    E.r = r, E.c = c, E.rec = NULL, E.err = e, E.errlen = sizeof e;
    if (eval(&E, k, &v) && v.i != 0) return 0;
    snprintf(buf, len, "%.*s", (int)(n->end - n->start), r->text + n->start);
    return 1;
}

/* ---- the registry's rules, parsed once an operation -------------------------------- */

typedef struct op_rules {
    const kvq_op *op;
    kvq_rule *rule[KVQ_RULE_NOPRULES];
    kvq_rule **count; /* by field index */
    char err[320];    /* the first error ("" when every rule parsed) */
} op_rules;

static op_rules *cache;
static size_t ncache, capcache;

const char *kvq_op_rule_text(const kvq_op *op, kvq_op_rule_id which)
{
    switch (which) {
    case KVQ_RULE_VALID: return op->valid;
    case KVQ_RULE_META_HALF: return op->meta_half;
    case KVQ_RULE_AMB_LO: return op->amb_lo;
    case KVQ_RULE_AMB_HI: return op->amb_hi;
    default: return NULL;
    }
}

static void compile(op_rules *R)
{
    const kvq_op *op = R->op;
    char e[280];
    int meta = 0, amb = 0;
    R->count = calloc(op->nfields ? op->nfields : 1, sizeof *R->count);
    if (R->count == NULL) {
        snprintf(R->err, sizeof R->err, "out of memory");
        return;
    }
    for (int w = 0; w < KVQ_RULE_NOPRULES; w++) {
        const char *t = kvq_op_rule_text(op, (kvq_op_rule_id)w);
        if (t == NULL) continue;
        if ((R->rule[w] = kvq_rule_parse(t, op, NULL, e, sizeof e)) == NULL && !R->err[0])
            snprintf(R->err, sizeof R->err, "%s, rules.%s: %s", op->name, kvq_op_rule_names[w], e);
    }
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        int arr = kvq_ftype_elem_size(f->type) != 0 || f->type == KVQ_FT_AMB;
        meta |= f->type == KVQ_FT_A_META;
        amb |= f->type == KVQ_FT_AMB;
        if (!arr) {
            if (f->count_rule != NULL && !R->err[0])
                snprintf(R->err, sizeof R->err, "%s, field %s: a count on a field that is not an array", op->name, f->key);
            continue;
        }
        if (f->count_rule == NULL) {
            if (!R->err[0]) snprintf(R->err, sizeof R->err, "%s, field %s: an array without a count rule", op->name, f->key);
            continue;
        }
        if ((R->count[i] = kvq_rule_parse(f->count_rule, op, f, e, sizeof e)) == NULL && !R->err[0])
            snprintf(R->err, sizeof R->err, "%s, count of %s: %s", op->name, f->key, e);
        if (f->finite && (f->role != KVQ_ROLE_INPUT || !(f->type == KVQ_FT_A_F32 || f->type == KVQ_FT_A_F16 ||
                                                         f->type == KVQ_FT_A_C32)) && !R->err[0])
            snprintf(R->err, sizeof R->err, "%s, field %s: finite on a field that is not a float input array", op->name, f->key);
    }
    if (op->valid == NULL && !R->err[0]) snprintf(R->err, sizeof R->err, "%s: no rule valid", op->name);
    if (op->solve == NULL && !R->err[0]) snprintf(R->err, sizeof R->err, "%s: no solver", op->name);
    if (meta && op->meta_half == NULL && !R->err[0])
        snprintf(R->err, sizeof R->err, "%s: metadata arrays without a rule meta_half", op->name);
    if (amb && (op->amb_lo == NULL || op->amb_hi == NULL) && !R->err[0])
        snprintf(R->err, sizeof R->err, "%s: near-tie lists without rules amb_lo and amb_hi", op->name);
}

static const op_rules *rules_of(const kvq_op *op)
{
    for (size_t i = 0; i < ncache; i++)
        if (cache[i].op == op) return &cache[i];
    if (ncache == capcache) {
        size_t cap = capcache ? 2 * capcache : 16;
        op_rules *nv = realloc(cache, cap * sizeof *nv);
        if (nv == NULL) {
            fprintf(stderr, "kvq: out of memory\n");
            abort();
        }
        cache = nv, capcache = cap;
    }
    memset(&cache[ncache], 0, sizeof cache[ncache]);
    cache[ncache].op = op;
    compile(&cache[ncache]);
    return &cache[ncache++];
}

/* A rule the registry holds that did not parse is a defect of the program:
 * kvq_rules_check reports it; a use without the check stops here. */
static const op_rules *rules_ok(const kvq_op *op)
{
    const op_rules *R = rules_of(op);
    if (R->err[0]) {
        fprintf(stderr, "kvq: registry: %s\n", R->err);
        abort();
    }
    return R;
}

int kvq_rules_check(const kvq_op *op, char *err, size_t errlen)
{
    const op_rules *R = rules_of(op);
    if (!R->err[0]) return 1;
    snprintf(err, errlen, "%s", R->err);
    return 0;
}

static int eval_rule(const kvq_rule *r, const char *text, const kvq_case *c, const void *rec, int64_t *v,
                     char *err, size_t errlen)
{
    char e[240];
    if (kvq_rule_eval(r, c, rec, v, e, sizeof e)) return 1;
    snprintf(err, errlen, "'%s' %s", text, e); /* "'tokens * channels' column 8: overflow" */
    return 0;
}

int kvq_op_rule_eval(const kvq_case *c, kvq_op_rule_id which, int64_t dflt, int64_t *v, char *err,
                     size_t errlen)
{
    const op_rules *R = rules_ok(c->op);
    if (R->rule[which] == NULL) {
        *v = dflt;
        return 1;
    }
    return eval_rule(R->rule[which], kvq_op_rule_text(c->op, which), c, NULL, v, err, errlen);
}

int kvq_field_count(const kvq_case *c, const kvq_field *f, const void *rec, uint64_t *n, char *err,
                    size_t errlen)
{
    const op_rules *R = rules_ok(c->op);
    size_t i = (size_t)(f - c->op->fields);
    char e[280];
    int64_t v;
    if (i >= c->op->nfields || R->count[i] == NULL) {
        snprintf(err, errlen, "%s: not an array field of %s", f->key, c->op->name);
        return 0;
    }
    if (!eval_rule(R->count[i], f->count_rule, c, rec, &v, e, sizeof e)) {
        snprintf(err, errlen, "%s: count %s", f->key, e);
        return 0;
    }
    if (v < 0) {
        snprintf(err, errlen, "%s: count '%s' is negative (%lld)", f->key, f->count_rule, (long long)v);
        return 0;
    }
    *n = (uint64_t)v;
    return 1;
}

int kvq_count_reads_record(const kvq_op *op, const kvq_field *f)
{
    const op_rules *R = rules_ok(op);
    const kvq_rule *r = R->count[(size_t)(f - op->fields)];
    for (int k = 0; r != NULL && k < r->nn; k++)
        if (r->n[k].kind == N_FIELD && r->n[k].fld->role != KVQ_ROLE_CASE && r->n[k].fld->role != KVQ_ROLE_INPUT)
            return 1;
    return 0;
}

uint64_t kvq_count(const kvq_case *c, const kvq_field *f, const void *rec)
{
    uint64_t n = 0;
    char e[8];
    return kvq_field_count(c, f, rec, &n, e, sizeof e) ? n : 0u;
}

int kvq_rule_why_false(const kvq_case *c, kvq_op_rule_id which, char *buf, size_t len)
{
    const op_rules *R = rules_ok(c->op);
    buf[0] = '\0';
    return R->rule[which] != NULL && first_false(R->rule[which], R->rule[which]->root, c, buf, len);
}

int kvq_case_valid(const kvq_case *c)
{
    int64_t v = 0;
    char e[8];
    return kvq_op_rule_eval(c, KVQ_RULE_VALID, 1, &v, e, sizeof e) && v != 0;
}

int kvq_meta_half(const kvq_case *c)
{
    int64_t v = 0;
    char e[8];
    return kvq_op_rule_eval(c, KVQ_RULE_META_HALF, 0, &v, e, sizeof e) && v != 0;
}
