/*
 * pkv_quant.cu -- PKV residual quantization on CUDA, bit-exact to
 * kvq_pkv_quantize (ref/fast/pkv.c) [PKV-Q-01..04] [PKV-V-01..03] [PKV-A-01..03].
 *
 * Kernels, in stream order:
 *   pkv_quant_bank_check_kernel  every pattern value against the domain [PKV-DOM-01]
 *   pkv_resid_kernel             per token (a segment of P lanes, pkv_dev.cuh): the
 *                                input checks, the extremes of the row, the pattern
 *                                index [PKV-A-02] with the kind's metric [PKV-A-03],
 *                                for values the V decision [PKV-V-01], then the
 *                                residual row r = RN32(x - m), or x for a value stored
 *                                raw (index 0xFFFF) [PKV-Q-02] [PKV-V-03]
 *   pkv_poison_kernel            when a check failed: a NaN into the residual, so the [PKV-DEV-03]
 *                                KIVI stage fails and commits nothing of its own
 *   (KIVI)                       kvq_cuda_kivi_quantize_async on the residual tensor with
 *                                the shape kvq_pkv_kivi_shape [PKV-Q-03] -- KIVI's own
 *                                launcher, so codes, metadata and flags are KIVI's
 *   pkv_quant_commit_kernel      residual and indices from scratch to the outputs iff
 *                                both stages succeeded [PKV-ERR-01]
 *   pkv_quant_finish_kernel      the call's status (the PKV checks first, then KIVI's)
 * and, asked for with KVQ_CUDA_PKV_FUSED | KVQ_CUDA_DIRECT on values with more than
 * 16 patterns, pkv_resid_quant_token_kernel: the residual and its KIVI stage in one
 * pass (the residual is not read back), then pkv_fused_finish_kernel.  With d =
 * 128, at most 32 patterns and the min-max metric the assignment of either form
 * is the pruned argmin [PKV-DEV-05] (pkv_resid_pruned_kernel, or the fused
 * kernel's PRUNE instance) unless KVQ_CUDA_PKV_UNPRUNED asks for the full scan:
 * the same indices, most patterns never scanned.
 *
 * The threshold t of the V decision is the fast path's own evaluation
 * (kvq_pkv_rho_star_eval, include/kvq_pkv.h), taken on the host.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>

#include "kvq_cuda_pkv.h"
#include "kvq_cuda_check.h"
#include "pkv/pkv_dev.cuh"

#define WS_STATE  KVQ_CUDA_WS_STATE /* kvq_dev_state of the PKV checks */
#define WS_KIVI   64u               /* kvq_cuda_result of the KIVI stage */
#define WS_RESULT 128u              /* kvq_cuda_result of the call (the blocking form's) */
#define WS_HEAD   KVQ_CUDA_WS_HEAD

__global__ void __launch_bounds__(256)
pkv_quant_bank_check_kernel(const float *__restrict__ bank, uint64_t nb, kvq_dev_state *st)
{
    uint32_t err = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = dev_tid(); e < nb; e += stride) err |= dev_pkv_check(__ldg(bank + e));
    dev_pkv_publish_err(st, err);
}

/* One segment of P = 2^lgP lanes a token, tokens in a grid-stride loop that
 * every lane of a warp runs the same number of times (the segment reductions
 * are warp shuffles). */
__global__ void __launch_bounds__(256)
pkv_resid_kernel(float *__restrict__ resid, uint16_t *__restrict__ index,
                 const float *__restrict__ x, uint32_t tokens, uint32_t dim,
                 const float *__restrict__ bank, uint32_t npat, uint32_t dist, int vdecide,
                 float thr, uint32_t lgP, int vec, kvq_dev_state *st)
{
    const uint32_t P = 1u << lgP;
    const uint32_t lane = threadIdx.x & 31u, sub = lane & (P - 1u);
    const uint32_t tpw = 32u >> lgP;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    uint32_t err = 0;
    for (uint64_t base = dev_tid() / 32u * tpw; base < tokens; base += nwarps * tpw) {
        const uint64_t t = base + (lane >> lgP);
        const bool act = t < tokens;
        const float *xt = x + (act ? t : 0u) * dim;
        if (t + nwarps * tpw < tokens) dev_pkv_prefetch_row(xt + nwarps * tpw * dim, dim, sub, P);
        float vmin, vmax, bd;
        err |= dev_pkv_row_scan(&vmin, &vmax, xt, dim, vec != 0, sub, lgP, act);
        const uint32_t j = dev_pkv_nearest(&bd, xt, bank, npat, dim, dist, vec != 0, sub, lgP, act);
        if (!act) continue;              /* no shuffles below */
        const bool use = !vdecide || dev_pkv_v_use(vmin, vmax, bd, thr);
        if (sub == 0u) index[t] = use ? (uint16_t)j : (uint16_t)KVQ_PKV_NO_PATTERN;
        const float *m = bank + kvq_pkv_pattern_offset(j, dim);
        float *rt = resid + t * dim;
        PKV_SLICE_FOR(i, sub, P, dim, vec != 0) {
            if (vec) {
                float4 a = *(const float4 *)(xt + i);
                if (use) {
                    const float4 b = __ldg((const float4 *)(m + i));
                    a.x = __fsub_rn(a.x, b.x);
                    a.y = __fsub_rn(a.y, b.y);
                    a.z = __fsub_rn(a.z, b.z);
                    a.w = __fsub_rn(a.w, b.w);
                }
                *(float4 *)(rt + i) = a;
            } else {
                rt[i] = use ? __fsub_rn(xt[i], __ldg(m + i)) : xt[i]; /* RN32 [PKV-Q-02] */
            }
        }
    }
    dev_pkv_publish_err(st, err);
}

/* The pruned forms (launch shape: pkv_dev.cuh, PKV_PRUNE_*) are meant to be
 * memory-bound: the next step's row in registers (dev_pkv_row_next: its load in
 * flight while this row is assigned, 16 KiB an SM), the row being assigned in
 * the warp's 512 bytes of shared memory, where the bound's gathers and the
 * visits read it. */
/* The pruned form of pkv_resid_kernel (d = D = 128, at most 32 patterns, the
 * min-max metric; the default there): a warp a token, the bank in shared memory,
 * the index by dev_pkv_nearest_pruned [PKV-DEV-05]; the residual as
 * pkv_resid_kernel writes it. */
template <int D>
__global__ void __launch_bounds__(PKV_PRUNE_BS, PKV_PRUNE_BLOCKS)
pkv_resid_pruned_kernel(float *__restrict__ resid, uint16_t *__restrict__ index,
                        const float *__restrict__ x, uint32_t tokens,
                        const float *__restrict__ bank, uint32_t npat, int vdecide, float thr,
                        kvq_dev_state *st)
{
    __shared__ __align__(16) float sb[32 * PKV_SROW];
    __shared__ __align__(16) float srow[PKV_PRUNE_BS / 32][D];
    dev_pkv_stage_bank<D>(sb, bank, npat);
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    float pv[PKV_PROBE];
    dev_pkv_probe_values<D>(pv, sb + lane * PKV_SROW);
    const pkv_pat_sum ps = dev_pkv_pattern_summary<D>(sb + lane * PKV_SROW);
    float *xt = srow[threadIdx.x >> 5];  /* the row being assigned */
    float4 next = dev_pkv_row_next<D>(x, dev_tid() / 32u, tokens, lane);
    uint32_t err = 0;
    for (uint64_t t = dev_tid() / 32u; t < tokens; t += nwarps) { /* warp-uniform */
        if (t + PKV_AHEAD * nwarps < tokens)  /* rows PKV_AHEAD steps ahead in L2 */
            dev_pkv_prefetch_row(x + (t + PKV_AHEAD * nwarps) * D, D, lane, 32u);
        dev_pkv_row_stage<D>(xt, next, lane);
        next = dev_pkv_row_next<D>(x, t + nwarps, tokens, lane);
        float vmin, vmax, bd;
        err |= dev_pkv_row_scan32<D>(&vmin, &vmax, xt, lane);
        const uint32_t j = dev_pkv_nearest_pruned<D>(&bd, NULL, xt, vmin, vmax, sb, pv, ps, npat,
                                                     lane);
        const bool use = !vdecide || dev_pkv_v_use(vmin, vmax, bd, thr);
        if (lane == 0u) index[t] = use ? (uint16_t)j : (uint16_t)KVQ_PKV_NO_PATTERN;
        const float *m = sb + j * PKV_SROW;
        float *rt = resid + t * D;
#pragma unroll
        for (uint32_t i = 4u * lane; i < (uint32_t)D; i += 128u) {
            float4 a = *(const float4 *)(xt + i);
            if (use) {
                const float4 b = *(const float4 *)(m + i);
                a.x = __fsub_rn(a.x, b.x);
                a.y = __fsub_rn(a.y, b.y);
                a.z = __fsub_rn(a.z, b.z);
                a.w = __fsub_rn(a.w, b.w);
            }
            *(float4 *)(rt + i) = a;     /* RN32 [PKV-Q-02] */
        }
    }
    dev_pkv_publish_err(st, err);
}

/* The fused form for values (KVQ_CUDA_PKV_FUSED with KVQ_CUDA_DIRECT): the
 * residual kernel above with P = 32, then the KIVI stage on the residual row
 * as it stands in registers -- the per-token groups of G = 2^LG channels
 * (8 <= G <= 128) are G/4 consecutive lanes' float4 pieces (lane sub holds
 * channels 4 (sub + 32 k) .. +3), their extremes meet by shuffles, and each
 * group's metadata and codes are KIVI's device arithmetic (kivi_dev.cuh, the
 * functions kivi_quant_token_kernel calls) in KIVI's order: the policy's read
 * of each residual [POL-SN-01], min and max, dev_group_meta, dev_code.  The
 * residual is written as read (before the subnormal policy), as the fast path
 * stores it.  kst collects KIVI's flags and ERR_RANGE.  D = 128 (d = 128, at
 * most 32 patterns): each lane keeps its pattern in registers
 * (dev_pkv_nearest_reg), so the assignment loads only the token's row. */
template <int BITS, int LG, int D, bool PRUNE>
__global__ void __launch_bounds__(PRUNE ? PKV_PRUNE_BS : 256, PRUNE ? PKV_PRUNE_BLOCKS : 1)
pkv_resid_quant_token_kernel(float *__restrict__ resid, uint16_t *__restrict__ index,
                             uint8_t *__restrict__ codes, float *__restrict__ scale,
                             float *__restrict__ zero, const float *__restrict__ x,
                             uint32_t tokens, uint32_t dim, const float *__restrict__ bank,
                             uint32_t npat, int vdecide, float thr, kvq_kivi_shape sh,
                             kvq_policy pol, kvq_dev_state *st, kvq_dev_state *kst)
{
    constexpr uint32_t G = 1u << LG, L = G / 4u; /* lanes a group */
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    const float cmax = (float)kvq_code_max(BITS);
    const bool daz = pol.subnormal == KVQ_SUBNORMAL_DAZ;
    const bool away = pol.ties == KVQ_TIES_AWAY;
    const bool nanpol = pol.overflow == KVQ_OVERFLOW_NAN;
    uint32_t err = 0, f = 0, kerr = 0;
    constexpr int DR = D > 0 ? D : 4;
    float4 mreg[DR / 4];                 /* D > 0: this lane's pattern (npat <= 32, dim = D) */
    /* PRUNE (D = 128): the bank in shared memory, lane's probe values and summary
     * in registers instead [PKV-DEV-05] */
    __shared__ __align__(16) float sb[PRUNE ? 32 * PKV_SROW : 4];
    __shared__ __align__(16) float srow[PRUNE ? PKV_PRUNE_BS / 32 : 1][PRUNE ? DR : 4];
    float pv[PKV_PROBE];
    pkv_pat_sum ps = {0.0f, 0.0f, 0u, 0u};
    float4 next = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if constexpr (D > 0 && PRUNE) {
        dev_pkv_stage_bank<DR>(sb, bank, npat);
        dev_pkv_probe_values<DR>(pv, sb + lane * PKV_SROW);
        ps = dev_pkv_pattern_summary<DR>(sb + lane * PKV_SROW);
        next = dev_pkv_row_next<DR>(x, dev_tid() / 32u, tokens, lane);
    } else if (D > 0) {
        dev_pkv_load_pattern<DR>(mreg, bank, npat, lane);
    }
    for (uint64_t t = dev_tid() / 32u; t < tokens; t += nwarps) { /* warp-uniform */
        const float *xt = x + t * dim;
        if constexpr (D > 0 && PRUNE) {  /* the pruned form: memory-bound */
            if (t + PKV_AHEAD * nwarps < tokens)
                dev_pkv_prefetch_row(x + (t + PKV_AHEAD * nwarps) * dim, dim, lane, 32u);
            float *xs = srow[threadIdx.x >> 5];
            dev_pkv_row_stage<DR>(xs, next, lane);
            next = dev_pkv_row_next<DR>(x, t + nwarps, tokens, lane);
            xt = xs;                     /* the row from shared memory from here on */
        } else if (t + nwarps < tokens) {
            dev_pkv_prefetch_row(xt + nwarps * dim, dim, lane, 32u);
        }
        float vmin, vmax, bd;
        if constexpr (D > 0 && PRUNE)
            err |= dev_pkv_row_scan32<DR>(&vmin, &vmax, xt, lane);
        else
            err |= dev_pkv_row_scan(&vmin, &vmax, xt, dim, true, lane, 5u, true);
        uint32_t j;
        if constexpr (D > 0 && PRUNE)
            j = dev_pkv_nearest_pruned<D>(&bd, NULL, xt, vmin, vmax, sb, pv, ps, npat, lane);
        else
            j = D > 0 ? dev_pkv_nearest_reg<DR>(&bd, xt, mreg, npat, lane)
                  : dev_pkv_nearest(&bd, xt, bank, npat, dim, KVQ_PKV_DIST_MINMAX, true, lane, 5u,
                                    true);
        const bool use = !vdecide || dev_pkv_v_use(vmin, vmax, bd, thr);
        if (lane == 0u) index[t] = use ? (uint16_t)j : (uint16_t)KVQ_PKV_NO_PATTERN;
        const float *m = bank + kvq_pkv_pattern_offset(j, dim);
        float *rt = resid + t * dim;
        for (uint32_t c0 = 4u * lane, base = 0; base < dim; base += 128u, c0 += 128u) {
            /* every lane runs every round (shuffles); lanes past the row hold whole
             * groups of their own (d is a multiple of G), which they do not store */
            const bool act = c0 < dim;
            float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (act) {
                float4 a = *(const float4 *)(xt + c0);
                if (use) {
                    const float4 b = __ldg((const float4 *)(m + c0));
                    a.x = __fsub_rn(a.x, b.x);
                    a.y = __fsub_rn(a.y, b.y);
                    a.z = __fsub_rn(a.z, b.z);
                    a.w = __fsub_rn(a.w, b.w);
                }
                *(float4 *)(rt + c0) = a; /* RN32 [PKV-Q-02] */
                v[0] = a.x;
                v[1] = a.y;
                v[2] = a.z;
                v[3] = a.w;
            }
            uint32_t fh = 0, eh = 0;
#pragma unroll
            for (int q = 0; q < 4; q++) v[q] = dev_read_input(v[q], daz, fh);
            float mn = fminf(fminf(v[0], v[1]), fminf(v[2], v[3]));
            float mx = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
            if constexpr (D > 0 && PRUNE && L == 32u) {
                /* the row is one group: REDUX on the order-preserving image
                 * (dev_pkv_ord); the sign of a zero extreme may differ from
                 * fminf's, and the metadata do not keep it (a zero offset is
                 * stored as +0, a zero range gives the scale +0) [KIVI-Q-03] */
                mn = dev_pkv_unord(__reduce_min_sync(0xFFFFFFFFu, dev_pkv_ord(mn)));
                mx = dev_pkv_unord(__reduce_max_sync(0xFFFFFFFFu, dev_pkv_ord(mx)));
            } else {
#pragma unroll
                for (uint32_t o = L >> 1; o > 0u; o >>= 1) {
                    mn = fminf(mn, __shfl_xor_sync(0xFFFFFFFFu, mn, (int)o));
                    mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, (int)o));
                }
            }
            if (!act) continue;
            float s, z;
            dev_group_meta(s, z, fh, eh, mn, mx, cmax, sh.meta, nanpol);
            const uint64_t e = t * dim + c0;  /* per token: group g holds elements gG .. gG+G-1 */
            const uint64_t g = e >> LG;
            const uint32_t i0 = (uint32_t)(e & (G - 1u));
            const uint32_t first = kvq_code_byte(i0, BITS);
            uint32_t w = 0;
            if (s != 0.0f) {             /* zero range: every code 0 [POL-ZR-01] */
                const float rcp = __frcp_rn(s);
#pragma unroll
                for (int q = 0; q < 4; q++)
                    w |= dev_code(v[q], s, rcp, z, cmax, away, fh)
                         << kvq_code_word_shift(i0 + (uint32_t)q, BITS, first);
            }
            uint8_t *out = codes + kvq_kivi_group_code_offset(&sh, g) + first;
            if (BITS == 2) *out = (uint8_t)w;
            else *(uint16_t *)out = (uint16_t)w;
            if (i0 == 0u) {
                scale[g] = s;
                zero[g] = z;
            }
            f |= fh;
            kerr |= eh;
        }
    }
    dev_pkv_publish_err(st, err);
    dev_publish(kst, f, kerr);
}

__global__ void pkv_fused_finish_kernel(const kvq_dev_state *st, const kvq_dev_state *kst,
                                        kvq_cuda_result *res)
{
    const uint32_t s = st->err != 0u ? pkv_err_status(st->err)
                     : (kst->err & ERR_RANGE) ? (uint32_t)KVQ_E_RANGE : (uint32_t)KVQ_OK;
    res->status = s;
    res->flags = s == (uint32_t)KVQ_OK ? kst->flags : 0u;
}

__global__ void pkv_poison_kernel(float *resid, const kvq_dev_state *st)
{
    if (st->err != 0u) resid[0] = __int_as_float(0x7fc00000);
}

__global__ void __launch_bounds__(256)
pkv_quant_commit_kernel(float *__restrict__ resid, const float *__restrict__ sresid, uint64_t n,
                        uint16_t *__restrict__ index, const uint16_t *__restrict__ sindex,
                        uint32_t tokens, const kvq_dev_state *st, const kvq_cuda_result *kres)
{
    if (__ldg(&st->err) != 0u || __ldg(&kres->status) != (uint32_t)KVQ_OK) return;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    if (((uintptr_t)resid & 15u) == 0u && n % 4u == 0u) {
        for (uint64_t v = dev_tid(); v < n / 4u; v += stride)
            ((float4 *)resid)[v] = __ldcs((const float4 *)sresid + v);
    } else {
        for (uint64_t e = dev_tid(); e < n; e += stride) resid[e] = sresid[e];
    }
    for (uint64_t t = dev_tid(); t < tokens; t += stride) index[t] = sindex[t];
}

__global__ void pkv_quant_finish_kernel(const kvq_dev_state *st, const kvq_cuda_result *kres,
                                        kvq_cuda_result *res)
{
    const uint32_t s = st->err != 0u ? pkv_err_status(st->err) : kres->status;
    res->status = s;
    res->flags = s == (uint32_t)KVQ_OK ? kres->flags : 0u;
}

/* The fused form's conditions: asked for (with KVQ_CUDA_DIRECT), values, a
 * token a warp (npat > 16), float4 rows, G a power of two 8 .. 128, codes
 * 2-byte aligned; anything else takes the two-stage form (same results). */
static int fused_shape(const kvq_kivi_shape *ks, uint32_t kind, uint32_t lgP, int vec,
                       uint32_t opts, const void *codes)
{
    return (opts & KVQ_CUDA_PKV_FUSED) != 0u && (opts & KVQ_CUDA_DIRECT) != 0u &&
           kind == KVQ_PKV_VALUE && lgP == 5u && vec && ks->group >= 8u && ks->group <= 128u &&
           (ks->group & (ks->group - 1u)) == 0u && ((uintptr_t)codes % 2u) == 0u;
}

/* The pruned assignment's conditions (the default; not with KVQ_CUDA_PKV_UNPRUNED):
 * d = 128, at most 32 patterns (a lane each), the min-max metric, float4 rows;
 * anything else takes the unpruned scan (same results). */
static int prune_shape(uint32_t dim, uint32_t npat, uint32_t dist, int vec, uint32_t opts)
{
    return (opts & KVQ_CUDA_PKV_UNPRUNED) == 0u && dim == 128u && npat <= 32u &&
           dist == KVQ_PKV_DIST_MINMAX && vec;
}

/* The fast path's argument checks, in its order [PKV-ERR-01]. */
static kvq_status check_args(const void *codes, const void *scale, const void *zero,
                             const void *index, const void *resid, const void *x,
                             uint32_t kind, uint32_t tokens, uint32_t dim, const void *bank,
                             uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        x == NULL || bank == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK)
        return KVQ_E_PARAM;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    if (!pkv_extent_ok(tokens, dim) || !kvq_kivi_shape_ok(&ks)) return KVQ_E_SHAPE;
    if (npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* Byte offsets of the workspace: resid and index scratch (not with
 * KVQ_CUDA_DIRECT), then the KIVI stage's workspace. */
typedef struct ws_layout {
    uint64_t resid, index, kivi, kivi_bytes, total;
} ws_layout;

static ws_layout layout(const kvq_kivi_shape *ks, uint32_t opts)
{
    ws_layout w;
    const uint64_t n = kvq_kivi_elems(ks);
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    w.resid = WS_HEAD;
    w.index = w.resid + (direct ? 0u : pkv_up256(n * sizeof(float)));
    w.kivi = w.index + (direct ? 0u : pkv_up256(kvq_pkv_index_bytes(ks->tokens)));
    w.kivi_bytes = kvq_cuda_kivi_quantize_workspace(ks, opts);
    w.total = w.kivi + pkv_up256(w.kivi_bytes);
    return w;
}

extern "C" size_t kvq_cuda_pkv_quantize_workspace(const kvq_pkv_params *p, uint32_t kind,
                                                  uint32_t tokens, uint32_t dim, uint32_t opts)
{
    static const float one = 0.0f;
    if (check_args(&one, &one, &one, &one, &one, &one, kind, tokens, dim, &one, 1u, p,
                   &kvq_policy_default) != KVQ_OK)
        return 0;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    return (size_t)layout(&ks, opts).total;
}

extern "C" kvq_status kvq_cuda_pkv_quantize_async(uint8_t *d_codes, float *d_scale, float *d_zero,
                                                  uint16_t *d_index, float *d_resid,
                                                  kvq_cuda_result *d_result, const float *d_x,
                                                  uint32_t kind, uint32_t tokens, uint32_t dim,
                                                  const float *d_bank, uint32_t npat,
                                                  const kvq_pkv_params *p, const kvq_policy *pol,
                                                  void *d_workspace, size_t workspace_bytes,
                                                  uint32_t opts, cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_scale, d_zero, d_index, d_resid, d_x, kind, tokens, dim,
                              d_bank, npat, p, pol);
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    const ws_layout w = layout(&ks, opts);
    a = kvq_cuda_check_workspace(d_result, d_workspace, workspace_bytes, w.total);
    if (a != KVQ_OK) return a;
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    uint8_t *ws = (uint8_t *)d_workspace;
    kvq_dev_state *st = (kvq_dev_state *)(ws + WS_STATE);
    kvq_cuda_result *kres = (kvq_cuda_result *)(ws + WS_KIVI);
    float *resid = direct ? d_resid : (float *)(ws + w.resid);
    uint16_t *index = direct ? d_index : (uint16_t *)(ws + w.index);
    const uint64_t n = (uint64_t)tokens * dim, nb = (uint64_t)npat * dim;
    const uint32_t lgP = pkv_lg_lanes(npat);
    const int vec = dim % 4u == 0u && ((uintptr_t)d_x % 16u) == 0u &&
                    ((uintptr_t)d_bank % 16u) == 0u && ((uintptr_t)resid % 16u) == 0u;
    const int vdecide = kind == KVQ_PKV_VALUE && p->v_threshold != 0u;
    const float thr = vdecide ? kvq_pkv_rho_star_eval(dim, p->alpha) : 0.0f; /* [PKV-V-02] */
    const uint32_t dist = kind == KVQ_PKV_KEY_PREFILL ? p->key_dist : KVQ_PKV_DIST_MINMAX;
    if (kvq_cuda_state_init(d_workspace, stream) != KVQ_OK) return KVQ_E_DEVICE;
    pkv_quant_bank_check_kernel<<<pkv_grid(nb, 256), 256, 0, stream>>>(d_bank, nb, st);
    int dev = 0, sms = 132;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (fused_shape(&ks, kind, lgP, vec, opts, d_codes)) {
        kvq_dev_state *kst = (kvq_dev_state *)(ws + WS_KIVI);
        if (cudaMemsetAsync(kst, 0, sizeof *kst, stream) != cudaSuccess) return KVQ_E_DEVICE;
        const uint64_t want = ((uint64_t)tokens * 32u + 255u) / 256u;
        const unsigned int nbk = (unsigned int)(want < (uint64_t)sms * 16u ? want
                                                                           : (uint64_t)sms * 16u);
        uint32_t lg = 3;
        while ((1u << lg) < ks.group) lg++;
#define PKV_FUSED_D(BITS, LG, D, NB, BS)                                                        \
    pkv_resid_quant_token_kernel<BITS, LG, D, false><<<NB, BS, 0, stream>>>(                    \
        d_resid, d_index, d_codes, d_scale, d_zero, d_x, tokens, dim, d_bank, npat, vdecide, thr, \
        ks, *pol, st, kst)
#define PKV_FUSED(BITS, LG) PKV_FUSED_D(BITS, LG, 0, nbk, 256)
#define PKV_FUSED_P(BITS)                                                                       \
    pkv_resid_quant_token_kernel<BITS, 7, 128, true><<<nbp, PKV_PRUNE_BS, 0, stream>>>(         \
        d_resid, d_index, d_codes, d_scale, d_zero, d_x, tokens, dim, d_bank, npat, vdecide, thr, \
        ks, *pol, st, kst)
        /* d = 128, at most 32 patterns, G = 128 (the paper's): patterns in registers
         * (about 170 a thread), one warp a block so that an SM holds 11 warps, not 8 */
        const bool reg = dim == 128u && npat <= 32u && lg == 7u;
        const bool prune = (opts & KVQ_CUDA_PKV_UNPRUNED) == 0u; /* [PKV-DEV-05] */
        const uint64_t wantp = ((uint64_t)tokens * 32u + PKV_PRUNE_BS - 1u) / PKV_PRUNE_BS;
        const unsigned int nbp =
            (unsigned int)(wantp < (uint64_t)sms * PKV_PRUNE_BLOCKS ? wantp
                                                                    : (uint64_t)sms * PKV_PRUNE_BLOCKS);
        const unsigned int nbw = (unsigned int)(tokens < (uint64_t)sms * 64u ? tokens
                                                                             : (uint64_t)sms * 64u);
        if (reg && prune && ks.bits == 2u) PKV_FUSED_P(2);
        else if (reg && prune) PKV_FUSED_P(4);
        else if (reg && ks.bits == 2u) PKV_FUSED_D(2, 7, 128, nbw, 32);
        else if (reg) PKV_FUSED_D(4, 7, 128, nbw, 32);
        else switch (lg + (ks.bits == 4u ? 8u : 0u)) {
        case 3: PKV_FUSED(2, 3); break;
        case 4: PKV_FUSED(2, 4); break;
        case 5: PKV_FUSED(2, 5); break;
        case 6: PKV_FUSED(2, 6); break;
        case 7: PKV_FUSED(2, 7); break;
        case 11: PKV_FUSED(4, 3); break;
        case 12: PKV_FUSED(4, 4); break;
        case 13: PKV_FUSED(4, 5); break;
        case 14: PKV_FUSED(4, 6); break;
        default: PKV_FUSED(4, 7); break;
        }
#undef PKV_FUSED
#undef PKV_FUSED_P
#undef PKV_FUSED_D
        pkv_fused_finish_kernel<<<1, 1, 0, stream>>>(st, kst, d_result);
        return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
    }
    const uint64_t want = (((uint64_t)tokens << lgP) + 255u) / 256u;
    const unsigned int nbk = (unsigned int)(want < (uint64_t)sms * 16u ? (want ? want : 1u)
                                                                       : (uint64_t)sms * 16u);
    if (prune_shape(dim, npat, dist, vec, opts)) {
        const uint64_t wantp = ((uint64_t)tokens * 32u + PKV_PRUNE_BS - 1u) / PKV_PRUNE_BS;
        const unsigned int nbp =
            (unsigned int)(wantp < (uint64_t)sms * PKV_PRUNE_BLOCKS ? wantp
                                                                    : (uint64_t)sms * PKV_PRUNE_BLOCKS);
        pkv_resid_pruned_kernel<128><<<nbp, PKV_PRUNE_BS, 0, stream>>>(resid, index, d_x, tokens,
                                                                       d_bank, npat, vdecide, thr,
                                                                       st);
    } else {
        pkv_resid_kernel<<<nbk, 256, 0, stream>>>(resid, index, d_x, tokens, dim, d_bank, npat,
                                                  dist, vdecide, thr, lgP, vec, st);
    }
    pkv_poison_kernel<<<1, 1, 0, stream>>>(resid, st);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    kvq_status k = kvq_cuda_kivi_quantize_async(d_codes, d_scale, d_zero, kres, resid, &ks, pol,
                                                ws + w.kivi, w.kivi_bytes, opts & ~KVQ_CUDA_WS_CLEAN,
                                                stream);   /* (PKV takes no clean workspace) */
    if (k != KVQ_OK) return k == KVQ_E_DEVICE ? k : KVQ_E_DEVICE; /* arguments were checked */
    if (!direct)
        pkv_quant_commit_kernel<<<pkv_grid(n / 4u + tokens, 256), 256, 0, stream>>>(
            d_resid, resid, n, d_index, index, tokens, st, kres);
    pkv_quant_finish_kernel<<<1, 1, 0, stream>>>(st, kres, d_result);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_pkv_quantize(uint8_t *d_codes, float *d_scale, float *d_zero,
                                            uint16_t *d_index, float *d_resid, uint32_t *flags,
                                            const float *d_x, uint32_t kind, uint32_t tokens,
                                            uint32_t dim, const float *d_bank, uint32_t npat,
                                            const kvq_pkv_params *p, const kvq_policy *pol,
                                            void *d_workspace, size_t workspace_bytes,
                                            uint32_t opts, cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_scale, d_zero, d_index, d_resid, d_x, kind, tokens, dim,
                              d_bank, npat, p, pol);
    if (a != KVQ_OK) return a;
    void *ws = d_workspace;
    int own;
    a = kvq_cuda_workspace_acquire(&ws, &workspace_bytes, &own,
                                   kvq_cuda_pkv_quantize_workspace(p, kind, tokens, dim, opts),
                                   stream);
    if (a != KVQ_OK) return a;
    kvq_cuda_result *dres = (kvq_cuda_result *)((uint8_t *)ws + WS_RESULT);
    kvq_status enq = kvq_cuda_pkv_quantize_async(d_codes, d_scale, d_zero, d_index, d_resid, dres,
                                                 d_x, kind, tokens, dim, d_bank, npat, p, pol, ws,
                                                 workspace_bytes, opts, stream);
    return kvq_cuda_finish_blocking(enq, dres, ws, own, flags, stream);
}

extern "C" kvq_status kvq_cuda_pkv_quantize_host(uint8_t *codes, float *scale, float *zero,
                                                 uint16_t *index, float *resid, uint32_t *flags,
                                                 const float *x, uint32_t kind, uint32_t tokens,
                                                 uint32_t dim, const float *bank, uint32_t npat,
                                                 const kvq_pkv_params *p, const kvq_policy *pol)
{
    kvq_status a = check_args(codes, scale, zero, index, resid, x, kind, tokens, dim, bank, npat,
                              p, pol);
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    const uint64_t n = (uint64_t)tokens * dim, nb = (uint64_t)npat * dim;
    const uint64_t cb = kvq_kivi_code_bytes(&ks), ng = kvq_kivi_groups(&ks);
    const uint64_t ib = kvq_pkv_index_bytes(tokens);
    float *dx = NULL, *db = NULL, *dr = NULL, *ds = NULL, *dz = NULL;
    uint8_t *dc = NULL;
    uint16_t *di = NULL;
    uint32_t f = 0;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&db, nb * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dr, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, cb) != cudaSuccess) goto out;
    if (cudaMalloc(&ds, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dz, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&di, ib) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(db, bank, nb * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
        goto out;
    st = kvq_cuda_pkv_quantize(dc, ds, dz, di, dr, &f, dx, kind, tokens, dim, db, npat, p, pol,
                               NULL, 0, 0u, 0);
    if (st != KVQ_OK) goto out;          /* host outputs untouched */
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
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dr);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    cudaFree(di);
    (void)cudaGetLastError();
    return st;
}
