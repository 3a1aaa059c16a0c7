/*
 * check_mma.c -- Check suite of the accumulator models (include/kvq_mma.h,
 * spec/sage.md "The accumulator").
 *
 * The models are judged against independent computations, never against
 * themselves [TEST-CMP-01]:
 *  - kvq_mma_add_f32 against the host FPU's binary32 addition, rounding to
 *    nearest and toward zero (fesetround), on random encodings with close and
 *    distant exponents, subnormals included;
 *  - kvq_mma_cut against MPFR's truncation and floor of t / 2^q;
 *  - a step with no truncation (frac large enough for the tile: exponent
 *    fields in a window, so every term is a multiple of 2^(E - frac)) against
 *    the MPFR sum rounded once to binary32, both roundings; kvq_mma_to_f32
 *    with `bits` 14 against mpfr_round to 14 bits in binary32's range;
 *  - the layout tiles (KVQ_MMA_DIST_EXACT): every model gives the exact sum;
 *  - the subnormal tiles (KVQ_MMA_DIST_SUBNORMAL) separate the two readings
 *    of a subnormal operand's alignment (the format's emin, its own
 *    exponent) on at least a quarter of their outputs, per format, so that
 *    the probe's run decides between them.
 * Random cases: KVQ_RANDOM_CASES (default 20000) from a fixed seed, KVQ_SEED
 * overrides it; a failure prints the seed and the operands in hex.
 */
#include <check.h>
#include <fenv.h>
#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <string.h>

#include "kvq_mma.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d6d6d6173ull /* "kvq-mmas" */
#define CASES_DEFAULT 20000u

static uint64_t g_seed = SEED_DEFAULT, g_cases = CASES_DEFAULT;

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* A finite binary32 encoding; one time in three within 40 binades of `near`. */
static uint32_t rnd_f32(kvq_rng *r, uint32_t near)
{
    for (;;) {
        uint32_t u = (uint32_t)kvq_rng_next(r);
        if (near != 0xFFFFFFFFu && kvq_rng_below(r, 3) == 0u) {
            int32_t e = (int32_t)((near >> 23) & 0xFFu) + (int32_t)kvq_rng_below(r, 81) - 40;
            if (e < 0) e = 0;
            if (e > 254) e = 254;
            u = (u & 0x807FFFFFu) | ((uint32_t)e << 23);
        }
        if (((u >> 23) & 0xFFu) != 0xFFu) return u;
    }
}

/* The exact value of term t into x (precision 128 holds any term). */
static void term_mpfr(mpfr_t x, kvq_mma_term t)
{
    mpfr_set_ui(x, 0, MPFR_RNDN);
    if (t.mag == 0u) return;
    mpfr_set_uj(x, (uintmax_t)t.mag, MPFR_RNDN);               /* exact: 64 bits < 128 */
    mpfr_mul_2si(x, x, t.e, MPFR_RNDN);
    if (t.neg) mpfr_neg(x, x, MPFR_RNDN);
}

/* SPEC: [SAGE-ACC-03] */
START_TEST(add_vs_fpu)
{
    kvq_rng r = {g_seed ^ 1u};
    const int modes[2] = {FE_TONEAREST, FE_TOWARDZERO};
    for (int mi = 0; mi < 2; mi++) {
        ck_assert_int_eq(fesetround(modes[mi]), 0);
        for (uint64_t i = 0; i < 20u * g_cases; i++) {
            const uint32_t u = rnd_f32(&r, 0xFFFFFFFFu), v = rnd_f32(&r, u);
            volatile float a = f32(u), b = f32(v);
            const float s = a + b;
            const uint32_t want = u32(s);
            if (((want >> 23) & 0xFFu) == 0xFFu || (mi == 1 && (want & 0x7FFFFFFFu) == 0x7F7FFFFFu))
                continue;                                       /* overflow: outside the models */
            const uint32_t got = kvq_mma_add_f32(u, v, mi ? KVQ_MMA_ROUND_RZ : KVQ_MMA_ROUND_RNE);
            if (got != want) {
                fesetround(FE_TONEAREST);
                ck_abort_msg("seed 0x%016" PRIx64 ": 0x%08x + 0x%08x (%s): model 0x%08x, FPU 0x%08x", g_seed, u,
                             v, mi ? "rz" : "rne", got, want);
            }
        }
    }
    fesetround(FE_TONEAREST);
}
END_TEST

/* SPEC: [SAGE-ACC-01] */
START_TEST(cut_vs_mpfr)
{
    kvq_rng r = {g_seed ^ 2u};
    mpfr_t x, y;
    mpfr_inits2(160, x, y, (mpfr_ptr)0);
    for (uint64_t i = 0; i < 10u * g_cases; i++) {
        kvq_mma_term t;
        t.neg = (uint32_t)kvq_rng_below(&r, 2);
        t.mag = kvq_rng_next(&r) >> (11 + kvq_rng_below(&r, 40));  /* < 2^53 */
        t.e = (int32_t)kvq_rng_below(&r, 200) - 100;
        const int32_t q = t.e + (int32_t)kvq_rng_below(&r, 70) - 9;  /* t.e >= q - 63 */
        for (uint32_t cut = 0; cut < 2u; cut++) {
            const int64_t n = kvq_mma_cut(t, q, cut);
            term_mpfr(x, t);
            mpfr_mul_2si(x, x, -q, MPFR_RNDN);                  /* exact */
            if (cut == KVQ_MMA_CUT_RZ) mpfr_trunc(y, x);
            else mpfr_floor(y, x);
            mpfr_set_sj(x, (intmax_t)n, MPFR_RNDN);
            if (!mpfr_equal_p(x, y))
                ck_abort_msg("seed 0x%016" PRIx64 ": cut %u of %s0x%" PRIx64 "*2^%d at 2^%d: %" PRId64, g_seed, cut,
                             t.neg ? "-" : "", t.mag, t.e, q, n);
        }
    }
    mpfr_clears(x, y, (mpfr_ptr)0);
}
END_TEST

/* A step that truncates nothing (narrow tiles, frac 40) is the MPFR sum
 * rounded once; bits 14 is mpfr_prec_round to 14 bits.
 * SPEC: [SAGE-ACC-01] [SAGE-ACC-03] */
START_TEST(step_vs_mpfr)
{
    mpfr_t x, p;
    mpfr_inits2(256, x, p, (mpfr_ptr)0);
    mpfr_set_emin(-148);                                        /* binary32 range for subnormal rounding */
    mpfr_set_emax(128);
    uint64_t n = 0;
    for (uint64_t tile = 0; n < g_cases; tile++) {
        for (uint32_t fmt = 0; fmt < 2u; fmt++) {
            uint8_t a[32], b[32];
            const uint32_t c = kvq_mma_tile_output(g_seed, tile, KVQ_MMA_DIST_NARROW, fmt, 0u, 0u, a, b);
            mpfr_set_ui(x, 0, MPFR_RNDN);
            for (uint32_t k = 0; k < 32u; k++) {
                const kvq_mma_term s = kvq_mma_fp8_term(a[k], fmt), t = kvq_mma_fp8_term(b[k], fmt);
                kvq_mma_term pr = {s.neg ^ t.neg, s.mag * t.mag, s.e + t.e};
                term_mpfr(p, pr);
                mpfr_add(x, x, p, MPFR_RNDN);                   /* exact at 256 bits */
            }
            term_mpfr(p, kvq_mma_f32_term(c));
            mpfr_add(x, x, p, MPFR_RNDN);
            for (uint32_t rd = 0; rd < 2u; rd++) {
                for (uint32_t bits = 14u; bits <= 24u; bits += 10u) {
                    /* frac 48: no term is cut when every term's last bit is at or above
                     * 2^(E-48) (narrow tiles, unless C lies far from the products); a case
                     * where some term would be cut says nothing here and is skipped */
                    kvq_mma_model m = {32u, 48u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, bits, rd,
                                       KVQ_MMA_ALIGN_VALUE, 0, KVQ_MMA_ZERO_SKIP, 0u};
                    const kvq_mma_term ct = kvq_mma_f32_term(c);
                    int32_t emax = ct.mag ? kvq_mma_top(ct) : -100000, lsb = ct.mag ? ct.e : 100000;
                    for (uint32_t k = 0; k < 32u; k++) {
                        const kvq_mma_term s = kvq_mma_fp8_term(a[k], fmt), t = kvq_mma_fp8_term(b[k], fmt);
                        kvq_mma_term pr = {s.neg ^ t.neg, s.mag * t.mag, s.e + t.e};
                        if (pr.mag && kvq_mma_top(pr) > emax) emax = kvq_mma_top(pr);
                        if (pr.mag && pr.e < lsb) lsb = pr.e;
                    }
                    if (lsb < emax - 48) continue;
                    mpfr_t y;
                    mpfr_init2(y, (mpfr_prec_t)bits);
                    int inex = mpfr_set(y, x, rd ? MPFR_RNDN : MPFR_RNDZ);
                    inex = mpfr_subnormalize(y, inex, rd ? MPFR_RNDN : MPFR_RNDZ);
                    const float want = mpfr_get_flt(y, MPFR_RNDN);  /* exact: y has <= 24 bits */
                    mpfr_clear(y);
                    const uint32_t got = kvq_mma_dot(a, b, 32u, c, fmt, &m);
                    if (got != u32(want) && !(want == 0.0f && (got & 0x7FFFFFFFu) == 0u))
                        ck_abort_msg("seed 0x%016" PRIx64 " tile %" PRIu64 " fmt %u bits %u %s: model 0x%08x, "
                                     "MPFR 0x%08x", g_seed, tile, fmt, bits, rd ? "rne" : "rz", got, u32(want));
                    n++;
                }
            }
        }
    }
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    mpfr_clears(x, p, (mpfr_ptr)0);
}
END_TEST

/* On the layout tiles every model of the probe's families is exact.
 * SPEC: [SAGE-ACC-02] [SAGE-ACC-04] */
START_TEST(layout_tiles_exact)
{
    const kvq_mma_model ms[3] = {kvq_mma_model_wgmma_fp8(0u), kvq_mma_model_wgmma_fp8(1u),
                                 kvq_mma_model_mma_fp8_sm90()};
    for (uint64_t tile = 0; tile < g_cases / 8u; tile++) {
        for (uint32_t fmt = 0; fmt < 2u; fmt++) {
            uint8_t a[32], b[32];
            const uint32_t c = kvq_mma_tile_output(g_seed, tile, KVQ_MMA_DIST_EXACT, fmt, 3u, 5u, a, b);
            double s = 0.0;                                     /* exact: integers below 2^12 */
            for (uint32_t k = 0; k < 32u; k++) {
                const kvq_mma_term x = kvq_mma_fp8_term(a[k], fmt), y = kvq_mma_fp8_term(b[k], fmt);
                s += (x.neg ^ y.neg ? -1.0 : 1.0) * ldexp((double)(x.mag * y.mag), x.e + y.e);
            }
            s += (double)f32(c);
            const float want = (float)s;
            ck_assert_msg((double)want == s, "tile %" PRIu64 ": the layout tile's sum is not a binary32", tile);
            const uint32_t own[2] = {fmt, 2u};                 /* wgmma of this format, mma.sync */
            for (uint32_t j = 0; j < 2u; j++) {
                const uint32_t i = own[j];
                const uint32_t got = kvq_mma_dot(a, b, 32u, c, fmt, &ms[i]);
                if (got != u32(want) && !(want == 0.0f && (got & 0x7FFFFFFFu) == 0u))
                    ck_abort_msg("seed 0x%016" PRIx64 " tile %" PRIu64 " fmt %u model %u: 0x%08x, exact 0x%08x",
                                 g_seed, tile, fmt, i, got, u32(want));
            }
        }
    }
}
END_TEST

/* The wgmma model at the format's emin and with every subnormal at its own
 * exponent (emin -149) give different outputs on at least a quarter of the
 * subnormal distribution's outputs; the other distributions' count of
 * differing outputs is printed (the spec states they do not separate).
 * SPEC: [SAGE-ACC-02] [SAGE-ACC-04] */
START_TEST(subnormal_tiles_separate)
{
    for (uint32_t fmt = 0; fmt < 2u; fmt++) {
        const kvq_mma_model own = kvq_mma_model_wgmma_fp8(fmt);
        kvq_mma_model sub = own;
        sub.emin = -149;
        uint64_t n[KVQ_MMA_NDIST] = {0}, diff[KVQ_MMA_NDIST] = {0};
        for (uint64_t tile = 0; tile < g_cases / 64u + 1u; tile++)
            for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++)
                for (uint32_t r = 0; r < 64u; r += 7u) {
                    uint8_t a[32], b[32];
                    const uint32_t c = kvq_mma_tile_output(g_seed, tile, dist, fmt, r, (uint32_t)(tile % 8u), a, b);
                    n[dist]++;
                    diff[dist] += kvq_mma_dot(a, b, 32u, c, fmt, &own) != kvq_mma_dot(a, b, 32u, c, fmt, &sub);
                }
        uint64_t others = 0, nothers = 0;
        for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++)
            if (dist != KVQ_MMA_DIST_SUBNORMAL) others += diff[dist], nothers += n[dist];
        printf("check_mma: %s: emin and own exponent differ on %" PRIu64 " of %" PRIu64
               " subnormal outputs, %" PRIu64 " of %" PRIu64 " of the other distributions\n",
               fmt ? "e5m2" : "e4m3", diff[KVQ_MMA_DIST_SUBNORMAL], n[KVQ_MMA_DIST_SUBNORMAL], others, nothers);
        ck_assert_msg(4u * diff[KVQ_MMA_DIST_SUBNORMAL] >= n[KVQ_MMA_DIST_SUBNORMAL],
                      "seed 0x%016" PRIx64 " %s: the subnormal tiles separate the readings on %" PRIu64 " of %" PRIu64
                      " outputs only", g_seed, fmt ? "e5m2" : "e4m3", diff[KVQ_MMA_DIST_SUBNORMAL],
                      n[KVQ_MMA_DIST_SUBNORMAL]);
    }
}
END_TEST

static Suite *mma_suite(void)
{
    Suite *s = suite_create("mma");
    TCase *tc = tcase_create("vs_independent");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, add_vs_fpu);
    tcase_add_test(tc, cut_vs_mpfr);
    tcase_add_test(tc, step_vs_mpfr);
    tcase_add_test(tc, layout_tiles_exact);
    tcase_add_test(tc, subnormal_tiles_separate);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_mma", mma_suite(), &g_seed, &g_cases);
}
