/*
 * check_pkv.c -- Check suite of the PKV family (spec/pkv.md, spec/bounds/pkv.md).
 *
 * The storage layout helpers of include/kvq_pkv.h: sizes, offsets, the
 * parameter record and its defaults, the bank schedule.  Each test names its
 * requirements in a SPEC: comment.
 */
#include <check.h>
#include <inttypes.h>
#include <stdint.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_pkv.h"
#include "check_main.h"

static uint64_t g_seed = 0, g_cases = 0;

/* SPEC: [PKV-L-04] [PKV-L-02] the effective-bits table of spec/pkv.md, from
 * the packed sizes (bits per value = 8 bytes / (T d), exact). */
START_TEST(packing_effective_bits)
{
    static const struct { uint32_t n, meta, d; double bits; } tab[] = {
        { 2, KVQ_META_F32, 64, 2.75 },  { 2, KVQ_META_F32, 128, 2.625 }, { 2, KVQ_META_F32, 256, 2.5625 },
        { 2, KVQ_META_F16, 64, 2.5 },   { 2, KVQ_META_F16, 128, 2.375 }, { 2, KVQ_META_F16, 256, 2.3125 },
        { 4, KVQ_META_F32, 64, 4.75 },  { 4, KVQ_META_F32, 128, 4.625 }, { 4, KVQ_META_F32, 256, 4.5625 },
        { 4, KVQ_META_F16, 64, 4.5 },   { 4, KVQ_META_F16, 128, 4.375 }, { 4, KVQ_META_F16, 256, 4.3125 },
    };
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
        kvq_pkv_params p = kvq_pkv_params_default(tab[k].n);
        uint64_t b;
        p.meta = tab[k].meta;
        b = kvq_pkv_block_bits(&p, KVQ_PKV_KEY_PREFILL, 128, tab[k].d);
        REQ_MSG((double)b / (128.0 * tab[k].d) == tab[k].bits, "row %zu: %g bits", k,
                (double)b / (128.0 * tab[k].d));
        if (tab[k].d % 128u == 0u) /* values: the same size */
            REQ_EQ(kvq_pkv_block_bits(&p, KVQ_PKV_VALUE, 128, tab[k].d), b);
        REQ_EQ(kvq_pkv_block_bytes(&p, KVQ_PKV_VALUE, 128, 256) -
                   kvq_pkv_block_bytes(&p, KVQ_PKV_VALUE, 128, 128),
               128u * 128u * tab[k].n / 8u + 2u * 128u * (tab[k].meta == KVQ_META_F16 ? 2u : 4u));
    }
}
END_TEST

/* SPEC: [PKV-L-01] [PKV-L-03] [PKV-P-01] the residual's KIVI shape, the bank
 * offsets, the index limit, the frozen record and the defaults. */
START_TEST(packing_layout_helpers)
{
    kvq_pkv_params p = kvq_pkv_params_default(4);
    kvq_kivi_shape s = kvq_pkv_kivi_shape(&p, KVQ_PKV_KEY_DECODE, 256, 64);
    REQ_EQ(sizeof(kvq_pkv_params), 56);
    REQ(s.bits == 4 && s.group == 128 && s.grouping == KVQ_GROUP_CHANNEL && s.tokens == 256 &&
        s.channels == 64 && s.meta == KVQ_META_F32);
    s = kvq_pkv_kivi_shape(&p, KVQ_PKV_VALUE, 3, 256);
    REQ(s.grouping == KVQ_GROUP_TOKEN);
    REQ_EQ(kvq_pkv_pattern_offset(7, 96), 672);
    REQ_EQ(kvq_pkv_bank_bytes(32, 128), 16384);
    REQ_EQ(kvq_pkv_index_bytes(5), 10);
    REQ_EQ(KVQ_PKV_MAX_PATTERNS, 65535);
    REQ_EQ(KVQ_PKV_NO_PATTERN, 0xFFFF);
    REQ(p.patterns == 32 && p.max_iter == 30 && p.residual == 128 && p.window == 128 &&
        p.cap == 0 && p.v_threshold == 1 && p.alpha == KVQ_PKV_ALPHA_05 && p.init == 0 &&
        p.key_dist == 0 && p.update == 0);
    REQ(kvq_pkv_params_ok(&p));
    REQ(kvq_f32_same(KVQ_PKV_TOL, (float)1e-4));
}
END_TEST

/* SPEC: [PKV-U-01] [PKV-U-04] one centre per window of decoded tokens, no cap
 * by default, the cap a policy, the format limit 65535. */
START_TEST(packing_bank_schedule)
{
    kvq_pkv_params p = kvq_pkv_params_default(2);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 0), 32);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 127), 32);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128), 33);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128u * 1000u + 5u), 1032);
    REQ_EQ(kvq_pkv_bank_size(&p, 32, (uint64_t)128 * 70000u), 65535);
    p.cap = 40;
    REQ_EQ(kvq_pkv_bank_size(&p, 32, 128u * 1000u), 40);
}
END_TEST

static Suite *pkv_suite(void)
{
    Suite *s = suite_create("pkv");
    TCase *tc = tcase_create("packing");
    tcase_add_test(tc, packing_effective_bits);
    tcase_add_test(tc, packing_layout_helpers);
    tcase_add_test(tc, packing_bank_schedule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_pkv", pkv_suite(), &g_seed, &g_cases);
}
