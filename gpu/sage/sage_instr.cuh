/*
 * sage_instr.cuh -- the device instructions both SAGE attention cores
 * (gpu/sage/sage_attn.cu [SAGE-ATT-10], gpu/sage/sage_fa3.cu [SAGE-DEV-12])
 * take for their pinned steps, defined once so that the two cores cannot
 * drift apart: the base-2 exponential of the softmax ([SAGE-ATT-04],
 * [TR-EX2]), the FP8 conversion of P~ ([SAGE-DEV-06]), and the no-swizzle
 * K-major shared-memory layout and descriptor of the FP8 wgmma's V operand
 * ([SAGE-ATT-10], measured by gpu/sage/mma_probe.cu) with the key order of
 * V~ that the FA3 core and the V quantizer share ([SAGE-DEV-12], [SAGE-DEV-15]),
 * and the output's division by l ([SAGE-ATT-06]).
 *
 * Included by .cu units only.
 */
#ifndef KVQ_SAGE_INSTR_CUH
#define KVQ_SAGE_INSTR_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* EXP2 of [SAGE-ATT-04]: within 2^-21 of 2^x, +0 below 2^-126 [TR-EX2]. */
static __device__ __forceinline__ float ex2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* binary32 of an int32 x with |x| <= 2^22, without I2F [SAGE-DEV-13]: x is
 * added to the bits of 1.5 * 2^23 (whose ulp is 1), giving 1.5 * 2^23 + x
 * exactly, and 1.5 * 2^23 is subtracted exactly -- the same bits as
 * __int2float_rn(x) (+0 for 0), one integer add and one FADD instead of an
 * I2F on the XU pipe.  A QK dot of INT8 codes is within d * 128 * 128 = 2^21
 * at d = 128.  tests/sage/check_i2f.c enumerates the range. */
static __device__ __forceinline__ float i2f_exact(int32_t x)
{
    return __fsub_rn(__int_as_float(x + 0x4B400000), 12582912.0f);
}

/* Two FP8 E4M3 codes, lo in the low byte [SAGE-DEV-06]. */
static __device__ __forceinline__ uint32_t e4m3x2(float lo, float hi)
{
    uint16_t r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

/* Byte of row `row`, column k (< 32) of a k32 tile in the no-swizzle K-major
 * layout: core matrix (row / 8, k / 16) of 8 rows x 16 bytes at
 * ((row / 8) * 2 + k / 16) * 128 (gpu/sage/mma_probe.cu wg_off). */
static __device__ __forceinline__ uint32_t wg_off(uint32_t row, uint32_t k)
{
    return ((row / 8u) * 2u + k / 16u) * 128u + (row % 8u) * 16u + k % 16u;
}

/* [SAGE-DEV-15] The 32-bit word of a block's V~ (8192 bytes: two k32 tiles in
 * the layout above, channels as rows) that holds channel c's codes of keys
 * 16 h + 2 tt + {0, 1, 8, 9} of the block (h < 4, tt < 4), in that order: they
 * are positions 16 (h % 2) + 4 tt .. + 3 of tile h / 2, the inverse of the P~
 * register order (position 4t + m holds key 8 (m / 2) + 2t + m % 2 of a 32-key
 * half, position 16 + 4t + m key 16 + 8 (m / 2) + 2t + m % 2; [SAGE-DEV-12]).
 * The FA3 core's producer (its transpose) and the V quantizer's V~ pass both
 * place words by it. */
static __device__ __forceinline__ uint32_t vt_word_off(uint32_t h, uint32_t tt, uint32_t c)
{
    return (h / 2u) * 4096u + wg_off(c, 16u * (h % 2u) + 4u * tt);
}

/* Shared-memory matrix descriptor: LBO 128 (between the two core matrices of
 * a row group along k), SBO 256 (between row groups), no swizzle. */
static __device__ __forceinline__ uint64_t wg_desc(const void *smem)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((a >> 4) & 0x3FFFu) | ((uint64_t)(128u >> 4) << 16) | ((uint64_t)(256u >> 4) << 32);
}

/* Keep the compiler from moving accesses of the 64 accumulator registers
 * across the wgmma issue and wait (they are written asynchronously in
 * between). */
static __device__ __forceinline__ void fence_acc(float *d)
{
#pragma unroll
    for (uint32_t x = 0; x < 64u; x++) asm volatile("" : "+f"(d[x])::"memory");
}

/* The output of [SAGE-ATT-06] for a thread's two rows rA and rB (= rA + 8) of
 * the accumulator fragment (columns 8j + 2t, + 1): o = RN32(RN32(x vsc) / l),
 * x the FP32 buffer buf when there is one (flush interval F != 0), else the
 * accumulator acc (both register arrays: chosen element by element, not by
 * pointer, so that neither leaves the registers), vsc = RN32(vs / 448); +0 for
 * a row that sees no key (nv = 0); rows at or past nq are not written. */
template <uint32_t D>
static __device__ __forceinline__ void sage_out_rows(float *o, const float *vs, const float *acc,
                                                     const float *buf, uint32_t F, uint32_t t, uint32_t rA, uint32_t rB,
                                                     uint32_t nvA, uint32_t nvB, float lA, float lB,
                                                     uint32_t nq)
{
#pragma unroll
    for (uint32_t j = 0; j < D / 8u; j++) {
        const uint32_t c = 8u * j + 2u * t;
        const float v0 = __fdiv_rn(__ldg(vs + c), 448.0f), v1 = __fdiv_rn(__ldg(vs + c + 1u), 448.0f);
#pragma unroll
        for (uint32_t hh = 0; hh < 2u; hh++) {
            const uint32_t row = hh ? rB : rA, nv = hh ? nvB : nvA;
            const float l = hh ? lB : lA;
            if (row >= nq) continue;
            const float x0 = F != 0u ? buf[4u * j + 2u * hh] : acc[4u * j + 2u * hh];
            const float x1 = F != 0u ? buf[4u * j + 2u * hh + 1u] : acc[4u * j + 2u * hh + 1u];
            float2 y = make_float2(0.0f, 0.0f);
            if (nv > 0u) y = make_float2(__fdiv_rn(__fmul_rn(x0, v0), l), __fdiv_rn(__fmul_rn(x1, v1), l));
            *(float2 *)(o + (uint64_t)row * D + c) = y;
        }
    }
}

#endif
