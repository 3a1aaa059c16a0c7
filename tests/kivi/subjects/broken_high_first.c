/*
 * broken_high_first.c -- a WRONG subject: packs the codes of each byte high
 * element first (element 0 of a 4-bit pair in the high nibble), and unpacks
 * the same way, so its own round trip is consistent.  kvq verify must FAIL it
 * on the packed bytes [LAY-PACK-01].
 */
#include <stdlib.h>
#include <string.h>

#define SUBJECT_NAME "broken-high-first"
#include "subject_common.h"

/* Element i's slot under the wrong rule: reversed within its byte. */
static uint32_t wrong_slot(uint32_t i, uint32_t bits)
{
    uint32_t per = 8u / bits;
    return (i / per) * per + (per - 1u - i % per);
}

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    int st = kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
    uint32_t gb = kvq_kivi_group_bytes(shape);
    uint8_t *tmp;
    if (st != KVQ_OK) return st;
    tmp = malloc(gb);
    if (tmp == NULL) return KVQ_E_NOMEM;
    for (uint64_t g = 0; g < kvq_kivi_groups(shape); g++) {
        uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
        memset(tmp, 0, gb);
        for (uint32_t i = 0; i < shape->group; i++)
            kvq_pack_code(tmp, wrong_slot(i, shape->bits), shape->bits,
                          kvq_unpack_code(grp, i, shape->bits));
        memcpy(grp, tmp, gb);
    }
    free(tmp);
    return KVQ_OK;
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    uint64_t nb = kvq_kivi_code_bytes(shape);
    uint8_t *fixed = malloc(nb ? nb : 1);
    int st;
    if (fixed == NULL) return KVQ_E_NOMEM;
    for (uint64_t g = 0; g < kvq_kivi_groups(shape); g++) {
        const uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
        uint8_t *out = fixed + kvq_kivi_group_code_offset(shape, g);
        memset(out, 0, kvq_kivi_group_bytes(shape));
        for (uint32_t i = 0; i < shape->group; i++)
            kvq_pack_code(out, i, shape->bits,
                          kvq_unpack_code(grp, wrong_slot(i, shape->bits), shape->bits));
    }
    st = kvq_kivi_dequantize(y, flags, fixed, scale, zero, shape, pol);
    free(fixed);
    return st;
}
