/*
 * cert_step.c -- one CERT decode step, fast path (binary32): Phase-1 scoring,
 * block log-masses and their radius, the selector, value promotion, the
 * ranking, boundary and value checks, the fallback ladder, Phase-2 attention,
 * the certificate, and the host reference dense path (spec/cert.md).  The
 * quantizers and annotations are in cert.c.
 */
#include <math.h>
#include <stdlib.h>

#include "kvq.h"
#include "cert_internal.h"

#define F32_MIN_NORMAL 0x1p-126f

/* ---- outward binary64 arithmetic ------------------------------------------
 * Bounds are evaluated in binary64 with outward steps: up(a op b) =
 * nextafter(RN64(a op b), +inf) >= the exact result (a nearest rounding errs
 * by less than one ulp), dn likewise downward; libm functions (exp, log,
 * log1p, tanh: glibc errs by under 2 ulps in binary64, [TR-CERT-LIBM]) are
 * moved two steps.  to_f_up converts upward to binary32.  These are upper
 * (lower) bounds of the exact path's values, not equal to them. */

static double up(double x) { return nextafter(x, INFINITY); }
static double dn(double x) { return nextafter(x, -INFINITY); }
static double up2(double x) { return up(up(x)); }
static double dn2(double x) { return dn(dn(x)); }

static float to_f_up(double x)
{
    float y = (float)x;
    if ((double)y < x) y = nextafterf(y, INFINITY);
    return y;
}

/* gamma_n = n 2^-24 / (1 - n 2^-24), upward; +inf when n 2^-24 >= 1/2 (the
 * bound of [CERT-AR-01] is then unavailable, and so infinite). */
static double gamma_up(double n)
{
    double nu = n * 0x1p-24;             /* exact */
    if (!(nu < 0.5)) return INFINITY;
    return up(nu / dn(1.0 - nu));
}

/* A(a, Delta) = e^{2 Delta} a / (1 + (e^{2 Delta} - 1) a) (the paper's Eq. 14 in odds form),
 * upward for a in [0, 1]: A = 1 / (1 + (1 - a) / (X a)), increasing in a, X. */
static double tail_up(double a, double delta)
{
    double x;
    if (a <= 0.0) return 0.0;
    if (a >= 1.0) return 1.0;
    x = up2(exp(up(2.0 * delta)));
    return up(1.0 / dn(1.0 + dn(dn(1.0 - a) / up(x * a))));
}

/* E_arith [CERT-AR-01] upward for one pinned pass [CERT-AR-02] over ns tokens:
 * vh >= Vh, pmax >= max sum_c |q_c| |k_{i,c}| over the attended keys, srange
 * = max - min of their binary32 scores s~ (R_s <= srange + 4 eps_s, since
 * |s~ - s^| <= eps_s for each), decl the pass's declaration.  +inf when D is
 * too large for gamma_D. */
static double earith_up(double vh, double pmax, double srange, uint32_t ns, uint32_t d,
                        float scale, const kvq_cert_decl *decl)
{
    double epss, rs, ue, lam, lambda, g, gq, tl, gg;
    g = gamma_up((double)decl->acc_depth);
    if (isinf(g) || !(g < 0.5)) return INFINITY;
    epss = up(up(gamma_up(d + 1.0) * scale) * pmax);
    epss = up(epss + up(up(scale * (double)d + 1.0) * 0x1p-149)); /* underflowing products */
    rs = up(srange + up(4.0 * epss));
    ue = (double)decl->u_exp * 0x1p-23;                           /* eps_e, exact */
    lam = up2(-log1p(-ue));
    lambda = up(epss + up((1.0 + decl->rescales) * up(up(rs * 0x1p-24) + lam)));
    gq = up(g / dn(1.0 - g));
    tl = up2(tanh(up(lambda / 2.0)));
    gg = up(2.0 * up(vh * tl));
    gg = up(gg + up(2.0 * up(vh * gq)));
    gg = up(gg + up(up(vh * 0x1p-24) * up(1.0 + 2.0 * gq)));
    gg = up(gg + up(up(2.0 * vh) * up(ns * up((decl->u_exp + 1.0) * 0x1p-148))));
    gg = up(gg + up(up2(sqrt((double)d)) * 0x1p-150));
    gg = up(gg + up(up(up2(sqrt((double)d)) * decl->acc_depth) * 0x1p-148));
    return gg;
}

typedef struct cmp_ent {
    double w;
    uint32_t b;
} cmp_ent;

/* Greatest key first, ties to the lower block index [CERT-SEL-01] [CERT-PROM-02]. */
static int by_key(const void *pa, const void *pb)
{
    const cmp_ent *a = pa, *b = pb;
    if (a->w != b->w) return a->w > b->w ? -1 : 1;
    return a->b < b->b ? -1 : (a->b > b->b ? 1 : 0);
}

/* Binary32 key row of token t: k^ in full blocks [CERT-K8-03] unless orig,
 * else the originals k. */
static void key_row(float *row, const kvq_cert_cache *ch, const float *k, const kvq_cert_shape *sh,
                    uint32_t t, int orig)
{
    uint32_t d = sh->dim, b = t / KVQ_CERT_BLOCK, i = t % KVQ_CERT_BLOCK;
    for (uint32_t c = 0; c < d; c++) {
        if (!orig && b < kvq_cert_full_blocks(sh)) {
            uint64_t m = kvq_cert_key_meta_index(sh, b, c);
            int8_t code = ch->kcodes[kvq_cert_key_block_offset(sh, b) +
                                     kvq_cert_key_code_index(d, i, c)];
            row[c] = fmaf((float)code, ch->sigma[m], ch->z[m]); /* one rounding */
        } else {
            row[c] = k[kvq_cert_in_index(sh, t, c)];
        }
    }
}

/* Binary32 value row v~ of token t: v^ in full blocks [CERT-V4-02] unless
 * orig (a promoted block [CERT-PROM-01], a dense rung), else the originals v. */
static void value_row(float *row, const kvq_cert_cache *ch, const float *v,
                      const kvq_cert_shape *sh, uint32_t t, int orig)
{
    uint32_t d = sh->dim;
    for (uint32_t c = 0; c < d; c++) {
        if (!orig && t < kvq_cert_quant_tokens(sh)) {
            uint32_t el, j = kvq_cert_value_group_of(c, &el);
            row[c] = kvq_certi_value_deq(ch->vcodes, ch->vscale, ch->vzero, sh, t, j, el);
        } else {
            row[c] = v[kvq_cert_in_index(sh, t, c)];
        }
    }
}

/* Scores s~_t = RN32(scale * dot_t) [CERT-AR-02] of every token, dot_t the
 * recursive binary32 sum of RN32(q_c row_c); pq[t] = sum_c |q_c| |row_c|
 * upward (the products are exact in binary64: 11 + 24 bits). */
static void score_token(float *s, double *pq, float *row, const float *q, float scale,
                        const kvq_cert_cache *ch, const float *k, const kvq_cert_shape *sh,
                        uint32_t t, int orig)
{
    float dot = 0.0f;
    double p = 0.0;
    key_row(row, ch, k, sh, t, orig);
    for (uint32_t c = 0; c < sh->dim; c++) {
        dot += q[c] * row[c];            /* two roundings */
        p = up(p + fabs((double)q[c] * (double)row[c]));
    }
    s[t] = scale * dot;                  /* RN32 */
    pq[t] = p;
}

static void scores(float *s, double *pq, float *row, const float *q, float scale,
                   const kvq_cert_cache *ch, const float *k, const kvq_cert_shape *sh, int orig)
{
    for (uint32_t t = 0; t < sh->tokens; t++) score_token(s, pq, row, q, scale, ch, k, sh, t, orig);
}

/* Statistics of one pinned pass, for E_arith. */
typedef struct pass_stats {
    uint32_t ns;                         /* tokens attended */
    double pmax;                         /* max pq over them */
    double srange;                       /* max s~ - min s~ over them, upward */
} pass_stats;

/* The pinned online softmax [CERT-AR-02] over the tokens of the blocks with
 * mode[b] != 0 (all tokens when mode is NULL), in index order, with scores s;
 * values v^ where mode[b] == 1, the originals where mode[b] == 2 or mode is
 * NULL (and in the residual block).  out: d binary32. */
static void pinned_pass(float *out, float *acc, float *row, const float *s, const double *pq,
                        const uint8_t *mode, const kvq_cert_cache *ch, const float *v,
                        const kvq_cert_shape *sh, pass_stats *ps)
{
    uint32_t d = sh->dim, nb = kvq_cert_blocks(sh);
    float l = 0.0f, m = -INFINITY, smax = -INFINITY, smin = INFINITY;
    ps->ns = 0, ps->pmax = 0.0;
    for (uint32_t c = 0; c < d; c++) acc[c] = 0.0f;
    for (uint32_t b = 0; b < nb; b++) {
        if (mode != NULL && mode[b] == 0u) continue;
        for (uint32_t i = 0; i < kvq_cert_block_tokens(sh, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            float mn = s[t] > m ? s[t] : m, alpha = expf(m - mn), wt;
            if (ps->ns == 0) alpha = 0.0f; /* l = acc = 0: nothing to rescale */
            m = mn;
            wt = expf(s[t] - m);
            value_row(row, ch, v, sh, t, mode == NULL || mode[b] == 2u);
            l = l * alpha + wt;          /* two roundings */
            for (uint32_t c = 0; c < d; c++) {
                float pr = wt * row[c];  /* RN32 */
                acc[c] = acc[c] * alpha; /* RN32 */
                acc[c] = acc[c] + pr;    /* RN32: no fmaf [CERT-AR-02] */
            }
            if (s[t] > smax) smax = s[t];
            if (s[t] < smin) smin = s[t];
            if (pq[t] > ps->pmax) ps->pmax = pq[t];
            ps->ns++;
        }
    }
    for (uint32_t c = 0; c < d; c++) out[c] = acc[c] / l;
    ps->srange = ps->ns ? up((double)smax - (double)smin) : 0.0;
}

/* ---- the host reference dense path (rungs 3-4) ---------------------------- */

/* Dense attention over all tokens with the binary16 originals by the pinned
 * sequence [CERT-AR-02] [CERT-LAD-03]: E_key = E_val = 0, E_arith for
 * kvq_cert_pinned_decl(n), rung 4.  Inputs already checked. */
static kvq_status dense_core(float *out, kvq_cert_record *rec, kvq_cert_decl *decl,
                             const float *q, float scale, const float *k, const float *v,
                             const kvq_cert_shape *sh)
{
    uint32_t n = sh->tokens, d = sh->dim;
    float *s = calloc(n, sizeof(float)), *row = malloc(sizeof(float) * d);
    float *acc = malloc(sizeof(float) * d);
    double *pq = calloc(n, sizeof(double)), vh = 0.0, ea;
    kvq_cert_decl dc = kvq_cert_pinned_decl(n);
    pass_stats ps;
    kvq_status st = KVQ_E_NOMEM;
    if (!s || !row || !acc || !pq) goto done;
    scores(s, pq, row, q, scale, NULL, k, sh, 1);
    pinned_pass(out, acc, row, s, pq, NULL, NULL, v, sh, &ps);
    for (uint32_t t = 0; t < n; t++) {   /* Vh = max ||v_i||, upward; squares exact */
        double a = 0.0;
        for (uint32_t c = 0; c < d; c++) {
            double x = (double)v[kvq_cert_in_index(sh, t, c)];
            a = up(a + x * x);
        }
        a = up(sqrt(a));                 /* sqrt correctly rounded */
        if (a > vh) vh = a;
    }
    ea = earith_up(vh, ps.pmax, ps.srange, ps.ns, d, scale, &dc);
    rec->version = 1u;
    rec->rung = 4u;
    rec->n = n, rec->d = d, rec->k_sel = kvq_cert_full_blocks(sh), rec->n_prom = 0u;
    rec->checks = 0u;                    /* no check is evaluated at rungs 3-4 [CERT-LAD-04] */
    rec->delta = 0.0f;
    rec->alpha_hat = 0.0f;
    rec->vmax = to_f_up(vh);
    rec->ekey = rec->ekey_paper = rec->eval = 0.0f;
    rec->earith = to_f_up(ea);
    rec->etotal = rec->earith;
    *decl = dc;
    st = KVQ_OK;
done:
    free(s), free(row), free(acc), free(pq);
    return st;
}

kvq_status kvq_cert_dense(float *out, kvq_cert_record *rec, kvq_cert_decl *decl, const float *q,
                          float scale, const float *k, const float *v,
                          const kvq_cert_shape *shape)
{
    kvq_status st;
    uint64_t ne;
    if (out == NULL || rec == NULL || decl == NULL || q == NULL || k == NULL || v == NULL ||
        shape == NULL)
        return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM; /* [CERT-L-01] */
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    ne = kvq_cert_in_index(shape, shape->tokens, 0);
    if ((st = kvq_certi_check_f16(q, shape->dim)) != KVQ_OK) return st;
    if ((st = kvq_certi_check_f16(k, ne)) != KVQ_OK) return st;
    if ((st = kvq_certi_check_f16(v, ne)) != KVQ_OK) return st;
    return dense_core(out, rec, decl, q, scale, k, v, shape);
}

/* ---- one decode step ------------------------------------------------------ */

static kvq_status step_check(const float *q, float scale, const kvq_cert_cache *ch,
                             const kvq_cert_params *prm, const kvq_cert_shape *sh)
{
    kvq_status st;
    uint64_t ne;
    if (ch->k == NULL || ch->v == NULL || ch->kcodes == NULL || ch->sigma == NULL ||
        ch->z == NULL || ch->vcodes == NULL || ch->vscale == NULL || ch->vzero == NULL ||
        ch->eta == NULL || ch->nu == NULL)
        return KVQ_E_PARAM;
    /* [CERT-DUMP-03] ranges; vtol and eps_guard finite (an infinite one has no
     * use and would make vtol * nu_b a NaN for nu_b = 0) */
    if (!(prm->tau > 0.0f && prm->tau <= 1.0f) || prm->kmin < 1u || prm->kmin > prm->kmax ||
        !(prm->vtol >= 0.0f) || isinf(prm->vtol) || !(prm->eps_guard >= 0.0f) ||
        isinf(prm->eps_guard) || !(prm->eps_dense >= 0.0f) || prm->r < 1u ||
        prm->start_rung > 4u || prm->variant >= KVQ_CERT_VARIANTS)
        return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM; /* [CERT-L-01] */
    if (!kvq_cert_shape_ok(sh)) return KVQ_E_SHAPE;
    ne = kvq_cert_in_index(sh, sh->tokens, 0);
    if ((st = kvq_certi_check_f16(q, sh->dim)) != KVQ_OK) return st;
    if ((st = kvq_certi_check_f16(ch->k, ne)) != KVQ_OK) return st;
    if ((st = kvq_certi_check_f16(ch->v, ne)) != KVQ_OK) return st;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(sh); e++)
        if ((st = kvq_certi_key_meta_ok(ch->sigma[e], ch->z[e])) != KVQ_OK) return st;
    if ((st = kvq_certi_value_meta_ok(ch->vscale, ch->vzero, sh)) != KVQ_OK) return st;
    for (uint32_t b = 0; b < kvq_cert_blocks(sh); b++)
        if (!(ch->eta[b] >= 0.0f) || !(ch->nu[b] >= 0.0f) || isinf(ch->eta[b]) ||
            isinf(ch->nu[b]))
            return KVQ_E_PARAM;
    return KVQ_OK;
}

/* Phase-1 results shared by the rungs.  Masses are in units of e^{-m1}:
 * E_b = sum_{i in b} exp(s^_i - m1), the exact real, el[b] <= E_b <= eu[b];
 * llo[b] <= L_b <= lhi[b] (L_b = m1 + ln E_b [CERT-LM-01]). */
typedef struct phase1 {
    float *s, *wb, *lm, *dlt, delta;
    double *pq, *eu, *el, *llo, *lhi;
    double tot_hi;                       /* >= sum_b W~_b */
    cmp_ent *ord;                        /* full blocks by W~_b, greatest first */
} phase1;

/* The rung-k selection, promotion, bounds and checks (k <= 2). */
typedef struct rung_eval {
    uint32_t k_sel, n_prom, checks;
    double au;                           /* >= alpha^_T */
    double ekey, eval;                   /* >= sound E_key, E_val */
    float alpha_hat;                     /* the kernel's own estimate */
} rung_eval;

/* Descending order of binary64 values. */
static int desc_d(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a > b ? -1 : (a < b ? 1 : 0);
}

/* The selection holding cum_lo (<= its real sum of W~_b) of a total <= tot_hi
 * holds a share >= tau for certain: share >= cum_lo / (cum_lo + tail_hi). */
static int covers(double cum_lo, double tot_hi, float tau)
{
    double tail = up(tot_hi - cum_lo);   /* >= the real tail sum */
    if (tail <= 0.0) return 1;
    return dn(cum_lo / up(cum_lo + tail)) >= (double)tau;
}

/* Value promotion [CERT-PROM-01..03] of the selection sel into prom. */
static void promote(uint8_t *prom, const uint8_t *sel, cmp_ent *cand, const phase1 *p1,
                    const kvq_cert_cache *ch, const kvq_cert_params *prm, uint32_t rung,
                    uint32_t nq, uint32_t nb)
{
    uint32_t nc = 0;
    for (uint32_t b = 0; b < nb; b++) prom[b] = 0u;
    for (uint32_t b = 0; b < nq; b++) {
        if (!sel[b]) continue;
        if (rung == 2u) {                /* every selected full block [CERT-PROM-03] */
            prom[b] = 1u;
            continue;
        }
        /* eta_b > vtol nu_b, decided exactly: the binary64 product of two
         * binary32 values is exact (48 bits) [CERT-PROM-01] */
        if ((double)ch->eta[b] > (double)prm->vtol * (double)ch->nu[b]) {
            cand[nc].w = (double)p1->wb[b] * (double)ch->eta[b]; /* exact, W~_b eta_b */
            cand[nc].b = b;
            nc++;
        }
    }
    if (rung == 2u) return;
    if (prm->promote_budget != KVQ_CERT_PROMOTE_THRESHOLD && nc > prm->promote_budget) {
        /* [CERT-PROM-02]: greatest W~_b eta_b first, ties to the lower index */
        qsort(cand, nc, sizeof *cand, by_key);
        nc = prm->promote_budget;
    }
    for (uint32_t i = 0; i < nc; i++) prom[cand[i].b] = 1u;
}

/* Bounds and checks of one sparse rung with selection sel and promotion prom.
 * Every check is accepted only if it holds for every L_b in [llo[b], lhi[b]]
 * (within the radius of L~_b) and for the exact Delta_b <= dlt[b]: then the
 * exact check holds [CERT-CHK-01]. */
static void rung_bounds(rung_eval *re, const uint8_t *sel, const uint8_t *prom,
                        const phase1 *p1, double *lam, const kvq_cert_cache *ch,
                        const kvq_cert_params *prm, uint32_t nq, uint32_t nb)
{
    double tu = 0.0, sl = 0.0, su = 0.0, t_up, t_dn, rsum = 0.0, etamax = 0.0, eval;
    double uhi = -INFINITY, rhs = 0.0, cum = 0.0, tl = 0.0, tuh = 0.0;
    float tsum = 0.0f, tot = 0.0f;
    const int paper = prm->variant == KVQ_CERT_VARIANT_PAPER;
    const double e2d = up2(exp(up(2.0 * p1->delta)));   /* >= e^{2 Delta} */
    uint32_t nl = 0, np = 0, ks = 0;
    int all_within = 1, tempty = 1;
    for (uint32_t b = 0; b < nb; b++) {
        tot += p1->wb[b];
        if (sel[b]) {
            sl = dn(sl + p1->el[b]);
            su = up(su + p1->eu[b]);
            cum = dn(cum + p1->wb[b]);
        } else {
            tu = up(tu + p1->eu[b]);
            tl = dn(tl + p1->el[b]);
            tsum += p1->wb[b];
            tempty = 0;
            /* U = max_T (L_b + Delta_b) [CERT-RANK-01], upward */
            if (up(p1->lhi[b] + p1->dlt[b]) > uhi) uhi = up(p1->lhi[b] + p1->dlt[b]);
        }
        if (b < nq && sel[b]) {
            ks++;
            lam[nl++] = dn(p1->llo[b] - p1->dlt[b]);    /* L_b - Delta_b, downward */
            if (prom[b]) np++;
        }
    }
    /* alpha^_T = T / (T + S) <= tu / (tu + sl) [CERT-SEL-02] */
    re->au = tu == 0.0 ? 0.0 : (sl == 0.0 ? 1.0 : up(1.0 / dn(1.0 + dn(sl / tu))));
    /* E_key: sparse 2 Vmax (t + A (1 - t)) [CERT-EK-01]; paper 2 Vmax min(t,
     * A (e^{2 Delta} + e^{Delta} - 2) / 2) [CERT-EK-04] */
    {
        double vmax = 0.0;
        for (uint32_t b = 0; b < nb; b++)
            if ((double)ch->nu[b] > vmax) vmax = ch->nu[b];   /* [CERT-ANN-04] */
        t_up = up2(tanh(up((double)p1->delta / 2.0)));
        t_dn = dn2(tanh((double)p1->delta / 2.0));
        if (t_dn < 0.0) t_dn = 0.0;
        if (paper) {
            double g = up(up(up2(expm1(up(2.0 * p1->delta))) + up2(expm1((double)p1->delta))) / 2.0);
            double a = up(tail_up(re->au, p1->delta) * g);
            re->ekey = up(up(2.0 * vmax) * (a < t_up ? a : t_up));
        } else {
            re->ekey = up(up(2.0 * vmax) * up(t_up + up(tail_up(re->au, p1->delta) *
                                                        up(1.0 - t_dn))));
        }
    }
    /* E_val [CERT-EV-01] over the attended full blocks, eta' = 0 for promoted
     * blocks; max eta' is also sound [CERT-EV-02].  Sparse: rho_b = E_b / E_S
     * <= eu[b] / sl.  Paper: the Phase-2 scores differ from s^ by at most
     * Delta_b, in the selected blocks only, so rho'_b <= e^{2 Delta} E_b /
     * E_all <= e^{2 Delta} eu[b] / (sl + tl) [CERT-EV-03]. */
    for (uint32_t b = 0; b < nq; b++) {
        double rho;
        if (!(sel[b] || paper) || prom[b] || ch->eta[b] == 0.0f) continue;
        if (paper) rho = up(e2d * up(p1->eu[b] / dn(sl + tl)));
        else rho = sl == 0.0 ? 1.0 : up(p1->eu[b] / sl);
        if (!(rho <= 1.0)) rho = 1.0;
        rsum = up(rsum + up(rho * ch->eta[b]));
        if (ch->eta[b] > etamax) etamax = ch->eta[b];
        if (!((double)ch->eta[b] <= (double)prm->vtol * (double)ch->nu[b])) all_within = 0;
    }
    eval = rsum < etamax ? rsum : etamax;
    re->eval = eval;
    re->k_sel = ks, re->n_prom = np;
    re->checks = 0u;
    /* [CERT-RANK-01]: lambda_r > U + eps_guard; lambda_r the r-th greatest */
    if (tempty) {
        re->checks |= KVQ_CERT_CHECK_RANK;
    } else if (nl >= prm->r) {
        double lr;
        qsort(lam, nl, sizeof *lam, desc_d);
        lr = lam[prm->r - 1u];           /* the r-th greatest */
        if (lr > up(uhi + (double)prm->eps_guard)) re->checks |= KVQ_CERT_CHECK_RANK;
    }
    /* [CERT-BND-01]: A(alpha^_T, Delta) <= (1 - tau) e^{eps_guard} */
    if (tempty || tail_up(re->au, p1->delta) <=
                      dn(((double)1.0 - prm->tau) * dn2(exp((double)prm->eps_guard))))
        re->checks |= KVQ_CERT_CHECK_BOUNDARY;
    /* [CERT-LAD-02] value check: E_val <= vtol sum_A rho_b nu_b over the
     * attended blocks A.  Holds when every non-promoted attended full block
     * has eta_b <= vtol nu_b (then E_val <= vtol sum rho_b nu_b term by term);
     * else compare the claim with a lower bound: sparse rho_b >= el[b] / su,
     * paper rho'_b >= e^{-2 Delta} el[b] / (su + tu). */
    tuh = up(su + tu);
    if (!all_within && su > 0.0) {
        for (uint32_t b = 0; b < nb; b++) {
            if (paper) rhs = dn(rhs + dn(dn(dn(p1->el[b] / tuh) / e2d) * ch->nu[b]));
            else if (sel[b]) rhs = dn(rhs + dn(dn(p1->el[b] / su) * ch->nu[b]));
        }
        rhs = dn(rhs * prm->vtol);
    }
    if (all_within || (double)to_f_up(eval) <= rhs) re->checks |= KVQ_CERT_CHECK_VALUE;
    /* bit 3: the kernel's own estimate met tau, as the selector decides it
     * (else the clamp) */
    if (nq == 0 || covers(cum, p1->tot_hi, prm->tau)) re->checks |= KVQ_CERT_CHECK_COVERAGE;
    re->alpha_hat = tot > 0.0f ? tsum / tot : 0.0f;
}

#define CHECKS_ALL (KVQ_CERT_CHECK_RANK | KVQ_CERT_CHECK_BOUNDARY | KVQ_CERT_CHECK_VALUE)

kvq_status kvq_cert_step(float *out, uint8_t *sel, uint8_t *prom, float *logmass,
                         kvq_cert_record *rec, kvq_cert_decl *decl_out, float *delta1,
                         const float *q, float scale, const kvq_cert_cache *cache,
                         const kvq_cert_params *prm, const kvq_cert_shape *shape)
{
    uint32_t n, d, nq, nb, k0, kstar, kcap, klo, rung;
    float m1 = -INFINITY, smin = INFINITY;
    double cum;
    float *row = NULL, *acc = NULL;
    uint8_t *mode = NULL;
    double eps1 = 0.0, mu1, ue, ua, g16, rad = 0.0, *lam = NULL;
    phase1 p1 = { 0 };
    cmp_ent *cand = NULL;
    rung_eval re;
    kvq_status st;
    if (out == NULL || sel == NULL || prom == NULL || rec == NULL || decl_out == NULL ||
        delta1 == NULL || q == NULL || cache == NULL || prm == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if ((st = step_check(q, scale, cache, prm, shape)) != KVQ_OK) return st;
    n = shape->tokens, d = shape->dim, nq = kvq_cert_full_blocks(shape);
    nb = kvq_cert_blocks(shape);
    p1.s = malloc(sizeof(float) * n), p1.pq = malloc(sizeof(double) * n);
    p1.wb = malloc(sizeof(float) * nb), p1.lm = malloc(sizeof(float) * nb);
    p1.dlt = malloc(sizeof(float) * nb);
    p1.eu = malloc(sizeof(double) * nb), p1.el = malloc(sizeof(double) * nb);
    p1.llo = malloc(sizeof(double) * nb), p1.lhi = malloc(sizeof(double) * nb);
    p1.ord = malloc(sizeof(cmp_ent) * (nq ? nq : 1u));
    cand = malloc(sizeof(cmp_ent) * (nq ? nq : 1u));
    lam = malloc(sizeof(double) * (nq ? nq : 1u));
    row = malloc(sizeof(float) * d), acc = malloc(sizeof(float) * d);
    mode = malloc(nb);
    if (!mode || !p1.s || !p1.pq || !p1.wb || !p1.lm || !p1.dlt || !p1.eu || !p1.el || !p1.llo ||
        !p1.lhi || !p1.ord || !cand || !lam || !row || !acc) {
        st = KVQ_E_NOMEM;
        goto done;
    }
    /* ---- Phase 1 [CERT-AR-02] scores from k^, and the block sums ---- */
    scores(p1.s, p1.pq, row, q, scale, cache, cache->k, shape, 0);
    for (uint32_t t = 0; t < n; t++) {
        if (p1.s[t] > m1) m1 = p1.s[t];
        if (p1.s[t] < smin) smin = p1.s[t];
        if (p1.pq[t] > eps1) eps1 = p1.pq[t];
    }
    for (uint32_t b = 0; b < nb; b++) {
        float sum = 0.0f;
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++)
            sum += expf(p1.s[kvq_cert_block_first(b) + i] - m1); /* RN32 argument; expf */
        p1.wb[b] = sum;
        p1.lm[b] = m1 + logf(sum);       /* L~_b [CERT-LM-02] */
    }
    /* ---- Phase-1 radius [CERT-LM-02] ----
     * |s~_i - s^_i| <= eps1 (eps_s of [CERT-AR-01] over all tokens), and the
     * argument x~ = RN32(s~_i - m1) errs by <= 2^-24 (m1 - min s~) (exact when
     * subnormal): |x~ - (s^_i - m1)| <= mu1.  expf(x~) = e^x~ (1 + e) + a,
     * |e| <= eps_e = U_exp 2^-23, |a| <= (U_exp + 1) 2^-149 (U_exp = 1, glibc
     * expf [TR-CERT-LIBM]); the block sum of <= 16 nonnegative terms rounds
     * each term <= 15 times: W~_b / (1 + gamma_16) <= sum expf <= W~_b / (1 -
     * gamma_16).  Hence
     *   E_b <= e^mu1 (W~_b / (1 - gamma_16) + 16 a) / (1 - eps_e) = eu[b],
     *   E_b >= e^-mu1 (W~_b / (1 + gamma_16) - 16 a) / (1 + eps_e) = el[b],
     * and L_b = m1 + ln E_b lies in [llo[b], lhi[b]].  The radius of block b
     * is the distance from the computed L~_b, and from m1 + ln W~_b (the
     * log-mass the selector ranks and sums), to the far end of that interval,
     * so logf's error and the final rounding of m1 + logf(W~_b) are measured,
     * not assumed [CERT-CHK-03].  *delta1 = RU32 of the greatest radius; +inf
     * when some W~_b underflows so far that el[b] = 0 (L~_b may be -inf). */
    eps1 = up(up(gamma_up(d + 1.0) * scale) * eps1);
    eps1 = up(eps1 + up(up(scale * (double)d + 1.0) * 0x1p-149));
    mu1 = up(eps1 + up(up((double)m1 - (double)smin) * 0x1p-24));
    ue = 0x1p-23;                        /* kvq_cert_pinned_decl: U_exp = 1 */
    ua = 2.0 * 0x1p-149;                 /* (U_exp + 1) 2^-149 */
    g16 = gamma_up(16.0);
    for (uint32_t b = 0; b < nb; b++) {
        double nt = kvq_cert_block_tokens(shape, b), rb;
        p1.eu[b] = up(up(up2(exp(mu1)) * up(up(p1.wb[b] / dn(1.0 - g16)) + up(nt * ua))) /
                      dn(1.0 - ue));
        p1.el[b] = dn(dn(dn2(exp(-mu1)) * dn(dn(p1.wb[b] / up(1.0 + g16)) - up(nt * ua))) /
                      up(1.0 + ue));
        if (!(p1.el[b] > 0.0)) p1.el[b] = 0.0;
        p1.lhi[b] = up((double)m1 + up2(log(p1.eu[b])));
        p1.llo[b] = p1.el[b] > 0.0 ? dn((double)m1 + dn2(log(p1.el[b]))) : -INFINITY;
        if (isinf(p1.lm[b]) || isinf(p1.llo[b]) || p1.wb[b] == 0.0f) {
            rb = INFINITY;
        } else {
            /* the reported L~_b, and m1 + ln W~_b (the selector's log-mass),
             * each against the far end of [llo, lhi] */
            double lw = dn((double)m1 + dn2(log(p1.wb[b]))), hw = up((double)m1 + up2(log(p1.wb[b])));
            double r1 = up((double)p1.lm[b] - p1.llo[b]), r2 = up(p1.lhi[b] - (double)p1.lm[b]);
            double r3 = up(hw - p1.llo[b]), r4 = up(p1.lhi[b] - lw);
            rb = r1 > r2 ? r1 : r2;
            rb = rb > r3 ? rb : r3;
            rb = rb > r4 ? rb : r4;
        }
        if (rb > rad) rad = rb;
        if (logmass != NULL) logmass[b] = p1.lm[b];
    }
    /* Delta_b >= the exact path's [CERT-DLT-04] */
    if ((st = kvq_cert_delta(p1.dlt, &p1.delta, q, scale, cache->k, cache->sigma, cache->z,
                             shape)) != KVQ_OK)
        goto done;
    /* ---- selector [CERT-SEL-01] ----
     * K* = the least k whose first k blocks (plus the residual) hold a share
     * >= tau of sum_b W~_b, decided so that the real share of the binary32
     * values W~_b is >= tau: binary64 sums rounded outward, share >= cum_lo /
     * (cum_lo + (tot_hi - cum_lo)).  With |m1 + ln W~_b - L_b| <= delta1 this
     * makes the coverage condition of [CERT-SEL-02] hold (bounds/cert.md §4). */
    for (uint32_t b = 0; b < nq; b++) p1.ord[b].w = p1.wb[b], p1.ord[b].b = b;
    if (nq > 1) qsort(p1.ord, nq, sizeof *p1.ord, by_key);
    p1.tot_hi = 0.0;
    for (uint32_t b = 0; b < nb; b++) p1.tot_hi = up(p1.tot_hi + p1.wb[b]);
    cum = nq < nb ? p1.wb[nq] : 0.0;     /* the residual block is always in S */
    kstar = nq;
    for (uint32_t kk = 1; kk <= nq; kk++) {
        cum = dn(cum + p1.ord[kk - 1].w);
        if (covers(cum, p1.tot_hi, prm->tau)) {
            kstar = kk;
            break;
        }
    }
    klo = prm->kmin < nq ? prm->kmin : nq;
    kcap = prm->kmax < nq ? prm->kmax : nq;
    k0 = kstar < klo ? klo : (kstar > kcap ? kcap : kstar);
    /* ---- the ladder [CERT-LAD-01/02] ---- */
    for (rung = prm->start_rung; rung <= 2u; rung++) {
        uint32_t kk = rung == 0u ? k0 : (2u * k0 < nq ? 2u * k0 : nq); /* K1 [CERT-SEL-01] */
        for (uint32_t b = 0; b < nb; b++) sel[b] = b < nq ? 0u : 1u;
        for (uint32_t i = 0; i < kk; i++) sel[p1.ord[i].b] = 1u;
        promote(prom, sel, cand, &p1, cache, prm, rung, nq, nb);
        rung_bounds(&re, sel, prom, &p1, lam, cache, prm, nq, nb);
        if ((re.checks & CHECKS_ALL) == CHECKS_ALL) break;
    }
    if (rung <= 2u) {
        /* ---- Phase 2 of the accepted sparse rung [CERT-AR-02] ---- */
        pass_stats ps;
        kvq_cert_decl decl;
        double vh = 0.0, vmax = 0.0;
        const int paper = prm->variant == KVQ_CERT_VARIANT_PAPER;
        for (uint32_t b = 0; b < nb; b++) {
            if ((double)cache->nu[b] > vmax) vmax = cache->nu[b];   /* [CERT-ANN-04] */
            if (!sel[b] && !paper) continue;
            /* ||v~|| <= nu_b + eta_b for INT4 values; nu_b for originals */
            double vb = b < nq && !prom[b] ? up((double)cache->nu[b] + cache->eta[b])
                                           : (double)cache->nu[b];
            if (vb > vh) vh = vb;
        }
        /* attended blocks [CERT-VAR-01]: all (paper) or the selection (sparse) */
        for (uint32_t b = 0; b < nb; b++)
            mode[b] = sel[b] || paper ? (prom[b] ? 2u : 1u) : 0u;
        if (paper) {
            /* the selected blocks' keys from the binary16 originals; the tail
             * keeps its Phase-1 (k^) scores.  Phase 1 is not needed again, so
             * its score array is overwritten. */
            for (uint32_t b = 0; b < nq; b++)
                if (sel[b])
                    for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
                        score_token(p1.s, p1.pq, row, q, scale, cache, cache->k, shape,
                                    kvq_cert_block_first(b) + i, 1);
        }
        pinned_pass(out, acc, row, p1.s, p1.pq, mode, cache, cache->v, shape, &ps);
        decl = kvq_cert_pinned_decl(ps.ns);
        rec->version = 1u;
        rec->rung = rung;
        rec->n = n, rec->d = d, rec->k_sel = re.k_sel, rec->n_prom = re.n_prom;
        rec->checks = re.checks;
        rec->delta = p1.delta;
        rec->alpha_hat = re.alpha_hat;
        rec->vmax = (float)vmax;
        rec->ekey = to_f_up(re.ekey);
        {
            double x2 = exp(2.0 * (double)p1.delta);
            rec->ekey_paper = (float)(2.0 * vmax * x2 * rec->alpha_hat * (x2 - 1.0)); /* [CERT-EK-02] */
        }
        rec->eval = to_f_up(re.eval);
        rec->earith = to_f_up(earith_up(vh, ps.pmax, ps.srange, ps.ns, d, scale, &decl));
        rec->etotal = to_f_up(up(up((double)rec->ekey + rec->eval) + rec->earith));
        *decl_out = decl;
    } else {
        /* ---- rungs 3-4 [CERT-LAD-03]: one pinned dense pass; rung 4 when its
         * E_arith exceeds eps_dense or the ladder starts there ---- */
        double vmax = 0.0;
        if ((st = dense_core(out, rec, decl_out, q, scale, cache->k, cache->v, shape)) != KVQ_OK)
            goto done;
        rec->rung = prm->start_rung == 4u || rec->earith > prm->eps_dense ? 4u : 3u;
        for (uint32_t b = 0; b < nb; b++) {
            sel[b] = 1u, prom[b] = 0u;
            if ((double)cache->nu[b] > vmax) vmax = cache->nu[b];
        }
        rec->delta = p1.delta;
        rec->vmax = (float)vmax;         /* [CERT-ANN-04], as at rungs 0-2 */
    }
    *delta1 = to_f_up(rad);
    st = KVQ_OK;
done:
    free(p1.s), free(p1.pq), free(p1.wb), free(p1.lm), free(p1.dlt), free(p1.eu), free(p1.el);
    free(p1.llo), free(p1.lhi), free(p1.ord), free(cand), free(lam), free(row), free(acc), free(mode);
    return st;
}

kvq_status kvq_cert_step_kv(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                            kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                            const float *k, const float *v, const kvq_cert_params *prm,
                            const kvq_cert_shape *sh, const kvq_policy *pol)
{
    kvq_cert_cache ch;
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    uint32_t fl;
    kvq_status st;
    if (sh == NULL || pol == NULL) return KVQ_E_PARAM;
    /* sizes from the shape as given; an invalid shape is rejected by the first
     * quantizer call before anything is read or written */
    kc = malloc(kvq_cert_key_code_bytes(sh) + 1);
    sigma = malloc(kvq_cert_key_meta_count(sh) * sizeof *sigma + 1);
    z = malloc(kvq_cert_key_meta_count(sh) * sizeof *z + 1);
    vc = malloc(kvq_cert_value_code_bytes(sh) + 1);
    vs = malloc(kvq_cert_value_groups(sh) * sizeof *vs + 1);
    vz = malloc(kvq_cert_value_groups(sh) * sizeof *vz + 1);
    eta = malloc(kvq_cert_blocks(sh) * sizeof *eta + 1);
    nu = malloc(kvq_cert_blocks(sh) * sizeof *nu + 1);
    st = (kc && sigma && z && vc && vs && vz && eta && nu) ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_cert_quantize_keys(kc, sigma, z, &fl, k, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(vc, vs, vz, &fl, v, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(eta, nu, v, vc, vs, vz, sh);
    if (st == KVQ_OK) {
        ch.k = k, ch.v = v, ch.kcodes = kc, ch.sigma = sigma, ch.z = z;
        ch.vcodes = vc, ch.vscale = vs, ch.vzero = vz, ch.eta = eta, ch.nu = nu;
        st = kvq_cert_step(out, sel, prom, NULL, rec, decl, delta1, q, scale, &ch, prm, sh);
    }
    free(kc), free(sigma), free(z), free(vc), free(vs), free(vz), free(eta), free(nu);
    return st;
}
