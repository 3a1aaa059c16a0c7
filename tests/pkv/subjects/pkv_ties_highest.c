/*
 * pkv_ties_highest.c -- a WRONG subject: among patterns at equal pinned
 * distance it takes the highest index (a `<=` scan), where [PKV-A-02] pins the
 * lowest.  kvq verify must FAIL the exact-level cases whose banks repeat a
 * pattern, or hold two patterns one constant apart (equal min-max distances),
 * and name [PKV-A-02]; the bounded level accepts either index of an exact tie
 * [PKV-A-04].
 */
#include <stdint.h>

#include "kvq_pkv.h"

static uint32_t nearest_highest(const float *x, const float *bank, uint32_t npat, uint32_t d, uint32_t dist)
{
    uint32_t best = 0;
    float bd = 0.0f;
    for (uint32_t j = 0; j < npat; j++) {
        const float *m = bank + (uint64_t)j * d;
        float dj = dist == KVQ_PKV_DIST_EUCLID ? kvq_pkv_dist_euclid(x, m, d) : kvq_pkv_dist_minmax(x, m, d);
        if (j == 0 || dj <= bd) {
            best = j;
            bd = dj;
        }
    }
    return best;
}

#define SUBJECT_NAME "pkv-ties-highest"
#define PKV_NEAREST(x, bank, npat, d, dist) nearest_highest(x, bank, npat, d, dist)
#include "subject_pkv.h"
