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

#include <math.h>

#include "certjudge.h"
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
static int meta_check_in(char *d, size_t dl, const char *what, const char *unit, const float *exp,
                         const float *got, uint64_t ng, uint32_t meta)
{
    for (uint64_t g = 0; g < ng; g++) {
        if (kvq_f32_same(exp[g], got[g])) continue;
        if (meta == KVQ_META_F16) {
            int ok1, ok2;
            unsigned e16 = kvq_f16_bits(exp[g], &ok1), g16 = kvq_f16_bits(got[g], &ok2);
            snprintf(d, dl, "%s[%s %llu]: expected 0x%04x, got 0x%04x%s", what, unit,
                     (unsigned long long)g, e16, g16, ok2 ? "" : " (not binary16)");
        } else {
            snprintf(d, dl, "%s[%s %llu]: expected 0x%08lx (%a), got 0x%08lx (%a)", what, unit,
                     (unsigned long long)g, (unsigned long)kvq_f32_bits(exp[g]), (double)exp[g],
                     (unsigned long)kvq_f32_bits(got[g]), (double)got[g]);
        }
        return 0;
    }
    return 1;
}

static int meta_check(char *d, size_t dl, const char *what, const float *exp, const float *got,
                      uint64_t ng, uint32_t meta)
{
    return meta_check_in(d, dl, what, "group", exp, got, ng, meta);
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

/* ---- CERT cases [VER-CERT-01..06] ------------------------------------------ */

/* Codes of a CERT case at the bounded level [CERT-K8-06] [CERT-V4-01]
 * [VER-BD-03]: each the real code or, when listed in amb, its alternative.
 * Keys: one int8 byte per element (row-major over the quantized tokens);
 * values: 4-bit codes, element e = t d + c in group t (d/16) + c/16. */
static uint64_t cert_codes_bounded(char *d, size_t dl, const kvq_vcase *c, const uint8_t *got_codes)
{
    const kvq_cert_shape *s = &c->cshape;
    uint64_t ne = (uint64_t)kvq_cert_quant_tokens(s) * s->dim, mism = 0;
    for (uint64_t e = 0; e < ne; e++) {
        uint32_t want, got, alt;
        int amb = amb_alt(c, e, &alt);
        if (c->op == KVQ_OP_CERT_KEYS) {
            want = c->real[e], got = got_codes[e];
        } else {
            uint32_t t = (uint32_t)(e / s->dim), ch = (uint32_t)(e % s->dim), i;
            uint32_t j = kvq_cert_value_group_of(ch, &i);
            uint64_t off = kvq_cert_value_code_offset(s, t, j);
            want = kvq_unpack_code(c->real + off, i, KVQ_CERT_VBITS);
            got = kvq_unpack_code(got_codes + off, i, KVQ_CERT_VBITS);
        }
        if (got == want || (amb && got == alt)) continue;
        if (mism++ == 0) {
            if (c->op == KVQ_OP_CERT_KEYS)
                snprintf(d, dl, "code of element %llu (token %llu, channel %llu): expected %d%s, got %d",
                         (unsigned long long)e, (unsigned long long)(e / s->dim),
                         (unsigned long long)(e % s->dim), (int)(int8_t)want,
                         amb ? " or its ambiguous neighbour" : "", (int)(int8_t)got);
            else
                snprintf(d, dl, "code of element %llu (token %llu, channel %llu): expected 0x%x%s, got 0x%x",
                         (unsigned long long)e, (unsigned long long)(e / s->dim),
                         (unsigned long long)(e % s->dim), want,
                         amb ? " or its ambiguous neighbour" : "", got);
        }
    }
    if (mism) {
        size_t len = strlen(d);
        snprintf(d + len, dl - len, "; %llu of %llu elements fail", (unsigned long long)mism,
                 (unsigned long long)ne);
    }
    return mism;
}

/* Annotations at the bounded level [CERT-ANN-03]: got >= the exact maximum,
 * i.e. got >= RU32(exact) (RU32(x) is the least binary32 >= x, so for a
 * binary32 got the two comparisons agree); NaN never passes. */
static int ann_check(char *d, size_t dl, const char *what, const float *lo, const float *got,
                     uint32_t nb, int exact_level)
{
    for (uint32_t b = 0; b < nb; b++) {
        int ok = exact_level ? kvq_f32_same(lo[b], got[b]) : got[b] >= lo[b];
        if (ok) continue;
        snprintf(d, dl, "%s[block %u]: %s 0x%08lx (%a), got 0x%08lx (%a) [CERT-ANN-03]", what, b,
                 exact_level ? "expected" : "below the exact value", (unsigned long)kvq_f32_bits(lo[b]),
                 (double)lo[b], (unsigned long)kvq_f32_bits(got[b]), (double)got[b]);
        return 0;
    }
    return 1;
}

/* The structure of a step's outputs [CERT-DUMP-02..04] [CERT-REC-01]: what the
 * dump reader would reject, and a record that contradicts the selection. */
static int step_shape_check(char *d, size_t dl, const kvq_vcase *c, const kvq_rout *o)
{
    const kvq_cert_shape *s = &c->cshape;
    uint32_t nq = kvq_cert_full_blocks(s), nb = kvq_cert_blocks(s), ksel = 0, nprom = 0;
    for (uint32_t b = 0; b < nb; b++) {
        if (o->sel[b] > 1u || o->prom[b] > 1u) {
            snprintf(d, dl, "sel/prom[block %u]: 0x%02x/0x%02x is not a 0/1 flag", b, o->sel[b], o->prom[b]);
            return 0;
        }
        if (o->prom[b] && !o->sel[b]) {
            snprintf(d, dl, "prom[block %u]: promoted but not selected [CERT-DUMP-04]", b);
            return 0;
        }
        if (b < nq) ksel += o->sel[b], nprom += o->prom[b];
    }
    if (nb > nq && (!o->sel[nq] || o->prom[nq])) {
        snprintf(d, dl, "residual block %u: must be selected and not promoted [CERT-L-03]", nq);
        return 0;
    }
    for (uint32_t i = 0; i < s->dim; i++)
        if (!isfinite(o->out[i])) {
            snprintf(d, dl, "out[%u]: 0x%08lx is not finite", i, (unsigned long)kvq_f32_bits(o->out[i]));
            return 0;
        }
    if (!isfinite(o->rec.ekey) || !isfinite(o->rec.eval) || !isfinite(o->rec.earith)) {
        snprintf(d, dl, "record: a claim (ekey %a, eval %a, earith %a) is not finite", (double)o->rec.ekey,
                 (double)o->rec.eval, (double)o->rec.earith);
        return 0;
    }
    if (o->rec.version != 1u || o->rec.rung > 4u || o->rec.n != s->tokens || o->rec.d != s->dim ||
        (o->rec.rung < 3u && (o->rec.k_sel != ksel || o->rec.n_prom != nprom)) ||
        (o->rec.rung >= 3u && o->rec.k_sel != nq)) {
        snprintf(d, dl, "record: version %u rung %u n %u d %u k_sel %u n_prom %u contradict the step "
                 "(n %u, d %u, %u selected, %u promoted) [CERT-REC-01]", o->rec.version, o->rec.rung,
                 o->rec.n, o->rec.d, o->rec.k_sel, o->rec.n_prom, s->tokens, s->dim, ksel, nprom);
        return 0;
    }
    if (!(o->decl.u_exp >= 0.0f && o->decl.u_exp < 0x1p23f) || o->decl.acc_depth < 1u ||
        !((double)o->decl.acc_depth * 0x1p-24 < 0.5) || !(o->delta1 >= 0.0f)) {
        snprintf(d, dl, "declaration: u_exp %a, acc_depth %u, delta1 %a outside [CERT-DUMP-03]",
                 (double)o->decl.u_exp, o->decl.acc_depth, (double)o->delta1);
        return 0;
    }
    return 1;
}

/* What every case's judgement begins with: a result must exist, its status
 * must be the expected one (an expected error status is then a pass), and
 * its outputs must decode.  A skipped result is a SKIP when skip_ok (a
 * family a subject may lack [VER-CERT-03]), else a failure.  Returns 1 when
 * the outputs are in *o (the caller frees them) and judging goes on, 0 when
 * v holds the verdict. */
static int judge_start(kvq_case_verdict *v, kvq_rout *o, const kvq_vcase *c, const kvq_rcase *r,
                       const char *rpath, int skip_ok)
{
    char err[256];
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    v->outcome = KVQ_FAIL;
    if (r == NULL) {
        snprintf(d, dl, "no result for this case");
        return 0;
    }
    if (r->skipped != NULL) {
        if (skip_ok) { /* [VER-CERT-03]: never a pass */
            v->outcome = KVQ_SKIP;
            snprintf(d, dl, "skipped by the subject: %s", r->skipped);
        } else {       /* a KIVI case cannot be skipped: every subject has KIVI */
            snprintf(d, dl, "skipped by the subject (%s), but kivi-quant is required", r->skipped);
        }
        return 0;
    }
    if (r->status != c->status) {
        snprintf(d, dl, "status: expected %d (%s), got %d (%s: %s)", c->status,
                 kvq_status_name(c->status), r->status, kvq_status_name(r->status),
                 kvq_status_str(r->status));
        return 0;
    }
    if (c->status != KVQ_OK) {
        v->outcome = KVQ_PASS;
        return 0;
    }
    if (kvq_res_decode(o, r, c, rpath, err, sizeof err) != KVQ_OK) {
        snprintf(d, dl, "unreadable outputs: %s", err);
        return 0;
    }
    return 1;
}

static void judge_cert(kvq_case_verdict *v, const kvq_vcase *c, const kvq_rcase *r,
                       const char *rpath)
{
    const kvq_cert_shape *s = &c->cshape;
    kvq_rout o;
    char err[256];
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    if (!judge_start(v, &o, c, r, rpath, 1)) return;
    if (c->op == KVQ_OP_CERT_STEP) {
        kvq_cert_dump dp;
        kvq_cert_case *cc = calloc(1, sizeof *cc);
        kvq_status st;
        if (cc == NULL) {
            snprintf(d, dl, "out of memory");
            goto done;
        }
        if (!step_shape_check(d, dl, c, &o)) {
            free(cc);
            goto done;
        }
        /* The step as a dump [CERT-DUMP-02]: the case's inputs and parameters,
         * the subject's rung, selection, promotion, output, claims and
         * declaration; judged by the exact path [CERT-VER-02]. */
        memset(&dp, 0, sizeof dp);
        dp.shape = *s;
        dp.scale = c->qscale;
        dp.tau = c->prm.tau, dp.vtol = c->prm.vtol, dp.eps_guard = c->prm.eps_guard;
        dp.eps_dense = c->prm.eps_dense, dp.delta1 = o.delta1, dp.u_exp = o.decl.u_exp;
        dp.kmin = c->prm.kmin, dp.kmax = c->prm.kmax, dp.r = c->prm.r;
        dp.acc_depth = o.decl.acc_depth, dp.rescales = o.decl.rescales;
        dp.promote = c->prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD ? KVQ_PROMOTE_THRESHOLD : KVQ_PROMOTE_BUDGET;
        dp.budget = dp.promote == KVQ_PROMOTE_BUDGET ? c->prm.promote_budget : 0u;
        dp.scoring = KVQ_SCORING_FP;
        dp.ties = c->pol.ties;
        dp.q = c->q, dp.k = c->x, dp.v = c->vin;
        if (o.rec.rung >= 3u) {
            /* dense rungs attend to every token: the dump lists no block
             * (`blocks=-`), only the residual block's flag [CERT-DUMP-02] */
            uint32_t nq = kvq_cert_full_blocks(s);
            for (uint32_t b = 0; b < kvq_cert_blocks(s); b++) o.sel[b] = b >= nq, o.prom[b] = 0;
        }
        dp.rung = o.rec.rung, dp.sel = o.sel, dp.prom = o.prom, dp.out = o.out;
        dp.ekey = o.rec.ekey, dp.eval = o.rec.eval, dp.earith = o.rec.earith, dp.has_earith = 1;
        dp.line_select = dp.line_out = dp.line_claim = r->line;
        st = kvq_cert_judge(cc, &dp, c->id, err, sizeof err);
        if (st != KVQ_OK)
            snprintf(d, dl, "the exact judge cannot judge this step: %s", err);
        else if (cc->outcome != KVQ_PASS)
            snprintf(d, dl, "%.20s: %.600s", cc->check ? cc->check : "step", cc->detail);
        else
            v->outcome = KVQ_PASS;
        free(cc);
        goto done;
    }
    {
        int keys = c->op == KVQ_OP_CERT_KEYS;
        uint64_t nm = kvq_vcase_cert_meta_count(c), nb = kvq_vcase_cert_code_bytes(c), mism = 0, first = 0;
        uint32_t nbl = kvq_cert_blocks(s), meta = keys ? KVQ_META_F32 : KVQ_META_F16;
        /* keys: entry b*d + c [CERT-L-04]; values: group t*(d/16) + j */
        const char *unit = keys ? "entry b*d+c" : "group";
        if (!meta_check_in(d, dl, keys ? "sigma" : "scale", unit, c->scale, o.scale, nm, meta) ||
            !meta_check_in(d, dl, keys ? "z" : "zero", unit, c->zero, o.zero, nm, meta))
            goto done;
        if (c->level == KVQ_LEVEL_EXACT) {
            uint32_t ef = c->flags & ~KVQ_FLAG_AMBIGUOUS;
            if (r->flags != ef) {
                snprintf(d, dl, "flags: expected 0x%08lx, got 0x%08lx", (unsigned long)ef, (unsigned long)r->flags);
                goto done;
            }
            for (uint64_t b = 0; b < nb; b++)
                if (c->codes[b] != o.codes[b] && mism++ == 0) first = b;
            if (mism) {
                snprintf(d, dl, "codes: %llu of %llu bytes differ; first at byte %llu: expected 0x%02x, got 0x%02x",
                         (unsigned long long)mism, (unsigned long long)nb, (unsigned long long)first,
                         c->codes[first], o.codes[first]);
                goto done;
            }
            if (!keys && (!ann_check(d, dl, "eta", c->eta, o.eta, nbl, 1) ||
                          !ann_check(d, dl, "nu", c->nu, o.nu, nbl, 1)))
                goto done;
        } else {
            uint32_t ef = c->flags & BOUNDED_FLAGS;
            if ((r->flags & BOUNDED_FLAGS) != ef) {
                snprintf(d, dl, "flags (bounded mask 0x%02x): expected 0x%08lx, got 0x%08lx",
                         BOUNDED_FLAGS, (unsigned long)ef, (unsigned long)(r->flags & BOUNDED_FLAGS));
                goto done;
            }
            if (cert_codes_bounded(d, dl, c, o.codes)) goto done;
            if (!keys) {
                /* eta from the subject's own codes and (bitwise checked)
                 * metadata, exactly and rounded upward [CERT-ANN-01] */
                float *eta = malloc(nbl * sizeof *eta), *nu = malloc(nbl * sizeof *nu);
                kvq_status st = (eta && nu) ? kvq_exact_cert_annotate(eta, nu, c->x, o.codes, o.scale, o.zero, s)
                                            : KVQ_E_NOMEM;
                int ok = st == KVQ_OK && ann_check(d, dl, "eta", eta, o.eta, nbl, 0) &&
                         ann_check(d, dl, "nu", c->nu, o.nu, nbl, 0);
                if (st != KVQ_OK) snprintf(d, dl, "exact annotations of the subject's codes: %s", kvq_status_str(st));
                free(eta), free(nu);
                if (!ok) goto done;
            }
        }
    }
    v->outcome = KVQ_PASS;
done:
    kvq_rout_free(&o);
}

static void judge(kvq_case_verdict *v, const kvq_vcase *c, const kvq_rcase *r,
                  const char *rpath)
{
    const kvq_kivi_shape *s = &c->shape;
    kvq_rout o;
    uint64_t n, ng, mism = 0, first = 0;
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    if (c->op != KVQ_OP_KIVI_QUANT) {
        judge_cert(v, c, r, rpath);
        return;
    }
    if (!judge_start(v, &o, c, r, rpath, 0)) return;
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
