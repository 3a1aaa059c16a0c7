/*
 * ex2_sweep.cu -- the device's base-2 exponential on every argument the
 * attention kernel can give it (spec/sage.md [SAGE-ATT-04], proofs/TRUSTED.md
 * [TR-EX2]).
 *
 * The kernel calls ex2.approx.ftz.f32 on RN32(s - m) and RN32(m_old - m_new),
 * which are never positive (-inf included, NaN never).  This program runs the
 * instruction on all 2^31 + 1 such binary32 arguments (+0 and every encoding
 * with the sign bit set but the NaNs) and judges each result against 2^x in
 * binary64 (CUDA's exp2 in double is within 1 ulp, a relative 2^-52, which the
 * judgement subtracts from its allowance): a result passes when it is within
 * a relative eps = 2^-21 of 2^x, or when it is +0 and 2^x < 2^-126 (flush to
 * zero).  It prints the largest relative error seen where 2^x >= 2^-126 and
 * the number of failures; exit 0 when there are none, 1 otherwise, 77 (SKIPPED)
 * without an sm_90 device.
 * usage: kvq_sage_ex2_sweep [--json FILE] [--commit TEXT]
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ex2_stats {
    unsigned long long fails, flushed, checked;
    unsigned int max_rel_bits;      /* binary32 bits of the largest relative error (>= 0) */
    unsigned int worst_x;           /* its argument */
    unsigned int first_fail_x;      /* 0xFFFFFFFF: none */
};

__device__ __forceinline__ float ex2_approx_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__global__ void sweep(ex2_stats *st, unsigned long long n)
{
    unsigned long long fails = 0, flushed = 0, checked = 0;
    unsigned int mrel = 0, wx = 0, ffx = 0xFFFFFFFFu;
    const double eps = 0x1p-21 - 0x1p-52;
    for (unsigned long long e = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; e < n;
         e += (unsigned long long)gridDim.x * blockDim.x) {
        /* e = 0 .. 2^31: e = 2^31 is +0, else the encoding 0x80000000 + e */
        const unsigned int bits = e == (1ull << 31) ? 0u : 0x80000000u + (unsigned int)e;
        if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0u) continue;   /* NaN */
        const float x = __uint_as_float(bits);
        const float y = ex2_approx_ftz(x);
        const double r = exp2((double)x);
        checked++;
        int ok;
        if (r >= 0x1p-126) {
            const double rel = fabs((double)y - r) / r;
            ok = rel <= eps;
            const float relf = (float)rel;
            if (__float_as_uint(relf) > mrel) {
                mrel = __float_as_uint(relf);
                wx = bits;
            }
        } else {
            ok = y == 0.0f || fabs((double)y - r) <= eps * r;
            if (y == 0.0f) flushed++;
        }
        if (!ok) {
            fails++;
            if (ffx == 0xFFFFFFFFu) ffx = bits;
        }
    }
    atomicAdd(&st->fails, fails);
    atomicAdd(&st->flushed, flushed);
    atomicAdd(&st->checked, checked);
    const unsigned int old = atomicMax(&st->max_rel_bits, mrel);
    if (mrel > old) atomicExch(&st->worst_x, wx);              /* informative: may race */
    if (ffx != 0xFFFFFFFFu) atomicMin(&st->first_fail_x, ffx);
}

int main(int argc, char **argv)
{
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else {
            fprintf(stderr, "usage: kvq_sage_ex2_sweep [--json FILE] [--commit TEXT]\n");
            return 2;
        }
    }
    int ndev = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 || cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
        prop.major < 9) {
        printf("kvq_sage_ex2_sweep: SKIPPED (no sm_90 device)\n");
        return 77;
    }
    ex2_stats h, *d;
    memset(&h, 0, sizeof h);
    h.first_fail_x = 0xFFFFFFFFu;
    if (cudaMalloc(&d, sizeof h) != cudaSuccess || cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "kvq_sage_ex2_sweep: device memory: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    cudaEventRecord(t0);
    sweep<<<prop.multiProcessorCount * 8, 256>>>(d, (1ull << 31) + 1ull);
    cudaEventRecord(t1);
    if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "kvq_sage_ex2_sweep: kernel: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, t0, t1);
    float mrel;
    memcpy(&mrel, &h.max_rel_bits, 4);
    float wx;
    memcpy(&wx, &h.worst_x, 4);
    printf("# ex2-sweep: device %s (sm_%d%d), commit %s\n", prop.name, prop.major, prop.minor, commit);
    printf("ex2.approx.ftz.f32 on %llu non-positive binary32 arguments (+0, -0 .. -inf; NaNs left out), %.1f ms\n",
           h.checked, ms);
    printf("largest relative error where 2^x >= 2^-126: %.6g = 2^%.3f (at x = %a)\n", (double)mrel,
           mrel > 0 ? log2((double)mrel) : -INFINITY, (double)wx);
    printf("flushed to +0 where 2^x < 2^-126: %llu\n", h.flushed);
    printf("outside eps = 2^-21 (or not +0 below 2^-126): %llu", h.fails);
    if (h.fails) printf(" (first at x = 0x%08x)", h.first_fail_x);
    printf("\n");
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "kvq_sage_ex2_sweep: cannot write %s\n", json);
            return 2;
        }
        fprintf(f, "{\"device\": \"%s\", \"commit\": \"%s\", \"arguments\": %llu, \"max_rel\": %.9g, "
                   "\"max_rel_log2\": %.4f, \"flushed\": %llu, \"failures\": %llu, \"eps_log2\": -21, \"ms\": %.2f}\n",
                prop.name, commit, h.checked, (double)mrel, mrel > 0 ? log2((double)mrel) : -999.0, h.flushed,
                h.fails, ms);
        fclose(f);
    }
    return h.fails ? 1 : 0;
}
