/*
 * lexio.h -- internal helpers of the strict line-based readers (vecio.c,
 * families/cert_dump.c): "file:line: what" errors, hex digits, decimals, line
 * iteration with comments and blank lines skipped [VEC-FMT-01], whole-file
 * reads.  static inline: each reader gets its own copy, no exported symbols.
 */
#ifndef KVQ_LEXIO_H
#define KVQ_LEXIO_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kvq.h"

static inline kvq_status fail(char *err, size_t errlen, kvq_status st, const char *path, long line,
                       const char *fmt, ...)
{
    va_list ap;
    int n = 0;
    if (err == NULL || errlen == 0) return st;
    if (line > 0)
        n = snprintf(err, errlen, "%s:%ld: ", path, line);
    else
        n = snprintf(err, errlen, "%s: ", path);
    if (n < 0 || (size_t)n >= errlen) return st;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

static inline int hexval(int ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Parse exactly `digits` hex digits at s into *v; 0 on a bad digit. */
static inline int hexn(const char *s, int digits, uint32_t *v)
{
    uint32_t r = 0;
    for (int i = 0; i < digits; i++) {
        int h = hexval((unsigned char)s[i]);
        if (h < 0) return 0;
        r = r * 16u + (uint32_t)h;
    }
    *v = r;
    return 1;
}

static inline int parse_u32(const char *s, uint32_t *out)
{
    uint64_t v = 0;
    if (*s == '\0') return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10u + (uint64_t)(*s - '0');
        if (v > UINT32_MAX) return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static inline int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0') return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        if (v > (UINT64_MAX - 9u) / 10u) return 0;
        v = v * 10u + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}

static inline int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* ---- line iteration ------------------------------------------------------ */

typedef struct lines {
    char *buf;     /* private, NUL-terminated copy */
    size_t len, pos;
    long no;
} lines;

static inline kvq_status lines_open(lines *L, const char *data, size_t len, const char *path,
                             char *err, size_t errlen)
{
    if (memchr(data, '\0', len) != NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, 0, "contains a NUL byte (not a text file)");
    L->buf = malloc(len + 1);
    if (L->buf == NULL) return fail(err, errlen, KVQ_E_NOMEM, path, 0, "out of memory");
    memcpy(L->buf, data, len);
    L->buf[len] = '\0';
    L->len = len;
    L->pos = 0;
    L->no = 0;
    return KVQ_OK;
}

/* Next line with its '\n' (and a '\r' before it) removed; NULL at the end. */
static inline char *lines_next(lines *L)
{
    char *s, *nl;
    if (L->pos >= L->len) return NULL;
    s = L->buf + L->pos;
    nl = strchr(s, '\n');
    if (nl != NULL) {
        *nl = '\0';
        L->pos = (size_t)(nl - L->buf) + 1;
    } else {
        L->pos = L->len;
    }
    L->no++;
    if (nl != NULL && nl > s && nl[-1] == '\r') nl[-1] = '\0';
    return s;
}

/* Next line that is neither blank nor a comment. */
static inline char *lines_next_content(lines *L)
{
    char *s;
    while ((s = lines_next(L)) != NULL) {
        const char *p = s;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '\0' && *p != '#') return s;
    }
    return NULL;
}

/* Split a line into space-separated tokens in place; returns the count. */
static inline int tokenize(char *s, char **tok, int max)
{
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t') *s++ = '\0';
        if (*s == '\0') break;
        if (n == max) return -1;
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t') s++;
    }
    return n;
}

static inline kvq_status read_file(char **data, size_t *len, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    *data = NULL;
    *len = 0;
    if (f == NULL)
        return fail(err, errlen, KVQ_E_IO, path, 0, "cannot open: %s", strerror(errno));
    {
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fclose(f);
            return fail(err, errlen, KVQ_E_IO, path, 0, "cannot read: %s", strerror(EISDIR));
        }
    }
    for (;;) {
        size_t got;
        if (n == cap) {
            char *nb;
            cap = cap ? cap * 2 : 65536;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return fail(err, errlen, KVQ_E_NOMEM, path, 0, "out of memory");
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        return fail(err, errlen, KVQ_E_IO, path, 0, "read error: %s", strerror(e));
    }
    fclose(f);
    *data = buf;
    *len = n;
    return KVQ_OK;
}

#endif /* KVQ_LEXIO_H */
