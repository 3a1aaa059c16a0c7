/*
 * cert_decode_test.cu -- device check of the certified CERT decode step
 * (gpu/cert/decode_*.cu; spec/cert.md "The device kernel").
 *
 * Random batches (head kinds: sinks, concentrated, near-uniform, needles,
 * constant channels; d in {16, 48, 64, 128, 256}, so that Phase 1 and Phase 2
 * meet idle lanes (d < 128) and a second channel chunk (d = 256); ragged n
 * from 1 to a few thousand; GQA groups of 1-5 query heads, so that Phase 1's
 * passes of four heads meet a partial pass) run on the GPU; every query
 * head's step is then judged by the EXACT path on the CPU (MPFR, ref/exact)
 * in worker threads while the GPU goes on.  Both step variants run
 * [CERT-VAR-01]: most batches the paper variant (the default; Phase 2 of
 * decode_phase2p.cu, [CERT-DEV-10]), about one in four the sparse one, and
 * every judgement below is made for the batch's variant:
 *   - Phase 1's radius: every block's log-mass L~_b (kvq_cuda_cert_phase1)
 *     lies within its radius err_b of the exact L_b (kvq_exact_cert_logmass),
 *     and the declared delta1 is >= every err_b [CERT-DEV-02] [CERT-LM-02];
 *   - kvq_exact_cert_check (rungs 0-2) / kvq_exact_cert_check_dense (rung 3):
 *     the contract holds for the claimed and for the sound sums, and every
 *     claim is >= the sound value [CERT-CON-01..02] [CERT-LAD-03];
 *   - kvq_exact_cert_ladder (when the library has it): the selector contract
 *     [CERT-SEL-02] and every check the record claims passed [CERT-CHK-01];
 *   - the promotion rule against ref/fast's annotations [CERT-PROM-01..03],
 *     the clamp, the record's counts;
 *   - bitwise: every batch again with the other selector [CERT-DEV-03], the
 *     other staging of promoted values [CERT-DEV-01] and, in the paper
 *     variant, its Phase 2 with and without the early segment pass
 *     [CERT-DEV-10], all outputs equal,
 *     and the workspace left clear (kvq_cuda_cert_ws_residue);
 *   - bitwise: the device's key codes, sigma, z, value codes and metadata
 *     (ref/fast quantizers) and eta, nu (kvq_cert_annotate) [CERT-DEV-07].
 * A few steps are written as `kvq cert` dumps (KVQ_CERT_DUMP_DIR) for the
 * carried `kvq cert` to judge.
 *
 * Environment: KVQ_SEED, KVQ_CERT_STEPS (default 100000 query-head steps),
 * KVQ_CERT_SECONDS (stop sending batches after this many seconds, then judge
 * what was sent and report it; default: no limit), KVQ_THREADS (CPU checkers;
 * default: online CPUs), KVQ_CERT_DUMP_DIR.
 * Without a device: "gpu-cert-decode-test: SKIPPED (no CUDA device: ...)",
 * exit 0, as gpu/cert/cert_test.cu (gpu/testbed.h: seed, RNG, device, closing).
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <mpfr.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "families/cert_dump.h" /* a C header without C++ guards */
}
#include "kvq.h"
#include "kvq_cuda.h"
#include "kvq_exact.h"
#include "testbed.h"

#pragma weak kvq_exact_cert_ladder

#define DEFAULT_SEED 0x5eedcafe2026ull
#define MAX_N   20480u              /* long heads: nq > 1024 (the select kernel's runs) */
#define MAX_D   256u
#define MAX_KV  4u
#define MAX_G   5u

static double gauss(void)
{
    double s = 0.0;
    for (int i = 0; i < 6; i++) s += kvq_tb_rndf();
    return (s - 3.0) * 1.41421356;
}
static float f16(double x)
{
    if (x > 60000.0) x = 60000.0;
    if (x < -60000.0) x = -60000.0;
    return __half2float(__float2half_rn((float)x));
}

/* Head dimension: mostly 64 and 128; 16 and 48 leave Phase-1/2 lanes idle,
 * 256 takes a second channel chunk. */
static uint32_t pick_dim(void)
{
    const uint32_t u = kvq_tb_rndu(100);
    return u < 30 ? 64u : (u < 65 ? 128u : (u < 75 ? 16u : (u < 85 ? 48u : 256u)));
}

/* The softmax scale: binary32 nearest to 1/sqrt(d) (any positive normal
 * binary32 value is a legal scale [CERT-L-01]). */
static float dim_scale(uint32_t d) { return (float)(1.0 / sqrt((double)d)); }

/* ---- one batch and its per-head jobs ---------------------------------- */

typedef struct batch {
    uint32_t kvh, group, n, d;
    kvq_cert_shape sh;
    float scale;
    kvq_cert_params prm;
    float *q, *k, *v;                         /* [qh][d], [kvh][n][d] */
    /* ref/fast quantization of each KV head (the cache the checker reads) */
    int8_t *kc;
    float *sg, *z, *vs, *vz, *eta, *nu;
    uint8_t *vc;
    /* GPU outputs */
    float *out, *d1;
    kvq_cert_record *rec;
    kvq_cert_decl *decl;
    uint32_t *status;
    uint8_t *sel, *prom;
    float *lt, *rad;                          /* [qh][nb] Phase 1: L~_b, err_b (or NULL) */
    float dbg[MAX_KV * MAX_G][12];           /* E_arith terms (kvq_cuda_cert_debug) */
    int refs;
    const char *kind[MAX_KV];
} batch;

typedef struct job {
    batch *b;
    uint32_t qh;
    int dump;
} job;

static pthread_mutex_t g_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER, g_cv_space = PTHREAD_COND_INITIALIZER;
static job *g_q;
static size_t g_qcap = 4096, g_qhead, g_qtail, g_qlen;
static int g_done;

static unsigned long g_steps, g_pass, g_fail, g_undecided, g_ladder_checked, g_dense,
    g_rung[5], g_bitwise, g_dumps, g_prom_total, g_radius_blocks;
static unsigned long g_var_pass[KVQ_CERT_VARIANTS];   /* passed steps of each variant */
static unsigned long g_var_dumps[KVQ_CERT_VARIANTS];
static int g_have_ladder;
static const char *g_dump_dir;

static void report_fail(const batch *b, uint32_t qh, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&g_mx);
    g_fail++;
    if (g_fail <= 20) {
        fprintf(stderr, "FAIL seed 0x%016llx n=%u d=%u kvh=%u group=%u qh=%u kind=%s variant=%s "
                "rung=%u: ", (unsigned long long)kvq_tb_seed(), b->n, b->d, b->kvh, b->group, qh,
                b->kind[qh / b->group], b->prm.variant == KVQ_CERT_VARIANT_PAPER ? "paper" : "sparse",
                b->rec[qh].rung);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    pthread_mutex_unlock(&g_mx);
}

static void batch_release(batch *b)
{
    pthread_mutex_lock(&g_mx);
    int r = --b->refs;
    pthread_mutex_unlock(&g_mx);
    if (r) return;
    void *p[] = {b->q, b->k, b->v, b->kc, b->sg, b->z, b->vs, b->vz, b->eta, b->nu, b->vc,
                 b->out, b->d1, b->rec, b->decl, b->status, b->sel, b->prom, b->lt, b->rad};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    free(b);
}

static void write_dump(const batch *b, uint32_t qh, const kvq_cert_cache *c)
{
    (void)c;
    char path[1024];
    snprintf(path, sizeof path, "%s/gpu-step-%03lu.dump", g_dump_dir, g_dumps);
    const uint32_t kv = qh / b->group, nb = kvq_cert_blocks(&b->sh);
    kvq_cert_dump dp;
    memset(&dp, 0, sizeof dp);
    dp.shape = b->sh;
    dp.scale = b->scale;
    dp.tau = b->prm.tau;
    dp.vtol = b->prm.vtol;
    dp.eps_guard = b->prm.eps_guard;
    dp.delta1 = b->d1[qh];
    dp.u_exp = b->decl[qh].u_exp;
    dp.eps_dense = b->prm.eps_dense;
    dp.kmin = b->prm.kmin;
    dp.kmax = b->prm.kmax;
    dp.r = b->prm.r;
    dp.acc_depth = b->decl[qh].acc_depth;
    dp.rescales = b->decl[qh].rescales;
    dp.promote = b->prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD ? KVQ_PROMOTE_THRESHOLD
                                                                     : KVQ_PROMOTE_BUDGET;
    dp.budget = dp.promote == KVQ_PROMOTE_BUDGET ? b->prm.promote_budget : 0u;
    dp.scoring = KVQ_SCORING_FP;
    dp.ties = KVQ_TIES_EVEN;
    dp.variant = b->prm.variant;                 /* [CERT-DUMP-03] variant= */
    dp.q = b->q + (uint64_t)qh * b->d;
    dp.k = b->k + (uint64_t)kv * b->n * b->d;
    dp.v = b->v + (uint64_t)kv * b->n * b->d;
    dp.rung = b->rec[qh].rung;
    dp.sel = b->sel + (uint64_t)qh * nb;
    dp.prom = b->prom + (uint64_t)qh * nb;
    dp.out = b->out + (uint64_t)qh * b->d;
    dp.ekey = b->rec[qh].ekey;
    dp.eval = b->rec[qh].eval;
    dp.earith = b->rec[qh].earith;
    dp.has_earith = 1;
    FILE *f = fopen(path, "w");
    if (!f || kvq_cert_dump_write(f, &dp) != KVQ_OK) {
        fprintf(stderr, "gpu-cert-decode-test: cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

/* Judge one query head's step exactly.  SPEC: [CERT-CON-01] [CERT-CON-02]
 * [CERT-LAD-03] [CERT-SEL-02] [CERT-CHK-01] [CERT-PROM-01..03]; the device's
 * own claims: its selection [CERT-DEV-03], checks and bounds [CERT-DEV-04],
 * Phase 2 and its declaration [CERT-DEV-05], the dense rungs [CERT-DEV-06] */
static void check_job(const job *jb)
{
    const batch *b = jb->b;
    const uint32_t qh = jb->qh, kv = qh / b->group, d = b->d;
    const kvq_cert_shape *sh = &b->sh;
    const uint32_t nb = kvq_cert_blocks(sh), nq = kvq_cert_full_blocks(sh);
    const uint64_t nv = (uint64_t)b->n * d;
    kvq_cert_cache c;
    c.k = b->k + kv * nv;
    c.v = b->v + kv * nv;
    c.kcodes = b->kc + kv * kvq_cert_key_code_bytes(sh);
    c.sigma = b->sg + kv * kvq_cert_key_meta_count(sh);
    c.z = b->z + kv * kvq_cert_key_meta_count(sh);
    c.vcodes = b->vc + kv * kvq_cert_value_code_bytes(sh);
    c.vscale = b->vs + kv * kvq_cert_value_groups(sh);
    c.vzero = b->vz + kv * kvq_cert_value_groups(sh);
    c.eta = b->eta + (uint64_t)kv * nb;
    c.nu = b->nu + (uint64_t)kv * nb;
    const float *q = b->q + (uint64_t)qh * d, *o = b->out + (uint64_t)qh * d;
    const kvq_cert_record *r = &b->rec[qh];
    const uint8_t *sel = b->sel + (uint64_t)qh * nb, *prom = b->prom + (uint64_t)qh * nb;
    int bad = 0, und = 0;

    if (b->status[qh] != KVQ_OK) {
        report_fail(b, qh, "device status %s", kvq_status_str((kvq_status)b->status[qh]));
        return;
    }
    /* a certificate must be finite: an infinite claim is vacuously sound */
    if (!isfinite(r->ekey) || !isfinite(r->eval) || !isfinite(r->earith) ||
        !isfinite(r->etotal) || !isfinite(b->d1[qh]) || !(b->d1[qh] >= 0.0f)) {
        const float *g = b->dbg[qh < MAX_KV * MAX_G ? qh : 0];
        report_fail(b, qh, "non-finite claim: ekey %a eval %a earith %a delta1 %a; E_arith "
                    "terms amax %a smax %a smin %a eps %a R %a Lam %a g %a g1 %a Vh %a nS %a "
                    "nch %a E %a",
                    (double)r->ekey, (double)r->eval, (double)r->earith, (double)b->d1[qh],
                    (double)g[0], (double)g[1], (double)g[2], (double)g[3], (double)g[4],
                    (double)g[5], (double)g[6], (double)g[7], (double)g[8], (double)g[9],
                    (double)g[10], (double)g[11]);
        return;
    }
    /* Phase 1's radius [CERT-DEV-02]: exact L_b within err_b of L~_b, decided
     * with one outward binary64 step on each side; delta1 >= every err_b */
    if (b->lt != NULL) {
        const float *lt = b->lt + (uint64_t)qh * nb, *rad = b->rad + (uint64_t)qh * nb;
        double *lo = (double *)kvq_tb_malloc(nb * sizeof(double));
        double *hi = (double *)kvq_tb_malloc(nb * sizeof(double));
        kvq_status ls = kvq_exact_cert_logmass(lo, hi, q, b->scale, &c, sh);
        int rb = ls != KVQ_OK;
        uint32_t at = 0;
        for (uint32_t i = 0; i < nb && !rb; i++) {
            const double dn = nextafter((double)lt[i] - (double)rad[i], INFINITY);
            const double up = nextafter((double)lt[i] + (double)rad[i], -INFINITY);
            if (!(rad[i] >= 0.0f) || !(lo[i] >= dn) || !(hi[i] <= up) || !(b->d1[qh] >= rad[i])) {
                rb = 1;
                at = i;
            }
        }
        if (rb) {
            if (ls != KVQ_OK)
                report_fail(b, qh, "exact log-masses: %s", kvq_status_str(ls));
            else
                report_fail(b, qh, "Phase-1 radius: block %u of %u: L~ %a err %a, exact L in "
                            "[%a, %a], delta1 %a", at, nb, (double)lt[at], (double)rad[at],
                            lo[at], hi[at], (double)b->d1[qh]);
        }
        free(lo);
        free(hi);
        if (rb) return;
        pthread_mutex_lock(&g_mx);
        g_radius_blocks += nb;
        pthread_mutex_unlock(&g_mx);
    }
    /* record counts */
    uint32_t ks = 0, np = 0;
    for (uint32_t i = 0; i < nq; i++) {
        ks += sel[i];
        np += prom[i];
        if (prom[i] && !sel[i]) bad = 1;
    }
    if (nb > nq && (!sel[nq] || prom[nq])) bad = 1;
    if (bad || ks != r->k_sel || np != r->n_prom || r->version != 1u || r->n != b->n ||
        r->d != d) {
        report_fail(b, qh, "record/flags inconsistent (k_sel %u vs %u, n_prom %u vs %u)",
                    r->k_sel, ks, r->n_prom, np);
        return;
    }
    kvq_exact_cert_verdict vd;
    kvq_status st;
    if (r->rung >= 3u) {
        if (ks != nq || np != 0u) {
            report_fail(b, qh, "dense rung with a partial selection");
            return;
        }
        st = kvq_exact_cert_check_dense(&vd, o, r, q, b->scale, &c, &b->decl[qh], sh);
    } else {
        /* clamp [CERT-SEL-02] item 1 */
        const uint32_t kmin = b->prm.kmin < nq ? b->prm.kmin : nq;
        const uint32_t kc0 = b->prm.kmax < nq ? b->prm.kmax : nq;
        const uint32_t kc = r->rung == 0u ? kc0 : (2u * b->prm.kmax < nq ? 2u * b->prm.kmax : nq);
        if (ks < kmin || ks > kc) {
            report_fail(b, qh, "clamp: K=%u outside [%u, %u]", ks, kmin, kc);
            return;
        }
        /* promotion rule against ref/fast's exact annotations [CERT-PROM-01..03] */
        const int thr = b->prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD;
        for (uint32_t i = 0; i < nq; i++) {
            if (!sel[i]) continue;
            const int must = (double)c.eta[i] > (double)b->prm.vtol * (double)c.nu[i];
            if (r->rung == 2u && !prom[i]) bad = 1;
            if (r->rung < 2u && thr && must && !prom[i]) bad = 1;
            if (r->rung < 2u && !thr && prom[i] && !must) bad = 1;
        }
        if (!thr && r->rung < 2u && np > b->prm.promote_budget) bad = 1;
        if (bad) {
            report_fail(b, qh, "promotion rule");
            return;
        }
        st = kvq_exact_cert_check(&vd, o, r, sel, prom, q, b->scale, &c, &b->decl[qh],
                                  b->prm.variant, sh);
    }
    if (st != KVQ_OK) {
        report_fail(b, qh, "exact checker: %s", kvq_status_str(st));
        return;
    }
    if (vd.unsound) {
        report_fail(b, qh, "unsound claim (bits %u): ekey %a/%a eval %a/%a earith %a/%a",
                    vd.unsound, (double)r->ekey, (double)vd.ekey, (double)r->eval,
                    (double)vd.eval, (double)r->earith, (double)vd.earith);
        return;
    }
    if (vd.holds == 0 || vd.holds_sound == 0) {
        report_fail(b, qh, "contract violated: error in [%a, %a], claims %a %a %a", vd.err_lo,
                    vd.err_hi, (double)r->ekey, (double)r->eval, (double)r->earith);
        return;
    }
    if (vd.holds < 0 || vd.holds_sound < 0) und = 1;
    if (r->rung <= 2u && g_have_ladder) {
        kvq_exact_cert_ladder_out lo;
        st = kvq_exact_cert_ladder(&lo, r->rung, sel, prom, q, b->scale, &c, &b->prm,
                                   b->d1[qh], sh);
        if (st != KVQ_OK) {
            report_fail(b, qh, "exact ladder: %s", kvq_status_str(st));
            return;
        }
        if (lo.selector_ok == 0 || lo.clamp_ok != 1) {
            report_fail(b, qh, "selector contract: coverage margin [%a, %a] tol %a, cap %d",
                        lo.coverage.lo, lo.coverage.hi, lo.coverage.tol, lo.cap);
            return;
        }
        if (((r->checks & KVQ_CERT_CHECK_RANK) && lo.rank.ok == 0) ||
            ((r->checks & KVQ_CERT_CHECK_BOUNDARY) && lo.boundary.ok == 0) ||
            ((r->checks & KVQ_CERT_CHECK_VALUE) && lo.value.ok == 0)) {
            report_fail(b, qh, "a claimed check fails exactly: rank [%a,%a] bnd [%a,%a] val [%a,%a]",
                        lo.rank.lo, lo.rank.hi, lo.boundary.lo, lo.boundary.hi, lo.value.lo,
                        lo.value.hi);
            return;
        }
        /* the accepted rung's checks must all have passed [CERT-LAD-02] */
        if ((r->checks & 7u) != 7u) {
            report_fail(b, qh, "rung %u accepted with checks 0x%x", r->rung, r->checks);
            return;
        }
        if (lo.selector_ok < 0 || lo.rank.ok < 0 || lo.boundary.ok < 0 || lo.value.ok < 0) und = 1;
    }
    pthread_mutex_lock(&g_mx);
    if (und) g_undecided++;
    else g_pass++;
    if (r->rung <= 2u && g_have_ladder) g_ladder_checked++;
    if (r->rung >= 3u) g_dense++;
    g_rung[r->rung < 5u ? r->rung : 4u]++;
    g_prom_total += np;
    if (!und) g_var_pass[b->prm.variant]++;
    /* dumps of both variants (three each) for the carried `kvq cert` */
    int dump = 0;
    if (g_dump_dir && r->rung <= 2u && g_var_dumps[b->prm.variant] < 3 && b->n <= 600u) {
        dump = 1;
        g_dumps++;
        g_var_dumps[b->prm.variant]++;
    }
    if (dump) write_dump(b, qh, &c);
    pthread_mutex_unlock(&g_mx);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g_mx);
        while (g_qlen == 0 && !g_done) pthread_cond_wait(&g_cv, &g_mx);
        if (g_qlen == 0 && g_done) {
            pthread_mutex_unlock(&g_mx);
            break;
        }
        job jb = g_q[g_qhead];
        g_qhead = (g_qhead + 1) % g_qcap;
        g_qlen--;
        pthread_cond_signal(&g_cv_space);
        pthread_mutex_unlock(&g_mx);
        check_job(&jb);
        batch_release(jb.b);
        mpfr_free_cache();
    }
    return NULL;
}

static void push_job(batch *b, uint32_t qh)
{
    pthread_mutex_lock(&g_mx);
    while (g_qlen + 1 >= g_qcap) pthread_cond_wait(&g_cv_space, &g_mx);
    g_q[g_qtail].b = b;
    g_q[g_qtail].qh = qh;
    g_qtail = (g_qtail + 1) % g_qcap;
    g_qlen++;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mx);
}

/* ---- data generation ----------------------------------------------------- */

static const char *KINDS[] = {"sinks", "concentrated", "near-uniform", "needles", "constant"};

/* Keys of one KV head for its group's queries (qs: group query vectors). */
static void gen_keys(float *k, const float *qs, uint32_t g, uint32_t n, uint32_t d, int kind)
{
    const double base = kind == 2 ? 0.02 : 0.5;
    for (uint64_t i = 0; i < (uint64_t)n * d; i++) k[i] = f16(gauss() * base);
    /* tokens made relevant: key ~ a * q_g / |q_g| */
    uint32_t nrel = 0;
    uint32_t rel[64];
    if (kind == 0) {                          /* sinks: the first few tokens */
        for (uint32_t i = 0; i < 1u + kvq_tb_rndu(4) && i < n; i++) rel[nrel++] = i;
    } else if (kind == 1) {                   /* clustered relevant blocks */
        const uint32_t nbk = 1u + kvq_tb_rndu(3);
        for (uint32_t c = 0; c < nbk; c++) {
            const uint32_t s = kvq_tb_rndu(n);
            for (uint32_t i = s; i < n && i < s + 8u + kvq_tb_rndu(24) && nrel < 64u; i++)
                rel[nrel++] = i;
        }
        if (n > 0) rel[nrel < 64u ? nrel++ : 63u] = 0;
    } else if (kind == 3) {                   /* needles */
        for (uint32_t c = 0; c < 1u + kvq_tb_rndu(6) && nrel < 64u; c++)
            rel[nrel++] = kvq_tb_rndu(n);
    }
    for (uint32_t r = 0; r < nrel; r++) {
        const float *qv = qs + (uint64_t)kvq_tb_rndu(g) * d;
        double nn = 0.0;
        for (uint32_t c = 0; c < d; c++) nn += (double)qv[c] * qv[c];
        nn = sqrt(nn) + 1e-3;
        const double a = (2.0 + 10.0 * kvq_tb_rndf()) * sqrt((double)d) / nn;
        for (uint32_t c = 0; c < d; c++)
            k[(uint64_t)rel[r] * d + c] = f16(qv[c] * a / sqrt((double)d) * 1.0 + gauss() * 0.05);
    }
    if (kind == 4) {                          /* constant channels (some all-constant keys) */
        const int all = kvq_tb_chance(30);
        for (uint32_t c = 0; c < d; c++) {
            if (!all && !kvq_tb_chance(40)) continue;
            const float cv = f16(gauss());
            for (uint32_t i = 0; i < n; i++) k[(uint64_t)i * d + c] = cv;
        }
    }
}

static void gen_values(float *v, uint32_t n, uint32_t d)
{
    const double sc = kvq_tb_chance(20) ? 0.01 : (kvq_tb_chance(20) ? 30.0 : 1.0);
    for (uint64_t i = 0; i < (uint64_t)n * d; i++) v[i] = f16(gauss() * sc);
    if (kvq_tb_chance(30)) {                  /* constant groups, outliers */
        for (uint32_t c0 = 0; c0 < d; c0 += 16u) {
            if (!kvq_tb_chance(30)) continue;
            const float cv = f16(gauss());
            for (uint32_t i = 0; i < n; i++)
                for (uint32_t c = c0; c < c0 + 16u; c++) v[(uint64_t)i * d + c] = cv;
        }
        for (uint32_t o = 0; o < 1u + kvq_tb_rndu(8); o++)
            v[(uint64_t)kvq_tb_rndu(n) * d + kvq_tb_rndu(d)] = f16(gauss() * 200.0);
    }
}

static kvq_cert_params gen_params(void)
{
    kvq_cert_params p = kvq_cert_default_params();
    const uint32_t u = kvq_tb_rndu(100);
    if (u < 10) p.promote_budget = kvq_tb_rndu(3);
    else if (u < 15) p.tau = 0x1.ccccccp-1f;          /* 0.9 */
    else if (u < 20) p.tau = 1.0f;
    else if (u < 25) p.eps_guard = 0.5f;
    else if (u < 29) p.start_rung = 1u + kvq_tb_rndu(3);
    else if (u < 35) {
        p.kmin = 1u + kvq_tb_rndu(4);
        p.kmax = p.kmin + kvq_tb_rndu(12);
    } else if (u < 40) p.r = 1u + kvq_tb_rndu(3);
    else if (u < 43) p.vtol = 0.0f;
    /* the paper variant mostly (the default), the sparse one a quarter of the
     * time [CERT-VAR-01] */
    p.variant = kvq_tb_chance(25) ? KVQ_CERT_VARIANT_SPARSE : KVQ_CERT_VARIANT_PAPER;
    return p;
}

/* ---- device buffers ------------------------------------------------------ */
typedef struct dev {
    float *k, *v, *q, *sg, *z, *vs, *vz, *eta, *nu, *out, *d1;
    int8_t *kc;
    uint8_t *vc, *sel, *prom;
    uint16_t *kr, *vr, *t2, *t2d;
    kvq_cert_record *rec;
    kvq_cert_decl *decl;
    uint32_t *status;
    kvq_cuda_cert_ws *ws;
} dev;

static void dev_init(dev *D)
{
    const uint64_t nv = (uint64_t)MAX_KV * MAX_N * MAX_D, nb = MAX_KV * (MAX_N / 16u + 1u);
    const uint64_t qh = MAX_KV * MAX_G;
    kvq_tb_cuda(cudaMalloc((void **)&D->k, nv * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->v, nv * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->q, qh * MAX_D * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->sg, nv / 16 * 4 + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->z, nv / 16 * 4 + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->vs, nv / 16 * 4 + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->vz, nv / 16 * 4 + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->eta, nb * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->nu, nb * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->out, qh * MAX_D * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->d1, qh * 4), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->kc, nv + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->vc, nv / 2 + 64), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->sel, qh * (MAX_N / 16u + 1u)), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->prom, qh * (MAX_N / 16u + 1u)), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->kr, MAX_KV * 16u * MAX_D * 2), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->vr, MAX_KV * 16u * MAX_D * 2), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->rec, qh * sizeof(kvq_cert_record)), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->decl, qh * sizeof(kvq_cert_decl)), "malloc");
    kvq_tb_cuda(cudaMalloc((void **)&D->status, qh * 4), "malloc");
    kvq_tb_cuda(cudaHostAlloc((void **)&D->t2, 2 * nv * 2, cudaHostAllocMapped), "hostalloc");
    kvq_tb_cuda(cudaHostGetDevicePointer((void **)&D->t2d, D->t2, 0), "devptr");
    kvq_cert_shape ms = {MAX_N, MAX_D};
    if (kvq_cuda_cert_ws_create(&D->ws, (uint32_t)qh, &ms) != KVQ_OK) {
        fprintf(stderr, "gpu-cert-decode-test: workspace\n");
        exit(2);
    }
}

static unsigned long g_bitwise_fail, g_paths, g_paths_fail, g_long;
static unsigned long g_staged;     /* batches with a promoted block, run staged and unstaged */
static unsigned long g_residue;    /* batches that left workspace entries set */

/* Compare n bytes bitwise; report the first difference. */
static int same_bytes(const void *a, const void *b, size_t n, const char *what, const batch *bt)
{
    const long i = kvq_tb_first_diff(a, b, n);
    if (i < 0) return 1;
    pthread_mutex_lock(&g_mx);
    g_bitwise_fail++;
    if (g_bitwise_fail <= 10)
        fprintf(stderr, "FAIL seed 0x%016llx n=%u d=%u: %s differs from ref/fast at byte %zu\n",
                (unsigned long long)kvq_tb_seed(), bt->n, bt->d, what, (size_t)i);
    pthread_mutex_unlock(&g_mx);
    return 0;
}

static void run_batch(dev *D, uint64_t *steps_left)
{
    batch *b = (batch *)calloc(1, sizeof *b);
    if (!b) exit(2);
    const uint32_t u = kvq_tb_rndu(100);
    /* the exact check costs about n d: mostly short heads, a tail to 3000 */
    b->n = u < 85 ? 1u + kvq_tb_rndu(112)
                  : (u < 98 ? 112u + kvq_tb_rndu(400) : 512u + kvq_tb_rndu(2500));
    b->d = pick_dim();
    b->kvh = 1u + kvq_tb_rndu(MAX_KV);
    b->group = 1u + kvq_tb_rndu(MAX_G);
    if (kvq_tb_rndu(2000) == 0) {
        /* a long head: more full blocks than the select kernel has threads,
         * so each of its threads walks a run of several blocks */
        b->n = 16385u + kvq_tb_rndu(MAX_N - 16385u);
        b->d = kvq_tb_chance(50) ? 16u : 64u;
        b->kvh = 1u;
        b->group = 1u + kvq_tb_rndu(2);
        pthread_mutex_lock(&g_mx);
        g_long++;
        pthread_mutex_unlock(&g_mx);
    }
    b->sh.tokens = b->n;
    b->sh.dim = b->d;
    b->scale = dim_scale(b->d);
    b->prm = gen_params();
    const uint32_t qh = b->kvh * b->group, d = b->d, n = b->n;
    const kvq_cert_shape *sh = &b->sh;
    const uint32_t nb = kvq_cert_blocks(sh), nres = kvq_cert_residual_tokens(sh);
    const uint64_t nv = (uint64_t)n * d;
    b->q = (float *)kvq_tb_malloc(qh * d * 4);
    b->k = (float *)kvq_tb_malloc(b->kvh * nv * 4);
    b->v = (float *)kvq_tb_malloc(b->kvh * nv * 4);
    b->kc = (int8_t *)kvq_tb_malloc(b->kvh * kvq_cert_key_code_bytes(sh));
    b->sg = (float *)kvq_tb_malloc(b->kvh * kvq_cert_key_meta_count(sh) * 4);
    b->z = (float *)kvq_tb_malloc(b->kvh * kvq_cert_key_meta_count(sh) * 4);
    b->vc = (uint8_t *)kvq_tb_malloc(b->kvh * kvq_cert_value_code_bytes(sh));
    b->vs = (float *)kvq_tb_malloc(b->kvh * kvq_cert_value_groups(sh) * 4);
    b->vz = (float *)kvq_tb_malloc(b->kvh * kvq_cert_value_groups(sh) * 4);
    b->eta = (float *)kvq_tb_malloc(b->kvh * nb * 4);
    b->nu = (float *)kvq_tb_malloc(b->kvh * nb * 4);
    b->out = (float *)kvq_tb_malloc(qh * d * 4);
    b->d1 = (float *)kvq_tb_malloc(qh * 4);
    b->rec = (kvq_cert_record *)kvq_tb_malloc(qh * sizeof(kvq_cert_record));
    b->decl = (kvq_cert_decl *)kvq_tb_malloc(qh * sizeof(kvq_cert_decl));
    b->status = (uint32_t *)kvq_tb_malloc(qh * 4);
    b->sel = (uint8_t *)kvq_tb_malloc(qh * nb);
    b->prom = (uint8_t *)kvq_tb_malloc(qh * nb);
    b->lt = (float *)kvq_tb_malloc((uint64_t)qh * nb * 4);
    b->rad = (float *)kvq_tb_malloc((uint64_t)qh * nb * 4);
    const double qa = kvq_tb_chance(20) ? 4.0 : 1.0;
    for (uint32_t i = 0; i < qh * d; i++) b->q[i] = f16(gauss() * qa);
    kvq_policy pol = kvq_policy_default;
    for (uint32_t h = 0; h < b->kvh; h++) {
        const int kind = (int)kvq_tb_rndu(5);
        b->kind[h] = KINDS[kind];
        gen_keys(b->k + h * nv, b->q + (uint64_t)h * b->group * d, b->group, n, d, kind);
        gen_values(b->v + h * nv, n, d);
        /* ref/fast quantization and annotations: the checker's cache */
        if (kvq_cert_quantize_keys(b->kc + h * kvq_cert_key_code_bytes(sh),
                                   b->sg + h * kvq_cert_key_meta_count(sh),
                                   b->z + h * kvq_cert_key_meta_count(sh), NULL, b->k + h * nv, sh,
                                   &pol) != KVQ_OK ||
            kvq_cert_quantize_values(b->vc + h * kvq_cert_value_code_bytes(sh),
                                     b->vs + h * kvq_cert_value_groups(sh),
                                     b->vz + h * kvq_cert_value_groups(sh), NULL, b->v + h * nv,
                                     sh, &pol) != KVQ_OK ||
            kvq_cert_annotate(b->eta + (uint64_t)h * nb, b->nu + (uint64_t)h * nb, b->v + h * nv,
                              b->vc + h * kvq_cert_value_code_bytes(sh),
                              b->vs + h * kvq_cert_value_groups(sh),
                              b->vz + h * kvq_cert_value_groups(sh), sh) != KVQ_OK) {
            fprintf(stderr, "gpu-cert-decode-test: ref/fast quantization failed\n");
            exit(2);
        }
    }
    /* device: the originals, quantized and annotated on the GPU */
    kvq_tb_cuda(cudaMemcpy(D->k, b->k, b->kvh * nv * 4, cudaMemcpyHostToDevice), "copy k");
    kvq_tb_cuda(cudaMemcpy(D->v, b->v, b->kvh * nv * 4, cudaMemcpyHostToDevice), "copy v");
    kvq_tb_cuda(cudaMemcpy(D->q, b->q, qh * d * 4, cudaMemcpyHostToDevice), "copy q");
    uint16_t res[MAX_KV * 2 * 16 * MAX_D];
    for (uint32_t h = 0; h < b->kvh; h++) {
        for (uint64_t i = 0; i < nv; i++) {
            D->t2[h * nv + i] = __half_as_ushort(__float2half_rn(b->k[h * nv + i]));
            D->t2[b->kvh * nv + h * nv + i] = __half_as_ushort(__float2half_rn(b->v[h * nv + i]));
        }
        for (uint64_t i = 0; i < (uint64_t)nres * d; i++) {
            res[h * nres * d + i] =
                __half_as_ushort(__float2half_rn(b->k[h * nv + (uint64_t)(n - nres) * d + i]));
            res[MAX_KV * 16 * MAX_D + h * nres * d + i] =
                __half_as_ushort(__float2half_rn(b->v[h * nv + (uint64_t)(n - nres) * d + i]));
        }
        if (kvq_cert_full_blocks(sh) > 0u) {
            if (kvq_cuda_cert_quantize_keys(D->kc + h * kvq_cert_key_code_bytes(sh),
                                            D->sg + h * kvq_cert_key_meta_count(sh),
                                            D->z + h * kvq_cert_key_meta_count(sh), NULL,
                                            D->k + h * nv, sh, &pol, 0) != KVQ_OK ||
                kvq_cuda_cert_quantize_values(D->vc + h * kvq_cert_value_code_bytes(sh),
                                              D->vs + h * kvq_cert_value_groups(sh),
                                              D->vz + h * kvq_cert_value_groups(sh), NULL,
                                              D->v + h * nv, sh, &pol, 0) != KVQ_OK) {
                fprintf(stderr, "gpu-cert-decode-test: device quantization failed\n");
                exit(2);
            }
        }
        if (kvq_cuda_cert_annotate(D->eta + (uint64_t)h * nb, D->nu + (uint64_t)h * nb,
                                   D->v + h * nv, D->vc + h * kvq_cert_value_code_bytes(sh),
                                   D->vs + h * kvq_cert_value_groups(sh),
                                   D->vz + h * kvq_cert_value_groups(sh), sh, 0) != KVQ_OK) {
            fprintf(stderr, "gpu-cert-decode-test: annotate launch failed\n");
            exit(2);
        }
    }
    kvq_tb_cuda(cudaMemcpy(D->kr, res, (uint64_t)b->kvh * nres * d * 2, cudaMemcpyHostToDevice),
                "kr");
    kvq_tb_cuda(cudaMemcpy(D->vr, res + MAX_KV * 16 * MAX_D, (uint64_t)b->kvh * nres * d * 2,
                        cudaMemcpyHostToDevice), "vr");
    kvq_cuda_cert_heads H;
    memset(&H, 0, sizeof H);
    H.kv_heads = b->kvh;
    H.group = b->group;
    H.shape = *sh;
    H.scale = b->scale;
    H.d_q = D->q;
    H.d_kcodes = D->kc;
    H.d_sigma = D->sg;
    H.d_z = D->z;
    H.d_vcodes = D->vc;
    H.d_vscale = D->vs;
    H.d_vzero = D->vz;
    H.d_eta = D->eta;
    H.d_nu = D->nu;
    H.d_kres = D->kr;
    H.d_vres = D->vr;
    H.t2_k = D->t2d;
    H.t2_v = D->t2d + b->kvh * nv;
    /* the fast selector mostly at its full gather capacity, sometimes at a
     * small one (0: the radix selector), so that both selectors and the
     * switch between them at rung 1 are met [CERT-DEV-03] */
    const uint32_t cap = kvq_tb_chance(70) ? 1024u : kvq_tb_rndu(9);
    /* and the staging pool of promoted values mostly full size, sometimes
     * small or off (0), so that staged, unstaged and mixed groups are met */
    const uint32_t scap = kvq_tb_chance(70) ? 32u : kvq_tb_rndu(4);
    /* and the select kernel's early fetch of staged values mostly as large as
     * its buffer, sometimes 0-4 blocks (4: the default), so that claims copied
     * at its end are met (the second run fetches all it can, or stages
     * nothing) */
    const uint32_t pcap = kvq_tb_chance(70) ? 1024u : kvq_tb_rndu(5);
    /* and the paper variant's Phase 2 mostly with its early segment pass,
     * sometimes waiting for the select kernel (the second run the other way):
     * a segment computed before the selection and one recomputed after it
     * must give the step of the pass that waits, bit for bit [CERT-DEV-10] */
    const int ovl = kvq_tb_chance(70) ? 1 : 0;
    if (kvq_cuda_cert_ws_set_gather(D->ws, cap) != KVQ_OK ||
        kvq_cuda_cert_ws_set_overlap(D->ws, ovl) != KVQ_OK ||
        kvq_cuda_cert_ws_set_stage(D->ws, scap) != KVQ_OK ||
        kvq_cuda_cert_ws_set_prefetch(D->ws, pcap) != KVQ_OK)
        exit(2);
    kvq_status st = kvq_cuda_cert_step_async(D->out, D->rec, D->decl, D->d1, D->status, D->sel,
                                             D->prom, &H, &b->prm, 1, D->ws, 0);
    if (st != KVQ_OK) {
        fprintf(stderr, "gpu-cert-decode-test: step launch: %s\n", kvq_status_str(st));
        exit(2);
    }
    kvq_tb_cuda(cudaDeviceSynchronize(), "step");
    kvq_tb_cuda(cudaMemcpy(b->out, D->out, qh * d * 4, cudaMemcpyDeviceToHost), "out");
    kvq_tb_cuda(cudaMemcpy(b->rec, D->rec, qh * sizeof(kvq_cert_record), cudaMemcpyDeviceToHost),
                "rec");
    kvq_tb_cuda(cudaMemcpy(b->decl, D->decl, qh * sizeof(kvq_cert_decl), cudaMemcpyDeviceToHost),
                "decl");
    kvq_tb_cuda(cudaMemcpy(b->d1, D->d1, qh * 4, cudaMemcpyDeviceToHost), "d1");
    kvq_tb_cuda(cudaMemcpy(b->status, D->status, qh * 4, cudaMemcpyDeviceToHost), "status");
    kvq_tb_cuda(cudaMemcpy(b->sel, D->sel, qh * nb, cudaMemcpyDeviceToHost), "sel");
    kvq_tb_cuda(cudaMemcpy(b->prom, D->prom, qh * nb, cudaMemcpyDeviceToHost), "prom");
    /* the same step with the other selector (the radix one when the first run
     * had the full gather capacity, else the fast one) and the other staging
     * (none when the first run had the full pool, else the full pool): every
     * output must be bitwise the same [CERT-DEV-03] [CERT-DEV-01] */
    {
        const size_t n_out = (size_t)qh * d * 4, n_rec = qh * sizeof(kvq_cert_record),
                     n_decl = qh * sizeof(kvq_cert_decl), n_sel = (size_t)qh * nb;
        uint8_t *t = (uint8_t *)kvq_tb_malloc(n_out + n_rec + n_decl + 8u * qh + 2u * n_sel);
        uint8_t *t_rec = t + n_out, *t_decl = t_rec + n_rec, *t_d1 = t_decl + n_decl,
                *t_st = t_d1 + 4u * qh, *t_sel = t_st + 4u * qh, *t_prom = t_sel + n_sel;
        if (kvq_cuda_cert_ws_set_gather(D->ws, cap == 1024u ? 0u : 1024u) != KVQ_OK ||
            kvq_cuda_cert_ws_set_stage(D->ws, scap == 32u ? 0u : 32u) != KVQ_OK ||
            kvq_cuda_cert_ws_set_prefetch(D->ws, 1024u) != KVQ_OK ||
            kvq_cuda_cert_ws_set_overlap(D->ws, 1 - ovl) != KVQ_OK ||
            kvq_cuda_cert_step_async(D->out, D->rec, D->decl, D->d1, D->status, D->sel, D->prom,
                                     &H, &b->prm, 1, D->ws, 0) != KVQ_OK) {
            fprintf(stderr, "gpu-cert-decode-test: second step launch failed\n");
            exit(2);
        }
        kvq_tb_cuda(cudaDeviceSynchronize(), "step (other selector)");
        kvq_tb_cuda(cudaMemcpy(t, D->out, n_out, cudaMemcpyDeviceToHost), "out");
        kvq_tb_cuda(cudaMemcpy(t_rec, D->rec, n_rec, cudaMemcpyDeviceToHost), "rec");
        kvq_tb_cuda(cudaMemcpy(t_decl, D->decl, n_decl, cudaMemcpyDeviceToHost), "decl");
        kvq_tb_cuda(cudaMemcpy(t_d1, D->d1, qh * 4, cudaMemcpyDeviceToHost), "d1");
        kvq_tb_cuda(cudaMemcpy(t_st, D->status, qh * 4, cudaMemcpyDeviceToHost), "status");
        kvq_tb_cuda(cudaMemcpy(t_sel, D->sel, n_sel, cudaMemcpyDeviceToHost), "sel");
        kvq_tb_cuda(cudaMemcpy(t_prom, D->prom, n_sel, cudaMemcpyDeviceToHost), "prom");
        const int same = memcmp(t, b->out, n_out) == 0 && memcmp(t_rec, b->rec, n_rec) == 0 &&
                         memcmp(t_decl, b->decl, n_decl) == 0 &&
                         memcmp(t_d1, b->d1, qh * 4) == 0 && memcmp(t_st, b->status, qh * 4) == 0 &&
                         memcmp(t_sel, b->sel, n_sel) == 0 && memcmp(t_prom, b->prom, n_sel) == 0;
        free(t);
        uint64_t residue = 0;
        if (kvq_cuda_cert_ws_residue(D->ws, &residue) != KVQ_OK) exit(2);
        int anyprom = 0;
        for (size_t i = 0; i < n_sel && !anyprom; i++) anyprom = b->prom[i] != 0;
        pthread_mutex_lock(&g_mx);
        g_paths++;
        g_staged += anyprom ? 1u : 0u;
        if (residue != 0u && ++g_residue <= 10)
            fprintf(stderr, "FAIL seed 0x%016llx n=%u d=%u: %llu workspace entries not clear "
                    "after the step\n", (unsigned long long)kvq_tb_seed(), b->n, b->d,
                    (unsigned long long)residue);
        if (!same && ++g_paths_fail <= 10)
            fprintf(stderr, "FAIL seed 0x%016llx n=%u d=%u variant=%s: the fast and the radix "
                    "selector (gather capacity %u, staging slots %u, early fetch %u, early "
                    "segment pass %d) give different steps\n", (unsigned long long)kvq_tb_seed(),
                    b->n, b->d, b->prm.variant == KVQ_CERT_VARIANT_PAPER ? "paper" : "sparse", cap,
                    scap, pcap, ovl);
        pthread_mutex_unlock(&g_mx);
    }
    for (uint32_t i = 0; i < qh; i++)
        if (kvq_cuda_cert_debug(b->dbg[i], D->ws, i) != KVQ_OK ||
            kvq_cuda_cert_phase1(b->lt + (uint64_t)i * nb, b->rad + (uint64_t)i * nb, D->ws, i,
                                 nb) != KVQ_OK)
            exit(2);
    /* bitwise: device quantization and annotations vs ref/fast [CERT-DEV-07] */
    {
        const uint64_t kcb = b->kvh * kvq_cert_key_code_bytes(sh);
        const uint64_t km = b->kvh * kvq_cert_key_meta_count(sh);
        const uint64_t vcb = b->kvh * kvq_cert_value_code_bytes(sh);
        const uint64_t vg = b->kvh * kvq_cert_value_groups(sh);
        void *t = kvq_tb_malloc(kcb + km * 8 + vcb + vg * 8 + b->kvh * nb * 8 + 64);
        uint8_t *p = (uint8_t *)t;
        int ok = 1;
        kvq_tb_cuda(cudaMemcpy(p, D->kc, kcb, cudaMemcpyDeviceToHost), "kc");
        ok &= same_bytes(p, b->kc, kcb, "key codes", b);
        kvq_tb_cuda(cudaMemcpy(p, D->sg, km * 4, cudaMemcpyDeviceToHost), "sg");
        ok &= same_bytes(p, b->sg, km * 4, "sigma", b);
        kvq_tb_cuda(cudaMemcpy(p, D->z, km * 4, cudaMemcpyDeviceToHost), "z");
        ok &= same_bytes(p, b->z, km * 4, "z", b);
        kvq_tb_cuda(cudaMemcpy(p, D->vc, vcb, cudaMemcpyDeviceToHost), "vc");
        ok &= same_bytes(p, b->vc, vcb, "value codes", b);
        kvq_tb_cuda(cudaMemcpy(p, D->vs, vg * 4, cudaMemcpyDeviceToHost), "vs");
        ok &= same_bytes(p, b->vs, vg * 4, "value scale", b);
        kvq_tb_cuda(cudaMemcpy(p, D->vz, vg * 4, cudaMemcpyDeviceToHost), "vz");
        ok &= same_bytes(p, b->vz, vg * 4, "value zero", b);
        kvq_tb_cuda(cudaMemcpy(p, D->eta, b->kvh * nb * 4, cudaMemcpyDeviceToHost), "eta");
        ok &= same_bytes(p, b->eta, b->kvh * nb * 4, "eta", b);
        kvq_tb_cuda(cudaMemcpy(p, D->nu, b->kvh * nb * 4, cudaMemcpyDeviceToHost), "nu");
        ok &= same_bytes(p, b->nu, b->kvh * nb * 4, "nu", b);
        free(t);
        pthread_mutex_lock(&g_mx);
        g_bitwise += ok ? 1u : 0u;
        pthread_mutex_unlock(&g_mx);
    }
    b->refs = (int)qh;
    for (uint32_t i = 0; i < qh; i++) push_job(b, i);
    *steps_left = *steps_left > qh ? *steps_left - qh : 0;
    pthread_mutex_lock(&g_mx);
    g_steps += qh;
    pthread_mutex_unlock(&g_mx);
}

/* kvq_cuda_cert_step_host on a few heads: the same judgement [CERT-DEV-08]. */
static void run_host_api(unsigned long cases)
{
    for (unsigned long t = 0; t < cases; t++) {
        batch *b = (batch *)calloc(1, sizeof *b);
        b->n = 1u + kvq_tb_rndu(300);
        b->d = pick_dim();
        b->kvh = b->group = 1u;
        b->sh.tokens = b->n;
        b->sh.dim = b->d;
        b->scale = dim_scale(b->d);
        b->prm = gen_params();
        if (t % 8u == 3u) b->prm.start_rung = 4u;       /* rung 4: kvq_cert_dense */
        if (t % 8u == 5u) {                              /* rung 4 via eps_dense */
            b->prm.start_rung = 3u;
            b->prm.eps_dense = 0.0f;
        }
        const kvq_cert_shape *sh = &b->sh;
        const uint32_t nb = kvq_cert_blocks(sh), d = b->d;
        const uint64_t nv = (uint64_t)b->n * d;
        b->q = (float *)kvq_tb_malloc(d * 4);
        b->k = (float *)kvq_tb_malloc(nv * 4);
        b->v = (float *)kvq_tb_malloc(nv * 4);
        b->kc = (int8_t *)kvq_tb_malloc(kvq_cert_key_code_bytes(sh));
        b->sg = (float *)kvq_tb_malloc(kvq_cert_key_meta_count(sh) * 4);
        b->z = (float *)kvq_tb_malloc(kvq_cert_key_meta_count(sh) * 4);
        b->vc = (uint8_t *)kvq_tb_malloc(kvq_cert_value_code_bytes(sh));
        b->vs = (float *)kvq_tb_malloc(kvq_cert_value_groups(sh) * 4);
        b->vz = (float *)kvq_tb_malloc(kvq_cert_value_groups(sh) * 4);
        b->eta = (float *)kvq_tb_malloc(nb * 4);
        b->nu = (float *)kvq_tb_malloc(nb * 4);
        b->out = (float *)kvq_tb_malloc(d * 4);
        b->d1 = (float *)kvq_tb_malloc(4);
        b->rec = (kvq_cert_record *)kvq_tb_malloc(sizeof(kvq_cert_record));
        b->decl = (kvq_cert_decl *)kvq_tb_malloc(sizeof(kvq_cert_decl));
        b->status = (uint32_t *)kvq_tb_malloc(4);
        b->sel = (uint8_t *)kvq_tb_malloc(nb);
        b->prom = (uint8_t *)kvq_tb_malloc(nb);
        for (uint32_t i = 0; i < d; i++) b->q[i] = f16(gauss());
        const int kind = (int)kvq_tb_rndu(5);
        b->kind[0] = KINDS[kind];
        gen_keys(b->k, b->q, 1, b->n, d, kind);
        gen_values(b->v, b->n, d);
        kvq_policy pol = kvq_policy_default;
        kvq_cert_quantize_keys(b->kc, b->sg, b->z, NULL, b->k, sh, &pol);
        kvq_cert_quantize_values(b->vc, b->vs, b->vz, NULL, b->v, sh, &pol);
        kvq_cert_annotate(b->eta, b->nu, b->v, b->vc, b->vs, b->vz, sh);
        /* annotate_host bit-exact to kvq_cert_annotate */
        float *e2 = (float *)kvq_tb_malloc(nb * 4), *n2 = (float *)kvq_tb_malloc(nb * 4);
        kvq_status st = kvq_cuda_cert_annotate_host(e2, n2, b->v, b->vc, b->vs, b->vz, sh);
        if (st != KVQ_OK) {
            fprintf(stderr, "FAIL kvq_cuda_cert_annotate_host: %s\n", kvq_status_str(st));
            g_fail++;
        } else {
            same_bytes(e2, b->eta, nb * 4, "annotate_host eta", b);
            same_bytes(n2, b->nu, nb * 4, "annotate_host nu", b);
        }
        free(e2);
        free(n2);
        st = kvq_cuda_cert_step_host(b->out, b->sel, b->prom, b->rec, b->decl, b->d1, b->q,
                                     b->scale, b->k, b->v, &b->prm, sh, &pol);
        b->status[0] = (uint32_t)st;
        b->refs = 1;
        pthread_mutex_lock(&g_mx);
        g_steps++;
        pthread_mutex_unlock(&g_mx);
        push_job(b, 0);
    }
    /* bad input: a NaN key, a non-binary16 value, bad parameters, a bad shape */
    {
        const uint32_t n = 40, d = 64;
        float *k = (float *)kvq_tb_malloc(n * d * 4), *v = (float *)kvq_tb_malloc(n * d * 4);
        float q[64], out[64];
        uint8_t sel[8], prom[8];
        kvq_cert_record rec;
        kvq_cert_decl decl;
        float d1;
        for (uint32_t i = 0; i < n * d; i++) k[i] = v[i] = f16(gauss());
        for (uint32_t i = 0; i < d; i++) q[i] = f16(gauss());
        kvq_cert_shape sh = {n, d};
        kvq_cert_params p = kvq_cert_default_params();
        kvq_policy pol = kvq_policy_default;
        struct { const char *what; kvq_status want; kvq_status got; } r[5];
        k[77] = NAN;
        r[0].what = "NaN key";
        r[0].want = KVQ_E_NONFINITE;
        r[0].got = kvq_cuda_cert_step_host(out, sel, prom, &rec, &decl, &d1, q, 0.125f, k, v, &p, &sh, &pol);
        k[77] = 0.0f;
        v[5] = 1.0f + 0x1p-20f;
        r[1].what = "non-binary16 value";
        r[1].want = KVQ_E_PARAM;
        r[1].got = kvq_cuda_cert_step_host(out, sel, prom, &rec, &decl, &d1, q, 0.125f, k, v, &p, &sh, &pol);
        v[5] = 0.0f;
        p.tau = 0.0f;
        r[2].what = "tau = 0";
        r[2].want = KVQ_E_PARAM;
        r[2].got = kvq_cuda_cert_step_host(out, sel, prom, &rec, &decl, &d1, q, 0.125f, k, v, &p, &sh, &pol);
        p = kvq_cert_default_params();
        sh.dim = 40;
        r[3].what = "d = 40";
        r[3].want = KVQ_E_SHAPE;
        r[3].got = kvq_cuda_cert_step_host(out, sel, prom, &rec, &decl, &d1, q, 0.125f, k, v, &p, &sh, &pol);
        sh.dim = d;
        p.variant = KVQ_CERT_VARIANTS;
        r[4].what = "unknown variant";
        r[4].want = KVQ_E_PARAM;
        r[4].got = kvq_cuda_cert_step_host(out, sel, prom, &rec, &decl, &d1, q, 0.125f, k, v, &p, &sh, &pol);
        for (int i = 0; i < 5; i++) {
            if (r[i].got != r[i].want) {
                fprintf(stderr, "FAIL bad input (%s): %s, expected %s\n", r[i].what,
                        kvq_status_str(r[i].got), kvq_status_str(r[i].want));
                pthread_mutex_lock(&g_mx);
                g_fail++;
                pthread_mutex_unlock(&g_mx);
            }
        }
        free(k);
        free(v);
    }
}

int main(void)
{
    kvq_tb_init("gpu-cert-decode-test", DEFAULT_SEED);
    uint64_t steps = kvq_tb_env_count("KVQ_CERT_STEPS", 100000u);
    const char *env = getenv("KVQ_THREADS");
    long nthr = env ? strtol(env, NULL, 0) : sysconf(_SC_NPROCESSORS_ONLN);
    if (nthr < 1) nthr = 1;
    if (nthr > 256) nthr = 256;
    g_dump_dir = getenv("KVQ_CERT_DUMP_DIR");
    g_have_ladder = kvq_exact_cert_ladder != NULL;

    if (!kvq_tb_device("%llu steps, %ld CPU checkers, exact ladder %s",
                       (unsigned long long)steps, nthr,
                       g_have_ladder ? "linked" : "NOT linked (ladder checks not run)"))
        return 0;
    g_q = (job *)kvq_tb_malloc(g_qcap * sizeof *g_q);
    pthread_t *th = (pthread_t *)kvq_tb_malloc((size_t)nthr * sizeof *th);
    for (long i = 0; i < nthr; i++) pthread_create(&th[i], NULL, worker, NULL);
    dev D;
    dev_init(&D);
    if (kvq_cuda_cert_ws_set_overlap(D.ws, 2) != KVQ_E_PARAM) {
        fprintf(stderr, "FAIL kvq_cuda_cert_ws_set_overlap(ws, 2) accepted\n");
        g_fail++;
    }
    run_host_api(40);
    uint64_t left = steps;
    unsigned long next = 20000;
    env = getenv("KVQ_CERT_SECONDS");
    const double limit_s = env ? strtod(env, NULL) : 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int stopped = 0;
    while (left > 0) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (limit_s > 0.0 &&
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) > limit_s) {
            stopped = 1;
            break;
        }
        run_batch(&D, &left);
        if (g_steps >= next) {       /* progress, in case the run is cut short */
            pthread_mutex_lock(&g_mx);
            printf("gpu-cert-decode-test: %lu steps sent, %lu judged: %lu passed, %lu failed\n",
                   g_steps, g_pass + g_fail + g_undecided, g_pass, g_fail);
            fflush(stdout);
            pthread_mutex_unlock(&g_mx);
            next += 20000;
        }
    }
    pthread_mutex_lock(&g_mx);
    g_done = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mx);
    for (long i = 0; i < nthr; i++) pthread_join(th[i], NULL);
    if (stopped)
        printf("gpu-cert-decode-test: time budget of %g s reached: %lu of %llu steps sent\n",
               limit_s, g_steps, (unsigned long long)steps);
    printf("gpu-cert-decode-test: %lu steps judged exactly: %lu passed, %lu failed, %lu "
           "undecided; rungs 0/1/2/3/4: %lu/%lu/%lu/%lu/%lu; %lu promoted blocks; ladder "
           "checked on %lu sparse steps; %lu block radii checked exactly; %lu batches "
           "bitwise-equal to ref/fast (%lu differences); %lu batches run with both selectors "
           "and both stagings (%lu differ; %lu of them with promoted blocks; %lu left workspace "
           "entries set); %lu long batches (n > 16384); %lu dumps\n",
           g_steps, g_pass, g_fail, g_undecided, g_rung[0], g_rung[1], g_rung[2], g_rung[3],
           g_rung[4], g_prom_total, g_ladder_checked, g_radius_blocks, g_bitwise, g_bitwise_fail,
           g_paths, g_paths_fail, g_staged, g_residue, g_long, g_dumps);
    printf("gpu-cert-decode-test: passed by variant: paper %lu, sparse %lu\n",
           g_var_pass[KVQ_CERT_VARIANT_PAPER], g_var_pass[KVQ_CERT_VARIANT_SPARSE]);
    const int bad = g_fail || g_undecided || g_bitwise_fail || g_paths_fail || g_residue ||
                    g_pass != g_steps;
    return kvq_tb_close(g_pass, g_steps - g_pass, bad);
}
