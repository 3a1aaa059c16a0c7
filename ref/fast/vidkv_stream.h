/*
 * vidkv_stream.h -- the VIDKV residual window composed over a table of stage
 * callbacks (ref/fast/vidkv_stream.c): the one composition of
 * [VIDKV-W-01..02], used by kvq_vidkv_stream (host memory, the fast path's
 * quantizers) and by the CUDA subject's vidkv_stream entry
 * (gpu/vidkv/entries.cu: device memory, the device launchers)
 * [VIDKV-DEV-05].  Internal; not installed.
 */
#ifndef KVQ_VIDKV_STREAM_H
#define KVQ_VIDKV_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "kvq_vidkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stages.  "Working memory" is the memory the round trips run in (host
 * for the reference, device for the CUDA subject); every pointer a callback
 * receives is of working memory unless said otherwise. */
typedef struct kvq_vidkv_stream_ops {
    void *ctx;
    /* n > 0 bytes of working memory, NULL when none; release (p may be NULL) */
    void *(*alloc)(void *ctx, size_t n);
    void (*release)(void *ctx, void *p);
    /* n bytes from the caller's memory (src) into working memory, and back
     * (dst the caller's); stage_in NULL: the caller's memory is working
     * memory, the inputs are used in place */
    kvq_status (*stage_in)(void *ctx, void *dst, const void *src, size_t n);
    kvq_status (*stage_out)(void *ctx, void *dst, const void *src, size_t n);
    /* rows rows of w bytes: dst + r * dpitch <- src + r * spitch (no overlap) */
    kvq_status (*copy2d)(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t w,
                         uint32_t rows);
    /* one quantization of keys x [H][p->tokens][d] and its dequantization into
     * y; on KVQ_OK *flags |= the quantizer's flags */
    kvq_status (*keys)(void *ctx, float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                       const kvq_policy *pol);
    /* the same for values, with STP when stp is not NULL (its xs in working
     * memory) and p->protect > 0, plain ternary otherwise */
    kvq_status (*values)(void *ctx, float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                         const kvq_vidkv_stp *stp, const kvq_policy *pol);
} kvq_vidkv_stream_ops;

/* kvq_vidkv_stream's contract (include/kvq_vidkv.h) over ops: the checks on
 * the caller's k, v, stp (host memory), then the prefill and every flush
 * through the stages; kdeq and vdeq are the caller's memory. */
kvq_status kvq_vidkv_stream_compose(const kvq_vidkv_stream_ops *ops, float *kdeq, float *vdeq,
                                    uint32_t *flags, const float *k, const float *v,
                                    const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                                    const kvq_vidkv_params *prm, const kvq_policy *pol);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_VIDKV_STREAM_H */
