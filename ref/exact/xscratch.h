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

#endif /* KVQ_XSCRATCH_H */
