/*
 * fuzz_kivi_diff.c -- libFuzzer harness: KIVI ref/fast against ref/exact.
 *
 * The input decodes into a shape, a policy and the tensor's values (see
 * decode() below; short inputs are padded with zero bytes).  Both paths
 * quantize it and every property of tests/kivi/check_kivi.c's random_vs_exact must
 * hold; on a mismatch the case is printed as a one-line vector (hex bit
 * patterns) and the harness aborts, so libFuzzer saves the input.
 *
 * Properties [KIVI-Q-04] [KIVI-B-01..03] [KIVI-D-01] [POL-NF-01] [POL-OV-02]:
 *  - same status; on error nothing written by either path;
 *  - packed codes, scale, zero bitwise equal; fast flags == exact flags without
 *    KVQ_FLAG_AMBIGUOUS;
 *  - every fast code is the exact real code or its accepted alternative; the
 *    ambiguity count and flag agree with the per-element answers;
 *  - fast dequantization bitwise equal to the exact RN32(c s + z) and within
 *    kvq_exact_kivi_deq_within; KVQ_E_RANGE (nothing written) exactly when a
 *    value overflows under the NaN overflow policy.
 *
 * Build and run: ci/fuzz-smoke.sh (make fuzz-smoke).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact.h"

#define SENT8 0xA5u
#define SENT32 0xA5A5A5A5u
#define SENT64 0xA5A5A5A5A5A5A5A5ull
#define F32_MAX 0x1.fffffep+127f

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static uint8_t rd8(reader *r)
{
    return r->at < r->n ? r->p[r->at++] : 0u;
}

static uint32_t rd32(reader *r)
{
    uint32_t v = rd8(r);
    v |= (uint32_t)rd8(r) << 8;
    v |= (uint32_t)rd8(r) << 16;
    return v | (uint32_t)rd8(r) << 24;
}

static const kvq_kivi_shape *g_sh;
static const kvq_policy *g_pol;
static const float *g_x;

/* Print the case and abort: libFuzzer keeps the input as a crash artifact. */
static void fail(const char *what, uint64_t at)
{
    uint64_t n = kvq_kivi_elems(g_sh);
    fprintf(stderr, "fuzz_kivi_diff: MISMATCH: %s (at %llu)\n", what, (unsigned long long)at);
    fprintf(stderr, "kivi-case bits=%u group=%u grouping=%u meta=%u tokens=%u channels=%u "
                    "ties=%u overflow=%u subnormal=%u x=",
            g_sh->bits, g_sh->group, g_sh->grouping, g_sh->meta, g_sh->tokens, g_sh->channels,
            g_pol->ties, g_pol->overflow, g_pol->subnormal);
    for (uint64_t e = 0; e < n; e++)
        fprintf(stderr, "%s%08x", e ? "," : "", (unsigned)kvq_f32_bits(g_x[e]));
    fputc('\n', stderr);
    abort();
}

static int untouched(const void *p, size_t n)
{
    const uint8_t *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != SENT8) return 0;
    return 1;
}

/*
 * Input layout (little endian):
 *   byte 0: bits index (2 bits) | grouping << 2 | meta << 3 | ties << 4 |
 *           overflow << 5 | subnormal << 6
 *   byte 1: G = 8 (1 + b % 8)              byte 2: groups along G's dimension
 *   1 + b % 4, other dimension 1 + (b >> 2) % 3
 *   byte 3: value mode; bytes 4, 5, 6: mode parameters; then per element:
 *     mode 0: raw binary32 (4 bytes)       mode 1: binary16 encoding (2 bytes)
 *     mode 2: a coarse dyadic grid with half steps, exact (1 byte): ties
 *     mode 3: a base value (4 bytes once) plus 0..15 ulps (1 byte)
 */
static void decode(reader *r, kvq_kivi_shape *sh, kvq_policy *pol, float **xp)
{
    uint8_t b0 = rd8(r), b1 = rd8(r), b2 = rd8(r), mode = rd8(r) % 4u;
    uint8_t p0 = rd8(r), p1 = rd8(r), p2 = rd8(r);
    uint32_t G = 8u * (1u + b1 % 8u), ng = 1u + b2 % 4u, other = 1u + (b2 >> 2) % 3u;
    uint64_t n;
    float *x;
    sh->bits = 1u << (b0 & 3u);
    sh->group = G;
    sh->grouping = (b0 >> 2) & 1u;
    sh->meta = (b0 >> 3) & 1u;
    if (sh->grouping == KVQ_GROUP_CHANNEL) {
        sh->tokens = G * ng;
        sh->channels = other;
    } else {
        sh->tokens = other;
        sh->channels = G * ng;
    }
    pol->ties = (b0 >> 4) & 1u;
    pol->overflow = (b0 >> 5) & 1u;
    pol->subnormal = (b0 >> 6) & 1u;
    n = kvq_kivi_elems(sh);
    x = malloc(n * sizeof *x);
    if (x == NULL) abort();
    if (mode == 0) {
        for (uint64_t e = 0; e < n; e++) x[e] = kvq_f32_from_bits(rd32(r));
    } else if (mode == 1) {
        for (uint64_t e = 0; e < n; e++) {
            uint16_t h = rd8(r);
            h |= (uint16_t)(rd8(r) << 8);
            x[e] = kvq_f16_from_bits(h);
        }
    } else if (mode == 2) {
        /* s0 = m 2^e, z0 = j 2^(e-1), x = z0 + k s0/2: exact, < 2^24 grid units */
        uint32_t cmax = kvq_code_max(sh->bits), m = 2u * (p2 % 32u) + 1u;
        int ex = (int)(p0 % 81u) - 40;
        int32_t j = (int32_t)(int8_t)p1 * 1021;
        float u = ldexpf(1.0f, ex - 1);
        for (uint64_t e = 0; e < n; e++) {
            uint32_t k = rd8(r) % (2u * cmax + 1u);
            x[e] = (float)(j + (int32_t)(k * m)) * u;
        }
    } else {
        uint32_t base = rd32(r);
        for (uint64_t e = 0; e < n; e++) x[e] = kvq_f32_from_bits(base + (rd8(r) & 15u));
    }
    *xp = x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader rdr = { data, size, 0 };
    kvq_kivi_shape sh;
    kvq_policy pol;
    float *x, *fs, *fz, *fy;
    uint8_t *fc;
    kvq_exact_kivi_out xo;
    uint64_t n, ng, cb, namb = 0;
    uint32_t ff = SENT32, fdf = SENT32, cmax, want_sat = 0;
    int need_range = 0;
    kvq_status fst, xst, dst;

    decode(&rdr, &sh, &pol, &x);
    g_sh = &sh;
    g_pol = &pol;
    g_x = x;
    n = kvq_kivi_elems(&sh);
    ng = kvq_kivi_groups(&sh);
    cb = kvq_kivi_code_bytes(&sh);
    cmax = kvq_code_max(sh.bits);
    fc = malloc(cb);
    fs = malloc(ng * sizeof *fs);
    fz = malloc(ng * sizeof *fz);
    fy = malloc(n * sizeof *fy);
    xo.codes = malloc(cb);
    xo.scale = malloc(ng * sizeof(float));
    xo.zero = malloc(ng * sizeof(float));
    xo.deq = malloc(n * sizeof(float));
    xo.code_real = malloc(n);
    xo.code_alt = malloc(n);
    if (!fc || !fs || !fz || !fy || !xo.codes || !xo.scale || !xo.zero || !xo.deq ||
        !xo.code_real || !xo.code_alt)
        abort();
    memset(fc, SENT8, cb);
    memset(fs, SENT8, ng * sizeof *fs);
    memset(fz, SENT8, ng * sizeof *fz);
    memset(fy, SENT8, n * sizeof *fy);
    memset(xo.codes, SENT8, cb);
    memset(xo.scale, SENT8, ng * sizeof(float));
    memset(xo.zero, SENT8, ng * sizeof(float));
    memset(xo.deq, SENT8, n * sizeof(float));
    memset(xo.code_real, SENT8, n);
    memset(xo.code_alt, SENT8, n);
    xo.flags = SENT32;
    xo.ambiguous = SENT64;

    fst = kvq_kivi_quantize(fc, fs, fz, &ff, x, &sh, &pol);
    xst = kvq_exact_kivi_quantize(&xo, x, &sh, &pol);
    if (fst != xst) fail("status differs", (uint64_t)fst * 100u + (uint64_t)xst);
    if (fst != KVQ_OK) {
        if (!untouched(fc, cb) || !untouched(fs, ng * 4) || !untouched(fz, ng * 4) ||
            ff != SENT32)
            fail("fast wrote outputs on error", fst);
        if (!untouched(xo.codes, cb) || !untouched(xo.scale, ng * 4) ||
            !untouched(xo.zero, ng * 4) || !untouched(xo.deq, n * 4) ||
            !untouched(xo.code_real, n) || !untouched(xo.code_alt, n) || xo.flags != SENT32 ||
            xo.ambiguous != SENT64)
            fail("exact wrote outputs on error", xst);
        goto done;
    }
    for (uint64_t g = 0; g < ng; g++)
        if (!kvq_f32_same(fs[g], xo.scale[g]) || !kvq_f32_same(fz[g], xo.zero[g]))
            fail("stored metadata differs", g);
    if (memcmp(fc, xo.codes, cb) != 0) fail("packed codes differ", 0);
    if (ff != (xo.flags & ~KVQ_FLAG_AMBIGUOUS)) fail("flags differ", ff);
    for (uint64_t e = 0; e < n; e++) {
        uint32_t i;
        uint64_t g = kvq_kivi_group_of(&sh, e, &i);
        uint32_t c = kvq_unpack_code(fc + kvq_kivi_group_code_offset(&sh, g), i, sh.bits);
        uint32_t cr = xo.code_real[e], ca = xo.code_alt[e];
        if (cr > cmax || ca > cmax || (cr != ca && cr + 1u != ca && ca + 1u != cr))
            fail("exact real/alt codes malformed", e);
        if (c != cr && c != ca) fail("fast code is neither the real code nor its alternative", e);
        if (cr != ca) namb++;
        if (kvq_f32_same(fabsf(xo.deq[e]), F32_MAX)) {
            int ov;
            (void)kvq_exact_kivi_deq(c, xo.scale[g], xo.zero[g], &ov);
            if (ov) {
                want_sat = KVQ_FLAG_SATURATED;
                if (pol.overflow == KVQ_OVERFLOW_NAN) need_range = 1;
            }
        }
    }
    if (namb != xo.ambiguous || ((xo.flags & KVQ_FLAG_AMBIGUOUS) != 0) != (namb != 0))
        fail("ambiguity count or flag inconsistent", namb);
    dst = kvq_kivi_dequantize(fy, &fdf, fc, fs, fz, &sh, &pol);
    if (dst != (need_range ? KVQ_E_RANGE : KVQ_OK)) fail("dequantize status", dst);
    if (need_range) {
        if (!untouched(fy, n * 4) || fdf != SENT32) fail("dequantize wrote outputs on error", 0);
        goto done;
    }
    if (fdf != want_sat) fail("dequantize flags", fdf);
    for (uint64_t e = 0; e < n; e++) {
        uint32_t i;
        uint64_t g = kvq_kivi_group_of(&sh, e, &i);
        uint32_t c = kvq_unpack_code(fc + kvq_kivi_group_code_offset(&sh, g), i, sh.bits);
        if (!kvq_f32_same(fy[e], xo.deq[e])) fail("dequantized value differs", e);
        if (!kvq_exact_kivi_deq_within(fy[e], c, fs[g], fz[g], NULL, NULL))
            fail("dequantized value outside the exact bound", e);
    }
done:
    free(x);
    free(fc);
    free(fs);
    free(fz);
    free(fy);
    free(xo.codes);
    free(xo.scale);
    free(xo.zero);
    free(xo.deq);
    free(xo.code_real);
    free(xo.code_alt);
    return 0;
}
