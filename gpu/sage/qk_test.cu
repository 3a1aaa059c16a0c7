/*
 * qk_test.cu -- the QK stage of the SAGE core on Hopper's INT8 wgmma, built on
 * CuTe (TMA loads, one warpgroup), judged bit for bit and timed side by side
 * against the current core's QK loop.
 *
 * SPEC: [SAGE-DEV-11] [SAGE-ATT-03]
 *
 * The stage: for query row i of head h and key j, the score
 *   s = fma((float)dot_ij, RN32(qsc_i sk_j), ds[i / 128][j])   [SAGE-ATT-03]
 * with dot_ij the exact int32 dot of the 128 INT8 codes, qsc_i the row's scale
 * times tau2 (given here), sk_j the key's scale and ds the score correction.
 *
 *   loop   the current core's QK loop (gpu/sage/sage_attn.cu): one warpgroup,
 *          64 rows, Q fragments in registers, key blocks of 64 by cp.async
 *          (double-buffered, rows padded to 144 bytes), mma.sync m16n8k32
 *          .s32.s8.s8
 *   cute   CuTe: Q (64 x 128 codes) and key blocks of 64 by TMA (SM90_TMA_LOAD,
 *          128-byte swizzle, two stages on mbarriers), wgmma m64n64k32
 *          .s32.s8.s8 (SM90_64x64x32_S32S8S8_SS_TN, four k blocks a key block,
 *          both operands in shared memory), the accumulator's (row, key) from
 *          partition_C of an identity tensor
 *
 * Both write every score (the check) or each row's largest score over its
 * keys (the timing: what the softmax needs next, so the timing is of the QK
 * loop and not of writing nq x nk floats), or the dots alone (each row's XOR
 * of its int32 dots: the timing of the instructions without the scores'
 * epilogue; loop and cute must give the same hashes).  The check: random INT8 codes
 * (uniform, and the extremes -128, -127, 127), random positive scales and
 * signed corrections, shapes with partial blocks; every score of both
 * kernels against the host's (the exact integer dot, the same fmaf), and
 * the row maxima against the host's.  A planted bug (--plant: the cute
 * kernel drops its last k block) must fail the check.  The timing: the
 * median of the repetitions of each kernel and of a device-to-device copy of
 * the bytes the kernels read (codes, scales, corrections), side by side.
 *
 * usage: kvq_sage_qk_test [--pp] [--plant] [--heads H] [--n N] [--reps R] [--commit TEXT]
 * --pp: the cute kernel with two accumulators (block kb + 1's wgmma in flight
 * while block kb's scores are computed) instead of one.
 * Exit status: 0 when every score matches (with --plant: when the check
 * FAILS, as it must); 1 otherwise; 2 on a usage or CUDA error; 77 without
 * an sm_90 device (SKIPPED, not a pass).
 */
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/device_kernel.h>
#include <cutlass/version.h>

#include <algorithm>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#if CUTLASS_MAJOR != 4 || CUTLASS_MINOR != 2
#error "qk_test.cu is written against CUTLASS 4.2 (PyPI nvidia-cutlass 4.2.0.0, ci/setup.sh)"
#endif

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "qk-test: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,     \
                    cudaGetErrorString(e_));                                        \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

using namespace cute;

#define D 128u
#define BQ 64u
#define BKV 64u
#define BDS 128u                          /* rows a dS row serves (KVQ_SAGE_ATTN_BQ) */
#define KROW 144u

struct qk_args {
    uint32_t nq, nk;
    const int8_t *q, *k;                   /* [H][nq][128], [H][nk][128] */
    const float *qsc, *ksc, *ds;           /* [H][nq], [H][nk], [H][ceil(nq / 128)][nk] */
    float *s;                              /* [H][nq][nk] (MODE_S) */
    float *rmax;                           /* [H][nq] (MODE_MAX; MODE_DOT: the rows' dot hashes) */
};

#define MODE_S 0u                         /* every score */
#define MODE_MAX 1u                       /* each row's largest score */
#define MODE_DOT 2u                       /* the QK dots alone: each row's XOR of its int32 dots */

/* The XOR of a thread's row hashes over the 4 lanes that share the row. */
__device__ __forceinline__ void write_hash(const qk_args &a, uint32_t head, uint32_t row, uint32_t x)
{
    x ^= __shfl_xor_sync(0xFFFFFFFFu, x, 1);
    x ^= __shfl_xor_sync(0xFFFFFFFFu, x, 2);
    if (threadIdx.x % 4u == 0u && row < a.nq) reinterpret_cast<uint32_t *>(a.rmax)[(uint64_t)head * a.nq + row] = x;
}

__device__ __forceinline__ float score(int32_t dot, float qsc, float ksc, float ds)
{
    return __fmaf_rn(__int2float_rn(dot), __fmul_rn(qsc, ksc), ds);
}

/* The row maxima of a thread's two rows (rows r, r + 8 of its warp's 16),
 * reduced over the 4 lanes that share them; written by lane t == 0. */
__device__ __forceinline__ void write_max(const qk_args &a, uint32_t head, uint32_t row, float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, 1));
    x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, 2));
    if (threadIdx.x % 4u == 0u && row < a.nq) a.rmax[(uint64_t)head * a.nq + row] = x;
}

/* ---- loop: the current core's QK ------------------------------------------------ */

__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void mma_s8(int32_t *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <uint32_t MODE>
__global__ void __launch_bounds__(128) qk_loop_kernel(const qk_args a)
{
    __shared__ __align__(128) uint8_t sk[2][BKV * KROW];
    const uint32_t tid = threadIdx.x, w = tid / 32u, lane = tid % 32u, g = lane / 4u, t = lane % 4u;
    const uint32_t head = blockIdx.y, q0 = blockIdx.x * BQ, nq = a.nq, nk = a.nk;
    const int8_t *qc = a.q + (uint64_t)head * nq * D, *kc = a.k + (uint64_t)head * nk * D;
    const uint32_t rA = q0 + 16u * w + g, rB = rA + 8u;
    const uint32_t nb = (nk + BKV - 1u) / BKV;
    auto load = [&](uint32_t kb, uint32_t st) {
        for (uint32_t e = tid; e < BKV * 8u; e += 128u) {
            const uint32_t key = e / 8u, ch = e % 8u, j = kb * BKV + key;
            const bool ok = j < nk;
            cp_async16(&sk[st][key * KROW + ch * 16u], kc + (uint64_t)(ok ? j : 0u) * D + ch * 16u, ok);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    load(0u, 0u);
    uint32_t qa[4][4];
#pragma unroll
    for (uint32_t s = 0; s < 4u; s++)
#pragma unroll
        for (uint32_t r = 0; r < 4u; r++) {
            const uint32_t row = (r % 2u) ? rB : rA, c0 = 32u * s + 16u * (r / 2u) + 4u * t;
            qa[s][r] = row < nq ? *(const uint32_t *)(qc + (uint64_t)row * D + c0) : 0u;
        }
    const float qA = rA < nq ? a.qsc[(uint64_t)head * nq + rA] : 0.0f;
    const float qB = rB < nq ? a.qsc[(uint64_t)head * nq + rB] : 0.0f;
    const float *dsA = a.ds + ((uint64_t)head * ((nq + BDS - 1u) / BDS) + (rA < nq ? rA : 0u) / BDS) * nk;
    const float *dsB = a.ds + ((uint64_t)head * ((nq + BDS - 1u) / BDS) + (rB < nq ? rB : 0u) / BDS) * nk;
    const float *ks = a.ksc + (uint64_t)head * nk;
    float xA = -INFINITY, xB = -INFINITY;
    uint32_t hA = 0u, hB = 0u;
    for (uint32_t kb = 0; kb < nb; kb++) {
        const uint32_t st = kb & 1u;
        if (kb + 1u < nb) load(kb + 1u, st ^ 1u);
        else asm volatile("cp.async.commit_group;\n" ::: "memory");
        asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        __syncthreads();
        int32_t sc[8][4];
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0;
#pragma unroll
        for (uint32_t s = 0; s < 4u; s++)
#pragma unroll
            for (uint32_t n = 0; n < 8u; n++) {
                const uint8_t *kr = &sk[st][(8u * n + g) * KROW + 32u * s + 4u * t];
                mma_s8(sc[n], qa[s], *(const uint32_t *)kr, *(const uint32_t *)(kr + 16u));
            }
#pragma unroll
        for (uint32_t n = 0; n < 8u; n++)
#pragma unroll
            for (uint32_t i = 0; i < 4u; i++) {
                if (MODE == MODE_DOT) {                       /* keys past nk: zero codes, dot 0 */
                    if (i >= 2u) hB ^= (uint32_t)sc[n][i];
                    else hA ^= (uint32_t)sc[n][i];
                    continue;
                }
                const uint32_t j = kb * BKV + 8u * n + 2u * t + i % 2u, row = i >= 2u ? rB : rA;
                if (j >= nk || row >= nq) continue;
                const float v = score(sc[n][i], i >= 2u ? qB : qA, __ldg(ks + j), __ldg((i >= 2u ? dsB : dsA) + j));
                if (MODE == MODE_MAX) {
                    if (i >= 2u) xB = fmaxf(xB, v);
                    else xA = fmaxf(xA, v);
                } else a.s[((uint64_t)head * nq + row) * nk + j] = v;
            }
        __syncthreads();                                      /* stage st free for block kb + 2 */
    }
    if (MODE == MODE_MAX) {
        write_max(a, head, rA, xA);
        write_max(a, head, rB, xB);
    }
    if (MODE == MODE_DOT) {
        write_hash(a, head, rA, hA);
        write_hash(a, head, rB, hB);
    }
}

/* ---- cute: TMA + wgmma --------------------------------------------------------- */

#define KST 4u                            /* key-block stages in shared memory */

using SmemQ = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<int8_t>{}, make_shape(Int<BQ>{}, Int<D>{}, Int<1>{})));
using SmemK = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<int8_t>{}, make_shape(Int<BKV>{}, Int<D>{}, Int<KST>{})));
using QkMma = decltype(make_tiled_mma(SM90::GMMA::MMA_64x64x32_S32S8S8_SS_TN{}));

struct qk_smem {
    alignas(1024) cute::ArrayEngine<int8_t, cosize_v<SmemQ>> q;
    alignas(1024) cute::ArrayEngine<int8_t, cosize_v<SmemK>> k;
    alignas(8) uint64_t bar_q, bar_k[KST];
};

/* PP: two accumulators, block kb + 1's wgmma in flight while block kb's
 * scores are computed; otherwise one, each block's wgmma waited for before
 * its scores.  PLANT: the last k block left out (a planted bug). */
template <uint32_t MODE, bool PLANT, bool PP, class TmaQ, class TmaK>
__global__ void __launch_bounds__(128) qk_cute_kernel(const qk_args a, CUTLASS_GRID_CONSTANT TmaQ const tma_q,
                                                      CUTLASS_GRID_CONSTANT TmaK const tma_k, uint32_t heads)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) uint8_t smraw[];
    qk_smem &sm = *reinterpret_cast<qk_smem *>(smraw);
    const uint32_t tid = threadIdx.x, head = blockIdx.y, q0 = blockIdx.x * BQ, nq = a.nq, nk = a.nk;
    using Bar = cutlass::arch::ClusterTransactionBarrier;
    Tensor mQ = tma_q.get_tma_tensor(make_shape((int)nq, (int)D, (int)heads));
    Tensor mK = tma_k.get_tma_tensor(make_shape((int)nk, (int)D, (int)heads));
    Tensor gQ = local_tile(mQ(_, _, head), make_shape(Int<BQ>{}, Int<D>{}), make_coord(_, 0));   /* (64,128,nqb) */
    Tensor gK = local_tile(mK(_, _, head), make_shape(Int<BKV>{}, Int<D>{}), make_coord(_, 0));  /* (64,128,nkb) */
    Tensor sQ = make_tensor(make_smem_ptr(sm.q.begin()), SmemQ{});
    Tensor sK = make_tensor(make_smem_ptr(sm.k.begin()), SmemK{});
    auto [tQg, tQs] = tma_partition(tma_q, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
    auto [tKg, tKs] = tma_partition(tma_k, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
    constexpr int q_bytes = BQ * D, k_bytes = BKV * D;
    const uint32_t nb = (nk + BKV - 1u) / BKV;
    if (tid == 0u) {
        Bar::init(&sm.bar_q, 1);
        for (uint32_t st = 0; st < KST; st++) Bar::init(&sm.bar_k[st], 1);
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();
    if (tid == 0u) {
        Bar::arrive_and_expect_tx(&sm.bar_q, q_bytes);
        copy(tma_q.with(sm.bar_q), tQg(_, blockIdx.x), tQs(_, 0));
        for (uint32_t st = 0; st < KST && st < nb; st++) {
            Bar::arrive_and_expect_tx(&sm.bar_k[st], k_bytes);
            copy(tma_k.with(sm.bar_k[st]), tKg(_, st), tKs(_, st));
        }
    }
    QkMma mma;
    ThrMMA thr = mma.get_slice(tid);
    Tensor tCrA = thr.make_fragment_A(thr.partition_A(sQ));   /* (MMA, 1, 4, 1) descriptors */
    Tensor tCrB = thr.make_fragment_B(thr.partition_B(sK));   /* (MMA, 1, 4, KST) */
    Tensor cS = make_identity_tensor(make_shape(Int<BQ>{}, Int<BKV>{}));
    Tensor tCcS = thr.partition_C(cS);
    Tensor acc0 = partition_fragment_C(mma, make_shape(Int<BQ>{}, Int<BKV>{}));  /* int32 */
    Tensor acc1 = partition_fragment_C(mma, make_shape(Int<BQ>{}, Int<BKV>{}));
    /* the thread's rows: two (16 w + l / 4 and + 8), as the fragment says */
    const uint32_t rA = q0 + (uint32_t)get<0>(tCcS(0)), rB = q0 + (uint32_t)get<0>(tCcS(2));
    const float qA = rA < nq ? a.qsc[(uint64_t)head * nq + rA] : 0.0f;
    const float qB = rB < nq ? a.qsc[(uint64_t)head * nq + rB] : 0.0f;
    const uint64_t dsh = (uint64_t)head * ((nq + BDS - 1u) / BDS);
    const float *ks = a.ksc + (uint64_t)head * nk;
    float xA = -INFINITY, xB = -INFINITY;
    uint32_t hA = 0u, hB = 0u;
    /* block kb's four wgmma into acc, one batch */
    auto issue = [&](auto &acc, uint32_t kb) {
        const uint32_t st = kb % KST;
        Bar::wait(&sm.bar_k[st], (kb / KST) & 1u);
        mma.accumulate_ = GMMA::ScaleOut::Zero;
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = 0; k < (PLANT ? 3 : 4); k++) {
            cute::gemm(mma, tCrA(_, _, k, 0), tCrB(_, _, k, st), acc);
            mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
    };
    /* block kb's wgmma done (the caller waited): its stage refilled with block
     * kb + KST, then its scores */
    auto consume = [&](auto &acc, uint32_t kb) {
        warpgroup_fence_operand(acc);
        __syncthreads();                                      /* every warp's part has read the stage */
        if (tid == 0u && kb + KST < nb) {
            Bar::arrive_and_expect_tx(&sm.bar_k[kb % KST], k_bytes);
            copy(tma_k.with(sm.bar_k[kb % KST]), tKg(_, kb + KST), tKs(_, kb % KST));
        }
        CUTE_UNROLL
        for (int i = 0; i < size(acc); i++) {
            if (MODE == MODE_DOT) {                           /* keys past nk: TMA's zero fill, dot 0 */
                if (i % 4 >= 2) hB ^= (uint32_t)acc(i);       /* elements 2, 3 of 4: row + 8 */
                else hA ^= (uint32_t)acc(i);
                continue;
            }
            const uint32_t row = q0 + (uint32_t)get<0>(tCcS(i)), j = kb * BKV + (uint32_t)get<1>(tCcS(i));
            if (j >= nk || row >= nq) continue;
            const bool hi = row == rB;
            const float v = score(acc(i), hi ? qB : qA, __ldg(ks + j), __ldg(a.ds + (dsh + row / BDS) * nk + j));
            if (MODE == MODE_MAX) {
                if (hi) xB = fmaxf(xB, v);
                else xA = fmaxf(xA, v);
            } else a.s[((uint64_t)head * nq + row) * nk + j] = v;
        }
    };
    clear(acc0);                                              /* defined before the first wgmma */
    clear(acc1);
    Bar::wait(&sm.bar_q, 0);
    if (!PP) {
        for (uint32_t kb = 0; kb < nb; kb++) {
            issue(acc0, kb);
            warpgroup_wait<0>();
            consume(acc0, kb);
        }
    } else {
        /* steady state without branches around the waits: blocks kb, kb + 1, kb + 2 exist */
        uint32_t kb = 0;
        issue(acc0, 0u);
        for (; kb + 2u < nb; kb += 2u) {
            issue(acc1, kb + 1u);
            warpgroup_wait<1>();                              /* block kb's batch done */
            consume(acc0, kb);
            issue(acc0, kb + 2u);
            warpgroup_wait<1>();
            consume(acc1, kb + 1u);
        }
        if (kb + 1u < nb) {
            issue(acc1, kb + 1u);
            warpgroup_wait<1>();
            consume(acc0, kb);
            warpgroup_wait<0>();
            consume(acc1, kb + 1u);
        } else {
            warpgroup_wait<0>();
            consume(acc0, kb);
        }
    }
    if (MODE == MODE_MAX) {
        write_max(a, head, rA, xA);
        write_max(a, head, rB, xB);
    }
    if (MODE == MODE_DOT) {
        write_hash(a, head, rA, hA);
        write_hash(a, head, rB, hB);
    }
#endif
}

/* ---- host ----------------------------------------------------------------------- */

struct qk_launch {
    uint32_t heads;
    qk_args a;
    size_t smem;
    void *tq, *tk;                                            /* the TMA descriptors, by type below */
};

using TmaQT = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                     make_tensor(make_gmem_ptr((const int8_t *)nullptr),
                                                 make_shape(1, (int)D, 1), make_stride((int)D, _1{}, 1)),
                                     SmemQ{}(_, _, 0)));
using TmaKT = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                     make_tensor(make_gmem_ptr((const int8_t *)nullptr),
                                                 make_shape(1, (int)D, 1), make_stride((int)D, _1{}, 1)),
                                     SmemK{}(_, _, 0)));

static void run_cute(const qk_args &a, uint32_t heads, uint32_t mode, bool plant, bool pp)
{
    Tensor gQ = make_tensor(make_gmem_ptr(a.q), make_shape((int)a.nq, (int)D, (int)heads),
                            make_stride((int)D, _1{}, (int)(a.nq * D)));
    Tensor gK = make_tensor(make_gmem_ptr(a.k), make_shape((int)a.nk, (int)D, (int)heads),
                            make_stride((int)D, _1{}, (int)(a.nk * D)));
    TmaQT tq = make_tma_copy(SM90_TMA_LOAD{}, gQ, SmemQ{}(_, _, 0));
    TmaKT tk = make_tma_copy(SM90_TMA_LOAD{}, gK, SmemK{}(_, _, 0));
    const dim3 grid((a.nq + BQ - 1u) / BQ, heads);
    const int smem = (int)sizeof(qk_smem);
    auto launch = [&](auto kern) {
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        kern<<<grid, 128, smem>>>(a, tq, tk, heads);
    };
    if (pp) {
        if (mode == MODE_MAX) launch(qk_cute_kernel<MODE_MAX, false, true, TmaQT, TmaKT>);
        else if (mode == MODE_DOT) launch(qk_cute_kernel<MODE_DOT, false, true, TmaQT, TmaKT>);
        else if (plant) launch(qk_cute_kernel<MODE_S, true, true, TmaQT, TmaKT>);
        else launch(qk_cute_kernel<MODE_S, false, true, TmaQT, TmaKT>);
    } else {
        if (mode == MODE_MAX) launch(qk_cute_kernel<MODE_MAX, false, false, TmaQT, TmaKT>);
        else if (mode == MODE_DOT) launch(qk_cute_kernel<MODE_DOT, false, false, TmaQT, TmaKT>);
        else if (plant) launch(qk_cute_kernel<MODE_S, true, false, TmaQT, TmaKT>);
        else launch(qk_cute_kernel<MODE_S, false, false, TmaQT, TmaKT>);
    }
    CK(cudaGetLastError());
}

static void run_loop(const qk_args &a, uint32_t heads, uint32_t mode)
{
    const dim3 grid((a.nq + BQ - 1u) / BQ, heads);
    if (mode == MODE_MAX) qk_loop_kernel<MODE_MAX><<<grid, 128>>>(a);
    else if (mode == MODE_DOT) qk_loop_kernel<MODE_DOT><<<grid, 128>>>(a);
    else qk_loop_kernel<MODE_S><<<grid, 128>>>(a);
    CK(cudaGetLastError());
}

static uint64_t rng(uint64_t &s)
{
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct host_case {
    uint32_t heads, nq, nk, extremes;
    std::vector<int8_t> q, k;
    std::vector<float> qsc, ksc, ds;
};

static void make_case(host_case &c, uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t nqb = (c.nq + BDS - 1u) / BDS;
    c.q.resize((size_t)c.heads * c.nq * D), c.k.resize((size_t)c.heads * c.nk * D);
    static const int8_t ext[4] = {-128, -127, 127, 127};
    for (auto &x : c.q) x = c.extremes ? ext[rng(s) % 4u] : (int8_t)(uint8_t)rng(s);
    for (auto &x : c.k) x = c.extremes ? ext[rng(s) % 4u] : (int8_t)(uint8_t)rng(s);
    auto pos = [&](void) {                                    /* 2^-20 .. 2^-4, 24 random bits */
        const uint32_t e = 127u - 20u + (uint32_t)(rng(s) % 17u);
        const uint32_t u = (e << 23) | (uint32_t)(rng(s) & 0x7FFFFFu);
        float f;
        memcpy(&f, &u, 4);
        return f;
    };
    c.qsc.resize((size_t)c.heads * c.nq), c.ksc.resize((size_t)c.heads * c.nk);
    c.ds.resize((size_t)c.heads * nqb * c.nk);
    for (auto &x : c.qsc) x = pos();
    for (auto &x : c.ksc) x = pos();
    for (auto &x : c.ds) x = (rng(s) & 1u ? -1.0f : 1.0f) * pos() * 4096.0f;
}

struct dev_case {
    qk_args a;
    size_t bytes_in;
};

static void upload(const host_case &c, dev_case &d, bool scores)
{
    int8_t *q, *k;
    float *qs, *ks, *ds, *s = NULL, *mx;
    CK(cudaMalloc(&q, c.q.size()));
    CK(cudaMalloc(&k, c.k.size()));
    CK(cudaMalloc(&qs, c.qsc.size() * 4u));
    CK(cudaMalloc(&ks, c.ksc.size() * 4u));
    CK(cudaMalloc(&ds, c.ds.size() * 4u));
    if (scores) CK(cudaMalloc(&s, (size_t)c.heads * c.nq * c.nk * 4u));
    CK(cudaMalloc(&mx, (size_t)c.heads * c.nq * 4u));
    CK(cudaMemcpy(q, c.q.data(), c.q.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(k, c.k.data(), c.k.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(qs, c.qsc.data(), c.qsc.size() * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ks, c.ksc.data(), c.ksc.size() * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, c.ds.data(), c.ds.size() * 4u, cudaMemcpyHostToDevice));
    d.a = {c.nq, c.nk, q, k, qs, ks, ds, s, mx};
    d.bytes_in = c.q.size() + c.k.size() + 4u * (c.qsc.size() + c.ksc.size() + c.ds.size());
}

static void release(dev_case &d)
{
    cudaFree((void *)d.a.q), cudaFree((void *)d.a.k), cudaFree((void *)d.a.qsc), cudaFree((void *)d.a.ksc);
    cudaFree((void *)d.a.ds), cudaFree(d.a.s), cudaFree(d.a.rmax);
}

/* Every score and row maximum of one kernel against the host's; returns the
 * mismatches (the first few printed). */
static uint64_t judge(const host_case &c, const dev_case &d, const char *who, const char *what)
{
    const uint32_t nqb = (c.nq + BDS - 1u) / BDS;
    std::vector<float> s((size_t)c.heads * c.nq * c.nk), mx((size_t)c.heads * c.nq);
    CK(cudaMemcpy(s.data(), d.a.s, s.size() * 4u, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(mx.data(), d.a.rmax, mx.size() * 4u, cudaMemcpyDeviceToHost));
    uint64_t bad = 0, badmax = 0;
    for (uint32_t h = 0; h < c.heads; h++)
        for (uint32_t i = 0; i < c.nq; i++) {
            float m = -INFINITY;
            for (uint32_t j = 0; j < c.nk; j++) {
                int32_t dot = 0;
                const int8_t *qr = &c.q[((size_t)h * c.nq + i) * D], *kr = &c.k[((size_t)h * c.nk + j) * D];
                for (uint32_t x = 0; x < D; x++) dot += (int32_t)qr[x] * kr[x];
                const float qk = c.qsc[(size_t)h * c.nq + i] * c.ksc[(size_t)h * c.nk + j];
                const float r = fmaf((float)dot, qk, c.ds[((size_t)h * nqb + i / BDS) * c.nk + j]);
                m = fmaxf(m, r);
                const float v = s[((size_t)h * c.nq + i) * c.nk + j];
                if (memcmp(&r, &v, 4) != 0 && bad++ < 4u)
                    printf("  %s %s: head %u row %u key %u: device %a (0x%08x), host %a\n", who, what, h, i, j, v,
                           *(const uint32_t *)&v, r);
            }
            const float v = mx[(size_t)h * c.nq + i];
            if (memcmp(&m, &v, 4) != 0 && badmax++ < 4u)
                printf("  %s %s: head %u row %u: device row max %a, host %a\n", who, what, h, i, v, m);
        }
    printf("%s %s: %llu of %llu scores differ, %llu of %llu row maxima\n", who, what, (unsigned long long)bad,
           (unsigned long long)s.size(), (unsigned long long)badmax, (unsigned long long)mx.size());
    return bad + badmax;
}

static float median_ms(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2u];
}

int main(int argc, char **argv)
{
    int plant = 0, pp = 0;
    uint32_t heads = 8u, n = 8192u, reps = 15u;
    const char *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plant")) plant = 1;
        else if (!strcmp(argv[i], "--pp")) pp = 1;
        else if (!strcmp(argv[i], "--heads") && i + 1 < argc) heads = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else {
            fprintf(stderr, "qk-test: argument %d (%s): not understood\n"
                            "usage: kvq_sage_qk_test [--pp] [--plant] [--heads H] [--n N] [--reps R] [--commit TEXT]\n",
                    i, argv[i]);
            return 2;
        }
    }
    if (heads < 1u || heads > 64u || n < 64u || n > 65536u || reps < 3u || reps > 1000u) {
        fprintf(stderr, "qk-test: --heads 1..64, --n 64..65536, --reps 3..1000\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("qk-test: SKIPPED (no CUDA device)\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9) {
        printf("qk-test: SKIPPED (%s is sm_%d%d; the kernels are sm_90a)\n", prop.name, prop.major, prop.minor);
        return 77;
    }
    const char *cname = pp ? "cute-pp" : "cute";
    printf("# qk-test%s%s: device %s, commit %s, CUTLASS %d.%d.%d\n", pp ? " --pp" : "",
           plant ? " --plant (must FAIL)" : "", prop.name, commit, CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH);
    /* the check: partial blocks in both directions, uniform and extreme codes */
    const uint32_t shapes[][4] = {{2u, 200u, 333u, 0u}, {1u, 64u, 64u, 1u}, {3u, 130u, 1000u, 1u}, {1u, 1u, 65u, 0u}};
    uint64_t bad_loop = 0, bad_cute = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        host_case c;
        c.heads = shapes[si][0], c.nq = shapes[si][1], c.nk = shapes[si][2], c.extremes = shapes[si][3];
        make_case(c, 0x6b76712d716b3031ull + si);
        dev_case d;
        upload(c, d, true);
        char what[96];
        snprintf(what, sizeof what, "heads %u nq %u nk %u %s", c.heads, c.nq, c.nk, c.extremes ? "extremes" : "uniform");
        if (!plant) {
            CK(cudaMemset(d.a.s, 0xFF, (size_t)c.heads * c.nq * c.nk * 4u));  /* NaN: an unwritten score differs */
            CK(cudaMemset(d.a.rmax, 0xFF, (size_t)c.heads * c.nq * 4u));
            run_loop(d.a, c.heads, MODE_S);
            run_loop(d.a, c.heads, MODE_MAX);
            CK(cudaDeviceSynchronize());
            bad_loop += judge(c, d, "loop", what);
        }
        CK(cudaMemset(d.a.s, 0xFF, (size_t)c.heads * c.nq * c.nk * 4u));  /* NaN: an unwritten score differs */
        CK(cudaMemset(d.a.rmax, 0xFF, (size_t)c.heads * c.nq * 4u));
        run_cute(d.a, c.heads, MODE_S, plant, pp);
        run_cute(d.a, c.heads, MODE_MAX, false, pp);
        CK(cudaDeviceSynchronize());
        bad_cute += judge(c, d, plant ? (pp ? "cute-pp-planted" : "cute-planted") : cname, what);
        release(d);
    }
    if (plant) {
        const int failed = bad_cute != 0u;
        printf("qk-test --plant: the planted bug %s (%llu mismatches)\n", failed ? "FAILS the check, as it must"
                                                                                 : "PASSES the check: the check is blind",
               (unsigned long long)bad_cute);
        return failed ? 0 : 1;
    }
    printf("qk-test check: loop %s, %s %s\n", bad_loop ? "FAILED" : "PASS", cname, bad_cute ? "FAILED" : "PASS");
    /* the timing: row maxima, N x N a head, side by side with a copy of the inputs */
    host_case c;
    c.heads = heads, c.nq = n, c.nk = n, c.extremes = 0u;
    make_case(c, 0x6b76712d716b7431ull);
    dev_case d;
    upload(c, d, false);
    void *cp_src, *cp_dst;
    CK(cudaMalloc(&cp_src, d.bytes_in));
    CK(cudaMalloc(&cp_dst, d.bytes_in));
    CK(cudaMemset(cp_src, 0, d.bytes_in));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* row maxima (the scores' epilogue included), then the dots alone (each row's XOR) */
    uint64_t bad_time = 0;
    for (uint32_t mode : {MODE_MAX, MODE_DOT}) {
        std::vector<float> tl, tc, tcp;
        std::vector<uint32_t> m_loop((size_t)heads * n), m_cute((size_t)heads * n);
        for (uint32_t r = 0; r < reps + 1u; r++) {             /* the first round warms up */
            float ms;
            CK(cudaEventRecord(e0));
            run_loop(d.a, heads, mode);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r) tl.push_back(ms);
            if (r == reps) CK(cudaMemcpy(m_loop.data(), d.a.rmax, m_loop.size() * 4u, cudaMemcpyDeviceToHost));
            CK(cudaMemset(d.a.rmax, 0xFF, m_loop.size() * 4u));
            CK(cudaEventRecord(e0));
            run_cute(d.a, heads, mode, false, pp);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r) tc.push_back(ms);
            if (r == reps) CK(cudaMemcpy(m_cute.data(), d.a.rmax, m_cute.size() * 4u, cudaMemcpyDeviceToHost));
            CK(cudaMemset(d.a.rmax, 0xFF, m_loop.size() * 4u));
            CK(cudaEventRecord(e0));
            CK(cudaMemcpyAsync(cp_dst, cp_src, d.bytes_in, cudaMemcpyDeviceToDevice));
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r) tcp.push_back(ms);
        }
        uint64_t same = 0;
        for (size_t i = 0; i < m_loop.size(); i++) same += m_loop[i] == m_cute[i];
        bad_time += m_loop.size() - same;
        const double ml = median_ms(tl), mc = median_ms(tc), mcp = median_ms(tcp);
        const double tops = 2.0 * heads * (double)n * n * D / 1e12;
        printf("qk-test timing (%s): %u heads, nq = nk = %u, d = 128; medians of %u: loop %.3f ms (%.1f TOPS), "
               "%s %.3f ms (%.1f TOPS), copy of the %zu input bytes %.3f ms; loop / %s = %.3f, loop / copy = %.2f, "
               "%s / copy = %.2f; %s equal in %llu of %zu\n",
               mode == MODE_MAX ? "row maxima" : "the dots alone", heads, n, reps, ml, tops / (ml * 1e-3), cname, mc,
               tops / (mc * 1e-3), d.bytes_in, mcp, cname, ml / mc, ml / mcp, cname, mc / mcp,
               mode == MODE_MAX ? "row maxima" : "row hashes of the dots", (unsigned long long)same, m_loop.size());
    }
    release(d);
    cudaFree(cp_src), cudaFree(cp_dst);
    const int ok = bad_loop == 0u && bad_cute == 0u && bad_time == 0u;
    printf("qk-test: %s\n", ok ? "PASS" : "FAILED");
    return ok ? 0 : 1;
}
