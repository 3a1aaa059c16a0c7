/*
 * decode_phase1.cu -- Phase 1 of the certified CERT decode step on CUDA
 * (cert_phase1_kernel; decode_common.cuh says how the step is split):
 * scores and block log-masses L~_b from the INT8 keys, Delta'_b, A_b, the
 * radii err_b [CERT-DEV-02], each head's maximum; and its launch.
 */
#include "decode_common.cuh"

#ifdef KVQ_CERT_TIMELINE
__device__ unsigned long long tl_p1[2] = {~0ull, 0ull};
#endif

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
    /* the paper variant keeps a full block's scores for its Phase 2, which
     * attends the unselected blocks with them [CERT-DEV-10] */
    if (ws.sc != NULL && full) {
        const uint32_t n16 = KVQ_CERT_BLOCK * kvq_cert_full_blocks(&h.shape);
#pragma unroll
        for (uint32_t k = 0; k < 2u; k++) {
            const uint32_t hk = 2u * (cg & 1u) + k;
            if (g0 + hk < h.group)
                ws.sc[(uint64_t)(kv * h.group + g0 + hk) * n16 + KVQ_CERT_BLOCK * b + t] = s[k];
        }
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
    if (blockIdx.x == 0u && threadIdx.x == 0u) {
        ws.scnt[kv] = 0u;
        if (ws.paper) ws.kvn[kv] = 0u;
    }
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += gridDim.x * blockDim.x) {
        ws.stag[(uint64_t)kv * nb + i] = 0u;
        if (ws.paper) ws.selm[(uint64_t)kv * nb + i] = ws.promm[(uint64_t)kv * nb + i] = 0u;
        if (ws.paper && i < ws.nseg) ws.segm[(uint64_t)kv * ws.nseg + i] = 0u;
    }
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

/* ---- host side ----------------------------------------------------------- */

/* dynamic shared memory beyond the default 48 KiB: two pipeline buffers a warp */
cudaError_t cert_phase1_attrs(void)
{
    const void *const k[] = {(const void *)cert_phase1_kernel<true, 0u>,
                             (const void *)cert_phase1_kernel<false, 0u>,
                             (const void *)cert_phase1_kernel<true, 128u>,
                             (const void *)cert_phase1_kernel<false, 128u>};
    cudaError_t e = cudaSuccess;
    for (size_t i = 0; i < sizeof k / sizeof k[0] && e == cudaSuccess; i++)
        e = cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)P1_SMEM);
    return e;
}

/* Phase 1 waits for all earlier work of the stream (an ordinary launch). */
template <bool CERT>
static cudaError_t phase1_launch(dim3 g1, cudaStream_t stream, const kvq_cuda_cert_heads &h,
                                 const kvq_cuda_cert_ws &w)
{
    /* d = 128 (one chunk a block, the common head size): a build in which d
     * is a constant, so the copies' addresses fold to immediate offsets and
     * the unit loop to one chunk; the same arithmetic as the general build */
    if (h.shape.dim == 128u)
        cert_phase1_kernel<CERT, 128u><<<g1, P1_WARPS * 32u, P1_SMEM, stream>>>(h, w);
    else
        cert_phase1_kernel<CERT, 0u><<<g1, P1_WARPS * 32u, P1_SMEM, stream>>>(h, w);
    return cudaGetLastError();
}

cudaError_t cert_phase1_launch(bool cert, dim3 g1, cudaStream_t stream,
                               const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &w)
{
    return cert ? phase1_launch<true>(g1, stream, h, w) : phase1_launch<false>(g1, stream, h, w);
}

#ifdef KVQ_CERT_TIMELINE
cudaError_t cert_phase1_tl(unsigned long long *out, const unsigned long long *in)
{
    cudaError_t e = cudaSuccess;
    if (out != NULL) e = cudaMemcpyFromSymbol(out, tl_p1, sizeof tl_p1);
    if (e == cudaSuccess && in != NULL) e = cudaMemcpyToSymbol(tl_p1, in, sizeof tl_p1);
    return e;
}
#endif
