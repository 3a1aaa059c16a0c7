/*
 * xscratch.h -- working MPFR variables of the exact path (internal).
 *
 * Five variables at KVQ_XPREC bits, initialised once per call and passed to
 * the helpers, so the inner loops allocate nothing.
 */
#ifndef KVQ_XSCRATCH_H
#define KVQ_XSCRATCH_H

#include "kvq_exact.h"

typedef struct kvq_xscratch {
    mpfr_t a, b, c, d, e;
} kvq_xscratch;

static inline void kvq_xs_init(kvq_xscratch *w)
{
    mpfr_inits2(KVQ_XPREC, w->a, w->b, w->c, w->d, w->e, (mpfr_ptr)0);
}

static inline void kvq_xs_clear(kvq_xscratch *w)
{
    mpfr_clears(w->a, w->b, w->c, w->d, w->e, (mpfr_ptr)0);
}

/* The real code of x against stored (s, z), clamped to [cmin, cmax], and its
 * accepted alternative [KIVI-B-01..02] (CERT keys: [CERT-K8-06]).
 * u = (x - z)/s exactly.  With k = floor(u) and h = k + 1/2 the nearest
 * half-integer (u within [cmin - 1, cmax + 1] keeps the radius below 1/2), the
 * sign of d - h*s decides the rounding exactly (ties by the tie rule); the
 * element is ambiguous when
 *   |d - h*s| <= 2^-22 |d| + 2^-148 s,   i.e. |u - h| <= 2^-22 |u| + 2^-148,
 * the radius of any evaluation of u with at most three binary32 roundings
 * (spec/bounds/kivi.md), and the two neighbours clamp to different codes.
 * s == 0 gives code 0.  Returns 1 when ambiguous (then *alt != *code). */
int kvq_exact_real_code(long *code, long *alt, float x, float s, float z, long cmin, long cmax,
                        uint32_t ties, kvq_xscratch *w);

#endif /* KVQ_XSCRATCH_H */
