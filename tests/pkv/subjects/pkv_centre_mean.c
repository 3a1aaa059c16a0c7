/*
 * pkv_centre_mean.c -- a WRONG subject: the pattern a decode window adds to
 * the bank is the mean of the window's vectors, where [PKV-U-02] pins the
 * Chebyshev centre RN32((min + max) / 2) per dimension (Eq. 5).  kvq verify
 * must FAIL every pkv-key-flush and pkv-value-step case whose bank grows and
 * name [PKV-U-02]; pkv-quant and pkv-dequant take the bank as given and pass.
 */
#include <stdint.h>

static void centre_mean(float *centre, const float *x, uint32_t n, uint32_t d)
{
    for (uint32_t i = 0; i < d; i++) {
        float s = 0.0f;
        for (uint32_t t = 0; t < n; t++) s += x[(uint64_t)t * d + i];
        centre[i] = s / (float)n;
    }
}

#define SUBJECT_NAME "pkv-centre-mean"
#define PKV_CENTRE(centre, x, n, d) centre_mean(centre, x, n, d)
#include "subject_pkv.h"
