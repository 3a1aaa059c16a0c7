/*
 * families/vidkv.c -- the VIDKV family: vidkv-keys, vidkv-values and
 * vidkv-stream, their schemas, subject calls and judges (spec/vidkv.md,
 * spec/vectors.md [VEC-VIDKV-01..07]).
 *
 * vidkv-keys:   the split, the abnormal 2-bit groups and the MINMAX /
 *               SIGNMEAN normal groups bit for bit at both levels
 *               [VIDKV-B-05]; under the FFT (bounded level only) each normal
 *               component's code the real one unless listed ambiguous
 *               [VIDKV-B-01], each stored scale within [s_lo, s_hi]
 *               [VIDKV-B-02], each dequantized normal value within rho_i of
 *               the real inverse DFT of the subject's own codes and scales
 *               [VIDKV-B-03], decided by the exact path.
 * vidkv-values: ternary codes in both packings, beta, the STP mask and the
 *               protected 2-bit groups, the dequantized values: bit for bit.
 * vidkv-stream: prefill (values with STP), decode appends and flushes; the
 *               dequantized caches after the last flush bit for bit.
 * A mismatch names the field and the requirement it violates.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "kvq_exact_vidkv.h"
#include "rule.h"
#include "vecio.h"
#include "vidkv.h"

static const kvq_vidkv_case_in *in_of(const kvq_case *c)
{
    return c->in;
}

/* ---- rules [VER-REG-07..09], with the limits of kvq_vidkv.h ---------------------------- */

#define R_MAX_GROUP 4096
#define R_MAX_HEADS 1024
#define R_MAX_DIM 1024
#define R_MAX_TOKENS 16777216
#define R_MAX_SDIM 4096
KVQ_STATIC_ASSERT(KVQ_MAX_GROUP == R_MAX_GROUP && KVQ_VIDKV_MAX_HEADS == R_MAX_HEADS &&
                  KVQ_VIDKV_MAX_DIM == R_MAX_DIM && KVQ_VIDKV_MAX_TOKENS == R_MAX_TOKENS &&
                  KVQ_VIDKV_MAX_SDIM == R_MAX_SDIM && KVQ_VIDKV_MAX_GAMMA == 16.0f &&
                  KVQ_META_F32 == 0u && KVQ_META_F16 == 1u && KVQ_VIDKV_SPLIT_PER_HEAD == 1u &&
                  KVQ_VIDKV_NORMAL_FFT == 1u && KVQ_VIDKV_NORMAL_MINMAX == 2u &&
                  KVQ_VIDKV_NORMAL_SIGNMEAN == 3u && KVQ_VIDKV_VDEQ_SCALED == 1u &&
                  KVQ_VIDKV_PACK_BASE3 == 0u && KVQ_VIDKV_PACK_BITS2 == 1u,
                  "the rules' limits and switch numbers are kvq_vidkv.h's");
#define S_(x) #x
#define S(x) S_(x)

/* kvq_vidkv_params_ok over the fields an operation carries [VIDKV-L-02] */
#define P_GROUP "group >= 8 && group <= " S(R_MAX_GROUP) " && group % 8 == 0 && meta <= 1"
#define P_KEYS "split <= 1 && normal <= 3 && key_frac >= 0 && key_frac <= 1"
#define P_VDEQ "vdeq <= 1 && vpack <= 1 && gamma >= 0 && gamma <= 16"
#define P_VALUES P_VDEQ " && protect >= 0 && protect <= 1"
#define P_FLUSH "kflush <= 1 && vflush <= 1"
/* kvq_vidkv_shape_ok */
#define X_HD "heads >= 1 && heads <= " S(R_MAX_HEADS) " && dim >= 1 && dim <= " S(R_MAX_DIM)
#define X_T "tokens >= 1 && tokens <= " S(R_MAX_TOKENS) " && tokens % group == 0"
/* kvq_vidkv_normal_mode [VIDKV-K-04] */
#define FFT "(normal == 1 || normal == 0 && (key_frac == 0x1p-1 || key_frac == 0x1.8p-1))"
#define MINMAX "(normal == 2 || normal == 0 && key_frac != 0x1p-1 && key_frac != 0x1.8p-1)"
/* the STP ranges [VIDKV-STP-01] */
#define STP_OK                                                                                    \
    "sdim >= 1 && sdim <= " S(R_MAX_SDIM) " && rows >= tokens && rows <= " S(R_MAX_TOKENS)       \
    " && vis_count >= 1 && vis_first + vis_count <= tokens && txt_count >= 1"                     \
    " && txt_first + txt_count <= rows"

/* the FFT path has the bounded level only [VIDKV-B-05] */
static const char VALID_KEYS[] =
    P_GROUP " && " P_KEYS " && " X_HD " && " X_T " && abnormal <= dim && (level == 1 || !" FFT ")";
/* the bounded level exists for raw values only: beta follows the codes and
 * has no derived bound ([VIDKV-B-04] [VIDKV-B-05]) */
static const char VALID_VALUES[] =
    P_GROUP " && " P_VALUES " && " X_HD " && " X_T " && protected <= tokens && (protect > 0 ? " STP_OK " : 1)"
    " && (level == 0 || vdeq == 0)";
static const char VALID_DEQ_VALUES[] = P_GROUP " && " P_VALUES " && " X_HD " && " X_T
                                       " && protected <= tokens && (protect > 0 || protected == 0)";

/* the STP ranges over the prefill's quantized tokens Tp */
#define TP "(prefill - prefill % group)"
#define STP_OK_TP                                                                                 \
    "sdim >= 1 && sdim <= " S(R_MAX_SDIM) " && rows >= " TP " && rows <= " S(R_MAX_TOKENS)        \
    " && vis_count >= 1 && vis_first + vis_count <= " TP " && txt_count >= 1"                     \
    " && txt_first + txt_count <= rows"
static const char VALID_STREAM[] = P_GROUP " && " P_KEYS " && " P_VALUES " && " P_FLUSH " && " X_HD
                                   " && prefill + decode >= group && prefill + decode <= " S(R_MAX_TOKENS)
                                   " && !" FFT " && (protect > 0 ? " STP_OK_TP " : 1)";

/* counts [VIDKV-L-07] */
#define N_KIN "heads * tokens * dim"
#define N_OUT "valid ? heads * tokens * dim : 0"
#define N_MASK "valid ? (split == 1 ? heads : 1) * cdiv(dim, 8) : 0"
#define N_ABN_G "valid ? heads * (tokens / group) * abnormal : 0"
#define N_ABN_B "valid ? heads * (tokens / group) * abnormal * (group / 4) : 0"
#define M_PER "(" FFT " ? 2 : 1) * (dim - abnormal)"
#define N_NRM_G "valid ? heads * (tokens / group) * " M_PER " : 0"
#define N_NRM_B "valid ? heads * (tokens / group) * " M_PER " * (group / 8) : 0"
#define N_NRM_Z "valid && " MINMAX " ? heads * (tokens / group) * (dim - abnormal) : 0"
#define N_FFT_G "valid && " FFT " ? heads * (tokens / group) * 2 * (dim - abnormal) : 0"
#define N_AMB "valid && " FFT " ? heads * tokens * 2 * (dim - abnormal) : 0"
#define N_TERN_G "valid ? heads * cdiv(tokens - protected, group) * dim : 0"
#define N_TERN_B "valid ? heads * cdiv(tokens - protected, group) * dim * (vpack == 0 ? cdiv(group, 5) : group / 4) : 0"
#define N_BETA "valid && vdeq == 1 ? heads * cdiv(tokens - protected, group) * dim : 0"
#define N_PROT "valid && protect > 0 ? cdiv(tokens, 8) : 0"
#define N_PG "valid && protect > 0 ? heads * cdiv(protected, group) * dim : 0"
#define N_PB "valid && protect > 0 ? heads * cdiv(protected, group) * dim * (group / 4) : 0"
#define N_XS "protect > 0 ? rows * sdim : 0"
#define N_VAMB "valid ? heads * tokens * dim : 0"
#define N_DEQ_REF "valid && " FFT " ? heads * tokens * dim : 0"
#define N_SIN "heads * (prefill + decode) * dim"
#define N_SOUT "valid ? heads * (prefill + decode - (prefill + decode) % group) * dim : 0"

/* The derived counts a rule cannot compute from binary32 fields: abnormal =
 * round(f d) ties to even [VIDKV-K-02], protected = floor(p lv)
 * [VIDKV-STP-03] (0 without STP), for a case whose rule valid holds. */
static int check_keys(const kvq_case *c, char *msg, size_t len)
{
    const kvq_vidkv_case_in *in = in_of(c);
    if (!kvq_case_valid(c)) return 1;
    if (in->abnormal != kvq_vidkv_n_abn(&in->prm)) {
        snprintf(msg, len, "abnormal=%u, but round(key_frac * dim) with ties to even is %u [VIDKV-K-02]",
                 in->abnormal, kvq_vidkv_n_abn(&in->prm));
        return 0;
    }
    return 1;
}

static int check_values(const kvq_case *c, char *msg, size_t len)
{
    const kvq_vidkv_case_in *in = in_of(c);
    uint32_t np;
    if (!kvq_case_valid(c)) return 1;
    np = in->prm.protect > 0.0f ? kvq_vidkv_prot_count(in->prm.protect, in->vis_count) : 0u;
    if (in->protect_n != np) {
        snprintf(msg, len, "protected=%u, but floor(protect * vis_count) is %u [VIDKV-STP-03]", in->protect_n, np);
        return 0;
    }
    return 1;
}

/* ---- describe ------------------------------------------------------------------------- */

static const char *const MODE_NAMES[] = { "auto", "fft", "minmax", "signmean" };

static const char *mode_name(const kvq_vidkv_params *p)
{
    return p->normal <= 3u ? MODE_NAMES[kvq_vidkv_normal_mode(p)] : "?";
}

static void describe_keys(const kvq_case *c, char *buf, size_t len)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    snprintf(buf, len, "keys f=%g %s %s H=%u T=%u d=%u G=%u %s", (double)p->key_frac, mode_name(p),
             p->split == KVQ_VIDKV_SPLIT_PER_HEAD ? "per-head" : "pooled", p->heads, p->tokens, p->dim, p->group,
             p->meta == KVQ_META_F16 ? "f16" : "f32");
}

static void describe_values(const kvq_case *c, char *buf, size_t len)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    snprintf(buf, len, "values gamma=%g %s %s p=%g H=%u T=%u d=%u G=%u %s", (double)p->gamma,
             p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? "scaled" : "raw", p->vpack == KVQ_VIDKV_PACK_BITS2 ? "bits2" : "base3",
             (double)p->protect, p->heads, p->tokens, p->dim, p->group, p->meta == KVQ_META_F16 ? "f16" : "f32");
}

static void describe_stream(const kvq_case *c, char *buf, size_t len)
{
    const kvq_vidkv_case_in *in = in_of(c);
    const kvq_vidkv_params *p = &in->prm;
    snprintf(buf, len, "stream L=%u decode=%u keys %s values %s f=%g %s p=%g H=%u d=%u G=%u", in->prefill,
             in->decode,
             p->kflush == KVQ_VIDKV_KFLUSH_APPEND ? "append" : "requant",
             p->vflush == KVQ_VIDKV_VFLUSH_REQUANT ? "requant" : "append", (double)p->key_frac, mode_name(p),
             (double)p->protect, p->heads, p->dim, p->group);
}

static void describe_deq_keys(const kvq_case *c, char *buf, size_t len)
{
    describe_keys(c, buf, len);
    if (strlen(buf) + 4u < len) memmove(buf + 4, buf, strlen(buf) + 1u), memcpy(buf, "deq ", 4);
}

static void describe_deq_values(const kvq_case *c, char *buf, size_t len)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    snprintf(buf, len, "deq values %s %s p=%g np=%u H=%u T=%u d=%u G=%u %s",
             p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? "scaled" : "raw", p->vpack == KVQ_VIDKV_PACK_BITS2 ? "bits2" : "base3",
             (double)p->protect, in_of(c)->protect_n, p->heads, p->tokens, p->dim, p->group,
             p->meta == KVQ_META_F16 ? "f16" : "f32");
}

/* ---- calls ------------------------------------------------------------------------------ */

/* The parameters of a keys call: the case's, the others the defaults. */
static kvq_vidkv_params keys_params(const kvq_vidkv_case_in *in)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(in->prm.heads, in->prm.tokens, in->prm.dim);
    p.group = in->prm.group;
    p.meta = in->prm.meta;
    p.split = in->prm.split;
    p.normal = in->prm.normal;
    p.key_frac = in->prm.key_frac;
    return p;
}

static kvq_vidkv_params values_params(const kvq_vidkv_case_in *in)
{
    kvq_vidkv_params p = kvq_vidkv_params_default(in->prm.heads, in->prm.tokens, in->prm.dim);
    p.group = in->prm.group;
    p.meta = in->prm.meta;
    p.vdeq = in->prm.vdeq;
    p.vpack = in->prm.vpack;
    p.gamma = in->prm.gamma;
    p.protect = in->prm.protect;
    return p;
}

static kvq_vidkv_stp stp_of(const kvq_vidkv_case_in *in)
{
    kvq_vidkv_stp s;
    s.xs = in->xs;
    s.rows = in->rows;
    s.ds = in->sdim;
    s.vis_first = in->vis_first;
    s.vis_count = in->vis_count;
    s.txt_first = in->txt_first;
    s.txt_count = in->txt_count;
    return s;
}

/* Quantize, then dequantize the subject's own stored keys [VER-RUN-01]. */
static int call_keys(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_keys_out *o = outp;
    kvq_vidkv_params p = keys_params(in);
    kvq_vidkv_keys s = { o->mask, o->abn_codes, o->abn_scale, o->abn_zero, o->nrm_codes, o->nrm_scale,
                         o->nrm_zero };
    uint32_t df = 0;
    int st = ((kvq_vidkv_quantize_keys_v1_fn)fns[0])(&s, flags, in->k, &p, &c->pol);
    if (st != KVQ_OK) return st;
    st = ((kvq_vidkv_dequantize_keys_v1_fn)fns[1])(o->deq, &df, &s, &p, &c->pol);
    if (st != KVQ_OK) {
        /* what must be untouched [API-ERR-01] is what the failed dequantization owns */
        static const char *const K[] = { "mask", "abn_codes", "abn_scale", "abn_zero", "nrm_codes",
                                         "nrm_scale", "nrm_zero" };
        for (size_t i = 0; i < KVQ_NELEMS(K); i++) kvq_out_refill(c, o, K[i]);
        *flags = df;
        return st;
    }
    *flags |= df;
    return st;
}

static int call_values(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_values_out *o = outp;
    kvq_vidkv_params p = values_params(in);
    kvq_vidkv_stp stp = stp_of(in);
    kvq_vidkv_values s = { o->tern, o->beta, o->prot, o->p_codes, o->p_scale, o->p_zero };
    uint32_t df = 0, np = 0;
    int st = ((kvq_vidkv_quantize_values_v1_fn)fns[0])(&s, &np, flags, in->v, &p,
                                                      p.protect > 0.0f ? &stp : NULL, &c->pol);
    if (st != KVQ_OK) return st;
    /* the dequantizer gets the subject's own n_p; a wrong one shows in prot */
    st = ((kvq_vidkv_dequantize_values_v1_fn)fns[1])(o->deq, &df, &s, np, &p, &c->pol);
    if (st != KVQ_OK) {
        static const char *const V[] = { "tern", "beta", "prot", "p_codes", "p_scale", "p_zero" };
        for (size_t i = 0; i < KVQ_NELEMS(V); i++) kvq_out_refill(c, o, V[i]);
        *flags = df;
        return st;
    }
    *flags |= df;
    return st;
}

static int call_stream(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_stream_out *o = outp;
    kvq_vidkv_stp stp = stp_of(in);
    return ((kvq_vidkv_stream_v1_fn)fns[0])(o->keys, o->values, flags, in->k, in->v,
                                            in->prm.protect > 0.0f ? &stp : NULL, in->prefill, in->decode,
                                            &in->prm, &c->pol);
}

/* The dequantizers alone, on the case's stored data [VIDKV-D-01..03]. */
static int call_deq_keys(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_deq_out *o = outp;
    kvq_vidkv_params p = keys_params(in);
    kvq_vidkv_keys s = { in->mask, in->abn_codes, in->abn_scale, in->abn_zero, in->nrm_codes, in->nrm_scale,
                         in->nrm_zero };
    return ((kvq_vidkv_dequantize_keys_v1_fn)fns[0])(o->deq, flags, &s, &p, &c->pol);
}

static int call_deq_values(const kvq_case *c, const kvq_entry_fn *fns, void *outp, uint32_t *flags)
{
    const kvq_vidkv_case_in *in = c->in;
    kvq_vidkv_deq_out *o = outp;
    kvq_vidkv_params p = values_params(in);
    kvq_vidkv_values s = { in->tern, in->beta, in->prot, in->p_codes, in->p_scale, in->p_zero };
    return ((kvq_vidkv_dequantize_values_v1_fn)fns[0])(o->deq, flags, &s, in->protect_n, &p, &c->pol);
}

/* ---- judges ----------------------------------------------------------------------------- */

static void cite(kvq_verdict *v, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(v->detail);
    if (len < sizeof v->detail) snprintf(v->detail + len, sizeof v->detail - len, fmt, a, b);
}

static int field_ok(kvq_verdict *v, const kvq_case *c, const void *out, const char *key, const char *fmt,
                    const char *a, const char *b)
{
    const kvq_field *f = kvq_op_output(c->op, key);
    if (f == NULL || kvq_judge_field(v, c, f, c->exp, out)) return 1;
    cite(v, fmt, a, b);
    return 0;
}

static int flags_ok(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags, uint32_t mask,
                    const char *req)
{
    uint32_t want = c->flags & ~KVQ_FLAG_AMBIGUOUS & mask;
    if ((flags & mask) == want) return 1;
    kvq_judge_flags_at(v, c, out, mask == ~0u ? "flags" : "flags (bounded mask SUBNORMAL)", want, flags & mask);
    cite(v, " %s%s", req, "");
    return 0;
}

static const char *split_req(const kvq_vidkv_params *p)
{
    return p->split == KVQ_VIDKV_SPLIT_PER_HEAD ? "(split per-head: each head's own ranges)"
                                                : "(split pooled: ranges over all heads)";
}

static const char *nrm_req(const kvq_vidkv_params *p)
{
    return kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_SIGNMEAN
               ? "(normal signmean: code x >= 0, dequantized to {0, s}) [VIDKV-K-06]"
               : "(normal minmax: KIVI bits 1) [KIVI-Q-01]";
}

/* The FFT normal path at the bounded level [VIDKV-B-01..03]. */
static int judge_fft(kvq_verdict *v, const kvq_case *c, const kvq_vidkv_keys_out *o)
{
    const kvq_vidkv_params p = keys_params(in_of(c));
    const kvq_vidkv_keys_ref *rf = c->ref;
    const kvq_vidkv_keys_out *ex = c->exp;
    uint32_t m = kvq_vidkv_nrm_per_block(&p), G = p.group, nb = kvq_vidkv_blocks(&p);
    uint64_t ng = kvq_vidkv_nrm_groups(&p), n = kvq_vidkv_elems(&p), bad = 0;
    kvq_vidkv_keys s = { o->mask, o->abn_codes, o->abn_scale, o->abn_zero, o->nrm_codes, o->nrm_scale,
                         o->nrm_zero };
    double *lo, *hi;
    kvq_status st;
    for (uint32_t h = 0; h < p.heads; h++)
        for (uint32_t b = 0; b < nb; b++)
            for (uint32_t j = 0; j < m; j++) {
                uint64_t g = kvq_vidkv_nrm_group(&p, h, b, j);
                const uint8_t *eg = ex->nrm_codes + g * (G / 8u), *og = o->nrm_codes + g * (G / 8u);
                for (uint32_t i = 0; i < G; i++) {
                    uint64_t comp = ((uint64_t)h * p.tokens + b * G + i) * m + j;
                    uint32_t want = kvq_unpack_code(eg, i, 1u), got = kvq_unpack_code(og, i, 1u), alt;
                    if (got == want || (kvq_amb_find(&rf->amb, comp, &alt) && got == alt)) continue;
                    if (bad++ == 0)
                        snprintf(v->detail, sizeof v->detail,
                                 "nrm_codes: component %u (%s part of coefficient %u) of head %u, token %u: "
                                 "expected %u, got %u; it is decisive (|Y| above rho_f) [VIDKV-B-01] [VIDKV-K-06]",
                                 j, j % 2u ? "imaginary" : "real", j / 2u, h, b * G + i, want, got);
                }
            }
    if (bad) {
        size_t len = strlen(v->detail);
        snprintf(v->detail + len, sizeof v->detail - len, "; %llu codes fail", (unsigned long long)bad);
        return 0;
    }
    for (uint64_t g = 0; g < ng; g++) {
        double x = o->nrm_scale[g];
        if (!(x >= rf->s_lo[g] && x <= rf->s_hi[g])) {
            snprintf(v->detail, sizeof v->detail,
                     "nrm_scale[group %llu] = %a (0x%08lx) outside the accepted [%a, %a] [VIDKV-B-02] [VIDKV-K-06]",
                     (unsigned long long)g, x, (unsigned long)kvq_f32_bits(o->nrm_scale[g]), (double)rf->s_lo[g],
                     (double)rf->s_hi[g]);
            return 0;
        }
    }
    lo = malloc(n * sizeof *lo);
    hi = malloc(n * sizeof *hi);
    if (lo == NULL || hi == NULL) {
        free(lo);
        free(hi);
        snprintf(v->detail, sizeof v->detail, "out of memory judging the dequantized keys");
        return 0;
    }
    st = kvq_exact_vidkv_key_deq_bounds(lo, hi, &s, &p);
    if (st != KVQ_OK) {
        snprintf(v->detail, sizeof v->detail,
                 "the subject's stored keys are not valid stored keys (status %d) [VIDKV-D-02] [VIDKV-D-03]", (int)st);
        free(lo);
        free(hi);
        return 0;
    }
    for (uint64_t e = 0; e < n && !bad; e++) {
        double y = o->deq[e];
        if (y >= lo[e] && y <= hi[e]) {
            if (lo[e] < hi[e])
                kvq_verdict_margin(v, "inverse DFT distance [VIDKV-B-03]", fabs(y - (0.5 * lo[e] + 0.5 * hi[e])),
                                   0.5 * hi[e] - 0.5 * lo[e]);
            continue;
        }
        bad = 1;
        snprintf(v->detail, sizeof v->detail,
                 "deq of element %llu (head %llu, token %llu, channel %llu) = %a (0x%08lx) outside [%a, %a]: %s",
                 (unsigned long long)e, (unsigned long long)(e / ((uint64_t)p.tokens * p.dim)),
                 (unsigned long long)(e / p.dim % p.tokens), (unsigned long long)(e % p.dim), y,
                 (unsigned long)kvq_f32_bits(o->deq[e]), lo[e], hi[e],
                 lo[e] == hi[e] ? "the pinned dequantization [VIDKV-K-11] [VIDKV-K-03]"
                                : "the inverse DFT of the subject's codes and scales +- rho_i, {0, s} per component "
                                  "[VIDKV-B-03] [VIDKV-K-07] [VIDKV-K-06]");
    }
    free(lo);
    free(hi);
    return !bad;
}

static void judge_keys(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_vidkv_params p = keys_params(in_of(c));
    int fft = kvq_vidkv_normal_mode(&p) == KVQ_VIDKV_NORMAL_FFT;
    if (!field_ok(v, c, out, "mask", " [VIDKV-K-01] [VIDKV-K-02] %s%s", split_req(&p), "")) return;
    if (!field_ok(v, c, out, "abn_codes", " [VIDKV-K-03] [KIVI-Q-04]%s%s", "", "")) return;
    if (!field_ok(v, c, out, "abn_scale", " [VIDKV-K-03] [KIVI-Q-02]%s%s", "", "")) return;
    if (!field_ok(v, c, out, "abn_zero", " [VIDKV-K-03] [KIVI-Q-03]%s%s", "", "")) return;
    if (fft) {
        if (c->level == KVQ_LEVEL_EXACT) {
            snprintf(v->detail, sizeof v->detail, "an FFT keys case at the exact level [VIDKV-B-05]");
            return;
        }
        if (!flags_ok(v, c, out, flags, KVQ_FLAG_SUBNORMAL, "[VIDKV-L-04]")) return;
        if (!judge_fft(v, c, out)) return;
        v->outcome = KVQ_PASS;
        return;
    }
    if (!field_ok(v, c, out, "nrm_codes", " [VIDKV-K-08] %s%s", nrm_req(&p), "")) return;
    if (!field_ok(v, c, out, "nrm_scale", " [VIDKV-K-08] %s%s", nrm_req(&p), "")) return;
    if (!field_ok(v, c, out, "nrm_zero", " [VIDKV-K-08] %s%s", nrm_req(&p), "")) return;
    if (!field_ok(v, c, out, "deq", " [VIDKV-K-11] [VIDKV-K-03] [VIDKV-K-08] %s%s", nrm_req(&p), "")) return;
    if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-L-05]")) return;
    v->outcome = KVQ_PASS;
}

/* Raw ternary values at the bounded level [VIDKV-B-04]: every used slot's
 * code the expected one or, listed ambiguous, its alternative; unused slots
 * digit 0, BASE3 bytes at most 242; every unprotected element dequantized to
 * its own code (-1, +0, +1). */
static int judge_tern_bounded(kvq_verdict *v, const kvq_case *c, const kvq_vidkv_values_out *o)
{
    const kvq_vidkv_case_in *in = in_of(c);
    kvq_vidkv_params p = values_params(in);
    const kvq_vidkv_values_out *ex = c->exp;
    const kvq_vidkv_values_ref *rf = c->ref;
    uint32_t T = p.tokens, G = p.group, d = p.dim, np = in->protect_n, nt = T - np, nbt = kvq_vidkv_list_blocks(nt, G);
    uint32_t gb = kvq_vidkv_tern_group_bytes(&p), q = 0, *tok;
    uint64_t bad = 0;
    int stp = p.protect > 0.0f;
    for (uint64_t b = 0; b < kvq_vidkv_tern_code_bytes(&p, np); b++)
        if (p.vpack == KVQ_VIDKV_PACK_BASE3 && o->tern[b] > 242u) {
            snprintf(v->detail, sizeof v->detail, "tern: byte %llu is 0x%02x, above 242 [VIDKV-V-04] (pack base3)",
                     (unsigned long long)b, o->tern[b]);
            return 0;
        }
    tok = malloc(((size_t)nt + 1u) * sizeof *tok);
    if (tok == NULL) {
        snprintf(v->detail, sizeof v->detail, "out of memory judging the ternary codes");
        return 0;
    }
    for (uint32_t t = 0; t < T; t++)
        if (!(stp && kvq_vidkv_mask_get(ex->prot, t))) tok[q++] = t; /* the unprotected list */
    for (uint32_t h = 0; h < p.heads && !bad; h++)
        for (uint32_t b = 0; b < nbt && !bad; b++)
            for (uint32_t ch = 0; ch < d && !bad; ch++) {
                uint64_t g = kvq_vidkv_value_group(&p, nbt, h, b, ch);
                const uint8_t *eg = ex->tern + g * gb, *og = o->tern + g * gb;
                uint32_t m = kvq_vidkv_block_members(nt, G, b);
                for (uint32_t i = 0; i < G; i++) {
                    uint32_t want = kvq_vidkv_tern_get(eg, i, p.vpack), got = kvq_vidkv_tern_get(og, i, p.vpack), alt;
                    uint64_t e;
                    int32_t gt = kvq_vidkv_digit_trit(got == 3u ? 0u : got);
                    float y;
                    if (i >= m) {
                        if (got != 0u) {
                            snprintf(v->detail, sizeof v->detail,
                                     "tern: group %llu, unused slot %u holds digit %u, not 0 [VIDKV-V-01] [VIDKV-V-04]",
                                     (unsigned long long)g, i, got);
                            bad = 1;
                            break;
                        }
                        continue;
                    }
                    e = ((uint64_t)h * T + tok[b * G + i]) * d + ch;
                    if (got == 3u ||
                        (got != want && !(kvq_amb_find(&rf->amb, e, &alt) && (int32_t)(int8_t)alt == gt))) {
                        snprintf(v->detail, sizeof v->detail,
                                 "tern: element %llu (head %u, token %u, channel %u): code %d, expected %d%s; "
                                 "the threshold is decisive there [VIDKV-B-04] [VIDKV-V-02] (gamma %a)",
                                 (unsigned long long)e, h, tok[b * G + i], ch, got == 3u ? 3 : gt,
                                 kvq_vidkv_digit_trit(want), kvq_amb_find(&rf->amb, e, &alt) ? " or its neighbour" : "",
                                 (double)p.gamma);
                        bad = 1;
                        break;
                    }
                    y = gt == 0 ? 0.0f : gt > 0 ? 1.0f : -1.0f;
                    if (kvq_f32_bits(o->deq[e]) != kvq_f32_bits(y)) {
                        snprintf(v->detail, sizeof v->detail,
                                 "deq of element %llu: 0x%08lx (%a), the subject's own code %d dequantizes to %a "
                                 "[VIDKV-V-03] (vdeq raw: -1, +0, +1)",
                                 (unsigned long long)e, (unsigned long)kvq_f32_bits(o->deq[e]), (double)o->deq[e], gt,
                                 (double)y);
                        bad = 1;
                        break;
                    }
                }
            }
    free(tok);
    if (bad) return 0;
    /* protected tokens: their pinned dequantization [KIVI-D-01] */
    for (uint32_t t = 0; stp && t < T; t++) {
        if (!kvq_vidkv_mask_get(ex->prot, t)) continue;
        for (uint32_t h = 0; h < p.heads; h++)
            for (uint32_t ch = 0; ch < d; ch++) {
                uint64_t e = ((uint64_t)h * T + t) * d + ch;
                if (kvq_f32_bits(o->deq[e]) != kvq_f32_bits(ex->deq[e])) {
                    snprintf(v->detail, sizeof v->detail,
                             "deq of protected element %llu: expected 0x%08lx (%a), got 0x%08lx (%a) [VIDKV-V-06] "
                             "[KIVI-D-01]",
                             (unsigned long long)e, (unsigned long)kvq_f32_bits(ex->deq[e]), (double)ex->deq[e],
                             (unsigned long)kvq_f32_bits(o->deq[e]), (double)o->deq[e]);
                    return 0;
                }
            }
    }
    return 1;
}

static void judge_values(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    char g[48];
    const char *pack = p->vpack == KVQ_VIDKV_PACK_BITS2 ? "(pack bits2) [LAY-PACK-01]" : "(pack base3)";
    const char *deq = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? "(vdeq scaled: code * beta)" : "(vdeq raw: -1, +0, +1)";
    snprintf(g, sizeof g, "(gamma %a)", (double)p->gamma);
    if (!field_ok(v, c, out, "prot", " [VIDKV-STP-02] [VIDKV-STP-03]%s%s", "", "")) return;
    if (c->level == KVQ_LEVEL_BOUNDED) {
        if (!field_ok(v, c, out, "p_codes", " [VIDKV-STP-03] [KIVI-Q-04]%s%s", "", "")) return;
        if (!field_ok(v, c, out, "p_scale", " [VIDKV-STP-03] [KIVI-Q-02]%s%s", "", "")) return;
        if (!field_ok(v, c, out, "p_zero", " [VIDKV-STP-03] [KIVI-Q-03]%s%s", "", "")) return;
        if (!judge_tern_bounded(v, c, out)) return;
        if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-L-05]")) return;
        v->outcome = KVQ_PASS;
        return;
    }
    if (!field_ok(v, c, out, "tern", " [VIDKV-V-02] %s [VIDKV-V-04] %s", g, pack)) return;
    if (!field_ok(v, c, out, "beta", " [VIDKV-V-03] %s%s", deq, "")) return;
    if (!field_ok(v, c, out, "p_codes", " [VIDKV-STP-03] [KIVI-Q-04]%s%s", "", "")) return;
    if (!field_ok(v, c, out, "p_scale", " [VIDKV-STP-03] [KIVI-Q-02]%s%s", "", "")) return;
    if (!field_ok(v, c, out, "p_zero", " [VIDKV-STP-03] [KIVI-Q-03]%s%s", "", "")) return;
    if (!field_ok(v, c, out, "deq", " [VIDKV-V-06] [VIDKV-V-03] %s%s", deq, "")) return;
    if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-L-05]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_stream(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    if (!field_ok(v, c, out, "keys", " [VIDKV-W-02] %s [VIDKV-K-11]%s",
                  p->kflush == KVQ_VIDKV_KFLUSH_APPEND ? "(kflush append: each block quantized on its own)"
                                                       : "(kflush requant: the whole key cache requantized)",
                  ""))
        return;
    if (!field_ok(v, c, out, "values", " [VIDKV-W-02] %s [VIDKV-V-06]%s",
                  p->vflush == KVQ_VIDKV_VFLUSH_REQUANT ? "(vflush requant: the whole value cache requantized)"
                                                        : "(vflush append: each block quantized on its own)",
                  p->protect > 0.0f ? " [VIDKV-W-01] (prefill values with STP) [VIDKV-STP-03]" : ""))
        return;
    if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-W-02] [VIDKV-L-05]")) return;
    v->outcome = KVQ_PASS;
}

static void judge_deq_keys(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_vidkv_params p = keys_params(in_of(c));
    const kvq_vidkv_deq_out *o = out;
    const kvq_vidkv_deq_ref *rf = c->ref;
    if (kvq_vidkv_normal_mode(&p) != KVQ_VIDKV_NORMAL_FFT) {
        if (!field_ok(v, c, out, "deq", " [VIDKV-K-11] [VIDKV-K-03] [VIDKV-K-08] %s%s", nrm_req(&p), "")) return;
        if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-L-05]")) return;
        v->outcome = KVQ_PASS;
        return;
    }
    if (c->level == KVQ_LEVEL_EXACT) {
        snprintf(v->detail, sizeof v->detail, "an FFT keys case at the exact level [VIDKV-B-05]");
        return;
    }
    if (!flags_ok(v, c, out, flags, KVQ_FLAG_SUBNORMAL, "[VIDKV-L-04]")) return;
    for (uint64_t e = 0; e < kvq_vidkv_elems(&p); e++) {
        double y = o->deq[e], lo = rf->lo[e], hi = rf->hi[e];
        if (y >= lo && y <= hi) {
            if (lo < hi) kvq_verdict_margin(v, "inverse DFT distance [VIDKV-B-03]", fabs(y - (0.5 * lo + 0.5 * hi)),
                                            0.5 * hi - 0.5 * lo);
            continue;
        }
        snprintf(v->detail, sizeof v->detail,
                 "deq of element %llu (head %llu, token %llu, channel %llu) = %a (0x%08lx) outside [%a, %a]: %s",
                 (unsigned long long)e, (unsigned long long)(e / ((uint64_t)p.tokens * p.dim)),
                 (unsigned long long)(e / p.dim % p.tokens), (unsigned long long)(e % p.dim), y,
                 (unsigned long)kvq_f32_bits(o->deq[e]), lo, hi,
                 lo == hi ? "the pinned dequantization [VIDKV-K-11] [VIDKV-K-03]"
                          : "the inverse DFT of the stored codes and scales +- rho_i, {0, s} per component "
                            "[VIDKV-B-03] [VIDKV-K-07] [VIDKV-K-06]");
        return;
    }
    v->outcome = KVQ_PASS;
}

static void judge_deq_values(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags)
{
    const kvq_vidkv_params *p = &in_of(c)->prm;
    const char *deq = p->vdeq == KVQ_VIDKV_VDEQ_SCALED ? "(vdeq scaled: code * beta)" : "(vdeq raw: -1, +0, +1)";
    if (!field_ok(v, c, out, "deq", " [VIDKV-V-06] [VIDKV-V-03] %s [VIDKV-V-04]%s", deq,
                  p->protect > 0.0f ? " [KIVI-D-01] (protected tokens)" : ""))
        return;
    if (!flags_ok(v, c, out, flags, ~0u, "[VIDKV-L-05]")) return;
    v->outcome = KVQ_PASS;
}

/* ---- ref-fast's VIDKV entries (the fast path returns kvq_status, an entry int) ---- */

static int ref_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                             const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_quantize_keys(out, flags, k, prm, pol);
}

static int ref_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in, const kvq_vidkv_params *prm,
                               const kvq_policy *pol)
{
    return kvq_vidkv_dequantize_keys(y, flags, in, prm, pol);
}

static int ref_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags, const float *v,
                               const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    return kvq_vidkv_quantize_values(out, np, flags, v, prm, stp, pol);
}

static int ref_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in, uint32_t np,
                                 const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_dequantize_values(y, flags, in, np, prm, pol);
}

static int ref_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                      const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode, const kvq_vidkv_params *prm,
                      const kvq_policy *pol)
{
    return kvq_vidkv_stream(kdeq, vdeq, flags, k, v, stp, prefill, decode, prm, pol);
}

static kvq_entry_fn ref_entry(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "vidkv_quantize_keys") == 0) return (kvq_entry_fn)ref_quantize_keys;
    if (strcmp(entry, "vidkv_dequantize_keys") == 0) return (kvq_entry_fn)ref_dequantize_keys;
    if (strcmp(entry, "vidkv_quantize_values") == 0) return (kvq_entry_fn)ref_quantize_values;
    if (strcmp(entry, "vidkv_dequantize_values") == 0) return (kvq_entry_fn)ref_dequantize_values;
    if (strcmp(entry, "vidkv_stream") == 0) return (kvq_entry_fn)ref_stream;
    return NULL;
}

/* ---- schemas [VEC-VIDKV-02..03] -------------------------------------------------------- */

#define IN(m) .role = KVQ_ROLE_INPUT, .offset = offsetof(kvq_vidkv_case_in, m)
#define U32(k, m) { .key = k, .type = KVQ_FT_U32, IN(m) }
#define F32(k, m) { .key = k, .type = KVQ_FT_F32, IN(m) }
#define SHAPE U32("heads", prm.heads), U32("tokens", prm.tokens), U32("dim", prm.dim), U32("group", prm.group), \
              U32("meta", prm.meta)

#define KEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_vidkv_keys_out, m)
#define KREF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_vidkv_keys_ref, m)
#define KOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_vidkv_keys_out, m)
static const kvq_field KEYS_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE,
    U32("split", prm.split), U32("normal", prm.normal), F32("key_frac", prm.key_frac), U32("abnormal", abnormal),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "k", .type = KVQ_FT_A_F32, IN(k), .count_rule = N_KIN, .finite = 1 },
    { .key = "mask", .type = KVQ_FT_A_U8, KEXP(mask), .count_rule = N_MASK },
    { .key = "abn_codes", .type = KVQ_FT_A_U8, KEXP(abn_codes), .count_rule = N_ABN_B },
    { .key = "abn_scale", .type = KVQ_FT_A_META, KEXP(abn_scale), .count_rule = N_ABN_G },
    { .key = "abn_zero", .type = KVQ_FT_A_META, KEXP(abn_zero), .count_rule = N_ABN_G },
    { .key = "nrm_codes", .type = KVQ_FT_A_U8, KEXP(nrm_codes), .count_rule = N_NRM_B },
    { .key = "nrm_scale", .type = KVQ_FT_A_META, KEXP(nrm_scale), .count_rule = N_NRM_G },
    { .key = "nrm_zero", .type = KVQ_FT_A_META, KEXP(nrm_zero), .count_rule = N_NRM_Z },
    { .key = "deq", .type = KVQ_FT_A_F32, KEXP(deq), .count_rule = N_OUT },
    { .key = "amb", .type = KVQ_FT_AMB, KREF(amb), .count_rule = N_AMB },
    { .key = "s_lo", .type = KVQ_FT_A_META, KREF(s_lo), .count_rule = N_FFT_G },
    { .key = "s_hi", .type = KVQ_FT_A_META, KREF(s_hi), .count_rule = N_FFT_G },
    KVQ_F_OUT_FLAGS,
    { .key = "mask", .type = KVQ_FT_A_U8, KOUT(mask), .count_rule = N_MASK, .cmp = KVQ_CMP_ALWAYS },
    { .key = "abn_codes", .type = KVQ_FT_A_U8, KOUT(abn_codes), .count_rule = N_ABN_B, .cmp = KVQ_CMP_ALWAYS },
    { .key = "abn_scale", .type = KVQ_FT_A_META, KOUT(abn_scale), .count_rule = N_ABN_G, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "abn_zero", .type = KVQ_FT_A_META, KOUT(abn_zero), .count_rule = N_ABN_G, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "nrm_codes", .type = KVQ_FT_A_U8, KOUT(nrm_codes), .count_rule = N_NRM_B, .cmp = KVQ_CMP_EXACT },
    { .key = "nrm_scale", .type = KVQ_FT_A_META, KOUT(nrm_scale), .count_rule = N_NRM_G, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "nrm_zero", .type = KVQ_FT_A_META, KOUT(nrm_zero), .count_rule = N_NRM_Z, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "deq", .type = KVQ_FT_A_F32, KOUT(deq), .count_rule = N_OUT, .cmp = KVQ_CMP_EXACT },
};

#define VEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_vidkv_values_out, m)
#define VOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_vidkv_values_out, m)
static const kvq_field VALUES_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE,
    U32("vdeq", prm.vdeq), U32("vpack", prm.vpack), F32("gamma", prm.gamma), F32("protect", prm.protect),
    U32("rows", rows), U32("sdim", sdim), U32("vis_first", vis_first), U32("vis_count", vis_count),
    U32("txt_first", txt_first), U32("txt_count", txt_count), U32("protected", protect_n),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "v", .type = KVQ_FT_A_F32, IN(v), .count_rule = N_KIN, .finite = 1 },
    { .key = "xs", .type = KVQ_FT_A_F32, IN(xs), .count_rule = N_XS, .finite = 1 },
    { .key = "prot", .type = KVQ_FT_A_U8, VEXP(prot), .count_rule = N_PROT },
    { .key = "tern", .type = KVQ_FT_A_U8, VEXP(tern), .count_rule = N_TERN_B },
    { .key = "beta", .type = KVQ_FT_A_META, VEXP(beta), .count_rule = N_BETA },
    { .key = "p_codes", .type = KVQ_FT_A_U8, VEXP(p_codes), .count_rule = N_PB },
    { .key = "p_scale", .type = KVQ_FT_A_META, VEXP(p_scale), .count_rule = N_PG },
    { .key = "p_zero", .type = KVQ_FT_A_META, VEXP(p_zero), .count_rule = N_PG },
    { .key = "deq", .type = KVQ_FT_A_F32, VEXP(deq), .count_rule = N_OUT },
    { .key = "amb", .type = KVQ_FT_AMB, .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_vidkv_values_ref, amb),
      .count_rule = N_VAMB },
    KVQ_F_OUT_FLAGS,
    { .key = "prot", .type = KVQ_FT_A_U8, VOUT(prot), .count_rule = N_PROT, .cmp = KVQ_CMP_ALWAYS },
    { .key = "tern", .type = KVQ_FT_A_U8, VOUT(tern), .count_rule = N_TERN_B, .cmp = KVQ_CMP_EXACT },
    { .key = "beta", .type = KVQ_FT_A_META, VOUT(beta), .count_rule = N_BETA, .cmp = KVQ_CMP_EXACT,
      .unit = "group" },
    { .key = "p_codes", .type = KVQ_FT_A_U8, VOUT(p_codes), .count_rule = N_PB, .cmp = KVQ_CMP_ALWAYS },
    { .key = "p_scale", .type = KVQ_FT_A_META, VOUT(p_scale), .count_rule = N_PG, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "p_zero", .type = KVQ_FT_A_META, VOUT(p_zero), .count_rule = N_PG, .cmp = KVQ_CMP_ALWAYS,
      .unit = "group" },
    { .key = "deq", .type = KVQ_FT_A_F32, VOUT(deq), .count_rule = N_OUT, .cmp = KVQ_CMP_EXACT },
};

#define SEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_vidkv_stream_out, m)
#define SOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_vidkv_stream_out, m)
static const kvq_field STREAM_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP,
    U32("heads", prm.heads), U32("dim", prm.dim), U32("group", prm.group), U32("meta", prm.meta),
    U32("split", prm.split), U32("normal", prm.normal), F32("key_frac", prm.key_frac),
    U32("vdeq", prm.vdeq), U32("vpack", prm.vpack), F32("gamma", prm.gamma), F32("protect", prm.protect),
    U32("kflush", prm.kflush), U32("vflush", prm.vflush), U32("prefill", prefill), U32("decode", decode),
    U32("rows", rows), U32("sdim", sdim), U32("vis_first", vis_first), U32("vis_count", vis_count),
    U32("txt_first", txt_first), U32("txt_count", txt_count),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    { .key = "k", .type = KVQ_FT_A_F32, IN(k), .count_rule = N_SIN, .finite = 1 },
    { .key = "v", .type = KVQ_FT_A_F32, IN(v), .count_rule = N_SIN, .finite = 1 },
    { .key = "xs", .type = KVQ_FT_A_F32, IN(xs), .count_rule = N_XS, .finite = 1 },
    { .key = "keys", .type = KVQ_FT_A_F32, SEXP(keys), .count_rule = N_SOUT },
    { .key = "values", .type = KVQ_FT_A_F32, SEXP(values), .count_rule = N_SOUT },
    KVQ_F_OUT_FLAGS,
    { .key = "keys", .type = KVQ_FT_A_F32, SOUT(keys), .count_rule = N_SOUT, .cmp = KVQ_CMP_EXACT },
    { .key = "values", .type = KVQ_FT_A_F32, SOUT(values), .count_rule = N_SOUT, .cmp = KVQ_CMP_EXACT },
};

/* the dequantizers' stored inputs: metadata as binary32 (8 hex digits) even
 * under F16, so that a value not in binary16, a NaN or 2^102 can be written
 * [VIDKV-D-03] */
#define STORED(k, m, rule) { .key = k, .type = KVQ_FT_A_U8, IN(m), .count_rule = rule }
#define STORED_F(k, m, rule) { .key = k, .type = KVQ_FT_A_F32, IN(m), .count_rule = rule }
#define DEXP(m) .role = KVQ_ROLE_EXPECTED, .offset = offsetof(kvq_vidkv_deq_out, m)
#define DREF(m) .role = KVQ_ROLE_REFERENCE, .offset = offsetof(kvq_vidkv_deq_ref, m)
#define DOUT(m) .role = KVQ_ROLE_OUTPUT, .offset = offsetof(kvq_vidkv_deq_out, m)
static const kvq_field DEQ_KEYS_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE,
    U32("split", prm.split), U32("normal", prm.normal), F32("key_frac", prm.key_frac), U32("abnormal", abnormal),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    STORED("mask", mask, N_MASK), STORED("abn_codes", abn_codes, N_ABN_B),
    STORED_F("abn_scale", abn_scale, N_ABN_G), STORED_F("abn_zero", abn_zero, N_ABN_G),
    STORED("nrm_codes", nrm_codes, N_NRM_B), STORED_F("nrm_scale", nrm_scale, N_NRM_G),
    STORED_F("nrm_zero", nrm_zero, N_NRM_Z),
    { .key = "deq", .type = KVQ_FT_A_F32, DEXP(deq), .count_rule = N_OUT },
    { .key = "lo", .type = KVQ_FT_A_F32, DREF(lo), .count_rule = N_DEQ_REF },
    { .key = "hi", .type = KVQ_FT_A_F32, DREF(hi), .count_rule = N_DEQ_REF },
    KVQ_F_OUT_FLAGS,
    { .key = "deq", .type = KVQ_FT_A_F32, DOUT(deq), .count_rule = N_OUT, .cmp = KVQ_CMP_EXACT },
};

static const kvq_field DEQ_VALUES_FIELDS[] = {
    KVQ_F_ID, KVQ_F_LEVEL, KVQ_F_OP, SHAPE,
    U32("vdeq", prm.vdeq), U32("vpack", prm.vpack), F32("gamma", prm.gamma), F32("protect", prm.protect),
    U32("protected", protect_n),
    KVQ_F_POLICY, KVQ_F_STATUS, KVQ_F_FLAGS,
    STORED("tern", tern, N_TERN_B), STORED_F("beta", beta, N_BETA), STORED("prot", prot, N_PROT),
    STORED("p_codes", p_codes, N_PB), STORED_F("p_scale", p_scale, N_PG), STORED_F("p_zero", p_zero, N_PG),
    { .key = "deq", .type = KVQ_FT_A_F32, DEXP(deq), .count_rule = N_OUT },
    KVQ_F_OUT_FLAGS,
    { .key = "deq", .type = KVQ_FT_A_F32, DOUT(deq), .count_rule = N_OUT, .cmp = KVQ_CMP_EXACT },
};

#define BOTH (KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED))

const kvq_op kvq_op_vidkv_keys = {
    .name = "vidkv-keys",
    .family = &kvq_family_vidkv,
    .summary = "keys: the channel split, 2-bit abnormal and 1-bit normal groups (FFT, minmax, signmean), dequantized",
    .fields = KEYS_FIELDS,
    .nfields = KVQ_NELEMS(KEYS_FIELDS),
    .in_size = sizeof(kvq_vidkv_case_in),
    .out_size = sizeof(kvq_vidkv_keys_out),
    .ref_size = sizeof(kvq_vidkv_keys_ref),
    .levels = BOTH,
    .entries = { { .name = "vidkv_quantize_keys", .sigver = 1 }, { .name = "vidkv_dequantize_keys", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID_KEYS,
    .meta_half = "meta == 1",
    .amb_lo = "0",
    .amb_hi = "1",
    .check = check_keys,
    .describe = describe_keys,
    .solve = kvq_vidkv_solve_keys,
    .call = call_keys,
    .judge = judge_keys,
};

const kvq_op kvq_op_vidkv_values = {
    .name = "vidkv-values",
    .family = &kvq_family_vidkv,
    .summary = "values: ternary groups (base3 or bits2, raw or scaled), token protection at prefill, dequantized",
    .fields = VALUES_FIELDS,
    .nfields = KVQ_NELEMS(VALUES_FIELDS),
    .in_size = sizeof(kvq_vidkv_case_in),
    .out_size = sizeof(kvq_vidkv_values_out),
    .ref_size = sizeof(kvq_vidkv_values_ref),
    .levels = BOTH,
    .entries = { { .name = "vidkv_quantize_values", .sigver = 1 },
                 { .name = "vidkv_dequantize_values", .sigver = 1 } },
    .nentries = 2,
    .valid = VALID_VALUES,
    .meta_half = "meta == 1",
    .amb_lo = "-1",
    .amb_hi = "1",
    .check = check_values,
    .describe = describe_values,
    .solve = kvq_vidkv_solve_values,
    .call = call_values,
    .judge = judge_values,
};

const kvq_op kvq_op_vidkv_stream = {
    .name = "vidkv-stream",
    .family = &kvq_family_vidkv,
    .summary = "prefill (values with STP), then decoded tokens flushed every G: keys requantized or appended, values appended or requantized",
    .fields = STREAM_FIELDS,
    .nfields = KVQ_NELEMS(STREAM_FIELDS),
    .in_size = sizeof(kvq_vidkv_case_in),
    .out_size = sizeof(kvq_vidkv_stream_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .entries = { { .name = "vidkv_stream", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_STREAM,
    .describe = describe_stream,
    .solve = kvq_vidkv_solve_stream,
    .call = call_stream,
    .judge = judge_stream,
};

const kvq_op kvq_op_vidkv_deq_keys = {
    .name = "vidkv-deq-keys",
    .family = &kvq_family_vidkv,
    .summary = "dequantize given stored keys (the input checks of the dequantizer, then the keys)",
    .fields = DEQ_KEYS_FIELDS,
    .nfields = KVQ_NELEMS(DEQ_KEYS_FIELDS),
    .in_size = sizeof(kvq_vidkv_case_in),
    .out_size = sizeof(kvq_vidkv_deq_out),
    .ref_size = sizeof(kvq_vidkv_deq_ref),
    .levels = BOTH,
    .entries = { { .name = "vidkv_dequantize_keys", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_KEYS,
    .check = check_keys,
    .describe = describe_deq_keys,
    .solve = kvq_vidkv_solve_deq_keys,
    .call = call_deq_keys,
    .judge = judge_deq_keys,
};

const kvq_op kvq_op_vidkv_deq_values = {
    .name = "vidkv-deq-values",
    .family = &kvq_family_vidkv,
    .summary = "dequantize given stored values (the input checks of the dequantizer, then the values)",
    .fields = DEQ_VALUES_FIELDS,
    .nfields = KVQ_NELEMS(DEQ_VALUES_FIELDS),
    .in_size = sizeof(kvq_vidkv_case_in),
    .out_size = sizeof(kvq_vidkv_deq_out),
    .ref_size = 0,
    .levels = KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT),
    .entries = { { .name = "vidkv_dequantize_values", .sigver = 1 } },
    .nentries = 1,
    .valid = VALID_DEQ_VALUES,
    .describe = describe_deq_values,
    .solve = kvq_vidkv_solve_deq_values,
    .call = call_deq_values,
    .judge = judge_deq_values,
};

static const kvq_op *const OPS[] = { &kvq_op_vidkv_keys,     &kvq_op_vidkv_values,     &kvq_op_vidkv_stream,
                                     &kvq_op_vidkv_deq_keys, &kvq_op_vidkv_deq_values };

const kvq_family kvq_family_vidkv = {
    .name = "vidkv",
    .title = "VIDKV",
    .spec = "spec/vidkv.md",
    .gpu = 1,
    .ops = OPS,
    .nops = KVQ_NELEMS(OPS),
    .gen_count = kvq_vidkv_gen_count,
    .gen_case = kvq_vidkv_gen_case,
    .ref_entry = ref_entry,
};
