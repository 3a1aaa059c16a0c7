/*
 * check_main.h -- the shared main of the Check suites that draw random cases.
 *
 * KVQ_SEED and KVQ_RANDOM_CASES override the defaults, in decimal or 0x-hex; a
 * malformed value is an error, since a silently ignored override would report
 * a pass on the wrong run.  The seed is printed first and again on failure
 * [TEST-SEED-01].
 */
#ifndef KVQ_CHECK_MAIN_H
#define KVQ_CHECK_MAIN_H

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvq.h"

/* Helpers every suite uses: allocation that fails the test, a byte fill
 * check (nothing written on error [API-ERR-01]), a policy record. */
static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1u);
    if (p == NULL) ck_abort_msg("out of memory (%zu bytes)", n);
    return p;
}

static inline int all_bytes(const void *p, size_t n, unsigned v)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v) return 0;
    return 1;
}

static inline kvq_policy mkpol(uint32_t ties, uint32_t overflow, uint32_t subnormal)
{
    kvq_policy p;
    p.ties = ties;
    p.overflow = overflow;
    p.subnormal = subnormal;
    return p;
}

/* Assertions that call Check only on failure, with the file, line and the
 * failed expression: Check's ck_assert_* report every success to the parent
 * through a pipe (mark_point), which dominates loops of millions of checks. */
#define REQ(c)                                                                              \
    do {                                                                                    \
        if (!(c)) ck_abort_msg("%s:%d: '%s' failed", __FILE__, __LINE__, #c);              \
    } while (0)
#define REQ_MSG(c, ...)                                                                     \
    do {                                                                                    \
        if (!(c)) ck_abort_msg(__VA_ARGS__);                                                \
    } while (0)
#define REQ_EQ(a, b)                                                                        \
    do {                                                                                    \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                                    \
        if (a_ != b_)                                                                       \
            ck_abort_msg("%s:%d: '%s == %s' failed: %jd != %jd", __FILE__, __LINE__, #a, #b, \
                         a_, b_);                                                           \
    } while (0)

static int kvq_check_env_u64(const char *prog, const char *name, uint64_t *v)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long u;
    if (s == NULL || *s == '\0') return 1;
    errno = 0;
    u = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || *s == '-') {
        fprintf(stderr, "%s: %s=\"%s\" is not an unsigned integer\n", prog, name, s);
        return 0;
    }
    *v = (uint64_t)u;
    return 1;
}

/* Read the overrides into *seed and *cases, run the suite, report. */
static int kvq_check_main(const char *prog, Suite *suite, uint64_t *seed, uint64_t *cases)
{
    SRunner *sr;
    int failed;
    if (!kvq_check_env_u64(prog, "KVQ_SEED", seed) ||
        !kvq_check_env_u64(prog, "KVQ_RANDOM_CASES", cases))
        return 2;
    printf("%s: KVQ_SEED=0x%016" PRIx64 " KVQ_RANDOM_CASES=%" PRIu64 "\n", prog, *seed, *cases);
    fflush(stdout);
    sr = srunner_create(suite);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed) fprintf(stderr, "%s: failures with KVQ_SEED=0x%016" PRIx64 "\n", prog, *seed);
    return failed == 0 ? 0 : 1;
}

#endif /* KVQ_CHECK_MAIN_H */
