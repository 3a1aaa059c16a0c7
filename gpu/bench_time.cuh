/*
 * bench_time.cuh -- the bandwidth benchmarks' timing (gpu/sage/sage_bench.cu,
 * gpu/pkv/pkv_bench.cu, gpu/vidkv/vidkv_bench.cu): CK (a CUDA error ends the
 * program with exit 2, named with KVQ_BENCH_NAME, which the includer defines),
 * and time_med, the median over reps of one call f timed by CUDA events on
 * stream 0, after one warm-up call, each rep preceded by a write of g_flush
 * (256 MiB, allocated by bench_flush_alloc) so that L2 starts cold.
 */
#ifndef KVQ_BENCH_TIME_CUH
#define KVQ_BENCH_TIME_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#ifndef KVQ_BENCH_NAME
#error "define KVQ_BENCH_NAME (the program's name for its error messages) before bench_time.cuh"
#endif

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, KVQ_BENCH_NAME ": %s: %s\n", #x, cudaGetErrorString(e_));          \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

static void *g_flush;
static size_t g_flush_n = (size_t)256 << 20;

static void bench_flush_alloc(void)
{
    CK(cudaMalloc(&g_flush, g_flush_n));
}

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F> static double time_med(int reps, F f)
{
    cudaEvent_t a, b;
    std::vector<float> t;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    f(); /* warm-up: plans, pools */
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; r++) {
        CK(cudaMemsetAsync(g_flush, r & 0xFF, g_flush_n, 0)); /* cold L2 */
        CK(cudaEventRecord(a, 0));
        f();
        CK(cudaEventRecord(b, 0));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

#endif /* KVQ_BENCH_TIME_CUH */
