/*
 * gpu_test.cu -- `make gpu-test`: the CUDA KIVI kernels against ref/fast, bitwise.
 *
 * Every case runs the reference (include/kvq.h, ref/fast/kivi.c) and the device
 * launcher (gpu/kvq_cuda.h) on the same input and compares, bit for bit: the
 * status, the flags word, every code byte, the scale and zero bit patterns and
 * every dequantized bit pattern.  Outputs start as a canary pattern on both
 * sides, so "nothing written on error" [POL-NF-01] is checked by the same
 * comparison.  Inputs mix ordinary values with the special ones of the policy
 * (zero ranges, subnormals, ranges that overflow binary32 or binary16, exact
 * ties, NaN and infinities) over bits 1/2/4/8, both groupings, both metadata
 * formats, every policy, aligned and misaligned buffers.
 *
 * SPEC: [KIVI-Q-01..08] [KIVI-D-01..03] [KIVI-M-01..03] [POL-NF-01] [POL-OV-01]
 *       [POL-OV-02] [POL-ZR-01] [POL-SN-01] [POL-TIE-01] [POL-TIE-02] [LAY-PACK-01]
 *
 * Without a device: "gpu-test: SKIPPED (no CUDA device: <reason>)", exit 0.
 * Seed: KVQ_SEED (default below), printed on failure; cases: KVQ_GPU_CASES.
 * The closing line is "N passed, N failed".
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_rng.h"
#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_cuda.h"

#define DEFAULT_SEED 0x6b76712d67707531ull /* "kvq-gpu1" */
#define CANARY 0xA5
#define FLAGS_SENTINEL 0xDEADBEEFu
#define MAX_REPORTS 10

static uint64_t g_seed;
static kvq_rng g_rng; /* conformance/kvq_rng.h */
static unsigned long g_passed, g_failed, g_case;
static unsigned long long g_groups;

static uint64_t rnd(void) { return kvq_rng_next(&g_rng); }
static uint32_t rndu(uint32_t n) { return (uint32_t)(rnd() % n); }
static int chance(uint32_t percent) { return rndu(100) < percent; }

static void die_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu-test: %s: %s (seed 0x%016llx)\n", what, cudaGetErrorString(e),
                (unsigned long long)g_seed);
        exit(2);
    }
}

/* ---- device buffers, grown on demand ---------------------------------- */
typedef struct dbuf {
    void *p;
    size_t n;
} dbuf;

static void *dgrow(dbuf *b, size_t n)
{
    if (n > b->n) {
        if (b->p) cudaFree(b->p);
        die_cuda(cudaMalloc(&b->p, n), "cudaMalloc");
        b->n = n;
    }
    return b->p;
}

static dbuf d_x, d_codes, d_scale, d_zero, d_y, d_ws;

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
           (unsigned long long)g_seed, g_case, c->op, c->sh.bits, c->sh.group,
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
    g_failed++;
    if (g_failed <= MAX_REPORTS) {
        printf("FAIL %s: %s\n", c->op, what);
        print_case(c);
    }
    return g_failed <= MAX_REPORTS;
}

/* ---- input generation ---------------------------------------------------- */
static float rnd_mant(int e) /* a random normal-ish value m * 2^e, 1 <= m < 2 */
{
    return ldexpf(1.0f + (float)(rnd() >> 41) * 0x1p-23f, e);
}

static float rnd_finite_bits(void)
{
    uint32_t b = (uint32_t)rnd();
    uint32_t e = 1u + rndu(254u);
    return kvq_f32_from_bits((b & 0x807FFFFFu) | (e << 23));
}

/* Fill one group of x with a value pattern of one kind. */
static void gen_group(float *x, const kvq_kivi_shape *sh, uint64_t g)
{
    const uint32_t G = sh->group, cmax = kvq_code_max(sh->bits);
    uint32_t kind = rndu(10);
    float cval = 0.0f;
    int e0 = (int)rndu(41) - 20, a = (int)rndu(101) - 50;
    float sgn = chance(50) ? -1.0f : 1.0f;
    if (kind == 2) {
        switch (rndu(5)) {
        case 0: cval = 0.0f; break;
        case 1: cval = -0.0f; break;
        case 2: cval = kvq_f32_from_bits(1u + rndu(0x7FFFFFu)); break;
        default: cval = sgn * rnd_mant(e0);
        }
    }
    if (kind == 6 && sh->meta == KVQ_META_F16) e0 = (int)rndu(20) - 12; /* s = 2^e0 in f16 */
    for (uint32_t i = 0; i < G; i++) {
        float v;
        switch (kind) {
        case 0: case 1: /* ordinary, a few binades around 2^e0, both signs or one */
            v = (chance(50) ? -1.0f : 1.0f) * rnd_mant(e0 + (int)rndu(6));
            if (kind == 1) v = fabsf(v) + ldexpf(1.0f, e0 + 6);
            break;
        case 2: v = cval; break;                           /* zero range */
        case 3: /* subnormals, zeros of both signs, tiny normals */
            switch (rndu(4)) {
            case 0: v = kvq_f32_from_bits((chance(50) ? 0x80000000u : 0u) | (1u + rndu(0x7FFFFFu))); break;
            case 1: v = chance(50) ? 0.0f : -0.0f; break;
            default: v = sgn * rnd_mant(-126 + (int)rndu(4));
            }
            break;
        case 4: /* near the top of binary32: ranges overflow */
            v = (chance(50) ? -1.0f : 1.0f) * rnd_mant(125 + (int)rndu(3));
            break;
        case 5: /* beyond binary16: stored metadata overflows RN16 */
            v = (chance(50) ? -1.0f : 1.0f) * rnd_mant(12 + (int)rndu(8));
            break;
        case 6: { /* exact ties: min a*2^e, max (a+cmax)*2^e, so s = 2^e, q = k or k+1/2 */
            uint32_t k = rndu(cmax);
            float half = chance(60) ? 0.5f : 0.0f;
            if (i == 0) v = ldexpf((float)a, e0);
            else if (i == 1) v = ldexpf((float)(a + (int)cmax), e0);
            else v = ldexpf((float)a + (float)k + half, e0);
            if (i > 1 && chance(30)) /* a few ulps off the tie: q near k+1/2 */
                v = kvq_f32_from_bits(kvq_f32_bits(v) + (uint32_t)rndu(7) - 3u);
            break;
        }
        case 7: /* a few distinct values */
            v = (float)(int)rndu(4) * ldexpf(1.0f, e0) * sgn;
            break;
        case 8: v = rnd_finite_bits(); break;            /* any finite binary32 */
        default: /* tiny range on a large offset: scale near or below the normal limit */
            v = ldexpf(1.0f + (float)rndu(4) * 0x1p-23f, e0 + (int)rndu(3) * 40 - 40);
            if (chance(30)) v = kvq_f32_from_bits(rndu(0x00FFFFFFu)) * sgn;
        }
        x[kvq_kivi_elem_index(sh, g, i)] = v;
    }
}

static void gen_shape(kvq_kivi_shape *sh, int big)
{
    static const uint32_t groups[] = {8, 16, 24, 32, 32, 32, 40, 64, 64, 96, 128, 128, 256, 512};
    sh->bits = 1u << rndu(4);
    sh->grouping = chance(50) ? KVQ_GROUP_CHANNEL : KVQ_GROUP_TOKEN;
    sh->meta = chance(50) ? KVQ_META_F32 : KVQ_META_F16;
    sh->group = chance(2) ? 1024u : groups[rndu(sizeof groups / sizeof groups[0])];
    uint32_t other = big ? 256 + rndu(769) : 1 + rndu(96);
    uint32_t mult = 1 + rndu(4);
    if (big) { /* about 2^21 .. 2^22 values */
        mult = (1u << 22) / (sh->group * other);
        mult = mult / 2 + rndu(mult / 2 + 1);
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
typedef struct qout {
    uint8_t *codes;
    float *scale, *zero;
    uint32_t flags;
    int status;
} qout;

static void qout_alloc(qout *o, const kvq_kivi_shape *sh)
{
    uint64_t cb = kvq_kivi_code_bytes(sh), ng = kvq_kivi_groups(sh);
    o->codes = (uint8_t *)malloc(cb + 1);
    o->scale = (float *)malloc(ng * sizeof(float));
    o->zero = (float *)malloc(ng * sizeof(float));
    memset(o->codes, CANARY, cb + 1);
    memset(o->scale, CANARY, ng * sizeof(float));
    memset(o->zero, CANARY, ng * sizeof(float));
    o->flags = FLAGS_SENTINEL;
}

static void qout_free(qout *o)
{
    free(o->codes);
    free(o->scale);
    free(o->zero);
}

/* Compare two quantizer results; on a mismatch report and dump the group. */
static int compare_q(const tcase *c, const float *x, const qout *r, const qout *d, int outputs)
{
    char msg[256];
    uint64_t ng = kvq_kivi_groups(&c->sh);
    uint32_t gb = kvq_kivi_group_bytes(&c->sh);
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
        const uint8_t *a = r->codes + kvq_kivi_group_code_offset(&c->sh, g);
        const uint8_t *b = d->codes + kvq_kivi_group_code_offset(&c->sh, g);
        if (memcmp(a, b, gb) != 0 || !kvq_f32_same(r->scale[g], d->scale[g])
            || !kvq_f32_same(r->zero[g], d->zero[g])) {
            snprintf(msg, sizeof msg, "group %llu: scale ref %08x gpu %08x, zero ref %08x gpu %08x%s",
                     (unsigned long long)g, kvq_f32_bits(r->scale[g]), kvq_f32_bits(d->scale[g]),
                     kvq_f32_bits(r->zero[g]), kvq_f32_bits(d->zero[g]),
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
    if (r->codes[kvq_kivi_code_bytes(&c->sh)] != d->codes[kvq_kivi_code_bytes(&c->sh)]) {
        report(c, "byte past the codes written");
        return 0;
    }
    return 1;
}

/* Run the device quantizer of case c on x into d (host copies of the outputs). */
static void run_gpu_quantize(const tcase *c, const float *x, qout *d)
{
    const kvq_kivi_shape *sh = &c->sh;
    uint64_t n = kvq_kivi_elems(sh), ng = kvq_kivi_groups(sh), cb = kvq_kivi_code_bytes(sh);
    if (c->host) {
        d->status = kvq_cuda_kivi_quantize_host(d->codes, d->scale, d->zero, &d->flags, x, sh,
                                                &c->pol);
        return;
    }
    float *dx = (float *)dgrow(&d_x, (n + 4) * sizeof(float)) + c->xoff;
    uint8_t *dc = (uint8_t *)dgrow(&d_codes, cb + 16) + c->coff;
    float *ds = (float *)dgrow(&d_scale, ng * sizeof(float));
    float *dz = (float *)dgrow(&d_zero, ng * sizeof(float));
    die_cuda(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice), "copy x");
    die_cuda(cudaMemset(dc, CANARY, cb + 1), "memset");
    die_cuda(cudaMemset(ds, CANARY, ng * sizeof(float)), "memset");
    die_cuda(cudaMemset(dz, CANARY, ng * sizeof(float)), "memset");
    void *ws = NULL;
    size_t wsb = 0;
    if (c->ws) {
        wsb = kvq_cuda_kivi_quantize_workspace(sh, c->opts);
        ws = dgrow(&d_ws, wsb);
    }
    d->status = kvq_cuda_kivi_quantize(dc, ds, dz, &d->flags, dx, sh, &c->pol, ws, wsb, c->opts, 0);
    die_cuda(cudaMemcpy(d->codes, dc, cb + 1, cudaMemcpyDeviceToHost), "copy codes");
    die_cuda(cudaMemcpy(d->scale, ds, ng * sizeof(float), cudaMemcpyDeviceToHost), "copy scale");
    die_cuda(cudaMemcpy(d->zero, dz, ng * sizeof(float), cudaMemcpyDeviceToHost), "copy zero");
}

/* ---- one dequantize case ---------------------------------------------------- */
static void run_dequant_case(tcase c, const uint8_t *codes, const float *scale, const float *zero)
{
    const kvq_kivi_shape *sh = &c.sh;
    uint64_t n = kvq_kivi_elems(sh), ng = kvq_kivi_groups(sh), cb = kvq_kivi_code_bytes(sh);
    float *yr = (float *)malloc(n * sizeof(float)), *yd = (float *)malloc(n * sizeof(float));
    uint32_t fr = FLAGS_SENTINEL, fd = FLAGS_SENTINEL;
    int sr, sd;
    char msg[256];
    c.op = "dequantize";
    g_case++;
    memset(yr, CANARY, n * sizeof(float));
    memset(yd, CANARY, n * sizeof(float));
    sr = kvq_kivi_dequantize(yr, &fr, codes, scale, zero, sh, &c.pol);
    if (c.host) {
        sd = kvq_cuda_kivi_dequantize_host(yd, &fd, codes, scale, zero, sh, &c.pol);
    } else {
        float *dy = (float *)dgrow(&d_y, (n + 4) * sizeof(float)) + c.xoff;
        uint8_t *dc = (uint8_t *)dgrow(&d_codes, cb + 16) + c.coff;
        float *ds = (float *)dgrow(&d_scale, ng * sizeof(float));
        float *dz = (float *)dgrow(&d_zero, ng * sizeof(float));
        die_cuda(cudaMemcpy(dc, codes, cb, cudaMemcpyHostToDevice), "copy codes");
        die_cuda(cudaMemcpy(ds, scale, ng * sizeof(float), cudaMemcpyHostToDevice), "copy scale");
        die_cuda(cudaMemcpy(dz, zero, ng * sizeof(float), cudaMemcpyHostToDevice), "copy zero");
        die_cuda(cudaMemset(dy, CANARY, n * sizeof(float)), "memset");
        void *ws = c.ws ? dgrow(&d_ws, kvq_cuda_kivi_dequantize_workspace(sh)) : NULL;
        sd = kvq_cuda_kivi_dequantize(dy, &fd, dc, ds, dz, sh, &c.pol, ws,
                                      c.ws ? kvq_cuda_kivi_dequantize_workspace(sh) : 0, 0);
        die_cuda(cudaMemcpy(yd, dy, n * sizeof(float), cudaMemcpyDeviceToHost), "copy y");
    }
    g_groups += ng;
    if (sr != sd) {
        snprintf(msg, sizeof msg, "status ref %s gpu %s", kvq_status_name(sr), kvq_status_name(sd));
        report(&c, msg);
    } else if (fr != fd) {
        snprintf(msg, sizeof msg, "flags ref 0x%08x gpu 0x%08x", fr, fd);
        report(&c, msg);
    } else {
        uint64_t e;
        for (e = 0; e < n; e++)
            if (!kvq_f32_same(yr[e], yd[e])) break;
        if (e < n) {
            uint32_t i;
            uint64_t g = kvq_kivi_group_of(sh, e, &i);
            snprintf(msg, sizeof msg, "y[%llu] (group %llu element %u): ref %08x gpu %08x",
                     (unsigned long long)e, (unsigned long long)g, i, kvq_f32_bits(yr[e]),
                     kvq_f32_bits(yd[e]));
            if (report(&c, msg)) dump_group_q(&c, codes, scale, zero, g);
        } else {
            g_passed++;
        }
    }
    free(yr);
    free(yd);
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
    float v = kvq_f32_from_bits(bad[rndu(sizeof bad / sizeof bad[0])]);
    (void)sh;
    if (chance(60)) scale[g] = v;
    else zero[g] = chance(50) ? v : -v;
}

/* ---- the quantize + dequantize pair of one random case --------------------- */
static void run_case(int big)
{
    tcase c;
    memset(&c, 0, sizeof c);
    c.op = "quantize";
    gen_shape(&c.sh, big);
    c.pol.ties = rndu(2);
    c.pol.overflow = rndu(2);
    c.pol.subnormal = rndu(2);
    c.opts = chance(80) ? 0u : chance(50) ? KVQ_CUDA_DIRECT : KVQ_CUDA_NO_DISCARD;
    c.xoff = chance(10) ? 1u : 0u;
    c.coff = chance(10) ? 1u + rndu(7) : 0u;
    c.ws = chance(50);
    c.host = !big && chance(5);
    const kvq_kivi_shape *sh = &c.sh;
    uint64_t n = kvq_kivi_elems(sh), ng = kvq_kivi_groups(sh);
    float *x = (float *)malloc(n * sizeof(float));
    for (uint64_t g = 0; g < ng; g++) gen_group(x, sh, g);
    if (chance(4)) { /* one non-finite input anywhere [POL-NF-01] */
        static const uint32_t nf[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u};
        x[rnd() % n] = kvq_f32_from_bits(nf[rndu(4)]);
    }
    qout r, d;
    qout_alloc(&r, sh);
    qout_alloc(&d, sh);
    g_case++;
    r.status = kvq_kivi_quantize(r.codes, r.scale, r.zero, &r.flags, x, sh, &c.pol);
    run_gpu_quantize(&c, x, &d);
    g_groups += ng;
    /* KVQ_CUDA_DIRECT leaves unspecified outputs on an error: status only then */
    int outputs = !(c.opts & KVQ_CUDA_DIRECT) || r.status == KVQ_OK;
    if (compare_q(&c, x, &r, &d, outputs)) g_passed++;

    /* Dequantize the reference's output, sometimes with spoiled metadata or
     * random codes, sometimes with random metadata. */
    if (r.status == KVQ_OK || chance(30)) {
        uint64_t cb = kvq_kivi_code_bytes(sh);
        if (r.status != KVQ_OK || chance(10)) {
            for (uint64_t b = 0; b < cb; b++) r.codes[b] = (uint8_t)rnd();
            for (uint64_t g = 0; g < ng; g++) {
                int ov;
                float s = ldexpf(1.0f + (float)(rnd() >> 41) * 0x1p-23f, (int)rndu(60) - 30);
                float z = ldexpf(1.0f + (float)(rnd() >> 41) * 0x1p-23f, (int)rndu(60) - 30);
                if (chance(50)) z = -z;
                if (sh->meta == KVQ_META_F16) {
                    s = kvq_round_f16(s, &ov);
                    z = kvq_round_f16(z, &ov);
                    if (s < 0x1p-14f) s = 0.0f;
                }
                r.scale[g] = s;
                r.zero[g] = z;
            }
        }
        if (chance(25)) {
            uint32_t k = 1 + rndu(3);
            while (k--) spoil_meta(sh, r.scale, r.zero, rnd() % ng);
        }
        c.xoff = chance(10) ? 1u : 0u;
        c.coff = chance(10) ? 1u + rndu(7) : 0u;
        run_dequant_case(c, r.codes, r.scale, r.zero);
    }
    qout_free(&r);
    qout_free(&d);
    free(x);
}

/* ---- argument errors: same status as the reference -------------------------- */
static void run_bad_args(void)
{
    static float x[64];
    static uint8_t codes[64];
    static float s[8], z[8], y[64];
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
    void *dws = dgrow(&d_ws, 1u << 16);
    float *dx = (float *)dgrow(&d_x, sizeof x), *dy = (float *)dgrow(&d_y, sizeof y);
    uint8_t *dc = (uint8_t *)dgrow(&d_codes, sizeof codes);
    float *ds = (float *)dgrow(&d_scale, sizeof s), *dz = (float *)dgrow(&d_zero, sizeof z);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.op = "bad-arguments";
        c.sh = cases[k].sh;
        if (cases[k].pol) c.pol = *cases[k].pol;
        const float *hx = cases[k].nullx ? NULL : x;
        int r1 = kvq_kivi_quantize(codes, s, z, NULL, hx, &c.sh, cases[k].pol);
        int r2 = kvq_kivi_dequantize(y, NULL, cases[k].nullx ? NULL : codes, s, z, &c.sh,
                                     cases[k].pol);
        int d1 = kvq_cuda_kivi_quantize(dc, ds, dz, NULL, cases[k].nullx ? NULL : dx, &c.sh,
                                        cases[k].pol, NULL, 0, 0, 0);
        int d2 = kvq_cuda_kivi_dequantize(dy, NULL, cases[k].nullx ? NULL : dc, ds, dz, &c.sh,
                                          cases[k].pol, dws, 1u << 16, 0);
        int h1 = kvq_cuda_kivi_quantize_host(codes, s, z, NULL, hx, &c.sh, cases[k].pol);
        int h2 = kvq_cuda_kivi_dequantize_host(y, NULL, cases[k].nullx ? NULL : codes, s, z,
                                               &c.sh, cases[k].pol);
        g_case++;
        if (r1 != d1 || r1 != h1 || r2 != d2 || r2 != h2 || r1 == KVQ_OK || r2 == KVQ_OK) {
            char msg[160];
            snprintf(msg, sizeof msg, "case %zu: ref %d/%d device %d/%d host %d/%d", k, r1, r2,
                     d1, d2, h1, h2);
            report(&c, msg);
        } else {
            g_passed++;
        }
    }
    /* a workspace that is too small is a parameter error, not a crash */
    {
        tcase c;
        memset(&c, 0, sizeof c);
        c.op = "bad-workspace";
        c.sh = good;
        c.pol = pol;
        g_case++;
        int st = kvq_cuda_kivi_quantize(dc, ds, dz, NULL, dx, &good, &pol, dws, 8, 0, 0);
        if (st != KVQ_E_PARAM) report(&c, "small workspace not rejected");
        else g_passed++;
    }
}

int main(void)
{
    char why[256];
    const char *env = getenv("KVQ_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : DEFAULT_SEED;
    g_rng.s = g_seed;
    env = getenv("KVQ_GPU_CASES");
    unsigned long ncases = env ? strtoul(env, NULL, 0) : 4000ul;

    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf("gpu-test: SKIPPED (no CUDA device: %s)\n", why);
        return 0;
    }
    {
        cudaDeviceProp p;
        int dev = 0;
        die_cuda(cudaGetDevice(&dev), "cudaGetDevice");
        die_cuda(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
        printf("gpu-test: device %s (sm_%d%d), seed 0x%016llx, %lu random cases\n", p.name,
               p.major, p.minor, (unsigned long long)g_seed, ncases);
    }
    run_bad_args();
    for (int k = 0; k < 6; k++) run_case(1); /* large tensors: many groups a call */
    for (unsigned long k = 0; k < ncases; k++) run_case(0);
    printf("gpu-test: %lu cases over %llu groups\n", g_case, g_groups);
    if (g_failed) printf("gpu-test: FAILED, seed 0x%016llx (rerun with KVQ_SEED)\n",
                         (unsigned long long)g_seed);
    printf("%lu passed, %lu failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
