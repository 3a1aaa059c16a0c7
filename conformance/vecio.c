/*
 * vecio.c -- reading and writing vector and results files (spec/vectors.md),
 * one reader and one writer for every operation, driven by its field schema.
 *
 * The reader is strict: every key exactly once, no key the operation does not
 * have, every hex field of exactly the length its count implies.  Each error
 * names the file, the line, and what is wrong [VEC-FMT-01..].  Results are
 * kept as text until verify decodes each against its own case's operation.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "lexio.h"
#include "rule.h"
#include "vecio.h"

#define MAX_FILE_ELEMS KVQ_MAX_FILE_ELEMS /* values per array accepted from a file */

/* ---- UTF-8 ---------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when s does not
 * start one (overlong forms, surrogates and code points above U+10FFFF are
 * not valid). */
size_t kvq_utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07u;
    else return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0u) != 0x80u) return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800u) || (n == 4 && (cp < 0x10000u || cp > 0x10FFFFu)) ||
        (cp >= 0xD800u && cp <= 0xDFFFu))
        return 0;
    return n;
}

void kvq_copy_utf8(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)src;
    if (n == 0) return;
    while (*s) {
        size_t k = kvq_utf8_seq(s);
        if (k == 0) k = 1; /* a stray byte: copied, the writers escape it */
        if (o + k >= n) break; /* never half a character */
        memcpy(dst + o, s, k);
        o += k, s += k;
    }
    dst[o] = '\0';
}

/* ---- small helpers (the shared ones: lexio.h) --------------------------- */

static int parse_hex32_field(const char *s, uint32_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || strlen(s) != 10) return 0;
    return hexn(s + 2, 8, out);
}

static int parse_f32_hex(const char *s, float *out)
{
    uint32_t u;
    if (strlen(s) != 8 || !hexn(s, 8, &u)) return 0;
    *out = kvq_f32_from_bits(u);
    return 1;
}

static int id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= KVQ_ID_MAX) return 0;
    for (; *s; s++) {
        char ch = *s;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.'))
            return 0;
    }
    return 1;
}

static void *at(void *rec, const kvq_field *f)
{
    return (char *)rec + f->offset;
}

static const void *cat(const void *rec, const kvq_field *f)
{
    return (const char *)rec + f->offset;
}

static int is_array(const kvq_field *f)
{
    return kvq_ftype_elem_size(f->type) != 0 || f->type == KVQ_FT_AMB;
}

/* Hex digits of one element of an array type. */
static int hex_width(const kvq_case *c, const kvq_field *f)
{
    switch (f->type) {
    case KVQ_FT_A_F32: case KVQ_FT_A_U32: return 8;
    case KVQ_FT_A_F16: case KVQ_FT_A_U16: return 4;
    case KVQ_FT_A_META: return kvq_meta_half(c) ? 4 : 8;
    case KVQ_FT_A_U8: return 2;
    case KVQ_FT_A_C32: return 16;
    default: return 0;
    }
}

/* The code range of a near-tie list's alternatives: the op's rules amb_lo
 * and amb_hi (0 and 255 without them). */
static void amb_range(const kvq_case *c, int *lo, int *hi)
{
    int64_t l = 0, h = 255;
    char e[8];
    if (!kvq_op_rule_eval(c, KVQ_RULE_AMB_LO, 0, &l, e, sizeof e)) l = 0;
    if (!kvq_op_rule_eval(c, KVQ_RULE_AMB_HI, 255, &h, e, sizeof e)) h = 255;
    *lo = (int)l, *hi = (int)h;
}

/* ---- reading one array field ------------------------------------------------ */

/* amb=: `-` or index:alt entries, index < n strictly increasing, alt a decimal
 * in [lo, hi] (a leading '-' allowed when lo < 0), stored as its low 8 bits. */
static kvq_status parse_amb(kvq_amb *a, const char *s, uint64_t n, int lo, int hi,
                            const char *path, long line, char *err, size_t errlen)
{
    uint64_t cnt = 0, prev = 0;
    const char *p;
    memset(a, 0, sizeof *a);
    if (strcmp(s, "-") == 0) return KVQ_OK;
    for (p = s; *p; p++) if (*p == ',') cnt++;
    cnt++;
    if (cnt > n) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: more entries than elements");
    a->idx = malloc(cnt * sizeof *a->idx);
    a->alt = malloc(cnt);
    if (!a->idx || !a->alt) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
    p = s;
    for (uint64_t k = 0; k < cnt; k++) {
        char item[64], *colon;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        uint64_t idx;
        uint32_t alt;
        int neg;
        long av;
        if (len == 0 || len >= sizeof item)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: bad entry %llu", (unsigned long long)k);
        memcpy(item, p, len);
        item[len] = '\0';
        colon = strchr(item, ':');
        if (colon == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: entry '%s' is not index:alt", item);
        *colon = '\0';
        neg = colon[1] == '-' && lo < 0;
        if (!parse_u64(item, &idx) || !parse_u32(colon + 1 + neg, &alt))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: entry %llu is not decimal index:alt", (unsigned long long)k);
        if (idx >= n) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: index %llu out of range", (unsigned long long)idx);
        if (k > 0 && idx <= prev) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: indices not strictly increasing at %llu", (unsigned long long)idx);
        av = neg ? -(long)alt : (long)alt;
        if (av > hi) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: alternative code %ld exceeds %d", av, hi);
        if (av < lo) return fail(err, errlen, KVQ_E_FORMAT, path, line, "amb: alternative code %ld below %d", av, lo);
        a->idx[k] = idx;
        a->alt[k] = (uint8_t)(av & 0xff);
        prev = idx;
        p = end ? end + 1 : p + len;
    }
    a->n = cnt;
    return KVQ_OK;
}

/* An array field's text into its (allocated) array. */
static kvq_status parse_array(const kvq_case *c, const kvq_field *f, void *rec, const char *s,
                              const char *path, long line, char *err, size_t errlen)
{
    uint64_t n = kvq_count(c, f, rec);
    int w = hex_width(c, f);
    void *arr;
    if (f->type == KVQ_FT_AMB) {
        int lo = 0, hi = 255;
        amb_range(c, &lo, &hi);
        return parse_amb((kvq_amb *)at(rec, f), s, n, lo, hi, path, line, err, errlen);
    }
    arr = *(void **)at(rec, f);
    if (strlen(s) != (size_t)w * n) {
        if (f->type == KVQ_FT_A_U8)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: %zu hex digits, expected %llu",
                        f->key, strlen(s), (unsigned long long)(2 * n));
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu (%llu values of %d digits)", f->key,
                    strlen(s), (unsigned long long)(w * n), (unsigned long long)n, w);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v, v2;
        const char *p = s + (size_t)w * i;
        int ok = f->type == KVQ_FT_A_C32 ? hexn(p, 8, &v) && hexn(p + 8, 8, &v2) : hexn(p, w, &v);
        if (!ok) {
            if (f->type == KVQ_FT_A_U8)
                return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit near byte %llu",
                            f->key, (unsigned long long)i);
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit in value %llu",
                        f->key, (unsigned long long)i);
        }
        switch (f->type) {
        case KVQ_FT_A_U8: ((uint8_t *)arr)[i] = (uint8_t)v; break;
        case KVQ_FT_A_U16: ((uint16_t *)arr)[i] = (uint16_t)v; break;
        case KVQ_FT_A_U32: ((uint32_t *)arr)[i] = v; break;
        case KVQ_FT_A_C32:
            ((float *)arr)[2 * i] = kvq_f32_from_bits(v);
            ((float *)arr)[2 * i + 1] = kvq_f32_from_bits(v2);
            break;
        default:
            ((float *)arr)[i] = w == 4 ? kvq_f16_from_bits((uint16_t)v) : kvq_f32_from_bits(v);
            break;
        }
    }
    return KVQ_OK;
}

/* A scalar field's text into rec (or the case / flags word). */
static kvq_status parse_scalar(kvq_case *c, const kvq_field *f, void *rec, uint32_t *flags,
                               const char *s, const char *path, long line, char *err,
                               size_t errlen)
{
    uint32_t u;
    char msg[160];
    switch (f->type) {
    case KVQ_FT_ID:
        if (!id_ok(s)) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", s);
        strcpy(c->id, s);
        return KVQ_OK;
    case KVQ_FT_OP:
        return KVQ_OK; /* read first, to choose the schema */
    case KVQ_FT_STATUS:
        if (!parse_u32(s, &u) || u >= KVQ_STATUS_COUNT)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a kvq_status", s);
        c->status = (int)u;
        return KVQ_OK;
    case KVQ_FT_FLAGS:
        if (f->role == KVQ_ROLE_OUTPUT) {
            if (!parse_hex32_field(s, flags))
                return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits", s);
            return KVQ_OK;
        }
        if (!parse_hex32_field(s, &c->flags) || (c->flags & ~KVQ_FLAG_ALL))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits of defined flags", s);
        return KVQ_OK;
    case KVQ_FT_U32:
        if (!parse_u32(s, (uint32_t *)at(rec, f)))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: '%.40s' is not a decimal number", f->key, s);
        return KVQ_OK;
    case KVQ_FT_ENUM: {
        int ix = name_index(s, f->names, (int)f->nnames);
        if (ix < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: unknown value '%.40s'", f->key, s);
        *(uint32_t *)at(rec, f) = (uint32_t)ix;
        return KVQ_OK;
    }
    case KVQ_FT_F32:
        if (!parse_f32_hex(s, (float *)at(rec, f)))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: '%.40s' is not 8 hex digits (binary32)", f->key, s);
        return KVQ_OK;
    case KVQ_FT_CUSTOM:
        msg[0] = '\0';
        if (!f->custom->parse(at(rec, f), s, c, msg, sizeof msg))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: %s", f->key, msg[0] ? msg : "malformed");
        return KVQ_OK;
    default:
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: not a scalar field", f->key);
    }
}

/* FNV-1a, 64 bits, over the case lines [VEC-FMT-07]. */
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
    return h;
}

/* ---- vector cases [VEC-FMT-03] ------------------------------------------------ */

typedef struct kv {
    const char *key, *val;
} kv;

static const char *lookup(const kv *p, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].key, key) == 0) return p[i].val;
    return NULL;
}

static const kvq_field *field_of(const kvq_op *op, const char *key, int results)
{
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        if ((f->role == KVQ_ROLE_OUTPUT) == results && strcmp(f->key, key) == 0) return f;
    }
    return NULL;
}

/* Split `key=value` tokens (tok[1..]) into pairs: each key once. */
static kvq_status split_pairs(kv *p, char **tok, int ntok, const char *path, long line,
                              char *err, size_t errlen)
{
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        if (lookup(p, i - 1, tok[i]) != NULL)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        p[i - 1].key = tok[i];
        p[i - 1].val = eq + 1;
    }
    return KVQ_OK;
}

static int vector_role(kvq_role r)
{
    return r != KVQ_ROLE_OUTPUT;
}

static int needs_ok(kvq_role r)
{
    return r == KVQ_ROLE_EXPECTED || r == KVQ_ROLE_REFERENCE;
}

static kvq_status parse_case(kvq_case *c, const kvq_family *fam, char **tok, int ntok,
                             const char *path, long line, char *err, size_t errlen)
{
    kv *p = malloc((size_t)(ntok ? ntok : 1) * sizeof *p);
    int np = ntok - 1;
    const char *opname;
    const kvq_op *op;
    kvq_status st;
    char msg[200];
    memset(c, 0, sizeof *c);
    c->line = line;
    if (p == NULL) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
#define BAIL(...) do { st = fail(err, errlen, __VA_ARGS__); goto out; } while (0)
    st = split_pairs(p, tok, ntok, path, line, err, errlen);
    if (st != KVQ_OK) goto out;
    /* the operation decides the field set [VEC-FMT-03] [VEC-CERT-02] */
    opname = lookup(p, np, "op");
    if (opname == NULL) BAIL(KVQ_E_FORMAT, path, line, "missing key 'op'");
    op = kvq_op_find(opname);
    if (op == NULL) BAIL(KVQ_E_FORMAT, path, line, "op: unknown operation '%.40s'", opname);
    if (op->family != fam) BAIL(KVQ_E_FORMAT, path, line, "op %s is not an operation of family %s", op->name, fam->name);
    c->op = op;
    for (int i = 0; i < np; i++) {
        const kvq_field *f = field_of(op, p[i].key, 0);
        if (f != NULL) continue;
        for (size_t k = 0; k < fam->nops; k++)
            if (field_of(fam->ops[k], p[i].key, 0) != NULL)
                BAIL(KVQ_E_FORMAT, path, line, "key '%s' is not a field of %s", p[i].key, op->name);
        BAIL(KVQ_E_FORMAT, path, line, "unknown key '%.40s'", p[i].key);
    }
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        if ((f->role == KVQ_ROLE_CASE || f->role == KVQ_ROLE_INPUT) && !f->optional &&
            lookup(p, np, f->key) == NULL)
            BAIL(KVQ_E_FORMAT, path, line, "missing key '%s'", f->key);
    }
    c->in = calloc(1, op->in_size ? op->in_size : 1);
    if (c->in == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
    /* scalars of the case and the inputs, in schema order */
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        const char *s;
        if ((f->role != KVQ_ROLE_CASE && f->role != KVQ_ROLE_INPUT) || is_array(f)) continue;
        if ((s = lookup(p, np, f->key)) == NULL) continue; /* optional: 0 */
        st = parse_scalar(c, f, kvq_case_role(c, f->role), NULL, s, path, line, err, errlen);
        if (st != KVQ_OK) goto out;
    }
    if (!(op->levels & KVQ_LEVEL_BIT(c->level))) {
        if (op->levels == KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED) || op->levels == KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT))
            BAIL(KVQ_E_FORMAT, path, line, "level: a %s case is judged at the %s level only", op->name,
                 kvq_level_name(op->levels == KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED) ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT));
        BAIL(KVQ_E_FORMAT, path, line, "level: %s is not a level of %s", kvq_level_name(c->level), op->name);
    }
    if (op->nvariants && c->variant >= op->nvariants)
        BAIL(KVQ_E_FORMAT, path, line, "variant: %u is not a variant of %s", c->variant, op->name);
    /* the core's checks [VER-REG-09]: every array whose count the case's
     * scalars decide within the file limit, status 0 only when valid; then
     * what the family's rules cannot state */
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        uint64_t n;
        if (kvq_ftype_elem_size(f->type) == 0 || kvq_count_reads_record(op, f)) continue;
        if (!kvq_field_count(c, f, NULL, &n, msg, sizeof msg)) BAIL(KVQ_E_FORMAT, path, line, "%s", msg);
        if (n > MAX_FILE_ELEMS)
            BAIL(KVQ_E_FORMAT, path, line, "%s: %llu values, more than %llu (count '%s')", f->key,
                 (unsigned long long)n, (unsigned long long)MAX_FILE_ELEMS, f->count_rule);
    }
    if (c->status == KVQ_OK) {
        int64_t ok = 0;
        if (!kvq_op_rule_eval(c, KVQ_RULE_VALID, 1, &ok, msg, sizeof msg))
            BAIL(KVQ_E_FORMAT, path, line, "valid: %s", msg);
        if (!ok) {
            char why[160];
            if (kvq_rule_why_false(c, KVQ_RULE_VALID, why, sizeof why))
                BAIL(KVQ_E_FORMAT, path, line, "parameters or shape not valid for a status-0 case: '%s' is "
                     "false (rule valid of %s)", why, op->name);
            BAIL(KVQ_E_FORMAT, path, line, "parameters or shape not valid for a status-0 case (rule valid of %s)",
                 op->name);
        }
    }
    msg[0] = '\0';
    if (op->check != NULL && !op->check(c, msg, sizeof msg)) BAIL(KVQ_E_FORMAT, path, line, "%s", msg);
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        int given = lookup(p, np, f->key) != NULL;
        if (!needs_ok(f->role)) continue;
        if (c->status == KVQ_OK && !given)
            BAIL(KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", f->key);
        if (c->status != KVQ_OK && given)
            BAIL(KVQ_E_FORMAT, path, line, "key '%s' given for a case that expects an error", f->key);
    }
    if (c->status == KVQ_OK) { /* the expected scalars: array counts may read them */
        c->exp = calloc(1, op->out_size ? op->out_size : 1);
        c->ref = calloc(1, op->ref_size ? op->ref_size : 1);
        if (c->exp == NULL || c->ref == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
        for (size_t i = 0; i < op->nfields; i++) {
            const kvq_field *f = &op->fields[i];
            if (!needs_ok(f->role) || is_array(f)) continue;
            st = parse_scalar(c, f, kvq_case_role(c, f->role), NULL, lookup(p, np, f->key), path, line, err, errlen);
            if (st != KVQ_OK) goto out;
        }
    }
    /* arrays in schema order, each sized when every field before it is read
     * (a count may depend on an earlier array's contents) and bounded */
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        const char *s;
        size_t es = kvq_ftype_elem_size(f->type);
        void *rec = kvq_case_role(c, f->role);
        uint64_t n = 0;
        if (!vector_role(f->role) || f->role == KVQ_ROLE_CASE || !is_array(f) || rec == NULL) continue;
        if ((s = lookup(p, np, f->key)) == NULL) continue;
        if (es != 0) {
            if (!kvq_field_count(c, f, rec, &n, msg, sizeof msg)) BAIL(KVQ_E_FORMAT, path, line, "%s", msg);
            if (n > MAX_FILE_ELEMS)
                BAIL(KVQ_E_FORMAT, path, line, "%s: more than %llu values", f->key, (unsigned long long)MAX_FILE_ELEMS);
            if ((*(void **)at(rec, f) = malloc((size_t)(n ? n : 1) * es)) == NULL)
                BAIL(KVQ_E_NOMEM, path, line, "out of memory");
        }
        st = parse_array(c, f, rec, s, path, line, err, errlen);
        if (st != KVQ_OK) goto out;
        /* a status-0 case whose inputs the operation must refuse is no case
         * [VEC-FMT-08]: the subject that refuses them would fail it */
        if (f->finite && c->status == KVQ_OK) {
            const float *v = *(float *const *)at(rec, f);
            uint64_t m = f->type == KVQ_FT_A_C32 ? 2 * n : n;
            for (uint64_t e = 0; e < m; e++)
                if (!isfinite(v[e]))
                    BAIL(KVQ_E_FORMAT, path, line, "%s: element %llu is %s (0x%08lx) in a status-0 case: "
                         "a non-finite %s is an error status [VER-REG-10]", f->key,
                         (unsigned long long)(f->type == KVQ_FT_A_C32 ? e / 2 : e),
                         isnan(v[e]) ? "NaN" : "infinite", (unsigned long)kvq_f32_bits(v[e]), f->key);
        }
    }
    /* anything left without its array (a field a case may omit) */
    if (kvq_case_alloc(c) != KVQ_OK) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
#undef BAIL
out:
    free(p);
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}

/* Header line `key value`; value is the rest of the line. */
static kvq_status header_line(lines *L, const char *key, char *out, size_t outlen,
                              const char *path, char *err, size_t errlen)
{
    char *s = lines_next_content(L);
    size_t kl = strlen(key);
    if (s == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "missing header line '%s'", key);
    if (strncmp(s, key, kl) != 0 || s[kl] != ' ' || s[kl + 1] == '\0')
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "expected header line '%s <value>'", key);
    if (strlen(s + kl + 1) >= outlen) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "header '%s' too long", key);
    strcpy(out, s + kl + 1);
    return KVQ_OK;
}

static kvq_status magic_line(lines *L, const char *magic, uint32_t *version, const char *path,
                             char *err, size_t errlen)
{
    char *s = lines_next(L), *tok[3];
    if (s == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, 1, "empty file, expected '%s %u'", magic, KVQ_VEC_VERSION);
    if (tokenize(s, tok, 3) != 2 || strcmp(tok[0], magic) != 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "not a %s file (first line must be '%s %u')", magic, magic, KVQ_VEC_VERSION);
    if (!parse_u32(tok[1], version) || *version != KVQ_VEC_VERSION)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "unsupported version '%.20s' (this kvq reads %u)", tok[1], KVQ_VEC_VERSION);
    return KVQ_OK;
}

/* A case id seen before in this file: the ids so far are kept in a sorted
 * index, so the check costs log n a case. */
typedef struct idset {
    const kvq_case **v;
    size_t n, cap;
} idset;

static const kvq_case *idset_insert(idset *s, const kvq_case *c, int *nomem)
{
    size_t lo = 0, hi = s->n;
    *nomem = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(s->v[mid]->id, c->id);
        if (r == 0) return s->v[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        const kvq_case **nv = realloc(s->v, cap * sizeof *nv);
        if (nv == NULL) {
            *nomem = 1;
            return NULL;
        }
        s->v = nv;
        s->cap = cap;
    }
    memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
    s->v[lo] = c;
    s->n++;
    return NULL;
}

/* The same index over copies (results have no kvq_case of their own). */
static const kvq_case *idset_insert_copy(idset *s, const kvq_case *key, int *nomem)
{
    kvq_case *c = malloc(sizeof *c);
    const kvq_case *dup;
    if (c == NULL) {
        *nomem = 1;
        return NULL;
    }
    *c = *key;
    dup = idset_insert(s, c, nomem);
    if (dup != NULL || *nomem) free(c);
    return dup;
}

static void idset_free_copies(idset *s)
{
    for (size_t i = 0; i < s->n; i++) free((void *)(uintptr_t)s->v[i]);
    free(s->v);
}

/* Whether a generator line names a kvq that writes the end line: kvq 0.2
 * and later.  Files of other writers and of kvq 0.1 read without one. */
static int writes_trailer(const char *gen)
{
    unsigned major, minor;
    if (sscanf(gen, "kvq %u.%u.", &major, &minor) != 2) return 0;
    return major > 0 || minor >= 2;
}

/* Whether a generator line names a kvq older than version `since` ("0.4.0");
 * files of other writers count as current. */
static int generated_before(const char *gen, const char *since)
{
    unsigned a[3], b[3];
    if (sscanf(gen, "kvq %u.%u.%u", &a[0], &a[1], &a[2]) != 3 ||
        sscanf(since, "%u.%u.%u", &b[0], &b[1], &b[2]) != 3)
        return 0;
    for (int i = 0; i < 3; i++)
        if (a[i] != b[i]) return a[i] < b[i];
    return 0;
}

/* `end <count> fnv1a64:<16 hex>` [VEC-FMT-07]: the number of cases and the
 * digest of the case lines before it; a file cut at a line boundary, or
 * with a line changed, fails here. */
static kvq_status trailer_line(kvq_vfile *vf, char *s, uint64_t digest, const char *path, long line,
                               char *err, size_t errlen)
{
    char *tok[4];
    uint64_t n;
    uint32_t hi, lo;
    if (tokenize(s, tok, 4) != 3 || !parse_u64(tok[1], &n) || strncmp(tok[2], "fnv1a64:", 8) != 0 ||
        strlen(tok[2]) != 24 || !hexn(tok[2] + 8, 8, &hi) || !hexn(tok[2] + 16, 8, &lo))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "the end line must be 'end <cases> fnv1a64:<16 hex digits>'");
    if (n != vf->ncases)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "the end line counts %llu cases, the file holds %zu "
                    "(a file cut short or cases lost)", (unsigned long long)n, vf->ncases);
    if (((uint64_t)hi << 32 | lo) != digest)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "the case lines' digest is fnv1a64:%016llx, the end line "
                    "says %s (a case line changed)", (unsigned long long)digest, tok[2]);
    vf->trailer = 1;
    return KVQ_OK;
}

kvq_status kvq_vec_parse(kvq_vfile *vf, const char *buf, size_t len, const char *path,
                         char *err, size_t errlen)
{
    lines L;
    char tmp[64], *s;
    size_t cap = 0;
    kvq_status st;
    idset ids = { 0 };
    uint64_t digest = FNV_OFFSET;
    memset(vf, 0, sizeof *vf);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = magic_line(&L, KVQ_VEC_MAGIC, &vf->version, path, err, errlen);
    if (st == KVQ_OK) st = header_line(&L, "family", tmp, sizeof tmp, path, err, errlen);
    if (st == KVQ_OK && (vf->family = kvq_family_find(tmp)) == NULL)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "unknown family '%s' (%s)", tmp, kvq_family_names());
    if (st == KVQ_OK) st = header_line(&L, "levels", vf->levels, sizeof vf->levels, path, err, errlen);
    if (st == KVQ_OK && vf->family->gen_count(vf->levels) == 0)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "unknown level set '%s'", vf->levels);
    if (st == KVQ_OK) st = header_line(&L, "seed", tmp, sizeof tmp, path, err, errlen);
    if (st == KVQ_OK) {
        uint32_t hi, lo;
        if (strlen(tmp) != 18 || tmp[0] != '0' || tmp[1] != 'x' || !hexn(tmp + 2, 8, &hi) || !hexn(tmp + 10, 8, &lo))
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "seed must be 0x followed by 16 hex digits");
        else
            vf->seed = (uint64_t)hi << 32 | lo;
    }
    if (st == KVQ_OK) st = header_line(&L, "generator", vf->generator, sizeof vf->generator, path, err, errlen);
    while (st == KVQ_OK && (s = lines_next_content(&L)) != NULL) {
        char **tok;
        int ntok, nomem;
        size_t maxtok = strlen(s) / 2 + 2;
        const kvq_case *dup;
        if (vf->trailer) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "content after the 'end' line");
            break;
        }
        if (strncmp(s, "end", 3) == 0 && (s[3] == ' ' || s[3] == '\0')) {
            st = trailer_line(vf, s, digest, path, L.no, err, errlen);
            continue;
        }
        digest = fnv1a(fnv1a(digest, s, strlen(s)), "\n", 1);
        tok = malloc(maxtok * sizeof *tok);
        if (tok == NULL) {
            st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
            break;
        }
        ntok = tokenize(s, tok, (int)maxtok);
        if (ntok < 1 || strcmp(tok[0], "case") != 0) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "expected a 'case' line, found '%.20s'", ntok > 0 ? tok[0] : "");
            free(tok);
            break;
        }
        if (vf->ncases == cap) {
            kvq_case *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(vf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                free(tok);
                break;
            }
            vf->cases = nc;
            /* the index holds pointers into the array: rebuild it */
            ids.n = 0;
            for (size_t i = 0; i < vf->ncases; i++) (void)idset_insert(&ids, &vf->cases[i], &nomem);
        }
        st = parse_case(&vf->cases[vf->ncases], vf->family, tok, ntok, path, L.no, err, errlen);
        free(tok);
        if (st != KVQ_OK) break;
        dup = idset_insert(&ids, &vf->cases[vf->ncases], &nomem);
        if (nomem) st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
        else if (dup != NULL)
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "case id '%s' repeats line %ld", dup->id, dup->line);
        if (st != KVQ_OK) {
            kvq_case_free(&vf->cases[vf->ncases]);
            break;
        }
        vf->ncases++;
    }
    /* no case: an empty shard, whole only with its end line [VEC-GEN-03] */
    if (st == KVQ_OK && vf->ncases == 0 && !vf->trailer)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "no cases, and no end line 'end 0 fnv1a64:%016llx' "
                  "(a file cut short, or an empty shard without its end line) [VEC-GEN-03]",
                  (unsigned long long)FNV_OFFSET);
    /* an operation that gained variants: the cases of older files are of the
     * variant it had then [VER-REG-05] */
    for (size_t i = 0; st == KVQ_OK && i < vf->ncases; i++) {
        const kvq_op *op = vf->cases[i].op;
        if (op->variants_since != NULL && generated_before(vf->generator, op->variants_since))
            vf->cases[i].variant = op->legacy_variant;
    }
    if (st == KVQ_OK && !vf->trailer && writes_trailer(vf->generator))
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "no end line after %zu cases: the file is cut short "
                  "(its generator, %s, always writes one) [VEC-FMT-07]", vf->ncases, vf->generator);
    free(ids.v);
    free(L.buf);
    if (st != KVQ_OK) kvq_vfile_free(vf);
    return st;
}

kvq_status kvq_vec_read(kvq_vfile *vf, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st;
    memset(vf, 0, sizeof *vf);
    st = read_file(&data, &len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = kvq_vec_parse(vf, data, len, path, err, errlen);
    free(data);
    return st;
}

void kvq_vfile_free(kvq_vfile *vf)
{
    for (size_t i = 0; i < vf->ncases; i++) kvq_case_free(&vf->cases[i]);
    free(vf->cases);
    vf->cases = NULL;
    vf->ncases = 0;
}

/* ---- writing -------------------------------------------------------------------- */

/* Every value has an encoding in a binary16 field. */
static int all_f16(const float *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        int ok;
        (void)kvq_f16_bits(v[i], &ok);
        if (!ok) return 0;
    }
    return 1;
}

static int put_array(FILE *f, const kvq_case *c, const kvq_field *fd, const void *rec)
{
    uint64_t n = kvq_count(c, fd, rec);
    int w = hex_width(c, fd);
    if (fd->type == KVQ_FT_AMB) {
        const kvq_amb *a = (const kvq_amb *)cat(rec, fd);
        int lo = 0, hi = 255, ok = 1;
        amb_range(c, &lo, &hi);
        if (a->n == 0) return fputs("-", f) >= 0;
        for (uint64_t k = 0; ok && k < a->n; k++)
            ok = lo < 0 ? fprintf(f, "%s%llu:%d", k ? "," : "", (unsigned long long)a->idx[k], (int)(int8_t)a->alt[k]) >= 0
                        : fprintf(f, "%s%llu:%u", k ? "," : "", (unsigned long long)a->idx[k], (unsigned)a->alt[k]) >= 0;
        return ok;
    }
    {
        const void *arr = *(void *const *)cat(rec, fd);
        if (w == 4 && fd->type != KVQ_FT_A_U16 && !all_f16((const float *)arr, n))
            /* binary16 metadata that is not binary16 has no encoding: a
             * subject's is written `invalid` [VEC-RES-02]; an expected one
             * cannot be written at all */
            return fd->role == KVQ_ROLE_OUTPUT ? fputs("invalid", f) >= 0 : 0;
        for (uint64_t i = 0; i < n; i++) {
            int ok;
            switch (fd->type) {
            case KVQ_FT_A_U8: ok = fprintf(f, "%02x", ((const uint8_t *)arr)[i]) >= 0; break;
            case KVQ_FT_A_U16: ok = fprintf(f, "%04x", ((const uint16_t *)arr)[i]) >= 0; break;
            case KVQ_FT_A_U32: ok = fprintf(f, "%08lx", (unsigned long)((const uint32_t *)arr)[i]) >= 0; break;
            case KVQ_FT_A_C32:
                ok = fprintf(f, "%08lx%08lx", (unsigned long)kvq_f32_bits(((const float *)arr)[2 * i]),
                             (unsigned long)kvq_f32_bits(((const float *)arr)[2 * i + 1])) >= 0;
                break;
            default:
                if (w == 4) {
                    int enc;
                    ok = fprintf(f, "%04x", kvq_f16_bits(((const float *)arr)[i], &enc)) >= 0;
                } else {
                    ok = fprintf(f, "%08lx", (unsigned long)kvq_f32_bits(((const float *)arr)[i])) >= 0;
                }
                break;
            }
            if (!ok) return 0;
        }
        return 1;
    }
}

static int put_scalar(FILE *f, const kvq_case *c, const kvq_field *fd, const void *rec, int status,
                      uint32_t flags)
{
    switch (fd->type) {
    case KVQ_FT_ID: return fputs(c->id, f) >= 0;
    case KVQ_FT_OP: return fputs(c->op->name, f) >= 0;
    case KVQ_FT_STATUS: return fprintf(f, "%d", status) >= 0;
    case KVQ_FT_FLAGS: return fprintf(f, "0x%08lx", (unsigned long)flags) >= 0;
    case KVQ_FT_U32: return fprintf(f, "%u", *(const uint32_t *)cat(rec, fd)) >= 0;
    case KVQ_FT_ENUM: {
        uint32_t v = *(const uint32_t *)cat(rec, fd);
        return fputs(v < fd->nnames ? fd->names[v] : "?", f) >= 0;
    }
    case KVQ_FT_F32: return fprintf(f, "%08lx", (unsigned long)kvq_f32_bits(*(const float *)cat(rec, fd))) >= 0;
    case KVQ_FT_CUSTOM: return fd->custom->print(f, cat(rec, fd), c);
    default: return 0;
    }
}

/* Nonzero bytes in a scalar: whether an optional field is written. */
static int scalar_nonzero(const kvq_field *fd, const void *rec)
{
    return *(const uint32_t *)cat(rec, fd) != 0u;
}

kvq_status kvq_vec_write(FILE *f, const kvq_vfile *vf)
{
    uint64_t h = FNV_OFFSET;
    kvq_status st = kvq_vec_write_header(f, vf);
    for (size_t k = 0; st == KVQ_OK && k < vf->ncases; k++) {
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);
        if (m == NULL) return KVQ_E_NOMEM;
        st = kvq_vec_write_case(m, &vf->cases[k]);
        if (fclose(m) != 0 && st == KVQ_OK) st = KVQ_E_NOMEM;
        if (st == KVQ_OK) {
            h = fnv1a(h, line, len);
            if (fwrite(line, 1, len, f) != len) st = KVQ_E_IO;
        }
        free(line);
    }
    if (st == KVQ_OK &&
        fprintf(f, "end %zu fnv1a64:%016llx\n", vf->ncases, (unsigned long long)h) < 0)
        st = KVQ_E_IO;
    return st;
}

kvq_status kvq_vec_write_header(FILE *f, const kvq_vfile *vf)
{
    if (fprintf(f, "%s %u\nfamily %s\nlevels %s\nseed 0x%016llx\ngenerator %s\n", KVQ_VEC_MAGIC,
                KVQ_VEC_VERSION, vf->family->name, vf->levels, (unsigned long long)vf->seed,
                vf->generator) < 0)
        return KVQ_E_IO;
    return KVQ_OK;
}

kvq_status kvq_vec_write_case(FILE *f, const kvq_case *c)
{
    const kvq_op *op = c->op;
    int ok = fputs("case", f) >= 0;
    for (size_t i = 0; ok && i < op->nfields; i++) {
        const kvq_field *fd = &op->fields[i];
        const void *rec = kvq_case_role((kvq_case *)c, fd->role);
        if (!vector_role(fd->role) || (needs_ok(fd->role) && c->status != KVQ_OK) || rec == NULL) continue;
        if (fd->optional && !is_array(fd) && !scalar_nonzero(fd, rec)) continue;
        ok = fprintf(f, " %s=", fd->key) >= 0 &&
             (is_array(fd) ? put_array(f, c, fd, rec) : put_scalar(f, c, fd, rec, c->status, c->flags));
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

kvq_status kvq_res_write_header(FILE *f, const char *subject, const char *unavailable)
{
    if (fprintf(f, "%s %u\nsubject %s\n", KVQ_RES_MAGIC, KVQ_VEC_VERSION, subject) < 0)
        return KVQ_E_IO;
    if (unavailable != NULL && fprintf(f, "unavailable %s\n", unavailable) < 0) return KVQ_E_IO;
    return KVQ_OK;
}

kvq_status kvq_res_write(FILE *f, const kvq_case *c, int status, uint32_t flags, const void *out)
{
    const kvq_op *op = c->op;
    int ok = fprintf(f, "result id=%s status=%d", c->id, status) >= 0;
    for (size_t i = 0; ok && status == KVQ_OK && i < op->nfields; i++) {
        const kvq_field *fd = &op->fields[i];
        if (fd->role != KVQ_ROLE_OUTPUT) continue;
        ok = fprintf(f, " %s=", fd->key) >= 0 &&
             (is_array(fd) ? put_array(f, c, fd, out) : put_scalar(f, c, fd, out, status, flags));
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

kvq_status kvq_res_write_touched(FILE *f, const kvq_case *c, int status, const char *touched)
{
    return fprintf(f, "result id=%s status=%d touched=%s\n", c->id, status, touched) < 0 ? KVQ_E_IO : KVQ_OK;
}

void kvq_out_refill(const kvq_case *c, void *out, const char *key)
{
    const kvq_op *op = c->op;
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        size_t es = kvq_ftype_elem_size(f->type);
        uint64_t n;
        if (f->role != KVQ_ROLE_OUTPUT || es == 0 || strcmp(f->key, key) != 0) continue;
        n = kvq_count(c, f, out);
        memset(*(void **)at(out, f), 0xA5, (size_t)(n ? n : 1) * es);
    }
}

const char *kvq_out_touched(const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_op *op = c->op;
    const unsigned char *o = out;
    if (flags != 0u) return "flags";
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        size_t es = kvq_ftype_elem_size(f->type), n;
        const unsigned char *p;
        if (f->role != KVQ_ROLE_OUTPUT || f->type == KVQ_FT_FLAGS) continue;
        if (es != 0) {
            uint64_t cnt = kvq_count(c, f, out);
            p = *(const unsigned char *const *)(const void *)(o + f->offset);
            n = (size_t)(cnt ? cnt : 1) * es;
        } else {
            /* a scalar or a record in the struct: its bytes up to the next field */
            size_t end = op->out_size;
            for (size_t k = 0; k < op->nfields; k++)
                if (op->fields[k].role == KVQ_ROLE_OUTPUT && op->fields[k].offset > f->offset &&
                    op->fields[k].offset < end)
                    end = op->fields[k].offset;
            p = o + f->offset;
            n = end - f->offset;
        }
        for (size_t b = 0; b < n; b++)
            if (p[b] != 0xA5) return f->key;
    }
    return NULL;
}

kvq_status kvq_res_write_skip(FILE *f, const char *id, const char *reason)
{
    return fprintf(f, "result id=%s skipped=%s\n", id, reason) < 0 ? KVQ_E_IO : KVQ_OK;
}

/* ---- results ------------------------------------------------------------------ */

void kvq_rcase_free(kvq_rcase *r)
{
    for (size_t i = 0; i < r->nfields; i++) {
        free(r->fields[i].key);
        free(r->fields[i].value);
    }
    free(r->fields);
    free(r->skipped);
    free(r->touched);
    r->fields = NULL;
    r->nfields = 0;
    r->skipped = NULL;
    r->touched = NULL;
}

void kvq_rfile_free(kvq_rfile *rf)
{
    for (size_t i = 0; i < rf->ncases; i++) kvq_rcase_free(&rf->cases[i]);
    free(rf->cases);
    rf->cases = NULL;
    rf->ncases = 0;
}

static int key_ok(const char *s)
{
    if (*s == '\0') return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

/* Whether some operation of the registry has an output of this key: a key no
 * operation writes is unknown, a format error of the file [VEC-RES-02]; one
 * of another operation than the case's fails that case when it is decoded. */
static int output_key_known(const char *key)
{
    for (size_t f = 0; f < kvq_family_count(); f++) {
        const kvq_family *fam = kvq_family_at(f);
        for (size_t k = 0; k < fam->nops; k++)
            if (field_of(fam->ops[k], key, 1) != NULL) return 1;
    }
    return 0;
}

/* One result line [VEC-RES-02]: id and status (or skipped); the output fields
 * stay text, checked against the case's operation when verify decodes them;
 * a key no operation has is the file's error here. */
static kvq_status parse_result(kvq_rcase *r, char **tok, int ntok, const char *path, long line,
                               char *err, size_t errlen)
{
    kv *p = malloc((size_t)(ntok ? ntok : 1) * sizeof *p);
    int np = ntok - 1;
    const char *id, *status, *skipped;
    uint32_t u;
    kvq_status st;
    memset(r, 0, sizeof *r);
    r->line = line;
    if (p == NULL) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
#define BAIL(...) do { st = fail(err, errlen, __VA_ARGS__); goto out; } while (0)
    st = split_pairs(p, tok, ntok, path, line, err, errlen);
    if (st != KVQ_OK) goto out;
    for (int i = 0; i < np; i++)
        if (!key_ok(p[i].key)) BAIL(KVQ_E_FORMAT, path, line, "bad key '%.40s'", p[i].key);
    id = lookup(p, np, "id"), status = lookup(p, np, "status"), skipped = lookup(p, np, "skipped");
    if (id == NULL || (status == NULL) == (skipped == NULL))
        BAIL(KVQ_E_FORMAT, path, line, "a result needs id= and status= (or skipped=, without status=)");
    if (!id_ok(id)) BAIL(KVQ_E_FORMAT, path, line, "bad case id '%.70s'", id);
    strcpy(r->id, id);
    if (skipped != NULL) { /* [VEC-CERT-06] */
        if (np > 2) BAIL(KVQ_E_FORMAT, path, line, "output fields given with skipped=");
        if (skipped[0] == '\0') BAIL(KVQ_E_FORMAT, path, line, "skipped= needs a reason");
        r->status = -1;
        if ((r->skipped = strdup(skipped)) == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
        goto out;
    }
    if (!parse_u32(status, &u) || u > 255u)
        BAIL(KVQ_E_FORMAT, path, line, "status: '%.40s' is not a decimal status", status);
    r->status = (int)u;
    if (r->status != KVQ_OK) {
        const char *touched = lookup(p, np, "touched");
        for (int i = 0; i < np; i++)
            if (strcmp(p[i].key, "id") != 0 && strcmp(p[i].key, "status") != 0 && strcmp(p[i].key, "touched") != 0)
                BAIL(KVQ_E_FORMAT, path, line, "key '%s' given with a nonzero status", p[i].key);
        if (touched != NULL && (touched[0] == '\0' || !key_ok(touched)))
            BAIL(KVQ_E_FORMAT, path, line, "touched= needs the key of an output");
        if (touched != NULL && (r->touched = strdup(touched)) == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
        goto out;
    }
    if (lookup(p, np, "touched") != NULL)
        BAIL(KVQ_E_FORMAT, path, line, "touched= belongs to a result with a nonzero status");
    r->fields = calloc((size_t)(np ? np : 1), sizeof *r->fields);
    if (r->fields == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
    for (int i = 0; i < np; i++) {
        kvq_rfield *rf = &r->fields[r->nfields];
        if (strcmp(p[i].key, "id") == 0 || strcmp(p[i].key, "status") == 0) continue;
        if (!output_key_known(p[i].key))
            BAIL(KVQ_E_FORMAT, path, line, "unknown key '%.40s' (no operation has such an output)", p[i].key);
        rf->key = strdup(p[i].key);
        rf->value = strdup(p[i].val);
        r->nfields++;
        if (rf->key == NULL || rf->value == NULL) BAIL(KVQ_E_NOMEM, path, line, "out of memory");
    }
#undef BAIL
out:
    free(p);
    if (st != KVQ_OK) kvq_rcase_free(r);
    return st;
}

kvq_status kvq_res_parse(kvq_rfile *rf, const char *buf, size_t len, const char *path,
                         char *err, size_t errlen)
{
    lines L;
    char *s;
    size_t cap = 0;
    kvq_status st;
    memset(rf, 0, sizeof *rf);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = magic_line(&L, KVQ_RES_MAGIC, &rf->version, path, err, errlen);
    if (st == KVQ_OK) st = header_line(&L, "subject", rf->subject, sizeof rf->subject, path, err, errlen);
    while (st == KVQ_OK && (s = lines_next_content(&L)) != NULL) {
        char **tok;
        int ntok;
        size_t maxtok = strlen(s) / 2 + 2;
        if (strncmp(s, "unavailable ", 12) == 0) {
            if (rf->ncases > 0 || rf->unavailable[0]) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "'unavailable' must come alone, before any result");
                break;
            }
            kvq_copy_utf8(rf->unavailable, sizeof rf->unavailable, s + 12);
            continue;
        }
        if ((tok = malloc(maxtok * sizeof *tok)) == NULL) {
            st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
            break;
        }
        ntok = tokenize(s, tok, (int)maxtok);
        if (ntok < 1 || strcmp(tok[0], "result") != 0) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "expected a 'result' line");
            free(tok);
            break;
        }
        if (rf->unavailable[0]) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "a result after 'unavailable'");
            free(tok);
            break;
        }
        if (rf->ncases == cap) {
            kvq_rcase *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(rf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                free(tok);
                break;
            }
            rf->cases = nc;
        }
        st = parse_result(&rf->cases[rf->ncases], tok, ntok, path, L.no, err, errlen);
        free(tok);
        if (st != KVQ_OK) break;
        rf->ncases++;
    }
    if (st == KVQ_OK) { /* each case at most once [VEC-RES-02] */
        idset ids = { 0 };
        for (size_t i = 0; i < rf->ncases && st == KVQ_OK; i++) {
            int nomem;
            kvq_case key;
            const kvq_case *dup;
            memset(&key, 0, sizeof key);
            strcpy(key.id, rf->cases[i].id);
            key.line = (long)i; /* the index of the result, not a line */
            dup = idset_insert_copy(&ids, &key, &nomem);
            if (nomem) st = fail(err, errlen, KVQ_E_NOMEM, path, rf->cases[i].line, "out of memory");
            else if (dup != NULL)
                st = fail(err, errlen, KVQ_E_FORMAT, path, rf->cases[i].line, "result for '%s' repeats line %ld",
                          rf->cases[i].id, rf->cases[dup->line].line);
        }
        idset_free_copies(&ids);
    }
    free(L.buf);
    if (st != KVQ_OK) kvq_rfile_free(rf);
    return st;
}

kvq_status kvq_res_read(kvq_rfile *rf, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st;
    memset(rf, 0, sizeof *rf);
    st = read_file(&data, &len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = kvq_res_parse(rf, data, len, path, err, errlen);
    free(data);
    return st;
}

/* ---- decoding a result against its case ------------------------------------------ */

void kvq_out_free(const kvq_op *op, void *out)
{
    kvq_fields_release(op, KVQ_ROLE_OUTPUT, out);
    free(out);
}

void *kvq_out_sentinel(const kvq_case *c)
{
    const kvq_op *op = c->op;
    char *out = malloc(op->out_size ? op->out_size : 1);
    if (out == NULL) return NULL;
    memset(out, 0xA5, op->out_size ? op->out_size : 1);
    for (size_t i = 0; i < op->nfields; i++) { /* no pointer is left dangling */
        const kvq_field *f = &op->fields[i];
        if (f->role == KVQ_ROLE_OUTPUT && kvq_ftype_elem_size(f->type)) *(void **)at(out, f) = NULL;
    }
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        size_t es = kvq_ftype_elem_size(f->type);
        uint64_t n;
        void *a;
        if (f->role != KVQ_ROLE_OUTPUT || es == 0) continue;
        n = kvq_count(c, f, out);
        a = malloc((size_t)(n ? n : 1) * es);
        if (a == NULL) {
            kvq_out_free(op, out);
            return NULL;
        }
        memset(a, 0xA5, (size_t)(n ? n : 1) * es);
        *(void **)at(out, f) = a;
    }
    return out;
}

kvq_status kvq_res_decode(void **outp, uint32_t *flags, const kvq_rcase *r, const kvq_case *c,
                          const char *path, char *err, size_t errlen)
{
    const kvq_op *op = c->op;
    char *out;
    kvq_status st = KVQ_OK;
    *outp = NULL;
    *flags = 0;
    if (r->status != KVQ_OK || r->skipped != NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "result has no outputs");
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        int found = 0;
        if (f->role != KVQ_ROLE_OUTPUT) continue;
        for (size_t k = 0; k < r->nfields && !found; k++) found = strcmp(r->fields[k].key, f->key) == 0;
        if (!found) return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "missing key '%s' (status 0)", f->key);
    }
    for (size_t k = 0; k < r->nfields; k++)
        if (field_of(op, r->fields[k].key, 1) == NULL)
            return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "key '%s' is not an output of %s",
                        r->fields[k].key, op->name);
    out = calloc(1, op->out_size ? op->out_size : 1);
    if (out == NULL) return fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
    /* scalars first, then arrays in schema order: a count may depend on an
     * earlier field, whatever the line's order */
    for (int pass = 0; pass < 2 && st == KVQ_OK; pass++)
        for (size_t i = 0; i < op->nfields && st == KVQ_OK; i++) {
            const kvq_field *f = &op->fields[i];
            const char *text = NULL;
            if (f->role != KVQ_ROLE_OUTPUT || is_array(f) != pass) continue;
            for (size_t k = 0; k < r->nfields && text == NULL; k++)
                if (strcmp(r->fields[k].key, f->key) == 0) text = r->fields[k].value;
            if (pass == 0) {
                st = parse_scalar((kvq_case *)c, f, out, flags, text, path, r->line, err, errlen);
            } else {
                uint64_t n = 0;
                size_t es = kvq_ftype_elem_size(f->type);
                char msg[320];
                if (!kvq_field_count(c, f, out, &n, msg, sizeof msg)) {
                    st = fail(err, errlen, KVQ_E_FORMAT, path, r->line, "%s", msg);
                    break;
                }
                if (n > MAX_FILE_ELEMS) {
                    st = fail(err, errlen, KVQ_E_FORMAT, path, r->line, "%s: more than %llu values", f->key,
                              (unsigned long long)MAX_FILE_ELEMS);
                    break;
                }
                if (es && (*(void **)at(out, f) = malloc((size_t)(n ? n : 1) * es)) == NULL) {
                    st = fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
                    break;
                }
                st = parse_array(c, f, out, text, path, r->line, err, errlen);
            }
        }
    if (st != KVQ_OK) {
        kvq_out_free(op, out);
        return st;
    }
    *outp = out;
    return KVQ_OK;
}
