/*
 * testbed.h -- the machinery the GPU tests share (gpu/gpu_test.cu,
 * gpu/cert/cert_test.cu, gpu/cert/cert_decode_test.cu).
 *
 * Host C++ (nvcc), header only: static inline functions over one static state,
 * so each test program (one translation unit) has its own.  Call
 * kvq_tb_init first; everything else may follow in any order.
 *
 *   program    kvq_tb_init(prog, default_seed)   prog prefixes every line below
 *   seed/RNG   kvq_tb_seed, kvq_tb_rnd, kvq_tb_rndu, kvq_tb_chance, kvq_tb_rndf
 *              (conformance/kvq_rng.h; KVQ_SEED overrides the default seed; the
 *              seed is printed on the first line and on every failure exit)
 *   env        kvq_tb_env_count(name, dflt)      case counts (KVQ_GPU_CASES, ...)
 *   device     kvq_tb_device(fmt, ...)           SKIPPED line or device banner
 *   errors     kvq_tb_cuda(e, what), kvq_tb_malloc(n)      exit 2 on failure
 *   device mem kvq_tb_dbuf, kvq_tb_dgrow(b, n)   a buffer grown on demand
 *   outputs    kvq_tb_outs: host output buffers pre-filled with KVQ_TB_SENTINEL,
 *              each followed by KVQ_TB_GUARD guard bytes, and a flags word
 *              pre-set to KVQ_TB_FLAGS_SENTINEL:
 *              kvq_tb_outs_init, kvq_tb_outs_add, kvq_tb_outs_bytes,
 *              kvq_tb_outs_free, kvq_tb_outs_device (sentinel-filled device
 *              twins), kvq_tb_outs_fetch (copy them back, guards included),
 *              kvq_tb_outs_check (guards untouched; after an error, nothing
 *              touched at all [API-ERR-01]; names the buffer and byte)
 *   bytes      kvq_tb_first_diff(a, b, n)        first differing byte, or -1
 *   counters   kvq_tb_case, kvq_tb_cases, kvq_tb_pass, kvq_tb_fail,
 *              kvq_tb_passed, kvq_tb_failed
 *   closing    kvq_tb_close(passed, failed, bad), kvq_tb_finish()
 *
 * Without a device a test prints "<prog>: SKIPPED (no CUDA device: <reason>)"
 * and exits 0 having counted nothing (CI reads SKIPPED, never a pass).  The
 * closing line is "N passed, N failed", after "<prog>: FAILED, seed 0x...
 * (rerun with KVQ_SEED)" when anything failed; the exit status is then 1.
 *
 * SPEC: [TEST-SEED-01] [API-ERR-01]
 */
#ifndef KVQ_TESTBED_H
#define KVQ_TESTBED_H

#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_cuda.h"
#include "kvq_rng.h"

#define KVQ_TB_SENTINEL 0xA5             /* every output byte before a call */
#define KVQ_TB_FLAGS_SENTINEL 0xDEADBEEFu /* the flags word before a call */
#define KVQ_TB_GUARD 64u                 /* sentinel bytes past each output buffer */
#define KVQ_TB_MAX_BUFS 4u               /* output buffers of one set */
#define KVQ_TB_MAX_REPORTS 10ul          /* failures printed in full */

typedef struct kvq_tb_state {
    const char *prog;
    uint64_t seed;
    kvq_rng rng;
    unsigned long cases, passed, failed;
} kvq_tb_state;

static kvq_tb_state kvq_tb_st = {"testbed", 0u, {0u}, 0ul, 0ul, 0ul};

/* ---- program, seed and RNG ----------------------------------------------- */

/* prog names the program in every line the testbed prints; the seed is
 * KVQ_SEED (any strtoull base-0 number) or default_seed. */
static inline void kvq_tb_init(const char *prog, uint64_t default_seed)
{
    const char *env = getenv("KVQ_SEED");
    kvq_tb_st.prog = prog;
    kvq_tb_st.seed = env ? strtoull(env, NULL, 0) : default_seed;
    kvq_tb_st.rng.s = kvq_tb_st.seed;
}

static inline uint64_t kvq_tb_seed(void) { return kvq_tb_st.seed; }

/* A count from the environment (strtoull base 0), or dflt when name is unset. */
static inline uint64_t kvq_tb_env_count(const char *name, uint64_t dflt)
{
    const char *env = getenv(name);
    return env ? strtoull(env, NULL, 0) : dflt;
}
static inline uint64_t kvq_tb_rnd(void) { return kvq_rng_next(&kvq_tb_st.rng); }
/* Uniform in [0, n) (kvq_rng_below). */
static inline uint32_t kvq_tb_rndu(uint32_t n) { return kvq_rng_below(&kvq_tb_st.rng, n); }
static inline int kvq_tb_chance(uint32_t percent) { return kvq_tb_rndu(100) < percent; }
/* Uniform on the binary64 multiples of 2^-53 in [0, 1). */
static inline double kvq_tb_rndf(void) { return (double)(kvq_tb_rnd() >> 11) * 0x1p-53; }

/* ---- errors that end the run (exit 2) ------------------------------------- */

static inline void kvq_tb_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s (seed 0x%016llx)\n", kvq_tb_st.prog, what,
                cudaGetErrorString(e), (unsigned long long)kvq_tb_st.seed);
        exit(2);
    }
}

static inline void *kvq_tb_malloc(size_t n)
{
    void *p = malloc(n ? n : 1u);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", kvq_tb_st.prog);
        exit(2);
    }
    return p;
}

/* ---- the device ------------------------------------------------------------ */

/* 1 with a usable device, after the first line "<prog>: device NAME (sm_XY),
 * seed 0x..., " followed by fmt; 0 without one, after "<prog>: SKIPPED (no
 * CUDA device: <reason>)": the caller then returns 0 at once. */
__attribute__((format(printf, 1, 2))) static inline int kvq_tb_device(const char *fmt, ...)
{
    char why[256];
    cudaDeviceProp p;
    int dev = 0;
    va_list ap;
    if (kvq_cuda_device_check(why, sizeof why) != KVQ_OK) {
        printf("%s: SKIPPED (no CUDA device: %s)\n", kvq_tb_st.prog, why);
        return 0;
    }
    kvq_tb_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    kvq_tb_cuda(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    printf("%s: device %s (sm_%d%d), seed 0x%016llx, ", kvq_tb_st.prog, p.name, p.major,
           p.minor, (unsigned long long)kvq_tb_st.seed);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    return 1;
}

/* A device buffer, grown on demand (contents not kept). */
typedef struct kvq_tb_dbuf {
    void *p;
    size_t n;
} kvq_tb_dbuf;

static inline void *kvq_tb_dgrow(kvq_tb_dbuf *b, size_t n)
{
    if (n > b->n) {
        if (b->p) cudaFree(b->p);
        kvq_tb_cuda(cudaMalloc(&b->p, n), "cudaMalloc");
        b->n = n;
    }
    return b->p;
}

/* ---- output sets: sentinel-filled buffers with guard bytes ---------------- */

typedef struct kvq_tb_buf {
    const char *name;
    uint8_t *p;       /* n bytes a call may write, then KVQ_TB_GUARD guard bytes */
    size_t n;
} kvq_tb_buf;

typedef struct kvq_tb_outs {
    const char *side;     /* "ref", "gpu", ...: names the set in messages */
    unsigned nbuf;
    kvq_tb_buf buf[KVQ_TB_MAX_BUFS];
    uint32_t flags;       /* KVQ_TB_FLAGS_SENTINEL before the call */
    int status;           /* the call's kvq_status */
} kvq_tb_outs;

static inline void kvq_tb_outs_init(kvq_tb_outs *o, const char *side)
{
    memset(o, 0, sizeof *o);
    o->side = side;
    o->flags = KVQ_TB_FLAGS_SENTINEL;
}

/* Add an output buffer of n bytes (plus its guard), sentinel-filled. */
static inline void *kvq_tb_outs_add(kvq_tb_outs *o, const char *name, size_t n)
{
    if (o->nbuf >= KVQ_TB_MAX_BUFS) {
        fprintf(stderr, "%s: more than %u output buffers\n", kvq_tb_st.prog, KVQ_TB_MAX_BUFS);
        exit(2);
    }
    kvq_tb_buf *b = &o->buf[o->nbuf++];
    b->name = name;
    b->n = n;
    b->p = (uint8_t *)kvq_tb_malloc(n + KVQ_TB_GUARD);
    memset(b->p, KVQ_TB_SENTINEL, n + KVQ_TB_GUARD);
    return b->p;
}

/* Bytes of buffer i, its guard included. */
static inline size_t kvq_tb_outs_bytes(const kvq_tb_outs *o, unsigned i)
{
    return o->buf[i].n + KVQ_TB_GUARD;
}

static inline void kvq_tb_outs_free(kvq_tb_outs *o)
{
    for (unsigned i = 0; i < o->nbuf; i++) free(o->buf[i].p);
    o->nbuf = 0;
}

/* Device twins of o's buffers: grow d[i] to off[i] bytes plus the buffer's
 * (guard included), fill that with the sentinel, dp[i] = d[i] + off[i]
 * (off NULL: no offsets). */
static inline void kvq_tb_outs_device(const kvq_tb_outs *o, kvq_tb_dbuf *d, const size_t *off,
                                      void **dp)
{
    for (unsigned i = 0; i < o->nbuf; i++) {
        const size_t at = off ? off[i] : 0u, n = kvq_tb_outs_bytes(o, i);
        dp[i] = (uint8_t *)kvq_tb_dgrow(&d[i], at + n) + at;
        kvq_tb_cuda(cudaMemset(dp[i], KVQ_TB_SENTINEL, n), "cudaMemset");
    }
}

/* Copy the device twins dp back over o's buffers, guards included. */
static inline void kvq_tb_outs_fetch(kvq_tb_outs *o, void *const *dp)
{
    for (unsigned i = 0; i < o->nbuf; i++)
        kvq_tb_cuda(cudaMemcpy(o->buf[i].p, dp[i], kvq_tb_outs_bytes(o, i),
                               cudaMemcpyDeviceToHost), "cudaMemcpy outputs");
}

/* After a call: every guard byte still the sentinel; with failed != 0 (the
 * call returned an error), every byte and the flags word too [API-ERR-01].
 * 1 when so; else 0 and msg says which buffer and byte was touched. */
static inline int kvq_tb_outs_check(const kvq_tb_outs *o, int failed, char *msg, size_t cap)
{
    for (unsigned i = 0; i < o->nbuf; i++) {
        const kvq_tb_buf *b = &o->buf[i];
        const size_t from = failed ? 0u : b->n, to = b->n + KVQ_TB_GUARD;
        for (size_t k = from; k < to; k++) {
            if (b->p[k] == KVQ_TB_SENTINEL) continue;
            if (k >= b->n)
                snprintf(msg, cap, "%s %s: guard byte %zu past the end written (%02x, not %02x)",
                         o->side, b->name, k - b->n, b->p[k], KVQ_TB_SENTINEL);
            else
                snprintf(msg, cap, "%s %s: byte %zu written by a call that failed (%02x, not "
                         "%02x) [API-ERR-01]", o->side, b->name, k, b->p[k], KVQ_TB_SENTINEL);
            return 0;
        }
    }
    if (failed && o->flags != KVQ_TB_FLAGS_SENTINEL) {
        snprintf(msg, cap, "%s flags: written by a call that failed (0x%08x, not 0x%08x) "
                 "[API-ERR-01]", o->side, o->flags, KVQ_TB_FLAGS_SENTINEL);
        return 0;
    }
    return 1;
}

/* ---- bytes ------------------------------------------------------------------ */

/* The first byte where a and b differ, or -1 when their n bytes are equal. */
static inline long kvq_tb_first_diff(const void *a, const void *b, size_t n)
{
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    if (memcmp(x, y, n) == 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return (long)i;
    return -1;
}

/* ---- counters and the closing lines ---------------------------------------- */

/* Start a case: its number (1, 2, ...), as case= of the case dumps. */
static inline unsigned long kvq_tb_case(void) { return ++kvq_tb_st.cases; }
static inline unsigned long kvq_tb_cases(void) { return kvq_tb_st.cases; }
static inline void kvq_tb_pass(void) { kvq_tb_st.passed++; }
/* Count a failure: 1 while it is among the first KVQ_TB_MAX_REPORTS (print it
 * in full), 0 after. */
static inline int kvq_tb_fail(void) { return ++kvq_tb_st.failed <= KVQ_TB_MAX_REPORTS; }
static inline unsigned long kvq_tb_passed(void) { return kvq_tb_st.passed; }
static inline unsigned long kvq_tb_failed(void) { return kvq_tb_st.failed; }

/* The closing lines, with the test's own counts: when bad, "<prog>: FAILED,
 * seed 0x... (rerun with KVQ_SEED)"; then "N passed, N failed".  Returns the
 * exit status: 1 when bad, else 0. */
static inline int kvq_tb_close(unsigned long passed, unsigned long failed, int bad)
{
    if (bad)
        printf("%s: FAILED, seed 0x%016llx (rerun with KVQ_SEED)\n", kvq_tb_st.prog,
               (unsigned long long)kvq_tb_st.seed);
    printf("%lu passed, %lu failed\n", passed, failed);
    return bad ? 1 : 0;
}

/* The closing lines with the testbed's counters. */
static inline int kvq_tb_finish(void)
{
    return kvq_tb_close(kvq_tb_st.passed, kvq_tb_st.failed, kvq_tb_st.failed != 0u);
}

#endif /* KVQ_TESTBED_H */
