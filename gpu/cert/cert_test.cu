/*
 * cert_test.cu -- the CUDA CERT quantizers against ref/fast/cert.c, bitwise.
 *
 * Every case runs the reference (include/kvq.h) and the device launcher
 * (gpu/kvq_cuda.h) on the same keys and values and compares, bit for bit: the
 * status, the flags word, every key code byte, every sigma and z bit pattern,
 * every value code byte and every binary16 scale and offset bit pattern.
 * Outputs start as a sentinel pattern on both sides, one guard region past
 * each buffer's end included (gpu/testbed.h), so "nothing written on error"
 * [API-ERR-01] and "nothing written out of bounds" are checked by the same
 * comparison; and after every call each side's guards (and after an error its
 * whole outputs and flags word) must still hold the sentinel.  Inputs
 * are binary16 values by construction, per channel of one kind: ordinary,
 * constant (zero range), exact code ties, few distinct values, subnormal
 * binary16, the binary16 extremes; bad cases put a NaN, an infinity or a
 * non-binary16 value (binary32 subnormal, off the binary16 grid, above 65504)
 * anywhere, residual block included.  Shapes: d in {16, 64, 128} (some 48 and
 * 512), n any, multiples of 16 or not (n < 16: no full block).
 *
 * SPEC: [CERT-L-01..04] [CERT-K8-01..02] [CERT-K8-05] [CERT-V4-01] [POL-TIE-01]
 *       [POL-TIE-02] [POL-SZ-01] [POL-ZR-01] [API-ERR-01]
 *
 * Without a device: "gpu-cert-test: SKIPPED (no CUDA device: <reason>)", exit 0.
 * Seed: KVQ_SEED (default below), printed on failure; cases: KVQ_GPU_CASES.
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

#define DEFAULT_SEED 0x6b76712d63727431ull /* "kvq-crt1" */

static unsigned long g_err_cases, g_nq0_cases;

/* ---- buffers ------------------------------------------------------------ */
static kvq_tb_dbuf d_in, d_o[3]; /* input; codes, sigma|scale, z|zero */

/* One output set (gpu/testbed.h): codes, sigma|scale, z|zero, each
 * sentinel-filled with its guard bytes; names for messages by op. */
static void outs_init(kvq_tb_outs *o, const char *side, int keys, size_t na, size_t nb,
                      size_t nc)
{
    kvq_tb_outs_init(o, side);
    kvq_tb_outs_add(o, "codes", na);
    kvq_tb_outs_add(o, keys ? "sigma" : "scale", nb);
    kvq_tb_outs_add(o, keys ? "z" : "zero", nc);
}

/* ---- case description and reporting ------------------------------------ */
typedef struct tcase {
    const char *op;       /* "keys" / "values" */
    const char *what;     /* input kind */
    kvq_cert_shape sh;
    kvq_policy pol;
} tcase;

static void print_case(const tcase *c)
{
    printf("  seed=0x%016llx case=%lu op=%s input=%s n=%u d=%u ties=%s overflow=%s "
           "subnormal=%s\n",
           (unsigned long long)kvq_tb_seed(), kvq_tb_cases(), c->op, c->what, c->sh.tokens,
           c->sh.dim, c->pol.ties ? "away" : "even", c->pol.overflow ? "nan" : "saturate",
           c->pol.subnormal ? "daz" : "keep");
}

/* Dump one key column (block b, channel c) of the input as a vector line. */
static void dump_key_column(const tcase *c, const float *k, uint32_t b, uint32_t ch)
{
    printf("  key block %u channel %u inputs (hex binary32, token order):", b, ch);
    for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
        printf(" %08x",
               kvq_f32_bits(k[kvq_cert_in_index(&c->sh, kvq_cert_block_first(b) + i, ch)]));
    printf("\n");
}

static void dump_value_group(const tcase *c, const float *v, uint32_t t, uint32_t j)
{
    printf("  value token %u group %u inputs (hex binary32, element order):", t, j);
    for (uint32_t i = 0; i < KVQ_CERT_VGROUP; i++)
        printf(" %08x", kvq_f32_bits(v[kvq_cert_in_index(&c->sh, t, kvq_cert_value_channel(j, i))]));
    printf("\n");
}

/* Compare the reference's outputs r with the device's g, guard bytes
 * included; report.  For the key op the metadata differences are mapped back
 * to a column dump.  Then each side's guards, and after an error its whole
 * outputs and flags [API-ERR-01] (gpu/testbed.h).  1 when all hold. */
static int compare(const tcase *c, const float *x, const kvq_tb_outs *r, const kvq_tb_outs *g,
                   int keys)
{
    char msg[256];
    long at;
    const uint8_t *ra = r->buf[0].p, *ga = g->buf[0].p;
    if (r->status != g->status) {
        snprintf(msg, sizeof msg, "status ref %s gpu %s", kvq_status_str(r->status),
                 kvq_status_str(g->status));
        goto fail;
    }
    if (r->flags != g->flags) {
        snprintf(msg, sizeof msg, "flags ref 0x%08x gpu 0x%08x", r->flags, g->flags);
        goto fail;
    }
    if ((at = kvq_tb_first_diff(ra, ga, kvq_tb_outs_bytes(r, 0))) >= 0) {
        snprintf(msg, sizeof msg, "code byte %ld: ref %02x gpu %02x", at, ra[at], ga[at]);
        if (kvq_tb_fail()) {
            printf("FAIL %s: %s\n", c->op, msg);
            print_case(c);
            if (r->status == KVQ_OK) {
                if (keys && (uint64_t)at < kvq_cert_key_code_bytes(&c->sh)) {
                    uint32_t bb = (uint32_t)((uint64_t)at / kvq_cert_key_block_bytes(&c->sh));
                    uint32_t in = (uint32_t)((uint64_t)at % kvq_cert_key_block_bytes(&c->sh));
                    dump_key_column(c, x, bb, in % c->sh.dim);
                } else if (!keys && (uint64_t)at < kvq_cert_value_code_bytes(&c->sh)) {
                    uint64_t gi = (uint64_t)at / kvq_cert_value_group_bytes();
                    uint32_t gpt = kvq_cert_value_groups_per_token(&c->sh);
                    dump_value_group(c, x, (uint32_t)(gi / gpt), (uint32_t)(gi % gpt));
                }
            }
        }
        return 0;
    }
    for (unsigned k = 1; k < 3; k++) {
        const uint8_t *rb = r->buf[k].p, *gb = g->buf[k].p;
        const size_t nn = kvq_tb_outs_bytes(r, k);
        if ((at = kvq_tb_first_diff(rb, gb, nn)) < 0) continue;
        uint32_t e = (uint32_t)(at / 4), rv = 0, gv = 0;
        if ((size_t)(e + 1u) * 4u <= nn) {
            memcpy(&rv, rb + 4u * e, 4);
            memcpy(&gv, gb + 4u * e, 4);
        }
        snprintf(msg, sizeof msg, "%s entry %u: ref %08x gpu %08x", r->buf[k].name, e, rv, gv);
        if (kvq_tb_fail()) {
            printf("FAIL %s: %s\n", c->op, msg);
            print_case(c);
            if (r->status == KVQ_OK && keys && e < kvq_cert_key_meta_count(&c->sh))
                dump_key_column(c, x, e / c->sh.dim, e % c->sh.dim);
            if (r->status == KVQ_OK && !keys && e < kvq_cert_value_groups(&c->sh)) {
                uint32_t gpt = kvq_cert_value_groups_per_token(&c->sh);
                dump_value_group(c, x, e / gpt, e % gpt);
            }
        }
        return 0;
    }
    if (!kvq_tb_outs_check(r, r->status != KVQ_OK, msg, sizeof msg) ||
        !kvq_tb_outs_check(g, g->status != KVQ_OK, msg, sizeof msg))
        goto fail;
    return 1;
fail:
    if (kvq_tb_fail()) {
        printf("FAIL %s: %s\n", c->op, msg);
        print_case(c);
    }
    return 0;
}

/* ---- input generation: binary16 values by construction ------------------- */

/* m 2^e, |m| < 2^11, -24 <= e <= 5: a binary16 number (|v| <= 65504). */
static float f16_val(int32_t m, int e)
{
    return ldexpf((float)m, e);
}

static float rnd_f16(int emin, int emax) /* random binary16 with exponent in a range */
{
    int e = emin + (int)kvq_tb_rndu((uint32_t)(emax - emin + 1));
    int32_t m = (int32_t)(1024u + kvq_tb_rndu(1024u));
    if (e < -24) e = -24;
    if (e > 5) e = 5;
    return f16_val(kvq_tb_chance(50) ? -m : m, e);
}

/* Fill channel ch, tokens t0 .. t0+cnt-1, of x [n][d] with one kind. */
static void gen_column(float *x, const kvq_cert_shape *sh, uint32_t t0, uint32_t cnt,
                       uint32_t ch, uint32_t kind)
{
    int e0 = -20 + (int)kvq_tb_rndu(22);
    int32_t a = (int32_t)kvq_tb_rndu(512) - 256;
    float cval = kvq_tb_chance(20) ? (kvq_tb_chance(50) ? 0.0f : -0.0f) : rnd_f16(-24, 5);
    uint32_t sc = kvq_tb_rndu(8);          /* a tie column's power-of-two scale */
    for (uint32_t i = 0; i < cnt; i++) {
        float v;
        switch (kind) {
        case 0: case 1: /* ordinary, a few binades */
            v = rnd_f16(e0 - 10, e0 - 10 + 6 + (int)kvq_tb_rndu(4));
            break;
        case 2: v = cval; break;        /* constant channel: zero range */
        case 3: /* exact ties: min a, max a + 510, s = 2, z = a + 256: odd offsets tie */
            if (i == 0) v = (float)a;
            else if (i == 1) v = (float)(a + 510);
            else v = (float)(a + (int32_t)kvq_tb_rndu(511));
            v = ldexpf(v, (int)sc - 4);  /* |v| < 2^10 * 2^3: binary16 integers * 2^k */
            break;
        case 4: /* a few distinct values, zeros of both signs */
            switch (kvq_tb_rndu(4)) {
            case 0: v = 0.0f; break;
            case 1: v = -0.0f; break;
            default: v = ldexpf((float)kvq_tb_rndu(4), e0);
            }
            break;
        case 5: /* binary16 subnormals and tiny normals */
            v = ldexpf((float)(int32_t)(kvq_tb_rndu(2047) - 1023), -24);
            break;
        case 6: /* extremes: +-65504 and neighbours */
            v = (kvq_tb_chance(50) ? -1.0f : 1.0f) * (65504.0f - 32.0f * (float)kvq_tb_rndu(4));
            if (kvq_tb_chance(30)) v = rnd_f16(-24, 5);
            break;
        default: /* any binary16 */
            v = rnd_f16(-24, 5);
        }
        x[kvq_cert_in_index(sh, t0 + i, ch)] = v;
    }
}

static void gen_tensor(float *x, const kvq_cert_shape *sh, uint32_t mix)
{
    const uint32_t nb = kvq_cert_blocks(sh);
    for (uint32_t b = 0; b < nb; b++)
        for (uint32_t c = 0; c < sh->dim; c++)
            gen_column(x, sh, kvq_cert_block_first(b), kvq_cert_block_tokens(sh, b), c,
                       mix < 8u ? mix : kvq_tb_rndu(8));
}

/* Make x bad: a NaN, an infinity or a non-binary16 value somewhere. */
static const char *spoil(float *x, const kvq_cert_shape *sh)
{
    const uint64_t n = kvq_cert_in_index(sh, sh->tokens, 0);
    const char *what = "";
    int k = (int)kvq_tb_rndu(7), nbad = 1 + (int)kvq_tb_rndu(3);
    for (int j = 0; j < nbad; j++) {
        uint64_t at = kvq_tb_rnd() % n;
        if (kvq_tb_chance(30)) /* the tail */
            at = n - 1u - kvq_tb_rndu((uint32_t)(n < 64u ? n : 64u));
        switch (k) {
        case 0: x[at] = NAN; what = "nan"; break;
        case 1: x[at] = kvq_tb_chance(50) ? INFINITY : -INFINITY; what = "inf"; break;
        case 2:
            x[at] = kvq_f32_from_bits(1u + kvq_tb_rndu(0x7FFFFFu));
            what = "f32-subnormal";
            break;
        case 3:
            x[at] = 1.0f + 0x1p-20f * (float)(1u + kvq_tb_rndu(512));
            what = "off-f16-grid";
            break;
        case 4:
            x[at] = (kvq_tb_chance(50) ? -1.0f : 1.0f) * (65505.0f + (float)kvq_tb_rndu(100000));
            what = "above-65504";
            break;
        case 5: x[at] = ldexpf(1.0f, -25); what = "2^-25"; break;
        default: /* both: the non-finite one must win */
            x[at] = kvq_f32_from_bits(0x3F800001u);
            x[kvq_tb_rnd() % n] = NAN;
            what = "nan+non-f16";
        }
    }
    return what;
}

/* ---- one case ------------------------------------------------------------ */

/* One op (keys or values) of the reference into r and of the device into g
 * (through sentinel-filled device twins, copied back whole).  null_at: 0 none,
 * 1..4 one of codes / meta1 / meta2 / input passed as NULL on both sides. */
static void run_op(int keys, kvq_tb_outs *r, kvq_tb_outs *g, const float *x, const float *dx,
                   const kvq_cert_shape *sh, const kvq_policy *pol, int null_at)
{
    void *dp[3] = {NULL, NULL, NULL}, *rp[3], *gp[3];
    kvq_tb_outs_device(g, d_o, NULL, dp);
    for (int i = 0; i < 3; i++) {
        rp[i] = null_at == i + 1 ? NULL : r->buf[i].p;
        gp[i] = null_at == i + 1 ? NULL : dp[i];
    }
    const float *rx = null_at == 4 ? NULL : x, *gx = null_at == 4 ? NULL : dx;
    if (keys) {
        r->status = kvq_cert_quantize_keys((int8_t *)rp[0], (float *)rp[1], (float *)rp[2],
                                           &r->flags, rx, sh, pol);
        g->status = kvq_cuda_cert_quantize_keys((int8_t *)gp[0], (float *)gp[1], (float *)gp[2],
                                                &g->flags, gx, sh, pol, 0);
    } else {
        r->status = kvq_cert_quantize_values((uint8_t *)rp[0], (float *)rp[1], (float *)rp[2],
                                             &r->flags, rx, sh, pol);
        g->status = kvq_cuda_cert_quantize_values((uint8_t *)gp[0], (float *)gp[1],
                                                  (float *)gp[2], &g->flags, gx, sh, pol, 0);
    }
    kvq_tb_outs_fetch(g, dp);
}

/* Count one op's outcome: with accepted (the case promised an error), a
 * reference that succeeded fails with that text; else compare r and g.  Frees
 * both sets. */
static void judge(const tcase *c, const float *x, kvq_tb_outs *r, kvq_tb_outs *g, int keys,
                  const char *accepted)
{
    if (accepted && r->status == KVQ_OK) {
        kvq_tb_fail();
        printf("FAIL %s: %s\n", c->op, accepted);
        print_case(c);
    } else if (compare(c, x, r, g, keys)) {
        kvq_tb_pass();
    }
    kvq_tb_outs_free(r);
    kvq_tb_outs_free(g);
}

static void run_shape(const kvq_cert_shape *sh, const kvq_policy *pol, uint32_t mix, int bad)
{
    const uint64_t n = sh->tokens ? kvq_cert_in_index(sh, sh->tokens, 0) : 0u;
    float *x = (float *)kvq_tb_malloc((n ? n : 1u) * sizeof(float));
    tcase c;
    gen_tensor(x, sh, mix);
    static const char *const kinds[] = {"ordinary", "ordinary", "constant", "ties",
                                        "few-values", "f16-subnormal", "extremes", "any-f16"};
    c.what = bad ? spoil(x, sh) : (mix < 8u ? kinds[mix] : "mixed");
    c.sh = *sh;
    c.pol = *pol;
    if (bad) g_err_cases++;
    if (kvq_cert_full_blocks(sh) == 0u) g_nq0_cases++;
    float *dx = (float *)kvq_tb_dgrow(&d_in, n * sizeof(float));
    kvq_tb_cuda(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy x");

    for (int keys = 1; keys >= 0; keys--) {
        kvq_tb_outs r, g;
        size_t na, nm;
        kvq_tb_case();
        c.op = keys ? "keys" : "values";
        if (keys) {
            na = kvq_cert_key_code_bytes(sh);
            nm = kvq_cert_key_meta_count(sh) * sizeof(float);
        } else {
            na = kvq_cert_value_code_bytes(sh);
            nm = kvq_cert_value_groups(sh) * sizeof(float);
        }
        outs_init(&r, "ref", keys, na, nm, nm);
        outs_init(&g, "gpu", keys, na, nm, nm);
        run_op(keys, &r, &g, x, dx, sh, pol, 0);
        /* bad: the generator promised an error */
        judge(&c, x, &r, &g, keys, bad ? "spoiled input accepted by the reference" : NULL);
    }
    free(x);
}

static const uint32_t k_dims[] = {16u, 64u, 128u, 16u, 64u, 128u, 48u, 512u};

static void run_random_case(void)
{
    kvq_cert_shape sh;
    kvq_policy pol;
    sh.dim = k_dims[kvq_tb_rndu(8)];
    switch (kvq_tb_rndu(4)) {
    case 0: sh.tokens = 16u * (1u + kvq_tb_rndu(12)); break; /* whole blocks */
    case 1: sh.tokens = 1u + kvq_tb_rndu(15); break;         /* residual only */
    default: sh.tokens = 1u + kvq_tb_rndu(300); break;       /* anything */
    }
    pol.ties = kvq_tb_rndu(2);
    pol.overflow = kvq_tb_rndu(2);
    pol.subnormal = kvq_tb_rndu(2);
    run_shape(&sh, &pol, kvq_tb_rndu(9), kvq_tb_chance(15));
}

/* Argument errors: the launcher's status must be the reference's, nothing
 * written (outputs sentinel-filled on both sides, compared whole). */
#define ARG_BYTES 4096u
static void run_args(const kvq_cert_shape *sh, const kvq_policy *pol, int null_at,
                     const char *what)
{
    static float x[32u * 528u];          /* zeros: binary16; never read past a bad shape */
    float *dx = (float *)kvq_tb_dgrow(&d_in, sizeof x);
    tcase c;
    c.what = what;
    c.sh = sh ? *sh : (kvq_cert_shape){0u, 0u};
    c.pol = pol ? *pol : (kvq_policy){0u, 0u, 0u};
    kvq_tb_cuda(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice), "cudaMemcpy x");
    for (int keys = 1; keys >= 0; keys--) {
        kvq_tb_outs r, g;
        kvq_tb_case();
        c.op = keys ? "keys" : "values";
        outs_init(&r, "ref", keys, ARG_BYTES, ARG_BYTES, ARG_BYTES);
        outs_init(&g, "gpu", keys, ARG_BYTES, ARG_BYTES, ARG_BYTES);
        run_op(keys, &r, &g, x, dx, sh, pol, null_at);
        judge(&c, x, &r, &g, keys, "bad arguments accepted by the reference");
    }
}

static void run_bad_args(void)
{
    static const kvq_cert_shape shapes[] = {
        {0u, 64u}, {32u, 0u}, {32u, 24u}, {32u, 528u}, {32u, 8u}, {(1u << 24) + 1u, 16u}};
    const kvq_policy good = {KVQ_TIES_EVEN, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP};
    const kvq_policy badp[] = {{7u, 0u, 0u}, {0u, 9u, 0u}, {0u, 0u, 5u}};
    const kvq_cert_shape ok = {32u, 16u};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        run_args(&shapes[i], &good, 0, "bad-shape");
    for (size_t i = 0; i < sizeof badp / sizeof badp[0]; i++)
        run_args(&ok, &badp[i], 0, "bad-policy");
    for (int k = 1; k <= 4; k++) run_args(&ok, &good, k, "null-pointer");
    run_args(NULL, &good, 0, "null-shape");
    run_args(&ok, NULL, 0, "null-policy");
}

/* Fixed cases: every input kind on every d, whole blocks and a residual. */
static void run_fixed(void)
{
    static const uint32_t dims[] = {16u, 64u, 128u};
    static const uint32_t toks[] = {16u, 37u, 64u, 7u};
    for (uint32_t ti = 0; ti < 2u; ti++)
        for (size_t di = 0; di < 3; di++)
            for (size_t ni = 0; ni < 4; ni++)
                for (uint32_t mix = 0; mix < 9u; mix++) {
                    kvq_cert_shape sh = {toks[ni], dims[di]};
                    kvq_policy pol = {ti, KVQ_OVERFLOW_SATURATE, KVQ_SUBNORMAL_KEEP};
                    run_shape(&sh, &pol, mix, 0);
                }
    /* large: many blocks a call, rows not a multiple of 16 */
    {
        kvq_cert_shape sh = {4096u + 7u, 128u};
        kvq_policy pol = {KVQ_TIES_EVEN, KVQ_OVERFLOW_NAN, KVQ_SUBNORMAL_DAZ};
        run_shape(&sh, &pol, 8u, 0);
        pol.ties = KVQ_TIES_AWAY;
        run_shape(&sh, &pol, 3u, 0);
        run_shape(&sh, &pol, 8u, 1);
    }
}

int main(void)
{
    kvq_tb_init("gpu-cert-test", DEFAULT_SEED);
    unsigned long ncases = (unsigned long)kvq_tb_env_count("KVQ_GPU_CASES", 1500u);

    if (!kvq_tb_device("%lu random shapes", ncases)) return 0;
    run_bad_args();
    run_fixed();
    for (unsigned long k = 0; k < ncases; k++) run_random_case();
    printf("gpu-cert-test: %lu cases (%lu with bad inputs, %lu with no full block)\n",
           kvq_tb_cases(), g_err_cases * 2u, g_nq0_cases * 2u);
    return kvq_tb_finish();
}
