/*
 * sage_instr.cuh -- the device instructions both SAGE attention cores
 * (gpu/sage/sage_attn.cu [SAGE-ATT-10], gpu/sage/sage_fa3.cu [SAGE-DEV-12])
 * take for their pinned steps, defined once so that the two cores cannot
 * drift apart: the base-2 exponential of the softmax ([SAGE-ATT-04],
 * [TR-EX2]), the FP8 conversion of P~ ([SAGE-DEV-06]), and the no-swizzle
 * K-major shared-memory layout and descriptor of the FP8 wgmma's V operand
 * ([SAGE-ATT-10], measured by gpu/sage/mma_probe.cu).
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

#endif
