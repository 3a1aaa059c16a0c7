/*
 * fp8_sweep.cu -- every binary32 encoding (all 2^32) through the device's FP8
 * conversions, each compared on the device with kvq's shared encoder
 * kvq_fp8_round_bits32 (include/kvq_fp8.h) under the matching overflow policy
 * [POL-FP8-01..03] [POL-OV-01].
 *
 * Rows (E4M3 and E5M2 each):
 *   ptx satfinite  cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32, both operand slots (each
 *                  input once as the low and once as the high byte), against
 *                  kvq saturate (overflow to +-max finite);
 *   cuda nosat     __nv_cvt_float_to_fp8(x, __NV_NOSAT, fmt) (cuda_fp8.hpp)
 *                  against kvq nan/inf (E4M3 NaN, E5M2 infinity).
 * PTX has no non-saturating FP8 conversion: `cvt.rn.e4m3x2.f32` and
 * `cvt.rn.e5m2x2.f32` are refused ("'.satfinite' modifier required for
 * instruction 'cvt' with destination type '.e4m3x2'", ptxas of CUDA 13.0), and
 * CUDA computes __NV_NOSAT in software.  So the program does not assume it:
 * it hands both forms, and the .satfinite ones as a control, to the driver's
 * PTX JIT on the device and records what the JIT says (accepted, or its error
 * log).  The __NV_NOSAT row is the device's non-saturating conversion.
 *
 * Classes of an input x (per format, on the encoding; E4M3 overflows for
 * |x| > 464, E5M2 for |x| >= 61440 [POL-FP8-03]): finite in range, finite
 * rounding to overflow, +Inf, -Inf, +NaN, -NaN.  Per row and class: inputs,
 * mismatches (inputs whose code differs from kvq's in any slot) and the
 * smallest mismatching encoding with both codes; per format the inputs whose
 * two PTX slots disagree.  Counters are per-thread registers, reduced per warp
 * and added with 64-bit atomics; the class totals are checked against their
 * closed forms (they must sum to 2^32).
 *
 * Verdict: exit 0 when the sweep covered every encoding and no finite input
 * (in range or overflowing) mismatches; Inf/NaN mismatches are measurements
 * (spec/policy.md [POL-FP8-03] documents the NaN sign) and do not fail it.
 * Exit 1 otherwise, 2 on a CUDA error.  Without a device (or without a kernel
 * image for it): "fp8-sweep: SKIPPED (...)", exit 0.
 *
 * usage: kvq_sage_fp8_sweep [--json PATH] [--commit TEXT]
 */
#include <cuda.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvq.h"
#include "kvq_fp8.h"

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "fp8-sweep: %s: %s\n", #x, cudaGetErrorString(e_));     \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

enum { C_FIN, C_OVF, C_PINF, C_NINF, C_PNAN, C_NNAN, NCLS };
static const char *cls_key[NCLS] = {"finite_in_range", "finite_overflow", "pos_inf", "neg_inf",
                                    "pos_nan", "neg_nan"};
static const char *cls_name[NCLS] = {"finite, in range", "finite, rounds to overflow", "+Inf",
                                     "-Inf", "+NaN", "-NaN"};

enum { R_SAT, R_NOSAT, NROW };           /* row = conversion kind; x 2 formats */
#define NSLOT (NROW * 2 * NCLS)          /* mismatch counters, [row][fmt][cls] */
#define NTOT (2 * NCLS)                  /* class totals, [fmt][cls] */
#define NCNT (NSLOT + NTOT + 2)          /* + slot disagreements per format */

/* Counters and first mismatches of the run (device memory). */
typedef struct sweep_out {
    unsigned long long cnt[NCNT];
    uint32_t first[NSLOT];               /* smallest mismatching encoding (valid if count > 0) */
} sweep_out;

__host__ __device__ static inline uint32_t fp8_class(uint32_t u, int e5m2)
{
    const uint32_t a = u & 0x7FFFFFFFu, neg = u >> 31;
    if (a > 0x7F800000u) return neg ? C_NNAN : C_PNAN;
    if (a == 0x7F800000u) return neg ? C_NINF : C_PINF;
    /* 464 = 0x43E80000 (E4M3's tie to 448 stays in range); 61440 = 0x47700000 */
    return (e5m2 ? a >= 0x47700000u : a > 0x43E80000u) ? C_OVF : C_FIN;
}

/* The PTX conversion of a pair: the low byte is the code of lo, the high byte that of hi. */
__device__ static inline uint32_t ptx_pair(float lo, float hi, int e5m2)
{
    unsigned short r;
    if (e5m2) asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ static inline uint32_t cuda_nosat(float x, int e5m2)
{
    return __nv_cvt_float_to_fp8(x, __NV_NOSAT, e5m2 ? __NV_E5M2 : __NV_E4M3);
}

/* Accumulate per-class counters of one input into registers (class-indexed
 * adds written out, so that the arrays stay in registers). */
#define ADD6(arr, cls, v)                                                      \
    do {                                                                       \
        _Pragma("unroll") for (uint32_t k_ = 0; k_ < NCLS; k_++)               \
            arr[k_] += ((cls) == k_) & (v);                                    \
    } while (0)

/* Thread t takes the pairs (2i, 2i+1), i = t, t + stride, ... of the 2^31. */
__global__ void __launch_bounds__(256)
sweep_kernel(sweep_out *out)
{
    uint32_t mm[NROW][2][NCLS], tot[2][NCLS], dis[2], seen = 0u;
#pragma unroll
    for (int f = 0; f < 2; f++) {
        dis[f] = 0u;
#pragma unroll
        for (int k = 0; k < NCLS; k++) {
            tot[f][k] = 0u;
#pragma unroll
            for (int r = 0; r < NROW; r++) mm[r][f][k] = 0u;
        }
    }
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (1ull << 31); i += stride) {
        const uint32_t u[2] = {(uint32_t)(2u * i), (uint32_t)(2u * i + 1u)};
        const float x[2] = {__uint_as_float(u[0]), __uint_as_float(u[1])};
#pragma unroll
        for (int f = 0; f < 2; f++) {
            const uint32_t p = ptx_pair(x[0], x[1], f), q = ptx_pair(x[1], x[0], f);
            /* input j's code in the low slot and in the high slot */
            const uint32_t lo[2] = {p & 0xFFu, q & 0xFFu}, hi[2] = {q >> 8, p >> 8};
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t c = fp8_class(u[j], f);
                const uint32_t ks = kvq_fp8_round_bits32(u[j], (uint32_t)f, KVQ_OVERFLOW_SATURATE, NULL);
                const uint32_t kn = kvq_fp8_round_bits32(u[j], (uint32_t)f, KVQ_OVERFLOW_NAN, NULL);
                const uint32_t bad_sat = (lo[j] != ks) | (hi[j] != ks);
                const uint32_t bad_nosat = cuda_nosat(x[j], f) != kn;
                ADD6(tot[f], c, 1u);
                ADD6(mm[R_SAT][f], c, bad_sat);
                ADD6(mm[R_NOSAT][f], c, bad_nosat);
                dis[f] += lo[j] != hi[j];
                /* the smallest mismatching input of each counter: a thread's
                 * inputs ascend, so its first is its smallest (one atomic) */
                const uint32_t bs = 1u << ((R_SAT * 2 + f) * NCLS + c);
                const uint32_t bn = 1u << ((R_NOSAT * 2 + f) * NCLS + c);
                if (bad_sat && !(seen & bs)) {
                    seen |= bs;
                    atomicMin(&out->first[(R_SAT * 2 + f) * NCLS + c], u[j]);
                }
                if (bad_nosat && !(seen & bn)) {
                    seen |= bn;
                    atomicMin(&out->first[(R_NOSAT * 2 + f) * NCLS + c], u[j]);
                }
            }
        }
    }
    /* per-thread counts are < 2^32 (at most 2 * 2^31 / stride inputs a thread) */
#define FLUSH(v, slot)                                                         \
    do {                                                                       \
        const uint32_t s_ = __reduce_add_sync(0xFFFFFFFFu, (v));               \
        if ((threadIdx.x & 31u) == 0u && s_) atomicAdd(&out->cnt[slot], (unsigned long long)s_); \
    } while (0)
#pragma unroll
    for (int f = 0; f < 2; f++) {
#pragma unroll
        for (int k = 0; k < NCLS; k++) {
#pragma unroll
            for (int r = 0; r < NROW; r++) FLUSH(mm[r][f][k], (r * 2 + f) * NCLS + k);
            FLUSH(tot[f][k], NSLOT + f * NCLS + k);
        }
        FLUSH(dis[f], NSLOT + NTOT + f);
    }
#undef FLUSH
}

/* The codes of one input: PTX low slot, PTX high slot, CUDA nosat, kvq saturate, kvq nan/inf. */
__global__ void codes_kernel(uint32_t *codes, const uint32_t *in, uint32_t n)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t u = in[i], f = i % 2u;                      /* inputs come in (E4M3, E5M2) pairs */
    const float x = __uint_as_float(u);
    codes[5u * i + 0u] = ptx_pair(x, 0.0f, f) & 0xFFu;
    codes[5u * i + 1u] = ptx_pair(0.0f, x, f) >> 8;
    codes[5u * i + 2u] = cuda_nosat(x, f);
    codes[5u * i + 3u] = kvq_fp8_round_bits32(u, f, KVQ_OVERFLOW_SATURATE, NULL);
    codes[5u * i + 4u] = kvq_fp8_round_bits32(u, f, KVQ_OVERFLOW_NAN, NULL);
}

/* Class totals in closed form: finite in range a <= T (E4M3 T = 0x43E80000),
 * a < T (E5M2 T = 0x47700000), then the overflowing finite encodings up to
 * 0x7F7FFFFF, one infinity and 2^23 - 1 NaNs of each sign. */
static unsigned long long expected_total(int f, int k)
{
    const unsigned long long fin = f ? 0x47700000ull : 0x43E80001ull; /* magnitudes in range */
    switch (k) {
    case C_FIN: return 2ull * fin;
    case C_OVF: return 2ull * (0x7F800000ull - fin);
    case C_PINF: case C_NINF: return 1ull;
    default: return 0x7FFFFFull;
    }
}

/* ---- the PTX JIT probe ------------------------------------------------------- */

typedef CUresult (*load_fn_t)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
typedef CUresult (*unload_fn_t)(CUmodule);

typedef struct jit_probe {
    const char *instr;
    int accepted;        /* 1 accepted, 0 refused, -1 probe unavailable */
    char log[512];
} jit_probe;

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void probe_jit(jit_probe *pr, int n)
{
    void *lf = NULL, *uf = NULL;
    cudaDriverEntryPointQueryResult q1, q2;
    const int have = cudaGetDriverEntryPointByVersion("cuModuleLoadDataEx", &lf, 12000, cudaEnableDefault, &q1) == cudaSuccess &&
                     q1 == cudaDriverEntryPointSuccess &&
                     cudaGetDriverEntryPointByVersion("cuModuleUnload", &uf, 12000, cudaEnableDefault, &q2) == cudaSuccess &&
                     q2 == cudaDriverEntryPointSuccess;
    (void)cudaGetLastError();
    for (int i = 0; i < n; i++) {
        pr[i].log[0] = 0;
        if (!have) {
            pr[i].accepted = -1;
            snprintf(pr[i].log, sizeof pr[i].log, "driver entry points unavailable");
            continue;
        }
        char ptx[1024];
        snprintf(ptx, sizeof ptx,
                 ".version 7.8\n.target sm_90\n.address_size 64\n"
                 ".visible .entry probe(.param .u64 p)\n{\n"
                 "  .reg .b16 h;\n  .reg .f32 f;\n  .reg .b64 a;\n"
                 "  ld.param.u64 a, [p];\n  mov.f32 f, 0f3F800000;\n"
                 "  %s h, f, f;\n  st.global.b16 [a], h;\n  ret;\n}\n", pr[i].instr);
        char elog[2048];
        elog[0] = 0;
        CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *val[2] = {elog, (void *)(uintptr_t)sizeof elog};
        CUmodule m = NULL;
        const CUresult r = ((load_fn_t)lf)(&m, ptx, 2, opt, val);
        pr[i].accepted = r == CUDA_SUCCESS;
        if (r == CUDA_SUCCESS) ((unload_fn_t)uf)(m);
        else snprintf(pr[i].log, sizeof pr[i].log, "CUresult %d: %s", (int)r, elog);
        for (char *c = pr[i].log; *c; c++) if (*c == '\n') *c = ' ';
    }
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    const char *json = NULL, *commit = "unknown";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else {
            fprintf(stderr, "usage: kvq_sage_fp8_sweep [--json PATH] [--commit TEXT]\n");
            return 2;
        }
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("fp8-sweep: SKIPPED (no CUDA device: %s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 0;
    }
    cudaFuncAttributes fa;
    e = cudaFuncGetAttributes(&fa, sweep_kernel);
    if (e != cudaSuccess) {
        printf("fp8-sweep: SKIPPED (no kernel image for this device: %s)\n", cudaGetErrorString(e));
        return 0;
    }
    cudaDeviceProp p;
    int drv = 0, rt = 0;
    CK(cudaGetDeviceProperties(&p, 0));
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));

    jit_probe pr[4] = {{"cvt.rn.satfinite.e4m3x2.f32", 0, {0}}, {"cvt.rn.satfinite.e5m2x2.f32", 0, {0}},
                       {"cvt.rn.e4m3x2.f32", 0, {0}}, {"cvt.rn.e5m2x2.f32", 0, {0}}};
    CK(cudaFree(0));                                   /* the primary context, current for the JIT */
    probe_jit(pr, 4);

    sweep_out *d_out, h;
    CK(cudaMalloc(&d_out, sizeof *d_out));
    CK(cudaMemset(d_out, 0, sizeof d_out->cnt));
    CK(cudaMemset(d_out->first, 0xFF, sizeof d_out->first));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sweep_kernel, 256, 0));
    const unsigned int grid = (unsigned int)(p.multiProcessorCount * (per_sm > 0 ? per_sm : 1) * 4);
    cudaEvent_t t0, t1;
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));
    CK(cudaEventRecord(t0));
    sweep_kernel<<<grid, 256>>>(d_out);
    CK(cudaGetLastError());
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    CK(cudaMemcpy(&h, d_out, sizeof h, cudaMemcpyDeviceToHost));

    /* the codes of each counter's first mismatch */
    uint32_t ex_in[NSLOT], ex_codes[NSLOT * 5], *d_in, *d_codes;
    for (int s = 0; s < NSLOT; s++) ex_in[s] = h.first[s];
    /* codes_kernel reads the format from the index parity: order the inputs so */
    uint32_t ord_in[2 * NSLOT];
    for (int s = 0; s < NSLOT; s++) {
        const int f = (s / NCLS) % 2;
        ord_in[2 * s] = f == 0 ? ex_in[s] : 0u;
        ord_in[2 * s + 1] = f == 1 ? ex_in[s] : 0u;
    }
    uint32_t ord_codes[2 * NSLOT * 5];
    CK(cudaMalloc(&d_in, sizeof ord_in));
    CK(cudaMalloc(&d_codes, sizeof ord_codes));
    CK(cudaMemcpy(d_in, ord_in, sizeof ord_in, cudaMemcpyHostToDevice));
    codes_kernel<<<1, 2 * NSLOT>>>(d_codes, d_in, 2 * NSLOT);
    CK(cudaGetLastError());
    CK(cudaMemcpy(ord_codes, d_codes, sizeof ord_codes, cudaMemcpyDeviceToHost));
    for (int s = 0; s < NSLOT; s++) {
        const int f = (s / NCLS) % 2;
        memcpy(ex_codes + 5 * s, ord_codes + 5 * (2 * s + f), 5 * sizeof(uint32_t));
    }

    /* coverage: class totals against their closed forms, summing to 2^32 */
    int coverage_ok = 1;
    for (int f = 0; f < 2; f++) {
        unsigned long long sum = 0;
        for (int k = 0; k < NCLS; k++) {
            sum += h.cnt[NSLOT + f * NCLS + k];
            if (h.cnt[NSLOT + f * NCLS + k] != expected_total(f, k)) coverage_ok = 0;
        }
        if (sum != (1ull << 32)) coverage_ok = 0;
    }
    int finite_ok = 1;
    for (int r = 0; r < NROW; r++)
        for (int f = 0; f < 2; f++)
            for (int k = C_FIN; k <= C_OVF; k++)
                if (h.cnt[(r * 2 + f) * NCLS + k]) finite_ok = 0;

    static const char *row_name[NROW] = {"ptx cvt.rn.satfinite.%sx2.f32 (both slots) vs kvq saturate",
                                         "cuda __nv_cvt_float_to_fp8 __NV_NOSAT %s vs kvq nan/inf"};
    static const char *fmt_ptx[2] = {"e4m3", "e5m2"};
    static const char *fmt_name[2] = {"E4M3", "E5M2"};
    printf("# gpu/sage/fp8_sweep.cu; device %s (sm_%d%d), driver %d, runtime %d; commit %s\n", p.name,
           p.major, p.minor, drv, rt, commit);
    printf("# every binary32 encoding (2^32) vs kvq_fp8_round_bits32 (include/kvq_fp8.h) on the device; "
           "sweep %.1f ms\n", (double)ms);
    printf("# PTX JIT probe (driver):\n");
    for (int i = 0; i < 4; i++)
        printf("#   %-28s %s%s%s\n", pr[i].instr,
               pr[i].accepted == 1 ? "accepted" : pr[i].accepted == 0 ? "refused" : "not probed",
               pr[i].log[0] ? ": " : "", pr[i].log);
    printf("%-4s %-62s %-27s %12s %12s  %s\n", "fmt", "conversion", "class", "inputs", "mismatches",
           "first mismatch: input -> device (kvq)");
    for (int f = 0; f < 2; f++)
        for (int r = 0; r < NROW; r++) {
            char rn[128];
            snprintf(rn, sizeof rn, row_name[r], fmt_ptx[f]);
            for (int k = 0; k < NCLS; k++) {
                const int s = (r * 2 + f) * NCLS + k;
                const unsigned long long n = h.cnt[NSLOT + f * NCLS + k], m = h.cnt[s];
                printf("%-4s %-62s %-27s %12llu %12llu", fmt_name[f], rn, cls_name[k], n, m);
                if (m) {
                    const uint32_t *c = ex_codes + 5 * s;
                    if (r == R_SAT)
                        printf("  0x%08x -> 0x%02x/0x%02x (0x%02x)", ex_in[s], c[0], c[1], c[3]);
                    else
                        printf("  0x%08x -> 0x%02x (0x%02x)", ex_in[s], c[2], c[4]);
                }
                printf("\n");
            }
        }
    printf("PTX slot disagreements (low vs high byte of one input): E4M3 %llu, E5M2 %llu\n",
           h.cnt[NSLOT + NTOT], h.cnt[NSLOT + NTOT + 1]);
    printf("coverage: %s; finite inputs: %s\n",
           coverage_ok ? "every encoding once, class totals as computed" : "FAILED (class totals)",
           finite_ok ? "no mismatch" : "MISMATCHES");

    if (json) {
        FILE *jf = fopen(json, "w");
        if (!jf) {
            fprintf(stderr, "fp8-sweep: cannot write %s\n", json);
            return 2;
        }
        fprintf(jf, "{\n  \"program\": \"gpu/sage/fp8_sweep.cu\",\n  \"device\": ");
        json_str(jf, p.name);
        fprintf(jf, ",\n  \"sm\": \"%d%d\",\n  \"driver\": %d,\n  \"runtime\": %d,\n  \"commit\": ", p.major,
                p.minor, drv, rt);
        json_str(jf, commit);
        fprintf(jf, ",\n  \"inputs\": %llu,\n  \"sweep_ms\": %.3f,\n  \"coverage_ok\": %s,\n"
                    "  \"finite_ok\": %s,\n  \"ptx_jit_probe\": [\n", 1ull << 32, (double)ms,
                coverage_ok ? "true" : "false", finite_ok ? "true" : "false");
        for (int i = 0; i < 4; i++) {
            fprintf(jf, "    {\"instruction\": \"%s\", \"result\": \"%s\", \"log\": ", pr[i].instr,
                    pr[i].accepted == 1 ? "accepted" : pr[i].accepted == 0 ? "refused" : "not probed");
            json_str(jf, pr[i].log);
            fprintf(jf, "}%s\n", i < 3 ? "," : "");
        }
        fprintf(jf, "  ],\n  \"ptx_slot_disagreements\": {\"E4M3\": %llu, \"E5M2\": %llu},\n  \"rows\": [\n",
                h.cnt[NSLOT + NTOT], h.cnt[NSLOT + NTOT + 1]);
        for (int f = 0; f < 2; f++)
            for (int r = 0; r < NROW; r++) {
                char rn[128];
                snprintf(rn, sizeof rn, row_name[r], fmt_ptx[f]);
                fprintf(jf, "    {\"format\": \"%s\", \"conversion\": \"%s\", \"kvq_policy\": \"%s\", "
                            "\"classes\": {", fmt_name[f], rn, r == R_SAT ? "saturate" : "nan");
                for (int k = 0; k < NCLS; k++) {
                    const int s = (r * 2 + f) * NCLS + k;
                    const uint32_t *c = ex_codes + 5 * s;
                    fprintf(jf, "%s\n      \"%s\": {\"inputs\": %llu, \"mismatches\": %llu", k ? "," : "",
                            cls_key[k], h.cnt[NSLOT + f * NCLS + k], h.cnt[s]);
                    if (h.cnt[s]) {
                        if (r == R_SAT)
                            fprintf(jf, ", \"first\": {\"input\": \"0x%08x\", \"device_low\": \"0x%02x\", "
                                        "\"device_high\": \"0x%02x\", \"kvq\": \"0x%02x\"}",
                                    ex_in[s], c[0], c[1], c[3]);
                        else
                            fprintf(jf, ", \"first\": {\"input\": \"0x%08x\", \"device\": \"0x%02x\", "
                                        "\"kvq\": \"0x%02x\"}", ex_in[s], c[2], c[4]);
                    }
                    fprintf(jf, "}");
                }
                fprintf(jf, "}}%s\n", f == 1 && r == NROW - 1 ? "" : ",");
            }
        fprintf(jf, "  ]\n}\n");
        fclose(jf);
    }
    cudaFree(d_out);
    cudaFree(d_in);
    cudaFree(d_codes);
    return coverage_ok && finite_ok ? 0 : 1;
}
