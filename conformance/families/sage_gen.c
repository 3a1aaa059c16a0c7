/*
 * families/sage_gen.c -- deterministic SAGE conformance vectors (spec/vectors.md
 * [VEC-SAGE-06], [VEC-GEN-*]).
 *
 * Case k draws everything from its own generator, seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  The
 * ordinals: sage-qk cases, sage-p cases, sage-v cases, sage-ds cases, one
 * case of each error class of the bad-input table [SAGE-BAD-01], then the
 * sage-pv cases and one case of each of their error classes (appended, so
 * the earlier ordinals keep their cases), then the sage-attn cases and theirs.  The
 * parameters that matter for coverage cycle with k (role, bits, granularity,
 * rounding, tie rule and value distribution of sage-qk; format and overflow
 * rule of sage-p and sage-v); shapes and values are drawn.  Expected outputs
 * and statuses come from the exact path only (kvq_exact_sage.h); a lemma the
 * exact path reports as failed makes generation fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact_sage.h"
#include "kvq_rng.h"
#include "sage.h"

/* ---- solving with the exact path ------------------------------------------------- */

static kvq_status lemma_failed(const kvq_case *c, uint32_t lem)
{
    fprintf(stderr, "kvq gen: case %s: the exact path reports failed SAGE lemma bits 0x%02x\n", c->id,
            (unsigned)lem);
    return KVQ_E_FORMAT;
}

/* Bounds rounded outward to binary32: lo down, hi and the bound up. */
static void store_bounds(kvq_sage_attn_ref *rf, const kvq_sage_attn_bound *b, uint64_t n)
{
    for (uint64_t e = 0; e < n; e++) {
        float lo = (float)b[e].ref_lo, hi = (float)b[e].ref_hi, bd = (float)b[e].bound;
        if ((double)lo > b[e].ref_lo) lo = nextafterf(lo, -INFINITY);
        if ((double)hi < b[e].ref_hi) hi = nextafterf(hi, INFINITY);
        if ((double)bd < b[e].bound) bd = nextafterf(bd, INFINITY);
        rf->lo[e] = lo, rf->hi[e] = hi, rf->bound[e] = bd;
    }
}

/* sage-attn: the bound of every row [SAGE-ATT-07], rounded outward to binary32. */
static kvq_status solve_attn(kvq_case *c)
{
    const kvq_sage_in *in = c->in;
    const kvq_sage_attn *a = &in->attn;
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    if (!kvq_sage_attn_ok(a)) return KVQ_E_PARAM;
    const uint64_t n = (uint64_t)a->nq * a->dim;
    uint32_t *rows = malloc((size_t)a->nq * sizeof *rows);
    kvq_sage_attn_bound *b = malloc((size_t)n * sizeof *b);
    kvq_status st = rows && b ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) {
        for (uint32_t i = 0; i < a->nq; i++) rows[i] = i;
        st = kvq_exact_sage_attn_bound(b, in->x, in->qm, in->v, a, rows, a->nq, &cls);
    }
    if (st == KVQ_OK) store_bounds(c->ref, b, n);
    free(rows);
    free(b);
    return st;
}

/* sage-mha: the bound of every row of every head [SAGE-MHA-03], rounded
 * outward to binary32. */
static kvq_status solve_mha(kvq_case *c)
{
    const kvq_sage_in *in = c->in;
    const kvq_sage_attn *a = &in->attn;
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    if (!kvq_sage_attn_ok(a) || !kvq_sage_mha_ok(in->hq, in->hkv, in->in_fmt)) return KVQ_E_PARAM;
    const uint64_t n = (uint64_t)in->hq * a->nq * a->dim;
    kvq_sage_attn_bound *b = malloc((size_t)n * sizeof *b);
    kvq_status st = b ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_exact_sage_mha_bound(b, in->x, in->qm, in->v, a, in->hq, in->hkv, in->in_fmt, &cls);
    if (st == KVQ_OK) store_bounds(c->ref, b, n);
    free(b);
    return st;
}

/* The exact path's verdict and outputs; an error status drops the outputs. */
static kvq_status finish(kvq_case *c, kvq_status st, uint32_t lem, uint32_t flags)
{
    if (st == KVQ_E_NOMEM) return st;
    if (st != KVQ_OK) {
        kvq_case_drop_outputs(c);
        c->status = st;
        c->flags = 0;
        return KVQ_OK;
    }
    if (lem) return lemma_failed(c, lem);
    c->status = KVQ_OK;
    c->flags = flags;
    return KVQ_OK;
}

/* The solvers of the SAGE operations (kvq_op.solve [VER-REG-11]): each the
 * exact path's status on the case's inputs, and for status 0 its outputs. */
kvq_status kvq_sage_solve_qk(kvq_case *c)
{
    kvq_sage_in *in = c->in;
    kvq_sage_qk_out *ex = c->exp;
    uint32_t lem = 0, lem2 = 0, flags = 0;
    uint64_t n = (uint64_t)in->shape.tokens * in->shape.dim;
    float *xs = malloc((size_t)(n ? n : 1) * sizeof *xs);
    kvq_status st;
    if (xs == NULL) return KVQ_E_NOMEM;
    st = kvq_exact_sage_smooth(xs, ex->mean, &lem, in->x, &in->shape, in->seg);
    if (st == KVQ_OK)
        st = kvq_exact_sage_quantize_qk(ex->codes, ex->scale, &flags, &lem2, xs, &in->shape, &in->qk, &c->pol);
    free(xs);
    return finish(c, st, lem | lem2, flags);
}

kvq_status kvq_sage_solve_p(kvq_case *c)
{
    kvq_sage_in *in = c->in;
    kvq_sage_p_out *ex = c->exp;
    uint32_t lem = 0, flags = 0;
    kvq_status st = kvq_exact_sage_quantize_p(ex->codes, ex->rowsum, &flags, &lem, in->x, in->rows, in->cols,
                                              in->fmt, &c->pol);
    return finish(c, st, lem, flags);
}

kvq_status kvq_sage_solve_v(kvq_case *c)
{
    kvq_sage_in *in = c->in;
    kvq_sage_v_out *ex = c->exp;
    uint32_t lem = 0, flags = 0;
    kvq_status st = kvq_exact_sage_quantize_v(ex->codes, ex->scale, &flags, &lem, in->x, &in->shape, in->fmt,
                                              &c->pol);
    return finish(c, st, lem, flags);
}

kvq_status kvq_sage_solve_ds(kvq_case *c)
{
    kvq_sage_in *in = c->in;
    kvq_sage_ds_out *ex = c->exp;
    uint32_t lem = 0;
    kvq_status st = kvq_exact_sage_delta_s(ex->ds, &lem, in->qm, in->x, in->rows, &in->shape, in->tau);
    return finish(c, st, lem, 0);
}

kvq_status kvq_sage_solve_pv(kvq_case *c)
{
    kvq_sage_in *in = c->in;
    kvq_sage_pv_out *ex = c->exp;
    kvq_sage_pv_ref *rf = c->ref;
    kvq_status st = kvq_exact_sage_pv(ex->d, rf->lo, rf->hi, in->a, in->b, in->c, in->rows, in->n, in->fmt,
                                      in->model, in->buffer);
    return finish(c, st, 0, 0);
}

kvq_status kvq_sage_solve_attn(kvq_case *c)
{
    return finish(c, solve_attn(c), 0, 0);
}

kvq_status kvq_sage_solve_mha(kvq_case *c)
{
    return finish(c, solve_mha(c), 0, 0);
}

kvq_status kvq_sage_solve_dq(kvq_case *c)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_dq_out *ex = c->exp;
    return finish(c, kvq_exact_sage_dequantize_qk(ex->y, in->a, in->c, &in->shape, &in->qk), 0, 0);
}

/* A new case of op from (seed, k): its generator (one draw discarded), the
 * level, the default policy. */
static kvq_sage_in *begin(kvq_case *c, const kvq_op *op, kvq_rng *r, uint64_t seed, uint64_t k, uint64_t mul,
                          uint32_t level)
{
    r->s = seed ^ (mul * (k + 1u));
    if (kvq_case_begin(c, op) != KVQ_OK) return NULL;
    (void)kvq_rng_next(r);
    c->level = level;
    c->pol = kvq_policy_default;
    return c->in;
}

/* ---- sage-qk ----------------------------------------------------------------------- */

enum { D_UNIFORM, D_NORMALISH, D_TIES, D_ZERO_SLOT, D_CONSTANT, D_EXTREME, D_COUNT };
static const char *const DIST_NAMES[D_COUNT] = {
    "uniform", "normalish", "ties", "zero-slot", "constant", "extreme",
};

/* Q blocks (b_q, c_w) and K blocks b_k drawn from [SAGE-MAP-02]'s valid values;
 * the first of each is the default. */
static const uint32_t QB[5][2] = { { 128, 4 }, { 64, 2 }, { 32, 1 }, { 64, 4 }, { 32, 2 } };
static const uint32_t KB[3] = { 64, 32, 128 };

/* Paired tokens (2i, 2i+1 = -2i) on a coarse grid: every column, and every
 * segment of even length starting at an even token, sums to exactly 0, so the
 * smoothing means are +0 and the quantizer sees x itself.  With one element of
 * magnitude cmax*u per token every slot's maximum is cmax*u, its scale u
 * ([SAGE-Q-02]) and the half-integer multiples of u are exact ties
 * [SAGE-Q-03]. */
static void fill_paired(float *x, uint32_t n, uint32_t d, uint32_t cmax, int ties, kvq_rng *r)
{
    float u = ldexpf(1.0f, (int)kvq_rng_below(r, 21) - 10);
    for (uint32_t t = 0; t + 1u < n; t += 2u) {
        float *a = x + (size_t)t * d, *b = a + d;
        for (uint32_t c = 0; c < d; c++) {
            int32_t j = ties ? (int32_t)kvq_rng_below(r, 4u * cmax + 1u) - (int32_t)(2u * cmax)
                             : (int32_t)kvq_rng_below(r, 2001u) - 1000;
            a[c] = ties ? (float)j * (u / 2.0f) : (float)j * u;
        }
        if (ties) a[kvq_rng_below(r, d)] = (kvq_rng_below(r, 2) ? 1.0f : -1.0f) * (float)cmax * u;
        for (uint32_t c = 0; c < d; c++) b[c] = -a[c];
    }
}

static void fill_qk(kvq_sage_in *in, int dist, kvq_rng *r)
{
    uint32_t n = in->shape.tokens, d = in->shape.dim, cmax = kvq_sage_cmax(in->qk.bits);
    float *x = in->x;
    switch (dist) {
    case D_UNIFORM: case D_NORMALISH: {
        /* channel biases (K's channel-wise outliers, what smoothing removes) */
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 21) - 10);
        for (uint32_t c = 0; c < d; c++) {
            float bias = a * (kvq_rng_below(r, 8) == 0 ? 16.0f : 2.0f) * kvq_rng_sym(r);
            for (uint32_t t = 0; t < n; t++)
                x[(size_t)t * d + c] = bias + a * (dist == D_UNIFORM ? kvq_rng_sym(r)
                                                   : kvq_rng_sym(r) + kvq_rng_sym(r) + kvq_rng_sym(r));
        }
        break;
    }
    case D_TIES:
        fill_paired(x, n, d, cmax, 1, r);
        break;
    case D_ZERO_SLOT: {
        /* one slot all zero (+0 and -0), with the partners of its tokens */
        uint64_t s;
        fill_paired(x, n, d, cmax, 0, r);
        s = kvq_sage_scale_slot(&in->qk, kvq_rng_below(r, n));
        for (uint32_t t = 0; t < n; t++) {
            if (kvq_sage_scale_slot(&in->qk, t) != s && kvq_sage_scale_slot(&in->qk, t ^ 1u) != s) continue;
            for (uint32_t c = 0; c < d; c++) x[(size_t)t * d + c] = kvq_rng_below(r, 2) ? -0.0f : 0.0f;
        }
        break;
    }
    case D_CONSTANT: {
        /* every token the same row on a coarse grid: exact means, xs = +0 */
        float u = ldexpf(1.0f, (int)kvq_rng_below(r, 21) - 10);
        for (uint32_t c = 0; c < d; c++) x[c] = u * (float)((int32_t)kvq_rng_below(r, 511) - 255);
        for (uint32_t t = 1; t < n; t++) memcpy(x + (size_t)t * d, x, d * sizeof *x);
        break;
    }
    default: { /* D_EXTREME: values near the smoothing bound 2^48, or tiny ones
                  whose groups fall under the zero-range rule */
        int huge = (int)kvq_rng_below(r, 2);
        for (size_t e = 0; e < (size_t)n * d; e++)
            x[e] = huge ? ldexpf(kvq_rng_sym(r), 47 - (int)kvq_rng_below(r, 4))
                        : ldexpf(kvq_rng_sym(r), -120 - (int)kvq_rng_below(r, 20));
        break;
    }
    }
}

/* sage-qk case j.  Standard: j in mixed radix role (2) x bits (2) x gran (3)
 * x rounding (2) x distribution (6), 144 cases; the tie rule even except for
 * the warp granularity of paper-rounded cases, so every (role, bits) has a
 * ties case at each rule.  Smoke: role x distribution x bits, the rest drawn. */
static kvq_status make_qk(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r;
    int dist;
    uint32_t maxn = smoke ? 96u : 192u, b;
    kvq_sage_in *in = begin(c, &kvq_op_sage_qk, &r, seed, k, 0xA0761D6478BD642Full, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->qk.role = j % 2u;
    if (smoke) {
        dist = (int)((j / 2u) % D_COUNT);
        in->qk.bits = (j / 12u) % 2u ? 8u : 4u;
        in->qk.gran = kvq_rng_below(&r, 3);
        in->qk.rounding = kvq_rng_below(&r, 2);
        c->pol.ties = kvq_rng_below(&r, 2);
    } else {
        in->qk.bits = (j / 2u) % 2u ? 8u : 4u;
        in->qk.gran = (j / 4u) % 3u;
        in->qk.rounding = (j / 12u) % 2u;
        dist = (int)((j / 24u) % D_COUNT);
        c->pol.ties = in->qk.gran == KVQ_SAGE_GRAN_WARP ? KVQ_TIES_AWAY : KVQ_TIES_EVEN;
    }
    if (in->qk.role == KVQ_SAGE_ROLE_Q) {
        uint32_t q = kvq_rng_below(&r, 5);
        in->qk.block = QB[q][0];
        in->qk.warps = QB[q][1];
    } else {
        in->qk.block = KB[kvq_rng_below(&r, 3)];
        in->qk.warps = 1u;
    }
    b = in->qk.block;
    in->shape.dim = kvq_rng_below(&r, 2) ? 128u : 64u;
    in->shape.tokens = 1u + kvq_rng_below(&r, b * 5u / 2u < maxn ? b * 5u / 2u : maxn);
    if (dist == D_TIES || dist == D_ZERO_SLOT) in->shape.tokens += in->shape.tokens % 2u;
    /* K: one mean over all tokens [SAGE-SM-03]; Q: per_head or per_block [SAGE-SM-04] */
    in->seg = in->qk.role == KVQ_SAGE_ROLE_Q && kvq_rng_below(&r, 2) ? b : in->shape.tokens;
    if (kvq_rng_below(&r, 6) == 0) c->pol.overflow = KVQ_OVERFLOW_NAN;
    if (kvq_rng_below(&r, 6) == 0) c->pol.subnormal = KVQ_SUBNORMAL_DAZ;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-qk-%s", tag, (unsigned long long)k, DIST_NAMES[dist]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_qk(in, dist, &r);
    return c->op->solve(c);
}

/* ---- sage-p ------------------------------------------------------------------------- */

/* A tile of P~: most rows have maximum exactly 1 (exp(0), the row maximum
 * of the online softmax), the others lie below; some elements tiny (FP8
 * subnormal codes and zeros), some +0 or -0, some rows all +0 [SAGE-BAD-01]
 * row 14. */
static void fill_p(float *p, uint32_t rows, uint32_t cols, kvq_rng *r)
{
    for (uint32_t i = 0; i < rows; i++) {
        float *row = p + (size_t)i * cols;
        uint32_t kind = kvq_rng_below(r, 8);
        for (uint32_t j = 0; j < cols; j++) {
            uint32_t w = kvq_rng_below(r, 16);
            row[j] = kind == 0 ? 0.0f
                   : w == 0 ? (kvq_rng_below(r, 2) ? -0.0f : 0.0f)
                   : w < 4 ? ldexpf(kvq_rng_unit(r), -6 - (int)kvq_rng_below(r, 20))
                           : kvq_rng_unit(r);
        }
        if (kind >= 2) row[kvq_rng_below(r, cols)] = 1.0f;
    }
}

static kvq_status make_p(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_p, &r, seed, k, 0xE7037ED1A0B428DBull, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->fmt = j % 2u;
    c->pol.overflow = (j / 2u) % 2u;
    c->pol.ties = kvq_rng_below(&r, 2);
    in->rows = 1u + kvq_rng_below(&r, smoke ? 16 : 32);
    in->cols = 1u + kvq_rng_below(&r, smoke ? 64 : 128);
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-p-%s", tag, (unsigned long long)k, in->fmt ? "e5m2" : "e4m3");
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_p(in->x, in->rows, in->cols, &r);
    return c->op->solve(c);
}

/* ---- sage-v ------------------------------------------------------------------------- */

/* Channels of their own magnitudes (V's channel-wise outliers), some all
 * zero (+0 and -0), some so small that m/F < 2^-126 [SAGE-V-03]. */
static void fill_v(float *v, uint32_t n, uint32_t d, kvq_rng *r)
{
    for (uint32_t c = 0; c < d; c++) {
        uint32_t kind = kvq_rng_below(r, 16);
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 40) - 20);
        for (uint32_t t = 0; t < n; t++) {
            float *e = v + (size_t)t * d + c;
            if (kind == 0) *e = kvq_rng_below(r, 2) ? -0.0f : 0.0f;
            else if (kind == 1) *e = ldexpf(kvq_rng_sym(r), -118 - (int)kvq_rng_below(r, 20));
            else *e = a * kvq_rng_sym(r);
        }
    }
}

static kvq_status make_v(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_v, &r, seed, k, 0xC2B2AE3D27D4EB4Full, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->fmt = j % 2u;
    c->pol.overflow = (j / 2u) % 2u;
    c->pol.ties = kvq_rng_below(&r, 2);
    in->shape.dim = kvq_rng_below(&r, 2) ? 128u : 64u;
    in->shape.tokens = 1u + kvq_rng_below(&r, smoke ? 48 : 160);
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-v-%s", tag, (unsigned long long)k, in->fmt ? "e5m2" : "e4m3");
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_v(in->x, in->shape.tokens, in->shape.dim, &r);
    return c->op->solve(c);
}

/* ---- sage-ds ------------------------------------------------------------------------ */

static float default_tau(uint32_t d)
{
    return d == 64u ? 0.125f : 0x1.6a09e6p-4f; /* RN32(1/sqrt(d)) */
}

static kvq_status make_ds(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    kvq_rng r;
    float a, b;
    kvq_sage_in *in = begin(c, &kvq_op_sage_ds, &r, seed, k, 0x9FB21C651E98DF25ull, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->shape.dim = j % 2u ? 128u : 64u;
    in->shape.tokens = 1u + kvq_rng_below(&r, smoke ? 40 : 96);
    in->rows = (j / 2u) % 2u ? 1u + kvq_rng_below(&r, 4) : 1u; /* per_block or per_head */
    in->tau = kvq_rng_below(&r, 2) ? default_tau(in->shape.dim) : ldexpf(1.0f, -(int)kvq_rng_below(&r, 12));
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-ds", tag, (unsigned long long)k);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    a = ldexpf(1.0f, (int)kvq_rng_below(&r, 16) - 8);
    b = ldexpf(1.0f, (int)kvq_rng_below(&r, 16) - 8);
    for (uint64_t e = 0; e < (uint64_t)in->rows * in->shape.dim; e++) in->qm[e] = a * kvq_rng_sym(&r);
    for (uint64_t e = 0; e < (uint64_t)in->shape.tokens * in->shape.dim; e++) in->x[e] = b * kvq_rng_sym(&r);
    return c->op->solve(c);
}

/* ---- error cases [SAGE-BAD-01] ------------------------------------------------------------ */

enum {
    E_QK_NAN, E_QK_INF, E_QK_BIG, E_QK_DIM, E_QK_EMPTY, E_QK_BITS, E_QK_BLOCK, E_QK_SEG,
    E_P_NEG, E_P_BIG, E_P_NAN, E_P_INF, E_P_ROWS,
    E_V_NAN, E_V_NINF, E_V_DIM, E_V_EMPTY,
    E_DS_NAN, E_DS_TAU0, E_DS_TAUINF, E_DS_BIG, E_DS_ROWS, E_DS_DIM,
    E_COUNT
};
static const char *const ERR_NAMES[E_COUNT] = {
    "qk-nan", "qk-inf", "qk-above-2p48", "qk-dim96", "qk-empty", "qk-bits3", "qk-block100", "qk-seg0",
    "p-negative", "p-above-1", "p-nan", "p-inf", "p-rows0",
    "v-nan", "v-ninf", "v-dim32", "v-empty",
    "ds-nan", "ds-tau0", "ds-tau-inf", "ds-above-2p51", "ds-rows0", "ds-dim96",
};

static kvq_status make_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r;
    const kvq_op *op = which <= E_QK_SEG ? &kvq_op_sage_qk : which <= E_P_ROWS ? &kvq_op_sage_p
                     : which <= E_V_EMPTY ? &kvq_op_sage_v : &kvq_op_sage_ds;
    uint64_t n, nq;
    kvq_sage_in *in = begin(c, op, &r, seed, k, 0xD6E8FEB86659FD93ull, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->shape.tokens = 40u;
    in->shape.dim = 64u;
    in->qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 4u);
    in->qk.block = 64u;
    in->qk.warps = 2u;
    in->seg = in->shape.tokens;
    in->rows = 4u;
    in->cols = 24u;
    in->tau = default_tau(64u);
    switch (which) {
    case E_QK_DIM: case E_DS_DIM: in->shape.dim = 96u; break;
    case E_QK_EMPTY: case E_V_EMPTY: in->shape.tokens = 0u; break;
    case E_QK_BITS: in->qk.bits = 3u; break;
    case E_QK_BLOCK: in->qk.block = 100u; break;
    case E_QK_SEG: in->seg = 0u; break;
    case E_P_ROWS: in->rows = 0u; break;
    case E_V_DIM: in->shape.dim = 32u; break;
    case E_DS_TAU0: in->tau = 0.0f; break;
    case E_DS_TAUINF: in->tau = INFINITY; break;
    case E_DS_ROWS: in->rows = 0u; break;
    default: break;
    }
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-err-%s", tag, (unsigned long long)k, ERR_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    n = op == &kvq_op_sage_p ? (uint64_t)in->rows * in->cols : (uint64_t)in->shape.tokens * in->shape.dim;
    nq = op == &kvq_op_sage_ds ? (uint64_t)in->rows * in->shape.dim : 0u;
    for (uint64_t e = 0; e < n; e++) in->x[e] = op == &kvq_op_sage_p ? kvq_rng_unit(&r) : kvq_rng_sym(&r);
    for (uint64_t e = 0; e < nq; e++) in->qm[e] = kvq_rng_sym(&r);
    if (n) {
        uint64_t at = kvq_rng_next(&r) % n;
        switch (which) {
        case E_QK_NAN: case E_P_NAN: case E_V_NAN: in->x[at] = NAN; break;
        case E_QK_INF: case E_P_INF: in->x[at] = INFINITY; break;
        case E_V_NINF: in->x[at] = -INFINITY; break;
        case E_QK_BIG: in->x[at] = 0x1p49f; break;
        case E_P_NEG: in->x[at] = -0.25f; break;
        case E_P_BIG: in->x[at] = 1.5f; break;
        case E_DS_BIG: in->x[at] = 0x1p52f; break;
        default: break;
        }
    }
    if (which == E_DS_NAN && nq) in->qm[kvq_rng_next(&r) % nq] = NAN;
    return c->op->solve(c);
}

/* ---- sage-pv [SAGE-ACC-07] ---------------------------------------------------------------- */

enum { PV_PROW, PV_UNIFORM, PV_CANCEL, PV_COUNT };
static const char *const PV_NAMES[PV_COUNT] = { "prow", "uniform", "cancel" };

static uint8_t finite_code(uint32_t fmt, kvq_rng *r)
{
    uint8_t v;
    do v = (uint8_t)kvq_rng_below(r, 256); while (fmt ? (v & 0x7Fu) >= 0x7Cu : (v & 0x7Fu) == 0x7Fu);
    return v;
}

/* P~-like rows (codes of F p, p over 2^-14 .. 1 or 0) with V-like codes of
 * either sign; uniform finite codes; or pairs whose products cancel up to the
 * last bits (the alignment and the cut decide the result). */
static void fill_pv(kvq_sage_in *in, int dist, kvq_rng *r)
{
    const uint32_t fmt = in->fmt;
    for (uint64_t e = 0; e < (uint64_t)in->rows * in->n; e++) {
        uint8_t *a = in->a + e, *b = in->b + e;
        if (dist == PV_PROW) {
            const float p = kvq_rng_below(r, 8) == 0 ? 0.0f : ldexpf(1.0f + kvq_rng_unit(r), -(int)kvq_rng_below(r, 15));
            uint32_t fl = 0;
            *a = fmt ? kvq_fp8_e5m2_from_f32(p * 57344.0f, 0u, &fl) : kvq_fp8_e4m3_from_f32(p * 448.0f, 0u, &fl);
            *b = finite_code(fmt, r);
        } else if (dist == PV_CANCEL && e % 2u == 1u) {
            *a = a[-1];
            *b = (uint8_t)(b[-1] ^ 0x80u ^ (kvq_rng_below(r, 4) == 0 ? 1u : 0u));
            if (fmt ? (*b & 0x7Fu) >= 0x7Cu : (*b & 0x7Fu) == 0x7Fu) *b = (uint8_t)(b[-1] ^ 0x80u);
        } else {
            *a = finite_code(fmt, r);
            *b = finite_code(fmt, r);
        }
    }
    for (uint32_t i = 0; i < in->rows; i++)
        in->c[i] = kvq_rng_below(r, 3) == 0 ? 0.0f : ldexpf(kvq_rng_sym(r), (int)kvq_rng_below(r, 40) - 20);
}

/* sage-pv case j: format, model, buffer policy and level cycle with j; the
 * distribution and the length (one instruction, or up to 640 products) are
 * drawn. */
static kvq_status make_pv(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    static const uint32_t BUF[3] = { 128u, 64u, 0u };
    kvq_rng r;
    int dist;
    kvq_sage_in *in = begin(c, &kvq_op_sage_pv, &r, seed, k, 0x8EBC6AF09C88C6E3ull,
                            (j / 3u + j / 12u) % 2u ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->fmt = j % 2u;
    in->model = (j / 2u) % 2u;
    in->buffer = BUF[(j / 4u) % 3u];
    dist = (int)((j + j / 24u) % PV_COUNT);
    in->rows = 1u + kvq_rng_below(&r, smoke ? 4 : 8);
    in->n = kvq_rng_below(&r, 4) == 0 ? 32u : 1u + kvq_rng_below(&r, smoke ? 320 : 640);
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-pv-%s", tag, (unsigned long long)k, PV_NAMES[dist]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_pv(in, dist, &r);
    return c->op->solve(c);
}

enum { PE_NAN, PE_CINF, PE_E5M2_INF, PE_BUFFER, PE_ROWS, PE_COUNT };
static const char *const PE_NAMES[PE_COUNT] = {
    "pv-nan-code", "pv-c-inf", "pv-e5m2-inf", "pv-buffer96", "pv-rows0",
};

static kvq_status make_pv_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_pv, &r, seed, k, 0xA24BAED4963EE407ull, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    in->fmt = which == PE_E5M2_INF ? KVQ_SAGE_FP8_E5M2 : KVQ_SAGE_FP8_E4M3;
    in->model = KVQ_SAGE_PV_WGMMA;
    in->buffer = which == PE_BUFFER ? 96u : 128u;
    in->rows = which == PE_ROWS ? 0u : 2u;
    in->n = 40u;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-err-%s", tag, (unsigned long long)k, PE_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (in->rows) {
        fill_pv(in, PV_UNIFORM, &r);
        const uint64_t at = kvq_rng_next(&r) % ((uint64_t)in->rows * in->n);
        if (which == PE_NAN) in->b[at] = kvq_rng_below(&r, 2) ? 0x7Fu : 0xFFu;
        if (which == PE_E5M2_INF) in->a[at] = kvq_rng_below(&r, 2) ? 0x7Cu : 0xFCu;
        if (which == PE_CINF) in->c[kvq_rng_below(&r, in->rows)] = -INFINITY;
    }
    return c->op->solve(c);
}

/* ---- sage-attn [SAGE-ATT-01..07] ---------------------------------------------------------- */

enum { AT_GAUSS, AT_SINK, AT_SMALL, AT_TREND, AT_QMEAN, AT_HUGE, AT_COUNT };
static const char *const AT_NAMES[AT_COUNT] = { "gauss", "sink", "small", "trend", "qmean", "huge" };

typedef struct attn_shape {
    uint32_t nq, nk, causal, buffer, bits, dist;
} attn_shape;

/* Partial blocks, causal rows with no key (nq > nk), q_len = 1, the three
 * buffers, INT4, and inputs that exercise each stage: an attention sink,
 * tiny values, scores that move the running maximum every block, a large Q
 * mean (dS carries the score), large activations. */
static const attn_shape AT_STD[] = {
    { 64, 64, 0, 128, 8, AT_GAUSS },  { 130, 130, 1, 128, 8, AT_GAUSS }, { 1, 257, 0, 64, 8, AT_SINK },
    { 200, 77, 1, 0, 8, AT_SINK },    { 77, 200, 1, 64, 8, AT_SMALL },   { 64, 384, 0, 128, 8, AT_TREND },
    { 48, 320, 0, 0, 8, AT_TREND },   { 130, 100, 0, 128, 8, AT_QMEAN }, { 96, 96, 0, 128, 4, AT_GAUSS },
    { 1, 130, 1, 64, 4, AT_SINK },    { 100, 100, 1, 128, 8, AT_HUGE },  { 33, 65, 0, 64, 8, AT_QMEAN },
};
static const attn_shape AT_SMOKE[] = {
    { 64, 64, 0, 128, 8, AT_GAUSS }, { 1, 257, 0, 64, 8, AT_SINK }, { 40, 200, 0, 128, 8, AT_TREND },
    { 130, 100, 0, 128, 8, AT_QMEAN },
};

static float sum3(kvq_rng *r)
{
    return kvq_rng_sym(r) + kvq_rng_sym(r) + kvq_rng_sym(r);
}

static void fill_qkv(float *q, float *k, float *v, uint32_t nq, uint32_t nk, uint32_t dist, kvq_rng *r)
{
    const uint32_t d = 128u;
    const float sc = dist == AT_SMALL ? 0x1p-20f : dist == AT_HUGE ? 40.0f : 1.0f;
    for (uint64_t e = 0; e < (uint64_t)nq * d; e++) q[e] = sc * sum3(r);
    for (uint64_t e = 0; e < (uint64_t)nk * d; e++) {
        k[e] = (dist == AT_SMALL ? 1.0f : sc) * sum3(r);
        v[e] = sc * sum3(r);
    }
    if (dist == AT_SINK) {                       /* outlier channels; key 0 aligned with the queries */
        for (uint32_t c = 0; c < d; c += 37u) {
            for (uint32_t n = 0; n < nq; n++) q[(uint64_t)n * d + c] *= 30.0f;
            for (uint32_t n = 0; n < nk; n++) k[(uint64_t)n * d + c] *= 30.0f;
        }
        for (uint32_t c = 0; c < d; c++) k[c] = 4.0f * fabsf(k[c]) * (q[c] >= 0 ? 1.0f : -1.0f);
    } else if (dist == AT_TREND) {               /* the maximum moves every block */
        for (uint32_t n = 0; n < nq; n++) q[(uint64_t)n * d] = 8.0f;
        for (uint32_t n = 0; n < nk; n++) k[(uint64_t)n * d] = 0.05f * (float)n;
    } else if (dist == AT_QMEAN) {               /* dS carries most of the score */
        for (uint64_t e = 0; e < (uint64_t)nq * d; e++) q[e] += 3.0f;
        for (uint32_t n = 0; n < nk; n++)
            for (uint32_t c = 0; c < d; c++) k[(uint64_t)n * d + c] += (c % 2u ? 1.0f : -1.0f) * (float)(n % 7u);
    } else if (dist == AT_HUGE) {                /* V's channel outliers up to 1e5 */
        for (uint32_t c = 0; c < d; c += 41u)
            for (uint32_t n = 0; n < nk; n++) v[(uint64_t)n * d + c] *= 1000.0f;
    }
}

static void fill_attn(kvq_sage_in *in, uint32_t dist, kvq_rng *r)
{
    fill_qkv(in->x, in->qm, in->v, in->attn.nq, in->attn.nk, dist, r);
}

static kvq_status make_attn(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    const attn_shape *sh = smoke ? &AT_SMOKE[j] : &AT_STD[j];
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_attn, &r, seed, k, 0xE1D9A57C4B1F3D27ull, KVQ_LEVEL_BOUNDED);
    if (in == NULL) return KVQ_E_NOMEM;
    in->attn = (kvq_sage_attn){ sh->nq, sh->nk, 128u, 0x1.6a09e6p-4f, sh->causal, sh->buffer, sh->bits };
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-attn-%s", tag, (unsigned long long)k, AT_NAMES[sh->dist]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_attn(in, sh->dist, &r);
    return c->op->solve(c);
}

enum { AE_NAN, AE_DIM, AE_BUFFER, AE_BIG, AE_TAU0, AE_COUNT };
static const char *const AE_NAMES[AE_COUNT] = { "attn-nan", "attn-dim64", "attn-buffer96", "attn-above-2p48",
                                                "attn-tau0" };

static kvq_status make_attn_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_attn, &r, seed, k, 0xB5AD4ECEDA1CE2A9ull, KVQ_LEVEL_BOUNDED);
    if (in == NULL) return KVQ_E_NOMEM;
    in->attn = (kvq_sage_attn){ 40u, 72u, 128u, 0x1.6a09e6p-4f, 0u, 128u, 8u };
    if (which == AE_DIM) in->attn.dim = 64u;
    if (which == AE_BUFFER) in->attn.buffer = 96u;
    if (which == AE_TAU0) in->attn.tau = 0.0f;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-err-%s", tag, (unsigned long long)k, AE_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_attn(in, AT_GAUSS, &r);
    if (which == AE_NAN) in->v[kvq_rng_next(&r) % ((uint64_t)in->attn.nk * 128u)] = NAN;
    if (which == AE_BIG) in->qm[kvq_rng_next(&r) % ((uint64_t)in->attn.nk * 128u)] = 0x1p49f;
    return c->op->solve(c);
}

/* ---- the separating cases [VEC-SAGE-11] ---------------------------------------------------- */

/* Each case holds a value class on which a reading the text once left open
 * gives a result other than the pinned one; appended after every other case
 * of the level set, so no earlier ordinal moves.  The same cases in both sets. */
enum {
    G_QK_NEGZERO, G_P_NEGZERO, G_DS_NEGZERO, G_V_NEGZERO, G_P_MID_E4M3, G_P_MID_E5M2, G_V_MID_E4M3,
    G_V_MID_E5M2, G_QK_HALF_Q4, G_QK_HALF_K8, G_ATTN_KOFFSET, G_PV_SUB_E4M3, G_PV_SUB_E5M2, G_PV_NEGZERO,
    G_PV_ADV_E4M3, G_PV_ADV_E5M2, G_COUNT
};

/* E4M3 or E5M2 value of magnitude (1 + f) 2^e on the format's grid, as binary32. */
static float fp8_value(uint32_t fmt, uint32_t mant, int e)
{
    return ldexpf((float)((fmt ? 4u : 8u) + mant), e - (fmt ? 2 : 3));
}

/* A random FP8 midpoint (exact in binary32) of magnitude in [2^lo, 2^hi],
 * or one between two subnormals: half a unit above a code of the format. */
static float fp8_midpoint(uint32_t fmt, int lo, int hi, kvq_rng *r)
{
    const uint32_t mb = fmt ? 2u : 3u;
    if (kvq_rng_below(r, 4) == 0) /* between subnormals k 2^-9 (E4M3) or k 2^-16 (E5M2) */
        return ldexpf((float)(2u * kvq_rng_below(r, 1u << mb) + 1u), fmt ? -17 : -10);
    const int e = lo + (int)kvq_rng_below(r, (uint32_t)(hi - lo + 1));
    const uint32_t m = kvq_rng_below(r, (1u << mb) - (e == hi ? 1u : 0u));
    return ldexpf((float)(2u * ((1u << mb) + m) + 1u), e - (int)mb - 1);
}

/* A p in [0, 1] with RN32(p F) = t (t <= F): t / F or a neighbour. */
static float p_for(float t, float F)
{
    float p = t / F;
    for (int i = 0; i < 8 && p * F != t; i++) p = p * F < t ? nextafterf(p, 2.0f) : nextafterf(p, 0.0f);
    return p > 1.0f ? 1.0f : p;
}

static kvq_status make_gap_qk(kvq_case *c, kvq_sage_in *in, kvq_rng *r, uint32_t which)
{
    const uint32_t n = in->shape.tokens, d = in->shape.dim;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (which == G_QK_NEGZERO) {
        /* K, one mean over all tokens: channels of -0 only (the mean is the
         * sum -0 divided by N: -0 [SAGE-SM-01]), of +0 and -0 (+0), and of
         * values (one a -0) */
        for (uint32_t ch = 0; ch < d; ch++) {
            const uint32_t kind = ch % 4u;
            for (uint32_t t = 0; t < n; t++)
                in->x[(size_t)t * d + ch] = kind == 0u ? -0.0f
                                         : kind == 1u ? (kvq_rng_below(r, 2) ? -0.0f : 0.0f)
                                         : t == ch % n ? -0.0f : kvq_rng_sym(r);
        }
        in->x[d + 1u] = 0.0f; /* channel 1 holds a +0 */
        return c->op->solve(c);
    }
    /* [SAGE-Q-05]'s example: paired tokens (means +0, so the quantizer sees
     * x), every slot's maximum 2 cmax (s0 = 2, s = RN32(2 + 1e-7) = 2), and
     * elements +-(1 - 2^-24), whose quotient q = +-(0.5 - 2^-25) gives t =
     * RN32(q +- 0.5) = +-1, code +-1, where the real round half away of q is 0 */
    const float cm = (float)kvq_sage_cmax(in->qk.bits);
    for (uint32_t t = 0; t + 1u < n; t += 2u) {
        float *a = in->x + (size_t)t * d, *b = a + d;
        for (uint32_t ch = 0; ch < d; ch++) {
            const uint32_t kind = kvq_rng_below(r, 4);
            const float sg = kvq_rng_below(r, 2) ? -1.0f : 1.0f;
            a[ch] = kind < 2u ? sg * (1.0f - 0x1p-24f) : kind == 2u ? sg * 0.5f * kvq_rng_unit(r)
                                                                    : sg * (float)kvq_rng_below(r, 2u * (uint32_t)cm);
        }
        a[kvq_rng_below(r, d)] = (kvq_rng_below(r, 2) ? -2.0f : 2.0f) * cm;
        for (uint32_t ch = 0; ch < d; ch++) b[ch] = -a[ch];
    }
    return c->op->solve(c);
}

static void fill_gap_attn(kvq_sage_in *in, kvq_rng *r)
{
    /* a large common offset in K (2^19, one sign a channel) and a common Q
     * offset: smoothing removes the first, dS carries the second; the score
     * q_m . K alone, without smoothing, would be near 2^27 */
    const uint32_t d = 128u, nq = in->attn.nq, nk = in->attn.nk;
    float off[128];
    for (uint32_t ch = 0; ch < d; ch++) off[ch] = (ch % 3u ? 0x1p19f : -0x1p19f);
    for (uint64_t e = 0; e < (uint64_t)nq * d; e++) in->x[e] = sum3(r) + (e % d % 3u ? 2.0f : -2.0f);
    for (uint64_t e = 0; e < (uint64_t)nk * d; e++) {
        in->qm[e] = off[e % d] + sum3(r);
        in->v[e] = sum3(r);
    }
}

/* sage-pv rows for the operand alignment of subnormal FP8 operands: every A
 * code a subnormal (or a zero), B codes over the whole exponent range, C
 * with bits down to the cut of both readings of emin. */
static void fill_pv_subnormal(kvq_sage_in *in, kvq_rng *r)
{
    const uint32_t fmt = in->fmt, mb = fmt ? 2u : 3u;
    for (uint64_t e = 0; e < (uint64_t)in->rows * in->n; e++) {
        const uint32_t w = kvq_rng_below(r, 8);
        in->a[e] = (uint8_t)(kvq_rng_below(r, 2) * 0x80u + (w == 0u ? 0u : w < 5u ? 1u : kvq_rng_below(r, 1u << mb)));
        in->b[e] = finite_code(fmt, r);
    }
    for (uint32_t i = 0; i < in->rows; i++)
        in->c[i] = ldexpf(1.0f + kvq_rng_unit(r), (fmt ? -22 : -10) + (int)kvq_rng_below(r, 16)) *
                   (kvq_rng_below(r, 2) ? -1.0f : 1.0f);
}

/* sage-pv rows of zero steps, each +0 [SAGE-ACC-01]: C = -0, +0 or a negative
 * C below the step's cut, with every product a zero of one sign or of both
 * (rows 0 and 1 mod 4: every term negative or -0) */
static void fill_pv_negzero(kvq_sage_in *in, kvq_rng *r)
{
    for (uint32_t i = 0; i < in->rows; i++) {
        const uint32_t kind = i % 4u;
        for (uint32_t k = 0; k < in->n; k++) {
            const uint64_t e = (uint64_t)i * in->n + k;
            const uint8_t v = (uint8_t)(1u + kvq_rng_below(r, 0x70u));
            /* kinds 0, 1: every product -0 (a +0 with a negative V code, or a -0 with a positive one) */
            in->a[e] = kind < 2u || kvq_rng_below(r, 2) ? (kvq_rng_below(r, 2) ? 0x80u : 0x00u) : 0x00u;
            in->b[e] = kind < 2u ? (uint8_t)(v | ((in->a[e] & 0x80u) ^ 0x80u)) : (uint8_t)(v | (kvq_rng_below(r, 2) * 0x80u));
            if (kind == 3u) in->a[e] = 0x00u, in->b[e] = (uint8_t)(v | 0x80u);
        }
        in->c[i] = kind == 0u ? -0.0f : kind == 1u ? -0x1p-140f : kind == 2u ? -0.0f : 0.0f;
    }
}

/* sage-pv rows that lose the most a coarser accumulator can: C = (1 + f) 2^E
 * sets the alignment, and every product, of C's sign, has its low bits set
 * just below the class's cut 2^(E - 13) (E4M3 1.101 x 1.011 = 143 2^(E - 16),
 * E5M2 1.11 x 1.01 = 35 2^(E - 14)): a K(13, 14) step loses less than 2^(E - 13)
 * a product, one that cuts at 2^(E - 12) loses almost twice that on each. */
static void fill_pv_adversarial(kvq_sage_in *in, kvq_rng *r)
{
    const uint32_t fmt = in->fmt;
    for (uint32_t i = 0; i < in->rows; i++) {
        /* the product's last bit at 2^(E - 16) (E4M3) or 2^(E - 14): ea + eb = E - 10 */
        const int E = fmt ? -8 + (int)kvq_rng_below(r, 17) : -2 + (int)kvq_rng_below(r, 9);
        const int ea = (E - 10) / 2, eb = E - 10 - ea;
        const uint32_t neg = kvq_rng_below(r, 2);
        uint32_t fl = 0;
        const float av = fp8_value(fmt, fmt ? 3u : 5u, ea), bv = fp8_value(fmt, fmt ? 1u : 3u, eb);
        const uint8_t ac = fmt ? kvq_fp8_e5m2_from_f32(av, 0u, &fl) : kvq_fp8_e4m3_from_f32(av, 0u, &fl);
        const uint8_t bc = fmt ? kvq_fp8_e5m2_from_f32(bv, 0u, &fl) : kvq_fp8_e4m3_from_f32(bv, 0u, &fl);
        for (uint32_t k = 0; k < in->n; k++) {
            in->a[(uint64_t)i * in->n + k] = ac;
            in->b[(uint64_t)i * in->n + k] = (uint8_t)(bc | (neg ? 0x80u : 0u));
        }
        in->c[i] = ldexpf(1.0f + 0x1p-4f * kvq_rng_unit(r), E) * (neg ? -1.0f : 1.0f);
    }
}

static kvq_status make_gap(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    static const char *const NAMES[G_COUNT] = {
        "qk-negzero", "p-negzero-e4m3", "ds-negzero", "v-negzero-e4m3", "p-midpoint-e4m3", "p-midpoint-e5m2",
        "v-midpoint-e4m3", "v-midpoint-e5m2", "qk-public-half", "qk-public-half", "attn-koffset", "pv-subnormal",
        "pv-subnormal", "pv-negzero", "pv-adversarial", "pv-adversarial",
    };
    static const kvq_op *const OPS[G_COUNT] = {
        &kvq_op_sage_qk, &kvq_op_sage_p, &kvq_op_sage_ds, &kvq_op_sage_v, &kvq_op_sage_p, &kvq_op_sage_p,
        &kvq_op_sage_v, &kvq_op_sage_v, &kvq_op_sage_qk, &kvq_op_sage_qk, &kvq_op_sage_attn, &kvq_op_sage_pv,
        &kvq_op_sage_pv, &kvq_op_sage_pv, &kvq_op_sage_pv, &kvq_op_sage_pv,
    };
    kvq_rng r;
    const int pv_bounded = which == G_PV_ADV_E4M3 || which == G_PV_ADV_E5M2;
    kvq_sage_in *in = begin(c, OPS[which], &r, seed, k, 0x94D049BB133111EBull,
                            which == G_ATTN_KOFFSET || pv_bounded ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-%s", tag, (unsigned long long)k, NAMES[which]);
    c->status = KVQ_OK;
    switch (which) {
    case G_QK_NEGZERO:
        in->qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8u);
        in->shape = (kvq_sage_shape){ 77u, 64u };
        in->seg = in->shape.tokens;
        return make_gap_qk(c, in, &r, which);
    case G_QK_HALF_Q4: case G_QK_HALF_K8:
        in->qk = kvq_sage_qk_default(which == G_QK_HALF_Q4 ? KVQ_SAGE_ROLE_Q : KVQ_SAGE_ROLE_K,
                                     which == G_QK_HALF_Q4 ? 4u : 8u);
        in->qk.rounding = KVQ_SAGE_ROUND_PUBLIC;
        in->shape = (kvq_sage_shape){ which == G_QK_HALF_Q4 ? 160u : 96u, which == G_QK_HALF_Q4 ? 64u : 128u };
        in->seg = in->shape.tokens;
        return make_gap_qk(c, in, &r, which);
    case G_P_NEGZERO: case G_P_MID_E4M3: case G_P_MID_E5M2: {
        in->fmt = which == G_P_MID_E5M2;
        c->pol.overflow = which == G_P_MID_E4M3;
        in->rows = 16u;
        in->cols = 48u;
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        const float F = in->fmt ? 57344.0f : 448.0f;
        for (uint32_t i = 0; i < in->rows; i++)
            for (uint32_t j = 0; j < in->cols; j++) {
                float *p = in->x + (size_t)i * in->cols + j;
                if (which == G_P_NEGZERO) /* rows of -0, of +0, of both, of -0 and values */
                    *p = i % 4u == 0u ? -0.0f : i % 4u == 1u ? 0.0f : i % 4u == 2u ? (kvq_rng_below(&r, 2) ? -0.0f : 0.0f)
                       : j == 0u ? -0.0f : kvq_rng_unit(&r);
                else /* p with RN32(p F) an FP8 midpoint t (a quarter any p) */
                    *p = kvq_rng_below(&r, 4) == 0 ? kvq_rng_unit(&r) : p_for(fp8_midpoint(in->fmt, in->fmt ? -14 : -6,
                                                                                        in->fmt ? 14 : 7, &r), F);
            }
        return c->op->solve(c);
    }
    case G_DS_NEGZERO: {
        in->shape = (kvq_sage_shape){ 24u, 64u };
        in->rows = 2u;
        in->tau = default_tau(64u);
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        /* mean row 0 positive, row 1 negative; key tokens of -0, of +0, of
         * both and of values: -0 products (a positive q_m times -0, a negative
         * times +0) sum to -0, times tau -0 */
        for (uint32_t e = 0; e < 64u; e++) in->qm[e] = 0.5f + kvq_rng_unit(&r), in->qm[64u + e] = -0.5f - kvq_rng_unit(&r);
        for (uint32_t t = 0; t < 24u; t++)
            for (uint32_t ch = 0; ch < 64u; ch++)
                in->x[t * 64u + ch] = t % 4u == 0u ? -0.0f : t % 4u == 1u ? 0.0f
                                    : t % 4u == 2u ? (ch % 2u ? -0.0f : 0.0f) : kvq_rng_sym(&r);
        return c->op->solve(c);
    }
    case G_V_NEGZERO: case G_V_MID_E4M3: case G_V_MID_E5M2: {
        in->fmt = which == G_V_MID_E5M2;
        c->pol.overflow = which == G_V_MID_E5M2;
        in->shape = (kvq_sage_shape){ 70u, 64u };
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        const float F = in->fmt ? 57344.0f : 448.0f;
        for (uint32_t ch = 0; ch < 64u; ch++) {
            /* the channel's maximum F 2^a makes its scale 2^a exactly, so
             * t = v / 2^a is the value drawn: a midpoint, a -0, or any */
            const int a = (int)kvq_rng_below(&r, 24) - 12;
            for (uint32_t t = 0; t < 70u; t++) {
                float *v = in->x + (size_t)t * 64u + ch;
                const float sg = kvq_rng_below(&r, 2) ? -1.0f : 1.0f;
                if (which == G_V_NEGZERO)
                    *v = kvq_rng_below(&r, 3) == 0 ? -0.0f : ldexpf(sg * kvq_rng_unit(&r), a + 8);
                else
                    *v = ldexpf(sg * fp8_midpoint(in->fmt, in->fmt ? -14 : -6, in->fmt ? 14 : 7, &r), a);
            }
            in->x[(size_t)(ch % 70u) * 64u + ch] = ldexpf(F, a) * (ch % 2u ? -1.0f : 1.0f);
        }
        return c->op->solve(c);
    }
    case G_ATTN_KOFFSET:
        in->attn = (kvq_sage_attn){ 64u, 130u, 128u, 0x1.6a09e6p-4f, 0u, 128u, 8u };
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        fill_gap_attn(in, &r);
        return c->op->solve(c);
    default: /* sage-pv */
        in->fmt = which == G_PV_SUB_E5M2 || which == G_PV_ADV_E5M2;
        in->model = KVQ_SAGE_PV_WGMMA;
        in->rows = 64u;
        in->n = which == G_PV_NEGZERO ? 64u : 32u * (1u + kvq_rng_below(&r, 3));
        in->buffer = which == G_PV_NEGZERO ? 0u : which == G_PV_SUB_E4M3 || which == G_PV_SUB_E5M2 ? 0u : 128u;
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        if (which == G_PV_NEGZERO) fill_pv_negzero(in, &r);
        else if (pv_bounded) fill_pv_adversarial(in, &r);
        else fill_pv_subnormal(in, &r);
        return c->op->solve(c);
    }
}

/* ---- sage-dq [SAGE-Q-08] [VEC-SAGE-12] ------------------------------------------------------ */

/* Cases of the dequantization, appended after the separating cases: every
 * role, bit width and granularity, every code field (INT4 -8 and INT8 -128,
 * which the quantizer never writes, included), scales of +0, -0, 2^-126,
 * any normal value, and large ones whose products come near FLT_MAX; then
 * one case of each error class. */
enum { DQ_STD = 12, DQ_E_NAN = 0, DQ_E_INF, DQ_E_NEG, DQ_E_SUB, DQ_E_RANGE, DQ_E_BITS, DQ_E_DIM, DQ_E_COUNT };
static const char *const DQE_NAMES[DQ_E_COUNT] = {
    "dq-scale-nan", "dq-scale-inf", "dq-scale-negative", "dq-scale-subnormal", "dq-range", "dq-bits3", "dq-dim96",
};

static kvq_status make_dq(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j)
{
    kvq_rng r;
    const int err = j >= DQ_STD;
    const uint32_t e = err ? j - DQ_STD : 0u;
    kvq_sage_in *in = begin(c, &kvq_op_sage_dq, &r, seed, k, 0xD1B54A32D192ED03ull, KVQ_LEVEL_EXACT);
    if (in == NULL) return KVQ_E_NOMEM;
    if (err) {
        in->qk = kvq_sage_qk_default(KVQ_SAGE_ROLE_Q, 8u);
        in->shape = (kvq_sage_shape){ 40u, e == DQ_E_DIM ? 96u : 64u };
        if (e == DQ_E_BITS) in->qk.bits = 3u;
        snprintf(c->id, sizeof c->id, "sage-%s-%05llu-err-%s", tag, (unsigned long long)k, DQE_NAMES[e]);
    } else {
        const uint32_t role = j % 2u;
        in->qk = kvq_sage_qk_default(role, (j / 2u) % 2u ? 8u : 4u);
        in->qk.gran = (j / 4u) % 3u;
        if (role == KVQ_SAGE_ROLE_Q) {
            const uint32_t q = kvq_rng_below(&r, 5);
            in->qk.block = QB[q][0];
            in->qk.warps = QB[q][1];
        } else {
            in->qk.block = KB[kvq_rng_below(&r, 3)];
        }
        in->shape = (kvq_sage_shape){ 1u + kvq_rng_below(&r, 2u * in->qk.block + 17u), kvq_rng_below(&r, 2) ? 128u : 64u };
        snprintf(c->id, sizeof c->id, "sage-%s-%05llu-dq", tag, (unsigned long long)k);
    }
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    const int valid = kvq_sage_shape_ok(&in->shape) && kvq_sage_qk_ok(&in->qk);
    const uint64_t nb = valid ? kvq_sage_code_bytes(&in->shape, in->qk.bits) : 0u;
    const uint64_t ns = valid ? kvq_sage_scale_count(&in->shape, &in->qk) : 0u;
    for (uint64_t b = 0; b < nb; b++) in->a[b] = (uint8_t)kvq_rng_below(&r, 256);
    for (uint64_t i = 0; i < ns; i++) {
        const uint32_t w = kvq_rng_below(&r, 16);
        in->c[i] = w == 0u ? 0.0f : w == 1u ? -0.0f : w == 2u ? 0x1p-126f
                 : w == 3u ? ldexpf(1.0f + kvq_rng_unit(&r), 119) /* |k s| < 2^127 for |k| <= 128 */
                 : ldexpf(1.0f + kvq_rng_unit(&r), (int)kvq_rng_below(&r, 60) - 30);
    }
    if (err && ns) {
        const uint64_t at = kvq_rng_next(&r) % ns;
        if (e == DQ_E_NAN) in->c[at] = NAN;
        if (e == DQ_E_INF) in->c[at] = INFINITY;
        if (e == DQ_E_NEG) in->c[at] = -0.5f;
        if (e == DQ_E_SUB) in->c[at] = 0x1p-130f;
        if (e == DQ_E_RANGE) { /* token 0's scale FLT_MAX, its first code 127 */
            in->c[kvq_sage_scale_slot(&in->qk, 0u)] = 0x1.fffffep+127f;
            kvq_sage_pack_code(in->a, 0u, in->qk.bits, (int32_t)kvq_sage_cmax(in->qk.bits));
        }
    }
    return c->op->solve(c);
}

/* ---- sage-mha [SAGE-MHA-01..04] [VEC-SAGE-13] ----------------------------------------------- */

enum { F32 = KVQ_SAGE_IN_BINARY32, F16 = KVQ_SAGE_IN_BINARY16, BF16 = KVQ_SAGE_IN_BFLOAT16 };
static const char *const IN_FMT_NAMES[KVQ_SAGE_IN_FORMATS] = { "binary32", "binary16", "bfloat16" };

typedef struct mha_shape {
    uint32_t hq, hkv, nq, nk, causal, buffer, bits, dist, fmt;
} mha_shape;

/* One KV head (MHA, hkv = hq), one for all (MQA) and groups of 2 to 4; every
 * input format; decode (nq = 1) and prefill, causal or not, partial blocks,
 * the three buffers and INT4; V channels near 1e5 in bfloat16 (beyond
 * binary16's range); values near 2^-20 in binary16 (its subnormals). */
static const mha_shape MH_STD[] = {
    { 4, 1, 64, 200, 0, 128, 8, AT_GAUSS, BF16 }, { 4, 2, 1, 300, 0, 64, 8, AT_SINK, F16 },
    { 6, 3, 130, 130, 1, 128, 8, AT_TREND, BF16 }, { 2, 2, 77, 100, 0, 0, 8, AT_QMEAN, F32 },
    { 8, 2, 16, 257, 0, 128, 8, AT_HUGE, BF16 },  { 4, 4, 40, 129, 1, 64, 8, AT_SMALL, F16 },
    { 3, 1, 100, 100, 1, 128, 4, AT_GAUSS, BF16 }, { 8, 4, 33, 65, 0, 128, 8, AT_SINK, F16 },
};
/* smoke: the same kinds, fewer heads and keys (seconds under the sanitizers) */
static const mha_shape MH_SMOKE[] = {
    { 2, 1, 64, 130, 0, 128, 8, AT_GAUSS, BF16 }, { 4, 2, 1, 300, 0, 64, 8, AT_SINK, F16 },
    { 4, 2, 16, 130, 0, 128, 8, AT_HUGE, BF16 },
};
/* The `large` set [VEC-GEN-04]: thousands of keys, generated on demand. */
static const mha_shape MH_LARGE[] = {
    { 4, 1, 16, 4096, 1, 128, 8, AT_GAUSS, BF16 }, { 8, 2, 16, 8192, 0, 128, 8, AT_SINK, F16 },
    { 4, 2, 1, 16384, 0, 64, 8, AT_HUGE, BF16 },  { 2, 1, 128, 16384, 1, 128, 4, AT_GAUSS, F32 },
};
#define MH_NSTD ((uint32_t)(sizeof MH_STD / sizeof MH_STD[0]))
#define MH_NSMOKE ((uint32_t)(sizeof MH_SMOKE / sizeof MH_SMOKE[0]))
#define MH_NLARGE ((uint32_t)(sizeof MH_LARGE / sizeof MH_LARGE[0]))

/* Every input rounded to the case's format (to nearest, ties to even):
 * exactly representable, as the case says [SAGE-MHA-02]. */
static void round_inputs(float *x, uint64_t n, uint32_t fmt)
{
    int ov;
    for (uint64_t e = 0; e < n; e++)
        x[e] = fmt == BF16 ? kvq_round_bf16(x[e]) : fmt == F16 ? kvq_round_f16(x[e], &ov) : x[e];
}

/* Query head h drawn with its KV head when it is the first of its group
 * (an attention sink aligns key 0 with that head's query 0), else with a
 * scratch K and V: every query head has the distribution's Q. */
static kvq_status fill_mha(kvq_sage_in *in, uint32_t dist, kvq_rng *r)
{
    const uint64_t qe = (uint64_t)in->attn.nq * 128u, ke = (uint64_t)in->attn.nk * 128u;
    const uint32_t grp = in->hq / in->hkv;
    float *scratch = malloc((size_t)(2u * ke) * sizeof *scratch);
    if (scratch == NULL) return KVQ_E_NOMEM;
    for (uint32_t h = 0; h < in->hq; h++) {
        const int first = h % grp == 0u;
        fill_qkv(in->x + h * qe, first ? in->qm + h / grp * ke : scratch, first ? in->v + h / grp * ke : scratch + ke,
                 in->attn.nq, in->attn.nk, dist, r);
    }
    free(scratch);
    round_inputs(in->x, in->hq * qe, in->in_fmt);
    round_inputs(in->qm, in->hkv * ke, in->in_fmt);
    round_inputs(in->v, in->hkv * ke, in->in_fmt);
    return KVQ_OK;
}

static kvq_status make_mha(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, const mha_shape *sh)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_mha, &r, seed, k, 0x2545F4914F6CDD1Dull, KVQ_LEVEL_BOUNDED);
    if (in == NULL) return KVQ_E_NOMEM;
    in->attn = (kvq_sage_attn){ sh->nq, sh->nk, 128u, 0x1.6a09e6p-4f, sh->causal, sh->buffer, sh->bits };
    in->hq = sh->hq, in->hkv = sh->hkv, in->in_fmt = sh->fmt;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-mha-%s-%s", tag, (unsigned long long)k, AT_NAMES[sh->dist],
             IN_FMT_NAMES[sh->fmt]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (fill_mha(in, sh->dist, &r) != KVQ_OK) return KVQ_E_NOMEM;
    return c->op->solve(c);
}

enum { ME_HEADS, ME_F16, ME_BF16, ME_NAN, ME_COUNT };
static const char *const ME_NAMES[ME_COUNT] = { "mha-heads3of2", "mha-not-binary16", "mha-not-bfloat16", "mha-nan" };

/* One case of each error class: hq not a multiple of hkv; a value outside
 * the named format (a K element of KV head 1 in binary16, a Q element of
 * query head 2 in bfloat16); a NaN in V of KV head 1, found by head 2. */
static kvq_status make_mha_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r;
    kvq_sage_in *in = begin(c, &kvq_op_sage_mha, &r, seed, k, 0x9E6C63D0676A9A99ull, KVQ_LEVEL_BOUNDED);
    if (in == NULL) return KVQ_E_NOMEM;
    in->attn = (kvq_sage_attn){ 40u, 72u, 128u, 0x1.6a09e6p-4f, 0u, 128u, 8u };
    in->hq = which == ME_HEADS ? 3u : 4u, in->hkv = 2u, in->in_fmt = which == ME_F16 ? F16 : BF16;
    snprintf(c->id, sizeof c->id, "sage-%s-%05llu-err-%s", tag, (unsigned long long)k, ME_NAMES[which]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    const uint64_t qe = 40u * 128u, ke = 72u * 128u;
    if (which == ME_HEADS) { /* hq / hkv is not an integer: fill head by head */
        for (uint32_t h = 0; h < 3u; h++) fill_qkv(in->x + h * qe, in->qm + h % 2u * ke, in->v + h % 2u * ke, 40u, 72u,
                                                   AT_GAUSS, &r);
        round_inputs(in->x, 3u * qe, BF16), round_inputs(in->qm, 2u * ke, BF16), round_inputs(in->v, 2u * ke, BF16);
    } else if (fill_mha(in, AT_GAUSS, &r) != KVQ_OK) {
        return KVQ_E_NOMEM;
    }
    if (which == ME_F16) in->qm[ke + kvq_rng_next(&r) % ke] = 1.0f + 0x1p-11f;
    if (which == ME_BF16) in->x[2u * qe + kvq_rng_next(&r) % qe] = 1.0f + 0x1p-8f;
    if (which == ME_NAN) in->v[ke + kvq_rng_next(&r) % ke] = NAN;
    return c->op->solve(c);
}

/* ---- level sets [VEC-GEN-02] -------------------------------------------------------------- */

typedef struct counts {
    uint32_t qk, p, v, ds, pv, attn, mha;
} counts;

static int counts_of(const char *levels, counts *n)
{
    if (strcmp(levels, "smoke") == 0) {
        *n = (counts){ 24u, 8u, 8u, 4u, 12u, (uint32_t)(sizeof AT_SMOKE / sizeof AT_SMOKE[0]), MH_NSMOKE };
        return 1;
    }
    if (strcmp(levels, "standard") == 0) {
        *n = (counts){ 144u, 32u, 32u, 12u, 48u, (uint32_t)(sizeof AT_STD / sizeof AT_STD[0]), MH_NSTD };
        return 1;
    }
    return 0;
}

uint64_t kvq_sage_gen_count(const char *levels)
{
    counts n;
    if (strcmp(levels, "large") == 0) return MH_NLARGE;
    return counts_of(levels, &n) ? (uint64_t)n.qk + n.p + n.v + n.ds + E_COUNT + n.pv + PE_COUNT + n.attn + AE_COUNT +
                                       G_COUNT + DQ_STD + DQ_E_COUNT + n.mha + ME_COUNT
                                 : 0u;
}

kvq_status kvq_sage_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    counts n;
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    uint64_t j = k;
    kvq_status st;
    if (strcmp(levels, "large") == 0) { /* sage-mha only [VEC-GEN-04] */
        st = k < MH_NLARGE ? make_mha(c, "large", seed, k, &MH_LARGE[k]) : KVQ_E_PARAM;
        if (st != KVQ_OK) kvq_case_free(c);
        return st;
    }
    if (!counts_of(levels, &n)) return KVQ_E_PARAM;
    if (j < n.qk) st = make_qk(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.qk) < n.p) st = make_p(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.p) < n.v) st = make_v(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.v) < n.ds) st = make_ds(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.ds) < E_COUNT) st = make_error(c, tag, seed, k, (uint32_t)j);
    else if ((j -= E_COUNT) < n.pv) st = make_pv(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.pv) < PE_COUNT) st = make_pv_error(c, tag, seed, k, (uint32_t)j);
    else if ((j -= PE_COUNT) < n.attn) st = make_attn(c, tag, seed, k, (uint32_t)j, smoke);
    else if ((j -= n.attn) < AE_COUNT) st = make_attn_error(c, tag, seed, k, (uint32_t)j);
    else if ((j -= AE_COUNT) < G_COUNT) st = make_gap(c, tag, seed, k, (uint32_t)j);
    else if ((j -= G_COUNT) < DQ_STD + DQ_E_COUNT) st = make_dq(c, tag, seed, k, (uint32_t)j);
    else if ((j -= DQ_STD + DQ_E_COUNT) < n.mha) st = make_mha(c, tag, seed, k, smoke ? &MH_SMOKE[j] : &MH_STD[j]);
    else if ((j -= n.mha) < ME_COUNT) st = make_mha_error(c, tag, seed, k, (uint32_t)j);
    else st = KVQ_E_PARAM;
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
