/*
 * sage_probe.c -- `kvq probe`: characterise the local GPU's FP8 tensor-core
 * accumulators (spec/sage.md [SAGE-ACC-04]).
 *
 * The probe kernels are CUDA (gpu/sage/mma_probe.cu, built by `make gpu` as
 * kvq_sage_mma_probe); kvq itself links no CUDA, so `kvq probe` checks the
 * options it was given (a malformed one is a usage error, exit 2, never a
 * skip), runs that program with them and returns its exit status.  The
 * program is, in order: --program PATH, the environment variable KVQ_PROBE,
 * kvq_sage_mma_probe beside the kvq executable, in ../gpu/ of it (the build
 * tree) or in ../libexec/kvq/ of it (an installation).  When none exists, or
 * the program finds no sm_90 device, the probe cannot run: "SKIPPED", exit 1
 * (kvq's rule: a skip is not a pass).
 *
 * SPEC: [SAGE-ACC-04]
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sage.h"

#define PROBE_NAME "kvq_sage_mma_probe"

static int is_exec(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* The probe program into buf (cap bytes); 0 when there is none. */
static int find_probe(const char *given, char *buf, size_t cap)
{
    const char *env = getenv("KVQ_PROBE");
    if (given) return snprintf(buf, cap, "%s", given) < (int)cap && is_exec(buf);
    if (env && *env) return snprintf(buf, cap, "%s", env) < (int)cap && is_exec(buf);
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return 0;
    *slash = 0;
    static const char *const rel[] = {"/" PROBE_NAME, "/../gpu/" PROBE_NAME, "/../libexec/kvq/" PROBE_NAME};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        if (snprintf(buf, cap, "%s%s", self, rel[i]) < (int)cap && is_exec(buf)) return 1;
    return 0;
}

/* A number of the probe's options: digits first (decimal, 0x hex or 0 octal, as
 * the program reads it), the whole text, at most max [VER-CLI-02]. */
static int probe_number(const char *s, unsigned long long max, unsigned long long min)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9') return 0;
    errno = 0;
    v = strtoull(s, &end, 0);
    return errno == 0 && *end == '\0' && v <= max && v >= min;
}

static int probe_usage(char **av, const char *fmt, const char *arg)
{
    fputs("kvq probe: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage:\n%s", KVQ_SAGE_PROBE_USAGE);
    free(av);
    return 2;
}

int kvq_sage_probe_main(int argc, char **argv)
{
    const char *given = NULL, *judge = NULL, *measure = NULL;
    char prog[PATH_MAX];
    char **av = calloc((size_t)argc + 1u, sizeof *av);
    int na = 1;
    if (!av) {
        fprintf(stderr, "kvq probe: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { /* [VER-CLI-01] */
            printf("usage:\n%s", KVQ_SAGE_PROBE_USAGE);
            free(av);
            return 0;
        }
    /* Every argument is checked here, before the program is looked for: a
     * malformed command line is a usage error (exit 2) whether or not the
     * probe could run; SKIPPED means only that it cannot [SAGE-ACC-04]. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--confirm") == 0) {
            measure = a;
            av[na++] = argv[i];
            continue;
        }
        if (strcmp(a, "--program") != 0 && strcmp(a, "--tiles") != 0 && strcmp(a, "--sample") != 0 &&
            strcmp(a, "--seed") != 0 && strcmp(a, "--out") != 0 && strcmp(a, "--commit") != 0 &&
            strcmp(a, "--judge") != 0)
            return probe_usage(av, "unknown argument '%s'", a);
        if (v == NULL || v[0] == '\0') return probe_usage(av, "%s needs a value", a);
        if (strcmp(a, "--tiles") == 0 && !probe_number(v, 0xffffffffull, 1))
            return probe_usage(av, "bad --tiles '%s' (1 to 2^32-1)", v);
        if (strcmp(a, "--sample") == 0 && !probe_number(v, 0xffffffffull, 0))
            return probe_usage(av, "bad --sample '%s' (0 to 2^32-1)", v);
        if (strcmp(a, "--seed") == 0 && !probe_number(v, ~0ull, 0))
            return probe_usage(av, "bad --seed '%s'", v);
        i++;
        if (strcmp(a, "--program") == 0) {
            given = v;
            continue;
        }
        if (strcmp(a, "--judge") == 0) judge = a;
        else measure = a;
        av[na++] = argv[i - 1];                                 /* the program's own options */
        av[na++] = argv[i];
    }
    if (judge != NULL && measure != NULL)
        return probe_usage(av, "--judge re-judges a saved sample and takes no %s", measure);
    if (!find_probe(given, prog, sizeof prog)) {
        printf("kvq probe: SKIPPED (no probe program%s%s; `make gpu` builds build/gpu/" PROBE_NAME
               ", or pass --program PATH)\n", given ? ": " : "", given ? given : "");
        free(av);
        return 1;
    }
    av[0] = prog;
    av[na] = NULL;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "kvq probe: fork: %s\n", strerror(errno));
        free(av);
        return 2;
    }
    if (pid == 0) {
        setenv("KVQ_PROBE_SKIP_STATUS", "1", 1);               /* a skipped probe is not a pass */
        execv(prog, av);
        fprintf(stderr, "kvq probe: %s: %s\n", prog, strerror(errno));
        _exit(2);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "kvq probe: waitpid: %s\n", strerror(errno));
            free(av);
            return 2;
        }
    free(av);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    fprintf(stderr, "kvq probe: %s ended by signal %d\n", prog, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 2;
}
