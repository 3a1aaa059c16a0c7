/*
 * certcmd.c -- `kvq cert`: the certificate checker of one decode step
 * (spec/cert.md, "The `kvq cert` dump" and "`kvq cert` verdicts").
 *
 *   kvq cert DUMP... | --dump FILE ... [--json FILE] [--junit FILE]
 *   kvq cert --make-dump OUT --seed S [--kind K] [--d D] [--n N] [--start-rung R]
 *            [--tau X] [--kmin N] [--kmax N] [--r N] [--vtol X] [--eps-guard X]
 *            [--eps-dense X] [--budget P] [--variant paper|sparse] [--claim-paper]
 *            [--scale-ekey X] [--scale-eval X] [--perturb-output]
 *
 * SPEC: [CERT-VER-01] [CERT-VER-02] [CERT-VER-03] [CERT-VER-04]
 * Each dump is read strictly (certdump.c) and judged by kvq_cert_judge
 * (certjudge.c: checks 1-4 of [CERT-VER-02] at every rung, decided by the
 * exact path).  --make-dump writes a dump of the bundled CPU subject's full
 * step (kvq_cert_step) [CERT-VER-04].
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cert.h"
#include "cert_judge.h"
#include "conf.h"
#include "kvq_bits.h"
#include "kvq_layout.h"
#include "kvq_rng.h"

#define EXIT_INPUT 2

/* "0x3c000000 (0x1p-7, 0.0078125)": hex encoding, %a and decimal [CERT-VER-02]. */
static const char *show(char *buf, size_t n, float x)
{
    snprintf(buf, n, "0x%08lx (%a, %.9g)", (unsigned long)kvq_f32_bits(x), (double)x, (double)x);
    return buf;
}

static void print_case(FILE *f, const kvq_cert_case *c, const kvq_cert_dump *dp)
{
    char a[96], b[96];
    fprintf(f, "kvq cert: %s: %s step, d=%u n=%u rung %u, %u full blocks selected of %u, %u promoted\n",
            c->id, dp->variant == KVQ_CERT_VARIANT_PAPER ? "paper" : "sparse", dp->shape.dim,
            dp->shape.tokens, dp->rung, c->rec.k_sel, kvq_cert_full_blocks(&dp->shape), c->rec.n_prom);
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
    if (dp->scoring == KVQ_SCORING_INT8 && dp->rung <= 2u)
        /* [CERT-EK-05]: Eq. 12 bounds the true tail mass when delta1 <= Delta/2 */
        fprintf(f, "  scoring  int8: the e^{3 Delta} form (Eq. 12) %s: delta1 %a %s Delta/2 %a\n",
                (double)dp->delta1 <= 0.5 * (double)c->v.delta ? "is implied" : "is not implied",
                (double)dp->delta1, (double)dp->delta1 <= 0.5 * (double)c->v.delta ? "<=" : ">",
                0.5 * (double)c->v.delta);
    if (c->v.has_ladder) {
        const kvq_exact_cert_ladder_out *l = &c->v.ladder;
        fprintf(f, "  checks   exact margins (nats) >= coverage %.17g ranking %.17g boundary %.17g value %.17g; 2 delta1 %.17g; bits 0x%x\n",
                l->coverage.lo, l->rank.lo, l->boundary.lo, l->value.lo, l->rank.tol, l->checks);
    }
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
    if (errno != 0 || !((*s >= '0' && *s <= '9') || *s == '.') || *end != '\0' || !isfinite(x) || !(x >= 0.0) ||
        !isfinite((float)x))
        return 0;
    *out = (float)x;
    return 1;
}

static int parse_u32_arg(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long x;
    errno = 0;
    x = strtoull(s, &end, 0);
    if (errno != 0 || *s < '0' || *s > '9' || *end != '\0' || x > UINT32_MAX) return 0;
    *out = (uint32_t)x;
    return 1;
}

/* What --make-dump draws and how the step runs. */
typedef struct make_opts {
    uint64_t seed;
    int kind, perturb;
    uint32_t d, n;
    float scale_ekey, scale_eval;
    int claim_paper;                     /* claim the paper's Eq. 15 E_key [CERT-EK-02] */
    kvq_cert_params prm;                 /* the step's parameters [CERT-DUMP-03] */
} make_opts;

/* A dump of the bundled CPU subject's full step (kvq_cert_step: selection,
 * promotion, ladder, declaration and Phase-1 radius).  Nothing is written
 * unless the step yields a dump the reader accepts. */
static int make_dump(const char *outp, const make_opts *o)
{
    kvq_cert_dump dp;
    const kvq_cert_params *prm = &o->prm;
    kvq_cert_record rec;
    kvq_cert_decl kdecl;
    float delta1;
    uint8_t *prom = NULL;
    kvq_rng r = { o->seed };
    kvq_cert_qcache qc;
    kvq_status st;
    uint32_t nb, nq, ns = 0, d = o->d;
    float *lm = NULL;
    kvq_outfile of;
    char err[1024];
    memset(&dp, 0, sizeof dp);
    dp.shape.tokens = o->n, dp.shape.dim = o->d;
    if (!kvq_cert_shape_ok(&dp.shape)) {
        fprintf(stderr, "kvq cert: --d %u --n %u outside the limits [CERT-L-01]\n", o->d, o->n);
        return EXIT_INPUT;
    }
    if (kvq_cert_dump_alloc(&dp) != KVQ_OK) {
        fprintf(stderr, "kvq cert: out of memory\n");
        return EXIT_INPUT;
    }
    nb = kvq_cert_blocks(&dp.shape), nq = kvq_cert_full_blocks(&dp.shape);
    dp.scale = 1.0f / sqrtf((float)d);            /* RN32(1/sqrt(d)) [CERT-L-01] */
    gen_step(&dp, &r, o->kind);
    st = kvq_cert_qcache_build(&qc, dp.k, dp.v, &dp.shape, KVQ_TIES_EVEN);
    lm = malloc(nb * sizeof *lm);
    prom = malloc(nb);
    if (st == KVQ_OK && (lm == NULL || prom == NULL)) st = KVQ_E_NOMEM;
    if (st == KVQ_OK)
        st = kvq_cert_step(dp.out, dp.sel, prom, lm, &rec, &kdecl, &delta1, dp.q, dp.scale,
                           &qc.cache, prm, &dp.shape);
    kvq_cert_qcache_free(&qc);                  /* zeroed on a failed build: safe */
    free(lm);
    if (st != KVQ_OK) {
        fprintf(stderr, "kvq cert: the fast step failed: %s\n", kvq_status_str(st));
        free(prom);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    /* The step's own declaration and radius [CERT-AR-01] [CERT-LM-02]: a
     * radius that is not a finite binary32 has no place in a dump
     * [CERT-DUMP-03]. */
    if (!isfinite(delta1) || !(delta1 >= 0.0f) || rec.rung > 4u) {
        fprintf(stderr, "kvq cert: the fast step declared no finite Phase-1 radius (delta1 %a, rung %u); no dump written [CERT-DUMP-03]\n",
                (double)delta1, rec.rung);
        free(prom);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    dp.rung = rec.rung;
    for (uint32_t b = 0; b < nq; b++) {
        if (dp.rung >= 3u) dp.sel[b] = 0, prom[b] = 0; /* dense: `blocks=-` [CERT-DUMP-02] */
        dp.prom[b] = prom[b] && dp.sel[b];
    }
    if (nq < nb) dp.sel[nq] = 1, dp.prom[nq] = 0;   /* the residual block [CERT-L-03] */
    free(prom);
    for (uint32_t b = 0; b < nb; b++)
        ns += dp.rung >= 3u || dp.sel[b] ? kvq_cert_block_tokens(&dp.shape, b) : 0u;
    dp.tau = prm->tau, dp.kmin = prm->kmin, dp.kmax = prm->kmax, dp.r = prm->r;
    dp.vtol = prm->vtol, dp.eps_guard = prm->eps_guard, dp.eps_dense = prm->eps_dense;
    dp.delta1 = delta1;
    dp.u_exp = kdecl.u_exp, dp.acc_depth = kdecl.acc_depth, dp.rescales = kdecl.rescales;
    if (prm->promote_budget == KVQ_CERT_PROMOTE_THRESHOLD) dp.promote = KVQ_PROMOTE_THRESHOLD, dp.budget = 0;
    else dp.promote = KVQ_PROMOTE_BUDGET, dp.budget = prm->promote_budget;
    dp.scoring = KVQ_SCORING_FP, dp.ties = KVQ_TIES_EVEN;
    dp.variant = prm->variant;
    dp.ekey = (o->claim_paper ? rec.ekey_paper : rec.ekey) * o->scale_ekey, dp.eval = rec.eval * o->scale_eval, dp.earith = rec.earith;
    dp.has_earith = 1;
    if (!isfinite(dp.ekey) || !isfinite(dp.eval) || !(dp.ekey >= 0.0f) || !(dp.eval >= 0.0f)) {
        /* the dump format holds finite, non-negative claims [CERT-DUMP-03] */
        fprintf(stderr, "kvq cert: --scale-ekey %g / --scale-eval %g make the claims E_key %a, E_val %a, "
                "which a dump cannot hold; no dump written\n", (double)o->scale_ekey, (double)o->scale_eval,
                (double)dp.ekey, (double)dp.eval);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    if (o->perturb) {
        /* |shift| 2 etotal per component: ||shift|| = 2 sqrt(d) etotal >= 8 etotal,
         * so the error exceeds every claimed bound (>= the sound one). */
        float s = 2.0f * rec.etotal;
        for (uint32_t c = 0; c < d; c++) dp.out[c] += (c % 2 ? -s : s);
    }
    for (uint32_t c = 0; c < d; c++)
        if (!isfinite(dp.out[c])) {
            fprintf(stderr, "kvq cert: output component %u is not finite; no dump written\n", c);
            kvq_cert_dump_free(&dp);
            return EXIT_INPUT;
        }
    if (kvq_outfile_open(&of, outp, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq cert: %s\n", err);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    st = kvq_cert_dump_write(of.f, &dp);
    if (st != KVQ_OK) {
        kvq_outfile_abort(&of);
        fprintf(stderr, "kvq cert: %s: %s\n", outp, st == KVQ_E_PARAM ? "a value has no encoding in the dump format"
                                                                     : "write failed");
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    if (kvq_outfile_commit(&of, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq cert: %s\n", err);
        kvq_cert_dump_free(&dp);
        return EXIT_INPUT;
    }
    fprintf(stderr, "kvq cert: %s step (seed 0x%016llx, d=%u n=%u) at rung %u, %u tokens attended, delta1 %a -> %s\n",
            KIND_NAMES[o->kind], (unsigned long long)o->seed, d, o->n, dp.rung, ns, (double)delta1, outp);
    kvq_cert_dump_free(&dp);
    return 0;
}

/* ---- the command -------------------------------------------------------------- */

int kvq_cert_main(int argc, char **argv)
{
    const char **dumps = NULL, *json = NULL, *junit = NULL, *make = NULL;
    size_t nd = 0;
    int have_seed = 0, rc = 0;
    make_opts mo;
    kvq_cert_case *cases;
    size_t ncases = 0;
    char err[1024];
    memset(&mo, 0, sizeof mo);
    mo.seed = 1, mo.kind = KIND_SINKS, mo.d = 64, mo.n = 100;
    mo.scale_ekey = 1.0f, mo.scale_eval = 1.0f;
    mo.prm = kvq_cert_default_params();
    dumps = malloc((size_t)argc * sizeof *dumps);
    if (dumps == NULL) return EXIT_INPUT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {                        /* kvq cert DUMP... [CERT-VER-01] */
            dumps[nd++] = a;
            continue;
        }
        if (strcmp(a, "--perturb-output") == 0) {
            mo.perturb = 1;
            continue;
        }
        if (strcmp(a, "--claim-paper") == 0) {       /* [CERT-VER-04] */
            mo.claim_paper = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { /* [VER-CLI-01] */
            fputs("usage:\n", stdout);
            fputs(kvq_family_cert.commands[0].usage, stdout);
            free(dumps);
            return 0;
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
            mo.seed = strtoull(v, &end, 0);
            if (errno != 0 || *v < '0' || *v > '9' || *end != '\0') { fprintf(stderr, "kvq cert: bad seed '%s'\n", v); free(dumps); return EXIT_INPUT; }
            have_seed = 1;
        } else if (strcmp(a, "--kind") == 0) {
            mo.kind = -1;
            for (int k = 0; k < KIND_COUNT; k++)
                if (strcmp(v, KIND_NAMES[k]) == 0) mo.kind = k;
            if (mo.kind < 0) { fprintf(stderr, "kvq cert: unknown kind '%s' (sinks, concentrated, uniform, needle, constant)\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--d") == 0) {
            if (!parse_u32_arg(v, &mo.d)) { fprintf(stderr, "kvq cert: bad --d '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--n") == 0) {
            if (!parse_u32_arg(v, &mo.n)) { fprintf(stderr, "kvq cert: bad --n '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--scale-ekey") == 0) {
            if (!parse_float_arg(v, &mo.scale_ekey)) { fprintf(stderr, "kvq cert: bad --scale-ekey '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--scale-eval") == 0) {
            if (!parse_float_arg(v, &mo.scale_eval)) { fprintf(stderr, "kvq cert: bad --scale-eval '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--start-rung") == 0) {     /* [CERT-LAD-01] */
            if (!parse_u32_arg(v, &mo.prm.start_rung) || mo.prm.start_rung > 4u) { fprintf(stderr, "kvq cert: bad --start-rung '%s' (0..4)\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--budget") == 0) {         /* [CERT-PROM-02] */
            if (!parse_u32_arg(v, &mo.prm.promote_budget) || mo.prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD) { fprintf(stderr, "kvq cert: bad --budget '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--kmin") == 0) {
            if (!parse_u32_arg(v, &mo.prm.kmin)) { fprintf(stderr, "kvq cert: bad --kmin '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--kmax") == 0) {
            if (!parse_u32_arg(v, &mo.prm.kmax)) { fprintf(stderr, "kvq cert: bad --kmax '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--r") == 0) {
            if (!parse_u32_arg(v, &mo.prm.r)) { fprintf(stderr, "kvq cert: bad --r '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--tau") == 0) {
            if (!parse_float_arg(v, &mo.prm.tau)) { fprintf(stderr, "kvq cert: bad --tau '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--vtol") == 0) {
            if (!parse_float_arg(v, &mo.prm.vtol)) { fprintf(stderr, "kvq cert: bad --vtol '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--eps-guard") == 0) {
            if (!parse_float_arg(v, &mo.prm.eps_guard)) { fprintf(stderr, "kvq cert: bad --eps-guard '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--variant") == 0) {        /* [CERT-VAR-01] */
            if (strcmp(v, "paper") == 0) mo.prm.variant = KVQ_CERT_VARIANT_PAPER;
            else if (strcmp(v, "sparse") == 0) mo.prm.variant = KVQ_CERT_VARIANT_SPARSE;
            else { fprintf(stderr, "kvq cert: bad --variant '%s' (paper or sparse)\n", v); free(dumps); return EXIT_INPUT; }
        } else if (strcmp(a, "--eps-dense") == 0) {
            if (!parse_float_arg(v, &mo.prm.eps_dense)) { fprintf(stderr, "kvq cert: bad --eps-dense '%s'\n", v); free(dumps); return EXIT_INPUT; }
        } else { fprintf(stderr, "kvq cert: unknown option '%s'\n", a); free(dumps); return EXIT_INPUT; }
    }
    if (make != NULL) {
        if (nd != 0 || json != NULL || junit != NULL || !have_seed) {
            fprintf(stderr, "kvq cert: --make-dump takes --seed and no dumps or reports\n");
            free(dumps);
            return EXIT_INPUT;
        }
        free(dumps);
        return make_dump(make, &mo);
    }
    if (nd == 0) {
        fprintf(stderr, "kvq cert: no dump given (kvq cert DUMP... or --dump FILE)\n");
        free(dumps);
        return EXIT_INPUT;
    }
    {
        /* a report over one of the dumps it judges [VER-OUT-03] */
        kvq_argpath *in = calloc(nd, sizeof *in);
        const kvq_argpath outp[] = { { "--json", json }, { "--junit", junit } };
        int clash;
        if (in == NULL) { free(dumps); return EXIT_INPUT; }
        for (size_t k = 0; k < nd; k++) in[k].opt = "", in[k].path = dumps[k];
        clash = kvq_paths_clash("kvq cert", in, nd, outp, 2);
        free(in);
        if (clash) { free(dumps); return EXIT_INPUT; }
    }
    cases = calloc(nd, sizeof *cases);
    if (cases == NULL) { free(dumps); return EXIT_INPUT; }
    for (size_t i = 0; i < nd; i++) {
        kvq_cert_dump dp;
        char err[1024];
        kvq_status st = kvq_cert_dump_read(&dp, dumps[i], err, sizeof err);
        if (st == KVQ_OK) {
            st = kvq_cert_judge(&cases[ncases], &dp, dumps[i], err, sizeof err);
            if (st == KVQ_OK) /* what was judged [VER-REP-05] */
                st = kvq_sha256_file(dumps[i], cases[ncases].sha256, err, sizeof err);
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
    if (json != NULL && kvq_report_cert_json(json, cases, ncases, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq cert: %s\n", err);
        rc = EXIT_INPUT;
    }
    if (junit != NULL && kvq_report_cert_junit(junit, cases, ncases, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq cert: %s\n", err);
        rc = EXIT_INPUT;
    }
    free(cases);
    free(dumps);
    return rc;
}
