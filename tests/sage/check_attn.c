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
 *  - bad arguments and NaN inputs are errors with nothing written;
 *  - several heads [SAGE-MHA-01..04]: the input-format test of the fast path
 *    (binary32 bits) against the exact path's (MPFR), every head of a GQA
 *    case within its bound, the heads read as interleaved and the inputs
 *    read as binary16 leaving it, the statuses of both paths.
 * Cases come from KVQ_SEED (a fixed default); shapes cover partial blocks,
 * causal rows with no key, q_len = 1, and the three buffer policies.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvq_bits.h"
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

/* The errors of [SAGE-ATT-01] in the spec's order, as kvq_sage_attention's
 * contract states them (proofs/TRUSTED.md [TR-SAGE-ATT]): a NULL pointer, an
 * invalid policy and each parameter outside its values -> KVQ_E_PARAM; then
 * the stages, K whole before Q and Q before V (the smoothing's range
 * [SAGE-SM-06]: prepare's contract); nothing written on any of them.
 * SPEC: [SAGE-ATT-01] [SAGE-SM-06] [TR-SAGE-ATT] */
START_TEST(error_order)
{
    const kvq_sage_attn a = {8u, 8u, 128u, 0.125f, 1u, 64u, 4u};
    static float q[8 * 128], k[8 * 128], v[8 * 128], o[8 * 128];
    const kvq_policy *pol = &kvq_policy_default;
    for (int e = 0; e < 8 * 128; e++) q[e] = k[e] = v[e] = (float)(e % 7) - 3.0f;
    memset(o, 0xA5, sizeof o);
    /* parameters: the pointers, the policy, the record */
    REQ_EQ(kvq_sage_attention(NULL, q, k, v, &a, pol), KVQ_E_PARAM);
    REQ_EQ(kvq_sage_attention(o, NULL, k, v, &a, pol), KVQ_E_PARAM);
    REQ_EQ(kvq_sage_attention(o, q, NULL, v, &a, pol), KVQ_E_PARAM);
    REQ_EQ(kvq_sage_attention(o, q, k, NULL, &a, pol), KVQ_E_PARAM);
    REQ_EQ(kvq_sage_attention(o, q, k, v, NULL, pol), KVQ_E_PARAM);
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, NULL), KVQ_E_PARAM);
    for (int f = 0; f < 3; f++) {
        kvq_policy bp = kvq_policy_default;
        if (f == 0) bp.ties = 2u;
        if (f == 1) bp.overflow = 2u;
        if (f == 2) bp.subnormal = 2u;
        REQ_EQ(kvq_sage_attention(o, q, k, v, &a, &bp), KVQ_E_PARAM);
    }
    static const float bad_tau[] = { 0x1p-127f, 0x1.000002p16f, 0.0f, -0.125f, INFINITY, NAN };
    for (int c = 0; c < 13; c++) {
        kvq_sage_attn b = a;
        switch (c) {
        case 0: b.nq = 0u; break;
        case 1: b.nq = (1u << 24) + 1u; break;
        case 2: b.nk = 0u; break;
        case 3: b.nk = (1u << 24) + 1u; break;
        case 4: b.dim = 64u; break;
        case 5: b.causal = 2u; break;
        case 6: b.buffer = 32u; break;
        case 7: b.qk_bits = 6u; break;
        default: b.tau = bad_tau[c - 8]; break;
        }
        REQ_MSG(kvq_sage_attention(o, q, k, v, &b, pol) == KVQ_E_PARAM, "parameter case %d accepted", c);
    }
    /* the stages: K before Q, Q before V */
    k[5] = NAN, q[3] = 0x1p49f;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_E_NONFINITE);
    k[5] = -0x1p49f, q[3] = NAN;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_E_PARAM);
    k[5] = 0x1p48f, v[9] = INFINITY;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_E_NONFINITE);
    q[3] = 0x1p49f;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_E_PARAM);
    q[3] = 0.0f;
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_E_NONFINITE);
    REQ(all_bytes(o, sizeof o, 0xA5));
    v[9] = 1.0f;                                       /* every defect removed: the output is written */
    REQ_EQ(kvq_sage_attention(o, q, k, v, &a, pol), KVQ_OK);
    REQ(!all_bytes(o, sizeof o, 0xA5));
}
END_TEST

/* The input formats [SAGE-MHA-02]: the fast path's test (binary32 bits and
 * frexp, ref/common/fbits.c) and the exact path's (MPFR's exponent and an
 * integer test) agree on the edges of binary16 and bfloat16 and on random
 * encodings; the generator's roundings give values of the format.
 * SPEC: [SAGE-MHA-02] */
START_TEST(input_formats)
{
    static const struct { float x; int f16, bf16; } edge[] = {
        {65504.0f, 1, 0}, {65520.0f, 0, 0}, {65536.0f, 0, 1}, {0x1p-24f, 1, 1}, {0x1p-25f, 0, 1},
        {0x3p-25f, 0, 1}, {1.0f + 0x1p-10f, 1, 0}, {1.0f + 0x1p-11f, 0, 0}, {1.0f + 0x1p-7f, 1, 1},
        {1.0f + 0x1p-8f, 1, 0}, {0x1.004p-14f, 1, 0}, {0x1.002p-15f, 0, 0}, {0x1.ff8p-15f, 1, 0}, {0x1.ffcp-15f, 0, 0},
        {0x1.fep127f, 0, 1}, {0x1.fffffep127f, 0, 0}, {0x1p-133f, 0, 1}, {0x1p-134f, 0, 0}, {0x1p-149f, 0, 0},
        {-0.0f, 1, 1}, {-3.0f, 1, 1}, {0x1.8p-20f, 1, 1},
    };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        const float x = edge[i].x;
        REQ_MSG(kvq_sage_in_exact(x, KVQ_SAGE_IN_BINARY16) == edge[i].f16 &&
                    kvq_exact_sage_in_exact(x, KVQ_SAGE_IN_BINARY16) == edge[i].f16,
                "%a in binary16: fast %d, exact %d, want %d", (double)x, kvq_sage_in_exact(x, KVQ_SAGE_IN_BINARY16),
                kvq_exact_sage_in_exact(x, KVQ_SAGE_IN_BINARY16), edge[i].f16);
        REQ_MSG(kvq_sage_in_exact(x, KVQ_SAGE_IN_BFLOAT16) == edge[i].bf16 &&
                    kvq_exact_sage_in_exact(x, KVQ_SAGE_IN_BFLOAT16) == edge[i].bf16,
                "%a in bfloat16: fast %d, exact %d, want %d", (double)x, kvq_sage_in_exact(x, KVQ_SAGE_IN_BFLOAT16),
                kvq_exact_sage_in_exact(x, KVQ_SAGE_IN_BFLOAT16), edge[i].bf16);
    }
    REQ(kvq_sage_in_exact(NAN, KVQ_SAGE_IN_BINARY16) && kvq_exact_sage_in_exact(INFINITY, KVQ_SAGE_IN_BFLOAT16));
    REQ(!kvq_sage_in_exact(1.0f, KVQ_SAGE_IN_FORMATS) && !kvq_exact_sage_in_exact(1.0f, KVQ_SAGE_IN_FORMATS));
    kvq_rng r = {g_seed ^ 0x666d74ull};
    uint64_t n16 = 0, nbf = 0;
    for (uint32_t t = 0; t < 200000u; t++) {
        /* encodings of every exponent, with few significant bits half the time */
        uint32_t b = (uint32_t)kvq_rng_next(&r);
        if (t % 2u) b &= ~((1u << (uint32_t)kvq_rng_below(&r, 24)) - 1u);
        const float x = kvq_f32_from_bits(b);
        for (uint32_t f = 0; f < KVQ_SAGE_IN_FORMATS; f++)
            REQ_MSG(kvq_sage_in_exact(x, f) == kvq_exact_sage_in_exact(x, f), "0x%08x in format %u: fast %d, exact %d",
                    b, f, kvq_sage_in_exact(x, f), kvq_exact_sage_in_exact(x, f));
        n16 += (uint64_t)kvq_sage_in_exact(x, KVQ_SAGE_IN_BINARY16), nbf += (uint64_t)kvq_sage_in_exact(x, KVQ_SAGE_IN_BFLOAT16);
        int ov;
        if (isfinite(x)) {
            const float h = kvq_round_f16(x, &ov), g = kvq_round_bf16(x);
            REQ_MSG(kvq_exact_sage_in_exact(h, KVQ_SAGE_IN_BINARY16), "RN16(%a) = %a", (double)x, (double)h);
            REQ_MSG(kvq_exact_sage_in_exact(g, KVQ_SAGE_IN_BFLOAT16), "RNbf16(%a) = %a", (double)x, (double)g);
        }
    }
    printf("check_attn: formats: %" PRIu64 " binary16 and %" PRIu64 " bfloat16 values of 200000 encodings\n", n16, nbf);
    REQ(n16 > 1000u && nbf > 1000u); /* both answers occur */
}
END_TEST

/* A GQA case (4 query heads on 2 KV heads, inputs bfloat16, V channels up to
 * 1e5): every head within its bound; the heads read as interleaved, or the
 * inputs as binary16, leave it.  SPEC: [SAGE-MHA-01] [SAGE-MHA-02] [SAGE-MHA-03] */
static uint64_t judge_mha(uint32_t mha_variant, int huge)
{
    const kvq_sage_attn a = {24u, 70u, 128u, 0x1.6a09e6p-4f, 0u, 128u, 8u};
    const uint32_t hq = 4u, hkv = 2u;
    const uint64_t qe = 24u * 128u, ke = 70u * 128u;
    kvq_rng r = {g_seed ^ 0x6d6861ull};
    float *q = xmalloc(hq * qe * sizeof(float)), *k = xmalloc(hkv * ke * sizeof(float));
    float *v = xmalloc(hkv * ke * sizeof(float)), *o = xmalloc(hq * qe * sizeof(float));
    kvq_sage_attn_bound *b = xmalloc(hq * qe * sizeof *b);
    for (uint64_t e = 0; e < hq * qe; e++) q[e] = kvq_round_bf16(gauss(&r));
    for (uint64_t e = 0; e < hkv * ke; e++) {
        k[e] = kvq_round_bf16(gauss(&r) + (float)(e / ke)); /* KV heads apart */
        v[e] = kvq_round_bf16(gauss(&r) * (huge && e % 128u == 5u ? 4e4f : 1.0f) + 2.0f * (float)(e / ke));
    }
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    REQ_EQ(kvq_sage_attention_mha_variant(o, q, k, v, &a, hq, hkv, KVQ_SAGE_IN_BFLOAT16, &kvq_policy_default,
                                          KVQ_SAGE_ATTN_VAR_NONE, mha_variant), KVQ_OK);
    REQ_EQ(kvq_exact_sage_mha_bound(b, q, k, v, &a, hq, hkv, KVQ_SAGE_IN_BFLOAT16, &cls), KVQ_OK);
    const uint64_t bad = kvq_exact_sage_attn_judge(NULL, o, b, hq * qe);
    free(q); free(k); free(v); free(o); free(b);
    return bad;
}

START_TEST(mha_heads)
{
    REQ_EQ(judge_mha(0u, 0), 0u);
    REQ_EQ(judge_mha(0u, 1), 0u);
    const uint64_t mod = judge_mha(KVQ_SAGE_MHA_VAR_HEAD_MOD, 0), f16 = judge_mha(KVQ_SAGE_MHA_VAR_AS_BINARY16, 1);
    printf("check_attn: GQA heads read as interleaved: %" PRIu64 " outside; inputs read as binary16: %" PRIu64
           " outside\n", mod, f16);
    REQ_MSG(mod > 0u, "heads read h %% hkv stayed within the bound");
    REQ_MSG(f16 > 0u, "bfloat16 inputs read as binary16 stayed within the bound");
}
END_TEST

/* The statuses of several heads, the same from both paths, nothing written
 * on error.  SPEC: [SAGE-MHA-01] [SAGE-MHA-02] [SAGE-MHA-04] */
START_TEST(mha_bad_input)
{
    const kvq_sage_attn a = {8u, 8u, 128u, 0.125f, 0u, 128u, 8u};
    static float q[4 * 8 * 128], k[2 * 8 * 128], v[2 * 8 * 128], o[4 * 8 * 128];
    static kvq_sage_attn_bound bd[4 * 8 * 128];
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    for (int e = 0; e < 4 * 8 * 128; e++) q[e] = (float)(e % 5) - 2.0f;
    for (int e = 0; e < 2 * 8 * 128; e++) k[e] = v[e] = (float)(e % 7) - 3.0f;
    memset(o, 0xA5, sizeof o);
    memset(bd, 0xA5, sizeof bd);
#define BOTH(hq, hkv, fmt, want)                                                                         \
    do {                                                                                                 \
        REQ_EQ(kvq_sage_attention_mha(o, q, k, v, &a, hq, hkv, fmt, &kvq_policy_default), want);          \
        REQ_EQ(kvq_exact_sage_mha_bound(bd, q, k, v, &a, hq, hkv, fmt, &cls), want);                      \
    } while (0)
    BOTH(3u, 2u, KVQ_SAGE_IN_BINARY16, KVQ_E_PARAM);  /* hkv does not divide hq */
    BOTH(2u, 4u, KVQ_SAGE_IN_BINARY16, KVQ_E_PARAM);  /* more KV heads than query heads */
    BOTH(0u, 1u, KVQ_SAGE_IN_BINARY16, KVQ_E_PARAM);
    BOTH(4u, 2u, KVQ_SAGE_IN_FORMATS, KVQ_E_PARAM);
    k[8 * 128 + 5] = 1.0f + 0x1p-11f;                  /* KV head 1: binary32, not binary16 */
    BOTH(4u, 2u, KVQ_SAGE_IN_BINARY16, KVQ_E_PARAM);
    BOTH(4u, 2u, KVQ_SAGE_IN_BINARY32, KVQ_OK);
    memset(o, 0xA5, sizeof o);
    memset(bd, 0xA5, sizeof bd);
    k[8 * 128 + 5] = 1.0f;
    v[8 * 128 + 9] = NAN;                              /* KV head 1, read by query heads 2 and 3 */
    BOTH(4u, 2u, KVQ_SAGE_IN_BFLOAT16, KVQ_E_NONFINITE);
    q[3 * 8 * 128] = 0x1p49f;                          /* head 3 after head 2's NaN: the first wins */
    BOTH(4u, 2u, KVQ_SAGE_IN_BFLOAT16, KVQ_E_NONFINITE);
    v[8 * 128 + 9] = 1.0f;
    BOTH(4u, 2u, KVQ_SAGE_IN_BFLOAT16, KVQ_E_PARAM);   /* now the 2^49 of head 3 [SAGE-ATT-01] */
#undef BOTH
    REQ(all_bytes(o, sizeof o, 0xA5));
    REQ(all_bytes(bd, sizeof bd, 0xA5));
    REQ_EQ(kvq_sage_attention_mha(NULL, q, k, v, &a, 4u, 2u, 0u, &kvq_policy_default), KVQ_E_PARAM);
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
    tcase_add_test(tc, error_order);
    tcase_add_test(tc, input_formats);
    tcase_add_test(tc, mha_heads);
    tcase_add_test(tc, mha_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return kvq_check_main("check_attn", attn_suite(), &g_seed, &g_cases);
}
