/*
 * dependent.cuh -- a kernel enqueued as a programmatic dependent of the kernel
 * before it on its stream (cudaLaunchAttributeProgrammaticStreamSerialization),
 * for the one-thread status kernels that end a stream-ordered call (KIVI's
 * kivi_finish_kernel, spec/kivi.md [KIVI-DEV-09]; SAGE's sage_result_kernel,
 * spec/sage.md [SAGE-DEV-20]).
 *
 * The dependent may be launched as soon as every block of the kernel before it
 * has called cudaTriggerProgrammaticLaunchCompletion (or exited), so its launch
 * overlaps that kernel; it must call cudaGridDependencySynchronize before it
 * reads anything that kernel (or an earlier one) wrote.  Launched so, nothing
 * else changes: the next plain launch on the stream waits for the dependent.
 *
 * Included by .cu units only.
 */
#ifndef KVQ_DEPENDENT_CUH
#define KVQ_DEPENDENT_CUH

#include <cuda_runtime.h>
#include <string.h>

template <typename... P, typename... A>
static inline cudaError_t kvq_launch_dependent(dim3 grid, dim3 block, cudaStream_t stream, void (*kernel)(P...),
                                               A... args)
{
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = grid, cfg.blockDim = block, cfg.stream = stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at, cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif /* KVQ_DEPENDENT_CUH */
