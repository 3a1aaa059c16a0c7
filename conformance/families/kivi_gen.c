/*
 * families/kivi_gen.c -- deterministic KIVI conformance vectors (spec/vectors.md,
 * [VEC-GEN-*]).
 *
 * Case k draws everything from its own generator, seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  The
 * parameters that matter for coverage (bits, grouping, metadata format,
 * level) cycle with k; value distributions, shapes and policies are drawn.
 * Expected outputs come from the exact path only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kivi.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "kvq_rng.h"

enum {
    D_UNIFORM, D_NORMALISH, D_TIES, D_CONSTANT, D_TINY, D_HUGE, D_HALF, D_OUTLIER, D_MIXED,
    D_COUNT
};
static const char *const DIST_NAMES[D_COUNT] = {
    "uniform", "normalish", "ties", "constant", "tiny", "huge", "half", "outlier", "mixed",
};

/* Fill one group's G values (stride apart) from distribution d. */
static void fill_group(float *x, size_t stride, uint32_t G, uint32_t bits, int d, kvq_rng *r)
{
    uint32_t cmax = kvq_code_max(bits);
    if (d == D_MIXED) d = (int)kvq_rng_below(r, D_MIXED);
    switch (d) {
    case D_UNIFORM: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 21) - 10), off = a * kvq_rng_sym(r);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = off + a * kvq_rng_sym(r);
        break;
    }
    case D_NORMALISH: {
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 9) - 4), off = 4.0f * a * kvq_rng_sym(r);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = off + a * (kvq_rng_sym(r) + kvq_rng_sym(r) + kvq_rng_sym(r));
        break;
    }
    case D_TIES: {
        /* min z and max z + cmax*s on a grid of s/2: r = cmax*s exactly, so
         * s is recovered exactly and odd multiples of s/2 are exact ties. */
        int e = (int)kvq_rng_below(r, 16) - 8;
        float s = ldexpf(1.0f, e), z = s * (float)((int)kvq_rng_below(r, 64) - 32);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = z + (s / 2.0f) * (float)kvq_rng_below(r, 2 * cmax + 1);
        x[0] = z;
        x[(G - 1) * stride] = z + s * (float)cmax;
        break;
    }
    case D_CONSTANT: {
        float c = ldexpf(kvq_rng_sym(r), (int)kvq_rng_below(r, 40) - 20);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = c;
        break;
    }
    case D_TINY: {
        /* subnormal and near-subnormal values; ranges whose scale underflows */
        int e = -149 + (int)kvq_rng_below(r, 30);
        for (uint32_t i = 0; i < G; i++)
            x[i * stride] = ldexpf((float)((int)kvq_rng_below(r, 1024) - 512), e);
        break;
    }
    case D_HUGE: {
        /* ranges near the top of binary32 (range overflow) or of binary16 */
        float top = kvq_rng_below(r, 2) ? 0x1.fffffep+127f : 0x1.fp+16f;
        for (uint32_t i = 0; i < G; i++) x[i * stride] = top * kvq_rng_sym(r);
        break;
    }
    case D_HALF: {
        /* binary16 values, as a binary16 KV cache holds */
        for (uint32_t i = 0; i < G; i++) {
            int ov;
            float v = ldexpf(kvq_rng_sym(r), (int)kvq_rng_below(r, 12) - 6);
            x[i * stride] = kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov);
        }
        break;
    }
    default: { /* D_OUTLIER */
        float a = ldexpf(1.0f, (int)kvq_rng_below(r, 6) - 3);
        for (uint32_t i = 0; i < G; i++) x[i * stride] = a * kvq_rng_sym(r);
        x[kvq_rng_below(r, G) * stride] = a * (float)(64 + kvq_rng_below(r, 1024)) * (kvq_rng_below(r, 2) ? 1.0f : -1.0f);
        break;
    }
    }
}

/* An error case: the exact path rejected the inputs with status st; keep the
 * inputs, drop every output, and expect st.  Returns KVQ_OK (the case is made). */
static kvq_status as_error_case(kvq_case *c, kvq_status st)
{
    kvq_case_drop_outputs(c);
    c->status = st;
    c->flags = 0;
    return KVQ_OK;
}

static kvq_status solve(kvq_case *c)
{
    kvq_kivi_in *in = c->in;
    kvq_kivi_out *ex = c->exp;
    kvq_kivi_ref *ref = c->ref;
    kvq_exact_kivi_out o;
    uint64_t n = kvq_kivi_elems(&in->shape), namb = 0;
    kvq_status st;
    memset(&o, 0, sizeof o);
    o.codes = ex->codes;
    o.scale = ex->scale;
    o.zero = ex->zero;
    o.deq = ex->deq;
    o.code_real = malloc(n ? n : 1);
    o.code_alt = malloc(n ? n : 1);
    if (!o.code_real || !o.code_alt) {
        free(o.code_real);
        free(o.code_alt);
        return KVQ_E_NOMEM;
    }
    st = kvq_exact_kivi_quantize(&o, in->x, &in->shape, &c->pol);
    if (st == KVQ_E_NOMEM) goto out;
    if (st != KVQ_OK) {
        st = as_error_case(c, st);
        goto out;
    }
    c->flags = o.flags;
    for (uint64_t g = 0; g < kvq_kivi_groups(&in->shape); g++) {
        uint8_t *grp = ref->real + kvq_kivi_group_code_offset(&in->shape, g);
        for (uint32_t b = 0; b < kvq_kivi_group_bytes(&in->shape); b++) grp[b] = 0;
        for (uint32_t i = 0; i < in->shape.group; i++)
            kvq_pack_code(grp, i, in->shape.bits, o.code_real[kvq_kivi_elem_index(&in->shape, g, i)]);
    }
    for (uint64_t e = 0; e < n; e++) namb += o.code_real[e] != o.code_alt[e];
    ref->amb.n = namb;
    if (namb) {
        uint64_t k = 0;
        ref->amb.idx = malloc(namb * sizeof *ref->amb.idx);
        ref->amb.alt = malloc(namb);
        if (!ref->amb.idx || !ref->amb.alt) {
            st = KVQ_E_NOMEM;
            goto out;
        }
        for (uint64_t e = 0; e < n; e++)
            if (o.code_real[e] != o.code_alt[e]) {
                ref->amb.idx[k] = e;
                ref->amb.alt[k++] = o.code_alt[e];
            }
    }
out:
    free(o.code_real);
    free(o.code_alt);
    return st;
}

/* The regular case at ordinal k. */
static kvq_status make_regular(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                               int smoke)
{
    static const uint32_t BITS[4] = { 1, 2, 4, 8 };
    static const uint32_t GS_SMOKE[3] = { 8, 16, 32 };
    static const uint32_t GS_STD[5] = { 8, 16, 32, 64, 128 };
    kvq_rng r = { seed ^ (0xA0761D6478BD642Full * (k + 1u)) };
    kvq_kivi_in *in;
    kvq_kivi_shape *s;
    int d;
    uint64_t ng;
    if (kvq_case_begin(c, &kvq_op_kivi_quant) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    s->bits = BITS[k % 4u];
    s->grouping = (k / 4u) % 2u;
    s->meta = (k / 8u) % 2u;
    c->level = (k / 16u) % 2u;
    s->group = smoke ? GS_SMOKE[kvq_rng_below(&r, 3)] : GS_STD[kvq_rng_below(&r, 5)];
    if (s->grouping == KVQ_GROUP_CHANNEL) {
        s->tokens = s->group * (1u + kvq_rng_below(&r, 2));
        s->channels = 1u + kvq_rng_below(&r, smoke ? 8 : 24);
    } else {
        s->channels = s->group * (1u + kvq_rng_below(&r, 2));
        s->tokens = 1u + kvq_rng_below(&r, smoke ? 4 : 12);
    }
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 8) == 0) c->pol.ties = KVQ_TIES_AWAY;
    if (kvq_rng_below(&r, 8) == 0) c->pol.overflow = KVQ_OVERFLOW_NAN;
    if (kvq_rng_below(&r, 8) == 0) c->pol.subnormal = KVQ_SUBNORMAL_DAZ;
    d = (int)((k / 32u + kvq_rng_below(&r, 3)) % D_COUNT);
    snprintf(c->id, sizeof c->id, "kivi-%s-%05llu-%s", tag, (unsigned long long)k, DIST_NAMES[d]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    ng = kvq_kivi_groups(s);
    for (uint64_t g = 0; g < ng; g++)
        fill_group(in->x + kvq_kivi_group_base(s, g), (size_t)kvq_kivi_group_stride(s), s->group,
                   s->bits, d, &r);
    return solve(c);
}

/* Error cases: the bad inputs every subject must reject [POL-NF-01, KIVI-L-02]. */
enum { E_NAN, E_PINF, E_NINF, E_RAGGED_T, E_RAGGED_D, E_EMPTY, E_BITS, E_GROUP, E_RANGE,
       E_DEQ_RANGE, E_COUNT };
static const char *const ERR_NAMES[E_COUNT] = {
    "nan", "pinf", "ninf", "ragged-tokens", "ragged-channels", "empty", "bits3", "group12",
    "range-nan-policy", "deq-range-nan-policy",
};

static kvq_status make_error(kvq_case *c, const char *tag, uint64_t seed, uint64_t k,
                             uint32_t which)
{
    kvq_rng r = { seed ^ (0xE7037ED1A0B428DBull * (k + 1u)) };
    kvq_kivi_in *in;
    kvq_kivi_shape *s;
    uint64_t n;
    if (kvq_case_begin(c, &kvq_op_kivi_quant) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    c->level = which % 2u;
    c->pol = kvq_policy_default;
    s->bits = 4;
    s->group = 16;
    s->grouping = which % 2u;
    s->meta = KVQ_META_F32;
    s->tokens = 16;
    s->channels = 16;
    switch (which) {
    case E_RAGGED_T: s->grouping = KVQ_GROUP_CHANNEL; s->tokens = 17; break;
    case E_RAGGED_D: s->grouping = KVQ_GROUP_TOKEN; s->channels = 20; break;
    case E_EMPTY: s->tokens = 0; break;
    case E_BITS: s->bits = 3; break;
    case E_GROUP: s->group = 12; break;
    case E_RANGE: c->pol.overflow = KVQ_OVERFLOW_NAN; break;
    case E_DEQ_RANGE: c->pol.overflow = KVQ_OVERFLOW_NAN; break;
    default: break;
    }
    snprintf(c->id, sizeof c->id, "kivi-%s-%05llu-err-%s", tag, (unsigned long long)k, ERR_NAMES[which]);
    n = kvq_kivi_elems(s);
    c->status = KVQ_E_PARAM; /* inputs only for now */
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint64_t e = 0; e < n; e++) in->x[e] = kvq_rng_sym(&r);
    if (n) {
        uint64_t at = kvq_rng_next(&r) % n;
        if (which == E_NAN) in->x[at] = NAN;
        if (which == E_PINF) in->x[at] = INFINITY;
        if (which == E_NINF) in->x[at] = -INFINITY;
        if (which == E_RANGE) { /* one group spans more than the binary32 range */
            in->x[kvq_kivi_elem_index(s, 0, 0)] = -0x1.8p+127f;
            in->x[kvq_kivi_elem_index(s, 0, 1)] = 0x1.8p+127f;
        }
        if (which == E_DEQ_RANGE) { /* range and scale finite, fmaf(15, s, min) overflows */
            for (uint32_t i = 0; i < s->group; i++)
                in->x[kvq_kivi_elem_index(s, 0, i)] = i % 2 ? 0x1.fffffep+127f : 0x1.553aa6p+126f;
        }
    }
    /* The expected status is the exact path's verdict on these inputs. */
    if (kvq_kivi_params_ok(s) && kvq_kivi_shape_ok(s)) {
        c->status = KVQ_OK;
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
        return solve(c);
    }
    c->status = kvq_kivi_params_ok(s) ? KVQ_E_SHAPE : KVQ_E_PARAM;
    return KVQ_OK;
}

/* Level sets [VEC-GEN-02]: regular cases, then one case of each error class. */
static uint64_t n_regular(const char *levels)
{
    return strcmp(levels, "smoke") == 0 ? 96u : strcmp(levels, "standard") == 0 ? 1152u : 0u;
}

uint64_t kvq_kivi_gen_count(const char *levels)
{
    uint64_t nreg = n_regular(levels);
    return nreg ? nreg + E_COUNT : 0u;
}

kvq_status kvq_kivi_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    uint64_t nreg = n_regular(levels);
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    kvq_status st = k < nreg ? make_regular(c, tag, seed, k, smoke)
                             : make_error(c, tag, seed, k, (uint32_t)(k - nreg));
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
