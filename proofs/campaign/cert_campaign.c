/*
 * cert_campaign.c -- the CERT lemma campaign: evidence for the statements of
 * spec/cert.md and spec/bounds/cert.md, decided exactly on random and
 * adversarial steps (spec/bounds/cert.md §10).
 *
 * Statements checked, each case (SPEC IDs cited where the check is made):
 *   K8-04  |k - k^| <= sigma/2 + gamma on every key element      [CERT-K8-04]
 *   DLT-05 gamma <= gamma' on every block-channel                [CERT-DLT-05]
 *   A.1    |s_i - s^_i| <= Delta_b on every token                [CERT-DLT-03]
 *   A.2    TV(softmax s, softmax s^) <= tanh(D/2) over the whole token set
 *          and over the selection S, D the half range of s^ - s (sharp
 *          form; shift invariance), and <= tanh(Delta/2) <= tanh(Delta)
 *   A.3    alpha_T <= A(alpha^_T, D) with D = half range and D = Delta
 *   T4.1   ||sum_S pi_i v_i - sum_i p_i v_i|| <= E_key            [CERT-EK-01]
 *   T4.3   ||sum_S pi_i (v~_i - v_i)|| <= E_val                    [CERT-EV-01]
 *   T4.4   kvq_cert_step's certificate: claims sound and the contract
 *          decided by kvq_exact_cert_check (every CAMPAIGN_T44_EVERY-th case)
 *                                                            [CERT-CON-01/02]
 *   DIFF   fast path against exact path, bitwise: key codes, sigma, z, k^,
 *          v^, eta, nu                     [CERT-K8-06] [CERT-V4-02] [CERT-ANN-03]
 *
 * How a comparison is decided: integers and binary32 values compare exactly
 * (MPFR holds every score and score difference exactly at KVQ_XPREC bits);
 * a real quantity that involves exp/ln/tanh is enclosed with outward rounding
 * at CAMPAIGN_PREC bits, and a comparison the enclosures do not decide is
 * redone at CAMPAIGN_PREC_HI bits; still undecided is reported as a failure.
 * No tolerance appears anywhere.  Two equalities are decided by algebra, not
 * by enclosures (the enclosures of two equal reals overlap at any precision):
 * when s^ - s is the same number c for every token of a set, the softmax of s
 * and of s^ over that set are the same distribution (shift invariance), so
 * TV = 0 there, and with T empty the key term of Theorem 4.1 is 0.
 *
 * Environment: KVQ_SEED (default 0x6b7671636572740a), KVQ_CAMPAIGN_CASES
 * (default 1000000), KVQ_CAMPAIGN_JOBS (worker processes, default 2).
 * Arguments: [--json FILE] [--txt FILE].  Exit 0: every check held; 1: a
 * violation or an undecided comparison (the case is printed: seed, family,
 * index, values in hex, and the step as a kvq cert dump [CERT-DUMP-02]);
 * 2: usage, memory or I/O error.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "families/cert_dump.h"
#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_rng.h"

#define CAMPAIGN_SEED_DEFAULT  0x6b7671636572740aull
#define CAMPAIGN_CASES_DEFAULT 1000000ull
#define CAMPAIGN_T44_EVERY     64u  /* Theorem 4.4 on every 64th case */
#define CAMPAIGN_DIFF_EVERY    8u   /* fast = exact bitwise on every 8th case */
#define CAMPAIGN_XP            320  /* exact scratch: enough for every sum below (checked) */
#define CAMPAIGN_PREC          128  /* enclosure precision (bits) */
#define CAMPAIGN_PREC_HI       1024 /* retry precision for undecided comparisons */
#define NMAX                   160u /* tokens per case, at most */
#define DMAX                   128u /* head dimension, at most */

/* ---- families, statements, statistics ----------------------------------- */

enum {
    F_RANDOM, F_SINK, F_CONC, F_UNIFORM, F_NEEDLE, F_TIES, F_CONST, F_TINYV, F_LARGE,
    F_ALIGNED, F_RAGGED, NFAM
};
static const char *const fam_name[NFAM] = {
    "random", "sink", "concentrated", "near_uniform", "needle", "ties", "constant_channels",
    "tiny_value_groups", "large_magnitudes", "aligned_errors", "ragged_n"};

enum {
    S_K804, S_DLT05, S_A1, S_A2, S_A2_DELTA, S_A2_PAPER, S_A3, S_A3_DELTA, S_T41, S_T41_SHARP,
    S_T43, S_T44, S_DIFF, NSTAT
};
static const char *const stat_name[NSTAT] = {
    "K8-04 key element |k-k^| <= sigma/2+gamma", "DLT-05 gamma <= gamma'",
    "A.1 |s-s^| <= Delta_b (tokens)", "A.2 TV <= tanh(D/2), D = half range of s^-s (token sets)",
    "A.2 TV <= tanh(Delta/2) (token sets)", "A.2 TV <= tanh(Delta) (token sets)",
    "A.3 alpha_T <= A(alpha^,D), D = half range", "A.3 alpha_T <= A(alpha^,Delta)",
    "Thm 4.1 key term <= E_key(Delta,Vmax)", "Thm 4.1 key term <= E_key(D,max||v||)",
    "Thm 4.3 value term <= E_val", "Thm 4.4 kvq_cert_step certificate (steps)",
    "fast = exact bitwise (elements)"};
/* Short labels (report columns) and where the statement is stated. */
static const char *const stat_id[NSTAT] = {
    "K8-04", "DLT-05", "A.1", "A.2", "A.2-Delta", "A.2-paper", "A.3", "A.3-Delta", "4.1",
    "4.1-sharp", "4.3", "4.4", "diff"};
static const char *const stat_ref[NSTAT] = {
    "[CERT-K8-04], bounds §1", "[CERT-DLT-05], bounds §3a", "[CERT-DLT-03], bounds §3",
    "bounds §4 Lemma A.2", "bounds §4 Lemma A.2", "bounds §4 Lemma A.2", "bounds §4 Lemma A.3",
    "bounds §4 Lemma A.3", "[CERT-EK-01], bounds §5", "[CERT-EK-01], bounds §5",
    "[CERT-EV-01], bounds §9", "[CERT-CON-01] [CERT-CON-02], bounds §9",
    "[CERT-K8-06] [CERT-V4-02] [CERT-ANN-03]"};

typedef struct stats {
    uint64_t cases;
    uint64_t fam_cases[NFAM];
    uint64_t checks[NSTAT][NFAM];
    double max_ratio[NSTAT];  /* error / bound, upper estimate (report only) */
    double max_excess_gamma;  /* (|k-k^| - sigma/2) / gamma, K8-04 (report only) */
    uint64_t retries;         /* comparisons redone at CAMPAIGN_PREC_HI */
    uint64_t exact_zero;      /* comparisons decided by the equal-shift rule */
    uint64_t sel_random;      /* cases with a random selection instead of the step's */
    uint64_t prom_random;     /* cases with a random promotion */
    uint64_t elems, tokens;
    uint64_t k804_filtered;   /* K8-04 elements decided by the binary64 filter */
    uint64_t rungs[5];        /* Theorem 4.4 steps by accepted rung */
    uint64_t eval_false_alarms; /* checker's CON-02 eval verdicts overruled exactly */
    uint64_t a3_logform;      /* A.3 comparisons decided by a3_by_decomposition */
} stats;

/* ---- the case ------------------------------------------------------------ */

typedef struct ccase {
    uint64_t seed, idx;
    int fam;
    uint32_t n, d, nq, nb;
    float scale;
    kvq_cert_params prm;
    float q[DMAX], k[NMAX * DMAX], v[NMAX * DMAX];
    /* fast path */
    int8_t kc[NMAX * DMAX];
    float sg[NMAX / 16 * DMAX], zz[NMAX / 16 * DMAX], khf[NMAX * DMAX];
    uint8_t vc[NMAX * DMAX / 2];
    float vs[NMAX * DMAX / 16], vz[NMAX * DMAX / 16], vhf[NMAX * DMAX];
    float etaf[NMAX / 16 + 1], nuf[NMAX / 16 + 1];
    float out[DMAX], logmass[NMAX / 16 + 1], delta1;
    uint8_t sel[NMAX / 16 + 1], prom[NMAX / 16 + 1];
    kvq_cert_record rec;
    kvq_cert_decl decl;
    /* exact path */
    int8_t kcx[NMAX * DMAX], kreal[NMAX * DMAX], kalt[NMAX * DMAX];
    float sgx[NMAX / 16 * DMAX], zx[NMAX / 16 * DMAX], khx[NMAX * DMAX];
    float vhx[NMAX * DMAX], eta[NMAX / 16 + 1], nu[NMAX / 16 + 1];
    float dlt[NMAX / 16 + 1], delta, vmax;
} ccase;

/* Working MPFR state of one worker. */
typedef struct work {
    mpfr_t s[NMAX], e[NMAX];          /* exact scores s_i, e_i = s^_i - s_i (KVQ_XPREC) */
    mpfr_t wl[NMAX], wu[NMAX];        /* weights, exact scores, all tokens (precision P) */
    mpfr_t hl[NMAX], hu[NMAX];        /* weights, estimated scores, all tokens */
    mpfr_t sl[NMAX], su[NMAX];        /* weights, exact scores, over S */
    mpfr_t tl[NMAX], tu[NMAX];        /* weights, estimated scores, over S */
    mpfr_t a, b, c, x, y, t;          /* CAMPAIGN_XP scratch: exact results, checked */
    mpfr_t p[16];                     /* precision-P scratch */
    mpfr_t xv[NMAX * DMAX], dv[NMAX * DMAX]; /* v and v~ - v, exact (53 bits) */
    mpfr_t qv[DMAX];                  /* the query, exact (24 bits) */
} work;

static const char *g_self = "cert_campaign";
static double g_prof[8];
static int g_profile;
static int g_progress; /* kvq_progress_init's mode: --progress 1, --quiet -1, else 0 */
/* KVQ_CAMPAIGN_MUTANT: check a deliberately false statement instead, to show
 * that the campaign can fail (the run must exit 1):
 *   half_sigma  K8-04 with the paper's sigma/2 (gamma dropped; false, bounds §1)
 *   half_delta  A.1 with Delta_b / 2
 *   ekey_paper  Theorem 4.1 with the paper's E_key term (false, bounds §6) */
enum { MUT_NONE, MUT_HALF_SIGMA, MUT_HALF_DELTA, MUT_EKEY_PAPER };
static int g_mutant;

static void die(const char *what)
{
    fprintf(stderr, "%s: %s\n", g_self, what);
    exit(2);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#define PROF(i, call) do { double t0_ = g_profile ? now_s() : 0.0; call; \
    if (g_profile) g_prof[i] += now_s() - t0_; } while (0)

/* ---- generation ---------------------------------------------------------- */

static double uni(kvq_rng *r) /* [0, 1) */
{
    return (double)(kvq_rng_next(r) >> 11) * 0x1p-53;
}

static double sym(kvq_rng *r) /* [-1, 1) */
{
    return 2.0 * uni(r) - 1.0;
}

/* A binary16 number near x: x rounded to the binary16 quantum of its binade
 * and clamped to +-65504 (generator only; every value it returns is an
 * integer times a power of two that binary16 holds exactly, and the
 * quantizers' input checks confirm it [CERT-L-02]). */
static float f16(double x)
{
    double ax = fabs(x), qnt, m;
    int e;
    if (!(ax > 0.0)) return 0.0f;
    if (ax >= 65504.0) return x > 0 ? 65504.0f : -65504.0f;
    (void)frexp(ax, &e);                          /* ax in [2^(e-1), 2^e) */
    qnt = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    m = nearbyint(ax / qnt) * qnt;                /* exact: a quotient by a power of 2 */
    if (m > 65504.0) m = 65504.0;
    return (float)(x > 0 ? m : -m);               /* exact: <= 11 significant bits */
}

static double pow2u(kvq_rng *r, int lo, int hi) /* 2^u, u uniform in [lo, hi] */
{
    return exp2((double)lo + uni(r) * (double)(hi - lo));
}

static uint32_t pick_d(kvq_rng *r)
{
    uint32_t x = kvq_rng_below(r, 20);
    return x < 13 ? 16u : x < 17 ? 32u : x < 19 ? 64u : 128u;
}

static uint32_t pick_n(kvq_rng *r)
{
    uint32_t x = kvq_rng_below(r, 10);
    if (x < 2) return 1u + kvq_rng_below(r, 40);          /* often ragged */
    if (x < 6) return 16u * (1u + kvq_rng_below(r, 4));   /* full blocks only */
    return 1u + kvq_rng_below(r, 64);
}

static void fill(float *x, uint32_t cnt, double a, kvq_rng *r)
{
    for (uint32_t i = 0; i < cnt; i++) x[i] = f16(a * sym(r));
}

/* Key vector aligned with q: k_c = mag * sign(q_c) (+ small noise). */
static void aligned_key(float *k, const float *q, uint32_t d, double mag, double noise, kvq_rng *r)
{
    for (uint32_t c = 0; c < d; c++)
        k[c] = f16((q[c] >= 0 ? mag : -mag) + noise * sym(r));
}

static void gen_case(ccase *cs, uint64_t seed, uint64_t idx)
{
    kvq_rng r;
    uint32_t n, d;
    double ak, av, aq;
    r.s = seed ^ (idx * 0xD1B54A32D192ED03ull);
    (void)kvq_rng_next(&r);
    cs->seed = seed, cs->idx = idx;
    cs->fam = (int)(idx % NFAM);
    d = pick_d(&r);
    n = pick_n(&r);
    if (cs->fam == F_RAGGED) {
        static const uint32_t special[] = {1, 2, 15, 17, 31, 33, 47, 63, 65, 95, 97, 159};
        uint32_t x = kvq_rng_below(&r, 3);
        n = x == 0 ? 1u + kvq_rng_below(&r, 15)
            : x == 1 ? special[kvq_rng_below(&r, sizeof special / sizeof special[0])]
                     : 16u * (1u + kvq_rng_below(&r, 6)) + 1u + kvq_rng_below(&r, 15);
        if (n > NMAX) n = NMAX;
    }
    cs->n = n, cs->d = d, cs->nq = n / 16u, cs->nb = (n + 15u) / 16u;
    cs->scale = 1.0f / sqrtf((float)d);           /* RN32(1/sqrt(d)) for d = 16, 64 exact */
    if (d == 32u) cs->scale = 0x1.6a09e6p-3f;     /* RN32(1/sqrt(32)) */
    if (d == 128u) cs->scale = 0x1.6a09e6p-4f;    /* RN32(1/sqrt(128)) [CERT-L-01] */
    if (kvq_rng_below(&r, 8) == 0)                /* any positive normal binary32 scale */
        cs->scale = (float)ldexp(1.0 + uni(&r), -(int)kvq_rng_below(&r, 12));
    ak = pow2u(&r, -6, 6), av = pow2u(&r, -6, 6), aq = pow2u(&r, -4, 3);
    fill(cs->q, d, aq, &r);
    fill(cs->k, n * d, ak, &r);
    fill(cs->v, n * d, av, &r);
    switch (cs->fam) {
    case F_SINK: {                                /* attention sink(s) at the start */
        uint32_t ns = 1u + kvq_rng_below(&r, 4);
        for (uint32_t i = 0; i < ns && i < n; i++)
            aligned_key(cs->k + i * d, cs->q, d, ak * pow2u(&r, 1, 5), ak * 0.25, &r);
        break;
    }
    case F_CONC: {                                /* one block holds most of the mass */
        uint32_t b = kvq_rng_below(&r, cs->nb);
        double mag = ak * pow2u(&r, 0, 4);
        for (uint32_t i = 16u * b; i < 16u * b + 16u && i < n; i++)
            aligned_key(cs->k + i * d, cs->q, d, mag, mag * 0.5, &r);
        break;
    }
    case F_UNIFORM: {                             /* near-equal scores */
        double base = ak, eps = ak * pow2u(&r, -12, -4);
        for (uint32_t i = 0; i < n * d; i++) cs->k[i] = f16(base * ((i % d) & 1 ? 1 : -1) + eps * sym(&r));
        if (kvq_rng_below(&r, 2)) fill(cs->q, d, pow2u(&r, -10, -4), &r);
        break;
    }
    case F_NEEDLE: {                              /* one strong token somewhere */
        uint32_t t = kvq_rng_below(&r, n);
        aligned_key(cs->k + t * d, cs->q, d, ak * pow2u(&r, 2, 6), ak * 0.1, &r);
        break;
    }
    case F_TIES: {                                /* whole blocks repeated: tied L_b */
        uint32_t src = cs->nq ? kvq_rng_below(&r, cs->nq) : 0;
        for (uint32_t b = 0; b < cs->nq; b++)
            if (b != src && kvq_rng_below(&r, 3))
                memcpy(cs->k + 16u * b * d, cs->k + 16u * src * d, sizeof(float) * 16u * d);
        if (kvq_rng_below(&r, 2))                 /* and repeated tokens inside the blocks */
            for (uint32_t i = 1; i < n; i++)
                if (kvq_rng_below(&r, 2)) memcpy(cs->k + i * d, cs->k + (i - 1) * d, sizeof(float) * d);
        break;
    }
    case F_CONST: {                               /* zero-range channels [CERT-K8-01] */
        int all = kvq_rng_below(&r, 4) == 0;
        for (uint32_t b = 0; b < cs->nb; b++)
            for (uint32_t c = 0; c < d; c++)
                if (all || kvq_rng_below(&r, 2)) {
                    float x = f16(ak * sym(&r));
                    for (uint32_t i = 16u * b; i < 16u * b + 16u && i < n; i++) cs->k[i * d + c] = x;
                }
        break;
    }
    case F_TINYV: {                               /* value scales that underflow binary16 */
        for (uint32_t i = 0; i < n * d; i += 16) { /* one value group: 16 channels of a token */
            uint32_t x = kvq_rng_below(&r, 3);
            double base = x == 0 ? 0.0 : x == 1 ? f16(0x1p-14 * sym(&r)) : f16(av * sym(&r));
            double step = ldexp(1.0, -24 + (int)kvq_rng_below(&r, 3));
            if (x == 2 && base != 0.0) step = ldexp(1.0, ilogb(base) - 10); /* base's quantum */
            for (uint32_t j = 0; j < 16; j++) cs->v[i + j] = f16(base + step * (double)kvq_rng_below(&r, 8));
        }
        break;
    }
    case F_LARGE: {                               /* binary16 magnitudes near 65504 */
        double big = pow2u(&r, 12, 16);
        fill(cs->k, n * d, big, &r);
        fill(cs->v, n * d, pow2u(&r, 12, 16), &r);
        if (kvq_rng_below(&r, 2)) fill(cs->q, d, pow2u(&r, -14, -6), &r);
        else fill(cs->q, d, 1.0, &r);             /* scores far apart: weights 0 or 1 */
        for (uint32_t i = 0; i < n * d; i++)
            if (kvq_rng_below(&r, 8) == 0) cs->k[i] = cs->k[i] > 0 ? 65504.0f : -65504.0f;
        break;
    }
    default:
        break;
    }
    cs->prm = kvq_cert_default_params();
    if (idx % 5u == 4u) {                         /* other selector parameters */
        static const float taus[] = {0x1p-1f, 0x1.ccccccp-1f, 0x1.fd70a4p-1f, 1.0f};
        cs->prm.kmin = 1u + kvq_rng_below(&r, 3);
        cs->prm.kmax = cs->prm.kmin + kvq_rng_below(&r, 4);
        cs->prm.tau = taus[kvq_rng_below(&r, 4)];
    }
}

/* Aligned-errors family, after quantization: q_c = +-|q_c| with the sign of
 * the summed key error of one block, so that every estimated score of that
 * block moves the same way (the distortion case of bounds/cert.md §6). */
static void align_query(ccase *cs, kvq_rng *r)
{
    uint32_t d = cs->d, b;
    if (cs->nq == 0) return;
    b = kvq_rng_below(r, cs->nq);
    for (uint32_t c = 0; c < d; c++) {
        double s = 0.0;
        for (uint32_t i = 0; i < 16; i++) {
            uint32_t t = 16u * b + i;
            s += (double)cs->khf[t * d + c] - (double)cs->k[t * d + c]; /* sign only */
        }
        cs->q[c] = f16(fabs((double)cs->q[c]) * (s >= 0 ? 1.0 : -1.0) + (cs->q[c] == 0.0f ? 1.0 : 0.0));
    }
}

/* ---- reporting a failure ------------------------------------------------- */

static void print_case(const ccase *cs, const char *stmt, const char *detail)
{
    kvq_cert_dump dp;
    fprintf(stderr, "VIOLATION %s: %s\n  seed=0x%016" PRIx64 " index=%" PRIu64
            " family=%s n=%u d=%u scale=%a (0x%08x) step rung %u\n",
            stmt, detail, cs->seed, cs->idx, fam_name[cs->fam], cs->n, cs->d,
            (double)cs->scale, kvq_f32_bits(cs->scale), cs->rec.rung);
    fprintf(stderr, "  replay: KVQ_SEED=0x%016" PRIx64 " KVQ_CAMPAIGN_FIRST=%" PRIu64
            " KVQ_CAMPAIGN_CASES=1\n  dump follows [CERT-DUMP-02]:\n", cs->seed, cs->idx);
    memset(&dp, 0, sizeof dp);
    dp.shape.tokens = cs->n, dp.shape.dim = cs->d;
    dp.scale = cs->scale;
    dp.tau = cs->prm.tau, dp.vtol = cs->prm.vtol, dp.eps_guard = cs->prm.eps_guard;
    dp.delta1 = cs->delta1, dp.u_exp = cs->decl.u_exp, dp.eps_dense = cs->prm.eps_dense;
    dp.kmin = cs->prm.kmin, dp.kmax = cs->prm.kmax, dp.r = cs->prm.r;
    dp.acc_depth = cs->decl.acc_depth, dp.rescales = cs->decl.rescales;
    dp.promote = KVQ_PROMOTE_THRESHOLD, dp.scoring = KVQ_SCORING_FP, dp.ties = KVQ_TIES_EVEN;
    if (kvq_cert_dump_alloc(&dp) != KVQ_OK) return;
    memcpy(dp.q, cs->q, sizeof(float) * cs->d);
    memcpy(dp.k, cs->k, sizeof(float) * cs->n * cs->d);
    memcpy(dp.v, cs->v, sizeof(float) * cs->n * cs->d);
    memcpy(dp.sel, cs->sel, cs->nb);
    memcpy(dp.prom, cs->prom, cs->nb);
    memcpy(dp.out, cs->out, sizeof(float) * cs->d);
    dp.rung = cs->rec.rung;
    if (dp.rung >= 3u)                            /* dense: `select rung=3 blocks=-` */
        for (uint32_t b = 0; b < cs->nq; b++) dp.sel[b] = 0, dp.prom[b] = 0;
    dp.ekey = cs->rec.ekey, dp.eval = cs->rec.eval, dp.earith = cs->rec.earith;
    dp.has_earith = 1;
    (void)kvq_cert_dump_write(stderr, &dp);
    kvq_cert_dump_free(&dp);
}

static void fail(const ccase *cs, const char *stmt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void fail(const ccase *cs, const char *stmt, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    print_case(cs, stmt, buf);
    exit(1);
}

/* ---- quantization and the differential part ------------------------------ */

static void same_f32(const ccase *cs, const char *what, const float *a, const float *b,
                     uint64_t cnt, stats *st)
{
    for (uint64_t i = 0; i < cnt; i++)
        if (!kvq_f32_same(a[i], b[i]))
            fail(cs, "DIFF", "%s[%" PRIu64 "]: fast %a (0x%08x) exact %a (0x%08x)", what, i,
                 (double)a[i], kvq_f32_bits(a[i]), (double)b[i], kvq_f32_bits(b[i]));
    st->checks[S_DIFF][cs->fam] += cnt;
}

static void quantize(ccase *cs, work *w, stats *st, kvq_rng *r)
{
    kvq_cert_shape sh = {cs->n, cs->d};
    kvq_cert_shape shq = {cs->nq * 16u, cs->d};
    uint32_t fl, n = cs->n, d = cs->d, nq = cs->nq;
    uint64_t nk = (uint64_t)nq * 16u * d, nm = (uint64_t)nq * d;
    kvq_exact_cert_keys_out xo;
    kvq_status s;
    kvq_cert_cache ch;
    (void)n;
    if (nq > 0) {
        s = kvq_cert_quantize_keys(cs->kc, cs->sg, cs->zz, &fl, cs->k, &sh, &kvq_policy_default);
        if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_quantize_keys: %s", kvq_status_str(s));
        s = kvq_cert_dequantize_keys(cs->khf, cs->kc, cs->sg, cs->zz, &sh);
        if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_dequantize_keys: %s", kvq_status_str(s));
        s = kvq_cert_quantize_values(cs->vc, cs->vs, cs->vz, &fl, cs->v, &sh, &kvq_policy_default);
        if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_quantize_values: %s", kvq_status_str(s));
        s = kvq_cert_dequantize_values(cs->vhf, cs->vc, cs->vs, cs->vz, &sh);
        if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_dequantize_values: %s", kvq_status_str(s));
    }
    if (cs->fam == F_ALIGNED) align_query(cs, r); /* keys do not depend on q */
    s = kvq_cert_annotate(cs->etaf, cs->nuf, cs->v, cs->vc, cs->vs, cs->vz, &sh);
    if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_annotate: %s", kvq_status_str(s));

    /* The pinned quantities (codes, sigma, z, k^, v^, eta, nu) are defined
     * bit for bit [CERT-K8-06] [CERT-V4-02] [CERT-ANN-03]: on every
     * CAMPAIGN_DIFF_EVERY-th case the exact path recomputes them and they are
     * compared bitwise with the fast path's; on the other cases the fast
     * path's values are used as the pinned ones.  Delta, the bound under test
     * in A.1, always comes from the exact path. */
    if (cs->idx % CAMPAIGN_DIFF_EVERY != 0) {
        memcpy(cs->sgx, cs->sg, sizeof(float) * nm), memcpy(cs->zx, cs->zz, sizeof(float) * nm);
        memcpy(cs->khx, cs->khf, sizeof(float) * nk), memcpy(cs->vhx, cs->vhf, sizeof(float) * nk);
        memcpy(cs->eta, cs->etaf, sizeof(float) * cs->nb);
        memcpy(cs->nu, cs->nuf, sizeof(float) * cs->nb);
    } else {
    if (nq > 0) {
        xo.codes = cs->kcx, xo.sigma = cs->sgx, xo.z = cs->zx, xo.khat = cs->khx;
        xo.code_real = cs->kreal, xo.code_alt = cs->kalt;
        PROF(4, s = kvq_exact_cert_quantize_keys(&xo, cs->k, &sh, &kvq_policy_default));
        if (s != KVQ_OK) fail(cs, "setup", "kvq_exact_cert_quantize_keys: %s", kvq_status_str(s));
        for (uint64_t i = 0; i < nk; i++)
            if (cs->kc[i] != cs->kcx[i])
                fail(cs, "DIFF", "key code %" PRIu64 ": fast %d exact %d", i, cs->kc[i], cs->kcx[i]);
        st->checks[S_DIFF][cs->fam] += nk;
        same_f32(cs, "sigma", cs->sg, cs->sgx, nm, st);
        same_f32(cs, "z", cs->zz, cs->zx, nm, st);
        same_f32(cs, "k^", cs->khf, cs->khx, nk, st);
        /* v^ = RN32(code s + zv) exactly [CERT-V4-02] */
        for (uint32_t t = 0; t < nq * 16u; t++)
            for (uint32_t c = 0; c < d; c++) {
                uint32_t el, j = kvq_cert_value_group_of(c, &el);
                uint64_t g = kvq_cert_value_group(&shq, t, j);
                uint32_t code = kvq_unpack_code(cs->vc + kvq_cert_value_code_offset(&shq, t, j), el,
                                                KVQ_CERT_VBITS);
                mpfr_set_flt(w->a, cs->vs[g], MPFR_RNDN);
                mpfr_mul_ui(w->a, w->a, code, MPFR_RNDN);        /* exact */
                mpfr_set_flt(w->b, cs->vz[g], MPFR_RNDN);
                mpfr_add(w->a, w->a, w->b, MPFR_RNDN);           /* exact */
                (void)kvq_exact_round(w->a, w->a, &kvq_xfmt_binary32);
                cs->vhx[t * d + c] = mpfr_get_flt(w->a, MPFR_RNDN); /* exact: on the grid */
            }
        same_f32(cs, "v^", cs->vhf, cs->vhx, nk, st);
    }
    PROF(5, s = kvq_exact_cert_annotate(cs->eta, cs->nu, cs->v, cs->vc, cs->vs, cs->vz, &sh));
    if (s != KVQ_OK) fail(cs, "setup", "kvq_exact_cert_annotate: %s", kvq_status_str(s));
    same_f32(cs, "eta", cs->etaf, cs->eta, cs->nb, st);
    same_f32(cs, "nu", cs->nuf, cs->nu, cs->nb, st);
    }
    cs->vmax = 0.0f;
    for (uint32_t b = 0; b < cs->nb; b++)
        if (cs->nu[b] > cs->vmax) cs->vmax = cs->nu[b];  /* [CERT-ANN-04] */
    PROF(6, s = kvq_exact_cert_delta(cs->dlt, &cs->delta, cs->q, cs->scale, cs->k, cs->sg, cs->zz, &sh));
    if (s != KVQ_OK) fail(cs, "setup", "kvq_exact_cert_delta: %s", kvq_status_str(s));

    /* the fast step: selection, output and certificate */
    ch.k = cs->k, ch.v = cs->v, ch.kcodes = cs->kc, ch.sigma = cs->sg, ch.z = cs->zz;
    ch.vcodes = cs->vc, ch.vscale = cs->vs, ch.vzero = cs->vz, ch.eta = cs->etaf, ch.nu = cs->nuf;
    s = kvq_cert_step(cs->out, cs->sel, cs->prom, cs->logmass, &cs->rec, &cs->decl, &cs->delta1,
                      cs->q, cs->scale, &ch, &cs->prm, &sh);
    if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_step: %s", kvq_status_str(s));
}

/* ---- K8-04, DLT-05, A.1: exact, no enclosure needed ----------------------- */

static void check_keys(ccase *cs, work *w, stats *st)
{
    uint32_t d = cs->d;
    int ix = 0; /* OR of MPFR ternary values: 0 iff every result below is exact */
    kvq_cert_shape sh = {cs->n, cs->d};
    for (uint32_t b = 0; b < cs->nq; b++)
        for (uint32_t c = 0; c < d; c++) {
            uint64_t m = kvq_cert_key_meta_index(&sh, b, c);
            double bnd_d;
            float l = cs->k[16u * b * d + c], u = l, sg = cs->sgx[m], z = cs->zx[m];
            for (uint32_t i = 1; i < 16; i++) {
                float x = cs->k[(16u * b + i) * d + c];
                if (x < l) l = x;
                if (x > u) u = x;
            }
            /* gamma [CERT-K8-04], exact: each term is a binary32 value times a
             * power of two, the sums exact at CAMPAIGN_XP (checked by the ternary values) */
            if (sg == 0.0f) {
                mpfr_set_zero(w->a, 1);           /* zero-range: gamma = 0 */
            } else {
                ix |= mpfr_set_flt(w->a, fabsf(u), MPFR_RNDN);
                ix |= mpfr_set_flt(w->b, fabsf(l), MPFR_RNDN);
                ix |= mpfr_add(w->a, w->a, w->b, MPFR_RNDN);
                ix |= mpfr_set_flt(w->b, fabsf(z), MPFR_RNDN);
                ix |= mpfr_add(w->a, w->a, w->b, MPFR_RNDN);
                ix |= mpfr_mul_2si(w->a, w->a, -22, MPFR_RNDN);
                ix |= mpfr_set_flt(w->b, sg, MPFR_RNDN);
                ix |= mpfr_mul_2si(w->b, w->b, -16, MPFR_RNDN);
                ix |= mpfr_add(w->a, w->a, w->b, MPFR_RNDN);
                ix |= mpfr_set_ui_2exp(w->b, 1, -149, MPFR_RNDN);
                ix |= mpfr_add(w->a, w->a, w->b, MPFR_RNDN);
            }
            /* gamma' = 2^-20 |z| + 2^-12 sigma + 2^-149 >= gamma [CERT-DLT-05] */
            ix |= mpfr_set_flt(w->b, fabsf(z), MPFR_RNDN);
            ix |= mpfr_mul_2si(w->b, w->b, -20, MPFR_RNDN);
            ix |= mpfr_set_flt(w->c, sg, MPFR_RNDN);
            ix |= mpfr_mul_2si(w->c, w->c, -12, MPFR_RNDN);
            ix |= mpfr_add(w->b, w->b, w->c, MPFR_RNDN);
            ix |= mpfr_set_ui_2exp(w->c, 1, -149, MPFR_RNDN);
            ix |= mpfr_add(w->b, w->b, w->c, MPFR_RNDN);
            if (ix) fail(cs, "precision", "gamma not exact at %d bits", CAMPAIGN_XP);
            if (mpfr_cmp(w->a, w->b) > 0)
                fail(cs, "DLT-05", "block %u channel %u: gamma %a > gamma' %a (l %a u %a sigma %a z %a)",
                     b, c, mpfr_get_d(w->a, MPFR_RNDU), mpfr_get_d(w->b, MPFR_RNDD), (double)l,
                     (double)u, (double)sg, (double)z);
            st->checks[S_DLT05][cs->fam]++;
            if (sg != 0.0f) {                     /* report only */
                double rr = mpfr_get_d(w->a, MPFR_RNDU) / mpfr_get_d(w->b, MPFR_RNDD);
                if (rr > st->max_ratio[S_DLT05]) st->max_ratio[S_DLT05] = rr;
            }
            /* bound = sigma/2 + gamma, exact */
            ix |= mpfr_set_flt(w->c, sg, MPFR_RNDN);
            ix |= mpfr_mul_2si(w->c, w->c, -1, MPFR_RNDN);
            ix |= mpfr_add(w->b, w->c, w->a, MPFR_RNDN);
            if (g_mutant == MUT_HALF_SIGMA) mpfr_set(w->b, w->c, MPFR_RNDN);
            bnd_d = mpfr_get_d(w->b, MPFR_RNDD);
            for (uint32_t i = 0; i < 16; i++) {
                uint32_t t = 16u * b + i;
                float kk = cs->k[t * d + c], kh = cs->khx[t * d + c];
                double ad = (double)kk, bd = -(double)kh, sd = ad + bd, bb = sd - ad;
                /* binary64 filter: TwoSum's error term is 0 iff sd = k - k^
                 * exactly (round to nearest, no overflow: |k|, |k^| < 2^17), and
                 * bnd_d <= sigma/2 + gamma; otherwise decide in MPFR */
                if ((ad - (sd - bb)) + (bd - bb) == 0.0 && fabs(sd) <= bnd_d &&
                    fabs(sd) <= bnd_d * st->max_ratio[S_K804] && !(sg != 0.0f && fabs(sd) > sg * 0.5)) {
                    st->checks[S_K804][cs->fam]++;
                    st->k804_filtered++;
                    continue;
                }
                ix |= mpfr_set_flt(w->x, kk, MPFR_RNDN);
                ix |= mpfr_set_flt(w->y, kh, MPFR_RNDN);
                ix |= mpfr_sub(w->x, w->x, w->y, MPFR_RNDN);    /* exact */
                mpfr_abs(w->x, w->x, MPFR_RNDN);
                if (mpfr_cmp(w->x, w->b) > 0)     /* exact comparison [CERT-K8-04] */
                    fail(cs, "K8-04", "token %u channel %u: |k - k^| = %a > sigma/2 + gamma = %a "
                         "(k %a k^ %a l %a u %a sigma %a z %a)", t, c,
                         mpfr_get_d(w->x, MPFR_RNDD), mpfr_get_d(w->b, MPFR_RNDU), (double)kk,
                         (double)kh, (double)l, (double)u, (double)sg, (double)z);
                st->checks[S_K804][cs->fam]++;
                if (sg != 0.0f) {
                    /* report only: error / bound, and the excess over sigma/2 in gammas */
                    double rr = mpfr_get_d(w->x, MPFR_RNDU) / mpfr_get_d(w->b, MPFR_RNDD);
                    if (rr > st->max_ratio[S_K804]) st->max_ratio[S_K804] = rr;
                }
                if (sg != 0.0f && mpfr_cmp(w->x, w->c) > 0) {
                    double rr;
                    ix |= mpfr_sub(w->y, w->x, w->c, MPFR_RNDN);  /* |k - k^| - sigma/2, exact */
                    rr = mpfr_get_d(w->y, MPFR_RNDU) / mpfr_get_d(w->a, MPFR_RNDD);
                    if (rr > st->max_excess_gamma) st->max_excess_gamma = rr;
                }
            }
            if (ix) fail(cs, "precision", "key error not exact at %d bits", CAMPAIGN_XP);
        }
    st->elems += (uint64_t)cs->nq * 16u * d;

    /* Scores: s_i exact, e_i = s^_i - s_i exact (k^ in full blocks, originals
     * in the residual block, where e_i = 0) [CERT-DLT-03] */
    for (uint32_t c = 0; c < d; c++) ix |= mpfr_set_flt(w->qv[c], cs->q[c], MPFR_RNDN);
    for (uint32_t t = 0; t < cs->n; t++) {
        mpfr_set_zero(w->s[t], 1);
        mpfr_set_zero(w->e[t], 1);
        for (uint32_t c = 0; c < d; c++) {
            float kk = cs->k[t * d + c], kh = t < 16u * cs->nq ? cs->khx[t * d + c] : kk;
            ix |= mpfr_set_flt(w->b, kk, MPFR_RNDN);
            ix |= mpfr_mul(w->b, w->b, w->qv[c], MPFR_RNDN);    /* exact: <= 22 bits */
            ix |= mpfr_add(w->s[t], w->s[t], w->b, MPFR_RNDN);  /* exact (checked) */
            if (kh == kk) continue;
            ix |= mpfr_set_flt(w->b, kh, MPFR_RNDN);
            ix |= mpfr_mul(w->b, w->b, w->qv[c], MPFR_RNDN);    /* exact: <= 35 bits */
            ix |= mpfr_add(w->e[t], w->e[t], w->b, MPFR_RNDN);  /* sum of q k^ (checked) */
            ix |= mpfr_set_flt(w->b, kk, MPFR_RNDN);
            ix |= mpfr_mul(w->b, w->b, w->qv[c], MPFR_RNDN);
            ix |= mpfr_sub(w->e[t], w->e[t], w->b, MPFR_RNDN);  /* e = sum q (k^ - k) */
        }
        ix |= mpfr_mul_d(w->s[t], w->s[t], (double)cs->scale, MPFR_RNDN); /* exact */
        ix |= mpfr_mul_d(w->e[t], w->e[t], (double)cs->scale, MPFR_RNDN); /* exact */
        ix |= mpfr_set_flt(w->a, cs->dlt[t / 16u], MPFR_RNDN);
        if (g_mutant == MUT_HALF_DELTA) mpfr_mul_2si(w->a, w->a, -1, MPFR_RNDN);
        if (mpfr_cmpabs(w->e[t], w->a) > 0)       /* exact comparison [CERT-DLT-03] */
            fail(cs, "A.1", "token %u: |s - s^| = %a > Delta_b = %a", t,
                 fabs(mpfr_get_d(w->e[t], MPFR_RNDA)), (double)cs->dlt[t / 16u]);
        st->checks[S_A1][cs->fam]++;
        if (cs->dlt[t / 16u] > 0.0f) {
            double rr = fabs(mpfr_get_d(w->e[t], MPFR_RNDA)) / (double)cs->dlt[t / 16u];
            if (rr > st->max_ratio[S_A1]) st->max_ratio[S_A1] = rr;
        }
    }
    st->tokens += cs->n;
}

/* ---- enclosure-based checks ---------------------------------------------- */

/* Outcome of one comparison: 1 holds, 0 violated, -1 undecided. */
enum { NCMP = 12 };
typedef struct verdicts {
    int r[NCMP];
    int lf[NCMP];                /* 1: A.3 decided by a3_by_decomposition */
    double err[NCMP], bnd[NCMP]; /* upper estimate of error, lower estimate of bound */
} verdicts;
enum { C_A2_ALL, C_A2_S, C_A2D_ALL, C_A2D_S, C_A2P_ALL, C_A2P_S, C_A3, C_A3D, C_T41, C_T41S, C_T43 };

static int decide(mpfr_t lhs_hi, mpfr_t lhs_lo, mpfr_t rhs_lo, mpfr_t rhs_hi)
{
    if (mpfr_cmp(lhs_hi, rhs_lo) <= 0) return 1;
    if (mpfr_cmp(lhs_lo, rhs_hi) > 0) return 0;
    return -1;
}

/* Weights exp(x_t - m) of the tokens with in[t] (0 elsewhere), m the greatest
 * x_t among them, x_t = s_t, or s^_t = s_t + e_t when est; enclosed at the
 * work precision (m taken per set: a common shift cancels in every softmax,
 * and the set's own maximum keeps its greatest weight at exactly 1, so no sum
 * of weights underflows whatever the score range). */
static void weights(mpfr_t *wl, mpfr_t *wu, work *w, const uint8_t *in, uint32_t n, int est,
                    mpfr_t mout)
{
    int first = 1;
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        mpfr_set(w->a, w->s[t], MPFR_RNDN);
        if (est) mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN);   /* exact: s^_t */
        if (first || mpfr_cmp(w->a, w->c) > 0) mpfr_set(w->c, w->a, MPFR_RNDN), first = 0;
    }
    if (mout != NULL) mpfr_set(mout, w->c, MPFR_RNDN);
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) {
            mpfr_set_zero(wl[t], 1), mpfr_set_zero(wu[t], 1);
            continue;
        }
        /* the argument x_t - m (any fixed m serves: it cancels); when it is
         * exact (ternary 0), one exp rounded to nearest and the ternary value
         * give both ends; otherwise the argument is enclosed by directed
         * roundings and exp (increasing) rounded outward */
        int ix = mpfr_set(w->a, w->s[t], MPFR_RNDN);
        if (est) ix |= mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN);
        ix |= mpfr_sub(w->a, w->a, w->c, MPFR_RNDN);
        if (ix == 0) {
            int tr = mpfr_exp(wl[t], w->a, MPFR_RNDN);
            mpfr_set(wu[t], wl[t], MPFR_RNDN);
            if (tr > 0) mpfr_nextbelow(wl[t]);    /* result above the true value */
            else if (tr < 0) mpfr_nextabove(wu[t]);
            continue;
        }
        for (int up = 0; up < 2; up++) {
            mpfr_rnd_t rd = up ? MPFR_RNDU : MPFR_RNDD;
            mpfr_set(w->a, w->s[t], rd);
            if (est) mpfr_add(w->a, w->a, w->e[t], rd);
            mpfr_sub(w->a, w->a, w->c, rd);
            mpfr_exp(up ? wu[t] : wl[t], w->a, rd);
        }
    }
}

/* Does some token of in[] have x_t == m exactly (x_t = s_t, or s^_t when est)? */
static int set_max_is(work *w, const uint8_t *in, uint32_t n, int est, mpfr_t m)
{
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        mpfr_set(w->a, w->s[t], MPFR_RNDN);
        if (est) mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN);
        if (mpfr_equal_p(w->a, m)) return 1;
    }
    return 0;
}

/* Sum enclosure of weights over in[]. */
static void wsum(mpfr_t lo, mpfr_t hi, mpfr_t *wl, mpfr_t *wu, const uint8_t *in, uint32_t n)
{
    mpfr_set_zero(lo, 1), mpfr_set_zero(hi, 1);
    for (uint32_t t = 0; t < n; t++)
        if (in[t]) mpfr_add(lo, lo, wl[t], MPFR_RNDD), mpfr_add(hi, hi, wu[t], MPFR_RNDU);
}

/* Half range of e over in[] into hr (exact at KVQ_XPREC: a difference of two
 * exact reals, halved); returns 1 when e is the same number on the whole set
 * (then the softmaxes of s and of s^ over that set are the same distribution). */
static int equal_shift(mpfr_t hr, work *w, const uint8_t *in, uint32_t n)
{
    int first = 1;
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        if (first || mpfr_cmp(w->e[t], w->x) > 0) mpfr_set(w->x, w->e[t], MPFR_RNDN);
        if (first || mpfr_cmp(w->e[t], w->y) < 0) mpfr_set(w->y, w->e[t], MPFR_RNDN);
        first = 0;
    }
    if (first) {
        mpfr_set_zero(hr, 1);
        return 1;
    }
    mpfr_sub(hr, w->x, w->y, MPFR_RNDN);                     /* exact */
    mpfr_mul_2si(hr, hr, -1, MPFR_RNDN);
    return mpfr_zero_p(hr);
}

/* TV(p, p^) over in[] enclosed: p = weights (al, au), p^ = (bl, bu), both
 * normalised over in[].  |x - y| <= max(xu - yl, yu - xl) and >= the positive
 * part of (xl - yu) or (yl - xu). */
static void tv_enc(mpfr_t lo, mpfr_t hi, work *w, mpfr_t *al, mpfr_t *au, mpfr_t *bl, mpfr_t *bu,
                   const uint8_t *in, uint32_t n)
{
    mpfr_t *P = w->p;
    wsum(P[0], P[1], al, au, in, n);
    wsum(P[2], P[3], bl, bu, in, n);
    mpfr_set_zero(lo, 1), mpfr_set_zero(hi, 1);
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        mpfr_div(P[4], al[t], P[1], MPFR_RNDD);              /* p lower */
        mpfr_div(P[5], au[t], P[0], MPFR_RNDU);              /* p upper */
        mpfr_div(P[6], bl[t], P[3], MPFR_RNDD);              /* p^ lower */
        mpfr_div(P[7], bu[t], P[2], MPFR_RNDU);              /* p^ upper */
        mpfr_sub(P[8], P[5], P[6], MPFR_RNDU);               /* >= p - p^ */
        mpfr_sub(P[9], P[7], P[4], MPFR_RNDU);               /* >= p^ - p */
        mpfr_add(hi, hi, mpfr_cmp(P[8], P[9]) > 0 ? P[8] : P[9], MPFR_RNDU);
        mpfr_sub(P[8], P[4], P[7], MPFR_RNDD);               /* <= p - p^ */
        mpfr_sub(P[9], P[6], P[5], MPFR_RNDD);               /* <= p^ - p */
        if (mpfr_sgn(P[8]) > 0) mpfr_add(lo, lo, P[8], MPFR_RNDD);
        if (mpfr_sgn(P[9]) > 0) mpfr_add(lo, lo, P[9], MPFR_RNDD);
    }
    mpfr_mul_2si(hi, hi, -1, MPFR_RNDU);
    mpfr_mul_2si(lo, lo, -1, MPFR_RNDD);
}

/* sum_t f_t x_t / sum_t f_t over in[] enclosed into [lo, hi], the weights f
 * enclosed by (fl, fu) and x_t exact binary64 values (x[t * stride]). */
static void wmean(mpfr_t lo, mpfr_t hi, work *w, mpfr_t *fl, mpfr_t *fu, const uint8_t *in,
                  uint32_t n, mpfr_t *x, uint32_t stride)
{
    mpfr_t *P = w->p;
    wsum(P[0], P[1], fl, fu, in, n);
    mpfr_set_zero(lo, 1), mpfr_set_zero(hi, 1);
    for (uint32_t t = 0; t < n; t++) {
        mpfr_ptr v = x[(size_t)t * stride];
        int sg = mpfr_sgn(v);
        if (!in[t] || sg == 0) continue;
        mpfr_mul(P[2], sg > 0 ? fl[t] : fu[t], v, MPFR_RNDD);
        mpfr_add(lo, lo, P[2], MPFR_RNDD);
        mpfr_mul(P[2], sg > 0 ? fu[t] : fl[t], v, MPFR_RNDU);
        mpfr_add(hi, hi, P[2], MPFR_RNDU);
    }
    mpfr_div(lo, lo, mpfr_sgn(lo) >= 0 ? P[1] : P[0], MPFR_RNDD);
    mpfr_div(hi, hi, mpfr_sgn(hi) >= 0 ? P[0] : P[1], MPFR_RNDU);
}

/* Add the square of an interval [a, b] to the norm^2 enclosure [nl, nh]. */
static void sq_acc(mpfr_t nl, mpfr_t nh, mpfr_t a, mpfr_t b, mpfr_t tmp)
{
    if (mpfr_sgn(a) > 0) mpfr_sqr(tmp, a, MPFR_RNDD), mpfr_add(nl, nl, tmp, MPFR_RNDD);
    else if (mpfr_sgn(b) < 0) mpfr_sqr(tmp, b, MPFR_RNDD), mpfr_add(nl, nl, tmp, MPFR_RNDD);
    if (mpfr_cmpabs(a, b) > 0) mpfr_sqr(tmp, a, MPFR_RNDU);
    else mpfr_sqr(tmp, b, MPFR_RNDU);
    mpfr_add(nh, nh, tmp, MPFR_RNDU);
}

/* Lemma A.3 when no enclosure can decide it (a tail whose weights lie
 * thousands of nats below the set's maximum, so that the margin is below any
 * working precision).  With e = s^ - s, e_min and e_max over T and S,
 *   ln(e^{2D} W^_T W_S) - ln(W_T W^_S)
 *     = [2D - (e_max - e_min)] + ln E_T[e^{e - e_min}] - ln E_S[e^{e - e_max}],
 * E the means under the exact-score weights of each set (bounds §4): the last
 * two terms are >= 0 because every e - e_min >= 0 on T and every e - e_max <= 0
 * on S (a weighted mean of numbers >= 1 is >= 1, of numbers <= 1 is <= 1).  So
 * the inequality holds iff 2D >= e_max - e_min, which is decided exactly (e
 * are exact reals at CAMPAIGN_XP, their difference is checked exact).  1 holds,
 * 0 violated (2D below the range), -1 when the difference is not exact. */
static int a3_by_decomposition(work *w, const uint8_t *in_t, const uint8_t *in_s, uint32_t n,
                               mpfr_t dd)
{
    int first = 1, r;
    mpfr_t lo, hi, df;
    mpfr_inits2(CAMPAIGN_XP, lo, hi, df, (mpfr_ptr)0);
    for (uint32_t t = 0; t < n; t++) {
        if (!in_t[t] && !in_s[t]) continue;
        if (first || mpfr_cmp(w->e[t], lo) < 0) mpfr_set(lo, w->e[t], MPFR_RNDN);
        if (first || mpfr_cmp(w->e[t], hi) > 0) mpfr_set(hi, w->e[t], MPFR_RNDN);
        first = 0;
    }
    if (first || mpfr_sub(df, hi, lo, MPFR_RNDN) != 0) {
        r = -1;
    } else {
        mpfr_mul_2si(lo, dd, 1, MPFR_RNDN);       /* 2D: exact (a power-of-two scaling) */
        r = mpfr_cmp(lo, df) >= 0 ? 1 : 0;
    }
    mpfr_clears(lo, hi, df, (mpfr_ptr)0);
    return r;
}

/* All enclosure checks of one case at precision prec.  x64: the original
 * values, dv64: v~ - v (0 outside the non-promoted full blocks of S), both
 * exact binary64 [n][d]. */
static void enclosed(verdicts *vd, ccase *cs, work *w, int prec, const uint8_t *in_all,
                     const uint8_t *in_s, const uint8_t *prom, const double *x64,
                     const double *dv64)
{
    mpfr_t *P = w->p;
    uint32_t n = cs->n, d = cs->d;
    uint8_t in_t[NMAX];
    int tempty = 1, eq_all, eq_s;
    mpfr_t lo, hi, dl, al, ah, hr, hs, ml, mh, nl, nh, tmp;
    mpfr_t *msl = w->wl, *msu = w->wu, *mtl = w->hl, *mtu = w->hu;
    for (uint32_t t = 0; t < n; t++) {
        mpfr_set_prec(w->wl[t], prec), mpfr_set_prec(w->wu[t], prec);
        mpfr_set_prec(w->hl[t], prec), mpfr_set_prec(w->hu[t], prec);
        mpfr_set_prec(w->sl[t], prec), mpfr_set_prec(w->su[t], prec);
        mpfr_set_prec(w->tl[t], prec), mpfr_set_prec(w->tu[t], prec);
    }
    for (int i = 0; i < 16; i++) mpfr_set_prec(P[i], prec);
    mpfr_inits2(prec, lo, hi, al, ah, ml, mh, nl, nh, tmp, (mpfr_ptr)0);
    mpfr_inits2(KVQ_XPREC, dl, hr, hs, (mpfr_ptr)0);
    for (int i = 0; i < NCMP; i++) vd->r[i] = 1, vd->err[i] = 0.0, vd->bnd[i] = 0.0;
    for (int i = 0; i < NCMP; i++) vd->lf[i] = 0;
    for (uint32_t t = 0; t < n; t++) in_t[t] = in_s[t] ? 0 : 1, tempty &= in_s[t];

    mpfr_set_flt(dl, cs->delta, MPFR_RNDN);       /* Delta, exact */
    eq_all = equal_shift(hr, w, in_all, n);       /* half range of e, all tokens */
    eq_s = equal_shift(hs, w, in_s, n);           /* half range of e over S */
    weights(w->wl, w->wu, w, in_all, n, 0, w->x); /* exact scores, all tokens: p */
    weights(w->hl, w->hu, w, in_all, n, 1, w->y); /* estimated scores, all tokens */
    /* over S: the same numbers restricted to S when S holds the overall
     * greatest score (same m), else weights with S's own maximum */
    mpfr_set(w->t, w->x, MPFR_RNDN);
    if (!set_max_is(w, in_s, n, 0, w->t)) weights(w->sl, w->su, w, in_s, n, 0, NULL),
                                          msl = w->sl, msu = w->su;
    mpfr_set(w->t, w->y, MPFR_RNDN);
    if (!set_max_is(w, in_s, n, 1, w->t)) weights(w->tl, w->tu, w, in_s, n, 1, NULL),
                                          mtl = w->tl, mtu = w->tu;

    /* ---- Lemma A.2 over all tokens and over S ---- */
    for (int set = 0; set < 2; set++) {
        int ci = set ? C_A2_S : C_A2_ALL;
        if (set ? eq_s : eq_all) {                /* TV = 0 exactly (shift invariance) */
            vd->r[ci] = vd->r[ci + 2] = vd->r[ci + 4] = 2;
            continue;
        }
        if (set) tv_enc(lo, hi, w, msl, msu, mtl, mtu, in_s, n);
        else tv_enc(lo, hi, w, w->wl, w->wu, w->hl, w->hu, in_all, n);
        for (int k = 0; k < 3; k++) {             /* tanh(D/2), tanh(Delta/2), tanh(Delta) */
            mpfr_set(P[10], k == 0 ? (set ? hs : hr) : dl, MPFR_RNDD);
            mpfr_set(P[11], k == 0 ? (set ? hs : hr) : dl, MPFR_RNDU);
            if (k < 2) mpfr_mul_2si(P[10], P[10], -1, MPFR_RNDD); /* exact: halving */
            if (k < 2) mpfr_mul_2si(P[11], P[11], -1, MPFR_RNDU);
            mpfr_tanh(P[12], P[10], MPFR_RNDD);   /* tanh increasing: lower end */
            mpfr_tanh(P[13], P[11], MPFR_RNDU);
            vd->r[ci + 2 * k] = decide(hi, lo, P[12], P[13]);
            vd->err[ci + 2 * k] = mpfr_get_d(hi, MPFR_RNDU);
            vd->bnd[ci + 2 * k] = mpfr_get_d(P[12], MPFR_RNDD);
        }
    }

    /* ---- Lemma A.3: alpha_T (exact scores) against A(alpha^_T, D) ---- */
    if (tempty) {
        vd->r[C_A3] = vd->r[C_A3D] = 2;           /* alpha_T = 0 = A(0, D) */
        mpfr_set_zero(al, 1), mpfr_set_zero(ah, 1);
    } else {
        /* alpha = 1 / (1 + W_S / W_T): increasing in W_T, decreasing in W_S */
        wsum(P[0], P[1], w->hl, w->hu, in_t, n);  /* W^_T */
        wsum(P[2], P[3], w->hl, w->hu, in_s, n);  /* W^_S */
        mpfr_div(al, P[3], P[0], MPFR_RNDU), mpfr_add_ui(al, al, 1, MPFR_RNDU);
        mpfr_ui_div(al, 1, al, MPFR_RNDD);        /* alpha^ lower */
        mpfr_div(ah, P[2], P[1], MPFR_RNDD), mpfr_add_ui(ah, ah, 1, MPFR_RNDD);
        mpfr_ui_div(ah, 1, ah, MPFR_RNDU);        /* alpha^ upper */
        if (eq_all) {
            /* e constant: alpha_T = alpha^ exactly, and A(a, D) >= a for D >= 0 */
            vd->r[C_A3] = vd->r[C_A3D] = 2;
        } else {
            wsum(P[0], P[1], w->wl, w->wu, in_t, n);  /* W_T */
            wsum(P[2], P[3], w->wl, w->wu, in_s, n);  /* W_S */
            mpfr_div(lo, P[3], P[0], MPFR_RNDU), mpfr_add_ui(lo, lo, 1, MPFR_RNDU);
            mpfr_ui_div(lo, 1, lo, MPFR_RNDD);    /* alpha_T lower */
            mpfr_div(hi, P[2], P[1], MPFR_RNDD), mpfr_add_ui(hi, hi, 1, MPFR_RNDD);
            mpfr_ui_div(hi, 1, hi, MPFR_RNDU);    /* alpha_T upper */
            for (int k = 0; k < 2; k++) {
                int ci = k ? C_A3D : C_A3;
                kvq_exact_cert_tail(P[8], k ? dl : hr, al, MPFR_RNDD);
                kvq_exact_cert_tail(P[9], k ? dl : hr, ah, MPFR_RNDU);
                vd->r[ci] = decide(hi, lo, P[8], P[9]);
                vd->err[ci] = mpfr_get_d(hi, MPFR_RNDU), vd->bnd[ci] = mpfr_get_d(P[8], MPFR_RNDD);
                if (vd->r[ci] >= 0) continue;
                /* Undecided near alpha = 1 (or 0), where a probability carries
                 * no relative precision: decide the equivalent odds form
                 * W_T W^_S <= e^{2D} W^_T W_S (A = odds^-1(e^{2D} odds(alpha^)),
                 * odds increasing; bounds/cert.md §4), whose factors are
                 * enclosed to relative precision. */
                wsum(P[0], P[1], w->wl, w->wu, in_t, n);      /* W_T */
                wsum(P[2], P[3], w->hl, w->hu, in_s, n);      /* W^_S */
                mpfr_mul(P[10], P[0], P[2], MPFR_RNDD);
                mpfr_mul(P[11], P[1], P[3], MPFR_RNDU);       /* W_T W^_S in [P10, P11] */
                wsum(P[0], P[1], w->hl, w->hu, in_t, n);      /* W^_T */
                wsum(P[2], P[3], w->wl, w->wu, in_s, n);      /* W_S */
                mpfr_mul(P[12], P[0], P[2], MPFR_RNDD);
                mpfr_mul(P[13], P[1], P[3], MPFR_RNDU);
                mpfr_mul_2si(P[14], k ? dl : hr, 1, MPFR_RNDD);
                mpfr_exp(P[14], P[14], MPFR_RNDD);
                mpfr_mul(P[12], P[12], P[14], MPFR_RNDD);     /* e^{2D} W^_T W_S lower */
                mpfr_mul_2si(P[15], k ? dl : hr, 1, MPFR_RNDU);
                mpfr_exp(P[15], P[15], MPFR_RNDU);
                mpfr_mul(P[13], P[13], P[15], MPFR_RNDU);     /* upper */
                vd->r[ci] = decide(P[11], P[10], P[12], P[13]);
                vd->err[ci] = mpfr_get_d(P[11], MPFR_RNDU), vd->bnd[ci] = mpfr_get_d(P[12], MPFR_RNDD);
                if (vd->r[ci] >= 0) continue;
                /* still undecided at the retry precision: a margin below any
                 * working precision (a3_by_decomposition) */
                if (prec < CAMPAIGN_PREC_HI) continue;
                vd->r[ci] = a3_by_decomposition(w, in_t, in_s, n, k ? dl : hr);
                vd->lf[ci] = vd->r[ci] >= 0;
            }
        }
    }

    /* ---- Theorem 4.1: ||sum_S pi v - sum_i p v|| against E_key ---- */
    if (tempty && eq_s) {
        vd->r[C_T41] = vd->r[C_T41S] = 2;         /* pi = p exactly: key term 0 */
    } else {
        mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
        for (uint32_t c = 0; c < d; c++) {
            wmean(ml, mh, w, mtl, mtu, in_s, n, w->xv + c, d);   /* sum_S pi v_c */
            wmean(lo, hi, w, w->wl, w->wu, in_all, n, w->xv + c, d); /* sum p v_c */
            mpfr_sub(P[14], ml, hi, MPFR_RNDD);
            mpfr_sub(P[15], mh, lo, MPFR_RNDU);
            sq_acc(nl, nh, P[14], P[15], tmp);
        }
        mpfr_sqrt(lo, nl, MPFR_RNDD);
        mpfr_sqrt(hi, nh, MPFR_RNDU);
        /* E_key(Delta, alpha^, Vmax) [CERT-EK-01]: increasing in alpha^ */
        mpfr_set_flt(P[10], cs->vmax, MPFR_RNDN);
        kvq_exact_cert_ekey(P[8], dl, al, P[10], MPFR_RNDD);
        kvq_exact_cert_ekey(P[9], dl, ah, P[10], MPFR_RNDU);
        if (g_mutant == MUT_EKEY_PAPER) {
            kvq_exact_cert_ekey_paper(P[8], dl, al, P[10], 2u, MPFR_RNDD);
            kvq_exact_cert_ekey_paper(P[9], dl, ah, P[10], 2u, MPFR_RNDU);
        }
        vd->r[C_T41] = decide(hi, lo, P[8], P[9]);
        vd->err[C_T41] = mpfr_get_d(hi, MPFR_RNDU), vd->bnd[C_T41] = mpfr_get_d(P[8], MPFR_RNDD);
        /* sharp: D = half range of e over all tokens (>= that over S), V =
         * max ||v_i|| (lower end for the lower bound; Vmax >= it above) */
        mpfr_set_zero(P[13], 1);
        for (uint32_t t = 0; t < n; t++) {
            mpfr_set_zero(P[11], 1);
            for (uint32_t c = 0; c < d; c++) {
                mpfr_set_d(P[12], x64[(size_t)t * d + c], MPFR_RNDN);
                mpfr_sqr(P[12], P[12], MPFR_RNDD);
                mpfr_add(P[11], P[11], P[12], MPFR_RNDD);
            }
            if (mpfr_cmp(P[11], P[13]) > 0) mpfr_set(P[13], P[11], MPFR_RNDD);
        }
        mpfr_sqrt(P[13], P[13], MPFR_RNDD);
        kvq_exact_cert_ekey(P[8], hr, al, P[13], MPFR_RNDD);
        kvq_exact_cert_ekey(P[9], hr, ah, P[10], MPFR_RNDU);
        vd->r[C_T41S] = decide(hi, lo, P[8], P[9]);
        vd->err[C_T41S] = vd->err[C_T41], vd->bnd[C_T41S] = mpfr_get_d(P[8], MPFR_RNDD);
    }

    /* ---- Theorem 4.3: ||sum_S pi (v~ - v)|| against E_val [CERT-EV-01] ---- */
    {
        int any = 0;
        for (uint32_t e = 0; e < n * d && !any; e++) any = dv64[e] != 0.0;
        if (!any) {
            vd->r[C_T43] = 2;                     /* v~ = v on S: value term 0 exactly */
        } else {
            mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
            for (uint32_t c = 0; c < d; c++) {
                wmean(lo, hi, w, mtl, mtu, in_s, n, w->dv + c, d);
                sq_acc(nl, nh, lo, hi, tmp);
            }
            mpfr_sqrt(lo, nl, MPFR_RNDD);
            mpfr_sqrt(hi, nh, MPFR_RNDU);
            /* E_val = sum_{b in S, not promoted} rho_b eta_b, rho_b the pi-mass */
            wsum(P[2], P[3], mtl, mtu, in_s, n);
            mpfr_set_zero(ml, 1), mpfr_set_zero(mh, 1);
            for (uint32_t b = 0; b < cs->nq; b++) {
                if (!in_s[16u * b] || prom[b] || cs->eta[b] == 0.0f) continue;
                mpfr_set_zero(P[4], 1), mpfr_set_zero(P[5], 1);
                for (uint32_t i = 0; i < 16; i++) {
                    mpfr_add(P[4], P[4], mtl[16u * b + i], MPFR_RNDD);
                    mpfr_add(P[5], P[5], mtu[16u * b + i], MPFR_RNDU);
                }
                mpfr_div(P[4], P[4], P[3], MPFR_RNDD);            /* rho_b lower */
                mpfr_div(P[5], P[5], P[2], MPFR_RNDU);            /* rho_b upper */
                mpfr_mul_d(P[4], P[4], (double)cs->eta[b], MPFR_RNDD);
                mpfr_mul_d(P[5], P[5], (double)cs->eta[b], MPFR_RNDU);
                mpfr_add(ml, ml, P[4], MPFR_RNDD);
                mpfr_add(mh, mh, P[5], MPFR_RNDU);
            }
            vd->r[C_T43] = decide(hi, lo, ml, mh);
            vd->err[C_T43] = mpfr_get_d(hi, MPFR_RNDU), vd->bnd[C_T43] = mpfr_get_d(ml, MPFR_RNDD);
        }
    }
    mpfr_clears(lo, hi, al, ah, ml, mh, nl, nh, tmp, (mpfr_ptr)0);
    mpfr_clears(dl, hr, hs, (mpfr_ptr)0);
}

static const int cmp_stat[NCMP] = {S_A2, S_A2, S_A2_DELTA, S_A2_DELTA, S_A2_PAPER, S_A2_PAPER,
                                   S_A3, S_A3_DELTA, S_T41, S_T41_SHARP, S_T43, -1};
static const char *const cmp_name[NCMP] = {
    "A.2 (all tokens)", "A.2 (S)", "A.2 Delta (all tokens)", "A.2 Delta (S)",
    "A.2 paper tanh(Delta) (all tokens)", "A.2 paper tanh(Delta) (S)", "A.3 (half range)",
    "A.3 (Delta)", "Thm 4.1", "Thm 4.1 sharp", "Thm 4.3", ""};

static void check_enclosed(ccase *cs, work *w, stats *st, kvq_rng *r)
{
    static double x64[NMAX * DMAX], dv64[NMAX * DMAX];
    uint8_t in_all[NMAX], in_s[NMAX], sel[NMAX / 16 + 1], prom[NMAX / 16 + 1];
    uint32_t n = cs->n, d = cs->d, ksel = 0;
    verdicts vd, v2;
    int redo = 0;
    memcpy(sel, cs->sel, cs->nb);
    memcpy(prom, cs->prom, cs->nb);
    if (cs->idx % 3u == 2u) {                     /* any selection: Theorem 4.1 assumes none */
        for (uint32_t b = 0; b < cs->nq; b++) sel[b] = (uint8_t)kvq_rng_below(r, 2), prom[b] = 0;
        st->sel_random++;
    }
    for (uint32_t b = 0; b < cs->nq; b++) ksel += sel[b];
    if (ksel == 0 && cs->nq == cs->nb) sel[kvq_rng_below(r, cs->nq)] = 1; /* S not empty */
    if (cs->idx % 4u == 3u) {                     /* a promotion: any subset of S [CERT-EV-01] */
        for (uint32_t b = 0; b < cs->nq; b++) prom[b] = sel[b] && kvq_rng_below(r, 3) == 0;
        st->prom_random++;
    }
    for (uint32_t b = cs->nq; b < cs->nb; b++) sel[b] = 1, prom[b] = 0; /* residual [CERT-L-03] */
    for (uint32_t t = 0; t < n; t++) in_all[t] = 1, in_s[t] = sel[t / 16u];
    /* v (binary16) and v~ - v exactly in binary64: v^ and v are multiples of
     * 2^-24 below 2^21 in magnitude (bounds/cert.md §2), so the difference has
     * at most 45 significant bits */
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t c = 0; c < d; c++) {
            size_t e = (size_t)t * d + c;
            x64[e] = (double)cs->v[e];
            dv64[e] = t < 16u * cs->nq && in_s[t] && !prom[t / 16u]
                          ? (double)cs->vhx[e] - (double)cs->v[e] : 0.0;
            mpfr_set_d(w->xv[e], x64[e], MPFR_RNDN);     /* exact: 53 bits */
            mpfr_set_d(w->dv[e], dv64[e], MPFR_RNDN);
        }
    enclosed(&vd, cs, w, CAMPAIGN_PREC, in_all, in_s, prom, x64, dv64);
    for (int i = 0; i < NCMP; i++) redo |= vd.r[i] < 0;
    if (redo) {
        st->retries++;
        enclosed(&v2, cs, w, CAMPAIGN_PREC_HI, in_all, in_s, prom, x64, dv64);
        for (int i = 0; i < NCMP; i++)
            if (vd.r[i] < 0)
                vd.r[i] = v2.r[i], vd.err[i] = v2.err[i], vd.bnd[i] = v2.bnd[i], vd.lf[i] = v2.lf[i];
    }
    for (int i = 0; i < NCMP; i++) {
        int s = cmp_stat[i];
        if (s < 0) continue;
        if (vd.r[i] == 0 || vd.r[i] < 0) {
            memcpy(cs->sel, sel, cs->nb), memcpy(cs->prom, prom, cs->nb); /* the checked S */
            fail(cs, cmp_name[i], "%s: error %a (upper end) %s bound %a (lower end)",
                 vd.r[i] == 0 ? "violated" : "undecided at the retry precision", vd.err[i],
                 vd.r[i] == 0 ? ">" : "vs", vd.bnd[i]);
        }
        if (vd.r[i] == 2) st->exact_zero++;
        st->a3_logform += (uint64_t)vd.lf[i];
        st->checks[s][cs->fam]++;
        /* the ratio is a report estimate from binary64 conversions of the
         * enclosure ends; ends below the normal binary64 range (tails far
         * beyond it) carry no relative precision and are left out */
        if (vd.bnd[i] >= DBL_MIN && vd.err[i] >= DBL_MIN && vd.err[i] / vd.bnd[i] > st->max_ratio[s])
            st->max_ratio[s] = vd.err[i] / vd.bnd[i];
    }
}

/* ---- Theorem 4.4 ----------------------------------------------------------- */

/* Is the claim c >= E_val = sum_{b in S} rho_b eta'_b [CERT-EV-01] (eta'_b = 0
 * for promoted and residual blocks)?  Decided from c - E_val = sum_{b in S}
 * rho_b (c - eta'_b), since the Phase-2 masses rho_b sum to 1 over S: each
 * coefficient's sign is exact, so enclosures of rho_b give an enclosure of
 * c - E_val with relative precision even when E_val equals a binary32 value
 * (all mass on one block), where an upper bound of E_val rounded up to
 * binary32 would exceed c.  Returns 1 sound, 0 unsound, -1 undecided. */
static int eval_claim_sound(ccase *cs, work *w, float c)
{
    uint8_t in_s[NMAX];
    mpfr_t *P = w->p;
    int res;
    for (uint32_t t = 0; t < cs->n; t++) {
        in_s[t] = cs->sel[t / 16u];
        mpfr_set_prec(w->tl[t], CAMPAIGN_PREC_HI), mpfr_set_prec(w->tu[t], CAMPAIGN_PREC_HI);
    }
    for (int i = 0; i < 8; i++) mpfr_set_prec(P[i], CAMPAIGN_PREC_HI);
    weights(w->tl, w->tu, w, in_s, cs->n, 1, NULL);  /* pi over S: estimated scores */
    wsum(P[0], P[1], w->tl, w->tu, in_s, cs->n);
    mpfr_set_zero(P[6], 1), mpfr_set_zero(P[7], 1);   /* c - E_val in [P6, P7] */
    for (uint32_t b = 0; b < cs->nb; b++) {
        float eb = (b < cs->nq && !cs->prom[b]) ? cs->eta[b] : 0.0f;
        if (!cs->sel[b]) continue;
        mpfr_set_zero(P[2], 1), mpfr_set_zero(P[3], 1);
        for (uint32_t i = 16u * b; i < 16u * b + 16u && i < cs->n; i++)
            mpfr_add(P[2], P[2], w->tl[i], MPFR_RNDD), mpfr_add(P[3], P[3], w->tu[i], MPFR_RNDU);
        mpfr_div(P[2], P[2], P[1], MPFR_RNDD);               /* rho_b lower */
        mpfr_div(P[3], P[3], P[0], MPFR_RNDU);               /* rho_b upper */
        mpfr_set_flt(P[4], c, MPFR_RNDN);
        mpfr_set_flt(P[5], eb, MPFR_RNDN);
        mpfr_sub(P[4], P[4], P[5], MPFR_RNDN);               /* exact at 1024 bits */
        if (mpfr_sgn(P[4]) >= 0) {
            mpfr_mul(P[5], P[2], P[4], MPFR_RNDD), mpfr_add(P[6], P[6], P[5], MPFR_RNDD);
            mpfr_mul(P[5], P[3], P[4], MPFR_RNDU), mpfr_add(P[7], P[7], P[5], MPFR_RNDU);
        } else {
            mpfr_mul(P[5], P[3], P[4], MPFR_RNDD), mpfr_add(P[6], P[6], P[5], MPFR_RNDD);
            mpfr_mul(P[5], P[2], P[4], MPFR_RNDU), mpfr_add(P[7], P[7], P[5], MPFR_RNDU);
        }
    }
    res = mpfr_sgn(P[6]) >= 0 ? 1 : mpfr_sgn(P[7]) < 0 ? 0 : -1;
    return res;
}

static void check_step(ccase *cs, work *w, stats *st)
{
    kvq_cert_shape sh = {cs->n, cs->d};
    kvq_cert_cache ch;
    kvq_exact_cert_verdict vd;
    kvq_status s;
    double tot;
    ch.k = cs->k, ch.v = cs->v, ch.kcodes = cs->kc, ch.sigma = cs->sg, ch.z = cs->zz;
    ch.vcodes = cs->vc, ch.vscale = cs->vs, ch.vzero = cs->vz, ch.eta = cs->etaf, ch.nu = cs->nuf;
    /* rungs 0-2: sparse contract; rungs 3-4: dense contract [CERT-LAD-03] */
    if (cs->rec.rung <= 2u)
        s = kvq_exact_cert_check(&vd, cs->out, &cs->rec, cs->sel, cs->prom, cs->q, cs->scale, &ch,
                                 &cs->decl, &sh);
    else
        s = kvq_exact_cert_check_dense(&vd, cs->out, &cs->rec, cs->q, cs->scale, &ch, &cs->decl,
                                       &sh);
    if (s != KVQ_OK) fail(cs, "Thm 4.4", "exact checker (rung %u): %s", cs->rec.rung,
                          kvq_status_str(s));
    if (cs->rec.rung <= 2u && (vd.unsound & 2u) && eval_claim_sound(cs, w, cs->rec.eval) == 1) {
        /* the checker's sound E_val is an upper bound rounded up, here above
         * the claim although the claim is >= the exact E_val (decided above) */
        if (st->eval_false_alarms++ == 0)
            fprintf(stderr, "note: case %" PRIu64 ": kvq_exact_cert_check flags claim eval %a "
                    "below its sound value %a, but claim >= E_val exactly "
                    "(eval_claim_sound)\n", cs->idx, (double)cs->rec.eval, (double)vd.eval);
        vd.unsound &= ~2u;
    }
    if (vd.unsound)
        fail(cs, "Thm 4.4", "unsound claim (bits %u): claimed ekey %a eval %a earith %a, sound "
             "%a %a %a [CERT-CON-02]", vd.unsound, (double)cs->rec.ekey, (double)cs->rec.eval,
             (double)cs->rec.earith, (double)vd.ekey, (double)vd.eval, (double)vd.earith);
    if (vd.holds != 1 || vd.holds_sound != 1)
        fail(cs, "Thm 4.4", "contract %s: error in [%a, %a], claimed sum %a, sound sum %a",
             vd.holds == 0 || vd.holds_sound == 0 ? "violated" : "undecided", vd.err_lo, vd.err_hi,
             (double)cs->rec.ekey + cs->rec.eval + cs->rec.earith,
             (double)vd.ekey + vd.eval + vd.earith);
    st->checks[S_T44][cs->fam]++;
    st->rungs[cs->rec.rung <= 4u ? cs->rec.rung : 4u]++;
    tot = (double)vd.ekey + (double)vd.eval + (double)vd.earith;
    if (tot > 0.0 && vd.err_hi / tot > st->max_ratio[S_T44]) st->max_ratio[S_T44] = vd.err_hi / tot;
}

/* ---- one worker ---------------------------------------------------------- */

static void work_init(work *w)
{
    for (uint32_t t = 0; t < NMAX; t++) {
        mpfr_inits2(CAMPAIGN_XP, w->s[t], w->e[t], (mpfr_ptr)0);
        mpfr_inits2(CAMPAIGN_PREC, w->wl[t], w->wu[t], w->hl[t], w->hu[t], w->sl[t], w->su[t],
                    w->tl[t], w->tu[t], (mpfr_ptr)0);
    }
    mpfr_inits2(CAMPAIGN_XP, w->a, w->b, w->c, w->x, w->y, w->t, (mpfr_ptr)0);
    for (uint32_t e = 0; e < NMAX * DMAX; e++) mpfr_init2(w->xv[e], 53), mpfr_init2(w->dv[e], 53);
    for (uint32_t c = 0; c < DMAX; c++) mpfr_init2(w->qv[c], 24);
    for (int i = 0; i < 16; i++) mpfr_init2(w->p[i], CAMPAIGN_PREC);
}

static void run_worker(stats *st, uint64_t seed, uint64_t first, uint64_t total, uint32_t job,
                       uint32_t jobs)
{
    static ccase cs;
    static work w;
    kvq_progress pg;
    work_init(&w);
    memset(st, 0, sizeof *st);
    /* worker 0 speaks for all: its share times the workers [VER-CLI-07] */
    kvq_progress_init(&pg, "cert-campaign", job == 0 ? g_progress : -1);
    /* chunks of CAMPAIGN_T44_EVERY cases per worker, so that the sampled
     * statements (every 8th, every 64th case) are spread over the workers;
     * each case depends on (seed, index) only, not on the worker */
    for (uint64_t k = (uint64_t)job * CAMPAIGN_T44_EVERY; k < total;
         k += (k % CAMPAIGN_T44_EVERY == CAMPAIGN_T44_EVERY - 1u)
                  ? (uint64_t)(jobs - 1u) * CAMPAIGN_T44_EVERY + 1u : 1u) {
        uint64_t idx = first + k;                 /* the case index */
        kvq_rng r;
        r.s = ~seed ^ (idx * 0x9E3779B97F4A7C15ull);
        gen_case(&cs, seed, idx);
        PROF(0, quantize(&cs, &w, st, &r));
        PROF(1, check_keys(&cs, &w, st));
        PROF(2, check_enclosed(&cs, &w, st, &r));
        if (idx % CAMPAIGN_T44_EVERY == 0) PROF(3, check_step(&cs, &w, st));
        st->cases++;
        st->fam_cases[cs.fam]++;
        kvq_progress_tick(&pg, st->cases * jobs < total ? st->cases * jobs : total - 1u, total);
    }
    kvq_progress_end(&pg);
    if (g_profile)
        fprintf(stderr, "worker %u: quantize %.2f s, keys+scores %.2f s, enclosures %.2f s, "
                "steps %.2f s (exact keys %.2f, annotate %.2f, delta %.2f)\n", job, g_prof[0], g_prof[1],
                g_prof[2], g_prof[3], g_prof[4], g_prof[5], g_prof[6]);
}

static void merge(stats *a, const stats *b)
{
    a->cases += b->cases, a->retries += b->retries, a->exact_zero += b->exact_zero;
    a->sel_random += b->sel_random, a->prom_random += b->prom_random;
    a->elems += b->elems, a->tokens += b->tokens, a->k804_filtered += b->k804_filtered;
    for (int k = 0; k < 5; k++) a->rungs[k] += b->rungs[k];
    a->eval_false_alarms += b->eval_false_alarms;
    a->a3_logform += b->a3_logform;
    for (int f = 0; f < NFAM; f++) a->fam_cases[f] += b->fam_cases[f];
    for (int s = 0; s < NSTAT; s++) {
        for (int f = 0; f < NFAM; f++) a->checks[s][f] += b->checks[s][f];
        if (b->max_ratio[s] > a->max_ratio[s]) a->max_ratio[s] = b->max_ratio[s];
    }
    if (b->max_excess_gamma > a->max_excess_gamma) a->max_excess_gamma = b->max_excess_gamma;
}

/* ---- the paper's worked numbers (item of spec/bounds/cert.md §10) --------- */

typedef struct worked {
    const char *what;
    double lo, hi;   /* enclosure of the exact value */
    const char *printed;
    int ok;
} worked;

/* Is the exact value (enclosed by [lo, hi] at 256 bits) the printed decimal
 * p / 10^6 to six places, i.e. in [p - 1/2, p + 1/2) / 10^6?  Decided by
 * enclosures of both ends (each end rounded inward). */
static int printed6(mpfr_t lo, mpfr_t hi, unsigned long p)
{
    mpfr_t a, b;
    int ok;
    mpfr_inits2(CAMPAIGN_PREC, a, b, (mpfr_ptr)0);
    mpfr_set_ui(a, 2 * p - 1, MPFR_RNDN);
    mpfr_div_ui(a, a, 2000000ul, MPFR_RNDU);      /* >= (p - 1/2) 10^-6 */
    mpfr_set_ui(b, 2 * p + 1, MPFR_RNDN);
    mpfr_div_ui(b, b, 2000000ul, MPFR_RNDD);      /* <= (p + 1/2) 10^-6 */
    ok = mpfr_cmp(lo, a) >= 0 && mpfr_cmp(hi, b) < 0;
    mpfr_clears(a, b, (mpfr_ptr)0);
    return ok;
}

static int worked_numbers(worked *wk)
{
    mpfr_t dlo, dhi, alo, ahi, one, lo, hi;
    int all = 1;
    mpfr_inits2(CAMPAIGN_PREC, dlo, dhi, alo, ahi, one, lo, hi, (mpfr_ptr)0);
    /* Delta = 0.18, alpha^ = 1 - tau = 0.005 (reals), Vmax = 1 */
    mpfr_set_ui(dlo, 18, MPFR_RNDN), mpfr_div_ui(dlo, dlo, 100, MPFR_RNDD);
    mpfr_set_ui(dhi, 18, MPFR_RNDN), mpfr_div_ui(dhi, dhi, 100, MPFR_RNDU);
    mpfr_set_ui(alo, 5, MPFR_RNDN), mpfr_div_ui(alo, alo, 1000, MPFR_RNDD);
    mpfr_set_ui(ahi, 5, MPFR_RNDN), mpfr_div_ui(ahi, ahi, 1000, MPFR_RNDU);
    mpfr_set_ui(one, 1, MPFR_RNDN);
    kvq_exact_cert_ekey_paper(lo, dlo, alo, one, 2u, MPFR_RNDD);
    kvq_exact_cert_ekey_paper(hi, dhi, ahi, one, 2u, MPFR_RNDU);
    wk[0] = (worked){"paper term 2 e^{2Delta} alpha^ (e^{2Delta}-1) [CERT-EK-02]",
                     mpfr_get_d(lo, MPFR_RNDD), mpfr_get_d(hi, MPFR_RNDU), "0.006211",
                     printed6(lo, hi, 6211ul)};
    kvq_exact_cert_ekey_paper(lo, dlo, alo, one, 3u, MPFR_RNDD);
    kvq_exact_cert_ekey_paper(hi, dhi, ahi, one, 3u, MPFR_RNDU);
    wk[1] = (worked){"paper term with e^{3Delta} [CERT-EK-02]", mpfr_get_d(lo, MPFR_RNDD),
                     mpfr_get_d(hi, MPFR_RNDU), "0.007436", printed6(lo, hi, 7436ul)};
    kvq_exact_cert_ekey(lo, dlo, alo, one, MPFR_RNDD);
    kvq_exact_cert_ekey(hi, dhi, ahi, one, MPFR_RNDU);
    wk[2] = (worked){"sound E_key 2 (A + (1-A) tanh(Delta/2)) [CERT-EK-01] [CERT-EK-03]",
                     mpfr_get_d(lo, MPFR_RNDD), mpfr_get_d(hi, MPFR_RNDU), "0.192534",
                     printed6(lo, hi, 192534ul)};
    /* 288 bytes per token per head at d = 128 [CERT-L-05], from the layout
     * header's function (quarter bytes): an integer comparison */
    {
        uint32_t qb = kvq_cert_quarter_bytes_per_token(128u);
        wk[3] = (worked){"bytes per token per head, d = 128 [CERT-L-05]", qb / 4.0, qb / 4.0, "288",
                         qb == 4u * 288u};
    }
    for (int i = 0; i < 4; i++) all &= wk[i].ok;
    mpfr_clears(dlo, dhi, alo, ahi, one, lo, hi, (mpfr_ptr)0);
    return all;
}

/* ---- main ------------------------------------------------------------------ */

static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t min, uint64_t max)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (s == NULL || *s == '\0') return dflt;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || s[0] == '-' || v < min || v > max) {
        fprintf(stderr, "%s: %s=%s: not an integer in [%" PRIu64 ", %" PRIu64 "]\n", g_self, name,
                s, min, max);
        exit(2);
    }
    return (uint64_t)v;
}

static void write_reports(const char *json, const char *txt, const stats *st, uint64_t seed,
                          uint32_t jobs, double wall, const worked *wk, int wk_ok)
{
    struct rusage ru;
    double cpu = 0.0;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
        cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
              (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    struct utsname un;
    char host[300] = "unknown", commit[64] = "unknown";
    const char *cm = getenv("KVQ_CAMPAIGN_COMMIT");
    uint64_t tot[NSTAT];
    if (uname(&un) == 0) snprintf(host, sizeof host, "%s %s %s", un.sysname, un.release, un.machine);
    if (cm && *cm) snprintf(commit, sizeof commit, "%s", cm);
    for (int s = 0; s < NSTAT; s++) {
        tot[s] = 0;
        for (int f = 0; f < NFAM; f++) tot[s] += st->checks[s][f];
    }
    FILE *fs[2] = {NULL, NULL};
    /* open both reports before writing either: a bad path leaves nothing written */
    for (int pass = 0; pass < 2; pass++) {
        const char *path = pass ? txt : json;
        if (path == NULL) continue;
        fs[pass] = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
        if (fs[pass] == NULL) {
            fprintf(stderr, "%s: %s: %s\n", g_self, path, strerror(errno));
            if (pass == 1 && fs[0] != NULL && fs[0] != stdout) fclose(fs[0]), remove(json);
            exit(2);
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *path = pass ? txt : json;
        FILE *f = fs[pass];
        if (f == NULL) continue;
        if (pass == 0) {
            fprintf(f, "{\n  \"campaign\": \"CERT lemma campaign\",\n  \"spec\": \"spec/bounds/cert.md section 10\",\n");
            fprintf(f, "  \"seed\": \"0x%016" PRIx64 "\",\n  \"cases\": %" PRIu64 ",\n  \"jobs\": %u,\n",
                    seed, st->cases, jobs);
            fprintf(f, "  \"wall_seconds\": %.1f,\n  \"worker_cpu_seconds\": %.1f,\n"
                    "  \"machine\": \"%s\",\n  \"commit\": \"%s\",\n", wall, cpu, host, commit);
            fprintf(f, "  \"violations\": 0,\n  \"undecided\": 0,\n  \"retries_at_%d_bits\": %" PRIu64 ",\n",
                    CAMPAIGN_PREC_HI, st->retries);
            fprintf(f, "  \"decided_by_equal_shift\": %" PRIu64 ",\n  \"random_selections\": %" PRIu64
                    ",\n  \"random_promotions\": %" PRIu64 ",\n  \"key_elements\": %" PRIu64
                    ",\n  \"tokens\": %" PRIu64 ",\n  \"key_elements_decided_by_binary64_filter\": %"
                    PRIu64 ",\n", st->exact_zero, st->sel_random, st->prom_random, st->elems,
                    st->tokens, st->k804_filtered);
            fprintf(f, "  \"thm44_steps_by_rung\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
                    ", %" PRIu64 "],\n", st->rungs[0], st->rungs[1], st->rungs[2], st->rungs[3],
                    st->rungs[4]);
            fprintf(f, "  \"thm44_checker_eval_verdicts_overruled\": %" PRIu64 ",\n",
                    st->eval_false_alarms);
            fprintf(f, "  \"a3_decided_by_decomposition\": %" PRIu64 ",\n", st->a3_logform);
            fprintf(f, "  \"families\": {");
            for (int fm = 0; fm < NFAM; fm++)
                fprintf(f, "%s\"%s\": %" PRIu64, fm ? ", " : "", fam_name[fm], st->fam_cases[fm]);
            fprintf(f, "},\n  \"statements\": [\n");
            for (int s = 0; s < NSTAT; s++) {
                fprintf(f, "    {\"statement\": \"%s\", \"label\": \"%s\", \"spec\": \"%s\", \"checks\": %" PRIu64
                        ", \"violations\": 0, \"max_ratio_error_to_bound\": %.6g, \"per_family\": {",
                        stat_name[s], stat_id[s], stat_ref[s], tot[s], st->max_ratio[s]);
                for (int fm = 0; fm < NFAM; fm++)
                    fprintf(f, "%s\"%s\": %" PRIu64, fm ? ", " : "", fam_name[fm], st->checks[s][fm]);
                fprintf(f, "}}%s\n", s + 1 < NSTAT ? "," : "");
            }
            fprintf(f, "  ],\n  \"max_excess_over_half_sigma_in_gamma\": %.6g,\n", st->max_excess_gamma);
            fprintf(f, "  \"worked_numbers\": [\n");
            for (int i = 0; i < 4; i++)
                fprintf(f, "    {\"what\": \"%s\", \"exact_lo\": %.17g, \"exact_hi\": %.17g, "
                        "\"printed\": \"%s\", \"agrees\": %s}%s\n", wk[i].what, wk[i].lo, wk[i].hi,
                        wk[i].printed, wk[i].ok ? "true" : "false", i < 3 ? "," : "");
            fprintf(f, "  ],\n  \"worked_numbers_agree\": %s\n}\n", wk_ok ? "true" : "false");
        } else {
            fprintf(f, "CERT lemma campaign (spec/bounds/cert.md section 10)\n");
            fprintf(f, "seed 0x%016" PRIx64 "  cases %" PRIu64 "  jobs %u  wall %.1f s  worker cpu "
                    "%.1f s\n", seed, st->cases, jobs, wall, cpu);
            fprintf(f, "machine %s  commit %s\n", host, commit);
            fprintf(f, "violations 0  undecided 0  retries at %d bits %" PRIu64
                    "  decided by equal shift %" PRIu64 "\n", CAMPAIGN_PREC_HI, st->retries,
                    st->exact_zero);
            fprintf(f, "random selections %" PRIu64 "  random promotions %" PRIu64
                    "  key elements %" PRIu64 " (%" PRIu64 " by the binary64 filter)  tokens %"
                    PRIu64 "\n\n", st->sel_random, st->prom_random, st->elems, st->k804_filtered,
                    st->tokens);
            fprintf(f, "%-62s %12s %10s\n", "statement", "checks", "max ratio");
            for (int s = 0; s < NSTAT; s++)
                if (s == S_DIFF)
                    fprintf(f, "%-62s %12" PRIu64 " %10s\n", stat_name[s], tot[s], "(bitwise)");
                else
                    fprintf(f, "%-62s %12" PRIu64 " %10.6f\n", stat_name[s], tot[s], st->max_ratio[s]);
            fprintf(f, "max (|k-k^| - sigma/2) / gamma: %.6f\n", st->max_excess_gamma);
            fprintf(f, "Thm 4.4 steps by accepted rung 0..4: %" PRIu64 " %" PRIu64 " %" PRIu64
                    " %" PRIu64 " %" PRIu64 "; checker eval-claim verdicts overruled exactly: %"
                    PRIu64 "\nA.3 comparisons beyond every enclosure, decided by the decomposition of bounds section 4: %"
                    PRIu64 "\n\n", st->rungs[0], st->rungs[1], st->rungs[2], st->rungs[3],
                    st->rungs[4], st->eval_false_alarms, st->a3_logform);
            fprintf(f, "%-18s %9s", "family", "cases");
            for (int s = 0; s < NSTAT; s++) fprintf(f, " %10s", stat_id[s]);
            fprintf(f, "\n");
            for (int fm = 0; fm < NFAM; fm++) {
                fprintf(f, "%-18s %9" PRIu64, fam_name[fm], st->fam_cases[fm]);
                for (int s = 0; s < NSTAT; s++) fprintf(f, " %10" PRIu64, st->checks[s][fm]);
                fprintf(f, "\n");
            }
            fprintf(f, "\nworked numbers (Vmax = 1; exact enclosure vs the printed decimal):\n");
            for (int i = 0; i < 4; i++)
                fprintf(f, "  %-66s [%.9f, %.9f]  printed %s  %s\n", wk[i].what, wk[i].lo,
                        wk[i].hi, wk[i].printed, wk[i].ok ? "agrees" : "DISAGREES");
        }
        if (f != stdout && fclose(f) != 0) {
            fprintf(stderr, "%s: %s: write error\n", g_self, path);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL, *txt = "-";
    uint64_t seed, total, first;
    uint32_t jobs;
    stats all;
    worked wk[4];
    int wk_ok, bad = 0;
    struct timespec t0, t1;
    pid_t pid[64];
    int fd[64];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--progress") == 0) g_progress = 1;
        else if (strcmp(argv[i], "--quiet") == 0) g_progress = -1;
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
        else if (strcmp(argv[i], "--txt") == 0 && i + 1 < argc) txt = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--json FILE] [--txt FILE] [--progress|--quiet]  (env KVQ_SEED, "
                    "KVQ_CAMPAIGN_CASES, KVQ_CAMPAIGN_JOBS)\n", g_self);
            return 2;
        }
    }
    seed = env_u64("KVQ_SEED", CAMPAIGN_SEED_DEFAULT, 0, UINT64_MAX);
    total = env_u64("KVQ_CAMPAIGN_CASES", CAMPAIGN_CASES_DEFAULT, 1, UINT64_C(1) << 40);
    first = env_u64("KVQ_CAMPAIGN_FIRST", 0, 0, UINT64_C(1) << 40); /* replay: cases first.. */
    jobs = (uint32_t)env_u64("KVQ_CAMPAIGN_JOBS", 2, 1, 64);
    g_profile = getenv("KVQ_CAMPAIGN_PROFILE") != NULL;
    {
        const char *m = getenv("KVQ_CAMPAIGN_MUTANT");
        if (m != NULL && *m != '\0') {
            g_mutant = strcmp(m, "half_sigma") == 0   ? MUT_HALF_SIGMA
                       : strcmp(m, "half_delta") == 0 ? MUT_HALF_DELTA
                       : strcmp(m, "ekey_paper") == 0 ? MUT_EKEY_PAPER : -1;
            if (g_mutant < 0) {
                fprintf(stderr, "%s: KVQ_CAMPAIGN_MUTANT=%s: not half_sigma, half_delta or "
                        "ekey_paper\n", g_self, m);
                return 2;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(NULL);
    for (uint32_t j = 0; j < jobs; j++) {
        int p[2];
        if (pipe(p) != 0) die("pipe failed");
        pid[j] = fork();
        if (pid[j] < 0) die("fork failed");
        if (pid[j] == 0) {
            stats st;
            size_t off = 0;
            close(p[0]);
            run_worker(&st, seed, first, total, j, jobs);
            while (off < sizeof st) {
                ssize_t k = write(p[1], (const char *)&st + off, sizeof st - off);
                if (k <= 0) _exit(2);
                off += (size_t)k;
            }
            _exit(0);
        }
        close(p[1]);
        fd[j] = p[0];
    }
    memset(&all, 0, sizeof all);
    for (uint32_t j = 0; j < jobs; j++) {
        stats st;
        size_t off = 0;
        int status;
        while (off < sizeof st) {
            ssize_t k = read(fd[j], (char *)&st + off, sizeof st - off);
            if (k <= 0) break;
            off += (size_t)k;
        }
        close(fd[j]);
        if (waitpid(pid[j], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
            fprintf(stderr, "%s: worker %u failed (%s %d)\n", g_self, j,
                    WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? code : WTERMSIG(status));
            bad = bad == 1 ? 1 : (code == 1 ? 1 : 2);
            continue;
        }
        if (off != sizeof st) die("a worker's statistics were cut short");
        merge(&all, &st);
    }
    if (bad) {
        fprintf(stderr, "%s: FAILED (seed 0x%016" PRIx64 ")\n", g_self, seed);
        return bad;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    wk_ok = worked_numbers(wk);
    write_reports(json, txt, &all, seed, jobs,
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), wk,
                  wk_ok);
    if (!wk_ok) {
        fprintf(stderr, "%s: a worked number disagrees with its printed decimal\n", g_self);
        return 1;
    }
    return 0;
}
