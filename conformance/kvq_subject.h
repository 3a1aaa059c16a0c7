/*
 * kvq_subject.h -- the C ABI of a conformance subject (spec/verify.md).
 *
 * A subject is a shared object exporting
 *
 *     const kvq_subject_v1 *kvq_subject_entry(void);
 *
 * `kvq run` / `kvq verify --subject lib.so` loads it in a child process, so a
 * crash or a hang of the subject is a verdict, not the end of the run.  The
 * functions have the signatures of the fast reference path (include/kvq.h) and
 * return kvq_status values.
 */
#ifndef KVQ_SUBJECT_H
#define KVQ_SUBJECT_H

#include <stdint.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVQ_SUBJECT_ABI 1u
#define KVQ_SUBJECT_ENTRY "kvq_subject_entry"

typedef struct kvq_subject_v1 {
    uint32_t abi;       /* KVQ_SUBJECT_ABI */
    const char *name;   /* short name for reports */
    /* KVQ_OK when the subject can run here; KVQ_E_NODEVICE makes every case of
     * the run SKIPPED (never passed).  May be NULL. */
    int (*init)(char *why, size_t whylen);
    int (*kivi_quantize)(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                         const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol);
    int (*kivi_dequantize)(float *y, uint32_t *flags, const uint8_t *codes,
                           const float *scale, const float *zero,
                           const kvq_kivi_shape *shape, const kvq_policy *pol);
    void (*fini)(void); /* may be NULL */
} kvq_subject_v1;

typedef const kvq_subject_v1 *(*kvq_subject_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_SUBJECT_H */
