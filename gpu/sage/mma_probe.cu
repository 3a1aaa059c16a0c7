/*
 * mma_probe.cu -- the FP8 tensor-core accumulator probe: random tiles through
 * the device's MMA instructions, judged against a grid of bit-level models
 * (include/kvq_mma.h) [SAGE-ACC-04].
 *
 * Paths (sm_90a):
 *   wgmma-e4m3, wgmma-e5m2   wgmma.mma_async m64n8k32 .f32 with both operands in
 *                            shared memory (no swizzle, K-major core matrices of
 *                            8 rows x 16 bytes), C entering through the
 *                            accumulator registers (scale-d = 1)
 *   mma-e4m3, mma-e5m2       mma.sync m16n8k32 .row.col .f32, C in registers
 * Every element of a tile is a function of (seed, tile, distribution, path
 * format, position) (kvq_mma_tile_elem), so the device draws the tile and the
 * host redraws it to judge; only D comes back.
 *
 * Each (path, distribution) runs `tiles` tiles on the device; the first
 * `sample` of them come back and every model of the grid is evaluated on
 * every output of those (OpenMP on the host).  Printed per path: the models
 * that reproduce the most outputs bit for bit, overall and per distribution.
 * The exact distribution is a layout check: every model gives the exact sum
 * there, so anything below 100% there is a wrong fragment layout (for wgmma
 * the program tries both assignments of the descriptor's two byte offsets and
 * keeps the one that passes).  The D words of the sample are written to
 * DIR/<path>-<dist>.d32 (little-endian binary32, tile-major, row-major within
 * a tile) with DIR/probe.json naming seed, sizes and layout, so a model can
 * be re-judged offline.
 *
 * usage: kvq_sage_mma_probe [--tiles N] [--sample S] [--seed X] [--out DIR]
 *                           [--commit TEXT]
 *        kvq_sage_mma_probe --confirm [--tiles N] [--seed X] [--out DIR]
 *        kvq_sage_mma_probe --judge DIR
 * Exit status: 0; 1 when a layout check fails or, under --confirm, when a
 * path's own model misses an output (the probe is then a gate); 2 on a usage
 * or file error.  Without a device (or on another architecture): "SKIPPED",
 * exit 0, or the status in KVQ_PROBE_SKIP_STATUS (`kvq probe` sets 1: its
 * skips are not passes).
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <vector>

#include "kvq_mma.h"
#include "mma_dev.cuh"   /* wg_off, wg_desc, the instructions and their fragments */

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "mma-probe: %s: %s\n", #x, cudaGetErrorString(e_));     \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

static const char *const dist_name[KVQ_MMA_NDIST] = {"uniform", "narrow", "cancel", "c-big",
                                                      "c-small", "exact", "subnormal"};

/* ---- wgmma m64n8k32 ---------------------------------------------------------- */

#define WG_M 64u
#define WG_N 8u
#define WG_K 32u

/* One warpgroup a block; tiles blockIdx.x, + gridDim.x, ...  swap: the two
 * byte offsets exchanged (the layout check picks). */
template <uint32_t FMT>
__global__ void __launch_bounds__(128) wg_kernel(float *__restrict__ out, uint64_t seed, uint64_t tile0,
                                                 uint32_t ntiles, uint32_t dist, int swap)
{
    __shared__ __align__(128) uint8_t sa[WG_M * WG_K];
    __shared__ __align__(128) uint8_t sb[WG_N * WG_K];
    const uint32_t t = threadIdx.x, w = t / 32u, l = t % 32u;
    const uint32_t lbo = swap ? 256u : 128u, sbo = swap ? 128u : 256u;
    for (uint32_t it = blockIdx.x; it < ntiles; it += gridDim.x) {
        const uint64_t tile = tile0 + it;
        for (uint32_t e = t; e < WG_M * WG_K; e += 128u) {
            const uint32_t m = e / WG_K, k = e % WG_K;
            sa[wg_off(m, k)] = (uint8_t)kvq_mma_tile_elem(seed, tile, dist, FMT, 0u, m, k);
        }
        for (uint32_t e = t; e < WG_N * WG_K; e += 128u) {
            const uint32_t n = e / WG_K, k = e % WG_K;
            sb[wg_off(n, k)] = (uint8_t)kvq_mma_tile_elem(seed, tile, dist, FMT, 1u, k, n);
        }
        float d[4];
        for (uint32_t i = 0; i < 4u; i++) {
            const uint32_t r = 16u * w + l / 4u + 8u * (i / 2u), c = (l % 4u) * 2u + i % 2u;
            d[i] = __uint_as_float(kvq_mma_tile_elem(seed, tile, dist, FMT, 2u, r, c));
        }
        wg_proxy_fence();
        __syncthreads();
        const uint64_t da = wg_desc(sa, lbo, sbo), db = wg_desc(sb, lbo, sbo);
        wg_fence();
        wg_mma_m64n8k32<FMT>(d, da, db);
        wg_commit_wait();
        for (uint32_t i = 0; i < 4u; i++) {
            const uint32_t r = 16u * w + l / 4u + 8u * (i / 2u), c = (l % 4u) * 2u + i % 2u;
            out[(uint64_t)it * WG_M * WG_N + r * WG_N + c] = d[i];
        }
        __syncthreads();                                       /* smem reused by the next tile */
    }
}

/* ---- mma.sync m16n8k32 ----------------------------------------------------------- */

#define MS_M 16u
#define MS_N 8u
#define MS_K 32u

/* One warp a tile.  Fragments (PTX ISA, m16n8k32 with 8-bit types): byte i
 * (0..15) of A: row g + 8 ((i / 4) % 2), column 4 t + i % 4 + 16 (i / 8);
 * byte i (0..7) of B: row 4 t + i % 4 + 16 (i / 4), column g; C/D element i
 * (0..3): row g + 8 (i / 2), column 2 t + i % 2; g = lane / 4, t = lane % 4. */
template <uint32_t FMT>
__global__ void __launch_bounds__(128) ms_kernel(float *__restrict__ out, uint64_t seed, uint64_t tile0,
                                                 uint32_t ntiles, uint32_t dist)
{
    const uint32_t lane = threadIdx.x % 32u, g = lane / 4u, tq = lane % 4u;
    const uint32_t warps = gridDim.x * (blockDim.x / 32u);
    for (uint32_t it = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u; it < ntiles; it += warps) {
        const uint64_t tile = tile0 + it;
        uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
        for (uint32_t i = 0; i < 16u; i++) {
            const uint32_t r = g + 8u * ((i / 4u) % 2u), k = 4u * tq + i % 4u + 16u * (i / 8u);
            a[i / 4u] |= kvq_mma_tile_elem(seed, tile, dist, FMT, 0u, r, k) << (8u * (i % 4u));
        }
        for (uint32_t i = 0; i < 8u; i++) {
            const uint32_t k = 4u * tq + i % 4u + 16u * (i / 4u);
            b[i / 4u] |= kvq_mma_tile_elem(seed, tile, dist, FMT, 1u, k, g) << (8u * (i % 4u));
        }
        float d[4];
        for (uint32_t i = 0; i < 4u; i++)
            d[i] = __uint_as_float(kvq_mma_tile_elem(seed, tile, dist, FMT, 2u, g + 8u * (i / 2u), 2u * tq + i % 2u));
        ms_mma_m16n8k32<FMT>(d, a, b);
        for (uint32_t i = 0; i < 4u; i++)
            out[(uint64_t)it * MS_M * MS_N + (g + 8u * (i / 2u)) * MS_N + 2u * tq + i % 2u] = d[i];
    }
}

/* ---- the device judge (--confirm) ---------------------------------------------- */

#define MAX_JUDGE_MODELS 4u
#define MAX_MISSES 8u

struct dev_miss {
    uint32_t tile, rc, device, model;
};

/* One thread an output: redraw its row of A, column of B and C, evaluate
 * every model, count the matches; the first misses of model `own` kept. */
__global__ void __launch_bounds__(256) judge_kernel(const float *__restrict__ d, uint64_t seed, uint32_t dist,
                                                    uint32_t fmt, uint32_t M, uint32_t N, uint64_t nout,
                                                    const kvq_mma_model *__restrict__ models, uint32_t nm,
                                                    uint32_t own, unsigned long long *hits, uint32_t *nmiss,
                                                    dev_miss *miss)
{
    uint32_t h[MAX_JUDGE_MODELS] = {0, 0, 0, 0};
    for (uint64_t o = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; o < nout;
         o += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t tile = (uint32_t)(o / (M * N)), rc = (uint32_t)(o % (M * N));
        const uint32_t r = rc / N, c = rc % N;
        uint8_t a[32], b[32];
        const uint32_t cc = kvq_mma_tile_output(seed, tile, dist, fmt, r, c, a, b);
        const uint32_t dv = __float_as_uint(d[o]);
        for (uint32_t mi = 0; mi < nm; mi++) {
            const uint32_t mv = kvq_mma_dot(a, b, 32u, cc, fmt, &models[mi]);
            if (mv == dv) h[mi]++;
            else if (mi == own) {
                const uint32_t at = atomicAdd(nmiss, 1u);
                if (at < MAX_MISSES) miss[at] = {tile, rc, dv, mv};
            }
        }
    }
    for (uint32_t mi = 0; mi < nm; mi++)
        if (h[mi]) atomicAdd(hits + mi, (unsigned long long)h[mi]);
}

/* ---- host: the model grid and the judge ------------------------------------------ */

struct path {
    const char *name;
    uint32_t wg, fmt, M, N;
};

static const path paths[] = {
    {"wgmma-e4m3", 1u, 0u, WG_M, WG_N},
    {"wgmma-e5m2", 1u, 1u, WG_M, WG_N},
    {"mma-e4m3", 0u, 0u, MS_M, MS_N},
    {"mma-e5m2", 0u, 1u, MS_M, MS_N},
};

/* The grid: emin 0 stands for the path format's own smallest exponent (-6
 * E4M3, -14 E5M2), resolved by the judge; -14 is binary16's; -149 aligns a
 * subnormal operand at its own exponent (the reading the subnormal
 * distribution separates from the format's emin). */
static std::vector<kvq_mma_model> model_grid(int confirm)
{
    std::vector<kvq_mma_model> g;
    if (confirm) {                                             /* the two named models */
        kvq_mma_model w = kvq_mma_model_wgmma_fp8(0u);
        w.emin = 0;                                            /* the path's own format */
        g.push_back(w);
        g.push_back(kvq_mma_model_mma_fp8_sm90());
        return g;
    }
    /* one fused step of 32 (the wgmma FP8 family) and neighbours */
    for (uint32_t f : {12u, 13u, 14u})
        for (uint32_t bits : {13u, 14u, 15u, 24u})
            for (uint32_t z = 0; z < 2u; z++)
                g.push_back({32u, f, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, bits, KVQ_MMA_ROUND_RZ,
                             KVQ_MMA_ALIGN_OPERAND, 0, z, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_VALUE, 0, 0u, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, -149, 0u, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_FLOOR, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, 0, 0u, 0u});
    g.push_back({32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RNE, KVQ_MMA_ALIGN_OPERAND, 0, 0u, 0u});
    /* two binary16-path steps of 16 (the mma.sync FP8 family on sm_90) and neighbours */
    for (uint32_t f : {23u, 24u, 25u, 26u})
        for (uint32_t cm : {KVQ_MMA_C_INSIDE, KVQ_MMA_C_LAST})
            for (uint32_t pr = 0; pr < 2u; pr++)
                for (uint32_t z = 0; z < 2u; z++)
                    g.push_back({16u, f, KVQ_MMA_CUT_RZ, cm, 24u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_OPERAND, -14, z, pr});
    g.push_back({16u, 25u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_LAST, 24u, KVQ_MMA_ROUND_RZ, KVQ_MMA_ALIGN_VALUE, 0, 0u, 1u});
    g.push_back({16u, 25u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_LAST, 24u, KVQ_MMA_ROUND_RNE, KVQ_MMA_ALIGN_OPERAND, -14, 0u, 1u});
    return g;
}

static void model_name(const kvq_mma_model &m, char *buf, size_t n)
{
    snprintf(buf, n, "g%u%s f%u %s C-%s %s b%u %s%s%s", m.group, m.pairs ? "p" : "", m.frac,
             m.cut ? "floor" : "rz", m.c_mode == KVQ_MMA_C_LAST ? "last" : m.c_mode ? "after" : "in",
             m.round ? "rne" : "rz", m.bits, m.align ? "op" : "val",
             m.align ? (m.emin == -149 ? "/sub" : m.emin ? "/f16" : "/own") : "", m.align ? (m.zero ? "/z126" : "/zskip") : "");
}

/* Matches of every model on the sample of one (path, dist); the exact sum of
 * every output too (a model of frac 48 and group K is exact here). */
static void judge(const path &p, uint32_t dist, uint64_t seed, const float *d, uint32_t tiles,
                  const std::vector<kvq_mma_model> &grid, std::vector<uint64_t> &hits)
{
    const int64_t nout = (int64_t)tiles * p.M * p.N;
    hits.assign(grid.size(), 0u);
#pragma omp parallel
    {
        std::vector<uint64_t> h(grid.size(), 0u);
#pragma omp for schedule(static)
        for (int64_t o = 0; o < nout; o++) {
            const uint32_t tile = (uint32_t)(o / (p.M * p.N)), rc = (uint32_t)(o % (p.M * p.N));
            const uint32_t r = rc / p.N, c = rc % p.N;
            uint8_t a[32], b[32];
            const uint32_t cc = kvq_mma_tile_output(seed, tile, dist, p.fmt, r, c, a, b);
            uint32_t dv;
            memcpy(&dv, d + o, 4);
            for (size_t mi = 0; mi < grid.size(); mi++) {
                kvq_mma_model m = grid[mi];
                if (m.emin == 0) m.emin = p.fmt ? -14 : -6;
                if (kvq_mma_dot(a, b, 32u, cc, p.fmt, &m) == dv) h[mi]++;
            }
        }
#pragma omp critical
        for (size_t mi = 0; mi < grid.size(); mi++) hits[mi] += h[mi];
    }
}


/* The 12 models that reproduce the most outputs, overall and per distribution. */
static void print_table(const path &p, const std::vector<kvq_mma_model> &grid, const std::vector<uint64_t> &tot,
                        const std::vector<std::vector<uint64_t>> &per, uint64_t nall, uint64_t nex, uint32_t sample)
{
    std::vector<size_t> order(grid.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return tot[x] > tot[y]; });
    printf("%s: %zu models, %llu outputs judged (%u tiles x %u distributions)\n", p.name, grid.size(),
           (unsigned long long)nall, sample, KVQ_MMA_NDIST);
    printf("  %-44s %9s", "model", "all");
    for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++) printf(" %9s", dist_name[dist]);
    printf("\n");
    for (size_t r = 0; r < 12u && r < order.size(); r++) {
        char nm[96];
        model_name(grid[order[r]], nm, sizeof nm);
        printf("  %-44s %8.4f%%", nm, 100.0 * (double)tot[order[r]] / (double)nall);
        for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++)
            printf(" %8.4f%%", 100.0 * (double)per[dist][order[r]] / (double)nex);
        printf("\n");
    }
}

/* Judge every output of `tiles` tiles on the device (the models of grid,
 * emin 0 resolved to the path's format); print the first misses of the
 * path's own model. */
static void device_judge(const path &p, uint32_t dist, uint64_t seed, const float *dout, uint32_t tiles,
                         const std::vector<kvq_mma_model> &grid, std::vector<uint64_t> &hits)
{
    const uint32_t nm = (uint32_t)std::min<size_t>(grid.size(), MAX_JUDGE_MODELS);
    kvq_mma_model hm[MAX_JUDGE_MODELS];
    for (uint32_t i = 0; i < nm; i++) {
        hm[i] = grid[i];
        if (hm[i].emin == 0) hm[i].emin = p.fmt ? -14 : -6;
    }
    kvq_mma_model *dm;
    unsigned long long *dh;
    uint32_t *dn;
    dev_miss *dmiss;
    CK(cudaMalloc(&dm, sizeof hm));
    CK(cudaMalloc(&dh, MAX_JUDGE_MODELS * sizeof *dh));
    CK(cudaMalloc(&dn, sizeof *dn));
    CK(cudaMalloc(&dmiss, MAX_MISSES * sizeof *dmiss));
    CK(cudaMemcpy(dm, hm, sizeof hm, cudaMemcpyHostToDevice));
    CK(cudaMemset(dh, 0, MAX_JUDGE_MODELS * sizeof *dh));
    CK(cudaMemset(dn, 0, sizeof *dn));
    const uint64_t nout = (uint64_t)tiles * p.M * p.N;
    judge_kernel<<<4096, 256>>>(dout, seed, dist, p.fmt, p.M, p.N, nout, dm, nm, p.wg ? 0u : 1u, dh, dn, dmiss);
    CK(cudaGetLastError());
    unsigned long long hh[MAX_JUDGE_MODELS];
    uint32_t n;
    dev_miss ms[MAX_MISSES];
    CK(cudaMemcpy(hh, dh, sizeof hh, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&n, dn, sizeof n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ms, dmiss, sizeof ms, cudaMemcpyDeviceToHost));
    hits.assign(grid.size(), 0u);
    for (uint32_t i = 0; i < nm; i++) hits[i] = hh[i];
    for (uint32_t i = 0; i < n && i < MAX_MISSES; i++)
        printf("  miss %s %s tile %u row %u col %u: device 0x%08x model 0x%08x\n", p.name, dist_name[dist],
               ms[i].tile, ms[i].rc / p.N, ms[i].rc % p.N, ms[i].device, ms[i].model);
    cudaFree(dm), cudaFree(dh), cudaFree(dn), cudaFree(dmiss);
}

/* Re-judge a saved bundle with the current model grid (host only). */
static int judge_bundle(const char *dir)
{
    char bp[1024];
    snprintf(bp, sizeof bp, "%s/probe-samples.bin", dir);
    FILE *f = fopen(bp, "rb");
    if (!f) {
        fprintf(stderr, "mma-probe: %s: cannot open\n", bp);
        return 2;
    }
    uint64_t hd[2];
    uint32_t sz[2];
    if (fread(hd, 8u, 2u, f) != 2u || fread(sz, 4u, 2u, f) != 2u || hd[0] != 0x3142504f52505156ull ||
        sz[1] != KVQ_MMA_NDIST) {
        fprintf(stderr, "mma-probe: %s: not a probe bundle of this version\n", bp);
        fclose(f);
        return 2;
    }
    const uint64_t seed = hd[1];
    const uint32_t sample = sz[0];
    const std::vector<kvq_mma_model> grid = model_grid(0);
    printf("# mma-probe --judge %s: seed 0x%016llx, %u tiles a (path, distribution)\n", dir,
           (unsigned long long)seed, sample);
    for (;;) {
        std::vector<uint64_t> tot(grid.size(), 0u);
        std::vector<std::vector<uint64_t>> per(KVQ_MMA_NDIST);
        uint64_t nall = 0, nex = 0;
        uint32_t pi = 0, seen = 0;
        for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++) {
            uint32_t s4[4];
            if (fread(s4, 4u, 4u, f) != 4u) break;
            if (s4[0] >= sizeof paths / sizeof paths[0] || s4[1] != dist) {
                fprintf(stderr, "mma-probe: %s: malformed section\n", bp);
                fclose(f);
                return 2;
            }
            pi = s4[0];
            nex = s4[3];
            std::vector<float> h(nex);
            if (fread(h.data(), 4u, nex, f) != nex) {
                fprintf(stderr, "mma-probe: %s: truncated\n", bp);
                fclose(f);
                return 2;
            }
            judge(paths[pi], dist, seed, h.data(), sample, grid, per[dist]);
            for (size_t mi = 0; mi < grid.size(); mi++) tot[mi] += per[dist][mi];
            nall += nex;
            seen++;
        }
        if (seen == 0u) break;
        if (seen != KVQ_MMA_NDIST) {
            fprintf(stderr, "mma-probe: %s: truncated\n", bp);
            fclose(f);
            return 2;
        }
        print_table(paths[pi], grid, tot, per, nall, nex, sample);
    }
    fclose(f);
    return 0;
}

static void run_path(const path &p, uint32_t dist, uint64_t seed, uint32_t tiles, int swap, float *dout)
{
    const uint64_t tile0 = 0;
    if (p.wg) {
        const unsigned grid = std::min(tiles, 4096u);
        if (p.fmt) wg_kernel<1u><<<grid, 128>>>(dout, seed, tile0, tiles, dist, swap);
        else wg_kernel<0u><<<grid, 128>>>(dout, seed, tile0, tiles, dist, swap);
    } else {
        const unsigned grid = std::min((tiles + 3u) / 4u, 4096u);
        if (p.fmt) ms_kernel<1u><<<grid, 128>>>(dout, seed, tile0, tiles, dist);
        else ms_kernel<0u><<<grid, 128>>>(dout, seed, tile0, tiles, dist);
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
    uint32_t tiles = 20000u, sample = 256u, keep = 64u;
    int confirm = 0;
    uint64_t seed = 0x6b76712d70726f62ull;                    /* "kvq-prob" */
    const char *dir = NULL, *commit = "unknown", *judge_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--sample") && i + 1 < argc) sample = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else if (!strcmp(argv[i], "--judge") && i + 1 < argc) judge_dir = argv[++i];
        else if (!strcmp(argv[i], "--confirm")) confirm = 1;
        else {
            fprintf(stderr, "usage: kvq_sage_mma_probe [--tiles N] [--sample S] [--seed X] [--out DIR] [--commit TEXT]\n"
                            "       kvq_sage_mma_probe --confirm [--tiles N] [--seed X] [--out DIR]   (the named models, every tile)\n"
                            "       kvq_sage_mma_probe --judge DIR   (re-judge DIR/probe-samples.bin, no device)\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);                          /* progress survives a timeout */
    if (judge_dir) return judge_bundle(judge_dir);
    /* a skip exits 0 like the GPU tests, or KVQ_PROBE_SKIP_STATUS (kvq probe sets 1) */
    const char *sks = getenv("KVQ_PROBE_SKIP_STATUS");
    const int skip_rc = sks ? atoi(sks) : 0;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("mma-probe: SKIPPED (no CUDA device)\n");
        return skip_rc;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9) {
        printf("mma-probe: SKIPPED (%s is sm_%d%d; the probe kernels are sm_90a)\n", prop.name, prop.major,
               prop.minor);
        return skip_rc;
    }
    if (confirm) sample = tiles;                               /* every tile judged */
    if (sample > tiles) sample = tiles;
    if (!confirm) keep = sample;
    if (keep > sample) keep = sample;
    if (confirm)
        printf("# mma-probe --confirm: device %s (sm_%d%d), commit %s, seed 0x%016llx, %u tiles a (path, "
               "distribution), every output judged on the device\n", prop.name, prop.major, prop.minor, commit,
               (unsigned long long)seed, tiles);
    else
        printf("# mma-probe: device %s (sm_%d%d), commit %s, seed 0x%016llx, %u tiles a (path, distribution), "
               "%u judged on the host\n", prop.name, prop.major, prop.minor, commit, (unsigned long long)seed,
               tiles, sample);
    if (dir) mkdir(dir, 0755);
    const std::vector<kvq_mma_model> grid = model_grid(confirm);
    float *dout;
    CK(cudaMalloc(&dout, (size_t)tiles * WG_M * WG_N * 4u));
    std::vector<float> h((size_t)(confirm ? keep : sample) * WG_M * WG_N);
    FILE *jf = NULL, *bf = NULL;
    if (dir) {
        char bp[1024];
        snprintf(bp, sizeof bp, "%s/probe-samples.bin", dir);
        bf = fopen(bp, "wb");
        if (bf) {
            const uint64_t hd[2] = {0x3142504f52505156ull /* "VQPROPB1" */, seed};
            const uint32_t sz[2] = {keep, KVQ_MMA_NDIST};
            fwrite(hd, 8u, 2u, bf);
            fwrite(sz, 4u, 2u, bf);
        }
        char jp[1024];
        snprintf(jp, sizeof jp, "%s/probe.json", dir);
        jf = fopen(jp, "w");
        if (jf) fprintf(jf, "{\"device\": \"%s\", \"commit\": \"%s\", \"seed\": \"0x%016llx\", \"tiles\": %u, "
                            "\"sample\": %u, \"paths\": [\n", prop.name, commit, (unsigned long long)seed, tiles,
                        sample);
    }
    int rc = 0;
    for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
        const path &p = paths[pi];
        /* the layout check picks the descriptor assignment (wgmma) */
        int swap = 0;
        std::vector<uint64_t> hits;
        const uint64_t nex = (uint64_t)sample * p.M * p.N;
        for (swap = 0; swap < (p.wg ? 2 : 1); swap++) {
            const uint32_t lt = keep;                          /* the layout check's tiles */
            const uint64_t nl = (uint64_t)lt * p.M * p.N;
            run_path(p, KVQ_MMA_DIST_EXACT, seed, lt, swap, dout);
            CK(cudaMemcpy(h.data(), dout, nl * 4u, cudaMemcpyDeviceToHost));
            judge(p, KVQ_MMA_DIST_EXACT, seed, h.data(), lt, grid, hits);
            uint64_t best = *std::max_element(hits.begin(), hits.end());
            printf("%s: layout check%s: %llu of %llu outputs exact\n", p.name, p.wg ? (swap ? " (LBO 256, SBO 128)" : " (LBO 128, SBO 256)") : "",
                   (unsigned long long)best, (unsigned long long)nl);
            if (best == nl) break;
        }
        if (swap == 2) {
            printf("%s: FAILED the layout check; its fractions are not reported\n", p.name);
            rc = 1;
            continue;
        }
        std::vector<uint64_t> tot(grid.size(), 0u);
        std::vector<std::vector<uint64_t>> per(KVQ_MMA_NDIST);
        uint64_t nall = 0;
        for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++) {
            run_path(p, dist, seed, tiles, swap, dout);
            if (confirm) {
                device_judge(p, dist, seed, dout, tiles, grid, per[dist]);
                CK(cudaMemcpy(h.data(), dout, (size_t)keep * p.M * p.N * 4u, cudaMemcpyDeviceToHost));
            } else {
                CK(cudaMemcpy(h.data(), dout, nex * 4u, cudaMemcpyDeviceToHost));
                judge(p, dist, seed, h.data(), sample, grid, per[dist]);
            }
            for (size_t mi = 0; mi < grid.size(); mi++) tot[mi] += per[dist][mi];
            nall += nex;
            if (bf) {                                          /* a section: path, dist, outputs */
                const uint32_t nkeep = keep * p.M * p.N;
                const uint32_t hd[4] = {(uint32_t)pi, dist, (uint32_t)swap, nkeep};
                fwrite(hd, 4u, 4u, bf);
                fwrite(h.data(), 4u, nkeep, bf);
            }
        }
        print_table(p, grid, tot, per, nall, nex, sample);
        std::vector<size_t> order(grid.size());
        for (size_t i = 0; i < order.size(); i++) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return tot[x] > tot[y]; });
        /* --confirm is a gate: the path's own model must reproduce every output */
        const size_t own = p.wg ? 0u : 1u;
        if (confirm && tot[own] != nall) {
            printf("%s: FAILED: its model missed %llu of %llu outputs\n", p.name,
                   (unsigned long long)(nall - tot[own]), (unsigned long long)nall);
            rc = 1;
        }
        if (jf) {
            char nm[96];
            model_name(grid[order[0]], nm, sizeof nm);
            fprintf(jf, "  {\"path\": \"%s\", \"swap\": %d, \"outputs\": %llu, \"best\": \"%s\", "
                        "\"best_hits\": %llu, \"models\": [", p.name, swap, (unsigned long long)nall, nm,
                    (unsigned long long)tot[order[0]]);
            for (size_t r = 0; r < order.size() && r < 12u; r++) {
                model_name(grid[order[r]], nm, sizeof nm);
                fprintf(jf, "%s{\"model\": \"%s\", \"hits\": %llu, \"per_distribution\": [", r ? ", " : "", nm,
                        (unsigned long long)tot[order[r]]);
                for (uint32_t dist = 0; dist < KVQ_MMA_NDIST; dist++)
                    fprintf(jf, "%s%llu", dist ? ", " : "", (unsigned long long)per[dist][order[r]]);
                fprintf(jf, "]}");
            }
            fprintf(jf, "]}%s\n", pi + 1 < sizeof paths / sizeof paths[0] ? "," : "");
        }
    }
    if (jf) {
        fprintf(jf, "]}\n");
        fclose(jf);
    }
    if (bf) fclose(bf);
    cudaFree(dout);
    return rc;
}
