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
 * KVQ_CUDA_DIRECT; 40% of them take the public code's blocks, b_q = 128 with 4
 * warps or b_k = 64, which run the fast kernel), v and p (E4M3/E5M2, both
 * overflow policies), ds (dS, d = 64/128, 1 .. 160 mean rows, tau the usual
 * 1/sqrt(d), it times log2(e), or any binade of [2^-126, 2^16]; input and
 * output pointers 16-byte aligned or not).  Inputs by kind: ordinary (a random
 * binade per token), ties (every slot's or channel's maximum makes the scale a
 * power of two, the other values half-integers of it: exact rounding ties; ds:
 * signed powers of two over 80 binades, so that the dot products cancel and hit
 * rounding ties, where any other summation order or an FMA gives another
 * result), zero (zero and subnormal groups, -0; ds: products that underflow,
 * signed zero sums), wide (random finite encodings; for smooth some above 2^48,
 * for ds some above 2^51: KVQ_E_PARAM); a bad case puts a NaN or an infinity
 * anywhere (p: also a value outside [0, 1]; ds: also in tau, or tau outside
 * [2^-126, 2^16]).  ds also runs a fixed list of argument errors in every order
 * [SAGE-DS-02] (NULL pointers, rows 0 / above 2^24 / rows * N above 2^32, bad
 * shapes, tau NaN / Inf / 0 / subnormal / above 2^16, the bounds 2^51 and
 * 2^-126, 2^16 themselves, and errors that combine: the earlier one must win).
 * dq (the reading of stored codes [SAGE-Q-08]): random code bytes (the fields
 * the quantizer never writes included), scales of every binade, zeros of both
 * signs and near the overflow, bad scales (the first in slot order decides).
 * About 30% of the qk, v and dq cases go through the stream-ordered launchers
 * (half of those qk cases with KVQ_CUDA_WS_CLEAN: the workspace as the calls
 * before left it, zeroed once at its allocation [SAGE-DEV-20])
 * (*_async: workspace, device result word poisoned before the call).
 *
 * SPEC: [SAGE-SM-01..02] [SAGE-Q-01..07] [SAGE-P-01..02] [SAGE-V-01..04] [SAGE-DEV-01..04] [SAGE-DEV-06..07]
 *       [SAGE-MAP-03..06] [POL-TIE-01..02] [POL-NF-01] [POL-FP8-03]
 *       [SAGE-DS-01] [SAGE-DS-02] [SAGE-L-04] [SAGE-LEM-02] [SAGE-DEV-14] [SAGE-DEV-16] [SAGE-Q-08] [SAGE-DEV-18] [SAGE-DEV-20]
 *
 * Without a device: "gpu-sage-test: SKIPPED (no CUDA device: <reason>)", exit 0.
 * Seed: KVQ_SEED; KVQ_SAGE_GROUPS: Q/K scale slots to reach (default 10^5);
 * KVQ_SAGE_DS_CASES: random dS cases (default 600); KVQ_SAGE_DQ_CASES:
 * dequantization cases (default 600).  The smoothing and dS launchers run
 * the stage kernels of [SAGE-DEV-16] unless KVQ_SAGE_STAGES=0.
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
    uint32_t seg, fmt, rows, cols, direct, async; /* async: the stream-ordered launcher */
    uint32_t clean;                                       /* qk async: KVQ_CUDA_WS_CLEAN [SAGE-DEV-20] */
    kvq_policy pol;
    float tau;                                            /* ds */
    uint32_t mis;                                         /* ds: byte offsets of qm, ks, ds: 0 or 4 */
    int null_arg;                                         /* ds: 1..4 passes ds, qm, ks, kshape NULL */
} tcase;

static kvq_tb_dbuf d_in, d_in2, d_o[2];
static unsigned long g_groups[6], g_cases[6], g_err[6];   /* smooth, qk, v, p, ds, dq */
static unsigned long g_dq_status[4];                      /* dq: ok, range, non-finite, param */

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
    if (strcmp(c->op, "ds") == 0) {
        printf("  seed=0x%016llx case=%lu op=ds input=%s%s n=%u d=%u rows=%u tau=%a (0x%08x) "
               "misalign=%u null_arg=%d\n", (unsigned long long)kvq_tb_seed(), kvq_tb_cases(),
               kind_name[c->kind], c->bad ? "+bad" : "", c->sh.tokens, c->sh.dim, c->rows,
               (double)c->tau, kvq_f32_bits(c->tau), c->mis, c->null_arg);
        return;
    }
    printf("  seed=0x%016llx case=%lu op=%s input=%s%s n=%u d=%u role=%s bits=%u gran=%u block=%u "
           "warps=%u rounding=%s seg=%u fmt=%s rows=%u cols=%u ties=%s overflow=%s direct=%u async=%u clean=%u\n",
           (unsigned long long)kvq_tb_seed(), kvq_tb_cases(), c->op, kind_name[c->kind],
           c->bad ? "+bad" : "", c->sh.tokens, c->sh.dim, c->qk.role ? "K" : "Q", c->qk.bits,
           c->qk.gran, c->qk.block, c->qk.warps, c->qk.rounding ? "public" : "paper", c->seg,
           c->fmt ? "e5m2" : "e4m3", c->rows, c->cols, c->pol.ties ? "away" : "even",
           c->pol.overflow ? "nan" : "saturate", c->direct, c->async, c->clean);
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

/* The stream-ordered launchers: one workspace (256-byte aligned from
 * cudaMalloc) and a device result word, poisoned before each call. */
static void *d_ws;
static kvq_cuda_result *d_res;

static kvq_cuda_result *async_result(void)
{
    if (d_ws == NULL) {
        kvq_tb_cuda(cudaMalloc(&d_ws, kvq_cuda_sage_workspace()), "cudaMalloc workspace");
        /* zeroed once: from then on every call leaves it clean, which the Q/K cases
         * with KVQ_CUDA_WS_CLEAN rely on (a state left dirty shows as a wrong status) */
        kvq_tb_cuda(cudaMemset(d_ws, 0, kvq_cuda_sage_workspace()), "cudaMemset workspace");
        kvq_tb_cuda(cudaMalloc((void **)&d_res, sizeof *d_res), "cudaMalloc result");
    }
    kvq_tb_cuda(cudaMemset(d_res, 0xA5, sizeof *d_res), "cudaMemset result");
    return d_res;
}

/* After an enqueued call: its status and flags from the device. */
static void async_fetch(kvq_tb_outs *g, kvq_cuda_result *res)
{
    if (g->status != KVQ_OK) return;                            /* argument error: nothing enqueued */
    kvq_cuda_result h;
    kvq_tb_cuda(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy result");
    g->status = h.status;
    if (h.status == KVQ_OK) g->flags = h.flags;                 /* else untouched, as the blocking form */
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
        if (c->async) {
            kvq_cuda_result *res = async_result();
            g.status = kvq_cuda_sage_quantize_qk_async((uint8_t *)dp[0], (float *)dp[1], res, dx, &c->sh,
                                                       &c->qk, &c->pol, d_ws, kvq_cuda_sage_workspace(),
                                                       (c->direct ? KVQ_CUDA_DIRECT : 0u) |
                                                           (c->clean ? KVQ_CUDA_WS_CLEAN : 0u), 0);
            async_fetch(&g, res);
        } else {
            g.status = kvq_cuda_sage_quantize_qk((uint8_t *)dp[0], (float *)dp[1], &g.flags, dx,
                                                 &c->sh, &c->qk, &c->pol,
                                                 c->direct ? KVQ_CUDA_DIRECT : 0u, 0);
        }
        if (r.status == KVQ_OK) g_groups[1] += kvq_sage_scale_count(&c->sh, &c->qk);
    } else if (opi == 2) {
        r.status = kvq_sage_quantize_v(r0, (float *)r1, &r.flags, x, &c->sh, c->fmt, &c->pol);
        if (c->async) {
            kvq_cuda_result *res = async_result();
            g.status = kvq_cuda_sage_quantize_v_async((uint8_t *)dp[0], (float *)dp[1], res, dx, &c->sh,
                                                      c->fmt, &c->pol, d_ws, kvq_cuda_sage_workspace(), 0);
            async_fetch(&g, res);
        } else {
            g.status = kvq_cuda_sage_quantize_v((uint8_t *)dp[0], (float *)dp[1], &g.flags, dx, &c->sh,
                                                c->fmt, &c->pol, 0);
        }
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
    c->async = kvq_tb_chance(30);
    c->clean = c->async && kvq_tb_chance(50);
}

static void random_qk(kvq_sage_qk *q)
{
    q->role = kvq_tb_rndu(2);
    if (kvq_tb_chance(40)) {                                    /* the public code's blocks: the fast kernel */
        *q = kvq_sage_qk_default(q->role, kvq_tb_chance(50) ? 4u : 8u);
        q->gran = kvq_tb_rndu(3);
        q->rounding = kvq_tb_rndu(2);
        return;
    }
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

/* ---- dS [SAGE-DS-01..02] ------------------------------------------------------ */

/* Run one dS case: qm [rows][d] (nq values), ks [N][d] (nk values), nout
 * outputs; the reference and the launcher on the same values, compared as
 * the other ops (sentinels, guards, nothing written on error). */
static void run_ds(const tcase *c, const float *qm, uint64_t nq, const float *ks, uint64_t nk,
                   uint64_t nout)
{
    kvq_tb_outs r, g;
    void *dp[1];
    const size_t off[1] = {(c->mis & 4u) ? 4u : 0u};
    kvq_tb_case();
    kvq_tb_outs_init(&r, "ref");
    kvq_tb_outs_add(&r, "ds", nout * 4u);
    kvq_tb_outs_init(&g, "gpu");
    kvq_tb_outs_add(&g, "ds", nout * 4u);
    float *dq = (float *)((uint8_t *)kvq_tb_dgrow(&d_in, nq * 4u + 16u) + ((c->mis & 1u) ? 4u : 0u));
    float *dk = (float *)((uint8_t *)kvq_tb_dgrow(&d_in2, nk * 4u + 16u) + ((c->mis & 2u) ? 4u : 0u));
    if (nq) kvq_tb_cuda(cudaMemcpy(dq, qm, nq * 4u, cudaMemcpyHostToDevice), "cudaMemcpy qm");
    if (nk) kvq_tb_cuda(cudaMemcpy(dk, ks, nk * 4u, cudaMemcpyHostToDevice), "cudaMemcpy ks");
    kvq_tb_outs_device(&g, d_o, off, dp);
    const int na = c->null_arg;
    r.status = kvq_sage_delta_s(na == 1 ? NULL : (float *)r.buf[0].p, na == 2 ? NULL : qm,
                                na == 3 ? NULL : ks, c->rows, na == 4 ? NULL : &c->sh, c->tau);
    g.status = kvq_cuda_sage_delta_s(na == 1 ? NULL : (float *)dp[0], na == 2 ? NULL : dq,
                                     na == 3 ? NULL : dk, c->rows, na == 4 ? NULL : &c->sh, c->tau, 0);
    kvq_tb_outs_fetch(&g, dp);
    g_cases[4]++;
    if (r.status != KVQ_OK) g_err[4]++;
    else g_groups[4] += nout;
    compare(c, &r, &g);
    kvq_tb_outs_free(&r);
    kvq_tb_outs_free(&g);
}

/* A dS input of kind k, n values (ties: signed powers of two over 80 binades;
 * zero: zeros of both signs, subnormals and tiny values whose products underflow). */
static void gen_ds(float *x, uint64_t n, int kind, int e)
{
    for (uint64_t i = 0; i < n; i++) {
        float v;
        switch (kind) {
        case K_ORD: v = rnd_binade(e - 8, e + 8); break;
        case K_TIES: v = ldexpf(kvq_tb_chance(50) ? -1.0f : 1.0f, -40 + (int)kvq_tb_rndu(81)); break;
        case K_ZERO:
            v = kvq_tb_chance(40) ? (kvq_tb_chance(50) ? -0.0f : 0.0f)
              : kvq_tb_chance(50) ? kvq_f32_from_bits(kvq_tb_rndu(1u << 23) | (kvq_tb_chance(50) ? 0x80000000u : 0u))
              : rnd_binade(-126, -60);
            break;
        default:                                          /* any finite value of |v| <= 2^51 */
            v = rnd_finite();
            if (fabsf(v) > 0x1p51f) v = ldexpf(v, -80);   /* <= 2^48 */
            if (kvq_tb_chance(1)) v = kvq_tb_chance(50) ? -0x1p51f : 0x1p51f; /* the bound itself */
            break;
        }
        x[i] = v;
    }
}

/* One random dS case. */
static void random_ds(float **q, size_t *qcap, float **k, size_t *kcap)
{
    tcase c;
    base_case(&c, "ds");
    const uint32_t N = c.sh.tokens, d = c.sh.dim;
    const uint32_t w = kvq_tb_rndu(100);
    c.rows = w < 50 ? 1u : w < 85 ? 1u + kvq_tb_rndu(16) : 1u + kvq_tb_rndu(160);
    if ((uint64_t)c.rows * N * d > (1u << 24)) c.rows = (uint32_t)((1u << 24) / ((uint64_t)N * d)) + 1u;
    c.mis = kvq_tb_rndu(8);
    const uint32_t t = kvq_tb_rndu(10);
    const float base = 1.0f / sqrtf((float)d);                /* the usual softmax scale, RN32 */
    c.tau = t < 4 ? base : t < 6 ? base * 0x1.715476p+0f      /* times RN32(log2 e) */
          : fminf(ldexpf(1.0f + (float)kvq_tb_rndu(1u << 23) * 0x1p-23f, -126 + (int)kvq_tb_rndu(143)),
                  0x1p16f);
    const uint64_t nq = (uint64_t)c.rows * d, nk = (uint64_t)N * d;
    if (nq > *qcap) free(*q), *qcap = nq, *q = (float *)kvq_tb_malloc(nq * 4u);
    if (nk > *kcap) free(*k), *kcap = nk, *k = (float *)kvq_tb_malloc(nk * 4u);
    const int e = -20 + (int)kvq_tb_rndu(41);
    gen_ds(*q, nq, c.kind, e);
    gen_ds(*k, nk, c.kind, -e / 2);
    if (c.kind == K_WIDE && kvq_tb_chance(25)) {            /* one value above 2^51: KVQ_E_PARAM */
        const float big = ldexpf(1.0f + (float)(1u + kvq_tb_rndu((1u << 23) - 1u)) * 0x1p-23f,
                                 51 + (int)kvq_tb_rndu(77));
        if (kvq_tb_chance(50)) (*q)[kvq_tb_rnd() % nq] = kvq_tb_chance(50) ? -big : big;
        else (*k)[kvq_tb_rnd() % nk] = kvq_tb_chance(50) ? -big : big;
    }
    if (c.bad) {
        const uint32_t b = kvq_tb_rndu(4);
        if (b == 0) put_bad(*q, nq, 0);
        else if (b == 1) put_bad(*k, nk, 0);
        else if (b == 2) { const float tb[] = {NAN, INFINITY, -INFINITY}; c.tau = tb[kvq_tb_rndu(3)]; }
        else {                                               /* tau out of range, maybe also a NaN */
            const float tb[] = {0.0f, -0.0f, 0x1p-127f, 0x1.000002p16f, -1.0f, 0x1p20f};
            c.tau = tb[kvq_tb_rndu(6)];
            if (kvq_tb_chance(50)) put_bad(*k, nk, 0);
        }
    }
    run_ds(&c, *q, nq, *k, nk, (uint64_t)c.rows * N);
}

/* ---- dequantization [SAGE-Q-08] -------------------------------------------------
 * Stored codes and scales, not a quantizer's output: every code byte random
 * (so INT4 -8 and INT8 -128, which the quantizer never writes, occur), scales
 * +0, -0, normal over the whole exponent range, and near the top, where
 * whether a product overflows (KVQ_E_RANGE) depends on the codes of the slot's
 * tokens (half of those cases draw the codes in [-kc, kc - 1] for a random
 * kc, so that a large scale overflows with some codes and not with others);
 * a bad case puts one to three bad scales (NaN, +-Inf, negative,
 * subnormal of either sign) in random slots, so that the first in slot order
 * must decide between KVQ_E_NONFINITE and KVQ_E_PARAM, and a bad scale must
 * win over an overflow elsewhere.  Output pointers 16-byte aligned or not. */
static float dq_scale(uint32_t bits)
{
    const uint32_t w = kvq_tb_rndu(16);
    const float m = 1.0f + (float)kvq_tb_rndu(1u << 23) * 0x1p-23f;
    if (w == 0) return 0.0f;
    if (w == 1) return -0.0f;
    if (w == 2) return 0x1p-126f;                                 /* the least normal: valid */
    if (w == 3)                                                   /* 2^128 / |k| lies among the codes */
        return ldexpf(m, (bits == 4u ? 124 : 120) + (int)kvq_tb_rndu(4));
    return ldexpf(m, -126 + (int)kvq_tb_rndu(250));
}

static float dq_bad(void)
{
    const float bad[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0f, -0x1p-126f, 0x1p-127f, -0x1p-149f,
                         0x1.fffffcp-127f};
    return bad[kvq_tb_rndu(sizeof bad / sizeof bad[0])];
}

static void random_dq(uint8_t **codes, size_t *ccap, float **sc, size_t *scap)
{
    tcase c;
    base_case(&c, "dq");
    random_qk(&c.qk);
    c.mis = kvq_tb_rndu(2) ? 4u : 0u;
    const uint64_t n = kvq_sage_elems(&c.sh), nc = kvq_sage_code_bytes(&c.sh, c.qk.bits);
    const uint64_t ns = kvq_sage_scale_count(&c.sh, &c.qk);
    if (nc > *ccap) free(*codes), *ccap = nc, *codes = (uint8_t *)kvq_tb_malloc(nc);
    if (ns * 4u > *scap) free(*sc), *scap = ns * 4u, *sc = (float *)kvq_tb_malloc(ns * 4u);
    const int top = kvq_tb_chance(25);                            /* a case near the overflow */
    if (top && kvq_tb_chance(50)) {                               /* codes in [-kc, kc - 1]: whether a */
        const uint32_t kc = 1u + kvq_tb_rndu(c.qk.bits == 4u ? 8u : 128u); /* product overflows moves */
        for (uint64_t e = 0; e < n; e++)
            kvq_sage_pack_code(*codes, e, c.qk.bits, (int32_t)kvq_tb_rndu(2u * kc) - (int32_t)kc);
    } else {
        for (uint64_t i = 0; i < nc; i++) (*codes)[i] = (uint8_t)kvq_tb_rndu(256);
    }
    for (uint64_t i = 0; i < ns; i++) {
        float v = dq_scale(c.qk.bits);
        if (!top && fabsf(v) > 0x1p100f) v = ldexpf(v, -60);
        (*sc)[i] = v;
    }
    if (c.bad)
        for (uint32_t b = 0, nb = 1u + kvq_tb_rndu(3); b < nb; b++) (*sc)[kvq_tb_rnd() % ns] = dq_bad();
    kvq_tb_outs r, g;
    void *dp[1];
    const size_t off[1] = {c.mis};
    kvq_tb_case();
    kvq_tb_outs_init(&r, "ref");
    kvq_tb_outs_add(&r, "y", n * 4u);
    kvq_tb_outs_init(&g, "gpu");
    kvq_tb_outs_add(&g, "y", n * 4u);
    uint8_t *dc = (uint8_t *)kvq_tb_dgrow(&d_in, nc);
    float *ds = (float *)kvq_tb_dgrow(&d_in2, ns * 4u);
    kvq_tb_cuda(cudaMemcpy(dc, *codes, nc, cudaMemcpyHostToDevice), "cudaMemcpy codes");
    kvq_tb_cuda(cudaMemcpy(ds, *sc, ns * 4u, cudaMemcpyHostToDevice), "cudaMemcpy scales");
    kvq_tb_outs_device(&g, d_o, off, dp);
    r.status = kvq_sage_dequantize_qk((float *)r.buf[0].p, *codes, *sc, &c.sh, &c.qk);
    if (c.async) {
        kvq_cuda_result *res = async_result();
        const uint32_t none = g.flags;                  /* no flags output: the sentinel stays, and */
        g.status = kvq_cuda_sage_dequantize_qk_async((float *)dp[0], res, dc, ds, &c.sh, &c.qk, d_ws,
                                                     kvq_cuda_sage_workspace(), 0);
        async_fetch(&g, res);
        if (g.flags == 0u) g.flags = none;              /* the result word's flags field must be 0 */
    } else {
        g.status = kvq_cuda_sage_dequantize_qk((float *)dp[0], dc, ds, &c.sh, &c.qk, 0);
    }
    kvq_tb_outs_fetch(&g, dp);
    g_cases[5]++;
    g_dq_status[r.status == KVQ_OK ? 0 : r.status == KVQ_E_RANGE ? 1 : r.status == KVQ_E_NONFINITE ? 2 : 3]++;
    if (r.status != KVQ_OK) g_err[5]++;
    else g_groups[5] += n;
    compare(&c, &r, &g);
    kvq_tb_outs_free(&r);
    kvq_tb_outs_free(&g);
}

/* The argument errors of [SAGE-DS-02], each alone and in combination (the
 * earlier requirement wins), and the bounds themselves. */
static void fixed_ds(void)
{
    static float qm[2 * 128], ks[37 * 128];
    struct { uint32_t rows, N, d; float tau; int null_arg; int poke; } L[] = {
        /* poke: 0 none, 1 NaN in ks, 2 qm[0] = 2^51, 3 ks[last] = -2^51, 4 qm[1] just above
         * 2^51, 5 ks[5] just above 2^51, 6 Inf in qm, 7 NaN in qm and ks[0] above 2^51 */
        {1, 37, 64, 0.125f, 1, 0}, {1, 37, 64, 0.125f, 2, 0}, {1, 37, 64, 0.125f, 3, 0},
        {1, 37, 64, 0.125f, 4, 0}, {0, 37, 64, 0.125f, 1, 0},          /* NULL first */
        {0, 37, 64, 0.125f, 0, 0}, {(1u << 24) + 1u, 37, 64, 0.125f, 0, 0},
        {1u << 24, 257, 64, 0.125f, 0, 0},                              /* rows N > 2^32 */
        {(1u << 8) + 1u, 1u << 24, 96, 0.125f, 0, 0},                   /* ... before the shape */
        {1u << 8, 1u << 24, 96, 0.125f, 0, 0},                          /* rows N == 2^32: shape */
        {0, 37, 96, NAN, 0, 1},                                          /* rows before shape, tau */
        {1, 37, 0, 0.125f, 0, 0}, {1, 37, 32, 0.125f, 0, 0}, {1, 37, 96, 0.125f, 0, 0},
        {1, 37, 256, 0.125f, 0, 0}, {1, 0, 64, 0.125f, 0, 0}, {1, (1u << 24) + 1u, 64, 0.125f, 0, 0},
        {1, 37, 96, NAN, 0, 1},                                          /* shape before NaN */
        {2, 37, 128, NAN, 0, 0}, {2, 37, 128, INFINITY, 0, 0}, {2, 37, 128, -INFINITY, 0, 4},
        {2, 37, 128, 0.0f, 0, 0}, {2, 37, 128, -0.0f, 0, 0}, {2, 37, 128, 0x1p-127f, 0, 0},
        {2, 37, 128, -0.125f, 0, 0}, {2, 37, 128, 0x1.000002p16f, 0, 0},
        {2, 37, 128, 0x1p-126f, 0, 0}, {2, 37, 128, 0x1p16f, 0, 0},    /* tau bounds: OK */
        {2, 37, 64, 0.0f, 0, 1}, {2, 37, 64, 0x1p17f, 0, 6},            /* NaN/Inf beat tau range */
        {2, 37, 64, 0.125f, 0, 7},                                       /* NaN beats |ks| > 2^51 */
        {2, 37, 64, 0x1p16f, 0, 2}, {2, 37, 128, 0x1p16f, 0, 3},        /* 2^51 itself: OK */
        {2, 37, 64, 0.125f, 0, 4}, {2, 37, 128, 0.125f, 0, 5},          /* above 2^51: PARAM */
    };
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        tcase c;
        base_case(&c, "ds");
        c.kind = K_ORD;
        c.bad = L[i].poke != 0 && L[i].poke != 2 && L[i].poke != 3;
        c.rows = L[i].rows;
        c.sh.tokens = L[i].N;
        c.sh.dim = L[i].d;
        c.tau = L[i].tau;
        c.null_arg = L[i].null_arg;
        c.mis = (uint32_t)i % 8u;
        gen_ds(qm, 2 * 128, K_ORD, 10);
        gen_ds(ks, 37 * 128, K_ORD, -5);
        switch (L[i].poke) {
        case 1: ks[100] = NAN; break;
        case 2: qm[0] = 0x1p51f; break;
        case 3: ks[37 * 128 - 1] = -0x1p51f; break;
        case 4: qm[1] = 0x1.000002p51f; break;
        case 5: ks[5] = -0x1.000002p51f; break;
        case 6: qm[7] = -INFINITY; break;
        case 7: qm[3] = NAN, ks[0] = 0x1p60f; break;
        default: break;
        }
        /* a valid call reads rows d and N d values: the cases above keep them inside the arrays */
        const int valid = c.rows >= 1u && c.rows <= 2u && c.sh.tokens <= 37u &&
                          (c.sh.dim == 64u || c.sh.dim == 128u);
        const uint64_t nout = valid ? (uint64_t)c.rows * c.sh.tokens : 16u;
        run_ds(&c, qm, valid ? (uint64_t)c.rows * c.sh.dim : 1u, ks,
               valid ? (uint64_t)c.sh.tokens * c.sh.dim : 1u, nout);
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
                {                                                /* the one-pass form: on bad
                                                                  * input its status only [SAGE-DEV-02] */
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
    {                                                     /* dS: the fixed list, then random cases */
        const uint64_t nds = kvq_tb_env_count("KVQ_SAGE_DS_CASES", 600u);
        float *q = NULL, *k = NULL;
        size_t qcap = 0, kcap = 0;
        fixed_ds();
        for (uint64_t i = 0; i < nds; i++) random_ds(&q, &qcap, &k, &kcap);
        free(q);
        free(k);
    }
    {                                                     /* the reading of stored codes */
        const uint64_t ndq = kvq_tb_env_count("KVQ_SAGE_DQ_CASES", 600u);
        uint8_t *codes = NULL;
        float *sc = NULL;
        size_t ccap = 0, scap = 0;
        for (uint64_t i = 0; i < ndq; i++) random_dq(&codes, &ccap, &sc, &scap);
        free(codes);
        free(sc);
    }
    printf("gpu-sage-test: cases smooth %lu (%lu errors), qk %lu (%lu errors), v %lu (%lu errors), "
           "p %lu (%lu errors), ds %lu (%lu errors), dq %lu (%lu errors)\n", g_cases[0], g_err[0], g_cases[1],
           g_err[1], g_cases[2], g_err[2], g_cases[3], g_err[3], g_cases[4], g_err[4], g_cases[5], g_err[5]);
    printf("gpu-sage-test: groups compared (good inputs): smooth means %lu, qk scale slots %lu, "
           "v channels %lu, p rows %lu, ds outputs %lu, dq values %lu\n", g_groups[0], g_groups[1], g_groups[2],
           g_groups[3], g_groups[4], g_groups[5]);
    printf("gpu-sage-test: dq statuses: ok %lu, range %lu, non-finite %lu, param %lu\n", g_dq_status[0],
           g_dq_status[1], g_dq_status[2], g_dq_status[3]);
    return kvq_tb_finish();
}
