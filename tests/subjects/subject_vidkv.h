/*
 * subject_vidkv.h -- the VIDKV entries of the fast path as the test subjects
 * use them (tests/vidkv/subjects/): each entry (returning int; the fast path
 * returns kvq_status) with a hook a subject defines to put its one defect in,
 * and the version-3 record [API-SUBJ-05] answering every VIDKV entry of
 * signature version 1.
 *
 * A subject defines SUBJECT_NAME and any of
 *   VIDKV_KEYS_PRM(p)        edits a copy of the parameters of both key calls
 *   VIDKV_KEYS_DEQ_PM        dequantizes 1-bit normal codes to {-s, +s}
 *   VIDKV_VALUES_PRM(p)      edits a copy of the parameters of the value quantizer
 *   VIDKV_VDEQ_PRM(p)        edits a copy of the parameters of the value dequantizer
 *   VIDKV_STREAM_PRM(p)      edits a copy of the stream's parameters
 *   VIDKV_OWN_KEYS           the subject defines vidkv_quantize_keys and
 *                            vidkv_dequantize_keys itself
 *   VIDKV_OWN_VALUES         the same for the value entries
 * before including this file; the others are the fast path's behaviour.
 */
#ifndef KVQ_SUBJECT_VIDKV_H
#define KVQ_SUBJECT_VIDKV_H

#include <stdlib.h>
#include <string.h>

#include "kvq_subject.h"
#include "kvq_vidkv.h"

#ifndef VIDKV_KEYS_PRM
#define VIDKV_KEYS_PRM(p) ((void)0)
#endif
#ifndef VIDKV_VALUES_PRM
#define VIDKV_VALUES_PRM(p) ((void)0)
#endif
#ifndef VIDKV_VDEQ_PRM
#define VIDKV_VDEQ_PRM(p) ((void)0)
#endif
#ifndef VIDKV_STREAM_PRM
#define VIDKV_STREAM_PRM(p) ((void)0)
#endif

#ifndef VIDKV_OWN_KEYS
static int vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                               const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    if (prm == NULL) return kvq_vidkv_quantize_keys(out, flags, k, prm, pol);
    p = *prm;
    VIDKV_KEYS_PRM(p);
    return kvq_vidkv_quantize_keys(out, flags, k, &p, pol);
}

static int vidkv_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                 const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_status st;
    if (prm == NULL || in == NULL) return kvq_vidkv_dequantize_keys(y, flags, in, prm, pol);
    p = *prm;
    VIDKV_KEYS_PRM(p);
    st = kvq_vidkv_dequantize_keys(y, flags, in, &p, pol);
#ifdef VIDKV_KEYS_DEQ_PM
    /* {-s, +s}: 2 y - y1, y1 the dequantization with every normal code 1 (each
     * component s); abnormal elements stay y */
    if (st == KVQ_OK && kvq_vidkv_normal_mode(&p) != KVQ_VIDKV_NORMAL_MINMAX && kvq_vidkv_n_nrm(&p) > 0u) {
        kvq_vidkv_keys ones = *in;
        uint64_t nb = kvq_vidkv_nrm_code_bytes(&p), n = kvq_vidkv_elems(&p);
        uint8_t *c1 = malloc(nb);
        float *y1 = malloc(n * sizeof *y1);
        if (c1 == NULL || y1 == NULL) st = KVQ_E_NOMEM;
        if (st == KVQ_OK) {
            memset(c1, 0xff, nb);
            ones.nrm_codes = c1;
            st = kvq_vidkv_dequantize_keys(y1, NULL, &ones, &p, pol);
            for (uint64_t e = 0; st == KVQ_OK && e < n; e++) y[e] = 2.0f * y[e] - y1[e];
        }
        free(c1);
        free(y1);
    }
#endif
    return st;
}
#endif

#ifndef VIDKV_OWN_VALUES
static int vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags, const float *v,
                                 const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    if (prm == NULL) return kvq_vidkv_quantize_values(out, np, flags, v, prm, stp, pol);
    p = *prm;
    VIDKV_VALUES_PRM(p);
    return kvq_vidkv_quantize_values(out, np, flags, v, &p, stp, pol);
}

static int vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in, uint32_t np,
                                   const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    if (prm == NULL) return kvq_vidkv_dequantize_values(y, flags, in, np, prm, pol);
    p = *prm;
    VIDKV_VDEQ_PRM(p);
    return kvq_vidkv_dequantize_values(y, flags, in, np, &p, pol);
}
#endif

static int vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                        const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode, const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    if (prm == NULL) return kvq_vidkv_stream(kdeq, vdeq, flags, k, v, stp, prefill, decode, prm, pol);
    p = *prm;
    VIDKV_STREAM_PRM(p);
    return kvq_vidkv_stream(kdeq, vdeq, flags, k, v, stp, prefill, decode, &p, pol);
}

static kvq_entry_fn vidkv_lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "vidkv_quantize_keys") == 0) return (kvq_entry_fn)vidkv_quantize_keys;
    if (strcmp(entry, "vidkv_dequantize_keys") == 0) return (kvq_entry_fn)vidkv_dequantize_keys;
    if (strcmp(entry, "vidkv_quantize_values") == 0) return (kvq_entry_fn)vidkv_quantize_values;
    if (strcmp(entry, "vidkv_dequantize_values") == 0) return (kvq_entry_fn)vidkv_dequantize_values;
    if (strcmp(entry, "vidkv_stream") == 0) return (kvq_entry_fn)vidkv_stream;
    return NULL;
}

static const kvq_subject_v3 vidkv_subject = { KVQ_SUBJECT_ABI_V3, SUBJECT_NAME, NULL, NULL, vidkv_lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &vidkv_subject;
}

#endif
