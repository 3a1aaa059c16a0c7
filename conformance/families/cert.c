/*
 * families/cert.c -- the CERT family: cert-keys, cert-values and cert-step,
 * their schemas, subject calls and judges (spec/cert.md, spec/vectors.md
 * [VEC-CERT-01..07], [VER-CERT-01..06]).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "cert_dump.h"
#include "cert_judge.h"
#include "kvq_bits.h"
#include "kvq_exact.h"
#include "lexio.h"
#include "vecio.h"

/* Flags compared at the bounded level [API-FLAGS-03] (as KIVI's). */
#define BOUNDED_FLAGS (KVQ_FLAG_ZERO_SCALE | KVQ_FLAG_SUBNORMAL)

static const kvq_cert_shape *shape_of(const kvq_case *c)
{
    return &((const kvq_cert_in *)c->in)->shape;
}

/* The rules over a case's scalars [VER-REG-07..09], from the layout's limits
 * (kvq_layout.h; the assertions tie each text to its C constant).  Output
 * sizes exist for a valid shape only [CERT-L-01]: an error case's buffers are
 * one element.  valid: kvq_cert_shape_ok. */
#define R_BLOCK 16
#define R_VGROUP 16
#define R_MAX_DIM 512
#define R_MAX_TOKENS 16777216
#define R_KCODE_MIN -128
#define R_KCODE_MAX 127
KVQ_STATIC_ASSERT(KVQ_CERT_BLOCK == R_BLOCK && KVQ_CERT_VGROUP == R_VGROUP && KVQ_CERT_MAX_DIM == R_MAX_DIM &&
                  KVQ_CERT_MAX_TOKENS == R_MAX_TOKENS && KVQ_CERT_KCODE_MIN == R_KCODE_MIN &&
                  KVQ_CERT_KCODE_MAX == R_KCODE_MAX && KVQ_CERT_VBITS == 4u &&
                  KVQ_CERT_VGROUP * KVQ_CERT_VBITS / 8u == 8u,
                  "the rules' limits are the layout's");
#define S_(x) #x
#define S(x) S_(x)
#define VALID_SHAPE                                                                             \
    "tokens >= 1 && tokens <= " S(R_MAX_TOKENS) " && dim >= " S(R_VGROUP) " && dim <= " S(R_MAX_DIM) \
    " && dim % " S(R_VGROUP) " == 0"
/* A step expected to succeed has parameters a subject must accept
 * [CERT-DUMP-03] (otherwise the case would blame the subject): tau in (0, 1],
 * 1 <= kmin <= kmax, vtol and eps_guard finite and >= 0, eps_dense >= 0,
 * r >= 1, start <= 4, the scale a positive normal binary32. */
#define VALID_STEP                                                                                 \
    VALID_SHAPE " && tau > 0 && tau <= 1 && kmin >= 1 && kmin <= kmax"                              \
    " && vtol >= 0 && vtol <= 0x1.fffffep127 && eps_guard >= 0 && eps_guard <= 0x1.fffffep127"      \
    " && eps_dense >= 0 && r >= 1 && start <= 4 && scale >= 0x1p-126 && scale <= 0x1.fffffep127"
/* counts [CERT-L-03..04]: nb = ceil(n/16) blocks, nq = n/16 full ones; keys
 * one byte a code, 16 d a block, d metadata a block; values 16 nq tokens of
 * d/16 groups of 8 code bytes */
#define N_ND "tokens * dim"
#define N_DIM "dim"
#define N_BLOCKS "cdiv(tokens, " S(R_BLOCK) ")"
#define N_OUT_BLOCKS "valid ? cdiv(tokens, " S(R_BLOCK) ") : 0"
#define N_KEY_CODE_BYTES "valid ? tokens / " S(R_BLOCK) " * (" S(R_BLOCK) " * dim) : 0"
#define N_KEY_META "valid ? tokens / " S(R_BLOCK) " * dim : 0"
#define N_VALUE_GROUPS "valid ? tokens / " S(R_BLOCK) " * " S(R_BLOCK) " * (dim / " S(R_VGROUP) ") : 0"
#define N_VALUE_CODE_BYTES "valid ? tokens / " S(R_BLOCK) " * " S(R_BLOCK) " * (dim / " S(R_VGROUP) ") * 8 : 0"
#define N_VALUE_ELEMS "valid ? tokens / " S(R_BLOCK) " * " S(R_BLOCK) " * dim : 0"

static void describe(const kvq_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s n=%u d=%u", c->op->name, shape_of(c)->tokens, shape_of(c)->dim);
}

/* ---- subject calls [VER-CERT-02] -------------------------------------------------- */

static int call_keys(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_cert_in *in = c->in;
    kvq_cert_keys_out *o = outp;
    return ((kvq_cert_quantize_keys_v1_fn)fns[0])((int8_t *)o->codes, o->sigma, o->z, flags, in->k,
                                                  &in->shape, &c->pol);
}

/* A cert-values case needs both entries: the annotations are of the
 * subject's own codes and metadata. */
static int call_values(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_cert_in *in = c->in;
    kvq_cert_values_out *o = outp;
    int st = ((kvq_cert_quantize_values_v1_fn)fns[0])(o->codes, o->scale, o->zero, flags, in->v,
                                                      &in->shape, &c->pol);
    if (st == KVQ_OK) {
        st = ((kvq_cert_annotate_v1_fn)fns[1])(o->eta, o->nu, in->v, o->codes, o->scale, o->zero, &in->shape);
        if (st != KVQ_OK) { /* only the failed annotation must have written nothing */
            kvq_out_refill(c, o, "codes");
            kvq_out_refill(c, o, "scale");
            kvq_out_refill(c, o, "zero");
            *flags = 0;
        }
    }
    return st;
}

static int call_step(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_cert_in *in = c->in;
    kvq_cert_step_out *o = outp;
    kvq_cert_params prm = in->prm;
    (void)flags;
    prm.variant = c->variant;                     /* [CERT-VAR-02] */
    return ((kvq_cert_step_v2_fn)fns[0])(o->out, o->sel, o->prom, &o->rec, &o->decl, &o->delta1, in->q,
                                         in->qscale, in->k, in->v, &prm, &in->shape, &c->pol);
}

/* ---- ref-fast's CERT entries ------------------------------------------------------- */

static int ref_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                    const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static int ref_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *v,
                      const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static int ref_annotate(float *eta, float *nu, const float *v, const uint8_t *codes, const float *scale,
                        const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

/* The step: the fast path's quantizers and step (kvq_cert_step_kv). */
static int ref_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                    float *delta1, const float *q, float scale, const float *k, const float *v,
                    const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    return kvq_cert_step_kv(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, sh, pol);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    if (sigver == 2u && strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)ref_step;
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)ref_keys;
    if (strcmp(entry, "cert_quantize_values") == 0) return (kvq_entry_fn)ref_values;
    if (strcmp(entry, "cert_annotate") == 0) return (kvq_entry_fn)ref_annotate;
    return NULL;
}

/* ---- judges [VER-CERT-01..06] ------------------------------------------------------ */

/* Codes at the bounded level [CERT-K8-06] [CERT-V4-01] [VER-BD-03]: each the
 * real code or, when listed in amb, its alternative.  Keys: one int8 byte per
 * element (row-major over the quantized tokens); values: 4-bit codes, element
 * e = t d + c in group t (d/16) + c/16. */
static uint64_t codes_bounded(char *d, size_t dl, const kvq_case *c, const uint8_t *got_codes, int keys)
{
    const kvq_cert_shape *s = shape_of(c);
    const kvq_cert_quant_ref *ref = c->ref;
    uint64_t ne = (uint64_t)kvq_cert_quant_tokens(s) * s->dim, mism = 0;
    for (uint64_t e = 0; e < ne; e++) {
        uint32_t want, got, alt;
        int amb = kvq_amb_find(&ref->amb, e, &alt);
        if (keys) {
            want = ref->real[e], got = got_codes[e];
        } else {
            uint32_t t = (uint32_t)(e / s->dim), ch = (uint32_t)(e % s->dim), i;
            uint32_t j = kvq_cert_value_group_of(ch, &i);
            uint64_t off = kvq_cert_value_code_offset(s, t, j);
            want = kvq_unpack_code(ref->real + off, i, KVQ_CERT_VBITS);
            got = kvq_unpack_code(got_codes + off, i, KVQ_CERT_VBITS);
        }
        if (got == want || (amb && got == alt)) continue;
        if (mism++ == 0) {
            if (keys)
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
static int ann_bounded(char *d, size_t dl, const char *what, const float *lo, const float *got, uint32_t nb)
{
    for (uint32_t b = 0; b < nb; b++) {
        if (got[b] >= lo[b]) continue;
        snprintf(d, dl, "%s[block %u]: below the exact value 0x%08lx (%a), got 0x%08lx (%a) [CERT-ANN-03]",
                 what, b, (unsigned long)kvq_f32_bits(lo[b]), (double)lo[b],
                 (unsigned long)kvq_f32_bits(got[b]), (double)got[b]);
        return 0;
    }
    return 1;
}

static int flags_bounded(kvq_verdict *v, const kvq_case *c, uint32_t flags)
{
    uint32_t ef = c->flags & BOUNDED_FLAGS;
    char what[48];
    if ((flags & BOUNDED_FLAGS) == ef) return 1;
    snprintf(what, sizeof what, "flags (bounded mask 0x%02x)", BOUNDED_FLAGS);
    kvq_judge_flags_at(v, c, NULL, what, ef, flags & BOUNDED_FLAGS);
    return 0;
}

static void judge_keys(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_cert_keys_out *o = outp;
    if (!kvq_judge_common(v, c, outp, flags)) return;
    if (c->level == KVQ_LEVEL_BOUNDED &&
        (!flags_bounded(v, c, flags) || codes_bounded(v->detail, sizeof v->detail, c, o->codes, 1)))
        return;
    v->outcome = KVQ_PASS;
}

static void judge_values(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_cert_values_out *o = outp, *ex = c->exp;
    const kvq_cert_in *in = c->in;
    uint32_t nbl = kvq_cert_blocks(&in->shape);
    float *eta, *nu;
    kvq_status st;
    int ok;
    if (!kvq_judge_common(v, c, outp, flags)) return;
    if (c->level == KVQ_LEVEL_EXACT) {
        v->outcome = KVQ_PASS;
        return;
    }
    if (!flags_bounded(v, c, flags) || codes_bounded(v->detail, sizeof v->detail, c, o->codes, 0)) return;
    /* eta from the subject's own codes and (bitwise checked) metadata,
     * exactly and rounded upward [CERT-ANN-01] */
    eta = malloc(nbl * sizeof *eta), nu = malloc(nbl * sizeof *nu);
    st = (eta && nu) ? kvq_exact_cert_annotate(eta, nu, in->v, o->codes, o->scale, o->zero, &in->shape)
                     : KVQ_E_NOMEM;
    ok = st == KVQ_OK && ann_bounded(v->detail, sizeof v->detail, "eta", eta, o->eta, nbl) &&
         ann_bounded(v->detail, sizeof v->detail, "nu", ex->nu, o->nu, nbl);
    if (st != KVQ_OK)
        snprintf(v->detail, sizeof v->detail, "exact annotations of the subject's codes: %s", kvq_status_str(st));
    free(eta), free(nu);
    if (ok) v->outcome = KVQ_PASS;
}

/* The structure of a step's outputs [CERT-DUMP-02..04] [CERT-REC-01]: what the
 * dump reader would reject, and a record that contradicts the selection. */
static int step_shape_check(char *d, size_t dl, const kvq_case *c, const kvq_cert_step_out *o)
{
    const kvq_cert_shape *s = shape_of(c);
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

/* The step as a dump [CERT-DUMP-02]: the case's inputs and parameters, the
 * subject's rung, selection, promotion, output, claims and declaration;
 * judged by the exact path [CERT-VER-02]. */
static void judge_step(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_cert_in *in = c->in;
    const kvq_cert_step_out *o = outp;
    const kvq_cert_shape *s = &in->shape;
    uint32_t nb = kvq_cert_blocks(s);
    char *d = v->detail, err[256];
    size_t dl = sizeof v->detail;
    kvq_cert_dump dp;
    kvq_cert_case *cc;
    uint8_t *sel, *prom;
    kvq_status st;
    (void)flags;
    if (!step_shape_check(d, dl, c, o)) return;
    cc = calloc(1, sizeof *cc);
    sel = malloc(nb), prom = malloc(nb);
    if (cc == NULL || sel == NULL || prom == NULL) {
        snprintf(d, dl, "out of memory");
        free(cc), free(sel), free(prom);
        return;
    }
    memcpy(sel, o->sel, nb);
    memcpy(prom, o->prom, nb);
    memset(&dp, 0, sizeof dp);
    dp.shape = *s;
    dp.scale = in->qscale;
    dp.tau = in->prm.tau, dp.vtol = in->prm.vtol, dp.eps_guard = in->prm.eps_guard;
    dp.eps_dense = in->prm.eps_dense, dp.delta1 = o->delta1, dp.u_exp = o->decl.u_exp;
    dp.kmin = in->prm.kmin, dp.kmax = in->prm.kmax, dp.r = in->prm.r;
    dp.acc_depth = o->decl.acc_depth, dp.rescales = o->decl.rescales;
    dp.promote = in->prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD ? KVQ_PROMOTE_THRESHOLD : KVQ_PROMOTE_BUDGET;
    dp.budget = dp.promote == KVQ_PROMOTE_BUDGET ? in->prm.promote_budget : 0u;
    dp.scoring = KVQ_SCORING_FP;
    dp.ties = c->pol.ties;
    dp.variant = c->variant;                      /* [CERT-VAR-02] */
    dp.q = in->q, dp.k = in->k, dp.v = in->v;
    if (o->rec.rung >= 3u) {
        /* dense rungs attend to every token: the dump lists no block
         * (`blocks=-`), only the residual block's flag [CERT-DUMP-02] */
        uint32_t nq = kvq_cert_full_blocks(s);
        for (uint32_t b = 0; b < nb; b++) sel[b] = b >= nq, prom[b] = 0;
    }
    dp.rung = o->rec.rung, dp.sel = sel, dp.prom = prom, dp.out = o->out;
    dp.ekey = o->rec.ekey, dp.eval = o->rec.eval, dp.earith = o->rec.earith, dp.has_earith = 1;
    dp.line_select = dp.line_out = dp.line_claim = v->result_line; /* the subject's line */
    st = kvq_cert_judge(cc, &dp, c->id, err, sizeof err);
    if (st == KVQ_OK && (cc->outcome == KVQ_PASS || (cc->check && strcmp(cc->check, "contract") == 0)))
        /* the contract's margin [CERT-CON-02]: error against the claimed sum */
        kvq_verdict_margin(v, "output error [CERT-CON-02]", cc->v.err_hi,
                           (double)o->rec.ekey + (double)o->rec.eval + (double)o->rec.earith);
    if (st != KVQ_OK)
        snprintf(d, dl, "the exact judge cannot judge this step: %s", err);
    else if (cc->outcome != KVQ_PASS)
        snprintf(d, dl, "%.20s: %.600s", cc->check ? cc->check : "step", cc->detail);
    else
        v->outcome = KVQ_PASS;
    free(cc), free(sel), free(prom);
}

/* ---- custom fields ------------------------------------------------------------------ */

/* promote=threshold | budget:<decimal> [VEC-CERT-02] */
static int promote_parse(void *dst, const char *s, const kvq_case *c, char *msg, size_t len)
{
    uint32_t *p = dst;
    (void)c;
    if (strcmp(s, "threshold") == 0) {
        *p = KVQ_CERT_PROMOTE_THRESHOLD;
        return 1;
    }
    if (strncmp(s, "budget:", 7) != 0 || !parse_u32(s + 7, p) || *p == KVQ_CERT_PROMOTE_THRESHOLD) {
        snprintf(msg, len, "'%.40s' is neither 'threshold' nor 'budget:<decimal>'", s);
        return 0;
    }
    return 1;
}

static int promote_print(FILE *f, const void *src, const kvq_case *c)
{
    uint32_t p = *(const uint32_t *)src;
    (void)c;
    return p == KVQ_CERT_PROMOTE_THRESHOLD ? fputs("threshold", f) >= 0 : fprintf(f, "budget:%u", p) >= 0;
}

static const kvq_custom PROMOTE = { promote_parse, promote_print, NULL, "^(threshold|budget:[0-9]{1,10})$" };

/* n words of 8 hex digits each. */
static int words_parse(uint32_t *w, unsigned n, const char *s, char *msg, size_t len)
{
    if (strlen(s) != 8u * n) {
        snprintf(msg, len, "%zu hex digits, expected %u", strlen(s), 8u * n);
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        if (!hexn(s + 8 * i, 8, &w[i])) {
            snprintf(msg, len, "bad hex digit in word %u", i);
            return 0;
        }
    return 1;
}

static int words_print(FILE *f, const uint32_t *w, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (fprintf(f, "%08lx", (unsigned long)w[i]) < 0) return 0;
    return 1;
}

/* The record's 15 fields in frozen order [CERT-REC-01]: 7 integers, 8 binary32. */
#define REC_WORDS 15u
static int rec_parse(void *dst, const char *s, const kvq_case *c, char *msg, size_t len)
{
    kvq_cert_record *r = dst;
    uint32_t w[REC_WORDS];
    (void)c;
    if (!words_parse(w, REC_WORDS, s, msg, len)) return 0;
    r->version = w[0], r->rung = w[1], r->n = w[2], r->d = w[3], r->k_sel = w[4];
    r->n_prom = w[5], r->checks = w[6];
    r->delta = kvq_f32_from_bits(w[7]), r->alpha_hat = kvq_f32_from_bits(w[8]);
    r->vmax = kvq_f32_from_bits(w[9]), r->ekey = kvq_f32_from_bits(w[10]);
    r->ekey_paper = kvq_f32_from_bits(w[11]), r->eval = kvq_f32_from_bits(w[12]);
    r->earith = kvq_f32_from_bits(w[13]), r->etotal = kvq_f32_from_bits(w[14]);
    return 1;
}

static int rec_print(FILE *f, const void *src, const kvq_case *c)
{
    const kvq_cert_record *r = src;
    uint32_t w[REC_WORDS];
    (void)c;
    w[0] = r->version, w[1] = r->rung, w[2] = r->n, w[3] = r->d, w[4] = r->k_sel;
    w[5] = r->n_prom, w[6] = r->checks;
    w[7] = kvq_f32_bits(r->delta), w[8] = kvq_f32_bits(r->alpha_hat), w[9] = kvq_f32_bits(r->vmax);
    w[10] = kvq_f32_bits(r->ekey), w[11] = kvq_f32_bits(r->ekey_paper);
    w[12] = kvq_f32_bits(r->eval), w[13] = kvq_f32_bits(r->earith);
    w[14] = kvq_f32_bits(r->etotal);
    return words_print(f, w, REC_WORDS);
}

static const kvq_custom RECORD = { rec_parse, rec_print, NULL, "^[0-9a-fA-F]{120}$" };

/* The declaration [CERT-AR-01]: u_exp (binary32), acc_depth, rescales. */
static int decl_parse(void *dst, const char *s, const kvq_case *c, char *msg, size_t len)
{
    kvq_cert_decl *dc = dst;
    uint32_t w[3];
    (void)c;
    if (!words_parse(w, 3, s, msg, len)) return 0;
    dc->u_exp = kvq_f32_from_bits(w[0]), dc->acc_depth = w[1], dc->rescales = w[2];
    return 1;
}

static int decl_print(FILE *f, const void *src, const kvq_case *c)
{
    const kvq_cert_decl *dc = src;
    uint32_t w[3] = { kvq_f32_bits(dc->u_exp), dc->acc_depth, dc->rescales };
    (void)c;
    return words_print(f, w, 3);
}

static const kvq_custom DECL = { decl_parse, decl_print, NULL, "^[0-9a-fA-F]{24}$" };

/* ---- schemas [VEC-CERT-02..05] ----------------------------------------------------- */

#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(kvq_cert_in, m)
#define REF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_cert_quant_ref, m)
#define SHAPE \
    { .key = "tokens", .type = KVQ_FT_U32, IN(shape.tokens) }, \
    { .key = "dim", .type = KVQ_FT_U32, IN(shape.dim) }

#define KEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_cert_keys_out, m)
#define KOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_cert_keys_out, m)
static const kvq_field KEY_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE, KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "k", .type = KVQ_FT_A_F32, .finite = 1, IN(k), .count_rule = N_ND },
    { .key = "codes", .type = KVQ_FT_A_U8, KEXP(codes), .count_rule = N_KEY_CODE_BYTES },
    { .key = "sigma", .type = KVQ_FT_A_F32, KEXP(sigma), .count_rule = N_KEY_META },
    { .key = "z", .type = KVQ_FT_A_F32, KEXP(z), .count_rule = N_KEY_META },
    { .key = "real", .type = KVQ_FT_A_U8, REF(real), .count_rule = N_KEY_CODE_BYTES },
    { .key = "amb", .type = KVQ_FT_AMB, REF(amb), .count_rule = N_KEY_CODE_BYTES },
    KVQ_F_OUT_FLAGS,
    { .key = "codes", .type = KVQ_FT_A_U8, KOUT(codes), .count_rule = N_KEY_CODE_BYTES, .cmp = KVQ_CMP_EXACT },
    /* keys: entry b*d + c [CERT-L-04] */
    { .key = "sigma", .type = KVQ_FT_A_F32, KOUT(sigma), .count_rule = N_KEY_META, .cmp = KVQ_CMP_ALWAYS,
      .unit = "entry b*d+c" },
    { .key = "z", .type = KVQ_FT_A_F32, KOUT(z), .count_rule = N_KEY_META, .cmp = KVQ_CMP_ALWAYS,
      .unit = "entry b*d+c" },
};

#define VEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_cert_values_out, m)
#define VOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_cert_values_out, m)
static const kvq_field VALUE_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE, KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "v", .type = KVQ_FT_A_F32, .finite = 1, IN(v), .count_rule = N_ND },
    { .key = "codes", .type = KVQ_FT_A_U8, VEXP(codes), .count_rule = N_VALUE_CODE_BYTES },
    /* the vector file says vscale/vzero, the results file scale/zero [VEC-CERT-03] */
    { .key = "vscale", .type = KVQ_FT_A_F16, VEXP(scale), .count_rule = N_VALUE_GROUPS },
    { .key = "vzero", .type = KVQ_FT_A_F16, VEXP(zero), .count_rule = N_VALUE_GROUPS },
    { .key = "real", .type = KVQ_FT_A_U8, REF(real), .count_rule = N_VALUE_CODE_BYTES },
    { .key = "amb", .type = KVQ_FT_AMB, REF(amb), .count_rule = N_VALUE_ELEMS },
    { .key = "eta", .type = KVQ_FT_A_F32, VEXP(eta), .count_rule = N_OUT_BLOCKS },
    { .key = "nu", .type = KVQ_FT_A_F32, VEXP(nu), .count_rule = N_OUT_BLOCKS },
    KVQ_F_OUT_FLAGS,
    { .key = "codes", .type = KVQ_FT_A_U8, VOUT(codes), .count_rule = N_VALUE_CODE_BYTES, .cmp = KVQ_CMP_EXACT },
    /* values: group t*(d/16) + j */
    { .key = "scale", .type = KVQ_FT_A_F16, VOUT(scale), .count_rule = N_VALUE_GROUPS, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "zero", .type = KVQ_FT_A_F16, VOUT(zero), .count_rule = N_VALUE_GROUPS, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "eta", .type = KVQ_FT_A_F32, VOUT(eta), .count_rule = N_OUT_BLOCKS, .cmp = KVQ_CMP_EXACT,
      .unit = "block", .cite = " [CERT-ANN-03]" },
    { .key = "nu", .type = KVQ_FT_A_F32, VOUT(nu), .count_rule = N_OUT_BLOCKS, .cmp = KVQ_CMP_EXACT,
      .unit = "block", .cite = " [CERT-ANN-03]" },
};

#define SOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_cert_step_out, m)
/* the step variants [CERT-VAR-01], on the wire by name: `variant=sparse`;
 * absent for paper, the default [VEC-CERT-08] */
static const char *const STEP_VARIANTS[KVQ_CERT_VARIANTS] = { "paper", "sparse" };

static const kvq_field STEP_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "variant", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE,
      .offset = offsetof(kvq_case, variant), .names = STEP_VARIANTS,
      .nnames = KVQ_CERT_VARIANTS, .optional = 1 },
    SHAPE, KVQ_F_POLICY, KVQ_F_STATUS,
    { .key = "scale", .type = KVQ_FT_F32, IN(qscale) },
    { .key = "tau", .type = KVQ_FT_F32, IN(prm.tau) },
    { .key = "kmin", .type = KVQ_FT_U32, IN(prm.kmin) },
    { .key = "kmax", .type = KVQ_FT_U32, IN(prm.kmax) },
    { .key = "vtol", .type = KVQ_FT_F32, IN(prm.vtol) },
    { .key = "eps_guard", .type = KVQ_FT_F32, IN(prm.eps_guard) },
    { .key = "eps_dense", .type = KVQ_FT_F32, IN(prm.eps_dense) },
    { .key = "r", .type = KVQ_FT_U32, IN(prm.r) },
    { .key = "start", .type = KVQ_FT_U32, IN(prm.start_rung) },
    { .key = "promote", .type = KVQ_FT_CUSTOM, IN(prm.promote_budget), .custom = &PROMOTE },
    { .key = "q", .type = KVQ_FT_A_F32, .finite = 1, IN(q), .count_rule = N_DIM },
    { .key = "k", .type = KVQ_FT_A_F32, .finite = 1, IN(k), .count_rule = N_ND },
    { .key = "v", .type = KVQ_FT_A_F32, .finite = 1, IN(v), .count_rule = N_ND },
    { .key = "out", .type = KVQ_FT_A_F32, SOUT(out), .count_rule = N_DIM },
    { .key = "sel", .type = KVQ_FT_A_U8, SOUT(sel), .count_rule = N_BLOCKS },
    { .key = "prom", .type = KVQ_FT_A_U8, SOUT(prom), .count_rule = N_BLOCKS },
    { .key = "rec", .type = KVQ_FT_CUSTOM, SOUT(rec), .custom = &RECORD },
    { .key = "decl", .type = KVQ_FT_CUSTOM, SOUT(decl), .custom = &DECL },
    { .key = "delta1", .type = KVQ_FT_F32, SOUT(delta1) },
};

#define BOTH_LEVELS (KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED))

const kvq_op kvq_op_cert_keys = {
    .name = "cert-keys",
    .family = &kvq_family_cert,
    .summary = "INT8 keys per block-channel: codes, sigma, z",
    .fields = KEY_FIELDS,
    .nfields = KVQ_NELEMS(KEY_FIELDS),
    .in_size = sizeof(kvq_cert_in),
    .out_size = sizeof(kvq_cert_keys_out),
    .ref_size = sizeof(kvq_cert_quant_ref),
    .levels = BOTH_LEVELS,
    .entries = { { .name = "cert_quantize_keys", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_SHAPE,
    .amb_lo = S(R_KCODE_MIN),
    .amb_hi = S(R_KCODE_MAX),
    .describe = describe,
    .solve = kvq_cert_solve_quant,
    .call = call_keys,
    .judge = judge_keys,
};

const kvq_op kvq_op_cert_values = {
    .name = "cert-values",
    .family = &kvq_family_cert,
    .summary = "INT4 values per token group with binary16 metadata, then eta and nu per block",
    .fields = VALUE_FIELDS,
    .nfields = KVQ_NELEMS(VALUE_FIELDS),
    .in_size = sizeof(kvq_cert_in),
    .out_size = sizeof(kvq_cert_values_out),
    .ref_size = sizeof(kvq_cert_quant_ref),
    .levels = BOTH_LEVELS,
    .entries = { { .name = "cert_quantize_values", .sigver = 1 },
                 { .name = "cert_annotate", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID_SHAPE,
    .amb_lo = "0",
    .amb_hi = "15", /* kvq_code_max(KVQ_CERT_VBITS) */
    .describe = describe,
    .solve = kvq_cert_solve_quant,
    .call = call_values,
    .judge = judge_values,
};

const kvq_op kvq_op_cert_step = {
    .name = "cert-step",
    .family = &kvq_family_cert,
    .summary = "one certified decode step: output, selection, record, judged by the exact path",
    .fields = STEP_FIELDS,
    .nfields = KVQ_NELEMS(STEP_FIELDS),
    .in_size = sizeof(kvq_cert_in),
    .out_size = sizeof(kvq_cert_step_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .variants = STEP_VARIANTS,
    .nvariants = KVQ_CERT_VARIANTS,
    .variants_since = "0.4.0",
    .legacy_variant = KVQ_CERT_VARIANT_SPARSE,
    /* version 2 honours prm->variant; a version-1 entry runs sparse steps only */
    .entries = { { .name = "cert_step", .sigver = 2, .older = 1,
                   .older_variants = 1u << KVQ_CERT_VARIANT_SPARSE } },
    .nentries = 1,
    .valid = VALID_STEP,
    .describe = describe,
    .solve = kvq_cert_solve_step,
    .call = call_step,
    .judge = judge_step,
};

static const kvq_op *const OPS[] = { &kvq_op_cert_keys, &kvq_op_cert_values, &kvq_op_cert_step };

const kvq_family kvq_family_cert = {
    .name = "cert",
    .title = "CERT",
    .spec = "spec/cert.md",
    .gpu = 1,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = kvq_cert_gen_count,
    .gen_case = kvq_cert_gen_case,
    .ref_entry = ref_entry,
    .commands = { { "cert", kvq_cert_main,
                    "  kvq cert DUMP... | --dump FILE [--json FILE] [--junit FILE]\n"
                    "  kvq cert --make-dump OUT --seed S [--kind sinks|concentrated|uniform|needle|constant]\n"
                    "           [--d D] [--n N] [--start-rung R] [--tau X] [--kmin N] [--kmax N] [--r N]\n"
                    "           [--vtol X] [--eps-guard X] [--eps-dense X] [--budget P]\n"
                    "           [--variant paper|sparse] [--claim-paper] [--scale-ekey X] [--scale-eval X]\n"
                    "           [--perturb-output]\n" } },
};
