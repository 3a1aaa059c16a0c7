/*
 * vidkv_kappend_for_requant.c -- a WRONG subject: the key cache is flushed
 * append-only where kflush = REQUANT declares the whole cache requantized
 * (Alg. 1 line 654) [VIDKV-W-02].  kvq verify must FAIL the stream cases of
 * the requant key policy that flush, naming [VIDKV-W-02].
 */
#define SUBJECT_NAME "vidkv-kappend-for-requant"
#define VIDKV_STREAM_PRM(p) ((p).kflush = (p).kflush == KVQ_VIDKV_KFLUSH_REQUANT ? KVQ_VIDKV_KFLUSH_APPEND : (p).kflush)
#include "subject_vidkv.h"
