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
