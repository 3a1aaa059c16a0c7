/*
 * cert_keys_only.c -- a version-3 subject that implements one operation: the
 * CERT key quantizer (the fast path's), as a vendor of one kernel would ship
 * it [API-SUBJ-05].  Its lookup answers "cert_quantize_keys" of signature
 * version 1 and nothing else, so kvq verify must PASS its cert-keys cases and
 * SKIP (never pass) every other case, KIVI's included.
 *
 * KVQ_ABI3_DEFECT (test hook) breaks the record: "abi" gives a wrong abi tag,
 * "lookup" a NULL lookup; the runner must refuse to load it.
 */
#include <stdlib.h>
#include <string.h>

#include "kvq_subject.h"

static int keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static kvq_entry_fn lookup(const char *entry, uint32_t sigver)
{
    if (sigver == 1u && strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)keys;
    return NULL;
}

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-keys-only", NULL, NULL, lookup };
static const kvq_subject_v3 bad_abi = { 2u, "cert-keys-only", NULL, NULL, lookup };
static const kvq_subject_v3 bad_lookup = { KVQ_SUBJECT_ABI_V3, "cert-keys-only", NULL, NULL, NULL };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    const char *d = getenv("KVQ_ABI3_DEFECT");
    if (d != NULL && strcmp(d, "abi") == 0) return &bad_abi;
    if (d != NULL && strcmp(d, "lookup") == 0) return &bad_lookup;
    return &subject;
}
