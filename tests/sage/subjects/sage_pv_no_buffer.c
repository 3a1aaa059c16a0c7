/*
 * sage_pv_no_buffer.c -- a WRONG subject: no FP32 buffer; the FP22
 * accumulator carries the whole row [SAGE-ACC-05].  kvq verify must FAIL the
 * sage-pv cases with buffer 64 or 128 that are longer than one flush interval,
 * at the exact level, naming [SAGE-ACC-05].
 */
#define SUBJECT_NAME "sage-pv-no-buffer"
#define SAGE_PV_FLUSH(buffer) ((void)(buffer), 0u)
#include "subject_sage.h"
