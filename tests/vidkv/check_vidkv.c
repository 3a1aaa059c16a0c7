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
 *    failure); KVQ_RANDOM_CASES is a budget of groups as in the other suites,
 *    1 + KVQ_RANDOM_CASES / 20 random tensors of each kind (default 501).
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
#include "kvq_exact_vidkv.h"
#include "kvq_rng.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d7669646bull /* "kvq-vidk" */
#define CASES_DEFAULT 10000u              /* random groups: one tensor per 20 */

static uint64_t g_seed = SEED_DEFAULT;
static uint64_t g_cases = CASES_DEFAULT;


/* ---- helpers ------------------------------------------------------------ */

#define SENT8  0xA5u
#define SENT32 0xA5A5A5A5u

static const kvq_policy POL_DEF = { KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP };

static int same(float a, float b)
{
    return kvq_f32_same(a, b);
}

/* Fast-path key buffers of one parameter set, poisoned with SENT8. */
typedef struct fkeys {
    kvq_vidkv_params p;
    kvq_vidkv_keys k;
    uint64_t mb, acb, ncb, nag, nng, n;
    float *y;
} fkeys;

static void fk_init(fkeys *b, const kvq_vidkv_params *p)
{
    b->p = *p;
    b->n = kvq_vidkv_elems(p);
    b->mb = kvq_vidkv_mask_bytes(p);
    b->acb = kvq_vidkv_abn_code_bytes(p);
    b->ncb = kvq_vidkv_nrm_code_bytes(p);
    b->nag = kvq_vidkv_abn_groups(p);
    b->nng = kvq_vidkv_nrm_groups(p);
    b->k.mask = xmalloc(b->mb);
    b->k.abn_codes = xmalloc(b->acb);
    b->k.abn_scale = xmalloc(b->nag * 4u);
    b->k.abn_zero = xmalloc(b->nag * 4u);
    b->k.nrm_codes = xmalloc(b->ncb);
    b->k.nrm_scale = xmalloc(b->nng * 4u);
    b->k.nrm_zero = xmalloc(b->nng * 4u);
    b->y = xmalloc(b->n * 4u);
    memset(b->k.mask, SENT8, b->mb);
    memset(b->k.abn_codes, SENT8, b->acb);
    memset(b->k.abn_scale, SENT8, b->nag * 4u);
    memset(b->k.abn_zero, SENT8, b->nag * 4u);
    memset(b->k.nrm_codes, SENT8, b->ncb);
    memset(b->k.nrm_scale, SENT8, b->nng * 4u);
    memset(b->k.nrm_zero, SENT8, b->nng * 4u);
    memset(b->y, SENT8, b->n * 4u);
}

static int fk_untouched(const fkeys *b)
{
    return all_bytes(b->k.mask, b->mb, SENT8) && all_bytes(b->k.abn_codes, b->acb, SENT8) &&
           all_bytes(b->k.abn_scale, b->nag * 4u, SENT8) &&
           all_bytes(b->k.abn_zero, b->nag * 4u, SENT8) &&
           all_bytes(b->k.nrm_codes, b->ncb, SENT8) &&
           all_bytes(b->k.nrm_scale, b->nng * 4u, SENT8) &&
           all_bytes(b->k.nrm_zero, b->nng * 4u, SENT8) && all_bytes(b->y, b->n * 4u, SENT8);
}

static void fk_free(fkeys *b)
{
    free(b->k.mask); free(b->k.abn_codes); free(b->k.abn_scale); free(b->k.abn_zero);
    free(b->k.nrm_codes); free(b->k.nrm_scale); free(b->k.nrm_zero); free(b->y);
}

/* Fast-path value buffers for at most np protected tokens. */
typedef struct fvals {
    kvq_vidkv_params p;
    kvq_vidkv_values v;
    uint64_t tcb, pcb, ntg, npg, n;
    uint32_t pmb;
    float *y;
} fvals;

static void fv_init(fvals *b, const kvq_vidkv_params *p, uint32_t np)
{
    b->p = *p;
    b->n = kvq_vidkv_elems(p);
    /* the ternary arrays at their largest (no token protected) */
    b->tcb = kvq_vidkv_tern_code_bytes(p, 0);
    b->pcb = kvq_vidkv_prot_code_bytes(p, np);
    b->ntg = kvq_vidkv_tern_groups(p, 0);
    b->npg = kvq_vidkv_prot_groups(p, np);
    b->pmb = kvq_vidkv_prot_mask_bytes(p);
    b->v.tern = xmalloc(b->tcb);
    b->v.beta = xmalloc(b->ntg * 4u);
    b->v.prot = xmalloc(b->pmb);
    b->v.p_codes = xmalloc(b->pcb);
    b->v.p_scale = xmalloc(b->npg * 4u);
    b->v.p_zero = xmalloc(b->npg * 4u);
    b->y = xmalloc(b->n * 4u);
    memset(b->v.tern, SENT8, b->tcb);
    memset(b->v.beta, SENT8, b->ntg * 4u);
    memset(b->v.prot, SENT8, b->pmb);
    memset(b->v.p_codes, SENT8, b->pcb);
    memset(b->v.p_scale, SENT8, b->npg * 4u);
    memset(b->v.p_zero, SENT8, b->npg * 4u);
    memset(b->y, SENT8, b->n * 4u);
}

static int fv_untouched(const fvals *b)
{
    return all_bytes(b->v.tern, b->tcb, SENT8) && all_bytes(b->v.beta, b->ntg * 4u, SENT8) &&
           all_bytes(b->v.prot, b->pmb, SENT8) && all_bytes(b->v.p_codes, b->pcb, SENT8) &&
           all_bytes(b->v.p_scale, b->npg * 4u, SENT8) &&
           all_bytes(b->v.p_zero, b->npg * 4u, SENT8) && all_bytes(b->y, b->n * 4u, SENT8);
}

static void fv_free(fvals *b)
{
    free(b->v.tern); free(b->v.beta); free(b->v.prot); free(b->v.p_codes); free(b->v.p_scale);
    free(b->v.p_zero); free(b->y);
}

/* ---- special values, ties, degenerate (exact by construction) ------------ */

/* SPEC: [VIDKV-V-02] [VIDKV-V-03] [VIDKV-V-04] a value equal to alpha is 0;
 * the raw and scaled dequantizations; both packings. */
START_TEST(ties_ternary_threshold)
{
    /* one channel, G = 8: the running sum 3, 4, 5, RN32(6 + 2^-23) = 6, 6, 6, 6,
     * 8 gives S = 8, mean = 1, alpha = 1: 1 and -1 are 0, -(1 + 2^-23) is -1 */
    static const float v[8] = { 3.0f, 1.0f, -1.0f, -0x1.000002p+0f, 0.0f, -0.0f, 0x1p-149f, 2.0f };
    static const int32_t want[8] = { 1, 0, 0, -1, 0, 0, 0, 1 };
    for (uint32_t pack = 0; pack <= 1; pack++)
        for (uint32_t dq = 0; dq <= 1; dq++) {
            kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 1);
            fvals b;
            uint32_t np = 99, fl = SENT32;
            p.group = 8;
            p.gamma = 1.0f;
            p.vpack = pack;
            p.vdeq = dq;
            p.meta = KVQ_META_F32;
            fv_init(&b, &p, 0);
            REQ_EQ(kvq_vidkv_quantize_values(&b.v, &np, &fl, v, &p, NULL, &POL_DEF), KVQ_OK);
            REQ_EQ(np, 0);
            REQ_EQ(fl, KVQ_FLAG_SUBNORMAL);
            for (uint32_t i = 0; i < 8; i++)
                REQ_EQ(kvq_vidkv_digit_trit(kvq_vidkv_tern_get(b.v.tern, i, pack)), want[i]);
            if (dq) /* B: 3, RN32(4 + 2^-23) = 4, 6; beta = 6 / 3 */
                REQ(same(b.v.beta[0], 2.0f));
            REQ_EQ(kvq_vidkv_dequantize_values(b.y, &fl, &b.v, 0, &p, &POL_DEF), KVQ_OK);
            for (uint32_t i = 0; i < 8; i++) {
                float w = want[i] == 0 ? 0.0f : dq ? (float)want[i] * b.v.beta[0] : (float)want[i];
                REQ_MSG(same(b.y[i], w), "slot %u: %a, want %a", i, (double)b.y[i], (double)w);
            }
            fv_free(&b);
        }
}
END_TEST

/* SPEC: [VIDKV-K-01] [VIDKV-K-02] equal ranges go to the lower channel; the
 * pooled split sees every head, the per-head split one head. */
START_TEST(ties_split)
{
    /* H = 2, T = 8, d = 4, f = 0.5 -> n_a = 2.  Head 0: ranges 1, 2, 2, 0;
     * head 1: ranges 5, 0, 0, 1.  Pooled ranges: channel 0 spans both heads. */
    float k[2 * 8 * 4];
    kvq_vidkv_params p = kvq_vidkv_params_default(2, 8, 4);
    uint8_t m[2];
    static const float r0[4] = { 1, 2, 2, 0 }, r1[4] = { 5, 0, 0, 1 };
    p.group = 8;
    for (uint32_t h = 0; h < 2; h++)
        for (uint32_t t = 0; t < 8; t++)
            for (uint32_t c = 0; c < 4; c++)
                k[kvq_vidkv_index(&p, h, t, c)] = t == 3 ? (h ? r1[c] : r0[c]) : 0.0f;
    REQ_EQ(kvq_vidkv_split(m, NULL, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(m[0], 0x03);   /* pooled ranges 5, 2, 2, 1: channels 0, 1 */
    p.split = KVQ_VIDKV_SPLIT_PER_HEAD;
    REQ_EQ(kvq_vidkv_split(m, NULL, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(m[0], 0x06);   /* head 0: 2, 2 at channels 1, 2 */
    REQ_EQ(m[1], 0x09);   /* head 1: 5, 1 at channels 0, 3 */
    /* f = 0.75 of 4 = 3: head 1's equal ranges 0, 0 -> the lower channel 1 */
    p.key_frac = 0.75f;
    REQ_EQ(kvq_vidkv_split(m, NULL, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(m[1], 0x0B);
}
END_TEST


/* SPEC: [VIDKV-K-01] the split ranks the binary32 ranges: channel 1's exact
 * range 2^24 + 1 rounds (to even) to 2^24, channel 0's is 2^24 exactly, so they
 * tie and the lower channel is abnormal -- the exact ranges would pick 1. */
START_TEST(ties_split_rounded_range)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 2);
    float k[16];
    uint8_t m;
    p.group = 8;                      /* f = 0.5, d = 2: n_a = 1 */
    for (uint32_t t = 0; t < 8; t++) {
        k[2 * t] = t == 0 ? 0.0f : 0x1p24f;
        k[2 * t + 1] = t == 0 ? -1.0f : 0x1p24f;
    }
    REQ_EQ(kvq_vidkv_split(&m, NULL, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(m, 0x01);
    /* one more unit on channel 1 (range 2^24 + 2, exact) moves it ahead */
    k[1] = -2.0f;
    REQ_EQ(kvq_vidkv_split(&m, NULL, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(m, 0x02);
}
END_TEST

/* SPEC: [VIDKV-K-06] [VIDKV-K-08] [VIDKV-K-11] SIGNMEAN: code x >= 0 (-0 gives
 * 1), s = mean|x|, dequantized to {0, s}; a zero group stores s = +0. */
START_TEST(special_signmean)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 2);
    float k[16];
    fkeys b;
    uint32_t fl;
    p.group = 8;
    p.key_frac = 0.5f;   /* n_a = 1 */
    p.normal = KVQ_VIDKV_NORMAL_SIGNMEAN;
    p.meta = KVQ_META_F32;
    for (uint32_t t = 0; t < 8; t++) {
        k[2 * t] = (float)t * 10.0f;               /* channel 0: range 70, abnormal */
        k[2 * t + 1] = t % 2 ? -(float)t : 0.0f;   /* channel 1: normal */
    }
    k[2 * 2 + 1] = -0.0f;
    fk_init(&b, &p);
    REQ_EQ(kvq_vidkv_quantize_keys(&b.k, &fl, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(b.k.mask[0], 1);
    /* |x| = 0,1,0,3,0,5,0,7: S = 16, s = 2 */
    REQ(same(b.k.nrm_scale[0], 2.0f));
    REQ_EQ(b.k.nrm_codes[0], 0x55);   /* codes 1,0,1,0,1,0,1,0 (t = 2 is -0: 1) */
    REQ_EQ(kvq_vidkv_dequantize_keys(b.y, &fl, &b.k, &p, &POL_DEF), KVQ_OK);
    for (uint32_t t = 0; t < 8; t++) REQ(same(b.y[2 * t + 1], t % 2 ? 0.0f : 2.0f));
    fk_free(&b);
    /* all zero: s = +0, ZERO_SCALE */
    memset(k, 0, sizeof k);
    fk_init(&b, &p);
    REQ_EQ(kvq_vidkv_quantize_keys(&b.k, &fl, k, &p, &POL_DEF), KVQ_OK);
    REQ(same(b.k.nrm_scale[0], 0.0f));
    REQ(fl & KVQ_FLAG_ZERO_SCALE);
    fk_free(&b);
}
END_TEST


/* SPEC: [VIDKV-L-04] [POL-SN-01] inputs are read under the subnormal policy
 * before any step: under daz a negative subnormal reads as -0, whose sign code
 * is 1 (x >= 0), under keep it stays negative (code 0); SUBNORMAL either way.
 * SPEC: [VIDKV-L-01] the head-major index map. */
START_TEST(special_subnormal_read)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 2);
    float k[16];
    fkeys b;
    uint32_t fl;
    kvq_policy daz = POL_DEF;
    daz.subnormal = KVQ_SUBNORMAL_DAZ;
    p.group = 8;
    p.normal = KVQ_VIDKV_NORMAL_SIGNMEAN;
    p.meta = KVQ_META_F32;
    REQ_EQ(kvq_vidkv_index(&p, 0, 3, 1), 7);
    p.heads = 2;
    REQ_EQ(kvq_vidkv_index(&p, 1, 3, 1), 23);
    p.heads = 1;
    for (uint32_t t = 0; t < 8; t++) {
        k[2 * t] = (float)t;                    /* abnormal */
        k[2 * t + 1] = t == 0 ? -0x1p-140f : 1.0f;
    }
    fk_init(&b, &p);
    REQ_EQ(kvq_vidkv_quantize_keys(&b.k, &fl, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(fl & KVQ_FLAG_SUBNORMAL, KVQ_FLAG_SUBNORMAL);
    REQ_EQ(b.k.nrm_codes[0], 0xFE);
    REQ_EQ(kvq_vidkv_quantize_keys(&b.k, &fl, k, &p, &daz), KVQ_OK);
    REQ_EQ(fl & KVQ_FLAG_SUBNORMAL, KVQ_FLAG_SUBNORMAL);
    REQ_EQ(b.k.nrm_codes[0], 0xFF);
    fk_free(&b);
}
END_TEST

/* SPEC: [VIDKV-K-05] [VIDKV-K-06] [VIDKV-K-07] a DC-only token: X_0 = N c, every
 * other coefficient 0; a group of equal tokens reconstructs through {0, s}. */
START_TEST(special_fft_dc)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 8);
    float k[64];
    fkeys b;
    uint32_t fl;
    p.group = 8;
    p.key_frac = 0.5f;          /* n_a = 4, N = 4, FFT */
    p.meta = KVQ_META_F32;
    for (uint32_t t = 0; t < 8; t++)
        for (uint32_t c = 0; c < 8; c++) k[t * 8 + c] = c < 4 ? (float)(t * c) : 0.25f;
    fk_init(&b, &p);
    REQ_EQ(kvq_vidkv_quantize_keys(&b.k, &fl, k, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(b.k.mask[0], 0x0F);
    /* component 0 (Re X_0 = 1) in every token: s = 1, code 1 */
    REQ(same(b.k.nrm_scale[0], 1.0f));
    REQ_EQ(b.k.nrm_codes[0], 0xFF);
    for (uint32_t j = 1; j < 8; j++) REQ(same(b.k.nrm_scale[j], 0.0f));
    REQ_EQ(kvq_vidkv_dequantize_keys(b.y, &fl, &b.k, &p, &POL_DEF), KVQ_OK);
    for (uint32_t t = 0; t < 8; t++)
        for (uint32_t c = 4; c < 8; c++) REQ(same(b.y[t * 8 + c], 0.25f));
    fk_free(&b);
}
END_TEST

/* SPEC: [VIDKV-STP-02] [VIDKV-STP-03] [VIDKV-V-01] scores, equal scores by the
 * lower token, a short protected group, its padding slots stored as 0. */
START_TEST(ties_stp_selection)
{
    /* T = 16, G = 8, d = 1; visual rows 0..9, text rows 10..11; ds = 1:
     * t = xs[10] + xs[11] = 1; score_i = xs[i]. */
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 16, 1);
    kvq_vidkv_stp s;
    float xs[16], v[16], score[10];
    uint8_t prot[2];
    fvals b;
    uint32_t np, fl;
    static const float sv[10] = { 1, 5, 3, 5, 2, 0, 3, 4, -1, 5 };
    p.group = 8;
    p.protect = 0.5f;       /* n_p = floor(0.5 * 10) = 5 */
    p.meta = KVQ_META_F32;
    for (uint32_t i = 0; i < 16; i++) {
        xs[i] = i < 10 ? sv[i] : i < 12 ? 0.5f : 100.0f;
        v[i] = (float)i;
    }
    s.xs = xs; s.rows = 16; s.ds = 1;
    s.vis_first = 0; s.vis_count = 10; s.txt_first = 10; s.txt_count = 2;
    REQ_EQ(kvq_vidkv_stp_select(score, prot, NULL, &p, &s, &POL_DEF), KVQ_OK);
    for (uint32_t i = 0; i < 10; i++) REQ(same(score[i], sv[i]));
    /* 5, 5, 5 (tokens 1, 3, 9), 4 (7), 3 (2 before 6) */
    REQ_EQ(prot[0], 0x8E);
    REQ_EQ(prot[1], 0x02);
    fv_init(&b, &p, 5);
    REQ_EQ(kvq_vidkv_quantize_values(&b.v, &np, &fl, v, &p, &s, &POL_DEF), KVQ_OK);
    REQ_EQ(np, 5);
    REQ_EQ(b.v.prot[0], 0x8E);
    /* protected list 1, 2, 3, 7, 9: min 1, max 9, s = 8/3, codes by KIVI */
    REQ(same(b.v.p_zero[0], 1.0f));
    REQ(same(b.v.p_scale[0], 8.0f / 3.0f));
    for (uint32_t i = 5; i < 8; i++) REQ_EQ(kvq_unpack_code(b.v.p_codes, i, 2), 0);
    REQ_EQ(kvq_unpack_code(b.v.p_codes, 4, 2), 3);
    REQ_EQ(kvq_unpack_code(b.v.p_codes, 0, 2), 0);
    /* ternary list: the 11 others in two groups, 8 + 3 */
    REQ_EQ(kvq_vidkv_tern_groups(&p, 5), 2);
    REQ_EQ(kvq_vidkv_dequantize_values(b.y, &fl, &b.v, 5, &p, &POL_DEF), KVQ_OK);
    REQ(same(b.y[9], fmaf(3.0f, 8.0f / 3.0f, 1.0f)));
    fv_free(&b);
}
END_TEST

/* SPEC: [VIDKV-W-01] [VIDKV-W-02] prefill leaves L mod G, a flush every G. */
START_TEST(degenerate_window)
{
    kvq_vidkv_window w;
    uint32_t fl, flushes = 0;
    REQ_EQ(kvq_vidkv_window_prefill(&w, 32, 100), KVQ_OK);
    REQ_EQ(w.quantized, 96);
    REQ_EQ(w.pending, 4);
    for (int i = 0; i < 60; i++) {
        REQ_EQ(kvq_vidkv_window_append(&w, &fl), KVQ_OK);
        flushes += fl;
        REQ(w.pending < 32);
    }
    REQ_EQ(flushes, 2);   /* at 128 and 160 tokens */
    REQ_EQ(w.quantized, 160);
    REQ_EQ(kvq_vidkv_window_prefill(NULL, 32, 1), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_window_prefill(&w, 0, 1), KVQ_E_PARAM);
}
END_TEST

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



/* ---- random_vs_exact ----------------------------------------------------- */

/* A random parameter set (small: the exact path evaluates every DFT at 256 bits). */
static kvq_vidkv_params rand_params(kvq_rng *r)
{
    static const uint32_t Gs[3] = { 8, 16, 32 };
    static const float fs[7] = { 0.0f, 0.25f, 0.3f, 0.5f, 0.75f, 1.0f, 0.7f };
    kvq_vidkv_params p = kvq_vidkv_params_default(1 + kvq_rng_below(r, 3), 8,
                                                  1 + kvq_rng_below(r, 20));
    p.group = Gs[kvq_rng_below(r, 3)];
    p.tokens = p.group * (1 + kvq_rng_below(r, 3));
    p.key_frac = kvq_rng_below(r, 4) ? fs[kvq_rng_below(r, 7)] : (float)kvq_rng_below(r, 9) / 8.0f;
    p.normal = kvq_rng_below(r, 4);
    p.split = kvq_rng_below(r, 2);
    p.meta = kvq_rng_below(r, 2) ? KVQ_META_F16 : KVQ_META_F32;
    p.vdeq = kvq_rng_below(r, 2);
    p.vpack = kvq_rng_below(r, 2);
    p.gamma = kvq_rng_below(r, 2) ? 0.7f : 0.5f;
    p.protect = kvq_rng_below(r, 2) ? 0.0f : kvq_rng_below(r, 2) ? 0.2f : kvq_rng_unit(r);
    return p;
}

/* Distributions: 0 uniform, 1 outlier channels, 2 few levels (ties), 3 with
 * zeros and subnormals, 4 wide magnitudes. */
static float rand_value(kvq_rng *r, uint32_t dist, uint32_t c)
{
    switch (dist) {
    case 0: return kvq_rng_sym(r);
    case 1: return kvq_rng_sym(r) * (c % 5 == 0 ? 64.0f : 1.0f);
    case 2: return (float)((int)kvq_rng_below(r, 5) - 2) * 0.5f;
    case 3: {
        uint32_t k = kvq_rng_below(r, 4);
        return k == 0 ? 0.0f : k == 1 ? ldexpf(kvq_rng_sym(r), -130) : kvq_rng_sym(r);
    }
    default: return ldexpf(kvq_rng_sym(r), (int)kvq_rng_below(r, 40) - 20);
    }
}

static kvq_policy rand_policy(kvq_rng *r)
{
    return mkpol(kvq_rng_below(r, 2), KVQ_OVERFLOW_SATURATE, kvq_rng_below(r, 2));
}

static void dump_params(const kvq_vidkv_params *p, const kvq_policy *pol, uint32_t dist,
                        uint64_t idx)
{
    fprintf(stderr,
            "FAIL seed=0x%016" PRIx64 " case=%" PRIu64 " dist=%u: H=%u T=%u d=%u G=%u meta=%u "
            "split=%u normal=%u vdeq=%u vpack=%u f=%a gamma=%a p=%a ties=%u subnormal=%u\n",
            g_seed, idx, dist, p->heads, p->tokens, p->dim, p->group, p->meta, p->split,
            p->normal, p->vdeq, p->vpack, (double)p->key_frac, (double)p->gamma,
            (double)p->protect, pol->ties, pol->subnormal);
}

/* Exact-path key buffers. */
typedef struct xkeys {
    kvq_exact_vidkv_keys_out o;
    double *lo, *hi;
} xkeys;

static void xk_init(xkeys *x, const kvq_vidkv_params *p)
{
    uint64_t ng = kvq_vidkv_nrm_groups(p);
    x->o.k.mask = xmalloc(kvq_vidkv_mask_bytes(p));
    x->o.k.abn_codes = xmalloc(kvq_vidkv_abn_code_bytes(p));
    x->o.k.abn_scale = xmalloc(kvq_vidkv_abn_groups(p) * 4u);
    x->o.k.abn_zero = xmalloc(kvq_vidkv_abn_groups(p) * 4u);
    x->o.k.nrm_codes = xmalloc(kvq_vidkv_nrm_code_bytes(p));
    x->o.k.nrm_scale = xmalloc(ng * 4u);
    x->o.k.nrm_zero = xmalloc(ng * 4u);
    x->o.comp_amb = xmalloc((uint64_t)p->heads * p->tokens * kvq_vidkv_nrm_per_block(p));
    x->o.s_lo = xmalloc(ng * 4u);
    x->o.s_hi = xmalloc(ng * 4u);
    x->lo = xmalloc(kvq_vidkv_elems(p) * 8u);
    x->hi = xmalloc(kvq_vidkv_elems(p) * 8u);
}

static void xk_free(xkeys *x)
{
    free(x->o.k.mask); free(x->o.k.abn_codes); free(x->o.k.abn_scale); free(x->o.k.abn_zero);
    free(x->o.k.nrm_codes); free(x->o.k.nrm_scale); free(x->o.k.nrm_zero); free(x->o.comp_amb);
    free(x->o.s_lo); free(x->o.s_hi); free(x->lo); free(x->hi);
}


static kvq_status exact_keys_codes(uint8_t *codes, uint8_t *amb, const float *k,
                                   const kvq_vidkv_params *p)
{
    xkeys xb;
    kvq_status st;
    xk_init(&xb, p);
    st = kvq_exact_vidkv_quantize_keys(&xb.o, k, p, &POL_DEF);
    if (st == KVQ_OK) {
        uint32_t mper = kvq_vidkv_nrm_per_block(p);
        /* the codes of token 0 of head 0, one byte per component (group j, slot 0) */
        for (uint32_t j = 0; j < mper; j++) {
            codes[j] = (uint8_t)kvq_unpack_code(xb.o.k.nrm_codes + kvq_vidkv_nrm_group(p, 0, 0, j) *
                                                                     kvq_vidkv_nrm_group_bytes(p),
                                                0, 1);
            amb[j] = xb.o.comp_amb[j];
        }
    }
    xk_free(&xb);
    return st;
}

static uint64_t g_amb_components, g_fft_cases, g_amb_values;

/* One random key case: fast against exact.  Returns 0 on a mismatch (the
 * message names it). */
static int keys_case(kvq_rng *r, uint64_t idx, char *why, size_t wn)
{
    kvq_vidkv_params p = rand_params(r);
    kvq_policy pol = rand_policy(r);
    uint32_t dist = kvq_rng_below(r, 5), mode = kvq_vidkv_normal_mode(&p);
    uint64_t n = kvq_vidkv_elems(&p);
    float *k = xmalloc(n * 4u);
    fkeys fb;
    xkeys xb;
    uint32_t ff = 0, fd = 0;
    kvq_status fs, xs;
    int ok = 1;
    for (uint32_t h = 0; h < p.heads; h++)
        for (uint32_t t = 0; t < p.tokens; t++)
            for (uint32_t c = 0; c < p.dim; c++)
                k[kvq_vidkv_index(&p, h, t, c)] = rand_value(r, dist, c);
    fk_init(&fb, &p);
    xk_init(&xb, &p);
    fs = kvq_vidkv_quantize_keys(&fb.k, &ff, k, &p, &pol);
    xs = kvq_exact_vidkv_quantize_keys(&xb.o, k, &p, &pol);
#define FAILK(...) do { snprintf(why, wn, __VA_ARGS__); ok = 0; goto done; } while (0)
    if (fs != xs) FAILK("status fast %d exact %d", fs, xs);
    if (fs != KVQ_OK) goto done;
    /* SPEC: [VIDKV-K-01] [VIDKV-K-02] the split, bit for bit */
    if (memcmp(fb.k.mask, xb.o.k.mask, fb.mb)) FAILK("split mask differs");
    /* SPEC: [VIDKV-K-03] abnormal groups, bit for bit */
    if (memcmp(fb.k.abn_codes, xb.o.k.abn_codes, fb.acb)) FAILK("abnormal codes differ");
    for (uint64_t g = 0; g < fb.nag; g++)
        if (!same(fb.k.abn_scale[g], xb.o.k.abn_scale[g]) ||
            !same(fb.k.abn_zero[g], xb.o.k.abn_zero[g]))
            FAILK("abnormal metadata of group %" PRIu64, g);
    if (mode != KVQ_VIDKV_NORMAL_FFT) {
        /* SPEC: [VIDKV-K-08] MINMAX and SIGNMEAN, bit for bit; flags [VIDKV-L-05] */
        if (memcmp(fb.k.nrm_codes, xb.o.k.nrm_codes, fb.ncb)) FAILK("normal codes differ");
        for (uint64_t g = 0; g < fb.nng; g++)
            if (!same(fb.k.nrm_scale[g], xb.o.k.nrm_scale[g]) ||
                (mode == KVQ_VIDKV_NORMAL_MINMAX && !same(fb.k.nrm_zero[g], xb.o.k.nrm_zero[g])))
                FAILK("normal metadata of group %" PRIu64, g);
        if (ff != (xb.o.flags & ~KVQ_FLAG_AMBIGUOUS))
            FAILK("flags fast 0x%x exact 0x%x", ff, xb.o.flags);
    } else if (fb.nng > 0) {
        /* SPEC: [VIDKV-B-01] decisive components carry the real code;
         * SPEC: [VIDKV-B-02] stored scales within the accepted range */
        uint32_t mper = kvq_vidkv_nrm_per_block(&p), G = p.group;
        g_fft_cases++;
        for (uint32_t h = 0; h < p.heads; h++)
            for (uint32_t t = 0; t < p.tokens; t++)
                for (uint32_t j = 0; j < mper; j++) {
                    uint64_t g = kvq_vidkv_nrm_group(&p, h, t / G, j);
                    uint32_t fc = kvq_unpack_code(fb.k.nrm_codes + g * (G / 8), t % G, 1);
                    uint32_t xc = kvq_unpack_code(xb.o.k.nrm_codes + g * (G / 8), t % G, 1);
                    if (xb.o.comp_amb[((uint64_t)h * p.tokens + t) * mper + j]) {
                        g_amb_components++;
                        continue;
                    }
                    if (fc != xc) FAILK("decisive component h=%u t=%u j=%u: fast %u real %u", h, t, j, fc, xc);
                }
        for (uint64_t g = 0; g < fb.nng; g++)
            if (!(fb.k.nrm_scale[g] >= xb.o.s_lo[g] && fb.k.nrm_scale[g] <= xb.o.s_hi[g]))
                FAILK("component scale %" PRIu64 ": %a outside [%a, %a]", g,
                      (double)fb.k.nrm_scale[g], (double)xb.o.s_lo[g], (double)xb.o.s_hi[g]);
    }
    /* SPEC: [VIDKV-K-11] [VIDKV-B-03] the fast dequantization of its own stored
     * keys: bit for bit where pinned, within rho_i on the DFT path */
    if (kvq_vidkv_dequantize_keys(fb.y, &fd, &fb.k, &p, &pol) != KVQ_OK) FAILK("fast dequantize");
    if (kvq_exact_vidkv_key_deq_bounds(xb.lo, xb.hi, &fb.k, &p) != KVQ_OK) FAILK("exact bounds");
    for (uint64_t e = 0; e < n; e++) {
        if (xb.lo[e] == xb.hi[e] ? !same(fb.y[e], (float)xb.lo[e])
                                 : !((double)fb.y[e] >= xb.lo[e] && (double)fb.y[e] <= xb.hi[e]))
            FAILK("dequantized element %" PRIu64 ": %a, accepted [%a, %a]", e, (double)fb.y[e],
                  xb.lo[e], xb.hi[e]);
    }
done:
#undef FAILK
    if (!ok) dump_params(&p, &pol, dist, idx);
    fk_free(&fb);
    xk_free(&xb);
    free(k);
    return ok;
}

/* SPEC: [VIDKV-B-05] [VIDKV-K-01] [VIDKV-K-03] [VIDKV-K-05] [VIDKV-K-06] [VIDKV-K-07]
 * [VIDKV-K-08] [VIDKV-K-09] [VIDKV-K-10] fast keys against exact keys. */
START_TEST(random_vs_exact_keys)
{
    kvq_rng r = { g_seed ^ 0x6b657973ull };
    char why[256];
    g_amb_components = g_fft_cases = 0;
    for (uint64_t i = 0; i < 1 + g_cases / 20; i++)
        REQ_MSG(keys_case(&r, i, why, sizeof why), "key case %" PRIu64 ": %s", i, why);
    /* the FFT path was reached */
    REQ(g_fft_cases > g_cases / 320);
    printf("check_vidkv: %" PRIu64 " FFT key cases, %" PRIu64 " ambiguous components\n",
           g_fft_cases, g_amb_components);
}
END_TEST

/* One random value case. */
static int values_case(kvq_rng *r, uint64_t idx, char *why, size_t wn)
{
    kvq_vidkv_params p = rand_params(r);
    kvq_policy pol = rand_policy(r);
    uint32_t dist = kvq_rng_below(r, 5);
    uint64_t n = kvq_vidkv_elems(&p);
    uint32_t rows = p.tokens + kvq_rng_below(r, 9), ds = 1 + kvq_rng_below(r, 8);
    float *v = xmalloc(n * 4u), *xs = xmalloc((uint64_t)rows * ds * 4u), *score;
    uint8_t *prot;
    kvq_vidkv_stp st;
    fvals fb;
    kvq_exact_vidkv_values_out xo;
    uint32_t np = 0, ff = 0, fd = 0, dx = kvq_rng_below(r, 3);
    kvq_status fs, xs2;
    int ok = 1;
    for (uint64_t e = 0; e < n; e++) v[e] = rand_value(r, dist, (uint32_t)(e % p.dim));
    /* score inputs: small integers (equal scores happen) or uniform */
    for (uint64_t e = 0; e < (uint64_t)rows * ds; e++)
        xs[e] = dx == 0 ? (float)((int)kvq_rng_below(r, 3) - 1) : kvq_rng_sym(r);
    st.xs = xs;
    st.rows = rows;
    st.ds = ds;
    st.vis_first = kvq_rng_below(r, p.tokens);
    st.vis_count = 1 + kvq_rng_below(r, p.tokens - st.vis_first);
    st.txt_first = kvq_rng_below(r, rows);
    st.txt_count = 1 + kvq_rng_below(r, rows - st.txt_first);
    fv_init(&fb, &p, p.tokens);
    xo.v.tern = xmalloc(fb.tcb);
    xo.v.beta = xmalloc(fb.ntg * 4u);
    xo.v.prot = xmalloc(fb.pmb);
    xo.v.p_codes = xmalloc(fb.pcb);
    xo.v.p_scale = xmalloc(fb.npg * 4u);
    xo.v.p_zero = xmalloc(fb.npg * 4u);
    xo.deq = xmalloc(n * 4u);
    xo.code_real = xmalloc(n);
    xo.amb = xmalloc(n);
    xo.score = xmalloc(st.vis_count * 4u);
    score = xmalloc(st.vis_count * 4u);
    prot = xmalloc(fb.pmb);
    fs = kvq_vidkv_quantize_values(&fb.v, &np, &ff, v, &p, &st, &pol);
    xs2 = kvq_exact_vidkv_quantize_values(&xo, v, &p, &st, &pol);
#define FAILV(...) do { snprintf(why, wn, __VA_ARGS__); ok = 0; goto done; } while (0)
    if (fs != xs2) FAILV("status fast %d exact %d", fs, xs2);
    if (fs != KVQ_OK) goto done;
    /* SPEC: [VIDKV-STP-02] [VIDKV-STP-03] scores, n_p and the mask, bit for bit */
    if (np != xo.np) FAILV("n_p fast %u exact %u", np, xo.np);
    if (p.protect > 0.0f) {
        if (kvq_vidkv_stp_select(score, prot, NULL, &p, &st, &pol) != KVQ_OK) FAILV("stp_select");
        for (uint32_t i = 0; i < st.vis_count; i++)
            if (!same(score[i], xo.score[i])) FAILV("score %u: %a vs %a", i, (double)score[i], (double)xo.score[i]);
        if (memcmp(prot, xo.v.prot, fb.pmb) || memcmp(fb.v.prot, xo.v.prot, fb.pmb))
            FAILV("protection mask differs");
        if (memcmp(fb.v.p_codes, xo.v.p_codes, kvq_vidkv_prot_code_bytes(&p, np)))
            FAILV("protected codes differ");
        for (uint64_t g = 0; g < kvq_vidkv_prot_groups(&p, np); g++)
            if (!same(fb.v.p_scale[g], xo.v.p_scale[g]) || !same(fb.v.p_zero[g], xo.v.p_zero[g]))
                FAILV("protected metadata of group %" PRIu64, g);
    }
    /* SPEC: [VIDKV-V-02] [VIDKV-V-04] ternary bytes; [VIDKV-V-03] beta */
    if (memcmp(fb.v.tern, xo.v.tern, kvq_vidkv_tern_code_bytes(&p, np))) FAILV("ternary bytes differ");
    if (p.vdeq == KVQ_VIDKV_VDEQ_SCALED)
        for (uint64_t g = 0; g < kvq_vidkv_tern_groups(&p, np); g++)
            if (!same(fb.v.beta[g], xo.v.beta[g])) FAILV("beta of group %" PRIu64, g);
    if (ff != (xo.flags & ~KVQ_FLAG_AMBIGUOUS)) FAILV("flags fast 0x%x exact 0x%x", ff, xo.flags);
    /* SPEC: [VIDKV-V-06] dequantization, bit for bit */
    if (kvq_vidkv_dequantize_values(fb.y, &fd, &fb.v, np, &p, &pol) != KVQ_OK) FAILV("dequantize");
    for (uint64_t e = 0; e < n; e++)
        if (!same(fb.y[e], xo.deq[e]))
            FAILV("dequantized %" PRIu64 ": %a vs %a", e, (double)fb.y[e], (double)xo.deq[e]);
    /* SPEC: [VIDKV-B-04] the pinned code is the real code or, ambiguous, 0 or sign(v) */
    for (uint32_t h = 0; h < p.heads; h++)
        for (uint32_t t = 0; t < p.tokens; t++) {
            if (p.protect > 0.0f && kvq_vidkv_mask_get(xo.v.prot, t)) continue;
            for (uint32_t c = 0; c < p.dim; c++) {
                uint64_t e = kvq_vidkv_index(&p, h, t, c);
                int32_t pc = fb.y[e] > 0.0f ? 1 : fb.y[e] < 0.0f ? -1 : 0;
                if (xo.amb[e]) {
                    g_amb_values++;
                    if (pc != 0 && pc != (v[e] > 0.0f ? 1 : -1)) FAILV("ambiguous %" PRIu64, e);
                } else if (pc != xo.code_real[e] &&
                           !(p.vdeq == KVQ_VIDKV_VDEQ_SCALED && fb.y[e] == 0.0f)) {
                    FAILV("element %" PRIu64 ": pinned %d, real %d", e, pc, xo.code_real[e]);
                }
            }
        }
done:
#undef FAILV
    if (!ok) dump_params(&p, &pol, dist, idx);
    fv_free(&fb);
    free(xo.v.tern); free(xo.v.beta); free(xo.v.prot); free(xo.v.p_codes); free(xo.v.p_scale);
    free(xo.v.p_zero); free(xo.deq); free(xo.code_real); free(xo.amb); free(xo.score);
    free(score); free(prot); free(v); free(xs);
    return ok;
}

/* SPEC: [VIDKV-B-05] [VIDKV-V-01] [VIDKV-V-05] [VIDKV-STP-01] fast values against exact values. */
START_TEST(random_vs_exact_values)
{
    kvq_rng r = { g_seed ^ 0x76616c73ull };
    char why[256];
    g_amb_values = 0;
    for (uint64_t i = 0; i < 1 + g_cases / 20; i++)
        REQ_MSG(values_case(&r, i, why, sizeof why), "value case %" PRIu64 ": %s", i, why);
}
END_TEST

/* SPEC: [VIDKV-K-09] [VIDKV-B-01] every reference twiddle is within tau = 2^-23
 * of the real value (MPFR). */
START_TEST(random_vs_exact_twiddles)
{
    static const uint32_t big[] = { 255, 256, 257, 384, 509, 512, 640, 768, 1000, 1021, 1024 };
    for (uint32_t N = 1; N <= 128; N++)
        REQ_MSG(kvq_exact_vidkv_twiddle_err(N) <= 0x1p-23, "N = %u: %a", N,
                kvq_exact_vidkv_twiddle_err(N));
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        REQ_MSG(kvq_exact_vidkv_twiddle_err(big[i]) <= 0x1p-23, "N = %u", big[i]);
}
END_TEST


/* Exact-path key buffers are defined below; this test builds its own. */
static kvq_status exact_keys_codes(uint8_t *codes, uint8_t *amb, const float *k,
                                   const kvq_vidkv_params *p);

/* SPEC: [VIDKV-K-05] [VIDKV-B-01] the DFT's sign convention and interleaving
 * (Im X_1 of a unit at n = 1 is -1: component 3 has code 0), and the
 * ambiguity rule on both sides of rho_f: with A = 2 and N = 4, rho_f =
 * 2 max(e_4, f_4) + ... ~ 2^-17.7 (f_4, the Cooley-Tukey factor, ~ 2^-18.75):
 * X_0 = 2^-16 is decisive, X_0 = 2^-19 ambiguous. */
START_TEST(special_fft_sign_and_ambiguity)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 8, 8);
    float k[64];
    uint8_t codes[8 * 1], amb[8 * 8];
    p.group = 8;
    p.key_frac = 0.5f;                 /* channels 0..3 abnormal (range 100), N = 4 */
    p.meta = KVQ_META_F32;
    for (uint32_t t = 0; t < 8; t++)
        for (uint32_t c = 0; c < 8; c++)
            k[t * 8 + c] = c < 4 ? (float)(t * 100u) : c == 5 ? 1.0f : 0.0f;
    REQ_EQ(exact_keys_codes(codes, amb, k, &p), KVQ_OK);
    /* components of token 0: Re X0 = 1, Im X0 = 0, Re X1 = 0, Im X1 = -1, Re X2 = -1,
     * Im X2 = 0, Re X3 = 0, Im X3 = +1 */
    {
        static const int want_amb[8] = { 0, 1, 1, 0, 0, 1, 1, 0 };
        static const int want_code[8] = { 1, -1, -1, 0, 0, -1, -1, 1 };
        for (uint32_t j = 0; j < 8; j++) {
            REQ_MSG(amb[j] == want_amb[j], "component %u: ambiguous %u", j, amb[j]);
            if (!want_amb[j]) REQ_MSG((int)((codes[j] & 1u)) == want_code[j], "component %u", j);
        }
    }
    /* x = (1, -1 + 2^-16, 0, 0) and (1, -1 + 2^-19, 0, 0) on the normal channels */
    for (int e = 16; e <= 19; e += 3) {
        for (uint32_t t = 0; t < 8; t++) {
            k[t * 8 + 4] = 1.0f;
            k[t * 8 + 5] = -1.0f + ldexpf(1.0f, -e);
        }
        REQ_EQ(exact_keys_codes(codes, amb, k, &p), KVQ_OK);
        REQ_MSG(amb[0] == (e == 19), "2^-%d: component 0 ambiguous %u", e, amb[0]);
        if (e == 16) REQ_EQ(codes[0] & 1u, 1);
    }
}
END_TEST

/* SPEC: [VIDKV-STP-03] n_p = floor(p lv) of the exact product: 0.7f * 10 is
 * 6.99999988 (6), though RN32(0.7f * 10) = 7. */
START_TEST(ties_protect_count)
{
    REQ_EQ(kvq_vidkv_prot_count(0.7f, 10), 6);
    REQ_EQ((uint32_t)(0.7f * 10.0f), 7);    /* the other reading */
    REQ_EQ(kvq_vidkv_prot_count(0.2f, 1280), 256);
    REQ_EQ(kvq_vidkv_prot_count(1.0f, 7), 7);
    REQ_EQ(kvq_vidkv_prot_count(0.5f, 1), 0);
}
END_TEST

/* SPEC: [VIDKV-K-04] AUTO: the FFT for f exactly 0.5 or 0.75, MINMAX otherwise
 * (0.7 and 0.6 lie inside [0.5, 0.75] read as an interval). */
START_TEST(ties_auto_normal)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 32, 128);
    static const float f[6] = { 0.5f, 0.75f, 0.7f, 0.6f, 0.25f, 0x1.000002p-1f };
    static const uint32_t want[6] = { 1, 1, 2, 2, 2, 2 };
    for (int i = 0; i < 6; i++) {
        p.key_frac = f[i];
        REQ_EQ(kvq_vidkv_normal_mode(&p), want[i]);
    }
    p.normal = KVQ_VIDKV_NORMAL_SIGNMEAN;
    REQ_EQ(kvq_vidkv_normal_mode(&p), KVQ_VIDKV_NORMAL_SIGNMEAN);
}
END_TEST


/* ---- a second legitimate evaluation, accepted by the bounds -------------- */

/* Pairwise (tree) binary32 sum of a[0 .. n-1]. */
static float tree_sum(const float *a, uint32_t n)
{
    if (n == 1) return a[0];
    if (n == 0) return 0.0f;
    return tree_sum(a, n / 2) + tree_sum(a + n / 2, n - n / 2);
}

/* Twiddles by another recipe: the binary64 angle (2m) pi / N, and conjugate
 * symmetry for m > N/2 (as FFT libraries do); within tau of the real values. */
static void alt_twiddle(float *c, float *sn, uint32_t m, uint32_t N)
{
    const double pi = 0x1.921fb54442d18p+1;
    int neg = 0;
    if (2 * m > N) { m = N - m; neg = 1; }
    *c = (float)cos((double)(2 * m) * pi / (double)N);
    *sn = (float)sin((double)(2 * m) * pi / (double)N);
    if (neg) *sn = -*sn;
}

/* Radix-2 decimation in time in binary32 complex arithmetic, n a power of 2
 * dividing N: out[k] = sum_j in[j*stride] w^(jk), w = e^(-+2 pi i / n) (inv:
 * +), unscaled; twiddles by alt_twiddle. */
static void fft2(float *ore, float *oim, const float *ire, const float *iim, uint32_t n,
                 uint32_t stride, uint32_t N, int inv)
{
    float er[32], ei[32], odr[32], odi[32];
    if (n == 1) {
        ore[0] = ire[0];
        oim[0] = iim[0];
        return;
    }
    fft2(er, ei, ire, iim, n / 2, 2 * stride, N, inv);
    fft2(odr, odi, ire + stride, iim + stride, n / 2, 2 * stride, N, inv);
    for (uint32_t k = 0; k < n / 2; k++) {
        float c, sn, tr, ti;
        alt_twiddle(&c, &sn, k * (N / n), N);
        if (inv) { tr = c * odr[k] - sn * odi[k]; ti = c * odi[k] + sn * odr[k]; }
        else { tr = c * odr[k] + sn * odi[k]; ti = c * odi[k] - sn * odr[k]; }
        ore[k] = er[k] + tr;
        oim[k] = ei[k] + ti;
        ore[k + n / 2] = er[k] - tr;
        oim[k + n / 2] = ei[k] - ti;
    }
}

static int pow2(uint32_t n)
{
    return n != 0 && (n & (n - 1)) == 0;
}

/* SPEC: [VIDKV-B-01] [VIDKV-B-02] [VIDKV-B-03] [VIDKV-B-04] a subject that
 * evaluates the DFT with other twiddles and tree sums, or by a radix-2 FFT
 * (Cooley-Tukey, lemma F of spec/bounds/vidkv.md), the component scales
 * with tree sums and a reciprocal, and the ternary threshold with a tree sum
 * and a reciprocal, is accepted everywhere by the exact path's bounds. */
START_TEST(random_vs_exact_alternate)
{
    kvq_rng r = { g_seed ^ 0x616c74ull };
    uint64_t decisive = 0, radix2 = 0;
    for (uint64_t it = 0; it < 1 + g_cases / 100; it++) {
        kvq_vidkv_params p = kvq_vidkv_params_default(1 + kvq_rng_below(&r, 2), 8,
                                                      2 + kvq_rng_below(&r, 30));
        uint32_t dist = kvq_rng_below(&r, 5), G, N, mper, na;
        uint64_t n;
        float *k, *prod, *comp;
        fkeys fb;
        xkeys xb;
        p.group = 8u << kvq_rng_below(&r, 3);
        G = p.group;
        p.tokens = G * (1 + kvq_rng_below(&r, 2));
        p.key_frac = kvq_rng_below(&r, 2) ? 0.5f : 0.75f;
        p.meta = kvq_rng_below(&r, 2) ? KVQ_META_F16 : KVQ_META_F32;
        p.split = kvq_rng_below(&r, 2);
        n = kvq_vidkv_elems(&p);
        na = kvq_vidkv_n_abn(&p);
        N = kvq_vidkv_n_nrm(&p);
        mper = 2 * N;
        k = xmalloc(n * 4);
        for (uint64_t e = 0; e < n; e++) k[e] = rand_value(&r, dist, (uint32_t)(e % p.dim));
        fk_init(&fb, &p);
        xk_init(&xb, &p);
        /* the reference's split and abnormal groups, then this subject's normal path */
        REQ_EQ(kvq_vidkv_quantize_keys(&fb.k, NULL, k, &p, &POL_DEF), KVQ_OK);
        REQ_EQ(kvq_exact_vidkv_quantize_keys(&xb.o, k, &p, &POL_DEF), KVQ_OK);
        if (N == 0) goto next;
        prod = xmalloc(2 * N * 4);
        comp = xmalloc((uint64_t)p.tokens * mper * 4);
        for (uint32_t h = 0; h < p.heads; h++) {
            const uint8_t *row = fb.k.mask + kvq_vidkv_mask_row(&p, h);
            uint32_t nl[64], q = 0;
            for (uint32_t c = 0; c < p.dim; c++)
                if (!kvq_vidkv_mask_get(row, c)) nl[q++] = c;
            for (uint32_t t = 0; t < p.tokens; t++) {
                if (pow2(N) && N <= 32 && it % 2 == 0) {   /* a radix-2 FFT */
                    float xr[32], xi[32], yr[32], yi[32];
                    for (uint32_t m = 0; m < N; m++) {
                        xr[m] = k[kvq_vidkv_index(&p, h, t, nl[m])];
                        xi[m] = 0.0f;
                    }
                    fft2(yr, yi, xr, xi, N, 1, N, 0);
                    for (uint32_t kk = 0; kk < N; kk++) {
                        comp[(uint64_t)t * mper + 2 * kk] = yr[kk];
                        comp[(uint64_t)t * mper + 2 * kk + 1] = yi[kk];
                    }
                    radix2++;
                    continue;
                }
                for (uint32_t j = 0; j < mper; j++) {
                    for (uint32_t m = 0; m < N; m++) {
                        float c, sn, x = k[kvq_vidkv_index(&p, h, t, nl[m])];
                        alt_twiddle(&c, &sn, (uint32_t)(((uint64_t)(j / 2) * m) % N), N);
                        prod[m] = j % 2 ? -(x * sn) : x * c;
                    }
                    comp[(uint64_t)t * mper + j] = tree_sum(prod, N);
                }
            }
            for (uint32_t b = 0; b < p.tokens / G; b++)
                for (uint32_t j = 0; j < mper; j++) {
                    uint64_t g = kvq_vidkv_nrm_group(&p, h, b, j);
                    float a[KVQ_MAX_GROUP], s32, st;
                    int ov;
                    uint8_t *grp = fb.k.nrm_codes + g * (G / 8);
                    memset(grp, 0, G / 8);
                    for (uint32_t i = 0; i < G; i++) {
                        float y = comp[(uint64_t)(b * G + i) * mper + j];
                        a[i] = fabsf(y);
                        kvq_pack_code(grp, i, 1, y >= 0.0f);
                        if (!xb.o.comp_amb[((uint64_t)h * p.tokens + b * G + i) * mper + j]) {
                            decisive++;
                            REQ_MSG(kvq_unpack_code(grp, i, 1) ==
                                        kvq_unpack_code(xb.o.k.nrm_codes + g * (G / 8), i, 1),
                                    "case %" PRIu64 ": decisive component flipped", it);
                        }
                    }
                    s32 = tree_sum(a, G) * (1.0f / (float)G);   /* G a power of 2 */
                    st = p.meta == KVQ_META_F16 ? kvq_round_f16(s32, &ov) : s32;
                    if (st < (p.meta == KVQ_META_F16 ? 0x1p-14f : 0x1p-126f)) st = 0.0f;
                    fb.k.nrm_scale[g] = st;
                    REQ_MSG(st >= xb.o.s_lo[g] && st <= xb.o.s_hi[g],
                            "case %" PRIu64 ": scale %a outside [%a, %a]", it, (double)st,
                            (double)xb.o.s_lo[g], (double)xb.o.s_hi[g]);
                }
            /* this subject's inverse: other twiddles, tree sums, one division */
            for (uint32_t t = 0; t < p.tokens; t++) {
                uint32_t b = t / G, i = t % G;
                float ab[128];
                for (uint32_t j = 0; j < mper; j++) {
                    uint64_t g = kvq_vidkv_nrm_group(&p, h, b, j);
                    ab[j] = kvq_unpack_code(fb.k.nrm_codes + g * (G / 8), i, 1) ? fb.k.nrm_scale[g]
                                                                                : 0.0f;
                }
                if (pow2(N) && N <= 32 && it % 2 == 0) {
                    float xr[32], xi[32], yr[32], yi[32];
                    for (uint32_t kk = 0; kk < N; kk++) {
                        xr[kk] = ab[2 * kk];
                        xi[kk] = ab[2 * kk + 1];
                    }
                    fft2(yr, yi, xr, xi, N, 1, N, 1);
                    for (uint32_t m = 0; m < N; m++)
                        fb.y[kvq_vidkv_index(&p, h, t, nl[m])] = yr[m] / (float)N;
                    continue;
                }
                for (uint32_t m = 0; m < N; m++) {
                    for (uint32_t kk = 0; kk < N; kk++) {
                        float c, sn;
                        alt_twiddle(&c, &sn, (uint32_t)(((uint64_t)kk * m) % N), N);
                        prod[2 * kk] = ab[2 * kk] * c;
                        prod[2 * kk + 1] = -(ab[2 * kk + 1] * sn);
                    }
                    fb.y[kvq_vidkv_index(&p, h, t, nl[m])] = tree_sum(prod, 2 * N) / (float)N;
                }
            }
        }
        REQ_EQ(kvq_exact_vidkv_key_deq_bounds(xb.lo, xb.hi, &fb.k, &p), KVQ_OK);
        for (uint32_t h = 0; h < p.heads; h++) {
            const uint8_t *row = fb.k.mask + kvq_vidkv_mask_row(&p, h);
            for (uint32_t t = 0; t < p.tokens; t++)
                for (uint32_t c = 0; c < p.dim; c++) {
                    uint64_t e = kvq_vidkv_index(&p, h, t, c);
                    if (kvq_vidkv_mask_get(row, c)) continue;
                    REQ_MSG((double)fb.y[e] >= xb.lo[e] && (double)fb.y[e] <= xb.hi[e],
                            "case %" PRIu64 ": element %" PRIu64 " %a outside [%a, %a]", it, e,
                            (double)fb.y[e], xb.lo[e], xb.hi[e]);
                }
        }
        free(prod);
        free(comp);
    next:
        (void)na;
        fk_free(&fb);
        xk_free(&xb);
        free(k);
    }
    REQ(decisive > 0);
    REQ(radix2 > 0);
    /* ternary: a tree sum and a reciprocal for the mean */
    for (uint64_t it = 0; it < 1 + g_cases / 100; it++) {
        kvq_vidkv_params p = kvq_vidkv_params_default(1, 32, 3);
        kvq_exact_vidkv_values_out xo;
        uint64_t n = kvq_vidkv_elems(&p);
        float v[96];
        uint32_t dist = kvq_rng_below(&r, 5);
        p.gamma = kvq_rng_below(&r, 2) ? 0.7f : 0.5f;
        for (uint64_t e = 0; e < n; e++) v[e] = rand_value(&r, dist, (uint32_t)e % 3);
        xo.v.tern = xmalloc(kvq_vidkv_tern_code_bytes(&p, 0));
        xo.v.beta = NULL;
        xo.v.prot = NULL;
        xo.v.p_codes = NULL;
        xo.v.p_scale = xo.v.p_zero = NULL;
        xo.deq = xmalloc(n * 4);
        xo.code_real = xmalloc(n);
        xo.amb = xmalloc(n);
        xo.score = NULL;
        REQ_EQ(kvq_exact_vidkv_quantize_values(&xo, v, &p, NULL, &POL_DEF), KVQ_OK);
        for (uint32_t c = 0; c < 3; c++) {
            float a[32], alpha;
            for (uint32_t t = 0; t < 32; t++) a[t] = fabsf(v[t * 3 + c]);
            alpha = (tree_sum(a, 32) * (1.0f / 32.0f)) * p.gamma;
            for (uint32_t t = 0; t < 32; t++) {
                int32_t code = kvq_vidkv_trit(v[t * 3 + c], alpha);
                uint64_t e = t * 3u + c;
                REQ_MSG(code == xo.code_real[e] ||
                            (xo.amb[e] && (code == 0 || code == (v[e] > 0.0f ? 1 : -1))),
                        "ternary case %" PRIu64 ": element %" PRIu64 " code %d not accepted", it,
                        e, code);
            }
        }
        free(xo.v.tern); free(xo.deq); free(xo.code_real); free(xo.amb);
    }
}
END_TEST


/* SPEC: [VIDKV-V-02] the mean is a division: with m = 24 and S = 0x1.bd6ac2p+0,
 * RN32(S / 24) = 0x1.28f1d6p-4 but RN32(S * RN32(1/24)) = 0x1.28f1d8p-4, and a
 * value equal to the latter is +1 under the pinned division, 0 under the
 * reciprocal (a bounded-level subject may do either: the value is ambiguous). */
START_TEST(ties_ternary_division)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(1, 24, 1);
    float v[24] = { 0 };
    fvals b;
    uint32_t np;
    const float S = 0x1.bd6ac2p+0f, hi = 0x1.28f1d8p-4f;
    p.group = 24;
    p.gamma = 1.0f;
    v[0] = hi;
    v[1] = S - hi;                     /* RN32 */
    REQ(same(v[0] + v[1], S));         /* the construction holds */
    REQ(same(S / 24.0f, 0x1.28f1d6p-4f));
    REQ(same(S * (1.0f / 24.0f), hi));
    fv_init(&b, &p, 0);
    REQ_EQ(kvq_vidkv_quantize_values(&b.v, &np, NULL, v, &p, NULL, &POL_DEF), KVQ_OK);
    REQ_EQ(kvq_vidkv_digit_trit(kvq_vidkv_tern_get(b.v.tern, 0, p.vpack)), 1);
    REQ_EQ(kvq_vidkv_digit_trit(kvq_vidkv_tern_get(b.v.tern, 2, p.vpack)), 0);
    fv_free(&b);
    {
        kvq_exact_vidkv_values_out xo;
        xo.v.tern = xmalloc(kvq_vidkv_tern_code_bytes(&p, 0));
        xo.v.beta = xo.v.p_scale = xo.v.p_zero = NULL;
        xo.v.prot = xo.v.p_codes = NULL;
        xo.deq = xmalloc(24 * 4);
        xo.code_real = xmalloc(24);
        xo.amb = xmalloc(24);
        xo.score = NULL;
        REQ_EQ(kvq_exact_vidkv_quantize_values(&xo, v, &p, NULL, &POL_DEF), KVQ_OK);
        REQ(same(xo.deq[0], 1.0f));
        REQ_EQ(xo.amb[0], 1);          /* both readings are legitimate at the bounded level */
        free(xo.v.tern); free(xo.deq); free(xo.code_real); free(xo.amb);
    }
}
END_TEST

/* ---- bad input: one test per row of spec/vidkv.md's table ---------------- */

/* A small valid key/value problem: H = 2, T = 16, d = 6, G = 8. */
static kvq_vidkv_params small_params(void)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(2, 16, 6);
    p.group = 8;
    return p;
}

static void small_data(float *x, uint64_t n)
{
    kvq_rng r = { 0x5eedull };
    for (uint64_t e = 0; e < n; e++) x[e] = kvq_rng_sym(&r);
}

/* Keys and values with parameters q must fail with want and write nothing. */
static void expect_both(const kvq_vidkv_params *q, const float *x, const kvq_vidkv_stp *stp,
                        const kvq_policy *pol, kvq_status want, const char *row)
{
    kvq_vidkv_params alloc = small_params();
    fkeys kb;
    fvals vb;
    uint32_t fl = SENT32, np = SENT32;
    kvq_status st;
    fk_init(&kb, &alloc);
    fv_init(&vb, &alloc, 16);
    st = kvq_vidkv_quantize_keys(&kb.k, &fl, x, q, pol);
    REQ_MSG(st == want, "row %s keys: status %d, want %d", row, st, want);
    REQ_MSG(fk_untouched(&kb) && fl == SENT32, "row %s keys: output written", row);
    st = kvq_vidkv_quantize_values(&vb.v, &np, &fl, x, q, stp, pol);
    REQ_MSG(st == want, "row %s values: status %d, want %d", row, st, want);
    REQ_MSG(fv_untouched(&vb) && fl == SENT32 && np == SENT32, "row %s values: output written",
            row);
    fk_free(&kb);
    fv_free(&vb);
    /* the exact path rejects the same input with the same status, writing nothing */
    {
        xkeys xb;
        kvq_exact_vidkv_values_out xo;
        uint64_t n = kvq_vidkv_elems(&alloc);
        xk_init(&xb, &alloc);
        memset(xb.o.k.mask, SENT8, kvq_vidkv_mask_bytes(&alloc));
        memset(xb.o.k.abn_codes, SENT8, kvq_vidkv_abn_code_bytes(&alloc));
        xb.o.flags = SENT32;
        st = kvq_exact_vidkv_quantize_keys(&xb.o, x, q, pol);
        REQ_MSG(st == want, "row %s exact keys: status %d, want %d", row, st, want);
        REQ_MSG(all_bytes(xb.o.k.mask, kvq_vidkv_mask_bytes(&alloc), SENT8) &&
                    all_bytes(xb.o.k.abn_codes, kvq_vidkv_abn_code_bytes(&alloc), SENT8) &&
                    xb.o.flags == SENT32,
                "row %s exact keys: output written", row);
        xk_free(&xb);
        xo.v.tern = xmalloc(kvq_vidkv_tern_code_bytes(&alloc, 0));
        xo.v.beta = xmalloc(kvq_vidkv_tern_groups(&alloc, 0) * 4u);
        xo.v.prot = xmalloc(kvq_vidkv_prot_mask_bytes(&alloc));
        xo.v.p_codes = xmalloc(kvq_vidkv_prot_code_bytes(&alloc, alloc.tokens));
        xo.v.p_scale = xmalloc(kvq_vidkv_prot_groups(&alloc, alloc.tokens) * 4u);
        xo.v.p_zero = xmalloc(kvq_vidkv_prot_groups(&alloc, alloc.tokens) * 4u);
        xo.deq = xmalloc(n * 4u);
        xo.code_real = xmalloc(n);
        xo.amb = xmalloc(n);
        xo.score = xmalloc(alloc.tokens * 4u);
        memset(xo.v.tern, SENT8, kvq_vidkv_tern_code_bytes(&alloc, 0));
        memset(xo.deq, SENT8, n * 4u);
        xo.flags = SENT32;
        xo.np = SENT32;
        st = kvq_exact_vidkv_quantize_values(&xo, x, q, stp, pol);
        REQ_MSG(st == want, "row %s exact values: status %d, want %d", row, st, want);
        REQ_MSG(all_bytes(xo.v.tern, kvq_vidkv_tern_code_bytes(&alloc, 0), SENT8) &&
                    all_bytes(xo.deq, n * 4u, SENT8) && xo.flags == SENT32 && xo.np == SENT32,
                "row %s exact values: output written", row);
        free(xo.v.tern); free(xo.v.beta); free(xo.v.prot); free(xo.v.p_codes);
        free(xo.v.p_scale); free(xo.v.p_zero); free(xo.deq); free(xo.code_real); free(xo.amb);
        free(xo.score);
    }
}

/* SPEC: [VIDKV-L-05] row 1: NULL pointers. */
START_TEST(bad_row01_null)
{
    kvq_vidkv_params p = small_params();
    float x[192];
    fkeys kb;
    fvals vb;
    uint32_t np;
    small_data(x, 192);
    fk_init(&kb, &p);
    fv_init(&vb, &p, 0);
    REQ_EQ(kvq_vidkv_quantize_keys(NULL, NULL, x, &p, &POL_DEF), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, NULL, &p, &POL_DEF), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, x, NULL, &POL_DEF), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, x, &p, NULL), KVQ_E_PARAM);
    {
        float *keep = kb.k.nrm_scale;
        kb.k.nrm_scale = NULL;
        REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, x, &p, &POL_DEF), KVQ_E_PARAM);
        kb.k.nrm_scale = keep;
    }
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, NULL, &p, NULL, &POL_DEF), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, NULL, NULL, x, &p, NULL, &POL_DEF), KVQ_E_PARAM);
    REQ_EQ(kvq_vidkv_dequantize_values(NULL, NULL, &vb.v, 0, &p, &POL_DEF), KVQ_E_PARAM);
    p.protect = 0.5f;   /* STP without its inputs */
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, x, &p, NULL, &POL_DEF), KVQ_E_PARAM);
    REQ(fk_untouched(&kb) && fv_untouched(&vb));
    fk_free(&kb);
    fv_free(&vb);
}
END_TEST

/* SPEC: [VIDKV-L-05] [POL-01] row 2: a policy field out of range. */
START_TEST(bad_row02_policy)
{
    kvq_vidkv_params p = small_params();
    float x[192];
    kvq_policy bad = POL_DEF;
    small_data(x, 192);
    bad.ties = 2;
    expect_both(&p, x, NULL, &bad, KVQ_E_PARAM, "2");
}
END_TEST

/* SPEC: [VIDKV-L-02] rows 3-7: parameters. */
START_TEST(bad_rows03_07_params)
{
    float x[192];
    static const float badf[] = { -0x1p-149f, 0x1.000002p+0f, NAN, -1.0f };
    small_data(x, 192);
    for (uint32_t G = 0; G <= 4104; G += 4) {
        kvq_vidkv_params p = small_params();
        if (G % 8 == 0 && G >= 8 && G <= 4096) continue;
        p.group = G;
        expect_both(&p, x, NULL, &POL_DEF, KVQ_E_PARAM, "3");
        if (G > 40) G += 1000;
    }
    for (size_t i = 0; i < 4; i++) {
        kvq_vidkv_params p = small_params();
        p.key_frac = badf[i];
        expect_both(&p, x, NULL, &POL_DEF, KVQ_E_PARAM, "4");
        p = small_params();
        p.protect = badf[i];
        expect_both(&p, x, NULL, &POL_DEF, KVQ_E_PARAM, "5");
        p = small_params();
        p.gamma = i == 1 ? 0x1.000002p+4f : badf[i];
        expect_both(&p, x, NULL, &POL_DEF, KVQ_E_PARAM, "6");
    }
    for (int sw = 0; sw < 7; sw++) {
        kvq_vidkv_params p = small_params();
        uint32_t *f[7] = { &p.split, &p.normal, &p.vdeq, &p.vpack, &p.kflush, &p.vflush, &p.meta };
        *f[sw] = sw == 1 ? 4u : 2u;
        expect_both(&p, x, NULL, &POL_DEF, KVQ_E_PARAM, "7");
    }
}
END_TEST

/* SPEC: [VIDKV-L-02] rows 8-9: extent. */
START_TEST(bad_rows08_09_shape)
{
    float x[192];
    kvq_vidkv_params p;
    small_data(x, 192);
    p = small_params(); p.dim = 0;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "8");
    p = small_params(); p.dim = 1025;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "8");
    p = small_params(); p.heads = 0;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "8");
    p = small_params(); p.heads = 1025;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "8");
    p = small_params(); p.tokens = 0;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "9");
    p = small_params(); p.tokens = 12;
    expect_both(&p, x, NULL, &POL_DEF, KVQ_E_SHAPE, "9");
}
END_TEST

/* SPEC: [VIDKV-STP-01] rows 10-11: STP ranges. */
START_TEST(bad_rows10_11_stp)
{
    float x[192], xs[20 * 3];
    kvq_vidkv_params p = small_params();
    kvq_vidkv_stp s0, s;
    fvals vb;
    uint32_t np = SENT32, fl = SENT32;
    small_data(x, 192);
    small_data(xs, 60);
    p.protect = 0.2f;
    s0.xs = xs; s0.rows = 20; s0.ds = 3;
    s0.vis_first = 2; s0.vis_count = 10; s0.txt_first = 17; s0.txt_count = 3;
    fv_init(&vb, &p, 2);
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, &fl, x, &p, &s0, &POL_DEF), KVQ_OK);
    REQ_EQ(np, 2);
    fv_free(&vb);
    for (int row = 0; row < 7; row++) {
        s = s0;
        switch (row) {
        case 0: s.vis_count = 0; break;           /* no visual token */
        case 1: s.vis_first = 10; break;          /* past T = 16 */
        case 2: s.txt_count = 0; break;           /* no text token */
        case 3: s.txt_first = 18; break;          /* past rows */
        case 4: s.ds = 0; break;
        case 5: s.rows = 15; break;               /* fewer rows than T */
        default: s.ds = 4097; break;
        }
        fv_init(&vb, &p, 16);
        np = fl = SENT32;
        REQ_MSG(kvq_vidkv_quantize_values(&vb.v, &np, &fl, x, &p, &s, &POL_DEF) == KVQ_E_SHAPE,
                "STP row variant %d", row);
        REQ(fv_untouched(&vb) && np == SENT32 && fl == SENT32);
        fv_free(&vb);
    }
}
END_TEST

/* SPEC: [VIDKV-L-03] [POL-NF-01] rows 12-14: non-finite, domain, binary16
 * overflow under nan. */
START_TEST(bad_rows12_14_values)
{
    float x[192], xs[20 * 3];
    kvq_vidkv_params p = small_params();
    kvq_policy pn = POL_DEF;
    kvq_vidkv_stp s;
    fvals vb;
    uint32_t np = SENT32;
    static const float nf[3] = { NAN, INFINITY, -INFINITY };
    pn.overflow = KVQ_OVERFLOW_NAN;
    for (uint64_t at = 0; at < 192; at += 37)
        for (int i = 0; i < 3; i++) {
            small_data(x, 192);
            x[at] = nf[i];
            expect_both(&p, x, NULL, &POL_DEF, KVQ_E_NONFINITE, "12");
            x[at] = i ? -0x1p100f : 0x1p100f;
            expect_both(&p, x, NULL, &POL_DEF, KVQ_E_RANGE, "13");
            x[at] = nextafterf(0x1p100f, 0.0f);   /* inside the domain */
            if (i == 0) {
                kvq_vidkv_params q = p;
                q.meta = KVQ_META_F32;
                fkeys kb;
                fk_init(&kb, &q);
                REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, x, &q, &POL_DEF), KVQ_OK);
                fk_free(&kb);
            }
            /* binary16 metadata overflow: a value >= 65520 (values: beta of
             * the scaled variant; raw ternary values store no metadata) */
            for (uint64_t e = 0; e < 192; e++) x[e] = (i ? 70000.0f : -70000.0f) + (float)(e % 7);
            {
                kvq_vidkv_params q = p;
                q.vdeq = KVQ_VIDKV_VDEQ_SCALED;
                expect_both(&q, x, NULL, &pn, KVQ_E_RANGE, "14");
            }
        }
    /* score inputs: non-finite, and >= 2^32 */
    small_data(x, 192);
    small_data(xs, 60);
    p.protect = 0.2f;
    s.xs = xs; s.rows = 20; s.ds = 3;
    s.vis_first = 2; s.vis_count = 10; s.txt_first = 17; s.txt_count = 3;
    xs[59] = NAN;
    fv_init(&vb, &p, 16);
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, x, &p, &s, &POL_DEF), KVQ_E_NONFINITE);
    xs[59] = 0x1p32f;
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, x, &p, &s, &POL_DEF), KVQ_E_RANGE);
    REQ(fv_untouched(&vb) && np == SENT32);
    fv_free(&vb);
}
END_TEST

/* SPEC: [VIDKV-D-01] [VIDKV-D-02] [VIDKV-D-03] rows 15-19: dequantizer inputs. */
START_TEST(bad_rows15_19_dequant)
{
    float x[192];
    kvq_vidkv_params p = small_params();
    fkeys kb;
    fvals vb;
    uint32_t np, fl;
    small_data(x, 192);
    p.normal = KVQ_VIDKV_NORMAL_MINMAX;
    fk_init(&kb, &p);
    fv_init(&vb, &p, 0);
    REQ_EQ(kvq_vidkv_quantize_keys(&kb.k, NULL, x, &p, &POL_DEF), KVQ_OK);
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, x, &p, NULL, &POL_DEF), KVQ_OK);
    memset(kb.y, SENT8, kb.n * 4u);
    memset(vb.y, SENT8, vb.n * 4u);
#define KDQ(want, row)                                                                       \
    do {                                                                                     \
        fl = SENT32;                                                                         \
        REQ_MSG(kvq_vidkv_dequantize_keys(kb.y, &fl, &kb.k, &p, &POL_DEF) == (want),         \
                "row %s", row);                                                              \
        REQ(all_bytes(kb.y, kb.n * 4u, SENT8) && fl == SENT32);                              \
    } while (0)
    {
        uint8_t m0 = kb.k.mask[0];
        kb.k.mask[0] = (uint8_t)(m0 ^ 1u);               /* one bit too many or few */
        KDQ(KVQ_E_PARAM, "15");
        kb.k.mask[0] = (uint8_t)(m0 | 0x80u);            /* a bit beyond d = 6 */
        KDQ(KVQ_E_PARAM, "15");
        kb.k.mask[0] = m0;
    }
    {
        float s0 = kb.k.abn_scale[1], z0 = kb.k.nrm_zero[2];
        kb.k.abn_scale[1] = NAN;
        KDQ(KVQ_E_NONFINITE, "17");
        kb.k.abn_scale[1] = 0x1p102f;
        KDQ(KVQ_E_RANGE, "18");
        kb.k.abn_scale[1] = 0x1p-15f;                    /* below binary16's normals */
        KDQ(KVQ_E_PARAM, "19");
        kb.k.abn_scale[1] = 0x1.001p+0f;                 /* not a binary16 number */
        KDQ(KVQ_E_PARAM, "19");
        kb.k.abn_scale[1] = s0;
        kb.k.nrm_zero[2] = -INFINITY;
        KDQ(KVQ_E_NONFINITE, "17");
        kb.k.nrm_zero[2] = z0;
        REQ_EQ(kvq_vidkv_dequantize_keys(kb.y, &fl, &kb.k, &p, &POL_DEF), KVQ_OK);
    }
#undef KDQ
    vb.v.tern[0] = 243;                                   /* BASE3 byte > 242 */
    REQ_EQ(kvq_vidkv_dequantize_values(vb.y, NULL, &vb.v, 0, &p, &POL_DEF), KVQ_E_PARAM);
    REQ(all_bytes(vb.y, vb.n * 4u, SENT8));
    fv_free(&vb);
    p.vpack = KVQ_VIDKV_PACK_BITS2;
    fv_init(&vb, &p, 0);
    REQ_EQ(kvq_vidkv_quantize_values(&vb.v, &np, NULL, x, &p, NULL, &POL_DEF), KVQ_OK);
    memset(vb.y, SENT8, vb.n * 4u);
    vb.v.tern[1] = (uint8_t)(vb.v.tern[1] | 0x0Cu);       /* slot 5's field = 3 */
    REQ_EQ(kvq_vidkv_dequantize_values(vb.y, NULL, &vb.v, 0, &p, &POL_DEF), KVQ_E_PARAM);
    REQ(all_bytes(vb.y, vb.n * 4u, SENT8));
    /* a protection mask with the wrong count */
    p.protect = 0.25f;
    REQ_EQ(kvq_vidkv_dequantize_values(vb.y, NULL, &vb.v, 0, &p, &POL_DEF), KVQ_E_PARAM);
    fv_free(&vb);
    fk_free(&kb);
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
    tc = tcase_create("ties");
    tcase_add_test(tc, ties_ternary_threshold);
    tcase_add_test(tc, ties_split);
    tcase_add_test(tc, ties_split_rounded_range);
    tcase_add_test(tc, ties_stp_selection);
    tcase_add_test(tc, ties_protect_count);
    tcase_add_test(tc, ties_auto_normal);
    tcase_add_test(tc, ties_ternary_division);
    suite_add_tcase(s, tc);
    tc = tcase_create("special_values");
    tcase_add_test(tc, special_signmean);
    tcase_add_test(tc, special_fft_dc);
    tcase_add_test(tc, special_subnormal_read);
    tcase_add_test(tc, special_fft_sign_and_ambiguity);
    suite_add_tcase(s, tc);
    tc = tcase_create("degenerate");
    tcase_add_test(tc, degenerate_window);
    suite_add_tcase(s, tc);
    tc = tcase_create("random_vs_exact");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, random_vs_exact_keys);
    tcase_add_test(tc, random_vs_exact_values);
    tcase_add_test(tc, random_vs_exact_twiddles);
    tcase_add_test(tc, random_vs_exact_alternate);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_row01_null);
    tcase_add_test(tc, bad_row02_policy);
    tcase_add_test(tc, bad_rows03_07_params);
    tcase_add_test(tc, bad_rows08_09_shape);
    tcase_add_test(tc, bad_rows10_11_stp);
    tcase_add_test(tc, bad_rows12_14_values);
    tcase_add_test(tc, bad_rows15_19_dequant);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_vidkv", vidkv_suite(), &g_seed, &g_cases);
}
