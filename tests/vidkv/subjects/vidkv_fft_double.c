/*
 * vidkv_fft_double.c -- a subject with the freedom of the bounded level: the
 * FFT normal path [VIDKV-K-05..07] evaluated in binary64 (libm twiddles in
 * binary64, the transform, the scales' sums and the inverse in binary64, each
 * result rounded to binary32 once), the rest the reference's.  Its codes,
 * scales and dequantized keys differ from the reference's in the last bits
 * only: kvq verify must PASS every FFT case, at the bounded level, whose
 * radii [VIDKV-B-01..03] admit it (a cuFFT kernel is judged the same way).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_vidkv.h"

#define SUBJECT_NAME "vidkv-fft-double"
#define VIDKV_OWN_KEYS

static const double TWO_PI = 6.283185307179586476925286766559;

static int fft_case(const kvq_vidkv_params *p)
{
    return p != NULL && kvq_vidkv_params_ok(p) && kvq_vidkv_shape_ok(p) &&
           kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_FFT && kvq_vidkv_n_nrm(p) > 0u;
}

/* The normal channels of head h, ascending (from the mask). */
static uint32_t normal_list(uint32_t *nl, const uint8_t *mask, const kvq_vidkv_params *p, uint32_t h)
{
    uint32_t n = 0;
    const uint8_t *row = mask + kvq_vidkv_mask_row(p, h);
    for (uint32_t c = 0; c < p->dim; c++)
        if (!kvq_vidkv_mask_get(row, c)) nl[n++] = c;
    return n;
}

/* Storage of a binary32 scale [VIDKV-K-06]: RN16 under F16, zero below the
 * smallest normal. */
static float store(float s, uint32_t meta, uint32_t *flags)
{
    int ov = 0;
    if (meta == KVQ_META_F16) s = kvq_round_f16(s, &ov);
    if (s < (meta == KVQ_META_F16 ? 0x1p-14f : 0x1p-126f)) {
        if (flags) *flags |= KVQ_FLAG_ZERO_SCALE;
        return 0.0f;
    }
    return s;
}

static int vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                               const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_status st = kvq_vidkv_quantize_keys(out, flags, k, prm, pol);
    uint32_t nl[KVQ_VIDKV_MAX_DIM], N, m, G, nb;
    double *y;
    if (st != KVQ_OK || !fft_case(prm) || pol->subnormal != KVQ_SUBNORMAL_KEEP) return st;
    N = kvq_vidkv_n_nrm(prm);
    m = 2u * N;
    G = prm->group;
    nb = kvq_vidkv_blocks(prm);
    y = malloc((size_t)G * m * sizeof *y);
    if (y == NULL) return KVQ_E_NOMEM;
    for (uint32_t h = 0; h < prm->heads; h++) {
        normal_list(nl, out->mask, prm, h);
        for (uint32_t b = 0; b < nb; b++) {
            for (uint32_t i = 0; i < G; i++) /* the DFT of token b G + i, binary64 */
                for (uint32_t kk = 0; kk < N; kk++) {
                    double re = 0.0, im = 0.0;
                    for (uint32_t n = 0; n < N; n++) {
                        double x = k[kvq_vidkv_index(prm, h, b * G + i, nl[n])];
                        double a = TWO_PI * (double)((uint64_t)kk * n % N) / (double)N;
                        re += x * cos(a);
                        im -= x * sin(a);
                    }
                    y[(size_t)i * m + 2u * kk] = (double)(float)re;
                    y[(size_t)i * m + 2u * kk + 1u] = (double)(float)im;
                }
            for (uint32_t j = 0; j < m; j++) {
                uint64_t g = kvq_vidkv_nrm_group(prm, h, b, j);
                uint8_t *grp = out->nrm_codes + g * kvq_vidkv_nrm_group_bytes(prm);
                double S = 0.0;
                memset(grp, 0, kvq_vidkv_nrm_group_bytes(prm));
                for (uint32_t i = 0; i < G; i++) {
                    S += fabs(y[(size_t)i * m + j]);
                    kvq_pack_code(grp, i, 1u, y[(size_t)i * m + j] >= 0.0 ? 1u : 0u);
                }
                out->nrm_scale[g] = store((float)(S / G), prm->meta, NULL);
            }
        }
    }
    free(y);
    return st;
}

static int vidkv_dequantize_keys(float *yout, uint32_t *flags, const kvq_vidkv_keys *in,
                                 const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_status st = kvq_vidkv_dequantize_keys(yout, flags, in, prm, pol);
    uint32_t nl[KVQ_VIDKV_MAX_DIM], N, G, nb;
    if (st != KVQ_OK || !fft_case(prm)) return st;
    N = kvq_vidkv_n_nrm(prm);
    G = prm->group;
    nb = kvq_vidkv_blocks(prm);
    for (uint32_t h = 0; h < prm->heads; h++) {
        normal_list(nl, in->mask, prm, h);
        for (uint32_t b = 0; b < nb; b++)
            for (uint32_t i = 0; i < G; i++)
                for (uint32_t n = 0; n < N; n++) {
                    double acc = 0.0;
                    for (uint32_t kk = 0; kk < N; kk++) {
                        uint64_t ga = kvq_vidkv_nrm_group(prm, h, b, 2u * kk), gb = ga + 1u;
                        double a = kvq_unpack_code(in->nrm_codes + ga * kvq_vidkv_nrm_group_bytes(prm), i, 1u) *
                                   (double)in->nrm_scale[ga];
                        double bb = kvq_unpack_code(in->nrm_codes + gb * kvq_vidkv_nrm_group_bytes(prm), i, 1u) *
                                    (double)in->nrm_scale[gb];
                        double ang = TWO_PI * (double)((uint64_t)kk * n % N) / (double)N;
                        acc += a * cos(ang) - bb * sin(ang);
                    }
                    yout[kvq_vidkv_index(prm, h, b * G + i, nl[n])] = (float)(acc / N);
                }
    }
    return st;
}

#include "subject_vidkv.h"
