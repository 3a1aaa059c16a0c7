/*
 * report.c -- text, JSON and JUnit XML reports of a verification [VER-REP-*].
 *
 * Report files are written to a temporary name and renamed, so a reader never
 * sees half a report.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

#define ITEM(key, label, number, same, field) \
    { key, label, number, same, offsetof(kvq_verify_report, field), sizeof ((kvq_verify_report *)0)->field }
const kvq_report_item kvq_report_items[] = {
    ITEM("kvq_commit", "kvq commit", 0, 1, prov.commit),
    ITEM("subject", "subject", 0, 1, subject),
    ITEM("subject_version", "subject version", 0, 1, prov.subject_version),
    ITEM("subject_file", "subject file", 0, 0, prov.subject_file),
    ITEM("subject_sha256", "subject SHA-256", 0, 1, prov.subject_sha256),
    ITEM("device", "device", 0, 1, prov.device),
    ITEM("mode", "judged from", 0, 1, prov.mode),
    ITEM("results", "results file", 0, 0, results),
    ITEM("results_sha256", "results SHA-256", 0, 1, prov.results_sha256),
    ITEM("vectors", "vectors", 0, 0, vectors),
    ITEM("vectors_sha256", "vectors SHA-256", 0, 1, prov.vectors_sha256),
    ITEM("vectors_digest", "vectors digest", 0, 1, prov.vectors_digest),
    ITEM("family", "family", 0, 1, prov.family),
    ITEM("level_set", "level set", 0, 1, prov.level_set),
    ITEM("seed", "seed", 0, 1, prov.seed),
    ITEM("vector_cases", "cases in the vectors", 1, 1, prov.vector_cases),
    ITEM("level", "levels judged", 0, 1, prov.level),
    ITEM("claim", "claim", 0, 1, prov.claim),
};
#undef ITEM
const size_t kvq_report_nitems = sizeof kvq_report_items / sizeof kvq_report_items[0];

const char *kvq_report_item_text(const kvq_verify_report *rep, const kvq_report_item *it)
{
    const char *t = (const char *)rep + it->offset;
    return it->number && t[0] == '\0' ? "0" : t;
}

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
    if (rep->unclaimed)
        fprintf(f, "  (%zu cases of operations not claimed; claimed: %s)\n", rep->unclaimed,
                rep->claimed[0] ? rep->claimed : "none");
    if (rep->skipped)
        fprintf(f, "%zu passed, %zu failed, %zu skipped\n", rep->passed, rep->failed, rep->skipped);
    else
        fprintf(f, "%zu passed, %zu failed\n", rep->passed, rep->failed);
}

/* JSON strings and XML attributes are UTF-8: valid sequences are copied, a
 * byte that starts none becomes U+FFFD, control characters are escaped (JSON)
 * or blanked (XML 1.0 cannot carry them) [VER-REP-03]. */
void kvq_report_escape(FILE *f, const char *str, int xml)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned char ch = *s;
        size_t k = kvq_utf8_seq(s);
        if (k == 0) {
            fputs(xml ? "&#xFFFD;" : "\\ufffd", f);
            s++;
            continue;
        }
        if (k > 1) {
            fwrite(s, 1, k, f);
            s += k;
            continue;
        }
        if (xml) {
            if (ch == '<') fputs("&lt;", f);
            else if (ch == '>') fputs("&gt;", f);
            else if (ch == '&') fputs("&amp;", f);
            else if (ch == '"') fputs("&quot;", f);
            else if (ch < 0x20 || ch == 0x7F) fputc(' ', f);
            else fputc(ch, f);
        } else {
            if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
            else if (ch < 0x20 || ch == 0x7F) fprintf(f, "\\u%04x", ch);
            else fputc(ch, f);
        }
        s++;
    }
}

kvq_status kvq_report_json(const char *path, const kvq_verify_report *rep, char *err, size_t errlen)
{
    kvq_outfile o;
    FILE *f;
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    f = o.f;
    fprintf(f, "{\n  \"kvq_report\": %d,\n  \"kvq_version\": \"%s\"", KVQ_REPORT_FORMAT, KVQ_VERSION_STRING);
    for (size_t i = 0; i < kvq_report_nitems; i++) { /* what was judged [VER-REP-05] */
        const kvq_report_item *it = &kvq_report_items[i];
        fprintf(f, ",\n  \"%s\": ", it->key);
        if (it->number) {
            fputs(kvq_report_item_text(rep, it), f);
            continue;
        }
        fputc('"', f);
        kvq_report_escape(f, kvq_report_item_text(rep, it), 0);
        fputc('"', f);
    }
    if (rep->shard[0]) fprintf(f, ",\n  \"shard\": \"%s\"", rep->shard); /* [VER-MERGE-01] */
    fputs(",\n  \"skip_reason\": \"", f);
    kvq_report_escape(f, rep->skip_reason, 0);
    fputs("\",\n  \"operations\": [", f);
    for (const char *p = rep->claimed; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        fprintf(f, "%s\"%.*s\"", p == rep->claimed ? "" : ", ", (int)n, p);
        p += n + (comma != NULL);
    }
    fprintf(f, "],\n  \"passed\": %zu,\n  \"failed\": %zu,\n  \"skipped\": %zu,\n"
               "  \"deselected\": %zu,\n  \"unclaimed\": %zu,\n  \"cases\": [",
            rep->passed, rep->failed, rep->skipped, rep->deselected, rep->unclaimed);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_verdict *v = &rep->v[i];
        fprintf(f, "%s\n    {\"id\": \"%s\", \"level\": \"%s\", \"op\": \"%s\", \"line\": %ld, \"outcome\": \"%s\"",
                i ? "," : "", v->vc->id, kvq_level_name(v->vc->level), v->vc->op->name, v->vc->line,
                kvq_outcome_name(v->outcome));
        if (v->detail[0]) {
            fputs(", \"detail\": \"", f);
            kvq_report_escape(f, v->detail, 0);
            fputc('"', f);
        }
        if (v->nmargin > 0) { /* [VER-REP-04]: 17 significant digits read back exactly */
            fputs(", \"margins\": [", f);
            for (int m = 0; m < v->nmargin; m++)
                fprintf(f, "%s{\"quantity\": \"%s\", \"error\": %.17g, \"bound\": %.17g}", m ? ", " : "",
                        v->margin[m].quantity, v->margin[m].error, v->margin[m].bound);
            fputc(']', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return kvq_outfile_commit(&o, err, errlen);
}

kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep, char *err, size_t errlen)
{
    kvq_outfile o;
    FILE *f;
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    f = o.f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n"
               "  <testsuite name=\"kvq.",
            rep->n, rep->failed, rep->skipped);
    kvq_report_escape(f, rep->subject, 1);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n", rep->n, rep->failed,
            rep->skipped);
    fprintf(f, "    <properties>\n      <property name=\"kvq.operations\" value=\"%s\"/>\n"
               "      <property name=\"kvq.version\" value=\"%s\"/>\n",
            rep->claimed, KVQ_VERSION_STRING);
    for (size_t i = 0; i < kvq_report_nitems; i++) { /* what was judged [VER-REP-05] */
        const char *key = kvq_report_items[i].key;
        fprintf(f, "      <property name=\"kvq.%s\" value=\"", strncmp(key, "kvq_", 4) == 0 ? key + 4 : key);
        kvq_report_escape(f, kvq_report_item_text(rep, &kvq_report_items[i]), 1);
        fputs("\"/>\n", f);
    }
    fputs("    </properties>\n", f);
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
    return kvq_outfile_commit(&o, err, errlen);
}

