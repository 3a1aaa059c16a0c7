/*
 * kernel_bench.cu -- what bounds the KIVI kernels [KIVI-DEV-05]: each quantize and
 * dequantize kernel alone against its launcher, a device copy and floor kernels of the
 * same bytes, at the benchmark's 256 MiB (build/gpu/kvq_gpu_kivi_kbench).
 *
 *   kvq_gpu_kivi_kbench time [REPS]      the table below (medians of REPS >= 20, default 25)
 *   kvq_gpu_kivi_kbench once SET...      one launch of each kernel of SET, for ncu (SET:
 *                                        floor, quant, dequant, launcher: the checked
 *                                        launcher's three kernels); each launch of SET is
 *                                        named on stdout in launch order ("launch I: ..."),
 *                                        other launches as "setup: ..."
 *
 * This unit includes gpu/kivi/kivi.cu itself, so that it can launch the kernels without
 * their launchers (kvq_cuda_state_init's two memsets, kivi_finish_kernel, the commit of
 * the checked form).  Times are CUDA events on stream 0 around one call, 3 warm-ups, the
 * median of REPS, back to back as gpu/bench.cu times them (no L2 flush: the 256 MiB input
 * is five times the L2).  Every ratio is bandwidth over the bandwidth of a device copy
 * (cudaMemcpyAsync) measured in the same run, bandwidth = (bytes read + bytes written) /
 * time, the bytes the operation must move (gpu/bench.cu's count):
 *   copy      cudaMemcpyAsync of the 256 MiB input (the yardstick)
 *   kcopy     a copy kernel (16-byte streaming loads and stores, 4 a thread)
 *   read      a kernel that only reads the input (16-byte loads, 4 a thread)
 *   floor     a kernel moving the quantizer's bytes (the input in, codes and metadata out)
 *             with the per-token kernel's tile (1024 values a warp, 4 warps a block) and
 *             no arithmetic: the rate this byte pattern reaches at that launch shape
 *   floorL    the same bytes, each warp looping over tiles with the next tile's loads
 *             issued before the current tile's stores (a grid of 8 blocks an SM)
 *   floor5    floor at most 5 blocks (20 warps) an SM: the residency of the quantize kernels
 *             at 95 registers a thread (44 KiB of dynamic shared memory a block)
 *   qk        the quantize kernel alone (launch_quant_fast)
 *   qa        kvq_cuda_kivi_quantize_async, KVQ_CUDA_DIRECT (memsets, kernel, finish)
 *   qc        the same, checked (scratch, commit kernel, L2 discard)
 *   dk        the dequantize kernel alone (launch_dequant_fast)
 *   dchk      the dequantize pre-pass alone (kivi_dequant_check_kernel)
 *   da        kvq_cuda_kivi_dequantize_async (memsets, pre-pass, kernel, finish)
 * and then, for the state of L2 a timed call starts in (warm: back to back; dirty: after a
 * 256 MiB memset, as gpu/bench_time.cuh flushes; clean: after a 256 MiB read), the copy,
 * the SAGE Q/K quantizers (async, direct) and two KIVI quantize kernels.
 * Exit 0 after the table; 2 on a CUDA error or bad arguments; 77 (SKIPPED) without a device.
 */
#define KVQ_BENCH_NAME "kvq_gpu_kivi_kbench"
#include "kivi.cu"

#include "kvq_sage.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, KVQ_BENCH_NAME ": %s: %s\n", #x, cudaGetErrorString(e_));          \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

/* ---- the input and the yardsticks -------------------------------------------- */

/* gpu/bench.cu's input: values in [-4, 4) from a hash of the index */
__global__ void fill_kernel_kb(float *x, uint64_t n, uint32_t salt)
{
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^ salt;
        h ^= h >> 15;
        h *= 0x2C1B3C6Du;
        h ^= h >> 12;
        h *= 0x297A2D39u;
        h ^= h >> 15;
        x[i] = ((float)(h >> 8) * 0x1p-24f - 0.5f) * 8.0f;
    }
}

#define KB_V 4 /* float4 a thread in kcopy and read */
__global__ void __launch_bounds__(256) kq_copy_kernel(float4 *__restrict__ y, const float4 *__restrict__ x,
                                                      uint64_t n4)
{
    const uint64_t b = ((uint64_t)blockIdx.x * 256u) * KB_V + threadIdx.x;
    float4 a[KB_V];
#pragma unroll
    for (int k = 0; k < KB_V; k++)
        if (b + k * 256u < n4) a[k] = __ldcs(x + b + k * 256u);
#pragma unroll
    for (int k = 0; k < KB_V; k++)
        if (b + k * 256u < n4) __stcs(y + b + k * 256u, a[k]);
}

__global__ void __launch_bounds__(256) kq_read_kernel(uint32_t *__restrict__ sink, const float4 *__restrict__ x,
                                                      uint64_t n4)
{
    const uint64_t b = ((uint64_t)blockIdx.x * 256u) * KB_V + threadIdx.x;
    uint32_t h = 0;
#pragma unroll
    for (int k = 0; k < KB_V; k++)
        if (b + k * 256u < n4) {
            const float4 a = __ldcs(x + b + k * 256u);
            h ^= __float_as_uint(a.x) ^ __float_as_uint(a.y) ^ __float_as_uint(a.z) ^ __float_as_uint(a.w);
        }
    if (h == 0x7FC00001u) sink[0] = h; /* never for the benchmark's input; keeps the loads */
}

/* The quantizer's bytes with the per-token kernel's tile: lane l loads float4 slots
 * k*32+l of the warp's 1024 values (8 loads of 512 contiguous bytes each), the warp stores
 * 128*BITS code bytes as 16-byte stores and 1024/G scale and zero words.  The "codes" are
 * bits of the input: a floor, not a quantizer. */
template <int BITS, int LG>
__device__ __forceinline__ void kq_floor_tile(const float *__restrict__ x, uint8_t *__restrict__ codes,
                                              float *__restrict__ scale, float *__restrict__ zero,
                                              uint64_t tbase, const float4 (&a)[8], uint32_t lane)
{
    constexpr uint32_t NGT = 1024u >> LG; /* groups a tile */
    uint32_t h[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 8; k++) {
        h[0] ^= __float_as_uint(a[k].x);
        h[1] ^= __float_as_uint(a[k].y);
        h[2] ^= __float_as_uint(a[k].z);
        h[3] ^= __float_as_uint(a[k].w);
    }
    uint4 *out = (uint4 *)(codes + tbase * BITS / 8u);
#pragma unroll
    for (uint32_t u = lane; u < 8u * BITS; u += 32u) out[u] = make_uint4(h[0] + u, h[1], h[2], h[3]);
    const uint64_t g0 = tbase >> LG;
    for (uint32_t g = lane; g < NGT; g += 32u) {
        scale[g0 + g] = __uint_as_float(h[0] & 0x3FFFFFFFu);
        zero[g0 + g] = __uint_as_float(h[1] & 0x3FFFFFFFu);
    }
    (void)x;
}

template <int BITS, int LG>
__global__ void __launch_bounds__(128) kq_floor_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                                                       float *__restrict__ scale, float *__restrict__ zero,
                                                       uint64_t n)
{
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint64_t tbase = ((uint64_t)blockIdx.x * 4u + warp) * 1024u;
    if (tbase + 1024u > n) return;
    float4 a[8];
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = __ldcs((const float4 *)(x + tbase) + k * 32 + lane);
    kq_floor_tile<BITS, LG>(x, codes, scale, zero, tbase, a, lane);
}

/* The same bytes, a warp looping over tiles w, w + W, ... (W the grid's warps), the next
 * tile's loads issued before the current tile's stores. */
template <int BITS, int LG>
__global__ void __launch_bounds__(128) kq_floorl_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                                                        float *__restrict__ scale, float *__restrict__ zero,
                                                        uint64_t n)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nt = n / 1024u, W = (uint64_t)gridDim.x * 4u;
    uint64_t t = (uint64_t)blockIdx.x * 4u + (threadIdx.x >> 5);
    if (t >= nt) return;
    float4 a[8], b[8];
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = __ldcs((const float4 *)(x + t * 1024u) + k * 32 + lane);
    for (; t < nt; t += W) {
        const bool more = t + W < nt;
#pragma unroll
        for (int k = 0; k < 8; k++)
            b[k] = more ? __ldcs((const float4 *)(x + (t + W) * 1024u) + k * 32 + lane) : a[k];
        kq_floor_tile<BITS, LG>(x, codes, scale, zero, t * 1024u, a, lane);
#pragma unroll
        for (int k = 0; k < 8; k++) a[k] = b[k];
    }
}

/* ---- timing --------------------------------------------------------------- */

static cudaEvent_t ev0, ev1;
static int g_reps = 25;

template <typename F> static float kb_median(F op)
{
    std::vector<float> t((size_t)g_reps);
    for (int k = 0; k < 3; k++) op();
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < g_reps; k++) {
        CK(cudaEventRecord(ev0, 0));
        op();
        CK(cudaEventRecord(ev1, 0));
        CK(cudaEventSynchronize(ev1));
        CK(cudaEventElapsedTime(&t[(size_t)k], ev0, ev1));
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return g_reps % 2 ? t[(size_t)g_reps / 2] : 0.5f * (t[(size_t)g_reps / 2 - 1] + t[(size_t)g_reps / 2]);
}

/* The median of op() as kb_median, each run preceded (outside the timed interval) by pre(). */
template <typename P, typename F> static float kb_median_pre(P pre, F op)
{
    std::vector<float> t((size_t)g_reps);
    for (int k = 0; k < 3; k++) { pre(); op(); }
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < g_reps; k++) {
        pre();
        CK(cudaEventRecord(ev0, 0));
        op();
        CK(cudaEventRecord(ev1, 0));
        CK(cudaEventSynchronize(ev1));
        CK(cudaEventElapsedTime(&t[(size_t)k], ev0, ev1));
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return g_reps % 2 ? t[(size_t)g_reps / 2] : 0.5f * (t[(size_t)g_reps / 2 - 1] + t[(size_t)g_reps / 2]);
}

/* The buffers of one run. */
struct kb_buf {
    float *x, *y, *scale, *zero;
    uint8_t *codes;
    void *ws;
    size_t wsmax;
    kvq_cuda_result *res;
    uint32_t *sink;
    kvq_dev_state *st;
};

/* mode 0: one tile a warp; 1: looping warps (8 blocks an SM); 2: one tile a warp with
 * 44 KiB of dynamic shared memory a block, so at most 5 blocks (20 warps) an SM: the
 * residency of the quantize kernels at 95 registers a thread */
template <int BITS> static void kb_floor(const kb_buf &b, const kvq_kivi_shape &sh, uint64_t n, int mode, int sms)
{
    const unsigned int nb = mode == 1 ? (unsigned int)sms * 8u : (unsigned int)(n / 4096u);
    const size_t dyn = mode == 2 ? 44u * 1024u : 0u;
    if (sh.group == 32u) {
        if (mode == 1) kq_floorl_kernel<BITS, 5><<<nb, 128>>>(b.x, b.codes, b.scale, b.zero, n);
        else kq_floor_kernel<BITS, 5><<<nb, 128, dyn>>>(b.x, b.codes, b.scale, b.zero, n);
    } else {
        if (mode == 1) kq_floorl_kernel<BITS, 7><<<nb, 128>>>(b.x, b.codes, b.scale, b.zero, n);
        else kq_floor_kernel<BITS, 7><<<nb, 128, dyn>>>(b.x, b.codes, b.scale, b.zero, n);
    }
}

static void kb_floor_any(const kb_buf &b, const kvq_kivi_shape &sh, uint64_t n, int mode, int sms)
{
    switch (sh.bits) {
    case 2: kb_floor<2>(b, sh, n, mode, sms); break;
    case 4: kb_floor<4>(b, sh, n, mode, sms); break;
    default: kb_floor<8>(b, sh, n, mode, sms); break;
    }
}

static void kb_quant_kernel(const kb_buf &b, const kvq_kivi_shape &sh, const kvq_policy &pol)
{
    switch (sh.bits) {
    case 2: launch_quant_fast<2>(b.x, b.codes, b.scale, b.zero, b.st, sh, pol, 0); break;
    case 4: launch_quant_fast<4>(b.x, b.codes, b.scale, b.zero, b.st, sh, pol, 0); break;
    default: launch_quant_fast<8>(b.x, b.codes, b.scale, b.zero, b.st, sh, pol, 0); break;
    }
}

static void kb_dequant_kernel(const kb_buf &b, const kvq_kivi_shape &sh)
{
    switch (sh.bits) {
    case 2: launch_dequant_fast<2>(b.y, b.codes, b.scale, b.zero, b.st, sh, false, false, 0); break;
    case 4: launch_dequant_fast<4>(b.y, b.codes, b.scale, b.zero, b.st, sh, false, false, 0); break;
    default: launch_dequant_fast<8>(b.y, b.codes, b.scale, b.zero, b.st, sh, false, false, 0); break;
    }
}

static void kb_check_kernel(const kb_buf &b, const kvq_kivi_shape &sh, const kvq_policy &pol)
{
    const uint64_t ng = kvq_kivi_groups(&sh);
    kivi_dequant_check_kernel<<<nblocks(ng, 256), 256>>>(b.codes, b.scale, b.zero, b.st, sh, pol, ng);
}

static void kb_status(const kb_buf &b, const char *what)
{
    kvq_cuda_result r;
    CK(cudaMemcpy(&r, b.res, sizeof r, cudaMemcpyDeviceToHost));
    if (r.status != KVQ_OK) {
        fprintf(stderr, KVQ_BENCH_NAME ": %s returned %s\n", what, kvq_status_name((int)r.status));
        exit(2);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "time") != 0 && strcmp(argv[1], "once") != 0)) {
        fprintf(stderr, "usage: kvq_gpu_kivi_kbench time [REPS] | once SET...  (SET: floor quant dequant launcher)\n");
        return 2;
    }
    const bool once = strcmp(argv[1], "once") == 0;
    if (!once && argc > 2) {
        char *end;
        long r = strtol(argv[2], &end, 10);
        if (*end != '\0' || r < 20 || r > 1000) {
            fprintf(stderr, KVQ_BENCH_NAME ": REPS %s: not a count from 20 to 1000\n", argv[2]);
            return 2;
        }
        g_reps = (int)r;
    }
    bool set_floor = !once, set_quant = !once, set_dequant = !once, set_launcher = !once;
    for (int i = 2; once && i < argc; i++) {
        if (!strcmp(argv[i], "floor")) set_floor = true;
        else if (!strcmp(argv[i], "quant")) set_quant = true;
        else if (!strcmp(argv[i], "dequant")) set_dequant = true;
        else if (!strcmp(argv[i], "launcher")) set_launcher = true;
        else {
            fprintf(stderr, KVQ_BENCH_NAME ": once: set %s: not floor, quant, dequant or launcher\n", argv[i]);
            return 2;
        }
    }
    char why[256];
    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf(KVQ_BENCH_NAME ": SKIPPED (no CUDA device: %s)\n", why);
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));
    const uint32_t D = 128, T = 524288; /* 256 MiB of binary32, as gpu/bench.cu */
    const uint64_t n = (uint64_t)T * D, xbytes = n * 4u;
    kb_buf b;
    CK(cudaMalloc(&b.x, xbytes));
    CK(cudaMalloc(&b.y, xbytes));
    CK(cudaMalloc(&b.codes, n));
    CK(cudaMalloc(&b.scale, n / 32u * 4u));
    CK(cudaMalloc(&b.zero, n / 32u * 4u));
    b.wsmax = 256u + n + 2u * (n / 32u * 4u) + 4096u;
    CK(cudaMalloc(&b.ws, b.wsmax));
    CK(cudaMalloc(&b.res, sizeof *b.res));
    CK(cudaMalloc(&b.sink, 64));
    b.st = (kvq_dev_state *)((uint8_t *)b.ws + WS_STATE);
    fill_kernel_kb<<<4096, 256>>>(b.x, n, 0x5eedu);
    CK(cudaDeviceSynchronize());
    const kvq_policy pol = kvq_policy_default;
    const uint64_t n4 = n / 4u;
    const unsigned int nb4 = (unsigned int)((n4 + 256u * KB_V - 1u) / (256u * KB_V));
    const int sms = prop.multiProcessorCount;

    static const uint32_t bitsv[] = {2, 4, 8}, groupv[] = {32, 128};
    if (once) {
        int id = 0;
        if (set_floor) {
            kq_copy_kernel<<<nb4, 256>>>((float4 *)b.y, (const float4 *)b.x, n4);
            printf("launch %d: kcopy\n", id++);
            kq_read_kernel<<<nb4, 256>>>(b.sink, (const float4 *)b.x, n4);
            printf("launch %d: read\n", id++);
            for (uint32_t gi = 0; gi < 2; gi++)
                for (uint32_t bi = 0; bi < 3; bi += 2) {
                    kvq_kivi_shape sh = {bitsv[bi], groupv[gi], KVQ_GROUP_TOKEN, KVQ_META_F32, T, D};
                    kb_floor_any(b, sh, n, 0, sms);
                    printf("launch %d: floor bits %u G %u\n", id++, sh.bits, sh.group);
                    kb_floor_any(b, sh, n, 1, sms);
                    printf("launch %d: floorL bits %u G %u\n", id++, sh.bits, sh.group);
                    kb_floor_any(b, sh, n, 2, sms);
                    printf("launch %d: floor5 bits %u G %u\n", id++, sh.bits, sh.group);
                }
        }
        CK(kvq_cuda_state_init(b.ws, 0) == KVQ_OK ? cudaSuccess : cudaErrorUnknown);
        for (uint32_t gi = 0; gi < 2; gi++)
            for (uint32_t bi = 0; bi < 3; bi++)
                for (uint32_t grouping = 0; grouping < 2; grouping++) {
                    kvq_kivi_shape sh = {bitsv[bi], groupv[gi], grouping, KVQ_META_F32, T, D};
                    const char *gname = grouping == KVQ_GROUP_CHANNEL ? "channel" : "token";
                    /* the quantizer writes the codes the dequantizer then reads */
                    kb_quant_kernel(b, sh, pol);
                    if (set_quant) printf("launch %d: quant bits %u G %u %s\n", id++, sh.bits, sh.group, gname);
                    else printf("setup: quant bits %u G %u %s (the dequantizer's input)\n", sh.bits, sh.group, gname);
                    if (set_dequant) {
                        if (gi == 0 && bi == 0 && grouping == 0) {
                            kb_check_kernel(b, sh, pol);
                            printf("launch %d: dchk bits %u G %u %s\n", id++, sh.bits, sh.group, gname);
                        }
                        kb_dequant_kernel(b, sh);
                        printf("launch %d: dequant bits %u G %u %s\n", id++, sh.bits, sh.group, gname);
                    }
                }
        if (set_launcher) { /* the checked form's launches, once (2-bit, G = 32, per token) */
            kvq_kivi_shape sh = {2u, 32u, KVQ_GROUP_TOKEN, KVQ_META_F32, T, D};
            if (kvq_cuda_kivi_quantize_async(b.codes, b.scale, b.zero, b.res, b.x, &sh, &pol, b.ws, b.wsmax,
                                             0u, 0) != KVQ_OK)
                return 2;
            printf("launch %d: quant bits 2 G 32 token (launcher, checked)\n", id++);
            printf("launch %d: commit of that call\n", id++);
            printf("launch %d: finish of that call\n", id++);
        }
        CK(cudaDeviceSynchronize());
        CK(cudaGetLastError());
        return 0;
    }

    printf("kvq_gpu_kivi_kbench: device %s (sm_%d%d, %d SMs), commit %s; tensor %u x %u binary32 = %.0f MiB; "
           "median of %d; ratio = (bytes read + written)/time over the copy's\n",
           prop.name, prop.major, prop.minor, sms, getenv("KVQ_COMMIT") ? getenv("KVQ_COMMIT") : "unknown", T, D,
           xbytes / 1048576.0, g_reps);
    const float t_copy0 = kb_median([&] { CK(cudaMemcpyAsync(b.y, b.x, xbytes, cudaMemcpyDeviceToDevice, 0)); });
    const float t_kcopy = kb_median([&] { kq_copy_kernel<<<nb4, 256>>>((float4 *)b.y, (const float4 *)b.x, n4); });
    const float t_read = kb_median([&] { kq_read_kernel<<<nb4, 256>>>(b.sink, (const float4 *)b.x, n4); });
    const double bw0 = 2.0 * xbytes / (t_copy0 * 1e-3) / 1e9;
    printf("copy %.4f ms %.0f GB/s | kcopy %.4f ms ratio %.3f | read (input only) %.4f ms ratio %.3f\n", t_copy0, bw0,
           t_kcopy, (2.0 * xbytes / t_kcopy) / (2.0 * xbytes / t_copy0), t_read,
           ((double)xbytes / t_read) / (2.0 * xbytes / t_copy0));
    printf("%-4s %-3s %-7s | %7s | %-12s | %-12s | %-12s | %-12s | %-12s | %-12s | %-12s | %-12s | %-12s\n", "bits",
           "G", "group", "copy ms", "floor", "floorL", "floor5", "qk (kernel)", "qa (direct)", "qc (checked)", "dk (kernel)",
           "dchk", "da (launch)");
    double worst_qk = 9, worst_qa = 9, worst_dk = 9, worst_da = 9, worst_floor = 9;
    for (uint32_t gi = 0; gi < 2; gi++)
        for (uint32_t bi = 0; bi < 3; bi++)
            for (uint32_t grouping = 0; grouping < 2; grouping++) {
                kvq_kivi_shape sh = {bitsv[bi], groupv[gi], grouping, KVQ_META_F32, T, D};
                const uint64_t ng = kvq_kivi_groups(&sh), cb = kvq_kivi_code_bytes(&sh);
                const double qbytes = (double)xbytes + (double)cb + 2.0 * ng * 4.0;
                const float t_copy = kb_median([&] {
                    CK(cudaMemcpyAsync(b.y, b.x, xbytes, cudaMemcpyDeviceToDevice, 0));
                });
                const double bwc = 2.0 * xbytes / (t_copy * 1e-3) / 1e9;
                auto r = [&](float ms) { return qbytes / (ms * 1e-3) / 1e9 / bwc; };
                const float t_fl = kb_median([&] { kb_floor_any(b, sh, n, 0, sms); });
                const float t_fll = kb_median([&] { kb_floor_any(b, sh, n, 1, sms); });
                const float t_fl5 = kb_median([&] { kb_floor_any(b, sh, n, 2, sms); });
                CK(kvq_cuda_state_init(b.ws, 0) == KVQ_OK ? cudaSuccess : cudaErrorUnknown);
                const float t_qk = kb_median([&] { kb_quant_kernel(b, sh, pol); });
                auto qa = [&](uint32_t opts) {
                    if (kvq_cuda_kivi_quantize_async(b.codes, b.scale, b.zero, b.res, b.x, &sh, &pol, b.ws, b.wsmax,
                                                     opts, 0) != KVQ_OK)
                        exit(2);
                };
                const float t_qc = kb_median([&] { qa(0u); });
                kb_status(b, "quantize (checked)");
                const float t_qa = kb_median([&] { qa(KVQ_CUDA_DIRECT); });
                kb_status(b, "quantize (direct)");
                CK(kvq_cuda_state_init(b.ws, 0) == KVQ_OK ? cudaSuccess : cudaErrorUnknown);
                const float t_dk = kb_median([&] { kb_dequant_kernel(b, sh); });
                const float t_dc = kb_median([&] { kb_check_kernel(b, sh, pol); });
                const float t_da = kb_median([&] {
                    if (kvq_cuda_kivi_dequantize_async(b.y, b.res, b.codes, b.scale, b.zero, &sh, &pol, b.ws,
                                                       b.wsmax, 0u, 0) != KVQ_OK)
                        exit(2);
                });
                kb_status(b, "dequantize");
                printf("%-4u %-3u %-7s | %7.4f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f | "
                       "%.4f %5.3f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f\n",
                       sh.bits, sh.group, grouping == KVQ_GROUP_CHANNEL ? "channel" : "token", t_copy, t_fl, r(t_fl),
                       t_fll, r(t_fll), t_fl5, r(t_fl5), t_qk, r(t_qk), t_qa, r(t_qa), t_qc, r(t_qc), t_dk, r(t_dk), t_dc, r(t_dc),
                       t_da, r(t_da));
                worst_floor = std::min(worst_floor, r(t_fl));
                worst_qk = std::min(worst_qk, r(t_qk));
                worst_qa = std::min(worst_qa, r(t_qa));
                worst_dk = std::min(worst_dk, r(t_dk));
                worst_da = std::min(worst_da, r(t_da));
            }
    printf("worst ratio to copy: floor %.3f, quantize kernel %.3f, quantize direct (launcher) %.3f, "
           "dequantize kernel %.3f, dequantize (launcher) %.3f (goal 0.85)\n",
           worst_floor, worst_qk, worst_qa, worst_dk, worst_da);

    /* The state of L2 when a timed call starts: warm (back to back, as gpu/bench.cu),
     * dirty (a 256 MiB memset first, as gpu/bench_time.cuh: up to an L2 of dirty lines to
     * write back in the timed call) or clean (a 256 MiB read first).  SAGE Q int8 and K int4
     * (async, KVQ_CUDA_DIRECT, the [2^19][128] input of gpu/sage/sage_bench.cu) and two KIVI
     * quantize kernels, each beside the copy under the same state. */
    void *flush;
    CK(cudaMalloc(&flush, xbytes));
    CK(cudaMemset(flush, 0, xbytes));
    const kvq_sage_shape ssh = {T, D};
    const kvq_sage_qk sq = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 8u), sk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 4u);
    void *sws;
    CK(cudaMalloc(&sws, kvq_cuda_sage_workspace()));
    printf("L2 state | copy ms | SAGE Q int8 ms ratio | SAGE K int4 ms ratio | KIVI qk 2b G32 token ms ratio | "
           "KIVI qk 8b G128 channel ms ratio\n");
    const kvq_kivi_shape s1 = {2u, 32u, KVQ_GROUP_TOKEN, KVQ_META_F32, T, D};
    const kvq_kivi_shape s2 = {8u, 128u, KVQ_GROUP_CHANNEL, KVQ_META_F32, T, D};
    CK(kvq_cuda_state_init(b.ws, 0) == KVQ_OK ? cudaSuccess : cudaErrorUnknown);
    for (int mode = 0; mode < 3; mode++) {
        auto pre = [&] {
            if (mode == 1) CK(cudaMemsetAsync(flush, mode, xbytes, 0));
            if (mode == 2) kq_read_kernel<<<nb4, 256>>>(b.sink, (const float4 *)flush, n4);
        };
        const float tc = kb_median_pre(pre, [&] {
            CK(cudaMemcpyAsync(b.y, b.x, xbytes, cudaMemcpyDeviceToDevice, 0));
        });
        const double bwc = 2.0 * xbytes / tc;
        float ts[2];
        double rs[2];
        for (int q = 0; q < 2; q++) {
            const kvq_sage_qk &k = q ? sk : sq;
            ts[q] = kb_median_pre(pre, [&] {
                if (kvq_cuda_sage_quantize_qk_async(b.codes, b.scale, b.res, b.x, &ssh, &k, &pol, sws,
                                                    kvq_cuda_sage_workspace(), KVQ_CUDA_DIRECT, 0) != KVQ_OK)
                    exit(2);
            });
            kb_status(b, q ? "SAGE K" : "SAGE Q");
            const double bytes = (double)xbytes + (double)kvq_sage_code_bytes(&ssh, k.bits) +
                                 4.0 * (double)kvq_sage_scale_count(&ssh, &k);
            rs[q] = bytes / ts[q] / bwc;
        }
        float tk[2];
        double rk[2];
        for (int q = 0; q < 2; q++) {
            const kvq_kivi_shape &sh = q ? s2 : s1;
            tk[q] = kb_median_pre(pre, [&] { kb_quant_kernel(b, sh, pol); });
            const double bytes = (double)xbytes + (double)kvq_kivi_code_bytes(&sh) + 8.0 * kvq_kivi_groups(&sh);
            rk[q] = bytes / tk[q] / bwc;
        }
        printf("%-8s | %7.4f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f | %.4f %5.3f\n",
               mode == 0 ? "warm" : mode == 1 ? "dirty" : "clean", tc, ts[0], rs[0], ts[1], rs[1], tk[0], rk[0],
               tk[1], rk[1]);
    }
    return 0;
}
