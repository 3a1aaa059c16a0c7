/*
 * cert_decode.cu -- the certified CERT decode step on CUDA (spec/cert.md,
 * section "The device kernel", [CERT-DEV-01..08]).
 *
 * One step for many query heads at once (GQA: `group` query heads share one
 * KV head).  Four kernels, all stream-ordered, no host synchronisation:
 *
 *   cert_phase1_kernel   one warp a (KV head, block): scores of the block's
 *                        tokens from the INT8 codes for each query head of the
 *                        group, the block log-mass L~_b, Delta'_b [CERT-DLT-05]
 *                        and the block's share of the Phase-1 radius delta1
 *                        [CERT-DEV-02]
 *   cert_select_kernel   one CTA a query head: selection by radix select on
 *                        L~ with integer (fixed-point) masses [CERT-DEV-03],
 *                        promotion, the ranking, boundary and value checks
 *                        evaluated conservatively with delta1, the ladder, and
 *                        E_key / E_val [CERT-DEV-04]
 *   cert_phase2_kernel   one CTA a (query head, chunk of 8 selected blocks):
 *                        scores, chunk softmax, INT4 dequantization in
 *                        registers v^ = fmaf(code, s, zv) [CERT-V4-02];
 *                        promoted blocks and the dense rung read the binary16
 *                        originals from tier 2 (mapped pinned host memory)
 *   cert_combine_kernel  one CTA a query head: the chunk combine, the output,
 *                        E_arith [CERT-AR-01] for the declaration of
 *                        [CERT-DEV-05], the record [CERT-REC-01]
 *
 * Upward-rounded quantities use __fadd_ru/__fmul_ru/__fdiv_ru (and the double
 * forms); everything else is one binary32 rounding to nearest per operation
 * (the build pins -fmad=false -ftz=false -prec-div=true).  expf and logf are
 * the CUDA library functions with the error bounds assumed in [CERT-DEV-02].
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_cuda.h"

/* ---- constants (hex floats; derivations in spec/cert.md [CERT-DEV-02]) ---- */
#define U_EXP_DECL 2.0f              /* CUDA expf: 2 ulp, full range (assumed) */
#define EXP_UP     0x1.000004p+0f    /* 1 + 2^-21 >= 1 / (1 - 2 * 2^-23) */
#define EXP_DN     0x1.fffff8p-1f    /* 1 - 2^-21 */
#define EXP_ABS    0x1p-148f         /* 2 ulp of a subnormal expf result */
#define LOG_ABS    0x1p-22f          /* logf 1 ulp of a result below 4 */
#define W16_LN     0x1.0001p-19f     /* |ln W~ - ln W| for <= 16 terms [CERT-DEV-02] */
#define LAM_UP     0x1.000008p-22f   /* -ln(1 - 2 * 2^-23) <= 2^-22 (1 + 2^-21) */
#define ONE_P23    0x1.000002p+0f    /* 1 + 2^-23 */
#define MASS_SCALE 0x1p+40           /* integer mass units: 2^-40 [CERT-DEV-03] */
#define CHUNK_BLK  8u                /* blocks per Phase-2 chunk */
#define CHUNK_TOK  (CHUNK_BLK * KVQ_CERT_BLOCK)
#define P2_THREADS 128u
#define SEL_THREADS 1024u
#define P1_WARPS   8u
#define MAX_CHUNK_CTAS 32u
#define STAGE_MAX_D 128u             /* Phase-2 staging of tier-2 rows: d <= 128 */
#define STAGE_BYTES (2u * CHUNK_TOK * STAGE_MAX_D * 2u)           /* Phase-2 CTAs per head (they loop over chunks) */

#define ENT_PROM   0x80000000u       /* list entry: block promoted */
#define ENT_RES    0x40000000u       /* list entry: the residual block */
#define ENT_DENSE  0x20000000u       /* list entry: dense pass (keys from tier 2) */
#define ENT_BLOCK  0x00ffffffu

/* Per query head, written by the select kernel, read by Phase 2 / combine. */
typedef struct head_info {
    uint32_t rung, k_sel, n_prom, checks;
    uint32_t nent;                   /* list entries (selected blocks + residual) */
    uint32_t ntok;                   /* tokens attended */
    uint32_t status;                 /* kvq_status */
    float delta, alpha_hat, vmax, vh, ekey, ekey_paper, eval, delta1;
} head_info;

struct kvq_cuda_cert_ws {
    uint32_t qheads, nb, nq, d;
    float *lt, *dp, *eb;             /* [qh][nb] L~_b, Delta'_b, radius of block b */
    uint32_t *err, *dmax;            /* [qh] float bits, atomicMax */
    uint32_t *key;                   /* [qh][nq] ordered L~ */
    unsigned long long *lo, *hi;     /* [qh][nb] integer masses */
    uint32_t *list;                  /* [qh][nb] */
    head_info *info;                 /* [qh] */
    float *pm, *pl, *pacc, *pabs, *pmax, *pmin; /* [qh][nch] (pacc: [qh][nch][d]) */
    uint32_t nch;
    float *dbg;                      /* [qh][12] intermediate E_arith terms (diagnostics) */
};

/* ---- small device helpers ------------------------------------------------ */

__device__ __forceinline__ float warp_sum_rn(float x)
{
    /* xor butterfly: every lane ends with the same value (each pair adds the
     * same two operands, addition is commutative) */
    for (int o = 16; o > 0; o >>= 1) x = __fadd_rn(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ float warp_sum_ru(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = __fadd_ru(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* Order-preserving map of a finite float onto uint32. */
__device__ __forceinline__ uint32_t ord_key(float x)
{
    uint32_t u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float f16_at(const uint16_t *p, uint64_t i)
{
    return __half2float(__ushort_as_half(p[i]));
}

/* gamma_{d+1} = (d+1) 2^-24 / (1 - (d+1) 2^-24), upward [CERT-AR-01]. */
__device__ __forceinline__ float gamma_up(uint32_t m)
{
    const float a = __fmul_ru((float)m, 0x1p-24f);
    return __fdiv_ru(a, __fsub_rd(1.0f, a));
}

/* eps_s for a bound S of max_i sum_c |q_c||k_ic| [CERT-AR-01]:
 * gamma_{d+1} scale S + (scale d + 1) 2^-149, upward. */
__device__ __forceinline__ float eps_scores(float sabs, float scale, uint32_t d)
{
    const float a = __fmul_ru(__fmul_ru(gamma_up(d + 1u), scale), sabs);
    const float b = __fmul_ru(__fadd_ru(__fmul_ru(scale, (float)d), 1.0f), 0x1p-149f);
    return __fadd_ru(a, b);
}

/* ---- Phase 1 ---------------------------------------------------------------
 * One warp a (KV head, block b).  Lane L holds the channel quads
 * cq = L + 32 j, j < 4 (channels 4 cq .. 4 cq + 3), so one token's codes are
 * one 32-bit load per lane; sigma and z stay in registers for the whole group.
 * A lane's partial dot products go through shared memory and lane t < 16 sums
 * token t's 32 partials in lane order: a term meets 1 (product) + at most
 * 15 (in-lane) + 31 (across lanes) + 1 (scale) roundings, and adding a lane's
 * exact +0 rounds nothing, so at most d + 1 for every d [CERT-DEV-02].
 * SPEC: [CERT-LM-02] [CERT-DLT-05] [CERT-DEV-02] */
#define P1_J 4u                      /* quads per lane: d <= 512 */
template <bool CERT>
__global__ void __launch_bounds__(P1_WARPS * 32)
cert_phase1_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws)
{
    __shared__ float part[P1_WARPS][KVQ_CERT_BLOCK][33];
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t b = blockIdx.x * P1_WARPS + warp, kv = blockIdx.y;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    if (b >= nb) return;                 /* warp-uniform */
    const uint32_t nquad = d / 4u;
    const uint32_t ntok = kvq_cert_block_tokens(&sh, b);
    const bool full = b < nq;
    const int8_t *kc = h.d_kcodes + (uint64_t)kv * kvq_cert_key_code_bytes(&sh) +
                       kvq_cert_key_block_offset(&sh, full ? b : 0u);
    const float *sg = h.d_sigma + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const float *zz = h.d_z + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh);
    const uint16_t *kr = h.d_kres + (uint64_t)kv * nres * d;
    float sgr[P1_J][4], zr[P1_J][4];
#pragma unroll
    for (uint32_t j = 0; j < P1_J; j++) {
        const uint32_t cq = lane + 32u * j;
#pragma unroll
        for (uint32_t e = 0; e < 4u; e++) {
            sgr[j][e] = 0.0f;
            zr[j][e] = 0.0f;
            if (full && cq < nquad) {
                sgr[j][e] = sg[kvq_cert_key_meta_index(&sh, b, 4u * cq + e)];
                zr[j][e] = zz[kvq_cert_key_meta_index(&sh, b, 4u * cq + e)];
            }
        }
    }
    for (uint32_t g = 0; g < h.group; g++) {
        const uint32_t qh = kv * h.group + g;
        const float *q = h.d_q + (uint64_t)qh * d;
        float qr[P1_J][4];
        float dpart = 0.0f, apart = 0.0f;
#pragma unroll
        for (uint32_t j = 0; j < P1_J; j++) {
            const uint32_t cq = lane + 32u * j;
#pragma unroll
            for (uint32_t e = 0; e < 4u; e++) qr[j][e] = cq < nquad ? q[4u * cq + e] : 0.0f;
        }
        if (full && CERT) {
            /* Delta'_b = scale sum_c |q_c| (sigma/2 + gamma'), gamma' =
             * 2^-20 |z| + 2^-12 sigma + 2^-149, every operation upward
             * [CERT-DLT-05]; and sum_c |q_c| (|z| + 128 sigma)(1 + 2^-23) >=
             * max_i sum_c |q_c||k^_ic| (|code| <= 128, one fmaf rounding). */
#pragma unroll
            for (uint32_t j = 0; j < P1_J; j++) {
                if (lane + 32u * j >= nquad) continue;
#pragma unroll
                for (uint32_t e = 0; e < 4u; e++) {
                    const float sv = sgr[j][e], zv = fabsf(zr[j][e]), aq = fabsf(qr[j][e]);
                    float gp = __fadd_ru(__fmul_ru(zv, 0x1p-20f), __fmul_ru(sv, 0x1p-12f));
                    gp = __fadd_ru(gp, 0x1p-149f);
                    dpart = __fadd_ru(dpart, __fmul_ru(aq, __fadd_ru(__fmul_ru(sv, 0.5f), gp)));
                    const float kb = __fmul_ru(__fadd_ru(__fmul_ru(sv, 128.0f), zv), ONE_P23);
                    apart = __fadd_ru(apart, __fmul_ru(aq, kb));
                }
            }
            dpart = warp_sum_ru(dpart);
            apart = warp_sum_ru(apart);
        }
        /* partial dot products of the lane's channels, token by token */
        for (uint32_t i = 0; i < ntok; i++) {
            float acc = 0.0f, aabs = 0.0f;
#pragma unroll
            for (uint32_t j = 0; j < P1_J; j++) {
                const uint32_t cq = lane + 32u * j;
                if (cq >= nquad) continue;
                float kk[4];
                if (full) {
                    const uint32_t w4 =
                        *(const uint32_t *)(kc + kvq_cert_key_code_index(d, i, 4u * cq));
#pragma unroll
                    for (uint32_t e = 0; e < 4u; e++) /* k^ = fmaf(code, sigma, z) [CERT-K8-03] */
                        kk[e] = __fmaf_rn((float)(int8_t)(uint8_t)(w4 >> (8u * e)), sgr[j][e],
                                          zr[j][e]);
                } else {
#pragma unroll
                    for (uint32_t e = 0; e < 4u; e++)
                        kk[e] = f16_at(kr, (uint64_t)i * d + 4u * cq + e);
                }
#pragma unroll
                for (uint32_t e = 0; e < 4u; e++) {
                    acc = __fadd_rn(acc, __fmul_rn(qr[j][e], kk[e]));
                    if (CERT && !full)
                        aabs = __fadd_ru(aabs, __fmul_ru(fabsf(qr[j][e]), fabsf(kk[e])));
                }
            }
            part[warp][i][lane] = acc;
            if (CERT && !full) {
                aabs = warp_sum_ru(aabs);
                if (lane == 0) part[warp][i][32] = aabs;
            }
        }
        __syncwarp();
        /* lane t < ntok: token t's score; lanes >= ntok: -inf */
        float s = -INFINITY, amax = 0.0f;
        if (lane < ntok) {
            float dot = 0.0f;
            for (uint32_t l = 0; l < 32u; l++) dot = __fadd_rn(dot, part[warp][lane][l]);
            s = __fmul_rn(h.scale, dot);
            if (CERT && !full) amax = part[warp][lane][32];
        }
        __syncwarp();
        /* L~_b = m + logf(sum_i expf(s~_i - m)) (a 16-lane tree: <= 15 roundings a term) */
        const float m = warp_max(s);
        float mn = lane < ntok ? s : INFINITY;
        for (int o = 16; o > 0; o >>= 1) mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
        if (CERT && !full) amax = warp_max(amax);
        const float w = warp_sum_rn(lane < ntok ? expf(__fsub_rn(s, m)) : 0.0f);
        const float lt = __fadd_rn(m, logf(w));
        if (lane == 0u) {
            ws.lt[(uint64_t)qh * nb + b] = lt;
            if (CERT) {
                const float dpb = full ? __fmul_ru(h.scale, dpart) : 0.0f;
                ws.dp[(uint64_t)qh * nb + b] = dpb;
                /* err_b >= |L~_b - L_b| [CERT-DEV-02]:
                 *   eps_b               scores (Phase-1 dot products and scale)
                 * + 2^-24 (m - mn)      the subtraction s~_i - m
                 * + W16_LN              expf (2 ulp each) and <= 15 additions
                 * + LOG_ABS             logf (1 ulp of a result below 4)
                 * + 2^-23 |L~| + 2^-149 the final addition */
                const float sab = full ? apart : amax;
                float e = eps_scores(sab, h.scale, d);
                e = __fadd_ru(e, __fmul_ru(__fsub_ru(m, mn), 0x1p-24f));
                e = __fadd_ru(e, W16_LN);
                e = __fadd_ru(e, LOG_ABS);
                e = __fadd_ru(e, __fadd_ru(__fmul_ru(fabsf(lt), 0x1p-23f), 0x1p-149f));
                ws.eb[(uint64_t)qh * nb + b] = e;
            }
        }
    }
}

/* ---- selection, checks, ladder ------------------------------------------- */

typedef cub::BlockReduce<float, SEL_THREADS> RedF;
typedef cub::BlockReduce<unsigned long long, SEL_THREADS> RedU;
typedef cub::BlockReduce<double, SEL_THREADS> RedD;
typedef cub::BlockScan<uint32_t, SEL_THREADS> ScanU;

struct sel_smem {
    union {
        typename RedF::TempStorage rf;
        typename RedU::TempStorage ru;
        typename RedD::TempStorage rd;
        typename ScanU::TempStorage su;
        typename cub::BlockReduce<uint32_t, SEL_THREADS>::TempStorage rx;
    } t;
    unsigned int hcnt[256];
    unsigned long long hlo[256], hhi[256];
    float bf;
    double bd;
    unsigned long long bu, bu2, tlo, thi;
    uint32_t bx, by, tcnt;
};

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
    __device__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct MinU {
    __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a < b ? a : b; }
};
struct AddRuD {
    __device__ double operator()(double a, double b) const { return __dadd_ru(a, b); }
};
struct AddRdD {
    __device__ double operator()(double a, double b) const { return __dadd_rd(a, b); }
};

/* Coverage test in integer masses [CERT-DEV-03]: tail * tau <= sel * (1 - tau),
 * decided with directed rounding so that a pass implies the real inequality
 * for the masses e^{L~_b - M} that the integers enclose. */
__device__ __forceinline__ bool cover_ok(unsigned long long tail_hi, unsigned long long sel_lo,
                                         float tau)
{
    if (tail_hi == 0ull) return true;
    const double lhs = __dmul_ru(__ull2double_ru(tail_hi), (double)tau);
    const double rhs = __dmul_rd(__ull2double_rd(sel_lo), __dsub_rd(1.0, (double)tau));
    return lhs <= rhs;
}

struct sel_pred {
    uint32_t mode;                   /* 0: coverage and clamp, 1: fixed count */
    uint32_t kmin, kcap, kfix;
    unsigned long long full_hi, res_lo;
    float tau;
    __device__ bool operator()(uint32_t k, unsigned long long set_lo,
                               unsigned long long set_hi) const
    {
        if (mode == 1u) return k >= kfix;
        if (k >= kcap) return true;
        return k >= kmin && cover_ok(full_hi - set_hi, set_lo + res_lo, tau);
    }
};

/* Radix select over the ordered keys of head qh: the selection is the set of
 * the first K blocks of the order "L~ descending, ties to the lower index",
 * K the least k with pred(k).  Writes flag bit 0 of sel[] (smem-free: global
 * list used as scratch).  Returns K. */
__device__ uint32_t radix_select(sel_smem &S, const uint32_t *key, const unsigned long long *lo,
                                 const unsigned long long *hi, uint32_t nq, const sel_pred &P,
                                 uint8_t *flag)
{
    const uint32_t tid = threadIdx.x;
    uint32_t prefix = 0, pmask = 0;
    uint32_t above_cnt = 0;
    unsigned long long above_lo = 0, above_hi = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint32_t j = tid; j < 256u; j += blockDim.x) {
            S.hcnt[j] = 0;
            S.hlo[j] = 0;
            S.hhi[j] = 0;
        }
        __syncthreads();
        /* keys of one head share their high bits, so most lanes of a warp
         * hit the same bucket: the lanes of one bucket add their values
         * first (exact integers) and one of them updates shared memory */
        const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
        for (uint32_t rd = 0; rd < nround; rd++) {
            const uint32_t b = rd * blockDim.x + tid;
            uint32_t dg = 0xffffu;
            unsigned long long vl = 0, vh = 0;
            if (b < nq) {
                const uint32_t kb = key[b];
                if ((kb & pmask) == prefix) {
                    dg = (kb >> shift) & 255u;
                    vl = lo[b];
                    vh = hi[b];
                }
            }
            const uint32_t peers = __match_any_sync(0xffffffffu, dg);
            uint32_t cnt = 0;
            unsigned long long sl = 0, sh2 = 0;
            for (int src = 0; src < 32; src++) {
                const unsigned long long xl = __shfl_sync(0xffffffffu, vl, src);
                const unsigned long long xh = __shfl_sync(0xffffffffu, vh, src);
                if (peers & (1u << src)) {
                    cnt++;
                    sl += xl;
                    sh2 += xh;
                }
            }
            if (dg != 0xffffu && (threadIdx.x & 31u) == (uint32_t)(__ffs(peers) - 1)) {
                atomicAdd(&S.hcnt[dg], cnt);
                atomicAdd(&S.hlo[dg], sl);
                atomicAdd(&S.hhi[dg], sh2);
            }
        }
        __syncthreads();
        if (tid < 32u) {
            /* buckets from the top, the first whose end satisfies pred: lane L
             * takes buckets 255 - 8L .. 248 - 8L; an exclusive warp scan of the
             * lane totals gives each lane the sums above its buckets (exact
             * integers: the order of the additions does not matter) */
            const uint32_t lane = tid;
            uint32_t c = 0;
            unsigned long long l = 0, hh = 0;
            for (uint32_t j = 0; j < 8u; j++) {
                const uint32_t dg = 255u - 8u * lane - j;
                c += S.hcnt[dg];
                l += S.hlo[dg];
                hh += S.hhi[dg];
            }
            uint32_t pc = c;
            unsigned long long pl = l, ph = hh;
            for (int o = 1; o < 32; o <<= 1) {
                const uint32_t xc = __shfl_up_sync(0xffffffffu, pc, o);
                const unsigned long long xl = __shfl_up_sync(0xffffffffu, pl, o);
                const unsigned long long xh = __shfl_up_sync(0xffffffffu, ph, o);
                if (lane >= (uint32_t)o) {
                    pc += xc;
                    pl += xl;
                    ph += xh;
                }
            }
            c = above_cnt + pc - c;          /* exclusive */
            l = above_lo + pl - l;
            hh = above_hi + ph - hh;
            int found = -1;
            for (uint32_t j = 0; j < 8u; j++) {
                const uint32_t dg = 255u - 8u * lane - j;
                if (S.hcnt[dg] == 0u) continue;
                if (P(c + S.hcnt[dg], l + S.hlo[dg], hh + S.hhi[dg])) {
                    found = (int)dg;
                    break;
                }
                c += S.hcnt[dg];
                l += S.hlo[dg];
                hh += S.hhi[dg];
            }
            /* pred(nq) holds (kcap or kfix <= nq): some lane finds a bucket */
            const uint32_t ball = __ballot_sync(0xffffffffu, found >= 0);
            if (ball != 0u && lane == (uint32_t)(__ffs(ball) - 1)) {
                S.bx = (uint32_t)found;
                S.by = c;
                S.bu = l;
                S.bu2 = hh;
                S.tcnt = S.hcnt[found];      /* at the last pass: the ties of t* */
                S.tlo = S.hlo[found] / S.hcnt[found];
                S.thi = S.hhi[found] / S.hcnt[found];
            }
        }
        __syncthreads();
        prefix |= S.bx << shift;
        pmask |= 255u << shift;
        above_cnt = S.by;
        above_lo = S.bu;
        above_hi = S.bu2;
        __syncthreads();
    }
    /* prefix = the key t* of the last selected block; above_* = keys > t*.
     * The ties (key == t*) have identical masses; take the least j of them
     * (lowest indices first) with pred. */
    if (tid == 0) {
        /* equal keys are equal L~, hence equal masses: per-tie lo, hi exact */
        const uint32_t ct = S.tcnt;
        const unsigned long long tl = S.tlo, th = S.thi;
        uint32_t a = 1, z = ct;      /* pred(above + ct) holds */
        while (a < z) {
            const uint32_t mid = a + (z - a) / 2u;
            if (P(above_cnt + mid, above_lo + tl * mid, above_hi + th * mid)) z = mid;
            else a = mid + 1u;
        }
        S.bx = a;
    }
    __syncthreads();
    const uint32_t jt = S.bx;
    /* ranks of the ties in index order: blocked distribution + scan */
    const uint32_t per = (nq + blockDim.x - 1u) / blockDim.x;
    const uint32_t b0 = tid * per, b1 = min(nq, b0 + per);
    uint32_t cnt = 0, rank;
    for (uint32_t b = b0; b < b1; b++) cnt += key[b] == prefix ? 1u : 0u;
    ScanU(S.t.su).ExclusiveSum(cnt, rank);
    __syncthreads();
    for (uint32_t b = b0; b < b1; b++) {
        uint8_t f = 0;
        if (key[b] > prefix) f = 1;
        else if (key[b] == prefix) f = (rank++ < jt) ? 1 : 0;
        flag[b] = f;
    }
    __syncthreads();
    return above_cnt + jt;
}

/* Block sums over the selected full blocks (flag != 0) and the tail. */
__device__ void set_sums(sel_smem &S, const uint8_t *flag, const unsigned long long *lo,
                         const unsigned long long *hi, uint32_t nq, unsigned long long *sl,
                         unsigned long long *sh)
{
    unsigned long long a = 0, c = 0;
    for (uint32_t b = threadIdx.x; b < nq; b += blockDim.x)
        if (flag[b]) {
            a += lo[b];
            c += hi[b];
        }
    unsigned long long r = RedU(S.t.ru).Sum(a);
    __syncthreads();
    if (threadIdx.x == 0) S.bu = r;
    __syncthreads();
    *sl = S.bu;
    __syncthreads();
    r = RedU(S.t.ru).Sum(c);
    __syncthreads();
    if (threadIdx.x == 0) S.bu = r;
    __syncthreads();
    *sh = S.bu;
    __syncthreads();
}

__device__ float block_max(sel_smem &S, float x)
{
    float r = RedF(S.t.rf).Reduce(x, MaxOp());
    __syncthreads();
    if (threadIdx.x == 0) S.bf = r;
    __syncthreads();
    r = S.bf;
    __syncthreads();
    return r;
}

__device__ double block_sum_ru(sel_smem &S, double x)
{
    double r = RedD(S.t.rd).Reduce(x, AddRuD());
    __syncthreads();
    if (threadIdx.x == 0) S.bd = r;
    __syncthreads();
    r = S.bd;
    __syncthreads();
    return r;
}

__device__ double block_sum_rd(sel_smem &S, double x)
{
    double r = RedD(S.t.rd).Reduce(x, AddRdD());
    __syncthreads();
    if (threadIdx.x == 0) S.bd = r;
    __syncthreads();
    r = S.bd;
    __syncthreads();
    return r;
}

__device__ uint32_t block_count(sel_smem &S, uint32_t x)
{
    uint32_t r = 0, tot = 0;
    ScanU(S.t.su).ExclusiveSum(x, r, tot);
    __syncthreads();
    return tot;
}

/* e^x upward for a float x >= 0 (expf: 2 ulp [CERT-DEV-02]); +inf on overflow. */
__device__ __forceinline__ double exp_up(float x)
{
    const float e = expf(x);
    if (!isfinite(e)) return (double)INFINITY;
    return __dmul_ru((double)e, (double)EXP_UP);
}

__device__ __forceinline__ double exp_dn(float x)
{
    return __dmul_rd((double)expf(x), (double)EXP_DN);
}

/* Promotion [CERT-PROM-01..03] of the selected full blocks (flag bit 0) into
 * flag bit 1: threshold eta > vtol nu exactly (the double product of two
 * binary32 values is exact), at most `budget` of them (lowest indices first)
 * under [CERT-PROM-02]; all of them at rung 2.  Returns the count. */
__device__ uint32_t promote(sel_smem &S, uint8_t *flag, const float *eta, const float *nu,
                            uint32_t nq, float vtol, uint32_t budget, bool all)
{
    const uint32_t per = (nq + blockDim.x - 1u) / blockDim.x;
    const uint32_t b0 = threadIdx.x * per, b1 = min(nq, b0 + per);
    uint32_t cnt = 0, rank = 0, tot = 0;
    for (uint32_t b = b0; b < b1; b++) {
        const bool want = (flag[b] & 1u) &&
                          (all || (double)eta[b] > (double)vtol * (double)nu[b]);
        cnt += want ? 1u : 0u;
    }
    ScanU(S.t.su).ExclusiveSum(cnt, rank, tot);
    __syncthreads();
    const uint32_t cap = all ? 0xffffffffu : budget;
    for (uint32_t b = b0; b < b1; b++) {
        const bool want = (flag[b] & 1u) &&
                          (all || (double)eta[b] > (double)vtol * (double)nu[b]);
        uint8_t f = flag[b] & 1u;
        if (want && rank++ < cap) f |= 2u;
        flag[b] = f;
    }
    __syncthreads();
    return tot < cap ? tot : cap;
}

/* Everything the ladder needs about one candidate selection [CERT-DEV-04]. */
struct eval_out {
    bool rank, bound, value, cover;
    float ekey, eval, alpha, ekey_paper, vh;
};

__device__ eval_out evaluate(sel_smem &S, const uint8_t *flag, const float *lt, const float *dp,
                             const float *eta, const float *nu, const unsigned long long *lo,
                             const unsigned long long *hi, uint32_t nq, uint32_t nb,
                             const kvq_cert_params &prm, float delta1, float dmax, float vmax,
                             unsigned long long full_hi, unsigned long long res_lo,
                             unsigned long long res_hi, bool threshold)
{
    eval_out o;
    const uint32_t tid = threadIdx.x;
    unsigned long long sl, shh;
    set_sums(S, flag, lo, hi, nq, &sl, &shh);
    const unsigned long long tail_hi = full_hi - shh;  /* exact integers */
    const unsigned long long sel_lo = sl + res_lo;
    const unsigned long long sel_hi = shh + res_hi;
    uint32_t ksel = 0;
    {
        uint32_t c = 0;
        for (uint32_t b = tid; b < nq; b += blockDim.x) c += flag[b] & 1u;
        ksel = block_count(S, c);
    }
    const bool t_empty = ksel == nq;
    /* ranking [CERT-RANK-01]: lambda_r - delta1 > U + delta1 + eps_guard */
    float u = -INFINITY;
    for (uint32_t b = tid; b < nq; b += blockDim.x)
        if (!(flag[b] & 1u)) u = fmaxf(u, __fadd_ru(lt[b], dp[b]));
    u = block_max(S, u);
    float lam = -INFINITY;
    {
        /* r-th greatest of L~_b - Delta'_b (downward) over S: r rounds of
         * (max value, lowest index) */
        float prev = INFINITY;
        uint32_t prev_idx = 0xffffffffu;
        const uint32_t r = prm.r;
        for (uint32_t it = 0; it < r && it < ksel; it++) {
            float best = -INFINITY;
            uint32_t bi = 0xffffffffu;
            for (uint32_t b = tid; b < nq; b += blockDim.x) {
                if (!(flag[b] & 1u)) continue;
                const float x = __fsub_rd(lt[b], dp[b]);
                const bool after = x < prev || (x == prev && b > prev_idx);
                if (!after) continue;
                if (x > best || (x == best && b < bi)) {
                    best = x;
                    bi = b;
                }
            }
            const float mb = block_max(S, best);
            uint32_t cand = (best == mb) ? bi : 0xffffffffu;
            /* lowest index among the maxima */
            {
                uint32_t r2 = cub::BlockReduce<uint32_t, SEL_THREADS>(S.t.rx).Reduce(cand, MinU());
                __syncthreads();
                if (tid == 0) S.bx = r2;
                __syncthreads();
                cand = S.bx;
                __syncthreads();
            }
            prev = mb;
            prev_idx = cand;
            if (it + 1u == r) lam = mb;
        }
    }
    o.rank = t_empty ||
             (__fsub_rd(lam, delta1) > __fadd_ru(__fadd_ru(u, delta1), prm.eps_guard));
    /* alpha^_T from above: odds(alpha^) <= e^{2 delta1} tail_hi / sel_lo
     * [CERT-DEV-04]; A: odds(A) = e^{2 Delta} odds(alpha^) */
    const double e2d1 = exp_up(__fmul_ru(2.0f, delta1));
    double odds = 0.0;
    if (tail_hi != 0ull)
        odds = sel_lo == 0ull ? (double)INFINITY
                              : __dmul_ru(e2d1, __ddiv_ru(__ull2double_ru(tail_hi),
                                                          __ull2double_rd(sel_lo)));
    const double e2D = exp_up(__fmul_ru(2.0f, dmax));
    const double oddsA = odds == 0.0 ? 0.0 : __dmul_ru(e2D, odds);
    double A = isinf(oddsA) ? 1.0 : __ddiv_ru(oddsA, __dadd_rd(1.0, oddsA));
    if (A > 1.0) A = 1.0;
    double alpha = isinf(odds) ? 1.0 : __ddiv_ru(odds, __dadd_rd(1.0, odds));
    if (alpha > 1.0) alpha = 1.0;
    o.alpha = __double2float_ru(alpha);
    /* boundary [CERT-BND-01]: A <= (1 - tau) e^{eps_guard} */
    {
        const double c = __dmul_rd(__dsub_rd(1.0, (double)prm.tau), exp_dn(prm.eps_guard));
        if (t_empty || c >= 1.0) o.bound = true;
        else o.bound = oddsA <= __ddiv_rd(c, __dsub_ru(1.0, c));
    }
    /* E_key [CERT-EK-01] = 2 Vmax (A + t (1 - A)), t = tanh(Delta/2) <= Delta/2 */
    {
        const double t = (double)dmax * 0.5;
        const double f = __dadd_ru(A, __dmul_ru(t, __dsub_ru(1.0, A)));
        o.ekey = __double2float_ru(__dmul_ru(__dmul_ru(2.0, (double)vmax), f));
        /* the paper's term [CERT-EK-02], informative, to nearest */
        const double e2 = (double)expf(2.0f * dmax);
        o.ekey_paper = (float)(2.0 * vmax * e2 * alpha * (e2 - 1.0));
    }
    /* E_val [CERT-EV-01] <= e^{2 delta1} sum_{S, not promoted} hi_b eta_b / sel_lo,
     * and <= max eta' (sum rho_b = 1) [CERT-EV-02] */
    {
        double acc = 0.0, vlo = 0.0;
        float emax = 0.0f, vh = 0.0f;
        for (uint32_t b = tid; b < nq; b += blockDim.x) {
            if (!(flag[b] & 1u)) continue;
            if (!(flag[b] & 2u)) {
                acc = __dadd_ru(acc, __dmul_ru(__ull2double_ru(hi[b]), (double)eta[b]));
                emax = fmaxf(emax, eta[b]);
                vh = fmaxf(vh, __fadd_ru(nu[b], eta[b]));  /* ||v^|| <= ||v|| + eta */
            } else {
                vh = fmaxf(vh, nu[b]);
            }
            vlo = __dadd_rd(vlo, __dmul_rd(__ull2double_rd(lo[b]), (double)nu[b]));
        }
        if (nb > nq) vh = fmaxf(vh, nu[nq]);      /* residual: originals */
        acc = block_sum_ru(S, acc);
        vlo = block_sum_rd(S, vlo);
        if (nb > nq) vlo = __dadd_rd(vlo, __dmul_rd(__ull2double_rd(res_lo), (double)nu[nq]));
        emax = block_max(S, emax);
        o.vh = block_max(S, vh);
        double ev = sel_lo == 0ull ? (double)INFINITY
                                   : __dmul_ru(e2d1, __ddiv_ru(acc, __ull2double_rd(sel_lo)));
        float evf = __double2float_ru(ev);
        o.eval = fminf(evf, emax);
        if (threshold) {
            o.value = true;          /* [CERT-PROM-01]: every unpromoted eta_b <= vtol nu_b */
        } else {
            /* vtol sum_S rho_b nu_b from below: rho_b >= e^{-2 delta1} lo_b / sel_hi */
            const double rhs = __ddiv_rd(__dmul_rd(__dmul_rd((double)prm.vtol, vlo),
                                                   __drcp_rd(e2d1)),
                                         __ull2double_ru(sel_hi));
            o.value = (double)o.eval <= rhs;
        }
    }
    o.cover = cover_ok(tail_hi, sel_lo, prm.tau);
    return o;
}

/* One CTA a query head. */
template <bool CERT>
__global__ void __launch_bounds__(SEL_THREADS)
cert_select_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, kvq_cert_params prm,
                   uint8_t *d_sel, uint8_t *d_prom)
{
    __shared__ sel_smem S;
    const uint32_t qh = blockIdx.x, tid = threadIdx.x, kv = qh / h.group;
    const kvq_cert_shape sh = h.shape;
    const uint32_t nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const float *lt = ws.lt + (uint64_t)qh * nb, *dp = ws.dp + (uint64_t)qh * nb;
    const float *eta = h.d_eta + (uint64_t)kv * nb, *nu = h.d_nu + (uint64_t)kv * nb;
    uint32_t *key = ws.key + (uint64_t)qh * (nq ? nq : 1u);
    unsigned long long *lo = ws.lo + (uint64_t)qh * nb, *hi = ws.hi + (uint64_t)qh * nb;
    uint8_t *flag = (uint8_t *)(ws.list + (uint64_t)qh * nb); /* scratch, then the list */
    head_info *inf = ws.info + qh;

    /* M = max L~ (residual included); integer masses [CERT-DEV-03] */
    float m = -INFINITY, vmax = 0.0f;
    for (uint32_t b = tid; b < nb; b += blockDim.x) {
        m = fmaxf(m, lt[b]);
        vmax = fmaxf(vmax, nu[b]);
    }
    m = block_max(S, m);
    vmax = block_max(S, vmax);                      /* [CERT-ANN-04] */
    unsigned long long fh = 0;
    for (uint32_t b = tid; b < nb; b += blockDim.x) {
        /* E_b = e^{L~_b - M} within [lo, hi] 2^-40: x = RN(L~_b - M) errs by
         * <= 2^-24 |x| (factor e^{2^-24 |x|} <= 1 + 2^-23 |x| for |x| <= 2^23),
         * expf by 2 ulp (relative 2^-22, or 2^-148 absolute when subnormal) */
        const float x = __fsub_rn(lt[b], m);
        const float ax = fabsf(x);
        unsigned long long l = 0ull, u = 1ull;
        if (ax <= 0x1p+23f) {
            const float e = expf(x);
            const float fu = __fadd_ru(1.0f, __fmul_ru(ax, 0x1p-23f));
            const float fd = __fsub_rd(1.0f, __fmul_ru(ax, 0x1p-23f));
            const float up = __fmul_ru(__fmul_ru(__fadd_ru(e, EXP_ABS), EXP_UP), fu);
            float dn = __fmul_rd(__fmul_rd(__fsub_rd(e, EXP_ABS), EXP_DN), fd);
            if (!(dn > 0.0f)) dn = 0.0f;
            u = __double2ull_ru(__dmul_ru((double)up, MASS_SCALE));
            l = __double2ull_rd(__dmul_rd((double)dn, MASS_SCALE));
            if (u == 0ull) u = 1ull;
        }
        lo[b] = l;
        hi[b] = u;
        if (b < nq) {
            key[b] = ord_key(lt[b]);
            fh += u;
        }
    }
    __syncthreads();
    {
        unsigned long long r = RedU(S.t.ru).Sum(fh);
        __syncthreads();
        if (tid == 0) S.bu = r;
        __syncthreads();
        fh = S.bu;
        __syncthreads();
    }
    const unsigned long long res_lo = nb > nq ? lo[nq] : 0ull, res_hi = nb > nq ? hi[nq] : 0ull;
    /* delta1 = max_b err_b [CERT-DEV-02]; Delta' = max over full blocks [CERT-DLT-02] */
    float delta1 = 0.0f, dmax = 0.0f;
    if (CERT) {
        const float *eb = ws.eb + (uint64_t)qh * nb;
        for (uint32_t b = tid; b < nb; b += blockDim.x) {
            delta1 = fmaxf(delta1, eb[b]);
            if (b < nq) dmax = fmaxf(dmax, dp[b]);
        }
        delta1 = block_max(S, delta1);
        dmax = block_max(S, dmax);
    }
    const uint32_t kmin = min(prm.kmin, nq), kcap0 = min(prm.kmax, nq);
    const bool threshold = prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD;

    uint32_t rung = prm.start_rung, k = 0, nprom = 0, checks = 0;
    eval_out ev;
    memset(&ev, 0, sizeof ev);
    bool accepted = false;
    uint32_t k0 = 0;
    if (rung <= 2u && nq > 0u) {
        sel_pred P;
        P.mode = 0u;
        P.kmin = kmin;
        P.kcap = kcap0;
        P.kfix = 0u;
        P.full_hi = fh;
        P.res_lo = res_lo;
        P.tau = prm.tau;
        k0 = radix_select(S, key, lo, hi, nq, P, flag);   /* [CERT-SEL-01/02] */
    }
    for (; rung <= 2u && !accepted; rung++) {
        if (nq == 0u) {                                   /* S = {residual} */
            k = 0;
            for (uint32_t b = tid; b < nq; b += blockDim.x) flag[b] = 0;
        } else if (rung == 0u) {
            k = k0;
        } else {
            const uint32_t k1 = min(2u * k0, nq);          /* [CERT-SEL-01] rung 1 */
            if (k1 != k) {
                sel_pred P;
                P.mode = 1u;
                P.kfix = k1;
                P.kmin = P.kcap = 0u;
                P.full_hi = fh;
                P.res_lo = res_lo;
                P.tau = prm.tau;
                k = radix_select(S, key, lo, hi, nq, P, flag);
            }
        }
        __syncthreads();
        nprom = promote(S, flag, eta, nu, nq, prm.vtol, threshold ? 0xffffffffu : prm.promote_budget,
                        rung == 2u);
        if (!CERT) {
            accepted = true;
            break;
        }
        ev = evaluate(S, flag, lt, dp, eta, nu, lo, hi, nq, nb, prm, delta1, dmax, vmax, fh,
                      res_lo, res_hi, threshold || rung == 2u);
        if (rung == 2u) ev.eval = 0.0f;                     /* [CERT-PROM-03] */
        checks = (ev.rank ? KVQ_CERT_CHECK_RANK : 0u) | (ev.bound ? KVQ_CERT_CHECK_BOUNDARY : 0u) |
                 (ev.value ? KVQ_CERT_CHECK_VALUE : 0u) | (ev.cover ? KVQ_CERT_CHECK_COVERAGE : 0u);
        accepted = ev.rank && ev.bound && ev.value;        /* [CERT-LAD-02] */
        if (accepted) break;
    }
    const bool dense = !accepted;                           /* rung 3 [CERT-LAD-01] */
    if (dense) {
        rung = prm.start_rung > 3u ? prm.start_rung : 3u;
        k = nq;
        nprom = 0;
        checks = 0;
        for (uint32_t b = tid; b < nq; b += blockDim.x) flag[b] = 1;
    }
    __syncthreads();
    /* outputs: flags, then the list (in place over the flags: read first) */
    uint32_t per = (nb + blockDim.x - 1u) / blockDim.x;
    const uint32_t b0 = tid * per, b1 = min(nb, b0 + per);
    uint32_t fl[64];                                        /* nb <= 64 * 1024 */
    uint32_t cnt = 0;
    for (uint32_t b = b0; b < b1; b++) {
        const uint32_t f = b < nq ? flag[b] : 1u;
        fl[b - b0] = f;
        cnt += (f & 1u) ? 1u : 0u;
    }
    __syncthreads();
    uint32_t pos = 0, tot = 0;
    ScanU(S.t.su).ExclusiveSum(cnt, pos, tot);
    __syncthreads();
    uint32_t *list = ws.list + (uint64_t)qh * nb;
    for (uint32_t b = b0; b < b1; b++) {
        const uint32_t f = fl[b - b0];
        if (d_sel) d_sel[(uint64_t)qh * nb + b] = (uint8_t)(f & 1u);
        if (d_prom) d_prom[(uint64_t)qh * nb + b] = (uint8_t)(b < nq && !dense && (f & 2u) ? 1 : 0);
        if (!(f & 1u)) continue;
        uint32_t e = b;
        if (b >= nq) e |= ENT_RES;
        else if (!dense && (f & 2u)) e |= ENT_PROM;
        if (dense) e |= ENT_DENSE;
        list[pos++] = e;
    }
    if (tid == 0) {
        head_info I;
        memset(&I, 0, sizeof I);
        I.rung = rung;
        I.k_sel = k;
        I.n_prom = nprom;
        I.checks = checks;
        I.nent = tot;
        I.ntok = k * KVQ_CERT_BLOCK + (nb > nq ? kvq_cert_residual_tokens(&sh) : 0u);
        I.status = (rung >= 4u) ? KVQ_CUDA_CERT_RUNG4 : (uint32_t)KVQ_OK;
        I.delta = dmax;
        I.vmax = vmax;
        I.delta1 = delta1;
        if (!dense) {
            I.alpha_hat = ev.alpha;
            I.ekey = ev.ekey;
            I.ekey_paper = ev.ekey_paper;
            I.eval = ev.eval;
            I.vh = ev.vh;
        } else {
            I.vh = vmax;                                    /* originals [CERT-LAD-03] */
        }
        *inf = I;
    }
}

/* ---- Phase 2 ---------------------------------------------------------------
 * One CTA a (chunk, query head); CTAs loop over the head's chunks.  Chunk c
 * holds list entries 8c .. 8c + 7.  Weights w = expf(RN(s~ - m_c)) against the
 * chunk max, l_c and acc_c by recursive summation in token order; the combine
 * kernel rescales each chunk once.  SPEC: [CERT-AR-01] [CERT-V4-02] [CERT-DEV-05] */
template <bool CERT>
__global__ void __launch_bounds__(P2_THREADS)
cert_phase2_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws)
{
    __shared__ float qs[KVQ_CERT_MAX_DIM];
    __shared__ float sc[CHUNK_TOK], wt[CHUNK_TOK];
    __shared__ uint32_t ent[CHUNK_BLK];
    __shared__ float red[P2_THREADS / 32u][3];
    const uint32_t qh = blockIdx.y, kv = qh / h.group, tid = threadIdx.x;
    const uint32_t lane = tid & 31u, warp = tid >> 5;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh);
    const head_info *inf = ws.info + qh;
    const uint32_t nent = inf->nent;
    const uint32_t nch = (nent + CHUNK_BLK - 1u) / CHUNK_BLK;
    const uint32_t *list = ws.list + (uint64_t)qh * nb;
    const int8_t *kc = h.d_kcodes + (uint64_t)kv * kvq_cert_key_code_bytes(&sh);
    const float *sg = h.d_sigma + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const float *zz = h.d_z + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const uint8_t *vc = h.d_vcodes + (uint64_t)kv * kvq_cert_value_code_bytes(&sh);
    const float *vs = h.d_vscale + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const float *vz = h.d_vzero + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const uint16_t *kr = h.d_kres + (uint64_t)kv * nres * d;
    const uint16_t *vr = h.d_vres + (uint64_t)kv * nres * d;
    const uint16_t *tk = h.t2_k + (uint64_t)kv * sh.tokens * d;
    const uint16_t *tv = h.t2_v + (uint64_t)kv * sh.tokens * d;
    for (uint32_t c = tid; c < d; c += blockDim.x) qs[c] = h.d_q[(uint64_t)qh * d + c];
    (void)nq;
    /* tier-2 rows of the chunk staged in shared memory (d <= 128): the mapped
     * host memory is read with many 16-byte requests in flight instead of one
     * dependent load per token [CERT-DEV-05] */
    extern __shared__ uint4 stage_raw[];
    uint16_t *stk = (uint16_t *)stage_raw, *stv = stk + CHUNK_TOK * STAGE_MAX_D;
    const bool can_stage = d <= STAGE_MAX_D;
    for (uint32_t ch = blockIdx.x; ch < nch; ch += gridDim.x) {
        __syncthreads();
        const uint32_t e0 = ch * CHUNK_BLK, ne = min(CHUNK_BLK, nent - e0);
        if (tid < ne) ent[tid] = list[e0 + tid];
        __syncthreads();
        if (can_stage) {
            const uint32_t vpr = d / 8u;             /* 16-byte vectors a row */
            const uint32_t tot = ne * KVQ_CERT_BLOCK * vpr;
            for (uint32_t x0 = tid; x0 < tot; x0 += 8u * P2_THREADS) {
                uint4 rk[8], rv[8];
                bool wk[8], wv[8];
#pragma unroll
                for (uint32_t u = 0; u < 8u; u++) {
                    const uint32_t x = x0 + u * P2_THREADS;
                    wk[u] = wv[u] = false;
                    if (x >= tot) continue;
                    const uint32_t t = x / vpr, vq = x % vpr;
                    const uint32_t e = ent[t / KVQ_CERT_BLOCK];
                    const uint32_t tok = kvq_cert_block_first(e & ENT_BLOCK) + t % KVQ_CERT_BLOCK;
                    if (e & ENT_RES) continue;
                    if (e & ENT_DENSE) {
                        rk[u] = ((const uint4 *)(tk + kvq_cert_in_index(&sh, tok, 0)))[vq];
                        wk[u] = true;
                    }
                    if (e & (ENT_DENSE | ENT_PROM)) {
                        rv[u] = ((const uint4 *)(tv + kvq_cert_in_index(&sh, tok, 0)))[vq];
                        wv[u] = true;
                    }
                }
#pragma unroll
                for (uint32_t u = 0; u < 8u; u++) {
                    const uint32_t x = x0 + u * P2_THREADS;
                    const uint32_t t = x / vpr, vq = x % vpr;
                    if (wk[u]) ((uint4 *)(stk + (uint64_t)t * d))[vq] = rk[u];
                    if (wv[u]) ((uint4 *)(stv + (uint64_t)t * d))[vq] = rv[u];
                }
            }
            __syncthreads();
        }
        /* scores: warp w takes chunk tokens w, w + 4, ... */
        float amax = 0.0f, smax = -INFINITY, smin = INFINITY;
        for (uint32_t t = warp; t < ne * KVQ_CERT_BLOCK; t += P2_THREADS / 32u) {
            const uint32_t e = ent[t / KVQ_CERT_BLOCK], i = t % KVQ_CERT_BLOCK;
            const uint32_t b = e & ENT_BLOCK;
            const bool res = (e & ENT_RES) != 0u;
            if (res && i >= nres) {
                if (lane == 0) sc[t] = -INFINITY;
                continue;
            }
            const uint32_t tok = kvq_cert_block_first(b) + i;
            float acc = 0.0f, aabs = 0.0f;
            for (uint32_t c = lane; c < d; c += 32u) {
                float kk;
                if (res) kk = f16_at(kr, (uint64_t)i * d + c);  /* not staged */
                else if (e & ENT_DENSE)
                    kk = can_stage ? f16_at(stk, (uint64_t)t * d + c)
                                   : f16_at(tk, kvq_cert_in_index(&sh, tok, c));
                else
                    kk = __fmaf_rn((float)kc[kvq_cert_key_block_offset(&sh, b) +
                                            kvq_cert_key_code_index(d, i, c)],
                                   sg[kvq_cert_key_meta_index(&sh, b, c)],
                                   zz[kvq_cert_key_meta_index(&sh, b, c)]); /* [CERT-K8-03] */
                acc = __fadd_rn(acc, __fmul_rn(qs[c], kk));
                if (CERT) aabs = __fadd_ru(aabs, __fmul_ru(fabsf(qs[c]), fabsf(kk)));
            }
            const float s = __fmul_rn(h.scale, warp_sum_rn(acc));
            if (CERT) {
                amax = fmaxf(amax, warp_sum_ru(aabs));
                smax = fmaxf(smax, s);
                smin = fminf(smin, s);
            }
            if (lane == 0) sc[t] = s;
        }
        if (CERT && lane == 0) {
            red[warp][0] = amax;
            red[warp][1] = smax;
            red[warp][2] = smin;
        }
        __syncthreads();
        const uint32_t nt = ne * KVQ_CERT_BLOCK;
        /* chunk max (every thread, the same order) */
        float m = -INFINITY;
        for (uint32_t t = 0; t < nt; t++) m = fmaxf(m, sc[t]);
        for (uint32_t t = tid; t < nt; t += blockDim.x)
            wt[t] = sc[t] == -INFINITY ? 0.0f : expf(__fsub_rn(sc[t], m));
        __syncthreads();
        const uint64_t po = (uint64_t)qh * ws.nch + ch;
        if (tid == 0) {
            float l = 0.0f;
            for (uint32_t t = 0; t < nt; t++) l = __fadd_rn(l, wt[t]);
            ws.pm[po] = m;
            ws.pl[po] = l;
            if (CERT) {
                float a = 0.0f, mx = -INFINITY, mn = INFINITY;
                for (uint32_t w = 0; w < P2_THREADS / 32u; w++) {
                    a = fmaxf(a, red[w][0]);
                    mx = fmaxf(mx, red[w][1]);
                    mn = fminf(mn, red[w][2]);
                }
                ws.pabs[po] = a;
                ws.pmax[po] = mx;
                ws.pmin[po] = mn;
            }
        }
        /* acc_c = sum_t RN(w_t v~_tc), token order */
        for (uint32_t c = tid; c < d; c += blockDim.x) {
            float acc = 0.0f;
            uint32_t el;
            const uint32_t j = kvq_cert_value_group_of(c, &el);
            /* 8 tokens' values loaded at once (independent loads in flight),
             * then added in token order */
            for (uint32_t t0 = 0; t0 < nt; t0 += 8u) {
                float vv[8];
#pragma unroll
                for (uint32_t u = 0; u < 8u; u++) {
                    const uint32_t t = t0 + u;
                    vv[u] = 0.0f;
                    if (t >= nt || sc[t] == -INFINITY) continue;
                    const uint32_t e = ent[t / KVQ_CERT_BLOCK], i = t % KVQ_CERT_BLOCK;
                    const uint32_t b = e & ENT_BLOCK, tok = kvq_cert_block_first(b) + i;
                    if (e & ENT_RES) vv[u] = f16_at(vr, (uint64_t)i * d + c); /* not staged */
                    else if (e & (ENT_DENSE | ENT_PROM))
                        vv[u] = can_stage ? f16_at(stv, (uint64_t)t * d + c)
                                          : f16_at(tv, kvq_cert_in_index(&sh, tok, c));
                    else {
                        const uint8_t byte = vc[kvq_cert_value_code_offset(&sh, tok, j) + el / 2u];
                        const float code = (float)((el & 1u) ? (byte >> 4) : (byte & 15u));
                        const uint64_t gi = kvq_cert_value_group(&sh, tok, j);
                        vv[u] = __fmaf_rn(code, vs[gi], vz[gi]);  /* [CERT-V4-02] */
                    }
                }
#pragma unroll
                for (uint32_t u = 0; u < 8u; u++) {
                    const uint32_t t = t0 + u;
                    if (t >= nt || sc[t] == -INFINITY) continue;
                    acc = __fadd_rn(acc, __fmul_rn(wt[t], vv[u]));
                }
            }
            ws.pacc[po * d + c] = acc;
        }
    }
}

/* ---- combine, E_arith, record ------------------------------------------- */
template <bool CERT>
__global__ void __launch_bounds__(P2_THREADS)
cert_combine_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, float *d_out,
                    kvq_cert_record *d_rec, kvq_cert_decl *d_decl, float *d_delta1,
                    uint32_t *d_status, float eps_dense)
{
    __shared__ float alpha_s[1024];
    __shared__ float lsum;
    const uint32_t qh = blockIdx.x, tid = threadIdx.x;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim;
    const head_info I = ws.info[qh];
    const uint32_t nch = (I.nent + CHUNK_BLK - 1u) / CHUNK_BLK;
    const uint64_t p0 = (uint64_t)qh * ws.nch;
    float M = -INFINITY;
    for (uint32_t c = 0; c < nch; c++) M = fmaxf(M, ws.pm[p0 + c]);
    /* alpha_c = expf(RN(m_c - M)): one rescaling per token (Nr = 1) */
    for (uint32_t base = 0; base < nch; base += 1024u) {
        __syncthreads();
        for (uint32_t c = base + tid; c < min(nch, base + 1024u); c += blockDim.x)
            alpha_s[c - base] = expf(__fsub_rn(ws.pm[p0 + c], M));
        __syncthreads();
        if (tid == 0) {
            float l = base == 0 ? 0.0f : lsum;
            for (uint32_t c = base; c < min(nch, base + 1024u); c++)
                l = __fadd_rn(l, __fmul_rn(ws.pl[p0 + c], alpha_s[c - base]));
            lsum = l;
        }
        __syncthreads();
        for (uint32_t ch = tid; ch < d; ch += blockDim.x) {
            float a = base == 0 ? 0.0f : d_out[(uint64_t)qh * d + ch];
            for (uint32_t c = base; c < min(nch, base + 1024u); c++)
                a = __fadd_rn(a, __fmul_rn(ws.pacc[(p0 + c) * d + ch], alpha_s[c - base]));
            d_out[(uint64_t)qh * d + ch] = a;
        }
    }
    __syncthreads();
    const float l = lsum;
    for (uint32_t ch = tid; ch < d; ch += blockDim.x)
        d_out[(uint64_t)qh * d + ch] = __fdiv_rn(d_out[(uint64_t)qh * d + ch], l);
    if (tid != 0) return;
    /* declaration [CERT-DEV-05]: a token's term meets its product, <= 127
     * additions inside its chunk, one rescaling, <= nch - 1 additions of the
     * combine: D = CHUNK_TOK + nch + 1 (one spare), Nr = 1, U_exp = 2 */
    kvq_cert_decl dc;
    dc.u_exp = U_EXP_DECL;
    dc.acc_depth = CHUNK_TOK + nch + 1u;
    dc.rescales = 1u;
    kvq_cert_record r;
    memset(&r, 0, sizeof r);
    r.version = 1u;
    r.rung = I.rung;
    r.n = sh.tokens;
    r.d = d;
    r.k_sel = I.k_sel;
    r.n_prom = I.n_prom;
    r.checks = I.checks;
    r.delta = I.delta;
    r.alpha_hat = I.alpha_hat;
    r.vmax = I.vmax;
    r.ekey = I.ekey;
    r.ekey_paper = I.ekey_paper;
    r.eval = I.eval;
    uint32_t status = I.status;
    if (CERT) {
        float amax = 0.0f, smax = -INFINITY, smin = INFINITY;
        for (uint32_t c = 0; c < nch; c++) {
            amax = fmaxf(amax, ws.pabs[p0 + c]);
            smax = fmaxf(smax, ws.pmax[p0 + c]);
            smin = fminf(smin, ws.pmin[p0 + c]);
        }
        /* E_arith [CERT-AR-01], every operation upward; tanh(x) <= x,
         * lam <= LAM_UP, E_deq = 0 (pinned reconstructions) */
        const float eps = eps_scores(amax, h.scale, d);
        const float rs = __fadd_ru(__fsub_ru(smax, smin), __fmul_ru(4.0f, eps));
        const float nr1 = (float)(dc.rescales + 1u);
        const float lam = __fadd_ru(eps, __fmul_ru(nr1, __fadd_ru(__fmul_ru(rs, 0x1p-24f), LAM_UP)));
        const float da = __fmul_ru((float)dc.acc_depth, 0x1p-24f);
        const float g = __fdiv_ru(da, __fsub_rd(1.0f, da));
        const float g1 = __fdiv_ru(g, __fsub_rd(1.0f, g));
        const float vh = I.vh;
        float e = __fmul_ru(vh, lam);                        /* 2 Vh (Lambda / 2) */
        e = __fadd_ru(e, __fmul_ru(__fmul_ru(2.0f, vh), g1));
        e = __fadd_ru(e, __fmul_ru(__fmul_ru(vh, 0x1p-24f), __fadd_ru(1.0f, __fmul_ru(2.0f, g1))));
        e = __fadd_ru(e, __fmul_ru(__fmul_ru(__fmul_ru(2.0f, vh), (float)I.ntok),
                                   __fmul_ru(U_EXP_DECL + 1.0f, 0x1p-148f)));
        e = __fadd_ru(e, __fmul_ru(__fmul_ru(__fmul_ru(__fsqrt_ru((float)d),
                                             __fadd_ru(1.0f, __fmul_ru(4.0f, (float)dc.acc_depth))),
                                   0x1p-75f), 0x1p-75f)); /* 2^-150: two exact-or-upward steps */
        r.earith = e;
        if (ws.dbg) {
            float *g0 = ws.dbg + (uint64_t)qh * 12u;
            g0[0] = amax; g0[1] = smax; g0[2] = smin; g0[3] = eps; g0[4] = rs; g0[5] = lam;
            g0[6] = g; g0[7] = g1; g0[8] = vh; g0[9] = (float)I.ntok; g0[10] = (float)nch;
            g0[11] = e;
        }
        r.etotal = __fadd_ru(__fadd_ru(r.ekey, r.eval), r.earith);
        if (I.rung == 3u && !(e <= eps_dense)) status = KVQ_CUDA_CERT_RUNG4; /* [CERT-LAD-02] */
    }
    if (d_rec) d_rec[qh] = r;
    if (d_decl) d_decl[qh] = dc;
    if (d_delta1) d_delta1[qh] = I.delta1;
    if (d_status) d_status[qh] = status;
}

/* ---- annotations (bounds/cert.md §2, exact integer method) --------------- */
typedef unsigned __int128 u128;

__device__ __forceinline__ int64_t fixed24(float x)
{
    return (int64_t)scalbnf(x, 24);      /* exact: x is a multiple of 2^-24 below 2^40 */
}

/* sign of y^2 - N for float y > 0, N < 2^100 */
__device__ int sq_cmp(float y, u128 n)
{
    if (y < 1.0f) return n == 0 ? 1 : -1;
    if (y >= 0x1p60f) return 1;
    int e;
    const float fr = frexpf(y, &e);
    const uint64_t mant = (uint64_t)scalbnf(fr, 24);
    e -= 24;
    const u128 lhs = (u128)mant * mant;
    if (e >= 0) {
        const u128 l2 = lhs << (2 * e);
        return l2 < n ? -1 : (l2 > n ? 1 : 0);
    }
    if ((n >> 50) != 0) return -1;
    const u128 n2 = n << (-2 * e);
    return lhs < n2 ? -1 : (lhs > n2 ? 1 : 0);
}

/* RU32(2^-24 sqrt(N)) [CERT-ANN-01] */
__device__ float ru_norm24(u128 n)
{
    if (n == 0) return 0.0f;
    float y = (float)sqrt((double)(uint64_t)(n >> 64) * 0x1p64 + (double)(uint64_t)n);
    while (sq_cmp(y, n) < 0) y = nextafterf(y, INFINITY);
    for (;;) {
        const float p = nextafterf(y, 0.0f);
        if (sq_cmp(p, n) < 0) break;
        y = p;
    }
    return scalbnf(y, -24);
}

/* One CTA (16 warps) a block; warp i takes token i. */
__global__ void __launch_bounds__(512)
cert_annotate_kernel(float *eta, float *nu, const float *v, const uint8_t *codes,
                     const float *scale, const float *zero, kvq_cert_shape sh)
{
    __shared__ unsigned long long se[16][2], sn[16][2];
    const uint32_t b = blockIdx.x, lane = threadIdx.x & 31u, i = threadIdx.x >> 5;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh);
    const uint32_t ntok = kvq_cert_block_tokens(&sh, b);
    u128 e2 = 0, n2 = 0;
    if (i < ntok) {
        const uint32_t t = kvq_cert_block_first(b) + i;
        for (uint32_t c = lane; c < d; c += 32u) {
            const float x = v[kvq_cert_in_index(&sh, t, c)];
            const int64_t fx = fixed24(x);
            const uint64_t a = (uint64_t)(fx < 0 ? -fx : fx);
            n2 += (u128)a * a;                               /* exact, < 2^89 */
            if (b < nq) {
                uint32_t el;
                const uint32_t j = kvq_cert_value_group_of(c, &el);
                const uint8_t byte = codes[kvq_cert_value_code_offset(&sh, t, j) + el / 2u];
                const float code = (float)((el & 1u) ? (byte >> 4) : (byte & 15u));
                const uint64_t gi = kvq_cert_value_group(&sh, t, j);
                const float xh = __fmaf_rn(code, scale[gi], zero[gi]); /* [CERT-V4-02] */
                const int64_t df = fx - fixed24(xh);
                const uint64_t ad = (uint64_t)(df < 0 ? -df : df);
                e2 += (u128)ad * ad;                         /* exact, < 2^99 */
            }
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const uint64_t eh = __shfl_xor_sync(0xffffffffu, (uint64_t)(e2 >> 64), o);
        const uint64_t el = __shfl_xor_sync(0xffffffffu, (uint64_t)e2, o);
        const uint64_t nh = __shfl_xor_sync(0xffffffffu, (uint64_t)(n2 >> 64), o);
        const uint64_t nl = __shfl_xor_sync(0xffffffffu, (uint64_t)n2, o);
        e2 += ((u128)eh << 64) | el;
        n2 += ((u128)nh << 64) | nl;
    }
    if (lane == 0) {
        se[i][0] = (uint64_t)(e2 >> 64);
        se[i][1] = (uint64_t)e2;
        sn[i][0] = (uint64_t)(n2 >> 64);
        sn[i][1] = (uint64_t)n2;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u128 em = 0, nm = 0;
        for (uint32_t k = 0; k < 16u; k++) {
            const u128 a = ((u128)se[k][0] << 64) | se[k][1];
            const u128 c = ((u128)sn[k][0] << 64) | sn[k][1];
            if (a > em) em = a;
            if (c > nm) nm = c;
        }
        eta[b] = ru_norm24(em);                              /* [CERT-ANN-01] */
        nu[b] = ru_norm24(nm);                               /* [CERT-ANN-02] */
    }
}

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
    return KVQ_OK;
}

extern "C" size_t kvq_cuda_cert_max_blocks(void)
{
    return 64u * SEL_THREADS;        /* the select kernel's per-thread block array */
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
    w->nch = (nb + CHUNK_BLK - 1u) / CHUNK_BLK;
    const uint64_t H = qheads;
    cudaError_t e = cudaSuccess;
#define WS_ALLOC(p, n) if (e == cudaSuccess) e = cudaMalloc((void **)&w->p, (n) * sizeof *w->p)
    WS_ALLOC(lt, H * nb);
    WS_ALLOC(dp, H * nb);
    WS_ALLOC(eb, H * nb);
    WS_ALLOC(err, H);
    WS_ALLOC(dmax, H);
    WS_ALLOC(key, H * (nq ? nq : 1u));
    WS_ALLOC(lo, H * nb);
    WS_ALLOC(hi, H * nb);
    WS_ALLOC(list, H * nb);
    WS_ALLOC(info, H);
    WS_ALLOC(pm, H * w->nch);
    WS_ALLOC(pl, H * w->nch);
    WS_ALLOC(pabs, H * w->nch);
    WS_ALLOC(pmax, H * w->nch);
    WS_ALLOC(pmin, H * w->nch);
    WS_ALLOC(pacc, H * w->nch * w->d);
    WS_ALLOC(dbg, H * 12u);
#undef WS_ALLOC
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
    void *p[] = {w->lt, w->dp, w->eb, w->err, w->dmax, w->key, w->lo, w->hi, w->list, w->info,
                 w->pm, w->pl, w->pabs, w->pmax, w->pmin, w->pacc, w->dbg};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i]) cudaFree(p[i]);
    free(w);
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
    w.nch = (nb + CHUNK_BLK - 1u) / CHUNK_BLK;

    const dim3 g1((nb + P1_WARPS - 1u) / P1_WARPS, h->kv_heads);
    const dim3 g2(w.nch < MAX_CHUNK_CTAS ? w.nch : MAX_CHUNK_CTAS, qh);
    if (cudaFuncSetAttribute(cert_phase2_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)STAGE_BYTES) != cudaSuccess ||
        cudaFuncSetAttribute(cert_phase2_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)STAGE_BYTES) != cudaSuccess)
        return KVQ_E_DEVICE;
    if (certify) {
        cert_phase1_kernel<true><<<g1, P1_WARPS * 32u, 0, stream>>>(*h, w);
        cert_select_kernel<true><<<qh, SEL_THREADS, 0, stream>>>(*h, w, *prm, d_sel, d_prom);
        cert_phase2_kernel<true><<<g2, P2_THREADS, STAGE_BYTES, stream>>>(*h, w);
        cert_combine_kernel<true><<<qh, P2_THREADS, 0, stream>>>(*h, w, d_out, d_rec, d_decl,
                                                                  d_delta1, d_status,
                                                                  prm->eps_dense);
    } else {
        cert_phase1_kernel<false><<<g1, P1_WARPS * 32u, 0, stream>>>(*h, w);
        cert_select_kernel<false><<<qh, SEL_THREADS, 0, stream>>>(*h, w, *prm, d_sel, d_prom);
        cert_phase2_kernel<false><<<g2, P2_THREADS, STAGE_BYTES, stream>>>(*h, w);
        cert_combine_kernel<false><<<qh, P2_THREADS, 0, stream>>>(*h, w, d_out, d_rec, d_decl,
                                                                   d_delta1, d_status,
                                                                   prm->eps_dense);
    }
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* The E_arith terms of query head qh's last step (diagnostics): amax, smax,
 * smin, eps_s, R_s, Lambda, g, g/(1-g), Vh, nS, nch, E_arith. */
extern "C" kvq_status kvq_cuda_cert_debug(float *out12, const kvq_cuda_cert_ws *ws, uint32_t qh)
{
    if (out12 == NULL || ws == NULL || qh >= ws->qheads) return KVQ_E_PARAM;
    return cudaMemcpy(out12, ws->dbg + (uint64_t)qh * 12u, 12u * sizeof(float),
                      cudaMemcpyDeviceToHost) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_cert_annotate(float *d_eta, float *d_nu, const float *d_v,
                                             const uint8_t *d_codes, const float *d_scale,
                                             const float *d_zero, const kvq_cert_shape *shape,
                                             cudaStream_t stream)
{
    if (d_eta == NULL || d_nu == NULL || d_v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    const uint32_t nb = kvq_cert_blocks(shape);
    cert_annotate_kernel<<<nb, 512, 0, stream>>>(d_eta, d_nu, d_v, d_codes, d_scale, d_zero,
                                                 *shape);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
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
