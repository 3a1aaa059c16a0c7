/*
 * outfile.c -- every file kvq writes goes through here (spec/verify.md
 * [VER-RUN-04], [VER-OUT-02]).
 *
 * A regular file (or a path that does not exist yet) is written to a new
 * temporary file in the same directory and renamed over the path once whole,
 * so a reader never sees half a file and a failed write leaves the old one.
 * A path that names something else (a character device such as /dev/null or
 * /dev/stdout, a pipe) is written in place: renaming over it would replace
 * the device with a regular file.  A symbolic link is followed: its target is
 * what is replaced.  Temporary names are sized for the path, however long,
 * and created exclusively, so no other file is ever overwritten or removed.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"

static void say(char *err, size_t errlen, const char *path, const char *what, int e)
{
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: %s: %s", path, what, strerror(e));
}

kvq_status kvq_outfile_open(kvq_outfile *o, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    const char *target = path;
    char *resolved = NULL;
    memset(o, 0, sizeof *o);
    if (path == NULL || path[0] == '\0') {
        if (err != NULL && errlen > 0) snprintf(err, errlen, "empty output path");
        return KVQ_E_PARAM;
    }
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        /* write through the link: its target is replaced, the link stays */
        resolved = realpath(path, NULL);
        if (resolved == NULL && errno != ENOENT) {
            say(err, errlen, path, "cannot resolve the link", errno);
            return KVQ_E_IO;
        }
        if (resolved != NULL) target = resolved;
    }
    if (stat(target, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (S_ISDIR(sb.st_mode)) {
            say(err, errlen, path, "cannot write", EISDIR);
            free(resolved);
            return KVQ_E_IO;
        }
        /* a device, a pipe: stream into it */
        o->f = fopen(target, "w");
        if (o->f == NULL) {
            say(err, errlen, path, "cannot write", errno);
            free(resolved);
            return KVQ_E_IO;
        }
        o->path = strdup(path);
        free(resolved);
        if (o->path == NULL) {
            fclose(o->f);
            o->f = NULL;
            return KVQ_E_NOMEM;
        }
        return KVQ_OK;
    }
    {
        size_t n = strlen(target) + 64;
        int fd = -1;
        o->path = strdup(path);
        o->target = strdup(target);
        o->tmp = malloc(n);
        if (o->path == NULL || o->target == NULL || o->tmp == NULL) {
            free(resolved);
            kvq_outfile_abort(o);
            return KVQ_E_NOMEM;
        }
        for (unsigned tries = 0; tries < 100 && fd < 0; tries++) {
            snprintf(o->tmp, n, "%s.tmp.%ld.%u", target, (long)getpid(), tries);
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0 && errno != EEXIST) break;
        }
        free(resolved);
        if (fd < 0) {
            say(err, errlen, o->tmp, "cannot create", errno);
            free(o->tmp);
            o->tmp = NULL; /* nothing of ours to remove */
            kvq_outfile_abort(o);
            return KVQ_E_IO;
        }
        o->f = fdopen(fd, "w");
        if (o->f == NULL) {
            int e = errno;
            close(fd);
            say(err, errlen, o->tmp, "cannot write", e);
            kvq_outfile_abort(o);
            return KVQ_E_IO;
        }
    }
    return KVQ_OK;
}

kvq_status kvq_outfile_commit(kvq_outfile *o, char *err, size_t errlen)
{
    int bad = o->f == NULL || ferror(o->f), e = bad ? EIO : 0;
    if (o->f != NULL && fflush(o->f) != 0 && !bad) bad = 1, e = errno;
    if (o->f != NULL && fclose(o->f) != 0 && !bad) bad = 1, e = errno;
    o->f = NULL;
    if (!bad && o->tmp != NULL && rename(o->tmp, o->target) != 0) bad = 1, e = errno;
    if (bad) {
        say(err, errlen, o->path ? o->path : "?", "write failed", e);
        kvq_outfile_abort(o);
        return KVQ_E_IO;
    }
    free(o->tmp);
    o->tmp = NULL;
    kvq_outfile_abort(o);
    return KVQ_OK;
}

void kvq_outfile_abort(kvq_outfile *o)
{
    if (o->f != NULL) fclose(o->f);
    if (o->tmp != NULL) remove(o->tmp);
    free(o->tmp);
    free(o->target);
    free(o->path);
    memset(o, 0, sizeof *o);
}

/* ---- an output that is an input [VER-OUT-03] ------------------------------------ */

/* The directory part of a path ("." when none) and its last component. */
static int split_path(const char *p, char **dir, const char **base)
{
    const char *slash = strrchr(p, '/');
    size_t n = slash == NULL ? 1 : slash == p ? 1 : (size_t)(slash - p);
    *dir = malloc(n + 1);
    if (*dir == NULL) return 0;
    if (slash == NULL) strcpy(*dir, ".");
    else if (slash == p) strcpy(*dir, "/");
    else memcpy(*dir, p, n), (*dir)[n] = '\0';
    *base = slash == NULL ? p : slash + 1;
    return 1;
}

/* Whether writing a and b (or writing a, reading b) reaches one file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
    char *da = NULL, *db = NULL;
    const char *ba, *bb;
    int same = 0;
    if (ha && hb) /* links of either kind lead to one inode */
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode);
    if (ha || hb) return 0;
    /* neither exists yet: one name in one directory */
    if (split_path(a, &da, &ba) && split_path(b, &db, &bb) && strcmp(ba, bb) == 0 &&
        stat(da, &sa) == 0 && stat(db, &sb) == 0)
        same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(da);
    free(db);
    return same;
}

static void name_arg(char *buf, size_t n, const kvq_argpath *a)
{
    snprintf(buf, n, "%s%s%s", a->opt, a->opt[0] ? " " : "", a->path);
}

int kvq_paths_clash(const char *who, const kvq_argpath *in, size_t nin, const kvq_argpath *out,
                    size_t nout)
{
    char x[512], y[512];
    for (size_t i = 0; i < nout; i++) {
        if (out[i].path == NULL) continue;
        for (size_t k = 0; k < nin; k++)
            if (in[k].path != NULL && same_file(out[i].path, in[k].path)) {
                name_arg(x, sizeof x, &out[i]), name_arg(y, sizeof y, &in[k]);
                fprintf(stderr, "%s: %s names the same file as %s: writing it would destroy an input "
                        "(name another output path) [VER-OUT-03]\n", who, x, y);
                return 1;
            }
        for (size_t k = 0; k < i; k++)
            if (out[k].path != NULL && same_file(out[i].path, out[k].path)) {
                name_arg(x, sizeof x, &out[i]), name_arg(y, sizeof y, &out[k]);
                fprintf(stderr, "%s: %s names the same file as %s: one output would replace the other "
                        "(name two paths) [VER-OUT-03]\n", who, x, y);
                return 1;
            }
    }
    return 0;
}
