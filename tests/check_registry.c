/*
 * check_registry.c -- the conformance core with a family it has never seen
 * [VER-REG-01..05] [FAM-ADD-01].
 *
 * The family "toy" below exists only in this file.  It is a module and a
 * registry line (kvq_registry_use, here; registry.c's table for a real family):
 * no file of the core is edited for it.  Its one operation, toy-seq, is what
 * the families to come need from the core and KIVI and CERT do not: a case that
 * is a sequence of steps with state carried between them, a named variant,
 * 16-bit pattern indices in a variable-length output whose length is an
 * earlier output field, complex binary32 spectra and packed trits.  The test
 * generates toy vectors, writes and reads them back byte for byte, runs the
 * built-in subject ref-fast over them in child processes (the toy family
 * contributes its reference entry), and verifies the results; tampered
 * results fail naming the field, and a subject without the entry is SKIPPED.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "conf.h"
#include "kvq_bits.h"
#include "rule.h"

/* ---- the toy family -------------------------------------------------------- */

typedef struct toy_in {
    uint32_t steps, dim;  /* a sequence of `steps` appends of lens[s] tokens of dim values */
    uint32_t tokens;      /* sum(lens) */
    uint32_t *lens;
    float *x;             /* sum(lens) * dim values */
} toy_in;

typedef struct toy_out {
    uint32_t npat;        /* patterns found: the length of pat */
    uint16_t *pat;        /* npat pattern indices */
    float *spec;          /* dim complex values: the running sum's two-point spectrum */
    uint8_t *trits;       /* sum(lens) trits, 5 a byte, digit j of byte i = trit 5i+j */
} toy_out;

typedef struct toy_ref {
    uint32_t unused;
} toy_ref;

/* counts: rules over the case's scalars and, for pat, the record's own
 * earlier field npat (variable length) */
#define N_STEPS "steps"
#define N_X "tokens * dim"
#define N_DIM "dim"
#define N_TRIT_BYTES "cdiv(tokens, 5)"
#define N_PAT "npat"

/* What a rule cannot state: a bound on every case, whatever its status (a
 * rule's valid binds status-0 cases only). */
static int toy_check(const kvq_case *c, char *msg, size_t len)
{
    const toy_in *in = c->in;
    if (in->steps > 64u || in->dim > 64u) {
        snprintf(msg, len, "steps and dim are at most 64");
        return 0;
    }
    return 1;
}

static void toy_describe(const kvq_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "steps=%u dim=%u", ((const toy_in *)c->in)->steps, ((const toy_in *)c->in)->dim);
}

/* One append: the state is the running sum of every token so far. */
typedef int (*toy_step_v1_fn)(float *state, const float *x, uint32_t len, uint32_t dim, uint32_t variant);

/* The reference step: variant 0 ("append") adds the new tokens to the
 * state; variant 1 ("requant") adds them and then halves the state. */
static int toy_ref_step(float *state, const float *x, uint32_t len, uint32_t dim, uint32_t variant)
{
    for (uint32_t t = 0; t < len; t++)
        for (uint32_t i = 0; i < dim; i++) state[i] += x[(size_t)t * dim + i];
    if (variant == 1u)
        for (uint32_t i = 0; i < dim; i++) state[i] *= 0.5f;
    return KVQ_OK;
}

/* The outputs from the final state (the same pinned sequence the expected
 * values come from, through the subject's steps). */
static void toy_finish(const kvq_case *c, const float *state, toy_out *o)
{
    const toy_in *in = c->in;
    uint64_t nt = in->tokens;
    uint32_t np = 0;
    for (uint32_t i = 0; i < in->dim; i++) {
        o->spec[2 * i] = state[i] + state[(i + 1u) % in->dim];
        o->spec[2 * i + 1] = state[i] - state[(i + 1u) % in->dim];
        if (state[i] > 0.0f) np++;
    }
    o->npat = np;
    for (uint32_t i = 0, k = 0; i < in->dim; i++)
        if (state[i] > 0.0f) o->pat[k++] = (uint16_t)i;
    memset(o->trits, 0, (size_t)(nt + 4u) / 5u);
    for (uint64_t t = 0; t < nt; t++) {
        float v = in->x[t * in->dim];
        uint32_t trit = v > 0.5f ? 1u : v < -0.5f ? 2u : 0u; /* {+1, -1, 0} stored as {1, 2, 0} */
        uint32_t p = 1;
        for (uint64_t j = 0; j < t % 5u; j++) p *= 3u;
        o->trits[t / 5u] = (uint8_t)(o->trits[t / 5u] + trit * p);
    }
}

static int toy_call(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const toy_in *in = c->in;
    toy_step_v1_fn step = (toy_step_v1_fn)fns[0];
    toy_out *o = outp;
    float *state = calloc(in->dim ? in->dim : 1u, sizeof *state);
    size_t off = 0;
    int st = state != NULL ? KVQ_OK : KVQ_E_NOMEM;
    (void)flags;
    for (uint32_t s = 0; st == KVQ_OK && s < in->steps; s++) { /* the state carried between steps */
        if (off + (size_t)in->lens[s] * in->dim > (size_t)in->tokens * in->dim) break; /* lens beyond tokens */
        st = step(state, in->x + off, in->lens[s], in->dim, c->variant);
        off += (size_t)in->lens[s] * in->dim;
    }
    if (st == KVQ_OK) {
        /* the runner sized pat for the case's dim (the most there can be) */
        toy_finish(c, state, o);
    }
    free(state);
    return st;
}

static void toy_judge(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    if (kvq_judge_common(v, c, out, flags)) v->outcome = KVQ_PASS;
}

static const char *const TOY_VARIANTS[] = { "append", "requant" };

/* pat's expected count is the expected record's own npat; a subject's output
 * buffer is sized for dim (the runner's sentinel record holds 0xA5 bytes in
 * npat), then read back by its npat */
#define N_PAT_OUT "min(npat, dim)"

#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(toy_in, m)
#define EXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(toy_out, m)
#define OUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(toy_out, m)
static const kvq_field TOY_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, KVQ_F_VARIANT,
    { .key = "steps", .type = KVQ_FT_U32, IN(steps) },
    { .key = "dim", .type = KVQ_FT_U32, IN(dim) },
    { .key = "tokens", .type = KVQ_FT_U32, IN(tokens) },
    KVQ_F_STATUS,
    { .key = "lens", .type = KVQ_FT_A_U32, IN(lens), .count_rule = N_STEPS },
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = N_X },
    { .key = "npat", .type = KVQ_FT_U32, EXP(npat) },
    { .key = "pat", .type = KVQ_FT_A_U16, EXP(pat), .count_rule = N_PAT },
    { .key = "spec", .type = KVQ_FT_A_C32, EXP(spec), .count_rule = N_DIM },
    { .key = "trits", .type = KVQ_FT_A_U8, EXP(trits), .count_rule = N_TRIT_BYTES },
    { .key = "npat", .type = KVQ_FT_U32, OUT(npat), .cmp = KVQ_CMP_EXACT },
    { .key = "pat", .type = KVQ_FT_A_U16, OUT(pat), .count_rule = N_PAT_OUT, .cmp = KVQ_CMP_EXACT, .unit = "pattern" },
    { .key = "spec", .type = KVQ_FT_A_C32, OUT(spec), .count_rule = N_DIM, .cmp = KVQ_CMP_EXACT },
    { .key = "trits", .type = KVQ_FT_A_U8, OUT(trits), .count_rule = N_TRIT_BYTES, .cmp = KVQ_CMP_EXACT },
};

extern const kvq_family toy_family;
static kvq_status toy_solve(kvq_case *c);

static const kvq_op toy_seq = {
    .name = "toy-seq",
    .family = &toy_family,
    .summary = "a sequence of appends with state carried between them",
    .fields = TOY_FIELDS,
    .nfields = KVQ_NELEMS(TOY_FIELDS),
    .in_size = sizeof(toy_in),
    .out_size = sizeof(toy_out),
    .ref_size = sizeof(toy_ref),
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .variants = TOY_VARIANTS,
    .nvariants = 2,
    .entries = { { .name = "toy_step", .sigver = 1 } },
    .nentries = 1,
    .valid = "1",
    .check = toy_check,
    .describe = toy_describe,
    .solve = toy_solve,
    .call = toy_call,
    .judge = toy_judge,
};

static uint64_t toy_count(const char *levels)
{
    return strcmp(levels, "smoke") == 0 ? 6u : 0u;
}

/* Case k: k+1 steps of 1..3 tokens, dim 4, variant k mod 2; expected
 * outputs from the pinned sequence (toy_ref_step then toy_finish). */
static kvq_status toy_gen(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    toy_in *in;
    uint64_t nx;
    (void)levels;
    if (kvq_case_begin(c, &toy_seq) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    c->level = KVQ_LEVEL_EXACT;
    c->variant = (uint32_t)(k % 2u);
    snprintf(c->id, sizeof c->id, "toy-%llu", (unsigned long long)k);
    in->steps = (uint32_t)k + 1u;
    in->dim = 4u;
    in->lens = calloc(in->steps, sizeof *in->lens);
    if (in->lens == NULL) return KVQ_E_NOMEM;
    for (uint32_t s = 0; s < in->steps; s++) in->lens[s] = 1u + (uint32_t)((seed + k + s) % 3u);
    for (uint32_t s = 0; s < in->steps; s++) in->tokens += in->lens[s];
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    nx = (uint64_t)in->tokens * in->dim;
    for (uint64_t e = 0; e < nx; e++) in->x[e] = (float)((int)((e * 7u + k * 3u + seed) % 9u) - 4) * 0.25f;
    return c->op->solve(c);
}

/* The toy's exact path: the pinned sequence toy_ref_step then toy_finish. */
static kvq_status toy_solve(kvq_case *c)
{
    toy_in *in = c->in;
    float *state = calloc(in->dim ? in->dim : 1u, sizeof *state);
    if (state == NULL) return KVQ_E_NOMEM;
    {
        size_t off = 0;
        toy_out *ex = c->exp;
        for (uint32_t s = 0; s < in->steps; s++) {
            toy_ref_step(state, in->x + off, in->lens[s], in->dim, c->variant);
            off += (size_t)in->lens[s] * in->dim;
        }
        free(ex->pat); /* sized by npat, known only now */
        ex->pat = malloc(in->dim * sizeof *ex->pat);
        if (ex->pat == NULL) {
            free(state);
            return KVQ_E_NOMEM;
        }
        toy_finish(c, state, ex);
    }
    free(state);
    c->status = KVQ_OK;
    return KVQ_OK;
}

static kvq_entry_fn toy_ref_entry(const char *entry, uint32_t sigver)
{
    return sigver == 1u && strcmp(entry, "toy_step") == 0 ? (kvq_entry_fn)toy_ref_step : NULL;
}

static const kvq_op *const TOY_OPS[] = { &toy_seq };

const kvq_family toy_family = {
    .name = "toy",
    .title = "TOY",
    .spec = "tests/check_registry.c",
    .ops = TOY_OPS,
    .nops = 1,
    .gen_count = toy_count,
    .gen_case = toy_gen,
    .ref_entry = toy_ref_entry,
};

/* ---- tests ------------------------------------------------------------------- */

static const kvq_family *table[8];

/* the built-in families plus the toy: the registry line of this test */
static void with_toy(void)
{
    size_t n;
    const kvq_family *const *b = kvq_registry_builtin(&n);
    ck_assert_uint_lt(n, 7);
    memcpy(table, b, n * sizeof *b);
    table[n] = &toy_family;
    kvq_registry_use(table, n + 1);
}

static void builtin_only(void)
{
    kvq_registry_use(NULL, 0);
}

static char *write_mem(const kvq_vfile *vf, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(kvq_vec_write(f, vf), KVQ_OK);
    fclose(f);
    return buf;
}

START_TEST(toy_family_registers)
{
    /* SPEC: [VER-REG-01] [FAM-ADD-01] -- the registry finds a family it was given */
    ck_assert_ptr_null(kvq_family_find("toy"));
    with_toy();
    ck_assert_ptr_eq(kvq_family_find("toy"), &toy_family);
    ck_assert_ptr_eq(kvq_op_find("toy-seq"), &toy_seq);
    ck_assert_ptr_nonnull(kvq_op_find("kivi-quant"));
    ck_assert_ptr_nonnull(strstr(kvq_family_names(), "toy"));
    builtin_only();
    ck_assert_ptr_null(kvq_op_find("toy-seq"));
}
END_TEST

/* A case with c's inputs (arrays copied) and nothing else but its id, level,
 * variant and policy. */
static void clone_inputs(kvq_case *d, const kvq_case *c)
{
    const kvq_op *op = c->op;
    ck_assert_int_eq(kvq_case_begin(d, op), KVQ_OK);
    memcpy(d->id, c->id, sizeof d->id);
    d->level = c->level, d->variant = c->variant, d->pol = c->pol;
    memcpy(d->in, c->in, op->in_size);
    for (size_t i = 0; i < op->nfields; i++) {
        const kvq_field *f = &op->fields[i];
        size_t es = kvq_ftype_elem_size(f->type);
        void **a = (void **)(void *)((char *)d->in + f->offset);
        uint64_t n;
        if (f->role != KVQ_ROLE_INPUT || es == 0) continue;
        n = kvq_count(c, f, c->in);
        *a = malloc((size_t)(n ? n : 1) * es);
        ck_assert_ptr_nonnull(*a);
        memcpy(*a, *(void *const *)(const void *)((const char *)c->in + f->offset), (size_t)n * es);
    }
}

START_TEST(solve_reproduces_the_vectors)
{
    /* SPEC: [VER-REG-11] -- every operation's solver, on a generated case's inputs alone, writes
     * the case's bytes again: the generators' expected values come through op->solve */
    for (size_t i = 0; i < kvq_family_count(); i++) {
        const kvq_family *fam = kvq_family_at(i);
        kvq_vfile vf, again;
        char err[512], *t1, *t2;
        size_t l1, l2;
        ck_assert_int_eq(kvq_gen(&vf, fam, "smoke", 3, 0, 1, err, sizeof err), KVQ_OK);
        again = vf;
        again.cases = calloc(vf.ncases, sizeof *again.cases);
        ck_assert_ptr_nonnull(again.cases);
        for (size_t k = 0; k < vf.ncases; k++) {
            kvq_case *d = &again.cases[k];
            ck_assert_ptr_nonnull(vf.cases[k].op->solve);
            clone_inputs(d, &vf.cases[k]);
            d->status = KVQ_OK;
            ck_assert_int_eq(kvq_case_alloc(d), KVQ_OK);
            ck_assert_int_eq(d->op->solve(d), KVQ_OK);
        }
        t1 = write_mem(&vf, &l1);
        t2 = write_mem(&again, &l2);
        ck_assert_msg(l1 == l2 && memcmp(t1, t2, l1) == 0, "%s: the solver's cases differ from gen's", fam->name);
        free(t1), free(t2);
        for (size_t k = 0; k < vf.ncases; k++) kvq_case_free(&again.cases[k]);
        free(again.cases);
        kvq_vfile_free(&vf);
    }
}
END_TEST

START_TEST(toy_in_the_description)
{
    /* SPEC: [VER-REG-12] -- kvq ops --json describes a registered family from its record alone */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    with_toy();
    ck_assert_int_eq(kvq_registry_json(f), KVQ_OK);
    fclose(f);
    builtin_only();
    ck_assert_ptr_nonnull(strstr(buf, "{\n  \"kvq_registry\": 1,\n  \"kvq_version\": \""));
    ck_assert_ptr_nonnull(strstr(buf, "\"name\": \"toy\", \"title\": \"TOY\", \"spec\": \"tests/check_registry.c\", "
                                      "\"gpu\": false,\n      \"level_sets\": [\"smoke\"],"));
    ck_assert_ptr_nonnull(strstr(buf, "\"variants\": [\"append\", \"requant\"],"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"key\": \"variant\", \"type\": \"u32\", \"role\": \"case\", \"optional\": true}"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"key\": \"pat\", \"type\": \"a_u16\", \"role\": \"expected\", \"count\": \"npat\"}"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"key\": \"pat\", \"type\": \"a_u16\", \"role\": \"output\", "
                                      "\"count\": \"min(npat, dim)\", \"cmp\": \"exact\"}"));
    ck_assert_ptr_nonnull(strstr(buf, "\"valid\": \"1\",\n            \"meta_half\": null,"));
    ck_assert_ptr_nonnull(strstr(buf, "\"pattern\": \"^(threshold|budget:[0-9]{1,10})$\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"valid\": \"(bits == 1 || bits == 2 || bits == 4 || bits == 8) && group >= 8"));
    free(buf);
}
END_TEST

START_TEST(toy_roundtrip_bytes)
{
    /* SPEC: [VER-REG-02] [VER-REG-05] -- generic I/O of new field types: bytes out, same bytes back */
    kvq_vfile vf, back;
    char err[512], *t1, *t2;
    size_t l1, l2;
    with_toy();
    ck_assert_int_eq(kvq_gen(&vf, &toy_family, "smoke", 5, 0, 1, err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(vf.ncases, 6);
    t1 = write_mem(&vf, &l1);
    /* the default variant is not written; the other is */
    ck_assert_ptr_nonnull(strstr(t1, "case id=toy-1 level=exact op=toy-seq variant=1 steps=2"));
    ck_assert_ptr_nonnull(strstr(t1, "case id=toy-0 level=exact op=toy-seq steps=1"));
    ck_assert_int_eq(kvq_vec_parse(&back, t1, l1, "mem", err, sizeof err), KVQ_OK);
    ck_assert_uint_eq(back.ncases, vf.ncases);
    for (size_t k = 0; k < vf.ncases; k++) {
        const toy_out *a = vf.cases[k].exp, *b = back.cases[k].exp;
        ck_assert_uint_eq(vf.cases[k].variant, back.cases[k].variant);
        ck_assert_uint_eq(a->npat, b->npat);
        ck_assert_int_eq(memcmp(a->pat, b->pat, a->npat * sizeof *a->pat), 0);
        for (uint32_t i = 0; i < 8u; i++) ck_assert(kvq_f32_same(a->spec[i], b->spec[i]));
    }
    t2 = write_mem(&back, &l2);
    ck_assert_uint_eq(l1, l2);
    ck_assert_int_eq(memcmp(t1, t2, l1), 0);
    free(t1), free(t2);
    kvq_vfile_free(&back);
    kvq_vfile_free(&vf);
    builtin_only();
}
END_TEST

static const char HEAD[] = "kvq-vectors 1\nfamily toy\nlevels smoke\nseed 0x0000000000000001\ngenerator t\n";

START_TEST(toy_reader_errors)
{
    /* SPEC: [VER-REG-02] [VER-REG-05] -- a bad variant, a short array, a key of no op: file:line */
    static const struct {
        const char *line, *msg;
    } BAD[] = {
        { "case id=a level=exact op=toy-seq variant=2 steps=1 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=0 pat= spec=0000000000000000 trits=00", "variant: 2 is not a variant of toy-seq" },
        { "case id=a level=exact op=toy-seq steps=2 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=0 pat= spec=0000000000000000 trits=00", "lens: 8 hex digits, expected 16" },
        { "case id=a level=bounded op=toy-seq steps=1 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=0 pat= spec=0000000000000000 trits=00", "a toy-seq case is judged at the exact level only" },
        { "case id=a level=exact op=toy-seq steps=1 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=1 pat= spec=0000000000000000 trits=00", "pat: 0 hex digits, expected 4" },
        { "case id=a level=exact op=toy-seq steps=1 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=0 pat= spec=00000000 trits=00", "spec: 8 hex digits, expected 16" },
        { "case id=a level=exact op=toy-seq steps=1 dim=1 tokens=1 status=0 lens=00000001 x=00000000 "
          "npat=0 pat= spec=0000000000000000 trits=00 bits=4", "unknown key 'bits'" },
        { "case id=a level=exact op=kivi-quant steps=1", "op kivi-quant is not an operation of family toy" },
        { "case id=a level=exact op=toy-seq steps=99 dim=1 tokens=0 status=0 lens= x=", "steps and dim are at most 64" },
    };
    with_toy();
    for (size_t i = 0; i < KVQ_NELEMS(BAD); i++) {
        char buf[1024], err[512];
        kvq_vfile vf;
        int n = snprintf(buf, sizeof buf, "%s%s\n", HEAD, BAD[i].line);
        ck_assert_int_eq(kvq_vec_parse(&vf, buf, (size_t)n, "t.vec", err, sizeof err), KVQ_E_FORMAT);
        ck_assert_msg(strstr(err, "t.vec:6: ") == err && strstr(err, BAD[i].msg) != NULL, "case %zu: %s", i, err);
    }
    builtin_only();
}
END_TEST

/* Run ref-fast (in child processes) over the toy vectors; returns the results. */
static void run_ref_fast(const kvq_vfile *vf, const char *path, kvq_rfile *rf)
{
    char err[512];
    ck_assert_int_eq(kvq_run_subject("ref-fast", vf, path, 30, err, sizeof err), KVQ_OK);
    ck_assert_int_eq(kvq_res_read(rf, path, err, sizeof err), KVQ_OK);
}

START_TEST(toy_runs_and_verifies)
{
    /* SPEC: [VER-REG-03] [VER-REG-04] [VER-REG-05] -- the runner calls a family it never saw,
     * the state is carried, the exact judge compares the new types; tampering fails */
    kvq_vfile vf;
    kvq_rfile rf;
    kvq_verify_report rep;
    char err[512], path[] = "/tmp/kvq-toy-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    with_toy();
    ck_assert_int_eq(kvq_gen(&vf, &toy_family, "smoke", 5, 0, 1, err, sizeof err), KVQ_OK);
    run_ref_fast(&vf, path, &rf);
    ck_assert_int_eq(kvq_verify(&rep, &vf, "toy.vec", &rf, path, KVQ_LEVELS_ALL, NULL, 0), KVQ_OK);
    ck_assert_uint_eq(rep.passed, 6);
    ck_assert_uint_eq(rep.failed + rep.skipped, 0);
    kvq_verify_report_free(&rep);
    /* tamper: one pattern index, one spectrum bit, a pattern count the array disagrees with */
    for (int t = 0; t < 3; t++) {
        kvq_rcase *r = &rf.cases[5];
        for (size_t i = 0; i < r->nfields; i++) {
            char *v = r->fields[i].value;
            if (t == 0 && strcmp(r->fields[i].key, "pat") == 0 && v[0]) v[3] = v[3] == '0' ? '1' : '0';
            if (t == 1 && strcmp(r->fields[i].key, "spec") == 0) v[15] = v[15] == '0' ? '1' : '0';
            if (t == 2 && strcmp(r->fields[i].key, "npat") == 0) v[0] = (char)(v[0] == '0' ? '1' : '0');
        }
        ck_assert_int_eq(kvq_verify(&rep, &vf, "toy.vec", &rf, path, KVQ_LEVELS_ALL, NULL, 0), KVQ_OK);
        ck_assert_uint_eq(rep.failed, 1);
        ck_assert_msg(strstr(rep.v[5].detail, t == 0 ? "pat[pattern " : t == 1 ? "spec: 1 of 8 values differ"
                                                                         : "pat: ") != NULL,
                      "tamper %d: %s", t, rep.v[5].detail);
        kvq_verify_report_free(&rep);
        kvq_rfile_free(&rf);
        run_ref_fast(&vf, path, &rf);
    }
    kvq_rfile_free(&rf);
    builtin_only();
    /* without the toy family ref-fast has no toy_step: every case SKIPPED, never passed */
    run_ref_fast(&vf, path, &rf);
    ck_assert_int_eq(kvq_verify(&rep, &vf, "toy.vec", &rf, path, KVQ_LEVELS_ALL, NULL, 0), KVQ_OK);
    ck_assert_uint_eq(rep.skipped, 6);
    ck_assert_uint_eq(rep.passed, 0);
    ck_assert_ptr_nonnull(strstr(rep.v[0].detail, "subject-has-no-toy_step"));
    kvq_verify_report_free(&rep);
    kvq_rfile_free(&rf);
    kvq_vfile_free(&vf);
    unlink(path);
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("toy_family");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, toy_family_registers);
    tcase_add_test(tc, toy_roundtrip_bytes);
    tcase_add_test(tc, toy_reader_errors);
    tcase_add_test(tc, toy_runs_and_verifies);
    tcase_add_test(tc, solve_reproduces_the_vectors);
    tcase_add_test(tc, toy_in_the_description);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    uint64_t seed = 0, cases = 0;
    return kvq_check_main("check_registry", registry_suite(), &seed, &cases);
}
