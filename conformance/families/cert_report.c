/*
 * families/cert_report.c -- the JSON and JUnit reports of `kvq cert`
 * [CERT-VER-03] [VER-REP-01] [VER-REP-02] (classname "cert").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "cert_judge.h"
#include "conf.h"

/* ---- kvq cert [CERT-VER-03] ------------------------------------------------ */

/* A binary32 value as a JSON number (exact: every binary32 has a 17-digit decimal
 * that reads back as itself) and its hex form. */
static void put_num(FILE *f, const char *key, double x, int last)
{
    if (isfinite(x)) fprintf(f, "\"%s\": %.17g, \"%s_hex\": \"%a\"%s", key, x, key, x, last ? "" : ", ");
    else fprintf(f, "\"%s\": null, \"%s_hex\": \"%a\"%s", key, key, x, last ? "" : ", ");
}

kvq_status kvq_report_cert_json(const char *path, const kvq_cert_case *cs, size_t n, char *err, size_t errlen)
{
    kvq_outfile o;
    size_t passed = 0;
    FILE *f;
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    f = o.f;
    for (size_t i = 0; i < n; i++) passed += cs[i].outcome == KVQ_PASS;
    fprintf(f, "{\n  \"kvq_report\": %d,\n  \"kvq_version\": \"%s\",\n  \"kvq_commit\": \"%s\",\n"
               "  \"subject\": \"cert\",\n"
               "  \"passed\": %zu,\n  \"failed\": %zu,\n  \"skipped\": 0,\n  \"cases\": [",
            KVQ_REPORT_FORMAT, KVQ_VERSION_STRING, kvq_commit(), passed, n - passed);
    for (size_t i = 0; i < n; i++) {
        const kvq_cert_case *c = &cs[i];
        const kvq_cert_record *r = &c->rec;
        fputs(i ? ",\n    {\"id\": \"" : "\n    {\"id\": \"", f);
        kvq_report_escape(f, c->id, 0);
        fputc('"', f);
        if (c->sha256[0]) fprintf(f, ", \"dump_sha256\": \"%s\"", c->sha256);
        fprintf(f, ", \"classname\": \"cert\", \"outcome\": \"%s\", ", kvq_outcome_name(c->outcome));
        if (c->check != NULL) fprintf(f, "\"check\": \"%s\", ", c->check);
        if (c->detail[0]) {
            fputs("\"detail\": \"", f);
            kvq_report_escape(f, c->detail, 0);
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
    return kvq_outfile_commit(&o, err, errlen);
}

kvq_status kvq_report_cert_junit(const char *path, const kvq_cert_case *cs, size_t n, char *err, size_t errlen)
{
    kvq_outfile o;
    size_t failed = 0;
    FILE *f;
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    f = o.f;
    for (size_t i = 0; i < n; i++) failed += cs[i].outcome != KVQ_PASS;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"0\">\n"
               "  <testsuite name=\"kvq.cert\" tests=\"%zu\" failures=\"%zu\" skipped=\"0\">\n"
               "    <properties>\n      <property name=\"kvq.version\" value=\"%s\"/>\n"
               "      <property name=\"kvq.commit\" value=\"%s\"/>\n    </properties>\n",
            n, failed, n, failed, KVQ_VERSION_STRING, kvq_commit());
    for (size_t i = 0; i < n; i++) {
        fputs("    <testcase classname=\"cert\" name=\"", f);
        kvq_report_escape(f, cs[i].id, 1);
        if (cs[i].outcome == KVQ_PASS) {
            fputs("\"/>\n", f);
            continue;
        }
        fputs("\">\n      <failure message=\"", f);
        kvq_report_escape(f, cs[i].detail, 1);
        fputs("\"/>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return kvq_outfile_commit(&o, err, errlen);
}
