/*
 * families/kivi_gen.c -- deterministic KIVI conformance vectors (spec/vectors.md,
 * [VEC-GEN-*]).
 *
 * Case k draws everything from its own generator, seeded from (seed, k), so a
 * shard produces exactly the cases the full run has at its ordinals.  The
 * parameters that matter for coverage (bits, grouping, metadata format,
 * level) cycle with k; value distributions, shapes and policies are drawn.
 * Expected outputs come from the exact path only.
 *
 * Ordinals: the regular cases, the original error cases, the error cases
 * added after them (NaN and infinities at the other level), then the
 * constructed classes: binary16 metadata whose rounded offset moves a code
 * out of [0, cmax] (clamped), near-ties where a reciprocal multiplication
 * rounds to another code than the pinned division, and dequantizations where
 * a binary64 evaluation rounded to binary32 differs from the pinned single
 * rounding.  Their constructions search with plain binary32/binary64
 * arithmetic and the exact path's RN16; they only choose inputs.
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

/* kivi-quant's solver (kvq_op.solve [VER-REG-11]): the exact path's status
 * on the inputs, and for status 0 its outputs, real codes and near-ties.
 * Parameters or a shape the exact path rejects before it reads a value make
 * an error case without outputs. */
kvq_status kvq_kivi_solve(kvq_case *c)
{
    kvq_kivi_in *in = c->in;
    kvq_kivi_out *ex;
    kvq_kivi_ref *ref;
    kvq_exact_kivi_out o;
    uint64_t n = kvq_kivi_elems(&in->shape), namb = 0;
    kvq_status st;
    if (!(kvq_kivi_params_ok(&in->shape) && kvq_kivi_shape_ok(&in->shape)))
        return as_error_case(c, kvq_kivi_params_ok(&in->shape) ? KVQ_E_SHAPE : KVQ_E_PARAM);
    if (c->exp == NULL) { /* made as an error case: its outputs now */
        c->status = KVQ_OK;
        if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    }
    ex = c->exp;
    ref = c->ref;
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
    return c->op->solve(c);
}

/* Error cases: the bad inputs every subject must reject [POL-NF-01, KIVI-L-02].
 * E_NAN_B .. E_NINF_B were added after the first ten (their ordinals follow
 * them): with them every non-finite input at both levels. */
enum { E_NAN, E_PINF, E_NINF, E_RAGGED_T, E_RAGGED_D, E_EMPTY, E_BITS, E_GROUP, E_RANGE,
       E_DEQ_RANGE, E_NAN_B, E_PINF_E, E_NINF_B, E_COUNT };
static const char *const ERR_NAMES[E_COUNT] = {
    "nan", "pinf", "ninf", "ragged-tokens", "ragged-channels", "empty", "bits3", "group12",
    "range-nan-policy", "deq-range-nan-policy", "nan-bounded", "pinf-exact", "ninf-bounded",
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
    c->level = which == E_NAN_B || which == E_NINF_B ? KVQ_LEVEL_BOUNDED
             : which == E_PINF_E ? KVQ_LEVEL_EXACT : which % 2u;
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
        if (which == E_NAN || which == E_NAN_B) in->x[at] = NAN;
        if (which == E_PINF || which == E_PINF_E) in->x[at] = INFINITY;
        if (which == E_NINF || which == E_NINF_B) in->x[at] = -INFINITY;
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
    return c->op->solve(c);
}

/* ---- constructed classes ----------------------------------------------------------
 *
 * Inputs built so that a defect that random data almost never meets shows on
 * every seed.  The searches below evaluate candidate inputs with plain binary32
 * and binary64 arithmetic (each C operation one rounding: the build has
 * -ffp-contract=off and SSE arithmetic) or with the exact path's RN16; they
 * choose inputs only, and every expected output is still the exact path's
 * (solve()). */

enum { X_F16_CLAMP, X_RECIP_TIE, X_DEQ_MIDPOINT, X_COUNT };
static const char *const X_NAMES[X_COUNT] = { "f16-clamp", "recip-tie", "deq-midpoint" };

/* Cases of each class per level set: {smoke, standard}. */
static const uint32_t X_CASES[X_COUNT][2] = { { 2, 4 }, { 3, 9 }, { 3, 9 } };

static uint64_t n_constructed(int smoke)
{
    uint64_t n = 0;
    for (int x = 0; x < X_COUNT; x++) n += X_CASES[x][smoke ? 0 : 1];
    return n;
}

/* The pinned integer code of a binary32 quotient [KIVI-Q-04] [KIVI-Q-05]:
 * round by the tie rule, clamp to [0, cmax]. */
static uint32_t round_clamp(float q, uint32_t cmax, uint32_t ties)
{
    float k;
    if (q > (float)cmax + 1.0f) return cmax;
    if (q < -1.0f) return 0u;
    k = ties == KVQ_TIES_AWAY ? roundf(q) : rintf(q); /* rintf: to nearest even */
    return k < 0.0f ? 0u : (k > (float)cmax ? cmax : (uint32_t)k);
}

/* The code of x in a group with stored s, z (both binary32, s > 0): the pinned
 * division (inv == 0) or a multiplication by the reciprocal inv. */
static uint32_t code_of(float x, float s, float z, float inv, uint32_t cmax, uint32_t ties)
{
    float t = x - z;
    return round_clamp(inv != 0.0f ? t * inv : t / s, cmax, ties);
}

/* Place mn and mx at two distinct random positions of a group of G, the
 * chosen values (nv of them, cycled) at the others; mn <= every value <= mx. */
static void place(float *x, size_t stride, uint32_t G, float mn, float mx, const float *val,
                  uint32_t nv, kvq_rng *r)
{
    uint32_t pmn = kvq_rng_below(r, G), pmx = (pmn + 1u + kvq_rng_below(r, G - 1u)) % G, j = 0;
    uint32_t off = nv ? kvq_rng_below(r, nv) : 0u;
    for (uint32_t i = 0; i < G; i++) {
        float v;
        if (i == pmn) v = mn;
        else if (i == pmx) v = mx;
        else if (nv) v = val[(off + j++) % nv];
        else v = mn + (mx - mn) * kvq_rng_unit(r);
        if (!(v >= mn)) v = mn;
        if (!(v <= mx)) v = mx;
        x[i * stride] = v;
    }
}

/* Near-ties of the code quotient (binary32 metadata): elements next to
 * z + (k + 1/2) s where RN32(RN32(x - z) * RN32(1/s)) rounds to another code
 * than the pinned RN32(RN32(x - z) / s) [KIVI-Q-04].  The group's range and
 * offset give s = RN32(RN32(mx - mn) / cmax), z = mn, exactly as [KIVI-Q-02]
 * [KIVI-Q-03]; the scale is kept at most 2^126 (a normal reciprocal, the case
 * spec/bounds/kivi.md covers), so a reciprocal kernel still passes the bounded
 * level.  Up to G - 2 such elements; at least one (1 returned). */
static int recip_group(float *x, size_t stride, uint32_t G, uint32_t bits, uint32_t ties, kvq_rng *r)
{
    uint32_t cmax = kvq_code_max(bits);
    float found[128];
    for (int tries = 0; tries < 512; tries++) {
        int e = (int)kvq_rng_below(r, 9) - 4; /* |mn| at most about the range: fine quotient steps */
        float mn = ldexpf(kvq_rng_sym(r), e + (int)kvq_rng_below(r, 2));
        float mx = mn + ldexpf(1.0f + kvq_rng_unit(r), e);
        float s = (mx - mn) / (float)cmax, inv;
        uint32_t nf = 0;
        if (!(s >= 0x1p-126f && s <= 0x1p126f)) continue;
        inv = 1.0f / s;
        for (uint32_t a = 0; a < 8u * cmax + 16u && nf < G - 2u && nf < 128u; a++) {
            uint32_t k = cmax > 1u ? kvq_rng_below(r, cmax) : 0u;
            float xs = (float)((double)mn + ((double)k + 0.5) * (double)s);
            int j0 = (int)kvq_rng_below(r, 17) - 8;
            for (int j = 0; j < 17; j++) {
                int step = (j0 + j + 8) % 17 - 8; /* -8 .. 8, starting at a random offset */
                float v = xs;
                for (int m = 0; m < (step < 0 ? -step : step); m++)
                    v = nextafterf(v, step < 0 ? -INFINITY : INFINITY);
                if (!(v > mn && v < mx)) continue;
                if (code_of(v, s, mn, 0.0f, cmax, ties) != code_of(v, s, mn, inv, cmax, ties)) {
                    found[nf++] = v;
                    break;
                }
            }
        }
        if (nf == 0) continue;
        place(x, stride, G, mn, mx, found, nf, r);
        return 1;
    }
    return 0;
}

/* Dequantization midpoints (binary32 metadata): a scale s whose multiple
 * c s (c = 3 2^j <= cmax) is exactly a binary32 midpoint, and a tiny offset
 * z = mn of the sign that makes the pinned fmaf(c, s, z) [KIVI-D-01] round
 * away from the even neighbour, while binary64 c s + z rounds to c s and
 * then to binary32 to the even one.  s = m 2^e with m odd below 2^25/3 (so
 * 3m has 25 significant bits, the last one set); mx = RN32(cmax s0) so that
 * RN32(RN32(mx - mn) / cmax) = s [KIVI-Q-02] (checked, with the difference).
 * Elements: mn, mx, copies of RN32(c s) (whose pinned code is c, checked),
 * the rest uniform in the range.  bits >= 2; 1 when found. */
static int deq_group(float *x, size_t stride, uint32_t G, uint32_t bits, uint32_t ties, kvq_rng *r)
{
    uint32_t cmax = kvq_code_max(bits);
    float val[64];
    if (cmax < 3u) return 0;
    for (int tries = 0; tries < 512; tries++) {
        uint32_t m = (1u << 23) + 2u * kvq_rng_below(r, ((1u << 25) / 3u - (1u << 23)) / 2u) + 1u;
        float s0 = ldexpf((float)m, -23 - 2 - (int)kvq_rng_below(r, 6));
        float mx = (float)((double)cmax * (double)s0); /* the product is exact in binary64 */
        float tiny = ldexpf(1.0f + kvq_rng_unit(r), -70 - (int)kvq_rng_below(r, 40));
        for (int sg = 0; sg < 2; sg++) {
            float mn = sg ? -tiny : tiny, s = (mx - mn) / (float)cmax;
            uint32_t nv = 0;
            if (!(s >= 0x1p-126f)) continue;
            for (uint32_t c = 3u; c <= cmax && nv + 4u <= 64u; c *= 2u) {
                float yp = fmaf((float)c, s, mn);
                float yd = (float)((double)c * (double)s + (double)mn);
                float xc = (float)((double)c * (double)s);
                if (yp == yd || !(xc > mn && xc <= mx) || code_of(xc, s, mn, 0.0f, cmax, ties) != c)
                    continue;
                for (uint32_t i = 0; i < 4u; i++) val[nv++] = xc;
            }
            if (nv == 0) continue;
            /* the other elements: uniform in the range, after the midpoint ones */
            while (nv < G - 2u && nv < 64u) val[nv++] = mn + (mx - mn) * kvq_rng_unit(r);
            place(x, stride, G, mn, mx, val, nv < G - 2u ? nv : G - 2u, r);
            return 1;
        }
    }
    return 0;
}

/* Binary16 metadata whose rounding moves a code out of [0, cmax]
 * [KIVI-M-02] [KIVI-Q-05]: z16 = RN16(mn) lies above mn by delta ("bottom":
 * the smallest values get a quotient below -1/2, so a negative integer,
 * clamped to 0) or below it ("top": the largest value's quotient exceeds
 * cmax + 1/2, clamped to cmax).  delta is 0.25 .. 0.45 of z16's binary16 ulp
 * (z16's mantissa away from the binade ends, so z16 is the nearest binary16
 * value), the range r = rho delta cmax with rho in [0.4, 1.4), so s16 about
 * r / cmax and the out-of-range quotient is about -1/rho or cmax + 1/rho.  A
 * kernel that packs the unclamped integer writes a wrapped code (cmax + 1 is
 * 0 in n bits, -1 is cmax).  1 when the construction, re-evaluated with the
 * exact path's RN16 and binary32 arithmetic, clamps some element. */
static int f16_clamp_group(float *x, size_t stride, uint32_t G, uint32_t bits, uint32_t ties, int top,
                           kvq_rng *r)
{
    uint32_t cmax = kvq_code_max(bits);
    for (int tries = 0; tries < 64; tries++) {
        int e0 = 2 + (int)kvq_rng_below(r, 9), ov;
        float u16 = ldexpf(1.0f, e0 - 10);
        float z16 = ldexpf((float)(1025u + kvq_rng_below(r, 1022)), e0 - 10) * (kvq_rng_below(r, 2) ? 1.0f : -1.0f);
        float delta = u16 * (0.25f + 0.2f * kvq_rng_unit(r));
        float mn = top ? z16 + delta : z16 - delta;
        float mx = mn + delta * (float)cmax * (0.4f + kvq_rng_unit(r));
        float s16, zz;
        int clamped = 0;
        place(x, stride, G, mn, mx, NULL, 0, r);
        /* re-evaluate [KIVI-Q-02] [KIVI-M-02] [KIVI-Q-04] on what was placed */
        s16 = kvq_exact_round_float((mx - mn) / (float)cmax, &kvq_xfmt_binary16, &ov);
        zz = kvq_exact_round_float(mn, &kvq_xfmt_binary16, &ov);
        if (!(s16 >= 0x1p-14f) || zz != z16) continue;
        for (uint32_t i = 0; i < G; i++) {
            float q = (x[i * stride] - zz) / s16;
            float k = ties == KVQ_TIES_AWAY ? roundf(q) : rintf(q);
            if (k < 0.0f || k > (float)cmax) clamped = 1;
        }
        if (clamped) return 1;
    }
    return 0;
}

/* Constructed case j (after the error cases): X_F16_CLAMP cases alternate the
 * levels (exact first), X_RECIP_TIE and X_DEQ_MIDPOINT cases are exact two
 * times in three (they exist for the exact level) and bounded the third.
 * meta f32 except X_F16_CLAMP; subnormal keep; overflow saturate; ties drawn. */
static kvq_status make_constructed(kvq_case *c, const char *tag, uint64_t seed, uint64_t k, uint32_t j,
                                   int smoke)
{
    static const uint32_t GS_SMOKE[3] = { 8, 16, 32 };
    static const uint32_t GS_STD[4] = { 8, 16, 32, 64 };
    kvq_rng r = { seed ^ (0xC2B2AE3D27D4EB4Full * (k + 1u)) };
    kvq_kivi_in *in;
    kvq_kivi_shape *s;
    uint32_t cls = 0, jj = j, ng;
    while (cls + 1u < X_COUNT && jj >= X_CASES[cls][smoke ? 0 : 1]) jj -= X_CASES[cls++][smoke ? 0 : 1];
    if (kvq_case_begin(c, &kvq_op_kivi_quant) != KVQ_OK) return KVQ_E_NOMEM;
    in = c->in;
    s = &in->shape;
    (void)kvq_rng_next(&r);
    c->pol = kvq_policy_default;
    if (kvq_rng_below(&r, 3) == 0) c->pol.ties = KVQ_TIES_AWAY;
    c->level = cls == X_F16_CLAMP ? jj % 2u : (jj % 3u == 2u ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT);
    s->bits = cls == X_RECIP_TIE ? 1u << kvq_rng_below(&r, 4) : 2u << kvq_rng_below(&r, 3);
    s->grouping = k % 2u;
    s->meta = cls == X_F16_CLAMP ? KVQ_META_F16 : KVQ_META_F32;
    s->group = smoke ? GS_SMOKE[kvq_rng_below(&r, 3)] : GS_STD[kvq_rng_below(&r, 4)];
    ng = 2u + kvq_rng_below(&r, smoke ? 3 : 7);
    if (s->grouping == KVQ_GROUP_CHANNEL) s->tokens = s->group, s->channels = ng;
    else s->channels = s->group, s->tokens = ng;
    snprintf(c->id, sizeof c->id, "kivi-%s-%05llu-%s", tag, (unsigned long long)k, X_NAMES[cls]);
    c->status = KVQ_OK;
    if (kvq_case_alloc(c) != KVQ_OK) return KVQ_E_NOMEM;
    for (uint32_t g = 0; g < ng; g++) {
        float *xg = in->x + kvq_kivi_group_base(s, g);
        size_t st = (size_t)kvq_kivi_group_stride(s);
        int ok = cls == X_RECIP_TIE ? recip_group(xg, st, s->group, s->bits, c->pol.ties, &r)
               : cls == X_DEQ_MIDPOINT ? deq_group(xg, st, s->group, s->bits, c->pol.ties, &r)
                                       : f16_clamp_group(xg, st, s->group, s->bits, c->pol.ties, (int)(g % 2u), &r);
        if (!ok) /* not met in practice: ordinary data keeps the case valid */
            fill_group(xg, st, s->group, s->bits, D_UNIFORM, &r);
    }
    return c->op->solve(c);
}

/* Level sets [VEC-GEN-02]: regular cases, one case of each error class,
 * then the constructed classes. */
static uint64_t n_regular(const char *levels)
{
    return strcmp(levels, "smoke") == 0 ? 96u : strcmp(levels, "standard") == 0 ? 1152u : 0u;
}

uint64_t kvq_kivi_gen_count(const char *levels)
{
    uint64_t nreg = n_regular(levels);
    return nreg ? nreg + E_COUNT + n_constructed(strcmp(levels, "smoke") == 0) : 0u;
}

kvq_status kvq_kivi_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k)
{
    uint64_t nreg = n_regular(levels);
    int smoke = strcmp(levels, "smoke") == 0;
    const char *tag = smoke ? "smoke" : "std";
    kvq_status st = k < nreg ? make_regular(c, tag, seed, k, smoke)
                  : k < nreg + E_COUNT ? make_error(c, tag, seed, k, (uint32_t)(k - nreg))
                                       : make_constructed(c, tag, seed, k, (uint32_t)(k - nreg - E_COUNT), smoke);
    if (st != KVQ_OK) kvq_case_free(c);
    return st;
}
