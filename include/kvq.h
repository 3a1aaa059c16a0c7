/*
 * kvq.h -- public interface of kvq: status codes, the numeric-event flags word,
 * the numeric policy, and the fast (binary32) reference path of every quantizer.
 *
 * Plain C11; nvcc compiles it too.  Declarations, static inline helpers and ACSL
 * only: the header means the same under every -D.  Normative text: spec/.
 */
#ifndef KVQ_H
#define KVQ_H

#include <stddef.h>
#include <stdint.h>

#include "kvq_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Status codes [API-STATUS-01].  KVQ_OK is 0; every other value is an error.
 * Numbers are frozen: they appear in results files and reports.
 * ------------------------------------------------------------------------- */
typedef enum kvq_status {
    KVQ_OK          = 0,  /* success */
    KVQ_E_NONFINITE = 1,  /* a NaN or an infinity among the inputs [POL-NF-01] */
    KVQ_E_SHAPE     = 2,  /* empty, ragged or non-multiple shape [KIVI-L-02] */
    KVQ_E_PARAM     = 3,  /* bad parameter: bit width, group size, null pointer */
    KVQ_E_RANGE     = 4,  /* a value overflows its format under the NaN overflow policy */
    KVQ_E_NOMEM     = 5,  /* allocation failed */
    KVQ_E_IO        = 6,  /* a file could not be read or written */
    KVQ_E_FORMAT    = 7,  /* malformed vector, results or dump file */
    KVQ_E_NODEVICE  = 8,  /* no usable GPU */
    KVQ_E_DEVICE    = 9,  /* a GPU call failed */
    KVQ_E_SUBJECT   = 10  /* a subject crashed, hung or broke its contract */
} kvq_status;

#define KVQ_STATUS_COUNT 11

/* Short English text for a status; never NULL (unknown values get a fixed text). */
const char *kvq_status_str(int status);
/* The status's stable name, e.g. "KVQ_E_SHAPE"; never NULL. */
const char *kvq_status_name(int status);

/* ---------------------------------------------------------------------------
 * Numeric-event flags [API-FLAGS-01].  A caller-supplied uint32_t collects the
 * OR of the events of one call.  Bit positions are frozen.
 * ------------------------------------------------------------------------- */
#define KVQ_FLAG_ZERO_SCALE 0x01u /* a group was degenerate: scale stored as 0 [POL-ZR-01] */
#define KVQ_FLAG_CLAMPED    0x02u /* a code was clamped into [0, 2^n-1] [KIVI-Q-05] */
#define KVQ_FLAG_SATURATED  0x04u /* a value overflowed its format and saturated [POL-OV-01] */
#define KVQ_FLAG_SUBNORMAL  0x08u /* a subnormal input was seen (and flushed under DAZ) [POL-SN-01] */
#define KVQ_FLAG_AMBIGUOUS  0x10u /* exact path only: an element's code is a near-tie [KIVI-B-02] */
#define KVQ_FLAG_ALL        0x1Fu

/* ---------------------------------------------------------------------------
 * Numeric policy [POL-01].  What vendors may legitimately do differently lives
 * here and only here; it is passed explicitly to every quantizer.
 * ------------------------------------------------------------------------- */
typedef enum kvq_ties {
    KVQ_TIES_EVEN = 0,          /* round half to even (default) [POL-TIE-01] */
    KVQ_TIES_AWAY = 1           /* round half away from zero (C roundf) [POL-TIE-02] */
} kvq_ties;

typedef enum kvq_overflow {
    KVQ_OVERFLOW_SATURATE = 0,  /* clamp to the largest finite value, flag SATURATED (default) */
    KVQ_OVERFLOW_NAN      = 1   /* fail with KVQ_E_RANGE; nothing is written */
} kvq_overflow;

typedef enum kvq_subnormal {
    KVQ_SUBNORMAL_KEEP = 0,     /* subnormal inputs are used as they are (default) */
    KVQ_SUBNORMAL_DAZ  = 1      /* subnormal inputs are read as zero of the same sign */
} kvq_subnormal;

typedef struct kvq_policy {
    uint32_t ties;       /* kvq_ties */
    uint32_t overflow;   /* kvq_overflow */
    uint32_t subnormal;  /* kvq_subnormal */
} kvq_policy;

/* The default policy: ties to even, saturate, keep subnormals. */
extern const kvq_policy kvq_policy_default;

/* KVQ_OK if every field holds a defined value, KVQ_E_PARAM otherwise. */
kvq_status kvq_policy_check(const kvq_policy *pol);

/* ---------------------------------------------------------------------------
 * KIVI asymmetric group quantizer, fast path (spec/kivi.md).
 *
 * x is a row-major [tokens][channels] binary32 tensor of one head.  The layout
 * (include/kvq_layout.h) maps groups and elements; codes are packed LSB first.
 * scale[] and zero[] hold one entry per group; under KVQ_META_F16 each holds a
 * binary16 value widened to binary32.  On any error nothing is written.
 * ------------------------------------------------------------------------- */

/* Quantize x into codes/scale/zero.  flags (may be NULL) receives the OR of the
 * call's events.  [KIVI-Q-01..08] */
kvq_status kvq_kivi_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                             const float *x, const kvq_kivi_shape *shape,
                             const kvq_policy *pol);

/* Dequantize codes/scale/zero into y (row-major [tokens][channels]).  [KIVI-D-01..03] */
kvq_status kvq_kivi_dequantize(float *y, uint32_t *flags,
                               const uint8_t *codes, const float *scale, const float *zero,
                               const kvq_kivi_shape *shape, const kvq_policy *pol);

/* One group: the quantizer's arithmetic core [KIVI-Q-01..08].  v[i*stride],
 * i < group, are the group's values (assumed finite: the tensor calls check);
 * grp receives the group's group*bits/8 packed code bytes, *scale and *zero the
 * stored metadata.  *flags is OR-ed with the group's events.  Returns KVQ_OK, or
 * KVQ_E_RANGE when a value overflows under the NaN overflow policy (then
 * nothing is written). */
kvq_status kvq_kivi_quantize_group(uint8_t *grp, float *scale, float *zero, uint32_t *flags,
                                   const float *v, size_t stride, uint32_t group,
                                   uint32_t bits, uint32_t meta, const kvq_policy *pol);

/* Round-to-binary16 of a binary32 value as the spec pins it [POL-F16-01]:
 * round to nearest even onto the binary16 grid; *overflow set to 1 when the
 * result would exceed 65504 in magnitude (the value returned is then +-65504). */
float kvq_round_f16(float v, int *overflow);

/* Round half to even (or away, by ties) of a finite binary32 value with
 * |q| < 2^31, as an integer. [POL-TIE-01] */
int64_t kvq_round_int(float q, uint32_t ties);

/* ---------------------------------------------------------------------------
 * Residual window (KIVI streaming) [KIVI-W-01..05]
 * ------------------------------------------------------------------------- */
typedef struct kvq_kivi_window {
    uint32_t grouping;   /* KVQ_GROUP_CHANNEL (keys) or KVQ_GROUP_TOKEN (values) */
    uint32_t group;      /* G */
    uint32_t residual;   /* R, a positive multiple of G */
    uint32_t quantized;  /* tokens already quantized (the oldest ones) */
    uint32_t pending;    /* tokens held in full precision after them */
} kvq_kivi_window;

/* Set up a window for a prefill of `tokens` tokens: on return w->quantized tokens
 * are to be quantized now and w->pending stay in full precision. */
kvq_status kvq_kivi_window_prefill(kvq_kivi_window *w, uint32_t grouping, uint32_t group,
                                   uint32_t residual, uint32_t tokens);

/* Append one decoded token.  *first and *count receive the range of token
 * indices to quantize now (count 0: nothing).  History is never requantized. */
kvq_status kvq_kivi_window_append(kvq_kivi_window *w, uint32_t *first, uint32_t *count);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_H */
