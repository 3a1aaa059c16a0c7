/*
 * attn_test.cu -- the SageAttention2 attention pipeline on the device
 * (gpu/sage/sage_attn.cu) against the reference layer, bitwise.
 *
 * Each case (fixed list; inputs from the seed: gaussian, "sink" -- outlier
 * channels of large magnitude in Q, K and V plus a key token every query
 * attends to --, and small values around 2^-20) runs kvq_cuda_sage_attn and
 * checks, bit for bit:
 *   intermediates  the smoothed K and Q, their means, dS, the codes and scales
 *                  of Q, K and V read back from the workspace equal
 *                  kvq_sage_smooth / _delta_s / _quantize_qk / _quantize_v of
 *                  ref/fast/sage.c on the host [SAGE-ATT-02..03]
 *   result word    KVQ_OK; the output's guard bytes untouched
 *   trace          the core again with a trace of one CTA (the last query block
 *                  in even cases, the first in odd ones, the last head): its
 *                  output equals the pipeline's; every QK dot of every key
 *                  block equals the host's int32 dot of the codes; every P~V
 *                  wgmma output equals kvq_mma_dot(P~ row, V~ channel, its
 *                  accumulator input, E4M3, kvq_mma_model_wgmma_fp8(0)); the
 *                  second instruction of a block starts where the first ended;
 *                  P~ codes of keys a row cannot see are 0x00 [SAGE-ATT-04]
 * the output against the exact path's bound (kvq_exact_sage_attn_bound, the
 * whole pipeline against exact attention on the unquantized inputs
 * [SAGE-ATT-07]) on every row of small cases and 64 rows a head of large
 * ones, and prints, as a diagnostic only, max |o - o_ref| and the cosine
 * similarity against a binary64 attention on the original Q, K, V.  Bad input: invalid parameters give KVQ_E_PARAM with nothing
 * launched (output and result word untouched); a NaN or an infinity in Q, K
 * or V gives KVQ_E_NONFINITE in the result word and leaves the output
 * untouched.
 *
 * usage: kvq_gpu_sage_attn_test [--bench | --long | --gqa | --stages [SIZES [REPS]] |
 *                                --gqa-bench [SIZES [REPS]]]
 *   --gqa    only the grouped-KV cases (kvq_cuda_sage_attn_gqa, [SAGE-DEV-17]; they
 *            also run, first, without it): 4 query heads on 2 and on 1 KV
 *            heads, 8 on 2, causal and not, partial blocks, both cores and INT4 --
 *            the K-side intermediates per KV head and the Q side and dS per query
 *            head bit for bit against ref/fast on its KV head's K and V, the
 *            output and result word the same bits as kvq_cuda_sage_attn on K and
 *            V repeated, every output within the bound; bad kv_heads refused
 *   --gqa-bench  32 query heads on 8 KV heads at nq = nk = SIZES (default
 *            8192,32768), not causal: the grouped call against the repeated
 *            call, outputs bit for bit, medians of REPS (default 5) and the
 *            stage split of each; exit 1 when they differ, 2 for a bad argument
 *   --long   instead of the standard cases, lengths past 160K (q_len 1 over
 *            196,608 keys, a causal tail of 1024 queries over 163,904 keys)
 *            and large activations (scores ~1e4, V up to 1e5) at 163,841
 *            keys, judged on 8 rows a head
 *   --bench  times nq = nk = 4096 and 8192, 32 heads, d = 128, not causal,
 *            buffer 128, INT8: the whole pipeline and the core alone (medians
 *            of cudaEvent times) and the stages of one pipeline call
 *            (kvq_cuda_sage_attn_stages), instead of the checks
 *   --stages the stage kernels of [SAGE-DEV-16] against those of before
 *            (KVQ_SAGE_STAGES=1 and 0) at nq = nk = SIZES (default
 *            4096,8192,32768), 32 heads: every workspace and output byte
 *            equal, then the stage split, each stage's copy of its bytes and
 *            the whole pipeline side by side (medians of REPS, default 5);
 *            exit 1 when a byte differs, 2 for a bad argument
 * Every standard case also runs captured in a CUDA graph (global capture
 * mode) and replayed twice (workspace and output overwritten before each):
 * intermediates bitwise against the reference, output and result word equal
 * to the direct call's; two bad inputs in two stages give the earlier
 * stage's status, directly and from a graph [SAGE-DEV-09].  With the FA3 core
 * in its default form, V~ in the workspace (the V quantizer's second output,
 * [SAGE-DEV-15]) is judged byte for byte too: the reference's V codes
 * permuted by the spec's formula (gpu/sage/vt_ref.h).
 * Seed: KVQ_SEED.  Without a usable sm_90 device: "SKIPPED", exit 77.
 * The closing line is "N passed, N failed"; exit 1 when anything failed.
 *
 * SPEC: [SAGE-ATT-01] [SAGE-ATT-02] [SAGE-ATT-03] [SAGE-ATT-04] [SAGE-ATT-05] [SAGE-ATT-06]
 * [SAGE-ATT-07] [SAGE-ATT-08] [SAGE-ATT-10] [SAGE-ATT-11] [SAGE-ACC-05] [SAGE-DEV-06] [SAGE-ACC-02]
 * [API-ERR-01] [POL-NF-01] [SAGE-DEV-09] [SAGE-DEV-15] [SAGE-DEV-16] [SAGE-DEV-17] [SAGE-MHA-01]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kvq.h"
#include "kvq_exact_sage.h"
#include "kvq_mma.h"
#include "kvq_sage.h"
#include "kvq_sage_attn.h"
#include "kvq_cuda.h"
#include "sage/vt_ref.h"
#include "testbed.h"

#define DEFAULT_SEED 0x6b76712d61747431ull /* "kvq-att1" */
#define SKIP_STATUS 77
#define D 128u

enum { DIST_GAUSS, DIST_SINK, DIST_SMALL, DIST_HUGE, DIST_N };
static const char *dist_name[DIST_N] = {"gauss", "sink", "small", "huge"};

typedef struct acase {
    uint32_t nq, nk, heads, causal, buffer, bits, dist;
} acase;

static const acase cases[] = {
    {64, 64, 1, 0, 128, 8, DIST_GAUSS},     {64, 64, 3, 1, 64, 8, DIST_SINK},
    {200, 200, 1, 0, 0, 8, DIST_SINK},      {200, 200, 3, 1, 128, 8, DIST_GAUSS},
    {1024, 1024, 1, 1, 128, 8, DIST_SINK},  {1024, 1024, 3, 0, 64, 8, DIST_SMALL},
    {1024, 1024, 1, 1, 0, 8, DIST_GAUSS},   {4096, 4096, 1, 0, 128, 8, DIST_GAUSS},
    {4096, 4096, 1, 1, 64, 8, DIST_SINK},   {4096, 4096, 3, 1, 0, 8, DIST_SMALL},
    {1, 4096, 3, 0, 128, 8, DIST_SINK},     {1, 200, 1, 1, 64, 8, DIST_GAUSS},
    {1, 64, 1, 0, 0, 8, DIST_SMALL},        {300, 1000, 1, 1, 128, 8, DIST_GAUSS},
    {1000, 300, 3, 1, 64, 8, DIST_SINK},    {1000, 300, 1, 0, 0, 8, DIST_GAUSS},
    {130, 77, 3, 0, 128, 8, DIST_SINK},     {77, 130, 1, 1, 128, 8, DIST_SMALL},
    {200, 200, 1, 1, 128, 4, DIST_GAUSS},   {1024, 1024, 3, 0, 64, 4, DIST_SINK},
    {1, 1000, 1, 1, 0, 4, DIST_GAUSS},      {1024, 1024, 1, 0, 128, 8, DIST_HUGE},
    {200, 333, 3, 1, 0, 8, DIST_HUGE},
};

/* --long: sequence lengths past 160K (decode and a causal prefill tail), and
 * large activations at length; the bound on 8 rows a head. */
static const acase long_cases[] = {
    {1, 196608, 1, 0, 128, 8, DIST_SINK},   {1024, 163904, 1, 1, 128, 8, DIST_GAUSS},
    {1, 163841, 1, 0, 0, 8, DIST_HUGE},
};
static int g_long;

/* ---- inputs -------------------------------------------------------------------- */

static double gauss(void)
{
    const double u1 = 1.0 - kvq_tb_rndf(), u2 = kvq_tb_rndf();
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Q [heads][nq][D], K, V [heads][nk][D]. */
static void gen(float *q, float *k, float *v, const acase *c)
{
    const uint64_t nq = (uint64_t)c->heads * c->nq * D, nk = (uint64_t)c->heads * c->nk * D;   /* elements */
    std::vector<double> u(D), qb(D, 0.0), kb(D, 0.0), vb(D, 1.0);
    for (uint32_t i = 0; i < D; i++) u[i] = gauss();
    if (c->dist == DIST_SINK) {
        for (uint32_t i = 0; i < 6u; i++) {                  /* outlier channels */
            kb[kvq_tb_rndu(D)] = 8.0 + 8.0 * kvq_tb_rndf();
            qb[kvq_tb_rndu(D)] = 4.0;
            vb[kvq_tb_rndu(D)] = 30.0;
        }
    }
    if (c->dist == DIST_HUGE) {                              /* large activations: scores ~1e4, V ~1e3 .. 1e5 */
        for (uint32_t i = 0; i < 6u; i++) {
            qb[kvq_tb_rndu(D)] = 200.0;
            kb[kvq_tb_rndu(D)] = 200.0;
            vb[kvq_tb_rndu(D)] = 1e5;
        }
    }
    const double sc = c->dist == DIST_SMALL ? 0x1p-20 : c->dist == DIST_HUGE ? 40.0 : 1.0;
    for (uint64_t e = 0; e < nq; e++) {
        const uint32_t ch = (uint32_t)(e % D);
        double x = gauss();
        if (c->dist == DIST_SINK) x = x + u[ch] + qb[ch] * gauss();
        if (c->dist == DIST_HUGE && qb[ch] != 0.0) x *= qb[ch] / 40.0;
        q[e] = (float)(x * sc);
    }
    for (uint64_t e = 0; e < nk; e++) {
        const uint32_t ch = (uint32_t)(e % D), tok = (uint32_t)((e / D) % c->nk);
        double x = gauss(), y = gauss();
        if (c->dist == DIST_SINK) {
            x = (tok % 97u == 0u ? u[ch] : x) + kb[ch];      /* sinks: every query's mean direction */
            y = y * vb[ch];
        }
        if (c->dist == DIST_HUGE) {
            if (kb[ch] != 0.0) x *= kb[ch] / 40.0;
            y *= vb[ch] == 1.0 ? 25.0 : vb[ch] / 40.0;
        }
        k[e] = (float)(x * sc);
        v[e] = (float)(y * sc);
    }
}

/* ---- host references of the intermediates ----------------------------------------- */

typedef struct inter {
    std::vector<float> ks, km, qs, qm, ds, qsc, ksc, vsc;
    std::vector<uint8_t> qc, kc, vc;
} inter;

static int host_inter(inter *r, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                      uint32_t heads)
{
    const uint32_t nq = a->nq, nk = a->nk, rows = kvq_sage_mean_rows(nq, KVQ_SAGE_ATTN_BQ);
    const kvq_sage_shape qsh = {nq, D}, ksh = {nk, D};
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const uint64_t qcb = kvq_sage_code_bytes(&qsh, a->qk_bits), kcb = kvq_sage_code_bytes(&ksh, a->qk_bits);
    const uint64_t qsn = kvq_sage_scale_count(&qsh, &qq), ksn = kvq_sage_scale_count(&ksh, &kq);
    const float tau2 = kvq_sage_attn_tau2(a->tau);
    r->ks.assign((size_t)heads * nk * D, 0.0f), r->km.assign((size_t)heads * D, 0.0f);
    r->qs.assign((size_t)heads * nq * D, 0.0f), r->qm.assign((size_t)heads * rows * D, 0.0f);
    r->ds.assign((size_t)heads * rows * nk, 0.0f);
    r->qc.assign((size_t)(heads * qcb), 0u), r->qsc.assign((size_t)(heads * qsn), 0.0f);
    r->kc.assign((size_t)(heads * kcb), 0u), r->ksc.assign((size_t)(heads * ksn), 0.0f);
    r->vc.assign((size_t)heads * nk * D, 0u), r->vsc.assign((size_t)heads * D, 0.0f);
    for (uint32_t h = 0; h < heads; h++) {
        uint32_t f = 0;
        const uint64_t oq = (uint64_t)h * nq * D, ok = (uint64_t)h * nk * D;
        if (kvq_sage_smooth(&r->ks[ok], &r->km[(size_t)h * D], k + ok, &ksh, nk) != KVQ_OK ||
            kvq_sage_smooth(&r->qs[oq], &r->qm[(size_t)h * rows * D], q + oq, &qsh, KVQ_SAGE_ATTN_BQ) != KVQ_OK ||
            kvq_sage_delta_s(&r->ds[(size_t)h * rows * nk], &r->qm[(size_t)h * rows * D], &r->ks[ok], rows, &ksh,
                             tau2) != KVQ_OK ||
            kvq_sage_quantize_qk(&r->qc[h * qcb], &r->qsc[h * qsn], &f, &r->qs[oq], &qsh, &qq,
                                 &kvq_policy_default) != KVQ_OK ||
            kvq_sage_quantize_qk(&r->kc[h * kcb], &r->ksc[h * ksn], &f, &r->ks[ok], &ksh, &kq,
                                 &kvq_policy_default) != KVQ_OK ||
            kvq_sage_quantize_v(&r->vc[ok], &r->vsc[(size_t)h * D], &f, v + ok, &ksh, KVQ_SAGE_FP8_E4M3,
                                &kvq_policy_default) != KVQ_OK)
            return 0;
    }
    return 1;
}

/* ---- diagnostics: binary64 attention on the original inputs ------------------------ */

static void host_attention(std::vector<double> &o, const float *q, const float *k, const float *v,
                           const kvq_sage_attn *a, uint32_t heads)
{
    const uint32_t nq = a->nq, nk = a->nk;
    o.assign((size_t)heads * nq * D, 0.0);
    const int64_t nrow = (int64_t)heads * nq;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t hr = 0; hr < nrow; hr++) {
        const uint32_t h = (uint32_t)(hr / nq), i = (uint32_t)(hr % nq), nv = kvq_sage_attn_nvisible(a, i);
        if (nv == 0u) continue;
        const float *qi = q + ((uint64_t)h * nq + i) * D;
        std::vector<double> s(nv);
        double m = -INFINITY;
        for (uint32_t j = 0; j < nv; j++) {
            const float *kj = k + ((uint64_t)h * nk + j) * D;
            double x = 0.0;
            for (uint32_t c = 0; c < D; c++) x += (double)qi[c] * kj[c];
            s[j] = x * (double)a->tau;
            m = std::max(m, s[j]);
        }
        double l = 0.0;
        std::vector<double> acc(D, 0.0);
        for (uint32_t j = 0; j < nv; j++) {
            const double p = exp(s[j] - m);
            l += p;
            const float *vj = v + ((uint64_t)h * nk + j) * D;
            for (uint32_t c = 0; c < D; c++) acc[c] += p * vj[c];
        }
        for (uint32_t c = 0; c < D; c++) o[(size_t)hr * D + c] = acc[c] / l;
    }
}

/* ---- device helpers -------------------------------------------------------------- */

#define CK(x) kvq_tb_cuda((x), #x)

template <typename T> static T *dalloc(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n ? n : 1u));
    return (T *)p;
}

static int same_bytes(const char *what, const void *dev, const void *host, size_t n, const acase *c)
{
    std::vector<uint8_t> h(n ? n : 1u);
    CK(cudaMemcpy(h.data(), dev, n, cudaMemcpyDeviceToHost));
    const long at = kvq_tb_first_diff(h.data(), host, n);
    if (at < 0) {
        kvq_tb_pass();
        return 1;
    }
    if (kvq_tb_fail())
        printf("  FAIL %s: byte %ld of %zu differs (device 0x%02x, reference 0x%02x); case nq=%u nk=%u heads=%u "
               "causal=%u buffer=%u bits=%u input=%s seed=0x%016llx\n", what, at, n, h[(size_t)at],
               ((const uint8_t *)host)[at], c->nq, c->nk, c->heads, c->causal, c->buffer, c->bits,
               dist_name[c->dist], (unsigned long long)kvq_tb_seed());
    return 0;
}

/* Whether the pipeline writes V~ [SAGE-DEV-15] for case c: its core is the FA3
 * one in the default form -- INT8 Q/K codes, the core built, and none of
 * KVQ_SAGE_CORE=loop, KVQ_SAGE_VT=0, KVQ_SAGE_FA3_SERIAL=1, a KVQ_SAGE_FA3_LEVEL
 * other than 3, 4 or 5 in the environment (levels 3..5 load V~, [SAGE-DEV-13]). */
static int vt_expected(const acase *c)
{
    const char *core = getenv("KVQ_SAGE_CORE"), *vt = getenv("KVQ_SAGE_VT");
    const char *ser = getenv("KVQ_SAGE_FA3_SERIAL"), *lv = getenv("KVQ_SAGE_FA3_LEVEL");
    return c->bits == 8u && kvq_cuda_sage_attn_fa3_built() && !(core && !strcmp(core, "loop")) &&
           !(vt && !strcmp(vt, "0")) && !(ser && !strcmp(ser, "1")) && (lv == NULL || lv[0] == '\0' || !strcmp(lv, "3") || !strcmp(lv, "4") ||
                                                                   !strcmp(lv, "5"));
}

/* Every intermediate in workspace ws against the host reference r, bit for bit. */
static void same_inter(const char *pre, const uint8_t *ws, const kvq_cuda_sage_attn_ws *L, const inter *r,
                       const acase *c)
{
    const struct { const char *what; size_t off; const void *ref; size_t n; } it[] = {
        {"smoothed K", L->ks, r->ks.data(), r->ks.size() * 4u}, {"K means", L->km, r->km.data(), r->km.size() * 4u},
        {"smoothed Q", L->qs, r->qs.data(), r->qs.size() * 4u}, {"Q means", L->qm, r->qm.data(), r->qm.size() * 4u},
        {"dS", L->ds, r->ds.data(), r->ds.size() * 4u},          {"Q codes", L->qc, r->qc.data(), r->qc.size()},
        {"Q scales", L->qsc, r->qsc.data(), r->qsc.size() * 4u}, {"K codes", L->kc, r->kc.data(), r->kc.size()},
        {"K scales", L->ksc, r->ksc.data(), r->ksc.size() * 4u}, {"V codes", L->vc, r->vc.data(), r->vc.size()},
        {"V scales", L->vsc, r->vsc.data(), r->vsc.size() * 4u},
    };
    for (const auto &x : it) {
        char what[96];
        snprintf(what, sizeof what, "%s%s", pre, x.what);
        same_bytes(what, ws + x.off, x.ref, x.n, c);
    }
    /* V~ [SAGE-DEV-15], when the pipeline's core is the FA3 core in its default
     * form (INT8 Q/K, the environment not choosing another core, form, level or
     * KVQ_SAGE_VT=0): the reference's V codes permuted by the spec's formula
     * (gpu/sage/vt_ref.h), 0x00 past nk -- every byte */
    if (vt_expected(c)) {
        const uint32_t nk = c->nk, nb = (nk + 63u) / 64u;
        std::vector<uint8_t> want((size_t)c->heads * nb * 8192u);
        for (uint32_t h = 0; h < c->heads; h++)
            for (uint32_t j = 0; j < nb * 64u; j++)
                for (uint32_t ch = 0; ch < 128u; ch++)
                    want[h * kvq_vt_head_bytes(nk) + kvq_vt_index(j, ch)] =
                        j < nk ? r->vc[((size_t)h * nk + j) * 128u + ch] : 0u;
        char what[96];
        snprintf(what, sizeof what, "%sV~ (the V codes permuted, [SAGE-DEV-15])", pre);
        same_bytes(what, ws + L->vt, want.data(), want.size(), c);
    }
}

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    if (ok) {
        kvq_tb_pass();
        return;
    }
    if (kvq_tb_fail()) {
        va_list ap;
        va_start(ap, fmt);
        printf("  FAIL ");
        vprintf(fmt, ap);
        printf(" (seed 0x%016llx)\n", (unsigned long long)kvq_tb_seed());
        va_end(ap);
    }
}

static uint32_t f32bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* ---- the trace check ---------------------------------------------------------------- */

/* Returns the number of mismatches; counts into *ndots, *npv the outputs checked. */
static uint64_t check_trace(const acase *c, const kvq_sage_attn *a, const inter *r, uint32_t head, uint32_t qblock,
                            uint32_t nb, const std::vector<int32_t> &dots, const std::vector<float> &ain,
                            const std::vector<float> &aout, const std::vector<uint8_t> &pc, uint64_t *ndots,
                            uint64_t *npv)
{
    const uint32_t nq = a->nq, nk = a->nk, bits = a->qk_bits, q0 = qblock * 64u;
    const kvq_sage_shape qsh = {nq, D}, ksh = {nk, D};
    const uint8_t *qc = r->qc.data() + head * kvq_sage_code_bytes(&qsh, bits);
    const uint8_t *kc = r->kc.data() + head * kvq_sage_code_bytes(&ksh, bits);
    const uint8_t *vc = r->vc.data() + (size_t)head * nk * D;
    const kvq_mma_model model = kvq_mma_model_wgmma_fp8(0u);
    uint64_t bad_dots = 0, bad_pv = 0, bad_chain = 0, bad_zero = 0;
    int first_dot = 1, first_pv = 1;
    /* QK dots */
    for (uint32_t kb = 0; kb < nb; kb++)
        for (uint32_t m = 0; m < 64u; m++)
            for (uint32_t n = 0; n < 64u; n++) {
                const uint32_t i = q0 + m, j = kb * 64u + n;
                int32_t want = 0;
                if (i < nq && j < nk)
                    for (uint32_t ch = 0; ch < D; ch++)
                        want += kvq_sage_unpack_code(qc, (uint64_t)i * D + ch, bits) *
                                kvq_sage_unpack_code(kc, (uint64_t)j * D + ch, bits);
                const int32_t got = dots[((size_t)kb * 64u + m) * 64u + n];
                if (got != want) {
                    bad_dots++;
                    if (first_dot && kvq_tb_fail())
                        printf("  FAIL trace dot: block %u row %u key %u: device %d, host %d\n", kb, m, n, got, want);
                    first_dot = 0;
                }
            }
    *ndots += (uint64_t)nb * 64u * 64u;
    /* PV instructions: one model evaluation an output */
    const int64_t nout = (int64_t)nb * 2 * 64 * D;
#pragma omp parallel for schedule(static) reduction(+ : bad_pv)
    for (int64_t o = 0; o < nout; o++) {
        const uint32_t u = (uint32_t)(o / (64 * D)), m = (uint32_t)((o / D) % 64), ch = (uint32_t)(o % D);
        uint8_t b[32];
        for (uint32_t kk = 0; kk < 32u; kk++) {
            const uint32_t j = (u / 2u) * 64u + (u % 2u) * 32u + kk;
            b[kk] = j < nk ? vc[(size_t)j * D + ch] : 0u;
        }
        const uint32_t want = kvq_mma_dot(&pc[((size_t)u * 64u + m) * 32u], b, 32u, f32bits(ain[(size_t)o]), 0u, &model);
        const uint32_t got = f32bits(aout[(size_t)o]);
        if (got != want) {
            bad_pv++;
#pragma omp critical
            {
                if (first_pv && kvq_tb_fail())
                    printf("  FAIL trace PV: instruction %u row %u channel %u: acc in 0x%08x, device 0x%08x, model "
                           "0x%08x\n", u, m, ch, f32bits(ain[(size_t)o]), got, want);
                first_pv = 0;
            }
        }
    }
    *npv += (uint64_t)nout;
    /* the second instruction of a block starts from the first's result */
    for (uint32_t kb = 0; kb < nb; kb++)
        if (memcmp(&aout[(size_t)(2u * kb) * 64u * D], &ain[(size_t)(2u * kb + 1u) * 64u * D], 64u * D * 4u) != 0)
            bad_chain++;
    /* P~ of keys a row cannot see: 0x00 */
    for (uint32_t u = 0; u < 2u * nb; u++)
        for (uint32_t m = 0; m < 64u; m++) {
            const uint32_t i = q0 + m, nv = i < nq ? kvq_sage_attn_nvisible(a, i) : 0u;
            for (uint32_t kk = 0; kk < 32u; kk++) {
                const uint32_t j = (u / 2u) * 64u + (u % 2u) * 32u + kk;
                if (j >= nv && pc[((size_t)u * 64u + m) * 32u + kk] != 0u) bad_zero++;
            }
        }
    check(bad_dots == 0, "trace: %llu of %llu QK dots differ", (unsigned long long)bad_dots,
          (unsigned long long)nb * 4096u);
    check(bad_pv == 0, "trace: %llu of %lld P~V outputs differ from kvq_mma_dot", (unsigned long long)bad_pv,
          (long long)nout);
    check(bad_chain == 0, "trace: %llu blocks' second instruction does not start from the first's result",
          (unsigned long long)bad_chain);
    check(bad_zero == 0, "trace: %llu P~ codes of invisible keys are not 0x00", (unsigned long long)bad_zero);
    (void)c;
    return bad_dots + bad_pv + bad_chain + bad_zero;
}

/* ---- one case ------------------------------------------------------------------------ */

/* The query rows whose outputs a case judges within the bound: every row when
 * `all`, else the block edges and the last rows, then rows drawn from the seed
 * and `salt` until there are `count` */
static std::vector<uint32_t> judged_rows(uint32_t nq, bool all, uint64_t salt, uint32_t count)
{
    std::vector<uint32_t> rows;
    if (all) {
        for (uint32_t i = 0; i < nq; i++) rows.push_back(i);
        return rows;
    }
    const uint32_t fixed[] = {0u, 1u, 63u, 64u, 127u, 128u, nq - 2u, nq - 1u};
    for (uint32_t f : fixed) rows.push_back(f);
    uint64_t z = kvq_tb_seed() ^ (0x9E3779B97F4A7C15ull * salt);
    while (rows.size() < count) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        rows.push_back((uint32_t)((z >> 33) % nq));
    }
    return rows;
}

static void run_case(const acase *c, uint32_t idx)
{
    kvq_tb_case();
    kvq_sage_attn a;
    a.nq = c->nq, a.nk = c->nk, a.dim = D, a.tau = 1.0f / sqrtf((float)D), a.causal = c->causal;
    a.buffer = c->buffer, a.qk_bits = c->bits;
    const uint32_t H = c->heads, nq = c->nq, nk = c->nk;
    const size_t nqe = (size_t)H * nq * D, nke = (size_t)H * nk * D;
    std::vector<float> q(nqe), k(nke), v(nke);
    gen(q.data(), k.data(), v.data(), c);

    float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nke * 4u), *dv = dalloc<float>(nke * 4u);
    const size_t obytes = nqe * 4u;
    uint8_t *dob = dalloc<uint8_t>(obytes + KVQ_TB_GUARD), *dob2 = dalloc<uint8_t>(obytes);
    float *dout = (float *)dob, *dout2 = (float *)dob2;
    kvq_cuda_result *dres = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
    CK(cudaMemcpy(dq, q.data(), nqe * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, k.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, v.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemset(dob, KVQ_TB_SENTINEL, obytes + KVQ_TB_GUARD));
    CK(cudaMemset(dres, 0xA5, sizeof(kvq_cuda_result)));
    kvq_cuda_sage_attn_ws L;
    check(kvq_cuda_sage_attn_ws_layout(&L, &a, H) == KVQ_OK, "ws_layout");
    check(kvq_cuda_sage_attn_workspace(&a, H) == L.total, "workspace size");
    uint8_t *ws = dalloc<uint8_t>(L.total);
    CK(cudaMemset(ws, 0xA5, L.total));                        /* a byte the pipeline does not write shows */

    /* the pipeline */
    const kvq_status st = kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, H, ws, L.total, 0);
    CK(cudaDeviceSynchronize());
    kvq_cuda_result res;
    CK(cudaMemcpy(&res, dres, sizeof res, cudaMemcpyDeviceToHost));
    check(st == KVQ_OK && res.status == KVQ_OK, "case %u: launch %s, result word status %u", idx,
          kvq_status_str(st), res.status);

    /* intermediates against the reference */
    inter r;
    const int hok = host_inter(&r, q.data(), k.data(), v.data(), &a, H);
    check(hok, "case %u: the host reference failed", idx);
    if (hok) same_inter("", ws, &L, &r, c);
    std::vector<uint8_t> guard(KVQ_TB_GUARD), sent(KVQ_TB_GUARD, KVQ_TB_SENTINEL);
    CK(cudaMemcpy(guard.data(), dob + obytes, KVQ_TB_GUARD, cudaMemcpyDeviceToHost));
    check(memcmp(guard.data(), sent.data(), KVQ_TB_GUARD) == 0, "case %u: bytes past the output written", idx);
    std::vector<float> o(nqe);
    CK(cudaMemcpy(o.data(), dout, obytes, cudaMemcpyDeviceToHost));

    /* the pipeline captured in a CUDA graph (global capture mode: a blocking
     * call inside it breaks the capture) and replayed twice on a second
     * workspace, it and the output overwritten before each replay: every
     * intermediate against the reference again, the output and the result
     * word equal to the direct call's [SAGE-DEV-09] */
    if (!g_long) {
        uint8_t *ws2 = dalloc<uint8_t>(L.total);
        kvq_cuda_result *dres2 = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
        cudaStream_t gs;
        cudaGraph_t graph = NULL;
        cudaGraphExec_t gexec = NULL;
        CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
        CK(cudaStreamBeginCapture(gs, cudaStreamCaptureModeGlobal));
        const kvq_status stc = kvq_cuda_sage_attn(dout2, dres2, dq, dk, dv, &a, H, ws2, L.total, gs);
        const cudaError_t ec = cudaStreamEndCapture(gs, &graph);
        check(stc == KVQ_OK && ec == cudaSuccess, "case %u: graph capture: launch %s, %s", idx, kvq_status_str(stc),
              cudaGetErrorString(ec));
        (void)cudaGetLastError();
        if (stc == KVQ_OK && ec == cudaSuccess) {
            CK(cudaGraphInstantiate(&gexec, graph, 0));
            for (int rep = 0; rep < 2; rep++) {
                /* nothing of a previous run left; the fills on the graph's stream (a
                 * non-blocking stream does not wait for the legacy stream's memsets) */
                CK(cudaMemsetAsync(dob2, KVQ_TB_SENTINEL, obytes, gs));
                CK(cudaMemsetAsync(ws2, 0xA5, L.total, gs));
                CK(cudaMemsetAsync(dres2, 0xA5, sizeof(kvq_cuda_result), gs));
                CK(cudaGraphLaunch(gexec, gs));
                CK(cudaStreamSynchronize(gs));
                kvq_cuda_result res2;
                CK(cudaMemcpy(&res2, dres2, sizeof res2, cudaMemcpyDeviceToHost));
                check(res2.status == res.status && res2.flags == res.flags,
                      "case %u: graph replay %d: result word %u/0x%x, direct %u/0x%x", idx, rep, res2.status,
                      res2.flags, res.status, res.flags);
                same_bytes(rep ? "graph replay 2: output vs the direct call's" : "graph replay 1: output vs the direct call's",
                           dout2, o.data(), obytes, c);
                if (hok) same_inter(rep ? "graph replay 2: " : "graph replay 1: ", ws2, &L, &r, c);
            }
            CK(cudaGraphExecDestroy(gexec));
        }
        if (graph != NULL) CK(cudaGraphDestroy(graph));
        CK(cudaStreamDestroy(gs));
        cudaFree(ws2), cudaFree(dres2);
    }

    /* the traced core */
    const uint32_t qblocks = kvq_sage_blocks(nq, 64u);
    kvq_cuda_sage_attn_trace tr;
    tr.head = H - 1u;
    tr.qblock = idx % 2u ? 0u : qblocks - 1u;
    tr.blocks = kvq_sage_blocks(nk, 64u);
    const size_t nbmax = tr.blocks;
    tr.d_dots = dalloc<int32_t>(nbmax * 4096u * 4u);
    tr.d_acc_in = dalloc<float>(nbmax * 2u * 64u * D * 4u);
    tr.d_acc_out = dalloc<float>(nbmax * 2u * 64u * D * 4u);
    tr.d_p = dalloc<uint8_t>(nbmax * 2u * 64u * 32u);
    tr.d_nblocks = dalloc<uint32_t>(4u);
    const kvq_status st2 = kvq_cuda_sage_attn_core_trace(dout2, &a, H, ws + L.qc, (const float *)(ws + L.qsc),
                                                         ws + L.kc, (const float *)(ws + L.ksc),
                                                         (const float *)(ws + L.ds), ws + L.vc,
                                                         (const float *)(ws + L.vsc), &tr, 0);
    CK(cudaDeviceSynchronize());
    check(st2 == KVQ_OK, "case %u: traced core: %s", idx, kvq_status_str(st2));
    uint64_t ndots = 0, npv = 0, tbad = 0;
    uint32_t nb = 0;
    if (st2 == KVQ_OK) {
        same_bytes("traced core output vs the pipeline's", dout2, o.data(), obytes, c);
        CK(cudaMemcpy(&nb, tr.d_nblocks, 4u, cudaMemcpyDeviceToHost));
        std::vector<int32_t> dots((size_t)nb * 4096u + 1u);
        std::vector<float> ain((size_t)nb * 2u * 64u * D + 1u), aout((size_t)nb * 2u * 64u * D + 1u);
        std::vector<uint8_t> pc((size_t)nb * 2u * 64u * 32u + 1u);
        CK(cudaMemcpy(dots.data(), tr.d_dots, (size_t)nb * 4096u * 4u, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ain.data(), tr.d_acc_in, (size_t)nb * 2u * 64u * D * 4u, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(aout.data(), tr.d_acc_out, (size_t)nb * 2u * 64u * D * 4u, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(pc.data(), tr.d_p, (size_t)nb * 2u * 64u * 32u, cudaMemcpyDeviceToHost));
        if (hok) tbad = check_trace(c, &a, &r, tr.head, tr.qblock, nb, dots, ain, aout, pc, &ndots, &npv);
    }

    /* diagnostics (not a pass/fail judgement) */
    std::vector<double> oref;
    host_attention(oref, q.data(), k.data(), v.data(), &a, H);
    double maxerr = 0.0, sxy = 0.0, sxx = 0.0, syy = 0.0, maxref = 0.0;
    for (size_t e = 0; e < nqe; e++) {
        maxerr = std::max(maxerr, fabs((double)o[e] - oref[e]));
        maxref = std::max(maxref, fabs(oref[e]));
        sxy += (double)o[e] * oref[e], sxx += (double)o[e] * o[e], syy += oref[e] * oref[e];
    }
    const double cosv = (sxx == 0.0 && syy == 0.0) ? 1.0 : sxy / (sqrt(sxx) * sqrt(syy));
    /* The output against the exact path's bound [SAGE-ATT-07..08]: every row
     * of every head when nq <= 256, else 64 rows a head (block edges, the
     * last rows and drawn ones); heads in parallel, verdicts checked here. */
    const std::vector<uint32_t> rows =
        judged_rows(nq, (nq <= 256u && !g_long) || nq <= 8u, idx + 1u, g_long ? 8u : 64u);
    const uint32_t nr = (uint32_t)rows.size();
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    std::vector<kvq_status> bst(H);
    std::vector<uint64_t> bbad(H);
    std::vector<double> bworst(H), bsum(H), rsum(H);
#pragma omp parallel for schedule(dynamic)
    for (uint32_t h = 0; h < H; h++) {
        std::vector<kvq_sage_attn_bound> bd((size_t)nr * D);
        std::vector<float> oh((size_t)nr * D);
        bst[h] = kvq_exact_sage_attn_bound(bd.data(), q.data() + (size_t)h * nq * D, k.data() + (size_t)h * nk * D,
                                           v.data() + (size_t)h * nk * D, &a, rows.data(), nr, &cls);
        for (uint32_t r2 = 0; r2 < nr; r2++)
            memcpy(&oh[(size_t)r2 * D], &o[((size_t)h * nq + rows[r2]) * D], D * sizeof(float));
        bbad[h] = bst[h] == KVQ_OK ? kvq_exact_sage_attn_judge(&bworst[h], oh.data(), bd.data(), (uint64_t)nr * D) : 0u;
        bsum[h] = rsum[h] = 0.0;
        for (size_t e = 0; e < bd.size(); e++) {
            bsum[h] += bd[e].bound;
            rsum[h] += fabs(0.5 * bd[e].ref_lo + 0.5 * bd[e].ref_hi);
        }
    }
    uint64_t outside = 0;
    double worst = 0.0, bs = 0.0, rs = 0.0;
    for (uint32_t h = 0; h < H; h++) {
        check(bst[h] == KVQ_OK, "case %u head %u: the exact bound: %s", idx, h, kvq_status_str(bst[h]));
        check(bbad[h] == 0u, "case %u head %u: %llu outputs outside the bound [SAGE-ATT-07] (worst %.3g of it)", idx,
              h, (unsigned long long)bbad[h], bworst[h]);
        outside += bbad[h];
        worst = std::max(worst, bworst[h]);
        bs += bsum[h];
        rs += rsum[h];
    }
    printf("  case %2u nq=%-5u nk=%-5u heads=%u causal=%u buffer=%-3u bits=%u input=%-5s: trace (head %u, qblock "
           "%u, %u key blocks) %llu dots, %llu PV outputs%s; bound: %u rows x %u heads, %llu outside, worst %.3g "
           "of the bound, bound/|O| %.3g; diag max|o-o_ref| %.3e (max|o_ref| %.3e) cos %.9f\n",
           idx, nq, nk, H, c->causal, c->buffer, c->bits, dist_name[c->dist], tr.head, tr.qblock, nb,
           (unsigned long long)ndots, (unsigned long long)npv, tbad ? " FAILED" : " ok", nr, H,
           (unsigned long long)outside, worst, rs > 0.0 ? bs / rs : 0.0, maxerr, maxref, cosv);
    fflush(stdout);
    cudaFree(tr.d_dots), cudaFree(tr.d_acc_in), cudaFree(tr.d_acc_out), cudaFree(tr.d_p), cudaFree(tr.d_nblocks);
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dob), cudaFree(dob2), cudaFree(dres), cudaFree(ws);
}

/* ---- bad input -------------------------------------------------------------------------- */

static void bad_params(void)
{
    kvq_tb_case();
    kvq_sage_attn g = {256u, 256u, D, 0.0883883476f, 0u, 128u, 8u};
    const uint32_t H = 2u;
    const size_t nqe = (size_t)H * g.nq * D, nke = (size_t)H * g.nk * D;
    float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nke * 4u), *dv = dalloc<float>(nke * 4u);
    float *dout = dalloc<float>(nqe * 4u);
    kvq_cuda_result *dres = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
    const size_t wsb = kvq_cuda_sage_attn_workspace(&g, H);
    uint8_t *ws = dalloc<uint8_t>(wsb + 256u);
    CK(cudaMemset(dq, 0, nqe * 4u));
    CK(cudaMemset(dk, 0, nke * 4u));
    CK(cudaMemset(dv, 0, nke * 4u));
    CK(cudaMemset(ws, 0, wsb + 256u));
    CK(cudaMemset(dout, KVQ_TB_SENTINEL, nqe * 4u));
    CK(cudaMemset(dres, KVQ_TB_SENTINEL, sizeof(kvq_cuda_result)));
    CK(cudaDeviceSynchronize());
    struct { const char *name; kvq_sage_attn a; } bad[] = {
        {"dim 64", g}, {"buffer 32", g}, {"qk_bits 6", g}, {"nq 0", g}, {"nk 0", g}, {"nq 2^24+1", g},
        {"causal 2", g}, {"tau 0", g}, {"tau NaN", g}, {"tau 2^17", g}, {"tau 2^-127", g}, {"tau -1", g},
    };
    bad[0].a.dim = 64u, bad[1].a.buffer = 32u, bad[2].a.qk_bits = 6u, bad[3].a.nq = 0u, bad[4].a.nk = 0u;
    bad[5].a.nq = (1u << 24) + 1u, bad[6].a.causal = 2u, bad[7].a.tau = 0.0f, bad[8].a.tau = NAN;
    bad[9].a.tau = 0x1p17f, bad[10].a.tau = 0x1p-127f, bad[11].a.tau = -1.0f;
    const uint8_t *qc = ws, *kc = ws + 65536u;
    const float *fs = (const float *)(ws + 131072u);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const kvq_sage_attn *a = &bad[i].a;
        check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, a, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, %s: not KVQ_E_PARAM",
              bad[i].name);
        check(kvq_cuda_sage_attn_core(dout, a, H, qc, fs, kc, fs, fs, kc, fs, 0) == KVQ_E_PARAM,
              "core, %s: not KVQ_E_PARAM", bad[i].name);
        check(kvq_cuda_sage_attn_workspace(a, H) == 0u, "workspace, %s: not 0", bad[i].name);
    }
    /* arguments */
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &g, 0u, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, heads 0");
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, NULL, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, a NULL");
    check(kvq_cuda_sage_attn(NULL, dres, dq, dk, dv, &g, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, o NULL");
    check(kvq_cuda_sage_attn(dout, NULL, dq, dk, dv, &g, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, result NULL");
    check(kvq_cuda_sage_attn(dout, dres, NULL, dk, dv, &g, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, q NULL");
    check(kvq_cuda_sage_attn(dout, dres, dq, NULL, dv, &g, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, k NULL");
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, NULL, &g, H, ws, wsb, 0) == KVQ_E_PARAM, "pipeline, v NULL");
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &g, H, NULL, wsb, 0) == KVQ_E_PARAM, "pipeline, workspace NULL");
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &g, H, ws + 16u, wsb, 0) == KVQ_E_PARAM,
          "pipeline, workspace misaligned");
    check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &g, H, ws, wsb - 1u, 0) == KVQ_E_PARAM,
          "pipeline, workspace too small");
    check(kvq_cuda_sage_attn_core(dout, &g, 0u, qc, fs, kc, fs, fs, kc, fs, 0) == KVQ_E_PARAM, "core, heads 0");
    check(kvq_cuda_sage_attn_core(dout, &g, H, qc, fs, kc + 1, fs, fs, kc, fs, 0) == KVQ_E_PARAM,
          "core, K codes misaligned");
    check(kvq_cuda_sage_attn_core(dout, &g, H, qc, fs, kc, fs, fs, kc + 4, fs, 0) == KVQ_E_PARAM,
          "core, V codes misaligned");
    check(kvq_cuda_sage_attn_core(dout, &g, H, NULL, fs, kc, fs, fs, kc, fs, 0) == KVQ_E_PARAM, "core, Q codes NULL");
    check(kvq_cuda_sage_attn_core(NULL, &g, H, qc, fs, kc, fs, fs, kc, fs, 0) == KVQ_E_PARAM, "core, o NULL");
    check(kvq_cuda_sage_attn_core_trace(dout, &g, H, qc, fs, kc, fs, fs, kc, fs, NULL, 0) == KVQ_E_PARAM,
          "core trace, trace NULL");
    kvq_cuda_sage_attn_trace tr = {H, 0u, 4u, (int32_t *)ws, (float *)ws, (float *)ws, ws, (uint32_t *)ws};
    check(kvq_cuda_sage_attn_core_trace(dout, &g, H, qc, fs, kc, fs, fs, kc, fs, &tr, 0) == KVQ_E_PARAM,
          "core trace, head out of range");
    tr.head = 0u, tr.blocks = 3u;
    check(kvq_cuda_sage_attn_core_trace(dout, &g, H, qc, fs, kc, fs, fs, kc, fs, &tr, 0) == KVQ_E_PARAM,
          "core trace, too few blocks");
    /* KVQ_SAGE_STAGES other than unset, 0 or 1 [SAGE-DEV-16] */
    {
        const char *was = getenv("KVQ_SAGE_STAGES");
        const std::string keep = was != NULL ? was : "";
        for (const char *bad_env : {"2", "x", ""}) {
            setenv("KVQ_SAGE_STAGES", bad_env, 1);
            check(kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &g, H, ws, wsb, 0) == KVQ_E_PARAM,
                  "pipeline, KVQ_SAGE_STAGES=\"%s\": not KVQ_E_PARAM", bad_env);
        }
        if (was != NULL) setenv("KVQ_SAGE_STAGES", keep.c_str(), 1);
        else unsetenv("KVQ_SAGE_STAGES");
    }
    /* nothing launched: output and result word untouched */
    CK(cudaDeviceSynchronize());
    std::vector<uint8_t> ho(nqe * 4u), sent(nqe * 4u, KVQ_TB_SENTINEL);
    CK(cudaMemcpy(ho.data(), dout, nqe * 4u, cudaMemcpyDeviceToHost));
    check(memcmp(ho.data(), sent.data(), nqe * 4u) == 0, "bad parameters: the output was written");
    uint8_t hr[sizeof(kvq_cuda_result)];
    CK(cudaMemcpy(hr, dres, sizeof hr, cudaMemcpyDeviceToHost));
    check(memcmp(hr, sent.data(), sizeof hr) == 0, "bad parameters: the result word was written");
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
}

/* A NaN or an infinity in Q, K or V: KVQ_E_NONFINITE in the result word, the
 * output untouched [POL-NF-01]. */
static void bad_values(void)
{
    const acase c = {300u, 200u, 2u, 1u, 128u, 8u, DIST_GAUSS};
    kvq_sage_attn a = {c.nq, c.nk, D, 0.0883883476f, c.causal, c.buffer, c.bits};
    const size_t nqe = (size_t)c.heads * c.nq * D, nke = (size_t)c.heads * c.nk * D;
    std::vector<float> q(nqe), k(nke), v(nke);
    const size_t wsb = kvq_cuda_sage_attn_workspace(&a, c.heads);
    float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nke * 4u), *dv = dalloc<float>(nke * 4u);
    float *dout = dalloc<float>(nqe * 4u);
    kvq_cuda_result *dres = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
    uint8_t *ws = dalloc<uint8_t>(wsb);
    const float badv[3] = {NAN, INFINITY, -INFINITY};
    for (uint32_t which = 0; which < 3u; which++)
        for (uint32_t bv = 0; bv < 3u; bv++) {
            kvq_tb_case();
            gen(q.data(), k.data(), v.data(), &c);
            std::vector<float> &x = which == 0 ? q : which == 1 ? k : v;
            x[kvq_tb_rnd() % x.size()] = badv[bv];
            CK(cudaMemcpy(dq, q.data(), nqe * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dk, k.data(), nke * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dv, v.data(), nke * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemset(dout, KVQ_TB_SENTINEL, nqe * 4u));
            CK(cudaMemset(dres, KVQ_TB_SENTINEL, sizeof(kvq_cuda_result)));
            const kvq_status st = kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, c.heads, ws, wsb, 0);
            CK(cudaDeviceSynchronize());
            kvq_cuda_result r;
            CK(cudaMemcpy(&r, dres, sizeof r, cudaMemcpyDeviceToHost));
            check(st == KVQ_OK && r.status == KVQ_E_NONFINITE, "%s in %s: launch %s, result status %u",
                  bv == 0 ? "NaN" : bv == 1 ? "+Inf" : "-Inf", which == 0 ? "Q" : which == 1 ? "K" : "V",
                  kvq_status_str(st), r.status);
            std::vector<uint8_t> ho(nqe * 4u), sent(nqe * 4u, KVQ_TB_SENTINEL);
            CK(cudaMemcpy(ho.data(), dout, nqe * 4u, cudaMemcpyDeviceToHost));
            check(memcmp(ho.data(), sent.data(), nqe * 4u) == 0, "non-finite input in %s: the output was written",
                  which == 0 ? "Q" : which == 1 ? "K" : "V");
        }
    /* Two bad inputs in two stages: the earlier stage's status wins (smoothing
     * K, smoothing Q, dS, the Q, K, V quantizers) [SAGE-DEV-09]; a value past
     * 2^48 fails smoothing with KVQ_E_PARAM, a NaN fails it (or the V
     * quantizer) with KVQ_E_NONFINITE; directly and replayed from a captured
     * graph. */
    const struct { const char *name; uint32_t x1; float v1; uint32_t x2; float v2; uint32_t want; } two[] = {
        {"K 2^49 (smoothing K), NaN in Q", 1u, 0x1p49f, 0u, NAN, KVQ_E_PARAM},
        {"NaN in K (smoothing K), Q 2^49", 1u, NAN, 0u, 0x1p49f, KVQ_E_NONFINITE},
        {"Q -2^49 (smoothing Q), NaN in V", 0u, -0x1p49f, 2u, NAN, KVQ_E_PARAM},
        {"K 2^49 (smoothing K), V -Inf", 1u, 0x1p49f, 2u, -INFINITY, KVQ_E_PARAM},
        /* within one stage NaN/Inf ranks before range, wherever the two lie
         * (the stage kernels check inside the mean pass, [SAGE-DEV-16]) */
        {"K 2^49 and NaN in K (smoothing K)", 1u, 0x1p49f, 1u, NAN, KVQ_E_NONFINITE},
        {"Q -2^49 and +Inf in Q (smoothing Q)", 0u, -0x1p49f, 0u, INFINITY, KVQ_E_NONFINITE},
    };
    for (const auto &t : two)
        for (int graph = 0; graph < 2; graph++) {
            kvq_tb_case();
            gen(q.data(), k.data(), v.data(), &c);
            std::vector<float> *xs[3] = {&q, &k, &v};
            (*xs[t.x1])[kvq_tb_rnd() % xs[t.x1]->size()] = t.v1;
            (*xs[t.x2])[kvq_tb_rnd() % xs[t.x2]->size()] = t.v2;
            CK(cudaMemcpy(dq, q.data(), nqe * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dk, k.data(), nke * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dv, v.data(), nke * 4u, cudaMemcpyHostToDevice));
            CK(cudaMemset(dout, KVQ_TB_SENTINEL, nqe * 4u));
            CK(cudaMemset(dres, KVQ_TB_SENTINEL, sizeof(kvq_cuda_result)));
            CK(cudaDeviceSynchronize());
            kvq_status st = KVQ_OK;
            if (!graph) {
                st = kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, c.heads, ws, wsb, 0);
            } else {
                cudaStream_t gs;
                cudaGraph_t gr = NULL;
                cudaGraphExec_t ge = NULL;
                CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
                CK(cudaStreamBeginCapture(gs, cudaStreamCaptureModeGlobal));
                st = kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, c.heads, ws, wsb, gs);
                const cudaError_t ec = cudaStreamEndCapture(gs, &gr);
                (void)cudaGetLastError();
                if (st == KVQ_OK && ec != cudaSuccess) st = KVQ_E_DEVICE;
                if (st == KVQ_OK) {
                    CK(cudaGraphInstantiate(&ge, gr, 0));
                    CK(cudaGraphLaunch(ge, gs));
                    CK(cudaStreamSynchronize(gs));
                    CK(cudaGraphExecDestroy(ge));
                }
                if (gr != NULL) CK(cudaGraphDestroy(gr));
                CK(cudaStreamDestroy(gs));
            }
            CK(cudaDeviceSynchronize());
            kvq_cuda_result r;
            CK(cudaMemcpy(&r, dres, sizeof r, cudaMemcpyDeviceToHost));
            /* on a miss, each stage's error word (the scratch segment's six call
             * states of 4 words, err second) says which stage saw what */
            uint32_t stw[24] = {0};
            kvq_cuda_sage_attn_ws L;
            if (kvq_cuda_sage_attn_ws_layout(&L, &a, c.heads) == KVQ_OK)
                CK(cudaMemcpy(stw, ws + L.scratch, sizeof stw, cudaMemcpyDeviceToHost));
            check(st == KVQ_OK && r.status == t.want,
                  "%s%s: launch %s, result status %u, want %u (stage errors %#x %#x %#x %#x %#x %#x)", t.name,
                  graph ? " (graph)" : "", kvq_status_str(st), r.status, t.want, stw[1], stw[5], stw[9], stw[13],
                  stw[17], stw[21]);
            std::vector<uint8_t> ho(nqe * 4u), sent(nqe * 4u, KVQ_TB_SENTINEL);
            CK(cudaMemcpy(ho.data(), dout, nqe * 4u, cudaMemcpyDeviceToHost));
            check(memcmp(ho.data(), sent.data(), nqe * 4u) == 0, "%s%s: the output was written", t.name,
                  graph ? " (graph)" : "");
        }
    /* the same workspace after those failures, finite inputs: KVQ_OK, nothing
     * of a failed call carried into the next [SAGE-DEV-09] */
    kvq_tb_case();
    gen(q.data(), k.data(), v.data(), &c);
    size_t bad = 0;
    for (size_t e = 0; e < nke; e++) bad += !isfinite(k[e]) + !isfinite(v[e]);
    for (size_t e = 0; e < nqe; e++) bad += !isfinite(q[e]);
    check(bad == 0u, "after the failing calls: the generator left %zu non-finite inputs", bad);
    CK(cudaMemcpy(dq, q.data(), nqe * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, k.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, v.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemset(dres, KVQ_TB_SENTINEL, sizeof(kvq_cuda_result)));
    const kvq_status sc = kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, c.heads, ws, wsb, 0);
    CK(cudaDeviceSynchronize());
    kvq_cuda_result rc;
    CK(cudaMemcpy(&rc, dres, sizeof rc, cudaMemcpyDeviceToHost));
    check(sc == KVQ_OK && rc.status == KVQ_OK, "finite inputs after failing calls: launch %s, result status %u",
          kvq_status_str(sc), rc.status);
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
}

/* ---- timing ----------------------------------------------------------------------------- */

static void bench(void)
{
    for (uint32_t n : {4096u, 8192u}) {
        const uint32_t H = 32u;
        kvq_sage_attn a = {n, n, D, 0.0883883476f, 0u, 128u, 8u};
        const size_t ne = (size_t)H * n * D;
        std::vector<float> x(ne);
        for (size_t e = 0; e < ne; e++) x[e] = (float)gauss();
        float *dq = dalloc<float>(ne * 4u), *dk = dalloc<float>(ne * 4u), *dv = dalloc<float>(ne * 4u);
        float *dout = dalloc<float>(ne * 4u);
        CK(cudaMemcpy(dq, x.data(), ne * 4u, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dk, x.data(), ne * 4u, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dv, x.data(), ne * 4u, cudaMemcpyHostToDevice));
        kvq_cuda_result *dres = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
        kvq_cuda_sage_attn_ws L;
        kvq_cuda_sage_attn_ws_layout(&L, &a, H);
        uint8_t *ws = dalloc<uint8_t>(L.total);
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> tp, tc;
        for (int rep = 0; rep < 6; rep++) {
            float ms;
            CK(cudaEventRecord(e0, 0));
            if (kvq_cuda_sage_attn(dout, dres, dq, dk, dv, &a, H, ws, L.total, 0) != KVQ_OK) printf("pipeline failed\n");
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (rep) tp.push_back(ms);
            CK(cudaEventRecord(e0, 0));
            if (kvq_cuda_sage_attn_core(dout, &a, H, ws + L.qc, (const float *)(ws + L.qsc), ws + L.kc,
                                        (const float *)(ws + L.ksc), (const float *)(ws + L.ds), ws + L.vc,
                                        (const float *)(ws + L.vsc), 0) != KVQ_OK)
                printf("core failed\n");
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (rep) tc.push_back(ms);
        }
        {                                                 /* where the pipeline's time goes */
            float t[6];
            if (kvq_cuda_sage_attn_stages(t, dout, dres, dq, dk, dv, &a, H, ws, L.total, 0) != KVQ_OK)
                printf("stages failed\n");
            else
                printf("bench nq=nk=%u stages (ms): smooth K %.3f, smooth Q %.3f, dS %.3f, Q+K quantizers %.3f, "
                       "V quantizer %.3f, core %.3f\n", n, t[0], t[1], t[2], t[3], t[4], t[5]);
        }
        std::sort(tp.begin(), tp.end());
        std::sort(tc.begin(), tc.end());
        const double fl = 4.0 * n * (double)n * D * H;
        printf("bench nq=nk=%u heads=%u d=128 causal=0 buffer=128 INT8: pipeline %.3f ms, core %.3f ms (%.1f TFLOP/s "
               "core, 4 nq nk d heads)\n", n, H, tp[tp.size() / 2], tc[tc.size() / 2], fl / (tc[tc.size() / 2] * 1e9));
        cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
    }
}

/* ---- the stage kernels against those of before, side by side [SAGE-DEV-16] ---------------
 * --stages [SIZES] [REPS]: for nq = nk = N (default 4096,8192,32768), 32 heads,
 * d = 128, not causal, buffer 128, INT8, gaussian inputs: first the
 * intermediates (every workspace segment: K_s, K means, Q_s, Q means, dS, the
 * codes and scales of Q, K, V, and V~) and the output of a pipeline call with
 * the stage kernels (KVQ_SAGE_STAGES=1) against one with the kernels of before
 * (=0), byte for byte (a bit moved is a FAIL); then, alternating the two in
 * each repetition, L2 flushed before every call, medians of REPS (default 5):
 * the stage split (kvq_cuda_sage_attn_stages), the whole pipeline, and for
 * every stage a device-to-device copy moving its compulsory bytes (read +
 * written: smoothing X reads X and writes X_s; dS reads K_s and the means and
 * writes dS; the Q/K quantizers read Q_s, K_s and write codes and scales; V
 * reads V and writes its codes, scales and V~) -- the copy of half those
 * bytes, which reads and writes them. */
static float med(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0f : v[v.size() / 2];
}

static int stages_bench(const char *sizes, int reps)
{
    const char *was = getenv("KVQ_SAGE_STAGES");
    const std::string keep = was != NULL ? was : "";
    int dev = 0, sms = 0, clk = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
    uint8_t *flush = dalloc<uint8_t>((size_t)256 << 20);
    int bad = 0;
    std::string list = sizes;
    for (size_t at = 0; at < list.size();) {
        size_t e = list.find(',', at);
        if (e == std::string::npos) e = list.size();
        const std::string tok = list.substr(at, e - at);
        at = e + 1;
        char *end = NULL;
        const unsigned long n = strtoul(tok.c_str(), &end, 10);
        if (tok.empty() || *end != '\0' || n < 1u || n > (1u << 16)) {
            fprintf(stderr, "kvq_gpu_sage_attn_test: --stages: size \"%s\" is not a number in 1 .. 65536\n",
                    tok.c_str());
            return 2;
        }
        const uint32_t H = 32u;
        kvq_sage_attn a = {(uint32_t)n, (uint32_t)n, D, 0.0883883476f, 0u, 128u, 8u};
        const size_t ne = (size_t)H * n * D;
        std::vector<float> x(ne);
        float *dq = dalloc<float>(ne * 4u), *dk = dalloc<float>(ne * 4u), *dv = dalloc<float>(ne * 4u);
        for (float *d : {dq, dk, dv}) {
            for (size_t i = 0; i < ne; i++) x[i] = (float)(4.0 * kvq_tb_rndf() - 2.0);   /* times only */
            CK(cudaMemcpy(d, x.data(), ne * 4u, cudaMemcpyHostToDevice));
        }
        float *dout[2] = {dalloc<float>(ne * 4u), dalloc<float>(ne * 4u)};
        kvq_cuda_result *dres = dalloc<kvq_cuda_result>(2 * sizeof(kvq_cuda_result));
        kvq_cuda_sage_attn_ws L;
        kvq_cuda_sage_attn_ws_layout(&L, &a, H);
        uint8_t *ws[2] = {dalloc<uint8_t>(L.total), dalloc<uint8_t>(L.total)};
        const uint32_t rows = kvq_sage_mean_rows(n, KVQ_SAGE_ATTN_BQ);
        /* compulsory bytes a stage reads and writes */
        const double X = (double)ne * 4.0;
        const double sb[6] = {
            2.0 * X + H * D * 4.0,                                             /* smoothing K */
            2.0 * X + (double)H * rows * D * 4.0,                              /* smoothing Q */
            X + (double)H * rows * D * 4.0 + (double)H * rows * n * 4.0,       /* dS */
            2.0 * X + (double)(L.vc - L.qc),                                   /* Q/K: Q_s, K_s; codes, scales */
            X + (double)(L.scratch - L.vc),                                    /* V: V; codes, scales, V~ */
            0.0};
        char *cp_src = (char *)ws[0], *cp_dst = (char *)ws[1];
        const size_t cp_max = L.total / 2u;
        std::vector<float> t[2][6], tp[2], tc[6], tns;
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        int ok = 1;
        for (int rep = -1; rep < reps && ok; rep++)
            for (int m = 0; m < 2 && ok; m++) {                /* 0: the kernels of before, 1: the stage kernels */
                setenv("KVQ_SAGE_STAGES", m ? "1" : "0", 1);
                float ms6[6], ms;
                CK(cudaMemsetAsync(flush, rep & 0xff, (size_t)256 << 20, 0));
                if (kvq_cuda_sage_attn_stages(ms6, dout[m], dres + m, dq, dk, dv, &a, H, ws[m], L.total, 0) != KVQ_OK)
                    ok = 0;
                CK(cudaMemsetAsync(flush, rep & 0xff, (size_t)256 << 20, 0));
                CK(cudaEventRecord(e0, 0));
                if (kvq_cuda_sage_attn(dout[m], dres + m, dq, dk, dv, &a, H, ws[m], L.total, 0) != KVQ_OK) ok = 0;
                CK(cudaEventRecord(e1, 0));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (rep >= 0) {
                    for (int i = 0; i < 6; i++) t[m][i].push_back(ms6[i]);
                    tp[m].push_back(ms);
                }
                if (m == 1 && rep >= 0) {                      /* dS without its load overlap */
                    setenv("KVQ_SAGE_DS_SPLIT", "0", 1);
                    CK(cudaMemsetAsync(flush, rep & 0xff, (size_t)256 << 20, 0));
                    if (kvq_cuda_sage_attn_stages(ms6, dout[m], dres + m, dq, dk, dv, &a, H, ws[m], L.total, 0) !=
                        KVQ_OK)
                        ok = 0;
                    unsetenv("KVQ_SAGE_DS_SPLIT");
                    tns.push_back(ms6[2]);
                }
                if (m == 1 && rep >= 0)
                    for (int i = 0; i < 5; i++) {               /* the copies of the stages' bytes */
                        size_t nb = (size_t)(sb[i] / 2.0);
                        nb = nb > cp_max ? cp_max : nb;
                        CK(cudaMemsetAsync(flush, rep & 0xff, (size_t)256 << 20, 0));
                        CK(cudaEventRecord(e0, 0));
                        CK(cudaMemcpyAsync(cp_dst, cp_src, nb, cudaMemcpyDeviceToDevice, 0));
                        CK(cudaEventRecord(e1, 0));
                        CK(cudaEventSynchronize(e1));
                        CK(cudaEventElapsedTime(&ms, e0, e1));
                        tc[i].push_back(ms);
                    }
                if (rep == -1 && m == 1) {                     /* both ran once: every byte equal? */
                    CK(cudaDeviceSynchronize());
                    kvq_cuda_result r[2];
                    CK(cudaMemcpy(r, dres, sizeof r, cudaMemcpyDeviceToHost));
                    const struct { const char *what; size_t off, n; } seg[] = {
                        {"K_s", L.ks, L.km - L.ks}, {"K means", L.km, L.qs - L.km}, {"Q_s", L.qs, L.qm - L.qs},
                        {"Q means", L.qm, L.ds - L.qm}, {"dS", L.ds, L.qc - L.ds}, {"Q codes", L.qc, L.qsc - L.qc},
                        {"Q scales", L.qsc, L.kc - L.qsc}, {"K codes", L.kc, L.ksc - L.kc},
                        {"K scales", L.ksc, L.vc - L.ksc}, {"V codes", L.vc, L.vsc - L.vc},
                        {"V scales", L.vsc, L.vt - L.vsc}, {"V~", L.vt, L.scratch - L.vt}};
                    std::vector<uint8_t> h0, h1;
                    size_t total = 0, differ = 0;
                    std::string where;
                    for (const auto &sg : seg) {
                        h0.resize(sg.n), h1.resize(sg.n);
                        CK(cudaMemcpy(h0.data(), ws[0] + sg.off, sg.n, cudaMemcpyDeviceToHost));
                        CK(cudaMemcpy(h1.data(), ws[1] + sg.off, sg.n, cudaMemcpyDeviceToHost));
                        size_t d = 0;
                        for (size_t i = 0; i < sg.n; i++) d += h0[i] != h1[i];
                        total += sg.n, differ += d;
                        if (d) where += std::string(where.empty() ? "" : ", ") + sg.what + " " + std::to_string(d);
                    }
                    h0.resize(ne * 4u), h1.resize(ne * 4u);
                    CK(cudaMemcpy(h0.data(), dout[0], ne * 4u, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(h1.data(), dout[1], ne * 4u, cudaMemcpyDeviceToHost));
                    size_t od = 0;
                    for (size_t i = 0; i < ne * 4u; i++) od += h0[i] != h1[i];
                    const int same = differ == 0u && od == 0u && r[0].status == KVQ_OK && r[1].status == KVQ_OK &&
                                     r[0].flags == r[1].flags;
                    printf("stages N=%lu heads=%u: the stage kernels vs those of before: %zu of %zu workspace bytes "
                           "differ%s%s%s, %zu of %zu output bytes; result words %u/%#x and %u/%#x: %s\n",
                           n, H, differ, total, where.empty() ? "" : " (", where.c_str(), where.empty() ? "" : ")",
                           od, ne * 4u, r[0].status, r[0].flags, r[1].status, r[1].flags, same ? "PASS" : "FAIL");
                    if (!same) bad = 1;
                }
            }
        if (!ok) {
            printf("stages N=%lu: a pipeline call failed\n", n);
            bad = 1;
        } else {
            static const char *name[6] = {"smooth_k", "smooth_q", "ds", "quant_qk", "quant_v", "core"};
            printf("stages N=%lu heads=%u d=128 causal=0 buffer=128 INT8, medians of %d, L2 flushed (ms):\n", n, H,
                   reps);
            printf("  %-9s %10s %9s %9s %9s %8s %9s %9s\n", "stage", "MiB moved", "copy", "before", "stage-k",
                   "speedup", "copy/new", "copy/old");
            double so = 0.0, sn = 0.0;
            for (int i = 0; i < 6; i++) {
                const double mo = med(t[0][i]), mn = med(t[1][i]);
                if (i < 5) {
                    so += mo, sn += mn;
                    const double mc = med(tc[i]);
                    printf("  %-9s %10.1f %9.3f %9.3f %9.3f %7.2fx %9.3f %9.3f\n", name[i], sb[i] / 1048576.0, mc, mo,
                           mn, mo / mn, mc / mn, mc / mo);
                } else {
                    printf("  %-9s %10s %9s %9.3f %9.3f %7.2fx\n", name[i], "-", "-", mo, mn, mo / mn);
                }
            }
            /* dS's arithmetic floor: rows nk heads d products and additions, one binary32 lane op each */
            const double ops = 2.0 * rows * (double)n * H * D, fl = ops / ((double)sms * 128.0 * clk * 1e3) * 1e3;
            printf("  outside the core: before %.3f ms, stage kernels %.3f ms (%.2fx); dS's binary32 floor %.3f ms "
                   "(%.3g lane ops at %d SMs x 128 lanes x %.2f GHz): stage kernel at %.2f of it\n", so, sn, so / sn,
                   fl, ops, sms, clk / 1e6, fl / med(t[1][2]));
            printf("  dS with its second half of keys landing under the first half's sums %.3f ms, without "
                   "(KVQ_SAGE_DS_SPLIT=0) %.3f ms: %.2fx\n", med(t[1][2]), med(tns), med(tns) / med(t[1][2]));
            printf("pipeline N=%lu: before %.3f ms, stage kernels %.3f ms: %.3fx\n", n, med(tp[0]), med(tp[1]),
                   med(tp[0]) / med(tp[1]));
        }
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
        cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout[0]), cudaFree(dout[1]), cudaFree(dres);
        cudaFree(ws[0]), cudaFree(ws[1]);
    }
    cudaFree(flush);
    if (was != NULL) setenv("KVQ_SAGE_STAGES", keep.c_str(), 1);
    else unsetenv("KVQ_SAGE_STAGES");
    printf("stages: %s\n", bad ? "FAILED" : "done, every byte equal");
    return bad ? 1 : 0;
}

/* ---- grouped KV heads [SAGE-DEV-17] ------------------------------------------------------
 * heads query heads on kv_heads KV heads (query head h reads KV head
 * h / (heads / kv_heads), [SAGE-MHA-01]) through kvq_cuda_sage_attn_gqa: the
 * K-side intermediates (smoothed K, its means, K's and V's codes and scales,
 * V~) of every KV head against ref/fast on that KV head, the Q-side ones and dS
 * of every query head against ref/fast on its KV head's K, bit for bit; the
 * output and result word equal, bit for bit, to kvq_cuda_sage_attn's on K and
 * V repeated to the query heads; every output within the bound on its KV
 * head's K and V.  loop: the case with KVQ_SAGE_CORE=loop (the warpgroup core). */
typedef struct gcase {
    uint32_t nq, nk, heads, kv_heads, causal, buffer, bits, dist, loop;
} gcase;

static const gcase gqa_cases[] = {
    {200, 200, 4, 2, 1, 128, 8, DIST_GAUSS, 0}, {1000, 300, 4, 1, 0, 64, 8, DIST_SINK, 0},
    {300, 1000, 8, 2, 1, 0, 8, DIST_SMALL, 0},  {130, 77, 8, 2, 0, 128, 8, DIST_HUGE, 0},
    {200, 333, 4, 2, 1, 128, 8, DIST_SINK, 1},  {1024, 1024, 4, 1, 0, 64, 8, DIST_GAUSS, 1},
    {130, 77, 4, 2, 1, 128, 4, DIST_SINK, 0},   {1, 1000, 8, 2, 0, 128, 8, DIST_GAUSS, 0},
    {64, 64, 4, 4, 0, 128, 8, DIST_GAUSS, 0},
};

static void run_gqa_case(const gcase *g, uint32_t idx)
{
    kvq_tb_case();
    const char *core_was = getenv("KVQ_SAGE_CORE");
    const std::string core_keep = core_was != NULL ? core_was : "";
    if (g->loop) setenv("KVQ_SAGE_CORE", "loop", 1);
    kvq_sage_attn a;
    a.nq = g->nq, a.nk = g->nk, a.dim = D, a.tau = 1.0f / sqrtf((float)D), a.causal = g->causal;
    a.buffer = g->buffer, a.qk_bits = g->bits;
    const uint32_t H = g->heads, G = g->kv_heads, grp = H / G, nq = g->nq, nk = g->nk;
    const acase cq = {nq, nk, H, g->causal, g->buffer, g->bits, g->dist};   /* Q and the repeated K, V */
    const acase ckv = {nq, nk, G, g->causal, g->buffer, g->bits, g->dist};  /* the K-side segments */
    const size_t nqe = (size_t)H * nq * D, nke = (size_t)G * nk * D, nre = (size_t)H * nk * D;
    std::vector<float> q(nqe), k(nre), v(nre), kr(nre), vr(nre);
    gen(q.data(), k.data(), v.data(), &cq);                  /* K, V: the first G heads drawn */
    k.resize(nke), v.resize(nke);
    for (uint32_t h = 0; h < H; h++) {                       /* K and V repeated to the query heads */
        memcpy(&kr[(size_t)h * nk * D], &k[(size_t)(h / grp) * nk * D], (size_t)nk * D * 4u);
        memcpy(&vr[(size_t)h * nk * D], &v[(size_t)(h / grp) * nk * D], (size_t)nk * D * 4u);
    }
    float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nke * 4u), *dv = dalloc<float>(nke * 4u);
    float *dkr = dalloc<float>(nre * 4u), *dvr = dalloc<float>(nre * 4u);
    const size_t obytes = nqe * 4u;
    uint8_t *dob = dalloc<uint8_t>(obytes + KVQ_TB_GUARD), *dob2 = dalloc<uint8_t>(obytes);
    kvq_cuda_result *dres = dalloc<kvq_cuda_result>(2u * sizeof(kvq_cuda_result));
    CK(cudaMemcpy(dq, q.data(), nqe * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, k.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, v.data(), nke * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dkr, kr.data(), nre * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dvr, vr.data(), nre * 4u, cudaMemcpyHostToDevice));
    CK(cudaMemset(dob, KVQ_TB_SENTINEL, obytes + KVQ_TB_GUARD));
    CK(cudaMemset(dob2, 0x5A, obytes));
    CK(cudaMemset(dres, 0xA5, 2u * sizeof(kvq_cuda_result)));
    kvq_cuda_sage_attn_ws L, LR;
    check(kvq_cuda_sage_attn_gqa_ws_layout(&L, &a, H, G) == KVQ_OK, "gqa case %u: gqa_ws_layout", idx);
    check(kvq_cuda_sage_attn_gqa_workspace(&a, H, G) == L.total, "gqa case %u: gqa workspace size", idx);
    check(kvq_cuda_sage_attn_ws_layout(&LR, &a, H) == KVQ_OK, "gqa case %u: ws_layout", idx);
    uint8_t *ws = dalloc<uint8_t>(L.total), *wsr = dalloc<uint8_t>(LR.total);
    CK(cudaMemset(ws, 0xA5, L.total));
    CK(cudaMemset(wsr, 0xA5, LR.total));

    /* the grouped call, then the call on K and V repeated */
    const kvq_status st = kvq_cuda_sage_attn_gqa((float *)dob, dres, dq, dk, dv, &a, H, G, ws, L.total, 0);
    const kvq_status str = kvq_cuda_sage_attn((float *)dob2, dres + 1, dq, dkr, dvr, &a, H, wsr, LR.total, 0);
    CK(cudaDeviceSynchronize());
    kvq_cuda_result res[2];
    CK(cudaMemcpy(res, dres, sizeof res, cudaMemcpyDeviceToHost));
    check(st == KVQ_OK && res[0].status == KVQ_OK, "gqa case %u: launch %s, result word status %u", idx,
          kvq_status_str(st), res[0].status);
    check(str == KVQ_OK && res[1].status == res[0].status && res[1].flags == res[0].flags,
          "gqa case %u: repeated call %s, result word %u/0x%x against the grouped call's %u/0x%x", idx,
          kvq_status_str(str), res[1].status, res[1].flags, res[0].status, res[0].flags);
    std::vector<float> o(nqe), orep(nqe);
    CK(cudaMemcpy(o.data(), dob, obytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(orep.data(), dob2, obytes, cudaMemcpyDeviceToHost));
    same_bytes("grouped output vs the repeated call's [SAGE-DEV-17]", dob, orep.data(), obytes, &cq);
    std::vector<uint8_t> guard(KVQ_TB_GUARD), sent(KVQ_TB_GUARD, KVQ_TB_SENTINEL);
    CK(cudaMemcpy(guard.data(), dob + obytes, KVQ_TB_GUARD, cudaMemcpyDeviceToHost));
    check(memcmp(guard.data(), sent.data(), KVQ_TB_GUARD) == 0, "gqa case %u: bytes past the output written", idx);

    /* intermediates: the K side per KV head, the Q side and dS per query head on
     * its KV head's K (ref/fast on the repeated K and V) */
    inter rkv, rrep, e;
    const int hok = host_inter(&rkv, q.data(), k.data(), v.data(), &a, G) &&
                    host_inter(&rrep, q.data(), kr.data(), vr.data(), &a, H);
    check(hok, "gqa case %u: the host reference failed", idx);
    if (hok) {
        e.ks = rkv.ks, e.km = rkv.km, e.kc = rkv.kc, e.ksc = rkv.ksc, e.vc = rkv.vc, e.vsc = rkv.vsc;
        e.qs = rrep.qs, e.qm = rrep.qm, e.ds = rrep.ds, e.qc = rrep.qc, e.qsc = rrep.qsc;
        same_inter("grouped: ", ws, &L, &e, &ckv);
    }

    /* the output within the bound on its KV head's K and V [SAGE-ATT-07] */
    const std::vector<uint32_t> rows = judged_rows(nq, nq <= 256u, idx + 101u, 64u);
    const uint32_t nr = (uint32_t)rows.size();
    const kvq_sage_attn_class cls = KVQ_SAGE_ATTN_CLASS_HOPPER;
    std::vector<kvq_status> bst(H);
    std::vector<uint64_t> bbad(H);
    std::vector<double> bworst(H);
#pragma omp parallel for schedule(dynamic)
    for (uint32_t h = 0; h < H; h++) {
        std::vector<kvq_sage_attn_bound> bd((size_t)nr * D);
        std::vector<float> oh((size_t)nr * D);
        const size_t kvo = (size_t)(h / grp) * nk * D;
        bst[h] = kvq_exact_sage_attn_bound(bd.data(), q.data() + (size_t)h * nq * D, k.data() + kvo, v.data() + kvo,
                                           &a, rows.data(), nr, &cls);
        for (uint32_t r2 = 0; r2 < nr; r2++)
            memcpy(&oh[(size_t)r2 * D], &o[((size_t)h * nq + rows[r2]) * D], D * sizeof(float));
        bworst[h] = 0.0;
        bbad[h] = bst[h] == KVQ_OK ? kvq_exact_sage_attn_judge(&bworst[h], oh.data(), bd.data(), (uint64_t)nr * D) : 0u;
    }
    uint64_t outside = 0;
    double worst = 0.0;
    for (uint32_t h = 0; h < H; h++) {
        check(bst[h] == KVQ_OK, "gqa case %u head %u: the exact bound: %s", idx, h, kvq_status_str(bst[h]));
        check(bbad[h] == 0u, "gqa case %u head %u: %llu outputs outside the bound [SAGE-ATT-07] (worst %.3g of it)",
              idx, h, (unsigned long long)bbad[h], bworst[h]);
        outside += bbad[h];
        worst = std::max(worst, bworst[h]);
    }
    printf("  gqa case %u nq=%-5u nk=%-5u heads=%u kv_heads=%u causal=%u buffer=%-3u bits=%u input=%-5s core=%s: "
           "output %s the repeated call's; bound: %u rows x %u heads, %llu outside, worst %.3g of the bound\n",
           idx, nq, nk, H, G, g->causal, g->buffer, g->bits, dist_name[g->dist],
           g->loop ? "loop" : "default", memcmp(o.data(), orep.data(), obytes) == 0 ? "==" : "!=", nr, H,
           (unsigned long long)outside, worst);
    fflush(stdout);
    if (g->loop) {
        if (core_was != NULL) setenv("KVQ_SAGE_CORE", core_keep.c_str(), 1);
        else unsetenv("KVQ_SAGE_CORE");
    }
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dkr), cudaFree(dvr), cudaFree(dob), cudaFree(dob2);
    cudaFree(dres), cudaFree(ws), cudaFree(wsr);
}

/* kv_heads 0, above heads or not dividing them: KVQ_E_PARAM, nothing launched
 * (output and result word untouched), the workspace functions 0 [SAGE-DEV-17]. */
static void bad_gqa(void)
{
    kvq_tb_case();
    kvq_sage_attn g = {256u, 256u, D, 0.0883883476f, 0u, 128u, 8u};
    const uint32_t H = 6u;
    const size_t nqe = (size_t)H * g.nq * D;
    float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nqe * 4u), *dv = dalloc<float>(nqe * 4u);
    float *dout = dalloc<float>(nqe * 4u);
    kvq_cuda_result *dres = dalloc<kvq_cuda_result>(sizeof(kvq_cuda_result));
    const size_t wsb = kvq_cuda_sage_attn_workspace(&g, H);
    uint8_t *ws = dalloc<uint8_t>(wsb);
    CK(cudaMemset(dq, 0, nqe * 4u));
    CK(cudaMemset(dk, 0, nqe * 4u));
    CK(cudaMemset(dv, 0, nqe * 4u));
    CK(cudaMemset(dout, KVQ_TB_SENTINEL, nqe * 4u));
    CK(cudaMemset(dres, KVQ_TB_SENTINEL, sizeof(kvq_cuda_result)));
    CK(cudaDeviceSynchronize());
    kvq_cuda_sage_attn_ws L;
    for (uint32_t kvh : {0u, 4u, 5u, 7u, 12u}) {              /* 0, not dividing 6, above 6 */
        check(kvq_cuda_sage_attn_gqa(dout, dres, dq, dk, dv, &g, H, kvh, ws, wsb, 0) == KVQ_E_PARAM,
              "gqa pipeline, heads %u kv_heads %u: not KVQ_E_PARAM", H, kvh);
        check(kvq_cuda_sage_attn_gqa_workspace(&g, H, kvh) == 0u, "gqa workspace, kv_heads %u: not 0", kvh);
        check(kvq_cuda_sage_attn_gqa_ws_layout(&L, &g, H, kvh) == KVQ_E_PARAM, "gqa ws_layout, kv_heads %u", kvh);
    }
    /* a workspace of the grouped size one byte short */
    const size_t wg = kvq_cuda_sage_attn_gqa_workspace(&g, H, 2u);
    check(wg > 0u && wg < wsb, "gqa workspace of 6 on 2 (%zu) not below 6 on 6 (%zu)", wg, wsb);
    check(kvq_cuda_sage_attn_gqa(dout, dres, dq, dk, dv, &g, H, 2u, ws, wg - 1u, 0) == KVQ_E_PARAM,
          "gqa pipeline, workspace one byte short: not KVQ_E_PARAM");
    CK(cudaDeviceSynchronize());
    std::vector<uint8_t> ho(nqe * 4u), sent(nqe * 4u, KVQ_TB_SENTINEL);
    CK(cudaMemcpy(ho.data(), dout, nqe * 4u, cudaMemcpyDeviceToHost));
    check(memcmp(ho.data(), sent.data(), nqe * 4u) == 0, "bad kv_heads: the output was written");
    uint8_t hr[sizeof(kvq_cuda_result)];
    CK(cudaMemcpy(hr, dres, sizeof hr, cudaMemcpyDeviceToHost));
    check(memcmp(hr, sent.data(), sizeof hr) == 0, "bad kv_heads: the result word was written");
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
}

/* --gqa-bench [SIZES] [REPS]: 32 query heads on 8 KV heads, nq = nk = N
 * (default 8192,32768), d = 128, not causal, buffer 128, INT8, gaussian
 * inputs: the grouped call against the call on K and V repeated to the query
 * heads (the repetition outside the timing), alternating in each repetition,
 * medians of REPS (default 5) of cudaEvent times, and each one's stage split
 * (kvq_cuda_sage_attn_gqa_stages / _stages, medians); first the two outputs
 * and result words compared bit for bit (exit 1 when they differ). */
static int gqa_bench(const char *sizes, int reps)
{
    const uint32_t H = 32u, G = 8u, grp = H / G;
    int rc = 0;
    std::string list = sizes;
    size_t at = 0;
    while (at <= list.size()) {
        const size_t comma = list.find(',', at);
        const std::string tok = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        at = comma == std::string::npos ? list.size() + 1u : comma + 1u;
        char *end = NULL;
        const long n = strtol(tok.c_str(), &end, 10);
        if (tok.empty() || *end != '\0' || n < 1 || n > 65536) {
            fprintf(stderr, "kvq_gpu_sage_attn_test: --gqa-bench: size \"%s\" is not a number in 1 .. 65536\n",
                    tok.c_str());
            return 2;
        }
        kvq_sage_attn a = {(uint32_t)n, (uint32_t)n, D, 0.0883883476f, 0u, 128u, 8u};
        const size_t nqe = (size_t)H * n * D, nke = (size_t)G * n * D;
        std::vector<float> x(nqe), kx(nke), vx(nke);
        for (auto &e : x) e = (float)gauss();
        for (auto &e : kx) e = (float)gauss();
        for (auto &e : vx) e = (float)gauss();
        float *dq = dalloc<float>(nqe * 4u), *dk = dalloc<float>(nke * 4u), *dv = dalloc<float>(nke * 4u);
        float *dkr = dalloc<float>(nqe * 4u), *dvr = dalloc<float>(nqe * 4u);
        float *og = dalloc<float>(nqe * 4u), *orp = dalloc<float>(nqe * 4u);
        CK(cudaMemcpy(dq, x.data(), nqe * 4u, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dk, kx.data(), nke * 4u, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dv, vx.data(), nke * 4u, cudaMemcpyHostToDevice));
        const size_t hb = (size_t)n * D * 4u;
        for (uint32_t h = 0; h < H; h++) {
            CK(cudaMemcpy((uint8_t *)dkr + h * hb, (uint8_t *)dk + (h / grp) * hb, hb, cudaMemcpyDeviceToDevice));
            CK(cudaMemcpy((uint8_t *)dvr + h * hb, (uint8_t *)dv + (h / grp) * hb, hb, cudaMemcpyDeviceToDevice));
        }
        kvq_cuda_result *dres = dalloc<kvq_cuda_result>(2u * sizeof(kvq_cuda_result));
        const size_t wg = kvq_cuda_sage_attn_gqa_workspace(&a, H, G), wr = kvq_cuda_sage_attn_workspace(&a, H);
        uint8_t *wsg = dalloc<uint8_t>(wg), *wsr = dalloc<uint8_t>(wr);
        const kvq_status s1 = kvq_cuda_sage_attn_gqa(og, dres, dq, dk, dv, &a, H, G, wsg, wg, 0);
        const kvq_status s2 = kvq_cuda_sage_attn(orp, dres + 1, dq, dkr, dvr, &a, H, wsr, wr, 0);
        CK(cudaDeviceSynchronize());
        kvq_cuda_result res[2];
        CK(cudaMemcpy(res, dres, sizeof res, cudaMemcpyDeviceToHost));
        std::vector<uint8_t> hg(nqe * 4u), hr(nqe * 4u);
        CK(cudaMemcpy(hg.data(), og, nqe * 4u, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hr.data(), orp, nqe * 4u, cudaMemcpyDeviceToHost));
        const long diff = kvq_tb_first_diff(hg.data(), hr.data(), nqe * 4u);
        const int same = s1 == KVQ_OK && s2 == KVQ_OK && res[0].status == KVQ_OK && res[1].status == KVQ_OK &&
                         res[0].flags == res[1].flags && diff < 0;
        printf("gqa-bench N=%ld heads=%u kv_heads=%u: grouped %s/%u, repeated %s/%u; output %zu bytes %s%s\n", n, H,
               G, kvq_status_str(s1), res[0].status, kvq_status_str(s2), res[1].status, nqe * 4u,
               same ? "equal bit for bit" : "DIFFER at byte ", same ? "" : std::to_string(diff).c_str());
        if (!same) rc = 1;
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        std::vector<float> tg, tr;
        std::vector<std::vector<float>> sg(6), sr(6);
        for (int rep = 0; rep <= reps; rep++) {                 /* rep 0: warm-up */
            for (int which = 0; which < 2; which++) {
                float ms = 0.0f;
                CK(cudaEventRecord(e0, 0));
                const kvq_status s = which == 0 ? kvq_cuda_sage_attn_gqa(og, dres, dq, dk, dv, &a, H, G, wsg, wg, 0)
                                                : kvq_cuda_sage_attn(orp, dres + 1, dq, dkr, dvr, &a, H, wsr, wr, 0);
                CK(cudaEventRecord(e1, 0));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (s != KVQ_OK) rc = 1;
                if (rep) (which == 0 ? tg : tr).push_back(ms);
                float t[6];
                const kvq_status ss =
                    which == 0 ? kvq_cuda_sage_attn_gqa_stages(t, og, dres, dq, dk, dv, &a, H, G, wsg, wg, 0)
                               : kvq_cuda_sage_attn_stages(t, orp, dres + 1, dq, dkr, dvr, &a, H, wsr, wr, 0);
                if (ss != KVQ_OK) rc = 1;
                if (rep && ss == KVQ_OK)
                    for (int i = 0; i < 6; i++) (which == 0 ? sg : sr)[i].push_back(t[i]);
            }
        }
        const char *nm[6] = {"smooth K", "smooth Q", "dS", "Q+K quantizers", "V quantizer", "core"};
        printf("gqa-bench N=%ld heads=%u kv_heads=%u causal=0 buffer=128 INT8, medians of %d: grouped %.3f ms, "
               "repeated %.3f ms, repeated/grouped %.3fx; workspace %zu vs %zu bytes\n", n, H, G, reps, med(tg),
               med(tr), med(tg) > 0.0f ? med(tr) / med(tg) : 0.0f, wg, wr);
        for (int i = 0; i < 6; i++)
            printf("gqa-bench N=%ld   %-15s grouped %8.3f ms  repeated %8.3f ms  %.2fx\n", n, nm[i], med(sg[i]),
                   med(sr[i]), med(sg[i]) > 0.0f ? med(sr[i]) / med(sg[i]) : 0.0f);
        fflush(stdout);
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
        cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dkr), cudaFree(dvr), cudaFree(og), cudaFree(orp);
        cudaFree(dres), cudaFree(wsg), cudaFree(wsr);
    }
    return rc;
}

int main(int argc, char **argv)
{
    const int do_bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    g_long = argc > 1 && strcmp(argv[1], "--long") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !do_bench && !g_long && strcmp(argv[1], "--gqa") != 0 && strcmp(argv[1], "--stages") != 0 &&
        strcmp(argv[1], "--gqa-bench") != 0) {
        fprintf(stderr, "kvq_gpu_sage_attn_test: unknown argument \"%s\" (usage: [--bench | --long | --gqa | "
                        "--stages [SIZES [REPS]] | --gqa-bench [SIZES [REPS]]])\n", argv[1]);
        return 2;
    }
    kvq_tb_init("gpu-sage-attn-test", DEFAULT_SEED);
    if (!kvq_tb_device("%zu cases", sizeof cases / sizeof cases[0])) return SKIP_STATUS;
    int dev = 0, major = 0, minor = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) {
        printf("gpu-sage-attn-test: SKIPPED (sm_%d%d; the attention kernel is sm_90a)\n", major, minor);
        return SKIP_STATUS;
    }
    if (do_bench) {
        bench();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--stages") == 0) {
        const int reps = argc > 3 ? atoi(argv[3]) : 5;
        if (reps < 1 || reps > 100) {
            fprintf(stderr, "kvq_gpu_sage_attn_test: --stages: repetitions \"%s\" not in 1 .. 100\n", argv[3]);
            return 2;
        }
        return stages_bench(argc > 2 ? argv[2] : "4096,8192,32768", reps);
    }
    if (argc > 1 && strcmp(argv[1], "--gqa-bench") == 0) {
        const int reps = argc > 3 ? atoi(argv[3]) : 5;
        if (reps < 1 || reps > 100) {
            fprintf(stderr, "kvq_gpu_sage_attn_test: --gqa-bench: repetitions \"%s\" not in 1 .. 100\n", argv[3]);
            return 2;
        }
        return gqa_bench(argc > 2 ? argv[2] : "8192,32768", reps);
    }
    const int only_gqa = argc > 1 && strcmp(argv[1], "--gqa") == 0;
    if (g_long) {
        for (uint32_t i = 0; i < sizeof long_cases / sizeof long_cases[0]; i++) run_case(&long_cases[i], i);
        return kvq_tb_finish();
    }
    for (uint32_t i = 0; i < sizeof gqa_cases / sizeof gqa_cases[0]; i++) run_gqa_case(&gqa_cases[i], i);
    bad_gqa();
    if (!only_gqa)
        for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], i);
    if (!only_gqa) {
        bad_params();
        bad_values();
    }
    return kvq_tb_finish();
}
