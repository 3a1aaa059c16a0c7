/*
 * decode_step.cu -- the host side of the certified CERT decode step on CUDA
 * (decode_common.cuh says how the step is split): the workspace, the step
 * (Phase 1, selection, Phase 2 launched by their units' host functions), its
 * settings and diagnostics, the one-head host wrappers.
 */
#include "decode_common.cuh"

/* ---- host side ----------------------------------------------------------- */

static int host_is_f16(float v)
{
    if (!(fabsf(v) < 65520.0f)) return 0;
    return __half2float(__float2half_rn(v)) == v;
}

/* NONFINITE anywhere first, then PARAM for a non-binary16 value [CERT-L-02]. */
static kvq_status host_check_f16(const float *x, uint64_t n)
{
    int bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return KVQ_E_NONFINITE;
        if (!host_is_f16(x[i])) bad = 1;
    }
    return bad ? KVQ_E_PARAM : KVQ_OK;
}

static kvq_status params_ok(const kvq_cert_params *p)
{
    if (!(p->tau > 0.0f && p->tau <= 1.0f)) return KVQ_E_PARAM;
    if (p->kmin < 1u || p->kmin > p->kmax) return KVQ_E_PARAM;
    if (!(p->vtol >= 0.0f) || isinf(p->vtol)) return KVQ_E_PARAM;
    if (!(p->eps_guard >= 0.0f) || isinf(p->eps_guard)) return KVQ_E_PARAM;
    if (!(p->eps_dense >= 0.0f)) return KVQ_E_PARAM;
    if (p->r < 1u || p->start_rung > 4u) return KVQ_E_PARAM;
    if (p->variant >= KVQ_CERT_VARIANTS) return KVQ_E_PARAM;       /* [CERT-VAR-01] */
    return KVQ_OK;
}

extern "C" size_t kvq_cuda_cert_max_blocks(void)
{
    return 65536u;                   /* the selection counters [CERT-DEV-03] */
}

extern "C" kvq_status kvq_cuda_cert_ws_create(kvq_cuda_cert_ws **out, uint32_t qheads,
                                              const kvq_cert_shape *shape)
{
    if (out == NULL || shape == NULL || qheads == 0u) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    const uint32_t nb = kvq_cert_blocks(shape), nq = kvq_cert_full_blocks(shape);
    if (nb > kvq_cuda_cert_max_blocks()) return KVQ_E_SHAPE;
    kvq_cuda_cert_ws *w = (kvq_cuda_cert_ws *)calloc(1, sizeof *w);
    if (w == NULL) return KVQ_E_NOMEM;
    w->qheads = qheads;
    w->nb = nb;
    w->nq = nq;
    w->d = shape->dim;
    w->gather_cap = SEL_GATHER;
    const uint64_t H = qheads;
    cudaError_t e = cudaSuccess;
    {
        int dev = 0, sms = 0;
        if (e == cudaSuccess) e = cudaGetDevice(&dev);
        if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        w->sms = sms > 0 ? (uint32_t)sms : 1u;
        /* dynamic shared memory beyond the default 48 KiB: Phase 1's two
         * pipeline buffers a warp, the select kernel's claim list and
         * early-fetch buffer */
        if (e == cudaSuccess) e = cert_phase1_attrs();
        if (e == cudaSuccess) e = cert_select_attrs();
        if (e == cudaSuccess) e = cert_phase2p_attrs();
    }
    /* entries a head: nb blocks, and the paper variant's segments, early and
     * recomputed [CERT-DEV-10] */
    const uint64_t nseg = (nq + SEG_BLOCKS - 1u) / SEG_BLOCKS, ent = nb + 2u * nseg;
#define WS_ALLOC(p, n) if (e == cudaSuccess) e = cudaMalloc((void **)&w->p, (n) * sizeof *w->p)
    WS_ALLOC(lt, H * nb);
    WS_ALLOC(dp, H * nb);
    WS_ALLOC(eb, H * nb);
    WS_ALLOC(ab, H * nb);
    WS_ALLOC(key, H * (nq ? nq : 1u));
    WS_ALLOC(lo, H * nb);
    WS_ALLOC(hi, H * nb);
    WS_ALLOC(flag, H * nb);
    WS_ALLOC(list, H * nb);
    WS_ALLOC(info, H);
    WS_ALLOC(pm, H * ent);
    WS_ALLOC(pl, H * ent);
    WS_ALLOC(pmin, H * ent);
    WS_ALLOC(pab, H * ent);
    WS_ALLOC(pacc, H * ent * w->d);
    WS_ALLOC(sc, H * (nq ? (uint64_t)KVQ_CERT_BLOCK * nq : 4u));
    WS_ALLOC(selm, H * nb);
    WS_ALLOC(promm, H * nb);
    WS_ALLOC(kvlist, H * nb);
    WS_ALLOC(kvn, H);
    WS_ALLOC(p2task, P2T_WORDS);
    WS_ALLOC(segm, H * (nseg ? nseg : 1u));
    WS_ALLOC(post, H * (nb + nseg));
    WS_ALLOC(dbg, H * 12u);
    WS_ALLOC(stage, H * STAGE_SLOTS * KVQ_CERT_BLOCK * w->d);
    WS_ALLOC(stag, H * nb);
    WS_ALLOC(scnt, H);
    WS_ALLOC(hmax, H);
    WS_ALLOC(p1cnt, H * P1CNT_STRIDE);
    WS_ALLOC(p2cnt, H);
#undef WS_ALLOC
    /* every staging entry free, no maximum yet */
    if (e == cudaSuccess) e = cudaMemset(w->stag, 0, H * nb * sizeof *w->stag);
    if (e == cudaSuccess) e = cudaMemset(w->scnt, 0, H * sizeof *w->scnt);
    if (e == cudaSuccess) e = cudaMemset(w->hmax, 0, H * sizeof *w->hmax);
    if (e == cudaSuccess) e = cudaMemset(w->p1cnt, 0, H * P1CNT_STRIDE * sizeof *w->p1cnt);
    if (e == cudaSuccess) e = cudaMemset(w->p2cnt, 0, H * sizeof *w->p2cnt);
    if (e == cudaSuccess) e = cudaMemset(w->selm, 0, H * nb * sizeof *w->selm);
    if (e == cudaSuccess) e = cudaMemset(w->promm, 0, H * nb * sizeof *w->promm);
    if (e == cudaSuccess) e = cudaMemset(w->kvn, 0, H * sizeof *w->kvn);
    if (e == cudaSuccess) e = cudaMemset(w->p2task, 0, P2T_WORDS * sizeof *w->p2task);
    if (e == cudaSuccess) e = cudaMemset(w->segm, 0, H * (nseg ? nseg : 1u) * sizeof *w->segm);
    w->overlap = 1u;
    w->stage_cap = STAGE_SLOTS;
    w->pre_cap = SEL_PRE_DEFAULT;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        kvq_cuda_cert_ws_destroy(w);
        return KVQ_E_NOMEM;
    }
    *out = w;
    return KVQ_OK;
}

extern "C" void kvq_cuda_cert_ws_destroy(kvq_cuda_cert_ws *w)
{
    if (w == NULL) return;
    void *p[] = {w->lt, w->dp, w->eb, w->ab, w->key, w->lo, w->hi, w->flag, w->list, w->info, w->pm,
                 w->pl, w->pmin, w->pab, w->pacc, w->dbg, w->stage, w->stag, w->scnt, w->hmax,
                 w->p1cnt, w->p2cnt, w->sc, w->selm, w->promm, w->kvlist, w->kvn, w->p2task,
                 w->segm, w->post};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i]) cudaFree(p[i]);
    free(w);
}

/* The step's kernels: Phase 1 waits for all earlier work of the stream; the
 * others are programmatic dependents of the kernel before them (each waits
 * for it at its start).  Phase 2: the sparse kernel (grid g2), or with
 * w.paper the paper variant's Phase 2 and combine [CERT-VAR-01]. */
static cudaError_t launch_step(bool cert, dim3 g1, dim3 g2, uint32_t qh, cudaStream_t stream,
                               const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &w,
                               const kvq_cert_params &prm, float *d_out, kvq_cert_record *d_rec,
                               kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                               uint8_t *d_sel, uint8_t *d_prom)
{
    cudaError_t e = cert_phase1_launch(cert, g1, stream, h, w);
    if (e == cudaSuccess) e = cert_select_launch(cert, qh, stream, h, w, prm, d_sel, d_prom);
    if (e == cudaSuccess)
        e = w.paper ? cert_phase2p_launch(cert, stream, h, w, d_out, d_rec, d_decl, d_delta1,
                                          d_status, prm.eps_dense)
                    : cert_phase2_launch(cert, g2, stream, h, w, d_out, d_rec, d_decl, d_delta1,
                                         d_status, prm.eps_dense);
    return e;
}

extern "C" kvq_status kvq_cuda_cert_step_async(float *d_out, kvq_cert_record *d_rec,
                                               kvq_cert_decl *d_decl, float *d_delta1,
                                               uint32_t *d_status, uint8_t *d_sel,
                                               uint8_t *d_prom, const kvq_cuda_cert_heads *h,
                                               const kvq_cert_params *prm, int certify,
                                               kvq_cuda_cert_ws *ws, cudaStream_t stream)
{
    if (d_out == NULL || h == NULL || prm == NULL || ws == NULL) return KVQ_E_PARAM;
    if (params_ok(prm) != KVQ_OK) return KVQ_E_PARAM;
    if (!isfinite(h->scale) || !(h->scale >= 0x1p-126f)) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(&h->shape)) return KVQ_E_SHAPE;
    const uint32_t qh = h->kv_heads * h->group;
    if (h->group == 0u || qh == 0u || qh > ws->qheads || kvq_cert_blocks(&h->shape) > ws->nb ||
        h->shape.dim > ws->d)
        return KVQ_E_PARAM;
    /* a workspace made for a larger shape serves a smaller one: the kernels
     * take their strides from this copy */
    kvq_cuda_cert_ws w = *ws;
    const uint32_t nb = kvq_cert_blocks(&h->shape);
    w.nb = nb;
    w.nq = kvq_cert_full_blocks(&h->shape);
    w.d = h->shape.dim;
    /* the paper variant [CERT-DEV-10]: Phase 1 keeps its scores, Phase 2
     * attends every block; a head's group bit in 32-bit masks (group <= 32) */
    w.paper = prm->variant == KVQ_CERT_VARIANT_PAPER ? 1u : 0u;
    if (w.paper && h->group > 32u) return KVQ_E_PARAM;
    w.nseg = (w.nq + SEG_BLOCKS - 1u) / SEG_BLOCKS;
    w.ent = w.paper ? nb + 2u * w.nseg : nb;
    if (!w.paper) w.sc = NULL;

    /* Phase 1: two CTAs an SM over all KV heads, at most one warp a full block */
    const uint32_t nq1 = kvq_cert_full_blocks(&h->shape);
    uint32_t x1 = (2u * ws->sms + h->kv_heads - 1u) / h->kv_heads;
    const uint32_t need = (nq1 + P1_WARPS - 1u) / P1_WARPS;
    if (x1 > need) x1 = need;
    if (x1 == 0u) x1 = 1u;
    const dim3 g1(x1, h->kv_heads);
    const dim3 g2(P2_CTAS, qh);
    const cudaError_t e = launch_step(certify != 0, g1, g2, qh, stream, *h, w, *prm, d_out,
                                      d_rec, d_decl, d_delta1, d_status, d_sel, d_prom);
    return e == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* Staging slots a query head for promoted values (0 .. STAGE_SLOTS; 0: Phase 2
 * reads every promoted block from tier 2).  The output does not depend on it
 * [CERT-DEV-01]; the device check varies it. */
extern "C" kvq_status kvq_cuda_cert_ws_set_stage(kvq_cuda_cert_ws *ws, uint32_t cap)
{
    if (ws == NULL || cap > STAGE_SLOTS) return KVQ_E_PARAM;
    ws->stage_cap = cap;
    return KVQ_OK;
}

/* The paper variant's early segment pass [CERT-DEV-10]: 1 (default), Phase 2
 * takes the segments with all their tokens while the select kernel runs and
 * recomputes those that hold a selected block; 0, Phase 2 waits for the
 * select kernel.  The output does not depend on it; the device check varies
 * it. */
extern "C" kvq_status kvq_cuda_cert_ws_set_overlap(kvq_cuda_cert_ws *ws, int on)
{
    if (ws == NULL || (on != 0 && on != 1)) return KVQ_E_PARAM;
    ws->overlap = (uint32_t)on;
    return KVQ_OK;
}

/* Staging claims fetched early by the select kernel (0 .. SEL_GATHER, and at
 * most what its buffer holds; default SEL_PRE_DEFAULT).  The output does not depend on it
 * [CERT-DEV-01]; the device check varies it. */
extern "C" kvq_status kvq_cuda_cert_ws_set_prefetch(kvq_cuda_cert_ws *ws, uint32_t blocks)
{
    if (ws == NULL || blocks > SEL_GATHER) return KVQ_E_PARAM;
    ws->pre_cap = blocks;
    return KVQ_OK;
}

/* The fast selector's gather capacity (0 .. SEL_GATHER; 0: the radix
 * selector always).  Both selectors give the same selection [CERT-DEV-03];
 * the device check runs its steps both ways and compares them. */
extern "C" kvq_status kvq_cuda_cert_ws_set_gather(kvq_cuda_cert_ws *ws, uint32_t cap)
{
    if (ws == NULL || cap > SEL_GATHER) return KVQ_E_PARAM;
    ws->gather_cap = cap;
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_cert_ws_residue(const kvq_cuda_cert_ws *ws, uint64_t *nonzero)
{
    if (ws == NULL || nonzero == NULL) return KVQ_E_PARAM;
    const uint64_t n = (2u + P1CNT_STRIDE) * (uint64_t)ws->qheads + P2T_WORDS;
    uint32_t *t = (uint32_t *)malloc(n * sizeof *t);
    if (t == NULL) return KVQ_E_NOMEM;
    kvq_status st = KVQ_E_DEVICE;
    if (cudaMemcpy(t, ws->hmax, ws->qheads * sizeof *t, cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(t + ws->qheads, ws->p2cnt, ws->qheads * sizeof *t, cudaMemcpyDeviceToHost) ==
            cudaSuccess &&
        cudaMemcpy(t + 2u * ws->qheads, ws->p1cnt, P1CNT_STRIDE * ws->qheads * sizeof *t,
                   cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(t + (2u + P1CNT_STRIDE) * (uint64_t)ws->qheads, ws->p2task, P2T_WORDS * sizeof *t,
                   cudaMemcpyDeviceToHost) == cudaSuccess) {
        uint64_t c = 0;
        for (uint64_t i = 0; i < n; i++) c += t[i] != 0u ? 1u : 0u;
        *nonzero = c;
        st = KVQ_OK;
    }
    free(t);
    return st;
}

/* The E_arith terms of query head qh's last step (diagnostics): amax, smax,
 * smin, eps_s, R_s, Lambda, g, g/(1-g), Vh, nS, entries, E_arith. */
extern "C" kvq_status kvq_cuda_cert_debug(float *out12, const kvq_cuda_cert_ws *ws, uint32_t qh)
{
    if (out12 == NULL || ws == NULL || qh >= ws->qheads) return KVQ_E_PARAM;
    return cudaMemcpy(out12, ws->dbg + (uint64_t)qh * 12u, 12u * sizeof(float),
                      cudaMemcpyDeviceToHost) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* The paper variant's last step (diagnostics, [CERT-DEV-10]): per KV head
 * the blocks some query head of its group selects, and those of them whose
 * original values some head reads. */
extern "C" kvq_status kvq_cuda_cert_listed(uint32_t *listed, uint32_t *orig,
                                           const kvq_cuda_cert_ws *ws, uint32_t kv_heads,
                                           uint32_t nb)
{
    if (listed == NULL || orig == NULL || ws == NULL || kv_heads == 0u ||
        kv_heads > ws->qheads || nb > ws->nb)
        return KVQ_E_PARAM;
    uint32_t *l = (uint32_t *)malloc(2u * (uint64_t)nb * sizeof *l + 4u);
    if (l == NULL) return KVQ_E_NOMEM;
    kvq_status st = KVQ_OK;
    for (uint32_t kv = 0; kv < kv_heads && st == KVQ_OK; kv++) {
        uint32_t n = 0, o = 0;
        if (cudaMemcpy(&n, ws->kvn + kv, 4u, cudaMemcpyDeviceToHost) != cudaSuccess ||
            n > nb ||
            cudaMemcpy(l, ws->kvlist + (uint64_t)kv * nb, n * 4u, cudaMemcpyDeviceToHost) !=
                cudaSuccess ||
            cudaMemcpy(l + nb, ws->promm + (uint64_t)kv * nb, nb * 4u, cudaMemcpyDeviceToHost) !=
                cudaSuccess) {
            st = KVQ_E_DEVICE;
            break;
        }
        for (uint32_t i = 0; i < n; i++) o += l[nb + (l[i] < nb ? l[i] : 0u)] != 0u ? 1u : 0u;
        listed[kv] = n;
        orig[kv] = o;
    }
    free(l);
    return st;
}

/* Phase 1 of query head qh's last step (diagnostics, [CERT-DEV-02]): the
 * block log-masses L~_b and their radii err_b, nb blocks of the step's shape
 * (the workspace's strides are those of the last step). */
extern "C" kvq_status kvq_cuda_cert_phase1(float *lt, float *radius, const kvq_cuda_cert_ws *ws,
                                           uint32_t qh, uint32_t nb)
{
    if (lt == NULL || radius == NULL || ws == NULL || qh >= ws->qheads || nb > ws->nb)
        return KVQ_E_PARAM;
    const uint64_t o = (uint64_t)qh * nb;
    if (cudaMemcpy(lt, ws->lt + o, nb * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(radius, ws->eb + o, nb * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
        return KVQ_E_DEVICE;
    return KVQ_OK;
}

/* Device buffers of one head, host in/out helpers. */
template <typename T> static cudaError_t dalloc(T **p, uint64_t n)
{
    *p = NULL;
    return cudaMalloc((void **)p, (n ? n : 1u) * sizeof(T));
}

extern "C" kvq_status kvq_cuda_cert_annotate_host(float *eta, float *nu, const float *v,
                                                  const uint8_t *codes, const float *scale,
                                                  const float *zero, const kvq_cert_shape *shape)
{
    if (eta == NULL || nu == NULL || v == NULL || codes == NULL || scale == NULL ||
        zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    kvq_status st = host_check_f16(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    const uint64_t ng = kvq_cert_value_groups(shape);
    for (uint64_t g = 0; g < ng; g++) {       /* as kvq_cert_annotate's metadata check */
        if (!isfinite(scale[g]) || !isfinite(zero[g])) return KVQ_E_NONFINITE;
        if (!host_is_f16(scale[g]) || !host_is_f16(zero[g])) return KVQ_E_PARAM;
        if (!(scale[g] >= 0.0f) || (scale[g] != 0.0f && scale[g] < 0x1p-14f)) return KVQ_E_PARAM;
    }
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint32_t nb = kvq_cert_blocks(shape);
    const uint64_t nv = kvq_cert_in_index(shape, shape->tokens, 0);
    float *dv = NULL, *ds = NULL, *dz = NULL, *de = NULL, *dn = NULL;
    uint8_t *dc = NULL;
    kvq_status rs = KVQ_E_DEVICE;
    if (dalloc(&dv, nv) == cudaSuccess && dalloc(&ds, ng) == cudaSuccess &&
        dalloc(&dz, ng) == cudaSuccess && dalloc(&dc, kvq_cert_value_code_bytes(shape)) == cudaSuccess &&
        dalloc(&de, nb) == cudaSuccess && dalloc(&dn, nb) == cudaSuccess &&
        cudaMemcpy(dv, v, nv * 4u, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(ds, scale, ng * 4u, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(dz, zero, ng * 4u, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(dc, codes, kvq_cert_value_code_bytes(shape), cudaMemcpyHostToDevice) == cudaSuccess &&
        kvq_cuda_cert_annotate(de, dn, dv, dc, ds, dz, shape, 0) == KVQ_OK &&
        cudaDeviceSynchronize() == cudaSuccess &&
        cudaMemcpy(eta, de, nb * 4u, cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(nu, dn, nb * 4u, cudaMemcpyDeviceToHost) == cudaSuccess)
        rs = KVQ_OK;
    cudaFree(dv);
    cudaFree(ds);
    cudaFree(dz);
    cudaFree(dc);
    cudaFree(de);
    cudaFree(dn);
    (void)cudaGetLastError();
    return rs;
}

/* f16 encodings of n binary16 values held as binary32. */
static void to_f16(uint16_t *dst, const float *src, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) dst[i] = __half_as_ushort(__float2half_rn(src[i]));
}

extern "C" kvq_status kvq_cuda_cert_step_host(float *out, uint8_t *sel, uint8_t *prom,
                                              kvq_cert_record *rec, kvq_cert_decl *decl,
                                              float *delta1, const float *q, float scale,
                                              const float *k, const float *v,
                                              const kvq_cert_params *prm,
                                              const kvq_cert_shape *shape, const kvq_policy *pol)
{
    if (out == NULL || sel == NULL || prom == NULL || rec == NULL || decl == NULL ||
        delta1 == NULL || q == NULL || k == NULL || v == NULL || prm == NULL || shape == NULL ||
        pol == NULL)
        return KVQ_E_PARAM;
    if (params_ok(prm) != KVQ_OK || kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= 0x1p-126f)) return KVQ_E_PARAM;   /* [CERT-L-01] */
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    const kvq_cert_shape sh = *shape;
    const uint32_t d = sh.dim, nb = kvq_cert_blocks(&sh), nres = kvq_cert_residual_tokens(&sh);
    const uint64_t nv = kvq_cert_in_index(&sh, sh.tokens, 0);
    kvq_status st = host_check_f16(q, d);
    kvq_status st2 = host_check_f16(k, nv), st3 = host_check_f16(v, nv);
    if (st == KVQ_E_NONFINITE || st2 == KVQ_E_NONFINITE || st3 == KVQ_E_NONFINITE)
        return KVQ_E_NONFINITE;
    if (st != KVQ_OK || st2 != KVQ_OK || st3 != KVQ_OK) return KVQ_E_PARAM;
    if (nb > kvq_cuda_cert_max_blocks()) return KVQ_E_SHAPE;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;

    kvq_status rs = KVQ_E_DEVICE;
    float *dk = NULL, *dv = NULL, *dq = NULL, *dsg = NULL, *dz = NULL, *dvs = NULL, *dvz = NULL;
    float *deta = NULL, *dnu = NULL, *dout = NULL, *dd1 = NULL;
    int8_t *dkc = NULL;
    uint8_t *dvc = NULL, *dsel = NULL, *dprom = NULL;
    uint16_t *dkr = NULL, *dvr = NULL, *t2 = NULL, *t2d = NULL;
    kvq_cert_record *drec = NULL;
    kvq_cert_decl *ddecl = NULL;
    uint32_t *dst = NULL;
    kvq_cuda_cert_ws *ws = NULL;
    uint32_t status = KVQ_E_DEVICE;
    uint16_t *res16 = (uint16_t *)malloc((2u * nres * d + 1u) * sizeof(uint16_t));
    do {
        if (res16 == NULL) { rs = KVQ_E_NOMEM; break; }
        if (dalloc(&dk, nv) || dalloc(&dv, nv) || dalloc(&dq, d) ||
            dalloc(&dsg, kvq_cert_key_meta_count(&sh)) || dalloc(&dz, kvq_cert_key_meta_count(&sh)) ||
            dalloc(&dkc, kvq_cert_key_code_bytes(&sh)) || dalloc(&dvc, kvq_cert_value_code_bytes(&sh)) ||
            dalloc(&dvs, kvq_cert_value_groups(&sh)) || dalloc(&dvz, kvq_cert_value_groups(&sh)) ||
            dalloc(&deta, nb) || dalloc(&dnu, nb) || dalloc(&dout, d) || dalloc(&dd1, 1) ||
            dalloc(&dsel, nb) || dalloc(&dprom, nb) || dalloc(&dkr, (uint64_t)nres * d) ||
            dalloc(&dvr, (uint64_t)nres * d) || dalloc(&drec, 1) || dalloc(&ddecl, 1) ||
            dalloc(&dst, 1)) { rs = KVQ_E_NOMEM; break; }
        /* tier 2: binary16 originals in mapped pinned host memory [CERT-L-04] */
        if (cudaHostAlloc((void **)&t2, 2u * nv * sizeof(uint16_t), cudaHostAllocMapped) !=
            cudaSuccess) { t2 = NULL; rs = KVQ_E_NOMEM; break; }
        to_f16(t2, k, nv);
        to_f16(t2 + nv, v, nv);
        if (cudaHostGetDevicePointer((void **)&t2d, t2, 0) != cudaSuccess) break;
        to_f16(res16, k + (uint64_t)(sh.tokens - nres) * d, (uint64_t)nres * d);
        to_f16(res16 + (uint64_t)nres * d, v + (uint64_t)(sh.tokens - nres) * d, (uint64_t)nres * d);
        if (cudaMemcpy(dk, k, nv * 4u, cudaMemcpyHostToDevice) ||
            cudaMemcpy(dv, v, nv * 4u, cudaMemcpyHostToDevice) ||
            cudaMemcpy(dq, q, d * 4u, cudaMemcpyHostToDevice) ||
            cudaMemcpy(dkr, res16, (uint64_t)nres * d * 2u, cudaMemcpyHostToDevice) ||
            cudaMemcpy(dvr, res16 + (uint64_t)nres * d, (uint64_t)nres * d * 2u,
                       cudaMemcpyHostToDevice))
            break;
        if (kvq_cert_full_blocks(&sh) > 0u) {
            st = kvq_cuda_cert_quantize_keys(dkc, dsg, dz, NULL, dk, &sh, pol, 0);
            if (st != KVQ_OK) { rs = st; break; }
            st = kvq_cuda_cert_quantize_values(dvc, dvs, dvz, NULL, dv, &sh, pol, 0);
            if (st != KVQ_OK) { rs = st; break; }
        }
        if (kvq_cuda_cert_annotate(deta, dnu, dv, dvc, dvs, dvz, &sh, 0) != KVQ_OK) break;
        if (kvq_cuda_cert_ws_create(&ws, 1u, &sh) != KVQ_OK) { rs = KVQ_E_NOMEM; break; }
        kvq_cuda_cert_heads h;
        memset(&h, 0, sizeof h);
        h.kv_heads = 1u;
        h.group = 1u;
        h.shape = sh;
        h.scale = scale;
        h.d_q = dq;
        h.d_kcodes = dkc;
        h.d_sigma = dsg;
        h.d_z = dz;
        h.d_vcodes = dvc;
        h.d_vscale = dvs;
        h.d_vzero = dvz;
        h.d_eta = deta;
        h.d_nu = dnu;
        h.d_kres = dkr;
        h.d_vres = dvr;
        h.t2_k = t2d;
        h.t2_v = t2d + nv;
        st = kvq_cuda_cert_step_async(dout, drec, ddecl, dd1, dst, dsel, dprom, &h, prm, 1, ws, 0);
        if (st != KVQ_OK) { rs = st; break; }
        if (cudaDeviceSynchronize() != cudaSuccess) break;
        if (cudaMemcpy(&status, dst, 4u, cudaMemcpyDeviceToHost)) break;
        if (status == KVQ_CUDA_CERT_RUNG4) {
            /* rung 4: the host reference dense path [CERT-LAD-01] [CERT-DEV-06] */
            kvq_cert_record dr;
            if (cudaMemcpy(&dr, drec, sizeof dr, cudaMemcpyDeviceToHost) ||
                cudaMemcpy(delta1, dd1, 4u, cudaMemcpyDeviceToHost))
                break;
            st = kvq_cert_dense(out, rec, decl, q, scale, k, v, &sh);
            if (st != KVQ_OK) { rs = st; break; }
            rec->rung = 4u;
            rec->delta = dr.delta;         /* informative at rung 4 [CERT-LAD-04] */
            rec->vmax = dr.vmax;
            rec->k_sel = kvq_cert_full_blocks(&sh);
            rec->n_prom = 0u;
            rec->checks = 0u;
            memset(sel, 1, nb);
            memset(prom, 0, nb);
            rs = KVQ_OK;
            break;
        }
        if (status != KVQ_OK) { rs = (kvq_status)status; break; }
        if (cudaMemcpy(out, dout, d * 4u, cudaMemcpyDeviceToHost) ||
            cudaMemcpy(sel, dsel, nb, cudaMemcpyDeviceToHost) ||
            cudaMemcpy(prom, dprom, nb, cudaMemcpyDeviceToHost) ||
            cudaMemcpy(rec, drec, sizeof *rec, cudaMemcpyDeviceToHost) ||
            cudaMemcpy(decl, ddecl, sizeof *decl, cudaMemcpyDeviceToHost) ||
            cudaMemcpy(delta1, dd1, 4u, cudaMemcpyDeviceToHost))
            break;
        rs = KVQ_OK;
    } while (0);
    kvq_cuda_cert_ws_destroy(ws);
    void *ps[] = {dk, dv, dq, dsg, dz, dvs, dvz, deta, dnu, dout, dd1, dkc, dvc, dsel, dprom,
                  dkr, dvr, drec, ddecl, dst};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        if (ps[i]) cudaFree(ps[i]);
    if (t2) cudaFreeHost(t2);
    free(res16);
    (void)cudaGetLastError();
    return rs;
}

#ifdef KVQ_CERT_TIMELINE
/* The stamps of the -DKVQ_CERT_TIMELINE build (decode_common.cuh): copied out
 * of the kernels' units, then cleared. */
extern "C" kvq_status kvq_cuda_cert_timeline(unsigned long long *p1, unsigned long long *sel,
                                             unsigned long long *p2)
{
    static const unsigned long long p1z[2] = {~0ull, 0ull};
    static unsigned long long z[TL_P2CTAS * TL_P2_N];
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cert_phase1_tl(p1, NULL);
    if (e == cudaSuccess) e = cert_select_tl(sel, NULL);
    if (e == cudaSuccess) e = cert_phase2_tl(p2, NULL);
    if (e == cudaSuccess) e = cert_phase1_tl(NULL, p1z);
    if (e == cudaSuccess) e = cert_select_tl(NULL, z);
    if (e == cudaSuccess) e = cert_phase2_tl(NULL, z);
    return e == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}
#endif
