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
 * cover the ternary values without STP; a call with p > 0 returns KVQ_E_PARAM
 * (STP is not on the device).  A verification cannot skip a case by status,
 * so with them registered every STP case fails (and `kvq demo` with it):
 * they are registered only when the build defines KVQ_GPU_VIDKV_VALUES, and
 * otherwise every values case skips ("subject-has-no-vidkv_quantize_values"),
 * the device test (gpu/vidkv/vidkv_test.cu) covering the values kernels bit
 * for bit.  vidkv_stream is not provided (those cases skip).
 */
#include <string.h>

#include "subject_gpu.h"
#include "vidkv/kvq_cuda_vidkv.h"
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

#ifdef KVQ_GPU_VIDKV_VALUES
/* vidkv_quantize_values [VIDKV-V-01..05], without STP */
static int gpu_vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags,
                                     const float *v, const kvq_vidkv_params *p,
                                     const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    void *dv = NULL, *dt = NULL, *db = NULL;
    kvq_status st;
    uint32_t f = 0;
    uint64_t tb, bb;
    (void)stp;
    if (out == NULL || np == NULL || v == NULL || p == NULL || out->tern == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && out->beta == NULL) return KVQ_E_PARAM;
    if (p->protect > 0.0f) return KVQ_E_PARAM; /* STP is not on the device */
    tb = kvq_vidkv_tern_code_bytes(p, 0u);
    bb = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? kvq_vidkv_tern_groups(p, 0u) * 4u : 0u;
    st = dev_in(&dv, v, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dt, tb);
    if (st == KVQ_OK) st = dev_alloc(&db, bb);
    if (st == KVQ_OK) {
        kvq_vidkv_values dvals;
        memset(&dvals, 0, sizeof dvals);
        dvals.tern = (uint8_t *)dt;
        dvals.beta = (float *)db;
        st = kvq_cuda_vidkv_quantize_values(&dvals, &f, (const float *)dv, p, pol, 0u, 0);
    }
    if (st == KVQ_OK) st = dev_out(out->tern, dt, tb);
    if (st == KVQ_OK) st = dev_out(out->beta, db, bb);
    if (st == KVQ_OK) {
        *np = 0u;
        if (flags != NULL) *flags = f;
    }
    cudaFree(dv), cudaFree(dt), cudaFree(db);
    return st;
}

/* vidkv_dequantize_values [VIDKV-V-06] [VIDKV-D-01..03], without STP */
static int gpu_vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in,
                                       uint32_t np, const kvq_vidkv_params *p, const kvq_policy *pol)
{
    void *dy = NULL, *dt = NULL, *db = NULL;
    kvq_status st;
    uint32_t f = 0;
    uint64_t tb, bb;
    if (y == NULL || in == NULL || p == NULL || in->tern == NULL) return KVQ_E_PARAM;
    if ((st = pre_check(p, pol)) != KVQ_OK) return st;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && in->beta == NULL) return KVQ_E_PARAM;
    if (p->protect > 0.0f || np != 0u) return KVQ_E_PARAM; /* STP is not on the device */
    tb = kvq_vidkv_tern_code_bytes(p, 0u);
    bb = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? kvq_vidkv_tern_groups(p, 0u) * 4u : 0u;
    st = dev_alloc(&dy, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dt, in->tern, tb);
    if (st == KVQ_OK) st = dev_in(&db, in->beta, bb);
    if (st == KVQ_OK) {
        kvq_vidkv_values dvals;
        memset(&dvals, 0, sizeof dvals);
        dvals.tern = (uint8_t *)dt;
        dvals.beta = (float *)db;
        st = kvq_cuda_vidkv_dequantize_values((float *)dy, &f, &dvals, p, pol, 0);
    }
    if (st == KVQ_OK) st = dev_out(y, dy, kvq_vidkv_elems(p) * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = f;
    cudaFree(dy), cudaFree(dt), cudaFree(db);
    return st;
}

#endif /* KVQ_GPU_VIDKV_VALUES */

static const kvq_gpu_entry VIDKV_ENTRIES[] = {
    { "vidkv_quantize_keys", 1, (kvq_entry_fn)gpu_vidkv_quantize_keys },
    { "vidkv_dequantize_keys", 1, (kvq_entry_fn)gpu_vidkv_dequantize_keys },
#ifdef KVQ_GPU_VIDKV_VALUES
    { "vidkv_quantize_values", 1, (kvq_entry_fn)gpu_vidkv_quantize_values },
    { "vidkv_dequantize_values", 1, (kvq_entry_fn)gpu_vidkv_dequantize_values },
#endif
};
KVQ_GPU_ENTRIES(vidkv, VIDKV_ENTRIES)
