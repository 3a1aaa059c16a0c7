/*
 * certcmd.c -- `kvq cert`: the certificate checker of one decode step
 * (spec/cert.md, "The `kvq cert` dump" and "`kvq cert` verdicts").
 *
 *   kvq cert DUMP... | --dump FILE ... [--json FILE] [--junit FILE]
 *   kvq cert --make-dump OUT --seed S [--kind K] [--d D] [--n N]
 *            [--scale-ekey X] [--scale-eval X] [--perturb-output]
 *
 * SPEC: [CERT-VER-01] [CERT-VER-02] [CERT-VER-03] [CERT-CON-01] [CERT-CON-02]
 * The checker re-quantizes K and V with the pinned quantizers (the dump holds
 * the binary16 originals only, [CERT-CON-03]: a kernel is judged as if it used
 * the pinned metadata), then lets the exact path (kvq_exact_cert_check)
 * recompute Delta, Vmax, alpha^, the sound E_key, E_val, E_arith and the
 * enclosure of ||O_kernel - O_ref_exact||, and decides the checks of
 * [CERT-VER-02] in order.  Implemented: check 1 in part (the selector's clamp
 * and the promotion rules of [CERT-PROM-01..03]; not the coverage condition of
 * [CERT-SEL-02]), checks 3 and 4.  Not implemented: the ladder check
 * [CERT-CHK-01] [CERT-LAD-02] and the dense rungs 3-4 (such a dump is an input
 * this kvq cannot judge: exit 2).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "kvq_bits.h"
#include "kvq_layout.h"
#include "kvq_rng.h"

#define EXIT_INPUT 2

/* ---- judging one dump ------------------------------------------------------- */

/* The quantized cache of a dump, built by the pinned fast-path quantizers
 * (bit for bit the exact path's, tests/check_cert.c random_vs_exact). */
typedef struct qcache {
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    kvq_cert_cache cache;
} qcache;

static void qc_free(qcache *c)
{
    free(c->kc), free(c->vc), free(c->sigma), free(c->z), free(c->vs), free(c->vz);
    free(c->eta), free(c->nu);
    memset(c, 0, sizeof *c);
}

static kvq_status qc_build(qcache *c, const float *k, const float *v, const kvq_cert_shape *sh,
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
        qc_free(c);
        return KVQ_E_NOMEM;
    }
    st = kvq_cert_quantize_keys(c->kc, c->sigma, c->z, &fl, k, sh, &pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(c->vc, c->vs, c->vz, &fl, v, sh, &pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(c->eta, c->nu, v, c->vc, c->vs, c->vz, sh);
    if (st != KVQ_OK) {
        qc_free(c);
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

/* Judge one dump: KVQ_OK with c filled (PASS or FAIL), or an input error in err. */
static kvq_status judge(kvq_cert_case *c, const kvq_cert_dump *dp, const char *path, char *err,
                        size_t errlen)
{
    const kvq_cert_shape *sh = &dp->shape;
    uint32_t nq = kvq_cert_full_blocks(sh), nb = kvq_cert_blocks(sh), ksel = 0, nprom = 0;
    uint32_t kmin = dp->kmin < nq ? dp->kmin : nq, kcap;
    kvq_cert_record claim;
    kvq_cert_decl decl;
    float *eta = NULL, *nu = NULL;
    qcache qc;
    kvq_status st;
    char a[96], b[96];
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", path);
    c->claim_ekey = dp->ekey, c->claim_eval = dp->eval, c->claim_earith = dp->earith;
    c->has_earith = dp->has_earith;
    if (dp->rung >= 3u) {
        snprintf(err, errlen, "%s: rung %u (dense) is not implemented by this kvq cert", path, dp->rung);
        return KVQ_E_PARAM;
    }
    for (uint32_t bl = 0; bl < nq; bl++) ksel += dp->sel[bl], nprom += dp->prom[bl];
    st = qc_build(&qc, dp->k, dp->v, sh, dp->ties);
    if (st != KVQ_OK) {
        snprintf(err, errlen, "%s: cannot quantize the step: %s", path, kvq_status_str(st));
        return st;
    }
    memset(&claim, 0, sizeof claim);
    claim.ekey = dp->ekey, claim.eval = dp->eval, claim.earith = dp->earith;
    decl.u_exp = dp->u_exp, decl.acc_depth = dp->acc_depth, decl.rescales = dp->rescales;
    eta = malloc(nb * sizeof *eta), nu = malloc(nb * sizeof *nu);
    if (eta == NULL || nu == NULL) st = KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_exact_cert_annotate(eta, nu, dp->v, qc.vc, qc.vs, qc.vz, sh);
    if (st == KVQ_OK)
        st = kvq_exact_cert_check(&c->v, dp->out, &claim, dp->sel, dp->prom, dp->q, dp->scale,
                                  &qc.cache, &decl, sh);
    qc_free(&qc);
    if (st != KVQ_OK) {
        snprintf(err, errlen, "%s: the exact checker cannot judge this step: %s", path, kvq_status_str(st));
        free(eta), free(nu);
        return st;
    }
    /* the recomputed record [CERT-REC-01]; checks bits: not evaluated (0) */
    c->rec.version = 1, c->rec.rung = dp->rung, c->rec.n = sh->tokens, c->rec.d = sh->dim;
    c->rec.k_sel = ksel, c->rec.n_prom = nprom, c->rec.checks = 0;
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
    /* 1. selector clamp [CERT-SEL-02] and promotion [CERT-PROM-01..03] */
    kcap = dp->rung == 0u ? (dp->kmax < nq ? dp->kmax : nq)
                          : (2ull * dp->kmax < nq ? 2u * dp->kmax : nq);
    if (ksel < kmin || ksel > kcap) {
        c->check = "selector";
        snprintf(c->detail, sizeof c->detail, "%s:%ld: selector: %u full blocks selected at rung %u, outside [%u, %u] [CERT-SEL-02]",
                 path, dp->line_select, ksel, dp->rung, kmin, kcap);
        goto done;
    }
    for (uint32_t bl = 0; bl < nq; bl++) {
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
    if (dp->promote == KVQ_PROMOTE_BUDGET && dp->rung < 2u && nprom > dp->budget) {
        c->check = "promotion";
        snprintf(c->detail, sizeof c->detail, "%s: promotion: %u blocks promoted, budget %u [CERT-PROM-02]",
                 path, nprom, dp->budget);
        goto done;
    }
    /* 2. ladder consistency: not implemented (see the banner) */
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
    /* 4. the contract [CERT-CON-01], with the sound bounds */
    if (c->v.holds_sound != 1) {
        c->check = "contract";
        snprintf(c->detail, sizeof c->detail,
                 "%s:%ld: contract %s: ||O_kernel - O_ref_exact|| in [%a, %a] (%.9g), bound E_key + E_val + E_arith = %a (%.9g)",
                 path, dp->line_out, c->v.holds_sound == 0 ? "violated" : "undecided",
                 c->v.err_lo, c->v.err_hi, c->v.err_lo,
                 (double)c->v.ekey + (double)c->v.eval + (double)c->v.earith,
                 (double)c->v.ekey + (double)c->v.eval + (double)c->v.earith);
        goto done;
    }
    c->outcome = KVQ_PASS;
done:
    free(eta), free(nu);
    return KVQ_OK;
}

static void print_case(FILE *f, const kvq_cert_case *c, const kvq_cert_dump *dp)
{
    char a[96], b[96];
    fprintf(f, "kvq cert: %s: d=%u n=%u rung %u, %u full blocks selected of %u, %u promoted\n",
            c->id, dp->shape.dim, dp->shape.tokens, dp->rung, c->rec.k_sel,
            kvq_cert_full_blocks(&dp->shape), c->rec.n_prom);
    fprintf(f, "  Delta %a  alpha^ <= %a  Vmax %a  (paper's E_key term %a)\n", (double)c->v.delta,
            (double)c->v.alpha_hat, (double)c->v.vmax, (double)c->v.ekey_paper);
    fprintf(f, "  E_key    claimed %-40s sound %s\n", show(a, sizeof a, c->claim_ekey), show(b, sizeof b, c->v.ekey));
    fprintf(f, "  E_val    claimed %-40s sound %s\n", show(a, sizeof a, c->claim_eval), show(b, sizeof b, c->v.eval));
    fprintf(f, "  E_arith  claimed %-40s sound %s\n", c->has_earith ? show(a, sizeof a, c->claim_earith) : "-",
            show(b, sizeof b, c->v.earith));
    fprintf(f, "  error    ||O_kernel - O_ref_exact|| in [%a, %a] (%.9g)\n", c->v.err_lo, c->v.err_hi,
            c->v.err_hi);
    fprintf(f, "  margin   sound bound - error >= %a (%.9g); claimed bound - error >= %a\n",
            c->v.margin_sound, c->v.margin_sound, c->v.margin);
    if (c->outcome == KVQ_PASS) fprintf(f, "  PASS\n");
    else fprintf(f, "  FAIL (%s): %s\n", c->check, c->detail);
}

/* ---- making dumps (the bundled CPU subject's certificate) --------------------- */

enum { KIND_SINKS, KIND_CONC, KIND_UNIF, KIND_NEEDLE, KIND_CONST, KIND_COUNT };
static const char *const KIND_NAMES[KIND_COUNT] = { "sinks", "concentrated", "uniform", "needle",
                                                    "constant" };

static float to_f16(float x)
{
    int ov;
    float y = kvq_exact_round_float(x, &kvq_xfmt_binary16, &ov);
    return ov ? copysignf(0x1.ffcp+15f, x) : y;
}

static float rand_f16(kvq_rng *r, float w)
{
    double u = (double)(kvq_rng_next(r) >> 11) * 0x1p-53 * 2.0 - 1.0;
    return to_f16((float)(u * (double)w));
}

/* A random step of one head kind, as tests/check_cert.c's step_random draws them. */
static void gen_step(kvq_cert_dump *dp, kvq_rng *r, int kind)
{
    uint32_t d = dp->shape.dim, n = dp->shape.tokens, needle = kvq_rng_below(r, n);
    float kw = kind == KIND_CONC ? 4.0f : kind == KIND_UNIF ? 0.05f : 1.0f;
    for (uint32_t i = 0; i < d; i++) dp->q[i] = rand_f16(r, 2.0f);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < d; i++) {
            float x = rand_f16(r, kw), y = rand_f16(r, 1.0f);
            if ((kind == KIND_SINKS && t < 2) || (kind == KIND_NEEDLE && t == needle))
                x = to_f16(dp->q[i] * 3.0f + x); /* aligned with q: a large score */
            if (kind == KIND_CONST && i % 4 == 0) x = to_f16(0.25f * (float)(i % 7)), y = 0.5f;
            if (kind == KIND_CONST && i % 32 < 16 && t % 3 == 0) y = -0.75f;
            dp->k[(size_t)t * d + i] = x;
            dp->v[(size_t)t * d + i] = y;
        }
}

static int parse_float_arg(const char *s, float *out)
{
    char *end;
    double x;
    errno = 0;
    x = strtod(s, &end);
    if (errno != 0 || *s == '\0' || *end != '\0' || !isfinite(x) || !(x >= 0.0)) return 0;
    *out = (float)x;
    return 1;
}

static int parse_u32_arg(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long x;
    errno = 0;
    x = strtoull(s, &end, 0);
    if (errno != 0 || *s == '\0' || *s == '-' || *end != '\0' || x > UINT32_MAX) return 0;
    *out = (uint32_t)x;
    return 1;
}

static int make_dump(const char *outp, uint64_t seed, int kind, uint32_t d, uint32_t n,
                     float scale_ekey, float scale_eval, int perturb)
{
    kvq_cert_dump dp;
    kvq_cert_params prm = kvq_cert_default_params();
    kvq_cert_record rec;
    kvq_cert_decl kdecl;
    float delta1;
    uint8_t *prom = NULL;
    kvq_rng r = { seed };
    qcache qc;
    kvq_status st;
    uint32_t nb, ns = 0;
    float *lm = NULL;
    char tmp[1024];
    FILE *f;
    memset(&dp, 0, sizeof dp);
    dp.shape.tokens = n, dp.shape.dim = d;
    if (!kvq_cert_shape_ok(&dp.shape)) {
        fprintf(stderr, "kvq cert: --d %u --n %u outside the limits [CERT-L-01]\n", d, n);
        return EXIT_INPUT;
    }
    if (kvq_cert_dump_alloc(&dp) != KVQ_OK) {
        fprintf(stderr, "kvq cert: out of memory\n");
        return EXIT_INPUT;
    }
    nb = kvq_cert_blocks(&dp.shape);
    dp.scale = 1.0f / sqrtf((float)d);            /* RN32(1/sqrt(d)) [CERT-L-01] */
    gen_step(&dp, &r, kind);
    st = qc_build(&qc, dp.k, dp.v, &dp.shape, KVQ_TIES_EVEN);
    lm = malloc(nb * sizeof *lm);
    prom = malloc(nb);
    if (st == KVQ_OK && (lm == NULL || prom == NULL)) st = KVQ_E_NOMEM;
    if (st == KVQ_OK)
        st = kvq_cert_step(dp.out, dp.sel, prom, lm, &rec, &kdecl, &delta1, dp.q, dp.scale,
                           &qc.cache, &prm, &dp.shape);
    qc_free(&qc);
    free(lm), free(prom);
    if (st != KVQ_OK) {
        fprintf(stderr, "kvq cert: the fast step failed: %s\n", kvq_status_str(st));
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    for (uint32_t b = 0; b < nb; b++) ns += dp.sel[b] ? kvq_cert_block_tokens(&dp.shape, b) : 0u;
    /* The fast path's declaration [CERT-AR-02] and selector parameters
     * [CERT-SEL-03].  It promotes nothing: promote=budget:0 says so
     * [CERT-PROM-02].  delta1 = 0 and eps_guard = 0: the checks that read them
     * are not evaluated by the fast path (record bits 0-2 are 0). */
    dp.tau = prm.tau, dp.kmin = prm.kmin, dp.kmax = prm.kmax, dp.r = 1;
    dp.vtol = 0x1.99999ap-5f, dp.eps_guard = 0.0f, dp.delta1 = 0.0f, dp.eps_dense = INFINITY;
    {
        kvq_cert_decl decl = kvq_cert_pinned_decl(ns);
        dp.u_exp = decl.u_exp, dp.acc_depth = decl.acc_depth, dp.rescales = decl.rescales;
    }
    dp.promote = KVQ_PROMOTE_BUDGET, dp.budget = 0, dp.scoring = KVQ_SCORING_FP;
    dp.ties = KVQ_TIES_EVEN, dp.rung = rec.rung;
    dp.ekey = rec.ekey * scale_ekey, dp.eval = rec.eval * scale_eval, dp.earith = rec.earith;
    dp.has_earith = 1;
    if (perturb) {
        /* |shift| 2 etotal per component: ||shift|| = 2 sqrt(d) etotal >= 8 etotal,
         * so the error exceeds every claimed bound (>= the sound one). */
        float s = 2.0f * rec.etotal;
        for (uint32_t c = 0; c < d; c++) dp.out[c] += (c % 2 ? -s : s);
        for (uint32_t c = 0; c < d; c++)
            if (!isfinite(dp.out[c])) {
                fprintf(stderr, "kvq cert: the perturbed output is not finite\n");
                kvq_cert_dump_free(&dp);
                return EXIT_INPUT;
            }
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", outp, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "kvq cert: cannot write %s: %s\n", tmp, strerror(errno));
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    st = kvq_cert_dump_write(f, &dp);
    if (fclose(f) != 0 || st != KVQ_OK || rename(tmp, outp) != 0) {
        remove(tmp);
        fprintf(stderr, "kvq cert: writing %s failed\n", outp);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    fprintf(stderr, "kvq cert: %s step (seed 0x%016llx, d=%u n=%u, %u tokens attended) -> %s\n",
            KIND_NAMES[kind], (unsigned long long)seed, d, n, ns, outp);
    kvq_cert_dump_free(&dp);
    return 0;
}

/* ---- the command -------------------------------------------------------------- */

int kvq_cert_main(int argc, char **argv)
{
    const char **dumps = NULL, *json = NULL, *junit = NULL, *make = NULL;
    size_t nd = 0;
    uint64_t seed = 1;
    int kind = KIND_SINKS, perturb = 0, have_seed = 0, rc = 0;
    uint32_t d = 64, n = 100;
    float sk = 1.0f, sv = 1.0f;
    kvq_cert_case *cases;
    size_t ncases = 0;
    dumps = malloc((size_t)argc * sizeof *dumps);
    if (dumps == NULL) return EXIT_INPUT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {                        /* kvq cert DUMP... [CERT-VER-01] */
            dumps[nd++] = a;
            continue;
        }
        if (strcmp(a, "--perturb-output") == 0) {
            perturb = 1;
            continue;
        }
        if (v == NULL) { fprintf(stderr, "kvq cert: %s needs a value\n", a); free(dumps); return EXIT_INPUT; }
        i++;
        if (strcmp(a, "--dump") == 0) dumps[nd++] = v;
        else if (strcmp(a, "--json") == 0) json = v;
        else if (strcmp(a, "--junit") == 0) junit = v;
        else if (strcmp(a, "--make-dump") == 0) make = v;
        else if (strcmp(a, "--seed") == 0) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 0);
            if (errno != 0 || *v == '\0' || *v == '-' || *end != '\0') { fprintf(stderr, "kvq cert: bad seed '%s'\n", v); free(dumps); return EXIT_INPUT; }
            have_seed = 1;
        } else if (strcmp(a, "--kind") == 0) {
            kind = -1;
            for (int k = 0; k < KIND_COUNT; k++)
                if (strcmp(v, KIND_NAMES[k]) == 0) kind = k;
            if (kind < 0) { fprintf(stderr, "kvq cert: unknown kind '%s' (sinks, concentrated, uniform, needle, constant)\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--d") == 0) {
            if (!parse_u32_arg(v, &d)) { fprintf(stderr, "kvq cert: bad --d '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--n") == 0) {
            if (!parse_u32_arg(v, &n)) { fprintf(stderr, "kvq cert: bad --n '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--scale-ekey") == 0) {
            if (!parse_float_arg(v, &sk)) { fprintf(stderr, "kvq cert: bad --scale-ekey '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--scale-eval") == 0) {
            if (!parse_float_arg(v, &sv)) { fprintf(stderr, "kvq cert: bad --scale-eval '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else { fprintf(stderr, "kvq cert: unknown option '%s'\n", a); free(dumps); return EXIT_INPUT; }
    }
    if (make != NULL) {
        if (nd != 0 || json != NULL || junit != NULL || !have_seed) {
            fprintf(stderr, "kvq cert: --make-dump takes --seed and no dumps or reports\n");
            free(dumps);
            return EXIT_INPUT;
        }
        free(dumps);
        return make_dump(make, seed, kind, d, n, sk, sv, perturb);
    }
    if (nd == 0) {
        fprintf(stderr, "kvq cert: no dump given (kvq cert DUMP... or --dump FILE)\n");
        free(dumps);
        return EXIT_INPUT;
    }
    cases = calloc(nd, sizeof *cases);
    if (cases == NULL) { free(dumps); return EXIT_INPUT; }
    for (size_t i = 0; i < nd; i++) {
        kvq_cert_dump dp;
        char err[1024];
        kvq_status st = kvq_cert_dump_read(&dp, dumps[i], err, sizeof err);
        if (st == KVQ_OK) {
            st = judge(&cases[ncases], &dp, dumps[i], err, sizeof err);
            if (st == KVQ_OK) print_case(stdout, &cases[ncases++], &dp);
            kvq_cert_dump_free(&dp);
        }
        if (st != KVQ_OK) {
            fprintf(stderr, "kvq cert: %s\n", err);
            rc = EXIT_INPUT;
        }
    }
    {
        size_t failed = 0;
        for (size_t i = 0; i < ncases; i++) failed += cases[i].outcome != KVQ_PASS;
        printf("%zu passed, %zu failed\n", ncases - failed, failed);
        if (rc == 0 && failed) rc = 1;
    }
    if (json != NULL && kvq_report_cert_json(json, cases, ncases) != KVQ_OK) {
        fprintf(stderr, "kvq cert: cannot write %s\n", json);
        rc = EXIT_INPUT;
    }
    if (junit != NULL && kvq_report_cert_junit(junit, cases, ncases) != KVQ_OK) {
        fprintf(stderr, "kvq cert: cannot write %s\n", junit);
        rc = EXIT_INPUT;
    }
    free(cases);
    free(dumps);
    return rc;
}
