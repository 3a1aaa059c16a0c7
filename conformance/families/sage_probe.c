/*
 * sage_probe.c -- `kvq probe`: characterise the local GPU's FP8 tensor-core
 * accumulators (spec/sage.md [SAGE-ACC-04]).
 *
 * The probe kernels are CUDA (gpu/sage/mma_probe.cu, built by `make gpu` as
 * kvq_sage_mma_probe); kvq itself links no CUDA, so `kvq probe` runs that
 * program with the options it was given and returns its exit status.  The
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

int kvq_sage_probe_main(int argc, char **argv)
{
    const char *given = NULL;
    char prog[PATH_MAX];
    char **av = calloc((size_t)argc + 1u, sizeof *av);
    int na = 1;
    if (!av) {
        fprintf(stderr, "kvq probe: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { /* [VER-CLI-01] */
            printf("usage:\n%s", KVQ_SAGE_PROBE_USAGE);
            free(av);
            return 0;
        }
        if (strcmp(argv[i], "--program") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "kvq probe: --program needs a path\n");
                free(av);
                return 2;
            }
            given = argv[++i];
        } else {
            av[na++] = argv[i];                                 /* the program's own options */
        }
    }
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
