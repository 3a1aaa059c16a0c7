/*
 * sage_test.cu -- the CUDA SAGE quantizers against ref/fast/sage.c, bitwise.
 *
 * Every case runs the reference (include/kvq_sage.h) and the device launcher
 * (gpu/kvq_cuda.h) on the same input and compares, bit for bit: the status,
 * the flags word, every code byte, every scale / mean / smoothed value / row
 * sum bit pattern.  Outputs start as a sentinel pattern on both sides with a
 * guard region past each buffer's end (gpu/testbed.h), so "nothing written on
 * error" [POL-NF-01] and "nothing written out of bounds" are checked by the same
 * comparison.  Ops: smooth (segment lengths 1 .. 2N), qk (role Q/K, INT4/INT8,
 * granularity thread/warp/block, blocks and warps drawn among the valid ones,
 * paper/public rounding, ties even/away; good-input cases also run with
 * KVQ_CUDA_DIRECT), v and p (E4M3/E5M2, both overflow policies).  Inputs by
 * kind: ordinary (a random binade per token), ties (every slot's or channel's
 * maximum makes the scale a power of two, the other values half-integers of
 * it: exact rounding ties), zero (zero and subnormal groups, -0), wide (random
 * finite encodings; for smooth some above 2^48: KVQ_E_PARAM); a bad case puts
 * a NaN or an infinity anywhere (p: also a value outside [0, 1]).
 *
 * SPEC: [SAGE-SM-01..02] [SAGE-Q-01..07] [SAGE-P-01..02] [SAGE-V-01..04]
 *       [SAGE-MAP-03..06] [POL-TIE-01..02] [POL-NF-01] [POL-FP8-03]
 *
 * Without a device: "gpu-sage-test: SKIPPED (no CUDA device: <reason>)", exit 0.
 * Seed: KVQ_SEED; KVQ_SAGE_GROUPS: Q/K scale slots to reach (default 10^5).
 * The closing line is "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_sage.h"
#include "kvq_cuda.h"
#include "testbed.h"

#define DEFAULT_SEED 0x6b76712d73616731ull /* "kvq-sag1" */

enum { K_ORD, K_TIES, K_ZERO, K_WIDE, K_N };
static const char *kind_name[K_N] = {"ordinary", "ties", "zero", "wide"};

typedef struct tcase {
    const char *op;
    int kind, bad;
    kvq_sage_shape sh;
    kvq_sage_qk qk;
    uint32_t seg, fmt, rows, cols, direct;
    kvq_policy pol;
} tcase;

static kvq_tb_dbuf d_in, d_o[2];
static unsigned long g_groups[4], g_cases[4], g_err[4];   /* smooth, qk, v, p */

static float rnd_binade(int lo, int hi)                   /* sign * [1,2) * 2^e */
{
    float m = 1.0f + (float)kvq_tb_rndu(1u << 23) * 0x1p-23f;
    float v = ldexpf(m, lo + (int)kvq_tb_rndu((uint32_t)(hi - lo + 1)));
    return kvq_tb_chance(50) ? -v : v;
}

static float rnd_finite(void)
{
    uint32_t u;
    do u = (uint32_t)kvq_tb_rnd(); while ((u & 0x7F800000u) == 0x7F800000u);
    return kvq_f32_from_bits(u);
}

/* x [n][d] of kind k; `unit`: per-token groups see a maximum cmax * 2^e (ties). */
static void gen(float *x, uint32_t n, uint32_t d, int kind, float top)
{
    const int e = -20 + (int)kvq_tb_rndu(40);
    for (uint32_t t = 0; t < n; t++) {
        const int et = e + (int)kvq_tb_rndu(6);
        for (uint32_t c = 0; c < d; c++) {
            float v;
            switch (kind) {
            case K_ORD: v = rnd_binade(et - 8, et); break;
            case K_TIES:
                v = c == (t * 7u) % d ? top * ldexpf(1.0f, e)    /* the slot / channel max */
                  : ldexpf((float)((int)kvq_tb_rndu(2u * (uint32_t)top + 1u) - (int)top) + 0.5f *
                           (float)kvq_tb_rndu(2), e);
                if (fabsf(v) > top * ldexpf(1.0f, e)) v = 0.0f;
                break;
            case K_ZERO:
                v = kvq_tb_chance(70) ? (kvq_tb_chance(50) ? -0.0f : 0.0f)
                  : kvq_tb_chance(50) ? kvq_f32_from_bits(kvq_tb_rndu(1u << 23) | (kvq_tb_chance(50) ? 0x80000000u : 0u))
                  : rnd_binade(-130, -100);
                if (t % 3u == 0u) v = 0.0f;                       /* whole zero tokens */
                break;
            default: v = rnd_finite(); break;
            }
            x[(uint64_t)t * d + c] = v;
        }
    }
}

static void put_bad(float *x, uint64_t n, int prob)
{
    const uint64_t at = kvq_tb_rnd() % n;
    const uint32_t w = kvq_tb_rndu(prob ? 4u : 3u);
    x[at] = w == 0 ? NAN : w == 1 ? INFINITY : w == 2 ? -INFINITY : (kvq_tb_chance(50) ? -0x1p-20f : 1.0f + 0x1p-23f);
}

static void print_case(const tcase *c)
{
    printf("  seed=0x%016llx case=%lu op=%s input=%s%s n=%u d=%u role=%s bits=%u gran=%u block=%u "
           "warps=%u rounding=%s seg=%u fmt=%s rows=%u cols=%u ties=%s overflow=%s direct=%u\n",
           (unsigned long long)kvq_tb_seed(), kvq_tb_cases(), c->op, kind_name[c->kind],
           c->bad ? "+bad" : "", c->sh.tokens, c->sh.dim, c->qk.role ? "K" : "Q", c->qk.bits,
           c->qk.gran, c->qk.block, c->qk.warps, c->qk.rounding ? "public" : "paper", c->seg,
           c->fmt ? "e5m2" : "e4m3", c->rows, c->cols, c->pol.ties ? "away" : "even",
           c->pol.overflow ? "nan" : "saturate", c->direct);
}

/* Compare the sets bitwise, guards included; then each side's guards (and
 * after an error, nothing written). */
static int compare(const tcase *c, const kvq_tb_outs *r, const kvq_tb_outs *g)
{
    char msg[256];
    long at;
    msg[0] = 0;
    if (r->status != g->status)
        snprintf(msg, sizeof msg, "status ref %s gpu %s", kvq_status_str((kvq_status)r->status),
                 kvq_status_str((kvq_status)g->status));
    else if (r->flags != g->flags)
        snprintf(msg, sizeof msg, "flags ref 0x%08x gpu 0x%08x", r->flags, g->flags);
    else {
        for (unsigned k = 0; k < r->nbuf && !msg[0]; k++) {
            if (c->direct && r->status != KVQ_OK) break;       /* unspecified outputs */
            if ((at = kvq_tb_first_diff(r->buf[k].p, g->buf[k].p, kvq_tb_outs_bytes(r, k))) >= 0)
                snprintf(msg, sizeof msg, "%s byte %ld: ref %02x gpu %02x", r->buf[k].name, at,
                         r->buf[k].p[at], g->buf[k].p[at]);
        }
        if (!msg[0] && !c->direct &&
            (!kvq_tb_outs_check(r, r->status != KVQ_OK, msg, sizeof msg) ||
             !kvq_tb_outs_check(g, g->status != KVQ_OK, msg, sizeof msg))) { /* msg set */ }
    }
    if (!msg[0]) {
        kvq_tb_pass();
        return 1;
    }
    if (kvq_tb_fail()) {
        printf("FAIL %s: %s\n", c->op, msg);
        print_case(c);
    }
    return 0;
}

/* Run one case: ref into r, device into g (sentinel twins), compare. */
static void run(tcase *c, const float *x, uint64_t nx, size_t n0, size_t n1, const char *name0,
                const char *name1, int opi)
{
    kvq_tb_outs r, g;
    void *dp[2];
    kvq_tb_case();
    kvq_tb_outs_init(&r, "ref");
    kvq_tb_outs_add(&r, name0, n0);
    kvq_tb_outs_add(&r, name1, n1);
    kvq_tb_outs_init(&g, "gpu");
    kvq_tb_outs_add(&g, name0, n0);
    kvq_tb_outs_add(&g, name1, n1);
    float *dx = (float *)kvq_tb_dgrow(&d_in, nx * 4u);
    kvq_tb_cuda(cudaMemcpy(dx, x, nx * 4u, cudaMemcpyHostToDevice), "cudaMemcpy in");
    kvq_tb_outs_device(&g, d_o, NULL, dp);
    uint8_t *r0 = r.buf[0].p, *r1 = r.buf[1].p;
    if (opi == 0) {
        r.status = kvq_sage_smooth((float *)r0, (float *)r1, x, &c->sh, c->seg);
        g.status = kvq_cuda_sage_smooth((float *)dp[0], (float *)dp[1], dx, &c->sh, c->seg, 0);
        if (r.status == KVQ_OK) g_groups[0] += (uint64_t)kvq_sage_mean_rows(c->sh.tokens, c->seg) * c->sh.dim;
    } else if (opi == 1) {
        r.status = kvq_sage_quantize_qk(r0, (float *)r1, &r.flags, x, &c->sh, &c->qk, &c->pol);
        g.status = kvq_cuda_sage_quantize_qk((uint8_t *)dp[0], (float *)dp[1], &g.flags, dx,
                                             &c->sh, &c->qk, &c->pol,
                                             c->direct ? KVQ_CUDA_DIRECT : 0u, 0);
        if (r.status == KVQ_OK) g_groups[1] += kvq_sage_scale_count(&c->sh, &c->qk);
    } else if (opi == 2) {
        r.status = kvq_sage_quantize_v(r0, (float *)r1, &r.flags, x, &c->sh, c->fmt, &c->pol);
        g.status = kvq_cuda_sage_quantize_v((uint8_t *)dp[0], (float *)dp[1], &g.flags, dx, &c->sh,
                                            c->fmt, &c->pol, 0);
        if (r.status == KVQ_OK) g_groups[2] += c->sh.dim;
    } else {
        r.status = kvq_sage_quantize_p(r0, (float *)r1, &r.flags, x, c->rows, c->cols, c->fmt, &c->pol);
        g.status = kvq_cuda_sage_quantize_p((uint8_t *)dp[0], (float *)dp[1], &g.flags, dx, c->rows,
                                            c->cols, c->fmt, &c->pol, 0);
        if (r.status == KVQ_OK) g_groups[3] += c->rows;
    }
    kvq_tb_outs_fetch(&g, dp);
    g_cases[opi]++;
    if (r.status != KVQ_OK) g_err[opi]++;
    compare(c, &r, &g);
    kvq_tb_outs_free(&r);
    kvq_tb_outs_free(&g);
}

static uint32_t rnd_tokens(void)
{
    uint32_t w = kvq_tb_rndu(10);
    return w < 3 ? 1u + kvq_tb_rndu(64) : w < 8 ? 1u + kvq_tb_rndu(2048) : 2048u + kvq_tb_rndu(6144);
}

static void base_case(tcase *c, const char *op)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->kind = (int)kvq_tb_rndu(K_N);
    c->bad = kvq_tb_chance(8);
    c->sh.tokens = rnd_tokens();
    c->sh.dim = kvq_tb_chance(50) ? 64u : 128u;
    c->pol.ties = kvq_tb_rndu(2);
    c->pol.overflow = kvq_tb_rndu(2);
    c->pol.subnormal = kvq_tb_rndu(2);
    c->qk.role = KVQ_SAGE_ROLE_Q;
    c->qk.bits = 8u;
    c->qk.block = 128u;
    c->qk.warps = 4u;
}

static void random_qk(kvq_sage_qk *q)
{
    q->role = kvq_tb_rndu(2);
    q->bits = kvq_tb_chance(50) ? 4u : 8u;
    q->gran = kvq_tb_rndu(3);
    q->rounding = kvq_tb_rndu(2);
    if (q->role == KVQ_SAGE_ROLE_Q) {
        static const uint32_t ws[] = {1, 2, 4, 4, 8, 16};
        q->warps = ws[kvq_tb_rndu(6)];
        const uint32_t unit = 16u * q->warps, kmax = 1024u / unit;
        q->block = unit * (kvq_tb_chance(50) ? (128u % unit == 0u && 128u / unit <= kmax ? 128u / unit : 1u)
                                           : 1u + kvq_tb_rndu(kmax < 8u ? kmax : 8u));
    } else {
        q->warps = 1u;
        q->block = kvq_tb_chance(50) ? 64u : 32u * (1u + kvq_tb_rndu(8));
    }
}

int main(void)
{
    kvq_tb_init("gpu-sage-test", DEFAULT_SEED);
    const uint64_t want = kvq_tb_env_count("KVQ_SAGE_GROUPS", 100000u);
    if (!kvq_tb_device("Q/K scale slots to reach %llu", (unsigned long long)want)) return 0;
    size_t cap = 0;
    float *x = NULL;
    tcase c;
    /* Q/K until `want` slots were compared (good inputs), then 400 each of the others. */
    for (int op = 1; op <= 4; op++) {
        for (unsigned long k = 0;; k++) {
            if (op == 1 && g_groups[1] >= want) break;
            if (op != 1 && k >= 400u) break;
            const int opi = op == 4 ? 0 : op;                   /* 1 qk, 2 v, 3 p, 0 smooth */
            base_case(&c, opi == 0 ? "smooth" : opi == 1 ? "qk" : opi == 2 ? "v" : "p");
            uint64_t nx;
            if (opi == 3) {
                c.rows = 1u + kvq_tb_rndu(kvq_tb_chance(50) ? 64u : 1024u);
                c.cols = 1u + kvq_tb_rndu(kvq_tb_chance(50) ? 64u : 2048u);
                nx = (uint64_t)c.rows * c.cols;
            } else {
                nx = kvq_sage_elems(&c.sh);
            }
            if (nx > cap) {
                free(x);
                cap = nx;
                x = (float *)kvq_tb_malloc(cap * 4u);
            }
            c.fmt = kvq_tb_rndu(2);
            float top = 127.0f;
            if (opi == 1) {
                random_qk(&c.qk);
                top = (float)kvq_sage_cmax(c.qk.bits);
            } else if (opi == 2) {
                top = kvq_sage_fp8_bound(c.fmt);
            }
            if (opi == 3) {
                for (uint64_t e = 0; e < nx; e++) {
                    const uint32_t w = kvq_tb_rndu(8);
                    x[e] = w == 0 ? 0.0f : w == 1 ? -0.0f : w == 2 ? 1.0f
                         : w == 3 ? fabsf(rnd_binade(-150, -1))
                         : (float)kvq_tb_rndu(1u << 24) * 0x1p-24f;
                }
            } else {
                gen(x, c.sh.tokens, c.sh.dim, c.kind, top);
                if (opi == 0 && c.kind == K_WIDE && kvq_tb_chance(70)) /* mostly within 2^48 */
                    for (uint64_t e = 0; e < nx; e++)
                        if (fabsf(x[e]) > 0x1p48f) x[e] = ldexpf(x[e], -100);
            }
            if (c.bad) put_bad(x, nx, opi == 3);
            if (opi == 0) {
                const uint32_t w = kvq_tb_rndu(4);
                c.seg = w == 0 ? 1u + kvq_tb_rndu(2u * c.sh.tokens) : w == 1 ? 64u : 128u;
                run(&c, x, nx, nx * 4u,
                    (size_t)kvq_sage_mean_rows(c.sh.tokens, c.seg) * c.sh.dim * 4u, "xs", "mean", 0);
            } else if (opi == 1) {
                const size_t nsc = (size_t)kvq_sage_scale_count(&c.sh, &c.qk) * 4u;
                run(&c, x, nx, (size_t)kvq_sage_code_bytes(&c.sh, c.qk.bits), nsc, "codes", "scale", 1);
                if (!c.bad) {                                    /* the one-pass form */
                    c.direct = 1u;
                    run(&c, x, nx, (size_t)kvq_sage_code_bytes(&c.sh, c.qk.bits), nsc, "codes",
                        "scale", 1);
                }
            } else if (opi == 2) {
                run(&c, x, nx, nx, (size_t)c.sh.dim * 4u, "codes", "scale", 2);
            } else {
                run(&c, x, nx, nx, (size_t)c.rows * 4u, "codes", "rowsum", 3);
            }
        }
    }
    free(x);
    printf("gpu-sage-test: cases smooth %lu (%lu errors), qk %lu (%lu errors), v %lu (%lu errors), "
           "p %lu (%lu errors)\n", g_cases[0], g_err[0], g_cases[1], g_err[1], g_cases[2], g_err[2],
           g_cases[3], g_err[3]);
    printf("gpu-sage-test: groups compared (good inputs): smooth means %lu, qk scale slots %lu, "
           "v channels %lu, p rows %lu\n", g_groups[0], g_groups[1], g_groups[2], g_groups[3]);
    return kvq_tb_finish();
}
