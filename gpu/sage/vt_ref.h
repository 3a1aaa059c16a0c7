/*
 * vt_ref.h -- V~'s layout (spec/sage.md [SAGE-DEV-15]) written out from the spec's
 * formula for the device tests (gpu/sage/fa3_test.cu, gpu/sage/attn_test.cu), apart from
 * the kernels' own helpers (gpu/sage/sage_instr.cuh vt_word_off, wg_off), so that a wrong
 * helper cannot agree with itself.  Host and device (under nvcc).
 */
#ifndef KVQ_SAGE_VT_REF_H
#define KVQ_SAGE_VT_REF_H

#include <stdint.h>

#ifdef __CUDACC__
#define KVQ_VT_HD __host__ __device__
#else
#define KVQ_VT_HD
#endif

/* The byte of a head's V~ (ceil(nk / 64) blocks of 8192 bytes) that holds key j,
 * channel c (< 128). */
KVQ_VT_HD static inline uint64_t kvq_vt_index(uint32_t j, uint32_t c)
{
    const uint32_t t = (j % 64u) / 32u, k = j % 32u, r = k % 16u;
    const uint32_t p = 16u * (k / 16u) + 4u * ((r % 8u) / 2u) + 2u * (r / 8u) + k % 2u;
    return (uint64_t)(j / 64u) * 8192u + t * 4096u + ((c / 8u) * 2u + p / 16u) * 128u + (c % 8u) * 16u + p % 16u;
}

/* A head's V~ bytes: ceil(nk / 64) blocks of 8192. */
KVQ_VT_HD static inline uint64_t kvq_vt_head_bytes(uint32_t nk) { return (uint64_t)((nk + 63u) / 64u) * 8192u; }

#endif
