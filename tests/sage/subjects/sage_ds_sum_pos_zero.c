/*
 * sage_ds_sum_pos_zero.c -- a WRONG subject: dS's channel sum starts from +0
 * instead of the first product [SAGE-DS-01], so a key whose products are all
 * -0 gets dS = +0 where the pinned sequence gives -0.  kvq verify must FAIL
 * the sage-ds case with such keys, naming [SAGE-DS-01] [VEC-SAGE-11].
 */
#include "kvq_sage.h"

static void ds_from_pos_zero(float *ds, const float *qm, const float *ks, uint32_t rows,
                             const kvq_sage_shape *kshape, float tau)
{
    const uint32_t n = kshape->tokens, d = kshape->dim;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t j = 0; j < n; j++) {
            float a = 0.0f;
            for (uint32_t c = 0; c < d; c++) a = a + qm[(size_t)r * d + c] * ks[(size_t)j * d + c];
            ds[(size_t)r * n + j] = a * tau;
        }
}

#define SUBJECT_NAME "sage-ds-sum-pos-zero"
#define SAGE_DS_RUN ds_from_pos_zero
#include "subject_sage.h"
