/*
 * vidkv_signmean_pm.c -- a WRONG subject: 1-bit normal codes (SIGNMEAN and the
 * FFT components) dequantize to {-s, +s} where Eq. 5 gives {0, s}
 * [VIDKV-K-06].  kvq verify must FAIL the signmean keys cases at the exact
 * level ([VIDKV-K-08]) and the FFT ones at the bounded level ([VIDKV-B-03]).
 */
#define SUBJECT_NAME "vidkv-signmean-pm"
#define VIDKV_KEYS_DEQ_PM
#include "subject_vidkv.h"
