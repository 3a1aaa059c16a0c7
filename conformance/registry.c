/*
 * registry.c -- the families kvq knows, and the schema helpers every generic
 * part of the core uses (spec/verify.md [VER-REG-01..05]).
 *
 * Adding a family: its module under conformance/families/ and one line in
 * FAMILIES below (spec/adding-a-family.md).
 */
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "registry.h"
#include "rule.h"

extern const kvq_family kvq_family_kivi;
extern const kvq_family kvq_family_cert;
extern const kvq_family kvq_family_sage;
extern const kvq_family kvq_family_pkv;
extern const kvq_family kvq_family_vidkv;

/* The registry. */
static const kvq_family *const FAMILIES[] = {
    &kvq_family_kivi,
    &kvq_family_cert,
    &kvq_family_sage,
    &kvq_family_pkv,
    &kvq_family_vidkv,
};

/* The table in use: FAMILIES, or one a test or an embedding program set. */
static const kvq_family *const *table = FAMILIES;
static size_t ntable = KVQ_NELEMS(FAMILIES);

void kvq_registry_use(const kvq_family *const *families, size_t n)
{
    table = families != NULL ? families : FAMILIES;
    ntable = families != NULL ? n : KVQ_NELEMS(FAMILIES);
}

const kvq_family *const *kvq_registry_builtin(size_t *n)
{
    *n = KVQ_NELEMS(FAMILIES);
    return FAMILIES;
}

const char *const kvq_level_names[KVQ_LEVEL_COUNT] = { "exact", "bounded" };
const char *const kvq_ties_names[2] = { "even", "away" };
const char *const kvq_overflow_names[2] = { "saturate", "nan" };
const char *const kvq_subnormal_names[2] = { "keep", "daz" };

size_t kvq_family_count(void)
{
    return ntable;
}

const kvq_family *kvq_family_at(size_t i)
{
    return i < ntable ? table[i] : NULL;
}

const kvq_family *kvq_family_find(const char *name)
{
    for (size_t i = 0; i < ntable; i++)
        if (strcmp(table[i]->name, name) == 0) return table[i];
    return NULL;
}

const kvq_op *kvq_op_find(const char *name)
{
    for (size_t i = 0; i < ntable; i++)
        for (size_t k = 0; k < table[i]->nops; k++)
            if (strcmp(table[i]->ops[k]->name, name) == 0) return table[i]->ops[k];
    return NULL;
}

const char *kvq_family_names(void)
{
    static char buf[256];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ntable && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ", " : "", table[i]->name);
    return buf;
}

const char *kvq_level_name(uint32_t level)
{
    return level < KVQ_LEVEL_COUNT ? kvq_level_names[level] : "?";
}

/* ---- cases ------------------------------------------------------------------ */

size_t kvq_ftype_elem_size(kvq_ftype t)
{
    switch (t) {
    case KVQ_FT_A_F32: case KVQ_FT_A_F16: case KVQ_FT_A_META: return sizeof(float);
    case KVQ_FT_A_U8: return 1;
    case KVQ_FT_A_U16: return 2;
    case KVQ_FT_A_U32: return 4;
    case KVQ_FT_A_C32: return 2 * sizeof(float);
    default: return 0;
    }
}

void *kvq_case_role(kvq_case *c, kvq_role role)
{
    switch (role) {
    case KVQ_ROLE_CASE: return c;
    case KVQ_ROLE_INPUT: return c->in;
    case KVQ_ROLE_EXPECTED: return c->exp;
    case KVQ_ROLE_REFERENCE: return c->ref;
    default: return NULL;
    }
}

void kvq_fields_release(const kvq_op *op, kvq_role role, void *rec)
{
    if (rec == NULL) return;
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        char *p = (char *)rec + f->offset;
        if (f->role != role) continue;
        if (kvq_ftype_elem_size(f->type)) {
            void **a = (void **)(void *)p;
            free(*a);
            *a = NULL;
        } else if (f->type == KVQ_FT_AMB) {
            kvq_amb *a = (kvq_amb *)(void *)p;
            free(a->idx);
            free(a->alt);
            memset(a, 0, sizeof *a);
        } else if (f->type == KVQ_FT_CUSTOM && f->custom->release != NULL) {
            f->custom->release(p);
        }
    }
}

/* Allocate the arrays of one role's fields (count at least 1 element). */
static kvq_status alloc_arrays(kvq_case *c, kvq_role role)
{
    void *rec = kvq_case_role(c, role);
    for (size_t i = 0; i < c->op->nfields; i++) {
        const kvq_field *f = &c->op->fields[i];
        size_t es = kvq_ftype_elem_size(f->type);
        uint64_t n;
        void **a;
        if (f->role != role || es == 0) continue;
        n = kvq_count(c, f, rec);
        if (n > ((uint64_t)1 << 40) / es) return KVQ_E_NOMEM;
        a = (void **)(void *)((char *)rec + f->offset);
        if (*a != NULL) continue; /* allocated by an earlier call */
        *a = malloc((size_t)(n ? n : 1) * es);
        if (*a == NULL) return KVQ_E_NOMEM;
    }
    return KVQ_OK;
}

kvq_status kvq_case_begin(kvq_case *c, const kvq_op *op)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->in = calloc(1, op->in_size ? op->in_size : 1);
    return c->in != NULL ? KVQ_OK : KVQ_E_NOMEM;
}

kvq_status kvq_case_alloc(kvq_case *c)
{
    const kvq_op *op = c->op;
    kvq_status st = KVQ_OK;
    if (c->in == NULL && (c->in = calloc(1, op->in_size ? op->in_size : 1)) == NULL) return KVQ_E_NOMEM;
    st = alloc_arrays(c, KVQ_ROLE_INPUT);
    if (st == KVQ_OK && c->status == KVQ_OK) {
        if (c->exp == NULL) c->exp = calloc(1, op->out_size ? op->out_size : 1);
        if (c->ref == NULL) c->ref = calloc(1, op->ref_size ? op->ref_size : 1);
        if (c->exp == NULL || c->ref == NULL) st = KVQ_E_NOMEM;
        if (st == KVQ_OK) st = alloc_arrays(c, KVQ_ROLE_EXPECTED);
        if (st == KVQ_OK) st = alloc_arrays(c, KVQ_ROLE_REFERENCE);
    }
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}

void kvq_case_drop_outputs(kvq_case *c)
{
    if (c->op == NULL) return;
    kvq_fields_release(c->op, KVQ_ROLE_EXPECTED, c->exp);
    kvq_fields_release(c->op, KVQ_ROLE_REFERENCE, c->ref);
    free(c->exp);
    free(c->ref);
    c->exp = c->ref = NULL;
}

void kvq_case_free(kvq_case *c)
{
    if (c->op != NULL) {
        kvq_case_drop_outputs(c);
        kvq_fields_release(c->op, KVQ_ROLE_INPUT, c->in);
    }
    free(c->in);
    c->in = NULL;
}

int kvq_amb_find(const kvq_amb *a, uint64_t e, uint32_t *alt)
{
    size_t lo = 0, hi = (size_t)a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->idx[mid] == e) {
            *alt = a->alt[mid];
            return 1;
        }
        if (a->idx[mid] < e) lo = mid + 1; else hi = mid;
    }
    return 0;
}

const kvq_field *kvq_op_output(const kvq_op *op, const char *key)
{
    for (size_t i = 0; i < op->nfields; i++)
        if (op->fields[i].role == KVQ_ROLE_OUTPUT && strcmp(op->fields[i].key, key) == 0)
            return &op->fields[i];
    return NULL;
}

static double ratio(double e, double b)
{
    return b > 0.0 ? e / b : e > 0.0 ? 1e300 : 0.0;
}

void kvq_verdict_margin(kvq_verdict *v, const char *quantity, double error, double bound)
{
    int i;
    for (i = 0; i < v->nmargin; i++)
        if (strcmp(v->margin[i].quantity, quantity) == 0) break;
    if (i == v->nmargin) {
        if (v->nmargin == KVQ_VERDICT_MARGINS) return;
        v->nmargin++;
        v->margin[i].quantity = quantity;
        v->margin[i].error = error, v->margin[i].bound = bound;
        return;
    }
    if (ratio(error, bound) > ratio(v->margin[i].error, v->margin[i].bound))
        v->margin[i].error = error, v->margin[i].bound = bound;
}

/* ---- the core's bitwise judgement [VER-EX-01..03] ---------------------------- */

static int f16_field(const kvq_case *c, const kvq_field *f)
{
    return f->type == KVQ_FT_A_F16 || (f->type == KVQ_FT_A_META && kvq_meta_half(c));
}

/* A scalar output field: its 32 bits, decimal or binary32 in the message. */
static int judge_scalar(kvq_verdict *v, const kvq_field *f, const void *exp, const void *out)
{
    uint32_t e, g;
    memcpy(&e, (const char *)exp + f->offset, 4);
    memcpy(&g, (const char *)out + f->offset, 4);
    if (e == g) return 1;
    if (f->type == KVQ_FT_F32)
        snprintf(v->detail, sizeof v->detail, "%s: expected 0x%08lx (%a), got 0x%08lx (%a)%s", f->key,
                 (unsigned long)e, (double)kvq_f32_from_bits(e), (unsigned long)g,
                 (double)kvq_f32_from_bits(g), f->cite ? f->cite : "");
    else
        snprintf(v->detail, sizeof v->detail, "%s: expected %lu, got %lu%s", f->key, (unsigned long)e,
                 (unsigned long)g, f->cite ? f->cite : "");
    return 0;
}

int kvq_judge_field(kvq_verdict *v, const kvq_case *c, const kvq_field *f, const void *exp,
                    const void *out)
{
    char *d = v->detail, where[64] = "";
    size_t dl = sizeof v->detail;
    if (f->type == KVQ_FT_U32 || f->type == KVQ_FT_ENUM || f->type == KVQ_FT_F32)
        return judge_scalar(v, f, exp, out);
    const void *ea, *ga;
    uint64_t n, mism = 0, first = 0;
    size_t es = kvq_ftype_elem_size(f->type);
    int isfloat = f->type == KVQ_FT_A_F32 || f->type == KVQ_FT_A_F16 || f->type == KVQ_FT_A_META ||
                  f->type == KVQ_FT_A_C32;
    if (es == 0) return 1; /* custom and near-tie fields: the op's judge */
    ea = *(void *const *)(const void *)((const char *)exp + f->offset);
    ga = *(void *const *)(const void *)((const char *)out + f->offset);
    n = kvq_count(c, f, out);
    if (f->type == KVQ_FT_A_C32) n *= 2, es = sizeof(float);
    for (uint64_t i = 0; i < n; i++) {
        int same = isfloat ? kvq_f32_same(((const float *)ea)[i], ((const float *)ga)[i])
                           : memcmp((const char *)ea + i * es, (const char *)ga + i * es, es) == 0;
        if (same) continue;
        if (mism++ == 0) first = i;
        if (f->unit != NULL) break; /* indexed form: the first one */
    }
    if (mism == 0) return 1;
    if (f->where != NULL) f->where(c, first, where, sizeof where);
    if (isfloat) {
        float e = ((const float *)ea)[first], g = ((const float *)ga)[first];
        if (f->unit != NULL && f16_field(c, f)) {
            int ok1, ok2;
            unsigned e16 = kvq_f16_bits(e, &ok1), g16 = kvq_f16_bits(g, &ok2);
            snprintf(d, dl, "%s[%s %llu]: expected 0x%04x, got 0x%04x%s%s", f->key, f->unit,
                     (unsigned long long)first, e16, g16, ok2 ? "" : " (not binary16)",
                     f->cite ? f->cite : "");
        } else if (f->unit != NULL) {
            snprintf(d, dl, "%s[%s %llu]: expected 0x%08lx (%a), got 0x%08lx (%a)%s", f->key, f->unit,
                     (unsigned long long)first, (unsigned long)kvq_f32_bits(e), (double)e,
                     (unsigned long)kvq_f32_bits(g), (double)g, f->cite ? f->cite : "");
        } else {
            snprintf(d, dl, "%s: %llu of %llu values differ; first at element %llu%s: expected "
                     "0x%08lx (%a), got 0x%08lx (%a)%s", f->key, (unsigned long long)mism,
                     (unsigned long long)n, (unsigned long long)first, where,
                     (unsigned long)kvq_f32_bits(e), (double)e, (unsigned long)kvq_f32_bits(g),
                     (double)g, f->cite ? f->cite : "");
        }
    } else {
        unsigned long e = 0, g = 0;
        int w = (int)es * 2;
        memcpy(&e, (const char *)ea + first * es, es);
        memcpy(&g, (const char *)ga + first * es, es);
        if (f->unit != NULL)
            snprintf(d, dl, "%s[%s %llu]: expected 0x%0*lx, got 0x%0*lx%s", f->key, f->unit,
                     (unsigned long long)first, w, e, w, g, f->cite ? f->cite : "");
        else
            snprintf(d, dl, "%s: %llu of %llu %s differ; first at %s %llu%s: expected 0x%0*lx, "
                     "got 0x%0*lx%s", f->key, (unsigned long long)mism, (unsigned long long)n,
                     es == 1 ? "bytes" : "words", es == 1 ? "byte" : "word",
                     (unsigned long long)first, where, w, e, w, g, f->cite ? f->cite : "");
    }
    return 0;
}

static const kvq_field *expected_of(const kvq_op *op, const kvq_field *out)
{
    for (size_t i = 0; i < op->nfields; i++)
        if (op->fields[i].role == KVQ_ROLE_EXPECTED && op->fields[i].offset == out->offset)
            return &op->fields[i];
    return NULL;
}

/* "ZERO_SCALE|CLAMPED" ("none" for 0; unknown bits in hex). */
static void flag_names(char *buf, size_t len, uint32_t f)
{
    const char *const *NAMES = kvq_flag_names;
    size_t o = 0;
    buf[0] = '\0';
    if (f == 0u) {
        snprintf(buf, len, "none");
        return;
    }
    for (unsigned b = 0; b < 32u && o < len; b++) {
        if (!(f & (1u << b))) continue;
        if (b < KVQ_FLAG_BITS) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "|" : "", NAMES[b]);
        else o += (size_t)snprintf(buf + o, len - o, "%s0x%x", o ? "|" : "", 1u << b);
    }
}

void kvq_judge_flags(kvq_verdict *v, const char *what, uint32_t want, uint32_t got)
{
    char w[96], g[96], extra[96], missing[96];
    flag_names(w, sizeof w, want);
    flag_names(g, sizeof g, got);
    flag_names(extra, sizeof extra, got & ~want);
    flag_names(missing, sizeof missing, want & ~got);
    snprintf(v->detail, sizeof v->detail, "%s: expected 0x%08lx (%s), got 0x%08lx (%s):%s%s%s%s", what,
             (unsigned long)want, w, (unsigned long)got, g, (got & ~want) ? " extra " : "",
             (got & ~want) ? extra : "", (want & ~got) ? " missing " : "", (want & ~got) ? missing : "");
}

void kvq_judge_flags_at(kvq_verdict *v, const kvq_case *c, const void *out, const char *what,
                        uint32_t want, uint32_t got)
{
    char where[160] = "";
    size_t len;
    kvq_judge_flags(v, what, want, got);
    if (c->op->flags_where == NULL) return;
    c->op->flags_where(c, out, want ^ got, where, sizeof where);
    len = strlen(v->detail);
    snprintf(v->detail + len, sizeof v->detail - len, "%s", where);
}

int kvq_judge_common(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_op *op = c->op;
    int has_flags = 0;
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        if (f->role == KVQ_ROLE_OUTPUT && f->type == KVQ_FT_FLAGS) has_flags = 1;
        if (f->role != KVQ_ROLE_OUTPUT || f->cmp != KVQ_CMP_ALWAYS || expected_of(op, f) == NULL) continue;
        if (!kvq_judge_field(v, c, f, c->exp, out)) return 0;
    }
    if (c->level != KVQ_LEVEL_EXACT) return 1;
    if (has_flags && flags != (c->flags & ~KVQ_FLAG_AMBIGUOUS)) {
        kvq_judge_flags_at(v, c, out, "flags", c->flags & ~KVQ_FLAG_AMBIGUOUS, flags);
        return 0;
    }
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        if (f->role != KVQ_ROLE_OUTPUT || f->cmp != KVQ_CMP_EXACT || expected_of(op, f) == NULL) continue;
        if (!kvq_judge_field(v, c, f, c->exp, out)) return 0;
    }
    return 1;
}
