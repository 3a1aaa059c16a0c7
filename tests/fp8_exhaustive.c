/*
 * fp8_exhaustive.c -- `make fp8-exhaustive`: ALL 2^32 binary32 inputs through
 * both FP8 formats (E4M3, E5M2) and both overflow policies, the fast path
 * (ref/common/fp8.c) against the exact path (ref/exact/fp8.c)
 * [POL-FP8-01..03] [POL-OV-01].  Not part of `make test` (minutes).
 *
 * How every input is judged by the exact path without 2^34 MPFR calls
 * (about 4 x 2^32 x 0.2 us = 1 hour of one core):
 *
 *  1. A second implementation, cheap and independent of both paths, is
 *     compared with the fast path at EVERY input: binary64 arithmetic on a
 *     table of the FP8 values computed here from the spec's field formulas
 *     with ldexp; the input's magnitude is placed between two consecutive
 *     table values and compared with their midpoint (exact in binary64), the
 *     tie going to the even code, the grid's next value above max (480, 65536)
 *     standing for overflow.  No bit manipulation of the encoding, no MPFR.
 *     Wherever the two disagree the exact path decides, and any input where
 *     the fast path differs from the exact path is a failure.
 *
 *  2. The exact path itself judges every input through monotonicity.  Within
 *     a sign's non-NaN encodings (0x00000000..0x7F800000, and the same with
 *     the sign bit) a larger encoding is a larger magnitude, and the exact
 *     result is a non-decreasing function of it: RN onto a fixed grid is
 *     monotone, and the overflow set is upward closed (its result, +-max with
 *     SATURATED or the NaN / infinity code, sits above every in-range code in
 *     the order (magnitude code, SATURATED)).  So the encodings split into
 *     runs on which the fast result (code and flag) is constant, and the
 *     exact path is called at the FIRST and LAST encoding of every run: equal
 *     there, the monotone exact result equals the run's value on the whole run,
 *     i.e. fast == exact at every input of the run.  A run cut by a thread or
 *     slice boundary is two runs, each checked at both ends.  About 130 runs
 *     per sign, format and policy when the fast path is right; a wrong fast
 *     path only makes more runs, each checked.
 *
 *  3. NaN encodings (2 x (2^23 - 1)) are outside the monotone order: the exact
 *     path is called on every one of them.
 *
 *  4. Direct samples, so that (2) does not rest on the exact path's
 *     monotonicity alone: the exact path is also called on every
 *     KVQ_FP8_EXACT_EVERY-th encoding (default 4099, a prime, so the samples
 *     walk through every position in the fraction); KVQ_FP8_EXACT_EVERY=1
 *     calls it on every input (about an hour on 2 cores), 0 never.
 *
 * Environment: KVQ_FP8_FROM, KVQ_FP8_TO (the inclusive range of encodings, hex
 * or decimal; default 0 and 0xFFFFFFFF, a slice for a quick run),
 * KVQ_FP8_THREADS (default: online CPUs), KVQ_FP8_EXACT_EVERY.  Exit status
 * 0 all equal, 1 a mismatch (the first ones printed in hex), 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvq.h"
#include "kvq_bits.h"
#include "kvq_exact_fp8.h"
#include "kvq_fp8.h"

#define MAX_THREADS 256
#define MAX_PRINTED 20

typedef uint8_t (*conv_fn)(float, uint32_t, uint32_t *);

typedef struct fmt {
    const char *name;
    conv_fn fast, exact;
    float (*dec)(uint8_t);
    unsigned m;          /* fraction bits */
    int bias;
    unsigned maxcode, ovfcode, nancode;
    double vals[130];    /* vals[c], c <= maxcode + 1: the magnitudes; vals[maxcode + 1]
                            is the grid's next value above max (overflow) */
} fmt;

static float dec4(uint8_t c) { return kvq_fp8_e4m3_to_f32(c); }
static float dec5(uint8_t c) { return kvq_fp8_e5m2_to_f32(c); }

static fmt fmts[2] = {
    { "e4m3", kvq_fp8_e4m3_from_f32, kvq_exact_fp8_e4m3_from_f32, dec4, 3u, 7,
      KVQ_FP8_E4M3_MAXCODE, KVQ_FP8_E4M3_NAN, KVQ_FP8_E4M3_NAN, { 0 } },
    { "e5m2", kvq_fp8_e5m2_from_f32, kvq_exact_fp8_e5m2_from_f32, dec5, 2u, 15,
      KVQ_FP8_E5M2_MAXCODE, KVQ_FP8_E5M2_INF, KVQ_FP8_E5M2_NAN, { 0 } },
};
static const uint32_t policies[2] = { KVQ_OVERFLOW_SATURATE, KVQ_OVERFLOW_NAN };

/* The value table from the spec's formulas [POL-FP8-01..02]: E = c / 2^m,
 * F = c % 2^m; E = 0: F 2^(1-bias-m); else (2^m + F) 2^(E-bias-m).  Index
 * maxcode + 1 follows the same formula (480 = 1.111b 2^8; 65536 = 1.00b 2^16). */
static int build_table(fmt *f)
{
    unsigned pm = 1u << f->m;
    for (unsigned c = 0; c <= f->maxcode + 1u; c++) {
        unsigned e = c / pm, fr = c % pm;
        f->vals[c] = e == 0u ? ldexp((double)fr, 1 - f->bias - (int)f->m)
                             : ldexp((double)(pm + fr), (int)e - f->bias - (int)f->m);
        /* the header's decoder must agree (it is checked against MPFR in check_fp8) */
        if (c <= f->maxcode && (double)f->dec((uint8_t)c) != f->vals[c]) {
            fprintf(stderr, "fp8-exhaustive: %s table 0x%02x: %a vs decoder %a\n", f->name, c,
                    f->vals[c], (double)f->dec((uint8_t)c));
            return 0;
        }
    }
    return 1;
}

/* The second implementation's result: (code, saturated) for format f, policy
 * pol, binary32 encoding u (not a NaN).  *c is the caller's cursor into the
 * table (the largest c with vals[c] <= |x|, nondecreasing along a segment). */
static uint8_t second(const fmt *f, uint32_t u, unsigned *cur, uint32_t pol, int *sat)
{
    double d = fabs((double)kvq_f32_from_bits(u)); /* exact */
    unsigned top = f->maxcode + 1u, c = *cur, r;
    uint32_t sign = (u >> 31) ? KVQ_FP8_SIGN : 0u;
    while (c < top && d >= f->vals[c + 1u]) c++;
    *cur = c;
    if (c == top) {
        r = top; /* |x| >= the next value: rounds to it or beyond */
    } else {
        double mid = (f->vals[c] + f->vals[c + 1u]) * 0.5; /* exact in binary64 */
        r = d < mid ? c : d > mid ? c + 1u : (c % 2u == 0u ? c : c + 1u);
    }
    *sat = 0;
    if (r > f->maxcode) {
        if (pol == KVQ_OVERFLOW_NAN) return (uint8_t)(sign | f->ovfcode);
        *sat = 1;
        return (uint8_t)(sign | f->maxcode);
    }
    return (uint8_t)(sign | r);
}

/* ---- per-thread work ----------------------------------------------------- */

typedef struct job {
    uint64_t from, to;           /* inclusive */
    uint64_t every;
    uint64_t inputs, exact_calls, runs, fails;
    pthread_mutex_t *lock;
    unsigned *printed;
} job;

/* sc < 0: no second-implementation result at hand (run ends). */
static void report_fail(job *j, const char *why, const fmt *f, uint32_t pol, uint32_t u,
                        int fc, int fs, int xc, int xs, int sc, int ss)
{
    j->fails++;
    pthread_mutex_lock(j->lock);
    if (*j->printed < MAX_PRINTED) {
        char sec[32] = "-";
        (*j->printed)++;
        if (sc >= 0) snprintf(sec, sizeof sec, "0x%02x/%d", sc, ss);
        fprintf(stderr, "FAIL %s: fmt=%s policy=%u in=f32:0x%08" PRIx32 " (%a) fast=0x%02x/%d "
                        "exact=0x%02x/%d second=%s\n",
                why, f->name, pol, u, (double)kvq_f32_from_bits(u), fc, fs, xc, xs, sec);
    }
    pthread_mutex_unlock(j->lock);
}

/* The exact path on u: code, *sat. */
static uint8_t exact(job *j, const fmt *f, uint32_t u, uint32_t pol, int *sat)
{
    uint32_t fl = 0;
    uint8_t c = f->exact(kvq_f32_from_bits(u), pol, &fl);
    j->exact_calls++;
    *sat = fl != 0u;
    return c;
}

typedef struct run {
    int open;
    uint32_t last;
    uint8_t code;
    int sat;
} run;

/* Close a run: the exact path at its last encoding must give its value. */
static void close_run(job *j, run *r, const fmt *f, uint32_t pol)
{
    int xs;
    uint8_t xc;
    if (!r->open) return;
    xc = exact(j, f, r->last, pol, &xs);
    if (xc != r->code || xs != r->sat)
        report_fail(j, "run end: fast != exact", f, pol, r->last, r->code, r->sat, xc, xs, -1, -1);
    r->open = 0;
}

/* One non-NaN segment [a, b] of one sign (a <= b, same sign bit). */
static void monotone_segment(job *j, uint32_t a, uint32_t b)
{
    run runs[2][2];
    unsigned cur[2] = { 0u, 0u };
    memset(runs, 0, sizeof runs);
    for (uint64_t w = a; w <= b; w++) {
        uint32_t u = (uint32_t)w;
        float x = kvq_f32_from_bits(u);
        int sample = j->every != 0u && w % j->every == 0u;
        for (int fi = 0; fi < 2; fi++) {
            const fmt *f = &fmts[fi];
            for (int p = 0; p < 2; p++) {
                uint32_t pol = policies[p], fl = 0;
                uint8_t fc = f->fast(x, pol, &fl), sc;
                int fs = fl != 0u, ss, xs;
                run *r = &runs[fi][p];
                /* the cursor advances on the saturate pass; the nan pass reuses it */
                sc = second(f, u, &cur[fi], pol, &ss);
                if (fc != sc || fs != ss || sample) {
                    uint8_t xc = exact(j, f, u, pol, &xs);
                    if (fc != xc || fs != xs)
                        report_fail(j, "fast != exact", f, pol, u, fc, fs, xc, xs, sc, ss);
                    else if (sc != xc || ss != xs)
                        report_fail(j, "second implementation != exact (checker bug)", f, pol, u,
                                    fc, fs, xc, xs, sc, ss);
                }
                if (r->open && (r->code != fc || r->sat != fs)) close_run(j, r, f, pol);
                if (!r->open) {
                    uint8_t xc = exact(j, f, u, pol, &xs);
                    if (xc != fc || xs != fs)
                        report_fail(j, "run start: fast != exact", f, pol, u, fc, fs, xc, xs, sc, ss);
                    r->open = 1;
                    r->code = fc;
                    r->sat = fs;
                    j->runs++;
                }
                r->last = u;
            }
        }
        j->inputs++;
    }
    for (int fi = 0; fi < 2; fi++)
        for (int p = 0; p < 2; p++) close_run(j, &runs[fi][p], &fmts[fi], policies[p]);
}

/* A NaN segment: the exact path on every input. */
static void nan_segment(job *j, uint32_t a, uint32_t b)
{
    for (uint64_t w = a; w <= b; w++) {
        uint32_t u = (uint32_t)w;
        float x = kvq_f32_from_bits(u);
        for (int fi = 0; fi < 2; fi++) {
            const fmt *f = &fmts[fi];
            for (int p = 0; p < 2; p++) {
                uint32_t fl = 0;
                uint8_t fc = f->fast(x, policies[p], &fl), xc, sc;
                int xs;
                sc = (uint8_t)(((u >> 31) ? KVQ_FP8_SIGN : 0u) | f->nancode);
                xc = exact(j, f, u, policies[p], &xs);
                if (fc != xc || fl != 0u || xs != 0)
                    report_fail(j, "NaN: fast != exact", f, policies[p], u, fc, fl != 0u, xc, xs,
                                sc, 0);
                else if (sc != xc)
                    report_fail(j, "NaN: second implementation != exact", f, policies[p], u, fc,
                                0, xc, xs, sc, 0);
            }
        }
        j->inputs++;
    }
}

static void *work(void *arg)
{
    /* The four segments of the encodings, in order. */
    static const uint64_t seg[4][3] = {
        { 0x00000000u, 0x7F800000u, 0 }, { 0x7F800001u, 0x7FFFFFFFu, 1 },
        { 0x80000000u, 0xFF800000u, 0 }, { 0xFF800001u, 0xFFFFFFFFu, 1 },
    };
    job *j = arg;
    for (int s = 0; s < 4; s++) {
        uint64_t a = j->from > seg[s][0] ? j->from : seg[s][0];
        uint64_t b = j->to < seg[s][1] ? j->to : seg[s][1];
        if (a > b) continue;
        if (seg[s][2]) nan_segment(j, (uint32_t)a, (uint32_t)b);
        else monotone_segment(j, (uint32_t)a, (uint32_t)b);
    }
    return NULL;
}

static int env_u64(const char *name, uint64_t *v)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long u;
    if (s == NULL || *s == '\0') return 1;
    errno = 0;
    u = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || *s == '-') {
        fprintf(stderr, "fp8-exhaustive: %s=\"%s\" is not an unsigned integer\n", name, s);
        return 0;
    }
    *v = (uint64_t)u;
    return 1;
}

int main(void)
{
    uint64_t from = 0, to = 0xFFFFFFFFu, every = 4099u, threads;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t tid[MAX_THREADS];
    job jobs[MAX_THREADS];
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    unsigned printed = 0;
    uint64_t inputs = 0, calls = 0, runs = 0, fails = 0, n;
    struct timespec t0, t1;
    double secs;

    threads = ncpu > 0 ? (uint64_t)ncpu : 1u;
    if (!env_u64("KVQ_FP8_FROM", &from) || !env_u64("KVQ_FP8_TO", &to) ||
        !env_u64("KVQ_FP8_THREADS", &threads) || !env_u64("KVQ_FP8_EXACT_EVERY", &every))
        return 2;
    if (from > to || to > 0xFFFFFFFFu || threads == 0u || threads > MAX_THREADS) {
        fprintf(stderr, "fp8-exhaustive: need KVQ_FP8_FROM <= KVQ_FP8_TO <= 0xffffffff and "
                        "1 <= KVQ_FP8_THREADS <= %d\n", MAX_THREADS);
        return 2;
    }
    if (!build_table(&fmts[0]) || !build_table(&fmts[1])) return 1;
    n = to - from + 1u;
    if (threads > n) threads = n;
    printf("fp8-exhaustive: binary32 encodings [0x%08" PRIx64 ", 0x%08" PRIx64 "] (%" PRIu64
           ") x {e4m3, e5m2} x {saturate, nan}, %" PRIu64 " threads; exact path at run ends, "
           "NaNs and directly on ",
           from, to, n, threads);
    if (every == 0u) printf("no other input\n");
    else if (every == 1u) printf("every input\n");
    else printf("1 input in %" PRIu64 "\n", every);
    fflush(stdout);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t t = 0; t < threads; t++) {
        job *j = &jobs[t];
        memset(j, 0, sizeof *j);
        j->from = from + n * t / threads;
        j->to = from + n * (t + 1u) / threads - 1u;
        j->every = every;
        j->lock = &lock;
        j->printed = &printed;
        if (pthread_create(&tid[t], NULL, work, j) != 0) {
            fprintf(stderr, "fp8-exhaustive: pthread_create failed\n");
            return 2;
        }
    }
    for (uint64_t t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        inputs += jobs[t].inputs;
        calls += jobs[t].exact_calls;
        runs += jobs[t].runs;
        fails += jobs[t].fails;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("fp8-exhaustive: %" PRIu64 " inputs, %" PRIu64 " conversions (fast vs second "
           "implementation at every one), %" PRIu64 " runs, %" PRIu64 " exact-path calls, %" PRIu64
           " mismatches; %.1f s, %.2f M inputs/s\n",
           inputs, inputs * 4u, runs, calls, fails, secs, (double)inputs / secs * 1e-6);
    if (inputs != n) {
        fprintf(stderr, "fp8-exhaustive: %" PRIu64 " inputs checked, %" PRIu64 " asked\n", inputs, n);
        return 1;
    }
    printf("fp8-exhaustive: %s\n", fails ? "FAIL" : "PASS (fast == exact on every input)");
    return fails ? 1 : 0;
}
