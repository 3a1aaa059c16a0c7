/*
 * families/pkv_gen.c -- the PKV operations' exact-path solvers and the PKV
 * vector generator (spec/vectors.md [VEC-PKV-01..09], [VEC-GEN-01]).
 *
 * Every expected value is the exact path's (ref/exact/pkv.c, GNU MPFR): the
 * pinned index by exact evaluation of the pinned binary32 distances, the real
 * index and its near-ties from exact distances, the V decision of the pinned
 * ratio against t = RN32(rho*) and of the exact ratio against the certified
 * bracket, residuals, KIVI codes and metadata, dequantized values and
 * Chebyshev centres.  The fast path is never called.  Inputs are drawn from
 * (seed, k) alone, so shards hold exactly the full run's cases.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact_pkv.h"
#include "kvq_rng.h"
#include "pkv.h"
#include "rule.h"

#define XPREC 320 /* exact for every difference and product of two binary32 values */

/* ---- the exact path's pieces ------------------------------------------------------ */

static float rn32(mpfr_t v)
{
    (void)kvq_exact_round(v, v, &kvq_xfmt_binary32);
    return mpfr_get_flt(v, MPFR_RNDN);
}

float kvq_pkv_pinned_dmm(const float *x, const float *m, uint32_t d)
{
    mpfr_t a, b, t;
    float ra, rb;
    mpfr_inits2(XPREC, a, b, t, (mpfr_ptr)0);
    for (uint32_t i = 0; i < d; i++) {
        mpfr_set_flt(t, x[i], MPFR_RNDN);
        mpfr_sub_d(t, t, (double)m[i], MPFR_RNDN); /* exact */
        if (i == 0 || mpfr_cmp(t, a) > 0) mpfr_set(a, t, MPFR_RNDN);
        if (i == 0 || mpfr_cmp(t, b) < 0) mpfr_set(b, t, MPFR_RNDN);
    }
    ra = rn32(a);
    rb = rn32(b);
    mpfr_set_flt(a, ra, MPFR_RNDN);
    mpfr_sub_d(a, a, (double)rb, MPFR_RNDN);
    ra = rn32(a);
    mpfr_clears(a, b, t, (mpfr_ptr)0);
    return ra;
}

/* The pinned V decision [PKV-V-01]: Rr = RN32(max - min), 0: raw; else
 * rho = RN32(Rf / Rr) (one correctly rounded quotient) and use iff rho <= t. */
static int pinned_v_use(const float *v, const float *m, uint32_t d, float t)
{
    float lo = v[0], hi = v[0], rr, rf, rho;
    mpfr_t a, b;
    for (uint32_t i = 1; i < d; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    if (lo == hi) return 0;
    mpfr_inits2(XPREC, a, b, (mpfr_ptr)0);
    mpfr_set_flt(a, hi, MPFR_RNDN);
    mpfr_sub_d(a, a, (double)lo, MPFR_RNDN);
    rr = rn32(a);
    rf = kvq_pkv_pinned_dmm(v, m, d);
    mpfr_set_flt(a, rf, MPFR_RNDN);
    mpfr_set_flt(b, rr, MPFR_RNDN);
    (void)kvq_exact_div_round(a, a, b, &kvq_xfmt_binary32);
    rho = mpfr_get_flt(a, MPFR_RNDN);
    mpfr_clears(a, b, (mpfr_ptr)0);
    return rho <= t;
}

/* The threshold of a case: the certified bracket of rho*(d, alpha) and the
 * exact level's t = RN32(rho*) [PKV-V-02] (both ends of the bracket round to
 * it; the table's t). */
typedef struct vthr {
    int have;
    mpfr_t lo, hi;
    float t;
} vthr;

static kvq_status vthr_get(vthr *v, uint32_t dim, uint32_t alpha)
{
    mpfr_t a;
    float tl, th;
    kvq_status st;
    if (v->have) return KVQ_OK;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, v->lo, v->hi, (mpfr_ptr)0);
    v->have = 1;
    st = kvq_exact_pkv_rho_bracket(v->lo, v->hi, dim, alpha);
    if (st != KVQ_OK) return st;
    mpfr_init2(a, KVQ_PKV_XPREC_RHO);
    mpfr_set(a, v->lo, MPFR_RNDN);
    tl = rn32(a);
    mpfr_set(a, v->hi, MPFR_RNDN);
    th = rn32(a);
    mpfr_clear(a);
    if (tl != th) return KVQ_E_RANGE; /* a bracket straddling a rounding boundary: never at 256 bits */
    v->t = tl;
    return KVQ_OK;
}

static void vthr_free(vthr *v)
{
    if (v->have) mpfr_clears(v->lo, v->hi, (mpfr_ptr)0);
    v->have = 0;
}

/* What the exact path gives for one block; real and ties may be NULL. */
typedef struct xblock {
    uint16_t *index, *real;
    uint8_t *ties;
    float *resid, *deq;
    uint8_t *codes;
    float *scale, *zero;
    uint32_t flags;
} xblock;

/* A block x [T][d] against bank [npat][d] [PKV-Q-01..04]: indices, then the
 * exact quantization given them.  The inputs were checked [PKV-ERR-01]. */
static kvq_status exact_block(xblock *o, const float *x, uint32_t kind, uint32_t T, uint32_t d, const float *bank,
                              uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol, vthr *vt)
{
    uint32_t dist = kind == KVQ_PKV_KEY_PREFILL ? p->key_dist : KVQ_PKV_DIST_MINMAX;
    int vthr_on = kind == KVQ_PKV_VALUE && p->v_threshold, tie = 0;
    uint64_t n = (uint64_t)T * d;
    kvq_exact_pkv_out eo;
    kvq_status st = KVQ_OK;
    float *deq = o->deq;
    memset(&eo, 0, sizeof eo);
    if (vthr_on && (st = vthr_get(vt, d, p->alpha)) != KVQ_OK) return st;
    for (uint32_t t = 0; t < T; t++) {
        const float *xt = x + (uint64_t)t * d;
        kvq_exact_pkv_assign_out a;
        uint32_t ix, rl, ties;
        kvq_exact_pkv_assign(&a, xt, bank, npat, d, dist, 0u);
        ix = a.pinned;
        rl = a.real;
        ties = a.ambiguous ? KVQ_PKV_TIE_ASSIGN : 0u;
        if (vthr_on) {
            int amb = 0;
            if (!pinned_v_use(xt, bank + (uint64_t)ix * d, d, vt->t)) ix = KVQ_PKV_NO_PATTERN;
            if (!kvq_exact_pkv_v_decide(&amb, xt, bank + (uint64_t)rl * d, d, vt->lo, vt->hi)) rl = KVQ_PKV_NO_PATTERN;
            if (amb) ties |= KVQ_PKV_TIE_V;
        }
        o->index[t] = (uint16_t)ix;
        if (o->real != NULL) o->real[t] = (uint16_t)rl;
        if (o->ties != NULL) o->ties[t] = (uint8_t)ties;
        tie |= ties != 0u;
    }
    if (deq == NULL) deq = malloc((size_t)n * sizeof *deq);
    eo.kivi.codes = o->codes;
    eo.kivi.scale = o->scale;
    eo.kivi.zero = o->zero;
    eo.kivi.deq = malloc((size_t)n * sizeof *eo.kivi.deq);
    eo.kivi.code_real = malloc((size_t)n);
    eo.kivi.code_alt = malloc((size_t)n);
    eo.resid = o->resid;
    eo.deq = deq;
    if (deq == NULL || eo.kivi.deq == NULL || eo.kivi.code_real == NULL || eo.kivi.code_alt == NULL)
        st = KVQ_E_NOMEM;
    else
        st = kvq_exact_pkv_quantize(&eo, x, o->index, kind, T, d, bank, npat, p, pol);
    o->flags = eo.kivi.flags | (tie ? KVQ_FLAG_AMBIGUOUS : 0u);
    if (deq != o->deq) free(deq);
    free(eo.kivi.deq);
    free(eo.kivi.code_real);
    free(eo.kivi.code_alt);
    return st;
}

/* ---- the solvers [VER-REG-11] ------------------------------------------------------ */

static kvq_status as_error(kvq_case *c, kvq_status st)
{
    kvq_case_drop_outputs(c);
    c->status = st;
    c->flags = 0;
    return KVQ_OK;
}

/* A case made for an error status gains its outputs once the exact path
 * accepts it. */
static kvq_status outputs(kvq_case *c)
{
    c->status = KVQ_OK;
    c->flags = 0;
    if (c->exp == NULL) return kvq_case_alloc(c);
    return KVQ_OK;
}

static int extent_ok(uint32_t t, uint32_t d)
{
    return t >= 1u && d >= 1u && t <= KVQ_MAX_DIM && d <= KVQ_MAX_DIM && (uint64_t)t * d <= KVQ_MAX_ELEMS;
}

/* Every value of a, then of b, finite; then every value of a, then of b,
 * within the domain [PKV-DOM-01] [PKV-ERR-01]. */
static kvq_status values2(const float *a, uint64_t na, const float *b, uint64_t nb)
{
    for (uint64_t e = 0; e < na; e++)
        if (!isfinite(a[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < nb; e++)
        if (!isfinite(b[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < na; e++)
        if (fabsf(a[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    for (uint64_t e = 0; e < nb; e++)
        if (fabsf(b[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    return KVQ_OK;
}

kvq_status kvq_pkv_solve_kmeans(kvq_case *c)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    kvq_status st;
    if (!kvq_pkv_params_ok(&p)) return as_error(c, KVQ_E_PARAM);
    if (!extent_ok(in->tokens, in->dim) || in->tokens < p.patterns) return as_error(c, KVQ_E_SHAPE);
    st = values2(in->x, (uint64_t)in->tokens * in->dim, NULL, 0);
    if (st != KVQ_OK) return as_error(c, st);
    return outputs(c); /* no expected values: the judge checks properties [PKV-KM-06] */
}

kvq_status kvq_pkv_solve_quant(kvq_case *c)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    kvq_kivi_shape ks = kvq_pkv_kivi_shape(&p, in->kind, in->tokens, in->dim);
    kvq_pkv_out *ex;
    kvq_pkv_ref *rf;
    xblock o;
    vthr vt = { 0 };
    kvq_status st;
    if (in->kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(&p)) return as_error(c, KVQ_E_PARAM);
    if (!extent_ok(in->tokens, in->dim) || !kvq_kivi_shape_ok(&ks) || in->npat == 0u ||
        in->npat > KVQ_PKV_MAX_PATTERNS)
        return as_error(c, KVQ_E_SHAPE);
    st = values2(in->x, (uint64_t)in->tokens * in->dim, in->bank, (uint64_t)in->npat * in->dim);
    if (st != KVQ_OK) return as_error(c, st);
    if ((st = outputs(c)) != KVQ_OK) return st;
    ex = c->exp;
    rf = c->ref;
    o = (xblock){ ex->index, rf->real, rf->ties, ex->resid, ex->deq, ex->codes, ex->scale, ex->zero, 0 };
    st = exact_block(&o, in->x, in->kind, in->tokens, in->dim, in->bank, in->npat, &p, &c->pol, &vt);
    vthr_free(&vt);
    if (st == KVQ_E_NOMEM) return st;
    if (st != KVQ_OK) return as_error(c, st);
    c->flags = o.flags;
    return KVQ_OK;
}

/* [KIVI-D-02]: the stored metadata of one group. */
static kvq_status meta_ok(float s, float z, uint32_t meta)
{
    int ov;
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (s < 0.0f) return KVQ_E_PARAM;
    if (meta == KVQ_META_F16) {
        if (s != 0.0f && s < 0x1p-14f) return KVQ_E_PARAM;
        if (kvq_exact_round_float(s, &kvq_xfmt_binary16, &ov) != s || ov) return KVQ_E_PARAM;
        if (kvq_exact_round_float(z, &kvq_xfmt_binary16, &ov) != z || ov) return KVQ_E_PARAM;
    } else if (s != 0.0f && s < 0x1p-126f) {
        return KVQ_E_PARAM;
    }
    return KVQ_OK;
}

kvq_status kvq_pkv_solve_dequant(kvq_case *c)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    kvq_kivi_shape ks = kvq_pkv_kivi_shape(&p, in->kind, in->tokens, in->dim);
    uint64_t ng;
    uint32_t flags = 0;
    kvq_pkv_out *ex;
    kvq_status st;
    mpfr_t v;
    if (in->kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(&p)) return as_error(c, KVQ_E_PARAM);
    if (!extent_ok(in->tokens, in->dim) || !kvq_kivi_shape_ok(&ks) || in->npat == 0u ||
        in->npat > KVQ_PKV_MAX_PATTERNS)
        return as_error(c, KVQ_E_SHAPE);
    st = values2(in->bank, (uint64_t)in->npat * in->dim, NULL, 0);
    if (st != KVQ_OK) return as_error(c, st);
    for (uint32_t t = 0; t < in->tokens; t++) /* [PKV-D-02] */
        if (!(in->index[t] == KVQ_PKV_NO_PATTERN && in->kind == KVQ_PKV_VALUE) && in->index[t] >= in->npat)
            return as_error(c, KVQ_E_PARAM);
    ng = kvq_kivi_groups(&ks);
    for (uint64_t g = 0; g < ng; g++)
        if ((st = meta_ok(in->scale[g], in->zero[g], p.meta)) != KVQ_OK) return as_error(c, st);
    for (uint64_t g = 0; g < ng; g++)
        for (uint32_t i = 0; i < ks.group; i++) {
            int ov = 0;
            uint32_t code = kvq_unpack_code(in->codes + kvq_kivi_group_code_offset(&ks, g), i, p.bits);
            (void)kvq_exact_kivi_deq(code, in->scale[g], in->zero[g], &ov);
            if (ov && c->pol.overflow == KVQ_OVERFLOW_NAN) return as_error(c, KVQ_E_RANGE);
        }
    if ((st = outputs(c)) != KVQ_OK) return st;
    ex = c->exp;
    mpfr_init2(v, XPREC);
    for (uint64_t g = 0; g < ng; g++)
        for (uint32_t i = 0; i < ks.group; i++) {
            int ov = 0;
            uint64_t e = kvq_kivi_elem_index(&ks, g, i);
            uint32_t t = (uint32_t)(e / in->dim);
            uint32_t code = kvq_unpack_code(in->codes + kvq_kivi_group_code_offset(&ks, g), i, p.bits);
            float r = kvq_exact_kivi_deq(code, in->scale[g], in->zero[g], &ov); /* [KIVI-D-01] */
            if (ov) flags |= KVQ_FLAG_SATURATED;
            if (in->index[t] == KVQ_PKV_NO_PATTERN) {
                ex->deq[e] = r;                  /* raw [PKV-D-01] */
            } else {
                mpfr_set_flt(v, r, MPFR_RNDN);
                mpfr_add_d(v, v, (double)in->bank[(uint64_t)in->index[t] * in->dim + e % in->dim], MPFR_RNDN);
                ex->deq[e] = rn32(v);           /* RN32(r^ + m) [PKV-D-01] */
            }
        }
    mpfr_clear(v);
    c->flags = flags;
    return KVQ_OK;
}

/* The exact Chebyshev centre into slot np of bank [PKV-U-02]. */
static kvq_status centre_into(float *bank, uint32_t np, const float *w, uint32_t n, uint32_t d)
{
    return kvq_exact_pkv_chebyshev(bank + (uint64_t)np * d, w, n, d);
}

/* A sequence's outputs, computed before the case knows whether it succeeds
 * (an error case has no output arrays to write into). */
typedef struct seqbuf {
    uint16_t *index;
    float *resid, *scale, *zero;
    uint8_t *codes;
    uint64_t nt, ne, nc, ng;
} seqbuf;

static void seq_free(seqbuf *b)
{
    free(b->index);
    free(b->resid);
    free(b->scale);
    free(b->zero);
    free(b->codes);
}

static kvq_status seq_alloc(seqbuf *b, uint64_t tokens, uint32_t d, uint32_t bits, uint32_t group)
{
    b->nt = tokens;
    b->ne = tokens * d;
    b->nc = b->ne * bits / 8u;
    b->ng = group ? b->ne / group : 0u;
    b->index = malloc((size_t)(b->nt ? b->nt : 1u) * sizeof *b->index);
    b->resid = malloc((size_t)(b->ne ? b->ne : 1u) * sizeof *b->resid);
    b->codes = malloc((size_t)(b->nc ? b->nc : 1u));
    b->scale = malloc((size_t)(b->ng ? b->ng : 1u) * sizeof *b->scale);
    b->zero = malloc((size_t)(b->ng ? b->ng : 1u) * sizeof *b->zero);
    if (!b->index || !b->resid || !b->codes || !b->scale || !b->zero) {
        seq_free(b);
        return KVQ_E_NOMEM;
    }
    return KVQ_OK;
}

/* The sequence succeeded: its outputs into the case. */
static kvq_status seq_finish(kvq_case *c, seqbuf *b, const float *bank, uint32_t np, uint32_t d, uint32_t flags)
{
    kvq_pkv_out *ex;
    kvq_status st = outputs(c);
    if (st != KVQ_OK) return st;
    if (!kvq_case_valid(c)) return KVQ_E_PARAM; /* the rule valid and the exact path disagree: a defect */
    ex = c->exp;
    ex->npat = np;
    memcpy(ex->bank, bank, (size_t)np * d * sizeof *bank);
    memcpy(ex->index, b->index, (size_t)b->nt * sizeof *b->index);
    memcpy(ex->resid, b->resid, (size_t)b->ne * sizeof *b->resid);
    memcpy(ex->codes, b->codes, (size_t)b->nc);
    memcpy(ex->scale, b->scale, (size_t)b->ng * sizeof *b->scale);
    memcpy(ex->zero, b->zero, (size_t)b->ng * sizeof *b->zero);
    c->flags = flags;
    return KVQ_OK;
}

kvq_status kvq_pkv_solve_key_flush(kvq_case *c)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint32_t R = p.residual, d = in->dim, np = in->npat, lim = kvq_pkv_bank_limit(&p);
    uint64_t room = in->room > np ? in->room : np, rd = (uint64_t)R * d, ng = 0, cb = 0;
    uint32_t flags = 0;
    float *bank;
    seqbuf b = { 0 };
    kvq_status st = KVQ_OK;
    vthr vt = { 0 };
    if (in->steps == 0u) return as_error(c, KVQ_E_SHAPE);
    if (kvq_pkv_params_ok(&p) && extent_ok(R, d)) {
        ng = rd / p.group;
        cb = rd * p.bits / 8u;
        if ((st = seq_alloc(&b, (uint64_t)in->steps * R, d, p.bits, p.group)) != KVQ_OK) return st;
    }
    if (room > (uint64_t)np + in->steps) room = (uint64_t)np + in->steps;
    bank = malloc((size_t)((room ? room : 1u) * (d ? d : 1u)) * sizeof *bank);
    if (bank == NULL) {
        seq_free(&b);
        return KVQ_E_NOMEM;
    }
    if (np) memcpy(bank, in->bank, (size_t)np * d * sizeof *bank);
    for (uint32_t f = 0; f < in->steps; f++) {
        const float *w = in->x + f * rd;
        uint32_t join, nb;
        xblock o;
        if (!kvq_pkv_params_ok(&p) || np > in->room) { st = KVQ_E_PARAM; break; }
        if (!extent_ok(R, d) || np == 0u || np > KVQ_PKV_MAX_PATTERNS) { st = KVQ_E_SHAPE; break; }
        if ((st = values2(w, rd, bank, (uint64_t)np * d)) != KVQ_OK) break;
        join = np < lim;                     /* [PKV-U-04] */
        if (join && np >= in->room) { st = KVQ_E_SHAPE; break; }
        if (join && (st = centre_into(bank, np, w, R, d)) != KVQ_OK) break;
        nb = join && p.update == KVQ_PKV_UPDATE_AFTER ? np + 1u : np; /* [PKV-U-03] */
        o = (xblock){ b.index + (uint64_t)f * R, NULL, NULL, b.resid + f * rd, NULL, b.codes + f * cb,
                      b.scale + f * ng, b.zero + f * ng, 0 };
        st = exact_block(&o, w, KVQ_PKV_KEY_DECODE, R, d, bank, nb, &p, &c->pol, &vt);
        if (st != KVQ_OK) break;
        flags |= o.flags;
        if (join) np++;
    }
    vthr_free(&vt);
    if (st == KVQ_OK) st = seq_finish(c, &b, bank, np, d, flags);
    else if (st != KVQ_E_NOMEM) st = as_error(c, st);
    free(bank);
    seq_free(&b);
    return st;
}

kvq_status kvq_pkv_solve_value_step(kvq_case *c)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint32_t R = p.residual, d = in->dim, np = in->npat, lim = kvq_pkv_bank_limit(&p);
    uint64_t room = in->room > np ? in->room : np, ng = 0, cb = 0, q = 0;
    uint32_t flags = 0;
    float *bank;
    seqbuf b = { 0 };
    kvq_status st = KVQ_OK;
    vthr vt = { 0 };
    if (in->steps == 0u) return as_error(c, KVQ_E_SHAPE);
    if (kvq_pkv_params_ok(&p) && d >= 1u && d % p.group == 0u && d <= KVQ_MAX_DIM) {
        ng = d / p.group;
        cb = (uint64_t)d * p.bits / 8u;
        if ((st = seq_alloc(&b, in->steps > R ? in->steps - R : 0u, d, p.bits, p.group)) != KVQ_OK) return st;
    }
    if (p.window >= 1u && room > (uint64_t)np + in->steps / p.window) room = (uint64_t)np + in->steps / p.window;
    bank = malloc((size_t)((room ? room : 1u) * (d ? d : 1u)) * sizeof *bank);
    if (bank == NULL) {
        seq_free(&b);
        return KVQ_E_NOMEM;
    }
    if (np) memcpy(bank, in->bank, (size_t)np * d * sizeof *bank);
    for (uint64_t s = 1; s <= in->steps; s++) {
        uint32_t held = s < (uint64_t)R + 1u ? (uint32_t)s : R + 1u, join, leave, first;
        const float *w = in->x + (s - held) * d;
        if (!kvq_pkv_params_ok(&p) || np > in->room) { st = KVQ_E_PARAM; break; }
        if (held == 0u || !extent_ok(held, d) || d % p.group != 0u) { st = KVQ_E_SHAPE; break; }
        leave = held == R + 1u;
        if (leave && (np == 0u || np > KVQ_PKV_MAX_PATTERNS)) { st = KVQ_E_SHAPE; break; }
        if ((st = values2(w, (uint64_t)held * d, bank, (uint64_t)np * d)) != KVQ_OK) break;
        join = s % p.window == 0u && np < lim; /* [PKV-U-04] */
        if (join && np >= in->room) { st = KVQ_E_SHAPE; break; }
        first = held > R ? held - R : 0u;    /* the R most recent values [PKV-U-05] */
        if (join && (st = centre_into(bank, np, w + (uint64_t)first * d, held - first, d)) != KVQ_OK) break;
        if (leave) {
            xblock o = { b.index + q, NULL, NULL, b.resid + q * d, NULL, b.codes + q * cb,
                         b.scale + q * ng, b.zero + q * ng, 0 };
            st = exact_block(&o, w, KVQ_PKV_VALUE, 1u, d, bank, join ? np + 1u : np, &p, &c->pol, &vt);
            if (st != KVQ_OK) break;
            flags |= o.flags;
            q++;
        }
        if (join) np++;
    }
    vthr_free(&vt);
    if (st == KVQ_OK) st = seq_finish(c, &b, bank, np, d, flags);
    else if (st != KVQ_E_NOMEM) st = as_error(c, st);
    free(bank);
    seq_free(&b);
    return st;
}

/* ---- generation [VEC-PKV-09] ------------------------------------------------------- */

static const char *const KINDS_SHORT[3] = { "key-prefill", "key-decode", "value" };

/* A case of op: inputs only for now (solve adds the outputs when the exact
 * path accepts them). */
static kvq_status begin(kvq_case *c, const kvq_op *op, const char *tag, uint64_t k, const char *what,
                        uint32_t level)
{
    if (kvq_case_begin(c, op) != KVQ_OK) return KVQ_E_NOMEM;
    c->level = level;
    c->pol = kvq_policy_default;
    snprintf(c->id, sizeof c->id, "pkv-%s-%05llu-%s", tag, (unsigned long long)k, what);
    return KVQ_OK;
}

static kvq_status alloc_inputs(kvq_case *c)
{
    c->status = KVQ_E_PARAM;
    return kvq_case_alloc(c);
}

static kvq_rng rng_of(uint64_t seed, uint64_t k)
{
    kvq_rng r = { seed ^ (0xC2B2AE3D27D4EB4Full * (k + 1u)) };
    (void)kvq_rng_next(&r);
    return r;
}

/* npat patterns of d, values in [-2, 2). */
static void fill_bank(float *b, uint32_t npat, uint32_t d, kvq_rng *r)
{
    for (uint64_t e = 0; e < (uint64_t)npat * d; e++) b[e] = 2.0f * kvq_rng_sym(r);
}

/* T tokens: most a pattern plus a per-token shift (which the min-max distance
 * does not see and the Euclidean one does) and noise of a per-token size;
 * every fourth one drawn apart from the bank. */
static void fill_near(float *x, uint32_t T, uint32_t d, const float *bank, uint32_t npat, kvq_rng *r)
{
    for (uint32_t t = 0; t < T; t++) {
        const float *m = bank + (uint64_t)kvq_rng_below(r, npat) * d;
        float shift = kvq_rng_sym(r), noise = 0.02f + 1.2f * kvq_rng_unit(r);
        int apart = kvq_rng_below(r, 4) == 0;
        for (uint32_t i = 0; i < d; i++)
            x[(uint64_t)t * d + i] = apart ? 2.0f * kvq_rng_sym(r) : m[i] + shift + noise * kvq_rng_sym(r);
    }
}

static void policy_draw(kvq_case *c, kvq_rng *r)
{
    if (kvq_rng_below(r, 8) == 0) c->pol.ties = KVQ_TIES_AWAY;
    if (kvq_rng_below(r, 8) == 0) c->pol.overflow = KVQ_OVERFLOW_NAN;
    if (kvq_rng_below(r, 8) == 0) c->pol.subnormal = KVQ_SUBNORMAL_DAZ;
}

/* -- pkv-kmeans -- */

static const struct { uint32_t M, L, d, iters; const char *name; } KM_SHAPES[] = {
    { 4, 64, 8, 30, "m4" },        { 1, 16, 4, 30, "m1" },      { 8, 8, 16, 30, "l-eq-m" },
    { 3, 40, 1, 30, "d1" },        { 5, 50, 8, 1, "iter1" },    { 4, 32, 8, 30, "identical" },
    { 32, 1024, 64, 30, "large" },
};
#define KM_SMOKE 5 /* the first shapes, both variants: 10 cases */

static kvq_status km_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    uint32_t s = j / 2u, K;
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "km-%s-%s", KM_SHAPES[s].name, j % 2u ? "random" : "spread");
    if (begin(c, &kvq_op_pkv_kmeans, tag, k, what, KVQ_LEVEL_BOUNDED) != KVQ_OK) return KVQ_E_NOMEM;
    c->variant = j % 2u;
    in = c->in;
    in->p.patterns = KM_SHAPES[s].M;
    in->p.max_iter = KM_SHAPES[s].iters;
    in->p.seed = (uint32_t)j;
    in->tokens = KM_SHAPES[s].L;
    in->dim = KM_SHAPES[s].d;
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    K = in->p.patterns + 1u;
    {
        float *cent = malloc((size_t)K * in->dim * sizeof *cent);
        if (cent == NULL) return KVQ_E_NOMEM;
        fill_bank(cent, K, in->dim, &r);
        for (uint32_t t = 0; t < in->tokens; t++) {
            const float *m = cent + (uint64_t)kvq_rng_below(&r, K) * in->dim;
            for (uint32_t i = 0; i < in->dim; i++)
                in->x[(uint64_t)t * in->dim + i] =
                    strcmp(KM_SHAPES[s].name, "identical") == 0 ? cent[i] : m[i] + 0.1f * kvq_rng_sym(&r);
        }
        free(cent);
    }
    return c->op->solve(c);
}

enum { KME_PATTERNS0, KME_ITER0, KME_ITER1001, KME_FEW, KME_NAN, KME_INF, KME_RANGE, KME_COUNT };
static const char *const KME_NAMES[KME_COUNT] = { "patterns0", "max-iter0", "max-iter1001", "l-lt-m", "nan",
                                                 "inf", "range" };

static kvq_status km_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "km-err-%s", KME_NAMES[j]);
    if (begin(c, &kvq_op_pkv_kmeans, tag, k, what, KVQ_LEVEL_BOUNDED) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.patterns = j == KME_PATTERNS0 ? 0u : j == KME_FEW ? 20u : 4u;
    in->p.max_iter = j == KME_ITER0 ? 0u : j == KME_ITER1001 ? 1001u : 30u;
    in->tokens = 16;
    in->dim = 4;
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint32_t e = 0; e < 64u; e++) in->x[e] = kvq_rng_sym(&r);
    if (j == KME_NAN) in->x[kvq_rng_below(&r, 64)] = NAN;
    if (j == KME_INF) in->x[kvq_rng_below(&r, 64)] = -INFINITY;
    if (j == KME_RANGE) in->x[kvq_rng_below(&r, 64)] = 0x1p49f;
    return c->op->solve(c);
}

/* -- pkv-quant -- */

static void q_shape(kvq_pkv_in *in, uint32_t kind, uint32_t G, uint32_t mult, uint32_t other)
{
    in->kind = kind;
    in->p.group = G;
    if (kind == KVQ_PKV_VALUE) {
        in->dim = G * mult;
        in->tokens = other;
    } else {
        in->tokens = G * mult;
        in->dim = other;
    }
}

static kvq_status q_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    static const uint32_t GS[3] = { 8, 16, 32 };
    kvq_rng r = rng_of(seed, k);
    uint32_t kind = j % 3u, level = (j / 6u) % 2u;
    kvq_pkv_in *in;
    char what[48];
    snprintf(what, sizeof what, "q-%s", KINDS_SHORT[kind]);
    if (begin(c, &kvq_op_pkv_quant, tag, k, what, level) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    c->variant = (j / 12u) % 2u;
    in->p.bits = (j / 3u) % 2u ? 4u : 2u;
    in->p.meta = level == KVQ_LEVEL_BOUNDED ? KVQ_META_F32 : (j / 24u) % 2u;
    in->p.v_threshold = j % 7u == 6u ? 0u : 1u;
    in->p.alpha = (j / 3u) % 3u;
    q_shape(in, kind, GS[kvq_rng_below(&r, 3)], 1u + kvq_rng_below(&r, 2),
            kind == KVQ_PKV_VALUE ? 1u + kvq_rng_below(&r, smoke ? 4 : 8) : 1u + kvq_rng_below(&r, smoke ? 12 : 40));
    in->npat = 1u + kvq_rng_below(&r, 12);
    policy_draw(c, &r);
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_bank(in->bank, in->npat, in->dim, &r);
    fill_near(in->x, in->tokens, in->dim, in->bank, in->npat, &r);
    return c->op->solve(c);
}

/* Constructed pkv-quant cases: each separates two readings of a sentence of
 * spec/pkv.md on every seed [VEC-PKV-08]. */
enum {
    QC_DUP_KD, QC_DUP_V, QC_DUP_EUCLID, QC_SHIFT_MM, QC_SHIFT_EUCLID, QC_SHIFT_V, QC_SHIFT_MM_B, QC_PIN_X, QC_PIN_B,
    QC_RHO_T_X, QC_RHO_T_B, QC_RHO_UP_X, QC_RHO_95_X, QC_RHO_95_B, QC_RHO_T_D8, QC_CONST_V, QC_NO_THR, QC_DEG_K,
    QC_DEG_V, QC_LARGE_K, QC_LARGE_BANK, QC_LARGE_V, QC_COUNT
};
#define QC_SMOKE QC_LARGE_K
static const char *const QC_NAMES[QC_COUNT] = {
    "tie-dup-key-decode", "tie-dup-value", "tie-dup-euclid", "shift-tie-minmax", "shift-tie-euclid",
    "shift-tie-value", "shift-tie-minmax", "pinned-vs-real", "pinned-vs-real", "rho-eq-t", "rho-eq-t",
    "rho-above-t", "rho-095", "rho-095", "rho-eq-t-d8", "constant-value", "no-threshold", "degenerate-key",
    "degenerate-value", "large-key", "large-bank", "large-value",
};

/* values whose pinned ratio rho is exactly rt (0 < rt < 1): v_0 = rt against
 * m_0 = 0 (residual rt), v_1 = 0 against 0 (residual 0), v_2 = 1 (range 1),
 * the other residuals strictly inside [0, rt]; a far second pattern
 * [PKV-V-01]. */
static void rho_tokens(kvq_pkv_in *in, float rt, kvq_rng *r)
{
    uint32_t d = in->dim;
    float *m = in->bank;
    m[0] = 0.0f;
    m[1] = 0.0f;
    m[2] = 1.0f - 0.5f * rt;
    for (uint32_t i = 3; i < d; i++) m[i] = 0.5f - 0.5f * rt;
    for (uint32_t i = 0; i < d; i++) in->bank[d + i] = 5.0f + 2.0f * kvq_rng_sym(r);
    for (uint32_t t = 0; t < in->tokens; t++) {
        float *v = in->x + (uint64_t)t * d;
        v[0] = rt;
        v[1] = 0.0f;
        v[2] = 1.0f;
        for (uint32_t i = 3; i < d; i++) v[i] = 0.5f + ((float)(16u + kvq_rng_below(r, 33)) / 64.0f - 0.5f) * rt;
    }
}

/* rho*'s binary32 t for the case (the exact path's bracket). */
static float t_of(uint32_t d, uint32_t alpha)
{
    vthr vt = { 0 };
    float t = vthr_get(&vt, d, alpha) == KVQ_OK ? vt.t : 0.0f;
    vthr_free(&vt);
    return t;
}

static kvq_status q_constructed(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    uint32_t level = j == QC_SHIFT_MM_B || j == QC_PIN_B || j == QC_RHO_T_B || j == QC_RHO_95_B || j == QC_DEG_V ||
                     j == QC_LARGE_V;
    kvq_pkv_in *in;
    char what[48];
    uint32_t d;
    (void)smoke;
    snprintf(what, sizeof what, "q-%s", QC_NAMES[j]);
    if (begin(c, &kvq_op_pkv_quant, tag, k, what, level) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = j % 2u ? 2u : 4u;
    in->p.meta = KVQ_META_F32;
    in->p.v_threshold = 1;
    in->p.alpha = KVQ_PKV_ALPHA_05;
    switch (j) {
    case QC_DUP_KD: q_shape(in, KVQ_PKV_KEY_DECODE, 8, 2, 12); in->npat = 6; break;
    case QC_DUP_V: q_shape(in, KVQ_PKV_VALUE, 16, 1, 6); in->npat = 6; break;
    case QC_DUP_EUCLID: q_shape(in, KVQ_PKV_KEY_PREFILL, 8, 1, 10); in->npat = 6; c->variant = 1; break;
    case QC_SHIFT_MM: case QC_SHIFT_MM_B: q_shape(in, KVQ_PKV_KEY_PREFILL, 8, 2, 16); in->npat = 4; break;
    case QC_SHIFT_EUCLID: q_shape(in, KVQ_PKV_KEY_PREFILL, 8, 2, 16); in->npat = 4; c->variant = 1; break;
    case QC_SHIFT_V: q_shape(in, KVQ_PKV_VALUE, 16, 1, 6); in->npat = 4; break;
    case QC_PIN_X: case QC_PIN_B: q_shape(in, KVQ_PKV_KEY_DECODE, 8, 1, 8); in->npat = 3; break;
    case QC_RHO_T_X: case QC_RHO_T_B: case QC_RHO_UP_X: case QC_RHO_95_X: case QC_RHO_95_B:
        q_shape(in, KVQ_PKV_VALUE, 128, 1, 4); in->npat = 2; break;
    case QC_RHO_T_D8: q_shape(in, KVQ_PKV_VALUE, 8, 1, 4); in->npat = 2; in->p.alpha = KVQ_PKV_ALPHA_01; break;
    case QC_CONST_V: q_shape(in, KVQ_PKV_VALUE, 8, 2, 5); in->npat = 3; break;
    case QC_NO_THR: q_shape(in, KVQ_PKV_VALUE, 8, 2, 8); in->npat = 5; in->p.v_threshold = 0; break;
    case QC_DEG_K: q_shape(in, KVQ_PKV_KEY_PREFILL, 8, 1, 8); in->npat = 1; break;
    case QC_DEG_V: q_shape(in, KVQ_PKV_VALUE, 8, 1, 1); in->npat = 1; break;
    case QC_LARGE_K: q_shape(in, KVQ_PKV_KEY_PREFILL, 128, 2, 128); in->npat = 64; break;
    case QC_LARGE_BANK: q_shape(in, KVQ_PKV_KEY_DECODE, 16, 1, 16); in->npat = 700; break;
    default: q_shape(in, KVQ_PKV_VALUE, 128, 2, 64); in->npat = 32; in->p.alpha = KVQ_PKV_ALPHA_10; break;
    }
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    d = in->dim;
    fill_bank(in->bank, in->npat, d, &r);
    fill_near(in->x, in->tokens, d, in->bank, in->npat, &r);
    switch (j) {
    case QC_DUP_KD: case QC_DUP_V: case QC_DUP_EUCLID:
        /* patterns 4 and 5 repeat 1 and 2: exact ties under both metrics; every
         * token near 1 or 2 [PKV-A-02] */
        memcpy(in->bank + 4u * d, in->bank + 1u * d, d * sizeof(float));
        memcpy(in->bank + 5u * d, in->bank + 2u * d, d * sizeof(float));
        for (uint32_t t = 0; t < in->tokens; t++)
            for (uint32_t i = 0; i < d; i++)
                in->x[(uint64_t)t * d + i] = in->bank[(1u + t % 2u) * d + i] + 0.05f * kvq_rng_sym(&r);
        break;
    case QC_SHIFT_MM: case QC_SHIFT_MM_B: case QC_SHIFT_EUCLID: case QC_SHIFT_V:
        /* pattern 0 = pattern 1 + 1/2, every value on the grid 2^-8 (all
         * differences exact): equal min-max distances, pattern 1 nearer in
         * the Euclidean sense [PKV-A-01..03] */
        for (uint32_t i = 0; i < d; i++) {
            in->bank[d + i] = (float)((int)kvq_rng_below(&r, 257) - 128) / 64.0f;
            in->bank[i] = in->bank[d + i] + 0.5f;
        }
        for (uint32_t t = 0; t < in->tokens; t++)
            for (uint32_t i = 0; i < d; i++)
                in->x[(uint64_t)t * d + i] = in->bank[d + i] + (float)((int)kvq_rng_below(&r, 51) - 25) / 256.0f;
        break;
    case QC_PIN_X: case QC_PIN_B:
        /* max coordinate 1 - 2^-31 against pattern 0, 1 - 2^-30 against
         * pattern 1: equal pinned distances (both round to 1), pattern 1
         * strictly nearer in exact arithmetic [PKV-A-01] [PKV-A-04] */
        for (uint32_t i = 0; i < d; i++) {
            in->bank[i] = i == 0 ? 0x1p-31f : 0.0f;
            in->bank[d + i] = i == 0 ? 0x1p-30f : 0.0f;
        }
        for (uint32_t t = 0; t < in->tokens; t++)
            for (uint32_t i = 0; i < d; i++)
                in->x[(uint64_t)t * d + i] = i == 0 ? 1.0f : i == 1 ? -1.0f : (float)((int)kvq_rng_below(&r, 31) - 15) / 16.0f;
        break;
    case QC_RHO_T_X: case QC_RHO_T_B: case QC_RHO_T_D8:
        rho_tokens(in, t_of(d, in->p.alpha), &r); /* rho = t: kept (rho <= t), not rho < t */
        break;
    case QC_RHO_UP_X:
        rho_tokens(in, nextafterf(t_of(d, in->p.alpha), 2.0f), &r); /* the next binary32 above t: raw */
        break;
    case QC_RHO_95_X: case QC_RHO_95_B:
        /* rho* is 0.9116 at d = 128, alpha 0.05; the printed 2 z / (sqrt(5) d)
         * would give 0.9919: 0.95 is raw only under sqrt(5 d) [PKV-V-02] */
        rho_tokens(in, 0.95f, &r);
        break;
    case QC_CONST_V:
        for (uint32_t t = 0; t < in->tokens; t++) {
            float v = kvq_rng_sym(&r);
            for (uint32_t i = 0; i < d; i++) in->x[(uint64_t)t * d + i] = v; /* range 0: raw [PKV-V-01] */
        }
        break;
    default: break;
    }
    return c->op->solve(c);
}

enum { QE_BITS, QE_GROUP, QE_ALPHA, QE_KIND, QE_VTHR, QE_RAGGED_T, QE_RAGGED_D, QE_NPAT0, QE_NAN_BANK, QE_INF_BANK,
       QE_NAN_X, QE_INF_X, QE_RANGE_X, QE_RANGE_BANK, QE_NPAT_BIG, QE_COUNT };
#define QE_SMOKE QE_NPAT_BIG
static const char *const QE_NAMES[QE_COUNT] = {
    "bits3", "group12", "alpha3", "kind3", "v-threshold2", "keys-ragged-tokens", "values-ragged-dim", "npat0",
    "nan-bank", "inf-bank", "nan-x", "inf-x", "range-x", "range-bank", "npat65536",
};

static kvq_status q_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    char what[48];
    uint64_t nx, nb;
    (void)smoke;
    snprintf(what, sizeof what, "q-err-%s", QE_NAMES[j]);
    if (begin(c, &kvq_op_pkv_quant, tag, k, what, j % 2u) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = j == QE_BITS ? 3u : 4u;
    in->p.meta = KVQ_META_F32;
    in->p.v_threshold = j == QE_VTHR ? 2u : 1u;
    in->p.alpha = j == QE_ALPHA ? 3u : 0u;
    q_shape(in, j == QE_RAGGED_D || j == QE_ALPHA ? KVQ_PKV_VALUE : KVQ_PKV_KEY_PREFILL, 8, 1, 8);
    if (j == QE_KIND) in->kind = 3;
    if (j == QE_GROUP) in->p.group = 12;
    if (j == QE_RAGGED_T) in->tokens = 12;
    if (j == QE_RAGGED_D) in->dim = 12;
    in->npat = j == QE_NPAT0 ? 0u : 3u;
    if (j == QE_NPAT_BIG) {
        in->npat = 65536;
        in->dim = 1;
    }
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    nx = (uint64_t)in->tokens * in->dim;
    nb = (uint64_t)in->npat * in->dim;
    fill_bank(in->bank, in->npat, in->dim, &r);
    for (uint64_t e = 0; e < nx; e++) in->x[e] = kvq_rng_sym(&r);
    if (j == QE_NAN_BANK) in->bank[kvq_rng_below(&r, (uint32_t)nb)] = NAN;
    if (j == QE_INF_BANK) in->bank[kvq_rng_below(&r, (uint32_t)nb)] = INFINITY;
    if (j == QE_NAN_X) in->x[kvq_rng_below(&r, (uint32_t)nx)] = NAN;
    if (j == QE_INF_X) in->x[kvq_rng_below(&r, (uint32_t)nx)] = -INFINITY;
    if (j == QE_RANGE_X) in->x[kvq_rng_below(&r, (uint32_t)nx)] = -0x1.000002p48f;
    if (j == QE_RANGE_BANK) in->bank[kvq_rng_below(&r, (uint32_t)nb)] = 0x1p60f;
    return c->op->solve(c);
}

/* -- pkv-dequant -- */

/* Stored data of a block: any codes, metadata and indices the exact path's
 * quantization of a drawn block gives, then indices redrawn among the valid
 * ones (a raw value among them). */
static kvq_status dq_fill(kvq_case *c, kvq_rng *r)
{
    kvq_pkv_in *in = c->in;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t n = (uint64_t)in->tokens * in->dim, nbytes = n * p.bits / 8u, ng = n / p.group;
    float *x = malloc((size_t)n * sizeof *x), *resid = malloc((size_t)n * sizeof *resid);
    uint16_t *ix = malloc((size_t)in->tokens * sizeof *ix);
    vthr vt = { 0 };
    kvq_status st = KVQ_E_NOMEM;
    if (x != NULL && resid != NULL && ix != NULL) {
        xblock o = { ix, NULL, NULL, resid, NULL, in->codes, in->scale, in->zero, 0 };
        fill_bank(in->bank, in->npat, in->dim, r);
        fill_near(x, in->tokens, in->dim, in->bank, in->npat, r);
        p.v_threshold = 1;
        st = exact_block(&o, x, in->kind, in->tokens, in->dim, in->bank, in->npat, &p, &c->pol, &vt);
        for (uint32_t t = 0; t < in->tokens; t++) {
            uint32_t pick = kvq_rng_below(r, in->npat + (in->kind == KVQ_PKV_VALUE));
            in->index[t] = (uint16_t)(pick < in->npat ? pick : KVQ_PKV_NO_PATTERN);
        }
        for (uint64_t b = 0; b < nbytes; b++)
            if (kvq_rng_below(r, 2)) in->codes[b] = (uint8_t)kvq_rng_below(r, 256);
        (void)ng;
    }
    vthr_free(&vt);
    free(x);
    free(resid);
    free(ix);
    return st;
}

static kvq_status dq_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    uint32_t kind = j % 3u;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "dq-%s", KINDS_SHORT[kind]);
    if (begin(c, &kvq_op_pkv_dequant, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = (j / 3u) % 2u ? 2u : 4u;
    in->p.meta = (j / 2u) % 2u;
    q_shape(in, kind, 8u << kvq_rng_below(&r, 2), 1u + kvq_rng_below(&r, 2), kind == KVQ_PKV_VALUE ? 3u : 10u);
    in->npat = 1u + kvq_rng_below(&r, 6);
    policy_draw(c, &r);
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (dq_fill(c, &r) == KVQ_E_NOMEM) return KVQ_E_NOMEM;
    return c->op->solve(c);
}

enum { DE_INDEX_KEY, DE_NOPAT_KEY, DE_INDEX_VALUE, DE_NAN_BANK, DE_RANGE_BANK, DE_NPAT0, DE_NAN_SCALE, DE_NEG_SCALE,
       DE_COUNT };
static const char *const DE_NAMES[DE_COUNT] = {
    "index-past-npat-key", "no-pattern-in-key-block", "index-past-npat-value", "nan-bank", "range-bank",
    "npat0", "nan-scale", "negative-scale",
};

static kvq_status dq_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "dq-err-%s", DE_NAMES[j]);
    if (begin(c, &kvq_op_pkv_dequant, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = 4;
    in->p.meta = KVQ_META_F32;
    q_shape(in, j == DE_INDEX_VALUE ? KVQ_PKV_VALUE : KVQ_PKV_KEY_DECODE, 8, 1, 8);
    in->npat = 3;
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (dq_fill(c, &r) == KVQ_E_NOMEM) return KVQ_E_NOMEM;
    switch (j) {
    case DE_INDEX_KEY: case DE_INDEX_VALUE: in->index[kvq_rng_below(&r, in->tokens)] = 3; break;
    case DE_NOPAT_KEY: in->index[kvq_rng_below(&r, in->tokens)] = KVQ_PKV_NO_PATTERN; break;
    case DE_NAN_BANK: in->bank[kvq_rng_below(&r, in->npat * in->dim)] = NAN; break;
    case DE_RANGE_BANK: in->bank[kvq_rng_below(&r, in->npat * in->dim)] = -0x1p50f; break;
    case DE_NPAT0: in->npat = 0; break; /* the bank's count rule reads npat: no values */
    case DE_NAN_SCALE: in->scale[0] = NAN; break;
    default: in->scale[0] = -in->scale[0] - 1.0f; break;
    }
    return c->op->solve(c);
}

/* -- pkv-key-flush -- */

static const struct { uint32_t G, R, d, flushes, npat, cap, extra; const char *name; } KF_CFG[] = {
    { 8, 8, 8, 3, 4, 0, 0, "r8" },          { 16, 32, 12, 2, 2, 0, 3, "r32" },
    { 8, 16, 4, 4, 3, 5, 0, "cap-reached" }, { 8, 8, 8, 3, 6, 4, 0, "over-cap" },
    { 128, 128, 64, 3, 32, 0, 0, "defaults" },
};
#define KF_SMOKE 8 /* the first four configurations, both variants */

/* keys near one fresh centre per flush, far from the prefill bank: the
 * window's own centre is its nearest pattern, so the order of [PKV-U-03]
 * shows */
static void kf_keys(kvq_pkv_in *in, uint32_t R, kvq_rng *r)
{
    for (uint32_t f = 0; f < in->steps; f++) {
        float off = 4.0f + 2.0f * kvq_rng_sym(r);
        for (uint32_t t = 0; t < R; t++)
            for (uint32_t i = 0; i < in->dim; i++)
                in->x[((uint64_t)f * R + t) * in->dim + i] = off + (float)i / (float)in->dim + 0.3f * kvq_rng_sym(r);
    }
}

static kvq_status kf_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    uint32_t s = j / 2u, lim;
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "kf-%s-%s", KF_CFG[s].name, j % 2u ? "before" : "after");
    if (begin(c, &kvq_op_pkv_key_flush, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    c->variant = j % 2u;
    in = c->in;
    in->p.bits = j % 3u == 2u ? 2u : 4u;
    in->p.group = KF_CFG[s].G;
    in->p.meta = j % 4u == 3u ? KVQ_META_F16 : KVQ_META_F32;
    in->p.residual = KF_CFG[s].R;
    in->p.cap = KF_CFG[s].cap;
    in->steps = KF_CFG[s].flushes;
    in->dim = KF_CFG[s].d;
    in->npat = KF_CFG[s].npat;
    lim = in->p.cap ? in->p.cap : KVQ_PKV_MAX_PATTERNS;
    in->room = in->npat + in->steps < lim ? in->npat + in->steps : lim;
    if (in->room < in->npat) in->room = in->npat;
    in->room += KF_CFG[s].extra;
    policy_draw(c, &r);
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_bank(in->bank, in->npat, in->dim, &r);
    kf_keys(in, in->p.residual, &r);
    return c->op->solve(c);
}

enum { KE_ROOM, KE_NAN, KE_NPAT_ROOM, KE_NPAT0, KE_BITS, KE_COUNT };
static const char *const KE_NAMES[KE_COUNT] = { "bank-full", "nan-flush2", "npat-over-room", "npat0", "bits3" };

static kvq_status kf_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "kf-err-%s", KE_NAMES[j]);
    if (begin(c, &kvq_op_pkv_key_flush, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = j == KE_BITS ? 3u : 4u;
    in->p.group = 8;
    in->p.meta = KVQ_META_F32;
    in->p.residual = 8;
    in->steps = 2;
    in->dim = 4;
    in->npat = j == KE_NPAT0 ? 0u : 3u;
    in->room = j == KE_ROOM ? 4u : j == KE_NPAT_ROOM ? 2u : 5u; /* bank-full: the second centre has no room */
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_bank(in->bank, in->npat, in->dim, &r);
    kf_keys(in, 8, &r);
    if (j == KE_NAN) in->x[8u * 4u + kvq_rng_below(&r, 32)] = NAN;
    return c->op->solve(c);
}

/* -- pkv-value-step -- */

static const struct { uint32_t G, R, W, d, steps, npat, cap, vthr; const char *name; } VS_CFG[] = {
    { 8, 8, 8, 8, 30, 3, 0, 1, "r8-w8" },        { 8, 16, 4, 16, 40, 2, 0, 1, "r16-w4" },
    { 16, 16, 20, 16, 60, 2, 0, 1, "window-past-r" }, { 8, 8, 3, 8, 25, 0, 0, 1, "empty-bank" },
    { 8, 8, 8, 8, 40, 3, 4, 1, "cap" },          { 8, 8, 5, 8, 20, 2, 0, 0, "no-threshold" },
    { 128, 128, 128, 128, 385, 32, 0, 1, "defaults" },
};
#define VS_SMOKE 6

/* a drifting stream: each value near a slowly moving level, so that later
 * centres are nearer than the prefill bank */
static void vs_values(kvq_pkv_in *in, kvq_rng *r)
{
    for (uint32_t s = 0; s < in->steps; s++) {
        float lvl = 3.0f + 0.05f * (float)s, sc = 0.2f + 1.5f * kvq_rng_unit(r);
        for (uint32_t i = 0; i < in->dim; i++)
            in->x[(uint64_t)s * in->dim + i] = lvl + (float)(i % 7u) * 0.25f + sc * kvq_rng_sym(r);
    }
}

static kvq_status vs_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    uint32_t lim;
    uint64_t fin;
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "vs-%s", VS_CFG[j].name);
    if (begin(c, &kvq_op_pkv_value_step, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = j % 2u ? 2u : 4u;
    in->p.group = VS_CFG[j].G;
    in->p.meta = j % 3u == 2u ? KVQ_META_F16 : KVQ_META_F32;
    in->p.residual = VS_CFG[j].R;
    in->p.window = VS_CFG[j].W;
    in->p.cap = VS_CFG[j].cap;
    in->p.v_threshold = VS_CFG[j].vthr;
    in->p.alpha = j % 3u;
    in->steps = VS_CFG[j].steps;
    in->dim = VS_CFG[j].d;
    in->npat = VS_CFG[j].npat;
    lim = in->p.cap ? in->p.cap : KVQ_PKV_MAX_PATTERNS;
    fin = (uint64_t)in->npat + in->steps / in->p.window;
    in->room = (uint32_t)(fin < lim ? fin : lim);
    if (in->room < in->npat) in->room = in->npat;
    policy_draw(c, &r);
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_bank(in->bank, in->npat, in->dim, &r);
    vs_values(in, &r);
    return c->op->solve(c);
}

enum { VE_ROOM, VE_NAN, VE_EMPTY, VE_ALPHA, VE_RANGE, VE_COUNT };
static const char *const VE_NAMES[VE_COUNT] = { "bank-full", "nan-step5", "empty-bank-leaving", "alpha3",
                                                "range-step3" };

static kvq_status vs_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r = rng_of(seed, k);
    kvq_pkv_in *in;
    char what[48];
    (void)smoke;
    snprintf(what, sizeof what, "vs-err-%s", VE_NAMES[j]);
    if (begin(c, &kvq_op_pkv_value_step, tag, k, what, KVQ_LEVEL_EXACT) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    in->p.bits = 4;
    in->p.group = 8;
    in->p.meta = KVQ_META_F32;
    in->p.residual = 8;
    in->p.window = j == VE_EMPTY ? 10u : 4u;
    in->p.v_threshold = 1;
    in->p.alpha = j == VE_ALPHA ? 3u : 0u;
    in->steps = 16;
    in->dim = 8;
    in->npat = j == VE_EMPTY ? 0u : 2u;
    in->room = j == VE_ROOM ? 4u : 6u; /* bank-full: the third centre has no room */
    if (alloc_inputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_bank(in->bank, in->npat, in->dim, &r);
    vs_values(in, &r);
    if (j == VE_NAN) in->x[4u * 8u + kvq_rng_below(&r, 8)] = NAN;
    if (j == VE_RANGE) in->x[2u * 8u + kvq_rng_below(&r, 8)] = 0x1p49f;
    return c->op->solve(c);
}

/* ---- the level sets ---------------------------------------------------------------- */

typedef kvq_status (*maker)(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke);
static const struct { maker fn; uint32_t smoke, standard; } RECIPES[] = {
    { km_regular, 2 * KM_SMOKE, 2 * KVQ_NELEMS(KM_SHAPES) }, { km_error, KME_COUNT, KME_COUNT },
    { q_regular, 12, 48 },                                   { q_constructed, QC_SMOKE, QC_COUNT },
    { q_error, QE_SMOKE, QE_COUNT },                          { dq_regular, 6, 12 },
    { dq_error, DE_COUNT, DE_COUNT },                         { kf_regular, KF_SMOKE, 2 * KVQ_NELEMS(KF_CFG) },
    { kf_error, KE_COUNT, KE_COUNT },                         { vs_regular, VS_SMOKE, KVQ_NELEMS(VS_CFG) },
    { vs_error, VE_COUNT, VE_COUNT },
};

uint64_t kvq_pkv_gen_count(const char *levels)
{
    int smoke = strcmp(levels, "smoke") == 0;
    uint64_t n = 0;
    if (!smoke && strcmp(levels, "standard") != 0) return 0;
    for (size_t i = 0; i < KVQ_NELEMS(RECIPES); i++) n += smoke ? RECIPES[i].smoke : RECIPES[i].standard;
    return n;
}

kvq_status kvq_pkv_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    uint64_t j = k;
    kvq_status st = KVQ_E_PARAM;
    for (size_t i = 0; i < KVQ_NELEMS(RECIPES); i++) {
        uint64_t n = smoke ? RECIPES[i].smoke : RECIPES[i].standard;
        if (j < n) {
            st = RECIPES[i].fn(c, tag, seed, k, (uint32_t)j, smoke);
            break;
        }
        j -= n;
    }
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
