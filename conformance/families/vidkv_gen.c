/*
 * families/vidkv_gen.c -- deterministic VIDKV conformance vectors and the
 * operations' exact-path solvers (spec/vectors.md [VEC-VIDKV-04..06],
 * [VEC-GEN-*]).
 *
 * Case k draws everything from its own generator, seeded from (seed, k).
 * Expected outputs come from the exact path only (ref/exact/vidkv.c); the
 * stream's composition is built here from the exact path's parts as
 * [VIDKV-W-01..02] say.  Ordinals: vidkv-keys, vidkv-values, vidkv-stream
 * regular cases, then one case of each error class, then the constructed
 * classes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_exact_vidkv.h"
#include "kvq_rng.h"
#include "vidkv.h"

/* ---- solvers [VER-REG-11] -------------------------------------------------------------- */

static kvq_status as_error_case(kvq_case *c, kvq_status st)
{
    kvq_case_drop_outputs(c);
    c->status = st;
    c->flags = 0;
    return KVQ_OK;
}

static kvq_status ensure_outputs(kvq_case *c)
{
    if (c->exp != NULL) return KVQ_OK;
    c->status = KVQ_OK;
    return kvq_case_alloc(c);
}

static kvq_vidkv_params keys_params(const kvq_vidkv_case_in *in)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(in->prm.heads, in->prm.tokens, in->prm.dim);
    p.group = in->prm.group;
    p.meta = in->prm.meta;
    p.split = in->prm.split;
    p.normal = in->prm.normal;
    p.key_frac = in->prm.key_frac;
    return p;
}

static kvq_vidkv_params values_params(const kvq_vidkv_case_in *in)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(in->prm.heads, in->prm.tokens, in->prm.dim);
    p.group = in->prm.group;
    p.meta = in->prm.meta;
    p.vdeq = in->prm.vdeq;
    p.vpack = in->prm.vpack;
    p.gamma = in->prm.gamma;
    p.protect = in->prm.protect;
    return p;
}

/* The exact path's key quantization of k under p into s (arrays the
 * caller's), and the dequantization of the result into lo/hi.  comp_amb,
 * s_lo, s_hi may be NULL outside the FFT. */
static kvq_status exact_keys(kvq_exact_vidkv_keys_out *o, double *lo, double *hi, const float *k,
                             const kvq_vidkv_params *p, const kvq_policy *pol)
{
    kvq_status st = kvq_exact_vidkv_quantize_keys(o, k, p, pol);
    if (st != KVQ_OK) return st;
    return kvq_exact_vidkv_key_deq_bounds(lo, hi, &o->k, p);
}

kvq_status kvq_vidkv_solve_keys(kvq_case *c)
{
    kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_params p = keys_params(in);
    kvq_vidkv_keys_out *ex;
    kvq_vidkv_keys_ref *rf;
    kvq_exact_vidkv_keys_out o;
    uint64_t n, namb = 0, nc;
    uint32_t m, G;
    double *lo = NULL, *hi = NULL;
    kvq_status st;
    if (!kvq_vidkv_params_ok(&p)) return as_error_case(c, KVQ_E_PARAM);
    if (!kvq_vidkv_shape_ok(&p)) return as_error_case(c, KVQ_E_SHAPE);
    if (ensure_outputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    ex = c->exp;
    rf = c->ref;
    n = kvq_vidkv_elems(&p);
    m = kvq_vidkv_nrm_per_block(&p);
    G = p.group;
    nc = (uint64_t)p.heads * p.tokens * m;
    memset(&o, 0, sizeof o);
    o.k = (kvq_vidkv_keys){ ex->mask, ex->abn_codes, ex->abn_scale, ex->abn_zero, ex->nrm_codes, ex->nrm_scale,
                            ex->nrm_zero };
    o.comp_amb = malloc(nc + 1u);
    o.s_lo = rf->s_lo;
    o.s_hi = rf->s_hi;
    lo = malloc((n + 1u) * sizeof *lo);
    hi = malloc((n + 1u) * sizeof *hi);
    if (o.comp_amb == NULL || lo == NULL || hi == NULL) { st = KVQ_E_NOMEM; goto out; }
    st = exact_keys(&o, lo, hi, in->k, &p, &c->pol);
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) { st = as_error_case(c, st); goto out; }
    c->flags = o.flags;
    /* the pinned dequantization (FFT: the middle of the accepted interval) */
    for (uint64_t e = 0; e < n; e++) ex->deq[e] = lo[e] == hi[e] ? (float)lo[e] : (float)(0.5 * lo[e] + 0.5 * hi[e]);
    if (kvq_vidkv_normal_mode(&p) == KVQ_VIDKV_NORMAL_FFT) {
        for (uint64_t e = 0; e < nc; e++) namb += o.comp_amb[e] != 0;
        rf->amb.n = namb;
        if (namb) {
            uint64_t j = 0;
            rf->amb.idx = malloc(namb * sizeof *rf->amb.idx);
            rf->amb.alt = malloc(namb);
            if (!rf->amb.idx || !rf->amb.alt) { st = KVQ_E_NOMEM; goto out; }
            for (uint64_t e = 0; e < nc; e++) {
                uint32_t t, h, comp, b;
                if (!o.comp_amb[e]) continue;
                comp = (uint32_t)(e % m);
                t = (uint32_t)(e / m % p.tokens);
                h = (uint32_t)(e / m / p.tokens);
                b = t / G;
                rf->amb.idx[j] = e;
                rf->amb.alt[j++] = (uint8_t)(1u - kvq_unpack_code(ex->nrm_codes + kvq_vidkv_nrm_group(&p, h, b, comp) *
                                                                                      (G / 8u), t % G, 1u));
            }
        }
    }
out:
    free(o.comp_amb);
    free(lo);
    free(hi);
    return st;
}

kvq_status kvq_vidkv_solve_values(kvq_case *c)
{
    kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_params p = values_params(in);
    kvq_vidkv_values_out *ex;
    kvq_exact_vidkv_values_out o;
    kvq_vidkv_stp s;
    uint64_t n;
    kvq_status st;
    if (!kvq_vidkv_params_ok(&p)) return as_error_case(c, KVQ_E_PARAM);
    if (!kvq_vidkv_shape_ok(&p)) return as_error_case(c, KVQ_E_SHAPE);
    s = (kvq_vidkv_stp){ in->xs, in->rows, in->sdim, in->vis_first, in->vis_count, in->txt_first, in->txt_count };
    memset(&o, 0, sizeof o);
    n = kvq_vidkv_elems(&p);
    if (p.protect > 0.0f && (s.ds == 0u || s.ds > KVQ_VIDKV_MAX_SDIM || s.rows < p.tokens ||
                             s.rows > KVQ_VIDKV_MAX_TOKENS || s.vis_count == 0u || s.txt_count == 0u ||
                             (uint64_t)s.vis_first + s.vis_count > p.tokens ||
                             (uint64_t)s.txt_first + s.txt_count > s.rows))
        return as_error_case(c, KVQ_E_SHAPE);
    if (ensure_outputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    ex = c->exp;
    o.v = (kvq_vidkv_values){ ex->tern, ex->beta, ex->prot, ex->p_codes, ex->p_scale, ex->p_zero };
    o.deq = ex->deq;
    o.code_real = malloc(n + 1u);
    o.amb = malloc(n + 1u);
    o.score = malloc(((uint64_t)in->vis_count + 1u) * sizeof *o.score);
    if (!o.code_real || !o.amb || !o.score) { st = KVQ_E_NOMEM; goto out; }
    st = kvq_exact_vidkv_quantize_values(&o, in->v, &p, p.protect > 0.0f ? &s : NULL, &c->pol);
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) { st = as_error_case(c, st); goto out; }
    if (o.np != in->protect_n) { st = KVQ_E_PARAM; goto out; } /* the case's n_p is not floor(p lv) */
    c->flags = o.flags;
    if (p.vdeq == KVQ_VIDKV_VDEQ_RAW) { /* [VIDKV-B-04]: the ambiguous elements and their other code */
        kvq_vidkv_values_ref *rf = c->ref;
        uint64_t na = 0, j = 0;
        for (uint64_t e = 0; e < n; e++) na += o.amb[e] != 0;
        rf->amb.n = na;
        if (na) {
            rf->amb.idx = malloc(na * sizeof *rf->amb.idx);
            rf->amb.alt = malloc(na);
            if (!rf->amb.idx || !rf->amb.alt) { st = KVQ_E_NOMEM; goto out; }
            for (uint64_t e = 0; e < n; e++) {
                int32_t sg, pin;
                if (!o.amb[e]) continue;
                sg = in->v[e] > 0.0f ? 1 : -1;                   /* an ambiguous v is not 0 */
                pin = ex->deq[e] == 0.0f ? 0 : sg;                /* the pinned code: raw deq is the code */
                rf->amb.idx[j] = e;
                rf->amb.alt[j++] = (uint8_t)(int8_t)(pin == 0 ? sg : 0);
            }
        }
    }
out:
    free(o.code_real);
    free(o.amb);
    free(o.score);
    return st;
}

/* dst [H][n][d] = rows [t0, t0 + n) of src [H][T][d]. */
static void take(float *dst, const float *src, uint32_t H, uint32_t T, uint32_t d, uint32_t t0, uint32_t n)
{
    for (uint32_t h = 0; h < H; h++)
        memcpy(dst + (size_t)h * n * d, src + ((size_t)h * T + t0) * d, (size_t)n * d * sizeof *dst);
}

/* out [H][q+n][d] = cache [H][q][d] followed by blk [H][n][d]. */
static void concat(float *out, const float *cache, const float *blk, uint32_t H, uint32_t q, uint32_t n,
                   uint32_t d)
{
    for (uint32_t h = 0; h < H; h++) {
        memcpy(out + (size_t)h * (q + n) * d, cache + (size_t)h * q * d, (size_t)q * d * sizeof *out);
        memcpy(out + ((size_t)h * (q + n) + q) * d, blk + (size_t)h * n * d, (size_t)n * d * sizeof *out);
    }
}

/* One key or value quantization of x [H][T][d] by the exact path and its
 * pinned dequantization into y; the events ORed into *flags. */
static kvq_status exact_round_trip(float *y, uint32_t *flags, const float *x, const kvq_vidkv_params *p,
                                   const kvq_vidkv_stp *stp, const kvq_policy *pol, int keys)
{
    uint64_t n = kvq_vidkv_elems(p);
    kvq_status st = KVQ_E_NOMEM;
    if (keys) {
        kvq_exact_vidkv_keys_out o;
        double *lo = malloc((n + 1u) * sizeof *lo), *hi = malloc((n + 1u) * sizeof *hi);
        memset(&o, 0, sizeof o);
        o.k.mask = calloc(kvq_vidkv_mask_bytes(p) + 1u, 1);
        o.k.abn_codes = calloc(kvq_vidkv_abn_code_bytes(p) + 1u, 1);
        o.k.abn_scale = calloc(kvq_vidkv_abn_groups(p) + 1u, 4);
        o.k.abn_zero = calloc(kvq_vidkv_abn_groups(p) + 1u, 4);
        o.k.nrm_codes = calloc(kvq_vidkv_nrm_code_bytes(p) + 1u, 1);
        o.k.nrm_scale = calloc(kvq_vidkv_nrm_groups(p) + 1u, 4);
        o.k.nrm_zero = calloc(kvq_vidkv_nrm_groups(p) + 1u, 4);
        if (lo && hi && o.k.mask && o.k.abn_codes && o.k.abn_scale && o.k.abn_zero && o.k.nrm_codes &&
            o.k.nrm_scale && o.k.nrm_zero) {
            st = exact_keys(&o, lo, hi, x, p, pol);
            for (uint64_t e = 0; st == KVQ_OK && e < n; e++) {
                if (lo[e] != hi[e]) st = KVQ_E_PARAM; /* the stream is pinned: no FFT [VEC-VIDKV-06] */
                y[e] = (float)lo[e];
            }
            if (st == KVQ_OK) *flags |= o.flags & ~KVQ_FLAG_AMBIGUOUS;
        }
        free(lo);
        free(hi);
        free(o.k.mask);
        free(o.k.abn_codes);
        free(o.k.abn_scale);
        free(o.k.abn_zero);
        free(o.k.nrm_codes);
        free(o.k.nrm_scale);
        free(o.k.nrm_zero);
        return st;
    }
    {
        kvq_exact_vidkv_values_out o;
        kvq_vidkv_params q = *p;
        uint32_t np = 0;
        if (stp == NULL) q.protect = 0.0f;
        else np = kvq_vidkv_prot_count(q.protect, stp->vis_count);
        memset(&o, 0, sizeof o);
        o.v.tern = calloc(kvq_vidkv_tern_code_bytes(&q, np) + 1u, 1);
        o.v.beta = calloc(kvq_vidkv_tern_groups(&q, np) + 1u, 4);
        o.v.prot = calloc(kvq_vidkv_prot_mask_bytes(&q) + 1u, 1);
        o.v.p_codes = calloc(kvq_vidkv_prot_code_bytes(&q, np) + 1u, 1);
        o.v.p_scale = calloc(kvq_vidkv_prot_groups(&q, np) + 1u, 4);
        o.v.p_zero = calloc(kvq_vidkv_prot_groups(&q, np) + 1u, 4);
        o.score = calloc((stp ? stp->vis_count : 0u) + 1u, 4);
        o.deq = y;
        o.code_real = malloc(n + 1u);
        o.amb = malloc(n + 1u);
        if (o.v.tern && o.v.beta && o.v.prot && o.v.p_codes && o.v.p_scale && o.v.p_zero && o.score &&
            o.code_real && o.amb) {
            st = kvq_exact_vidkv_quantize_values(&o, x, &q, stp, pol);
            if (st == KVQ_OK) *flags |= o.flags & ~KVQ_FLAG_AMBIGUOUS;
        }
        free(o.v.tern);
        free(o.v.beta);
        free(o.v.prot);
        free(o.v.p_codes);
        free(o.v.p_scale);
        free(o.v.p_zero);
        free(o.score);
        free(o.code_real);
        free(o.amb);
        return st;
    }
}

/* One cache's flush step [VIDKV-W-02]: requant requantizes the cache (q
 * tokens) followed by the block (n tokens); otherwise the block is quantized
 * on its own and appended. */
static kvq_status flush_step(float *cache, uint32_t *flags, const float *blk, uint32_t q, uint32_t n, int requant,
                             int keys, kvq_vidkv_params p, const kvq_vidkv_stp *stp, const kvq_policy *pol,
                             float *tmp, float *tmp2)
{
    kvq_status st;
    if (requant) {
        concat(tmp, cache, blk, p.heads, q, n, p.dim);
        p.tokens = q + n;
        if ((st = exact_round_trip(tmp2, flags, tmp, &p, NULL, pol, keys)) != KVQ_OK) return st;
        memcpy(cache, tmp2, (size_t)p.heads * (q + n) * p.dim * sizeof *cache);
        return KVQ_OK;
    }
    p.tokens = n;
    if ((st = exact_round_trip(tmp2, flags, blk, &p, stp, pol, keys)) != KVQ_OK) return st;
    concat(tmp, cache, tmp2, p.heads, q, n, p.dim);
    memcpy(cache, tmp, (size_t)p.heads * (q + n) * p.dim * sizeof *cache);
    return KVQ_OK;
}

/* vidkv-stream: prefill [VIDKV-W-01], then each decoded token joins the
 * residual and G of them flush [VIDKV-W-02], every step the exact path's. */
kvq_status kvq_vidkv_solve_stream(kvq_case *c)
{
    kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_params p = in->prm;
    kvq_vidkv_stream_out *ex;
    uint64_t N = (uint64_t)in->prefill + in->decode, n;
    uint32_t f = 0, q, pend, G, H, d, Tq;
    float *blk = NULL, *tmp = NULL, *tmp2 = NULL;
    kvq_status st = KVQ_OK;
    kvq_vidkv_stp stp = { in->xs, in->rows, in->sdim, in->vis_first, in->vis_count, in->txt_first,
                          in->txt_count };
    uint64_t nx;
    int with_stp;
    p.tokens = p.group;
    if (!kvq_vidkv_params_ok(&p)) return as_error_case(c, KVQ_E_PARAM);
    if (!kvq_vidkv_shape_ok(&p) || N < p.group || N > KVQ_VIDKV_MAX_TOKENS) return as_error_case(c, KVQ_E_SHAPE);
    H = p.heads;
    d = p.dim;
    G = p.group;
    n = (uint64_t)H * N * d;
    q = in->prefill - in->prefill % G;
    with_stp = p.protect > 0.0f;
    nx = with_stp ? (uint64_t)stp.rows * stp.ds : 0u;
    if (with_stp && (stp.ds == 0u || stp.ds > KVQ_VIDKV_MAX_SDIM || stp.rows < q || stp.rows > KVQ_VIDKV_MAX_TOKENS ||
                     stp.vis_count == 0u || stp.txt_count == 0u || (uint64_t)stp.vis_first + stp.vis_count > q ||
                     (uint64_t)stp.txt_first + stp.txt_count > stp.rows))
        return as_error_case(c, KVQ_E_SHAPE);
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(in->k[e]) || !isfinite(in->v[e])) return as_error_case(c, KVQ_E_NONFINITE);
    for (uint64_t e = 0; e < nx; e++)
        if (!isfinite(in->xs[e])) return as_error_case(c, KVQ_E_NONFINITE);
    for (uint64_t e = 0; e < n; e++)
        if (!(fabsf(in->k[e]) < KVQ_VIDKV_DOMAIN) || !(fabsf(in->v[e]) < KVQ_VIDKV_DOMAIN))
            return as_error_case(c, KVQ_E_RANGE);
    for (uint64_t e = 0; e < nx; e++)
        if (!(fabsf(in->xs[e]) < KVQ_VIDKV_SDOMAIN)) return as_error_case(c, KVQ_E_RANGE);
    if (ensure_outputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    ex = c->exp;
    Tq = (uint32_t)(N - N % G);
    blk = malloc(((size_t)H * Tq * d + 1u) * sizeof *blk);
    tmp = malloc(((size_t)H * Tq * d + 1u) * sizeof *tmp);
    tmp2 = malloc(((size_t)H * Tq * d + 1u) * sizeof *tmp2);
    if (!blk || !tmp || !tmp2) { st = KVQ_E_NOMEM; goto out; }
    pend = in->prefill % G;
    if (q > 0u) {
        take(blk, in->k, H, (uint32_t)N, d, 0u, q);
        if ((st = flush_step(ex->keys, &f, blk, 0u, q, 0, 1, p, NULL, &c->pol, tmp, tmp2)) != KVQ_OK) goto fail;
        take(blk, in->v, H, (uint32_t)N, d, 0u, q);
        if ((st = flush_step(ex->values, &f, blk, 0u, q, 0, 0, p, with_stp ? &stp : NULL, &c->pol, tmp, tmp2)) != KVQ_OK) goto fail;
    }
    for (uint32_t i = 0; i < in->decode; i++) {
        if (++pend < G) continue;
        pend = 0;
        take(blk, in->k, H, (uint32_t)N, d, q, G);
        if ((st = flush_step(ex->keys, &f, blk, q, G, p.kflush == KVQ_VIDKV_KFLUSH_REQUANT, 1, p, NULL, &c->pol, tmp,
                             tmp2)) != KVQ_OK)
            goto fail;
        take(blk, in->v, H, (uint32_t)N, d, q, G);
        if ((st = flush_step(ex->values, &f, blk, q, G, p.vflush == KVQ_VIDKV_VFLUSH_REQUANT, 0, p, NULL, &c->pol, tmp,
                             tmp2)) != KVQ_OK)
            goto fail;
        q += G;
    }
    c->flags = f;
    goto out;
fail:
    if (st != KVQ_E_NOMEM) st = as_error_case(c, st);
out:
    free(blk);
    free(tmp);
    free(tmp2);
    return st;
}

/* ---- the dequantizers on given stored data [VIDKV-D-01..03] ------------------------ */

kvq_status kvq_vidkv_solve_deq_keys(kvq_case *c)
{
    kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_params p = keys_params(in);
    kvq_vidkv_keys s;
    kvq_vidkv_deq_out *ex;
    kvq_vidkv_deq_ref *rf;
    double *lo, *hi;
    uint64_t n;
    int fft;
    kvq_status st;
    if (!kvq_vidkv_params_ok(&p)) return as_error_case(c, KVQ_E_PARAM);
    if (!kvq_vidkv_shape_ok(&p)) return as_error_case(c, KVQ_E_SHAPE);
    s = (kvq_vidkv_keys){ in->mask, in->abn_codes, in->abn_scale, in->abn_zero, in->nrm_codes, in->nrm_scale,
                          in->nrm_zero };
    n = kvq_vidkv_elems(&p);
    lo = malloc((n + 1u) * sizeof *lo);
    hi = malloc((n + 1u) * sizeof *hi);
    if (lo == NULL || hi == NULL) { st = KVQ_E_NOMEM; goto out; }
    st = kvq_exact_vidkv_key_deq_bounds(lo, hi, &s, &p);
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) { st = as_error_case(c, st); goto out; }
    if (ensure_outputs(c) != KVQ_OK) { st = KVQ_E_NOMEM; goto out; }
    ex = c->exp;
    rf = c->ref;
    fft = kvq_vidkv_normal_mode(&p) == KVQ_VIDKV_NORMAL_FFT;
    c->flags = 0u;
    for (uint64_t e = 0; e < n; e++) {
        ex->deq[e] = lo[e] == hi[e] ? (float)lo[e] : (float)(0.5 * lo[e] + 0.5 * hi[e]);
        if (fft) { /* binary32, rounded outward */
            float l = (float)lo[e], h = (float)hi[e];
            if ((double)l > lo[e]) l = nextafterf(l, -INFINITY);
            if ((double)h < hi[e]) h = nextafterf(h, INFINITY);
            rf->lo[e] = l;
            rf->hi[e] = h;
        }
    }
out:
    free(lo);
    free(hi);
    return st;
}

/* One stored metadata value [VIDKV-D-03]: finite, below 2^102, binary16 under
 * F16, a scale >= 0 and zero or normal in its format. */
static kvq_status stored_meta(float v, int is_scale, uint32_t meta)
{
    int ov = 0;
    if (!isfinite(v)) return KVQ_E_NONFINITE;
    if (fabsf(v) >= 0x1p102f) return KVQ_E_RANGE;
    if (meta == KVQ_META_F16 && (kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov) != v || ov)) return KVQ_E_PARAM;
    if (is_scale && (v < 0.0f || (v != 0.0f && v < (meta == KVQ_META_F16 ? 0x1p-14f : 0x1p-126f))))
        return KVQ_E_PARAM;
    return KVQ_OK;
}

static kvq_status stored_meta_all(const float *a, uint64_t n, int is_scale, uint32_t meta)
{
    for (uint64_t i = 0; i < n; i++) {
        kvq_status st = stored_meta(a[i], is_scale, meta);
        if (st != KVQ_OK) return st;
    }
    return KVQ_OK;
}

/* [VIDKV-V-06]: protected tokens by [KIVI-D-01], the others by [VIDKV-V-03],
 * after the checks of [VIDKV-D-02..03] in their order. */
kvq_status kvq_vidkv_solve_deq_values(kvq_case *c)
{
    kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_params p = values_params(in);
    kvq_vidkv_deq_out *ex;
    uint32_t np = in->protect_n, T, G, d, nt, nbt, nbp, a = 0, b = 0, cnt = 0;
    uint32_t *pos;
    int stp;
    kvq_status st = KVQ_OK;
    if (!kvq_vidkv_params_ok(&p)) return as_error_case(c, KVQ_E_PARAM);
    if (!kvq_vidkv_shape_ok(&p)) return as_error_case(c, KVQ_E_SHAPE);
    T = p.tokens;
    G = p.group;
    d = p.dim;
    stp = p.protect > 0.0f;
    if ((!stp && np != 0u) || np > T) return as_error_case(c, KVQ_E_PARAM);
    if (stp) { /* [VIDKV-D-02]: exactly n_p bits among T, none beyond */
        for (uint32_t t = 0; t < 8u * kvq_vidkv_prot_mask_bytes(&p); t++)
            if ((in->prot[t / 8u] >> (t % 8u)) & 1u) {
                if (t >= T) return as_error_case(c, KVQ_E_PARAM);
                cnt++;
            }
        if (cnt != np) return as_error_case(c, KVQ_E_PARAM);
    }
    nt = T - np;
    nbt = kvq_vidkv_list_blocks(nt, G);
    nbp = kvq_vidkv_list_blocks(np, G);
    for (uint64_t g = 0; g < kvq_vidkv_tern_groups(&p, np); g++) { /* [VIDKV-V-04]: used slots only */
        const uint8_t *grp = in->tern + g * kvq_vidkv_tern_group_bytes(&p);
        uint32_t m = kvq_vidkv_block_members(nt, G, (uint32_t)(g / d % nbt));
        for (uint32_t i = 0; i < m; i++)
            if (p.vpack == KVQ_VIDKV_PACK_BASE3 ? grp[i / 5u] > 242u : ((grp[i / 4u] >> (2u * (i % 4u))) & 3u) == 3u)
                return as_error_case(c, KVQ_E_PARAM);
    }
    if (p.vdeq == KVQ_VIDKV_VDEQ_SCALED &&
        (st = stored_meta_all(in->beta, kvq_vidkv_tern_groups(&p, np), 1, p.meta)) != KVQ_OK)
        return as_error_case(c, st);
    if (stp && ((st = stored_meta_all(in->p_scale, kvq_vidkv_prot_groups(&p, np), 1, p.meta)) != KVQ_OK ||
                (st = stored_meta_all(in->p_zero, kvq_vidkv_prot_groups(&p, np), 0, p.meta)) != KVQ_OK))
        return as_error_case(c, st);
    if (ensure_outputs(c) != KVQ_OK) return KVQ_E_NOMEM;
    ex = c->exp;
    pos = malloc(((size_t)T + 1u) * sizeof *pos);
    if (pos == NULL) return KVQ_E_NOMEM;
    for (uint32_t t = 0; t < T; t++) pos[t] = stp && ((in->prot[t / 8u] >> (t % 8u)) & 1u) ? b++ : a++;
    for (uint32_t h = 0; h < p.heads; h++)
        for (uint32_t t = 0; t < T; t++) {
            int pr = stp && ((in->prot[t / 8u] >> (t % 8u)) & 1u);
            uint32_t q = pos[t];
            for (uint32_t ch = 0; ch < d; ch++) {
                float y;
                if (pr) {
                    uint64_t g = ((uint64_t)h * nbp + q / G) * d + ch;
                    int ov;
                    uint32_t code = (in->p_codes[g * (G / 4u) + (q % G) / 4u] >> (2u * (q % 4u))) & 3u;
                    y = kvq_exact_kivi_deq(code, in->p_scale[g], in->p_zero[g], &ov);
                } else {
                    uint64_t g = ((uint64_t)h * nbt + q / G) * d + ch;
                    const uint8_t *grp = in->tern + g * kvq_vidkv_tern_group_bytes(&p);
                    uint32_t i = q % G, dg = p.vpack == KVQ_VIDKV_PACK_BASE3
                                                 ? grp[i / 5u] / (i % 5u == 0u ? 1u : i % 5u == 1u ? 3u : i % 5u == 2u ? 9u
                                                                                     : i % 5u == 3u ? 27u : 81u) % 3u
                                                 : (grp[i / 4u] >> (2u * (i % 4u))) & 3u;
                    float tr = dg == 1u ? 1.0f : dg == 2u ? -1.0f : 0.0f; /* digits {0, 1, 2} = {0, +1, -1} */
                    y = p.vdeq == KVQ_VIDKV_VDEQ_SCALED ? (dg == 0u ? 0.0f : tr * in->beta[g]) : (dg == 0u ? 0.0f : tr);
                }
                ex->deq[((uint64_t)h * T + t) * d + ch] = y;
            }
        }
    free(pos);
    c->flags = 0u;
    return KVQ_OK;
}

/* ---- generation [VEC-VIDKV-04..05] ---------------------------------------------------- */

/* A binary16 number as a binary16 KV cache holds (magnitude 2^-6 .. 2^6). */
static float half_value(kvq_rng *r, float a)
{
    int ov;
    return kvq_exact_round_float(a * kvq_rng_sym(r), &kvq_xfmt_binary16, &ov);
}

/* Keys [H][T][d]: per channel a scale and an offset, a few outlier channels
 * (the abnormal ones the split finds), binary16-valued in half the cases. */
static void fill_keys(float *k, const kvq_vidkv_params *p, kvq_rng *r, int half)
{
    for (uint32_t c = 0; c < p->dim; c++) {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 6) - 3) * (kvq_rng_below(r, 4) == 0 ? 16.0f : 1.0f);
        float off = a * kvq_rng_sym(r);
        for (uint32_t h = 0; h < p->heads; h++) {
            float ah = a * (1.0f + (float)kvq_rng_below(r, 3)); /* heads differ: per-head splits differ */
            for (uint32_t t = 0; t < p->tokens; t++)
                k[kvq_vidkv_index(p, h, t, c)] = half ? half_value(r, ah) + off : off + ah * kvq_rng_sym(r);
        }
    }
}

static void fill_plain(float *x, uint64_t n, kvq_rng *r, int half)
{
    for (uint64_t e = 0; e < n; e++) {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 5) - 2);
        x[e] = half ? half_value(r, a) : a * kvq_rng_sym(r);
        if (kvq_rng_below(r, 16) == 0) x[e] = 0.0f;
    }
}

static void draw_policy(kvq_case *c, kvq_rng *r)
{
    c->pol = kvq_policy_default;
    if (kvq_rng_below(r, 6) == 0) c->pol.ties = KVQ_TIES_AWAY;
    if (kvq_rng_below(r, 6) == 0) c->pol.overflow = KVQ_OVERFLOW_NAN;
    if (kvq_rng_below(r, 6) == 0) c->pol.subnormal = KVQ_SUBNORMAL_DAZ;
}

static const uint32_t DIMS[] = { 3, 5, 6, 7, 10, 12, 13, 20, 24 };

/* key configurations: f, normal (the levels follow: FFT bounded, else exact) */
static const struct { float f; uint32_t normal; const char *name; } KCONF[] = {
    { 0.5f, KVQ_VIDKV_NORMAL_AUTO, "fft50" },      { 0.75f, KVQ_VIDKV_NORMAL_AUTO, "fft75" },
    { 0.25f, KVQ_VIDKV_NORMAL_AUTO, "minmax25" },  { 0.5f, KVQ_VIDKV_NORMAL_SIGNMEAN, "signmean50" },
    { 0.5f, KVQ_VIDKV_NORMAL_MINMAX, "minmax50" }, { 0.0f, KVQ_VIDKV_NORMAL_AUTO, "minmax0" },
    { 1.0f, KVQ_VIDKV_NORMAL_AUTO, "abn100" },     { 0.25f, KVQ_VIDKV_NORMAL_FFT, "fft25" },
};

static kvq_status begin(kvq_case *c, const kvq_op *op, kvq_rng *r)
{
    if (kvq_case_begin(c, op) != KVQ_OK) return KVQ_E_NOMEM;
    (void)kvq_rng_next(r);
    return KVQ_OK;
}

static void keys_shape(kvq_vidkv_case_in *in, kvq_rng *r, int smoke)
{
    static const uint32_t GS[3] = { 8, 16, 32 };
    in->prm = kvq_vidkv_params_default(1u + kvq_rng_below(r, 3), 0u, DIMS[kvq_rng_below(r, KVQ_NELEMS(DIMS))]);
    in->prm.group = GS[kvq_rng_below(r, smoke ? 2 : 3)];
    in->prm.tokens = in->prm.group * (1u + kvq_rng_below(r, smoke ? 2 : 3));
}

static kvq_status make_keys(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint64_t j, int smoke)
{
    kvq_rng r = { seed ^ (0x9E3779B97F4A7C15ull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    uint32_t conf = (uint32_t)(j % KVQ_NELEMS(KCONF));
    if (begin(c, &kvq_op_vidkv_keys, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    keys_shape(in, &r, smoke);
    in->prm.key_frac = KCONF[conf].f;
    in->prm.normal = KCONF[conf].normal;
    in->prm.split = (uint32_t)(j / KVQ_NELEMS(KCONF) % 2u);
    in->prm.meta = (uint32_t)(j / (2u * KVQ_NELEMS(KCONF)) % 2u) ? KVQ_META_F32 : KVQ_META_F16;
    in->abnormal = kvq_vidkv_n_abn(&in->prm);
    c->level = kvq_vidkv_normal_mode(&in->prm) == KVQ_VIDKV_NORMAL_FFT ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT;
    draw_policy(c, &r);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-keys-%s", tag, (unsigned long long)k, KCONF[conf].name);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_keys(in->k, &in->prm, &r, (int)kvq_rng_below(&r, 2));
    return c->op->solve(c);
}

/* STP ranges: visual rows inside the T tokens, text rows anywhere in rows. */
static void draw_stp(kvq_vidkv_case_in *in, kvq_rng *r)
{
    uint32_t T = in->prm.tokens;
    in->rows = T + kvq_rng_below(r, 5);
    in->sdim = 1u + kvq_rng_below(r, 8);
    in->vis_first = kvq_rng_below(r, T / 4u + 1u);
    in->vis_count = T - in->vis_first - kvq_rng_below(r, (T - in->vis_first) / 4u + 1u);
    in->txt_count = 1u + kvq_rng_below(r, 6);
    if (in->txt_count > in->rows) in->txt_count = in->rows;
    in->txt_first = kvq_rng_below(r, in->rows - in->txt_count + 1u);
}

static void set_protected(kvq_vidkv_case_in *in)
{
    in->protect_n = in->prm.protect > 0.0f ? kvq_vidkv_prot_count(in->prm.protect, in->vis_count) : 0u;
}

static kvq_status make_values(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint64_t j, int smoke)
{
    static const float GAMMAS[4] = { 0.7f, 0.5f, 1.0f, 0.0f };
    static const float PROTECT[3] = { 0.0f, 0.2f, 0.5f };
    kvq_rng r = { seed ^ (0xD1B54A32D192ED03ull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    uint32_t stp = (uint32_t)(j / 8u % 3u);
    if (begin(c, &kvq_op_vidkv_values, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    keys_shape(in, &r, smoke);
    in->prm.vdeq = (uint32_t)(j % 2u);
    in->prm.vpack = (uint32_t)(j / 2u % 2u);
    in->prm.meta = (uint32_t)(j / 4u % 2u) ? KVQ_META_F32 : KVQ_META_F16;
    in->prm.gamma = kvq_rng_below(&r, 4) ? GAMMAS[kvq_rng_below(&r, 4)] : 2.0f * kvq_rng_unit(&r);
    in->prm.protect = PROTECT[stp];
    if (stp) draw_stp(in, &r);
    set_protected(in);
    /* raw values at the bounded level in half their cases [VIDKV-B-04] */
    c->level = in->prm.vdeq == KVQ_VIDKV_VDEQ_RAW && (j / 4u + j / 8u) % 2u ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT;
    draw_policy(c, &r);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-values-%s-%s%s", tag, (unsigned long long)k,
             in->prm.vdeq ? "scaled" : "raw", in->prm.vpack ? "bits2" : "base3", stp ? "-stp" : "");
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    fill_plain(in->v, kvq_vidkv_elems(&in->prm), &r, (int)kvq_rng_below(&r, 2));
    if (stp) fill_plain(in->xs, (uint64_t)in->rows * in->sdim, &r, 0);
    return c->op->solve(c);
}

static kvq_status make_stream(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint64_t j, int smoke)
{
    static const struct { float f; uint32_t normal; } SC[4] = {
        { 0.25f, KVQ_VIDKV_NORMAL_AUTO }, { 0.5f, KVQ_VIDKV_NORMAL_SIGNMEAN },
        { 0.5f, KVQ_VIDKV_NORMAL_MINMAX }, { 0.0f, KVQ_VIDKV_NORMAL_AUTO } };
    kvq_rng r = { seed ^ (0x94D049BB133111EBull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    uint32_t G, N, sc;
    if (begin(c, &kvq_op_vidkv_stream, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    G = smoke || kvq_rng_below(&r, 2) ? 8u : 16u;
    in->prm = kvq_vidkv_params_default(1u + kvq_rng_below(&r, 2), 0u, DIMS[kvq_rng_below(&r, 6)]);
    in->prm.tokens = 0u;
    in->prm.group = G;
    in->prm.kflush = (uint32_t)(j % 2u);
    in->prm.vflush = (uint32_t)(j / 2u % 2u);
    sc = (uint32_t)(j / 4u % 4u);
    in->prm.key_frac = SC[sc].f;
    in->prm.normal = SC[sc].normal;
    in->prm.split = kvq_rng_below(&r, 2);
    in->prm.meta = kvq_rng_below(&r, 2) ? KVQ_META_F32 : KVQ_META_F16;
    in->prm.vdeq = kvq_rng_below(&r, 2);
    in->prm.vpack = kvq_rng_below(&r, 2);
    in->prm.gamma = kvq_rng_below(&r, 2) ? 0.7f : 0.5f;
    in->prefill = kvq_rng_below(&r, 3u * G);
    if (j % 3u == 2u) { /* STP at prefill [VIDKV-W-01]: at least one quantized block */
        in->prefill += G;
        in->prm.protect = j % 2u ? 0.25f : 0.5f;
        in->prm.tokens = in->prefill - in->prefill % G;
        draw_stp(in, &r);
        in->prm.tokens = 0u;
    }
    N = G * (2u + kvq_rng_below(&r, smoke ? 2 : 4)) + kvq_rng_below(&r, G);
    if (N < in->prefill + 1u) N = in->prefill + 1u;
    in->decode = N - in->prefill;
    c->level = KVQ_LEVEL_EXACT;
    draw_policy(c, &r);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-stream-k%s-v%s%s", tag, (unsigned long long)k,
             in->prm.kflush ? "append" : "requant", in->prm.vflush ? "requant" : "append",
             in->prm.protect > 0.0f ? "-stp" : "");
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    {
        kvq_vidkv_params p = in->prm;
        p.tokens = N;
        fill_keys(in->k, &p, &r, (int)kvq_rng_below(&r, 2));
        fill_plain(in->v, kvq_vidkv_elems(&p), &r, (int)kvq_rng_below(&r, 2));
        if (in->prm.protect > 0.0f) fill_plain(in->xs, (uint64_t)in->rows * in->sdim, &r, 0);
    }
    return c->op->solve(c);
}

/* Stored keys of the case's parameters: an exact-path quantization of drawn
 * keys written into the case's stored inputs (the FFT codes the real ones). */
static kvq_status stored_keys(kvq_vidkv_case_in *in, kvq_rng *r)
{
    kvq_vidkv_params p = keys_params(in);
    kvq_exact_vidkv_keys_out o;
    uint64_t n = kvq_vidkv_elems(&p);
    float *k = malloc((n + 1u) * sizeof *k);
    kvq_status st = KVQ_E_NOMEM;
    memset(&o, 0, sizeof o);
    o.k = (kvq_vidkv_keys){ in->mask, in->abn_codes, in->abn_scale, in->abn_zero, in->nrm_codes, in->nrm_scale,
                            in->nrm_zero };
    o.comp_amb = malloc((uint64_t)p.heads * p.tokens * kvq_vidkv_nrm_per_block(&p) + 1u);
    o.s_lo = malloc((kvq_vidkv_nrm_groups(&p) + 1u) * 4u);
    o.s_hi = malloc((kvq_vidkv_nrm_groups(&p) + 1u) * 4u);
    if (k && o.comp_amb && o.s_lo && o.s_hi) {
        fill_keys(k, &p, r, (int)kvq_rng_below(r, 2));
        st = kvq_exact_vidkv_quantize_keys(&o, k, &p, &kvq_policy_default);
    }
    free(k);
    free(o.comp_amb);
    free(o.s_lo);
    free(o.s_hi);
    return st;
}

/* Stored values: an exact-path quantization (with STP when p > 0). */
static kvq_status stored_values(kvq_vidkv_case_in *in, kvq_rng *r)
{
    kvq_vidkv_params p = values_params(in);
    kvq_exact_vidkv_values_out o;
    kvq_vidkv_stp s = { NULL, in->rows, in->sdim, in->vis_first, in->vis_count, in->txt_first, in->txt_count };
    uint64_t n = kvq_vidkv_elems(&p), nx = (uint64_t)in->rows * in->sdim;
    float *v = malloc((n + 1u) * sizeof *v), *xs = malloc((nx + 1u) * sizeof *xs);
    kvq_status st = KVQ_E_NOMEM;
    memset(&o, 0, sizeof o);
    o.v = (kvq_vidkv_values){ in->tern, in->beta, in->prot, in->p_codes, in->p_scale, in->p_zero };
    o.deq = malloc((n + 1u) * sizeof *o.deq);
    o.code_real = malloc(n + 1u);
    o.amb = malloc(n + 1u);
    o.score = malloc(((uint64_t)in->vis_count + 1u) * sizeof *o.score);
    if (v && xs && o.deq && o.code_real && o.amb && o.score) {
        fill_plain(v, n, r, (int)kvq_rng_below(r, 2));
        fill_plain(xs, nx, r, 0);
        s.xs = xs;
        st = kvq_exact_vidkv_quantize_values(&o, v, &p, p.protect > 0.0f ? &s : NULL, &kvq_policy_default);
        if (st == KVQ_OK && o.np != in->protect_n) st = KVQ_E_PARAM;
    }
    free(v);
    free(xs);
    free(o.deq);
    free(o.code_real);
    free(o.amb);
    free(o.score);
    return st;
}

static kvq_status make_deq_keys(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint64_t j, int smoke)
{
    kvq_rng r = { seed ^ (0xBF58476D1CE4E5B9ull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    uint32_t conf = (uint32_t)(j % KVQ_NELEMS(KCONF));
    if (begin(c, &kvq_op_vidkv_deq_keys, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    keys_shape(in, &r, smoke);
    in->prm.key_frac = KCONF[conf].f;
    in->prm.normal = KCONF[conf].normal;
    in->prm.split = (uint32_t)(j / KVQ_NELEMS(KCONF) % 2u);
    in->prm.meta = kvq_rng_below(&r, 2) ? KVQ_META_F32 : KVQ_META_F16;
    in->abnormal = kvq_vidkv_n_abn(&in->prm);
    c->level = kvq_vidkv_normal_mode(&in->prm) == KVQ_VIDKV_NORMAL_FFT ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT;
    draw_policy(c, &r);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-deq-keys-%s", tag, (unsigned long long)k, KCONF[conf].name);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (stored_keys(in, &r) != KVQ_OK) return KVQ_E_PARAM; /* a defect of the generator */
    return c->op->solve(c);
}

static kvq_status make_deq_values(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint64_t j, int smoke)
{
    kvq_rng r = { seed ^ (0x2545F4914F6CDD1Dull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    int stp = (int)(j / 4u % 2u);
    if (begin(c, &kvq_op_vidkv_deq_values, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    keys_shape(in, &r, smoke);
    in->prm.vdeq = (uint32_t)(j % 2u);
    in->prm.vpack = (uint32_t)(j / 2u % 2u);
    in->prm.meta = kvq_rng_below(&r, 2) ? KVQ_META_F32 : KVQ_META_F16;
    in->prm.protect = stp ? 0.5f : 0.0f;
    if (stp) draw_stp(in, &r);
    set_protected(in);
    c->level = KVQ_LEVEL_EXACT;
    draw_policy(c, &r);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-deq-values-%s-%s%s", tag, (unsigned long long)k,
             in->prm.vdeq ? "scaled" : "raw", in->prm.vpack ? "bits2" : "base3", stp ? "-stp" : "");
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (stored_values(in, &r) != KVQ_OK) return KVQ_E_PARAM;
    return c->op->solve(c);
}

/* ---- error cases: one per class, each a row of spec/vidkv.md's bad-input table ---- */

enum { E_OP_KEYS, E_OP_VALUES, E_OP_STREAM, E_OP_DEQ_KEYS, E_OP_DEQ_VALUES };
static const struct { int op; const char *name; } ERRS[] = {
    { E_OP_KEYS, "group12" },          /* row 3 */
    { E_OP_KEYS, "group4104" },        /* row 3 */
    { E_OP_KEYS, "frac-neg" },         /* row 4 */
    { E_OP_KEYS, "frac-nan" },         /* row 4 */
    { E_OP_KEYS, "frac-above-1" },     /* row 4 */
    { E_OP_KEYS, "split2" },           /* row 7 */
    { E_OP_KEYS, "normal4" },          /* row 7 */
    { E_OP_KEYS, "meta2" },            /* row 7 */
    { E_OP_KEYS, "dim0" },             /* row 8 */
    { E_OP_KEYS, "dim1025" },          /* row 8 */
    { E_OP_KEYS, "heads0" },           /* row 8 */
    { E_OP_KEYS, "tokens0" },          /* row 9 */
    { E_OP_KEYS, "tokens-ragged" },    /* row 9 */
    { E_OP_KEYS, "nan" },              /* row 12 */
    { E_OP_KEYS, "ninf" },             /* row 12 */
    { E_OP_KEYS, "range-2p100" },      /* row 13 */
    { E_OP_KEYS, "f16-overflow-nan" }, /* row 14 */
    { E_OP_VALUES, "protect-neg" },    /* row 5 */
    { E_OP_VALUES, "protect-nan" },    /* row 5 */
    { E_OP_VALUES, "gamma-nan" },      /* row 6 */
    { E_OP_VALUES, "gamma-neg" },      /* row 6 */
    { E_OP_VALUES, "gamma-17" },       /* row 6 */
    { E_OP_VALUES, "vdeq2" },          /* row 7 */
    { E_OP_VALUES, "vpack2" },         /* row 7 */
    { E_OP_VALUES, "stp-no-visual" },  /* row 10 */
    { E_OP_VALUES, "stp-visual-past-tokens" }, /* row 10 */
    { E_OP_VALUES, "stp-no-text" },    /* row 11 */
    { E_OP_VALUES, "stp-text-past-rows" }, /* row 11 */
    { E_OP_VALUES, "stp-sdim0" },      /* row 11 */
    { E_OP_VALUES, "pinf" },           /* row 12 */
    { E_OP_VALUES, "score-nan" },      /* row 12 */
    { E_OP_VALUES, "range-2p100" },    /* row 13 */
    { E_OP_VALUES, "score-2p32" },     /* row 13 */
    { E_OP_VALUES, "beta-f16-overflow-nan" }, /* row 14 */
    { E_OP_STREAM, "kflush2" },        /* row 7 */
    { E_OP_STREAM, "vflush2" },        /* row 7 */
    { E_OP_STREAM, "short" },          /* fewer than G tokens: [VIDKV-W-01] */
    { E_OP_STREAM, "decode-nan" },     /* row 12 */
    { E_OP_STREAM, "stp-visual-past-prefill" }, /* row 10 */
    { E_OP_DEQ_KEYS, "mask-count" },          /* row 15 */
    { E_OP_DEQ_KEYS, "mask-beyond-dim" },     /* row 15 */
    { E_OP_DEQ_KEYS, "abn-scale-nan" },       /* row 17 */
    { E_OP_DEQ_KEYS, "nrm-scale-inf" },       /* row 17 */
    { E_OP_DEQ_KEYS, "abn-zero-2p102" },      /* row 18 */
    { E_OP_DEQ_KEYS, "abn-scale-subnormal" }, /* row 19 */
    { E_OP_DEQ_KEYS, "nrm-scale-not-f16" },   /* row 19 */
    { E_OP_DEQ_KEYS, "abn-scale-negative" },  /* [VIDKV-D-03] scales >= 0 */
    { E_OP_DEQ_VALUES, "prot-count" },        /* row 15 */
    { E_OP_DEQ_VALUES, "base3-243" },         /* row 16 */
    { E_OP_DEQ_VALUES, "bits2-field3" },      /* row 16 */
    { E_OP_DEQ_VALUES, "beta-nan" },          /* row 17 */
    { E_OP_DEQ_VALUES, "p-zero-2p102" },      /* row 18 */
    { E_OP_DEQ_VALUES, "beta-subnormal" },    /* row 19 */
    { E_OP_DEQ_VALUES, "p-scale-not-f16" },   /* row 19 */
    { E_OP_DEQ_VALUES, "np-without-stp" },    /* [VIDKV-D-01]: n_p with p = 0 */
};
#define E_COUNT KVQ_NELEMS(ERRS)

/* A dequantizer error case: valid stored data with one defect planted. */
static kvq_status make_deq_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    const char *nm = ERRS[which].name;
    int keys = ERRS[which].op == E_OP_DEQ_KEYS;
    if (begin(c, keys ? &kvq_op_vidkv_deq_keys : &kvq_op_vidkv_deq_values, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    c->pol = kvq_policy_default;
    c->level = KVQ_LEVEL_EXACT;
    in->prm = kvq_vidkv_params_default(2u, 16u, 6u);
    in->prm.group = 8u;
    in->prm.key_frac = 0.25f;            /* n_a = 2, minmax */
    in->prm.vdeq = KVQ_VIDKV_VDEQ_SCALED;
    in->prm.protect = 0.25f;
    in->prm.vpack = strcmp(nm, "bits2-field3") == 0 ? KVQ_VIDKV_PACK_BITS2 : KVQ_VIDKV_PACK_BASE3;
    if (!strcmp(nm, "abn-scale-subnormal") || !strcmp(nm, "beta-subnormal")) in->prm.meta = KVQ_META_F32;
    in->rows = 20u;
    in->sdim = 4u;
    in->vis_first = 2u;
    in->vis_count = 12u;                 /* n_p = 3 */
    in->txt_first = 16u;
    in->txt_count = 3u;
    in->abnormal = kvq_vidkv_n_abn(&in->prm);
    set_protected(in);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-err-%s", tag, (unsigned long long)k, nm);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if ((keys ? stored_keys(in, &r) : stored_values(in, &r)) != KVQ_OK) return KVQ_E_PARAM;
    if (!strcmp(nm, "mask-count")) { /* one more abnormal channel */
        for (uint32_t ch = 0; ch < in->prm.dim; ch++)
            if (!((in->mask[ch / 8u] >> (ch % 8u)) & 1u)) { in->mask[ch / 8u] |= (uint8_t)(1u << (ch % 8u)); break; }
    }
    if (!strcmp(nm, "mask-beyond-dim")) in->mask[0] |= 0x80u; /* bit 7, past d = 6 */
    if (!strcmp(nm, "abn-scale-nan")) in->abn_scale[1] = NAN;
    if (!strcmp(nm, "nrm-scale-inf")) in->nrm_scale[2] = INFINITY;
    if (!strcmp(nm, "abn-zero-2p102")) in->abn_zero[0] = -0x1p102f;
    if (!strcmp(nm, "abn-scale-subnormal")) in->abn_scale[0] = 0x1p-130f;
    if (!strcmp(nm, "nrm-scale-not-f16")) in->nrm_scale[0] = 1.0001f;
    if (!strcmp(nm, "abn-scale-negative")) in->abn_scale[0] = -0.5f;
    if (!strcmp(nm, "prot-count")) { /* one more protected token */
        for (uint32_t t = 0; t < in->prm.tokens; t++)
            if (!((in->prot[t / 8u] >> (t % 8u)) & 1u)) { in->prot[t / 8u] |= (uint8_t)(1u << (t % 8u)); break; }
    }
    if (!strcmp(nm, "base3-243")) in->tern[0] = 243u;
    if (!strcmp(nm, "bits2-field3")) in->tern[0] |= 3u; /* slot 0 */
    if (!strcmp(nm, "beta-nan")) in->beta[0] = NAN;
    if (!strcmp(nm, "p-zero-2p102")) in->p_zero[0] = 0x1p102f;
    if (!strcmp(nm, "beta-subnormal")) in->beta[0] = 0x1p-127f;
    if (!strcmp(nm, "p-scale-not-f16")) in->p_scale[0] = 0.30000001f;
    if (!strcmp(nm, "np-without-stp")) { /* n_p given without STP: no stored arrays, KVQ_E_PARAM */
        kvq_case_drop_outputs(c);
        in->prm.protect = 0.0f;
        in->protect_n = 1u;
    }
    return c->op->solve(c);
}

static kvq_status make_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    kvq_vidkv_case_in *in;
    const char *nm = ERRS[which].name;
    int op = ERRS[which].op;
    uint64_t n;
    if (op == E_OP_DEQ_KEYS || op == E_OP_DEQ_VALUES) return make_deq_error(c, tag, seed, k, which);
    if (begin(c, op == E_OP_KEYS ? &kvq_op_vidkv_keys : op == E_OP_VALUES ? &kvq_op_vidkv_values
                                                                           : &kvq_op_vidkv_stream, &r) != KVQ_OK)
        return KVQ_E_NOMEM;
    in = c->in;
    c->pol = kvq_policy_default;
    c->level = KVQ_LEVEL_EXACT;
    in->prm = kvq_vidkv_params_default(2u, 16u, 6u);
    in->prm.group = 8u;
    in->prm.key_frac = 0.25f;
    if (op == E_OP_VALUES) {
        in->prm.protect = 0.25f;
        in->rows = 20u;
        in->sdim = 4u;
        in->vis_first = 2u;
        in->vis_count = 12u;
        in->txt_first = 16u;
        in->txt_count = 3u;
    }
    if (op == E_OP_STREAM) {
        in->prm.tokens = 0u;
        in->prefill = 5u;
        in->decode = 14u;
    }
    if (!strcmp(nm, "group12")) in->prm.group = 12u;
    if (!strcmp(nm, "group4104")) in->prm.group = 4104u;
    if (!strcmp(nm, "frac-neg")) in->prm.key_frac = -0.25f;
    if (!strcmp(nm, "frac-nan")) in->prm.key_frac = NAN;
    if (!strcmp(nm, "frac-above-1")) in->prm.key_frac = 1.5f;
    if (!strcmp(nm, "split2")) in->prm.split = 2u;
    if (!strcmp(nm, "normal4")) in->prm.normal = 4u;
    if (!strcmp(nm, "meta2")) in->prm.meta = 2u;
    if (!strcmp(nm, "dim0")) in->prm.dim = 0u;
    if (!strcmp(nm, "dim1025")) in->prm.dim = 1025u, in->prm.heads = 1u, in->prm.tokens = 8u;
    if (!strcmp(nm, "heads0")) in->prm.heads = 0u;
    if (!strcmp(nm, "tokens0")) in->prm.tokens = 0u;
    if (!strcmp(nm, "tokens-ragged")) in->prm.tokens = 12u;
    if (!strcmp(nm, "f16-overflow-nan") || !strcmp(nm, "beta-f16-overflow-nan")) {
        c->pol.overflow = KVQ_OVERFLOW_NAN;
        in->prm.vdeq = KVQ_VIDKV_VDEQ_SCALED;
    }
    if (!strcmp(nm, "protect-neg")) in->prm.protect = -0.25f;
    if (!strcmp(nm, "protect-nan")) in->prm.protect = NAN;
    if (!strcmp(nm, "gamma-nan")) in->prm.gamma = NAN;
    if (!strcmp(nm, "gamma-neg")) in->prm.gamma = -0.5f;
    if (!strcmp(nm, "gamma-17")) in->prm.gamma = 17.0f;
    if (!strcmp(nm, "vdeq2")) in->prm.vdeq = 2u;
    if (!strcmp(nm, "vpack2")) in->prm.vpack = 2u;
    if (!strcmp(nm, "stp-no-visual")) in->vis_count = 0u;
    if (!strcmp(nm, "stp-visual-past-tokens")) in->vis_count = 15u;
    if (!strcmp(nm, "stp-no-text")) in->txt_count = 0u;
    if (!strcmp(nm, "stp-text-past-rows")) in->txt_count = 5u;
    if (!strcmp(nm, "stp-sdim0")) in->sdim = 0u;
    if (!strcmp(nm, "kflush2")) in->prm.kflush = 2u;
    if (!strcmp(nm, "vflush2")) in->prm.vflush = 2u;
    if (!strcmp(nm, "short")) in->prefill = 3u, in->decode = 4u;
    if (!strcmp(nm, "stp-visual-past-prefill")) { /* the visual rows must be quantized at prefill */
        in->prm.protect = 0.5f;
        in->rows = 19u;
        in->sdim = 2u;
        in->vis_first = 4u;
        in->vis_count = 5u; /* past Tp = 8 */
        in->txt_first = 10u;
        in->txt_count = 3u;
        in->prefill = 13u;
        in->decode = 6u;
    }
    if (op == E_OP_KEYS && kvq_vidkv_params_ok(&in->prm)) in->abnormal = kvq_vidkv_n_abn(&in->prm);
    if (op == E_OP_VALUES) set_protected(in);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-err-%s", tag, (unsigned long long)k, nm);
    c->status = KVQ_E_PARAM; /* inputs only for now */
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    if (op == E_OP_STREAM) {
        n = (uint64_t)in->prm.heads * (in->prefill + in->decode) * in->prm.dim;
        fill_plain(in->k, n, &r, 0);
        fill_plain(in->v, n, &r, 0);
        if (!strcmp(nm, "decode-nan")) in->v[n - 1u] = NAN; /* the last decoded token: never flushed */
        if (in->prm.protect > 0.0f) fill_plain(in->xs, (uint64_t)in->rows * in->sdim, &r, 0);
    } else {
        float *x = op == E_OP_KEYS ? in->k : in->v;
        n = (uint64_t)in->prm.heads * in->prm.tokens * in->prm.dim;
        fill_plain(x, n, &r, 0);
        if (n) {
            uint64_t at = kvq_rng_next(&r) % n;
            if (!strcmp(nm, "nan")) x[at] = NAN;
            if (!strcmp(nm, "ninf")) x[at] = -INFINITY;
            if (!strcmp(nm, "pinf")) x[at] = INFINITY;
            if (!strcmp(nm, "range-2p100")) x[at] = -0x1p100f;
            if (!strcmp(nm, "f16-overflow-nan") || !strcmp(nm, "beta-f16-overflow-nan"))
                for (uint64_t e = 0; e < n; e++) x[e] = (e % 2u ? 1.0f : -1.0f) * 0x1p20f;
        }
        if (op == E_OP_VALUES && in->prm.protect > 0.0f && in->rows * in->sdim > 0u) {
            fill_plain(in->xs, (uint64_t)in->rows * in->sdim, &r, 0);
            if (!strcmp(nm, "score-nan")) in->xs[3] = NAN;
            if (!strcmp(nm, "score-2p32")) in->xs[5] = 0x1p32f;
        }
    }
    return c->op->solve(c);
}

/* ---- constructed classes [VEC-VIDKV-05]: each separates two readings of a sentence ---- */

enum { X_SPLIT_TIE, X_SPLIT_ROUNDED_TIE, X_HALF_EVEN, X_NEG_ZERO, X_ALPHA_EXACT, X_STP_SHORT, X_COUNT };
static const char *const X_NAMES[X_COUNT] = { "split-tie", "split-rounded-tie", "half-even", "neg-zero",
                                              "alpha-exact", "stp-short" };
static const uint32_t X_CASES[X_COUNT][2] = { { 2, 4 }, { 1, 2 }, { 4, 8 }, { 2, 4 }, { 3, 6 }, { 2, 4 } };

static uint64_t n_constructed(int smoke)
{
    uint64_t n = 0;
    for (int x = 0; x < X_COUNT; x++) n += X_CASES[x][smoke ? 0 : 1];
    return n;
}

static kvq_status make_constructed(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j, int smoke)
{
    /* half-even: (f, d) whose f d is an odd multiple of 1/2 [VIDKV-K-02] */
    static const struct { float f; uint32_t d; } HE[8] = { { 0.5f, 3 }, { 0.5f, 5 }, { 0.25f, 2 }, { 0.75f, 2 },
                                                          { 0.25f, 6 }, { 0.25f, 10 }, { 0.5f, 7 }, { 0.75f, 6 } };
    kvq_rng r = { seed ^ (0xC2B2AE3D27D4EB4Full * (k + 1u)) };
    kvq_vidkv_case_in *in;
    uint32_t cls = 0, jj = j, G = 8u;
    int values;
    while (cls + 1u < X_COUNT && jj >= X_CASES[cls][smoke ? 0 : 1]) jj -= X_CASES[cls++][smoke ? 0 : 1];
    values = cls == X_ALPHA_EXACT || cls == X_STP_SHORT;
    if (begin(c, values ? &kvq_op_vidkv_values : &kvq_op_vidkv_keys, &r) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    c->pol = kvq_policy_default;
    c->level = KVQ_LEVEL_EXACT;
    in->prm = kvq_vidkv_params_default(1u + jj % 2u, 2u * G, 6u);
    in->prm.group = G;
    in->prm.normal = KVQ_VIDKV_NORMAL_MINMAX;
    in->prm.split = jj % 2u;
    in->prm.meta = KVQ_META_F32;
    switch (cls) {
    case X_SPLIT_TIE: in->prm.key_frac = 0.5f; break;
    case X_SPLIT_ROUNDED_TIE: in->prm.dim = 4u; in->prm.key_frac = 0.25f; break;
    case X_HALF_EVEN:
        in->prm.key_frac = HE[jj % 8u].f;
        in->prm.dim = HE[jj % 8u].d;
        in->prm.normal = jj % 3u ? KVQ_VIDKV_NORMAL_MINMAX : KVQ_VIDKV_NORMAL_SIGNMEAN;
        break;
    case X_NEG_ZERO: in->prm.key_frac = 0.5f; in->prm.normal = KVQ_VIDKV_NORMAL_SIGNMEAN; break;
    case X_ALPHA_EXACT: /* every third raw at the bounded level: |v| = alpha* is ambiguous [VIDKV-B-04] */
        in->prm.gamma = jj % 2u ? 2.0f : 1.0f;
        in->prm.vdeq = jj % 3u == 2u ? KVQ_VIDKV_VDEQ_RAW : jj / 2u % 2u;
        if (jj % 3u == 2u) c->level = KVQ_LEVEL_BOUNDED;
        break;
    default: /* X_STP_SHORT */
        in->prm.tokens = 3u * G;
        in->prm.protect = 0.5f;
        in->prm.vpack = jj % 2u;
        in->rows = in->prm.tokens + 2u;
        in->sdim = 3u;
        in->vis_first = 0u;
        in->vis_count = in->prm.tokens - 1u; /* n_p = floor(23 / 2) = 11: not a multiple of G */
        in->txt_first = in->prm.tokens;
        in->txt_count = 2u;
        break;
    }
    in->abnormal = kvq_vidkv_n_abn(&in->prm);
    set_protected(in);
    snprintf(c->id, sizeof c->id, "vidkv-%s-%05llu-%s", tag, (unsigned long long)k, X_NAMES[cls]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    {
        const kvq_vidkv_params *p = &in->prm;
        float *x = values ? in->v : in->k;
        fill_keys(x, p, &r, 0);
        for (uint32_t h = 0; h < p->heads; h++)
            for (uint32_t t = 0; t < p->tokens; t++)
                for (uint32_t ch = 0; ch < p->dim; ch++) {
                    float *e = &x[kvq_vidkv_index(p, h, t, ch)];
                    switch (cls) {
                    case X_SPLIT_TIE: /* every channel's range exactly 2 (ties by lower index) */
                        *e = (float)ch * 0.25f + (t % 2u ? 1.0f : -1.0f) * (t == 0u || t == 1u ? 1.0f : 0.5f);
                        break;
                    case X_SPLIT_ROUNDED_TIE: /* 0 .. 2^24 and -0.5 .. 2^24: r rounds to 2^24 in both */
                        *e = ch == 0u ? (t == 0u ? 0.0f : t == 1u ? 0x1p24f : 0x1p23f)
                           : ch == 3u ? (t == 0u ? -0.5f : t == 1u ? 0x1p24f : 0x1p23f) : *e;
                        break;
                    case X_NEG_ZERO: /* signed zeros: code 1 for -0 [VIDKV-K-06] */
                        if ((t + ch) % 3u == 0u) *e = -0.0f;
                        else if ((t + ch) % 3u == 1u) *e = 0.0f;
                        break;
                    case X_ALPHA_EXACT: /* gamma 1: all |v| = a; gamma 2: half +-a, half 0: alpha = a exactly */
                        *e = (p->gamma == 1.0f || t % 2u == 0u) ? ((t / 2u + ch) % 2u ? 0.75f : -0.75f) : 0.0f;
                        break;
                    default: break;
                    }
                }
        if (cls == X_STP_SHORT) /* equal score rows: the order is by token index [VIDKV-STP-03] */
            for (uint32_t i = 0; i < in->rows * in->sdim; i++) in->xs[i] = (i / in->sdim) % 4u == 1u ? 1.0f : 0.5f;
    }
    return c->op->solve(c);
}

/* Level sets [VEC-VIDKV-04]: keys, values, stream regular cases, the error
 * classes, the constructed classes. */
/* regular cases per operation: keys, values, stream, deq-keys, deq-values */
static int n_reg(const char *levels, uint64_t n[5])
{
    static const uint64_t SMOKE[5] = { 32, 24, 16, 16, 8 }, STD[5] = { 96, 72, 48, 32, 16 };
    const uint64_t *src = strcmp(levels, "smoke") == 0 ? SMOKE : strcmp(levels, "standard") == 0 ? STD : NULL;
    if (src == NULL) return 0;
    memcpy(n, src, sizeof SMOKE);
    return 1;
}

uint64_t kvq_vidkv_gen_count(const char *levels)
{
    uint64_t n[5];
    if (!n_reg(levels, n)) return 0u;
    return n[0] + n[1] + n[2] + n[3] + n[4] + E_COUNT + n_constructed(strcmp(levels, "smoke") == 0);
}

kvq_status kvq_vidkv_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    uint64_t n[5], j = k;
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    kvq_status st;
    if (!n_reg(levels, n)) return KVQ_E_PARAM;
    if (j < n[0]) st = make_keys(c, tag, seed, k, j, smoke);
    else if ((j -= n[0]) < n[1]) st = make_values(c, tag, seed, k, j, smoke);
    else if ((j -= n[1]) < n[2]) st = make_stream(c, tag, seed, k, j, smoke);
    else if ((j -= n[2]) < n[3]) st = make_deq_keys(c, tag, seed, k, j, smoke);
    else if ((j -= n[3]) < n[4]) st = make_deq_values(c, tag, seed, k, j, smoke);
    else if ((j -= n[4]) < E_COUNT) st = make_error(c, tag, seed, k, (uint32_t)j);
    else st = make_constructed(c, tag, seed, k, (uint32_t)(j - E_COUNT), smoke);
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
