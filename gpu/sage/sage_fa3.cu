/*
 * sage_fa3.cu -- the SAGE attention core in FlashAttention-3's structure on
 * sm_90a, built on CUTLASS's CuTe (spec/sage.md [SAGE-DEV-12]).  The same
 * pinned sequence as the warpgroup core of gpu/sage/sage_attn.cu
 * ([SAGE-ATT-10]); INT8 Q/K codes only (qk_bits 8; INT4 stays on that core).
 *
 * One CTA = 128 query rows of one head = two consumer warpgroups and one
 * producer warpgroup (384 threads; setmaxnreg gives the consumers 224
 * registers and the producer 56; a block of 288 threads at 224 registers
 * did not launch on the H200: registers evidently go to warps in groups of
 * four):
 *
 *   producer (warpgroup 2)
 *            one thread loads Q's two 64-row tiles once and the key blocks of 64
 *            keys by TMA (SM90_TMA_LOAD, 128-byte swizzle): K's INT8 codes and
 *            V's E4M3 codes as [SAGE-V-*] stores them ([key][channel]), into a
 *            ring of FA_STAGES stages on transaction barriers; the warpgroup
 *            then writes each block's V codes transposed (channels as rows, each
 *            channel's keys contiguous: the K-major B operand of the FP8 wgmma,
 *            no swizzle, core matrices of 8 rows x 16 bytes, LBO 128, SBO 256)
 *            with the keys of each 32-key half in the order of the P~ registers
 *            below (no bank conflict), and the block's K scales and dS values
 *            into shared memory, and marks the stage's V~ full.  Given V~ (the
 *            pipeline's V quantizer writes it, [SAGE-DEV-15]; the ping-pong form
 *            at levels 3..5 only: a template flag), the thread loads each block's 8192 bytes of
 *            V~ by one bulk copy straight into the stage's V~ in place of V's
 *            codes, and the warpgroup skips the transpose
 *   consumers (warpgroups 0 and 1: warps 0-3 and 4-7)
 *            rows 64 wg .. + 63 of the tile, 16 a warp; per key block:
 *            QK   wgmma m64n64k32 .s32.s8.s8 (SM90_64x64x32_S32S8S8_SS_TN, both
 *                 operands in shared memory, four k32 steps): exact int32 dots
 *            then the score, the online softmax, l and P~ exactly as the
 *            warpgroup core (same fragment: lane (g, t) holds keys 8n + 2t,
 *            8n + 2t + 1 of rows g and g + 8 of its warp, n = 0..7, so the block
 *            sums of l are summed in the same order and l is the same bits)
 *            P~V  P~ stays in registers as the A operand of two wgmma m64n128k32
 *                 .f32.e4m3.e4m3 (SM90_64x128x32_F32E4M3E4M3_RS_TN), keys
 *                 32h .. 32h + 31 each: the A fragment wants keys 4t .. 4t + 3
 *                 and 16 + 4t .. in lane t while the QK accumulator holds 2t,
 *                 2t + 1, 8 + 2t, 9 + 2t, ...; the codes stay where they are and
 *                 V~'s rows are permuted instead: position 4t + m (m < 4) of an
 *                 instruction holds key 8 (m / 2) + 2t + m % 2, position 16 + 4t
 *                 + m key 16 + 8 (m / 2) + 2t + m % 2 (the FlashAttention-3
 *                 permutation).  Each instruction takes the same 32 products
 *                 (P~ of key j times V of key j) as the warpgroup core's; the
 *                 measured model [SAGE-ACC-02] is one step of all 32 products and
 *                 C, so the order of the products within an instruction does not
 *                 move a bit (the RS form measured identical [SAGE-ACC-08])
 *            the rescale before and the FP32 buffer flush after each block's
 *            two instructions [SAGE-ACC-05], per row, in the order of the
 *            warpgroup core; the output o = RN32(RN32(buf vsc_c) / l)
 *
 * Two forms (a template flag; the launcher takes the ping-pong one unless the
 * environment's KVQ_SAGE_FA3_SERIAL is "1"):
 *   ping-pong  FlashAttention-3's schedule: in step i a consumer waits for its
 *              turn (a named barrier a warpgroup), issues block i's QK and
 *              block i - 1's P~V as one batch, passes the turn to the other
 *              consumer, then waits for its batch, flushes block i - 1 and
 *              computes block i's softmax while the other's instructions run;
 *              per row the order stays P~V(i - 1), flush(i - 1), rescale(i),
 *              P~V(i)
 *   serial     each consumer: QK, wait, softmax, P~V, wait, flush, block after
 *              block (the two consumers interleave as the warp schedulers let
 *              them)
 * A consumer whose 64 rows see fewer blocks than the tile's (causal) walks the
 * rest only to pass the turn and release their stages.  Each stage is released
 * when both consumers' instructions on it are done (every consumer thread
 * arrives).
 *
 * KVQ_SAGE_FA3_PLANT (a planted build for the device test, never shipped):
 * the buffer flush after block 0 is skipped (levels 0..3); at level 4 the
 * block's K scale of lane t is that of lane t + 1 (mod 4), level 4's own step;
 * at level 5 the flush's skip by a vote of all the warp's threads in place of
 * any, level 5's own step; at level 6 block kb + 1's dS stored in block kb's
 * place, level 6's own step.
 *
 * KVQ_SAGE_FA3_ABLATE (builds that time what stands between the core and the goal,
 * [SAGE-DEV-21]; wrong outputs by design, never shipped): at levels 5 and 6, 1 -- the
 * block's softmax replaced by one conversion a score (448 P := float(dot)), no rescale,
 * no flush: the pipeline's structure alone (TMA, barriers, the two wgmma batches, their
 * waits, P~'s FP8 codes); 2 -- the softmax kept, the rescale and the flush removed.
 *
 * SPEC: [SAGE-DEV-12] [SAGE-ATT-03..06] [SAGE-ACC-05] [SAGE-DEV-15]
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_sage_attn.h"
#include "kvq_cuda.h"
#include "sage/sage_fa3.h"
#include "sage/sage_instr.cuh"

#ifdef KVQ_SAGE_NO_CUTE

/* Built without the CUTLASS/CuTe headers: the core is absent and
 * kvq_cuda_sage_attn_core keeps the warpgroup core. */
extern "C" int kvq_sage_fa3_built(void) { return 0; }
extern "C" int kvq_sage_fa3_level(void) { return -1; }
extern "C" int kvq_sage_fa3_level_set(void) { return 0; }
extern "C" int kvq_sage_fa3_vt_form(void) { return 0; }
extern "C" int kvq_sage_fa3_k_uniform(const kvq_sage_qk *) { return 0; }
extern "C" kvq_status kvq_sage_fa3_launch(const kvq_sage_fa3_args *, cudaStream_t) { return KVQ_E_DEVICE; }

#else

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/device_kernel.h>
#include <cutlass/version.h>

#if CUTLASS_MAJOR != 4 || CUTLASS_MINOR != 2
#error "sage_fa3.cu is written against CUTLASS 4.2 (PyPI nvidia-cutlass 4.2.0.0, ci/setup.sh)"
#endif

using namespace cute;

#ifndef KVQ_SAGE_FA3_ABLATE
#define KVQ_SAGE_FA3_ABLATE 0
#endif

#define FA_D      128u
#define FA_BQ     128u                   /* query rows a CTA */
#define FA_BW     64u                    /* query rows a consumer warpgroup */
#define FA_BKV    KVQ_SAGE_ATTN_BKV      /* keys a block (64) */
#define FA_STAGES 4u                     /* level 3 reloads the stage of block kb - 2 for kb + 2: four */
#define FA_THREADS 384u                  /* 2 consumer warpgroups, 1 producer warpgroup */
#define FA_REG_PRODUCER 56                /* setmaxnreg: 56 + 2 x 224 <= 512 (65536 / 128) */
#define FA_REG_CONSUMER 224

using SmemQ = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<int8_t>{}, make_shape(Int<FA_BW>{}, Int<FA_D>{}, Int<2>{})));
using SmemK = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<int8_t>{}, make_shape(Int<FA_BKV>{}, Int<FA_D>{}, Int<FA_STAGES>{})));
using QkMma = decltype(make_tiled_mma(SM90::GMMA::MMA_64x64x32_S32S8S8_SS_TN{}));
using PvOp = SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_RS_TN<>;

using TmaQT = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                     make_tensor(make_gmem_ptr((const int8_t *)nullptr),
                                                 make_shape(1, (int)FA_D, 1), make_stride((int)FA_D, _1{}, 1)),
                                     SmemQ{}(_, _, 0)));
using TmaKT = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                     make_tensor(make_gmem_ptr((const int8_t *)nullptr),
                                                 make_shape(1, (int)FA_D, 1), make_stride((int)FA_D, _1{}, 1)),
                                     SmemK{}(_, _, 0)));

#define VT_BYTES 8192u                   /* a block's V~: 2 k32 tiles x 128 channels x 32 keys */
#define FA_DSP_STRIDE 20u                /* level 4's dS row: lane t's 16 values at 20 t (dsp_pos) */
#define FA_DSP (4u * FA_DSP_STRIDE)      /* floats of a stage's dS row (>= FA_BKV) */

struct fa_smem {
    alignas(1024) cute::ArrayEngine<int8_t, cosize_v<SmemQ>> q;
    alignas(1024) cute::ArrayEngine<int8_t, cosize_v<SmemK>> k;
    alignas(1024) cute::ArrayEngine<int8_t, cosize_v<SmemK>> v;   /* V codes as stored, [key][channel] */
    alignas(1024) uint8_t vt[FA_STAGES][VT_BYTES];
    /* the block's K scales and dS (0 past nk); from level 4 sks[s][t] holds the K
     * scale of the keys of lane t % 4 (one slot a thread and block, [SAGE-DEV-13]) and
     * sds[s] the dS values in the thread-major order of dsp_pos */
    alignas(16) float sks[FA_STAGES][FA_BKV];
    alignas(16) float sds[FA_STAGES][FA_DSP];
    alignas(8) uint64_t bar_q, full[FA_STAGES], vfull[FA_STAGES], empty[FA_STAGES];
};

/* ---- instructions ---------------------------------------------------------- */

/* A block's V~ [SAGE-DEV-15], 8192 bytes from global memory into the stage's
 * V~ by one bulk copy (cp.async.bulk, the TMA unit's non-tensor form) on the
 * stage's transaction barrier. */
__device__ __forceinline__ void bulk_g2s(void *smem, const void *gmem, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     (uint32_t)__cvta_generic_to_shared(smem)),
                 "l"(gmem), "r"(bytes), "r"((uint32_t)__cvta_generic_to_shared(bar))
                 : "memory");
}

__device__ __forceinline__ void pv_wgmma(float *d, const uint32_t *a, uint64_t db)
{
    PvOp::fma(a[0], a[1], a[2], a[3], db, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
              d[12], d[13], d[14], d[15], d[16], d[17], d[18], d[19], d[20], d[21], d[22], d[23], d[24], d[25], d[26],
              d[27], d[28], d[29], d[30], d[31], d[32], d[33], d[34], d[35], d[36], d[37], d[38], d[39], d[40], d[41],
              d[42], d[43], d[44], d[45], d[46], d[47], d[48], d[49], d[50], d[51], d[52], d[53], d[54], d[55], d[56],
              d[57], d[58], d[59], d[60], d[61], d[62], d[63], GMMA::ScaleOut::One);
}

/* Level 4's place of key e (< 64) of a block in the stage's dS row: lane t = (e % 8) / 2
 * of a quad holds keys 8n + 2t + i (n < 8, i < 2), at 20 t + 2n + i, so that its 16
 * values are four aligned 16-byte words, and the four lanes' words of one load lie in
 * four different groups of four banks (20 t mod 32 = 0, 20, 8, 28: no bank conflict;
 * a stride of 16 put lanes t and t + 2 on the same banks) [SAGE-DEV-13]. */
__device__ __forceinline__ uint32_t dsp_pos(uint32_t e)
{
    return FA_DSP_STRIDE * ((e % 8u) / 2u) + 2u * (e / 8u) + e % 2u;
}

/* ---- the kernel ------------------------------------------------------------------ */

template <bool PLANT, bool PP, int V, bool VTQ>
__global__ void __launch_bounds__(FA_THREADS, 1)
    sage_fa3_kernel(const kvq_sage_fa3_args p, CUTLASS_GRID_CONSTANT TmaQT const tma_q,
                    CUTLASS_GRID_CONSTANT TmaKT const tma_k, CUTLASS_GRID_CONSTANT TmaKT const tma_v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) uint8_t smraw[];
    fa_smem &sm = *reinterpret_cast<fa_smem *>(smraw);
    if (p.gate != NULL && *(volatile const uint32_t *)&p.gate->status != (uint32_t)KVQ_OK) return;
    using Bar = cutlass::arch::ClusterTransactionBarrier;
    using PBar = cutlass::arch::ClusterBarrier;
    const kvq_sage_attn a = p.a;
    const uint32_t tid = threadIdx.x, wg = tid / 128u, head = p.head0 + blockIdx.y, q0 = blockIdx.x * FA_BQ;
    const uint32_t nq = a.nq, nk = a.nk, heads = p.heads;
    /* K, V: those of the head's KV head [SAGE-DEV-17] (the launcher's part starts at KV head 0) */
#ifdef KVQ_SAGE_GQA_PLANT
    const uint32_t kvh = p.group > 1u ? head % p.kv_heads : head, kv_heads = p.group > 1u ? p.kv_heads : heads;   /* planted */
#else
    const uint32_t kvh = p.group > 1u ? (head + p.gofs) / p.group : head, kv_heads = p.group > 1u ? p.kv_heads : heads;
#endif
    const uint32_t last = q0 + FA_BQ - 1u < nq ? q0 + FA_BQ - 1u : nq - 1u;
    const uint32_t nb = kvq_sage_blocks(kvq_sage_attn_nvisible(&a, last), FA_BKV);   /* the tile's blocks */

    if (tid == 0u) {
        Bar::init(&sm.bar_q, 1);
        for (uint32_t s = 0; s < FA_STAGES; s++) {
            Bar::init(&sm.full[s], 1);
            PBar::init(&sm.vfull[s], 128);
            PBar::init(&sm.empty[s], 256);
        }
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    Tensor sQ = make_tensor(make_smem_ptr(sm.q.begin()), SmemQ{});
    Tensor sK = make_tensor(make_smem_ptr(sm.k.begin()), SmemK{});
    Tensor sV = make_tensor(make_smem_ptr(sm.v.begin()), SmemK{});
    constexpr int kv_bytes = 2 * FA_BKV * FA_D;
    const kvq_sage_qk qq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_K);
    const float *ks = p.ks + (uint64_t)kvh * p.ks_head;
    const float *dsrow = p.ds + (uint64_t)head * p.ds_head + (uint64_t)(q0 / KVQ_SAGE_ATTN_BQ) * nk;

    if (wg == 2u) {
        /* ---- producer: warpgroup 2 ---- */
        cutlass::arch::warpgroup_reg_dealloc<FA_REG_PRODUCER>();
        Tensor mQ = tma_q.get_tma_tensor(make_shape((int)nq, (int)FA_D, (int)heads));
        Tensor mK = tma_k.get_tma_tensor(make_shape((int)nk, (int)FA_D, (int)kv_heads));
        Tensor mV = tma_v.get_tma_tensor(make_shape((int)nk, (int)FA_D, (int)kv_heads));
        Tensor gQ = local_tile(mQ(_, _, head), make_shape(Int<FA_BW>{}, Int<FA_D>{}), make_coord(_, 0));
        Tensor gK = local_tile(mK(_, _, kvh), make_shape(Int<FA_BKV>{}, Int<FA_D>{}), make_coord(_, 0));
        Tensor gV = local_tile(mV(_, _, kvh), make_shape(Int<FA_BKV>{}, Int<FA_D>{}), make_coord(_, 0));
        auto [tQg, tQs] = tma_partition(tma_q, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
        auto pk = tma_partition(tma_k, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
        auto pv = tma_partition(tma_v, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
        Tensor tKg = get<0>(pk);
        Tensor tKs = get<1>(pk);
        Tensor tVg = get<0>(pv);
        Tensor tVs = get<1>(pv);
        const uint32_t ptid = tid - 256u;
        /* VTQ: the block's V~ as the V quantizer wrote it [SAGE-DEV-15], straight
         * into the stage's vt (the same 8192 bytes the transpose below writes) */
        const uint8_t *vtg = VTQ ? p.vt + (uint64_t)kvh * kvq_sage_blocks(nk, FA_BKV) * VT_BYTES : NULL;
        auto load = [&](uint32_t kb) {
            const uint32_t s = kb % FA_STAGES;
            Bar::arrive_and_expect_tx(&sm.full[s], kv_bytes);
            copy(tma_k.with(sm.full[s]), tKg(_, kb), tKs(_, s));
            if constexpr (VTQ) bulk_g2s(sm.vt[s], vtg + (uint64_t)kb * VT_BYTES, VT_BYTES, &sm.full[s]);
            else copy(tma_v.with(sm.full[s]), tVg(_, kb), tVs(_, s));
        };
        if (ptid == 0u && nb > 0u) {                           /* (no load when no row sees a key) */
            const bool two = q0 + FA_BW < nq;
            Bar::arrive_and_expect_tx(&sm.bar_q, (two ? 2 : 1) * (int)(FA_BW * FA_D));
            copy(tma_q.with(sm.bar_q), tQg(_, 2u * blockIdx.x), tQs(_, 0));
            if (two) copy(tma_q.with(sm.bar_q), tQg(_, 2u * blockIdx.x + 1u), tQs(_, 1));
            for (uint32_t kb = 0; kb < FA_STAGES && kb < nb; kb++) load(kb);
        }
        const uint32_t pw = ptid / 32u, pl = ptid % 32u;
        /* level 6: block kb's dS value (thread ptid < 64) and K scale (ptid < 4) read from
         * global memory two blocks ahead, into registers (cur: block kb, nxt: block kb + 1),
         * so that no global load's latency lies between a block's release and the next
         * vfull the consumers wait for, and thread 0 marks a block before its reload wait
         * (below) [SAGE-DEV-21].  The same values go to the same words of shared memory
         * as at level 5 */
        float dcur = 0.0f, dnxt = 0.0f, kcur = 0.0f, knxt = 0.0f;
        auto fetch = [&](uint32_t kb, float &dv, float &kv) {
            if (kb >= nb) return;
            if (ptid < FA_BKV) {
                const uint32_t j = kb * FA_BKV + ptid;
                dv = j < nk ? __ldg(dsrow + j) : 0.0f;
            }
            if (ptid < 4u) {
                const uint32_t j = kb * FA_BKV + 2u * ptid;
                kv = j < nk ? __ldg(ks + kvq_sage_scale_slot(&kq, j)) : 0.0f;
            }
        };
        if constexpr (V >= 6) {
            fetch(0u, dcur, kcur);
            fetch(1u, dnxt, knxt);
        }
        for (uint32_t kb = 0; kb < nb; kb++) {
            const uint32_t s = kb % FA_STAGES, ph = (kb / FA_STAGES) & 1u;
            /* level 3: the stage of block kb - 2 again, for block kb + 2, before
             * block kb is transposed.  A level-3 consumer waits for block kb's
             * V~, scales and dS (vfull) before it releases block kb - 1 (its
             * P~V(kb - 1) is still running), so the producer must not wait for
             * block kb - 1's release before it marks block kb: that is a
             * deadlock once a tile has more than four blocks */
            static_assert(FA_STAGES == 4u, "level 3's reload of block kb - 2's stage for kb + 2 needs four stages");
            auto reload = [&]() {
                if (ptid == 0u && kb >= 2u && kb + 2u < nb) {
                    PBar::wait(&sm.empty[(kb - 2u) % FA_STAGES], ((kb - 2u) / FA_STAGES) & 1u);
                    load(kb + 2u);
                }
            };
            /* level 6: thread 0 marks block kb (vfull) before it waits for block kb - 2's
             * release to reload its stage, so that the mark waits on no release [SAGE-DEV-21] */
            constexpr bool mark_first = V >= 6;
            if constexpr (V >= 3 && !mark_first) reload();
            Bar::wait(&sm.full[s], ph);
            /* V~: [key][channel] -> 2 k32 tiles of channel rows, keys in P~'s order.
             * A task: channels c0 .. c0 + 3 (c0 = 4 (8 G + qq)) of keys 16 h + 2 tt +
             * {0, 1, 8, 9}, which are positions 16 (h % 2) + 4 tt .. + 3 of tile h / 2
             * (vt_word_off): four 4-byte loads, a 4 x 4 byte transpose, four 4-byte
             * stores.  Lane = 4 qq + tt: a load reads 32 bytes of 4 key rows (the
             * 128-byte swizzle spreads them over the 32 banks), a store writes 8
             * channel rows x 4 words of core matrices (the channel is rotated by
             * qq / 2 so that the 8 rows differ): no bank conflict. */
            uint8_t *vt = sm.vt[s];
            Tensor sVs = sV(_, _, s);
            const uint32_t tt = pl % 4u, qq = pl / 4u;
            if constexpr (!VTQ) {
                const uint32_t G = pw;                        /* warp pw: channels 32 pw .. + 31 */
#pragma unroll
                for (uint32_t h = 0; h < 4u; h++) {
                    const uint32_t c0 = 4u * (8u * G + qq), k0 = 16u * h + 2u * tt;
                    const uint32_t w0 = *reinterpret_cast<const uint32_t *>(&sVs(k0, c0));
                    const uint32_t w1 = *reinterpret_cast<const uint32_t *>(&sVs(k0 + 1u, c0));
                    const uint32_t w2 = *reinterpret_cast<const uint32_t *>(&sVs(k0 + 8u, c0));
                    const uint32_t w3 = *reinterpret_cast<const uint32_t *>(&sVs(k0 + 9u, c0));
                    const uint32_t t0 = __byte_perm(w0, w1, 0x5140u), t1 = __byte_perm(w2, w3, 0x5140u);
                    const uint32_t t2 = __byte_perm(w0, w1, 0x7362u), t3 = __byte_perm(w2, w3, 0x7362u);
                    const uint32_t o0 = __byte_perm(t0, t1, 0x5410u), o1 = __byte_perm(t0, t1, 0x7632u);
                    const uint32_t o2 = __byte_perm(t2, t3, 0x5410u), o3 = __byte_perm(t2, t3, 0x7632u);
#pragma unroll
                    for (uint32_t u = 0; u < 4u; u++) {
                        const uint32_t bb = (u + qq / 2u) % 4u;
                        const uint32_t x = bb == 0u ? o0 : bb == 1u ? o1 : bb == 2u ? o2 : o3;
                        *reinterpret_cast<uint32_t *>(vt + vt_word_off(h, tt, c0 + bb)) = x;
                    }
                }
            }
            /* the block's K scales and dS row slice, for the consumers' scores */
            if constexpr (V >= 6) {
                /* level 6: the values fetched ahead (KVQ_SAGE_FA3_PLANT at level 6, its own
                 * step: block kb + 1's dS in block kb's place) */
                if (ptid < FA_BKV) sm.sds[s][dsp_pos(ptid)] = PLANT ? dnxt : dcur;
                if (ptid < 4u) sm.sks[s][ptid] = kcur;
                dcur = dnxt, kcur = knxt;
                fetch(kb + 2u, dnxt, knxt);
            } else if constexpr (V >= 4) {
                /* level 4: dS in thread-major order (lane t's 16 values contiguous: four
                 * 16-byte loads), and one K scale a lane t: every key 8n + 2t + i of the
                 * block has the slot of key 2t (the launcher checked the K map:
                 * kvq_sage_fa3_k_uniform) */
                if (ptid < FA_BKV) {
                    const uint32_t j = kb * FA_BKV + ptid;
                    sm.sds[s][dsp_pos(ptid)] = j < nk ? __ldg(dsrow + j) : 0.0f;
                }
                if (ptid < 4u) {
                    const uint32_t tk = PLANT && V == 4 ? (ptid + 1u) % 4u : ptid;   /* level 4's plant: lane t + 1's slot */
                    const uint32_t j = kb * FA_BKV + 2u * tk;
                    sm.sks[s][ptid] = j < nk ? __ldg(ks + kvq_sage_scale_slot(&kq, j)) : 0.0f;
                }
            } else {
#pragma unroll
                for (uint32_t e = ptid; e < FA_BKV; e += 128u) {
                    const uint32_t j = kb * FA_BKV + e;
                    sm.sks[s][e] = j < nk ? __ldg(ks + kvq_sage_scale_slot(&kq, j)) : 0.0f;
                    sm.sds[s][e] = j < nk ? __ldg(dsrow + j) : 0.0f;
                }
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            PBar::arrive(&sm.vfull[s]);
            if constexpr (mark_first) reload();
            /* the stage again once both consumers are done with block kb (levels 0..2) */
            if (V < 3 && ptid == 0u && kb + FA_STAGES < nb) {
                PBar::wait(&sm.empty[s], ph);
                load(kb + FA_STAGES);
            }
        }
        return;
    }

    /* ---- consumers ---- */
    cutlass::arch::warpgroup_reg_alloc<FA_REG_CONSUMER>();
    /* level 5: the warpgroup's index by a shuffle from lane 0, which the compiler knows to be
     * warp-uniform (a uniform register: the wgmma descriptors that depend on it stay uniform) */
    const uint32_t cw = V >= 5 ? (uint32_t)__shfl_sync(0xFFFFFFFFu, (int)wg, 0) : wg, ctid = tid - 128u * cw,
                   w = ctid / 32u, lane = ctid % 32u, g = lane / 4u, t = lane % 4u;
    const uint32_t F = a.buffer;
    const float *qs = p.qs + (uint64_t)head * p.qs_head;
    const float *vs = p.vs + (uint64_t)kvh * FA_D;
    float *o = p.o + (uint64_t)head * nq * FA_D;
    const uint32_t r0 = q0 + FA_BW * cw;                      /* the warpgroup's first row */
    const uint32_t rA = r0 + 16u * w + g, rB = rA + 8u;
    const uint32_t nvA = rA < nq ? kvq_sage_attn_nvisible(&a, rA) : 0u;
    const uint32_t nvB = rB < nq ? kvq_sage_attn_nvisible(&a, rB) : 0u;
    const uint32_t lastw = r0 + FA_BW - 1u < nq ? r0 + FA_BW - 1u : nq - 1u;
    const uint32_t nbw = r0 < nq ? kvq_sage_blocks(kvq_sage_attn_nvisible(&a, lastw), FA_BKV) : 0u;
    const uint32_t endA = (nvA + FA_BKV - 1u) / FA_BKV, endB = (nvB + FA_BKV - 1u) / FA_BKV;
    auto flush = [&](float *acc_, float *buf_, uint32_t bk) {
        bool fA, fB;
        if constexpr (V >= 4) {
            /* level 4: the same conditions without short-circuit branches (bitwise on
             * predicates) */
            const bool every = (F == 64u) | ((bk & 1u) != 0u), on = F != 0u;
            fA = on & (bk < endA) & (every | (bk + 1u == endA));
            fB = on & (bk < endB) & (every | (bk + 1u == endB));
        } else {
            fA = F != 0u && bk < endA && (F == 64u || (bk & 1u) || bk + 1u == endA);
            fB = F != 0u && bk < endB && (F == 64u || (bk & 1u) || bk + 1u == endB);
        }
        if (PLANT && V < 4 && bk == 0u) fA = fB = false;
        /* level 4: no flush instruction issued (predicated off) when neither row flushes */
        if (V == 4 && !(fA || fB)) return;
        /* level 5: the same skip by a warp vote (a uniform branch: no wgmma operand is
         * then written on a divergent path; a thread whose rows do not flush still
         * issues nothing, its instructions predicated off) */
        if constexpr (V >= 5) {
            /* KVQ_SAGE_FA3_PLANT at level 5, its own step: the vote by all, not any (a warp
             * whose rows do not all flush skips the flush of those that do) */
            if (!(PLANT && V == 5 ? __all_sync(0xFFFFFFFFu, fA || fB) : __any_sync(0xFFFFFFFFu, fA || fB))) return;
        }
#pragma unroll
        for (uint32_t x = 0; x < 64u; x++)
            if ((x % 4u) >= 2u ? fB : fA) buf_[x] = __fadd_rn(buf_[x], acc_[x]), acc_[x] = 0.0f;
    };
    const float qscA = rA < nq ? __fmul_rn(__ldg(qs + kvq_sage_scale_slot(&qq, rA)), p.tau2) : 0.0f;
    const float qscB = rB < nq ? __fmul_rn(__ldg(qs + kvq_sage_scale_slot(&qq, rB)), p.tau2) : 0.0f;

    QkMma mma;
    ThrMMA thr = mma.get_slice(ctid);
    Tensor tCrA = thr.make_fragment_A(thr.partition_A(sQ));   /* (MMA, 1, 4, 2) descriptors */
    Tensor tCrB = thr.make_fragment_B(thr.partition_B(sK));   /* (MMA, 1, 4, STAGES) */
    Tensor sacc = partition_fragment_C(mma, make_shape(Int<FA_BW>{}, Int<FA_BKV>{}));   /* int32, 32 */

    float acc[64], buf[64];
#pragma unroll
    for (uint32_t x = 0; x < 64u; x++) acc[x] = 0.0f, buf[x] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    uint32_t pa[2][4];                                        /* P~ of the block whose P~V is next */
#pragma unroll
    for (uint32_t h = 0; h < 2u; h++) pa[h][0] = pa[h][1] = pa[h][2] = pa[h][3] = 0u;

    /* block kb's QK: 64 rows x 64 keys, exact int32 [SAGE-ATT-03] (into the open batch) */
    auto issue_qk = [&](uint32_t kb) {
        mma.accumulate_ = GMMA::ScaleOut::Zero;
        CUTE_UNROLL
        for (int k = 0; k < 4; k++) {
            cute::gemm(mma, tCrA(_, _, k, cw), tCrB(_, _, k, kb % FA_STAGES), sacc);
            mma.accumulate_ = GMMA::ScaleOut::One;
        }
    };
    /* block kb's P~V: two wgmma m64n128k32, A from registers [SAGE-ATT-04] */
    auto issue_pv = [&](uint32_t kb) {
        const uint8_t *vt = sm.vt[kb % FA_STAGES];
        pv_wgmma(acc, pa[0], wg_desc(vt));
        pv_wgmma(acc, pa[1], wg_desc(vt + 4096u));
    };
    auto fence_all = [&]() {
        warpgroup_fence_operand(sacc);
        fence_acc(acc);
#pragma unroll
        for (uint32_t h = 0; h < 2u; h++)
#pragma unroll
            for (uint32_t r = 0; r < 4u; r++) asm volatile("" : "+r"(pa[h][r])::"memory");
    };
    /* block kb's scores, softmax and l, 448 P into pf (pf[n][i]: as sacc) and
     * the rows' alpha */
    auto softmax_f = [&](uint32_t kb, auto FULLC, float (&pf)[8][4], float &alA, float &alB) {
        const uint32_t st = kb % FA_STAGES;
        /* FULL: every row of the warpgroup sees every key of the block (no
         * visibility test; the same operations) */
        constexpr bool FULL = decltype(FULLC)::value;
        /* sacc(i): key 8 (i / 4) + 2t + i % 2, row + 8 when i % 4 >= 2 (the
         * mma.sync fragment) */
        const uint32_t kbase = kb * FA_BKV;
        const float *sks = sm.sks[st], *sds = sm.sds[st];
        float sv[8][4];
        /* level 4: the lane's 16 dS values by four 16-byte loads, and RN32(qsc sk) once
         * a row and block -- the same product of the same two operands as per score
         * below level 4, since all 16 keys of the lane share one K slot */
        float dsl[16], pkA = 0.0f, pkB = 0.0f;
        if constexpr (V >= 4) {
#pragma unroll
            for (uint32_t u = 0; u < 4u; u++) {
                const float4 d4 = *reinterpret_cast<const float4 *>(sds + FA_DSP_STRIDE * t + 4u * u);
                dsl[4u * u] = d4.x, dsl[4u * u + 1u] = d4.y, dsl[4u * u + 2u] = d4.z, dsl[4u * u + 3u] = d4.w;
            }
            const float skt = sks[t];
            pkA = __fmul_rn(qscA, skt), pkB = __fmul_rn(qscB, skt);
        }
        float xA = -INFINITY, xB = -INFINITY;
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) {
                const uint32_t kk = 8u * n + 2u * t + i % 2u, j = kbase + kk;
                const bool hi = i >= 2u;
                const bool vis = FULL || j < (hi ? nvB : nvA);
                /* float(dot): i2f_exact from level 1 (the same bits, [SAGE-DEV-13]) */
                const int32_t dot = sacc(4u * n + i);
                const float fd = V >= 1 ? i2f_exact(dot) : __int2float_rn(dot);
                const float v = V >= 4 ? __fmaf_rn(fd, hi ? pkB : pkA, dsl[2u * n + i % 2u])
                                       : __fmaf_rn(fd, __fmul_rn(hi ? qscB : qscA, sks[kk]), sds[kk]);
                sv[n][i] = v;
                if (V < 4 && vis) {
                    if (hi) xB = fmaxf(xB, v);
                    else xA = fmaxf(xA, v);
                }
            }
        if constexpr (V >= 4) {
            /* level 4: each row's maximum over its 16 visible scores as four chains of
             * four (keys of n and n + 4, n % 4 = c) and two levels joining them, in place
             * of one chain of 16 (-inf standing for an invisible score).  The set is the
             * same, so the maximum is, up to the sign of a zero maximum; m enters the
             * output only through ex2(s - m) and ex2(m_old - m_new), and a zero m gives the
             * same difference for a nonzero operand and +-0 (ex2 = 1) for a zero one: the
             * same bits [SAGE-DEV-13] */
            float cA0, cA1, cA2, cA3, cB0, cB1, cB2, cB3;
#pragma unroll
            for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
                for (uint32_t i = 0; i < 4u; i++) {
                    const uint32_t kk = 8u * n + 2u * t + i % 2u;
                    const bool hi = i >= 2u;
                    const bool vis = FULL || kbase + kk < (hi ? nvB : nvA);
                    const float x = vis ? sv[n][i] : -INFINITY;
                    float &c = hi ? (n % 4u == 0u ? cB0 : n % 4u == 1u ? cB1 : n % 4u == 2u ? cB2 : cB3)
                                  : (n % 4u == 0u ? cA0 : n % 4u == 1u ? cA1 : n % 4u == 2u ? cA2 : cA3);
                    c = (n < 4u && i % 2u == 0u) ? x : fmaxf(c, x);
                }
            xA = fmaxf(fmaxf(cA0, cA1), fmaxf(cA2, cA3));
            xB = fmaxf(fmaxf(cB0, cB1), fmaxf(cB2, cB3));
        }
        xA = fmaxf(xA, __shfl_xor_sync(0xFFFFFFFFu, xA, 1));
        xA = fmaxf(xA, __shfl_xor_sync(0xFFFFFFFFu, xA, 2));
        xB = fmaxf(xB, __shfl_xor_sync(0xFFFFFFFFu, xB, 1));
        xB = fmaxf(xB, __shfl_xor_sync(0xFFFFFFFFu, xB, 2));
        const bool seeA = FULL || kbase < nvA, seeB = FULL || kbase < nvB;
        const float nmA = seeA ? fmaxf(mA, xA) : mA, nmB = seeB ? fmaxf(mB, xB) : mB;
        alA = seeA ? ex2_approx(mA - nmA) : 1.0f, alB = seeB ? ex2_approx(mB - nmB) : 1.0f;
        mA = nmA, mB = nmB;

        /* P, and 448 P for its FP8 codes */
        float sumA = 0.0f, sumB = 0.0f;
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++) {
            float pv[4];
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) {
                const uint32_t kk = 8u * n + 2u * t + i % 2u;
                const bool hi = i >= 2u;
                const bool vis = FULL || kbase + kk < (hi ? nvB : nvA);
                pv[i] = vis ? ex2_approx(sv[n][i] - (hi ? mB : mA)) : 0.0f;
                /* level 4: the sum's first term as it is -- RN32(+0 + p) = p for every
                 * p ex2 gives (+0, positive, or NaN) and for the +0 of an invisible key */
                if (V >= 4 && n == 0u && i % 2u == 0u) {
                    if (hi) sumB = pv[i];
                    else sumA = pv[i];
                } else if (hi) sumB = __fadd_rn(sumB, pv[i]);
                else sumA = __fadd_rn(sumA, pv[i]);
            }
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) pf[n][i] = __fmul_rn(pv[i], 448.0f);
        }
        sumA = __fadd_rn(sumA, __shfl_xor_sync(0xFFFFFFFFu, sumA, 1));
        sumA = __fadd_rn(sumA, __shfl_xor_sync(0xFFFFFFFFu, sumA, 2));
        sumB = __fadd_rn(sumB, __shfl_xor_sync(0xFFFFFFFFu, sumB, 1));
        sumB = __fadd_rn(sumB, __shfl_xor_sync(0xFFFFFFFFu, sumB, 2));
        if (seeA) lA = __fadd_rn(__fmul_rn(lA, alA), sumA);
        if (seeB) lB = __fadd_rn(__fmul_rn(lB, alB), sumB);
    };
    /* P~'s FP8 codes into the A fragments (cA[n]: row A's keys 8n + 2t, + 1;
     * cB[n]: row B's): pa[h][0] row A positions 4t..4t+3, pa[h][1] row B,
     * pa[h][2] row A positions 16 + 4t.., pa[h][3] row B */
    auto pack = [&](const float (&pf)[8][4]) {
        uint32_t cA[8], cB[8];
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++) {
            cA[n] = e4m3x2(pf[n][0], pf[n][1]);
            cB[n] = e4m3x2(pf[n][2], pf[n][3]);
        }
#pragma unroll
        for (uint32_t h = 0; h < 2u; h++) {
            pa[h][0] = cA[4u * h] | (cA[4u * h + 1u] << 16);
            pa[h][1] = cB[4u * h] | (cB[4u * h + 1u] << 16);
            pa[h][2] = cA[4u * h + 2u] | (cA[4u * h + 3u] << 16);
            pa[h][3] = cB[4u * h + 2u] | (cB[4u * h + 3u] << 16);
        }
    };
    /* the rescale of acc and buf by the rows' alpha (block kb - 1's flush is
     * done).  From level 2 it is skipped when every alpha of the warp is 1
     * (no row maximum of the warp moved): a multiplication by 1 is exact, so
     * the bits are the same [SAGE-DEV-13]; the vote is the warp's, since a
     * thread rescales only its own rows' registers. */
    auto rescale = [&](float alA, float alB) {
        if constexpr (V >= 4) {
            /* level 4: a vote for each of the thread's two rows (rows g and g + 8 of the
             * warp's 16): the registers of row A are skipped when no alpha of the warp's
             * rows A moved, those of row B likewise; the test of F once */
            const bool mvA = __any_sync(0xFFFFFFFFu, alA != 1.0f), mvB = __any_sync(0xFFFFFFFFu, alB != 1.0f);
#pragma unroll
            for (uint32_t h = 0; h < 2u; h++) {
                if (!(h ? mvB : mvA)) continue;
                const float al = h ? alB : alA;
                if (F != 0u) {
#pragma unroll
                    for (uint32_t y = 0; y < 32u; y++) {              /* x % 4 in {2h, 2h + 1} */
                        const uint32_t x = 4u * (y / 2u) + 2u * h + y % 2u;
                        acc[x] = __fmul_rn(acc[x], al);
                        buf[x] = __fmul_rn(buf[x], al);
                    }
                } else {
#pragma unroll
                    for (uint32_t y = 0; y < 32u; y++) {
                        const uint32_t x = 4u * (y / 2u) + 2u * h + y % 2u;
                        acc[x] = __fmul_rn(acc[x], al);
                    }
                }
            }
            return;
        }
        if (V >= 2 && __all_sync(0xFFFFFFFFu, alA == 1.0f && alB == 1.0f)) return;
        {
#pragma unroll
            for (uint32_t x = 0; x < 64u; x++) {
                const float al = (x % 4u) >= 2u ? alB : alA;
                acc[x] = __fmul_rn(acc[x], al);
                if (F != 0u) buf[x] = __fmul_rn(buf[x], al);
            }
        }
    };

    /* the warpgroup's rows all see block kb whole: its first row sees it (rows
     * see prefixes that grow with the row) and its last row exists */
    const uint32_t nv0 = r0 < nq ? kvq_sage_attn_nvisible(&a, r0) : 0u;
    auto softmax_p = [&](uint32_t kb, float (&pf)[8][4], float &alA, float &alB) {
        if (r0 + FA_BW <= nq && (kb + 1u) * FA_BKV <= nv0) softmax_f(kb, cute::true_type{}, pf, alA, alB);
        else softmax_f(kb, cute::false_type{}, pf, alA, alB);
    };
    /* softmax, rescale and P~ in turn (levels 0..2, and the serial form) */
    auto softmax = [&](uint32_t kb) {
        float alA, alB, pf[8][4];
        softmax_p(kb, pf, alA, alB);
        rescale(alA, alB);
        pack(pf);
    };

    if (nbw > 0u) Bar::wait(&sm.bar_q, 0u);
    if (!PP) {
        /* serial: QK, wait, softmax, P~V, wait, flush, block after block */
        for (uint32_t kb = 0; kb < nbw; kb++) {
            const uint32_t s = kb % FA_STAGES, ph = (kb / FA_STAGES) & 1u;
            Bar::wait(&sm.full[s], ph);
            fence_all();
            warpgroup_arrive();
            issue_qk(kb);
            warpgroup_commit_batch();
            warpgroup_wait<0>();
            fence_all();
            PBar::wait(&sm.vfull[s], ph);
            softmax(kb);
            fence_all();
            warpgroup_arrive();
            issue_pv(kb);
            warpgroup_commit_batch();
            warpgroup_wait<0>();
            fence_all();
            PBar::arrive(&sm.empty[s]);
            flush(acc, buf, kb);
        }
        /* the tile's blocks past the warpgroup's: released once transposed */
        for (uint32_t kb = nbw; kb < nb; kb++) {
            const uint32_t s = kb % FA_STAGES, ph = (kb / FA_STAGES) & 1u;
            PBar::wait(&sm.vfull[s], ph);
            PBar::arrive(&sm.empty[s]);
        }
    } else {
        /* ping-pong: in step i a warpgroup waits for its turn (named barrier 1 +
         * its index), issues block i's QK and block i - 1's P~V in one batch,
         * hands the turn to the other warpgroup, waits for its batch, flushes
         * block i - 1 and computes block i's softmax -- under the other's
         * instructions.  The per-row order stays P~V(i - 1), flush(i - 1),
         * rescale(i), P~V(i).  Both warpgroups take the nb + 1 steps of the tile
         * (a step past a warpgroup's own blocks only passes the turn and
         * releases the stage); warpgroup 1 gives warpgroup 0 its first turn. */
        const uint32_t steps = nb + 1u;
        if (cw == 1u) cutlass::arch::NamedBarrier::arrive(256, 1u);
        auto pass = [&](uint32_t i) {
            if (cw == 0u || i + 1u < steps) cutlass::arch::NamedBarrier::arrive(256, 2u - cw);
        };
        auto release = [&](uint32_t i) {                      /* a block past the warpgroup's */
            if (i >= nbw && i < nb) {
                PBar::wait(&sm.vfull[i % FA_STAGES], (i / FA_STAGES) & 1u);
                PBar::arrive(&sm.empty[i % FA_STAGES]);
            }
        };
        /* one step with block i's QK (QK) and block i - 1's P~V (PV), both known
         * at compile time so that no wgmma sits on a divergent path.  STEADY: level 5's
         * steady step (0 < i < nbw), which neither releases a block nor tests the turn's
         * last step */
        auto step = [&](uint32_t i, auto QK, auto PV, auto STEADY) {
            [[maybe_unused]] constexpr bool steady = decltype(STEADY)::value;
            const uint32_t si = i % FA_STAGES, sm1 = (i - 1u) % FA_STAGES;
            const uint32_t pi = (i / FA_STAGES) & 1u, pm1 = ((i - 1u) / FA_STAGES) & 1u;
            if (decltype(QK)::value) Bar::wait(&sm.full[si], pi);
            if (decltype(PV)::value) PBar::wait(&sm.vfull[sm1], pm1);
            cutlass::arch::NamedBarrier::sync(256, 1u + cw);
            fence_all();
            warpgroup_arrive();
            if constexpr (V >= 3) {
                /* level 3, FlashAttention-3's in-warpgroup overlap: QK(i) and
                 * P~V(i - 1) as two batches; once QK(i) is done, block i's
                 * softmax runs under P~V(i - 1) (448 P kept as binary32: pa
                 * is P~V(i - 1)'s operand, still being read, and no register
                 * a wgmma reads is written before its wait); then P~V(i - 1)'s
                 * wait, flush(i - 1), rescale(i), P~(i)'s codes into pa -- per
                 * row the pinned order */
                if constexpr (decltype(QK)::value) {
                    issue_qk(i);
                    warpgroup_commit_batch();
                }
                if constexpr (decltype(PV)::value) {
                    warpgroup_arrive();
                    issue_pv(i - 1u);
                    warpgroup_commit_batch();
                }
                if constexpr (steady) cutlass::arch::NamedBarrier::arrive(256, 2u - cw);
                else pass(i);
                float pf[8][4];
                [[maybe_unused]] float alA = 1.0f, alB = 1.0f;
                /* KVQ_SAGE_FA3_ABLATE at levels 5 and 6 (timing builds, [SAGE-DEV-21]) */
                constexpr int abl = V >= 5 ? KVQ_SAGE_FA3_ABLATE : 0;
                if constexpr (decltype(QK)::value) {
                    if constexpr (decltype(PV)::value) warpgroup_wait<1>();
                    else warpgroup_wait<0>();
                    warpgroup_fence_operand(sacc);
                    PBar::wait(&sm.vfull[si], pi);   /* scales, dS */
                    if constexpr (abl == 1) {
#pragma unroll
                        for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
                            for (uint32_t x = 0; x < 4u; x++) pf[n][x] = i2f_exact(sacc(4u * n + x));
                    } else {
                        softmax_p(i, pf, alA, alB);
                    }
                }
                if constexpr (decltype(PV)::value) {
                    warpgroup_wait<0>();
                    fence_all();
                    PBar::arrive(&sm.empty[sm1]);
                    if constexpr (abl == 0) flush(acc, buf, i - 1u);
                }
                if constexpr (!steady) release(i);
                if constexpr (decltype(QK)::value) {
                    if constexpr (abl == 0) rescale(alA, alB);
                    pack(pf);
                }
                return;
            }
            if constexpr (decltype(QK)::value) issue_qk(i);
            if constexpr (decltype(PV)::value) issue_pv(i - 1u);
            warpgroup_commit_batch();
            pass(i);
            warpgroup_wait<0>();
            fence_all();
            if constexpr (decltype(PV)::value) {
                PBar::arrive(&sm.empty[(i - 1u) % FA_STAGES]);
                flush(acc, buf, i - 1u);
            }
            release(i);
            if constexpr (decltype(QK)::value) {
                PBar::wait(&sm.vfull[i % FA_STAGES], (i / FA_STAGES) & 1u);   /* scales, dS */
                softmax(i);
            }
        };
        uint32_t i = 0;
        if (nbw > 0u) {
            const cute::false_type general{};
            step(0u, cute::true_type{}, cute::false_type{}, general);
            i = 1u;
            /* level 5: the steady steps (0 < i < nbw) neither release a block nor test the
             * turn's last step */
            if constexpr (V >= 5)
                for (; i < nbw; i++) step(i, cute::true_type{}, cute::true_type{}, cute::true_type{});
            else
                for (; i < nbw; i++) step(i, cute::true_type{}, cute::true_type{}, general);
            step(nbw, cute::false_type{}, cute::true_type{}, general);
            i = nbw + 1u;
        }
        for (; i < steps; i++) {                              /* steps past the warpgroup's blocks */
            cutlass::arch::NamedBarrier::sync(256, 1u + cw);
            pass(i);
            release(i);
        }
    }

    /* o = RN32(RN32(buf vsc) / l); +0 for a row that sees no key */
    sage_out_rows<FA_D>(o, vs, acc, buf, F, t, rA, rB, nvA, nvB, lA, lB, nq);
#endif
}

/* ---- host ------------------------------------------------------------------------ */

extern "C" int kvq_sage_fa3_built(void) { return 1; }

extern "C" int kvq_sage_fa3_level_set(void)
{
    const char *e = getenv("KVQ_SAGE_FA3_LEVEL");
    return e != NULL && e[0] != '\0';
}

extern "C" int kvq_sage_fa3_level(void)
{
    const char *e = getenv("KVQ_SAGE_FA3_LEVEL");
    if (e == NULL || e[0] == '\0') return KVQ_SAGE_FA3_LEVEL_DEFAULT;
    if (e[1] == '\0' && e[0] >= '0' && e[0] <= '6') return e[0] - '0';
    return -1;
}

static bool fa3_serial(void)
{
    const char *ser = getenv("KVQ_SAGE_FA3_SERIAL");
    return ser != NULL && strcmp(ser, "1") == 0;
}

extern "C" int kvq_sage_fa3_vt_form(void) { return !fa3_serial() && kvq_sage_fa3_level() >= 3; }

/* Level 4's precondition [SAGE-DEV-13]: under K's map every key 8n + 2t + i (n < 8,
 * i < 2) of a 64-key block has the scale slot of the block's key 2t, so a lane's 16
 * keys share one K scale.  The map is periodic in the token with period lcm(64, b_k)
 * up to a shift of the slot; the first period is checked. */
extern "C" int kvq_sage_fa3_k_uniform(const kvq_sage_qk *kq)
{
    if (kq->block == 0u) return 0;
    uint32_t a = 64u, b = kq->block;
    while (b != 0u) {
        const uint32_t r = a % b;
        a = b, b = r;
    }
    const uint64_t period = (uint64_t)64u / a * kq->block;
    for (uint64_t j = 0; j < period; j++) {
        const uint32_t rep = (uint32_t)(j / 64u * 64u + 2u * ((j % 8u) / 2u));
        if (kvq_sage_scale_slot(kq, (uint32_t)j) != kvq_sage_scale_slot(kq, rep)) return 0;
    }
    return 1;
}

extern "C" kvq_status kvq_sage_fa3_launch(const kvq_sage_fa3_args *p, cudaStream_t stream)
{
    const kvq_sage_fa3_args &q = *p;
    const uint32_t nq = q.a.nq, nk = q.a.nk;
    if (q.a.qk_bits != 8u) return KVQ_E_PARAM;
    /* TMA: global addresses 16-byte aligned, strides multiples of 16 bytes */
    if (((uintptr_t)q.qc % 16u) != 0u || ((uintptr_t)q.kc % 16u) != 0u || ((uintptr_t)q.vc % 16u) != 0u)
        return KVQ_E_PARAM;
    const uint32_t qblocks = kvq_sage_blocks(nq, FA_BQ);
    const int smem = (int)sizeof(fa_smem);
    /* the ping-pong form, or (KVQ_SAGE_FA3_SERIAL=1 in the environment) the serial one;
     * the level (KVQ_SAGE_FA3_LEVEL, 0..6; unset, the default of the form, below; the
     * serial form takes at most 2) */
    const bool serial = fa3_serial();
    int level = kvq_sage_fa3_level();
    if (level < 0) return KVQ_E_PARAM;
    /* V~ from the quantizer [SAGE-DEV-15]: the ping-pong form at levels 3..6 loads it
     * as it is; every other form transposes V's codes itself.  Unset, the level is
     * KVQ_SAGE_FA3_LEVEL_DEFAULT_VT (6) given V~ and KVQ_SAGE_FA3_LEVEL_DEFAULT (3) not
     * ([SAGE-DEV-13]: level 4 measured faster given V~, slower transposing) */
    const bool vtq = q.vt != NULL && kvq_sage_fa3_vt_form();
    if (vtq && ((uintptr_t)q.vt % 16u) != 0u) return KVQ_E_PARAM;
    if (vtq && !kvq_sage_fa3_level_set()) level = KVQ_SAGE_FA3_LEVEL_DEFAULT_VT;
    /* levels 4 to 6 take one K scale a lane and block: refused when K's map does not give it */
    if (level >= 4 && !serial) {
        const kvq_sage_qk kq = kvq_sage_attn_qk(&q.a, KVQ_SAGE_ROLE_K);
        if (!kvq_sage_fa3_k_uniform(&kq)) return KVQ_E_PARAM;
    }
#ifdef KVQ_SAGE_FA3_PLANT
    constexpr bool plant = true;
#else
    constexpr bool plant = false;
#endif
    typedef void (*kern_t)(kvq_sage_fa3_args, TmaQT, TmaKT, TmaKT);
    static const kern_t kerns[2][7] = {
        {sage_fa3_kernel<plant, false, 0, false>, sage_fa3_kernel<plant, false, 1, false>,
         sage_fa3_kernel<plant, false, 2, false>, sage_fa3_kernel<plant, false, 2, false>,
         sage_fa3_kernel<plant, false, 2, false>, sage_fa3_kernel<plant, false, 2, false>,
         sage_fa3_kernel<plant, false, 2, false>},
        {sage_fa3_kernel<plant, true, 0, false>, sage_fa3_kernel<plant, true, 1, false>,
         sage_fa3_kernel<plant, true, 2, false>, sage_fa3_kernel<plant, true, 3, false>,
         sage_fa3_kernel<plant, true, 4, false>, sage_fa3_kernel<plant, true, 5, false>,
         sage_fa3_kernel<plant, true, 6, false>}};
    const kern_t kern = vtq ? (level >= 6   ? sage_fa3_kernel<plant, true, 6, true>
                               : level == 5 ? sage_fa3_kernel<plant, true, 5, true>
                               : level == 4 ? sage_fa3_kernel<plant, true, 4, true>
                                            : sage_fa3_kernel<plant, true, 3, true>)
                            : kerns[serial ? 0 : 1][level];
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_DEVICE;
    }
    for (uint32_t h0 = 0; h0 < p->heads; h0 += 65535u) {      /* grid.y holds at most 65535 heads */
        const uint32_t hn = p->heads - h0 < 65535u ? p->heads - h0 : 65535u;
        kvq_sage_fa3_args r = q;
        r.head0 = 0u;
        r.heads = hn;
        /* K and V by KV head [SAGE-DEV-17]: the part's first KV head and its count */
        const uint32_t grp = q.group > 1u ? q.group : 1u, g0 = h0 / grp, gofs = h0 % grp;
        const uint32_t gn = (hn - 1u + gofs) / grp + 1u;
        r.group = grp, r.gofs = gofs, r.kv_heads = gn;
        r.qc = q.qc + (uint64_t)h0 * q.qc_head;
        r.kc = q.kc + (uint64_t)g0 * q.kc_head;
        r.vc = q.vc + (uint64_t)g0 * nk * FA_D;
        r.vt = vtq ? q.vt + (uint64_t)g0 * kvq_sage_blocks(nk, FA_BKV) * VT_BYTES : NULL;
        r.qs = q.qs + (uint64_t)h0 * q.qs_head;
        r.ks = q.ks + (uint64_t)g0 * q.ks_head;
        r.ds = q.ds + (uint64_t)h0 * q.ds_head;
        r.vs = q.vs + (uint64_t)g0 * FA_D;
        r.o = q.o + (uint64_t)h0 * nq * FA_D;
        Tensor gQ = make_tensor(make_gmem_ptr((const int8_t *)r.qc), make_shape((int)nq, (int)FA_D, (int)hn),
                                make_stride((int)FA_D, _1{}, (int)q.qc_head));
        Tensor gK = make_tensor(make_gmem_ptr((const int8_t *)r.kc), make_shape((int)nk, (int)FA_D, (int)gn),
                                make_stride((int)FA_D, _1{}, (int)q.kc_head));
        Tensor gV = make_tensor(make_gmem_ptr((const int8_t *)r.vc), make_shape((int)nk, (int)FA_D, (int)gn),
                                make_stride((int)FA_D, _1{}, (int)(nk * FA_D)));
        TmaQT tq = make_tma_copy(SM90_TMA_LOAD{}, gQ, SmemQ{}(_, _, 0));
        TmaKT tk = make_tma_copy(SM90_TMA_LOAD{}, gK, SmemK{}(_, _, 0));
        TmaKT tv = make_tma_copy(SM90_TMA_LOAD{}, gV, SmemK{}(_, _, 0));
        kern<<<dim3(qblocks, hn), FA_THREADS, smem, stream>>>(r, tq, tk, tv);
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

#endif
