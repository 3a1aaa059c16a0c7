/*
 * bench.cu -- bandwidth of the CUDA KIVI quantizer and dequantizer
 * (build/gpu/kvq_gpu_bench).
 *
 *   kvq_gpu_bench [out.json] [commit]      (commit also from env KVQ_COMMIT)
 *
 * For bits {2,4,8} x grouping {channel, token} x metadata {f32, f16} x G {32,128}
 * on a tensor of KVQ_BENCH_MIB MiB of binary32 (default 256; D = 128 channels):
 * times (cudaEvent, 3 warm-ups, median of KVQ_BENCH_REPS >= 20 runs) of
 *   - a device-to-device cudaMemcpy of the input's bytes (the yardstick),
 *   - quantize, checked (the contract: scratch + copy-out; the default),
 *   - quantize, checked without the L2 discard of the scratch,
 *   - quantize, KVQ_CUDA_DIRECT (one pass; outputs unspecified on error),
 *   - the same with KVQ_CUDA_WS_CLEAN (the workspace's state as the call before left it),
 *   - quantize through the blocking API (includes the host wait),
 *   - dequantize (pre-pass + writing kernel),
 *   - dequantize, KVQ_CUDA_DIRECT | KVQ_CUDA_WS_CLEAN (the writing kernel checks its
 *     groups itself; outputs unspecified on error [KIVI-DEV-10]),
 * and the achieved bandwidth, counted as bytes read + bytes written that the
 * operation must move (input once, outputs once; the copy likewise: read +
 * written), and its ratio to the copy measured in the same run.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvq.h"
#include "kvq_cuda.h"

#define CK(call)                                                                         \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "bench: %s: %s\n", #call, cudaGetErrorString(e_));           \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

__global__ void fill_kernel(float *x, uint64_t n, uint32_t salt)
{
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^ salt;
        h ^= h >> 15;
        h *= 0x2C1B3C6Du;
        h ^= h >> 12;
        h *= 0x297A2D39u;
        h ^= h >> 15;
        x[i] = ((float)(h >> 8) * 0x1p-24f - 0.5f) * 8.0f; /* [-4, 4) */
    }
}

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static cudaEvent_t ev0, ev1;
static int g_reps = 25;

/* Median milliseconds of op() over g_reps runs after 3 warm-ups. */
template <typename F>
static float time_median(F op)
{
    float t[256];
    for (int k = 0; k < 3; k++) op();
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < g_reps; k++) {
        CK(cudaEventRecord(ev0, 0));
        op();
        CK(cudaEventRecord(ev1, 0));
        CK(cudaEventSynchronize(ev1));
        CK(cudaEventElapsedTime(&t[k], ev0, ev1));
    }
    qsort(t, (size_t)g_reps, sizeof t[0], cmpf);
    return g_reps % 2 ? t[g_reps / 2] : 0.5f * (t[g_reps / 2 - 1] + t[g_reps / 2]);
}

static void check_result(const kvq_cuda_result *d_res, const char *what)
{
    kvq_cuda_result r;
    CK(cudaMemcpy(&r, d_res, sizeof r, cudaMemcpyDeviceToHost));
    if (r.status != KVQ_OK) {
        fprintf(stderr, "bench: %s returned %s\n", what, kvq_status_name((int)r.status));
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : NULL;
    const char *commit = argc > 2 ? argv[2] : getenv("KVQ_COMMIT");
    const char *env = getenv("KVQ_BENCH_MIB");
    uint64_t mib = env ? strtoull(env, NULL, 0) : 256u;
    env = getenv("KVQ_BENCH_REPS");
    if (env) g_reps = atoi(env);
    if (g_reps < 20) g_reps = 20;
    if (g_reps > 256) g_reps = 256;
    if (commit == NULL) commit = "unknown";

    char why[256];
    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf("bench: SKIPPED (no CUDA device: %s)\n", why);
        return 0;
    }
    cudaDeviceProp prop;
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));

    const uint32_t D = 128;
    const uint32_t T = (uint32_t)(mib * 1024u * 1024u / 4u / D);
    const uint64_t n = (uint64_t)T * D, xbytes = n * 4u;
    float *x, *xcopy, *y;
    uint8_t *codes;
    float *scale, *zero;
    void *ws;
    kvq_cuda_result *res;
    CK(cudaMalloc(&x, xbytes));
    CK(cudaMalloc(&xcopy, xbytes));
    CK(cudaMalloc(&y, xbytes));
    CK(cudaMalloc(&codes, n));                       /* 8 bits at most */
    CK(cudaMalloc(&scale, n / 32u * 4u));            /* G >= 32 */
    CK(cudaMalloc(&zero, n / 32u * 4u));
    size_t wsmax = 256u + n + 2u * (n / 32u * 4u) + 4096u;
    CK(cudaMalloc(&ws, wsmax));
    CK(cudaMalloc(&res, sizeof *res));
    fill_kernel<<<4096, 256>>>(x, n, 0x5eedu);
    CK(cudaDeviceSynchronize());

    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    printf("kvq_gpu_bench: device %s (sm_%d%d, %d SMs), commit %s, %s\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount, commit, date);
    printf("tensor %u x %u binary32 = %.0f MiB; median of %d; GB/s = (bytes read + written)/time\n",
           T, D, xbytes / 1048576.0, g_reps);
    printf("%-4s %-3s %-7s %-4s | %8s | %-21s | %-21s | %-21s | %-21s | %8s | %-21s | %-21s\n", "bits",
           "G", "group", "meta", "copyGB/s", "quant checked GB/s r", "quant nodiscard GB/s r",
           "quant direct GB/s r", "direct clean GB/s r", "blk ms", "dequant GB/s r",
           "dq direct clean GB/s r");

    FILE *js = out ? fopen(out, "w") : NULL;
    if (out && !js) {
        fprintf(stderr, "bench: cannot write %s\n", out);
        return 2;
    }
    if (js)
        fprintf(js,
                "{\n  \"benchmark\": \"kvq_gpu_bench kivi\",\n  \"device\": \"%s\",\n"
                "  \"sm\": \"%d.%d\",\n  \"multiprocessors\": %d,\n  \"commit\": \"%s\",\n"
                "  \"date\": \"%s\",\n  \"tokens\": %u,\n  \"channels\": %u,\n"
                "  \"input_bytes\": %llu,\n  \"reps\": %d,\n  \"statistic\": \"median\",\n"
                "  \"bandwidth\": \"(bytes read + bytes written) / time; copy counted the same\",\n"
                "  \"results\": [\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, commit, date, T, D,
                (unsigned long long)xbytes, g_reps);

    static const uint32_t bitsv[] = {2, 4, 8}, groupv[] = {32, 128};
    int first = 1;
    double worst_checked = 1e9, worst_direct = 1e9, worst_deq = 1e9, worst_clean = 1e9, worst_dqd = 1e9;
    for (uint32_t gi = 0; gi < 2; gi++)
        for (uint32_t bi = 0; bi < 3; bi++)
            for (uint32_t grouping = 0; grouping < 2; grouping++)
                for (uint32_t meta = 0; meta < 2; meta++) {
                    kvq_kivi_shape sh = {bitsv[bi], groupv[gi], grouping, meta, T, D};
                    kvq_policy pol = kvq_policy_default;
                    const uint64_t ng = kvq_kivi_groups(&sh), cb = kvq_kivi_code_bytes(&sh);
                    const double qbytes = (double)xbytes + (double)cb + 2.0 * ng * 4.0;
                    const double dbytes = qbytes; /* codes + metadata in, y out */
                    const size_t wsq = kvq_cuda_kivi_quantize_workspace(&sh, 0);
                    if (wsq > wsmax) return 2;
                    float t_copy = time_median([&] {
                        CK(cudaMemcpyAsync(xcopy, x, xbytes, cudaMemcpyDeviceToDevice, 0));
                    });
                    auto quant = [&](uint32_t opts) {
                        kvq_status s = kvq_cuda_kivi_quantize_async(codes, scale, zero, res, x,
                                                                    &sh, &pol, ws, wsmax, opts, 0);
                        if (s != KVQ_OK) exit(3);
                    };
                    float t_qc = time_median([&] { quant(0); });
                    check_result(res, "quantize");
                    float t_qn = time_median([&] { quant(KVQ_CUDA_NO_DISCARD); });
                    check_result(res, "quantize/no-discard");
                    float t_qd = time_median([&] { quant(KVQ_CUDA_DIRECT); });
                    check_result(res, "quantize/direct");
                    /* the workspace as the calls before left it [KIVI-DEV-09] */
                    float t_qdc = time_median([&] { quant(KVQ_CUDA_DIRECT | KVQ_CUDA_WS_CLEAN); });
                    check_result(res, "quantize/direct/clean");
                    float t_qb = time_median([&] {
                        uint32_t f;
                        if (kvq_cuda_kivi_quantize(codes, scale, zero, &f, x, &sh, &pol, ws, wsmax,
                                                   0, 0) != KVQ_OK)
                            exit(3);
                    });
                    auto dequant = [&](uint32_t opts) {
                        kvq_status s = kvq_cuda_kivi_dequantize_async(y, res, codes, scale, zero,
                                                                      &sh, &pol, ws, wsmax, opts, 0);
                        if (s != KVQ_OK) exit(3);
                    };
                    float t_dq = time_median([&] { dequant(0u); });
                    check_result(res, "dequantize");
                    /* the direct form, on the workspace as the calls before left it [KIVI-DEV-10] */
                    float t_dqd = time_median([&] { dequant(KVQ_CUDA_DIRECT | KVQ_CUDA_WS_CLEAN); });
                    check_result(res, "dequantize/direct/clean");
                    double bw_copy = 2.0 * xbytes / (t_copy * 1e-3) / 1e9;
                    double bw_qc = qbytes / (t_qc * 1e-3) / 1e9;
                    double bw_qn = qbytes / (t_qn * 1e-3) / 1e9;
                    double bw_qd = qbytes / (t_qd * 1e-3) / 1e9;
                    double bw_qdc = qbytes / (t_qdc * 1e-3) / 1e9;
                    double bw_qb = qbytes / (t_qb * 1e-3) / 1e9;
                    double bw_dq = dbytes / (t_dq * 1e-3) / 1e9;
                    double bw_dqd = dbytes / (t_dqd * 1e-3) / 1e9;
                    const char *gname = grouping == KVQ_GROUP_CHANNEL ? "channel" : "token";
                    const char *mname = meta == KVQ_META_F16 ? "f16" : "f32";
                    printf("%-4u %-3u %-7s %-4s | %8.0f | %7.0f %5.3f %6.3fms | %7.0f %5.3f %6.3fms"
                           " | %7.0f %5.3f %6.3fms | %7.0f %5.3f %6.3fms | %8.3f | %7.0f %5.3f %6.3fms"
                           " | %7.0f %5.3f %6.3fms\n",
                           sh.bits, sh.group, gname, mname, bw_copy, bw_qc, bw_qc / bw_copy, t_qc,
                           bw_qn, bw_qn / bw_copy, t_qn, bw_qd, bw_qd / bw_copy, t_qd, bw_qdc,
                           bw_qdc / bw_copy, t_qdc, t_qb, bw_dq, bw_dq / bw_copy, t_dq, bw_dqd,
                           bw_dqd / bw_copy, t_dqd);
                    if (bw_qc / bw_copy < worst_checked) worst_checked = bw_qc / bw_copy;
                    if (bw_qd / bw_copy < worst_direct) worst_direct = bw_qd / bw_copy;
                    if (bw_qdc / bw_copy < worst_clean) worst_clean = bw_qdc / bw_copy;
                    if (bw_dq / bw_copy < worst_deq) worst_deq = bw_dq / bw_copy;
                    if (bw_dqd / bw_copy < worst_dqd) worst_dqd = bw_dqd / bw_copy;
                    if (js) {
                        fprintf(js,
                                "%s    {\"bits\": %u, \"group\": %u, \"grouping\": \"%s\", "
                                "\"meta\": \"%s\",\n     \"bytes_quantize\": %.0f, "
                                "\"bytes_dequantize\": %.0f, \"bytes_copy\": %.0f,\n"
                                "     \"copy_ms\": %.5f, \"copy_gbs\": %.1f,\n"
                                "     \"quantize_checked_ms\": %.5f, \"quantize_checked_gbs\": %.1f, "
                                "\"quantize_checked_ratio\": %.4f,\n"
                                "     \"quantize_checked_nodiscard_ms\": %.5f, "
                                "\"quantize_checked_nodiscard_gbs\": %.1f, "
                                "\"quantize_checked_nodiscard_ratio\": %.4f,\n"
                                "     \"quantize_direct_ms\": %.5f, \"quantize_direct_gbs\": %.1f, "
                                "\"quantize_direct_ratio\": %.4f,\n"
                                "     \"quantize_direct_clean_ms\": %.5f, \"quantize_direct_clean_gbs\": %.1f, "
                                "\"quantize_direct_clean_ratio\": %.4f,\n"
                                "     \"quantize_blocking_ms\": %.5f, \"quantize_blocking_gbs\": %.1f, "
                                "\"quantize_blocking_ratio\": %.4f,\n"
                                "     \"dequantize_ms\": %.5f, \"dequantize_gbs\": %.1f, "
                                "\"dequantize_ratio\": %.4f,\n"
                                "     \"dequantize_direct_clean_ms\": %.5f, \"dequantize_direct_clean_gbs\": %.1f, "
                                "\"dequantize_direct_clean_ratio\": %.4f}",
                                first ? "" : ",\n", sh.bits, sh.group, gname, mname, qbytes, dbytes,
                                2.0 * xbytes, t_copy, bw_copy, t_qc, bw_qc, bw_qc / bw_copy, t_qn,
                                bw_qn, bw_qn / bw_copy, t_qd, bw_qd, bw_qd / bw_copy, t_qdc, bw_qdc,
                                bw_qdc / bw_copy, t_qb, bw_qb,
                                bw_qb / bw_copy, t_dq, bw_dq, bw_dq / bw_copy, t_dqd, bw_dqd,
                                bw_dqd / bw_copy);
                        first = 0;
                    }
                }
    printf("worst ratio to copy: quantize checked %.3f, quantize direct %.3f, direct clean %.3f, "
           "dequantize %.3f, dequantize direct clean %.3f (goal 0.85)\n", worst_checked, worst_direct,
           worst_clean, worst_deq, worst_dqd);
    if (js) {
        fprintf(js,
                "\n  ],\n  \"worst_ratio\": {\"quantize_checked\": %.4f, \"quantize_direct\": %.4f, "
                "\"quantize_direct_clean\": %.4f, \"dequantize\": %.4f, \"dequantize_direct_clean\": %.4f},\n"
                "  \"goal_ratio\": 0.85\n}\n",
                worst_checked, worst_direct, worst_clean, worst_deq, worst_dqd);
        fclose(js);
    }
    return 0;
}
