/*
 * status.c -- status texts and the default numeric policy [API-STATUS-01], [POL-01].
 */
#include "kvq.h"

static const char *const kvq_status_names[KVQ_STATUS_COUNT] = {
    "KVQ_OK", "KVQ_E_NONFINITE", "KVQ_E_SHAPE", "KVQ_E_PARAM", "KVQ_E_RANGE",
    "KVQ_E_NOMEM", "KVQ_E_IO", "KVQ_E_FORMAT", "KVQ_E_NODEVICE", "KVQ_E_DEVICE",
    "KVQ_E_SUBJECT",
};

static const char *const kvq_status_texts[KVQ_STATUS_COUNT] = {
    "success",
    "non-finite input (NaN or infinity)",
    "bad shape (empty, ragged, or not a multiple of the group size)",
    "bad parameter",
    "value out of range of its format (NaN overflow policy)",
    "out of memory",
    "input/output error",
    "malformed file",
    "no usable GPU",
    "GPU call failed",
    "subject failed (crash, hang or contract violation)",
};

const char *kvq_status_str(int status)
{
    if (status < 0 || status >= KVQ_STATUS_COUNT) return "unknown status";
    return kvq_status_texts[status];
}

const char *kvq_status_name(int status)
{
    if (status < 0 || status >= KVQ_STATUS_COUNT) return "KVQ_E_UNKNOWN";
    return kvq_status_names[status];
}

const kvq_policy kvq_policy_default = {
    KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP
};

kvq_status kvq_policy_check(const kvq_policy *pol)
{
    if (pol == NULL) return KVQ_E_PARAM;
    if (pol->ties != KVQ_TIES_EVEN && pol->ties != KVQ_TIES_AWAY) return KVQ_E_PARAM;
    if (pol->overflow != KVQ_OVERFLOW_SATURATE && pol->overflow != KVQ_OVERFLOW_NAN)
        return KVQ_E_PARAM;
    if (pol->subnormal != KVQ_SUBNORMAL_KEEP && pol->subnormal != KVQ_SUBNORMAL_DAZ)
        return KVQ_E_PARAM;
    return KVQ_OK;
}
