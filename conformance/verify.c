/*
 * verify.c -- verdicts of a subject's results against vectors (spec/vectors.md,
 * [VER-*]).
 *
 * exact level:   status, flags (less AMBIGUOUS), packed codes, metadata and
 *                dequantized values bit for bit.
 * bounded level: status, masked flags and metadata bit for bit; each code the
 *                real code or, at an ambiguous near-tie, its listed neighbour;
 *                each dequantized value within the KIVI-B-03 bound of the
 *                subject's own code and metadata, decided exactly by MPFR.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "kvq_bits.h"
#include "kvq_exact.h"

/* Flags compared at the bounded level [API-FLAGS-03]: those decided by the
 * bitwise-checked metadata and by the inputs alone.  CLAMPED and SATURATED can
 * legitimately differ with the evaluation (an ambiguous element at the edge of
 * the code range; a dequantized value within the bound of FLT_MAX); a
 * quantize-time saturation shows in the metadata, which is compared bitwise. */
#define BOUNDED_FLAGS (KVQ_FLAG_ZERO_SCALE | KVQ_FLAG_SUBNORMAL)

static int cmp_rcase_id(const void *a, const void *b)
{
    return strcmp((*(const kvq_rcase *const *)a)->id, (*(const kvq_rcase *const *)b)->id);
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

/* Metadata bit for bit, in the storage format's encoding. */
static int meta_check(char *d, size_t dl, const char *what, const float *exp, const float *got,
                      uint64_t ng, uint32_t meta)
{
    for (uint64_t g = 0; g < ng; g++) {
        if (kvq_f32_same(exp[g], got[g])) continue;
        if (meta == KVQ_META_F16) {
            int ok1, ok2;
            unsigned e16 = kvq_f16_bits(exp[g], &ok1), g16 = kvq_f16_bits(got[g], &ok2);
            snprintf(d, dl, "%s[group %llu]: expected 0x%04x, got 0x%04x%s", what,
                     (unsigned long long)g, e16, g16, ok2 ? "" : " (not binary16)");
        } else {
            snprintf(d, dl, "%s[group %llu]: expected 0x%08lx (%a), got 0x%08lx (%a)", what,
                     (unsigned long long)g, (unsigned long)kvq_f32_bits(exp[g]), (double)exp[g],
                     (unsigned long)kvq_f32_bits(got[g]), (double)got[g]);
        }
        return 0;
    }
    return 1;
}

static int amb_alt(const kvq_vcase *c, uint64_t e, uint32_t *alt)
{
    size_t lo = 0, hi = (size_t)c->namb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->amb_idx[mid] == e) {
            *alt = c->amb_alt[mid];
            return 1;
        }
        if (c->amb_idx[mid] < e) lo = mid + 1; else hi = mid;
    }
    return 0;
}

static void judge(kvq_case_verdict *v, const kvq_vcase *c, const kvq_rcase *r,
                  const char *rpath)
{
    const kvq_kivi_shape *s = &c->shape;
    kvq_rout o;
    char err[256];
    uint64_t n, ng, mism = 0, first = 0;
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    v->outcome = KVQ_FAIL;
    if (r == NULL) {
        snprintf(d, dl, "no result for this case");
        return;
    }
    if (r->status != c->status) {
        snprintf(d, dl, "status: expected %d (%s), got %d (%s: %s)", c->status,
                 kvq_status_name(c->status), r->status, kvq_status_name(r->status),
                 kvq_status_str(r->status));
        return;
    }
    if (c->status != KVQ_OK) {
        v->outcome = KVQ_PASS;
        return;
    }
    if (kvq_res_decode(&o, r, c, rpath, err, sizeof err) != KVQ_OK) {
        snprintf(d, dl, "unreadable outputs: %s", err);
        return;
    }
    n = kvq_kivi_elems(s);
    ng = kvq_kivi_groups(s);
    if (!meta_check(d, dl, "scale", c->scale, o.scale, ng, s->meta) ||
        !meta_check(d, dl, "zero", c->zero, o.zero, ng, s->meta))
        goto done;
    if (c->level == KVQ_LEVEL_EXACT) {
        uint32_t ef = c->flags & ~KVQ_FLAG_AMBIGUOUS;
        uint64_t nb = kvq_kivi_code_bytes(s);
        if (r->flags != ef) {
            snprintf(d, dl, "flags: expected 0x%08lx, got 0x%08lx", (unsigned long)ef,
                     (unsigned long)r->flags);
            goto done;
        }
        for (uint64_t b = 0; b < nb; b++)
            if (c->codes[b] != o.codes[b]) {
                if (mism++ == 0) first = b;
            }
        if (mism) {
            uint64_t g = first / kvq_kivi_group_bytes(s);
            snprintf(d, dl, "codes: %llu of %llu bytes differ; first at byte %llu (group %llu): "
                     "expected 0x%02x, got 0x%02x", (unsigned long long)mism,
                     (unsigned long long)nb, (unsigned long long)first, (unsigned long long)g,
                     c->codes[first], o.codes[first]);
            goto done;
        }
        for (uint64_t e = 0; e < n; e++)
            if (!kvq_f32_same(c->deq[e], o.deq[e])) {
                if (mism++ == 0) first = e;
            }
        if (mism) {
            snprintf(d, dl, "deq: %llu of %llu values differ; first at element %llu: expected "
                     "0x%08lx (%a), got 0x%08lx (%a)", (unsigned long long)mism,
                     (unsigned long long)n, (unsigned long long)first,
                     (unsigned long)kvq_f32_bits(c->deq[first]), (double)c->deq[first],
                     (unsigned long)kvq_f32_bits(o.deq[first]), (double)o.deq[first]);
            goto done;
        }
    } else {
        uint32_t ef = c->flags & BOUNDED_FLAGS;
        if ((r->flags & BOUNDED_FLAGS) != ef) {
            snprintf(d, dl, "flags (bounded mask 0x%02x): expected 0x%08lx, got 0x%08lx",
                     BOUNDED_FLAGS, (unsigned long)ef, (unsigned long)(r->flags & BOUNDED_FLAGS));
            goto done;
        }
        for (uint64_t g = 0; g < ng; g++) {
            uint64_t off = kvq_kivi_group_code_offset(s, g);
            for (uint32_t i = 0; i < s->group; i++) {
                uint64_t e = kvq_kivi_elem_index(s, g, i);
                uint32_t want = kvq_unpack_code(c->real + off, i, s->bits);
                uint32_t got = kvq_unpack_code(o.codes + off, i, s->bits), alt;
                int amb = amb_alt(c, e, &alt);
                double bound, errv;
                if (got != want && !(amb && got == alt)) {
                    if (mism++ == 0)
                        snprintf(d, dl, "code of element %llu (group %llu, index %u): expected "
                                 "0x%x%s, got 0x%x", (unsigned long long)e,
                                 (unsigned long long)g, i, want,
                                 amb ? " or its ambiguous neighbour" : "", got);
                    continue;
                }
                if (!kvq_exact_kivi_deq_within(o.deq[e], got, o.scale[g], o.zero[g], &bound,
                                               &errv)) {
                    if (mism++ == 0)
                        snprintf(d, dl, "deq of element %llu: 0x%08lx (%a) is %.3e from "
                                 "code*scale+zero (code 0x%x), bound %.3e [KIVI-B-03]",
                                 (unsigned long long)e, (unsigned long)kvq_f32_bits(o.deq[e]),
                                 (double)o.deq[e], errv, got, bound);
                }
            }
        }
        if (mism) {
            size_t len = strlen(d);
            snprintf(d + len, dl - len, "; %llu of %llu elements fail",
                     (unsigned long long)mism, (unsigned long long)n);
            goto done;
        }
    }
    v->outcome = KVQ_PASS;
done:
    kvq_rout_free(&o);
}

kvq_status kvq_verify(kvq_verify_report *rep, const kvq_vfile *vf, const char *vpath,
                      const kvq_rfile *rf, const char *rpath, unsigned level_mask)
{
    const kvq_rcase **sorted;
    memset(rep, 0, sizeof *rep);
    snprintf(rep->subject, sizeof rep->subject, "%s", rf->subject);
    snprintf(rep->vectors, sizeof rep->vectors, "%s", vpath);
    snprintf(rep->results, sizeof rep->results, "%s", rpath);
    snprintf(rep->skip_reason, sizeof rep->skip_reason, "%s", rf->unavailable);
    rep->v = calloc(vf->ncases ? vf->ncases : 1, sizeof *rep->v);
    sorted = malloc((rf->ncases ? rf->ncases : 1) * sizeof *sorted);
    if (rep->v == NULL || sorted == NULL) {
        free(rep->v);
        free(sorted);
        rep->v = NULL;
        return KVQ_E_NOMEM;
    }
    for (size_t i = 0; i < rf->ncases; i++) sorted[i] = &rf->cases[i];
    qsort(sorted, rf->ncases, sizeof *sorted, cmp_rcase_id);
    /* A result for a case the vectors do not hold is an input error. */
    for (size_t i = 0; i < rf->ncases; i++) {
        int known = 0;
        for (size_t k = 0; k < vf->ncases && !known; k++)
            known = strcmp(vf->cases[k].id, rf->cases[i].id) == 0;
        if (!known) {
            snprintf(rep->skip_reason, sizeof rep->skip_reason,
                     "%s:%ld: result for unknown case '%s'", rpath, rf->cases[i].line,
                     rf->cases[i].id);
            free(sorted);
            free(rep->v);
            rep->v = NULL;
            return KVQ_E_FORMAT;
        }
    }
    for (size_t k = 0; k < vf->ncases; k++) {
        const kvq_vcase *c = &vf->cases[k];
        kvq_case_verdict *v;
        if (!(level_mask & KVQ_LEVELS_MASK(c->level))) {
            rep->deselected++;
            continue;
        }
        v = &rep->v[rep->n++];
        v->vc = c;
        if (rf->unavailable[0]) {
            v->outcome = KVQ_SKIP;
            snprintf(v->detail, sizeof v->detail, "subject unavailable: %s", rf->unavailable);
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
