/*
 * vidkv_stream.c -- the VIDKV residual window composed (spec/vidkv.md
 * [VIDKV-W-01..02]): prefill (values with STP when p > 0), then decoded
 * tokens, each flush of G tokens made of the fast path's quantizers and
 * dequantizers, keys requantized or appended (kflush), values appended or
 * requantized (vflush), plain ternary.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_vidkv.h"

/* One key quantization of x [H][T][d] and its dequantization into y. */
static kvq_status keys_round_trip(float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                  const kvq_policy *pol)
{
    kvq_vidkv_keys s;
    uint32_t f = 0, df = 0;
    kvq_status st;
    s.mask = calloc(kvq_vidkv_mask_bytes(p) + 1u, 1);
    s.abn_codes = calloc(kvq_vidkv_abn_code_bytes(p) + 1u, 1);
    s.abn_scale = calloc(kvq_vidkv_abn_groups(p) + 1u, 4);
    s.abn_zero = calloc(kvq_vidkv_abn_groups(p) + 1u, 4);
    s.nrm_codes = calloc(kvq_vidkv_nrm_code_bytes(p) + 1u, 1);
    s.nrm_scale = calloc(kvq_vidkv_nrm_groups(p) + 1u, 4);
    s.nrm_zero = calloc(kvq_vidkv_nrm_groups(p) + 1u, 4);
    st = KVQ_E_NOMEM;
    if (s.mask && s.abn_codes && s.abn_scale && s.abn_zero && s.nrm_codes && s.nrm_scale && s.nrm_zero) {
        st = kvq_vidkv_quantize_keys(&s, &f, x, p, pol);
        if (st == KVQ_OK) st = kvq_vidkv_dequantize_keys(y, &df, &s, p, pol);
        if (st == KVQ_OK) *flags |= f;
    }
    free(s.mask);
    free(s.abn_codes);
    free(s.abn_scale);
    free(s.abn_zero);
    free(s.nrm_codes);
    free(s.nrm_scale);
    free(s.nrm_zero);
    return st;
}

/* One value quantization of x [H][T][d] (with STP when stp is not NULL),
 * dequantized into y. */
static kvq_status values_round_trip(float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                    const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    kvq_vidkv_values s;
    uint32_t f = 0, df = 0, np = 0;
    kvq_status st = KVQ_E_NOMEM;
    kvq_vidkv_params q = *p;
    if (stp == NULL) q.protect = 0.0f;
    else np = kvq_vidkv_prot_count(q.protect, stp->vis_count);
    memset(&s, 0, sizeof s);
    s.tern = calloc(kvq_vidkv_tern_code_bytes(&q, np) + 1u, 1);
    s.beta = calloc(kvq_vidkv_tern_groups(&q, np) + 1u, 4);
    s.prot = calloc(kvq_vidkv_prot_mask_bytes(&q) + 1u, 1);
    s.p_codes = calloc(kvq_vidkv_prot_code_bytes(&q, np) + 1u, 1);
    s.p_scale = calloc(kvq_vidkv_prot_groups(&q, np) + 1u, 4);
    s.p_zero = calloc(kvq_vidkv_prot_groups(&q, np) + 1u, 4);
    if (s.tern && s.beta && s.prot && s.p_codes && s.p_scale && s.p_zero) {
        st = kvq_vidkv_quantize_values(&s, &np, &f, x, &q, stp, pol);
        if (st == KVQ_OK) st = kvq_vidkv_dequantize_values(y, &df, &s, np, &q, pol);
        if (st == KVQ_OK) *flags |= f;
    }
    free(s.tern);
    free(s.beta);
    free(s.prot);
    free(s.p_codes);
    free(s.p_scale);
    free(s.p_zero);
    return st;
}

/* dst [H][n][d] = rows [t0, t0 + n) of src [H][T][d]. */
static void take(float *dst, const float *src, uint32_t H, uint32_t T, uint32_t d, uint32_t t0, uint32_t n)
{
    for (uint32_t h = 0; h < H; h++)
        memcpy(dst + (size_t)h * n * d, src + ((size_t)h * T + t0) * d, (size_t)n * d * sizeof *dst);
}

/* cache [H][q][d] (capacity Tq) followed by blk [H][G][d], into out [H][q+G][d]. */
static void concat(float *out, const float *cache, const float *blk, uint32_t H, uint32_t q, uint32_t G,
                   uint32_t d)
{
    for (uint32_t h = 0; h < H; h++) {
        memcpy(out + (size_t)h * (q + G) * d, cache + (size_t)h * q * d, (size_t)q * d * sizeof *out);
        memcpy(out + ((size_t)h * (q + G) + q) * d, blk + (size_t)h * G * d, (size_t)G * d * sizeof *out);
    }
}

/* One cache's step: REQUANT requantizes the cache followed by the block; the
 * other quantizes the block alone and appends it.  cache holds [H][q][d]
 * and afterwards [H][q + n][d] (n = the block's tokens). */
static kvq_status step(float *cache, uint32_t *flags, const float *blk, uint32_t q, uint32_t n, int requant,
                       int keys, kvq_vidkv_params p, const kvq_vidkv_stp *stp, const kvq_policy *pol, float *tmp,
                       float *tmp2)
{
    kvq_status st;
    uint32_t H = p.heads, d = p.dim;
    if (requant) {
        concat(tmp, cache, blk, H, q, n, d);
        p.tokens = q + n;
        st = keys ? keys_round_trip(tmp2, flags, tmp, &p, pol) : values_round_trip(tmp2, flags, tmp, &p, NULL, pol);
        if (st == KVQ_OK) memcpy(cache, tmp2, (size_t)H * (q + n) * d * sizeof *cache);
        return st;
    }
    p.tokens = n;
    st = keys ? keys_round_trip(tmp2, flags, blk, &p, pol) : values_round_trip(tmp2, flags, blk, &p, stp, pol);
    if (st != KVQ_OK) return st;
    concat(tmp, cache, tmp2, H, q, n, d);
    memcpy(cache, tmp, (size_t)H * (q + n) * d * sizeof *cache);
    return KVQ_OK;
}

kvq_status kvq_vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                            const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                            const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_window w;
    uint64_t N, n;
    uint32_t f = 0, Tq, Tp, H, d, G, flush;
    int with_stp;
    float *kc = NULL, *vc = NULL, *blk = NULL, *tmp = NULL, *tmp2 = NULL;
    kvq_status st;
    if (kdeq == NULL || vdeq == NULL || k == NULL || v == NULL || prm == NULL) return KVQ_E_PARAM;
    p = *prm;
    p.tokens = p.group;                 /* not read: the extent is prefill + decode */
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(&p)) return KVQ_E_PARAM;
    N = (uint64_t)prefill + decode;
    if (!kvq_vidkv_shape_ok(&p) || N < p.group || N > KVQ_VIDKV_MAX_TOKENS) return KVQ_E_SHAPE;
    H = p.heads;
    d = p.dim;
    G = p.group;
    n = (uint64_t)H * N * d;
    Tp = prefill - prefill % G;
    with_stp = p.protect > 0.0f;
    if (with_stp && (stp == NULL || stp->xs == NULL)) return KVQ_E_PARAM;
    if (with_stp && (stp->ds == 0u || stp->ds > KVQ_VIDKV_MAX_SDIM || stp->rows < Tp ||
                     stp->rows > KVQ_VIDKV_MAX_TOKENS || stp->vis_count == 0u || stp->txt_count == 0u ||
                     (uint64_t)stp->vis_first + stp->vis_count > Tp ||
                     (uint64_t)stp->txt_first + stp->txt_count > stp->rows))
        return KVQ_E_SHAPE;
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(k[e]) || !isfinite(v[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; with_stp && e < (uint64_t)stp->rows * stp->ds; e++)
        if (!isfinite(stp->xs[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!(fabsf(k[e]) < KVQ_VIDKV_DOMAIN) || !(fabsf(v[e]) < KVQ_VIDKV_DOMAIN)) return KVQ_E_RANGE;
    for (uint64_t e = 0; with_stp && e < (uint64_t)stp->rows * stp->ds; e++)
        if (!(fabsf(stp->xs[e]) < KVQ_VIDKV_SDOMAIN)) return KVQ_E_RANGE;
    Tq = (uint32_t)(N - N % G);
    kc = malloc((size_t)H * Tq * d * sizeof *kc);
    vc = malloc((size_t)H * Tq * d * sizeof *vc);
    blk = malloc((size_t)H * Tq * d * sizeof *blk);
    tmp = malloc((size_t)H * Tq * d * sizeof *tmp);
    tmp2 = malloc((size_t)H * Tq * d * sizeof *tmp2);
    if (!kc || !vc || !blk || !tmp || !tmp2) { st = KVQ_E_NOMEM; goto out; }
    /* [VIDKV-W-01]: the first L - L mod G tokens, quantized as one cache */
    if ((st = kvq_vidkv_window_prefill(&w, G, prefill)) != KVQ_OK) goto out;
    if (w.quantized > 0u) {
        take(blk, k, H, (uint32_t)N, d, 0u, w.quantized);
        if ((st = step(kc, &f, blk, 0u, w.quantized, 0, 1, p, NULL, pol, tmp, tmp2)) != KVQ_OK) goto out;
        take(blk, v, H, (uint32_t)N, d, 0u, w.quantized);
        if ((st = step(vc, &f, blk, 0u, w.quantized, 0, 0, p, with_stp ? stp : NULL, pol, tmp, tmp2)) != KVQ_OK) goto out;
    }
    /* [VIDKV-W-02]: each decoded token joins the residual; G of them flush */
    for (uint32_t i = 0; i < decode; i++) {
        uint32_t q = w.quantized;
        if ((st = kvq_vidkv_window_append(&w, &flush)) != KVQ_OK) goto out;
        if (!flush) continue;
        take(blk, k, H, (uint32_t)N, d, q, G);
        if ((st = step(kc, &f, blk, q, G, p.kflush == KVQ_VIDKV_KFLUSH_REQUANT, 1, p, NULL, pol, tmp, tmp2)) != KVQ_OK)
            goto out;
        take(blk, v, H, (uint32_t)N, d, q, G);
        if ((st = step(vc, &f, blk, q, G, p.vflush == KVQ_VIDKV_VFLUSH_REQUANT, 0, p, NULL, pol, tmp, tmp2)) != KVQ_OK)
            goto out;
    }
    memcpy(kdeq, kc, (size_t)H * Tq * d * sizeof *kc);
    memcpy(vdeq, vc, (size_t)H * Tq * d * sizeof *vc);
    if (flags != NULL) *flags = f;
out:
    free(kc);
    free(vc);
    free(blk);
    free(tmp);
    free(tmp2);
    return st;
}
