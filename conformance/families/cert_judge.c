/*
 * certjudge.c -- the verdict on one CERT decode step (spec/cert.md, "`kvq
 * cert` verdicts").
 *
 * SPEC: [CERT-VER-02] [CERT-CON-01] [CERT-CON-02] [CERT-CON-03]
 * The judge re-quantizes K and V with the pinned quantizers (a step carries the
 * binary16 originals only, [CERT-CON-03]: a kernel is judged as if it used the
 * pinned metadata), then lets the exact path recompute Delta, Vmax, alpha^,
 * the sound E_key, E_val, E_arith and the enclosure of ||O_kernel -
 * O_ref_exact||, and decides the checks of [CERT-VER-02] in order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cert_judge.h"
#include "conf.h"
#include "kvq_bits.h"
#include "kvq_layout.h"

void kvq_cert_qcache_free(kvq_cert_qcache *c)
{
    free(c->kc), free(c->vc), free(c->sigma), free(c->z), free(c->vs), free(c->vz);
    free(c->eta), free(c->nu);
    memset(c, 0, sizeof *c);
}

kvq_status kvq_cert_qcache_build(kvq_cert_qcache *c, const float *k, const float *v, const kvq_cert_shape *sh,
                           uint32_t ties)
{
    kvq_policy pol = { ties, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP };
    uint32_t nb = kvq_cert_blocks(sh), fl;
    kvq_status st;
    memset(c, 0, sizeof *c);
    c->kc = malloc(kvq_cert_key_code_bytes(sh) + 1);
    c->sigma = malloc(kvq_cert_key_meta_count(sh) * sizeof(float) + 1);
    c->z = malloc(kvq_cert_key_meta_count(sh) * sizeof(float) + 1);
    c->vc = malloc(kvq_cert_value_code_bytes(sh) + 1);
    c->vs = malloc(kvq_cert_value_groups(sh) * sizeof(float) + 1);
    c->vz = malloc(kvq_cert_value_groups(sh) * sizeof(float) + 1);
    c->eta = malloc(nb * sizeof(float)), c->nu = malloc(nb * sizeof(float));
    if (!c->kc || !c->sigma || !c->z || !c->vc || !c->vs || !c->vz || !c->eta || !c->nu) {
        kvq_cert_qcache_free(c);
        return KVQ_E_NOMEM;
    }
    st = kvq_cert_quantize_keys(c->kc, c->sigma, c->z, &fl, k, sh, &pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(c->vc, c->vs, c->vz, &fl, v, sh, &pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(c->eta, c->nu, v, c->vc, c->vs, c->vz, sh);
    if (st != KVQ_OK) {
        kvq_cert_qcache_free(c);
        return st;
    }
    c->cache.k = k, c->cache.v = v, c->cache.kcodes = c->kc, c->cache.sigma = c->sigma;
    c->cache.z = c->z, c->cache.vcodes = c->vc, c->cache.vscale = c->vs, c->cache.vzero = c->vz;
    c->cache.eta = c->eta, c->cache.nu = c->nu;
    return KVQ_OK;
}

/* x + y moved one step up: an upper bound of the real sum of two upper bounds. */
static double add_up(double x, double y)
{
    return nextafter(x + y, INFINITY);
}

/* "0x3c000000 (0x1p-7, 0.0078125)": hex encoding, %a and decimal [CERT-VER-02]. */
static const char *show(char *buf, size_t n, float x)
{
    snprintf(buf, n, "0x%08lx (%a, %.9g)", (unsigned long)kvq_f32_bits(x), (double)x, (double)x);
    return buf;
}

/* "file:line" for a step read from a dump, the bare name otherwise (line 0). */
static const char *at(char *buf, size_t n, const char *name, long line)
{
    if (line > 0) snprintf(buf, n, "%s:%ld", name, line);
    else snprintf(buf, n, "%s", name);
    return buf;
}

/* "[0x1.2p-3, 0x1.3p-3] (0.140625)": an exact margin's enclosure, %a and decimal. */
static const char *show_margin(char *buf, size_t n, const kvq_exact_cert_margin *m)
{
    snprintf(buf, n, "[%a, %a] (%.9g)", m->lo, m->hi, m->lo);
    return buf;
}

/* One ladder check [CERT-CHK-01]: a FAIL reason when the kernel's claim that
 * it passed does not stand (ok != 1), else 0. */
static int ladder_fail(kvq_cert_case *c, const kvq_cert_dump *dp, const char *path,
                       const kvq_exact_cert_margin *m, const char *what, const char *margin,
                       const char *id)
{
    char a[128], wb[300];
    if (m->ok == 1) return 0;
    c->check = "ladder";
    snprintf(c->detail, sizeof c->detail,
             "%s: ladder: %s check %s at rung %u: exact margin %s in %s, tolerance %a (%.9g)%s %s",
             at(wb, sizeof wb, path, dp->line_select), what, m->ok == 0 ? "fails" : "undecided", dp->rung, margin,
             show_margin(a, sizeof a, m), m->tol, m->tol,
             m->ok == 0 ? ": the recorded rung is not accepted" : "", id);
    return 1;
}

/* Judge one step: KVQ_OK with c filled (PASS or FAIL), or an input error in err.
 * SPEC: [CERT-VER-02] checks 1-4 in order; [CERT-LAD-01..03] */
kvq_status kvq_cert_judge(kvq_cert_case *c, const kvq_cert_dump *dp, const char *path, char *err,
                          size_t errlen)
{
    const kvq_cert_shape *sh;
    uint32_t nq, nb, ksel = 0, nprom = 0;
    int dense;
    kvq_cert_record claim;
    kvq_cert_decl decl;
    kvq_cert_params prm;
    kvq_exact_cert_ladder_out lad;
    float *eta = NULL, *nu = NULL;
    kvq_cert_qcache qc;
    kvq_status st;
    char a[128], b[128], wb[300];
    if (c == NULL || dp == NULL || path == NULL || err == NULL || errlen == 0) return KVQ_E_PARAM;
    sh = &dp->shape;
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", path);
    if (!kvq_cert_shape_ok(sh) || dp->q == NULL || dp->k == NULL || dp->v == NULL ||
        dp->sel == NULL || dp->prom == NULL || dp->out == NULL || dp->rung > 4u) {
        snprintf(err, errlen, "%s: the step is incomplete (shape, arrays or rung) [CERT-DUMP-02]", path);
        return KVQ_E_PARAM;
    }
    nq = kvq_cert_full_blocks(sh), nb = kvq_cert_blocks(sh);
    dense = dp->rung >= 3u;                       /* [CERT-LAD-01] */
    c->claim_ekey = dp->ekey, c->claim_eval = dp->eval, c->claim_earith = dp->earith;
    c->has_earith = dp->has_earith;
    for (uint32_t bl = 0; bl < nq; bl++) ksel += dp->sel[bl] != 0, nprom += dp->prom[bl] != 0;
    if (dense && (ksel != 0 || nprom != 0)) {
        snprintf(err, errlen, "%s: rung %u is dense: no block selection or promotion [CERT-DUMP-02]",
                 at(wb, sizeof wb, path, dp->line_select), dp->rung);
        return KVQ_E_PARAM;
    }
    st = kvq_cert_qcache_build(&qc, dp->k, dp->v, sh, dp->ties);
    if (st != KVQ_OK) {
        snprintf(err, errlen, "%s: cannot quantize the step: %s", path, kvq_status_str(st));
        return st;
    }
    memset(&claim, 0, sizeof claim);
    claim.ekey = dp->ekey, claim.eval = dp->eval, claim.earith = dp->earith;
    decl.u_exp = dp->u_exp, decl.acc_depth = dp->acc_depth, decl.rescales = dp->rescales;
    prm = kvq_cert_default_params();
    prm.tau = dp->tau, prm.kmin = dp->kmin, prm.kmax = dp->kmax, prm.vtol = dp->vtol;
    prm.eps_guard = dp->eps_guard, prm.eps_dense = dp->eps_dense, prm.r = dp->r;
    prm.promote_budget = dp->promote == KVQ_PROMOTE_BUDGET ? dp->budget : KVQ_CERT_PROMOTE_THRESHOLD;
    prm.variant = dp->variant;                    /* [CERT-VAR-02] */
    memset(&lad, 0, sizeof lad);
    eta = malloc(nb * sizeof *eta), nu = malloc(nb * sizeof *nu);
    if (eta == NULL || nu == NULL) st = KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_exact_cert_annotate(eta, nu, dp->v, qc.vc, qc.vs, qc.vz, sh);
    if (st == KVQ_OK && !dense)
        st = kvq_exact_cert_ladder(&lad, dp->rung, dp->sel, dp->prom, dp->q, dp->scale, &qc.cache,
                                   &prm, dp->delta1, sh);
    if (st == KVQ_OK && !dense)
        st = kvq_exact_cert_check(&c->v, dp->out, &claim, dp->sel, dp->prom, dp->q, dp->scale,
                                  &qc.cache, &decl, dp->variant, sh);
    else if (st == KVQ_OK)
        st = kvq_exact_cert_check_dense(&c->v, dp->out, &claim, dp->q, dp->scale, &qc.cache,
                                        &decl, sh);
    kvq_cert_qcache_free(&qc);
    if (st == KVQ_OK && !dense) c->v.has_ladder = 1, c->v.ladder = lad;
    if (st != KVQ_OK) {
        snprintf(err, errlen, "%s: the exact checker cannot judge this step: %s", path, kvq_status_str(st));
        free(eta), free(nu);
        return st;
    }
    /* the recomputed record [CERT-REC-01]: the exact checks' bits at rungs
     * 0-2; at rungs 3-4 k_sel = nq and no check bit */
    c->rec.version = 1, c->rec.rung = dp->rung, c->rec.n = sh->tokens, c->rec.d = sh->dim;
    c->rec.k_sel = dense ? nq : ksel, c->rec.n_prom = nprom, c->rec.checks = dense ? 0u : lad.checks;
    c->rec.delta = c->v.delta, c->rec.alpha_hat = c->v.alpha_hat, c->rec.vmax = c->v.vmax;
    c->rec.ekey = c->v.ekey, c->rec.ekey_paper = c->v.ekey_paper, c->rec.eval = c->v.eval;
    c->rec.earith = c->v.earith;
    {
        double t = add_up(add_up(c->v.ekey, c->v.eval), c->v.earith);
        float f = (float)t;
        if ((double)f < t) f = nextafterf(f, INFINITY);
        c->rec.etotal = f;                        /* >= ekey + eval + earith */
    }
    c->outcome = KVQ_FAIL;
    /* 1. selector contract [CERT-SEL-02] and promotion [CERT-PROM-01..03] (rungs 0-2) */
    if (!dense && !lad.clamp_ok) {
        c->check = "selector";
        snprintf(c->detail, sizeof c->detail, "%s: selector: %u full blocks selected at rung %u, outside [%u, %u] [CERT-SEL-02]",
                 at(wb, sizeof wb, path, dp->line_select), ksel, dp->rung, lad.kmin, lad.kcap);
        goto done;
    }
    if (!dense && lad.selector_ok != 1) {
        c->check = "selector";
        snprintf(c->detail, sizeof c->detail,
                 "%s: selector: coverage %s: ln odds(1 - tau) - ln odds(alpha^_T) in %s is below -2 delta1 = %a, "
                 "alpha^_T in [%a, %a] (%.9g), tau %a, and K = %u is not the cap %u [CERT-SEL-02]",
                 at(wb, sizeof wb, path, dp->line_select), lad.selector_ok == 0 ? "violated" : "undecided",
                 show_margin(a, sizeof a, &lad.coverage), -lad.coverage.tol, lad.alpha_lo,
                 lad.alpha_hi, lad.alpha_hi, (double)dp->tau, ksel, lad.kcap);
        goto done;
    }
    for (uint32_t bl = 0; bl < nq && !dense; bl++) {
        int need = 0;
        if (!dp->sel[bl] || dp->prom[bl]) continue;
        if (dp->rung == 2u) need = 1;             /* [CERT-PROM-03] */
        else if (dp->promote == KVQ_PROMOTE_THRESHOLD)
            need = (double)eta[bl] > (double)dp->vtol * (double)nu[bl]; /* exact product [CERT-PROM-01] */
        if (need) {
            c->check = "promotion";
            snprintf(c->detail, sizeof c->detail, "%s: promotion: selected block %u is not promoted (eta %a, vtol*nu %a, rung %u)",
                     path, bl, (double)eta[bl], (double)dp->vtol * (double)nu[bl], dp->rung);
            goto done;
        }
    }
    if (!dense && dp->promote == KVQ_PROMOTE_BUDGET && dp->rung < 2u && nprom > dp->budget) {
        c->check = "promotion";
        snprintf(c->detail, sizeof c->detail, "%s: promotion: %u blocks promoted, budget %u [CERT-PROM-02]",
                 path, nprom, dp->budget);
        goto done;
    }
    /* 2. ladder consistency [CERT-CHK-01] [CERT-LAD-02]: the recorded rung's
     * checks pass exactly, or fail by no more than the tolerance; a rung
     * higher than needed is allowed (lower rungs are not re-examined). */
    if (!dense) {
        if (ladder_fail(c, dp, path, &lad.rank, "ranking", "lambda_r - U - eps_guard", "[CERT-RANK-01]") ||
            ladder_fail(c, dp, path, &lad.boundary, "boundary", "ln((1 - tau) e^eps_guard) - ln A", "[CERT-BND-01]") ||
            ladder_fail(c, dp, path, &lad.value, "value", "ln(v_tol sum rho_b nu_b) - ln E_val", "[CERT-LAD-02]"))
            goto done;
    } else if (dp->rung == 3u) {
        /* rung 3 only when the declared dense E_arith is within eps_dense
         * [CERT-LAD-02]: the claim when given, else the sound value */
        float e = dp->has_earith ? dp->earith : c->v.earith;
        if (!(e <= dp->eps_dense)) {
            c->check = "ladder";
            snprintf(c->detail, sizeof c->detail,
                     "%s: ladder: rung 3 with dense E_arith %s above eps_dense %s: rung 4 was due [CERT-LAD-02]",
                     at(wb, sizeof wb, path, dp->line_select), show(a, sizeof a, e), show(b, sizeof b, dp->eps_dense));
            goto done;
        }
    }
    /* 3. claims sound [CERT-CON-02] */
    if (c->v.unsound & 1u) {
        c->check = "claims";
        snprintf(c->detail, sizeof c->detail, "%s: claim ekey %s below sound E_key %s", path,
                 show(a, sizeof a, dp->ekey), show(b, sizeof b, c->v.ekey));
        goto done;
    }
    if (c->v.unsound & 2u) {
        c->check = "claims";
        snprintf(c->detail, sizeof c->detail, "%s: claim eval %s below sound E_val %s", path,
                 show(a, sizeof a, dp->eval), show(b, sizeof b, c->v.eval));
        goto done;
    }
    if (dp->has_earith && (c->v.unsound & 4u)) {
        c->check = "claims";
        snprintf(c->detail, sizeof c->detail, "%s: claim earith %s below sound E_arith %s", path,
                 show(a, sizeof a, dp->earith), show(b, sizeof b, c->v.earith));
        goto done;
    }
    /* 4. the contract [CERT-CON-01] (rungs 3-4: [CERT-LAD-03]), sound bounds */
    if (c->v.holds_sound != 1) {
        double bnd = add_up(add_up(c->v.ekey, c->v.eval), c->v.earith);
        c->check = "contract";
        snprintf(c->detail, sizeof c->detail,
                 "%s: contract %s: ||O_kernel - O_ref_exact|| in [%a, %a] (%.9g), bound %s = %a (%.9g)",
                 at(wb, sizeof wb, path, dp->line_out), c->v.holds_sound == 0 ? "violated" : "undecided",
                 c->v.err_lo, c->v.err_hi, c->v.err_lo,
                 dense ? "E_arith (dense rung)" : "E_key + E_val + E_arith", bnd, bnd);
        goto done;
    }
    c->outcome = KVQ_PASS;
done:
    free(eta), free(nu);
    return KVQ_OK;
}
