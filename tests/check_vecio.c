/*
 * check_vecio.c -- Check suite for the vector/results formats and the verdict
 * rules (spec/vectors.md).
 *
 * Expected values are never copied from the code under test: vectors come from
 * the exact path, subjects are the fast path or deliberate edits of its output,
 * and each malformed input names the line and field it breaks.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "families/cert.h"
#include "families/kivi.h"
#include "kvq_bits.h"
#include "kvq_exact.h"

static kvq_vfile smoke;

/* The typed structs of a kivi-quant case (families/kivi.h). */
static const kvq_kivi_in *kin(const kvq_case *c)
{
    ck_assert_ptr_eq(c->op, &kvq_op_kivi_quant);
    return (const kvq_kivi_in *)c->in;
}

static const kvq_kivi_out *kexp(const kvq_case *c)
{
    ck_assert_ptr_eq(c->op, &kvq_op_kivi_quant);
    ck_assert_int_eq(c->status, KVQ_OK);
    ck_assert_ptr_nonnull(c->exp);
    return (const kvq_kivi_out *)c->exp;
}

static const kvq_kivi_ref *kref(const kvq_case *c)
{
    ck_assert_ptr_eq(c->op, &kvq_op_kivi_quant);
    ck_assert_int_eq(c->status, KVQ_OK);
    ck_assert_ptr_nonnull(c->ref);
    return (const kvq_kivi_ref *)c->ref;
}

static void setup_smoke(void)
{
    char err[512];
    const kvq_family *kivi = kvq_family_find("kivi");
    ck_assert_ptr_nonnull(kivi);
    ck_assert_int_eq(kvq_gen(&smoke, kivi, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
}

static void teardown_smoke(void)
{
    kvq_vfile_free(&smoke);
}

/* Serialise a vector file into memory. */
static char *write_mem(const kvq_vfile *vf, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(kvq_vec_write(f, vf), KVQ_OK);
    fclose(f);
    return buf;
}

/* ---- round trip ---------------------------------------------------------------- */

START_TEST(roundtrip_bitwise)
{
    /* SPEC: [VEC-FMT-01] -- parse(write(v)) holds the same bits, and writes the same bytes. */
    size_t len, len2;
    char *text = write_mem(&smoke, &len), *text2, err[512];
    kvq_vfile back;
    ck_assert_int_eq(kvq_vec_parse(&back, text, len, "mem", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(back.ncases, smoke.ncases);
    ck_assert_uint_eq(back.seed, smoke.seed);
    ck_assert_ptr_eq(back.family, smoke.family);
    for (size_t k = 0; k < smoke.ncases; k++) {
        const kvq_case *a = &smoke.cases[k], *b = &back.cases[k];
        const kvq_kivi_in *ai = kin(a), *bi = kin(b);
        const kvq_kivi_out *ae, *be;
        const kvq_kivi_ref *ar, *br;
        uint64_t n = kvq_kivi_elems(&ai->shape);
        ck_assert_str_eq(a->id, b->id);
        ck_assert_ptr_eq(a->op, b->op);
        ck_assert_uint_eq(a->level, b->level);
        ck_assert_int_eq(memcmp(&a->pol, &b->pol, sizeof a->pol), 0);
        ck_assert_int_eq(a->status, b->status);
        ck_assert_uint_eq(a->flags, b->flags);
        ck_assert_int_eq(memcmp(&ai->shape, &bi->shape, sizeof ai->shape), 0);
        for (uint64_t e = 0; e < n; e++) ck_assert(kvq_f32_same(ai->x[e], bi->x[e]));
        if (a->status != KVQ_OK) continue;
        ae = kexp(a), be = kexp(b), ar = kref(a), br = kref(b);
        ck_assert_int_eq(memcmp(ae->codes, be->codes, kvq_kivi_code_bytes(&ai->shape)), 0);
        ck_assert_int_eq(memcmp(ar->real, br->real, kvq_kivi_code_bytes(&ai->shape)), 0);
        for (uint64_t g = 0; g < kvq_kivi_groups(&ai->shape); g++) {
            ck_assert(kvq_f32_same(ae->scale[g], be->scale[g]));
            ck_assert(kvq_f32_same(ae->zero[g], be->zero[g]));
        }
        for (uint64_t e = 0; e < n; e++) ck_assert(kvq_f32_same(ae->deq[e], be->deq[e]));
        ck_assert_uint_eq(ar->amb.n, br->amb.n);
        for (uint64_t i = 0; i < ar->amb.n; i++) {
            ck_assert_uint_eq(ar->amb.idx[i], br->amb.idx[i]);
            ck_assert_uint_eq(ar->amb.alt[i], br->amb.alt[i]);
        }
    }
    text2 = write_mem(&back, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert_int_eq(memcmp(text, text2, len), 0);
    kvq_vfile_free(&back);
    free(text);
    free(text2);
}
END_TEST

START_TEST(gen_is_deterministic_and_sharded)
{
    /* SPEC: [VEC-GEN-01] -- same seed, same bytes; shard i/n holds ordinals i mod n. */
    kvq_vfile again, sh;
    size_t l1, l2;
    char err[512], *t1, *t2;
    const kvq_family *kivi = kvq_family_find("kivi");
    ck_assert_ptr_nonnull(kivi);
    ck_assert_int_eq(kvq_gen(&again, kivi, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    t1 = write_mem(&smoke, &l1);
    t2 = write_mem(&again, &l2);
    ck_assert_uint_eq(l1, l2);
    ck_assert_int_eq(memcmp(t1, t2, l1), 0);
    ck_assert_int_eq(kvq_gen(&sh, kivi, "smoke", 0x6b7671u, 2, 5, err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(sh.ncases, (smoke.ncases - 2 + 4) / 5);
    for (size_t k = 0; k < sh.ncases; k++) ck_assert_str_eq(sh.cases[k].id, smoke.cases[2 + 5 * k].id);
    kvq_vfile_free(&sh);
    ck_assert_int_eq(kvq_gen(&sh, kivi, "smoke", 1, 5, 5, err, sizeof err), KVQ_E_PARAM);
    ck_assert_int_eq(kvq_gen(&sh, kivi, "huge", 1, 0, 1, err, sizeof err), KVQ_E_PARAM);
    kvq_vfile_free(&again);
    free(t1);
    free(t2);
}
END_TEST

/* ---- the CERT family ------------------------------------------------------------ */

static kvq_verify_report verify_text(const kvq_vfile *vf, const char *text, size_t len,
                                     unsigned mask);

/* Results of the built-in ref-fast subject (fast path) for every case of a
 * CERT file, written as the child writes them; tamper: 1 a bounded key code
 * moved off its real code and alternative, 2 a bounded eta set to 0, 3 a step's
 * E_key claim halved, 4 a case skipped.  Returns the tampered case's index in
 * *which (or SIZE_MAX). */
static char *cert_results(const kvq_vfile *vf, size_t *len, int tamper, size_t *which)
{
    const kvq_subject_v3 *api = kvq_subject_builtin("ref-fast");
    kvq_cert_quantize_keys_v1_fn qkeys;
    kvq_cert_quantize_values_v1_fn qvalues;
    kvq_cert_annotate_v1_fn annotate;
    kvq_cert_step_v2_fn step;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    *which = SIZE_MAX;
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(api);
    ck_assert_uint_eq(api->abi, KVQ_SUBJECT_ABI_V3);
    qkeys = (kvq_cert_quantize_keys_v1_fn)api->lookup("cert_quantize_keys", 1);
    qvalues = (kvq_cert_quantize_values_v1_fn)api->lookup("cert_quantize_values", 1);
    annotate = (kvq_cert_annotate_v1_fn)api->lookup("cert_annotate", 1);
    step = (kvq_cert_step_v2_fn)api->lookup("cert_step", 2);
    ck_assert(qkeys != NULL && qvalues != NULL && annotate != NULL && step != NULL);
    ck_assert_int_eq(kvq_res_write_header(f, "ref-fast", NULL), KVQ_OK);
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_case *c = &vf->cases[k];
        const kvq_cert_in *in = c->in;
        const kvq_cert_shape *s = &in->shape;
        uint32_t nb = kvq_cert_blocks(s) + 1u, fl = 0;
        kvq_cert_keys_out ko;
        kvq_cert_values_out vo;
        kvq_cert_step_out so;
        const void *out;
        int st, mine = 0;
        memset(&ko, 0, sizeof ko);
        memset(&vo, 0, sizeof vo);
        memset(&so, 0, sizeof so);
        if (c->op == &kvq_op_cert_keys) {
            uint64_t nm = kvq_cert_key_meta_count(s), nc = kvq_cert_key_code_bytes(s);
            ko.codes = calloc(nc + 1, 1), ko.sigma = calloc(nm + 1, sizeof(float));
            ko.z = calloc(nm + 1, sizeof(float));
            ck_assert(ko.codes && ko.sigma && ko.z);
            st = qkeys((int8_t *)ko.codes, ko.sigma, ko.z, &fl, in->k, s, &c->pol);
            if (tamper == 1 && *which == SIZE_MAX && st == KVQ_OK && c->level == KVQ_LEVEL_BOUNDED && nc > 0) {
                const kvq_cert_quant_ref *ref = c->ref;
                ko.codes[0] = (uint8_t)(ref->real[0] ^ 0x40u); /* neither the real code nor a neighbour */
                mine = 1;
            }
            out = &ko;
        } else if (c->op == &kvq_op_cert_values) {
            uint64_t nm = kvq_cert_value_groups(s), nc = kvq_cert_value_code_bytes(s);
            vo.codes = calloc(nc + 1, 1), vo.scale = calloc(nm + 1, sizeof(float));
            vo.zero = calloc(nm + 1, sizeof(float)), vo.eta = calloc(nb, sizeof(float));
            vo.nu = calloc(nb, sizeof(float));
            ck_assert(vo.codes && vo.scale && vo.zero && vo.eta && vo.nu);
            st = qvalues(vo.codes, vo.scale, vo.zero, &fl, in->v, s, &c->pol);
            if (st == KVQ_OK) st = annotate(vo.eta, vo.nu, in->v, vo.codes, vo.scale, vo.zero, s);
            if (tamper == 2 && *which == SIZE_MAX && st == KVQ_OK && c->level == KVQ_LEVEL_BOUNDED &&
                kvq_cert_full_blocks(s) > 0 && ((const kvq_cert_values_out *)c->exp)->eta[0] > 0.0f) {
                vo.eta[0] = 0.0f;
                mine = 1;
            }
            out = &vo;
        } else {
            ck_assert_ptr_eq(c->op, &kvq_op_cert_step);
            so.out = calloc(s->dim + 1u, sizeof(float));
            so.sel = calloc(nb, 1), so.prom = calloc(nb, 1);
            ck_assert(so.out && so.sel && so.prom);
            kvq_cert_params prm = in->prm;
            prm.variant = c->variant;            /* as the runner calls it [CERT-VAR-02] */
            st = step(so.out, so.sel, so.prom, &so.rec, &so.decl, &so.delta1, in->q, in->qscale, in->k,
                      in->v, &prm, s, &c->pol);
            if (tamper == 3 && *which == SIZE_MAX && st == KVQ_OK && so.rec.rung < 3u && so.rec.ekey > 0.0f) {
                so.rec.ekey *= 0.5f;
                mine = 1;
            }
            out = &so;
        }
        if (tamper == 4 && *which == SIZE_MAX && c->op == &kvq_op_cert_step) {
            ck_assert_int_eq(kvq_res_write_skip(f, c->id, "no-entry"), KVQ_OK);
            *which = k;
        } else {
            ck_assert_int_eq(kvq_res_write(f, c, st, fl, out), KVQ_OK);
        }
        if (mine) *which = k;
        free(ko.codes), free(ko.sigma), free(ko.z);
        free(vo.codes), free(vo.scale), free(vo.zero), free(vo.eta), free(vo.nu);
        free(so.out), free(so.sel), free(so.prom);
    }
    fclose(f);
    return buf;
}

START_TEST(cert_roundtrip_and_verdicts)
{
    /* SPEC: [VEC-CERT-01] [VEC-CERT-02] [VEC-CERT-03] [VEC-CERT-05] [VEC-CERT-06] [VEC-CERT-07]
     * [VER-CERT-03] [VER-CERT-04] [VER-CERT-05] [CERT-K8-06] [CERT-ANN-03] [CERT-CON-02] --
     * the cert family round-trips bit for bit and is deterministic; the fast path
     * passes every case; each tampering fails exactly its case with its reason; a
     * skipped case is SKIP, not PASS. */
    static const char *const WANT[5] = { NULL, "code of element", "eta[block 0]: below the exact value",
                                         "claims: ", "skipped by the subject" };
    kvq_vfile vf, back, again;
    size_t len, len2, rlen, which;
    char err[512], *text, *text2, *res;
    const kvq_family *cert = kvq_family_find("cert");
    ck_assert_ptr_nonnull(cert);
    ck_assert_int_eq(kvq_gen(&vf, cert, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    ck_assert_int_eq(kvq_gen(&again, cert, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    text = write_mem(&vf, &len);
    text2 = write_mem(&again, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert_int_eq(memcmp(text, text2, len), 0);
    free(text2);
    kvq_vfile_free(&again);
    ck_assert_int_eq(kvq_vec_parse(&back, text, len, "c.vec", err, sizeof err), KVQ_OK);
    ck_assert_ptr_eq(back.family, cert);
    text2 = write_mem(&back, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert_int_eq(memcmp(text, text2, len), 0);
    free(text2);
    kvq_vfile_free(&back);
    free(text);
    for (int t = 0; t < 5; t++) {
        kvq_verify_report rep;
        res = cert_results(&vf, &rlen, t, &which);
        rep = verify_text(&vf, res, rlen, KVQ_LEVELS_ALL);
        if (t == 0) {
            ck_assert_uint_eq(rep.passed, vf.ncases);
            ck_assert_uint_eq(rep.failed + rep.skipped, 0);
        } else {
            ck_assert_msg(which != SIZE_MAX, "tampering %d found no case", t);
            ck_assert_uint_eq(rep.passed, vf.ncases - 1);
            ck_assert_uint_eq(t == 4 ? rep.skipped : rep.failed, 1);
            ck_assert_int_eq(rep.v[which].outcome, t == 4 ? KVQ_SKIP : KVQ_FAIL);
            ck_assert_msg(strstr(rep.v[which].detail, WANT[t]) != NULL, "'%s' lacks '%s'",
                          rep.v[which].detail, WANT[t]);
        }
        kvq_verify_report_free(&rep);
        free(res);
    }
    kvq_vfile_free(&vf);
}
END_TEST

START_TEST(gen_covers_the_parameter_space)
{
    /* SPEC: [VEC-GEN-02] -- every bit width, grouping, metadata format, level, an
     * error case of each kind, ambiguous elements and exact ties are present. */
    int seen[4][2][2][2] = { { { { 0 } } } }, errs[KVQ_STATUS_COUNT] = { 0 };
    uint64_t amb = 0;
    for (size_t k = 0; k < smoke.ncases; k++) {
        const kvq_case *c = &smoke.cases[k];
        const kvq_kivi_shape *sh = &kin(c)->shape;
        int bi = sh->bits == 1 ? 0 : sh->bits == 2 ? 1 : sh->bits == 4 ? 2 : 3;
        if (c->status != KVQ_OK) { errs[c->status]++; continue; }
        seen[bi][sh->grouping][sh->meta][c->level]++;
        amb += kref(c)->amb.n;
    }
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int m = 0; m < 2; m++)
                for (int l = 0; l < 2; l++) ck_assert_int_gt(seen[a][b][m][l], 0);
    ck_assert_int_gt(errs[KVQ_E_NONFINITE], 0);
    ck_assert_int_gt(errs[KVQ_E_SHAPE], 0);
    ck_assert_int_gt(errs[KVQ_E_PARAM], 0);
    ck_assert_int_gt(errs[KVQ_E_RANGE], 0);
    ck_assert_uint_gt(amb, 0);
}
END_TEST

/* ---- malformed input: every error names file and line --------------------------- */

static const char *HDR = "kvq-vectors 1\nfamily kivi\nlevels smoke\nseed 0x0000000000000001\ngenerator t\n";

/* A valid error-case line (no outputs): 8 tokens x 8 channels would need G | 8. */
static const char *ERRCASE =
    "case id=e1 level=exact op=kivi-quant bits=3 group=8 grouping=token meta=f32 tokens=1 "
    "channels=8 ties=even overflow=saturate subnormal=keep status=3 flags=0x00000000 "
    "x=3f8000003f8000003f8000003f8000003f8000003f8000003f8000003f800000\n";

static void expect_format_error(const char *text, const char *want)
{
    kvq_vfile vf;
    char err[512] = "";
    kvq_status st = kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err);
    ck_assert_msg(st == KVQ_E_FORMAT, "status %d for input expecting '%s'", st, want);
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
    ck_assert_uint_eq(vf.ncases, 0);
    ck_assert_ptr_null(vf.cases);
}

START_TEST(malformed_vectors)
{
    /* SPEC: [VEC-FMT-02] -- strict reader; "file:line: what". */
    char buf[4096];
    kvq_vfile vf;
    char err[512];
    /* the base text is valid */
    snprintf(buf, sizeof buf, "%s%s", HDR, ERRCASE);
    ck_assert_int_eq(kvq_vec_parse(&vf, buf, strlen(buf), "t.vec", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(vf.ncases, 1);
    kvq_vfile_free(&vf);

    expect_format_error("", "t.vec:1: empty file");
    expect_format_error("kvq-results 1\n", "t.vec:1: not a kvq-vectors file");
    expect_format_error("kvq-vectors 9\n", "t.vec:1: unsupported version");
    expect_format_error("kvq-vectors 1\nfamily nope\n", "t.vec:2: unknown family");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels huge\n", "t.vec:3: unknown level set");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels smoke\nseed 12\n", "t.vec:4: seed must be");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels smoke\nseed 0x0000000000000001\n", "missing header line 'generator'");
    snprintf(buf, sizeof buf, "%s", HDR);
    expect_format_error(buf, "no cases");
    /* an empty shard: no case, and its end line says so [VEC-GEN-03] */
    snprintf(buf, sizeof buf, "%send 0 fnv1a64:cbf29ce484222325\n", HDR);
    ck_assert_int_eq(kvq_vec_parse(&vf, buf, strlen(buf), "t.vec", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(vf.ncases, 0);
    ck_assert_int_eq(vf.trailer, 1);
    kvq_vfile_free(&vf);
    snprintf(buf, sizeof buf, "%send 0 fnv1a64:cbf29ce484222324\n", HDR);
    expect_format_error(buf, "t.vec:6: the case lines' digest is fnv1a64:cbf29ce484222325");
    snprintf(buf, sizeof buf, "%s\n# comment\nbogus line\n", HDR);
    expect_format_error(buf, "t.vec:8: expected a 'case' line");
#define MUTATE(from, to, want)                                                   \
    do {                                                                         \
        char line_[2048];                                                        \
        const char *p_ = strstr(ERRCASE, from);                                  \
        ck_assert_ptr_nonnull(p_);                                               \
        snprintf(line_, sizeof line_, "%.*s%s%s", (int)(p_ - ERRCASE), ERRCASE, to, \
                 p_ + strlen(from));                                             \
        snprintf(buf, sizeof buf, "%s%s", HDR, line_);                           \
        expect_format_error(buf, want);                                          \
    } while (0)
    MUTATE("id=e1", "id=e/1", "t.vec:6: bad case id");
    MUTATE("level=exact", "level=loose", "t.vec:6: level: unknown value");
    MUTATE("op=kivi-quant", "op=sage", "t.vec:6: op: unknown operation");
    MUTATE("bits=3", "bits=x", "t.vec:6: bits: 'x' is not a decimal number");
    MUTATE("bits=3", "bits=99999999999", "t.vec:6: bits: '99999999999' is not a decimal number");
    MUTATE("bits=3", "bits=3x", "t.vec:6: bits: '3x' is not a decimal number");
    MUTATE("group=8", "group=-8", "t.vec:6: group: '-8' is not a decimal number");
    MUTATE("tokens=1 ", "tokens=1.0 ", "t.vec:6: tokens: '1.0' is not a decimal number");
    MUTATE("channels=8 ", "channels= ", "t.vec:6: channels: '' is not a decimal number");
    MUTATE("grouping=token", "grouping=row", "t.vec:6: grouping: unknown value");
    MUTATE("meta=f32", "meta=f8", "t.vec:6: meta: unknown value");
    MUTATE("ties=even", "ties=odd", "t.vec:6: ties: unknown value");
    MUTATE("status=3", "status=77", "t.vec:6: status:");
    MUTATE("flags=0x00000000", "flags=0x0000", "t.vec:6: flags:");
    MUTATE("flags=0x00000000", "flags=0x00000100", "t.vec:6: flags:");
    MUTATE("x=3f800000", "x=3f80000", "t.vec:6: x: 63 hex digits, expected 64");
    MUTATE("x=3f800000", "x=3g800000", "t.vec:6: x: bad hex digit in value 0");
    MUTATE("tokens=1 ", "", "t.vec:6: missing key 'tokens'");
    MUTATE("tokens=1 ", "tokens=1 tokens=1 ", "t.vec:6: key 'tokens' given twice");
    MUTATE("tokens=1 ", "colour=red ", "t.vec:6: unknown key 'colour'");
    MUTATE("tokens=1 ", "tokens ", "t.vec:6: field 'tokens' is not key=value");
    MUTATE("status=3", "status=3 codes=00", "t.vec:6: key 'codes' given for a case that expects an error");
    {
        /* SPEC: [VER-REG-10] -- an infinity in an error case's input reads */
        kvq_vfile vf_;
        char err_[512], *x_;
        snprintf(buf, sizeof buf, "%s%s", HDR, ERRCASE);
        x_ = strstr(buf, " x=");
        ck_assert_ptr_nonnull(x_);
        memcpy(x_ + 3, "7f800000", 8);
        ck_assert_int_eq(kvq_vec_parse(&vf_, buf, strlen(buf), "t.vec", err_, sizeof err_), KVQ_OK);
        kvq_vfile_free(&vf_);
    }
    /* SPEC: [VER-REG-09] -- status 0 needs the rule valid; the first false conjunct is named */
    MUTATE("status=3", "status=0", "t.vec:6: parameters or shape not valid for a status-0 case: 'bits == 1 || bits == 2 || bits == 4 || bits == 8' is false (rule valid of kivi-quant)");
    /* SPEC: [VER-REG-08] -- a count above the file limit, named with its rule */
    MUTATE("tokens=1 channels=8 ", "tokens=100000 channels=100000 ", "t.vec:6: x: 10000000000 values, more than 16777216 (count 'tokens * channels')");
    /* duplicate ids */
    snprintf(buf, sizeof buf, "%s%s%s", HDR, ERRCASE, ERRCASE);
    expect_format_error(buf, "t.vec:7: case id 'e1' repeats line 6");
    /* a NUL byte */
    {
        char nul[] = "kvq-vectors 1\n\0";
        kvq_status st = kvq_vec_parse(&vf, nul, sizeof nul, "t.vec", err, sizeof err);
        ck_assert_int_eq(st, KVQ_E_FORMAT);
        ck_assert_ptr_nonnull(strstr(err, "NUL byte"));
    }
#undef MUTATE
}
END_TEST

START_TEST(malformed_status0_fields)
{
    /* SPEC: [VEC-FMT-03] -- output fields of a status-0 case are checked against the shape. */
    const kvq_case *c = NULL;
    kvq_vfile one, vf;
    size_t len;
    char *text, *p, err[512];
    for (size_t k = 0; k < smoke.ncases && c == NULL; k++)
        if (smoke.cases[k].status == KVQ_OK && kref(&smoke.cases[k])->amb.n > 0) c = &smoke.cases[k];
    ck_assert_ptr_nonnull(c);
    memset(&one, 0, sizeof one);
    one = smoke;
    one.cases = (kvq_case *)c;
    one.ncases = 1;
    text = write_mem(&one, &len);
    ck_assert_int_eq(kvq_vec_parse(&vf, text, len, "t.vec", err, sizeof err), KVQ_OK);
    kvq_vfile_free(&vf);
    /* shorten codes by one byte */
    p = strstr(text, " codes=");
    ck_assert_ptr_nonnull(p);
    memmove(p + 7, p + 9, strlen(p + 9) + 1);
    ck_assert_int_eq(kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err), KVQ_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "t.vec:6: codes:"));
    free(text);
    /* amb out of order */
    text = write_mem(&one, &len);
    p = strstr(text, " amb=");
    ck_assert_ptr_nonnull(p);
    strcpy(p, " amb=5:1,3:1\n");
    ck_assert_int_eq(kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err), KVQ_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "t.vec:6: amb: indices not strictly increasing"));
    strcpy(p, " amb=3:999\n");
    ck_assert_int_eq(kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err), KVQ_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "amb: alternative code 999 exceeds"));
    strcpy(p, " amb=3\n");
    ck_assert_int_eq(kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err), KVQ_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "is not index:alt"));
    free(text);
    /* SPEC: [VER-REG-10] -- a NaN or an infinity in a finite input of a status-0 case: file error
     * naming the field and the element; the same value in an error case reads */
    for (int inf = 0; inf < 2; inf++) {
        text = write_mem(&one, &len);
        p = strstr(text, " x=");
        ck_assert_ptr_nonnull(p);
        memcpy(p + 3 + 8, inf ? "ff800000" : "7fc00001", 8); /* element 1 */
        ck_assert_int_eq(kvq_vec_parse(&vf, text, strlen(text), "t.vec", err, sizeof err), KVQ_E_FORMAT);
        ck_assert_msg(strstr(err, inf ? "t.vec:6: x: element 1 is infinite (0xff800000) in a status-0 case"
                                      : "t.vec:6: x: element 1 is NaN (0x7fc00001) in a status-0 case") == err,
                      "%s", err);
        free(text);
    }
}
END_TEST

/* A results file of one line (after the header). */
static char *results_text(const char *line)
{
    size_t n = strlen(line) + 64;
    char *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    snprintf(t, n, "kvq-results 1\nsubject s\n%s\n", line);
    return t;
}

/* The result line of c's expected outputs (a status-0 kivi-quant case), with
 * the field `drop` removed and `add` appended. */
static char *mutated_result(const kvq_case *c, const char *drop, const char *add)
{
    char *buf = NULL, *out, *nl, *p;
    size_t len, n;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(kvq_res_write(f, c, KVQ_OK, c->flags & ~KVQ_FLAG_AMBIGUOUS, kexp(c)), KVQ_OK);
    fclose(f);
    nl = strchr(buf, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    if (drop != NULL) {
        char key[32], *end;
        snprintf(key, sizeof key, " %s=", drop);
        p = strstr(buf, key);
        ck_assert_ptr_nonnull(p);
        end = strchr(p + 1, ' ');
        if (end == NULL) *p = '\0';
        else memmove(p, end, strlen(end) + 1);
    }
    n = strlen(buf) + (add ? strlen(add) : 0) + 1;
    out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%s%s", buf, add ? add : "");
    free(buf);
    p = results_text(out);
    free(out);
    return p;
}

/* Verify a one-case file's results: the case's outcome and its detail. */
static void expect_verdict(const kvq_vfile *one, const char *res, int outcome, const char *want)
{
    kvq_verify_report rep = verify_text(one, res, strlen(res), KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.n, 1);
    ck_assert_int_eq(rep.v[0].outcome, outcome);
    ck_assert_uint_eq(rep.passed, outcome == KVQ_PASS);
    ck_assert_uint_eq(rep.failed, outcome == KVQ_FAIL);
    ck_assert_uint_eq(rep.skipped, outcome == KVQ_SKIP);
    if (want != NULL)
        ck_assert_msg(strstr(rep.v[0].detail, want) != NULL, "'%s' lacks '%s'", rep.v[0].detail, want);
    kvq_verify_report_free(&rep);
}

START_TEST(malformed_results)
{
    /* SPEC: [VEC-RES-01] [VEC-RES-02] [VER-CASE-02] */
    kvq_rfile rf;
    char err[512];
    const char *ok = "kvq-results 1\nsubject s\nresult id=a status=2\n";
    ck_assert_int_eq(kvq_res_parse(&rf, ok, strlen(ok), "r.res", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(rf.ncases, 1);
    ck_assert_int_eq(rf.cases[0].status, 2);
    kvq_rfile_free(&rf);
#define BAD(text, want)                                                                    \
    do {                                                                                   \
        ck_assert_int_eq(kvq_res_parse(&rf, text, strlen(text), "r.res", err, sizeof err), \
                         KVQ_E_FORMAT);                                                    \
        ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);            \
    } while (0)
    BAD("kvq-vectors 1\n", "r.res:1: not a kvq-results file");
    BAD("kvq-results 1\nsubject s\nresult status=0\n", "r.res:3: a result needs id= and status=");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1 flags=0x00000000\n", "r.res:3: key 'flags' given with a nonzero status");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1\nresult id=a status=1\n", "r.res:4: result for 'a' repeats line 3");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1\nunavailable x\n", "r.res:4: 'unavailable' must come alone");
    BAD("kvq-results 1\nsubject s\nwhatever\n", "r.res:3: expected a 'result' line");
#undef BAD
    /* Output fields are checked against the case's own operation when verify
     * decodes them [VEC-RES-02]: a missing or foreign output key (one of another
     * operation) fails that case, naming file, line and key. */
    {
        const kvq_case *c = NULL;
        kvq_vfile one = smoke;
        char *res, line[128];
        size_t k;
        for (k = 0; k < smoke.ncases && c == NULL; k++)
            if (smoke.cases[k].status == KVQ_OK) c = &smoke.cases[k];
        ck_assert_ptr_nonnull(c);
        one.cases = (kvq_case *)c;
        one.ncases = 1;
        /* the control: the expected outputs themselves pass */
        res = mutated_result(c, NULL, NULL);
        expect_verdict(&one, res, KVQ_PASS, NULL);
        free(res);
        /* status 0 without flags */
        snprintf(line, sizeof line, "result id=%s status=0", c->id);
        res = results_text(line);
        expect_verdict(&one, res, KVQ_FAIL, "unreadable outputs: r.res:3: missing key 'flags' (status 0)");
        free(res);
        /* one output field missing, one unknown, one of another operation */
        res = mutated_result(c, "deq", NULL);
        expect_verdict(&one, res, KVQ_FAIL, "unreadable outputs: r.res:3: missing key 'deq' (status 0)");
        free(res);
        /* a key no operation has is unknown: the file's error, named with its
         * line and the key (the spec's rule for every line) [VEC-RES-02] */
        res = mutated_result(c, NULL, " colour=00");
        ck_assert_int_eq(kvq_res_parse(&rf, res, strlen(res), "r.res", err, sizeof err), KVQ_E_FORMAT);
        ck_assert_msg(strstr(err, "r.res:3: unknown key 'colour'") != NULL, "'%s' lacks the key", err);
        free(res);
        res = mutated_result(c, NULL, " sigma=00000000");
        expect_verdict(&one, res, KVQ_FAIL, "unreadable outputs: r.res:3: key 'sigma' is not an output of kivi-quant");
        free(res);
        /* a malformed flags word is the case's failure too */
        res = mutated_result(c, "flags", " flags=0x0000");
        expect_verdict(&one, res, KVQ_FAIL, "unreadable outputs: r.res:3: flags:");
        free(res);
        /* a skipped kivi-quant case is SKIP (no entry is mandatory, kvq_subject.h), never PASS */
        snprintf(line, sizeof line, "result id=%s skipped=no-entry", c->id);
        res = results_text(line);
        expect_verdict(&one, res, KVQ_SKIP, "skipped by the subject: no-entry");
        free(res);
    }
}
END_TEST

/* ---- verdicts ------------------------------------------------------------------ */

/* Results of the fast path for every case of vf, as the child would write them. */
static char *fast_results(const kvq_vfile *vf, size_t *len, int tamper_case, int tamper_what)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(kvq_res_write_header(f, "ref-fast", NULL), KVQ_OK);
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_case *c = &vf->cases[k];
        const kvq_kivi_in *in = kin(c);
        uint64_t n = kvq_kivi_elems(&in->shape), ng = kvq_kivi_groups(&in->shape);
        kvq_kivi_out o;
        uint32_t fl = 0, dfl = 0;
        int st;
        memset(&o, 0, sizeof o);
        o.codes = calloc(kvq_kivi_code_bytes(&in->shape) + 1, 1);
        o.scale = calloc(ng + 1, sizeof *o.scale);
        o.zero = calloc(ng + 1, sizeof *o.zero);
        o.deq = calloc(n + 1, sizeof *o.deq);
        ck_assert(o.codes && o.scale && o.zero && o.deq);
        st = kvq_kivi_quantize(o.codes, o.scale, o.zero, &fl, in->x, &in->shape, &c->pol);
        if (st == KVQ_OK) st = kvq_kivi_dequantize(o.deq, &dfl, o.codes, o.scale, o.zero, &in->shape, &c->pol);
        if ((int)k == tamper_case && st == KVQ_OK) {
            if (tamper_what == 0) o.deq[0] = kvq_f32_from_bits(kvq_f32_bits(o.deq[0]) ^ 1u);
            if (tamper_what == 1) o.scale[0] = kvq_f32_from_bits(kvq_f32_bits(o.scale[0]) + 1u);
            if (tamper_what == 2) fl ^= KVQ_FLAG_CLAMPED;
        }
        ck_assert_int_eq(kvq_res_write(f, c, st, fl | dfl, &o), KVQ_OK);
        free(o.codes), free(o.scale), free(o.zero), free(o.deq);
    }
    fclose(f);
    return buf;
}

static kvq_verify_report verify_text(const kvq_vfile *vf, const char *text, size_t len,
                                     unsigned mask)
{
    kvq_rfile rf;
    kvq_verify_report rep;
    char err[512];
    ck_assert_int_eq(kvq_res_parse(&rf, text, len, "r.res", err, sizeof err), KVQ_OK);
    ck_assert_int_eq(kvq_verify(&rep, vf, "s.vec", &rf, "r.res", mask, NULL, 0), KVQ_OK);
    kvq_rfile_free(&rf);
    return rep;
}

static size_t first_ok_case(const kvq_vfile *vf, uint32_t level, uint32_t meta)
{
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_case *c = &vf->cases[k];
        if (c->status == KVQ_OK && c->level == level && kin(c)->shape.meta == meta &&
            !(c->flags & KVQ_FLAG_ZERO_SCALE))
            return k;
    }
    ck_abort_msg("no such case");
    return 0;
}

START_TEST(verdicts)
{
    /* SPEC: [VER-EX-01] [VER-EX-02] [VER-EX-04] [VER-BD-01] [VER-BD-02] [VER-BD-04] [KIVI-B-03] */
    size_t len, ke = first_ok_case(&smoke, KVQ_LEVEL_EXACT, KVQ_META_F32);
    size_t kb = first_ok_case(&smoke, KVQ_LEVEL_BOUNDED, KVQ_META_F32);
    char *text = fast_results(&smoke, &len, -1, 0);
    kvq_verify_report rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 0);
    ck_assert_uint_eq(rep.passed, smoke.ncases);
    kvq_verify_report_free(&rep);
    free(text);
    /* one ulp on a dequantized value: fails exact, passes bounded (within B) */
    text = fast_results(&smoke, &len, (int)ke, 0);
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert_ptr_nonnull(strstr(rep.v[ke].detail, "deq:"));
    kvq_verify_report_free(&rep);
    free(text);
    text = fast_results(&smoke, &len, (int)kb, 0);
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 0);
    kvq_verify_report_free(&rep);
    free(text);
    /* metadata off by one ulp fails both levels */
    text = fast_results(&smoke, &len, (int)kb, 1);
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert_ptr_nonnull(strstr(rep.v[kb].detail, "scale[group 0]: expected 0x"));
    kvq_verify_report_free(&rep);
    free(text);
    /* CLAMPED is compared at the exact level only */
    text = fast_results(&smoke, &len, (int)ke, 2);
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 1);
    ck_assert_ptr_nonnull(strstr(rep.v[ke].detail, "flags:"));
    kvq_verify_report_free(&rep);
    free(text);
    text = fast_results(&smoke, &len, (int)kb, 2);
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    ck_assert_uint_eq(rep.failed, 0);
    kvq_verify_report_free(&rep);
    /* level filter */
    rep = verify_text(&smoke, text, len, KVQ_LEVELS_MASK(KVQ_LEVEL_EXACT));
    ck_assert_uint_gt(rep.deselected, 0);
    ck_assert_uint_eq(rep.passed + rep.deselected, smoke.ncases);
    kvq_verify_report_free(&rep);
    free(text);
}
END_TEST

START_TEST(ambiguous_neighbour_accepted)
{
    /* SPEC: [KIVI-B-02] [VER-BD-03] [VER-EX-03] -- at an ambiguous element the bounded level accepts the
     * listed neighbour (and the exact level does not). */
    size_t k, len;
    kvq_case *c = NULL;
    char *buf = NULL;
    FILE *f;
    for (k = 0; k < smoke.ncases; k++)
        if (smoke.cases[k].status == KVQ_OK && kref(&smoke.cases[k])->amb.n > 0) { c = &smoke.cases[k]; break; }
    ck_assert_ptr_nonnull(c);
    for (int level = 0; level < 2; level++) {
        kvq_vfile one = smoke;
        const kvq_kivi_in *in = kin(c);
        const kvq_kivi_out *ex = kexp(c);
        const kvq_kivi_ref *ref = kref(c);
        kvq_kivi_out o;
        uint64_t e = ref->amb.idx[0], g;
        uint32_t i, fl = 0;
        kvq_verify_report rep;
        memset(&o, 0, sizeof o);
        c->level = (uint32_t)level;
        one.cases = c;
        one.ncases = 1;
        o.codes = malloc(kvq_kivi_code_bytes(&in->shape));
        o.scale = ex->scale;
        o.zero = ex->zero;
        o.deq = malloc(kvq_kivi_elems(&in->shape) * sizeof *o.deq);
        ck_assert(o.codes && o.deq);
        memcpy(o.codes, ref->real, kvq_kivi_code_bytes(&in->shape));
        g = kvq_kivi_group_of(&in->shape, e, &i);
        kvq_pack_code(o.codes + kvq_kivi_group_code_offset(&in->shape, g), i, in->shape.bits, ref->amb.alt[0]);
        ck_assert_int_eq(kvq_kivi_dequantize(o.deq, &fl, o.codes, o.scale, o.zero, &in->shape, &c->pol), KVQ_OK);
        f = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(kvq_res_write_header(f, "alt", NULL), KVQ_OK);
        ck_assert_int_eq(kvq_res_write(f, c, KVQ_OK, c->flags & ~KVQ_FLAG_AMBIGUOUS, &o), KVQ_OK);
        fclose(f);
        rep = verify_text(&one, buf, len, KVQ_LEVELS_ALL);
        if (level == KVQ_LEVEL_BOUNDED) ck_assert_uint_eq(rep.passed, 1);
        else ck_assert_uint_eq(rep.failed, 1);
        kvq_verify_report_free(&rep);
        free(buf);
        buf = NULL;
        free(o.codes);
        free(o.deq);
    }
}
END_TEST

START_TEST(reports_written)
{
    /* SPEC: [VER-REP-01] [VER-REP-02] */
    size_t len;
    char *text = fast_results(&smoke, &len, 0, 0), path[64], jpath[80], xpath[80];
    kvq_verify_report rep = verify_text(&smoke, text, len, KVQ_LEVELS_ALL);
    FILE *f;
    char line[256];
    int found = 0;
    snprintf(path, sizeof path, "/tmp/kvq-check-%ld", (long)getpid());
    snprintf(jpath, sizeof jpath, "%s.json", path);
    snprintf(xpath, sizeof xpath, "%s.xml", path);
    ck_assert_int_eq(kvq_report_json(jpath, &rep, NULL, 0), KVQ_OK);
    ck_assert_int_eq(kvq_report_junit(xpath, &rep, NULL, 0), KVQ_OK);
    f = fopen(jpath, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f)) found |= strstr(line, "\"failed\": 1") != NULL;
    fclose(f);
    ck_assert(found);
    f = fopen(xpath, "r");
    ck_assert_ptr_nonnull(f);
    found = 0;
    while (fgets(line, sizeof line, f)) found |= strstr(line, "<failure message=") != NULL;
    fclose(f);
    ck_assert(found);
    ck_assert_int_eq(kvq_report_json("/nonexistent-dir/x.json", &rep, NULL, 0), KVQ_E_IO);
    remove(jpath);
    remove(xpath);
    kvq_verify_report_free(&rep);
    free(text);
}
END_TEST

static Suite *vecio_suite(void)
{
    Suite *s = suite_create("vecio");
    TCase *t = tcase_create("roundtrip");
    tcase_add_checked_fixture(t, setup_smoke, teardown_smoke);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, roundtrip_bitwise);
    tcase_add_test(t, gen_is_deterministic_and_sharded);
    tcase_add_test(t, gen_covers_the_parameter_space);
    tcase_add_test(t, cert_roundtrip_and_verdicts);
    suite_add_tcase(s, t);
    t = tcase_create("bad_input");
    tcase_add_checked_fixture(t, setup_smoke, teardown_smoke);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, malformed_vectors);
    tcase_add_test(t, malformed_status0_fields);
    tcase_add_test(t, malformed_results);
    suite_add_tcase(s, t);
    t = tcase_create("verdicts");
    tcase_add_checked_fixture(t, setup_smoke, teardown_smoke);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, verdicts);
    tcase_add_test(t, ambiguous_neighbour_accepted);
    tcase_add_test(t, reports_written);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(vecio_suite());
    int failed;
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
