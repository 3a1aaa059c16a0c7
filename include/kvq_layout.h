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

_Static_assert(sizeof(kvq_kivi_shape) == 24, "kvq_kivi_shape is a frozen 24-byte record");
_Static_assert(sizeof(uint8_t) == 1, "codes are stored in octets");

/*@ predicate kvq_valid_bits(integer b) = b == 1 || b == 2 || b == 4 || b == 8;
    logic integer kvq_pow2_l(integer k) =
        k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
        k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256;
    logic integer kvq_code_max_l(integer b) = kvq_pow2_l(b) - 1;
    logic integer kvq_code_byte_l(integer i, integer b) = (i * b) / 8;
*/

/* 2^k for 0 <= k <= 8, by table-free arithmetic WP can read. */
/*@ requires 0 <= k <= 8;
    assigns \nothing;
    ensures \result == (k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
                        k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256);
*/
KVQ_HD static inline uint32_t kvq_pow2_small(uint32_t k)
{
    return k == 0 ? 1u : k == 1 ? 2u : k == 2 ? 4u : k == 3 ? 8u : k == 4 ? 16u
         : k == 5 ? 32u : k == 6 ? 64u : k == 7 ? 128u : 256u;
}

/* Largest code of a b-bit quantizer: 2^b - 1 [KIVI-Q-02]. */
/*@ requires kvq_valid_bits(bits);
    assigns \nothing;
    ensures \result == (bits == 1 ? 1 : bits == 2 ? 3 : bits == 4 ? 15 : 255);
*/
KVQ_HD static inline uint32_t kvq_code_max(uint32_t bits)
{
    return kvq_pow2_small(bits) - 1u;
}

/* Byte of element i within its group's code bytes [LAY-PACK-01]. */
/*@ requires kvq_valid_bits(bits) && 0 <= i <= KVQ_MAX_GROUP;
    assigns \nothing;
    ensures \result == (i * bits) / 8;
*/
KVQ_HD static inline uint32_t kvq_code_byte(uint32_t i, uint32_t bits)
{
    return (i * bits) / 8u;
}

/* Bit position of element i within its byte [LAY-PACK-01]. */
/*@ requires kvq_valid_bits(bits) && 0 <= i <= KVQ_MAX_GROUP;
    assigns \nothing;
    ensures \result == (i * bits) % 8;
    ensures \result < 8;
*/
KVQ_HD static inline uint32_t kvq_code_shift(uint32_t i, uint32_t bits)
{
    return (i * bits) % 8u;
}

/* Read element i's code from a group's packed bytes. */
/*@ requires kvq_valid_bits(bits) && 0 <= i < KVQ_MAX_GROUP;
    requires \valid_read(grp + kvq_code_byte_l(i, bits));
    assigns \nothing;
    ensures \result == (grp[(i * bits) / 8] / kvq_pow2_l((i * bits) % 8)) % kvq_pow2_l(bits);
    ensures 0 <= \result <= kvq_code_max_l(bits);
*/
KVQ_HD static inline uint32_t kvq_unpack_code(const uint8_t *grp, uint32_t i, uint32_t bits)
{
    uint32_t byte = grp[kvq_code_byte(i, bits)];
    return (byte / kvq_pow2_small(kvq_code_shift(i, bits))) % kvq_pow2_small(bits);
}

/* Write element i's code into a group's packed bytes, leaving the other codes of
 * that byte as they were. */
/*@ requires kvq_valid_bits(bits) && 0 <= i < KVQ_MAX_GROUP;
    requires 0 <= code <= kvq_code_max_l(bits);
    requires \valid(grp + kvq_code_byte_l(i, bits));
    assigns grp[(i * bits) / 8];
    ensures (grp[(i * bits) / 8] / kvq_pow2_l((i * bits) % 8)) % kvq_pow2_l(bits) == code;
*/
KVQ_HD static inline void kvq_pack_code(uint8_t *grp, uint32_t i, uint32_t bits, uint32_t code)
{
    uint32_t at = kvq_code_byte(i, bits);
    uint32_t p = kvq_pow2_small(kvq_code_shift(i, bits));
    uint32_t m = kvq_pow2_small(bits);
    uint32_t byte = grp[at];
    uint32_t old = (byte / p) % m;
    grp[at] = (uint8_t)(byte - old * p + code * p);
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
KVQ_HD static inline uint32_t kvq_kivi_residual_after_prefill(uint32_t grouping, uint32_t R,
                                                              uint32_t L)
{
    if (grouping == KVQ_GROUP_CHANNEL) return L % R;
    return L < R ? L : R;
}

#ifdef __cplusplus
}
#endif
#endif /* KVQ_LAYOUT_H */
