/*
 * sage_mha_head_mod.c -- a WRONG subject: query head h reads KV head h % hkv
 * where [SAGE-MHA-01] gives h / (hq / hkv) (the grouping read as interleaved).
 * kvq verify must FAIL the sage-mha cases whose groups have more than one
 * query head and hkv > 1, naming [SAGE-ATT-07] and [SAGE-MHA-01]: a head
 * attends to another head's keys and values.
 */
#define SUBJECT_NAME "sage-mha-head-mod"
#define SAGE_MHA_VARIANT KVQ_SAGE_MHA_VAR_HEAD_MOD
#include "subject_sage.h"
