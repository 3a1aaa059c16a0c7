/*
 * pkv_bench.cu -- bandwidth of the PKV quantizer and dequantizer against a copy.
 *
 * One run, one device: a 256 MiB binary32 block ([2^19][128], d = 128, G = 128,
 * bits 2, F32 metadata, the paper's |M| = 32 patterns unless a row says
 * otherwise), each configuration timed with CUDA events around the launcher
 * call, the L2 flushed (a 256 MiB memset of another buffer) before every
 * repetition, medians of REPS.  The baseline is cudaMemcpyAsync device to
 * device of the 256 MiB input in the same run (2 x 256 MiB moved).
 * Bandwidths: a row's is its compulsory bytes over its median time; the
 * copy's is 2 x 256 MiB over its median; ratio = row bandwidth / copy bandwidth
 * (goal >= 0.85).
 *   quantize: input + residual (an output of kvq_pkv_quantize) + codes +
 *             scales + zeros + indices;
 *   dequantize: codes + scales + zeros + indices + output (the bank, 16 KiB,
 *             stays in L2 and is not counted).
 * floor = compulsory / the bytes the pass structure moves (the quantizer: the
 * residual pass reads x and writes r, the KIVI stage reads r again, except in
 * the fused form (KVQ_CUDA_PKV_FUSED: one pass, floor 1); the
 * scratch form copies r, the indices and the codes out once more; the
 * dequantizer's check pass reads the metadata and indices once more).
 *
 * Instructions per element (ops/elem, counted from the kernels' source, the
 * per-element work of the inner loops; integer address work not counted):
 *   assignment: 3 npat (FADD of the difference, FMNMX for the largest and for
 *   the least) + 2 for the row's own extremes (the V decision and the checks)
 *   + 1 (the residual FADD); the KIVI stage ~7 (kivi.cu: FADD, FMUL, clamps,
 *   the magic-number rounding, packing).  With npat = 32 that is ~106 ops a
 *   value, against ~8 for KIVI alone: the assignment is instruction bound
 *   (132 SMs x 128 lanes x ~1.98 GHz / 106 ops = ~0.3 T values/s, about 1.3
 *   TB/s of compulsory bytes, ~0.3 of the copy), whatever the memory system
 *   does.  The npat = 1 rows measure the memory structure alone.  The fused
 *   row at d = 128 and |M| = 32 keeps each lane's pattern in registers
 *   (pkv_quant.cu), so its assignment loads only the token's row; the others
 *   read a pattern row from L1 for every token (16 bytes a lane a step: about as
 *   many L1 cycles as the min/max instructions take).
 *   dequantize: ~8 (unpack shift/mask, 2^23 trick FADD, FFMA, the saturation
 *   test, the pattern FADD).
 *   pruned rows (the default assignment at d = 128, |M| <= 32, [PKV-DEV-05];
 *   the unpruned rows ask for the full scan, KVQ_CUDA_PKV_UNPRUNED): the work depends on the
 *   data, so each data set (clustered, random, ties: see DATA_*) gets a host
 *   count of the pruning's visits on a sample of its tokens (model_prune, the
 *   rule of pkv_dev.cuh), and prune_ops turns it into ops/elem: ~40 when one
 *   distance a token is computed, ~142 when the full scan runs.  The unpruned
 *   fused row runs on all three sets too, as the baseline of each.
 *   The dequantizer rows run both forms of [PKV-DEV-06] (KVQ_CUDA_PKV_DQ_ONE:
 *   check, grid barrier, write in one cooperative kernel; KVQ_CUDA_PKV_DQ_TWO: a
 *   check kernel, then the writer), * marking the grouping's default; their
 *   floor counts the check's second read of the metadata and indices (in the
 *   one kernel it mostly hits L2).
 *
 * usage: kvq_pkv_bench [--reps R] [--json PATH] [--commit TEXT]
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kvq.h"
#include "kvq_pkv.h"
#include "pkv/kvq_cuda_pkv.h"

#define KVQ_BENCH_NAME "pkv-bench"
#include "bench_time.cuh"

/* The data sets of the rows:
 *   DATA_CLUSTER  values near one of the 32 grid patterns (the V threshold keeps
 *                 most): the assignment's usual case, the pruning's best;
 *   DATA_RANDOM   tokens and patterns independent, uniform on [-1, 1): every
 *                 distance alike, the bound prunes little;
 *   DATA_TIES     every token the base row b, pattern j = b with +h and -h on two
 *                 channels: all 32 distances equal (2h), nothing can be pruned --
 *                 the adversarial worst case of [PKV-DEV-05]. */
enum { DATA_CLUSTER, DATA_RANDOM, DATA_TIES };
static const char *data_name[3] = {"clustered", "random", "ties"};

__device__ __host__ inline uint64_t mix64(uint64_t k)
{
    k *= 0xD1B54A32D192ED03ull;
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    return k ^ (k >> 29);
}

__device__ __host__ inline float base_val(uint32_t i) /* the ties' base row, on a grid */
{
    return (float)((int)(mix64(i + 77u) % 33u) - 16) * 0.125f;
}

__global__ void fill_kernel(float *x, uint64_t n, uint32_t d, uint32_t npat, int data)
{
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t i = (uint32_t)(e % d);
        if (data == DATA_RANDOM) {
            x[e] = ((float)(mix64(e) & 0xFFFFFF) - 8388608.0f) * 0x1p-23f;
            continue;
        }
        if (data == DATA_TIES) {
            x[e] = base_val(i);
            continue;
        }
        uint64_t t = e / d, h = t * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        const uint32_t j = (uint32_t)(h % npat);
        uint64_t k = e * 0xD1B54A32D192ED03ull;
        k ^= k >> 31;
        x[e] = (float)((int)((j * 7u + i * 13u) % 33u) - 16) * 0.125f +
               ((float)(k & 0xFFFF) - 32768.0f) * 0x1p-20f;
    }
}

__device__ __host__ inline float bank_val(uint32_t j, uint32_t i, uint32_t d, int data)
{
    if (data == DATA_RANDOM)
        return ((float)(mix64(0x5EEDull * 1000003u + (uint64_t)j * d + i) & 0xFFFFFF) - 8388608.0f) *
               0x1p-23f;
    if (data == DATA_TIES) {             /* +h on channel p_j, -h on q_j (distinct) */
        const uint32_t p = (uint32_t)(mix64(j * 2u + 1u) % d), q = (p + 1u + j) % d;
        return base_val(i) + (i == p ? 0.25f : i == q ? -0.25f : 0.0f);
    }
    return (float)((int)((j * 7u + i * 13u) % 33u) - 16) * 0.125f;
}

__global__ void bank_kernel(float *b, uint32_t npat, uint32_t d, int data)
{
    for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < npat * d; e += gridDim.x * blockDim.x)
        b[e] = bank_val(e / d, e % d, d, data);
}

/* The pruned assignment's work on a sample of tokens, counted on the host by the
 * rule of [PKV-DEV-05] (pkv_dev.cuh: the bound over the 8 probe channels and the
 * row's and the pattern's extreme channels, least bound first, survivors in
 * index order, the full scan past PKV_PRUNE_FULL survivors): the mean number of
 * cooperative visits a token and the share of tokens that take the full scan.
 * A model of the kernel's decisions (the device test checks its results), for
 * the ops/elem column. */
struct prune_model { double visits, full; };

static float h_dmm(const float *x, const float *m, uint32_t d)
{
    float hi = x[0] - m[0], lo = hi;
    for (uint32_t i = 1; i < d; i++) {
        const float t = x[i] - m[i];
        hi = t > hi ? t : hi;
        lo = t < lo ? t : lo;
    }
    return hi - lo;
}

/* The lowest channel of v (d values) holding its largest (sign > 0) or least value. */
static uint32_t h_argext(const float *v, uint32_t d, int sign)
{
    uint32_t c = 0;
    for (uint32_t i = 1; i < d; i++)
        if (sign > 0 ? v[i] > v[c] : v[i] < v[c]) c = i;
    return c;
}

static prune_model model_prune(const float *x, uint32_t T, const float *bank, uint32_t npat,
                               uint32_t d)
{
    prune_model r = {0.0, 0.0};
    for (uint32_t t = 0; t < T; t++) {
        const float *xt = x + (uint64_t)t * d;
        const uint32_t px = h_argext(xt, d, 1), qx = h_argext(xt, d, -1);
        float b[32];
        uint32_t j0 = 0;
        for (uint32_t j = 0; j < npat; j++) {
            const float *m = bank + (uint64_t)j * d;
            const uint32_t ch[12] = {0u, d / 8u, 2u * d / 8u, 3u * d / 8u, 4u * d / 8u, 5u * d / 8u,
                                     6u * d / 8u, 7u * d / 8u, px, qx, h_argext(m, d, 1),
                                     h_argext(m, d, -1)};
            float hi = xt[0] - m[0], lo = hi;
            for (int k = 1; k < 12; k++) {
                const float v = xt[ch[k]] - m[ch[k]];
                hi = std::max(hi, v);
                lo = std::min(lo, v);
            }
            b[j] = hi - lo;
            if (b[j] < b[j0]) j0 = j;
        }
        float bd = h_dmm(xt, bank + (uint64_t)j0 * d, d);
        uint32_t cand = 0, n = 0;
        for (uint32_t j = 0; j < npat; j++)
            if (j != j0 && !(b[j] > bd)) cand |= 1u << j;
        if (__builtin_popcount(cand) > 8) { /* the first visit, then the full scan */
            r.full += 1.0;
            r.visits += 1.0;
            continue;
        }
        while (cand) {
            const uint32_t j = (uint32_t)__builtin_ctz(cand);
            cand &= cand - 1u;
            bd = std::min(bd, h_dmm(xt, bank + (uint64_t)j * d, d));
            n++;
            for (uint32_t k = 0; k < npat; k++)
                if (b[k] > bd) cand &= ~(1u << k);
        }
        r.visits += 1.0 + n;
    }
    r.visits /= T;
    r.full /= T;
    return r;
}

/* ops/elem of the pruned assignment (d = 128: a lane 4 values of the token; per
 * lane and token: the bound ~58 -- 12 differences and 22 min/max over its
 * channels, 8 compares, 2 reductions and 4 selects for the row's extreme
 * channels, 4 loads --, the warp argmin of the bounds ~25, a cooperative visit
 * ~36 (4 differences, 6 min/max, 5 shuffle rounds of 2 + 2), the full scan
 * 3 x 128 + 25), divided by 4; plus the row's extremes 2, the residual 1 and
 * the KIVI stage 7, as the unpruned rows count them.  The full scan follows the
 * first visit. */
static double prune_ops(const prune_model &m)
{
    return 2.0 + 1.0 + 7.0 + (58.0 + 25.0) / 4.0 + 36.0 / 4.0 * (m.visits) +
           m.full * (3.0 * 128.0 + 25.0) / 4.0;
}

int main(int argc, char **argv)
{
    int reps = 30;
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else {
            fprintf(stderr, "pkv-bench: unknown argument '%s' (usage: kvq_pkv_bench [--reps R] "
                            "[--json PATH] [--commit TEXT])\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1) {
        fprintf(stderr, "pkv-bench: --reps must be at least 1\n");
        return 2;
    }
    char why[256];
    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf("pkv-bench: SKIPPED (no CUDA device: %s)\n", why);
        return 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const uint32_t T = 1u << 19, d = 128u, NP = 32u;
    const uint64_t n = (uint64_t)T * d, in_b = n * 4u;
    const kvq_pkv_params p = kvq_pkv_params_default(2u);
    const kvq_policy pol = kvq_policy_default;
    float *x, *resid, *y, *scale, *zero, *bank;
    uint8_t *codes, *cpy;
    uint16_t *index;
    CK(cudaMalloc(&x, in_b));
    CK(cudaMalloc(&cpy, in_b));
    CK(cudaMalloc(&resid, in_b));
    CK(cudaMalloc(&y, in_b));
    CK(cudaMalloc(&codes, n / 2u));
    CK(cudaMalloc(&scale, n / 8u * 4u));
    CK(cudaMalloc(&zero, n / 8u * 4u));
    CK(cudaMalloc(&index, (size_t)T * 2u));
    CK(cudaMalloc(&bank, (size_t)NP * d * 4u));
    bench_flush_alloc();
    int data = -1;                       /* the data set x and bank now hold */
    const uint32_t TS = 4096u;           /* tokens of the host model's sample */
    std::vector<float> hx((size_t)TS * d), hb((size_t)NP * d);
    prune_model pm[3] = {};
    auto load = [&](int want) {
        if (data == want) return;
        fill_kernel<<<4096, 256>>>(x, n, d, NP, want);
        bank_kernel<<<16, 256>>>(bank, NP, d, want);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hx.data(), x, hx.size() * 4u, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hb.data(), bank, hb.size() * 4u, cudaMemcpyDeviceToHost));
        pm[want] = model_prune(hx.data(), TS, hb.data(), NP, d);
        data = want;
    };
    load(DATA_CLUSTER);

    const double t_copy = time_med(reps, [&] { CK(cudaMemcpyAsync(cpy, x, in_b, cudaMemcpyDeviceToDevice, 0)); });
    const double bw_copy = 2.0 * (double)in_b / (t_copy * 1e-3) / 1e9;

    kvq_cuda_result *res;
    CK(cudaMalloc((void **)&res, sizeof *res));
    struct row { char name[112]; double ms, bytes, moved, ops; } rows[32];
    int nr = 0;
    /* the pruned assignment is the default at d = 128 and |M| <= 32 [PKV-DEV-05];
     * UN asks for the unpruned scan (the |M| = 1 rows: the memory structure alone) */
    const uint32_t UN = KVQ_CUDA_PKV_UNPRUNED, FD = KVQ_CUDA_DIRECT | KVQ_CUDA_PKV_FUSED;
    struct qcfg { const char *name; uint32_t kind, npat, opts; int data; } qc[] = {
        {"Q values, |M| = 32, fused, unpruned, direct", KVQ_PKV_VALUE, 32u, FD | UN, DATA_CLUSTER},
        {"Q values, |M| = 32, unpruned, direct", KVQ_PKV_VALUE, 32u, KVQ_CUDA_DIRECT | UN,
         DATA_CLUSTER},
        {"Q keys (decode), |M| = 32, unpruned, direct", KVQ_PKV_KEY_DECODE, 32u,
         KVQ_CUDA_DIRECT | UN, DATA_CLUSTER},
        {"Q values, |M| = 32, unpruned, scratch", KVQ_PKV_VALUE, 32u, UN, DATA_CLUSTER},
        {"Q values, |M| = 1, unpruned, direct (memory structure)", KVQ_PKV_VALUE, 1u,
         KVQ_CUDA_DIRECT | UN, DATA_CLUSTER},
        {"Q keys, |M| = 1, unpruned, direct (memory structure)", KVQ_PKV_KEY_DECODE, 1u,
         KVQ_CUDA_DIRECT | UN, DATA_CLUSTER},
        {"Q values, |M| = 32, fused, pruned, direct", KVQ_PKV_VALUE, 32u, FD, DATA_CLUSTER},
        {"Q values, |M| = 32, pruned, direct", KVQ_PKV_VALUE, 32u, KVQ_CUDA_DIRECT, DATA_CLUSTER},
        {"Q keys (decode), |M| = 32, pruned, direct", KVQ_PKV_KEY_DECODE, 32u, KVQ_CUDA_DIRECT,
         DATA_CLUSTER},
        {"Q values, |M| = 32, pruned, scratch (the subject's)", KVQ_PKV_VALUE, 32u, 0u,
         DATA_CLUSTER},
        {"Q values, |M| = 32, fused, unpruned, direct", KVQ_PKV_VALUE, 32u, FD | UN, DATA_RANDOM},
        {"Q values, |M| = 32, fused, pruned, direct", KVQ_PKV_VALUE, 32u, FD, DATA_RANDOM},
        {"Q values, |M| = 32, fused, unpruned, direct", KVQ_PKV_VALUE, 32u, FD | UN, DATA_TIES},
        {"Q values, |M| = 32, fused, pruned, direct", KVQ_PKV_VALUE, 32u, FD, DATA_TIES},
    };
    for (auto &q : qc) {
        load(q.data);
        const size_t wb = kvq_cuda_pkv_quantize_workspace(&p, q.kind, T, d, q.opts);
        void *ws;
        CK(cudaMalloc(&ws, wb));
        kvq_status st = KVQ_OK;
        double ms = time_med(reps, [&] {
            kvq_status s = kvq_cuda_pkv_quantize_async(codes, scale, zero, index, resid, res, x, q.kind,
                                                       T, d, bank, q.npat, &p, &pol, ws, wb, q.opts, 0);
            if (s != KVQ_OK) st = s;
        });
        kvq_cuda_result h;
        CK(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost));
        if (st == KVQ_OK) st = (kvq_status)h.status;
        if (st != KVQ_OK) { fprintf(stderr, "pkv-bench: %s: %s\n", q.name, kvq_status_str(st)); return 1; }
        CK(cudaFree(ws));
        const kvq_kivi_shape ks = kvq_pkv_kivi_shape(&p, q.kind, T, d);
        const double meta = 8.0 * (double)kvq_kivi_groups(&ks), cb = (double)kvq_kivi_code_bytes(&ks);
        const double idx = (double)kvq_pkv_index_bytes(T);
        const double bytes = 2.0 * (double)in_b + cb + meta + idx;
        const bool fused = (q.opts & KVQ_CUDA_PKV_FUSED) && q.kind == KVQ_PKV_VALUE && q.npat > 16u;
        double moved = bytes + (fused ? 0.0 : (double)in_b);            /* the KIVI stage reads r */
        if (!(q.opts & KVQ_CUDA_DIRECT)) moved += 2.0 * ((double)in_b + idx + cb + meta); /* copy-outs */
        row &r = rows[nr++];
        snprintf(r.name, sizeof r.name, "%s [%s]", q.name, data_name[q.data]);
        r.ms = ms;
        r.bytes = bytes;
        r.moved = moved;
        r.ops = !(q.opts & UN) && q.npat == NP ? prune_ops(pm[q.data]) : 3.0 * q.npat + 3.0 + 7.0;
    }
    load(DATA_CLUSTER);
    /* dequantize the block a value/key quantize of |M| = 32 leaves (run them again), in
     * both forms of [PKV-DEV-06] side by side; the default is the two kernels */
    for (uint32_t kind : {KVQ_PKV_VALUE, KVQ_PKV_KEY_DECODE}) {
        const size_t wb = kvq_cuda_pkv_quantize_workspace(&p, kind, T, d, KVQ_CUDA_DIRECT);
        void *ws;
        CK(cudaMalloc(&ws, wb));
        uint32_t f;
        kvq_status st = kvq_cuda_pkv_quantize(codes, scale, zero, index, resid, &f, x, kind, T, d, bank,
                                              NP, &p, &pol, ws, wb, KVQ_CUDA_DIRECT, 0);
        if (st != KVQ_OK) { fprintf(stderr, "pkv-bench: quantize: %s\n", kvq_status_str(st)); return 1; }
        CK(cudaFree(ws));
        CK(cudaMalloc(&ws, kvq_cuda_pkv_dequantize_workspace()));
        for (uint32_t form : {KVQ_CUDA_PKV_DQ_ONE, KVQ_CUDA_PKV_DQ_TWO}) {
            double ms = time_med(reps, [&] {
                kvq_status s = kvq_cuda_pkv_dequantize_async(y, res, codes, scale, zero, index, kind, T, d,
                                                             bank, NP, &p, &pol, ws,
                                                             kvq_cuda_pkv_dequantize_workspace(), form, 0);
                if (s != KVQ_OK) st = s;
            });
            kvq_cuda_result h;
            CK(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost));
            if (st == KVQ_OK) st = (kvq_status)h.status;
            if (st != KVQ_OK) { fprintf(stderr, "pkv-bench: dequantize: %s\n", kvq_status_str(st)); return 1; }
            const kvq_kivi_shape ks = kvq_pkv_kivi_shape(&p, kind, T, d);
            const double meta = 8.0 * (double)kvq_kivi_groups(&ks), cb = (double)kvq_kivi_code_bytes(&ks);
            const double idx = (double)kvq_pkv_index_bytes(T);
            const bool one = form == KVQ_CUDA_PKV_DQ_ONE, dflt = !one;
            row &r = rows[nr++];
            snprintf(r.name, sizeof r.name, "DQ %s, |M| = 32, %s%s", kind == KVQ_PKV_VALUE ? "values" : "keys",
                     one ? "one kernel (check, barrier, write)" : "two kernels (check; write)",
                     dflt ? " *" : "");
            r.ms = ms;
            r.bytes = (double)in_b + cb + meta + idx;
            r.moved = r.bytes + meta + idx; /* the check's reads; the write pass rereads from L2 */
            r.ops = 8.0;
        }
        CK(cudaFree(ws));
    }
    printf("# gpu/reports/pkv-bench.txt -- PKV quantizer and dequantizer vs a device-to-device copy\n");
    printf("# gpu/pkv/pkv_bench.cu; device %s (sm_%d%d); commit %s\n", prop.name, prop.major, prop.minor, commit);
    printf("# input [%u][%u] binary32 = %llu MiB, G 128, bits 2, F32 metadata; CUDA events, L2 flushed "
           "before each rep, medians of %d\n", T, d, (unsigned long long)(in_b >> 20), reps);
    printf("# bandwidth = compulsory bytes / median (quantize: x + residual + codes + metadata + indices;\n");
    printf("#   dequantize: codes + metadata + indices + y); ratio = bandwidth / copy bandwidth (goal >= 0.85)\n");
    printf("# floor = the ratio the pass structure reaches at copy speed: compulsory / bytes it moves\n");
    printf("#   (the KIVI stage reads the residual again; the scratch form copies its outputs out);\n");
    printf("#   of floor = ratio / floor; ops/elem: the kernels' per-value arithmetic (pkv_bench.cu says how counted;\n");
    printf("#   pruned rows [PKV-DEV-05]: from a host count of the visits on %u tokens of the row's data)\n", TS);
    printf("# pruned: the default assignment (d = 128, |M| <= 32); unpruned: KVQ_CUDA_PKV_UNPRUNED; DQ rows: both\n");
    printf("#   forms of [PKV-DEV-06] side by side, * the default\n");
    for (int k = 0; k < 3; k++)
        printf("# pruning model, %s data: %.2f exact distances a token by cooperative visits, full scan %.1f%% of tokens\n",
               data_name[k], pm[k].visits, 100.0 * pm[k].full);
    printf("copy D2D %llu MiB: %.4f ms, %.1f GB/s (2 x bytes / time)\n", (unsigned long long)(in_b >> 20),
           t_copy, bw_copy);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        fprintf(stderr, "pkv-bench: cannot write %s\n", json);
        return 2;
    }
    if (jf) fprintf(jf, "{\n  \"device\": \"%s\",\n  \"commit\": \"%s\",\n  \"input_bytes\": %llu,\n  \"reps\": %d,\n"
                    "  \"copy\": {\"ms\": %.5f, \"GBps\": %.2f},\n  \"rows\": [\n",
                    prop.name, commit, (unsigned long long)in_b, reps, t_copy, bw_copy);
    for (int i = 0; i < nr; i++) {
        const double bw = rows[i].bytes / (rows[i].ms * 1e-3) / 1e9;
        const double floor_r = rows[i].bytes / rows[i].moved;
        printf("%-56s %.4f ms  %7.1f GB/s  ratio %.3f  floor %.3f  of floor %.3f  ops/elem %.0f\n", rows[i].name,
               rows[i].ms, bw, bw / bw_copy, floor_r, bw / bw_copy / floor_r, rows[i].ops);
        if (jf) fprintf(jf, "    {\"name\": \"%s\", \"ms\": %.5f, \"bytes\": %.0f, \"moved\": %.0f, \"GBps\": %.2f, "
                        "\"ratio\": %.4f, \"floor\": %.4f, \"ops_per_elem\": %.0f}%s\n", rows[i].name, rows[i].ms,
                        rows[i].bytes, rows[i].moved, bw, bw / bw_copy, floor_r, rows[i].ops, i + 1 < nr ? "," : "");
    }
    if (jf) {
        fprintf(jf, "  ],\n  \"goal_ratio\": 0.85\n}\n");
        fclose(jf);
    }
    return 0;
}
