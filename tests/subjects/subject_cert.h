/*
 * subject_cert.h -- the CERT entries of the fast path as the test subjects
 * use them (tests/cert/subjects/): the quantizers and the annotation as
 * entries (an entry returns int, the fast path kvq_status), and one decode
 * step from K and V as ref-fast runs it (kvq_cert_step_kv), for subjects
 * whose defect sits before or after it.  static inline: each subject takes what it uses.
 */
#ifndef KVQ_SUBJECT_CERT_H
#define KVQ_SUBJECT_CERT_H

#include "kvq_subject.h"

static inline int fast_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                     const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static inline int fast_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *v,
                       const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static inline int fast_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                         const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

/* One step as ref-fast runs it (kvq_cert_step_kv). */
static inline int fast_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                            kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                            const float *k, const float *v, const kvq_cert_params *prm,
                            const kvq_cert_shape *sh, const kvq_policy *pol)
{
    return kvq_cert_step_kv(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, sh, pol);
}

/* One step of the variant `variant` whatever the case declares: the
 * wrong-variant subjects' defect [CERT-VAR-02]. */
static inline int fast_step_as(uint32_t variant, float *out, uint8_t *sel, uint8_t *prom,
                               kvq_cert_record *rec, kvq_cert_decl *decl, float *delta1,
                               const float *q, float scale, const float *k, const float *v,
                               const kvq_cert_params *prm, const kvq_cert_shape *sh,
                               const kvq_policy *pol)
{
    kvq_cert_params p = *prm;
    p.variant = variant;
    return kvq_cert_step_kv(out, sel, prom, rec, decl, delta1, q, scale, k, v, &p, sh, pol);
}

/* The version-3 lookup of a subject whose CERT quantizers and annotation are
 * the fast path's and whose cert_step (signature version 2, [CERT-VAR-02]) is
 * `step`. */
#define SUBJECT_CERT_V3_LOOKUP(lookup, step)                                                   \
    static kvq_entry_fn lookup(const char *entry, uint32_t sigver)                            \
    {                                                                                         \
        if (sigver == 2u && strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)step;       \
        if (sigver != 1u) return NULL;                                                        \
        if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)fast_keys;         \
        if (strcmp(entry, "cert_quantize_values") == 0) return (kvq_entry_fn)fast_values;     \
        if (strcmp(entry, "cert_annotate") == 0) return (kvq_entry_fn)fast_annotate;          \
        return NULL;                                                                          \
    }

#endif /* KVQ_SUBJECT_CERT_H */
