/*
 * certdump.c -- reading and writing `kvq cert` dumps (spec/cert.md).
 *
 * SPEC: [CERT-DUMP-01] [CERT-DUMP-02] [CERT-DUMP-03] [CERT-DUMP-04]
 * The reader is strict in the manner of vecio.c: lines in exactly the order of
 * [CERT-DUMP-02], every field of a line exactly once, no unknown fields, every
 * hex field of exactly the length the shape implies, no non-finite value.
 * Each error names the file, the line and what is wrong.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cert_dump.h"
#include "kvq_bits.h"
#include "kvq_layout.h"
#include "lexio.h"

#define MAXTOK 20 /* more tokens than any dump line has */

void kvq_cert_dump_free(kvq_cert_dump *dp)
{
    free(dp->q), free(dp->k), free(dp->v), free(dp->sel), free(dp->prom), free(dp->out);
    dp->q = dp->k = dp->v = dp->out = NULL;
    dp->sel = dp->prom = NULL;
}

kvq_status kvq_cert_dump_alloc(kvq_cert_dump *dp)
{
    uint64_t nd = (uint64_t)dp->shape.tokens * dp->shape.dim;
    uint32_t nb = kvq_cert_blocks(&dp->shape);
    if (!kvq_cert_shape_ok(&dp->shape)) return KVQ_E_SHAPE;
    dp->q = calloc(dp->shape.dim, sizeof *dp->q);
    dp->k = calloc(nd, sizeof *dp->k);
    dp->v = calloc(nd, sizeof *dp->v);
    dp->out = calloc(dp->shape.dim, sizeof *dp->out);
    dp->sel = calloc(nb, 1);
    dp->prom = calloc(nb, 1);
    if (!dp->q || !dp->k || !dp->v || !dp->out || !dp->sel || !dp->prom) {
        kvq_cert_dump_free(dp);
        return KVQ_E_NOMEM;
    }
    return KVQ_OK;
}

/* ---- fields ------------------------------------------------------------------ */

/* Match tok[1..ntok-1] (key=value) against keys: each exactly once, none unknown. */
static kvq_status fields(const char **val, const char *const *keys, int nkeys, char **tok,
                         int ntok, const char *path, long line, char *err, size_t errlen)
{
    for (int k = 0; k < nkeys; k++) val[k] = NULL;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        int k;
        if (eq == NULL)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: field '%.40s' is not key=value", tok[0], tok[i]);
        *eq = '\0';
        k = name_index(tok[i], keys, nkeys);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: unknown field '%.40s'", tok[0], tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: field '%s' given twice", tok[0], tok[i]);
        val[k] = eq + 1;
    }
    for (int k = 0; k < nkeys; k++)
        if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: missing field '%s'", tok[0], keys[k]);
    return KVQ_OK;
}

/* A binary32 field: exactly 8 hex digits (no prefix). */
static int f32_field(const char *s, float *out)
{
    uint32_t b;
    if (strlen(s) != 8 || !hexn(s, 8, &b)) return 0;
    *out = kvq_f32_from_bits(b);
    return 1;
}

/* n values of w hex digits (4: binary16, 8: binary32), all finite. */
static kvq_status hex_values(float *out, uint64_t n, int w, const char *s, const char *key,
                             const char *path, long line, char *err, size_t errlen)
{
    size_t len = strlen(s);
    if (len != (uint64_t)w * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu (%llu values of %d digits)", key, len,
                    (unsigned long long)((uint64_t)w * n), (unsigned long long)n, w);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b;
        if (!hexn(s + (size_t)w * i, w, &b))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit in value %llu",
                        key, (unsigned long long)i);
        out[i] = w == 4 ? kvq_f16_from_bits((uint16_t)b) : kvq_f32_from_bits(b);
        if (!isfinite(out[i]))
            return fail(err, errlen, KVQ_E_FORMAT, path, line,
                        "%s: value %llu (0x%0*x) is not finite", key, (unsigned long long)i, w,
                        (unsigned)b);
    }
    return KVQ_OK;
}

/* Block list: `-` or strictly increasing decimals < nq, comma-separated; sets flags[b]. */
static kvq_status block_list(uint8_t *flags, uint32_t *count, const char *s, uint32_t nq,
                             const char *what, const char *path, long line, char *err,
                             size_t errlen)
{
    uint64_t prev = 0;
    uint32_t cnt = 0;
    *count = 0;
    if (strcmp(s, "-") == 0) return KVQ_OK;
    for (;;) {
        uint64_t b = 0;
        int digits = 0;
        for (; *s >= '0' && *s <= '9'; s++, digits++) {
            b = b * 10u + (uint64_t)(*s - '0');
            if (b > UINT32_MAX) break;
        }
        if (digits == 0 || b > UINT32_MAX || (*s != ',' && *s != '\0'))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: blocks: entry %u is not a decimal block index", what, cnt);
        if (b >= nq)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: blocks: index %llu out of range (nq = %u full blocks)", what, (unsigned long long)b, nq);
        if (cnt > 0 && b <= prev)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: blocks: index %llu repeated or not increasing", what, (unsigned long long)b);
        flags[b] = 1;
        prev = b;
        cnt++;
        if (*s == '\0') break;
        s++;
    }
    *count = cnt;
    return KVQ_OK;
}

/* Next content line, tokenized; it must start with `want`.  exp: "what was expected". */
static kvq_status expect_line(lines *L, const char *want, const char *exp, char **tok, int *ntok,
                              const char *path, char *err, size_t errlen)
{
    char *s = lines_next_content(L);
    if (s == NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "truncated: expected a '%s' line", exp);
    *ntok = tokenize(s, tok, MAXTOK);
    if (*ntok < 1 || strcmp(tok[0], want) != 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "expected a '%s' line, found '%.20s'", exp,
                    *ntok > 0 ? tok[0] : "(too many fields)");
    return KVQ_OK;
}

static const char *const SHAPE_KEYS[] = { "d", "n", "scale" };
enum { P_TAU, P_VTOL, P_EPSG, P_DELTA1, P_UEXP, P_EPSD, P_KMIN, P_KMAX, P_R, P_D, P_NR, P_PROM,
       P_SCORING, P_TIES, P_VARIANT, P_COUNT };
/* version 1 has every field but the last: its steps are sparse [CERT-DUMP-05] */
static const char *const PARAM_KEYS[P_COUNT] = { "tau", "vtol", "eps_guard", "delta1", "u_exp",
                                                 "eps_dense", "kmin", "kmax", "r", "acc_depth",
                                                 "rescales", "promote", "scoring", "ties",
                                                 "variant" };
static const char *const VARIANTS[KVQ_CERT_VARIANTS] = { "paper", "sparse" };
static const char *const SCORINGS[] = { "fp", "int8" };
static const char *const TIE_NAMES[] = { "even", "away" };
static const char *const SELECT_KEYS[] = { "rung", "blocks" };
static const char *const PROMOTE_KEYS[] = { "blocks" };
static const char *const CLAIM_KEYS[] = { "ekey", "eval", "earith" };

static kvq_status parse_params(kvq_cert_dump *dp, uint32_t ver, char **tok, int ntok,
                               const char *path, long line, char *err, size_t errlen)
{
    const char *val[P_COUNT];
    float *fv[6] = { &dp->tau, &dp->vtol, &dp->eps_guard, &dp->delta1, &dp->u_exp, &dp->eps_dense };
    uint32_t *uv[5] = { &dp->kmin, &dp->kmax, &dp->r, &dp->acc_depth, &dp->rescales };
    int ix;
    kvq_status st = fields(val, PARAM_KEYS, ver >= 2u ? P_COUNT : P_COUNT - 1, tok, ntok, path,
                           line, err, errlen);
    if (st != KVQ_OK) return st;
    if (ver < 2u) {
        dp->variant = KVQ_CERT_VARIANT_SPARSE;
    } else {
        if ((ix = name_index(val[P_VARIANT], VARIANTS, KVQ_CERT_VARIANTS)) < 0)
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: variant: '%.20s' is not paper or sparse", val[P_VARIANT]);
        dp->variant = (uint32_t)ix;
    }
    for (int i = 0; i < 6; i++)
        if (!f32_field(val[P_TAU + i], fv[i]))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: %s: '%.20s' is not 8 hex digits (binary32)", PARAM_KEYS[P_TAU + i], val[P_TAU + i]);
    for (int i = 0; i < 5; i++)
        if (!parse_u32(val[P_KMIN + i], uv[i]))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: %s: '%.20s' is not a decimal", PARAM_KEYS[P_KMIN + i], val[P_KMIN + i]);
    if (strcmp(val[P_PROM], "threshold") == 0) {
        dp->promote = KVQ_PROMOTE_THRESHOLD, dp->budget = 0;
    } else if (strncmp(val[P_PROM], "budget:", 7) == 0 && parse_u32(val[P_PROM] + 7, &dp->budget)) {
        dp->promote = KVQ_PROMOTE_BUDGET;
    } else {
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: promote: '%.30s' is not 'threshold' or 'budget:<decimal>'", val[P_PROM]);
    }
    if ((ix = name_index(val[P_SCORING], SCORINGS, 2)) < 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: scoring: '%.20s' is not fp or int8", val[P_SCORING]);
    dp->scoring = (uint32_t)ix;
    if ((ix = name_index(val[P_TIES], TIE_NAMES, 2)) < 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: ties: '%.20s' is not even or away", val[P_TIES]);
    dp->ties = ix == 0 ? KVQ_TIES_EVEN : KVQ_TIES_AWAY;
    /* constraints [CERT-DUMP-03]; every comparison is false for a NaN */
    if (!(dp->tau > 0.0f && dp->tau <= 1.0f))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: tau %a is not in (0, 1]", (double)dp->tau);
    /* vtol, eps_guard, delta1 finite: an infinite radius or guard would make
     * every check of the ladder vacuous [CERT-CHK-01] */
    if (!(dp->vtol >= 0.0f) || !isfinite(dp->vtol)) return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: vtol %a is not finite and >= 0", (double)dp->vtol);
    if (!(dp->eps_guard >= 0.0f) || !isfinite(dp->eps_guard)) return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: eps_guard %a is not finite and >= 0", (double)dp->eps_guard);
    if (!(dp->delta1 >= 0.0f) || !isfinite(dp->delta1)) return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: delta1 %a is not finite and >= 0", (double)dp->delta1);
    if (!(dp->u_exp >= 0.0f && dp->u_exp < 0x1p23f))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: u_exp %a is not in [0, 2^23)", (double)dp->u_exp);
    if (!(dp->eps_dense >= 0.0f)) return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: eps_dense %a is not >= 0", (double)dp->eps_dense);
    if (dp->kmin < 1u || dp->kmin > dp->kmax)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: need 1 <= kmin <= kmax (kmin %u, kmax %u)", dp->kmin, dp->kmax);
    if (dp->r < 1u) return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: r must be >= 1");
    if (dp->acc_depth < 1u || dp->acc_depth >= (1u << 23)) /* D 2^-24 < 1/2 */
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "params: acc_depth %u is not in [1, 2^23)", dp->acc_depth);
    return KVQ_OK;
}

/* The token rows of K or V: `<name> <i> <4d hex>`, i = 0..n-1 in order. */
static kvq_status parse_rows(lines *L, float *x, const char *name, const kvq_cert_shape *sh,
                             const char *path, char *err, size_t errlen)
{
    char *tok[MAXTOK], exp[48];
    int ntok;
    for (uint32_t t = 0; t < sh->tokens; t++) {
        uint32_t i;
        kvq_status st;
        snprintf(exp, sizeof exp, "%s %u", name, t);
        st = expect_line(L, name, exp, tok, &ntok, path, err, errlen);
        if (st != KVQ_OK) return st;
        if (ntok != 3) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "%s: expected '%s <hex>'", name, exp);
        if (!parse_u32(tok[1], &i) || i != t)
            return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "%s: token index '%.20s' out of order, expected %u", name, tok[1], t);
        st = hex_values(x + (size_t)t * sh->dim, sh->dim, 4, tok[2], name, path, L->no, err, errlen);
        if (st != KVQ_OK) return st;
    }
    return KVQ_OK;
}

static kvq_status parse_body(kvq_cert_dump *dp, lines *L, size_t len, const char *path,
                             char *err, size_t errlen)
{
    char *s, *tok[MAXTOK];
    const char *val[P_COUNT];
    int ntok;
    uint32_t nq, nb, nsel, nprom, ver;
    kvq_status st;
    /* magic [CERT-DUMP-01]; versions 1 and 2 [CERT-DUMP-05] */
    s = lines_next(L);
    if (s == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, 1, "empty file, expected '%s %u'", KVQ_CERT_DUMP_MAGIC, KVQ_CERT_DUMP_VERSION);
    if (tokenize(s, tok, 3) != 2 || strcmp(tok[0], KVQ_CERT_DUMP_MAGIC) != 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "not a %s file (first line must be '%s %u')", KVQ_CERT_DUMP_MAGIC, KVQ_CERT_DUMP_MAGIC, KVQ_CERT_DUMP_VERSION);
    if (!parse_u32(tok[1], &ver) || ver < 1u || ver > KVQ_CERT_DUMP_VERSION)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "unsupported version '%.20s' (this kvq reads 1 to %u)", tok[1], KVQ_CERT_DUMP_VERSION);
    /* shape [CERT-L-01] */
    if ((st = expect_line(L, "shape", "shape d=.. n=.. scale=..", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if ((st = fields(val, SHAPE_KEYS, 3, tok, ntok, path, L->no, err, errlen)) != KVQ_OK) return st;
    if (!parse_u32(val[0], &dp->shape.dim) || !parse_u32(val[1], &dp->shape.tokens))
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "shape: d and n must be decimal numbers");
    if (!kvq_cert_shape_ok(&dp->shape))
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "shape: d=%u n=%u outside the limits (d a multiple of 16 in [16, 512], 1 <= n <= 2^24)", dp->shape.dim, dp->shape.tokens);
    if (!f32_field(val[2], &dp->scale) || !(dp->scale >= 0x1p-126f) || !isfinite(dp->scale))
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "shape: scale '%.20s' is not a positive normal binary32 in 8 hex digits", val[2]);
    /* Trust no size from the file: the K and V lines alone need 8 n d hex digits. */
    if ((uint64_t)dp->shape.tokens * dp->shape.dim * 8u > (uint64_t)len)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "shape: d=%u n=%u needs %llu bytes of K and V, the file has %zu", dp->shape.dim, dp->shape.tokens, (unsigned long long)dp->shape.tokens * dp->shape.dim * 8u, len);
    nq = kvq_cert_full_blocks(&dp->shape), nb = kvq_cert_blocks(&dp->shape);
    /* params [CERT-DUMP-03] */
    if ((st = expect_line(L, "params", "params ...", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if ((st = parse_params(dp, ver, tok, ntok, path, L->no, err, errlen)) != KVQ_OK) return st;
    if (kvq_cert_dump_alloc(dp) != KVQ_OK) return fail(err, errlen, KVQ_E_NOMEM, path, L->no, "out of memory");
    /* q, k, v: binary16, finite [CERT-L-02] */
    if ((st = expect_line(L, "q", "q <hex>", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if (ntok != 2) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "q: expected 'q <hex>'");
    if ((st = hex_values(dp->q, dp->shape.dim, 4, tok[1], "q", path, L->no, err, errlen)) != KVQ_OK) return st;
    if ((st = parse_rows(L, dp->k, "k", &dp->shape, path, err, errlen)) != KVQ_OK) return st;
    if ((st = parse_rows(L, dp->v, "v", &dp->shape, path, err, errlen)) != KVQ_OK) return st;
    /* select [CERT-DUMP-02] */
    if ((st = expect_line(L, "select", "select rung=.. blocks=..", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if ((st = fields(val, SELECT_KEYS, 2, tok, ntok, path, L->no, err, errlen)) != KVQ_OK) return st;
    dp->line_select = L->no;
    if (!parse_u32(val[0], &dp->rung) || dp->rung > 4u)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "select: rung '%.20s' is not 0..4", val[0]);
    if ((st = block_list(dp->sel, &nsel, val[1], nq, "select", path, L->no, err, errlen)) != KVQ_OK) return st;
    if (dp->rung >= 3u && nsel != 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "select: rung %u is dense, blocks must be '-'", dp->rung);
    if (nq < nb) dp->sel[nq] = 1; /* the residual block is always attended [CERT-L-03] */
    /* promote: a subset of select */
    if ((st = expect_line(L, "promote", "promote blocks=..", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if ((st = fields(val, PROMOTE_KEYS, 1, tok, ntok, path, L->no, err, errlen)) != KVQ_OK) return st;
    if ((st = block_list(dp->prom, &nprom, val[0], nq, "promote", path, L->no, err, errlen)) != KVQ_OK) return st;
    for (uint32_t b = 0; b < nq; b++)
        if (dp->prom[b] && !dp->sel[b])
            return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "promote: block %u is not selected", b);
    /* out: binary32, finite */
    if ((st = expect_line(L, "out", "out <hex>", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if (ntok != 2) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "out: expected 'out <hex>'");
    dp->line_out = L->no;
    if ((st = hex_values(dp->out, dp->shape.dim, 8, tok[1], "out", path, L->no, err, errlen)) != KVQ_OK) return st;
    /* claim [CERT-CON-02] */
    if ((st = expect_line(L, "claim", "claim ekey=.. eval=.. earith=..", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if ((st = fields(val, CLAIM_KEYS, 3, tok, ntok, path, L->no, err, errlen)) != KVQ_OK) return st;
    dp->line_claim = L->no;
    for (int i = 0; i < 3; i++) {
        float *dst = i == 0 ? &dp->ekey : i == 1 ? &dp->eval : &dp->earith;
        if (i == 2 && strcmp(val[2], "-") == 0) {
            dp->has_earith = 0, dp->earith = INFINITY;
            continue;
        }
        if (!f32_field(val[i], dst))
            return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "claim: %s: '%.20s' is not 8 hex digits (binary32)%s", CLAIM_KEYS[i], val[i], i == 2 ? " or -" : "");
        if (!isfinite(*dst))
            return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "claim: %s is not finite", CLAIM_KEYS[i]);
        if (i == 2) dp->has_earith = 1;
    }
    /* end, then nothing but comments and blanks */
    if ((st = expect_line(L, "end", "end", tok, &ntok, path, err, errlen)) != KVQ_OK) return st;
    if (ntok != 1) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "end: the line holds nothing else");
    if (lines_next_content(L) != NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "content after 'end'");
    return KVQ_OK;
}

kvq_status kvq_cert_dump_parse(kvq_cert_dump *dp, const char *buf, size_t len, const char *path,
                               char *err, size_t errlen)
{
    lines L = { NULL, 0, 0, 0 };
    kvq_status st;
    memset(dp, 0, sizeof *dp);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = parse_body(dp, &L, len, path, err, errlen);
    free(L.buf);
    if (st != KVQ_OK) kvq_cert_dump_free(dp);
    return st;
}

kvq_status kvq_cert_dump_read(kvq_cert_dump *dp, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st;
    memset(dp, 0, sizeof *dp);
    st = read_file(&data, &len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = kvq_cert_dump_parse(dp, data, len, path, err, errlen);
    free(data);
    return st;
}

/* ---- writer ------------------------------------------------------------------ */

static int put_f16s(FILE *f, const float *x, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int ok;
        uint16_t h = kvq_f16_bits(x[i], &ok);
        if (!ok || fprintf(f, "%04x", h) < 0) return 0;
    }
    return 1;
}

static int put_list(FILE *f, const uint8_t *flags, uint32_t nq)
{
    int any = 0;
    for (uint32_t b = 0; b < nq; b++)
        if (flags[b]) {
            if (fprintf(f, "%s%u", any ? "," : "", b) < 0) return 0;
            any = 1;
        }
    return any || fputc('-', f) != EOF;
}

static unsigned long hx(float x)
{
    return (unsigned long)kvq_f32_bits(x);
}

kvq_status kvq_cert_dump_write(FILE *f, const kvq_cert_dump *dp)
{
    const kvq_cert_shape *sh = &dp->shape;
    uint32_t nq = kvq_cert_full_blocks(sh), d = sh->dim;
    int ok = fprintf(f, "%s %u\n# one decode step of one head and its certificate (spec/cert.md)\n"
                        "shape d=%u n=%u scale=%08lx\n",
                     KVQ_CERT_DUMP_MAGIC, KVQ_CERT_DUMP_VERSION, d, sh->tokens, hx(dp->scale)) >= 0;
    ok = ok && fprintf(f, "params tau=%08lx vtol=%08lx eps_guard=%08lx delta1=%08lx u_exp=%08lx "
                          "eps_dense=%08lx kmin=%u kmax=%u r=%u acc_depth=%u rescales=%u ",
                       hx(dp->tau), hx(dp->vtol), hx(dp->eps_guard), hx(dp->delta1), hx(dp->u_exp),
                       hx(dp->eps_dense), dp->kmin, dp->kmax, dp->r, dp->acc_depth,
                       dp->rescales) >= 0;
    if (ok && dp->promote == KVQ_PROMOTE_BUDGET) ok = fprintf(f, "promote=budget:%u", dp->budget) >= 0;
    else if (ok) ok = fputs("promote=threshold", f) >= 0;
    if (dp->variant >= KVQ_CERT_VARIANTS) return KVQ_E_PARAM;
    ok = ok && fprintf(f, " scoring=%s ties=%s variant=%s\nq ",
                       dp->scoring == KVQ_SCORING_INT8 ? "int8" : "fp",
                       dp->ties == KVQ_TIES_AWAY ? "away" : "even", VARIANTS[dp->variant]) >= 0;
    if (!ok) return KVQ_E_IO;
    if (!put_f16s(f, dp->q, d)) return KVQ_E_PARAM;
    for (int which = 0; which < 2; which++)
        for (uint32_t t = 0; t < sh->tokens; t++) {
            if (fprintf(f, "\n%c %u ", which ? 'v' : 'k', t) < 0) return KVQ_E_IO;
            if (!put_f16s(f, (which ? dp->v : dp->k) + (size_t)t * d, d)) return KVQ_E_PARAM;
        }
    ok = fprintf(f, "\nselect rung=%u blocks=", dp->rung) >= 0 && put_list(f, dp->sel, nq) &&
         fputs("\npromote blocks=", f) >= 0 && put_list(f, dp->prom, nq) && fputs("\nout ", f) >= 0;
    for (uint32_t c = 0; ok && c < d; c++) ok = fprintf(f, "%08lx", hx(dp->out[c])) >= 0;
    ok = ok && fprintf(f, "\nclaim ekey=%08lx eval=%08lx earith=", hx(dp->ekey), hx(dp->eval)) >= 0;
    if (ok && dp->has_earith) ok = fprintf(f, "%08lx", hx(dp->earith)) >= 0;
    else if (ok) ok = fputc('-', f) != EOF;
    ok = ok && fputs("\nend\n", f) >= 0;
    return ok ? KVQ_OK : KVQ_E_IO;
}
