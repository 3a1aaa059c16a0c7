/*
 * kvq_layout.h -- the one owner of every packed format in kvq.
 *
 * Sizes, offsets, group/element maps and code packing live here and only here:
 * the reference paths, the CUDA kernels and the conformance tool all call these
 * helpers, so no other file does index arithmetic on packed data.  Plain C11
 * that nvcc also compiles (KVQ_HD marks host+device functions).
 *
 * Packing rule [LAY-PACK-01]: b-bit codes (b in {1,2,4,8}) are packed LSB first;
 * element i of a group lives in byte floor(i*b/8) of the group's code bytes, at
 * bit (i*b) mod 8.  With b | 8 a code never straddles a byte.
 *
 * The packing contracts are stated arithmetically (/ % *), which WP proves.
 */
#ifndef KVQ_LAYOUT_H
#define KVQ_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define KVQ_HD __host__ __device__
#else
#define KVQ_HD
#endif

/* C11 _Static_assert; C++ (nvcc compiles .cu files as C++) spells it static_assert. */
#if defined(__cplusplus)
#define KVQ_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define KVQ_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Grouping of the KIVI quantizer [KIVI-L-01]. */
#define KVQ_GROUP_CHANNEL 0u /* one group = G consecutive tokens of one channel (keys) */
#define KVQ_GROUP_TOKEN   1u /* one group = G consecutive channels of one token (values) */

/* Storage format of the per-group metadata [KIVI-M-01]. */
#define KVQ_META_F32 0u
#define KVQ_META_F16 1u

/* Limits of a shape accepted by every path [KIVI-L-02]. */
#define KVQ_MAX_GROUP  4096u
#define KVQ_MAX_DIM    (1u << 24)   /* tokens, channels */
#define KVQ_MAX_ELEMS  ((uint64_t)1 << 36)

/* A KIVI tensor of one head: row-major [tokens][channels] binary32 values. */
typedef struct kvq_kivi_shape {
    uint32_t bits;      /* n in {1, 2, 4, 8} */
    uint32_t group;     /* G: a positive multiple of 8, at most KVQ_MAX_GROUP */
    uint32_t grouping;  /* KVQ_GROUP_CHANNEL or KVQ_GROUP_TOKEN */
    uint32_t meta;      /* KVQ_META_F32 or KVQ_META_F16 */
    uint32_t tokens;    /* T */
    uint32_t channels;  /* D */
} kvq_kivi_shape;

KVQ_STATIC_ASSERT(sizeof(kvq_kivi_shape) == 24, "kvq_kivi_shape is a frozen 24-byte record");
KVQ_STATIC_ASSERT(sizeof(uint8_t) == 1, "codes are stored in octets");

/*@ // Logic mirror of the packing rule [LAY-PACK-01], in / % * only.
    predicate kvq_valid_bits(integer b) = b == 1 || b == 2 || b == 4 || b == 8;
    logic integer kvq_pow2_l(integer k) =
        k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
        k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256;
    logic integer kvq_code_max_l(integer b) = kvq_pow2_l(b) - 1;
    logic integer kvq_code_byte_l(integer i, integer b) = (i * b) / 8;
    logic integer kvq_code_shift_l(integer i, integer b) = (i * b) % 8;
    // The b-bit field at bit k of the byte value y.
    logic integer kvq_field_l(integer y, integer k, integer b) =
        (y / kvq_pow2_l(k)) % kvq_pow2_l(b);
    // Element i's code as the packed bytes of a group hold it.
    logic integer kvq_code_l{L}(uint8_t *grp, integer i, integer b) =
        kvq_field_l(\at(grp[kvq_code_byte_l(i, b)], L), kvq_code_shift_l(i, b), b);
    // The byte value y with its b-bit field at bit k replaced by c.
    logic integer kvq_field_set_l(integer y, integer k, integer b, integer c) =
        y - kvq_field_l(y, k, b) * kvq_pow2_l(k) + c * kvq_pow2_l(k);
    predicate kvq_field_at(integer k, integer b) =
        kvq_valid_bits(b) && 0 <= k < 8 && k % b == 0;

    // Replacing a field stays a byte and reads back c.
    lemma kvq_field_set_byte: \forall integer y, k, b, c;
        0 <= y < 256 && kvq_field_at(k, b) && 0 <= c < kvq_pow2_l(b) ==>
        0 <= kvq_field_set_l(y, k, b, c) < 256;
    lemma kvq_field_set_get: \forall integer y, k, b, c;
        0 <= y < 256 && kvq_field_at(k, b) && 0 <= c < kvq_pow2_l(b) ==>
        kvq_field_l(kvq_field_set_l(y, k, b, c), k, b) == c;
    // ... and leaves every other field of the byte as it was.
    lemma kvq_field_set_keep: \forall integer y, k, k2, b, c;
        0 <= y < 256 && kvq_field_at(k, b) && kvq_field_at(k2, b) && k2 != k &&
        0 <= c < kvq_pow2_l(b) ==>
        kvq_field_l(kvq_field_set_l(y, k, b, c), k2, b) == kvq_field_l(y, k2, b);
    // Every element sits at a field boundary of its byte.
    lemma kvq_code_shift_aligned: \forall integer i, b;
        kvq_valid_bits(b) && 0 <= i < KVQ_MAX_GROUP ==>
        kvq_field_at(kvq_code_shift_l(i, b), b);
    // Two elements of one byte sit at different bits.
    lemma kvq_code_shift_distinct: \forall integer i, j, b;
        kvq_valid_bits(b) && 0 <= i && 0 <= j && i != j &&
        kvq_code_byte_l(i, b) == kvq_code_byte_l(j, b) ==>
        kvq_code_shift_l(i, b) != kvq_code_shift_l(j, b);
*/

/* 2^k for 0 <= k <= 8, by table-free arithmetic WP can read. */
/*@ requires k_range: k <= 8;
    assigns \nothing;
    ensures pow2: \result == kvq_pow2_l(k);
    ensures positive: 1 <= \result <= 256;
*/
KVQ_HD static inline uint32_t kvq_pow2_small(uint32_t k)
{
    return k == 0 ? 1u : k == 1 ? 2u : k == 2 ? 4u : k == 3 ? 8u : k == 4 ? 16u
         : k == 5 ? 32u : k == 6 ? 64u : k == 7 ? 128u : 256u;
}

/* Largest code of a b-bit quantizer: 2^b - 1 [KIVI-Q-02]. */
/*@ requires bits_ok: kvq_valid_bits(bits);
    assigns \nothing;
    ensures code_max: \result == kvq_code_max_l(bits);             // [KIVI-Q-02]
    ensures table: \result == (bits == 1 ? 1 : bits == 2 ? 3 : bits == 4 ? 15 : 255);
*/
KVQ_HD static inline uint32_t kvq_code_max(uint32_t bits)
{
    return kvq_pow2_small(bits) - 1u;
}

/* Byte of element i within its group's code bytes [LAY-PACK-01]. */
/*@ requires bits_ok: kvq_valid_bits(bits);
    requires i_range: i <= KVQ_MAX_GROUP;
    assigns \nothing;
    ensures byte: \result == kvq_code_byte_l(i, bits);               // [LAY-PACK-01]
*/
KVQ_HD static inline uint32_t kvq_code_byte(uint32_t i, uint32_t bits)
{
    return (i * bits) / 8u;
}

/* Bit position of element i within its byte [LAY-PACK-01]. */
/*@ requires bits_ok: kvq_valid_bits(bits);
    requires i_range: i <= KVQ_MAX_GROUP;
    assigns \nothing;
    ensures shift: \result == kvq_code_shift_l(i, bits);             // [LAY-PACK-01]
    ensures shift_range: \result < 8;
*/
KVQ_HD static inline uint32_t kvq_code_shift(uint32_t i, uint32_t bits)
{
    return (i * bits) % 8u;
}

/* Read element i's code from a group's packed bytes. */
/*@ requires bits_ok: kvq_valid_bits(bits);
    requires i_range: i < KVQ_MAX_GROUP;
    requires readable: \valid_read(grp + kvq_code_byte_l(i, bits));
    assigns \nothing;
    ensures code: \result == kvq_code_l{Pre}(grp, i, bits);          // [LAY-PACK-01]
    ensures code_range: 0 <= \result <= kvq_code_max_l(bits);       // [KIVI-Q-05]
*/
KVQ_HD static inline uint32_t kvq_unpack_code(const uint8_t *grp, uint32_t i, uint32_t bits)
{
    uint32_t byte = grp[kvq_code_byte(i, bits)];
    return (byte / kvq_pow2_small(kvq_code_shift(i, bits))) % kvq_pow2_small(bits);
}

/* Write element i's code into a group's packed bytes, leaving the other codes of
 * that byte as they were.  Round trip: kvq_unpack_code then reads back `code`. */
/*@ requires bits_ok: kvq_valid_bits(bits);
    requires i_range: i < KVQ_MAX_GROUP;
    requires code_range: code <= kvq_code_max_l(bits);              // [KIVI-Q-05]
    requires writable: \valid(grp + kvq_code_byte_l(i, bits));
    assigns grp[kvq_code_byte_l(i, bits)];
    ensures new_byte: grp[kvq_code_byte_l(i, bits)] ==
        kvq_field_set_l(\old(grp[kvq_code_byte_l(i, bits)]), kvq_code_shift_l(i, bits), bits, code);
    ensures round_trip: kvq_code_l{Post}(grp, i, bits) == code;     // [LAY-PACK-01]
    ensures others_kept:                                             // [LAY-PACK-01]
        \forall integer j; 0 <= j < KVQ_MAX_GROUP && j != i &&
            kvq_code_byte_l(j, bits) == kvq_code_byte_l(i, bits) ==>
            kvq_code_l{Post}(grp, j, bits) == kvq_code_l{Pre}(grp, j, bits);
*/
KVQ_HD static inline void kvq_pack_code(uint8_t *grp, uint32_t i, uint32_t bits, uint32_t code)
{
    uint32_t at = kvq_code_byte(i, bits);
    uint32_t p = kvq_pow2_small(kvq_code_shift(i, bits));
    uint32_t m = kvq_pow2_small(bits);
    uint32_t byte = grp[at];
    uint32_t old = (byte / p) % m;
    //@ assert field: old == kvq_field_l(byte, kvq_code_shift_l(i, bits), bits);
    //@ assert no_wrap: old * p <= byte;
    //@ assert fits: byte - old * p + code * p == kvq_field_set_l(byte, kvq_code_shift_l(i, bits), bits, code) < 256;
    grp[at] = (uint8_t)(byte - old * p + code * p);
}

/* Bit of element i's code within a little-endian machine word that holds the
 * group's code bytes from byte `first` on (first <= kvq_code_byte(i, bits)):
 * 8*(kvq_code_byte(i, bits) - first) + kvq_code_shift(i, bits).  Lets a kernel
 * pack or unpack a whole 32- or 64-bit word of codes at once; the word's byte k
 * is the group's code byte first+k because CUDA devices and x86-64 are
 * little-endian.  [LAY-PACK-01] */
/*@ requires kvq_valid_bits(bits) && 0 <= i < KVQ_MAX_GROUP;
    requires first <= kvq_code_byte_l(i, bits);
    assigns \nothing;
    ensures \result == 8 * (kvq_code_byte_l(i, bits) - first) + (i * bits) % 8;
*/
KVQ_HD static inline uint32_t kvq_code_word_shift(uint32_t i, uint32_t bits, uint32_t first)
{
    return 8u * (kvq_code_byte(i, bits) - first) + kvq_code_shift(i, bits);
}

/* ---- KIVI tensor layout [KIVI-L-01..04] -------------------------------- */

/* Parameters alone (bits, group, grouping, meta) are well formed. */
KVQ_HD static inline int kvq_kivi_params_ok(const kvq_kivi_shape *s)
{
    return (s->bits == 1u || s->bits == 2u || s->bits == 4u || s->bits == 8u)
        && s->group >= 8u && s->group <= KVQ_MAX_GROUP && s->group % 8u == 0u
        && (s->grouping == KVQ_GROUP_CHANNEL || s->grouping == KVQ_GROUP_TOKEN)
        && (s->meta == KVQ_META_F32 || s->meta == KVQ_META_F16);
}

/* The tensor extent fits the parameters: non-empty, within limits, and the
 * grouped dimension a multiple of G (ragged tails belong to the residual
 * window, never to a partial group) [KIVI-L-02]. */
KVQ_HD static inline int kvq_kivi_shape_ok(const kvq_kivi_shape *s)
{
    if (s->tokens == 0u || s->channels == 0u) return 0;
    if (s->tokens > KVQ_MAX_DIM || s->channels > KVQ_MAX_DIM) return 0;
    if ((uint64_t)s->tokens * s->channels > KVQ_MAX_ELEMS) return 0;
    if (s->grouping == KVQ_GROUP_CHANNEL) return s->tokens % s->group == 0u;
    return s->channels % s->group == 0u;
}

/* Number of values of the tensor. */
KVQ_HD static inline uint64_t kvq_kivi_elems(const kvq_kivi_shape *s)
{
    return (uint64_t)s->tokens * s->channels;
}

/* Number of groups: T*D/G. */
KVQ_HD static inline uint64_t kvq_kivi_groups(const kvq_kivi_shape *s)
{
    return kvq_kivi_elems(s) / s->group;
}

/* Packed code bytes of one group: G*b/8. */
KVQ_HD static inline uint32_t kvq_kivi_group_bytes(const kvq_kivi_shape *s)
{
    return s->group * s->bits / 8u;
}

/* Packed code bytes of the whole tensor. */
KVQ_HD static inline uint64_t kvq_kivi_code_bytes(const kvq_kivi_shape *s)
{
    return kvq_kivi_groups(s) * kvq_kivi_group_bytes(s);
}

/* Bytes of one stored metadata value (scale or zero). */
KVQ_HD static inline uint32_t kvq_kivi_meta_size(const kvq_kivi_shape *s)
{
    return s->meta == KVQ_META_F16 ? 2u : 4u;
}

/* Storage bytes of the quantized tensor: codes plus scale and zero per group. */
KVQ_HD static inline uint64_t kvq_kivi_storage_bytes(const kvq_kivi_shape *s)
{
    return kvq_kivi_code_bytes(s) + 2u * kvq_kivi_groups(s) * kvq_kivi_meta_size(s);
}

/* Group numbering [KIVI-L-03]:
 *   per channel: g = tb*D + c holds tokens tb*G .. tb*G+G-1 of channel c;
 *   per token:   g = t*(D/G) + cb holds channels cb*G .. cb*G+G-1 of token t.
 * Index into x (row-major [T][D]) of element 0 of group g. */
KVQ_HD static inline uint64_t kvq_kivi_group_base(const kvq_kivi_shape *s, uint64_t g)
{
    if (s->grouping == KVQ_GROUP_CHANNEL) {
        uint64_t tb = g / s->channels, c = g % s->channels;
        return tb * s->group * s->channels + c;
    }
    return g * s->group;
}

/* Distance in x between element i and element i+1 of a group. */
KVQ_HD static inline uint64_t kvq_kivi_group_stride(const kvq_kivi_shape *s)
{
    return s->grouping == KVQ_GROUP_CHANNEL ? (uint64_t)s->channels : 1u;
}

/* Index into x of element i of group g. */
KVQ_HD static inline uint64_t kvq_kivi_elem_index(const kvq_kivi_shape *s, uint64_t g, uint32_t i)
{
    return kvq_kivi_group_base(s, g) + (uint64_t)i * kvq_kivi_group_stride(s);
}

/* Offset in the code bytes of group g's first byte. */
KVQ_HD static inline uint64_t kvq_kivi_group_code_offset(const kvq_kivi_shape *s, uint64_t g)
{
    return g * kvq_kivi_group_bytes(s);
}

/* Group of the value at row-major index e, and its element number within it. */
KVQ_HD static inline uint64_t kvq_kivi_group_of(const kvq_kivi_shape *s, uint64_t e, uint32_t *elem)
{
    uint64_t t = e / s->channels, c = e % s->channels;
    if (s->grouping == KVQ_GROUP_CHANNEL) {
        *elem = (uint32_t)(t % s->group);
        return (t / s->group) * s->channels + c;
    }
    *elem = (uint32_t)(c % s->group);
    return t * (s->channels / s->group) + c / s->group;
}

/* ---- Residual window [KIVI-W-01..03] ----------------------------------- */

/* Tokens left in full precision after a prefill of L tokens:
 *   keys (per channel): L mod R -- whole blocks of R are quantized;
 *   values (per token): min(L, R) -- the R most recent stay full precision. */
/*@ logic integer kvq_residual_after_prefill_l(integer grouping, integer R, integer L) =
        grouping == KVQ_GROUP_CHANNEL ? L % R : (L < R ? L : R);
*/

/*@ requires residual_positive: R > 0;
    assigns \nothing;
    ensures def: \result == kvq_residual_after_prefill_l(grouping, R, L);
    ensures not_more: \result <= L;
    behavior per_channel:                                           // [KIVI-W-01]
      assumes grouping == KVQ_GROUP_CHANNEL;
      ensures pending: \result == L % R;
      ensures below_residual: \result < R;
      ensures whole_blocks: (L - \result) % R == 0;
    behavior per_token:                                             // [KIVI-W-03]
      assumes grouping != KVQ_GROUP_CHANNEL;
      ensures pending: \result == (L < R ? L : R);
      ensures at_most_residual: \result <= R;
      ensures full_window: \result < L ==> \result == R;
    complete behaviors;
    disjoint behaviors;
*/
KVQ_HD static inline uint32_t kvq_kivi_residual_after_prefill(uint32_t grouping, uint32_t R,
                                                              uint32_t L)
{
    if (grouping == KVQ_GROUP_CHANNEL) {
        //@ assert euclid: L - L % R == (L / R) * R;
        //@ assert whole: ((L / R) * R) % R == 0;
        return L % R;
    }
    return L < R ? L : R;
}

#ifdef __cplusplus
}
#endif
#endif /* KVQ_LAYOUT_H */
