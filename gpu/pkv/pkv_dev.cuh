/*
 * pkv_dev.cuh -- the PKV steps on the device, shared by the kernel units of
 * gpu/pkv/ (header only, __device__ __forceinline__): the domain checks
 * [PKV-DOM-01], the pinned min-max and squared Euclidean distances and the
 * lowest-index argmin over a bank [PKV-A-01..02] [PKV-KM-02], the V decision
 * [PKV-V-01].  Every float operation is one explicit round-to-nearest binary32
 * operation of ref/fast/pkv.c's sequence.
 *
 * Segments: the argmin of one token is shared by P = 2^lgP consecutive lanes
 * of a warp (P = 4 .. 32): lane `sub` of the segment scans patterns sub,
 * sub + P, ... in ascending order with a strict `<`, then the segment keeps the
 * least (distance, index) pair, the lower index among equal distances -- the
 * lowest index of least distance over the bank [PKV-DEV-02], as the fast path's one
 * ascending scan gives it.  The per-pattern distance is one lane's sequential
 * loop over i = 0 .. d-1, so the Euclidean sum keeps the pinned order.
 *
 * KVQ_PKV_PLANT (a build of the device test only, gpu/pkv/rules.mk) plants a
 * bug the test must catch: 1, ties across a segment's lanes take the higher
 * index; 2, Chebyshev extremes scanned in descending token order (the sign of
 * a zero extreme); 3, the pruned argmin prunes a pattern whose bound equals
 * the best distance (a tie to a lower index lost); 4, the one-kernel
 * dequantizer (pkv_dequant.cu) writes after its checks failed.
 */
#ifndef KVQ_PKV_DEV_CUH
#define KVQ_PKV_DEV_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

#include "kvq_pkv.h"
#include "kivi/kivi_dev.cuh"

/* Error bits of the PKV checks (kvq_dev_state.err); the status in the fast
 * path's order [PKV-ERR-01]: any non-finite value (inputs, then patterns) is
 * KVQ_E_NONFINITE, else any value outside the domain KVQ_E_RANGE. */
#define PKV_ERR_NONFINITE 0x1u
#define PKV_ERR_RANGE     0x2u

/* The check of one input or pattern value [PKV-DOM-01]. */
__device__ __forceinline__ uint32_t dev_pkv_check(float v)
{
    if (!isfinite(v)) return PKV_ERR_NONFINITE;
    return fabsf(v) > KVQ_PKV_MAX_ABS ? PKV_ERR_RANGE : 0u;
}

__host__ __device__ __forceinline__ uint32_t pkv_err_status(uint32_t err)
{
    return (err & PKV_ERR_NONFINITE) ? KVQ_E_NONFINITE
         : (err & PKV_ERR_RANGE)     ? KVQ_E_RANGE
                                     : KVQ_OK;
}

/* The pinned min-max distance [PKV-A-01]: the extremes of the rounded
 * differences (exact in any order), one rounding of their difference.  The
 * sign of a zero distance is not the fast path's in every order, and nothing
 * reads it: distances are only compared (< and <=). */
__device__ __forceinline__ float dev_pkv_dmm(const float *x, const float *m, uint32_t d, bool vec)
{
    float hi, lo;
    if (vec) {
        float4 a = *(const float4 *)x, b = __ldg((const float4 *)m);
        float t0 = __fsub_rn(a.x, b.x), t1 = __fsub_rn(a.y, b.y);
        float t2 = __fsub_rn(a.z, b.z), t3 = __fsub_rn(a.w, b.w);
        hi = fmaxf(fmaxf(t0, t1), fmaxf(t2, t3));
        lo = fminf(fminf(t0, t1), fminf(t2, t3));
        for (uint32_t i = 4; i < d; i += 4) {
            a = *(const float4 *)(x + i);
            b = __ldg((const float4 *)(m + i));
            t0 = __fsub_rn(a.x, b.x);
            t1 = __fsub_rn(a.y, b.y);
            t2 = __fsub_rn(a.z, b.z);
            t3 = __fsub_rn(a.w, b.w);
            hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
            lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
        }
    } else {
        hi = lo = __fsub_rn(x[0], __ldg(m));
        for (uint32_t i = 1; i < d; i++) {
            const float t = __fsub_rn(x[i], __ldg(m + i));
            hi = fmaxf(hi, t);
            lo = fminf(lo, t);
        }
    }
    return __fsub_rn(hi, lo);
}

/* The pinned squared Euclidean distance [PKV-KM-02]: i ascending, two
 * roundings a step, no FMA. */
__device__ __forceinline__ float dev_pkv_euc(const float *x, const float *m, uint32_t d)
{
    float acc = 0.0f;
    for (uint32_t i = 0; i < d; i++) {
        const float t = __fsub_rn(x[i], __ldg(m + i));
        acc = __fadd_rn(acc, __fmul_rn(t, t));
    }
    return acc;
}

/* The least (distance, index) of the segment's patterns for token xt (every
 * lane of the warp calls it; inactive lanes pass act = false).  Returns the
 * index; *bd_out its distance.  An index past npat (only when a distance is a
 * NaN, i.e. an input outside the domain: the call fails) reads as 0. */
__device__ __forceinline__ uint32_t dev_pkv_nearest(float *bd_out, const float *xt,
                                                    const float *bank, uint32_t npat,
                                                    uint32_t d, uint32_t dist, bool vec,
                                                    uint32_t sub, uint32_t lgP, bool act)
{
    const uint32_t P = 1u << lgP;
    float bd = __int_as_float(0x7f800000); /* +inf */
    uint32_t bj = 0xFFFFFFFFu;
    if (act) {
        for (uint32_t j = sub; j < npat; j += P) {
            const float *m = bank + kvq_pkv_pattern_offset(j, d);
            const float dj = dist == KVQ_PKV_DIST_EUCLID ? dev_pkv_euc(xt, m, d)
                                                         : dev_pkv_dmm(xt, m, d, vec);
            if (dj < bd) {               /* strict: ties keep the lowest index [PKV-A-02] */
                bd = dj;
                bj = j;
            }
        }
    }
    for (uint32_t o = P >> 1; o > 0u; o >>= 1) {
        const float od = __shfl_xor_sync(0xFFFFFFFFu, bd, (int)o);
        const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, bj, (int)o);
#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 1
        if (od < bd || (od == bd && oj > bj)) { /* planted bug: the higher index on ties */
#else
        if (od < bd || (od == bd && oj < bj)) {
#endif
            bd = od;
            bj = oj;
        }
    }
    *bd_out = bd;
    return bj < npat ? bj : 0u;
}

/* The register-resident form for a bank of at most 32 patterns of D values
 * (D a multiple of 4) and a segment of 32 lanes: lane l holds pattern l in mreg
 * (loaded once per kernel by dev_pkv_load_pattern; a lane past npat holds
 * none) and each token's row is read as broadcast float4 loads, so the bank
 * costs no load per token.  Same scan and the same segment reduction as
 * dev_pkv_nearest: the lowest index of least pinned min-max distance. */
template <int D>
__device__ __forceinline__ void dev_pkv_load_pattern(float4 (&mreg)[D / 4], const float *bank,
                                                     uint32_t npat, uint32_t lane)
{
    const float *m = bank + kvq_pkv_pattern_offset(lane < npat ? lane : 0u, D);
#pragma unroll
    for (int k = 0; k < D / 4; k++) mreg[k] = __ldg((const float4 *)m + k);
}

template <int D>
__device__ __forceinline__ uint32_t dev_pkv_nearest_reg(float *bd_out, const float *xt,
                                                        const float4 (&mreg)[D / 4],
                                                        uint32_t npat, uint32_t lane)
{
    float4 a = *(const float4 *)xt;
    float t0 = __fsub_rn(a.x, mreg[0].x), t1 = __fsub_rn(a.y, mreg[0].y);
    float t2 = __fsub_rn(a.z, mreg[0].z), t3 = __fsub_rn(a.w, mreg[0].w);
    float hi = fmaxf(fmaxf(t0, t1), fmaxf(t2, t3));
    float lo = fminf(fminf(t0, t1), fminf(t2, t3));
#pragma unroll
    for (int k = 1; k < D / 4; k++) {
        a = *(const float4 *)(xt + 4 * k);
        t0 = __fsub_rn(a.x, mreg[k].x);
        t1 = __fsub_rn(a.y, mreg[k].y);
        t2 = __fsub_rn(a.z, mreg[k].z);
        t3 = __fsub_rn(a.w, mreg[k].w);
        hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
        lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
    }
    float bd = __int_as_float(0x7f800000); /* +inf: a lane without a pattern */
    uint32_t bj = 0xFFFFFFFFu;
    if (lane < npat) {
        bd = __fsub_rn(hi, lo);          /* [PKV-A-01] */
        bj = lane;
    }
    for (uint32_t o = 16u; o > 0u; o >>= 1) {
        const float od = __shfl_xor_sync(0xFFFFFFFFu, bd, (int)o);
        const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, bj, (int)o);
#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 1
        if (od < bd || (od == bd && oj > bj)) { /* planted bug: the higher index on ties */
#else
        if (od < bd || (od == bd && oj < bj)) {
#endif
            bd = od;
            bj = oj;
        }
    }
    *bd_out = bd;
    return bj < npat ? bj : 0u;
}

/* ---- the pruned argmin [PKV-DEV-05] (bounds/pkv.md §5) -------------------
 *
 * The same index as dev_pkv_nearest_reg (the lowest index of least pinned
 * min-max distance), scanning most patterns never.  The block holds the bank in
 * shared memory (dev_pkv_stage_bank: rows PKV_SROW floats apart, so that the
 * lanes' float4 reads of 32 different rows meet no bank conflict); lane j keeps
 * pattern j's probe values and its summary (its extremes and the lowest channels
 * holding them, dev_pkv_pattern_summary) in registers, once a kernel -- about 60
 * registers a thread, so an SM holds several times the warps of the register
 * form.  For a token:
 *   1. lane j's lower bound b_j on the pinned distance D_j: the pinned min-max
 *      distance over a subset S_j of the channels -- a partial scan: its largest
 *      difference is at most the row's, its least at least the row's, and
 *      rounding is monotone.  S_j: the PKV_PROBE channels k D / PKV_PROBE, the
 *      channels of the row's largest and least values (dev_pkv_row_argext), and
 *      those of pattern j's; with the last four, b_j is at least the range
 *      bound |RN32(RN32(xmax - mmax) - RN32(xmin - mmin))|;
 *   2. the warp takes the pattern of least (b_j, j) and computes its D exactly,
 *      cooperatively (dev_pkv_dmm_coop: one float4 a lane, the extremes meet by
 *      shuffles): the best (D, j) so far;
 *   3. a pattern survives while b_j <= best D (never pruned on equality: a
 *      tie at the best distance must reach the lowest-index comparison);
 *      survivors are visited in ascending index, each visit updating the best
 *      lexicographically, (D, j) < (D', j'), and pruning the rest again;
 *      when more than PKV_PRUNE_FULL survive the first visit, every lane
 *      computes its own pattern's D from shared memory instead (the unpruned
 *      form's arithmetic, plus the bound: the worst case, e.g. all patterns tied).
 * Every pattern not visited has D_j >= b_j > best D at its pruning, and best D
 * only falls, so its (D_j, j) is strictly above the result: the result is the
 * lexicographic least over the whole bank whatever the visiting order.  Which
 * channels S_j holds changes how much is pruned, never the result.
 *
 * KVQ_PKV_PLANT 3 prunes on equality (b_j >= best D): the device test's tie
 * inputs must catch it. */
#define PKV_PROBE      8   /* fixed probe channels a token (D / PKV_PROBE apart) */
#define PKV_PRUNE_FULL 8   /* more survivors than this: the full scan */
#define PKV_SROW       132 /* floats between the bank's rows in shared memory */

#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 3
#define PKV_KEEP(b, best) ((b) < (best)) /* planted bug: pruned on equality */
#else
#define PKV_KEEP(b, best) (!((b) > (best))) /* [PKV-DEV-05]: pruned only when strictly above */
#endif

/* A lane's pattern: its largest and least values and the lowest channels
 * holding them. */
typedef struct pkv_pat_sum {
    float mmax, mmin;
    uint32_t cmax, cmin;
} pkv_pat_sum;

/* The bank (npat <= 32 patterns of D values) into shared memory sb [32][PKV_SROW]
 * (rows past npat zero), by the whole block, then a barrier. */
template <int D>
__device__ __forceinline__ void dev_pkv_stage_bank(float *sb, const float *bank, uint32_t npat)
{
    for (uint32_t e = threadIdx.x; e < 32u * (uint32_t)D; e += blockDim.x) {
        const uint32_t j = e / (uint32_t)D, i = e % (uint32_t)D;
        sb[j * PKV_SROW + i] = j < npat ? __ldg(bank + (uint64_t)j * D + i) : 0.0f;
    }
    __syncthreads();
}

/* The summary of a pattern row m (D values, any memory). */
template <int D>
__device__ __forceinline__ pkv_pat_sum dev_pkv_pattern_summary(const float *m)
{
    pkv_pat_sum ps = {m[0], m[0], 0u, 0u};
    for (uint32_t i = 1; i < (uint32_t)D; i++) {
        const float v = m[i];
        if (v > ps.mmax) {
            ps.mmax = v;
            ps.cmax = i;
        }
        if (v < ps.mmin) {
            ps.mmin = v;
            ps.cmin = i;
        }
    }
    return ps;
}

/* Lane's probe values: its pattern row m at the PKV_PROBE channels k D / PKV_PROBE. */
template <int D>
__device__ __forceinline__ void dev_pkv_probe_values(float (&pv)[PKV_PROBE], const float *m)
{
#pragma unroll
    for (int k = 0; k < PKV_PROBE; k++) pv[k] = m[k * (D / PKV_PROBE)];
}

/* The lowest channels of row xt (D values) holding vmax and vmin, the whole
 * warp at once (0 when none does: a NaN row, whose call fails).  Any channel
 * would keep the bound sound; these make it strong. */
template <int D>
__device__ __forceinline__ void dev_pkv_row_argext(uint32_t &px, uint32_t &qx, const float *xt,
                                                   float vmax, float vmin, uint32_t lane)
{
    uint32_t p = 0xFFFFFFFFu, q = 0xFFFFFFFFu;
#pragma unroll
    for (uint32_t k = lane; k < (uint32_t)D / 4u; k += 32u) {
        const float4 a = *(const float4 *)(xt + 4u * k);
        const float v[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int c = 3; c >= 0; c--) {
            if (v[c] == vmax) p = min(p, 4u * k + (uint32_t)c);
            if (v[c] == vmin) q = min(q, 4u * k + (uint32_t)c);
        }
    }
    p = __reduce_min_sync(0xFFFFFFFFu, p);
    q = __reduce_min_sync(0xFFFFFFFFu, q);
    px = p < (uint32_t)D ? p : 0u;
    qx = q < (uint32_t)D ? q : 0u;
}

/* The pruned forms' warp reductions of extremes are single REDUX instructions on
 * an order-preserving integer image of binary32 (its own inverse: the sign bit
 * kept, the other 31 flipped for negative values), in place of five rounds of
 * shuffles: the extremes are exact, and only the sign of a zero extreme may
 * differ from fminf's and fmaxf's, which nothing of these forms reads (a range or
 * distance of extremes that are zeros is a zero, compared only; [PKV-DEV-02]). */
__device__ __forceinline__ int dev_pkv_ord(float v)
{
    const int k = __float_as_int(v);
    return k ^ ((k >> 31) & 0x7fffffff);
}

__device__ __forceinline__ float dev_pkv_unord(int k)
{
    return __int_as_float(k ^ ((k >> 31) & 0x7fffffff));
}

/* The pinned min-max distance of row xt to pattern m (D values, 16-byte aligned,
 * any memory), the whole warp at once: lane l the float4 pieces l, l + 32, ...,
 * the extremes by REDUX (exact in any order; the sign of a zero extreme aside,
 * see dev_pkv_ord), one rounding of their difference [PKV-A-01]. */
template <int D>
__device__ __forceinline__ float dev_pkv_dmm_coop(const float *xt, const float *m, uint32_t lane)
{
    float hi = __int_as_float(0xff800000), lo = __int_as_float(0x7f800000);
#pragma unroll
    for (uint32_t k = lane; k < (uint32_t)D / 4u; k += 32u) {
        const float4 a = *(const float4 *)(xt + 4u * k), b = *((const float4 *)m + k);
        const float t0 = __fsub_rn(a.x, b.x), t1 = __fsub_rn(a.y, b.y);
        const float t2 = __fsub_rn(a.z, b.z), t3 = __fsub_rn(a.w, b.w);
        hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
        lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
    }
    hi = dev_pkv_unord(__reduce_max_sync(0xFFFFFFFFu, dev_pkv_ord(hi)));
    lo = dev_pkv_unord(__reduce_min_sync(0xFFFFFFFFu, dev_pkv_ord(lo)));
    return __fsub_rn(hi, lo);
}

/* The least value over the warp and a lane holding it, the lowest of those
 * holding the least integer image (-0 below +0): for the pruned argmin's first
 * visit, whose choice changes what is pruned, never the result. */
__device__ __forceinline__ void dev_pkv_warp_argmin_ord(float &v, uint32_t &j)
{
    const int k = dev_pkv_ord(v), m = __reduce_min_sync(0xFFFFFFFFu, k);
    j = __reduce_min_sync(0xFFFFFFFFu, k == m ? j : 0xFFFFFFFFu);
    v = dev_pkv_unord(m);
}

/* The least (value, index) pair over the warp, the lower index on equal values. */
__device__ __forceinline__ void dev_pkv_warp_argmin(float &v, uint32_t &j)
{
#pragma unroll
    for (uint32_t o = 16u; o > 0u; o >>= 1) {
        const float ov = __shfl_xor_sync(0xFFFFFFFFu, v, (int)o);
        const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, j, (int)o);
        if (ov < v || (ov == v && oj < j)) {
            v = ov;
            j = oj;
        }
    }
}

/* The pruned argmin of token xt (every lane calls it, warp-uniform): xmin,
 * xmax the row's extremes (dev_pkv_row_scan); sb the bank in shared memory
 * (dev_pkv_stage_bank); pv and ps lane's probe values and summary.  Returns the
 * index; *bd_out its distance; *visits (may be NULL) the distances computed
 * (1 + npat after a full scan). */
template <int D>
__device__ __forceinline__ uint32_t dev_pkv_nearest_pruned(float *bd_out, uint32_t *visits,
                                                           const float *xt, float xmin, float xmax,
                                                           const float *sb,
                                                           const float (&pv)[PKV_PROBE],
                                                           const pkv_pat_sum &ps, uint32_t npat,
                                                           uint32_t lane)
{
    static_assert(D % (4 * PKV_PROBE) == 0 && D <= PKV_SROW, "probe channels, shared rows");
    const float *ms = sb + lane * PKV_SROW; /* lane's pattern (zeros past npat) */
    /* 1. the bound over S_j: the probe channels (x's values are broadcast loads) ... */
    float phi = __fsub_rn(xt[0], pv[0]), plo = phi;
#pragma unroll
    for (int k = 1; k < PKV_PROBE; k++) {
        const float t = __fsub_rn(xt[k * (D / PKV_PROBE)], pv[k]);
        phi = fmaxf(phi, t);
        plo = fminf(plo, t);
    }
    /* ... the row's extreme channels and the pattern's (its values known) */
    uint32_t px, qx;
    dev_pkv_row_argext<D>(px, qx, xt, xmax, xmin, lane);
    const float t1 = __fsub_rn(xt[px], ms[px]), t2 = __fsub_rn(xt[qx], ms[qx]);
    const float t3 = __fsub_rn(xt[ps.cmax], ps.mmax), t4 = __fsub_rn(xt[ps.cmin], ps.mmin);
    phi = fmaxf(phi, fmaxf(fmaxf(t1, t2), fmaxf(t3, t4)));
    plo = fminf(plo, fminf(fminf(t1, t2), fminf(t3, t4)));
    float b = __fsub_rn(phi, plo);
    if (b != b) b = 0.0f;                /* a NaN (an input outside the domain: the call fails) */
    const bool has = lane < npat;
    /* 2. the least bound first */
    float bv = has ? b : __int_as_float(0x7f800000);
    uint32_t j0 = has ? lane : 0xFFFFFFFFu;
    dev_pkv_warp_argmin_ord(bv, j0);
    j0 = j0 < npat ? j0 : 0u;
    float bd = dev_pkv_dmm_coop<D>(xt, sb + j0 * PKV_SROW, lane);
    uint32_t bj = j0;
    /* 3. the survivors */
    uint32_t cand = __ballot_sync(0xFFFFFFFFu, has && lane != j0 && PKV_KEEP(b, bd));
    uint32_t n = 1;
    if (__popc(cand) > PKV_PRUNE_FULL) { /* the full scan: each lane its own pattern */
        float hi = -__int_as_float(0x7f800000), lo = __int_as_float(0x7f800000);
        const float4 *xv = (const float4 *)xt, *mv = (const float4 *)ms;
#pragma unroll 8
        for (int k = 0; k < D / 4; k++) {
            const float4 a = xv[k], m = mv[k]; /* x broadcast; 32 rows, no bank conflict */
            const float t0 = __fsub_rn(a.x, m.x), t1 = __fsub_rn(a.y, m.y);
            const float t2 = __fsub_rn(a.z, m.z), t3 = __fsub_rn(a.w, m.w);
            hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
            lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
        }
        float dj = has ? __fsub_rn(hi, lo) : __int_as_float(0x7f800000);
        uint32_t jj = has ? lane : 0xFFFFFFFFu;
        dev_pkv_warp_argmin(dj, jj);
        if (jj < npat) {
            bd = dj;
            bj = jj;
        }
        n += npat;
    } else {
        while (cand != 0u) {             /* warp-uniform: cand is a ballot */
            const uint32_t j = (uint32_t)__ffs(cand) - 1u;
            cand &= cand - 1u;
            const float dj = dev_pkv_dmm_coop<D>(xt, sb + j * PKV_SROW, lane);
            n++;
            if (dj < bd || (dj == bd && j < bj)) { /* (D, j) lexicographic [PKV-A-02] */
                bd = dj;
                bj = j;
            }
            cand &= __ballot_sync(0xFFFFFFFFu, PKV_KEEP(b, bd));
        }
    }
    if (visits != NULL) *visits = n;
    *bd_out = bd;
    return bj;
}

/* The pruned forms' launch shape: blocks of PKV_PRUNE_BS threads (a warp a
 * token) share the bank in shared memory (17 KiB), PKV_PRUNE_BLOCKS of them an
 * SM (at most 64 registers a thread); each warp keeps the rows PKV_AHEAD steps
 * ahead on their way to L2.  Tunables of speed only. */
#define PKV_AHEAD        4
#define PKV_PRUNE_BS     128
#define PKV_PRUNE_BLOCKS 8

/* Lane's float4 of row t of x [tokens][D] (zeros past the last token): loaded a
 * step ahead of its use, so that the load is in flight while the warp assigns
 * the row before it (the pruned argmin is a chain of dependent shuffles and
 * shared-memory reads: latency, not arithmetic, is its cost). */
template <int D>
__device__ __forceinline__ float4 dev_pkv_row_next(const float *__restrict__ x, uint64_t t,
                                                   uint32_t tokens, uint32_t lane)
{
    static_assert(D == 128, "a float4 a lane");
    return t < tokens ? __ldg((const float4 *)(x + t * (uint64_t)D) + lane)
                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* The warp's row (lane's float4 v) into its shared row xs (D floats, 16-byte
 * aligned): after every lane's reads of the row before, before any of this one's. */
template <int D>
__device__ __forceinline__ void dev_pkv_row_stage(float *xs, float4 v, uint32_t lane)
{
    __syncwarp();
    ((float4 *)xs)[lane] = v;
    __syncwarp();
}

/* Ask L2 for the 128-byte lines of a row of d floats, spread over a segment of
 * P lanes (the next token's row while this one's patterns are scanned: the
 * assignment is arithmetic-bound, and a warp has one row in flight otherwise).
 * A hint only: it reads nothing into registers and changes no result. */
__device__ __forceinline__ void dev_pkv_prefetch_row(const float *row, uint32_t d, uint32_t sub,
                                                     uint32_t P)
{
    const uint32_t lines = (d * 4u + 127u) / 128u;
    for (uint32_t l = sub; l < lines; l += P)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row + l * 32u));
}

/* Lane `sub`'s elements of a row of d, for a segment of P lanes: float4 k at
 * 4 (sub + k P) when vec, else element sub + k P. */
#define PKV_SLICE_FOR(i, sub, P, d, vec) \
    for (uint32_t i = (vec) ? 4u * (sub) : (sub); i < (d); i += (vec) ? 4u * (P) : (P))

/* The checks and the extremes of row xt over the lane's slice, then over the
 * segment (every lane calls it). */
__device__ __forceinline__ uint32_t dev_pkv_row_scan(float *vmin, float *vmax, const float *xt,
                                                     uint32_t d, bool vec, uint32_t sub,
                                                     uint32_t lgP, bool act)
{
    const uint32_t P = 1u << lgP;
    uint32_t err = 0;
    float lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000);
    if (act) {
        PKV_SLICE_FOR(i, sub, P, d, vec) {
            if (vec) {
                const float4 a = *(const float4 *)(xt + i);
                err |= dev_pkv_check(a.x) | dev_pkv_check(a.y) | dev_pkv_check(a.z) |
                       dev_pkv_check(a.w);
                lo = fminf(lo, fminf(fminf(a.x, a.y), fminf(a.z, a.w)));
                hi = fmaxf(hi, fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)));
            } else {
                const float a = xt[i];
                err |= dev_pkv_check(a);
                lo = fminf(lo, a);
                hi = fmaxf(hi, a);
            }
        }
    }
    for (uint32_t o = P >> 1; o > 0u; o >>= 1) {
        lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, (int)o));
        hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, (int)o));
    }
    *vmin = lo;
    *vmax = hi;
    return err;
}

/* dev_pkv_row_scan for a warp a row of D = 128 (a float4 a lane), the pruned
 * forms': the extremes by REDUX (dev_pkv_ord; they feed the V decision and the
 * bound's extreme channels, where the sign of a zero extreme changes nothing). */
template <int D>
__device__ __forceinline__ uint32_t dev_pkv_row_scan32(float *vmin, float *vmax, const float *xt,
                                                       uint32_t lane)
{
    static_assert(D == 128, "a float4 a lane");
    const float4 a = *(const float4 *)(xt + 4u * lane);
    const uint32_t err = dev_pkv_check(a.x) | dev_pkv_check(a.y) | dev_pkv_check(a.z) |
                         dev_pkv_check(a.w);
    const float lo = fminf(fminf(a.x, a.y), fminf(a.z, a.w));
    const float hi = fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w));
    *vmin = dev_pkv_unord(__reduce_min_sync(0xFFFFFFFFu, dev_pkv_ord(lo)));
    *vmax = dev_pkv_unord(__reduce_max_sync(0xFFFFFFFFu, dev_pkv_ord(hi)));
    return err;
}

/* The V decision [PKV-V-01] from the extremes of v and its pinned distance
 * to the pattern: Rr = RN32(max - min); Rr = 0 stores v raw; else use the
 * pattern iff RN32(Rf / Rr) <= t (fminf/fmaxf extremes: exact, and the sign of
 * a zero Rr or Rf changes neither test). */
__device__ __forceinline__ bool dev_pkv_v_use(float vmin, float vmax, float rf, float t)
{
    const float rr = __fsub_rn(vmax, vmin);
    if (rr == 0.0f) return false;
    return __fdiv_rn(rf, rr) <= t;
}

/* Warp-wide OR of check bits into the call's state, one atomic a warp. */
__device__ __forceinline__ void dev_pkv_publish_err(kvq_dev_state *st, uint32_t err)
{
    dev_publish(st, 0u, err);
}

/* log2 of the lanes a token takes: the least power of two >= npat, at least 4
 * (a segment's loads of a row then cover whole 64-byte pieces of it) and at most
 * 32 (host side).  Lanes past npat hold no pattern (distance +inf). */
static inline uint32_t pkv_lg_lanes(uint32_t npat)
{
    uint32_t lg = 2;
    while (lg < 5u && (1u << lg) < npat) lg++;
    return lg;
}

/* The extent every PKV call accepts (ref/fast/pkv.c's extent_ok) [PKV-ERR-01]. */
static inline int pkv_extent_ok(uint32_t tokens, uint32_t dim)
{
    return tokens >= 1u && dim >= 1u && tokens <= KVQ_MAX_DIM && dim <= KVQ_MAX_DIM &&
           (uint64_t)tokens * dim <= KVQ_MAX_ELEMS;
}

/* Blocks of bs threads for a grid-stride kernel over `threads` threads. */
static inline unsigned int pkv_grid(uint64_t threads, uint32_t bs)
{
    uint64_t b = (threads + bs - 1u) / bs;
    return (unsigned int)(b > 65535u ? 65535u : (b ? b : 1u));
}

static inline uint64_t pkv_up256(uint64_t n)
{
    return (n + 255u) / 256u * 256u;
}

#endif /* KVQ_PKV_DEV_CUH */
