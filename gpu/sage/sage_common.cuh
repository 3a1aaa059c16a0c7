/*
 * sage_common.cuh -- what the SAGE CUDA units (gpu/sage/sage.cu, sage_ds.cu)
 * share: the device state of one call, how warps publish flags and errors into
 * it, the kernel that turns it into a kvq_cuda_result, and the host helpers
 * around it (scratch allocation, the blocking wait, grid sizes).
 *
 * A call's state starts zeroed; kernels OR in KVQ_FLAG_* events and ERR_*
 * bits; a writing kernel returns at once when an error bit is set, so an
 * error found by a check pass leaves every output untouched [POL-NF-01]
 * [SAGE-DEV-02].  sage_result_kernel maps the bits to the reference's status
 * (NaN/Inf first, then range) [SAGE-DEV-03].
 *
 * The batched launchers at the end (one launch a kernel for `heads` heads
 * that follow each other at the per-head sizes of include/kvq_sage_layout.h,
 * stream-ordered, no host wait, no allocation) are what the attention
 * pipeline (gpu/sage/sage_attn.cu) enqueues; the public one-call forms are
 * their heads = 1 case.  They are defined in sage.cu and sage_ds.cu; the rest
 * here has internal linkage.
 *
 * Included by .cu units only.
 */
#ifndef KVQ_SAGE_COMMON_CUH
#define KVQ_SAGE_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_cuda.h"
#include "dependent.cuh"

#define ERR_NONFINITE 0x1u
#define ERR_RANGE     0x2u   /* reported as KVQ_E_PARAM */

/* Device-side state of one call. */
typedef struct sage_dev_state {
    uint32_t flags;              /* OR of KVQ_FLAG_* */
    uint32_t err;                /* ERR_* bits */
    kvq_cuda_result result;      /* the blocking forms' copy-back */
} sage_dev_state;

/* OR a warp's flags and errors into the call's state; every lane calls it. */
static __device__ __forceinline__ void dev_publish(sage_dev_state *st, uint32_t f, uint32_t err)
{
    f = __reduce_or_sync(0xFFFFFFFFu, f);
    err = __reduce_or_sync(0xFFFFFFFFu, err);
    if ((threadIdx.x & 31u) == 0u) {
        if (f) atomicOr(&st->flags, f);
        if (err) atomicOr(&st->err, err);
    }
}

/* cp.async from global to shared memory, 16 or 4 bytes (zeros when !ok), its
 * group commit and the wait until at most N groups are in flight: the stage
 * kernels [SAGE-DEV-16] and the warpgroup core [SAGE-ATT-10] load by them. */
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0)
                 : "memory");
}
static __device__ __forceinline__ void cp_async4(void *dst, const void *src, bool ok)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 4 : 0)
                 : "memory");
}
static __device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

static __device__ __forceinline__ bool dev_failed(const sage_dev_state *st)
{
    return *(volatile const uint32_t *)&st->err != 0u;
}

/* The call's status and flags into *out, in stream order; then the state's
 * flags and error words cleared, so that a stream-ordered call leaves its
 * workspace clean [SAGE-DEV-20].  Launched as a programmatic dependent of the
 * call's last kernel (sage_launch_result), it waits for that grid's completion
 * and memory first; launched plainly the wait returns at once. */
static __global__ void sage_result_kernel(kvq_cuda_result *out, sage_dev_state *st)
{
    cudaGridDependencySynchronize();
    const uint32_t e = st->err, f = st->flags;
    out->status = (e & ERR_NONFINITE) ? (uint32_t)KVQ_E_NONFINITE
                : (e & ERR_RANGE)     ? (uint32_t)KVQ_E_PARAM
                                      : (uint32_t)KVQ_OK;
    out->flags = e ? 0u : f;
    st->err = 0u;
    st->flags = 0u;
}

/* Enqueue sage_result_kernel as a programmatic dependent of the kernel before it
 * on the stream (gpu/dependent.cuh): its launch overlaps that kernel. */
static inline cudaError_t sage_launch_result(kvq_cuda_result *out, sage_dev_state *st, cudaStream_t stream)
{
    return kvq_launch_dependent(dim3(1), dim3(1), stream, sage_result_kernel, out, st);
}

static inline unsigned int nblocks(uint64_t nthreads, uint32_t bs)
{
    return (unsigned int)((nthreads + bs - 1u) / bs);
}

/* Grid of a grid-stride kernel: at most 8192 blocks. */
static inline unsigned int grid_cap(uint64_t nthreads, uint32_t bs)
{
    const uint64_t want = nblocks(nthreads, bs);
    return (unsigned int)(want < 8192u ? want : 8192u);
}

static inline int aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0u; }

/* The verdict of a dequantization [SAGE-Q-08]: `bad` the complement of
 * 2 slot + kind for the first bad scale in slot order (an atomicMax of the
 * complement keeps the least slot; 0: none; kind 0 not finite, 1 negative or
 * subnormal), `big` whether some scale s makes |k| s overflow for the largest
 * code magnitude, `range` whether some stored code's product does. */
typedef struct sage_dq_state {
    unsigned long long bad;
    uint32_t big, range;
} sage_dq_state;

/* Scratch of one call: the state, then (V) d maxima words and d scales, then
 * (dequantization) its verdict. */
typedef struct sage_scratch {
    sage_dev_state st;
    uint32_t cmax[128];
    float sc[128];
    sage_dq_state dq;
} sage_scratch;

/* Stream-ordered scratch of a blocking call, zeroed. */
static inline kvq_status alloc_scratch(sage_scratch **s, cudaStream_t stream)
{
    if (cudaMallocAsync((void **)s, sizeof **s, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_NOMEM;
    }
    if (cudaMemsetAsync(*s, 0, sizeof **s, stream) != cudaSuccess) {
        (void)cudaFreeAsync(*s, stream);
        return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

/* A blocking call's end: wait for its result, free the scratch; *flags (may
 * be NULL) receives the events on KVQ_OK.  enq: the status of enqueueing. */
static inline kvq_status finish(kvq_status enq, sage_scratch *s, uint32_t *flags, cudaStream_t stream)
{
    kvq_cuda_result r = {KVQ_E_DEVICE, 0};
    cudaError_t e = cudaSuccess;
    if (enq == KVQ_OK) {
        sage_result_kernel<<<1, 1, 0, stream>>>(&s->st.result, &s->st);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(&r, &s->st.result, sizeof r, cudaMemcpyDeviceToHost, stream);
    }
    (void)cudaFreeAsync(s, stream);
    const cudaError_t e2 = cudaStreamSynchronize(stream);
    if (enq != KVQ_OK) return enq;
    if (e != cudaSuccess || e2 != cudaSuccess) return KVQ_E_DEVICE;
    if (r.status == KVQ_OK && flags != NULL) *flags = r.flags;
    return (kvq_status)r.status;
}

#if KVQ_SAGE_STG_PLANT
/* The planted build of the stage kernels (gpu/sage/rules.mk's *_stgplant programs), one
 * copy a translation unit: KVQ_SAGE_STG_PLANT=1 plants the mean's token order (sage.cu),
 * 2 dS's channel order (sage_ds.cu), 3 (or unset) both; read once, before a launch. */
static __device__ int stg_plant;
static void stg_plant_set(void)
{
    static int done = 0;
    if (done) return;
    const char *e = getenv("KVQ_SAGE_STG_PLANT");
    const int v = e != NULL ? atoi(e) : 3;
    (void)cudaMemcpyToSymbol(stg_plant, &v, sizeof v);
    done = 1;
}
#endif

/* ---- the stage kernels [SAGE-DEV-16] ---------------------------------------------
 * KVQ_SAGE_STAGES selects them: unset or "1" the stage kernels (1), "0" the
 * kernels of before (0, kept for the side-by-side measurement), anything
 * else -1 (the launchers answer KVQ_E_PARAM, nothing launched).  Read at
 * every call. */
#define SAGE_STG_NEW     0x1u  /* the stage kernels */
#define SAGE_STG_FUSED   0x2u  /* smoothing: the input check inside the mean pass (means in a workspace) */
#define SAGE_STG_NOCHECK 0x4u  /* dS: no check pass, only the host's bits (inputs in the domain, [SAGE-LEM-01]) */

static inline int sage_stages_env(void)
{
    const char *e = getenv("KVQ_SAGE_STAGES");
    if (e == NULL || strcmp(e, "1") == 0) return 1;
    if (strcmp(e, "0") == 0) return 0;
    return -1;
}

/* ---- batched launchers (heads that follow each other) --------------------------
 * Every one enqueues its kernels on `stream` against the zeroed state *st
 * (errors and flags land there; the writing kernels return at once when an
 * error bit is set), returns KVQ_E_DEVICE for a failed launch, and never
 * waits.  Arguments are the caller's to check (the one-call forms do). */

/* Smoothing [SAGE-SM-01..02] of heads x n tokens of dim d, segment seg within
 * each head: means heads x mean_rows(n, seg) x d; stg: SAGE_STG_* (0: the
 * kernels of before). */
kvq_status sage_enqueue_smooth(float *d_xs, float *d_mean, const float *d_x, uint32_t heads, uint32_t n,
                               uint32_t d, uint32_t seg, sage_dev_state *st, cudaStream_t stream,
                               uint32_t stg = SAGE_STG_NEW);
/* Q/K [SAGE-Q-01..07] of heads x sh->tokens tokens (codes and scales of the
 * heads at the per-head sizes of *sh). */
kvq_status sage_enqueue_qk(uint8_t *d_codes, float *d_scale, const float *d_x, uint32_t heads,
                           const kvq_sage_shape *sh, const kvq_sage_qk *qk, const kvq_policy *pol,
                           uint32_t opts, sage_dev_state *st, cudaStream_t stream);
/* V [SAGE-V-01..04] of heads x sh->tokens tokens; cmax: heads x sh->dim
 * zeroed words, sc: heads x sh->dim floats (the kernels' copy of the scales).
 * d_vt (NULL: none; d = 128 and 16-byte aligned, else KVQ_E_PARAM before any
 * launch): V~ of every head in the layout of [SAGE-DEV-15], written by the
 * codes pass beside the codes (heads x ceil(tokens / 64) x 8192 bytes). */
kvq_status sage_enqueue_v(uint8_t *d_codes, float *d_scale, const float *d_v, uint32_t heads,
                          const kvq_sage_shape *sh, uint32_t fmt, uint32_t *cmax, float *sc,
                          sage_dev_state *st, cudaStream_t stream, uint8_t *d_vt = NULL);
/* dS [SAGE-DS-01..02] of every head: rows x sh->tokens a head; pre: ERR_*
 * bits the host found (tau), ORed in by the check pass (with
 * SAGE_STG_NOCHECK, by a one-thread kernel instead); stg: SAGE_STG_*.
 * group: query heads a KV head (a divisor of heads): head h's dS from its
 * q_m rows and the smoothed K of KV head h / group, d_ks holding heads / group
 * heads [SAGE-DEV-17]. */
kvq_status sage_enqueue_ds(float *d_ds, const float *d_qm, const float *d_ks, uint32_t heads, uint32_t rows,
                           const kvq_sage_shape *sh, float tau, uint32_t pre, sage_dev_state *st,
                           cudaStream_t stream, uint32_t stg = SAGE_STG_NEW, uint32_t group = 1u);

/* Grid y (or z) holds at most this many heads a launch. */
#define SAGE_HEADS_MAX 65535u

#endif /* KVQ_SAGE_COMMON_CUH */
