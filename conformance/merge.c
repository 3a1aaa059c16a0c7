/*
 * merge.c -- `kvq merge`: the JSON reports of the shards of one verification
 * combined into the report of the whole run [VER-MERGE-01].
 *
 * `kvq verify --shard i/n` judges the cases whose ordinal in the vector file
 * is i mod n and marks its JSON report with "shard": "i/n".  merge reads n
 * such reports (a small strict JSON reader: the reports kvq writes, and a
 * clear error naming the file and byte offset for anything else), checks
 * that they are the n shards of one run (same subject, vectors, operations
 * and skip reason, every shard once), orders the cases by their vector line
 * and writes the JSON report a single run would have written -- byte for
 * byte, since every string is kept as it was written and every number is
 * written back in the same form -- and, from the same data, the JUnit and
 * HTML reports.
 */
#include <errno.h>
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
    uint64_t shard_i, shard_n;
} part;

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

static int same_str(const jval *a, const jval *b)
{
    return strcmp(a->raw, b->raw) == 0;
}

static int cmp_line(const void *a, const void *b)
{
    long la = strtol(jget(*(const jval *const *)a, "line")->raw, NULL, 10);
    long lb = strtol(jget(*(const jval *const *)b, "line")->raw, NULL, 10);
    return la < lb ? -1 : la > lb;
}

static unsigned long long num(const jval *o, const char *key)
{
    return strtoull(jget(o, key)->raw, NULL, 10);
}

/* The merged JSON report: the bytes kvq_report_json writes for the whole run. */
static kvq_status write_json(const char *path, const jval *first, const jval *const *cases, size_t n,
                             const unsigned long long cnt[5], char *err, size_t errlen)
{
    kvq_outfile o;
    const jval *ops = jget(first, "operations");
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    fprintf(o.f, "{\n  \"kvq_report\": 1,\n  \"kvq_version\": \"%s\",\n  \"subject\": \"%s\",\n"
                 "  \"vectors\": \"%s\",\n  \"skip_reason\": \"%s\",\n  \"operations\": [",
            jget(first, "kvq_version")->raw, jget(first, "subject")->raw, jget(first, "vectors")->raw,
            jget(first, "skip_reason")->raw);
    for (size_t i = 0; i < ops->n; i++) fprintf(o.f, "%s\"%s\"", i ? ", " : "", ops->items[i].raw);
    fprintf(o.f, "],\n  \"passed\": %llu,\n  \"failed\": %llu,\n  \"skipped\": %llu,\n"
                 "  \"deselected\": %llu,\n  \"unclaimed\": %llu,\n  \"cases\": [",
            cnt[0], cnt[1], cnt[2], cnt[3], cnt[4]);
    for (size_t i = 0; i < n; i++) {
        const jval *c = cases[i], *d = jget(c, "detail"), *m = jget(c, "margins");
        fprintf(o.f, "%s\n    {\"id\": \"%s\", \"level\": \"%s\", \"op\": \"%s\", \"line\": %s, \"outcome\": \"%s\"",
                i ? "," : "", jget(c, "id")->raw, jget(c, "level")->raw, jget(c, "op")->raw,
                jget(c, "line")->raw, jget(c, "outcome")->raw);
        if (d != NULL) fprintf(o.f, ", \"detail\": \"%s\"", d->raw);
        if (m != NULL) {
            fputs(", \"margins\": [", o.f);
            for (size_t k = 0; k < m->n; k++)
                fprintf(o.f, "%s{\"quantity\": \"%s\", \"error\": %s, \"bound\": %s}", k ? ", " : "",
                        jget(&m->items[k], "quantity")->raw, jget(&m->items[k], "error")->raw,
                        jget(&m->items[k], "bound")->raw);
            fputc(']', o.f);
        }
        fputc('}', o.f);
    }
    fputs("\n  ]\n}\n", o.f);
    return kvq_outfile_commit(&o, err, errlen);
}

/* A verification report rebuilt from the merged cases, for the other forms. */
static kvq_status rebuild(kvq_verify_report *rep, kvq_case **cs, const jval *first, const jval *const *cases,
                          size_t n, const unsigned long long cnt[5], char *err, size_t errlen)
{
    const jval *ops = jget(first, "operations");
    memset(rep, 0, sizeof *rep);
    kvq_copy_utf8(rep->subject, sizeof rep->subject, jget(first, "subject")->str);
    kvq_copy_utf8(rep->vectors, sizeof rep->vectors, jget(first, "vectors")->str);
    kvq_copy_utf8(rep->skip_reason, sizeof rep->skip_reason, jget(first, "skip_reason")->str);
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
        const char *oc = jget(c, "outcome")->str;
        snprintf(k->id, sizeof k->id, "%s", jget(c, "id")->str);
        k->level = strcmp(jget(c, "level")->str, "bounded") == 0 ? KVQ_LEVEL_BOUNDED : KVQ_LEVEL_EXACT;
        k->line = strtol(jget(c, "line")->raw, NULL, 10);
        k->op = kvq_op_find(jget(c, "op")->str);
        if (k->op == NULL) {
            snprintf(err, errlen, "case %s: operation '%s' is not one this kvq knows", k->id, jget(c, "op")->str);
            return KVQ_E_FORMAT;
        }
        v->vc = k;
        v->outcome = strcmp(oc, "pass") == 0 ? KVQ_PASS : strcmp(oc, "fail") == 0 ? KVQ_FAIL : KVQ_SKIP;
        if (d != NULL) kvq_copy_utf8(v->detail, sizeof v->detail, d->str);
        for (size_t q = 0; m != NULL && q < m->n && q < KVQ_VERDICT_MARGINS; q++) {
            v->margin[q].quantity = jget(&m->items[q], "quantity")->str;
            v->margin[q].error = strtod(jget(&m->items[q], "error")->raw, NULL);
            v->margin[q].bound = strtod(jget(&m->items[q], "bound")->raw, NULL);
            v->nmargin++;
        }
    }
    rep->n = n;
    return KVQ_OK;
}

static int check_case(const jval *c, const char *path, char *err, size_t errlen)
{
    static const char *const KEYS[] = { "id", "level", "op", "line", "outcome" };
    const jval *m = jget(c, "margins");
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
    if (jget(c, "detail") != NULL && jget(c, "detail")->t != J_STR) {
        snprintf(err, errlen, "%s: case %s: \"detail\" is not a string", path, jget(c, "id")->raw);
        return 0;
    }
    for (size_t q = 0; m != NULL && q < m->n; q++) {
        const jval *e = &m->items[q];
        if (m->t != J_ARR || e->t != J_OBJ || !jget(e, "quantity") || jget(e, "quantity")->t != J_STR ||
            !jget(e, "error") || jget(e, "error")->t != J_NUM || !jget(e, "bound") || jget(e, "bound")->t != J_NUM) {
            snprintf(err, errlen, "%s: case %s: malformed \"margins\"", path, jget(c, "id")->raw);
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
    size_t ncases = 0, cap = 0;
    unsigned long long cnt[5] = { 0 };
    static const char *const COUNTS[5] = { "passed", "failed", "skipped", "deselected", "unclaimed" };
    kvq_status st = KVQ_OK;
    uint64_t n = 0;
    if (ps == NULL) return KVQ_E_NOMEM;
    if (np == 0) {
        snprintf(err, errlen, "no reports to merge");
        free(ps);
        return KVQ_E_PARAM;
    }
    for (size_t i = 0; i < np && st == KVQ_OK; i++) {
        char *data;
        size_t len;
        jparser j;
        const jval *v;
        ps[i].path = paths[i];
        if ((st = read_file(&data, &len, paths[i], err, errlen)) != KVQ_OK) break;
        {   /* the reader wants a terminated string */
            char *z = realloc(data, len + 1);
            if (z == NULL) {
                free(data);
                st = KVQ_E_NOMEM;
                break;
            }
            data = z;
            data[len] = '\0';
        }
        j.s = j.p = data, j.path = paths[i], j.err = err, j.errlen = errlen;
        if (memchr(data, '\0', len) != NULL || !jvalue(&j, &ps[i].root, 0)) {
            if (memchr(data, '\0', len) != NULL) snprintf(err, errlen, "%s: contains a NUL byte", paths[i]);
            free(data);
            st = KVQ_E_FORMAT;
            break;
        }
        jws(&j);
        if (*j.p != '\0') {
            jfail(&j, "content after the report");
            free(data);
            st = KVQ_E_FORMAT;
            break;
        }
        free(data);
        if (ps[i].root.t != J_OBJ || !want(&ps[i].root, "kvq_report", J_NUM, paths[i], err, errlen, &v) ||
            strcmp(v->raw, "1") != 0) {
            if (ps[i].root.t == J_OBJ && v != NULL) snprintf(err, errlen, "%s: report format %s, this kvq reads 1", paths[i], v->raw);
            else if (ps[i].root.t != J_OBJ) snprintf(err, errlen, "%s: not a kvq verify report", paths[i]);
            st = KVQ_E_FORMAT;
            break;
        }
        {
            static const char *const STRS[] = { "kvq_version", "subject", "vectors", "skip_reason", "shard" };
            for (size_t k = 0; k < KVQ_NELEMS(STRS) && st == KVQ_OK; k++)
                if (!want(&ps[i].root, STRS[k], J_STR, paths[i], err, errlen, &v)) st = KVQ_E_FORMAT;
            for (size_t k = 0; k < 5 && st == KVQ_OK; k++)
                if (!want(&ps[i].root, COUNTS[k], J_NUM, paths[i], err, errlen, &v)) st = KVQ_E_FORMAT;
            if (st == KVQ_OK && (!want(&ps[i].root, "operations", J_ARR, paths[i], err, errlen, &v) ||
                                 !want(&ps[i].root, "cases", J_ARR, paths[i], err, errlen, &v)))
                st = KVQ_E_FORMAT;
            if (st != KVQ_OK) break;
        }
        {
            const char *sh = jget(&ps[i].root, "shard")->str, *slash = strchr(sh, '/');
            if (slash == NULL || !parse_u64(slash + 1, &ps[i].shard_n) || ps[i].shard_n == 0 ||
                sscanf(sh, "%llu", (unsigned long long *)&ps[i].shard_i) != 1 || ps[i].shard_i >= ps[i].shard_n) {
                snprintf(err, errlen, "%s: shard '%.40s' is not i/n", paths[i], sh);
                st = KVQ_E_FORMAT;
                break;
            }
        }
        if (i == 0) n = ps[0].shard_n;
        if (ps[i].shard_n != n || n != np) {
            snprintf(err, errlen, "%s: shard %llu/%llu, but %zu reports were given", paths[i],
                     (unsigned long long)ps[i].shard_i, (unsigned long long)ps[i].shard_n, np);
            st = KVQ_E_FORMAT;
            break;
        }
        for (size_t k = 0; k < i && st == KVQ_OK; k++) {
            static const char *const SAME[] = { "kvq_version", "subject", "vectors", "skip_reason" };
            if (ps[k].shard_i == ps[i].shard_i) {
                snprintf(err, errlen, "%s: shard %llu/%llu is also %s", paths[i], (unsigned long long)ps[i].shard_i,
                         (unsigned long long)n, paths[k]);
                st = KVQ_E_FORMAT;
            }
            for (size_t q = 0; q < KVQ_NELEMS(SAME) && st == KVQ_OK; q++)
                if (!same_str(jget(&ps[k].root, SAME[q]), jget(&ps[i].root, SAME[q]))) {
                    snprintf(err, errlen, "%s: \"%s\" differs from %s's: not shards of one run", paths[i], SAME[q],
                             paths[k]);
                    st = KVQ_E_FORMAT;
                }
        }
        if (st != KVQ_OK) break;
        for (size_t k = 0; k < 5; k++) cnt[k] += num(&ps[i].root, COUNTS[k]);
        v = jget(&ps[i].root, "cases");
        for (size_t k = 0; k < v->n && st == KVQ_OK; k++) {
            if (!check_case(&v->items[k], paths[i], err, errlen)) {
                st = KVQ_E_FORMAT;
                break;
            }
            if (ncases == cap) {
                const jval **nc;
                cap = cap ? 2 * cap : 256;
                nc = realloc(cases, cap * sizeof *nc);
                if (nc == NULL) { st = KVQ_E_NOMEM; break; }
                cases = nc;
            }
            cases[ncases++] = &v->items[k];
        }
    }
    /* the claimed operations: the union, in the order of the registry, of the
     * shards' (a shard that holds no case of an operation does not list it) */
    if (st == KVQ_OK) {
        jval *ops = (jval *)jget(&ps[0].root, "operations");
        jval merged = { 0 };
        merged.t = J_ARR;
        merged.items = calloc(64, sizeof *merged.items);
        for (size_t f = 0; merged.items != NULL && f < kvq_family_count(); f++)
            for (size_t k = 0; k < kvq_family_at(f)->nops; k++) {
                const char *name = kvq_family_at(f)->ops[k]->name;
                int seen = 0;
                for (size_t i = 0; i < np && !seen; i++) {
                    const jval *o = jget(&ps[i].root, "operations");
                    for (size_t q = 0; q < o->n && !seen; q++) seen = o->items[q].t == J_STR && strcmp(o->items[q].str, name) == 0;
                }
                if (seen && merged.n < 64) {
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
    if (st == KVQ_OK) {
        if (ncases > 1) qsort(cases, ncases, sizeof *cases, cmp_line); /* cases is NULL when none */
        for (size_t i = 1; i < ncases && st == KVQ_OK; i++)
            if (cmp_line(&cases[i - 1], &cases[i]) == 0) {
                snprintf(err, errlen, "case %s and case %s share vector line %s: the shards overlap",
                         jget(cases[i - 1], "id")->raw, jget(cases[i], "id")->raw, jget(cases[i], "line")->raw);
                st = KVQ_E_FORMAT;
            }
    }
    if (st == KVQ_OK) /* the exit status a single kvq verify would give [VER-EXIT-01] */
        *verdict = (cnt[1] || cnt[2] || cnt[0] + cnt[1] + cnt[2] == 0) ? 1 : 0;
    if (st == KVQ_OK && json != NULL) st = write_json(json, &ps[0].root, cases, ncases, cnt, err, errlen);
    if (st == KVQ_OK && (junit != NULL || html != NULL)) {
        kvq_verify_report rep;
        kvq_case *cs = NULL;
        st = rebuild(&rep, &cs, &ps[0].root, cases, ncases, cnt, err, errlen);
        if (st == KVQ_OK && junit != NULL) st = kvq_report_junit(junit, &rep, err, errlen);
        if (st == KVQ_OK && html != NULL) st = kvq_report_html(html, &rep, err, errlen);
        free(rep.v);
        free(cs);
    }
    for (size_t i = 0; i < np; i++) jfree(&ps[i].root);
    free(ps);
    free(cases);
    return st;
}
