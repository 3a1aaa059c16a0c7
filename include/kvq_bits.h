/*
 * kvq_bits.h -- float <-> bit-pattern conversions (ref/common/fbits.c).
 *
 * The only place where kvq looks at the bits of a float.  Listed in
 * proofs/TRUSTED.md: the proved core never calls these.
 */
#ifndef KVQ_BITS_H
#define KVQ_BITS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* binary32 <-> its IEEE 754 encoding. */
uint32_t kvq_f32_bits(float v);
float kvq_f32_from_bits(uint32_t b);

/* binary16 encoding of a value that binary16 represents exactly (any binary32
 * that is not is a caller error: *ok is set to 0 and 0 is returned). */
uint16_t kvq_f16_bits(float v, int *ok);
/* The binary32 value of a binary16 encoding; NaN encodings give a NaN. */
float kvq_f16_from_bits(uint16_t b);

/* v rounded to nearest, ties to even, onto bfloat16 (as binary32): an
 * overflow gives an infinity, NaN and infinities stay (binary16: kvq_round_f16,
 * kvq.h). */
float kvq_round_bf16(float v);
/* v is a value of bfloat16 (the upper 16 bits of its binary32 encoding). */
int kvq_bf16_exact(float v);

/* Same value predicate: identical encodings (so +0 != -0, and a NaN equals only
 * the same NaN encoding) [TEST-CMP-01]. */
int kvq_f32_same(float a, float b);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_BITS_H */
