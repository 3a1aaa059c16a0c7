/*
 * families/cert_gen.c -- deterministic CERT conformance vectors [VEC-CERT-07].
 *
 * Ordinals: keys cases, then values cases, then decode steps, then error
 * cases; case k draws from its own generator seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  Every
 * input is a binary16 number (held as binary32) except where an error case
 * plants a defect.
 *
 * Each section holds its original cases first, then the ones added after
 * them: key cases with -0 zero-range channels; decode steps built to take
 * given paths of the ladder (rung 0 with promoted blocks, rungs 1 and 2, the
 * dense rungs 3 and 4) under softmax scales 2^-6 .. 2^2 times the default;
 * NaN and infinities in keys and values at the other level.  Since the added
 * key and step cases come before later sections, the ordinals (and so the
 * ids) of the original value, step and error cases moved; their inputs did
 * not: such a case draws from the generator of its original ordinal (kseed).
 *
 * Expected outputs: kvq_exact_cert_quantize_keys,
 * kvq_exact_cert_quantize_values and kvq_exact_cert_annotate (MPFR); a step
 * has no expected output but its status: its verdict is the exact judge's
 * (cert.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_rng.h"

/* RN16 by the exact path; a value beyond the binary16 range is clamped to the
 * largest finite one (the generators never ask for more). */
static float f16(float x)
{
    int ov;
    float y = kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov);
    return ov ? copysignf(0x1.ffcp+15f, x) : y;
}

static int is_f16(float x)
{
    int ov;
    return isfinite(x) && kvq_f32_same(kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov), x) && !ov;
}

enum {
    CD_UNIFORM, CD_NORMALISH, CD_TIES, CD_CONSTANT, CD_TINY, CD_HUGE, CD_OUTLIER, CD_MIXED,
    CD_COUNT
};
static const char *const CD_NAMES[CD_COUNT] = {
    "uniform", "normalish", "ties", "constant", "tiny", "huge", "outlier", "mixed",
};

/* Fill m binary16 values (stride apart) of one key block-channel (m = 16) or
 * one value group (m = 16), distribution dist.  span: the code span the ties
 * family targets (255 for keys [CERT-K8-01], 15 for values [CERT-V4-01]). */
static void fill16(float *x, size_t stride, uint32_t m, int dist, uint32_t span, kvq_rng *r)
{
    if (dist == CD_MIXED) dist = (int)kvq_rng_below(r, CD_MIXED);
    switch (dist) {
    case CD_UNIFORM: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 13) - 6), off = a * kvq_rng_sym(r);
        for (uint32_t i = 0; i < m; i++) x[i * stride] = f16(off + a * kvq_rng_sym(r));
        break;
    }
    case CD_NORMALISH: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 7) - 4);
        for (uint32_t i = 0; i < m; i++)
            x[i * stride] = f16(a * (kvq_rng_sym(r) + kvq_rng_sym(r) + kvq_rng_sym(r)));
        break;
    }
    case CD_TIES: {
        /* min l = j s, max u = l + span s with s a power of two: the scale is
         * s exactly (keys: RN32(255 s / 255) = s; values: RN16(15 s / 15) = s)
         * and every odd multiple of s/2 above l is an exact .5 tie of the
         * code quotient.  |values| <= (64 + span) s on a grid of s/2: binary16. */
        float s = ldexpf(1.0f, (int)kvq_rng_below(r, 7) - 9);
        float l = s * (float)((int)kvq_rng_below(r, 129) - 64);
        for (uint32_t i = 0; i < m; i++)
            x[i * stride] = l + (s / 2.0f) * (float)kvq_rng_below(r, 2 * span + 1);
        x[0] = l;
        x[(m - 1) * stride] = l + s * (float)span;
        break;
    }
    case CD_CONSTANT: { /* zero range [CERT-K8-01] [POL-ZR-01] */
        float c = f16(ldexpf(kvq_rng_sym(r), (int)kvq_rng_below(r, 30) - 15));
        for (uint32_t i = 0; i < m; i++) x[i * stride] = c;
        break;
    }
    case CD_TINY: {
        /* binary16 subnormals (multiples of 2^-24): tiny ranges, value scales
         * that underflow binary16 (RN16(r/15) < 2^-14 zeroes the group) */
        int base = (int)kvq_rng_below(r, 2047) - 1023, w = 1 + (int)kvq_rng_below(r, 400);
        for (uint32_t i = 0; i < m; i++) {
            int v = base + (int)kvq_rng_below(r, (uint32_t)w);
            if (v > 1023) v = 1023;
            x[i * stride] = ldexpf((float)v, -24);
        }
        break;
    }
    case CD_HUGE: { /* the largest binary16 magnitudes: +-65504 ranges */
        for (uint32_t i = 0; i < m; i++) {
            uint32_t pick = kvq_rng_below(r, 4);
            float v = pick == 0 ? 0x1.ffcp+15f : pick == 1 ? -0x1.ffcp+15f
                                                           : f16(0x1.ffcp+15f * kvq_rng_sym(r));
            x[i * stride] = v;
        }
        break;
    }
    default: { /* CD_OUTLIER */
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 6) - 3);
        for (uint32_t i = 0; i < m; i++) x[i * stride] = f16(a * kvq_rng_sym(r));
        x[kvq_rng_below(r, m) * stride] =
            f16(a * (float)(64 + kvq_rng_below(r, 1024)) * (kvq_rng_below(r, 2) ? 1.0f : -1.0f));
        break;
    }
    }
}

static const uint32_t CERT_D_SMOKE[3] = { 16, 32, 64 };
static const uint32_t CERT_D_STD[7] = { 16, 32, 48, 64, 128, 256, 512 };

/* A shape with ragged tails: n = 16 nfull + tail, n < 16 one time in eight. */
static void cert_shape(kvq_cert_shape *s, kvq_rng *r, int smoke)
{
    uint32_t nfull, tail;
    s->dim = smoke ? CERT_D_SMOKE[kvq_rng_below(r, 3)] : CERT_D_STD[kvq_rng_below(r, 7)];
    nfull = kvq_rng_below(r, 8) == 0 ? 0u : 1u + kvq_rng_below(r, smoke ? 2 : (s->dim >= 256 ? 2 : 4));
    tail = kvq_rng_below(r, 16);
    s->tokens = 16u * nfull + tail;
    if (s->tokens == 0) s->tokens = 1u + kvq_rng_below(r, 15);
}

/* Fill [n][d]: block-channels (keys) or token groups (values) of the full
 * blocks by fill16, the residual tokens as plain binary16 data. */
static void cert_fill(float *x, const kvq_cert_shape *s, int keys, int dist, kvq_rng *r)
{
    uint32_t n = s->tokens, d = s->dim, nq = kvq_cert_full_blocks(s);
    for (uint32_t b = 0; b < nq; b++) {
        if (keys) {
            for (uint32_t c = 0; c < d; c++)
                fill16(x + kvq_cert_in_index(s, 16u * b, c), d, 16u, dist, 255u, r);
        } else {
            for (uint32_t t = 16u * b; t < 16u * b + 16u; t++)
                for (uint32_t j = 0; j < d / 16u; j++)
                    fill16(x + kvq_cert_in_index(s, t, 16u * j), 1, 16u, dist, 15u, r);
        }
    }
    for (uint32_t t = 16u * nq; t < n; t++)
        for (uint32_t c = 0; c < d; c++) x[kvq_cert_in_index(s, t, c)] = f16(kvq_rng_sym(r));
}

/* cert-keys' and cert-values' solver (kvq_op.solve [VER-REG-11]): expected
 * outputs from the exact path; an exact-path error makes it an error case
 * expecting that status. */
kvq_status kvq_cert_solve_quant(kvq_case *c)
{
    kvq_cert_in *in = c->in;
    kvq_cert_quant_ref *ref = c->ref;
    const kvq_cert_shape *s = &in->shape;
    int keys = c->op == &kvq_op_cert_keys;
    uint64_t nb = keys ? kvq_cert_key_code_bytes(s) : kvq_cert_value_code_bytes(s), namb = 0, ne;
    uint8_t *real = NULL, *alt = NULL;
    float *khat = NULL;
    kvq_status st;
    if (keys) {
        kvq_cert_keys_out *ex = c->exp;
        kvq_exact_cert_keys_out o;
        memset(&o, 0, sizeof o);
        ne = nb;
        o.codes = (int8_t *)ex->codes, o.sigma = ex->sigma, o.z = ex->z;
        o.khat = khat = malloc((ne ? ne : 1) * sizeof *khat);
        o.code_real = malloc(ne ? ne : 1), o.code_alt = malloc(ne ? ne : 1);
        real = (uint8_t *)o.code_real, alt = (uint8_t *)o.code_alt;
        if (!khat || !real || !alt) { st = KVQ_E_NOMEM; goto out; }
        st = kvq_exact_cert_quantize_keys(&o, in->k, s, &c->pol);
        if (st == KVQ_OK) {
            c->flags = o.flags;
            memcpy(ref->real, real, nb);  /* token-major = row-major over 16 nq tokens */
        }
    } else {
        kvq_cert_values_out *ex = c->exp;
        kvq_exact_kivi_out o;
        kvq_kivi_shape ks = kvq_cert_value_kivi_shape(s);
        memset(&o, 0, sizeof o);
        ne = (uint64_t)kvq_cert_quant_tokens(s) * s->dim;
        o.codes = ex->codes, o.scale = ex->scale, o.zero = ex->zero;
        o.deq = khat = malloc((ne ? ne : 1) * sizeof *khat);
        o.code_real = real = malloc(ne ? ne : 1), o.code_alt = alt = malloc(ne ? ne : 1);
        if (!khat || !real || !alt) { st = KVQ_E_NOMEM; goto out; }
        st = kvq_exact_cert_quantize_values(&o, in->v, s, &c->pol);
        if (st == KVQ_OK) {
            c->flags = o.flags;
            memset(ref->real, 0, nb);
            for (uint64_t g = 0; g < kvq_cert_value_groups(s); g++)
                for (uint32_t i = 0; i < KVQ_CERT_VGROUP; i++)
                    kvq_pack_code(ref->real + g * kvq_cert_value_group_bytes(), i, KVQ_CERT_VBITS,
                                  real[kvq_kivi_elem_index(&ks, g, i)]);
            st = kvq_exact_cert_annotate(ex->eta, ex->nu, in->v, ex->codes, ex->scale, ex->zero, s);
        }
    }
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) {
        kvq_case_drop_outputs(c);
        c->status = st;
        c->flags = 0;
        st = KVQ_OK;
        goto out;
    }
    for (uint64_t e = 0; e < ne; e++) namb += real[e] != alt[e];
    ref->amb.n = namb;
    if (namb) {
        uint64_t k = 0;
        ref->amb.idx = malloc(namb * sizeof *ref->amb.idx);
        ref->amb.alt = malloc(namb);
        if (!ref->amb.idx || !ref->amb.alt) { st = KVQ_E_NOMEM; goto out; }
        for (uint64_t e = 0; e < ne; e++)
            if (real[e] != alt[e]) ref->amb.idx[k] = e, ref->amb.alt[k++] = alt[e];
    }
out:
    free(khat), free(real), free(alt);
    return st;
}

static kvq_status make_cert_quant(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                                  uint64_t kseed, uint32_t j, int keys, int smoke)
{
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (kseed + 1u)) };
    kvq_cert_in *in;
    int dist;
    if (kvq_case_begin(c, keys ? &kvq_op_cert_keys : &kvq_op_cert_values) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    (void)kvq_rng_next(&r);
    c->level = j % 2u;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    cert_shape(&in->shape, &r, smoke);
    dist = (int)((j / 2u + kvq_rng_below(&r, 2)) % CD_COUNT);
    snprintf(c->id, sizeof c->id, "cert-%s-%05llu-%s-%s", tag, (unsigned long long)k, keys ? "keys" : "values", CD_NAMES[dist]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    cert_fill(keys ? in->k : in->v, &in->shape, keys, dist, &r);
    return c->op->solve(c);
}

/* The expected status of a step [VEC-CERT-04]: the parameters and scale
 * ([CERT-DUMP-03], [CERT-L-01]: KVQ_E_PARAM), the shape (KVQ_E_SHAPE), then a
 * non-finite q, K or V value (KVQ_E_NONFINITE), then a finite one that is not
 * binary16 (KVQ_E_PARAM) [CERT-L-02]. */
static int step_status(const kvq_case *c)
{
    const kvq_cert_in *in = c->in;
    const kvq_cert_params *p = &in->prm;
    const kvq_cert_shape *s = &in->shape;
    uint64_t n = (uint64_t)s->tokens * s->dim;
    if (!(p->tau > 0.0f && p->tau <= 1.0f) || p->kmin < 1u || p->kmin > p->kmax ||
        !(p->vtol >= 0.0f) || isinf(p->vtol) || !(p->eps_guard >= 0.0f) || isinf(p->eps_guard) ||
        !(p->eps_dense >= 0.0f) || p->r < 1u || p->start_rung > 4u)
        return KVQ_E_PARAM;
    if (!isfinite(in->qscale) || !(in->qscale >= 0x1p-126f)) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(s)) return KVQ_E_SHAPE;
    for (uint32_t i = 0; i < s->dim; i++) if (!isfinite(in->q[i])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(in->k[e]) || !isfinite(in->v[e])) return KVQ_E_NONFINITE;
    for (uint32_t i = 0; i < s->dim; i++) if (!is_f16(in->q[i])) return KVQ_E_PARAM;
    for (uint64_t e = 0; e < n; e++)
        if (!is_f16(in->k[e]) || !is_f16(in->v[e])) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* cert-step's solver (kvq_op.solve [VER-REG-11]): the status the step's
 * exact path returns on the inputs; a step has no expected outputs (the
 * exact path judges each result). */
kvq_status kvq_cert_solve_step(kvq_case *c)
{
    c->status = step_status(c);
    return KVQ_OK;
}

enum { SK_RANDOM, SK_SINKS, SK_NEEDLE, SK_UNIFORM, SK_CONC, SK_COUNT };
static const char *const SK_NAMES[SK_COUNT] = { "random", "sinks", "needle", "near-uniform",
                                                "concentrated" };

/* Step inputs of one head kind: q and V uniform; K by kind (attention sinks
 * at the first tokens, one needle token aligned with q, near-uniform
 * attention from tiny keys, one block of large aligned keys). */
static void step_fill(kvq_case *c, int kind, kvq_rng *r)
{
    kvq_cert_in *in = c->in;
    const kvq_cert_shape *s = &in->shape;
    uint32_t n = s->tokens, d = s->dim, hot = kvq_rng_below(r, n);
    float kw = kind == SK_UNIFORM ? 0x1p-6f : 1.0f;
    for (uint32_t i = 0; i < d; i++) in->q[i] = f16(kvq_rng_sym(r));
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            uint64_t e = kvq_cert_in_index(s, t, i);
            int aligned = (kind == SK_SINKS && t < 1u + n / 32u) || (kind == SK_NEEDLE && t == hot) ||
                          (kind == SK_CONC && t / 16u == hot / 16u);
            in->k[e] = aligned ? f16(4.0f * in->q[i] + 0x1p-3f * kvq_rng_sym(r)) : f16(kw * kvq_rng_sym(r));
            in->v[e] = f16(kvq_rng_sym(r));
        }
}

/* Parameter sets of the steps [CERT-SEL-03] [CERT-PROM-01..02]. */
static void step_params(kvq_cert_params *p, uint32_t which)
{
    *p = kvq_cert_default_params();
    switch (which % 4u) {
    case 1: p->tau = 0x1.ccccccp-1f; p->kmin = 1; p->kmax = 3; break; /* RN32(0.9) */
    case 2: p->promote_budget = 0; p->tau = 0x1.fffefap-1f; break;   /* RN32(0.99999) */
    case 3: p->kmin = 4; p->kmax = 4; p->eps_guard = 0x1p-4f; p->r = 2; break;
    default: break;                                                    /* the paper's defaults */
    }
}

static kvq_status make_cert_step(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                                 uint64_t kseed, uint32_t j, int smoke)
{
    static const uint32_t D_SMOKE[2] = { 16, 32 };
    static const uint32_t D_STD[4] = { 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (kseed + 1u)) };
    kvq_cert_in *in;
    int kind;
    if (kvq_case_begin(c, &kvq_op_cert_step) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    (void)kvq_rng_next(&r);
    c->level = KVQ_LEVEL_BOUNDED;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    in->shape.dim = smoke ? D_SMOKE[kvq_rng_below(&r, 2)] : D_STD[kvq_rng_below(&r, 4)];
    in->shape.tokens = 1u + kvq_rng_below(&r, smoke ? 64 : (in->shape.dim >= 128 ? 96 : 160));
    kind = (int)(j % SK_COUNT);
    step_params(&in->prm, j / SK_COUNT + kvq_rng_below(&r, 2));
    /* scale: the binary32 nearest 1/sqrt(d) via binary64 (a double rounding
     * is harmless: any positive normal binary32 is a valid scale [CERT-L-01]) */
    in->qscale = (float)(1.0 / sqrt((double)in->shape.dim));
    snprintf(c->id, sizeof c->id, "cert-%s-%05llu-step-%s", tag, (unsigned long long)k, SK_NAMES[kind]);
    c->variant = KVQ_CERT_VARIANT_SPARSE;         /* the paper twins: twin_case */
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    step_fill(c, kind, &r);
    return c->op->solve(c);
}

/* Error cases: one defect each, so that no order among the checks is assumed.
 * CE_K_NAN_B .. CE_V_PINF_E were added after the original list (CE_OLD_COUNT):
 * with them a NaN and an infinity in keys and in values at both levels. */
enum {
    CE_K_NAN, CE_K_PINF, CE_K_NOT16, CE_K_DIM20, CE_K_DIM528, CE_K_EMPTY, CE_K_RESID_NAN,
    CE_V_NINF, CE_V_NOT16, CE_V_DIM24, CE_V_NAN,
    CE_S_QNAN, CE_S_VINF, CE_S_KNOT16, CE_S_QNOT16, CE_S_SCALE0, CE_S_SCALESUB, CE_S_TAU0,
    CE_S_TAU2, CE_S_KMIN0, CE_S_KMINMAX, CE_S_DIM8, CE_S_EMPTY,
    CE_K_NAN_B, CE_K_NINF_E, CE_V_NAN_B, CE_V_PINF_E, CE_COUNT
};
#define CE_OLD_COUNT ((uint32_t)CE_K_NAN_B)
static const char *const CE_NAMES[CE_COUNT] = {
    "keys-nan", "keys-pinf", "keys-not-binary16", "keys-dim20", "keys-dim528", "keys-empty",
    "keys-residual-nan", "values-ninf", "values-not-binary16", "values-dim24", "values-nan",
    "step-q-nan", "step-v-inf", "step-k-not-binary16", "step-q-not-binary16", "step-scale-zero",
    "step-scale-subnormal", "step-tau-zero", "step-tau-above-one", "step-kmin-zero",
    "step-kmin-above-kmax", "step-dim8", "step-empty",
    "keys-nan-bounded", "keys-ninf-exact", "values-nan-bounded", "values-pinf-exact",
};

static kvq_status make_cert_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                                  uint64_t kseed, uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (kseed + 1u)) };
    const kvq_op *op = which == CE_K_NAN_B || which == CE_K_NINF_E ? &kvq_op_cert_keys
                     : which == CE_V_NAN_B || which == CE_V_PINF_E ? &kvq_op_cert_values
                     : which < CE_V_NINF ? &kvq_op_cert_keys
                     : which < CE_S_QNAN ? &kvq_op_cert_values : &kvq_op_cert_step;
    int step = op == &kvq_op_cert_step;
    kvq_cert_in *in;
    kvq_cert_shape *s;
    float *x;
    uint64_t n;
    if (kvq_case_begin(c, op) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    c->level = step || which == CE_K_NAN_B || which == CE_V_NAN_B ? KVQ_LEVEL_BOUNDED
             : which == CE_K_NINF_E || which == CE_V_PINF_E ? KVQ_LEVEL_EXACT : which % 2u;
    c->pol = kvq_policy_default;
    s->tokens = 32;
    s->dim = 16;
    switch (which) {
    case CE_K_DIM20: s->dim = 20; break;
    case CE_K_DIM528: s->dim = 528; break;
    case CE_K_EMPTY: case CE_S_EMPTY: s->tokens = 0; break;
    case CE_K_RESID_NAN: s->tokens = 37; break;
    case CE_V_DIM24: s->dim = 24; break;
    case CE_S_DIM8: s->dim = 8; break;
    default: break;
    }
    if (step) {
        step_params(&in->prm, 0);
        in->qscale = 0x1p-2f;
        if (which == CE_S_SCALE0) in->qscale = 0.0f;
        if (which == CE_S_SCALESUB) in->qscale = 0x1p-130f;
        if (which == CE_S_TAU0) in->prm.tau = 0.0f;
        if (which == CE_S_TAU2) in->prm.tau = 2.0f;
        if (which == CE_S_KMIN0) in->prm.kmin = 0;
        if (which == CE_S_KMINMAX) in->prm.kmin = 5, in->prm.kmax = 4;
    }
    snprintf(c->id, sizeof c->id, "cert-%s-%05llu-err-%s", tag, (unsigned long long)k, CE_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    n = (uint64_t)s->tokens * s->dim;
    x = op == &kvq_op_cert_values ? in->v : in->k;
    for (uint64_t e = 0; e < n; e++) {
        x[e] = f16(kvq_rng_sym(&r));
        if (step) in->v[e] = f16(kvq_rng_sym(&r));
    }
    if (step) for (uint32_t i = 0; i < s->dim; i++) in->q[i] = f16(kvq_rng_sym(&r));
    if (n) {
        uint64_t at = kvq_rng_next(&r) % n;
        switch (which) {
        case CE_K_NAN: case CE_V_NAN: case CE_K_NAN_B: case CE_V_NAN_B: x[at] = NAN; break;
        case CE_K_PINF: case CE_V_PINF_E: x[at] = INFINITY; break;
        case CE_V_NINF: case CE_K_NINF_E: x[at] = -INFINITY; break;
        case CE_K_NOT16: case CE_V_NOT16: case CE_S_KNOT16: x[at] = 1.0f + 0x1p-20f; break;
        case CE_K_RESID_NAN: x[n - 1] = NAN; break;  /* the residual block is checked too */
        case CE_S_QNAN: in->q[0] = NAN; break;
        case CE_S_VINF: in->v[at] = INFINITY; break;
        case CE_S_QNOT16: in->q[s->dim - 1] = 0x1.000002p-1f; break;
        default: break;
        }
    }
    return c->op->solve(c); /* the exact path's status, or its outputs if it accepts */
}


/* ---- key cases with -0 zero-range channels ------------------------------------------ */

/* One full block b of a key case holds a channel of sixteen -0 keys, a channel
 * mixing +0 and -0 (both zero-range channels [CERT-K8-01]: u == l, sigma = +0,
 * z = +0 [POL-SZ-01], codes 0, ZERO_SCALE) and a channel whose least key is a
 * zero of either sign beside positive keys (z = RN32(l + 128 sigma) with l a
 * signed zero); the residual tokens of the first channel are -0 as well.  The
 * rest is uniform data.  Levels alternate, exact first. */
static kvq_status make_cert_negzero(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j,
                                    int smoke)
{
    kvq_rng r = { seed ^ (0x9FB21C651E98DF25ull * (k + 1u)) };
    kvq_cert_in *in;
    kvq_cert_shape *s;
    uint32_t nq, b, d, c1, c2, c3, mask, p0;
    if (kvq_case_begin(c, &kvq_op_cert_keys) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    c->level = j % 2u;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    s->dim = smoke ? CERT_D_SMOKE[kvq_rng_below(&r, 3)] : CERT_D_STD[kvq_rng_below(&r, 7)];
    nq = 1u + kvq_rng_below(&r, 2);
    s->tokens = 16u * nq + kvq_rng_below(&r, 16);
    snprintf(c->id, sizeof c->id, "cert-%s-%05llu-keys-negzero", tag, (unsigned long long)k);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    cert_fill(in->k, s, 1, CD_UNIFORM, &r);
    d = s->dim;
    b = kvq_rng_below(&r, nq);
    c1 = kvq_rng_below(&r, d);
    c2 = (c1 + 1u + kvq_rng_below(&r, d - 1u)) % d;
    c3 = (c2 + 1u + kvq_rng_below(&r, d - 1u)) % d;
    if (c3 == c1) c3 = (c3 + 1u) % d == c2 ? (c3 + 2u) % d : (c3 + 1u) % d;
    mask = 1u + kvq_rng_below(&r, 0xfffeu);  /* bit i: token i of c2 is -0; neither all nor none */
    p0 = kvq_rng_below(&r, 16);
    for (uint32_t i = 0; i < 16u; i++) {
        uint32_t t = 16u * b + i;
        in->k[kvq_cert_in_index(s, t, c1)] = -0.0f;
        in->k[kvq_cert_in_index(s, t, c2)] = (mask >> i) & 1u ? -0.0f : 0.0f;
        in->k[kvq_cert_in_index(s, t, c3)] =
            i == p0 ? -0.0f : i == (p0 + 1u) % 16u ? 0.0f : f16(fabsf(kvq_rng_sym(&r)) + 0x1p-10f);
    }
    for (uint32_t t = 16u * nq; t < s->tokens; t++) in->k[kvq_cert_in_index(s, t, c1)] = -0.0f;
    return c->op->solve(c);
}

/* ---- decode steps built to take given paths of the ladder --------------------------- */

/* promote: rung 0 accepted with promoted blocks (threshold rule, vtol 2^-7 ..
 * 2^-9, high-error values in the heavy blocks); rung1: rung 0 capped below
 * the heavy blocks (kmax = ceil(h/2) of h heavy blocks), rung 1 (2 kmax)
 * covers them; rung2: the value check fails at rungs 0-1 (budget 0, every
 * block's values high-error), rung 2 promotes; dense3 / dense4: near-uniform
 * attention with Kmin = Kmax = 1, no sparse rung passes the boundary check:
 * rung 3 (eps_dense = +inf), rung 4 (eps_dense 0 or tiny, or start_rung 4). */
enum { SX_PROMOTE, SX_RUNG1, SX_RUNG2, SX_DENSE3, SX_DENSE4, SX_COUNT };
static const char *const SX_NAMES[SX_COUNT] = { "promote", "rung1", "rung2", "dense3", "dense4" };
static const uint32_t SX_CASES[SX_COUNT][2] = { { 3, 8 }, { 3, 6 }, { 3, 6 }, { 2, 5 }, { 2, 5 } };

static uint32_t n_ladder(int smoke)
{
    uint32_t n = 0;
    for (int x = 0; x < SX_COUNT; x++) n += SX_CASES[x][smoke ? 0 : 1];
    return n;
}

#define SX_MAX_BLOCKS 9u

/* Step j of the ladder classes.  The scores are designed in nats under the
 * case's own scale: the key of token t is RN16(c_t q + e_t) with c_t =
 * sigma_t / (scale |q|^2), so its estimated score is about sigma_t, the
 * block's log-offset (0 for heavy blocks, -14 .. -18 for light ones,
 * +-0.25 for near-uniform heads) plus +-0.25 per token, and e_t uniform of
 * radius 0.3 / (scale sqrt(d)) adds about 0.1 nat of noise.  Every structure
 * is thus the same whatever the scale, which is drawn 2^-6 .. 2^-1 or 2 .. 4
 * times RN32(1/sqrt(d)) (never within a factor 2 of the default, so that a
 * kernel using the default instead of the given scale computes other
 * attention).  Within-block key ranges stay small, so Delta is small (below
 * about 0.01) and the light blocks' mass (e^-14 per token at most) is far
 * inside 1 - tau, and every block's scores stay within 19 nats of the top
 * one (a finite Phase-1 radius).  High-error values: in each 16-channel
 * group one outlier of magnitude 8 .. 32 beside values of magnitude <= 1/2,
 * so eta_b / nu_b is 0.06 .. 0.09, against vtol <= 2^-7. */
static kvq_status make_cert_ladder(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j,
                                   int smoke)
{
    static const uint32_t D_SMOKE[2] = { 16, 32 };
    static const uint32_t D_STD[4] = { 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0x9FB21C651E98DF25ull * (k + 1u)) };
    kvq_cert_in *in;
    kvq_cert_shape *s;
    kvq_cert_params *p;
    uint32_t cls = 0, jj = j, d, nq, n, h = 0, perm[SX_MAX_BLOCKS];
    double lam[SX_MAX_BLOCKS + 1], qq = 0.0, a;
    int heavy[SX_MAX_BLOCKS + 1], noisy[SX_MAX_BLOCKS + 1];
    float mult;
    int e;
    while (cls + 1u < SX_COUNT && jj >= SX_CASES[cls][smoke ? 0 : 1]) jj -= SX_CASES[cls++][smoke ? 0 : 1];
    if (kvq_case_begin(c, &kvq_op_cert_step) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    p = &in->prm;
    (void)kvq_rng_next(&r);
    c->level = KVQ_LEVEL_BOUNDED;
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 4) == 0) c->pol.ties = KVQ_TIES_AWAY;
    d = s->dim = smoke ? D_SMOKE[kvq_rng_below(&r, 2)] : D_STD[kvq_rng_below(&r, 4)];
    nq = 3u + kvq_rng_below(&r, smoke ? 2 : (d >= 128u ? 4 : 6));
    n = s->tokens = 16u * nq + kvq_rng_below(&r, 16);
    /* the scale [CERT-L-01]: mult in [2^-6, 2^-1) or [2, 4), 24 random bits */
    e = (int)kvq_rng_below(&r, 6);
    mult = ldexpf(1.0f + kvq_rng_unit(&r), e < 5 ? e - 6 : 1);
    in->qscale = (float)(1.0 / sqrt((double)d)) * mult;
    *p = kvq_cert_default_params();
    for (uint32_t b = 0; b < nq; b++) perm[b] = b, heavy[b] = 0, noisy[b] = 0;
    heavy[nq] = 0, noisy[nq] = 0;
    for (uint32_t b = 0; b + 1u < nq; b++) { /* a random order of the blocks: heavy ones first */
        uint32_t o = b + kvq_rng_below(&r, nq - b), t = perm[b];
        perm[b] = perm[o], perm[o] = t;
    }
    switch (cls) {
    case SX_PROMOTE:
        h = 1u + kvq_rng_below(&r, 2);
        p->vtol = ldexpf(1.0f, -7 - (int)kvq_rng_below(&r, 3));
        break;
    case SX_RUNG1:
        h = 2u + kvq_rng_below(&r, smoke ? 1 : (nq < 4u ? nq - 1u : 3u)); /* 2 .. min(4, nq) */
        p->kmin = 1u;
        p->kmax = (h + 1u) / 2u;
        break;
    case SX_RUNG2:
        h = 1u + kvq_rng_below(&r, 2);
        p->promote_budget = 0u;
        p->vtol = ldexpf(1.0f, -7 - (int)kvq_rng_below(&r, 3));
        break;
    default: /* SX_DENSE3, SX_DENSE4 */
        p->kmin = p->kmax = 1u;
        if (cls == SX_DENSE4) {
            if (jj % 3u == 2u) p->start_rung = 4u;
            else p->eps_dense = kvq_rng_below(&r, 2) ? 0.0f : ldexpf(1.0f, -40 - (int)kvq_rng_below(&r, 20));
        }
        break;
    }
    for (uint32_t i = 0; i < h; i++) heavy[perm[i]] = 1;
    for (uint32_t b = 0; b <= nq; b++) {
        if (cls == SX_DENSE3 || cls == SX_DENSE4) lam[b] = 0.25 * kvq_rng_sym(&r);
        else lam[b] = heavy[b] ? -0.25 * kvq_rng_unit(&r) : -14.0 - 4.0 * kvq_rng_unit(&r);
        noisy[b] = b < nq && ((cls == SX_PROMOTE && heavy[b]) || cls == SX_RUNG2);
    }
    snprintf(c->id, sizeof c->id, "cert-%s-%05llu-step-%s", tag, (unsigned long long)k, SX_NAMES[cls]);
    c->variant = KVQ_CERT_VARIANT_SPARSE;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint32_t i = 0; i < d; i++) {
        in->q[i] = f16(kvq_rng_sym(&r));
        qq += (double)in->q[i] * in->q[i];
    }
    if (qq < 0.25) { /* an unlikely short query: make |q|^2 >= 1 */
        in->q[0] = 1.0f;
        qq += 1.0;
    }
    a = 0.3 / ((double)in->qscale * sqrt((double)d));
    for (uint32_t t = 0; t < n; t++) {
        uint32_t b = t / 16u;
        double ct = (lam[b] + 0.25 * kvq_rng_sym(&r)) / ((double)in->qscale * qq);
        for (uint32_t i = 0; i < d; i++)
            in->k[kvq_cert_in_index(s, t, i)] = f16((float)(ct * in->q[i] + a * kvq_rng_sym(&r)));
        for (uint32_t g = 0; g < d / 16u; g++) {
            uint32_t out = kvq_rng_below(&r, 16);
            for (uint32_t i = 0; i < 16u; i++) {
                float v = kvq_rng_sym(&r);
                if (noisy[b]) v = i == out ? (8.0f + 24.0f * kvq_rng_unit(&r)) * (v < 0.0f ? -1.0f : 1.0f)
                                           : 0.5f * v;
                in->v[kvq_cert_in_index(s, t, 16u * g + i)] = f16(v);
            }
        }
    }
    return c->op->solve(c);
}

/* The paper twin [CERT-VAR-01] of a step built as sparse case (the same
 * inputs and parameters): variant paper, id "cert-<tag>-<k>-paper-<kind>". */
static void twin_case(kvq_case *c, const char *tag, uint64_t k)
{
    char kind[16];
    const char *t = strstr(c->id, "-step-");
    snprintf(kind, sizeof kind, "%.15s", t != NULL ? t + 6 : "step");
    snprintf(c->id, sizeof c->id, "cert-%.8s-%05llu-paper-%.15s", tag, (unsigned long long)k, kind);
    c->variant = KVQ_CERT_VARIANT_PAPER;
}

/* Level sets [VEC-GEN-02]: keys, values and steps of each, then the error
 * cases; in each section the original cases, then the added ones.  The
 * decode steps of kvq 0.3 are sparse cases [CERT-VAR-01]; their paper twins
 * come last, after the error cases, so that no earlier id moved. */
typedef struct cert_sizes {
    uint32_t nkeys, nvals, nsteps;   /* the original cases of each section */
    uint32_t nkeys2, nsteps2;        /* -0 key cases; ladder steps */
} cert_sizes;

static int sizes_of(const char *levels, cert_sizes *z)
{
    int smoke = strcmp(levels, "smoke") == 0;
    if (smoke) z->nkeys = 24, z->nvals = 24, z->nsteps = 10;
    else if (strcmp(levels, "standard") == 0) z->nkeys = 112, z->nvals = 112, z->nsteps = 40;
    else return 0;
    z->nkeys2 = 2;
    z->nsteps2 = n_ladder(smoke);
    return 1;
}

/* The error steps CE_S_QNAN .. CE_S_EMPTY carry the default variant, paper
 * (the status does not depend on it); a subject whose cert_step predates the
 * variants serves sparse cases only [CERT-VAR-02], so each has a sparse twin
 * (same inputs, same defect), appended after the paper twins so that no
 * earlier id moved: id "cert-<tag>-<k>-err-sparse-<name>" [VEC-CERT-08]. */
#define CE_STEP_COUNT ((uint32_t)(CE_S_EMPTY - CE_S_QNAN + 1))

uint64_t kvq_cert_gen_count(const char *levels)
{
    cert_sizes z;
    return sizes_of(levels, &z) ? (uint64_t)z.nkeys + z.nkeys2 + z.nvals +
                                      2u * ((uint64_t)z.nsteps + z.nsteps2) + CE_COUNT + CE_STEP_COUNT
                                : 0u;
}

kvq_status kvq_cert_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    cert_sizes z;
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    uint64_t ek, ek2, ev, es, es2, ee, et, ov, os, oe;
    kvq_status st;
    if (!sizes_of(levels, &z)) return KVQ_E_PARAM;
    ek = z.nkeys, ek2 = ek + z.nkeys2, ev = ek2 + z.nvals, es = ev + z.nsteps, es2 = es + z.nsteps2;
    ee = es2 + CE_COUNT;
    et = ee + (es2 - ev); /* after the paper twins: the sparse error steps */
    /* the original ordinals of the first value, step and error case */
    ov = z.nkeys, os = ov + z.nvals, oe = os + z.nsteps;
    if (k < ek) st = make_cert_quant(c, tag, seed, k, k, (uint32_t)k, 1, smoke);
    else if (k < ek2) st = make_cert_negzero(c, tag, seed, k, (uint32_t)(k - ek), smoke);
    else if (k < ev) st = make_cert_quant(c, tag, seed, k, ov + (k - ek2), (uint32_t)(k - ek2), 0, smoke);
    else if (k < es) st = make_cert_step(c, tag, seed, k, os + (k - ev), (uint32_t)(k - ev), smoke);
    else if (k < es2) st = make_cert_ladder(c, tag, seed, k, (uint32_t)(k - es), smoke);
    else if (k < ee) {
        uint32_t which = (uint32_t)(k - es2);
        st = make_cert_error(c, tag, seed, k, which < CE_OLD_COUNT ? oe + which : k, which);
    } else if (k >= et) {
        /* the sparse twin of an error step, built at the paper one's ordinal */
        uint32_t which = CE_S_QNAN + (uint32_t)(k - et);
        st = make_cert_error(c, tag, seed, es2 + which, oe + which, which);
        if (st == KVQ_OK) {
            c->variant = KVQ_CERT_VARIANT_SPARSE;
            snprintf(c->id, sizeof c->id, "cert-%s-%05llu-err-sparse-%s", tag, (unsigned long long)k,
                     CE_NAMES[which]);
        }
    } else {
        /* the paper twins of the steps ev .. es2 - 1, built at their ordinals */
        uint64_t o = ev + (k - ee);
        if (o < es) st = make_cert_step(c, tag, seed, o, os + (o - ev), (uint32_t)(o - ev), smoke);
        else st = make_cert_ladder(c, tag, seed, o, (uint32_t)(o - es), smoke);
        if (st == KVQ_OK) twin_case(c, tag, k);
    }
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
