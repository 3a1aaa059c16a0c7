/*
 * pkv_euclid_for_minmax.c -- a WRONG subject: it matches every vector to the
 * pattern of least squared Euclidean distance, where [PKV-A-01] [PKV-A-03] pin
 * the min-max distance (the public code's prefill key metric, applied
 * everywhere).  A vector shifted by a constant from a pattern is at min-max
 * distance 0 from it but far in the Euclidean sense.  kvq verify must FAIL the
 * pkv-quant, pkv-key-flush and pkv-value-step cases matched by min-max and
 * name [PKV-A-01].
 */
#define SUBJECT_NAME "pkv-euclid-for-minmax"
#define PKV_NEAREST(x, bank, npat, d, dist) kvq_pkv_nearest(x, bank, npat, d, KVQ_PKV_DIST_EUCLID)
#include "subject_pkv.h"
