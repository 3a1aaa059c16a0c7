/*
 * outward.h -- outward rounding in binary64 for the exact path's bounds
 * (internal): the neighbours of a binary64 value, so that an operation
 * rounded to nearest and then moved one unit outward encloses the real
 * result whatever the rounding mode was.
 */
#ifndef KVQ_OUTWARD_H
#define KVQ_OUTWARD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The next binary64 above x (nextafter toward +inf without errno); NaN and
 * +inf stay. */
static inline double kvq_up(double x)
{
    if (x != x || x == INFINITY) return x;
    if (x == 0.0) return 0x1p-1074;
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    b = x > 0.0 ? b + 1u : b - 1u;
    memcpy(&x, &b, sizeof b);
    return x;
}

/* The next binary64 below x. */
static inline double kvq_dn(double x)
{
    return -kvq_up(-x);
}

#endif
