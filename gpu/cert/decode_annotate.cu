/*
 * decode_annotate.cu -- the annotations eta, nu of the certified CERT decode
 * step on CUDA (cert_annotate_kernel, [CERT-ANN-01..02]; decode_common.cuh
 * says how the step is split), bit-exact to kvq_cert_annotate; and its launch,
 * kvq_cuda_cert_annotate.
 */
#include "decode_common.cuh"

/* ---- annotations (bounds/cert.md §2, exact integer method) --------------- */
typedef unsigned __int128 u128;

__device__ __forceinline__ int64_t fixed24(float x)
{
    return (int64_t)scalbnf(x, 24);      /* exact: x is a multiple of 2^-24 below 2^40 */
}

/* sign of y^2 - N for float y > 0, N < 2^100 */
__device__ int sq_cmp(float y, u128 n)
{
    if (y < 1.0f) return n == 0 ? 1 : -1;
    if (y >= 0x1p60f) return 1;
    int e;
    const float fr = frexpf(y, &e);
    const uint64_t mant = (uint64_t)scalbnf(fr, 24);
    e -= 24;
    const u128 lhs = (u128)mant * mant;
    if (e >= 0) {
        const u128 l2 = lhs << (2 * e);
        return l2 < n ? -1 : (l2 > n ? 1 : 0);
    }
    if ((n >> 50) != 0) return -1;
    const u128 n2 = n << (-2 * e);
    return lhs < n2 ? -1 : (lhs > n2 ? 1 : 0);
}

/* RU32(2^-24 sqrt(N)) [CERT-ANN-01] */
__device__ float ru_norm24(u128 n)
{
    if (n == 0) return 0.0f;
    float y = (float)sqrt((double)(uint64_t)(n >> 64) * 0x1p64 + (double)(uint64_t)n);
    while (sq_cmp(y, n) < 0) y = nextafterf(y, INFINITY);
    for (;;) {
        const float p = nextafterf(y, 0.0f);
        if (sq_cmp(p, n) < 0) break;
        y = p;
    }
    return scalbnf(y, -24);
}

/* One CTA (16 warps) a block; warp i takes token i. */
__global__ void __launch_bounds__(512)
cert_annotate_kernel(float *eta, float *nu, const float *v, const uint8_t *codes,
                     const float *scale, const float *zero, kvq_cert_shape sh)
{
    __shared__ unsigned long long se[16][2], sn[16][2];
    const uint32_t b = blockIdx.x, lane = threadIdx.x & 31u, i = threadIdx.x >> 5;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh);
    const uint32_t ntok = kvq_cert_block_tokens(&sh, b);
    u128 e2 = 0, n2 = 0;
    if (i < ntok) {
        const uint32_t t = kvq_cert_block_first(b) + i;
        for (uint32_t c = lane; c < d; c += 32u) {
            const float x = v[kvq_cert_in_index(&sh, t, c)];
            const int64_t fx = fixed24(x);
            const uint64_t a = (uint64_t)(fx < 0 ? -fx : fx);
            n2 += (u128)a * a;                               /* exact, < 2^89 */
            if (b < nq) {
                uint32_t el;
                const uint32_t j = kvq_cert_value_group_of(c, &el);
                const uint8_t byte = codes[kvq_cert_value_code_offset(&sh, t, j) + el / 2u];
                const float code = (float)((el & 1u) ? (byte >> 4) : (byte & 15u));
                const uint64_t gi = kvq_cert_value_group(&sh, t, j);
                const float xh = __fmaf_rn(code, scale[gi], zero[gi]); /* [CERT-V4-02] */
                const int64_t df = fx - fixed24(xh);
                const uint64_t ad = (uint64_t)(df < 0 ? -df : df);
                e2 += (u128)ad * ad;                         /* exact, < 2^99 */
            }
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const uint64_t eh = __shfl_xor_sync(0xffffffffu, (uint64_t)(e2 >> 64), o);
        const uint64_t el = __shfl_xor_sync(0xffffffffu, (uint64_t)e2, o);
        const uint64_t nh = __shfl_xor_sync(0xffffffffu, (uint64_t)(n2 >> 64), o);
        const uint64_t nl = __shfl_xor_sync(0xffffffffu, (uint64_t)n2, o);
        e2 += ((u128)eh << 64) | el;
        n2 += ((u128)nh << 64) | nl;
    }
    if (lane == 0) {
        se[i][0] = (uint64_t)(e2 >> 64);
        se[i][1] = (uint64_t)e2;
        sn[i][0] = (uint64_t)(n2 >> 64);
        sn[i][1] = (uint64_t)n2;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u128 em = 0, nm = 0;
        for (uint32_t k = 0; k < 16u; k++) {
            const u128 a = ((u128)se[k][0] << 64) | se[k][1];
            const u128 c = ((u128)sn[k][0] << 64) | sn[k][1];
            if (a > em) em = a;
            if (c > nm) nm = c;
        }
        eta[b] = ru_norm24(em);                              /* [CERT-ANN-01] */
        nu[b] = ru_norm24(nm);                               /* [CERT-ANN-02] */
    }
}

/* ---- host side ----------------------------------------------------------- */

extern "C" kvq_status kvq_cuda_cert_annotate(float *d_eta, float *d_nu, const float *d_v,
                                             const uint8_t *d_codes, const float *d_scale,
                                             const float *d_zero, const kvq_cert_shape *shape,
                                             cudaStream_t stream)
{
    if (d_eta == NULL || d_nu == NULL || d_v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    const uint32_t nb = kvq_cert_blocks(shape);
    cert_annotate_kernel<<<nb, 512, 0, stream>>>(d_eta, d_nu, d_v, d_codes, d_scale, d_zero,
                                                 *shape);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}
