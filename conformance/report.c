/*
 * report.c -- text, JSON and JUnit XML reports of a verification [VER-REP-*].
 *
 * Report files are written to a temporary name and renamed, so a reader never
 * sees half a report.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

const char *kvq_outcome_name(int o)
{
    return o == KVQ_PASS ? "pass" : o == KVQ_FAIL ? "fail" : "skip";
}

void kvq_report_text(FILE *f, const kvq_verify_report *rep, size_t max_show)
{
    size_t shown = 0;
    fprintf(f, "kvq verify: subject %s, vectors %s\n", rep->subject, rep->vectors);
    if (rep->skip_reason[0]) fprintf(f, "  SKIPPED: %s\n", rep->skip_reason);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_verdict *v = &rep->v[i];
        if (v->outcome != KVQ_FAIL) continue;
        if (shown++ == max_show) {
            fprintf(f, "  ... %zu more failures (see the JSON report)\n", rep->failed - max_show);
            break;
        }
        {
            char what[160];
            v->vc->op->describe(v->vc, what, sizeof what); /* [VER-CERT-06] */
            fprintf(f, "  FAIL %s [%s, %s, line %ld]: %s\n", v->vc->id, kvq_level_name(v->vc->level),
                    what, v->vc->line, v->detail);
        }
    }
    if (rep->deselected) fprintf(f, "  (%zu cases of other levels not selected)\n", rep->deselected);
    if (rep->skipped)
        fprintf(f, "%zu passed, %zu failed, %zu skipped\n", rep->passed, rep->failed, rep->skipped);
    else
        fprintf(f, "%zu passed, %zu failed\n", rep->passed, rep->failed);
}

void kvq_report_escape(FILE *f, const char *s, int xml)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (xml) {
            if (ch == '<') fputs("&lt;", f);
            else if (ch == '>') fputs("&gt;", f);
            else if (ch == '&') fputs("&amp;", f);
            else if (ch == '"') fputs("&quot;", f);
            else if (ch < 0x20) fputc(' ', f);
            else fputc(ch, f);
        } else {
            if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
            else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
            else fputc(ch, f);
        }
    }
}

/* Open path.tmp for writing; kvq_report_commit() renames it into place. */
FILE *kvq_report_open(const char *path, char *tmp, size_t tmplen)
{
    snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    return fopen(tmp, "w");
}

kvq_status kvq_report_commit(FILE *f, const char *tmp, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return KVQ_E_IO;
    }
    return KVQ_OK;
}

kvq_status kvq_report_json(const char *path, const kvq_verify_report *rep)
{
    char tmp[1024];
    FILE *f = kvq_report_open(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    fprintf(f, "{\n  \"kvq_report\": 1,\n  \"kvq_version\": \"%s\",\n  \"subject\": \"",
            KVQ_VERSION_STRING);
    kvq_report_escape(f, rep->subject, 0);
    fputs("\",\n  \"vectors\": \"", f);
    kvq_report_escape(f, rep->vectors, 0);
    fputs("\",\n  \"skip_reason\": \"", f);
    kvq_report_escape(f, rep->skip_reason, 0);
    fprintf(f, "\",\n  \"passed\": %zu,\n  \"failed\": %zu,\n  \"skipped\": %zu,\n"
               "  \"deselected\": %zu,\n  \"cases\": [",
            rep->passed, rep->failed, rep->skipped, rep->deselected);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_verdict *v = &rep->v[i];
        fprintf(f, "%s\n    {\"id\": \"%s\", \"level\": \"%s\", \"line\": %ld, \"outcome\": \"%s\"",
                i ? "," : "", v->vc->id, kvq_level_name(v->vc->level), v->vc->line,
                kvq_outcome_name(v->outcome));
        if (v->detail[0]) {
            fputs(", \"detail\": \"", f);
            kvq_report_escape(f, v->detail, 0);
            fputc('"', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return kvq_report_commit(f, tmp, path);
}

kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep)
{
    char tmp[1024];
    FILE *f = kvq_report_open(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n"
               "  <testsuite name=\"kvq.",
            rep->n, rep->failed, rep->skipped);
    kvq_report_escape(f, rep->subject, 1);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n", rep->n, rep->failed,
            rep->skipped);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_verdict *v = &rep->v[i];
        fprintf(f, "    <testcase classname=\"%s.%s\" name=\"%s\"",
                rep->v[i].vc->op->family->name,
                kvq_level_name(v->vc->level), v->vc->id);
        if (v->outcome == KVQ_PASS) {
            fputs("/>\n", f);
            continue;
        }
        fputs(">\n      <", f);
        fputs(v->outcome == KVQ_FAIL ? "failure" : "skipped", f);
        fputs(" message=\"", f);
        kvq_report_escape(f, v->detail, 1);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return kvq_report_commit(f, tmp, path);
}

