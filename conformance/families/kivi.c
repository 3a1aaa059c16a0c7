/*
 * families/kivi.c -- the KIVI family: the kivi-quant operation's schema,
 * subject call and judges (spec/kivi.md, spec/vectors.md [VEC-FMT-03..05],
 * [VER-EX-*], [VER-BD-*]).
 *
 * exact level:   status, flags (less AMBIGUOUS), packed codes, metadata and
 *                dequantized values bit for bit.
 * bounded level: status, masked flags and metadata bit for bit; each code the
 *                real code or, at an ambiguous near-tie, its listed neighbour;
 *                each dequantized value within the KIVI-B-03 bound of the
 *                subject's own code and metadata, decided exactly by MPFR.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kivi.h"
#include "rule.h"
#include "vecio.h"

/* Flags compared at the bounded level [API-FLAGS-03]: those decided by the
 * bitwise-checked metadata and by the inputs alone.  CLAMPED and SATURATED can
 * legitimately differ with the evaluation (an ambiguous element at the edge of
 * the code range; a dequantized value within the bound of FLT_MAX); a
 * quantize-time saturation shows in the metadata, which is compared bitwise. */
#define BOUNDED_FLAGS (KVQ_FLAG_ZERO_SCALE | KVQ_FLAG_SUBNORMAL)

static const kvq_kivi_shape *shape_of(const kvq_case *c)
{
    return &((const kvq_kivi_in *)c->in)->shape;
}

/* The rules over a case's scalars [VER-REG-07..09], from the layout's limits
 * (kvq_layout.h; the assertions tie each text to its C constant).  Outputs
 * exist for a valid case only: an error case's buffers are one element (a
 * subject must reject the call before it writes, [API-ERR-01]).
 * valid: kvq_kivi_params_ok && kvq_kivi_shape_ok [KIVI-L-01..02]. */
#define R_MAX_GROUP 4096
#define R_MAX_DIM 16777216
#define R_MAX_ELEMS 68719476736
KVQ_STATIC_ASSERT(KVQ_MAX_GROUP == R_MAX_GROUP && KVQ_MAX_DIM == R_MAX_DIM && KVQ_MAX_ELEMS == R_MAX_ELEMS,
                  "the rules' limits are the layout's");
#define S_(x) #x
#define S(x) S_(x)
static const char VALID[] =
    "(bits == 1 || bits == 2 || bits == 4 || bits == 8) && group >= 8 && group <= " S(R_MAX_GROUP)
    " && group % 8 == 0 && (grouping == \"channel\" || grouping == \"token\") && (meta == \"f32\" || meta == \"f16\")"
    " && tokens >= 1 && channels >= 1 && tokens <= " S(R_MAX_DIM) " && channels <= " S(R_MAX_DIM)
    " && tokens * channels <= " S(R_MAX_ELEMS)
    " && (grouping == \"channel\" ? tokens % group == 0 : channels % group == 0)";
/* counts: T*D values, T*D/G groups of G*b/8 code bytes */
#define N_ELEMS "tokens * channels"
#define N_OUT_ELEMS "valid ? tokens * channels : 0"
#define N_GROUPS "valid ? tokens * channels / group : 0"
#define N_CODE_BYTES "valid ? tokens * channels / group * (group * bits / 8) : 0"

/* " (group g)" after a code byte's index. */
static void where_group(const kvq_case *c, uint64_t byte, char *buf, size_t len)
{
    snprintf(buf, len, " (group %llu)", (unsigned long long)(byte / kvq_kivi_group_bytes(shape_of(c))));
}

static void describe(const kvq_case *c, char *buf, size_t len)
{
    const kvq_kivi_shape *s = shape_of(c);
    snprintf(buf, len, "bits=%u G=%u %s %s", s->bits, s->group,
             s->grouping == KVQ_GROUP_CHANNEL ? "channel" : s->grouping == KVQ_GROUP_TOKEN ? "token" : "?",
             s->meta == KVQ_META_F32 ? "f32" : s->meta == KVQ_META_F16 ? "f16" : "?");
}

/* Where differing flags arise [VER-EX-02]: ZERO_SCALE at the first group
 * whose expected and provided scales disagree on being zero; SUBNORMAL at the
 * first subnormal input.  CLAMPED and SATURATED are events of the arithmetic
 * that the outputs do not locate: no hint. */
static void flags_where(const kvq_case *c, const void *outp, uint32_t diff, char *buf, size_t len)
{
    const kvq_kivi_in *in = c->in;
    const kvq_kivi_out *o = outp, *ex = c->exp;
    size_t k = 0;
    buf[0] = '\0';
    if ((diff & KVQ_FLAG_ZERO_SCALE) && ex != NULL && kvq_case_valid(c))
        for (uint64_t g = 0; g < kvq_kivi_groups(&in->shape); g++)
            if ((ex->scale[g] == 0.0f) != (o->scale[g] == 0.0f)) {
                k += (size_t)snprintf(buf + k, len - k, "; first group whose scales disagree on zero: %llu",
                                      (unsigned long long)g);
                break;
            }
    if ((diff & KVQ_FLAG_SUBNORMAL) && k < len)
        for (uint64_t e = 0; e < kvq_kivi_elems(&in->shape); e++)
            if (in->x[e] != 0.0f && fabsf(in->x[e]) < 0x1p-126f) {
                snprintf(buf + k, len - k, "; first subnormal input: element %llu", (unsigned long long)e);
                break;
            }
}

/* Quantize, then dequantize the subject's own codes [VER-RUN-01]. */
static int call(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_kivi_in *in = c->in;
    kvq_kivi_out *o = outp;
    kvq_kivi_quantize_v1_fn quantize = (kvq_kivi_quantize_v1_fn)fns[0];
    kvq_kivi_dequantize_v1_fn dequantize = (kvq_kivi_dequantize_v1_fn)fns[1];
    uint32_t dflags = 0;
    int st = quantize(o->codes, o->scale, o->zero, flags, in->x, &in->shape, &c->pol);
    if (st == KVQ_OK) {
        st = dequantize(o->deq, &dflags, o->codes, o->scale, o->zero, &in->shape, &c->pol);
        if (st != KVQ_OK) {
            /* the quantization succeeded and wrote its outputs; what must be
             * untouched [API-ERR-01] is what the failed dequantization owns */
            kvq_out_refill(c, o, "codes");
            kvq_out_refill(c, o, "scale");
            kvq_out_refill(c, o, "zero");
            *flags = dflags;
            return st;
        }
        *flags |= dflags;
    }
    return st;
}

/* The bounded level [VER-BD-01..03] after the metadata's bitwise check. */
static void judge_bounded(kvq_verdict *v, const kvq_case *c, const kvq_kivi_out *o, uint32_t flags)
{
    const kvq_kivi_shape *s = shape_of(c);
    const kvq_kivi_ref *ref = c->ref;
    uint64_t n = kvq_kivi_elems(s), ng = kvq_kivi_groups(s), mism = 0;
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    uint32_t ef = c->flags & BOUNDED_FLAGS;
    if ((flags & BOUNDED_FLAGS) != ef) {
        char what[48];
        snprintf(what, sizeof what, "flags (bounded mask 0x%02x)", BOUNDED_FLAGS);
        kvq_judge_flags_at(v, c, o, what, ef, flags & BOUNDED_FLAGS);
        return;
    }
    for (uint64_t g = 0; g < ng; g++) {
        uint64_t off = kvq_kivi_group_code_offset(s, g);
        for (uint32_t i = 0; i < s->group; i++) {
            uint64_t e = kvq_kivi_elem_index(s, g, i);
            uint32_t want = kvq_unpack_code(ref->real + off, i, s->bits);
            uint32_t got = kvq_unpack_code(o->codes + off, i, s->bits), alt;
            int amb = kvq_amb_find(&ref->amb, e, &alt);
            double bound, errv;
            if (got != want && !(amb && got == alt)) {
                if (mism++ == 0)
                    snprintf(d, dl, "code of element %llu (group %llu, index %u): expected 0x%x%s, got 0x%x",
                             (unsigned long long)e, (unsigned long long)g, i, want,
                             amb ? " or its ambiguous neighbour" : "", got);
                continue;
            }
            if (kvq_exact_kivi_deq_within(o->deq[e], got, o->scale[g], o->zero[g], &bound, &errv)) {
                kvq_verdict_margin(v, "deq error [KIVI-B-03]", errv, bound);
            } else {
                if (mism++ == 0)
                    snprintf(d, dl, "deq of element %llu: 0x%08lx (%a) is %.3e from code*scale+zero "
                             "(code 0x%x), bound %.3e [KIVI-B-03]", (unsigned long long)e,
                             (unsigned long)kvq_f32_bits(o->deq[e]), (double)o->deq[e], errv, got, bound);
            }
        }
    }
    if (mism) {
        size_t len = strlen(d);
        snprintf(d + len, dl - len, "; %llu of %llu elements fail", (unsigned long long)mism,
                 (unsigned long long)n);
        return;
    }
    v->outcome = KVQ_PASS;
}

static void judge(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    if (!kvq_judge_common(v, c, out, flags)) return;
    if (c->level == KVQ_LEVEL_EXACT) {
        v->outcome = KVQ_PASS;
        return;
    }
    judge_bounded(v, c, out, flags);
}

/* ---- ref-fast's KIVI entries (the fast path returns kvq_status, an entry int) ---- */

static int ref_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *x,
                        const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
}

static int ref_dequantize(float *y, uint32_t *flags, const uint8_t *codes, const float *scale,
                          const float *zero, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "kivi_quantize") == 0) return (kvq_entry_fn)ref_quantize;
    if (strcmp(entry, "kivi_dequantize") == 0) return (kvq_entry_fn)ref_dequantize;
    return NULL;
}

/* ---- schema ------------------------------------------------------------------------ */

static const char *const GROUPINGS[] = { "channel", "token" };
static const char *const METAS[] = { "f32", "f16" };

#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(kvq_kivi_in, m)
#define EXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_kivi_out, m)
#define REF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_kivi_ref, m)
#define OUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_kivi_out, m)

/* [VEC-FMT-03..05] [VEC-RES-02], in the writers' order. */
static const kvq_field FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "bits", .type = KVQ_FT_U32, IN(shape.bits) },
    { .key = "group", .type = KVQ_FT_U32, IN(shape.group) },
    { .key = "grouping", .type = KVQ_FT_ENUM, IN(shape.grouping), .names = GROUPINGS, .nnames = 2 },
    { .key = "meta", .type = KVQ_FT_ENUM, IN(shape.meta), .names = METAS, .nnames = 2 },
    { .key = "tokens", .type = KVQ_FT_U32, IN(shape.tokens) },
    { .key = "channels", .type = KVQ_FT_U32, IN(shape.channels) },
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = N_ELEMS, .finite = 1 },
    { .key = "codes", .type = KVQ_FT_A_U8, EXP(codes), .count_rule = N_CODE_BYTES },
    { .key = "scale", .type = KVQ_FT_A_META, EXP(scale), .count_rule = N_GROUPS },
    { .key = "zero", .type = KVQ_FT_A_META, EXP(zero), .count_rule = N_GROUPS },
    { .key = "deq", .type = KVQ_FT_A_F32, EXP(deq), .count_rule = N_OUT_ELEMS },
    { .key = "real", .type = KVQ_FT_A_U8, REF(real), .count_rule = N_CODE_BYTES },
    { .key = "amb", .type = KVQ_FT_AMB, REF(amb), .count_rule = N_OUT_ELEMS },
    KVQ_F_OUT_FLAGS,
    { .key = "codes", .type = KVQ_FT_A_U8, OUT(codes), .count_rule = N_CODE_BYTES, .cmp = KVQ_CMP_EXACT,
      .where = where_group },
    { .key = "scale", .type = KVQ_FT_A_META, OUT(scale), .count_rule = N_GROUPS, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "zero", .type = KVQ_FT_A_META, OUT(zero), .count_rule = N_GROUPS, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "deq", .type = KVQ_FT_A_F32, OUT(deq), .count_rule = N_OUT_ELEMS, .cmp = KVQ_CMP_EXACT },
};

const kvq_op kvq_op_kivi_quant = {
    .name = "kivi-quant",
    .family = &kvq_family_kivi,
    .summary = "quantize a T x D tensor in groups of G, then dequantize the result",
    .fields = FIELDS,
    .nfields = KVQ_NELEMS(FIELDS),
    .in_size = sizeof(kvq_kivi_in),
    .out_size = sizeof(kvq_kivi_out),
    .ref_size = sizeof(kvq_kivi_ref),
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .entries = { { .name = "kivi_quantize", .sigver = 1 }, { .name = "kivi_dequantize", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID,
    .meta_half = "meta == \"f16\"",
    .amb_lo = "0",
    .amb_hi = "bits == 1 ? 1 : bits == 2 ? 3 : bits == 4 ? 15 : 255", /* kvq_code_max [KIVI-Q-02] */
    .describe = describe,
    .flags_where = flags_where,
    .solve = kvq_kivi_solve,
    .call = call,
    .judge = judge,
};

static const kvq_op *const OPS[] = { &kvq_op_kivi_quant };

const kvq_family kvq_family_kivi = {
    .name = "kivi",
    .title = "KIVI",
    .spec = "spec/kivi.md",
    .gpu = 1,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = kvq_kivi_gen_count,
    .gen_case = kvq_kivi_gen_case,
    .ref_entry = ref_entry,
    .commands = { { "bench", kvq_bench_main, "  kvq bench [--json FILE]\n" } },
};
