/*
 * sage_fa3.h -- the SAGE attention core in FlashAttention-3's structure
 * (gpu/sage/sage_fa3.cu, spec/sage.md [SAGE-DEV-12]), as gpu/sage/sage_attn.cu
 * launches it: the arguments of one launch, already checked by that launcher.
 */
#ifndef KVQ_SAGE_FA3_H
#define KVQ_SAGE_FA3_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "kvq.h"
#include "kvq_sage_attn.h"
#include "kvq_cuda.h"

typedef struct kvq_sage_fa3_args {
    kvq_sage_attn a;
    float tau2;
    uint32_t head0, heads;               /* head0: 0 (the launcher offsets the pointers) */
    float *o;
    const uint8_t *qc, *kc, *vc;
    const float *qs, *ks, *ds, *vs;
    uint64_t qc_head, kc_head, qs_head, ks_head, ds_head;  /* per-head sizes (elements) */
    const kvq_cuda_result *gate;         /* NULL, or skip when its status is not KVQ_OK */
    const uint8_t *vt;                   /* NULL, or V~ in [SAGE-DEV-15]'s layout (ceil(nk / 64)
                                            blocks of 8192 bytes a head, 16-byte aligned): the
                                            default form loads it as it is, no transpose */
    uint32_t group;                      /* query heads a KV head (0 or 1: one a query head):
                                            head h reads K/V codes, K and V scales and V~ of
                                            KV head h / group [SAGE-DEV-17] */
    uint32_t gofs, kv_heads;             /* the launcher's: head0 % group of its part, and the
                                            KV heads that part reads */
} kvq_sage_fa3_args;

#ifdef __cplusplus
extern "C" {
#endif
/* 1 when the core was built (the CUTLASS/CuTe headers were found), else 0. */
int kvq_sage_fa3_built(void);
/* The core's level (spec/sage.md [SAGE-DEV-13]): 0 the first form (I2F,
 * every rescale), 1 the score's int32 converted without I2F, 2 and the rescale
 * skipped by a warp vote when no alpha moved, 3 and FlashAttention-3's
 * in-warpgroup overlap (ping-pong form only; the serial form runs 2), 4 and the
 * per-block instruction stream of [SAGE-DEV-13]'s level 4 (one K scale product a
 * row and block, dS by 16-byte loads, no flush or buffer test issued when not
 * taken), 5 level 4 with its fixed per-block cost moved off the loop (the steady
 * steps unrolled by the four stages: the wgmma descriptors, stage and phase
 * known at compile time or carried, the warpgroup index uniform), 6 level 5 with
 * the producer's global loads of each block's dS and K scales issued two blocks
 * ahead and a block marked before the producer waits to reload a stage.  Every level computes the same bits.  From the environment's
 * KVQ_SAGE_FA3_LEVEL ("0".."6"); unset or empty: the default, which depends on
 * the form -- KVQ_SAGE_FA3_LEVEL_DEFAULT_VT (6) when the core is given V~ (the
 * pipeline's form, where level 4 was measured faster than 3, level 5 than 4 and
 * level 6 than 5),
 * KVQ_SAGE_FA3_LEVEL_DEFAULT (3) when it transposes V's codes itself (where level
 * 4 was measured slower).
 * kvq_sage_fa3_level returns the environment's level, KVQ_SAGE_FA3_LEVEL_DEFAULT
 * when it is unset or empty, -1 for any other value (the launcher then returns
 * KVQ_E_PARAM) or when the core was not built; kvq_sage_fa3_level_set says
 * whether the environment names one. */
#define KVQ_SAGE_FA3_LEVEL_DEFAULT 3
#define KVQ_SAGE_FA3_LEVEL_DEFAULT_VT 6
int kvq_sage_fa3_level(void);
int kvq_sage_fa3_level_set(void);
/* The precondition of levels 4 to 6: 1 when K's scale map `kq` gives each lane's 16 keys of a
 * 64-key block (8n + 2t + i, n < 8, i < 2) one scale slot, that of the block's key
 * 2t ([SAGE-MAP-05]: the pipeline's map, b_k = 64, does), else 0 (level 4 is then
 * refused, and level 5, KVQ_E_PARAM). */
int kvq_sage_fa3_k_uniform(const kvq_sage_qk *kq);
/* 1 when the form the environment selects loads V~ as the V quantizer writes
 * it ([SAGE-DEV-15]: the ping-pong form at levels 3..5), else 0 (the
 * form transposes V's codes itself; also 0 when the core was not built). */
int kvq_sage_fa3_vt_form(void);
/* The shapes the core takes: INT8 Q/K codes, and a head's codes within the
 * 32-bit strides of its TMA descriptors. */
static inline int kvq_sage_fa3_fits(const kvq_sage_attn *a)
{
    return a->qk_bits == 8u && (uint64_t)a->nq * 128u < ((uint64_t)1 << 31) &&
           (uint64_t)a->nk * 128u < ((uint64_t)1 << 31);
}
/* Enqueue the core on `stream` (KVQ_E_PARAM: not a shape it takes or a
 * pointer TMA cannot load; KVQ_E_DEVICE: a failed launch or not built). */
kvq_status kvq_sage_fa3_launch(const kvq_sage_fa3_args *p, cudaStream_t stream);
#ifdef __cplusplus
}
#endif

#endif
