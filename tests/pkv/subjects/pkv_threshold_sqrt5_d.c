/*
 * pkv_threshold_sqrt5_d.c -- a WRONG subject: its V threshold takes
 * c = 2 z / (sqrt(5) d), the paper's Eq. 10 as converted, where [PKV-V-02]
 * derives c = 2 z / sqrt(5 d) from Eqs. 8-9.  rho* moves from 0.9116 to about
 * 0.992 at d = 128, alpha = 0.05, so values with rho between the two keep a
 * pattern they must drop.  kvq verify must FAIL the value cases with such a
 * ratio (the constructed rho = 0.95 cases on every seed) and name [PKV-V-02].
 */
#include <math.h>
#include <stdint.h>

static float threshold_sqrt5_d(uint32_t dim, uint32_t alpha)
{
    static const double z[3] = { 1.6448536269514715, 1.2815515655446008, 2.3263478740408408 };
    double c = 2.0 * z[alpha < 3u ? alpha : 0u] / (sqrt(5.0) * (double)dim), c2 = c * c;
    return (float)sqrt((1.0 - c2) / (1.0 + sqrt(c2 * (2.0 - c2))));
}

#define SUBJECT_NAME "pkv-threshold-sqrt5-d"
#define PKV_THRESHOLD(dim, alpha) threshold_sqrt5_d(dim, alpha)
#include "subject_pkv.h"
