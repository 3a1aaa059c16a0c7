/*
 * families/pkv.c -- the PKV family: pkv-kmeans, pkv-quant, pkv-dequant,
 * pkv-key-flush and pkv-value-step, their schemas, subject calls and judges
 * (spec/pkv.md, spec/vectors.md [VEC-PKV-01..09]).
 *
 * pkv-kmeans (bounded level only): k-means is not unique, so the returned set
 *   is judged by properties [PKV-KM-06]: every token's cluster optimal for the
 *   set under exact distances (near-ties accepted), and a set reported
 *   converged a Lloyd fixed point within the stopping rule.
 * pkv-quant: given a bank, the indices (min-max argmin, ties to the lowest
 *   index, the V threshold), residuals, KIVI codes and metadata, then the
 *   dequantization of the subject's own outputs: bit for bit at the exact
 *   level; at the bounded level every index accepted [PKV-A-04] [PKV-V-04] and
 *   every dequantized value within [PKV-B-01] of its input.
 * pkv-dequant, pkv-key-flush, pkv-value-step: exact level, bit for bit; the
 *   decode operations carry a sequence of flushes or steps in one case.
 * A mismatch names the requirement of spec/pkv.md it violates [VEC-PKV-05].
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact_pkv.h"
#include "pkv.h"
#include "rule.h"
#include "vecio.h"

static const kvq_pkv_in *in_of(const kvq_case *c)
{
    return c->in;
}

kvq_pkv_params kvq_pkv_case_params(const kvq_case *c)
{
    const kvq_pkv_in *in = in_of(c);
    kvq_pkv_params p = kvq_pkv_params_default(in->p.bits);
    if (c->op == &kvq_op_pkv_kmeans) {
        p.bits = 4u;
        p.patterns = in->p.patterns;
        p.max_iter = in->p.max_iter;
        p.seed = in->p.seed;
        p.init = c->variant;
        return p;
    }
    p.group = in->p.group;
    p.meta = in->p.meta;
    p.residual = in->p.group;
    if (c->op == &kvq_op_pkv_quant || c->op == &kvq_op_pkv_value_step) {
        p.v_threshold = in->p.v_threshold;
        p.alpha = in->p.alpha;
    }
    if (c->op == &kvq_op_pkv_quant) p.key_dist = c->variant;
    if (c->op == &kvq_op_pkv_key_flush || c->op == &kvq_op_pkv_value_step) {
        p.residual = in->p.residual;
        p.cap = in->p.cap;
    }
    if (c->op == &kvq_op_pkv_key_flush) p.update = c->variant;
    if (c->op == &kvq_op_pkv_value_step) p.window = in->p.window;
    return p;
}

/* ---- rules [VER-REG-07..09] ------------------------------------------------------
 * From the headers' limits (the assertion ties each number to its constant).
 * valid: kvq_pkv_params_ok over the fields the line carries, and the shape
 * checks of the entry points (ref/fast/pkv.c, [PKV-ERR-01]). */
#define R_MAX_GROUP 4096
#define R_MAX_DIM 16777216
#define R_MAX_ELEMS 68719476736
#define R_MAX_PAT 65535
KVQ_STATIC_ASSERT(KVQ_MAX_GROUP == R_MAX_GROUP && KVQ_MAX_DIM == R_MAX_DIM && KVQ_MAX_ELEMS == R_MAX_ELEMS &&
                  KVQ_PKV_MAX_PATTERNS == R_MAX_PAT && KVQ_PKV_VALUE == 2u && KVQ_PKV_ALPHA_01 == 2u &&
                  KVQ_PKV_NO_PATTERN == 0xFFFFu,
                  "the rules' limits are the layout's");
#define S_(x) #x
#define S(x) S_(x)
#define KIVI_OK                                                                                    \
    "(bits == 2 || bits == 4) && group >= 8 && group <= " S(R_MAX_GROUP) " && group % 8 == 0"     \
    " && (meta == \"f32\" || meta == \"f16\")"
#define VTHR_OK "v_threshold <= 1 && alpha <= 2"
#define EXTENT(t, d) t " >= 1 && " d " >= 1 && " t " <= " S(R_MAX_DIM) " && " d " <= " S(R_MAX_DIM) \
    " && " t " * " d " <= " S(R_MAX_ELEMS)
#define LIMIT "(cap == 0 ? " S(R_MAX_PAT) " : cap)"

#define VALID_KMEANS                                                                               \
    "patterns >= 1 && patterns <= " S(R_MAX_PAT) " && max_iter >= 1 && max_iter <= 1000 && "      \
    EXTENT("tokens", "dim") " && tokens >= patterns"
/* the bounded level's bound [PKV-B-01] is derived for binary32 metadata */
#define VALID_QUANT                                                                                \
    KIVI_OK " && " VTHR_OK " && kind <= 2 && " EXTENT("tokens", "dim")                             \
    " && (kind == 2 ? dim % group == 0 : tokens % group == 0) && npat >= 1 && npat <= " S(R_MAX_PAT) \
    " && (level == \"exact\" || meta == \"f32\")"
#define VALID_DEQUANT                                                                              \
    KIVI_OK " && kind <= 2 && " EXTENT("tokens", "dim")                                            \
    " && (kind == 2 ? dim % group == 0 : tokens % group == 0) && npat >= 1 && npat <= " S(R_MAX_PAT)
#define NFIN_KEY "max(npat, min(npat + steps, " LIMIT "))"
#define VALID_KEY                                                                                  \
    KIVI_OK " && residual >= 1 && residual % group == 0 && cap <= " S(R_MAX_PAT) " && steps >= 1"  \
    " && " EXTENT("residual", "dim") " && npat >= 1 && npat <= " S(R_MAX_PAT) " && npat <= room"   \
    " && " NFIN_KEY " <= room"
#define NFIN_VAL "max(npat, min(npat + steps / window, " LIMIT "))"
#define NQ_VAL "(steps > residual ? steps - residual : 0)"
#define VALID_VAL                                                                                  \
    KIVI_OK " && " VTHR_OK " && residual >= 1 && residual % group == 0 && window >= 1 && cap <= "   \
    S(R_MAX_PAT) " && steps >= 1 && " EXTENT("min(steps, residual + 1)", "dim") " && dim % group == 0"        \
    " && npat <= " S(R_MAX_PAT) " && npat <= room && " NFIN_VAL " <= room"                         \
    " && (npat >= 1 || steps <= residual || window <= residual + 1)"

/* ---- describe -------------------------------------------------------------------- */

static const char *const KINDS[3] = { "key-prefill", "key-decode", "value" };
static const char *const ALPHAS[3] = { "0.05", "0.10", "0.01" };

static const char *kind_name(uint32_t k)
{
    return k < 3u ? KINDS[k] : "kind?";
}

static const char *alpha_name(uint32_t a)
{
    return a < 3u ? ALPHAS[a] : "alpha?";
}

static const char *variant_name(const kvq_case *c)
{
    return c->op->variants != NULL && c->variant < c->op->nvariants ? c->op->variants[c->variant] : "?";
}

static void describe_kmeans(const kvq_case *c, char *buf, size_t len)
{
    const kvq_pkv_in *in = in_of(c);
    snprintf(buf, len, "%s M=%u L=%u d=%u max_iter=%u", variant_name(c), in->p.patterns, in->tokens, in->dim,
             in->p.max_iter);
}

static void describe_quant(const kvq_case *c, char *buf, size_t len)
{
    const kvq_pkv_in *in = in_of(c);
    snprintf(buf, len, "%s %s bits=%u G=%u %s T=%u d=%u npat=%u%s%s", kind_name(in->kind), variant_name(c),
             in->p.bits, in->p.group, in->p.meta ? "f16" : "f32", in->tokens, in->dim, in->npat,
             in->kind == KVQ_PKV_VALUE && in->p.v_threshold ? " alpha=" : "",
             in->kind == KVQ_PKV_VALUE && in->p.v_threshold ? alpha_name(in->p.alpha) : "");
}

static void describe_dequant(const kvq_case *c, char *buf, size_t len)
{
    const kvq_pkv_in *in = in_of(c);
    snprintf(buf, len, "%s bits=%u G=%u %s T=%u d=%u npat=%u", kind_name(in->kind), in->p.bits, in->p.group,
             in->p.meta ? "f16" : "f32", in->tokens, in->dim, in->npat);
}

static void describe_key(const kvq_case *c, char *buf, size_t len)
{
    const kvq_pkv_in *in = in_of(c);
    snprintf(buf, len, "%s bits=%u G=%u R=%u flushes=%u d=%u npat=%u cap=%u", variant_name(c), in->p.bits,
             in->p.group, in->p.residual, in->steps, in->dim, in->npat, in->p.cap);
}

static void describe_val(const kvq_case *c, char *buf, size_t len)
{
    const kvq_pkv_in *in = in_of(c);
    snprintf(buf, len, "bits=%u G=%u R=%u window=%u steps=%u d=%u npat=%u cap=%u alpha=%s%s", in->p.bits,
             in->p.group, in->p.residual, in->p.window, in->steps, in->dim, in->npat, in->p.cap,
             alpha_name(in->p.alpha), in->p.v_threshold ? "" : " no-threshold");
}

/* ---- calls ------------------------------------------------------------------------ */

static int call_kmeans(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_kmeans_out *o = outp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    (void)flags;
    return ((kvq_pkv_kmeans_v1_fn)fns[0])(o->patterns, o->cluster, &o->iters, &o->converged, in->x, in->tokens,
                                          in->dim, &p);
}

static const char *const QUANT_KEYS[] = { "index", "resid", "codes", "scale", "zero" };

/* Quantize, then dequantize the subject's own outputs [VER-RUN-01]. */
static int call_quant(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_out *o = outp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint32_t df = 0;
    int st = ((kvq_pkv_quantize_v1_fn)fns[0])(o->codes, o->scale, o->zero, o->index, o->resid, flags, in->x,
                                              in->kind, in->tokens, in->dim, in->bank, in->npat, &p, &c->pol);
    if (st != KVQ_OK) return st;
    st = ((kvq_pkv_dequantize_v1_fn)fns[1])(o->deq, &df, o->codes, o->scale, o->zero, o->index, in->kind,
                                            in->tokens, in->dim, in->bank, in->npat, &p, &c->pol);
    if (st != KVQ_OK) {
        /* what must be untouched [API-ERR-01] is what the failed call owns */
        for (size_t k = 0; k < KVQ_NELEMS(QUANT_KEYS); k++) kvq_out_refill(c, o, QUANT_KEYS[k]);
        *flags = df;
        return st;
    }
    *flags |= df;
    return st;
}

static int call_dequant(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_out *o = outp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    return ((kvq_pkv_dequantize_v1_fn)fns[0])(o->deq, flags, in->codes, in->scale, in->zero, in->index, in->kind,
                                              in->tokens, in->dim, in->bank, in->npat, &p, &c->pol);
}

static const char *const SEQ_KEYS[] = { "bank_end", "index", "resid", "codes", "scale", "zero" };

/* A sequence failed at some step: the earlier steps' outputs are not the
 * failing call's, and an error result carries none [API-ERR-01]. */
static int seq_failed(const kvq_case *c, kvq_pkv_out *o, int st)
{
    for (size_t k = 0; k < KVQ_NELEMS(SEQ_KEYS); k++) kvq_out_refill(c, o, SEQ_KEYS[k]);
    return st;
}

/* The caller's bank: room patterns, the initial ones copied in. */
static float *seq_bank(const kvq_pkv_in *in)
{
    uint64_t n = (uint64_t)(in->room > in->npat ? in->room : in->npat) * in->dim;
    float *b = malloc((size_t)(n ? n : 1u) * sizeof *b);
    if (b != NULL && in->npat) memcpy(b, in->bank, (size_t)in->npat * in->dim * sizeof *b);
    return b;
}

/* The subject's bank at the end of the sequence into the output (as many
 * patterns as both hold). */
static void seq_bank_out(const kvq_case *c, kvq_pkv_out *o, const float *bank, uint32_t np)
{
    uint64_t want = kvq_count(c, kvq_op_output(c->op, "bank_end"), o) / (in_of(c)->dim ? in_of(c)->dim : 1u);
    uint64_t k = np < want ? np : want;
    o->npat = np;
    if (k) memcpy(o->bank, bank, (size_t)(k * in_of(c)->dim) * sizeof *bank);
}

/* Per-call output buffers of a sequence's steps: a subject writes into
 * these, and the runner copies what the case's outputs hold room for (an
 * error case has none). */
typedef struct stepbuf {
    uint16_t *index;
    float *resid, *scale, *zero;
    uint8_t *codes;
    uint64_t nt, ne, nc, ng;
} stepbuf;

static void step_free(stepbuf *b)
{
    free(b->index);
    free(b->resid);
    free(b->scale);
    free(b->zero);
    free(b->codes);
}

/* Buffers for a block of `tokens` x d; sizes from the parameters when they are
 * valid, one element otherwise (the subject must reject the call). */
static int step_alloc(stepbuf *b, const kvq_pkv_params *p, uint32_t kind, uint32_t tokens, uint32_t d)
{
    kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, d);
    memset(b, 0, sizeof *b);
    if (kvq_kivi_params_ok(&ks) && kvq_kivi_shape_ok(&ks)) {
        b->nt = tokens;
        b->ne = (uint64_t)tokens * d;
        b->nc = b->ne * p->bits / 8u;
        b->ng = kvq_kivi_groups(&ks);
    }
    b->index = malloc((size_t)(b->nt ? b->nt : 1u) * sizeof *b->index);
    b->resid = malloc((size_t)(b->ne ? b->ne : 1u) * sizeof *b->resid);
    b->codes = malloc((size_t)(b->nc ? b->nc : 1u));
    b->scale = malloc((size_t)(b->ng ? b->ng : 1u) * sizeof *b->scale);
    b->zero = malloc((size_t)(b->ng ? b->ng : 1u) * sizeof *b->zero);
    if (!b->index || !b->resid || !b->codes || !b->scale || !b->zero) {
        step_free(b);
        return 0;
    }
    return 1;
}

/* Block q of the sequence's outputs from the step's buffers, when the case's
 * outputs hold it. */
static void step_store(const kvq_case *c, kvq_pkv_out *o, const stepbuf *b, uint64_t q)
{
    uint64_t want = kvq_count(c, kvq_op_output(c->op, "index"), o);
    if (b->nt == 0u || (q + 1u) * b->nt > want) return;
    memcpy(o->index + q * b->nt, b->index, (size_t)b->nt * sizeof *b->index);
    memcpy(o->resid + q * b->ne, b->resid, (size_t)b->ne * sizeof *b->resid);
    memcpy(o->codes + q * b->nc, b->codes, (size_t)b->nc);
    memcpy(o->scale + q * b->ng, b->scale, (size_t)b->ng * sizeof *b->scale);
    memcpy(o->zero + q * b->ng, b->zero, (size_t)b->ng * sizeof *b->zero);
}

/* Flush after flush, the bank carried [PKV-U-01] [PKV-U-03]. */
static int call_key(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_out *o = outp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t rd = (uint64_t)p.residual * in->dim;
    uint32_t np = in->npat;
    float *bank = seq_bank(in);
    stepbuf b;
    int st = KVQ_OK;
    if (bank == NULL) return KVQ_E_NOMEM;
    if (!step_alloc(&b, &p, KVQ_PKV_KEY_DECODE, p.residual, in->dim)) {
        free(bank);
        return KVQ_E_NOMEM;
    }
    *flags = 0;
    if (in->steps == 0u) st = KVQ_E_SHAPE; /* an empty sequence: a shape error of the case itself */
    for (uint32_t f = 0; f < in->steps && st == KVQ_OK; f++) {
        uint32_t ff = 0;
        st = ((kvq_pkv_key_flush_v1_fn)fns[0])(b.codes, b.scale, b.zero, b.index, b.resid, &ff, bank, &np,
                                               in->room, in->x + f * rd, in->dim, &p, &c->pol);
        if (st != KVQ_OK) {
            *flags = ff;
            st = seq_failed(c, o, st);
        } else {
            *flags |= ff;
            step_store(c, o, &b, f);
        }
    }
    if (st == KVQ_OK) seq_bank_out(c, o, bank, np);
    free(bank);
    step_free(&b);
    return st;
}

/* Step after step: the window is the last min(s, R + 1) values, the bank
 * carried; a step that quantizes gives the next value's outputs [PKV-U-05].
 * From a step whose *count is not the schedule's on, no more outputs are
 * stored: those left unwritten differ. */
static int call_val(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_pkv_in *in = c->in;
    kvq_pkv_out *o = outp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t d = in->dim, nq = 0;
    uint32_t np = in->npat;
    float *bank = seq_bank(in);
    stepbuf b;
    int st = KVQ_OK, off = 0;
    if (bank == NULL) return KVQ_E_NOMEM;
    if (!step_alloc(&b, &p, KVQ_PKV_VALUE, 1u, in->dim)) {
        free(bank);
        return KVQ_E_NOMEM;
    }
    *flags = 0;
    if (in->steps == 0u) st = KVQ_E_SHAPE; /* an empty sequence: a shape error of the case itself */
    for (uint64_t s = 1; s <= in->steps && st == KVQ_OK; s++) {
        uint32_t held = s < (uint64_t)p.residual + 1u ? (uint32_t)s : p.residual + 1u, count = 0, ff = 0;
        st = ((kvq_pkv_value_step_v1_fn)fns[0])(b.codes, b.scale, b.zero, b.index, b.resid, &ff, &count, bank, &np,
                                                in->room, in->x + (s - held) * d, held, s, in->dim, &p, &c->pol);
        if (st != KVQ_OK) {
            *flags = ff;
            st = seq_failed(c, o, st);
            break;
        }
        if (count != (held == p.residual + 1u ? 1u : 0u)) off = 1;
        if (count && !off) {
            *flags |= ff;
            step_store(c, o, &b, nq++);
        }
    }
    if (st == KVQ_OK) seq_bank_out(c, o, bank, np);
    free(bank);
    step_free(&b);
    return st;
}

/* ---- judges [VEC-PKV-05..06] --------------------------------------------------------------- */

static void cite(kvq_verdict *v, const char *text)
{
    size_t len = strlen(v->detail);
    if (len < sizeof v->detail) snprintf(v->detail + len, sizeof v->detail - len, "%s", text);
}

static int field_ok(kvq_verdict *v, const kvq_case *c, const void *out, const char *key, const char *req)
{
    const kvq_field *f = kvq_op_output(c->op, key);
    if (f == NULL || kvq_judge_field(v, c, f, c->exp, out)) return 1;
    cite(v, req);
    return 0;
}

static int flags_ok(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags, const char *req)
{
    uint32_t want = c->flags & ~KVQ_FLAG_AMBIGUOUS;
    if (flags == want) return 1;
    kvq_judge_flags_at(v, c, out, "flags", want, flags);
    cite(v, req);
    return 0;
}

/* The metric of a block's assignment [PKV-A-03]. */
static uint32_t metric_of(const kvq_case *c, uint32_t kind)
{
    return kind == KVQ_PKV_KEY_PREFILL ? kvq_pkv_case_params(c).key_dist : KVQ_PKV_DIST_MINMAX;
}

/* Pinned distances of patterns a and b to x equal (the pinned argmin of [a, b]
 * and of [b, a] both take the first). */
static int pinned_tie(const float *x, const float *bank, uint32_t d, uint32_t dist, uint32_t a, uint32_t b)
{
    float *two = malloc(2u * (size_t)d * sizeof *two);
    kvq_exact_pkv_assign_out o1, o2;
    if (two == NULL) return 0;
    memcpy(two, bank + (uint64_t)a * d, d * sizeof *two);
    memcpy(two + d, bank + (uint64_t)b * d, d * sizeof *two);
    kvq_exact_pkv_assign(&o1, x, two, 2u, d, dist, 0u);
    memcpy(two, bank + (uint64_t)b * d, d * sizeof *two);
    memcpy(two + d, bank + (uint64_t)a * d, d * sizeof *two);
    kvq_exact_pkv_assign(&o2, x, two, 2u, d, dist, 0u);
    free(two);
    return o1.pinned == 0u && o2.pinned == 0u;
}

/* A wrong stored index: which requirement its difference violates. */
static void index_mismatch(kvq_verdict *v, const char *what, uint64_t t, uint32_t want, uint32_t got,
                           const float *x, const float *bank, uint32_t nb, uint32_t d, uint32_t kind,
                           uint32_t dist, int vthr)
{
    const char *req;
    if (kind == KVQ_PKV_VALUE && vthr && (want == KVQ_PKV_NO_PATTERN || got == KVQ_PKV_NO_PATTERN))
        req = want == KVQ_PKV_NO_PATTERN ? " (the V threshold rejects the pattern: rho > rho*(d, alpha), "
                                           "c = 2 z / sqrt(5 d)) [PKV-V-01] [PKV-V-02] [PKV-V-03]"
                                         : " (the V threshold keeps the pattern: rho <= rho*(d, alpha), "
                                           "c = 2 z / sqrt(5 d)) [PKV-V-01] [PKV-V-02]";
    else if (got == KVQ_PKV_NO_PATTERN || got >= nb)
        req = kind == KVQ_PKV_VALUE ? " (no such pattern) [PKV-L-03] [PKV-A-02]"
                                    : " (keys never reject) [PKV-V-03] [PKV-A-02]";
    else if (pinned_tie(x, bank, d, dist, want, got))
        req = " (equal pinned distances: the lowest index) [PKV-A-02]";
    else if (dist == KVQ_PKV_DIST_EUCLID)
        req = " (least squared Euclidean distance, variant euclid) [PKV-A-03] [PKV-KM-02]";
    else
        req = " (least min-max distance max_i (x_i - m_i) - min_i (x_i - m_i)) [PKV-A-01] [PKV-A-03]";
    snprintf(v->detail, sizeof v->detail, "%s of token %llu: expected %u, got %u%s", what, (unsigned long long)t,
             want, got, req);
}

/* Every stored index against the expected one, token t of block blk at x. */
static int indices_ok(kvq_verdict *v, const kvq_case *c, const uint16_t *want, const uint16_t *got, uint64_t n,
                      const float *x, const float *bank, uint32_t nb, uint32_t kind, const char *what)
{
    const kvq_pkv_in *in = in_of(c);
    for (uint64_t t = 0; t < n; t++)
        if (want[t] != got[t]) {
            index_mismatch(v, what, t, want[t], got[t], x + t * in->dim, bank, nb, in->dim, kind,
                           metric_of(c, kind), in->p.v_threshold);
            return 0;
        }
    return 1;
}

static void judge_kmeans(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_pkv_in *in = in_of(c);
    const kvq_pkv_kmeans_out *o = outp;
    uint32_t M = in->p.patterns;
    kvq_exact_pkv_lloyd_out lo;
    (void)flags;
    for (uint64_t e = 0; e < (uint64_t)M * in->dim; e++)
        if (!isfinite(o->patterns[e]) || fabsf(o->patterns[e]) > KVQ_PKV_MAX_ABS) {
            snprintf(v->detail, sizeof v->detail, "pattern %llu, dimension %llu: %a is not a finite value of the "
                     "domain [PKV-DOM-01] [PKV-KM-04]", (unsigned long long)(e / in->dim),
                     (unsigned long long)(e % in->dim), (double)o->patterns[e]);
            return;
        }
    for (uint32_t t = 0; t < in->tokens; t++)
        if (o->cluster[t] >= M) {
            snprintf(v->detail, sizeof v->detail, "cluster of token %u: %u, not one of the %u patterns [PKV-KM-02]",
                     t, o->cluster[t], M);
            return;
        }
    if (o->converged > 1u || o->iters < 1u || o->iters > in->p.max_iter ||
        (!o->converged && o->iters != in->p.max_iter)) {
        snprintf(v->detail, sizeof v->detail, "iters %u, converged %u: at most max_iter = %u iterations run, and a "
                 "loop the stopping rule did not end runs all of them [PKV-KM-05]", o->iters, o->converged,
                 in->p.max_iter);
        return;
    }
    if (kvq_exact_pkv_lloyd_check(&lo, in->x, in->tokens, in->dim, o->patterns, M, o->cluster, o->converged) !=
        KVQ_OK) {
        snprintf(v->detail, sizeof v->detail, "the exact path could not check the set (out of memory)");
        return;
    }
    if (lo.bad_assign) {
        snprintf(v->detail, sizeof v->detail, "%llu of %u tokens are not in a cluster of least exact squared "
                 "Euclidean distance to the returned set (near-ties accepted) [PKV-KM-06] [PKV-KM-02] [PKV-A-04]",
                 (unsigned long long)lo.bad_assign, in->tokens);
        return;
    }
    if (lo.bad_move) {
        snprintf(v->detail, sizeof v->detail, "reported converged, but %llu centroid coordinates lie farther from "
                 "their cluster's exact mean than the stopping rule allows (worst %.3g of the bound): not a Lloyd "
                 "fixed point [PKV-KM-06] [PKV-KM-05]", (unsigned long long)lo.bad_move, lo.worst);
        return;
    }
    if (o->converged) kvq_verdict_margin(v, "|mean - centroid| [PKV-KM-06]", lo.worst, 1.0);
    v->outcome = KVQ_PASS;
}

/* Is got an accepted index of token x at the bounded level [PKV-A-04]
 * [PKV-V-04]?  lo, hi: the certified bracket of rho* (values with the
 * threshold only). */
static int index_accepted(const kvq_case *c, const float *x, uint32_t want, uint32_t real, uint32_t ties,
                          uint32_t got, mpfr_t lo, mpfr_t hi)
{
    const kvq_pkv_in *in = in_of(c);
    int vthr = in->kind == KVQ_PKV_VALUE && in->p.v_threshold, amb;
    uint32_t dist = metric_of(c, in->kind);
    kvq_exact_pkv_assign_out a;
    if (got == want || got == real) return 1;
    if (ties == 0u) return 0;
    if (got == KVQ_PKV_NO_PATTERN) {
        if (!vthr) return 0;
        if (ties & KVQ_PKV_TIE_V) return 1;
        for (uint32_t j = 0; j < in->npat; j++) {
            kvq_exact_pkv_assign(&a, x, in->bank, in->npat, in->dim, dist, j);
            if (a.accepted && (!kvq_exact_pkv_v_decide(&amb, x, in->bank + (uint64_t)j * in->dim, in->dim, lo, hi) ||
                               amb))
                return 1;
        }
        return 0;
    }
    if (got >= in->npat) return 0;
    kvq_exact_pkv_assign(&a, x, in->bank, in->npat, in->dim, dist, got);
    if (!a.accepted) return 0;
    if (!vthr) return 1;
    return kvq_exact_pkv_v_decide(&amb, x, in->bank + (uint64_t)got * in->dim, in->dim, lo, hi) || amb;
}

static void judge_quant_bounded(kvq_verdict *v, const kvq_case *c, const kvq_pkv_out *o)
{
    const kvq_pkv_in *in = in_of(c);
    const kvq_pkv_out *ex = c->exp;
    const kvq_pkv_ref *rf = c->ref;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    mpfr_t lo, hi;
    uint64_t viol = 0;
    double worst = 0.0;
    int have = 0, ok = 1;
    mpfr_inits2(KVQ_PKV_XPREC_RHO, lo, hi, (mpfr_ptr)0);
    for (uint32_t t = 0; t < in->tokens && ok; t++) {
        const float *x = in->x + (uint64_t)t * in->dim;
        if (o->index[t] == ex->index[t] || o->index[t] == rf->real[t]) continue;
        if (!have && in->kind == KVQ_PKV_VALUE && in->p.v_threshold) {
            if (kvq_exact_pkv_rho_bracket(lo, hi, in->dim, in->p.alpha) != KVQ_OK) {
                snprintf(v->detail, sizeof v->detail, "the exact path could not bracket rho*");
                ok = 0;
                break;
            }
            have = 1;
        }
        if (!index_accepted(c, x, ex->index[t], rf->real[t], rf->ties[t], o->index[t], lo, hi)) {
            index_mismatch(v, "index", t, rf->real[t], o->index[t], x, in->bank, in->npat, in->dim, in->kind,
                           metric_of(c, in->kind), in->p.v_threshold);
            cite(v, rf->ties[t] ? " (a near-tie: not one of the accepted indices) [PKV-A-04] [PKV-V-04]"
                                : " (decided: the real index) [PKV-A-04] [PKV-V-04]");
            ok = 0;
        }
    }
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    if (!ok) return;
    if (kvq_exact_pkv_err_check(&viol, &worst, in->x, o->deq, o->index, in->kind, in->tokens, in->dim, in->bank,
                                in->npat, &p) != KVQ_OK) {
        snprintf(v->detail, sizeof v->detail, "the exact path could not evaluate the bound [PKV-B-01]");
        return;
    }
    if (viol) {
        snprintf(v->detail, sizeof v->detail, "deq: %llu of %llu values farther from their input than the bound "
                 "(1 + 2^-16) w / (2 cmax) + 2^-20 K + 2^-121 (worst %.3g of it) [PKV-B-01] [PKV-D-01]",
                 (unsigned long long)viol, (unsigned long long)in->tokens * in->dim, worst);
        return;
    }
    kvq_verdict_margin(v, "|x - deq| [PKV-B-01]", worst, 1.0);
    v->outcome = KVQ_PASS;
}

static void judge_quant(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_pkv_in *in = in_of(c);
    const kvq_pkv_out *o = outp, *ex = c->exp;
    if (c->level == KVQ_LEVEL_BOUNDED) {
        judge_quant_bounded(v, c, o);
        return;
    }
    if (!indices_ok(v, c, ex->index, o->index, in->tokens, in->x, in->bank, in->npat, in->kind, "index")) return;
    if (!field_ok(v, c, outp, "resid", " (r = RN32(x - m) with m the stored index's pattern) [PKV-Q-02]")) return;
    if (!field_ok(v, c, outp, "scale", " [PKV-Q-03] [KIVI-Q-02]")) return;
    if (!field_ok(v, c, outp, "zero", " [PKV-Q-03] [KIVI-Q-03]")) return;
    if (!field_ok(v, c, outp, "codes", " [PKV-Q-03] [KIVI-Q-04]")) return;
    if (!field_ok(v, c, outp, "deq", " (y = RN32(fmaf(c, s, z) + m)) [PKV-D-01]")) return;
    if (!flags_ok(v, c, outp, flags, " [PKV-Q-03] [KIVI-Q-07]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_dequant(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    if (!field_ok(v, c, outp, "deq", " (y = RN32(fmaf(c, s, z) + m), raw y = fmaf(c, s, z)) [PKV-D-01]")) return;
    if (!flags_ok(v, c, outp, flags, " [PKV-D-01] [KIVI-D-03]")) return;
    v->outcome = KVQ_PASS;
}

/* The bank's patterns (from the expected final bank) that existed when
 * block b was matched. */
static uint32_t key_bank_at(const kvq_case *c, uint32_t b)
{
    const kvq_pkv_in *in = in_of(c);
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t lim = kvq_pkv_bank_limit(&p), n = (uint64_t)in->npat + b + (p.update == KVQ_PKV_UPDATE_AFTER);
    if (n > lim) n = lim;
    return in->npat > n ? in->npat : (uint32_t)n;
}

static uint32_t val_bank_at(const kvq_case *c, uint64_t step)
{
    const kvq_pkv_in *in = in_of(c);
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t lim = kvq_pkv_bank_limit(&p), n = (uint64_t)in->npat + step / p.window;
    if (n > lim) n = lim;
    return in->npat > n ? in->npat : (uint32_t)n;
}

static int npat_ok(kvq_verdict *v, const kvq_case *c, const kvq_pkv_out *o)
{
    const kvq_pkv_out *ex = c->exp;
    if (o->npat == ex->npat) return 1;
    snprintf(v->detail, sizeof v->detail, "npat_end: expected %u patterns after the sequence, got %u (one centre per "
             "flush / per window of decoded tokens, up to the cap and the format limit) [PKV-U-01] [PKV-U-04]",
             ex->npat, o->npat);
    return 0;
}

static void judge_key(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_pkv_in *in = in_of(c);
    const kvq_pkv_out *o = outp, *ex = c->exp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t R = p.residual;
    if (!npat_ok(v, c, o)) return;
    if (!field_ok(v, c, outp, "bank_end", " (the centre RN32((min + max) / 2) of the flushed window, per dimension) "
                                      "[PKV-U-02] [PKV-U-01]"))
        return;
    for (uint32_t b = 0; b < in->steps; b++)
        if (memcmp(ex->index + b * R, o->index + b * R, (size_t)R * sizeof *o->index) != 0) {
            uint32_t nb = key_bank_at(c, b);
            indices_ok(v, c, ex->index + b * R, o->index + b * R, R, in->x + b * R * in->dim, ex->bank, nb,
                       KVQ_PKV_KEY_DECODE, "index");
            cite(v, p.update == KVQ_PKV_UPDATE_AFTER
                        ? " (flush matched against the bank with its own centre, variant after) [PKV-U-03]"
                        : " (flush matched against the bank before its centre joins, variant before) [PKV-U-03]");
            {
                char tail[96];
                snprintf(tail, sizeof tail, "; flush %u", b);
                cite(v, tail);
            }
            return;
        }
    if (!field_ok(v, c, outp, "resid", " (r = RN32(x - m) with m the stored index's pattern) [PKV-Q-02]")) return;
    if (!field_ok(v, c, outp, "scale", " [PKV-Q-03] [KIVI-Q-02]")) return;
    if (!field_ok(v, c, outp, "zero", " [PKV-Q-03] [KIVI-Q-03]")) return;
    if (!field_ok(v, c, outp, "codes", " [PKV-Q-03] [KIVI-Q-04]")) return;
    if (!flags_ok(v, c, outp, flags, " [PKV-Q-03] [KIVI-Q-07]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_val(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_pkv_in *in = in_of(c);
    const kvq_pkv_out *o = outp, *ex = c->exp;
    kvq_pkv_params p = kvq_pkv_case_params(c);
    uint64_t nq = kvq_count(c, kvq_op_output(c->op, "index"), outp);
    if (!npat_ok(v, c, o)) return;
    if (!field_ok(v, c, outp, "bank_end", " (the centre RN32((min + max) / 2) of the R most recent values, per "
                                      "dimension, at every step s with s mod window = 0) [PKV-U-02] [PKV-U-05]"))
        return;
    for (uint64_t q = 0; q < nq; q++)
        if (ex->index[q] != o->index[q]) {
            uint64_t step = q + p.residual + 1u; /* the step at which value q leaves the window */
            char tail[96];
            index_mismatch(v, "index", q, ex->index[q], o->index[q], in->x + q * in->dim, ex->bank,
                           val_bank_at(c, step), in->dim, KVQ_PKV_VALUE, KVQ_PKV_DIST_MINMAX, p.v_threshold);
            snprintf(tail, sizeof tail, "; value %llu leaving the window at step %llu [PKV-U-05]",
                     (unsigned long long)q, (unsigned long long)step);
            cite(v, tail);
            return;
        }
    if (!field_ok(v, c, outp, "resid", " (r = RN32(x - m) with m the stored index's pattern) [PKV-Q-02]")) return;
    if (!field_ok(v, c, outp, "scale", " [PKV-Q-03] [KIVI-Q-02]")) return;
    if (!field_ok(v, c, outp, "zero", " [PKV-Q-03] [KIVI-Q-03]")) return;
    if (!field_ok(v, c, outp, "codes", " [PKV-Q-03] [KIVI-Q-04]")) return;
    if (!flags_ok(v, c, outp, flags, " [PKV-Q-03] [KIVI-Q-07]")) return;
    v->outcome = KVQ_PASS;
}

/* ---- ref-fast's PKV entries (the fast path returns kvq_status, an entry int) ---- */

static int ref_kmeans(float *patterns, uint32_t *cluster, uint32_t *iters, uint32_t *converged, const float *x,
                      uint32_t tokens, uint32_t dim, const kvq_pkv_params *p)
{
    return kvq_pkv_kmeans(patterns, cluster, iters, converged, x, tokens, dim, p);
}

static int ref_quantize(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid, uint32_t *flags,
                        const float *x, uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                        uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_pkv_quantize(codes, scale, zero, index, resid, flags, x, kind, tokens, dim, bank, npat, p, pol);
}

static int ref_dequantize(float *y, uint32_t *flags, const uint8_t *codes, const float *scale, const float *zero,
                          const uint16_t *index, uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                          uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_pkv_dequantize(y, flags, codes, scale, zero, index, kind, tokens, dim, bank, npat, p, pol);
}

static int ref_key_flush(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid, uint32_t *flags,
                         float *bank, uint32_t *npat, uint32_t bank_cap, const float *window, uint32_t dim,
                         const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_pkv_key_flush(codes, scale, zero, index, resid, flags, bank, npat, bank_cap, window, dim, p, pol);
}

static int ref_value_step(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid,
                          uint32_t *flags, uint32_t *count, float *bank, uint32_t *npat, uint32_t bank_cap,
                          const float *window, uint32_t held, uint64_t step, uint32_t dim,
                          const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_pkv_value_step(codes, scale, zero, index, resid, flags, count, bank, npat, bank_cap, window, held,
                              step, dim, p, pol);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "pkv_kmeans") == 0) return (kvq_entry_fn)ref_kmeans;
    if (strcmp(entry, "pkv_quantize") == 0) return (kvq_entry_fn)ref_quantize;
    if (strcmp(entry, "pkv_dequantize") == 0) return (kvq_entry_fn)ref_dequantize;
    if (strcmp(entry, "pkv_key_flush") == 0) return (kvq_entry_fn)ref_key_flush;
    if (strcmp(entry, "pkv_value_step") == 0) return (kvq_entry_fn)ref_value_step;
    return NULL;
}

/* ---- schemas [VEC-PKV-02..03] ------------------------------------------------------ */

static const char *const METAS[] = { "f32", "f16" };
/* the variants [PKV-P-02], on the wire by name, absent for the default */
static const char *const KMEANS_VARIANTS[] = { "spread", "random" };  /* init */
static const char *const QUANT_VARIANTS[] = { "minmax", "euclid" };   /* key_dist */
static const char *const KEY_VARIANTS[] = { "after", "before" };      /* update */
KVQ_STATIC_ASSERT(KVQ_PKV_INIT_RANDOM == 1u && KVQ_PKV_DIST_EUCLID == 1u && KVQ_PKV_UPDATE_BEFORE == 1u,
                  "variant index = the switch's value");

#define VARIANT(vn)                                                                               \
    { .key = "variant", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE, .offset = offsetof(kvq_case, variant), \
      .names = vn, .nnames = 2, .optional = 1 }
#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(kvq_pkv_in, m)
#define U32(k, m) { .key = k, .type = KVQ_FT_U32, IN(m) }
#define KIVI_P U32("bits", p.bits), U32("group", p.group), \
    { .key = "meta", .type = KVQ_FT_ENUM, IN(p.meta), .names = METAS, .nnames = 2 }
#define EXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_pkv_out, m)
#define REF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_pkv_ref, m)
#define OUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_pkv_out, m)
#define KOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_pkv_kmeans_out, m)

static const kvq_field KMEANS_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, VARIANT(KMEANS_VARIANTS),
    U32("patterns", p.patterns), U32("max_iter", p.max_iter), U32("seed", p.seed),
    U32("tokens", tokens), U32("dim", dim), KVQ_F_STATUS,
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = "tokens * dim", .finite = 1 },
    { .key = "patterns", .type = KVQ_FT_A_F32, KOUT(patterns), .count_rule = "valid ? patterns * dim : 0" },
    { .key = "cluster", .type = KVQ_FT_A_U32, KOUT(cluster), .count_rule = "valid ? tokens : 0" },
    { .key = "iters", .type = KVQ_FT_U32, KOUT(iters) },
    { .key = "converged", .type = KVQ_FT_U32, KOUT(converged) },
};

#define Q_T "valid ? tokens : 0"
#define Q_TD "valid ? tokens * dim : 0"
#define Q_CODES "valid ? tokens * dim * bits / 8 : 0"
#define Q_GROUPS "valid ? tokens * dim / group : 0"
static const kvq_field QUANT_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, VARIANT(QUANT_VARIANTS),
    U32("kind", kind), KIVI_P, U32("v_threshold", p.v_threshold), U32("alpha", p.alpha),
    U32("tokens", tokens), U32("dim", dim), U32("npat", npat),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = "tokens * dim", .finite = 1 },
    { .key = "bank", .type = KVQ_FT_A_F32, IN(bank), .count_rule = "npat * dim", .finite = 1 },
    { .key = "index", .type = KVQ_FT_A_U16, EXP(index), .count_rule = Q_T },
    { .key = "resid", .type = KVQ_FT_A_F32, EXP(resid), .count_rule = Q_TD },
    { .key = "codes", .type = KVQ_FT_A_U8, EXP(codes), .count_rule = Q_CODES },
    { .key = "scale", .type = KVQ_FT_A_META, EXP(scale), .count_rule = Q_GROUPS },
    { .key = "zero", .type = KVQ_FT_A_META, EXP(zero), .count_rule = Q_GROUPS },
    { .key = "deq", .type = KVQ_FT_A_F32, EXP(deq), .count_rule = Q_TD },
    { .key = "real", .type = KVQ_FT_A_U16, REF(real), .count_rule = Q_T },
    { .key = "nearties", .type = KVQ_FT_A_U8, REF(ties), .count_rule = Q_T },
    KVQ_F_OUT_FLAGS,
    { .key = "index", .type = KVQ_FT_A_U16, OUT(index), .count_rule = Q_T, .cmp = KVQ_CMP_EXACT, .unit = "token" },
    { .key = "resid", .type = KVQ_FT_A_F32, OUT(resid), .count_rule = Q_TD, .cmp = KVQ_CMP_EXACT },
    { .key = "codes", .type = KVQ_FT_A_U8, OUT(codes), .count_rule = Q_CODES, .cmp = KVQ_CMP_EXACT },
    { .key = "scale", .type = KVQ_FT_A_META, OUT(scale), .count_rule = Q_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "zero", .type = KVQ_FT_A_META, OUT(zero), .count_rule = Q_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "deq", .type = KVQ_FT_A_F32, OUT(deq), .count_rule = Q_TD, .cmp = KVQ_CMP_EXACT },
};

/* inputs of an error case exist whatever its parameters (a zero group reads
 * no metadata) */
#define D_CODES "cdiv(tokens * dim * bits, 8)"
#define D_GROUPS "group >= 1 ? cdiv(tokens * dim, group) : 0"
static const kvq_field DEQUANT_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    U32("kind", kind), KIVI_P, U32("tokens", tokens), U32("dim", dim), U32("npat", npat),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "codes", .type = KVQ_FT_A_U8, IN(codes), .count_rule = D_CODES },
    { .key = "scale", .type = KVQ_FT_A_META, IN(scale), .count_rule = D_GROUPS },
    { .key = "zero", .type = KVQ_FT_A_META, IN(zero), .count_rule = D_GROUPS },
    { .key = "index", .type = KVQ_FT_A_U16, IN(index), .count_rule = "tokens" },
    { .key = "bank", .type = KVQ_FT_A_F32, IN(bank), .count_rule = "npat * dim", .finite = 1 },
    { .key = "deq", .type = KVQ_FT_A_F32, EXP(deq), .count_rule = Q_TD },
    KVQ_F_OUT_FLAGS,
    { .key = "deq", .type = KVQ_FT_A_F32, OUT(deq), .count_rule = Q_TD, .cmp = KVQ_CMP_EXACT },
};

#define K_T "valid ? steps * residual : 0"
#define K_TD "valid ? steps * residual * dim : 0"
#define K_CODES "valid ? steps * residual * dim * bits / 8 : 0"
#define K_GROUPS "valid ? steps * residual * dim / group : 0"
#define K_BANK "valid ? " NFIN_KEY " * dim : 0"
static const kvq_field KEY_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, VARIANT(KEY_VARIANTS),
    KIVI_P, U32("residual", p.residual), U32("cap", p.cap),
    U32("steps", steps), U32("dim", dim), U32("npat", npat), U32("room", room),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = "steps * residual * dim", .finite = 1 },
    { .key = "bank", .type = KVQ_FT_A_F32, IN(bank), .count_rule = "npat * dim", .finite = 1 },
    { .key = "npat_end", .type = KVQ_FT_U32, EXP(npat) },
    { .key = "bank_end", .type = KVQ_FT_A_F32, EXP(bank), .count_rule = K_BANK },
    { .key = "index", .type = KVQ_FT_A_U16, EXP(index), .count_rule = K_T },
    { .key = "resid", .type = KVQ_FT_A_F32, EXP(resid), .count_rule = K_TD },
    { .key = "codes", .type = KVQ_FT_A_U8, EXP(codes), .count_rule = K_CODES },
    { .key = "scale", .type = KVQ_FT_A_META, EXP(scale), .count_rule = K_GROUPS },
    { .key = "zero", .type = KVQ_FT_A_META, EXP(zero), .count_rule = K_GROUPS },
    KVQ_F_OUT_FLAGS,
    { .key = "npat_end", .type = KVQ_FT_U32, OUT(npat), .cmp = KVQ_CMP_EXACT },
    { .key = "bank_end", .type = KVQ_FT_A_F32, OUT(bank), .count_rule = K_BANK, .cmp = KVQ_CMP_EXACT },
    { .key = "index", .type = KVQ_FT_A_U16, OUT(index), .count_rule = K_T, .cmp = KVQ_CMP_EXACT, .unit = "token" },
    { .key = "resid", .type = KVQ_FT_A_F32, OUT(resid), .count_rule = K_TD, .cmp = KVQ_CMP_EXACT },
    { .key = "codes", .type = KVQ_FT_A_U8, OUT(codes), .count_rule = K_CODES, .cmp = KVQ_CMP_EXACT },
    { .key = "scale", .type = KVQ_FT_A_META, OUT(scale), .count_rule = K_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "zero", .type = KVQ_FT_A_META, OUT(zero), .count_rule = K_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
};

#define V_T "valid ? " NQ_VAL " : 0"
#define V_TD "valid ? " NQ_VAL " * dim : 0"
#define V_CODES "valid ? " NQ_VAL " * dim * bits / 8 : 0"
#define V_GROUPS "valid ? " NQ_VAL " * dim / group : 0"
#define V_BANK "valid ? " NFIN_VAL " * dim : 0"
static const kvq_field VAL_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    KIVI_P, U32("residual", p.residual), U32("window", p.window), U32("cap", p.cap),
    U32("v_threshold", p.v_threshold), U32("alpha", p.alpha),
    U32("steps", steps), U32("dim", dim), U32("npat", npat), U32("room", room),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "x", .type = KVQ_FT_A_F32, IN(x), .count_rule = "steps * dim", .finite = 1 },
    { .key = "bank", .type = KVQ_FT_A_F32, IN(bank), .count_rule = "npat * dim", .finite = 1 },
    { .key = "npat_end", .type = KVQ_FT_U32, EXP(npat) },
    { .key = "bank_end", .type = KVQ_FT_A_F32, EXP(bank), .count_rule = V_BANK },
    { .key = "index", .type = KVQ_FT_A_U16, EXP(index), .count_rule = V_T },
    { .key = "resid", .type = KVQ_FT_A_F32, EXP(resid), .count_rule = V_TD },
    { .key = "codes", .type = KVQ_FT_A_U8, EXP(codes), .count_rule = V_CODES },
    { .key = "scale", .type = KVQ_FT_A_META, EXP(scale), .count_rule = V_GROUPS },
    { .key = "zero", .type = KVQ_FT_A_META, EXP(zero), .count_rule = V_GROUPS },
    KVQ_F_OUT_FLAGS,
    { .key = "npat_end", .type = KVQ_FT_U32, OUT(npat), .cmp = KVQ_CMP_EXACT },
    { .key = "bank_end", .type = KVQ_FT_A_F32, OUT(bank), .count_rule = V_BANK, .cmp = KVQ_CMP_EXACT },
    { .key = "index", .type = KVQ_FT_A_U16, OUT(index), .count_rule = V_T, .cmp = KVQ_CMP_EXACT, .unit = "value" },
    { .key = "resid", .type = KVQ_FT_A_F32, OUT(resid), .count_rule = V_TD, .cmp = KVQ_CMP_EXACT },
    { .key = "codes", .type = KVQ_FT_A_U8, OUT(codes), .count_rule = V_CODES, .cmp = KVQ_CMP_EXACT },
    { .key = "scale", .type = KVQ_FT_A_META, OUT(scale), .count_rule = V_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "zero", .type = KVQ_FT_A_META, OUT(zero), .count_rule = V_GROUPS, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
};

#define BOTH (KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED))
#define META_HALF "meta == \"f16\""

const kvq_op kvq_op_pkv_kmeans = {
    .name = "pkv-kmeans",
    .family = &kvq_family_pkv,
    .summary = "a pattern set of L prefill tokens by Lloyd k-means, judged as a fixed point with optimal clusters",
    .fields = KMEANS_FIELDS,
    .nfields = KVQ_NELEMS(KMEANS_FIELDS),
    .in_size = sizeof(kvq_pkv_in),
    .out_size = sizeof(kvq_pkv_kmeans_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .variants = KMEANS_VARIANTS,
    .nvariants = 2,
    .entries = { { .name = "pkv_kmeans", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_KMEANS,
    .describe = describe_kmeans,
    .solve = kvq_pkv_solve_kmeans,
    .call = call_kmeans,
    .judge = judge_kmeans,
};

const kvq_op kvq_op_pkv_quant = {
    .name = "pkv-quant",
    .family = &kvq_family_pkv,
    .summary = "a block against a bank: pattern indices, V threshold, residuals, KIVI codes; then dequantize",
    .fields = QUANT_FIELDS,
    .nfields = KVQ_NELEMS(QUANT_FIELDS),
    .in_size = sizeof(kvq_pkv_in),
    .out_size = sizeof(kvq_pkv_out),
    .ref_size = sizeof(kvq_pkv_ref),
    .levels = BOTH,
    .variants = QUANT_VARIANTS,
    .nvariants = 2,
    .entries = { { .name = "pkv_quantize", .sigver = 1 }, { .name = "pkv_dequantize", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID_QUANT,
    .meta_half = META_HALF,
    .describe = describe_quant,
    .solve = kvq_pkv_solve_quant,
    .call = call_quant,
    .judge = judge_quant,
};

const kvq_op kvq_op_pkv_dequant = {
    .name = "pkv-dequant",
    .family = &kvq_family_pkv,
    .summary = "stored codes, metadata and pattern indices back to values against a bank",
    .fields = DEQUANT_FIELDS,
    .nfields = KVQ_NELEMS(DEQUANT_FIELDS),
    .in_size = sizeof(kvq_pkv_in),
    .out_size = sizeof(kvq_pkv_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .entries = { { .name = "pkv_dequantize", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_DEQUANT,
    .meta_half = META_HALF,
    .describe = describe_dequant,
    .solve = kvq_pkv_solve_dequant,
    .call = call_dequant,
    .judge = judge_dequant,
};

const kvq_op kvq_op_pkv_key_flush = {
    .name = "pkv-key-flush",
    .family = &kvq_family_pkv,
    .summary = "decode key flushes in sequence: each window's Chebyshev centre joins the bank, the window is quantized",
    .fields = KEY_FIELDS,
    .nfields = KVQ_NELEMS(KEY_FIELDS),
    .in_size = sizeof(kvq_pkv_in),
    .out_size = sizeof(kvq_pkv_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .variants = KEY_VARIANTS,
    .nvariants = 2,
    .entries = { { .name = "pkv_key_flush", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_KEY,
    .meta_half = META_HALF,
    .describe = describe_key,
    .solve = kvq_pkv_solve_key_flush,
    .call = call_key,
    .judge = judge_key,
};

const kvq_op kvq_op_pkv_value_step = {
    .name = "pkv-value-step",
    .family = &kvq_family_pkv,
    .summary = "decode value steps in sequence: a centre per window of steps, the value leaving the window quantized",
    .fields = VAL_FIELDS,
    .nfields = KVQ_NELEMS(VAL_FIELDS),
    .in_size = sizeof(kvq_pkv_in),
    .out_size = sizeof(kvq_pkv_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .entries = { { .name = "pkv_value_step", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_VAL,
    .meta_half = META_HALF,
    .describe = describe_val,
    .solve = kvq_pkv_solve_value_step,
    .call = call_val,
    .judge = judge_val,
};

static const kvq_op *const OPS[] = { &kvq_op_pkv_kmeans, &kvq_op_pkv_quant, &kvq_op_pkv_dequant,
                                     &kvq_op_pkv_key_flush, &kvq_op_pkv_value_step };

const kvq_family kvq_family_pkv = {
    .name = "pkv",
    .title = "PKV",
    .spec = "spec/pkv.md",
    .gpu = 1,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = kvq_pkv_gen_count,
    .gen_case = kvq_pkv_gen_case,
    .ref_entry = ref_entry,
};
