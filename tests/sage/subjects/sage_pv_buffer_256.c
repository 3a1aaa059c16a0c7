/*
 * sage_pv_buffer_256.c -- a WRONG subject: the FP32 buffer is flushed every
 * 256 products where the case asks for 64 or 128 [SAGE-ACC-05].  kvq verify
 * must FAIL the sage-pv cases with a buffer longer than their interval, at the
 * exact level, naming [SAGE-ACC-05].
 */
#define SUBJECT_NAME "sage-pv-buffer-256"
#define SAGE_PV_FLUSH(buffer) ((buffer) ? 256u : 0u)
#include "subject_sage.h"
