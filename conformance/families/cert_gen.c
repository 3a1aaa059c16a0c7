/*
 * families/cert_gen.c -- deterministic CERT conformance vectors [VEC-CERT-07].
 *
 * Ordinals: keys cases, then values cases, then decode steps, then error
 * cases; case k draws from its own generator seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  Every
 * input is a binary16 number (held as binary32) except where an error case
 * plants a defect.  Expected outputs: kvq_exact_cert_quantize_keys,
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

/* Expected outputs of a cert-keys or cert-values case from the exact path;
 * an exact-path error makes it an error case expecting that status. */
static kvq_status cert_solve(kvq_case *c)
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
                                  uint32_t j, int keys, int smoke)
{
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
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
    return cert_solve(c);
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
                                 uint32_t j, int smoke)
{
    static const uint32_t D_SMOKE[2] = { 16, 32 };
    static const uint32_t D_STD[4] = { 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
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
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    step_fill(c, kind, &r);
    c->status = step_status(c);
    return KVQ_OK;
}

/* Error cases: one defect each, so that no order among the checks is assumed. */
enum {
    CE_K_NAN, CE_K_PINF, CE_K_NOT16, CE_K_DIM20, CE_K_DIM528, CE_K_EMPTY, CE_K_RESID_NAN,
    CE_V_NINF, CE_V_NOT16, CE_V_DIM24, CE_V_NAN,
    CE_S_QNAN, CE_S_VINF, CE_S_KNOT16, CE_S_QNOT16, CE_S_SCALE0, CE_S_SCALESUB, CE_S_TAU0,
    CE_S_TAU2, CE_S_KMIN0, CE_S_KMINMAX, CE_S_DIM8, CE_S_EMPTY, CE_COUNT
};
static const char *const CE_NAMES[CE_COUNT] = {
    "keys-nan", "keys-pinf", "keys-not-binary16", "keys-dim20", "keys-dim528", "keys-empty",
    "keys-residual-nan", "values-ninf", "values-not-binary16", "values-dim24", "values-nan",
    "step-q-nan", "step-v-inf", "step-k-not-binary16", "step-q-not-binary16", "step-scale-zero",
    "step-scale-subnormal", "step-tau-zero", "step-tau-above-one", "step-kmin-zero",
    "step-kmin-above-kmax", "step-dim8", "step-empty",
};

static kvq_status make_cert_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                                  uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    const kvq_op *op = which < CE_V_NINF ? &kvq_op_cert_keys : which < CE_S_QNAN ? &kvq_op_cert_values
                                                                                : &kvq_op_cert_step;
    int step = op == &kvq_op_cert_step;
    kvq_cert_in *in;
    kvq_cert_shape *s;
    float *x;
    uint64_t n;
    if (kvq_case_begin(c, op) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    c->level = step ? KVQ_LEVEL_BOUNDED : which % 2u;
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
        case CE_K_NAN: case CE_V_NAN: x[at] = NAN; break;
        case CE_K_PINF: x[at] = INFINITY; break;
        case CE_V_NINF: x[at] = -INFINITY; break;
        case CE_K_NOT16: case CE_V_NOT16: case CE_S_KNOT16: x[at] = 1.0f + 0x1p-20f; break;
        case CE_K_RESID_NAN: x[n - 1] = NAN; break;  /* the residual block is checked too */
        case CE_S_QNAN: in->q[0] = NAN; break;
        case CE_S_VINF: in->v[at] = INFINITY; break;
        case CE_S_QNOT16: in->q[s->dim - 1] = 0x1.000002p-1f; break;
        default: break;
        }
    }
    if (step) {
        c->status = step_status(c);
        return KVQ_OK;
    }
    return cert_solve(c); /* the exact path's status, or its outputs if it accepts */
}


/* Level sets [VEC-GEN-02]: keys, values and steps of each, then the error cases. */
typedef struct cert_sizes {
    uint32_t nkeys, nvals, nsteps;
} cert_sizes;

static int sizes_of(const char *levels, cert_sizes *z)
{
    if (strcmp(levels, "smoke") == 0) z->nkeys = 24, z->nvals = 24, z->nsteps = 10;
    else if (strcmp(levels, "standard") == 0) z->nkeys = 112, z->nvals = 112, z->nsteps = 40;
    else return 0;
    return 1;
}

uint64_t kvq_cert_gen_count(const char *levels)
{
    cert_sizes z;
    return sizes_of(levels, &z) ? (uint64_t)z.nkeys + z.nvals + z.nsteps + CE_COUNT : 0u;
}

kvq_status kvq_cert_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    cert_sizes z;
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    kvq_status st;
    if (!sizes_of(levels, &z)) return KVQ_E_PARAM;
    if (k < z.nkeys) st = make_cert_quant(c, tag, seed, k, (uint32_t)k, 1, smoke);
    else if (k < z.nkeys + z.nvals) st = make_cert_quant(c, tag, seed, k, (uint32_t)(k - z.nkeys), 0, smoke);
    else if (k < (uint64_t)z.nkeys + z.nvals + z.nsteps)
        st = make_cert_step(c, tag, seed, k, (uint32_t)(k - z.nkeys - z.nvals), smoke);
    else st = make_cert_error(c, tag, seed, k, (uint32_t)(k - z.nkeys - z.nvals - z.nsteps));
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
