/*
 * sage_bench.cu -- bandwidth of the SAGE Q/K and V quantizers against a copy.
 *
 * One run, one device: a 256 MiB binary32 input ([2^19][128]), each
 * configuration timed with CUDA events around the launcher call, the L2 flushed
 * (a 256 MiB memset of another buffer) before every repetition, medians of
 * REPS.  The baseline is cudaMemcpyAsync device to device of the 256 MiB input
 * (it reads and writes 256 MiB).  Bandwidths: a quantizer's is its compulsory
 * bytes, input + outputs (codes, scales), over its median time; the copy's is
 * 2 x 256 MiB over its median.  ratio = quantizer bandwidth / copy bandwidth
 * (goal >= 0.85).  The Q/K kernel is timed in its one-pass form
 * (KVQ_CUDA_DIRECT) and in its safe form (a separate input check pass first);
 * V reads its input twice by construction (per-channel maxima over all tokens,
 * then the codes: 256 MiB do not fit in L2), so its ratio is bounded near
 * (1 + 1/4) / (2 + 1/4) = 0.56 of the copy.
 *
 * usage: kvq_sage_bench [--reps R] [--json PATH] [--commit TEXT]
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_cuda.h"

#define KVQ_BENCH_NAME "sage-bench"
#include "bench_time.cuh"
#include "sage/sage_common.cuh"

__global__ void fill_kernel(float *x, uint64_t n)
{
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t h = e * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        x[e] = ((float)(h & 0xFFFFFF) - 8388608.0f) * 0x1p-20f;
    }
}

int main(int argc, char **argv)
{
    int reps = 20;
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
    }
    char why[256];
    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf("sage-bench: SKIPPED (no CUDA device: %s)\n", why);
        return 0;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const kvq_sage_shape sh = {1u << 19, 128u};
    const uint64_t n = kvq_sage_elems(&sh), in_b = n * 4u;
    float *x;
    uint8_t *codes, *cpy;
    float *scale;
    CK(cudaMalloc(&x, in_b));
    CK(cudaMalloc(&cpy, in_b));
    CK(cudaMalloc(&codes, n));
    CK(cudaMalloc(&scale, (size_t)64 << 20));
    bench_flush_alloc();
    fill_kernel<<<4096, 256>>>(x, n);
    CK(cudaDeviceSynchronize());
    const kvq_policy pol = kvq_policy_default;

    const double t_copy = time_med(reps, [&] { CK(cudaMemcpyAsync(cpy, x, in_b, cudaMemcpyDeviceToDevice, 0)); });
    const double bw_copy = 2.0 * (double)in_b / (t_copy * 1e-3) / 1e9;

    void *ws;
    kvq_cuda_result *res;
    CK(cudaMalloc(&ws, kvq_cuda_sage_workspace()));
    CK(cudaMalloc((void **)&res, sizeof *res));
    /* moved: the bytes a pass structure must move (V reads its input twice) */
    struct row { const char *name; double ms, bytes, moved; } rows[20];
    int nr = 0;
    /* async 2: the Q/K kernels alone (sage_enqueue_qk on a clear state, no clearing, no
     * status kernel: what the launcher adds is the difference) [SAGE-DEV-20] */
    struct qcfg { const char *name; uint32_t role, bits, opts; int async; } qc[] = {
        {"Q int8 thread paper, async, direct (one read)", KVQ_SAGE_ROLE_Q, 8u, KVQ_CUDA_DIRECT, 1},
        {"K int4 thread paper, async, direct (one read)", KVQ_SAGE_ROLE_K, 4u, KVQ_CUDA_DIRECT, 1},
        {"Q int8 thread paper, async, direct, clean ws", KVQ_SAGE_ROLE_Q, 8u, KVQ_CUDA_DIRECT | KVQ_CUDA_WS_CLEAN, 1},
        {"K int4 thread paper, async, direct, clean ws", KVQ_SAGE_ROLE_K, 4u, KVQ_CUDA_DIRECT | KVQ_CUDA_WS_CLEAN, 1},
        {"Q int8 thread paper, kernel alone, direct", KVQ_SAGE_ROLE_Q, 8u, KVQ_CUDA_DIRECT, 2},
        {"K int4 thread paper, kernel alone, direct", KVQ_SAGE_ROLE_K, 4u, KVQ_CUDA_DIRECT, 2},
        {"Q int8 thread paper, async, safe (check pass)", KVQ_SAGE_ROLE_Q, 8u, 0u, 1},
        {"K int4 thread paper, async, safe (check pass)", KVQ_SAGE_ROLE_K, 4u, 0u, 1},
        {"Q int8 thread paper, blocking, direct", KVQ_SAGE_ROLE_Q, 8u, KVQ_CUDA_DIRECT, 0},
        {"K int4 thread paper, blocking, direct", KVQ_SAGE_ROLE_K, 4u, KVQ_CUDA_DIRECT, 0},
    };
    for (auto &q : qc) {
        kvq_sage_qk k = kvq_sage_qk_default(q.role, q.bits);
        kvq_status st = KVQ_OK;
        if (q.async == 2) CK(cudaMemset(ws, 0, kvq_cuda_sage_workspace()));
        double ms = time_med(reps, [&] {
            kvq_status s = q.async == 2 ? sage_enqueue_qk(codes, scale, x, 1u, &sh, &k, &pol, q.opts,
                                                          (sage_dev_state *)ws, 0)
                         : q.async ? kvq_cuda_sage_quantize_qk_async(codes, scale, res, x, &sh, &k, &pol, ws,
                                                                    kvq_cuda_sage_workspace(), q.opts, 0)
                                   : kvq_cuda_sage_quantize_qk(codes, scale, NULL, x, &sh, &k, &pol, q.opts, 0);
            if (s != KVQ_OK) st = s;
        });
        kvq_cuda_result h;
        if (q.async == 2) {                                     /* the state the kernels left: still clear */
            sage_dev_state sd;
            CK(cudaMemcpy(&sd, ws, sizeof sd, cudaMemcpyDeviceToHost));
            h.status = sd.err ? (uint32_t)KVQ_E_DEVICE : (uint32_t)KVQ_OK;
            CK(cudaMemset(ws, 0, kvq_cuda_sage_workspace()));   /* the rows after it start clean */
        } else {
            CK(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost));
        }
        if (st == KVQ_OK && q.async) st = (kvq_status)h.status;
        if (st != KVQ_OK) { fprintf(stderr, "sage-bench: %s: %s\n", q.name, kvq_status_str(st)); return 1; }
        const double bytes = (double)in_b + (double)kvq_sage_code_bytes(&sh, q.bits) +
                             4.0 * (double)kvq_sage_scale_count(&sh, &k);
        rows[nr++] = {q.name, ms, bytes, bytes + (q.opts & KVQ_CUDA_DIRECT ? 0.0 : (double)in_b)};
    }
    for (int as = 1; as >= 0; as--) {
        kvq_status st = KVQ_OK;
        double ms = time_med(reps, [&] {
            kvq_status s = as ? kvq_cuda_sage_quantize_v_async(codes, scale, res, x, &sh, KVQ_SAGE_FP8_E4M3, &pol, ws,
                                                               kvq_cuda_sage_workspace(), 0)
                              : kvq_cuda_sage_quantize_v(codes, scale, NULL, x, &sh, KVQ_SAGE_FP8_E4M3, &pol, 0);
            if (s != KVQ_OK) st = s;
        });
        kvq_cuda_result h;
        CK(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost));
        if (st == KVQ_OK && as) st = (kvq_status)h.status;
        if (st != KVQ_OK) { fprintf(stderr, "sage-bench: V: %s\n", kvq_status_str(st)); return 1; }
        const double bytes = (double)in_b + (double)n + 4.0 * sh.dim;
        rows[nr++] = {as ? "V fp8 e4m3 per channel, async (two reads)" : "V fp8 e4m3 per channel, blocking",
                      ms, bytes, bytes + (double)in_b};
    }
    printf("# gpu/reports/sage-bench.txt -- SAGE quantizers vs a device-to-device copy\n");
    printf("# gpu/sage/sage_bench.cu; device %s (sm_%d%d); commit %s\n", p.name, p.major, p.minor, commit);
    printf("# input [%u][%u] binary32 = %llu MiB; CUDA events, L2 flushed before each rep, medians of %d\n",
           sh.tokens, sh.dim, (unsigned long long)(in_b >> 20), reps);
    printf("# bandwidth = (input + output bytes) / median; ratio = bandwidth / copy bandwidth (goal >= 0.85)\n");
    printf("# floor = the ratio a pass structure reaches at copy speed: (input + output) / bytes it moves\n");
    printf("#   (a check pass or V's maxima pass reads the input once more); of floor = ratio / floor\n");
    printf("# async: the stream-ordered launcher (caller's workspace, result word in device memory);\n");
    printf("# blocking: scratch allocated, result copied back and the stream synchronized in the call;\n");
    printf("# clean ws: the async form with KVQ_CUDA_WS_CLEAN (no clearing memset); kernel alone: the Q/K\n");
    printf("#   kernels on a clear state, no clearing, no status kernel [SAGE-DEV-20]\n");
    printf("copy D2D %llu MiB: %.4f ms, %.1f GB/s (2 x bytes / time)\n", (unsigned long long)(in_b >> 20),
           t_copy, bw_copy);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf) fprintf(jf, "{\n  \"device\": \"%s\",\n  \"commit\": \"%s\",\n  \"input_bytes\": %llu,\n  \"reps\": %d,\n"
                    "  \"copy\": {\"ms\": %.5f, \"GBps\": %.2f},\n  \"rows\": [\n",
                    p.name, commit, (unsigned long long)in_b, reps, t_copy, bw_copy);
    for (int i = 0; i < nr; i++) {
        const double bw = rows[i].bytes / (rows[i].ms * 1e-3) / 1e9;
        const double floor_r = rows[i].bytes / rows[i].moved;
        printf("%-50s %.4f ms  %7.1f GB/s  ratio %.3f  floor %.3f  of floor %.3f\n", rows[i].name, rows[i].ms,
               bw, bw / bw_copy, floor_r, bw / bw_copy / floor_r);
        if (jf) fprintf(jf, "    {\"name\": \"%s\", \"ms\": %.5f, \"bytes\": %.0f, \"moved\": %.0f, \"GBps\": %.2f, "
                        "\"ratio\": %.4f, \"floor\": %.4f}%s\n", rows[i].name, rows[i].ms, rows[i].bytes,
                        rows[i].moved, bw, bw / bw_copy, floor_r, i + 1 < nr ? "," : "");
    }
    if (jf) {
        fprintf(jf, "  ],\n  \"goal_ratio\": 0.85\n}\n");
        fclose(jf);
    }
    return 0;
}
