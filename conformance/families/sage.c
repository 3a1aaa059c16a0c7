/*
 * families/sage.c -- the SAGE family: sage-qk, sage-p, sage-v, sage-ds,
 * sage-pv, sage-attn and sage-dq, their schemas, subject calls and judges
 * (spec/sage.md, spec/vectors.md [VEC-SAGE-01..12]).
 *
 * The quantizer operations are pinned to one binary32 sequence and allow the
 * exact level only: status, every output array bit for bit, then the flags
 * word.  sage-pv (one channel of P~V through the accumulator model and the
 * FP32 buffer) has both levels: bit for bit with the model, or within the
 * interval of the accumulator class K(13, 14) [VEC-SAGE-08].  A mismatch
 * names the field and the requirement of spec/sage.md it violates
 * [VEC-SAGE-05].
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "rule.h"
#include "sage.h"
#include "vecio.h"

static const kvq_sage_in *in_of(const kvq_case *c)
{
    return c->in;
}

/* The rules over a case's scalars [VER-REG-07..09], from the layout's limits
 * (kvq_sage_layout.h, kvq_sage.h; the assertions tie each text to its C
 * constant).  Each operation's outputs exist only when its parameters and
 * shape are valid. */
#define R_MAX_TOKENS 16777216
#define R_MAX_BLOCK 1024
#define R_MAX_WARPS 16
#define R_MAX_ROWCOL 16777216
#define R_PV_MAX_ROWS 256
#define R_PV_MAX_N 65536
KVQ_STATIC_ASSERT(KVQ_SAGE_MAX_TOKENS == R_MAX_TOKENS && KVQ_SAGE_MAX_BLOCK == R_MAX_BLOCK &&
                  KVQ_SAGE_MAX_WARPS == R_MAX_WARPS && KVQ_SAGE_MAX_ROWCOL == R_MAX_ROWCOL &&
                  KVQ_SAGE_PV_MAX_ROWS == R_PV_MAX_ROWS && KVQ_SAGE_PV_MAX_N == R_PV_MAX_N &&
                  KVQ_SAGE_Q_SLOTS_PER_WARP == 8u && KVQ_SAGE_K_SLOTS_PER_BLOCK == 4u &&
                  KVQ_SAGE_FP8_E5M2 == 1u && KVQ_SAGE_PV_MMA_SM90 == 1u && KVQ_SAGE_GRAN_BLOCK == 2u &&
                  KVQ_SAGE_ROUND_PUBLIC == 1u,
                  "the rules' limits are the layout's");
#define S_(x) #x
#define S(x) S_(x)
/* kvq_sage_shape_ok [SAGE-L-02] */
#define SHAPE_OK "tokens >= 1 && tokens <= " S(R_MAX_TOKENS) " && (dim == 64 || dim == 128)"
#define SEG_OK "seg >= 1 && seg <= " S(R_MAX_TOKENS)
/* kvq_sage_qk_ok [SAGE-MAP-02] */
#define QK_BLOCKS_OK                                                                                 \
    "(bits == 4 || bits == 8) && gran <= 2 && (role == \"q\" ? warps >= 1 && warps <= "                \
    S(R_MAX_WARPS) " && block <= " S(R_MAX_BLOCK) " && block >= 16 * warps && block % (16 * warps) == 0" \
    " : role == \"k\" && warps == 1 && block >= 32 && block <= " S(R_MAX_BLOCK) " && block % 32 == 0)"
#define QK_OK "rounding <= 1 && " QK_BLOCKS_OK
#define VALID_QK SHAPE_OK " && " QK_OK " && " SEG_OK
/* kvq_sage_qk_ok without the rounding, which dequantization does not read [SAGE-Q-08] */
#define VALID_DQ SHAPE_OK " && " QK_BLOCKS_OK
#define VALID_P "rows >= 1 && rows <= " S(R_MAX_ROWCOL) " && cols >= 1 && cols <= " S(R_MAX_ROWCOL) " && fmt <= 1"
#define VALID_V SHAPE_OK " && fmt <= 1"
#define VALID_DS SHAPE_OK " && rows >= 1 && rows <= " S(R_MAX_ROWCOL)
#define VALID_PV                                                                                    \
    "rows >= 1 && rows <= " S(R_PV_MAX_ROWS) " && n >= 1 && n <= " S(R_PV_MAX_N)                   \
    " && fmt <= 1 && model <= 1 && (buffer == 0 || buffer == 64 || buffer == 128)"
/* kvq_sage_attn_ok [SAGE-ATT-01] */
#define VALID_ATTN                                                                                 \
    "nq >= 1 && nq <= " S(R_MAX_TOKENS) " && nk >= 1 && nk <= " S(R_MAX_TOKENS) " && dim == 128"   \
    " && (causal == 0 || causal == 1) && (buffer == 0 || buffer == 64 || buffer == 128)"          \
    " && (bits == 4 || bits == 8) && tau >= 0x1p-126 && tau <= 0x1p16"
/* kvq_sage_attn_ok and kvq_sage_mha_ok [SAGE-MHA-01] */
#define R_MHA_MAX_HEADS 1024
KVQ_STATIC_ASSERT(KVQ_SAGE_MHA_MAX_HEADS == R_MHA_MAX_HEADS && KVQ_SAGE_IN_FORMATS == 3u,
                  "the rules' head limit is the layout's");
#define VALID_MHA                                                                                  \
    VALID_ATTN " && hq >= 1 && hq <= " S(R_MHA_MAX_HEADS) " && hkv >= 1 && hkv <= hq && hq % hkv == 0"

/* ---- counts -------------------------------------------------------------------- */

#define N_ND "tokens * dim"
#define N_RC "rows * cols"
#define N_QM "rows * dim"
#define N_OUT_ND "valid ? tokens * dim : 0"
#define N_OUT_RC "valid ? rows * cols : 0"
#define N_OUT_ROWS "valid ? rows : 0"
#define N_OUT_DIM "valid ? dim : 0"
/* The means exist when the smoothing's parameters are valid: a sage-qk case
 * that the quantizer rejects has smoothed (and written its means) first
 * [SAGE-SM-01]: ceil(N / seg) rows of d. */
#define N_MEAN "" SHAPE_OK " && " SEG_OK " ? cdiv(tokens, seg) * dim : 0"
/* ceil(N / b) blocks of kvq_sage_slots_per_block slots [SAGE-MAP-03] */
#define N_SCALES                                                                                   \
    "valid ? cdiv(tokens, block) * (role == \"q\" ? (gran == \"thread\" ? 8 * warps : gran == \"warp\" ? warps : 1)" \
    " : gran == \"thread\" ? 4 : 1) : 0"
#define N_CODE_BYTES "valid ? tokens * dim * bits / 8 : 0"
#define N_DS "valid ? rows * tokens : 0"
#define N_DQ_CODES "valid ? tokens * dim * bits / 8 : 0"
#define N_PV_CODES "rows * n"
#define N_PV_ROWS "rows"
#define N_PV_OUT "valid ? rows : 0"
#define N_ATTN_Q "nq * 128"
#define N_ATTN_K "nk * 128"
#define N_ATTN_OUT "valid ? nq * 128 : 0"
#define N_MHA_Q "hq * nq * 128"
#define N_MHA_K "hkv * nk * 128"
#define N_MHA_OUT "valid ? hq * nq * 128 : 0"

static const char *const ROLES[] = { "q", "k" };
static const char *const GRANS[] = { "thread", "warp", "block" };
static const char *const ROUNDINGS[] = { "paper", "public" };
static const char *const FMTS[] = { "e4m3", "e5m2" };
static const char *const MODELS[] = { "wgmma", "mma-sm90" };
static const char *const IN_FMTS[] = { "binary32", "binary16", "bfloat16" };

static const char *name_of(const char *const *names, uint32_t n, uint32_t v)
{
    return v < n ? names[v] : "?";
}

static void describe_qk(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_in *in = in_of(c);
    snprintf(buf, len, "%s INT%u %s b=%u cw=%u %s seg=%u N=%u d=%u", name_of(ROLES, 2, in->qk.role),
             in->qk.bits, name_of(GRANS, 3, in->qk.gran), in->qk.block, in->qk.warps,
             name_of(ROUNDINGS, 2, in->qk.rounding), in->seg, in->shape.tokens, in->shape.dim);
}

static void describe_dq(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_in *in = in_of(c);
    snprintf(buf, len, "%s INT%u %s b=%u cw=%u N=%u d=%u", name_of(ROLES, 2, in->qk.role), in->qk.bits,
             name_of(GRANS, 3, in->qk.gran), in->qk.block, in->qk.warps, in->shape.tokens, in->shape.dim);
}

static void describe_p(const kvq_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s %ux%u", name_of(FMTS, 2, in_of(c)->fmt), in_of(c)->rows, in_of(c)->cols);
}

static void describe_v(const kvq_case *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s N=%u d=%u", name_of(FMTS, 2, in_of(c)->fmt), in_of(c)->shape.tokens,
             in_of(c)->shape.dim);
}

static void describe_ds(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_in *in = in_of(c);
    snprintf(buf, len, "rows=%u N=%u d=%u tau=%a", in->rows, in->shape.tokens, in->shape.dim, (double)in->tau);
}

static void describe_pv(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_in *in = in_of(c);
    snprintf(buf, len, "%s %s rows=%u n=%u buffer=%u", name_of(MODELS, 2, in->model), name_of(FMTS, 2, in->fmt),
             in->rows, in->n, in->buffer);
}

static void describe_attn(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_attn *a = &in_of(c)->attn;
    snprintf(buf, len, "nq=%u nk=%u %s buffer=%u INT%u", a->nq, a->nk, a->causal ? "causal" : "full", a->buffer,
             a->qk_bits);
}

static void describe_mha(const kvq_case *c, char *buf, size_t len)
{
    const kvq_sage_in *in = in_of(c);
    const kvq_sage_attn *a = &in->attn;
    snprintf(buf, len, "hq=%u hkv=%u nq=%u nk=%u %s %s buffer=%u INT%u", in->hq, in->hkv, a->nq, a->nk,
             name_of(IN_FMTS, 3, in->in_fmt), a->causal ? "causal" : "full", a->buffer, a->qk_bits);
}

/* ---- calls ------------------------------------------------------------------------ */

/* Smooth with the case's segment, then quantize the smoothed values. */
static int call_qk(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_qk_out *o = outp;
    kvq_sage_smooth_v1_fn smooth = (kvq_sage_smooth_v1_fn)fns[0];
    kvq_sage_quantize_qk_v1_fn quantize = (kvq_sage_quantize_qk_v1_fn)fns[1];
    uint64_t n = kvq_sage_elems(&in->shape);
    float *xs = malloc((size_t)(n ? n : 1) * sizeof *xs);
    int st;
    if (xs == NULL) return KVQ_E_NOMEM;
    st = smooth(xs, o->mean, in->x, &in->shape, in->seg);
    if (st == KVQ_OK) {
        st = quantize(o->codes, o->scale, flags, xs, &in->shape, &in->qk, &c->pol);
        /* the smoothing succeeded and wrote its means; what must be untouched
         * [API-ERR-01] is what the failed quantization owns */
        if (st != KVQ_OK) kvq_out_refill(c, o, "mean");
    }
    free(xs);
    return st;
}

static int call_dq(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_dq_out *o = outp;
    (void)flags;
    return ((kvq_sage_dequantize_qk_v1_fn)fns[0])(o->y, in->a, in->c, &in->shape, &in->qk);
}

static int call_p(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_p_out *o = outp;
    return ((kvq_sage_quantize_p_v1_fn)fns[0])(o->codes, o->rowsum, flags, in->x, in->rows, in->cols,
                                               in->fmt, &c->pol);
}

static int call_v(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_v_out *o = outp;
    return ((kvq_sage_quantize_v_v1_fn)fns[0])(o->codes, o->scale, flags, in->x, &in->shape, in->fmt,
                                               &c->pol);
}

static int call_ds(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_ds_out *o = outp;
    (void)flags;
    return ((kvq_sage_delta_s_v1_fn)fns[0])(o->ds, in->qm, in->x, in->rows, &in->shape, in->tau);
}

static int call_pv(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_pv_out *o = outp;
    (void)flags;
    return ((kvq_sage_pv_v1_fn)fns[0])(o->d, in->a, in->b, in->c, in->rows, in->n, in->fmt, in->model, in->buffer);
}

static int call_attn(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_attn_out *o = outp;
    (void)flags;
    return ((kvq_sage_attention_v1_fn)fns[0])(o->o, in->x, in->qm, in->v, &in->attn, &c->pol);
}

static int call_mha(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_sage_in *in = c->in;
    kvq_sage_attn_out *o = outp;
    (void)flags;
    return ((kvq_sage_attention_mha_v1_fn)fns[0])(o->o, in->x, in->qm, in->v, &in->attn, in->hq, in->hkv,
                                                  in->in_fmt, &c->pol);
}

/* ---- judges [VEC-SAGE-05] -------------------------------------------------------------- */

/* Append the requirement a mismatch violates to the verdict's detail. */
static void cite(kvq_verdict *v, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(v->detail);
    if (len < sizeof v->detail) snprintf(v->detail + len, sizeof v->detail - len, fmt, a, b);
}

/* One output field, bit for bit; on a mismatch its requirement is appended. */
static int field_ok(kvq_verdict *v, const kvq_case *c, const void *out, const char *key, const char *fmt,
                    const char *a, const char *b)
{
    const kvq_field *f = kvq_op_output(c->op, key);
    if (f == NULL || kvq_judge_field(v, c, f, c->exp, out)) return 1;
    cite(v, fmt, a, b);
    return 0;
}

static int flags_ok(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags, const char *req)
{
    uint32_t want = c->flags & ~KVQ_FLAG_AMBIGUOUS;
    if (flags == want) return 1;
    kvq_judge_flags_at(v, c, out, "flags", want, flags);
    cite(v, " %s%s", req, "");
    return 0;
}

static void judge_qk(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_sage_in *in = in_of(c);
    int paper = in->qk.rounding == KVQ_SAGE_ROUND_PAPER;
    if (!field_ok(v, c, out, "mean", in->qk.role == KVQ_SAGE_ROLE_K
                      ? " [SAGE-SM-03] (K: one mean over all N tokens, seg=N) [SAGE-SM-01]%s%s"
                      : " [SAGE-SM-04] (Q: seg %s) [SAGE-SM-01]%s",
                  in->qk.role == KVQ_SAGE_ROLE_K ? "" : (in->seg == in->shape.tokens ? "per_head" : "per_block"),
                  ""))
        return;
    if (!field_ok(v, c, out, "scale", " [SAGE-MAP-03] (gran %s) %s", name_of(GRANS, 3, in->qk.gran),
                  paper ? "[SAGE-Q-02] [SAGE-Q-04]" : "[SAGE-Q-05]"))
        return;
    if (!field_ok(v, c, out, "codes", " %s%s [SAGE-Q-06]",
                  paper ? "[SAGE-Q-03] " : "[SAGE-Q-05]",
                  paper ? (c->pol.ties == KVQ_TIES_AWAY ? "(ties away) [POL-TIE-02]" : "(ties even) [POL-TIE-01]")
                        : ""))
        return;
    if (!flags_ok(v, c, out, flags, "[SAGE-FLAG-01] [SAGE-Q-04]")) return;
    v->outcome = KVQ_PASS;
}

/* sage-dq: y bit for bit; a mismatch names the product's rounding, the code
 * field's reading and the slot map of the case's granularity. */
static void judge_dq(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    (void)flags;
    if (!field_ok(v, c, out, "y", " [SAGE-Q-08] (y = RN32(k s), every code field two's complement) [SAGE-Q-06]"
                  " [SAGE-MAP-03] (gran %s)%s", name_of(GRANS, 3, in_of(c)->qk.gran), ""))
        return;
    v->outcome = KVQ_PASS;
}

static const char *fmt_req(const kvq_case *c)
{
    return in_of(c)->fmt == KVQ_SAGE_FP8_E5M2 ? "(fmt e5m2, F = 57344) [SAGE-P-03]"
                                              : "(fmt e4m3, F = 448) [SAGE-P-03]";
}

static const char *overflow_req(const kvq_case *c, int v)
{
    if (c->pol.overflow == KVQ_OVERFLOW_NAN)
        return v ? "(overflow nan: no conversion overflows) [SAGE-LEM-05]"
                 : "(overflow nan: no conversion overflows) [SAGE-LEM-06]";
    return v ? "(overflow saturate: no conversion overflows) [SAGE-LEM-05]"
             : "(overflow saturate: no conversion overflows) [SAGE-LEM-06]";
}

static void judge_p(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    if (!field_ok(v, c, out, "codes", " [SAGE-P-01] %s %s", fmt_req(c), overflow_req(c, 0))) return;
    if (!field_ok(v, c, out, "rowsum", " [SAGE-P-02]%s%s", "", "")) return;
    if (!flags_ok(v, c, out, flags, "[SAGE-P-04] [SAGE-FLAG-01]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_v(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    if (!field_ok(v, c, out, "scale", " [SAGE-V-01] %s%s", fmt_req(c), "")) return;
    if (!field_ok(v, c, out, "codes", " [SAGE-V-02] [SAGE-V-03] %s %s", fmt_req(c), overflow_req(c, 1)))
        return;
    if (!flags_ok(v, c, out, flags, "[SAGE-V-04] [SAGE-FLAG-01]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_ds(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    (void)flags;
    if (!field_ok(v, c, out, "ds", " [SAGE-DS-01]%s%s", "", "")) return;
    v->outcome = KVQ_PASS;
}

/* sage-pv [VEC-SAGE-08]: the exact level bit for bit with the model
 * [SAGE-ACC-02] and the buffer [SAGE-ACC-05]; the bounded level: every row's
 * value in [lo, hi], the class K(13, 14) [SAGE-ACC-06] (a NaN never is). */
static void judge_pv(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_sage_in *in = in_of(c);
    const kvq_sage_pv_out *o = outp;
    const kvq_sage_pv_ref *rf = c->ref;
    (void)flags;
    if (c->level == KVQ_LEVEL_EXACT) {
        if (!field_ok(v, c, outp, "d", " [SAGE-ACC-07] (model %s) %s",
                      in->model == KVQ_SAGE_PV_WGMMA ? (in->fmt ? "wgmma e5m2" : "wgmma e4m3") : "mma-sm90",
                      in->buffer ? "[SAGE-ACC-02] [SAGE-ACC-05] (FP32 buffer)" : "[SAGE-ACC-02] (no buffer)"))
            return;
        v->outcome = KVQ_PASS;
        return;
    }
    for (uint32_t r = 0; r < in->rows; r++) {
        const double d = o->d[r], lo = rf->lo[r], hi = rf->hi[r];
        const double mid = 0.5 * lo + 0.5 * hi, half = 0.5 * hi - 0.5 * lo;
        if (!(d >= lo && d <= hi)) {
            uint32_t bits;
            memcpy(&bits, &o->d[r], 4);
            snprintf(v->detail, sizeof v->detail,
                     "row %u: d = %a (0x%08x) outside [%a, %a], the interval of the accumulator class "
                     "K(13, 14) [SAGE-ACC-06] [SAGE-ACC-07]",
                     r, d, bits, lo, hi);
            return;
        }
        kvq_verdict_margin(v, "distance from the exact sum [SAGE-ACC-06]", fabs(d - mid), half);
    }
    v->outcome = KVQ_PASS;
}

/* The attention judges' shared loop [SAGE-ATT-07]: every output within its
 * bound of exact attention, the distance from [lo, hi] rounded down.  Records
 * each output's margin; on the first miss returns its index and writes why it
 * misses into why (its distance above the bound, or a NaN, which has no
 * distance and fails every bound); returns the output count when none does. */
static uint64_t attn_first_miss(kvq_verdict *v, const kvq_case *c, const kvq_sage_attn_out *o, char *why,
                                size_t len)
{
    const kvq_sage_attn_ref *rf = c->ref;
    const uint64_t n = kvq_count(c, kvq_op_output(c->op, "o"), o);
    for (uint64_t e = 0; e < n; e++) {
        const double x = o->o[e], lo = rf->lo[e], hi = rf->hi[e], b = rf->bound[e];
        double dist = 0.0;
        if (x > hi) dist = nextafter(x - hi, 0.0);
        else if (x < lo) dist = nextafter(lo - x, 0.0);
        if (x != x) {
            snprintf(why, len, "not a number; exact attention is [%a, %a], the bound %.6g", lo, hi, b);
            return e;
        }
        if (!(dist <= b)) {
            snprintf(why, len, "%.6g from exact attention [%a, %a], above the bound %.6g", dist, lo, hi, b);
            return e;
        }
        kvq_verdict_margin(v, "distance from exact attention [SAGE-ATT-07]", dist, b);
    }
    return n;
}

static uint32_t attn_bits(const kvq_sage_attn_out *o, uint64_t e)
{
    uint32_t bits;
    memcpy(&bits, &o->o[e], 4);
    return bits;
}

/* sage-attn [VEC-SAGE-10]: every output within its bound of exact attention
 * [SAGE-ATT-07]. */
static void judge_attn(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_sage_attn_out *o = outp;
    char why[160];
    const uint64_t e = attn_first_miss(v, c, o, why, sizeof why);
    (void)flags;
    if (e < kvq_count(c, kvq_op_output(c->op, "o"), outp)) {
        snprintf(v->detail, sizeof v->detail, "o[row %llu, channel %llu] = %a (0x%08x): %s of the pipeline [SAGE-ATT-07]",
                 (unsigned long long)(e / 128u), (unsigned long long)(e % 128u), (double)o->o[e], attn_bits(o, e), why);
        return;
    }
    v->outcome = KVQ_PASS;
}

/* sage-mha [VEC-SAGE-14]: every output of every head within its bound
 * [SAGE-ATT-07]; a miss names the head, the KV head the case's grouping
 * gives it [SAGE-MHA-01] and the input format the bound was derived for
 * [SAGE-MHA-02]. */
static void judge_mha(kvq_verdict *v, const kvq_case *c, const void *outp, uint32_t flags)
{
    const kvq_sage_in *in = in_of(c);
    const kvq_sage_attn_out *o = outp;
    const uint64_t per = (uint64_t)in->attn.nq * 128u;
    char why[160];
    const uint64_t e = attn_first_miss(v, c, o, why, sizeof why);
    (void)flags;
    if (e < kvq_count(c, kvq_op_output(c->op, "o"), outp)) {
        const uint32_t h = (uint32_t)(e / per);
        snprintf(v->detail, sizeof v->detail,
                 "o[head %u, row %llu, channel %llu] = %a (0x%08x): %s of the pipeline [SAGE-ATT-07] "
                 "(head %u on KV head %u of %u [SAGE-MHA-01]; inputs exactly %s [SAGE-MHA-02])",
                 h, (unsigned long long)(e % per / 128u), (unsigned long long)(e % 128u), (double)o->o[e],
                 attn_bits(o, e), why, h, kvq_sage_mha_kv_head(h, in->hq, in->hkv), in->hkv,
                 name_of(IN_FMTS, 3, in->in_fmt));
        return;
    }
    v->outcome = KVQ_PASS;
}

/* ---- ref-fast's SAGE entries (the fast path returns kvq_status, an entry int) ---- */

static int ref_smooth(float *xs, float *mean, const float *x, const kvq_sage_shape *shape, uint32_t seg)
{
    return kvq_sage_smooth(xs, mean, x, shape, seg);
}

static int ref_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags, const float *x,
                           const kvq_sage_shape *shape, const kvq_sage_qk *qk, const kvq_policy *pol)
{
    return kvq_sage_quantize_qk(codes, scale, flags, x, shape, qk, pol);
}

static int ref_dequantize_qk(float *y, const uint8_t *codes, const float *scale, const kvq_sage_shape *shape,
                             const kvq_sage_qk *qk)
{
    return kvq_sage_dequantize_qk(y, codes, scale, shape, qk);
}

static int ref_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags, const float *p, uint32_t rows,
                          uint32_t cols, uint32_t fmt, const kvq_policy *pol)
{
    return kvq_sage_quantize_p(codes, rowsum, flags, p, rows, cols, fmt, pol);
}

static int ref_quantize_v(uint8_t *codes, float *scale, uint32_t *flags, const float *v,
                          const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol)
{
    return kvq_sage_quantize_v(codes, scale, flags, v, shape, fmt, pol);
}

static int ref_delta_s(float *ds, const float *qm, const float *ks, uint32_t rows,
                       const kvq_sage_shape *kshape, float tau)
{
    return kvq_sage_delta_s(ds, qm, ks, rows, kshape, tau);
}

static int ref_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                  uint32_t fmt, uint32_t model, uint32_t buffer)
{
    return kvq_sage_pv(d, a, b, c, rows, n, fmt, model, buffer);
}

static int ref_attention(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                         const kvq_policy *pol)
{
    return kvq_sage_attention(o, q, k, v, a, pol);
}

static int ref_attention_mha(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                             uint32_t hq, uint32_t hkv, uint32_t in_fmt, const kvq_policy *pol)
{
    return kvq_sage_attention_mha(o, q, k, v, a, hq, hkv, in_fmt, pol);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "sage_smooth") == 0) return (kvq_entry_fn)ref_smooth;
    if (strcmp(entry, "sage_quantize_qk") == 0) return (kvq_entry_fn)ref_quantize_qk;
    if (strcmp(entry, "sage_dequantize_qk") == 0) return (kvq_entry_fn)ref_dequantize_qk;
    if (strcmp(entry, "sage_quantize_p") == 0) return (kvq_entry_fn)ref_quantize_p;
    if (strcmp(entry, "sage_quantize_v") == 0) return (kvq_entry_fn)ref_quantize_v;
    if (strcmp(entry, "sage_delta_s") == 0) return (kvq_entry_fn)ref_delta_s;
    if (strcmp(entry, "sage_pv") == 0) return (kvq_entry_fn)ref_pv;
    if (strcmp(entry, "sage_attention") == 0) return (kvq_entry_fn)ref_attention;
    if (strcmp(entry, "sage_attention_mha") == 0) return (kvq_entry_fn)ref_attention_mha;
    return NULL;
}

/* ---- schemas [VEC-SAGE-02..04] -------------------------------------------------------- */

#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(kvq_sage_in, m)
#define SHAPE \
    { .key = "tokens", .type = KVQ_FT_U32, IN(shape.tokens) }, \
    { .key = "dim", .type = KVQ_FT_U32, IN(shape.dim) }
#define FMT { .key = "fmt", .type = KVQ_FT_ENUM, IN(fmt), .names = FMTS, .nnames = 2 }

#define QEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_qk_out, m)
#define QOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_qk_out, m)
static const kvq_field QK_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "role", .type = KVQ_FT_ENUM, IN(qk.role), .names = ROLES, .nnames = 2 },
    { .key = "bits", .type = KVQ_FT_U32, IN(qk.bits) },
    { .key = "gran", .type = KVQ_FT_ENUM, IN(qk.gran), .names = GRANS, .nnames = 3 },
    { .key = "block", .type = KVQ_FT_U32, IN(qk.block) },
    { .key = "warps", .type = KVQ_FT_U32, IN(qk.warps) },
    { .key = "rounding", .type = KVQ_FT_ENUM, IN(qk.rounding), .names = ROUNDINGS, .nnames = 2 },
    { .key = "seg", .type = KVQ_FT_U32, IN(seg) },
    SHAPE, KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "x", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_ND },
    { .key = "mean", .type = KVQ_FT_A_F32, QEXP(mean), .count_rule = N_MEAN },
    { .key = "scale", .type = KVQ_FT_A_F32, QEXP(scale), .count_rule = N_SCALES },
    { .key = "codes", .type = KVQ_FT_A_U8, QEXP(codes), .count_rule = N_CODE_BYTES },
    KVQ_F_OUT_FLAGS,
    { .key = "mean", .type = KVQ_FT_A_F32, QOUT(mean), .count_rule = N_MEAN, .cmp = KVQ_CMP_EXACT },
    { .key = "scale", .type = KVQ_FT_A_F32, QOUT(scale), .count_rule = N_SCALES, .cmp = KVQ_CMP_EXACT,
      .unit = "slot" },
    { .key = "codes", .type = KVQ_FT_A_U8, QOUT(codes), .count_rule = N_CODE_BYTES, .cmp = KVQ_CMP_EXACT },
};

#define DQEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_dq_out, m)
#define DQOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_dq_out, m)
static const kvq_field DQ_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "role", .type = KVQ_FT_ENUM, IN(qk.role), .names = ROLES, .nnames = 2 },
    { .key = "bits", .type = KVQ_FT_U32, IN(qk.bits) },
    { .key = "gran", .type = KVQ_FT_ENUM, IN(qk.gran), .names = GRANS, .nnames = 3 },
    { .key = "block", .type = KVQ_FT_U32, IN(qk.block) },
    { .key = "warps", .type = KVQ_FT_U32, IN(qk.warps) },
    SHAPE, KVQ_F_STATUS,
    { .key = "codes", .type = KVQ_FT_A_U8, IN(a), .count_rule = N_DQ_CODES },
    { .key = "scale", .type = KVQ_FT_A_F32, .finite = 1, IN(c), .count_rule = N_SCALES },
    { .key = "y", .type = KVQ_FT_A_F32, DQEXP(y), .count_rule = N_OUT_ND },
    { .key = "y", .type = KVQ_FT_A_F32, DQOUT(y), .count_rule = N_OUT_ND, .cmp = KVQ_CMP_EXACT },
};

#define PEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_p_out, m)
#define POUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_p_out, m)
static const kvq_field P_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, FMT,
    { .key = "rows", .type = KVQ_FT_U32, IN(rows) },
    { .key = "cols", .type = KVQ_FT_U32, IN(cols) },
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "p", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_RC },
    { .key = "codes", .type = KVQ_FT_A_U8, PEXP(codes), .count_rule = N_OUT_RC },
    { .key = "rowsum", .type = KVQ_FT_A_F32, PEXP(rowsum), .count_rule = N_OUT_ROWS },
    KVQ_F_OUT_FLAGS,
    { .key = "codes", .type = KVQ_FT_A_U8, POUT(codes), .count_rule = N_OUT_RC, .cmp = KVQ_CMP_EXACT },
    { .key = "rowsum", .type = KVQ_FT_A_F32, POUT(rowsum), .count_rule = N_OUT_ROWS, .cmp = KVQ_CMP_EXACT,
      .unit = "row" },
};

#define VEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_v_out, m)
#define VOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_v_out, m)
static const kvq_field V_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, FMT, SHAPE, KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "v", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_ND },
    { .key = "scale", .type = KVQ_FT_A_F32, VEXP(scale), .count_rule = N_OUT_DIM },
    { .key = "codes", .type = KVQ_FT_A_U8, VEXP(codes), .count_rule = N_OUT_ND },
    KVQ_F_OUT_FLAGS,
    { .key = "scale", .type = KVQ_FT_A_F32, VOUT(scale), .count_rule = N_OUT_DIM, .cmp = KVQ_CMP_EXACT,
      .unit = "channel" },
    { .key = "codes", .type = KVQ_FT_A_U8, VOUT(codes), .count_rule = N_OUT_ND, .cmp = KVQ_CMP_EXACT },
};

#define DEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_ds_out, m)
#define DOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_ds_out, m)
static const kvq_field DS_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "rows", .type = KVQ_FT_U32, IN(rows) },
    SHAPE,
    { .key = "tau", .type = KVQ_FT_F32, IN(tau) },
    KVQ_F_STATUS,
    { .key = "qm", .type = KVQ_FT_A_F32, .finite = 1, IN(qm), .count_rule = N_QM },
    { .key = "ks", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_ND },
    { .key = "ds", .type = KVQ_FT_A_F32, DEXP(ds), .count_rule = N_DS },
    { .key = "ds", .type = KVQ_FT_A_F32, DOUT(ds), .count_rule = N_DS, .cmp = KVQ_CMP_EXACT },
};

#define PVEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_sage_pv_out, m)
#define PVREF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_sage_pv_ref, m)
#define PVOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_pv_out, m)
static const kvq_field PV_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "model", .type = KVQ_FT_ENUM, IN(model), .names = MODELS, .nnames = 2 },
    FMT,
    { .key = "buffer", .type = KVQ_FT_U32, IN(buffer) },
    { .key = "rows", .type = KVQ_FT_U32, IN(rows) },
    { .key = "n", .type = KVQ_FT_U32, IN(n) },
    KVQ_F_STATUS,
    { .key = "c", .type = KVQ_FT_A_F32, .finite = 1, IN(c), .count_rule = N_PV_ROWS },
    { .key = "a", .type = KVQ_FT_A_U8, IN(a), .count_rule = N_PV_CODES },
    { .key = "b", .type = KVQ_FT_A_U8, IN(b), .count_rule = N_PV_CODES },
    { .key = "d", .type = KVQ_FT_A_F32, PVEXP(d), .count_rule = N_PV_OUT },
    { .key = "lo", .type = KVQ_FT_A_F32, PVREF(lo), .count_rule = N_PV_OUT },
    { .key = "hi", .type = KVQ_FT_A_F32, PVREF(hi), .count_rule = N_PV_OUT },
    { .key = "d", .type = KVQ_FT_A_F32, PVOUT(d), .count_rule = N_PV_OUT, .cmp = KVQ_CMP_EXACT, .unit = "row" },
};

#define AREF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_sage_attn_ref, m)
#define AOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_sage_attn_out, m)
/* The pipeline's parameters, in the order both attention ops write them. */
#define ATTN_PARAM_FIELDS \
    { .key = "nq", .type = KVQ_FT_U32, IN(attn.nq) }, \
    { .key = "nk", .type = KVQ_FT_U32, IN(attn.nk) }, \
    { .key = "dim", .type = KVQ_FT_U32, IN(attn.dim) }, \
    { .key = "causal", .type = KVQ_FT_U32, IN(attn.causal) }, \
    { .key = "buffer", .type = KVQ_FT_U32, IN(attn.buffer) }, \
    { .key = "bits", .type = KVQ_FT_U32, IN(attn.qk_bits) }, \
    { .key = "tau", .type = KVQ_FT_F32, IN(attn.tau) }
static const kvq_field ATTN_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    ATTN_PARAM_FIELDS,
    KVQ_F_STATUS,
    { .key = "q", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_ATTN_Q },
    { .key = "k", .type = KVQ_FT_A_F32, .finite = 1, IN(qm), .count_rule = N_ATTN_K },
    { .key = "v", .type = KVQ_FT_A_F32, .finite = 1, IN(v), .count_rule = N_ATTN_K },
    { .key = "lo", .type = KVQ_FT_A_F32, AREF(lo), .count_rule = N_ATTN_OUT },
    { .key = "hi", .type = KVQ_FT_A_F32, AREF(hi), .count_rule = N_ATTN_OUT },
    { .key = "bound", .type = KVQ_FT_A_F32, AREF(bound), .count_rule = N_ATTN_OUT },
    { .key = "o", .type = KVQ_FT_A_F32, AOUT(o), .count_rule = N_ATTN_OUT },
};

/* sage-mha [VEC-SAGE-13]: heads and the input format before the pipeline's
 * parameters; q [hq][nq][128], k and v [hkv][nk][128], the reference and the
 * output [hq][nq][128]. */
static const kvq_field MHA_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    { .key = "hq", .type = KVQ_FT_U32, IN(hq) },
    { .key = "hkv", .type = KVQ_FT_U32, IN(hkv) },
    { .key = "in_fmt", .type = KVQ_FT_ENUM, IN(in_fmt), .names = IN_FMTS, .nnames = 3 },
    ATTN_PARAM_FIELDS,
    KVQ_F_STATUS,
    { .key = "q", .type = KVQ_FT_A_F32, .finite = 1, IN(x), .count_rule = N_MHA_Q },
    { .key = "k", .type = KVQ_FT_A_F32, .finite = 1, IN(qm), .count_rule = N_MHA_K },
    { .key = "v", .type = KVQ_FT_A_F32, .finite = 1, IN(v), .count_rule = N_MHA_K },
    { .key = "lo", .type = KVQ_FT_A_F32, AREF(lo), .count_rule = N_MHA_OUT },
    { .key = "hi", .type = KVQ_FT_A_F32, AREF(hi), .count_rule = N_MHA_OUT },
    { .key = "bound", .type = KVQ_FT_A_F32, AREF(bound), .count_rule = N_MHA_OUT },
    { .key = "o", .type = KVQ_FT_A_F32, AOUT(o), .count_rule = N_MHA_OUT },
};

#define EXACT_ONLY KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT)

const kvq_op kvq_op_sage_qk = {
    .name = "sage-qk",
    .family = &kvq_family_sage,
    .summary = "smooth Q or K (segment means), then INT4/INT8 per thread, warp or block: means, scales, codes",
    .fields = QK_FIELDS,
    .nfields = KVQ_NELEMS(QK_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_qk_out),
    .ref_size = 0,
    .levels = EXACT_ONLY,
    .entries = { { .name = "sage_smooth", .sigver = 1 }, { .name = "sage_quantize_qk", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID_QK,
    .describe = describe_qk,
    .solve = kvq_sage_solve_qk,
    .call = call_qk,
    .judge = judge_qk,
};

const kvq_op kvq_op_sage_p = {
    .name = "sage-p",
    .family = &kvq_family_sage,
    .summary = "P~ in [0, 1] to FP8 (E4M3 or E5M2) by the static scale, with row sums",
    .fields = P_FIELDS,
    .nfields = KVQ_NELEMS(P_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_p_out),
    .ref_size = 0,
    .levels = EXACT_ONLY,
    .entries = { { .name = "sage_quantize_p", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_P,
    .describe = describe_p,
    .solve = kvq_sage_solve_p,
    .call = call_p,
    .judge = judge_p,
};

const kvq_op kvq_op_sage_v = {
    .name = "sage-v",
    .family = &kvq_family_sage,
    .summary = "V to FP8 (E4M3 or E5M2) with one scale per channel over all tokens",
    .fields = V_FIELDS,
    .nfields = KVQ_NELEMS(V_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_v_out),
    .ref_size = 0,
    .levels = EXACT_ONLY,
    .entries = { { .name = "sage_quantize_v", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_V,
    .describe = describe_v,
    .solve = kvq_sage_solve_v,
    .call = call_v,
    .judge = judge_v,
};

const kvq_op kvq_op_sage_ds = {
    .name = "sage-ds",
    .family = &kvq_family_sage,
    .summary = "the score correction dS = q_m K_s^T scaled by tau, per mean row and key token",
    .fields = DS_FIELDS,
    .nfields = KVQ_NELEMS(DS_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_ds_out),
    .ref_size = 0,
    .levels = EXACT_ONLY,
    .entries = { { .name = "sage_delta_s", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_DS,
    .describe = describe_ds,
    .solve = kvq_sage_solve_ds,
    .call = call_ds,
    .judge = judge_ds,
};

const kvq_op kvq_op_sage_pv = {
    .name = "sage-pv",
    .family = &kvq_family_sage,
    .summary = "one channel of P~V: FP8 products through the accumulator model (wgmma, mma.sync) and the FP32 buffer",
    .fields = PV_FIELDS,
    .nfields = KVQ_NELEMS(PV_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_pv_out),
    .ref_size = sizeof(kvq_sage_pv_ref),
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .entries = { { .name = "sage_pv", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_PV,
    .describe = describe_pv,
    .solve = kvq_sage_solve_pv,
    .call = call_pv,
    .judge = judge_pv,
};

const kvq_op kvq_op_sage_attn = {
    .name = "sage-attn",
    .family = &kvq_family_sage,
    .summary = "one head of the SageAttention2 pipeline, judged within the exact path's bound of exact attention",
    .fields = ATTN_FIELDS,
    .nfields = KVQ_NELEMS(ATTN_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_attn_out),
    .ref_size = sizeof(kvq_sage_attn_ref),
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .entries = { { .name = "sage_attention", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_ATTN,
    .describe = describe_attn,
    .solve = kvq_sage_solve_attn,
    .call = call_attn,
    .judge = judge_attn,
};

const kvq_op kvq_op_sage_dq = {
    .name = "sage-dq",
    .family = &kvq_family_sage,
    .summary = "stored Q/K codes and scales back to binary32: y = RN32(k s) per element",
    .fields = DQ_FIELDS,
    .nfields = KVQ_NELEMS(DQ_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_dq_out),
    .ref_size = 0,
    .levels = EXACT_ONLY,
    .entries = { { .name = "sage_dequantize_qk", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_DQ,
    .describe = describe_dq,
    .solve = kvq_sage_solve_dq,
    .call = call_dq,
    .judge = judge_dq,
};

const kvq_op kvq_op_sage_mha = {
    .name = "sage-mha",
    .family = &kvq_family_sage,
    .summary = "hq query heads on hkv KV heads (GQA), inputs exactly binary32, binary16 or bfloat16, every head "
               "judged within the exact path's bound",
    .fields = MHA_FIELDS,
    .nfields = KVQ_NELEMS(MHA_FIELDS),
    .in_size = sizeof(kvq_sage_in),
    .out_size = sizeof(kvq_sage_attn_out),
    .ref_size = sizeof(kvq_sage_attn_ref),
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED),
    .entries = { { .name = "sage_attention_mha", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_MHA,
    .describe = describe_mha,
    .solve = kvq_sage_solve_mha,
    .call = call_mha,
    .judge = judge_mha,
};

static const kvq_op *const OPS[] = { &kvq_op_sage_qk, &kvq_op_sage_p, &kvq_op_sage_v, &kvq_op_sage_ds,
                                     &kvq_op_sage_pv, &kvq_op_sage_attn, &kvq_op_sage_dq, &kvq_op_sage_mha };

const kvq_family kvq_family_sage = {
    .name = "sage",
    .title = "SAGE",
    .spec = "spec/sage.md",
    .gpu = 1,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = kvq_sage_gen_count,
    .gen_case = kvq_sage_gen_case,
    .ref_entry = ref_entry,
    .commands = { { "probe", kvq_sage_probe_main, KVQ_SAGE_PROBE_USAGE } },
};
