/*
 * pkv_test.cu -- `make gpu-test`'s PKV part: the CUDA PKV kernels
 * (gpu/pkv/kvq_cuda_pkv.h) against ref/fast/pkv.c, bit for bit.
 *
 * Every case runs the fast path and the device launcher on the same input and
 * compares the status, the flags word and every output byte: pattern indices,
 * residuals (binary32 bit patterns), KIVI codes, scales and zeros, dequantized
 * values, Chebyshev centres, the bank and its count.  Both sides' outputs start
 * as the sentinel 0xA5 with KVQ_TB_GUARD guard bytes past each buffer, and the
 * comparison covers the guards too, so an error leaves the device's outputs as
 * untouched as the fast path's [PKV-ERR-01]; after an error each side must still
 * hold the sentinel everywhere.
 *
 * Inputs are built to reach every decision: patterns on a coarse grid with exact
 * duplicates and constant shifts (ties of the min-max distance: the lowest index
 * [PKV-A-02]), tokens near a pattern (values that use it) and far from every
 * pattern (values stored raw, index 0xFFFF [PKV-V-03]), constant tokens (range 0:
 * raw), zeros of both signs (Chebyshev centres keep the fast path's sign
 * [PKV-U-02]), subnormal residuals (the KIVI policy), large magnitudes (binary16
 * metadata overflow under both overflow policies), and the bad inputs of
 * [PKV-ERR-02] that reach the device (NaN, infinity, |v| > 2^48 in inputs and
 * patterns; indices past the bank; bad metadata).  Shapes: every kind (keys at
 * prefill with both metrics, keys at decode, values with and without the V
 * threshold, every alpha), bits 2 and 4, both metadata formats, G 8..256, d from
 * 1 to 384 (keys: any d, vector and scalar paths), 1 to 300 patterns (segments
 * of 4 to 32 lanes, lanes without a pattern, and more than 32 patterns a
 * token), the device-pointer,
 * stream-ordered, host-pointer, KVQ_CUDA_DIRECT and KVQ_CUDA_PKV_FUSED launchers
 * (the last two held to their guards only after an error, their outputs being
 * unspecified then; KVQ_PKV_CASES / 8 more cases for the fused form at d = G =
 * 128, 17 to 32 patterns; KVQ_PKV_CASES / 4 more for the pruned assignment, the
 * default at d = 128 with at most 32 patterns, on random, clustered, tied and
 * near-tied inputs, see prune_inputs; the unpruned scan, KVQ_CUDA_PKV_UNPRUNED,
 * on a share of every kind of case), every dequantizer form (the default,
 * KVQ_CUDA_PKV_DQ_ONE, KVQ_CUDA_PKV_DQ_TWO; option bits the launchers refuse),
 * corrupted
 * stored blocks for dequantization (indices past the bank or 0xFFFF in a key
 * block, NaN or out-of-domain patterns, bad metadata, overflowing scales), the
 * decode steps (a key flush after or before its centre joins, a value step with
 * and without a leaving value and a centre, banks at their cap or without room),
 * and large blocks
 * (KVQ_PKV_LARGE tokens of d = 128, default 65536: 32 MiB of binary32).
 *
 * SPEC: [PKV-A-01] [PKV-A-02] [PKV-A-03] [PKV-KM-02] [PKV-Q-01] [PKV-Q-02] [PKV-Q-03]
 *       [PKV-Q-04] [PKV-V-01] [PKV-V-02] [PKV-V-03] [PKV-D-01] [PKV-D-02] [PKV-U-02]
 *       [PKV-U-01] [PKV-U-03] [PKV-U-04] [PKV-U-05] [PKV-ERR-01] [PKV-DOM-01] [PKV-L-01] [PKV-L-02] [PKV-L-03]
 *       [PKV-DEV-01] [PKV-DEV-02] [PKV-DEV-03] [PKV-DEV-05] [PKV-DEV-06]
 *
 * Without a device: "gpu-pkv-test: SKIPPED (no CUDA device: <reason>)", exit 0
 * (CI reads SKIPPED, never a pass).  Seed: KVQ_SEED (default below); cases:
 * KVQ_PKV_CASES (default 600 random cases, each several operations).  The
 * closing line is "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_pkv.h"
#include "pkv/kvq_cuda_pkv.h"
#include "testbed.h"

#define DEFAULT_SEED 0x6b76712d706b7631ull /* "kvq-pkv1" */

/* ---- buffers: sentinel-filled with guards, host and device twins ---------- */

typedef struct buf {
    const char *name;
    uint8_t *h;       /* n + KVQ_TB_GUARD bytes */
    void *d;          /* device twin (or NULL) */
    size_t n;
} buf;

static void buf_make(buf *b, const char *name, size_t n, int device)
{
    b->name = name;
    b->n = n;
    b->h = (uint8_t *)kvq_tb_malloc(n + KVQ_TB_GUARD);
    memset(b->h, KVQ_TB_SENTINEL, n + KVQ_TB_GUARD);
    b->d = NULL;
    if (device) {
        kvq_tb_cuda(cudaMalloc(&b->d, n + KVQ_TB_GUARD), "cudaMalloc");
        kvq_tb_cuda(cudaMemset(b->d, KVQ_TB_SENTINEL, n + KVQ_TB_GUARD), "cudaMemset");
    }
}

static void buf_fetch(buf *b)
{
    kvq_tb_cuda(cudaMemcpy(b->h, b->d, b->n + KVQ_TB_GUARD, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

static void buf_free(buf *b)
{
    free(b->h);
    if (b->d) cudaFree(b->d);
    b->h = NULL;
    b->d = NULL;
}

/* A device copy of n host bytes. */
static void *dev_copy(const void *h, size_t n)
{
    void *d = NULL;
    kvq_tb_cuda(cudaMalloc(&d, n ? n : 1u), "cudaMalloc");
    if (n) kvq_tb_cuda(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
}

/* ---- case description and the verdict ------------------------------------- */

typedef struct tcase {
    const char *op, *api, *input;
    uint32_t kind, tokens, dim, npat;
    kvq_pkv_params p;
    kvq_policy pol;
} tcase;

static void print_case(const tcase *c)
{
    printf("  seed=0x%016llx case=%lu op=%s api=%s input=%s kind=%u T=%u d=%u npat=%u bits=%u "
           "group=%u meta=%s vthr=%u alpha=%u key_dist=%u cap=%u ties=%s overflow=%s "
           "subnormal=%s\n",
           (unsigned long long)kvq_tb_seed(), kvq_tb_cases(), c->op, c->api, c->input, c->kind,
           c->tokens, c->dim, c->npat, c->p.bits, c->p.group, c->p.meta ? "f16" : "f32",
           c->p.v_threshold, c->p.alpha, c->p.key_dist, c->p.cap, c->pol.ties ? "away" : "even",
           c->pol.overflow ? "nan" : "saturate", c->pol.subnormal ? "daz" : "keep");
}

/* Compare the reference's and the device's outputs (guards included) and
 * statuses; after an error both must be all sentinel.  One pass or failure. */
static void verdict(const tcase *c, int rs, int gs, uint32_t rf, uint32_t gf, buf *r, buf *g,
                    unsigned nb)
{
    char msg[256] = "";
    int bad = 0;
    if (rs != gs) {
        snprintf(msg, sizeof msg, "status: ref %s, gpu %s", kvq_status_str((kvq_status)rs),
                 kvq_status_str((kvq_status)gs));
        bad = 1;
    } else if (rf != gf) {
        snprintf(msg, sizeof msg, "flags: ref 0x%08x, gpu 0x%08x", rf, gf);
        bad = 1;
    }
    for (unsigned i = 0; !bad && i < nb; i++) {
        long k = kvq_tb_first_diff(r[i].h, g[i].h, r[i].n + KVQ_TB_GUARD);
        if (k >= 0) {
            snprintf(msg, sizeof msg, "%s: byte %ld of %zu differs (ref %02x, gpu %02x)%s",
                     r[i].name, k, r[i].n, r[i].h[k], g[i].h[k],
                     (size_t)k >= r[i].n ? " (guard)" : "");
            bad = 1;
            break;
        }
        for (size_t b = rs == KVQ_OK ? r[i].n : 0u; b < r[i].n + KVQ_TB_GUARD; b++)
            if (g[i].h[b] != KVQ_TB_SENTINEL) {
                snprintf(msg, sizeof msg, "%s: byte %zu written (%02x) %s", g[i].name, b, g[i].h[b],
                         b >= r[i].n ? "past the end" : "by a call that failed [PKV-ERR-01]");
                bad = 1;
                break;
            }
    }
    if (!bad) {
        kvq_tb_pass();
        return;
    }
    if (kvq_tb_fail()) {
        printf("FAIL %s: %s\n", c->op, msg);
        print_case(c);
    }
}

/* ---- inputs ---------------------------------------------------------------- */

enum { IN_NEAR, IN_GRID, IN_WIDE, IN_ZEROS, IN_HUGE, IN_SUB, IN_NAN, IN_INF, IN_OUT, IN_N };
static const char *in_name[IN_N] = {"near", "grid", "wide", "zeros", "huge", "subnormal",
                                    "nan", "inf", "out-of-domain"};

/* A value on a coarse grid (exact differences: ties of d_mm). */
static float grid_val(void) { return (float)((int)kvq_tb_rndu(33) - 16) * 0.125f; }

static float rnd_val(int in)
{
    switch (in) {
    case IN_GRID: return grid_val();
    case IN_WIDE: return (float)(kvq_tb_rndf() * 2.0 - 1.0) * 8.0f;
    case IN_ZEROS: return kvq_tb_chance(50) ? 0.0f : -0.0f;
    case IN_HUGE: return (float)(kvq_tb_rndf() * 2.0 - 1.0) * 0x1p40f;
    case IN_SUB: return (float)(kvq_tb_rndf() * 2.0 - 1.0) * 0x1p-130f;
    default: return (float)(kvq_tb_rndf() * 2.0 - 1.0);
    }
}

/* The bank: grid patterns, exact duplicates of earlier ones and constant shifts. */
static void make_bank(float *bank, uint32_t npat, uint32_t d, int in)
{
    for (uint32_t j = 0; j < npat; j++) {
        float *m = bank + kvq_pkv_pattern_offset(j, d);
        const int r = (int)kvq_tb_rndu(10);
        if (j > 0 && r < 2) {            /* an exact duplicate: a tie, lowest index */
            memcpy(m, bank + kvq_pkv_pattern_offset(kvq_tb_rndu(j), d), d * sizeof *m);
        } else if (j > 0 && r < 4) {     /* a constant shift: the same d_mm on the grid */
            const float sh = grid_val();
            const float *o = bank + kvq_pkv_pattern_offset(kvq_tb_rndu(j), d);
            for (uint32_t i = 0; i < d; i++) m[i] = o[i] + sh;
        } else {
            for (uint32_t i = 0; i < d; i++)
                m[i] = in == IN_HUGE ? rnd_val(IN_HUGE) : in == IN_ZEROS ? rnd_val(IN_ZEROS) : grid_val();
        }
    }
}

/* Tokens: near a random pattern, or of the input kind; some constant rows. */
static void make_tokens(float *x, uint32_t T, uint32_t d, const float *bank, uint32_t npat, int in)
{
    for (uint32_t t = 0; t < T; t++) {
        float *xt = x + (uint64_t)t * d;
        const int r = (int)kvq_tb_rndu(10);
        if (r == 0) {                    /* constant: range 0, a value stored raw */
            const float v = rnd_val(in == IN_NEAR ? IN_GRID : in);
            for (uint32_t i = 0; i < d; i++) xt[i] = v;
        } else if (r < 6 && in != IN_ZEROS) { /* near a pattern: the V threshold keeps it */
            const float *m = bank + kvq_pkv_pattern_offset(kvq_tb_rndu(npat), d);
            const float amp = kvq_tb_chance(50) ? 0.0625f : 0.5f;
            for (uint32_t i = 0; i < d; i++)
                xt[i] = m[i] + (in == IN_GRID ? (float)((int)kvq_tb_rndu(3) - 1) * 0.125f
                                              : (float)(kvq_tb_rndf() * 2.0 - 1.0) * amp);
        } else {
            for (uint32_t i = 0; i < d; i++) xt[i] = rnd_val(in);
        }
    }
}

/* One bad value at a random place of x (n values), by the input kind. */
static void plant_bad(float *x, uint64_t n, int in)
{
    const float v = in == IN_NAN ? kvq_f32_from_bits(0x7fc00000u)
                  : in == IN_INF ? (kvq_tb_chance(50) ? INFINITY : -INFINITY)
                                 : (kvq_tb_chance(50) ? 0x1.000002p48f : -0x1p49f);
    x[kvq_tb_rnd() % n] = v;
}

static kvq_policy rnd_policy(void)
{
    kvq_policy pol = kvq_policy_default;
    pol.ties = kvq_tb_chance(30) ? KVQ_TIES_AWAY : KVQ_TIES_EVEN;
    pol.overflow = kvq_tb_chance(30) ? KVQ_OVERFLOW_NAN : KVQ_OVERFLOW_SATURATE;
    pol.subnormal = kvq_tb_chance(30) ? KVQ_SUBNORMAL_DAZ : KVQ_SUBNORMAL_KEEP;
    return pol;
}

/* A random shape for `kind`: values need d % G == 0, keys T % G == 0. */
static void rnd_shape(tcase *c)
{
    static const uint32_t groups[] = {8, 16, 32, 64, 128, 256};
    kvq_pkv_params *p = &c->p;
    *p = kvq_pkv_params_default(kvq_tb_chance(50) ? 2u : 4u);
    p->group = groups[kvq_tb_rndu(kvq_tb_chance(70) ? 5 : 6)];
    p->residual = p->group;
    p->meta = kvq_tb_chance(40) ? KVQ_META_F16 : KVQ_META_F32;
    p->v_threshold = kvq_tb_chance(80) ? 1u : 0u;
    p->alpha = kvq_tb_rndu(3);
    p->key_dist = kvq_tb_chance(30) ? KVQ_PKV_DIST_EUCLID : KVQ_PKV_DIST_MINMAX;
    c->kind = kvq_tb_rndu(3);
    if (c->kind == KVQ_PKV_VALUE) {
        c->dim = p->group * (1u + kvq_tb_rndu(p->group <= 32u ? 8u : 2u));
        c->tokens = 1u + kvq_tb_rndu(kvq_tb_chance(20) ? 1 : 200);
    } else {
        c->dim = kvq_tb_chance(60) ? 4u * (1u + kvq_tb_rndu(64)) : 1u + kvq_tb_rndu(200);
        c->tokens = p->group * (1u + kvq_tb_rndu(p->group <= 32u ? 6u : 2u));
    }
    static const uint32_t np[] = {1, 2, 3, 5, 8, 16, 31, 32, 33, 64, 100, 300};
    c->npat = np[kvq_tb_rndu(12)];
    c->pol = rnd_policy();
}

/* ---- the operations --------------------------------------------------------- */

/* Quantize on both sides; on success also dequantize the result (and a
 * corrupted copy of it) on both sides. */
static void case_quant(tcase *c, const float *x, const float *bank, int api)
{
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(&c->p, c->kind, c->tokens, c->dim);
    const uint64_t n = (uint64_t)c->tokens * c->dim, nb = (uint64_t)c->npat * c->dim;
    const size_t cb = (size_t)kvq_kivi_code_bytes(&ks), ng = (size_t)kvq_kivi_groups(&ks);
    const size_t sizes[5] = {cb, ng * 4u, ng * 4u, (size_t)kvq_pkv_index_bytes(c->tokens),
                             (size_t)n * 4u};
    const char *names[5] = {"codes", "scale", "zero", "index", "resid"};
    buf r[5], g[5];
    const int dev = api != 2;
    for (int i = 0; i < 5; i++) {
        buf_make(&r[i], names[i], sizes[i], 0);
        buf_make(&g[i], names[i], sizes[i], dev);
    }
    uint32_t rf = KVQ_TB_FLAGS_SENTINEL, gf = KVQ_TB_FLAGS_SENTINEL;
    c->op = "quantize";
    static const char *api_name[8] = {"device", "async", "host", "direct", "fused direct",
                                      "unpruned", "unpruned direct", "fused unpruned direct"};
    c->api = api_name[api];
    const int direct = api == 3 || api == 4 || api == 6 || api == 7;
    kvq_tb_case();
    int rs = kvq_pkv_quantize(r[0].h, (float *)r[1].h, (float *)r[2].h, (uint16_t *)r[3].h,
                              (float *)r[4].h, &rf, x, c->kind, c->tokens, c->dim, bank, c->npat,
                              &c->p, &c->pol);
    int gs;
    if (api == 2) {
        gs = kvq_cuda_pkv_quantize_host(g[0].h, (float *)g[1].h, (float *)g[2].h,
                                        (uint16_t *)g[3].h, (float *)g[4].h, &gf, x, c->kind,
                                        c->tokens, c->dim, bank, c->npat, &c->p, &c->pol);
    } else {
        float *dx = (float *)dev_copy(x, n * 4u), *db = (float *)dev_copy(bank, nb * 4u);
        if (api == 0) {
            gs = kvq_cuda_pkv_quantize((uint8_t *)g[0].d, (float *)g[1].d, (float *)g[2].d,
                                       (uint16_t *)g[3].d, (float *)g[4].d, &gf, dx, c->kind,
                                       c->tokens, c->dim, db, c->npat, &c->p, &c->pol, NULL, 0,
                                       0u, 0);
        } else {                         /* stream-ordered, caller's workspace (options by api) */
            const uint32_t opts = (direct ? KVQ_CUDA_DIRECT : 0u) |
                                  (api == 4 || api == 7 ? KVQ_CUDA_PKV_FUSED : 0u) |
                                  (api >= 5 ? KVQ_CUDA_PKV_UNPRUNED : 0u);
            const size_t wb = kvq_cuda_pkv_quantize_workspace(&c->p, c->kind, c->tokens, c->dim, opts);
            void *ws = NULL;
            kvq_cuda_result *dr = NULL, hr = {0xFFFFFFFFu, 0xFFFFFFFFu};
            kvq_tb_cuda(cudaMalloc(&ws, wb), "cudaMalloc");
            kvq_tb_cuda(cudaMalloc((void **)&dr, sizeof *dr), "cudaMalloc");
            kvq_tb_cuda(cudaMemset(dr, 0xFF, sizeof *dr), "cudaMemset");
            gs = kvq_cuda_pkv_quantize_async((uint8_t *)g[0].d, (float *)g[1].d, (float *)g[2].d,
                                             (uint16_t *)g[3].d, (float *)g[4].d, dr, dx, c->kind,
                                             c->tokens, c->dim, db, c->npat, &c->p, &c->pol, ws,
                                             wb, opts, 0);
            kvq_tb_cuda(cudaDeviceSynchronize(), "quantize_async");
            kvq_tb_cuda(cudaMemcpy(&hr, dr, sizeof hr, cudaMemcpyDeviceToHost), "cudaMemcpy");
            if (gs == KVQ_OK) {
                gs = (int)hr.status;
                if (gs == KVQ_OK) gf = hr.flags;
            }
            cudaFree(ws);
            cudaFree(dr);
        }
        kvq_tb_cuda(cudaDeviceSynchronize(), "quantize");
        for (int i = 0; i < 5; i++) buf_fetch(&g[i]);
        cudaFree(dx);
        cudaFree(db);
    }
    if (direct && rs != KVQ_OK) {        /* direct: outputs unspecified on an error */
        for (int i = 0; i < 5; i++) memcpy(g[i].h, r[i].h, r[i].n); /* the guards still count */
    }
    verdict(c, rs, gs, rf, gf, r, g, 5);

    if (rs == KVQ_OK) {                  /* dequantize the reference's block */
        uint16_t *ix = (uint16_t *)r[3].h;
        float *sc = (float *)r[1].h;
        float *bk = (float *)kvq_tb_malloc(nb * 4u);
        memcpy(bk, bank, nb * 4u);
        const char *what = "stored";
        if (kvq_tb_chance(15)) {         /* an index past the bank, or 0xFFFF [PKV-D-02] */
            ix[kvq_tb_rndu(c->tokens)] = kvq_tb_chance(30) ? (uint16_t)KVQ_PKV_NO_PATTERN
                                                            : (uint16_t)(c->npat + kvq_tb_rndu(3));
            what = "bad index";
        } else if (kvq_tb_chance(8)) {   /* a bad pattern [PKV-DOM-01] */
            plant_bad(bk, nb, kvq_tb_chance(50) ? IN_NAN : IN_OUT);
            what = "bad pattern";
        } else if (kvq_tb_chance(10)) {  /* bad metadata [KIVI-D-02] */
            sc[kvq_tb_rndu((uint32_t)ng)] = kvq_tb_chance(50) ? -1.0f : kvq_f32_from_bits(0x7fc00000u);
            what = "bad metadata";
        } else if (kvq_tb_chance(10)) {  /* a scale whose fmaf overflows [POL-OV-01] */
            sc[kvq_tb_rndu((uint32_t)ng)] = c->p.meta == KVQ_META_F16 ? 65504.0f : 0x1p126f;
            what = "overflow";
        }
        tcase d = *c;
        d.op = "dequantize";
        d.input = what;
        /* the form of [PKV-DEV-06]: the default (by grouping), or either asked for */
        static const uint32_t dq_opts[3] = {0u, KVQ_CUDA_PKV_DQ_ONE, KVQ_CUDA_PKV_DQ_TWO};
        static const char *dq_name[3] = {"default form", "one kernel", "two kernels"};
        const int form = (int)kvq_tb_rndu(3);
        d.api = api == 2 ? "host" : dq_name[form];
        buf ry, gy;
        buf_make(&ry, "y", (size_t)n * 4u, 0);
        buf_make(&gy, "y", (size_t)n * 4u, 1);
        rf = gf = KVQ_TB_FLAGS_SENTINEL;
        kvq_tb_case();
        rs = kvq_pkv_dequantize((float *)ry.h, &rf, r[0].h, sc, (float *)r[2].h, ix, c->kind,
                                c->tokens, c->dim, bk, c->npat, &c->p, &c->pol);
        if (api == 2) {
            gs = kvq_cuda_pkv_dequantize_host((float *)gy.h, &gf, r[0].h, sc, (float *)r[2].h, ix,
                                              c->kind, c->tokens, c->dim, bk, c->npat, &c->p,
                                              &c->pol);
        } else {
            void *dc = dev_copy(r[0].h, cb), *ds = dev_copy(sc, ng * 4u);
            void *dz = dev_copy(r[2].h, ng * 4u), *di = dev_copy(ix, r[3].n);
            void *db = dev_copy(bk, nb * 4u);
            gs = kvq_cuda_pkv_dequantize((float *)gy.d, &gf, (const uint8_t *)dc, (const float *)ds,
                                         (const float *)dz, (const uint16_t *)di, c->kind,
                                         c->tokens, c->dim, (const float *)db, c->npat, &c->p,
                                         &c->pol, NULL, 0, dq_opts[form], 0);
            buf_fetch(&gy);
            cudaFree(dc);
            cudaFree(ds);
            cudaFree(dz);
            cudaFree(di);
            cudaFree(db);
        }
        verdict(&d, rs, gs, rf, gf, &ry, &gy, 1);
        free(bk);
        buf_free(&ry);
        buf_free(&gy);
    }
    for (int i = 0; i < 5; i++) {
        buf_free(&r[i]);
        buf_free(&g[i]);
    }
}

static void case_assign(tcase *c, const float *x, const float *bank, uint32_t dist, int host,
                        uint32_t opts)
{
    const uint64_t n = (uint64_t)c->tokens * c->dim, nb = (uint64_t)c->npat * c->dim;
    buf r, g;
    buf_make(&r, "index", (size_t)kvq_pkv_index_bytes(c->tokens), 0);
    buf_make(&g, "index", (size_t)kvq_pkv_index_bytes(c->tokens), !host);
    c->op = dist == KVQ_PKV_DIST_EUCLID ? "assign euclid" : "assign minmax";
    c->api = host ? "host" : opts ? "device unpruned" : "device";
    kvq_tb_case();
    int rs = kvq_pkv_assign((uint16_t *)r.h, x, c->tokens, c->dim, bank, c->npat, dist), gs;
    if (host) {
        gs = kvq_cuda_pkv_assign_host((uint16_t *)g.h, x, c->tokens, c->dim, bank, c->npat, dist);
    } else {
        float *dx = (float *)dev_copy(x, n * 4u), *db = (float *)dev_copy(bank, nb * 4u);
        gs = kvq_cuda_pkv_assign((uint16_t *)g.d, dx, c->tokens, c->dim, db, c->npat, dist, opts, 0);
        buf_fetch(&g);
        cudaFree(dx);
        cudaFree(db);
    }
    verdict(c, rs, gs, 0u, 0u, &r, &g, 1);
    buf_free(&r);
    buf_free(&g);
}

/* The centre of a window and the bank update with its cap and room [PKV-U-02]
 * [PKV-U-04]. */
static void case_update(tcase *c, const float *win, uint32_t n, int host)
{
    const uint32_t d = c->dim;
    buf r, g;
    buf_make(&r, "centre", (size_t)d * 4u, 0);
    buf_make(&g, "centre", (size_t)d * 4u, !host);
    c->op = "chebyshev";
    c->api = host ? "host" : "device";
    kvq_tb_case();
    int rs = kvq_pkv_chebyshev((float *)r.h, win, n, d), gs;
    if (host) {
        gs = kvq_cuda_pkv_chebyshev_host((float *)g.h, win, n, d);
    } else {
        float *dw = (float *)dev_copy(win, (size_t)n * d * 4u);
        gs = kvq_cuda_pkv_chebyshev((float *)g.d, dw, n, d, 0);
        buf_fetch(&g);
        cudaFree(dw);
    }
    verdict(c, rs, gs, 0u, 0u, &r, &g, 1);
    buf_free(&r);
    buf_free(&g);

    /* the bank update: a bank of np patterns, room cap_room, the parameters' cap */
    const uint32_t room = 1u + kvq_tb_rndu(4), np0 = kvq_tb_rndu(room + 1u);
    kvq_pkv_params p = c->p;
    p.cap = kvq_tb_chance(30) ? 1u + kvq_tb_rndu(room + 1u) : 0u;
    buf rb, gb;
    buf_make(&rb, "bank", (size_t)room * d * 4u, 0);
    buf_make(&gb, "bank", (size_t)room * d * 4u, !host);
    uint32_t rn = np0, gn = np0, ra = 0xDEADBEEFu, ga = 0xDEADBEEFu;
    tcase u = *c;
    u.op = "bank_update";
    u.p = p;
    kvq_tb_case();
    rs = kvq_pkv_bank_update((float *)rb.h, &rn, &ra, room, win, n, d, &p);
    if (host) {
        gs = kvq_cuda_pkv_bank_update_host((float *)gb.h, &gn, &ga, room, win, n, d, &p);
    } else {
        float *dw = (float *)dev_copy(win, (size_t)n * d * 4u);
        gs = kvq_cuda_pkv_bank_update((float *)gb.d, &gn, &ga, room, dw, n, d, &p, 0);
        buf_fetch(&gb);
        cudaFree(dw);
    }
    verdict(&u, rs, gs, rn ^ (ra << 20), gn ^ (ga << 20), &rb, &gb, 1);
    buf_free(&rb);
    buf_free(&gb);
}

/* The decode steps against the fast path: a key flush of a window of R keys
 * and a value step, with banks at, below and past their cap and room
 * [PKV-U-01] [PKV-U-03] [PKV-U-04] [PKV-U-05]. */
static int counts_differ(const tcase *c, uint32_t rn, uint32_t gn, uint32_t rc, uint32_t gc)
{
    if (rn == gn && rc == gc) return 0;
    if (kvq_tb_fail()) {
        printf("FAIL %s: bank count ref %u, gpu %u; count ref 0x%x, gpu 0x%x\n", c->op, rn, gn, rc,
               gc);
        print_case(c);
    }
    return 1;
}

static void case_steps(tcase *c, int in)
{
    const uint32_t d = c->dim, R = c->p.residual;
    const uint32_t np0 = 1u + kvq_tb_rndu(kvq_tb_chance(80) ? 8u : 40u);
    const uint32_t room = np0 + kvq_tb_rndu(3);
    kvq_pkv_params p = c->p;
    p.cap = kvq_tb_chance(25) ? np0 : 0u;
    p.update = kvq_tb_chance(50) ? KVQ_PKV_UPDATE_AFTER : KVQ_PKV_UPDATE_BEFORE;
    p.window = kvq_tb_chance(50) ? 1u : 1u + kvq_tb_rndu(4);
    float *bank0 = (float *)kvq_tb_malloc((uint64_t)room * d * 4u);
    float *win = (float *)kvq_tb_malloc(((uint64_t)R + 1u) * d * 4u);
    make_bank(bank0, room, d, in == IN_NEAR ? IN_GRID : in);
    make_tokens(win, R + 1u, d, bank0, np0, in);
    if (in >= IN_NAN && kvq_tb_chance(30)) plant_bad(win, (uint64_t)(R + 1u) * d, in);
    for (int op = 0; op < 2; op++) {
        const uint32_t kind = op == 0 ? KVQ_PKV_KEY_DECODE : KVQ_PKV_VALUE;
        if (kind == KVQ_PKV_VALUE && d % p.group != 0u) continue;
        const uint32_t T = op == 0 ? R : 1u;
        const uint32_t held = op == 0 ? R : (kvq_tb_chance(60) ? R + 1u : 1u + kvq_tb_rndu(R + 1u));
        const uint64_t step = kvq_tb_chance(50) ? (uint64_t)p.window * (1u + kvq_tb_rndu(9))
                                                : 1u + kvq_tb_rndu(50);
        const kvq_kivi_shape ks = kvq_pkv_kivi_shape(&p, kind, T, d);
        const size_t sizes[6] = {(size_t)kvq_kivi_code_bytes(&ks), (size_t)kvq_kivi_groups(&ks) * 4u,
                                 (size_t)kvq_kivi_groups(&ks) * 4u,
                                 (size_t)kvq_pkv_index_bytes(T), (size_t)T * d * 4u,
                                 (size_t)room * d * 4u};
        const char *names[6] = {"codes", "scale", "zero", "index", "resid", "bank"};
        buf r[6], g[6];
        for (int i = 0; i < 6; i++) {
            buf_make(&r[i], names[i], sizes[i], 0);
            buf_make(&g[i], names[i], sizes[i], 0);
        }
        memcpy(r[5].h, bank0, (size_t)np0 * d * 4u); /* past npat: the sentinel */
        memcpy(g[5].h, bank0, (size_t)np0 * d * 4u);
        uint32_t rf = KVQ_TB_FLAGS_SENTINEL, gf = KVQ_TB_FLAGS_SENTINEL, rn = np0, gn = np0;
        uint32_t rc = 0xDEADBEEFu, gc = 0xDEADBEEFu;
        int rs, gs;
        tcase u = *c;
        u.p = p;
        u.kind = kind;
        u.tokens = T;
        u.npat = np0;
        u.api = "host";
        u.op = op == 0 ? "key_flush" : "value_step";
        kvq_tb_case();
        if (op == 0) {
            rs = kvq_pkv_key_flush(r[0].h, (float *)r[1].h, (float *)r[2].h, (uint16_t *)r[3].h,
                                   (float *)r[4].h, &rf, (float *)r[5].h, &rn, room, win, d, &p,
                                   &c->pol);
            gs = kvq_cuda_pkv_key_flush_host(g[0].h, (float *)g[1].h, (float *)g[2].h,
                                             (uint16_t *)g[3].h, (float *)g[4].h, &gf,
                                             (float *)g[5].h, &gn, room, win, d, &p, &c->pol);
        } else {
            rs = kvq_pkv_value_step(r[0].h, (float *)r[1].h, (float *)r[2].h, (uint16_t *)r[3].h,
                                    (float *)r[4].h, &rf, &rc, (float *)r[5].h, &rn, room, win,
                                    held, step, d, &p, &c->pol);
            gs = kvq_cuda_pkv_value_step_host(g[0].h, (float *)g[1].h, (float *)g[2].h,
                                              (uint16_t *)g[3].h, (float *)g[4].h, &gf, &gc,
                                              (float *)g[5].h, &gn, room, win, held, step, d, &p,
                                              &c->pol);
        }
        /* the bank's first np0 patterns are inputs: restore the sentinel there on both
         * sides (equal inputs) so that "nothing written" reads the rest */
        if (!counts_differ(&u, rn, gn, rc, gc)) {
            if (memcmp(r[5].h, g[5].h, (size_t)np0 * d * 4u) != 0) {
                if (kvq_tb_fail()) {
                    printf("FAIL %s: the bank's first %u patterns changed\n", u.op, np0);
                    print_case(&u);
                }
            } else {
                memset(r[5].h, KVQ_TB_SENTINEL, (size_t)np0 * d * 4u);
                memset(g[5].h, KVQ_TB_SENTINEL, (size_t)np0 * d * 4u);
                /* a value step that quantized nothing leaves the outputs as they were */
                verdict(&u, rs, gs, rf, gf, r, g, 6);
            }
        }
        for (int i = 0; i < 6; i++) {
            buf_free(&r[i]);
            buf_free(&g[i]);
        }
    }
    free(bank0);
    free(win);
}

/* ---- the run ------------------------------------------------------------------ */

static void one_case(void)
{
    tcase c;
    memset(&c, 0, sizeof c);
    rnd_shape(&c);
    int in = (int)kvq_tb_rndu(100);
    in = in < 35 ? IN_NEAR : in < 55 ? IN_GRID : in < 65 ? IN_WIDE : in < 72 ? IN_ZEROS
       : in < 80 ? IN_HUGE : in < 86 ? IN_SUB : in < 91 ? IN_NAN : in < 96 ? IN_INF : IN_OUT;
    c.input = in_name[in];
    const uint64_t n = (uint64_t)c.tokens * c.dim, nb = (uint64_t)c.npat * c.dim;
    float *x = (float *)kvq_tb_malloc(n * 4u), *bank = (float *)kvq_tb_malloc(nb * 4u);
    make_bank(bank, c.npat, c.dim, in);
    make_tokens(x, c.tokens, c.dim, bank, c.npat, in);
    if (in >= IN_NAN) {                  /* a bad value in the input or the bank */
        if (kvq_tb_chance(50)) plant_bad(x, n, in);
        else plant_bad(bank, nb, in);
    }
    /* values with more than 16 patterns: the fused form half the time */
    const int fusable = c.kind == KVQ_PKV_VALUE && c.npat > 16u && c.p.group <= 128u;
    /* the default launchers (0 .. 4), or the unpruned scan asked for (5 .. 7) */
    static const int apis[6] = {0, 1, 2, 3, 5, 6};
    case_quant(&c, x, bank, fusable && kvq_tb_chance(50) ? (kvq_tb_chance(70) ? 4 : 7)
                                                         : apis[kvq_tb_rndu(6)]);
    case_assign(&c, x, bank, kvq_tb_chance(50) ? KVQ_PKV_DIST_MINMAX : KVQ_PKV_DIST_EUCLID,
                kvq_tb_chance(20), kvq_tb_chance(30) ? KVQ_CUDA_PKV_UNPRUNED : 0u);
    case_update(&c, x, c.tokens, kvq_tb_chance(20));
    if (c.kind != KVQ_PKV_KEY_PREFILL && c.p.group <= 128u) case_steps(&c, in);
    free(x);
    free(bank);
}

/* The fused value quantizer's register-resident form (d = 128, G = 128, 17 to 32
 * patterns) under random parameters, policies and inputs. */
static void fused_case(void)
{
    tcase c;
    memset(&c, 0, sizeof c);
    rnd_shape(&c);
    c.kind = KVQ_PKV_VALUE;
    c.p.group = c.p.residual = 128u;
    c.dim = 128u;
    c.tokens = 1u + kvq_tb_rndu(300);
    c.npat = 17u + kvq_tb_rndu(16);
    int in = (int)kvq_tb_rndu(IN_N);
    c.input = in_name[in];
    const uint64_t n = (uint64_t)c.tokens * c.dim, nb = (uint64_t)c.npat * c.dim;
    float *x = (float *)kvq_tb_malloc(n * 4u), *bank = (float *)kvq_tb_malloc(nb * 4u);
    make_bank(bank, c.npat, c.dim, in);
    make_tokens(x, c.tokens, c.dim, bank, c.npat, in);
    if (in >= IN_NAN) {
        if (kvq_tb_chance(50)) plant_bad(x, n, in);
        else plant_bad(bank, nb, in);
    }
    case_quant(&c, x, bank, kvq_tb_chance(70) ? 4 : 7); /* pruned (the default), or not */
    free(x);
    free(bank);
}

/* ---- the pruned assignment [PKV-DEV-05] -------------------------------------
 *
 * d = 128, 1 to 32 patterns (mostly 17 to 32), the min-max metric, every kind,
 * through the default (pruned) launchers (scratch, direct, fused direct) and the
 * assignment launcher, and a fifth of the time the unpruned ones on the same
 * inputs, against the fast path bit for bit, on inputs that stress the pruning:
 *   random     tokens and patterns independent and uniform: every distance alike,
 *              the bound prunes little (the full-scan fallback);
 *   clustered  tokens near one pattern (noise 2^-4 or 2^-8): most patterns pruned;
 *   ties       x = b and m_j = b + s_j, s_j one +h and one -h entry (h of two sizes),
 *              exact duplicates too: many patterns at exactly the least distance 2h,
 *              the answer their lowest index.  The entries sit on channels that are
 *              multiples of 16 half the time -- the probe channels of the bound
 *              (d / PKV_PROBE apart) -- so the bound equals the distance there: a
 *              pattern tied with the best and bounded exactly at it must still be
 *              visited (KVQ_PKV_PLANT 3 prunes it and loses the lower index);
 *   near ties  as ties, with h and h (1 + 2^-19): distances a few ulps apart.
 * Each mode also runs as keys (decode, and prefill by min-max). */
enum { PR_RANDOM, PR_CLUSTER, PR_TIES, PR_NEAR, PR_N };
static const char *pr_name[PR_N] = {"prune random", "prune clustered", "prune ties",
                                    "prune near ties"};

static uint32_t pr_channel(void)
{
    return kvq_tb_chance(50) ? 16u * kvq_tb_rndu(8) : kvq_tb_rndu(128);
}

static void prune_inputs(float *x, uint32_t T, float *bank, uint32_t npat, int mode)
{
    const uint32_t d = 128u;
    float b[128];
    const float scl = mode == PR_NEAR ? 0x1p-10f : 1.0f; /* near ties: exact sums */
    for (uint32_t i = 0; i < d; i++) b[i] = grid_val() * scl;
    const float h0 = mode == PR_NEAR ? 0x1p-4f : 0.25f;
    for (uint32_t j = 0; j < npat; j++) {
        float *m = bank + kvq_pkv_pattern_offset(j, d);
        if (mode == PR_RANDOM || mode == PR_CLUSTER) {
            for (uint32_t i = 0; i < d; i++)
                m[i] = mode == PR_RANDOM ? rnd_val(IN_NEAR) : grid_val();
            continue;
        }
        if (j > 0 && kvq_tb_chance(15)) { /* an exact duplicate */
            memcpy(m, bank + kvq_pkv_pattern_offset(kvq_tb_rndu(j), d), d * sizeof *m);
            continue;
        }
        float h = kvq_tb_chance(70) ? h0 : 2.0f * h0;
        if (mode == PR_NEAR && kvq_tb_chance(50)) h *= 1.0f + 0x1p-19f;
        memcpy(m, b, d * sizeof *m);
        const uint32_t pc = pr_channel();
        uint32_t qc = pr_channel();
        if (qc == pc) qc = (pc + 16u) % d;
        m[pc] = b[pc] + h;               /* exact: b on a grid of 2^-3 scl, h of 2^-23 */
        m[qc] = b[qc] - h;
    }
    for (uint32_t t = 0; t < T; t++) {
        float *xt = x + (uint64_t)t * d;
        if (mode == PR_RANDOM) {
            for (uint32_t i = 0; i < d; i++) xt[i] = rnd_val(IN_NEAR);
        } else if (mode == PR_CLUSTER) {
            const float *m = bank + kvq_pkv_pattern_offset(kvq_tb_rndu(npat), d);
            const float amp = kvq_tb_chance(50) ? 0x1p-4f : 0x1p-8f;
            for (uint32_t i = 0; i < d; i++) xt[i] = m[i] + (float)(kvq_tb_rndf() * 2.0 - 1.0) * amp;
        } else if (kvq_tb_chance(85)) {  /* the base row: every s_j pattern at distance 2h */
            memcpy(xt, b, d * sizeof *xt);
        } else {                         /* the base row plus a grid shift or one spike */
            memcpy(xt, b, d * sizeof *xt);
            xt[pr_channel()] += (float)((int)kvq_tb_rndu(5) - 2) * 0.125f * scl;
        }
    }
}

static void prune_case(int mode)
{
    tcase c;
    memset(&c, 0, sizeof c);
    rnd_shape(&c);
    c.dim = 128u;
    c.npat = kvq_tb_chance(70) ? 17u + kvq_tb_rndu(16) : 1u + kvq_tb_rndu(32);
    c.p.key_dist = KVQ_PKV_DIST_MINMAX;
    if (c.kind == KVQ_PKV_VALUE) {
        if (kvq_tb_chance(60)) c.p.group = 128u;
        c.tokens = 1u + kvq_tb_rndu(kvq_tb_chance(20) ? 8 : 600);
    } else {
        c.tokens = c.p.group * (1u + kvq_tb_rndu(c.p.group <= 32u ? 8u : 3u));
    }
    c.p.residual = c.p.group;
    if (c.kind == KVQ_PKV_VALUE && 128u % c.p.group != 0u) c.p.group = c.p.residual = 128u;
    c.input = pr_name[mode];
    const uint64_t n = (uint64_t)c.tokens * c.dim, nb = (uint64_t)c.npat * c.dim;
    float *x = (float *)kvq_tb_malloc(n * 4u), *bank = (float *)kvq_tb_malloc(nb * 4u);
    prune_inputs(x, c.tokens, bank, c.npat, mode);
    if (kvq_tb_chance(5)) {              /* a bad value: the pruned forms keep the error contract */
        const int in = IN_NAN + (int)kvq_tb_rndu(3);
        if (kvq_tb_chance(50)) plant_bad(x, n, in);
        else plant_bad(bank, nb, in);
    }
    const int fusable = c.kind == KVQ_PKV_VALUE && c.npat > 16u && c.p.group <= 128u;
    /* scratch, direct, fused direct (apis 1, 3, 4), or their unpruned twins (5, 6, 7) */
    const int unpruned = kvq_tb_chance(20);
    const int form = fusable && kvq_tb_chance(50) ? 2 : (int)kvq_tb_rndu(2);
    static const int apis[2][3] = {{1, 3, 4}, {5, 6, 7}};
    case_quant(&c, x, bank, apis[unpruned][form]);
    case_assign(&c, x, bank, KVQ_PKV_DIST_MINMAX, 0, unpruned ? KVQ_CUDA_PKV_UNPRUNED : 0u);
    free(x);
    free(bank);
}

/* A large block: T tokens of d = 128, 32 patterns, values and keys. */
static void large_case(uint32_t T, uint32_t kind)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.p = kvq_pkv_params_default(kind == KVQ_PKV_VALUE ? 2u : 4u);
    c.kind = kind;
    c.tokens = T;
    c.dim = 128u;
    c.npat = 32u;
    c.pol = kvq_policy_default;
    c.input = "large";
    const uint64_t n = (uint64_t)T * c.dim, nb = (uint64_t)c.npat * c.dim;
    float *x = (float *)kvq_tb_malloc(n * 4u), *bank = (float *)kvq_tb_malloc(nb * 4u);
    make_bank(bank, c.npat, c.dim, IN_NEAR);
    make_tokens(x, T, c.dim, bank, c.npat, IN_NEAR);
    case_quant(&c, x, bank, 1);          /* the pruned assignment [PKV-DEV-05] */
    case_quant(&c, x, bank, 5);          /* the unpruned scan */
    if (kind == KVQ_PKV_VALUE) case_quant(&c, x, bank, 4);
    if (kind == KVQ_PKV_VALUE) case_quant(&c, x, bank, 7);
    case_assign(&c, x, bank, KVQ_PKV_DIST_MINMAX, 0, 0u);
    case_assign(&c, x, bank, KVQ_PKV_DIST_MINMAX, 0, KVQ_CUDA_PKV_UNPRUNED);
    case_update(&c, x, 128u, 0);
    free(x);
    free(bank);
}

/* Option bits the launchers refuse [PKV-ERR-01]: an unknown bit of the assignment,
 * both dequantizer forms at once or an unknown bit -- KVQ_E_PARAM, nothing written
 * (the outputs keep the sentinel, guards included). */
static void opts_case(void)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.p = kvq_pkv_params_default(2u);
    c.kind = KVQ_PKV_VALUE;
    c.tokens = 64u;
    c.dim = 128u;
    c.npat = 4u;
    c.pol = kvq_policy_default;
    c.input = "bad options";
    const uint64_t n = (uint64_t)c.tokens * c.dim, nb = (uint64_t)c.npat * c.dim;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(&c.p, c.kind, c.tokens, c.dim);
    const size_t cb = (size_t)kvq_kivi_code_bytes(&ks), ng = (size_t)kvq_kivi_groups(&ks);
    float *x = (float *)kvq_tb_malloc(n * 4u), *bank = (float *)kvq_tb_malloc(nb * 4u);
    float *resid = (float *)kvq_tb_malloc(n * 4u), *sc = (float *)kvq_tb_malloc(ng * 4u);
    float *zr = (float *)kvq_tb_malloc(ng * 4u);
    uint8_t *codes = (uint8_t *)kvq_tb_malloc(cb);
    uint16_t *ix = (uint16_t *)kvq_tb_malloc((size_t)kvq_pkv_index_bytes(c.tokens));
    uint32_t f = 0;
    make_bank(bank, c.npat, c.dim, IN_GRID);
    make_tokens(x, c.tokens, c.dim, bank, c.npat, IN_NEAR);
    if (kvq_pkv_quantize(codes, sc, zr, ix, resid, &f, x, c.kind, c.tokens, c.dim, bank, c.npat,
                         &c.p, &c.pol) != KVQ_OK)
        kvq_tb_cuda(cudaErrorInvalidValue, "opts_case: the fast path refused its own block");
    void *dx = dev_copy(x, n * 4u), *db = dev_copy(bank, nb * 4u), *dc = dev_copy(codes, cb);
    void *ds = dev_copy(sc, ng * 4u), *dz = dev_copy(zr, ng * 4u);
    void *di = dev_copy(ix, (size_t)kvq_pkv_index_bytes(c.tokens));
    static const uint32_t bad_dq[3] = {KVQ_CUDA_PKV_DQ_ONE | KVQ_CUDA_PKV_DQ_TWO, 0x4u,
                                       KVQ_CUDA_PKV_UNPRUNED};
    for (int k = 0; k < 4; k++) {
        buf r, g;
        const int assign = k == 3;
        const size_t on = assign ? (size_t)kvq_pkv_index_bytes(c.tokens) : (size_t)n * 4u;
        buf_make(&r, assign ? "index" : "y", on, 0);
        buf_make(&g, assign ? "index" : "y", on, 1);
        tcase u = c;
        u.op = assign ? "assign minmax" : "dequantize";
        u.api = assign ? "device, opts 0x1" : k == 0 ? "device, both forms" : k == 1 ? "device, opts 0x4"
                                                                                 : "device, opts UNPRUNED";
        kvq_tb_case();
        int gs;
        if (assign)
            gs = kvq_cuda_pkv_assign((uint16_t *)g.d, (const float *)dx, c.tokens, c.dim,
                                     (const float *)db, c.npat, KVQ_PKV_DIST_MINMAX, 0x1u, 0);
        else
            gs = kvq_cuda_pkv_dequantize((float *)g.d, &f, (const uint8_t *)dc, (const float *)ds,
                                         (const float *)dz, (const uint16_t *)di, c.kind, c.tokens,
                                         c.dim, (const float *)db, c.npat, &c.p, &c.pol, NULL, 0,
                                         bad_dq[k], 0);
        kvq_tb_cuda(cudaDeviceSynchronize(), "opts_case");
        buf_fetch(&g);
        verdict(&u, KVQ_E_PARAM, gs, 0u, 0u, &r, &g, 1);
        buf_free(&r);
        buf_free(&g);
    }
    cudaFree(dx);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    cudaFree(di);
    free(x);
    free(bank);
    free(resid);
    free(sc);
    free(zr);
    free(codes);
    free(ix);
}

int main(void)
{
    kvq_tb_init("gpu-pkv-test", DEFAULT_SEED);
    const uint64_t cases = kvq_tb_env_count("KVQ_PKV_CASES", 600);
    const uint64_t large = kvq_tb_env_count("KVQ_PKV_LARGE", 65536);
    if (!kvq_tb_device("%llu random cases, large blocks of %llu tokens", (unsigned long long)cases,
                       (unsigned long long)large))
        return 0;
    opts_case();
    for (uint64_t k = 0; k < cases; k++) one_case();
    for (uint64_t k = 0; k < cases / 8u + 1u; k++) fused_case();
    for (uint64_t k = 0; k < cases / 4u + 4u; k++) prune_case((int)(k % PR_N));
    if (large >= 128u && large <= KVQ_MAX_DIM) {
        const uint32_t T = (uint32_t)(large / 128u * 128u);
        large_case(T, KVQ_PKV_VALUE);
        large_case(T, KVQ_PKV_KEY_PREFILL);
    }
    return kvq_tb_finish();
}
