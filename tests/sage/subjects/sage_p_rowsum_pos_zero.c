/*
 * sage_p_rowsum_pos_zero.c -- a WRONG subject: the row sum of P~ starts from
 * +0 instead of the row's first value [SAGE-P-02], so a row of -0 sums to +0
 * where the pinned sequence gives -0.  kvq verify must FAIL the sage-p case
 * with such rows, naming [SAGE-P-02] [VEC-SAGE-11].
 */
#include <stddef.h>
#include <stdint.h>

static void rowsum_from_pos_zero(float *rowsum, const float *p, uint32_t rows, uint32_t cols)
{
    for (uint32_t i = 0; i < rows; i++) {
        float l = 0.0f;
        for (uint32_t j = 0; j < cols; j++) l = l + p[(size_t)i * cols + j];
        rowsum[i] = l;
    }
}

#define SUBJECT_NAME "sage-p-rowsum-pos-zero"
#define SAGE_P_FIX(codes, rowsum, p, rows, cols, fmt) rowsum_from_pos_zero(rowsum, p, rows, cols)
#include "subject_sage.h"
