/*
 * vidkv.c -- the VIDKV family, exact path (GNU MPFR).
 *
 * Exact level: each binary32 step of spec/vidkv.md's pinned sequences is
 * evaluated exactly at KVQ_XPREC bits and rounded once (kvq_exact_round), so
 * the results are those of the sequence by construction, not by imitation of
 * the fast path.  The 2-bit and MINMAX groups come from the KIVI exact path
 * (kvq_exact_kivi_quantize), called on the gathered channel.
 * Bounded level: the DFT of every token at 256 bits with an enclosure margin,
 * the radii of spec/bounds/vidkv.md in binary64 with every operation moved one
 * step outward (outward.h), the ternary threshold's real comparisons done
 * exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_exact_vidkv.h"
#include "outward.h"
#include "xscratch.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f
#define F16_MAX        0x1.ffcp+15f
#define META_DOMAIN    0x1p102f
#define DFT_PREC       256
#define U32            0x1p-24      /* binary32 unit roundoff */
#define ETA            0x1p-150     /* half the smallest subnormal */
#define TAU            0x1p-23      /* twiddle accuracy [VIDKV-B-01] */
#define ENCL           0x1p-200     /* enclosure margin per unit of sum|x| (bounds §8) */

/* ---- one binary32 step, exactly rounded --------------------------------- */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } xop;

/* RN32(a op b); the domain keeps every step finite [VIDKV-L-03]. */
static float rn32(xop op, float a, float b, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    switch (op) {
    case OP_ADD: mpfr_add(w->c, w->a, w->b, MPFR_RNDN); break; /* exact at KVQ_XPREC */
    case OP_SUB: mpfr_sub(w->c, w->a, w->b, MPFR_RNDN); break;
    case OP_MUL: mpfr_mul(w->c, w->a, w->b, MPFR_RNDN); break;
    default:
        (void)kvq_exact_div_round(w->c, w->a, w->b, &kvq_xfmt_binary32);
        return mpfr_get_flt(w->c, MPFR_RNDN);
    }
    if (kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32))
        return mpfr_sgn(w->c) < 0 ? -INFINITY : INFINITY;
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

static float read1(float v, const kvq_policy *pol, uint32_t *flags)
{
    if (v != 0.0f && fabsf(v) < F32_MIN_NORMAL) {
        *flags |= KVQ_FLAG_SUBNORMAL;
        if (pol->subnormal == KVQ_SUBNORMAL_DAZ) return signbit(v) ? -0.0f : 0.0f;
    }
    return v;
}

static kvq_status read_all(float *r, uint32_t *flags, const float *x, uint64_t n, float dom,
                           const kvq_policy *pol)
{
    for (uint64_t e = 0; e < n; e++)
        if (isnan(x[e]) || isinf(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!(x[e] < dom && x[e] > -dom)) return KVQ_E_RANGE;
    for (uint64_t e = 0; e < n; e++) r[e] = read1(x[e], pol, flags);
    return KVQ_OK;
}

/* Storage of a scale [VIDKV-K-06] [VIDKV-V-03]: RN16 (exact path's rounding)
 * or binary32, then the zero rule. */
static kvq_status xstore(float *out, uint32_t *flags, float s32, uint32_t meta,
                         const kvq_policy *pol)
{
    float s = s32;
    if (meta == KVQ_META_F16) {
        int ov;
        s = kvq_exact_round_float(s32, &kvq_xfmt_binary16, &ov);
        if (ov) {
            if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
            *flags |= KVQ_FLAG_SATURATED;
            s = F16_MAX;
        }
    }
    if (!(s >= (meta == KVQ_META_F16 ? F16_MIN_NORMAL : F32_MIN_NORMAL))) {
        s = 0.0f;
        *flags |= KVQ_FLAG_ZERO_SCALE;
    }
    *out = s;
    return KVQ_OK;
}

static kvq_status check_call(const kvq_vidkv_params *p, const kvq_policy *pol)
{
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(p)) return KVQ_E_PARAM;
    if (!kvq_vidkv_shape_ok(p)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* ---- the split [VIDKV-K-01..02], by exact ranges rounded once ------------- */

static void xsplit_row(uint8_t *row, const float *kr, const kvq_vidkv_params *p, uint32_t h0,
                       uint32_t h1, float *r, kvq_xscratch *w)
{
    uint32_t na = kvq_vidkv_n_abn(p);
    for (uint32_t c = 0; c < p->dim; c++) {
        float mn = INFINITY, mx = -INFINITY;
        for (uint32_t h = h0; h < h1; h++)
            for (uint32_t t = 0; t < p->tokens; t++) {
                float v = kr[kvq_vidkv_index(p, h, t, c)];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
        r[c] = rn32(OP_SUB, mx, mn, w);
    }
    memset(row, 0, kvq_vidkv_mask_row_bytes(p));
    for (uint32_t c = 0; c < p->dim; c++) {
        uint32_t ahead = 0;
        for (uint32_t o = 0; o < p->dim; o++)
            if (r[o] > r[c] || (r[o] == r[c] && o < c)) ahead++;
        if (ahead < na) row[c / 8u] = (uint8_t)(row[c / 8u] | (1u << (c % 8u)));
    }
}

/* ---- KIVI groups of one gathered channel ------------------------------------ */

/* Quantize the T values col[] of one channel as KIVI groups of G (bits),
 * writing group b's codes to codes(b), its metadata to scale(b), zero(b). */
typedef struct kcol {
    uint8_t *codes;
    float *scale, *zero, *deq;
    uint8_t *creal, *calt;
} kcol;

static kvq_status kivi_column(kcol *kc, uint32_t *flags, uint64_t *amb, const float *col,
                              uint32_t T, uint32_t G, uint32_t bits, uint32_t meta,
                              const kvq_policy *pol)
{
    kvq_kivi_shape sh;
    kvq_exact_kivi_out o;
    kvq_status st;
    sh.bits = bits;
    sh.group = G;
    sh.grouping = KVQ_GROUP_CHANNEL;
    sh.meta = meta;
    sh.tokens = T;
    sh.channels = 1u;
    o.codes = kc->codes;
    o.scale = kc->scale;
    o.zero = kc->zero;
    o.deq = kc->deq;
    o.code_real = kc->creal;
    o.code_alt = kc->calt;
    st = kvq_exact_kivi_quantize(&o, col, &sh, pol);
    if (st != KVQ_OK) return st;
    *flags |= o.flags & ~KVQ_FLAG_AMBIGUOUS;
    *amb += o.ambiguous;
    return KVQ_OK;
}

static int kc_alloc(kcol *kc, uint32_t T, uint32_t G)
{
    kc->codes = malloc(T / 4u + 1u);
    kc->scale = malloc((T / G + 1u) * sizeof(float));
    kc->zero = malloc((T / G + 1u) * sizeof(float));
    kc->deq = malloc(T * sizeof(float));
    kc->creal = malloc(T);
    kc->calt = malloc(T);
    return kc->codes && kc->scale && kc->zero && kc->deq && kc->creal && kc->calt;
}

static void kc_free(kcol *kc)
{
    free(kc->codes); free(kc->scale); free(kc->zero); free(kc->deq); free(kc->creal);
    free(kc->calt);
}

/* ---- binary64 outward arithmetic for the radii ----------------------------- */

static double add_up(double a, double b) { return kvq_up(a + b); }
static double mul_up(double a, double b) { return kvq_up(a * b); }
static double div_up(double a, double b) { return kvq_up(a / b); }

/* gamma_n = n u / (1 - n u), upward. */
static double gam_up(double n)
{
    return div_up(mul_up(n, U32), kvq_dn(1.0 - n * U32));
}

/* e_M = tau + (1 + tau)(u + gamma_{M-1} (1 + u)), upward [VIDKV-B-01]. */
static double e_up(uint32_t M)
{
    double g = gam_up((double)M - 1.0);
    return add_up(TAU, mul_up(add_up(1.0, TAU), add_up(U32, mul_up(g, add_up(1.0, U32)))));
}

/* f_N = ((1 + sqrt2 tau)(1 + sqrt2 gamma_2))^(2(L + 1)) (1 + gamma_N) - 1,
 * L = floor(log2 N), upward: the per-term factor of any Cooley-Tukey FFT of
 * length N (spec/bounds/vidkv.md §2, lemma F); sqrt2 bounded by 0x1.6a09e7p+0. */
static double f_up(uint32_t N)
{
    const double sq2 = 0x1.6a09e7p+0;     /* > sqrt(2) */
    double st = add_up(1.0, mul_up(sq2, TAU)), sg = add_up(1.0, mul_up(sq2, gam_up(2.0)));
    double v = 1.0, per = mul_up(st, sg);
    uint32_t L = 0;
    while ((2u << L) <= N) L++;
    for (uint32_t i = 0; i < 2u * (L + 1u); i++) v = mul_up(v, per);
    v = mul_up(v, add_up(1.0, gam_up((double)N)));
    return kvq_up(v - 1.0);
}

/* The radius factors of [VIDKV-B-01] / [VIDKV-B-03]: max(e_M, f_N), and the
 * absolute (underflow) terms max(M eta (1 + gamma_{M-1}), 16 N (L + 1) eta). */
static double rfac_up(uint32_t M, uint32_t N)
{
    return fmax(e_up(M), f_up(N));
}

static double rabs_up(uint32_t M, uint32_t N)
{
    uint32_t L = 0;
    while ((2u << L) <= N) L++;
    return fmax(mul_up(mul_up((double)M, ETA), add_up(1.0, gam_up((double)M - 1.0))),
                mul_up(16.0 * N * (L + 1.0), ETA));
}

/* ---- the DFT at 256 bits ------------------------------------------------- */

typedef struct xdft {
    uint32_t N;
    mpfr_t *c, *s;      /* cos, sin of 2 pi m / N, m < N */
    mpfr_t acc, t;
} xdft;

static int xdft_init(xdft *d, uint32_t N)
{
    mpfr_t pi;
    d->N = N;
    d->c = malloc(N * sizeof *d->c);
    d->s = malloc(N * sizeof *d->s);
    if (d->c == NULL || d->s == NULL) { free(d->c); free(d->s); return 0; }
    mpfr_init2(pi, DFT_PREC + 16);
    mpfr_const_pi(pi, MPFR_RNDN);
    mpfr_inits2(DFT_PREC, d->acc, d->t, (mpfr_ptr)0);
    for (uint32_t m = 0; m < N; m++) {
        mpfr_init2(d->c[m], DFT_PREC);
        mpfr_init2(d->s[m], DFT_PREC);
        mpfr_mul_ui(d->t, pi, 2u * m, MPFR_RNDN);
        mpfr_div_ui(d->t, d->t, N, MPFR_RNDN);
        mpfr_sin_cos(d->s[m], d->c[m], d->t, MPFR_RNDN);
    }
    mpfr_clear(pi);
    return 1;
}

static void xdft_clear(xdft *d)
{
    for (uint32_t m = 0; m < d->N; m++) {
        mpfr_clear(d->c[m]);
        mpfr_clear(d->s[m]);
    }
    mpfr_clears(d->acc, d->t, (mpfr_ptr)0);
    free(d->c);
    free(d->s);
}

/* acc = component j of the DFT of x[0 .. N-1] [VIDKV-K-05]. */
static void xdft_comp(xdft *d, const float *x, uint32_t j)
{
    uint32_t k = j / 2u;
    mpfr_set_zero(d->acc, 1);
    for (uint32_t n = 0; n < d->N; n++) {
        uint32_t m = (uint32_t)(((uint64_t)k * n) % d->N);
        mpfr_mul_d(d->t, j % 2u ? d->s[m] : d->c[m], (double)x[n], MPFR_RNDN);
        if (j % 2u) mpfr_sub(d->acc, d->acc, d->t, MPFR_RNDN);
        else mpfr_add(d->acc, d->acc, d->t, MPFR_RNDN);
    }
}

/* acc = the real inverse at n of ab[2k], ab[2k+1] [VIDKV-K-07]. */
static void xidft(xdft *d, const float *ab, uint32_t n)
{
    mpfr_set_zero(d->acc, 1);
    for (uint32_t k = 0; k < d->N; k++) {
        uint32_t m = (uint32_t)(((uint64_t)k * n) % d->N);
        mpfr_mul_d(d->t, d->c[m], (double)ab[2u * k], MPFR_RNDN);
        mpfr_add(d->acc, d->acc, d->t, MPFR_RNDN);
        mpfr_mul_d(d->t, d->s[m], (double)ab[2u * k + 1u], MPFR_RNDN);
        mpfr_sub(d->acc, d->acc, d->t, MPFR_RNDN);
    }
    mpfr_div_ui(d->acc, d->acc, d->N, MPFR_RNDN);
}

double kvq_exact_vidkv_twiddle_err(uint32_t N)
{
    xdft d;
    double e = 0.0;
    mpfr_t t;
    if (N == 0u || !xdft_init(&d, N)) return INFINITY;
    mpfr_init2(t, DFT_PREC);
    for (uint32_t m = 0; m < N; m++) {
        float c, s;
        kvq_vidkv_twiddle(&c, &s, m, N);
        mpfr_sub_d(t, d.c[m], (double)c, MPFR_RNDN);
        e = fmax(e, kvq_up(fabs(mpfr_get_d(t, MPFR_RNDU))));
        mpfr_sub_d(t, d.s[m], (double)s, MPFR_RNDN);
        e = fmax(e, kvq_up(fabs(mpfr_get_d(t, MPFR_RNDU))));
    }
    mpfr_clear(t);
    xdft_clear(&d);
    return kvq_up(e + 0x1p-240);         /* the twiddles' own error at 256 bits */
}

/* ---- keys ------------------------------------------------------------------- */

/* SIGNMEAN group [VIDKV-K-08]: pinned sum, scale, storage; codes x >= 0. */
static kvq_status xsignmean(uint8_t *grp, float *scale, uint32_t *flags, const float *v,
                            size_t stride, uint32_t G, uint32_t meta, const kvq_policy *pol,
                            kvq_xscratch *w)
{
    float S = 0.0f;
    for (uint32_t i = 0; i < G; i++) S = rn32(OP_ADD, S, fabsf(v[i * stride]), w);
    if (xstore(scale, flags, rn32(OP_DIV, S, (float)G, w), meta, pol) != KVQ_OK)
        return KVQ_E_RANGE;
    memset(grp, 0, G / 8u);
    for (uint32_t i = 0; i < G; i++)
        if (v[i * stride] >= 0.0f) grp[i / 8u] = (uint8_t)(grp[i / 8u] | (1u << (i % 8u)));
    return KVQ_OK;
}

/* The accepted stored range of a component scale [VIDKV-B-02] from the real
 * scale's enclosure [slo, shi] and the radius: storage of RD32(L), RU32(U). */
static void scale_range(float *lo, float *hi, double L, double U, uint32_t meta)
{
    float fl, fu;
    int ov;
    L = L < 0.0 ? 0.0 : L;
    fl = (float)L;
    if ((double)fl > L) fl = nextafterf(fl, 0.0f);
    fu = (float)U;
    if ((double)fu < U) fu = nextafterf(fu, INFINITY);
    if (meta == KVQ_META_F16) {
        fl = kvq_exact_round_float(fl, &kvq_xfmt_binary16, &ov);
        if (ov) fl = F16_MAX;
        fu = isinf(fu) ? F16_MAX : kvq_exact_round_float(fu, &kvq_xfmt_binary16, &ov);
        if (ov) fu = F16_MAX;
    }
    if (!(fl >= (meta == KVQ_META_F16 ? F16_MIN_NORMAL : F32_MIN_NORMAL))) fl = 0.0f;
    if (!(fu >= (meta == KVQ_META_F16 ? F16_MIN_NORMAL : F32_MIN_NORMAL))) fu = 0.0f;
    *lo = fl;
    *hi = fu;
}

kvq_status kvq_exact_vidkv_quantize_keys(kvq_exact_vidkv_keys_out *out, const float *k,
                                         const kvq_vidkv_params *p, const kvq_policy *pol)
{
    kvq_status st;
    kvq_xscratch w;
    xdft d;
    int have_dft = 0;
    uint32_t f = 0, mode, na, nn, mper, nb, G, *al = NULL, *nl = NULL;
    uint64_t n, amb = 0;
    float *kr = NULL, *col = NULL, *xn = NULL, *r = NULL;
    kcol kc;
    kvq_vidkv_keys o;
    kvq_vidkv_keys *dst;
    uint8_t *mask = NULL, *ac = NULL, *nc = NULL, *camb = NULL;
    float *asc = NULL, *azr = NULL, *nsc = NULL, *nzr = NULL, *slo = NULL, *shi = NULL;
    double *A = NULL;
    mpfr_t *Y = NULL;
    memset(&kc, 0, sizeof kc);
    if (out == NULL || k == NULL || p == NULL || out->k.mask == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    dst = &out->k;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    if ((na > 0u && (dst->abn_codes == NULL || dst->abn_scale == NULL || dst->abn_zero == NULL)) ||
        (nn > 0u && (dst->nrm_codes == NULL || dst->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && dst->nrm_zero == NULL) ||
                     (mode == KVQ_VIDKV_NORMAL_FFT &&
                      (out->comp_amb == NULL || out->s_lo == NULL || out->s_hi == NULL)))))
        return KVQ_E_PARAM;
    mper = kvq_vidkv_nrm_per_block(p);
    nb = kvq_vidkv_blocks(p);
    G = p->group;
    n = kvq_vidkv_elems(p);
    kr = malloc(n * sizeof *kr);
    if (kr == NULL) return KVQ_E_NOMEM;
    if ((st = read_all(kr, &f, k, n, KVQ_VIDKV_DOMAIN, pol)) != KVQ_OK) { free(kr); return st; }
    kvq_xs_init(&w);
    mask = malloc(kvq_vidkv_mask_bytes(p));
    ac = malloc(kvq_vidkv_abn_code_bytes(p) + 1u);
    nc = malloc(kvq_vidkv_nrm_code_bytes(p) + 1u);
    asc = malloc((kvq_vidkv_abn_groups(p) + 1u) * 4u);
    azr = malloc((kvq_vidkv_abn_groups(p) + 1u) * 4u);
    nsc = malloc((kvq_vidkv_nrm_groups(p) + 1u) * 4u);
    nzr = malloc((kvq_vidkv_nrm_groups(p) + 1u) * 4u);
    slo = malloc((kvq_vidkv_nrm_groups(p) + 1u) * 4u);
    shi = malloc((kvq_vidkv_nrm_groups(p) + 1u) * 4u);
    camb = malloc((uint64_t)p->heads * p->tokens * mper + 1u);
    al = malloc(p->dim * 4u);
    nl = malloc(p->dim * 4u);
    r = malloc(p->dim * 4u);
    col = malloc(p->tokens * 4u);
    xn = malloc(p->dim * 4u);
    if (!mask || !ac || !nc || !asc || !azr || !nsc || !nzr || !slo || !shi || !camb || !al ||
        !nl || !r || !col || !xn || !kc_alloc(&kc, p->tokens, G)) { st = KVQ_E_NOMEM; goto out; }
    if (p->split == KVQ_VIDKV_SPLIT_POOLED)
        xsplit_row(mask, kr, p, 0, p->heads, r, &w);
    else
        for (uint32_t h = 0; h < p->heads; h++)
            xsplit_row(mask + kvq_vidkv_mask_row(p, h), kr, p, h, h + 1u, r, &w);
    if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
        if (!xdft_init(&d, nn)) { st = KVQ_E_NOMEM; goto out; }
        have_dft = 1;
        A = malloc(G * sizeof *A);
        Y = malloc((uint64_t)G * sizeof *Y);
        if (A == NULL || Y == NULL) { st = KVQ_E_NOMEM; goto out; }
        for (uint32_t i = 0; i < G; i++) mpfr_init2(Y[i], DFT_PREC);
    }
    for (uint32_t h = 0; h < p->heads; h++) {
        const uint8_t *row = mask + kvq_vidkv_mask_row(p, h);
        uint32_t ia = 0, in = 0;
        for (uint32_t c = 0; c < p->dim; c++) {
            if ((row[c / 8u] >> (c % 8u)) & 1u) al[ia++] = c;
            else nl[in++] = c;
        }
        /* abnormal channels: KIVI bits 2 on the gathered channel [VIDKV-K-03] */
        for (uint32_t j = 0; j < na; j++) {
            for (uint32_t t = 0; t < p->tokens; t++) col[t] = kr[kvq_vidkv_index(p, h, t, al[j])];
            if ((st = kivi_column(&kc, &f, &amb, col, p->tokens, G, 2u, p->meta, pol)) != KVQ_OK)
                goto out;
            for (uint32_t b = 0; b < nb; b++) {
                uint64_t g = kvq_vidkv_abn_group(p, h, b, j);
                memcpy(ac + g * (G / 4u), kc.codes + (uint64_t)b * (G / 4u), G / 4u);
                asc[g] = kc.scale[b];
                azr[g] = kc.zero[b];
            }
        }
        if (nn == 0u) continue;
        if (mode == KVQ_VIDKV_NORMAL_MINMAX) {
            for (uint32_t j = 0; j < nn; j++) {
                for (uint32_t t = 0; t < p->tokens; t++) col[t] = kr[kvq_vidkv_index(p, h, t, nl[j])];
                if ((st = kivi_column(&kc, &f, &amb, col, p->tokens, G, 1u, p->meta, pol)) !=
                    KVQ_OK)
                    goto out;
                for (uint32_t b = 0; b < nb; b++) {
                    uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                    memcpy(nc + g * (G / 8u), kc.codes + (uint64_t)b * (G / 8u), G / 8u);
                    nsc[g] = kc.scale[b];
                    nzr[g] = kc.zero[b];
                }
            }
        } else if (mode == KVQ_VIDKV_NORMAL_SIGNMEAN) {
            for (uint32_t b = 0; b < nb; b++)
                for (uint32_t j = 0; j < nn; j++) {
                    uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                    if (xsignmean(nc + g * (G / 8u), &nsc[g], &f,
                                  &kr[kvq_vidkv_index(p, h, b * G, nl[j])], p->dim, G, p->meta,
                                  pol, &w) != KVQ_OK) { st = KVQ_E_RANGE; goto out; }
                }
        } else {
            double rhoc = 0.0, eN = rfac_up(nn, nn);
            double nterm = rabs_up(nn, nn);
            for (uint32_t b = 0; b < nb; b++)
                for (uint32_t j = 0; j < mper; j++) {
                    uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                    double sumA = 0.0, sumR = 0.0, Sl, Su, rs, gG = gam_up((double)G - 1.0);
                    mpfr_t S;
                    mpfr_init2(S, DFT_PREC + 16);
                    mpfr_set_zero(S, 1);
                    memset(nc + g * (G / 8u), 0, G / 8u);
                    for (uint32_t i = 0; i < G; i++) {
                        uint32_t t = b * G + i;
                        double a = 0.0, rho, R;
                        for (uint32_t q = 0; q < nn; q++) {
                            xn[q] = kr[kvq_vidkv_index(p, h, t, nl[q])];
                            a = add_up(a, fabs((double)xn[q]));
                        }
                        xdft_comp(&d, xn, j);
                        mpfr_set(Y[i], d.acc, MPFR_RNDN);
                        A[i] = a;
                        rho = add_up(mul_up(a, eN), nterm);       /* rho_f [VIDKV-B-01] */
                        R = add_up(rho, mul_up(a, ENCL));
                        rhoc = rho;
                        sumA = add_up(sumA, mul_up(a, ENCL));
                        sumR = add_up(sumR, rho);
                        if (mpfr_cmpabs_ui(Y[i], 0) == 0 || fabs(mpfr_get_d(Y[i], MPFR_RNDZ)) <= R) {
                            /* |Y~| <= R, decided on a value rounded toward 0 (no larger than |Y~|) */
                            camb[((uint64_t)h * p->tokens + t) * mper + j] = 1u;
                            amb++;
                            nc[g * (G / 8u) + i / 8u] |= (uint8_t)(1u << (i % 8u));
                        } else {
                            camb[((uint64_t)h * p->tokens + t) * mper + j] = 0u;
                            if (mpfr_sgn(Y[i]) > 0) nc[g * (G / 8u) + i / 8u] |= (uint8_t)(1u << (i % 8u));
                        }
                        mpfr_abs(d.t, Y[i], MPFR_RNDN);
                        mpfr_add(S, S, d.t, MPFR_RNDN);
                    }
                    (void)rhoc;
                    /* s* in [Sl, Su]: S~ / G with the enclosure margins */
                    Sl = mpfr_get_d(S, MPFR_RNDD);
                    Su = mpfr_get_d(S, MPFR_RNDU);
                    Sl = kvq_dn(Sl - kvq_up(sumA + kvq_up(Su * ENCL)));
                    Su = add_up(Su, add_up(sumA, mul_up(Su, ENCL)));
                    /* rho_s [VIDKV-B-02] */
                    rs = add_up(sumR, mul_up(gG, add_up(Su, sumR)));
                    rs = div_up(mul_up(rs, add_up(1.0, U32)), (double)G);
                    rs = add_up(add_up(rs, mul_up(U32, div_up(Su, (double)G))), ETA);
                    scale_range(&slo[g], &shi[g], kvq_dn(kvq_dn(Sl / (double)G) - rs),
                                add_up(div_up(Su, (double)G), rs), p->meta);
                    {   /* the storage rounding of the midpoint, informative */
                        uint32_t ignore = 0;
                        mpfr_div_ui(S, S, G, MPFR_RNDN);
                        (void)xstore(&nsc[g], &ignore, mpfr_get_flt(S, MPFR_RNDN), p->meta, pol);
                    }
                    mpfr_clear(S);
                }
        }
    }
    /* success: copy out */
    o = *dst;
    memcpy(o.mask, mask, kvq_vidkv_mask_bytes(p));
    if (na > 0u) {
        memcpy(o.abn_codes, ac, kvq_vidkv_abn_code_bytes(p));
        memcpy(o.abn_scale, asc, kvq_vidkv_abn_groups(p) * 4u);
        memcpy(o.abn_zero, azr, kvq_vidkv_abn_groups(p) * 4u);
    }
    if (nn > 0u) {
        memcpy(o.nrm_codes, nc, kvq_vidkv_nrm_code_bytes(p));
        memcpy(o.nrm_scale, nsc, kvq_vidkv_nrm_groups(p) * 4u);
        if (mode == KVQ_VIDKV_NORMAL_MINMAX) memcpy(o.nrm_zero, nzr, kvq_vidkv_nrm_groups(p) * 4u);
        if (mode == KVQ_VIDKV_NORMAL_FFT) {
            memcpy(out->comp_amb, camb, (uint64_t)p->heads * p->tokens * mper);
            memcpy(out->s_lo, slo, kvq_vidkv_nrm_groups(p) * 4u);
            memcpy(out->s_hi, shi, kvq_vidkv_nrm_groups(p) * 4u);
        }
    }
    out->flags = f | (amb ? KVQ_FLAG_AMBIGUOUS : 0u);
    out->ambiguous = amb;
out:
    if (Y != NULL) {
        for (uint32_t i = 0; i < G; i++) mpfr_clear(Y[i]);
        free(Y);
    }
    if (have_dft) xdft_clear(&d);
    kvq_xs_clear(&w);
    kc_free(&kc);
    free(kr); free(mask); free(ac); free(nc); free(asc); free(azr); free(nsc); free(nzr);
    free(slo); free(shi); free(camb); free(al); free(nl); free(r); free(col); free(xn); free(A);
    return st;
}

/* ---- dequantization bounds [VIDKV-K-11] [VIDKV-B-03] ----------------------- */

static kvq_status xmeta_ok(float v, int is_scale, uint32_t meta)
{
    int ov;
    if (isnan(v) || isinf(v)) return KVQ_E_NONFINITE;
    if (!(v < META_DOMAIN && v > -META_DOMAIN)) return KVQ_E_RANGE;
    if (meta == KVQ_META_F16 && kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov) != v)
        return KVQ_E_PARAM;
    if (is_scale && (v < 0.0f || (v > 0.0f && v < (meta == KVQ_META_F16 ? F16_MIN_NORMAL
                                                                        : F32_MIN_NORMAL))))
        return KVQ_E_PARAM;
    return KVQ_OK;
}

static kvq_status xmeta_all(const float *a, uint64_t n, int is_scale, uint32_t meta)
{
    for (uint64_t i = 0; i < n; i++) {
        kvq_status st = xmeta_ok(a[i], is_scale, meta);
        if (st != KVQ_OK) return st;
    }
    return KVQ_OK;
}

static int mask_count(const uint8_t *row, uint32_t bits, uint32_t bytes)
{
    int n = 0;
    for (uint32_t c = 0; c < 8u * bytes; c++)
        if ((row[c / 8u] >> (c % 8u)) & 1u) {
            if (c >= bits) return -1;
            n++;
        }
    return n;
}

kvq_status kvq_exact_vidkv_key_deq_bounds(double *lo, double *hi, const kvq_vidkv_keys *in,
                                          const kvq_vidkv_params *p)
{
    kvq_status st;
    uint32_t mode, na, nn, mper, G, al[KVQ_VIDKV_MAX_DIM], nl[KVQ_VIDKV_MAX_DIM];
    float ab[2u * KVQ_VIDKV_MAX_DIM];
    xdft d;
    int have = 0;
    kvq_policy pol = kvq_policy_default;
    if (lo == NULL || hi == NULL || in == NULL || p == NULL || in->mask == NULL)
        return KVQ_E_PARAM;
    if ((st = check_call(p, &pol)) != KVQ_OK) return st;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    mper = kvq_vidkv_nrm_per_block(p);
    G = p->group;
    if ((na > 0u && (in->abn_codes == NULL || in->abn_scale == NULL || in->abn_zero == NULL)) ||
        (nn > 0u && (in->nrm_codes == NULL || in->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && in->nrm_zero == NULL))))
        return KVQ_E_PARAM;
    for (uint32_t r = 0; r < kvq_vidkv_mask_rows(p); r++)
        if (mask_count(in->mask + (uint64_t)r * kvq_vidkv_mask_row_bytes(p), p->dim,
                       kvq_vidkv_mask_row_bytes(p)) != (int)na)
            return KVQ_E_PARAM;
    if (na > 0u && ((st = xmeta_all(in->abn_scale, kvq_vidkv_abn_groups(p), 1, p->meta)) != KVQ_OK ||
                    (st = xmeta_all(in->abn_zero, kvq_vidkv_abn_groups(p), 0, p->meta)) != KVQ_OK))
        return st;
    if (nn > 0u) {
        if ((st = xmeta_all(in->nrm_scale, kvq_vidkv_nrm_groups(p), 1, p->meta)) != KVQ_OK) return st;
        if (mode == KVQ_VIDKV_NORMAL_MINMAX &&
            (st = xmeta_all(in->nrm_zero, kvq_vidkv_nrm_groups(p), 0, p->meta)) != KVQ_OK)
            return st;
    }
    if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
        if (!xdft_init(&d, nn)) return KVQ_E_NOMEM;
        have = 1;
    }
    for (uint32_t h = 0; h < p->heads; h++) {
        const uint8_t *row = in->mask + kvq_vidkv_mask_row(p, h);
        uint32_t ia = 0, inn = 0;
        for (uint32_t c = 0; c < p->dim; c++) {
            if ((row[c / 8u] >> (c % 8u)) & 1u) al[ia++] = c;
            else nl[inn++] = c;
        }
        for (uint32_t t = 0; t < p->tokens; t++) {
            uint32_t b = t / G, i = t % G;
            for (uint32_t j = 0; j < na; j++) {
                uint64_t g = kvq_vidkv_abn_group(p, h, b, j);
                int ov;
                uint32_t c = (in->abn_codes[g * (G / 4u) + i / 4u] >> (2u * (i % 4u))) & 3u;
                uint64_t e = kvq_vidkv_index(p, h, t, al[j]);
                lo[e] = hi[e] = kvq_exact_kivi_deq(c, in->abn_scale[g], in->abn_zero[g], &ov);
            }
            for (uint32_t j = 0; j < mper; j++) {
                uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                uint32_t c = (in->nrm_codes[g * (G / 8u) + i / 8u] >> (i % 8u)) & 1u;
                float s = in->nrm_scale[g];
                if (mode == KVQ_VIDKV_NORMAL_FFT) {
                    ab[j] = c ? s : 0.0f;
                } else {
                    uint64_t e = kvq_vidkv_index(p, h, t, nl[j]);
                    int ov;
                    lo[e] = hi[e] = mode == KVQ_VIDKV_NORMAL_SIGNMEAN
                                        ? (c ? (double)s : 0.0)
                                        : kvq_exact_kivi_deq(c, s, in->nrm_zero[g], &ov);
                }
            }
            if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
                double Aa = 0.0, ri, e2N = rfac_up(2u * nn, nn);
                for (uint32_t q = 0; q < 2u * nn; q++) Aa = add_up(Aa, fabs((double)ab[q]));
                /* rho_i [VIDKV-B-03], plus the enclosure margin */
                ri = add_up(mul_up(Aa, e2N), rabs_up(2u * nn, nn));
                ri = add_up(mul_up(ri, add_up(1.0, U32)), mul_up(U32, Aa));
                ri = add_up(add_up(div_up(ri, (double)nn), ETA), mul_up(Aa, ENCL));
                for (uint32_t q = 0; q < nn; q++) {
                    uint64_t e = kvq_vidkv_index(p, h, t, nl[q]);
                    xidft(&d, ab, q);
                    lo[e] = kvq_dn(mpfr_get_d(d.acc, MPFR_RNDD) - ri);
                    hi[e] = kvq_up(mpfr_get_d(d.acc, MPFR_RNDU) + ri);
                }
            }
        }
    }
    if (have) xdft_clear(&d);
    return KVQ_OK;
}

/* ---- values [VIDKV-V-01..06] [VIDKV-STP-01..03] [VIDKV-B-04] ---------------- */

/* Pinned STP scores and the protection mask. */
static void xstp(float *score, uint8_t *prot, const float *xr, const kvq_vidkv_params *p,
                 const kvq_vidkv_stp *s, uint32_t np, float *tsum, kvq_xscratch *w)
{
    for (uint32_t c = 0; c < s->ds; c++) {
        float a = 0.0f;
        for (uint32_t j = 0; j < s->txt_count; j++)
            a = rn32(OP_ADD, a, xr[(uint64_t)(s->txt_first + j) * s->ds + c], w);
        tsum[c] = a;
    }
    for (uint32_t i = 0; i < s->vis_count; i++) {
        float a = 0.0f;
        for (uint32_t c = 0; c < s->ds; c++)
            a = rn32(OP_ADD, a,
                     rn32(OP_MUL, xr[(uint64_t)(s->vis_first + i) * s->ds + c], tsum[c], w), w);
        score[i] = a;
    }
    memset(prot, 0, kvq_vidkv_prot_mask_bytes(p));
    for (uint32_t i = 0; i < s->vis_count; i++) {
        uint32_t ahead = 0;
        for (uint32_t o = 0; o < s->vis_count; o++)
            if (score[o] > score[i] || (score[o] == score[i] && o < i)) ahead++;
        if (ahead < np) {
            uint32_t t = s->vis_first + i;
            prot[t / 8u] = (uint8_t)(prot[t / 8u] | (1u << (t % 8u)));
        }
    }
}

/* K = (1 + gamma_{m-1})(1 + u)^3 - 1, upward [VIDKV-B-04]. */
static double kthr_up(uint32_t m)
{
    double v = add_up(1.0, gam_up((double)m - 1.0));
    for (int i = 0; i < 3; i++) v = mul_up(v, add_up(1.0, U32));
    return kvq_up(v - 1.0);
}

/* One ternary group: pinned codes into grp (slots < m), beta, real codes and
 * ambiguity (cr[i], am[i] for member i); returns the number ambiguous. */
static kvq_status xtern(uint8_t *grp, float *beta, int8_t *cr, uint8_t *am, uint64_t *namb,
                        uint32_t *flags, const float *v, uint32_t m, const kvq_vidkv_params *p,
                        const kvq_policy *pol, kvq_xscratch *w)
{
    float S = 0.0f, B = 0.0f, mean, alpha;
    uint32_t nz = 0;
    double K = kthr_up(m), etat = (double)p->gamma + 2.0;   /* exact: gamma has 24 bits */
    mpfr_t Sx, gS, rad, dv;
    for (uint32_t i = 0; i < m; i++) S = rn32(OP_ADD, S, fabsf(v[i]), w);
    mean = rn32(OP_DIV, S, (float)m, w);
    alpha = rn32(OP_MUL, p->gamma, mean, w);
    memset(grp, 0, kvq_vidkv_tern_group_bytes(p));
    mpfr_inits2(KVQ_XPREC, Sx, gS, rad, dv, (mpfr_ptr)0);
    mpfr_set_zero(Sx, 1);
    for (uint32_t i = 0; i < m; i++) mpfr_add_d(Sx, Sx, fabs((double)v[i]), MPFR_RNDN); /* exact */
    mpfr_mul_d(gS, Sx, (double)p->gamma, MPFR_RNDN);     /* m alpha*, exact */
    /* m rho_a = K gamma S + m (gamma + 2) eta, rounded up (MPFR exact products of
     * the upward binary64 K) */
    mpfr_mul_d(rad, gS, K, MPFR_RNDU);
    mpfr_set_d(dv, (double)m * etat, MPFR_RNDU);
    mpfr_mul_2si(dv, dv, -150, MPFR_RNDU);
    mpfr_add(rad, rad, dv, MPFR_RNDU);
    for (uint32_t i = 0; i < m; i++) {
        int32_t t = v[i] > alpha ? 1 : v[i] < -alpha ? -1 : 0;  /* [VIDKV-V-02] */
        uint32_t dg = t == -1 ? 2u : (uint32_t)t;
        int sg = v[i] > 0.0f ? 1 : v[i] < 0.0f ? -1 : 0;
        if (p->vpack == KVQ_VIDKV_PACK_BASE3) {
            uint32_t pw = 1;
            for (uint32_t j = 0; j < i % 5u; j++) pw *= 3u;
            grp[i / 5u] = (uint8_t)(grp[i / 5u] + dg * pw);
        } else {
            grp[i / 4u] = (uint8_t)(grp[i / 4u] | (dg << (2u * (i % 4u))));
        }
        if (t != 0) {
            B = rn32(OP_ADD, B, fabsf(v[i]), w);
            nz++;
        }
        /* real code: sign(v) [m |v| > gamma S]; ambiguous when |m|v| - gamma S| <= m rho_a */
        mpfr_set_d(dv, fabs((double)v[i]), MPFR_RNDN);
        mpfr_mul_ui(dv, dv, m, MPFR_RNDN);                 /* exact */
        mpfr_sub(dv, dv, gS, MPFR_RNDN);                   /* exact */
        cr[i] = (int8_t)(mpfr_sgn(dv) > 0 ? sg : 0);
        am[i] = (uint8_t)(sg != 0 && mpfr_cmpabs(dv, rad) <= 0);
        *namb += am[i];
    }
    mpfr_clears(Sx, gS, rad, dv, (mpfr_ptr)0);
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED)
        return xstore(beta, flags, nz ? rn32(OP_DIV, B, (float)nz, w) : 0.0f, p->meta, pol);
    return KVQ_OK;
}

kvq_status kvq_exact_vidkv_quantize_values(kvq_exact_vidkv_values_out *out, const float *v,
                                           const kvq_vidkv_params *p, const kvq_vidkv_stp *s,
                                           const kvq_policy *pol)
{
    kvq_status st;
    kvq_xscratch w;
    uint32_t f = 0, np = 0, nt, G, nbt, nbp, *lt = NULL, *lp = NULL, *pos = NULL;
    int stp;
    uint64_t n, namb = 0;
    float *vr = NULL, *xr = NULL, *sc = NULL, *tsum = NULL, *beta = NULL, *psc = NULL, *pzr = NULL;
    float *deq = NULL;
    int8_t *cr = NULL;
    uint8_t *am = NULL, *tern = NULL, *prot = NULL, *pc = NULL;
    kcol kc;
    memset(&kc, 0, sizeof kc);
    if (out == NULL || v == NULL || p == NULL || out->v.tern == NULL || out->deq == NULL ||
        out->code_real == NULL || out->amb == NULL)
        return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    stp = p->protect > 0.0f;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && out->v.beta == NULL) return KVQ_E_PARAM;
    if (stp) {
        if (out->v.prot == NULL || out->v.p_codes == NULL || out->v.p_scale == NULL ||
            out->v.p_zero == NULL || s == NULL || s->xs == NULL || out->score == NULL)
            return KVQ_E_PARAM;
        if (s->ds == 0u || s->ds > KVQ_VIDKV_MAX_SDIM || s->rows < p->tokens ||
            s->rows > KVQ_VIDKV_MAX_TOKENS || s->vis_count == 0u || s->txt_count == 0u ||
            (uint64_t)s->vis_first + s->vis_count > p->tokens ||
            (uint64_t)s->txt_first + s->txt_count > s->rows)
            return KVQ_E_SHAPE;
        /* n_p = floor(p lv), the exact product */
        {
            mpfr_t q;
            mpfr_init2(q, 64);
            mpfr_set_flt(q, p->protect, MPFR_RNDN);
            mpfr_mul_ui(q, q, s->vis_count, MPFR_RNDN);   /* exact: 24 + 25 bits */
            np = (uint32_t)mpfr_get_ui(q, MPFR_RNDZ);
            mpfr_clear(q);
        }
    }
    G = p->group;
    n = kvq_vidkv_elems(p);
    nt = p->tokens - np;
    nbt = (nt + G - 1u) / G;
    nbp = (np + G - 1u) / G;
    vr = malloc(n * 4u);
    deq = malloc(n * 4u);
    cr = malloc(n);
    am = malloc(n);
    tern = malloc(kvq_vidkv_tern_code_bytes(p, np) + 1u);
    beta = malloc((kvq_vidkv_tern_groups(p, np) + 1u) * 4u);
    prot = malloc(kvq_vidkv_prot_mask_bytes(p));
    pc = malloc(kvq_vidkv_prot_code_bytes(p, np) + 1u);
    psc = malloc((kvq_vidkv_prot_groups(p, np) + 1u) * 4u);
    pzr = malloc((kvq_vidkv_prot_groups(p, np) + 1u) * 4u);
    lt = malloc(p->tokens * 4u);
    lp = malloc((np + 1u) * 4u);
    pos = malloc(p->tokens * 4u);
    if (!vr || !deq || !cr || !am || !tern || !beta || !prot || !pc || !psc || !pzr || !lt ||
        !lp || !pos || !kc_alloc(&kc, G, G)) { st = KVQ_E_NOMEM; goto out0; }
    if (stp) {
        uint64_t ns = (uint64_t)s->rows * s->ds;
        for (uint64_t e = 0; e < ns; e++)
            if (isnan(s->xs[e]) || isinf(s->xs[e])) { st = KVQ_E_NONFINITE; goto out0; }
        xr = malloc(ns * 4u);
        sc = malloc(s->vis_count * 4u);
        tsum = malloc(s->ds * 4u);
        if (!xr || !sc || !tsum) { st = KVQ_E_NOMEM; goto out0; }
    }
    if ((st = read_all(vr, &f, v, n, KVQ_VIDKV_DOMAIN, pol)) != KVQ_OK) goto out0;
    if (stp && (st = read_all(xr, &f, s->xs, (uint64_t)s->rows * s->ds, KVQ_VIDKV_SDOMAIN, pol)) !=
                   KVQ_OK)
        goto out0;
    kvq_xs_init(&w);
    memset(prot, 0, kvq_vidkv_prot_mask_bytes(p));
    if (stp) xstp(sc, prot, xr, p, s, np, tsum, &w);
    {
        uint32_t a = 0, b = 0;
        for (uint32_t t = 0; t < p->tokens; t++) {
            if ((prot[t / 8u] >> (t % 8u)) & 1u) { pos[t] = b; lp[b++] = t; }
            else { pos[t] = a; lt[a++] = t; }
        }
    }
    memset(cr, 0, n);
    memset(am, 0, n);
    for (uint32_t h = 0; h < p->heads; h++)
        for (uint32_t c = 0; c < p->dim; c++) {
            float buf[KVQ_MAX_GROUP];
            int8_t gcr[KVQ_MAX_GROUP];
            uint8_t gam[KVQ_MAX_GROUP];
            for (uint32_t b = 0; b < nbt; b++) {
                uint32_t m = nt - b * G < G ? nt - b * G : G;
                uint64_t g = ((uint64_t)h * nbt + b) * p->dim + c;
                uint32_t gb = kvq_vidkv_tern_group_bytes(p);
                for (uint32_t i = 0; i < m; i++) buf[i] = vr[kvq_vidkv_index(p, h, lt[b * G + i], c)];
                if (xtern(tern + g * gb, &beta[g], gcr, gam, &namb, &f, buf, m, p, pol, &w) !=
                    KVQ_OK) { st = KVQ_E_RANGE; goto out; }
                for (uint32_t i = 0; i < m; i++) {
                    uint64_t e = kvq_vidkv_index(p, h, lt[b * G + i], c);
                    uint32_t dg = p->vpack == KVQ_VIDKV_PACK_BASE3
                                      ? (uint32_t)(tern[g * gb + i / 5u] /
                                                   (i % 5u == 0 ? 1 : i % 5u == 1 ? 3 : i % 5u == 2 ? 9
                                                    : i % 5u == 3 ? 27 : 81)) % 3u
                                      : (tern[g * gb + i / 4u] >> (2u * (i % 4u))) & 3u;
                    float bt = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? beta[g] : 1.0f;
                    cr[e] = gcr[i];
                    am[e] = gam[i];
                    /* code * beta (raw: the code) [VIDKV-V-03] */
                    deq[e] = dg == 0u ? 0.0f : dg == 1u ? bt : -bt;
                }
            }
            for (uint32_t b = 0; b < nbp; b++) {
                uint32_t m = np - b * G < G ? np - b * G : G;
                uint64_t g = ((uint64_t)h * nbp + b) * p->dim + c;
                for (uint32_t i = 0; i < G; i++)
                    buf[i] = vr[kvq_vidkv_index(p, h, lp[b * G + (i < m ? i : 0u)], c)];
                if ((st = kivi_column(&kc, &f, &namb, buf, G, G, 2u, p->meta, pol)) != KVQ_OK)
                    goto out;
                memcpy(pc + g * (G / 4u), kc.codes, G / 4u);
                for (uint32_t i = m; i < G; i++)
                    pc[g * (G / 4u) + i / 4u] &= (uint8_t)~(3u << (2u * (i % 4u)));
                psc[g] = kc.scale[0];
                pzr[g] = kc.zero[0];
                for (uint32_t i = 0; i < m; i++) deq[kvq_vidkv_index(p, h, lp[b * G + i], c)] = kc.deq[i];
            }
        }
    memcpy(out->v.tern, tern, kvq_vidkv_tern_code_bytes(p, np));
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED) memcpy(out->v.beta, beta, kvq_vidkv_tern_groups(p, np) * 4u);
    if (stp) {
        memcpy(out->v.prot, prot, kvq_vidkv_prot_mask_bytes(p));
        memcpy(out->v.p_codes, pc, kvq_vidkv_prot_code_bytes(p, np));
        memcpy(out->v.p_scale, psc, kvq_vidkv_prot_groups(p, np) * 4u);
        memcpy(out->v.p_zero, pzr, kvq_vidkv_prot_groups(p, np) * 4u);
        memcpy(out->score, sc, s->vis_count * 4u);
    }
    memcpy(out->deq, deq, n * 4u);
    memcpy(out->code_real, cr, n);
    memcpy(out->amb, am, n);
    out->np = np;
    out->flags = f | (namb ? KVQ_FLAG_AMBIGUOUS : 0u);
    out->ambiguous = namb;
out:
    kvq_xs_clear(&w);
out0:
    kc_free(&kc);
    free(vr); free(deq); free(cr); free(am); free(tern); free(beta); free(prot); free(pc);
    free(psc); free(pzr); free(lt); free(lp); free(pos); free(xr); free(sc); free(tsum);
    return st;
}
