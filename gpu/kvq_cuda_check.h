/*
 * kvq_cuda_check.h -- the checks and the workspace handling that the
 * stream-ordered launchers of KIVI (gpu/kivi/kivi.cu) and PKV (gpu/pkv/) share,
 * once (host side, header only; the arguments' own checks stay with each
 * family, in its fast path's order).
 *
 * The workspace of a call starts with its device state (kvq_dev_state at
 * offset 0) and, for the blocking forms, the call's kvq_cuda_result (KIVI's at
 * KVQ_CUDA_WS_RESULT); a family's scratch follows from KVQ_CUDA_WS_HEAD on.
 */
#ifndef KVQ_CUDA_CHECK_H
#define KVQ_CUDA_CHECK_H

#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

#include "kvq_cuda.h"
#include "kivi/kivi_dev.cuh"

#define KVQ_CUDA_WS_STATE  0u   /* kvq_dev_state of the call */
#define KVQ_CUDA_WS_RESULT 64u  /* kvq_cuda_result of a blocking call */
#define KVQ_CUDA_WS_HEAD   256u /* the family's scratch from here on */

/* A stream-ordered call's result slot and workspace: both given, the workspace
 * 256-byte aligned and at least `need` bytes (the family's *_workspace).
 * KVQ_E_PARAM otherwise. */
static inline kvq_status kvq_cuda_check_workspace(const void *d_result, const void *d_workspace,
                                                  size_t workspace_bytes, size_t need)
{
    if (d_result == NULL || d_workspace == NULL || ((uintptr_t)d_workspace % 256u) != 0u ||
        workspace_bytes < need)
        return KVQ_E_PARAM;
    return KVQ_OK;
}

/* The call's state in stream order: flags and error bits 0, the least failure
 * key NO_KEY (none).  KVQ_E_DEVICE when it cannot be enqueued. */
static inline kvq_status kvq_cuda_state_init(void *d_workspace, cudaStream_t stream)
{
    kvq_dev_state *st = (kvq_dev_state *)((uint8_t *)d_workspace + KVQ_CUDA_WS_STATE);
    if (cudaMemsetAsync(st, 0, sizeof *st, stream) != cudaSuccess ||
        cudaMemsetAsync(&st->key, 0xFF, sizeof st->key, stream) != cudaSuccess)
        return KVQ_E_DEVICE;
    return KVQ_OK;
}

/* The blocking forms' workspace: the caller's, or `need` bytes allocated in
 * stream order (*own = 1; kvq_cuda_finish_blocking frees it).  KVQ_E_NOMEM when
 * the allocation fails. */
static inline kvq_status kvq_cuda_workspace_acquire(void **ws, size_t *workspace_bytes, int *own,
                                                    size_t need, cudaStream_t stream)
{
    *own = 0;
    if (*ws != NULL) return KVQ_OK;
    if (cudaMallocAsync(ws, need, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        *ws = NULL;
        return KVQ_E_NOMEM;
    }
    *own = 1;
    *workspace_bytes = need;
    return KVQ_OK;
}

/* The blocking forms' end: the result of the enqueued call (enq, its
 * argument status) read back from d_res (in the workspace), an owned workspace
 * freed, the stream drained; *flags (may be NULL) set only on KVQ_OK. */
static inline kvq_status kvq_cuda_finish_blocking(kvq_status enq, const kvq_cuda_result *d_res,
                                                  void *ws, int own, uint32_t *flags,
                                                  cudaStream_t stream)
{
    kvq_cuda_result r = {KVQ_E_DEVICE, 0};
    cudaError_t e = cudaSuccess;
    if (enq == KVQ_OK) e = cudaMemcpyAsync(&r, d_res, sizeof r, cudaMemcpyDeviceToHost, stream);
    if (own) (void)cudaFreeAsync(ws, stream);
    cudaError_t e2 = cudaStreamSynchronize(stream);
    if (enq != KVQ_OK) return enq;
    if (e != cudaSuccess || e2 != cudaSuccess) return KVQ_E_DEVICE;
    if (r.status == KVQ_OK && flags != NULL) *flags = r.flags;
    return (kvq_status)r.status;
}

/* The result slot of a blocking call in its workspace. */
static inline kvq_cuda_result *kvq_cuda_ws_result(void *ws)
{
    return (kvq_cuda_result *)((uint8_t *)ws + KVQ_CUDA_WS_RESULT);
}

#endif /* KVQ_CUDA_CHECK_H */
