/*
 * vidkv_raw_for_scaled.c -- a WRONG subject: values quantized as declared but
 * dequantized to the raw codes -1, 0, +1 under vdeq = SCALED [VIDKV-V-03].
 * kvq verify must FAIL the scaled value cases, naming [VIDKV-V-03].
 */
#define SUBJECT_NAME "vidkv-raw-for-scaled"
#define VIDKV_VDEQ_PRM(p) ((p).vdeq = (p).vdeq == KVQ_VIDKV_VDEQ_SCALED ? KVQ_VIDKV_VDEQ_RAW : (p).vdeq)
#include "subject_vidkv.h"
