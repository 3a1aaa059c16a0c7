/*
 * gpu_test.cu -- `make gpu-test`: the CUDA KIVI kernels against ref/fast, bitwise.
 *
 * Every case runs the reference (include/kvq.h, ref/fast/kivi.c) and the device
 * launcher (gpu/kvq_cuda.h) on the same input and compares, bit for bit: the
 * status, the flags word, every code byte, the scale and zero bit patterns and
 * every dequantized bit pattern.  Outputs start as a sentinel pattern on both
 * sides, with guard bytes past each buffer (gpu/testbed.h), so "nothing written
 * on error" [POL-NF-01] [API-ERR-01] is checked by the same comparison, and
 * after every call, an error return and the argument errors included, each
 * side's guards (and after an error its whole outputs and flags word) must
 * still hold the sentinel; KVQ_CUDA_DIRECT, whose outputs are unspecified on
 * an error, is held to its guards only then (the quantizer's on a tenth of the cases,
 * the dequantizer's on half).  Inputs mix ordinary values with
 * the special ones of the policy (zero ranges, subnormals, ranges that overflow
 * binary32 or binary16, exact ties, NaN and infinities) over bits 1/2/4/8, both
 * groupings, both metadata formats, every policy, aligned and misaligned
 * buffers.  Half the cases with a caller's workspace pass KVQ_CUDA_WS_CLEAN: the
 * one workspace of the run as every call before it left it (the first call on a
 * new allocation goes without), so a state left set shows as a wrong status.
 *
 * SPEC: [KIVI-Q-01..08] [KIVI-D-01..03] [KIVI-M-01..03] [POL-NF-01] [POL-OV-01]
 *       [POL-OV-02] [POL-ZR-01] [POL-SN-01] [POL-TIE-01] [POL-TIE-02] [LAY-PACK-01]
 *       [API-ERR-01] [KIVI-DEV-06] [KIVI-DEV-07] [KIVI-DEV-08] [KIVI-DEV-09] [KIVI-DEV-10]
 *
 * Without a device: "gpu-test: SKIPPED (no CUDA device: <reason>)", exit 0.
 * Seed: KVQ_SEED (default below), printed on failure; cases: KVQ_GPU_CASES; large
 * cases: KVQ_GPU_LARGE (6) of about 2^KVQ_GPU_LARGE_LOG2 (22) values each.
 * The closing line is "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_cuda.h"
#include "testbed.h" /* seed, RNG, device buffers, output sets, counters */

#define DEFAULT_SEED 0x6b76712d67707531ull /* "kvq-gpu1" */

static unsigned long long g_groups;
static uint32_t g_large_log2 = 22; /* KVQ_GPU_LARGE_LOG2: the large cases' size */

/* device buffers, grown on demand: inputs, workspace, the quantizer's outputs
 * (codes, scale, zero; also the dequantizer's inputs) and the dequantizer's */
static kvq_tb_dbuf d_x, d_ws, d_q[3], d_y[1];

/* ---- case description and reporting ------------------------------------ */
typedef struct tcase {
    const char *op;      /* "quantize" / "dequantize" */
    kvq_kivi_shape sh;
    kvq_policy pol;
    uint32_t opts, xoff, coff, ws, host;
} tcase;

static void print_case(const tcase *c)
{
    printf("  seed=0x%016llx case=%lu op=%s bits=%u group=%u grouping=%s meta=%s T=%u D=%u "
           "ties=%s overflow=%s subnormal=%s opts=0x%x xoff=%u coff=%u workspace=%s api=%s\n",
           (unsigned long long)kvq_tb_seed(), kvq_tb_cases(), c->op, c->sh.bits, c->sh.group,
           c->sh.grouping == KVQ_GROUP_CHANNEL ? "channel" : "token",
           c->sh.meta == KVQ_META_F16 ? "f16" : "f32", c->sh.tokens, c->sh.channels,
           c->pol.ties ? "away" : "even", c->pol.overflow ? "nan" : "saturate",
           c->pol.subnormal ? "daz" : "keep", c->opts, c->xoff, c->coff,
           c->ws ? "given" : "allocated", c->host ? "host" : "device");
}

static void dump_group_x(const tcase *c, const float *x, uint64_t g)
{
    printf("  group %llu inputs (hex binary32, element order):", (unsigned long long)g);
    for (uint32_t i = 0; i < c->sh.group; i++) {
        if (i % 8u == 0u) printf("\n   ");
        printf(" %08x", kvq_f32_bits(x[kvq_kivi_elem_index(&c->sh, g, i)]));
    }
    printf("\n");
}

static void dump_group_q(const tcase *c, const uint8_t *codes, const float *s, const float *z,
                         uint64_t g)
{
    uint32_t gb = kvq_kivi_group_bytes(&c->sh);
    printf("  group %llu inputs: scale %08x zero %08x codes", (unsigned long long)g,
           kvq_f32_bits(s[g]), kvq_f32_bits(z[g]));
    for (uint32_t b = 0; b < gb; b++) printf(" %02x", codes[kvq_kivi_group_code_offset(&c->sh, g) + b]);
    printf("\n");
}

static int report(const tcase *c, const char *what)
{
    if (!kvq_tb_fail()) return 0;
    printf("FAIL %s: %s\n", c->op, what);
    print_case(c);
    return 1;
}

/* Guards of o untouched after its call; with strict, nothing at all after an
 * error [API-ERR-01]: else report. */
static int check_outs(const tcase *c, const kvq_tb_outs *o, int strict)
{
    char msg[256];
    if (kvq_tb_outs_check(o, strict && o->status != KVQ_OK, msg, sizeof msg)) return 1;
    report(c, msg);
    return 0;
}

/* ---- input generation ---------------------------------------------------- */
static float rnd_mant(int e) /* a random normal-ish value m * 2^e, 1 <= m < 2 */
{
    return ldexpf(1.0f + (float)(kvq_tb_rnd() >> 41) * 0x1p-23f, e);
}

static float rnd_finite_bits(void)
{
    uint32_t b = (uint32_t)kvq_tb_rnd();
    uint32_t e = 1u + kvq_tb_rndu(254u);
    return kvq_f32_from_bits((b & 0x807FFFFFu) | (e << 23));
}

/* Fill one group of x with a value pattern of one kind. */
static void gen_group(float *x, const kvq_kivi_shape *sh, uint64_t g)
{
    const uint32_t G = sh->group, cmax = kvq_code_max(sh->bits);
    uint32_t kind = kvq_tb_rndu(10);
    float cval = 0.0f;
    int e0 = (int)kvq_tb_rndu(41) - 20, a = (int)kvq_tb_rndu(101) - 50;
    float sgn = kvq_tb_chance(50) ? -1.0f : 1.0f;
    if (kind == 2) {
        switch (kvq_tb_rndu(5)) {
        case 0: cval = 0.0f; break;
        case 1: cval = -0.0f; break;
        case 2: cval = kvq_f32_from_bits(1u + kvq_tb_rndu(0x7FFFFFu)); break;
        default: cval = sgn * rnd_mant(e0);
        }
    }
    if (kind == 6 && sh->meta == KVQ_META_F16) e0 = (int)kvq_tb_rndu(20) - 12; /* s = 2^e0 in f16 */
    for (uint32_t i = 0; i < G; i++) {
        float v;
        switch (kind) {
        case 0: case 1: /* ordinary, a few binades around 2^e0, both signs or one */
            v = (kvq_tb_chance(50) ? -1.0f : 1.0f) * rnd_mant(e0 + (int)kvq_tb_rndu(6));
            if (kind == 1) v = fabsf(v) + ldexpf(1.0f, e0 + 6);
            break;
        case 2: v = cval; break;                           /* zero range */
        case 3: /* subnormals, zeros of both signs, tiny normals */
            switch (kvq_tb_rndu(4)) {
            case 0:
                v = kvq_f32_from_bits((kvq_tb_chance(50) ? 0x80000000u : 0u)
                                      | (1u + kvq_tb_rndu(0x7FFFFFu)));
                break;
            case 1: v = kvq_tb_chance(50) ? 0.0f : -0.0f; break;
            default: v = sgn * rnd_mant(-126 + (int)kvq_tb_rndu(4));
            }
            break;
        case 4: /* near the top of binary32: ranges overflow */
            v = (kvq_tb_chance(50) ? -1.0f : 1.0f) * rnd_mant(125 + (int)kvq_tb_rndu(3));
            break;
        case 5: /* beyond binary16: stored metadata overflows RN16 */
            v = (kvq_tb_chance(50) ? -1.0f : 1.0f) * rnd_mant(12 + (int)kvq_tb_rndu(8));
            break;
        case 6: { /* exact ties: min a*2^e, max (a+cmax)*2^e, so s = 2^e, q = k or k+1/2 */
            uint32_t k = kvq_tb_rndu(cmax);
            float half = kvq_tb_chance(60) ? 0.5f : 0.0f;
            if (i == 0) v = ldexpf((float)a, e0);
            else if (i == 1) v = ldexpf((float)(a + (int)cmax), e0);
            else v = ldexpf((float)a + (float)k + half, e0);
            if (i > 1 && kvq_tb_chance(30)) /* a few ulps off the tie: q near k+1/2 */
                v = kvq_f32_from_bits(kvq_f32_bits(v) + (uint32_t)kvq_tb_rndu(7) - 3u);
            break;
        }
        case 7: /* a few distinct values */
            v = (float)(int)kvq_tb_rndu(4) * ldexpf(1.0f, e0) * sgn;
            break;
        case 8: v = rnd_finite_bits(); break;            /* any finite binary32 */
        default: /* tiny range on a large offset: scale near or below the normal limit */
            v = ldexpf(1.0f + (float)kvq_tb_rndu(4) * 0x1p-23f, e0 + (int)kvq_tb_rndu(3) * 40 - 40);
            if (kvq_tb_chance(30)) v = kvq_f32_from_bits(kvq_tb_rndu(0x00FFFFFFu)) * sgn;
        }
        x[kvq_kivi_elem_index(sh, g, i)] = v;
    }
}

static void gen_shape(kvq_kivi_shape *sh, int big)
{
    static const uint32_t groups[] = {8, 16, 24, 32, 32, 32, 40, 64, 64, 96, 128, 128, 256, 512};
    sh->bits = 1u << kvq_tb_rndu(4);
    sh->grouping = kvq_tb_chance(50) ? KVQ_GROUP_CHANNEL : KVQ_GROUP_TOKEN;
    sh->meta = kvq_tb_chance(50) ? KVQ_META_F32 : KVQ_META_F16;
    sh->group = kvq_tb_chance(2) ? 1024u : groups[kvq_tb_rndu(sizeof groups / sizeof groups[0])];
    uint32_t other = big ? 256 + kvq_tb_rndu(769) : 1 + kvq_tb_rndu(96);
    /* a third of the per-channel shapes with channels a multiple of 32 (the head
     * sizes of models: whole warps of channels) */
    if (sh->grouping == KVQ_GROUP_CHANNEL && kvq_tb_chance(33))
        other = 32u * (1 + kvq_tb_rndu(big ? 32 : 3));
    uint32_t mult = 1 + kvq_tb_rndu(4);
    if (big) { /* about 2^(L-1) .. 2^L values, L = KVQ_GPU_LARGE_LOG2 (22) */
        mult = (uint32_t)(((uint64_t)1 << g_large_log2) / (sh->group * other));
        mult = mult / 2 + kvq_tb_rndu(mult / 2 + 1);
        if (mult == 0) mult = 1;
    }
    if (sh->grouping == KVQ_GROUP_CHANNEL) {
        sh->tokens = sh->group * mult;
        sh->channels = other;
    } else {
        sh->channels = sh->group * mult;
        sh->tokens = other;
    }
}

/* ---- one quantize case ----------------------------------------------------- */
/* A quantizer's output set (gpu/testbed.h): codes, scale, zero, each with its
 * guard bytes, sentinel-filled. */
static void qout_init(kvq_tb_outs *o, const char *side, const kvq_kivi_shape *sh)
{
    uint64_t ng = kvq_kivi_groups(sh);
    kvq_tb_outs_init(o, side);
    kvq_tb_outs_add(o, "codes", kvq_kivi_code_bytes(sh));
    kvq_tb_outs_add(o, "scale", ng * sizeof(float));
    kvq_tb_outs_add(o, "zero", ng * sizeof(float));
}

static uint8_t *q_codes(const kvq_tb_outs *o) { return o->buf[0].p; }
static float *q_scale(const kvq_tb_outs *o) { return (float *)o->buf[1].p; }
static float *q_zero(const kvq_tb_outs *o) { return (float *)o->buf[2].p; }

/* Compare two quantizer results; on a mismatch report and dump the group. */
static int compare_q(const tcase *c, const float *x, const kvq_tb_outs *r, const kvq_tb_outs *d,
                     int outputs)
{
    char msg[256];
    uint64_t ng = kvq_kivi_groups(&c->sh);
    uint32_t gb = kvq_kivi_group_bytes(&c->sh);
    const float *rs = q_scale(r), *rz = q_zero(r), *ds = q_scale(d), *dz = q_zero(d);
    if (r->status != d->status) {
        snprintf(msg, sizeof msg, "status ref %s gpu %s", kvq_status_name(r->status),
                 kvq_status_name(d->status));
        if (report(c, msg)) printf("  (first group shown)\n"), dump_group_x(c, x, 0);
        return 0;
    }
    if (r->flags != d->flags) {
        snprintf(msg, sizeof msg, "flags ref 0x%08x gpu 0x%08x", r->flags, d->flags);
        report(c, msg);
        return 0;
    }
    if (!outputs) return 1;
    for (uint64_t g = 0; g < ng; g++) {
        const uint8_t *a = q_codes(r) + kvq_kivi_group_code_offset(&c->sh, g);
        const uint8_t *b = q_codes(d) + kvq_kivi_group_code_offset(&c->sh, g);
        if (memcmp(a, b, gb) != 0 || !kvq_f32_same(rs[g], ds[g]) || !kvq_f32_same(rz[g], dz[g])) {
            snprintf(msg, sizeof msg, "group %llu: scale ref %08x gpu %08x, zero ref %08x gpu %08x%s",
                     (unsigned long long)g, kvq_f32_bits(rs[g]), kvq_f32_bits(ds[g]),
                     kvq_f32_bits(rz[g]), kvq_f32_bits(dz[g]),
                     memcmp(a, b, gb) ? ", codes differ" : "");
            if (report(c, msg)) {
                printf("  codes ref:");
                for (uint32_t k = 0; k < gb; k++) printf(" %02x", a[k]);
                printf("\n  codes gpu:");
                for (uint32_t k = 0; k < gb; k++) printf(" %02x", b[k]);
                printf("\n");
                dump_group_x(c, x, g);
            }
            return 0;
        }
    }
    if (q_codes(r)[kvq_kivi_code_bytes(&c->sh)] != q_codes(d)[kvq_kivi_code_bytes(&c->sh)]) {
        report(c, "byte past the codes written");
        return 0;
    }
    return 1;
}

/* opts for a call on the run's one workspace d_ws, as kvq_tb_dgrow just left it: a
 * new allocation is made clean once, by a call without KVQ_CUDA_WS_CLEAN; from then
 * on every call's finish (quantizer or dequantizer) leaves it clean [KIVI-DEV-09]. */
static uint32_t ws_opts(uint32_t opts)
{
    static void *seen_p;
    static size_t seen_n;
    if (d_ws.p != seen_p || d_ws.n != seen_n) {
        seen_p = d_ws.p, seen_n = d_ws.n;
        opts &= ~KVQ_CUDA_WS_CLEAN;
    }
    return opts;
}

/* Run the device quantizer of case c on x into d (host copies of the outputs,
 * guards included). */
static void run_gpu_quantize(const tcase *c, const float *x, kvq_tb_outs *d)
{
    const kvq_kivi_shape *sh = &c->sh;
    uint64_t n = kvq_kivi_elems(sh);
    if (c->host) {
        d->status = kvq_cuda_kivi_quantize_host(q_codes(d), q_scale(d), q_zero(d), &d->flags, x,
                                                sh, &c->pol);
        return;
    }
    float *dx = (float *)kvq_tb_dgrow(&d_x, (n + 4) * sizeof(float)) + c->xoff;
    const size_t off[3] = {c->coff, 0u, 0u};
    void *dq[3] = {NULL, NULL, NULL};
    kvq_tb_cuda(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice), "copy x");
    kvq_tb_outs_device(d, d_q, off, dq);
    void *ws = NULL;
    size_t wsb = 0;
    uint32_t opts = c->opts;
    if (c->ws) {
        wsb = kvq_cuda_kivi_quantize_workspace(sh, c->opts);
        ws = kvq_tb_dgrow(&d_ws, wsb);
        opts = ws_opts(opts);
    }
    d->status = kvq_cuda_kivi_quantize((uint8_t *)dq[0], (float *)dq[1], (float *)dq[2],
                                       &d->flags, dx, sh, &c->pol, ws, wsb, opts, 0);
    kvq_tb_outs_fetch(d, dq);
}

/* ---- one dequantize case ---------------------------------------------------- */
static void run_dequant_case(tcase c, const uint8_t *codes, const float *scale, const float *zero)
{
    const kvq_kivi_shape *sh = &c.sh;
    uint64_t n = kvq_kivi_elems(sh), ng = kvq_kivi_groups(sh), cb = kvq_kivi_code_bytes(sh);
    kvq_tb_outs r, d;
    char msg[256];
    c.op = "dequantize";
    kvq_tb_case();
    kvq_tb_outs_init(&r, "ref");
    kvq_tb_outs_init(&d, "gpu");
    float *yr = (float *)kvq_tb_outs_add(&r, "y", n * sizeof(float));
    float *yd = (float *)kvq_tb_outs_add(&d, "y", n * sizeof(float));
    r.status = kvq_kivi_dequantize(yr, &r.flags, codes, scale, zero, sh, &c.pol);
    if (c.host) {
        d.status = kvq_cuda_kivi_dequantize_host(yd, &d.flags, codes, scale, zero, sh, &c.pol);
    } else {
        const size_t off[1] = {c.xoff * sizeof(float)};
        void *dy[1] = {NULL};
        uint8_t *dc = (uint8_t *)kvq_tb_dgrow(&d_q[0], cb + 16) + c.coff;
        float *ds = (float *)kvq_tb_dgrow(&d_q[1], ng * sizeof(float));
        float *dz = (float *)kvq_tb_dgrow(&d_q[2], ng * sizeof(float));
        kvq_tb_cuda(cudaMemcpy(dc, codes, cb, cudaMemcpyHostToDevice), "copy codes");
        kvq_tb_cuda(cudaMemcpy(ds, scale, ng * sizeof(float), cudaMemcpyHostToDevice),
                    "copy scale");
        kvq_tb_cuda(cudaMemcpy(dz, zero, ng * sizeof(float), cudaMemcpyHostToDevice), "copy zero");
        kvq_tb_outs_device(&d, d_y, off, dy);
        void *ws = c.ws ? kvq_tb_dgrow(&d_ws, kvq_cuda_kivi_dequantize_workspace(sh)) : NULL;
        const uint32_t opts = c.ws ? ws_opts(c.opts) : c.opts;
        d.status = kvq_cuda_kivi_dequantize((float *)dy[0], &d.flags, dc, ds, dz, sh, &c.pol, ws,
                                            c.ws ? kvq_cuda_kivi_dequantize_workspace(sh) : 0, opts, 0);
        kvq_tb_outs_fetch(&d, dy);
    }
    g_groups += ng;
    /* KVQ_CUDA_DIRECT leaves unspecified outputs on an error [KIVI-DEV-10]: the status,
     * the flags word and the guards only then */
    const int outputs = c.host || !(c.opts & KVQ_CUDA_DIRECT) || r.status == KVQ_OK;
    if (r.status != d.status) {
        snprintf(msg, sizeof msg, "status ref %s gpu %s", kvq_status_name(r.status),
                 kvq_status_name(d.status));
        report(&c, msg);
    } else if (r.flags != d.flags) {
        snprintf(msg, sizeof msg, "flags ref 0x%08x gpu 0x%08x", r.flags, d.flags);
        report(&c, msg);
    } else {
        const uint64_t ncmp = outputs ? n : 0u;   /* the values compared */
        uint64_t e;
        for (e = 0; e < ncmp; e++)
            if (!kvq_f32_same(yr[e], yd[e])) break;
        if (e < ncmp) {
            uint32_t i;
            uint64_t g = kvq_kivi_group_of(sh, e, &i);
            snprintf(msg, sizeof msg, "y[%llu] (group %llu element %u): ref %08x gpu %08x",
                     (unsigned long long)e, (unsigned long long)g, i, kvq_f32_bits(yr[e]),
                     kvq_f32_bits(yd[e]));
            if (report(&c, msg)) dump_group_q(&c, codes, scale, zero, g);
        } else if (check_outs(&c, &r, 1) && check_outs(&c, &d, outputs)) {
            kvq_tb_pass();
        }
    }
    kvq_tb_outs_free(&r);
    kvq_tb_outs_free(&d);
}

/* Metadata a dequantizer must reject or saturate on. */
static void spoil_meta(const kvq_kivi_shape *sh, float *scale, float *zero, uint64_t g)
{
    static const uint32_t bad[] = {
        0xBF800000u, /* -1: negative scale */
        0x7FC00000u, /* NaN */
        0x7F800000u, /* +Inf */
        0x00000001u, /* binary32 subnormal */
        0x35800000u, /* 2^-20: below binary16 normal */
        0x3F800001u, /* 1 + 2^-23: not a binary16 value */
        0x7F000000u, /* 2^127: codes overflow */
        0x47000000u, /* 32768: within binary16 */
        0x80000000u, /* -0 */
    };
    float v = kvq_f32_from_bits(bad[kvq_tb_rndu(sizeof bad / sizeof bad[0])]);
    (void)sh;
    if (kvq_tb_chance(60)) scale[g] = v;
    else zero[g] = kvq_tb_chance(50) ? v : -v;
}

/* ---- the quantize + dequantize pair of one random case --------------------- */
static void run_case(int big)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.op = "quantize";
    gen_shape(&c.sh, big);
    c.pol.ties = kvq_tb_rndu(2);
    c.pol.overflow = kvq_tb_rndu(2);
    c.pol.subnormal = kvq_tb_rndu(2);
    c.opts = kvq_tb_chance(80) ? 0u : kvq_tb_chance(50) ? KVQ_CUDA_DIRECT : KVQ_CUDA_NO_DISCARD;
    c.xoff = kvq_tb_chance(10) ? 1u : 0u;
    c.coff = kvq_tb_chance(10) ? 1u + kvq_tb_rndu(7) : 0u;
    c.ws = kvq_tb_chance(50);
    if (c.ws && kvq_tb_chance(50)) c.opts |= KVQ_CUDA_WS_CLEAN;   /* the state as the call before left it */
    c.host = !big && kvq_tb_chance(5);
    const kvq_kivi_shape *sh = &c.sh;
    uint64_t n = kvq_kivi_elems(sh), ng = kvq_kivi_groups(sh);
    float *x = (float *)kvq_tb_malloc(n * sizeof(float));
    for (uint64_t g = 0; g < ng; g++) gen_group(x, sh, g);
    if (kvq_tb_chance(4)) { /* one non-finite input anywhere [POL-NF-01] */
        static const uint32_t nf[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u};
        x[kvq_tb_rnd() % n] = kvq_f32_from_bits(nf[kvq_tb_rndu(4)]);
    }
    kvq_tb_outs r, d;
    qout_init(&r, "ref", sh);
    qout_init(&d, "gpu", sh);
    kvq_tb_case();
    r.status = kvq_kivi_quantize(q_codes(&r), q_scale(&r), q_zero(&r), &r.flags, x, sh, &c.pol);
    run_gpu_quantize(&c, x, &d);
    g_groups += ng;
    /* KVQ_CUDA_DIRECT leaves unspecified outputs on an error: status only then
     * (and the guards past them) */
    int outputs = !(c.opts & KVQ_CUDA_DIRECT) || r.status == KVQ_OK;
    if (compare_q(&c, x, &r, &d, outputs) && check_outs(&c, &r, 1) && check_outs(&c, &d, outputs))
        kvq_tb_pass();

    /* Dequantize the reference's output, sometimes with spoiled metadata or
     * random codes, sometimes with random metadata. */
    if (r.status == KVQ_OK || kvq_tb_chance(30)) {
        uint64_t cb = kvq_kivi_code_bytes(sh);
        uint8_t *rc = q_codes(&r);
        float *rs = q_scale(&r), *rz = q_zero(&r);
        if (r.status != KVQ_OK || kvq_tb_chance(10)) {
            for (uint64_t b = 0; b < cb; b++) rc[b] = (uint8_t)kvq_tb_rnd();
            for (uint64_t g = 0; g < ng; g++) {
                int ov;
                float s = ldexpf(1.0f + (float)(kvq_tb_rnd() >> 41) * 0x1p-23f,
                                 (int)kvq_tb_rndu(60) - 30);
                float z = ldexpf(1.0f + (float)(kvq_tb_rnd() >> 41) * 0x1p-23f,
                                 (int)kvq_tb_rndu(60) - 30);
                if (kvq_tb_chance(50)) z = -z;
                if (sh->meta == KVQ_META_F16) {
                    s = kvq_round_f16(s, &ov);
                    z = kvq_round_f16(z, &ov);
                    if (s < 0x1p-14f) s = 0.0f;
                }
                rs[g] = s;
                rz[g] = z;
            }
        }
        if (kvq_tb_chance(25)) {
            uint32_t k = 1 + kvq_tb_rndu(3);
            while (k--) spoil_meta(sh, rs, rz, kvq_tb_rnd() % ng);
        } else if (sh->meta == KVQ_META_F32 && kvq_tb_chance(40)) {
            /* valid metadata whose largest codes overflow binary32 and smaller ones do not
             * (a scale in [2^124, 2^128)): KVQ_E_RANGE under the NaN policy [POL-OV-02],
             * saturation under the other; the direct dequantizer finds it in its writing
             * kernel [KIVI-DEV-10] */
            uint32_t k = 1 + kvq_tb_rndu(2);
            while (k--) rs[kvq_tb_rnd() % ng] = ldexpf(1.0f + (float)(kvq_tb_rnd() >> 41) * 0x1p-23f,
                                                      124 + (int)kvq_tb_rndu(4));
        }
        c.xoff = kvq_tb_chance(10) ? 1u : 0u;
        c.coff = kvq_tb_chance(10) ? 1u + kvq_tb_rndu(7) : 0u;
        /* the dequantizer's options: the direct form [KIVI-DEV-10] on half the cases, a
         * clean workspace on half of those with a caller's workspace */
        c.opts = kvq_tb_chance(50) ? KVQ_CUDA_DIRECT : 0u;
        if (c.ws && kvq_tb_chance(50)) c.opts |= KVQ_CUDA_WS_CLEAN;
        run_dequant_case(c, rc, rs, rz);
    }
    kvq_tb_outs_free(&r);
    kvq_tb_outs_free(&d);
    free(x);
}

/* ---- argument errors: same status as the reference, nothing written --------- */

/* Output sets of the argument-error calls (every call fails; nominal sizes). */
static void bad_outs(kvq_tb_outs *q, kvq_tb_outs *y, const char *side)
{
    kvq_tb_outs_init(q, side);
    kvq_tb_outs_add(q, "codes", 64);
    kvq_tb_outs_add(q, "scale", 8 * sizeof(float));
    kvq_tb_outs_add(q, "zero", 8 * sizeof(float));
    kvq_tb_outs_init(y, side);
    kvq_tb_outs_add(y, "y", 64 * sizeof(float));
}

static void run_bad_args(void)
{
    static float x[64];
    static const uint8_t codes[64] = {0}; /* dequantizer inputs */
    static const float s[8] = {0}, z[8] = {0};
    static const char *const side[3] = {"ref", "gpu", "host"};
    kvq_kivi_shape good = {2, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 8, 8};
    kvq_policy pol = {KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP};
    kvq_policy badpol = {7, 0, 0};
    struct { kvq_kivi_shape sh; const kvq_policy *pol; int nullx; } cases[] = {
        {{3, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 8, 8}, &pol, 0},   /* bits 3 */
        {{2, 12, KVQ_GROUP_TOKEN, KVQ_META_F32, 8, 24}, &pol, 0}, /* G not a multiple of 8 */
        {{2, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 8, 12}, &pol, 0},  /* ragged */
        {{2, 8, KVQ_GROUP_CHANNEL, KVQ_META_F32, 12, 4}, &pol, 0},
        {{2, 8, KVQ_GROUP_TOKEN, KVQ_META_F32, 0, 8}, &pol, 0},   /* empty */
        {{2, 8, 2, KVQ_META_F32, 8, 8}, &pol, 0},                 /* bad grouping */
        {{2, 8, KVQ_GROUP_TOKEN, 5, 8, 8}, &pol, 0},              /* bad meta */
        {good, &badpol, 0},
        {good, NULL, 0},
        {good, &pol, 1},
    };
    void *dws = kvq_tb_dgrow(&d_ws, 1u << 16);
    float *dx = (float *)kvq_tb_dgrow(&d_x, sizeof x);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.op = "bad-arguments";
        c.sh = cases[k].sh;
        if (cases[k].pol) c.pol = *cases[k].pol;
        const float *hx = cases[k].nullx ? NULL : x;
        kvq_tb_outs q[3], y[3]; /* ref, device, host launcher */
        void *dq[3] = {NULL, NULL, NULL}, *dy[1] = {NULL};
        for (int i = 0; i < 3; i++) bad_outs(&q[i], &y[i], side[i]);
        kvq_tb_outs_device(&q[1], d_q, NULL, dq);
        kvq_tb_outs_device(&y[1], d_y, NULL, dy);
        int r1 = kvq_kivi_quantize(q_codes(&q[0]), q_scale(&q[0]), q_zero(&q[0]), NULL, hx, &c.sh,
                                   cases[k].pol);
        int r2 = kvq_kivi_dequantize((float *)y[0].buf[0].p, NULL, cases[k].nullx ? NULL : codes,
                                     s, z, &c.sh, cases[k].pol);
        int d1 = kvq_cuda_kivi_quantize((uint8_t *)dq[0], (float *)dq[1], (float *)dq[2], NULL,
                                        cases[k].nullx ? NULL : dx, &c.sh, cases[k].pol, NULL, 0,
                                        0, 0);
        int d2 = kvq_cuda_kivi_dequantize((float *)dy[0], NULL,
                                          cases[k].nullx ? NULL : (const uint8_t *)dq[0],
                                          (float *)dq[1], (float *)dq[2], &c.sh, cases[k].pol,
                                          dws, 1u << 16, 0u, 0);
        kvq_tb_outs_fetch(&q[1], dq);
        kvq_tb_outs_fetch(&y[1], dy);
        int h1 = kvq_cuda_kivi_quantize_host(q_codes(&q[2]), q_scale(&q[2]), q_zero(&q[2]), NULL,
                                             hx, &c.sh, cases[k].pol);
        int h2 = kvq_cuda_kivi_dequantize_host((float *)y[2].buf[0].p, NULL,
                                               cases[k].nullx ? NULL : codes, s, z, &c.sh,
                                               cases[k].pol);
        q[0].status = r1, y[0].status = r2;
        q[1].status = d1, y[1].status = d2;
        q[2].status = h1, y[2].status = h2;
        kvq_tb_case();
        if (r1 != d1 || r1 != h1 || r2 != d2 || r2 != h2 || r1 == KVQ_OK || r2 == KVQ_OK) {
            char msg[160];
            snprintf(msg, sizeof msg, "case %zu: ref %d/%d device %d/%d host %d/%d", k, r1, r2,
                     d1, d2, h1, h2);
            report(&c, msg);
        } else {
            int ok = 1;
            for (int i = 0; i < 3 && ok; i++)
                ok = check_outs(&c, &q[i], 1) && check_outs(&c, &y[i], 1);
            if (ok) kvq_tb_pass();
        }
        for (int i = 0; i < 3; i++) {
            kvq_tb_outs_free(&q[i]);
            kvq_tb_outs_free(&y[i]);
        }
    }
    /* a workspace that is too small is a parameter error, not a crash */
    {
        tcase c;
        kvq_tb_outs q, y;
        void *dq[3] = {NULL, NULL, NULL};
        memset(&c, 0, sizeof c);
        c.op = "bad-workspace";
        c.sh = good;
        c.pol = pol;
        kvq_tb_case();
        bad_outs(&q, &y, "gpu");
        kvq_tb_outs_device(&q, d_q, NULL, dq);
        q.status = kvq_cuda_kivi_quantize((uint8_t *)dq[0], (float *)dq[1], (float *)dq[2], NULL,
                                          dx, &good, &pol, dws, 8, 0, 0);
        kvq_tb_outs_fetch(&q, dq);
        if (q.status != KVQ_E_PARAM) report(&c, "small workspace not rejected");
        else if (check_outs(&c, &q, 1)) kvq_tb_pass();
        kvq_tb_outs_free(&q);
        kvq_tb_outs_free(&y);
    }
}

int main(void)
{
    kvq_tb_init("gpu-test", DEFAULT_SEED);
    unsigned long ncases = (unsigned long)kvq_tb_env_count("KVQ_GPU_CASES", 4000u);

    unsigned long nlarge = (unsigned long)kvq_tb_env_count("KVQ_GPU_LARGE", 6u);
    g_large_log2 = (uint32_t)kvq_tb_env_count("KVQ_GPU_LARGE_LOG2", 22u);
    if (g_large_log2 < 12u || g_large_log2 > 28u) {
        fprintf(stderr, "gpu-test: KVQ_GPU_LARGE_LOG2=%u: not in 12..28\n", g_large_log2);
        return 2;
    }

    if (!kvq_tb_device("%lu random cases, %lu large of about 2^%u values", ncases, nlarge,
                       g_large_log2))
        return 0;
    run_bad_args();
    /* large tensors: many groups a call */
    for (unsigned long k = 0; k < nlarge; k++) run_case(1);
    for (unsigned long k = 0; k < ncases; k++) run_case(0);
    printf("gpu-test: %lu cases over %llu groups\n", kvq_tb_cases(), g_groups);
    return kvq_tb_finish();
}
