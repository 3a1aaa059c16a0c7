/*
 * check_pkv.c -- Check suite of the PKV family (spec/pkv.md, spec/bounds/pkv.md).
 *
 * Rules this file keeps [TEST-CMP-01]:
 *  - the fast path (ref/fast/pkv.c) is compared with the exact path
 *    (ref/exact/pkv.c), never with itself: floats bitwise (kvq_f32_same), or
 *    within the bound the exact path computes; discrete decisions (indices, the
 *    V threshold) judged by the exact path's near-tie rules;
 *  - k-means is judged by its properties [PKV-KM-06], not one answer;
 *  - random cases come from a fixed seed, KVQ_SEED overrides it,
 *    KVQ_RANDOM_CASES scales the random groups; a failure prints the seed.
 *
 * Groups: special_values, ties, pruning, degenerate, packing, updates,
 * random_vs_exact, threshold, bad_input.  Each test names its requirements in a SPEC: comment.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_exact_pkv.h"
#include "kvq_pkv.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d706b7600ull /* "kvq-pkv" */
#define CASES_DEFAULT 100000u               /* KVQ_RANDOM_CASES: random blocks = cases / 2500 */

#define SENT8  0xA5u
#define SENT16 0xA5A5u

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;

/* Random blocks per random test: 40 by default, 8 under the sanitizers'
 * KVQ_RANDOM_CASES=20000, at least 1. */
static uint64_t nblocks(void)
{
    return g_cases / 2500u > 0u ? g_cases / 2500u : 1u;
}

/* ---- helpers ------------------------------------------------------------ */

/* A value in [-a, a] on a grid of 2^-12 a (exact in binary32). */
static float rnd_val(kvq_rng *r, float a)
{
    int32_t k = (int32_t)kvq_rng_below(r, 8193u) - 4096;
    return ldexpf((float)k, -12) * a;
}

/* Tokens clustered around `nc` random centres (a KV-like distribution with
 * per-channel outliers), row-major [T][d]. */
static void fill_clustered(float *x, uint32_t T, uint32_t d, uint32_t nc, kvq_rng *r)
{
    float *cen = xmalloc((size_t)nc * d * sizeof *cen);
    for (uint32_t j = 0; j < nc; j++)
        for (uint32_t i = 0; i < d; i++)
            cen[j * d + i] = rnd_val(r, (i % 7u == 3u) ? 8.0f : 1.0f);
    for (uint32_t t = 0; t < T; t++) {
        uint32_t j = kvq_rng_below(r, nc);
        for (uint32_t i = 0; i < d; i++)
            x[(size_t)t * d + i] = cen[j * d + i] + rnd_val(r, 0.125f);
    }
    free(cen);
}

static kvq_pkv_params params(uint32_t bits, uint32_t G)
{
    kvq_pkv_params p = kvq_pkv_params_default(bits);
    p.group = G;
    p.residual = G;
    p.window = G;
    return p;
}

/* Fast quantize then dequantize of a block, compared with the exact path given
 * the fast indices [PKV-Q-04]; the indices and V decisions judged [PKV-A-04]
 * [PKV-V-04]; the reconstruction within [PKV-B-01].  Returns the number of
 * ambiguous tokens. */
static uint32_t block_vs_exact(const float *x, uint32_t kind, uint32_t T, uint32_t d,
                               const float *bank, uint32_t npat, const kvq_pkv_params *p,
                               const kvq_policy *pol, uint64_t seed)
{
    kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, T, d);
    uint64_t n = (uint64_t)T * d, ng = kvq_kivi_groups(&ks), nb = kvq_kivi_code_bytes(&ks);
    uint8_t *codes = xmalloc(nb), *xc = xmalloc(nb), *cr = xmalloc(n), *ca = xmalloc(n);
    float *scale = xmalloc(ng * 4), *zero = xmalloc(ng * 4), *resid = xmalloc(n * 4);
    float *y = xmalloc(n * 4), *xs = xmalloc(ng * 4), *xz = xmalloc(ng * 4);
    float *xr = xmalloc(n * 4), *xd = xmalloc(n * 4), *kd = xmalloc(n * 4);
    uint16_t *index = xmalloc(T * 2u);
    uint32_t flags = 0, amb = 0, dist;
    float thr = 0.0f;
    kvq_exact_pkv_out xo;
    kvq_status st;
    uint64_t viol;
    double worst;
    st = kvq_pkv_quantize(codes, scale, zero, index, resid, &flags, x, kind, T, d, bank, npat, p,
                          pol);
    REQ_MSG(st == KVQ_OK, "quantize: %s (seed 0x%016" PRIx64 ")", kvq_status_name(st), seed);
    dist = kind == KVQ_PKV_KEY_PREFILL ? p->key_dist : KVQ_PKV_DIST_MINMAX;
    mpfr_t blo, bhi;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, blo, bhi, (mpfr_ptr)0);
    if (kind == KVQ_PKV_VALUE) {
        REQ(kvq_pkv_rho_star(&thr, d, p->alpha) == KVQ_OK);
        REQ(kvq_exact_pkv_rho_bracket(blo, bhi, d, p->alpha) == KVQ_OK);
    }
    for (uint32_t t = 0; t < T; t++) {           /* SPEC: [PKV-A-02] [PKV-A-04] [PKV-V-04] */
        kvq_exact_pkv_assign_out a;
        const float *xt = x + (size_t)t * d;
        uint32_t j = index[t];
        if (j == KVQ_PKV_NO_PATTERN) {
            REQ_MSG(kind == KVQ_PKV_VALUE && p->v_threshold, "raw key token %u", t);
            j = kvq_pkv_nearest(xt, bank, npat, d, dist);
        }
        kvq_exact_pkv_assign(&a, xt, bank, npat, d, dist, j);
        REQ_MSG(a.accepted, "token %u: index %u not accepted (real %u) seed 0x%016" PRIx64, t, j,
                a.real, seed);
        REQ_MSG(a.pinned == j, "token %u: index %u, pinned %u, seed 0x%016" PRIx64, t, j,
                a.pinned, seed);
        if (a.ambiguous) amb++;
        if (kind == KVQ_PKV_VALUE && p->v_threshold) {
            int vamb, use = kvq_exact_pkv_v_decide(&vamb, xt, bank + (size_t)j * d, d, blo, bhi);
            int fuse = index[t] != KVQ_PKV_NO_PATTERN;
            REQ_MSG(vamb || use == fuse, "token %u: V decision %d, exact %d, seed 0x%016" PRIx64,
                    t, fuse, use, seed);
            if (vamb) amb++;
        }
    }
    xo.kivi.codes = xc; xo.kivi.scale = xs; xo.kivi.zero = xz; xo.kivi.deq = kd;
    xo.kivi.code_real = cr; xo.kivi.code_alt = ca; xo.resid = xr; xo.deq = xd;
    st = kvq_exact_pkv_quantize(&xo, x, index, kind, T, d, bank, npat, p, pol);
    REQ_MSG(st == KVQ_OK, "exact quantize: %s", kvq_status_name(st));
    for (uint64_t e = 0; e < n; e++)             /* SPEC: [PKV-Q-02] */
        REQ_MSG(kvq_f32_same(resid[e], xr[e]), "resid[%" PRIu64 "] %a != %a seed 0x%016" PRIx64,
                e, resid[e], xr[e], seed);
    REQ_MSG(memcmp(codes, xc, nb) == 0, "codes differ, seed 0x%016" PRIx64, seed); /* [PKV-Q-03] */
    for (uint64_t g = 0; g < ng; g++)
        REQ_MSG(kvq_f32_same(scale[g], xs[g]) && kvq_f32_same(zero[g], xz[g]),
                "metadata of group %" PRIu64 " differs, seed 0x%016" PRIx64, g, seed);
    REQ_EQ(flags, xo.kivi.flags & ~KVQ_FLAG_AMBIGUOUS);
    st = kvq_pkv_dequantize(y, NULL, codes, scale, zero, index, kind, T, d, bank, npat, p, pol);
    REQ_MSG(st == KVQ_OK, "dequantize: %s", kvq_status_name(st));
    for (uint64_t e = 0; e < n; e++)             /* SPEC: [PKV-D-01] */
        REQ_MSG(kvq_f32_same(y[e], xd[e]), "y[%" PRIu64 "] %a != exact %a seed 0x%016" PRIx64, e,
                y[e], xd[e], seed);
    if (p->meta == KVQ_META_F32) {               /* SPEC: [PKV-B-01] */
        REQ(kvq_exact_pkv_err_check(&viol, &worst, x, y, index, kind, T, d, bank, npat, p) ==
            KVQ_OK);
        REQ_MSG(viol == 0, "%" PRIu64 " elements past the bound (worst %g) seed 0x%016" PRIx64,
                viol, worst, seed);
    }
    mpfr_clears(blo, bhi, (mpfr_ptr)0);
    free(codes); free(xc); free(cr); free(ca); free(scale); free(zero); free(resid); free(y);
    free(xs); free(xz); free(xr); free(xd); free(kd); free(index);
    return amb;
}

/* ========================================================================= */
/* special_values                                                            */
/* ========================================================================= */

/* SPEC: [PKV-U-02] the Chebyshev centre is one rounding of the exact midpoint,
 * signed zeros, subnormals and the domain's edges included. */
START_TEST(special_chebyshev_vs_exact)
{
    static const float sp[] = { 0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1.fffffcp-127f, 0x1p-126f,
                                -0x1p-125f, 0x1p48f, -0x1p48f, 0x1.fffffep47f, 1.0f, -1.0f,
                                0x1.000002p0f, 3.0f, 0x1p-24f, -0x1.8p-148f };
    const uint32_t ns = sizeof sp / sizeof sp[0];
    kvq_rng r = { g_seed ^ 1u };
    float x[6 * 16], cf[16], ce[16];
    for (uint32_t k = 0; k < 4000u; k++) {
        for (uint32_t e = 0; e < 6u * 16u; e++)
            x[e] = kvq_rng_below(&r, 2u) ? sp[kvq_rng_below(&r, ns)] : rnd_val(&r, 4.0f);
        REQ(kvq_pkv_chebyshev(cf, x, 6, 16) == KVQ_OK);
        REQ(kvq_exact_pkv_chebyshev(ce, x, 6, 16) == KVQ_OK);
        for (uint32_t c = 0; c < 16u; c++)
            REQ_MSG(kvq_f32_same(cf[c], ce[c]), "centre %u: %a != %a (case %u, seed 0x%016" PRIx64
                    ")", c, cf[c], ce[c], k, g_seed);
    }
}
END_TEST

/* SPEC: [PKV-A-01] [PKV-A-02] the pinned min-max distance and its argmin on
 * special values: the fast index is the exact path's pinned index and is
 * accepted at the bounded level. */
START_TEST(special_minmax_vs_exact)
{
    static const float sp[] = { 0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p48f, -0x1p48f,
                                0x1p-126f, 1.0f, -1.0f, 0x1.000002p0f, 0x1p24f, 0x1.fffffep23f };
    const uint32_t ns = sizeof sp / sizeof sp[0];
    kvq_rng r = { g_seed ^ 2u };
    float x[8], bank[6 * 8];
    for (uint32_t k = 0; k < 20000u; k++) {
        kvq_exact_pkv_assign_out a;
        uint32_t j;
        for (uint32_t i = 0; i < 8u; i++) x[i] = sp[kvq_rng_below(&r, ns)];
        for (uint32_t i = 0; i < 48u; i++)
            bank[i] = kvq_rng_below(&r, 3u) ? sp[kvq_rng_below(&r, ns)] : rnd_val(&r, 2.0f);
        j = kvq_pkv_nearest(x, bank, 6, 8, KVQ_PKV_DIST_MINMAX);
        kvq_exact_pkv_assign(&a, x, bank, 6, 8, KVQ_PKV_DIST_MINMAX, j);
        REQ_MSG(a.pinned == j && a.accepted, "case %u: fast %u pinned %u real %u", k, j, a.pinned,
                a.real);
        j = kvq_pkv_nearest(x, bank, 6, 8, KVQ_PKV_DIST_EUCLID);
        kvq_exact_pkv_assign(&a, x, bank, 6, 8, KVQ_PKV_DIST_EUCLID, j);
        REQ_MSG(a.pinned == j && a.accepted, "euclid case %u: fast %u pinned %u real %u", k, j,
                a.pinned, a.real);
    }
}
END_TEST

/* ========================================================================= */
/* ties                                                                      */
/* ========================================================================= */

/* SPEC: [PKV-A-02] d_mm(x, m + k) = d_mm(x, m) for a constant shift k (exact
 * here): patterns differing by a constant tie exactly, and the lowest index
 * wins -- at every position of the pair and with the pair in both orders. */
START_TEST(ties_shifted_patterns_lowest_index)
{
    kvq_rng r = { g_seed ^ 3u };
    float x[16], bank[5 * 16];
    for (uint32_t k = 0; k < 2000u; k++) {
        uint32_t lo = kvq_rng_below(&r, 4u), hi = lo + 1u + kvq_rng_below(&r, 4u - lo);
        float shift = (float)(int)(kvq_rng_below(&r, 7u)) - 3.0f;
        kvq_exact_pkv_assign_out a;
        uint32_t j;
        for (uint32_t i = 0; i < 16u; i++) x[i] = rnd_val(&r, 1.0f);
        for (uint32_t i = 0; i < 80u; i++) bank[i] = rnd_val(&r, 1.0f) + 4.0f; /* far away */
        for (uint32_t i = 0; i < 16u; i++) {
            bank[lo * 16u + i] = x[i] + rnd_val(&r, 0.0625f);
            bank[hi * 16u + i] = bank[lo * 16u + i] + shift; /* exact: small grid values */
        }
        j = kvq_pkv_nearest(x, bank, 5, 16, KVQ_PKV_DIST_MINMAX);
        REQ_MSG(j == lo, "tie between %u and %u gave %u", lo, hi, j);
        kvq_exact_pkv_assign(&a, x, bank, 5, 16, KVQ_PKV_DIST_MINMAX, j);
        REQ(a.pinned == lo && a.real == lo && a.ambiguous && a.accepted);
    }
}
END_TEST

/* SPEC: [PKV-KM-02] Euclidean ties (a token midway between two equal-distance
 * centroids) go to the lowest index in the k-means assignment. */
START_TEST(ties_euclid_lowest_index)
{
    float x[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    float bank[3 * 4] = { 5, 5, 5, 5,   1, 0, 0, 0,   0, 0, -1, 0 };
    REQ_EQ(kvq_pkv_nearest(x, bank, 3, 4, KVQ_PKV_DIST_EUCLID), 1);
    bank[4] = 0.0f; bank[5] = -1.0f;               /* still distance 1, still index 1 */
    REQ_EQ(kvq_pkv_nearest(x, bank, 3, 4, KVQ_PKV_DIST_EUCLID), 1);
    bank[0] = 0.0f; bank[1] = 0.0f; bank[2] = 0.0f; bank[3] = 1.0f; /* now all three tie */
    REQ_EQ(kvq_pkv_nearest(x, bank, 3, 4, KVQ_PKV_DIST_EUCLID), 0);
}
END_TEST

/* ========================================================================= */
/* pruning: the device argmin's lower bounds and its rule [PKV-DEV-05]       */
/* ========================================================================= */

/* The lower bounds of bounds/pkv.md §5 on the pinned min-max distance, as
 * [PKV-DEV-05] states them (binary32, -ffp-contract=off): the pinned distance
 * over the channel subset S (the probe channels k d / 8, k < 8, d a multiple of
 * 8, and the lowest channels of x's and m's largest and least values), and the
 * range bound, which the subset bound dominates. */
static uint32_t prune_argext(const float *v, uint32_t d, int sign)
{
    uint32_t c = 0;
    for (uint32_t i = 1; i < d; i++)
        if (sign > 0 ? v[i] > v[c] : v[i] < v[c]) c = i;
    return c;
}

static float prune_subset(const float *x, const float *m, uint32_t d)
{
    const uint32_t ch[4] = { prune_argext(x, d, 1), prune_argext(x, d, -1), prune_argext(m, d, 1),
                             prune_argext(m, d, -1) };
    float hi = x[0] - m[0], lo = hi;
    for (uint32_t k = 1; k < 12u; k++) {
        const uint32_t i = k < 8u ? k * (d / 8u) : ch[k - 8u];
        const float t = x[i] - m[i];
        hi = fmaxf(hi, t);
        lo = fminf(lo, t);
    }
    return hi - lo;
}

static float prune_range(const float *x, const float *m, uint32_t d)
{
    float xmax = x[0], xmin = x[0], mmax = m[0], mmin = m[0];
    for (uint32_t i = 1; i < d; i++) {
        xmax = fmaxf(xmax, x[i]);
        xmin = fminf(xmin, x[i]);
        mmax = fmaxf(mmax, m[i]);
        mmin = fminf(mmin, m[i]);
    }
    return fabsf((xmax - mmax) - (xmin - mmin));
}

/* The pruned argmin of [PKV-DEV-05] over npat <= 32 patterns: the least (bound,
 * index) first, then the survivors (bound <= best, or < best when `eq_prunes`:
 * the wrong rule) in ascending index, the lexicographic least (distance, index)
 * kept.  *visits: the distances computed. */
static uint32_t prune_argmin(const float *x, const float *bank, uint32_t npat, uint32_t d,
                             int eq_prunes, uint32_t *visits)
{
    float b[32];
    uint32_t j0 = 0;
    for (uint32_t j = 0; j < npat; j++) {
        const float *m = bank + (uint64_t)j * d;
        b[j] = prune_subset(x, m, d);
        if (b[j] < b[j0]) j0 = j;
    }
    float bd = kvq_pkv_dist_minmax(x, bank + (uint64_t)j0 * d, d);
    uint32_t bj = j0, n = 1, cand = 0;
    for (uint32_t j = 0; j < npat; j++)
        if (j != j0 && (eq_prunes ? b[j] < bd : !(b[j] > bd))) cand |= 1u << j;
    while (cand != 0u) {
        uint32_t j = 0;
        while (!(cand >> j & 1u)) j++;
        cand &= ~(1u << j);
        const float dj = kvq_pkv_dist_minmax(x, bank + (uint64_t)j * d, d);
        n++;
        if (dj < bd || (dj == bd && j < bj)) {
            bd = dj;
            bj = j;
        }
        for (uint32_t k = 0; k < npat; k++)
            if (eq_prunes ? !(b[k] < bd) : b[k] > bd) cand &= ~(1u << k);
    }
    *visits = n;
    return bj;
}

/* SPEC: [PKV-DEV-05] [PKV-A-01] both lower bounds are at most the pinned distance
 * (bounds/pkv.md §5: monotone rounding) and the subset bound is at least the
 * range bound, on random values of every scale and on
 * special values (signed zeros, subnormals, 2^48, values one ulp apart); the
 * pinned distance is the fast path's (special_minmax_vs_exact holds it to the
 * exact path). */
START_TEST(pruning_bounds_sound)
{
    static const float sp[] = { 0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p48f, -0x1p48f,
                                0x1p-126f, 1.0f, -1.0f, 0x1.000002p0f, 0x1p24f, 0x1.fffffep23f,
                                0x1.fffffep47f, -0x1.000002p-126f };
    const uint32_t ns = sizeof sp / sizeof sp[0];
    kvq_rng r = { g_seed ^ 0x9a11u };
    float x[128], m[128];
    uint32_t tight = 0;
    for (uint32_t k = 0; k < 40000u; k++) {
        const uint32_t d = 8u << kvq_rng_below(&r, 5u); /* 8 .. 128 */
        const int mode = (int)kvq_rng_below(&r, 3u);
        const float sc = ldexpf(1.0f, (int)kvq_rng_below(&r, 80u) - 60);
        for (uint32_t i = 0; i < d; i++) {
            x[i] = mode == 0 ? sp[kvq_rng_below(&r, ns)] : rnd_val(&r, sc);
            m[i] = mode == 0 ? sp[kvq_rng_below(&r, ns)]
                 : mode == 1 ? rnd_val(&r, sc)
                             : x[i] + rnd_val(&r, sc * 0x1p-20f); /* near: ulp-scale */
        }
        const float dist = kvq_pkv_dist_minmax(x, m, d);
        const float bp = prune_subset(x, m, d), br = prune_range(x, m, d);
        REQ_MSG(bp <= dist && br <= dist, "case %u d %u mode %d: subset %a range %a > distance %a",
                k, d, mode, (double)bp, (double)br, (double)dist);
        REQ_MSG(br <= bp, "case %u d %u mode %d: range %a above subset %a", k, d, mode, (double)br,
                (double)bp);
        tight += bp == dist;
    }
    /* the bounds are attained often (so a test of the equality rule has cases) */
    REQ_MSG(tight > 1000u, "only %u of 40000 bounds equal the distance", tight);
}
END_TEST

/* Inputs of pruning_argmin_exact: mode 0 random, 1 clustered, 2 ties (x = b,
 * m_j = b with +h and -h on two channels, half the time on probe channels, and
 * duplicates), 3 near ties (h and h (1 + 2^-19)). */
static void prune_fill(float *x, float *bank, uint32_t npat, uint32_t d, int mode, kvq_rng *r)
{
    float b[128];
    const float scl = mode == 3 ? 0x1p-10f : 1.0f, h0 = mode == 3 ? 0x1p-4f : 0.25f;
    for (uint32_t i = 0; i < d; i++) b[i] = (float)((int)kvq_rng_below(r, 33u) - 16) * 0.125f * scl;
    for (uint32_t j = 0; j < npat; j++) {
        float *m = bank + (uint64_t)j * d;
        if (mode < 2) {
            for (uint32_t i = 0; i < d; i++)
                m[i] = mode == 0 ? rnd_val(r, 1.0f) : (float)((int)kvq_rng_below(r, 33u) - 16) * 0.125f;
            continue;
        }
        if (j > 0 && kvq_rng_below(r, 100u) < 15u) {
            memcpy(m, bank + (uint64_t)kvq_rng_below(r, j) * d, d * sizeof *m);
            continue;
        }
        float h = kvq_rng_below(r, 100u) < 70u ? h0 : 2.0f * h0;
        if (mode == 3 && kvq_rng_below(r, 2u)) h *= 1.0f + 0x1p-19f;
        const uint32_t pc = kvq_rng_below(r, 2u) ? (d / 8u) * kvq_rng_below(r, 8u) : kvq_rng_below(r, d);
        uint32_t qc = kvq_rng_below(r, 2u) ? (d / 8u) * kvq_rng_below(r, 8u) : kvq_rng_below(r, d);
        if (qc == pc) qc = (pc + d / 8u) % d;
        memcpy(m, b, d * sizeof *m);
        m[pc] = b[pc] + h;
        m[qc] = b[qc] - h;
    }
    if (mode == 0) {
        for (uint32_t i = 0; i < d; i++) x[i] = rnd_val(r, 1.0f);
    } else if (mode == 1) {
        const float *m = bank + (uint64_t)kvq_rng_below(r, npat) * d;
        for (uint32_t i = 0; i < d; i++) x[i] = m[i] + rnd_val(r, 0x1p-4f);
    } else {
        memcpy(x, b, d * sizeof *x);
    }
}

/* SPEC: [PKV-DEV-05] [PKV-A-02] the pruned rule gives kvq_pkv_nearest's index on
 * random, clustered, tied and near-tied inputs (d = 128, 1 to 32 patterns), visiting
 * one pattern on clustered tokens; pruning on equality instead loses lower-index
 * ties on the tie inputs (the inputs the device test uses can tell the two rules
 * apart). */
START_TEST(pruning_argmin_exact)
{
    kvq_rng r = { g_seed ^ 0x9a12u };
    const uint32_t d = 128u;
    float *bank = xmalloc((size_t)32 * d * sizeof *bank), x[128];
    uint64_t visits[4] = {0, 0, 0, 0}, toks[4] = {0, 0, 0, 0}, lost = 0;
    for (uint32_t k = 0; k < 8000u; k++) {
        const int mode = (int)(k % 4u);
        const uint32_t npat = 1u + kvq_rng_below(&r, 32u);
        prune_fill(x, bank, npat, d, mode, &r);
        const uint32_t want = kvq_pkv_nearest(x, bank, npat, d, KVQ_PKV_DIST_MINMAX);
        uint32_t v, vw;
        const uint32_t got = prune_argmin(x, bank, npat, d, 0, &v);
        REQ_MSG(got == want, "case %u mode %d npat %u: pruned %u, nearest %u", k, mode, npat, got,
                want);
        visits[mode] += v;
        toks[mode]++;
        lost += prune_argmin(x, bank, npat, d, 1, &vw) != want;
    }
    REQ_MSG(visits[1] == toks[1], "clustered: %" PRIu64 " visits for %" PRIu64 " tokens", visits[1],
            toks[1]);
    REQ_MSG(lost > 0u, "pruning on equality never lost a tie: the inputs cannot tell the rules apart");
    free(bank);
}
END_TEST

/* ========================================================================= */
/* degenerate                                                                */
/* ========================================================================= */

/* SPEC: [PKV-KM-04] [PKV-KM-05] [PKV-KM-06] identical tokens: one iteration,
 * every centroid the token, an exact fixed point. */
START_TEST(degenerate_constant_tokens)
{
    kvq_pkv_params p = params(2, 8);
    float x[64 * 8], C[4 * 8];
    uint32_t cl[64], it = 0, conv = 0;
    kvq_exact_pkv_lloyd_out lo;
    p.patterns = 4;
    for (uint32_t e = 0; e < 64u * 8u; e++) x[e] = 0.1f * (float)(e % 8u);
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, x, 64, 8, &p) == KVQ_OK);
    REQ_EQ(it, 1);
    REQ_EQ(conv, 1);
    for (uint32_t e = 0; e < 32u; e++) REQ(kvq_f32_same(C[e], x[e % 8u]));
    for (uint32_t t = 0; t < 64u; t++) REQ_EQ(cl[t], 0);
    REQ(kvq_exact_pkv_lloyd_check(&lo, x, 64, 8, C, 4, cl, conv) == KVQ_OK);
    REQ(lo.bad_assign == 0 && lo.bad_move == 0);
}
END_TEST

/* SPEC: [PKV-KM-01] [PKV-KM-04] duplicated initial centroids: ties send
 * every token to the lower copy, the higher copy has no member and keeps its
 * centroid, bit for bit. */
START_TEST(degenerate_empty_cluster_keeps_centroid)
{
    kvq_pkv_params p = params(2, 8);
    float x[16 * 2], C[4 * 2];
    uint32_t cl[16], it, conv;
    kvq_exact_pkv_lloyd_out lo;
    p.patterns = 4;
    p.max_iter = 1;                              /* stop right after the first update */
    /* tokens 0..7 at (3, 3), token 2 at (4, 3); tokens 8..15 at (10, 10): the
     * initial tokens 0, 4, 8, 12 make centroids 0 = 1 and 2 = 3; ties send
     * every token to the lower copy; the upper copies have no member. */
    for (uint32_t t = 0; t < 16u; t++) {
        x[2 * t] = t < 8u ? 3.0f : 10.0f;
        x[2 * t + 1] = t < 8u ? 3.0f : 10.0f;
    }
    x[4] = 4.0f;
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, x, 16, 2, &p) == KVQ_OK);
    REQ(it == 1 && conv == 0);
    REQ(kvq_f32_same(C[0], 3.125f) && kvq_f32_same(C[1], 3.0f));  /* the mean of cluster 0 */
    REQ(kvq_f32_same(C[2], 3.0f) && kvq_f32_same(C[3], 3.0f));    /* centroid 1: empty, kept */
    REQ(kvq_f32_same(C[4], 10.0f) && kvq_f32_same(C[5], 10.0f));
    REQ(kvq_f32_same(C[6], 10.0f) && kvq_f32_same(C[7], 10.0f));  /* centroid 3: empty, kept */
    /* not converged: every token reassigned to the returned set */
    for (uint32_t t = 0; t < 16u; t++) REQ_EQ(cl[t], t == 2u ? 0u : t < 8u ? 1u : 2u);
    REQ(kvq_exact_pkv_lloyd_check(&lo, x, 16, 2, C, 4, cl, conv) == KVQ_OK);
    REQ(lo.bad_assign == 0);
}
END_TEST

/* SPEC: [PKV-V-01] [PKV-V-03] a constant value vector is stored raw (index
 * 0xFFFF), decisively at the bounded level too, and reconstructs exactly. */
START_TEST(degenerate_constant_value_raw)
{
    kvq_pkv_params p = params(2, 8);
    float v[2 * 8], bank[8], y[16], resid[16], scale[2], zero[2];
    uint8_t codes[4];
    uint16_t index[2];
    int amb;
    mpfr_t lo, hi;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, lo, hi, (mpfr_ptr)0);
    REQ(kvq_exact_pkv_rho_bracket(lo, hi, 8, p.alpha) == KVQ_OK);
    for (uint32_t i = 0; i < 8u; i++) {
        v[i] = 0.375f;                           /* constant */
        v[8 + i] = (float)i;                     /* not constant; pattern far better */
        bank[i] = (float)i + 0.5f;
    }
    REQ(kvq_pkv_quantize(codes, scale, zero, index, resid, NULL, v, KVQ_PKV_VALUE, 2, 8, bank, 1,
                         &p, &kvq_policy_default) == KVQ_OK);
    REQ_EQ(index[0], KVQ_PKV_NO_PATTERN);
    REQ_EQ(index[1], 0);
    REQ_EQ(kvq_exact_pkv_v_decide(&amb, v, bank, 8, lo, hi), 0);
    REQ_EQ(amb, 0);
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    REQ(kvq_pkv_dequantize(y, NULL, codes, scale, zero, index, KVQ_PKV_VALUE, 2, 8, bank, 1, &p,
                           &kvq_policy_default) == KVQ_OK);
    for (uint32_t i = 0; i < 16u; i++) REQ(kvq_f32_same(y[i], v[i]));
}
END_TEST

/* SPEC: [PKV-KM-03] [PKV-KM-04] [PKV-KM-05] the loop returns the set C whose
 * own Lloyd step moved least, not the update C'.  Tokens 5, 1, 1, 0, 1 (d = 1,
 * M = 1): C0 = 5; step 1: S = -17 exactly, C1 = RN32(5 + RN32(-17/5)); step 2
 * moves C1 by one ulp (<= thr = RN32(RN32(1e-4) * 5)), so C1 is returned after
 * two iterations -- C2 = C1 + 1 ulp would be the other reading. */
START_TEST(degenerate_returns_fixed_point_not_update)
{
    kvq_pkv_params p = params(2, 8);
    float x[5] = { 5.0f, 1.0f, 1.0f, 0.0f, 1.0f }, C[1], c1;
    uint32_t cl[5], it, conv;
    mpfr_t v, w;
    p.patterns = 1;
    mpfr_inits2(KVQ_XPREC, v, w, (mpfr_ptr)0);
    mpfr_set_si(v, -17, MPFR_RNDN);
    REQ(kvq_exact_div_round(v, v, (mpfr_set_ui(w, 5, MPFR_RNDN), w), &kvq_xfmt_binary32) == 0);
    mpfr_add_ui(v, v, 5, MPFR_RNDN);             /* exact */
    REQ(kvq_exact_round(v, v, &kvq_xfmt_binary32) == 0);
    c1 = mpfr_get_flt(v, MPFR_RNDN);
    mpfr_clears(v, w, (mpfr_ptr)0);
    REQ(kvq_f32_same(c1, 0x1.999998p+0f));       /* one ulp below RN32(8/5) */
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, x, 5, 1, &p) == KVQ_OK);
    REQ_EQ(conv, 1);
    REQ_EQ(it, 2);
    REQ_MSG(kvq_f32_same(C[0], c1), "returned %a, expected C1 = %a", (double)C[0], (double)c1);
}
END_TEST

/* SPEC: [PKV-KM-01] [PKV-P-02] the seeded initialisation as the spec draws it
 * (splitmix64 from `seed`, k = j + next() mod (L - j), swap): with L = M
 * distinct tokens every cluster keeps its one token, so the returned set is
 * the initial one, centroid j = token perm[j]; the spread initialisation gives
 * the identity. */
START_TEST(degenerate_random_init_order)
{
    float x[16 * 2], C[16 * 2];
    uint32_t perm[16], it, conv;
    for (uint32_t seed = 0; seed < 4u; seed++) {
        kvq_pkv_params p = params(2, 8);
        kvq_rng r = { seed };
        p.patterns = 16;
        p.init = KVQ_PKV_INIT_RANDOM;
        p.seed = seed;
        for (uint32_t t = 0; t < 16u; t++) {
            perm[t] = t;
            x[2 * t] = (float)(t * t);
            x[2 * t + 1] = -(float)t;
        }
        for (uint32_t j = 0; j < 16u; j++) {
            uint32_t k = j + (uint32_t)(kvq_rng_next(&r) % (16u - j)), tmp = perm[j];
            perm[j] = perm[k];
            perm[k] = tmp;
        }
        REQ(kvq_pkv_kmeans(C, NULL, &it, &conv, x, 16, 2, &p) == KVQ_OK);
        REQ(conv == 1 && it == 1);
        for (uint32_t j = 0; j < 16u; j++)
            REQ_MSG(kvq_f32_same(C[2 * j], x[2 * perm[j]]), "seed %u centroid %u", seed, j);
        p.init = KVQ_PKV_INIT_SPREAD;
        REQ(kvq_pkv_kmeans(C, NULL, &it, &conv, x, 16, 2, &p) == KVQ_OK);
        for (uint32_t e = 0; e < 32u; e++) REQ(kvq_f32_same(C[e], x[e]));
    }
}
END_TEST

/* SPEC: [PKV-A-03] [PKV-P-02] a key whose min-max and Euclidean nearest
 * patterns differ: prefill keys follow key_dist, decode keys and values
 * always use min-max. */
START_TEST(degenerate_prefill_metric_variant)
{
    /* x = 0; pattern 0 = (1, 1, 1, 1, 1, 1, 1, 1) (d_mm 0, Euclid 8),
     * pattern 1 = (0.5, -0.5, 0, ...) (d_mm 1, Euclid 0.5) */
    float x[8 * 8] = { 0 }, bank[2 * 8] = { 1, 1, 1, 1, 1, 1, 1, 1, 0.5f, -0.5f, 0, 0, 0, 0, 0, 0 };
    float resid[64], scale[8], zero[8];
    uint8_t codes[16];
    uint16_t index[8];
    for (uint32_t v = 0; v < 2u; v++) {
        kvq_pkv_params p = params(2, 8);
        p.key_dist = v;
        REQ(kvq_pkv_quantize(codes, scale, zero, index, resid, NULL, x, KVQ_PKV_KEY_PREFILL, 8, 8,
                             bank, 2, &p, &kvq_policy_default) == KVQ_OK);
        REQ_EQ(index[0], v == KVQ_PKV_DIST_EUCLID ? 1 : 0);
        REQ(kvq_pkv_quantize(codes, scale, zero, index, resid, NULL, x, KVQ_PKV_KEY_DECODE, 8, 8,
                             bank, 2, &p, &kvq_policy_default) == KVQ_OK);
        REQ_EQ(index[0], 0);
    }
}
END_TEST

/* SPEC: [PKV-KM-01] L == M: every token its own centroid, a fixed point. */
START_TEST(degenerate_as_many_tokens_as_patterns)
{
    kvq_pkv_params p = params(2, 8);
    kvq_rng r = { g_seed ^ 4u };
    float x[32 * 4], C[32 * 4];
    uint32_t cl[32], it, conv;
    for (uint32_t e = 0; e < 128u; e++) x[e] = rnd_val(&r, 1.0f);
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, x, 32, 4, &p) == KVQ_OK);
    REQ_EQ(conv, 1);
    REQ_EQ(it, 1);
    for (uint32_t e = 0; e < 128u; e++) REQ(kvq_f32_same(C[e], x[e]));
}
END_TEST

/* ========================================================================= */
/* packing                                                                   */
/* ========================================================================= */

/* SPEC: [PKV-L-04] [PKV-L-02] the effective-bits table of spec/pkv.md, from
 * the packed sizes (bits per value = 8 bytes / (T d), exact). */
START_TEST(packing_effective_bits)
{
    static const struct { uint32_t n, meta, d; double bits; } tab[] = {
        { 2, KVQ_META_F32, 64, 2.75 },  { 2, KVQ_META_F32, 128, 2.625 }, { 2, KVQ_META_F32, 256, 2.5625 },
        { 2, KVQ_META_F16, 64, 2.5 },   { 2, KVQ_META_F16, 128, 2.375 }, { 2, KVQ_META_F16, 256, 2.3125 },
        { 4, KVQ_META_F32, 64, 4.75 },  { 4, KVQ_META_F32, 128, 4.625 }, { 4, KVQ_META_F32, 256, 4.5625 },
        { 4, KVQ_META_F16, 64, 4.5 },   { 4, KVQ_META_F16, 128, 4.375 }, { 4, KVQ_META_F16, 256, 4.3125 },
    };
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
        kvq_pkv_params p = kvq_pkv_params_default(tab[k].n);
        uint64_t b;
        p.meta = tab[k].meta;
        b = kvq_pkv_block_bits(&p, KVQ_PKV_KEY_PREFILL, 128, tab[k].d);
        REQ_MSG((double)b / (128.0 * tab[k].d) == tab[k].bits, "row %zu: %g bits", k,
                (double)b / (128.0 * tab[k].d));
        if (tab[k].d % 128u == 0u) /* values: the same size */
            REQ_EQ(kvq_pkv_block_bits(&p, KVQ_PKV_VALUE, 128, tab[k].d), b);
        REQ_EQ(kvq_pkv_block_bytes(&p, KVQ_PKV_VALUE, 128, 256) -
                   kvq_pkv_block_bytes(&p, KVQ_PKV_VALUE, 128, 128),
               128u * 128u * tab[k].n / 8u + 2u * 128u * (tab[k].meta == KVQ_META_F16 ? 2u : 4u));
    }
}
END_TEST

/* SPEC: [PKV-L-01] [PKV-L-03] [PKV-P-01] the residual's KIVI shape, the bank
 * offsets, the index limit, the frozen record and the defaults. */
START_TEST(packing_layout_helpers)
{
    kvq_pkv_params p = kvq_pkv_params_default(4);
    kvq_kivi_shape s = kvq_pkv_kivi_shape(&p, KVQ_PKV_KEY_DECODE, 256, 64);
    REQ_EQ(sizeof(kvq_pkv_params), 56);
    REQ(s.bits == 4 && s.group == 128 && s.grouping == KVQ_GROUP_CHANNEL && s.tokens == 256 &&
        s.channels == 64 && s.meta == KVQ_META_F32);
    s = kvq_pkv_kivi_shape(&p, KVQ_PKV_VALUE, 3, 256);
    REQ(s.grouping == KVQ_GROUP_TOKEN);
    REQ_EQ(kvq_pkv_pattern_offset(7, 96), 672);
    REQ_EQ(kvq_pkv_bank_bytes(32, 128), 16384);
    REQ_EQ(kvq_pkv_index_bytes(5), 10);
    REQ_EQ(KVQ_PKV_MAX_PATTERNS, 65535);
    REQ_EQ(KVQ_PKV_NO_PATTERN, 0xFFFF);
    REQ(p.patterns == 32 && p.max_iter == 30 && p.residual == 128 && p.window == 128 &&
        p.cap == 0 && p.v_threshold == 1 && p.alpha == KVQ_PKV_ALPHA_05 && p.init == 0 &&
        p.key_dist == 0 && p.update == 0);
    REQ(kvq_pkv_params_ok(&p));
    REQ(kvq_f32_same(KVQ_PKV_TOL, (float)1e-4));
}
END_TEST

/* SPEC: [PKV-U-01] [PKV-U-04] one centre per window of decoded tokens, no cap
 * by default, the cap a policy, the format limit 65535. */
START_TEST(packing_bank_schedule)
{
    kvq_pkv_params p = kvq_pkv_params_default(2);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 0), 32);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 127), 32);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128), 33);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128u * 1000u + 5u), 1032);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, (uint64_t)128 * 70000u), 65535);
    p.cap = 40;
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128u * 1000u), 40);
}
END_TEST

/* ========================================================================= */
/* updates                                                                   */
/* ========================================================================= */

/* SPEC: [PKV-U-01] [PKV-U-02] [PKV-U-03] a key flush: the centre joins the
 * bank bit for bit as the exact path computes it; under the default the
 * window is matched against the grown bank (some key picks the new centre),
 * under the variant against the old bank (no key can); both judged exactly. */
START_TEST(updates_key_flush_order)
{
    const uint32_t d = 16, R = 8, M = 4;
    kvq_rng r = { g_seed ^ 5u };
    for (uint32_t variant = 0; variant < 2u; variant++) {
        kvq_pkv_params p = params(2, 8);
        float bank[6 * 16], win[8 * 16], ce[16], resid[8 * 16], scale[16], zero[16];
        uint8_t codes[32];
        uint16_t index[8];
        uint32_t np = M, hits = 0;
        p.update = variant;
        for (uint32_t e = 0; e < M * d; e++) bank[e] = rnd_val(&r, 4.0f);
        for (uint32_t e = 0; e < R * d; e++) win[e] = 20.0f + rnd_val(&r, 1.0f); /* drifted */
        REQ(kvq_pkv_key_flush(codes, scale, zero, index, resid, NULL, bank, &np, 6, win, d, &p,
                              &kvq_policy_default) == KVQ_OK);
        REQ_EQ(np, M + 1);
        REQ(kvq_exact_pkv_chebyshev(ce, win, R, d) == KVQ_OK);
        for (uint32_t i = 0; i < d; i++) REQ(kvq_f32_same(bank[M * d + i], ce[i]));
        for (uint32_t t = 0; t < R; t++) {
            kvq_exact_pkv_assign_out a;
            uint32_t nb = variant == KVQ_PKV_UPDATE_AFTER ? M + 1 : M;
            kvq_exact_pkv_assign(&a, win + t * d, bank, nb, d, KVQ_PKV_DIST_MINMAX, index[t]);
            REQ_MSG(a.accepted && a.pinned == index[t], "variant %u token %u", variant, t);
            if (index[t] == M) hits++;
        }
        if (variant == KVQ_PKV_UPDATE_AFTER) REQ_MSG(hits > 0, "no key matched its own centre");
        else REQ_EQ(hits, 0);
    }
}
END_TEST

/* SPEC: [PKV-U-04] a capped bank gains no centre (success, nothing written);
 * an uncapped bank with no allocated room is KVQ_E_SHAPE, nothing written. */
START_TEST(updates_cap_and_room)
{
    kvq_pkv_params p = params(2, 8);
    float bank[3 * 4], win[2 * 4] = { 1, 2, 3, 4, 3, 2, 1, 0 };
    uint32_t np = 2, app = 7;
    memset(bank, SENT8, sizeof bank);
    p.cap = 2;
    REQ(kvq_pkv_bank_update(bank, &np, &app, 3, win, 2, 4, &p) == KVQ_OK);
    REQ(np == 2 && app == 0);
    REQ(all_bytes(bank, sizeof bank, SENT8));
    p.cap = 0;
    REQ(kvq_pkv_bank_update(bank, &np, &app, 2, win, 2, 4, &p) == KVQ_E_SHAPE);
    REQ(np == 2 && app == 0 && all_bytes(bank, sizeof bank, SENT8));
    REQ(kvq_pkv_bank_update(bank, &np, &app, 3, win, 2, 4, &p) == KVQ_OK);
    REQ(np == 3 && app == 1);
    for (uint32_t i = 0; i < 4u; i++) REQ(kvq_f32_same(bank[8 + i], 2.0f));
}
END_TEST

/* SPEC: [PKV-U-01] [PKV-U-05] a value decode step: at s mod window == 0 the
 * centre of the R most recent values (not the leaving one) joins the bank,
 * bit for bit the exact centre; the leaving value is matched against the bank
 * with that centre (it is its nearest here) and quantized exactly; off the
 * window no centre joins; with the window not full nothing is quantized. */
START_TEST(updates_value_step)
{
    const uint32_t d = 8, R = 8;
    kvq_rng r = { g_seed ^ 9u };
    kvq_pkv_params p = params(2, 8);
    float bank[4 * 8], win[9 * 8], ce[8], resid[8], scale[1], zero[1];
    float xr[8], xd[8], kd[8], xs[1], xz[1];
    uint8_t codes[2], xc[2], cr[8], ca[8];
    uint16_t index[1];
    uint32_t np = 2, count = 7;
    kvq_exact_pkv_assign_out a;
    kvq_exact_pkv_out xo;
    p.window = 4;
    for (uint32_t e = 0; e < 16u; e++) bank[e] = rnd_val(&r, 1.0f);
    /* rows 1 .. R: a common shape (dims spread over [-20, 20]) plus small noise;
     * row 0 (leaving): the same shape shifted by 40, so the new centre is its
     * nearest pattern and the threshold keeps it (rho ~ 0.01) */
    for (uint32_t t = 0; t < 9u; t++)
        for (uint32_t i = 0; i < d; i++)
            win[t * d + i] = (float)(5 * (int)i - 20) + rnd_val(&r, 0.25f) + (t == 0u ? 40.0f : 0.0f);
    /* step 12: 12 mod 4 == 0, the window holds R + 1 */
    REQ(kvq_pkv_value_step(codes, scale, zero, index, resid, NULL, &count, bank, &np, 4, win, R + 1,
                           12, d, &p, &kvq_policy_default) == KVQ_OK);
    REQ(np == 3 && count == 1);
    REQ(kvq_exact_pkv_chebyshev(ce, win + d, R, d) == KVQ_OK);   /* rows 1 .. R only */
    for (uint32_t i = 0; i < d; i++) REQ_MSG(kvq_f32_same(bank[2 * d + i], ce[i]), "centre %u", i);
    REQ_EQ(index[0], 2);                         /* the new centre is the leaving value's nearest */
    kvq_exact_pkv_assign(&a, win, bank, 3, d, KVQ_PKV_DIST_MINMAX, index[0]);
    REQ(a.accepted && a.pinned == 2);
    xo.kivi.codes = xc; xo.kivi.scale = xs; xo.kivi.zero = xz; xo.kivi.deq = kd;
    xo.kivi.code_real = cr; xo.kivi.code_alt = ca; xo.resid = xr; xo.deq = xd;
    REQ(kvq_exact_pkv_quantize(&xo, win, index, KVQ_PKV_VALUE, 1, d, bank, 3, &p,
                               &kvq_policy_default) == KVQ_OK);
    REQ(memcmp(codes, xc, 2) == 0 && kvq_f32_same(scale[0], xs[0]) && kvq_f32_same(zero[0], xz[0]));
    for (uint32_t i = 0; i < d; i++) REQ(kvq_f32_same(resid[i], xr[i]));
    /* step 13: no centre; the leaving value keeps to the 3 patterns */
    REQ(kvq_pkv_value_step(codes, scale, zero, index, resid, NULL, &count, bank, &np, 4, win, R + 1,
                           13, d, &p, &kvq_policy_default) == KVQ_OK);
    REQ(np == 3 && count == 1);
    /* step 16 with the window not full: a centre of all 5 rows, nothing quantized */
    memset(codes, SENT8, sizeof codes);
    REQ(kvq_pkv_value_step(codes, scale, zero, index, resid, NULL, &count, bank, &np, 4, win, 5, 16,
                           d, &p, &kvq_policy_default) == KVQ_OK);
    REQ(np == 4 && count == 0 && all_bytes(codes, sizeof codes, SENT8));
    REQ(kvq_exact_pkv_chebyshev(ce, win, 5, d) == KVQ_OK);
    for (uint32_t i = 0; i < d; i++) REQ(kvq_f32_same(bank[3 * d + i], ce[i]));
    /* a full bank: KVQ_E_SHAPE, nothing written */
    REQ(kvq_pkv_value_step(codes, scale, zero, index, resid, NULL, &count, bank, &np, 4, win, R + 1,
                           20, d, &p, &kvq_policy_default) == KVQ_E_SHAPE);
    REQ(np == 4 && count == 0);
    REQ(kvq_pkv_value_step(codes, scale, zero, index, resid, NULL, &count, bank, &np, 5, win, R + 2,
                           20, d, &p, &kvq_policy_default) == KVQ_E_SHAPE);
}
END_TEST

/* ========================================================================= */
/* random_vs_exact                                                           */
/* ========================================================================= */

/* SPEC: [PKV-KM-02] [PKV-KM-05] [PKV-KM-06] [PKV-KM-07] random k-means runs,
 * both initialisations: every assignment optimal for the returned set, every
 * converged set a Lloyd fixed point within the rule. */
START_TEST(random_kmeans_properties)
{
    kvq_rng r = { g_seed ^ 6u };
    uint32_t nconv = 0;
    for (uint64_t k = 0; k < nblocks(); k++) {
        uint32_t d = 8u << kvq_rng_below(&r, 3u), T = 64u + kvq_rng_below(&r, 192u);
        kvq_pkv_params p = params(2, 8);
        float *x = xmalloc((size_t)T * d * 4), *C;
        uint32_t *cl = xmalloc(T * 4u), it, conv;
        kvq_exact_pkv_lloyd_out lo;
        p.patterns = 1u + kvq_rng_below(&r, 32u);
        p.init = (uint32_t)(k & 1u);
        p.seed = (uint32_t)k;
        p.max_iter = k % 5u == 4u ? 2u : 30u;  /* some runs stop on the cap */
        C = xmalloc((size_t)p.patterns * d * 4);
        fill_clustered(x, T, d, 1u + kvq_rng_below(&r, 12u), &r);
        REQ(kvq_pkv_kmeans(C, cl, &it, &conv, x, T, d, &p) == KVQ_OK);
        REQ(it >= 1 && it <= p.max_iter);
        REQ(conv || it == p.max_iter);
        REQ(kvq_exact_pkv_lloyd_check(&lo, x, T, d, C, p.patterns, cl, conv) == KVQ_OK);
        REQ_MSG(lo.bad_assign == 0, "case %" PRIu64 ": %" PRIu64 " assignments not optimal "
                "(seed 0x%016" PRIx64 ")", k, lo.bad_assign, g_seed);
        REQ_MSG(lo.bad_move == 0, "case %" PRIu64 ": %" PRIu64 " centroid coordinates past the "
                "fixed-point bound, worst %g (seed 0x%016" PRIx64 ")", k, lo.bad_move, lo.worst,
                g_seed);
        nconv += conv;
        free(x); free(C); free(cl);
    }
    REQ_MSG(nconv > 0, "no k-means run converged: the fixed-point check never ran");
}
END_TEST

/* SPEC: [PKV-Q-01..04] [PKV-A-03] [PKV-V-01] [PKV-D-01] random blocks of keys
 * (both prefill metrics) and values, both bit widths, both metadata formats:
 * fast vs exact given the fast indices, indices and decisions judged, the
 * reconstruction within the bound. */
START_TEST(random_blocks_vs_exact)
{
    kvq_rng r = { g_seed ^ 7u };
    uint32_t amb = 0, raw = 0;
    for (uint64_t k = 0; k < nblocks(); k++) {
        uint32_t kind = (uint32_t)(k % 3u), G = 16u, d, T, npat;
        kvq_pkv_params p = params(kvq_rng_below(&r, 2u) ? 4u : 2u, G);
        kvq_policy pol = kvq_policy_default;
        float *x, *bank, *C;
        p.meta = k % 4u == 3u ? KVQ_META_F16 : KVQ_META_F32;
        p.key_dist = (uint32_t)((k / 3u) & 1u);
        p.alpha = kvq_rng_below(&r, 3u);
        pol.ties = kvq_rng_below(&r, 2u);
        d = kind == KVQ_PKV_VALUE ? G * (1u + kvq_rng_below(&r, 4u)) : 8u + kvq_rng_below(&r, 40u);
        T = kind == KVQ_PKV_VALUE ? 4u + kvq_rng_below(&r, 40u) : G * (1u + kvq_rng_below(&r, 3u));
        x = xmalloc((size_t)T * d * 4);
        fill_clustered(x, T, d, 1u + kvq_rng_below(&r, 6u), &r);
        npat = 1u + kvq_rng_below(&r, T < 12u ? T : 12u);
        p.patterns = npat;
        C = xmalloc((size_t)npat * d * 4);
        REQ(kvq_pkv_kmeans(C, NULL, NULL, NULL, x, T, d, &p) == KVQ_OK);
        bank = C;
        if (kind == KVQ_PKV_VALUE)               /* perturb: some values should reject */
            for (uint32_t e = 0; e < npat * d; e++)
                if (kvq_rng_below(&r, 3u) == 0u) bank[e] += rnd_val(&r, 1.0f);
        amb += block_vs_exact(x, kind, T, d, bank, npat, &p, &pol, g_seed);
        if (kind == KVQ_PKV_VALUE) {
            uint16_t *ix = xmalloc(T * 2u);
            float thr;
            REQ(kvq_pkv_rho_star(&thr, d, p.alpha) == KVQ_OK);
            for (uint32_t t = 0; t < T; t++) {
                uint32_t j = kvq_pkv_nearest(x + (size_t)t * d, bank, npat, d, KVQ_PKV_DIST_MINMAX);
                raw += !kvq_pkv_v_use(NULL, x + (size_t)t * d, bank + (size_t)j * d, d, thr);
            }
            free(ix);
        }
        free(x); free(C);
    }
    REQ_MSG(raw > 0, "no value was stored raw: the threshold was never exercised");
    (void)amb;
}
END_TEST

/* ========================================================================= */
/* threshold                                                                 */
/* ========================================================================= */

static const struct rho_row {
    uint32_t d, alpha;
    const char *name, *lo, *hi, *t32;
} rho_tab[] = {
    { 64, KVQ_PKV_ALPHA_10, "0.10", "0.902854511202121", "0.902854511202122", "0x1.ce42f2p-1" },
    { 64, KVQ_PKV_ALPHA_05, "0.05", "0.876419439936916", "0.876419439936917", "0x1.c0ba0cp-1" },
    { 64, KVQ_PKV_ALPHA_01, "0.01", "0.827508419230257", "0.827508419230258", "0x1.a7af2ep-1" },
    { 96, KVQ_PKV_ALPHA_10, "0.10", "0.920167322895111", "0.920167322895112", "0x1.d7202cp-1" },
    { 96, KVQ_PKV_ALPHA_05, "0.05", "0.898357639602000", "0.898357639602001", "0x1.cbf588p-1" },
    { 96, KVQ_PKV_ALPHA_01, "0.01", "0.858068100271349", "0.858068100271350", "0x1.b754b4p-1" },
    { 128, KVQ_PKV_ALPHA_10, "0.10", "0.930578015445841", "0.930578015445842", "0x1.dc74b8p-1" },
    { 128, KVQ_PKV_ALPHA_05, "0.05", "0.911553383752292", "0.911553383752293", "0x1.d2b72p-1" },
    { 128, KVQ_PKV_ALPHA_01, "0.01", "0.876410563319065", "0.876410563319066", "0x1.c0b8e2p-1" },
    { 256, KVQ_PKV_ALPHA_10, "0.10", "0.950500619178396", "0.950500619178397", "0x1.e6a804p-1" },
    { 256, KVQ_PKV_ALPHA_05, "0.05", "0.936834297967518", "0.936834297967519", "0x1.dfa8bep-1" },
    { 256, KVQ_PKV_ALPHA_01, "0.01", "0.911546995118688", "0.911546995118689", "0x1.d2b64ap-1" },
};

/* SPEC: [PKV-V-02] every row of spec/pkv.md's rho* table recomputed: the
 * bracket (15 decimals, outward), certified by the implicit equation, the
 * binary32 value, and the row present in the spec as printed. */
START_TEST(threshold_table_recomputed)
{
    const char *dir = getenv("KVQ_SRCDIR");
    char path[4096], *spec;
    FILE *f;
    long len;
    mpfr_t lo, hi;
    snprintf(path, sizeof path, "%s/spec/pkv.md", dir != NULL ? dir : ".");
    f = fopen(path, "rb");
    REQ_MSG(f != NULL, "cannot read %s (set KVQ_SRCDIR to the source tree)", path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    spec = xmalloc((size_t)len + 1u);
    REQ(fread(spec, 1, (size_t)len, f) == (size_t)len);
    spec[len] = '\0';
    fclose(f);
    mpfr_inits2(KVQ_PKV_XPREC_RHO, lo, hi, (mpfr_ptr)0);
    for (size_t k = 0; k < sizeof rho_tab / sizeof rho_tab[0]; k++) {
        const struct rho_row *w = &rho_tab[k];
        char slo[64], shi[64], s32[64], row[256];
        float t, l32, h32;
        REQ(kvq_exact_pkv_rho_bracket(lo, hi, w->d, w->alpha) == KVQ_OK);
        REQ_MSG(kvq_exact_pkv_rho_certify(lo, hi, w->d, w->alpha), "row %zu not certified", k);
        mpfr_snprintf(slo, sizeof slo, "%.15RDf", lo);
        mpfr_snprintf(shi, sizeof shi, "%.15RUf", hi);
        REQ_MSG(strcmp(slo, w->lo) == 0 && strcmp(shi, w->hi) == 0,
                "d=%u alpha=%s: bracket [%s, %s], table [%s, %s]", w->d, w->name, slo, shi, w->lo,
                w->hi);
        l32 = mpfr_get_flt(lo, MPFR_RNDN);
        h32 = mpfr_get_flt(hi, MPFR_RNDN);
        REQ_MSG(kvq_f32_same(l32, h32), "d=%u alpha=%s: RN32 not determined", w->d, w->name);
        snprintf(s32, sizeof s32, "%a", (double)l32);
        REQ_MSG(strcmp(s32, w->t32) == 0, "RN32(rho*) %s, table %s", s32, w->t32);
        REQ(kvq_pkv_rho_star(&t, w->d, w->alpha) == KVQ_OK);
        REQ_MSG(kvq_f32_same(t, l32), "fast threshold %a != RN32(rho*) %a", (double)t, (double)l32);
        snprintf(row, sizeof row, "| %u | %s | %s | %s | %s |", w->d, w->name, w->lo, w->hi, w->t32);
        REQ_MSG(strstr(spec, row) != NULL, "spec/pkv.md lacks the row \"%s\"", row);
    }
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    free(spec);
}
END_TEST

/* SPEC: [PKV-V-02] the fast threshold within 2^-22 relative of the certified
 * bracket for every d = 8 .. 4096 in steps of 8 and every alpha; the paper's
 * printed constant sqrt(5) d is far outside (a separating check). */
START_TEST(threshold_fast_within_bracket)
{
    mpfr_t lo, hi, t, e, zl, zh;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, lo, hi, t, e, zl, zh, (mpfr_ptr)0);
    for (uint32_t a = 0; a < 3u; a++) {
        REQ(kvq_exact_pkv_z_bracket(zl, zh, a) == KVQ_OK);
        for (uint32_t d = 8; d <= 4096u; d += 8u) {
            float f;
            REQ(kvq_pkv_rho_star(&f, d, a) == KVQ_OK);
            REQ(kvq_exact_pkv_rho_bracket_z(lo, hi, d, zl, zh) == KVQ_OK);
            mpfr_set_flt(t, f, MPFR_RNDN);
            /* |t - rho*| <= 2^-22 rho*: t within [lo (1 - 2^-22), hi (1 + 2^-22)] */
            mpfr_mul_2si(e, lo, -22, MPFR_RNDU);
            mpfr_sub(e, lo, e, MPFR_RNDD);
            REQ_MSG(mpfr_cmp(t, e) >= 0, "d=%u alpha#%u: %a below the bracket", d, a, (double)f);
            mpfr_mul_2si(e, hi, -22, MPFR_RNDU);
            mpfr_add(e, hi, e, MPFR_RNDU);
            REQ_MSG(mpfr_cmp(t, e) <= 0, "d=%u alpha#%u: %a above the bracket", d, a, (double)f);
        }
    }
    {   /* sqrt(5) d would give rho*(128, 0.05) = 0.9919: outside [0.91, 0.92] */
        float f;
        REQ(kvq_pkv_rho_star(&f, 128, KVQ_PKV_ALPHA_05) == KVQ_OK);
        REQ(f > 0.91f && f < 0.92f);
    }
    mpfr_clears(lo, hi, t, e, zl, zh, (mpfr_ptr)0);
}
END_TEST

/* SPEC: [PKV-V-01] [PKV-V-04] value vectors built with rho on both sides of
 * rho* (decisive) and at it (the band): the fast decision equals the exact
 * one wherever the exact path is decisive; rho <= rho* uses the pattern (the
 * direction), and rho = 0.95 at d = 128 is raw (which the paper's printed
 * constant would use). */
START_TEST(threshold_decisions_vs_exact)
{
    const uint32_t d = 128;
    kvq_rng r = { g_seed ^ 8u };
    uint32_t dec = 0, amb = 0;
    mpfr_t lo, hi;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, lo, hi, (mpfr_ptr)0);
    for (uint32_t a = 0; a < 3u; a++) {
        float t;
        REQ(kvq_pkv_rho_star(&t, d, a) == KVQ_OK);
        REQ(kvq_exact_pkv_rho_bracket(lo, hi, d, a) == KVQ_OK);
        for (uint32_t k = 0; k < 600u; k++) {
            float v[128], m[128], target;
            int use, xamb, fuse;
            switch (k % 4u) {
            case 0: target = t * 0.97f; break;
            case 1: target = t * 1.03f; break;
            case 2: target = 0.95f; break;
            default: target = t; break;
            }
            for (uint32_t i = 0; i < d; i++) {
                float w = (i == 0u) ? 0.0f : (i == 1u) ? 1.0f : kvq_rng_unit(&r);
                v[i] = 4.0f * kvq_rng_unit(&r) - 2.0f;
                if (i == 2u) v[i] = -2.0f;
                if (i == 3u) v[i] = 2.0f;        /* range(v) = 4 exactly */
                m[i] = v[i] - 4.0f * target * w; /* range(v - m) ~ 4 target */
            }
            fuse = kvq_pkv_v_use(NULL, v, m, d, t);
            use = kvq_exact_pkv_v_decide(&xamb, v, m, d, lo, hi);
            if (xamb) {
                amb++;
                continue;
            }
            dec++;
            REQ_MSG(fuse == use, "alpha#%u case %u: fast %d exact %d", a, k, fuse, use);
            if (k % 4u == 0u) REQ(use == 1);
            if (k % 4u == 1u || k % 4u == 2u) REQ(use == 0);
        }
    }
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    REQ(dec > 1000u);
    REQ_MSG(amb > 0u, "no case in the band: the ambiguous branch never ran");
}
END_TEST

/* ========================================================================= */
/* bad_input: one test per row of spec/pkv.md [PKV-ERR-02]                    */
/* ========================================================================= */

/* A small valid setup for the bad-input rows: keys 8 x 4 (G = 8), values 2 x 8. */
struct bad_setup {
    kvq_pkv_params p;
    float x[8 * 8], bank[2 * 8], resid[64], scale[8], zero[8], y[64];
    uint8_t codes[32];
    uint16_t index[8];
    uint32_t flags;
};

static void bad_init(struct bad_setup *b)
{
    kvq_rng r = { 99u };
    b->p = params(2, 8);
    for (uint32_t e = 0; e < 64u; e++) b->x[e] = rnd_val(&r, 1.0f);
    for (uint32_t e = 0; e < 16u; e++) b->bank[e] = rnd_val(&r, 1.0f);
    memset(b->resid, SENT8, sizeof b->resid);
    memset(b->scale, SENT8, sizeof b->scale);
    memset(b->zero, SENT8, sizeof b->zero);
    memset(b->y, SENT8, sizeof b->y);
    memset(b->codes, SENT8, sizeof b->codes);
    memset(b->index, SENT8, sizeof b->index);
    b->flags = 0xA5A5A5A5u;
}

/* Nothing written: every output still holds the sentinel. */
static int bad_untouched(const struct bad_setup *b)
{
    return all_bytes(b->resid, sizeof b->resid, SENT8) && all_bytes(b->scale, sizeof b->scale, SENT8) &&
           all_bytes(b->zero, sizeof b->zero, SENT8) && all_bytes(b->y, sizeof b->y, SENT8) &&
           all_bytes(b->codes, sizeof b->codes, SENT8) && all_bytes(b->index, sizeof b->index, SENT8) &&
           b->flags == 0xA5A5A5A5u;
}

static kvq_status bad_q(struct bad_setup *b, uint32_t kind, uint32_t T, uint32_t d, uint32_t npat)
{
    return kvq_pkv_quantize(b->codes, b->scale, b->zero, b->index, b->resid, &b->flags, b->x, kind,
                            T, d, b->bank, npat, &b->p, &kvq_policy_default);
}

/* Row 1.  SPEC: [PKV-ERR-01] [PKV-ERR-02] */
START_TEST(bad_row01_null)
{
    struct bad_setup b;
    float C[8];
    bad_init(&b);
    REQ(kvq_pkv_quantize(NULL, b.scale, b.zero, b.index, b.resid, &b.flags, b.x, 0, 8, 4, b.bank,
                         1, &b.p, &kvq_policy_default) == KVQ_E_PARAM);
    REQ(kvq_pkv_quantize(b.codes, b.scale, b.zero, b.index, NULL, &b.flags, b.x, 0, 8, 4, b.bank,
                         1, &b.p, &kvq_policy_default) == KVQ_E_PARAM);
    REQ(kvq_pkv_quantize(b.codes, b.scale, b.zero, b.index, b.resid, &b.flags, b.x, 0, 8, 4, NULL,
                         1, &b.p, &kvq_policy_default) == KVQ_E_PARAM);
    REQ(kvq_pkv_dequantize(b.y, &b.flags, b.codes, b.scale, b.zero, NULL, 0, 8, 4, b.bank, 1, &b.p,
                           &kvq_policy_default) == KVQ_E_PARAM);
    REQ(kvq_pkv_kmeans(C, NULL, NULL, NULL, NULL, 8, 4, &b.p) == KVQ_E_PARAM);
    REQ(kvq_pkv_chebyshev(NULL, b.x, 8, 4) == KVQ_E_PARAM);
    REQ(kvq_pkv_rho_star(NULL, 128, 0) == KVQ_E_PARAM);
    REQ(bad_untouched(&b));
}
END_TEST

/* Row 2.  SPEC: [PKV-P-01] [PKV-ERR-02] */
START_TEST(bad_row02_params)
{
    struct bad_setup b;
    uint32_t *fields;
    bad_init(&b);
    b.p.bits = 8;                                /* KIVI allows 8; PKV does not */
    REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_E_PARAM);
    b.p.bits = 1;
    REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_E_PARAM);
    for (uint32_t f = 1; f < 14u; f++) {         /* every other field out of range */
        static const uint32_t badv[14] = { 0, 12, 12, 2, 0, 0, 2, 0, 2, 2, 0, 65536, 2, 3 };
        if (f == 7u) continue;                   /* seed: every value allowed */
        bad_init(&b);
        fields = (uint32_t *)&b.p;
        fields[f] = badv[f];
        REQ_MSG(bad_q(&b, 0, 8, 4, 1) == KVQ_E_PARAM, "field %u = %u accepted", f, badv[f]);
        REQ(bad_untouched(&b));
    }
}
END_TEST

/* Row 3.  SPEC: [PKV-Q-01] [PKV-ERR-02] */
START_TEST(bad_row03_kind_policy)
{
    struct bad_setup b;
    kvq_policy pol = kvq_policy_default;
    bad_init(&b);
    REQ(bad_q(&b, 3, 8, 4, 1) == KVQ_E_PARAM);
    pol.ties = 2;
    REQ(kvq_pkv_quantize(b.codes, b.scale, b.zero, b.index, b.resid, &b.flags, b.x, 0, 8, 4,
                         b.bank, 1, &b.p, &pol) == KVQ_E_PARAM);
    REQ(bad_untouched(&b));
}
END_TEST

/* Row 4.  SPEC: [PKV-KM-01] [PKV-ERR-02] */
START_TEST(bad_row04_fewer_tokens_than_patterns)
{
    struct bad_setup b;
    float C[33 * 4];
    uint32_t cl[8], it = 7, conv = 7;
    bad_init(&b);
    memset(C, SENT8, sizeof C);
    memset(cl, SENT8, sizeof cl);
    b.p.patterns = 9;
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, b.x, 8, 4, &b.p) == KVQ_E_SHAPE);
    REQ(all_bytes(C, sizeof C, SENT8) && all_bytes(cl, sizeof cl, SENT8) && it == 7 && conv == 7);
    b.p.patterns = 8;                            /* L == M is fine */
    REQ(kvq_pkv_kmeans(C, cl, &it, &conv, b.x, 8, 4, &b.p) == KVQ_OK);
}
END_TEST

/* Row 5.  SPEC: [PKV-L-01] [PKV-ERR-02] */
START_TEST(bad_row05_not_multiple_of_group)
{
    struct bad_setup b;
    bad_init(&b);
    REQ(bad_q(&b, KVQ_PKV_VALUE, 2, 12, 1) == KVQ_E_SHAPE); /* d = 12, G = 8 */
    REQ(bad_q(&b, KVQ_PKV_KEY_DECODE, 6, 4, 1) == KVQ_E_SHAPE); /* T = 6 */
    REQ(bad_q(&b, KVQ_PKV_KEY_PREFILL, 0, 4, 1) == KVQ_E_SHAPE);
    REQ(bad_untouched(&b));
}
END_TEST

/* Row 6.  SPEC: [PKV-L-03] [PKV-ERR-02] */
START_TEST(bad_row06_empty_pattern_set)
{
    struct bad_setup b;
    bad_init(&b);
    REQ(bad_q(&b, 0, 8, 4, 0) == KVQ_E_SHAPE);
    REQ(bad_q(&b, KVQ_PKV_VALUE, 2, 8, 0) == KVQ_E_SHAPE);
    REQ(bad_q(&b, 0, 8, 4, 65536) == KVQ_E_SHAPE);
    REQ(kvq_pkv_dequantize(b.y, &b.flags, b.codes, b.scale, b.zero, b.index, 0, 8, 4, b.bank, 0,
                           &b.p, &kvq_policy_default) == KVQ_E_SHAPE);
    REQ(kvq_pkv_assign(b.index, b.x, 8, 4, b.bank, 0, 0) == KVQ_E_SHAPE);
    REQ(bad_untouched(&b));
}
END_TEST

/* Row 7.  SPEC: [PKV-DOM-01] [PKV-ERR-02] */
START_TEST(bad_row07_nonfinite_pattern)
{
    const float bad[3] = { NAN, INFINITY, -INFINITY };
    for (uint32_t k = 0; k < 3u; k++)
        for (uint32_t at = 0; at < 16u; at += 5u) {
            struct bad_setup b;
            bad_init(&b);
            b.bank[at] = bad[k];
            REQ(bad_q(&b, KVQ_PKV_VALUE, 2, 8, 2) == KVQ_E_NONFINITE);
            REQ(kvq_pkv_dequantize(b.y, &b.flags, b.codes, b.scale, b.zero, b.index,
                                   KVQ_PKV_VALUE, 2, 8, b.bank, 2, &b.p,
                                   &kvq_policy_default) == KVQ_E_NONFINITE);
            b.bank[15 - at] = 0x1p60f;           /* finiteness is reported before range */
            REQ(bad_q(&b, KVQ_PKV_VALUE, 2, 8, 2) == KVQ_E_NONFINITE);
            REQ(bad_untouched(&b));
        }
}
END_TEST

/* Row 8.  SPEC: [PKV-DOM-01] [PKV-ERR-02] */
START_TEST(bad_row08_nonfinite_input)
{
    const float bad[3] = { NAN, INFINITY, -INFINITY };
    for (uint32_t k = 0; k < 3u; k++)
        for (uint32_t at = 0; at < 32u; at += 7u) {
            struct bad_setup b;
            float C[8], ce[4];
            uint32_t np = 1;
            bad_init(&b);
            memset(C, SENT8, sizeof C);
            memset(ce, SENT8, sizeof ce);
            b.x[at] = bad[k];
            b.p.patterns = 2;
            REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_E_NONFINITE);
            REQ(kvq_pkv_kmeans(C, NULL, NULL, NULL, b.x, 8, 4, &b.p) == KVQ_E_NONFINITE);
            REQ(kvq_pkv_chebyshev(ce, b.x, 8, 4) == KVQ_E_NONFINITE);
            REQ(kvq_exact_pkv_chebyshev(ce, b.x, 8, 4) == KVQ_E_NONFINITE);
            REQ(kvq_pkv_bank_update(C, &np, NULL, 2, b.x, 8, 4, &b.p) == KVQ_E_NONFINITE);
            REQ(np == 1 && all_bytes(C, sizeof C, SENT8) && all_bytes(ce, sizeof ce, SENT8));
            REQ(bad_untouched(&b));
        }
}
END_TEST

/* Row 9.  SPEC: [PKV-DOM-01] [PKV-ERR-02] */
START_TEST(bad_row09_outside_domain)
{
    struct bad_setup b;
    bad_init(&b);
    b.x[5] = 0x1.000002p48f;
    REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_E_RANGE);
    b.x[5] = 0x1p48f;                            /* the edge is inside */
    b.bank[2] = -0x1.000002p48f;
    REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_E_RANGE);
    REQ(bad_untouched(&b));
    b.bank[2] = -0x1p48f;
    REQ(bad_q(&b, 0, 8, 4, 1) == KVQ_OK);
}
END_TEST

/* Row 10.  SPEC: [PKV-D-02] [PKV-ERR-02] */
START_TEST(bad_row10_stored_index)
{
    struct bad_setup b;
    bad_init(&b);
    REQ(bad_q(&b, 0, 8, 4, 2) == KVQ_OK);
    memset(b.y, SENT8, sizeof b.y);
    b.index[3] = 2;                              /* past npat */
    REQ(kvq_pkv_dequantize(b.y, NULL, b.codes, b.scale, b.zero, b.index, 0, 8, 4, b.bank, 2,
                           &b.p, &kvq_policy_default) == KVQ_E_PARAM);
    b.index[3] = KVQ_PKV_NO_PATTERN;             /* raw is for values only */
    REQ(kvq_pkv_dequantize(b.y, NULL, b.codes, b.scale, b.zero, b.index, 0, 8, 4, b.bank, 2,
                           &b.p, &kvq_policy_default) == KVQ_E_PARAM);
    REQ(all_bytes(b.y, sizeof b.y, SENT8));
}
END_TEST

/* Row 11.  SPEC: [PKV-V-02] [PKV-ERR-02] */
START_TEST(bad_row11_threshold_args)
{
    float t = 5.0f;
    mpfr_t lo, hi;
    REQ(kvq_pkv_rho_star(&t, 7, 0) == KVQ_E_SHAPE);
    REQ(kvq_pkv_rho_star(&t, 128, 3) == KVQ_E_PARAM);
    REQ(kvq_f32_same(t, 5.0f));
    REQ(kvq_pkv_rho_star(&t, 8, 2) == KVQ_OK);   /* the smallest d: c < 1 */
    REQ(t > 0.0f && t < 1.0f);
    mpfr_inits2(64, lo, hi, (mpfr_ptr)0);
    REQ(kvq_exact_pkv_rho_bracket(lo, hi, 7, 0) == KVQ_E_SHAPE);
    REQ(kvq_exact_pkv_rho_bracket(lo, hi, 128, 3) == KVQ_E_PARAM);
    mpfr_clears(lo, hi, (mpfr_ptr)0);
}
END_TEST

/* Row 12.  SPEC: [PKV-U-04] [PKV-ERR-02] */
START_TEST(bad_row12_bank_full)
{
    struct bad_setup b;
    float bank[2 * 4];
    uint32_t np = 2;
    bad_init(&b);
    memset(bank, SENT8, sizeof bank);
    REQ(kvq_pkv_bank_update(bank, &np, NULL, 2, b.x, 8, 4, &b.p) == KVQ_E_SHAPE);
    REQ(np == 2 && all_bytes(bank, sizeof bank, SENT8));
    b.p.residual = 8;
    REQ(kvq_pkv_key_flush(b.codes, b.scale, b.zero, b.index, b.resid, &b.flags, bank, &np, 2, b.x,
                          4, &b.p, &kvq_policy_default) != KVQ_OK);
    REQ(np == 2 && all_bytes(bank, sizeof bank, SENT8) && bad_untouched(&b));
}
END_TEST

/* ========================================================================= */

static Suite *pkv_suite(void)
{
    Suite *s = suite_create("pkv");
    TCase *tc;

    tc = tcase_create("special_values");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, special_chebyshev_vs_exact);
    tcase_add_test(tc, special_minmax_vs_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("ties");
    tcase_add_test(tc, ties_shifted_patterns_lowest_index);
    tcase_add_test(tc, ties_euclid_lowest_index);
    suite_add_tcase(s, tc);

    tc = tcase_create("pruning");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pruning_bounds_sound);
    tcase_add_test(tc, pruning_argmin_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("degenerate");
    tcase_add_test(tc, degenerate_constant_tokens);
    tcase_add_test(tc, degenerate_empty_cluster_keeps_centroid);
    tcase_add_test(tc, degenerate_constant_value_raw);
    tcase_add_test(tc, degenerate_as_many_tokens_as_patterns);
    tcase_add_test(tc, degenerate_returns_fixed_point_not_update);
    tcase_add_test(tc, degenerate_random_init_order);
    tcase_add_test(tc, degenerate_prefill_metric_variant);
    suite_add_tcase(s, tc);

    tc = tcase_create("packing");
    tcase_add_test(tc, packing_effective_bits);
    tcase_add_test(tc, packing_layout_helpers);
    tcase_add_test(tc, packing_bank_schedule);
    suite_add_tcase(s, tc);

    tc = tcase_create("updates");
    tcase_add_test(tc, updates_key_flush_order);
    tcase_add_test(tc, updates_cap_and_room);
    tcase_add_test(tc, updates_value_step);
    suite_add_tcase(s, tc);

    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, random_kmeans_properties);
    tcase_add_test(tc, random_blocks_vs_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("threshold");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, threshold_table_recomputed);
    tcase_add_test(tc, threshold_fast_within_bracket);
    tcase_add_test(tc, threshold_decisions_vs_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_add_test(tc, bad_row01_null);
    tcase_add_test(tc, bad_row02_params);
    tcase_add_test(tc, bad_row03_kind_policy);
    tcase_add_test(tc, bad_row04_fewer_tokens_than_patterns);
    tcase_add_test(tc, bad_row05_not_multiple_of_group);
    tcase_add_test(tc, bad_row06_empty_pattern_set);
    tcase_add_test(tc, bad_row07_nonfinite_pattern);
    tcase_add_test(tc, bad_row08_nonfinite_input);
    tcase_add_test(tc, bad_row09_outside_domain);
    tcase_add_test(tc, bad_row10_stored_index);
    tcase_add_test(tc, bad_row11_threshold_args);
    tcase_add_test(tc, bad_row12_bank_full);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return kvq_check_main("check_pkv", pkv_suite(), &g_seed, &g_cases);
}
