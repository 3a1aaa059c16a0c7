/*
 * cert_step.c -- one CERT decode step, fast path (binary32): Phase-1 scoring,
 * block log-masses, the selector, Phase-2 attention and the certificate
 * (spec/cert.md).  The quantizers and annotations are in cert.c.
 */
#include <math.h>
#include <stdlib.h>

#include "kvq.h"
#include "cert_internal.h"

#define F32_MIN_NORMAL 0x1p-126f

/* ---- one decode step, rung 0 ----------------------------------------------
 * Bounds are evaluated in binary64 with outward steps: for nonnegative
 * operands, up(a op b) = nextafter(RN64(a op b), +inf) >= the exact result
 * (a nearest rounding errs by less than one ulp), dn likewise downward; libm
 * functions (exp, log1p, tanh: glibc errs by under 2 ulps in binary64) are
 * moved two steps.  to_f_up converts upward to binary32.  These are upper
 * bounds of the exact path's values, not equal to them. */

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

/* gamma_n = n 2^-24 / (1 - n 2^-24), upward (n 2^-24 < 1/2). */
static double gamma_up(double n)
{
    double nu = n * 0x1p-24;             /* exact */
    return up(nu / dn(1.0 - nu));
}

/* A(a, Delta) = e^{2 Delta} a / (1 + (e^{2 Delta} - 1) a) of Lemma A.3,
 * upward for a in [0, 1]: A = 1 / (1 + (1 - a) / (X a)), increasing in a, X. */
static double tail_up(double a, double delta)
{
    double x;
    if (a <= 0.0) return 0.0;
    if (a >= 1.0) return 1.0;
    x = up2(exp(up(2.0 * delta)));
    return up(1.0 / dn(1.0 + dn(dn(1.0 - a) / up(x * a))));
}

typedef struct cmp_ent {
    float w;
    uint32_t b;
} cmp_ent;

/* Greatest W~_b first, ties to the lower block index [CERT-SEL-01]. */
static int by_mass(const void *pa, const void *pb)
{
    const cmp_ent *a = pa, *b = pb;
    if (a->w != b->w) return a->w > b->w ? -1 : 1;
    return a->b < b->b ? -1 : (a->b > b->b ? 1 : 0);
}

/* Binary32 key row of token t: k^ in full blocks [CERT-K8-03], else k. */
static void key_row(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t)
{
    uint32_t d = sh->dim, b = t / KVQ_CERT_BLOCK, i = t % KVQ_CERT_BLOCK;
    for (uint32_t c = 0; c < d; c++) {
        if (b < kvq_cert_full_blocks(sh)) {
            uint64_t m = kvq_cert_key_meta_index(sh, b, c);
            int8_t code = ch->kcodes[kvq_cert_key_block_offset(sh, b) +
                                     kvq_cert_key_code_index(d, i, c)];
            row[c] = fmaf((float)code, ch->sigma[m], ch->z[m]); /* one rounding */
        } else {
            row[c] = ch->k[kvq_cert_in_index(sh, t, c)];
        }
    }
}

/* Binary32 value row v~ of token t: v^ in full blocks [CERT-V4-02], else v. */
static void value_row(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t)
{
    uint32_t d = sh->dim;
    for (uint32_t c = 0; c < d; c++) {
        if (t < kvq_cert_quant_tokens(sh)) {
            uint32_t el, j = kvq_cert_value_group_of(c, &el);
            row[c] = kvq_certi_value_deq(ch->vcodes, ch->vscale, ch->vzero, sh, t, j, el);
        } else {
            row[c] = ch->v[kvq_cert_in_index(sh, t, c)];
        }
    }
}

static kvq_status step_check(const float *q, float scale, const kvq_cert_cache *ch,
                             const kvq_cert_params *prm, const kvq_cert_shape *sh)
{
    kvq_status st;
    uint64_t ne;
    if (ch->k == NULL || ch->v == NULL || ch->kcodes == NULL || ch->sigma == NULL ||
        ch->z == NULL || ch->vcodes == NULL || ch->vscale == NULL || ch->vzero == NULL ||
        ch->eta == NULL || ch->nu == NULL)
        return KVQ_E_PARAM;
    if (!(prm->tau > 0.0f && prm->tau <= 1.0f) || prm->kmin < 1u || prm->kmin > prm->kmax)
        return KVQ_E_PARAM;                           /* [CERT-DUMP-03] ranges */
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

kvq_status kvq_cert_step(float *out, uint8_t *sel, uint8_t *prom, float *logmass,
                         kvq_cert_record *rec, kvq_cert_decl *decl_out, float *delta1,
                         const float *q, float scale, const kvq_cert_cache *cache,
                         const kvq_cert_params *prm, const kvq_cert_shape *shape)
{
    uint32_t n, d, nq, nb, k0 = 0, kstar, kcap, klo, ns = 0, nt = 0;
    float *s, *w, *wb, *row, *acc, *dlt, m1 = -INFINITY, smin = INFINITY, delta, vmax = 0.0f;
    float tot = 0.0f, cum, tsum = 0.0f, ssum = 0.0f, l = 0.0f, m = -INFINITY;
    float smax_s = -INFINITY, smin_s = INFINITY;
    double *pq, eps1 = 0.0, epss = 0.0, ue, ua, g1, mu1, lam, lambda, g, earith, vh = 0.0;
    double tu, sl, au, t_up, t_dn, akey, ekey, rsum = 0.0, etamax = 0.0, eval, x2;
    cmp_ent *ord;
    kvq_cert_decl decl;
    kvq_status st;
    int covered = 0;
    if (out == NULL || sel == NULL || prom == NULL || rec == NULL || decl_out == NULL ||
        delta1 == NULL || q == NULL || cache == NULL || prm == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if ((st = step_check(q, scale, cache, prm, shape)) != KVQ_OK) return st;
    n = shape->tokens, d = shape->dim, nq = kvq_cert_full_blocks(shape);
    nb = kvq_cert_blocks(shape);
    s = malloc(sizeof(float) * n), w = malloc(sizeof(float) * n);
    pq = malloc(sizeof(double) * n);
    wb = malloc(sizeof(float) * nb), dlt = malloc(sizeof(float) * nb);
    row = malloc(sizeof(float) * d), acc = malloc(sizeof(float) * d);
    ord = malloc(sizeof(cmp_ent) * (nq ? nq : 1u));
    if (!s || !w || !pq || !wb || !dlt || !row || !acc || !ord) {
        st = KVQ_E_NOMEM;
        goto done;
    }
    /* Phase 1 [CERT-AR-02] scores; pq[i] = sum_c |q_c| |k^_{i,c}| upward for eps_s:
     * the products are exact in binary64 (11 + 24 bits). */
    for (uint32_t t = 0; t < n; t++) {
        float dot = 0.0f;
        double p = 0.0;
        key_row(row, cache, shape, t);
        for (uint32_t c = 0; c < d; c++) {
            dot += q[c] * row[c];        /* two roundings */
            p = up(p + fabs((double)q[c] * (double)row[c]));
        }
        s[t] = scale * dot;              /* RN32 */
        pq[t] = p;
        if (s[t] > m1) m1 = s[t];
        if (s[t] < smin) smin = s[t];
    }
    for (uint32_t b = 0; b < nb; b++) {
        float sum = 0.0f;
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            w[t] = expf(s[t] - m1);      /* RN32 argument; expf */
            sum += w[t];
        }
        wb[b] = sum;
        if (logmass != NULL) logmass[b] = m1 + logf(sum); /* L~_b [CERT-LM-02] */
        tot += sum;
    }
    /* Selector [CERT-SEL-01] */
    for (uint32_t b = 0; b < nq; b++) ord[b].w = wb[b], ord[b].b = b;
    if (nq > 1) qsort(ord, nq, sizeof *ord, by_mass);
    cum = nq < nb ? wb[nq] : 0.0f;       /* the residual block is always in S */
    kstar = nq;
    for (uint32_t kk = 1; kk <= nq; kk++) {
        cum += ord[kk - 1].w;
        if (cum / tot >= prm->tau) {
            kstar = kk;
            break;
        }
    }
    klo = prm->kmin < nq ? prm->kmin : nq;
    kcap = prm->kmax < nq ? prm->kmax : nq;
    k0 = kstar < klo ? klo : (kstar > kcap ? kcap : kstar);
    for (uint32_t b = 0; b < nb; b++) sel[b] = b < nq ? 0u : 1u;
    for (uint32_t kk = 0; kk < k0; kk++) sel[ord[kk].b] = 1u;
    cum = nq < nb ? wb[nq] : 0.0f;
    for (uint32_t kk = 0; kk < k0; kk++) cum += ord[kk].w;
    covered = nq == 0 || cum / tot >= prm->tau;
    /* Phase 2: pinned online softmax [CERT-AR-02] */
    for (uint32_t c = 0; c < d; c++) acc[c] = 0.0f;
    for (uint32_t b = 0; b < nb; b++) {
        if (!sel[b]) {
            for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) nt++;
            tsum += wb[b];
            continue;
        }
        ssum += wb[b];
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            float mn = s[t] > m ? s[t] : m, alpha = expf(m - mn), wt;
            if (ns == 0) alpha = 0.0f;   /* l = acc = 0: nothing to rescale */
            m = mn;
            wt = expf(s[t] - m);
            value_row(row, cache, shape, t);
            l = l * alpha + wt;          /* two roundings */
            for (uint32_t c = 0; c < d; c++) {
                float pr = wt * row[c];  /* RN32 */
                acc[c] = acc[c] * alpha; /* RN32 */
                acc[c] = acc[c] + pr;    /* RN32: no fmaf [CERT-AR-02] */
            }
            if (s[t] > smax_s) smax_s = s[t];
            if (s[t] < smin_s) smin_s = s[t];
            if (pq[t] > epss) epss = pq[t];
            ns++;
        }
    }
    for (uint32_t c = 0; c < d; c++) out[c] = acc[c] / l;
    for (uint32_t t = 0; t < n; t++)
        if (pq[t] > eps1) eps1 = pq[t];
    /* ---- certificate ---- */
    (void)kvq_cert_delta(dlt, &delta, q, scale, cache->k, cache->sigma, cache->z, shape);
    for (uint32_t b = 0; b < nb; b++) {
        if (cache->nu[b] > vmax) vmax = cache->nu[b];           /* [CERT-ANN-04] */
        if (sel[b]) {
            double e = b < nq ? (double)cache->eta[b] : 0.0;
            double vb = up((double)cache->nu[b] + e);           /* ||v~|| <= nu + eta */
            if (vb > vh) vh = vb;
            if (e > etamax) etamax = e;
        }
    }
    decl = kvq_cert_pinned_decl(ns);
    ue = (double)decl.u_exp * 0x1p-23;                          /* eps_e, exact */
    ua = ((double)decl.u_exp + 1.0) * 0x1p-149;                 /* exp's absolute part */
    /* eps_s [CERT-AR-01], with the absolute term of underflowing products */
    epss = up(up(gamma_up(d + 1.0) * scale) * epss);
    epss = up(epss + up(up(scale * (double)d + 1.0) * 0x1p-149));
    eps1 = up(up(gamma_up(d + 1.0) * scale) * eps1);
    eps1 = up(eps1 + up(up(scale * (double)d + 1.0) * 0x1p-149));
    /* Phase-1 log-perturbation of each weight against e^{s^_i - m1}:
     * |x~ - (s^_i - m1)| <= eps1 + 2^-24 (m1 - min s~). */
    mu1 = up(eps1 + up((double)m1 - (double)smin) * 0x1p-24);
    g1 = gamma_up(16.0 + nb);            /* roundings of any term of a block/total sum */
    /* tail: T <= e^mu1 (T~/(1-g1) + nT a)/(1 - eps_e); selected: S >= e^-mu1 (S~/(1+g1) - nS a)/(1 + eps_e) */
    tu = up(up(up2(exp(mu1)) * up(up(tsum / dn(1.0 - g1)) + up(nt * ua))) / dn(1.0 - ue));
    sl = dn(dn(dn2(exp(-mu1)) * dn(dn(ssum / up(1.0 + g1)) - up(ns * ua))) / up(1.0 + ue));
    if (sl < 0.0) sl = 0.0;
    au = tu == 0.0 ? 0.0 : (sl == 0.0 ? 1.0 : up(1.0 / dn(1.0 + dn(sl / tu))));
    /* E_key = 2 Vmax (t + A (1 - t)) [CERT-EK-01] */
    t_up = up2(tanh(up((double)delta / 2.0)));
    t_dn = dn2(tanh((double)delta / 2.0));
    if (t_dn < 0.0) t_dn = 0.0;
    akey = tail_up(au, delta);
    ekey = up(up(2.0 * vmax) * up(t_up + up(akey * dn(1.0 - t_dn))));
    /* E_val [CERT-EV-01]: rho_b <= e^{2 mu1} (W~_b/(1-g1) + 16 a)/(1 - eps_e) / S~_l */
    for (uint32_t b = 0; b < nq; b++)
        if (sel[b] && cache->eta[b] > 0.0f) {
            double wu = up(up(up2(exp(mu1)) * up(up(wb[b] / dn(1.0 - g1)) + 16.0 * ua)) /
                           dn(1.0 - ue));
            double rho = sl == 0.0 ? 1.0 : up(wu / sl);
            if (rho > 1.0) rho = 1.0;
            rsum = up(rsum + up(rho * cache->eta[b]));
        }
    eval = rsum < etamax ? rsum : etamax; /* both sound [CERT-EV-02] */
    /* E_arith [CERT-AR-01] */
    {
        double rs = up(up((double)smax_s - (double)smin_s) + 4.0 * epss); /* >= R_s */
        double gg, gq, tl;
        lam = up2(-log1p(-ue));
        lambda = up(epss + up((1.0 + decl.rescales) * up(up(rs * 0x1p-24) + lam)));
        g = gamma_up((double)decl.acc_depth);
        gq = up(g / dn(1.0 - g));
        tl = up2(tanh(up(lambda / 2.0)));
        gg = up(2.0 * up(vh * tl));
        gg = up(gg + up(2.0 * up(vh * gq)));
        gg = up(gg + up(up(vh * 0x1p-24) * up(1.0 + 2.0 * gq)));
        gg = up(gg + up(up(2.0 * vh) * up(ns * up((decl.u_exp + 1.0) * 0x1p-148))));
        gg = up(gg + up(up2(sqrt((double)d)) * 0x1p-150));
        gg = up(gg + up(up(up2(sqrt((double)d)) * decl.acc_depth) * 0x1p-148));
        earith = gg;
    }
    x2 = exp(2.0 * (double)delta);
    rec->version = 1u;
    rec->rung = 0u;
    rec->n = n, rec->d = d, rec->k_sel = k0, rec->n_prom = 0u;
    rec->checks = covered ? KVQ_CERT_CHECK_COVERAGE : 0u;
    rec->delta = delta;
    rec->alpha_hat = tot > 0.0f ? tsum / tot : 0.0f;           /* the kernel's estimate */
    rec->vmax = vmax;
    rec->ekey = to_f_up(ekey);
    rec->ekey_paper = (float)(2.0 * vmax * x2 * rec->alpha_hat * (x2 - 1.0)); /* [CERT-EK-02] */
    rec->eval = to_f_up(eval);
    rec->earith = to_f_up(earith);
    rec->etotal = to_f_up(up(up((double)rec->ekey + rec->eval) + rec->earith));
    for (uint32_t b = 0; b < nb; b++) prom[b] = 0u;
    *decl_out = decl;
    *delta1 = INFINITY;                  /* TODO(ladder): the Phase-1 radius */
    st = KVQ_OK;
done:
    free(s), free(w), free(pq), free(wb), free(dlt), free(row), free(acc), free(ord);
    return st;
}
