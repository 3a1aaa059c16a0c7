/*
 * wgmma_probe.cu -- Hopper's wgmma accumulator through CuTe's SM90 MMA atoms:
 * FP8 E4M3/E5M2 x FP8 -> binary32 and INT8 x INT8 -> int32, judged on the
 * device bit for bit against the accumulator models of include/kvq_mma.h
 * (FP8) and the exact integer dot product (INT8).
 *
 * SPEC: [SAGE-ACC-08] [SAGE-ACC-01..02]
 *
 * A path is one CuTe TiledMMA of a single SS atom
 * (SM90_64xNx32_F32E4M3E4M3_SS_TN, ..._F32E5M2E5M2_SS_TN,
 * SM90_64xNx32_S32S8S8_SS_TN), operands in shared memory in CuTe's K-major
 * 32-byte swizzle (GMMA::Layout_K_SW32_Atom, tile_to_shape), the descriptors
 * made by CuTe (make_fragment_A/B), or of the RS atom
 * SM90_64xNx32_F32E4M3E4M3_RS_TN (A copied from shared memory into CuTe's
 * register fragment: the form in which a kernel keeps P~ in registers as the
 * A operand of the P~V instruction), K = 32 nk: cute::gemm issues nk
 * instructions into the same accumulator registers, C entering through them
 * (ScaleOut::One).  `fused`: the nk instructions back to back in one
 * wgmma batch (one commit, one wait: the way a kernel issues them); `split`:
 * a commit and a wait after each instruction, so the accumulator returns to
 * the register file between them.  The output coordinates come from CuTe's
 * partition_C of an identity tensor: nothing of the fragment layout is
 * written by hand.
 *
 * Tiles: for chunk q (k = 32 q .. 32 q + 31) and column group n / 8, the
 * 64 x 32 A, 32 x 8 B and 64 x 8 C blocks are those of mma_probe.cu's tile
 * number (tile nk + q) (N / 8) + n / 8 (A: group 0; C: chunk 0), so a path
 * with N = 8, nk = 1 draws exactly mma_probe.cu's tiles and distributions
 * (uniform, narrow, cancel, c-big, c-small, exact, subnormal).  The FP8 model
 * of an output is the fold of kvq_mma_dot over the chunks, each chunk's C the
 * previous chunk's result (the binary32 register between instructions).
 * INT8 distributions: uniform codes, extremes (-128, -127, 127, -1, 0, 1,
 * with C near +-(2^31 - 2^22)), small integers; the model is C + the exact
 * integer dot product (never beyond int32 here: |sum| <= 128 * 2^14).
 *
 * Every output is judged on the device: each model of the grid (the three
 * named models first, then neighbours of the wgmma model) counts its
 * matches; the first misses of the wgmma model (FP8) or of the exact sum
 * (INT8) are printed.  The `exact` distribution (FP8: small integers, where
 * some model of the grid must reproduce every output) and every INT8
 * distribution are layout checks: below 100% means a layout or descriptor
 * error, and the path is FAILED.
 *
 * usage: kvq_sage_wgmma_probe [--outputs N] [--seed X] [--commit TEXT] [--json FILE] [--plant]
 * --plant flips the last bit of one device output a distribution before the
 * judge (the planted bug): every path must then FAIL, or the judge is blind.
 * Exit status: 0; 1 when a layout check fails, or the wgmma model
 * (kvq_mma_model_wgmma_fp8) misses an FP8 output, or an INT8 output is not
 * the exact sum (the probe is a gate); 2 on a usage or CUDA error.
 * Without an sm_90 device: "SKIPPED", exit 77 (a skip is not a pass).
 */
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/version.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kvq_mma.h"

#if CUTLASS_MAJOR != 4 || CUTLASS_MINOR != 2
#error "wgmma_probe.cu is written against CUTLASS 4.2 (PyPI nvidia-cutlass 4.2.0.0, ci/setup.sh)"
#endif

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "wgmma-probe: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
                    cudaGetErrorString(e_));                                        \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

using namespace cute;

#define KIND_E4M3 0u
#define KIND_E5M2 1u
#define KIND_S8 2u

static const char *const fp8_dist_name[KVQ_MMA_NDIST] = {"uniform", "narrow", "cancel", "c-big",
                                                         "c-small", "exact", "subnormal"};
#define S8_NDIST 3u
static const char *const s8_dist_name[S8_NDIST] = {"uniform", "extremes", "small"};

/* ---- the tiles -------------------------------------------------------------------- */

/* mma_probe.cu's tile number of chunk q, column group g */
__host__ __device__ static inline uint64_t sub_tile(uint64_t tile, uint32_t q, uint32_t g, uint32_t nk, uint32_t nb)
{
    return (tile * nk + q) * nb + g;
}

/* FP8: A (m, k), B (k, n), C (m, n) of a tile of K = 32 nk, N = 8 nb */
__host__ __device__ static inline uint32_t fp8_a(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t fmt,
                                                 uint32_t nk, uint32_t nb, uint32_t m, uint32_t k)
{
    return kvq_mma_tile_elem(seed, sub_tile(tile, k / 32u, 0u, nk, nb), dist, fmt, 0u, m, k % 32u);
}
__host__ __device__ static inline uint32_t fp8_b(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t fmt,
                                                 uint32_t nk, uint32_t nb, uint32_t k, uint32_t n)
{
    return kvq_mma_tile_elem(seed, sub_tile(tile, k / 32u, n / 8u, nk, nb), dist, fmt, 1u, k % 32u, n % 8u);
}
__host__ __device__ static inline uint32_t fp8_c(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t fmt,
                                                 uint32_t nk, uint32_t nb, uint32_t m, uint32_t n)
{
    return kvq_mma_tile_elem(seed, sub_tile(tile, 0u, n / 8u, nk, nb), dist, fmt, 2u, m, n % 8u);
}

/* INT8: which 0 A (m, k), 1 B (k, n), 2 C (m, n); m < 64, k < 128, n < 256 */
__host__ __device__ static inline int32_t s8_elem(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t which,
                                                  uint32_t i, uint32_t j)
{
    const uint64_t r = kvq_mma_rnd(seed ^ 0x7338733873387338ull, tile, which * 65536u + i * 256u + j);
    if (which == 2u) {
        if (dist == 1u) {                                       /* near the int32 limits */
            const int32_t v = (int32_t)(0x7FFFFFFFu - (1u << 22) - (uint32_t)(r % 1024u));
            return (r >> 40) & 1u ? -v - 1 : v;
        }
        if (dist == 2u) return (int32_t)(r % 65u) - 32;
        return (int32_t)(uint32_t)(r >> 32) / 256;             /* +-2^23 */
    }
    if (dist == 1u) {
        static const int8_t ext[8] = {-128, -128, 127, 127, -127, -1, 1, 0};
        return ext[(r >> 8) % 8u];
    }
    if (dist == 2u) return (int32_t)((r >> 8) % 17u) - 8;
    return (int32_t)(int8_t)(uint8_t)(r >> 8);
}

/* ---- the probe kernel: one warpgroup a block, tiles blockIdx.x, + gridDim.x, ... ---- */

template <class Op, class T, uint32_t KIND, int N, int NK, bool SPLIT, bool RS = false>
__global__ void __launch_bounds__(128) probe_kernel(uint32_t *__restrict__ out, uint64_t seed, uint32_t ntiles,
                                                    uint32_t dist)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int K = 32 * NK;
    __shared__ alignas(1024) uint8_t smem[64 * K + N * K];
    auto sA = make_tensor(make_smem_ptr(reinterpret_cast<T *>(smem)),
                          tile_to_shape(GMMA::Layout_K_SW32_Atom<T>{}, make_shape(Int<64>{}, Int<K>{})));
    auto sB = make_tensor(make_smem_ptr(reinterpret_cast<T *>(smem + 64 * K)),
                          tile_to_shape(GMMA::Layout_K_SW32_Atom<T>{}, make_shape(Int<N>{}, Int<K>{})));
    TiledMMA mma = make_tiled_mma(Op{});
    ThrMMA thr = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr.partition_A(sA);                         /* (MMA, MMA_M, MMA_K) */
    Tensor tCsB = thr.partition_B(sB);
    Tensor tCrA = thr.make_fragment_A(tCsA);                   /* descriptors (SS), registers (RS) */
    Tensor tCrB = thr.make_fragment_B(tCsB);
    Tensor cC = make_identity_tensor(make_shape(Int<64>{}, Int<N>{}));
    Tensor tCcC = thr.partition_C(cC);                         /* (m, n) of each accumulator */
    Tensor acc = partition_fragment_C(mma, make_shape(Int<64>{}, Int<N>{}));
    static_assert(decltype(size<2>(tCrA))::value == NK, "one instruction a 32-wide k block");
    const uint32_t t = threadIdx.x, nb = (uint32_t)N / 8u;
    for (uint32_t it = blockIdx.x; it < ntiles; it += gridDim.x) {
        const uint64_t tile = it;
        for (uint32_t e = t; e < 64u * K; e += 128u) {
            const uint32_t m = e / K, k = e % K;
            const uint32_t v = KIND == KIND_S8 ? (uint32_t)s8_elem(seed, tile, dist, 0u, m, k)
                                               : fp8_a(seed, tile, dist, KIND, NK, nb, m, k);
            *reinterpret_cast<uint8_t *>(&sA(m, k)) = (uint8_t)v;
        }
        for (uint32_t e = t; e < (uint32_t)N * K; e += 128u) {
            const uint32_t n = e / K, k = e % K;
            const uint32_t v = KIND == KIND_S8 ? (uint32_t)s8_elem(seed, tile, dist, 1u, k, n)
                                               : fp8_b(seed, tile, dist, KIND, NK, nb, k, n);
            *reinterpret_cast<uint8_t *>(&sB(n, k)) = (uint8_t)v;
        }
        CUTE_UNROLL
        for (int i = 0; i < size(acc); i++) {
            const uint32_t m = get<0>(tCcC(i)), n = get<1>(tCcC(i));
            const uint32_t c = KIND == KIND_S8 ? (uint32_t)s8_elem(seed, tile, dist, 2u, m, n)
                                               : fp8_c(seed, tile, dist, KIND, NK, nb, m, n);
            uint32_t *p = reinterpret_cast<uint32_t *>(&acc(i));
            *p = c;
        }
        cutlass::arch::fence_view_async_shared();              /* generic writes -> async proxy */
        __syncthreads();
        if constexpr (RS) {                                    /* an RS atom: A from registers */
            copy(tCsA, tCrA);
            warpgroup_fence_operand(tCrA);
        }
        mma.accumulate_ = GMMA::ScaleOut::One;                 /* C through the registers */
        warpgroup_fence_operand(acc);
        if (SPLIT) {
            CUTE_UNROLL
            for (int kb = 0; kb < NK; kb++) {
                warpgroup_arrive();
                cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), acc);
                warpgroup_commit_batch();
                warpgroup_wait<0>();
                warpgroup_fence_operand(acc);
            }
        } else {
            warpgroup_arrive();
            cute::gemm(mma, tCrA, tCrB, acc);                  /* NK instructions, one batch */
            warpgroup_commit_batch();
            warpgroup_wait<0>();
        }
        warpgroup_fence_operand(acc);
        CUTE_UNROLL
        for (int i = 0; i < size(acc); i++) {
            const uint32_t m = get<0>(tCcC(i)), n = get<1>(tCcC(i));
            out[(uint64_t)it * 64u * N + m * (uint32_t)N + n] = *reinterpret_cast<const uint32_t *>(&acc(i));
        }
        __syncthreads();                                       /* smem reused by the next tile */
    }
#endif
}

/* ---- the device judge --------------------------------------------------------------- */

#define MAX_MODELS 64u
#define MAX_MISSES 8u
#define MAX_NK 4u

struct dev_miss {
    uint32_t tile, rc, device, model;
};

/* One thread an output.  FP8: every model folded over the nk chunks; INT8:
 * the exact sum (model 0).  Misses of model 0 kept. */
__global__ void __launch_bounds__(256) judge_kernel(const uint32_t *__restrict__ d, uint64_t seed, uint32_t kind,
                                                    uint32_t dist, uint32_t N, uint32_t nk, uint64_t nout,
                                                    const kvq_mma_model *__restrict__ models, uint32_t nm,
                                                    unsigned long long *hits, uint32_t *nmiss, dev_miss *miss)
{
    const uint32_t nb = N / 8u;
    for (uint64_t o = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; o < nout;
         o += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t tile = (uint32_t)(o / (64u * N)), rc = (uint32_t)(o % (64u * N));
        const uint32_t r = rc / N, c = rc % N;
        const uint32_t dv = d[o];
        if (kind == KIND_S8) {
            int64_t s = s8_elem(seed, tile, dist, 2u, r, c);
            for (uint32_t k = 0; k < 32u * nk; k++)
                s += (int64_t)s8_elem(seed, tile, dist, 0u, r, k) * s8_elem(seed, tile, dist, 1u, k, c);
            const uint32_t mv = (uint32_t)(int32_t)s;
            if (mv == dv) atomicAdd(hits, 1ull);
            else {
                const uint32_t at = atomicAdd(nmiss, 1u);
                if (at < MAX_MISSES) miss[at] = {tile, rc, dv, mv};
            }
            continue;
        }
        uint8_t a[32u * MAX_NK], b[32u * MAX_NK];
        for (uint32_t k = 0; k < 32u * nk; k++) {
            a[k] = (uint8_t)fp8_a(seed, tile, dist, kind, nk, nb, r, k);
            b[k] = (uint8_t)fp8_b(seed, tile, dist, kind, nk, nb, k, c);
        }
        const uint32_t c0 = fp8_c(seed, tile, dist, kind, nk, nb, r, c);
        for (uint32_t mi = 0; mi < nm; mi++) {
            uint32_t acc = c0;                                 /* the register between instructions */
            for (uint32_t q = 0; q < nk; q++) acc = kvq_mma_dot(a + 32u * q, b + 32u * q, 32u, acc, kind, &models[mi]);
            if (acc == dv) atomicAdd(hits + mi, 1ull);
            else if (mi == 0u) {
                const uint32_t at = atomicAdd(nmiss, 1u);
                if (at < MAX_MISSES) miss[at] = {tile, rc, dv, acc};
            }
        }
    }
}

/* ---- host ------------------------------------------------------------------------ */

typedef void (*probe_fn)(uint32_t *, uint64_t, uint32_t, uint32_t);

struct path {
    const char *name;
    uint32_t kind, N, nk;
    int split;
    probe_fn fn;
};

#define P_FP8(F, FT, n, nk, sp, nm)                                                                 \
    {nm, F == 0 ? KIND_E4M3 : KIND_E5M2, n, nk, sp,                                                \
     probe_kernel<SM90::GMMA::MMA_64x##n##x32_F32##FT##FT##_SS_TN<>,                               \
                  conditional_t<F == 0, float_e4m3_t, float_e5m2_t>, F, n, nk, sp>}
#define P_RS(n, nk, nm)                                                                             \
    {nm, KIND_E4M3, n, nk, false,                                                                  \
     probe_kernel<SM90::GMMA::MMA_64x##n##x32_F32E4M3E4M3_RS_TN<>, float_e4m3_t, 0u, n, nk, false, true>}
#define P_S8(n, nk, sp, nm)                                                                         \
    {nm, KIND_S8, n, nk, sp, probe_kernel<SM90::GMMA::MMA_64x##n##x32_S32S8S8_SS_TN, int8_t, KIND_S8, n, nk, sp>}

static const path paths[] = {                                  /* the most telling first */
    P_FP8(0, E4M3, 8, 1, false, "e4m3 m64n8k32"),
    P_S8(256, 1, false, "s8 m64n256k32"),
    P_S8(128, 4, false, "s8 m64n128k32 x4 fused"),
    P_FP8(0, E4M3, 128, 4, false, "e4m3 m64n128k32 x4 fused"),
    P_FP8(0, E4M3, 128, 4, true, "e4m3 m64n128k32 x4 split"),
    P_RS(128, 4, "e4m3 m64n128k32 x4 fused RS"),
    P_FP8(1, E5M2, 8, 1, false, "e5m2 m64n8k32"),
    P_FP8(0, E4M3, 128, 1, false, "e4m3 m64n128k32"),
    P_FP8(0, E4M3, 256, 1, false, "e4m3 m64n256k32"),
    P_FP8(1, E5M2, 128, 4, false, "e5m2 m64n128k32 x4 fused"),
    P_S8(8, 1, false, "s8 m64n8k32"),
};

/* The grid: the named models first (index 0 the wgmma model, the gate), then
 * neighbours; emin 0 stands for the format's own (-6 E4M3, -14 E5M2). */
static std::vector<kvq_mma_model> model_grid(void)
{
    std::vector<kvq_mma_model> g;
    kvq_mma_model w = kvq_mma_model_wgmma_fp8(0u);
    w.emin = 0;
    g.push_back(w);
    g.push_back(kvq_mma_model_truncation_common());
    g.push_back(kvq_mma_model_mma_fp8_sm90());
    for (uint32_t grp : {16u, 32u})
        for (uint32_t f : {12u, 13u, 14u})
            for (uint32_t bits : {13u, 14u, 15u, 24u}) {
                if (grp == 32u && f == 13u && bits == 14u) continue;   /* model 0 */
                g.push_back({grp, f, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, bits, KVQ_MMA_ROUND_RZ,
                             KVQ_MMA_ALIGN_OPERAND, 0, KVQ_MMA_ZERO_SKIP, 0u});
            }
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, 0,
                 KVQ_MMA_ZERO_M126, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_VALUE, 0,
                 KVQ_MMA_ZERO_SKIP, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, -149,
                 KVQ_MMA_ZERO_SKIP, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_FLOOR, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, 0,
                 KVQ_MMA_ZERO_SKIP, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RNE, KVQ_MMA_ALIGN_OPERAND, 0,
                 KVQ_MMA_ZERO_SKIP, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_AFTER, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, 0,
                 KVQ_MMA_ZERO_SKIP, 0u});
    return g;
}

static void model_name(const kvq_mma_model &m, char *buf, size_t n)
{
    snprintf(buf, n, "g%u%s f%u %s C-%s %s b%u %s%s%s", m.group, m.pairs ? "p" : "", m.frac,
             m.cut ? "floor" : "rz", m.c_mode == KVQ_MMA_C_LAST ? "last" : m.c_mode ? "after" : "in",
             m.round ? "rne" : "rz", m.bits, m.align ? "op" : "val",
             m.align ? (m.emin == -149 ? "/sub" : m.emin == -14 && m.group == 16u ? "/f16" : "/own") : "",
             m.align ? (m.zero ? "/z126" : "/zskip") : "");
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *e;
    if (!s[0] || s[0] == '-') return 0;
    *v = strtoull(s, &e, 0);
    return *e == 0;
}

int main(int argc, char **argv)
{
    uint64_t outputs = 1u << 18, seed = 0x6b76712d70726f62ull;  /* "kvq-prob", mma_probe.cu's */
    const char *commit = "unknown", *json = NULL;
    int plant = 0;
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (!strcmp(argv[i], "--outputs") && i + 1 < argc && parse_u64(argv[i + 1], &v) && v >= 16384u &&
            v <= (1ull << 26)) {
            outputs = v;
            i++;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc && parse_u64(argv[i + 1], &v)) {
            seed = v;
            i++;
        } else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--plant")) plant = 1;
        else {
            fprintf(stderr, "wgmma-probe: argument %d (%s): not understood\n"
                            "usage: kvq_sage_wgmma_probe [--outputs N (16384 .. 2^26)] [--seed X] "
                            "[--commit TEXT] [--json FILE] [--plant]\n", i, argv[i]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("wgmma-probe: SKIPPED (no CUDA device)\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9) {
        printf("wgmma-probe: SKIPPED (%s is sm_%d%d; the probe is sm_90a)\n", prop.name, prop.major, prop.minor);
        return 77;
    }
    FILE *jf = NULL;
    if (json && !(jf = fopen(json, "w"))) {
        fprintf(stderr, "wgmma-probe: %s: cannot open for writing\n", json);
        return 2;
    }
    printf("# wgmma-probe%s: device %s (sm_%d%d), commit %s, CUTLASS %d.%d.%d (CuTe SM90 GMMA atoms), seed "
           "0x%016llx, about %llu outputs a (path, distribution), every one judged on the device\n",
           plant ? " --plant (a planted bug: every path must FAIL)" : "", prop.name, prop.major, prop.minor,
           commit, CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, (unsigned long long)seed,
           (unsigned long long)outputs);
    if (jf)
        fprintf(jf, "{\"device\": \"%s\", \"commit\": \"%s\", \"cutlass\": \"%d.%d.%d\", \"seed\": \"0x%016llx\", "
                    "\"paths\": [\n", prop.name, commit, CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH,
                (unsigned long long)seed);
    std::vector<kvq_mma_model> grid = model_grid();
    const uint32_t nm = (uint32_t)grid.size();
    if (nm > MAX_MODELS) {
        fprintf(stderr, "wgmma-probe: %u models, at most %u\n", nm, MAX_MODELS);
        return 2;
    }
    uint32_t *dout;
    kvq_mma_model *dm;
    unsigned long long *dh;
    uint32_t *dn;
    dev_miss *dmiss;
    CK(cudaMalloc(&dout, (size_t)(outputs + 64u * 256u) * 4u));
    CK(cudaMalloc(&dm, MAX_MODELS * sizeof *dm));
    CK(cudaMalloc(&dh, MAX_MODELS * sizeof *dh));
    CK(cudaMalloc(&dn, sizeof *dn));
    CK(cudaMalloc(&dmiss, MAX_MISSES * sizeof *dmiss));
    int rc = 0;
    const size_t npaths = sizeof paths / sizeof paths[0];
    for (size_t pi = 0; pi < npaths; pi++) {
        const path &p = paths[pi];
        const int s8 = p.kind == KIND_S8;
        const uint32_t ndist = s8 ? S8_NDIST : KVQ_MMA_NDIST;
        const uint32_t per_tile = 64u * p.N;
        const uint32_t tiles = (uint32_t)((outputs + per_tile - 1u) / per_tile);
        const uint64_t nout = (uint64_t)tiles * per_tile;
        std::vector<kvq_mma_model> hm = grid;
        for (auto &m : hm)
            if (m.emin == 0) m.emin = p.kind == KIND_E5M2 ? -14 : -6;
        const uint32_t pm = s8 ? 1u : nm;
        CK(cudaMemcpy(dm, hm.data(), nm * sizeof *dm, cudaMemcpyHostToDevice));
        std::vector<std::vector<unsigned long long>> per(ndist, std::vector<unsigned long long>(pm, 0ull));
        printf("%s: %u tiles (%llu outputs) a distribution, K = %u (%u instruction%s%s)\n", p.name, tiles,
               (unsigned long long)nout, 32u * p.nk, p.nk, p.nk > 1u ? "s" : "",
               p.nk > 1u ? (p.split ? ", a wait after each" : ", one batch") : "");
        int layout_bad = 0;
        uint64_t miss_total = 0;
        for (uint32_t dist = 0; dist < ndist; dist++) {
            p.fn<<<std::min(tiles, 2048u), 128>>>(dout, seed, tiles, dist);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            if (plant) {                                       /* one output's last bit flipped */
                uint32_t w;
                const uint64_t at = (nout / 2u) + dist;
                CK(cudaMemcpy(&w, dout + at, 4u, cudaMemcpyDeviceToHost));
                w ^= 1u;
                CK(cudaMemcpy(dout + at, &w, 4u, cudaMemcpyHostToDevice));
            }
            CK(cudaMemset(dh, 0, MAX_MODELS * sizeof *dh));
            CK(cudaMemset(dn, 0, sizeof *dn));
            judge_kernel<<<2048, 256>>>(dout, seed, p.kind, dist, p.N, p.nk, nout, dm, pm, dh, dn, dmiss);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            uint32_t n;
            dev_miss ms[MAX_MISSES];
            CK(cudaMemcpy(per[dist].data(), dh, pm * sizeof *dh, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(&n, dn, sizeof n, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(ms, dmiss, sizeof ms, cudaMemcpyDeviceToHost));
            miss_total += nout - per[dist][0];
            const char *dn_ = s8 ? s8_dist_name[dist] : fp8_dist_name[dist];
            for (uint32_t i = 0; i < n && i < MAX_MISSES; i++)
                printf("  miss %s %s tile %u row %u col %u: device 0x%08x %s 0x%08x\n", p.name, dn_, ms[i].tile,
                       ms[i].rc / p.N, ms[i].rc % p.N, ms[i].device, s8 ? "exact" : "wgmma model", ms[i].model);
            /* the layout check: some model of the grid reproduces every output of
             * `exact` (small integers: a wrong layout or descriptor matches none;
             * over four instructions the sums may pass 14 bits, so not only the
             * exact model); INT8: the exact sum on every distribution */
            if ((s8 || dist == KVQ_MMA_DIST_EXACT) &&
                *std::max_element(per[dist].begin(), per[dist].end()) != nout)
                layout_bad = 1;
        }
        /* the table: models by total matches */
        std::vector<unsigned long long> tot(pm, 0ull);
        for (uint32_t dist = 0; dist < ndist; dist++)
            for (uint32_t mi = 0; mi < pm; mi++) tot[mi] += per[dist][mi];
        std::vector<uint32_t> order(pm);
        for (uint32_t i = 0; i < pm; i++) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return tot[x] > tot[y]; });
        const uint64_t nall = nout * ndist;
        printf("  %-40s %9s", "model", "all");
        for (uint32_t dist = 0; dist < ndist; dist++) printf(" %9s", s8 ? s8_dist_name[dist] : fp8_dist_name[dist]);
        printf("\n");
        std::vector<uint32_t> shown;
        for (uint32_t r = 0; r < pm && shown.size() < 8u; r++) shown.push_back(order[r]);
        for (uint32_t named = 0; named < (s8 ? 1u : 3u); named++)
            if (std::find(shown.begin(), shown.end(), named) == shown.end()) shown.push_back(named);
        for (uint32_t mi : shown) {
            char nmb[96];
            if (s8) snprintf(nmb, sizeof nmb, "exact: C + sum a_k b_k (int32)");
            else model_name(hm[mi], nmb, sizeof nmb);
            printf("  %-40s %8.4f%%", nmb, 100.0 * (double)tot[mi] / (double)nall);
            for (uint32_t dist = 0; dist < ndist; dist++) printf(" %8.4f%%", 100.0 * (double)per[dist][mi] / (double)nout);
            printf("%s\n", mi == 0u && !s8 ? "   <- kvq_mma_model_wgmma_fp8" : mi == 1u && !s8 ? "   <- truncation_common"
                                                                              : mi == 2u && !s8 ? "   <- mma_fp8_sm90" : "");
        }
        if (!s8) {
            char nmb[96];
            model_name(hm[order[0]], nmb, sizeof nmb);
            printf("%s: best model %s: %llu of %llu outputs (%.4f%%)%s\n", p.name, nmb,
                   (unsigned long long)tot[order[0]], (unsigned long long)nall,
                   100.0 * (double)tot[order[0]] / (double)nall,
                   tot[order[0]] == tot[0] && order[0] != 0u ? " (ties with kvq_mma_model_wgmma_fp8)" : "");
        }
        const char *verdict = layout_bad ? "FAILED (layout check)" : miss_total ? "FAILED (model misses)" : "PASS";
        printf("%s: %s: %s %llu of %llu outputs, %llu misses\n", p.name, verdict,
               s8 ? "exact sum on" : "kvq_mma_model_wgmma_fp8 on", (unsigned long long)tot[0],
               (unsigned long long)nall, (unsigned long long)miss_total);
        if (layout_bad || miss_total) rc = 1;
        if (jf) {
            char nmb[96];
            fprintf(jf, "  {\"path\": \"%s\", \"N\": %u, \"instructions\": %u, \"split\": %d, \"outputs\": %llu, "
                        "\"verdict\": \"%s\", \"models\": [", p.name, p.N, p.nk, p.split, (unsigned long long)nall,
                    verdict);
            for (uint32_t r = 0; r < shown.size(); r++) {
                const uint32_t mi = shown[r];
                if (s8) snprintf(nmb, sizeof nmb, "exact");
                else model_name(hm[mi], nmb, sizeof nmb);
                fprintf(jf, "%s{\"model\": \"%s\", \"hits\": %llu, \"per_distribution\": [", r ? ", " : "", nmb,
                        (unsigned long long)tot[mi]);
                for (uint32_t dist = 0; dist < ndist; dist++)
                    fprintf(jf, "%s%llu", dist ? ", " : "", (unsigned long long)per[dist][mi]);
                fprintf(jf, "]}");
            }
            fprintf(jf, "]}%s\n", pi + 1 < npaths ? "," : "");
        }
    }
    if (jf) {
        fprintf(jf, "]}\n");
        fclose(jf);
    }
    cudaFree(dout), cudaFree(dm), cudaFree(dh), cudaFree(dn), cudaFree(dmiss);
    printf("wgmma-probe: %s\n", rc ? "FAILED" : "PASS");
    return rc;
}
