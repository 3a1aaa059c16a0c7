/*
 * gen.c -- deterministic KIVI conformance vectors (spec/vectors.md, [VEC-GEN-*]).
 *
 * Case k draws everything from its own generator, seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  The
 * parameters that matter for coverage (bits, grouping, metadata format,
 * level) cycle with k; value distributions, shapes and policies are drawn.
 * Expected outputs come from the exact path only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "kvq_bits.h"
#include "kvq_rng.h"
#include "kvq_exact.h"

static float rng_unit(kvq_rng *r)
{
    return (float)(kvq_rng_next(r) >> 40) * 0x1p-24f;
}

static float rng_sym(kvq_rng *r)
{
    return 2.0f * rng_unit(r) - 1.0f;
}

enum {
    D_UNIFORM, D_NORMALISH, D_TIES, D_CONSTANT, D_TINY, D_HUGE, D_HALF, D_OUTLIER, D_MIXED,
    D_COUNT
};
static const char *const DIST_NAMES[D_COUNT] = {
    "uniform", "normalish", "ties", "constant", "tiny", "huge", "half", "outlier", "mixed",
};

/* Fill one group's G values (stride apart) from distribution d. */
static void fill_group(float *x, size_t stride, uint32_t G, uint32_t bits, int d, kvq_rng *r)
{
    uint32_t cmax = kvq_code_max(bits);
    if (d == D_MIXED) d = (int)kvq_rng_below(r, D_MIXED);
    switch (d) {
    case D_UNIFORM: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 21) - 10), off = a * rng_sym(r);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = off + a * rng_sym(r);
        break;
    }
    case D_NORMALISH: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 9) - 4), off = 4.0f * a * rng_sym(r);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = off + a * (rng_sym(r) + rng_sym(r) + rng_sym(r));
        break;
    }
    case D_TIES: {
        /* min z and max z + cmax*s on a grid of s/2: r = cmax*s exactly, so
         * s is recovered exactly and odd multiples of s/2 are exact ties. */
        int e = (int)kvq_rng_below(r, 16) - 8;
        float s = ldexpf(1.0f, e), z = s * (float)((int)kvq_rng_below(r, 64) - 32);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = z + (s / 2.0f) * (float)kvq_rng_below(r, 2 * cmax + 1);
        x[0] = z;
        x[(G - 1) * stride] = z + s * (float)cmax;
        break;
    }
    case D_CONSTANT: {
        float c = ldexpf(rng_sym(r), (int)kvq_rng_below(r, 40) - 20);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = c;
        break;
    }
    case D_TINY: {
        /* subnormal and near-subnormal values; ranges whose scale underflows */
        int e = -149 + (int)kvq_rng_below(r, 30);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = ldexpf((float)((int)kvq_rng_below(r, 1024) - 512), e);
        break;
    }
    case D_HUGE: {
        /* ranges near the top of binary32 (range overflow) or of binary16 */
        float top = kvq_rng_below(r, 2) ? 0x1.fffffep+127f : 0x1.fp+16f;
        for (uint32_t i = 0; i < G; i++) x[i * stride] = top * rng_sym(r);
        break;
    }
    case D_HALF: {
        /* binary16 values, as a binary16 KV cache holds */
        for (uint32_t i = 0; i < G; i++) {
            int ov;
            float v = ldexpf(rng_sym(r), (int)kvq_rng_below(r, 12) - 6);
            x[i * stride] = kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov);
        }
        break;
    }
    default: { /* D_OUTLIER */
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 6) - 3);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = a * rng_sym(r);
        x[kvq_rng_below(r, G) * stride] = a * (float)(64 + kvq_rng_below(r, 1024)) * (kvq_rng_below(r, 2) ? 1.0f : -1.0f);
        break;
    }
    }
}

/* Fill expected outputs from the exact path; on an exact-path error the case
 * becomes an error case expecting that status. */
/* An error case: the exact path rejected the inputs with status st; keep the
 * inputs, drop every output, and expect st.  Returns KVQ_OK (the case is made). */
static kvq_status as_error_case(kvq_vcase *c, kvq_status st)
{
    float *x = c->x;
    c->x = NULL;
    kvq_vcase_free(c);
    c->x = x;
    c->status = st;
    c->flags = 0;
    return KVQ_OK;
}

static kvq_status solve(kvq_vcase *c)
{
    kvq_exact_kivi_out o;
    uint64_t n = kvq_kivi_elems(&c->shape), namb = 0;
    kvq_status st;
    memset(&o, 0, sizeof o);
    o.codes = c->codes;
    o.scale = c->scale;
    o.zero = c->zero;
    o.deq = c->deq;
    o.code_real = malloc(n ? n : 1);
    o.code_alt = malloc(n ? n : 1);
    if (!o.code_real || !o.code_alt) {
        free(o.code_real);
        free(o.code_alt);
        return KVQ_E_NOMEM;
    }
    st = kvq_exact_kivi_quantize(&o, c->x, &c->shape, &c->pol);
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) {
        st = as_error_case(c, st);
        goto out;
    }
    c->flags = o.flags;
    for (uint64_t g = 0; g < kvq_kivi_groups(&c->shape); g++) {
        uint8_t *grp = c->real + kvq_kivi_group_code_offset(&c->shape, g);
        for (uint32_t b = 0; b < kvq_kivi_group_bytes(&c->shape); b++) grp[b] = 0;
        for (uint32_t i = 0; i < c->shape.group; i++)
            kvq_pack_code(grp, i, c->shape.bits, o.code_real[kvq_kivi_elem_index(&c->shape, g, i)]);
    }
    for (uint64_t e = 0; e < n; e++) namb += o.code_real[e] != o.code_alt[e];
    c->namb = namb;
    if (namb) {
        uint64_t k = 0;
        c->amb_idx = malloc(namb * sizeof *c->amb_idx);
        c->amb_alt = malloc(namb);
        if (!c->amb_idx || !c->amb_alt) {
            st = KVQ_E_NOMEM;
            goto out;
        }
        for (uint64_t e = 0; e < n; e++)
            if (o.code_real[e] != o.code_alt[e]) {
                c->amb_idx[k] = e;
                c->amb_alt[k++] = o.code_alt[e];
            }
    }
out:
    free(o.code_real);
    free(o.code_alt);
    return st;
}

/* The regular case at ordinal k. */
static kvq_status make_regular(kvq_vcase *c, const char *tag, uint64_t seed, uint32_t k,
                               int smoke)
{
    static const uint32_t BITS[4] = { 1, 2, 4, 8 };
    static const uint32_t GS_SMOKE[3] = { 8, 16, 32 };
    static const uint32_t GS_STD[5] = { 8, 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
    kvq_kivi_shape *s = &c->shape;
    int d;
    uint64_t ng;
    memset(c, 0, sizeof *c);
    (void)kvq_rng_next(&r);
    s->bits = BITS[k % 4u];
    s->grouping = (k / 4u) % 2u;
    s->meta = (k / 8u) % 2u;
    c->level = (k / 16u) % 2u;
    c->op = KVQ_OP_KIVI_QUANT;
    s->group = smoke ? GS_SMOKE[kvq_rng_below(&r, 3)] : GS_STD[kvq_rng_below(&r, 5)];
    if (s->grouping == KVQ_GROUP_CHANNEL) {
        s->tokens = s->group * (1u + kvq_rng_below(&r, 2));
        s->channels = 1u + kvq_rng_below(&r, smoke ? 8 : 24);
    } else {
        s->channels = s->group * (1u + kvq_rng_below(&r, 2));
        s->tokens = 1u + kvq_rng_below(&r, smoke ? 4 : 12);
    }
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 8) == 0) c->pol.ties = KVQ_TIES_AWAY;
    if (kvq_rng_below(&r, 8) == 0) c->pol.overflow = KVQ_OVERFLOW_NAN;
    if (kvq_rng_below(&r, 8) == 0) c->pol.subnormal = KVQ_SUBNORMAL_DAZ;
    d = (int)((k / 32u + kvq_rng_below(&r, 3)) % D_COUNT);
    snprintf(c->id, sizeof c->id, "kivi-%s-%05u-%s", tag, k, DIST_NAMES[d]);
    c->status = KVQ_OK;
    if (kvq_vcase_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    ng = kvq_kivi_groups(s);
    for (uint64_t g = 0; g < ng; g++)
        fill_group(c->x + kvq_kivi_group_base(s, g), (size_t)kvq_kivi_group_stride(s), s->group,
                   s->bits, d, &r);
    return solve(c);
}

/* Error cases: the bad inputs every subject must reject [POL-NF-01, KIVI-L-02]. */
enum { E_NAN, E_PINF, E_NINF, E_RAGGED_T, E_RAGGED_D, E_EMPTY, E_BITS, E_GROUP, E_RANGE,
       E_DEQ_RANGE, E_COUNT };
static const char *const ERR_NAMES[E_COUNT] = {
    "nan", "pinf", "ninf", "ragged-tokens", "ragged-channels", "empty", "bits3", "group12",
    "range-nan-policy", "deq-range-nan-policy",
};

static kvq_status make_error(kvq_vcase *c, const char *tag, uint64_t seed, uint32_t k,
                             uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    kvq_kivi_shape *s = &c->shape;
    uint64_t n;
    memset(c, 0, sizeof *c);
    (void)kvq_rng_next(&r);
    c->level = which % 2u;
    c->op = KVQ_OP_KIVI_QUANT;
    c->pol = kvq_policy_default;
    s->bits = 4;
    s->group = 16;
    s->grouping = which % 2u;
    s->meta = KVQ_META_F32;
    s->tokens = 16;
    s->channels = 16;
    switch (which) {
    case E_RAGGED_T: s->grouping = KVQ_GROUP_CHANNEL; s->tokens = 17; break;
    case E_RAGGED_D: s->grouping = KVQ_GROUP_TOKEN; s->channels = 20; break;
    case E_EMPTY: s->tokens = 0; break;
    case E_BITS: s->bits = 3; break;
    case E_GROUP: s->group = 12; break;
    case E_RANGE: c->pol.overflow = KVQ_OVERFLOW_NAN; break;
    case E_DEQ_RANGE: c->pol.overflow = KVQ_OVERFLOW_NAN; break;
    default: break;
    }
    snprintf(c->id, sizeof c->id, "kivi-%s-%05u-err-%s", tag, k, ERR_NAMES[which]);
    n = kvq_kivi_elems(s);
    c->status = KVQ_E_PARAM; /* inputs only for now */
    if (kvq_vcase_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint64_t e = 0; e < n; e++) c->x[e] = rng_sym(&r);
    if (n) {
        uint64_t at = kvq_rng_next(&r) % n;
        if (which == E_NAN) c->x[at] = NAN;
        if (which == E_PINF) c->x[at] = INFINITY;
        if (which == E_NINF) c->x[at] = -INFINITY;
        if (which == E_RANGE) { /* one group spans more than the binary32 range */
            c->x[kvq_kivi_elem_index(s, 0, 0)] = -0x1.8p+127f;
            c->x[kvq_kivi_elem_index(s, 0, 1)] = 0x1.8p+127f;
        }
        if (which == E_DEQ_RANGE) { /* range and scale finite, fmaf(15, s, min) overflows */
            for (uint32_t i = 0; i < s->group; i++)
                c->x[kvq_kivi_elem_index(s, 0, i)] = i % 2 ? 0x1.fffffep+127f : 0x1.553aa6p+126f;
        }
    }
    /* The expected status is the exact path's verdict on these inputs. */
    if (kvq_kivi_params_ok(s) && kvq_kivi_shape_ok(s)) {
        float *x = c->x;
        c->x = NULL;
        c->status = KVQ_OK;
        if (kvq_vcase_alloc(c) != KVQ_OK) {
            free(x);
            return KVQ_E_NOMEM;
        }
        memcpy(c->x, x, n * sizeof *x);
        free(x);
        return solve(c);
    }
    c->status = kvq_kivi_params_ok(s) ? KVQ_E_SHAPE : KVQ_E_PARAM;
    return KVQ_OK;
}

/* The shard check and the header every generated file carries [VEC-FMT-02]. */
static kvq_status vf_header(kvq_vfile *vf, const char *family, const char *levels, uint64_t seed,
                            uint32_t shard_i, uint32_t shard_n, char *err, size_t errlen)
{
    if (shard_n == 0 || shard_i >= shard_n) {
        snprintf(err, errlen, "bad shard %u/%u", shard_i, shard_n);
        return KVQ_E_PARAM;
    }
    vf->version = KVQ_VEC_VERSION;
    snprintf(vf->family, sizeof vf->family, "%s", family);
    snprintf(vf->levels, sizeof vf->levels, "%s", levels);
    vf->seed = seed;
    snprintf(vf->generator, sizeof vf->generator, "kvq %s shard %u/%u", KVQ_VERSION_STRING,
             shard_i, shard_n);
    return KVQ_OK;
}

kvq_status kvq_gen_kivi(kvq_vfile *vf, const char *levels, uint64_t seed, uint32_t shard_i,
                        uint32_t shard_n, char *err, size_t errlen)
{
    int smoke;
    uint32_t nreg, total, k;
    const char *tag;
    memset(vf, 0, sizeof *vf);
    if (strcmp(levels, "smoke") == 0) {
        smoke = 1;
        nreg = 96;
        tag = "smoke";
    } else if (strcmp(levels, "standard") == 0) {
        smoke = 0;
        nreg = 1152;
        tag = "std";
    } else {
        snprintf(err, errlen, "unknown level set '%s' (smoke|standard)", levels);
        return KVQ_E_PARAM;
    }
    kvq_status hs = vf_header(vf, "kivi", levels, seed, shard_i, shard_n, err, errlen);
    if (hs != KVQ_OK) return hs;
    total = nreg + E_COUNT;
    vf->cases = calloc(total / shard_n + 1u, sizeof *vf->cases);
    if (vf->cases == NULL) {
        snprintf(err, errlen, "out of memory");
        return KVQ_E_NOMEM;
    }
    for (k = shard_i; k < total; k += shard_n) {
        kvq_vcase *c = &vf->cases[vf->ncases];
        kvq_status st = k < nreg ? make_regular(c, tag, seed, k, smoke)
                                 : make_error(c, tag, seed, k, k - nreg);
        if (st != KVQ_OK) {
            kvq_vfile_free(vf);
            snprintf(err, errlen, "case %u: %s", k, kvq_status_str(st));
            return st;
        }
        vf->ncases++;
    }
    return KVQ_OK;
}

/* ==== CERT family [VEC-CERT-07] ==============================================
 *
 * Ordinals: keys cases, then values cases, then decode steps, then error
 * cases; case k draws from its own generator seeded from (seed, k) as above.
 * Every input is a binary16 number (held as binary32) except where an error
 * case plants a defect.  Expected outputs: kvq_exact_cert_quantize_keys,
 * kvq_exact_cert_quantize_values and kvq_exact_cert_annotate (MPFR); a step
 * has no expected output but its status: its verdict is the exact judge's
 * (verify.c).  */

/* RN16 by the exact path; a value beyond the binary16 range is clamped to the
 * largest finite one (the generators never ask for more). */
static float f16(float x)
{
    int ov;
    float y = kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov);
    return ov ? copysignf(0x1.ffcp+15f, x) : y;
}

static int is_f16(float x)
{
    int ov;
    return isfinite(x) && kvq_f32_same(kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov), x) && !ov;
}

enum {
    CD_UNIFORM, CD_NORMALISH, CD_TIES, CD_CONSTANT, CD_TINY, CD_HUGE, CD_OUTLIER, CD_MIXED,
    CD_COUNT
};
static const char *const CD_NAMES[CD_COUNT] = {
    "uniform", "normalish", "ties", "constant", "tiny", "huge", "outlier", "mixed",
};

/* Fill m binary16 values (stride apart) of one key block-channel (m = 16) or
 * one value group (m = 16), distribution dist.  span: the code span the ties
 * family targets (255 for keys [CERT-K8-01], 15 for values [CERT-V4-01]). */
static void fill16(float *x, size_t stride, uint32_t m, int dist, uint32_t span, kvq_rng *r)
{
    if (dist == CD_MIXED) dist = (int)kvq_rng_below(r, CD_MIXED);
    switch (dist) {
    case CD_UNIFORM: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 13) - 6), off = a * rng_sym(r);
        for (uint32_t i = 0; i < m; i++) x[i * stride] = f16(off + a * rng_sym(r));
        break;
    }
    case CD_NORMALISH: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 7) - 4);
        for (uint32_t i = 0; i < m; i++)
            x[i * stride] = f16(a * (rng_sym(r) + rng_sym(r) + rng_sym(r)));
        break;
    }
    case CD_TIES: {
        /* min l = j s, max u = l + span s with s a power of two: the scale is
         * s exactly (keys: RN32(255 s / 255) = s; values: RN16(15 s / 15) = s)
         * and every odd multiple of s/2 above l is an exact .5 tie of the
         * code quotient.  |values| <= (64 + span) s on a grid of s/2: binary16. */
        float s = ldexpf(1.0f, (int)kvq_rng_below(r, 7) - 9);
        float l = s * (float)((int)kvq_rng_below(r, 129) - 64);
        for (uint32_t i = 0; i < m; i++)
            x[i * stride] = l + (s / 2.0f) * (float)kvq_rng_below(r, 2 * span + 1);
        x[0] = l;
        x[(m - 1) * stride] = l + s * (float)span;
        break;
    }
    case CD_CONSTANT: { /* zero range [CERT-K8-01] [POL-ZR-01] */
        float c = f16(ldexpf(rng_sym(r), (int)kvq_rng_below(r, 30) - 15));
        for (uint32_t i = 0; i < m; i++) x[i * stride] = c;
        break;
    }
    case CD_TINY: {
        /* binary16 subnormals (multiples of 2^-24): tiny ranges, value scales
         * that underflow binary16 (RN16(r/15) < 2^-14 zeroes the group) */
        int base = (int)kvq_rng_below(r, 2047) - 1023, w = 1 + (int)kvq_rng_below(r, 400);
        for (uint32_t i = 0; i < m; i++) {
            int v = base + (int)kvq_rng_below(r, (uint32_t)w);
            if (v > 1023) v = 1023;
            x[i * stride] = ldexpf((float)v, -24);
        }
        break;
    }
    case CD_HUGE: { /* the largest binary16 magnitudes: +-65504 ranges */
        for (uint32_t i = 0; i < m; i++) {
            uint32_t pick = kvq_rng_below(r, 4);
            float v = pick == 0 ? 0x1.ffcp+15f : pick == 1 ? -0x1.ffcp+15f
                                                           : f16(0x1.ffcp+15f * rng_sym(r));
            x[i * stride] = v;
        }
        break;
    }
    default: { /* CD_OUTLIER */
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 6) - 3);
        for (uint32_t i = 0; i < m; i++) x[i * stride] = f16(a * rng_sym(r));
        x[kvq_rng_below(r, m) * stride] =
            f16(a * (float)(64 + kvq_rng_below(r, 1024)) * (kvq_rng_below(r, 2) ? 1.0f : -1.0f));
        break;
    }
    }
}

static const uint32_t CERT_D_SMOKE[3] = { 16, 32, 64 };
static const uint32_t CERT_D_STD[7] = { 16, 32, 48, 64, 128, 256, 512 };

/* A shape with ragged tails: n = 16 nfull + tail, n < 16 one time in eight. */
static void cert_shape(kvq_cert_shape *s, kvq_rng *r, int smoke)
{
    uint32_t nfull, tail;
    s->dim = smoke ? CERT_D_SMOKE[kvq_rng_below(r, 3)] : CERT_D_STD[kvq_rng_below(r, 7)];
    nfull = kvq_rng_below(r, 8) == 0 ? 0u : 1u + kvq_rng_below(r, smoke ? 2 : (s->dim >= 256 ? 2 : 4));
    tail = kvq_rng_below(r, 16);
    s->tokens = 16u * nfull + tail;
    if (s->tokens == 0) s->tokens = 1u + kvq_rng_below(r, 15);
}

/* Fill [n][d]: block-channels (keys) or token groups (values) of the full
 * blocks by fill16, the residual tokens as plain binary16 data. */
static void cert_fill(float *x, const kvq_cert_shape *s, int keys, int dist, kvq_rng *r)
{
    uint32_t n = s->tokens, d = s->dim, nq = kvq_cert_full_blocks(s);
    for (uint32_t b = 0; b < nq; b++) {
        if (keys) {
            for (uint32_t c = 0; c < d; c++)
                fill16(x + kvq_cert_in_index(s, 16u * b, c), d, 16u, dist, 255u, r);
        } else {
            for (uint32_t t = 16u * b; t < 16u * b + 16u; t++)
                for (uint32_t j = 0; j < d / 16u; j++)
                    fill16(x + kvq_cert_in_index(s, t, 16u * j), 1, 16u, dist, 15u, r);
        }
    }
    for (uint32_t t = 16u * nq; t < n; t++)
        for (uint32_t c = 0; c < d; c++) x[kvq_cert_in_index(s, t, c)] = f16(rng_sym(r));
}

/* Expected outputs of a cert-keys or cert-values case from the exact path;
 * an exact-path error makes it an error case expecting that status. */
static kvq_status cert_solve(kvq_vcase *c)
{
    const kvq_cert_shape *s = &c->cshape;
    uint64_t nb = kvq_vcase_cert_code_bytes(c), namb = 0, ne;
    uint8_t *real = NULL, *alt = NULL;
    float *khat = NULL;
    kvq_status st;
    if (c->op == KVQ_OP_CERT_KEYS) {
        kvq_exact_cert_keys_out o;
        memset(&o, 0, sizeof o);
        ne = nb;
        o.codes = (int8_t *)c->codes, o.sigma = c->scale, o.z = c->zero;
        o.khat = khat = malloc((ne ? ne : 1) * sizeof *khat);
        o.code_real = malloc(ne ? ne : 1), o.code_alt = malloc(ne ? ne : 1);
        real = (uint8_t *)o.code_real, alt = (uint8_t *)o.code_alt;
        if (!khat || !real || !alt) { st = KVQ_E_NOMEM; goto out; }
        st = kvq_exact_cert_quantize_keys(&o, c->x, s, &c->pol);
        if (st == KVQ_OK) {
            c->flags = o.flags;
            memcpy(c->real, real, nb);  /* token-major = row-major over 16 nq tokens */
        }
    } else {
        kvq_exact_kivi_out o;
        kvq_kivi_shape ks = kvq_cert_value_kivi_shape(s);
        memset(&o, 0, sizeof o);
        ne = (uint64_t)kvq_cert_quant_tokens(s) * s->dim;
        o.codes = c->codes, o.scale = c->scale, o.zero = c->zero;
        o.deq = khat = malloc((ne ? ne : 1) * sizeof *khat);
        o.code_real = real = malloc(ne ? ne : 1), o.code_alt = alt = malloc(ne ? ne : 1);
        if (!khat || !real || !alt) { st = KVQ_E_NOMEM; goto out; }
        st = kvq_exact_cert_quantize_values(&o, c->x, s, &c->pol);
        if (st == KVQ_OK) {
            c->flags = o.flags;
            memset(c->real, 0, nb);
            for (uint64_t g = 0; g < kvq_cert_value_groups(s); g++)
                for (uint32_t i = 0; i < KVQ_CERT_VGROUP; i++)
                    kvq_pack_code(c->real + g * kvq_cert_value_group_bytes(), i, KVQ_CERT_VBITS,
                                  real[kvq_kivi_elem_index(&ks, g, i)]);
            st = kvq_exact_cert_annotate(c->eta, c->nu, c->x, c->codes, c->scale, c->zero, s);
        }
    }
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) {
        st = as_error_case(c, st);
        goto out;
    }
    for (uint64_t e = 0; e < ne; e++) namb += real[e] != alt[e];
    c->namb = namb;
    if (namb) {
        uint64_t k = 0;
        c->amb_idx = malloc(namb * sizeof *c->amb_idx);
        c->amb_alt = malloc(namb);
        if (!c->amb_idx || !c->amb_alt) { st = KVQ_E_NOMEM; goto out; }
        for (uint64_t e = 0; e < ne; e++)
            if (real[e] != alt[e]) c->amb_idx[k] = e, c->amb_alt[k++] = alt[e];
    }
out:
    free(khat), free(real), free(alt);
    return st;
}

static kvq_status make_cert_quant(kvq_vcase *c, const char *tag, uint64_t seed, uint32_t k,
                                  uint32_t j, int keys, int smoke)
{
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
    int dist;
    memset(c, 0, sizeof *c);
    (void)kvq_rng_next(&r);
    c->op = keys ? KVQ_OP_CERT_KEYS : KVQ_OP_CERT_VALUES;
    c->level = j % 2u;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    cert_shape(&c->cshape, &r, smoke);
    dist = (int)((j / 2u + kvq_rng_below(&r, 2)) % CD_COUNT);
    snprintf(c->id, sizeof c->id, "cert-%s-%05u-%s-%s", tag, k, keys ? "keys" : "values", CD_NAMES[dist]);
    c->status = KVQ_OK;
    if (kvq_vcase_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    cert_fill(c->x, &c->cshape, keys, dist, &r);
    return cert_solve(c);
}

/* The expected status of a step [VEC-CERT-04]: the parameters and scale
 * ([CERT-DUMP-03], [CERT-L-01]: KVQ_E_PARAM), the shape (KVQ_E_SHAPE), then a
 * non-finite q, K or V value (KVQ_E_NONFINITE), then a finite one that is not
 * binary16 (KVQ_E_PARAM) [CERT-L-02]. */
static int step_status(const kvq_vcase *c)
{
    const kvq_cert_params *p = &c->prm;
    const kvq_cert_shape *s = &c->cshape;
    uint64_t n = (uint64_t)s->tokens * s->dim;
    if (!(p->tau > 0.0f && p->tau <= 1.0f) || p->kmin < 1u || p->kmin > p->kmax ||
        !(p->vtol >= 0.0f) || isinf(p->vtol) || !(p->eps_guard >= 0.0f) || isinf(p->eps_guard) ||
        !(p->eps_dense >= 0.0f) || p->r < 1u || p->start_rung > 4u)
        return KVQ_E_PARAM;
    if (!isfinite(c->qscale) || !(c->qscale >= 0x1p-126f)) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(s)) return KVQ_E_SHAPE;
    for (uint32_t i = 0; i < s->dim; i++) if (!isfinite(c->q[i])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(c->x[e]) || !isfinite(c->vin[e])) return KVQ_E_NONFINITE;
    for (uint32_t i = 0; i < s->dim; i++) if (!is_f16(c->q[i])) return KVQ_E_PARAM;
    for (uint64_t e = 0; e < n; e++)
        if (!is_f16(c->x[e]) || !is_f16(c->vin[e])) return KVQ_E_PARAM;
    return KVQ_OK;
}

enum { SK_RANDOM, SK_SINKS, SK_NEEDLE, SK_UNIFORM, SK_CONC, SK_COUNT };
static const char *const SK_NAMES[SK_COUNT] = { "random", "sinks", "needle", "near-uniform",
                                                "concentrated" };

/* Step inputs of one head kind: q and V uniform; K by kind (attention sinks
 * at the first tokens, one needle token aligned with q, near-uniform
 * attention from tiny keys, one block of large aligned keys). */
static void step_fill(kvq_vcase *c, int kind, kvq_rng *r)
{
    const kvq_cert_shape *s = &c->cshape;
    uint32_t n = s->tokens, d = s->dim, hot = kvq_rng_below(r, n);
    float kw = kind == SK_UNIFORM ? 0x1p-6f : 1.0f;
    for (uint32_t i = 0; i < d; i++) c->q[i] = f16(rng_sym(r));
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            uint64_t e = kvq_cert_in_index(s, t, i);
            int aligned = (kind == SK_SINKS && t < 1u + n / 32u) || (kind == SK_NEEDLE && t == hot) ||
                          (kind == SK_CONC && t / 16u == hot / 16u);
            c->x[e] = aligned ? f16(4.0f * c->q[i] + 0x1p-3f * rng_sym(r)) : f16(kw * rng_sym(r));
            c->vin[e] = f16(rng_sym(r));
        }
}

/* Parameter sets of the steps [CERT-SEL-03] [CERT-PROM-01..02]. */
static void step_params(kvq_cert_params *p, uint32_t which)
{
    *p = kvq_cert_default_params();
    switch (which % 4u) {
    case 1: p->tau = 0x1.ccccccp-1f; p->kmin = 1; p->kmax = 3; break; /* RN32(0.9) */
    case 2: p->promote_budget = 0; p->tau = 0x1.fffefap-1f; break;   /* RN32(0.99999) */
    case 3: p->kmin = 4; p->kmax = 4; p->eps_guard = 0x1p-4f; p->r = 2; break;
    default: break;                                                    /* the paper's defaults */
    }
}

static kvq_status make_cert_step(kvq_vcase *c, const char *tag, uint64_t seed, uint32_t k,
                                 uint32_t j, int smoke)
{
    static const uint32_t D_SMOKE[2] = { 16, 32 };
    static const uint32_t D_STD[4] = { 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
    int kind;
    memset(c, 0, sizeof *c);
    (void)kvq_rng_next(&r);
    c->op = KVQ_OP_CERT_STEP;
    c->level = KVQ_LEVEL_BOUNDED;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    c->cshape.dim = smoke ? D_SMOKE[kvq_rng_below(&r, 2)] : D_STD[kvq_rng_below(&r, 4)];
    c->cshape.tokens = 1u + kvq_rng_below(&r, smoke ? 64 : (c->cshape.dim >= 128 ? 96 : 160));
    kind = (int)(j % SK_COUNT);
    step_params(&c->prm, j / SK_COUNT + kvq_rng_below(&r, 2));
    /* scale: the binary32 nearest 1/sqrt(d) via binary64 (a double rounding
     * is harmless: any positive normal binary32 is a valid scale [CERT-L-01]) */
    c->qscale = (float)(1.0 / sqrt((double)c->cshape.dim));
    snprintf(c->id, sizeof c->id, "cert-%s-%05u-step-%s", tag, k, SK_NAMES[kind]);
    if (kvq_vcase_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    step_fill(c, kind, &r);
    c->status = step_status(c);
    return KVQ_OK;
}

/* Error cases: one defect each, so that no order among the checks is assumed. */
enum {
    CE_K_NAN, CE_K_PINF, CE_K_NOT16, CE_K_DIM20, CE_K_DIM528, CE_K_EMPTY, CE_K_RESID_NAN,
    CE_V_NINF, CE_V_NOT16, CE_V_DIM24, CE_V_NAN,
    CE_S_QNAN, CE_S_VINF, CE_S_KNOT16, CE_S_QNOT16, CE_S_SCALE0, CE_S_SCALESUB, CE_S_TAU0,
    CE_S_TAU2, CE_S_KMIN0, CE_S_KMINMAX, CE_S_DIM8, CE_S_EMPTY, CE_COUNT
};
static const char *const CE_NAMES[CE_COUNT] = {
    "keys-nan", "keys-pinf", "keys-not-binary16", "keys-dim20", "keys-dim528", "keys-empty",
    "keys-residual-nan", "values-ninf", "values-not-binary16", "values-dim24", "values-nan",
    "step-q-nan", "step-v-inf", "step-k-not-binary16", "step-q-not-binary16", "step-scale-zero",
    "step-scale-subnormal", "step-tau-zero", "step-tau-above-one", "step-kmin-zero",
    "step-kmin-above-kmax", "step-dim8", "step-empty",
};

static kvq_status make_cert_error(kvq_vcase *c, const char *tag, uint64_t seed, uint32_t k,
                                  uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    kvq_cert_shape *s = &c->cshape;
    uint64_t n;
    memset(c, 0, sizeof *c);
    (void)kvq_rng_next(&r);
    c->op = which < CE_V_NINF ? KVQ_OP_CERT_KEYS : which < CE_S_QNAN ? KVQ_OP_CERT_VALUES : KVQ_OP_CERT_STEP;
    c->level = c->op == KVQ_OP_CERT_STEP ? KVQ_LEVEL_BOUNDED : which % 2u;
    c->pol = kvq_policy_default;
    s->tokens = 32;
    s->dim = 16;
    switch (which) {
    case CE_K_DIM20: s->dim = 20; break;
    case CE_K_DIM528: s->dim = 528; break;
    case CE_K_EMPTY: case CE_S_EMPTY: s->tokens = 0; break;
    case CE_K_RESID_NAN: s->tokens = 37; break;
    case CE_V_DIM24: s->dim = 24; break;
    case CE_S_DIM8: s->dim = 8; break;
    default: break;
    }
    if (c->op == KVQ_OP_CERT_STEP) {
        step_params(&c->prm, 0);
        c->qscale = 0x1p-2f;
        if (which == CE_S_SCALE0) c->qscale = 0.0f;
        if (which == CE_S_SCALESUB) c->qscale = 0x1p-130f;
        if (which == CE_S_TAU0) c->prm.tau = 0.0f;
        if (which == CE_S_TAU2) c->prm.tau = 2.0f;
        if (which == CE_S_KMIN0) c->prm.kmin = 0;
        if (which == CE_S_KMINMAX) c->prm.kmin = 5, c->prm.kmax = 4;
    }
    snprintf(c->id, sizeof c->id, "cert-%s-%05u-err-%s", tag, k, CE_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_vcase_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    n = (uint64_t)s->tokens * s->dim;
    for (uint64_t e = 0; e < n; e++) {
        c->x[e] = f16(rng_sym(&r));
        if (c->vin) c->vin[e] = f16(rng_sym(&r));
    }
    if (c->q) for (uint32_t i = 0; i < s->dim; i++) c->q[i] = f16(rng_sym(&r));
    if (n) {
        uint64_t at = kvq_rng_next(&r) % n;
        switch (which) {
        case CE_K_NAN: case CE_V_NAN: c->x[at] = NAN; break;
        case CE_K_PINF: c->x[at] = INFINITY; break;
        case CE_V_NINF: c->x[at] = -INFINITY; break;
        case CE_K_NOT16: case CE_V_NOT16: case CE_S_KNOT16: c->x[at] = 1.0f + 0x1p-20f; break;
        case CE_K_RESID_NAN: c->x[n - 1] = NAN; break;  /* the residual block is checked too */
        case CE_S_QNAN: c->q[0] = NAN; break;
        case CE_S_VINF: c->vin[at] = INFINITY; break;
        case CE_S_QNOT16: c->q[s->dim - 1] = 0x1.000002p-1f; break;
        default: break;
        }
    }
    if (c->op == KVQ_OP_CERT_STEP) {
        c->status = step_status(c);
        return KVQ_OK;
    }
    return cert_solve(c); /* the exact path's status, or its outputs if it accepts */
}

kvq_status kvq_gen_cert(kvq_vfile *vf, const char *levels, uint64_t seed, uint32_t shard_i,
                        uint32_t shard_n, char *err, size_t errlen)
{
    int smoke;
    uint32_t nkeys, nvals, nsteps, total, k;
    const char *tag;
    memset(vf, 0, sizeof *vf);
    if (strcmp(levels, "smoke") == 0) {
        smoke = 1, nkeys = 24, nvals = 24, nsteps = 10, tag = "smoke";
    } else if (strcmp(levels, "standard") == 0) {
        smoke = 0, nkeys = 112, nvals = 112, nsteps = 40, tag = "std";
    } else {
        snprintf(err, errlen, "unknown level set '%s' (smoke|standard)", levels);
        return KVQ_E_PARAM;
    }
    kvq_status hs = vf_header(vf, "cert", levels, seed, shard_i, shard_n, err, errlen);
    if (hs != KVQ_OK) return hs;
    vf->fam = KVQ_FAMILY_CERT;
    total = nkeys + nvals + nsteps + CE_COUNT;
    vf->cases = calloc(total / shard_n + 1u, sizeof *vf->cases);
    if (vf->cases == NULL) {
        snprintf(err, errlen, "out of memory");
        return KVQ_E_NOMEM;
    }
    for (k = shard_i; k < total; k += shard_n) {
        kvq_vcase *c = &vf->cases[vf->ncases];
        kvq_status st;
        if (k < nkeys) st = make_cert_quant(c, tag, seed, k, k, 1, smoke);
        else if (k < nkeys + nvals) st = make_cert_quant(c, tag, seed, k, k - nkeys, 0, smoke);
        else if (k < nkeys + nvals + nsteps) st = make_cert_step(c, tag, seed, k, k - nkeys - nvals, smoke);
        else st = make_cert_error(c, tag, seed, k, k - nkeys - nvals - nsteps);
        if (st != KVQ_OK) {
            kvq_vfile_free(vf);
            snprintf(err, errlen, "case %u: %s", k, kvq_status_str(st));
            return st;
        }
        vf->ncases++;
    }
    return KVQ_OK;
}
