/*
 * sage_pv_f16_accumulate.c -- a WRONG subject: P~V accumulated in binary16
 * (each product added and rounded to binary16, as an FP16-accumulator
 * kernel does), which overflows above 65504 [SAGE-ACC-01].  kvq verify must
 * FAIL sage-pv cases at both levels: the value is neither the model's nor
 * inside the interval of K(13, 14) [SAGE-ACC-06].
 */
#include <stdint.h>
#include <string.h>

#include "kvq_fp8.h"
#include "kvq_mma.h"

static void f16_run(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                    uint32_t fmt, const kvq_mma_model *m, uint32_t flush)
{
    (void)m;
    (void)flush;
    for (uint32_t r = 0; r < rows; r++) {
        _Float16 s = (_Float16)c[r];
        for (uint32_t k = 0; k < n; k++) {
            const float x = fmt ? kvq_fp8_e5m2_to_f32(a[(uint64_t)r * n + k]) : kvq_fp8_e4m3_to_f32(a[(uint64_t)r * n + k]);
            const float y = fmt ? kvq_fp8_e5m2_to_f32(b[(uint64_t)r * n + k]) : kvq_fp8_e4m3_to_f32(b[(uint64_t)r * n + k]);
            s = (_Float16)((float)s + (float)(_Float16)(x * y));
        }
        d[r] = (float)s;
    }
}

#define SUBJECT_NAME "sage-pv-f16-accumulate"
#define SAGE_PV_RUN f16_run
#include "subject_sage.h"
