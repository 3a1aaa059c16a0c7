/*
 * check_attn.c -- Check suite of the SageAttention2 pipeline and its bound
 * (spec/sage.md "The attention pipeline": the parameters and visibility
 * [SAGE-ATT-01], the pinned stages [SAGE-ATT-02], the score [SAGE-ATT-03], the
 * online softmax and P~ [SAGE-ATT-04], the P~V instructions [SAGE-ATT-05], the
 * buffer [SAGE-ACC-05], the output [SAGE-ATT-06], the accumulator class
 * [SAGE-ACC-06], the bound [SAGE-ATT-07], its evaluation and judgement
 * [SAGE-ATT-08], the fast pipeline [SAGE-ATT-09]).
 *
 * The fast pipeline (ref/fast/sage_attn.c: the kernel's steps with the
 * bit-exact wgmma model and exp2f) is judged by the exact path's bound
 * (ref/exact/sage_attn.c), which starts from exact attention on the
 * unquantized inputs: two independent computations [TEST-CMP-01].
 *  - every output of every case lies within its bound;
 *  - four wrong pipelines (no online-softmax rescale, no dS, P~ without its
 *    static scale, the output without V's scale) each leave it somewhere;
 *  - bad arguments and NaN inputs are errors with nothing written.
 * Cases come from KVQ_SEED (a fixed default); shapes cover partial blocks,
 * causal rows with no key, q_len = 1, and the three buffer policies.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvq_exact_sage.h"
#include "kvq_rng.h"
#include "kvq_sage.h"
#include "../../ref/fast/sage_attn_internal.h"
#include "check_main.h"

#define SEED_DEFAULT  0x6b76712d6174746eull /* "kvq-attn" */
#define CASES_DEFAULT 1u

static uint64_t g_seed = SEED_DEFAULT, g_cases = CASES_DEFAULT;

/* Input distributions. */
#define D_GAUSS 0u   /* sums of uniforms, unit scale */
#define D_SINK  1u   /* a few channels 30x larger, key 0 an attention sink */
#define D_SMALL 2u   /* values near 2^-20 */
#define D_TREND 3u   /* scores that grow along the keys: the running max moves every block */
#define D_QMEAN 4u   /* Q with a large common offset: dS carries most of the score */

static float gauss(kvq_rng *r)
{
    return kvq_rng_sym(r) + kvq_rng_sym(r) + kvq_rng_sym(r);
}

static void fill(float *q, float *k, float *v, const kvq_sage_attn *a, uint32_t dist, kvq_rng *r)
{
    const uint32_t d = a->dim;
    for (uint64_t e = 0; e < (uint64_t)a->nq * d; e++) q[e] = gauss(r);
    for (uint64_t e = 0; e < (uint64_t)a->nk * d; e++) {
        k[e] = gauss(r);
        v[e] = gauss(r);
    }
    if (dist == D_SINK) {
        for (uint32_t c = 0; c < d; c += 37u) {
            for (uint32_t n = 0; n < a->nq; n++) q[(uint64_t)n * d + c] *= 30.0f;
            for (uint32_t n = 0; n < a->nk; n++) k[(uint64_t)n * d + c] *= 30.0f;
        }
        for (uint32_t c = 0; c < d; c++) k[c] = 4.0f * fabsf(k[c]) * (q[c] >= 0 ? 1.0f : -1.0f);
    } else if (dist == D_SMALL) {
        for (uint64_t e = 0; e < (uint64_t)a->nq * d; e++) q[e] *= 0x1p-20f;
        for (uint64_t e = 0; e < (uint64_t)a->nk * d; e++) v[e] *= 0x1p-20f;
    } else if (dist == D_TREND) {
        for (uint32_t n = 0; n < a->nq; n++) q[(uint64_t)n * d] = 8.0f;
        for (uint32_t n = 0; n < a->nk; n++) k[(uint64_t)n * d] = 0.05f * (float)n;
    } else if (dist == D_QMEAN) {
        for (uint64_t e = 0; e < (uint64_t)a->nq * d; e++) q[e] += 3.0f;
        for (uint32_t n = 0; n < a->nk; n++)
            for (uint32_t c = 0; c < d; c++) k[(uint64_t)n * d + c] += (c % 2u ? 1.0f : -1.0f) * (float)(n % 7u);
    }
}

typedef struct acase {
    uint32_t nq, nk, causal, buffer, dist;
} acase;

static const acase g_cases_tab[] = {
    {64, 64, 0, 128, D_GAUSS},   {136, 136, 1, 128, D_GAUSS}, {1, 300, 0, 128, D_SINK},
    {130, 70, 1, 64, D_GAUSS},   {70, 130, 1, 0, D_SINK},     {40, 257, 0, 64, D_SMALL},
    {32, 384, 0, 0, D_TREND},    {48, 320, 0, 128, D_TREND},  {130, 100, 0, 128, D_QMEAN},
};
#define NCASES (sizeof g_cases_tab / sizeof g_cases_tab[0])

/* Runs variant `var` on case c and returns the number of outputs outside the
 * bound; *worst: the largest distance / bound. */
static uint64_t judge_case(const acase *c, uint32_t var, double *worst, double *rel)
{
    const kvq_sage_attn a = {c->nq, c->nk, 128u, 0x1.6a09e6p-4f /* RN32(1/sqrt(128)) */, c->causal, c->buffer, 8u};
    kvq_rng r;
    r.s = g_seed ^ ((uint64_t)(c - g_cases_tab) << 32);
    float *q = xmalloc((size_t)a.nq * 128u * sizeof(float)), *k = xmalloc((size_t)a.nk * 128u * sizeof(float));
    float *v = xmalloc((size_t)a.nk * 128u * sizeof(float)), *o = xmalloc((size_t)a.nq * 128u * sizeof(float));
    uint32_t *rows = xmalloc((size_t)a.nq * sizeof(uint32_t));
    kvq_sage_attn_bound *b = xmalloc((size_t)a.nq * 128u * sizeof *b);
    fill(q, k, v, &a, c->dist, &r);
    REQ_EQ(kvq_sage_attention_variant(o, q, k, v, &a, &kvq_policy_default, var), KVQ_OK);
    for (uint32_t i = 0; i < a.nq; i++) rows[i] = i;
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    REQ_EQ(kvq_exact_sage_attn_bound(b, q, k, v, &a, rows, a.nq, &cls), KVQ_OK);
    const uint64_t bad = kvq_exact_sage_attn_judge(worst, o, b, (uint64_t)a.nq * 128u);
    double sb = 0.0, sr = 0.0;                 /* diagnostic: sum of bounds over sum of |O| */
    for (uint64_t e = 0; e < (uint64_t)a.nq * 128u; e++) {
        sb += b[e].bound;
        sr += fabs(0.5 * (b[e].ref_lo + b[e].ref_hi));
    }
    *rel = sr > 0.0 ? sb / sr : 0.0;
    free(q); free(k); free(v); free(o); free(rows); free(b);
    return bad;
}

START_TEST(pipeline_within_bound)
{
    const acase *c = &g_cases_tab[_i];
    double worst, rel;
    const uint64_t bad = judge_case(c, KVQ_SAGE_ATTN_VAR_NONE, &worst, &rel);
    printf("check_attn: nq %u nk %u causal %u buffer %u dist %u: %" PRIu64 " outside, worst %.3g of the bound, "
           "bound/|O| %.3g\n", c->nq, c->nk, c->causal, c->buffer, c->dist, bad, worst, rel);
    REQ_MSG(bad == 0u, "seed 0x%016" PRIx64 " case %d: %" PRIu64 " outputs outside the bound (worst %.3g)",
            g_seed, _i, bad, worst);
}
END_TEST

/* Each wrong pipeline on the case that exercises its step. */
static const struct { uint32_t var, ci; const char *what; } g_wrong[] = {
    {KVQ_SAGE_ATTN_VAR_NO_RESCALE, 6, "no rescale"},
    {KVQ_SAGE_ATTN_VAR_NO_DS, 8, "no dS"},
    {KVQ_SAGE_ATTN_VAR_P_UNSCALED, 0, "P~ unscaled"},
    {KVQ_SAGE_ATTN_VAR_V_UNSCALED, 1, "V unscaled"},
};

START_TEST(wrong_pipelines_fail)
{
    double worst, rel;
    const uint64_t bad = judge_case(&g_cases_tab[g_wrong[_i].ci], g_wrong[_i].var, &worst, &rel);
    printf("check_attn: wrong pipeline '%s': %" PRIu64 " outside, worst %.3g of the bound\n", g_wrong[_i].what,
           bad, worst);
    REQ_MSG(bad > 0u, "seed 0x%016" PRIx64 ": the wrong pipeline '%s' stayed within the bound", g_seed,
            g_wrong[_i].what);
}
END_TEST

START_TEST(bad_input)
{
    kvq_sage_attn a = {8u, 8u, 128u, 0.125f, 0u, 128u, 8u};
    float q[8 * 128], k[8 * 128], v[8 * 128], o[8 * 128];
    for (int e = 0; e < 8 * 128; e++) q[e] = k[e] = v[e] = (float)(e % 5) - 2.0f;
    memset(o, 0xA5, sizeof o);
    REQ_EQ(kvq_sage_attention(NULL, q, k, v, &a, &kvq_policy_default), KVQ_E_PARAM);
    kvq_sage_attn bad = a;
    bad.dim = 64u;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &bad, &kvq_policy_default), KVQ_E_PARAM);
    bad = a;
    bad.buffer = 256u;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &bad, &kvq_policy_default), KVQ_E_PARAM);
    bad = a;
    bad.nq = 0u;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &bad, &kvq_policy_default), KVQ_E_PARAM);
    k[77] = NAN;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, &kvq_policy_default), KVQ_E_NONFINITE);
    REQ(all_bytes(o, sizeof o, 0xA5));
    kvq_sage_attn_bound bd[128];
    const uint32_t row = 0, far = 8;
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    memset(bd, 0xA5, sizeof bd);
    REQ_EQ(kvq_exact_sage_attn_bound(bd, q, k, v, &a, &row, 1u, &cls), KVQ_E_NONFINITE);
    k[77] = 1.0f;
    REQ_EQ(kvq_exact_sage_attn_bound(bd, q, k, v, &a, &far, 1u, &cls), KVQ_E_PARAM);
    kvq_sage_attn_class wide = cls;
    wide.frac = 2u;
    REQ_EQ(kvq_exact_sage_attn_bound(bd, q, k, v, &a, &row, 1u, &wide), KVQ_E_PARAM);
    REQ(all_bytes(bd, sizeof bd, 0xA5));
    /* the judge: a NaN output and an output outside [ref - B, ref + B] count */
    kvq_sage_attn_bound one[3] = {{1.0, 1.0, 0.5}, {1.0, 1.0, 0.5}, {1.0, 1.0, 0.5}};
    const float outs[3] = {1.5f, 1.5000001f, NAN};
    double worst;
    REQ_EQ(kvq_exact_sage_attn_judge(&worst, outs, one, 1u), 0u);
    REQ_EQ(kvq_exact_sage_attn_judge(&worst, outs + 1, one, 1u), 1u);
    REQ_EQ(kvq_exact_sage_attn_judge(&worst, outs + 2, one, 1u), 1u);
}
END_TEST

static Suite *attn_suite(void)
{
    Suite *s = suite_create("attn");
    TCase *tc = tcase_create("bound");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, pipeline_within_bound, 0, (int)NCASES);
    tcase_add_loop_test(tc, wrong_pipelines_fail, 0, (int)(sizeof g_wrong / sizeof g_wrong[0]));
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_attn", attn_suite(), &g_seed, &g_cases);
}
