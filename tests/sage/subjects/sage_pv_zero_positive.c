/*
 * sage_pv_zero_positive.c -- a WRONG subject: a step of the accumulator whose
 * exact sum is zero returns +0 (IEEE's sign of an exact zero sum), where the
 * models return -0 when every term, C included, is negative or -0
 * [SAGE-ACC-01].  kvq verify must FAIL the exact sage-pv case whose rows are
 * all -0 terms [VEC-SAGE-11].
 */
#include <string.h>

#include "kvq_mma.h"

static void zero_positive_run(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                              uint32_t n, uint32_t fmt, const kvq_mma_model *m, uint32_t flush)
{
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t acc, buf = 0u;
        memcpy(&acc, &c[r], sizeof acc);
        for (uint32_t k0 = 0; k0 < n; k0 += 32u) {
            uint8_t x[32], y[32];
            for (uint32_t t = 0; t < 32u; t++) {
                x[t] = k0 + t < n ? a[(uint64_t)r * n + k0 + t] : 0u;
                y[t] = k0 + t < n ? b[(uint64_t)r * n + k0 + t] : 0u;
            }
            acc = kvq_mma_dot(x, y, 32u, acc, fmt, m);
            if (acc == 0x80000000u) acc = 0u;
            if (flush != 0u && ((k0 + 32u) % flush == 0u || k0 + 32u >= n)) {
                float fb, fa;
                memcpy(&fb, &buf, sizeof fb);
                memcpy(&fa, &acc, sizeof fa);
                fb = fb + fa;
                memcpy(&buf, &fb, sizeof buf);
                acc = 0u;
            }
        }
        const uint32_t res = flush != 0u ? buf : acc;
        memcpy(&d[r], &res, sizeof res);
    }
}

#define SUBJECT_NAME "sage-pv-zero-positive"
#define SAGE_PV_RUN zero_positive_run
#include "subject_sage.h"
