/*
 * decode_common.cuh -- what the translation units of the certified CERT
 * decode step on CUDA share (spec/cert.md, section "The device kernel",
 * [CERT-DEV-01..08]): constants, the timeline marks, the workspace and
 * per-head structs, the small device helpers, and the host functions by which
 * decode_step.cu launches each kernel.
 *
 * One step for many query heads at once (GQA: `group` query heads share one
 * KV head).  Three kernels, stream-ordered, no host synchronisation (the
 * second and third are programmatic dependents of the one before), one
 * translation unit each, with the host code that launches it:
 *
 *   cert_phase1_kernel   decode_phase1.cu: one warp a (KV head, block), four
 *                        query heads of the group at a time: scores of the
 *                        block's tokens from the INT8 codes (k^ formed once,
 *                        shared by the heads), the block log-mass L~_b,
 *                        Delta'_b [CERT-DLT-05], the bound A_b of
 *                        sum_c |q_c||k_c|, the block's share of the Phase-1
 *                        radius delta1 [CERT-DEV-02], and each head's
 *                        M = max_b L~_b
 *   cert_select_kernel   decode_select.cu: one CTA a query head: selection on
 *                        L~ with integer (fixed-point) masses [CERT-DEV-03],
 *                        promotion, the ranking, boundary and value checks
 *                        evaluated conservatively with delta1, the ladder,
 *                        E_key / E_val [CERT-DEV-04]; promoted blocks' values
 *                        staged from tier 2 once per KV head [CERT-DEV-01]
 *   cert_phase2_kernel   decode_phase2.cu (the sparse variant): one warp an
 *                        entry (a selected block) of a query head: scores, the
 *                        entry's softmax, INT4 dequantization in registers
 *                        v^ = fmaf(code, s, zv) [CERT-V4-02]; promoted blocks
 *                        read the staged binary16 originals (or tier 2, mapped
 *                        pinned host memory), the dense rung reads tier 2; the
 *                        head's last CTA to finish combines the entries: the
 *                        output, E_arith [CERT-AR-01] for the declaration of
 *                        [CERT-DEV-05], the record [CERT-REC-01]
 *   cert_phase2p_kernel  decode_phase2p.cu (the paper variant, [CERT-DEV-10]):
 *                        every block of a KV head: segments of 32 unselected
 *                        blocks with Phase 1's scores and INT4 values for the
 *                        group's heads at once, and the selected blocks and the
 *                        residual with their binary16 keys read from tier 2
 *                        once a KV head (the segments start before the
 *                        select kernel ends and those that hold a selected
 *                        block are recomputed after it: the early segment
 *                        pass); then cert_combine_p_kernel (same
 *                        unit), one CTA a head: the combine as above
 *
 * The variant is prm->variant [CERT-VAR-01]: Phase 1 and the select kernel
 * serve both (Phase 1 keeps its scores for the paper variant; the select
 * kernel's claims follow the variant), Phase 2 is one kernel or the other.
 *
 * The annotations eta, nu [CERT-ANN-01..02] are cert_annotate_kernel
 * (decode_annotate.cu); the workspace, the step and the host wrappers are
 * decode_step.cu.  No unit refers to another's kernels or device variables
 * (each is compiled whole, without relocatable device code): decode_step.cu
 * calls the kernels' units through the host functions declared at the end of
 * this file.
 *
 * Upward-rounded quantities use __fadd_ru/__fmul_ru/__fmaf_ru/__fdiv_ru (and
 * the double forms); everything else is one binary32 rounding to nearest per
 * operation (the build pins -fmad=false -ftz=false -prec-div=true).  expf and
 * logf are the CUDA library functions with the error bounds assumed in
 * [CERT-DEV-02].
 */
#ifndef KVQ_CERT_DECODE_COMMON_CUH
#define KVQ_CERT_DECODE_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda_pipeline.h>

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
#define SEL_GATHER  1024u            /* the fast selector's gather capacity (default, maximum) */
#define SEL_PRE_DEFAULT 4u           /* early claims a head by default: host reads in flight stall the
                                      * CTA's later memory operations, so a small early fetch is faster */

/* The paper variant's Phase 2 [CERT-DEV-10] */
#define P2P_WARPS   8u               /* warps a CTA */
#define P2P_THREADS (P2P_WARPS * 32u)
#define SEG_WB      4u               /* blocks a warp walks in a segment */
#define SEG_BLOCKS  (P2P_WARPS * SEG_WB)         /* full blocks a segment: 32 */
#define SEG_TOK     (SEG_BLOCKS * KVQ_CERT_BLOCK) /* tokens a segment: 512 */
#define P2P_SPC     16u              /* items a KV head besides its segments, for the grid's size */
#define P2P_TILE    1024u            /* the combine's entries a tile */
/* Roundings a term meets inside its entry: a segment's token meets one fmaf
 * a token of its warp's walk (<= 64) and the sum of the 8 warps' partials
 * (<= 8), plus one spare; a selected block's token its product and <= 15
 * additions (16 <= SEG_D).  The declaration adds one rescaling and the
 * combine's additions (<= nent + 16) [CERT-DEV-10]. */
#define SEG_D       (1u + SEG_WB * KVQ_CERT_BLOCK + P2P_WARPS)
#define P2P_D(nent) (SEG_D + 1u + (nent) + 16u)

/* ---- timeline (diagnostics build only) -------------------------------------
 * Built with -DKVQ_CERT_TIMELINE (make gpu-cert-timeline,
 * gpu/cert/cert_timeline.py), the kernels stamp %globaltimer (ns) at their
 * stage boundaries: Phase 1's first start and last end, each select CTA's
 * stages (after a CTA barrier), each Phase-2 CTA's; kvq_cuda_cert_timeline
 * copies the stamps out and clears them.  Without it the marks are empty and
 * the kernels unchanged. */
#ifdef KVQ_CERT_TIMELINE
#define TL_HEADS  64u
#define TL_SEL_N  11u
#define TL_P2CTAS 512u
#define TL_P2_N   5u
/* the stamps: tl_p1 is decode_phase1.cu's, tl_sel decode_select.cu's, tl_p2
 * decode_phase2.cu's (each unit defines the one its kernel writes, before
 * the marks below are used) */
static __device__ __forceinline__ unsigned long long tl_now()
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
     * counters p1cnt; p2cnt[qh]: the Phase-2 tickets, cleared by the last
     * (the sparse variant; the paper variant's Phase 2 counts its segments
     * in p2task, cleared by its last CTA).
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
    /* the paper variant [CERT-DEV-10]; pm .. pacc then hold ent entries a
     * head (nb blocks, then the segments) */
    uint32_t paper;                  /* this step runs the paper variant */
    uint32_t ent;                    /* entries a head in pm, pl, pmin, pab, pacc */
    uint32_t nseg;                   /* segments of SEG_BLOCKS full blocks a KV head */
    float *sc;                       /* [qh][16 nq] Phase 1's scores s~ (written when paper) */
    uint32_t *selm, *promm;          /* [qheads][nb] (indexed by KV head): bit g set when query
                                        head g of the group selects / reads the original values
                                        of block b (cleared by Phase 1) */
    uint32_t *kvlist;                /* [qheads][nb] (indexed by KV head): the blocks some head
                                        of the group selects, kvn[kv] of them (any order) */
    uint32_t *kvn;                   /* [qheads] (indexed by KV head; cleared by Phase 1) */
    uint32_t *p2task;                /* [P2T_WORDS] the paper variant's Phase-2 counters
                                        (P2T_*; cleared by its last CTA) */
    /* the early segment pass [CERT-DEV-10]: with `overlap`, Phase 2's CTAs take
     * every segment with all its tokens while the select kernel runs (entry
     * nb + s), and after it only the segments in which a head of the pass
     * selects a block (entry nb + nseg + s); without it they wait for the
     * select kernel and take every segment once with the masks (entry nb + s) */
    uint32_t overlap;                /* 1 (default): the early segment pass */
    uint32_t *segm;                  /* [qheads][nseg] (indexed by KV head): bit g set when
                                        query head g selects a block of segment s (cleared by
                                        Phase 1) */
    uint32_t *post;                  /* [qheads][nb + nseg]: the work that waits for the
                                        selection, appended by the select kernel (P2Q_*) */
};

/* the paper variant's Phase-2 counters (ws.p2task) */
#define P2T_EARLY   0u               /* segment tasks drawn */
#define P2T_DONE    1u               /* Phase-2 CTAs done */
#define P2T_POST    2u               /* post-selection tasks drawn */
#define P2T_SELDONE 3u               /* select CTAs finished (their writes fenced) */
#define P2T_NPOST   4u               /* listed blocks in ws.post (from its start) */
#define P2T_NREC    5u               /* segments to recompute in ws.post (from its end) */
#define P2T_WORDS   6u
/* an entry of ws.post: kv * nb + b, a listed block b of KV head kv (entries
 * 0, 1, ...); or P2Q_REC | ((kv * nseg + s) * npass + p): segment s of KV
 * head kv to be recomputed for the pass of heads 4p .. 4p + 3 (entries
 * cap - 1, cap - 2, ..., cap = P2Q_CAP(ws)) */
#define P2Q_REC     0x80000000u
#define P2Q_CAP(w)  ((uint64_t)(w).qheads * ((w).nb + (w).nseg))

/* ---- small device helpers ------------------------------------------------ */

static __device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* Order-preserving map of a finite float onto uint32. */
static __device__ __forceinline__ uint32_t ord_key(float x)
{
    uint32_t u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The float whose ord_key is k. */
static __device__ __forceinline__ float ord_val(uint32_t k)
{
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* gamma_{d+1} = (d+1) 2^-24 / (1 - (d+1) 2^-24), upward [CERT-AR-01]. */
static __device__ __forceinline__ float gamma_up(uint32_t m)
{
    const float a = __fmul_ru((float)m, 0x1p-24f);
    return __fdiv_ru(a, __fsub_rd(1.0f, a));
}

/* eps_s for a bound S of max_i sum_c |q_c||k_ic| [CERT-AR-01]:
 * gamma_{d+1} scale S + (scale d + 1) 2^-149, upward. */
static __device__ __forceinline__ float eps_scores(float sabs, float scale, uint32_t d)
{
    const float a = __fmul_ru(__fmul_ru(gamma_up(d + 1u), scale), sabs);
    const float b = __fmul_ru(__fadd_ru(__fmul_ru(scale, (float)d), 1.0f), 0x1p-149f);
    return __fadd_ru(a, b);
}

/* The exact binary32 value of the INT8 code in byte e of a code word whose
 * bytes were XORed with 0x80 (so byte e holds code + 128): 2^23 + (code + 128)
 * assembled in a significand, minus 2^23 + 128 -- both steps exact. */
static __device__ __forceinline__ float code_f32(uint32_t wx, uint32_t e)
{
    return __fsub_rn(__uint_as_float(__byte_perm(wx, 0x4B000000u, 0x7540u | e)), 8388736.0f);
}

static __device__ __forceinline__ float f4_at(const float4 &v, uint32_t e)
{
    return e == 0u ? v.x : (e == 1u ? v.y : (e == 2u ? v.z : v.w));
}

static __device__ __forceinline__ uint32_t u4_at(const uint4 &v, uint32_t e)
{
    return e == 0u ? v.x : (e == 1u ? v.y : (e == 2u ? v.z : v.w));
}

/* Four binary16 encodings (a uint2) as binary32 values (exact). */
static __device__ __forceinline__ void h4_f32(float *out, uint2 raw)
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
static __device__ __forceinline__ void rs_level(float *v, uint32_t lane)
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
static __device__ __forceinline__ void rs16(float *v, uint32_t lane)
{
    rs_level<8u, 4u, UP>(v, lane);
    rs_level<4u, 2u, UP>(v, lane);
    rs_level<2u, 1u, UP>(v, lane);
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

/* ---- the kernels' host sides ----------------------------------------------
 * Each launch stays in the unit of its kernel (so no unit needs another's
 * kernel symbols); decode_step.cu calls them.  Hidden: not part of any
 * library's interface. */
#define KVQ_CERT_INTERNAL __attribute__((visibility("hidden")))

/* decode_phase1.cu: the dynamic shared memory of Phase 1's four builds; one
 * step's Phase 1 (grid g1; d = 128 takes the build in which d is a constant),
 * then cudaGetLastError(). */
KVQ_CERT_INTERNAL cudaError_t cert_phase1_attrs(void);
KVQ_CERT_INTERNAL cudaError_t cert_phase1_launch(bool cert, dim3 g1, cudaStream_t stream,
                                                 const kvq_cuda_cert_heads &h,
                                                 const kvq_cuda_cert_ws &w);

/* decode_select.cu: the select kernel's dynamic shared memory; one step's
 * selection (qh CTAs), a programmatic dependent of Phase 1. */
KVQ_CERT_INTERNAL cudaError_t cert_select_attrs(void);
KVQ_CERT_INTERNAL cudaError_t cert_select_launch(bool cert, uint32_t qh, cudaStream_t stream,
                                                 const kvq_cuda_cert_heads &h,
                                                 const kvq_cuda_cert_ws &w,
                                                 const kvq_cert_params &prm, uint8_t *d_sel,
                                                 uint8_t *d_prom);

/* decode_phase2.cu: one step's Phase 2 and combine (grid g2), a programmatic
 * dependent of the select kernel. */
KVQ_CERT_INTERNAL cudaError_t cert_phase2_launch(bool cert, dim3 g2, cudaStream_t stream,
                                                 const kvq_cuda_cert_heads &h,
                                                 const kvq_cuda_cert_ws &w, float *d_out,
                                                 kvq_cert_record *d_rec, kvq_cert_decl *d_decl,
                                                 float *d_delta1, uint32_t *d_status,
                                                 float eps_dense);

/* decode_phase2p.cu: the paper variant's Phase 2 kernels' dynamic shared
 * memory limit; its dynamic shared memory for head size d; one step's Phase 2
 * (its grid from the device's occupancy, P2P_THREADS a CTA), a programmatic
 * dependent of the select kernel. */
KVQ_CERT_INTERNAL cudaError_t cert_phase2p_attrs(void);
KVQ_CERT_INTERNAL size_t cert_phase2p_smem(uint32_t d);
KVQ_CERT_INTERNAL cudaError_t cert_phase2p_launch(bool cert, cudaStream_t stream,
                                                  const kvq_cuda_cert_heads &h,
                                                  const kvq_cuda_cert_ws &w, float *d_out,
                                                  kvq_cert_record *d_rec, kvq_cert_decl *d_decl,
                                                  float *d_delta1, uint32_t *d_status,
                                                  float eps_dense);

#ifdef KVQ_CERT_TIMELINE
/* Each kernel unit's stamps: copied to `out` (when not NULL), then set from
 * `in` (when not NULL); kvq_cuda_cert_timeline (decode_step.cu) calls them. */
KVQ_CERT_INTERNAL cudaError_t cert_phase1_tl(unsigned long long *out, const unsigned long long *in);
KVQ_CERT_INTERNAL cudaError_t cert_select_tl(unsigned long long *out, const unsigned long long *in);
KVQ_CERT_INTERNAL cudaError_t cert_phase2_tl(unsigned long long *out, const unsigned long long *in);
#endif

/* The record, declaration, radius and status of query head qh once a
 * combine has M (the greatest attended score), smin (the least) and amax (the
 * greatest A_e) [CERT-DEV-05] [CERT-DEV-10]: U_exp = 2, Nr = 1, D = acc_depth;
 * E_arith [CERT-AR-01] with every operation upward, tanh(x) <= x, lam <=
 * LAM_UP, E_deq = 0 (pinned reconstructions), eps_s from A = amax, R_s from
 * the attended scores' extremes; rung 4 when the dense pass's E_arith exceeds
 * eps_dense [CERT-LAD-02].  Thread 0 of the combine calls it. */
template <bool CERT>
static __device__ __forceinline__ void finish_head(
    const head_info &I, const kvq_cert_shape &sh, const kvq_cuda_cert_ws &ws, uint32_t qh,
    float scale, float M, float smin, float amax, uint32_t acc_depth, uint32_t nent,
    float eps_dense, kvq_cert_record *d_rec, kvq_cert_decl *d_decl, float *d_delta1,
    uint32_t *d_status)
{
    const uint32_t d = sh.dim;
    kvq_cert_decl dc;
    dc.u_exp = U_EXP_DECL;
    dc.acc_depth = acc_depth;
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
        const float eps = eps_scores(amax, scale, d);
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

/* One 16-token entry's softmax pieces in a warp [CERT-DEV-05] [CERT-DEV-10]:
 * every lane holds the score s of its token (valid) or none; mx and mn the
 * entry's greatest and least score, am (when reduce_am) the greatest A of
 * the lanes, w = expf(RN(s - mx)), l their sum by a four-level tree, and
 * wt[i] the weight of token i (held by lane 8 (i % 4) + 2 (i / 4)) on every
 * lane. */
static __device__ __forceinline__ void entry_weights(bool valid, float s, float a, bool reduce_am,
                                                     float &mx, float &mn, float &am, float &l,
                                                     float (&wt)[ENT_TOK])
{
    mx = valid ? s : -INFINITY, mn = valid ? s : INFINITY;
    am = valid ? a : 0.0f;
#pragma unroll
    for (uint32_t o = 2u; o <= 16u; o <<= 1) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
        if (reduce_am) am = fmaxf(am, __shfl_xor_sync(0xffffffffu, am, o));
    }
    const float w = valid ? expf(__fsub_rn(s, mx)) : 0.0f;
    l = w;
#pragma unroll
    for (uint32_t o = 2u; o <= 16u; o <<= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, o));
#pragma unroll
    for (uint32_t i = 0; i < ENT_TOK; i++)
        wt[i] = __shfl_sync(0xffffffffu, w, 8u * (i % 4u) + 2u * (i / 4u));
}

#endif /* KVQ_CERT_DECODE_COMMON_CUH */
