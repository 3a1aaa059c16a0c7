/*
 * cert_campaign.c -- the CERT lemma campaign: evidence for the statements of
 * spec/cert.md and spec/bounds/cert.md, decided exactly on random and
 * adversarial steps (spec/bounds/cert.md §10).
 *
 * Statements checked, each case (the paper's numbering: Lemma A.1-A.3,
 * Eq. 7-15, Theorem 4.3, Corollary 4.2; kvq's own statements K.1-K.5 and
 * requirement IDs, spec/bounds/cert.md; SPEC IDs cited where the check is
 * made).  The step variants of [CERT-VAR-01]: sparse (Phase 2 over the
 * selection S with k^) and paper (the paper's Algorithm 1: every token, the
 * original keys on S and the residual block F, k^ on the tail T).
 *   K8-04  |k - k^| <= sigma/2 + gamma on every key element      [CERT-K8-04]
 *   DLT-05 gamma <= gamma' on every block-channel                [CERT-DLT-05]
 *   Eq. 8  |s_i - s^_i| <= Delta_b on every token                [CERT-DLT-03]
 *   K.1    TV(softmax s, softmax s^) <= tanh(D/2) over the whole token set
 *          and over S, D the half range of s^ - s (shift invariance), and
 *          <= tanh(Delta/2); Lemma A.2: <= tanh(Delta)
 *   K.2    Eq. 14 in odds form, alpha_T <= A(alpha^_T, D), D = half range
 *          and D = Delta; Eq. 14: alpha_T <= e^{2 Delta} alpha^_T
 *   K.3    sparse key term ||sum_S pi_i v_i - sum_i p_i v_i|| <= E_key
 *                                                              [CERT-EK-01]
 *   C4.2   sparse value term ||sum_S pi_i (v~_i - v_i)|| <= E_val [CERT-EV-01]
 *   paper variant, a' = softmax of s' (s on F, s^ on T), a = softmax s:
 *   A.1    e^{-2D} <= a'_t / a_t <= e^{2D}, D = Delta and D = max_T |s^ - s|
 *   A.3    TV(a, a') <= alpha_T (e^{2D} - 1) and, from the paper's (20) and
 *          (21), <= alpha_T (e^{2D} + e^D - 2) / 2 (alpha_T the true tail mass)
 *   K.1    TV(a, a') <= tanh(D'/2), D' the half range of s' - s
 *   Eq. 7  (Theorem 4.3) key term ||sum a'_i v_i - sum a_i v_i|| <= 2 Vmax TV
 *   K.4    key term <= 2 Vmax min(tanh(Delta/2), A (e^{2D} + e^D - 2) / 2)
 *                                                              [CERT-EK-04]
 *   Eq. 15 key term <= 2 Vmax e^{2 Delta} alpha^_T (e^{2 Delta} - 1)
 *   Eq. 12 when the step's Phase-1 radius delta1 <= Delta / 2: alpha_T <=
 *          e^{3 Delta} alpha~ (alpha~ the tail mass of the step's L~_b), and
 *          key term <= 2 Vmax e^{3 Delta} alpha~ (e^{2 Delta} - 1)
 *   C4.2   value term ||sum a'_i (v~_i - v_i)|| <= sum_b rho'_b eta'_b over
 *          all blocks, and e^{-2 Delta} p^_b <= rho'_b <= e^{2 Delta} p^_b
 *          [CERT-EV-03] (Lemma A.1 on s' vs s^)
 *   K.5    kvq_cert_step's certificate, both variants in turn: claims sound and
 *          the contract decided by kvq_exact_cert_check of the same variant
 *          (every CAMPAIGN_T44_EVERY-th case)              [CERT-CON-01/02]
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
 * TV = 0 there, and with T empty the sparse key term (K.3) is 0; in the paper
 * variant, s' = s when s^ = s on every token of T (or T is empty), so a' = a.
 * The paper variant's differences a' - a are enclosed through the identity
 * (a'_t - a_t) / alpha_T = (w_t / W_T) (e^{s'_t - s_t} x - 1), x = Z / Z'
 * (w the exact-score weights, W_T their sum over T), which keeps relative
 * precision however small the tail mass alpha_T is.
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
#define CAMPAIGN_T44_EVERY     64u  /* K.5 (the contract) on every 64th case */
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
    S_K804, S_DLT05, S_EQ8, S_K1, S_K1_DELTA, S_A2, S_K2, S_K2_DELTA, S_EQ14, S_K3, S_K3_SHARP,
    S_C42S, S_A1P, S_A1P_T, S_A3P, S_A3P_T, S_A3PS, S_A3PS_T, S_K1P, S_EQ7P, S_K4, S_EQ15,
    S_E3T, S_EQ12, S_C42P, S_C42PM, S_CON_P, S_CON_S, S_DIFF, NSTAT
};
/* Statement names, in the paper's numbering (Lemma A.1-A.3, Eq. 7-15,
 * Theorem 4.3, Corollary 4.2) or kvq's own (K.1-K.5, requirement IDs) as in
 * spec/bounds/cert.md; "paper" = the paper variant's a' against a. */
static const char *const stat_name[NSTAT] = {
    "K8-04 key element |k-k^| <= sigma/2+gamma",
    "DLT-05 gamma <= gamma'",
    "Eq. 8 |s-s^| <= Delta_b (tokens)",
    "K.1 TV(s,s^) <= tanh(D/2), D = half range (token sets)",
    "K.1 TV(s,s^) <= tanh(Delta/2) (token sets)",
    "Lemma A.2 TV(s,s^) <= tanh(Delta) (token sets)",
    "K.2 Eq. 14 odds: alpha_T <= A(alpha^,D), D = half range",
    "K.2 Eq. 14 odds: alpha_T <= A(alpha^,Delta)",
    "Eq. 14 alpha_T <= e^{2Delta} alpha^",
    "K.3 sparse key term <= 2Vmax(A+(1-A)t)",
    "K.3 sparse key term, D = half range, V = max||v||",
    "Cor 4.2 sparse value term <= sum_S rho_b eta_b",
    "Lemma A.1 paper a'/a in [e^-2D, e^2D], D = Delta",
    "Lemma A.1 paper a'/a, D = max_T |s^-s|",
    "Lemma A.3 paper TV(a,a') <= alpha_T(e^2D-1), D = Delta",
    "Lemma A.3 paper, D = max_T |s^-s|",
    "Lemma A.3 (20)+(21) TV <= alpha_T(e^2D+e^D-2)/2, D = Delta",
    "Lemma A.3 (20)+(21), D = max_T |s^-s|",
    "K.1 paper TV(a,a') <= tanh(D'/2), D' = half range",
    "Thm 4.3 Eq. 7 paper key term <= 2Vmax TV(a,a')",
    "K.4 paper key term <= E_key [CERT-EK-04]",
    "Eq. 15 paper key term <= 2Vmax e^2D alpha^(e^2D-1)",
    "Eq. 12 alpha_T <= e^3D alpha~ (when delta1 <= D/2)",
    "Eq. 12 paper key term <= 2Vmax e^3D alpha~(e^2D-1) (same)",
    "Cor 4.2 paper value term <= sum_b rho'_b eta_b",
    "Cor 4.2 paper e^-2D p^_b <= rho'_b <= e^2D p^_b (blocks)",
    "K.5 contract, kvq_cert_step paper variant (steps)",
    "K.5 contract, kvq_cert_step sparse variant (steps)",
    "fast = exact bitwise (elements)"};
/* Short labels (report columns) and where the statement is stated. */
static const char *const stat_id[NSTAT] = {
    "K8-04", "DLT-05", "Eq.8", "K.1", "K.1-Delta", "A.2", "K.2", "K.2-Delta", "Eq.14", "K.3",
    "K.3-sharp", "C4.2-sp", "A.1", "A.1-T", "A.3", "A.3-T", "A.3(20,21)", "A.3(20,21)-T",
    "K.1-paper", "Eq.7", "K.4", "Eq.15", "Eq.12-tail", "Eq.12", "C4.2-paper", "C4.2-rho",
    "K.5-paper", "K.5-sparse", "diff"};
static const char *const stat_ref[NSTAT] = {
    "[CERT-K8-04], bounds §1", "[CERT-DLT-05], bounds §3a", "[CERT-DLT-03], bounds §3 (Eq. 8)",
    "bounds §4 kvq Lemma K.1", "bounds §4 kvq Lemma K.1", "bounds §4 (paper's Lemma A.2)",
    "bounds §4 kvq Lemma K.2 (Eq. 14)", "bounds §4 kvq Lemma K.2 (Eq. 14)",
    "bounds §4 (paper's Eq. 14)", "[CERT-EK-01], bounds §5 kvq Theorem K.3",
    "[CERT-EK-01], bounds §5 kvq Theorem K.3", "[CERT-EV-01], bounds §9 (Corollary 4.2)",
    "bounds §6a (paper's Lemma A.1)", "bounds §6a (paper's Lemma A.1)",
    "bounds §6a (paper's Lemma A.3)", "bounds §6a (paper's Lemma A.3)",
    "bounds §6a (paper's (20), (21))", "bounds §6a (paper's (20), (21))",
    "bounds §6a kvq Lemma K.1", "bounds §6a (paper's Theorem 4.3, Eq. 7)",
    "[CERT-EK-04], bounds §6a kvq Theorem K.4", "bounds §6a (paper's Eq. 15)",
    "bounds §6a (paper's Eq. 12)", "bounds §6a (paper's Eq. 12)",
    "[CERT-EV-01], bounds §9 (Corollary 4.2)", "[CERT-EV-03], bounds §9 (Lemma A.1, s' vs s^)",
    "[CERT-CON-01] [CERT-CON-02] [CERT-VAR-01..03], bounds §9 kvq Theorem K.5",
    "[CERT-CON-01] [CERT-CON-02] [CERT-VAR-01..03], bounds §9 kvq Theorem K.5",
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
    uint64_t sel_thinned;     /* cases whose full selection was thinned (T not empty) */
    uint64_t prom_random;     /* cases with a random promotion */
    uint64_t elems, tokens;
    uint64_t k804_filtered;   /* K8-04 elements decided by the binary64 filter */
    uint64_t rungs[2][5];     /* K.5 steps by variant (paper, sparse) and accepted rung */
    uint64_t eval_false_alarms; /* checker's CON-02 eval verdicts overruled exactly */
    uint64_t a3_logform;      /* K.2 comparisons decided by a3_by_decomposition */
    uint64_t a1_range;        /* paper A.1 comparisons decided by the range of s' - s */
    uint64_t eq14_by_odds;    /* Eq. 14 comparisons decided by K.2 (A <= e^{2D} alpha^) */
    uint64_t c42_by_tokens;   /* Cor 4.2 comparisons decided by the per-token bound */
    uint64_t e3_cond_cases;   /* cases with delta1 <= Delta/2 (Eq. 12 checked) */
    uint64_t paper_equal;     /* cases with a' = a exactly (T empty or s^ = s on T) */
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
    mpfr_t gl[NMAX], gu[NMAX];        /* paper variant: weights of s' (s on F, s^ on T) */
    mpfr_t cl[NMAX], cu[NMAX];        /* paper variant: (a'_t - a_t) / alpha_T */
    mpfr_t xv[NMAX * DMAX], dv[NMAX * DMAX]; /* v and v~ - v (sparse), exact (53 bits) */
    mpfr_t dvp[NMAX * DMAX];          /* v~ - v of the paper variant, exact (53 bits) */
    mpfr_t qv[DMAX];                  /* the query, exact (24 bits) */
} work;

static const char *g_self = "cert_campaign";
static double g_prof[8];
static int g_profile;
static int g_progress; /* kvq_progress_init's mode: --progress 1, --quiet -1, else 0 */
/* KVQ_CAMPAIGN_MUTANT: check a deliberately false statement instead, to show
 * that the campaign can fail (the run must exit 1):
 *   half_sigma      K8-04 with the paper's sigma/2 (gamma dropped; false, bounds §1)
 *   half_delta      Eq. 8 with Delta_b / 2
 *   ekey_paper      the sparse key term (K.3) against the paper's Eq. 15 term
 *                   (false for the sparse variant, bounds §6)
 *   eq14_no_factor  Eq. 14 without the factor e^{2 Delta} on alpha^, i.e. the
 *                   estimated tail mass alpha^ used for the true alpha_T in
 *                   Lemma A.3: alpha_T <= alpha^ (false)
 *   a1_half         the paper's Lemma A.1 (paper variant, D = max_T |s^ - s|)
 *                   with e^{+-D} for e^{+-2D} (false: Z'/Z moves too) */
enum { MUT_NONE, MUT_HALF_SIGMA, MUT_HALF_DELTA, MUT_EKEY_PAPER, MUT_EQ14_NO_FACTOR,
       MUT_A1_HALF };
static const char *const mut_name[] = {"", "half_sigma", "half_delta", "ekey_paper",
                                       "eq14_no_factor", "a1_half"};
static int g_mutant;
static uint8_t g_ones[NMAX];      /* all-ones token mask */

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
            " family=%s n=%u d=%u scale=%a (0x%08x) step rung %u variant %s delta1 %a\n",
            stmt, detail, cs->seed, cs->idx, fam_name[cs->fam], cs->n, cs->d,
            (double)cs->scale, kvq_f32_bits(cs->scale), cs->rec.rung,
            cs->prm.variant == KVQ_CERT_VARIANT_PAPER ? "paper" : "sparse", (double)cs->delta1);
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
    dp.variant = cs->prm.variant;
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
     * in Eq. 8, always comes from the exact path. */
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

    /* the fast step: selection, output and certificate; the variant
     * alternates between consecutive K.5 cases (CAMPAIGN_T44_EVERY apart), so
     * both contracts are checked on the same number of steps [CERT-VAR-01] */
    cs->prm.variant = (cs->idx / CAMPAIGN_T44_EVERY) % 2u == 0u ? KVQ_CERT_VARIANT_PAPER
                                                                : KVQ_CERT_VARIANT_SPARSE;
    ch.k = cs->k, ch.v = cs->v, ch.kcodes = cs->kc, ch.sigma = cs->sg, ch.z = cs->zz;
    ch.vcodes = cs->vc, ch.vscale = cs->vs, ch.vzero = cs->vz, ch.eta = cs->etaf, ch.nu = cs->nuf;
    s = kvq_cert_step(cs->out, cs->sel, cs->prom, cs->logmass, &cs->rec, &cs->decl, &cs->delta1,
                      cs->q, cs->scale, &ch, &cs->prm, &sh);
    if (s != KVQ_OK) fail(cs, "setup", "kvq_cert_step: %s", kvq_status_str(s));
}

/* ---- K8-04, DLT-05, Eq. 8: exact, no enclosure needed --------------------- */

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
            fail(cs, "Eq. 8", "token %u: |s - s^| = %a > Delta_b = %a", t,
                 fabs(mpfr_get_d(w->e[t], MPFR_RNDA)), (double)cs->dlt[t / 16u]);
        st->checks[S_EQ8][cs->fam]++;
        if (cs->dlt[t / 16u] > 0.0f) {
            double rr = fabs(mpfr_get_d(w->e[t], MPFR_RNDA)) / (double)cs->dlt[t / 16u];
            if (rr > st->max_ratio[S_EQ8]) st->max_ratio[S_EQ8] = rr;
        }
    }
    st->tokens += cs->n;
}

/* ---- enclosure-based checks ---------------------------------------------- */

/* Outcome of one comparison: 1 holds, 0 violated, -1 undecided, 2 holds by
 * algebra (an exact equality, which no enclosure separates). */
enum {
    C_K1_ALL, C_K1_S, C_K1D_ALL, C_K1D_S, C_A2_ALL, C_A2_S, C_K2, C_K2D, C_EQ14, C_K3, C_K3S,
    C_C42S, C_A1P, C_A1PT, C_A3P, C_A3PT, C_A3PS, C_A3PST, C_K1P, C_EQ7P, C_K4, C_EQ15, C_E3T,
    C_EQ12, C_C42P, C_C42PM, NCMP
};
typedef struct verdicts {
    int r[NCMP];
    int cnt[NCMP];               /* checks the comparison stands for; 0: not applicable */
    int fb[NCMP];                /* 1: decided by a fallback argument (counted) */
    double err[NCMP], bnd[NCMP]; /* upper estimate of error, lower estimate of bound */
    double ratio[NCMP];          /* error / bound upper estimate when computed in MPFR, else NAN */
    int paper_equal;             /* a' = a exactly (T empty or e = 0 on T) */
    int e3_cond;                 /* delta1 <= Delta / 2: Eq. 12 applies */
} verdicts;

static int decide(mpfr_srcptr lhs_hi, mpfr_srcptr lhs_lo, mpfr_srcptr rhs_lo, mpfr_srcptr rhs_hi)
{
    if (mpfr_cmp(lhs_hi, rhs_lo) <= 0) return 1;
    if (mpfr_cmp(lhs_lo, rhs_hi) > 0) return 0;
    return -1;
}

/* exp(x_t - m) enclosed into [lo, hi], x_t = s_t, or s^_t = s_t + e_t when
 * est; m must not be w->a.  When the argument is exact (ternary 0), one exp
 * rounded to nearest and the ternary value give both ends; otherwise the
 * argument is enclosed by directed roundings and exp (increasing) rounded
 * outward. */
static void weight1(mpfr_t lo, mpfr_t hi, work *w, uint32_t t, int est, mpfr_srcptr m)
{
    int ix = mpfr_set(w->a, w->s[t], MPFR_RNDN);
    if (est) ix |= mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN);
    ix |= mpfr_sub(w->a, w->a, m, MPFR_RNDN);
    if (ix == 0) {
        int tr = mpfr_exp(lo, w->a, MPFR_RNDN);
        mpfr_set(hi, lo, MPFR_RNDN);
        if (tr > 0) mpfr_nextbelow(lo);           /* result above the true value */
        else if (tr < 0) mpfr_nextabove(hi);
        return;
    }
    for (int up = 0; up < 2; up++) {
        mpfr_rnd_t rd = up ? MPFR_RNDU : MPFR_RNDD;
        mpfr_set(w->a, w->s[t], rd);
        if (est) mpfr_add(w->a, w->a, w->e[t], rd);
        mpfr_sub(w->a, w->a, m, rd);
        mpfr_exp(up ? hi : lo, w->a, rd);
    }
}

/* Weights exp(x_t - m) of the tokens with in[t] (0 elsewhere), m the greatest
 * x_t among them, x_t = s_t, or s^_t = s_t + e_t where est[t] (est NULL: no
 * token); enclosed at the work precision (m taken per set: a common shift
 * cancels in every softmax, and the set's own maximum keeps its greatest
 * weight at exactly 1, so no sum of weights underflows whatever the score
 * range). */
static void weights(mpfr_t *wl, mpfr_t *wu, work *w, const uint8_t *in, uint32_t n,
                    const uint8_t *est, mpfr_t mout)
{
    int first = 1;
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        mpfr_set(w->a, w->s[t], MPFR_RNDN);
        if (est && est[t]) mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN); /* s^_t (any m will do) */
        if (first || mpfr_cmp(w->a, w->c) > 0) mpfr_set(w->c, w->a, MPFR_RNDN), first = 0;
    }
    if (mout != NULL) mpfr_set(mout, w->c, MPFR_RNDN);
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) {
            mpfr_set_zero(wl[t], 1), mpfr_set_zero(wu[t], 1);
            continue;
        }
        weight1(wl[t], wu[t], w, t, est && est[t], w->c);
    }
}

/* Does some token of in[] have x_t == m exactly (x_t = s_t, or s^_t where est)? */
static int set_max_is(work *w, const uint8_t *in, uint32_t n, const uint8_t *est, mpfr_t m)
{
    for (uint32_t t = 0; t < n; t++) {
        if (!in[t]) continue;
        mpfr_set(w->a, w->s[t], MPFR_RNDN);
        if (est && est[t]) mpfr_add(w->a, w->a, w->e[t], MPFR_RNDN);
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

/* K.2 (Eq. 14, odds form) when no enclosure can decide it (a tail whose weights
 * lie thousands of nats below the set's maximum, so that the margin is below any
 * working precision).  With e = s^ - s, e_min and e_max over T and S,
 *   ln(e^{2D} W^_T W_S) - ln(W_T W^_S)
 *     = [2D - (e_max - e_min)] + ln E_T[e^{e - e_min}] - ln E_S[e^{e - e_max}],
 * E the means under the exact-score weights of each set (bounds §10): the last
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

/* [rl, rh] = [pl, ph] * [cl, ch] for pl >= 0, outward (rl, rh alias no
 * argument). */
static void pos_mul(mpfr_t rl, mpfr_t rh, mpfr_srcptr pl, mpfr_srcptr ph, mpfr_srcptr cl,
                    mpfr_srcptr ch)
{
    mpfr_mul(rl, mpfr_sgn(cl) >= 0 ? pl : ph, cl, MPFR_RNDD);
    mpfr_mul(rh, mpfr_sgn(ch) >= 0 ? ph : pl, ch, MPFR_RNDU);
}

/* [rl, rh] = [al, ah] / [bl, bh] for bl > 0, outward (rl, rh alias no
 * argument). */
static void pos_div(mpfr_t rl, mpfr_t rh, mpfr_srcptr al, mpfr_srcptr ah, mpfr_srcptr bl,
                    mpfr_srcptr bh)
{
    mpfr_div(rl, al, mpfr_sgn(al) >= 0 ? bh : bl, MPFR_RNDD);
    mpfr_div(rh, ah, mpfr_sgn(ah) >= 0 ? bl : bh, MPFR_RNDU);
}

/* vd->ratio[ci] = RU(num / den) in binary64 when den > 0 (report only). */
static void set_ratio(verdicts *vd, int ci, mpfr_srcptr num, mpfr_srcptr den, mpfr_t tmp)
{
    if (mpfr_sgn(den) <= 0) return;
    mpfr_div(tmp, num, den, MPFR_RNDU);
    vd->ratio[ci] = mpfr_get_d(tmp, MPFR_RNDU);
}

/* The paper variant [CERT-VAR-01] (bounds §6a, §9), every comparison at
 * precision prec.  a = softmax of the exact scores s over all tokens
 * (weights w_t = exp(s_t - m) in w->wl/wu, m = m_in the greatest s_t,
 * computed by enclosed()); a' = softmax of s' = s + e' (e' = e = s^ - s on T
 * = in_t, the unselected full blocks; e' = 0 on F, the selected and residual
 * blocks).  Relative to a reference token r of greatest weight (w_r = 1
 * exactly), with f_t = e^{e'_t - e'_r} - 1 (expm1) and
 *   delta = sum_t a_t f_t  (so Z'/Z = e^{e'_r} (1 + delta), 1 + delta >= a_r
 *           >= 1/n),
 *   a'_t / a_t = e^{e'_t - e'_r} / (1 + delta),
 *   a'_t - a_t = a_t (f_t - delta) / (1 + delta),
 * every difference a'_t - a_t is enclosed with relative precision whether the
 * tail mass alpha_T or the mass of F is tiny (a token with e'_t = e'_r has
 * f_t = 0 exactly, and delta sums the other tokens only).  al, ah: alpha^_T
 * (estimated scores over all tokens), aTl, aTh: alpha_T, both enclosed by
 * enclosed() (0 when T is empty). */
static void paper_enclosed(verdicts *vd, ccase *cs, work *w, int prec, const uint8_t *in_t,
                           const uint8_t *prom, const double *x64, const double *dvp64,
                           mpfr_srcptr m_in, mpfr_srcptr al, mpfr_srcptr ah, mpfr_srcptr aTl,
                           mpfr_srcptr aTh)
{
    uint32_t n = cs->n, d = cs->d, nb = cs->nb, nq = cs->nq, r = 0;
    int zt = 1, tempty = 1, ezero = 1, cond, any = 0;
    mpfr_t m, emx, emn, dT, e0;                   /* exact reals (CAMPAIGN_XP) */
    mpfr_t dl, hrl, hrh, rg, nrg, df;             /* KVQ_XPREC: exact or directed */
    mpfr_t Wl, Wh, nl, nh, dll, dlh, opl, oph, pl, ph, cl, ch, tl, th, ql, qh, u1, u2, u3, u4;
    mpfr_t bl, bh, b2l, b2h, vmx, GL, GH, HL, HH;
    /* Eq. 12's condition delta1 <= Delta / 2: exact in binary64 */
    cond = isfinite(cs->delta1) && 2.0 * (double)cs->delta1 <= (double)cs->delta;
    vd->e3_cond = cond;
    if (!cond) vd->cnt[C_E3T] = vd->cnt[C_EQ12] = 0;
    vd->cnt[C_C42PM] = (int)nb;                   /* one comparison per block */
    mpfr_inits2(CAMPAIGN_XP, m, emx, emn, dT, e0, (mpfr_ptr)0);
    mpfr_inits2(KVQ_XPREC, dl, hrl, hrh, rg, nrg, df, (mpfr_ptr)0);
    mpfr_inits2(prec, Wl, Wh, nl, nh, dll, dlh, opl, oph, pl, ph, cl, ch, tl, th, ql, qh, u1, u2,
                u3, u4, (mpfr_ptr)0);
    mpfr_inits2(prec, bl, bh, b2l, b2h, vmx, GL, GH, HL, HH, (mpfr_ptr)0);
    for (uint32_t t = 0; t < n; t++) {
        mpfr_set_prec(w->gl[t], prec), mpfr_set_prec(w->gu[t], prec);
        mpfr_set_prec(w->cl[t], prec), mpfr_set_prec(w->cu[t], prec);
    }
    mpfr_set(m, m_in, MPFR_RNDN);                 /* exact copy */
    mpfr_set_flt(dl, cs->delta, MPFR_RNDN);       /* Delta, exact */
    mpfr_set_flt(vmx, cs->vmax, MPFR_RNDN);       /* Vmax, exact */
    /* e' = e on T, 0 on F (F is never empty: it holds the residual block or
     * a selected one): its extremes, D_T = max_T |e| and the half range D'
     * of e' (ends directed) */
    mpfr_set_zero(emx, 1), mpfr_set_zero(emn, 1);
    for (uint32_t t = 0; t < n; t++) {
        if (!mpfr_zero_p(w->e[t])) ezero = 0;
        if (!in_t[t]) continue;
        tempty = 0;
        if (!mpfr_zero_p(w->e[t])) zt = 0;
        if (mpfr_cmp(w->e[t], emx) > 0) mpfr_set(emx, w->e[t], MPFR_RNDN);
        if (mpfr_cmp(w->e[t], emn) < 0) mpfr_set(emn, w->e[t], MPFR_RNDN);
    }
    mpfr_neg(dT, emn, MPFR_RNDN);
    if (mpfr_cmp(emx, dT) > 0) mpfr_set(dT, emx, MPFR_RNDN);
    mpfr_sub(hrl, emx, emn, MPFR_RNDD), mpfr_div_2ui(hrl, hrl, 1, MPFR_RNDD);
    mpfr_sub(hrh, emx, emn, MPFR_RNDU), mpfr_div_2ui(hrh, hrh, 1, MPFR_RNDU);
    vd->paper_equal = zt;

    /* weights of s' at the same shift m: w on F, exp(s + e - m) on T */
    for (uint32_t t = 0; t < n; t++) {
        if (in_t[t]) weight1(w->gl[t], w->gu[t], w, t, 1, m);
        else mpfr_set(w->gl[t], w->wl[t], MPFR_RNDD), mpfr_set(w->gu[t], w->wu[t], MPFR_RNDU);
    }

    if (zt) {
        /* T empty, or s^ = s on T: s' = s, a' = a exactly (key term 0, TV 0,
         * every ratio a'/a 1); with T empty also alpha_T = 0 */
        static const int eq[] = {C_A1P, C_A1PT, C_A3P, C_A3PT, C_A3PS, C_A3PST, C_K1P, C_EQ7P,
                                 C_K4, C_EQ15, C_EQ12};
        for (size_t i = 0; i < sizeof eq / sizeof eq[0]; i++) vd->r[eq[i]] = 2;
        if (tempty) vd->r[C_E3T] = 2;
    } else {
        /* the reference token r: the first with s_r = m (weight exactly 1) */
        for (uint32_t t = 0; t < n; t++)
            if (mpfr_equal_p(w->s[t], m)) {
                r = t;
                break;
            }
        if (in_t[r]) mpfr_set(e0, w->e[r], MPFR_RNDN);
        else mpfr_set_zero(e0, 1);
        /* f_t = expm1(e'_t - e'_r) into w->cl/cu (0 exactly where e'_t = e'_r);
         * W = sum w; delta = sum w f / W */
        mpfr_set_zero(Wl, 1), mpfr_set_zero(Wh, 1), mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
        for (uint32_t t = 0; t < n; t++) {
            mpfr_add(Wl, Wl, w->wl[t], MPFR_RNDD), mpfr_add(Wh, Wh, w->wu[t], MPFR_RNDU);
            /* e'_t - e'_r, e'_t = 0 on F; directed ends */
            if (in_t[t]) mpfr_sub(df, w->e[t], e0, MPFR_RNDD);
            else mpfr_neg(df, e0, MPFR_RNDD);
            mpfr_expm1(w->cl[t], df, MPFR_RNDD);
            if (in_t[t]) mpfr_sub(df, w->e[t], e0, MPFR_RNDU);
            else mpfr_neg(df, e0, MPFR_RNDU);
            mpfr_expm1(w->cu[t], df, MPFR_RNDU);
            pos_mul(u1, u2, w->wl[t], w->wu[t], w->cl[t], w->cu[t]);
            mpfr_add(nl, nl, u1, MPFR_RNDD), mpfr_add(nh, nh, u2, MPFR_RNDU);
        }
        pos_div(dll, dlh, nl, nh, Wl, Wh);                           /* delta */
        mpfr_add_ui(opl, dll, 1, MPFR_RNDD), mpfr_add_ui(oph, dlh, 1, MPFR_RNDU); /* 1 + delta */
        if (mpfr_sgn(opl) <= 0) mpfr_set_ui(opl, 1, MPFR_RNDD), mpfr_div_ui(opl, opl, n, MPFR_RNDD);
        /* per token a'_t - a_t = (w_t / W) (f_t - delta) / (1 + delta), into
         * w->cl/cu; tau = sum |a'_t - a_t| = 2 TV(a, a') */
        mpfr_set_zero(tl, 1), mpfr_set_zero(th, 1);
        for (uint32_t t = 0; t < n; t++) {
            mpfr_sub(u1, w->cl[t], dlh, MPFR_RNDD), mpfr_sub(u2, w->cu[t], dll, MPFR_RNDU);
            pos_div(cl, ch, u1, u2, opl, oph);                       /* a'_t / a_t - 1 */
            mpfr_div(pl, w->wl[t], Wh, MPFR_RNDD), mpfr_div(ph, w->wu[t], Wl, MPFR_RNDU); /* a_t */
            pos_mul(w->cl[t], w->cu[t], pl, ph, cl, ch);
            /* |a'_t - a_t| enclosed: lower end 0 when the enclosure holds 0 */
            if (mpfr_sgn(w->cl[t]) > 0) mpfr_add(tl, tl, w->cl[t], MPFR_RNDD);
            else if (mpfr_sgn(w->cu[t]) < 0) mpfr_sub(tl, tl, w->cu[t], MPFR_RNDD);
            if (mpfr_cmpabs(w->cl[t], w->cu[t]) > 0) mpfr_sub(th, th, w->cl[t], MPFR_RNDU);
            else mpfr_add(th, th, w->cu[t], MPFR_RNDU);
        }
        /* the key term ||sum_t (a'_t - a_t) v_t|| (v exact binary64) in [ql, qh] */
        mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
        for (uint32_t c = 0; c < d; c++) {
            mpfr_set_zero(u1, 1), mpfr_set_zero(u2, 1);
            for (uint32_t t = 0; t < n; t++) {
                double v = x64[(size_t)t * d + c];
                if (v == 0.0) continue;
                mpfr_mul_d(u3, v > 0.0 ? w->cl[t] : w->cu[t], v, MPFR_RNDD);
                mpfr_add(u1, u1, u3, MPFR_RNDD);
                mpfr_mul_d(u3, v > 0.0 ? w->cu[t] : w->cl[t], v, MPFR_RNDU);
                mpfr_add(u2, u2, u3, MPFR_RNDU);
            }
            sq_acc(nl, nh, u1, u2, u3);
        }
        mpfr_sqrt(ql, nl, MPFR_RNDD), mpfr_sqrt(qh, nh, MPFR_RNDU);
        mpfr_div_2ui(tl, tl, 1, MPFR_RNDD), mpfr_div_2ui(th, th, 1, MPFR_RNDU); /* TV(a, a') */

        /* ---- the paper's Lemma A.1: ln(a'_t / a_t) = (e'_t - e'_r) -
         * log1p(delta) lies in [emn - e'_r, emx - e'_r] - log1p(delta), both
         * ends attained (e' takes the values emn and emx) ---- */
        mpfr_log1p(b2l, dll, MPFR_RNDD), mpfr_log1p(b2h, dlh, MPFR_RNDU);
        mpfr_sub(df, emx, e0, MPFR_RNDU), mpfr_sub(u2, df, b2l, MPFR_RNDU);  /* max ln ratio */
        mpfr_sub(df, emx, e0, MPFR_RNDD), mpfr_sub(u1, df, b2h, MPFR_RNDD);
        mpfr_sub(df, emn, e0, MPFR_RNDU), mpfr_sub(u4, df, b2l, MPFR_RNDU);  /* min ln ratio */
        mpfr_sub(df, emn, e0, MPFR_RNDD), mpfr_sub(u3, df, b2h, MPFR_RNDD);
        for (int k = 0; k < 2; k++) {
            int ci = k ? C_A1PT : C_A1P;
            mpfr_mul_2ui(rg, k ? dT : dl, 1, MPFR_RNDN);          /* 2D, exact */
            if (k == 1 && g_mutant == MUT_A1_HALF) mpfr_div_2ui(rg, rg, 1, MPFR_RNDN); /* D */
            mpfr_neg(nrg, rg, MPFR_RNDN);
            if (mpfr_cmp(u2, rg) <= 0 && mpfr_cmp(u3, nrg) >= 0) vd->r[ci] = 1;
            else if (mpfr_cmp(u1, rg) > 0 || mpfr_cmp(u4, nrg) < 0) vd->r[ci] = 0;
            else vd->r[ci] = -1;
            /* |ln ratio| <= max(u2, -u3): error, against 2D */
            mpfr_neg(bl, u3, MPFR_RNDU);
            if (mpfr_cmp(u2, bl) > 0) mpfr_set(bl, u2, MPFR_RNDU);
            vd->err[ci] = mpfr_get_d(bl, MPFR_RNDU), vd->bnd[ci] = mpfr_get_d(rg, MPFR_RNDD);
            mpfr_set(bh, rg, MPFR_RNDD);
            set_ratio(vd, ci, bl, bh, b2l);
            if (vd->r[ci] >= 0 || prec < CAMPAIGN_PREC_HI) continue;
            /* open at the retry precision: ln(Z'/Z) = ln sum_t a_t e^{e'_t} lies
             * in [emn, emx], so every ln(a'_t / a_t) = e'_t - ln(Z'/Z) lies in
             * [emn - emx, emx - emn]; the lemma holds when that range is at most
             * 2D (bounds §4) */
            mpfr_sub(df, emx, emn, MPFR_RNDU);
            if (mpfr_cmp(df, rg) <= 0) vd->r[ci] = 1, vd->fb[ci] = 1;
        }

        /* ---- the paper's Lemma A.3: TV(a, a') <= alpha_T (e^{2D} - 1), and
         * from (20) + (21): <= alpha_T (e^{2D} + e^D - 2) / 2 ---- */
        for (int k = 0; k < 2; k++) {
            int c1 = k ? C_A3PT : C_A3P, c2 = k ? C_A3PST : C_A3PS;
            mpfr_mul_2ui(rg, k ? dT : dl, 1, MPFR_RNDN);          /* 2D, exact */
            mpfr_expm1(bl, rg, MPFR_RNDD), mpfr_expm1(bh, rg, MPFR_RNDU);
            mpfr_expm1(u1, k ? dT : dl, MPFR_RNDD), mpfr_expm1(u2, k ? dT : dl, MPFR_RNDU);
            mpfr_add(u1, u1, bl, MPFR_RNDD), mpfr_div_2ui(u1, u1, 1, MPFR_RNDD);
            mpfr_add(u2, u2, bh, MPFR_RNDU), mpfr_div_2ui(u2, u2, 1, MPFR_RNDU);
            mpfr_mul(bl, bl, aTl, MPFR_RNDD), mpfr_mul(bh, bh, aTh, MPFR_RNDU);
            mpfr_mul(u1, u1, aTl, MPFR_RNDD), mpfr_mul(u2, u2, aTh, MPFR_RNDU);
            vd->r[c1] = decide(th, tl, bl, bh);
            vd->err[c1] = mpfr_get_d(th, MPFR_RNDU), vd->bnd[c1] = mpfr_get_d(bl, MPFR_RNDD);
            set_ratio(vd, c1, th, bl, u3);
            vd->r[c2] = decide(th, tl, u1, u2);
            vd->err[c2] = mpfr_get_d(th, MPFR_RNDU), vd->bnd[c2] = mpfr_get_d(u1, MPFR_RNDD);
            set_ratio(vd, c2, th, u1, u3);
        }

        /* ---- K.1 on a': TV(a, a') <= tanh(D'/2), D' the half range of e' ---- */
        mpfr_div_2ui(u1, hrl, 1, MPFR_RNDD), mpfr_tanh(bl, u1, MPFR_RNDD);
        mpfr_div_2ui(u2, hrh, 1, MPFR_RNDU), mpfr_tanh(bh, u2, MPFR_RNDU);
        vd->r[C_K1P] = decide(th, tl, bl, bh);
        vd->err[C_K1P] = mpfr_get_d(th, MPFR_RNDU), vd->bnd[C_K1P] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_K1P, th, bl, u1);

        /* ---- Theorem 4.3, Eq. 7: key term <= 2 Vmax TV(a, a') ---- */
        mpfr_mul(bl, vmx, tl, MPFR_RNDD), mpfr_mul(bh, vmx, th, MPFR_RNDU);
        mpfr_mul_2ui(bl, bl, 1, MPFR_RNDD), mpfr_mul_2ui(bh, bh, 1, MPFR_RNDU);
        vd->r[C_EQ7P] = decide(qh, ql, bl, bh);
        vd->err[C_EQ7P] = mpfr_get_d(qh, MPFR_RNDU), vd->bnd[C_EQ7P] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_EQ7P, qh, bl, u1);

        /* ---- K.4: key term <= 2 Vmax min(tanh(Delta/2), A (e^{2 Delta} +
         * e^{Delta} - 2) / 2) [CERT-EK-04] (increasing in alpha^) ---- */
        kvq_exact_cert_ekey_gated(bl, dl, al, vmx, MPFR_RNDD);
        kvq_exact_cert_ekey_gated(bh, dl, ah, vmx, MPFR_RNDU);
        vd->r[C_K4] = decide(qh, ql, bl, bh);
        vd->err[C_K4] = mpfr_get_d(qh, MPFR_RNDU), vd->bnd[C_K4] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_K4, qh, bl, u1);

        /* ---- Eq. 15: key term <= 2 Vmax e^{2 Delta} alpha^ (e^{2 Delta} - 1) ---- */
        kvq_exact_cert_ekey_paper(bl, dl, al, vmx, 2u, MPFR_RNDD);
        kvq_exact_cert_ekey_paper(bh, dl, ah, vmx, 2u, MPFR_RNDU);
        vd->r[C_EQ15] = decide(qh, ql, bl, bh);
        vd->err[C_EQ15] = mpfr_get_d(qh, MPFR_RNDU), vd->bnd[C_EQ15] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_EQ15, qh, bl, u1);
    }

    /* ---- Eq. 12 under its condition delta1 <= Delta / 2: alpha~ = the tail
     * mass of the step's log-masses L~_b (finite: delta1 is) over the checked
     * T; alpha_T <= e^{3 Delta} alpha~, key term <= 2 Vmax e^{3 Delta}
     * alpha~ (e^{2 Delta} - 1) ---- */
    if (cond && !tempty) {
        float lmx = -INFINITY;
        for (uint32_t b = 0; b < nb; b++)
            if (cs->logmass[b] > lmx) lmx = cs->logmass[b];
        mpfr_set_zero(GL, 1), mpfr_set_zero(GH, 1), mpfr_set_zero(HL, 1), mpfr_set_zero(HH, 1);
        for (uint32_t b = 0; b < nb; b++) {
            mpfr_set_flt(u1, cs->logmass[b], MPFR_RNDN);
            mpfr_set_flt(u2, lmx, MPFR_RNDN);
            mpfr_sub(u3, u1, u2, MPFR_RNDD), mpfr_exp(u3, u3, MPFR_RNDD);
            mpfr_sub(u4, u1, u2, MPFR_RNDU), mpfr_exp(u4, u4, MPFR_RNDU);
            mpfr_add(HL, HL, u3, MPFR_RNDD), mpfr_add(HH, HH, u4, MPFR_RNDU);   /* all blocks */
            if (b < nq && in_t[16u * b])
                mpfr_add(GL, GL, u3, MPFR_RNDD), mpfr_add(GH, GH, u4, MPFR_RNDU); /* T */
        }
        mpfr_div(pl, GL, HH, MPFR_RNDD), mpfr_div(ph, GH, HL, MPFR_RNDU);        /* alpha~ */
        mpfr_mul_ui(rg, dl, 3, MPFR_RNDN);                      /* 3 Delta, exact */
        mpfr_exp(bl, rg, MPFR_RNDD), mpfr_exp(bh, rg, MPFR_RNDU);
        mpfr_mul(bl, bl, pl, MPFR_RNDD), mpfr_mul(bh, bh, ph, MPFR_RNDU);
        vd->r[C_E3T] = decide(aTh, aTl, bl, bh);
        vd->err[C_E3T] = mpfr_get_d(aTh, MPFR_RNDU), vd->bnd[C_E3T] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_E3T, aTh, bl, u1);
        if (!zt) {
            kvq_exact_cert_ekey_paper(bl, dl, pl, vmx, 3u, MPFR_RNDD);
            kvq_exact_cert_ekey_paper(bh, dl, ph, vmx, 3u, MPFR_RNDU);
            vd->r[C_EQ12] = decide(qh, ql, bl, bh);
            vd->err[C_EQ12] = mpfr_get_d(qh, MPFR_RNDU);
            vd->bnd[C_EQ12] = mpfr_get_d(bl, MPFR_RNDD);
            set_ratio(vd, C_EQ12, qh, bl, u1);
        }
    }

    /* ---- Corollary 4.2, paper variant: ||sum_t a'_t (v~_t - v_t)|| <=
     * sum_b rho'_b eta'_b over every block, rho'_b the a'-mass of b ---- */
    mpfr_set_zero(GL, 1), mpfr_set_zero(GH, 1);
    for (uint32_t t = 0; t < n; t++)
        mpfr_add(GL, GL, w->gl[t], MPFR_RNDD), mpfr_add(GH, GH, w->gu[t], MPFR_RNDU);
    for (uint32_t e = 0; e < n * d && !any; e++) any = dvp64[e] != 0.0;
    if (!any) {
        vd->r[C_C42P] = 2;                        /* v~ = v everywhere: value term 0 */
    } else {
        mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
        for (uint32_t c = 0; c < d; c++) {
            wmean(u1, u2, w, w->gl, w->gu, g_ones, n, w->dvp + c, d);
            sq_acc(nl, nh, u1, u2, u3);
        }
        mpfr_sqrt(tl, nl, MPFR_RNDD), mpfr_sqrt(th, nh, MPFR_RNDU);
        mpfr_set_zero(bl, 1), mpfr_set_zero(bh, 1);
        for (uint32_t b = 0; b < nq; b++) {
            if (prom[b] || cs->eta[b] == 0.0f) continue;
            mpfr_set_zero(u1, 1), mpfr_set_zero(u2, 1);
            for (uint32_t i = 16u * b; i < 16u * b + 16u; i++)
                mpfr_add(u1, u1, w->gl[i], MPFR_RNDD), mpfr_add(u2, u2, w->gu[i], MPFR_RNDU);
            mpfr_div(u1, u1, GH, MPFR_RNDD), mpfr_div(u2, u2, GL, MPFR_RNDU); /* rho'_b */
            mpfr_mul_d(u1, u1, (double)cs->eta[b], MPFR_RNDD);
            mpfr_mul_d(u2, u2, (double)cs->eta[b], MPFR_RNDU);
            mpfr_add(bl, bl, u1, MPFR_RNDD), mpfr_add(bh, bh, u2, MPFR_RNDU);
        }
        vd->r[C_C42P] = decide(th, tl, bl, bh);
        vd->err[C_C42P] = mpfr_get_d(th, MPFR_RNDU), vd->bnd[C_C42P] = mpfr_get_d(bl, MPFR_RNDD);
        set_ratio(vd, C_C42P, th, bl, u1);
    }

    /* ---- e^{-2 Delta} p^_b <= rho'_b <= e^{2 Delta} p^_b for every block
     * [CERT-EV-03] (the paper's Lemma A.1 for s' against s^, which differ by
     * e on F and not at all on T), p^_b the Phase-1 estimated mass (weights
     * w->hl/hu, estimated scores); the ratio reported is the larger of
     * rho'_b / (e^{2D} p^_b) and p^_b / (e^{2D} rho'_b) ---- */
    if (ezero) {
        vd->r[C_C42PM] = 2;                       /* s' = s^ = s: rho'_b = p^_b */
    } else {
        int rr = 1;
        double worst = -1.0;
        mpfr_set_zero(HL, 1), mpfr_set_zero(HH, 1);
        for (uint32_t t = 0; t < n; t++)
            mpfr_add(HL, HL, w->hl[t], MPFR_RNDD), mpfr_add(HH, HH, w->hu[t], MPFR_RNDU);
        mpfr_mul_2ui(rg, dl, 1, MPFR_RNDN);
        mpfr_exp(b2l, rg, MPFR_RNDD), mpfr_exp(b2h, rg, MPFR_RNDU);
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t hi_t = 16u * b + 16u < n ? 16u * b + 16u : n;
            mpfr_set_zero(u1, 1), mpfr_set_zero(u2, 1), mpfr_set_zero(u3, 1), mpfr_set_zero(u4, 1);
            for (uint32_t i = 16u * b; i < hi_t; i++) {
                mpfr_add(u1, u1, w->gl[i], MPFR_RNDD), mpfr_add(u2, u2, w->gu[i], MPFR_RNDU);
                mpfr_add(u3, u3, w->hl[i], MPFR_RNDD), mpfr_add(u4, u4, w->hu[i], MPFR_RNDU);
            }
            mpfr_div(pl, u1, GH, MPFR_RNDD), mpfr_div(ph, u2, GL, MPFR_RNDU);   /* rho'_b */
            mpfr_div(cl, u3, HH, MPFR_RNDD), mpfr_div(ch, u4, HL, MPFR_RNDU);   /* p^_b */
            for (int side = 0; side < 2; side++) {
                /* side 0: rho'_b <= e^{2D} p^_b; side 1: p^_b <= e^{2D} rho'_b */
                int r1;
                mpfr_srcptr xl_ = side ? cl : pl, xh_ = side ? ch : ph;
                mpfr_mul(u1, side ? pl : cl, b2l, MPFR_RNDD);
                mpfr_mul(u2, side ? ph : ch, b2h, MPFR_RNDU);
                r1 = decide(xh_, xl_, u1, u2);
                if (r1 == 0) rr = 0;
                else if (r1 < 0 && rr != 0) rr = -1;
                if (mpfr_sgn(u1) > 0) {
                    mpfr_div(u3, xh_, u1, MPFR_RNDU);
                    if (mpfr_get_d(u3, MPFR_RNDU) > worst || r1 <= 0) {
                        worst = mpfr_get_d(u3, MPFR_RNDU);
                        vd->err[C_C42PM] = mpfr_get_d(xh_, MPFR_RNDU);
                        vd->bnd[C_C42PM] = mpfr_get_d(u1, MPFR_RNDD);
                        vd->ratio[C_C42PM] = worst;
                    }
                }
            }
        }
        vd->r[C_C42PM] = rr;
    }
    mpfr_clears(m, emx, emn, dT, e0, dl, hrl, hrh, rg, nrg, df, (mpfr_ptr)0);
    mpfr_clears(Wl, Wh, nl, nh, dll, dlh, opl, oph, pl, ph, cl, ch, tl, th, ql, qh, u1, u2, u3, u4,
                (mpfr_ptr)0);
    mpfr_clears(bl, bh, b2l, b2h, vmx, GL, GH, HL, HH, (mpfr_ptr)0);
}

/* All enclosure checks of one case at precision prec.  x64: the original
 * values, dv64: v~ - v of the sparse variant (0 outside the non-promoted full
 * blocks of S), dvp64: that of the paper variant (0 outside the non-promoted
 * full blocks), all exact binary64 [n][d]. */
static void enclosed(verdicts *vd, ccase *cs, work *w, int prec, const uint8_t *in_all,
                     const uint8_t *in_s, const uint8_t *prom, const double *x64,
                     const double *dv64, const double *dvp64)
{
    mpfr_t *P = w->p;
    uint32_t n = cs->n, d = cs->d;
    uint8_t in_t[NMAX];
    int tempty = 1, eq_all, eq_s;
    mpfr_t lo, hi, dl, al, ah, hr, hs, ml, mh, nl, nh, tmp, aTl, aTh, e2l, e2h;
    mpfr_t *msl = w->wl, *msu = w->wu, *mtl = w->hl, *mtu = w->hu;
    for (uint32_t t = 0; t < n; t++) {
        mpfr_set_prec(w->wl[t], prec), mpfr_set_prec(w->wu[t], prec);
        mpfr_set_prec(w->hl[t], prec), mpfr_set_prec(w->hu[t], prec);
        mpfr_set_prec(w->sl[t], prec), mpfr_set_prec(w->su[t], prec);
        mpfr_set_prec(w->tl[t], prec), mpfr_set_prec(w->tu[t], prec);
    }
    for (int i = 0; i < 16; i++) mpfr_set_prec(P[i], prec);
    mpfr_inits2(prec, lo, hi, al, ah, ml, mh, nl, nh, tmp, aTl, aTh, e2l, e2h, (mpfr_ptr)0);
    mpfr_inits2(KVQ_XPREC, dl, hr, hs, (mpfr_ptr)0);
    for (int i = 0; i < NCMP; i++) vd->r[i] = 1, vd->err[i] = 0.0, vd->bnd[i] = 0.0;
    for (int i = 0; i < NCMP; i++) vd->cnt[i] = 1, vd->fb[i] = 0, vd->ratio[i] = NAN;
    for (uint32_t t = 0; t < n; t++) in_t[t] = in_s[t] ? 0 : 1, tempty &= in_s[t];

    mpfr_set_flt(dl, cs->delta, MPFR_RNDN);       /* Delta, exact */
    eq_all = equal_shift(hr, w, in_all, n);       /* half range of e, all tokens */
    eq_s = equal_shift(hs, w, in_s, n);           /* half range of e over S */
    weights(w->wl, w->wu, w, in_all, n, NULL, w->x);   /* exact scores, all tokens: p */
    weights(w->hl, w->hu, w, in_all, n, g_ones, w->y); /* estimated scores, all tokens */
    /* over S: the same numbers restricted to S when S holds the overall
     * greatest score (same m), else weights with S's own maximum */
    mpfr_set(w->t, w->x, MPFR_RNDN);
    if (!set_max_is(w, in_s, n, NULL, w->t)) weights(w->sl, w->su, w, in_s, n, NULL, NULL),
                                             msl = w->sl, msu = w->su;
    mpfr_set(w->t, w->y, MPFR_RNDN);
    if (!set_max_is(w, in_s, n, g_ones, w->t)) weights(w->tl, w->tu, w, in_s, n, g_ones, NULL),
                                               mtl = w->tl, mtu = w->tu;

    /* ---- K.1 (tanh(D/2), tanh(Delta/2)) and the paper's Lemma A.2
     * (tanh(Delta)) for s against s^, over all tokens and over S ---- */
    for (int set = 0; set < 2; set++) {
        int ci = set ? C_K1_S : C_K1_ALL;
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

    /* ---- K.2 (Eq. 14 in odds form): alpha_T (exact scores) against
     * A(alpha^_T, D); Eq. 14: alpha_T <= e^{2 Delta} alpha^_T ---- */
    if (tempty) {
        vd->r[C_K2] = vd->r[C_K2D] = vd->r[C_EQ14] = 2;   /* alpha_T = 0 = A(0, D) */
        mpfr_set_zero(al, 1), mpfr_set_zero(ah, 1), mpfr_set_zero(aTl, 1), mpfr_set_zero(aTh, 1);
    } else {
        /* alpha = 1 / (1 + W_S / W_T): increasing in W_T, decreasing in W_S */
        wsum(P[0], P[1], w->hl, w->hu, in_t, n);  /* W^_T */
        wsum(P[2], P[3], w->hl, w->hu, in_s, n);  /* W^_S */
        mpfr_div(al, P[3], P[0], MPFR_RNDU), mpfr_add_ui(al, al, 1, MPFR_RNDU);
        mpfr_ui_div(al, 1, al, MPFR_RNDD);        /* alpha^ lower */
        mpfr_div(ah, P[2], P[1], MPFR_RNDD), mpfr_add_ui(ah, ah, 1, MPFR_RNDD);
        mpfr_ui_div(ah, 1, ah, MPFR_RNDU);        /* alpha^ upper */
        wsum(P[0], P[1], w->wl, w->wu, in_t, n);  /* W_T */
        wsum(P[2], P[3], w->wl, w->wu, in_s, n);  /* W_S */
        mpfr_div(aTl, P[3], P[0], MPFR_RNDU), mpfr_add_ui(aTl, aTl, 1, MPFR_RNDU);
        mpfr_ui_div(aTl, 1, aTl, MPFR_RNDD);      /* alpha_T lower */
        mpfr_div(aTh, P[2], P[1], MPFR_RNDD), mpfr_add_ui(aTh, aTh, 1, MPFR_RNDD);
        mpfr_ui_div(aTh, 1, aTh, MPFR_RNDU);      /* alpha_T upper */
        if (eq_all) {
            /* e constant: alpha_T = alpha^ exactly, and A(a, D) >= a, e^{2D} a
             * >= a for D >= 0 */
            vd->r[C_K2] = vd->r[C_K2D] = vd->r[C_EQ14] = 2;
        } else {
            for (int k = 0; k < 2; k++) {
                int ci = k ? C_K2D : C_K2;
                kvq_exact_cert_tail(P[8], k ? dl : hr, al, MPFR_RNDD);
                kvq_exact_cert_tail(P[9], k ? dl : hr, ah, MPFR_RNDU);
                vd->r[ci] = decide(aTh, aTl, P[8], P[9]);
                vd->err[ci] = mpfr_get_d(aTh, MPFR_RNDU), vd->bnd[ci] = mpfr_get_d(P[8], MPFR_RNDD);
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
                vd->fb[ci] = vd->r[ci] >= 0;
            }
            /* Eq. 14 as the paper states it, alpha_T <= e^{2 Delta} alpha^;
             * check_enclosed decides a comparison still open at the retry
             * precision from K.2 (A(alpha^, D) <= e^{2D} alpha^) */
            mpfr_mul_2si(e2l, dl, 1, MPFR_RNDD), mpfr_exp(e2l, e2l, MPFR_RNDD);
            mpfr_mul_2si(e2h, dl, 1, MPFR_RNDU), mpfr_exp(e2h, e2h, MPFR_RNDU);
            if (g_mutant == MUT_EQ14_NO_FACTOR)   /* the mutant: alpha_T <= alpha^ */
                mpfr_set_ui(e2l, 1, MPFR_RNDN), mpfr_set_ui(e2h, 1, MPFR_RNDN);
            mpfr_mul(e2l, e2l, al, MPFR_RNDD), mpfr_mul(e2h, e2h, ah, MPFR_RNDU);
            vd->r[C_EQ14] = decide(aTh, aTl, e2l, e2h);
            vd->err[C_EQ14] = mpfr_get_d(aTh, MPFR_RNDU);
            vd->bnd[C_EQ14] = mpfr_get_d(e2l, MPFR_RNDD);
        }
    }

    /* ---- the paper variant: Lemma A.1, A.3, K.1, Eq. 7, K.4, Eq. 15,
     * Eq. 12, Corollary 4.2 (w->x is still the shift of w->wl/wu) ---- */
    paper_enclosed(vd, cs, w, prec, in_t, prom, x64, dvp64, w->x, al, ah, aTl, aTh);

    /* ---- K.3: the sparse key term ||sum_S pi v - sum_i p v|| against
     * E_key [CERT-EK-01] (an instance of the paper's Theorem 4.3) ---- */
    if (tempty && eq_s) {
        vd->r[C_K3] = vd->r[C_K3S] = 2;           /* pi = p exactly: key term 0 */
    } else {
        /* sum_S pi v - sum_i p v = (sum_S pi v - m_S) + alpha_T (m_S - m_T), with
         * m_S, m_T the means of v over S and T under the exact scores (p =
         * (1 - alpha_T) p^S + alpha_T p^T): each part is enclosed with relative
         * precision however small the tail mass is, and the first is 0 exactly
         * when e is constant on S (pi = p^S) */
        mpfr_set_zero(nl, 1), mpfr_set_zero(nh, 1);
        for (uint32_t c = 0; c < d; c++) {
            wmean(ml, mh, w, msl, msu, in_s, n, w->xv + c, d);   /* m_S,c */
            if (eq_s) {
                mpfr_set_zero(P[14], 1), mpfr_set_zero(P[15], 1);
            } else {
                wmean(lo, hi, w, mtl, mtu, in_s, n, w->xv + c, d); /* sum_S pi v_c */
                mpfr_sub(P[14], lo, mh, MPFR_RNDD);
                mpfr_sub(P[15], hi, ml, MPFR_RNDU);
            }
            if (!tempty) {
                wmean(lo, hi, w, w->wl, w->wu, in_t, n, w->xv + c, d); /* m_T,c */
                mpfr_sub(P[10], ml, hi, MPFR_RNDD);
                mpfr_sub(P[11], mh, lo, MPFR_RNDU);               /* m_S,c - m_T,c */
                pos_mul(lo, hi, aTl, aTh, P[10], P[11]);
                mpfr_add(P[14], P[14], lo, MPFR_RNDD);
                mpfr_add(P[15], P[15], hi, MPFR_RNDU);
            }
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
        vd->r[C_K3] = decide(hi, lo, P[8], P[9]);
        vd->err[C_K3] = mpfr_get_d(hi, MPFR_RNDU), vd->bnd[C_K3] = mpfr_get_d(P[8], MPFR_RNDD);
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
        vd->r[C_K3S] = decide(hi, lo, P[8], P[9]);
        vd->err[C_K3S] = vd->err[C_K3], vd->bnd[C_K3S] = mpfr_get_d(P[8], MPFR_RNDD);
    }

    /* ---- Corollary 4.2, sparse variant: ||sum_S pi (v~ - v)|| against E_val
     * [CERT-EV-01] ---- */
    {
        int any = 0;
        for (uint32_t e = 0; e < n * d && !any; e++) any = dv64[e] != 0.0;
        if (!any) {
            vd->r[C_C42S] = 2;                     /* v~ = v on S: value term 0 exactly */
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
            vd->r[C_C42S] = decide(hi, lo, ml, mh);
            vd->err[C_C42S] = mpfr_get_d(hi, MPFR_RNDU);
            vd->bnd[C_C42S] = mpfr_get_d(ml, MPFR_RNDD);
        }
    }
    mpfr_clears(lo, hi, al, ah, ml, mh, nl, nh, tmp, aTl, aTh, e2l, e2h, (mpfr_ptr)0);
    mpfr_clears(dl, hr, hs, (mpfr_ptr)0);
}

static const int cmp_stat[NCMP] = {
    S_K1, S_K1, S_K1_DELTA, S_K1_DELTA, S_A2, S_A2, S_K2, S_K2_DELTA, S_EQ14, S_K3, S_K3_SHARP,
    S_C42S, S_A1P, S_A1P_T, S_A3P, S_A3P_T, S_A3PS, S_A3PS_T, S_K1P, S_EQ7P, S_K4, S_EQ15, S_E3T,
    S_EQ12, S_C42P, S_C42PM};
static const char *const cmp_name[NCMP] = {
    "K.1 (all tokens)", "K.1 (S)", "K.1 Delta (all tokens)", "K.1 Delta (S)",
    "Lemma A.2 tanh(Delta) (all tokens)", "Lemma A.2 tanh(Delta) (S)",
    "K.2 Eq. 14 odds (half range)", "K.2 Eq. 14 odds (Delta)", "Eq. 14", "K.3 sparse key term",
    "K.3 sparse key term sharp", "Cor 4.2 sparse value term", "Lemma A.1 paper (Delta)",
    "Lemma A.1 paper (max_T |e|)", "Lemma A.3 paper (Delta)", "Lemma A.3 paper (max_T |e|)",
    "Lemma A.3 (20)+(21) paper (Delta)", "Lemma A.3 (20)+(21) paper (max_T |e|)",
    "K.1 paper", "Thm 4.3 Eq. 7 paper", "K.4 paper key term [CERT-EK-04]",
    "Eq. 15 paper key term", "Eq. 12 tail mass", "Eq. 12 paper key term",
    "Cor 4.2 paper value term", "Cor 4.2 paper rho'_b within e^{+-2D} p^_b [CERT-EV-03]"};

/* Does every token's value error satisfy ||v~_t - v_t|| <= eta_b of its block
 * (the paper's Theorem 4.1 per token, [CERT-ANN-01])?  Decided exactly: dv
 * holds exact binary64 differences (at most 45 significant bits), so the
 * squared norm is an exact sum at CAMPAIGN_XP bits (checked), compared with the
 * exact square of the binary32 eta_b.  Then Corollary 4.2 holds for every
 * distribution over the tokens (convexity of the norm). */
static int value_tokens_within_eta(const ccase *cs, work *w, const double *dv)
{
    int ok = 1, ix = 0;
    for (uint32_t t = 0; t < 16u * cs->nq && ok; t++) {
        mpfr_set_zero(w->a, 1);
        for (uint32_t c = 0; c < cs->d; c++) {
            double x = dv[(size_t)t * cs->d + c];
            if (x == 0.0) continue;
            ix |= mpfr_set_d(w->b, x, MPFR_RNDN);
            ix |= mpfr_sqr(w->b, w->b, MPFR_RNDN);
            ix |= mpfr_add(w->a, w->a, w->b, MPFR_RNDN);
        }
        ix |= mpfr_set_flt(w->b, cs->eta[t / 16u], MPFR_RNDN);
        ix |= mpfr_sqr(w->b, w->b, MPFR_RNDN);
        if (mpfr_cmp(w->a, w->b) > 0) ok = 0;
    }
    return ix == 0 && ok;
}

static void check_enclosed(ccase *cs, work *w, stats *st, kvq_rng *r)
{
    static double x64[NMAX * DMAX], dv64[NMAX * DMAX], dvp64[NMAX * DMAX];
    uint8_t in_all[NMAX], in_s[NMAX], sel[NMAX / 16 + 1], prom[NMAX / 16 + 1];
    uint32_t n = cs->n, d = cs->d, ksel = 0;
    verdicts vd, v2;
    int redo = 0;
    memcpy(sel, cs->sel, cs->nb);
    memcpy(prom, cs->prom, cs->nb);
    if (cs->idx % 3u == 2u) {                     /* any selection: K.3, A.3 assume none */
        for (uint32_t b = 0; b < cs->nq; b++) sel[b] = (uint8_t)kvq_rng_below(r, 2), prom[b] = 0;
        st->sel_random++;
    }
    for (uint32_t b = 0; b < cs->nq; b++) ksel += sel[b];
    if (ksel == cs->nq && cs->nq >= 1u && (cs->nq >= 2u || cs->nb > cs->nq) &&
        cs->idx % 3u != 2u && kvq_rng_below(r, 2) == 0) {
        /* the step selected every full block (T empty: the tail statements
         * would hold by algebra): on half of these cases leave a random
         * non-empty subset unselected instead (S keeps a block, or the
         * residual block) */
        ksel = 0;
        for (uint32_t b = 0; b < cs->nq; b++) sel[b] = (uint8_t)kvq_rng_below(r, 2), ksel += sel[b];
        if (ksel == cs->nq) sel[kvq_rng_below(r, cs->nq)] = 0, ksel--;
        for (uint32_t b = 0; b < cs->nq; b++) prom[b] = (uint8_t)(prom[b] && sel[b]);
        st->sel_thinned++;
    }
    if (ksel == 0 && cs->nq == cs->nb) sel[kvq_rng_below(r, cs->nq)] = 1; /* S not empty */
    if (cs->idx % 4u == 3u) {                     /* a promotion: any subset of S [CERT-EV-01] */
        for (uint32_t b = 0; b < cs->nq; b++) prom[b] = sel[b] && kvq_rng_below(r, 3) == 0;
        st->prom_random++;
    }
    for (uint32_t b = cs->nq; b < cs->nb; b++) sel[b] = 1, prom[b] = 0; /* residual [CERT-L-03] */
    for (uint32_t t = 0; t < n; t++) in_all[t] = 1, in_s[t] = sel[t / 16u];
    /* v (binary16) and v~ - v exactly in binary64: v^ and v are multiples of
     * 2^-24 below 2^21 in magnitude (bounds/cert.md §2), so the difference has
     * at most 45 significant bits.  Sparse: v~ = v^ on the non-promoted
     * selected full blocks; paper: on every non-promoted full block (only
     * selected blocks are promotion candidates, in both variants). */
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t c = 0; c < d; c++) {
            size_t e = (size_t)t * d + c;
            int q = t < 16u * cs->nq && !prom[t / 16u];
            x64[e] = (double)cs->v[e];
            dvp64[e] = q ? (double)cs->vhx[e] - (double)cs->v[e] : 0.0;
            dv64[e] = q && in_s[t] ? dvp64[e] : 0.0;
            mpfr_set_d(w->xv[e], x64[e], MPFR_RNDN);     /* exact: 53 bits */
            mpfr_set_d(w->dv[e], dv64[e], MPFR_RNDN);
            mpfr_set_d(w->dvp[e], dvp64[e], MPFR_RNDN);
        }
    enclosed(&vd, cs, w, CAMPAIGN_PREC, in_all, in_s, prom, x64, dv64, dvp64);
    for (int i = 0; i < NCMP; i++) redo |= vd.cnt[i] > 0 && vd.r[i] < 0;
    if (redo) {
        st->retries++;
        enclosed(&v2, cs, w, CAMPAIGN_PREC_HI, in_all, in_s, prom, x64, dv64, dvp64);
        for (int i = 0; i < NCMP; i++)
            if (vd.r[i] < 0)
                vd.r[i] = v2.r[i], vd.err[i] = v2.err[i], vd.bnd[i] = v2.bnd[i],
                vd.fb[i] = v2.fb[i], vd.ratio[i] = v2.ratio[i];
    }
    /* Eq. 14 still open: it follows from K.2 with D = Delta, decided above
     * (alpha_T <= A(alpha^, Delta) <= e^{2 Delta} alpha^, bounds §4) */
    if (vd.r[C_EQ14] < 0 && vd.r[C_K2D] >= 1 && g_mutant != MUT_EQ14_NO_FACTOR)
        vd.r[C_EQ14] = 1, vd.fb[C_EQ14] = 1;
    /* Corollary 4.2 still open (all mass on one token whose ||v~ - v|| is
     * eta_b itself, the margin the mass of the other tokens, far below any
     * precision): it follows from the per-token bound, decided exactly
     * (bounds §9) */
    if ((vd.r[C_C42S] < 0 || vd.r[C_C42P] < 0) && value_tokens_within_eta(cs, w, dvp64)) {
        if (vd.r[C_C42S] < 0) vd.r[C_C42S] = 1, vd.fb[C_C42S] = 1;
        if (vd.r[C_C42P] < 0) vd.r[C_C42P] = 1, vd.fb[C_C42P] = 1;
    }
    for (int i = 0; i < NCMP; i++) {
        int s = cmp_stat[i];
        double rr;
        if (vd.cnt[i] == 0) continue;             /* not applicable to this case */
        if (vd.r[i] == 0 || vd.r[i] < 0) {
            memcpy(cs->sel, sel, cs->nb), memcpy(cs->prom, prom, cs->nb); /* the checked S */
            fail(cs, cmp_name[i], "%s: error %a (upper end) %s bound %a (lower end)",
                 vd.r[i] == 0 ? "violated" : "undecided at the retry precision", vd.err[i],
                 vd.r[i] == 0 ? ">" : "vs", vd.bnd[i]);
        }
        if (vd.r[i] == 2) st->exact_zero++;
        if (vd.fb[i]) {
            if (i == C_K2 || i == C_K2D) st->a3_logform++;
            else if (i == C_A1P || i == C_A1PT) st->a1_range++;
            else if (i == C_EQ14) st->eq14_by_odds++;
            else if (i == C_C42S || i == C_C42P) st->c42_by_tokens++;
        }
        st->checks[s][cs->fam] += (uint64_t)vd.cnt[i];
        if (vd.r[i] == 2 || vd.fb[i]) continue;   /* no ratio */
        /* the ratio is a report estimate: computed in MPFR where the check
         * does so, else from binary64 conversions of the enclosure ends; ends
         * below the normal binary64 range (tails far beyond it) carry no
         * relative precision and are left out */
        rr = vd.ratio[i];
        if (isnan(rr) && vd.bnd[i] >= DBL_MIN && vd.err[i] >= DBL_MIN) rr = vd.err[i] / vd.bnd[i];
        if (!isnan(rr) && rr > st->max_ratio[s]) st->max_ratio[s] = rr;
    }
    st->paper_equal += (uint64_t)vd.paper_equal;
    st->e3_cond_cases += (uint64_t)vd.e3_cond;
}

/* ---- K.5: the contract of kvq_cert_step, both variants ----------------------- */

/* Is the claim c >= E_val = sum_b rho_b eta'_b [CERT-EV-01] (eta'_b = 0 for
 * promoted and residual blocks)?  The sum runs over the attended blocks: S
 * in the sparse variant (rho the softmax of s^ over S), every block in the
 * paper variant (rho' the softmax of s' over all tokens: s on S and the
 * residual block, s^ on T) [CERT-VAR-01].  Decided from c - E_val = sum_b
 * rho_b (c - eta'_b), since the Phase-2 masses sum to 1 over the attended
 * blocks: each coefficient's sign is exact, so enclosures of rho_b give an
 * enclosure of c - E_val with relative precision even when E_val equals a
 * binary32 value (all mass on one block), where an upper bound of E_val
 * rounded up to binary32 would exceed c.  Returns 1 sound, 0 unsound, -1
 * undecided. */
static int eval_claim_sound(ccase *cs, work *w, float c, uint32_t variant)
{
    uint8_t in_a[NMAX], est[NMAX];
    mpfr_t *P = w->p;
    int res, paper = variant == KVQ_CERT_VARIANT_PAPER;
    for (uint32_t t = 0; t < cs->n; t++) {
        in_a[t] = paper ? 1u : cs->sel[t / 16u];
        est[t] = paper ? (uint8_t)!cs->sel[t / 16u] : 1u;
        mpfr_set_prec(w->tl[t], CAMPAIGN_PREC_HI), mpfr_set_prec(w->tu[t], CAMPAIGN_PREC_HI);
    }
    for (int i = 0; i < 8; i++) mpfr_set_prec(P[i], CAMPAIGN_PREC_HI);
    weights(w->tl, w->tu, w, in_a, cs->n, est, NULL); /* the Phase-2 distribution */
    wsum(P[0], P[1], w->tl, w->tu, in_a, cs->n);
    mpfr_set_zero(P[6], 1), mpfr_set_zero(P[7], 1);   /* c - E_val in [P6, P7] */
    for (uint32_t b = 0; b < cs->nb; b++) {
        float eb = (b < cs->nq && !cs->prom[b]) ? cs->eta[b] : 0.0f;
        if (!in_a[16u * b]) continue;
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
    /* rungs 0-2: the contract of the step's variant [CERT-VAR-01..03];
     * rungs 3-4: dense contract [CERT-LAD-03] */
    if (cs->rec.rung <= 2u)
        s = kvq_exact_cert_check(&vd, cs->out, &cs->rec, cs->sel, cs->prom, cs->q, cs->scale, &ch,
                                 &cs->decl, cs->prm.variant, &sh);
    else
        s = kvq_exact_cert_check_dense(&vd, cs->out, &cs->rec, cs->q, cs->scale, &ch, &cs->decl,
                                       &sh);
    if (s != KVQ_OK) fail(cs, "K.5", "exact checker (rung %u): %s", cs->rec.rung,
                          kvq_status_str(s));
    if (cs->rec.rung <= 2u && (vd.unsound & 2u) &&
        eval_claim_sound(cs, w, cs->rec.eval, cs->prm.variant) == 1) {
        /* the checker's sound E_val is an upper bound rounded up, here above
         * the claim although the claim is >= the exact E_val (decided above) */
        if (st->eval_false_alarms++ == 0)
            fprintf(stderr, "note: case %" PRIu64 ": kvq_exact_cert_check flags claim eval %a "
                    "below its sound value %a, but claim >= E_val exactly "
                    "(eval_claim_sound)\n", cs->idx, (double)cs->rec.eval, (double)vd.eval);
        vd.unsound &= ~2u;
    }
    if (vd.unsound)
        fail(cs, "K.5", "unsound claim (bits %u): claimed ekey %a eval %a earith %a, sound "
             "%a %a %a [CERT-CON-02]", vd.unsound, (double)cs->rec.ekey, (double)cs->rec.eval,
             (double)cs->rec.earith, (double)vd.ekey, (double)vd.eval, (double)vd.earith);
    if (vd.holds != 1 || vd.holds_sound != 1)
        fail(cs, "K.5", "contract %s: error in [%a, %a], claimed sum %a, sound sum %a",
             vd.holds == 0 || vd.holds_sound == 0 ? "violated" : "undecided", vd.err_lo, vd.err_hi,
             (double)cs->rec.ekey + cs->rec.eval + cs->rec.earith,
             (double)vd.ekey + vd.eval + vd.earith);
    {
        int sp = cs->prm.variant == KVQ_CERT_VARIANT_SPARSE, sk = sp ? S_CON_S : S_CON_P;
        st->checks[sk][cs->fam]++;
        st->rungs[sp][cs->rec.rung <= 4u ? cs->rec.rung : 4u]++;
        tot = (double)vd.ekey + (double)vd.eval + (double)vd.earith;
        if (tot > 0.0 && vd.err_hi / tot > st->max_ratio[sk]) st->max_ratio[sk] = vd.err_hi / tot;
    }
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
    for (uint32_t t = 0; t < NMAX; t++) {
        mpfr_inits2(CAMPAIGN_PREC, w->gl[t], w->gu[t], w->cl[t], w->cu[t], (mpfr_ptr)0);
        g_ones[t] = 1u;
    }
    for (uint32_t e = 0; e < NMAX * DMAX; e++)
        mpfr_init2(w->xv[e], 53), mpfr_init2(w->dv[e], 53), mpfr_init2(w->dvp[e], 53);
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
    a->sel_thinned += b->sel_thinned;
    a->elems += b->elems, a->tokens += b->tokens, a->k804_filtered += b->k804_filtered;
    for (int k = 0; k < 5; k++) a->rungs[0][k] += b->rungs[0][k], a->rungs[1][k] += b->rungs[1][k];
    a->eval_false_alarms += b->eval_false_alarms;
    a->a3_logform += b->a3_logform, a->a1_range += b->a1_range;
    a->eq14_by_odds += b->eq14_by_odds, a->e3_cond_cases += b->e3_cond_cases;
    a->c42_by_tokens += b->c42_by_tokens;
    a->paper_equal += b->paper_equal;
    for (int f = 0; f < NFAM; f++) a->fam_cases[f] += b->fam_cases[f];
    for (int s = 0; s < NSTAT; s++) {
        for (int f = 0; f < NFAM; f++) a->checks[s][f] += b->checks[s][f];
        if (b->max_ratio[s] > a->max_ratio[s]) a->max_ratio[s] = b->max_ratio[s];
    }
    if (b->max_excess_gamma > a->max_excess_gamma) a->max_excess_gamma = b->max_excess_gamma;
}

/* ---- the paper's worked numbers (item of spec/bounds/cert.md §10) --------- */

#define NWORKED 5
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
    kvq_exact_cert_ekey_gated(lo, dlo, alo, one, MPFR_RNDD);
    kvq_exact_cert_ekey_gated(hi, dhi, ahi, one, MPFR_RNDU);
    wk[4] = (worked){"sound paper-variant E_key 2 min(t, A(e^2D+e^D-2)/2) [CERT-EK-04]",
                     mpfr_get_d(lo, MPFR_RNDD), mpfr_get_d(hi, MPFR_RNDU), "0.004509",
                     printed6(lo, hi, 4509ul)};
    /* 288 bytes per token per head at d = 128 [CERT-L-05], from the layout
     * header's function (quarter bytes): an integer comparison */
    {
        uint32_t qb = kvq_cert_quarter_bytes_per_token(128u);
        wk[3] = (worked){"bytes per token per head, d = 128 [CERT-L-05]", qb / 4.0, qb / 4.0, "288",
                         qb == 4u * 288u};
    }
    for (int i = 0; i < NWORKED; i++) all &= wk[i].ok;
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
            fprintf(f, "  \"decided_by_algebra\": %" PRIu64 ",\n  \"random_selections\": %" PRIu64
                    ",\n  \"thinned_selections\": %" PRIu64
                    ",\n  \"random_promotions\": %" PRIu64 ",\n  \"key_elements\": %" PRIu64
                    ",\n  \"tokens\": %" PRIu64 ",\n  \"key_elements_decided_by_binary64_filter\": %"
                    PRIu64 ",\n", st->exact_zero, st->sel_random, st->sel_thinned, st->prom_random,
                    st->elems, st->tokens, st->k804_filtered);
            for (int v = 0; v < 2; v++)
                fprintf(f, "  \"k5_%s_steps_by_rung\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %"
                        PRIu64 ", %" PRIu64 "],\n", v ? "sparse" : "paper", st->rungs[v][0],
                        st->rungs[v][1], st->rungs[v][2], st->rungs[v][3], st->rungs[v][4]);
            fprintf(f, "  \"k5_checker_eval_verdicts_overruled\": %" PRIu64 ",\n",
                    st->eval_false_alarms);
            fprintf(f, "  \"k2_decided_by_decomposition\": %" PRIu64 ",\n", st->a3_logform);
            fprintf(f, "  \"a1_paper_decided_by_range\": %" PRIu64 ",\n", st->a1_range);
            fprintf(f, "  \"eq14_decided_by_k2\": %" PRIu64 ",\n", st->eq14_by_odds);
            fprintf(f, "  \"cor42_decided_by_token_bound\": %" PRIu64 ",\n", st->c42_by_tokens);
            fprintf(f, "  \"paper_variant_a_prime_equal_a\": %" PRIu64 ",\n", st->paper_equal);
            fprintf(f, "  \"eq12_condition_cases\": %" PRIu64 ",\n", st->e3_cond_cases);
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
            for (int i = 0; i < NWORKED; i++)
                fprintf(f, "    {\"what\": \"%s\", \"exact_lo\": %.17g, \"exact_hi\": %.17g, "
                        "\"printed\": \"%s\", \"agrees\": %s}%s\n", wk[i].what, wk[i].lo, wk[i].hi,
                        wk[i].printed, wk[i].ok ? "true" : "false", i < NWORKED - 1 ? "," : "");
            fprintf(f, "  ],\n  \"worked_numbers_agree\": %s\n}\n", wk_ok ? "true" : "false");
        } else {
            fprintf(f, "CERT lemma campaign (spec/bounds/cert.md section 10)\n");
            fprintf(f, "seed 0x%016" PRIx64 "  cases %" PRIu64 "  jobs %u  wall %.1f s  worker cpu "
                    "%.1f s\n", seed, st->cases, jobs, wall, cpu);
            fprintf(f, "machine %s  commit %s\n", host, commit);
            fprintf(f, "violations 0  undecided 0  retries at %d bits %" PRIu64
                    "  decided by algebra %" PRIu64 "\n", CAMPAIGN_PREC_HI, st->retries,
                    st->exact_zero);
            fprintf(f, "random selections %" PRIu64 "  thinned selections %" PRIu64
                    "  random promotions %" PRIu64 "  key elements %" PRIu64 " (%" PRIu64
                    " by the binary64 filter)  tokens %" PRIu64 "\n", st->sel_random,
                    st->sel_thinned, st->prom_random, st->elems, st->k804_filtered, st->tokens);
            fprintf(f, "paper variant: a' = a exactly in %" PRIu64 " cases; Eq. 12's condition "
                    "delta1 <= Delta/2 held in %" PRIu64 " of %" PRIu64 " cases\n\n",
                    st->paper_equal, st->e3_cond_cases, st->cases);
            fprintf(f, "%-13s %-60s %12s %10s\n", "label", "statement", "checks", "max ratio");
            for (int s = 0; s < NSTAT; s++)
                if (s == S_DIFF)
                    fprintf(f, "%-13s %-60s %12" PRIu64 " %10s\n", stat_id[s], stat_name[s], tot[s],
                            "(bitwise)");
                else
                    fprintf(f, "%-13s %-60s %12" PRIu64 " %10.6f\n", stat_id[s], stat_name[s],
                            tot[s], st->max_ratio[s]);
            fprintf(f, "max (|k-k^| - sigma/2) / gamma: %.6f\n", st->max_excess_gamma);
            for (int v = 0; v < 2; v++)
                fprintf(f, "K.5 %s-variant steps by accepted rung 0..4: %" PRIu64 " %" PRIu64 " %"
                        PRIu64 " %" PRIu64 " %" PRIu64 "\n", v ? "sparse" : "paper",
                        st->rungs[v][0], st->rungs[v][1], st->rungs[v][2], st->rungs[v][3],
                        st->rungs[v][4]);
            fprintf(f, "checker eval-claim verdicts overruled exactly: %" PRIu64 "\n"
                    "decided by a fallback argument: K.2 by the decomposition of bounds section 10 %"
                    PRIu64 ", paper A.1 by the range of s'-s %" PRIu64 ", Eq. 14 by K.2 %" PRIu64
                    ", Cor 4.2 by the per-token bound %" PRIu64 "\n\n", st->eval_false_alarms,
                    st->a3_logform, st->a1_range, st->eq14_by_odds, st->c42_by_tokens);
            fprintf(f, "checks per family:\n%-13s", "label");
            for (int fm = 0; fm < NFAM; fm++) fprintf(f, " %11.11s", fam_name[fm]);
            fprintf(f, "\n%-13s", "(cases)");
            for (int fm = 0; fm < NFAM; fm++) fprintf(f, " %11" PRIu64, st->fam_cases[fm]);
            fprintf(f, "\n");
            for (int s = 0; s < NSTAT; s++) {
                fprintf(f, "%-13s", stat_id[s]);
                for (int fm = 0; fm < NFAM; fm++) fprintf(f, " %11" PRIu64, st->checks[s][fm]);
                fprintf(f, "\n");
            }
            fprintf(f, "\nworked numbers (Vmax = 1; exact enclosure vs the printed decimal):\n");
            for (int i = 0; i < NWORKED; i++)
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
    worked wk[NWORKED];
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
            g_mutant = -1;
            for (int i = 1; i < (int)(sizeof mut_name / sizeof mut_name[0]); i++)
                if (strcmp(m, mut_name[i]) == 0) g_mutant = i;
            if (g_mutant < 0) {
                fprintf(stderr, "%s: KVQ_CAMPAIGN_MUTANT=%s: not one of half_sigma, half_delta, "
                        "ekey_paper, eq14_no_factor, a1_half\n", g_self, m);
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
