/*
 * check_cert.c -- Check suite of the CERT quantizers and annotations (spec/cert.md).
 *
 * Rules [TEST-CMP-01]: floats compared bitwise (kvq_f32_same) or, for upper
 * bounds, by an exact comparison against the exact path's sound value; no
 * hand-picked tolerance; ref/fast against ref/exact, never a path with itself.
 * Random cases: KVQ_RANDOM_CASES key block-channels and as many value groups
 * (default 100000 each) from a fixed seed, KVQ_SEED overrides; a failure prints
 * the seed and the case.
 *
 * Test cases: special_values, degenerate, ties, clamping, packing, f16_meta,
 * random_vs_exact, step (one decode step, the ladder included, against the
 * exact contract checker; KVQ_RANDOM_CASES / 50 random steps), ladder
 * (rung-forcing heads, promotion, the dense path, the Phase-1 radius),
 * bad_input.
 */
#include <check.h>

#include "check_main.h"
#include <errno.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact.h"

#define SEED_DEFAULT  0x6b76712d63657274ull /* "kvq-cert" */
#define CASES_DEFAULT 100000u

#define SAME(a, b)                                                                          \
    do {                                                                                    \
        float a_ = (a), b_ = (b);                                                           \
        if (!kvq_f32_same(a_, b_))                                                          \
            ck_abort_msg("%s:%d: %s = %a (0x%08x) is not %s = %a (0x%08x)", __FILE__,       \
                         __LINE__, #a, (double)a_, kvq_f32_bits(a_), #b, (double)b_,        \
                         kvq_f32_bits(b_));                                                 \
    } while (0)

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;
static const kvq_policy pol_even = { KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP };
static const kvq_policy pol_away = { KVQ_TIES_AWAY, KVQ_OVERFLOW_NAN, KVQ_SUBNORMAL_DAZ };

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(rng *r, uint32_t n)
{
    return (uint32_t)(rng_next(r) % n);
}

static float f32(uint32_t b)
{
    return kvq_f32_from_bits(b);
}

/* The binary16 number nearest a finite binary32 value (generator only;
 * checked binary16 by the exact path's predicate in every case through the
 * quantizers' own input checks). */
static float to_f16(float x)
{
    int ov;
    float y = kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov);
    return ov ? copysignf(0x1.ffcp+15f, x) : y;
}

/* A random binary16 value in [c - w, c + w] (clamped to the binary16 range). */
static float rand_f16(rng *r, float c, float w)
{
    double u = (double)(rng_next(r) >> 11) * 0x1p-53 * 2.0 - 1.0;
    double x = (double)c + u * (double)w;
    if (x > 65504.0) x = 65504.0;
    if (x < -65504.0) x = -65504.0;
    return to_f16((float)x);
}

/* ---- both paths on one key tensor --------------------------------------- */

typedef struct kcase {
    kvq_cert_shape sh;
    uint64_t cb, nm, nk;
    int8_t *fc;
    float *fs, *fz, *fk;
    uint32_t ff;
    kvq_exact_cert_keys_out xo;
} kcase;

static void kc_init(kcase *c, const kvq_cert_shape *sh)
{
    c->sh = *sh;
    c->cb = kvq_cert_key_code_bytes(sh);
    c->nm = kvq_cert_key_meta_count(sh);
    c->nk = (uint64_t)kvq_cert_quant_tokens(sh) * sh->dim;
    c->fc = xmalloc(c->cb);
    c->fs = xmalloc(c->nm * sizeof(float));
    c->fz = xmalloc(c->nm * sizeof(float));
    c->fk = xmalloc(c->nk * sizeof(float));
    c->xo.codes = xmalloc(c->cb);
    c->xo.code_real = xmalloc(c->cb);
    c->xo.code_alt = xmalloc(c->cb);
    c->xo.sigma = xmalloc(c->nm * sizeof(float));
    c->xo.z = xmalloc(c->nm * sizeof(float));
    c->xo.khat = xmalloc(c->nk * sizeof(float));
}

static void kc_free(kcase *c)
{
    free(c->fc), free(c->fs), free(c->fz), free(c->fk);
    free(c->xo.codes), free(c->xo.code_real), free(c->xo.code_alt), free(c->xo.sigma);
    free(c->xo.z), free(c->xo.khat);
}

typedef struct kstats {
    uint64_t elems, ambiguous, zero_scale, half_violations;
} kstats;

/* Run both paths on keys k; compare; check the bound on every element.
 * Returns 0 or writes why. */
static int kc_run(kcase *c, const float *k, const kvq_policy *pol, kstats *st, char *why,
                  size_t wn)
{
    const kvq_cert_shape *sh = &c->sh;
    uint32_t d = sh->dim, nq = kvq_cert_full_blocks(sh);
    kvq_status fs, xs, ds;
    fs = kvq_cert_quantize_keys(c->fc, c->fs, c->fz, &c->ff, k, sh, pol);
    xs = kvq_exact_cert_quantize_keys(&c->xo, k, sh, pol);
    if (fs != KVQ_OK || xs != KVQ_OK) {
        snprintf(why, wn, "status fast %d exact %d", fs, xs);
        return 1;
    }
    if ((c->xo.flags & ~KVQ_FLAG_AMBIGUOUS) != c->ff) {
        snprintf(why, wn, "flags fast 0x%x exact 0x%x", c->ff, c->xo.flags);
        return 1;
    }
    if (c->ff & KVQ_FLAG_CLAMPED) { /* unreachable with binary16 keys [CERT-K8-02] */
        snprintf(why, wn, "CLAMPED set");
        return 1;
    }
    ds = kvq_cert_dequantize_keys(c->fk, c->fc, c->fs, c->fz, sh);
    if (ds != KVQ_OK) {
        snprintf(why, wn, "dequantize status %d", ds);
        return 1;
    }
    for (uint64_t m = 0; m < c->nm; m++)
        if (!kvq_f32_same(c->fs[m], c->xo.sigma[m]) || !kvq_f32_same(c->fz[m], c->xo.z[m])) {
            snprintf(why, wn, "meta %" PRIu64 ": sigma %a/%a z %a/%a", m, (double)c->fs[m],
                     (double)c->xo.sigma[m], (double)c->fz[m], (double)c->xo.z[m]);
            return 1;
        }
    st->ambiguous += c->xo.ambiguous;
    for (uint32_t b = 0; b < nq; b++)
        for (uint32_t ch = 0; ch < d; ch++) {
            uint64_t m = kvq_cert_key_meta_index(sh, b, ch);
            float l = INFINITY, u = -INFINITY, s = c->xo.sigma[m], z = c->xo.z[m];
            if (s == 0.0f) st->zero_scale++;
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
                float x = k[kvq_cert_in_index(sh, kvq_cert_block_first(b) + i, ch)];
                if (x < l) l = x;
                if (x > u) u = x;
            }
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
                uint64_t at = kvq_cert_key_block_offset(sh, b) + kvq_cert_key_code_index(d, i, ch);
                uint64_t e = kvq_cert_in_index(sh, kvq_cert_block_first(b) + i, ch);
                float x = k[e];
                st->elems++;
                if (c->fc[at] != c->xo.codes[at]) {
                    snprintf(why, wn, "code b%u c%u i%u: fast %d exact %d (k=%a s=%a z=%a)", b,
                             ch, i, c->fc[at], c->xo.codes[at], (double)x, (double)s, (double)z);
                    return 1;
                }
                if (c->fc[at] != c->xo.code_real[at] && c->fc[at] != c->xo.code_alt[at]) {
                    snprintf(why, wn, "code %d neither real %d nor alt %d", c->fc[at],
                             c->xo.code_real[at], c->xo.code_alt[at]);
                    return 1;
                }
                if (!kvq_f32_same(c->fk[e], c->xo.khat[e])) {
                    snprintf(why, wn, "khat %a exact %a", (double)c->fk[e], (double)c->xo.khat[e]);
                    return 1;
                }
                /* SPEC: [CERT-K8-04] every element, exactly */
                if (!kvq_exact_cert_key_within(x, c->xo.khat[e], l, u, s, z, 1)) {
                    snprintf(why, wn, "key bound violated: k=%a khat=%a l=%a u=%a s=%a z=%a",
                             (double)x, (double)c->xo.khat[e], (double)l, (double)u, (double)s,
                             (double)z);
                    return 1;
                }
                if (!kvq_exact_cert_key_within(x, c->xo.khat[e], l, u, s, z, 0))
                    st->half_violations++;
            }
        }
    return 0;
}

/* One block of keys, channel 0 given, the rest zero. */
static void one_block(float *k, uint32_t d, const float *col)
{
    memset(k, 0, sizeof(float) * 16u * d);
    for (uint32_t i = 0; i < 16; i++) k[i * d] = col[i];
}

/* ========================================================================= */
/* special_values                                                            */
/* ========================================================================= */

/* SPEC: [CERT-K8-01] [CERT-K8-02] [CERT-K8-03] [CERT-K8-04]
 * The spec's example: l = 127.25, u = 128.5, k = 128.375.  The pinned values
 * are the ones the spec states, fast == exact bitwise, |k - k^| > sigma/2 (the
 * paper's bound fails) and <= sigma/2 + gamma (exact comparisons). */
START_TEST(special_spec_example)
{
    kvq_cert_shape sh = { 16, 16 };
    float col[16], k[256];
    kcase c;
    kstats st;
    char why[256];
    uint32_t at;
    for (int i = 0; i < 16; i++) col[i] = 127.25f;
    col[1] = 128.5f;
    col[2] = 128.375f;
    one_block(k, 16, col);
    memset(&st, 0, sizeof st);
    kc_init(&c, &sh);
    REQ_MSG(!kc_run(&c, k, &pol_even, &st, why, sizeof why), "%s", why);
    SAME(c.fs[0], 0x1.414142p-8f);
    SAME(c.fz[0], 0x1.ff8282p+6f);
    at = kvq_cert_key_code_index(16, 2, 0);
    REQ_EQ(c.fc[at], 102);
    SAME(c.fk[kvq_cert_in_index(&sh, 2, 0)], 0x1.00c142p+7f);
    /* sigma/2 alone is violated, sigma/2 + gamma holds [CERT-K8-04] */
    REQ(!kvq_exact_cert_key_within(128.375f, 0x1.00c142p+7f, 127.25f, 128.5f, c.fs[0], c.fz[0], 0));
    REQ(kvq_exact_cert_key_within(128.375f, 0x1.00c142p+7f, 127.25f, 128.5f, c.fs[0], c.fz[0], 1));
    REQ(st.half_violations >= 1);
    /* codes of the extremes: -128 and 127 */
    REQ_EQ(c.fc[kvq_cert_key_code_index(16, 0, 0)], -128);
    REQ_EQ(c.fc[kvq_cert_key_code_index(16, 1, 0)], 127);
    kc_free(&c);
}
END_TEST

/* SPEC: [CERT-K8-04] [CERT-DLT-01] gamma's value: exact RU32, and zero for a
 * zero-range channel. */
START_TEST(special_gamma_values)
{
    /* gamma = 2^-22 (1 + 1 + 0) + 2^-16 * 2^-8 + 2^-149: exact sum needs > 24
     * bits, so RU32 is one ulp above RN of the leading terms. */
    float g = kvq_exact_cert_gamma(-1.0f, 1.0f, 0x1p-8f, 0.0f);
    REQ(g > 0x1p-21f + 0x1p-24f);
    SAME(g, nextafterf(0x1p-21f + 0x1p-24f, INFINITY));
    SAME(kvq_exact_cert_gamma(3.0f, 3.0f, 0.0f, 3.0f), 0.0f);
}
END_TEST

/* SPEC: [TR-LIBM-FREXP] [CERT-ANN-01] The frexpf exponent the proofs assume (sq_cmp's
 * shift counts rest on it): for finite x != 0, 2^(e-1) <= |x| < 2^e, so |x| >= 2^k
 * exactly when e > k; and -148 <= e <= 128.  Every binary32 exponent field (subnormals
 * included), eight fractions each, both signs; 2^k and the comparisons in binary64
 * are exact. */
START_TEST(libm_frexpf_exponent)
{
    static const uint32_t fracs[] = { 0u, 1u, 2u, 0x2AAAAAu, 0x400000u, 0x555555u, 0x7FFFFEu, 0x7FFFFFu };
    uint32_t n = 0;
    for (uint32_t E = 0; E < 255u; E++)
        for (size_t f = 0; f < sizeof fracs / sizeof fracs[0]; f++)
            for (uint32_t sgn = 0; sgn < 2u; sgn++) {
                const uint32_t u = sgn << 31 | E << 23 | fracs[f];
                float x;
                int e;
                memcpy(&x, &u, sizeof x);
                if (x == 0.0f) continue;
                (void)frexpf(x, &e);
                REQ_MSG(-148 <= e && e <= 128, "frexpf(%a): exponent %d", (double)x, e);
                REQ_MSG(ldexp(1.0, e - 1) <= fabs((double)x) && fabs((double)x) < ldexp(1.0, e),
                        "frexpf(%a): exponent %d, not 2^(e-1) <= |x| < 2^e", (double)x, e);
                n++;
            }
    REQ_EQ(n, 255u * 8u * 2u - 2u);
}
END_TEST

/* SPEC: [CERT-DLT-04] [TR-GOAL-CERT-FLOAT] A stored key offset near FLT_MAX (finite,
 * so kvq_certi_key_meta_ok accepts it) steps gamma's upward sum to +inf: Delta_b and
 * Delta are +inf, still upper bounds, and the call succeeds. */
START_TEST(special_gamma_huge_offset)
{
    kvq_cert_shape sh = { 16, 16 };
    float k[256], s[16], z[16], q[16], db[1], dl;
    int8_t codes[256];
    uint32_t fl = 0;
    for (uint32_t i = 0; i < 16; i++)
        for (uint32_t c = 0; c < 16; c++)
            k[kvq_cert_in_index(&sh, i, c)] = (float)(int)((i + 3 * c) % 11) - 5.0f;
    for (uint32_t c = 0; c < 16; c++) q[c] = 1.0f;
    REQ_EQ(kvq_cert_quantize_keys(codes, s, z, &fl, k, &sh, &pol_even), KVQ_OK);
    REQ_EQ(kvq_cert_delta(db, &dl, q, 1.0f, k, s, z, &sh), KVQ_OK);
    REQ(isfinite(db[0]) && isfinite(dl));
    REQ(s[3] > 0.0f);
    z[3] = FLT_MAX;
    REQ_EQ(kvq_cert_delta(db, &dl, q, 1.0f, k, s, z, &sh), KVQ_OK);
    REQ(isinf(db[0]) && db[0] > 0.0f);
    REQ(isinf(dl) && dl > 0.0f);
}
END_TEST

/* ========================================================================= */
/* degenerate                                                                */
/* ========================================================================= */

/* SPEC: [CERT-K8-01] [CERT-K8-03] [CERT-K8-04] [POL-ZR-01] [POL-SZ-01]
 * Constant channels (u == l, including -0/+0 mixes): sigma = +0, z = l (+0 for
 * a zero l), codes 0, ZERO_SCALE set, k^ == k, gamma 0. */
START_TEST(degenerate_constant_channels)
{
    static const float vals[] = { 0.0f, -0.0f, 1.0f, -65504.0f, 65504.0f, 0x1p-24f, -0x1.8p-20f };
    kvq_cert_shape sh = { 16, 32 };
    float k[512];
    int8_t codes[512];
    float s[32], z[32], kh[512];
    uint32_t fl = 0;
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
        for (uint32_t i = 0; i < 16; i++)
            for (uint32_t c = 0; c < 32; c++)
                k[kvq_cert_in_index(&sh, i, c)] = (float)(int)(i * c % 7) - 3.0f;
        /* channel 5 constant vals[v] (the +-0 mix for 0) */
        for (uint32_t i = 0; i < 16; i++)
            k[kvq_cert_in_index(&sh, i, 5)] = (vals[v] == 0.0f && i % 2) ? -vals[v] : vals[v];
        REQ_EQ(kvq_cert_quantize_keys(codes, s, z, &fl, k, &sh, &pol_even), KVQ_OK);
        REQ(fl & KVQ_FLAG_ZERO_SCALE);
        SAME(s[5], 0.0f);
        SAME(z[5], vals[v] == 0.0f ? 0.0f : vals[v]);
        for (uint32_t i = 0; i < 16; i++) REQ_EQ(codes[kvq_cert_key_code_index(32, i, 5)], 0);
        REQ_EQ(kvq_cert_dequantize_keys(kh, codes, s, z, &sh), KVQ_OK);
        for (uint32_t i = 0; i < 16; i++) {
            float x = k[kvq_cert_in_index(&sh, i, 5)];
            REQ(kh[kvq_cert_in_index(&sh, i, 5)] == x); /* value equality: k^ = l = k */
            REQ(kvq_exact_cert_key_within(x, kh[kvq_cert_in_index(&sh, i, 5)], x, x, 0.0f,
                                          z[5], 1));
        }
        {
            kcase c;
            kstats st;
            char why[256];
            memset(&st, 0, sizeof st);
            kc_init(&c, &sh);
            REQ_MSG(!kc_run(&c, k, &pol_even, &st, why, sizeof why), "%s", why);
            REQ(st.zero_scale >= 1);
            kc_free(&c);
        }
    }
}
END_TEST

/* SPEC: [CERT-L-03] [CERT-ANN-01] [CERT-ANN-02] [CERT-DLT-01] n < 16: no full
 * block; the residual block has eta = 0, nu its largest norm, Delta_b = 0. */
START_TEST(degenerate_residual_only)
{
    kvq_cert_shape sh = { 5, 16 };
    float v[80], eta[1], nu[1], xeta[1], xnu[1], db[1], dl, q[16], k[80];
    uint8_t codes[1];
    float sc[1], zr[1];
    uint32_t fl = 7;
    for (int e = 0; e < 80; e++) v[e] = k[e] = (float)(e % 9) - 4.0f;
    for (int c = 0; c < 16; c++) q[c] = 1.0f;
    REQ_EQ(kvq_cert_blocks(&sh), 1);
    REQ_EQ(kvq_cert_full_blocks(&sh), 0);
    REQ_EQ(kvq_cert_quantize_values(codes, sc, zr, &fl, v, &sh, &pol_even), KVQ_OK);
    REQ_EQ(fl, 0);
    REQ_EQ(kvq_cert_annotate(eta, nu, v, codes, sc, zr, &sh), KVQ_OK);
    REQ_EQ(kvq_exact_cert_annotate(xeta, xnu, v, codes, sc, zr, &sh), KVQ_OK);
    SAME(eta[0], 0.0f);
    SAME(eta[0], xeta[0]);
    SAME(nu[0], xnu[0]);
    REQ(nu[0] > 0.0f);
    REQ_EQ(kvq_cert_delta(db, &dl, q, 0x1p-2f, k, sc, zr, &sh), KVQ_OK);
    SAME(db[0], 0.0f);
    SAME(dl, 0.0f);
}
END_TEST

/* ========================================================================= */
/* ties                                                                      */
/* ========================================================================= */

/* SPEC: [CERT-K8-02] [CERT-K8-06] [POL-TIE-01] [POL-TIE-02] [KIVI-B-02]
 * l = 0, u = 255: sigma = 1, z = 128, and k = j + 1/2 gives the exact quotient
 * j - 127.5: a tie, resolved by the policy; both paths agree, and each tie is an
 * ambiguous element whose alternative is the other neighbour. */
START_TEST(ties_policy)
{
    kvq_cert_shape sh = { 16, 16 };
    float col[16], k[256];
    for (int p = 0; p < 2; p++) {
        const kvq_policy *pol = p ? &pol_away : &pol_even;
        for (int base = 0; base < 241; base += 14) {
            kcase c;
            kstats st;
            char why[256];
            col[0] = 0.0f;
            col[1] = 255.0f;
            for (int i = 2; i < 16; i++) col[i] = (float)(base + i - 2) + 0.5f;
            one_block(k, 16, col);
            memset(&st, 0, sizeof st);
            kc_init(&c, &sh);
            REQ_MSG(!kc_run(&c, k, pol, &st, why, sizeof why), "%s", why);
            SAME(c.fs[0], 1.0f);
            SAME(c.fz[0], 128.0f);
            for (int i = 2; i < 16; i++) {
                uint32_t at = kvq_cert_key_code_index(16, (uint32_t)i, 0);
                double qv = (double)col[i] - 128.0;           /* exact: j - 127.5 */
                long want = p ? lround(qv) : (long)nearbyint(qv);
                REQ_EQ(c.fc[at], want);
                REQ(c.xo.code_alt[at] != c.xo.code_real[at]);
            }
            REQ(st.ambiguous >= 14);
            REQ(c.xo.flags & KVQ_FLAG_AMBIGUOUS);
            kc_free(&c);
        }
    }
}
END_TEST

/* ========================================================================= */
/* clamping                                                                  */
/* ========================================================================= */

/* SPEC: [CERT-K8-02] [CERT-K8-04] [CERT-K8-05]
 * z = RN32(l + 128 sigma) is rounded relative to |l|; the channels most likely
 * to push u past 127.5 or l below -128.5 are the narrowest ranges at the
 * largest magnitudes (1 to 3 binary16 ulps wide, |l| up to 65504).  With
 * binary16 keys the quotient stays within 2^-4 of its nominal value
 * (spec/cert.md [CERT-K8-02]), so l gets -128, u gets 127, CLAMPED is never set,
 * and the bound holds on every element (checked against the exact path). */
START_TEST(clamping_extremes)
{
    kvq_cert_shape sh = { 16, 64 };
    rng r = { g_seed ^ 0xC1A3u };
    float k[16 * 64];
    uint64_t rounds = g_cases / 400 + 20, checked = 0;
    for (uint64_t it = 0; it < rounds; it++) {
        kcase c;
        kstats st;
        char why[256];
        for (uint32_t ch = 0; ch < 64; ch++) {
            int e = (int)rng_below(&r, 30) - 14;               /* binade 2^e, e in -14..15 */
            float ulp = ldexpf(1.0f, e - 10);
            float l = to_f16(ldexpf(1.0f + (float)rng_below(&r, 1024) / 1024.0f, e));
            float u, s = rng_below(&r, 2) ? -1.0f : 1.0f;
            if (l >= 0x1.ffcp+15f - 3.0f * ulp) l = 0x1.ffcp+15f - 3.0f * ulp;
            u = to_f16(l + (float)(1 + rng_below(&r, 3)) * ulp); /* > l, binary16 */
            for (uint32_t i = 0; i < 16; i++) {
                float x = i == 0 ? l : i == 1 ? u : (rng_below(&r, 2) ? l : u);
                k[kvq_cert_in_index(&sh, i, ch)] = s * x;
            }
        }
        memset(&st, 0, sizeof st);
        kc_init(&c, &sh);
        if (kc_run(&c, k, &pol_even, &st, why, sizeof why))
            ck_abort_msg("clamping_extremes seed=0x%016" PRIx64 " round %" PRIu64 ": %s", g_seed,
                         it, why);
        for (uint32_t ch = 0; ch < 64; ch++) {
            float lo = k[kvq_cert_in_index(&sh, 0, ch)], hi = k[kvq_cert_in_index(&sh, 1, ch)];
            int8_t clo = c.fc[kvq_cert_key_code_index(64, 0, ch)];
            int8_t chi = c.fc[kvq_cert_key_code_index(64, 1, ch)];
            if (lo > hi) {
                int8_t t = clo;
                clo = chi;
                chi = t;
            }
            REQ_EQ(clo, -128);
            REQ_EQ(chi, 127);
            checked++;
        }
        kc_free(&c);
    }
    printf("clamping_extremes: %" PRIu64 " narrow channels, extremes -128/127, no CLAMPED\n",
           checked);
}
END_TEST

/* ========================================================================= */
/* packing                                                                   */
/* ========================================================================= */

/* SPEC: [CERT-L-04] [CERT-L-05] [LAY-PACK-01] [CERT-V4-01]
 * Sizes and maps of the layout; value codes 0..15 packed LSB first (element 2i
 * in the low nibble of byte i); key codes token-major. */
START_TEST(packing_layout)
{
    kvq_cert_shape sh = { 35, 128 }, s1 = { 16, 16 };
    float v[16 * 16], sc[16], zr[16], k[256];
    uint8_t codes[128];
    int8_t kc[256];
    float ks[16], kz[16];
    uint32_t fl;
    REQ_EQ(kvq_cert_quarter_bytes_per_token(128), 4 * 288);        /* [CERT-L-05] */
    REQ_EQ(kvq_cert_full_blocks(&sh), 2);
    REQ_EQ(kvq_cert_blocks(&sh), 3);
    REQ_EQ(kvq_cert_residual_tokens(&sh), 3);
    REQ_EQ(kvq_cert_block_tokens(&sh, 2), 3);
    REQ_EQ(kvq_cert_key_code_bytes(&sh), 2 * 16 * 128);
    REQ_EQ(kvq_cert_key_meta_count(&sh), 2 * 128);
    REQ_EQ(kvq_cert_value_groups(&sh), 32 * 8);
    REQ_EQ(kvq_cert_value_code_bytes(&sh), 32 * 64);
    REQ_EQ(kvq_cert_value_code_offset(&sh, 3, 2), (3 * 8 + 2) * 8);
    REQ_EQ(kvq_cert_key_code_index(128, 3, 7), 3 * 128 + 7);
    /* values: token t, channel c holds c + t (t < 16: codes c + t wrap below 16) */
    for (uint32_t t = 0; t < 16; t++)
        for (uint32_t c = 0; c < 16; c++) v[t * 16 + c] = (float)((c + t) % 16);
    REQ_EQ(kvq_cert_quantize_values(codes, sc, zr, &fl, v, &s1, &pol_even), KVQ_OK);
    for (uint32_t t = 0; t < 16; t++) {
        const uint8_t *g = codes + kvq_cert_value_code_offset(&s1, t, 0);
        SAME(sc[t], 1.0f);
        SAME(zr[t], 0.0f);
        for (uint32_t i = 0; i < 8; i++)
            REQ_EQ(g[i], ((2 * i + t) % 16) | (((2 * i + 1 + t) % 16) << 4));
    }
    /* keys: channel c of token i is i (c odd) or -i (c even): token-major codes */
    for (uint32_t i = 0; i < 16; i++)
        for (uint32_t c = 0; c < 16; c++) k[i * 16 + c] = (c % 2) ? (float)i : -(float)i;
    REQ_EQ(kvq_cert_quantize_keys(kc, ks, kz, &fl, k, &s1, &pol_even), KVQ_OK);
    for (uint32_t c = 0; c < 16; c++) {
        REQ_EQ(kc[kvq_cert_key_code_index(16, 0, c)], (c % 2) ? -128 : 127);
        REQ_EQ(kc[kvq_cert_key_code_index(16, 15, c)], (c % 2) ? 127 : -128);
    }
}
END_TEST

/* ========================================================================= */
/* f16_meta                                                                  */
/* ========================================================================= */

/* SPEC: [CERT-L-02] [CERT-V4-01] kvq_cert_is_f16 on the edges of binary16. */
START_TEST(f16_predicate)
{
    static const uint32_t yes[] = { 0x00000000u, 0x80000000u, 0x33800000u /* 2^-24 */,
                                    0x477FE000u /* 65504 */, 0xC77FE000u, 0x38800000u,
                                    0x3F802000u /* 1 + 2^-10 */ };
    static const uint32_t no[] = { 0x33000000u /* 2^-25 */, 0x477FF000u /* 65520 */,
                                   0x3F800800u /* 1 + 2^-11 */, 0x00000001u, 0x7F800000u,
                                   0x7FC00000u, 0x33C00000u /* 1.5 * 2^-24 */ };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) REQ(kvq_cert_is_f16(f32(yes[i])));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) REQ(!kvq_cert_is_f16(f32(no[i])));
    /* every binary16 encoding that is finite */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float x = kvq_f16_from_bits((uint16_t)h);
        REQ(kvq_cert_is_f16(x) == (isfinite(x) ? 1 : 0));
    }
}
END_TEST

/* ========================================================================= */
/* random_vs_exact                                                           */
/* ========================================================================= */

enum { D_WIDE, D_NARROW, D_GRID, D_MIXED, D_COUNT };
static const char *const dist_name[D_COUNT] = { "wide", "narrow", "grid", "mixed" };

static void gen_tensor(rng *r, int dist, float *x, const kvq_cert_shape *sh)
{
    uint32_t n = sh->tokens, d = sh->dim;
    for (uint32_t c = 0; c < d; c++) {
        float ctr, w;
        int e = (int)rng_below(r, 36) - 20;
        switch (dist) {
        case D_WIDE:
            ctr = 0.0f, w = ldexpf(1.0f, e < 15 ? e : 15);
            break;
        case D_NARROW:
            ctr = rand_f16(r, 0.0f, 60000.0f), w = fabsf(ctr) * ldexpf(1.0f, -(int)rng_below(r, 12)) + 0x1p-20f;
            break;
        case D_GRID:
            ctr = 0.0f, w = 0.0f;
            break;
        default:
            ctr = rand_f16(r, 0.0f, ldexpf(1.0f, e < 15 ? e : 15)), w = ldexpf(1.0f, e / 2);
            break;
        }
        for (uint32_t t = 0; t < n; t++) {
            float x0;
            if (dist == D_GRID) /* l = 0, u = 255 2^s: sigma = 2^s, z = 128 2^s, ties */
                x0 = t == 0 ? 0.0f : t == 1 ? ldexpf(255.0f, (int)(c % 4) - 4)
                                            : ldexpf((float)rng_below(r, 511), (int)(c % 4) - 5);
            else if (dist == D_MIXED && rng_below(r, 8) == 0)
                x0 = (c % 3 == 0) ? ctr : (rng_below(r, 2) ? 0.0f : -0.0f);
            else
                x0 = rand_f16(r, ctr, w);
            x[kvq_cert_in_index(sh, t, c)] = x0;
        }
        if (dist == D_MIXED && c % 5 == 0) /* a constant channel */
            for (uint32_t t = 0; t < n; t++) x[kvq_cert_in_index(sh, t, c)] = ctr;
    }
}

static void dump_case(const char *why, uint64_t seed, int dist, uint64_t idx,
                      const kvq_cert_shape *sh, const kvq_policy *pol, const float *x)
{
    uint64_t n = kvq_cert_in_index(sh, sh->tokens, 0);
    fprintf(stderr, "FAIL seed=0x%016" PRIx64 " dist=%s case=%" PRIu64 ": %s\n", seed,
            dist_name[dist], idx, why);
    fprintf(stderr, "cert-case n=%u d=%u ties=%u x=", sh->tokens, sh->dim, pol->ties);
    for (uint64_t e = 0; e < n; e++)
        fprintf(stderr, "%s%08" PRIx32, e ? "," : "", kvq_f32_bits(x[e]));
    fputc('\n', stderr);
}

/* Values: both paths, metadata/codes/dequantization/annotations bitwise. */
static int vc_run(const float *v, const kvq_cert_shape *sh, const kvq_policy *pol, char *why,
                  size_t wn, uint64_t *nzero)
{
    uint64_t ng = kvq_cert_value_groups(sh), cb = kvq_cert_value_code_bytes(sh);
    uint64_t nk = (uint64_t)kvq_cert_quant_tokens(sh) * sh->dim;
    uint32_t nb = kvq_cert_blocks(sh), ff = 0;
    uint8_t *fc = xmalloc(cb);
    float *fs = xmalloc(ng * 4), *fz = xmalloc(ng * 4), *fy = xmalloc(nk * 4);
    float *fe = xmalloc(nb * 4), *fn = xmalloc(nb * 4), *xe = xmalloc(nb * 4), *xn = xmalloc(nb * 4);
    kvq_exact_kivi_out xo;
    int bad = 0;
    kvq_status s1, s2, s3, s4, s5;
    xo.codes = xmalloc(cb);
    xo.scale = xmalloc(ng * 4);
    xo.zero = xmalloc(ng * 4);
    xo.deq = xmalloc(nk * 4);
    xo.code_real = xmalloc(nk);
    xo.code_alt = xmalloc(nk);
    s1 = kvq_cert_quantize_values(fc, fs, fz, &ff, v, sh, pol);
    s2 = kvq_exact_cert_quantize_values(&xo, v, sh, pol);
    s3 = kvq_cert_dequantize_values(fy, fc, fs, fz, sh);
    s4 = kvq_cert_annotate(fe, fn, v, fc, fs, fz, sh);
    s5 = kvq_exact_cert_annotate(xe, xn, v, xo.codes, xo.scale, xo.zero, sh);
    if (s1 || s2 || s3 || s4 || s5) {
        snprintf(why, wn, "values status %d %d %d %d %d", s1, s2, s3, s4, s5);
        bad = 1;
    } else if (ff != (xo.flags & ~KVQ_FLAG_AMBIGUOUS) || (ff & ~(uint32_t)(KVQ_FLAG_ZERO_SCALE | KVQ_FLAG_CLAMPED))) {
        snprintf(why, wn, "values flags fast 0x%x exact 0x%x", ff, xo.flags);
        bad = 1;
    } else if (memcmp(fc, xo.codes, cb) != 0) {
        snprintf(why, wn, "value codes differ");
        bad = 1;
    }
    for (uint64_t g = 0; !bad && g < ng; g++) {
        if (!kvq_f32_same(fs[g], xo.scale[g]) || !kvq_f32_same(fz[g], xo.zero[g]) ||
            !kvq_cert_is_f16(fs[g]) || !kvq_cert_is_f16(fz[g])) {
            snprintf(why, wn, "value meta %" PRIu64 ": %a/%a %a/%a", g, (double)fs[g],
                     (double)xo.scale[g], (double)fz[g], (double)xo.zero[g]);
            bad = 1;
        }
        if (fs[g] == 0.0f) (*nzero)++;
    }
    for (uint64_t e = 0; !bad && e < nk; e++)
        if (!kvq_f32_same(fy[e], xo.deq[e])) {
            snprintf(why, wn, "v^ %" PRIu64 ": %a exact %a", e, (double)fy[e], (double)xo.deq[e]);
            bad = 1;
        }
    for (uint32_t b = 0; !bad && b < nb; b++)
        if (!kvq_f32_same(fe[b], xe[b]) || !kvq_f32_same(fn[b], xn[b])) {
            snprintf(why, wn, "block %u: eta %a exact %a, nu %a exact %a", b, (double)fe[b],
                     (double)xe[b], (double)fn[b], (double)xn[b]);
            bad = 1;
        }
    free(fc), free(fs), free(fz), free(fy), free(fe), free(fn), free(xe), free(xn);
    free(xo.codes), free(xo.scale), free(xo.zero), free(xo.deq), free(xo.code_real);
    free(xo.code_alt);
    return bad;
}

/* Delta: fast >= exact, both finite here; Delta = max. */
static int dc_run(rng *r, const float *k, const kcase *c, char *why, size_t wn)
{
    const kvq_cert_shape *sh = &c->sh;
    uint32_t nb = kvq_cert_blocks(sh), d = sh->dim;
    float q[512], fb[64], xb[64], fd, xd;
    float scale = ldexpf(1.0f + (float)rng_below(r, 1u << 23) * 0x1p-23f, -(int)rng_below(r, 8));
    kvq_status s1, s2;
    for (uint32_t i = 0; i < d; i++) q[i] = rng_below(r, 16) == 0 ? 0.0f : rand_f16(r, 0.0f, 8.0f);
    s1 = kvq_cert_delta(fb, &fd, q, scale, k, c->fs, c->fz, sh);
    s2 = kvq_exact_cert_delta(xb, &xd, q, scale, k, c->xo.sigma, c->xo.z, sh);
    if (s1 || s2) {
        snprintf(why, wn, "delta status %d %d", s1, s2);
        return 1;
    }
    for (uint32_t b = 0; b < nb; b++)
        if (!(fb[b] >= xb[b]) || !isfinite(fb[b]) || (b == kvq_cert_full_blocks(sh) && fb[b] != 0.0f)) {
            snprintf(why, wn, "Delta_%u fast %a below exact %a", b, (double)fb[b], (double)xb[b]);
            return 1;
        }
    if (!(fd >= xd)) {
        snprintf(why, wn, "Delta fast %a below exact %a", (double)fd, (double)xd);
        return 1;
    }
    return 0;
}

/*
 * SPEC: [CERT-K8-01] [CERT-K8-02] [CERT-K8-03] [CERT-K8-04] [CERT-K8-05] [CERT-K8-06]
 * SPEC: [CERT-V4-01] [CERT-V4-02] [CERT-ANN-01] [CERT-ANN-02] [CERT-ANN-03]
 * SPEC: [CERT-DLT-01] [CERT-DLT-02] [CERT-DLT-04] [CERT-L-03] [CERT-L-04]
 * SPEC: [POL-TIE-01] [POL-TIE-02] [TEST-SEED-01] [TEST-CMP-01]
 * ref/fast against ref/exact: key codes, sigma, z, k^ and flags bit for bit,
 * every code the real code or its alternative, the per-element bound
 * sigma/2 + gamma on every element (exact, zero violations); value codes,
 * binary16 metadata, v^, eta and nu bit for bit; Delta_b fast >= exact.
 */
START_TEST(random_vs_exact)
{
    int dist = _i;
    uint64_t quota = (g_cases + D_COUNT - 1) / D_COUNT;
    uint64_t seed = g_seed ^ (0x2000003ull * (uint64_t)(dist + 1));
    rng r = { seed };
    uint64_t kgroups = 0, vgroups = 0, cases = 0, vzero = 0;
    kstats st;
    char why[512];
    memset(&st, 0, sizeof st);
    while (kgroups < quota || vgroups < quota) {
        kvq_cert_shape sh;
        const kvq_policy *pol = rng_below(&r, 2) ? &pol_away : &pol_even;
        float *x;
        kcase c;
        sh.dim = 16u * (1u + rng_below(&r, 4));
        sh.tokens = 16u * (1u + rng_below(&r, 2)) + (rng_below(&r, 2) ? rng_below(&r, 16) : 0u);
        x = xmalloc(kvq_cert_in_index(&sh, sh.tokens, 0) * sizeof(float));
        gen_tensor(&r, dist, x, &sh);
        kc_init(&c, &sh);
        if (kc_run(&c, x, pol, &st, why, sizeof why) || dc_run(&r, x, &c, why, sizeof why) ||
            vc_run(x, &sh, pol, why, sizeof why, &vzero)) {
            dump_case(why, seed, dist, cases, &sh, pol, x);
            ck_abort_msg("random_vs_exact seed=0x%016" PRIx64 " (KVQ_SEED=0x%016" PRIx64
                         ") dist=%s case=%" PRIu64 ": %s",
                         seed, g_seed, dist_name[dist], cases, why);
        }
        kgroups += kvq_cert_key_meta_count(&sh);
        vgroups += kvq_cert_value_groups(&sh);
        cases++;
        kc_free(&c);
        free(x);
    }
    printf("random_vs_exact[%s]: seed=0x%016" PRIx64 " cases=%" PRIu64 " key_channels=%" PRIu64
           " value_groups=%" PRIu64 " key_elems=%" PRIu64 " bound_violations=0"
           " sigma/2_violations=%" PRIu64 " ambiguous=%" PRIu64 " zero_scale=%" PRIu64
           "/%" PRIu64 "\n",
           dist_name[dist], seed, cases, kgroups, vgroups, st.elems, st.half_violations,
           st.ambiguous, st.zero_scale, vzero);
    fflush(stdout);
    if (quota >= 2000 && dist == D_GRID) REQ_MSG(st.ambiguous > 0, "grid made no ties");
    if (quota >= 2000 && dist == D_MIXED) REQ(st.zero_scale > 0);
}
END_TEST

/* ========================================================================= */
/* bad_input                                                                 */
/* ========================================================================= */

#define SENT 0xA5u

/* Run the tensor calls of both paths selected by mask (bit i: call i) on
 * (k = v = x, q, scale) and require status want from each, with every output
 * left at its sentinel. */
#define ALL_CALLS 0xFFu
#define QUANT_CALLS 0x0Fu
static void expect_calls(kvq_status want, unsigned mask, const float *x, const float *q,
                         float scale, const kvq_cert_shape *sh, const kvq_policy *pol, int line)
{
    enum { CAP = 64 * 1024 };
    static uint8_t b1[CAP], b2[CAP], b3[CAP], b4[CAP], b5[CAP], b6[CAP];
    static float s16[1024], z16[1024];
    kvq_exact_cert_keys_out ko;
    kvq_exact_kivi_out vo;
    uint32_t fl = 0xA5A5A5A5u;
    kvq_status st[8];
    for (int i = 0; i < 1024; i++) s16[i] = 1.0f, z16[i] = 0.0f;
    memset(b1, SENT, CAP), memset(b2, SENT, CAP), memset(b3, SENT, CAP);
    memset(b4, SENT, CAP), memset(b5, SENT, CAP), memset(b6, SENT, CAP);
    ko.codes = (int8_t *)b1, ko.sigma = (float *)b2, ko.z = (float *)b3, ko.khat = (float *)b4;
    ko.code_real = (int8_t *)b5, ko.code_alt = (int8_t *)b6;
    vo.codes = b1, vo.scale = (float *)b2, vo.zero = (float *)b3, vo.deq = (float *)b4;
    vo.code_real = b5, vo.code_alt = b6;
    for (int i = 0; i < 8; i++) {
        if (!(mask & (1u << i))) continue;
        switch (i) {
        case 0: st[i] = kvq_cert_quantize_keys((int8_t *)b1, (float *)b2, (float *)b3, &fl, x, sh, pol); break;
        case 1: st[i] = kvq_exact_cert_quantize_keys(&ko, x, sh, pol); break;
        case 2: st[i] = kvq_cert_quantize_values(b1, (float *)b2, (float *)b3, &fl, x, sh, pol); break;
        case 3: st[i] = kvq_exact_cert_quantize_values(&vo, x, sh, pol); break;
        case 4: st[i] = kvq_cert_annotate((float *)b1, (float *)b2, x, b3, s16, z16, sh); break;
        case 5: st[i] = kvq_exact_cert_annotate((float *)b1, (float *)b2, x, b3, s16, z16, sh); break;
        case 6: st[i] = kvq_cert_delta((float *)b1, (float *)b2, q, scale, x, s16, s16, sh); break;
        default: st[i] = kvq_exact_cert_delta((float *)b1, (float *)b2, q, scale, x, s16, s16, sh); break;
        }
        REQ_MSG(st[i] == want, "line %d: call %d status %d, want %d", line, i, st[i], want);
    }
    REQ_MSG(fl == 0xA5A5A5A5u, "line %d: flags written", line);
    REQ_MSG(all_bytes(b1, CAP, SENT) && all_bytes(b2, CAP, SENT) && all_bytes(b3, CAP, SENT) &&
                all_bytes(b4, CAP, SENT) && all_bytes(b5, CAP, SENT) && all_bytes(b6, CAP, SENT),
            "line %d: an output was written on error", line);
}
#define expect_all(want, x, q, scale, sh, pol, line) \
    expect_calls(want, ALL_CALLS, x, q, scale, sh, pol, line)

/* SPEC: [CERT-L-01] [CERT-L-02] [CERT-K8-05] [POL-NF-01] [API-ERR-01]
 * NaN/Inf anywhere (residual tokens and q included) -> KVQ_E_NONFINITE; a
 * finite non-binary16 value -> KVQ_E_PARAM, unless a NaN is also present;
 * bad shapes -> KVQ_E_SHAPE; NULLs, a bad policy, a bad scale -> KVQ_E_PARAM.
 * Every call of both paths; nothing written. */
START_TEST(bad_inputs)
{
    static const uint32_t nonfin[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F800000u,
                                       0xFF800000u };
    static const uint32_t nonf16[] = { 0x33000000u, 0x477FF000u, 0x3F800800u, 0x00000001u,
                                       0x80400000u, 0x5F000000u };
    kvq_cert_shape sh = { 35, 32 };
    float x[35 * 32], q[32];
    rng r = { g_seed ^ 0xBADu };
    kvq_policy badpol = { 2, 0, 0 };
    for (int e = 0; e < 35 * 32; e++) x[e] = (float)(e % 13) - 6.0f;
    for (int c = 0; c < 32; c++) q[c] = 1.0f;
    for (int it = 0; it < 40; it++) {
        uint32_t at = rng_below(&r, 35 * 32), at2 = rng_below(&r, 35 * 32);
        if (at2 == at) at2 = (at + 1) % (35 * 32);
        float keep = x[at], keep2 = x[at2];
        x[at] = f32(nonfin[it % 5]);
        expect_all(KVQ_E_NONFINITE, x, q, 1.0f, &sh, &pol_even, __LINE__);
        x[at2] = f32(nonf16[it % 6]);
        expect_all(KVQ_E_NONFINITE, x, q, 1.0f, &sh, &pol_even, __LINE__);
        x[at] = keep;
        expect_all(KVQ_E_PARAM, x, q, 1.0f, &sh, &pol_away, __LINE__);
        x[at2] = keep2;
    }
    /* the residual block's tokens are inputs too */
    x[34 * 32 + 5] = NAN;
    expect_all(KVQ_E_NONFINITE, x, q, 1.0f, &sh, &pol_even, __LINE__);
    x[34 * 32 + 5] = 0x1p-30f;
    expect_all(KVQ_E_PARAM, x, q, 1.0f, &sh, &pol_even, __LINE__);
    x[34 * 32 + 5] = 1.0f;
    /* q (Delta only) */
    q[3] = INFINITY;
    REQ_EQ(kvq_cert_delta((float *)x, (float *)x, q, 1.0f, x, x, x, &sh), KVQ_E_NONFINITE);
    q[3] = 1.0f;
    /* shapes */
    {
        static const kvq_cert_shape bad[] = { { 0, 16 }, { 16, 0 }, { 16, 8 }, { 16, 24 },
                                              { 16, 528 }, { (1u << 24) + 1u, 16 } };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            expect_all(KVQ_E_SHAPE, x, q, 1.0f, &bad[i], &pol_even, __LINE__);
    }
    /* parameters */
    expect_calls(KVQ_E_PARAM, QUANT_CALLS, x, q, 1.0f, &sh, &badpol, __LINE__);
    expect_calls(KVQ_E_PARAM, QUANT_CALLS, x, q, 1.0f, &sh, NULL, __LINE__);
    expect_all(KVQ_E_PARAM, NULL, q, 1.0f, &sh, &pol_even, __LINE__);
    {
        float fb[3], fd;
        static const float badscale[] = { 0.0f, -1.0f, 0x1p-127f, INFINITY, NAN };
        for (size_t i = 0; i < 5; i++) {
            memset(fb, SENT, sizeof fb);
            REQ_EQ(kvq_cert_delta(fb, &fd, q, badscale[i], x, x, x, &sh), KVQ_E_PARAM);
            REQ_EQ(kvq_exact_cert_delta(fb, &fd, q, badscale[i], x, x, x, &sh), KVQ_E_PARAM);
            REQ(all_bytes(fb, sizeof fb, SENT));
        }
    }
}
END_TEST

/* SPEC: [CERT-K8-03] [CERT-V4-02] [CERT-ANN-01] [API-ERR-01]
 * Stored metadata checks of the dequantizers and annotate, fast and exact. */
START_TEST(bad_metadata)
{
    kvq_cert_shape sh = { 16, 16 };
    int8_t kc[256];
    uint8_t vc[128];
    float s[16], z[16], y[256], v[256], eta[1], nu[1];
    memset(kc, 127, sizeof kc);
    memset(vc, 0xFF, sizeof vc);
    for (int e = 0; e < 256; e++) v[e] = 1.0f;
    for (int i = 0; i < 16; i++) s[i] = 1.0f, z[i] = 0.0f;
    memset(y, SENT, sizeof y);
    s[3] = NAN;
    REQ_EQ(kvq_cert_dequantize_keys(y, kc, s, z, &sh), KVQ_E_NONFINITE);
    REQ_EQ(kvq_cert_dequantize_values(y, vc, s, z, &sh), KVQ_E_NONFINITE);
    REQ_EQ(kvq_cert_annotate(eta, nu, v, vc, s, z, &sh), KVQ_E_NONFINITE);
    REQ_EQ(kvq_exact_cert_annotate(eta, nu, v, vc, s, z, &sh), KVQ_E_NONFINITE);
    s[3] = -1.0f;
    REQ_EQ(kvq_cert_dequantize_keys(y, kc, s, z, &sh), KVQ_E_PARAM);
    REQ_EQ(kvq_cert_dequantize_values(y, vc, s, z, &sh), KVQ_E_PARAM);
    s[3] = 0x1p-127f;                    /* subnormal sigma */
    REQ_EQ(kvq_cert_dequantize_keys(y, kc, s, z, &sh), KVQ_E_PARAM);
    s[3] = 0x1p-20f;                     /* binary16 subnormal scale: not a stored form */
    REQ_EQ(kvq_cert_dequantize_values(y, vc, s, z, &sh), KVQ_E_PARAM);
    REQ_EQ(kvq_exact_cert_annotate(eta, nu, v, vc, s, z, &sh), KVQ_E_PARAM);
    s[3] = 1.0f + 0x1p-12f;              /* not binary16 */
    REQ_EQ(kvq_cert_dequantize_values(y, vc, s, z, &sh), KVQ_E_PARAM);
    REQ_EQ(kvq_cert_annotate(eta, nu, v, vc, s, z, &sh), KVQ_E_PARAM);
    s[3] = 0x1p125f;                     /* 127 * 2^125 overflows binary32 */
    REQ_EQ(kvq_cert_dequantize_keys(y, kc, s, z, &sh), KVQ_E_RANGE);
    REQ(all_bytes(y, sizeof y, SENT));
    REQ_EQ(kvq_cert_dequantize_keys(NULL, kc, s, z, &sh), KVQ_E_PARAM);
    REQ_EQ(kvq_cert_dequantize_values(y, vc, s, z, NULL), KVQ_E_PARAM);
}
END_TEST

/* ========================================================================= */
/* step: one decode step, fast pipeline against the exact contract checker   */
/* ========================================================================= */

enum { H_SINK, H_CONC, H_UNIF, H_NEEDLE, H_CONST, H_COUNT };
static const char *const head_name[H_COUNT] = { "sinks", "concentrated", "near-uniform",
                                                "needles", "constant" };

/* A step's data and the fast path's quantized cache. */
typedef struct scase {
    kvq_cert_shape sh;
    float *q, *k, *v, *sigma, *z, *vs, *vz, *eta, *nu, *out, *lm;
    int8_t *kc;
    uint8_t *vc, *sel;
    kvq_cert_cache cache;
    float scale;
} scase;

static void sc_free(scase *c)
{
    free(c->q), free(c->k), free(c->v), free(c->sigma), free(c->z), free(c->vs), free(c->vz);
    free(c->eta), free(c->nu), free(c->out), free(c->lm), free(c->kc), free(c->vc), free(c->sel);
}

/* Quantize (fast path) and fill the cache. */
static void sc_quantize(scase *c)
{
    const kvq_cert_shape *sh = &c->sh;
    uint32_t nb = kvq_cert_blocks(sh), f;
    c->kc = xmalloc(kvq_cert_key_code_bytes(sh));
    c->sigma = xmalloc(kvq_cert_key_meta_count(sh) * 4);
    c->z = xmalloc(kvq_cert_key_meta_count(sh) * 4);
    c->vc = xmalloc(kvq_cert_value_code_bytes(sh));
    c->vs = xmalloc(kvq_cert_value_groups(sh) * 4);
    c->vz = xmalloc(kvq_cert_value_groups(sh) * 4);
    c->eta = xmalloc(nb * 4), c->nu = xmalloc(nb * 4), c->lm = xmalloc(nb * 4);
    c->sel = xmalloc(nb), c->out = xmalloc(sh->dim * 4);
    REQ_EQ(kvq_cert_quantize_keys(c->kc, c->sigma, c->z, &f, c->k, sh, &pol_even), KVQ_OK);
    REQ_EQ(kvq_cert_quantize_values(c->vc, c->vs, c->vz, &f, c->v, sh, &pol_even), KVQ_OK);
    REQ_EQ(kvq_cert_annotate(c->eta, c->nu, c->v, c->vc, c->vs, c->vz, sh), KVQ_OK);
    c->cache.k = c->k, c->cache.v = c->v, c->cache.kcodes = c->kc;
    c->cache.sigma = c->sigma, c->cache.z = c->z, c->cache.vcodes = c->vc;
    c->cache.vscale = c->vs, c->cache.vzero = c->vz, c->cache.eta = c->eta, c->cache.nu = c->nu;
}

/* Random head of kind h: d in {16, 64, 128}, n in [1, nmax]. */
static void sc_gen(scase *c, rng *r, int h, uint32_t nmax)
{
    static const uint32_t dims[3] = { 16, 64, 128 };
    uint32_t d = dims[rng_below(r, 3)], n = 1 + rng_below(r, nmax);
    float kw = h == H_CONC ? 4.0f : h == H_UNIF ? 0.05f : 1.0f;
    uint32_t needle = rng_below(r, n);
    memset(c, 0, sizeof *c);
    c->sh.tokens = n, c->sh.dim = d;
    c->scale = 1.0f / sqrtf((float)d);           /* RN32(1/sqrt(d)) [CERT-L-01] */
    c->q = xmalloc(d * 4), c->k = xmalloc((size_t)n * d * 4), c->v = xmalloc((size_t)n * d * 4);
    for (uint32_t i = 0; i < d; i++) c->q[i] = rand_f16(r, 0.0f, 2.0f);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            float x = rand_f16(r, 0.0f, kw), y = rand_f16(r, 0.0f, 1.0f);
            if ((h == H_SINK && t < 2) || (h == H_NEEDLE && t == needle))
                x = to_f16(c->q[i] * 3.0f + x); /* aligned with q: a large score */
            if (h == H_CONST && i % 4 == 0) x = to_f16(0.25f * (float)(i % 7)), y = 0.5f;
            if (h == H_CONST && i % 32 < 16 && t % 3 == 0) y = -0.75f;
            c->k[(size_t)t * d + i] = x;
            c->v[(size_t)t * d + i] = y;
        }
    sc_quantize(c);
}

typedef struct sstats {
    uint64_t steps, violations, unsound_fast, caught_half, half_trivial, undecided;
    uint64_t rungs[5], prom_blocks, checks_exact, radius_checked, ladder_exact, ladder_skip;
    double max_ratio, max_delta1;
} sstats;

static double t_up(double x) { return nextafter(x, INFINITY); }
static double t_dn(double x) { return nextafter(x, -INFINITY); }

/* Step parameters of random step i: the defaults, promotion by budget or with
 * vtol = 0, a guard, a small cap, a later start, eps_dense 0; each in both
 * variants. */
static kvq_cert_params sc_params(rng *r, uint64_t i)
{
    kvq_cert_params p = kvq_cert_default_params();
    /* both variants [CERT-VAR-01] under every parameter set */
    p.variant = (i / 5u) % 2u ? KVQ_CERT_VARIANT_SPARSE : KVQ_CERT_VARIANT_PAPER;
    switch (i % 5u) {
    case 1:
        p.vtol = 0.0f;                            /* every block with eta > 0 a candidate */
        p.promote_budget = rng_below(r, 3) == 0 ? KVQ_CERT_PROMOTE_THRESHOLD : rng_below(r, 3);
        break;
    case 2:
        p.eps_guard = 0.5f;
        p.r = 1u + rng_below(r, 2);
        break;
    case 3:
        p.kmin = 1u, p.kmax = 1u + rng_below(r, 3);
        p.eps_guard = 4.0f;
        break;
    case 4:
        p.start_rung = rng_below(r, 5);
        p.eps_dense = rng_below(r, 2) ? 0.0f : (float)INFINITY;
        break;
    default:
        break;
    }
    return p;
}

/* The exact ranking [CERT-RANK-01] and boundary [CERT-BND-01] checks and the
 * value check [CERT-LAD-02] of a selection, decided from exact enclosures:
 * lo/hi of L_b (kvq_exact_cert_logmass), RU32 of the exact Delta_b, the
 * verdict's RU32 alpha^_T, Delta and E_val, and the exact eta, nu.  Returns
 * the bits of the checks that provably hold (a bit 0 means "not shown"). */
static unsigned exact_checks(const scase *c, const kvq_cert_params *prm, const uint8_t *sel,
                             const uint8_t *prom, const double *lo, const double *hi,
                             const float *dx, const float *eta, const float *nu,
                             const kvq_exact_cert_verdict *v)
{
    uint32_t nq = kvq_cert_full_blocks(&c->sh), nb = kvq_cert_blocks(&c->sh), nl = 0;
    double *lam = xmalloc(sizeof(double) * (nq + 1u)), u = -INFINITY, lr = -INFINITY;
    unsigned ok = 0;
    int tempty = 1, within = 1, paper = prm->variant == KVQ_CERT_VARIANT_PAPER;
    for (uint32_t b = 0; b < nb; b++) {
        if (!sel[b]) {
            tempty = 0;
            if (t_up(hi[b] + dx[b]) > u) u = t_up(hi[b] + dx[b]);
        } else if (b < nq) {
            lam[nl++] = t_dn(lo[b] - dx[b]);
        }
        /* the value check's blocks: the attended ones [CERT-VAR-01] */
        if (b < nq && (sel[b] || paper) && !prom[b] &&
            !((double)eta[b] <= (double)prm->vtol * (double)nu[b]))
            within = 0;
    }
    if (tempty) {
        ok |= KVQ_CERT_CHECK_RANK | KVQ_CERT_CHECK_BOUNDARY;
    } else {
        mpfr_t a, dl, t, rhs;
        if (nl >= prm->r) {
            for (uint32_t j = 0; j < prm->r; j++) {
                uint32_t bi = 0;
                for (uint32_t i = 1; i < nl; i++)
                    if (lam[i] > lam[bi]) bi = i;
                lr = lam[bi], lam[bi] = -INFINITY;
            }
            if (lr > t_up(u + (double)prm->eps_guard)) ok |= KVQ_CERT_CHECK_RANK;
        }
        mpfr_inits2(KVQ_CERT_XPREC, a, dl, t, rhs, (mpfr_ptr)0);
        mpfr_set_flt(a, v->alpha_hat, MPFR_RNDN);
        mpfr_set_flt(dl, v->delta, MPFR_RNDN);
        kvq_exact_cert_tail(t, dl, a, MPFR_RNDU);               /* >= A */
        mpfr_set_flt(rhs, prm->eps_guard, MPFR_RNDN);
        mpfr_exp(rhs, rhs, MPFR_RNDD);
        mpfr_set_flt(a, prm->tau, MPFR_RNDN);
        mpfr_ui_sub(a, 1, a, MPFR_RNDN);                        /* exact */
        mpfr_mul(rhs, rhs, a, MPFR_RNDD);
        if (mpfr_cmp(t, rhs) <= 0) ok |= KVQ_CERT_CHECK_BOUNDARY;
        mpfr_clears(a, dl, t, rhs, (mpfr_ptr)0);
    }
    if (within) {
        ok |= KVQ_CERT_CHECK_VALUE;      /* E_val <= vtol sum rho nu term by term */
    } else {
        /* sparse: rho_b >= e^{lo_b - M} / sum_S e^{hi_b - M}; paper: the
         * Phase-2 masses over all blocks are within e^{2 Delta} of the
         * estimated ones [CERT-EV-03], rho'_b >= e^{lo_b - M - 2 Delta} /
         * sum_all e^{hi_b - M} */
        double m = -INFINITY, den = 0.0, rhs = 0.0, sh = paper ? t_up(2.0 * (double)v->delta) : 0.0;
        for (uint32_t b = 0; b < nb; b++)
            if ((sel[b] || paper) && hi[b] > m) m = hi[b];
        for (uint32_t b = 0; b < nb; b++)
            if (sel[b] || paper) den = t_up(den + t_up(t_up(exp(t_up(hi[b] - m)))));
        for (uint32_t b = 0; b < nb; b++)
            if (sel[b] || paper) {
                double rl = t_dn(t_dn(t_dn(exp(t_dn(t_dn(lo[b] - m) - sh)))) / den);
                rhs = t_dn(rhs + t_dn(rl * nu[b]));
            }
        if ((double)v->eval <= t_dn(rhs * prm->vtol)) ok |= KVQ_CERT_CHECK_VALUE;
    }
    free(lam);
    return ok;
}

/* Run the fast step with prm and judge it; 0 or why.  Judged, each by an
 * independent path: the contract and the claims by the exact checker (rungs
 * 0-2 with the step's selection and promotion; rungs 3-4 by the dense
 * checker kvq_exact_cert_check_dense); the Phase-1 radius against the exact
 * log-mass enclosures; promotion against the rule computed from the exact
 * eta, nu; each accepted check by its exact evaluation here (exact_checks)
 * and by the exact path's kvq_exact_cert_ladder (with the selector contract);
 * the record's structure. */
static int sc_check(scase *c, const kvq_cert_params *prm, sstats *st, int try_half,
                    kvq_cert_record *rec_out, uint8_t *prom_out, char *why, size_t wn)
{
    kvq_cert_record rec, half;
    kvq_exact_cert_verdict v;
    kvq_cert_decl decl, kdecl;
    uint32_t nb = kvq_cert_blocks(&c->sh), nq = kvq_cert_full_blocks(&c->sh), nsel = 0;
    uint32_t ks = 0, np = 0, ncand = 0, klo, kcap;
    uint8_t *prom = xmalloc(nb), *cand = xmalloc(nb);
    float delta1, *eta = xmalloc(nb * 4), *nu = xmalloc(nb * 4), *dx = xmalloc(nb * 4), dxm;
    double *lo = xmalloc(nb * 8), *hi = xmalloc(nb * 8);
    kvq_status s1, s2;
    int rc = 1, dense;
    s1 = kvq_cert_step(c->out, c->sel, prom, c->lm, &rec, &kdecl, &delta1, c->q, c->scale,
                       &c->cache, prm, &c->sh);
    if (s1 != KVQ_OK) {
        snprintf(why, wn, "step status %d", s1);
        goto out;
    }
    REQ_EQ(kvq_exact_cert_annotate(eta, nu, c->v, c->vc, c->vs, c->vz, &c->sh), KVQ_OK);
    REQ_EQ(kvq_exact_cert_delta(dx, &dxm, c->q, c->scale, c->k, c->sigma, c->z, &c->sh), KVQ_OK);
    REQ_EQ(kvq_exact_cert_logmass(lo, hi, c->q, c->scale, &c->cache, &c->sh), KVQ_OK);
    dense = rec.rung >= 3u;
    /* SPEC: [CERT-REC-01] [CERT-LAD-01] structure of the result */
    for (uint32_t b = 0; b < nb; b++) {
        if (c->sel[b] > 1u || prom[b] > 1u || (prom[b] && !c->sel[b]) || (prom[b] && b == nq) ||
            (b == nq && !c->sel[b])) {
            snprintf(why, wn, "flags of block %u: sel %u prom %u", b, c->sel[b], prom[b]);
            goto out;
        }
        ks += b < nq && c->sel[b];
        np += prom[b];
        /* the attended tokens [CERT-VAR-01] */
        nsel += c->sel[b] || prm->variant == KVQ_CERT_VARIANT_PAPER ? kvq_cert_block_tokens(&c->sh, b)
                                                                  : 0u;
        cand[b] = b < nq && c->sel[b] && (double)eta[b] > (double)prm->vtol * (double)nu[b];
        ncand += cand[b];
    }
    klo = prm->kmin < nq ? prm->kmin : nq;
    kcap = prm->kmax < nq ? prm->kmax : nq;
    if (rec.version != 1u || rec.rung > 4u || rec.rung < prm->start_rung || rec.k_sel != ks ||
        rec.n_prom != np || rec.n != c->sh.tokens || rec.d != c->sh.dim ||
        (rec.rung == 0u && (ks < klo || ks > kcap)) ||
        (rec.rung <= 2u && ks > (2u * kcap < nq ? 2u * kcap : nq)) ||           /* [CERT-SEL-02] */
        (rec.rung <= 2u && (rec.checks & 7u) != 7u) ||                          /* [CERT-LAD-02] */
        (dense && (ks != nq || np != 0u || rec.ekey != 0.0f || rec.eval != 0.0f ||
                   rec.checks != 0u)) ||                          /* [CERT-LAD-03] [CERT-LAD-04] */
        (dense && (rec.rung == 4u) != (prm->start_rung == 4u || rec.earith > prm->eps_dense))) {
        snprintf(why, wn, "record: rung %u k_sel %u/%u n_prom %u/%u checks 0x%x earith %a",
                 rec.rung, rec.k_sel, ks, rec.n_prom, np, rec.checks, (double)rec.earith);
        goto out;
    }
    /* SPEC: [CERT-PROM-01] [CERT-PROM-02] [CERT-PROM-03] promotion from the exact eta, nu */
    if (!dense) {
        int bad = 0;
        for (uint32_t b = 0; b < nq; b++) {
            if (rec.rung == 2u) bad |= prom[b] != c->sel[b];
            else if (prm->promote_budget == KVQ_CERT_PROMOTE_THRESHOLD) bad |= prom[b] != cand[b];
            else bad |= prom[b] && !cand[b];
        }
        if (rec.rung < 2u && prm->promote_budget != KVQ_CERT_PROMOTE_THRESHOLD &&
            np != (ncand < prm->promote_budget ? ncand : prm->promote_budget))
            bad = 1;
        if (bad) {
            snprintf(why, wn, "promotion at rung %u: %u promoted, %u candidates, budget %u",
                     rec.rung, np, ncand, prm->promote_budget);
            goto out;
        }
        st->prom_blocks += np;
    }
    /* SPEC: [CERT-LM-02] [CERT-CHK-03] |L~_b - L_b| <= delta1 for every block, L_b enclosed exactly */
    if (!(delta1 >= 0.0f)) {
        snprintf(why, wn, "delta1 %a", (double)delta1);
        goto out;
    }
    for (uint32_t b = 0; b < nb; b++)
        if (!(t_up((double)c->lm[b] - lo[b]) <= delta1 && t_up(hi[b] - (double)c->lm[b]) <= delta1)) {
            snprintf(why, wn, "block %u: L~ %a outside [%a, %a] +- delta1 %a", b, (double)c->lm[b],
                     lo[b], hi[b], (double)delta1);
            goto out;
        }
    st->radius_checked++;
    if (isfinite(delta1) && delta1 > st->max_delta1) st->max_delta1 = delta1;
    /* SPEC: [CERT-AR-02] the declaration is that of the pinned sequence over the attended tokens */
    decl = kvq_cert_pinned_decl(nsel);
    if (kdecl.acc_depth != decl.acc_depth || kdecl.rescales != decl.rescales ||
        !kvq_f32_same(kdecl.u_exp, decl.u_exp)) {
        snprintf(why, wn, "declaration D %u Nr %u for %u tokens", kdecl.acc_depth, kdecl.rescales,
                 nsel);
        goto out;
    }
    s2 = dense ? kvq_exact_cert_check_dense(&v, c->out, &rec, c->q, c->scale, &c->cache, &decl,
                                            &c->sh)
               : kvq_exact_cert_check(&v, c->out, &rec, c->sel, prom, c->q, c->scale, &c->cache,
                                      &decl, prm->variant, &c->sh);
    if (s2 != KVQ_OK) {
        snprintf(why, wn, "check status %d", s2);
        goto out;
    }
    st->steps++;
    st->rungs[rec.rung]++;
    if (v.holds_sound == -1 || v.holds == -1) st->undecided++;
    /* SPEC: [CERT-CON-01] with the sound bounds and with the claims; dense: [CERT-LAD-03] */
    if (v.holds != 1 || v.holds_sound != 1) {
        st->violations++;
        snprintf(why, wn, "contract at rung %u: error in [%a, %a], sound %a+%a+%a, claimed %a+%a+%a",
                 rec.rung, v.err_lo, v.err_hi, (double)v.ekey, (double)v.eval, (double)v.earith,
                 (double)rec.ekey, (double)rec.eval, (double)rec.earith);
        goto out;
    }
    /* SPEC: [CERT-CON-02] claims >= sound values; Delta [CERT-DLT-04] */
    if (v.unsound != 0 || !(rec.delta >= v.delta) || !kvq_f32_same(rec.vmax, v.vmax)) {
        st->unsound_fast++;
        snprintf(why, wn, "unsound claim 0x%x: ekey %a/%a eval %a/%a earith %a/%a delta %a/%a",
                 v.unsound, (double)rec.ekey, (double)v.ekey, (double)rec.eval, (double)v.eval,
                 (double)rec.earith, (double)v.earith, (double)rec.delta, (double)v.delta);
        goto out;
    }
    /* SPEC: [CERT-CHK-01] [CERT-CHK-02] [CERT-RANK-01] [CERT-BND-01] [CERT-LAD-02] every check
     * the step accepted holds exactly (this path promises more than the 2 delta1 tolerance) */
    if (!dense) {
        unsigned ex = exact_checks(c, prm, c->sel, prom, lo, hi, dx, eta, nu, &v);
        if ((ex & 7u) != 7u) {
            snprintf(why, wn, "rung %u accepted, exact checks 0x%x", rec.rung, ex);
            goto out;
        }
        st->checks_exact++;
        /* the exact path's own evaluator of the ladder: the checks pass
         * exactly, and the selection meets [CERT-SEL-02] (clamp, coverage
         * within e^{2 delta1} or cap); it needs a finite delta1 */
        if (isfinite(delta1)) {
            kvq_exact_cert_ladder_out lo2;
            REQ_EQ(kvq_exact_cert_ladder(&lo2, rec.rung, c->sel, prom, c->q, c->scale, &c->cache,
                                         prm, delta1, &c->sh), KVQ_OK);
            if (lo2.rank.pass != 1 || lo2.boundary.pass != 1 || lo2.value.pass != 1 ||
                lo2.selector_ok != 1 ||
                ((rec.checks & KVQ_CERT_CHECK_COVERAGE) && lo2.coverage.ok != 1)) {
                snprintf(why, wn, "kvq_exact_cert_ladder at rung %u: rank %d [%a, %a] boundary "
                         "%d [%a, %a] value %d [%a, %a] selector %d coverage %d [%a, %a]",
                         rec.rung, lo2.rank.pass, lo2.rank.lo, lo2.rank.hi, lo2.boundary.pass,
                         lo2.boundary.lo, lo2.boundary.hi, lo2.value.pass, lo2.value.lo,
                         lo2.value.hi, lo2.selector_ok, lo2.coverage.ok, lo2.coverage.lo,
                         lo2.coverage.hi);
                goto out;
            }
            st->ladder_exact++;
        } else {
            st->ladder_skip++;
        }
    }
    if (v.err_hi > 0.0 && (double)rec.etotal / v.err_hi > st->max_ratio)
        st->max_ratio = (double)rec.etotal / v.err_hi;
    if (rec_out) *rec_out = rec;
    if (prom_out) memcpy(prom_out, prom, nb);
    rc = 0;
    /* A deliberately unsound claim: E_key halved is flagged [CERT-CON-02]
     * (every 8th step: it costs a second exact check). */
    if (!try_half || dense) goto out;
    half = rec;
    half.ekey = rec.ekey * 0.5f;
    if (v.ekey > 0.0f && half.ekey < v.ekey) {
        kvq_exact_cert_verdict v2;
        REQ_EQ(kvq_exact_cert_check(&v2, c->out, &half, c->sel, prom, c->q, c->scale, &c->cache,
                                    &decl, prm->variant, &c->sh), KVQ_OK);
        if (!(v2.unsound & 1u)) {
            snprintf(why, wn, "halved E_key %a not flagged (sound %a)", (double)half.ekey,
                     (double)v.ekey);
            rc = 1;
            goto out;
        }
        st->caught_half++;
    } else {
        st->half_trivial++;
    }
out:
    free(prom), free(cand), free(eta), free(nu), free(dx), free(lo), free(hi);
    return rc;
}

/*
 * SPEC: [CERT-CON-01] [CERT-CON-02] [CERT-EK-01] [CERT-EV-01] [CERT-EV-02] [CERT-AR-01]
 * SPEC: [CERT-AR-02] [CERT-SEL-01] [CERT-SEL-03] [CERT-LM-01] [CERT-LM-02] [CERT-ANN-04]
 * SPEC: [CERT-DLT-03] [CERT-REC-01] [CERT-PROM-01] [CERT-PROM-02] [CERT-PROM-03]
 * SPEC: [CERT-RANK-01] [CERT-BND-01] [CERT-CHK-01] [CERT-LAD-01] [CERT-LAD-02]
 * SPEC: [CERT-LAD-03] [TEST-SEED-01]
 * Random steps of five head kinds (d in {16, 64, 128}, n <= 320 (<= 48 for
 * 15 steps in 16)) under five parameter sets in turn (the defaults; vtol = 0
 * with a budget of 0-2 blocks or the threshold rule; eps_guard 0.5 with r in
 * {1, 2}; Kmax in 1..3 with eps_guard 4; a random start rung with eps_dense 0
 * or +inf), the ladder included: each result judged by sc_check (zero
 * contract violations, every claimed bound >= the exact sound value, the
 * Phase-1 radius bounds every |L~_b - L_b|, promotion as the rule computed
 * from the exact eta and nu, every accepted check true exactly), and a claim
 * with E_key halved is flagged unsound (every 8th step).  Steps:
 * KVQ_RANDOM_CASES / 50 in all (2000 by default).
 */
START_TEST(step_random)
{
    int h = _i;
    uint64_t quota = (g_cases / 50u + H_COUNT - 1) / H_COUNT;
    uint64_t seed = g_seed ^ (0x3000005ull * (uint64_t)(h + 1));
    rng r = { seed };
    sstats st;
    char why[768];
    memset(&st, 0, sizeof st);
    if (quota == 0) quota = 1;
    for (uint64_t i = 0; i < quota; i++) {
        scase c;
        kvq_cert_params prm;
        sc_gen(&c, &r, h, i % 16 == 0 ? 320u : 48u);
        prm = sc_params(&r, i);
        if (sc_check(&c, &prm, &st, i % 8 == 0, NULL, NULL, why, sizeof why))
            ck_abort_msg("step_random seed=0x%016" PRIx64 " (KVQ_SEED=0x%016" PRIx64
                         ") head=%s step=%" PRIu64 " n=%u d=%u params=%" PRIu64 ": %s",
                         seed, g_seed, head_name[h], i, c.sh.tokens, c.sh.dim, i % 5u, why);
        sc_free(&c);
    }
    printf("step_random[%s]: seed=0x%016" PRIx64 " steps=%" PRIu64 " violations=%" PRIu64
           " unsound=%" PRIu64 " halved_ekey_caught=%" PRIu64 " (trivial %" PRIu64
           ") undecided=%" PRIu64 " rungs=%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
           "/%" PRIu64 " promoted=%" PRIu64 " checks_exact=%" PRIu64 " ladder_exact=%" PRIu64
           " SKIP(ladder, delta1 inf)=%" PRIu64 " max_delta1=%.3g max etotal/error=%.3g\n",
           head_name[h], seed, st.steps, st.violations, st.unsound_fast, st.caught_half,
           st.half_trivial, st.undecided, st.rungs[0], st.rungs[1], st.rungs[2], st.rungs[3],
           st.rungs[4], st.prom_blocks, st.checks_exact, st.ladder_exact, st.ladder_skip,
           st.max_delta1, st.max_ratio);
    fflush(stdout);
    REQ_EQ(st.violations, 0);
    REQ_EQ(st.steps, quota);
}
END_TEST

/* SPEC: [CERT-EK-02] [CERT-EK-01] [CERT-SEL-01] [CERT-CON-01] [CERT-RANK-01] [CERT-LAD-02]
 * SPEC: [CERT-LAD-03]
 * bounds/cert.md §6, truncation: 1000 blocks, all keys equal (Delta = 0), values
 * 1 in blocks 0..127 and 0 after.  The reference selector's rung-0 choice is
 * blocks 0..127 (equal masses, ties to the lower index, capped at Kmax = 128);
 * its output is exactly 1 (every weight multiplies 1), the paper's term is
 * 2 Vmax e^0 alpha^ (e^0 - 1) = 0, and a certificate claiming it is violated
 * (exact checker).  The ladder refuses that rung and rungs 1-2 (equal
 * log-masses with unselected blocks: the ranking check fails) and answers
 * with dense attention (rung 3), whose error is within its E_arith. */
START_TEST(step_truncation_counterexample)
{
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec, bad;
    kvq_exact_cert_verdict v;
    kvq_cert_decl decl;
    uint8_t sel0[1000], prom0[1000];
    float one[16];
    uint32_t d = 16, n = 16000;
    sstats st;
    char why[768];
    memset(&c, 0, sizeof c);
    memset(&st, 0, sizeof st);
    c.sh.tokens = n, c.sh.dim = d, c.scale = 0.25f;
    c.q = xmalloc(d * 4), c.k = xmalloc((size_t)n * d * 4), c.v = xmalloc((size_t)n * d * 4);
    for (uint32_t i = 0; i < d; i++) c.q[i] = 1.0f;
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            c.k[(size_t)t * d + i] = 0.5f;
            c.v[(size_t)t * d + i] = t < 128u * 16u ? 1.0f : 0.0f;
        }
    sc_quantize(&c);
    if (sc_check(&c, &prm, &st, 0, &rec, NULL, why, sizeof why)) ck_abort_msg("%s", why);
    REQ_EQ(rec.rung, 3);
    REQ_EQ(rec.k_sel, 1000);
    /* the refused rung 0, judged on its own */
    for (uint32_t b = 0; b < 1000; b++) sel0[b] = b < 128 ? 1u : 0u, prom0[b] = 0u;
    for (uint32_t i = 0; i < d; i++) one[i] = 1.0f;
    memset(&bad, 0, sizeof bad);
    bad.version = 1u, bad.n = n, bad.d = d, bad.k_sel = 128u;
    bad.ekey = 0.0f;                             /* the paper's term */
    bad.earith = rec.earith;                     /* generous: the dense pass's */
    decl = kvq_cert_pinned_decl(128u * 16u);
    REQ_EQ(kvq_exact_cert_check(&v, one, &bad, sel0, prom0, c.q, c.scale, &c.cache, &decl,
                                KVQ_CERT_VARIANT_SPARSE, &c.sh), KVQ_OK);
    REQ_EQ(v.holds, 0);                          /* error 0.872 sqrt(d) > E_val + E_arith */
    REQ(v.unsound & 1u);
    REQ_EQ(v.holds_sound, 1);                    /* the sound E_key covers it */
    SAME(v.delta, 0.0f);                         /* zero-range keys [CERT-DLT-01] */
    /* alpha^ = 0.872 exactly: RU32 of it */
    REQ(v.alpha_hat >= 0.872f && nextafterf(v.alpha_hat, 0.0f) < 0.872);
    REQ(v.err_lo > 0.872 * 4.0 * (1.0 - 0x1p-20));
    sc_free(&c);
}
END_TEST

/* ========================================================================= */
/* ladder: rung-forcing heads, the dense path, the Phase-1 radius            */
/* ========================================================================= */

/* d = 16, n = 128 + extra (8 full blocks), q = 1, scale 1/4: the keys of
 * block b are ctr[b] + noise (scores about 4 ctr[b]), the noise binary16 in
 * [-1/8, 1/8], the residual's keys -1 + noise; values random in [-1, 1]. */
static void heads(scase *c, rng *r, const float *ctr, uint32_t extra)
{
    uint32_t d = 16, n = 128 + extra;
    memset(c, 0, sizeof *c);
    c->sh.tokens = n, c->sh.dim = d, c->scale = 0.25f;
    c->q = xmalloc(d * 4), c->k = xmalloc((size_t)n * d * 4), c->v = xmalloc((size_t)n * d * 4);
    for (uint32_t i = 0; i < d; i++) c->q[i] = 1.0f;
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            c->k[(size_t)t * d + i] = rand_f16(r, t < 128 ? ctr[t / 16] : -1.0f, 0.125f);
            c->v[(size_t)t * d + i] = rand_f16(r, 0.0f, 1.0f);
        }
    sc_quantize(c);
}

/* Blocks 0 and 1 heavy (keys about 1), the others light (about -1): the
 * estimated masses of blocks 0 and 1 are each about e^8 times the others'. */
static const float two_heavy[8] = { 1.0f, 1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f };

/* Run sc_check on c with prm; abort with the case on failure. */
static kvq_cert_record ladder_run(scase *c, const kvq_cert_params *prm, uint8_t *prom,
                                  const char *what)
{
    kvq_cert_record rec;
    sstats st;
    char why[768];
    memset(&st, 0, sizeof st);
    if (sc_check(c, prm, &st, 1, &rec, prom, why, sizeof why))
        ck_abort_msg("%s (n=%u d=%u start=%u vtol=%a budget=%u): %s", what, c->sh.tokens,
                     c->sh.dim, prm->start_rung, (double)prm->vtol, prm->promote_budget, why);
    return rec;
}

/* SPEC: [CERT-LAD-01] [CERT-LAD-02] [CERT-SEL-01] [CERT-RANK-01] [CERT-BND-01]
 * Two heavy blocks.  Defaults: rung 0 accepted with both.  Kmin = Kmax = 1:
 * rung 0 selects one heavy block and leaves the other in T (ranking fails:
 * masses of equal size; boundary fails: alpha^ about 1/2); rung 1 doubles to
 * both and is accepted.  Every result judged by sc_check. */
START_TEST(ladder_rung1)
{
    rng r = { g_seed ^ 0x1adde41ull };
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    heads(&c, &r, two_heavy, 5);
    rec = ladder_run(&c, &prm, NULL, "defaults");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.k_sel, 2);
    REQ(c.sel[0] && c.sel[1] && c.sel[8]);
    prm.kmin = 1u, prm.kmax = 1u;
    rec = ladder_run(&c, &prm, NULL, "kmax 1");
    REQ_EQ(rec.rung, 1);
    REQ_EQ(rec.k_sel, 2);                        /* K1 = min(2 K0, nq) */
    REQ(c.sel[0] && c.sel[1]);
    sc_free(&c);
}
END_TEST

/* SPEC: [CERT-PROM-01] [CERT-PROM-02] [CERT-PROM-03] [CERT-LAD-02] [CERT-EV-01] [CERT-VAR-01]
 * Two heavy blocks, vtol = 0: every selected block with eta_b > 0 is a
 * candidate.  Sparse: threshold rule: both promoted at rung 0, E_val = 0
 * (also with vtol = 2^-149).  Budget 0: nothing promoted, the value check
 * E_val <= 0 fails at rungs 0 and 1, rung 2 promotes every selected block.
 * Budget 1: one block promoted at rungs 0-1, the check still fails, rung 2.
 * Budget 8: as the threshold rule.  Paper: Phase 2 also attends the tail,
 * whose INT4 values are never promoted, so E_val > 0 and the value check
 * E_val <= 0 fails at rungs 0-2: rung 3 (with vtol = 2^-8 rung 0, since the
 * tail's mass is about e^-8 of the heavy blocks'). */
START_TEST(ladder_promotion)
{
    rng r = { g_seed ^ 0x960707eull };
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    uint8_t prom[8];
    heads(&c, &r, two_heavy, 0);
    REQ(c.eta[0] > 0.0f && c.eta[1] > 0.0f);
    prm.vtol = 0.0f;
    rec = ladder_run(&c, &prm, prom, "paper, vtol 0, threshold");
    REQ_EQ(rec.rung, 3);
    prm.vtol = 0x1p-8f;
    rec = ladder_run(&c, &prm, prom, "paper, vtol 2^-8, threshold");
    REQ_EQ(rec.rung, 0);
    REQ(rec.eval > 0.0f);
    prm.variant = KVQ_CERT_VARIANT_SPARSE;
    prm.vtol = 0.0f;
    rec = ladder_run(&c, &prm, prom, "vtol 0, threshold");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.n_prom, 2);
    REQ(prom[0] && prom[1]);
    SAME(rec.eval, 0.0f);
    prm.vtol = 0x1p-149f;
    rec = ladder_run(&c, &prm, prom, "vtol 2^-149, threshold");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.n_prom, 2);
    prm.vtol = 0.0f;
    prm.promote_budget = 0u;
    rec = ladder_run(&c, &prm, prom, "vtol 0, budget 0");
    REQ_EQ(rec.rung, 2);
    REQ_EQ(rec.n_prom, rec.k_sel);
    SAME(rec.eval, 0.0f);
    prm.promote_budget = 1u;
    rec = ladder_run(&c, &prm, prom, "vtol 0, budget 1");
    REQ_EQ(rec.rung, 2);
    prm.promote_budget = 8u;
    rec = ladder_run(&c, &prm, prom, "vtol 0, budget 8");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.n_prom, 2);
    sc_free(&c);
}
END_TEST

/* SPEC: [CERT-PROM-02] [CERT-LAD-02]
 * Block 0 heavy (keys about 1), block 1 about e^3 lighter (keys about 1/4),
 * the rest light; vtol = 1/128, below every eta_b / nu_b here (asserted),
 * budget 1.  Both are candidates; the budget promotes the one with the
 * greater W~_b eta_b, and the value check passes with the other left in INT4
 * (its mass is small: rho_1 eta_1 <= vtol (rho_0 nu_0 + rho_1 nu_1), which
 * sc_check confirms exactly), so rung 0 is accepted and its promotion is
 * visible.  The choice is checked against the exact log-masses: L_p + ln
 * eta_p >= L_c + ln eta_c - 4 delta1 (m1 + ln W~_b and L_b both lie in the
 * block's enclosure, of width <= 2 delta1). */
START_TEST(ladder_budget_order)
{
    static const float ctr[8] = { 1.0f, 0.25f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f };
    rng r = { g_seed ^ 0xb0d9e7ull };
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    kvq_cert_decl kd;
    uint8_t prom[8], sel[8];
    double lo[8], hi[8];
    float delta1, lm[8], out[16];
    uint32_t p, o;
    heads(&c, &r, ctr, 0);
    prm.vtol = 0x1p-7f;
    prm.promote_budget = 1u;
    for (uint32_t b = 0; b < 2; b++)
        REQ((double)c.eta[b] > (double)prm.vtol * (double)c.nu[b]);
    rec = ladder_run(&c, &prm, prom, "budget 1, two candidates");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.k_sel, 2);
    REQ_EQ(rec.n_prom, 1);
    REQ(prom[0] != prom[1]);
    p = prom[0] ? 0u : 1u, o = 1u - p;
    REQ_EQ(kvq_cert_step(out, sel, prom, lm, &rec, &kd, &delta1, c.q, c.scale, &c.cache, &prm,
                         &c.sh), KVQ_OK);
    REQ_EQ(kvq_exact_cert_logmass(lo, hi, c.q, c.scale, &c.cache, &c.sh), KVQ_OK);
    REQ(t_dn(lo[p] + t_dn(t_dn(log(c.eta[p])))) >=
        t_up(t_up(hi[o] + t_up(t_up(log(c.eta[o])))) - t_up(4.0 * delta1)));
    /* the threshold rule promotes both, still rung 0 */
    prm.promote_budget = KVQ_CERT_PROMOTE_THRESHOLD;
    rec = ladder_run(&c, &prm, prom, "threshold, two candidates");
    REQ_EQ(rec.rung, 0);
    REQ_EQ(rec.n_prom, 2);
    sc_free(&c);
}
END_TEST

/* SPEC: [CERT-LAD-01] [CERT-LAD-02] [CERT-LAD-03] [CERT-AR-02]
 * Two heavy blocks (rung 0 acceptable): start_rung 1 gives rung 1 (K1 = 4),
 * 2 gives rung 2 (every selected block promoted), 3 gives the dense rung 3,
 * 4 rung 4, and 3 with eps_dense = 0 rung 4 (E_arith > 0 always).  Every
 * result judged by sc_check; rungs 3-4 against exact dense attention. */
START_TEST(ladder_start_rung)
{
    rng r = { g_seed ^ 0x57a27ull };
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    uint8_t prom[9];
    heads(&c, &r, two_heavy, 7);
    for (uint32_t s = 1; s <= 4; s++) {
        prm.start_rung = s;
        rec = ladder_run(&c, &prm, prom, "start rung");
        REQ_EQ(rec.rung, s);
        REQ_EQ(rec.k_sel, s == 1 || s == 2 ? 4u : 8u);
        if (s == 2) REQ_EQ(rec.n_prom, 4);
    }
    prm.start_rung = 3u;
    prm.eps_dense = 0.0f;
    rec = ladder_run(&c, &prm, prom, "eps_dense 0");
    REQ_EQ(rec.rung, 4);
    prm.eps_dense = rec.earith;                  /* not exceeded: rung 3 */
    rec = ladder_run(&c, &prm, prom, "eps_dense = E_arith");
    REQ_EQ(rec.rung, 3);
    sc_free(&c);
}
END_TEST

/* SPEC: [CERT-LAD-01] [CERT-LAD-03] [CERT-AR-01] [CERT-AR-02] [CERT-CON-01] [CERT-CON-02]
 * kvq_cert_dense on random heads (d in {16, 64, 128}, n <= 300), judged by the
 * exact dense checker: the error against exact dense attention is within the
 * claimed E_arith, and the claimed E_arith is >= the exact path's; the record
 * is that of rung 4; the declaration is the pinned one.  Bad inputs: a clear
 * status and nothing written. */
START_TEST(ladder_dense)
{
    rng r = { g_seed ^ 0xde05eull };
    for (int i = 0; i < 12; i++) {
        scase c;
        kvq_cert_record rec, rz;
        kvq_cert_decl decl, want;
        kvq_exact_cert_verdict v;
        uint32_t nq;
        sc_gen(&c, &r, i % H_COUNT, 300u);
        nq = kvq_cert_full_blocks(&c.sh);
        REQ_EQ(kvq_cert_dense(c.out, &rec, &decl, c.q, c.scale, c.k, c.v, &c.sh), KVQ_OK);
        want = kvq_cert_pinned_decl(c.sh.tokens);
        REQ_EQ(decl.acc_depth, want.acc_depth);
        REQ_EQ(decl.rescales, want.rescales);
        REQ_EQ(rec.rung, 4);
        REQ_EQ(rec.k_sel, nq);
        REQ_EQ(rec.n_prom, 0);
        REQ_EQ(rec.checks, 0);
        SAME(rec.ekey, 0.0f);
        SAME(rec.eval, 0.0f);
        SAME(rec.etotal, rec.earith);
        REQ_EQ(kvq_exact_cert_check_dense(&v, c.out, &rec, c.q, c.scale, &c.cache, &decl, &c.sh),
               KVQ_OK);
        if (v.holds != 1 || v.holds_sound != 1 || v.unsound != 0)
            ck_abort_msg("dense seed=0x%016" PRIx64 " case %d n=%u d=%u: error in [%a, %a], "
                         "E_arith %a (sound %a), unsound 0x%x", g_seed, i, c.sh.tokens, c.sh.dim,
                         v.err_lo, v.err_hi, (double)rec.earith, (double)v.earith, v.unsound);
        REQ(rec.vmax >= v.vmax);                 /* an upper bound of max ||v_i|| */
        if (i == 0) {                            /* bad inputs */
            float keep = c.v[3];
            memset(&rz, 0x5a, sizeof rz);
            c.v[3] = 1.0f + 0x1p-12f;            /* not binary16 */
            REQ_EQ(kvq_cert_dense(c.out, &rz, &decl, c.q, c.scale, c.k, c.v, &c.sh), KVQ_E_PARAM);
            c.v[3] = NAN;
            REQ_EQ(kvq_cert_dense(c.out, &rz, &decl, c.q, c.scale, c.k, c.v, &c.sh),
                   KVQ_E_NONFINITE);
            c.v[3] = keep;
            REQ_EQ(kvq_cert_dense(c.out, &rz, &decl, c.q, -1.0f, c.k, c.v, &c.sh), KVQ_E_PARAM);
            REQ_EQ(kvq_cert_dense(c.out, &rz, NULL, c.q, c.scale, c.k, c.v, &c.sh), KVQ_E_PARAM);
            REQ(all_bytes(&rz, sizeof rz, 0x5a));
        }
        sc_free(&c);
    }
}
END_TEST

/* SPEC: [CERT-LM-02] [CERT-RANK-01]
 * A block whose scores lie 128 below the maximum: its binary32 block sum
 * underflows to 0, L~_b = -inf and no finite radius exists: delta1 = +inf (no
 * NaN anywhere).  The checks use the block's own enclosure, so rung 0 is
 * still accepted.  A head without underflow has a finite delta1. */
START_TEST(ladder_radius_underflow)
{
    scase c;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    kvq_cert_decl kd;
    uint8_t prom[3];
    float delta1;
    uint32_t d = 16, n = 40;
    memset(&c, 0, sizeof c);
    c.sh.tokens = n, c.sh.dim = d, c.scale = 1.0f;
    c.q = xmalloc(d * 4), c.k = xmalloc((size_t)n * d * 4), c.v = xmalloc((size_t)n * d * 4);
    for (uint32_t i = 0; i < d; i++) c.q[i] = 1.0f;
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            c.k[(size_t)t * d + i] = t < 16 ? 8.0f : (t < 32 ? 0.0f : 7.5f);
            c.v[(size_t)t * d + i] = (float)(t % 3) - 1.0f;
        }
    sc_quantize(&c);
    (void)ladder_run(&c, &prm, prom, "underflow");
    REQ_EQ(kvq_cert_step(c.out, c.sel, prom, c.lm, &rec, &kd, &delta1, c.q, c.scale, &c.cache,
                         &prm, &c.sh), KVQ_OK);
    REQ(isinf(delta1) && delta1 > 0.0f);
    REQ(isinf(c.lm[1]) && c.lm[1] < 0.0f);
    REQ(!isnan(c.lm[0]) && !isnan(c.lm[2]));
    REQ_EQ(rec.rung, 0);
    for (uint32_t i = 0; i < d; i++) REQ(isfinite(c.out[i]));
    for (uint32_t t = 16; t < 32; t++)           /* block 1 now 80 below: no underflow */
        for (uint32_t i = 0; i < d; i++) c.k[(size_t)t * d + i] = 3.0f;
    free(c.kc), free(c.sigma), free(c.z), free(c.vc), free(c.vs), free(c.vz), free(c.eta);
    free(c.nu), free(c.lm), free(c.sel), free(c.out);
    sc_quantize(&c);
    (void)ladder_run(&c, &prm, prom, "no underflow");
    REQ_EQ(kvq_cert_step(c.out, c.sel, prom, c.lm, &rec, &kd, &delta1, c.q, c.scale, &c.cache,
                         &prm, &c.sh), KVQ_OK);
    REQ(isfinite(delta1));
    sc_free(&c);
}
END_TEST

/* SPEC: [CERT-DUMP-03] [CERT-LAD-01] step parameters out of range: KVQ_E_PARAM,
 * nothing written. */
START_TEST(ladder_bad_params)
{
    rng r = { g_seed ^ 0xbadull };
    scase c;
    kvq_cert_record rec;
    kvq_cert_decl kd;
    uint8_t prom[8];
    float delta1 = 7.0f;
    heads(&c, &r, two_heavy, 0);
    for (int k = 0; k < 8; k++) {
        kvq_cert_params p = kvq_cert_default_params();
        switch (k) {
        case 0: p.vtol = NAN; break;
        case 1: p.vtol = -1.0f; break;
        case 2: p.eps_guard = -0x1p-149f; break;
        case 3: p.eps_guard = (float)INFINITY; break;
        case 4: p.eps_dense = NAN; break;
        case 5: p.eps_dense = -1.0f; break;
        case 6: p.r = 0u; break;
        default: p.start_rung = 5u; break;
        }
        memset(c.out, 0x5a, 16 * 4), memset(c.sel, 0x5a, 8), memset(prom, 0x5a, 8);
        memset(&rec, 0x5a, sizeof rec);
        REQ_EQ(kvq_cert_step(c.out, c.sel, prom, c.lm, &rec, &kd, &delta1, c.q, c.scale,
                             &c.cache, &p, &c.sh), KVQ_E_PARAM);
        REQ(all_bytes(c.out, 16 * 4, 0x5a) && all_bytes(c.sel, 8, 0x5a) &&
            all_bytes(prom, 8, 0x5a) && all_bytes(&rec, sizeof rec, 0x5a));
        SAME(delta1, 7.0f);
    }
    sc_free(&c);
}
END_TEST

/* k-digit decimal check: N - 1/2 <= x 10^k < N + 1/2 for the printed digits,
 * decided exactly from the enclosure [lo, hi]. */
static int printed_ok(const mpfr_t lo, const mpfr_t hi, long num, unsigned k)
{
    mpfr_t a, b;
    unsigned long p = 1;
    int ok;
    for (unsigned i = 0; i < k; i++) p *= 10u;
    mpfr_inits2(KVQ_CERT_XPREC, a, b, (mpfr_ptr)0);
    mpfr_mul_ui(a, lo, p, MPFR_RNDD);
    mpfr_mul_ui(b, hi, p, MPFR_RNDU);
    ok = mpfr_cmp_d(a, (double)num - 0.5) >= 0 && mpfr_cmp_d(b, (double)num + 0.5) < 0;
    mpfr_clears(a, b, (mpfr_ptr)0);
    return ok;
}

/* SPEC: [CERT-EK-03] [CERT-EK-01] [CERT-EK-02]
 * The worked numbers at Delta = 0.18, alpha^ = 1 - tau = 0.005, Vmax = 1, from
 * the exact path's functions on enclosures of 0.18 and 0.005, each compared
 * with the printed digits exactly. */
START_TEST(special_worked_numbers)
{
    mpfr_t dl, dh, al, ah, one, lo, hi, t;
    mpfr_inits2(KVQ_CERT_XPREC, dl, dh, al, ah, one, lo, hi, t, (mpfr_ptr)0);
    mpfr_set_str(dl, "0.18", 10, MPFR_RNDD), mpfr_set_str(dh, "0.18", 10, MPFR_RNDU);
    mpfr_set_str(al, "0.005", 10, MPFR_RNDD), mpfr_set_str(ah, "0.005", 10, MPFR_RNDU);
    mpfr_set_ui(one, 1, MPFR_RNDN);
    mpfr_mul_2ui(lo, dl, 1, MPFR_RNDD), mpfr_exp(lo, lo, MPFR_RNDD);
    mpfr_mul_2ui(hi, dh, 1, MPFR_RNDU), mpfr_exp(hi, hi, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 1433329, 6));         /* e^0.36 = 1.433329 */
    mpfr_mul_ui(lo, dl, 3, MPFR_RNDD), mpfr_exp(lo, lo, MPFR_RNDD);
    mpfr_mul_ui(hi, dh, 3, MPFR_RNDU), mpfr_exp(hi, hi, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 1716007, 6));         /* e^0.54 = 1.716007 */
    kvq_exact_cert_ekey_paper(lo, dl, al, one, 2, MPFR_RNDD);
    kvq_exact_cert_ekey_paper(hi, dh, ah, one, 2, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 6211, 6));            /* 0.006211 Vmax */
    kvq_exact_cert_ekey_paper(lo, dl, al, one, 3, MPFR_RNDD);
    kvq_exact_cert_ekey_paper(hi, dh, ah, one, 3, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 7436, 6));            /* 0.007436 Vmax */
    /* both factors e^{3 Delta}: 2 e^{3D} a (e^{3D} - 1) = 0.012287 */
    mpfr_mul_ui(lo, dl, 3, MPFR_RNDD), mpfr_exp(t, lo, MPFR_RNDD), mpfr_expm1(lo, lo, MPFR_RNDD);
    mpfr_mul(lo, lo, t, MPFR_RNDD), mpfr_mul(lo, lo, al, MPFR_RNDD), mpfr_mul_2ui(lo, lo, 1, MPFR_RNDD);
    mpfr_mul_ui(hi, dh, 3, MPFR_RNDU), mpfr_exp(t, hi, MPFR_RNDU), mpfr_expm1(hi, hi, MPFR_RNDU);
    mpfr_mul(hi, hi, t, MPFR_RNDU), mpfr_mul(hi, hi, ah, MPFR_RNDU), mpfr_mul_2ui(hi, hi, 1, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 12287, 6));
    mpfr_div_2ui(lo, dl, 1, MPFR_RNDD), mpfr_tanh(lo, lo, MPFR_RNDD);
    mpfr_div_2ui(hi, dh, 1, MPFR_RNDU), mpfr_tanh(hi, hi, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 89758, 6));           /* t = tanh(0.09) = 0.089758 */
    /* A's numerator e^{0.36} 0.005 = 0.0071666 (7 decimals), denominator 1.0021666 */
    mpfr_mul_2ui(lo, dl, 1, MPFR_RNDD), mpfr_exp(lo, lo, MPFR_RNDD), mpfr_mul(lo, lo, al, MPFR_RNDD);
    mpfr_mul_2ui(hi, dh, 1, MPFR_RNDU), mpfr_exp(hi, hi, MPFR_RNDU), mpfr_mul(hi, hi, ah, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 71666, 7));
    mpfr_mul_2ui(lo, dl, 1, MPFR_RNDD), mpfr_expm1(lo, lo, MPFR_RNDD), mpfr_mul(lo, lo, al, MPFR_RNDD);
    mpfr_add_ui(lo, lo, 1, MPFR_RNDD);
    mpfr_mul_2ui(hi, dh, 1, MPFR_RNDU), mpfr_expm1(hi, hi, MPFR_RNDU), mpfr_mul(hi, hi, ah, MPFR_RNDU);
    mpfr_add_ui(hi, hi, 1, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 10021666, 7));
    kvq_exact_cert_tail(lo, dl, al, MPFR_RNDD);
    kvq_exact_cert_tail(hi, dh, ah, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 7151, 6));            /* A = 0.007151 */
    kvq_exact_cert_ekey(lo, dl, al, one, MPFR_RNDD);
    kvq_exact_cert_ekey(hi, dh, ah, one, MPFR_RNDU);
    REQ(printed_ok(lo, hi, 192534, 6));          /* E_key = 0.192534 Vmax */
    /* the paper's term is below the sound bound here, by a factor of 30 */
    kvq_exact_cert_ekey_paper(t, dh, ah, one, 2, MPFR_RNDU);
    mpfr_mul_ui(t, t, 30, MPFR_RNDU);
    REQ(mpfr_cmp(t, lo) < 0);
    mpfr_clears(dl, dh, al, ah, one, lo, hi, t, (mpfr_ptr)0);
}
END_TEST

static Suite *cert_suite(void)
{
    Suite *s = suite_create("cert");
    TCase *tc;
    tc = tcase_create("special_values");
    tcase_add_test(tc, special_spec_example);
    tcase_add_test(tc, special_gamma_values);
    tcase_add_test(tc, special_gamma_huge_offset);
    tcase_add_test(tc, libm_frexpf_exponent);
    suite_add_tcase(s, tc);
    tc = tcase_create("degenerate");
    tcase_add_test(tc, degenerate_constant_channels);
    tcase_add_test(tc, degenerate_residual_only);
    suite_add_tcase(s, tc);
    tc = tcase_create("ties");
    tcase_add_test(tc, ties_policy);
    suite_add_tcase(s, tc);
    tc = tcase_create("clamping");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, clamping_extremes);
    suite_add_tcase(s, tc);
    tc = tcase_create("packing");
    tcase_add_test(tc, packing_layout);
    suite_add_tcase(s, tc);
    tc = tcase_create("f16_meta");
    tcase_add_test(tc, f16_predicate);
    suite_add_tcase(s, tc);
    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, random_vs_exact, 0, D_COUNT);
    suite_add_tcase(s, tc);
    tc = tcase_create("step");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, special_worked_numbers);
    tcase_add_test(tc, step_truncation_counterexample);
    tcase_add_loop_test(tc, step_random, 0, H_COUNT);
    suite_add_tcase(s, tc);
    tc = tcase_create("ladder");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ladder_rung1);
    tcase_add_test(tc, ladder_promotion);
    tcase_add_test(tc, ladder_budget_order);
    tcase_add_test(tc, ladder_start_rung);
    tcase_add_test(tc, ladder_dense);
    tcase_add_test(tc, ladder_radius_underflow);
    tcase_add_test(tc, ladder_bad_params);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_inputs);
    tcase_add_test(tc, bad_metadata);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_cert", cert_suite(), &g_seed, &g_cases);
}
