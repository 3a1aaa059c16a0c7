/*
 * sage_mha_as_binary16.c -- a WRONG subject: every input converted to
 * binary16 (to nearest, saturating at 65504) whatever in_fmt names, as a
 * kernel built for binary16 does with the bfloat16 tensors it is handed
 * [SAGE-MHA-02].  Exact on the binary16 cases; kvq verify must FAIL the
 * bfloat16 case whose V channels reach 1e5 (beyond binary16's range), naming
 * [SAGE-ATT-07] and [SAGE-MHA-02].
 */
#define SUBJECT_NAME "sage-mha-as-binary16"
#define SAGE_MHA_VARIANT KVQ_SAGE_MHA_VAR_AS_BINARY16
#include "subject_sage.h"
