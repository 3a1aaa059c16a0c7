/*
 * vidkv.c -- the VIDKV family, fast path (binary32).
 *
 * Every float operation below is one IEEE binary32 operation rounded to nearest
 * even (the build uses -ffp-contract=off, so no FMA is formed unless fmaf is
 * named).  The sequences are the ones spec/vidkv.md pins; comments give the
 * requirement and the rounding at each step.  The 2-bit (abnormal, protected)
 * and 1-bit MINMAX groups are KIVI groups: this file calls
 * kvq_kivi_quantize_group, it does not restate it.  Results are built in
 * scratch arrays and copied out only when the whole call has succeeded, so an
 * error writes nothing [VIDKV-L-05].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_vidkv.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f
#define TWO_PI         0x1.921fb54442d18p+2 /* RN64(2 pi) */
#define META_DOMAIN    0x1p102f             /* stored metadata bound [VIDKV-D-03] */

/* ---- window [VIDKV-W-01..02] ---------------------------------------------- */

/*@ requires valid: w == \null || \valid(w);
    behavior bad:                                                    // [VIDKV-W-01]
      assumes w == \null || group == 0;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior ok:
      assumes w != \null && group != 0;
      assigns *w;
      ensures ok: \result == KVQ_OK;
      ensures window: w->group == group && w->pending == L % group &&
                      w->quantized == L - L % group;                 // [VIDKV-W-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_vidkv_window_prefill(kvq_vidkv_window *w, uint32_t group, uint32_t L)
{
    if (w == NULL || group == 0u) return KVQ_E_PARAM;
    w->group = group;
    w->pending = L % group;
    w->quantized = L - w->pending;
    return KVQ_OK;
}

/*@ requires valid: w == \null || \valid(w);
    requires valid_flush: flush == \null || \valid(flush);
    requires separated: w != \null && flush != \null ==> \separated(w, flush);
    // a window from prefill and append holds quantized + pending tokens < 2^32
    requires count: w != \null ==> w->quantized + w->pending <= UINT32_MAX;
    behavior bad:
      assumes w == \null || flush == \null || w->group == 0 || w->pending >= w->group;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior full:
      assumes w != \null && flush != \null && w->group != 0 && w->pending < w->group;
      assumes w->quantized + w->pending == UINT32_MAX;
      assigns \nothing;
      ensures shape: \result == KVQ_E_SHAPE;
    behavior step:                                                   // [VIDKV-W-02]
      assumes w != \null && flush != \null && w->group != 0 && w->pending < w->group;
      assumes w->quantized + w->pending < UINT32_MAX;
      assigns w->pending, w->quantized, *flush;
      ensures ok: \result == KVQ_OK;
      ensures flush: *flush == (\old(w->pending) + 1 == w->group ? 1 : 0);
      ensures pending: w->pending ==
          (\old(w->pending) + 1 == w->group ? 0 : \old(w->pending) + 1);
      ensures quantized: w->quantized == \old(w->quantized) +
          (\old(w->pending) + 1 == w->group ? w->group : 0);
      ensures count: w->quantized + w->pending == \old(w->quantized) + \old(w->pending) + 1;
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_vidkv_window_append(kvq_vidkv_window *w, uint32_t *flush)
{
    if (w == NULL || flush == NULL || w->group == 0u || w->pending >= w->group)
        return KVQ_E_PARAM;
    if (w->quantized + w->pending >= UINT32_MAX) return KVQ_E_SHAPE;
    w->pending++;
    *flush = 0u;
    if (w->pending == w->group) {
        w->quantized += w->group;
        w->pending = 0u;
        *flush = 1u;
    }
    return KVQ_OK;
}

/* ---- shared steps ---------------------------------------------------------- */

/* Read every input under the subnormal policy into r [VIDKV-L-04]; check
 * finiteness and the domain [VIDKV-L-03] first (nothing read on error). */
static kvq_status read_all(float *r, uint32_t *flags, const float *x, uint64_t n, float dom,
                           const kvq_policy *pol)
{
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (fabsf(x[e]) >= dom) return KVQ_E_RANGE;
    for (uint64_t e = 0; e < n; e++) {
        float v = x[e];
        if (v != 0.0f && fabsf(v) < F32_MIN_NORMAL) {
            *flags |= KVQ_FLAG_SUBNORMAL;
            if (pol->subnormal == KVQ_SUBNORMAL_DAZ) v = signbit(v) ? -0.0f : 0.0f;
        }
        r[e] = v;
    }
    return KVQ_OK;
}

/* The stored form of a binary32 scale s32 >= 0 [VIDKV-K-06] [VIDKV-V-03]:
 * RN16 under F16 (overflow per policy [KIVI-M-02]), then +0 below the smallest
 * normal of the format [POL-ZR-01]. */
static kvq_status store_scale(float *out, uint32_t *flags, float s32, uint32_t meta,
                              const kvq_policy *pol)
{
    float s = s32;
    if (meta == KVQ_META_F16) {
        int ov;
        s = kvq_round_f16(s32, &ov);
        if (ov) {
            if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
            *flags |= KVQ_FLAG_SATURATED;
        }
    }
    if (s < (meta == KVQ_META_F16 ? F16_MIN_NORMAL : F32_MIN_NORMAL)) {
        s = 0.0f;
        *flags |= KVQ_FLAG_ZERO_SCALE;
    }
    *out = s;
    return KVQ_OK;
}

/* One sign/mean group of G values v[i*stride] [VIDKV-K-06] [VIDKV-K-08]:
 * code x >= 0, s32 = RN32(S / G), S the ascending binary32 sum of |x| from +0. */
static kvq_status signmean_group(uint8_t *grp, float *scale, uint32_t *flags, const float *v,
                                 size_t stride, uint32_t G, uint32_t meta, const kvq_policy *pol)
{
    float S = 0.0f;
    for (uint32_t i = 0; i < G; i++) S = S + fabsf(v[i * stride]); /* RN32 each */
    if (store_scale(scale, flags, S / (float)G, meta, pol) != KVQ_OK) return KVQ_E_RANGE;
    memset(grp, 0, G / 8u);
    for (uint32_t i = 0; i < G; i++) kvq_pack_code(grp, i, 1u, v[i * stride] >= 0.0f ? 1u : 0u);
    return KVQ_OK;
}

void kvq_vidkv_twiddle(float *c, float *s, uint32_t m, uint32_t N)
{
    double th;
    m %= N;
    /* the exact points [VIDKV-K-09] */
    if (m == 0u) { *c = 1.0f; *s = 0.0f; return; }
    if (4u * m == N) { *c = 0.0f; *s = 1.0f; return; }
    if (2u * m == N) { *c = -1.0f; *s = 0.0f; return; }
    if (4u * m == 3u * N) { *c = 0.0f; *s = -1.0f; return; }
    th = TWO_PI * (double)m / (double)N;  /* binary64 angle */
    *c = (float)cos(th);                  /* RN32 of binary64 cos: |err| < 2^-23 */
    *s = (float)sin(th);
}

static void twiddles(float *tc, float *ts, uint32_t N)
{
    for (uint32_t m = 0; m < N; m++) kvq_vidkv_twiddle(&tc[m], &ts[m], m, N);
}

/* ---- the split [VIDKV-K-01..02] ------------------------------------------- */

/* Rank keys r[c] of one mask row: heads h0 .. h1-1 of the read keys. */
static void ranges(float *r, const float *k, const kvq_vidkv_params *p, uint32_t h0, uint32_t h1)
{
    for (uint32_t c = 0; c < p->dim; c++) {
        float mn = k[kvq_vidkv_index(p, h0, 0, c)], mx = mn;
        for (uint32_t h = h0; h < h1; h++)
            for (uint32_t t = 0; t < p->tokens; t++) {
                float v = k[kvq_vidkv_index(p, h, t, c)];
                if (v < mn) mn = v;
                if (v > mx) mx = v;
            }
        r[c] = mx - mn;                   /* RN32; +inf only outside the domain */
    }
}

/* Mask row of the first n_a channels in the split's order. */
static void split_row(uint8_t *row, const float *r, const kvq_vidkv_params *p)
{
    uint32_t na = kvq_vidkv_n_abn(p);
    memset(row, 0, kvq_vidkv_mask_row_bytes(p));
    for (uint32_t c = 0; c < p->dim; c++) {
        uint32_t rank = 0;                /* channels before c */
        for (uint32_t o = 0; o < p->dim; o++) rank += (uint32_t)kvq_vidkv_before(r[o], o, r[c], c);
        if (rank < na) kvq_vidkv_mask_set(row, c);
    }
}

static kvq_status split_read(uint8_t *mask, const float *kr, const kvq_vidkv_params *p)
{
    float *r = malloc(p->dim * sizeof *r);
    if (r == NULL) return KVQ_E_NOMEM;
    if (p->split == KVQ_VIDKV_SPLIT_POOLED) {
        ranges(r, kr, p, 0, p->heads);
        split_row(mask, r, p);
    } else {
        for (uint32_t h = 0; h < p->heads; h++) {
            ranges(r, kr, p, h, h + 1u);
            split_row(mask + kvq_vidkv_mask_row(p, h), r, p);
        }
    }
    free(r);
    return KVQ_OK;
}

static kvq_status check_call(const kvq_vidkv_params *p, const kvq_policy *pol)
{
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(p)) return KVQ_E_PARAM;
    if (!kvq_vidkv_shape_ok(p)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

kvq_status kvq_vidkv_split(uint8_t *mask, uint32_t *flags, const float *k,
                           const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    uint32_t f = 0;
    uint8_t *m;
    float *kr;
    kvq_status st;
    if (mask == NULL || k == NULL || prm == NULL) return KVQ_E_PARAM;
    if ((st = check_call(prm, pol)) != KVQ_OK) return st;
    kr = malloc(kvq_vidkv_elems(prm) * sizeof *kr);
    m = malloc(kvq_vidkv_mask_bytes(prm));
    if (kr == NULL || m == NULL) { st = KVQ_E_NOMEM; goto out; }
    if ((st = read_all(kr, &f, k, kvq_vidkv_elems(prm), KVQ_VIDKV_DOMAIN, pol)) != KVQ_OK) goto out;
    if ((st = split_read(m, kr, prm)) != KVQ_OK) goto out;
    memcpy(mask, m, kvq_vidkv_mask_bytes(prm));
    if (flags != NULL) *flags = f;
out:
    free(kr);
    free(m);
    return st;
}

/* ---- keys [VIDKV-K-03..10] ------------------------------------------------- */

/* The 2N components of one token's normal channels x[0 .. N-1] [VIDKV-K-09]. */
static void dft(float *y, const float *x, uint32_t N, const float *tc, const float *ts)
{
    for (uint32_t k = 0; k < N; k++) {
        float re = 0.0f, im = 0.0f;
        for (uint32_t n = 0; n < N; n++) {
            uint32_t m = (k * n) % N;
            float pr = x[n] * tc[m];      /* RN32 */
            float pi = x[n] * ts[m];      /* RN32 */
            re = re + pr;                 /* RN32 */
            im = im - pi;                 /* RN32: Im X_k = -sum x sin */
        }
        y[2u * k] = re;
        y[2u * k + 1u] = im;
    }
}

/* x'_n of one token from a_k = ab[2k], b_k = ab[2k+1] [VIDKV-K-07] [VIDKV-K-09]. */
static void idft(float *x, const float *ab, uint32_t N, const float *tc, const float *ts)
{
    for (uint32_t n = 0; n < N; n++) {
        float acc = 0.0f;
        for (uint32_t k = 0; k < N; k++) {
            uint32_t m = (k * n) % N;
            float pa = ab[2u * k] * tc[m];       /* RN32 */
            float pb = ab[2u * k + 1u] * ts[m];  /* RN32 */
            acc = acc + pa;                      /* RN32 */
            acc = acc - pb;                      /* RN32 */
        }
        x[n] = acc / (float)N;                   /* RN32, N exact */
    }
}

/* The ascending list of a mask row's abnormal (want 1) or normal (0) channels. */
static uint32_t channel_list(uint32_t *out, const uint8_t *row, uint32_t d, uint32_t want)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < d; c++)
        if (kvq_vidkv_mask_get(row, c) == want) out[n++] = c;
    return n;
}

kvq_status kvq_vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                                   const kvq_vidkv_params *p, const kvq_policy *pol)
{
    kvq_status st;
    uint32_t f = 0, mode, na, nn, mper, nb, G, *al = NULL, *nl = NULL;
    uint64_t n, nag, nng, acb, ncb, mb;
    float *kr = NULL, *asc = NULL, *azr = NULL, *nsc = NULL, *nzr = NULL, *comp = NULL;
    float *tc = NULL, *ts = NULL;
    uint8_t *mask = NULL, *ac = NULL, *nc = NULL;
    if (out == NULL || k == NULL || p == NULL || out->mask == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    if ((na > 0u && (out->abn_codes == NULL || out->abn_scale == NULL || out->abn_zero == NULL)) ||
        (nn > 0u && (out->nrm_codes == NULL || out->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && out->nrm_zero == NULL))))
        return KVQ_E_PARAM;
    mper = kvq_vidkv_nrm_per_block(p);
    nb = kvq_vidkv_blocks(p);
    G = p->group;
    n = kvq_vidkv_elems(p);
    nag = kvq_vidkv_abn_groups(p);
    nng = kvq_vidkv_nrm_groups(p);
    acb = kvq_vidkv_abn_code_bytes(p);
    ncb = kvq_vidkv_nrm_code_bytes(p);
    mb = kvq_vidkv_mask_bytes(p);
    kr = malloc(n * sizeof *kr);
    mask = malloc(mb);
    ac = malloc(acb + 1u);
    nc = malloc(ncb + 1u);
    asc = malloc((nag + 1u) * sizeof *asc);
    azr = malloc((nag + 1u) * sizeof *azr);
    nsc = malloc((nng + 1u) * sizeof *nsc);
    nzr = malloc((nng + 1u) * sizeof *nzr);
    al = malloc(p->dim * sizeof *al);
    nl = malloc(p->dim * sizeof *nl);
    if (kr == NULL || mask == NULL || ac == NULL || nc == NULL || asc == NULL || azr == NULL ||
        nsc == NULL || nzr == NULL || al == NULL || nl == NULL) { st = KVQ_E_NOMEM; goto out; }
    if ((st = read_all(kr, &f, k, n, KVQ_VIDKV_DOMAIN, pol)) != KVQ_OK) goto out;
    if ((st = split_read(mask, kr, p)) != KVQ_OK) goto out;
    if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
        comp = malloc((uint64_t)p->heads * p->tokens * mper * sizeof *comp);
        tc = malloc(nn * sizeof *tc);
        ts = malloc(nn * sizeof *ts);
        if (comp == NULL || tc == NULL || ts == NULL) { st = KVQ_E_NOMEM; goto out; }
        twiddles(tc, ts, nn);
    }
    for (uint32_t h = 0; h < p->heads; h++) {
        const uint8_t *row = mask + kvq_vidkv_mask_row(p, h);
        (void)channel_list(al, row, p->dim, 1u);
        (void)channel_list(nl, row, p->dim, 0u);
        /* abnormal channels: KIVI bits 2 per channel [VIDKV-K-03] */
        for (uint32_t b = 0; b < nb; b++)
            for (uint32_t j = 0; j < na; j++) {
                uint64_t g = kvq_vidkv_abn_group(p, h, b, j);
                if (kvq_kivi_quantize_group(ac + g * kvq_vidkv_abn_group_bytes(p), &asc[g],
                                            &azr[g], &f, &kr[kvq_vidkv_index(p, h, b * G, al[j])],
                                            p->dim, G, 2u, p->meta, pol) != KVQ_OK) {
                    st = KVQ_E_RANGE;
                    goto out;
                }
            }
        if (nn == 0u) continue;
        if (mode == KVQ_VIDKV_NORMAL_FFT) {
            float xn[KVQ_VIDKV_MAX_DIM];
            for (uint32_t t = 0; t < p->tokens; t++) {
                for (uint32_t j = 0; j < nn; j++) xn[j] = kr[kvq_vidkv_index(p, h, t, nl[j])];
                dft(&comp[((uint64_t)h * p->tokens + t) * mper], xn, nn, tc, ts);
            }
        }
        for (uint32_t b = 0; b < nb; b++)
            for (uint32_t j = 0; j < mper; j++) {
                uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                uint8_t *grp = nc + g * kvq_vidkv_nrm_group_bytes(p);
                kvq_status gs;
                if (mode == KVQ_VIDKV_NORMAL_FFT)
                    gs = signmean_group(grp, &nsc[g], &f,
                                        &comp[((uint64_t)h * p->tokens + b * G) * mper + j], mper,
                                        G, p->meta, pol);
                else if (mode == KVQ_VIDKV_NORMAL_SIGNMEAN)
                    gs = signmean_group(grp, &nsc[g], &f, &kr[kvq_vidkv_index(p, h, b * G, nl[j])],
                                        p->dim, G, p->meta, pol);
                else
                    gs = kvq_kivi_quantize_group(grp, &nsc[g], &nzr[g], &f,
                                                 &kr[kvq_vidkv_index(p, h, b * G, nl[j])], p->dim,
                                                 G, 1u, p->meta, pol);
                if (gs != KVQ_OK) { st = KVQ_E_RANGE; goto out; }
            }
    }
    memcpy(out->mask, mask, mb);
    if (na > 0u) {
        memcpy(out->abn_codes, ac, acb);
        memcpy(out->abn_scale, asc, nag * sizeof *asc);
        memcpy(out->abn_zero, azr, nag * sizeof *azr);
    }
    if (nn > 0u) {
        memcpy(out->nrm_codes, nc, ncb);
        memcpy(out->nrm_scale, nsc, nng * sizeof *nsc);
        if (mode == KVQ_VIDKV_NORMAL_MINMAX) memcpy(out->nrm_zero, nzr, nng * sizeof *nzr);
    }
    if (flags != NULL) *flags = f;
out:
    free(kr); free(mask); free(ac); free(nc); free(asc); free(azr); free(nsc); free(nzr);
    free(al); free(nl); free(comp); free(tc); free(ts);
    return st;
}

/* ---- dequantizer input checks [VIDKV-D-01..03] ------------------------------ */

static int popcount_row(const uint8_t *row, uint32_t d, uint32_t bytes)
{
    int n = 0;
    for (uint32_t c = 0; c < 8u * bytes; c++)
        if (kvq_vidkv_mask_get(row, c)) {
            if (c >= d) return -1;        /* a bit beyond d */
            n++;
        }
    return n;
}

/* Stored metadata value: finite (else NONFINITE), below the metadata domain
 * (else RANGE), binary16 exact under F16 (else PARAM); a scale also >= 0 and
 * zero or normal in its format. */
static kvq_status meta_ok(float v, int is_scale, uint32_t meta)
{
    if (!isfinite(v)) return KVQ_E_NONFINITE;
    if (fabsf(v) >= META_DOMAIN) return KVQ_E_RANGE;
    if (meta == KVQ_META_F16) {
        int ov;
        float r = kvq_round_f16(v, &ov);
        if (ov || r != v) return KVQ_E_PARAM;
    }
    if (is_scale && (v < 0.0f || (v != 0.0f && v < (meta == KVQ_META_F16 ? F16_MIN_NORMAL
                                                                           : F32_MIN_NORMAL))))
        return KVQ_E_PARAM;
    return KVQ_OK;
}

static kvq_status meta_all(const float *a, uint64_t n, int is_scale, uint32_t meta)
{
    for (uint64_t i = 0; i < n; i++) {
        kvq_status st = meta_ok(a[i], is_scale, meta);
        if (st != KVQ_OK) return st;
    }
    return KVQ_OK;
}

kvq_status kvq_vidkv_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                     const kvq_vidkv_params *p, const kvq_policy *pol)
{
    kvq_status st;
    uint32_t mode, na, nn, mper, G;
    uint32_t al[KVQ_VIDKV_MAX_DIM], nl[KVQ_VIDKV_MAX_DIM];
    float *tc = NULL, *ts = NULL, *yy = NULL;
    if (y == NULL || in == NULL || p == NULL || in->mask == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    if ((na > 0u && (in->abn_codes == NULL || in->abn_scale == NULL || in->abn_zero == NULL)) ||
        (nn > 0u && (in->nrm_codes == NULL || in->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && in->nrm_zero == NULL))))
        return KVQ_E_PARAM;
    mper = kvq_vidkv_nrm_per_block(p);
    G = p->group;
    for (uint32_t r = 0; r < kvq_vidkv_mask_rows(p); r++)
        if (popcount_row(in->mask + (uint64_t)r * kvq_vidkv_mask_row_bytes(p), p->dim,
                         kvq_vidkv_mask_row_bytes(p)) != (int)na)
            return KVQ_E_PARAM;
    if (na > 0u) {
        if ((st = meta_all(in->abn_scale, kvq_vidkv_abn_groups(p), 1, p->meta)) != KVQ_OK) return st;
        if ((st = meta_all(in->abn_zero, kvq_vidkv_abn_groups(p), 0, p->meta)) != KVQ_OK) return st;
    }
    if (nn > 0u) {
        if ((st = meta_all(in->nrm_scale, kvq_vidkv_nrm_groups(p), 1, p->meta)) != KVQ_OK) return st;
        if (mode == KVQ_VIDKV_NORMAL_MINMAX &&
            (st = meta_all(in->nrm_zero, kvq_vidkv_nrm_groups(p), 0, p->meta)) != KVQ_OK)
            return st;
    }
    yy = malloc(kvq_vidkv_elems(p) * sizeof *yy);
    if (yy == NULL) return KVQ_E_NOMEM;
    if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
        tc = malloc(nn * sizeof *tc);
        ts = malloc(nn * sizeof *ts);
        if (tc == NULL || ts == NULL) { st = KVQ_E_NOMEM; goto out; }
        twiddles(tc, ts, nn);
    }
    for (uint32_t h = 0; h < p->heads; h++) {
        const uint8_t *row = in->mask + kvq_vidkv_mask_row(p, h);
        (void)channel_list(al, row, p->dim, 1u);
        (void)channel_list(nl, row, p->dim, 0u);
        for (uint32_t t = 0; t < p->tokens; t++) {
            uint32_t b = t / G, i = t % G;
            float ab[2u * KVQ_VIDKV_MAX_DIM], xn[KVQ_VIDKV_MAX_DIM];
            for (uint32_t j = 0; j < na; j++) {
                uint64_t g = kvq_vidkv_abn_group(p, h, b, j);
                uint32_t c = kvq_unpack_code(in->abn_codes + g * kvq_vidkv_abn_group_bytes(p), i, 2u);
                yy[kvq_vidkv_index(p, h, t, al[j])] =
                    fmaf((float)c, in->abn_scale[g], in->abn_zero[g]); /* [KIVI-D-01] */
            }
            for (uint32_t j = 0; j < mper; j++) {
                uint64_t g = kvq_vidkv_nrm_group(p, h, b, j);
                uint32_t c = kvq_unpack_code(in->nrm_codes + g * kvq_vidkv_nrm_group_bytes(p), i, 1u);
                float s = in->nrm_scale[g];
                if (mode == KVQ_VIDKV_NORMAL_FFT)
                    ab[j] = c ? s : 0.0f;                          /* code * s [VIDKV-K-06] */
                else if (mode == KVQ_VIDKV_NORMAL_SIGNMEAN)
                    yy[kvq_vidkv_index(p, h, t, nl[j])] = c ? s : 0.0f;
                else
                    yy[kvq_vidkv_index(p, h, t, nl[j])] = fmaf((float)c, s, in->nrm_zero[g]);
            }
            if (mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u) {
                idft(xn, ab, nn, tc, ts);
                for (uint32_t j = 0; j < nn; j++) yy[kvq_vidkv_index(p, h, t, nl[j])] = xn[j];
            }
        }
    }
    memcpy(y, yy, kvq_vidkv_elems(p) * sizeof *yy);
    if (flags != NULL) *flags = 0u;
out:
    free(yy); free(tc); free(ts);
    return st;
}

/* ---- STP [VIDKV-STP-01..03] ------------------------------------------------ */

static kvq_status stp_check(const kvq_vidkv_params *p, const kvq_vidkv_stp *s)
{
    if (s == NULL || s->xs == NULL) return KVQ_E_PARAM;
    if (s->ds == 0u || s->ds > KVQ_VIDKV_MAX_SDIM || s->rows < p->tokens ||
        s->rows > KVQ_VIDKV_MAX_TOKENS || s->vis_count == 0u || s->txt_count == 0u ||
        s->vis_first > p->tokens || s->vis_count > p->tokens - s->vis_first ||
        s->txt_first > s->rows || s->txt_count > s->rows - s->txt_first)
        return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* Scores of the visual rows and the protection mask, from read score inputs. */
static kvq_status stp_core(float *score, uint8_t *prot, const float *xr,
                           const kvq_vidkv_params *p, const kvq_vidkv_stp *s)
{
    uint32_t np = kvq_vidkv_prot_count(p->protect, s->vis_count);
    float *tsum = malloc(s->ds * sizeof *tsum);
    if (tsum == NULL) return KVQ_E_NOMEM;
    for (uint32_t c = 0; c < s->ds; c++) {
        float a = 0.0f;
        for (uint32_t j = 0; j < s->txt_count; j++)
            a = a + xr[(uint64_t)(s->txt_first + j) * s->ds + c];   /* RN32 */
        tsum[c] = a;
    }
    for (uint32_t i = 0; i < s->vis_count; i++) {
        float a = 0.0f;
        const float *row = &xr[(uint64_t)(s->vis_first + i) * s->ds];
        for (uint32_t c = 0; c < s->ds; c++) {
            float pr = row[c] * tsum[c];                           /* RN32 */
            a = a + pr;                                            /* RN32 */
        }
        score[i] = a;
    }
    free(tsum);
    memset(prot, 0, kvq_vidkv_prot_mask_bytes(p));
    for (uint32_t i = 0; i < s->vis_count; i++) {
        uint32_t rank = 0;
        /* the visual tokens before i: greater score, or equal and lower index */
        for (uint32_t o = 0; o < s->vis_count && rank < np; o++)
            rank += (uint32_t)kvq_vidkv_before(score[o], o, score[i], i);
        if (rank < np) kvq_vidkv_mask_set(prot, s->vis_first + i);
    }
    return KVQ_OK;
}

kvq_status kvq_vidkv_stp_select(float *score, uint8_t *prot, uint32_t *flags,
                                const kvq_vidkv_params *p, const kvq_vidkv_stp *s,
                                const kvq_policy *pol)
{
    kvq_status st;
    uint32_t f = 0;
    uint64_t n;
    float *xr, *sc;
    uint8_t *pm;
    if (score == NULL || prot == NULL || p == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    if ((st = stp_check(p, s)) != KVQ_OK) return st;
    n = (uint64_t)s->rows * s->ds;
    xr = malloc(n * sizeof *xr);
    sc = malloc(s->vis_count * sizeof *sc);
    pm = malloc(kvq_vidkv_prot_mask_bytes(p));
    if (xr == NULL || sc == NULL || pm == NULL) { st = KVQ_E_NOMEM; goto out; }
    if ((st = read_all(xr, &f, s->xs, n, KVQ_VIDKV_SDOMAIN, pol)) != KVQ_OK) goto out;
    if ((st = stp_core(sc, pm, xr, p, s)) != KVQ_OK) goto out;
    memcpy(score, sc, s->vis_count * sizeof *sc);
    memcpy(prot, pm, kvq_vidkv_prot_mask_bytes(p));
    if (flags != NULL) *flags = f;
out:
    free(xr); free(sc); free(pm);
    return st;
}

/* ---- values [VIDKV-V-01..05] ------------------------------------------------ */

/* One ternary group of m members v[0 .. m-1] [VIDKV-V-02..04]. */
static kvq_status tern_group(uint8_t *grp, float *beta, uint32_t *flags, const float *v,
                             uint32_t m, const kvq_vidkv_params *p, const kvq_policy *pol)
{
    float S = 0.0f, B = 0.0f, mean, alpha;
    uint32_t nz = 0;
    for (uint32_t i = 0; i < m; i++) S = S + fabsf(v[i]);  /* RN32 each */
    mean = S / (float)m;                                   /* RN32 */
    alpha = p->gamma * mean;                               /* RN32 */
    uint8_t dg[KVQ_MAX_GROUP + 4u];
    memset(dg, 0, sizeof dg);                              /* unused slots: digit 0 */
    for (uint32_t i = 0; i < m; i++) {
        int32_t t = kvq_vidkv_trit(v[i], alpha);           /* [VIDKV-V-02] */
        dg[i] = (uint8_t)kvq_vidkv_trit_digit(t);
        if (t != 0) {
            B = B + fabsf(v[i]);                           /* RN32 */
            nz++;
        }
    }
    if (p->vpack == KVQ_VIDKV_PACK_BASE3) {
        /* each byte from its five digits [VIDKV-V-04] */
        for (uint32_t b = 0; b < kvq_vidkv_tern_group_bytes(p); b++)
            grp[b] = (uint8_t)kvq_vidkv_base3_byte(dg[5u * b], dg[5u * b + 1u], dg[5u * b + 2u],
                                                   dg[5u * b + 3u], dg[5u * b + 4u]);
    } else {
        memset(grp, 0, kvq_vidkv_tern_group_bytes(p));
        for (uint32_t i = 0; i < m; i++) kvq_pack_code(grp, i, 2u, dg[i]);
    }
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED)
        return store_scale(beta, flags, nz ? B / (float)nz : 0.0f, p->meta, pol);
    return KVQ_OK;
}

kvq_status kvq_vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *npo, uint32_t *flags,
                                     const float *v, const kvq_vidkv_params *p,
                                     const kvq_vidkv_stp *s, const kvq_policy *pol)
{
    kvq_status st;
    uint32_t f = 0, np = 0, nt, G, nbt, nbp, *lt = NULL, *lp = NULL;
    int stp;
    uint64_t n, ntg, npg, tcb, pcb;
    float *vr = NULL, *xr = NULL, *sc = NULL, *beta = NULL, *psc = NULL, *pzr = NULL;
    uint8_t *tern = NULL, *prot = NULL, *pc = NULL;
    if (out == NULL || npo == NULL || v == NULL || p == NULL || out->tern == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    stp = p->protect > 0.0f;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && out->beta == NULL) return KVQ_E_PARAM;
    if (stp) {
        if (out->prot == NULL || out->p_codes == NULL || out->p_scale == NULL ||
            out->p_zero == NULL)
            return KVQ_E_PARAM;
        if ((st = stp_check(p, s)) != KVQ_OK) return st;
        np = kvq_vidkv_prot_count(p->protect, s->vis_count);
    }
    G = p->group;
    n = kvq_vidkv_elems(p);
    nt = p->tokens - np;
    nbt = kvq_vidkv_list_blocks(nt, G);
    nbp = kvq_vidkv_list_blocks(np, G);
    ntg = kvq_vidkv_tern_groups(p, np);
    npg = kvq_vidkv_prot_groups(p, np);
    tcb = kvq_vidkv_tern_code_bytes(p, np);
    pcb = kvq_vidkv_prot_code_bytes(p, np);
    vr = malloc(n * sizeof *vr);
    tern = malloc(tcb + 1u);
    beta = malloc((ntg + 1u) * sizeof *beta);
    prot = malloc(kvq_vidkv_prot_mask_bytes(p));
    pc = malloc(pcb + 1u);
    psc = malloc((npg + 1u) * sizeof *psc);
    pzr = malloc((npg + 1u) * sizeof *pzr);
    lt = malloc(p->tokens * sizeof *lt);
    lp = malloc((np + 1u) * sizeof *lp);
    if (vr == NULL || tern == NULL || beta == NULL || prot == NULL || pc == NULL || psc == NULL ||
        pzr == NULL || lt == NULL || lp == NULL) { st = KVQ_E_NOMEM; goto out; }
    if (stp) {
        uint64_t ns = (uint64_t)s->rows * s->ds;
        /* every input's finiteness before any domain check [VIDKV-L-05] */
        for (uint64_t e = 0; e < ns; e++)
            if (!isfinite(s->xs[e])) { st = KVQ_E_NONFINITE; goto out; }
        xr = malloc(ns * sizeof *xr);
        sc = malloc(s->vis_count * sizeof *sc);
        if (xr == NULL || sc == NULL) { st = KVQ_E_NOMEM; goto out; }
    }
    if ((st = read_all(vr, &f, v, n, KVQ_VIDKV_DOMAIN, pol)) != KVQ_OK) goto out;
    memset(prot, 0, kvq_vidkv_prot_mask_bytes(p));
    if (stp) {
        if ((st = read_all(xr, &f, s->xs, (uint64_t)s->rows * s->ds, KVQ_VIDKV_SDOMAIN, pol)) !=
            KVQ_OK)
            goto out;
        if ((st = stp_core(sc, prot, xr, p, s)) != KVQ_OK) goto out;
    }
    {
        uint32_t a = 0, b = 0;
        for (uint32_t t = 0; t < p->tokens; t++) {
            if (kvq_vidkv_mask_get(prot, t)) lp[b++] = t;
            else lt[a++] = t;
        }
    }
    for (uint32_t h = 0; h < p->heads; h++)
        for (uint32_t c = 0; c < p->dim; c++) {
            float buf[KVQ_MAX_GROUP];
            for (uint32_t b = 0; b < nbt; b++) {
                uint32_t m = kvq_vidkv_block_members(nt, G, b);
                uint64_t g = kvq_vidkv_value_group(p, nbt, h, b, c);
                for (uint32_t i = 0; i < m; i++) buf[i] = vr[kvq_vidkv_index(p, h, lt[b * G + i], c)];
                if (tern_group(tern + g * kvq_vidkv_tern_group_bytes(p), &beta[g], &f, buf, m, p,
                               pol) != KVQ_OK) { st = KVQ_E_RANGE; goto out; }
            }
            for (uint32_t b = 0; b < nbp; b++) {
                uint32_t m = kvq_vidkv_block_members(np, G, b);
                uint64_t g = kvq_vidkv_value_group(p, nbp, h, b, c);
                uint8_t *grp = pc + g * (G / 4u);
                /* a short group repeats its first member [VIDKV-STP-03] */
                for (uint32_t i = 0; i < G; i++)
                    buf[i] = vr[kvq_vidkv_index(p, h, lp[b * G + (i < m ? i : 0u)], c)];
                if (kvq_kivi_quantize_group(grp, &psc[g], &pzr[g], &f, buf, 1u, G, 2u, p->meta,
                                            pol) != KVQ_OK) { st = KVQ_E_RANGE; goto out; }
                for (uint32_t i = m; i < G; i++) kvq_pack_code(grp, i, 2u, 0u);
            }
        }
    memcpy(out->tern, tern, tcb);
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED) memcpy(out->beta, beta, ntg * sizeof *beta);
    if (stp) {
        memcpy(out->prot, prot, kvq_vidkv_prot_mask_bytes(p));
        memcpy(out->p_codes, pc, pcb);
        memcpy(out->p_scale, psc, npg * sizeof *psc);
        memcpy(out->p_zero, pzr, npg * sizeof *pzr);
    }
    *npo = np;
    if (flags != NULL) *flags = f;
out:
    free(vr); free(xr); free(sc); free(tern); free(beta); free(prot); free(pc); free(psc);
    free(pzr); free(lt); free(lp);
    return st;
}

kvq_status kvq_vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in,
                                       uint32_t np, const kvq_vidkv_params *p,
                                       const kvq_policy *pol)
{
    kvq_status st;
    uint32_t nt, G, nbt, nbp, *pos = NULL;
    int stp;
    float *yy;
    if (y == NULL || in == NULL || p == NULL || in->tern == NULL) return KVQ_E_PARAM;
    if ((st = check_call(p, pol)) != KVQ_OK) return st;
    stp = p->protect > 0.0f;
    if ((p->vdeq == KVQ_VIDKV_VDEQ_SCALED && in->beta == NULL) ||
        (stp && (in->prot == NULL || in->p_codes == NULL || in->p_scale == NULL ||
                 in->p_zero == NULL)))
        return KVQ_E_PARAM;
    if ((!stp && np != 0u) || np > p->tokens) return KVQ_E_PARAM;
    if (stp && popcount_row(in->prot, p->tokens, kvq_vidkv_prot_mask_bytes(p)) != (int)np)
        return KVQ_E_PARAM;
    G = p->group;
    nt = p->tokens - np;
    nbt = kvq_vidkv_list_blocks(nt, G);
    nbp = kvq_vidkv_list_blocks(np, G);
    for (uint64_t g = 0; g < kvq_vidkv_tern_groups(p, np); g++) {
        uint32_t m = kvq_vidkv_block_members(nt, G, (uint32_t)((g / p->dim) % nbt));
        if (!kvq_vidkv_tern_group_ok(in->tern + g * kvq_vidkv_tern_group_bytes(p), m, p->vpack))
            return KVQ_E_PARAM;
    }
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED &&
        (st = meta_all(in->beta, kvq_vidkv_tern_groups(p, np), 1, p->meta)) != KVQ_OK)
        return st;
    if (stp && ((st = meta_all(in->p_scale, kvq_vidkv_prot_groups(p, np), 1, p->meta)) != KVQ_OK ||
                (st = meta_all(in->p_zero, kvq_vidkv_prot_groups(p, np), 0, p->meta)) != KVQ_OK))
        return st;
    yy = malloc(kvq_vidkv_elems(p) * sizeof *yy);
    pos = malloc(p->tokens * sizeof *pos);
    if (yy == NULL || pos == NULL) { st = KVQ_E_NOMEM; goto out; }
    {
        /* list position of every token in its list */
        uint32_t a = 0, b = 0;
        for (uint32_t t = 0; t < p->tokens; t++)
            pos[t] = (stp && kvq_vidkv_mask_get(in->prot, t)) ? b++ : a++;
    }
    for (uint32_t h = 0; h < p->heads; h++)
        for (uint32_t t = 0; t < p->tokens; t++) {
            int pr = stp && kvq_vidkv_mask_get(in->prot, t);
            uint32_t q = pos[t];
            for (uint32_t c = 0; c < p->dim; c++) {
                float r;
                if (pr) {
                    uint64_t g = kvq_vidkv_value_group(p, nbp, h, q / G, c);
                    uint32_t code = kvq_unpack_code(in->p_codes + g * (G / 4u), q % G, 2u);
                    r = fmaf((float)code, in->p_scale[g], in->p_zero[g]); /* [KIVI-D-01] */
                } else {
                    uint64_t g = kvq_vidkv_value_group(p, nbt, h, q / G, c);
                    int32_t tr = kvq_vidkv_digit_trit(
                        kvq_vidkv_tern_get(in->tern + g * kvq_vidkv_tern_group_bytes(p), q % G,
                                           p->vpack));
                    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED)
                        r = tr == 0 ? 0.0f : tr > 0 ? in->beta[g] : -in->beta[g];
                    else
                        r = tr == 0 ? 0.0f : tr > 0 ? 1.0f : -1.0f;   /* [VIDKV-V-03] */
                }
                yy[kvq_vidkv_index(p, h, t, c)] = r;
            }
        }
    memcpy(y, yy, kvq_vidkv_elems(p) * sizeof *yy);
    if (flags != NULL) *flags = 0u;
out:
    free(yy); free(pos);
    return st;
}
