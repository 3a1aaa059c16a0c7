/*
 * families/toy.c -- a toy family, added by tests/toy/toy.sh to a scratch copy
 * of the tree with its header and its two registry lines and nothing else
 * (spec/adding-a-family.md): one operation, toy-double, y = 2 x.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_toy.h"
#include "registry.h"

kvq_status kvq_toy_double(float *y, const float *x, uint32_t n)
{
    if (y == NULL || x == NULL) return KVQ_E_PARAM;
    if (n == 0u || n > KVQ_TOY_MAX_N) return KVQ_E_SHAPE;
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return KVQ_E_NONFINITE;
        if (!isfinite(2.0f * x[i])) return KVQ_E_RANGE;
    }
    for (uint32_t i = 0; i < n; i++) y[i] = 2.0f * x[i];
    return KVQ_OK;
}

typedef struct toy_in {
    uint32_t n;
    float *x;
} toy_in;

typedef struct toy_out {
    float *y;
} toy_out;

extern const kvq_family kvq_family_toy;

static kvq_status solve(kvq_case *c)
{
    const toy_in *in = c->in;
    toy_out *ex = c->exp;
    float *y = malloc((in->n ? in->n : 1u) * sizeof *y);
    kvq_status st = y != NULL ? kvq_toy_double(y, in->x, in->n) : KVQ_E_NOMEM;
    if (st == KVQ_E_NOMEM) return st;
    c->flags = 0;
    if (st != KVQ_OK) {
        kvq_case_drop_outputs(c);
        c->status = st;
    } else {
        memcpy(ex->y, y, in->n * sizeof *y);
        c->status = KVQ_OK;
    }
    free(y);
    return KVQ_OK;
}

static void describe(const kvq_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "n=%u", ((const toy_in *)c->in)->n);
}

static int call(const kvq_case *c, const kvq_entry_fn *fns, void *out, uint32_t *flags)
{
    const toy_in *in = c->in;
    (void)flags;
    return ((kvq_toy_double_v1_fn)fns[0])(((toy_out *)out)->y, in->x, in->n);
}

static void judge(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    if (kvq_judge_common(v, c, out, flags)) v->outcome = KVQ_PASS;
}

static const kvq_field FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "n", .type = KVQ_FT_U32, .role = KVQ_ROLE_INPUT, .offset = offsetof(toy_in, n) },
    KVQ_F_STATUS,
    { .key = "x", .type = KVQ_FT_A_F32, .role = KVQ_ROLE_INPUT, .offset = offsetof(toy_in, x),
      .count_rule = "n", .finite = 1 },
    { .key = "y", .type = KVQ_FT_A_F32, .role = KVQ_ROLE_EXPECTED, .offset = offsetof(toy_out, y),
      .count_rule = "valid ? n : 0" },
    { .key = "y", .type = KVQ_FT_A_F32, .role = KVQ_ROLE_OUTPUT, .offset = offsetof(toy_out, y),
      .count_rule = "valid ? n : 0", .cmp = KVQ_CMP_EXACT },
};

static const kvq_op TOY_DOUBLE = {
    .name = "toy-double",
    .family = &kvq_family_toy,
    .summary = "y = 2 x, element by element",
    .fields = FIELDS,
    .nfields = KVQ_NELEMS(FIELDS),
    .in_size = sizeof(toy_in),
    .out_size = sizeof(toy_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .entries = { { .name = "toy_double", .sigver = 1 } },
    .nentries = 1,
    .valid = "n >= 1 && n <= 4096",
    .describe = describe,
    .solve = solve,
    .call = call,
    .judge = judge,
};

static uint64_t gen_count(const char *levels)
{
    return strcmp(levels, "smoke") == 0 ? 6u : 0u;
}

/* Case k: n = 1 + 7 k values; case 4 a NaN (an error case), case 5 n = 0. */
static kvq_status gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    toy_in *in;
    (void)levels;
    if (kvq_case_begin(c, &TOY_DOUBLE) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    snprintf(c->id, sizeof c->id, "toy-%llu", (unsigned long long)k);
    in->n = k == 5u ? 0u : 1u + 7u * (uint32_t)k;
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint32_t i = 0; i < in->n; i++) in->x[i] = (float)((int)((seed + 3u * i + k) % 17u) - 8) * 0.125f;
    if (k == 4u) in->x[in->n / 2u] = NAN;
    return c->op->solve(c);
}

static int ref_double(float *y, const float *x, uint32_t n)
{
    return kvq_toy_double(y, x, n);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    return sigver == 1u && strcmp(entry, "toy_double") == 0 ? (kvq_entry_fn)ref_double : NULL;
}

static const kvq_op *const OPS[] = { &TOY_DOUBLE };

const kvq_family kvq_family_toy = {
    .name = "toy",
    .title = "TOY",
    .spec = "spec/toy.md",
    .gpu = 0,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = gen_count,
    .gen_case = gen_case,
    .ref_entry = ref_entry,
};
