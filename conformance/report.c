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

static const char *outcome_name(int o)
{
    return o == KVQ_PASS ? "pass" : o == KVQ_FAIL ? "fail" : "skip";
}

void kvq_report_text(FILE *f, const kvq_verify_report *rep, size_t max_show)
{
    size_t shown = 0;
    fprintf(f, "kvq verify: subject %s, vectors %s\n", rep->subject, rep->vectors);
    if (rep->skip_reason[0]) fprintf(f, "  SKIPPED: %s\n", rep->skip_reason);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_case_verdict *v = &rep->v[i];
        if (v->outcome != KVQ_FAIL) continue;
        if (shown++ == max_show) {
            fprintf(f, "  ... %zu more failures (see the JSON report)\n", rep->failed - max_show);
            break;
        }
        if (v->vc->op != KVQ_OP_KIVI_QUANT) /* [VER-CERT-06] */
            fprintf(f, "  FAIL %s [%s, %s n=%u d=%u, line %ld]: %s\n", v->vc->id,
                    kvq_level_name(v->vc->level), kvq_op_name(v->vc->op), v->vc->cshape.tokens,
                    v->vc->cshape.dim, v->vc->line, v->detail);
        else
            fprintf(f, "  FAIL %s [%s, bits=%u G=%u %s %s, line %ld]: %s\n", v->vc->id,
                    kvq_level_name(v->vc->level), v->vc->shape.bits, v->vc->shape.group,
                    kvq_grouping_name(v->vc->shape.grouping), kvq_meta_name(v->vc->shape.meta),
                    v->vc->line, v->detail);
    }
    if (rep->deselected) fprintf(f, "  (%zu cases of other levels not selected)\n", rep->deselected);
    if (rep->skipped)
        fprintf(f, "%zu passed, %zu failed, %zu skipped\n", rep->passed, rep->failed, rep->skipped);
    else
        fprintf(f, "%zu passed, %zu failed\n", rep->passed, rep->failed);
}

static void put_escaped(FILE *f, const char *s, int xml)
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

/* Open path.tmp for writing; commit() renames it into place. */
static FILE *open_tmp(const char *path, char *tmp, size_t tmplen)
{
    snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    return fopen(tmp, "w");
}

static kvq_status commit(FILE *f, const char *tmp, const char *path)
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
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    fprintf(f, "{\n  \"kvq_report\": 1,\n  \"kvq_version\": \"%s\",\n  \"subject\": \"",
            KVQ_VERSION_STRING);
    put_escaped(f, rep->subject, 0);
    fputs("\",\n  \"vectors\": \"", f);
    put_escaped(f, rep->vectors, 0);
    fputs("\",\n  \"skip_reason\": \"", f);
    put_escaped(f, rep->skip_reason, 0);
    fprintf(f, "\",\n  \"passed\": %zu,\n  \"failed\": %zu,\n  \"skipped\": %zu,\n"
               "  \"deselected\": %zu,\n  \"cases\": [",
            rep->passed, rep->failed, rep->skipped, rep->deselected);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_case_verdict *v = &rep->v[i];
        fprintf(f, "%s\n    {\"id\": \"%s\", \"level\": \"%s\", \"line\": %ld, \"outcome\": \"%s\"",
                i ? "," : "", v->vc->id, kvq_level_name(v->vc->level), v->vc->line,
                outcome_name(v->outcome));
        if (v->detail[0]) {
            fputs(", \"detail\": \"", f);
            put_escaped(f, v->detail, 0);
            fputc('"', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return commit(f, tmp, path);
}

kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep)
{
    char tmp[1024];
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n"
               "  <testsuite name=\"kvq.",
            rep->n, rep->failed, rep->skipped);
    put_escaped(f, rep->subject, 1);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n", rep->n, rep->failed,
            rep->skipped);
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_case_verdict *v = &rep->v[i];
        fprintf(f, "    <testcase classname=\"%s.%s\" name=\"%s\"",
                rep->v[i].vc->op == KVQ_OP_KIVI_QUANT ? "kivi" : "cert",
                kvq_level_name(v->vc->level), v->vc->id);
        if (v->outcome == KVQ_PASS) {
            fputs("/>\n", f);
            continue;
        }
        fputs(">\n      <", f);
        fputs(v->outcome == KVQ_FAIL ? "failure" : "skipped", f);
        fputs(" message=\"", f);
        put_escaped(f, v->detail, 1);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return commit(f, tmp, path);
}

/* ---- kvq cert [CERT-VER-03] ------------------------------------------------ */

/* A binary32 value as a JSON number (exact: every binary32 has a 17-digit decimal
 * that reads back as itself) and its hex form. */
static void put_num(FILE *f, const char *key, double x, int last)
{
    if (isfinite(x)) fprintf(f, "\"%s\": %.17g, \"%s_hex\": \"%a\"%s", key, x, key, x, last ? "" : ", ");
    else fprintf(f, "\"%s\": null, \"%s_hex\": \"%a\"%s", key, key, x, last ? "" : ", ");
}

kvq_status kvq_report_cert_json(const char *path, const kvq_cert_case *cs, size_t n)
{
    char tmp[1024];
    size_t passed = 0;
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    for (size_t i = 0; i < n; i++) passed += cs[i].outcome == KVQ_PASS;
    fprintf(f, "{\n  \"kvq_report\": 1,\n  \"kvq_version\": \"%s\",\n  \"subject\": \"cert\",\n"
               "  \"passed\": %zu,\n  \"failed\": %zu,\n  \"skipped\": 0,\n  \"cases\": [",
            KVQ_VERSION_STRING, passed, n - passed);
    for (size_t i = 0; i < n; i++) {
        const kvq_cert_case *c = &cs[i];
        const kvq_cert_record *r = &c->rec;
        fputs(i ? ",\n    {\"id\": \"" : "\n    {\"id\": \"", f);
        put_escaped(f, c->id, 0);
        fprintf(f, "\", \"classname\": \"cert\", \"outcome\": \"%s\", ", outcome_name(c->outcome));
        if (c->check != NULL) fprintf(f, "\"check\": \"%s\", ", c->check);
        if (c->detail[0]) {
            fputs("\"detail\": \"", f);
            put_escaped(f, c->detail, 0);
            fputs("\", ", f);
        }
        /* error: the upper end of the exact enclosure; bounds: the sound values */
        put_num(f, "error", c->v.err_hi, 0);
        put_num(f, "error_lo", c->v.err_lo, 0);
        put_num(f, "ekey", c->v.ekey, 0);
        put_num(f, "eval", c->v.eval, 0);
        put_num(f, "earith", c->v.earith, 0);
        put_num(f, "margin", c->v.margin_sound, 0);
        put_num(f, "claim_ekey", c->claim_ekey, 0);
        put_num(f, "claim_eval", c->claim_eval, 0);
        if (c->has_earith) put_num(f, "claim_earith", c->claim_earith, 0);
        else fputs("\"claim_earith\": null, ", f);
        fprintf(f, "\"record\": {\"version\": %u, \"rung\": %u, \"n\": %u, \"d\": %u, "
                   "\"k_sel\": %u, \"n_prom\": %u, \"checks\": %u, ",
                r->version, r->rung, r->n, r->d, r->k_sel, r->n_prom, r->checks);
        put_num(f, "delta", r->delta, 0);
        put_num(f, "alpha_hat", r->alpha_hat, 0);
        put_num(f, "vmax", r->vmax, 0);
        put_num(f, "ekey", r->ekey, 0);
        put_num(f, "ekey_paper", r->ekey_paper, 0);
        put_num(f, "eval", r->eval, 0);
        put_num(f, "earith", r->earith, 0);
        put_num(f, "etotal", r->etotal, 1);
        fputs("}}", f);
    }
    fputs("\n  ]\n}\n", f);
    return commit(f, tmp, path);
}

kvq_status kvq_report_cert_junit(const char *path, const kvq_cert_case *cs, size_t n)
{
    char tmp[1024];
    size_t failed = 0;
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (f == NULL) return KVQ_E_IO;
    for (size_t i = 0; i < n; i++) failed += cs[i].outcome != KVQ_PASS;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"0\">\n"
               "  <testsuite name=\"kvq.cert\" tests=\"%zu\" failures=\"%zu\" skipped=\"0\">\n",
            n, failed, n, failed);
    for (size_t i = 0; i < n; i++) {
        fputs("    <testcase classname=\"cert\" name=\"", f);
        put_escaped(f, cs[i].id, 1);
        if (cs[i].outcome == KVQ_PASS) {
            fputs("\"/>\n", f);
            continue;
        }
        fputs("\">\n      <failure message=\"", f);
        put_escaped(f, cs[i].detail, 1);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return commit(f, tmp, path);
}
