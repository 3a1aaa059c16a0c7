/*
 * check_rule.c -- the registry's rule language [VER-REG-07..10]: the parser's
 * errors name the rule and the column, the evaluator's arithmetic is exact
 * (overflow and zero divisors are errors, && || ?: short-circuit, floats
 * compare exactly), every rule of the registry parses, and the families'
 * rules agree with the layout functions of the C headers they replaced, over
 * random shapes.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "conf.h"
#include "families/cert.h"
#include "families/kivi.h"
#include "families/sage.h"
#include "families/pkv.h"
#include "families/vidkv.h"
#include "kvq_rng.h"
#include "rule.h"

static uint64_t seed = 0x5eed0001ull, ncases = 20000;

/* A scope to parse in: the kivi-quant operation, and a few fields of our own. */
typedef struct tin {
    uint32_t a, b;
    uint32_t e;
    float f;
    float *arr;
    uint32_t late;
} tin;

typedef struct tout {
    uint32_t n;
    float *later;
} tout;

static const char *const ENAMES[] = { "red", "green", "blue" };

#define TIN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(tin, m)
static const kvq_field TF[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "a", .type = KVQ_FT_U32, TIN(a) },
    { .key = "b", .type = KVQ_FT_U32, TIN(b) },
    { .key = "e", .type = KVQ_FT_ENUM, TIN(e), .names = ENAMES, .nnames = 3 },
    { .key = "f", .type = KVQ_FT_F32, TIN(f) },
    KVQ_F_STATUS,
    { .key = "arr", .type = KVQ_FT_A_F32, TIN(arr), .count_rule = "a + late" },
    { .key = "late", .type = KVQ_FT_U32, TIN(late) },
    { .key = "n", .type = KVQ_FT_U32, .role = KVQ_ROLE_OUTPUT, .offset = offsetof(tout, n) },
    { .key = "later", .type = KVQ_FT_A_F32, .role = KVQ_ROLE_OUTPUT, .offset = offsetof(tout, later),
      .count_rule = "valid ? n : 0" },
};

static kvq_status no_solve(kvq_case *c)
{
    (void)c;
    return KVQ_E_NOMEM;
}

static const kvq_op TOP = {
    .name = "t-op", .solve = no_solve, .fields = TF, .nfields = KVQ_NELEMS(TF), .in_size = sizeof(tin),
    .out_size = sizeof(tout), .valid = "a >= 1",
};

static kvq_case tc;
static tin ti;

static void setcase(uint32_t a, uint32_t b, uint32_t e, float f)
{
    memset(&tc, 0, sizeof tc);
    memset(&ti, 0, sizeof ti);
    tc.op = &TOP;
    tc.in = &ti;
    ti.a = a, ti.b = b, ti.e = e, ti.f = f;
}

/* Evaluate text on the current case: 1 and *v, or 0 with err. */
static int ev(const char *text, int64_t *v, char *err, size_t errlen)
{
    kvq_rule *r = kvq_rule_parse(text, &TOP, NULL, err, errlen);
    int ok;
    if (r == NULL) return -1;
    ok = kvq_rule_eval(r, &tc, NULL, v, err, errlen);
    kvq_rule_free(r);
    return ok;
}

static int64_t val(const char *text)
{
    char err[256];
    int64_t v = 0;
    int ok = ev(text, &v, err, sizeof err);
    ck_assert_msg(ok == 1, "'%s': %s", text, err);
    return v;
}

START_TEST(syntax_errors_name_rule_and_column)
{
    /* SPEC: [VER-REG-07] -- a rule that does not parse is reported with its text and the column */
    static const struct {
        const char *text, *msg;
    } BAD[] = {
        { "a *", "rule 'a *' column 4: expected a number, a name or '(' at the end" },
        { "a + zz", "rule 'a + zz' column 5: 'zz' is not a scalar field of t-op" },
        { "(a + b", "rule '(a + b' column 7: expected ')'" },
        { "a b", "rule 'a b' column 3: unexpected 'b'" },
        { "\"red\" + 1", "rule '\"red\" + 1' column 1: a quoted name is compared with an enum field only" },
        { "a == \"red\"", "rule 'a == \"red\"' column 6: a quoted name is compared with an enum field only" },
        { "e == \"pink\"", "column 6: \"pink\" is not a name of e" },
        { "f + 1 > 0", "column 3: a float is only compared, never in arithmetic or logic" },
        { "f", "a rule's value is an integer, not a float" },
        { "min(a)", "expected ',' (min takes two arguments)" },
        { "12u", "malformed number (no suffixes, no decimal fractions)" },
        { "1.5", "malformed number" },
        { "0x", "0x without hex digits" },
        { "arr > 0", "'arr' is not a scalar field of t-op" },
        { "valid", "'valid' is not a scalar field of t-op" }, /* op rules: in count rules only */
        { "a ? b", "expected ':' of '?:'" },
        { "a = b", "unexpected '='" },
    };
    setcase(1, 2, 0, 0.0f);
    for (size_t i = 0; i < KVQ_NELEMS(BAD); i++) {
        char err[256] = "";
        kvq_rule *r = kvq_rule_parse(BAD[i].text, &TOP, NULL, err, sizeof err);
        ck_assert_msg(r == NULL, "'%s' parsed", BAD[i].text);
        ck_assert_msg(strstr(err, BAD[i].msg) != NULL, "'%s': %s (want %s)", BAD[i].text, err, BAD[i].msg);
        ck_assert_msg(strncmp(err, "rule '", 6) == 0, "'%s': %s", BAD[i].text, err);
    }
}
END_TEST

START_TEST(evaluation_is_exact_c)
{
    /* SPEC: [VER-REG-07] -- C precedence, truncating division, short-circuit, exact comparisons */
    char err[256];
    int64_t v;
    setcase(7, 2, 2, 0x1.000002p0f);
    ck_assert_int_eq(val("2 + 3 * 4"), 14);
    ck_assert_int_eq(val("(2 + 3) * 4"), 20);
    ck_assert_int_eq(val("-a / b"), -3);
    ck_assert_int_eq(val("-a % b"), -1);
    ck_assert_int_eq(val("a % -b"), 1);
    ck_assert_int_eq(val("cdiv(a, b)"), 4);
    ck_assert_int_eq(val("cdiv(a + 1, b)"), 4);
    ck_assert_int_eq(val("cdiv(-a, b)"), -3);
    ck_assert_int_eq(val("min(a, b) * 10 + max(a, b)"), 27);
    ck_assert_int_eq(val("a > b ? 1 : 0 ? 5 : 6"), 1);      /* right-associative */
    ck_assert_int_eq(val("a < b ? 1 : 0 ? 5 : 6"), 6);
    ck_assert_int_eq(val("1 < 2 == 1"), 1);                 /* relational binds tighter */
    ck_assert_int_eq(val("!a + 1"), 1);
    ck_assert_int_eq(val("!!a"), 1);
    ck_assert_int_eq(val("a - b - 1"), 4);                  /* left-associative */
    ck_assert_int_eq(val("0x10 + 010"), 26);                /* decimal 010 is ten */
    ck_assert_int_eq(val("e == \"blue\""), 1);
    ck_assert_int_eq(val("\"green\" != e"), 1);
    ck_assert_int_eq(val("e > \"red\""), 1);
    ck_assert_int_eq(val("f > 1"), 1);                      /* 1 + 2^-23 > 1, exactly */
    ck_assert_int_eq(val("f <= 0x1.000002p0 && f >= 0x1.000002p0"), 1);
    ck_assert_int_eq(val("f < 0x1.000001p0"), 0);
    ck_assert_int_eq(val("0 && a / 0"), 0);                 /* && || ?: short-circuit */
    ck_assert_int_eq(val("1 || a / 0"), 1);
    ck_assert_int_eq(val("1 ? 2 : a / 0"), 2);
    ck_assert_int_eq(val("status == 0"), 1);
    ck_assert_int_eq(val("level == \"exact\""), 1);
    ck_assert_int_eq(val("4294967295 * 2147483647 == 9223372030412324865"), 1); /* exact beyond 32 bits */
    /* errors */
    ck_assert_int_eq(ev("a / (b - 2)", &v, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "division by zero") != NULL, "%s", err);
    ck_assert_int_eq(ev("a % 0", &v, err, sizeof err), 0);
    ck_assert_int_eq(ev("cdiv(a, 0)", &v, err, sizeof err), 0);
    ck_assert_int_eq(ev("4294967295 * 4294967295 * 4294967295", &v, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "overflow") != NULL, "%s", err);
    ck_assert_int_eq(ev("-9223372036854775807 - 2", &v, err, sizeof err), 0);
    /* NaN compares false except != */
    setcase(7, 2, 2, NAN);
    ck_assert_int_eq(val("f == f || f < 1 || f > 1 || f <= 1 || f >= 1"), 0);
    ck_assert_int_eq(val("f != 1"), 1);
    setcase(7, 2, 2, INFINITY);
    ck_assert_int_eq(val("f > 9223372036854775807"), 1);
    ck_assert_int_eq(val("f <= 0x1.fffffep127"), 0);
}
END_TEST

START_TEST(count_rules_read_their_record)
{
    /* SPEC: [VER-REG-08] -- a count reads the earlier scalars of its own record and the op rule valid */
    kvq_rule *r;
    char err[256];
    int64_t v;
    tout o = { 5, NULL };
    setcase(1, 0, 0, 0.0f);
    ck_assert_int_eq(kvq_rules_check(&TOP, err, sizeof err), 1);
    ck_assert_uint_eq(kvq_count(&tc, &TF[KVQ_NELEMS(TF) - 1], &o), 5);
    ti.a = 0; /* not valid: no outputs */
    ck_assert_uint_eq(kvq_count(&tc, &TF[KVQ_NELEMS(TF) - 1], &o), 0);
    /* an input's count reads the case's scalars wherever they are in the schema */
    ti.a = 2, ti.late = 3;
    ck_assert_uint_eq(kvq_count(&tc, &TF[8], &ti), 5);
    ti.a = 0, ti.late = 0;
    /* n is not in scope of an input's count, nor of an op rule */
    ck_assert_ptr_null(kvq_rule_parse("n", &TOP, &TF[8], err, sizeof err));
    ck_assert_ptr_null(kvq_rule_parse("n", &TOP, NULL, err, sizeof err));
    r = kvq_rule_parse("n * 2 + a", &TOP, &TF[KVQ_NELEMS(TF) - 1], err, sizeof err);
    ck_assert_ptr_nonnull(r);
    ti.a = 1;
    ck_assert_int_eq(kvq_rule_eval(r, &tc, &o, &v, err, sizeof err), 1);
    ck_assert_int_eq(v, 11);
    kvq_rule_free(r);
}
END_TEST

START_TEST(registry_rules_parse)
{
    /* SPEC: [VER-REG-06] [VER-REG-07] -- every rule of every built-in operation parses */
    char err[320];
    for (size_t i = 0; i < kvq_family_count(); i++)
        for (size_t k = 0; k < kvq_family_at(i)->nops; k++) {
            const kvq_op *op = kvq_family_at(i)->ops[k];
            ck_assert_msg(kvq_rules_check(op, err, sizeof err), "%s", err);
            ck_assert_ptr_nonnull(op->valid);
        }
}
END_TEST

static const kvq_field *field(const kvq_op *op, const char *key, kvq_role role)
{
    for (size_t i = 0; i < op->nfields; i++)
        if (op->fields[i].role == role && strcmp(op->fields[i].key, key) == 0) return &op->fields[i];
    ck_abort_msg("%s has no field %s", op->name, key);
    return NULL;
}

static uint32_t rng32(kvq_rng *g)
{
    return (uint32_t)(kvq_rng_next(g) >> 32);
}

/* a u32 drawn near the interesting values: small, powers of two, limits */
static uint32_t draw(kvq_rng *g, uint32_t lim)
{
    switch (rng32(g) % 4u) {
    case 0: return rng32(g) % 9u;
    case 1: return 1u << (rng32(g) % 25u);
    case 2: return rng32(g) % (lim + 2u);
    default: return (rng32(g) % 64u + 1u) * 16u;
    }
}

START_TEST(kivi_rules_match_the_layout)
{
    /* SPEC: [VER-REG-08] -- the KIVI rules are kvq_kivi_params_ok, _shape_ok and the layout's sizes */
    kvq_rng g;
    kvq_case c;
    const kvq_op *op = &kvq_op_kivi_quant;
    g.s = seed;
    for (uint64_t n = 0; n < ncases; n++) {
        kvq_kivi_in *in;
        int ok;
        ck_assert_int_eq(kvq_case_begin(&c, op), KVQ_OK);
        in = c.in;
        in->shape.bits = rng32(&g) % 10u;
        in->shape.group = rng32(&g) % 2u ? 4u * (rng32(&g) % 20u) : draw(&g, 4100u);
        in->shape.grouping = rng32(&g) % 2u;
        in->shape.meta = rng32(&g) % 2u;
        /* often a multiple of the group: the shapes near valid ones */
        in->shape.tokens = rng32(&g) % 2u ? in->shape.group * (rng32(&g) % 6u) : draw(&g, 1u << 24);
        in->shape.channels = rng32(&g) % 2u ? in->shape.group * (rng32(&g) % 6u) : draw(&g, 1u << 24);
        ok = kvq_kivi_params_ok(&in->shape) && kvq_kivi_shape_ok(&in->shape);
        ck_assert_int_eq(kvq_case_valid(&c), ok);
        ck_assert_int_eq(kvq_meta_half(&c), in->shape.meta == KVQ_META_F16);
        ck_assert_uint_eq(kvq_count(&c, field(op, "x", KVQ_ROLE_INPUT), NULL), kvq_kivi_elems(&in->shape));
        ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_EXPECTED), NULL),
                          ok ? kvq_kivi_code_bytes(&in->shape) : 0u);
        ck_assert_uint_eq(kvq_count(&c, field(op, "scale", KVQ_ROLE_OUTPUT), NULL),
                          ok ? kvq_kivi_groups(&in->shape) : 0u);
        ck_assert_uint_eq(kvq_count(&c, field(op, "deq", KVQ_ROLE_OUTPUT), NULL),
                          ok ? kvq_kivi_elems(&in->shape) : 0u);
        if (ok) {
            int64_t hi;
            char err[128];
            ck_assert_int_eq(kvq_op_rule_eval(&c, KVQ_RULE_AMB_HI, 0, &hi, err, sizeof err), 1);
            ck_assert_int_eq(hi, kvq_code_max(in->shape.bits));
        }
        kvq_case_free(&c);
    }
}
END_TEST

START_TEST(cert_rules_match_the_layout)
{
    /* SPEC: [VER-REG-08] -- the CERT rules are kvq_cert_shape_ok and the layout's sizes */
    kvq_rng g;
    kvq_case c;
    g.s = seed + 1;
    for (uint64_t n = 0; n < ncases; n++) {
        const kvq_op *op = n % 2u ? &kvq_op_cert_keys : &kvq_op_cert_values;
        kvq_cert_in *in;
        int ok;
        ck_assert_int_eq(kvq_case_begin(&c, op), KVQ_OK);
        in = c.in;
        in->shape.tokens = draw(&g, 1u << 24);
        in->shape.dim = rng32(&g) % 2u ? 8u * (rng32(&g) % 70u) : draw(&g, 520u);
        ok = kvq_cert_shape_ok(&in->shape);
        ck_assert_int_eq(kvq_case_valid(&c), ok);
        if (op == &kvq_op_cert_keys) {
            ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_cert_key_code_bytes(&in->shape) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "sigma", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_cert_key_meta_count(&in->shape) : 0u);
        } else {
            ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_cert_value_code_bytes(&in->shape) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "scale", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_cert_value_groups(&in->shape) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "amb", KVQ_ROLE_REFERENCE), NULL),
                              ok ? (uint64_t)kvq_cert_quant_tokens(&in->shape) * in->shape.dim : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "eta", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_cert_blocks(&in->shape) : 0u);
        }
        kvq_case_free(&c);
    }
}
END_TEST

START_TEST(sage_rules_match_the_layout)
{
    /* SPEC: [VER-REG-08] [SAGE-MHA-01] -- the SAGE rules are kvq_sage_shape_ok, _qk_ok, _attn_ok, _mha_ok
     * and the layout's sizes */
    kvq_rng g;
    kvq_case c;
    g.s = seed + 2;
    for (uint64_t n = 0; n < ncases; n++) {
        kvq_sage_in *in;
        int ok;
        ck_assert_int_eq(kvq_case_begin(&c, n % 3u == 0u ? &kvq_op_sage_qk
                                             : n % 3u == 1u ? &kvq_op_sage_attn : &kvq_op_sage_mha), KVQ_OK);
        in = c.in;
        if (c.op == &kvq_op_sage_qk) {
            in->shape.tokens = draw(&g, 1u << 24);
            in->shape.dim = rng32(&g) % 3u ? 64u << (rng32(&g) % 2u) : draw(&g, 200u);
            in->qk.role = rng32(&g) % 2u;
            in->qk.bits = rng32(&g) % 2u ? 4u : 8u - rng32(&g) % 2u;
            in->qk.gran = rng32(&g) % 3u;
            in->qk.rounding = rng32(&g) % 2u;
            in->qk.warps = rng32(&g) % 18u;
            in->qk.block = rng32(&g) % 2u ? 16u * (rng32(&g) % 70u) : draw(&g, 1100u);
            in->seg = draw(&g, 1u << 24);
            ok = kvq_sage_shape_ok(&in->shape) && kvq_sage_qk_ok(&in->qk) && in->seg >= 1u &&
                 in->seg <= KVQ_SAGE_MAX_TOKENS;
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            ck_assert_uint_eq(kvq_count(&c, field(c.op, "scale", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_sage_scale_count(&in->shape, &in->qk) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(c.op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_sage_code_bytes(&in->shape, in->qk.bits) : 0u);
        } else {
            in->attn.nq = draw(&g, 1u << 24);
            in->attn.nk = draw(&g, 1u << 24);
            in->attn.dim = rng32(&g) % 4u ? 128u : 64u;
            in->attn.causal = rng32(&g) % 3u;
            in->attn.buffer = rng32(&g) % 2u ? 64u * (rng32(&g) % 3u) : draw(&g, 200u);
            in->attn.qk_bits = rng32(&g) % 2u ? 4u : 8u - rng32(&g) % 2u;
            in->attn.tau = ldexpf(1.0f, (int)(rng32(&g) % 300u) - 150);
            ok = kvq_sage_attn_ok(&in->attn);
            if (c.op == &kvq_op_sage_mha) {
                in->hq = rng32(&g) % 5u ? 1u + rng32(&g) % 12u : draw(&g, 1100u);
                in->hkv = rng32(&g) % 4u ? 1u + rng32(&g) % (in->hq ? in->hq : 1u) : draw(&g, 20u);
                in->in_fmt = rng32(&g) % 3u;
                ok = ok && kvq_sage_mha_ok(in->hq, in->hkv, in->in_fmt);
                ck_assert_uint_eq(kvq_count(&c, field(c.op, "q", KVQ_ROLE_INPUT), NULL),
                                  (uint64_t)in->hq * in->attn.nq * 128u);
                ck_assert_uint_eq(kvq_count(&c, field(c.op, "k", KVQ_ROLE_INPUT), NULL),
                                  (uint64_t)in->hkv * in->attn.nk * 128u);
                ck_assert_uint_eq(kvq_count(&c, field(c.op, "o", KVQ_ROLE_OUTPUT), NULL),
                                  ok ? (uint64_t)in->hq * in->attn.nq * 128u : 0u);
            }
            ck_assert_int_eq(kvq_case_valid(&c), ok);
        }
        kvq_case_free(&c);
    }
}
END_TEST

START_TEST(pkv_rules_match_the_layout)
{
    /* SPEC: [VER-REG-08] -- the PKV rules are kvq_pkv_params_ok, the entry points' shape checks
     * (ref/fast/pkv.c [PKV-ERR-01]) and the layout's sizes [PKV-L-01..03] [PKV-U-01] [PKV-U-04] */
    kvq_rng g;
    kvq_case c;
    uint64_t nvalid[3] = { 0, 0, 0 }, nempty = 0;
    g.s = seed + 3;
    for (uint64_t n = 0; n < ncases; n++) {
        const kvq_op *op = n % 3u == 0u ? &kvq_op_pkv_quant : n % 3u == 1u ? &kvq_op_pkv_key_flush
                                                                             : &kvq_op_pkv_value_step;
        kvq_pkv_in *in;
        kvq_pkv_params p;
        kvq_kivi_shape ks;
        uint64_t lim, fin, nq, held;
        int ok;
        ck_assert_int_eq(kvq_case_begin(&c, op), KVQ_OK);
        in = c.in;
        c.level = rng32(&g) % 2u;
        /* mostly valid parameters, so that the shape conditions are what decides */
        in->p.bits = rng32(&g) % 8u ? 2u + 2u * (rng32(&g) % 2u) : rng32(&g) % 6u;
        in->p.group = rng32(&g) % 8u ? 8u << (rng32(&g) % 3u) : draw(&g, 4100u);
        in->p.meta = rng32(&g) % 2u;
        in->p.residual = rng32(&g) % 8u ? in->p.group * (rng32(&g) % 3u) : draw(&g, 300u);
        in->p.window = rng32(&g) % 8u == 0u ? 0u : 1u + rng32(&g) % 40u;
        in->p.cap = rng32(&g) % 2u ? 0u : draw(&g, 70000u);
        in->p.v_threshold = rng32(&g) % 8u ? rng32(&g) % 2u : 2u;
        in->p.alpha = rng32(&g) % 8u ? rng32(&g) % 3u : 3u;
        in->kind = rng32(&g) % 8u ? rng32(&g) % 3u : 3u;
        in->tokens = rng32(&g) % 2u ? in->p.group * (rng32(&g) % 4u) : draw(&g, 1u << 24);
        in->dim = rng32(&g) % 2u ? in->p.group * (rng32(&g) % 4u) : draw(&g, 1u << 24);
        in->npat = rng32(&g) % 2u ? rng32(&g) % 6u : draw(&g, 70000u);
        in->room = rng32(&g) % 2u ? in->npat + rng32(&g) % 200u : draw(&g, 70000u);
        in->steps = rng32(&g) % 2u ? rng32(&g) % 100u : draw(&g, 5000u);
        p = kvq_pkv_case_params(&c);
        lim = kvq_pkv_bank_limit(&p);
        if (op == &kvq_op_pkv_quant) {
            ks = kvq_pkv_kivi_shape(&p, in->kind, in->tokens, in->dim);
            ok = in->kind <= KVQ_PKV_VALUE && kvq_pkv_params_ok(&p) && in->tokens >= 1u && in->dim >= 1u &&
                 kvq_kivi_shape_ok(&ks) && in->npat >= 1u && in->npat <= KVQ_PKV_MAX_PATTERNS &&
                 (c.level == KVQ_LEVEL_EXACT || p.meta == KVQ_META_F32);
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            nvalid[0] += ok;
            ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_kivi_code_bytes(&ks) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "scale", KVQ_ROLE_OUTPUT), NULL), ok ? kvq_kivi_groups(&ks) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "index", KVQ_ROLE_OUTPUT), NULL) * 2u,
                              ok ? kvq_pkv_index_bytes(in->tokens) : 0u);
        } else if (op == &kvq_op_pkv_key_flush) {
            ks = kvq_pkv_kivi_shape(&p, KVQ_PKV_KEY_DECODE, p.residual, in->dim);
            fin = in->npat + (uint64_t)in->steps < lim ? in->npat + (uint64_t)in->steps : lim;
            if (fin < in->npat) fin = in->npat;
            ok = kvq_pkv_params_ok(&p) && in->steps >= 1u && in->dim >= 1u && kvq_kivi_shape_ok(&ks) &&
                 in->npat >= 1u && in->npat <= KVQ_PKV_MAX_PATTERNS && in->npat <= in->room && fin <= in->room;
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            nvalid[1] += ok;
            ck_assert_uint_eq(kvq_count(&c, field(op, "bank_end", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_pkv_bank_bytes((uint32_t)fin, in->dim) / 4u : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? in->steps * kvq_kivi_code_bytes(&ks) : 0u);
        } else {
            ks = kvq_pkv_kivi_shape(&p, KVQ_PKV_VALUE, 1u, in->dim);
            fin = p.window ? kvq_pkv_bank_size(&p, in->npat, in->steps) : 0u;
            if (fin < in->npat) fin = in->npat;
            nq = in->steps > p.residual ? in->steps - p.residual : 0u;
            held = in->steps < (uint64_t)p.residual + 1u ? in->steps : (uint64_t)p.residual + 1u; /* the widest window */
            ok = kvq_pkv_params_ok(&p) && in->steps >= 1u && in->dim >= 1u && in->dim <= KVQ_MAX_DIM &&
                 held <= KVQ_MAX_DIM && held * in->dim <= KVQ_MAX_ELEMS && kvq_kivi_shape_ok(&ks) &&
                 in->npat <= KVQ_PKV_MAX_PATTERNS && in->npat <= in->room && fin <= in->room &&
                 (in->npat >= 1u || in->steps <= p.residual || p.window <= p.residual + 1u);
            ck_assert_msg(kvq_case_valid(&c) == ok, "valid %d ok %d bits %u G %u meta %u R %u W %u cap %u vt %u a %u steps %u d %u npat %u room %u fin %llu", kvq_case_valid(&c), ok, in->p.bits, in->p.group, in->p.meta, in->p.residual, in->p.window, in->p.cap, in->p.v_threshold, in->p.alpha, in->steps, in->dim, in->npat, in->room, (unsigned long long)fin);
            nvalid[2] += ok;
            nempty += ok && in->npat == 0u;
            ck_assert_uint_eq(kvq_count(&c, field(op, "bank_end", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_pkv_bank_bytes((uint32_t)fin, in->dim) / 4u : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? nq * kvq_kivi_code_bytes(&ks) : 0u);
        }
        kvq_case_free(&c);
    }
    /* the draws reach valid cases of every operation (an empty initial bank among them) */
    ck_assert(ncases < 3000u || (nvalid[0] > ncases / 100u && nvalid[1] > ncases / 100u && nvalid[2] > ncases / 100u &&
                                 nempty > 0u));
}
END_TEST

START_TEST(vidkv_rules_match_the_layout)
{
    /* SPEC: [VER-REG-08] [VEC-VIDKV-02] -- the VIDKV rules are kvq_vidkv_params_ok,
     * _shape_ok, the STP ranges and the layout's sizes */
    static const float FR[] = { 0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 0.3f, -0.25f, 1.5f };
    kvq_rng g;
    kvq_case c;
    g.s = seed + 3;
    for (uint64_t n = 0; n < ncases; n++) {
        const kvq_op *op = n % 3u == 0u ? &kvq_op_vidkv_keys : n % 3u == 1u ? &kvq_op_vidkv_values
                                                                              : &kvq_op_vidkv_stream;
        kvq_vidkv_case_in *in;
        kvq_vidkv_params *p;
        int ok;
        ck_assert_int_eq(kvq_case_begin(&c, op), KVQ_OK);
        in = c.in;
        p = &in->prm;
        p->heads = rng32(&g) % 4u ? 1u + rng32(&g) % 8u : draw(&g, 1100u);
        p->dim = rng32(&g) % 4u ? 1u + rng32(&g) % 40u : draw(&g, 1100u);
        p->group = rng32(&g) % 4u ? 8u << (rng32(&g) % 4u) : draw(&g, 4200u);
        p->tokens = rng32(&g) % 4u ? p->group * (rng32(&g) % 5u) : draw(&g, 1u << 24);
        p->meta = rng32(&g) % 7u;
        p->meta = p->meta > 2u ? p->meta % 2u : p->meta;
        p->split = rng32(&g) % 5u % 3u;
        p->normal = rng32(&g) % 6u;
        p->vdeq = rng32(&g) % 5u % 3u;
        p->vpack = rng32(&g) % 5u % 3u;
        p->kflush = rng32(&g) % 5u % 3u;
        p->vflush = rng32(&g) % 5u % 3u;
        p->key_frac = FR[rng32(&g) % 8u];
        p->gamma = rng32(&g) % 8u ? 0.7f : rng32(&g) % 2u ? NAN : 17.0f;
        p->protect = rng32(&g) % 2u ? 0.0f : FR[rng32(&g) % 8u];
        in->rows = p->tokens + rng32(&g) % 4u;
        in->sdim = rng32(&g) % 8u;
        in->vis_first = rng32(&g) % (p->tokens / 2u + 1u);
        in->vis_count = rng32(&g) % (p->tokens / 2u + 2u);
        in->txt_first = rng32(&g) % (in->rows + 1u);
        in->txt_count = rng32(&g) % 4u;
        in->prefill = rng32(&g) % 100u;
        in->decode = rng32(&g) % 100u;
        ok = kvq_vidkv_params_ok(p) && kvq_vidkv_shape_ok(p);
        if (op == &kvq_op_vidkv_keys) {
            kvq_vidkv_params q = kvq_vidkv_params_default(p->heads, p->tokens, p->dim);
            q.group = p->group, q.meta = p->meta, q.split = p->split, q.normal = p->normal;
            q.key_frac = p->key_frac;
            c.level = rng32(&g) % 2u;
            ok = kvq_vidkv_params_ok(&q) && kvq_vidkv_shape_ok(&q) &&
                 (c.level == KVQ_LEVEL_BOUNDED || kvq_vidkv_normal_mode(&q) != KVQ_VIDKV_NORMAL_FFT);
            in->abnormal = ok ? kvq_vidkv_n_abn(&q) : 0u;
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            ck_assert_uint_eq(kvq_count(&c, field(op, "mask", KVQ_ROLE_OUTPUT), NULL), ok ? kvq_vidkv_mask_bytes(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "abn_codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_vidkv_abn_code_bytes(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "abn_scale", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_vidkv_abn_groups(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "nrm_codes", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_vidkv_nrm_code_bytes(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "nrm_scale", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_vidkv_nrm_groups(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "nrm_zero", KVQ_ROLE_OUTPUT), NULL),
                              ok && kvq_vidkv_nrm_meta_per_group(&q) == 2u ? kvq_vidkv_nrm_groups(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "amb", KVQ_ROLE_REFERENCE), NULL),
                              ok && kvq_vidkv_normal_mode(&q) == KVQ_VIDKV_NORMAL_FFT
                                  ? (uint64_t)q.heads * q.tokens * kvq_vidkv_nrm_per_block(&q) : 0u);
        } else if (op == &kvq_op_vidkv_values) {
            kvq_vidkv_params q = kvq_vidkv_params_default(p->heads, p->tokens, p->dim);
            int stp;
            q.group = p->group, q.meta = p->meta, q.vdeq = p->vdeq, q.vpack = p->vpack;
            q.gamma = p->gamma, q.protect = p->protect;
            stp = q.protect > 0.0f;
            c.level = rng32(&g) % 2u;
            ok = kvq_vidkv_params_ok(&q) && kvq_vidkv_shape_ok(&q) &&
                 (c.level == KVQ_LEVEL_EXACT || q.vdeq == KVQ_VIDKV_VDEQ_RAW) &&
                 (!stp || (in->sdim >= 1u && in->sdim <= KVQ_VIDKV_MAX_SDIM && in->rows >= q.tokens &&
                           in->rows <= KVQ_VIDKV_MAX_TOKENS && in->vis_count >= 1u &&
                           (uint64_t)in->vis_first + in->vis_count <= q.tokens && in->txt_count >= 1u &&
                           (uint64_t)in->txt_first + in->txt_count <= in->rows));
            in->protect_n = ok && stp ? kvq_vidkv_prot_count(q.protect, in->vis_count) : 0u;
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            ck_assert_uint_eq(kvq_count(&c, field(op, "tern", KVQ_ROLE_OUTPUT), NULL),
                              ok ? kvq_vidkv_tern_code_bytes(&q, in->protect_n) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "beta", KVQ_ROLE_OUTPUT), NULL),
                              ok && q.vdeq == KVQ_VIDKV_VDEQ_SCALED ? kvq_vidkv_tern_groups(&q, in->protect_n) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "prot", KVQ_ROLE_OUTPUT), NULL),
                              ok && stp ? kvq_vidkv_prot_mask_bytes(&q) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "p_codes", KVQ_ROLE_OUTPUT), NULL),
                              ok && stp ? kvq_vidkv_prot_code_bytes(&q, in->protect_n) : 0u);
            ck_assert_uint_eq(kvq_count(&c, field(op, "p_scale", KVQ_ROLE_OUTPUT), NULL),
                              ok && stp ? kvq_vidkv_prot_groups(&q, in->protect_n) : 0u);
        } else {
            kvq_vidkv_params q = *p;
            uint64_t N = (uint64_t)in->prefill + in->decode, tp = in->prefill - in->prefill % (q.group ? q.group : 1u);
            q.tokens = q.group;
            ok = kvq_vidkv_params_ok(&q) && kvq_vidkv_shape_ok(&q) && N >= q.group && N <= KVQ_VIDKV_MAX_TOKENS &&
                 kvq_vidkv_normal_mode(&q) != KVQ_VIDKV_NORMAL_FFT &&
                 (!(q.protect > 0.0f) ||
                  (in->sdim >= 1u && in->sdim <= KVQ_VIDKV_MAX_SDIM && in->rows >= tp && in->vis_count >= 1u &&
                   in->vis_first + (uint64_t)in->vis_count <= tp && in->txt_count >= 1u &&
                   (uint64_t)in->txt_first + in->txt_count <= in->rows));
            ck_assert_int_eq(kvq_case_valid(&c), ok);
            ck_assert_uint_eq(kvq_count(&c, field(op, "keys", KVQ_ROLE_OUTPUT), NULL),
                              ok ? (uint64_t)q.heads * (N - N % q.group) * q.dim : 0u);
        }
        kvq_case_free(&c);
    }
}
END_TEST

static Suite *rule_suite(void)
{
    Suite *s = suite_create("rule");
    TCase *t = tcase_create("language");
    tcase_add_test(t, syntax_errors_name_rule_and_column);
    tcase_add_test(t, evaluation_is_exact_c);
    tcase_add_test(t, count_rules_read_their_record);
    tcase_add_test(t, registry_rules_parse);
    suite_add_tcase(s, t);
    t = tcase_create("families");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, kivi_rules_match_the_layout);
    tcase_add_test(t, cert_rules_match_the_layout);
    tcase_add_test(t, sage_rules_match_the_layout);
    tcase_add_test(t, pkv_rules_match_the_layout);
    tcase_add_test(t, vidkv_rules_match_the_layout);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return kvq_check_main("check_rule", rule_suite(), &seed, &ncases);
}
