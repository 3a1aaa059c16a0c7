/*
 * devbuf.cuh -- device buffers of one host-pointer call (the GPU subject's
 * entries and the blocking launchers): allocate at least one byte, copy in,
 * copy out.  A failed allocation is KVQ_E_NOMEM, a failed copy KVQ_E_DEVICE;
 * a zero-byte copy does nothing.
 */
#ifndef KVQ_DEVBUF_CUH
#define KVQ_DEVBUF_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kvq.h"

static inline kvq_status dev_alloc(void **d, uint64_t bytes)
{
    *d = NULL;
    return cudaMalloc(d, bytes ? bytes : 1u) == cudaSuccess ? KVQ_OK : KVQ_E_NOMEM;
}

static inline kvq_status dev_in(void **d, const void *h, uint64_t bytes)
{
    kvq_status st = dev_alloc(d, bytes);
    if (st == KVQ_OK && bytes && cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        st = KVQ_E_DEVICE;
    return st;
}

static inline kvq_status dev_out(void *h, const void *d, uint64_t bytes)
{
    return !bytes || cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? KVQ_OK
                                                                                    : KVQ_E_DEVICE;
}

#endif /* KVQ_DEVBUF_CUH */
