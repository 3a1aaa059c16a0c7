/*
 * sage_attn.cu -- the SageAttention2 attention core on sm_90a and the whole
 * pipeline around it (spec/sage.md, "Attention" [SAGE-ATT-01..09]).
 *
 * The core, one CTA = one warpgroup (4 warps, 128 threads) = 64 query rows of
 * one head; warp w owns rows 16 w .. 16 w + 15, lane (g = lane / 4, t = lane % 4)
 * rows 16 w + g and 16 w + g + 8.  The CTA walks the key blocks of 64 keys
 * (KVQ_SAGE_ATTN_BKV) a row of it can see, in key order:
 *
 *   loads    cp.async, double-buffered: block kb + 1's K codes (rows padded to
 *            144 bytes: the mma B fragments read them without bank conflicts),
 *            V codes, dS slice and K scales land while block kb is computed;
 *            keys past nk are zero-filled (V code 0x00, never a NaN code)
 *   QK       mma.sync m16n8k32 .s32.s8.s8.s32: the exact int32 dot of the INT8
 *            codes (INT4 codes are widened to INT8 first, which keeps the dot)
 *            [SAGE-ATT-03]; Q fragments stay in registers for the whole CTA
 *   score    s = fma((float)dot, RN32(qsc_i sk_j), ds[r][j]), qsc_i = RN32(sq_i
 *            tau2); invisible keys take no part
 *   softmax  m_new = max(m_old, max_j s), alpha = ex2.approx.ftz(m_old - m_new),
 *            p = ex2.approx.ftz(s - m_new), l = RN32(RN32(l alpha) + block sum)
 *            (the block sum: each lane's 16 terms in key order, then a
 *            butterfly over the row's 4 lanes, which every lane computes alike);
 *            a row that sees no key of the block keeps m, l and its registers
 *   P~       FP8 E4M3 of RN32(p 448) by cvt.rn.satfinite.e4m3x2.f32
 *            [SAGE-DEV-06], written to shared memory in the no-swizzle K-major
 *            core-matrix layout (8 rows x 16 bytes, LBO 128, SBO 256; the layout
 *            of gpu/sage/mma_probe.cu)
 *   V~       the block's V codes transposed in shared memory to the same
 *            layout, channels as rows (each channel's 32 keys contiguous)
 *   PV       acc, buf *= alpha (RN); wgmma.mma_async m64n128k32 .f32.e4m3.e4m3
 *            twice (keys 0-31, then 32-63), both operands from shared memory,
 *            acc in 64 registers a thread; then the FP32 buffer flush
 *            buf = RN32(buf + acc), acc = 0 after every `buffer` keys and after
 *            the row's last block, per row (buffer 0: no buffer, the result is
 *            acc; a row's zero P~ in the blocks past its last leave its acc as
 *            it is, a wgmma output being a fixed point of the model).  V~ and
 *            P~ are double-buffered: block kb's two wgmma run while block
 *            kb + 1's QK, transposition and softmax are computed; they are
 *            waited for (then flushed) right before block kb + 1's rescale,
 *            so every row sees the operations in the order above
 *   output   o = RN32(RN32(buf vsc_c) / l), vsc_c = RN32(vs_c / 448); a row
 *            that sees no key writes +0
 *
 * The trace (a template flag, compiled out when off) dumps one CTA's QK dots,
 * and each PV instruction's accumulator before and after it and its P~ codes
 * (gpu/kvq_cuda.h kvq_cuda_sage_attn_trace).
 *
 * The pipeline (kvq_cuda_sage_attn) [SAGE-DEV-09]: K smoothed per head, Q per
 * 128 tokens, dS with tau2, the Q, K and V quantizers (default policy), then
 * the core, gated on the stages' combined status.  Every stage is the batched
 * launcher of gpu/sage/sage.cu or sage_ds.cu (sage_common.cuh): one launch a
 * kernel for all heads, whatever the shapes, on the caller's stream only --
 * no host wait, no allocation, no host thread -- so the call can be captured
 * in a CUDA graph.  Each stage has its own call state in the workspace; a
 * one-thread gate kernel before a stage marks it failed when an earlier one
 * failed (its writing kernels then return at once), and a last kernel puts
 * the status of the first failing stage (smoothing K, smoothing Q, dS, then
 * the quantizers Q, K, V) into the result word and the core's gate.
 *
 * SPEC: [SAGE-ATT-01..09] [SAGE-DEV-06] [SAGE-DEV-09] [SAGE-DEV-16]
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_sage_attn.h"
#include "kvq_cuda.h"
#include "sage/sage_common.cuh"
#include "sage/sage_instr.cuh"
#include "sage/sage_fa3.h"

#include <stdlib.h>

#define ATT_BQ   64u                     /* query rows a CTA */
#define ATT_BKV  KVQ_SAGE_ATTN_BKV       /* keys a block */
#define ATT_D    128u
#define ATT_KROW 144u                    /* padded K row in shared memory (bytes) */

/* Shared memory (bytes): two load stages, then the transposed V, P~, and (INT4)
 * the widened K codes. */
#define SM_K      0u                     /* 64 x 144 (INT4: 64 x 64 packed) */
#define SM_V      9216u                  /* 64 x 128 */
#define SM_DS     17408u                 /* 64 floats */
#define SM_SK     17664u                 /* 64 floats */
#define SM_STAGE  17920u
#define SM_VT     (2u * SM_STAGE)        /* 2 buffers x 2 k32 tiles x 4096 */
#define SM_P      (SM_VT + 16384u)       /* 2 buffers x 2 k32 tiles x 2048 */
#define SM_KX     (SM_P + 8192u)         /* 64 x 144, INT4 only */
#define SM_BYTES8 SM_KX
#define SM_BYTES4 (SM_KX + 9216u)

typedef struct attn_args {
    kvq_sage_attn a;
    float tau2;
    uint32_t head0;                       /* first head of this launch */
    uint32_t group;                       /* query heads a KV head: head h reads KV head h / group [SAGE-DEV-17] */
    uint32_t kv_heads;                    /* heads / group */
    float *o;
    const uint8_t *qc, *kc, *vc;
    const float *qs, *ks, *ds, *vs;
    uint64_t qc_head, kc_head, qs_head, ks_head, ds_head;  /* per-head sizes (elements) */
    const kvq_cuda_result *gate;         /* NULL, or skip when its status is not KVQ_OK */
    kvq_cuda_sage_attn_trace tr;         /* used under TRACE */
} attn_args;

/* ---- instructions (cp.async: gpu/sage/sage_common.cuh) ----------------------- */

__device__ __forceinline__ void mma_s8(int32_t *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

/* d += A B: A 64 x 32 E4M3 (desc da), B 128 x 32 E4M3 K-major (desc db). */
__device__ __forceinline__ void wgmma_e4m3_n128(float *d, uint64_t da, uint64_t db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
        "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, "
        "%39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, "
        "%58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
          "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
          "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
          "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
          "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db)
        : "memory");
}

/* ---- the core kernel --------------------------------------------------------- */

/* Enqueue the cp.async loads of key block kb into stage `st`. */
template <uint32_t BITS>
__device__ __forceinline__ void load_block(uint8_t *sm, const attn_args &p, const kvq_sage_qk &kq,
                                           const uint8_t *kc, const uint8_t *vc, const float *dsrow,
                                           const float *ks, uint32_t kb, uint32_t st)
{
    const uint32_t tid = threadIdx.x, nk = p.a.nk, k0 = kb * ATT_BKV;
    uint8_t *base = sm + st * SM_STAGE;
    constexpr uint32_t KB = ATT_D * BITS / 8u;        /* code bytes a key */
    constexpr uint32_t KCH = KB / 16u;                 /* 16-byte chunks a key */
    constexpr uint32_t KST = BITS == 8u ? ATT_KROW : KB;
#pragma unroll
    for (uint32_t e = tid; e < ATT_BKV * KCH; e += 128u) {
        const uint32_t key = e / KCH, ch = e % KCH, j = k0 + key;
        const bool ok = j < nk;
        cp_async16(base + SM_K + key * KST + ch * 16u, kc + (uint64_t)(ok ? j : 0u) * KB + ch * 16u, ok);
    }
#pragma unroll
    for (uint32_t e = tid; e < ATT_BKV * 8u; e += 128u) {
        const uint32_t key = e / 8u, ch = e % 8u, j = k0 + key;
        const bool ok = j < nk;
        cp_async16(base + SM_V + key * ATT_D + ch * 16u, vc + (uint64_t)(ok ? j : 0u) * ATT_D + ch * 16u, ok);
    }
    if (tid < ATT_BKV) {
        const uint32_t j = k0 + tid;
        const bool ok = j < nk;
        cp_async4(base + SM_DS + tid * 4u, dsrow + (ok ? j : 0u), ok);
        cp_async4(base + SM_SK + tid * 4u, ks + (ok ? kvq_sage_scale_slot(&kq, j) : 0u), ok);
    }
}

template <uint32_t BITS, bool TRACE>
__global__ void __launch_bounds__(128) sage_attn_kernel(const attn_args p)
{
    extern __shared__ __align__(1024) uint8_t sm[];
    if (p.gate != NULL && *(volatile const uint32_t *)&p.gate->status != (uint32_t)KVQ_OK) return;
    const kvq_sage_attn a = p.a;
    const uint32_t tid = threadIdx.x, w = tid / 32u, lane = tid % 32u, g = lane / 4u, t = lane % 4u;
    const uint32_t head = p.head0 + blockIdx.y, q0 = blockIdx.x * ATT_BQ;
    const uint32_t nq = a.nq, nk = a.nk, F = a.buffer;
    const kvq_sage_qk qq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_K);
    const bool traced = TRACE && head == p.tr.head && blockIdx.x == p.tr.qblock;

    const uint8_t *qc = p.qc + (uint64_t)head * p.qc_head;
#ifdef KVQ_SAGE_GQA_PLANT
    const uint32_t kvh = head % p.kv_heads;                     /* planted: the heads interleaved */
#else
    const uint32_t kvh = head / p.group;                        /* its KV head [SAGE-DEV-17] */
#endif
    const uint8_t *kc = p.kc + (uint64_t)kvh * p.kc_head;
    const uint8_t *vc = p.vc + (uint64_t)kvh * nk * ATT_D;
    const float *qs = p.qs + (uint64_t)head * p.qs_head;
    const float *ks = p.ks + (uint64_t)kvh * p.ks_head;
    const float *dsrow = p.ds + (uint64_t)head * p.ds_head + (uint64_t)(q0 / KVQ_SAGE_ATTN_BQ) * nk;
    const float *vs = p.vs + (uint64_t)kvh * ATT_D;
    float *o = p.o + (uint64_t)head * nq * ATT_D;

    /* the lane's two rows and the keys they see (a prefix) */
    const uint32_t rA = q0 + 16u * w + g, rB = rA + 8u;
    const uint32_t nvA = rA < nq ? kvq_sage_attn_nvisible(&a, rA) : 0u;
    const uint32_t nvB = rB < nq ? kvq_sage_attn_nvisible(&a, rB) : 0u;
    const uint32_t last = q0 + ATT_BQ - 1u < nq ? q0 + ATT_BQ - 1u : nq - 1u;
    const uint32_t nb = (kvq_sage_attn_nvisible(&a, last) + ATT_BKV - 1u) / ATT_BKV;
    /* the buffer flush after block bk, per row [SAGE-ACC-05]: when 64 (bk + 1) is a
     * multiple of F and after the row's own last block; never past it (the row's
     * acc is then +0 and stays +0 through the zero P~ of the blocks it cannot see) */
    const uint32_t endA = (nvA + ATT_BKV - 1u) / ATT_BKV, endB = (nvB + ATT_BKV - 1u) / ATT_BKV;
    auto flush = [&](float *acc_, float *buf_, uint32_t bk) {
        const bool fA = F != 0u && bk < endA && (F == 64u || (bk & 1u) || bk + 1u == endA);
        const bool fB = F != 0u && bk < endB && (F == 64u || (bk & 1u) || bk + 1u == endB);
#pragma unroll
        for (uint32_t x = 0; x < 64u; x++)
            if ((x % 4u) >= 2u ? fB : fA) buf_[x] = __fadd_rn(buf_[x], acc_[x]), acc_[x] = 0.0f;
    };
    if (traced && tid == 0) *p.tr.d_nblocks = nb;

    if (nb > 0u) load_block<BITS>(sm, p, kq, kc, vc, dsrow, ks, 0u, 0u);
    cp_commit();

    /* Q fragments (A of m16n8k32: bytes 4t .. 4t+3 and 16+4t .. of rows g, g+8
     * of each k32 step) and the rows' scales */
    uint32_t qa[4][4];
#pragma unroll
    for (uint32_t s = 0; s < 4u; s++)
#pragma unroll
        for (uint32_t r = 0; r < 4u; r++) {
            const uint32_t row = (r % 2u) ? rB : rA, c0 = 32u * s + 16u * (r / 2u) + 4u * t;
            uint32_t v = 0;
            if (row < nq)
#pragma unroll
                for (uint32_t b = 0; b < 4u; b++)
                    v |= ((uint32_t)kvq_sage_unpack_code(qc, (uint64_t)row * ATT_D + c0 + b, BITS) & 0xFFu)
                         << (8u * b);
            qa[s][r] = v;
        }
    const float qscA = rA < nq ? __fmul_rn(__ldg(qs + kvq_sage_scale_slot(&qq, rA)), p.tau2) : 0.0f;
    const float qscB = rB < nq ? __fmul_rn(__ldg(qs + kvq_sage_scale_slot(&qq, rB)), p.tau2) : 0.0f;

    float acc[64], buf[64];
#pragma unroll
    for (uint32_t x = 0; x < 64u; x++) acc[x] = 0.0f, buf[x] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    for (uint32_t kb = 0; kb < nb; kb++) {
        const uint32_t st = kb & 1u;
        /* V~ and P~ of block kb: buffer st (block kb - 1's wgmma may still read the other) */
        uint8_t *vt = sm + SM_VT + st * 8192u, *ps = sm + SM_P + st * 4096u;
        if (kb + 1u < nb) load_block<BITS>(sm, p, kq, kc, vc, dsrow, ks, kb + 1u, st ^ 1u);
        cp_commit();
        cp_wait<1>();                                         /* block kb has landed */
        __syncthreads();
        const uint8_t *stage = sm + st * SM_STAGE;
        const uint8_t *kx = stage + SM_K;
        if (BITS == 4u) {                                     /* widen INT4 codes to INT8 */
            uint8_t *kw = sm + SM_KX;
            for (uint32_t e = tid; e < ATT_BKV * ATT_D; e += 128u) {
                const uint32_t key = e / ATT_D, c = e % ATT_D;
                kw[key * ATT_KROW + c] = (uint8_t)kvq_sage_unpack_code(stage + SM_K + key * (ATT_D / 2u), c, 4u);
            }
            __syncthreads();
            kx = kw;
        }

        /* QK: 16 rows x 64 keys a warp, exact int32 [SAGE-ATT-03] */
        int32_t sc[8][4];
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0;
#pragma unroll
        for (uint32_t s = 0; s < 4u; s++)
#pragma unroll
            for (uint32_t n = 0; n < 8u; n++) {
                const uint8_t *kr = kx + (8u * n + g) * ATT_KROW + 32u * s + 4u * t;
                mma_s8(sc[n], qa[s], *(const uint32_t *)kr, *(const uint32_t *)(kr + 16u));
            }
        if (traced) {
            int32_t *dd = p.tr.d_dots + (uint64_t)kb * ATT_BQ * ATT_BKV;
#pragma unroll
            for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
                for (uint32_t i = 0; i < 4u; i++)
                    dd[(16u * w + g + 8u * (i / 2u)) * ATT_BKV + 8u * n + 2u * t + i % 2u] = sc[n][i];
        }

        /* V~: [key][channel] -> k32 tiles of channel rows, 4 keys x 4 channels a step */
#pragma unroll
        for (uint32_t it = 0; it < 4u; it++) {
            const uint32_t k0 = 4u * (tid / 32u + 4u * it), c0 = 4u * (tid % 32u);
            const uint8_t *vr = stage + SM_V + k0 * ATT_D + c0;
            const uint32_t w0 = *(const uint32_t *)vr, w1 = *(const uint32_t *)(vr + ATT_D);
            const uint32_t w2 = *(const uint32_t *)(vr + 2u * ATT_D), w3 = *(const uint32_t *)(vr + 3u * ATT_D);
            const uint32_t t0 = __byte_perm(w0, w1, 0x5140u), t1 = __byte_perm(w2, w3, 0x5140u);
            const uint32_t t2 = __byte_perm(w0, w1, 0x7362u), t3 = __byte_perm(w2, w3, 0x7362u);
            uint8_t *tile = vt + (k0 / 32u) * 4096u;
            const uint32_t kl = k0 % 32u;
            *(uint32_t *)(tile + wg_off(c0, kl)) = __byte_perm(t0, t1, 0x5410u);
            *(uint32_t *)(tile + wg_off(c0 + 1u, kl)) = __byte_perm(t0, t1, 0x7632u);
            *(uint32_t *)(tile + wg_off(c0 + 2u, kl)) = __byte_perm(t2, t3, 0x5410u);
            *(uint32_t *)(tile + wg_off(c0 + 3u, kl)) = __byte_perm(t2, t3, 0x7632u);
        }

        /* scores and the block maxima of the lane's rows */
        const float *sds = (const float *)(stage + SM_DS), *ssk = (const float *)(stage + SM_SK);
        const uint32_t kbase = kb * ATT_BKV;
        float s[8][4];
        float xA = -INFINITY, xB = -INFINITY;
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) {
                const uint32_t kk = 8u * n + 2u * t + i % 2u;
                const bool hi = i >= 2u;
                const bool vis = kbase + kk < (hi ? nvB : nvA);
                const float v = __fmaf_rn(__int2float_rn(sc[n][i]), __fmul_rn(hi ? qscB : qscA, ssk[kk]), sds[kk]);
                s[n][i] = v;
                if (vis) {
                    if (hi) xB = fmaxf(xB, v);
                    else xA = fmaxf(xA, v);
                }
            }
        xA = fmaxf(xA, __shfl_xor_sync(0xFFFFFFFFu, xA, 1));
        xA = fmaxf(xA, __shfl_xor_sync(0xFFFFFFFFu, xA, 2));
        xB = fmaxf(xB, __shfl_xor_sync(0xFFFFFFFFu, xB, 1));
        xB = fmaxf(xB, __shfl_xor_sync(0xFFFFFFFFu, xB, 2));
        const bool seeA = kbase < nvA, seeB = kbase < nvB;    /* the row sees a key of the block */
        const float nmA = seeA ? fmaxf(mA, xA) : mA, nmB = seeB ? fmaxf(mB, xB) : mB;
        const float alA = seeA ? ex2_approx(mA - nmA) : 1.0f, alB = seeB ? ex2_approx(mB - nmB) : 1.0f;
        mA = nmA, mB = nmB;

        /* P and its FP8 codes */
        float sumA = 0.0f, sumB = 0.0f;
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++) {
            float pv[4];
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) {
                const uint32_t kk = 8u * n + 2u * t + i % 2u;
                const bool hi = i >= 2u;
                const bool vis = kbase + kk < (hi ? nvB : nvA);
                pv[i] = vis ? ex2_approx(s[n][i] - (hi ? mB : mA)) : 0.0f;
                if (hi) sumB = __fadd_rn(sumB, pv[i]);
                else sumA = __fadd_rn(sumA, pv[i]);
            }
            const uint32_t kk = 8u * n + 2u * t;
            uint8_t *tile = ps + (kk / 32u) * 2048u;
            *(uint16_t *)(tile + wg_off(16u * w + g, kk % 32u)) =
                (uint16_t)e4m3x2(__fmul_rn(pv[0], 448.0f), __fmul_rn(pv[1], 448.0f));
            *(uint16_t *)(tile + wg_off(16u * w + g + 8u, kk % 32u)) =
                (uint16_t)e4m3x2(__fmul_rn(pv[2], 448.0f), __fmul_rn(pv[3], 448.0f));
        }
        sumA = __fadd_rn(sumA, __shfl_xor_sync(0xFFFFFFFFu, sumA, 1));
        sumA = __fadd_rn(sumA, __shfl_xor_sync(0xFFFFFFFFu, sumA, 2));
        sumB = __fadd_rn(sumB, __shfl_xor_sync(0xFFFFFFFFu, sumB, 1));
        sumB = __fadd_rn(sumB, __shfl_xor_sync(0xFFFFFFFFu, sumB, 2));
        if (seeA) lA = __fadd_rn(__fmul_rn(lA, alA), sumA);
        if (seeB) lB = __fadd_rn(__fmul_rn(lB, alB), sumB);

        /* block kb - 1's PV done; then its buffer flush [SAGE-ATT-05] */
        wg_wait0();
        fence_acc(acc);
        if (kb > 0u) flush(acc, buf, kb - 1u);
        /* rescale acc and buf (alpha is 1 when m did not change) */
#pragma unroll
        for (uint32_t x = 0; x < 64u; x++) {
            const float al = (x % 4u) >= 2u ? alB : alA;
            acc[x] = __fmul_rn(acc[x], al);
            if (F != 0u) buf[x] = __fmul_rn(buf[x], al);
        }

        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();

        /* PV: two wgmma m64n128k32 [SAGE-ATT-04] */
        if (!TRACE || !traced) {
            fence_acc(acc);
            wg_fence();
            wgmma_e4m3_n128(acc, wg_desc(ps), wg_desc(vt));
            wgmma_e4m3_n128(acc, wg_desc(ps + 2048u), wg_desc(vt + 4096u));
            wg_commit();                                      /* waited for at block kb + 1 */
        } else {
#pragma unroll
            for (uint32_t h = 0; h < 2u; h++) {
                const uint64_t u = 2u * (uint64_t)kb + h;
                float *ai = p.tr.d_acc_in + u * ATT_BQ * ATT_D, *ao = p.tr.d_acc_out + u * ATT_BQ * ATT_D;
                uint8_t *pp = p.tr.d_p + u * ATT_BQ * 32u;
                for (uint32_t e = tid; e < ATT_BQ * 32u; e += 128u)
                    pp[e] = ps[h * 2048u + wg_off(e / 32u, e % 32u)];
#pragma unroll
                for (uint32_t x = 0; x < 64u; x++)
                    ai[(16u * w + g + 8u * ((x % 4u) / 2u)) * ATT_D + 8u * (x / 4u) + 2u * t + x % 2u] = acc[x];
                wg_fence();
                wgmma_e4m3_n128(acc, wg_desc(ps + h * 2048u), wg_desc(vt + h * 4096u));
                wg_commit();
                wg_wait0();
#pragma unroll
                for (uint32_t x = 0; x < 64u; x++)
                    ao[(16u * w + g + 8u * ((x % 4u) / 2u)) * ATT_D + 8u * (x / 4u) + 2u * t + x % 2u] = acc[x];
            }
        }

        /* stage st is free for block kb + 2 once every thread is past the
         * barrier above (its last reads came before it) */
    }
    wg_wait0();
    fence_acc(acc);
    if (nb > 0u) flush(acc, buf, nb - 1u);
    cp_wait<0>();

    /* o = RN32(RN32(buf vsc) / l); +0 for a row that sees no key */
    sage_out_rows<ATT_D>(o, vs, acc, buf, F, t, rA, rB, nvA, nvB, lA, lB, nq);
}

/* ---- host: the core ---------------------------------------------------------- */

static inline int is_aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0u; }

/* Which core: CORE_DEFAULT (the FlashAttention-3-structured core of
 * gpu/sage/sage_fa3.cu when it was built and takes the shape, unless the
 * environment's KVQ_SAGE_CORE is "loop"; [SAGE-DEV-12]), CORE_LOOP (this
 * file's warpgroup core) or CORE_FA3 (that core or an error). */
enum { CORE_DEFAULT, CORE_LOOP, CORE_FA3 };

static int use_fa3(const kvq_sage_attn *a, int which)
{
    if (which == CORE_LOOP || !kvq_sage_fa3_built() || !kvq_sage_fa3_fits(a)) return 0;
    if (which == CORE_FA3) return 1;
    const char *e = getenv("KVQ_SAGE_CORE");
    return e == NULL || strcmp(e, "loop") != 0;
}

/* d_vt: NULL, or V~ in [SAGE-DEV-15]'s layout for the FA3 core's default form
 * (the warpgroup core and the other forms take d_vc). */
static kvq_status launch_core(float *d_o, const kvq_sage_attn *a, uint32_t heads, const uint8_t *d_qc,
                              const float *d_qs, const uint8_t *d_kc, const float *d_ks, const float *d_ds,
                              const uint8_t *d_vc, const float *d_vs, const kvq_cuda_result *gate,
                              const kvq_cuda_sage_attn_trace *tr, cudaStream_t stream, int which = CORE_DEFAULT,
                              const uint8_t *d_vt = NULL, uint32_t group = 1u)
{
    if (a == NULL || !kvq_sage_attn_ok(a) || heads < 1u) return KVQ_E_PARAM;
    if (group < 1u || heads % group != 0u) return KVQ_E_PARAM;   /* [SAGE-DEV-17] */
    if (d_o == NULL || d_qc == NULL || d_qs == NULL || d_kc == NULL || d_ks == NULL || d_ds == NULL ||
        d_vc == NULL || d_vs == NULL)
        return KVQ_E_PARAM;
    if (!is_aligned(d_kc, 16) || !is_aligned(d_vc, 16) || !is_aligned(d_vt, 16) || !is_aligned(d_o, 8) ||
        !is_aligned(d_qs, 4) ||
        !is_aligned(d_ks, 4) || !is_aligned(d_ds, 4) || !is_aligned(d_vs, 4))
        return KVQ_E_PARAM;
    const uint32_t qblocks = kvq_sage_blocks(a->nq, ATT_BQ);
    if (tr != NULL) {
        if (tr->head >= heads || tr->qblock >= qblocks || tr->d_dots == NULL || tr->d_acc_in == NULL ||
            tr->d_acc_out == NULL || tr->d_p == NULL || tr->d_nblocks == NULL)
            return KVQ_E_PARAM;
        const uint32_t last = tr->qblock * ATT_BQ + ATT_BQ - 1u < a->nq ? tr->qblock * ATT_BQ + ATT_BQ - 1u : a->nq - 1u;
        if (tr->blocks < kvq_sage_blocks(kvq_sage_attn_nvisible(a, last), ATT_BKV)) return KVQ_E_PARAM;
    }
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_DEVICE;
    }
    if (major != 9 || minor != 0) return KVQ_E_DEVICE;        /* sm_90a only */
    if (which == CORE_FA3 && !kvq_sage_fa3_built()) return KVQ_E_DEVICE;
    if (which == CORE_FA3 && !kvq_sage_fa3_fits(a)) return KVQ_E_PARAM;
    if (tr == NULL && use_fa3(a, which)) {
        kvq_sage_fa3_args f;
        memset(&f, 0, sizeof f);
        f.a = *a;
        f.tau2 = kvq_sage_attn_tau2(a->tau);
        f.heads = heads;
        f.o = d_o, f.qc = d_qc, f.kc = d_kc, f.vc = d_vc, f.qs = d_qs, f.ks = d_ks, f.ds = d_ds, f.vs = d_vs;
        const kvq_sage_shape qsh = {a->nq, ATT_D}, ksh = {a->nk, ATT_D};
        const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
        f.qc_head = kvq_sage_code_bytes(&qsh, a->qk_bits);
        f.kc_head = kvq_sage_code_bytes(&ksh, a->qk_bits);
        f.qs_head = kvq_sage_scale_count(&qsh, &qq);
        f.ks_head = kvq_sage_scale_count(&ksh, &kq);
        f.ds_head = (uint64_t)kvq_sage_mean_rows(a->nq, KVQ_SAGE_ATTN_BQ) * a->nk;
        f.gate = gate;
        f.vt = d_vt;
        f.group = group;
        return kvq_sage_fa3_launch(&f, stream);
    }

    attn_args p;
    memset(&p, 0, sizeof p);
    p.a = *a;
    p.tau2 = kvq_sage_attn_tau2(a->tau);
    p.o = d_o, p.qc = d_qc, p.kc = d_kc, p.vc = d_vc, p.qs = d_qs, p.ks = d_ks, p.ds = d_ds, p.vs = d_vs;
    const kvq_sage_shape qsh = {a->nq, ATT_D}, ksh = {a->nk, ATT_D};
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    p.qc_head = kvq_sage_code_bytes(&qsh, a->qk_bits);
    p.kc_head = kvq_sage_code_bytes(&ksh, a->qk_bits);
    p.qs_head = kvq_sage_scale_count(&qsh, &qq);
    p.ks_head = kvq_sage_scale_count(&ksh, &kq);
    p.ds_head = (uint64_t)kvq_sage_mean_rows(a->nq, KVQ_SAGE_ATTN_BQ) * a->nk;
    p.gate = gate;
    p.group = group;
    p.kv_heads = heads / group;
    if (tr != NULL) p.tr = *tr;

    void (*kern)(attn_args);
    uint32_t smem;
    if (a->qk_bits == 8u) {
        kern = tr ? sage_attn_kernel<8u, true> : sage_attn_kernel<8u, false>;
        smem = SM_BYTES8;
    } else {
        kern = tr ? sage_attn_kernel<4u, true> : sage_attn_kernel<4u, false>;
        smem = SM_BYTES4;
    }
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_DEVICE;
    }
    for (uint32_t h0 = 0; h0 < heads; h0 += 65535u) {        /* grid.y holds at most 65535 heads */
        const uint32_t hn = heads - h0 < 65535u ? heads - h0 : 65535u;
        p.head0 = h0;
        kern<<<dim3(qblocks, hn), 128, smem, stream>>>(p);
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_sage_attn_core(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                              const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                              const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                              const float *d_vs, cudaStream_t stream)
{
    return launch_core(d_o, a, heads, d_qc, d_qs, d_kc, d_ks, d_ds, d_vc, d_vs, NULL, NULL, stream);
}

extern "C" kvq_status kvq_cuda_sage_attn_core_loop(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                                   const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                                   const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                                   const float *d_vs, cudaStream_t stream)
{
    return launch_core(d_o, a, heads, d_qc, d_qs, d_kc, d_ks, d_ds, d_vc, d_vs, NULL, NULL, stream, CORE_LOOP);
}

extern "C" kvq_status kvq_cuda_sage_attn_core_fa3(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                                  const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                                  const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                                  const float *d_vs, cudaStream_t stream)
{
    return launch_core(d_o, a, heads, d_qc, d_qs, d_kc, d_ks, d_ds, d_vc, d_vs, NULL, NULL, stream, CORE_FA3);
}

extern "C" kvq_status kvq_cuda_sage_attn_core_fa3_vt(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                                     const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                                     const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                                     const uint8_t *d_vt, const float *d_vs, cudaStream_t stream)
{
    if (d_vt == NULL) return KVQ_E_PARAM;
    return launch_core(d_o, a, heads, d_qc, d_qs, d_kc, d_ks, d_ds, d_vc, d_vs, NULL, NULL, stream, CORE_FA3, d_vt);
}

extern "C" int kvq_cuda_sage_attn_fa3_built(void) { return kvq_sage_fa3_built(); }

/* Whether the pipeline has the V quantizer write V~ [SAGE-DEV-15] for the FA3
 * core: when the core's form takes it (ping-pong, levels 3 to 5; unset, 5 given V~), unless
 * the environment's KVQ_SAGE_VT is "0" (the core then transposes V's codes
 * itself, the form of before). */
static int vt_wanted(void)
{
    const char *e = getenv("KVQ_SAGE_VT");
    return (e == NULL || strcmp(e, "0") != 0) && kvq_sage_fa3_vt_form();
}

extern "C" kvq_status kvq_cuda_sage_attn_core_trace(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                                    const uint8_t *d_qc, const float *d_qs,
                                                    const uint8_t *d_kc, const float *d_ks,
                                                    const float *d_ds, const uint8_t *d_vc,
                                                    const float *d_vs, const kvq_cuda_sage_attn_trace *tr,
                                                    cudaStream_t stream)
{
    if (tr == NULL) return KVQ_E_PARAM;
    return launch_core(d_o, a, heads, d_qc, d_qs, d_kc, d_ks, d_ds, d_vc, d_vs, NULL, tr, stream);
}

/* ---- host: the pipeline -------------------------------------------------------- */

static size_t up256(uint64_t n) { return (size_t)((n + 255u) / 256u * 256u); }

/* The pipeline's stages, in the order their statuses rank [SAGE-DEV-09]. */
enum { ST_SMOOTH_K, ST_SMOOTH_Q, ST_DS, ST_QUANT_Q, ST_QUANT_K, ST_QUANT_V, ST_N };
#define ERR_SKIP 0x80000000u             /* an earlier stage failed: the stage writes nothing */

/* The scratch segment: one call state a stage, then V's per-head channel
 * maxima and scales (the kernels' copy); zeroed by one memset a call. */
typedef struct attn_scratch {
    sage_dev_state st[ST_N];
} attn_scratch;

static uint64_t attn_scratch_bytes(uint64_t heads)
{
    return sizeof(attn_scratch) + heads * ATT_D * 8u;
}

/* heads query heads on kv_heads KV heads [SAGE-DEV-17]: the K and V segments
 * (smoothed K, its means, K's and V's codes and scales, V~) hold kv_heads heads. */
extern "C" kvq_status kvq_cuda_sage_attn_gqa_ws_layout(kvq_cuda_sage_attn_ws *w, const kvq_sage_attn *a,
                                                       uint32_t heads, uint32_t kv_heads)
{
    if (w == NULL || a == NULL || !kvq_sage_attn_ok(a) || heads < 1u) return KVQ_E_PARAM;
    if (kv_heads < 1u || kv_heads > heads || heads % kv_heads != 0u) return KVQ_E_PARAM;
    const uint64_t H = heads, G = kv_heads, nq = a->nq, nk = a->nk, d = ATT_D;
    const uint64_t rows = kvq_sage_mean_rows(a->nq, KVQ_SAGE_ATTN_BQ);
    const kvq_sage_shape qsh = {a->nq, ATT_D}, ksh = {a->nk, ATT_D};
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    size_t at = 0;
#define SEG(f, n) (w->f = at, at += up256(n))
    SEG(ks, G * nk * d * 4u);
    SEG(km, G * d * 4u);
    SEG(qs, H * nq * d * 4u);
    SEG(qm, H * rows * d * 4u);
    SEG(ds, H * rows * nk * 4u);
    SEG(qc, H * kvq_sage_code_bytes(&qsh, a->qk_bits));
    SEG(qsc, H * kvq_sage_scale_count(&qsh, &qq) * 4u);
    SEG(kc, G * kvq_sage_code_bytes(&ksh, a->qk_bits));
    SEG(ksc, G * kvq_sage_scale_count(&ksh, &kq) * 4u);
    SEG(vc, G * nk * d);
    SEG(vsc, G * d * 4u);
    SEG(vt, G * kvq_sage_blocks(a->nk, ATT_BKV) * KVQ_CUDA_SAGE_VT_BLOCK);   /* V~ [SAGE-DEV-15] */
    SEG(scratch, attn_scratch_bytes(H));                      /* the stages' states, V's maxima */
    SEG(results, sizeof(kvq_cuda_result));                    /* the core's gate */
#undef SEG
    w->total = at;
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_sage_attn_ws_layout(kvq_cuda_sage_attn_ws *w, const kvq_sage_attn *a,
                                                   uint32_t heads)
{
    return kvq_cuda_sage_attn_gqa_ws_layout(w, a, heads, heads);
}

extern "C" size_t kvq_cuda_sage_attn_workspace(const kvq_sage_attn *a, uint32_t heads)
{
    kvq_cuda_sage_attn_ws w;
    return kvq_cuda_sage_attn_ws_layout(&w, a, heads) == KVQ_OK ? w.total : 0u;
}

extern "C" size_t kvq_cuda_sage_attn_gqa_workspace(const kvq_sage_attn *a, uint32_t heads, uint32_t kv_heads)
{
    kvq_cuda_sage_attn_ws w;
    return kvq_cuda_sage_attn_gqa_ws_layout(&w, a, heads, kv_heads) == KVQ_OK ? w.total : 0u;
}

/* Before stage s: when an earlier stage's state holds an error, mark stage
 * s's so that its writing kernels return at once [SAGE-DEV-09]. */
static __global__ void attn_stage_gate_kernel(attn_scratch *sc, uint32_t s)
{
    uint32_t e = 0u;
    for (uint32_t i = 0; i < s; i++) e |= sc->st[i].err;
    if (e != 0u) sc->st[s].err |= ERR_SKIP;
}

/* The status of the first failing stage in stage order (NaN/Inf before range
 * within a stage, as sage_result_kernel), else KVQ_OK and the stages' flags
 * OR-ed; into *r and the core's gate. */
static __global__ void attn_combine_kernel(kvq_cuda_result *r, kvq_cuda_result *gate, const attn_scratch *sc)
{
    uint32_t st = KVQ_OK, fl = 0u;
    for (uint32_t i = 0; i < ST_N; i++) {
        const uint32_t e = sc->st[i].err;
        if (e != 0u) {
            st = (e & ERR_NONFINITE) ? (uint32_t)KVQ_E_NONFINITE : (uint32_t)KVQ_E_PARAM;
            break;
        }
        fl |= sc->st[i].flags;
    }
    r->status = st, r->flags = st == KVQ_OK ? fl : 0u;
    *gate = *r;
}

/* The pipeline, every stage one launch a kernel for all heads, on `stream`
 * only: no host wait, no allocation, no host thread [SAGE-DEV-09].  ev (NULL,
 * or 7 events) records the stage boundaries for kvq_cuda_sage_attn_stages. */
static kvq_status attn_pipeline(float *d_o, kvq_cuda_result *d_result, const float *d_q, const float *d_k,
                                const float *d_v, const kvq_sage_attn *a, uint32_t heads, uint32_t kv_heads,
                                void *d_workspace, size_t workspace_bytes, cudaStream_t stream, cudaEvent_t *ev)
{
    kvq_cuda_sage_attn_ws L;
    if (kvq_cuda_sage_attn_gqa_ws_layout(&L, a, heads, kv_heads) != KVQ_OK) return KVQ_E_PARAM;
    const uint32_t grp = heads / kv_heads;                     /* query heads a KV head [SAGE-DEV-17] */
    if (d_o == NULL || d_result == NULL || d_q == NULL || d_k == NULL || d_v == NULL || d_workspace == NULL ||
        !is_aligned(d_workspace, 256) || workspace_bytes < L.total || !is_aligned(d_o, 8))
        return KVQ_E_PARAM;
    const uint32_t nq = a->nq, nk = a->nk, rows = kvq_sage_mean_rows(nq, KVQ_SAGE_ATTN_BQ);
    if ((uint64_t)rows * nk > ((uint64_t)1 << 32)) return KVQ_E_PARAM;   /* dS of one head [SAGE-DS-02] */
    /* the stage kernels (KVQ_SAGE_STAGES unset or 1) or those of before (0) [SAGE-DEV-16] */
    const int stages = sage_stages_env();
    if (stages < 0) return KVQ_E_PARAM;
    const uint32_t sm_stg = stages ? SAGE_STG_NEW | SAGE_STG_FUSED : 0u;
    const uint32_t ds_stg = stages ? SAGE_STG_NEW | SAGE_STG_NOCHECK : 0u;
    const uint32_t qk_opts = stages ? KVQ_CUDA_DIRECT : 0u;
    uint8_t *ws = (uint8_t *)d_workspace;
    float *ks = (float *)(ws + L.ks), *km = (float *)(ws + L.km), *qs = (float *)(ws + L.qs);
    float *qm = (float *)(ws + L.qm), *ds = (float *)(ws + L.ds);
    uint8_t *qc = ws + L.qc, *kc = ws + L.kc, *vc = ws + L.vc;
    /* V~ when the core will be the FA3 one and KVQ_SAGE_VT is not "0" [SAGE-DEV-15] */
    uint8_t *vt = use_fa3(a, CORE_DEFAULT) && vt_wanted() ? ws + L.vt : NULL;
    float *qsc = (float *)(ws + L.qsc), *ksc = (float *)(ws + L.ksc), *vsc = (float *)(ws + L.vsc);
    attn_scratch *sc = (attn_scratch *)(ws + L.scratch);
    uint32_t *vmax = (uint32_t *)(sc + 1);
    float *vs2 = (float *)(vmax + (uint64_t)heads * ATT_D);
    kvq_cuda_result *gate = (kvq_cuda_result *)(ws + L.results);
    const float tau2 = kvq_sage_attn_tau2(a->tau);
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const kvq_sage_shape qsh = {nq, ATT_D}, ksh = {nk, ATT_D};
    const kvq_policy *pol = &kvq_policy_default;
    /* tau2 as kvq_cuda_sage_delta_s judges tau: non-finite first, then the range */
    const uint32_t pre = !isfinite(tau2) ? ERR_NONFINITE
                       : (tau2 >= KVQ_SAGE_TAU_MIN && tau2 <= KVQ_SAGE_TAU_MAX) ? 0u : ERR_RANGE;
    auto mark = [&](int i) { return ev == NULL || cudaEventRecord(ev[i], stream) == cudaSuccess; };
    auto gated = [&](uint32_t s) {
        attn_stage_gate_kernel<<<1, 1, 0, stream>>>(sc, s);
        return cudaGetLastError() == cudaSuccess;
    };
    if (cudaMemsetAsync(sc, 0, attn_scratch_bytes(heads), stream) != cudaSuccess || !mark(0)) {
        (void)cudaGetLastError();
        return KVQ_E_DEVICE;
    }
    kvq_status s = KVQ_OK;
    /* 1. K smoothed over each head's nk tokens, 2. Q per block of 128 tokens [SAGE-ATT-02] */
    s = sage_enqueue_smooth(ks, km, d_k, kv_heads, nk, ATT_D, nk, &sc->st[ST_SMOOTH_K], stream, sm_stg);
    if (s == KVQ_OK && !mark(1)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK && !gated(ST_SMOOTH_Q)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK)
        s = sage_enqueue_smooth(qs, qm, d_q, heads, nq, ATT_D, KVQ_SAGE_ATTN_BQ, &sc->st[ST_SMOOTH_Q], stream,
                                sm_stg);
    if (s == KVQ_OK && !mark(2)) s = KVQ_E_DEVICE;
    /* 3. dS = q_m K_s^T tau2, every head */
    if (s == KVQ_OK && !gated(ST_DS)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK) s = sage_enqueue_ds(ds, qm, ks, heads, rows, &ksh, tau2, pre, &sc->st[ST_DS], stream, ds_stg,
                                             grp);
    if (s == KVQ_OK && !mark(3)) s = KVQ_E_DEVICE;
    /* 4. the quantizers Q, K, then V (per channel over a head's tokens) */
    if (s == KVQ_OK && !gated(ST_QUANT_Q)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK) s = sage_enqueue_qk(qc, qsc, qs, heads, &qsh, &qq, pol, qk_opts, &sc->st[ST_QUANT_Q], stream);
    if (s == KVQ_OK && !gated(ST_QUANT_K)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK) s = sage_enqueue_qk(kc, ksc, ks, kv_heads, &ksh, &kq, pol, qk_opts, &sc->st[ST_QUANT_K], stream);
    if (s == KVQ_OK && !mark(4)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK && !gated(ST_QUANT_V)) s = KVQ_E_DEVICE;
    if (s == KVQ_OK)
        s = sage_enqueue_v(vc, vsc, d_v, kv_heads, &ksh, KVQ_SAGE_FP8_E4M3, vmax, vs2, &sc->st[ST_QUANT_V], stream,
                           vt);
    if (s == KVQ_OK && !mark(5)) s = KVQ_E_DEVICE;
    if (s != KVQ_OK) {
        (void)cudaGetLastError();
        return s;
    }
    attn_combine_kernel<<<1, 1, 0, stream>>>(d_result, gate, sc);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;

    /* 5. the core, skipped on an error status */
    s = launch_core(d_o, a, heads, qc, qsc, kc, ksc, ds, vc, vsc, gate, NULL, stream, CORE_DEFAULT, vt, grp);
    if (s == KVQ_OK && !mark(6)) s = KVQ_E_DEVICE;
    return s;
}

extern "C" kvq_status kvq_cuda_sage_attn(float *d_o, kvq_cuda_result *d_result, const float *d_q,
                                         const float *d_k, const float *d_v, const kvq_sage_attn *a,
                                         uint32_t heads, void *d_workspace, size_t workspace_bytes,
                                         cudaStream_t stream)
{
    return attn_pipeline(d_o, d_result, d_q, d_k, d_v, a, heads, heads, d_workspace, workspace_bytes, stream, NULL);
}

extern "C" kvq_status kvq_cuda_sage_attn_gqa(float *d_o, kvq_cuda_result *d_result, const float *d_q,
                                             const float *d_k, const float *d_v, const kvq_sage_attn *a,
                                             uint32_t heads, uint32_t kv_heads, void *d_workspace,
                                             size_t workspace_bytes, cudaStream_t stream)
{
    return attn_pipeline(d_o, d_result, d_q, d_k, d_v, a, heads, kv_heads, d_workspace, workspace_bytes, stream,
                         NULL);
}

extern "C" kvq_status kvq_cuda_sage_attn_gqa_stages(float *ms, float *d_o, kvq_cuda_result *d_result,
                                                    const float *d_q, const float *d_k, const float *d_v,
                                                    const kvq_sage_attn *a, uint32_t heads, uint32_t kv_heads,
                                                    void *d_workspace, size_t workspace_bytes, cudaStream_t stream)
{
    if (ms == NULL) return KVQ_E_PARAM;
    cudaEvent_t ev[7];
    int made = 0;
    kvq_status s = KVQ_OK;
    for (; made < 7; made++)
        if (cudaEventCreate(&ev[made]) != cudaSuccess) {
            s = KVQ_E_DEVICE;
            break;
        }
    if (s == KVQ_OK)
        s = attn_pipeline(d_o, d_result, d_q, d_k, d_v, a, heads, kv_heads, d_workspace, workspace_bytes, stream,
                          ev);
    if (s == KVQ_OK && cudaEventSynchronize(ev[6]) != cudaSuccess) s = KVQ_E_DEVICE;
    float t[6];
    for (int i = 0; i < 6 && s == KVQ_OK; i++)
        if (cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]) != cudaSuccess) s = KVQ_E_DEVICE;
    while (made > 0) (void)cudaEventDestroy(ev[--made]);
    (void)cudaGetLastError();
    if (s == KVQ_OK) memcpy(ms, t, sizeof t);
    return s;
}

extern "C" kvq_status kvq_cuda_sage_attn_stages(float *ms, float *d_o, kvq_cuda_result *d_result,
                                                const float *d_q, const float *d_k, const float *d_v,
                                                const kvq_sage_attn *a, uint32_t heads, void *d_workspace,
                                                size_t workspace_bytes, cudaStream_t stream)
{
    return kvq_cuda_sage_attn_gqa_stages(ms, d_o, d_result, d_q, d_k, d_v, a, heads, heads, d_workspace,
                                         workspace_bytes, stream);
}
