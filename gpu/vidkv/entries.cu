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
 * score vectors copied in beside the values.  vidkv_stream is
 * ref/fast/vidkv_stream.c's composition itself (kvq_vidkv_stream_compose) over
 * device stages [VIDKV-DEV-05]: its checks in its order on the host inputs,
 * then the prefill and every flush as device round trips, the key and value
 * caches kept on the device between them.
 */
#include <string.h>

#include "subject_gpu.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"
#include "devbuf.cuh"
#include "../../ref/fast/vidkv_stream.h"


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

/* ---- vidkv_stream [VIDKV-W-01..02]: ref/fast/vidkv_stream.c's composition over
 * device stages, the caches kept on the device [VIDKV-DEV-05] ------------------- */

/* One key quantization of x [H][T][d] (device) and its dequantization into y. */
static kvq_status keys_round_trip(void *ctx, float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                  const kvq_policy *pol)
{
    uint64_t b[7];
    void *d[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    uint32_t f = 0, df = 0;
    kvq_status st = KVQ_OK;
    (void)ctx;
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
static kvq_status values_round_trip(void *ctx, float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                    const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    uint64_t b[6];
    void *d[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    uint32_t f = 0, df = 0, np = 0;
    kvq_status st = KVQ_OK;
    kvq_vidkv_params q = *p;
    (void)ctx;
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

static void *d_alloc(void *ctx, size_t n)
{
    void *p;
    (void)ctx;
    return dev_alloc(&p, n) == KVQ_OK ? p : NULL;
}

static void d_release(void *ctx, void *p)
{
    (void)ctx;
    cudaFree(p);
}

static kvq_status d_stage_in(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    return cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

static kvq_status d_stage_out(void *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    return dev_out(dst, src, n);
}

static kvq_status d_copy2d(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t w,
                           uint32_t rows)
{
    (void)ctx;
    return cudaMemcpy2D(dst, dpitch, src, spitch, w, rows, cudaMemcpyDeviceToDevice) == cudaSuccess ? KVQ_OK
                                                                                                   : KVQ_E_DEVICE;
}

static const kvq_vidkv_stream_ops DEVICE_OPS = {
    NULL, d_alloc, d_release, d_stage_in, d_stage_out, d_copy2d, keys_round_trip, values_round_trip,
};

/* vidkv_stream: kvq_vidkv_stream's composition (its checks in its order, on the host
 * inputs, then the prefill and every flush) over the device stages. */
static int gpu_vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                            const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                            const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_stream_compose(&DEVICE_OPS, kdeq, vdeq, flags, k, v, stp, prefill, decode, prm, pol);
}

static const kvq_gpu_entry VIDKV_ENTRIES[] = {
    { "vidkv_quantize_keys", 1, (kvq_entry_fn)gpu_vidkv_quantize_keys },
    { "vidkv_dequantize_keys", 1, (kvq_entry_fn)gpu_vidkv_dequantize_keys },
    { "vidkv_quantize_values", 1, (kvq_entry_fn)gpu_vidkv_quantize_values },
    { "vidkv_dequantize_values", 1, (kvq_entry_fn)gpu_vidkv_dequantize_values },
    { "vidkv_stream", 1, (kvq_entry_fn)gpu_vidkv_stream },
};
KVQ_GPU_ENTRIES(vidkv, VIDKV_ENTRIES)
