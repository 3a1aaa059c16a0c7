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


/* ---- CERT block formats [CERT-L-01..05] ---------------------------------
 *
 * One head of one step: keys and values are row-major [n][d] binary16 values
 * (held as binary32).  Tokens 16b .. 16b+15 form full block b, b < nq =
 * floor(n/16); the last n mod 16 tokens form the residual block nq, kept
 * unquantized [CERT-L-03].
 *
 * Keys [CERT-L-04]: per full block, 16*d int8 codes, token-major: the code of
 * token 16b+i, channel c is byte i*d + c of the block's codes; per block and
 * channel one binary32 sigma and one binary32 z, entry b*d + c.
 * Values [CERT-V4-01]: per quantized token, d/16 groups of 16 channels; group j
 * of token t holds channels 16j..16j+15, its 4-bit codes are 8 bytes at
 * (t*(d/16) + j)*8, element 2i in the low nibble of byte i [LAY-PACK-01]
 * (kvq_pack_code / kvq_unpack_code with bits = 4); one binary16 scale and
 * offset per group, entry t*(d/16) + j.  This is exactly the KIVI tensor layout
 * with bits 4, group 16, per-token grouping, binary16 metadata
 * (kvq_cert_value_kivi_shape).  Annotations: eta_b, nu_b binary32, entry b
 * (b < nb, the residual block included).
 */
#define KVQ_CERT_BLOCK       16u          /* B: tokens per key block [CERT-L-03] */
#define KVQ_CERT_VGROUP      16u          /* g: channels per value group [CERT-V4-01] */
#define KVQ_CERT_VBITS       4u           /* value code width [CERT-V4-01] */
#define KVQ_CERT_MAX_DIM     512u         /* d <= 512 [CERT-L-01] */
#define KVQ_CERT_MAX_TOKENS  (1u << 24)   /* n <= 2^24 [CERT-L-01] */
#define KVQ_CERT_KCODE_MIN   (-128)       /* key code range [CERT-K8-02] */
#define KVQ_CERT_KCODE_MAX   127

/* Shape of one head of one step [CERT-L-01]. */
typedef struct kvq_cert_shape {
    uint32_t tokens;   /* n, 1 .. 2^24 */
    uint32_t dim;      /* d, a positive multiple of 16, at most 512 */
} kvq_cert_shape;

KVQ_STATIC_ASSERT(sizeof(kvq_cert_shape) == 8, "kvq_cert_shape is a frozen 8-byte record");
KVQ_STATIC_ASSERT(KVQ_CERT_VGROUP * KVQ_CERT_VBITS / 8u == 8u, "a value group packs into 8 bytes");
KVQ_STATIC_ASSERT(KVQ_CERT_MAX_DIM % KVQ_CERT_VGROUP == 0u, "d limit is a multiple of g");
KVQ_STATIC_ASSERT((uint64_t)KVQ_CERT_MAX_TOKENS * KVQ_CERT_MAX_DIM <= KVQ_MAX_ELEMS,
                  "a CERT tensor is within the element limit");

/*@ predicate kvq_cert_shape_l(integer n, integer d) =
        1 <= n <= 16777216 && 16 <= d <= 512 && d % 16 == 0;
    // Key code bytes of the full blocks, and nb [CERT-L-03] [CERT-L-04].
    logic integer kvq_cert_key_block_bytes_l(kvq_cert_shape *s) =
        (s->tokens / 16) * 16 * s->dim;
    logic integer kvq_cert_blocks_l(integer n) = n / 16 + (n % 16 != 0 ? 1 : 0);
*/

/* The shape is within [CERT-L-01]. */
/*@ requires \valid_read(s);
    assigns \nothing;
    ensures ok: \result != 0 <==> kvq_cert_shape_l(s->tokens, s->dim);
*/
KVQ_HD static inline int kvq_cert_shape_ok(const kvq_cert_shape *s)
{
    return s->tokens >= 1u && s->tokens <= KVQ_CERT_MAX_TOKENS && s->dim >= KVQ_CERT_VGROUP &&
           s->dim <= KVQ_CERT_MAX_DIM && s->dim % KVQ_CERT_VGROUP == 0u;
}

/* nq: full (quantized) blocks [CERT-L-03]. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == s->tokens / 16;                           // [CERT-L-03]
    ensures range: \result <= 1048576;
*/
KVQ_HD static inline uint32_t kvq_cert_full_blocks(const kvq_cert_shape *s)
{
    return s->tokens / KVQ_CERT_BLOCK;
}

/* Tokens of the residual block: n mod 16 (0: no residual block) [CERT-L-03]. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == s->tokens % 16;                           // [CERT-L-03]
*/
KVQ_HD static inline uint32_t kvq_cert_residual_tokens(const kvq_cert_shape *s)
{
    return s->tokens % KVQ_CERT_BLOCK;
}

/* nb: blocks, the residual one included [CERT-L-03]. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == kvq_cert_blocks_l(s->tokens);             // [CERT-L-03]
    ensures range: s->tokens / 16 <= \result <= s->tokens / 16 + 1 && \result <= 1048576;
*/
KVQ_HD static inline uint32_t kvq_cert_blocks(const kvq_cert_shape *s)
{
    return kvq_cert_full_blocks(s) + (kvq_cert_residual_tokens(s) != 0u ? 1u : 0u);
}

/* Tokens held in quantized form: 16 nq. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == (s->tokens / 16) * 16 && \result <= s->tokens;
*/
KVQ_HD static inline uint32_t kvq_cert_quant_tokens(const kvq_cert_shape *s)
{
    return kvq_cert_full_blocks(s) * KVQ_CERT_BLOCK;
}

/* First token of block b (full or residual). */
/*@ requires b_range: b <= 1048576;
    assigns \nothing;
    ensures def: \result == 16 * b;                                    // [CERT-L-03]
*/
KVQ_HD static inline uint32_t kvq_cert_block_first(uint32_t b)
{
    return b * KVQ_CERT_BLOCK;
}

/* Tokens of block b: 16, or n mod 16 for the residual block. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == (b < s->tokens / 16 ? 16 : s->tokens % 16); // [CERT-L-03]
    ensures range: \result <= 16;
*/
KVQ_HD static inline uint32_t kvq_cert_block_tokens(const kvq_cert_shape *s, uint32_t b)
{
    return b < kvq_cert_full_blocks(s) ? KVQ_CERT_BLOCK : kvq_cert_residual_tokens(s);
}

/* Index into an input [n][d] (keys, values) of token t, channel c. */
/*@ requires shape: \valid_read(s) && s->dim <= 512 && t <= 16777216 && c <= 512;
    assigns \nothing;
    ensures def: \result == t * s->dim + c;                            // [CERT-L-01]
*/
KVQ_HD static inline uint64_t kvq_cert_in_index(const kvq_cert_shape *s, uint32_t t, uint32_t c)
{
    return (uint64_t)t * s->dim + c;
}

/* Key code bytes of one block: 16 d [CERT-L-04]. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == 16 * s->dim;                               // [CERT-L-04]
*/
KVQ_HD static inline uint32_t kvq_cert_key_block_bytes(const kvq_cert_shape *s)
{
    return KVQ_CERT_BLOCK * s->dim;
}

/* Key code bytes of all full blocks. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == kvq_cert_key_block_bytes_l(s);             // [CERT-L-04]
*/
KVQ_HD static inline uint64_t kvq_cert_key_code_bytes(const kvq_cert_shape *s)
{
    return (uint64_t)kvq_cert_full_blocks(s) * kvq_cert_key_block_bytes(s);
}

/* Offset of block b's key codes. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    requires b_range: b <= s->tokens / 16;
    assigns \nothing;
    ensures def: \result == b * (16 * s->dim);                         // [CERT-L-04]
*/
KVQ_HD static inline uint64_t kvq_cert_key_block_offset(const kvq_cert_shape *s, uint32_t b)
{
    return (uint64_t)b * kvq_cert_key_block_bytes(s);
}

/* Token-major map within a block [CERT-L-04]: token i (0..15), channel c. */
/*@ requires i < 16 && c < d && d <= 512;
    assigns \nothing;
    ensures \result == i * d + c && \result < 16 * d;
*/
KVQ_HD static inline uint32_t kvq_cert_key_code_index(uint32_t d, uint32_t i, uint32_t c)
{
    return i * d + c;
}

/* Key metadata entries (sigma, z each): nq * d. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == (s->tokens / 16) * s->dim;                 // [CERT-L-04]
*/
KVQ_HD static inline uint64_t kvq_cert_key_meta_count(const kvq_cert_shape *s)
{
    return (uint64_t)kvq_cert_full_blocks(s) * s->dim;
}

/* Entry of block b, channel c in sigma[] and z[]. */
/*@ requires shape: \valid_read(s) && s->dim <= 512 && b <= 1048576 && c <= 512;
    assigns \nothing;
    ensures def: \result == b * s->dim + c;                            // [CERT-L-04]
*/
KVQ_HD static inline uint64_t kvq_cert_key_meta_index(const kvq_cert_shape *s, uint32_t b,
                                                      uint32_t c)
{
    return (uint64_t)b * s->dim + c;
}

/* Value groups per token: d/16. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == s->dim / 16 && 1 <= \result <= 32;         // [CERT-V4-01]
*/
KVQ_HD static inline uint32_t kvq_cert_value_groups_per_token(const kvq_cert_shape *s)
{
    return s->dim / KVQ_CERT_VGROUP;
}

/* Packed code bytes of one value group: 8. */
/*@ assigns \nothing;
    ensures def: \result == 8;                                         // [CERT-V4-01]
*/
KVQ_HD static inline uint32_t kvq_cert_value_group_bytes(void)
{
    return KVQ_CERT_VGROUP * KVQ_CERT_VBITS / 8u;
}

/* Value groups of all quantized tokens: 16 nq * d/16 (one metadata entry each). */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == ((s->tokens / 16) * 16) * (s->dim / 16);   // [CERT-V4-01]
*/
KVQ_HD static inline uint64_t kvq_cert_value_groups(const kvq_cert_shape *s)
{
    return (uint64_t)kvq_cert_quant_tokens(s) * kvq_cert_value_groups_per_token(s);
}

/* Value code bytes of all quantized tokens: d/2 per token. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == ((s->tokens / 16) * 16) * (s->dim / 16) * 8; // [CERT-V4-01]
*/
KVQ_HD static inline uint64_t kvq_cert_value_code_bytes(const kvq_cert_shape *s)
{
    return kvq_cert_value_groups(s) * kvq_cert_value_group_bytes();
}

/* Group number (metadata entry) of token t, group j. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    requires tj: t <= 16777216 && j <= 32;
    assigns \nothing;
    ensures def: \result == t * (s->dim / 16) + j;                     // [CERT-V4-01]
*/
KVQ_HD static inline uint64_t kvq_cert_value_group(const kvq_cert_shape *s, uint32_t t,
                                                   uint32_t j)
{
    return (uint64_t)t * kvq_cert_value_groups_per_token(s) + j;
}

/* Offset of the code bytes of token t, group j. */
/*@ requires shape: \valid_read(s) && kvq_cert_shape_l(s->tokens, s->dim);
    requires tj: t <= 16777216 && j <= 32;
    assigns \nothing;
    ensures def: \result == (t * (s->dim / 16) + j) * 8;               // [CERT-V4-01]
*/
KVQ_HD static inline uint64_t kvq_cert_value_code_offset(const kvq_cert_shape *s, uint32_t t,
                                                         uint32_t j)
{
    return kvq_cert_value_group(s, t, j) * kvq_cert_value_group_bytes();
}

/* Channel of element i of value group j: 16 j + i [CERT-V4-01]. */
/*@ requires ji: j < 32 && i < 16;
    assigns \nothing;
    ensures def: \result == 16 * j + i && \result < 512;              // [CERT-V4-01]
*/
KVQ_HD static inline uint32_t kvq_cert_value_channel(uint32_t j, uint32_t i)
{
    return j * KVQ_CERT_VGROUP + i;
}

/* Value group of channel c, and c's element within it. */
/*@ requires elem_ok: \valid(elem);
    assigns *elem;
    ensures elem: *elem == c % 16;                                      // [CERT-V4-01]
    ensures group: \result == c / 16;
*/
KVQ_HD static inline uint32_t kvq_cert_value_group_of(uint32_t c, uint32_t *elem)
{
    *elem = c % KVQ_CERT_VGROUP;
    return c / KVQ_CERT_VGROUP;
}

/* The KIVI shape whose layout and arithmetic the values use [CERT-V4-01]:
 * bits 4, group 16, per token, binary16 metadata, the 16 nq quantized tokens.
 * (For nq == 0 the token count is 0, which no KIVI call accepts.) */
KVQ_HD static inline kvq_kivi_shape kvq_cert_value_kivi_shape(const kvq_cert_shape *s)
{
    kvq_kivi_shape k;
    k.bits = KVQ_CERT_VBITS;
    k.group = KVQ_CERT_VGROUP;
    k.grouping = KVQ_GROUP_TOKEN;
    k.meta = KVQ_META_F16;
    k.tokens = kvq_cert_quant_tokens(s);
    k.channels = s->dim;
    return k;
}

/* Device bytes per token counted by [CERT-L-05]: d key codes, 8d/16 key
 * metadata, d/2 value codes, 4 d/16 value metadata = 2.25 d (annotations,
 * residual block and tier 2 not counted).  Returned in quarter bytes: 9 d. */
KVQ_HD static inline uint32_t kvq_cert_quarter_bytes_per_token(uint32_t d)
{
    return 4u * d + 4u * (8u * d / 16u) + 4u * (d / 2u) + 4u * (4u * (d / 16u));
}

KVQ_STATIC_ASSERT(4u * 128u + 4u * 64u + 4u * 64u + 4u * 32u == 4u * 288u,
                  "288 bytes per token at d = 128 [CERT-L-05]");

#ifdef __cplusplus
}
#endif
#endif /* KVQ_LAYOUT_H */
