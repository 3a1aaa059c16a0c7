/*
 * kivi.c -- KIVI asymmetric group quantizer, fast path (binary32).
 *
 * Every float operation below is one IEEE binary32 operation rounded to nearest
 * even (the build uses -ffp-contract=off, so no FMA is formed unless fmaf is
 * named).  The sequence is the one spec/kivi.md pins; comments give the
 * requirement and the rounding that happens at each step.
 */
#include <math.h>

#include "kvq.h"

#define KVQ_F32_MAX        0x1.fffffep+127f /* largest finite binary32 */
#define KVQ_F32_MIN_NORMAL 0x1p-126f        /* smallest normal binary32 */
#define KVQ_F16_MAX        0x1.ffcp+15f     /* 65504, largest finite binary16 */
#define KVQ_F16_OVF        0x1.ffep+15f     /* 65520: smallest magnitude RN16 overflows */
#define KVQ_F16_MIN_NORMAL 0x1p-14f         /* smallest normal binary16 */

/* ---- ACSL of the tensor calls (the WP run of this file, proofs/scope/10-kivi.sh)
 * The logic functions that name what the tensor calls compute, and the
 * contracts of the functions they call that kvq.h and kvq_layout.h do not
 * state: a later declaration adds clauses to a function's contract (Frama-C
 * merges them), so the headers every other proof run reads stay as they are.
 * ------------------------------------------------------------------------- */

/*@ // ---- the KIVI tensor layout [KIVI-L-01..04], over the shape's fields
    // (T tokens, D channels, G the group, b the bits)
    // One axiomatic block: WP gives its lemmas only to the goals that use one
    // of its logic functions (the tensor calls and the layout helpers), not
    // to every goal of this file (nonlinear lemmas in a goal's context stop
    // CVC4 1.8 on goals it otherwise closes).
    axiomatic KviLayout {
      predicate kvq_kivi_params_l(integer b, integer G, integer grouping, integer meta) =
          kvq_valid_bits(b) && 8 <= G <= KVQ_MAX_GROUP && G % 8 == 0 &&
          (grouping == KVQ_GROUP_CHANNEL || grouping == KVQ_GROUP_TOKEN) &&
          (meta == KVQ_META_F32 || meta == KVQ_META_F16);
      predicate kvq_kivi_extent_l(integer T, integer D, integer G, integer grouping) =
          0 < T <= KVQ_MAX_DIM && 0 < D <= KVQ_MAX_DIM && T * D <= KVQ_MAX_ELEMS &&
          (grouping == KVQ_GROUP_CHANNEL ? T % G == 0 : D % G == 0);
      logic integer kvq_kivi_groups_l(integer T, integer D, integer G) = (T * D) / G;
      logic integer kvq_kivi_gbytes_l(integer G, integer b) = (G * b) / 8;
      logic integer kvq_kivi_stride_l(integer D, integer grouping) =
          grouping == KVQ_GROUP_CHANNEL ? D : 1;
      // Index into x of element 0 of group g, and of its element i [KIVI-L-03].
      logic integer kvq_kivi_base_l(integer D, integer G, integer grouping, integer g) =
          grouping == KVQ_GROUP_CHANNEL ? (g / D) * G * D + g % D : g * G;
      logic integer kvq_kivi_index_l(integer D, integer G, integer grouping, integer g, integer i) =
          kvq_kivi_base_l(D, G, grouping, g) + i * kvq_kivi_stride_l(D, grouping);

      // ---- the layout's index facts, stated once as lemmas (run `kivi_index`) and
      // used by the tensor calls as instances.  A code byte's offset is a
      // product with the bit width: split on the width, each case linear.
      lemma kvq_kivi_byte_in_1: \forall integer i, G; 0 <= i < G && G % 8 == 0 ==>
          0 <= kvq_code_byte_l(i, 1) < kvq_kivi_gbytes_l(G, 1);
      lemma kvq_kivi_byte_in_2: \forall integer i, G; 0 <= i < G && G % 8 == 0 ==>
          0 <= kvq_code_byte_l(i, 2) < kvq_kivi_gbytes_l(G, 2);
      lemma kvq_kivi_byte_in_4: \forall integer i, G; 0 <= i < G && G % 8 == 0 ==>
          0 <= kvq_code_byte_l(i, 4) < kvq_kivi_gbytes_l(G, 4);
      lemma kvq_kivi_byte_in_8: \forall integer i, G; 0 <= i < G && G % 8 == 0 ==>
          0 <= kvq_code_byte_l(i, 8) < kvq_kivi_gbytes_l(G, 8);
      // Element i < G of a group is at byte (i b)/8 < (G b)/8 of its codes.
      lemma kvq_kivi_byte_in: \forall integer i, G, b;
          kvq_valid_bits(b) && 1 <= b <= 8 && 0 <= i < G && G % 8 == 0 ==>
          0 <= kvq_code_byte_l(i, b) < kvq_kivi_gbytes_l(G, b);
      // Byte k < B of group g < ng lies within the ng B bytes, and (ng := a
      // later group) before that group's first byte; group g's B bytes end
      // within them (a product of symbolic sizes: accepted, [TR-GOAL-KIVI-LAYOUT]).
      lemma kvq_kivi_block_in: \forall integer g, ng, B, k;
          0 <= g < ng && 0 <= k < B ==> 0 <= g * B + k < ng * B;
      lemma kvq_kivi_block_end: \forall integer g, ng, B;
          0 <= g < ng && 0 <= B ==> 0 <= g * B && g * B + B <= ng * B;
      // Element i < G of group g < T D / G is at an index below T D [KIVI-L-03]
      // (per token g G + i, per channel ((g / D) G + i) D + g % D) ...
      lemma kvq_kivi_index_in: \forall integer T, D, G, grouping, g, i;
          8 <= G && kvq_kivi_extent_l(T, D, G, grouping) &&
          (grouping == KVQ_GROUP_CHANNEL || grouping == KVQ_GROUP_TOKEN) &&
          0 <= g < kvq_kivi_groups_l(T, D, G) && 0 <= i < G ==>
          0 <= kvq_kivi_index_l(D, G, grouping, g, i) < T * D;
      // ... and no two (group, element) pairs share one.  Both are products of
      // three symbolic sizes: accepted, [TR-GOAL-KIVI-LAYOUT].
      lemma kvq_kivi_index_distinct: \forall integer T, D, G, grouping, g, i, g2, i2;
          8 <= G && kvq_kivi_extent_l(T, D, G, grouping) &&
          (grouping == KVQ_GROUP_CHANNEL || grouping == KVQ_GROUP_TOKEN) &&
          0 <= g < kvq_kivi_groups_l(T, D, G) && 0 <= i < G &&
          0 <= g2 < kvq_kivi_groups_l(T, D, G) && 0 <= i2 < G && (g2 != g || i2 != i) ==>
          kvq_kivi_index_l(D, G, grouping, g2, i2) != kvq_kivi_index_l(D, G, grouping, g, i);
    }

    // ---- a policy whose every field holds a defined value [POL-01]
    predicate kvq_policy_ok_l{L}(kvq_policy *pol) =
        pol != \null &&
        (pol->ties == KVQ_TIES_EVEN || pol->ties == KVQ_TIES_AWAY) &&
        (pol->overflow == KVQ_OVERFLOW_SATURATE || pol->overflow == KVQ_OVERFLOW_NAN) &&
        (pol->subnormal == KVQ_SUBNORMAL_KEEP || pol->subnormal == KVQ_SUBNORMAL_DAZ);

    // ---- values
    // An input as the subnormal policy reads it [POL-SN-01]: a subnormal is
    // read as zero under daz (its sign is immaterial to every use as a real).
    logic real kvq_read_l(real v, integer subnormal) =
        subnormal == KVQ_SUBNORMAL_DAZ && v != 0 && \abs(v) < 0x1p-126 ? 0 : v;
    // A dequantized KIVI value [KIVI-D-01]: RN32(c*s + z), one rounding,
    // saturated to +-FLT_MAX past the binary32 range [POL-OV-01] (a value
    // between FLT_MAX and the overflow threshold rounds to FLT_MAX anyway).
    // The exact x y + z of fmaf, named: the provers see one term, not a product.
    logic real kvq_fma_l(real x, real y, real z) = x * y + z;
    // v rounded once, saturated to +-FLT_MAX past the binary32 range.
    logic real kvq_kivi_sat_l(real v) =
        \abs(v) <= 0x1.fffffep127 ? kvq_rn32_l(v) : v > 0 ? 0x1.fffffep127 : -0x1.fffffep127;
    logic real kvq_kivi_deq_l(real c, real s, real z) = kvq_kivi_sat_l(kvq_fma_l(c, s, z));
    // The spacing of the binary16 grid at magnitude a < 2^16: 2^-24 below
    // 2^-13 (the subnormal quantum, and the binade [2^-14, 2^-13)), 2^(k-10)
    // in the binade [2^k, 2^(k+1)) [POL-F16-01].
    logic real kvq_f16_quantum_l(real a) =
        a < 0x1p-13 ? 0x1p-24 :
        a < 0x1p-12 ? 0x1p-23 :
        a < 0x1p-11 ? 0x1p-22 :
        a < 0x1p-10 ? 0x1p-21 :
        a < 0x1p-9 ? 0x1p-20 :
        a < 0x1p-8 ? 0x1p-19 :
        a < 0x1p-7 ? 0x1p-18 :
        a < 0x1p-6 ? 0x1p-17 :
        a < 0x1p-5 ? 0x1p-16 :
        a < 0x1p-4 ? 0x1p-15 :
        a < 0x1p-3 ? 0x1p-14 :
        a < 0x1p-2 ? 0x1p-13 :
        a < 0x1p-1 ? 0x1p-12 :
        a < 0x1p0 ? 0x1p-11 :
        a < 0x1p1 ? 0x1p-10 :
        a < 0x1p2 ? 0x1p-9 :
        a < 0x1p3 ? 0x1p-8 :
        a < 0x1p4 ? 0x1p-7 :
        a < 0x1p5 ? 0x1p-6 :
        a < 0x1p6 ? 0x1p-5 :
        a < 0x1p7 ? 0x1p-4 :
        a < 0x1p8 ? 0x1p-3 :
        a < 0x1p9 ? 0x1p-2 :
        a < 0x1p10 ? 0x1p-1 :
        a < 0x1p11 ? 0x1p0 :
        a < 0x1p12 ? 0x1p1 :
        a < 0x1p13 ? 0x1p2 :
        a < 0x1p14 ? 0x1p3 :
        a < 0x1p15 ? 0x1p4 :
        a < 0x1p16 ? 0x1p5 :
        0x1p6;
    // RN16(v): v rounded once, to nearest even, onto the binary16 grid, for
    // |v| < 65520 (no overflow) [POL-F16-01].  A tie between two grid points
    // of a binade goes to the even multiple of the quantum; at the top of a
    // binade the next multiple is the binade's end 2^(k+1), on the grid.
    logic real kvq_rn16_l(real v) =
        kvq_rne_l(v / kvq_f16_quantum_l(\abs(v))) * kvq_f16_quantum_l(\abs(v));
*/

/* [TR-POLICY-CHECK] ref/common/status.c: KVQ_OK exactly for a valid policy. */
/*@ requires policy: pol == \null || \valid_read(pol);
    assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM;
    ensures def: \result == KVQ_OK <==> kvq_policy_ok_l(pol);
*/
kvq_status kvq_policy_check(const kvq_policy *pol);

/* [TR-LIBM-FMA] fmaf's value (C11 F.10.10.1), for the dequantizer: RN32 of the
 * exact x*y + z within the finite range; past it, the largest finite value of
 * its sign or the infinity (RN32 overflows at 2^128 - 2^103, beyond FLT_MAX),
 * and an infinity only past it, of the sign of x*y + z.  The rest of its
 * contract is in proofs/libm_spec.h. */
/*@ ensures value: \is_finite(x) && \is_finite(y) && \is_finite(z) &&
        -0x1.fffffep127 <= kvq_fma_l(x, y, z) <= 0x1.fffffep127 ==>
        \is_finite(\result) && \result == kvq_rn32_l(kvq_fma_l(x, y, z));
    ensures above: \is_finite(x) && \is_finite(y) && \is_finite(z) &&
        kvq_fma_l(x, y, z) > 0x1.fffffep127 ==> \result == 0x1.fffffep127 || \is_infinite(\result);
    ensures below: \is_finite(x) && \is_finite(y) && \is_finite(z) &&
        kvq_fma_l(x, y, z) < -0x1.fffffep127 ==> \result == -0x1.fffffep127 || \is_infinite(\result);
    ensures infinite: \is_finite(x) && \is_finite(y) && \is_finite(z) && \is_infinite(\result) ==>
        (kvq_fma_l(x, y, z) > 0x1.fffffep127 && \is_plus_infinity(\result)) ||
        (kvq_fma_l(x, y, z) < -0x1.fffffep127 && \is_minus_infinity(\result));
*/
extern float fmaf(float x, float y, float z);

/* The KIVI tensor-layout helpers of kvq_layout.h the tensor calls use, as
 * the layout's logic functions (run kivi_layout). */
/*@ requires shape: \valid_read(s);
    assigns \nothing;
    ensures bool: \result == 0 || \result == 1;
    ensures def: \result == 1 <==> kvq_kivi_params_l(s->bits, s->group, s->grouping, s->meta);
*/
static inline int kvq_kivi_params_ok(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s) && s->group > 0;
    assigns \nothing;
    ensures bool: \result == 0 || \result == 1;
    ensures def: \result == 1 <==> kvq_kivi_extent_l(s->tokens, s->channels, s->group, s->grouping);
*/
static inline int kvq_kivi_shape_ok(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s);
    assigns \nothing;
    ensures def: \result == s->tokens * s->channels;
*/
static inline uint64_t kvq_kivi_elems(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s) && s->group > 0;
    assigns \nothing;
    ensures def: \result == kvq_kivi_groups_l(s->tokens, s->channels, s->group);
*/
static inline uint64_t kvq_kivi_groups(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s) && s->group <= KVQ_MAX_GROUP && s->bits <= 8;
    assigns \nothing;
    ensures def: \result == kvq_kivi_gbytes_l(s->group, s->bits);
*/
static inline uint32_t kvq_kivi_group_bytes(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s) &&
        kvq_kivi_params_l(s->bits, s->group, s->grouping, s->meta) &&
        kvq_kivi_extent_l(s->tokens, s->channels, s->group, s->grouping);
    requires g_range: g < kvq_kivi_groups_l(s->tokens, s->channels, s->group);
    assigns \nothing;
    ensures def: \result == kvq_kivi_base_l(s->channels, s->group, s->grouping, g);
*/
static inline uint64_t kvq_kivi_group_base(const kvq_kivi_shape *s, uint64_t g);
/*@ requires shape: \valid_read(s);
    assigns \nothing;
    ensures def: \result == kvq_kivi_stride_l(s->channels, s->grouping);
*/
static inline uint64_t kvq_kivi_group_stride(const kvq_kivi_shape *s);
/*@ requires shape: \valid_read(s) &&
        kvq_kivi_params_l(s->bits, s->group, s->grouping, s->meta) &&
        kvq_kivi_extent_l(s->tokens, s->channels, s->group, s->grouping);
    requires g_range: g < kvq_kivi_groups_l(s->tokens, s->channels, s->group);
    requires i_range: i < s->group;
    assigns \nothing;
    ensures def: \result == kvq_kivi_index_l(s->channels, s->group, s->grouping, g, i);
*/
static inline uint64_t kvq_kivi_elem_index(const kvq_kivi_shape *s, uint64_t g, uint32_t i);
/*@ requires shape: \valid_read(s) &&
        kvq_kivi_params_l(s->bits, s->group, s->grouping, s->meta) &&
        kvq_kivi_extent_l(s->tokens, s->channels, s->group, s->grouping);
    requires g_range: g < kvq_kivi_groups_l(s->tokens, s->channels, s->group);
    assigns \nothing;
    ensures def: \result == g * kvq_kivi_gbytes_l(s->group, s->bits);
    // the group's bytes lie within the tensor's (lemma kvq_kivi_block_end)
    ensures block: \result + kvq_kivi_gbytes_l(s->group, s->bits) <=
        kvq_kivi_groups_l(s->tokens, s->channels, s->group) * kvq_kivi_gbytes_l(s->group, s->bits);
*/
static inline uint64_t kvq_kivi_group_code_offset(const kvq_kivi_shape *s, uint64_t g);

/* kvq_round_f16 [POL-F16-01..02]: the overflow flag and the value (added to
 * the contract of kvq.h). */
/*@ ensures overflow_def: *overflow == 1 <==> \abs(v) >= 0x1.ffep+15;   // [POL-F16-02]
    ensures saturated: *overflow == 1 ==>
        \result == (v > 0 ? 0x1.ffcp+15 : -0x1.ffcp+15);            // [POL-F16-02]
    ensures value: *overflow == 0 ==> \result == kvq_rn16_l(v);      // [POL-F16-01]
*/
float kvq_round_f16(float v, int *overflow);

/* kvq_kivi_quantize_group [KIVI-Q-04..05]: every code is the pinned code of
 * its element, as read under the policy, against the stored scale and zero,
 * whenever x - z and the quotient are in the binary32 range (always but when
 * the range saturated) (added to the contract of kvq.h). */
/*@ ensures codes_value: \result == KVQ_OK ==> \forall integer i; 0 <= i < group &&
        kvq_quot_ok_l(kvq_read_l(\old(v[i * stride]), \old(pol->subnormal)), *scale, *zero) ==>
        kvq_code_l(grp, i, bits) ==
            kvq_kivi_code_l(kvq_read_l(\old(v[i * stride]), \old(pol->subnormal)), *scale, *zero,
                            bits, \old(pol->ties));
*/
kvq_status kvq_kivi_quantize_group(uint8_t *grp, float *scale, float *zero, uint32_t *flags,
                                   const float *v, size_t stride, uint32_t group,
                                   uint32_t bits, uint32_t meta, const kvq_policy *pol);

/* 1 when q = fl + d, fl = floor(q), is rounded up from fl, else 0: d is exact,
 * so the tie test is exact [POL-TIE-01, POL-TIE-02].  A helper of its own so
 * that the integer goals of round_nonneg carry no float literal. */
/*@ requires finite: \is_finite(d);
    assigns \nothing;
    ensures zero_or_one: \result == 0 || \result == 1;
    ensures value: \result == kvq_round_up_l(d, i, ties);          // [POL-TIE-01..02]
*/
static int64_t round_up(float d, int64_t i, uint32_t ties)
{
    //@ assert half: (float)0.5 == 0.5;
    if (d > 0.5f) return 1;
    if (d < 0.5f) return 0;
    if (ties == KVQ_TIES_AWAY) return 1;
    return i % 2 == 0 ? 0 : 1;
}

/* floor(q) as an integer, and *d = q - floor(q), exact (Sterbenz for q >= 1,
 * trivially for q < 1).  The float steps of round_nonneg, split off so that
 * its integer goals carry no float operation. */
/*@ requires finite: \is_finite(q);
    requires range: 0 <= q < 0x1p31;
    requires out: \valid(d);
    assigns *d;
    ensures floor: \result == \floor(q);
    ensures frac_finite: \is_finite(*d);
    ensures frac: *d == q - \floor(q);
*/
static int64_t floor_split(float q, float *d)
{
    float fl = floorf(q);
    int64_t i;
    *d = q - fl;                         /* exact */
    //@ assert fl_range: 0 <= \floor(q) < 0x1p31 && fl == \floor(q);
    i = (int64_t)fl;
    //@ assert i_floor: i == \floor(q);
    return i;
}

/* Round a finite q >= 0, q < 2^31: floor(q), plus one when round_up says so
 * (the tie test on the exact remainder). [POL-TIE-01] */
/*@ requires finite: \is_finite(q);
    requires range: 0 <= q < 0x1p31;
    assigns \nothing;
    ensures floor_or_next: \floor(q) <= \result <= \floor(q) + 1;   // [POL-TIE-01]
    ensures result_range: 0 <= \result <= 0x1p31;
    ensures value: \result == kvq_round_nonneg_l(q, ties);         // [POL-TIE-01..02]
    ensures tie_even: ties != 1 && \abs(q - \result) == 0.5 ==> \result % 2 == 0;
*/
static int64_t round_nonneg(float q, uint32_t ties)
{
    float d;
    int64_t i = floor_split(q, &d);
    return i + round_up(d, i, ties);
}

int64_t kvq_round_int(float q, uint32_t ties)
{
    /* Both tie rules are symmetric about 0, so negative q is rounded as
     * -q = |q| (fabsf: exact, the same bits as -q). */
    if (q < 0.0f) return -round_nonneg(fabsf(q), ties);
    return round_nonneg(q, ties);
}

float kvq_round_f16(float v, int *overflow)
{
    float a = fabsf(v), r;
    *overflow = 0;
    if (a >= KVQ_F16_OVF) {              /* past the midpoint 65504..65536 [POL-F16-02] */
        *overflow = 1;
        return copysignf(KVQ_F16_MAX, v);
    }
    if (a < KVQ_F16_MIN_NORMAL) {        /* subnormal grid, quantum 2^-24: scaling exact */
        r = ldexpf((float)round_nonneg(ldexpf(a, 24), KVQ_TIES_EVEN), -24);
    } else {                             /* 11 significant bits: scale to [2^10, 2^11) */
        int e;
        (void)frexpf(a, &e);             /* a = m * 2^e, 1/2 <= m < 1; exact */
        r = ldexpf((float)round_nonneg(ldexpf(a, 11 - e), KVQ_TIES_EVEN), e - 11);
    }
    return copysignf(r, v);
}

/* Read one input under the subnormal policy [POL-SN-01]. */
/*@ requires policy: \valid_read(pol);
    requires out: \valid(flags) && \separated(flags, pol);
    assigns *flags;
    ensures finite: \is_finite(v) ==> \is_finite(\result);
    ensures value: \is_finite(v) ==> \result == v || \result == 0; // [POL-SN-01]
    ensures read: \is_finite(v) ==> \result == kvq_read_l(v, pol->subnormal); // [POL-SN-01]
*/
static float read_input(float v, const kvq_policy *pol, uint32_t *flags)
{
    if (v != 0.0f && fabsf(v) < KVQ_F32_MIN_NORMAL) {
        *flags |= KVQ_FLAG_SUBNORMAL;
        if (pol->subnormal == KVQ_SUBNORMAL_DAZ) return copysignf(0.0f, v);
    }
    return v;
}

/* Stored metadata of a group from its min and max [KIVI-Q-01..03, KIVI-M-01..03]. */
/*@ requires finite: \is_finite(mn) && \is_finite(mx);
    requires order: mn <= mx;
    requires args: kvq_valid_bits(bits) && (meta == KVQ_META_F32 || meta == KVQ_META_F16);
    requires out: \valid(scale) && \valid(zero) && \valid(flags) && \valid_read(pol);
    requires separated: \separated(scale, zero, flags, pol);
    assigns *scale, *zero, *flags;
    ensures status: \result == KVQ_OK || \result == KVQ_E_RANGE;
    ensures range_policy: \result == KVQ_E_RANGE ==> pol->overflow == KVQ_OVERFLOW_NAN; // [POL-OV-02]
    ensures meta_finite: \result == KVQ_OK ==> \is_finite(*scale) && \is_finite(*zero);
    ensures scale_form: \result == KVQ_OK ==> kvq_scale_form(*scale, meta);        // [POL-ZR-01]
*/
static kvq_status group_meta(float *scale, float *zero, uint32_t *flags, float mn, float mx,
                             uint32_t bits, uint32_t meta, const kvq_policy *pol)
{
    float cmax = (float)kvq_code_max(bits);
    float r = mx - mn;                   /* RN32; r >= 0 [KIVI-Q-02] */
    float s, z;
    if (isinf(r)) {                      /* range overflow [POL-OV-01] */
        if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
        r = KVQ_F32_MAX;
        *flags |= KVQ_FLAG_SATURATED;
    }
    s = r / cmax;                        /* RN32, err <= 1/2 ulp(s) [KIVI-Q-02] */
    z = mn == 0.0f ? 0.0f : mn;          /* a zero offset is stored as +0 [KIVI-Q-03] */
    if (meta == KVQ_META_F16) {          /* binary16 storage [KIVI-M-02] */
        int ov_s, ov_z;
        s = kvq_round_f16(s, &ov_s);     /* RN16(RN32(r / cmax)) */
        z = kvq_round_f16(z, &ov_z);     /* RN16(min) */
        if (ov_s || ov_z) {
            if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
            *flags |= KVQ_FLAG_SATURATED;
        }
        if (z == 0.0f) z = 0.0f;
        if (s < KVQ_F16_MIN_NORMAL) s = 0.0f; /* zero range [POL-ZR-01] */
    } else if (s < KVQ_F32_MIN_NORMAL) {
        s = 0.0f;                        /* zero range [POL-ZR-01] */
    }
    if (s == 0.0f) *flags |= KVQ_FLAG_ZERO_SCALE;
    *scale = s;
    *zero = z;
    return KVQ_OK;
}

/* The quotient of one value against stored metadata: RN32(RN32(x - z) / s),
 * with x - z saturated to +-max when it overflows (only when the group's range
 * saturated) [KIVI-Q-04].  The float steps of code_of, split off so that its
 * clamp and rounding goals carry no float operation. */
/*@ requires finite: \is_finite(xv) && \is_finite(s) && \is_finite(z);
    requires scale: s > 0;
    requires out: \valid(flags);
    assigns *flags;
    ensures value: kvq_quot_ok_l(xv, s, z) ==>
        \is_finite(\result) && \result == kvq_quot_l(xv, s, z);
*/
static float code_quotient(float xv, float s, float z, uint32_t *flags)
{
    float t = xv - z;                    /* RN32 [KIVI-Q-04] */
    if (isinf(t)) {                      /* only when the range saturated */
        t = copysignf(KVQ_F32_MAX, t);
        *flags |= KVQ_FLAG_SATURATED;
    }
    return t / s;                        /* RN32 [KIVI-Q-04] */
}

/* Code of one value against stored metadata [KIVI-Q-04, KIVI-Q-05]. */
/*@ requires finite: \is_finite(xv) && \is_finite(s) && \is_finite(z);
    requires scale: s >= 0;
    requires args: kvq_valid_bits(bits);
    requires out: \valid(flags) && \valid_read(pol) && \separated(flags, pol);
    assigns *flags;
    ensures code_range: 0 <= \result <= kvq_code_max_l(bits);     // [KIVI-Q-05]
    ensures zero_scale: s == 0 ==> \result == 0;                  // [POL-ZR-01]
    // the pinned sequence, whenever x - z and (x - z)/s are in the binary32
    // range (outside only when the group's range saturated) [KIVI-Q-04..05]
    ensures value: kvq_quot_ok_l(xv, s, z) ==>
        \result == kvq_kivi_code_l(xv, s, z, bits, \old(pol->ties));
*/
static uint32_t code_of(float xv, float s, float z, uint32_t bits, const kvq_policy *pol,
                        uint32_t *flags)
{
    float cmax = (float)kvq_code_max(bits);
    float hi = cmax + 1.0f;              /* exact */
    uint32_t ties = pol->ties;
    float q;
    int64_t c;
    //@ assert hi_exact: \is_finite(hi) && hi == kvq_code_max_l(bits) + 1;
    if (s == 0.0f) return 0u;            /* zero range: every code 0 [POL-ZR-01] */
    //@ assert s_pos: s > 0;
    q = code_quotient(xv, s, z, flags);  /* RN32(RN32(x - z) / s) [KIVI-Q-04] */
    if (q > hi) {                        /* rounds past cmax under either tie rule */
        //@ assert q_hi: \is_finite(q) ==> q > kvq_code_max_l(bits) + 1;
        //@ assert past_max: \is_finite(q) ==> kvq_round_ties_l(q, ties) > kvq_code_max_l(bits);
        *flags |= KVQ_FLAG_CLAMPED;
        return kvq_code_max(bits);
    }
    if (q < -1.0f) {
        //@ assert q_lo: \is_finite(q) ==> q < -1;
        //@ assert below_zero: \is_finite(q) ==> kvq_round_ties_l(q, ties) < 0;
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    c = kvq_round_int(q, ties);          /* |q| <= 257: exact [KIVI-Q-04] */
    if (c < 0) {
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    if (c > (int64_t)kvq_code_max(bits)) {
        *flags |= KVQ_FLAG_CLAMPED;
        return kvq_code_max(bits);
    }
    return (uint32_t)c;
}

/* Min and max of a group as read under the policy; a zero extreme is +0. */
/*@ requires group: 1 <= group <= KVQ_MAX_GROUP;
    requires stride_range: 1 <= stride <= KVQ_MAX_ELEMS;
    requires input: kvq_group_in(v, stride, group);                // [POL-NF-01]
    requires out: \valid(mn) && \valid(mx) && \valid(flags) && \valid_read(pol);
    requires separated: \separated(mn, mx, flags, pol);
    assigns *mn, *mx, *flags;
    ensures finite: \is_finite(*mn) && \is_finite(*mx);
    ensures order: *mn <= *mx;                                     // [KIVI-Q-01]
*/
static void group_minmax(float *mn, float *mx, uint32_t *flags, const float *v, size_t stride,
                         uint32_t group, const kvq_policy *pol)
{
    float lo = read_input(v[0], pol, flags), hi = lo;
    size_t at = stride;                  /* i * stride, kept by addition */
    /*@ loop invariant i_range: 1 <= i <= group;
        loop invariant at_index: at == i * stride && at <= i * KVQ_MAX_ELEMS;
        loop invariant finite: \is_finite(lo) && \is_finite(hi);
        loop invariant order: lo <= hi;
        loop assigns i, at, lo, hi, *flags;
        loop variant group - i;
    */
    for (uint32_t i = 1; i < group; i++, at += stride) {
        float xv;
        //@ assert elem: \valid_read(v + at) && \is_finite(v[at]);
        xv = read_input(v[at], pol, flags);
        if (xv < lo) lo = xv;
        if (xv > hi) hi = xv;
        //@ assert next: at + stride == (i + 1) * stride <= (i + 1) * KVQ_MAX_ELEMS;
    }
    *mn = lo;
    *mx = hi;
}

kvq_status kvq_kivi_quantize_group(uint8_t *grp, float *scale, float *zero, uint32_t *flags,
                                   const float *v, size_t stride, uint32_t group,
                                   uint32_t bits, uint32_t meta, const kvq_policy *pol)
{
    uint32_t f = 0;
    float mn, mx, s, z;
    size_t at = 0;                       /* i * stride, kept by addition */
    kvq_status st;
    group_minmax(&mn, &mx, &f, v, stride, group, pol);
    st = group_meta(&s, &z, &f, mn, mx, bits, meta, pol);
    if (st != KVQ_OK) return st;
    /* The group's bytes group*bits/8 and each element's byte (j*bits)/8 < group*bits/8,
     * by cases of the width: each case linear [TR-GOAL-NONLIN]. */
    //@ assert nb_1: bits == 1 ==> group * bits == group && (\forall integer j; 0 <= j < group ==> 0 <= kvq_code_byte_l(j, bits) < group * bits / 8);
    //@ assert nb_2: bits == 2 ==> group * bits == 2 * group && (\forall integer j; 0 <= j < group ==> 0 <= kvq_code_byte_l(j, bits) < group * bits / 8);
    //@ assert nb_4: bits == 4 ==> group * bits == 4 * group && (\forall integer j; 0 <= j < group ==> 0 <= kvq_code_byte_l(j, bits) < group * bits / 8);
    //@ assert nb_8: bits == 8 ==> group * bits == 8 * group && (\forall integer j; 0 <= j < group ==> 0 <= kvq_code_byte_l(j, bits) < group * bits / 8);
    //@ assert nb_range: group * bits <= 8 * KVQ_MAX_GROUP;
    //@ assert nb: \forall integer j; 0 <= j < group ==> 0 <= kvq_code_byte_l(j, bits) < group * bits / 8;
    /*@ loop invariant b_range: 0 <= b <= group * bits / 8;
        loop invariant cleared: \forall integer k; 0 <= k < b ==> grp[k] == 0;
        loop assigns b, grp[0 .. group * bits / 8 - 1];
        loop variant group * bits / 8 - b;
    */
    for (uint32_t b = 0; b < group * bits / 8u; b++) grp[b] = 0;
    /*@ loop invariant i_range: 0 <= i <= group;
        loop invariant codes: \forall integer j; 0 <= j < group ==>
            0 <= kvq_code_l(grp, j, bits) <= kvq_code_max_l(bits);
        loop invariant zero_codes: s == 0 ==>
            \forall integer j; 0 <= j < group ==> kvq_code_l(grp, j, bits) == 0;
        loop invariant value: \forall integer j; 0 <= j < i &&
            kvq_quot_ok_l(kvq_read_l(\at(v[j * stride], Pre), \at(pol->subnormal, Pre)), s, z) ==>
            kvq_code_l(grp, j, bits) ==
                kvq_kivi_code_l(kvq_read_l(\at(v[j * stride], Pre), \at(pol->subnormal, Pre)),
                                s, z, bits, \at(pol->ties, Pre));
        loop invariant at_index: at == i * stride && at <= i * KVQ_MAX_ELEMS;
        loop assigns i, at, f, grp[0 .. group * bits / 8 - 1];
        loop variant group - i;
    */
    for (uint32_t i = 0; i < group; i++, at += stride) {
        float xv;
        uint32_t c;
        //@ assert elem: \valid_read(v + at) && \is_finite(v[at]);
        /*@ assert elem_pre: \let k = i * stride; v[at] == \at(v[k], Pre) &&
              pol->ties == \at(pol->ties, Pre) && pol->subnormal == \at(pol->subnormal, Pre);
        */
        xv = read_input(v[at], pol, &f);
        c = code_of(xv, s, z, bits, pol, &f);
        /*@ assert c_value: \let k = i * stride;
              kvq_quot_ok_l(kvq_read_l(\at(v[k], Pre), \at(pol->subnormal, Pre)), s, z) ==>
              c == kvq_kivi_code_l(kvq_read_l(\at(v[k], Pre), \at(pol->subnormal, Pre)),
                                   s, z, bits, \at(pol->ties, Pre));
        */
        //@ assert byte_1: bits == 1 ==> 0 <= kvq_code_byte_l(i, bits) < group * bits / 8;
        //@ assert byte_2: bits == 2 ==> 0 <= kvq_code_byte_l(i, bits) < group * bits / 8;
        //@ assert byte_4: bits == 4 ==> 0 <= kvq_code_byte_l(i, bits) < group * bits / 8;
        //@ assert byte_8: bits == 8 ==> 0 <= kvq_code_byte_l(i, bits) < group * bits / 8;
        //@ assert byte_in: 0 <= kvq_code_byte_l(i, bits) < group * bits / 8;
        kvq_pack_code(grp, i, bits, c);
        /*@ assert kept: \forall integer j; 0 <= j < i ==>
              kvq_code_l(grp, j, bits) == kvq_code_l{LoopCurrent}(grp, j, bits);
        */
    }
    *scale = s;
    *zero = z;
    *flags |= f;
    return KVQ_OK;
}

/*@ // The tensor calls' arguments [KIVI-Q-07, KIVI-D-03]: the pointers the call
    // needs, a valid policy and parameters; the extent [KIVI-L-02]; the sizes.
    predicate kvq_kivi_args_l{L}(kvq_kivi_shape *sh, kvq_policy *pol) =
        sh != \null && kvq_policy_ok_l(pol) &&
        kvq_kivi_params_l(sh->bits, sh->group, sh->grouping, sh->meta);
    predicate kvq_kivi_ext_l{L}(kvq_kivi_shape *sh) =
        kvq_kivi_extent_l(sh->tokens, sh->channels, sh->group, sh->grouping);
    logic integer kvq_kivi_n_l{L}(kvq_kivi_shape *sh) = sh->tokens * sh->channels;
    logic integer kvq_kivi_ng_l{L}(kvq_kivi_shape *sh) =
        kvq_kivi_groups_l(sh->tokens, sh->channels, sh->group);
    logic integer kvq_kivi_nb_l{L}(kvq_kivi_shape *sh) =
        kvq_kivi_groups_l(sh->tokens, sh->channels, sh->group) *
        kvq_kivi_gbytes_l(sh->group, sh->bits);
    logic integer kvq_kivi_gb_l{L}(kvq_kivi_shape *sh) = kvq_kivi_gbytes_l(sh->group, sh->bits);
    // Index into x (or y) of element i of group g [KIVI-L-03].
    logic integer kvq_kivi_at_l{L}(kvq_kivi_shape *sh, integer g, integer i) =
        kvq_kivi_index_l(sh->channels, sh->group, sh->grouping, g, i);
*/

/* [KIVI-Q-01..08]: the statuses in the order of [KIVI-Q-07], nothing written
 * on an error, and on success every code the pinned code of its element
 * against its group's stored scale and zero (kvq_kivi_quantize_group's
 * contract, per group). */
/*@ requires shape_read: shape == \null || \valid_read(shape);
    requires policy_read: pol == \null || \valid_read(pol);
    requires buffers: kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape) ==>
        (x != \null ==> \valid_read(x + (0 .. kvq_kivi_n_l(shape) - 1))) &&
        (codes != \null ==> \valid(codes + (0 .. kvq_kivi_nb_l(shape) - 1))) &&
        (scale != \null ==> \valid(scale + (0 .. kvq_kivi_ng_l(shape) - 1))) &&
        (zero != \null ==> \valid(zero + (0 .. kvq_kivi_ng_l(shape) - 1))) &&
        (flags != \null ==> \valid(flags));
    requires separated: kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape) ==>
        \separated(codes + (0 .. kvq_kivi_nb_l(shape) - 1), scale + (0 .. kvq_kivi_ng_l(shape) - 1),
                   zero + (0 .. kvq_kivi_ng_l(shape) - 1), flags,
                   x + (0 .. kvq_kivi_n_l(shape) - 1), shape, pol);
    behavior bad_param:                                                   // [KIVI-Q-07]
      assumes codes == \null || scale == \null || zero == \null || x == \null ||
              !kvq_kivi_args_l(shape, pol);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_extent:                                                  // [KIVI-L-02]
      assumes codes != \null && scale != \null && zero != \null && x != \null &&
              kvq_kivi_args_l(shape, pol) && !kvq_kivi_ext_l(shape);
      assigns \nothing;
      ensures status: \result == KVQ_E_SHAPE;
    behavior call:
      assumes codes != \null && scale != \null && zero != \null && x != \null &&
              kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape);
      assigns codes[0 .. kvq_kivi_nb_l(shape) - 1], scale[0 .. kvq_kivi_ng_l(shape) - 1],
              zero[0 .. kvq_kivi_ng_l(shape) - 1], *flags;
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_RANGE;
      ensures nonfinite: \result == KVQ_E_NONFINITE <==>                  // [POL-NF-01]
        \exists integer e; 0 <= e < kvq_kivi_n_l(shape) && !\is_finite(x[e]);
      ensures range_policy: \result == KVQ_E_RANGE ==> pol->overflow == KVQ_OVERFLOW_NAN; // [POL-OV-02]
      ensures nothing_on_error: \result != KVQ_OK ==>                     // [KIVI-Q-07]
        (\forall integer k; 0 <= k < kvq_kivi_nb_l(shape) ==> codes[k] == \old(codes[k])) &&
        (\forall integer k; 0 <= k < kvq_kivi_ng_l(shape) ==>
            scale[k] == \old(scale[k]) && zero[k] == \old(zero[k])) &&
        (flags != \null ==> *flags == \old(*flags));
      ensures meta: \result == KVQ_OK ==> \forall integer g; 0 <= g < kvq_kivi_ng_l(shape) ==>
        \is_finite(scale[g]) && \is_finite(zero[g]) && kvq_scale_form(scale[g], shape->meta);
      ensures codes_value: \result == KVQ_OK ==>                          // [KIVI-Q-04..05]
        \forall integer g, i; 0 <= g < kvq_kivi_ng_l(shape) && 0 <= i < shape->group &&
          kvq_quot_ok_l(kvq_read_l(\old(x[kvq_kivi_at_l(shape, g, i)]), pol->subnormal),
                        scale[g], zero[g]) ==>
          kvq_code_l(codes + g * kvq_kivi_gb_l(shape), i, shape->bits) ==
            kvq_kivi_code_l(kvq_read_l(\old(x[kvq_kivi_at_l(shape, g, i)]), pol->subnormal),
                            scale[g], zero[g], shape->bits, pol->ties);
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_kivi_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                             const float *x, const kvq_kivi_shape *shape,
                             const kvq_policy *pol)
{
    uint64_t n, ng, e, g;
    uint32_t f = 0, G, bits, meta;
    size_t stride;
    if (codes == NULL || scale == NULL || zero == NULL || x == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    n = kvq_kivi_elems(shape);
    ng = kvq_kivi_groups(shape);
    stride = (size_t)kvq_kivi_group_stride(shape);
    /*@ loop invariant e_range: 0 <= e <= n;
        loop invariant finite: \forall integer e2; 0 <= e2 < e ==> \is_finite(x[e2]);
        loop assigns e;
        loop variant n - e;
    */
    for (e = 0; e < n; e++)              /* nothing is written before this check [POL-NF-01] */
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    if (pol->overflow == KVQ_OVERFLOW_NAN) {
        /*@ loop invariant g_range: 0 <= g <= ng;
            loop assigns g;
            loop variant ng - g;
        */
        for (g = 0; g < ng; g++) {       /* fail before writing [POL-OV-02] */
            float mn, mx, s, z;
            uint32_t gf = 0;
            //@ assert elems: \forall integer i; 0 <= i < shape->group ==> 0 <= kvq_kivi_at_l(shape, g, i) < n;
            group_minmax(&mn, &mx, &gf, x + kvq_kivi_group_base(shape, g), stride,
                         shape->group, pol);
            if (group_meta(&s, &z, &gf, mn, mx, shape->bits, shape->meta, pol) != KVQ_OK)
                return KVQ_E_RANGE;
        }
    }
    G = shape->group;
    bits = shape->bits;
    meta = shape->meta;
    /*@ loop invariant g_range: 0 <= g <= ng;
        loop invariant before: \forall integer g2, k; 0 <= g2 < g && 0 <= k < kvq_kivi_gbytes_l(G, bits) ==>
            g2 * kvq_kivi_gbytes_l(G, bits) + k < g * kvq_kivi_gbytes_l(G, bits);
        loop invariant meta: \forall integer g2; 0 <= g2 < g ==>
            \is_finite(scale[g2]) && \is_finite(zero[g2]) && kvq_scale_form(scale[g2], meta);
        loop invariant done: \forall integer g2, i; 0 <= g2 < g && 0 <= i < G &&
            kvq_quot_ok_l(kvq_read_l(\at(x[kvq_kivi_at_l{Pre}(shape, g2, i)], Pre),
                                     \at(pol->subnormal, Pre)), scale[g2], zero[g2]) ==>
            kvq_code_l(codes + g2 * kvq_kivi_gbytes_l(G, bits), i, bits) ==
              kvq_kivi_code_l(kvq_read_l(\at(x[kvq_kivi_at_l{Pre}(shape, g2, i)], Pre),
                                         \at(pol->subnormal, Pre)),
                              scale[g2], zero[g2], bits, \at(pol->ties, Pre));
        loop assigns g, f, codes[0 .. ng * kvq_kivi_gbytes_l(G, bits) - 1], scale[0 .. ng - 1],
                     zero[0 .. ng - 1];
        loop variant ng - g;
    */
    for (g = 0; g < ng; g++) {
        kvq_status st;
        uint64_t off = kvq_kivi_group_code_offset(shape, g);
        /*@ assert kept: shape->group == \at(shape->group, Pre) && shape->bits == \at(shape->bits, Pre) &&
                shape->channels == \at(shape->channels, Pre) && shape->grouping == \at(shape->grouping, Pre) &&
                shape->tokens == \at(shape->tokens, Pre) &&
                pol->ties == \at(pol->ties, Pre) && pol->subnormal == \at(pol->subnormal, Pre);
        */
        //@ assert elems: \forall integer i; 0 <= i < G ==> 0 <= kvq_kivi_at_l(shape, g, i) < n;
        /*@ assert x_pre: \let gg = g; \forall integer i; 0 <= i < G ==>
              x[kvq_kivi_at_l(shape, gg, i)] == \at(x[kvq_kivi_at_l(shape, gg, i)], Pre);
        */
        st = kvq_kivi_quantize_group(codes + off, &scale[g], &zero[g], &f,
                                     x + kvq_kivi_group_base(shape, g), stride, G, bits, meta, pol);
        /* unreachable: the pre-pass computed the same group's minimum,
         * maximum and metadata from the same values [TR-GOAL-KIVI-PREPASS] */
        //@ assert pre_pass: st == KVQ_OK;
        if (st != KVQ_OK) return st;
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* Stored metadata is well formed: finite, scale 0 or a normal value of the
 * storage format, and representable in it [KIVI-D-02]. */
/*@ requires args: meta == KVQ_META_F32 || meta == KVQ_META_F16;
    assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
    ensures nonfinite: \result == KVQ_E_NONFINITE <==> !\is_finite(s) || !\is_finite(z);
    ensures ok: \result == KVQ_OK ==> \is_finite(s) && \is_finite(z) && kvq_scale_form(s, meta);
*/
static kvq_status meta_ok(float s, float z, uint32_t meta)
{
    int ov;
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (s < 0.0f) return KVQ_E_PARAM;
    if (meta == KVQ_META_F16) {
        if (s != 0.0f && s < KVQ_F16_MIN_NORMAL) return KVQ_E_PARAM;
        if (kvq_round_f16(s, &ov) != s || ov) return KVQ_E_PARAM;
        if (kvq_round_f16(z, &ov) != z || ov) return KVQ_E_PARAM;
    } else if (s != 0.0f && s < KVQ_F32_MIN_NORMAL) {
        return KVQ_E_PARAM;
    }
    return KVQ_OK;
}

/* (float) of a code: exact, a code is at most 255 < 2^24. */
/*@ requires code: c <= 255;
    assigns \nothing;
    ensures exact: \is_finite(\result) && \result == c;
*/
static float code_float(uint32_t c)
{
    return (float)c;
}

/* One value [KIVI-D-01]: *y = RN32(c s + z), one rounding (fmaf), saturated to
 * +-FLT_MAX past the binary32 range [POL-OV-01]; returns the flag it raises. */
/*@ requires code: c <= 255;
    requires meta: \is_finite(s) && \is_finite(z);
    requires out: \valid(y);
    assigns *y;
    ensures value: *y == kvq_kivi_deq_l(c, s, z);                   // [KIVI-D-01]
*/
static uint32_t deq_value(float *y, uint32_t c, float s, float z)
{
    float cf = code_float(c);
    float r = fmaf(cf, s, z);            /* one rounding [KIVI-D-01] */
    //@ assert exact: kvq_fma_l(cf, s, z) == kvq_fma_l(c, s, z);
    if (isinf(r)) {
        *y = copysignf(KVQ_F32_MAX, r);
        return KVQ_FLAG_SATURATED;
    }
    *y = r;
    return 0u;
}

/* One group of the dequantizer: element i of group g of the shape, from code i
 * of the group's bytes grp and its scale s and zero z; returns the flags it
 * raises.  Writes the group's elements only (others). */
/*@ requires shape: \valid_read(shape) &&
        kvq_kivi_params_l(shape->bits, shape->group, shape->grouping, shape->meta) &&
        kvq_kivi_ext_l(shape);
    requires g_range: g < kvq_kivi_ng_l(shape);
    requires meta: \is_finite(s) && \is_finite(z);
    requires codes: \valid_read(grp + (0 .. kvq_kivi_gb_l(shape) - 1));
    requires out: \valid(y + (0 .. kvq_kivi_n_l(shape) - 1));
    requires separated: \separated(y + (0 .. kvq_kivi_n_l(shape) - 1),
                                    grp + (0 .. kvq_kivi_gb_l(shape) - 1), shape);
    assigns y[0 .. kvq_kivi_n_l(shape) - 1];
    ensures row: \forall integer i; 0 <= i < shape->group ==>            // [KIVI-D-01]
        y[kvq_kivi_at_l(shape, g, i)] == kvq_kivi_deq_l(kvq_code_l{Pre}(grp, i, shape->bits), s, z);
    ensures others: \forall integer g2, i2;
        0 <= g2 < kvq_kivi_ng_l(shape) && g2 != g && 0 <= i2 < shape->group ==>
        y[kvq_kivi_at_l(shape, g2, i2)] == \old(y[kvq_kivi_at_l(shape, g2, i2)]);
*/
static uint32_t dequantize_group(float *y, const uint8_t *grp, float s, float z,
                                 const kvq_kivi_shape *shape, uint64_t g)
{
    uint32_t f = 0;
    /*@ loop invariant i_range: 0 <= i <= shape->group;
        loop invariant row: \forall integer i2; 0 <= i2 < i ==>
            y[kvq_kivi_at_l(shape, g, i2)] ==
              kvq_kivi_deq_l(kvq_code_l{Pre}(grp, i2, shape->bits), s, z);
        loop invariant others: \forall integer g2, i2;
            0 <= g2 < kvq_kivi_ng_l(shape) && g2 != g && 0 <= i2 < shape->group ==>
            y[kvq_kivi_at_l(shape, g2, i2)] == \at(y[kvq_kivi_at_l(shape, g2, i2)], Pre);
        loop assigns i, f, y[0 .. kvq_kivi_n_l(shape) - 1];
        loop variant shape->group - i;
    */
    for (uint32_t i = 0; i < shape->group; i++) {
        //@ assert byte: 0 <= kvq_code_byte_l(i, shape->bits) < kvq_kivi_gb_l(shape);
        //@ assert at: 0 <= kvq_kivi_at_l(shape, g, i) < kvq_kivi_n_l(shape);
        f |= deq_value(&y[kvq_kivi_elem_index(shape, g, i)], kvq_unpack_code(grp, i, shape->bits),
                       s, z);
    }
    return f;
}

/* [KIVI-D-01..03]: the statuses in the order of [KIVI-D-03], nothing written
 * on an error, and on success every element RN32(c*s + z) of its code and its
 * group's scale and zero, saturated to +-FLT_MAX (kvq_kivi_deq_l). */
/*@ requires shape_read: shape == \null || \valid_read(shape);
    requires policy_read: pol == \null || \valid_read(pol);
    requires buffers: kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape) ==>
        (y != \null ==> \valid(y + (0 .. kvq_kivi_n_l(shape) - 1))) &&
        (codes != \null ==> \valid_read(codes + (0 .. kvq_kivi_nb_l(shape) - 1))) &&
        (scale != \null ==> \valid_read(scale + (0 .. kvq_kivi_ng_l(shape) - 1))) &&
        (zero != \null ==> \valid_read(zero + (0 .. kvq_kivi_ng_l(shape) - 1))) &&
        (flags != \null ==> \valid(flags));
    requires separated: kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape) ==>
        \separated(y + (0 .. kvq_kivi_n_l(shape) - 1), flags,
                   codes + (0 .. kvq_kivi_nb_l(shape) - 1), scale + (0 .. kvq_kivi_ng_l(shape) - 1),
                   zero + (0 .. kvq_kivi_ng_l(shape) - 1), shape, pol) &&
        \separated(flags, codes + (0 .. kvq_kivi_nb_l(shape) - 1),
                   scale + (0 .. kvq_kivi_ng_l(shape) - 1), zero + (0 .. kvq_kivi_ng_l(shape) - 1),
                   shape, pol);
    behavior bad_param:                                                   // [KIVI-D-03]
      assumes y == \null || codes == \null || scale == \null || zero == \null ||
              !kvq_kivi_args_l(shape, pol);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_extent:                                                  // [KIVI-L-02]
      assumes y != \null && codes != \null && scale != \null && zero != \null &&
              kvq_kivi_args_l(shape, pol) && !kvq_kivi_ext_l(shape);
      assigns \nothing;
      ensures status: \result == KVQ_E_SHAPE;
    behavior call:
      assumes y != \null && codes != \null && scale != \null && zero != \null &&
              kvq_kivi_args_l(shape, pol) && kvq_kivi_ext_l(shape);
      assigns y[0 .. kvq_kivi_n_l(shape) - 1], *flags;
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE ||
                      \result == KVQ_E_PARAM || \result == KVQ_E_RANGE;
      ensures nonfinite: \result == KVQ_E_NONFINITE ==>                   // [KIVI-D-02]
        \exists integer g; 0 <= g < kvq_kivi_ng_l(shape) &&
          (!\is_finite(scale[g]) || !\is_finite(zero[g]));
      ensures range_policy: \result == KVQ_E_RANGE ==> pol->overflow == KVQ_OVERFLOW_NAN; // [POL-OV-02]
      ensures nothing_on_error: \result != KVQ_OK ==>                     // [KIVI-D-03]
        (\forall integer k; 0 <= k < kvq_kivi_n_l(shape) ==> y[k] == \old(y[k])) &&
        (flags != \null ==> *flags == \old(*flags));
      ensures value: \result == KVQ_OK ==>                                // [KIVI-D-01]
        \forall integer g, i; 0 <= g < kvq_kivi_ng_l(shape) && 0 <= i < shape->group ==>
          y[kvq_kivi_at_l(shape, g, i)] ==
            kvq_kivi_deq_l(kvq_code_l{Pre}(codes + g * kvq_kivi_gb_l(shape), i, shape->bits),
                           \old(scale[g]), \old(zero[g]));
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_kivi_dequantize(float *y, uint32_t *flags,
                               const uint8_t *codes, const float *scale, const float *zero,
                               const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    uint64_t ng, g;
    uint32_t f = 0, G;
    if (y == NULL || codes == NULL || scale == NULL || zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    ng = kvq_kivi_groups(shape);
    G = shape->group;
    /*@ loop invariant g_range: 0 <= g <= ng;
        loop invariant meta: \forall integer g2; 0 <= g2 < g ==>
            \is_finite(scale[g2]) && \is_finite(zero[g2]);
        loop assigns g;
        loop variant ng - g;
    */
    for (g = 0; g < ng; g++) {
        kvq_status st = meta_ok(scale[g], zero[g], shape->meta);
        if (st != KVQ_OK) return st;
    }
    if (pol->overflow == KVQ_OVERFLOW_NAN) {
        /*@ loop invariant g_range: 0 <= g <= ng;
            loop assigns g;
            loop variant ng - g;
        */
        for (g = 0; g < ng; g++) {       /* fail before writing [POL-OV-02] */
            const uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
            //@ assert bytes: kvq_kivi_nb_l(shape) == kvq_kivi_ng_l(shape) * kvq_kivi_gb_l(shape);
            /*@ loop invariant i_range: 0 <= i <= G;
                loop assigns i;
                loop variant G - i;
            */
            for (uint32_t i = 0; i < G; i++) {
                //@ assert byte: 0 <= kvq_code_byte_l(i, shape->bits) < kvq_kivi_gb_l(shape);
                float c = (float)kvq_unpack_code(grp, i, shape->bits);
                if (isinf(fmaf(c, scale[g], zero[g]))) return KVQ_E_RANGE;
            }
        }
    }
    /*@ loop invariant g_range: 0 <= g <= ng;
        loop invariant meta: \forall integer g2; 0 <= g2 < ng ==>
            \is_finite(\at(scale[g2], Pre)) && \is_finite(\at(zero[g2], Pre));
        loop invariant done: \forall integer g2, i2; 0 <= g2 < g && 0 <= i2 < G ==>
            y[kvq_kivi_at_l(shape, g2, i2)] ==
              kvq_kivi_deq_l(kvq_code_l{Pre}(codes + g2 * kvq_kivi_gb_l(shape), i2, shape->bits),
                             \at(scale[g2], Pre), \at(zero[g2], Pre));
        loop assigns g, f, y[0 .. kvq_kivi_n_l(shape) - 1];
        loop variant ng - g;
    */
    for (g = 0; g < ng; g++) {
        //@ assert bytes: kvq_kivi_nb_l(shape) == kvq_kivi_ng_l(shape) * kvq_kivi_gb_l(shape);
        //@ assert meta_pre: \let gg = g; scale[gg] == \at(scale[gg], Pre) && zero[gg] == \at(zero[gg], Pre);
        f |= dequantize_group(y, codes + kvq_kivi_group_code_offset(shape, g), scale[g], zero[g],
                              shape, g);
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

kvq_status kvq_kivi_window_prefill(kvq_kivi_window *w, uint32_t grouping, uint32_t group,
                                   uint32_t residual, uint32_t tokens)
{
    uint32_t pend;
    if (w == NULL) return KVQ_E_PARAM;
    if (grouping != KVQ_GROUP_CHANNEL && grouping != KVQ_GROUP_TOKEN) return KVQ_E_PARAM;
    if (group == 0u || residual == 0u || residual % group != 0u) return KVQ_E_PARAM;
    pend = kvq_kivi_residual_after_prefill(grouping, residual, tokens);
    w->grouping = grouping;
    w->group = group;
    w->residual = residual;
    w->quantized = tokens - pend;
    w->pending = pend;
    return KVQ_OK;
}

kvq_status kvq_kivi_window_append(kvq_kivi_window *w, uint32_t *first, uint32_t *count)
{
    if (w == NULL || first == NULL || count == NULL) return KVQ_E_PARAM;
    /* quantized + pending + 1 must fit; UINT32_MAX - quantized cannot wrap. */
    if (w->pending >= UINT32_MAX - w->quantized) return KVQ_E_SHAPE;
    *first = w->quantized;
    *count = 0;
    w->pending += 1u;
    if (w->grouping == KVQ_GROUP_CHANNEL) {
        if (w->pending == w->residual) { /* a full residual is flushed [KIVI-W-02] */
            *count = w->residual;
            w->quantized += w->residual;
            w->pending = 0;
        }
    } else if (w->pending > w->residual) { /* the oldest value leaves the window [KIVI-W-03] */
        *count = 1;
        w->quantized += 1u;
        w->pending = w->residual;
    }
    return KVQ_OK;
}
