/*
 * merge.c -- `kvq merge`: the JSON reports of the shards of one verification
 * combined into the report of the whole run [VER-MERGE-01]; `kvq
 * report-check`: a report against the files it names [VER-REP-06].
 *
 * `kvq verify --shard i/n` judges the cases whose ordinal in the vector file
 * is i mod n and marks its JSON report with "shard": "i/n".  merge reads n
 * such reports (a small strict JSON reader: the reports kvq writes, and a
 * clear error naming the file and byte offset for anything else), checks
 * that they are the n shards of one run [VER-MERGE-02] -- every shard once;
 * the same kvq, vectors (by digest), levels, claim, subject (by the SHA-256
 * of its file) or results file, device and skip reason; each shard's counts
 * those of its cases and its cases its share of the vector file; no case
 * twice --, recounts the verdicts from the cases, orders the cases by their
 * vector line and writes the JSON report a single run would have written --
 * byte for byte, since every string is kept as it was written and every
 * number is written back in the same form -- and, from the same data, the
 * JUnit and HTML reports.
 *
 * `kvq report-check` [VER-REP-06] reads a report with the same reader and
 * compares it with a vector file and a subject or results file.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "lexio.h"

/* ---- a strict reader for the JSON kvq writes --------------------------------- */

typedef enum { J_NULL, J_NUM, J_STR, J_ARR, J_OBJ, J_BOOL } jtype;

typedef struct jval {
    jtype t;
    char *raw;          /* J_STR: the text between the quotes, as written; J_NUM: the number's text */
    char *str;          /* J_STR: unescaped (UTF-8) */
    struct jval *items; /* J_ARR, J_OBJ (values) */
    char **keys;        /* J_OBJ: raw keys */
    size_t n;
} jval;

typedef struct jparser {
    const char *s, *p, *path;
    char *err;
    size_t errlen;
} jparser;

static int jfail(jparser *j, const char *what)
{
    snprintf(j->err, j->errlen, "%s: byte %ld: %s", j->path, (long)(j->p - j->s), what);
    return 0;
}

static void jws(jparser *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++;
}

static void jfree(jval *v)
{
    for (size_t i = 0; (v->t == J_ARR || v->t == J_OBJ) && i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->t == J_OBJ) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->raw);
    free(v->str);
    memset(v, 0, sizeof *v);
}

/* UTF-8 of a code point (< 0x110000). */
static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80u) { o[0] = (char)cp; return 1; }
    if (cp < 0x800u) { o[0] = (char)(0xC0u | cp >> 6); o[1] = (char)(0x80u | (cp & 0x3Fu)); return 2; }
    if (cp < 0x10000u) {
        o[0] = (char)(0xE0u | cp >> 12); o[1] = (char)(0x80u | ((cp >> 6) & 0x3Fu));
        o[2] = (char)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    o[0] = (char)(0xF0u | cp >> 18); o[1] = (char)(0x80u | ((cp >> 12) & 0x3Fu));
    o[2] = (char)(0x80u | ((cp >> 6) & 0x3Fu)); o[3] = (char)(0x80u | (cp & 0x3Fu));
    return 4;
}

static int jstring(jparser *j, char **raw, char **str)
{
    const char *b = ++j->p;
    char *o;
    size_t k = 0;
    while (*j->p != '"') {
        if (*j->p == '\0' || (unsigned char)*j->p < 0x20u) return jfail(j, "unterminated string");
        if (*j->p == '\\') {
            j->p++;
            if (*j->p == '\0') return jfail(j, "unterminated string");
        }
        j->p++;
    }
    *raw = malloc((size_t)(j->p - b) + 1);
    *str = malloc((size_t)(j->p - b) + 1);
    if (*raw == NULL || *str == NULL) return jfail(j, "out of memory");
    memcpy(*raw, b, (size_t)(j->p - b));
    (*raw)[j->p - b] = '\0';
    o = *str;
    for (const char *q = b; q < j->p; q++) {
        uint32_t u;
        if (*q != '\\') { o[k++] = *q; continue; }
        q++;
        switch (*q) {
        case '"': case '\\': case '/': o[k++] = *q; break;
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'u':
            if (!hexn(q + 1, 4, &u) || (u >= 0xD800u && u <= 0xDFFFu)) return jfail(j, "bad \\u escape");
            k += put_utf8(o + k, u); /* at most 3 bytes for the 6 bytes read */
            q += 4;
            break;
        default: return jfail(j, "bad escape");
        }
    }
    o[k] = '\0';
    j->p++;
    return 1;
}

static int jvalue(jparser *j, jval *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > 16) return jfail(j, "nested too deep");
    jws(j);
    if (*j->p == '"') {
        v->t = J_STR;
        return jstring(j, &v->raw, &v->str);
    }
    if (*j->p == '{' || *j->p == '[') {
        int obj = *j->p == '{';
        size_t cap = 0;
        v->t = obj ? J_OBJ : J_ARR;
        j->p++;
        jws(j);
        if (*j->p == (obj ? '}' : ']')) { j->p++; return 1; }
        for (;;) {
            char *key = NULL, *kstr = NULL;
            if (v->n == cap) {
                jval *ni;
                char **nk;
                cap = cap ? 2 * cap : 8;
                ni = realloc(v->items, cap * sizeof *ni);
                if (ni == NULL) return jfail(j, "out of memory");
                v->items = ni;
                if (obj) {
                    nk = realloc(v->keys, cap * sizeof *nk);
                    if (nk == NULL) return jfail(j, "out of memory");
                    v->keys = nk;
                }
            }
            if (obj) {
                jws(j);
                if (*j->p != '"') return jfail(j, "expected a key");
                if (!jstring(j, &key, &kstr)) { free(key); free(kstr); return 0; }
                free(kstr);
                jws(j);
                if (*j->p != ':') { free(key); return jfail(j, "expected ':'"); }
                j->p++;
                v->keys[v->n] = key;
            }
            if (!jvalue(j, &v->items[v->n], depth + 1)) { v->n++; return 0; }
            v->n++;
            jws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == (obj ? '}' : ']')) { j->p++; return 1; }
            return jfail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (strncmp(j->p, "null", 4) == 0) { v->t = J_NULL; j->p += 4; return 1; }
    if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
        v->t = J_BOOL;
        j->p += *j->p == 't' ? 4 : 5;
        return 1;
    }
    {
        const char *b = j->p;
        char *end;
        errno = 0;
        (void)strtod(b, &end);
        if (end == b || errno == ERANGE) return jfail(j, "expected a value");
        v->t = J_NUM;
        v->raw = malloc((size_t)(end - b) + 1);
        if (v->raw == NULL) return jfail(j, "out of memory");
        memcpy(v->raw, b, (size_t)(end - b));
        v->raw[end - b] = '\0';
        j->p = end;
        return 1;
    }
}

static const jval *jget(const jval *o, const char *key)
{
    for (size_t i = 0; o->t == J_OBJ && i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0) return &o->items[i];
    return NULL;
}

/* ---- a report as read ------------------------------------------------------------ */

typedef struct part {
    const char *path;
    jval root;
    int has_shard;
    uint64_t shard_i, shard_n;
    uint64_t cnt[5];        /* passed, failed, skipped (recounted from the cases), deselected, unclaimed */
    uint64_t vector_cases;
} part;

static const char *const COUNTS[5] = { "passed", "failed", "skipped", "deselected", "unclaimed" };

static int want(const jval *o, const char *key, jtype t, const char *path, char *err, size_t errlen,
                const jval **out)
{
    *out = jget(o, key);
    if (*out == NULL || (*out)->t != t) {
        snprintf(err, errlen, "%s: no \"%s\" of the right type: not a kvq verify report", path, key);
        return 0;
    }
    return 1;
}

static const char *raw(const jval *o, const char *key)
{
    return jget(o, key)->raw;
}

static const char *str(const jval *o, const char *key)
{
    return jget(o, key)->str;
}

static long line_of(const jval *c)
{
    return strtol(raw(c, "line"), NULL, 10);
}

static int cmp_line(const void *a, const void *b)
{
    long la = line_of(*(const jval *const *)a), lb = line_of(*(const jval *const *)b);
    return la < lb ? -1 : la > lb;
}

/* A case: its keys of the right types, a known operation, a level and an
 * outcome of the names kvq writes, a positive line. */
static int check_case(const jval *c, const char *path, char *err, size_t errlen)
{
    static const char *const KEYS[] = { "id", "level", "op", "line", "outcome" };
    const jval *m = jget(c, "margins");
    uint64_t line;
    if (c->t != J_OBJ) {
        snprintf(err, errlen, "%s: a case is not an object", path);
        return 0;
    }
    for (size_t k = 0; k < KVQ_NELEMS(KEYS); k++) {
        const jval *v = jget(c, KEYS[k]);
        if (v == NULL || v->t != (k == 3 ? J_NUM : J_STR)) {
            snprintf(err, errlen, "%s: a case without \"%s\"", path, KEYS[k]);
            return 0;
        }
    }
    if (!parse_u64(raw(c, "line"), &line) || line == 0 || line > (uint64_t)LONG_MAX) {
        snprintf(err, errlen, "%s: case %s: line %.20s is not a line number", path, raw(c, "id"), raw(c, "line"));
        return 0;
    }
    if (kvq_op_find(str(c, "op")) == NULL) {
        snprintf(err, errlen, "%s: case %s: operation '%.40s' is not one this kvq knows", path, raw(c, "id"),
                 raw(c, "op"));
        return 0;
    }
    if (strcmp(str(c, "level"), "exact") != 0 && strcmp(str(c, "level"), "bounded") != 0) {
        snprintf(err, errlen, "%s: case %s: level '%.40s' is neither exact nor bounded", path, raw(c, "id"),
                 raw(c, "level"));
        return 0;
    }
    if (strcmp(str(c, "outcome"), "pass") != 0 && strcmp(str(c, "outcome"), "fail") != 0 &&
        strcmp(str(c, "outcome"), "skip") != 0) {
        snprintf(err, errlen, "%s: case %s: outcome '%.40s' is not pass, fail or skip", path, raw(c, "id"),
                 raw(c, "outcome"));
        return 0;
    }
    if (jget(c, "detail") != NULL && jget(c, "detail")->t != J_STR) {
        snprintf(err, errlen, "%s: case %s: \"detail\" is not a string", path, raw(c, "id"));
        return 0;
    }
    for (size_t q = 0; m != NULL && (m->t != J_ARR || q < m->n); q++) {
        const jval *e = m->t == J_ARR ? &m->items[q] : NULL;
        if (e == NULL || e->t != J_OBJ || !jget(e, "quantity") || jget(e, "quantity")->t != J_STR ||
            !jget(e, "error") || jget(e, "error")->t != J_NUM || !jget(e, "bound") || jget(e, "bound")->t != J_NUM) {
            snprintf(err, errlen, "%s: case %s: malformed \"margins\"", path, raw(c, "id"));
            return 0;
        }
    }
    return 1;
}

/* Read and parse one JSON report; check its format and the types of its
 * members [VER-REP-01] [VER-REP-05]. */
static kvq_status load(part *p, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    jparser j;
    const jval *v;
    kvq_status st;
    char why[24];
    memset(p, 0, sizeof *p);
    p->path = path;
    if ((st = read_file(&data, &len, path, err, errlen)) != KVQ_OK) return st;
    {   /* the reader wants a terminated string */
        char *z = realloc(data, len + 1);
        if (z == NULL) {
            free(data);
            snprintf(err, errlen, "%s: out of memory", path);
            return KVQ_E_NOMEM;
        }
        data = z;
        data[len] = '\0';
    }
    if (memchr(data, '\0', len) != NULL) {
        snprintf(err, errlen, "%s: contains a NUL byte", path);
        free(data);
        return KVQ_E_FORMAT;
    }
    j.s = j.p = data, j.path = path, j.err = err, j.errlen = errlen;
    if (!jvalue(&j, &p->root, 0)) {
        free(data);
        return KVQ_E_FORMAT;
    }
    jws(&j);
    if (*j.p != '\0') {
        jfail(&j, "content after the report");
        free(data);
        return KVQ_E_FORMAT;
    }
    free(data);
    if (p->root.t != J_OBJ) {
        snprintf(err, errlen, "%s: not a kvq verify report", path);
        return KVQ_E_FORMAT;
    }
    if (!want(&p->root, "kvq_report", J_NUM, path, err, errlen, &v)) return KVQ_E_FORMAT;
    if (strcmp(v->raw, "1") == 0) { /* [VER-REP-01]: format 1 named no vectors digest, subject or kvq */
        snprintf(err, errlen, "%s: report format 1 records nothing of what it judged (vectors digest, subject, "
                 "kvq commit); this kvq reads format %d: run kvq verify again", path, KVQ_REPORT_FORMAT);
        return KVQ_E_FORMAT;
    }
    snprintf(why, sizeof why, "%d", KVQ_REPORT_FORMAT);
    if (strcmp(v->raw, why) != 0) {
        snprintf(err, errlen, "%s: report format %.20s, this kvq reads %d", path, v->raw, KVQ_REPORT_FORMAT);
        return KVQ_E_FORMAT;
    }
    if (!want(&p->root, "kvq_version", J_STR, path, err, errlen, &v) ||
        !want(&p->root, "skip_reason", J_STR, path, err, errlen, &v) ||
        !want(&p->root, "operations", J_ARR, path, err, errlen, &v) ||
        !want(&p->root, "cases", J_ARR, path, err, errlen, &v))
        return KVQ_E_FORMAT;
    for (size_t k = 0; k < kvq_report_nitems; k++)
        if (!want(&p->root, kvq_report_items[k].key, kvq_report_items[k].number ? J_NUM : J_STR, path, err, errlen, &v))
            return KVQ_E_FORMAT;
    if (!parse_u64(raw(&p->root, "vector_cases"), &p->vector_cases)) {
        snprintf(err, errlen, "%s: \"vector_cases\" %.20s is not a count", path, raw(&p->root, "vector_cases"));
        return KVQ_E_FORMAT;
    }
    for (size_t k = 0; k < 5; k++) {
        if (!want(&p->root, COUNTS[k], J_NUM, path, err, errlen, &v)) return KVQ_E_FORMAT;
        if (!parse_u64(v->raw, &p->cnt[k])) {
            snprintf(err, errlen, "%s: \"%s\" %.20s is not a count", path, COUNTS[k], v->raw);
            return KVQ_E_FORMAT;
        }
    }
    v = jget(&p->root, "operations");
    for (size_t k = 0; k < v->n; k++)
        if (v->items[k].t != J_STR || kvq_op_find(v->items[k].str) == NULL) {
            snprintf(err, errlen, "%s: \"operations\" holds '%.40s', not an operation this kvq knows", path,
                     v->items[k].t == J_STR ? v->items[k].raw : "(not a string)");
            return KVQ_E_FORMAT;
        }
    v = jget(&p->root, "cases");
    for (size_t k = 0; k < v->n; k++)
        if (!check_case(&v->items[k], path, err, errlen)) return KVQ_E_FORMAT;
    if ((v = jget(&p->root, "shard")) != NULL) {
        const char *sh = v->t == J_STR ? v->str : "", *slash = strchr(sh, '/');
        char num[24];
        if (slash == NULL || (size_t)(slash - sh) >= sizeof num || !parse_u64(slash + 1, &p->shard_n) ||
            p->shard_n == 0 || (memcpy(num, sh, (size_t)(slash - sh)), num[slash - sh] = '\0', !parse_u64(num, &p->shard_i)) ||
            p->shard_i >= p->shard_n) {
            snprintf(err, errlen, "%s: shard '%.40s' is not i/n", path, sh);
            return KVQ_E_FORMAT;
        }
        p->has_shard = 1;
    }
    return KVQ_OK;
}

/* Whether a report agrees with itself [VER-MERGE-02]: the counts are its
 * cases' (pass, fail, skip recounted); the cases are of the levels and the
 * operations it says it judged; judged, deselected and unclaimed cases make up
 * its shard of the vector file (ordinals i mod n of vector_cases).  0 with
 * the first disagreement in why; p->cnt[0..2] are the recount either way. */
static int consistent(part *p, char *why, size_t whylen)
{
    const jval *cases = jget(&p->root, "cases"), *ops = jget(&p->root, "operations");
    const char *level = str(&p->root, "level"), *claim = str(&p->root, "claim");
    uint64_t got[3] = { 0 }, shard_cases;
    for (size_t k = 0; k < cases->n; k++) {
        const jval *c = &cases->items[k];
        const char *oc = str(c, "outcome");
        int claimed = 0;
        got[strcmp(oc, "pass") == 0 ? 0 : strcmp(oc, "fail") == 0 ? 1 : 2]++;
        if (strcmp(level, "all") != 0 && strcmp(str(c, "level"), level) != 0) {
            snprintf(why, whylen, "case %s is of level %s, but the report judged level %s only", raw(c, "id"),
                     raw(c, "level"), level);
            return 0;
        }
        for (size_t q = 0; q < ops->n && !claimed; q++) claimed = strcmp(ops->items[q].str, str(c, "op")) == 0;
        if (!claimed) {
            snprintf(why, whylen, "case %s is of operation %s, which the report's \"operations\" do not list",
                     raw(c, "id"), raw(c, "op"));
            return 0;
        }
    }
    if (got[0] != p->cnt[0] || got[1] != p->cnt[1] || got[2] != p->cnt[2]) {
        snprintf(why, whylen, "its counts say %llu passed, %llu failed, %llu skipped, but its cases hold %llu "
                 "passed, %llu failed, %llu skipped", (unsigned long long)p->cnt[0], (unsigned long long)p->cnt[1],
                 (unsigned long long)p->cnt[2], (unsigned long long)got[0], (unsigned long long)got[1],
                 (unsigned long long)got[2]);
        p->cnt[0] = got[0], p->cnt[1] = got[1], p->cnt[2] = got[2];
        return 0;
    }
    if (strcmp(level, "all") != 0 && strcmp(level, "exact") != 0 && strcmp(level, "bounded") != 0) {
        snprintf(why, whylen, "\"level\" '%.40s' is none of all, exact, bounded", raw(&p->root, "level"));
        return 0;
    }
    if (strcmp(level, "all") == 0 && p->cnt[3] != 0) {
        snprintf(why, whylen, "%llu cases deselected, but the report judged every level",
                 (unsigned long long)p->cnt[3]);
        return 0;
    }
    if (strcmp(claim, "all") == 0 && p->cnt[4] != 0) {
        snprintf(why, whylen, "%llu cases unclaimed, but the report claims every operation",
                 (unsigned long long)p->cnt[4]);
        return 0;
    }
    shard_cases = !p->has_shard ? p->vector_cases
                : p->shard_i >= p->vector_cases ? 0
                : (p->vector_cases - p->shard_i + p->shard_n - 1) / p->shard_n;
    if ((uint64_t)cases->n + p->cnt[3] + p->cnt[4] != shard_cases) {
        snprintf(why, whylen, "%s of a vector file of %llu cases holds %llu cases, but the report lists %zu "
                 "judged, %llu deselected and %llu unclaimed: %s", p->has_shard ? "the shard" : "the run",
                 (unsigned long long)p->vector_cases, (unsigned long long)shard_cases, cases->n,
                 (unsigned long long)p->cnt[3], (unsigned long long)p->cnt[4],
                 (uint64_t)cases->n + p->cnt[3] + p->cnt[4] < shard_cases ? "cases are missing" : "cases are extra");
        return 0;
    }
    return 1;
}

/* The merged JSON report: the bytes kvq_report_json writes for the whole run
 * (every string as it was written, shard 0's paths). */
static kvq_status write_json(const char *path, const jval *first, const jval *const *cases, size_t n,
                             const uint64_t cnt[5], char *err, size_t errlen)
{
    kvq_outfile o;
    const jval *ops = jget(first, "operations");
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    fprintf(o.f, "{\n  \"kvq_report\": %d,\n  \"kvq_version\": \"%s\"", KVQ_REPORT_FORMAT, raw(first, "kvq_version"));
    for (size_t i = 0; i < kvq_report_nitems; i++)
        fprintf(o.f, kvq_report_items[i].number ? ",\n  \"%s\": %s" : ",\n  \"%s\": \"%s\"", kvq_report_items[i].key,
                raw(first, kvq_report_items[i].key));
    fprintf(o.f, ",\n  \"skip_reason\": \"%s\",\n  \"operations\": [", raw(first, "skip_reason"));
    for (size_t i = 0; i < ops->n; i++) fprintf(o.f, "%s\"%s\"", i ? ", " : "", ops->items[i].raw);
    fprintf(o.f, "],\n  \"passed\": %llu,\n  \"failed\": %llu,\n  \"skipped\": %llu,\n"
                 "  \"deselected\": %llu,\n  \"unclaimed\": %llu,\n  \"cases\": [",
            (unsigned long long)cnt[0], (unsigned long long)cnt[1], (unsigned long long)cnt[2],
            (unsigned long long)cnt[3], (unsigned long long)cnt[4]);
    for (size_t i = 0; i < n; i++) {
        const jval *c = cases[i], *d = jget(c, "detail"), *m = jget(c, "margins");
        fprintf(o.f, "%s\n    {\"id\": \"%s\", \"level\": \"%s\", \"op\": \"%s\", \"line\": %s, \"outcome\": \"%s\"",
                i ? "," : "", raw(c, "id"), raw(c, "level"), raw(c, "op"), raw(c, "line"), raw(c, "outcome"));
        if (d != NULL) fprintf(o.f, ", \"detail\": \"%s\"", d->raw);
        if (m != NULL) {
            fputs(", \"margins\": [", o.f);
            for (size_t k = 0; k < m->n; k++)
                fprintf(o.f, "%s{\"quantity\": \"%s\", \"error\": %s, \"bound\": %s}", k ? ", " : "",
                        raw(&m->items[k], "quantity"), raw(&m->items[k], "error"), raw(&m->items[k], "bound"));
            fputc(']', o.f);
        }
        fputc('}', o.f);
    }
    fputs("\n  ]\n}\n", o.f);
    return kvq_outfile_commit(&o, err, errlen);
}

/* A verification report rebuilt from the merged cases, for the other forms. */
static kvq_status rebuild(kvq_verify_report *rep, kvq_case **cs, const jval *first, const jval *const *cases,
                          size_t n, const uint64_t cnt[5], char *err, size_t errlen)
{
    const jval *ops = jget(first, "operations");
    memset(rep, 0, sizeof *rep);
    for (size_t i = 0; i < kvq_report_nitems; i++) {
        const kvq_report_item *it = &kvq_report_items[i];
        kvq_copy_utf8((char *)rep + it->offset, it->size, it->number ? raw(first, it->key) : str(first, it->key));
    }
    kvq_copy_utf8(rep->skip_reason, sizeof rep->skip_reason, str(first, "skip_reason"));
    for (size_t i = 0, o = 0; i < ops->n && o < sizeof rep->claimed; i++)
        o += (size_t)snprintf(rep->claimed + o, sizeof rep->claimed - o, "%s%s", i ? "," : "", ops->items[i].str);
    rep->passed = cnt[0], rep->failed = cnt[1], rep->skipped = cnt[2], rep->deselected = cnt[3];
    rep->unclaimed = cnt[4];
    rep->v = calloc(n ? n : 1, sizeof *rep->v);
    *cs = calloc(n ? n : 1, sizeof **cs);
    if (rep->v == NULL || *cs == NULL) {
        snprintf(err, errlen, "out of memory");
        return KVQ_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const jval *c = cases[i], *d = jget(c, "detail"), *m = jget(c, "margins");
        kvq_case *k = &(*cs)[i];
        kvq_verdict *v = &rep->v[i];
        const char *oc = str(c, "outcome");
        snprintf(k->id, sizeof k->id, "%s", str(c, "id"));
        k->level = strcmp(str(c, "level"), "bounded") == 0 ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT;
        k->line = line_of(c);
        k->op = kvq_op_find(str(c, "op")); /* known: check_case */
        v->vc = k;
        v->outcome = strcmp(oc, "pass") == 0 ? KVQ_PASS : strcmp(oc, "fail") == 0 ? KVQ_FAIL : KVQ_SKIP;
        if (d != NULL) kvq_copy_utf8(v->detail, sizeof v->detail, d->str);
        for (size_t q = 0; m != NULL && q < m->n && q < KVQ_VERDICT_MARGINS; q++) {
            v->margin[q].quantity = str(&m->items[q], "quantity");
            v->margin[q].error = strtod(raw(&m->items[q], "error"), NULL);
            v->margin[q].bound = strtod(raw(&m->items[q], "bound"), NULL);
            v->nmargin++;
        }
    }
    rep->n = n;
    return KVQ_OK;
}

typedef struct mcase {
    const jval *c;
    size_t part;
} mcase;

static int cmp_mcase_id(const void *a, const void *b)
{
    const mcase *x = a, *y = b;
    int c = strcmp(str(x->c, "id"), str(y->c, "id"));
    return c ? c : (x->part > y->part) - (x->part < y->part);
}

/* The shards must be of one run: the same kvq, vectors (by digest, not by
 * path), levels, claim, subject (by its file's SHA-256 and its name) or
 * results file, device and skip reason [VER-MERGE-02]. */
static int same_run(const part *a, const part *b, char *err, size_t errlen)
{
    static const char *const ALSO[] = { "kvq_version", "skip_reason" };
    for (size_t k = 0; k < kvq_report_nitems + KVQ_NELEMS(ALSO); k++) {
        const char *key = k < kvq_report_nitems ? kvq_report_items[k].key : ALSO[k - kvq_report_nitems];
        if (k < kvq_report_nitems && !kvq_report_items[k].same) continue;
        if (strcmp(raw(&a->root, key), raw(&b->root, key)) != 0) {
            snprintf(err, errlen, "%s: \"%s\" is \"%.80s\", but %s's is \"%.80s\": not shards of one run", b->path, key,
                     raw(&b->root, key), a->path, raw(&a->root, key));
            return 0;
        }
    }
    return 1;
}

kvq_status kvq_merge(const char *const *paths, size_t np, const char *json, const char *junit,
                     const char *html, int *verdict, char *err, size_t errlen)
{
    part *ps = calloc(np ? np : 1, sizeof *ps);
    const jval **cases = NULL;
    mcase *byid = NULL;
    size_t ncases = 0, first = 0;
    uint64_t cnt[5] = { 0 };
    kvq_status st = KVQ_OK;
    char why[512];
    if (ps == NULL) return KVQ_E_NOMEM;
    if (np == 0) {
        snprintf(err, errlen, "no reports to merge");
        free(ps);
        return KVQ_E_PARAM;
    }
    for (size_t i = 0; i < np && st == KVQ_OK; i++) {
        if ((st = load(&ps[i], paths[i], err, errlen)) != KVQ_OK) break;
        if (!ps[i].has_shard) {
            snprintf(err, errlen, "%s: no \"shard\": not the report of a kvq verify --shard run", paths[i]);
            st = KVQ_E_FORMAT;
            break;
        }
        if (ps[i].shard_n != ps[0].shard_n || ps[i].shard_n != np) {
            snprintf(err, errlen, "%s: shard %llu/%llu, but %zu reports were given", paths[i],
                     (unsigned long long)ps[i].shard_i, (unsigned long long)ps[i].shard_n, np);
            st = KVQ_E_FORMAT;
            break;
        }
        if (!consistent(&ps[i], why, sizeof why)) {
            snprintf(err, errlen, "%s: %s", paths[i], why);
            st = KVQ_E_FORMAT;
            break;
        }
        for (size_t k = 0; k < i && st == KVQ_OK; k++) {
            if (ps[k].shard_i == ps[i].shard_i) {
                snprintf(err, errlen, "%s: shard %llu/%llu is also %s", paths[i], (unsigned long long)ps[i].shard_i,
                         (unsigned long long)ps[i].shard_n, paths[k]);
                st = KVQ_E_FORMAT;
            } else if (!same_run(&ps[k], &ps[i], err, errlen)) {
                st = KVQ_E_FORMAT;
            }
        }
        if (st != KVQ_OK) break;
        if (ps[i].shard_i == 0) first = i;
        for (size_t k = 0; k < 5; k++) cnt[k] += ps[i].cnt[k]; /* passed, failed, skipped: recounted */
        ncases += jget(&ps[i].root, "cases")->n;
    }
    if (st == KVQ_OK) {
        cases = malloc((ncases ? ncases : 1) * sizeof *cases);
        byid = malloc((ncases ? ncases : 1) * sizeof *byid);
        if (cases == NULL || byid == NULL) {
            snprintf(err, errlen, "out of memory");
            st = KVQ_E_NOMEM;
        }
    }
    if (st == KVQ_OK) {
        size_t n = 0;
        for (size_t i = 0; i < np; i++) {
            const jval *v = jget(&ps[i].root, "cases");
            for (size_t k = 0; k < v->n; k++, n++) {
                cases[n] = &v->items[k];
                byid[n].c = &v->items[k];
                byid[n].part = i;
            }
        }
        /* a case once: no id twice, no vector line twice */
        if (ncases > 1) qsort(byid, ncases, sizeof *byid, cmp_mcase_id); /* NULL when no case */
        for (size_t i = 1; i < ncases && st == KVQ_OK; i++)
            if (strcmp(str(byid[i - 1].c, "id"), str(byid[i].c, "id")) == 0) {
                snprintf(err, errlen, "%s: case %s is listed twice (also in %s): the shards overlap",
                         ps[byid[i].part].path, raw(byid[i].c, "id"), ps[byid[i - 1].part].path);
                st = KVQ_E_FORMAT;
            }
        if (ncases > 1) qsort(cases, ncases, sizeof *cases, cmp_line);
        for (size_t i = 1; i < ncases && st == KVQ_OK; i++)
            if (cmp_line(&cases[i - 1], &cases[i]) == 0) {
                snprintf(err, errlen, "case %s and case %s share vector line %s: the shards overlap",
                         raw(cases[i - 1], "id"), raw(cases[i], "id"), raw(cases[i], "line"));
                st = KVQ_E_FORMAT;
            }
    }
    /* the claimed operations: the union, in the order of the registry, of the
     * shards' (a shard that holds no case of an operation does not list it) */
    if (st == KVQ_OK) {
        jval *ops = (jval *)jget(&ps[first].root, "operations");
        jval merged = { 0 };
        size_t nall = 0;
        for (size_t f = 0; f < kvq_family_count(); f++) nall += kvq_family_at(f)->nops;
        merged.t = J_ARR;
        merged.items = calloc(nall ? nall : 1, sizeof *merged.items);
        for (size_t f = 0; merged.items != NULL && f < kvq_family_count(); f++)
            for (size_t k = 0; k < kvq_family_at(f)->nops; k++) {
                const char *name = kvq_family_at(f)->ops[k]->name;
                int seen = 0;
                for (size_t i = 0; i < np && !seen; i++) {
                    const jval *o = jget(&ps[i].root, "operations");
                    for (size_t q = 0; q < o->n && !seen; q++) seen = strcmp(o->items[q].str, name) == 0;
                }
                if (seen) {
                    merged.items[merged.n].t = J_STR;
                    merged.items[merged.n].raw = strdup(name);
                    merged.items[merged.n].str = strdup(name);
                    merged.n++;
                }
            }
        if (merged.items == NULL) st = KVQ_E_NOMEM;
        else {
            jfree(ops);
            *ops = merged;
        }
    }
    if (st == KVQ_OK) /* the exit status a single kvq verify would give, from the cases [VER-EXIT-01] */
        *verdict = (cnt[1] || cnt[2] || cnt[0] + cnt[1] + cnt[2] == 0) ? 1 : 0;
    if (st == KVQ_OK && json != NULL) st = write_json(json, &ps[first].root, cases, ncases, cnt, err, errlen);
    if (st == KVQ_OK && (junit != NULL || html != NULL)) {
        kvq_verify_report rep;
        kvq_case *cs = NULL;
        st = rebuild(&rep, &cs, &ps[first].root, cases, ncases, cnt, err, errlen);
        if (st == KVQ_OK && junit != NULL) st = kvq_report_junit(junit, &rep, err, errlen);
        if (st == KVQ_OK && html != NULL) st = kvq_report_html(html, &rep, err, errlen);
        free(rep.v);
        free(cs);
    }
    for (size_t i = 0; i < np; i++) jfree(&ps[i].root);
    free(ps);
    free(cases);
    free(byid);
    return st;
}

/* ---- kvq report-check [VER-REP-06] ------------------------------------------------ */

#define CHECK_SHOW 10 /* case mismatches printed; the rest counted */

static void differ(FILE *out, size_t *n, const char *item, const char *expected, const char *recorded)
{
    fprintf(out, "  %s: expected \"%s\", recorded \"%s\"\n", item, expected, recorded);
    (*n)++;
}

static void item(FILE *out, size_t *n, const part *p, const char *key, const char *expected)
{
    const jval *v = jget(&p->root, key);
    const char *rec = v->t == J_NUM ? v->raw : v->str;
    if (strcmp(rec, expected) != 0) differ(out, n, key, expected, rec);
}

static int cmp_case_ptr_id(const void *a, const void *b)
{
    return strcmp((*(const kvq_case *const *)a)->id, (*(const kvq_case *const *)b)->id);
}

static int listed(const jval *arr, const char *name)
{
    for (size_t q = 0; q < arr->n; q++)
        if (strcmp(arr->items[q].str, name) == 0) return 1;
    return 0;
}

/* The report's cases against the vector file: each listed case is a case of
 * the file (same line, level, operation) and of the report's shard; every case
 * of the shard that the report's operations and level select is listed; the
 * others are counted deselected or unclaimed as recorded; the operations are
 * those the claim gives for the file. */
static kvq_status check_cases(const part *p, const kvq_vfile *vf, FILE *out, size_t *n)
{
    const jval *cases = jget(&p->root, "cases"), *ops = jget(&p->root, "operations");
    const char *level = str(&p->root, "level"), *claim = str(&p->root, "claim");
    const kvq_case **sorted = malloc((vf->ncases ? vf->ncases : 1) * sizeof *sorted);
    unsigned char *seen = calloc(vf->ncases ? vf->ncases : 1, 1);
    uint64_t desel = 0, unclaimed = 0;
    size_t bad = 0;
    char want[512] = "", a[64], b[64];
    if (sorted == NULL || seen == NULL) {
        free(sorted);
        free(seen);
        return KVQ_E_NOMEM;
    }
    for (size_t k = 0; k < vf->ncases; k++) sorted[k] = &vf->cases[k];
    if (vf->ncases > 1) qsort(sorted, vf->ncases, sizeof *sorted, cmp_case_ptr_id);
    for (size_t k = 0; k < cases->n; k++) {
        const jval *c = &cases->items[k];
        kvq_case key, *kp = &key;
        const kvq_case *const *hit;
        size_t ord;
        char why[256] = "";
        snprintf(key.id, sizeof key.id, "%s", str(c, "id"));
        hit = bsearch(&kp, sorted, vf->ncases, sizeof *sorted, cmp_case_ptr_id);
        if (hit == NULL) snprintf(why, sizeof why, "not a case of the vector file");
        else {
            ord = (size_t)(*hit - vf->cases);
            if (line_of(c) != (*hit)->line || strcmp(str(c, "level"), kvq_level_name((*hit)->level)) != 0 ||
                strcmp(str(c, "op"), (*hit)->op->name) != 0)
                snprintf(why, sizeof why, "recorded line %s, %s, %s; the vector file has line %ld, %s, %s",
                         raw(c, "line"), raw(c, "level"), raw(c, "op"), (*hit)->line,
                         kvq_level_name((*hit)->level), (*hit)->op->name);
            else if (p->has_shard && ord % p->shard_n != p->shard_i)
                snprintf(why, sizeof why, "case ordinal %zu is not of shard %llu/%llu", ord,
                         (unsigned long long)p->shard_i, (unsigned long long)p->shard_n);
            else seen[ord] = 1;
        }
        if (why[0] && bad++ < CHECK_SHOW) fprintf(out, "  case %s: %s\n", raw(c, "id"), why);
    }
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_case *vc = &vf->cases[k];
        if (p->has_shard && k % p->shard_n != p->shard_i) continue;
        if (!listed(ops, vc->op->name)) { unclaimed++; continue; }
        if (strcmp(level, "all") != 0 && strcmp(level, kvq_level_name(vc->level)) != 0) { desel++; continue; }
        if (!seen[k] && bad++ < CHECK_SHOW)
            fprintf(out, "  case %s (line %ld): selected by the report's level and operations, but not in it\n",
                    vc->id, vc->line);
    }
    if (bad > CHECK_SHOW) fprintf(out, "  ... %zu more case mismatches\n", bad - CHECK_SHOW);
    *n += bad;
    snprintf(a, sizeof a, "%llu", (unsigned long long)desel);
    snprintf(b, sizeof b, "%llu", (unsigned long long)p->cnt[3]);
    if (strcmp(a, b) != 0) differ(out, n, "deselected", a, b);
    snprintf(a, sizeof a, "%llu", (unsigned long long)unclaimed);
    snprintf(b, sizeof b, "%llu", (unsigned long long)p->cnt[4]);
    if (strcmp(a, b) != 0) differ(out, n, "unclaimed", a, b);
    /* the operations the claim gives for these cases, in registry order [VER-CLAIM-01] */
    if (strcmp(claim, "answered") != 0) {
        size_t o = 0;
        for (size_t f = 0; f < kvq_family_count(); f++)
            for (size_t k = 0; k < kvq_family_at(f)->nops; k++) {
                const kvq_op *op = kvq_family_at(f)->ops[k];
                int present = 0, claimed = strcmp(claim, "all") == 0;
                for (size_t i = 0; i < vf->ncases && !present; i++)
                    present = vf->cases[i].op == op && (!p->has_shard || i % p->shard_n == p->shard_i);
                for (const char *q = claim; !claimed && *q;) {
                    size_t len = strcspn(q, ",");
                    claimed = len == strlen(op->name) && strncmp(q, op->name, len) == 0;
                    q += len + (q[len] == ',');
                }
                if (present && claimed && o < sizeof want)
                    o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", o ? "," : "", op->name);
            }
    }
    {
        char rec[512] = "";
        size_t o = 0;
        int absent = 0;
        for (size_t q = 0; q < ops->n && o < sizeof rec; q++) {
            const kvq_op *op = kvq_op_find(ops->items[q].str);
            int present = 0;
            for (size_t i = 0; i < vf->ncases && !present; i++)
                present = vf->cases[i].op == op && (!p->has_shard || i % p->shard_n == p->shard_i);
            absent |= !present;
            o += (size_t)snprintf(rec + o, sizeof rec - o, "%s%s", o ? "," : "", ops->items[q].str);
        }
        if (strcmp(claim, "answered") != 0 ? strcmp(want, rec) != 0 : absent)
            differ(out, n, "operations", strcmp(claim, "answered") != 0 ? want : "operations the vector file holds",
                   rec);
    }
    free(sorted);
    free(seen);
    return KVQ_OK;
}

static int cmp_verdict_id(const void *a, const void *b)
{
    return strcmp(((const kvq_verdict *)a)->vc->id, ((const kvq_verdict *)b)->vc->id);
}

/* Results mode: the verdicts judged again from the vector and results files,
 * with the report's shard, levels and operations, and each case's recorded
 * outcome compared with the one they give (a report whose outcomes were
 * edited, with its counts, is found here). */
static kvq_status rejudge(const part *p, const kvq_vfile *vf, const char *vpath, const kvq_rfile *rf,
                          const char *rpath, FILE *out, size_t *n)
{
    const jval *cases = jget(&p->root, "cases"), *ops = jget(&p->root, "operations");
    const char *level = str(&p->root, "level");
    kvq_vfile sub = *vf;
    kvq_verify_report rep;
    const kvq_op **claimed = malloc((ops->n ? ops->n : 1) * sizeof *claimed);
    size_t bad = 0;
    sub.cases = malloc((vf->ncases ? vf->ncases : 1) * sizeof *sub.cases);
    if (claimed == NULL || sub.cases == NULL) {
        free(claimed);
        free(sub.cases);
        return KVQ_E_NOMEM;
    }
    sub.ncases = 0; /* the shard's cases, shallow copies: judged, not freed */
    for (size_t k = 0; k < vf->ncases; k++)
        if (!p->has_shard || k % p->shard_n == p->shard_i) sub.cases[sub.ncases++] = vf->cases[k];
    for (size_t q = 0; q < ops->n; q++) claimed[q] = kvq_op_find(ops->items[q].str);
    if (kvq_verify(&rep, &sub, vpath, rf, rpath,
                   strcmp(level, "exact") == 0     ? KVQ_LEVELS_MASK(KVQ_LEVEL_EXACT)
                   : strcmp(level, "bounded") == 0 ? KVQ_LEVELS_MASK(KVQ_LEVEL_BOUNDED)
                                                   : KVQ_LEVELS_ALL,
                   claimed, ops->n) != KVQ_OK) {
        fprintf(out, "  results: %s\n", rep.skip_reason);
        (*n)++;
    } else {
        if (rep.n > 1) qsort(rep.v, rep.n, sizeof *rep.v, cmp_verdict_id);
        for (size_t k = 0; k < cases->n; k++) {
            const jval *c = &cases->items[k];
            kvq_case key;
            kvq_verdict kv;
            const kvq_verdict *v;
            snprintf(key.id, sizeof key.id, "%s", str(c, "id"));
            kv.vc = &key;
            v = rep.n ? bsearch(&kv, rep.v, rep.n, sizeof *rep.v, cmp_verdict_id) : NULL;
            if (v != NULL && strcmp(kvq_outcome_name(v->outcome), str(c, "outcome")) != 0 && bad++ < CHECK_SHOW)
                fprintf(out, "  case %s: recorded %s, the results file gives %s%s%s\n", raw(c, "id"), raw(c, "outcome"),
                        kvq_outcome_name(v->outcome), v->detail[0] ? ": " : "", v->detail);
        }
        if (bad > CHECK_SHOW) fprintf(out, "  ... %zu more outcomes differ\n", bad - CHECK_SHOW);
        *n += bad;
        kvq_verify_report_free(&rep);
    }
    free(claimed);
    free(sub.cases);
    return KVQ_OK;
}

kvq_status kvq_report_check(const char *path, const char *vpath, const char *subject, const char *rpath,
                            FILE *out, size_t *mismatches, char *err, size_t errlen)
{
    part p;
    kvq_vfile vf;
    kvq_provenance vp;
    kvq_status st;
    char why[512];
    int vectors_same = 0;
    *mismatches = 0;
    memset(&vp, 0, sizeof vp);
    if ((st = load(&p, path, err, errlen)) != KVQ_OK) {
        jfree(&p.root);
        return st;
    }
    fprintf(out, "kvq report-check: %s: judged by kvq %s (commit %s), subject %s (judged from its %s), device %s\n", path,
            str(&p.root, "kvq_version"), str(&p.root, "kvq_commit"), str(&p.root, "subject"), str(&p.root, "mode"),
            str(&p.root, "device"));
    if (!consistent(&p, why, sizeof why)) {
        fprintf(out, "  report: %s\n", why);
        (*mismatches)++;
    }
    /* the vector file [VER-REP-05] */
    memset(&vf, 0, sizeof vf);
    if ((st = kvq_vec_read(&vf, vpath, err, errlen)) != KVQ_OK) {
        jfree(&p.root);
        return st;
    }
    if ((st = kvq_provenance_vectors(&vp, vpath, &vf, err, errlen)) == KVQ_OK) {
        size_t before = *mismatches;
        item(out, mismatches, &p, "vectors_sha256", vp.vectors_sha256);
        item(out, mismatches, &p, "vectors_digest", vp.vectors_digest);
        item(out, mismatches, &p, "family", vp.family);
        item(out, mismatches, &p, "level_set", vp.level_set);
        item(out, mismatches, &p, "seed", vp.seed);
        item(out, mismatches, &p, "vector_cases", vp.vector_cases);
        if (*mismatches == before) st = check_cases(&p, &vf, out, mismatches); /* the same file: its cases */
        vectors_same = *mismatches == before;
    }
    /* the subject: its file's bytes, its name and version */
    if (st == KVQ_OK && subject != NULL) {
        kvq_subject s;
        char hex[65];
        const char *version = NULL;
        item(out, mismatches, &p, "mode", "subject");
        st = kvq_sha256_file(kvq_subject_builtin(subject) != NULL ? "/proc/self/exe" : subject, hex, err, errlen);
        if (st == KVQ_OK) item(out, mismatches, &p, "subject_sha256", hex);
        if (st == KVQ_OK && !kvq_subject_load(&s, subject, err, errlen)) st = KVQ_E_SUBJECT;
        if (st == KVQ_OK) {
            kvq_entry_fn fv = s.lookup(&s, KVQ_SUBJECT_VERSION_ENTRY, 1u);
            char text[64];
            if (fv != NULL) version = ((kvq_subject_version_v1_fn)fv)();
            kvq_copy_utf8(text, sizeof text, s.name);
            item(out, mismatches, &p, "subject", text);
            kvq_copy_utf8(text, sizeof text, version != NULL && version[0] ? version : "unknown");
            for (char *q = text; *q; q++) /* as the runner sends it [VER-REP-03] */
                if ((unsigned char)*q < 0x20u || *q == 0x7F) *q = ' ';
            item(out, mismatches, &p, "subject_version", text);
        }
    }
    /* or the results file: its bytes and its subject line */
    if (st == KVQ_OK && rpath != NULL) {
        kvq_rfile rf;
        char hex[65];
        item(out, mismatches, &p, "mode", "results");
        if ((st = kvq_sha256_file(rpath, hex, err, errlen)) == KVQ_OK) item(out, mismatches, &p, "results_sha256", hex);
        if (st == KVQ_OK && (st = kvq_res_read(&rf, rpath, err, errlen)) == KVQ_OK) {
            item(out, mismatches, &p, "subject", rf.subject);
            if (vectors_same) st = rejudge(&p, &vf, vpath, &rf, rpath, out, mismatches);
            kvq_rfile_free(&rf);
        }
    }
    kvq_vfile_free(&vf);
    jfree(&p.root);
    return st;
}
