/*
 * cert_floor.cu -- what the device alone costs for the pieces every certified
 * decode step is made of (spec/cert.md [CERT-DEV-09]): no CERT arithmetic,
 * only the memory traffic and the waits of the step's shape, so that the
 * benchmark's times can be set against them.
 *
 *   read      one kernel streams Phase 1's bytes (INT8 codes and binary32
 *             sigma, z: 1.5 MiB a 1024 tokens for 8 KV heads, d = 128) with
 *             16-byte loads, four in flight a thread
 *   paper     the same read of the paper variant's tier-1 bytes [CERT-DEV-10]:
 *             Phase 1's and the INT4 values with their binary32 scale and
 *             offset (2.5 MiB a 1024 tokens for 8 KV heads, d = 128): every
 *             block's keys and values once
 *   segment   the same read of the paper Phase 2 segment pass's bytes
 *             [CERT-DEV-10]: the INT4 values with their scale and offset and
 *             Phase 1's binary32 scores of 32 query heads (1.125 MiB a 1024
 *             tokens for 8 KV heads, d = 128): what the early segment pass
 *             reads once
 *   chain     the same read followed by two one-CTA kernels launched as
 *             programmatic dependents (each waits for the one before, as the
 *             select kernel and Phase 2 do); the difference is what two
 *             kernel boundaries add
 *   host      CTAs of 1024 threads copy blocks of 16 x 128 binary16 values
 *             (4 KiB) from mapped pinned host memory to device memory, every
 *             load of a thread issued before its stores (the staging of
 *             promoted values); timed inside the kernel (%globaltimer, first
 *             CTA start to last CTA end)
 *
 * Every repetition starts with a cold L2 (256 MiB written first), as in
 * gpu/cert/cert_bench.py; medians.
 * usage: kvq_cert_floor [--reps R] [--json F] [--commit C]  (C: recorded in both reports)
 * Exit 0 with the table, 2 when no device is present (the table is not
 * printed), 1 on a CUDA error.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_BYTES (256u << 20)
#define BLOCK_BYTES (16u * 128u * 2u)                   /* a block's binary16 values */
#define P1_BYTES_PER_K (1536u * 1024u)                  /* Phase 1's bytes a 1024 tokens */
#define PAPER_BYTES_PER_K (2560u * 1024u)               /* and the INT4 values' (paper) */
#define SEG_BYTES_PER_K (1152u * 1024u)                 /* INT4 values and 32 heads' scores */

#define CK(x) \
    do { \
        cudaError_t e_ = (x); \
        if (e_ != cudaSuccess) { \
            fprintf(stderr, "kvq_cert_floor: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
            exit(1); \
        } \
    } while (0)

__global__ void read_kernel(const uint4 *p, uint64_t n16, uint32_t *sink)
{
    cudaTriggerProgrammaticLaunchCompletion();            /* as Phase 1 does */
    uint32_t acc = 0u;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3u * stride < n16; i += 4u * stride) {
        uint4 v[4];
#pragma unroll
        for (uint32_t k = 0; k < 4u; k++) v[k] = __ldcs(p + i + k * stride);
#pragma unroll
        for (uint32_t k = 0; k < 4u; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n16; i += stride) {
        const uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;                /* keeps the loads */
}

__global__ void dependent_kernel(uint32_t *sink)
{
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
    if (threadIdx.x == 0) sink[0] += 1u;
}

__device__ unsigned long long host_t[2];

__global__ void __launch_bounds__(1024) host_kernel(const uint4 *src, uint4 *dst, uint32_t blocks_per_cta)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0) atomicMin(&host_t[0], t);
    const uint32_t per = BLOCK_BYTES / 16u, n = blocks_per_cta * per;
    const uint64_t base = (uint64_t)blockIdx.x * n;
    uint4 v[8];                                           /* up to 32 blocks a CTA */
#pragma unroll
    for (uint32_t k = 0; k < 8u; k++)
        if (threadIdx.x + k * blockDim.x < n) v[k] = src[base + threadIdx.x + k * blockDim.x];
#pragma unroll
    for (uint32_t k = 0; k < 8u; k++)
        if (threadIdx.x + k * blockDim.x < n) dst[base + threadIdx.x + k * blockDim.x] = v[k];
    __syncthreads();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0) atomicMax(&host_t[1], t);
}

static int cmp_f(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_f);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

static void launch_dependent(uint32_t *sink, cudaStream_t s)
{
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(128);
    cfg.stream = s;
    cudaLaunchAttribute at;
    at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, dependent_kernel, sink));
}

int main(int argc, char **argv)
{
    int reps = 50;
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            reps = (*argv[i] && !*end && v >= 3 && v <= 10000) ? (int)v : -1;
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (!strcmp(argv[i], "--commit") && i + 1 < argc) {
            commit = argv[++i];
            for (const char *c = commit; *c; c++)
                if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      *c == '-' || *c == '.')) {
                    fprintf(stderr, "kvq_cert_floor: --commit: character '%c' not allowed\n", *c);
                    return 2;
                }
        } else {
            fprintf(stderr, "kvq_cert_floor: unknown argument '%s'\n"
                            "usage: kvq_cert_floor [--reps R] [--json F] [--commit C]\n",
                    argv[i]);
            return 2;
        }
    }
    if (reps < 3 || reps > 10000) {
        fprintf(stderr, "kvq_cert_floor: --reps must be 3..10000\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "kvq_cert_floor: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const uint32_t ns[] = {8192u, 32768u, 65536u, 131072u};
    const uint64_t maxb = (uint64_t)PAPER_BYTES_PER_K * (131072u / 1024u);
    uint8_t *flush, *buf;
    uint32_t *sink;
    const uint32_t rgrid = (uint32_t)prop.multiProcessorCount * 4u, rthreads = 512u;
    CK(cudaMalloc(&flush, FLUSH_BYTES));
    CK(cudaMalloc(&buf, maxb));
    CK(cudaMemset(buf, 0x5a, maxb));
    CK(cudaMalloc(&sink, sizeof(uint32_t)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float *t = (float *)malloc(sizeof(float) * (size_t)reps);
    if (!t) {
        fprintf(stderr, "kvq_cert_floor: out of memory (%d repetitions)\n", reps);
        return 1;
    }

    /* the JSON report is written to F.tmp and renamed when complete */
    FILE *jf = NULL;
    char jtmp[4096];
    if (json) {
        if (snprintf(jtmp, sizeof jtmp, "%s.tmp", json) >= (int)sizeof jtmp) {
            fprintf(stderr, "kvq_cert_floor: --json: path too long\n");
            return 2;
        }
        jf = fopen(jtmp, "w");
        if (!jf) {
            fprintf(stderr, "kvq_cert_floor: cannot write %s\n", jtmp);
            return 1;
        }
        fprintf(jf, "{\"device\": \"%s\", \"commit\": \"%s\", \"sms\": %d, \"reps\": %d, \"read\": [",
                prop.name, commit, prop.multiProcessorCount, reps);
    }
    printf("# device: %s (%d SMs); commit %s; medians of %d, cold L2 before each repetition\n",
           prop.name, prop.multiProcessorCount, commit, reps);
    printf("\n       n  phase1_MiB   read_us  read_TB/s  read+2dep_us  2 boundaries_us\n");
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        const uint64_t bytes = (uint64_t)P1_BYTES_PER_K * (ns[a] / 1024u);
        float med[2];
        for (int chain = 0; chain < 2; chain++) {
            for (int r = -2; r < reps; r++) {
                CK(cudaMemsetAsync(flush, r & 0xff, FLUSH_BYTES, s));
                CK(cudaEventRecord(e0, s));
                read_kernel<<<rgrid, rthreads, 0, s>>>((const uint4 *)buf, bytes / 16u, sink);
                CK(cudaGetLastError());
                if (chain) {
                    launch_dependent(sink, s);
                    launch_dependent(sink, s);
                }
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 0) CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            med[chain] = 1000.0f * median(t, reps);
        }
        printf("%8u  %10.1f  %8.1f  %9.2f  %12.1f  %15.1f\n", ns[a], bytes / 1048576.0, med[0],
               bytes / (med[0] * 1e6), med[1], med[1] - med[0]);
        if (jf)
            fprintf(jf, "%s{\"n\": %u, \"bytes\": %llu, \"read_us\": %.2f, \"read_dep2_us\": %.2f}",
                    a ? ", " : "", ns[a], (unsigned long long)bytes, med[0], med[1]);
    }

    /* the paper variant's tier-1 bytes, read once; then the segment pass's */
    for (int part = 0; part < 2; part++) {
        if (jf) fprintf(jf, part ? "], \"read_segment\": [" : "], \"read_paper\": [");
        printf(part ? "\n       n segment_MiB   read_us  read_TB/s\n" : "\n       n   paper_MiB   read_us  read_TB/s\n");
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
            const uint64_t bytes = (uint64_t)(part ? SEG_BYTES_PER_K : PAPER_BYTES_PER_K) * (ns[a] / 1024u);
            for (int r = -2; r < reps; r++) {
                CK(cudaMemsetAsync(flush, r & 0xff, FLUSH_BYTES, s));
                CK(cudaEventRecord(e0, s));
                read_kernel<<<rgrid, rthreads, 0, s>>>((const uint4 *)buf, bytes / 16u, sink);
                CK(cudaGetLastError());
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                if (r >= 0) CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            const float m = 1000.0f * median(t, reps);
            printf("%8u  %10.1f  %8.1f  %9.2f\n", ns[a], bytes / 1048576.0, m, bytes / (m * 1e6));
            if (jf)
                fprintf(jf, "%s{\"n\": %u, \"bytes\": %llu, \"read_us\": %.2f}", a ? ", " : "", ns[a],
                        (unsigned long long)bytes, m);
        }
    }

    /* host link: G CTAs x K blocks each */
    const uint32_t cfgs[][2] = {{1u, 1u}, {1u, 4u}, {1u, 16u}, {1u, 32u}, {8u, 16u}, {32u, 16u}};
    uint8_t *hbuf, *dbuf;
    const size_t hbytes = (size_t)32u * 16u * BLOCK_BYTES;
    CK(cudaHostAlloc((void **)&hbuf, hbytes, cudaHostAllocMapped));
    memset(hbuf, 0x3c, hbytes);
    void *hdev;
    CK(cudaHostGetDevicePointer(&hdev, hbuf, 0));
    CK(cudaMalloc(&dbuf, hbytes));
    if (jf) fprintf(jf, "], \"host\": [");
    printf("\n  CTAs  blocks_a_CTA    KiB   in_kernel_us   GB/s\n");
    for (size_t a = 0; a < sizeof cfgs / sizeof cfgs[0]; a++) {
        const uint32_t g = cfgs[a][0], k = cfgs[a][1];
        for (int r = -2; r < reps; r++) {
            const unsigned long long init[2] = {~0ull, 0ull};
            CK(cudaMemcpyToSymbolAsync(host_t, init, sizeof init, 0, cudaMemcpyHostToDevice, s));
            CK(cudaMemsetAsync(flush, r & 0xff, FLUSH_BYTES, s));
            host_kernel<<<g, 1024, 0, s>>>((const uint4 *)hdev, (uint4 *)dbuf, k);
            CK(cudaGetLastError());
            unsigned long long ht[2];
            CK(cudaMemcpyFromSymbolAsync(ht, host_t, sizeof ht, 0, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            if (r >= 0) t[r] = (float)(ht[1] - ht[0]) / 1000.0f;
        }
        const float m = median(t, reps);
        const double kib = (double)g * k * BLOCK_BYTES / 1024.0;
        printf("  %4u  %12u  %5.0f  %13.2f  %5.1f\n", g, k, kib, m, kib * 1024.0 / (m * 1e3));
        if (jf)
            fprintf(jf, "%s{\"ctas\": %u, \"blocks_per_cta\": %u, \"in_kernel_us\": %.3f}", a ? ", " : "", g,
                    k, m);
    }
    if (jf) {
        fprintf(jf, "]}\n");
        if (fclose(jf) != 0 || rename(jtmp, json) != 0) {
            fprintf(stderr, "kvq_cert_floor: write error on %s\n", json);
            remove(jtmp);
            return 1;
        }
    }
    free(t);
    CK(cudaFreeHost(hbuf));
    CK(cudaFree(dbuf));
    CK(cudaFree(buf));
    CK(cudaFree(flush));
    CK(cudaFree(sink));
    return 0;
}
