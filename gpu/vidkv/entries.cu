/*
 * vidkv/entries.cu -- the VIDKV entries of the CUDA subject (gpu/subject_gpu.h,
 * spec/vidkv.md): the launchers of gpu/vidkv/ through host pointers, under the
 * names and signature version 1 of conformance/kvq_subject.h ("as
 * kvq_vidkv_quantize_keys", ...).
 *
 * Each entry checks its arguments in the reference's order [VIDKV-L-05] as far
 * as it needs them to size the device buffers (NULL pointers, policy and
 * parameters, extent, the arrays the parameters require), copies the inputs
 * in, runs the launcher and copies the outputs back only after KVQ_OK, so a
 * failed call writes nothing.  The keys entries cover every normal mode, the
 * FFT path on cuFFT at its bounded level [VIDKV-DEV-01].  The values entries
 * cover the ternary values and semantic token protection [VIDKV-DEV-03], the
 * score vectors copied in beside the values.  vidkv_stream is the composition
 * of ref/fast/vidkv_stream.c over the device launchers [VIDKV-DEV-05]: the same
 * checks in the same order (its input scans on the host, as the reference's),
 * then the prefill and every flush as device round trips, the key and value
 * caches kept on the device between them.
 */
#include <math.h>
#include <string.h>

#include "subject_gpu.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"
#include "devbuf.cuh"


static kvq_status pre_check(const kvq_vidkv_params *p, const kvq_policy *pol)
{
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(p)) return KVQ_E_PARAM;
    if (!kvq_vidkv_shape_ok(p)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* The byte sizes of the seven key arrays (mask, abnormal codes, scale, zero,
 * normal codes, scale, zero); 0 for an array the parameters do not use. */
static void key_sizes(uint64_t *b, const kvq_vidkv_params *p)
{
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p);
    b[0] = kvq_vidkv_mask_bytes(p);
    b[1] = na ? kvq_vidkv_abn_code_bytes(p) : 0u;
    b[2] = b[3] = na ? kvq_vidkv_abn_groups(p) * 4u : 0u;
    b[4] = nn ? kvq_vidkv_nrm_code_bytes(p) : 0u;
    b[5] = nn ? kvq_vidkv_nrm_groups(p) * 4u : 0u;
    b[6] = nn && kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_MINMAX ? b[5] : 0u;
}

static void key_ptrs(uint8_t **a, const kvq_vidkv_keys *k)
{
    a[0] = k->mask, a[1] = k->abn_codes, a[2] = (uint8_t *)k->abn_scale, a[3] = (uint8_t *)k->abn_zero;
    a[4] = k->nrm_codes, a[5] = (uint8_t *)k->nrm_scale, a[6] = (uint8_t *)k->nrm_zero;
}

static kvq_vidkv_keys keys_of(void *const *a)
{
    kvq_vidkv_keys k;
    k.mask = (uint8_t *)a[0], k.abn_codes = (uint8_t *)a[1], k.abn_scale = (float *)a[2];
    k.abn_zero = (float *)a[3], k.nrm_codes = (uint8_t *)a[4], k.nrm_scale = (float *)a[5];
    k.nrm_zero = (float *)a[6];
    return k;
}

/* 1 when an array the parameters require is NULL [VIDKV-L-05]. */
static int keys_missing(const kvq_vidkv_keys *k, const kvq_vidkv_params *p)
{
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p);
    return (na > 0u && (k->abn_codes == NULL || k->abn_scale == NULL || k->abn_zero == NULL)) ||
           (nn > 0u && (k->nrm_codes == NULL || k->nrm_scale == NULL ||
                        (kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_MINMAX && k->nrm_zero == NULL)));
}

/* vidkv_quantize_keys [VIDKV-K-01..10] */
static int gpu_vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                                   const kvq_vidkv_params *p, const kvq_policy *pol)
{
    uint64_t b[7];
    uint8_t *h[7];
    void *d[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *dk = NULL;
    kvq_status st;
    uint32_t f = 0;
    if (out == NULL || k == NULL || p == NULL || out->mask == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (keys_missing(out, p)) return KVQ_E_PARAM;
    key_sizes(b, p);
    key_ptrs(h, out);
    st = dev_in(&dk, k, kvq_vidkv_elems(p) * sizeof(float));
    for (int i = 0; i < 7 && st == KVQ_OK; i++) st = dev_alloc(&d[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_keys dkeys = keys_of(d);
        st = kvq_cuda_vidkv_quantize_keys(&dkeys, &f, (const float *)dk, p, pol, 0u, 0);
    }
    for (int i = 0; i < 7 && st == KVQ_OK; i++) st = dev_out(h[i], d[i], b[i]);
    if (st == KVQ_OK && flags != NULL) *flags = f;
    for (int i = 0; i < 7; i++) cudaFree(d[i]);
    cudaFree(dk);
    return st;
}

/* vidkv_dequantize_keys [VIDKV-K-11] [VIDKV-D-01..03] */
static int gpu_vidkv_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                     const kvq_vidkv_params *p, const kvq_policy *pol)
{
    uint64_t b[7];
    uint8_t *h[7];
    void *d[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *dy = NULL;
    kvq_status st;
    uint32_t f = 0;
    if (y == NULL || in == NULL || p == NULL || in->mask == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (keys_missing(in, p)) return KVQ_E_PARAM;
    key_sizes(b, p);
    key_ptrs(h, in);
    st = dev_alloc(&dy, kvq_vidkv_elems(p) * sizeof(float));
    for (int i = 0; i < 7 && st == KVQ_OK; i++) st = dev_in(&d[i], h[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_keys dkeys = keys_of(d);
        st = kvq_cuda_vidkv_dequantize_keys((float *)dy, &f, &dkeys, p, pol, 0);
    }
    if (st == KVQ_OK) st = dev_out(y, dy, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = f;
    for (int i = 0; i < 7; i++) cudaFree(d[i]);
    cudaFree(dy);
    return st;
}

/* The byte sizes of the six value arrays (tern, beta, prot, p_codes, p_scale,
 * p_zero) for n_p protected tokens; 0 for an array the parameters do not use. */
static void value_sizes(uint64_t *b, const kvq_vidkv_params *p, uint32_t np)
{
    const int stp = p->protect > 0.0f;
    b[0] = kvq_vidkv_tern_code_bytes(p, np);
    b[1] = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? kvq_vidkv_tern_groups(p, np) * 4u : 0u;
    b[2] = stp ? kvq_vidkv_prot_mask_bytes(p) : 0u;
    b[3] = stp ? kvq_vidkv_prot_code_bytes(p, np) : 0u;
    b[4] = b[5] = stp ? kvq_vidkv_prot_groups(p, np) * 4u : 0u;
}

static void value_ptrs(uint8_t **a, const kvq_vidkv_values *v)
{
    a[0] = v->tern, a[1] = (uint8_t *)v->beta, a[2] = v->prot, a[3] = v->p_codes;
    a[4] = (uint8_t *)v->p_scale, a[5] = (uint8_t *)v->p_zero;
}

static kvq_vidkv_values values_of(void *const *a)
{
    kvq_vidkv_values v;
    v.tern = (uint8_t *)a[0], v.beta = (float *)a[1], v.prot = (uint8_t *)a[2];
    v.p_codes = (uint8_t *)a[3], v.p_scale = (float *)a[4], v.p_zero = (float *)a[5];
    return v;
}

/* 1 when an array the parameters require is NULL [VIDKV-L-05]. */
static int values_missing(const kvq_vidkv_values *v, const kvq_vidkv_params *p)
{
    return (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && v->beta == NULL) ||
           (p->protect > 0.0f &&
            (v->prot == NULL || v->p_codes == NULL || v->p_scale == NULL || v->p_zero == NULL));
}

/* vidkv_quantize_values [VIDKV-V-01..05] [VIDKV-STP-01..03] */
static int gpu_vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags,
                                     const float *v, const kvq_vidkv_params *p,
                                     const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    uint64_t b[6];
    uint8_t *h[6];
    void *d[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *dv = NULL, *dxs = NULL;
    kvq_status st;
    uint32_t f = 0, n_p = 0, got = 0;
    kvq_vidkv_stp dstp;
    if (out == NULL || np == NULL || v == NULL || p == NULL || out->tern == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (values_missing(out, p)) return KVQ_E_PARAM;
    if (p->protect > 0.0f) {
        if ((st = vk_stp_check(p, stp)) != KVQ_OK) return st;
        n_p = kvq_vidkv_prot_count(p->protect, stp->vis_count);
        dstp = *stp;
    }
    value_sizes(b, p, n_p);
    value_ptrs(h, out);
    st = dev_in(&dv, v, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK && p->protect > 0.0f) {
        st = dev_in(&dxs, stp->xs, (uint64_t)stp->rows * stp->ds * sizeof(float));
        dstp.xs = (const float *)dxs;
    }
    for (int i = 0; i < 6 && st == KVQ_OK; i++) st = dev_alloc(&d[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_values dvals = values_of(d);
        st = kvq_cuda_vidkv_quantize_values(&dvals, &got, &f, (const float *)dv, p,
                                            p->protect > 0.0f ? &dstp : NULL, pol, 0u, 0);
    }
    for (int i = 0; i < 6 && st == KVQ_OK; i++) st = dev_out(h[i], d[i], b[i]);
    if (st == KVQ_OK) {
        *np = got;
        if (flags != NULL) *flags = f;
    }
    for (int i = 0; i < 6; i++) cudaFree(d[i]);
    cudaFree(dv);
    cudaFree(dxs);
    return st;
}

/* vidkv_dequantize_values [VIDKV-V-06] [VIDKV-D-01..03] */
static int gpu_vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in,
                                       uint32_t np, const kvq_vidkv_params *p, const kvq_policy *pol)
{
    uint64_t b[6];
    uint8_t *h[6];
    void *d[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *dy = NULL;
    kvq_status st;
    uint32_t f = 0;
    if (y == NULL || in == NULL || p == NULL || in->tern == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (values_missing(in, p)) return KVQ_E_PARAM;
    if ((p->protect <= 0.0f && np != 0u) || np > p->tokens) return KVQ_E_PARAM;
    value_sizes(b, p, np);
    value_ptrs(h, in);
    st = dev_alloc(&dy, kvq_vidkv_elems(p) * sizeof(float));
    for (int i = 0; i < 6 && st == KVQ_OK; i++) st = dev_in(&d[i], h[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_values dvals = values_of(d);
        st = kvq_cuda_vidkv_dequantize_values((float *)dy, &f, &dvals, np, p, pol, 0);
    }
    if (st == KVQ_OK) st = dev_out(y, dy, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = f;
    for (int i = 0; i < 6; i++) cudaFree(d[i]);
    cudaFree(dy);
    return st;
}

/* ---- vidkv_stream [VIDKV-W-01..02]: the composition of ref/fast/vidkv_stream.c
 * over the device launchers, the caches kept on the device ---------------------- */

/* One key quantization of x [H][T][d] (device) and its dequantization into y. */
static kvq_status keys_round_trip(float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                  const kvq_policy *pol)
{
    uint64_t b[7];
    void *d[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    uint32_t f = 0, df = 0;
    kvq_status st = KVQ_OK;
    key_sizes(b, p);
    for (int i = 0; i < 7 && st == KVQ_OK; i++) st = dev_alloc(&d[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_keys s = keys_of(d);
        st = kvq_cuda_vidkv_quantize_keys(&s, &f, x, p, pol, 0u, 0);
        if (st == KVQ_OK) st = kvq_cuda_vidkv_dequantize_keys(y, &df, &s, p, pol, 0);
        if (st == KVQ_OK) *flags |= f;
    }
    for (int i = 0; i < 7; i++) cudaFree(d[i]);
    return st;
}

/* One value quantization of x (with STP when stp is not NULL), dequantized into y. */
static kvq_status values_round_trip(float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                    const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    uint64_t b[6];
    void *d[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    uint32_t f = 0, df = 0, np = 0;
    kvq_status st = KVQ_OK;
    kvq_vidkv_params q = *p;
    if (stp == NULL) q.protect = 0.0f;
    else np = kvq_vidkv_prot_count(q.protect, stp->vis_count);
    value_sizes(b, &q, np);
    for (int i = 0; i < 6 && st == KVQ_OK; i++) st = dev_alloc(&d[i], b[i]);
    if (st == KVQ_OK) {
        kvq_vidkv_values s = values_of(d);
        st = kvq_cuda_vidkv_quantize_values(&s, &np, &f, x, &q, stp, pol, 0u, 0);
        if (st == KVQ_OK) st = kvq_cuda_vidkv_dequantize_values(y, &df, &s, np, &q, pol, 0);
        if (st == KVQ_OK) *flags |= f;
    }
    for (int i = 0; i < 6; i++) cudaFree(d[i]);
    return st;
}

/* dst [H][n][d] = rows [t0, t0 + n) of src [H][T][d] (device). */
static kvq_status take(float *dst, const float *src, uint32_t H, uint32_t T, uint32_t d, uint32_t t0, uint32_t n)
{
    return cudaMemcpy2D(dst, (size_t)n * d * 4u, src + (size_t)t0 * d, (size_t)T * d * 4u, (size_t)n * d * 4u,
                        H, cudaMemcpyDeviceToDevice) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* out [H][q+n][d] = cache [H][q][d] followed by blk [H][n][d] (device). */
static kvq_status concat(float *out, const float *cache, const float *blk, uint32_t H, uint32_t q, uint32_t n,
                         uint32_t d)
{
    const size_t row = (size_t)(q + n) * d * 4u;
    if (q > 0u && cudaMemcpy2D(out, row, cache, (size_t)q * d * 4u, (size_t)q * d * 4u, H,
                               cudaMemcpyDeviceToDevice) != cudaSuccess)
        return KVQ_E_DEVICE;
    return cudaMemcpy2D(out + (size_t)q * d, row, blk, (size_t)n * d * 4u, (size_t)n * d * 4u, H,
                        cudaMemcpyDeviceToDevice) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* One cache's step, as ref/fast/vidkv_stream.c step(). */
static kvq_status step(float *cache, uint32_t *flags, const float *blk, uint32_t q, uint32_t n, int requant,
                       int keys, kvq_vidkv_params p, const kvq_vidkv_stp *stp, const kvq_policy *pol, float *tmp,
                       float *tmp2)
{
    kvq_status st;
    const uint32_t H = p.heads, d = p.dim;
    if (requant) {
        if ((st = concat(tmp, cache, blk, H, q, n, d)) != KVQ_OK) return st;
        p.tokens = q + n;
        st = keys ? keys_round_trip(tmp2, flags, tmp, &p, pol) : values_round_trip(tmp2, flags, tmp, &p, NULL, pol);
        if (st == KVQ_OK && cudaMemcpy(cache, tmp2, (size_t)H * (q + n) * d * 4u, cudaMemcpyDeviceToDevice) !=
                                cudaSuccess)
            st = KVQ_E_DEVICE;
        return st;
    }
    p.tokens = n;
    st = keys ? keys_round_trip(tmp2, flags, blk, &p, pol) : values_round_trip(tmp2, flags, blk, &p, stp, pol);
    if (st == KVQ_OK) st = concat(tmp, cache, tmp2, H, q, n, d);
    if (st == KVQ_OK && cudaMemcpy(cache, tmp, (size_t)H * (q + n) * d * 4u, cudaMemcpyDeviceToDevice) != cudaSuccess)
        st = KVQ_E_DEVICE;
    return st;
}

/* vidkv_stream: the checks of kvq_vidkv_stream in its order (the input scans on
 * the host, as the reference's), then the prefill and every flush on the device. */
static int gpu_vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                            const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                            const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_stp dstp;
    uint64_t N, n;
    uint32_t f = 0, Tq, Tp, H, d, G, q;
    int with_stp;
    void *dk = NULL, *dv = NULL, *dxs = NULL, *kc = NULL, *vc = NULL, *blk = NULL, *tmp = NULL, *tmp2 = NULL;
    kvq_status st;
    if (kdeq == NULL || vdeq == NULL || k == NULL || v == NULL || prm == NULL) return KVQ_E_PARAM;
    p = *prm;
    p.tokens = p.group;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(&p)) return KVQ_E_PARAM;
    N = (uint64_t)prefill + decode;
    if (!kvq_vidkv_shape_ok(&p) || N < p.group || N > KVQ_VIDKV_MAX_TOKENS) return KVQ_E_SHAPE;
    H = p.heads, d = p.dim, G = p.group;
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
    const uint64_t cb = (uint64_t)H * Tq * d * sizeof(float);
    st = dev_in(&dk, k, n * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dv, v, n * sizeof(float));
    if (st == KVQ_OK && with_stp) {
        st = dev_in(&dxs, stp->xs, (uint64_t)stp->rows * stp->ds * sizeof(float));
        dstp = *stp;
        dstp.xs = (const float *)dxs;
    }
    if (st == KVQ_OK) st = dev_alloc(&kc, cb);
    if (st == KVQ_OK) st = dev_alloc(&vc, cb);
    if (st == KVQ_OK) st = dev_alloc(&blk, cb);
    if (st == KVQ_OK) st = dev_alloc(&tmp, cb);
    if (st == KVQ_OK) st = dev_alloc(&tmp2, cb);
    if (st != KVQ_OK) goto out;
    /* [VIDKV-W-01]: the first L - L mod G tokens, quantized as one cache */
    q = Tp;
    if (q > 0u) {
        if ((st = take((float *)blk, (const float *)dk, H, (uint32_t)N, d, 0u, q)) != KVQ_OK) goto out;
        if ((st = step((float *)kc, &f, (float *)blk, 0u, q, 0, 1, p, NULL, pol, (float *)tmp, (float *)tmp2)) != KVQ_OK)
            goto out;
        if ((st = take((float *)blk, (const float *)dv, H, (uint32_t)N, d, 0u, q)) != KVQ_OK) goto out;
        if ((st = step((float *)vc, &f, (float *)blk, 0u, q, 0, 0, p, with_stp ? &dstp : NULL, pol, (float *)tmp,
                       (float *)tmp2)) != KVQ_OK)
            goto out;
    }
    /* [VIDKV-W-02]: every G decoded tokens (the residual then full) flush */
    for (uint32_t pend = prefill % G, i = 0; i < decode; i++) {
        if (++pend < G) continue;
        pend = 0u;
        if ((st = take((float *)blk, (const float *)dk, H, (uint32_t)N, d, q, G)) != KVQ_OK) goto out;
        if ((st = step((float *)kc, &f, (float *)blk, q, G, p.kflush == KVQ_VIDKV_KFLUSH_REQUANT, 1, p, NULL, pol,
                       (float *)tmp, (float *)tmp2)) != KVQ_OK)
            goto out;
        if ((st = take((float *)blk, (const float *)dv, H, (uint32_t)N, d, q, G)) != KVQ_OK) goto out;
        if ((st = step((float *)vc, &f, (float *)blk, q, G, p.vflush == KVQ_VIDKV_VFLUSH_REQUANT, 0, p, NULL, pol,
                       (float *)tmp, (float *)tmp2)) != KVQ_OK)
            goto out;
        q += G;
    }
    st = dev_out(kdeq, kc, cb);
    if (st == KVQ_OK) st = dev_out(vdeq, vc, cb);
    if (st == KVQ_OK && flags != NULL) *flags = f;
out:
    cudaFree(dk), cudaFree(dv), cudaFree(dxs), cudaFree(kc), cudaFree(vc), cudaFree(blk), cudaFree(tmp);
    cudaFree(tmp2);
    return st;
}

static const kvq_gpu_entry VIDKV_ENTRIES[] = {
    { "vidkv_quantize_keys", 1, (kvq_entry_fn)gpu_vidkv_quantize_keys },
    { "vidkv_dequantize_keys", 1, (kvq_entry_fn)gpu_vidkv_dequantize_keys },
    { "vidkv_quantize_values", 1, (kvq_entry_fn)gpu_vidkv_quantize_values },
    { "vidkv_dequantize_values", 1, (kvq_entry_fn)gpu_vidkv_dequantize_values },
    { "vidkv_stream", 1, (kvq_entry_fn)gpu_vidkv_stream },
};
KVQ_GPU_ENTRIES(vidkv, VIDKV_ENTRIES)
