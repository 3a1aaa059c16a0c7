/*
 * check_fp8.c -- Check suite of the shared FP8 module: include/kvq_fp8.h (fast
 * path, ref/common/fp8.c) and include/kvq_exact_fp8.h (MPFR, ref/exact/fp8.c);
 * spec/policy.md [POL-FP8-01..03].
 *
 * Rules this file keeps [TEST-CMP-01]:
 *  - codes and flags words are compared as integers, floats bitwise
 *    (kvq_f32_same: +0 and -0 differ, a NaN equals only the same encoding),
 *    never with == on floats;
 *  - every conversion is run on both paths (fast == exact, code and flags, NaN
 *    sign included); where the expected code is known by construction (special
 *    values, ties) it is also compared with that code, so neither path is
 *    judged only by the other;
 *  - flags words start at a sentinel without KVQ_FLAG_SATURATED and must come
 *    back as the sentinel or the sentinel | SATURATED (never cleared); every
 *    fast conversion is also run with flags == NULL;
 *  - the random cases are KVQ_RANDOM_CASES inputs (default 2^20) from a fixed
 *    seed, KVQ_SEED overrides it [TEST-SEED-01]; a failure prints the seed and
 *    the case as one line ("fp8-case ...") in hex.
 *
 * Test cases by behaviour: decode (all 256 codes of each format: values,
 * classes, round trips), binary16_inputs (all 65,536 encodings x 2 formats x 2
 * policies), special_values, ties, overflow_saturation, subnormal, windows
 * (every binary32 encoding near the overflow and subnormal boundaries),
 * random_vs_exact, bad_input (policy values, global state).  ALL 2^32 binary32
 * inputs: `make fp8-exhaustive` (tests/fp8_exhaustive.c), not part of make test.
 */
#include <check.h>
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact_fp8.h"
#include "kvq_fp8.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d66703821ull /* "kvq-fp8!" */
#define CASES_DEFAULT (1u << 20)            /* random binary32 inputs */

#define FLAGS_SENT 0x5A5A5A5Au              /* sentinel: KVQ_FLAG_SATURATED (0x04) clear */
#define WINDOW     (1u << 15)               /* encodings each side of a boundary */


static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;

/* ---- the two formats as data -------------------------------------------- */

static float dec_e4m3(uint8_t c) { return kvq_fp8_e4m3_to_f32(c); }
static float dec_e5m2(uint8_t c) { return kvq_fp8_e5m2_to_f32(c); }
static int isnan_e4m3(uint8_t c) { return kvq_fp8_e4m3_is_nan(c); }
static int isnan_e5m2(uint8_t c) { return kvq_fp8_e5m2_is_nan(c); }

typedef struct fmt8 {
    const char *name;
    uint8_t (*fast32)(float, uint32_t, uint32_t *);
    uint8_t (*exact32)(float, uint32_t, uint32_t *);
    uint8_t (*fast16)(uint16_t, uint32_t, uint32_t *);
    uint8_t (*exact16)(uint16_t, uint32_t, uint32_t *);
    float (*dec)(uint8_t);
    int (*is_nan)(uint8_t);
    int (*xval)(mpfr_t, uint8_t);
    uint8_t maxcode;   /* largest finite magnitude code */
    uint8_t ovfcode;   /* the non-saturating overflow result (E4M3 NaN, E5M2 inf) */
    uint8_t nancode;   /* the NaN kvq writes */
    float max;         /* largest finite value */
    float next;        /* the grid's next value above max (unbounded exponent) */
    float minsub;      /* smallest subnormal */
    float minnorm;     /* smallest normal */
    int nan_codes;     /* how many codes are NaNs */
} fmt8;

/* SPEC: [POL-FP8-01] [POL-FP8-02] */
static const fmt8 fmts[2] = {
    { "e4m3", kvq_fp8_e4m3_from_f32, kvq_exact_fp8_e4m3_from_f32, kvq_fp8_e4m3_from_f16,
      kvq_exact_fp8_e4m3_from_f16, dec_e4m3, isnan_e4m3, kvq_exact_fp8_e4m3_value,
      0x7E, 0x7F, 0x7F, 448.0f, 480.0f, 0x1p-9f, 0x1p-6f, 2 },
    { "e5m2", kvq_fp8_e5m2_from_f32, kvq_exact_fp8_e5m2_from_f32, kvq_fp8_e5m2_from_f16,
      kvq_exact_fp8_e5m2_from_f16, dec_e5m2, isnan_e5m2, kvq_exact_fp8_e5m2_value,
      0x7B, 0x7C, 0x7F, 57344.0f, 65536.0f, 0x1p-16f, 0x1p-14f, 6 },
};

static const uint32_t policies[2] = { KVQ_OVERFLOW_SATURATE, KVQ_OVERFLOW_NAN };

static float f32(uint32_t b) { return kvq_f32_from_bits(b); }
static uint32_t bits32(float v) { return kvq_f32_bits(v); }

/* binary16 encoding of a value binary16 holds exactly (the test asks for it). */
static uint16_t h16(float v)
{
    int ok;
    uint16_t h = kvq_f16_bits(v, &ok);
    REQ_MSG(ok, "%a is not a binary16 value", (double)v);
    return h;
}

/* The code expected on overflow [POL-OV-01] [POL-FP8-03]. */
static uint8_t ovf_result(const fmt8 *f, uint32_t pol, uint32_t sign)
{
    return (uint8_t)(sign | (pol == KVQ_OVERFLOW_NAN ? f->ovfcode : f->maxcode));
}

/* ---- both paths on one input --------------------------------------------- */

static uint64_t g_compared; /* conversions compared in the current test */

static void fail_case(const char *why, const fmt8 *f, uint32_t pol, const char *kind, uint32_t in,
                      unsigned fast, uint32_t ff, unsigned exact, uint32_t xf)
{
    fprintf(stderr, "FAIL seed=0x%016" PRIx64 ": %s\n", g_seed, why);
    fprintf(stderr, "fp8-case fmt=%s policy=%u in=%s:0x%08" PRIx32 " fast=0x%02x flags=0x%08" PRIx32
                    " exact=0x%02x flags=0x%08" PRIx32 "\n",
            f->name, pol, kind, in, fast, ff, exact, xf);
    fflush(stderr);
    ck_abort_msg("%s: fmt=%s policy=%u in=%s:0x%08" PRIx32 " fast=0x%02x/0x%08" PRIx32
                 " exact=0x%02x/0x%08" PRIx32,
                 why, f->name, pol, kind, in, fast, ff, exact, xf);
}

/* SPEC: [POL-FP8-03] [POL-OV-01] fast == exact on a binary32 input: code,
 * flags (sentinel kept, only SATURATED added), NULL flags accepted.  Returns
 * the code; *sat (may be NULL) receives whether SATURATED was added. */
static uint8_t both32(const fmt8 *f, float x, uint32_t pol, int *sat)
{
    uint32_t ff = FLAGS_SENT, xf = FLAGS_SENT;
    uint8_t a = f->fast32(x, pol, &ff), b = f->exact32(x, pol, &xf);
    uint8_t a0 = f->fast32(x, pol, NULL);
    g_compared++;
    if (a != b || ff != xf) fail_case("fast != exact", f, pol, "f32", bits32(x), a, ff, b, xf);
    if (ff != FLAGS_SENT && ff != (FLAGS_SENT | KVQ_FLAG_SATURATED))
        fail_case("flags word changed beyond SATURATED", f, pol, "f32", bits32(x), a, ff, b, xf);
    if (ff != FLAGS_SENT && pol == KVQ_OVERFLOW_NAN)
        fail_case("SATURATED under the nan policy", f, pol, "f32", bits32(x), a, ff, b, xf);
    if (a0 != a) fail_case("flags == NULL changes the code", f, pol, "f32", bits32(x), a0, 0, a, ff);
    if (sat) *sat = ff != FLAGS_SENT;
    return a;
}

/* The same for a binary16 encoding; also equal to the binary32 entry at the
 * same value (the widening is exact, so it is the same single rounding). */
static uint8_t both16(const fmt8 *f, uint16_t h, uint32_t pol, int *sat)
{
    uint32_t ff = FLAGS_SENT, xf = FLAGS_SENT;
    uint8_t a = f->fast16(h, pol, &ff), b = f->exact16(h, pol, &xf);
    uint8_t a0 = f->fast16(h, pol, NULL);
    int s32;
    uint8_t c32;
    g_compared++;
    if (a != b || ff != xf) fail_case("fast != exact", f, pol, "f16", h, a, ff, b, xf);
    if (ff != FLAGS_SENT && ff != (FLAGS_SENT | KVQ_FLAG_SATURATED))
        fail_case("flags word changed beyond SATURATED", f, pol, "f16", h, a, ff, b, xf);
    if (ff != FLAGS_SENT && pol == KVQ_OVERFLOW_NAN)
        fail_case("SATURATED under the nan policy", f, pol, "f16", h, a, ff, b, xf);
    if (a0 != a) fail_case("flags == NULL changes the code", f, pol, "f16", h, a0, 0, a, ff);
    c32 = both32(f, kvq_f16_from_bits(h), pol, &s32);
    if (c32 != a || s32 != (ff != FLAGS_SENT))
        fail_case("f16 entry != f32 entry at the same value", f, pol, "f16", h, a, ff, c32,
                  s32 ? FLAGS_SENT | KVQ_FLAG_SATURATED : FLAGS_SENT);
    if (sat) *sat = ff != FLAGS_SENT;
    return a;
}

/* both32 plus the code (and saturation) the spec gives by construction. */
static void expect32(const fmt8 *f, float x, uint32_t pol, uint8_t want, int want_sat)
{
    int sat;
    uint8_t c = both32(f, x, pol, &sat);
    REQ_MSG(c == want && sat == want_sat,
            "fmt=%s policy=%u x=%a (0x%08" PRIx32 "): code 0x%02x sat %d, spec says 0x%02x sat %d",
            f->name, pol, (double)x, bits32(x), c, sat, want, want_sat);
}

static void expect16(const fmt8 *f, uint16_t h, uint32_t pol, uint8_t want, int want_sat)
{
    int sat;
    uint8_t c = both16(f, h, pol, &sat);
    REQ_MSG(c == want && sat == want_sat,
            "fmt=%s policy=%u h=0x%04x: code 0x%02x sat %d, spec says 0x%02x sat %d", f->name, pol,
            h, c, sat, want, want_sat);
}

/* A finite in-range expectation: the same code and no flag under both policies,
 * for x and -x (the code with the sign bit). */
static void expect_both_signs(const fmt8 *f, float x, uint8_t mag)
{
    for (int p = 0; p < 2; p++) {
        expect32(f, x, policies[p], mag, 0);
        expect32(f, -x, policies[p], (uint8_t)(mag | KVQ_FP8_SIGN), 0);
    }
}

/* An overflowing x (and -x): +-max and SATURATED, or the non-saturating code. */
static void expect_overflow(const fmt8 *f, float x)
{
    for (int p = 0; p < 2; p++) {
        int sat = policies[p] == KVQ_OVERFLOW_SATURATE;
        expect32(f, x, policies[p], ovf_result(f, policies[p], 0), sat);
        expect32(f, -x, policies[p], ovf_result(f, policies[p], KVQ_FP8_SIGN), sat);
    }
}

static void report(const char *test)
{
    printf("check_fp8: %s: %" PRIu64 " conversions compared (fast == exact)\n", test, g_compared);
    fflush(stdout);
}

/* ========================================================================= */
/* decode                                                                    */
/* ========================================================================= */

/* SPEC: [POL-FP8-01] [POL-FP8-02]
 * Every code of each format: the fast decoder's binary32 value equals the exact
 * path's MPFR value of the fields bit for bit (signed zeros included); the
 * classes (NaN, infinity) and their counts are the spec's; NaN decodes to the
 * binary32 default NaN with the code's sign; the finite magnitudes increase
 * strictly with the code (so the code of a value is unique); the extremes are
 * the spec's.  E5M2 code c is binary16 encoding c * 256 (E5M2 is binary16
 * truncated to its top byte). */
START_TEST(decode_all_codes)
{
    mpfr_t m;
    mpfr_init2(m, 32);
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        int nans = 0, infs = 0;
        for (uint32_t c = 0; c < 256u; c++) {
            float v = f->dec((uint8_t)c);
            int cls = f->xval(m, (uint8_t)c);
            uint32_t sign = c / 128u;
            REQ_EQ(f->is_nan((uint8_t)c), cls == 2);
            if (cls == 2) {
                nans++;
                REQ_MSG(isnan(v) && bits32(v) == (0x7FC00000u | sign << 31),
                        "%s 0x%02x: NaN decodes to 0x%08" PRIx32, f->name, c, bits32(v));
                continue;
            }
            if (cls == 1) {
                infs++;
                REQ(bits32(v) == (sign ? 0xFF800000u : 0x7F800000u));
                REQ(fi == 1 && c % 128u == KVQ_FP8_E5M2_INF && kvq_fp8_e5m2_is_inf((uint8_t)c));
                continue;
            }
            REQ(fi == 0 || !kvq_fp8_e5m2_is_inf((uint8_t)c));
            REQ_MSG(kvq_f32_same(v, mpfr_get_flt(m, MPFR_RNDN)), "%s 0x%02x: %a vs %a", f->name,
                    c, (double)v, mpfr_get_d(m, MPFR_RNDN));
            REQ(mpfr_cmp_d(m, (double)v) == 0);              /* exact: no rounding in get_flt */
            REQ_EQ(signbit(v) != 0, sign);
            if (fi == 1) REQ_EQ(h16(v), c << 8);
            if (c % 128u > 0u && c % 128u <= f->maxcode) {    /* strictly increasing */
                float below = f->dec((uint8_t)(c - 1u));
                REQ(fabsf(v) > fabsf(below));
            }
        }
        REQ_EQ(nans, f->nan_codes);
        REQ_EQ(infs, fi == 1 ? 2 : 0);
        REQ(kvq_f32_same(f->dec(f->maxcode), f->max));
        REQ(kvq_f32_same(f->dec((uint8_t)(f->maxcode | KVQ_FP8_SIGN)), -f->max));
        REQ(kvq_f32_same(f->dec(1u), f->minsub));
        REQ(kvq_f32_same(f->dec(fi == 0 ? 0x08u : 0x04u), f->minnorm));
        REQ(kvq_f32_same(f->dec(0x80u), -0.0f));
        REQ(kvq_f32_same(f->dec(0x00u), 0.0f));
    }
    REQ(kvq_f32_same(KVQ_FP8_E4M3_MAX, 448.0f) && kvq_f32_same(KVQ_FP8_E5M2_MAX, 57344.0f));
    REQ(kvq_f32_same(kvq_fp8_e4m3_to_f32(1), KVQ_FP8_E4M3_TRUE_MIN) &&
        kvq_f32_same(kvq_fp8_e4m3_to_f32(8), KVQ_FP8_E4M3_MIN));
    REQ(kvq_f32_same(kvq_fp8_e5m2_to_f32(1), KVQ_FP8_E5M2_TRUE_MIN) &&
        kvq_f32_same(kvq_fp8_e5m2_to_f32(4), KVQ_FP8_E5M2_MIN));
    mpfr_clear(m);
}
END_TEST

/* SPEC: [POL-FP8-01] [POL-FP8-02] [POL-FP8-03]
 * decode(encode) round trips, all 256 codes of each format, from binary32 and
 * from binary16, both policies, both paths: a finite code comes back as itself
 * with no flag; a NaN code as the canonical NaN of its sign (E5M2 0x7D, 0x7E,
 * 0x7F -> 0x7F); E5M2 +-inf as +-max with SATURATED (saturate) or as itself
 * (nan policy). */
START_TEST(decode_round_trip)
{
    g_compared = 0;
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (uint32_t c = 0; c < 256u; c++) {
            float v = f->dec((uint8_t)c);
            uint32_t sign = c & KVQ_FP8_SIGN;
            for (int p = 0; p < 2; p++) {
                uint32_t pol = policies[p];
                uint8_t want = (uint8_t)c;
                int want_sat = 0;
                if (f->is_nan((uint8_t)c)) {
                    want = (uint8_t)(sign | f->nancode);
                } else if (fi == 1 && kvq_fp8_e5m2_is_inf((uint8_t)c)) {
                    want = ovf_result(f, pol, sign);
                    want_sat = pol == KVQ_OVERFLOW_SATURATE;
                }
                expect32(f, v, pol, want, want_sat);
                if (isnan(v)) {
                    /* binary16 NaN of the code's sign, several payloads */
                    expect16(f, (uint16_t)((sign << 8) | 0x7E00u), pol, want, 0);
                    expect16(f, (uint16_t)((sign << 8) | 0x7C01u), pol, want, 0);
                    expect16(f, (uint16_t)((sign << 8) | 0x7FFFu), pol, want, 0);
                } else {
                    expect16(f, h16(v), pol, want, want_sat);
                }
            }
        }
    }
    report("decode_round_trip");
}
END_TEST

/* ========================================================================= */
/* binary16 inputs                                                           */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-OV-01]
 * Exhaustive over all 65,536 binary16 encodings x both formats x both
 * policies: fast == exact bit for bit (NaN sign included), flags equal, and
 * both equal to the binary32 entry at the same value.  Counts the classes. */
START_TEST(f16_exhaustive)
{
    g_compared = 0;
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        uint64_t sat = 0, nan_out = 0, inf_out = 0, zero_out = 0;
        for (int p = 0; p < 2; p++) {
            for (uint32_t h = 0; h < 65536u; h++) {
                int s;
                uint8_t c = both16(f, (uint16_t)h, policies[p], &s);
                uint32_t e = (h >> 10) & 0x1Fu;
                sat += (uint64_t)s;
                nan_out += f->is_nan(c) != 0;
                inf_out += fi == 1 && kvq_fp8_e5m2_is_inf(c);
                zero_out += c % 128u == 0u;
                if (e == 0x1Fu && (h & 0x3FFu)) /* a NaN stays a NaN of its sign */
                    REQ_EQ(c, (h >> 8 & KVQ_FP8_SIGN) | f->nancode);
                else if (e == 0x1Fu)            /* infinities overflow */
                    REQ_EQ(c, ovf_result(f, policies[p], h >> 8 & KVQ_FP8_SIGN));
                else                            /* the sign is the input's */
                    REQ_EQ(c & KVQ_FP8_SIGN, h >> 8 & KVQ_FP8_SIGN);
            }
        }
        printf("check_fp8: f16_exhaustive %s: 2 x 65536 inputs, %" PRIu64 " saturated, %" PRIu64
               " NaN, %" PRIu64 " inf, %" PRIu64 " zero results\n",
               f->name, sat, nan_out, inf_out, zero_out);
    }
    report("f16_exhaustive");
}
END_TEST

/* ========================================================================= */
/* special values                                                            */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-OV-01] [POL-NF-01]
 * Special inputs with the code the spec gives, on both paths: +-0, +-inf,
 * NaNs of both signs and several payloads, the smallest binary32 subnormal,
 * 1, the largest finite values and the tie points 464 (E4M3: to the even 448,
 * no overflow) and 61440 (E5M2: to the even 65536, overflow) with their
 * binary32 neighbours; FLT_MAX.  Non-finite inputs are accepted by these
 * scalar conversions; the families reject them first [POL-NF-01]. */
START_TEST(special_values)
{
    static const uint32_t nans[] = { 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA00000u };
    const fmt8 *e4 = &fmts[0], *e5 = &fmts[1];
    g_compared = 0;
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (int p = 0; p < 2; p++) {
            uint32_t pol = policies[p];
            int sat = pol == KVQ_OVERFLOW_SATURATE;
            expect32(f, 0.0f, pol, 0x00u, 0);
            expect32(f, -0.0f, pol, 0x80u, 0);
            expect16(f, 0x0000u, pol, 0x00u, 0);
            expect16(f, 0x8000u, pol, 0x80u, 0);
            expect32(f, INFINITY, pol, ovf_result(f, pol, 0), sat);
            expect32(f, -INFINITY, pol, ovf_result(f, pol, KVQ_FP8_SIGN), sat);
            expect16(f, 0x7C00u, pol, ovf_result(f, pol, 0), sat);
            expect16(f, 0xFC00u, pol, ovf_result(f, pol, KVQ_FP8_SIGN), sat);
            for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
                expect32(f, f32(nans[i]), pol, f->nancode, 0);
                expect32(f, f32(nans[i] | 0x80000000u), pol, (uint8_t)(0x80u | f->nancode), 0);
            }
            expect32(f, NAN, pol, f->nancode, 0);
            expect32(f, -NAN, pol, (uint8_t)(0x80u | f->nancode), 0);
            expect32(f, f32(0x00000001u), pol, 0x00u, 0);  /* 2^-149 -> +0 */
            expect32(f, f32(0x80000001u), pol, 0x80u, 0);  /* -2^-149 -> -0 */
            expect32(f, f32(0x007FFFFFu), pol, 0x00u, 0);  /* largest binary32 subnormal */
            expect32(f, 0x1p-126f, pol, 0x00u, 0);
            expect16(f, 0x0001u, pol, 0x00u, 0);           /* 2^-24 -> +0 */
            expect16(f, 0x8001u, pol, 0x80u, 0);
        }
        expect_both_signs(f, 1.0f, fi == 0 ? 0x38u : 0x3Cu);
        expect_both_signs(f, f->max, f->maxcode);
        expect_both_signs(f, f->minsub, 0x01u);
        expect_both_signs(f, f->minnorm, fi == 0 ? 0x08u : 0x04u);
        expect_overflow(f, FLT_MAX);
        expect_overflow(f, 0x1p127f);
        expect_overflow(f, f->next);                       /* 480, 65536 */
    }
    /* E4M3: 464 = (448 + 480) / 2 is a tie; 448 (0x7E) is even: no overflow. */
    expect_both_signs(e4, 464.0f, 0x7Eu);
    expect_both_signs(e4, nextafterf(464.0f, 0.0f), 0x7Eu);
    expect_overflow(e4, nextafterf(464.0f, INFINITY));
    expect_both_signs(e4, 456.0f, 0x7Eu);
    expect_both_signs(e4, 432.0f, 0x7Eu);                  /* tie 416 (0x7D) / 448 (0x7E) */
    expect_both_signs(e4, nextafterf(432.0f, 0.0f), 0x7Du);
    expect_both_signs(e4, 400.0f, 0x7Cu);                  /* tie 384 (0x7C) / 416 (0x7D) */
    expect_overflow(e4, 57344.0f);
    expect_overflow(e4, 61440.0f);
    /* E5M2: 61440 = (57344 + 65536) / 2 is a tie to the even 65536: overflow. */
    expect_overflow(e5, 61440.0f);
    expect_both_signs(e5, nextafterf(61440.0f, 0.0f), 0x7Bu);
    expect_overflow(e5, nextafterf(61440.0f, INFINITY));
    expect_both_signs(e5, 448.0f, 0x5Fu);                  /* 1.11b 2^8: E = 23, F = 3 */
    expect_both_signs(e5, 464.0f, 0x5Fu);                  /* nearer 448 than 512 */
    expect_both_signs(e5, 480.0f, 0x60u);                  /* tie 448 (0x5F) / 512 (0x60) */
    expect_both_signs(e5, 416.0f, 0x5Eu);                  /* tie 384 (0x5E) / 448 (0x5F) */
    /* binary16 spellings of the ties and their binary16 neighbours */
    for (int p = 0; p < 2; p++) {
        uint32_t pol = policies[p];
        int sat = pol == KVQ_OVERFLOW_SATURATE;
        expect16(e4, h16(464.0f), pol, 0x7Eu, 0);
        expect16(e4, (uint16_t)(h16(464.0f) - 1u), pol, 0x7Eu, 0);
        expect16(e4, (uint16_t)(h16(464.0f) + 1u), pol, ovf_result(e4, pol, 0), sat);
        expect16(e4, (uint16_t)(h16(-464.0f) + 1u), pol, ovf_result(e4, pol, 0x80u), sat);
        expect16(e5, h16(61440.0f), pol, ovf_result(e5, pol, 0), sat);
        expect16(e5, h16(-61440.0f), pol, ovf_result(e5, pol, 0x80u), sat);
        expect16(e5, (uint16_t)(h16(61440.0f) - 1u), pol, 0x7Bu, 0);
        expect16(e5, h16(65504.0f), pol, ovf_result(e5, pol, 0), sat);
        expect16(e4, h16(65504.0f), pol, ovf_result(e4, pol, 0), sat);
    }
    report("special_values");
}
END_TEST

/* ========================================================================= */
/* ties                                                                      */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-FMT-01]
 * Every midpoint between consecutive FP8 magnitudes c and c+1 (from 0 and the
 * smallest subnormal up to max and the grid's next value 480 / 65536), both
 * signs, both policies, both paths, and the same from binary16: the midpoint
 * goes to the even code (the even fraction); its binary32 and binary16
 * neighbours below and above go to c and c+1.  The expected codes come from
 * the codes' parity, not from either path.  A c+1 beyond maxcode is overflow. */
START_TEST(ties_all_midpoints)
{
    g_compared = 0;
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (uint32_t c = 0; c <= f->maxcode; c++) {
            float lo = f->dec((uint8_t)c);
            float hi = c < f->maxcode ? f->dec((uint8_t)(c + 1u)) : f->next;
            float mid = (lo + hi) * 0.5f;    /* exact: both have at most 4 significant bits */
            uint32_t even = c % 2u == 0u ? c : c + 1u;
            REQ(lo < mid && mid < hi);
            for (int p = 0; p < 2; p++) {
                uint32_t pol = policies[p];
                for (uint32_t sign = 0; sign <= KVQ_FP8_SIGN; sign += KVQ_FP8_SIGN) {
                    float s = sign ? -1.0f : 1.0f;
                    uint16_t hm = h16(s * mid);
#define WANT(k) ((k) > f->maxcode ? ovf_result(f, pol, sign) : (uint8_t)(sign | (k)))
#define WSAT(k) ((k) > f->maxcode && pol == KVQ_OVERFLOW_SATURATE)
                    expect32(f, s * mid, pol, WANT(even), WSAT(even));
                    expect32(f, s * nextafterf(mid, 0.0f), pol, WANT(c), WSAT(c));
                    expect32(f, s * nextafterf(mid, INFINITY), pol, WANT(c + 1u), WSAT(c + 1u));
                    expect16(f, hm, pol, WANT(even), WSAT(even));
                    expect16(f, (uint16_t)(hm - 1u), pol, WANT(c), WSAT(c));
                    expect16(f, (uint16_t)(hm + 1u), pol, WANT(c + 1u), WSAT(c + 1u));
#undef WANT
#undef WSAT
                }
            }
        }
    }
    report("ties_all_midpoints");
}
END_TEST

/* ========================================================================= */
/* overflow and saturation                                                   */
/* ========================================================================= */

/* SPEC: [POL-OV-01] [POL-FP8-03] [API-FLAGS-01]
 * The flags word: only KVQ_FLAG_SATURATED is ever OR-ed in, under saturate,
 * when the value overflows (infinities included); other bits are kept (also
 * when SATURATED is already set); nothing is written under the nan policy, for
 * NaNs, or in range.  flags == NULL is accepted.  Both paths. */
START_TEST(overflow_flags_word)
{
    static const float ovf[] = { 1e6f, 1e30f, FLT_MAX, INFINITY, 70000.0f };
    static const uint32_t starts[] = { 0u, 0xFFFFFFFFu, KVQ_FLAG_SATURATED, 0xFFFFFFFBu,
                                       KVQ_FLAG_ALL, FLAGS_SENT };
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (size_t i = 0; i < sizeof ovf / sizeof ovf[0]; i++) {
            for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
                for (int sg = 0; sg < 2; sg++) {
                    float x = sg ? -ovf[i] : ovf[i];
                    uint32_t sign = sg ? KVQ_FP8_SIGN : 0u;
                    uint32_t a = starts[k], b = starts[k], c = starts[k], d = starts[k];
                    REQ_EQ(f->fast32(x, KVQ_OVERFLOW_SATURATE, &a), sign | f->maxcode);
                    REQ_EQ(f->exact32(x, KVQ_OVERFLOW_SATURATE, &b), sign | f->maxcode);
                    REQ_EQ(a, starts[k] | KVQ_FLAG_SATURATED);
                    REQ_EQ(b, starts[k] | KVQ_FLAG_SATURATED);
                    REQ_EQ(f->fast32(x, KVQ_OVERFLOW_NAN, &c), sign | f->ovfcode);
                    REQ_EQ(f->exact32(x, KVQ_OVERFLOW_NAN, &d), sign | f->ovfcode);
                    REQ_EQ(c, starts[k]);
                    REQ_EQ(d, starts[k]);
                    REQ_EQ(f->fast32(x, KVQ_OVERFLOW_SATURATE, NULL), sign | f->maxcode);
                    REQ_EQ(f->exact32(x, KVQ_OVERFLOW_SATURATE, NULL), sign | f->maxcode);
                    /* NaN and in-range inputs never touch the word */
                    a = b = starts[k];
                    REQ_EQ(f->fast32(sg ? -NAN : NAN, KVQ_OVERFLOW_SATURATE, &a),
                           sign | f->nancode);
                    REQ_EQ(f->exact32(sg ? -NAN : NAN, KVQ_OVERFLOW_SATURATE, &b),
                           sign | f->nancode);
                    REQ_EQ(f->fast32(sg ? -f->max : f->max, KVQ_OVERFLOW_SATURATE, &a),
                           sign | f->maxcode);
                    REQ_EQ(f->exact32(sg ? -f->max : f->max, KVQ_OVERFLOW_SATURATE, &b),
                           sign | f->maxcode);
                    REQ_EQ(a, starts[k]);
                    REQ_EQ(b, starts[k]);
                }
            }
        }
    }
}
END_TEST

/* SPEC: [POL-FP8-03] [POL-OV-01]
 * Every binary16 finite value above each format's largest finite value
 * overflows, and every one at or below the overflow threshold does not: the
 * threshold is 464 exclusive (E4M3) and 61440 inclusive (E5M2), read off the
 * exact path's results over all binary16 encodings. */
START_TEST(overflow_threshold_f16)
{
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (uint32_t h = 0; h < 0x7C00u; h++) {
            float v = kvq_f16_from_bits((uint16_t)h);
            uint32_t xf = 0;
            uint8_t c = f->exact16((uint16_t)h, KVQ_OVERFLOW_SATURATE, &xf);
            int over = fi == 0 ? v > 464.0f : v >= 61440.0f;
            REQ_MSG((xf != 0) == over && (!over || c == f->maxcode),
                    "%s h=0x%04x (%a): code 0x%02x flags 0x%x", f->name, h, (double)v, c, xf);
        }
    }
}
END_TEST

/* ========================================================================= */
/* subnormals                                                                */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-FMT-01]
 * Gradual underflow: every FP8 subnormal k * minsub is reached from binary32
 * and binary16; every 1021st binary32 subnormal (and the extremes) and every
 * binary16 value below half the smallest FP8 subnormal gives a zero of its sign
 * (no flag), on both paths. */
START_TEST(subnormal_grid)
{
    g_compared = 0;
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        uint32_t nsub = fi == 0 ? 8u : 4u;
        for (uint32_t k = 0; k < nsub; k++) {
            expect_both_signs(f, (float)k * f->minsub, k);
            for (int p = 0; p < 2; p++) {
                expect16(f, h16((float)k * f->minsub), policies[p], (uint8_t)k, 0);
                expect16(f, h16(-(float)k * f->minsub), policies[p], (uint8_t)(0x80u | k), 0);
            }
        }
        for (int p = 0; p < 2; p++) {
            for (uint32_t u = 1; u < 0x00800000u; u += 1021u) {
                expect32(f, f32(u), policies[p], 0x00u, 0);
                expect32(f, f32(u | 0x80000000u), policies[p], 0x80u, 0);
            }
            for (uint32_t h = 1; kvq_f16_from_bits((uint16_t)h) <= f->minsub * 0.5f; h++) {
                expect16(f, (uint16_t)h, policies[p], 0x00u, 0);
                expect16(f, (uint16_t)(h | 0x8000u), policies[p], 0x80u, 0);
            }
        }
    }
    report("subnormal_grid");
}
END_TEST

/* ========================================================================= */
/* dense windows                                                             */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-OV-01] [POL-FMT-01]
 * Every binary32 encoding within WINDOW (2^15) encodings of each boundary,
 * both signs, both formats, both policies, fast == exact: the overflow
 * thresholds and the values around them (448, 464, 480, 57344, 61440, 65536),
 * the underflow points (half the smallest subnormals 2^-10, 2^-17), the
 * smallest subnormals (2^-9, 2^-16) and the smallest normals (2^-6, 2^-14). */
START_TEST(windows_dense)
{
    static const float centers[] = { 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 65536.0f,
                                     0x1p-10f, 0x1p-9f, 0x1p-6f, 0x1p-17f, 0x1p-16f, 0x1p-14f };
    int fi = _i;
    const fmt8 *f = &fmts[fi];
    uint64_t sat = 0;
    g_compared = 0;
    for (size_t i = 0; i < sizeof centers / sizeof centers[0]; i++) {
        uint32_t u0 = bits32(centers[i]);
        for (uint32_t u = u0 - WINDOW; u < u0 + WINDOW; u++) {
            for (int p = 0; p < 2; p++) {
                int s1, s2;
                (void)both32(f, f32(u), policies[p], &s1);
                (void)both32(f, f32(u | 0x80000000u), policies[p], &s2);
                sat += (uint64_t)(s1 + s2);
            }
        }
    }
    printf("check_fp8: windows_dense %s: %zu windows x %u encodings x 2 signs x 2 policies, "
           "%" PRIu64 " saturated\n",
           f->name, sizeof centers / sizeof centers[0], 2u * WINDOW, sat);
    report("windows_dense");
}
END_TEST

/* ========================================================================= */
/* random inputs against the exact path                                      */
/* ========================================================================= */

/* SPEC: [POL-FP8-03] [POL-OV-01] [TEST-SEED-01]
 * KVQ_RANDOM_CASES binary32 inputs from the seed, each through both formats
 * and both policies, fast == exact: a third uniform over all 2^32 encodings
 * (NaNs, infinities, huge and tiny values), a third with the exponent in the
 * FP8 range [2^-20, 2^17) and random sign and fraction, a third within 4
 * encodings of a random FP8 midpoint (the rounding boundaries). */
START_TEST(random_vs_exact)
{
    kvq_rng r = { g_seed };
    g_compared = 0;
    for (uint64_t i = 0; i < g_cases; i++) {
        uint64_t z = kvq_rng_next(&r);
        uint32_t u;
        switch (i % 3u) {
        case 0:
            u = (uint32_t)z;
            break;
        case 1: {
            uint32_t e = 107u + (uint32_t)((z >> 32) % 37u); /* 2^-20 .. 2^16 binades */
            u = ((uint32_t)(z >> 63) << 31) | (e << 23) | ((uint32_t)z & 0x7FFFFFu);
            break;
        }
        default: {
            const fmt8 *f = &fmts[(z >> 8) & 1u];
            uint32_t c = (uint32_t)((z >> 16) % (f->maxcode + 1u));
            float lo = f->dec((uint8_t)c), hi = c < f->maxcode ? f->dec((uint8_t)(c + 1u)) : f->next;
            int32_t off = (int32_t)((z >> 40) % 9u) - 4;
            u = (uint32_t)((int32_t)bits32((lo + hi) * 0.5f) + off) | ((uint32_t)(z >> 63) << 31);
            break;
        }
        }
        for (int fi = 0; fi < 2; fi++)
            for (int p = 0; p < 2; p++) (void)both32(&fmts[fi], f32(u), policies[p], NULL);
    }
    report("random_vs_exact");
}
END_TEST

/* ========================================================================= */
/* bad input and global state                                                */
/* ========================================================================= */

/* SPEC: [POL-01] [POL-FP8-03]
 * An overflow_policy other than KVQ_OVERFLOW_NAN (2, 7, 2^32-1) is read as
 * saturate by both paths, as kvq_fp8.h documents; callers validate the policy
 * record with kvq_policy_check before. */
START_TEST(bad_policy_values)
{
    static const uint32_t odd[] = { 2u, 7u, 0xFFFFFFFFu };
    static const float xs[] = { 1.0f, 500.0f, 61440.0f, INFINITY, -1e9f, 0x1p-10f };
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
            for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
                uint32_t a = 0, b = 0, c = 0;
                uint8_t want = f->fast32(xs[i], KVQ_OVERFLOW_SATURATE, &c);
                REQ_EQ(f->fast32(xs[i], odd[k], &a), want);
                REQ_EQ(f->exact32(xs[i], odd[k], &b), want);
                REQ_EQ(a, c);
                REQ_EQ(b, c);
                (void)both32(f, xs[i], odd[k], NULL);
                (void)both16(f, 0x7C00u, odd[k], NULL);
            }
        }
    }
    REQ_EQ(kvq_policy_check(&(kvq_policy){ 0u, 2u, 0u }), KVQ_E_PARAM);
}
END_TEST

/* SPEC: [POL-GLOB-01] [POL-FP8-03]
 * No global numeric state: the exact path leaves MPFR's exponent range,
 * default precision and rounding mode alone (it never calls mpfr_subnormalize
 * or mpfr_set_emin); the fast path and the decoders give the same results
 * under every host rounding mode (integer and exact arithmetic only).  Run on
 * every midpoint and its neighbours. */
START_TEST(special_no_global_state)
{
    static const int modes[] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO };
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_prec_t prec = mpfr_get_default_prec();
    mpfr_rnd_t rnd = mpfr_get_default_rounding_mode();
    int fe = fegetround();
    for (int fi = 0; fi < 2; fi++) {
        const fmt8 *f = &fmts[fi];
        for (uint32_t c = 0; c <= f->maxcode; c++) {
            float lo = f->dec((uint8_t)c), hi = c < f->maxcode ? f->dec((uint8_t)(c + 1u)) : f->next;
            uint32_t um = bits32((lo + hi) * 0.5f);
            for (uint32_t u = um - 1u; u <= um + 1u; u++) {
                for (int p = 0; p < 2; p++) {
                    uint32_t f0 = 0;
                    uint8_t c0 = f->exact32(f32(u), policies[p], &f0);
                    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
                        uint32_t f1 = 0, f2 = 0;
                        uint8_t c1, c2;
                        float d1;
                        REQ(fesetround(modes[m]) == 0);
                        c1 = f->fast32(f32(u), policies[p], &f1);
                        c2 = f->exact32(f32(u), policies[p], &f2);
                        d1 = f->dec((uint8_t)c);
                        REQ(fesetround(fe) == 0);
                        REQ_MSG(c1 == c0 && c2 == c0 && f1 == f0 && f2 == f0,
                                "%s u=0x%08" PRIx32 " mode %zu: 0x%02x 0x%02x vs 0x%02x", f->name,
                                u, m, c1, c2, c0);
                        REQ(kvq_f32_same(d1, lo));
                    }
                }
            }
        }
        REQ(mpfr_get_emin() == emin && mpfr_get_emax() == emax);
        REQ(mpfr_get_default_prec() == prec && mpfr_get_default_rounding_mode() == rnd);
        REQ(fegetround() == fe);
    }
}
END_TEST

/* ========================================================================= */

static Suite *fp8_suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc;

    tc = tcase_create("decode");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, decode_all_codes);
    tcase_add_test(tc, decode_round_trip);
    suite_add_tcase(s, tc);

    tc = tcase_create("binary16_inputs");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, f16_exhaustive);
    suite_add_tcase(s, tc);

    tc = tcase_create("special_values");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, special_values);
    tcase_add_test(tc, special_no_global_state);
    suite_add_tcase(s, tc);

    tc = tcase_create("ties");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ties_all_midpoints);
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow_saturation");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, overflow_flags_word);
    tcase_add_test(tc, overflow_threshold_f16);
    suite_add_tcase(s, tc);

    tc = tcase_create("subnormal");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, subnormal_grid);
    suite_add_tcase(s, tc);

    tc = tcase_create("windows");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, windows_dense, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, random_vs_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_policy_values);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return kvq_check_main("check_fp8", fp8_suite(), &g_seed, &g_cases);
}
