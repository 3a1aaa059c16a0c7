/*
 * cert_internal.h -- helpers shared by the CERT fast-path files (cert.c,
 * cert_step.c); not installed.
 */
#ifndef KVQ_CERT_INTERNAL_H
#define KVQ_CERT_INTERNAL_H

#include "kvq.h"

/* KVQ_E_NONFINITE if some x[e] is not finite, else KVQ_E_PARAM if some x[e] is
 * not a binary16 number, else KVQ_OK [CERT-K8-05]. */
kvq_status kvq_certi_check_f16(const float *x, uint64_t n);

/* Stored key metadata (sigma, z) is usable [CERT-K8-01]. */
kvq_status kvq_certi_key_meta_ok(float s, float z);

/* Every stored value group's (scale, zero) is usable [CERT-V4-01]. */
kvq_status kvq_certi_value_meta_ok(const float *scale, const float *zero,
                                   const kvq_cert_shape *shape);

/* v^ of element i of token t's value group j [CERT-V4-02]. */
float kvq_certi_value_deq(const uint8_t *codes, const float *scale, const float *zero,
                          const kvq_cert_shape *shape, uint32_t t, uint32_t j, uint32_t i);

#endif /* KVQ_CERT_INTERNAL_H */
