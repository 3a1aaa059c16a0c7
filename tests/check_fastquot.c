/*
 * check_fastquot.c -- Check suite of the division-free codes of the CUDA
 * quantizers: the KIVI fused estimate [KIVI-DEV-01] and the SAGE Q/K estimate
 * [SAGE-DEV-10], each modelled in C (binary32 operations, fmaf, no
 * contraction: the same roundings as the device's __fmaf_rn, __fmul_rn,
 * __fadd_rn) and compared with the pinned sequence of ref/fast on every
 * binary32 x of the domain the kernels can see for the scale and offset drawn.
 *
 * Rules this file keeps [TEST-CMP-01]: codes are compared as integers; the
 * pinned sequence is the reference's (x - z, the division, kvq_round_int of
 * ref/fast/kivi.c; SAGE's public rounding RN32(q +- 1/2) truncated), and
 * kvq_kivi_quantize_group itself gives the stored s and z of every KIVI case
 * and the codes of its extremes, so the model of the reference is held to the
 * reference; every estimate that passes the near-tie test must give the
 * reference's code, and the largest |qe - q| seen must stay below the bound the
 * spec derives (1535 * 2^-24 for KIVI, 2^-15 for SAGE).  A planted wrong
 * threshold (KVQ_FASTQUOT_PLANT=1: the band 2^-20 instead of 2^-12) must fail.
 *
 * The domain, exhaustively: KIVI, every x whose estimate lies in
 * [1/4, cmax + 1/4] (below 1/4 the code is 0 on both paths: |q - qe| < 2^-13);
 * x with 0 < |x| < 2^-27 |z| give x - z = -z and the estimate of x = 0, so 0
 * stands for them.  SAGE, every x with 1/4 <= x/s <= cmax (1 + 2^-23) (RN, the
 * tie rules and the public rounding are odd functions: -x gives -k).  The cases:
 * bits 2, 4, 8 (KIVI), 4, 8 (SAGE), both tie rules, both roundings, scales and
 * offsets as below.  Default (make test): a few groups off zero and slot maxima
 * in two binades, seconds; KVQ_FASTQUOT_FULL=1: every 4th binade, groups across
 * zero in five, the negative half (make fastquot-full; about half an hour on one
 * core).
 * KVQ_RANDOM_CASES caps the x a test visits (make test-san: 20000).
 *
 * SPEC: [KIVI-DEV-01] [SAGE-DEV-10] [KIVI-Q-04] [KIVI-Q-05] [SAGE-Q-03] [SAGE-Q-05]
 *       [POL-TIE-01] [POL-TIE-02]
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_sage.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d66717431ull /* "kvq-fqt1" */
#define MAGIC_RND     0x1.8p23f             /* 1.5 * 2^23 */
#define MAGIC_BITS    0x4B400000u
#define FUSED_ZR_MAX  0x1p9f
#define KIVI_BOUND    (1535.0 * 0x1p-24)    /* [KIVI-DEV-01] */
#define SAGE_BOUND    0x1p-15               /* [SAGE-DEV-10] */

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = UINT64_MAX;       /* KVQ_RANDOM_CASES: at most this many x a test */
static int g_full;
static float g_near = 0x1.ffcp-2f;          /* 1/2 - 2^-12, the kernels' NEAR_HALF */

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float fromb(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The next binary32 above x (finite x). */
static float up(float x)
{
    return nextafterf(x, INFINITY);
}

/* The estimate's verdict: 1 and *code when qe passes the near-tie test. */
static int fast_code(float qe, int32_t *code)
{
    const float m = qe + MAGIC_RND;
    const float d = qe - (m - MAGIC_RND);
    if (!(fabsf(d) <= g_near)) return 0;
    *code = (int32_t)(fbits(m) - MAGIC_BITS);
    return 1;
}

typedef struct tally {
    uint64_t seen, fast, near;
    double maxerr;
} tally;

/* The x budget of a test is spent (KVQ_RANDOM_CASES; make test-san sets it). */
static int spent(const tally *t)
{
    return t->seen >= g_cases;
}

/* ---- KIVI [KIVI-DEV-01] --------------------------------------------------- */

/* Every x of the fast domain of (s, z) against the pinned sequence. */
static void kivi_domain(float s, float z, uint32_t bits, uint32_t ties, tally *t)
{
    const float cmax = (float)kvq_code_max(bits);
    const float rcp = 1.0f / s;
    const float nzr = -(z * rcp);
    const float tiny = fabsf(z) * 0x1p-27f;
    if (!(rcp >= 0x1p-126f) || !(fabsf(nzr) <= FUSED_ZR_MAX)) return; /* not a fast group */
    /* from below the estimate 1/4 to above cmax + 1/4 (monotone in x) */
    float x = (float)((double)z + 0.2 * (double)s);
    const float xe = (float)((double)z + ((double)cmax + 0.3) * (double)s);
    for (; x <= xe && !spent(t); x = up(x)) {
        if (x != 0.0f && fabsf(x) < tiny) { /* they give what x = 0 gives (see the head) */
            x = x < 0.0f ? 0.0f : nextafterf(tiny, 0.0f); /* 0 now, tiny next */
            if (x != 0.0f) continue;
        }
        const float qe = fmaf(x, rcp, nzr);
        if (qe < 0.25f || qe > cmax + 0.25f) continue;
        t->seen++;
        const float q = (x - z) / s;       /* the pinned sequence [KIVI-Q-04] */
        const double err = fabs((double)qe - (double)q);
        if (err > t->maxerr) t->maxerr = err;
        int32_t c;
        if (!fast_code(qe, &c)) {
            t->near++;
            continue;
        }
        t->fast++;
        const int64_t k = kvq_round_int(q, ties);
        REQ_MSG(k == c && k >= 0 && k <= (int64_t)cmax,
                "kivi: x %08x s %08x z %08x bits %u ties %u: estimate %08x gives %d, the pinned "
                "sequence %lld", fbits(x), fbits(s), fbits(z), bits, ties, fbits(qe), c, (long long)k);
    }
    REQ_MSG(t->maxerr < KIVI_BOUND, "kivi: s %08x z %08x: |qe - q| = %a past the bound %a",
            fbits(s), fbits(z), t->maxerr, KIVI_BOUND);
}

/* A group [mn, mx] through the reference: its stored s and z, and its codes of
 * mn and mx against the model of the pinned sequence; then the domain. */
static void kivi_group(float mn, float mx, uint32_t bits, uint32_t meta, uint32_t ties, tally *t)
{
    float v[8] = {mn, mx, mn, mx, mn, mx, mn, mx}, s, z;
    uint8_t grp[8];
    uint32_t flags = 0;
    const kvq_policy pol = mkpol(ties, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP);
    if (kvq_kivi_quantize_group(grp, &s, &z, &flags, v, 1, 8, bits, meta, &pol) != KVQ_OK) return;
    if (s == 0.0f) return;
    for (uint32_t i = 0; i < 2; i++) {
        const int64_t k = kvq_round_int((v[i] - z) / s, ties);
        const int64_t c = k < 0 ? 0 : k > (int64_t)kvq_code_max(bits) ? kvq_code_max(bits) : k;
        REQ_EQ(kvq_unpack_code(grp, i, bits), c); /* the model is the reference */
    }
    kivi_domain(s, z, bits, ties, t);
}

/* Groups of range r = (1 + frac) 2^e, offsets mn = c r: by default the binades
 * of kivi_e and the offsets of kivi_off (domains off zero); under
 * KVQ_FASTQUOT_FULL the binades and offsets of kivi_off_full below
 * (domains across zero). */
static void kivi_group_grid(int e, const double *cs, int ncs, uint32_t bits, tally *t)
{
    for (int ci = 0; ci < ncs; ci++)
        for (uint32_t meta = 0; meta < 2; meta++)
            for (uint32_t ties = 0; ties < 2; ties++) {
                const double r = ldexp(1.0 + 0.3183 * ((e & 3) + 1), e);
                const float mn = (float)(cs[ci] * r), mx = (float)((double)mn + r);
                if (meta == KVQ_META_F16 && (fabs((double)mn) + r > 60000.0 || r < 0x1p-10))
                    continue;              /* the binary16 metadata's range */
                if (meta == KVQ_META_F16 && !g_full && ties == KVQ_TIES_AWAY) continue;
                kivi_group(mn, mx, bits, meta, ties, t);
            }
}

static const int kivi_e[] = {-61, 3};
static const double kivi_off[] = {1.9, -1.9};                    /* domains off zero */
/* KVQ_FASTQUOT_FULL: four offsets off zero (every 4th binade), four across zero (2^28 x
 * a group: every 50th binade) */
static const double kivi_off_full[] = {1.9, -1.9, 0.37, -1.5, 0.0, -0.5, -0.13, -0.87};

START_TEST(kivi_exhaustive)
{
    static const uint32_t bitsv[] = {2, 4, 8};
    const uint32_t bits = bitsv[_i];
    tally t = {0, 0, 0, 0.0};
    if (g_full) {
        for (int e = -100; e <= 100; e += 4) kivi_group_grid(e, kivi_off_full, 4, bits, &t);
        for (int e = -100; e <= 100; e += 50) kivi_group_grid(e, kivi_off_full + 4, 4, bits, &t);
    } else {
        for (int i = 0; i < 2; i++) kivi_group_grid(kivi_e[i], kivi_off, 2, bits, &t);
    }
    printf("check_fastquot: kivi bits %u: %llu x in the fast domain, %llu decided by the estimate, "
           "%llu near ties redone; max |qe - q| = %.3g (bound %.3g)\n", bits,
           (unsigned long long)t.seen, (unsigned long long)t.fast, (unsigned long long)t.near,
           t.maxerr, KIVI_BOUND);
    if (g_cases >= 10000000u) {            /* the whole default grid */
        REQ(t.fast > 1000000u);            /* the grid reached the domain */
        REQ(t.near > 0u);                  /* and its near ties */
    }
}
END_TEST

/* ---- SAGE [SAGE-DEV-10] ---------------------------------------------------- */

static int32_t sage_pinned(float x, float s, int32_t cmax, uint32_t rounding, uint32_t ties)
{
    const float q = x / s;                 /* RN32 [SAGE-Q-03] */
    int32_t k;
    if (rounding == KVQ_SAGE_ROUND_PUBLIC) k = (int32_t)(q >= 0.0f ? q + 0.5f : q - 0.5f);
    else k = (int32_t)kvq_round_int(q, ties);
    return k < -cmax ? -cmax : k > cmax ? cmax : k;
}

static void sage_domain(float m, uint32_t bits, uint32_t rounding, uint32_t ties, tally *t)
{
    const int32_t cmax = (int32_t)kvq_sage_cmax(bits);
    float s = m / (float)cmax;             /* the stored scale [SAGE-Q-02] [SAGE-Q-05] */
    if (rounding == KVQ_SAGE_ROUND_PUBLIC) s = s + KVQ_SAGE_PUBLIC_EPS;
    else if (s < 0x1p-126f) return;        /* zero scale: code 0 on both paths */
    const float rcp = 1.0f / s;
    REQ(rcp >= 0x1p-126f);                 /* every stored scale has a normal reciprocal */
    const float lo = 0.25f * s;
    for (int sign = 0; sign < (g_full ? 2 : 1); sign++)
        for (float a = lo; a <= m && !spent(t); a = up(a)) {
            const float x = sign ? -a : a;
            const float qe = x * rcp;
            t->seen++;
            const float q = x / s;
            const double err = fabs((double)qe - (double)q);
            if (err > t->maxerr) t->maxerr = err;
            int32_t c;
            if (!fast_code(qe, &c)) {
                t->near++;
                continue;
            }
            t->fast++;
            const int32_t k = sage_pinned(x, s, cmax, rounding, ties);
            REQ_MSG(k == c, "sage: x %08x s %08x bits %u rounding %u ties %u: estimate %08x "
                    "gives %d, the pinned sequence %d", fbits(x), fbits(s), bits, rounding, ties,
                    fbits(qe), c, k);
        }
    REQ_MSG(t->maxerr < SAGE_BOUND, "sage: s %08x: |qe - q| = %a past the bound %a", fbits(s),
            t->maxerr, SAGE_BOUND);
}

START_TEST(sage_exhaustive)
{
    const uint32_t bits = _i == 0 ? 4u : 8u;
    tally t = {0, 0, 0, 0.0};
    /* the slot maxima: by default 2^3 (paper, both ties; public) and 1.618 2^-40
     * (paper, even); under KVQ_FASTQUOT_FULL every 4th binade, two mantissas */
    if (!g_full) {
        sage_domain(8.0f, bits, KVQ_SAGE_ROUND_PAPER, KVQ_TIES_EVEN, &t);
        sage_domain(8.0f, bits, KVQ_SAGE_ROUND_PAPER, KVQ_TIES_AWAY, &t);
        sage_domain(8.0f, bits, KVQ_SAGE_ROUND_PUBLIC, KVQ_TIES_EVEN, &t);
        sage_domain(0x1.9e377ap-40f, bits, KVQ_SAGE_ROUND_PAPER, KVQ_TIES_EVEN, &t);
    } else {
        for (int e = -120; e <= 120; e += 4)
            for (uint32_t rounding = 0; rounding < 2; rounding++)
                for (uint32_t ties = 0; ties < 2; ties++) {
                    if (rounding == KVQ_SAGE_ROUND_PUBLIC && ties == KVQ_TIES_AWAY) continue;
                    if (rounding == KVQ_SAGE_ROUND_PUBLIC && e < -20) continue; /* the bias rules */
                    sage_domain(ldexpf(e & 4 ? 1.0f : 1.6180339f, e), bits, rounding, ties, &t);
                }
    }
    printf("check_fastquot: sage bits %u: %llu x, %llu decided by the estimate, %llu near ties "
           "redone; max |qe - q| = %.3g (bound %.3g)\n", bits, (unsigned long long)t.seen,
           (unsigned long long)t.fast, (unsigned long long)t.near, t.maxerr, SAGE_BOUND);
    if (g_cases >= 10000000u) {
        REQ(t.fast > 1000000u);
        REQ(t.near > 0u);
    }
}
END_TEST

static Suite *fastquot_suite(void)
{
    Suite *s = suite_create("fastquot");
    TCase *tc = tcase_create("kivi");
    tcase_set_timeout(tc, 3600);
    tcase_add_loop_test(tc, kivi_exhaustive, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("sage");
    tcase_set_timeout(tc, 3600);
    tcase_add_loop_test(tc, sage_exhaustive, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *full = getenv("KVQ_FASTQUOT_FULL"), *plant = getenv("KVQ_FASTQUOT_PLANT");
    g_full = full != NULL && strcmp(full, "1") == 0;
    if (plant != NULL && strcmp(plant, "1") == 0) g_near = 0x1.fffffp-2f; /* 1/2 - 2^-20 */
    (void)fromb;
    return kvq_check_main("check_fastquot", fastquot_suite(), &g_seed, &g_cases);
}
