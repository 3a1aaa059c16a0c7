/*
 * vidkv_stream.c -- the VIDKV residual window composed (spec/vidkv.md
 * [VIDKV-W-01..02]): prefill (values with STP when p > 0), then decoded
 * tokens, each flush of G tokens made of quantizers and dequantizers, keys
 * requantized or appended (kflush), values appended or requantized (vflush),
 * plain ternary.  The composition runs over a table of stage callbacks
 * (vidkv_stream.h): kvq_vidkv_stream is it over host memory and the fast
 * path's calls; the CUDA subject's vidkv_stream is it over device memory and
 * the device launchers [VIDKV-DEV-05], so the two cannot drift apart.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_vidkv.h"
#include "vidkv_stream.h"

/* ---- the host stages: the fast path ----------------------------------------- */

/* One key quantization of x [H][T][d] and its dequantization into y. */
static kvq_status keys_round_trip(void *ctx, float *y, uint32_t *flags, const float *x,
                                  const kvq_vidkv_params *p, const kvq_policy *pol)
{
    kvq_vidkv_keys s;
    uint32_t f = 0, df = 0;
    kvq_status st;
    (void)ctx;
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
static kvq_status values_round_trip(void *ctx, float *y, uint32_t *flags, const float *x,
                                    const kvq_vidkv_params *p, const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    kvq_vidkv_values s;
    uint32_t f = 0, df = 0, np = 0;
    kvq_status st = KVQ_E_NOMEM;
    kvq_vidkv_params q = *p;
    (void)ctx;
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

static void *host_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

static void host_release(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static kvq_status host_out(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    memcpy(dst, src, n);
    return KVQ_OK;
}

static kvq_status host_copy2d(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t w,
                              uint32_t rows)
{
    (void)ctx;
    for (uint32_t r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * dpitch, (const char *)src + (size_t)r * spitch, w);
    return KVQ_OK;
}

/* ---- the composition ----------------------------------------------------------- */

/* dst [H][n][d] = rows [t0, t0 + n) of src [H][T][d]. */
static kvq_status take(const kvq_vidkv_stream_ops *o, float *dst, const float *src, uint32_t H, uint32_t T,
                       uint32_t d, uint32_t t0, uint32_t n)
{
    return o->copy2d(o->ctx, dst, (size_t)n * d * sizeof *dst, src + (size_t)t0 * d, (size_t)T * d * sizeof *src,
                     (size_t)n * d * sizeof *dst, H);
}

/* cache [H][q][d] followed by blk [H][n][d], into out [H][q+n][d]. */
static kvq_status concat(const kvq_vidkv_stream_ops *o, float *out, const float *cache, const float *blk,
                         uint32_t H, uint32_t q, uint32_t n, uint32_t d)
{
    const size_t row = (size_t)(q + n) * d * sizeof *out;
    kvq_status st = KVQ_OK;
    if (q > 0u) st = o->copy2d(o->ctx, out, row, cache, (size_t)q * d * sizeof *cache, (size_t)q * d * sizeof *cache, H);
    if (st == KVQ_OK)
        st = o->copy2d(o->ctx, out + (size_t)q * d, row, blk, (size_t)n * d * sizeof *blk, (size_t)n * d * sizeof *blk,
                       H);
    return st;
}

/* One cache's step: REQUANT requantizes the cache followed by the block; the
 * other quantizes the block alone and appends it.  cache holds [H][q][d]
 * and afterwards [H][q + n][d] (n = the block's tokens). */
static kvq_status step(const kvq_vidkv_stream_ops *o, float *cache, uint32_t *flags, const float *blk, uint32_t q,
                       uint32_t n, int requant, int keys, kvq_vidkv_params p, const kvq_vidkv_stp *stp,
                       const kvq_policy *pol, float *tmp, float *tmp2)
{
    kvq_status st;
    const uint32_t H = p.heads, d = p.dim;
    const size_t all = (size_t)H * (q + n) * d * sizeof *cache;
    if (requant) {
        if ((st = concat(o, tmp, cache, blk, H, q, n, d)) != KVQ_OK) return st;
        p.tokens = q + n;
        st = keys ? o->keys(o->ctx, tmp2, flags, tmp, &p, pol) : o->values(o->ctx, tmp2, flags, tmp, &p, NULL, pol);
        if (st == KVQ_OK) st = o->copy2d(o->ctx, cache, all, tmp2, all, all, 1u);
        return st;
    }
    p.tokens = n;
    st = keys ? o->keys(o->ctx, tmp2, flags, blk, &p, pol) : o->values(o->ctx, tmp2, flags, blk, &p, stp, pol);
    if (st == KVQ_OK) st = concat(o, tmp, cache, tmp2, H, q, n, d);
    if (st == KVQ_OK) st = o->copy2d(o->ctx, cache, all, tmp, all, all, 1u);
    return st;
}

kvq_status kvq_vidkv_stream_compose(const kvq_vidkv_stream_ops *o, float *kdeq, float *vdeq,
                                    uint32_t *flags, const float *k, const float *v,
                                    const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                                    const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_window w;
    uint64_t N, n;
    uint32_t f = 0, Tq, Tp, H, d, G, flush;
    int with_stp;
    float *kc = NULL, *vc = NULL, *blk = NULL, *tmp = NULL, *tmp2 = NULL, *wk = NULL, *wv = NULL, *wxs = NULL;
    const float *ik = k, *iv = v;
    kvq_vidkv_stp wstp;
    size_t cb;
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
    cb = (size_t)H * Tq * d * sizeof *kc;
    kc = o->alloc(o->ctx, cb);
    vc = o->alloc(o->ctx, cb);
    blk = o->alloc(o->ctx, cb);
    tmp = o->alloc(o->ctx, cb);
    tmp2 = o->alloc(o->ctx, cb);
    if (!kc || !vc || !blk || !tmp || !tmp2) { st = KVQ_E_NOMEM; goto out; }
    memset(&wstp, 0, sizeof wstp);
    if (with_stp) wstp = *stp;
    if (o->stage_in != NULL) { /* the inputs into working memory */
        wk = o->alloc(o->ctx, (size_t)n * sizeof *wk);
        wv = o->alloc(o->ctx, (size_t)n * sizeof *wv);
        if (with_stp) wxs = o->alloc(o->ctx, (size_t)stp->rows * stp->ds * sizeof *wxs);
        if (!wk || !wv || (with_stp && !wxs)) { st = KVQ_E_NOMEM; goto out; }
        if ((st = o->stage_in(o->ctx, wk, k, (size_t)n * sizeof *wk)) != KVQ_OK ||
            (st = o->stage_in(o->ctx, wv, v, (size_t)n * sizeof *wv)) != KVQ_OK ||
            (with_stp && (st = o->stage_in(o->ctx, wxs, stp->xs, (size_t)stp->rows * stp->ds * sizeof *wxs)) != KVQ_OK))
            goto out;
        ik = wk;
        iv = wv;
        if (with_stp) wstp.xs = wxs;
    }
    /* [VIDKV-W-01]: the first L - L mod G tokens, quantized as one cache */
    if ((st = kvq_vidkv_window_prefill(&w, G, prefill)) != KVQ_OK) goto out;
    if (w.quantized > 0u) {
        if ((st = take(o, blk, ik, H, (uint32_t)N, d, 0u, w.quantized)) != KVQ_OK) goto out;
        if ((st = step(o, kc, &f, blk, 0u, w.quantized, 0, 1, p, NULL, pol, tmp, tmp2)) != KVQ_OK) goto out;
        if ((st = take(o, blk, iv, H, (uint32_t)N, d, 0u, w.quantized)) != KVQ_OK) goto out;
        if ((st = step(o, vc, &f, blk, 0u, w.quantized, 0, 0, p, with_stp ? &wstp : NULL, pol, tmp, tmp2)) != KVQ_OK)
            goto out;
    }
    /* [VIDKV-W-02]: each decoded token joins the residual; G of them flush */
    for (uint32_t i = 0; i < decode; i++) {
        uint32_t q = w.quantized;
        if ((st = kvq_vidkv_window_append(&w, &flush)) != KVQ_OK) goto out;
        if (!flush) continue;
        if ((st = take(o, blk, ik, H, (uint32_t)N, d, q, G)) != KVQ_OK) goto out;
        if ((st = step(o, kc, &f, blk, q, G, p.kflush == KVQ_VIDKV_KFLUSH_REQUANT, 1, p, NULL, pol, tmp, tmp2)) !=
            KVQ_OK)
            goto out;
        if ((st = take(o, blk, iv, H, (uint32_t)N, d, q, G)) != KVQ_OK) goto out;
        if ((st = step(o, vc, &f, blk, q, G, p.vflush == KVQ_VIDKV_VFLUSH_REQUANT, 0, p, NULL, pol, tmp, tmp2)) !=
            KVQ_OK)
            goto out;
    }
    /* the outputs only after every step succeeded */
    if ((st = o->stage_out(o->ctx, kdeq, kc, cb)) != KVQ_OK) goto out;
    if ((st = o->stage_out(o->ctx, vdeq, vc, cb)) != KVQ_OK) goto out;
    if (flags != NULL) *flags = f;
out:
    o->release(o->ctx, kc);
    o->release(o->ctx, vc);
    o->release(o->ctx, blk);
    o->release(o->ctx, tmp);
    o->release(o->ctx, tmp2);
    o->release(o->ctx, wk);
    o->release(o->ctx, wv);
    o->release(o->ctx, wxs);
    return st;
}

static const kvq_vidkv_stream_ops HOST_OPS = {
    NULL, host_alloc, host_release, NULL, host_out, host_copy2d, keys_round_trip, values_round_trip,
};

kvq_status kvq_vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                            const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                            const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_stream_compose(&HOST_OPS, kdeq, vdeq, flags, k, v, stp, prefill, decode, prm, pol);
}
