/*
 * pkv_update.cu -- PKV Chebyshev centres and the decode-time bank update on
 * CUDA, bit-exact to kvq_pkv_chebyshev / kvq_pkv_bank_update (ref/fast/pkv.c)
 * [PKV-U-01..04].
 *
 * Kernels:
 *   pkv_window_check_kernel  every value of the window against the domain [PKV-DOM-01]
 *   pkv_centre_kernel        one thread a dimension c (consecutive threads, consecutive
 *                            columns: each row's loads coalesce): the extremes of the
 *                            column in ascending token order with strict comparisons
 *                            -- the fast path's scan, so a zero extreme keeps the sign
 *                            of the first of its value -- and RN32(mn + mx) * 0.5, one
 *                            rounding of the exact midpoint in the domain [PKV-U-02];
 *                            it returns at once when the check failed
 * The bank update is blocking: the check's status decides, on the host and in
 * the fast path's order, between an error, a bank at its limit (no centre
 * joins) and a centre written into slot npat [PKV-U-04].  One centre per
 * `window` decoded tokens (R = window = 128 by default: one per 128-token
 * window) is the caller's schedule [PKV-U-01] [PKV-U-05].
 */
#include <cuda_runtime.h>

#include "kvq_cuda_pkv.h"
#include "pkv/pkv_dev.cuh"

__global__ void __launch_bounds__(256)
pkv_window_check_kernel(const float *__restrict__ x, uint64_t n, kvq_dev_state *st)
{
    uint32_t err = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = dev_tid(); e < n; e += stride) err |= dev_pkv_check(x[e]);
    dev_pkv_publish_err(st, err);
}

__global__ void __launch_bounds__(128)
pkv_centre_kernel(float *__restrict__ centre, const float *__restrict__ x, uint32_t tokens,
                  uint32_t dim, const kvq_dev_state *st)
{
    if (__ldg(&st->err) != 0u) return;
    const uint64_t c = dev_tid();
    if (c >= dim) return;
#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 2
    /* planted bug: the scan in descending token order (the sign of a zero extreme) */
    float mn = x[(uint64_t)(tokens - 1u) * dim + c], mx = mn;
    for (uint32_t t = tokens - 1u; t-- > 0u;) {
#else
    float mn = x[c], mx = mn;
    for (uint32_t t = 1; t < tokens; t++) {
#endif
        const float v = x[(uint64_t)t * dim + c];
        if (v < mn) mn = v;              /* strict, ascending: the fast path's scan */
        if (v > mx) mx = v;
    }
    centre[c] = __fmul_rn(__fadd_rn(mn, mx), 0.5f); /* [PKV-U-02] */
}

/* The error bits of the checks of n device values [PKV-DOM-01], then (write)
 * the centre of x [tokens][dim] into d_centre unless a check failed; the
 * checks' status.  Blocking. */
static kvq_status check_run(float *d_centre, const float *d_x, uint64_t n, uint32_t tokens,
                            uint32_t dim, int write, cudaStream_t stream)
{
    kvq_dev_state *st = NULL, h;
    if (cudaMallocAsync((void **)&st, sizeof *st, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_NOMEM;
    }
    kvq_status rs = KVQ_E_DEVICE;
    if (cudaMemsetAsync(st, 0, sizeof *st, stream) == cudaSuccess) {
        if (n) pkv_window_check_kernel<<<pkv_grid(n, 256), 256, 0, stream>>>(d_x, n, st);
        if (write)
            pkv_centre_kernel<<<(dim + 127u) / 128u, 128, 0, stream>>>(d_centre, d_x, tokens,
                                                                       dim, st);
        if (cudaGetLastError() == cudaSuccess &&
            cudaMemcpyAsync(&h, st, sizeof h, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
            cudaStreamSynchronize(stream) == cudaSuccess)
            rs = (kvq_status)pkv_err_status(h.err);
    }
    (void)cudaFreeAsync(st, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) rs = KVQ_E_DEVICE;
    return rs;
}

static kvq_status centre_run(float *d_centre, const float *d_x, uint32_t tokens, uint32_t dim,
                             int write, cudaStream_t stream)
{
    return check_run(d_centre, d_x, (uint64_t)tokens * dim, tokens, dim, write, stream);
}

extern "C" kvq_status kvq_cuda_pkv_chebyshev(float *d_centre, const float *d_x, uint32_t tokens,
                                             uint32_t dim, cudaStream_t stream)
{
    if (d_centre == NULL || d_x == NULL) return KVQ_E_PARAM;
    if (!pkv_extent_ok(tokens, dim)) return KVQ_E_SHAPE;
    return centre_run(d_centre, d_x, tokens, dim, 1, stream);
}

extern "C" kvq_status kvq_cuda_pkv_bank_update(float *d_bank, uint32_t *npat, uint32_t *appended,
                                               uint32_t bank_cap, const float *d_window,
                                               uint32_t n, uint32_t dim,
                                               const kvq_pkv_params *p, cudaStream_t stream)
{
    if (d_bank == NULL || npat == NULL || d_window == NULL || p == NULL ||
        !kvq_pkv_params_ok(p) || *npat > bank_cap)
        return KVQ_E_PARAM;
    if (!pkv_extent_ok(n, dim)) return KVQ_E_SHAPE;
    kvq_status st = centre_run(NULL, d_window, n, dim, 0, stream); /* the checks first */
    if (st != KVQ_OK) return st;
    if (*npat >= kvq_pkv_bank_limit(p)) {    /* at the cap: no centre joins [PKV-U-04] */
        if (appended != NULL) *appended = 0;
        return KVQ_OK;
    }
    if (*npat >= bank_cap) return KVQ_E_SHAPE; /* no room allocated */
    st = centre_run(d_bank + kvq_pkv_pattern_offset(*npat, dim), d_window, n, dim, 1, stream);
    if (st != KVQ_OK) return st;
    *npat += 1u;
    if (appended != NULL) *appended = 1;
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_pkv_chebyshev_host(float *centre, const float *x, uint32_t tokens,
                                                  uint32_t dim)
{
    if (centre == NULL || x == NULL) return KVQ_E_PARAM;
    if (!pkv_extent_ok(tokens, dim)) return KVQ_E_SHAPE;
    const uint64_t n = (uint64_t)tokens * dim;
    float *dx = NULL, *dc = NULL;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, (size_t)dim * sizeof(float)) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) goto out;
    st = kvq_cuda_pkv_chebyshev(dc, dx, tokens, dim, 0);
    if (st == KVQ_OK &&
        cudaMemcpy(centre, dc, (size_t)dim * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        st = KVQ_E_DEVICE;
out:
    cudaFree(dx);
    cudaFree(dc);
    (void)cudaGetLastError();
    return st;
}

extern "C" kvq_status kvq_cuda_pkv_bank_update_host(float *bank, uint32_t *npat, uint32_t *appended,
                                                    uint32_t bank_cap, const float *window,
                                                    uint32_t n, uint32_t dim,
                                                    const kvq_pkv_params *p)
{
    if (bank == NULL || npat == NULL || window == NULL || p == NULL || !kvq_pkv_params_ok(p) ||
        *npat > bank_cap)
        return KVQ_E_PARAM;
    if (!pkv_extent_ok(n, dim)) return KVQ_E_SHAPE;
    const uint64_t nw = (uint64_t)n * dim;
    float *dw = NULL, *dc = NULL;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dw, nw * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, (size_t)dim * sizeof(float)) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dw, window, nw * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) goto out;
    st = centre_run(NULL, dw, n, dim, 0, 0); /* the checks first [PKV-ERR-01] */
    if (st != KVQ_OK) goto out;
    if (*npat >= kvq_pkv_bank_limit(p)) {      /* at the cap: no centre joins [PKV-U-04] */
        if (appended != NULL) *appended = 0;
        goto out;
    }
    if (*npat >= bank_cap) {                   /* no room allocated */
        st = KVQ_E_SHAPE;
        goto out;
    }
    st = centre_run(dc, dw, n, dim, 1, 0);
    if (st != KVQ_OK) goto out;
    if (cudaMemcpy(bank + kvq_pkv_pattern_offset(*npat, dim), dc, (size_t)dim * sizeof(float),
                   cudaMemcpyDeviceToHost) != cudaSuccess) {
        st = KVQ_E_DEVICE;
        goto out;
    }
    *npat += 1u;
    if (appended != NULL) *appended = 1;
out:
    cudaFree(dw);
    cudaFree(dc);
    (void)cudaGetLastError();
    return st;
}


/* ---- the decode steps: compositions of the bank update and the quantizer ---- */

/* Device copies of host arrays a [na] and b [nb], and the status of the fast
 * path's checks over them in its order: a, then b, finite; a, then b, in the
 * domain [PKV-ERR-01]. */
static kvq_status upload_checked(float **da, float **db, const float *a, uint64_t na,
                                 const float *b, uint64_t nb)
{
    *da = *db = NULL;
    if (cudaMalloc(da, (na ? na : 1u) * sizeof(float)) != cudaSuccess ||
        cudaMalloc(db, (nb + 1u) * sizeof(float)) != cudaSuccess)
        return KVQ_E_NOMEM;
    if ((na && cudaMemcpy(*da, a, na * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) ||
        (nb && cudaMemcpy(*db, b, nb * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess))
        return KVQ_E_DEVICE;
    const kvq_status sa = check_run(NULL, *da, na, 1u, 1u, 0, 0);
    const kvq_status sb = check_run(NULL, *db, nb, 1u, 1u, 0, 0);
    if (sa == KVQ_E_NONFINITE || sb == KVQ_E_NONFINITE) return KVQ_E_NONFINITE;
    if (sa != KVQ_OK) return sa;
    return sb;
}

/* Quantize T x dim device values against a device bank of npat patterns and
 * bring the outputs to the host buffers (only on KVQ_OK). */
static kvq_status quantize_to_host(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                                   float *resid, uint32_t *flags, const float *d_x,
                                   uint32_t kind, uint32_t tokens, uint32_t dim,
                                   const float *d_bank, uint32_t npat, const kvq_pkv_params *p,
                                   const kvq_policy *pol)
{
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    const uint64_t n = (uint64_t)tokens * dim, cb = kvq_kivi_code_bytes(&ks);
    const uint64_t ng = kvq_kivi_groups(&ks), ib = kvq_pkv_index_bytes(tokens);
    float *dr = NULL, *ds = NULL, *dz = NULL;
    uint8_t *dc = NULL;
    uint16_t *di = NULL;
    uint32_t f = 0;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dr, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, cb) != cudaSuccess) goto out;
    if (cudaMalloc(&ds, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dz, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&di, ib) != cudaSuccess) goto out;
    st = kvq_cuda_pkv_quantize(dc, ds, dz, di, dr, &f, d_x, kind, tokens, dim, d_bank, npat, p, pol,
                               NULL, 0, 0u, 0);
    if (st != KVQ_OK) goto out;
    if (cudaMemcpy(codes, dc, cb, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(scale, ds, ng * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(zero, dz, ng * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(index, di, ib, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(resid, dr, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        st = KVQ_E_DEVICE;
        goto out;
    }
    if (flags != NULL) *flags = f;
out:
    cudaFree(dr);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    cudaFree(di);
    (void)cudaGetLastError();
    return st;
}

extern "C" kvq_status kvq_cuda_pkv_key_flush_host(uint8_t *codes, float *scale, float *zero,
                                                  uint16_t *index, float *resid, uint32_t *flags,
                                                  float *bank, uint32_t *npat, uint32_t bank_cap,
                                                  const float *window, uint32_t dim,
                                                  const kvq_pkv_params *p, const kvq_policy *pol)
{
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        bank == NULL || npat == NULL || window == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (!kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK || *npat > bank_cap)
        return KVQ_E_PARAM;
    const uint32_t R = p->residual, np = *npat;
    if (!pkv_extent_ok(R, dim) || np == 0u || np > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    float *dw = NULL, *db = NULL, *centre = NULL;
    kvq_status st = upload_checked(&dw, &db, window, (uint64_t)R * dim, bank, (uint64_t)np * dim);
    const uint32_t join = np < kvq_pkv_bank_limit(p); /* [PKV-U-04] */
    if (st == KVQ_OK && join && np >= bank_cap) st = KVQ_E_SHAPE;
    if (st == KVQ_OK && join) {
        /* the centre into the device bank's slot np (db has room for one more) */
        float *grown = NULL;
        st = KVQ_E_NOMEM;
        if (cudaMalloc(&grown, ((uint64_t)np + 1u) * dim * sizeof(float)) == cudaSuccess) {
            st = KVQ_E_DEVICE;
            if (cudaMemcpy(grown, db, (uint64_t)np * dim * sizeof(float),
                           cudaMemcpyDeviceToDevice) == cudaSuccess)
                st = centre_run(grown + kvq_pkv_pattern_offset(np, dim), dw, R, dim, 1, 0);
            cudaFree(db);
            db = grown;
        }
    }
    if (st == KVQ_OK)                    /* after or before the centre joins [PKV-U-03] */
        st = quantize_to_host(codes, scale, zero, index, resid, flags, dw, KVQ_PKV_KEY_DECODE, R,
                              dim, db, join && p->update == KVQ_PKV_UPDATE_AFTER ? np + 1u : np, p,
                              pol);
    if (st == KVQ_OK && join) {
        centre = bank + kvq_pkv_pattern_offset(np, dim);
        if (cudaMemcpy(centre, db + kvq_pkv_pattern_offset(np, dim), (size_t)dim * sizeof(float),
                       cudaMemcpyDeviceToHost) != cudaSuccess)
            st = KVQ_E_DEVICE;           /* outputs written: the one unrecoverable case */
        else
            *npat = np + 1u;
    }
    cudaFree(dw);
    cudaFree(db);
    (void)cudaGetLastError();
    return st;
}

extern "C" kvq_status kvq_cuda_pkv_value_step_host(uint8_t *codes, float *scale, float *zero,
                                                   uint16_t *index, float *resid, uint32_t *flags,
                                                   uint32_t *count, float *bank, uint32_t *npat,
                                                   uint32_t bank_cap, const float *window,
                                                   uint32_t held, uint64_t step, uint32_t dim,
                                                   const kvq_pkv_params *p, const kvq_policy *pol)
{
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        count == NULL || bank == NULL || npat == NULL || window == NULL || p == NULL ||
        pol == NULL)
        return KVQ_E_PARAM;
    if (!kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK || *npat > bank_cap)
        return KVQ_E_PARAM;
    const uint32_t R = p->residual, np = *npat;
    if (held == 0u || held > R + 1u || step == 0u || !pkv_extent_ok(held, dim) ||
        dim % p->group != 0u)
        return KVQ_E_SHAPE;
    const uint32_t leave = held == R + 1u;
    if (leave && (np == 0u || np > KVQ_PKV_MAX_PATTERNS)) return KVQ_E_SHAPE;
    float *dw = NULL, *db = NULL;
    kvq_status st = upload_checked(&dw, &db, window, (uint64_t)held * dim, bank,
                                   (uint64_t)np * dim);
    const uint32_t join = step % p->window == 0u && np < kvq_pkv_bank_limit(p); /* [PKV-U-04] */
    if (st == KVQ_OK && join && np >= bank_cap) st = KVQ_E_SHAPE;
    const uint32_t first = held > R ? held - R : 0u; /* the R most recent rows [PKV-U-05] */
    if (st == KVQ_OK && join) {
        float *grown = NULL;
        st = KVQ_E_NOMEM;
        if (cudaMalloc(&grown, ((uint64_t)np + 1u) * dim * sizeof(float)) == cudaSuccess) {
            st = KVQ_E_DEVICE;
            if (np == 0u || cudaMemcpy(grown, db, (uint64_t)np * dim * sizeof(float),
                                       cudaMemcpyDeviceToDevice) == cudaSuccess)
                st = centre_run(grown + kvq_pkv_pattern_offset(np, dim),
                                dw + (uint64_t)first * dim, held - first, dim, 1, 0);
            cudaFree(db);
            db = grown;
        }
    }
    if (st == KVQ_OK && leave)           /* the leaving value, against the bank as it stands */
        st = quantize_to_host(codes, scale, zero, index, resid, flags, dw, KVQ_PKV_VALUE, 1u, dim,
                              db, join ? np + 1u : np, p, pol);
    if (st == KVQ_OK) {
        if (join) {
            if (cudaMemcpy(bank + kvq_pkv_pattern_offset(np, dim),
                           db + kvq_pkv_pattern_offset(np, dim), (size_t)dim * sizeof(float),
                           cudaMemcpyDeviceToHost) != cudaSuccess)
                st = KVQ_E_DEVICE;
            else
                *npat = np + 1u;
        }
        if (st == KVQ_OK) *count = leave ? 1u : 0u;
    }
    cudaFree(dw);
    cudaFree(db);
    (void)cudaGetLastError();
    return st;
}
