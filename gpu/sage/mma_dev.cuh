/*
 * mma_dev.cuh -- the FP8 tensor-core instructions of [SAGE-ACC-02] as device
 * helpers (sm_90a), shared by the accumulator probe (gpu/sage/mma_probe.cu,
 * [SAGE-ACC-04]) and the GPU subject's sage_pv kernels (gpu/sage/sage_pv.cu,
 * [SAGE-ACC-07]), so both run the same operand layouts.
 *
 * wgmma.mma_async m64n8k32 .f32 .e4m3.e4m3 / .e5m2.e5m2, both operands in
 * shared memory: no swizzle, K-major core matrices of 8 rows x 16 bytes (A is
 * 64 rows of K = 32 bytes, B is 8 rows n of K bytes, B(k, n) at wg_off(n, k));
 * descriptors with LBO 128 and SBO 256 (the probe's unswapped assignment,
 * wg_kernel's swap = 0).  C enters through the accumulator registers (scale-d
 * = 1).  D/C element i (0..3) of thread t of the warpgroup (warp w = t / 32,
 * lane l = t % 32): row 16 w + l / 4 + 8 (i / 2), column 2 (l % 4) + i % 2.
 * The caller orders the shared-memory writes before the instruction
 * (fence.proxy.async.shared::cta, then __syncthreads) and reuses the memory
 * only after wg_commit_wait and a barrier.
 *
 * mma.sync m16n8k32 .row.col .f32 .e4m3/.e5m2, register fragments (PTX ISA,
 * 8-bit types), g = lane / 4, t = lane % 4: byte i (0..15) of A (a[i / 4],
 * bits 8 (i % 4)): row g + 8 ((i / 4) % 2), column 4 t + i % 4 + 16 (i / 8);
 * byte i (0..7) of B (b[i / 4]): row 4 t + i % 4 + 16 (i / 4), column g;
 * C/D element i (0..3): row g + 8 (i / 2), column 2 t + i % 2.
 */
#ifndef KVQ_MMA_DEV_CUH
#define KVQ_MMA_DEV_CUH

#include <stdint.h>

/* Byte of A (m, k) / B (n, k) in the no-swizzle K-major layout: core matrix
 * (m / 8, k / 16) of 8 rows x 16 bytes at ((m / 8) * 2 + k / 16) * 128. */
static __device__ __forceinline__ uint32_t wg_off(uint32_t row, uint32_t k)
{
    return ((row / 8u) * 2u + k / 16u) * 128u + (row % 8u) * 16u + k % 16u;
}

static __device__ __forceinline__ uint64_t wg_desc(const void *smem, uint32_t lbo, uint32_t sbo)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((a >> 4) & 0x3FFFu) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32);
}

/* Shared-memory writes of the generic proxy made visible to the async proxy
 * (before the barrier that precedes the instruction). */
static __device__ __forceinline__ void wg_proxy_fence(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* d = A B + d, A and B by descriptor; FMT 0 E4M3, 1 E5M2.  The whole
 * warpgroup executes it (sync.aligned).  wg_fence before, wg_commit_wait
 * after: d is valid only after the wait. */
static __device__ __forceinline__ void wg_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

template <uint32_t FMT>
static __device__ __forceinline__ void wg_mma_m64n8k32(float (&d)[4], uint64_t da, uint64_t db)
{
    if (FMT == 0u)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db) : "memory");
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db) : "memory");
}

static __device__ __forceinline__ void wg_commit_wait(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/* d = A B + d by mma.sync m16n8k32 .row.col (the fragments above); FMT 0
 * E4M3, 1 E5M2.  The whole warp executes it. */
template <uint32_t FMT>
static __device__ __forceinline__ void ms_mma_m16n8k32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    if (FMT == 0u)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif /* KVQ_MMA_DEV_CUH */
