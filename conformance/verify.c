/*
 * verify.c -- verdicts of a subject's results against vectors (spec/vectors.md,
 * [VER-*]), the same for every operation.
 *
 * A case's result is found by id and decoded against the case's own
 * operation; the status decides an error case; the operation's judge decides
 * the rest (registry.h: the core's bitwise comparison, then its own code).
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"

static int cmp_rcase_id(const void *a, const void *b)
{
    return strcmp((*(const kvq_rcase *const *)a)->id, (*(const kvq_rcase *const *)b)->id);
}

static int cmp_case_id(const void *a, const void *b)
{
    return strcmp((*(const kvq_case *const *)a)->id, (*(const kvq_case *const *)b)->id);
}

static const kvq_rcase *find_result(const kvq_rcase *const *sorted, size_t n, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid]->id, id);
        if (c == 0) return sorted[mid];
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

static int has_case(const kvq_case *const *sorted, size_t n, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid]->id, id);
        if (c == 0) return 1;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* One case [VER-CASE-02] [VER-ST-01] [VER-CERT-03]: a result must exist; a
 * skip is a SKIP, never a pass; the status must be the expected one (an
 * expected error status is then a pass); the outputs must decode against the
 * case's operation; then the operation judges them. */
static void judge(kvq_verdict *v, const kvq_case *c, const kvq_rcase *r, const char *rpath)
{
    char err[256];
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    void *out;
    uint32_t flags;
    v->outcome = KVQ_FAIL;
    if (r == NULL) {
        snprintf(d, dl, "no result for this case");
        return;
    }
    v->result_line = r->line;
    if (r->skipped != NULL) {
        v->outcome = KVQ_SKIP;
        snprintf(d, dl, "skipped by the subject: %s", r->skipped);
        return;
    }
    if (r->status != c->status) {
        snprintf(d, dl, "status: expected %d (%s), got %d (%s: %s)", c->status,
                 kvq_status_name(c->status), r->status, kvq_status_name(r->status),
                 kvq_status_str(r->status));
        return;
    }
    if (c->status != KVQ_OK) {
        if (r->touched != NULL) { /* [API-ERR-01] [VEC-RES-03] */
            snprintf(d, dl, "status %d (%s) as expected, but the call wrote %s: a failed call leaves every "
                     "output and the flags word untouched [API-ERR-01]", r->status, kvq_status_name(r->status),
                     r->touched);
            return;
        }
        v->outcome = KVQ_PASS;
        return;
    }
    if (kvq_res_decode(&out, &flags, r, c, rpath, err, sizeof err) != KVQ_OK) {
        snprintf(d, dl, "unreadable outputs: %s", err);
        return;
    }
    c->op->judge(v, c, out, flags);
    kvq_out_free(c->op, out);
}

static int is_claimed(const kvq_op *op, const kvq_op *const *claimed, size_t n)
{
    if (claimed == NULL) return 1;
    for (size_t i = 0; i < n; i++)
        if (claimed[i] == op) return 1;
    return 0;
}

/* The claimed operations, in registry order, among those the vectors hold
 * (all of them when claimed is NULL) [VER-CLAIM-01]. */
static void claimed_list(char *buf, size_t len, const kvq_vfile *vf, const kvq_op *const *claimed, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t f = 0; f < kvq_family_count(); f++)
        for (size_t k = 0; k < kvq_family_at(f)->nops; k++) {
            const kvq_op *op = kvq_family_at(f)->ops[k];
            int present = 0;
            for (size_t i = 0; i < vf->ncases && !present; i++) present = vf->cases[i].op == op;
            if (!present || !is_claimed(op, claimed, n) || o >= len) continue;
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", op->name);
        }
}

kvq_status kvq_verify(kvq_verify_report *rep, const kvq_vfile *vf, const char *vpath,
                      const kvq_rfile *rf, const char *rpath, unsigned level_mask,
                      const kvq_op *const *claimed, size_t nclaimed)
{
    const kvq_rcase **sorted;
    const kvq_case **cases;
    memset(rep, 0, sizeof *rep);
    kvq_copy_utf8(rep->subject, sizeof rep->subject, rf->subject);
    kvq_copy_utf8(rep->vectors, sizeof rep->vectors, vpath);
    kvq_copy_utf8(rep->results, sizeof rep->results, rpath);
    kvq_copy_utf8(rep->skip_reason, sizeof rep->skip_reason, rf->unavailable);
    claimed_list(rep->claimed, sizeof rep->claimed, vf, claimed, nclaimed);
    rep->v = calloc(vf->ncases ? vf->ncases : 1, sizeof *rep->v);
    sorted = malloc((rf->ncases ? rf->ncases : 1) * sizeof *sorted);
    cases = malloc((vf->ncases ? vf->ncases : 1) * sizeof *cases);
    if (rep->v == NULL || sorted == NULL || cases == NULL) {
        free(rep->v);
        free(sorted);
        free(cases);
        rep->v = NULL;
        return KVQ_E_NOMEM;
    }
    for (size_t i = 0; i < rf->ncases; i++) sorted[i] = &rf->cases[i];
    qsort(sorted, rf->ncases, sizeof *sorted, cmp_rcase_id);
    for (size_t i = 0; i < vf->ncases; i++) cases[i] = &vf->cases[i];
    qsort(cases, vf->ncases, sizeof *cases, cmp_case_id);
    /* A result for a case the vectors do not hold is an input error. */
    for (size_t i = 0; i < rf->ncases; i++)
        if (!has_case(cases, vf->ncases, rf->cases[i].id)) {
            snprintf(rep->skip_reason, sizeof rep->skip_reason,
                     "%s:%ld: result for unknown case '%s'", rpath, rf->cases[i].line,
                     rf->cases[i].id);
            free(sorted);
            free(cases);
            free(rep->v);
            rep->v = NULL;
            return KVQ_E_FORMAT;
        }
    free(cases);
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_case *c = &vf->cases[k];
        kvq_verdict *v;
        if (!is_claimed(c->op, claimed, nclaimed)) {
            rep->unclaimed++;
            continue;
        }
        if (!(level_mask & KVQ_LEVELS_MASK(c->level))) {
            rep->deselected++;
            continue;
        }
        v = &rep->v[rep->n++];
        v->vc = c;
        if (rf->unavailable[0]) {
            v->outcome = KVQ_SKIP;
            snprintf(v->detail, sizeof v->detail, "subject unavailable: %s", rep->skip_reason);
        } else {
            judge(v, c, find_result(sorted, rf->ncases, c->id), rpath);
        }
        if (v->outcome == KVQ_PASS) rep->passed++;
        else if (v->outcome == KVQ_FAIL) rep->failed++;
        else rep->skipped++;
    }
    free(sorted);
    return KVQ_OK;
}

void kvq_verify_report_free(kvq_verify_report *rep)
{
    free(rep->v);
    rep->v = NULL;
    rep->n = 0;
}
