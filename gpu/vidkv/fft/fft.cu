/*
 * fft.cu -- the VIDKV keys on CUDA: the composed launchers
 * kvq_cuda_vidkv_quantize_keys / _dequantize_keys, and the FFT path
 * [VIDKV-K-05..07] on cuFFT.  Kept out of gpu/vidkv/ proper so that only the
 * programs that link cuFFT (gpu/vidkv/rules.mk) carry this unit.
 *
 * The transform.  A length N = n_n with no prime factor above 7 runs as one
 * batched cuFFT C2C transform (one row per head and token, the normal channels
 * gathered as (x, 0)); cuFFT computes such lengths by Cooley-Tukey passes of
 * radix 2, 3, 5 and 7, which lemma F of spec/bounds/vidkv.md covers.  Every
 * other length runs on vk_dft_kernel, a naive DFT in binary32 with the
 * reference's twiddles (RN32 of binary64 cos/sin, within tau), which lemma W
 * covers: cuFFT's Bluestein path is never used.  Plans are created once per
 * (N, batch) and kept (vk_plan, a small cache behind a mutex); batches are
 * cut at VK_FFT_ROWS rows.  The result is a bounded-level output [VIDKV-B-05]:
 * decisive codes equal the reference's, ambiguous ones may differ, scales and
 * reconstructions lie within [VIDKV-B-02..03].  The length rule is
 * [VIDKV-DEV-01] (spec/bounds/vidkv.md).
 *
 * Kernels (the row-blocked ones: a block 16 tokens of one head, a thread a
 * channel, the 16 tokens' loads unrolled so they are in flight at once):
 *   vk_gather_kernel    normal channels of every token into (x, 0) rows
 *   vk_dft_kernel       naive forward / inverse DFT of one row a block
 *   vk_comp_kernel      the 1-bit component groups [VIDKV-K-06]: one thread a
 *                       (head, block, component) group, S ascending from +0;
 *                       G = 32, 64: the group's loads unrolled, the codes stored
 *                       as 4-byte words
 *   vk_build_kernel     a_k + i b_k of every token from codes and scales
 *                       [VIDKV-K-07]; when G is a multiple of 16 the 16 tokens'
 *                       code bits from two bytes, the scales once
 *   vk_rows_kernel      the dequantized rows whole (a thread a channel, every
 *                       row one coalesced store): abnormal channels from their
 *                       codes, normal ones RN32(Re / N) (N a power of two:
 *                       RN32(Re * 2^-k), the same rounding, no division)
 */
#include <cuda_runtime.h>
#include <cufft.h>

#include <math.h>
#include <stdint.h>
#include <mutex>
#include <stdlib.h>
#include <string.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"

#define VK_FFT_ROWS (1u << 20) /* rows of one cuFFT execution at most */
#define VK_PLANS    16

int kvq_cuda_vidkv_fft_length_ok(uint32_t N)
{
    if (N < 2u) return 0; /* N = 1: the identity, on the naive kernel */
    for (uint32_t q = 2u; q <= 7u; q++)
        while (N % q == 0u) N /= q;
    return N == 1u;
}

/* ---- plan cache ------------------------------------------------------------ */

typedef struct vk_plan_ent {
    uint32_t N, batch;
    cufftHandle plan;
} vk_plan_ent;

static vk_plan_ent g_plans[VK_PLANS];
static int g_nplans;
static std::mutex g_plan_mu;

/* The C2C plan of `batch` contiguous rows of length N, on `s`. */
static int vk_plan(cufftHandle *out, uint32_t N, uint32_t batch, cudaStream_t s)
{
    std::lock_guard<std::mutex> lk(g_plan_mu);
    for (int i = 0; i < g_nplans; i++)
        if (g_plans[i].N == N && g_plans[i].batch == batch) {
            if (cufftSetStream(g_plans[i].plan, s) != CUFFT_SUCCESS) return 0;
            *out = g_plans[i].plan;
            return 1;
        }
    cufftHandle p;
    int n = (int)N;
    if (cufftPlanMany(&p, 1, &n, NULL, 1, n, NULL, 1, n, CUFFT_C2C, (int)batch) != CUFFT_SUCCESS)
        return 0;
    if (g_nplans == VK_PLANS) { /* full: drop the oldest */
        cufftDestroy(g_plans[0].plan);
        for (int i = 1; i < VK_PLANS; i++) g_plans[i - 1] = g_plans[i];
        g_nplans--;
    }
    g_plans[g_nplans].N = N;
    g_plans[g_nplans].batch = batch;
    g_plans[g_nplans].plan = p;
    g_nplans++;
    if (cufftSetStream(p, s) != CUFFT_SUCCESS) return 0;
    *out = p;
    return 1;
}

/* ---- twiddles (the reference's, [VIDKV-K-09]) -------------------------------- */

static void vk_twiddles(float2 *tw, uint32_t N)
{
    for (uint32_t m = 0; m < N; m++) {
        float c, s;
        if (m == 0u) { c = 1.0f; s = 0.0f; }
        else if (4u * m == N) { c = 0.0f; s = 1.0f; }
        else if (2u * m == N) { c = -1.0f; s = 0.0f; }
        else if (4u * m == 3u * N) { c = 0.0f; s = -1.0f; }
        else {
            const double th = 0x1.921fb54442d18p+2 * (double)m / (double)N;
            c = (float)cos(th);
            s = (float)sin(th);
        }
        tw[m] = make_float2(c, s);
    }
}

/* ---- kernels ------------------------------------------------------------------ */

/* Row-blocked element kernels: a block ROWS tokens of one head (grid.y), threads
 * over the N normal channels; the channel list of the head's mask row in shared
 * memory, no 64-bit division per element. */
#define ROWS 16u

__global__ void vk_gather_kernel(float2 *z, const float *k, const uint32_t *lists,
                                 kvq_vidkv_params p, uint32_t na, uint32_t N, bool daz)
{
    __shared__ uint32_t nl[KVQ_VIDKV_MAX_DIM];
    const uint32_t h = blockIdx.y, row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? h : 0u, d = p.dim;
    for (uint32_t j = threadIdx.x; j < N; j += blockDim.x) nl[j] = lists[(uint64_t)row * d + na + j];
    __syncthreads();
    const uint32_t t0 = blockIdx.x * ROWS, nt = min(ROWS, p.tokens - t0);
    const float *kr = k + ((uint64_t)h * p.tokens + t0) * d;
    float2 *zr = z + ((uint64_t)h * p.tokens + t0) * N;
    for (uint32_t j = threadIdx.x; j < N; j += blockDim.x) {
        const float *kc = kr + nl[j];
        uint32_t f = 0;
        if (nt == ROWS) { /* the ROWS tokens' loads in flight at once, then the stores */
            float v[ROWS];
#pragma unroll
            for (uint32_t i = 0; i < ROWS; i++) v[i] = kc[i * d];
#pragma unroll
            for (uint32_t i = 0; i < ROWS; i++) zr[i * N + j] = make_float2(vk_reread(v[i], daz, f), 0.0f);
        } else {
            for (uint32_t i = 0; i < nt; i++) zr[i * N + j] = make_float2(vk_reread(kc[i * d], daz, f), 0.0f);
        }
    }
}

/* One row a block: forward (sign -1: X_k = sum x_n (c - i s)) from the real
 * parts, or inverse (sign +1: Re sum (a + i b)(c + i s) = sum a c - b s), in
 * the reference's order; out may not alias in. */
__global__ void vk_dft_kernel(float2 *out, const float2 *in, const float2 *tw, uint32_t N,
                              uint64_t rows, int inverse)
{
    extern __shared__ float2 sh[];
    float2 *row = sh, *t = sh + N;
    for (uint32_t m = threadIdx.x; m < N; m += blockDim.x) t[m] = tw[m];
    for (uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        __syncthreads();
        for (uint32_t m = threadIdx.x; m < N; m += blockDim.x) row[m] = in[r * N + m];
        __syncthreads();
        for (uint32_t k = threadIdx.x; k < N; k += blockDim.x) {
            float re = 0.0f, im = 0.0f;
            for (uint32_t n = 0; n < N; n++) {
                const uint32_t m = (uint32_t)(((uint64_t)k * n) % N);
                if (!inverse) {
                    re = __fadd_rn(re, __fmul_rn(row[n].x, t[m].x));
                    im = __fsub_rn(im, __fmul_rn(row[n].x, t[m].y));
                } else {
                    re = __fadd_rn(re, __fmul_rn(row[n].x, t[m].x));
                    re = __fsub_rn(re, __fmul_rn(row[n].y, t[m].y));
                }
            }
            out[r * N + k] = make_float2(re, im);
        }
    }
}

/* Component group (h, b, j), j < 2N: the components y_{2k} = Re X_k, y_{2k+1} = Im X_k.
 * GT = G at compile time (32, 64): the group's G loads in flight at once; the codes
 * stored as 4-byte words when wordst (G = 32: a group's 4 code bytes at a multiple of 4). */
template <uint32_t GT>
__global__ void vk_comp_kernel(uint8_t *codes, float *scale, vk_state *st, const float *y,
                               kvq_vidkv_params p, uint32_t N, bool nanpol, bool wordst)
{
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t G = GT ? GT : p.group, nb = p.tokens / G, m = 2u * N;
    const uint64_t ng = (uint64_t)p.heads * nb * m;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        uint64_t hb;
        uint32_t j;
        vk_divmod(gid, ng, m, hb, j);
        const float *x = y + hb * G * m + j; /* ((h*T + b*G) + i)*2N + j */
        uint8_t *grp = codes + gid * (G / 8u);
        float S = 0.0f;
        uint32_t acc = 0;
        if (GT) {
            float v[GT ? GT : 1u];
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) v[i] = x[(uint64_t)i * m];
            uint32_t wd[GT ? GT / 32u : 1u];
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) {
                S = __fadd_rn(S, fabsf(v[i]));
                if (i % 32u == 0u) wd[i / 32u] = 0u;
                wd[i / 32u] |= (v[i] >= 0.0f ? 1u : 0u) << (i % 32u);
            }
#pragma unroll
            for (uint32_t w = 0; w < (GT ? GT / 32u : 1u); w++) {
                if (wordst) {
                    ((uint32_t *)grp)[w] = wd[w];
                } else {
#pragma unroll
                    for (uint32_t q = 0; q < 4u; q++) grp[4u * w + q] = (uint8_t)(wd[w] >> (8u * q));
                }
            }
        } else {
            for (uint32_t i = 0; i < G; i++) {
                const float v = x[(uint64_t)i * m];
                S = __fadd_rn(S, fabsf(v));
                acc |= (v >= 0.0f ? 1u : 0u) << (i % 8u);
                if (i % 8u == 7u) {
                    grp[i / 8u] = (uint8_t)acc;
                    acc = 0;
                }
            }
        }
        scale[gid] = vk_store_scale(__fdiv_rn(S, (float)G), p.meta, nanpol, f, err);
    }
    vk_publish(st, f, err);
}

__global__ void vk_build_kernel(float2 *z, const uint8_t *codes, const float *scale,
                                kvq_vidkv_params p, uint32_t N)
{
    const uint32_t h = blockIdx.y, G = p.group, nb = p.tokens / G;
    const uint32_t t0 = blockIdx.x * ROWS, t1 = min(p.tokens, t0 + ROWS);
    const uint32_t gbytes = G / 8u;
    float2 *zr = z + ((uint64_t)h * p.tokens + t0) * N;
    if (t1 - t0 == ROWS && G % ROWS == 0u) {
        /* the ROWS tokens lie in one block b, at slots i0 .. i0 + 15 of its groups: each
         * component's 16 code bits from two bytes, its scale once */
        const uint32_t b = t0 / G, i0 = t0 % G;
        const uint64_t gb = ((uint64_t)h * nb + b) * (2u * N);
        for (uint32_t k = threadIdx.x; k < N; k += blockDim.x) {
            const uint64_t g0 = gb + 2u * k;
            const uint8_t *ca = codes + g0 * gbytes + i0 / 8u, *cb = ca + gbytes;
            const uint32_t wa = (uint32_t)ca[0] | (uint32_t)ca[1] << 8, wb = (uint32_t)cb[0] | (uint32_t)cb[1] << 8;
            const float sa = scale[g0], sb = scale[g0 + 1u];
#pragma unroll
            for (uint32_t i = 0; i < ROWS; i++)
                zr[i * N + k] = make_float2((wa >> i) & 1u ? sa : 0.0f, (wb >> i) & 1u ? sb : 0.0f);
        }
        return;
    }
    uint32_t b = t0 / G, i = t0 % G;
    for (uint32_t t = t0; t < t1; t++) {
        const uint64_t r = (uint64_t)h * p.tokens + t, gb = ((uint64_t)h * nb + b) * (2u * N);
        for (uint32_t k = threadIdx.x; k < N; k += blockDim.x) {
            const uint64_t g0 = gb + 2u * k;
            const uint32_t ca = (codes[g0 * gbytes + i / 8u] >> (i % 8u)) & 1u;
            const uint32_t cb = (codes[(g0 + 1u) * gbytes + i / 8u] >> (i % 8u)) & 1u;
            z[r * N + k] = make_float2(ca ? scale[g0] : 0.0f, cb ? scale[g0 + 1u] : 0.0f);
        }
        if (++i == G) {
            i = 0;
            b++;
        }
    }
}

/* Whole rows of the FFT path's dequantized keys [VIDKV-K-07] [VIDKV-K-11]: a block
 * ROWS tokens of one head, a thread a channel down the ROWS tokens (no division a
 * row; an abnormal channel's metadata loaded once a group), every row written by
 * one warp's two paths in quick succession, so its sectors fill in the L2: an abnormal channel RN32(code * s + z) from its group's code
 * byte and metadata [KIVI-D-01], a normal one RN32(Re / N) from the inverse
 * transform's row (RN32(Re * 2^-k) when N = 2^k: the same rounding).  Runs
 * after the checks passed (read back before the transform). */
__global__ void vk_rows_kernel(float *y, const float2 *z, kvq_vidkv_keys in, const uint32_t *pos,
                               kvq_vidkv_params p, uint32_t na, uint32_t N)
{
    __shared__ uint32_t spos[KVQ_VIDKV_MAX_DIM];
    const uint32_t h = blockIdx.y, d = p.dim, G = p.group, nb = p.tokens / G;
    const uint32_t row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? h : 0u;
    for (uint32_t c = threadIdx.x; c < d; c += blockDim.x) spos[c] = pos[(uint64_t)row * d + c];
    __syncthreads();
    const bool pow2 = (N & (N - 1u)) == 0u;
    const float rn = pow2 ? __frcp_rn((float)N) : 0.0f; /* exact: 2^-k */
    const uint32_t t0 = blockIdx.x * ROWS, t1 = min(p.tokens, t0 + ROWS);
    for (uint32_t c = threadIdx.x; c < d; c += blockDim.x) {
        const uint32_t q = spos[c];
        uint32_t b = t0 / G, i = t0 - b * G; /* one division a thread; then stepped */
        float *yc = y + ((uint64_t)h * p.tokens + t0) * d + c;
        if (q & 0x80000000u) {
            /* the group's code bytes, scale and zero: loaded again only when the rows
             * cross into the next block */
            uint64_t g = ((uint64_t)h * nb + b) * na + (q & 0x7FFFFFFFu);
            float sc = in.abn_scale[g], zz = in.abn_zero[g];
            const uint64_t gstep = (uint64_t)na;
#pragma unroll 4
            for (uint32_t t = t0; t < t1; t++) {
                const uint32_t code = (in.abn_codes[g * (G / 4u) + i / 4u] >> (2u * (i % 4u))) & 3u;
                yc[(uint64_t)(t - t0) * d] = __fmaf_rn((float)code, sc, zz);
                if (++i == G && t + 1u < t1) {
                    i = 0;
                    g += gstep;
                    sc = in.abn_scale[g];
                    zz = in.abn_zero[g];
                }
            }
        } else {
            const float2 *zc = z + ((uint64_t)h * p.tokens + t0) * N + q;
#pragma unroll 4
            for (uint32_t t = t0; t < t1; t++) {
                const float re = zc[(uint64_t)(t - t0) * N].x;
                yc[(uint64_t)(t - t0) * d] = pow2 ? __fmul_rn(re, rn) : __fdiv_rn(re, (float)N);
            }
        }
    }
}

/* The launch shape of the row-blocked kernels. */
static dim3 vk_rgrid(const kvq_vidkv_params *p) { return dim3((p->tokens + ROWS - 1u) / ROWS, p->heads); }
static unsigned int vk_rbs(uint32_t N) { return N >= 256u ? 256u : (N + 31u) / 32u * 32u; }

/* The transform of `rows` rows of z in place (tmp: a second buffer of the
 * same size, used by the naive DFT; tw: device twiddles). */
static kvq_status vk_transform(float2 *z, float2 *tmp, const float2 *tw, uint32_t N, uint64_t rows,
                               int inverse, cudaStream_t s)
{
    if (kvq_cuda_vidkv_fft_length_ok(N)) {
        for (uint64_t r0 = 0; r0 < rows; r0 += VK_FFT_ROWS) {
            const uint32_t nr = (uint32_t)(rows - r0 < VK_FFT_ROWS ? rows - r0 : VK_FFT_ROWS);
            cufftHandle plan;
            if (!vk_plan(&plan, N, nr, s)) return KVQ_E_DEVICE;
            cufftComplex *zz = (cufftComplex *)(z + r0 * N);
            if (cufftExecC2C(plan, zz, zz, inverse ? CUFFT_INVERSE : CUFFT_FORWARD) != CUFFT_SUCCESS)
                return KVQ_E_DEVICE;
        }
        return KVQ_OK;
    }
    const uint32_t bs = N < 32u ? 32u : (N < 256u ? (N + 31u) / 32u * 32u : 256u);
    const uint64_t gb = rows < 132u * 16u ? rows : 132u * 16u;
    vk_dft_kernel<<<(unsigned int)gb, bs, 2u * N * sizeof(float2), s>>>(tmp, z, tw, N, rows, inverse);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    return cudaMemcpyAsync(z, tmp, rows * N * sizeof(float2), cudaMemcpyDeviceToDevice, s) ==
                   cudaSuccess
               ? KVQ_OK
               : KVQ_E_DEVICE;
}

/* Device twiddles of N (naive DFT only) in buf. */
static kvq_status vk_put_twiddles(float2 *buf, uint32_t N, cudaStream_t s)
{
    float2 *h = (float2 *)malloc(N * sizeof *h);
    kvq_status st = KVQ_OK;
    if (h == NULL) return KVQ_E_NOMEM;
    vk_twiddles(h, N);
    if (cudaMemcpyAsync(buf, h, N * sizeof *h, cudaMemcpyHostToDevice, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
        st = KVQ_E_DEVICE;
    free(h);
    return st;
}

static size_t up256(size_t n) { return (n + 255u) / 256u * 256u; }

/* The forward transform of the FFT path, as the quantizer runs it and as
 * kvq_cuda_vidkv_dft hands it to the test: every normal channel read under the
 * policy's subnormal rule [VIDKV-L-04] (daz: a zero of its sign, as the
 * reference's read_all), gathered as (x, 0), then transformed.  The one
 * sequence for both callers, so the component check of vidkv_test.cu checks
 * the transform the codes come from. */
static kvq_status vk_forward(float2 *z, float2 *tmp, float2 *tw, const float *d_k,
                             const uint32_t *lists, const kvq_vidkv_params *p, const kvq_policy *pol,
                             uint32_t na, uint32_t nn, cudaStream_t s)
{
    const uint64_t rows = (uint64_t)p->heads * p->tokens;
    kvq_status st;
    if (!kvq_cuda_vidkv_fft_length_ok(nn) && (st = vk_put_twiddles(tw, nn, s)) != KVQ_OK)
        return st;
    vk_gather_kernel<<<vk_rgrid(p), vk_rbs(nn), 0, s>>>(z, d_k, lists, *p, na, nn,
                                                         pol->subnormal == KVQ_SUBNORMAL_DAZ);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    return vk_transform(z, tmp, tw, nn, rows, 0, s);
}

/* ---- keys --------------------------------------------------------------------- */

/* The key quantizer; d_mn NULL: the split of the keys read [VIDKV-K-01..02];
 * else the split of the handed-in ranges d_mn, d_mx and the keys read once,
 * by the groups, which check them against the ranges [VIDKV-DEV-07]. */
static kvq_status quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *d_k,
                                const float *d_mn, const float *d_mx, const kvq_vidkv_params *p,
                                const kvq_policy *pol, uint32_t opts, cudaStream_t s)
{
    kvq_status st;
    uint32_t mode, na, nn;
    void *ws = NULL;
    vk_state h = {0u, 0u};
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    if (out == NULL || d_k == NULL || p == NULL || out->mask == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    if ((na > 0u && (out->abn_codes == NULL || out->abn_scale == NULL || out->abn_zero == NULL)) ||
        (nn > 0u && (out->nrm_codes == NULL || out->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && out->nrm_zero == NULL))))
        return KVQ_E_PARAM;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint64_t rows = (uint64_t)p->heads * p->tokens;
    const size_t rowsd = (size_t)kvq_vidkv_mask_rows(p) * p->dim * 4u;
    const size_t mb = kvq_vidkv_mask_bytes(p), acb = kvq_vidkv_abn_code_bytes(p),
                 ncb = kvq_vidkv_nrm_code_bytes(p), nag = kvq_vidkv_abn_groups(p) * 4u,
                 nng = kvq_vidkv_nrm_groups(p) * 4u;
    const int fft = mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u;
    const int naive = fft && !kvq_cuda_vidkv_fft_length_ok(nn);
    const size_t zb = fft ? rows * nn * sizeof(float2) : 0u;
    size_t off[16], tot = 256u;
    if ((d_mn == NULL) != (d_mx == NULL)) return KVQ_E_PARAM;
    int ni = 0;
    /* workspace: state, split scratch, lists, pos, [scratch outputs x7], z, tmp, twiddles,
     * the ranges' attained ends */
    const size_t sz[14] = {vk_split_scratch(p), rowsd, rowsd,
                           direct ? 0u : mb, direct ? 0u : acb, direct ? 0u : nag, direct ? 0u : nag,
                           direct ? 0u : ncb, direct ? 0u : nng, direct ? 0u : nng,
                           zb, naive ? zb : 0u, naive ? nn * sizeof(float2) : 0u, d_mn ? 2u * rowsd : 0u};
    for (ni = 0; ni < 14; ni++) {
        off[ni] = tot;
        tot += up256(sz[ni]);
    }
    if (cudaMallocAsync(&ws, tot, s) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        vk_state *dst = (vk_state *)w;
        uint32_t *lists = (uint32_t *)(w + off[1]), *pos = (uint32_t *)(w + off[2]);
        kvq_vidkv_keys o = *out;
        float2 *z = (float2 *)(w + off[10]), *tmp = (float2 *)(w + off[11]),
               *tw = (float2 *)(w + off[12]);
        if (!direct) {
            o.mask = w + off[3];
            o.abn_codes = w + off[4];
            o.abn_scale = (float *)(w + off[5]);
            o.abn_zero = (float *)(w + off[6]);
            o.nrm_codes = w + off[7];
            o.nrm_scale = (float *)(w + off[8]);
            o.nrm_zero = (float *)(w + off[9]);
        }
        uint32_t *att = d_mn ? (uint32_t *)(w + off[13]) : NULL;
        if (d_mn != NULL) { /* one kernel: the split of the ranges, the state and att zeroed */
            if ((st = vk_split_ranges_enqueue(o.mask, lists, pos, d_mn, d_mx, att, dst, p, s)) != KVQ_OK)
                goto out;
        } else if ((st = vk_split_enqueue(o.mask, lists, pos, dst, d_k, p, pol, w + off[0], s)) != KVQ_OK) {
            goto out; /* its first kernel zeroes the state */
        }
        vk_groups_enqueue(&o, dst, d_k, pos, p, pol, mode, d_mn, d_mx, att, s);
        if (d_mn != NULL) vk_att_enqueue(dst, att, 2u * (uint64_t)kvq_vidkv_mask_rows(p) * p->dim, s);
        VK_CK(cudaGetLastError());
        if (fft) {
            if ((st = vk_forward(z, tmp, tw, d_k, lists, p, pol, na, nn, s)) != KVQ_OK) goto out;
            const bool wordst = ((uintptr_t)o.nrm_codes & 3u) == 0u, nanpol = pol->overflow == KVQ_OVERFLOW_NAN;
            const unsigned int cb = vk_blocks(kvq_vidkv_nrm_groups(p), 128u);
            if (p->group == 32u)
                vk_comp_kernel<32u><<<cb, 128u, 0, s>>>(o.nrm_codes, o.nrm_scale, dst, (const float *)z, *p, nn,
                                                        nanpol, wordst);
            else if (p->group == 64u)
                vk_comp_kernel<64u><<<cb, 128u, 0, s>>>(o.nrm_codes, o.nrm_scale, dst, (const float *)z, *p, nn,
                                                        nanpol, wordst);
            else
                vk_comp_kernel<0u><<<cb, 128u, 0, s>>>(o.nrm_codes, o.nrm_scale, dst, (const float *)z, *p, nn,
                                                       nanpol, wordst);
            VK_CK(cudaGetLastError());
        }
        VK_CK(vk_readback(&h, dst, sizeof h, s));
        if ((st = vk_state_status(&h)) != KVQ_OK) goto out;
        if (!direct) {
            VK_CK(cudaMemcpyAsync(out->mask, o.mask, mb, cudaMemcpyDeviceToDevice, s));
            if (na > 0u) {
                VK_CK(cudaMemcpyAsync(out->abn_codes, o.abn_codes, acb, cudaMemcpyDeviceToDevice, s));
                VK_CK(cudaMemcpyAsync(out->abn_scale, o.abn_scale, nag, cudaMemcpyDeviceToDevice, s));
                VK_CK(cudaMemcpyAsync(out->abn_zero, o.abn_zero, nag, cudaMemcpyDeviceToDevice, s));
            }
            if (nn > 0u) {
                VK_CK(cudaMemcpyAsync(out->nrm_codes, o.nrm_codes, ncb, cudaMemcpyDeviceToDevice, s));
                VK_CK(cudaMemcpyAsync(out->nrm_scale, o.nrm_scale, nng, cudaMemcpyDeviceToDevice, s));
                if (mode == KVQ_VIDKV_NORMAL_MINMAX)
                    VK_CK(cudaMemcpyAsync(out->nrm_zero, o.nrm_zero, nng, cudaMemcpyDeviceToDevice, s));
            }
        }
        if (flags != NULL) *flags = h.flags;
    }
out:
    cudaFreeAsync(ws, s);
    if (cudaStreamSynchronize(s) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}

kvq_status kvq_cuda_vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags,
                                        const float *d_k, const kvq_vidkv_params *p,
                                        const kvq_policy *pol, uint32_t opts, cudaStream_t s)
{
    return quantize_keys(out, flags, d_k, NULL, NULL, p, pol, opts, s);
}

kvq_status kvq_cuda_vidkv_quantize_keys_ranged(const kvq_vidkv_keys *out, uint32_t *flags,
                                               const float *d_k, const float *d_mn, const float *d_mx,
                                               const kvq_vidkv_params *p, const kvq_policy *pol,
                                               uint32_t opts, cudaStream_t s)
{
    if (d_mn == NULL || d_mx == NULL) return KVQ_E_PARAM;
    return quantize_keys(out, flags, d_k, d_mn, d_mx, p, pol, opts, s);
}

kvq_status kvq_cuda_vidkv_dequantize_keys(float *d_y, uint32_t *flags, const kvq_vidkv_keys *in,
                                          const kvq_vidkv_params *p, const kvq_policy *pol,
                                          cudaStream_t s)
{
    kvq_status st;
    uint32_t mode, na, nn;
    void *ws = NULL;
    if (d_y == NULL || in == NULL || p == NULL || in->mask == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    mode = kvq_vidkv_normal_mode(p);
    na = kvq_vidkv_n_abn(p);
    nn = kvq_vidkv_n_nrm(p);
    if ((na > 0u && (in->abn_codes == NULL || in->abn_scale == NULL || in->abn_zero == NULL)) ||
        (nn > 0u && (in->nrm_codes == NULL || in->nrm_scale == NULL ||
                     (mode == KVQ_VIDKV_NORMAL_MINMAX && in->nrm_zero == NULL))))
        return KVQ_E_PARAM;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint64_t rows = (uint64_t)p->heads * p->tokens;
    const size_t rowsd = (size_t)kvq_vidkv_mask_rows(p) * p->dim * 4u;
    const int fft = mode == KVQ_VIDKV_NORMAL_FFT && nn > 0u;
    const int naive = fft && !kvq_cuda_vidkv_fft_length_ok(nn);
    const size_t zb = fft ? rows * nn * sizeof(float2) : 0u;
    const size_t o1 = 256u, o2 = o1 + up256(rowsd), o3 = o2 + up256(rowsd), o4 = o3 + up256(zb),
                 o5 = o4 + up256(naive ? zb : 0u), tot = o5 + up256(naive ? nn * 8u : 0u);
    if (cudaMallocAsync(&ws, tot, s) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        uint32_t *lists = (uint32_t *)(w + o1), *pos = (uint32_t *)(w + o2);
        float2 *z = (float2 *)(w + o3), *tmp = (float2 *)(w + o4), *tw = (float2 *)(w + o5);
        if (!fft) {
            /* checks and elements in one stream pass, gated on the device [VIDKV-DEV-04] */
            if ((st = vk_keys_deq_gated(d_y, in, p, mode, lists, pos, w, s, true)) != KVQ_OK) goto out;
            if (flags != NULL) *flags = 0u;
            goto out;
        }
        /* the checks, read back before the transform; then every row written whole, its
         * abnormal channels from their codes and its normal ones from the inverse transform */
        if ((st = vk_keys_deq_gated(d_y, in, p, mode, lists, pos, w, s, false)) != KVQ_OK) goto out;
        if (fft) {
            if (naive && (st = vk_put_twiddles(tw, nn, s)) != KVQ_OK) goto out;
            vk_build_kernel<<<vk_rgrid(p), vk_rbs(nn), 0, s>>>(z, in->nrm_codes, in->nrm_scale, *p, nn);
            VK_CK(cudaGetLastError());
            if ((st = vk_transform(z, tmp, tw, nn, rows, 1, s)) != KVQ_OK) goto out;
            vk_rows_kernel<<<vk_rgrid(p), vk_rbs(p->dim), 0, s>>>(d_y, z, *in, pos, *p, na, nn);
            VK_CK(cudaGetLastError());
        }
        VK_CK(cudaStreamSynchronize(s));
        if (flags != NULL) *flags = 0u;
    }
out:
    cudaFreeAsync(ws, s);
    if (cudaStreamSynchronize(s) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}

kvq_status kvq_cuda_vidkv_dft(float *d_y, int *used_cufft, const float *d_k, const uint8_t *d_mask,
                              const kvq_vidkv_params *p, const kvq_policy *pol, cudaStream_t s)
{
    kvq_status st;
    void *ws = NULL;
    if (d_y == NULL || d_k == NULL || d_mask == NULL || p == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p);
    if (nn == 0u) return KVQ_E_PARAM;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint64_t rows = (uint64_t)p->heads * p->tokens;
    const int naive = !kvq_cuda_vidkv_fft_length_ok(nn);
    const size_t rowsd = (size_t)kvq_vidkv_mask_rows(p) * p->dim * 4u;
    const size_t zb = naive ? rows * nn * sizeof(float2) : 0u;
    const size_t o1 = 256u, o2 = o1 + up256(rowsd), o3 = o2 + up256(rowsd), o4 = o3 + up256(zb),
                 tot = o4 + up256(nn * sizeof(float2));
    if (cudaMallocAsync(&ws, tot, s) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        uint32_t *lists = (uint32_t *)(w + o1), *pos = (uint32_t *)(w + o2);
        float2 *tmp = (float2 *)(w + o3), *tw = (float2 *)(w + o4), *z = (float2 *)d_y;
        if ((st = vk_mask_lists(lists, pos, d_mask, p, w, s)) != KVQ_OK) goto out;
        if ((st = vk_forward(z, tmp, tw, d_k, lists, p, pol, na, nn, s)) != KVQ_OK) goto out;
        VK_CK(cudaStreamSynchronize(s));
        if (used_cufft != NULL) *used_cufft = !naive;
    }
out:
    cudaFreeAsync(ws, s);
    if (cudaStreamSynchronize(s) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}
