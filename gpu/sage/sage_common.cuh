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
 * Included by .cu units only; everything here has internal linkage.
 */
#ifndef KVQ_SAGE_COMMON_CUH
#define KVQ_SAGE_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kvq.h"
#include "kvq_cuda.h"

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

static __device__ __forceinline__ bool dev_failed(const sage_dev_state *st)
{
    return *(volatile const uint32_t *)&st->err != 0u;
}

/* The call's status and flags into *out, in stream order. */
static __global__ void sage_result_kernel(kvq_cuda_result *out, const sage_dev_state *st)
{
    const uint32_t e = st->err;
    out->status = (e & ERR_NONFINITE) ? (uint32_t)KVQ_E_NONFINITE
                : (e & ERR_RANGE)     ? (uint32_t)KVQ_E_PARAM
                                      : (uint32_t)KVQ_OK;
    out->flags = e ? 0u : st->flags;
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

/* Scratch of one call: the state, then (V) d maxima words and d scales. */
typedef struct sage_scratch {
    sage_dev_state st;
    uint32_t cmax[128];
    float sc[128];
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

#endif /* KVQ_SAGE_COMMON_CUH */
