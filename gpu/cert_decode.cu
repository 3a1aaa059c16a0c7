/*
 * cert_decode.cu -- the certified CERT decode step on CUDA (spec/cert.md,
 * section "The device kernel", [CERT-DEV-01..08]).
 *
 * One step for many query heads at once (GQA: `group` query heads share one
 * KV head).  Three kernels, stream-ordered, no host synchronisation (the
 * second and third are programmatic dependents of the one before):
 *
 *   cert_phase1_kernel   one warp a (KV head, block), four query heads of the
 *                        group at a time: scores of the block's tokens from the
 *                        INT8 codes (k^ formed once, shared by the heads), the
 *                        block log-mass L~_b, Delta'_b [CERT-DLT-05], the
 *                        bound A_b of sum_c |q_c||k_c|, the block's share of
 *                        the Phase-1 radius delta1 [CERT-DEV-02], and each
 *                        head's M = max_b L~_b
 *   cert_select_kernel   one CTA a query head: selection on L~ with integer
 *                        (fixed-point) masses [CERT-DEV-03], promotion, the
 *                        ranking, boundary and value checks evaluated
 *                        conservatively with delta1, the ladder, E_key / E_val
 *                        [CERT-DEV-04]; promoted blocks' values staged from
 *                        tier 2 once per KV head [CERT-DEV-01]
 *   cert_phase2_kernel   one warp an entry (a selected block) of a query head:
 *                        scores, the entry's softmax, INT4 dequantization in
 *                        registers v^ = fmaf(code, s, zv) [CERT-V4-02];
 *                        promoted blocks read the staged binary16 originals
 *                        (or tier 2, mapped pinned host memory), the dense
 *                        rung reads tier 2; the head's last CTA to finish
 *                        combines the entries: the output, E_arith
 *                        [CERT-AR-01] for the declaration of [CERT-DEV-05],
 *                        the record [CERT-REC-01]
 *
 * Upward-rounded quantities use __fadd_ru/__fmul_ru/__fmaf_ru/__fdiv_ru (and
 * the double forms); everything else is one binary32 rounding to nearest per
 * operation (the build pins -fmad=false -ftz=false -prec-div=true).  expf and
 * logf are the CUDA library functions with the error bounds assumed in
 * [CERT-DEV-02].
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda_pipeline.h>

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
#define P2_WARPS   4u                /* warps a Phase-2 CTA */
#define P2_CTAS    8u                /* Phase-2 CTAs a query head (they loop over entries) */
#define P2_THREADS (P2_WARPS * 32u)
#define SEL_THREADS 1024u
#define P1_WARPS   8u
#define P1CNT_STRIDE 32u             /* Phase 1's block counters: one a 128-byte line */
#define ENT_TOK    KVQ_CERT_BLOCK    /* tokens an entry: one block */

#define ENT_PROM   0x80000000u       /* list entry: block promoted */
#define ENT_RES    0x40000000u       /* list entry: the residual block */
#define ENT_DENSE  0x20000000u       /* list entry: dense pass (keys from tier 2) */
#define ENT_BLOCK  0x00ffffffu
#define STAGE_SLOTS 32u              /* staging slots a query head (default and maximum) */

/* ---- timeline (diagnostics build only) -------------------------------------
 * Built with -DKVQ_CERT_TIMELINE (make gpu-cert-timeline, gpu/cert_timeline.py),
 * the kernels stamp %globaltimer (ns) at their stage boundaries: Phase 1's
 * first start and last end, each select CTA's stages (after a CTA barrier),
 * each Phase-2 CTA's; kvq_cuda_cert_timeline copies the stamps out and
 * clears them.  Without it the marks are empty and the kernels unchanged. */
#ifdef KVQ_CERT_TIMELINE
#define TL_HEADS  64u
#define TL_SEL_N  11u
#define TL_P2CTAS 512u
#define TL_P2_N   5u
__device__ unsigned long long tl_p1[2] = {~0ull, 0ull};
__device__ unsigned long long tl_sel[TL_HEADS][TL_SEL_N], tl_p2[TL_P2CTAS][TL_P2_N];
__device__ __forceinline__ unsigned long long tl_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define TL_P1_START() \
    do { if (threadIdx.x == 0) atomicMin(&tl_p1[0], tl_now()); } while (0)
#define TL_P1_END() \
    do { __syncthreads(); if (threadIdx.x == 0) atomicMax(&tl_p1[1], tl_now()); } while (0)
#define TL_SEL_AT(k) \
    do { \
        if (threadIdx.x == 0 && blockIdx.x < TL_HEADS) tl_sel[blockIdx.x][k] = tl_now(); \
    } while (0)
#define TL_SEL(k) do { __syncthreads(); TL_SEL_AT(k); } while (0)
#define TL_P2(k) \
    do { \
        const uint32_t c_ = blockIdx.y * gridDim.x + blockIdx.x; \
        if (threadIdx.x == 0 && c_ < TL_P2CTAS) tl_p2[c_][k] = tl_now(); \
    } while (0)

extern "C" kvq_status kvq_cuda_cert_timeline(unsigned long long *p1, unsigned long long *sel,
                                             unsigned long long *p2)
{
    static const unsigned long long p1z[2] = {~0ull, 0ull};
    static unsigned long long z[TL_P2CTAS * TL_P2_N];
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(p1, tl_p1, sizeof tl_p1);
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(sel, tl_sel, sizeof tl_sel);
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(p2, tl_p2, sizeof tl_p2);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(tl_p1, p1z, sizeof p1z);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(tl_sel, z, sizeof tl_sel);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(tl_p2, z, sizeof tl_p2);
    return e == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}
#else
#define TL_P1_START() ((void)0)
#define TL_P1_END()   ((void)0)
#define TL_SEL_AT(k)  ((void)0)
#define TL_SEL(k)     ((void)0)
#define TL_P2(k)      ((void)0)
#endif

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
    uint32_t sms;                    /* multiprocessors of the device (Phase-1 grid) */
    float *lt, *dp, *eb, *ab;        /* [qh][nb] L~_b, Delta'_b, radius, A_b of block b */
    uint32_t *key;                   /* [qh][nq] ordered L~ */
    unsigned long long *lo, *hi;     /* [qh][nb] integer masses */
    uint8_t *flag;                   /* [qh][nb] the radix selector's flags (bit 0 selected) */
    uint32_t *list;                  /* [qh][nb] */
    uint32_t gather_cap;             /* the fast selector's gather capacity [CERT-DEV-03] */
    /* staging of promoted values [CERT-DEV-01]: a KV head's pool of group *
     * stage_cap slots of one block's binary16 values (16 x d), filled by the
     * select kernel, one copy a block and KV head.  stag[kv][b]: 0 free, 1
     * claimed without a slot (Phase 2 reads tier 2), slot + 2; Phase 1 frees
     * the step's entries.  hmax[qh]: ord_key of max_b L~_b from Phase 1 (0:
     * none), cleared by the select kernel once read, as are Phase 1's block
     * counters p1cnt; p2cnt[qh]: the Phase-2 tickets, cleared by the last.
     * No state but these zeros passes from one step to the next (a step may
     * be captured in a graph). */
    uint16_t *stage;                 /* [qheads * STAGE_SLOTS][16][d] */
    uint32_t *stag;                  /* [qheads][nb] (indexed by KV head) */
    uint32_t *scnt;                  /* [qheads] slots taken this step (indexed by KV head) */
    uint32_t stage_cap;              /* slots a query head (0 .. STAGE_SLOTS) */
    uint32_t pre_cap;                /* claims fetched early at most (0 .. SEL_GATHER) */
    uint32_t *hmax;                  /* [qheads] */
    uint32_t *p1cnt;                 /* [qheads][P1CNT_STRIDE] Phase 1's block counters, one a
                                        KV head and pass (kv * group + g0, word 0 of a line);
                                        cleared by the select kernel */
    uint32_t *p2cnt;                 /* [qheads] Phase-2 CTAs done (0 between steps) */
    head_info *info;                 /* [qh] */
    float *pm, *pl, *pmin, *pab;     /* [qh][nb] per list entry: max, sum, min score, A */
    float *pacc;                     /* [qh][nb][d] per list entry: weighted value sums */
    float *dbg;                      /* [qh][12] intermediate E_arith terms (diagnostics) */
};

/* ---- small device helpers ------------------------------------------------ */

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

/* The float whose ord_key is k. */
__device__ __forceinline__ float ord_val(uint32_t k)
{
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
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

/* The exact binary32 value of the INT8 code in byte e of a code word whose
 * bytes were XORed with 0x80 (so byte e holds code + 128): 2^23 + (code + 128)
 * assembled in a significand, minus 2^23 + 128 -- both steps exact. */
__device__ __forceinline__ float code_f32(uint32_t wx, uint32_t e)
{
    return __fsub_rn(__uint_as_float(__byte_perm(wx, 0x4B000000u, 0x7540u | e)), 8388736.0f);
}

__device__ __forceinline__ float f4_at(const float4 &v, uint32_t e)
{
    return e == 0u ? v.x : (e == 1u ? v.y : (e == 2u ? v.z : v.w));
}

__device__ __forceinline__ uint32_t u4_at(const uint4 &v, uint32_t e)
{
    return e == 0u ? v.x : (e == 1u ? v.y : (e == 2u ? v.z : v.w));
}

/* Four binary16 encodings (a uint2) as binary32 values (exact). */
__device__ __forceinline__ void h4_f32(float *out, uint2 raw)
{
    const float2 a = __half22float2(*(const __half2 *)&raw.x);
    const float2 b = __half22float2(*(const __half2 *)&raw.y);
    out[0] = a.x;
    out[1] = a.y;
    out[2] = b.x;
    out[3] = b.y;
}

/* One level of a reduce-scatter: lanes with `bit` clear keep v[0 .. HALF-1],
 * the others v[HALF .. 2 HALF-1], each adding its partner's copy; the result
 * lands in v[0 .. HALF-1].  Both lanes of a pair add the same two operands
 * (addition is commutative), so every copy of a sum is the same number.  UP:
 * upward rounding (bounds), else to nearest.  Compile-time sizes keep v in
 * registers. */
template <uint32_t HALF, uint32_t BIT, bool UP>
__device__ __forceinline__ void rs_level(float *v, uint32_t lane)
{
    const bool up = (lane & BIT) != 0u;
#pragma unroll
    for (uint32_t i = 0; i < HALF; i++) {
        const float lo = v[i], hi = v[i + HALF];
        const float r = __shfl_xor_sync(0xffffffffu, up ? lo : hi, BIT);
        v[i] = UP ? __fadd_ru(up ? hi : lo, r) : __fadd_rn(up ? hi : lo, r);
    }
}

/* Reduce-scatter over the 8 lanes of a token group (lane bits 0-2): v[16]
 * in, v[0], v[1] out = the group's sums of v[2 cg], v[2 cg + 1]; three
 * roundings a term. */
template <bool UP>
__device__ __forceinline__ void rs16(float *v, uint32_t lane)
{
    rs_level<8u, 4u, UP>(v, lane);
    rs_level<4u, 2u, UP>(v, lane);
    rs_level<2u, 1u, UP>(v, lane);
}

/* ---- Phase 1 ---------------------------------------------------------------
 * Warps walk the full blocks of their KV head, two fixed blocks each and then
 * blocks drawn from a counter of the KV head (warps that run faster score
 * more blocks; the results do not depend on the assignment); a unit of work is
 * one 128-channel chunk m of one block b: its 16 x 128 INT8 codes and its 128
 * sigma and z (3 KiB), copied to shared memory with cp.async two units deep
 * (the next unit is in flight while this one is computed; with d = 128 a
 * build in which d is a constant).  The group's query
 * heads are taken four at a time (q of the four in shared memory, padded to
 * 20 floats a 16 channels so that the lanes' 16-byte reads do not share
 * banks).  Lane L = 8 tj + cg holds the block's tokens tj + 4 j (j < 4) and
 * the chunk's channels 16 cg .. 16 cg + 15.  k^ = fmaf(code, sigma, z)
 * [CERT-K8-03] is formed once an element (the pinned reconstruction, so the
 * scores estimate s^ itself) and feeds the four heads; each head's partial dot
 * product is a chain of fmaf over the lane's channels of every chunk (one
 * rounding a term: the first fmaf rounds the product); the 8 lanes of a token
 * are combined by a three-level reduce-scatter and the sum is scaled once.  A
 * lane with no channel adds an exact +0, which rounds nothing; so a term meets
 * at most 16 ceil(d/128) + 3 + 1 <= d + 1 roundings for every d the shape
 * allows (d = 16: 16 + 0 + 1) [CERT-DEV-02].  Certification: lane tj takes
 * the quad tj of its 16 channels for Delta'_b and A_b, each an upward fmaf
 * chain, summed over the warp by an upward reduce-scatter.  The residual block
 * (binary16 keys on the device) is scored by warp 0 of CTA 0 without the
 * pipeline.
 * SPEC: [CERT-LM-02] [CERT-DLT-05] [CERT-DEV-02] */
#define QPAD(c) ((c) + ((c) >> 4) * 4u)
#define QROW    (KVQ_CERT_MAX_DIM + KVQ_CERT_MAX_DIM / 4u)
#define P1_UNIT_CODES (KVQ_CERT_BLOCK * 128u)            /* bytes: 16 tokens x 128 channels */
#define P1_META_WORDS 160u                                /* 128 sigma (or z) at QPAD(c) */
#define P1_UNIT_BYTES (P1_UNIT_CODES + 2u * P1_META_WORDS * 4u)
#define P1_SMEM       (P1_WARPS * 2u * P1_UNIT_BYTES)     /* dynamic: two units a warp */

/* Issue the copies of unit (b, m) into buf (each lane its share of 16-byte
 * pieces) and commit them as one group of this thread.  A full 128-channel
 * chunk is 4 code pieces and one sigma and one z piece a lane, at offsets
 * that are shifts of the lane index; a narrower last chunk (d not a multiple
 * of 128) takes the general loop.  FIXED: d is a compile-time constant (the
 * d = 128 build of Phase 1), so the code copies are unrolled. */
template <bool FIXED>
__device__ __forceinline__ void p1_issue(uint8_t *buf, const int8_t *kc, const float *sg,
                                         const float *zz, const kvq_cert_shape &sh, uint32_t b,
                                         uint32_t m, uint32_t lane)
{
    const uint32_t d = sh.dim, c0 = 128u * m, cw = min(128u, d - c0);
    const int8_t *kb = kc + kvq_cert_key_block_offset(&sh, b);
    uint8_t *mb = buf + P1_UNIT_CODES;
    if (cw == 128u) {
        const uint32_t x = lane & 7u;
        /* unrolled only with a constant d (the offsets are immediates): in
         * the general build the certified kernel then spills at 128 registers */
#pragma unroll(FIXED ? 4 : 1)
        for (uint32_t i = 0; i < 4u; i++) {
            const uint32_t t = (lane >> 3) + 4u * i;
            __pipeline_memcpy_async(buf + t * 128u + 16u * x,
                                    kb + kvq_cert_key_code_index(d, t, c0 + 16u * x), 16);
        }
        const uint64_t mi = kvq_cert_key_meta_index(&sh, b, c0 + 4u * lane);
        __pipeline_memcpy_async(mb + 4u * QPAD(4u * lane), sg + mi, 16);
        __pipeline_memcpy_async(mb + 4u * P1_META_WORDS + 4u * QPAD(4u * lane), zz + mi, 16);
    } else {
        const uint32_t pr = cw / 16u;              /* 16-byte pieces a token row */
        for (uint32_t p = lane; p < KVQ_CERT_BLOCK * pr; p += 32u) {
            const uint32_t t = p / pr, x = p % pr;
            __pipeline_memcpy_async(buf + t * 128u + 16u * x,
                                    kb + kvq_cert_key_code_index(d, t, c0 + 16u * x), 16);
        }
        const uint32_t mp = cw / 4u;               /* 16-byte pieces of sigma, and of z */
        for (uint32_t p = lane; p < 2u * mp; p += 32u) {
            const bool isz = p >= mp;
            const uint32_t x = isz ? p - mp : p;
            __pipeline_memcpy_async(mb + (isz ? 4u * P1_META_WORDS : 0u) + 4u * QPAD(4u * x),
                                    (isz ? zz : sg) + kvq_cert_key_meta_index(&sh, b, c0 + 4u * x), 16);
        }
    }
    __pipeline_commit();
}

/* The end of a block (or of the residual block): token sums, L~_b, and with
 * CERT Delta'_b, A_b and err_b, written for the pass's heads. */
template <bool CERT>
__device__ __forceinline__ void p1_finish(float *acc, float *cq, const float *aabr, bool full,
                                          uint32_t ntok, uint32_t b, uint32_t kv, uint32_t g0,
                                          const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                                          uint32_t nb, float gs, float e0, uint32_t lane,
                                          float &lmax)
{
    const uint32_t cg = lane & 7u, tj = lane >> 3;
    /* token sums: lane keeps token t = tj + 4 (cg >> 1), heads 2 (cg & 1) + {0, 1} */
    rs16<false>(acc, lane);
    const uint32_t t = tj + 4u * (cg >> 1);
    const bool valid = t < ntok;
    float s[2], mx[2], mn[2], ex[2], amax[2];
#pragma unroll
    for (uint32_t k = 0; k < 2u; k++) {
        s[k] = __fmul_rn(h.scale, acc[k]);
        mx[k] = valid ? s[k] : -INFINITY;
        mn[k] = valid ? s[k] : INFINITY;
        amax[k] = (CERT && !full && valid) ? aabr[k] : 0.0f;
    }
    /* over the 16 lanes that share cg & 1: xor 2, 4 (token j), 8, 16 (tj) */
#pragma unroll
    for (uint32_t o = 2u; o <= 16u; o <<= 1) {
#pragma unroll
        for (uint32_t k = 0; k < 2u; k++) {
            mx[k] = fmaxf(mx[k], __shfl_xor_sync(0xffffffffu, mx[k], o));
            mn[k] = fminf(mn[k], __shfl_xor_sync(0xffffffffu, mn[k], o));
            if (CERT && !full) amax[k] = fmaxf(amax[k], __shfl_xor_sync(0xffffffffu, amax[k], o));
        }
    }
    /* W~_b = sum expf(RN(s - m)) by a 4-level tree: <= 4 roundings a term */
#pragma unroll
    for (uint32_t k = 0; k < 2u; k++) ex[k] = valid ? expf(__fsub_rn(s[k], mx[k])) : 0.0f;
#pragma unroll
    for (uint32_t o = 2u; o <= 16u; o <<= 1)
#pragma unroll
        for (uint32_t k = 0; k < 2u; k++)
            ex[k] = __fadd_rn(ex[k], __shfl_xor_sync(0xffffffffu, ex[k], o));
    /* Delta', A over the warp: an upward reduce-scatter, lane L ends with
     * cq[(L >> 2) & 7]: Delta' of head h at lane 4 h, A at lane 16 + 4 h */
    /* lanes 0..3 write one head each: lane L holds heads 2 (L & 1) + {0, 1}
     * (after the butterflies every lane of its parity does), and takes slot
     * L >> 1, i.e. head 2 (L & 1) + (L >> 1) */
    const uint32_t slot = (lane >> 1) & 1u, hh = 2u * (lane & 1u) + slot;
    float dpv = 0.0f, apv = 0.0f;
    if (CERT && full) {
        rs_level<4u, 16u, true>(cq, lane);
        rs_level<2u, 8u, true>(cq, lane);
        rs_level<1u, 4u, true>(cq, lane);
        cq[0] = __fadd_ru(cq[0], __shfl_xor_sync(0xffffffffu, cq[0], 2));
        cq[0] = __fadd_ru(cq[0], __shfl_xor_sync(0xffffffffu, cq[0], 1));
        /* Delta' of head h is at lane 4 h, A at lane 16 + 4 h */
        dpv = __shfl_sync(0xffffffffu, cq[0], (4u * hh) & 31u);
        apv = __shfl_sync(0xffffffffu, cq[0], (16u + 4u * hh) & 31u);
    }
    if (lane < 4u && g0 + hh < h.group) {
        const float mxk = slot ? mx[1] : mx[0], mnk = slot ? mn[1] : mn[0];
        const float exk = slot ? ex[1] : ex[0], amk = slot ? amax[1] : amax[0];
        const uint64_t at = (uint64_t)(kv * h.group + g0 + hh) * nb + b;
        const float lt = __fadd_rn(mxk, logf(exk));
        ws.lt[at] = lt;
        lmax = fmaxf(lmax, lt);
        if (CERT) {
            /* A_b >= max_i sum_c |q_c||k_ic| (k^ in full blocks: times 1 + 2^-23) */
            const float ab = full ? __fmul_ru(apv, ONE_P23) : amk;
            ws.dp[at] = full ? __fmul_ru(h.scale, dpv) : 0.0f;
            ws.ab[at] = ab;
            /* err_b >= |L~_b - L_b| [CERT-DEV-02]:
             *   eps_b               scores: gamma_{d+1} scale A_b + (scale d + 1) 2^-149
             * + 2^-24 (m - mn)      the subtraction s~_i - m
             * + W16_LN              expf (2 ulp each) and <= 15 additions
             * + LOG_ABS             logf (1 ulp of a result below 4)
             * + 2^-23 |L~| + 2^-149 the final addition */
            float e = __fadd_ru(__fmul_ru(gs, ab), e0);  /* = eps_scores(ab, scale, d) */
            e = __fadd_ru(e, __fmul_ru(__fsub_ru(mxk, mnk), 0x1p-24f));
            e = __fadd_ru(e, W16_LN);
            e = __fadd_ru(e, LOG_ABS);
            e = __fadd_ru(e, __fadd_ru(__fmul_ru(fabsf(lt), 0x1p-23f), 0x1p-149f));
            ws.eb[at] = e;
        }
    }
}

/* Lane 0 draws the next value of Phase 1's counter into r (the other lanes'
 * r unchanged): a predicated atomic, so that nothing waits for its result
 * until r is read. */
__device__ __forceinline__ void p1_draw(uint32_t &r, uint32_t *cnt, uint32_t lane)
{
    asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\t"
                 "@p atom.global.add.u32 %0, [%1], 1;\n\t}"
                 : "+r"(r)
                 : "l"(cnt), "r"(lane)
                 : "memory");
}

template <bool CERT, uint32_t DK>
__global__ void __launch_bounds__(P1_WARPS * 32, 2)
cert_phase1_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws)
{
    __shared__ __align__(16) float qs[4][QROW];
    extern __shared__ __align__(16) uint8_t p1_buf[];
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t cg = lane & 7u, tj = lane >> 3;
    const uint32_t kv = blockIdx.y;
    cudaTriggerProgrammaticLaunchCompletion();             /* the select kernel may be placed */
    TL_P1_START();
    kvq_cert_shape sh = h.shape;
    if (DK != 0u) sh.dim = DK;                             /* launched only when h.shape.dim == DK */
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    /* the KV head's staging entries free, no slot taken [CERT-DEV-01] */
    if (blockIdx.x == 0u && threadIdx.x == 0u) ws.scnt[kv] = 0u;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += gridDim.x * blockDim.x)
        ws.stag[(uint64_t)kv * nb + i] = 0u;
    const uint32_t mc = (d + 127u) / 128u;
    const int8_t *kc = h.d_kcodes + (uint64_t)kv * kvq_cert_key_code_bytes(&sh);
    const float *sg = h.d_sigma + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const float *zz = h.d_z + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh);
    const uint16_t *kr = h.d_kres + (uint64_t)kv * nres * d;
    uint8_t *buf0 = p1_buf + warp * 2u * P1_UNIT_BYTES;
    /* this warp's full blocks: b0 and b0 + W, then 2 W + the values it draws
     * from the pass's counter (one draw a block, made a block ahead so that
     * the atomic's round trip overlaps the work), until one is nq or more:
     * warps of fast multiprocessors take more blocks.  Which warp scores a
     * block does not change its results.  Units (block b, chunk m). */
    const uint32_t b0 = blockIdx.x * P1_WARPS + warp, W = gridDim.x * P1_WARPS;
    /* the two factors of eps_scores (uniform; the same upward operations) */
    const float gs = CERT ? __fmul_ru(gamma_up(d + 1u), h.scale) : 0.0f;
    const float e0 = CERT ? __fmul_ru(__fadd_ru(__fmul_ru(h.scale, (float)d), 1.0f), 0x1p-149f) : 0.0f;
    for (uint32_t g0 = 0; g0 < h.group; g0 += 4u) {
        __syncthreads();                             /* the previous pass is done with qs */
        for (uint32_t x = threadIdx.x; x < 4u * d; x += blockDim.x) {
            const uint32_t hh = x / d, c = x % d;
            qs[hh][QPAD(c)] =
                g0 + hh < h.group ? h.d_q[(uint64_t)(kv * h.group + g0 + hh) * d + c] : 0.0f;
        }
        __syncthreads();
        float acc[16], cq[8], lmax = -INFINITY;
#pragma unroll
        for (uint32_t i = 0; i < 16u; i++) acc[i] = 0.0f;
#pragma unroll
        for (uint32_t i = 0; i < 8u; i++) cq[i] = 0.0f;
        uint32_t *cnt = ws.p1cnt + (kv * h.group + g0) * P1CNT_STRIDE;  /* cleared by select */
        uint32_t draw = 0u;                          /* lane 0: the draw for the block after next */
        bool second = true;                          /* the next block is b0 + W */
        if (b0 < nq) {
            p1_issue<DK != 0u>(buf0, kc, sg, zz, sh, b0, 0u, lane);
            if (b0 + W < nq) p1_draw(draw, cnt, lane);
        }
        uint32_t nxb = b0, nxm = 0u;                 /* the unit after u */
        for (uint32_t u = 0; nxb < nq; u++) {
            const uint32_t b = nxb, m = nxm;
            if (++nxm == mc) {
                nxm = 0u;
                if (second) {
                    nxb = b0 + W;
                    second = false;
                } else {
                    nxb = 2u * W + __shfl_sync(0xffffffffu, draw, 0);
                    if (nxb < nq) p1_draw(draw, cnt, lane);
                }
            }
            if (nxb < nq) {
                p1_issue<DK != 0u>(buf0 + ((u + 1u) & 1u) * P1_UNIT_BYTES, kc, sg, zz, sh, nxb, nxm, lane);
                __pipeline_wait_prior(1);            /* unit u has landed (this lane's copies) */
            } else {
                __pipeline_wait_prior(0);
            }
            __syncwarp();                            /* ... and every lane's */
            const uint8_t *cb = buf0 + (u & 1u) * P1_UNIT_BYTES;
            const uint32_t c0 = 128u * m + 16u * cg;
            if (c0 < d) {
                /* the lane's rows and quads: codes of token tj + 4 j at row
                 * offset 16 cg; sigma, z and q at the padded QPAD of their
                 * channel (20 words a 16 channels: 16-byte reads of the 8
                 * channel groups fall in distinct banks) */
                const uint8_t *cl = cb + tj * 128u + 16u * cg;
                const float *sl = (const float *)(cb + P1_UNIT_CODES) + QPAD(16u * cg);
                const float *zl = sl + P1_META_WORDS;
                const float *ql = &qs[0][QPAD(c0)];
                uint4 cw[4];
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++) cw[j] = *(const uint4 *)(cl + 512u * j);
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++) {
                    const float4 s4 = *(const float4 *)(sl + 4u * w);
                    const float4 z4 = *(const float4 *)(zl + 4u * w);
                    float4 qv[4];
#pragma unroll
                    for (uint32_t hh = 0; hh < 4u; hh++) qv[hh] = *(const float4 *)(ql + hh * QROW + 4u * w);
                    float kq[4][4];                  /* [j][e]: k^ of channel c0 + 4 w + e */
#pragma unroll
                    for (uint32_t j = 0; j < 4u; j++) {
                        const uint32_t wx = u4_at(cw[j], w) ^ 0x80808080u;
#pragma unroll
                        for (uint32_t e = 0; e < 4u; e++)
                            kq[j][e] = __fmaf_rn(code_f32(wx, e), f4_at(s4, e), f4_at(z4, e));
                    }
#pragma unroll
                    for (uint32_t e = 0; e < 4u; e++)
#pragma unroll
                        for (uint32_t hh = 0; hh < 4u; hh++) {
                            const float qq = f4_at(qv[hh], e);
#pragma unroll
                            for (uint32_t j = 0; j < 4u; j++)
                                acc[4u * j + hh] = __fmaf_rn(qq, kq[j][e], acc[4u * j + hh]);
                        }
                }
                if (CERT) {
                    /* lane tj: quad tj of the lane's channels */
                    const float4 st = *(const float4 *)(sl + 4u * tj);
                    const float4 zt = *(const float4 *)(zl + 4u * tj);
                    float4 qt[4];
#pragma unroll
                    for (uint32_t hh = 0; hh < 4u; hh++) qt[hh] = *(const float4 *)(ql + hh * QROW + 4u * tj);
#pragma unroll
                    for (uint32_t e = 0; e < 4u; e++) {
                        const float sv = f4_at(st, e), za = fabsf(f4_at(zt, e));
                        /* sigma/2 + gamma' = sigma (1/2 + 2^-12) + 2^-20 |z| + 2^-149 [CERT-DLT-05] */
                        const float mh = __fmaf_ru(sv, 0x1.002p-1f, __fmaf_ru(za, 0x1p-20f, 0x1p-149f));
                        /* |z| + 128 sigma >= |k^| / (1 + 2^-23) (|code| <= 128, one fmaf rounding) */
                        const float kb = __fmaf_ru(sv, 128.0f, za);
#pragma unroll
                        for (uint32_t hh = 0; hh < 4u; hh++) {
                            const float qa = fabsf(f4_at(qt[hh], e));
                            cq[hh] = __fmaf_ru(qa, mh, cq[hh]);
                            cq[4u + hh] = __fmaf_ru(qa, kb, cq[4u + hh]);
                        }
                    }
                }
            }
            __syncwarp();                            /* every lane is done with this buffer */
            if (m + 1u == mc) {
                p1_finish<CERT>(acc, cq, NULL, true, KVQ_CERT_BLOCK, b, kv, g0, h, ws, nb, gs, e0, lane,
                                lmax);
#pragma unroll
                for (uint32_t i = 0; i < 16u; i++) acc[i] = 0.0f;
#pragma unroll
                for (uint32_t i = 0; i < 8u; i++) cq[i] = 0.0f;
            }
        }
        if (nres > 0u && blockIdx.x == 0u && warp == 0u) {
            /* residual block: binary16 originals, scored directly */
            const uint32_t ntok = nres;
            float aab[16];
#pragma unroll
            for (uint32_t i = 0; i < 16u; i++) aab[i] = 0.0f;
            for (uint32_t c0 = 16u * cg; c0 < d; c0 += 128u) {
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++) {
                    float kq[4][4];
#pragma unroll
                    for (uint32_t j = 0; j < 4u; j++) {
                        const uint32_t tt = tj + 4u * j;
                        h4_f32(kq[j], tt < ntok ? *(const uint2 *)(kr + (uint64_t)tt * d + c0 + 4u * w)
                                                : make_uint2(0u, 0u));
                    }
#pragma unroll
                    for (uint32_t e = 0; e < 4u; e++)
#pragma unroll
                        for (uint32_t hh = 0; hh < 4u; hh++) {
                            const float qq = qs[hh][QPAD(c0 + 4u * w + e)];
#pragma unroll
                            for (uint32_t j = 0; j < 4u; j++) {
                                acc[4u * j + hh] = __fmaf_rn(qq, kq[j][e], acc[4u * j + hh]);
                                if (CERT)
                                    aab[4u * j + hh] =
                                        __fmaf_ru(fabsf(qq), fabsf(kq[j][e]), aab[4u * j + hh]);
                            }
                        }
                }
            }
            /* the residual's A: max over its tokens of sum_c |q_c||k_c|, each sum upward */
            if (CERT) rs16<true>(aab, lane);
            p1_finish<CERT>(acc, cq, aab, false, ntok, nq, kv, g0, h, ws, nb, gs, e0, lane, lmax);
        }
        /* the head's M = max_b L~_b: this warp's part, one atomic a head
         * (ord_key of a number is never 0) */
        const uint32_t hh = 2u * (lane & 1u) + ((lane >> 1) & 1u);
        if (lane < 4u && g0 + hh < h.group && lmax > -INFINITY)
            atomicMax(ws.hmax + kv * h.group + g0 + hh, ord_key(lmax));
    }
    TL_P1_END();
}

/* ---- selection, checks, ladder ------------------------------------------- */

/* One pass over the blocks for a candidate selection: exact integer sums,
 * maxima, and binary64 sums rounded up (acc) or down (vlo), each a valid bound
 * whatever the order of the reduction. */
struct eval_acc {
    unsigned long long sl, sh;           /* sum of lo, hi over the selected full blocks */
    double acc, vlo;                     /* sum hi_b eta_b (S, not promoted), up; sum lo_b nu_b (S), down */
    uint32_t ksel;                       /* selected full blocks */
    float u, lam, emax, vh;              /* max over T of RU(L~ + Delta'); max over S of RD(L~ - Delta'); max eta; max Vh */
};

struct EvalOp {
    __device__ eval_acc operator()(const eval_acc &a, const eval_acc &b) const
    {
        eval_acc r;
        r.sl = a.sl + b.sl;
        r.sh = a.sh + b.sh;
        r.acc = __dadd_ru(a.acc, b.acc);
        r.vlo = __dadd_rd(a.vlo, b.vlo);
        r.ksel = a.ksel + b.ksel;
        r.u = fmaxf(a.u, b.u);
        r.lam = fmaxf(a.lam, b.lam);
        r.emax = fmaxf(a.emax, b.emax);
        r.vh = fmaxf(a.vh, b.vh);
        return r;
    }
};

/* The empty pass: the identity of EvalOp. */
__device__ __forceinline__ eval_acc eval_zero()
{
    eval_acc x;
    x.sl = x.sh = 0ull;
    x.acc = x.vlo = 0.0;
    x.ksel = 0u;
    x.u = x.lam = -INFINITY;
    x.emax = x.vh = 0.0f;
    return x;
}

/* EvalOp over the 32 lanes of a warp by an xor butterfly: every lane ends
 * with the same value (each EvalOp component is commutative, the directed
 * binary64 additions included). */
__device__ __forceinline__ eval_acc warp_eval(eval_acc v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        eval_acc w;
        w.sl = __shfl_xor_sync(0xffffffffu, v.sl, o);
        w.sh = __shfl_xor_sync(0xffffffffu, v.sh, o);
        w.acc = __shfl_xor_sync(0xffffffffu, v.acc, o);
        w.vlo = __shfl_xor_sync(0xffffffffu, v.vlo, o);
        w.ksel = __shfl_xor_sync(0xffffffffu, v.ksel, o);
        w.u = __shfl_xor_sync(0xffffffffu, v.u, o);
        w.lam = __shfl_xor_sync(0xffffffffu, v.lam, o);
        w.emax = __shfl_xor_sync(0xffffffffu, v.emax, o);
        w.vh = __shfl_xor_sync(0xffffffffu, v.vh, o);
        v = EvalOp()(v, w);
    }
    return v;
}

typedef cub::BlockReduce<float, SEL_THREADS> RedF;
typedef cub::BlockScan<uint32_t, SEL_THREADS> ScanU;

/* The fast selector [CERT-DEV-03]: SEL_BUCKETS buckets of floor(16 (M - L~)),
 * one a thread; the members of the boundary bucket, at most SEL_GATHER of
 * them, are ranked in shared memory. */
#define SEL_BUCKETS 1024u
#define SEL_BSCALE  16.0f
#define SEL_GATHER  1024u
static_assert(SEL_BUCKETS == SEL_THREADS && SEL_GATHER <= SEL_THREADS,
              "the fast selector gives each thread one bucket and one gathered block");

/* counts and exact integer mass sums of a run of blocks */
struct cnt_mass {
    uint32_t c;
    unsigned long long l, h;
};

/* Everything the ladder needs about one candidate selection [CERT-DEV-04]. */
struct eval_out {
    bool rank, bound, value, cover;
    float ekey, eval, alpha, ekey_paper, vh;
};

struct sel_smem {
    union {
        typename RedF::TempStorage rf;
        typename ScanU::TempStorage su;
        typename cub::BlockReduce<uint32_t, SEL_THREADS>::TempStorage rx;
        eval_acc re[SEL_THREADS / 32u];           /* the warps' EvalOp results */
    } t;
    /* bucket counters: 16-bit chunks of the masses in 32-bit words, lo in
     * hm[0..2], hi in hm[3..5] (the radix passes and the fast buckets are
     * never live together: the fast selector keeps its scanned buckets in
     * registers) */
    union {
        struct {
            uint32_t cnt[256];
            uint32_t hm[6][256];
        } rx;
        struct {
            uint32_t cnt[SEL_BUCKETS];
            uint32_t hm[6][SEL_BUCKETS];
        } fb;
    } h;
    uint32_t gkey[SEL_GATHER], gidx[SEL_GATHER];  /* the boundary bucket's blocks */
    uint16_t gsrt[SEL_GATHER];                    /* gathered slots in selection order */
    uint32_t gn, gmin, pmin;
    cnt_mass above, wagg[SEL_THREADS / 32u], wtot;
    uint32_t wcnt[SEL_THREADS / 32u];
    eval_acc ea;
    eval_out ev;                                   /* judge's result (warp 0's) */
    uint32_t mxk[3];                               /* ord_key of Vmax, delta1, Delta' */
    float bf;
    unsigned long long tlo, thi;
    uint32_t bx, by, tcnt;
    unsigned long long bu, bu2;
    uint32_t nown;                                 /* blocks this head stages */
    uint32_t ntry;                                 /* early claim attempts (settle) */
    uint32_t ut;                                   /* ord_key of U, max over T of RU(L~ + Delta') (0: T empty) */
};

/* Inclusive scan of v over the lanes of a warp (exact integer sums). */
__device__ __forceinline__ cnt_mass warp_scan_cm(cnt_mass v, uint32_t lane)
{
#pragma unroll
    for (uint32_t o = 1u; o < 32u; o <<= 1) {
        const uint32_t c = __shfl_up_sync(0xffffffffu, v.c, o);
        const unsigned long long l = __shfl_up_sync(0xffffffffu, v.l, o);
        const unsigned long long h = __shfl_up_sync(0xffffffffu, v.h, o);
        if (lane >= o) {
            v.c += c;
            v.l += l;
            v.h += h;
        }
    }
    return v;
}

/* Inclusive scan of x over the CTA in thread order (incl) and its total:
 * shuffles within each warp, then one warp scans the warp totals.  Exact
 * integer sums.  The caller syncs before the next call. */
__device__ void scan_cm(sel_smem &S, const cnt_mass &x, cnt_mass &incl, cnt_mass &tot)
{
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const cnt_mass v = warp_scan_cm(x, lane);
    if (lane == 31u) S.wagg[warp] = v;
    __syncthreads();
    if (warp == 0u) {
        const uint32_t nw = blockDim.x >> 5;
        cnt_mass w;
        w.c = 0u;
        w.l = w.h = 0ull;
        if (lane < nw) w = S.wagg[lane];
        const cnt_mass own = w;
        w = warp_scan_cm(w, lane);
        if (lane < nw) {                      /* exclusive prefix of warp `lane` */
            S.wagg[lane].c = w.c - own.c;
            S.wagg[lane].l = w.l - own.l;
            S.wagg[lane].h = w.h - own.h;
        }
        if (lane == 31u) S.wtot = w;
    }
    __syncthreads();
    incl.c = v.c + S.wagg[warp].c;
    incl.l = v.l + S.wagg[warp].l;
    incl.h = v.h + S.wagg[warp].h;
    tot = S.wtot;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinU {
    __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a < b ? a : b; }
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

/* The exact mass sum of bucket dg from its three 16-bit chunk counters
 * (k = 0: lo, 3: hi). */
template <uint32_t NBK>
__device__ __forceinline__ unsigned long long chunk_mass(const uint32_t (*hm)[NBK], uint32_t k,
                                                         uint32_t dg)
{
    return (unsigned long long)hm[k][dg] + ((unsigned long long)hm[k + 1u][dg] << 16) +
           ((unsigned long long)hm[k + 2u][dg] << 32);
}

/* Adds one block's count and masses (vl, vh) to bucket dg; every lane of the
 * warp calls it (dg = 0xffff: nothing to add).  Each count and mass goes to
 * the bucket's 32-bit counters in 16-bit chunks (a mass is below 2^41: three
 * chunks), by native shared atomics.  When the whole warp has one bucket (the
 * far tail of a long head), its masses are added first (exact: their 21-bit
 * halves summed over 32 lanes fit 32 bits), and one lane adds the sums (below
 * 2^46, three chunks again).  No counter overflows: at most nq <= 2^16
 * additions reach one, each below 2^16.  With umx, the bucket's maximum of
 * the ordered keys uk (0: none) is raised too. */
template <uint32_t NBK>
__device__ __forceinline__ void bucket_add(uint32_t *cnt, uint32_t (*hm)[NBK], uint32_t dg,
                                           unsigned long long vl, unsigned long long vh,
                                           uint32_t *umx = NULL, uint32_t uk = 0u)
{
    const uint32_t d0 = __shfl_sync(0xffffffffu, dg, 0);
    if (__all_sync(0xffffffffu, dg == d0)) {
        if (d0 == 0xffffu) return;
        const uint32_t l0 = __reduce_add_sync(0xffffffffu, (uint32_t)(vl & 0x1fffffull));
        const uint32_t l1 = __reduce_add_sync(0xffffffffu, (uint32_t)(vl >> 21));
        const uint32_t h0 = __reduce_add_sync(0xffffffffu, (uint32_t)(vh & 0x1fffffull));
        const uint32_t h1 = __reduce_add_sync(0xffffffffu, (uint32_t)(vh >> 21));
        if (umx != NULL) uk = __reduce_max_sync(0xffffffffu, uk);
        vl = ((unsigned long long)l1 << 21) + l0;
        vh = ((unsigned long long)h1 << 21) + h0;
        if ((threadIdx.x & 31u) != 0u) return;
        atomicAdd(&cnt[d0], 32u);
    } else {
        if (dg == 0xffffu) return;
        atomicAdd(&cnt[dg], 1u);
    }
    if (umx != NULL && uk != 0u) atomicMax(&umx[dg], uk);
#pragma unroll
    for (uint32_t k = 0; k < 3u; k++) {
        atomicAdd(&hm[k][dg], (uint32_t)((vl >> (16u * k)) & 0xffffu));
        atomicAdd(&hm[3u + k][dg], (uint32_t)((vh >> (16u * k)) & 0xffffu));
    }
}

/* Radix select over the ordered keys of head qh (the general selector, used
 * when the fast one's boundary bucket holds more than its gather capacity):
 * the selection is the set of the first K blocks of the order "L~
 * descending, ties to the lower index", K the least k with pred(k).  Writes
 * flag[b] = 1 for the selected blocks, 0 for the others.  Returns K. */
__device__ uint32_t radix_select(sel_smem &S, const uint32_t *key, const unsigned long long *lo,
                                 const unsigned long long *hi, uint32_t nq, const sel_pred &P,
                                 uint8_t *flag)
{
    const uint32_t tid = threadIdx.x;
    uint32_t prefix = 0, pmask = 0;
    uint32_t above_cnt = 0;
    unsigned long long above_lo = 0, above_hi = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint32_t j = tid; j < 7u * 256u; j += blockDim.x) {
            if (j < 256u) S.h.rx.cnt[j] = 0;
            else S.h.rx.hm[j / 256u - 1u][j % 256u] = 0;
        }
        __syncthreads();
        const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
#pragma unroll 2
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
            bucket_add<256u>(S.h.rx.cnt, S.h.rx.hm, dg, vl, vh);
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
#pragma unroll
            for (uint32_t j = 0; j < 8u; j++) {
                const uint32_t dg = 255u - 8u * lane - j;
                c += S.h.rx.cnt[dg];
                l += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                hh += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
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
            /* pred at the end of each of the lane's non-empty buckets, all
             * eight evaluated (independent, so their latencies overlap); the
             * first that holds is the lane's candidate */
            uint32_t hit = 0;
            {
                uint32_t ci = c;
                unsigned long long li = l, hi_ = hh;
#pragma unroll
                for (uint32_t j = 0; j < 8u; j++) {
                    const uint32_t dg = 255u - 8u * lane - j, cj = S.h.rx.cnt[dg];
                    ci += cj;
                    li += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                    hi_ += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
                    hit |= (cj != 0u && P(ci, li, hi_)) ? 1u << j : 0u;
                }
            }
            /* pred(nq) holds (kcap or kfix <= nq): some lane finds a bucket */
            const uint32_t ball = __ballot_sync(0xffffffffu, hit != 0u);
            if (ball != 0u && lane == (uint32_t)(__ffs(ball) - 1)) {
                const uint32_t jf = (uint32_t)(__ffs(hit) - 1);
                for (uint32_t j = 0; j < jf; j++) {
                    const uint32_t dg = 255u - 8u * lane - j;
                    c += S.h.rx.cnt[dg];
                    l += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                    hh += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
                }
                const uint32_t found = 255u - 8u * lane - jf;
                S.bx = found;
                S.by = c;
                S.bu = l;
                S.bu2 = hh;
                S.tcnt = S.h.rx.cnt[found];      /* at the last pass: the ties of t* */
                S.tlo = chunk_mass<256u>(S.h.rx.hm, 0u, found) / S.h.rx.cnt[found];
                S.thi = chunk_mass<256u>(S.h.rx.hm, 3u, found) / S.h.rx.cnt[found];
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

/* Thread 0's value r (a CTA reduction's result) to every thread, through
 * slot; the syncs also end the reduction's use of its temporary storage. */
template <typename T> __device__ __forceinline__ T cta_bcast(T r, T &slot)
{
    __syncthreads();
    if (threadIdx.x == 0) slot = r;
    __syncthreads();
    r = slot;
    __syncthreads();
    return r;
}

__device__ float block_max(sel_smem &S, float x)
{
    return cta_bcast(RedF(S.t.rf).Reduce(x, MaxOp()), S.bf);
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

/* Bucket of a full block for the fast selector: floor(16 RN(M - L~)), capped
 * at SEL_BUCKETS - 1.  Each step is monotone, so a block of greater L~ (or of
 * equal L~) never lies in a later bucket: the buckets list the blocks in the
 * order "L~ descending" up to the order inside one bucket. */
__device__ __forceinline__ uint32_t sel_bucket(float l, float m)
{
    const float x = __fmul_rn(__fsub_rn(m, l), SEL_BSCALE);
    return x < (float)(SEL_BUCKETS - 1u) ? (uint32_t)x : SEL_BUCKETS - 1u;
}

/* The selection as a bitmap of the full blocks (bit b % 32 of word b / 32; a
 * warp's 32 consecutive blocks of a walk are one word), in dynamic shared
 * memory: nq <= 65536 blocks. */
#define SEL_BITS (65536u / 32u)

/* The ordered key of a candidate v for U (S.ut, a maximum of keys from 0):
 * 0 for a NaN, which is ignored as fmaxf would (the key of a number is
 * never 0). */
__device__ __forceinline__ uint32_t ut_key(float v)
{
    return v == v ? ord_key(v) : 0u;
}

/* The fast selector [CERT-DEV-03]: the same K and the same blocks as
 * radix_select, from the scanned buckets (each thread holds its bucket's count
 * and masses, own, and their sums over buckets 0..tid, incl): the boundary
 * bucket is the first whose end satisfies pred; one walk writes the blocks of
 * the earlier buckets to the bitmap and gathers the boundary bucket's, which
 * are ranked by (key descending, index ascending) and scanned: the least count
 * inside it that satisfies pred ends the selection, and its first blocks join
 * the bitmap.  With CERT, S.ut = the maximum over the unselected full blocks
 * of RU(L~ + Delta'): the later buckets' maxima (umx, from the mass pass) and
 * the boundary bucket's unselected blocks.  Returns false when the boundary
 * bucket holds more than cap blocks (the bitmap is then incomplete). */
struct fast_sel {
    bool ok;
    uint32_t k;
};

template <bool CERT>
__device__ fast_sel fast_select(sel_smem &S, const cnt_mass &own, const cnt_mass &incl,
                                const sel_pred &P, const float *lt, const float *dp, float m,
                                const unsigned long long *lo, const unsigned long long *hi,
                                uint32_t nq, uint32_t cap, uint32_t *bits, const uint32_t *umx)
{
    const uint32_t tid = threadIdx.x, lane = tid & 31u;
    fast_sel r;
    r.ok = false;
    r.k = 0u;
    if (tid == 0) {
        S.gmin = S.pmin = 0xffffffffu;
        S.gn = S.ut = 0u;
    }
    __syncthreads();
    /* pred(nq) holds, so the last non-empty bucket's end satisfies it */
    if (own.c != 0u && P(incl.c, incl.l, incl.h)) atomicMin(&S.gmin, tid);
    __syncthreads();
    const uint32_t bs = S.gmin;
    if (bs >= SEL_BUCKETS) return r;                       /* uniform; cannot happen */
    if (tid == bs) {
        S.above.c = incl.c - own.c;
        S.above.l = incl.l - own.l;
        S.above.h = incl.h - own.h;
    }
    const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
    float lc = tid < nq ? lt[tid] : 0.0f;                  /* L~ loaded a round ahead */
    for (uint32_t rd = 0; rd < nround; rd++) {
        const uint32_t b = rd * blockDim.x + tid;
        const float lb = lc;
        if (b + blockDim.x < nq) lc = lt[b + blockDim.x];
        const uint32_t bk = b < nq ? sel_bucket(lb, m) : SEL_BUCKETS;
        const uint32_t w = __ballot_sync(0xffffffffu, bk < bs);
        if (lane == 0u) bits[b >> 5] = w;
        if (bk == bs) {
            const uint32_t slot = atomicAdd(&S.gn, 1u);
            if (slot < cap) {
                S.gkey[slot] = ord_key(lb);
                S.gidx[slot] = b;
            }
        }
    }
    __syncthreads();
    const uint32_t c = S.gn;
    if (c > cap) return r;                                 /* uniform */
    const cnt_mass above = S.above;
    if (tid < c) {
        const uint32_t ki = S.gkey[tid], bi = S.gidx[tid];
        uint32_t rank = 0;
        for (uint32_t j = 0; j < c; j++) {
            const uint32_t kj = S.gkey[j], bj = S.gidx[j];
            rank += (kj > ki || (kj == ki && bj < bi)) ? 1u : 0u;
        }
        S.gsrt[rank] = (uint16_t)tid;
    }
    __syncthreads();
    cnt_mass x, s;
    x.c = 0u;
    x.l = x.h = 0ull;
    uint32_t gb = 0;
    if (tid < c) {
        gb = S.gidx[S.gsrt[tid]];
        x.c = 1u;
        x.l = lo[gb];
        x.h = hi[gb];
    }
    cnt_mass tot;
    scan_cm(S, x, s, tot);
    if (tid < c && P(above.c + s.c, above.l + s.l, above.h + s.h)) atomicMin(&S.pmin, tid);
    __syncthreads();
    const uint32_t j = S.pmin + 1u;                         /* holds at tid = c - 1 */
    uint32_t uk = 0u;                                      /* ordered key toward U (0: none) */
    if (tid < c) {
        if (tid < j) {
            atomicOr(&bits[gb >> 5], 1u << (gb & 31u));
        } else if (CERT) {
            uk = ut_key(__fadd_ru(lt[gb], dp[gb]));
        }
    }
    if (CERT) {
        /* the later buckets' maxima and the boundary bucket's unselected
         * blocks: a maximum over the warp, then one atomic a warp (the same
         * maximum as an atomic a thread, without the contention on S.ut) */
        if (tid > bs && umx[tid] > uk) uk = umx[tid];
        uk = __reduce_max_sync(0xffffffffu, uk);
        if (lane == 0u && uk != 0u) atomicMax(&S.ut, uk);
    }
    __syncthreads();
    r.ok = true;
    r.k = above.c + j;
    return r;
}

/* The radix selector's flags (bit 0) to the bitmap, and with CERT S.ut over
 * the unselected full blocks, in one walk of the fast selector's layout. */
template <bool CERT>
__device__ void flags_to_bits(sel_smem &S, const uint8_t *flag, const float *lt, const float *dp,
                              uint32_t nq, uint32_t *bits)
{
    const uint32_t tid = threadIdx.x;
    if (tid == 0) S.ut = 0u;
    __syncthreads();
    float u = -INFINITY;
    const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
    for (uint32_t rd = 0; rd < nround; rd++) {
        const uint32_t b = rd * blockDim.x + tid;
        const bool sel = b < nq && (flag[b] & 1u) != 0u;
        const uint32_t w = __ballot_sync(0xffffffffu, sel);
        if ((tid & 31u) == 0u) bits[b >> 5] = w;
        if (CERT && b < nq && !sel) u = fmaxf(u, __fadd_ru(lt[b], dp[b]));
    }
    if (CERT) {
        u = warp_max(u);
        if ((tid & 31u) == 0u && u > -INFINITY) atomicMax(&S.ut, ut_key(u));
    }
    __syncthreads();
}

/* The selected blocks in index order from the bitmap: list[0 .. k), k
 * returned.  Each thread takes a run of consecutive words; a CTA scan of
 * their counts places them. */
__device__ uint32_t build_list(sel_smem &S, const uint32_t *bits, uint32_t nq, uint32_t *list)
{
    const uint32_t nw = (nq + 31u) / 32u, per = (nw + blockDim.x - 1u) / blockDim.x;
    const uint32_t w0 = min(nw, threadIdx.x * per), w1 = min(nw, w0 + per);
    uint32_t c = 0, pos, tot;
    for (uint32_t w = w0; w < w1; w++) c += (uint32_t)__popc(bits[w]);
    ScanU(S.t.su).ExclusiveSum(c, pos, tot);
    for (uint32_t w = w0; w < w1; w++) {
        for (uint32_t x = bits[w]; x != 0u; x &= x - 1u) list[pos++] = 32u * w + (uint32_t)(__ffs(x) - 1);
    }
    __syncthreads();
    return tot;
}

/* Staging of promoted values [CERT-DEV-01], the select kernel's side.  A
 * head claims a promoted block of its KV head by raising stag[b] from 0; the
 * claimer takes a pool slot (scnt) and lists (block, slot) in its claim list
 * (dynamic shared memory).  Up to `pre` claims are made as soon as a rung's
 * promotion is settled, and their values fetched from tier 2 into shared
 * memory asynchronously (cp.async) while the checks and the list proceed,
 * then written to the pool at the end; the other claims are made by the list
 * walk and copied at the end.  An early claim whose block the accepted rung
 * does not promote is harmless (its slot holds that block's values) and
 * costs only its copy: at most `pre` blocks a head. */
#define SEL_PRE_BYTES (64u * 1024u)  /* shared buffer for the early fetch */
#define SEL_PRE_DEFAULT 4u           /* early claims a head by default: host reads in flight stall the
                                      * CTA's later memory operations, so a small early fetch is faster */
#define SEL_DYN_SMEM  ((2u * SEL_GATHER + SEL_BITS + SEL_BUCKETS) * 4u + SEL_PRE_BYTES)

struct stage_ctx {
    uint32_t *stag, *scnt;           /* the KV head's entries and slot count */
    uint32_t pool;                   /* slots of the KV head (0: staging off) */
    uint32_t *cidx, *cslot;          /* claim list: block, slot */
    uint8_t *buf;                    /* the early fetch: pre blocks of 16 x d values */
    uint32_t pre;                    /* blocks the buffer holds */
    uint32_t issued;                 /* claims fetched early so far (uniform) */
};

__device__ __forceinline__ void stage_claim(sel_smem &S, const stage_ctx &sc, uint32_t b)
{
    if (sc.pool == 0u || atomicMax(sc.stag + b, 1u) != 0u) return;
    const uint32_t slot = atomicAdd(sc.scnt, 1u);
    if (slot >= sc.pool) return;                           /* entry 1: tier 2 */
    const uint32_t i = atomicAdd(&S.nown, 1u);
    if (i >= SEL_GATHER) return;
    sc.cidx[i] = b;
    sc.cslot[i] = slot;
    atomicMax(sc.stag + b, slot + 2u);
}

/* Issues the early fetch of the claims not yet fetched that the buffer
 * holds (every thread; S.nown settled by a sync before). */
__device__ __forceinline__ void stage_issue(sel_smem &S, stage_ctx &sc, const uint16_t *tv,
                                            const kvq_cert_shape &sh)
{
    const uint32_t to = min(min(S.nown, SEL_GATHER), sc.pre);
    if (to <= sc.issued) return;
    const uint32_t per = KVQ_CERT_BLOCK * sh.dim / 8u;      /* 16-byte pieces a block */
    const uint32_t tot = (to - sc.issued) * per;
    for (uint32_t i = threadIdx.x; i < tot; i += blockDim.x) {
        const uint32_t j = sc.issued + i / per, x = i % per;
        __pipeline_memcpy_async(sc.buf + ((uint64_t)j * per + x) * 16u,
                                (const uint8_t *)(tv + kvq_cert_in_index(&sh, kvq_cert_block_first(sc.cidx[j]), 0)) +
                                    16u * x,
                                16);
    }
    __pipeline_commit();
    sc.issued = to;
}

/* The exclusive prefix of this warp's count c (one value a warp, lane 0's) and
 * the CTA's total; syncs twice. */
__device__ __forceinline__ uint32_t warp_prefix(sel_smem &S, uint32_t c, uint32_t *tot)
{
    const uint32_t warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const uint32_t lane = threadIdx.x & 31u;
    if (lane == 0u) S.wcnt[warp] = c;
    __syncthreads();
    /* lane l reads warp l's count (nw <= 32); two warp sums */
    const uint32_t x = lane < nw ? S.wcnt[lane] : 0u;
    const uint32_t pre = __reduce_add_sync(0xffffffffu, lane < warp ? x : 0u);
    *tot = __reduce_add_sync(0xffffffffu, x);
    __syncthreads();
    return pre;
}

/* Promotion [CERT-PROM-01..03] and the sums the checks need, over the
 * selected blocks list[0 .. k) in index order (thread t takes entries t, t +
 * 1024, ...: the same list gives the same sums, whichever selector made it).
 * Promotion: threshold eta > vtol nu decided exactly (the double product of
 * two binary32 values is exact), at most cap of the qualifying blocks (the
 * lowest indices first) under [CERT-PROM-02], every selected block when all
 * (rung 2); each entry is rewritten with ENT_PROM when promoted.  With CERT,
 * the accumulators (exact integer sums, maxima, binary64 sums rounded up
 * (acc) or down (vlo): valid bounds whatever the order of the reduction) are
 * reduced over the CTA; U is S.ut, which the selection left. */
struct settle_out {
    eval_acc x;
    uint32_t nprom;
};

template <bool CERT>
__device__ settle_out settle(sel_smem &S, const stage_ctx &sc, uint32_t *list, uint32_t k,
                             const float *lt, const float *dp, const float *eta, const float *nu,
                             const unsigned long long *lo, const unsigned long long *hi,
                             float vtol, uint32_t cap, bool all)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t below = (1u << lane) - 1u;              /* lanes before this one */
    const bool capped = cap != 0xffffffffu;
    settle_out o;
    eval_acc &x = o.x;
    x = eval_zero();
    uint32_t np = 0, run = 0;
    for (uint32_t base = 0; base < k; base += blockDim.x) {   /* uniform */
        const uint32_t i = base + threadIdx.x;
        const bool v = i < k;
        uint32_t b = 0;
        float ltb = 0.0f, dpb = 0.0f, etab = 0.0f, nub = 0.0f;
        unsigned long long lob = 0ull, hib = 0ull;
        if (v) {
            b = list[i] & ENT_BLOCK;
            etab = eta[b];
            nub = nu[b];
            if (CERT) {
                ltb = lt[b];
                dpb = dp[b];
                lob = lo[b];
                hib = hi[b];
            }
        }
        const bool want = v && (all || (double)etab > (double)vtol * (double)nub);
        bool p = want;
        if (capped) {                                      /* ranks of the qualifying blocks */
            const uint32_t bal = __ballot_sync(0xffffffffu, want);
            uint32_t tot;
            const uint32_t pre = warp_prefix(S, (uint32_t)__popc(bal), &tot);
            p = want && run + pre + (uint32_t)__popc(bal & below) < cap;
            run += tot;
        }
        np += (uint32_t)__popc(__ballot_sync(0xffffffffu, p));
        if (v) {
            list[i] = b | (p ? ENT_PROM : 0u);
            /* at most `pre` early claim attempts a head in all: what a rung
             * the ladder leaves can waste is bounded by the buffer */
            if (p && sc.pool != 0u && atomicAdd(&S.ntry, 1u) < sc.pre) stage_claim(S, sc, b);
            if (CERT) {
                x.sl += lob;
                x.sh += hib;
                x.ksel++;
                x.lam = fmaxf(x.lam, __fsub_rd(ltb, dpb));
                if (!p) {
                    x.acc = __dadd_ru(x.acc, __dmul_ru(__ull2double_ru(hib), (double)etab));
                    x.emax = fmaxf(x.emax, etab);
                    x.vh = fmaxf(x.vh, __fadd_ru(nub, etab));   /* ||v^|| <= ||v|| + eta */
                } else {
                    x.vh = fmaxf(x.vh, nub);
                }
                x.vlo = __dadd_rd(x.vlo, __dmul_rd(__ull2double_rd(lob), (double)nub));
            }
        }
    }
    warp_prefix(S, np, &o.nprom);
    if (CERT) {
        /* EvalOp over the CTA: each warp's result, then warp 0 reduces the
         * warps' results and hands the total to every thread.  Only the
         * first nwa warps hold entries (thread t holds entries t, t + 1024,
         * ...); the others' x is the identity eval_zero(), which leaves every
         * component bit for bit as it is (exact integer sums, maxima, and
         * directed additions of +0 to non-negative sums), so they take no
         * part: with nwa = 1 warp 0's result is the total. */
        const uint32_t warp = threadIdx.x >> 5;
        const uint32_t nwa = min(blockDim.x >> 5, (k + 31u) >> 5);
        if (warp < nwa) x = warp_eval(x);
        if (nwa > 1u) {
            if (lane == 0u && warp < nwa) S.t.re[warp] = x;
            __syncthreads();
            if (warp == 0u) x = warp_eval(lane < nwa ? S.t.re[lane] : eval_zero());
        }
        if (threadIdx.x == 0u) S.ea = x;
        __syncthreads();
        x = S.ea;
        x.u = S.ut != 0u ? ord_val(S.ut) : -INFINITY;
    }
    return o;
}

/* The checks and claims of a settled selection (x: settle's sums; list[0 ..
 * x.ksel) the selected blocks, read by the ranking rounds when r > 1). */
__device__ eval_out judge(sel_smem &S, const eval_acc &x, const uint32_t *list, const float *lt,
                          const float *dp, const float *nu, uint32_t nq, uint32_t nb,
                          const kvq_cert_params &prm, float delta1, float dmax, float vmax,
                          unsigned long long full_hi, unsigned long long res_lo,
                          unsigned long long res_hi, bool threshold)
{
    const uint32_t tid = threadIdx.x;
    const unsigned long long tail_hi = full_hi - x.sh;  /* exact integers */
    const unsigned long long sel_lo = x.sl + res_lo;
    const unsigned long long sel_hi = x.sh + res_hi;
    const uint32_t ksel = x.ksel;
    const bool t_empty = ksel == nq;
    /* ranking [CERT-RANK-01]: lambda_r - delta1 > U + delta1 + eps_guard;
     * lambda_1 is the fused maximum, lambda_r (r > 1) takes r rounds of
     * (max value, lowest index) */
    const float u = x.u;
    float lam = prm.r == 1u ? x.lam : -INFINITY;
    if (prm.r > 1u) {
        float prev = INFINITY;
        uint32_t prev_idx = 0xffffffffu;
        const uint32_t r = prm.r;
        for (uint32_t it = 0; it < r && it < ksel; it++) {
            float best = -INFINITY;
            uint32_t bi = 0xffffffffu;
            for (uint32_t i = tid; i < ksel; i += blockDim.x) {
                const uint32_t b = list[i] & ENT_BLOCK;
                const float xv = __fsub_rd(lt[b], dp[b]);
                const bool after = xv < prev || (xv == prev && b > prev_idx);
                if (!after) continue;
                if (xv > best || (xv == best && b < bi)) {
                    best = xv;
                    bi = b;
                }
            }
            const float mb = block_max(S, best);
            const uint32_t cand = cta_bcast(cub::BlockReduce<uint32_t, SEL_THREADS>(S.t.rx).Reduce(
                                                (best == mb) ? bi : 0xffffffffu, MinU()),
                                            S.bx);
            prev = mb;
            prev_idx = cand;
            if (it + 1u == r) lam = mb;
        }
    }
    /* the rest is one scalar computation of uniform values: warp 0 does it
     * and hands the result over through shared memory (the other warps wait
     * at the barrier).  Its seven directed quotients form two rounds of
     * independent ones, one quotient a lane: every lane runs the same upward
     * division (a quotient rounded down is the negated upward quotient of
     * the negated numerator, RD(a/b) = -RU(-a/b), and 1/x rounded down is
     * RD(1/x) either way), so the rounds cost two divisions of latency
     * instead of seven, with the same values bit for bit.  Lanes without a
     * quotient, and special cases decided below, divide 0 by 1. */
    if (tid < 32u) {
        const uint32_t lane = tid;
        eval_out o;
        o.rank = t_empty ||
                 (__fsub_rd(lam, delta1) > __fadd_ru(__fadd_ru(u, delta1), prm.eps_guard));
        const double e2d1 = exp_up(__fmul_ru(2.0f, delta1));
        const double e2D = exp_up(__fmul_ru(2.0f, dmax));
        const double c = __dmul_rd(__dsub_rd(1.0, (double)prm.tau), exp_dn(prm.eps_guard));
        const bool bound_free = t_empty || c >= 1.0;
        float vh = x.vh;
        double vlo = x.vlo;
        if (nb > nq) {                                   /* residual: originals */
            vh = fmaxf(vh, nu[nq]);
            vlo = __dadd_rd(vlo, __dmul_rd(__ull2double_rd(res_lo), (double)nu[nq]));
        }
        /* round 1: lane 0 tail_hi / sel_lo (up), lane 1 c / (1 - c) (down),
         * lane 2 acc / sel_lo (up), lane 3 1 / e^{2 delta1} (down) */
        double num = 0.0, den = 1.0;
        if (lane == 0u && tail_hi != 0ull && sel_lo != 0ull) {
            num = __ull2double_ru(tail_hi);
            den = __ull2double_rd(sel_lo);
        } else if (lane == 1u && !bound_free) {
            num = -c;
            den = __dsub_ru(1.0, c);
        } else if (lane == 2u && sel_lo != 0ull) {
            num = x.acc;
            den = __ull2double_rd(sel_lo);
        } else if (lane == 3u && !threshold) {
            num = -1.0;
            den = e2d1;
        }
        const double q1 = __ddiv_ru(num, den);
        const double q_tail = __shfl_sync(0xffffffffu, q1, 0);
        const double q_bnd = -__shfl_sync(0xffffffffu, q1, 1);
        const double q_acc = __shfl_sync(0xffffffffu, q1, 2);
        const double r_e2d1 = -__shfl_sync(0xffffffffu, q1, 3);
        /* alpha^_T from above: odds(alpha^) <= e^{2 delta1} tail_hi / sel_lo
         * [CERT-DEV-04]; A: odds(A) = e^{2 Delta} odds(alpha^) */
        double odds = 0.0;
        if (tail_hi != 0ull) odds = sel_lo == 0ull ? (double)INFINITY : __dmul_ru(e2d1, q_tail);
        const double oddsA = odds == 0.0 ? 0.0 : __dmul_ru(e2D, odds);
        /* round 2: lane 0 A = oddsA / (1 + oddsA), lane 1 alpha = odds /
         * (1 + odds) (both up), lane 2 the value check's right side
         * vtol sum_S rho_b nu_b from below: rho_b >= e^{-2 delta1} lo_b / sel_hi
         * (down) */
        num = 0.0;
        den = 1.0;
        if (lane == 0u && !isinf(oddsA)) {
            num = oddsA;
            den = __dadd_rd(1.0, oddsA);
        } else if (lane == 1u && !isinf(odds)) {
            num = odds;
            den = __dadd_rd(1.0, odds);
        } else if (lane == 2u && !threshold) {
            num = -__dmul_rd(__dmul_rd((double)prm.vtol, vlo), r_e2d1);
            den = __ull2double_ru(sel_hi);
        }
        const double q2 = __ddiv_ru(num, den);
        double A = isinf(oddsA) ? 1.0 : __shfl_sync(0xffffffffu, q2, 0);
        if (A > 1.0) A = 1.0;
        double alpha = isinf(odds) ? 1.0 : __shfl_sync(0xffffffffu, q2, 1);
        if (alpha > 1.0) alpha = 1.0;
        const double rhs = -__shfl_sync(0xffffffffu, q2, 2);
        o.alpha = __double2float_ru(alpha);
        /* boundary [CERT-BND-01]: A <= (1 - tau) e^{eps_guard} */
        o.bound = bound_free ? true : oddsA <= q_bnd;
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
        o.vh = vh;
        const double ev = sel_lo == 0ull ? (double)INFINITY : __dmul_ru(e2d1, q_acc);
        o.eval = fminf(__double2float_ru(ev), x.emax);
        /* [CERT-PROM-01]: with the threshold every unpromoted eta_b <= vtol nu_b */
        o.value = threshold ? true : (double)o.eval <= rhs;
        o.cover = cover_ok(tail_hi, sel_lo, prm.tau);
        if (tid == 0u) S.ev = o;
    }
    __syncthreads();
    return S.ev;
}

/* One CTA a query head: maxima, masses and the bucket histogram, the
 * selection (fast selector, else radix), settle and judge a rung at a time,
 * then the list. */
template <bool CERT>
__global__ void __launch_bounds__(SEL_THREADS)
cert_select_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, kvq_cert_params prm,
                   uint8_t *d_sel, uint8_t *d_prom)
{
    __shared__ sel_smem S;
    TL_SEL_AT(0);
    cudaGridDependencySynchronize();                       /* Phase 1 is done */
    TL_SEL_AT(1);
    cudaTriggerProgrammaticLaunchCompletion();
    const uint32_t qh = blockIdx.x, tid = threadIdx.x, kv = qh / h.group;
    const kvq_cert_shape sh = h.shape;
    const uint32_t nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const float *lt = ws.lt + (uint64_t)qh * nb, *dp = ws.dp + (uint64_t)qh * nb;
    const float *eta = h.d_eta + (uint64_t)kv * nb, *nu = h.d_nu + (uint64_t)kv * nb;
    uint32_t *key = ws.key + (uint64_t)qh * (nq ? nq : 1u);
    unsigned long long *lo = ws.lo + (uint64_t)qh * nb, *hi = ws.hi + (uint64_t)qh * nb;
    uint8_t *flag = ws.flag + (uint64_t)qh * nb;
    head_info *inf = ws.info + qh;
    extern __shared__ __align__(16) uint8_t sel_dyn[];
    stage_ctx sc;
    sc.stag = ws.stag + (uint64_t)kv * nb;
    sc.scnt = ws.scnt + kv;
    sc.pool = h.group * ws.stage_cap;
    sc.cidx = (uint32_t *)sel_dyn;
    sc.cslot = sc.cidx + SEL_GATHER;
    uint32_t *bits = sc.cslot + SEL_GATHER;                 /* the selection bitmap */
    uint32_t *umx = bits + SEL_BITS;                        /* a bucket's max RU(L~ + Delta') */
    sc.buf = (uint8_t *)(umx + SEL_BUCKETS);
    sc.pre = min(ws.pre_cap, SEL_PRE_BYTES / (KVQ_CERT_BLOCK * sh.dim * 2u));
    sc.issued = 0u;
    const uint16_t *tv = h.t2_v + (uint64_t)kv * sh.tokens * sh.dim;

    /* M = max L~ (residual included) from Phase 1's maxima (0: no block had
     * a number, M = -inf as an fmaxf pass would give), then cleared for the
     * next step; the bucket counters are cleared */
    const uint32_t hm = ws.hmax[qh];
    const float m = hm != 0u ? ord_val(hm) : -INFINITY;
    S.h.fb.cnt[tid] = 0u;
#pragma unroll
    for (uint32_t k = 0; k < 6u; k++) S.h.fb.hm[k][tid] = 0u;
    umx[tid] = 0u;
    if (tid < 3u) S.mxk[tid] = ord_key(0.0f);
    if (tid == 0) S.nown = S.ntry = S.ut = 0u;
    __syncthreads();
    if (tid == 0) ws.hmax[qh] = ws.p1cnt[qh * P1CNT_STRIDE] = 0u;
    /* masses: E_b = e^{L~_b - M} within [lo, hi] 2^-40: x = RN(L~_b - M) errs
     * by <= 2^-24 |x| (factor e^{2^-24 |x|} <= 1 + 2^-23 |x| for |x| <= 2^23),
     * expf by 2 ulp (relative 2^-22, or 2^-148 absolute when subnormal); the
     * full blocks' counts and masses go to their buckets.  The same pass takes
     * Vmax [CERT-ANN-04], delta1 = max_b err_b [CERT-DEV-02] and Delta' = max
     * over full blocks [CERT-DLT-02] (non-negative: maxima of their ord_key,
     * from 0) */
    {
        const float *eb = ws.eb + (uint64_t)qh * nb;
        float vmx = 0.0f, emx = 0.0f, dmx = 0.0f;
        const uint32_t nround = (nb + blockDim.x - 1u) / blockDim.x;
        /* a round's four inputs are loaded a round ahead (one round trip
         * in flight while the previous round computes) */
        float cur[4] = {0.0f, 0.0f, 0.0f, 0.0f}, nxt[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        auto load = [&](uint32_t b, float (&v)[4]) {
            if (b < nb) {
                v[0] = lt[b];
                v[1] = nu[b];
                if (CERT) {
                    v[2] = eb[b];
                    if (b < nq) v[3] = dp[b];
                }
            }
        };
        load(tid, cur);
        for (uint32_t rd = 0; rd < nround; rd++) {
            const uint32_t b = rd * blockDim.x + tid;
            load(b + blockDim.x, nxt);
            uint32_t dg = 0xffffu, uk = 0u;
            unsigned long long l = 0ull, u = 1ull;
            if (b < nb) {
                const float lb = cur[0];
                vmx = fmaxf(vmx, cur[1]);
                if (CERT) {
                    emx = fmaxf(emx, cur[2]);
                    if (b < nq) dmx = fmaxf(dmx, cur[3]);
                }
                const float x = __fsub_rn(lb, m);
                const float ax = fabsf(x);
                /* x < -32: 2^40 e^x (1 + 2^-21)(1 + 2^-23 |x|) < 2^-6, so the
                 * enclosure below is [0, 1]: set directly (most blocks of a
                 * long head) */
                if (ax <= 0x1p+23f && !(x < -32.0f)) {
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
                    key[b] = ord_key(lb);
                    dg = sel_bucket(lb, m);
                    if (CERT) {                            /* the bucket's max RU(L~ + Delta') */
                        const float ub = __fadd_ru(lb, cur[3]);
                        uk = ut_key(ub);
                    }
                }
            }
            bucket_add<SEL_BUCKETS>(S.h.fb.cnt, S.h.fb.hm, dg, l, u, CERT ? umx : NULL, uk);
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) cur[i] = nxt[i];
        }
        vmx = warp_max(vmx);
        emx = warp_max(emx);
        dmx = warp_max(dmx);
        if ((tid & 31u) == 0u) {
            atomicMax(&S.mxk[0], ord_key(vmx));
            atomicMax(&S.mxk[1], ord_key(emx));
            atomicMax(&S.mxk[2], ord_key(dmx));
        }
    }
    __syncthreads();
    TL_SEL_AT(2);                                          /* masses */
    const float vmax = ord_val(S.mxk[0]), delta1 = ord_val(S.mxk[1]), dmax = ord_val(S.mxk[2]);
    /* thread t: bucket t and the sums over buckets 0..t; the total is the
     * full blocks' hi sum */
    cnt_mass own, incl, tot;
    own.c = S.h.fb.cnt[tid];
    own.l = chunk_mass<SEL_BUCKETS>(S.h.fb.hm, 0u, tid);
    own.h = chunk_mass<SEL_BUCKETS>(S.h.fb.hm, 3u, tid);
    scan_cm(S, own, incl, tot);
    __syncthreads();
    TL_SEL(3);                                             /* bucket scan */
    const unsigned long long fh = tot.h;
    const unsigned long long res_lo = nb > nq ? lo[nq] : 0ull, res_hi = nb > nq ? hi[nq] : 0ull;
    const uint32_t kmin = min(prm.kmin, nq), kcap0 = min(prm.kmax, nq);
    const bool threshold = prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD;
    const uint32_t gcap = min(ws.gather_cap, SEL_GATHER);

    uint32_t rung = prm.start_rung, k = 0, nprom = 0, checks = 0;
    eval_out ev;
    memset(&ev, 0, sizeof ev);
    bool accepted = false;
    uint32_t k0 = 0, nsel = 0;               /* list[0 .. nsel): the selection */
    uint32_t *list = ws.list + (uint64_t)qh * nb;
    sel_pred P;
    P.full_hi = fh;
    P.res_lo = res_lo;
    P.tau = prm.tau;
    /* a selection to the bitmap (fast selector, else radix), then to the list */
    auto select_k = [&]() -> uint32_t {
        const fast_sel f = fast_select<CERT>(S, own, incl, P, lt, dp, m, lo, hi, nq, gcap, bits, umx);
        uint32_t kk = f.k;
        if (!f.ok) {
            kk = radix_select(S, key, lo, hi, nq, P, flag);
            flags_to_bits<CERT>(S, flag, lt, dp, nq, bits);
        }
        nsel = build_list(S, bits, nq, list);
        return kk;
    };
    if (rung <= 2u && nq > 0u) {
        P.mode = 0u;                                    /* [CERT-SEL-01/02] */
        P.kmin = kmin;
        P.kcap = kcap0;
        P.kfix = 0u;
        k0 = select_k();
    }
    TL_SEL(4);                                             /* rung 0's selection */
    for (; rung <= 2u && !accepted; rung++) {
        if (nq == 0u) {                                   /* S = {residual} */
            k = 0;
        } else if (rung == 0u) {
            k = k0;
        } else {
            const uint32_t k1 = min(2u * k0, nq);          /* [CERT-SEL-01] rung 1 */
            if (k1 != k) {
                P.mode = 1u;
                P.kfix = k1;
                P.kmin = P.kcap = 0u;
                k = select_k();
            }
        }
        const settle_out so =
            settle<CERT>(S, sc, list, nsel, lt, dp, eta, nu, lo, hi, prm.vtol,
                         threshold || rung == 2u ? 0xffffffffu : prm.promote_budget, rung == 2u);
        nprom = so.nprom;
        stage_issue(S, sc, tv, sh);                        /* this rung's claims */
        TL_SEL(5);                                         /* settled (the last rung's) */
        if (!CERT) {
            accepted = true;
            break;
        }
        ev = judge(S, so.x, list, lt, dp, nu, nq, nb, prm, delta1, dmax, vmax, fh, res_lo, res_hi,
                   threshold || rung == 2u);
        TL_SEL(6);                                         /* judged (the last rung's) */
        if (rung == 2u) ev.eval = 0.0f;                     /* [CERT-PROM-03] */
        checks = (ev.rank ? KVQ_CERT_CHECK_RANK : 0u) | (ev.bound ? KVQ_CERT_CHECK_BOUNDARY : 0u) |
                 (ev.value ? KVQ_CERT_CHECK_VALUE : 0u) | (ev.cover ? KVQ_CERT_CHECK_COVERAGE : 0u);
        accepted = ev.rank && ev.bound && ev.value;        /* [CERT-LAD-02] */
        if (accepted) break;
    }
    TL_SEL(7);                                             /* ladder decided */
    const bool dense = !accepted;                           /* rung 3 [CERT-LAD-01] */
    if (dense) {
        rung = prm.start_rung > 3u ? prm.start_rung : 3u;
        k = nq;
        nprom = 0;
        checks = 0;
    }
    /* outputs: the list (rung 3: every block; else settle's entries, then
     * the residual block), the flags when asked for; a promoted block not yet
     * claimed is claimed now (copied at the end) */
    uint32_t tent;
    if (dense) {
        for (uint32_t b = tid; b < nb; b += blockDim.x) {
            list[b] = b | ENT_DENSE | (b >= nq ? ENT_RES : 0u);
            if (d_sel) d_sel[(uint64_t)qh * nb + b] = 1u;
            if (d_prom) d_prom[(uint64_t)qh * nb + b] = 0u;
        }
        tent = nb;
    } else {
        if (tid == 0 && nb > nq) list[nsel] = nq | ENT_RES;
        tent = nsel + (nb > nq ? 1u : 0u);
        if (d_sel || d_prom) {
            for (uint32_t b = tid; b < nb; b += blockDim.x) {
                if (d_sel) d_sel[(uint64_t)qh * nb + b] = b >= nq ? 1u : 0u;
                if (d_prom) d_prom[(uint64_t)qh * nb + b] = 0u;
            }
            __syncthreads();                               /* then the selected blocks' */
        }
        for (uint32_t i = tid; i < nsel; i += blockDim.x) {
            const uint32_t e = list[i], b = e & ENT_BLOCK;
            if (e & ENT_PROM) stage_claim(S, sc, b);
            if (d_sel) d_sel[(uint64_t)qh * nb + b] = 1u;
            if (d_prom) d_prom[(uint64_t)qh * nb + b] = (e & ENT_PROM) ? 1u : 0u;
        }
    }
    TL_SEL(8);                                             /* list written */
    /* the claimed blocks' values to the pool: the early fetch from shared
     * memory once every thread's copies have landed; the later claims (the
     * list's) from tier 2, eight 8-byte pieces a thread in flight at a time
     * (the reads cross the host link) */
    __pipeline_wait_prior(0);
    __syncthreads();
    {
        const uint32_t nown = min(S.nown, SEL_GATHER), per = KVQ_CERT_BLOCK * sh.dim / 4u;
        uint16_t *pz = ws.stage + (uint64_t)kv * sc.pool * KVQ_CERT_BLOCK * sh.dim;
        const uint32_t per16 = per / 2u;
        for (uint32_t i = tid; i < sc.issued * per16; i += blockDim.x) {
            const uint32_t j = i / per16, x = i % per16;
            ((uint4 *)(pz + (uint64_t)sc.cslot[j] * KVQ_CERT_BLOCK * sh.dim))[x] =
                ((const uint4 *)(sc.buf + (uint64_t)j * per16 * 16u))[x];
        }
        const uint32_t tot = (nown - sc.issued) * per;
        for (uint32_t i0 = tid; i0 < tot; i0 += 8u * blockDim.x) {
            uint2 v[8];
#pragma unroll
            for (uint32_t k8 = 0; k8 < 8u; k8++) {
                const uint32_t i = i0 + k8 * blockDim.x, j = sc.issued + i / per;
                if (i < tot)
                    v[k8] = ((const uint2 *)(tv + kvq_cert_in_index(&sh, kvq_cert_block_first(sc.cidx[j]), 0)))[i % per];
            }
#pragma unroll
            for (uint32_t k8 = 0; k8 < 8u; k8++) {
                const uint32_t i = i0 + k8 * blockDim.x, j = sc.issued + i / per;
                if (i < tot)
                    ((uint2 *)(pz + (uint64_t)sc.cslot[j] * KVQ_CERT_BLOCK * sh.dim))[i % per] = v[k8];
            }
        }
    }
    TL_SEL(9);                                             /* list written, values staged */
    if (tid == 0) {
        head_info I;
        memset(&I, 0, sizeof I);
        I.rung = rung;
        I.k_sel = k;
        I.n_prom = nprom;
        I.checks = checks;
        I.nent = tent;
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
    TL_SEL_AT(10);
}
/* ---- combine, E_arith, record -------------------------------------------
 * Run by the last Phase-2 CTA of a query head to finish (the other CTAs'
 * entries are visible to it: each thread fenced its writes before the CTA
 * took its ticket); loads of Phase 2's results bypass L1. */
struct cb_smem {
    float alpha[1024];
    float prod[1024];                /* RN(l_e alpha_e) */
    float red[P2_THREADS / 32u][3];
    float lsum;
};

template <bool CERT>
__device__ void combine_head(const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                             uint32_t qh, cb_smem &C, float *d_out, kvq_cert_record *d_rec,
                             kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                             float eps_dense)
{
    float *alpha_s = C.alpha, *prod_s = C.prod;
    float (*red)[3] = C.red;
    float &lsum = C.lsum;
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nb = kvq_cert_blocks(&sh);
    const head_info I = ws.info[qh];
    const uint32_t nent = I.nent;
    const uint64_t p0 = (uint64_t)qh * nb;
    /* M = max_e m_e (= the greatest attended score), min score, max A_e; the
     * first 1024 m_e and l_e are kept for the rescaling */
    float M = -INFINITY, smin = INFINITY, amax = 0.0f;
    for (uint32_t e = tid; e < nent; e += blockDim.x) {
        const float pm = __ldcg(ws.pm + p0 + e);
        if (e < 1024u) {
            alpha_s[e] = pm;
            prod_s[e] = __ldcg(ws.pl + p0 + e);
        }
        M = fmaxf(M, pm);
        if (CERT) {
            smin = fminf(smin, __ldcg(ws.pmin + p0 + e));
            amax = fmaxf(amax, __ldcg(ws.pab + p0 + e));
        }
    }
    M = warp_max(M);
    for (int o = 16; o > 0; o >>= 1) {
        smin = fminf(smin, __shfl_xor_sync(0xffffffffu, smin, o));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    }
    if (lane == 0u) {
        red[warp][0] = M;
        red[warp][1] = smin;
        red[warp][2] = amax;
    }
    __syncthreads();
    for (uint32_t w = 0; w < P2_THREADS / 32u; w++) {
        M = fmaxf(M, red[w][0]);
        smin = fminf(smin, red[w][1]);
        amax = fmaxf(amax, red[w][2]);
    }
    /* alpha_e = expf(RN(m_e - M)): one rescaling a token (Nr = 1); l and acc
     * by recursive summation over the entries in list order (the products
     * RN(l_e alpha_e) formed in parallel, the sums in order); a thread keeps
     * its channels' sums in registers */
    float a[KVQ_CERT_MAX_DIM / P2_THREADS];
#pragma unroll
    for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) a[k] = 0.0f;
    for (uint32_t base = 0; base < nent; base += 1024u) {
        const uint32_t top = min(nent, base + 1024u);
        __syncthreads();
        for (uint32_t e = base + tid; e < top; e += blockDim.x) {
            /* base 0: this thread kept m_e and l_e above (same e, same thread) */
            const float pm = base == 0u ? alpha_s[e] : __ldcg(ws.pm + p0 + e);
            const float pl = base == 0u ? prod_s[e] : __ldcg(ws.pl + p0 + e);
            const float al = expf(__fsub_rn(pm, M));
            alpha_s[e - base] = al;
            prod_s[e - base] = __fmul_rn(pl, al);
        }
        __syncthreads();
        if (tid == 0) {
            float l = base == 0 ? 0.0f : lsum;
            for (uint32_t e = base; e < top; e++) l = __fadd_rn(l, prod_s[e - base]);
            lsum = l;
        }
#pragma unroll
        for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) {
            const uint32_t c = tid + k * P2_THREADS;
            if (c >= d) break;
            const float *pa = ws.pacc + p0 * d + c;
            float x = a[k];
            /* sixteen entries' loads in flight, then their sums in order */
            for (uint32_t e0 = base; e0 < top; e0 += 16u) {
                float v[16];
#pragma unroll
                for (uint32_t i = 0; i < 16u; i++)
                    v[i] = e0 + i < top ? __ldcg(pa + (uint64_t)(e0 + i) * d) : 0.0f;
#pragma unroll
                for (uint32_t i = 0; i < 16u; i++)
                    if (e0 + i < top) x = __fadd_rn(x, __fmul_rn(v[i], alpha_s[e0 + i - base]));
            }
            a[k] = x;
        }
    }
    __syncthreads();
    const float l = lsum;
#pragma unroll
    for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) {
        const uint32_t c = tid + k * P2_THREADS;
        if (c < d) d_out[(uint64_t)qh * d + c] = __fdiv_rn(a[k], l);
    }
    if (tid != 0) return;
    /* declaration [CERT-DEV-05]: a token's term meets its product, <= 15
     * additions inside its entry, one rescaling, <= nent - 1 additions of the
     * combine: D = ENT_TOK + nent + 1 (one spare), Nr = 1, U_exp = 2 */
    kvq_cert_decl dc;
    dc.u_exp = U_EXP_DECL;
    dc.acc_depth = ENT_TOK + nent + 1u;
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
        /* E_arith [CERT-AR-01], every operation upward; tanh(x) <= x,
         * lam <= LAM_UP, E_deq = 0 (pinned reconstructions); eps_s from
         * A = max over the attended entries of A_e, R_s from the attended
         * scores' extremes (the greatest is M) */
        const float eps = eps_scores(amax, h.scale, d);
        const float rs = __fadd_ru(__fsub_ru(M, smin), __fmul_ru(4.0f, eps));
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
            g0[0] = amax; g0[1] = M; g0[2] = smin; g0[3] = eps; g0[4] = rs; g0[5] = lam;
            g0[6] = g; g0[7] = g1; g0[8] = vh; g0[9] = (float)I.ntok; g0[10] = (float)nent;
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

/* ---- Phase 2 ---------------------------------------------------------------
 * One warp an entry of the head's list (a selected block, the residual block,
 * or at rung 3 every block), P2_CTAS CTAs of P2_WARPS warps a query head,
 * looping over the entries.  Scores as Phase 1 (lane L = 8 tj + cg: tokens
 * tj + 4 j, channels 128 m + 16 cg + 0..15; fmaf chains over the lane's
 * channels, three levels over the 8 lanes of a token, one rounding for the
 * scale: at most d + 1 roundings a term); keys are k^ of the codes, or the
 * binary16 originals (residual block, and tier 2 at rung 3).  The entry's
 * max m_e, weights w_t = expf(RN(s_t - m_e)), their sum l_e by a 4-level
 * tree, and acc_e[c] = sum_t RN(w_t v~_tc) in token order (no fmaf): a term
 * meets at most 16 roundings in its entry; the combine rescales each entry
 * once.  Values: lane L holds channels 4 L + 128 r; INT4 codes dequantized
 * in registers v^ = fmaf(code, s, zv) [CERT-V4-02], originals from tier 2
 * for promoted blocks and rung 3, from the device copy for the residual
 * block.  A_e, the bound of sum_c |q_c||k_c| for E_arith, is Phase 1's A_b,
 * except at rung 3, where it is summed upward here from the originals.
 * SPEC: [CERT-AR-01] [CERT-V4-02] [CERT-DEV-05] [CERT-DEV-06] */
template <bool CERT>
__global__ void __launch_bounds__(P2_THREADS)
cert_phase2_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, float *d_out,
                   kvq_cert_record *d_rec, kvq_cert_decl *d_decl, float *d_delta1,
                   uint32_t *d_status, float eps_dense)
{
    __shared__ cb_smem C;
    __shared__ uint32_t last;
    TL_P2(0);
    const uint32_t qh = blockIdx.y, kv = qh / h.group;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t cg = lane & 7u, tj = lane >> 3;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh), mc = (d + 127u) / 128u;
    const float *q = h.d_q + (uint64_t)qh * d;
    /* the query's first 128 channels (lane: 16 cg .. 16 cg + 15), read before
     * the wait: q is an input of the step, complete before Phase 1 began */
    float q0[16];
#pragma unroll
    for (uint32_t w = 0; w < 4u; w++) {
        const float4 x = 16u * cg < d ? *(const float4 *)(q + 16u * cg + 4u * w)
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        q0[4u * w] = x.x;
        q0[4u * w + 1u] = x.y;
        q0[4u * w + 2u] = x.z;
        q0[4u * w + 3u] = x.w;
    }
    cudaGridDependencySynchronize();                       /* the select kernel is done */
    TL_P2(1);
    const uint32_t *list = ws.list + (uint64_t)qh * nb;
    const uint32_t ei0 = blockIdx.x * P2_WARPS + warp;
    /* the warp's first list entry is read with the count (an entry past the
     * count is never used) */
    const uint32_t nent = ws.info[qh].nent;
    uint32_t e_nx = ei0 < nb ? list[ei0] : 0u;
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
    const uint32_t stride = gridDim.x * P2_WARPS;
    for (uint32_t ei = ei0; ei < nent; ei += stride) {
        const uint32_t e = e_nx, b = e & ENT_BLOCK;
        if (ei + stride < nent) e_nx = list[ei + stride];
        const bool res = (e & ENT_RES) != 0u, dense = (e & ENT_DENSE) != 0u;
        const bool orig_v = res || (e & (ENT_DENSE | ENT_PROM)) != 0u;
        const uint32_t ntok = res ? nres : KVQ_CERT_BLOCK;
        const uint32_t tok0 = kvq_cert_block_first(b);
        /* original values: token i at vo + i d (the residual's device copy,
         * the pool slot of a staged promoted block, else tier 2) */
        const uint16_t *vo = res ? vr : tv + kvq_cert_in_index(&sh, tok0, 0);
        if (!res && !dense && (e & ENT_PROM)) {
            const uint32_t st = ws.stag[(uint64_t)kv * nb + b];
            if (st >= 2u)
                vo = ws.stage + ((uint64_t)kv * h.group * ws.stage_cap + st - 2u) *
                                    KVQ_CERT_BLOCK * d;
        }
        /* scores */
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, aab[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint32_t m = 0; m < mc; m++) {
            const uint32_t c0 = 128u * m + 16u * cg;
            if (c0 >= d) break;
            float qv[16];
#pragma unroll
            for (uint32_t w = 0; w < 4u; w++) {
                const float4 x = m == 0u ? make_float4(q0[4u * w], q0[4u * w + 1u], q0[4u * w + 2u],
                                                       q0[4u * w + 3u])
                                         : *(const float4 *)(q + c0 + 4u * w);
                qv[4u * w] = x.x;
                qv[4u * w + 1u] = x.y;
                qv[4u * w + 2u] = x.z;
                qv[4u * w + 3u] = x.w;
            }
            if (!res && !dense) {
                uint4 cw[4];
                float4 s4[4], z4[4];
                const int8_t *kb = kc + kvq_cert_key_block_offset(&sh, b);
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++)
                    cw[j] = *(const uint4 *)(kb + kvq_cert_key_code_index(d, tj + 4u * j, c0));
                const float4 *sp = (const float4 *)(sg + kvq_cert_key_meta_index(&sh, b, c0));
                const float4 *zp = (const float4 *)(zz + kvq_cert_key_meta_index(&sh, b, c0));
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++) {
                    s4[w] = sp[w];
                    z4[w] = zp[w];
                }
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++)
#pragma unroll
                    for (uint32_t j = 0; j < 4u; j++) {
                        const uint32_t wx = u4_at(cw[j], w) ^ 0x80808080u;
#pragma unroll
                        for (uint32_t x = 0; x < 4u; x++) {
                            const float kk = __fmaf_rn(code_f32(wx, x), f4_at(s4[w], x),
                                                       f4_at(z4[w], x));   /* [CERT-K8-03] */
                            acc[j] = __fmaf_rn(qv[4u * w + x], kk, acc[j]);
                        }
                    }
            } else {
                uint2 hw[4][4];
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++) {
                    const uint32_t i = tj + 4u * j;
#pragma unroll
                    for (uint32_t w = 0; w < 4u; w++) {
                        const uint16_t *src = res ? kr + (uint64_t)i * d
                                                  : tk + kvq_cert_in_index(&sh, tok0 + i, 0);
                        hw[j][w] = i < ntok ? *(const uint2 *)(src + c0 + 4u * w)
                                            : make_uint2(0u, 0u);
                    }
                }
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++)
#pragma unroll
                    for (uint32_t w = 0; w < 4u; w++) {
                        float kk[4];
                        h4_f32(kk, hw[j][w]);
#pragma unroll
                        for (uint32_t x = 0; x < 4u; x++) {
                            acc[j] = __fmaf_rn(qv[4u * w + x], kk[x], acc[j]);
                            if (CERT && dense)
                                aab[j] = __fmaf_ru(fabsf(qv[4u * w + x]), fabsf(kk[x]), aab[j]);
                        }
                    }
            }
        }
        /* token sums over the 8 lanes: lane keeps token t = tj + 4 (cg >> 1) */
        rs_level<2u, 4u, false>(acc, lane);
        rs_level<1u, 2u, false>(acc, lane);
        if (CERT && dense) {
            rs_level<2u, 4u, true>(aab, lane);
            rs_level<1u, 2u, true>(aab, lane);
        }
        acc[0] = __fadd_rn(acc[0], __shfl_xor_sync(0xffffffffu, acc[0], 1));
        if (CERT && dense) aab[0] = __fadd_ru(aab[0], __shfl_xor_sync(0xffffffffu, aab[0], 1));
        const uint32_t t = tj + 4u * (cg >> 1);
        const bool valid = t < ntok;
        const float s = __fmul_rn(h.scale, acc[0]);
        float mx = valid ? s : -INFINITY, mn = valid ? s : INFINITY;
        float am = valid ? aab[0] : 0.0f;
#pragma unroll
        for (uint32_t o = 2u; o <= 16u; o <<= 1) {
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
            if (CERT && dense) am = fmaxf(am, __shfl_xor_sync(0xffffffffu, am, o));
        }
        const float w = valid ? expf(__fsub_rn(s, mx)) : 0.0f;
        float l = w;
#pragma unroll
        for (uint32_t o = 2u; o <= 16u; o <<= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, o));
        /* weights of the 16 tokens, in token order, to every lane: token i
         * is held by lane 8 (i % 4) + 2 (i / 4) */
        float wt[ENT_TOK];
#pragma unroll
        for (uint32_t i = 0; i < ENT_TOK; i++)
            wt[i] = __shfl_sync(0xffffffffu, w, 8u * (i % 4u) + 2u * (i / 4u));
        const uint64_t at = (uint64_t)qh * nb + ei;
        for (uint32_t c = 4u * lane; c < d; c += 128u) {
            float va[ENT_TOK][4];
            uint32_t el;
            const uint32_t j = kvq_cert_value_group_of(c, &el);
            const uint32_t first = kvq_code_byte(el, KVQ_CERT_VBITS);
            /* every token's loads are issued before any is used (one round
             * trip for the entry, not one a token); tokens past ntok are 0 */
            if (orig_v) {
                uint2 raw[ENT_TOK];
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++)
                    raw[i] = i < ntok ? *(const uint2 *)(vo + (uint64_t)i * d + c) : make_uint2(0u, 0u);
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++) h4_f32(va[i], raw[i]);
            } else {
                uint32_t word[ENT_TOK];
                float sc[ENT_TOK], zv[ENT_TOK];
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++) {
                    word[i] = 0u;
                    sc[i] = zv[i] = 0.0f;
                    if (i < ntok) {
                        const uint32_t tok = tok0 + i;
                        const uint64_t gi = kvq_cert_value_group(&sh, tok, j);
                        word[i] = *(const uint16_t *)(vc + kvq_cert_value_code_offset(&sh, tok, j) + first);
                        sc[i] = vs[gi];
                        zv[i] = vz[gi];
                    }
                }
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++)
#pragma unroll
                    for (uint32_t x = 0; x < 4u; x++) {
                        const uint32_t code = (word[i] >> kvq_code_word_shift(el + x, KVQ_CERT_VBITS, first)) &
                                              kvq_code_max(KVQ_CERT_VBITS);
                        va[i][x] = i < ntok ? __fmaf_rn((float)code, sc[i], zv[i]) : 0.0f;   /* [CERT-V4-02] */
                    }
            }
            float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (uint32_t i = 0; i < ENT_TOK; i++) {
                if (i >= ntok) continue;
                o.x = __fadd_rn(o.x, __fmul_rn(wt[i], va[i][0]));
                o.y = __fadd_rn(o.y, __fmul_rn(wt[i], va[i][1]));
                o.z = __fadd_rn(o.z, __fmul_rn(wt[i], va[i][2]));
                o.w = __fadd_rn(o.w, __fmul_rn(wt[i], va[i][3]));
            }
            *(float4 *)(ws.pacc + at * d + c) = o;
        }
        if (lane == 0u) {
            ws.pm[at] = mx;
            ws.pl[at] = l;
            if (CERT) {
                ws.pmin[at] = mn;
                ws.pab[at] = dense ? am : ws.ab[(uint64_t)qh * nb + b];
            }
        }
    }
    /* the head's last CTA to finish combines (and clears the ticket for the
     * next step) */
    TL_P2(2);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0u) {
        last = atomicAdd(ws.p2cnt + qh, 1u) == gridDim.x - 1u ? 1u : 0u;
        if (last) ws.p2cnt[qh] = 0u;
    }
    __syncthreads();
    TL_P2(3);
    if (last) {
        __threadfence();
        combine_head<CERT>(h, ws, qh, C, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense);
        TL_P2(4);
    }
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
        const struct {
            const void *k;
            int bytes;
        } dyn[] = {{(const void *)cert_phase1_kernel<true, 0u>, (int)P1_SMEM},
                   {(const void *)cert_phase1_kernel<false, 0u>, (int)P1_SMEM},
                   {(const void *)cert_phase1_kernel<true, 128u>, (int)P1_SMEM},
                   {(const void *)cert_phase1_kernel<false, 128u>, (int)P1_SMEM},
                   {(const void *)cert_select_kernel<true>, (int)SEL_DYN_SMEM},
                   {(const void *)cert_select_kernel<false>, (int)SEL_DYN_SMEM}};
        for (size_t i = 0; i < sizeof dyn / sizeof dyn[0] && e == cudaSuccess; i++)
            e = cudaFuncSetAttribute(dyn[i].k, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn[i].bytes);
    }
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
    WS_ALLOC(pm, H * nb);
    WS_ALLOC(pl, H * nb);
    WS_ALLOC(pmin, H * nb);
    WS_ALLOC(pab, H * nb);
    WS_ALLOC(pacc, H * nb * w->d);
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
                 w->p1cnt, w->p2cnt};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i]) cudaFree(p[i]);
    free(w);
}

/* Launches kernel k as a programmatic dependent of the stream's previous
 * kernel: its CTAs may become resident before that kernel ends, and wait for
 * it (memory included) in cudaGridDependencySynchronize at their start.  If
 * the stream refuses the attribute, an ordinary launch. */
template <typename... P, typename... A>
static cudaError_t launch_dep(void (*k)(P...), dim3 grid, dim3 block, size_t smem,
                              cudaStream_t stream, A... args)
{
    cudaLaunchConfig_t c;
    memset(&c, 0, sizeof c);
    c.gridDim = grid;
    c.blockDim = block;
    c.dynamicSmemBytes = smem;
    c.stream = stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    c.attrs = at;
    c.numAttrs = 1u;
    if (cudaLaunchKernelEx(&c, k, args...) == cudaSuccess) return cudaSuccess;
    (void)cudaGetLastError();
    k<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
}

/* The step's three kernels: Phase 1 waits for all earlier work of the
 * stream; the two others are programmatic dependents of the kernel before
 * them (each waits for it at its start). */
template <bool CERT>
static cudaError_t launch_step(dim3 g1, dim3 g2, uint32_t qh, cudaStream_t stream,
                               const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &w,
                               const kvq_cert_params &prm, float *d_out, kvq_cert_record *d_rec,
                               kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                               uint8_t *d_sel, uint8_t *d_prom)
{
    /* d = 128 (one chunk a block, the common head size): a build in which d
     * is a constant, so the copies' addresses fold to immediate offsets and
     * the unit loop to one chunk; the same arithmetic as the general build */
    if (h.shape.dim == 128u)
        cert_phase1_kernel<CERT, 128u><<<g1, P1_WARPS * 32u, P1_SMEM, stream>>>(h, w);
    else
        cert_phase1_kernel<CERT, 0u><<<g1, P1_WARPS * 32u, P1_SMEM, stream>>>(h, w);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = launch_dep(cert_select_kernel<CERT>, dim3(qh), dim3(SEL_THREADS), (size_t)SEL_DYN_SMEM,
                       stream, h, w, prm, d_sel, d_prom);
    if (e == cudaSuccess)
        e = launch_dep(cert_phase2_kernel<CERT>, g2, dim3(P2_THREADS), (size_t)0, stream, h, w, d_out, d_rec,
                       d_decl, d_delta1, d_status, prm.eps_dense);
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

    /* Phase 1: two CTAs an SM over all KV heads, at most one warp a full block */
    const uint32_t nq1 = kvq_cert_full_blocks(&h->shape);
    uint32_t x1 = (2u * ws->sms + h->kv_heads - 1u) / h->kv_heads;
    const uint32_t need = (nq1 + P1_WARPS - 1u) / P1_WARPS;
    if (x1 > need) x1 = need;
    if (x1 == 0u) x1 = 1u;
    const dim3 g1(x1, h->kv_heads);
    const dim3 g2(P2_CTAS, qh);
    const cudaError_t e =
        certify ? launch_step<true>(g1, g2, qh, stream, *h, w, *prm, d_out, d_rec, d_decl, d_delta1,
                                    d_status, d_sel, d_prom)
                : launch_step<false>(g1, g2, qh, stream, *h, w, *prm, d_out, d_rec, d_decl,
                                     d_delta1, d_status, d_sel, d_prom);
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
    const uint64_t n = (2u + P1CNT_STRIDE) * (uint64_t)ws->qheads;
    uint32_t *t = (uint32_t *)malloc(n * sizeof *t);
    if (t == NULL) return KVQ_E_NOMEM;
    kvq_status st = KVQ_E_DEVICE;
    if (cudaMemcpy(t, ws->hmax, ws->qheads * sizeof *t, cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(t + ws->qheads, ws->p2cnt, ws->qheads * sizeof *t, cudaMemcpyDeviceToHost) ==
            cudaSuccess &&
        cudaMemcpy(t + 2u * ws->qheads, ws->p1cnt, P1CNT_STRIDE * ws->qheads * sizeof *t,
                   cudaMemcpyDeviceToHost) ==
            cudaSuccess) {
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
