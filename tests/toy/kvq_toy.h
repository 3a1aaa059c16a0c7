/*
 * kvq_toy.h -- the toy family's public header (tests/toy/toy.sh copies it to
 * include/ of a scratch tree): one operation, y = 2 x, element by element.
 */
#ifndef KVQ_TOY_H
#define KVQ_TOY_H

#include <stdint.h>

#include "kvq.h"

#define KVQ_TOY_MAX_N 4096u

/* y[i] = 2 x[i] for i < n: KVQ_E_SHAPE when n is 0 or above KVQ_TOY_MAX_N,
 * KVQ_E_NONFINITE for a NaN or an infinity, KVQ_E_RANGE when a doubled value
 * overflows; nothing written on error. */
kvq_status kvq_toy_double(float *y, const float *x, uint32_t n);

/* The entry a subject provides for it, signature version 1. */
typedef int (*kvq_toy_double_v1_fn)(float *y, const float *x, uint32_t n);

#endif /* KVQ_TOY_H */
