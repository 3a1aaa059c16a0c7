/*
 * check_i2f.c -- Check suite of the int32-to-binary32 conversion the SAGE
 * attention core's levels 1..3 use in place of I2F (spec/sage.md
 * [SAGE-DEV-13], gpu/sage/sage_instr.cuh i2f_exact): the bits of
 * 1.5 * 2^23 plus x, read as binary32, minus 1.5 * 2^23 in round-to-nearest.
 *
 * SPEC: [SAGE-DEV-13]
 *
 * Every int32 x in [-2^22, 2^22] is enumerated: the result must have the bits
 * of (float)x (exact here, |x| < 2^24; +0 for 0).  The range covers every QK
 * dot of INT8 codes at d = 128 (|dot| <= 128 * 128 * 128 = 2^21) and, with a
 * factor 2 to spare, of INT4 codes.  Just past the range the identity fails
 * (x = 2^22 + 1 and -2^22 - 1 give 2^22 + 2 and -2^22 - 0.5): the same
 * comparison finds those, so it is not blind.  The host evaluates the same
 * binary32 operations as the device (an integer add, one binary32
 * subtraction in round-to-nearest-even; C's float subtraction is that under
 * FLT_EVAL_METHOD 0); the device enumerates the range too
 * (gpu/sage/fa3_test.cu check_i2f).
 */
#include <check.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "check_main.h"

#if FLT_EVAL_METHOD != 0
#error "check_i2f.c needs binary32 arithmetic evaluated in binary32 (FLT_EVAL_METHOD 0)"
#endif

static uint64_t g_seed = 0, g_cases = 1;

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* the device's i2f_exact, operation for operation */
static float i2f_exact(int32_t x)
{
    const uint32_t u = (uint32_t)x + 0x4B400000u;
    float f;
    memcpy(&f, &u, 4);
    volatile float c = 12582912.0f;    /* 1.5 * 2^23; no folding of the subtraction */
    return f - c;
}

/* the x in [lo, hi] where i2f_exact(x) and (float)x differ: their count,
 * the first one in *first */
static uint64_t differ(int64_t lo, int64_t hi, int64_t *first)
{
    uint64_t n = 0;
    for (int64_t x = lo; x <= hi; x++)
        if (bits(i2f_exact((int32_t)x)) != bits((float)(int32_t)x) && n++ == 0u) *first = x;
    return n;
}

START_TEST(the_range)
{
    int64_t first = 0;
    const uint64_t n = differ(-((int64_t)1 << 22), (int64_t)1 << 22, &first);
    ck_assert_msg(n == 0u, "i2f_exact differs from (float)x on %llu values of [-2^22, 2^22], first %lld",
                  (unsigned long long)n, (long long)first);
    ck_assert_uint_eq(bits(i2f_exact(0)), 0u);   /* +0, as __int2float_rn */
    /* the dots of [SAGE-ATT-03] at d = 128: |dot| <= 128 * 128 * 128 */
    ck_assert_int_le((int64_t)128 * 128 * 128, (int64_t)1 << 22);
}
END_TEST

START_TEST(past_the_range)
{
    int64_t first = 0;
    ck_assert_uint_eq(differ(((int64_t)1 << 22) + 1, ((int64_t)1 << 22) + 1, &first), 1u);
    ck_assert_int_eq(first, ((int64_t)1 << 22) + 1);
    ck_assert_uint_eq(bits(i2f_exact((1 << 22) + 1)), bits(4194306.0f));
    ck_assert_uint_eq(differ(-((int64_t)1 << 22) - 1, -((int64_t)1 << 22) - 1, &first), 1u);
    ck_assert_int_eq(first, -((int64_t)1 << 22) - 1);
    ck_assert_uint_eq(bits(i2f_exact(-(1 << 22) - 1)), bits(-4194304.5f));
}
END_TEST

static Suite *i2f_suite(void)
{
    Suite *s = suite_create("i2f");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, the_range);
    tcase_add_test(tc, past_the_range);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_i2f", i2f_suite(), &g_seed, &g_cases);
}
