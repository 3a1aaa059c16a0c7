/*
 * vidkv_krequant_for_append.c -- a WRONG subject: the key cache is
 * requantized whole at every flush where kflush = APPEND declares each block
 * quantized on its own [VIDKV-W-02].  kvq verify must FAIL the stream cases of
 * the append key policy that flush after a prefill, naming [VIDKV-W-02].
 */
#define SUBJECT_NAME "vidkv-krequant-for-append"
#define VIDKV_STREAM_PRM(p) ((p).kflush = (p).kflush == KVQ_VIDKV_KFLUSH_APPEND ? KVQ_VIDKV_KFLUSH_REQUANT : (p).kflush)
#include "subject_vidkv.h"
