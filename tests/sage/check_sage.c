/*
 * check_sage.c -- Check suite of the SAGE quantizers (spec/sage.md).
 *
 * Rules this file keeps [TEST-CMP-01]:
 *  - integer codes and FP8 bytes compare bitwise, floats by their encodings
 *    (kvq_f32_same / the binary64 encoding: +0 and -0 differ), never with ==
 *    and never with a hand-picked tolerance; expected values come from the
 *    exact path (MPFR), from constructions exact by design (checked against
 *    the exact path too), or, for the accuracy metrics, from the exact path's
 *    enclosures [SAGE-MET-04];
 *  - differential tests compare ref/fast with ref/exact, never a path with
 *    itself, and require every lemma the exact path checks to hold;
 *  - random cases: at least KVQ_RANDOM_CASES groups (scale slots, V channels,
 *    P~ rows, smoothing columns; default 10000) from a fixed seed, KVQ_SEED
 *    overrides it; a failure prints the seed and the case as a one-line
 *    "sage-case" record in hex.
 *
 * Test cases are grouped by behaviour: special_values, ties, degenerate,
 * packing, random_vs_exact, bad_input (one test per row of the spec's
 * bad-input table [SAGE-BAD-01]).  Each test names its requirements in a
 * SPEC: comment.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact_sage.h"
#include "kvq_rng.h"
#include "kvq_sage.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d73616765ull /* "kvq-sage" */
#define CASES_DEFAULT 10000u                /* random groups per family of operation */

#define SENT8  0xA5u
#define SENT32 0xA5A5A5A5u

#define F32_MAX 0x1.fffffep+127f

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;

/* ---- small helpers ------------------------------------------------------ */

static float f32(uint32_t b)
{
    return kvq_f32_from_bits(b);
}

static uint32_t bits32(float v)
{
    return kvq_f32_bits(v);
}

static uint64_t bits64(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Same encodings, element by element. */
static int same_f32s(const float *a, const float *b, uint64_t n, uint64_t *at)
{
    for (uint64_t i = 0; i < n; i++)
        if (!kvq_f32_same(a[i], b[i])) {
            *at = i;
            return 0;
        }
    return 1;
}

static kvq_sage_shape mkshape(uint32_t tokens, uint32_t dim)
{
    kvq_sage_shape s;
    s.tokens = tokens;
    s.dim = dim;
    return s;
}

static kvq_sage_qk mkqk(uint32_t role, uint32_t bits, uint32_t gran, uint32_t block,
                        uint32_t warps, uint32_t rounding)
{
    kvq_sage_qk q;
    q.role = role;
    q.bits = bits;
    q.gran = gran;
    q.block = block;
    q.warps = warps;
    q.rounding = rounding;
    return q;
}

/* A uniform value in [-1, 1] on the 2^-23 grid (exact in binary32). */
static float rng_unit(kvq_rng *r)
{
    int32_t k = (int32_t)kvq_rng_below(r, (1u << 24) + 1u) - (1 << 23);
    return ldexpf((float)k, -23);
}

static void dump_floats(FILE *f, const char *name, const float *x, uint64_t n)
{
    fprintf(f, " %s=", name);
    for (uint64_t e = 0; e < n; e++) fprintf(f, "%s%08" PRIx32, e ? "," : "", bits32(x[e]));
}

/* ---- Q/K: both paths on one tensor --------------------------------------- */

typedef struct qkrun {
    kvq_sage_shape sh;
    kvq_sage_qk qk;
    kvq_policy pol;
    uint64_t cb, ns, ne;
    uint8_t *fc, *xc;
    float *fs, *xs, *fy, *xy;
    uint32_t ff, xf, xl;
    kvq_status fst, xst, fdst, xdst;
} qkrun;

static void qk_init(qkrun *b, kvq_sage_shape sh, kvq_sage_qk qk, kvq_policy pol)
{
    b->sh = sh;
    b->qk = qk;
    b->pol = pol;
    b->ne = kvq_sage_elems(&sh);
    b->cb = kvq_sage_code_bytes(&sh, qk.bits);
    b->ns = kvq_sage_scale_count(&sh, &qk);
    b->fc = xmalloc(b->cb);
    b->xc = xmalloc(b->cb);
    b->fs = xmalloc(b->ns * sizeof(float));
    b->xs = xmalloc(b->ns * sizeof(float));
    b->fy = xmalloc(b->ne * sizeof(float));
    b->xy = xmalloc(b->ne * sizeof(float));
}

static void qk_free(qkrun *b)
{
    free(b->fc);
    free(b->xc);
    free(b->fs);
    free(b->xs);
    free(b->fy);
    free(b->xy);
}

static void qk_poison(qkrun *b)
{
    memset(b->fc, SENT8, b->cb);
    memset(b->xc, SENT8, b->cb);
    memset(b->fs, SENT8, b->ns * sizeof(float));
    memset(b->xs, SENT8, b->ns * sizeof(float));
    memset(b->fy, SENT8, b->ne * sizeof(float));
    memset(b->xy, SENT8, b->ne * sizeof(float));
    b->ff = b->xf = b->xl = SENT32;
}

static int qk_untouched(const qkrun *b)
{
    return all_bytes(b->fc, b->cb, SENT8) && all_bytes(b->xc, b->cb, SENT8) &&
           all_bytes(b->fs, b->ns * sizeof(float), SENT8) &&
           all_bytes(b->xs, b->ns * sizeof(float), SENT8) && b->ff == SENT32 &&
           b->xf == SENT32 && b->xl == SENT32;
}

static void qk_dump(FILE *f, const char *why, const qkrun *b, const float *x)
{
    fprintf(f, "FAIL seed=0x%016" PRIx64 ": %s\n", g_seed, why);
    fprintf(f, "sage-case op=quantize_qk tokens=%u dim=%u role=%u bits=%u gran=%u block=%u "
               "warps=%u rounding=%u ties=%u overflow=%u",
            b->sh.tokens, b->sh.dim, b->qk.role, b->qk.bits, b->qk.gran, b->qk.block,
            b->qk.warps, b->qk.rounding, b->pol.ties, b->pol.overflow);
    dump_floats(f, "x", x, b->ne);
    fputc('\n', f);
    fflush(f);
}

/*
 * Quantize (and dequantize the result) with both paths; 0 when every property
 * holds, else 1 with why.  SPEC: see callers.
 */
static int qk_diff(qkrun *b, const float *x, char *why, size_t len)
{
    uint64_t at;
    qk_poison(b);
    b->fst = kvq_sage_quantize_qk(b->fc, b->fs, &b->ff, x, &b->sh, &b->qk, &b->pol);
    b->xst = kvq_exact_sage_quantize_qk(b->xc, b->xs, &b->xf, &b->xl, x, &b->sh, &b->qk, &b->pol);
    if (b->fst != b->xst) {
        snprintf(why, len, "status: fast %s, exact %s", kvq_status_name(b->fst),
                 kvq_status_name(b->xst));
        return 1;
    }
    if (b->fst != KVQ_OK) {
        if (!qk_untouched(b)) {
            snprintf(why, len, "an output was written on %s", kvq_status_name(b->fst));
            return 1;
        }
        return 0;
    }
    if (b->xl != 0u) {
        snprintf(why, len, "exact path: lemma bits %02x failed", b->xl);
        return 1;
    }
    if (!same_f32s(b->fs, b->xs, b->ns, &at)) {
        snprintf(why, len, "scale slot %" PRIu64 ": fast %08x, exact %08x", at, bits32(b->fs[at]),
                 bits32(b->xs[at]));
        return 1;
    }
    for (uint64_t k = 0; k < b->cb; k++)
        if (b->fc[k] != b->xc[k]) {
            snprintf(why, len, "code byte %" PRIu64 ": fast %02x, exact %02x", k, b->fc[k], b->xc[k]);
            return 1;
        }
    if (b->ff != b->xf) {
        snprintf(why, len, "flags: fast %02x, exact %02x", b->ff, b->xf);
        return 1;
    }
    /* Flags: ZERO_SCALE exactly when some stored scale is +0 [SAGE-FLAG-01]. */
    {
        uint32_t want = 0;
        for (uint64_t s = 0; s < b->ns; s++)
            if (bits32(b->fs[s]) == 0u) want = KVQ_FLAG_ZERO_SCALE;
        if (b->ff != want) {
            snprintf(why, len, "flags %02x, scales say %02x", b->ff, want);
            return 1;
        }
    }
    /* Dequantization of the stored codes, bitwise [SAGE-Q-08]. */
    b->fdst = kvq_sage_dequantize_qk(b->fy, b->fc, b->fs, &b->sh, &b->qk);
    b->xdst = kvq_exact_sage_dequantize_qk(b->xy, b->xc, b->xs, &b->sh, &b->qk);
    if (b->fdst != KVQ_OK || b->xdst != KVQ_OK) {
        snprintf(why, len, "dequantize: fast %s, exact %s", kvq_status_name(b->fdst),
                 kvq_status_name(b->xdst));
        return 1;
    }
    if (!same_f32s(b->fy, b->xy, b->ne, &at)) {
        snprintf(why, len, "dequantized element %" PRIu64 ": fast %08x, exact %08x", at,
                 bits32(b->fy[at]), bits32(b->xy[at]));
        return 1;
    }
    return 0;
}

static void qk_ok(qkrun *b, const float *x, const char *tag)
{
    char why[256];
    if (qk_diff(b, x, why, sizeof why)) {
        qk_dump(stderr, why, b, x);
        ck_abort_msg("%s: %s", tag, why);
    }
    REQ_MSG(b->fst == KVQ_OK, "%s: status %s", tag, kvq_status_name(b->fst));
}

static int32_t qk_code(const qkrun *b, uint32_t n, uint32_t c)
{
    return kvq_sage_unpack_code(b->fc, (uint64_t)n * b->sh.dim + c, b->qk.bits);
}

static float qk_scale_of(const qkrun *b, uint32_t n)
{
    return b->fs[kvq_sage_scale_slot(&b->qk, n)];
}

/* ---- FP8 P~ / V: both paths ---------------------------------------------- */

/* P~ with both paths; codes/rowsum compared bitwise, lemmas 0. */
static int p_diff(uint8_t *fc, float *fl, uint32_t *ff, const float *p, uint32_t rows,
                  uint32_t cols, uint32_t fmt, const kvq_policy *pol, kvq_status *st, char *why,
                  size_t len)
{
    uint64_t n = (uint64_t)rows * cols, at;
    uint8_t *xc = xmalloc(n);
    float *xl = xmalloc(rows * sizeof(float));
    uint32_t xf = SENT32, lem = SENT32;
    kvq_status fst, xst;
    int bad = 0;
    memset(fc, SENT8, n);
    memset(xc, SENT8, n);
    memset(fl, SENT8, rows * sizeof(float));
    memset(xl, SENT8, rows * sizeof(float));
    *ff = SENT32;
    fst = kvq_sage_quantize_p(fc, fl, ff, p, rows, cols, fmt, pol);
    xst = kvq_exact_sage_quantize_p(xc, xl, &xf, &lem, p, rows, cols, fmt, pol);
    *st = fst;
    if (fst != xst) {
        snprintf(why, len, "P status: fast %s, exact %s", kvq_status_name(fst), kvq_status_name(xst));
        bad = 1;
    } else if (fst != KVQ_OK) {
        if (!all_bytes(fc, n, SENT8) || !all_bytes(xc, n, SENT8) || *ff != SENT32 ||
            xf != SENT32 || lem != SENT32 || !all_bytes(fl, rows * sizeof(float), SENT8) ||
            !all_bytes(xl, rows * sizeof(float), SENT8)) {
            snprintf(why, len, "P: an output was written on %s", kvq_status_name(fst));
            bad = 1;
        }
    } else if (lem != 0u) {
        snprintf(why, len, "P: exact lemma bits %02x failed", lem);
        bad = 1;
    } else if (memcmp(fc, xc, n) != 0) {
        for (at = 0; at < n && fc[at] == xc[at]; at++) {}
        snprintf(why, len, "P code %" PRIu64 " (p=%08x): fast %02x, exact %02x", at,
                 bits32(p[at]), fc[at], xc[at]);
        bad = 1;
    } else if (!same_f32s(fl, xl, rows, &at)) {
        snprintf(why, len, "rowsum %" PRIu64 ": fast %08x, exact %08x", at, bits32(fl[at]),
                 bits32(xl[at]));
        bad = 1;
    } else if (*ff != 0u || xf != 0u) {
        snprintf(why, len, "P flags: fast %02x, exact %02x (no event is possible)", *ff, xf);
        bad = 1;
    }
    free(xc);
    free(xl);
    return bad;
}

/* V with both paths. */
static int v_diff(uint8_t *fc, float *fs, uint32_t *ff, const float *v, kvq_sage_shape sh,
                  uint32_t fmt, const kvq_policy *pol, kvq_status *st, char *why, size_t len)
{
    uint64_t n = kvq_sage_elems(&sh), at;
    uint8_t *xc = xmalloc(n);
    float *xs = xmalloc(sh.dim * sizeof(float));
    uint32_t xf = SENT32, lem = SENT32, want = 0;
    kvq_status fst, xst;
    int bad = 0;
    memset(fc, SENT8, n);
    memset(xc, SENT8, n);
    memset(fs, SENT8, sh.dim * sizeof(float));
    memset(xs, SENT8, sh.dim * sizeof(float));
    *ff = SENT32;
    fst = kvq_sage_quantize_v(fc, fs, ff, v, &sh, fmt, pol);
    xst = kvq_exact_sage_quantize_v(xc, xs, &xf, &lem, v, &sh, fmt, pol);
    *st = fst;
    if (fst != xst) {
        snprintf(why, len, "V status: fast %s, exact %s", kvq_status_name(fst), kvq_status_name(xst));
        bad = 1;
    } else if (fst != KVQ_OK) {
        if (!all_bytes(fc, n, SENT8) || !all_bytes(xc, n, SENT8) || *ff != SENT32 ||
            xf != SENT32 || lem != SENT32 || !all_bytes(fs, sh.dim * sizeof(float), SENT8) ||
            !all_bytes(xs, sh.dim * sizeof(float), SENT8)) {
            snprintf(why, len, "V: an output was written on %s", kvq_status_name(fst));
            bad = 1;
        }
    } else if (lem != 0u) {
        snprintf(why, len, "V: exact lemma bits %02x failed", lem);
        bad = 1;
    } else if (!same_f32s(fs, xs, sh.dim, &at)) {
        snprintf(why, len, "V scale %" PRIu64 ": fast %08x, exact %08x", at, bits32(fs[at]),
                 bits32(xs[at]));
        bad = 1;
    } else if (memcmp(fc, xc, n) != 0) {
        for (at = 0; at < n && fc[at] == xc[at]; at++) {}
        snprintf(why, len, "V code %" PRIu64 " (v=%08x): fast %02x, exact %02x", at,
                 bits32(v[at]), fc[at], xc[at]);
        bad = 1;
    } else {
        for (uint32_t c = 0; c < sh.dim; c++)
            if (bits32(fs[c]) == 0u) want = KVQ_FLAG_ZERO_SCALE;
        if (*ff != xf || *ff != want) {
            snprintf(why, len, "V flags: fast %02x, exact %02x, scales say %02x", *ff, xf, want);
            bad = 1;
        }
    }
    free(xc);
    free(xs);
    return bad;
}

/* ---- smoothing and dS: both paths ------------------------------------------ */

static int smooth_diff(float *fxs, float *fm, const float *x, kvq_sage_shape sh, uint32_t seg,
                       kvq_status *st, char *why, size_t len)
{
    uint64_t n = kvq_sage_elems(&sh), nm = (uint64_t)kvq_sage_mean_rows(sh.tokens, seg) * sh.dim, at;
    float *xxs = xmalloc(n * sizeof(float)), *xm = xmalloc(nm * sizeof(float));
    uint32_t lem = SENT32;
    kvq_status fst, xst;
    int bad = 0;
    memset(fxs, SENT8, n * sizeof(float));
    memset(xxs, SENT8, n * sizeof(float));
    memset(fm, SENT8, nm * sizeof(float));
    memset(xm, SENT8, nm * sizeof(float));
    fst = kvq_sage_smooth(fxs, fm, x, &sh, seg);
    xst = kvq_exact_sage_smooth(xxs, xm, &lem, x, &sh, seg);
    *st = fst;
    if (fst != xst) {
        snprintf(why, len, "smooth status: fast %s, exact %s", kvq_status_name(fst),
                 kvq_status_name(xst));
        bad = 1;
    } else if (fst != KVQ_OK) {
        if (!all_bytes(fxs, n * sizeof(float), SENT8) || !all_bytes(xxs, n * sizeof(float), SENT8) ||
            !all_bytes(fm, nm * sizeof(float), SENT8) || !all_bytes(xm, nm * sizeof(float), SENT8) ||
            lem != SENT32) {
            snprintf(why, len, "smooth: an output was written on %s", kvq_status_name(fst));
            bad = 1;
        }
    } else if (lem != 0u) {
        snprintf(why, len, "smooth: exact lemma bits %02x failed", lem);
        bad = 1;
    } else if (!same_f32s(fm, xm, nm, &at)) {
        snprintf(why, len, "mean %" PRIu64 ": fast %08x, exact %08x", at, bits32(fm[at]),
                 bits32(xm[at]));
        bad = 1;
    } else if (!same_f32s(fxs, xxs, n, &at)) {
        snprintf(why, len, "smoothed %" PRIu64 ": fast %08x, exact %08x", at, bits32(fxs[at]),
                 bits32(xxs[at]));
        bad = 1;
    }
    free(xxs);
    free(xm);
    return bad;
}

static int ds_diff(float *fds, const float *qm, const float *ks, uint32_t rows, kvq_sage_shape ksh,
                   float tau, kvq_status *st, char *why, size_t len)
{
    uint64_t n = (uint64_t)rows * ksh.tokens, at;
    float *xds = xmalloc(n * sizeof(float));
    uint32_t lem = SENT32;
    kvq_status fst, xst;
    int bad = 0;
    memset(fds, SENT8, n * sizeof(float));
    memset(xds, SENT8, n * sizeof(float));
    fst = kvq_sage_delta_s(fds, qm, ks, rows, &ksh, tau);
    xst = kvq_exact_sage_delta_s(xds, &lem, qm, ks, rows, &ksh, tau);
    *st = fst;
    if (fst != xst) {
        snprintf(why, len, "dS status: fast %s, exact %s", kvq_status_name(fst), kvq_status_name(xst));
        bad = 1;
    } else if (fst != KVQ_OK) {
        if (!all_bytes(fds, n * sizeof(float), SENT8) || !all_bytes(xds, n * sizeof(float), SENT8) ||
            lem != SENT32) {
            snprintf(why, len, "dS: an output was written on %s", kvq_status_name(fst));
            bad = 1;
        }
    } else if (lem != 0u) {
        snprintf(why, len, "dS: exact lemma bits %02x failed", lem);
        bad = 1;
    } else if (!same_f32s(fds, xds, n, &at)) {
        snprintf(why, len, "dS %" PRIu64 ": fast %08x, exact %08x", at, bits32(fds[at]),
                 bits32(xds[at]));
        bad = 1;
    }
    free(xds);
    return bad;
}

/* ---- metrics: fast against the exact enclosures ---------------------------- */

static int met_one(const char *name, double fast, const kvq_exact_sage_metric *m, char *why,
                   size_t len)
{
    if (bits64(fast) != bits64(m->pinned)) {
        snprintf(why, len, "%s: fast %a, exact pinned %a", name, fast, m->pinned);
        return 1;
    }
    if (!(m->real_lo <= m->real_hi) || !(m->fast_lo <= m->real_lo) || !(m->real_hi <= m->fast_hi)) {
        snprintf(why, len, "%s: enclosures out of order [%a, %a] in [%a, %a]", name, m->real_lo,
                 m->real_hi, m->fast_lo, m->fast_hi);
        return 1;
    }
    if (!(fast >= m->fast_lo && fast <= m->fast_hi)) {
        snprintf(why, len, "%s: fast %a outside [%a, %a]", name, fast, m->fast_lo, m->fast_hi);
        return 1;
    }
    return 0;
}

static int met_diff(kvq_sage_accuracy *fa, kvq_exact_sage_accuracy *xa, const float *o,
                    const float *o2, uint64_t n, kvq_status *st, char *why, size_t len)
{
    uint32_t lem = SENT32;
    kvq_status fst, xst;
    memset(fa, SENT8, sizeof *fa);
    memset(xa, SENT8, sizeof *xa);
    fst = kvq_sage_metrics(fa, o, o2, n);
    xst = kvq_exact_sage_metrics(xa, &lem, o, o2, n);
    *st = fst;
    if (fst != xst) {
        snprintf(why, len, "metrics status: fast %s, exact %s", kvq_status_name(fst),
                 kvq_status_name(xst));
        return 1;
    }
    if (fst != KVQ_OK) {
        if (!all_bytes(fa, sizeof *fa, SENT8) || !all_bytes(xa, sizeof *xa, SENT8) || lem != SENT32) {
            snprintf(why, len, "metrics: an output was written on %s", kvq_status_name(fst));
            return 1;
        }
        return 0;
    }
    if (lem != 0u) {
        snprintf(why, len, "metrics: exact lemma bits %02x failed", lem);
        return 1;
    }
    return met_one("cos_sim", fa->cos_sim, &xa->cos_sim, why, len) ||
           met_one("rel_l1", fa->rel_l1, &xa->rel_l1, why, len) ||
           met_one("rmse", fa->rmse, &xa->rmse, why, len);
}

/* ========================================================================= */
/* special_values                                                            */
/* ========================================================================= */

/* SPEC: [SAGE-Q-01] [SAGE-Q-02] [SAGE-Q-03] [SAGE-LEM-03] [SAGE-LEM-04] [SAGE-Q-06]
 * The elements of largest magnitude of a group get +-cmax, in both widths,
 * every granularity and both roundings; -0 and +0 give code 0. */
START_TEST(special_max_gets_cmax)
{
    for (uint32_t bits = 4; bits <= 8; bits += 4)
        for (uint32_t role = 0; role <= 1; role++)
            for (uint32_t rnd = 0; rnd <= 1; rnd++)
                for (uint32_t gran = 0; gran <= 2; gran++) {
                    kvq_sage_qk qk = kvq_sage_qk_default(role, bits);
                    kvq_sage_shape sh = mkshape(role == 0 ? 128u : 64u, 64);
                    kvq_policy pol = kvq_policy_default;
                    uint64_t ne = kvq_sage_elems(&sh);
                    float *x = xmalloc(ne * sizeof(float));
                    int32_t cmax = (int32_t)kvq_sage_cmax(bits);
                    qkrun b;
                    qk.gran = gran;
                    qk.rounding = rnd;
                    kvq_rng r = { 0x5a5au + bits * 131u + role * 17u + rnd * 3u + gran };
                    for (uint64_t e = 0; e < ne; e++) x[e] = rng_unit(&r) * 3.0f;
                    /* Per token: channel 0 holds +-4 (the maximum of every group);
                     * channels 1 and 2 hold -0 and +0. */
                    for (uint32_t n = 0; n < sh.tokens; n++) {
                        x[(uint64_t)n * 64] = n % 3 ? 4.0f : -4.0f;
                        x[(uint64_t)n * 64 + 1] = -0.0f;
                        x[(uint64_t)n * 64 + 2] = 0.0f;
                    }
                    qk_init(&b, sh, qk, pol);
                    qk_ok(&b, x, "special_max_gets_cmax");
                    for (uint32_t n = 0; n < sh.tokens; n++) {
                        REQ_EQ(qk_code(&b, n, 0), n % 3 ? cmax : -cmax);
                        REQ_EQ(qk_code(&b, n, 1), 0);
                        REQ_EQ(qk_code(&b, n, 2), 0);
                    }
                    qk_free(&b);
                    free(x);
                }
}
END_TEST

/* SPEC: [SAGE-Q-05] [SAGE-Q-03] [POL-TIE-01]
 * The public rounding is round half away AS EVALUATED IN BINARY32: with
 * s = 1024 (m = 127 * 1024, the +1e-7 lost in rounding) and x = 512 - 2^-15,
 * q = 0.5 - 2^-25, t = RN32(q + 0.5) = 1 (a tie to even), code 1; the paper
 * rounding gives round(q) = 0.  Constructed values, checked against the
 * exact path. */
START_TEST(special_public_quirk)
{
    kvq_sage_shape sh = mkshape(64, 64);
    kvq_policy pol = kvq_policy_default;
    float *x = xmalloc(64 * 64 * sizeof(float));
    for (uint32_t rnd = 0; rnd <= 1; rnd++) {
        kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8);
        qkrun b;
        qk.rounding = rnd;
        for (uint32_t e = 0; e < 64 * 64; e++) x[e] = 0.0f;
        x[0] = 127.0f * 1024.0f;                   /* token 0: slot 0 */
        x[1] = 512.0f - 0x1p-15f;                  /* q = 0.5 - 2^-25 */
        x[2] = -(512.0f - 0x1p-15f);
        qk_init(&b, sh, qk, pol);
        qk_ok(&b, x, "special_public_quirk");
        REQ(kvq_f32_same(b.fs[0], 1024.0f));
        REQ_EQ(qk_code(&b, 0, 0), 127);
        REQ_EQ(qk_code(&b, 0, 1), rnd ? 1 : 0);
        REQ_EQ(qk_code(&b, 0, 2), rnd ? -1 : 0);
        qk_free(&b);
    }
    free(x);
}
END_TEST

/* SPEC: [SAGE-P-01] [SAGE-P-02] [SAGE-V-02] [SAGE-V-03] [POL-FP8-03] [SAGE-LEM-05] [SAGE-LEM-06]
 * P~: 1 -> largest finite code, +0 -> 0x00, -0 -> 0x80 (a row of -0 sums to
 * -0); V: the channel
 * maximum -> +-F's code, -0 in a nonzero channel -> 0x80. */
START_TEST(special_fp8_endpoints)
{
    static const float p[4] = { 1.0f, 0.0f, -0.0f, 0.5f };
    kvq_policy pol = kvq_policy_default;
    for (uint32_t fmt = 0; fmt <= 1; fmt++) {
        uint8_t c[4];
        float l;
        uint32_t f;
        kvq_status st;
        char why[256];
        uint8_t maxc = fmt ? KVQ_FP8_E5M2_MAXCODE : KVQ_FP8_E4M3_MAXCODE;
        REQ_MSG(!p_diff(c, &l, &f, p, 1, 4, fmt, &pol, &st, why, sizeof why), "%s", why);
        REQ_EQ(st, KVQ_OK);
        REQ_EQ(c[0], maxc);
        REQ_EQ(c[1], 0x00);
        REQ_EQ(c[2], 0x80);
        REQ(kvq_f32_same(l, 1.5f));
        {   /* a row of -0: codes 0x80, and the row sum starts from the first value: -0 */
            static const float pz[4] = { -0.0f, -0.0f, -0.0f, -0.0f };
            REQ_MSG(!p_diff(c, &l, &f, pz, 1, 4, fmt, &pol, &st, why, sizeof why), "%s", why);
            REQ(all_bytes(c, 4, 0x80));
            REQ_EQ(bits32(l), 0x80000000u);
        }
        {
            kvq_sage_shape sh = mkshape(3, 64);
            float v[3 * 64];
            uint8_t vc[3 * 64];
            float vs[64];
            for (uint32_t e = 0; e < 3 * 64; e++) v[e] = 0.25f;
            v[0] = -3.0f;     /* channel 0: max 3 */
            v[64] = -0.0f;    /* channel 0, token 1 */
            REQ_MSG(!v_diff(vc, vs, &f, v, sh, fmt, &pol, &st, why, sizeof why), "%s", why);
            REQ_EQ(st, KVQ_OK);
            REQ_EQ(vc[0], 0x80u | maxc);
            REQ_EQ(vc[64], 0x80);
            REQ_EQ(vc[1], maxc);               /* channel 1: every value is the maximum */
        }
    }
}
END_TEST

/* SPEC: [SAGE-SM-01] [SAGE-SM-02] [SAGE-SM-03] [SAGE-SM-05] [SAGE-LEM-01]
 * A constant column smooths to +0 (also a negative constant and a column of
 * -0, whose mean is -0 from the first-value start); a column of integers has
 * its exact mean. */
START_TEST(special_smooth_constant)
{
    kvq_sage_shape sh = mkshape(5, 64);
    float x[5 * 64], xs[5 * 64], m[64];
    kvq_status st;
    char why[256];
    for (uint32_t n = 0; n < 5; n++)
        for (uint32_t c = 0; c < 64; c++)
            x[n * 64 + c] = c == 0 ? -3.25f : c == 1 ? -0.0f : c == 2 ? (float)(n * 2) : 7.0f;
    REQ_MSG(!smooth_diff(xs, m, x, sh, 5, &st, why, sizeof why), "%s", why);
    REQ_EQ(st, KVQ_OK);
    REQ(kvq_f32_same(m[0], -3.25f));
    REQ(kvq_f32_same(m[1], -0.0f));
    REQ(kvq_f32_same(m[2], 4.0f));            /* (0 + 2 + 4 + 6 + 8) / 5 */
    for (uint32_t n = 0; n < 5; n++) {
        REQ_EQ(bits32(xs[n * 64 + 0]), 0u);   /* +0 */
        REQ_EQ(bits32(xs[n * 64 + 1]), 0u);
        REQ(kvq_f32_same(xs[n * 64 + 2], (float)(n * 2) - 4.0f));
    }
}
END_TEST

/* SPEC: [SAGE-DS-01] [SAGE-SM-04] [SAGE-SM-03] [SAGE-LEM-02]
 * The decomposition behind dS on data where every step is exact (small
 * integers, a power-of-two token count and tau): Q_s K_s^T + dS equals
 * Q K_s^T, and dS is the integer dot product times tau, bit for bit. */
START_TEST(special_ds_decomposition)
{
    kvq_sage_shape qsh = mkshape(4, 64), ksh = mkshape(8, 64);
    float q[4 * 64], k[8 * 64], qs[4 * 64], qm[64], ks[8 * 64], km[64], ds[8];
    kvq_status st;
    char why[256];
    kvq_rng r = { 0xd5d5u };
    const float tau = 0x1p-3f;
    for (uint32_t e = 0; e < 4 * 64; e++) q[e] = (float)((int)kvq_rng_below(&r, 17) - 8) * 4.0f;
    for (uint32_t e = 0; e < 8 * 64; e++) k[e] = (float)((int)kvq_rng_below(&r, 17) - 8) * 8.0f;
    REQ_MSG(!smooth_diff(qs, qm, q, qsh, 4, &st, why, sizeof why), "%s", why);
    REQ_MSG(!smooth_diff(ks, km, k, ksh, 8, &st, why, sizeof why), "%s", why);
    REQ_MSG(!ds_diff(ds, qm, ks, 1, ksh, tau, &st, why, sizeof why), "%s", why);
    REQ_EQ(st, KVQ_OK);
    for (uint32_t j = 0; j < 8; j++) {
        double dot_m = 0;
        for (uint32_t c = 0; c < 64; c++) dot_m += (double)qm[c] * ks[j * 64 + c];
        REQ(kvq_f32_same(ds[j], (float)(dot_m * tau)));   /* every step exact */
        for (uint32_t i = 0; i < 4; i++) {
            double full = 0, part = 0;
            for (uint32_t c = 0; c < 64; c++) {
                full += (double)q[i * 64 + c] * ks[j * 64 + c];
                part += (double)qs[i * 64 + c] * ks[j * 64 + c];
            }
            /* exact dyadic values; + 0.0 maps a -0 to +0 before the bitwise compare */
            REQ_EQ(bits64(full * tau + 0.0), bits64(part * tau + ds[j] + 0.0));
        }
    }
}
END_TEST

/* ========================================================================= */
/* ties                                                                      */
/* ========================================================================= */

/* SPEC: [SAGE-Q-03] [SAGE-Q-05] [POL-TIE-01] [POL-TIE-02]
 * m = cmax gives s = 1 exactly, so x = k + 1/2 is an exact tie of x/s: even
 * rounds to the even neighbour, away away from zero; the public rounding sees
 * s = RN32(1 + 1e-7) = 1 + 2^-23, so q is just below the tie and its code is
 * what the exact path says (checked bit for bit). */
START_TEST(ties_int_codes)
{
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        int32_t cmax = (int32_t)kvq_sage_cmax(bits);
        for (uint32_t cfg = 0; cfg < 3; cfg++) {
            kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, bits);
            kvq_sage_shape sh = mkshape(128, 64);
            kvq_policy pol = mkpol(cfg == 1 ? KVQ_TIES_AWAY : KVQ_TIES_EVEN, 0, 0);
            float *x = xmalloc(128 * 64 * sizeof(float));
            qkrun b;
            qk.rounding = cfg == 2 ? KVQ_SAGE_ROUND_PUBLIC : KVQ_SAGE_ROUND_PAPER;
            /* Token n (every slot of 4 tokens sees the value cmax somewhere). */
            for (uint32_t n = 0; n < 128; n++)
                for (uint32_t c = 0; c < 64; c++) {
                    int32_t h = (int32_t)(c % (uint32_t)(2 * cmax)) - cmax; /* -cmax .. cmax-1 */
                    x[n * 64 + c] = c == 63 ? (float)cmax : (float)h + 0.5f;
                }
            qk_init(&b, sh, qk, pol);
            qk_ok(&b, x, "ties_int_codes");
            for (uint32_t n = 0; n < 128; n++) {
                if (cfg < 2) REQ(kvq_f32_same(qk_scale_of(&b, n), 1.0f));
                else REQ(kvq_f32_same(qk_scale_of(&b, n), 1.0f + 0x1p-23f));
                for (uint32_t c = 0; c < 63; c++) {
                    float v = x[n * 64 + c];
                    int32_t lo = (int32_t)floorf(v), want;
                    if (cfg == 0) want = lo % 2 == 0 ? lo : lo + 1;             /* even */
                    else if (cfg == 1) want = v > 0 ? lo + 1 : lo;              /* away */
                    else want = qk_code(&b, n, c);                              /* exact path */
                    REQ_EQ(qk_code(&b, n, c), want);
                }
            }
            qk_free(&b);
            free(x);
        }
    }
}
END_TEST

/* SPEC: [SAGE-P-01] [SAGE-V-02] [POL-FP8-03]
 * FP8 ties.  P~: p = 3/64 gives t = 21, the midpoint of 20 (F = 2) and 22
 * (F = 3) -> 20 (0x5A); p = 3/32 gives 42 -> 40 (0x62).  V with a power-of-two
 * scale (m = F 2^k): t = 19 (18 | 20) -> 20 upward; t = 21 -> 20; E5M2 t = 5.5
 * (5 | 6) -> 6, t = 4.5 -> 4. */
START_TEST(ties_fp8)
{
    kvq_policy pol = kvq_policy_default;
    float p[2] = { 3.0f / 64.0f, 3.0f / 32.0f }, l;
    uint8_t c[2];
    uint32_t f;
    kvq_status st;
    char why[256];
    REQ_MSG(!p_diff(c, &l, &f, p, 1, 2, KVQ_SAGE_FP8_E4M3, &pol, &st, why, sizeof why), "%s", why);
    REQ_EQ(c[0], 0x5A);
    REQ_EQ(c[1], 0x62);
    for (uint32_t fmt = 0; fmt <= 1; fmt++) {
        kvq_sage_shape sh = mkshape(3, 64);
        float v[3 * 64], vs[64];
        uint8_t vc[3 * 64];
        float F = kvq_sage_fp8_bound(fmt), s = 0x1p-4f;
        for (uint32_t ch = 0; ch < 64; ch++) {
            v[ch] = F * s;                                    /* the maximum: scale = s */
            v[64 + ch] = (fmt ? 5.5f : 19.0f) * s * (ch % 2 ? -1.0f : 1.0f);
            v[128 + ch] = (fmt ? 4.5f : 21.0f) * s;
        }
        REQ_MSG(!v_diff(vc, vs, &f, v, sh, fmt, &pol, &st, why, sizeof why), "%s", why);
        REQ(kvq_f32_same(vs[0], s));
        if (fmt == 0) {
            REQ_EQ(vc[64], 0x5A);                 /* 20 */
            REQ_EQ(vc[65], 0xDA);                 /* -20 */
            REQ_EQ(vc[128], 0x5A);                /* 21 -> 20 */
        } else {
            REQ_EQ(vc[64], 0x46);                 /* 6 = 1.5 * 4: E = 17, F = 2 */
            REQ_EQ(vc[65], 0xC6);
            REQ_EQ(vc[128], 0x44);                /* 4.5 -> 4: E = 17, F = 0 */
        }
    }
}
END_TEST

/* SPEC: [SAGE-Q-03] [SAGE-Q-05] [POL-TIE-01] [POL-TIE-02] [SAGE-LEM-03] [SAGE-LEM-04]
 * Near ties: x/s within a few ulps of k + 1/2 for every k, every width,
 * rounding and tie rule, fast against exact. */
START_TEST(ties_near)
{
    kvq_rng r = { g_seed ^ 0x7165u };
    for (uint32_t bits = 4; bits <= 8; bits += 4)
        for (uint32_t cfg = 0; cfg < 3; cfg++) {
            kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, bits);
            kvq_sage_shape sh = mkshape(64, 128);
            kvq_policy pol = mkpol(cfg == 1 ? KVQ_TIES_AWAY : KVQ_TIES_EVEN, 0, 0);
            float *x = xmalloc(64 * 128 * sizeof(float));
            int32_t cmax = (int32_t)kvq_sage_cmax(bits);
            qkrun b;
            float sl[4];
            qk.rounding = cfg == 2 ? KVQ_SAGE_ROUND_PUBLIC : KVQ_SAGE_ROUND_PAPER;
            for (uint32_t t = 0; t < 4; t++)
                sl[t] = ldexpf(1.0f + (float)kvq_rng_below(&r, 1024) * 0x1p-10f,
                               (int)kvq_rng_below(&r, 60) - 30);
            for (uint32_t n = 0; n < 64; n++) {
                float s = sl[kvq_sage_scale_slot(&qk, n)];  /* one scale per slot */
                for (uint32_t c = 0; c < 128; c++) {
                    int32_t h = (int32_t)kvq_rng_below(&r, (uint32_t)(2 * cmax)) - cmax;
                    float t = ((float)h + 0.5f) * s;
                    x[n * 128 + c] = f32(bits32(t) + kvq_rng_below(&r, 7) - 3u);
                }
                x[n * 128] = (float)cmax * s;      /* pins the slot's scale near s */
            }
            qk_init(&b, sh, qk, pol);
            qk_ok(&b, x, "ties_near");
            qk_free(&b);
            free(x);
        }
}
END_TEST

/* ========================================================================= */
/* degenerate                                                                */
/* ========================================================================= */

/* SPEC: [SAGE-L-03] [SAGE-MAP-03] [SAGE-Q-04] [SAGE-Q-01]
 * Token counts that are not multiples of any tile: quantizing the tensor
 * padded with zero tokens up to whole blocks gives the same scales and the
 * same codes for the existing tokens (what a kernel's masked loads compute);
 * empty slots hold the zero-group scale. */
START_TEST(degenerate_ragged_equals_padded)
{
    static const uint32_t Ns[] = { 1, 7, 9, 31, 33, 63, 65, 100, 127, 129, 200 };
    kvq_rng r = { 0x9a9au };
    for (uint32_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++)
        for (uint32_t role = 0; role <= 1; role++)
            for (uint32_t gran = 0; gran <= 2; gran++) {
                uint32_t rnd = kvq_rng_below(&r, 2), bits = kvq_rng_below(&r, 2) ? 8 : 4;
                kvq_sage_qk qk = kvq_sage_qk_default(role, bits);
                kvq_sage_shape sh = mkshape(Ns[i], 64), ph;
                kvq_policy pol = kvq_policy_default;
                float *x, *xp;
                qkrun a, b;
                qk.gran = gran;
                qk.rounding = rnd;
                ph = mkshape(kvq_sage_blocks(Ns[i], qk.block) * qk.block, 64);
                x = xmalloc(kvq_sage_elems(&sh) * sizeof(float));
                xp = xmalloc(kvq_sage_elems(&ph) * sizeof(float));
                for (uint64_t e = 0; e < kvq_sage_elems(&ph); e++) xp[e] = 0.0f;
                for (uint64_t e = 0; e < kvq_sage_elems(&sh); e++) xp[e] = x[e] = rng_unit(&r);
                qk_init(&a, sh, qk, pol);
                qk_init(&b, ph, qk, pol);
                qk_ok(&a, x, "degenerate_ragged (ragged)");
                qk_ok(&b, xp, "degenerate_ragged (padded)");
                REQ_EQ(a.ns, b.ns);
                for (uint64_t s = 0; s < a.ns; s++) REQ(kvq_f32_same(a.fs[s], b.fs[s]));
                REQ(memcmp(a.fc, b.fc, a.cb) == 0);
                qk_free(&a);
                qk_free(&b);
                free(x);
                free(xp);
            }
}
END_TEST

/* SPEC: [SAGE-Q-02] [SAGE-Q-04] [POL-ZR-01] [SAGE-FLAG-01]
 * The zero-range boundary of the paper rounding: m / cmax just above and just
 * below 2^-126 (s normal: codes; s subnormal: scale +0, codes 0, ZERO_SCALE). */
START_TEST(degenerate_scale_boundary)
{
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        float cm = (float)kvq_sage_cmax(bits);
        for (int side = 0; side < 2; side++) {
            kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, bits);
            kvq_sage_shape sh = mkshape(64, 64);
            kvq_policy pol = kvq_policy_default;
            float *x = xmalloc(64 * 64 * sizeof(float));
            /* m = cmax 2^-126 (exact: s = 2^-126, normal) or its predecessor. */
            float m = cm * 0x1p-126f;
            qkrun b;
            if (side) m = f32(bits32(m) - 1u);
            for (uint32_t e = 0; e < 64 * 64; e++) x[e] = m * 0.5f;
            x[0] = m;
            qk_init(&b, sh, qk, pol);
            qk_ok(&b, x, "degenerate_scale_boundary");
            if (side == 0) {
                REQ(kvq_f32_same(b.fs[0], 0x1p-126f));
                REQ_EQ(qk_code(&b, 0, 0), (int32_t)cm);
                REQ_EQ(b.ff & KVQ_FLAG_ZERO_SCALE, KVQ_FLAG_ZERO_SCALE); /* empty: other slots */
            } else {
                REQ_EQ(bits32(b.fs[0]), 0u);
                REQ_EQ(qk_code(&b, 0, 0), 0);
                REQ_EQ(b.ff, KVQ_FLAG_ZERO_SCALE);
            }
            qk_free(&b);
            free(x);
        }
    }
}
END_TEST

/* SPEC: [SAGE-L-02] [SAGE-SM-01] [SAGE-Q-01] [SAGE-V-01] [SAGE-MET-01]
 * One token: the mean is the token itself and smoothing gives +0; the
 * quantizers and metrics agree with the exact path on N = 1. */
START_TEST(degenerate_single_token)
{
    kvq_sage_shape sh = mkshape(1, 128);
    float x[128], xs[128], m[128], vs[128];
    uint8_t vc[128];
    uint32_t f;
    kvq_status st;
    char why[256];
    kvq_policy pol = kvq_policy_default;
    kvq_rng r = { 0x1u };
    kvq_sage_accuracy fa;
    kvq_exact_sage_accuracy xa;
    for (uint32_t c = 0; c < 128; c++) x[c] = rng_unit(&r) * 100.0f;
    REQ_MSG(!smooth_diff(xs, m, x, sh, 1, &st, why, sizeof why), "%s", why);
    for (uint32_t c = 0; c < 128; c++) REQ_EQ(bits32(xs[c]), 0u);
    REQ_MSG(!v_diff(vc, vs, &f, x, sh, KVQ_SAGE_FP8_E4M3, &pol, &st, why, sizeof why), "%s", why);
    for (uint32_t role = 0; role <= 1; role++) {
        qkrun b;
        qk_init(&b, sh, kvq_sage_qk_default(role, 4), pol);
        qk_ok(&b, x, "degenerate_single_token");
        qk_free(&b);
    }
    REQ_MSG(!met_diff(&fa, &xa, x, x, 1, &st, why, sizeof why), "%s", why);
    REQ(bits64(fa.rel_l1) == 0u && bits64(fa.rmse) == 0u);
}
END_TEST

/* ========================================================================= */
/* packing                                                                   */
/* ========================================================================= */

/* SPEC: [SAGE-MAP-02] [SAGE-MAP-03] [SAGE-MAP-04] [SAGE-MAP-05] [SAGE-MAP-07]
 * The spec's two tables, transcribed: the default Q map (b_q = 128, c_w = 4)
 * row by row and the default K map (b_k = 64) column by column, for the
 * first three blocks; and the counts of Algorithm 1 (32 Q scales per query
 * block, 4 K scales per key block). */
START_TEST(packing_tables)
{
    static const uint32_t qtab[4][8] = { { 0, 1, 2, 3, 4, 5, 6, 7 },
                                         { 8, 9, 10, 11, 12, 13, 14, 15 },
                                         { 16, 17, 18, 19, 20, 21, 22, 23 },
                                         { 24, 25, 26, 27, 28, 29, 30, 31 } };
    static const uint32_t ktab[8] = { 0, 0, 1, 1, 2, 2, 3, 3 };
    kvq_sage_qk q = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 4);
    kvq_sage_qk k = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8);
    kvq_sage_shape sh = mkshape(300, 64);
    REQ_EQ(q.block, 128);
    REQ_EQ(q.warps, 4);
    REQ_EQ(k.block, 64);
    REQ_EQ(kvq_sage_slots_per_block(&q), 32);
    REQ_EQ(kvq_sage_slots_per_block(&k), 4);
    REQ_EQ(kvq_sage_scale_count(&sh, &q), 3u * 32u);
    REQ_EQ(kvq_sage_scale_count(&sh, &k), 5u * 4u);
    for (uint32_t B = 0; B < 3; B++)
        for (uint32_t s = 0; s < 4; s++)
            for (uint32_t m = 0; m < 4; m++)
                for (uint32_t rr = 0; rr < 8; rr++) {
                    uint32_t n = 128 * B + 32 * s + qtab[m][rr];
                    REQ_EQ(kvq_sage_scale_slot(&q, n), 32 * B + 8 * s + rr);
                }
    for (uint32_t B = 0; B < 3; B++)
        for (uint32_t j = 0; j < 8; j++)
            for (uint32_t c = 0; c < 8; c++)
                REQ_EQ(kvq_sage_scale_slot(&k, 64 * B + 8 * j + c), 4 * B + ktab[c]);
    /* The printed Eq. 6 indices floor(n 8 c_w / b_q) and floor(n 4 / b_k) are
     * NOT the map [SAGE-MAP-07]: tokens 0 and 1 share nothing, 0 and 2 neither. */
    REQ_EQ((1u * 8u * 4u) / 128u, 0u);
    REQ(kvq_sage_scale_slot(&q, 1) != kvq_sage_scale_slot(&q, 0));
    REQ_EQ((2u * 4u) / 64u, 0u);
    REQ(kvq_sage_scale_slot(&k, 2) != kvq_sage_scale_slot(&k, 0));
}
END_TEST

/* SPEC: [SAGE-MAP-01] [SAGE-MAP-06] [SAGE-MAP-04] [SAGE-MAP-05]
 * Derived from the mma.m16n8k* accumulator layout: in every warp segment of
 * every valid per-thread Q configuration, each lane's accumulator rows of
 * both 16-row tiles share one Q scale; in every 8-column tile of a K block
 * each lane's columns share one K scale, and different lane groups get
 * different scales.  Both widths use the same map. */
START_TEST(packing_mma_layout)
{
    for (uint32_t bits = 4; bits <= 8; bits += 4)
        for (uint32_t cw = 1; cw <= 8; cw *= 2)
            for (uint32_t bq = 16 * cw; bq <= 256; bq *= 2) {
                kvq_sage_qk q = mkqk(KVQ_SAGE_ROLE_Q, bits, 0, bq, cw, 0);
                uint32_t w = bq / cw;
                REQ(kvq_sage_qk_ok(&q));
                for (uint32_t seg = 0; seg < 2 * cw; seg++)
                    for (uint32_t lane = 0; lane < 32; lane++) {
                        uint64_t s0 = kvq_sage_scale_slot(&q, seg * w + kvq_sage_mma_row(lane, 0));
                        for (uint32_t tile = 0; tile < w / 16; tile++)
                            for (uint32_t i = 0; i < 4; i++) {
                                uint32_t n = seg * w + 16 * tile + kvq_sage_mma_row(lane, i);
                                REQ_EQ(kvq_sage_scale_slot(&q, n), s0);
                            }
                        REQ_EQ(s0 % 8, lane / 4);
                    }
            }
    for (uint32_t bits = 4; bits <= 8; bits += 4)
        for (uint32_t bk = 32; bk <= 256; bk *= 2) {
            kvq_sage_qk k = mkqk(KVQ_SAGE_ROLE_K, bits, 0, bk, 1, 0);
            REQ(kvq_sage_qk_ok(&k));
            for (uint32_t B = 0; B < 3; B++)
                for (uint32_t j = 0; j < bk / 8; j++)
                    for (uint32_t lane = 0; lane < 32; lane++)
                        for (uint32_t i = 0; i < 4; i++) {
                            uint32_t n = B * bk + 8 * j + kvq_sage_mma_col(lane, i);
                            REQ_EQ(kvq_sage_scale_slot(&k, n), 4 * B + lane % 4);
                        }
        }
}
END_TEST

/* SPEC: [SAGE-MAP-03] [SAGE-L-03]
 * kvq_sage_slot_token is the inverse of kvq_sage_scale_slot: over every
 * valid configuration (role, granularity, block, warps), every token of the
 * padded range appears in exactly one slot, at the position the forward map
 * gives, tokens ascending within a slot. */
START_TEST(packing_inverse_map)
{
    uint32_t *seen = xmalloc(4096 * sizeof(uint32_t));
    for (uint32_t role = 0; role <= 1; role++)
        for (uint32_t gran = 0; gran <= 2; gran++)
            for (uint32_t cw = 1; cw <= (role ? 1u : 16u); cw *= 2)
                for (uint32_t b = role ? 32u : 16u * cw; b <= 1024; b *= 2) {
                    kvq_sage_qk q = mkqk(role, 4, gran, b, cw, 0);
                    kvq_sage_shape sh = mkshape(3 * b - 5, 64);
                    uint64_t ns = kvq_sage_scale_count(&sh, &q);
                    uint32_t size = kvq_sage_slot_size(&q), total = kvq_sage_blocks(sh.tokens, b) * b;
                    REQ(kvq_sage_qk_ok(&q));
                    REQ_EQ(ns * size, total);
                    memset(seen, 0, 4096 * sizeof(uint32_t));
                    for (uint64_t s = 0; s < ns; s++)
                        for (uint32_t k = 0; k < size; k++) {
                            uint64_t n = kvq_sage_slot_token(&q, s, k);
                            REQ(n < total);
                            REQ_EQ(kvq_sage_scale_slot(&q, (uint32_t)n), s);
                            if (k > 0) REQ(n > kvq_sage_slot_token(&q, s, k - 1));
                            seen[n]++;
                        }
                    for (uint32_t n = 0; n < total; n++) REQ_EQ(seen[n], 1);
                }
    free(seen);
}
END_TEST

/* SPEC: [SAGE-Q-06] [LAY-PACK-01] [SAGE-L-01]
 * Two's-complement fields: every code round-trips; element 2i (row-major
 * e = n*d + c) is the low
 * nibble of byte i; writing one element keeps its byte neighbour; sizes. */
START_TEST(packing_fields)
{
    uint8_t buf[4];
    kvq_sage_shape sh = mkshape(3, 64);
    for (uint32_t bits = 4; bits <= 8; bits += 4) {
        int32_t lo = -(1 << (bits - 1)), hi = (1 << (bits - 1)) - 1;
        for (int32_t k = lo; k <= hi; k++) {
            uint32_t f = kvq_sage_code_field(k, bits);
            REQ(f < (1u << bits));
            REQ_EQ(kvq_sage_code_value(f, bits), k);
            REQ_EQ(f, (uint32_t)(k < 0 ? k + (1 << bits) : k));
        }
        REQ_EQ(kvq_sage_code_bytes(&sh, bits), 3u * 64u * bits / 8u);
    }
    memset(buf, 0, sizeof buf);
    kvq_sage_pack_code(buf, 0, 4, -1);
    kvq_sage_pack_code(buf, 1, 4, 5);
    kvq_sage_pack_code(buf, 2, 4, -8);
    kvq_sage_pack_code(buf, 3, 4, 7);
    REQ_EQ(buf[0], 0x5F);                       /* low nibble: element 0 */
    REQ_EQ(buf[1], 0x78);
    REQ_EQ(kvq_sage_unpack_code(buf, 0, 4), -1);
    REQ_EQ(kvq_sage_unpack_code(buf, 1, 4), 5);
    REQ_EQ(kvq_sage_unpack_code(buf, 2, 4), -8);
    kvq_sage_pack_code(buf, 0, 4, 3);           /* neighbour kept */
    REQ_EQ(buf[0], 0x53);
    kvq_sage_pack_code(buf, 2, 8, -128);
    REQ_EQ(buf[2], 0x80);
    REQ_EQ(kvq_sage_unpack_code(buf, 2, 8), -128);
    REQ_EQ(kvq_sage_mean_rows(300, 128), 3);
    REQ_EQ(kvq_sage_mean_rows(300, 300), 1);
}
END_TEST

/* ========================================================================= */
/* random_vs_exact                                                           */
/* ========================================================================= */

/* Values of one tensor by a named distribution. */
enum { G_UNIFORM, G_OUTLIER_CH, G_WIDE, G_ZEROS, G_F16, G_COUNT };
static const char *const gen_name[G_COUNT] = { "uniform", "outlier_channel", "wide", "zeros", "f16" };

static void gen_tensor(kvq_rng *r, int dist, float *x, uint32_t N, uint32_t d)
{
    uint64_t ne = (uint64_t)N * d;
    float a = ldexpf(1.0f, (int)kvq_rng_below(r, 61) - 30);
    switch (dist) {
    case G_UNIFORM: {
        float off = rng_unit(r) * a * (float)kvq_rng_below(r, 3);
        for (uint64_t e = 0; e < ne; e++) x[e] = off + rng_unit(r) * a;
        break;
    }
    case G_OUTLIER_CH: { /* channel-wise biases and outliers, as the paper's Fig. 4 */
        uint32_t oc = kvq_rng_below(r, d), oc2 = kvq_rng_below(r, d);
        float bias = rng_unit(r) * a * 8.0f;
        for (uint64_t e = 0; e < ne; e++) {
            uint32_t c = (uint32_t)(e % d);
            x[e] = rng_unit(r) * a + (c == oc ? bias : 0.0f) + (c == oc2 ? a * 30.0f : 0.0f);
        }
        break;
    }
    case G_WIDE:
        for (uint64_t e = 0; e < ne; e++) {
            uint32_t ex = 127u - 60u + kvq_rng_below(r, 100); /* 2^-60 .. 2^39 */
            x[e] = f32((uint32_t)(kvq_rng_next(r) & 0x807FFFFFu) | ex << 23);
        }
        break;
    case G_ZEROS:
        /* now and then a tiny tensor: groups below the zero-range threshold */
        if (kvq_rng_below(r, 4) == 0) a = ldexpf(1.0f, -(int)(120u + kvq_rng_below(r, 20)));
        for (uint64_t e = 0; e < ne; e++) {
            uint32_t k = kvq_rng_below(r, 8);
            x[e] = k == 0 ? -0.0f : k < 4 ? 0.0f : k == 4 ? f32(kvq_rng_below(r, 1u << 20)) : rng_unit(r) * a;
        }
        /* now and then a whole token of zeros, so whole groups are zero */
        if (N > 1)
            for (uint32_t c = 0; c < d; c++) x[(uint64_t)kvq_rng_below(r, N) * d + c] = 0.0f;
        break;
    default: /* G_F16: binary16 values, the paper's inputs */
        for (uint64_t e = 0; e < ne; e++)
            x[e] = kvq_f16_from_bits((uint16_t)(kvq_rng_next(r) & 0xBBFFu));
        break;
    }
}

static kvq_sage_qk gen_qk(kvq_rng *r)
{
    uint32_t role = kvq_rng_below(r, 2), bits = kvq_rng_below(r, 2) ? 8u : 4u;
    kvq_sage_qk q = kvq_sage_qk_default(role, bits);
    q.gran = kvq_rng_below(r, 8) == 0 ? 1u + kvq_rng_below(r, 2) : KVQ_SAGE_GRAN_THREAD;
    q.rounding = kvq_rng_below(r, 3) == 0 ? KVQ_SAGE_ROUND_PUBLIC : KVQ_SAGE_ROUND_PAPER;
    if (kvq_rng_below(r, 3) == 0) {             /* a non-default block */
        if (role == KVQ_SAGE_ROLE_Q) {
            q.warps = 1u << kvq_rng_below(r, 3);
            q.block = 16u * q.warps << kvq_rng_below(r, 2);
        } else {
            q.block = 32u << kvq_rng_below(r, 2);
        }
    }
    return q;
}

/*
 * SPEC: [SAGE-Q-01] [SAGE-Q-02] [SAGE-Q-03] [SAGE-Q-04] [SAGE-Q-05] [SAGE-Q-06]
 * SPEC: [SAGE-Q-07] [SAGE-Q-08] [SAGE-MAP-03] [SAGE-MAP-06] [SAGE-L-03] [SAGE-FLAG-01]
 * SPEC: [SAGE-LEM-03] [SAGE-LEM-04] [SAGE-LEM-07] [POL-TIE-01] [POL-TIE-02] [POL-ARITH-01]
 * SPEC: [TEST-SEED-01] [TEST-CMP-01]
 * ref/fast against ref/exact on at least KVQ_RANDOM_CASES scale slots of
 * random Q/K tensors (ragged token counts, both widths, every granularity,
 * both roundings and tie rules, non-default blocks): status, packed codes,
 * scales and flags bit for bit, every lemma holding, and the dequantized
 * values bit for bit.
 */
START_TEST(random_qk)
{
    int dist = _i;
    uint64_t seed = g_seed ^ (0x51ull * (uint64_t)(dist + 1)), groups = 0, cases = 0, zero = 0;
    uint64_t quota = (g_cases + G_COUNT - 1) / G_COUNT;
    kvq_rng r = { seed };
    char why[256];
    while (groups < quota) {
        kvq_sage_qk qk = gen_qk(&r);
        uint32_t d = kvq_rng_below(&r, 4) ? 64u : 128u;
        uint32_t N = 1u + kvq_rng_below(&r, 2u * qk.block);
        kvq_sage_shape sh = mkshape(N, d);
        kvq_policy pol = mkpol(kvq_rng_below(&r, 2), kvq_rng_below(&r, 2), kvq_rng_below(&r, 2));
        float *x = xmalloc(kvq_sage_elems(&sh) * sizeof(float));
        qkrun b;
        gen_tensor(&r, dist, x, N, d);
        qk_init(&b, sh, qk, pol);
        if (qk_diff(&b, x, why, sizeof why)) {
            qk_dump(stderr, why, &b, x);
            ck_abort_msg("random_qk seed=0x%016" PRIx64 " (KVQ_SEED=0x%016" PRIx64
                         ") dist=%s case=%" PRIu64 ": %s (case dumped to stderr)",
                         seed, g_seed, gen_name[dist], cases, why);
        }
        groups += b.ns;
        zero += (b.ff & KVQ_FLAG_ZERO_SCALE) != 0;
        cases++;
        qk_free(&b);
        free(x);
    }
    printf("random_qk[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 " slots=%" PRIu64
           " zero_scale_cases=%" PRIu64 "\n", gen_name[dist], seed, cases, groups, zero);
    fflush(stdout);
}
END_TEST

/*
 * SPEC: [SAGE-SM-01] [SAGE-SM-02] [SAGE-SM-03] [SAGE-SM-04] [SAGE-SM-05] [SAGE-DS-01]
 * SPEC: [SAGE-LEM-01] [SAGE-LEM-02] [SAGE-L-04]
 * The preprocessing pipeline of the paper's Algorithm 1 on random heads:
 * smooth K (per head), smooth Q (per head, and per block as the public
 * variant), dS for either, smooth V; every output bit for bit against the
 * exact path, every lemma holding.  Groups counted: smoothing columns.
 */
START_TEST(random_smooth_ds)
{
    int dist = _i;
    uint64_t seed = g_seed ^ (0x5300ull * (uint64_t)(dist + 1)), cols = 0, cases = 0;
    uint64_t quota = (g_cases + G_COUNT - 1) / G_COUNT;
    kvq_rng r = { seed };
    char why[256];
    while (cols < quota) {
        uint32_t d = kvq_rng_below(&r, 2) ? 64u : 128u;
        uint32_t Nq = 1u + kvq_rng_below(&r, 160), Nk = 1u + kvq_rng_below(&r, 96);
        uint32_t bq = 16u << kvq_rng_below(&r, 4), per_block = kvq_rng_below(&r, 2);
        uint32_t seg = per_block ? bq : Nq, rows = kvq_sage_mean_rows(Nq, seg);
        kvq_sage_shape qsh = mkshape(Nq, d), ksh = mkshape(Nk, d);
        float *q = xmalloc(kvq_sage_elems(&qsh) * sizeof(float));
        float *k = xmalloc(kvq_sage_elems(&ksh) * sizeof(float));
        float *qs = xmalloc(kvq_sage_elems(&qsh) * sizeof(float));
        float *ks = xmalloc(kvq_sage_elems(&ksh) * sizeof(float));
        float *qm = xmalloc((uint64_t)rows * d * sizeof(float));
        float *km = xmalloc((uint64_t)d * sizeof(float));
        float *ds = xmalloc((uint64_t)rows * Nk * sizeof(float));
        float tau = ldexpf(1.0f + (float)kvq_rng_below(&r, 256) * 0x1p-8f, -(int)kvq_rng_below(&r, 8));
        kvq_status st;
        gen_tensor(&r, dist, q, Nq, d);
        gen_tensor(&r, dist, k, Nk, d);
        if (smooth_diff(qs, qm, q, qsh, seg, &st, why, sizeof why) ||
            smooth_diff(ks, km, k, ksh, Nk, &st, why, sizeof why) ||
            (st == KVQ_OK && ds_diff(ds, qm, ks, rows, ksh, tau, &st, why, sizeof why)))
            ck_abort_msg("random_smooth_ds seed=0x%016" PRIx64 " dist=%s case=%" PRIu64
                         " Nq=%u Nk=%u d=%u seg=%u tau=%a: %s", seed, gen_name[dist], cases, Nq,
                         Nk, d, seg, (double)tau, why);
        cols += (uint64_t)(rows + 1u) * d;
        cases++;
        free(q);
        free(k);
        free(qs);
        free(ks);
        free(qm);
        free(km);
        free(ds);
    }
    printf("random_smooth_ds[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 " columns=%" PRIu64 "\n",
           gen_name[dist], seed, cases, cols);
    fflush(stdout);
}
END_TEST

/*
 * SPEC: [SAGE-P-01] [SAGE-P-02] [SAGE-P-03] [SAGE-P-04] [SAGE-V-01] [SAGE-V-02]
 * SPEC: [SAGE-V-03] [SAGE-V-04] [SAGE-LEM-05] [SAGE-LEM-06] [POL-FP8-03] [SAGE-POL-01]
 * P~ tiles (values exp(-t) in [0, 1], a 1 per row as after the row maximum,
 * zeros) and V tensors (every distribution), both FP8 formats, both overflow
 * policies: codes, row sums, scales, flags bit for bit, every lemma holding.
 * Groups counted: P~ rows plus V channels.
 */
START_TEST(random_fp8)
{
    int dist = _i;
    uint64_t seed = g_seed ^ (0xF8ull * (uint64_t)(dist + 1)), groups = 0, cases = 0;
    uint64_t quota = (g_cases + G_COUNT - 1) / G_COUNT;
    kvq_rng r = { seed };
    char why[256];
    while (groups < quota) {
        uint32_t fmt = kvq_rng_below(&r, 4) == 0 ? KVQ_SAGE_FP8_E5M2 : KVQ_SAGE_FP8_E4M3;
        kvq_policy pol = mkpol(0, kvq_rng_below(&r, 2), 0);
        uint32_t rows = 1u + kvq_rng_below(&r, 16), cols = 1u + kvq_rng_below(&r, 128);
        uint32_t N = 1u + kvq_rng_below(&r, 96), d = kvq_rng_below(&r, 2) ? 64u : 128u;
        kvq_sage_shape sh = mkshape(N, d);
        float *p = xmalloc((uint64_t)rows * cols * sizeof(float)), *l = xmalloc(rows * sizeof(float));
        uint8_t *pc = xmalloc((uint64_t)rows * cols);
        float *v = xmalloc(kvq_sage_elems(&sh) * sizeof(float)), *vs = xmalloc(d * sizeof(float));
        uint8_t *vc = xmalloc(kvq_sage_elems(&sh));
        uint32_t f;
        kvq_status st;
        for (uint32_t i = 0; i < rows; i++) {
            for (uint32_t j = 0; j < cols; j++) {
                float t = (float)kvq_rng_below(&r, 1u << 12) * 0x1p-8f;
                uint32_t k = kvq_rng_below(&r, 16);
                p[(uint64_t)i * cols + j] = k == 0 ? 0.0f : k == 1 ? f32(kvq_rng_below(&r, 1u << 23))
                                                           : expf(-t);
            }
            p[(uint64_t)i * cols + kvq_rng_below(&r, cols)] = 1.0f;
        }
        gen_tensor(&r, dist, v, N, d);
        if (p_diff(pc, l, &f, p, rows, cols, fmt, &pol, &st, why, sizeof why) ||
            v_diff(vc, vs, &f, v, sh, fmt, &pol, &st, why, sizeof why))
            ck_abort_msg("random_fp8 seed=0x%016" PRIx64 " dist=%s case=%" PRIu64 " fmt=%u: %s",
                         seed, gen_name[dist], cases, fmt, why);
        groups += rows + d;
        cases++;
        free(p);
        free(l);
        free(pc);
        free(v);
        free(vs);
        free(vc);
    }
    printf("random_fp8[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 " rows+channels=%" PRIu64 "\n",
           gen_name[dist], seed, cases, groups);
    fflush(stdout);
}
END_TEST

/*
 * SPEC: [SAGE-MET-01] [SAGE-MET-02] [SAGE-MET-03] [SAGE-MET-04] [SAGE-LEM-08]
 * Accuracy metrics of a quantized-and-dequantized output against its
 * original (and of unrelated vectors, and of vectors with exact zeros):
 * the fast value bit for bit the exact pinned value, inside the spec's
 * interval around the exact enclosure of the real metric.
 */
START_TEST(random_metrics)
{
    int dist = _i;
    uint64_t seed = g_seed ^ (0x3e7ull * (uint64_t)(dist + 1)), cases = 0;
    uint64_t quota = 1 + g_cases / 200 / G_COUNT;
    kvq_rng r = { seed };
    char why[256];
    kvq_sage_accuracy fa;
    kvq_exact_sage_accuracy xa;
    while (cases < quota) {
        uint32_t N = 1u + kvq_rng_below(&r, 64), d = 64;
        kvq_sage_shape sh = mkshape(N, d);
        uint64_t n = kvq_sage_elems(&sh);
        float *o = xmalloc(n * sizeof(float)), *o2 = xmalloc(n * sizeof(float));
        kvq_status st;
        gen_tensor(&r, dist, o, N, d);
        switch (kvq_rng_below(&r, 4)) {
        case 0: { /* O' = dequantized INT4 per-thread quantization of O */
            qkrun b;
            qk_init(&b, sh, kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 4), kvq_policy_default);
            REQ_EQ(kvq_sage_quantize_qk(b.fc, b.fs, NULL, o, &sh, &b.qk, &b.pol), KVQ_OK);
            REQ_EQ(kvq_sage_dequantize_qk(o2, b.fc, b.fs, &sh, &b.qk), KVQ_OK);
            qk_free(&b);
            break;
        }
        case 1:
            gen_tensor(&r, dist, o2, N, d);
            break;
        case 2:
            for (uint64_t e = 0; e < n; e++) o2[e] = o[e] * (1.0f + rng_unit(&r) * 0x1p-6f);
            break;
        default:
            for (uint64_t e = 0; e < n; e++) o2[e] = kvq_rng_below(&r, 2) ? 0.0f : o[e];
            break;
        }
        if (met_diff(&fa, &xa, o, o2, n, &st, why, sizeof why))
            ck_abort_msg("random_metrics seed=0x%016" PRIx64 " dist=%s case=%" PRIu64 " n=%" PRIu64
                         ": %s", seed, gen_name[dist], cases, n, why);
        cases++;
        free(o);
        free(o2);
    }
    printf("random_metrics[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 "\n", gen_name[dist], seed,
           cases);
    fflush(stdout);
}
END_TEST

/* ========================================================================= */
/* bad_input: one test per row of [SAGE-BAD-01]                               */
/* ========================================================================= */

/* The outputs of every call, poisoned, and every call of both paths on the
 * same (possibly bad) arguments; "all" is the status each must return and
 * nothing may be written on an error. */
typedef struct allcalls {
    kvq_sage_shape sh;
    float x[2 * 64], xs[2 * 64], mean[2 * 64], ds[4], sc[64], y[2 * 64], l[2];
    uint8_t codes[2 * 64];
    kvq_sage_accuracy fa;
    kvq_exact_sage_accuracy xa;
    uint32_t flags, lem;
} allcalls;

static void ac_poison(allcalls *a)
{
    memset(a->xs, SENT8, sizeof a->xs);
    memset(a->mean, SENT8, sizeof a->mean);
    memset(a->ds, SENT8, sizeof a->ds);
    memset(a->sc, SENT8, sizeof a->sc);
    memset(a->y, SENT8, sizeof a->y);
    memset(a->l, SENT8, sizeof a->l);
    memset(a->codes, SENT8, sizeof a->codes);
    memset(&a->fa, SENT8, sizeof a->fa);
    memset(&a->xa, SENT8, sizeof a->xa);
    a->flags = a->lem = SENT32;
}

static int ac_untouched(const allcalls *a)
{
    return all_bytes(a->xs, sizeof a->xs, SENT8) && all_bytes(a->mean, sizeof a->mean, SENT8) &&
           all_bytes(a->ds, sizeof a->ds, SENT8) && all_bytes(a->sc, sizeof a->sc, SENT8) &&
           all_bytes(a->y, sizeof a->y, SENT8) && all_bytes(a->l, sizeof a->l, SENT8) &&
           all_bytes(a->codes, sizeof a->codes, SENT8) && all_bytes(&a->fa, sizeof a->fa, SENT8) &&
           all_bytes(&a->xa, sizeof a->xa, SENT8) && a->flags == SENT32 && a->lem == SENT32;
}

/* Require status want and untouched outputs from one call expression. */
#define BAD_CALL(a, want, call)                                                             \
    do {                                                                                    \
        kvq_status st_;                                                                     \
        ac_poison(a);                                                                       \
        st_ = (call);                                                                       \
        REQ_MSG(st_ == (want), "%s:%d: %s returned %s, expected %s", __FILE__, __LINE__,    \
                #call, kvq_status_name(st_), kvq_status_name(want));                        \
        REQ_MSG(ac_untouched(a), "%s:%d: %s wrote an output on error", __FILE__, __LINE__,  \
                #call);                                                                     \
    } while (0)

static void ac_init(allcalls *a)
{
    memset(a, 0, sizeof *a);
    a->sh = mkshape(2, 64);
    for (uint32_t e = 0; e < 2 * 64; e++) a->x[e] = (float)((int)(e % 7) - 3) * 0.125f;
}

/* SPEC: [SAGE-BAD-01] [API-ERR-01] [SAGE-SM-06] [SAGE-DS-02] [SAGE-Q-07] [SAGE-Q-08]
 * SPEC: [SAGE-P-04] [SAGE-V-04] [SAGE-MET-05]
 * Row 1: every required pointer NULL, in turn, in every call of both paths:
 * KVQ_E_PARAM and nothing written (flags may be NULL: checked to succeed). */
START_TEST(bad_row01_null)
{
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 4);
    const kvq_policy *pol = &kvq_policy_default;
    const kvq_status E = KVQ_E_PARAM;
    ac_init(a);
    BAD_CALL(a, E, kvq_sage_smooth(NULL, a->mean, a->x, &a->sh, 2));
    BAD_CALL(a, E, kvq_sage_smooth(a->xs, NULL, a->x, &a->sh, 2));
    BAD_CALL(a, E, kvq_sage_smooth(a->xs, a->mean, NULL, &a->sh, 2));
    BAD_CALL(a, E, kvq_sage_smooth(a->xs, a->mean, a->x, NULL, 2));
    BAD_CALL(a, E, kvq_exact_sage_smooth(NULL, a->mean, &a->lem, a->x, &a->sh, 2));
    BAD_CALL(a, E, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, NULL, 2));
    BAD_CALL(a, E, kvq_sage_delta_s(NULL, a->x, a->x, 1, &a->sh, 1.0f));
    BAD_CALL(a, E, kvq_sage_delta_s(a->ds, NULL, a->x, 1, &a->sh, 1.0f));
    BAD_CALL(a, E, kvq_sage_delta_s(a->ds, a->x, NULL, 1, &a->sh, 1.0f));
    BAD_CALL(a, E, kvq_sage_delta_s(a->ds, a->x, a->x, 1, NULL, 1.0f));
    BAD_CALL(a, E, kvq_exact_sage_delta_s(a->ds, &a->lem, NULL, a->x, 1, &a->sh, 1.0f));
    BAD_CALL(a, E, kvq_sage_quantize_qk(NULL, a->sc, &a->flags, a->x, &a->sh, &qk, pol));
    BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, NULL, &a->flags, a->x, &a->sh, &qk, pol));
    BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, NULL, &a->sh, &qk, pol));
    BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, NULL, &qk, pol));
    BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, &a->sh, NULL, pol));
    BAD_CALL(a, E, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, NULL, pol));
    BAD_CALL(a, E, kvq_exact_sage_quantize_qk(NULL, a->sc, &a->flags, &a->lem, a->x, &a->sh, &qk, pol));
    BAD_CALL(a, E, kvq_sage_dequantize_qk(NULL, a->codes, a->sc, &a->sh, &qk));
    BAD_CALL(a, E, kvq_sage_dequantize_qk(a->y, NULL, a->sc, &a->sh, &qk));
    BAD_CALL(a, E, kvq_sage_dequantize_qk(a->y, a->codes, NULL, &a->sh, &qk));
    BAD_CALL(a, E, kvq_exact_sage_dequantize_qk(a->y, a->codes, a->sc, &a->sh, NULL));
    BAD_CALL(a, E, kvq_sage_quantize_p(NULL, a->l, &a->flags, a->x, 2, 4, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_p(a->codes, NULL, &a->flags, a->x, 2, 4, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_p(a->codes, a->l, &a->flags, NULL, 2, 4, 0, pol));
    BAD_CALL(a, E, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, NULL, 2, 4, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_v(NULL, a->sc, &a->flags, a->x, &a->sh, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_v(a->codes, NULL, &a->flags, a->x, &a->sh, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, NULL, &a->sh, 0, pol));
    BAD_CALL(a, E, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, NULL, 0, pol));
    BAD_CALL(a, E, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, NULL, 0, pol));
    BAD_CALL(a, E, kvq_sage_metrics(NULL, a->x, a->x, 4));
    BAD_CALL(a, E, kvq_sage_metrics(&a->fa, NULL, a->x, 4));
    BAD_CALL(a, E, kvq_sage_metrics(&a->fa, a->x, NULL, 4));
    BAD_CALL(a, E, kvq_exact_sage_metrics(&a->xa, &a->lem, a->x, NULL, 4));
    /* flags and lemmas may be NULL */
    REQ_EQ(kvq_sage_quantize_qk(a->codes, a->sc, NULL, a->x, &a->sh, &qk, pol), KVQ_OK);
    REQ_EQ(kvq_exact_sage_quantize_qk(a->codes, a->sc, NULL, NULL, a->x, &a->sh, &qk, pol), KVQ_OK);
    REQ_EQ(kvq_sage_quantize_v(a->codes, a->sc, NULL, a->x, &a->sh, 0, pol), KVQ_OK);
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-POL-01] [POL-01] [SAGE-Q-07] [SAGE-P-04] [SAGE-V-04]
 * Row 2: a NULL policy or a field outside its values. */
START_TEST(bad_row02_policy)
{
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 8);
    kvq_policy bad[4] = { mkpol(2, 0, 0), mkpol(0, 2, 0), mkpol(0, 0, 2), mkpol(0xFFFFFFFFu, 0, 0) };
    ac_init(a);
    for (int i = 0; i < 5; i++) {
        const kvq_policy *pol = i < 4 ? &bad[i] : NULL;
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, &a->sh, &qk, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, &qk, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_p(a->codes, a->l, &a->flags, a->mean, 2, 4, 0, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, a->mean, 2, 4, 0, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, &a->sh, 0, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, 0, pol));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-MAP-02] [SAGE-Q-07] [SAGE-Q-08]
 * Row 3: invalid Q/K parameters (role, width, granularity, rounding, blocks
 * and warps outside [SAGE-MAP-02]), in the quantizer and the dequantizer. */
START_TEST(bad_row03_qk_params)
{
    allcalls A, *a = &A;
    const kvq_sage_qk bad[] = {
        mkqk(2, 4, 0, 128, 4, 0),  mkqk(0, 2, 0, 128, 4, 0),  mkqk(0, 16, 0, 128, 4, 0),
        mkqk(0, 4, 3, 128, 4, 0),  mkqk(0, 4, 0, 128, 4, 2),  mkqk(0, 4, 0, 128, 0, 0),
        mkqk(0, 4, 0, 128, 3, 0),  mkqk(0, 4, 0, 96, 4, 0),   mkqk(0, 4, 0, 2048, 4, 0),
        mkqk(0, 4, 0, 32, 4, 0),   mkqk(0, 4, 0, 512, 32, 0), mkqk(1, 4, 0, 64, 2, 0),
        mkqk(1, 4, 0, 48, 1, 0),   mkqk(1, 4, 0, 16, 1, 0),   mkqk(1, 8, 0, 2048, 1, 0),
    };
    ac_init(a);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        REQ(!kvq_sage_qk_ok(&bad[i]));
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, &a->sh, &bad[i], &kvq_policy_default));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, &bad[i], &kvq_policy_default));
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_dequantize_qk(a->y, a->codes, a->sc, &a->sh, &bad[i]));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_dequantize_qk(a->y, a->codes, a->sc, &a->sh, &bad[i]));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-P-03] [SAGE-P-04] [SAGE-V-04]
 * Row 4: an FP8 format other than E4M3 (0) and E5M2 (1). */
START_TEST(bad_row04_fmt)
{
    allcalls A, *a = &A;
    const kvq_policy *pol = &kvq_policy_default;
    ac_init(a);
    for (uint32_t fmt = 2; fmt < 5; fmt++) {
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_p(a->codes, a->l, &a->flags, a->mean, 2, 4, fmt, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, a->mean, 2, 4, fmt, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, &a->sh, fmt, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, fmt, pol));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-L-02]
 * Row 5: head dimensions other than 64 and 128. */
START_TEST(bad_row05_dim)
{
    static const uint32_t dims[] = { 0, 1, 32, 63, 65, 96, 127, 129, 192, 256 };
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8);
    const kvq_policy *pol = &kvq_policy_default;
    const kvq_status E = KVQ_E_SHAPE;
    ac_init(a);
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        kvq_sage_shape sh = mkshape(1, dims[i]);
        BAD_CALL(a, E, kvq_sage_smooth(a->xs, a->mean, a->x, &sh, 1));
        BAD_CALL(a, E, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, &sh, 1));
        BAD_CALL(a, E, kvq_sage_delta_s(a->ds, a->x, a->x, 1, &sh, 1.0f));
        BAD_CALL(a, E, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x, a->x, 1, &sh, 1.0f));
        BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, &sh, &qk, pol));
        BAD_CALL(a, E, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, &sh, &qk, pol));
        BAD_CALL(a, E, kvq_sage_dequantize_qk(a->y, a->codes, a->sc, &sh, &qk));
        BAD_CALL(a, E, kvq_exact_sage_dequantize_qk(a->y, a->codes, a->sc, &sh, &qk));
        BAD_CALL(a, E, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, &sh, 0, pol));
        BAD_CALL(a, E, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, &sh, 0, pol));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-L-02] [SAGE-SM-06] [SAGE-DS-02] [SAGE-P-04] [SAGE-MET-05]
 * Row 6: no tokens or too many; P~ rows/cols 0 or too large; smoothing
 * segment and dS rows out of range (KVQ_E_PARAM). */
START_TEST(bad_row06_counts)
{
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 4);
    const kvq_policy *pol = &kvq_policy_default;
    kvq_sage_shape z = mkshape(0, 64), big = mkshape(KVQ_SAGE_MAX_TOKENS + 1u, 64);
    ac_init(a);
    for (int i = 0; i < 2; i++) {
        const kvq_sage_shape *sh = i ? &big : &z;
        BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_smooth(a->xs, a->mean, a->x, sh, 1));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, sh, 1));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_delta_s(a->ds, a->x, a->x, 1, sh, 1.0f));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x, a->x, 1, sh, 1.0f));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, sh, &qk, pol));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, sh, &qk, pol));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_dequantize_qk(a->y, a->codes, a->sc, sh, &qk));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, sh, 0, pol));
        BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, sh, 0, pol));
    }
    BAD_CALL(a, KVQ_E_PARAM, kvq_sage_smooth(a->xs, a->mean, a->x, &a->sh, 0));
    BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, &a->sh, KVQ_SAGE_MAX_TOKENS + 1u));
    BAD_CALL(a, KVQ_E_PARAM, kvq_sage_delta_s(a->ds, a->x, a->x, 0, &a->sh, 1.0f));
    BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x, a->x, KVQ_SAGE_MAX_ROWCOL + 1u, &a->sh, 1.0f));
    {
        kvq_sage_shape many = mkshape(KVQ_SAGE_MAX_TOKENS, 64);    /* rows * N > 2^32 */
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_delta_s(a->ds, a->x, a->x, 257, &many, 1.0f));
    }
    BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_quantize_p(a->codes, a->l, &a->flags, a->mean, 0, 4, 0, pol));
    BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_quantize_p(a->codes, a->l, &a->flags, a->mean, 2, 0, 0, pol));
    BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, a->mean, 2, KVQ_SAGE_MAX_ROWCOL + 1u, 0, pol));
    BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_quantize_p(a->codes, a->l, &a->flags, a->mean, KVQ_SAGE_MAX_ROWCOL, 257, 0, pol));
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-L-03] [SAGE-SM-01] [SAGE-DS-01] [SAGE-V-01]
 * Row 7: token counts that are multiples of nothing succeed, with the
 * partial tiles of [SAGE-L-03], in every call (fast and exact agree). */
START_TEST(bad_row07_ragged_ok)
{
    kvq_sage_shape sh = mkshape(37, 64);
    float *x = xmalloc(37 * 64 * sizeof(float)), *xs = xmalloc(37 * 64 * sizeof(float));
    float m[2 * 64], ds[2 * 37], vs[64];
    uint8_t *vc = xmalloc(37 * 64);
    uint32_t f;
    kvq_status st;
    char why[256];
    kvq_policy pol = kvq_policy_default;
    kvq_rng r = { 37u };
    for (uint32_t e = 0; e < 37 * 64; e++) x[e] = rng_unit(&r);
    REQ_MSG(!smooth_diff(xs, m, x, sh, 32, &st, why, sizeof why), "%s", why);   /* 2 rows: 32 + 5 */
    REQ_EQ(st, KVQ_OK);
    REQ_MSG(!ds_diff(ds, m, xs, 2, sh, 0.125f, &st, why, sizeof why), "%s", why);
    REQ_EQ(st, KVQ_OK);
    REQ_MSG(!v_diff(vc, vs, &f, x, sh, 0, &pol, &st, why, sizeof why), "%s", why);
    REQ_EQ(st, KVQ_OK);
    for (uint32_t role = 0; role <= 1; role++) {
        qkrun b;
        qk_init(&b, sh, kvq_sage_qk_default(role, 8), pol);
        qk_ok(&b, xs, "bad_row07_ragged_ok");
        /* Q: tokens 32..36 fill slots 8..12 of block 0; 13..31 are empty (+0). */
        if (role == 0)
            for (uint64_t s = 13; s < b.ns; s++) REQ_EQ(bits32(b.fs[s]), 0u);
        qk_free(&b);
    }
    free(x);
    free(xs);
    free(vc);
}
END_TEST

/* SPEC: [SAGE-BAD-01] [POL-NF-01] [SAGE-L-04] [API-ERR-01]
 * Row 8: a NaN (quiet, signalling, negative) or an infinity at any position
 * of any input (and a non-finite tau): KVQ_E_NONFINITE, nothing written. */
START_TEST(bad_row08_nonfinite)
{
    static const uint32_t bad[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u, 0xFF800000u };
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 4);
    const kvq_policy *pol = &kvq_policy_default;
    const kvq_status E = KVQ_E_NONFINITE;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (uint32_t at = 0; at < 2 * 64; at += 37) {
            float p[8] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f };
            ac_init(a);
            a->x[at] = f32(bad[i]);
            p[at % 8] = f32(bad[i]);
            BAD_CALL(a, E, kvq_sage_smooth(a->xs, a->mean, a->x, &a->sh, 2));
            BAD_CALL(a, E, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, &a->sh, 2));
            BAD_CALL(a, E, kvq_sage_delta_s(a->ds, a->x + 64, a->x, 1, &a->sh, 1.0f));
            BAD_CALL(a, E, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x + 64, a->x, 1, &a->sh, 1.0f));
            BAD_CALL(a, E, kvq_sage_quantize_qk(a->codes, a->sc, &a->flags, a->x, &a->sh, &qk, pol));
            BAD_CALL(a, E, kvq_exact_sage_quantize_qk(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, &qk, pol));
            BAD_CALL(a, E, kvq_sage_quantize_p(a->codes, a->l, &a->flags, p, 2, 4, 0, pol));
            BAD_CALL(a, E, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, p, 2, 4, 0, pol));
            BAD_CALL(a, E, kvq_sage_quantize_v(a->codes, a->sc, &a->flags, a->x, &a->sh, 1, pol));
            BAD_CALL(a, E, kvq_exact_sage_quantize_v(a->codes, a->sc, &a->flags, &a->lem, a->x, &a->sh, 1, pol));
            BAD_CALL(a, E, kvq_sage_metrics(&a->fa, a->mean, a->x, 2 * 64));
            BAD_CALL(a, E, kvq_exact_sage_metrics(&a->xa, &a->lem, a->x, a->mean, 2 * 64));
            ac_init(a);
            BAD_CALL(a, E, kvq_sage_delta_s(a->ds, a->x, a->x, 1, &a->sh, f32(bad[i])));
            BAD_CALL(a, E, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x, a->x, 1, &a->sh, f32(bad[i])));
        }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-L-04] [SAGE-SM-06] [SAGE-DS-02] [SAGE-LEM-01] [SAGE-LEM-02]
 * Row 9: inputs outside the domain that keeps every step finite: smoothing
 * |x| > 2^48; dS |qm| or |ks| > 2^51; tau outside [2^-126, 2^16].  The
 * bounds themselves are accepted. */
START_TEST(bad_row09_domain)
{
    allcalls A, *a = &A;
    static const float taus[] = { 0.0f, -1.0f, 0x1p-127f, 0x1.000002p16f, 0x1p20f };
    const float above48 = 0x1.000002p48f, above51 = 0x1.000002p51f;
    ac_init(a);
    a->x[5] = -above48;
    BAD_CALL(a, KVQ_E_PARAM, kvq_sage_smooth(a->xs, a->mean, a->x, &a->sh, 2));
    BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_smooth(a->xs, a->mean, &a->lem, a->x, &a->sh, 2));
    a->x[5] = 0x1p48f;
    REQ_EQ(kvq_sage_smooth(a->xs, a->mean, a->x, &a->sh, 2), KVQ_OK);
    ac_init(a);
    a->x[70] = above51;
    {
        kvq_sage_shape one = mkshape(1, 64);
        float ds1[1], xds1[1];
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_delta_s(a->ds, a->x, a->x + 64, 1, &one, 1.0f)); /* ks */
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x + 64, a->x, 1, &one, 1.0f)); /* qm */
        a->x[70] = -0x1p51f;
        uint32_t lem = SENT32;
        REQ_EQ(kvq_sage_delta_s(ds1, a->x + 64, a->x + 64, 1, &one, 0x1p16f), KVQ_OK);
        REQ_EQ(kvq_exact_sage_delta_s(xds1, &lem, a->x + 64, a->x + 64, 1, &one, 0x1p16f), KVQ_OK);
        REQ(kvq_f32_same(ds1[0], xds1[0]) && lem == 0u && isfinite(ds1[0]));
    }
    ac_init(a);
    for (size_t i = 0; i < sizeof taus / sizeof taus[0]; i++) {
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_delta_s(a->ds, a->x, a->x, 1, &a->sh, taus[i]));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_delta_s(a->ds, &a->lem, a->x, a->x, 1, &a->sh, taus[i]));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-L-04] [SAGE-P-04]
 * Row 10: P~ values outside [0, 1] (-0 is accepted). */
START_TEST(bad_row10_p_range)
{
    static const float badp[] = { -0x1p-149f, -1.0f, 0x1.000002p0f, 2.0f, F32_MAX };
    allcalls A, *a = &A;
    const kvq_policy *pol = &kvq_policy_default;
    for (size_t i = 0; i < sizeof badp / sizeof badp[0]; i++) {
        float p[8] = { 0.0f, -0.0f, 1.0f, 0.5f, 0.25f, 0.0f, 0.0f, 0.0f };
        ac_init(a);
        p[3 + i % 4] = badp[i];
        BAD_CALL(a, KVQ_E_PARAM, kvq_sage_quantize_p(a->codes, a->l, &a->flags, p, 2, 4, 0, pol));
        BAD_CALL(a, KVQ_E_PARAM, kvq_exact_sage_quantize_p(a->codes, a->l, &a->flags, &a->lem, p, 2, 4, 1, pol));
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-Q-04] [SAGE-Q-05] [SAGE-FLAG-01] [SAGE-LEM-04]
 * Row 11: an all-zero group (+0, -0, mixed): paper -> scale +0, codes 0,
 * ZERO_SCALE; public -> scale 0x1.ad7f2ap-24, codes 0, no flag. */
START_TEST(bad_row11_zero_group)
{
    for (uint32_t bits = 4; bits <= 8; bits += 4)
        for (uint32_t role = 0; role <= 1; role++)
            for (uint32_t rnd = 0; rnd <= 1; rnd++) {
                kvq_sage_qk qk = kvq_sage_qk_default(role, bits);
                kvq_sage_shape sh = mkshape(role ? 64u : 128u, 64);
                float *x = xmalloc(kvq_sage_elems(&sh) * sizeof(float));
                qkrun b;
                qk.rounding = rnd;
                for (uint64_t e = 0; e < kvq_sage_elems(&sh); e++) x[e] = e % 3 ? 0.0f : -0.0f;
                qk_init(&b, sh, qk, kvq_policy_default);
                qk_ok(&b, x, "bad_row11_zero_group");
                for (uint64_t s = 0; s < b.ns; s++)
                    REQ_EQ(bits32(b.fs[s]), rnd ? bits32(KVQ_SAGE_PUBLIC_EPS) : 0u);
                REQ(all_bytes(b.fc, b.cb, 0));
                REQ_EQ(b.ff, rnd ? 0u : KVQ_FLAG_ZERO_SCALE);
                qk_free(&b);
                free(x);
            }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-Q-02] [SAGE-Q-04] [SAGE-Q-05] [POL-ZR-01] [SAGE-POL-01]
 * Row 12: a group of tiny or subnormal values (m / cmax < 2^-126): paper ->
 * zero-range rule; public -> scale RN32(RN32(m/cmax) + 1e-7), codes 0.
 * Subnormal inputs are read as they are and never flag SUBNORMAL. */
START_TEST(bad_row12_tiny_group)
{
    for (uint32_t rnd = 0; rnd <= 1; rnd++)
        for (uint32_t daz = 0; daz <= 1; daz++) {
            kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8);
            kvq_sage_shape sh = mkshape(64, 64);
            float *x = xmalloc(64 * 64 * sizeof(float));
            qkrun b;
            qk.rounding = rnd;
            for (uint32_t e = 0; e < 64 * 64; e++) x[e] = f32(1u + e % 1000u) * (e % 2 ? -1.0f : 1.0f);
            x[7] = 0x1p-121f;                            /* m / 127 < 2^-126 */
            qk_init(&b, sh, qk, mkpol(0, 0, daz));
            qk_ok(&b, x, "bad_row12_tiny_group");
            REQ_EQ(bits32(b.fs[0]), rnd ? bits32(KVQ_SAGE_PUBLIC_EPS) : 0u);
            REQ(all_bytes(b.fc, b.cb, 0));
            REQ_EQ(b.ff, rnd ? 0u : KVQ_FLAG_ZERO_SCALE);
            qk_free(&b);
            free(x);
        }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-V-01] [SAGE-V-03] [SAGE-FLAG-01]
 * Row 13: an all-zero V channel (with -0) and a channel whose m / F is below
 * 2^-126: scale +0, codes 0x00, ZERO_SCALE; other channels unaffected. */
START_TEST(bad_row13_zero_channel)
{
    kvq_sage_shape sh = mkshape(4, 64);
    float v[4 * 64], vs[64];
    uint8_t vc[4 * 64];
    uint32_t f;
    kvq_status st;
    char why[256];
    kvq_policy pol = kvq_policy_default;
    for (uint32_t fmt = 0; fmt <= 1; fmt++) {
        for (uint32_t e = 0; e < 4 * 64; e++) v[e] = (float)(e % 5) - 2.0f;
        for (uint32_t n = 0; n < 4; n++) {
            v[n * 64 + 3] = n % 2 ? -0.0f : 0.0f;
            v[n * 64 + 4] = -0x1p-120f;                  /* 2^-120 / 448 < 2^-126 */
        }
        REQ_MSG(!v_diff(vc, vs, &f, v, sh, fmt, &pol, &st, why, sizeof why), "%s", why);
        REQ_EQ(bits32(vs[3]), 0u);
        REQ_EQ(bits32(vs[4]), 0u);
        REQ(vs[0] > 0.0f);
        for (uint32_t n = 0; n < 4; n++) {
            REQ_EQ(vc[n * 64 + 3], 0x00);
            REQ_EQ(vc[n * 64 + 4], 0x00);
        }
        REQ_EQ(f, KVQ_FLAG_ZERO_SCALE);
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-P-01] [SAGE-P-02]
 * Row 14: a row of P~ that is all +0: codes 0x00, row sum +0. */
START_TEST(bad_row14_zero_prow)
{
    float p[2 * 8], l[2];
    uint8_t c[2 * 8];
    uint32_t f;
    kvq_status st;
    char why[256];
    kvq_policy pol = kvq_policy_default;
    for (uint32_t e = 0; e < 16; e++) p[e] = e < 8 ? 0.0f : 0.5f;
    REQ_MSG(!p_diff(c, l, &f, p, 2, 8, 0, &pol, &st, why, sizeof why), "%s", why);
    REQ(all_bytes(c, 8, 0));
    REQ_EQ(bits32(l[0]), 0u);
    REQ(kvq_f32_same(l[1], 4.0f));
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-POL-01] [SAGE-LEM-05] [SAGE-LEM-06] [POL-OV-02]
 * Row 15: the nan overflow policy gives the same codes as saturate (no
 * conversion can overflow), for P~ and V, both formats. */
START_TEST(bad_row15_nan_policy)
{
    kvq_sage_shape sh = mkshape(16, 128);
    float *v = xmalloc(16 * 128 * sizeof(float)), p[4 * 32], vs0[128], vs1[128], l0[4], l1[4];
    uint8_t *c0 = xmalloc(16 * 128), *c1 = xmalloc(16 * 128), pc0[4 * 32], pc1[4 * 32];
    uint32_t f0, f1;
    kvq_status st;
    char why[256];
    kvq_rng r = { 15u };
    kvq_policy sat = mkpol(0, KVQ_OVERFLOW_SATURATE, 0), nan = mkpol(0, KVQ_OVERFLOW_NAN, 0);
    for (uint32_t e = 0; e < 16 * 128; e++) v[e] = rng_unit(&r) * 1e6f;
    for (uint32_t e = 0; e < 4 * 32; e++) p[e] = kvq_rng_unit(&r);
    p[0] = 1.0f;
    for (uint32_t fmt = 0; fmt <= 1; fmt++) {
        REQ_MSG(!v_diff(c0, vs0, &f0, v, sh, fmt, &sat, &st, why, sizeof why), "%s", why);
        REQ_MSG(!v_diff(c1, vs1, &f1, v, sh, fmt, &nan, &st, why, sizeof why), "%s", why);
        REQ(memcmp(c0, c1, 16 * 128) == 0 && memcmp(vs0, vs1, sizeof vs0) == 0 && f0 == f1);
        REQ_MSG(!p_diff(pc0, l0, &f0, p, 4, 32, fmt, &sat, &st, why, sizeof why), "%s", why);
        REQ_MSG(!p_diff(pc1, l1, &f1, p, 4, 32, fmt, &nan, &st, why, sizeof why), "%s", why);
        REQ(memcmp(pc0, pc1, sizeof pc0) == 0 && memcmp(l0, l1, sizeof l0) == 0 && f0 == 0 && f1 == 0);
    }
    free(v);
    free(c0);
    free(c1);
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-Q-08]
 * Row 16: a stored scale that is NaN or infinite (KVQ_E_NONFINITE), negative
 * or a nonzero subnormal (KVQ_E_PARAM); -0 is accepted as zero. */
START_TEST(bad_row16_deq_scale)
{
    static const uint32_t nonfin[] = { 0x7FC00000u, 0x7F800000u, 0xFF800000u };
    static const float badsc[] = { -1.0f, -0x1p-126f, 0x1p-127f, 0x1p-149f };
    allcalls A, *a = &A;
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 4);
    ac_init(a);
    for (size_t i = 0; i < 3 + 4; i++) {
        float s[4] = { 1.0f, 1.0f, 1.0f, 1.0f };
        s[i % 4] = i < 3 ? f32(nonfin[i]) : badsc[i - 3];
        memset(a->codes, 0x11, sizeof a->codes);
        {
            kvq_status want = i < 3 ? KVQ_E_NONFINITE : KVQ_E_PARAM;
            float y[2 * 64];
            memset(y, SENT8, sizeof y);
            REQ_EQ(kvq_sage_dequantize_qk(y, a->codes, s, &a->sh, &qk), want);
            REQ(all_bytes(y, sizeof y, SENT8));
            REQ_EQ(kvq_exact_sage_dequantize_qk(y, a->codes, s, &a->sh, &qk), want);
            REQ(all_bytes(y, sizeof y, SENT8));
        }
    }
    {
        float s[4] = { -0.0f, 1.0f, 1.0f, 1.0f }, y[2 * 64], xy[2 * 64];
        REQ_EQ(kvq_sage_dequantize_qk(y, a->codes, s, &a->sh, &qk), KVQ_OK);
        REQ_EQ(kvq_exact_sage_dequantize_qk(xy, a->codes, s, &a->sh, &qk), KVQ_OK);
        REQ(memcmp(y, xy, sizeof y) == 0);
        REQ_EQ(bits32(y[0]), 0x80000000u);          /* code 1 * -0 = -0 */
    }
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-Q-08] [SAGE-LEM-07]
 * Row 17: a stored scale whose product with a code overflows binary32:
 * KVQ_E_RANGE, nothing written; the same scale with code 1 succeeds. */
START_TEST(bad_row17_deq_overflow)
{
    kvq_sage_shape sh = mkshape(64, 64);
    kvq_sage_qk qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8);
    uint8_t *codes = xmalloc(64 * 64);
    float s[4] = { F32_MAX, 1.0f, 1.0f, 1.0f }, *y = xmalloc(64 * 64 * sizeof(float));
    memset(codes, 0x01, 64 * 64);
    REQ_EQ(kvq_sage_dequantize_qk(y, codes, s, &sh, &qk), KVQ_OK);
    codes[64 * 8 + 1] = 127;                          /* token 8, slot 0 */
    memset(y, SENT8, 64 * 64 * sizeof(float));
    REQ_EQ(kvq_sage_dequantize_qk(y, codes, s, &sh, &qk), KVQ_E_RANGE);
    REQ(all_bytes(y, 64 * 64 * sizeof(float), SENT8));
    REQ_EQ(kvq_exact_sage_dequantize_qk(y, codes, s, &sh, &qk), KVQ_E_RANGE);
    REQ(all_bytes(y, 64 * 64 * sizeof(float), SENT8));
    free(codes);
    free(y);
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-MET-02] [SAGE-LEM-08]
 * Row 18: O or O' all zero (with -0): CosSim 1 (both) or 0 (one), rel L1 0
 * (both) or +inf (O zero, O' not); RMSE defined; fast = exact pinned, exact
 * values in the enclosures. */
START_TEST(bad_row18_metric_zero)
{
    float z[8] = { 0.0f, -0.0f, 0.0f, 0.0f, -0.0f, 0.0f, 0.0f, 0.0f };
    float v[8] = { 1.0f, -2.0f, 0.5f, 0.0f, 3.0f, 1.0f, -1.0f, 2.0f };
    kvq_sage_accuracy fa;
    kvq_exact_sage_accuracy xa;
    kvq_status st;
    char why[256];
    REQ_MSG(!met_diff(&fa, &xa, z, z, 8, &st, why, sizeof why), "%s", why);
    REQ(bits64(fa.cos_sim) == bits64(1.0) && bits64(fa.rel_l1) == bits64(0.0) && bits64(fa.rmse) == 0u);
    REQ_MSG(!met_diff(&fa, &xa, z, v, 8, &st, why, sizeof why), "%s", why);
    REQ(bits64(fa.cos_sim) == bits64(0.0) && isinf(fa.rel_l1) && fa.rel_l1 > 0);
    REQ_MSG(!met_diff(&fa, &xa, v, z, 8, &st, why, sizeof why), "%s", why);
    REQ(bits64(fa.cos_sim) == bits64(0.0) && bits64(fa.rel_l1) == bits64(1.0));
}
END_TEST

/* SPEC: [SAGE-BAD-01] [SAGE-MET-05]
 * Row 19: n = 0 (and n above 2^32): KVQ_E_SHAPE, nothing written. */
START_TEST(bad_row19_metric_empty)
{
    allcalls A, *a = &A;
    ac_init(a);
    BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_metrics(&a->fa, a->x, a->x, 0));
    BAD_CALL(a, KVQ_E_SHAPE, kvq_exact_sage_metrics(&a->xa, &a->lem, a->x, a->x, 0));
    BAD_CALL(a, KVQ_E_SHAPE, kvq_sage_metrics(&a->fa, a->x, a->x, ((uint64_t)1 << 32) + 1u));
}
END_TEST

static Suite *sage_suite(void)
{
    Suite *s = suite_create("sage");
    TCase *tc;

    tc = tcase_create("special_values");
    tcase_add_test(tc, special_max_gets_cmax);
    tcase_add_test(tc, special_public_quirk);
    tcase_add_test(tc, special_fp8_endpoints);
    tcase_add_test(tc, special_smooth_constant);
    tcase_add_test(tc, special_ds_decomposition);
    suite_add_tcase(s, tc);

    tc = tcase_create("ties");
    tcase_add_test(tc, ties_int_codes);
    tcase_add_test(tc, ties_fp8);
    tcase_add_test(tc, ties_near);
    suite_add_tcase(s, tc);

    tc = tcase_create("degenerate");
    tcase_set_timeout(tc, 60); /* about 2 s under ASan+UBSan: Check's default 4 s is too close */
    tcase_add_test(tc, degenerate_ragged_equals_padded);
    tcase_add_test(tc, degenerate_scale_boundary);
    tcase_add_test(tc, degenerate_single_token);
    suite_add_tcase(s, tc);

    tc = tcase_create("packing");
    tcase_add_test(tc, packing_tables);
    tcase_add_test(tc, packing_mma_layout);
    tcase_add_test(tc, packing_inverse_map);
    tcase_add_test(tc, packing_fields);
    suite_add_tcase(s, tc);

    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, random_qk, 0, G_COUNT);
    tcase_add_loop_test(tc, random_smooth_ds, 0, G_COUNT);
    tcase_add_loop_test(tc, random_fp8, 0, G_COUNT);
    tcase_add_loop_test(tc, random_metrics, 0, G_COUNT);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_add_test(tc, bad_row01_null);
    tcase_add_test(tc, bad_row02_policy);
    tcase_add_test(tc, bad_row03_qk_params);
    tcase_add_test(tc, bad_row04_fmt);
    tcase_add_test(tc, bad_row05_dim);
    tcase_add_test(tc, bad_row06_counts);
    tcase_add_test(tc, bad_row07_ragged_ok);
    tcase_add_test(tc, bad_row08_nonfinite);
    tcase_add_test(tc, bad_row09_domain);
    tcase_add_test(tc, bad_row10_p_range);
    tcase_add_test(tc, bad_row11_zero_group);
    tcase_add_test(tc, bad_row12_tiny_group);
    tcase_add_test(tc, bad_row13_zero_channel);
    tcase_add_test(tc, bad_row14_zero_prow);
    tcase_add_test(tc, bad_row15_nan_policy);
    tcase_add_test(tc, bad_row16_deq_scale);
    tcase_add_test(tc, bad_row17_deq_overflow);
    tcase_add_test(tc, bad_row18_metric_zero);
    tcase_add_test(tc, bad_row19_metric_empty);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return kvq_check_main("check_sage", sage_suite(), &g_seed, &g_cases);
}
