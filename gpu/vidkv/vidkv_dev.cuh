/*
 * vidkv_dev.cuh -- what the VIDKV kernel units share (gpu/vidkv/*.cu,
 * gpu/vidkv/fft/*.cu): the pinned binary32 steps of ref/fast/vidkv.c and
 * ref/fast/kivi.c as device functions, the call state, and the enqueue
 * functions one unit offers another.  Internal; not installed.
 *
 * Every float operation is the one binary32 operation of the pinned sequence,
 * written as an explicit round-to-nearest intrinsic; the build adds
 * -fmad=false and keeps subnormals.  Binary16 rounding is cvt.rn.f16.f32 with
 * the overflow decided as kvq_round_f16 decides it (as gpu/kivi/kivi.cu).
 */
#ifndef KVQ_VIDKV_DEV_CUH
#define KVQ_VIDKV_DEV_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

#include "kvq.h"
#include "kvq_vidkv.h"

#define VK_F32_MAX        0x1.fffffep+127f
#define VK_F32_MIN_NORMAL 0x1p-126f
#define VK_F16_MAX        0x1.ffcp+15f     /* 65504 */
#define VK_F16_OVF        0x1.ffep+15f     /* 65520 */
#define VK_F16_MIN_NORMAL 0x1p-14f
#define VK_META_DOMAIN    0x1p102f         /* [VIDKV-D-03] */

#define VK_ERR_NONFINITE 0x1u
#define VK_ERR_RANGE     0x2u
#define VK_ERR_RANGES    0x4u   /* handed-in channel ranges are not the keys' extremes [VIDKV-DEV-07] */

/* Device-side state of one call. */
typedef struct vk_state {
    uint32_t flags;   /* OR of KVQ_FLAG_* */
    uint32_t err;     /* VK_ERR_* */
} vk_state;

/* Read one input [VIDKV-L-03..04]: finiteness and domain into err, the
 * subnormal policy into the value and flags. */
/* On the magnitude's bits: |v| >= dom (a power of two) iff a >= bits(dom), an
 * infinity or NaN iff a >= 0x7F800000, a subnormal iff 1 <= a <= 0x7FFFFF. */
__device__ __forceinline__ float vk_read(float v, float dom, bool daz, uint32_t &f, uint32_t &err)
{
    const uint32_t a = __float_as_uint(v) & 0x7FFFFFFFu;
    if (a >= __float_as_uint(dom)) err |= a >= 0x7F800000u ? VK_ERR_NONFINITE : VK_ERR_RANGE;
    if (a - 1u < 0x007FFFFFu) {
        f |= KVQ_FLAG_SUBNORMAL;
        if (daz) return copysignf(0.0f, v);
    }
    return v;
}

/* Read an already-read value again (kvq_kivi_quantize_group reads its inputs). */
__device__ __forceinline__ float vk_reread(float v, bool daz, uint32_t &f)
{
    if (v != 0.0f && fabsf(v) < VK_F32_MIN_NORMAL) {
        f |= KVQ_FLAG_SUBNORMAL;
        if (daz) return copysignf(0.0f, v);
    }
    return v;
}

/* An input already read and checked, read again for its value only: the
 * subnormal policy without the flag (the first read raised it). */
__device__ __forceinline__ float vk_daz(float v, bool daz)
{
    if (daz && v != 0.0f && fabsf(v) < VK_F32_MIN_NORMAL) return copysignf(0.0f, v);
    return v;
}

/* kvq_round_f16 */
__device__ __forceinline__ float vk_round_f16(float v, bool &ov)
{
    if (fabsf(v) >= VK_F16_OVF) {
        ov = true;
        return copysignf(VK_F16_MAX, v);
    }
    ov = false;
    return __half2float(__float2half_rn(v));
}

/* The stored form of a binary32 scale s32 >= 0 [VIDKV-K-06] [VIDKV-V-03]
 * (ref/fast/vidkv.c store_scale). */
__device__ __forceinline__ float vk_store_scale(float s32, uint32_t meta, bool nanpol, uint32_t &f,
                                                uint32_t &err)
{
    float s = s32;
    if (meta == KVQ_META_F16) {
        bool ov;
        s = vk_round_f16(s32, ov);
        if (ov) {
            if (nanpol) err |= VK_ERR_RANGE;
            f |= KVQ_FLAG_SATURATED;
        }
    }
    if (s < (meta == KVQ_META_F16 ? VK_F16_MIN_NORMAL : VK_F32_MIN_NORMAL)) {
        s = 0.0f;
        f |= KVQ_FLAG_ZERO_SCALE;
    }
    return s;
}

/* KIVI group metadata from min and max (ref/fast/kivi.c group_meta). */
__device__ __forceinline__ void vk_kivi_meta(float &s_out, float &z_out, uint32_t &f, uint32_t &err,
                                             float mn, float mx, float cmax, uint32_t meta,
                                             bool nanpol)
{
    float r = __fsub_rn(mx, mn);
    float s, z;
    if (isinf(r)) {
        if (nanpol) err |= VK_ERR_RANGE;
        r = VK_F32_MAX;
        f |= KVQ_FLAG_SATURATED;
    }
    s = __fdiv_rn(r, cmax);
    z = mn == 0.0f ? 0.0f : mn;
    if (meta == KVQ_META_F16) {
        bool ov_s, ov_z;
        s = vk_round_f16(s, ov_s);
        z = vk_round_f16(z, ov_z);
        if (ov_s || ov_z) {
            if (nanpol) err |= VK_ERR_RANGE;
            f |= KVQ_FLAG_SATURATED;
        }
        if (z == 0.0f) z = 0.0f;
        if (s < VK_F16_MIN_NORMAL) s = 0.0f;
    } else if (s < VK_F32_MIN_NORMAL) {
        s = 0.0f;
    }
    if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
    s_out = s;
    z_out = z;
}

/* Round half away from zero (kvq_round_int, KVQ_TIES_AWAY): q - floor(q) is exact. */
__device__ __forceinline__ float vk_round_away(float q)
{
    float a = fabsf(q);
    float fl = floorf(a);
    float d = __fsub_rn(a, fl);
    return copysignf(d >= 0.5f ? __fadd_rn(fl, 1.0f) : fl, q);
}

/* Code of one value (ref/fast/kivi.c code_of). */
__device__ __forceinline__ uint32_t vk_kivi_code(float xv, float s, float z, uint32_t cmaxu,
                                                 bool away, uint32_t &f)
{
    const float cmax = (float)cmaxu;
    if (s == 0.0f) return 0u;
    float t = __fsub_rn(xv, z);
    if (isinf(t)) {
        t = copysignf(VK_F32_MAX, t);
        f |= KVQ_FLAG_SATURATED;
    }
    float q = __fdiv_rn(t, s);
    if (q > __fadd_rn(cmax, 1.0f)) {
        f |= KVQ_FLAG_CLAMPED;
        return cmaxu;
    }
    if (q < -1.0f) {
        f |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    float c = away ? vk_round_away(q) : rintf(q);
    if (c < 0.0f) {
        f |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    if (c > cmax) {
        f |= KVQ_FLAG_CLAMPED;
        return cmaxu;
    }
    return (uint32_t)c;
}

/* The same code without a division in the common case, as gpu/kivi/kivi.cu's
 * dev_code (its comment carries the argument): rcp = __frcp_rn(s); the code
 * comes from qe = RN32(t * rcp), clamped to [-2, cmax + 2] and rounded by the
 * 1.5 * 2^23 addition, unless qe lies within 2^-12 of a half-integer or rcp is
 * subnormal, where q = RN32(t / s) is formed and rounded as the reference
 * rounds it.  |qe - q| < 2^-14 for |qe| <= 258, so a qe farther from every
 * half-integer rounds to the reference's integer; the reference's early clamps
 * (q > cmax + 1, q < -1) give the code and flag of rounding first and
 * clamping after, rounding being monotone. */
#define VK_MAGIC_RND 0x1.8p23f
#define VK_MAGIC_RND_BITS 0x4B400000u
/* FIN: x and z are known finite and below 2^102 in magnitude (the inputs of a
 * call that succeeds lie in the domain [VIDKV-L-03], z is one of them or its
 * binary16 rounding), so t = x - z cannot overflow and the saturation test is
 * dropped; a call with an input outside the domain fails and returns neither
 * its outputs nor its flags. */
template <bool FIN>
__device__ __forceinline__ uint32_t vk_kivi_code_rcp_t(float xv, float s, float rcp, float z,
                                                       uint32_t cmaxu, bool away, uint32_t &f)
{
    if (s == 0.0f) return 0u;
    const float cmax = (float)cmaxu;
    float t = __fsub_rn(xv, z);
    if (!FIN && isinf(t)) {
        t = copysignf(VK_F32_MAX, t);
        f |= KVQ_FLAG_SATURATED;
    }
    const float qe = fminf(fmaxf(__fmul_rn(t, rcp), -2.0f), __fadd_rn(cmax, 2.0f));
    const float m = __fadd_rn(qe, VK_MAGIC_RND);
    const float dd = fabsf(__fsub_rn(qe, __fsub_rn(m, VK_MAGIC_RND)));
    int32_t c = (int32_t)(__float_as_uint(m) - VK_MAGIC_RND_BITS);
    if (dd > 0x1.ffcp-2f || rcp < VK_F32_MIN_NORMAL) {
        const float q = __fdiv_rn(t, s);
        float cf = away ? vk_round_away(q) : rintf(q);
        cf = fminf(fmaxf(cf, -2.0f), __fadd_rn(cmax, 2.0f));
        c = (int32_t)cf;
    }
    if ((uint32_t)c > cmaxu) f |= KVQ_FLAG_CLAMPED;
    return (uint32_t)min(max(c, 0), (int32_t)cmaxu);
}
__device__ __forceinline__ uint32_t vk_kivi_code_rcp(float xv, float s, float rcp, float z,
                                                     uint32_t cmaxu, bool away, uint32_t &f)
{
    return vk_kivi_code_rcp_t<false>(xv, s, rcp, z, cmaxu, away, f);
}

/* gid = q * d + c, by 32-bit division whenever the grid allows it. */
__device__ __forceinline__ void vk_divmod(uint64_t gid, uint64_t ng, uint32_t d, uint64_t &q, uint32_t &c)
{
    if (ng <= 0xFFFFFFFFull) {
        const uint32_t g = (uint32_t)gid;
        q = g / d;
        c = g - (uint32_t)q * d;
    } else {
        q = gid / d;
        c = (uint32_t)(gid - q * d);
    }
}

/* OR a warp's flags and errors into the call's state (every lane calls). */
__device__ __forceinline__ void vk_publish(vk_state *st, uint32_t f, uint32_t err)
{
    f = __reduce_or_sync(0xFFFFFFFFu, f);
    err = __reduce_or_sync(0xFFFFFFFFu, err);
    if ((threadIdx.x & 31u) == 0u) {
        if (f) atomicOr(&st->flags, f);
        if (err) atomicOr(&st->err, err);
    }
}

/* Stored metadata check [VIDKV-D-03] (ref/fast/vidkv.c meta_ok): KVQ_OK or the status. */
__device__ __forceinline__ uint32_t vk_meta_ok(float v, bool is_scale, uint32_t meta)
{
    if (!isfinite(v)) return KVQ_E_NONFINITE;
    if (fabsf(v) >= VK_META_DOMAIN) return KVQ_E_RANGE;
    if (meta == KVQ_META_F16) {
        bool ov;
        float r = vk_round_f16(v, ov);
        if (ov || r != v) return KVQ_E_PARAM;
    }
    if (is_scale && (v < 0.0f || (v != 0.0f && v < (meta == KVQ_META_F16 ? VK_F16_MIN_NORMAL
                                                                           : VK_F32_MIN_NORMAL))))
        return KVQ_E_PARAM;
    return KVQ_OK;
}

/* ---- host side: shared by the units ---------------------------------------- */

#define VK_CK(x)                                                                     \
    do {                                                                             \
        if ((x) != cudaSuccess) { st = KVQ_E_DEVICE; goto out; }                     \
    } while (0)

/* A page-locked host buffer of 256 bytes for this host thread's status
 * read-backs (a real asynchronous copy: no staging through the driver's
 * buffer, several microseconds a call fewer), allocated on first use and kept
 * for the thread's life, as the cuFFT plans are; NULL when none could be had. */
static inline void *vk_pinned(void)
{
    static thread_local void *p = NULL;
    static thread_local bool tried = false;
    if (!tried) {
        tried = true;
        if (cudaMallocHost(&p, 256u) != cudaSuccess) p = NULL;
    }
    return p;
}

/* n bytes of device status words into h (host), the stream synchronized. */
static inline cudaError_t vk_readback(void *h, const void *d, size_t n, cudaStream_t s)
{
    void *p = n <= 256u ? vk_pinned() : NULL;
    cudaError_t e = cudaMemcpyAsync(p != NULL ? p : h, d, n, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e == cudaSuccess && p != NULL) memcpy(h, p, n);
    return e;
}

static inline unsigned int vk_blocks(uint64_t n, uint32_t bs)
{
    uint64_t b = (n + bs - 1u) / bs;
    return (unsigned int)(b > 0x7FFFFFFFull ? 0x7FFFFFFFull : (b ? b : 1u));
}

static inline kvq_status vk_check_call(const kvq_vidkv_params *p, const kvq_policy *pol)
{
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_vidkv_params_ok(p)) return KVQ_E_PARAM;
    if (!kvq_vidkv_shape_ok(p)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* The status of a finished call's state (nonfinite before range [VIDKV-L-05];
 * the handed-in ranges' check after both [VIDKV-DEV-07]). */
static inline kvq_status vk_state_status(const vk_state *h)
{
    if (h->err & VK_ERR_NONFINITE) return KVQ_E_NONFINITE;
    if (h->err & VK_ERR_RANGE) return KVQ_E_RANGE;
    if (h->err & VK_ERR_RANGES) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* Enqueue functions (split.cu, groups.cu): device pointers, stream order.
 * vk_split_enqueue: the split mask from the read keys, with the input checks
 * and the SUBNORMAL flag into *st (zeroed by its first kernel); kr (may be NULL) receives the values read;
 * lists [rows][d] the ascending abnormal channels then the normal ones, pos[rows][d]
 * the index of each channel in its list. */
kvq_status vk_split_enqueue(uint8_t *mask, uint32_t *lists, uint32_t *pos, vk_state *st,
                            const float *k, const kvq_vidkv_params *p, const kvq_policy *pol,
                            void *scratch, cudaStream_t s);
/* Device scratch bytes vk_split_enqueue needs. */
size_t vk_split_scratch(const kvq_vidkv_params *p);
/* The split of handed-in channel ranges mn, mx [rows][d] [VIDKV-DEV-07]: the mask,
 * lists and positions as vk_split_enqueue's, without reading the keys; the same
 * kernel zeroes *st and att [2][rows][d] (the call's first). */
kvq_status vk_split_ranges_enqueue(uint8_t *mask, uint32_t *lists, uint32_t *pos, const float *mn,
                                   const float *mx, uint32_t *att, vk_state *st, const kvq_vidkv_params *p,
                                   cudaStream_t s);

/* The abnormal 2-bit groups [VIDKV-K-03] and, when mode is MINMAX or
 * SIGNMEAN, the normal groups [VIDKV-K-08]; pos from vk_split_enqueue.  rmn
 * NULL: the split read and checked the keys, the groups take their values.
 * rmn, rmx [rows][d] the handed-in ranges [VIDKV-DEV-07]: the groups read and
 * check every key [VIDKV-L-03..04], every group's extremes are checked to lie
 * within its channel's range (VK_ERR_RANGES otherwise) and att [2][rows][d]
 * (zeroed) marks the ranges' ends some group attains (vk_att_enqueue checks). */
void vk_groups_enqueue(const kvq_vidkv_keys *o, vk_state *st, const float *k, const uint32_t *pos,
                       const kvq_vidkv_params *p, const kvq_policy *pol, uint32_t mode,
                       const float *rmn, const float *rmx, uint32_t *att, cudaStream_t s);
/* VK_ERR_RANGES into *st unless every entry of att [n] is set. */
void vk_att_enqueue(vk_state *st, const uint32_t *att, uint64_t n, cudaStream_t s);

/* The channel lists and positions of a stored mask (synchronous; KVQ_E_PARAM
 * when a row is malformed [VIDKV-D-02]). */
kvq_status vk_mask_lists(uint32_t *lists, uint32_t *pos, const uint8_t *mask,
                         const kvq_vidkv_params *p, void *scratch, cudaStream_t s);
/* The key dequantizer's input checks [VIDKV-D-02..03] and the group kernel in
 * one stream pass, the elements of every abnormal channel and, unless FFT,
 * every normal channel written only when every check passed [VIDKV-DEV-04];
 * synchronous, the first failure's status in the reference's order (scratch:
 * 256 bytes of check words); elements false: the checks alone (the FFT path
 * writes every channel itself after them). */
kvq_status vk_keys_deq_gated(float *y, const kvq_vidkv_keys *in, const kvq_vidkv_params *p, uint32_t mode,
                             uint32_t *lists, uint32_t *pos, void *scratch, cudaStream_t s, bool elements);

/* STP (stp.cu) [VIDKV-STP-01..03]: vk_stp_check the ranges (KVQ_E_PARAM,
 * KVQ_E_SHAPE, as the reference); vk_stp_enqueue reads and checks every score
 * input into *st, and writes the protection mask prot, the scores (score, may
 * be NULL) and, when lt or lp is not NULL, the unprotected and protected token
 * lists (ascending); scratch of vk_stp_scratch bytes. */
kvq_status vk_stp_check(const kvq_vidkv_params *p, const kvq_vidkv_stp *s);
size_t vk_stp_scratch(const kvq_vidkv_params *p, const kvq_vidkv_stp *s);
kvq_status vk_stp_enqueue(uint8_t *prot, float *score, uint32_t *lt, uint32_t *lp, vk_state *st,
                          const kvq_vidkv_params *p, const kvq_vidkv_stp *s, bool daz,
                          void *scratch, cudaStream_t cs);
/* The two token lists of a stored protection mask of T tokens (the
 * dequantizer); scratch of vk_mask_lists_scratch(T) bytes. */
size_t vk_mask_lists_scratch(uint32_t T);
kvq_status vk_prot_lists_enqueue(uint32_t *lt, uint32_t *lp, const uint8_t *prot, uint32_t T,
                                 void *scratch, cudaStream_t cs);

#endif /* KVQ_VIDKV_DEV_CUH */
