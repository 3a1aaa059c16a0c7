/*
 * check_kivi.c -- Check suite of the KIVI quantizer (spec/kivi.md, the policy text).
 *
 * Rules this file keeps [TEST-CMP-01]:
 *  - every float is compared bitwise (kvq_f32_same: +0 and -0 differ, a NaN
 *    equals only the same encoding), never with == and never with a hand-picked
 *    tolerance: the expected value comes from the exact path (MPFR), from a
 *    construction that is exact by design (and checked exact with MPFR), or from
 *    a bound the exact path computes (kvq_exact_kivi_deq_within);
 *  - differential tests compare ref/fast with ref/exact, never a path with itself;
 *  - the random cases are KVQ_RANDOM_CASES groups (default 100000) from a fixed
 *    seed, KVQ_SEED overrides it; a failure prints the seed and the case in hex
 *    as a one-line vector ("kivi-case ...") that reproduces it.
 *
 * Test cases are grouped by behaviour: special_values, ties, degenerate,
 * overflow_saturation, subnormal, packing, grouping, f16_meta, residual_window,
 * random_vs_exact, bad_input.  Each test names the requirements it checks in a
 * SPEC: comment.
 */
#include <check.h>
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d6b697669ull /* "kvq-kivi" */
#define CASES_DEFAULT 100000u               /* random groups, all distributions together */

#define SENT8  0xA5u                        /* sentinel byte of untouched outputs */
#define SENT32 0xA5A5A5A5u
#define SENT64 0xA5A5A5A5A5A5A5A5ull

#define F32_MAX 0x1.fffffep+127f
#define F16_MAX 0x1.ffcp+15f


static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;

static const uint32_t all_bits[4] = { 1u, 2u, 4u, 8u };

/* ---- small helpers ------------------------------------------------------ */

/* A uniform value in [-1, 1] on the 2^-23 grid (exact in binary32). */
static float rng_unit(kvq_rng *r)
{
    int32_t k = (int32_t)kvq_rng_below(r, (1u << 24) + 1u) - (1 << 23);
    return ldexpf((float)k, -23);
}

static float f32(uint32_t b)
{
    return kvq_f32_from_bits(b);
}

static uint32_t bits32(float v)
{
    return kvq_f32_bits(v);
}

/* +0 or -0 (bitwise, not ==). */
static int is_zero(float v)
{
    return (bits32(v) & 0x7FFFFFFFu) == 0u;
}

/* -0 -> +0, anything else unchanged. */
static float plus_zero(float v)
{
    return is_zero(v) ? 0.0f : v;
}

static kvq_kivi_shape mkshape(uint32_t bits, uint32_t group, uint32_t grouping, uint32_t meta,
                              uint32_t tokens, uint32_t channels)
{
    kvq_kivi_shape s;
    s.bits = bits;
    s.group = group;
    s.grouping = grouping;
    s.meta = meta;
    s.tokens = tokens;
    s.channels = channels;
    return s;
}

/* One case as a single vector-like line, every bit pattern in hex. */
static void dump_case(FILE *f, const char *why, uint64_t seed, const char *dist, uint64_t idx,
                      const kvq_kivi_shape *sh, const kvq_policy *pol, const float *x)
{
    uint64_t n = kvq_kivi_elems(sh);
    fprintf(f, "FAIL seed=0x%016" PRIx64 " dist=%s case=%" PRIu64 ": %s\n", seed, dist, idx, why);
    fprintf(f, "kivi-case bits=%u group=%u grouping=%u meta=%u tokens=%u channels=%u "
               "ties=%u overflow=%u subnormal=%u x=",
            sh->bits, sh->group, sh->grouping, sh->meta, sh->tokens, sh->channels, pol->ties,
            pol->overflow, pol->subnormal);
    for (uint64_t e = 0; e < n; e++) fprintf(f, "%s%08" PRIx32, e ? "," : "", bits32(x[e]));
    fputc('\n', f);
    fflush(f);
}

/* ---- both paths on one tensor ------------------------------------------ */

typedef struct kbuf {
    kvq_kivi_shape sh;
    uint64_t n, ng, cb;
    /* fast path */
    uint8_t *fc;
    float *fs, *fz, *fy;
    uint32_t ff, fdf;
    kvq_status fst, fdst;
    /* exact path */
    kvq_exact_kivi_out xo;
    kvq_status xst;
} kbuf;

static void kb_init(kbuf *b, const kvq_kivi_shape *sh)
{
    b->sh = *sh;
    b->n = kvq_kivi_elems(sh);
    b->ng = kvq_kivi_groups(sh);
    b->cb = kvq_kivi_code_bytes(sh);
    b->fc = xmalloc(b->cb);
    b->fs = xmalloc(b->ng * sizeof(float));
    b->fz = xmalloc(b->ng * sizeof(float));
    b->fy = xmalloc(b->n * sizeof(float));
    b->xo.codes = xmalloc(b->cb);
    b->xo.scale = xmalloc(b->ng * sizeof(float));
    b->xo.zero = xmalloc(b->ng * sizeof(float));
    b->xo.deq = xmalloc(b->n * sizeof(float));
    b->xo.code_real = xmalloc(b->n);
    b->xo.code_alt = xmalloc(b->n);
}

static void kb_free(kbuf *b)
{
    free(b->fc);
    free(b->fs);
    free(b->fz);
    free(b->fy);
    free(b->xo.codes);
    free(b->xo.scale);
    free(b->xo.zero);
    free(b->xo.deq);
    free(b->xo.code_real);
    free(b->xo.code_alt);
}

static void kb_poison(kbuf *b)
{
    memset(b->fc, SENT8, b->cb);
    memset(b->fs, SENT8, b->ng * sizeof(float));
    memset(b->fz, SENT8, b->ng * sizeof(float));
    memset(b->fy, SENT8, b->n * sizeof(float));
    memset(b->xo.codes, SENT8, b->cb);
    memset(b->xo.scale, SENT8, b->ng * sizeof(float));
    memset(b->xo.zero, SENT8, b->ng * sizeof(float));
    memset(b->xo.deq, SENT8, b->n * sizeof(float));
    memset(b->xo.code_real, SENT8, b->n);
    memset(b->xo.code_alt, SENT8, b->n);
    b->ff = b->fdf = SENT32;
    b->xo.flags = SENT32;
    b->xo.ambiguous = SENT64;
}

static int kb_fast_untouched(const kbuf *b)
{
    return all_bytes(b->fc, b->cb, SENT8) && all_bytes(b->fs, b->ng * sizeof(float), SENT8)
        && all_bytes(b->fz, b->ng * sizeof(float), SENT8) && b->ff == SENT32;
}

static int kb_exact_untouched(const kbuf *b)
{
    return all_bytes(b->xo.codes, b->cb, SENT8)
        && all_bytes(b->xo.scale, b->ng * sizeof(float), SENT8)
        && all_bytes(b->xo.zero, b->ng * sizeof(float), SENT8)
        && all_bytes(b->xo.deq, b->n * sizeof(float), SENT8)
        && all_bytes(b->xo.code_real, b->n, SENT8) && all_bytes(b->xo.code_alt, b->n, SENT8)
        && b->xo.flags == SENT32 && b->xo.ambiguous == SENT64;
}

/* Quantize x with both paths (outputs poisoned first). */
static void kb_quantize(kbuf *b, const float *x, const kvq_policy *pol)
{
    kb_poison(b);
    b->fst = kvq_kivi_quantize(b->fc, b->fs, b->fz, &b->ff, x, &b->sh, pol);
    b->xst = kvq_exact_kivi_quantize(&b->xo, x, &b->sh, pol);
}

/* Fast code of element i of group g. */
static uint32_t kb_fcode(const kbuf *b, uint64_t g, uint32_t i)
{
    return kvq_unpack_code(b->fc + kvq_kivi_group_code_offset(&b->sh, g), i, b->sh.bits);
}

static uint32_t kb_fcode_at(const kbuf *b, uint64_t e)
{
    uint32_t i;
    uint64_t g = kvq_kivi_group_of(&b->sh, e, &i);
    return kb_fcode(b, g, i);
}

/* Statistics of a differential run. */
typedef struct kstats {
    uint64_t cases, groups, elems, ambiguous, clamped, saturated, zero_scale, subnormal, errors;
} kstats;

/*
 * Every property that links ref/fast and ref/exact on one tensor; 0 when all
 * hold, else 1 with the first failure described in why.  SPEC: see callers.
 */
static int kb_diff(kbuf *b, const float *x, const kvq_policy *pol, char *why, size_t len,
                   kstats *st)
{
    const kvq_kivi_shape *sh = &b->sh;
    uint32_t cmax = kvq_code_max(sh->bits), need_range = 0, want_sat = 0;
    uint64_t namb = 0;

    kb_quantize(b, x, pol);
    if (st) st->cases++;
    /* Same status from both paths [API-STATUS-01]. */
    if (b->fst != b->xst) {
        snprintf(why, len, "status: fast %s, exact %s", kvq_status_name(b->fst),
                 kvq_status_name(b->xst));
        return 1;
    }
    if (b->fst != KVQ_OK) {
        /* On error nothing is written [POL-NF-01, POL-OV-02]. */
        if (st) st->errors++;
        if (!kb_fast_untouched(b)) {
            snprintf(why, len, "fast wrote outputs on %s", kvq_status_name(b->fst));
            return 1;
        }
        if (!kb_exact_untouched(b)) {
            snprintf(why, len, "exact wrote outputs on %s", kvq_status_name(b->fst));
            return 1;
        }
        return 0;
    }
    /* Exact level: packed codes, stored metadata and flags bit for bit [KIVI-Q-04]. */
    for (uint64_t g = 0; g < b->ng; g++) {
        if (!kvq_f32_same(b->fs[g], b->xo.scale[g]) || !kvq_f32_same(b->fz[g], b->xo.zero[g])) {
            snprintf(why, len, "group %" PRIu64 " metadata: fast scale %08x zero %08x, exact "
                     "scale %08x zero %08x", g, bits32(b->fs[g]), bits32(b->fz[g]),
                     bits32(b->xo.scale[g]), bits32(b->xo.zero[g]));
            return 1;
        }
    }
    if (memcmp(b->fc, b->xo.codes, b->cb) != 0) {
        for (uint64_t k = 0; k < b->cb; k++)
            if (b->fc[k] != b->xo.codes[k]) {
                snprintf(why, len, "packed code byte %" PRIu64 " (group %" PRIu64
                         "): fast %02x, exact %02x", k, k / kvq_kivi_group_bytes(sh), b->fc[k],
                         b->xo.codes[k]);
                break;
            }
        return 1;
    }
    if (b->ff != (b->xo.flags & ~KVQ_FLAG_AMBIGUOUS)) {
        snprintf(why, len, "flags: fast %02x, exact %02x (AMBIGUOUS masked)", b->ff,
                 b->xo.flags);
        return 1;
    }
    /* Bounded level: the pinned code is the real code or its accepted neighbour;
     * the ambiguity count and flag agree with the per-element answers
     * [KIVI-B-01, KIVI-B-02]. */
    for (uint64_t e = 0; e < b->n; e++) {
        uint32_t c = kb_fcode_at(b, e), cr = b->xo.code_real[e], ca = b->xo.code_alt[e];
        if (cr > cmax || ca > cmax || (cr != ca && cr + 1u != ca && ca + 1u != cr)) {
            snprintf(why, len, "element %" PRIu64 ": exact real %u / alt %u not neighbours in "
                     "[0,%u]", e, cr, ca, cmax);
            return 1;
        }
        if (c != cr && c != ca) {
            snprintf(why, len, "element %" PRIu64 " (x=%08x): fast code %u, exact real %u alt "
                     "%u", e, bits32(x[e]), c, cr, ca);
            return 1;
        }
        if (cr != ca) namb++;
    }
    if (namb != b->xo.ambiguous || ((b->xo.flags & KVQ_FLAG_AMBIGUOUS) != 0) != (namb != 0)) {
        snprintf(why, len, "ambiguous count %" PRIu64 " vs exact %" PRIu64 ", flags %02x", namb,
                 b->xo.ambiguous, b->xo.flags);
        return 1;
    }
    /* Dequantization: bitwise the exact RN32(c s + z), and within the exact
     * path's bound [KIVI-D-01, KIVI-B-03]; overflow per policy [POL-OV-01/02]. */
    for (uint64_t e = 0; e < b->n && !need_range; e++) {
        if (kvq_f32_same(fabsf(b->xo.deq[e]), F32_MAX)) {
            uint32_t i;
            uint64_t g = kvq_kivi_group_of(sh, e, &i);
            int ov;
            (void)kvq_exact_kivi_deq(kb_fcode(b, g, i), b->xo.scale[g], b->xo.zero[g], &ov);
            if (ov) {
                want_sat = KVQ_FLAG_SATURATED;
                if (pol->overflow == KVQ_OVERFLOW_NAN) need_range = 1;
            }
        }
    }
    b->fdst = kvq_kivi_dequantize(b->fy, &b->fdf, b->fc, b->fs, b->fz, sh, pol);
    if (b->fdst != (need_range ? KVQ_E_RANGE : KVQ_OK)) {
        snprintf(why, len, "dequantize status %s, expected %s", kvq_status_name(b->fdst),
                 need_range ? "KVQ_E_RANGE" : "KVQ_OK");
        return 1;
    }
    if (need_range) {
        if (!all_bytes(b->fy, b->n * sizeof(float), SENT8) || b->fdf != SENT32) {
            snprintf(why, len, "dequantize wrote outputs on KVQ_E_RANGE");
            return 1;
        }
    } else {
        if (b->fdf != want_sat) {
            snprintf(why, len, "dequantize flags %02x, expected %02x", b->fdf, want_sat);
            return 1;
        }
        for (uint64_t e = 0; e < b->n; e++) {
            uint32_t i;
            uint64_t g = kvq_kivi_group_of(sh, e, &i);
            double bound, err;
            if (!kvq_f32_same(b->fy[e], b->xo.deq[e])) {
                snprintf(why, len, "element %" PRIu64 ": fast deq %08x, exact %08x", e,
                         bits32(b->fy[e]), bits32(b->xo.deq[e]));
                return 1;
            }
            if (!kvq_exact_kivi_deq_within(b->fy[e], kb_fcode(b, g, i), b->fs[g], b->fz[g],
                                           &bound, &err)) {
                snprintf(why, len, "element %" PRIu64 ": deq %08x off by %a > bound %a", e,
                         bits32(b->fy[e]), err, bound);
                return 1;
            }
        }
    }
    if (st) {
        st->groups += b->ng;
        st->elems += b->n;
        st->ambiguous += namb;
        st->clamped += (b->ff & KVQ_FLAG_CLAMPED) != 0;
        st->saturated += (b->ff & KVQ_FLAG_SATURATED) != 0;
        st->zero_scale += (b->ff & KVQ_FLAG_ZERO_SCALE) != 0;
        st->subnormal += (b->ff & KVQ_FLAG_SUBNORMAL) != 0;
    }
    return 0;
}

/* Differential check of one hand-made case; fails the test with the case dumped. */
static void diff_or_fail(kbuf *b, const float *x, const kvq_policy *pol, const char *tag)
{
    char why[512];
    if (kb_diff(b, x, pol, why, sizeof why, NULL)) {
        dump_case(stderr, why, g_seed, tag, 0, &b->sh, pol, x);
        ck_abort_msg("%s: %s", tag, why);
    }
}

/* Both paths on one tensor, expected to succeed and agree. */
static void run_ok(kbuf *b, const float *x, const kvq_policy *pol, const char *tag)
{
    diff_or_fail(b, x, pol, tag);
    REQ_MSG(b->fst == KVQ_OK, "%s: status %s", tag, kvq_status_name(b->fst));
}

/* ---- mpfr helpers for constructions --------------------------------------- */

/* Is a - b exactly representable in binary32 (so RN32(a - b) is exact)? */
static int sub_exact32(float a, float b)
{
    mpfr_t d, r;
    int same;
    mpfr_inits2(KVQ_XPREC, d, r, (mpfr_ptr)0);
    mpfr_set_flt(d, a, MPFR_RNDN);
    mpfr_set_flt(r, b, MPFR_RNDN);
    mpfr_sub(d, d, r, MPFR_RNDN);
    (void)kvq_exact_round(r, d, &kvq_xfmt_binary32);
    same = mpfr_equal_p(d, r);
    mpfr_clears(d, r, (mpfr_ptr)0);
    return same;
}

/* Does RN32(a - b) overflow binary32? */
static int sub_overflows32(float a, float b)
{
    mpfr_t d, r;
    int ov;
    mpfr_inits2(KVQ_XPREC, d, r, (mpfr_ptr)0);
    mpfr_set_flt(d, a, MPFR_RNDN);
    mpfr_set_flt(r, b, MPFR_RNDN);
    mpfr_sub(d, d, r, MPFR_RNDN);
    ov = kvq_exact_round(r, d, &kvq_xfmt_binary32);
    mpfr_clears(d, r, (mpfr_ptr)0);
    return ov;
}

/* Is (a - b) / s exactly equal to the rational num / 2? */
static int quot_is_half(float a, float b, float s, long num)
{
    mpfr_t d, t;
    int inex, r;
    mpfr_inits2(KVQ_XPREC, d, t, (mpfr_ptr)0);
    mpfr_set_flt(d, a, MPFR_RNDN);
    mpfr_set_flt(t, b, MPFR_RNDN);
    mpfr_sub(d, d, t, MPFR_RNDN);
    mpfr_set_flt(t, s, MPFR_RNDN);
    inex = mpfr_div(d, d, t, MPFR_RNDN);
    mpfr_set_si(t, num, MPFR_RNDN);
    mpfr_div_2ui(t, t, 1, MPFR_RNDN);
    r = inex == 0 && mpfr_equal_p(d, t);
    mpfr_clears(d, t, (mpfr_ptr)0);
    return r;
}

/* RN_fmt(a / b) by the exact path. */
static float xdiv(float a, float b, const kvq_xfmt *fmt)
{
    mpfr_t x, y, q;
    float r;
    mpfr_inits2(KVQ_XPREC, x, y, q, (mpfr_ptr)0);
    mpfr_set_flt(x, a, MPFR_RNDN);
    mpfr_set_flt(y, b, MPFR_RNDN);
    (void)kvq_exact_div_round(q, x, y, fmt);
    r = mpfr_get_flt(q, MPFR_RNDN);
    mpfr_clears(x, y, q, (mpfr_ptr)0);
    return r;
}

/* ========================================================================= */
/* special_values                                                            */
/* ========================================================================= */

/* SPEC: [KIVI-Q-03] [KIVI-M-03] [POL-SZ-01] [TEST-CMP-01]
 * A zero minimum is stored as +0 whatever its sign (also when -0 comes first,
 * and when RN16 of a tiny negative minimum is -0). */
START_TEST(special_zero_offset_is_plus_zero)
{
    for (uint32_t meta = 0; meta <= 1; meta++) {
        for (int k = 0; k < 3; k++) {
            kvq_kivi_shape sh = mkshape(4, 8, KVQ_GROUP_TOKEN, meta, 1, 8);
            float x[8] = { -0.0f, 1.0f, 0.0f, 0.5f, 0.25f, -0.0f, 2.0f, 0.75f };
            kbuf b;
            if (k == 1) x[0] = 0.0f, x[2] = -0.0f;
            if (k == 2) {
                if (meta != KVQ_META_F16) continue;
                x[0] = -0x1p-30f; /* RN16(-2^-30) = -0 */
            }
            kb_init(&b, &sh);
            run_ok(&b, x, &kvq_policy_default, "zero offset");
            REQ_MSG(bits32(b.fz[0]) == 0u, "meta %u case %d: zero stored as %08x", meta, k,
                          bits32(b.fz[0]));
            REQ_EQ(kb_fcode(&b, 0, 0), 0u);
            kb_free(&b);
        }
    }
}
END_TEST

/* SPEC: [KIVI-Q-01] [KIVI-Q-02] [KIVI-Q-04]
 * Under binary32 metadata the minimum gets code 0 and the maximum code 2^n-1:
 * x - z is exact at the minimum, and r / RN32(r / cmax) is within cmax (1 +-
 * 2^-23), which rounds to cmax.  Checked on random groups, with the exact path. */
START_TEST(special_endpoints)
{
    kvq_rng r = { g_seed ^ 0x11u };
    for (int it = 0; it < 400; it++) {
        uint32_t bits = all_bits[it % 4];
        kvq_kivi_shape sh = mkshape(bits, 16, KVQ_GROUP_TOKEN, KVQ_META_F32, 1, 16);
        float x[16];
        uint32_t imn = 0, imx = 0;
        kbuf b;
        float a = ldexpf(1.0f, (int)kvq_rng_below(&r, 61) - 30);
        for (int i = 0; i < 16; i++) {
            x[i] = rng_unit(&r) * a;
            if (x[i] < x[imn]) imn = (uint32_t)i;
            if (x[i] > x[imx]) imx = (uint32_t)i;
        }
        if (x[imn] == x[imx]) continue;
        kb_init(&b, &sh);
        run_ok(&b, x, &kvq_policy_default, "endpoints");
        if (!kvq_f32_same(b.fs[0], 0.0f)) {
            REQ_EQ(kb_fcode(&b, 0, imn), 0u);
            REQ_EQ(kb_fcode(&b, 0, imx), kvq_code_max(bits));
            REQ(kvq_f32_same(b.fy[imn], b.fz[0])); /* 0 * s + z = z */
        }
        kb_free(&b);
    }
}
END_TEST

/* SPEC: [KIVI-Q-01] [KIVI-Q-04] [KIVI-Q-05] [KIVI-Q-08] [KIVI-L-03] [API-FLAGS-01] [TR-GOAL-KIVI-VALUE]
 * The one-group core, called with the layout's base and stride on a
 * multi-group tensor, gives the exact path's codes, metadata and flags; it
 * OR-s into *flags rather than overwriting it. */
START_TEST(special_group_core_vs_exact)
{
    kvq_rng r = { g_seed ^ 0x12u };
    for (int it = 0; it < 64; it++) {
        uint32_t bits = all_bits[it % 4], grouping = (uint32_t)(it / 4) % 2;
        uint32_t meta = (uint32_t)(it / 8) % 2;
        kvq_policy pol = mkpol((uint32_t)(it / 16) % 2, KVQ_OVERFLOW_SATURATE,
                               (uint32_t)(it / 32) % 2);
        kvq_kivi_shape sh = grouping == KVQ_GROUP_CHANNEL
                                ? mkshape(bits, 16, grouping, meta, 32, 3)
                                : mkshape(bits, 16, grouping, meta, 3, 32);
        float x[96];
        uint32_t orflags = 0;
        kbuf b;
        for (int i = 0; i < 96; i++)
            x[i] = rng_unit(&r) * ldexpf(1.0f, (int)kvq_rng_below(&r, 20) - 10);
        x[kvq_rng_below(&r, 96)] = 0x1p-130f; /* a subnormal somewhere */
        kb_init(&b, &sh);
        run_ok(&b, x, &pol, "group core");
        for (uint64_t g = 0; g < b.ng; g++) {
            uint8_t grp[16];
            float s, z;
            uint32_t f = KVQ_FLAG_ZERO_SCALE; /* pre-set bit must survive */
            kvq_status st = kvq_kivi_quantize_group(
                grp, &s, &z, &f, x + kvq_kivi_group_base(&sh, g),
                (size_t)kvq_kivi_group_stride(&sh), sh.group, bits, meta, &pol);
            REQ_EQ(st, KVQ_OK);
            REQ(memcmp(grp, b.xo.codes + kvq_kivi_group_code_offset(&sh, g),
                             kvq_kivi_group_bytes(&sh)) == 0);
            REQ(kvq_f32_same(s, b.xo.scale[g]));
            REQ(kvq_f32_same(z, b.xo.zero[g]));
            REQ(f & KVQ_FLAG_ZERO_SCALE);
            f = 0;
            (void)kvq_kivi_quantize_group(grp, &s, &z, &f, x + kvq_kivi_group_base(&sh, g),
                                          (size_t)kvq_kivi_group_stride(&sh), sh.group, bits,
                                          meta, &pol);
            orflags |= f;
        }
        REQ_EQ(orflags, b.xo.flags & ~KVQ_FLAG_AMBIGUOUS);
        kb_free(&b);
    }
}
END_TEST

/* SPEC: [KIVI-D-01] [KIVI-D-03] [KIVI-B-03] [POL-OV-01] [TEST-CMP-01] [TR-GOAL-CODE-CAST]
 * Dequantization of hand-picked metadata and codes (signed zeros, exact
 * cancellation to +0, FLT_MIN, FLT_MAX) equals the exact RN32(c s + z); a
 * saturated result is +-FLT_MAX with the SATURATED flag. */
START_TEST(special_dequantize_vs_exact)
{
    static const float ss[] = { 0.0f, 0x1p-126f, 0x1p-14f, 1.0f, 3.0f, F16_MAX, 0x1p100f,
                                0x1.0101p+120f, F32_MAX };
    static const float zs[] = { 0.0f, -0.0f, 1.0f, -1.0f, -3.0f, 0x1p-126f, -0x1p-126f,
                                0x1p-149f, F16_MAX, -F16_MAX, F32_MAX, -F32_MAX, -0x1.8p+127f };
    for (uint32_t bi = 0; bi < 4; bi++) {
        uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits);
        uint32_t codes[3] = { 0u, 1u, cmax };
        for (size_t si = 0; si < sizeof ss / sizeof ss[0]; si++) {
            for (size_t zi = 0; zi < sizeof zs / sizeof zs[0]; zi++) {
                for (int ci = 0; ci < 3; ci++) {
                    kvq_kivi_shape sh = mkshape(bits, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 1, 8);
                    uint8_t grp[8] = { 0 };
                    float y[8], s = ss[si], z = zs[zi], want;
                    uint32_t f = SENT32;
                    int ov;
                    kvq_status st;
                    for (uint32_t i = 0; i < 8; i++) kvq_pack_code(grp, i, bits, codes[ci]);
                    want = kvq_exact_kivi_deq(codes[ci], s, z, &ov);
                    st = kvq_kivi_dequantize(y, &f, grp, &s, &z, &sh, &kvq_policy_default);
                    REQ_EQ(st, KVQ_OK);
                    REQ_MSG(kvq_f32_same(y[3], want),
                                  "code %u s %a z %a: fast %a (%08x), exact %a (%08x)",
                                  codes[ci], (double)s, (double)z, (double)y[3], bits32(y[3]),
                                  (double)want, bits32(want));
                    REQ_EQ(f, ov ? KVQ_FLAG_SATURATED : 0u);
                    REQ(kvq_exact_kivi_deq_within(y[3], codes[ci], s, z, NULL, NULL));
                }
            }
        }
    }
    {
        /* c s + z cancelling exactly: +0, not -0. */
        float want;
        int ov;
        want = kvq_exact_kivi_deq(3, 1.0f, -3.0f, &ov);
        REQ_EQ(bits32(want), 0u);
    }
}
END_TEST

/* SPEC: [POL-GLOB-01] [POL-01]
 * No hidden global numeric state: both paths, on inputs that reach subnormal
 * grids, overflow and binary16 rounding, leave MPFR's exponent range, default
 * precision and rounding mode, and the host rounding mode as they found them. */
START_TEST(special_no_global_state)
{
    kvq_kivi_shape sh = mkshape(4, 8, KVQ_GROUP_TOKEN, KVQ_META_F16, 2, 8);
    float x[16] = { 0x1p-149f, -0x1p-140f, 1.0f, 70000.0f, 0.5f, -0x1p-20f, 3.0f, 2.0f,
                    -3.0e38f, 3.0e38f, 0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f };
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_prec_t prec = mpfr_get_default_prec();
    mpfr_rnd_t rnd = mpfr_get_default_rounding_mode();
    int fe = fegetround();
    for (uint32_t p = 0; p < 8; p++) {
        kvq_policy pol = mkpol(p & 1u, (p >> 1) & 1u, (p >> 2) & 1u);
        kbuf b;
        kb_init(&b, &sh);
        diff_or_fail(&b, x, &pol, "global state");
        kb_free(&b);
        REQ(mpfr_get_emin() == emin && mpfr_get_emax() == emax);
        REQ(mpfr_get_default_prec() == prec && mpfr_get_default_rounding_mode() == rnd);
        REQ(fegetround() == fe);
    }
}
END_TEST

/* ========================================================================= */
/* ties                                                                      */
/* ========================================================================= */

/*
 * SPEC: [POL-TIE-01] [POL-TIE-02] [KIVI-Q-04] [KIVI-B-01] [KIVI-B-02]
 * Exact ties generated by construction: s = m 2^e (m odd), z = j 2^(e-1) and
 * x = z + (k + 1/2) s, every value on the 2^(e-1) grid within 24 bits, so that
 * r = cmax s, RN32(r / cmax) = s, RN32(x - z) = x - z and RN32((x - z)/s) =
 * k + 1/2 are all exact -- which MPFR confirms before the case is used.  The exact
 * path must call every such element ambiguous (real {k, k+1}); the fast path
 * must give the even neighbour under ties=even and k+1 under ties=away, equal to
 * the exact path's pinned code.  Both metadata formats (binary16 construction:
 * m < 2^11, |j| < 2^11, s >= 2^-14).
 */
START_TEST(ties_generated_exact)
{
    kvq_rng r = { g_seed ^ 0x21u };
    uint64_t ties_seen = 0;
    for (uint32_t bi = 0; bi < 4; bi++) {
        uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits);
        for (uint32_t meta = 0; meta <= 1; meta++) {
            for (uint32_t ties = 0; ties <= 1; ties++) {
                /* Every k in [0, cmax) gets a tie at least once. */
                for (uint32_t k0 = 0; k0 < cmax; k0 += 30) {
                    const uint32_t G = 32;
                    kvq_kivi_shape sh = mkshape(bits, G, KVQ_GROUP_CHANNEL, meta, G, 1);
                    kvq_policy pol = mkpol(ties, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP);
                    uint32_t m = 2u * kvq_rng_below(&r, meta ? 31u : 63u) + 1u;
                    int e = meta ? (int)kvq_rng_below(&r, 12) - 8 : (int)kvq_rng_below(&r, 81) - 40;
                    int32_t j = (int32_t)kvq_rng_below(&r, meta ? 2001u : 400001u) -
                                (meta ? 1000 : 200000);
                    float u = ldexpf(1.0f, e - 1), s = (float)m * 2.0f * u, z = (float)j * u;
                    float x[32];
                    uint32_t kk[32];
                    kbuf b;
                    z = plus_zero(z);
                    x[0] = z;                                   /* the minimum: code 0 */
                    x[1] = (float)(j + (int32_t)(2u * cmax * m)) * u; /* the maximum */
                    kk[0] = kk[1] = UINT32_MAX;
                    for (uint32_t i = 2; i < G; i++) {
                        uint32_t k = (k0 + i - 2u) % cmax;
                        kk[i] = k;
                        x[i] = (float)(j + (int32_t)((2u * k + 1u) * m)) * u;
                    }
                    /* The construction is exact (checked, not assumed). */
                    REQ(sub_exact32(x[1], x[0]));
                    REQ(kvq_f32_same(xdiv(x[1] - x[0], (float)cmax, &kvq_xfmt_binary32),
                                           s));
                    if (meta) {
                        int ov;
                        REQ(kvq_f32_same(kvq_exact_round_float(s, &kvq_xfmt_binary16, &ov),
                                               s) && !ov && s >= 0x1p-14f);
                        REQ(kvq_f32_same(kvq_exact_round_float(z, &kvq_xfmt_binary16, &ov),
                                               z) && !ov);
                    }
                    for (uint32_t i = 2; i < G; i++) {
                        REQ(sub_exact32(x[i], z));
                        REQ(quot_is_half(x[i], z, s, 2 * (long)kk[i] + 1));
                    }
                    kb_init(&b, &sh);
                    run_ok(&b, x, &pol, "generated ties");
                    REQ(kvq_f32_same(b.xo.scale[0], s));
                    REQ(kvq_f32_same(b.xo.zero[0], z));
                    REQ_EQ(kb_fcode(&b, 0, 0), 0u);
                    REQ_EQ(kb_fcode(&b, 0, 1), cmax);
                    for (uint32_t i = 2; i < G; i++) {
                        uint32_t k = kk[i];
                        uint32_t want = ties == KVQ_TIES_AWAY ? k + 1u : (k % 2u ? k + 1u : k);
                        uint32_t cr = b.xo.code_real[i], ca = b.xo.code_alt[i];
                        uint32_t xp = kvq_unpack_code(b.xo.codes, i, bits);
                        REQ_MSG(cr != ca, "bits %u k %u: exact does not call the tie "
                                      "ambiguous", bits, k);
                        REQ((cr == k && ca == k + 1u) || (cr == k + 1u && ca == k));
                        REQ_EQ(cr, want);        /* tie rule on the real value */
                        REQ_EQ(xp, want);        /* exact pinned */
                        REQ_MSG(kb_fcode(&b, 0, i) == want,
                                      "bits %u meta %u ties %u k %u: fast %u, want %u", bits,
                                      meta, ties, k, kb_fcode(&b, 0, i), want);
                        ties_seen++;
                    }
                    REQ(b.xo.flags & KVQ_FLAG_AMBIGUOUS);
                    REQ_EQ(b.xo.ambiguous, G - 2u);
                    REQ_EQ(b.ff & (KVQ_FLAG_AMBIGUOUS | KVQ_FLAG_CLAMPED), 0u);
                    kb_free(&b);
                }
            }
        }
    }
    REQ(ties_seen > 1000);
}
END_TEST

/*
 * SPEC: [POL-TIE-01] [POL-TIE-02] [KIVI-Q-05] [KIVI-M-02] [KIVI-M-03] [API-FLAGS-01]
 * Ties just outside [0, cmax], made by a binary16 offset that rounds away from
 * the minimum: with s = 2^-12, z = RN16(min) = 1 and min = 1 -+ 2^-13, the
 * minimum's quotient is exactly -1/2 (or +1/2) and the maximum's 2.5 (or 3.5).
 * Under ties=away -1/2 goes to -1 and is clamped (CLAMPED), under ties=even to
 * 0 (no clamp); 3.5 goes to 4 under both rules and is clamped to 3.
 */
START_TEST(ties_outside_range_f16)
{
    for (int side = 0; side < 2; side++) {
        for (uint32_t ties = 0; ties <= 1; ties++) {
            kvq_kivi_shape sh = mkshape(2, 8, KVQ_GROUP_TOKEN, KVQ_META_F16, 1, 8);
            kvq_policy pol = mkpol(ties, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP);
            float mn = side ? 1.0f + 0x1p-13f : 1.0f - 0x1p-13f, s = 0x1p-12f;
            float x[8];
            kbuf b;
            uint32_t cmin, cmax_el;
            uint32_t fl;
            for (int i = 0; i < 8; i++) x[i] = mn + (float)(i % 4) * s; /* exact */
            kb_init(&b, &sh);
            run_ok(&b, x, &pol, "outside ties");
            REQ(kvq_f32_same(b.fs[0], s));
            REQ(kvq_f32_same(b.fz[0], 1.0f));
            REQ(quot_is_half(x[0], 1.0f, s, side ? 1 : -1));
            REQ(quot_is_half(x[3], 1.0f, s, side ? 7 : 5));
            cmin = kb_fcode(&b, 0, 0);
            cmax_el = kb_fcode(&b, 0, 3);
            fl = b.ff & KVQ_FLAG_CLAMPED;
            if (side == 0) {
                REQ_EQ(cmin, 0u);
                REQ_EQ(cmax_el, ties == KVQ_TIES_AWAY ? 3u : 2u);
                REQ_EQ(fl, ties == KVQ_TIES_AWAY ? KVQ_FLAG_CLAMPED : 0u);
                REQ_EQ(b.xo.code_real[0], b.xo.code_alt[0]); /* both sides clamp to 0 */
                REQ(b.xo.code_real[3] != b.xo.code_alt[3]); /* 2.5: {2, 3} */
            } else {
                REQ_EQ(cmin, ties == KVQ_TIES_AWAY ? 1u : 0u);
                REQ_EQ(cmax_el, 3u);
                REQ_EQ(fl, KVQ_FLAG_CLAMPED);
                REQ(b.xo.code_real[0] != b.xo.code_alt[0]); /* 0.5: {0, 1} */
                REQ_EQ(b.xo.code_real[3], b.xo.code_alt[3]); /* 3.5: both clamp to 3 */
            }
            kb_free(&b);
        }
    }
}
END_TEST

/* SPEC: [POL-TIE-01] [POL-TIE-02]
 * kvq_round_int against MPFR (mpfr_rint to nearest even, mpfr_round away):
 * every half-integer in [-2^11, 2^11], the half-integers next to 2^22 and 2^23,
 * and random finite values with |q| < 2^31 of every binade. */
START_TEST(ties_round_int)
{
    kvq_rng r = { g_seed ^ 0x22u };
    mpfr_t v, w;
    mpfr_inits2(64, v, w, (mpfr_ptr)0);
    for (long k = -4096; k <= 4096 + 2 * 200000; k++) {
        float q;
        if (k <= 4096) {
            q = (float)k * 0.5f; /* exact */
        } else {
            long t = k - 4097; /* half-integers and integers around 2^22 and 2^23 */
            q = t < 200000 ? 0x1p22f - 50000.0f + (float)t * 0.5f
                           : 0x1p23f - 50000.0f + (float)(t - 200000) * 0.5f;
            if (kvq_rng_next(&r) & 1u) q = -q;
        }
        for (uint32_t ties = 0; ties <= 1; ties++) {
            mpfr_set_flt(v, q, MPFR_RNDN);
            if (ties == KVQ_TIES_AWAY)
                mpfr_round(w, v);
            else
                mpfr_rint(w, v, MPFR_RNDN);
            REQ_MSG(kvq_round_int(q, ties) == mpfr_get_si(w, MPFR_RNDN),
                          "q=%a ties=%u: %" PRId64 " vs %ld", (double)q, ties,
                          kvq_round_int(q, ties), mpfr_get_si(w, MPFR_RNDN));
        }
    }
    for (int it = 0; it < 200000; it++) {
        /* random encodings below 2^31 in magnitude */
        uint32_t e = kvq_rng_below(&r, 127u + 31u);
        float q = f32((uint32_t)(kvq_rng_next(&r) & 0x807FFFFFu) | e << 23);
        for (uint32_t ties = 0; ties <= 1; ties++) {
            mpfr_set_flt(v, q, MPFR_RNDN);
            if (ties == KVQ_TIES_AWAY)
                mpfr_round(w, v);
            else
                mpfr_rint(w, v, MPFR_RNDN);
            REQ_MSG(kvq_round_int(q, ties) == mpfr_get_si(w, MPFR_RNDN), "q=%a ties=%u",
                          (double)q, ties);
        }
    }
    /* the documented examples, as integers */
    REQ_EQ(kvq_round_int(2.5f, KVQ_TIES_EVEN), 2);
    REQ_EQ(kvq_round_int(2.5f, KVQ_TIES_AWAY), 3);
    REQ_EQ(kvq_round_int(-2.5f, KVQ_TIES_EVEN), -2);
    REQ_EQ(kvq_round_int(-2.5f, KVQ_TIES_AWAY), -3);
    REQ_EQ(kvq_round_int(-0.5f, KVQ_TIES_EVEN), 0);
    REQ_EQ(kvq_round_int(-0.5f, KVQ_TIES_AWAY), -1);
    REQ_EQ(kvq_round_int(0x1.fffffep-2f, KVQ_TIES_AWAY), 0);
    mpfr_clears(v, w, (mpfr_ptr)0);
}
END_TEST

/* ========================================================================= */
/* degenerate (zero range)                                                   */
/* ========================================================================= */

/* SPEC: [POL-ZR-01] [KIVI-Q-06] [KIVI-Q-02] [KIVI-Q-03] [KIVI-M-02] [KIVI-M-03] [KIVI-D-01]
 * SPEC: [API-FLAGS-01]
 * Constant groups: scale stored as +0, zero = the value (RN16 of it under
 * binary16), every code 0, ZERO_SCALE the only flag, and dequantization returns
 * the stored offset for every element. */
START_TEST(degenerate_constant)
{
    static const float vals[] = { 0.0f, -0.0f, 1.0f, -1.0f, 0x1.234566p-3f, -7.5e4f, 3.0e38f,
                                  -F32_MAX, F32_MAX, 0x1p-126f, 1.0f + 0x1p-23f, 65519.0f };
    for (uint32_t bi = 0; bi < 4; bi++) {
        for (uint32_t meta = 0; meta <= 1; meta++) {
            for (size_t vi = 0; vi < sizeof vals / sizeof vals[0]; vi++) {
                kvq_kivi_shape sh = mkshape(all_bits[bi], 16, KVQ_GROUP_CHANNEL, meta, 16, 2);
                float x[32], want_z;
                int ov = 0;
                kbuf b;
                for (int i = 0; i < 32; i++) x[i] = vals[vi];
                if (is_zero(vals[vi])) x[5] = -x[5]; /* +0 and -0 mixed: still constant */
                want_z = meta ? kvq_exact_round_float(vals[vi], &kvq_xfmt_binary16, &ov)
                              : vals[vi];
                want_z = plus_zero(want_z); /* a zero offset is stored as +0 */
                kb_init(&b, &sh);
                run_ok(&b, x, &kvq_policy_default, "constant");
                for (uint64_t g = 0; g < b.ng; g++) {
                    REQ_EQ(bits32(b.fs[g]), 0u);
                    /* an overflowing offset saturates to +-65504 [POL-OV-01] */
                    REQ(kvq_f32_same(b.fz[g], ov ? copysignf(F16_MAX, vals[vi]) : want_z));
                }
                REQ(all_bytes(b.fc, b.cb, 0));
                REQ_EQ(b.ff, KVQ_FLAG_ZERO_SCALE | (ov ? KVQ_FLAG_SATURATED : 0u));
                for (int i = 0; i < 32; i++) REQ(kvq_f32_same(b.fy[i], b.fz[0]));
                kb_free(&b);
            }
        }
    }
}
END_TEST

/* SPEC: [POL-ZR-01] [KIVI-Q-06] [KIVI-Q-02] [KIVI-M-02] [KIVI-M-03]
 * A nonzero range whose scale rounds below the smallest normal of its storage
 * format is a zero range (binary32: 2^-126; binary16: 2^-14); a scale just
 * rounding up to the smallest normal is kept.  Every case against the exact path. */
START_TEST(degenerate_tiny_scale)
{
    struct {
        float mx;
        uint32_t meta, bits, zero_scale;
    } cs[] = {
        { 0x1p-120f, KVQ_META_F32, 8, 1 },                 /* s ~ 2^-128 */
        { 0x1.fep-119f, KVQ_META_F32, 8, 0 },              /* s = 2^-126 exactly */
        { 0x1.fcp-119f, KVQ_META_F32, 8, 1 },              /* just below */
        { 0x1p-126f, KVQ_META_F32, 1, 0 },                 /* cmax 1: s = 2^-126 */
        { 255.0f * 0x1p-15f, KVQ_META_F16, 8, 1 },         /* s = 2^-15: f16 subnormal */
        { 15.0f * (0x1p-14f - 0x1p-26f), KVQ_META_F16, 4, 0 }, /* RN16 rounds up to 2^-14 */
        { 15.0f * (0x1p-14f - 0x1p-24f), KVQ_META_F16, 4, 1 }, /* RN16: subnormal */
        { 0x1p-14f, KVQ_META_F16, 1, 0 },
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        kvq_kivi_shape sh = mkshape(cs[k].bits, 8, KVQ_GROUP_TOKEN, cs[k].meta, 1, 8);
        float x[8] = { 0.0f, cs[k].mx, 0.0f, cs[k].mx * 0.5f, 0.0f, 0.0f, 0.0f, 0.0f };
        kbuf b;
        kb_init(&b, &sh);
        run_ok(&b, x, &kvq_policy_default, "tiny scale");
        REQ_MSG(((b.ff & KVQ_FLAG_ZERO_SCALE) != 0) == (cs[k].zero_scale != 0),
                      "case %zu: flags %02x scale %a", k, b.ff, (double)b.fs[0]);
        if (cs[k].zero_scale) {
            REQ_EQ(bits32(b.fs[0]), 0u);
            REQ(all_bytes(b.fc, b.cb, 0));
        } else {
            REQ(b.fs[0] >= (cs[k].meta ? 0x1p-14f : 0x1p-126f));
        }
        kb_free(&b);
    }
}
END_TEST

/* ========================================================================= */
/* overflow_saturation                                                       */
/* ========================================================================= */

/* SPEC: [POL-OV-01] [POL-OV-02] [KIVI-Q-02] [KIVI-Q-04] [API-FLAGS-01] [TR-GOAL-KIVI-PREPASS]
 * A range that overflows binary32 (max - min > FLT_MAX) saturates under the
 * default policy (SATURATED, results as the exact path's) and fails with
 * KVQ_E_RANGE under the NaN policy -- with every output, flags included,
 * untouched, even when the overflowing group is the last one. */
START_TEST(overflow_range)
{
    static const float pairs[][2] = { { -F32_MAX, F32_MAX }, { -0x1p127f, 0x1p127f },
                                      { -1.0e38f, 3.0e38f }, { -3.0e38f, 0.0f } };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        for (uint32_t bi = 0; bi < 4; bi++) {
            for (uint32_t ovp = 0; ovp <= 1; ovp++) {
                kvq_kivi_shape sh = mkshape(all_bits[bi], 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 2, 8);
                kvq_policy pol = mkpol(KVQ_TIES_EVEN, ovp, KVQ_SUBNORMAL_KEEP);
                float x[16];
                int overflows;
                kbuf b;
                for (int i = 0; i < 8; i++) x[i] = (float)i; /* group 0 benign */
                x[8] = pairs[p][0];
                x[9] = pairs[p][1];
                for (int i = 10; i < 16; i++) x[i] = pairs[p][i % 2] * 0.125f * (float)(i - 9);
                overflows = sub_overflows32(x[9], x[8]);
                kb_init(&b, &sh);
                diff_or_fail(&b, x, &pol, "range overflow");
                if (p == 0) REQ(overflows);
                if (overflows && ovp == KVQ_OVERFLOW_NAN) {
                    REQ_EQ(b.fst, KVQ_E_RANGE);
                    REQ(kb_fast_untouched(&b));
                } else {
                    REQ_EQ(b.fst, KVQ_OK);
                    if (overflows) REQ(b.ff & KVQ_FLAG_SATURATED);
                }
                kb_free(&b);
            }
        }
    }
}
END_TEST

/* SPEC: [POL-OV-01] [POL-OV-02] [POL-F16-02] [KIVI-M-02] [KIVI-M-03]
 * binary16 metadata overflow: an offset RN16(min) past 65504 (min >= 65520) or
 * a scale past it saturates to +-65504 (SATURATED) or fails with KVQ_E_RANGE
 * writing nothing; 65519.996 (the largest binary32 below 65520) does not
 * overflow. */
START_TEST(overflow_f16_meta)
{
    struct {
        float lo, hi;
        uint32_t bits;
        int overflow;
    } cs[] = {
        { 70000.0f, 70001.0f, 4, 1 },            /* zero overflows */
        { -65520.0f, -65000.0f, 4, 1 },          /* exactly the overflow threshold */
        { 0x1.ffdffep+15f, 0x1.ffdffep+15f, 4, 0 }, /* 65519.996: rounds to 65504 */
        { 0.0f, 1.0e5f, 1, 1 },                  /* scale 1e5 overflows */
        { 0.0f, 65519.0f, 1, 0 },
        { -3.0e38f, 3.0e38f, 8, 1 },             /* range, scale and zero overflow */
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        for (uint32_t ovp = 0; ovp <= 1; ovp++) {
            kvq_kivi_shape sh = mkshape(cs[k].bits, 8, KVQ_GROUP_TOKEN, KVQ_META_F16, 2, 8);
            kvq_policy pol = mkpol(KVQ_TIES_EVEN, ovp, KVQ_SUBNORMAL_KEEP);
            float x[16];
            kbuf b;
            for (int i = 0; i < 8; i++) x[i] = (float)i * 0.125f;
            for (int i = 8; i < 16; i++) x[i] = i % 2 ? cs[k].hi : cs[k].lo;
            kb_init(&b, &sh);
            diff_or_fail(&b, x, &pol, "f16 overflow");
            if (cs[k].overflow && ovp == KVQ_OVERFLOW_NAN) {
                REQ_EQ(b.fst, KVQ_E_RANGE);
                REQ(kb_fast_untouched(&b) && kb_exact_untouched(&b));
            } else {
                REQ_EQ(b.fst, KVQ_OK);
                REQ_EQ((b.ff & KVQ_FLAG_SATURATED) != 0, cs[k].overflow != 0);
                REQ(fabsf(b.fs[1]) <= F16_MAX && fabsf(b.fz[1]) <= F16_MAX);
            }
            kb_free(&b);
        }
    }
}
END_TEST

/* SPEC: [POL-OV-01] [POL-OV-02] [KIVI-D-01] [KIVI-D-03] [KIVI-B-03]
 * Dequantization overflow (c s + z past FLT_MAX): +-FLT_MAX and SATURATED by
 * default, accepted by the exact bound; KVQ_E_RANGE under the NaN policy with y
 * and flags untouched, even when only the last group overflows. */
START_TEST(overflow_dequantize)
{
    for (int sign = 0; sign < 2; sign++) {
        for (uint32_t ovp = 0; ovp <= 1; ovp++) {
            kvq_kivi_shape sh = mkshape(8, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 2, 8);
            kvq_policy pol = mkpol(KVQ_TIES_EVEN, ovp, KVQ_SUBNORMAL_KEEP);
            uint8_t codes[16];
            float s[2] = { 1.0f, sign ? 0x1p100f : 0x1p120f };
            float z[2] = { 0.0f, sign ? -F32_MAX : F32_MAX };
            float y[16];
            uint32_t f = SENT32;
            kvq_status st;
            for (int i = 0; i < 16; i++) codes[i] = (uint8_t)(i * 17);
            memset(y, SENT8, sizeof y);
            st = kvq_kivi_dequantize(y, &f, codes, s, z, &sh, &pol);
            if (sign) {
                REQ_EQ(st, KVQ_OK);
                REQ_EQ(f, 0u);
            } else if (ovp == KVQ_OVERFLOW_NAN) {
                REQ_EQ(st, KVQ_E_RANGE);
                REQ(all_bytes(y, sizeof y, SENT8) && f == SENT32);
                continue;
            } else {
                REQ_EQ(st, KVQ_OK);
                REQ_EQ(f, KVQ_FLAG_SATURATED);
            }
            for (uint32_t g = 0; g < 2; g++) {
                for (uint32_t i = 0; i < 8; i++) {
                    uint32_t c = kvq_unpack_code(codes + 8 * g, i, 8);
                    int ov;
                    float want = kvq_exact_kivi_deq(c, s[g], z[g], &ov);
                    float got = y[kvq_kivi_elem_index(&sh, g, i)];
                    REQ_MSG(kvq_f32_same(got, want), "g %u i %u: %a vs %a", g, i,
                                  (double)got, (double)want);
                    REQ(kvq_exact_kivi_deq_within(got, c, s[g], z[g], NULL, NULL));
                }
            }
        }
    }
}
END_TEST

/* ========================================================================= */
/* subnormal                                                                 */
/* ========================================================================= */

/* SPEC: [POL-SN-01] [KIVI-Q-01] [KIVI-Q-03] [API-FLAGS-01]
 * Subnormal inputs: SUBNORMAL flagged under both policies; KEEP uses them (a
 * subnormal minimum is the stored offset), DAZ reads them as zeros of the same
 * sign (a flushed minimum is stored as +0).  All against the exact path. */
START_TEST(subnormal_keep_daz)
{
    for (uint32_t daz = 0; daz <= 1; daz++) {
        for (uint32_t meta = 0; meta <= 1; meta++) {
            for (uint32_t bi = 0; bi < 4; bi++) {
                kvq_kivi_shape sh = mkshape(all_bits[bi], 8, KVQ_GROUP_TOKEN, meta, 1, 16);
                kvq_policy pol = mkpol(KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, daz);
                float x[16] = { -0x1p-140f, 1.0f, 0x1p-149f, 0.5f, 0.25f, 0.75f, 0.0f, 0.125f,
                                /* group 1: subnormals only */
                                0x1p-149f, -0x1p-149f, 0x1.fffffcp-131f, -0x1p-140f,
                                0x1.8p-130f, 0.0f, -0.0f, 0x1p-149f };
                kbuf b;
                kb_init(&b, &sh);
                run_ok(&b, x, &pol, "subnormal");
                REQ(b.ff & KVQ_FLAG_SUBNORMAL);
                if (meta == KVQ_META_F32) {
                    if (daz) {
                        REQ_EQ(bits32(b.fz[0]), 0u);  /* -0 min stored as +0 */
                        REQ_EQ(bits32(b.fs[1]), 0u);  /* all read as zero */
                        REQ_EQ(bits32(b.fz[1]), 0u);
                    } else {
                        REQ(kvq_f32_same(b.fz[0], -0x1p-140f));
                        REQ(kvq_f32_same(b.fz[1], -0x1p-140f)); /* subnormal offset */
                        REQ_EQ(bits32(b.fs[1]), 0u);  /* scale below 2^-126 */
                    }
                }
                REQ(b.ff & KVQ_FLAG_ZERO_SCALE);
                kb_free(&b);
            }
        }
    }
}
END_TEST

/* SPEC: [POL-SN-01] [KIVI-Q-04] [KIVI-B-01]
 * Random groups of subnormal and tiny normal values (every binade up to 2^-116)
 * under both subnormal policies, both tie rules and both metadata formats,
 * against the exact path. */
START_TEST(subnormal_random_tiny)
{
    kvq_rng r = { g_seed ^ 0x51u };
    char why[512];
    for (int it = 0; it < 3000; it++) {
        uint32_t bits = all_bits[it % 4];
        kvq_kivi_shape sh = mkshape(bits, 16, (uint32_t)(it / 4) % 2, (uint32_t)(it / 8) % 2,
                                    16, 16);
        kvq_policy pol = mkpol((uint32_t)(it / 16) % 2, KVQ_OVERFLOW_SATURATE,
                               (uint32_t)(it / 32) % 2);
        float x[256];
        kbuf b;
        for (int i = 0; i < 256; i++) {
            uint32_t e = kvq_rng_below(&r, 11);
            x[i] = f32((uint32_t)(kvq_rng_next(&r) & 0x807FFFFFu) | e << 23);
        }
        kb_init(&b, &sh);
        if (kb_diff(&b, x, &pol, why, sizeof why, NULL)) {
            dump_case(stderr, why, g_seed, "subnormal", (uint64_t)it, &sh, &pol, x);
            ck_abort_msg("subnormal case %d: %s", it, why);
        }
        REQ_EQ(b.fst, KVQ_OK);
        kb_free(&b);
    }
}
END_TEST

/* ========================================================================= */
/* packing                                                                   */
/* ========================================================================= */

/* SPEC: [LAY-PACK-01] [KIVI-Q-04] [KIVI-L-04]
 * Codes known by construction (x = z + c s on a dyadic grid, every value exact)
 * come out of both paths packed LSB first: element i at byte i*b/8, bit
 * (i*b) mod 8 -- the expected bytes are built here with shifts, independent of
 * the layout header's arithmetic.  Two literal examples pin the bit order. */
START_TEST(packing_lsb_first)
{
    kvq_rng r = { g_seed ^ 0x61u };
    for (uint32_t bi = 0; bi < 4; bi++) {
        uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits);
        for (uint32_t G = 8; G <= 64; G += 8) {
            kvq_kivi_shape sh = mkshape(bits, G, KVQ_GROUP_TOKEN, KVQ_META_F32, 1, G);
            float x[64], s = 0.375f, z = -2.0f;
            uint32_t c[64];
            uint8_t want[64];
            kbuf b;
            memset(want, 0, sizeof want);
            for (uint32_t i = 0; i < G; i++) {
                c[i] = i == 0 ? 0u : i == 1 ? cmax : kvq_rng_below(&r, cmax + 1u);
                x[i] = z + (float)c[i] * s; /* exact: multiples of 2^-3 below 2^7 */
                want[i * bits / 8u] |= (uint8_t)(c[i] << (i * bits % 8u));
            }
            kb_init(&b, &sh);
            run_ok(&b, x, &kvq_policy_default, "packing");
            REQ(kvq_f32_same(b.fs[0], s) && kvq_f32_same(b.fz[0], z));
            REQ_MSG(memcmp(b.fc, want, G * bits / 8u) == 0, "bits %u G %u", bits, G);
            for (uint32_t i = 0; i < G; i++) REQ(kvq_f32_same(b.fy[i], x[i]));
            kb_free(&b);
        }
    }
    {
        /* 2-bit codes 0,1,2,3 -> 0b11100100; 4-bit codes 1,2 -> 0x21 */
        uint8_t g2[1] = { 0 }, g4[1] = { 0 };
        for (uint32_t i = 0; i < 4; i++) kvq_pack_code(g2, i, 2, i);
        kvq_pack_code(g4, 0, 4, 1);
        kvq_pack_code(g4, 1, 4, 2);
        REQ_EQ(g2[0], 0xE4u);
        REQ_EQ(g4[0], 0x21u);
    }
}
END_TEST

/* SPEC: [LAY-PACK-01]
 * kvq_pack_code writes exactly its own bits (every other bit of the group
 * keeps its random value) and kvq_unpack_code reads them back, for every bit
 * width, every element of a 64-element group and every code. */
START_TEST(packing_pack_unpack)
{
    kvq_rng r = { g_seed ^ 0x62u };
    for (uint32_t bi = 0; bi < 4; bi++) {
        uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits);
        for (uint32_t i = 0; i < 64; i++) {
            for (uint32_t c = 0; c <= cmax; c++) {
                uint8_t grp[64], before[64];
                uint32_t mask = cmax << (i * bits % 8u);
                for (int k = 0; k < 64; k++) grp[k] = (uint8_t)kvq_rng_next(&r);
                memcpy(before, grp, sizeof grp);
                kvq_pack_code(grp, i, bits, c);
                REQ_EQ(kvq_unpack_code(grp, i, bits), c);
                for (uint32_t k = 0; k < 64; k++) {
                    if (k == i * bits / 8u) {
                        REQ_EQ(grp[k] & ~mask & 0xFFu, before[k] & ~mask & 0xFFu);
                        REQ_EQ((grp[k] & mask) >> (i * bits % 8u), c);
                    } else {
                        REQ_EQ(grp[k], before[k]);
                    }
                }
            }
        }
    }
}
END_TEST

/* SPEC: [KIVI-L-04] [KIVI-M-01] [LAY-PACK-01]
 * Storage sizes: G*b/8 code bytes a group, groups contiguous, 2 or 4 bytes a
 * metadata value. */
START_TEST(packing_sizes)
{
    for (uint32_t bi = 0; bi < 4; bi++) {
        for (uint32_t G = 8; G <= 128; G += 8) {
            for (uint32_t meta = 0; meta <= 1; meta++) {
                kvq_kivi_shape sh = mkshape(all_bits[bi], G, KVQ_GROUP_TOKEN, meta, 3, 2 * G);
                uint64_t ng = 6;
                REQ_EQ(kvq_kivi_elems(&sh), 6u * G);
                REQ_EQ(kvq_kivi_groups(&sh), ng);
                REQ_EQ(kvq_kivi_group_bytes(&sh), G * all_bits[bi] / 8u);
                REQ_EQ(kvq_kivi_code_bytes(&sh), ng * G * all_bits[bi] / 8u);
                REQ_EQ(kvq_kivi_meta_size(&sh), meta ? 2u : 4u);
                REQ_EQ(kvq_kivi_storage_bytes(&sh),
                                  ng * G * all_bits[bi] / 8u + 2u * ng * (meta ? 2u : 4u));
                for (uint64_t g = 0; g < ng; g++)
                    REQ_EQ(kvq_kivi_group_code_offset(&sh, g),
                                      g * G * all_bits[bi] / 8u);
            }
        }
    }
    for (uint32_t b = 0; b <= 8; b++) REQ_EQ(kvq_pow2_small(b), 1u << b);
}
END_TEST

/* ========================================================================= */
/* grouping                                                                  */
/* ========================================================================= */

/* SPEC: [KIVI-L-01] [KIVI-L-03] [TR-GOAL-KIVI-LAYOUT]
 * The layout's maps against the definition, for both groupings and several
 * shapes: per channel g = tb*D + c holds tokens tb*G.. of channel c; per token
 * g = t*(D/G) + cb holds channels cb*G..; every element belongs to exactly one
 * (group, element) and kvq_kivi_group_of inverts kvq_kivi_elem_index; each
 * group's code bytes lie after the previous group's, within the tensor's. */
START_TEST(grouping_maps)
{
    static const uint32_t Gs[] = { 8, 16, 32 };
    for (uint32_t grouping = 0; grouping <= 1; grouping++) {
        for (size_t gi = 0; gi < 3; gi++) {
            for (uint32_t a = 1; a <= 3; a++) {
                for (uint32_t o = 1; o <= 5; o++) {
                    uint32_t G = Gs[gi];
                    kvq_kivi_shape sh = grouping == KVQ_GROUP_CHANNEL
                                            ? mkshape(4, G, grouping, 0, a * G, o)
                                            : mkshape(4, G, grouping, 0, o, a * G);
                    uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
                    uint8_t *seen = xmalloc(n);
                    uint32_t T = sh.tokens, D = sh.channels;
                    memset(seen, 0, n);
                    REQ(kvq_kivi_shape_ok(&sh));
                    REQ_EQ(ng * G, n);
                    for (uint64_t g = 0; g < ng; g++) {
                        for (uint32_t i = 0; i < G; i++) {
                            uint64_t e = kvq_kivi_elem_index(&sh, g, i), want;
                            uint32_t back_i;
                            uint64_t back_g;
                            if (grouping == KVQ_GROUP_CHANNEL) {
                                uint64_t tb = g / D, c = g % D;
                                want = (tb * G + i) * D + c;
                            } else {
                                uint64_t t = g / (D / G), cb = g % (D / G);
                                want = t * D + cb * G + i;
                            }
                            REQ_EQ(e, want);
                            REQ(e < (uint64_t)T * D);
                            REQ_EQ(seen[e], 0);
                            seen[e] = 1;
                            back_g = kvq_kivi_group_of(&sh, e, &back_i);
                            REQ_EQ(back_g, g);
                            REQ_EQ(back_i, i);
                        }
                        REQ_EQ(kvq_kivi_group_base(&sh, g),
                                          kvq_kivi_elem_index(&sh, g, 0));
                        /* group g's code bytes follow group g-1's and end within
                         * the tensor's (lemma kvq_kivi_block_end) */
                        REQ_EQ(kvq_kivi_group_code_offset(&sh, g),
                               g * (uint64_t)kvq_kivi_group_bytes(&sh));
                        REQ(kvq_kivi_group_code_offset(&sh, g) + kvq_kivi_group_bytes(&sh) <=
                            kvq_kivi_code_bytes(&sh));
                    }
                    REQ(all_bytes(seen, n, 1));
                    REQ_EQ(kvq_kivi_group_stride(&sh),
                                      grouping == KVQ_GROUP_CHANNEL ? D : 1u);
                    free(seen);
                }
            }
        }
    }
}
END_TEST

/* SPEC: [KIVI-L-01] [KIVI-L-03] [KIVI-Q-01] [KIVI-Q-02] [KIVI-Q-03] [KIVI-Q-04] [KIVI-D-01]
 * [TR-GOAL-KIVI-TENSOR]
 * Both groupings, every n in {1, 2, 4, 8}: each group g gets its own scale s_g,
 * offset z_g and code pattern (x = z_g + c s_g, exact by construction), so the
 * quantizer must put exactly the layout's elements into each group: stored
 * scale/offset are s_g/z_g, the codes are the pattern, dequantization returns x
 * bit for bit at the right positions, and the exact path agrees. */
START_TEST(grouping_quantize)
{
    for (uint32_t grouping = 0; grouping <= 1; grouping++) {
        for (uint32_t bi = 0; bi < 4; bi++) {
            uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits), G = 16;
            kvq_kivi_shape sh = grouping == KVQ_GROUP_CHANNEL
                                    ? mkshape(bits, G, grouping, KVQ_META_F32, 3 * G, 5)
                                    : mkshape(bits, G, grouping, KVQ_META_F32, 5, 3 * G);
            uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
            float *x = xmalloc(n * sizeof(float));
            kbuf b;
            for (uint64_t g = 0; g < ng; g++) {
                float s = ldexpf(1.0f + (float)(g % 3), -(int)(g % 4));
                float z = (float)((int)g - 7) * 0.25f + 0.125f; /* never 0 */
                for (uint32_t i = 0; i < G; i++) {
                    uint32_t c = i == g % G ? 0u
                               : i == (g + 1u) % G ? cmax
                               : (i * 5u + (uint32_t)g * 3u) % (cmax + 1u);
                    x[kvq_kivi_elem_index(&sh, g, i)] = z + (float)c * s; /* exact */
                }
            }
            kb_init(&b, &sh);
            run_ok(&b, x, &kvq_policy_default, "grouping");
            for (uint64_t g = 0; g < ng; g++) {
                float s = ldexpf(1.0f + (float)(g % 3), -(int)(g % 4));
                float z = (float)((int)g - 7) * 0.25f + 0.125f;
                REQ(kvq_f32_same(b.fs[g], s));
                REQ(kvq_f32_same(b.fz[g], z));
                for (uint32_t i = 0; i < G; i++) {
                    uint32_t c = i == g % G ? 0u
                               : i == (g + 1u) % G ? cmax
                               : (i * 5u + (uint32_t)g * 3u) % (cmax + 1u);
                    REQ_EQ(kb_fcode(&b, g, i), c);
                }
            }
            for (uint64_t e = 0; e < n; e++) REQ(kvq_f32_same(b.fy[e], x[e]));
            kb_free(&b);
            free(x);
        }
    }
}
END_TEST

/* ========================================================================= */
/* f16_meta                                                                  */
/* ========================================================================= */

/* SPEC: [POL-F16-01] [POL-FMT-01] [TEST-CMP-01]
 * All 65536 binary16 encodings: kvq_f16_from_bits gives the value MPFR builds
 * from the fields (NaN for NaN encodings, +-Inf), kvq_f16_bits gives the
 * encoding back, the value is on the binary16 grid by kvq_exact_round_float,
 * and a midpoint between two neighbours is rejected by kvq_f16_bits. */
START_TEST(f16_bits_round_trip)
{
    mpfr_t m;
    mpfr_init2(m, 32);
    for (uint32_t h = 0; h < 65536u; h++) {
        uint32_t sign = h >> 15, e = (h >> 10) & 0x1Fu, f = h & 0x3FFu;
        float v = kvq_f16_from_bits((uint16_t)h), want;
        int ok = -1, ov = -1;
        uint16_t back;
        if (e == 0x1Fu) {
            if (f) {
                REQ(isnan(v));
                REQ_EQ(signbit(v) != 0, sign);
                back = kvq_f16_bits(v, &ok);
                REQ_EQ(back, (sign << 15) | 0x7E00u);
            } else {
                REQ(isinf(v));
                REQ_EQ(signbit(v) != 0, sign);
                back = kvq_f16_bits(v, &ok);
                REQ_EQ(back, h);
            }
            REQ_EQ(ok, 1);
            continue;
        }
        mpfr_set_ui_2exp(m, e ? f + 1024u : f, (e ? (long)e : 1L) - 25, MPFR_RNDN); /* exact */
        if (sign) mpfr_neg(m, m, MPFR_RNDN);
        want = mpfr_get_flt(m, MPFR_RNDN);
        REQ_MSG(kvq_f32_same(v, want), "h=%04x: %a vs %a", h, (double)v, (double)want);
        back = kvq_f16_bits(v, &ok);
        REQ_EQ(ok, 1);
        REQ_EQ(back, h);
        REQ(kvq_f32_same(kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov), v) && !ov);
        if (!sign && h < 0x7BFFu) {
            float nx = kvq_f16_from_bits((uint16_t)(h + 1u));
            float mid = (v + nx) * 0.5f; /* exact: 12 significant bits */
            REQ(nx > v);
            (void)kvq_f16_bits(mid, &ok);
            REQ_EQ(ok, 0);
            (void)kvq_f16_bits(-mid, &ok);
            REQ_EQ(ok, 0);
        }
    }
    {
        int ok;
        (void)kvq_f16_bits(65520.0f, &ok);
        REQ_EQ(ok, 0);
        (void)kvq_f16_bits(0x1p-25f, &ok);
        REQ_EQ(ok, 0);
        (void)kvq_f16_bits(1.0f + 0x1p-11f, &ok);
        REQ_EQ(ok, 0);
    }
    mpfr_clear(m);
}
END_TEST

/* Compare kvq_round_f16 with the exact path on one binary32 value. */
static void check_round_f16(float v)
{
    int ovf, ovx;
    float fr = kvq_round_f16(v, &ovf);
    float xr = kvq_exact_round_float(v, &kvq_xfmt_binary16, &ovx);
    REQ_MSG(ovf == ovx, "v=%a (%08x): overflow fast %d exact %d", (double)v, bits32(v),
                  ovf, ovx);
    if (ovx)
        REQ_MSG(kvq_f32_same(fr, copysignf(F16_MAX, v)) && fabsf(xr) >= 65536.0f,
                      "v=%a: saturated %a", (double)v, (double)fr);
    else
        REQ_MSG(kvq_f32_same(fr, xr), "v=%a (%08x): fast %a (%08x) exact %a (%08x)",
                      (double)v, bits32(v), (double)fr, bits32(fr), (double)xr, bits32(xr));
}

/* SPEC: [POL-F16-01] [POL-F16-02] [KIVI-M-02] [TR-GOAL-F16-RN]
 * kvq_round_f16 (the pinned RN16) against the exact path on every 1021st
 * binary32 encoding (all signs, binades and low bits), and exhaustively around
 * every binary16 midpoint (the midpoint and +-1, +-2 ulp32 of it), the overflow
 * threshold 65520 and the subnormal grid. */
START_TEST(f16_round_vs_exact)
{
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 1021u) {
        float v = f32((uint32_t)b);
        if (!isfinite(v)) continue;
        check_round_f16(v);
    }
    for (uint32_t h = 0; h < 0x7C00u; h++) {
        float v = kvq_f16_from_bits((uint16_t)h);
        float nx = h == 0x7BFFu ? 65536.0f : kvq_f16_from_bits((uint16_t)(h + 1u));
        float mid = (v + nx) * 0.5f; /* exact */
        for (int d = -2; d <= 2; d++) {
            uint32_t mb = bits32(mid) + (uint32_t)d;
            check_round_f16(f32(mb));
            check_round_f16(f32(mb | 0x80000000u));
        }
        check_round_f16(v);
        check_round_f16(-v);
    }
}
END_TEST

/* SPEC: [KIVI-M-01] [KIVI-M-02] [KIVI-M-03] [KIVI-Q-02] [POL-F16-01]
 * The binary16 scale is pinned as RN16(RN32(r / cmax)).  With cmax = 2^n - 1
 * the binary32 grid of r is at least 2^(n-1) ulps of r/cmax wide, so
 * RN32(r/cmax) can land on a binary16 midpoint only when r/cmax is that
 * midpoint exactly: the two roundings equal the single correctly rounded
 * RN16(r / cmax).  That single rounding, computed by the exact path's division
 * onto the binary16 grid, is the oracle here (independent of both paths'
 * two-step code), on ranges around every 16th binary16 midpoint times cmax
 * (+-3 ulps) and random ranges of every binade that binary16 scales reach. */
START_TEST(f16_scale_rounding)
{
    kvq_rng r = { g_seed ^ 0x72u };
    uint64_t n = 0;
    for (uint32_t bi = 0; bi < 4; bi++) {
        uint32_t bits = all_bits[bi], cmax = kvq_code_max(bits);
        kvq_kivi_shape sh = mkshape(bits, 8, KVQ_GROUP_TOKEN, KVQ_META_F16, 1, 8);
        kbuf b;
        kb_init(&b, &sh);
        for (uint32_t k = 0; k < 0x7C00u / 16u + 4000u; k++) {
            float rr;
            if (k < 0x7C00u / 16u) {
                uint32_t h = 16u * k + kvq_rng_below(&r, 16);
                float v = kvq_f16_from_bits((uint16_t)h);
                float nx = h == 0x7BFFu ? 65536.0f : kvq_f16_from_bits((uint16_t)(h + 1u));
                float mid = (v + nx) * 0.5f; /* exact */
                rr = f32(bits32(mid * (float)cmax) + (uint32_t)((int)kvq_rng_below(&r, 7) - 3));
            } else {
                rr = ldexpf(1.0f + fabsf(rng_unit(&r)), (int)kvq_rng_below(&r, 34) - 17) *
                     (float)cmax;
            }
            if (!(rr > 0.0f) || !isfinite(rr)) continue;
            {
                float x[8] = { 0.0f, rr, 0.0f, rr, 0.0f, 0.0f, rr, 0.0f };
                float one = xdiv(rr, (float)cmax, &kvq_xfmt_binary16);
                float want = one < 0x1p-14f ? 0.0f : one > F16_MAX ? F16_MAX : one;
                run_ok(&b, x, &kvq_policy_default, "f16 scale");
                REQ_MSG(kvq_f32_same(b.fs[0], want),
                              "bits %u r=%a: scale %a, RN16(r/cmax) %a", bits, (double)rr,
                              (double)b.fs[0], (double)one);
                REQ_EQ((b.ff & KVQ_FLAG_SATURATED) != 0, one > F16_MAX);
                n++;
            }
        }
        kb_free(&b);
    }
    REQ(n > 10000);
}
END_TEST

/* SPEC: [KIVI-M-01] [KIVI-M-02] [KIVI-M-03] [POL-F16-01] [KIVI-D-02]
 * Random groups under binary16 metadata: stored scale is 0 or a normal binary16
 * value, the offset a binary16 value (kvq_f16_bits accepts both), both as the
 * exact path stores them; and dequantize accepts what quantize stored. */
START_TEST(f16_meta_random)
{
    kvq_rng r = { g_seed ^ 0x71u };
    for (int it = 0; it < 2000; it++) {
        uint32_t bits = all_bits[it % 4];
        kvq_kivi_shape sh = mkshape(bits, 32, KVQ_GROUP_TOKEN, KVQ_META_F16, 1, 64);
        kvq_policy pol = mkpol((uint32_t)(it / 4) % 2, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP);
        float x[64];
        int ea = (int)kvq_rng_below(&r, 40) - 25;
        kbuf b;
        for (int i = 0; i < 64; i++) x[i] = rng_unit(&r) * ldexpf(1.0f, ea) + ldexpf(1.0f, ea - 2);
        kb_init(&b, &sh);
        run_ok(&b, x, &pol, "f16 meta");
        for (uint64_t g = 0; g < b.ng; g++) {
            int ok;
            (void)kvq_f16_bits(b.fs[g], &ok);
            REQ(ok);
            (void)kvq_f16_bits(b.fz[g], &ok);
            REQ(ok);
            REQ(kvq_f32_same(b.fs[g], 0.0f) || b.fs[g] >= 0x1p-14f);
        }
        REQ_EQ(b.fdst, KVQ_OK);
        kb_free(&b);
    }
}
END_TEST

/* ========================================================================= */
/* residual_window                                                           */
/* ========================================================================= */

/* SPEC: [KIVI-W-01] [KIVI-W-03]
 * Prefill counts: keys keep L mod R tokens pending (whole residuals quantized),
 * values keep min(L, R); quantized + pending = L. */
START_TEST(window_prefill_counts)
{
    static const uint32_t Gs[] = { 8, 32, 128 };
    for (uint32_t grouping = 0; grouping <= 1; grouping++) {
        for (size_t gi = 0; gi < 3; gi++) {
            for (uint32_t mult = 1; mult <= 4; mult++) {
                uint32_t G = Gs[gi], R = G * mult;
                for (uint32_t L = 0; L <= 3 * R + 5; L++) {
                    kvq_kivi_window w;
                    uint32_t want = grouping == KVQ_GROUP_CHANNEL ? L % R : (L < R ? L : R);
                    REQ_EQ(kvq_kivi_window_prefill(&w, grouping, G, R, L), KVQ_OK);
                    REQ_EQ(w.pending, want);
                    REQ_EQ(w.quantized, L - want);
                    REQ_EQ(w.grouping, grouping);
                    REQ_EQ(w.group, G);
                    REQ_EQ(w.residual, R);
                    REQ_EQ(kvq_kivi_residual_after_prefill(grouping, R, L), want);
                    if (grouping == KVQ_GROUP_CHANNEL) REQ_EQ(w.quantized % R, 0u);
                }
            }
        }
    }
    {
        /* Large prefill: no overflow in the counts. */
        kvq_kivi_window w;
        REQ_EQ(kvq_kivi_window_prefill(&w, KVQ_GROUP_CHANNEL, 128, 128, UINT32_MAX),
                         KVQ_OK);
        REQ_EQ(w.quantized + w.pending, UINT32_MAX);
    }
}
END_TEST

/* Append one quantized chunk's outputs to a store. */
typedef struct kstore {
    uint8_t *codes;
    float *scale, *zero;
    uint64_t cbytes, groups;
    uint32_t flags;
} kstore;

/*
 * SPEC: [KIVI-W-01] [KIVI-W-02] [KIVI-W-03] [KIVI-W-04] [KIVI-L-03]
 * Prefill then decode, for both groupings, every n, several G, R and prefill
 * lengths: the tokens the window hands out are consecutive and never handed out
 * twice (history never requantized), the counts keep their invariants after
 * every step, and quantizing chunk by chunk as the window says gives exactly
 * (codes, metadata, OR of the flags) what quantizing the same tokens in one call
 * gives -- and that agrees with the exact path.
 */
START_TEST(window_stream_equals_direct)
{
    kvq_rng r = { g_seed ^ 0x81u };
    static const uint32_t Gs[] = { 8, 16 };
    for (uint32_t grouping = 0; grouping <= 1; grouping++) {
        for (uint32_t bi = 0; bi < 4; bi++) {
            for (size_t gi = 0; gi < 2; gi++) {
                for (uint32_t mult = 1; mult <= 3; mult += 2) {
                    uint32_t G = Gs[gi], R = G * mult, bits = all_bits[bi];
                    uint32_t D = grouping == KVQ_GROUP_CHANNEL ? 3u : 2u * G;
                    uint32_t Ls[] = { 0, 1, G - 1, G, R - 1, R, R + 1, 2 * R + 3 };
                    for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++) {
                        uint32_t L = Ls[li], steps = 2 * R + 7, total = L + steps;
                        uint32_t meta = (uint32_t)li % 2;
                        kvq_policy pol = mkpol((uint32_t)li / 2 % 2, KVQ_OVERFLOW_SATURATE,
                                               KVQ_SUBNORMAL_KEEP);
                        float *x = xmalloc((size_t)total * D * sizeof(float));
                        kvq_kivi_shape full = mkshape(bits, G, grouping, meta, total, D);
                        uint64_t cap_groups = kvq_kivi_groups(&full) + 1;
                        kstore st;
                        kvq_kivi_window w;
                        uint32_t done = 0; /* tokens handed out so far */
                        st.codes = xmalloc(cap_groups * G);
                        st.scale = xmalloc(cap_groups * sizeof(float));
                        st.zero = xmalloc(cap_groups * sizeof(float));
                        st.cbytes = st.groups = 0;
                        st.flags = 0;
                        for (uint64_t e = 0; e < (uint64_t)total * D; e++)
                            x[e] = rng_unit(&r) * 4.0f;
                        REQ_EQ(kvq_kivi_window_prefill(&w, grouping, G, R, L), KVQ_OK);
                        for (uint32_t t = 0; t <= steps; t++) {
                            uint32_t first = 0, count = w.quantized; /* t = 0: the prefill */
                            uint32_t seen = L + t; /* tokens the window has seen */
                            if (t > 0) {
                                uint32_t before_q = w.quantized;
                                REQ_EQ(kvq_kivi_window_append(&w, &first, &count),
                                                 KVQ_OK);
                                REQ_EQ(first, before_q); /* never requantized */
                                REQ_EQ(w.quantized, before_q + count);
                            }
                            REQ_EQ(w.quantized + w.pending, seen);
                            if (grouping == KVQ_GROUP_CHANNEL) {
                                REQ(count == 0u || count == R || t == 0);
                                REQ(w.pending < R);
                                REQ_EQ(w.quantized % R, 0u);
                            } else {
                                REQ(count <= 1u || t == 0);
                                REQ_EQ(w.pending, seen < R ? seen : R);
                            }
                            REQ_EQ(first, done);
                            if (count > 0) {
                                kvq_kivi_shape sh = mkshape(bits, G, grouping, meta, count, D);
                                uint64_t ng = kvq_kivi_groups(&sh), cb = kvq_kivi_code_bytes(&sh);
                                uint32_t f = 0;
                                REQ_EQ(kvq_kivi_quantize(st.codes + st.cbytes,
                                                                   st.scale + st.groups,
                                                                   st.zero + st.groups, &f,
                                                                   x + (size_t)first * D, &sh,
                                                                   &pol),
                                                 KVQ_OK);
                                st.cbytes += cb;
                                st.groups += ng;
                                st.flags |= f;
                                done += count;
                            }
                        }
                        REQ_EQ(done, w.quantized);
                        if (done > 0) {
                            kvq_kivi_shape sh = mkshape(bits, G, grouping, meta, done, D);
                            kbuf b;
                            kb_init(&b, &sh);
                            run_ok(&b, x, &pol, "window direct");
                            REQ_EQ(b.ng, st.groups);
                            REQ_EQ(b.cb, st.cbytes);
                            REQ_MSG(memcmp(b.fc, st.codes, b.cb) == 0,
                                          "G %u R %u L %u bits %u grouping %u", G, R, L, bits,
                                          grouping);
                            REQ(memcmp(b.xo.codes, st.codes, b.cb) == 0);
                            for (uint64_t g = 0; g < b.ng; g++) {
                                REQ(kvq_f32_same(b.fs[g], st.scale[g]));
                                REQ(kvq_f32_same(b.fz[g], st.zero[g]));
                            }
                            REQ_EQ(b.ff, st.flags);
                            kb_free(&b);
                        }
                        free(st.codes);
                        free(st.scale);
                        free(st.zero);
                        free(x);
                    }
                }
            }
        }
    }
}
END_TEST

/* SPEC: [KIVI-W-05] [API-STATUS-01]
 * Window errors: null pointers and bad parameters are KVQ_E_PARAM, a token
 * count that would pass 2^32-1 is KVQ_E_SHAPE; the window is left as it was. */
START_TEST(window_errors)
{
    kvq_kivi_window w, before;
    uint32_t first = SENT32, count = SENT32;
    REQ_EQ(kvq_kivi_window_prefill(NULL, KVQ_GROUP_TOKEN, 8, 8, 4), KVQ_E_PARAM);
    memset(&w, SENT8, sizeof w);
    REQ_EQ(kvq_kivi_window_prefill(&w, 2, 8, 8, 4), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_window_prefill(&w, KVQ_GROUP_TOKEN, 0, 8, 4), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_window_prefill(&w, KVQ_GROUP_TOKEN, 8, 0, 4), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_window_prefill(&w, KVQ_GROUP_CHANNEL, 8, 12, 4), KVQ_E_PARAM);
    REQ(all_bytes(&w, sizeof w, SENT8));
    REQ_EQ(kvq_kivi_window_prefill(&w, KVQ_GROUP_CHANNEL, 8, 16, 20), KVQ_OK);
    REQ_EQ(kvq_kivi_window_append(NULL, &first, &count), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_window_append(&w, NULL, &count), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_window_append(&w, &first, NULL), KVQ_E_PARAM);
    w.quantized = UINT32_MAX - 1u;
    w.pending = 1u;
    before = w;
    REQ_EQ(kvq_kivi_window_append(&w, &first, &count), KVQ_E_SHAPE);
    REQ(memcmp(&w, &before, sizeof w) == 0);
    REQ_EQ(first, SENT32);
    REQ_EQ(count, SENT32);
}
END_TEST

/* ========================================================================= */
/* random_vs_exact                                                           */
/* ========================================================================= */

enum {
    D_UNIFORM,   /* uniform in a random binade, random offset */
    D_WIDE,      /* random encodings over a random (often huge) exponent spread */
    D_TINY,      /* subnormal and tiny normal values */
    D_GRID,      /* a coarse dyadic grid with half steps: ties everywhere */
    D_F16,       /* binary16-representable inputs */
    D_CONST,     /* constant groups (zero range) */
    D_OUTLIER,   /* small values plus one or two large outliers */
    D_ULP,       /* a few ulps apart: ranges at the bottom of a value's precision */
    D_COUNT
};

static const char *const dist_name[D_COUNT] = { "uniform", "wide", "tiny", "grid",
                                                "f16", "const", "outlier", "ulp" };

static void gen_group(kvq_rng *r, int dist, float *v, uint32_t G, uint32_t bits)
{
    uint32_t cmax = kvq_code_max(bits);
    switch (dist) {
    case D_UNIFORM: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 81) - 40);
        float off = rng_unit(r) * a * (float)kvq_rng_below(r, 4);
        for (uint32_t i = 0; i < G; i++) v[i] = off + rng_unit(r) * a;
        break;
    }
    case D_WIDE: {
        static const uint32_t spreads[] = { 0, 1, 2, 4, 8, 30, 254 };
        uint32_t c = 1u + kvq_rng_below(r, 254), sp = spreads[kvq_rng_below(r, 7)];
        for (uint32_t i = 0; i < G; i++) {
            int32_t e = (int32_t)c + (int32_t)kvq_rng_below(r, 2 * sp + 1) - (int32_t)sp;
            if (e < 0) e = 0;
            if (e > 254) e = 254;
            v[i] = f32((uint32_t)(kvq_rng_next(r) & 0x807FFFFFu) | (uint32_t)e << 23);
        }
        if (kvq_rng_below(r, 16) == 0) v[kvq_rng_below(r, G)] = F32_MAX;
        if (kvq_rng_below(r, 16) == 0) v[kvq_rng_below(r, G)] = -F32_MAX;
        break;
    }
    case D_TINY:
        for (uint32_t i = 0; i < G; i++) {
            uint32_t e = kvq_rng_below(r, 12);
            v[i] = kvq_rng_below(r, 8) == 0 ? (kvq_rng_below(r, 2) ? -0.0f : 0.0f)
                                        : f32((uint32_t)(kvq_rng_next(r) & 0x807FFFFFu) | e << 23);
        }
        break;
    case D_GRID: {
        /* s0 = m 2^e, z0 = j 2^(e-1), values z0 + k s0/2, k in [0, 2 cmax] */
        uint32_t m = 2u * kvq_rng_below(r, 32) + 1u;
        int e = (int)kvq_rng_below(r, 81) - 40;
        int32_t j = (int32_t)kvq_rng_below(r, 1u << 19) - (1 << 18);
        float u = ldexpf(1.0f, e - 1);
        uint32_t p0 = kvq_rng_below(r, G), p1 = (p0 + 1u + kvq_rng_below(r, G - 1u)) % G;
        for (uint32_t i = 0; i < G; i++) {
            uint32_t k = i == p0 ? 0u : i == p1 ? 2u * cmax : kvq_rng_below(r, 2u * cmax + 1u);
            v[i] = (float)(j + (int32_t)(k * m)) * u; /* exact: < 2^24 grid units */
        }
        break;
    }
    case D_F16: {
        uint32_t c = kvq_rng_below(r, 31), sp = kvq_rng_below(r, 2) ? 1u : 31u;
        for (uint32_t i = 0; i < G; i++) {
            int32_t e = (int32_t)c + (int32_t)kvq_rng_below(r, 2 * sp + 1) - (int32_t)sp;
            if (e < 0) e = 0;
            if (e > 30) e = 30;
            v[i] = kvq_f16_from_bits((uint16_t)((kvq_rng_next(r) & 0x83FFu) | (uint32_t)e << 10));
        }
        break;
    }
    case D_CONST: {
        float c;
        switch (kvq_rng_below(r, 4)) {
        case 0: c = kvq_rng_below(r, 2) ? -0.0f : 0.0f; break;
        case 1: c = rng_unit(r) * ldexpf(1.0f, (int)kvq_rng_below(r, 60) - 30); break;
        case 2: c = f32((uint32_t)(kvq_rng_next(r) & 0x807FFFFFu) | kvq_rng_below(r, 255) << 23); break;
        default: c = kvq_f16_from_bits((uint16_t)(kvq_rng_next(r) & 0xFBFFu)); break;
        }
        for (uint32_t i = 0; i < G; i++) v[i] = c;
        if (is_zero(c)) v[kvq_rng_below(r, G)] = -c;
        break;
    }
    case D_OUTLIER: {
        int ea = (int)kvq_rng_below(r, 41) - 20;
        uint32_t no = 1u + kvq_rng_below(r, 2);
        for (uint32_t i = 0; i < G; i++) v[i] = rng_unit(r) * ldexpf(1.0f, ea);
        for (uint32_t k = 0; k < no; k++)
            v[kvq_rng_below(r, G)] = rng_unit(r) * ldexpf(1.0f, ea + 5 + (int)kvq_rng_below(r, 60));
        break;
    }
    default: { /* D_ULP */
        uint32_t e = 1u + kvq_rng_below(r, 250);
        uint32_t b0 = (uint32_t)(kvq_rng_next(r) & 0x807FFFFFu) | e << 23;
        uint32_t span = 1u + kvq_rng_below(r, 2u * cmax + 3u);
        for (uint32_t i = 0; i < G; i++) v[i] = f32(b0 + kvq_rng_below(r, span + 1u));
        break;
    }
    }
}

static void gen_case(kvq_rng *r, int dist, kvq_kivi_shape *sh, kvq_policy *pol, float **x)
{
    static const uint32_t groups[16] = { 8, 8, 8, 16, 16, 16, 24, 24, 32, 32, 32, 40, 64, 64,
                                         128, 256 };
    uint32_t G = groups[kvq_rng_below(r, 16)], grouping = kvq_rng_below(r, 2), ng;
    float v[256];
    *sh = mkshape(1u << kvq_rng_below(r, 4), G, grouping,
                  dist == D_F16 ? (kvq_rng_below(r, 4) != 0) : kvq_rng_below(r, 2), 0, 0);
    if (grouping == KVQ_GROUP_CHANNEL) {
        sh->tokens = G * (1u + kvq_rng_below(r, 2));
        sh->channels = 1u + kvq_rng_below(r, 3);
    } else {
        sh->tokens = 1u + kvq_rng_below(r, 3);
        sh->channels = G * (1u + kvq_rng_below(r, 2));
    }
    *pol = mkpol(kvq_rng_below(r, 2), kvq_rng_below(r, 4) == 0 ? KVQ_OVERFLOW_NAN : KVQ_OVERFLOW_SATURATE,
                 kvq_rng_below(r, dist == D_TINY ? 2 : 4) == 0 ? KVQ_SUBNORMAL_DAZ
                                                            : KVQ_SUBNORMAL_KEEP);
    ng = (uint32_t)kvq_kivi_groups(sh);
    *x = xmalloc(kvq_kivi_elems(sh) * sizeof(float));
    for (uint32_t g = 0; g < ng; g++) {
        gen_group(r, dist, v, G, sh->bits);
        for (uint32_t i = 0; i < G; i++) (*x)[kvq_kivi_elem_index(sh, g, i)] = v[i];
    }
}

/*
 * SPEC: [KIVI-Q-01] [KIVI-Q-02] [KIVI-Q-03] [KIVI-Q-04] [KIVI-Q-05] [KIVI-Q-06]
 * SPEC: [KIVI-Q-07] [KIVI-Q-08] [KIVI-M-01] [KIVI-M-02] [KIVI-M-03] [KIVI-D-01]
 * SPEC: [KIVI-B-01] [KIVI-B-02] [KIVI-B-03] [POL-TIE-01] [POL-TIE-02] [POL-OV-01]
 * SPEC: [POL-OV-02] [POL-SN-01] [POL-ZR-01] [LAY-PACK-01] [API-FLAGS-01] [API-FLAGS-02]
 * SPEC: [API-FLAGS-03] [POL-ARITH-01] [TEST-SEED-01] [TEST-CMP-01]
 * ref/fast against ref/exact on KVQ_RANDOM_CASES random groups (split over
 * the distributions; one loop iteration each), every shape parameter and
 * policy drawn at random: status, packed codes, stored metadata and flags bit
 * for bit (the fast flags are the exact flags without AMBIGUOUS); every fast
 * code the exact real code or its accepted neighbour; dequantization bitwise
 * the exact RN32(c s + z) and within the exact bound; on error nothing written.
 */
START_TEST(random_vs_exact)
{
    int dist = _i;
    uint64_t quota = (g_cases + D_COUNT - 1) / D_COUNT;
    uint64_t seed = g_seed ^ (0x1000003ull * (uint64_t)(dist + 1));
    kvq_rng r = { seed };
    uint64_t drawn = 0; /* groups drawn, error cases included */
    kstats st;
    char why[512];
    memset(&st, 0, sizeof st);
    while (drawn < quota) {
        kvq_kivi_shape sh;
        kvq_policy pol;
        float *x;
        kbuf b;
        gen_case(&r, dist, &sh, &pol, &x);
        kb_init(&b, &sh);
        if (kb_diff(&b, x, &pol, why, sizeof why, &st)) {
            dump_case(stderr, why, seed, dist_name[dist], st.cases - 1, &sh, &pol, x);
            ck_abort_msg("random_vs_exact seed=0x%016" PRIx64 " (KVQ_SEED=0x%016" PRIx64
                         ") dist=%s case=%" PRIu64 ": %s (case dumped to stderr)",
                         seed, g_seed, dist_name[dist], st.cases - 1, why);
        }
        drawn += b.ng;
        kb_free(&b);
        free(x);
    }
    printf("random_vs_exact[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 " groups=%" PRIu64
           " elems=%" PRIu64 " ambiguous=%" PRIu64 " clamped=%" PRIu64 " saturated=%" PRIu64
           " zero_scale=%" PRIu64 " subnormal=%" PRIu64 " errors=%" PRIu64 "\n",
           dist_name[dist], seed, st.cases, st.groups, st.elems, st.ambiguous, st.clamped,
           st.saturated, st.zero_scale, st.subnormal, st.errors);
    fflush(stdout);
    /* The distributions do what they are for (only meaningful on enough cases). */
    if (quota >= 2000) {
        if (dist == D_GRID) REQ_MSG(st.ambiguous > 0, "grid distribution made no ties");
        if (dist == D_CONST) REQ(st.zero_scale > 0);
        if (dist == D_TINY) REQ(st.subnormal > 0);
        if (dist == D_WIDE) REQ(st.saturated > 0 && st.errors > 0);
        if (dist == D_ULP) REQ(st.clamped > 0);
    }
}
END_TEST

/* ========================================================================= */
/* bad_input                                                                 */
/* ========================================================================= */

/* SPEC: [POL-NF-01] [KIVI-Q-07] [API-ERR-01] [API-FLAGS-02] [API-STATUS-01] [TR-GOAL-KIVI-TENSOR]
 * A NaN (quiet, signalling, negative) or an infinity at any position, under
 * every policy: both paths return KVQ_E_NONFINITE and write nothing (outputs
 * and flags keep their sentinel bytes). */
START_TEST(bad_nonfinite_anywhere)
{
    static const uint32_t bad[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu,
                                    0x7F800000u, 0xFF800000u };
    kvq_rng r = { g_seed ^ 0x91u };
    char why[512];
    for (uint32_t grouping = 0; grouping <= 1; grouping++) {
        for (uint32_t pi = 0; pi < 8; pi++) {
            kvq_policy pol = mkpol(pi & 1u, (pi >> 1) & 1u, (pi >> 2) & 1u);
            kvq_kivi_shape sh = grouping == KVQ_GROUP_CHANNEL
                                    ? mkshape(all_bits[pi % 4], 8, grouping, pi % 2, 16, 3)
                                    : mkshape(all_bits[pi % 4], 8, grouping, pi % 2, 3, 16);
            float x[48];
            kbuf b;
            kb_init(&b, &sh);
            for (uint32_t p = 0; p < 48; p++) {
                for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
                    for (int i = 0; i < 48; i++) x[i] = rng_unit(&r) * 3.0e38f;
                    x[p] = f32(bad[k]);
                    if (kb_diff(&b, x, &pol, why, sizeof why, NULL)) {
                        dump_case(stderr, why, g_seed, "nonfinite", p, &sh, &pol, x);
                        ck_abort_msg("nonfinite at %u: %s", p, why);
                    }
                    REQ_EQ(b.fst, KVQ_E_NONFINITE);
                    REQ(kb_fast_untouched(&b) && kb_exact_untouched(&b));
                }
            }
            kb_free(&b);
        }
    }
}
END_TEST

/* SPEC: [API-STATUS-01] [API-ERR-01] [API-ERR-02] [API-FLAGS-02] [KIVI-Q-07] [KIVI-D-03]
 * SPEC: [KIVI-L-02] [POL-NF-01]
 * Null pointers and bad parameters (bit width, group size, grouping, metadata
 * format, policy fields) are KVQ_E_PARAM; empty, ragged and oversized shapes
 * KVQ_E_SHAPE; parameters are checked before the shape, the shape before the
 * values; flags may be NULL.  Same answers from the exact path; nothing written. */
START_TEST(bad_params_and_shapes)
{
    kvq_kivi_shape good = mkshape(4, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 2, 16);
    float x[32], nanx[32];
    uint8_t codes[64];
    float scale[8], zero[8];
    uint32_t flags;
    kbuf b;
    for (int i = 0; i < 32; i++) x[i] = (float)i, nanx[i] = NAN;
    /* null pointers */
    memset(codes, SENT8, sizeof codes);
    REQ_EQ(kvq_kivi_quantize(NULL, scale, zero, &flags, x, &good, &kvq_policy_default),
                     KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_quantize(codes, NULL, zero, &flags, x, &good, &kvq_policy_default),
                     KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_quantize(codes, scale, NULL, &flags, x, &good, &kvq_policy_default),
                     KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_quantize(codes, scale, zero, &flags, NULL, &good,
                                       &kvq_policy_default), KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_quantize(codes, scale, zero, &flags, x, NULL, &kvq_policy_default),
                     KVQ_E_PARAM);
    REQ_EQ(kvq_kivi_quantize(codes, scale, zero, &flags, x, &good, NULL), KVQ_E_PARAM);
    REQ(all_bytes(codes, sizeof codes, SENT8));
    REQ_EQ(kvq_kivi_quantize(codes, scale, zero, NULL, x, &good, &kvq_policy_default),
                     KVQ_OK);
    {
        kvq_exact_kivi_out o;
        kb_init(&b, &good);
        o = b.xo;
        REQ_EQ(kvq_exact_kivi_quantize(NULL, x, &good, &kvq_policy_default),
                         KVQ_E_PARAM);
        REQ_EQ(kvq_exact_kivi_quantize(&o, NULL, &good, &kvq_policy_default),
                         KVQ_E_PARAM);
        REQ_EQ(kvq_exact_kivi_quantize(&o, x, NULL, &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_exact_kivi_quantize(&o, x, &good, NULL), KVQ_E_PARAM);
        for (int k = 0; k < 6; k++) {
            o = b.xo;
            if (k == 0) o.codes = NULL;
            if (k == 1) o.scale = NULL;
            if (k == 2) o.zero = NULL;
            if (k == 3) o.deq = NULL;
            if (k == 4) o.code_real = NULL;
            if (k == 5) o.code_alt = NULL;
            REQ_EQ(kvq_exact_kivi_quantize(&o, x, &good, &kvq_policy_default),
                             KVQ_E_PARAM);
        }
        kb_free(&b);
    }
    /* bad parameters and shapes, both paths, values NaN to show the order */
    {
        struct {
            kvq_kivi_shape sh;
            kvq_policy pol;
            kvq_status want;
        } cs[] = {
            { mkshape(0, 8, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(3, 8, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(5, 8, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(16, 8, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 0, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 4, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 12, 1, 0, 2, 24), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, KVQ_MAX_GROUP + 8u, 1, 0, 1, KVQ_MAX_GROUP + 8u), { 0, 0, 0 },
              KVQ_E_PARAM },
            { mkshape(4, 8, 2, 0, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 8, 1, 2, 2, 16), { 0, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 8, 1, 0, 2, 16), { 2, 0, 0 }, KVQ_E_PARAM },
            { mkshape(4, 8, 1, 0, 2, 16), { 0, 2, 0 }, KVQ_E_PARAM },
            { mkshape(4, 8, 1, 0, 2, 16), { 0, 0, 2 }, KVQ_E_PARAM },
            { mkshape(4, 8, 1, 0, 2, 16), { UINT32_MAX, 0, 0 }, KVQ_E_PARAM },
            { mkshape(3, 8, 1, 0, 0, 0), { 0, 0, 0 }, KVQ_E_PARAM }, /* params first */
            { mkshape(4, 8, 1, 0, 0, 16), { 0, 0, 0 }, KVQ_E_SHAPE },
            { mkshape(4, 8, 1, 0, 2, 0), { 0, 0, 0 }, KVQ_E_SHAPE },
            { mkshape(4, 8, 1, 0, 2, 12), { 0, 0, 0 }, KVQ_E_SHAPE }, /* ragged channels */
            { mkshape(4, 8, 0, 0, 12, 2), { 0, 0, 0 }, KVQ_E_SHAPE }, /* ragged tokens */
            { mkshape(4, 16, 0, 0, 8, 2), { 0, 0, 0 }, KVQ_E_SHAPE },
            { mkshape(4, 8, 0, 0, KVQ_MAX_DIM + 8u, 1), { 0, 0, 0 }, KVQ_E_SHAPE },
            { mkshape(4, 8, 1, 0, 1, KVQ_MAX_DIM + 8u), { 0, 0, 0 }, KVQ_E_SHAPE },
            { mkshape(4, 8, 0, 0, KVQ_MAX_DIM, 1u << 13), { 0, 0, 0 }, KVQ_E_SHAPE }, /* 2^37 */
            { mkshape(4, 8, 1, 0, 2, 16), { 0, 0, 0 }, KVQ_E_NONFINITE },
        };
        for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
            kvq_exact_kivi_out o;
            uint8_t xc[64], cr[32], ca[32];
            float xs[8], xz[8], xd[32];
            kvq_status st;
            memset(codes, SENT8, sizeof codes);
            memset(scale, SENT8, sizeof scale);
            memset(zero, SENT8, sizeof zero);
            memset(xc, SENT8, sizeof xc);
            flags = SENT32;
            st = kvq_kivi_quantize(codes, scale, zero, &flags, nanx, &cs[k].sh, &cs[k].pol);
            REQ_MSG(st == cs[k].want, "case %zu: fast %s, want %s", k, kvq_status_name(st),
                          kvq_status_name(cs[k].want));
            REQ(all_bytes(codes, sizeof codes, SENT8) && flags == SENT32);
            REQ(all_bytes(scale, sizeof scale, SENT8) && all_bytes(zero, sizeof zero, SENT8));
            o.codes = xc, o.scale = xs, o.zero = xz, o.deq = xd, o.code_real = cr;
            o.code_alt = ca, o.flags = SENT32, o.ambiguous = SENT64;
            st = kvq_exact_kivi_quantize(&o, nanx, &cs[k].sh, &cs[k].pol);
            REQ_MSG(st == cs[k].want, "case %zu: exact %s", k, kvq_status_name(st));
            REQ(all_bytes(xc, sizeof xc, SENT8) && o.flags == SENT32);
            /* dequantize checks parameters and shape the same way */
            memset(xd, SENT8, sizeof xd);
            memset(codes, 0, sizeof codes);
            for (int i = 0; i < 8; i++) scale[i] = 1.0f, zero[i] = 0.0f;
            st = kvq_kivi_dequantize(xd, &flags, codes, scale, zero, &cs[k].sh, &cs[k].pol);
            REQ_EQ(st, cs[k].want == KVQ_E_NONFINITE ? KVQ_OK : cs[k].want);
            if (cs[k].want != KVQ_E_NONFINITE)
                REQ(all_bytes(xd, sizeof xd, SENT8) && flags == SENT32);
        }
    }
    /* dequantize null pointers */
    {
        float y[32];
        memset(codes, 0, sizeof codes);
        for (int i = 0; i < 8; i++) scale[i] = 1.0f, zero[i] = 0.0f;
        REQ_EQ(kvq_kivi_dequantize(NULL, &flags, codes, scale, zero, &good,
                                             &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, &flags, NULL, scale, zero, &good,
                                             &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, &flags, codes, NULL, zero, &good,
                                             &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, &flags, codes, scale, NULL, &good,
                                             &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, &flags, codes, scale, zero, NULL,
                                             &kvq_policy_default), KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, &flags, codes, scale, zero, &good, NULL),
                         KVQ_E_PARAM);
        REQ_EQ(kvq_kivi_dequantize(y, NULL, codes, scale, zero, &good,
                                             &kvq_policy_default), KVQ_OK);
    }
}
END_TEST

/* SPEC: [KIVI-D-02] [POL-NF-01] [KIVI-M-01] [KIVI-M-02] [API-STATUS-01]
 * Dequantization with malformed metadata in any group fails and writes
 * nothing: NaN or infinite scale or offset (KVQ_E_NONFINITE), negative scale,
 * subnormal scale of the storage format, and under binary16 a scale or offset
 * that binary16 does not represent or that exceeds 65504 (KVQ_E_PARAM). */
START_TEST(bad_dequantize_metadata)
{
    struct {
        uint32_t meta;
        float s, z;
        kvq_status want;
    } cs[] = {
        { KVQ_META_F32, NAN, 0.0f, KVQ_E_NONFINITE },
        { KVQ_META_F32, 1.0f, NAN, KVQ_E_NONFINITE },
        { KVQ_META_F32, INFINITY, 0.0f, KVQ_E_NONFINITE },
        { KVQ_META_F32, 1.0f, -INFINITY, KVQ_E_NONFINITE },
        { KVQ_META_F32, -1.0f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F32, -0x1p-126f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F32, 0x1p-127f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F32, 0x1p-149f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F16, NAN, 0.0f, KVQ_E_NONFINITE },
        { KVQ_META_F16, 1.0f + 0x1p-20f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F16, 1.0f, 0.1f, KVQ_E_PARAM },
        { KVQ_META_F16, 0x1p-15f, 0.0f, KVQ_E_PARAM },  /* binary16 subnormal scale */
        { KVQ_META_F16, 0x1p-20f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F16, 1.0f, 65536.0f, KVQ_E_PARAM },
        { KVQ_META_F16, 65536.0f, 0.0f, KVQ_E_PARAM },
        { KVQ_META_F16, 1.0f, 0x1p-25f, KVQ_E_PARAM },
        { KVQ_META_F16, -2.0f, 0.0f, KVQ_E_PARAM },
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        for (uint32_t where = 0; where < 3; where++) {
            kvq_kivi_shape sh = mkshape(2, 8, KVQ_GROUP_CHANNEL, cs[k].meta, 8, 3);
            uint8_t codes[6];
            float s[3] = { 0.5f, 0.25f, 0.0f }, z[3] = { -1.0f, 2.0f, 0.0f }, y[24];
            uint32_t f = SENT32;
            kvq_status st;
            memset(codes, 0x1B, sizeof codes);
            s[where] = cs[k].s;
            z[where] = cs[k].z;
            memset(y, SENT8, sizeof y);
            st = kvq_kivi_dequantize(y, &f, codes, s, z, &sh, &kvq_policy_default);
            REQ_MSG(st == cs[k].want, "case %zu group %u: %s, want %s", k, where,
                          kvq_status_name(st), kvq_status_name(cs[k].want));
            REQ(all_bytes(y, sizeof y, SENT8) && f == SENT32);
        }
    }
}
END_TEST

/* SPEC: [API-STATUS-01] [API-STATUS-02] [API-FLAGS-01]
 * Frozen numbers and names of the statuses and flags; every status has a text
 * and a name, an out-of-range one a fixed text. */
START_TEST(bad_status_texts)
{
    static const char *const names[KVQ_STATUS_COUNT] = {
        "KVQ_OK", "KVQ_E_NONFINITE", "KVQ_E_SHAPE", "KVQ_E_PARAM", "KVQ_E_RANGE",
        "KVQ_E_NOMEM", "KVQ_E_IO", "KVQ_E_FORMAT", "KVQ_E_NODEVICE", "KVQ_E_DEVICE",
        "KVQ_E_SUBJECT",
    };
    static const int bad[] = { -1, KVQ_STATUS_COUNT, 12, 1000, INT_MAX, INT_MIN };
    REQ_EQ(KVQ_OK, 0);
    REQ_EQ(KVQ_E_NONFINITE, 1);
    REQ_EQ(KVQ_E_SHAPE, 2);
    REQ_EQ(KVQ_E_PARAM, 3);
    REQ_EQ(KVQ_E_RANGE, 4);
    REQ_EQ(KVQ_E_NOMEM, 5);
    REQ_EQ(KVQ_E_IO, 6);
    REQ_EQ(KVQ_E_FORMAT, 7);
    REQ_EQ(KVQ_E_NODEVICE, 8);
    REQ_EQ(KVQ_E_DEVICE, 9);
    REQ_EQ(KVQ_E_SUBJECT, 10);
    REQ_EQ(KVQ_STATUS_COUNT, 11);
    for (int s = 0; s < KVQ_STATUS_COUNT; s++) {
        const char *t = kvq_status_str(s);
        ck_assert_ptr_nonnull(t);
        REQ(strlen(t) > 0);
        ck_assert_str_ne(t, "unknown status");
        ck_assert_str_eq(kvq_status_name(s), names[s]);
        for (int u = 0; u < s; u++) ck_assert_str_ne(kvq_status_str(u), t);
    }
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_str_eq(kvq_status_str(bad[k]), "unknown status");
        ck_assert_str_eq(kvq_status_name(bad[k]), "KVQ_E_UNKNOWN");
    }
    REQ_EQ(KVQ_FLAG_ZERO_SCALE, 0x01u);
    REQ_EQ(KVQ_FLAG_CLAMPED, 0x02u);
    REQ_EQ(KVQ_FLAG_SATURATED, 0x04u);
    REQ_EQ(KVQ_FLAG_SUBNORMAL, 0x08u);
    REQ_EQ(KVQ_FLAG_AMBIGUOUS, 0x10u);
    REQ_EQ(KVQ_FLAG_ALL, 0x1Fu);
}
END_TEST

/* SPEC: [POL-01] [API-STATUS-01] [POL-TIE-01] [POL-OV-01] [POL-SN-01] [TR-POLICY-CHECK]
 * kvq_policy_check: the default and all eight defined combinations pass; NULL
 * and any undefined field value are KVQ_E_PARAM. */
START_TEST(bad_policy_check)
{
    static const uint32_t badv[] = { 2u, 3u, 0x80000000u, UINT32_MAX };
    REQ_EQ(kvq_policy_check(&kvq_policy_default), KVQ_OK);
    REQ_EQ(kvq_policy_default.ties, KVQ_TIES_EVEN);
    REQ_EQ(kvq_policy_default.overflow, KVQ_OVERFLOW_SATURATE);
    REQ_EQ(kvq_policy_default.subnormal, KVQ_SUBNORMAL_KEEP);
    REQ_EQ(kvq_policy_check(NULL), KVQ_E_PARAM);
    for (uint32_t p = 0; p < 8; p++) {
        kvq_policy pol = mkpol(p & 1u, (p >> 1) & 1u, (p >> 2) & 1u);
        REQ_EQ(kvq_policy_check(&pol), KVQ_OK);
        for (size_t k = 0; k < sizeof badv / sizeof badv[0]; k++) {
            kvq_policy q = pol;
            q.ties = badv[k];
            REQ_EQ(kvq_policy_check(&q), KVQ_E_PARAM);
            q = pol;
            q.overflow = badv[k];
            REQ_EQ(kvq_policy_check(&q), KVQ_E_PARAM);
            q = pol;
            q.subnormal = badv[k];
            REQ_EQ(kvq_policy_check(&q), KVQ_E_PARAM);
        }
    }
}
END_TEST

/* SPEC: [KIVI-B-03] [POL-OV-01] [TEST-CMP-01]
 * The bounded-level validator itself (no validator goes unexercised): a NaN
 * or an infinity is never within (err reported as +Inf); with c s + z = 1 the
 * bound is 2^-23 (1 + 2^-23) + 2^-149, so 1 + 2^-23 is within and 1 + 2^-22 and
 * 1 - 2^-22 are not; a saturated +-FLT_MAX is accepted only where the exact
 * value overflows on that side. */
START_TEST(bad_deq_within_rejects)
{
    static const uint32_t nf[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u,
                                   0xFF800000u };
    double bound, err;
    for (size_t k = 0; k < sizeof nf / sizeof nf[0]; k++) {
        err = 0.0;
        REQ(!kvq_exact_kivi_deq_within(f32(nf[k]), 1, 1.0f, 0.0f, &bound, &err));
        REQ(isinf(err) && err > 0.0);
    }
    REQ(kvq_exact_kivi_deq_within(1.0f, 1, 1.0f, 0.0f, &bound, &err) && !(err > 0.0));
    REQ(kvq_exact_kivi_deq_within(1.0f + 0x1p-23f, 1, 1.0f, 0.0f, &bound, &err));
    REQ(!kvq_exact_kivi_deq_within(1.0f + 0x1p-22f, 1, 1.0f, 0.0f, &bound, &err));
    REQ(!kvq_exact_kivi_deq_within(1.0f - 0x1p-22f, 1, 1.0f, 0.0f, &bound, &err));
    REQ(!kvq_exact_kivi_deq_within(-1.0f, 1, 1.0f, 0.0f, NULL, NULL));
    /* 255 * 2^120 + FLT_MAX overflows upward */
    REQ(kvq_exact_kivi_deq_within(F32_MAX, 255, 0x1p120f, F32_MAX, NULL, NULL));
    REQ(!kvq_exact_kivi_deq_within(-F32_MAX, 255, 0x1p120f, F32_MAX, NULL, NULL));
    /* 0 * 2^120 - FLT_MAX does not overflow: only the exact value is within */
    REQ(kvq_exact_kivi_deq_within(-F32_MAX, 0, 0x1p120f, -F32_MAX, NULL, NULL));
    REQ(!kvq_exact_kivi_deq_within(F32_MAX, 0, 0x1p120f, -F32_MAX, NULL, NULL));
    REQ(!kvq_exact_kivi_deq_within(F32_MAX, 1, 1.0f, 0.0f, NULL, NULL));
    {
        int ov;
        float v = kvq_exact_kivi_deq(255, 0x1p120f, F32_MAX, &ov);
        REQ(ov && kvq_f32_same(v, F32_MAX));
        v = kvq_exact_kivi_deq(0, 0x1p120f, -F32_MAX, &ov);
        REQ(!ov && kvq_f32_same(v, -F32_MAX));
    }
}
END_TEST

/* SPEC: [POL-OV-02] [KIVI-Q-07]
 * The one-group core under the NaN overflow policy: KVQ_E_RANGE with nothing
 * written (codes, scale, zero, flags). */
START_TEST(bad_group_core_range)
{
    float v[8] = { -3.0e38f, 3.0e38f, 0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f };
    kvq_policy pol = mkpol(KVQ_TIES_EVEN, KVQ_OVERFLOW_NAN, KVQ_SUBNORMAL_KEEP);
    for (uint32_t meta = 0; meta <= 1; meta++) {
        uint8_t grp[8];
        float s = f32(SENT32), z = f32(SENT32);
        uint32_t f = SENT32;
        memset(grp, SENT8, sizeof grp);
        REQ_EQ(kvq_kivi_quantize_group(grp, &s, &z, &f, v, 1, 8, 8, meta, &pol),
                         KVQ_E_RANGE);
        REQ(all_bytes(grp, sizeof grp, SENT8));
        REQ(bits32(s) == SENT32 && bits32(z) == SENT32 && f == SENT32);
    }
}
END_TEST

/* ========================================================================= */

static Suite *kivi_suite(void)
{
    Suite *s = suite_create("kivi");
    TCase *tc;

    tc = tcase_create("special_values");
    tcase_add_test(tc, special_zero_offset_is_plus_zero);
    tcase_add_test(tc, special_endpoints);
    tcase_add_test(tc, special_group_core_vs_exact);
    tcase_add_test(tc, special_dequantize_vs_exact);
    tcase_add_test(tc, special_no_global_state);
    suite_add_tcase(s, tc);

    tc = tcase_create("ties");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ties_generated_exact);
    tcase_add_test(tc, ties_outside_range_f16);
    tcase_add_test(tc, ties_round_int);
    suite_add_tcase(s, tc);

    tc = tcase_create("degenerate");
    tcase_add_test(tc, degenerate_constant);
    tcase_add_test(tc, degenerate_tiny_scale);
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow_saturation");
    tcase_add_test(tc, overflow_range);
    tcase_add_test(tc, overflow_f16_meta);
    tcase_add_test(tc, overflow_dequantize);
    suite_add_tcase(s, tc);

    tc = tcase_create("subnormal");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, subnormal_keep_daz);
    tcase_add_test(tc, subnormal_random_tiny);
    suite_add_tcase(s, tc);

    tc = tcase_create("packing");
    tcase_add_test(tc, packing_lsb_first);
    tcase_add_test(tc, packing_pack_unpack);
    tcase_add_test(tc, packing_sizes);
    suite_add_tcase(s, tc);

    tc = tcase_create("grouping");
    tcase_add_test(tc, grouping_maps);
    tcase_add_test(tc, grouping_quantize);
    suite_add_tcase(s, tc);

    tc = tcase_create("f16_meta");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, f16_bits_round_trip);
    tcase_add_test(tc, f16_round_vs_exact);
    tcase_add_test(tc, f16_scale_rounding);
    tcase_add_test(tc, f16_meta_random);
    suite_add_tcase(s, tc);

    tc = tcase_create("residual_window");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, window_prefill_counts);
    tcase_add_test(tc, window_stream_equals_direct);
    tcase_add_test(tc, window_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, random_vs_exact, 0, D_COUNT);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_nonfinite_anywhere);
    tcase_add_test(tc, bad_params_and_shapes);
    tcase_add_test(tc, bad_dequantize_metadata);
    tcase_add_test(tc, bad_status_texts);
    tcase_add_test(tc, bad_policy_check);
    tcase_add_test(tc, bad_group_core_range);
    tcase_add_test(tc, bad_deq_within_rejects);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return kvq_check_main("check_kivi", kivi_suite(), &g_seed, &g_cases);
}
