/*
 * fp8_matrix.cu -- the FP8 conversion matrix measured on the device.
 *
 * Inputs: every binary16 encoding (65,536), and a binary32 sweep: every 2^12-th
 * encoding, every encoding with 448 <= |x| <= 480 and 57344 <= |x| <= 61440 (the
 * E4M3 and E5M2 overflow thresholds 464 and 61440 inside), and the infinities
 * and a set of NaN encodings, both signs.  Conversions, each on the device:
 *   cuda_float_satfinite  __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt)
 *   cuda_float_nosat      __nv_cvt_float_to_fp8(x, __NV_NOSAT, fmt)
 *   cuda_halfraw_satfinite / _nosat  __nv_cvt_halfraw_to_fp8 (binary16 inputs)
 *   ptx_cvt_rn_satfinite  cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (binary32 inputs)
 *                         and .f16x2 (binary16 inputs)
 *   kvq_device_saturate / _nan   kvq_fp8_round_bits32 (include/kvq_fp8.h; what gpu/sage/sage.cu uses)
 * each compared bitwise with kvq's two overflow policies computed on the host
 * by ref/common/fp8.c (include/kvq_fp8.h): saturate, and non-saturating (E4M3
 * NaN, E5M2 infinity) [POL-FP8-01..03]: per row the count of inputs equal to
 * each policy's code and its first mismatches.  It also writes the inputs and
 * the kvq codes under DIR for gpu/sage/fp8_matrix.py (torch's casts), which
 * merges everything into sage-fp8-matrix.{json,txt}.
 *
 * usage: kvq_sage_fp8_matrix DIR
 */
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include "kvq.h"
#include "kvq_fp8.h"
#include "kvq_fp8.h"

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "fp8-matrix: %s: %s\n", #x, cudaGetErrorString(e_));    \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

enum { L_FSAT, L_FNOSAT, L_HSAT, L_HNOSAT, L_PTX, L_KSAT, L_KNAN, L_N };
static const char *lname[L_N] = {"cuda __nv_cvt_float_to_fp8 __NV_SATFINITE",
                                 "cuda __nv_cvt_float_to_fp8 __NV_NOSAT",
                                 "cuda __nv_cvt_halfraw_to_fp8 __NV_SATFINITE",
                                 "cuda __nv_cvt_halfraw_to_fp8 __NV_NOSAT",
                                 "ptx cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2}",
                                 "kvq device (kvq_fp8_round_bits32) saturate",
                                 "kvq device (kvq_fp8_round_bits32) nan/inf"};

__device__ uint8_t ptx_f32(float x, bool e5m2)
{
    unsigned short r;
    if (e5m2) asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
    else asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
    return (uint8_t)(r & 0xFFu); /* the second source lands in the low byte */
}

__device__ uint8_t ptx_f16(uint16_t h, bool e5m2)
{
    unsigned short r;
    uint32_t pair = (uint32_t)h; /* low half: the second element */
    if (e5m2) asm("cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;" : "=h"(r) : "r"(pair));
    else asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(pair));
    return (uint8_t)(r & 0xFFu);
}

/* half: inputs are binary16 encodings (u holds them in its low 16 bits). */
__global__ void conv_kernel(uint8_t *out, const uint32_t *in, uint64_t n, int lib, bool e5m2, bool half)
{
    const __nv_fp8_interpretation_t fi = e5m2 ? __NV_E5M2 : __NV_E4M3;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t u = in[i];
        float x;
        if (half) {
            __half_raw hr;
            hr.x = (unsigned short)u;
            x = __half2float(__half(hr));
        } else {
            x = __uint_as_float(u);
        }
        uint32_t f = 0;
        uint8_t r = 0;
        __half_raw hr;
        hr.x = (unsigned short)u;
        switch (lib) {
        case L_FSAT: r = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, fi); break;
        case L_FNOSAT: r = __nv_cvt_float_to_fp8(x, __NV_NOSAT, fi); break;
        case L_HSAT: r = __nv_cvt_halfraw_to_fp8(hr, __NV_SATFINITE, fi); break;
        case L_HNOSAT: r = __nv_cvt_halfraw_to_fp8(hr, __NV_NOSAT, fi); break;
        case L_PTX: r = half ? ptx_f16((uint16_t)u, e5m2) : ptx_f32(x, e5m2); break;
        case L_KSAT: r = kvq_fp8_round_bits32(__float_as_uint(x), e5m2, KVQ_OVERFLOW_SATURATE, &f); break;
        default: r = kvq_fp8_round_bits32(__float_as_uint(x), e5m2, KVQ_OVERFLOW_NAN, &f); break;
        }
        out[i] = r;
    }
}

static void fwrite_all(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "fp8-matrix: cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kvq_sage_fp8_matrix DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("fp8-matrix: SKIPPED (no CUDA device)\n");
        return 0;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    /* the input sets */
    std::vector<uint32_t> h16(65536), f32;
    for (uint32_t i = 0; i < 65536u; i++) h16[i] = i;
    for (uint64_t u = 0; u < (1ull << 32); u += 1u << 12) f32.push_back((uint32_t)u);
    const uint32_t ranges[2][2] = {{0x43E00000u, 0x43F00000u},   /* 448 .. 480 */
                                   {0x47600000u, 0x47700000u}};  /* 57344 .. 61440 */
    for (int r = 0; r < 2; r++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t u = ranges[r][0]; u <= ranges[r][1]; u++)
                if (u % (1u << 12) != 0u) f32.push_back(u | (s << 31));
    const uint32_t special[] = {0x7F800000u, 0x7F800001u, 0x7F800100u, 0x7FC00000u, 0x7FC00001u,
                                0x7FFFFFFFu, 0x7FA00000u, 0x7F7FFFFFu};
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t v : special)
            if (v % (1u << 12) != 0u || true) f32.push_back(v | (s << 31));
    fwrite_all(dir, "in_f16.u32", h16.data(), h16.size() * 4u);
    fwrite_all(dir, "in_f32.u32", f32.data(), f32.size() * 4u);

    FILE *js = NULL;
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/cuda.json", dir);
        js = fopen(path, "w");
    }
    fprintf(js, "{\"device\": \"%s\", \"rows\": [\n", p.name);
    int first_row = 1;
    for (int half = 1; half >= 0; half--) {
        const std::vector<uint32_t> &in = half ? h16 : f32;
        const uint64_t n = in.size();
        uint32_t *d_in;
        uint8_t *d_out;
        CK(cudaMalloc(&d_in, n * 4u));
        CK(cudaMalloc(&d_out, n));
        CK(cudaMemcpy(d_in, in.data(), n * 4u, cudaMemcpyHostToDevice));
        std::vector<uint8_t> out(n), ref[2][2];
        for (int e5 = 0; e5 < 2; e5++) {
            for (int pol = 0; pol < 2; pol++) {
                ref[e5][pol].resize(n);
                for (uint64_t i = 0; i < n; i++) {
                    uint32_t fl = 0;
                    const uint32_t ov = pol ? KVQ_OVERFLOW_NAN : KVQ_OVERFLOW_SATURATE;
                    float x;
                    uint32_t u = in[i];
                    memcpy(&x, &u, 4);
                    ref[e5][pol][i] = half ? (e5 ? kvq_fp8_e5m2_from_f16((uint16_t)u, ov, &fl)
                                                 : kvq_fp8_e4m3_from_f16((uint16_t)u, ov, &fl))
                                           : (e5 ? kvq_fp8_e5m2_from_f32(x, ov, &fl)
                                                 : kvq_fp8_e4m3_from_f32(x, ov, &fl));
                }
                char name[64];
                snprintf(name, sizeof name, "kvq_%s_%s_%s.u8", half ? "f16" : "f32", e5 ? "e5m2" : "e4m3",
                         pol ? "nan" : "saturate");
                fwrite_all(dir, name, ref[e5][pol].data(), n);
            }
            for (int lib = 0; lib < L_N; lib++) {
                if (!half && (lib == L_HSAT || lib == L_HNOSAT)) continue;
                conv_kernel<<<2048, 256>>>(d_out, d_in, n, lib, e5 != 0, half != 0);
                CK(cudaGetLastError());
                CK(cudaMemcpy(out.data(), d_out, n, cudaMemcpyDeviceToHost));
                fprintf(js, "%s  {\"inputs\": \"%s\", \"n\": %llu, \"library\": \"%s\", \"format\": \"%s\"",
                        first_row ? "" : ",\n", half ? "binary16 all" : "binary32 sweep",
                        (unsigned long long)n, lname[lib], e5 ? "E5M2" : "E4M3");
                first_row = 0;
                printf("%-16s %-4s %-52s", half ? "binary16 all" : "binary32 sweep", e5 ? "E5M2" : "E4M3",
                       lname[lib]);
                for (int pol = 0; pol < 2; pol++) {
                    uint64_t match = 0;
                    int shown = 0;
                    fprintf(js, ", \"%s\": {", pol ? "kvq_nan" : "kvq_saturate");
                    std::string mm;
                    for (uint64_t i = 0; i < n; i++) {
                        if (out[i] == ref[e5][pol][i]) {
                            match++;
                        } else if (shown < 8) {
                            char b[96];
                            snprintf(b, sizeof b, "%s[\"0x%0*x\", \"0x%02x\", \"0x%02x\"]", shown ? ", " : "",
                                     half ? 4 : 8, in[i], out[i], ref[e5][pol][i]);
                            mm += b;
                            shown++;
                        }
                    }
                    fprintf(js, "\"match\": %llu, \"mismatch\": %llu, \"first_mismatches_input_lib_kvq\": [%s]}",
                            (unsigned long long)match, (unsigned long long)(n - match), mm.c_str());
                    printf("  %s %llu/%llu", pol ? "nan" : "sat", (unsigned long long)match,
                           (unsigned long long)n);
                }
                fprintf(js, "}");
                printf("\n");
            }
        }
        cudaFree(d_in);
        cudaFree(d_out);
    }
    fprintf(js, "\n]}\n");
    fclose(js);
    return 0;
}
