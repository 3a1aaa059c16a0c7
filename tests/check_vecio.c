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
#include "kvq_bits.h"
#include "kvq_exact.h"

static kvq_vfile smoke;

static void setup_smoke(void)
{
    char err[512];
    ck_assert_int_eq(kvq_gen_kivi(&smoke, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
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
    ck_assert_int_eq(kvq_vec_write_header(f, vf), KVQ_OK);
    for (size_t k = 0; k < vf->ncases; k++) ck_assert_int_eq(kvq_vec_write_case(f, &vf->cases[k]), KVQ_OK);
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
    for (size_t k = 0; k < smoke.ncases; k++) {
        const kvq_vcase *a = &smoke.cases[k], *b = &back.cases[k];
        uint64_t n = kvq_kivi_elems(&a->shape);
        ck_assert_str_eq(a->id, b->id);
        ck_assert_int_eq(a->status, b->status);
        ck_assert_uint_eq(a->flags, b->flags);
        ck_assert_int_eq(memcmp(&a->shape, &b->shape, sizeof a->shape), 0);
        for (uint64_t e = 0; e < n; e++) ck_assert(kvq_f32_same(a->x[e], b->x[e]));
        if (a->status != KVQ_OK) continue;
        ck_assert_int_eq(memcmp(a->codes, b->codes, kvq_kivi_code_bytes(&a->shape)), 0);
        ck_assert_int_eq(memcmp(a->real, b->real, kvq_kivi_code_bytes(&a->shape)), 0);
        for (uint64_t g = 0; g < kvq_kivi_groups(&a->shape); g++) {
            ck_assert(kvq_f32_same(a->scale[g], b->scale[g]));
            ck_assert(kvq_f32_same(a->zero[g], b->zero[g]));
        }
        for (uint64_t e = 0; e < n; e++) ck_assert(kvq_f32_same(a->deq[e], b->deq[e]));
        ck_assert_uint_eq(a->namb, b->namb);
        for (uint64_t i = 0; i < a->namb; i++) {
            ck_assert_uint_eq(a->amb_idx[i], b->amb_idx[i]);
            ck_assert_uint_eq(a->amb_alt[i], b->amb_alt[i]);
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
    ck_assert_int_eq(kvq_gen_kivi(&again, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    t1 = write_mem(&smoke, &l1);
    t2 = write_mem(&again, &l2);
    ck_assert_uint_eq(l1, l2);
    ck_assert_int_eq(memcmp(t1, t2, l1), 0);
    ck_assert_int_eq(kvq_gen_kivi(&sh, "smoke", 0x6b7671u, 2, 5, err, sizeof err), KVQ_OK);
    for (size_t k = 0; k < sh.ncases; k++) ck_assert_str_eq(sh.cases[k].id, smoke.cases[2 + 5 * k].id);
    kvq_vfile_free(&sh);
    ck_assert_int_eq(kvq_gen_kivi(&sh, "smoke", 1, 5, 5, err, sizeof err), KVQ_E_PARAM);
    ck_assert_int_eq(kvq_gen_kivi(&sh, "huge", 1, 0, 1, err, sizeof err), KVQ_E_PARAM);
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
    const kvq_subject_v2 *api = (const kvq_subject_v2 *)(const void *)kvq_subject_builtin("ref-fast");
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    *which = SIZE_MAX;
    ck_assert_uint_eq(api->v1.abi, KVQ_SUBJECT_ABI_V2);
    ck_assert_int_eq(kvq_res_write_header(f, "ref-fast", NULL), KVQ_OK);
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_vcase *c = &vf->cases[k];
        const kvq_cert_shape *s = &c->cshape;
        uint64_t nm = kvq_vcase_cert_meta_count(c), nc = kvq_vcase_cert_code_bytes(c);
        uint32_t nb = kvq_cert_blocks(s) + 1u, fl = 0;
        kvq_rout o;
        int st, mine = 0;
        memset(&o, 0, sizeof o);
        o.codes = calloc(nc + 1, 1), o.scale = calloc(nm + 1, sizeof(float));
        o.zero = calloc(nm + 1, sizeof(float)), o.eta = calloc(nb, sizeof(float));
        o.nu = calloc(nb, sizeof(float)), o.out = calloc(s->dim + 1u, sizeof(float));
        o.sel = calloc(nb, 1), o.prom = calloc(nb, 1);
        if (c->op == KVQ_OP_CERT_KEYS) {
            st = api->cert_quantize_keys((int8_t *)o.codes, o.scale, o.zero, &fl, c->x, s, &c->pol);
            if (tamper == 1 && *which == SIZE_MAX && st == KVQ_OK && c->level == KVQ_LEVEL_BOUNDED && nc > 0) {
                o.codes[0] = (uint8_t)(c->real[0] ^ 0x40u); /* neither the real code nor a neighbour */
                mine = 1;
            }
        } else if (c->op == KVQ_OP_CERT_VALUES) {
            st = api->cert_quantize_values(o.codes, o.scale, o.zero, &fl, c->x, s, &c->pol);
            if (st == KVQ_OK) st = api->cert_annotate(o.eta, o.nu, c->x, o.codes, o.scale, o.zero, s);
            if (tamper == 2 && *which == SIZE_MAX && st == KVQ_OK && c->level == KVQ_LEVEL_BOUNDED &&
                kvq_cert_full_blocks(s) > 0 && c->eta[0] > 0.0f) {
                o.eta[0] = 0.0f;
                mine = 1;
            }
        } else {
            st = api->cert_step(o.out, o.sel, o.prom, &o.rec, &o.decl, &o.delta1, c->q, c->qscale, c->x,
                                c->vin, &c->prm, s, &c->pol);
            if (tamper == 3 && *which == SIZE_MAX && st == KVQ_OK && o.rec.rung < 3u && o.rec.ekey > 0.0f) {
                o.rec.ekey *= 0.5f;
                mine = 1;
            }
        }
        if (tamper == 4 && *which == SIZE_MAX && c->op == KVQ_OP_CERT_STEP) {
            ck_assert_int_eq(kvq_res_write_skip(f, c->id, "no-entry"), KVQ_OK);
            *which = k;
        } else {
            ck_assert_int_eq(kvq_res_write_cert(f, c, st, fl, &o), KVQ_OK);
        }
        if (mine) *which = k;
        kvq_rout_free(&o);
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
    ck_assert_int_eq(kvq_gen_cert(&vf, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    ck_assert_int_eq(kvq_gen_cert(&again, "smoke", 0x6b7671u, 0, 1, err, sizeof err), KVQ_OK);
    text = write_mem(&vf, &len);
    text2 = write_mem(&again, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert_int_eq(memcmp(text, text2, len), 0);
    free(text2);
    kvq_vfile_free(&again);
    ck_assert_int_eq(kvq_vec_parse(&back, text, len, "c.vec", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(back.fam, KVQ_FAMILY_CERT);
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
        const kvq_vcase *c = &smoke.cases[k];
        int bi = c->shape.bits == 1 ? 0 : c->shape.bits == 2 ? 1 : c->shape.bits == 4 ? 2 : 3;
        if (c->status != KVQ_OK) { errs[c->status]++; continue; }
        seen[bi][c->shape.grouping][c->shape.meta][c->level]++;
        amb += c->namb;
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
    expect_format_error("kvq-vectors 1\nfamily sage\n", "t.vec:2: unknown family");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels huge\n", "t.vec:3: unknown level set");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels smoke\nseed 12\n", "t.vec:4: seed must be");
    expect_format_error("kvq-vectors 1\nfamily kivi\nlevels smoke\nseed 0x0000000000000001\n", "missing header line 'generator'");
    snprintf(buf, sizeof buf, "%s", HDR);
    expect_format_error(buf, "no cases");
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
    MUTATE("bits=3", "bits=x", "t.vec:6: bits, group, tokens and channels must be decimal");
    MUTATE("bits=3", "bits=99999999999", "t.vec:6: bits, group, tokens and channels must be decimal");
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
    MUTATE("status=3", "status=0", "t.vec:6: shape is not valid for a status-0 case");
    MUTATE("tokens=1 channels=8 ", "tokens=100000 channels=100000 ", "t.vec:6: tokens*channels exceeds");
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
    const kvq_vcase *c = NULL;
    kvq_vfile one, vf;
    size_t len;
    char *text, *p, err[512];
    for (size_t k = 0; k < smoke.ncases && c == NULL; k++)
        if (smoke.cases[k].status == KVQ_OK && smoke.cases[k].namb > 0) c = &smoke.cases[k];
    ck_assert_ptr_nonnull(c);
    memset(&one, 0, sizeof one);
    one = smoke;
    one.cases = (kvq_vcase *)c;
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
}
END_TEST

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
    BAD("kvq-results 1\nsubject s\nresult id=a status=0\n", "r.res:3: missing key 'flags' (status 0)");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1 flags=0x00000000\n", "r.res:3: key 'flags' given with a nonzero status");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1\nresult id=a status=1\n", "r.res:4: result for 'a' repeats line 3");
    BAD("kvq-results 1\nsubject s\nresult id=a status=1\nunavailable x\n", "r.res:4: 'unavailable' must come alone");
    BAD("kvq-results 1\nsubject s\nwhatever\n", "r.res:3: expected a 'result' line");
#undef BAD
}
END_TEST

/* ---- verdicts ------------------------------------------------------------------ */

/* Results of the fast path for every case of vf, as the child would write them. */
static char *fast_results(const kvq_vfile *vf, size_t *len, int tamper_case, int tamper_what)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_int_eq(kvq_res_write_header(f, "ref-fast", NULL), KVQ_OK);
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_vcase *c = &vf->cases[k];
        uint64_t n = kvq_kivi_elems(&c->shape), ng = kvq_kivi_groups(&c->shape);
        kvq_rout o;
        uint32_t fl = 0, dfl = 0;
        int st;
        memset(&o, 0, sizeof o);
        o.codes = calloc(kvq_kivi_code_bytes(&c->shape) + 1, 1);
        o.scale = calloc(ng + 1, sizeof *o.scale);
        o.zero = calloc(ng + 1, sizeof *o.zero);
        o.deq = calloc(n + 1, sizeof *o.deq);
        st = kvq_kivi_quantize(o.codes, o.scale, o.zero, &fl, c->x, &c->shape, &c->pol);
        if (st == KVQ_OK) st = kvq_kivi_dequantize(o.deq, &dfl, o.codes, o.scale, o.zero, &c->shape, &c->pol);
        if ((int)k == tamper_case && st == KVQ_OK) {
            if (tamper_what == 0) o.deq[0] = kvq_f32_from_bits(kvq_f32_bits(o.deq[0]) ^ 1u);
            if (tamper_what == 1) o.scale[0] = kvq_f32_from_bits(kvq_f32_bits(o.scale[0]) + 1u);
            if (tamper_what == 2) fl ^= KVQ_FLAG_CLAMPED;
        }
        ck_assert_int_eq(kvq_res_write_case(f, c->id, st, fl | dfl, &o, &c->shape), KVQ_OK);
        kvq_rout_free(&o);
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
    ck_assert_int_eq(kvq_verify(&rep, vf, "s.vec", &rf, "r.res", mask), KVQ_OK);
    kvq_rfile_free(&rf);
    return rep;
}

static size_t first_ok_case(const kvq_vfile *vf, uint32_t level, uint32_t meta)
{
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_vcase *c = &vf->cases[k];
        if (c->status == KVQ_OK && c->level == level && c->shape.meta == meta &&
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
    kvq_vcase *c = NULL;
    char *buf = NULL;
    FILE *f;
    for (k = 0; k < smoke.ncases; k++)
        if (smoke.cases[k].status == KVQ_OK && smoke.cases[k].namb > 0) { c = &smoke.cases[k]; break; }
    ck_assert_ptr_nonnull(c);
    for (int level = 0; level < 2; level++) {
        kvq_vfile one = smoke;
        kvq_rout o;
        uint64_t e = c->amb_idx[0], g;
        uint32_t i, fl = 0;
        kvq_verify_report rep;
        memset(&o, 0, sizeof o);
        c->level = (uint32_t)level;
        one.cases = c;
        one.ncases = 1;
        o.codes = malloc(kvq_kivi_code_bytes(&c->shape));
        o.scale = c->scale;
        o.zero = c->zero;
        o.deq = malloc(kvq_kivi_elems(&c->shape) * sizeof *o.deq);
        memcpy(o.codes, c->real, kvq_kivi_code_bytes(&c->shape));
        g = kvq_kivi_group_of(&c->shape, e, &i);
        kvq_pack_code(o.codes + kvq_kivi_group_code_offset(&c->shape, g), i, c->shape.bits, c->amb_alt[0]);
        ck_assert_int_eq(kvq_kivi_dequantize(o.deq, &fl, o.codes, o.scale, o.zero, &c->shape, &c->pol), KVQ_OK);
        f = open_memstream(&buf, &len);
        kvq_res_write_header(f, "alt", NULL);
        kvq_res_write_case(f, c->id, KVQ_OK, c->flags & ~KVQ_FLAG_AMBIGUOUS, &o, &c->shape);
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
    ck_assert_int_eq(kvq_report_json(jpath, &rep), KVQ_OK);
    ck_assert_int_eq(kvq_report_junit(xpath, &rep), KVQ_OK);
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
    ck_assert_int_eq(kvq_report_json("/nonexistent-dir/x.json", &rep), KVQ_E_IO);
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
