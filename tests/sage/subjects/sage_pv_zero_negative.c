/*
 * sage_pv_zero_negative.c -- a WRONG subject: a step of the accumulator whose
 * kept sum is exactly zero returns -0 when every one of its terms (the
 * running sum under inside and last, and every product, a product's sign the
 * XOR of its operands') is negative or -0, and +0 otherwise: the reading
 * spec/sage.md once stated and withdrew, because the H200 returns +0 for
 * every such step [SAGE-ACC-01].  kvq verify must FAIL the exact sage-pv case
 * whose rows hold only negative and -0 terms [VEC-SAGE-11].
 */
#include <string.h>

#include "kvq_mma.h"

/* One instruction under m, step by step: each step is the model's own step
 * (kvq_mma_dot on that step's products alone, the running sum inside), then
 * the withdrawn sign of a zero.  A model whose steps leave the running sum
 * out (after) is the model's own. */
static uint32_t dot_zero_negative(const uint8_t *a, const uint8_t *b, uint32_t c, uint32_t fmt,
                                  const kvq_mma_model *m)
{
    if (m->c_mode == KVQ_MMA_C_AFTER) return kvq_mma_dot(a, b, 32u, c, fmt, m);
    kvq_mma_model one = *m;
    one.c_mode = KVQ_MMA_C_INSIDE;
    one.group = KVQ_MMA_MAX_K;
    one.pairs = 0u;
    uint32_t acc = m->c_mode == KVQ_MMA_C_LAST ? 0u : c;
    const uint32_t nsteps = (32u + m->group - 1u) / m->group;
    for (uint32_t st = 0; st < nsteps; st++) {
        uint8_t x[32], y[32];
        uint32_t cnt = 0, allneg = acc >> 31;
        for (uint32_t k = 0; k < 32u; k++) {
            if (m->pairs ? (k / 2u) % nsteps != st : k / m->group != st) continue;
            x[cnt] = a[k];
            y[cnt] = b[k];
            if (((a[k] ^ b[k]) & 0x80u) == 0u) allneg = 0u;
            cnt++;
        }
        acc = kvq_mma_dot(x, y, cnt, acc, fmt, &one);
        if (acc == 0u && allneg) acc = 0x80000000u;
    }
    if (m->c_mode == KVQ_MMA_C_LAST) acc = kvq_mma_add_f32(acc, c, KVQ_MMA_ROUND_RNE);
    return acc;
}

static void zero_negative_run(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
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
            acc = dot_zero_negative(x, y, acc, fmt, m);
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

#define SUBJECT_NAME "sage-pv-zero-negative"
#define SAGE_PV_RUN zero_negative_run
#include "subject_sage.h"
