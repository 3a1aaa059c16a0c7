/*
 * vecio.c -- reading and writing vector and results files (spec/vectors.md).
 *
 * The reader is strict: every key exactly once, no unknown keys, every hex
 * field of exactly the length its shape implies.  Each error names the file,
 * the line, and what is wrong [VEC-FMT-01..].
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "lexio.h"
#include "vecio.h"

#define MAX_FILE_ELEMS ((uint64_t)1 << 24) /* values per case accepted from a file */

/* ---- small helpers (the shared ones: lexio.h) --------------------------- */

static int parse_hex32_field(const char *s, uint32_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || strlen(s) != 10) return 0;
    return hexn(s + 2, 8, out);
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

const char *kvq_level_name(uint32_t level)
{
    return level == KVQ_LEVEL_EXACT ? "exact" : level == KVQ_LEVEL_BOUNDED ? "bounded" : "?";
}

const char *kvq_grouping_name(uint32_t grouping)
{
    return grouping == KVQ_GROUP_CHANNEL ? "channel" : grouping == KVQ_GROUP_TOKEN ? "token" : "?";
}

const char *kvq_meta_name(uint32_t meta)
{
    return meta == KVQ_META_F32 ? "f32" : meta == KVQ_META_F16 ? "f16" : "?";
}

const char *kvq_op_name(uint32_t op)
{
    static const char *const OPS[] = { "kivi-quant", "cert-keys", "cert-values", "cert-step" };
    return op < 4u ? OPS[op] : "?";
}

static const char *const LEVELS[] = { "exact", "bounded" };
static const char *const GROUPINGS[] = { "channel", "token" };
static const char *const METAS[] = { "f32", "f16" };
static const char *const TIES[] = { "even", "away" };
static const char *const OVERFLOWS[] = { "saturate", "nan" };
static const char *const SUBNORMALS[] = { "keep", "daz" };

/* ---- hex arrays ------------------------------------------------------------ */

static kvq_status hex_bytes(uint8_t *out, uint64_t n, const char *s, const char *key,
                            const char *path, long line, char *err, size_t errlen)
{
    if (strlen(s) != 2 * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu", key, strlen(s),
                    (unsigned long long)(2 * n));
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v;
        if (!hexn(s + 2 * i, 2, &v))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit near byte %llu",
                        key, (unsigned long long)i);
        out[i] = (uint8_t)v;
    }
    return KVQ_OK;
}

/* n floats: 8 hex digits (binary32) each, or 4 (binary16) when half is set. */
static kvq_status hex_floats(float *out, uint64_t n, int half, const char *s, const char *key,
                             const char *path, long line, char *err, size_t errlen)
{
    int w = half ? 4 : 8;
    if (strlen(s) != (size_t)w * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu (%llu values of %d digits)", key,
                    strlen(s), (unsigned long long)(w * n), (unsigned long long)n, w);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v;
        if (!hexn(s + (size_t)w * i, w, &v))
            return fail(err, errlen, KVQ_E_FORMAT, path, line,
                        "%s: bad hex digit in value %llu", key, (unsigned long long)i);
        out[i] = half ? kvq_f16_from_bits((uint16_t)v) : kvq_f32_from_bits(v);
    }
    return KVQ_OK;
}

static int put_hex_bytes(FILE *f, const uint8_t *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (fprintf(f, "%02x", b[i]) < 0) return 0;
    return 1;
}

/* Every value has an encoding in the field's format. */
static int all_encodable(const float *v, uint64_t n, int half)
{
    for (uint64_t i = 0; half && i < n; i++) {
        int ok;
        (void)kvq_f16_bits(v[i], &ok);
        if (!ok) return 0;
    }
    return 1;
}

static int put_hex_floats(FILE *f, const float *v, uint64_t n, int half)
{
    for (uint64_t i = 0; i < n; i++) {
        if (half) {
            int ok;
            uint16_t h = kvq_f16_bits(v[i], &ok);
            if (!ok) return 0;
            if (fprintf(f, "%04x", h) < 0) return 0;
        } else if (fprintf(f, "%08lx", (unsigned long)kvq_f32_bits(v[i])) < 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- cases ------------------------------------------------------------------ */

void kvq_vcase_free(kvq_vcase *c)
{
    free(c->x);
    free(c->codes);
    free(c->scale);
    free(c->zero);
    free(c->deq);
    free(c->real);
    free(c->amb_idx);
    free(c->amb_alt);
    free(c->vin);
    free(c->q);
    free(c->eta);
    free(c->nu);
    c->x = c->scale = c->zero = c->deq = c->vin = c->q = c->eta = c->nu = NULL;
    c->codes = c->real = c->amb_alt = NULL;
    c->amb_idx = NULL;
}

uint64_t kvq_vcase_cert_code_bytes(const kvq_vcase *c)
{
    return c->op == KVQ_OP_CERT_KEYS ? kvq_cert_key_code_bytes(&c->cshape)
         : c->op == KVQ_OP_CERT_VALUES ? kvq_cert_value_code_bytes(&c->cshape) : 0u;
}

uint64_t kvq_vcase_cert_meta_count(const kvq_vcase *c)
{
    return c->op == KVQ_OP_CERT_KEYS ? kvq_cert_key_meta_count(&c->cshape)
         : c->op == KVQ_OP_CERT_VALUES ? kvq_cert_value_groups(&c->cshape) : 0u;
}

/* CERT case arrays: inputs for any shape (n*d values), outputs only for a
 * status-0 case (whose shape is valid). */
static kvq_status cert_alloc(kvq_vcase *c)
{
    uint64_t n = (uint64_t)c->cshape.tokens * c->cshape.dim;
    c->x = malloc((n ? n : 1) * sizeof *c->x);
    if (c->x == NULL) return KVQ_E_NOMEM;
    if (c->op == KVQ_OP_CERT_STEP) {
        c->vin = malloc((n ? n : 1) * sizeof *c->vin);
        c->q = malloc((c->cshape.dim ? c->cshape.dim : 1) * sizeof *c->q);
        if (!c->vin || !c->q) {
            kvq_vcase_free(c);
            return KVQ_E_NOMEM;
        }
    } else if (c->status == KVQ_OK) {
        uint64_t nb = kvq_vcase_cert_code_bytes(c), nm = kvq_vcase_cert_meta_count(c);
        uint32_t nbl = kvq_cert_blocks(&c->cshape);
        c->codes = malloc(nb ? nb : 1);
        c->real = malloc(nb ? nb : 1);
        c->scale = malloc((nm ? nm : 1) * sizeof *c->scale);
        c->zero = malloc((nm ? nm : 1) * sizeof *c->zero);
        if (!c->codes || !c->real || !c->scale || !c->zero) {
            kvq_vcase_free(c);
            return KVQ_E_NOMEM;
        }
        if (c->op == KVQ_OP_CERT_VALUES) {
            c->eta = malloc(nbl * sizeof *c->eta);
            c->nu = malloc(nbl * sizeof *c->nu);
            if (!c->eta || !c->nu) {
                kvq_vcase_free(c);
                return KVQ_E_NOMEM;
            }
        }
    }
    return KVQ_OK;
}

kvq_status kvq_vcase_alloc(kvq_vcase *c)
{
    uint64_t n = kvq_kivi_elems(&c->shape);
    if (c->op != KVQ_OP_KIVI_QUANT) return cert_alloc(c);
    c->x = malloc((n ? n : 1) * sizeof *c->x);
    if (c->x == NULL) return KVQ_E_NOMEM;
    if (c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(&c->shape), nb = kvq_kivi_code_bytes(&c->shape);
        c->codes = malloc(nb);
        c->real = malloc(nb);
        c->scale = malloc(ng * sizeof *c->scale);
        c->zero = malloc(ng * sizeof *c->zero);
        c->deq = malloc(n * sizeof *c->deq);
        if (!c->codes || !c->real || !c->scale || !c->zero || !c->deq) {
            kvq_vcase_free(c);
            return KVQ_E_NOMEM;
        }
    }
    return KVQ_OK;
}

void kvq_vfile_free(kvq_vfile *vf)
{
    for (size_t i = 0; i < vf->ncases; i++) kvq_vcase_free(&vf->cases[i]);
    free(vf->cases);
    vf->cases = NULL;
    vf->ncases = 0;
}

enum {
    K_ID, K_LEVEL, K_OP, K_BITS, K_GROUP, K_GROUPING, K_META, K_TOKENS, K_CHANNELS, K_TIES,
    K_OVERFLOW, K_SUBNORMAL, K_STATUS, K_FLAGS, K_X, K_CODES, K_SCALE, K_ZERO, K_DEQ, K_REAL,
    K_AMB, K_COUNT
};
static const char *const CASE_KEYS[K_COUNT] = {
    "id", "level", "op", "bits", "group", "grouping", "meta", "tokens", "channels", "ties",
    "overflow", "subnormal", "status", "flags", "x", "codes", "scale", "zero", "deq", "real",
    "amb",
};
#define K_FIRST_OUTPUT K_CODES

/* amb=: `-` or index:alt entries, index < n strictly increasing, alt a
 * decimal in [lo, hi] (a leading '-' allowed when lo < 0); alt is stored as
 * its low 8 bits (the int8 bit pattern of a CERT key code). */
static kvq_status parse_amb_range(kvq_vcase *c, const char *s, uint64_t n, int lo, int hi,
                                  const char *path, char *err, size_t errlen)
{
    uint64_t cnt = 0, prev = 0;
    const char *p;
    if (strcmp(s, "-") == 0) return KVQ_OK;
    for (p = s; *p; p++) if (*p == ',') cnt++;
    cnt++;
    if (cnt > n) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: more entries than elements");
    c->amb_idx = malloc(cnt * sizeof *c->amb_idx);
    c->amb_alt = malloc(cnt);
    if (!c->amb_idx || !c->amb_alt) return fail(err, errlen, KVQ_E_NOMEM, path, c->line, "out of memory");
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
            return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: bad entry %llu", (unsigned long long)k);
        memcpy(item, p, len);
        item[len] = '\0';
        colon = strchr(item, ':');
        if (colon == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: entry '%s' is not index:alt", item);
        *colon = '\0';
        neg = colon[1] == '-' && lo < 0;
        if (!parse_u64(item, &idx) || !parse_u32(colon + 1 + neg, &alt))
            return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: entry %llu is not decimal index:alt", (unsigned long long)k);
        if (idx >= n) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: index %llu out of range", (unsigned long long)idx);
        if (k > 0 && idx <= prev) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: indices not strictly increasing at %llu", (unsigned long long)idx);
        av = neg ? -(long)alt : (long)alt;
        if (av > hi) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: alternative code %ld exceeds %d", av, hi);
        if (av < lo) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: alternative code %ld below %d", av, lo);
        c->amb_idx[k] = idx;
        c->amb_alt[k] = (uint8_t)(av & 0xff);
        prev = idx;
        p = end ? end + 1 : p + len;
    }
    c->namb = cnt;
    return KVQ_OK;
}

static kvq_status parse_amb(kvq_vcase *c, const char *s, const char *path, char *err,
                            size_t errlen)
{
    return parse_amb_range(c, s, kvq_kivi_elems(&c->shape), 0, (int)kvq_code_max(c->shape.bits),
                           path, err, errlen);
}

/* ---- CERT cases [VEC-CERT-02..04] -------------------------------------------- */

enum {
    C_ID, C_LEVEL, C_OP, C_TOKENS, C_DIM, C_TIES, C_OVERFLOW, C_SUBNORMAL, C_STATUS, C_FLAGS,
    C_K, C_V, C_Q, C_SCALE_IN, C_TAU, C_KMIN, C_KMAX, C_VTOL, C_EPS_GUARD, C_EPS_DENSE, C_R,
    C_PROMOTE, C_START, C_CODES, C_SIGMA, C_Z, C_SCALE, C_ZERO, C_REAL, C_AMB, C_ETA, C_NU,
    C_COUNT
};
static const char *const CERT_KEYS[C_COUNT] = {
    "id", "level", "op", "tokens", "dim", "ties", "overflow", "subnormal", "status", "flags",
    "k", "v", "q", "scale", "tau", "kmin", "kmax", "vtol", "eps_guard", "eps_dense", "r",
    "promote", "start", "codes", "sigma", "z", "vscale", "vzero", "real", "amb", "eta", "nu",
};
/* Per key and op (keys, values, step): 'R' required, 'O' an expected output
 * (required exactly when status is 0), '-' not allowed. */
static const char CERT_USE[C_COUNT][4] = {
    "RRR", "RRR", "RRR", "RRR", "RRR", "RRR", "RRR", "RRR", "RRR", "RR-",
    "R-R", "-RR", "--R", "--R", "--R", "--R", "--R", "--R", "--R", "--R", "--R",
    "--R", "--R", "OO-", "O--", "O--", "-O-", "-O-", "OO-", "OO-", "-O-", "-O-",
};

static int parse_f32_hex(const char *s, float *out)
{
    uint32_t u;
    if (strlen(s) != 8 || !hexn(s, 8, &u)) return 0;
    *out = kvq_f32_from_bits(u);
    return 1;
}

static kvq_status parse_cert_case(kvq_vcase *c, char **tok, int ntok, uint32_t op,
                                  const char *path, long line, char *err, size_t errlen)
{
    const char *val[C_COUNT] = { 0 };
    int k, oi = (int)op - (int)KVQ_OP_CERT_KEYS;
    uint32_t u;
    uint64_t n;
    kvq_status st = KVQ_OK;
    memset(c, 0, sizeof *c);
    c->line = line;
    c->op = op;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        k = name_index(tok[i], CERT_KEYS, C_COUNT);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "unknown key '%.40s'", tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        val[k] = eq + 1;
    }
    for (k = 0; k < C_COUNT; k++) {
        if (CERT_USE[k][oi] == 'R' && val[k] == NULL)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s'", CERT_KEYS[k]);
        if (CERT_USE[k][oi] == '-' && val[k] != NULL)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' is not a field of %s", CERT_KEYS[k], kvq_op_name(op));
    }
    if (!id_ok(val[C_ID])) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", val[C_ID]);
    strcpy(c->id, val[C_ID]);
#define ENUM_FIELD(K, NAMES, DST)                                                             \
    do {                                                                                      \
        int ix_ = name_index(val[K], NAMES, (int)(sizeof NAMES / sizeof NAMES[0]));           \
        if (ix_ < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: unknown value '%.40s'", CERT_KEYS[K], val[K]); \
        DST = (uint32_t)ix_;                                                                  \
    } while (0)
    ENUM_FIELD(C_LEVEL, LEVELS, c->level);
    ENUM_FIELD(C_TIES, TIES, c->pol.ties);
    ENUM_FIELD(C_OVERFLOW, OVERFLOWS, c->pol.overflow);
    ENUM_FIELD(C_SUBNORMAL, SUBNORMALS, c->pol.subnormal);
#undef ENUM_FIELD
    if (op == KVQ_OP_CERT_STEP && c->level != KVQ_LEVEL_BOUNDED)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "level: a cert-step case is judged at the bounded level only");
    if (!parse_u32(val[C_TOKENS], &c->cshape.tokens) || !parse_u32(val[C_DIM], &c->cshape.dim))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "tokens and dim must be decimal numbers");
    if (!parse_u32(val[C_STATUS], &u) || u >= KVQ_STATUS_COUNT)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a kvq_status", val[C_STATUS]);
    c->status = (int)u;
    if (val[C_FLAGS] != NULL && (!parse_hex32_field(val[C_FLAGS], &c->flags) || (c->flags & ~KVQ_FLAG_ALL)))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits of defined flags", val[C_FLAGS]);
    n = (uint64_t)c->cshape.tokens * c->cshape.dim;
    /* bounds on what a file may carry, so that no per-block or per-channel
     * array of a case (nb flags, d outputs) can be large [VEC-CERT-02] */
    if (n > MAX_FILE_ELEMS || c->cshape.tokens > KVQ_CERT_MAX_TOKENS || c->cshape.dim > 65536u)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "tokens*dim exceeds %llu, tokens exceed %u or dim exceeds 65536",
                    (unsigned long long)MAX_FILE_ELEMS, KVQ_CERT_MAX_TOKENS);
    if (op == KVQ_OP_CERT_STEP) {
        kvq_cert_params *p = &c->prm;
        *p = kvq_cert_default_params();
        if (!parse_f32_hex(val[C_SCALE_IN], &c->qscale) || !parse_f32_hex(val[C_TAU], &p->tau) ||
            !parse_f32_hex(val[C_VTOL], &p->vtol) || !parse_f32_hex(val[C_EPS_GUARD], &p->eps_guard) ||
            !parse_f32_hex(val[C_EPS_DENSE], &p->eps_dense))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "scale, tau, vtol, eps_guard and eps_dense must be 8 hex digits (binary32)");
        if (!parse_u32(val[C_KMIN], &p->kmin) || !parse_u32(val[C_KMAX], &p->kmax) ||
            !parse_u32(val[C_R], &p->r) || !parse_u32(val[C_START], &p->start_rung))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "kmin, kmax, r and start must be decimal numbers");
        if (strcmp(val[C_PROMOTE], "threshold") == 0)
            p->promote_budget = KVQ_CERT_PROMOTE_THRESHOLD;
        else if (strncmp(val[C_PROMOTE], "budget:", 7) != 0 || !parse_u32(val[C_PROMOTE] + 7, &p->promote_budget) ||
                 p->promote_budget == KVQ_CERT_PROMOTE_THRESHOLD)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "promote: '%.40s' is neither 'threshold' nor 'budget:<decimal>'", val[C_PROMOTE]);
    }
    if (c->status == KVQ_OK) {
        if (!kvq_cert_shape_ok(&c->cshape))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "shape is not valid for a status-0 case [CERT-L-01]");
        for (k = 0; k < C_COUNT; k++)
            if (CERT_USE[k][oi] == 'O' && val[k] == NULL)
                return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", CERT_KEYS[k]);
    } else {
        for (k = 0; k < C_COUNT; k++)
            if (CERT_USE[k][oi] == 'O' && val[k] != NULL)
                return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given for a case that expects an error", CERT_KEYS[k]);
    }
    if (cert_alloc(c) != KVQ_OK) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
    if (op == KVQ_OP_CERT_VALUES)
        st = hex_floats(c->x, n, 0, val[C_V], "v", path, line, err, errlen);
    else
        st = hex_floats(c->x, n, 0, val[C_K], "k", path, line, err, errlen);
    if (st == KVQ_OK && op == KVQ_OP_CERT_STEP) {
        st = hex_floats(c->vin, n, 0, val[C_V], "v", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->q, c->cshape.dim, 0, val[C_Q], "q", path, line, err, errlen);
    }
    if (st == KVQ_OK && c->status == KVQ_OK && op != KVQ_OP_CERT_STEP) {
        uint64_t nb = kvq_vcase_cert_code_bytes(c), nm = kvq_vcase_cert_meta_count(c);
        int keys = op == KVQ_OP_CERT_KEYS;
        st = hex_bytes(c->codes, nb, val[C_CODES], "codes", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_bytes(c->real, nb, val[C_REAL], "real", path, line, err, errlen);
        if (st == KVQ_OK)
            st = hex_floats(c->scale, nm, !keys, val[keys ? C_SIGMA : C_SCALE], keys ? "sigma" : "vscale", path, line, err, errlen);
        if (st == KVQ_OK)
            st = hex_floats(c->zero, nm, !keys, val[keys ? C_Z : C_ZERO], keys ? "z" : "vzero", path, line, err, errlen);
        if (st == KVQ_OK)
            st = keys ? parse_amb_range(c, val[C_AMB], nb, KVQ_CERT_KCODE_MIN, KVQ_CERT_KCODE_MAX, path, err, errlen)
                      : parse_amb_range(c, val[C_AMB], (uint64_t)kvq_cert_quant_tokens(&c->cshape) * c->cshape.dim,
                                        0, (int)kvq_code_max(KVQ_CERT_VBITS), path, err, errlen);
        if (st == KVQ_OK && !keys) {
            uint32_t nbl = kvq_cert_blocks(&c->cshape);
            st = hex_floats(c->eta, nbl, 0, val[C_ETA], "eta", path, line, err, errlen);
            if (st == KVQ_OK) st = hex_floats(c->nu, nbl, 0, val[C_NU], "nu", path, line, err, errlen);
        }
    }
    if (st != KVQ_OK) kvq_vcase_free(c);
    return st;
}

static kvq_status parse_case(kvq_vcase *c, char **tok, int ntok, const char *path, long line,
                             char *err, size_t errlen)
{
    const char *val[K_COUNT] = { 0 };
    int k;
    uint32_t u;
    uint64_t n;
    kvq_status st;
    static const char *const CERT_OPS[3] = { "cert-keys", "cert-values", "cert-step" };
    for (int i = 1; i < ntok; i++) /* the operation decides the field set [VEC-CERT-02] */
        if (strncmp(tok[i], "op=", 3) == 0) {
            int oi = name_index(tok[i] + 3, CERT_OPS, 3);
            if (oi >= 0) return parse_cert_case(c, tok, ntok, KVQ_OP_CERT_KEYS + (uint32_t)oi, path, line, err, errlen);
            break;
        }
    memset(c, 0, sizeof *c);
    c->line = line;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        k = name_index(tok[i], CASE_KEYS, K_COUNT);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "unknown key '%.40s'", tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        val[k] = eq + 1;
    }
    for (k = 0; k < K_FIRST_OUTPUT; k++)
        if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s'", CASE_KEYS[k]);
    if (!id_ok(val[K_ID])) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", val[K_ID]);
    strcpy(c->id, val[K_ID]);
#define ENUM_FIELD(K, NAMES, DST)                                                             \
    do {                                                                                      \
        int ix_ = name_index(val[K], NAMES, (int)(sizeof NAMES / sizeof NAMES[0]));           \
        if (ix_ < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: unknown value '%.40s'", CASE_KEYS[K], val[K]); \
        DST = (uint32_t)ix_;                                                                  \
    } while (0)
    ENUM_FIELD(K_LEVEL, LEVELS, c->level);
    if (strcmp(val[K_OP], "kivi-quant") != 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "op: unknown operation '%.40s'", val[K_OP]);
    c->op = KVQ_OP_KIVI_QUANT;
    ENUM_FIELD(K_GROUPING, GROUPINGS, c->shape.grouping);
    ENUM_FIELD(K_META, METAS, c->shape.meta);
    ENUM_FIELD(K_TIES, TIES, c->pol.ties);
    ENUM_FIELD(K_OVERFLOW, OVERFLOWS, c->pol.overflow);
    ENUM_FIELD(K_SUBNORMAL, SUBNORMALS, c->pol.subnormal);
#undef ENUM_FIELD
    if (!parse_u32(val[K_BITS], &c->shape.bits) || !parse_u32(val[K_GROUP], &c->shape.group) ||
        !parse_u32(val[K_TOKENS], &c->shape.tokens) || !parse_u32(val[K_CHANNELS], &c->shape.channels))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "bits, group, tokens and channels must be decimal numbers");
    if (!parse_u32(val[K_STATUS], &u) || u >= KVQ_STATUS_COUNT)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a kvq_status", val[K_STATUS]);
    c->status = (int)u;
    if (!parse_hex32_field(val[K_FLAGS], &c->flags) || (c->flags & ~KVQ_FLAG_ALL))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits of defined flags", val[K_FLAGS]);
    n = kvq_kivi_elems(&c->shape);
    if (n > MAX_FILE_ELEMS) return fail(err, errlen, KVQ_E_FORMAT, path, line, "tokens*channels exceeds %llu", (unsigned long long)MAX_FILE_ELEMS);
    if (c->status == KVQ_OK) {
        if (!kvq_kivi_params_ok(&c->shape) || !kvq_kivi_shape_ok(&c->shape))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "shape is not valid for a status-0 case");
        for (k = K_FIRST_OUTPUT; k < K_COUNT; k++)
            if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", CASE_KEYS[k]);
    } else {
        for (k = K_FIRST_OUTPUT; k < K_COUNT; k++)
            if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given for a case that expects an error", CASE_KEYS[k]);
    }
    if (kvq_vcase_alloc(c) != KVQ_OK) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
    st = hex_floats(c->x, n, 0, val[K_X], "x", path, line, err, errlen);
    if (st == KVQ_OK && c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(&c->shape), nb = kvq_kivi_code_bytes(&c->shape);
        int half = c->shape.meta == KVQ_META_F16;
        st = hex_bytes(c->codes, nb, val[K_CODES], "codes", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->scale, ng, half, val[K_SCALE], "scale", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->zero, ng, half, val[K_ZERO], "zero", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->deq, n, 0, val[K_DEQ], "deq", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_bytes(c->real, nb, val[K_REAL], "real", path, line, err, errlen);
        if (st == KVQ_OK) st = parse_amb(c, val[K_AMB], path, err, errlen);
    }
    if (st != KVQ_OK) kvq_vcase_free(c);
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

kvq_status kvq_vec_parse(kvq_vfile *vf, const char *buf, size_t len, const char *path,
                         char *err, size_t errlen)
{
    lines L;
    char tmp[64], *s;
    size_t cap = 0;
    kvq_status st;
    memset(vf, 0, sizeof *vf);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = magic_line(&L, KVQ_VEC_MAGIC, &vf->version, path, err, errlen);
    if (st == KVQ_OK) st = header_line(&L, "family", vf->family, sizeof vf->family, path, err, errlen);
    if (st == KVQ_OK) {
        if (strcmp(vf->family, "kivi") == 0) vf->fam = KVQ_FAMILY_KIVI;
        else if (strcmp(vf->family, "cert") == 0) vf->fam = KVQ_FAMILY_CERT;
        else st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "unknown family '%s' (kivi|cert)", vf->family);
    }
    if (st == KVQ_OK) st = header_line(&L, "levels", vf->levels, sizeof vf->levels, path, err, errlen);
    if (st == KVQ_OK && strcmp(vf->levels, "smoke") != 0 && strcmp(vf->levels, "standard") != 0)
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
        int ntok;
        size_t maxtok = strlen(s) / 2 + 2;
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
            kvq_vcase *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(vf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                free(tok);
                break;
            }
            vf->cases = nc;
        }
        st = parse_case(&vf->cases[vf->ncases], tok, ntok, path, L.no, err, errlen);
        free(tok);
        if (st != KVQ_OK) break;
        if ((vf->cases[vf->ncases].op == KVQ_OP_KIVI_QUANT) != (vf->fam == KVQ_FAMILY_KIVI)) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "op %s is not an operation of family %s",
                      kvq_op_name(vf->cases[vf->ncases].op), vf->family);
            kvq_vcase_free(&vf->cases[vf->ncases]);
            break;
        }
        for (size_t i = 0; i < vf->ncases; i++)
            if (strcmp(vf->cases[i].id, vf->cases[vf->ncases].id) == 0) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "case id '%s' repeats line %ld", vf->cases[i].id, vf->cases[i].line);
                kvq_vcase_free(&vf->cases[vf->ncases]);
                break;
            }
        if (st == KVQ_OK) vf->ncases++;
    }
    if (st == KVQ_OK && vf->ncases == 0)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "no cases");
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

kvq_status kvq_vec_write_header(FILE *f, const kvq_vfile *vf)
{
    if (fprintf(f, "%s %u\nfamily %s\nlevels %s\nseed 0x%016llx\ngenerator %s\n", KVQ_VEC_MAGIC,
                KVQ_VEC_VERSION, vf->family, vf->levels, (unsigned long long)vf->seed,
                vf->generator) < 0)
        return KVQ_E_IO;
    return KVQ_OK;
}

static int put_amb(FILE *f, const kvq_vcase *c, int is_signed)
{
    int ok = fputs(" amb=", f) >= 0;
    if (ok && c->namb == 0) ok = fputs("-", f) >= 0;
    for (uint64_t k = 0; ok && k < c->namb; k++)
        ok = fprintf(f, "%s%llu:%d", k ? "," : "", (unsigned long long)c->amb_idx[k],
                     is_signed ? (int)(int8_t)c->amb_alt[k] : (int)c->amb_alt[k]) >= 0;
    return ok;
}

static kvq_status write_cert_case(FILE *f, const kvq_vcase *c)
{
    const kvq_cert_shape *s = &c->cshape;
    uint64_t n = (uint64_t)s->tokens * s->dim;
    int ok = fprintf(f, "case id=%s level=%s op=%s tokens=%u dim=%u ties=%s overflow=%s "
                     "subnormal=%s status=%d", c->id, kvq_level_name(c->level), kvq_op_name(c->op),
                     s->tokens, s->dim, TIES[c->pol.ties & 1u], OVERFLOWS[c->pol.overflow & 1u],
                     SUBNORMALS[c->pol.subnormal & 1u], c->status) >= 0;
    if (c->op == KVQ_OP_CERT_STEP) {
        const kvq_cert_params *p = &c->prm;
        ok = ok && fprintf(f, " scale=%08lx tau=%08lx kmin=%u kmax=%u vtol=%08lx eps_guard=%08lx "
                           "eps_dense=%08lx r=%u start=%u promote=",
                           (unsigned long)kvq_f32_bits(c->qscale), (unsigned long)kvq_f32_bits(p->tau),
                           p->kmin, p->kmax, (unsigned long)kvq_f32_bits(p->vtol),
                           (unsigned long)kvq_f32_bits(p->eps_guard),
                           (unsigned long)kvq_f32_bits(p->eps_dense), p->r, p->start_rung) >= 0;
        if (ok) ok = p->promote_budget == KVQ_CERT_PROMOTE_THRESHOLD ? fputs("threshold", f) >= 0
                                                                     : fprintf(f, "budget:%u", p->promote_budget) >= 0;
        ok = ok && fputs(" q=", f) >= 0 && put_hex_floats(f, c->q, s->dim, 0) &&
             fputs(" k=", f) >= 0 && put_hex_floats(f, c->x, n, 0) &&
             fputs(" v=", f) >= 0 && put_hex_floats(f, c->vin, n, 0);
    } else {
        int keys = c->op == KVQ_OP_CERT_KEYS;
        ok = ok && fprintf(f, " flags=0x%08lx %s=", (unsigned long)c->flags, keys ? "k" : "v") >= 0 &&
             put_hex_floats(f, c->x, n, 0);
        if (ok && c->status == KVQ_OK) {
            uint64_t nb = kvq_vcase_cert_code_bytes(c), nm = kvq_vcase_cert_meta_count(c);
            uint32_t nbl = kvq_cert_blocks(s);
            ok = fputs(" codes=", f) >= 0 && put_hex_bytes(f, c->codes, nb) &&
                 fputs(keys ? " sigma=" : " vscale=", f) >= 0 && put_hex_floats(f, c->scale, nm, !keys) &&
                 fputs(keys ? " z=" : " vzero=", f) >= 0 && put_hex_floats(f, c->zero, nm, !keys) &&
                 fputs(" real=", f) >= 0 && put_hex_bytes(f, c->real, nb) && put_amb(f, c, keys);
            if (ok && !keys)
                ok = fputs(" eta=", f) >= 0 && put_hex_floats(f, c->eta, nbl, 0) &&
                     fputs(" nu=", f) >= 0 && put_hex_floats(f, c->nu, nbl, 0);
        }
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

kvq_status kvq_vec_write_case(FILE *f, const kvq_vcase *c)
{
    const kvq_kivi_shape *s = &c->shape;
    if (c->op != KVQ_OP_KIVI_QUANT) return write_cert_case(f, c);
    uint64_t n = kvq_kivi_elems(s);
    int half = s->meta == KVQ_META_F16;
    int ok = fprintf(f,
                     "case id=%s level=%s op=kivi-quant bits=%u group=%u grouping=%s meta=%s "
                     "tokens=%u channels=%u ties=%s overflow=%s subnormal=%s status=%d "
                     "flags=0x%08lx x=",
                     c->id, kvq_level_name(c->level), s->bits, s->group,
                     kvq_grouping_name(s->grouping), kvq_meta_name(s->meta), s->tokens,
                     s->channels, TIES[c->pol.ties & 1u], OVERFLOWS[c->pol.overflow & 1u],
                     SUBNORMALS[c->pol.subnormal & 1u], c->status, (unsigned long)c->flags) >= 0;
    ok = ok && put_hex_floats(f, c->x, n, 0);
    if (ok && c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(s), nb = kvq_kivi_code_bytes(s);
        ok = fputs(" codes=", f) >= 0 && put_hex_bytes(f, c->codes, nb) &&
             fputs(" scale=", f) >= 0 && put_hex_floats(f, c->scale, ng, half) &&
             fputs(" zero=", f) >= 0 && put_hex_floats(f, c->zero, ng, half) &&
             fputs(" deq=", f) >= 0 && put_hex_floats(f, c->deq, n, 0) &&
             fputs(" real=", f) >= 0 && put_hex_bytes(f, c->real, nb) &&
             fputs(" amb=", f) >= 0;
        if (ok && c->namb == 0) ok = fputs("-", f) >= 0;
        for (uint64_t k = 0; ok && k < c->namb; k++)
            ok = fprintf(f, "%s%llu:%u", k ? "," : "", (unsigned long long)c->amb_idx[k],
                         (unsigned)c->amb_alt[k]) >= 0;
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

/* ---- results ------------------------------------------------------------------ */

void kvq_rcase_free(kvq_rcase *r)
{
    char **f[] = { &r->codes, &r->scale, &r->zero, &r->deq, &r->sigma, &r->z, &r->eta, &r->nu,
                   &r->out, &r->sel, &r->prom, &r->rec, &r->decl, &r->delta1, &r->skipped };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        free(*f[i]);
        *f[i] = NULL;
    }
}

void kvq_rfile_free(kvq_rfile *rf)
{
    for (size_t i = 0; i < rf->ncases; i++) kvq_rcase_free(&rf->cases[i]);
    free(rf->cases);
    rf->cases = NULL;
    rf->ncases = 0;
}

void kvq_rout_free(kvq_rout *o)
{
    free(o->codes);
    free(o->scale);
    free(o->zero);
    free(o->deq);
    free(o->eta);
    free(o->nu);
    free(o->out);
    free(o->sel);
    free(o->prom);
    o->codes = o->sel = o->prom = NULL;
    o->scale = o->zero = o->deq = o->eta = o->nu = o->out = NULL;
}

enum {
    R_ID, R_STATUS, R_FLAGS, R_CODES, R_SCALE, R_ZERO, R_DEQ, R_SIGMA, R_Z, R_ETA, R_NU, R_OUT,
    R_SEL, R_PROM, R_REC, R_DECL, R_DELTA1, R_SKIPPED, R_COUNT
};
static const char *const RES_KEYS[R_COUNT] = {
    "id", "status", "flags", "codes", "scale", "zero", "deq", "sigma", "z", "eta", "nu", "out",
    "sel", "prom", "rec", "decl", "delta1", "skipped",
};
#define RB(k) (1u << (k))
/* The output fields of a status-0 result, by operation [VEC-RES-02] [VEC-CERT-05]. */
static const uint32_t RES_SETS[4] = {
    RB(R_FLAGS) | RB(R_CODES) | RB(R_SCALE) | RB(R_ZERO) | RB(R_DEQ),              /* kivi-quant */
    RB(R_FLAGS) | RB(R_CODES) | RB(R_SIGMA) | RB(R_Z),                             /* cert-keys */
    RB(R_FLAGS) | RB(R_CODES) | RB(R_SCALE) | RB(R_ZERO) | RB(R_ETA) | RB(R_NU),   /* cert-values */
    RB(R_OUT) | RB(R_SEL) | RB(R_PROM) | RB(R_REC) | RB(R_DECL) | RB(R_DELTA1),    /* cert-step */
};
#define R_OUTPUTS (RB(R_COUNT) - 1u - RB(R_ID) - RB(R_STATUS) - RB(R_SKIPPED))

static kvq_status parse_result(kvq_rcase *r, char **tok, int ntok, const char *path, long line,
                               char *err, size_t errlen)
{
    const char *val[R_COUNT] = { 0 };
    char **dst[R_COUNT] = { 0 };
    uint32_t u, have = 0;
    memset(r, 0, sizeof *r);
    r->line = line;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        int k;
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        k = name_index(tok[i], RES_KEYS, R_COUNT);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "unknown key '%.40s'", tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        val[k] = eq + 1;
        have |= RB(k);
    }
    if (val[R_ID] == NULL || (val[R_STATUS] == NULL) == (val[R_SKIPPED] == NULL))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "a result needs id= and status= (or skipped=, without status=)");
    if (!id_ok(val[R_ID])) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", val[R_ID]);
    strcpy(r->id, val[R_ID]);
    if (val[R_SKIPPED] != NULL) {  /* [VEC-CERT-06] */
        if (have & R_OUTPUTS) return fail(err, errlen, KVQ_E_FORMAT, path, line, "output fields given with skipped=");
        if (val[R_SKIPPED][0] == '\0') return fail(err, errlen, KVQ_E_FORMAT, path, line, "skipped= needs a reason");
        r->status = -1;
        r->skipped = strdup(val[R_SKIPPED]);
        return r->skipped ? KVQ_OK : fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
    }
    if (!parse_u32(val[R_STATUS], &u) || u > 255u)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a decimal status", val[R_STATUS]);
    r->status = (int)u;
    if (r->status == KVQ_OK) {
        uint32_t op;
        for (op = 0; op < 4u && (have & R_OUTPUTS) != RES_SETS[op]; op++) {}
        if (op == 4u) {
            /* name the first missing field of the closest set (KIVI when flags and deq) */
            uint32_t want = RES_SETS[(have & RB(R_OUT)) ? 3 : (have & RB(R_SIGMA)) ? 1 : (have & RB(R_ETA)) ? 2 : 0];
            for (int k = R_FLAGS; k < R_COUNT; k++) {
                if ((want & RB(k)) && val[k] == NULL)
                    return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", RES_KEYS[k]);
                if (!(want & RB(k)) && val[k] != NULL)
                    return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' does not belong with the other outputs", RES_KEYS[k]);
            }
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "output fields match no operation");
        }
        r->op = op;
        if (val[R_FLAGS] != NULL && !parse_hex32_field(val[R_FLAGS], &r->flags))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits", val[R_FLAGS]);
        dst[R_CODES] = &r->codes, dst[R_SCALE] = &r->scale, dst[R_ZERO] = &r->zero;
        dst[R_DEQ] = &r->deq, dst[R_SIGMA] = &r->sigma, dst[R_Z] = &r->z, dst[R_ETA] = &r->eta;
        dst[R_NU] = &r->nu, dst[R_OUT] = &r->out, dst[R_SEL] = &r->sel, dst[R_PROM] = &r->prom;
        dst[R_REC] = &r->rec, dst[R_DECL] = &r->decl, dst[R_DELTA1] = &r->delta1;
        for (int k = R_CODES; k < R_SKIPPED; k++)
            if (val[k] != NULL && (*dst[k] = strdup(val[k])) == NULL) {
                kvq_rcase_free(r);
                return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
            }
    } else if (have & R_OUTPUTS) {
        for (int k = R_FLAGS; k < R_SKIPPED; k++)
            if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given with a nonzero status", RES_KEYS[k]);
    }
    return KVQ_OK;
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
        char *tok[16];
        int ntok;
        if (strncmp(s, "unavailable ", 12) == 0) {
            if (rf->ncases > 0 || rf->unavailable[0]) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "'unavailable' must come alone, before any result");
                break;
            }
            snprintf(rf->unavailable, sizeof rf->unavailable, "%s", s + 12);
            continue;
        }
        ntok = tokenize(s, tok, 16);
        if (ntok < 1 || strcmp(tok[0], "result") != 0) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "expected a 'result' line");
            break;
        }
        if (rf->unavailable[0]) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "a result after 'unavailable'");
            break;
        }
        if (rf->ncases == cap) {
            kvq_rcase *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(rf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                break;
            }
            rf->cases = nc;
        }
        st = parse_result(&rf->cases[rf->ncases], tok, ntok, path, L.no, err, errlen);
        if (st != KVQ_OK) break;
        for (size_t i = 0; i < rf->ncases; i++)
            if (strcmp(rf->cases[i].id, rf->cases[rf->ncases].id) == 0) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "result for '%s' repeats line %ld", rf->cases[i].id, rf->cases[i].line);
                kvq_rcase_free(&rf->cases[rf->ncases]);
                break;
            }
        if (st == KVQ_OK) rf->ncases++;
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

/* n 32-bit words of 8 hex digits each. */
static kvq_status hex_words(uint32_t *out, unsigned n, const char *s, const char *key,
                            const char *path, long line, char *err, size_t errlen)
{
    if (strlen(s) != 8u * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: %zu hex digits, expected %u", key,
                    strlen(s), 8u * n);
    for (unsigned i = 0; i < n; i++)
        if (!hexn(s + 8 * i, 8, &out[i]))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit in word %u", key, i);
    return KVQ_OK;
}

/* The record's 15 fields in frozen order [CERT-REC-01]: 7 integers, 8 binary32. */
#define REC_WORDS 15u
static void rec_to_words(uint32_t *w, const kvq_cert_record *r)
{
    w[0] = r->version, w[1] = r->rung, w[2] = r->n, w[3] = r->d, w[4] = r->k_sel;
    w[5] = r->n_prom, w[6] = r->checks;
    w[7] = kvq_f32_bits(r->delta), w[8] = kvq_f32_bits(r->alpha_hat), w[9] = kvq_f32_bits(r->vmax);
    w[10] = kvq_f32_bits(r->ekey), w[11] = kvq_f32_bits(r->ekey_paper);
    w[12] = kvq_f32_bits(r->eval), w[13] = kvq_f32_bits(r->earith);
    w[14] = kvq_f32_bits(r->etotal);
}

static kvq_status decode_cert(kvq_rout *o, const kvq_rcase *r, const kvq_vcase *c,
                              const char *path, char *err, size_t errlen)
{
    const kvq_cert_shape *sh = &c->cshape;
    uint32_t nbl = kvq_cert_blocks(sh);
    kvq_status st = KVQ_OK;
    if (r->op != c->op)
        return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "result holds the outputs of %s, the case is %s",
                    kvq_op_name(r->op), kvq_op_name(c->op));
    if (c->op == KVQ_OP_CERT_STEP) {
        uint32_t w[REC_WORDS], dw[3], d1 = 0;
        o->out = malloc(sh->dim * sizeof *o->out);
        o->sel = malloc(nbl);
        o->prom = malloc(nbl);
        if (!o->out || !o->sel || !o->prom) {
            kvq_rout_free(o);
            return fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
        }
        st = hex_floats(o->out, sh->dim, 0, r->out, "out", path, r->line, err, errlen);
        if (st == KVQ_OK) st = hex_bytes(o->sel, nbl, r->sel, "sel", path, r->line, err, errlen);
        if (st == KVQ_OK) st = hex_bytes(o->prom, nbl, r->prom, "prom", path, r->line, err, errlen);
        if (st == KVQ_OK) st = hex_words(w, REC_WORDS, r->rec, "rec", path, r->line, err, errlen);
        if (st == KVQ_OK) st = hex_words(dw, 3, r->decl, "decl", path, r->line, err, errlen);
        if (st == KVQ_OK) st = hex_words(&d1, 1, r->delta1, "delta1", path, r->line, err, errlen);
        if (st == KVQ_OK) {
            o->delta1 = kvq_f32_from_bits(d1);
            o->decl.u_exp = kvq_f32_from_bits(dw[0]), o->decl.acc_depth = dw[1], o->decl.rescales = dw[2];
            o->rec.version = w[0], o->rec.rung = w[1], o->rec.n = w[2], o->rec.d = w[3];
            o->rec.k_sel = w[4], o->rec.n_prom = w[5], o->rec.checks = w[6];
            o->rec.delta = kvq_f32_from_bits(w[7]), o->rec.alpha_hat = kvq_f32_from_bits(w[8]);
            o->rec.vmax = kvq_f32_from_bits(w[9]), o->rec.ekey = kvq_f32_from_bits(w[10]);
            o->rec.ekey_paper = kvq_f32_from_bits(w[11]), o->rec.eval = kvq_f32_from_bits(w[12]);
            o->rec.earith = kvq_f32_from_bits(w[13]), o->rec.etotal = kvq_f32_from_bits(w[14]);
        }
    } else {
        uint64_t nb = kvq_vcase_cert_code_bytes(c), nm = kvq_vcase_cert_meta_count(c);
        int keys = c->op == KVQ_OP_CERT_KEYS;
        o->codes = malloc(nb ? nb : 1);
        o->scale = malloc((nm ? nm : 1) * sizeof *o->scale);
        o->zero = malloc((nm ? nm : 1) * sizeof *o->zero);
        if (!keys) o->eta = malloc(nbl * sizeof *o->eta), o->nu = malloc(nbl * sizeof *o->nu);
        if (!o->codes || !o->scale || !o->zero || (!keys && (!o->eta || !o->nu))) {
            kvq_rout_free(o);
            return fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
        }
        st = hex_bytes(o->codes, nb, r->codes, "codes", path, r->line, err, errlen);
        if (st == KVQ_OK)
            st = hex_floats(o->scale, nm, !keys, keys ? r->sigma : r->scale, keys ? "sigma" : "scale", path, r->line, err, errlen);
        if (st == KVQ_OK)
            st = hex_floats(o->zero, nm, !keys, keys ? r->z : r->zero, keys ? "z" : "zero", path, r->line, err, errlen);
        if (st == KVQ_OK && !keys) st = hex_floats(o->eta, nbl, 0, r->eta, "eta", path, r->line, err, errlen);
        if (st == KVQ_OK && !keys) st = hex_floats(o->nu, nbl, 0, r->nu, "nu", path, r->line, err, errlen);
    }
    if (st != KVQ_OK) kvq_rout_free(o);
    return st;
}

kvq_status kvq_res_decode(kvq_rout *o, const kvq_rcase *r, const kvq_vcase *c,
                          const char *path, char *err, size_t errlen)
{
    uint64_t n, ng, nb;
    int half = c->shape.meta == KVQ_META_F16;
    kvq_status st;
    memset(o, 0, sizeof *o);
    if (r->status != KVQ_OK || r->skipped != NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "result has no outputs");
    if (c->op != KVQ_OP_KIVI_QUANT) return decode_cert(o, r, c, path, err, errlen);
    if (r->op != KVQ_OP_KIVI_QUANT)
        return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "result holds the outputs of %s, the case is %s",
                    kvq_op_name(r->op), kvq_op_name(c->op));
    n = kvq_kivi_elems(&c->shape), ng = kvq_kivi_groups(&c->shape), nb = kvq_kivi_code_bytes(&c->shape);
    o->codes = malloc(nb ? nb : 1);
    o->scale = malloc(ng * sizeof *o->scale);
    o->zero = malloc(ng * sizeof *o->zero);
    o->deq = malloc(n * sizeof *o->deq);
    if (!o->codes || !o->scale || !o->zero || !o->deq) {
        kvq_rout_free(o);
        return fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
    }
    st = hex_bytes(o->codes, nb, r->codes, "codes", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->scale, ng, half, r->scale, "scale", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->zero, ng, half, r->zero, "zero", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->deq, n, 0, r->deq, "deq", path, r->line, err, errlen);
    if (st != KVQ_OK) kvq_rout_free(o);
    return st;
}

kvq_status kvq_res_write_header(FILE *f, const char *subject, const char *unavailable)
{
    if (fprintf(f, "%s %u\nsubject %s\n", KVQ_RES_MAGIC, KVQ_VEC_VERSION, subject) < 0)
        return KVQ_E_IO;
    if (unavailable != NULL && fprintf(f, "unavailable %s\n", unavailable) < 0) return KVQ_E_IO;
    return KVQ_OK;
}

kvq_status kvq_res_write_case(FILE *f, const char *id, int status, uint32_t flags,
                              const kvq_rout *o, const kvq_kivi_shape *shape)
{
    int ok = fprintf(f, "result id=%s status=%d", id, status) >= 0;
    if (ok && status == KVQ_OK) {
        uint64_t n = kvq_kivi_elems(shape), ng = kvq_kivi_groups(shape);
        int half = shape->meta == KVQ_META_F16;
        /* Binary16 metadata that is not a binary16 value has no encoding: the
         * field is written as `invalid`, which verify reports as that case's
         * failure. */
        ok = fprintf(f, " flags=0x%08lx codes=", (unsigned long)flags) >= 0 &&
             put_hex_bytes(f, o->codes, kvq_kivi_code_bytes(shape)) &&
             fputs(" scale=", f) >= 0;
        if (ok) ok = all_encodable(o->scale, ng, half) ? put_hex_floats(f, o->scale, ng, half)
                                                       : fputs("invalid", f) >= 0;
        ok = ok && fputs(" zero=", f) >= 0;
        if (ok) ok = all_encodable(o->zero, ng, half) ? put_hex_floats(f, o->zero, ng, half)
                                                      : fputs("invalid", f) >= 0;
        ok = ok && fputs(" deq=", f) >= 0 && put_hex_floats(f, o->deq, n, 0);
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

kvq_status kvq_res_write_skip(FILE *f, const char *id, const char *reason)
{
    return fprintf(f, "result id=%s skipped=%s\n", id, reason) < 0 ? KVQ_E_IO : KVQ_OK;
}

kvq_status kvq_res_write_cert(FILE *f, const kvq_vcase *c, int status, uint32_t flags,
                              const kvq_rout *o)
{
    const kvq_cert_shape *sh = &c->cshape;
    uint32_t nbl = kvq_cert_blocks(sh);
    int ok = fprintf(f, "result id=%s status=%d", c->id, status) >= 0;
    if (ok && status == KVQ_OK && c->op == KVQ_OP_CERT_STEP) {
        uint32_t w[REC_WORDS];
        rec_to_words(w, &o->rec);
        ok = fputs(" out=", f) >= 0 && put_hex_floats(f, o->out, sh->dim, 0) &&
             fputs(" sel=", f) >= 0 && put_hex_bytes(f, o->sel, nbl) &&
             fputs(" prom=", f) >= 0 && put_hex_bytes(f, o->prom, nbl) && fputs(" rec=", f) >= 0;
        for (unsigned i = 0; ok && i < REC_WORDS; i++) ok = fprintf(f, "%08lx", (unsigned long)w[i]) >= 0;
        ok = ok && fprintf(f, " decl=%08lx%08lx%08lx delta1=%08lx",
                           (unsigned long)kvq_f32_bits(o->decl.u_exp), (unsigned long)o->decl.acc_depth,
                           (unsigned long)o->decl.rescales, (unsigned long)kvq_f32_bits(o->delta1)) >= 0;
    } else if (ok && status == KVQ_OK) {
        int keys = c->op == KVQ_OP_CERT_KEYS;
        uint64_t nm = kvq_vcase_cert_meta_count(c);
        ok = fprintf(f, " flags=0x%08lx codes=", (unsigned long)flags) >= 0 &&
             put_hex_bytes(f, o->codes, kvq_vcase_cert_code_bytes(c)) &&
             fputs(keys ? " sigma=" : " scale=", f) >= 0;
        /* binary16 metadata that is not binary16 has no encoding [VEC-RES-02] */
        if (ok) ok = all_encodable(o->scale, nm, !keys) ? put_hex_floats(f, o->scale, nm, !keys)
                                                        : fputs("invalid", f) >= 0;
        ok = ok && fputs(keys ? " z=" : " zero=", f) >= 0;
        if (ok) ok = all_encodable(o->zero, nm, !keys) ? put_hex_floats(f, o->zero, nm, !keys)
                                                       : fputs("invalid", f) >= 0;
        if (ok && !keys)
            ok = fputs(" eta=", f) >= 0 && put_hex_floats(f, o->eta, nbl, 0) &&
                 fputs(" nu=", f) >= 0 && put_hex_floats(f, o->nu, nbl, 0);
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}
