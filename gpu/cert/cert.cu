/*
 * cert.cu -- CERT quantizers on CUDA, bit-exact to ref/fast/cert.c.
 *
 * Keys [CERT-K8-01..05]: INT8 per channel per block of B = 16 tokens, binary32
 * sigma and z.  Every float operation is the one binary32 operation of the
 * pinned sequence, written as an explicit round-to-nearest intrinsic
 * (__fsub_rn, __fdiv_rn, __fmul_rn, __fadd_rn); the build adds -fmad=false and
 * keeps subnormals.  Values [CERT-V4-01]: KIVI with bits 4, group 16, per
 * token, binary16 metadata -- the layouts are the same by construction
 * (kvq_cert_value_kivi_shape), so the values go through the KIVI launcher,
 * itself bit-exact to ref/fast/kivi.c, after the CERT input checks.
 *
 * Kernels:
 *   cert_check_kernel       NaN/Inf and binary16-ness of every input [CERT-L-02]
 *   cert_key_block_kernel   one thread a (block, channel): min, max, sigma, z and
 *                           the channel's 16 codes; consecutive threads take
 *                           consecutive channels, so loads and stores coalesce
 *   cert_finish_kernel      status and flags of the call into a kvq_cuda_result
 *
 * Nothing is written to the caller's outputs on an error [API-ERR-01]: the
 * check kernel runs first in stream order and the quantizing kernel returns at
 * once when it found an error.  Packed-data index arithmetic goes through
 * include/kvq_layout.h only.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvq.h"
#include "kvq_cuda.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_OVF        0x1.ffep+15f     /* 65520: RN16 overflows from here on */

#define ERR_NONFINITE 0x1u
#define ERR_NOTF16    0x2u

/* Device-side state of one call. */
typedef struct cert_dev_state {
    uint32_t flags;              /* OR of KVQ_FLAG_* */
    uint32_t err;                /* ERR_* bits */
    kvq_cuda_result result;
} cert_dev_state;

/* kvq_cert_is_f16 for a finite v [CERT-L-02]: RN16(v) == v without overflow.
 * cvt.rn.f16.f32 rounds to nearest even on the binary16 grid (subnormal grid
 * included); a binary32 subnormal rounds to 0 or 2^-24, so it differs. */
__device__ __forceinline__ bool dev_is_f16(float v)
{
    if (fabsf(v) >= F16_OVF) return false;
    return __half2float(__float2half_rn(v)) == v;
}

/* Round half away from zero of a finite q as ref's round_nonneg: a - floor(a)
 * is exact, so the tie test is exact [POL-TIE-02]. */
__device__ __forceinline__ float dev_round_away(float q)
{
    float a = fabsf(q);
    float fl = floorf(a);
    float d = __fsub_rn(a, fl);          /* exact */
    return copysignf(d >= 0.5f ? __fadd_rn(fl, 1.0f) : fl, q);
}

/* OR a warp's flags and errors into the call's state; every lane calls it. */
__device__ __forceinline__ void dev_publish(cert_dev_state *st, uint32_t f, uint32_t err)
{
    f = __reduce_or_sync(0xFFFFFFFFu, f);
    err = __reduce_or_sync(0xFFFFFFFFu, err);
    if ((threadIdx.x & 31u) == 0u) {
        if (f) atomicOr(&st->flags, f);
        if (err) atomicOr(&st->err, err);
    }
}

/* Every input of the tensor, the residual block's included [CERT-L-03]. */
__global__ void __launch_bounds__(256)
cert_check_kernel(const float *__restrict__ x, cert_dev_state *st, uint64_t n)
{
    uint32_t err = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const float v = __ldg(x + e);
        if (!isfinite(v)) err |= ERR_NONFINITE;
        else if (!dev_is_f16(v)) err |= ERR_NOTF16;
    }
    dev_publish(st, 0u, err);
}

/* Pinned code of one key against stored sigma > 0, z [CERT-K8-02]. */
__device__ __forceinline__ int8_t dev_key_code(float k, float s, float z, bool away, uint32_t &f)
{
    const float t = __fsub_rn(k, z);     /* RN32 [CERT-K8-02] */
    const float qv = __fdiv_rn(t, s);    /* RN32, a division [CERT-K8-02] */
    /* |qv| < 2^9: the rounding is exact [POL-TIE-01] [POL-TIE-02] */
    const int32_t c = (int32_t)(away ? dev_round_away(qv) : rintf(qv));
    if (c < KVQ_CERT_KCODE_MIN) {
        f |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MIN;
    }
    if (c > KVQ_CERT_KCODE_MAX) {
        f |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MAX;
    }
    return (int8_t)c;
}

/* One thread a (full block b, channel c): ref's kvq_cert_quantize_key_block
 * for one channel [CERT-K8-01..02]. */
__global__ void __launch_bounds__(128)
cert_key_block_kernel(const float *__restrict__ k, int8_t *__restrict__ codes,
                      float *__restrict__ sigma, float *__restrict__ z, cert_dev_state *st,
                      kvq_cert_shape sh, kvq_policy pol)
{
    if (*(volatile uint32_t *)&st->err != 0u) return; /* block-uniform: nothing written */
    const uint32_t d = sh.dim;
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t total = kvq_cert_key_meta_count(&sh);
    const bool away = pol.ties == KVQ_TIES_AWAY;
    uint32_t f = 0;
    if (tid < total) {
        const uint32_t b = (uint32_t)(tid / d), c = (uint32_t)(tid % d);
        const float *kb = k + kvq_cert_in_index(&sh, kvq_cert_block_first(b), 0);
        int8_t *cb = codes + kvq_cert_key_block_offset(&sh, b);
        float v[KVQ_CERT_BLOCK];
#pragma unroll
        for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
            v[i] = __ldg(kb + kvq_cert_key_code_index(d, i, c));
        /* min and max in the reference's order (strict comparisons) */
        float l = v[0], u = v[0];
#pragma unroll
        for (uint32_t i = 1; i < KVQ_CERT_BLOCK; i++) {
            if (v[i] < l) l = v[i];
            if (v[i] > u) u = v[i];
        }
        const float dd = __fsub_rn(u, l);  /* RN32, normal or 0 [CERT-K8-01] */
        float s = __fdiv_rn(dd, 255.0f);   /* RN32, a division [CERT-K8-01] */
        const float m = __fmul_rn(128.0f, s); /* exact: a power of two */
        float zz = __fadd_rn(l, m);        /* RN32 [CERT-K8-01] */
        if (s < F32_MIN_NORMAL) {          /* zero-range channel [CERT-K8-01] */
            s = 0.0f;
            zz = l == 0.0f ? 0.0f : l;     /* a zero l stored as +0 [POL-SZ-01] */
            f |= KVQ_FLAG_ZERO_SCALE;
        } else if (zz == 0.0f) {
            zz = 0.0f;                     /* +0 [POL-SZ-01] */
        }
#pragma unroll
        for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
            cb[kvq_cert_key_code_index(d, i, c)] =
                s == 0.0f ? (int8_t)0 : dev_key_code(v[i], s, zz, away, f);
        sigma[kvq_cert_key_meta_index(&sh, b, c)] = s;
        z[kvq_cert_key_meta_index(&sh, b, c)] = zz;
    }
    dev_publish(st, f, 0u);
}

/* The call's status: non-finite inputs first, then non-binary16 ones [CERT-K8-05]. */
__global__ void cert_finish_kernel(cert_dev_state *st)
{
    const uint32_t e = st->err;
    st->result.status = (e & ERR_NONFINITE) ? (uint32_t)KVQ_E_NONFINITE
                      : (e & ERR_NOTF16)    ? (uint32_t)KVQ_E_PARAM
                                            : (uint32_t)KVQ_OK;
    st->result.flags = e ? 0u : st->flags;
}

/* ---- host side ---------------------------------------------------------- */

static unsigned int nblocks(uint64_t nthreads, uint32_t bs)
{
    return (unsigned int)((nthreads + bs - 1u) / bs);
}

/* The reference's argument checks, in its order. */
static kvq_status check_args(const void *a, const void *b, const void *c, const void *x,
                             const kvq_cert_shape *shape, const kvq_policy *pol)
{
    if (a == NULL || b == NULL || c == NULL || x == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* Enqueue the input check of x [n][d]; the state must be cleared first. */
static kvq_status enqueue_check(cert_dev_state *st, const float *d_x,
                                const kvq_cert_shape *shape, cudaStream_t stream)
{
    const uint64_t n = kvq_cert_in_index(shape, shape->tokens, 0);
    uint64_t want = nblocks(n, 256);
    unsigned int nb = (unsigned int)(want < 4096u ? want : 4096u);
    if (cudaMemsetAsync(st, 0, sizeof *st, stream) != cudaSuccess) return KVQ_E_DEVICE;
    cert_check_kernel<<<nb, 256, 0, stream>>>(d_x, st, n);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* Wait for *st's result; free st. */
static kvq_status finish(kvq_status enq, cert_dev_state *st, uint32_t *flags,
                         cudaStream_t stream)
{
    kvq_cuda_result r = {KVQ_E_DEVICE, 0};
    cudaError_t e = cudaSuccess;
    if (enq == KVQ_OK) {
        cert_finish_kernel<<<1, 1, 0, stream>>>(st);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(&r, &st->result, sizeof r, cudaMemcpyDeviceToHost, stream);
    }
    (void)cudaFreeAsync(st, stream);
    cudaError_t e2 = cudaStreamSynchronize(stream);
    if (enq != KVQ_OK) return enq;
    if (e != cudaSuccess || e2 != cudaSuccess) return KVQ_E_DEVICE;
    if (r.status == KVQ_OK && flags != NULL) *flags = r.flags;
    return (kvq_status)r.status;
}

static kvq_status alloc_state(cert_dev_state **st, cudaStream_t stream)
{
    if (cudaMallocAsync((void **)st, sizeof **st, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_NOMEM;
    }
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_cert_quantize_keys(int8_t *d_codes, float *d_sigma, float *d_z,
                                                  uint32_t *flags, const float *d_k,
                                                  const kvq_cert_shape *shape,
                                                  const kvq_policy *pol, cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_sigma, d_z, d_k, shape, pol);
    if (a != KVQ_OK) return a;
    const kvq_cert_shape sh = *shape;
    cert_dev_state *st = NULL;
    a = alloc_state(&st, stream);
    if (a != KVQ_OK) return a;
    kvq_status enq = enqueue_check(st, d_k, &sh, stream);
    const uint64_t total = kvq_cert_key_meta_count(&sh);
    if (enq == KVQ_OK && total != 0u) {
        cert_key_block_kernel<<<nblocks(total, 128), 128, 0, stream>>>(d_k, d_codes, d_sigma,
                                                                      d_z, st, sh, *pol);
        if (cudaGetLastError() != cudaSuccess) enq = KVQ_E_DEVICE;
    }
    return finish(enq, st, flags, stream);
}

extern "C" kvq_status kvq_cuda_cert_quantize_values(uint8_t *d_codes, float *d_scale,
                                                    float *d_zero, uint32_t *flags,
                                                    const float *d_v,
                                                    const kvq_cert_shape *shape,
                                                    const kvq_policy *pol, cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_scale, d_zero, d_v, shape, pol);
    if (a != KVQ_OK) return a;
    const kvq_cert_shape sh = *shape;
    cert_dev_state *st = NULL;
    uint32_t f = 0;
    a = alloc_state(&st, stream);
    if (a != KVQ_OK) return a;
    /* The CERT checks over all n tokens first [CERT-L-02]: KIVI sees only the
     * quantized ones and would not reject a non-binary16 value. */
    a = finish(enqueue_check(st, d_v, &sh, stream), st, &f, stream);
    if (a != KVQ_OK) return a;           /* nothing written [API-ERR-01] */
    if (kvq_cert_full_blocks(&sh) == 0u) { /* nothing to quantize */
        if (flags != NULL) *flags = 0u;
        return KVQ_OK;
    }
    /* KIVI, bits 4, group 16, per token, binary16 metadata [CERT-V4-01]:
     * binary16 inputs cannot overflow it, so its status is KVQ_OK. */
    const kvq_kivi_shape ksh = kvq_cert_value_kivi_shape(&sh);
    return kvq_cuda_kivi_quantize(d_codes, d_scale, d_zero, flags, d_v, &ksh, pol, NULL, 0, 0u,
                                  stream);
}
