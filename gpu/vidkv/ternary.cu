/*
 * ternary.cu -- the VIDKV values on CUDA [VIDKV-V-01..06], with semantic token
 * protection [VIDKV-STP-01..03] (the selection in stp.cu), bit-exact to
 * ref/fast/vidkv.c (kvq_vidkv_quantize_values / kvq_vidkv_dequantize_values).
 *
 * Kernels (one thread a (head, block, channel) group; consecutive threads
 * consecutive channels, so every token's loads and stores are one coalesced
 * row segment of the warp):
 *   vk_tern_fast_kernel   without STP, G = 32 or 64: the group's values held
 *                         in registers, each input read once [VIDKV-L-03..04];
 *                         the domain, finiteness and subnormal tests folded
 *                         into a running max and min of the magnitudes' bits
 *                         (decided once a group); S, mean, alpha [VIDKV-V-02];
 *                         the digits packed by multiply-adds with constant
 *                         powers of 3 [VIDKV-V-04]; beta under SCALED
 *                         [VIDKV-V-03].  Packing and SCALED are template
 *                         arguments, so the per-element work is branch-free
 *   vk_tern_listg_kernel  G = 32, 64 over a token list (the unprotected list
 *                         under STP, its short last group included [VIDKV-V-01]):
 *                         the members in registers, one unrolled pass; packing
 *                         and SCALED template arguments and the checks folded,
 *                         as vk_tern_fast_kernel
 *   vk_tern_list_kernel   any G and any token list
 *   vk_prot_kernel        the 2-bit KIVI groups of the protected list, a short
 *                         group's slots repeating its first member [VIDKV-STP-03]
 *                         (G = 32, 64: the members in registers, as the list kernel)
 *   checks                [VIDKV-D-02..03] on the device, the first failure of
 *                         each array kept (atomicMin), no host round trip:
 *                         vk_tern_check_bytes_kernel (full groups: every code
 *                         byte is used, so 16 bytes a load and a SIMD compare),
 *                         vk_tern_check_list_kernel (short groups), the
 *                         metadata, the protection mask's set bits
 *   vk_tern_deq_fast_kernel, vk_tern_deq_list_kernel, vk_prot_deq_kernel
 *                         the elements, written only when every check passed
 *                         (each thread reads the check words first): a failed
 *                         call writes nothing [VIDKV-DEV-04]; a base-3 digit by
 *                         q = (y * 171) >> 9 = floor(y / 3) (exact for y < 256),
 *                         the value's bits by a select and an XOR
 *
 * KVQ_VIDKV_PLANT 3 (the full-group dequantizer writes whatever the checks found) and 4
 * (the fast quantizer's code +1 for v >= alpha) are planted bugs of a test
 * build only (gpu/vidkv/rules.mk; 1 and 2 are stp.cu's).
 */
#include <cuda_runtime.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"

#define TERN_BS 128u
#define DEQ_BS 128u

static size_t up256(size_t n) { return (n + 255u) / 256u * 256u; }

/* ---- quantization ------------------------------------------------------------ */

template <uint32_t G, uint32_t PACK, bool SCALED, bool DAZ>
__global__ void __launch_bounds__(TERN_BS)
vk_tern_fast_kernel(uint8_t *tern, float *beta, vk_state *st, const float *v, uint64_t ng,
                    uint32_t d, float gamma, uint32_t meta, bool nanpol)
{
    constexpr uint32_t GB = PACK == KVQ_VIDKV_PACK_BASE3 ? (G + 4u) / 5u : G / 4u;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        uint64_t hb;
        uint32_t c;
        vk_divmod(gid, ng, d, hb, c);
        const float *x = v + hb * G * d + c; /* (h*nb + b)*G = h*T + b*G */
        uint8_t *grp = tern + gid * GB;
        float r[G];
        float S = 0.0f;
        uint32_t amax = 0u, smin = 0xFFFFFFFFu;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            const uint32_t u = __float_as_uint(__ldcs(x + i * d));
            const uint32_t a = u & 0x7FFFFFFFu;
            amax = max(amax, a);          /* >= 0x7F800000: not finite; >= 2^100: range */
            smin = min(smin, a - 1u);     /* < 0x7FFFFF: a subnormal */
            r[i] = DAZ && a - 1u < 0x007FFFFFu ? __uint_as_float(u & 0x80000000u) : __uint_as_float(u);
            S = __fadd_rn(S, fabsf(r[i]));
        }
        const float alpha = __fmul_rn(gamma, __fdiv_rn(S, (float)G));
        float B = 0.0f;
        uint32_t nz = 0, acc = 0;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 4
            const bool pl = r[i] >= alpha, mi = r[i] < -alpha; /* planted: >= for > */
#else
            const bool pl = r[i] > alpha, mi = r[i] < -alpha; /* [VIDKV-V-02] */
#endif
            const uint32_t dg = pl ? 1u : mi ? 2u : 0u;       /* [VIDKV-V-04] */
            if (SCALED && (pl || mi)) {
                B = __fadd_rn(B, fabsf(r[i]));
                nz++;
            }
            if (PACK == KVQ_VIDKV_PACK_BASE3) {
                acc += dg * (i % 5u == 0u ? 1u : i % 5u == 1u ? 3u : i % 5u == 2u ? 9u : i % 5u == 3u ? 27u : 81u);
                if (i % 5u == 4u || i == G - 1u) {
                    grp[i / 5u] = (uint8_t)acc;
                    acc = 0u;
                }
            } else {
                acc |= dg << (2u * (i % 4u));
                if (i % 4u == 3u) {
                    grp[i / 4u] = (uint8_t)acc;
                    acc = 0u;
                }
            }
        }
        if (SCALED) beta[gid] = vk_store_scale(nz ? __fdiv_rn(B, (float)nz) : 0.0f, meta, nanpol, f, err);
        if (amax >= 0x7F800000u) err |= VK_ERR_NONFINITE;
        else if (amax >= __float_as_uint(KVQ_VIDKV_DOMAIN)) err |= VK_ERR_RANGE;
        if (smin < 0x007FFFFFu) f |= KVQ_FLAG_SUBNORMAL;
    }
    vk_publish(st, f, err);
}

/* Member i of block b of a list (NULL: the identity list). */
__device__ __forceinline__ uint32_t vk_tok(const uint32_t *list, uint32_t b, uint32_t G, uint32_t i)
{
    return list != NULL ? list[(uint64_t)b * G + i] : b * G + i;
}

/* The ternary groups of a token list of l tokens (list NULL: all T tokens).
 * GT = G at compile time (32, 64): the group's members loaded into registers in
 * one unrolled pass (every load in flight at once, the list entries first),
 * each read once; GT = 0: any G, the members read from memory twice. */
template <uint32_t GT>
__global__ void __launch_bounds__(TERN_BS)
vk_tern_list_kernel(uint8_t *tern, float *beta, vk_state *st, const float *v, const uint32_t *list,
                    uint32_t l, kvq_vidkv_params p, bool daz, bool nanpol)
{
    const uint32_t G = GT ? GT : p.group, d = p.dim, nb = kvq_vidkv_list_blocks(l, G);
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t ng = (uint64_t)p.heads * nb * d;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        uint64_t hb;
        uint32_t c;
        vk_divmod(gid, ng, d, hb, c);
        const uint32_t h = (uint32_t)(hb / nb), b = (uint32_t)(hb - (uint64_t)h * nb);
        const uint32_t m = kvq_vidkv_block_members(l, G, b), gb = kvq_vidkv_tern_group_bytes(&p);
        const float *x = v + (uint64_t)h * p.tokens * d + c;
        uint8_t *grp = tern + gid * gb;
        float S = 0.0f, B = 0.0f;
        uint32_t nz = 0;
        float r[GT ? GT : 1u];
        if (GT) {
            uint32_t tk[GT ? GT : 1u];
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) tk[i] = i < m ? vk_tok(list, b, G, i) : 0u;
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) r[i] = i < m ? x[(uint64_t)tk[i] * d] : 0.0f;
        }
#pragma unroll
        for (uint32_t i = 0; i < (GT ? GT : m); i++) {
            if (i >= m) break;
            const float xv = GT ? r[GT ? i : 0u] : x[(uint64_t)vk_tok(list, b, G, i) * d];
            S = __fadd_rn(S, fabsf(vk_read(xv, KVQ_VIDKV_DOMAIN, daz, f, err)));
        }
        const float alpha = __fmul_rn(p.gamma, __fdiv_rn(S, (float)m));
        uint32_t acc = 0, pw = 1;
#pragma unroll
        for (uint32_t i = 0; i < (GT ? GT + 4u : 5u * gb); i++) {
            if (!(i < 5u * gb && (p.vpack == KVQ_VIDKV_PACK_BASE3 || i < G))) break;
            uint32_t dg = 0;
            if (i < m) {
                const float xv = vk_daz(GT ? r[GT && i < GT ? i : 0u] : x[(uint64_t)vk_tok(list, b, G, i) * d], daz);
                const int32_t t = kvq_vidkv_trit(xv, alpha);
                dg = kvq_vidkv_trit_digit(t);
                if (t != 0) {
                    B = __fadd_rn(B, fabsf(xv));
                    nz++;
                }
            }
            if (p.vpack == KVQ_VIDKV_PACK_BASE3) {
                acc += dg * pw;
                pw *= 3u;
                if (i % 5u == 4u) {
                    grp[i / 5u] = (uint8_t)acc;
                    acc = 0u;
                    pw = 1u;
                }
            } else {
                acc |= dg << (2u * (i % 4u));
                if (i % 4u == 3u) {
                    grp[i / 4u] = (uint8_t)acc;
                    acc = 0u;
                }
            }
        }
        if (p.vdeq == KVQ_VIDKV_VDEQ_SCALED)
            beta[gid] = vk_store_scale(nz ? __fdiv_rn(B, (float)nz) : 0.0f, p.meta, nanpol, f, err);
    }
    vk_publish(st, f, err);
}

/* The ternary groups of a token list for G = 32, 64 with the packing and SCALED at
 * compile time: the members (m <= G; a list's last group may be short) loaded
 * into registers in one unrolled pass, list entries first; the input checks
 * folded into the greatest magnitude bits and the least (bits - 1), decided once
 * a group, as vk_tern_fast_kernel's; S ascending over the members from +0, alpha
 * = RN32(gamma * RN32(S / m)); the digits packed by constant powers of 3 (a
 * short group's slots past m hold digit 0, as the reference's zeroed bytes). */
template <uint32_t G, uint32_t PACK, bool SCALED>
__global__ void __launch_bounds__(TERN_BS)
vk_tern_listg_kernel(uint8_t *tern, float *beta, vk_state *st, const float *v, const uint32_t *list,
                     uint32_t l, kvq_vidkv_params p, bool daz, bool nanpol)
{
    constexpr uint32_t GB = PACK == KVQ_VIDKV_PACK_BASE3 ? (G + 4u) / 5u : G / 4u;
    const uint32_t d = p.dim, nb = kvq_vidkv_list_blocks(l, G);
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t ng = (uint64_t)p.heads * nb * d;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        uint64_t hb;
        uint32_t c;
        vk_divmod(gid, ng, d, hb, c);
        const uint32_t h = (uint32_t)(hb / nb), b = (uint32_t)(hb - (uint64_t)h * nb);
        const uint32_t m = kvq_vidkv_block_members(l, G, b);
        const float *x = v + (uint64_t)h * p.tokens * d + c;
        uint8_t *grp = tern + gid * GB;
        uint32_t tk[G];
        float r[G];
#pragma unroll
        for (uint32_t i = 0; i < G; i++) tk[i] = i < m ? vk_tok(list, b, G, i) : 0u;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) r[i] = i < m ? x[(uint64_t)tk[i] * d] : 0.0f;
        float S = 0.0f;
        uint32_t amax = 0u, smin = 0xFFFFFFFFu;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            if (i < m) {
                const uint32_t u = __float_as_uint(r[i]), a = u & 0x7FFFFFFFu;
                amax = max(amax, a);
                smin = min(smin, a - 1u);
                r[i] = daz && a - 1u < 0x007FFFFFu ? __uint_as_float(u & 0x80000000u) : r[i];
                S = __fadd_rn(S, fabsf(r[i]));
            }
        }
        const float alpha = __fmul_rn(p.gamma, __fdiv_rn(S, (float)m));
        float B = 0.0f;
        uint32_t nz = 0, acc = 0;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            const bool pl = i < m && r[i] > alpha, mi = i < m && r[i] < -alpha; /* [VIDKV-V-02] */
            const uint32_t dg = pl ? 1u : mi ? 2u : 0u;                         /* [VIDKV-V-04] */
            if (SCALED && (pl || mi)) {
                B = __fadd_rn(B, fabsf(r[i]));
                nz++;
            }
            if (PACK == KVQ_VIDKV_PACK_BASE3) {
                acc += dg * (i % 5u == 0u ? 1u : i % 5u == 1u ? 3u : i % 5u == 2u ? 9u : i % 5u == 3u ? 27u : 81u);
                if (i % 5u == 4u || i == G - 1u) {
                    grp[i / 5u] = (uint8_t)acc;
                    acc = 0u;
                }
            } else {
                acc |= dg << (2u * (i % 4u));
                if (i % 4u == 3u) {
                    grp[i / 4u] = (uint8_t)acc;
                    acc = 0u;
                }
            }
        }
        if (SCALED) beta[gid] = vk_store_scale(nz ? __fdiv_rn(B, (float)nz) : 0.0f, p.meta, nanpol, f, err);
        if (amax >= 0x7F800000u) err |= VK_ERR_NONFINITE;
        else if (amax >= __float_as_uint(KVQ_VIDKV_DOMAIN)) err |= VK_ERR_RANGE;
        if (smin < 0x007FFFFFu) f |= KVQ_FLAG_SUBNORMAL;
    }
    vk_publish(st, f, err);
}

/* The protected list's 2-bit KIVI groups [VIDKV-STP-03] [KIVI-Q-01..06].  GT = G
 * at compile time (32, 64): the members loaded into registers in one unrolled
 * pass (every load in flight), each read once; GT = 0: any G, read twice. */
template <uint32_t GT>
__global__ void __launch_bounds__(TERN_BS)
vk_prot_kernel(uint8_t *pc, float *psc, float *pzr, vk_state *st, const float *v, const uint32_t *lp,
               uint32_t np, kvq_vidkv_params p, bool daz, bool away, bool nanpol)
{
    const uint32_t G = GT ? GT : p.group, d = p.dim, nb = kvq_vidkv_list_blocks(np, G);
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t ng = (uint64_t)p.heads * nb * d;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        const uint32_t c = (uint32_t)(gid % d);
        const uint64_t hb = gid / d;
        const uint32_t h = (uint32_t)(hb / nb), b = (uint32_t)(hb % nb);
        const uint32_t m = kvq_vidkv_block_members(np, G, b);
        const float *x = v + (uint64_t)h * p.tokens * d + c;
        const uint32_t *li = lp + (uint64_t)b * G;
        float r[GT ? GT : 1u];
        if (GT) {
            uint32_t tk[GT ? GT : 1u];
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) tk[i] = i < m ? li[i] : 0u;
#pragma unroll
            for (uint32_t i = 0; i < (GT ? GT : 1u); i++) r[i] = i < m ? x[(uint64_t)tk[i] * d] : 0.0f;
        }
        /* the slots m .. G-1 repeat member 0: they move neither extreme */
        float mn = vk_read(GT ? r[0] : x[(uint64_t)li[0] * d], KVQ_VIDKV_DOMAIN, daz, f, err), mx = mn, sc, z;
        if (GT) r[0] = mn;
#pragma unroll
        for (uint32_t i = 1; i < (GT ? GT : m); i++) {
            if (i >= m) break;
            const float xv = vk_read(GT ? r[GT ? i : 0u] : x[(uint64_t)li[i] * d], KVQ_VIDKV_DOMAIN, daz, f, err);
            if (GT) r[GT ? i : 0u] = xv;
            if (xv < mn) mn = xv;
            if (xv > mx) mx = xv;
        }
        vk_kivi_meta(sc, z, f, err, mn, mx, 3.0f, p.meta, nanpol);
        const float rcp = sc != 0.0f ? __frcp_rn(sc) : 0.0f;
        uint8_t *grp = pc + gid * (G / 4u);
        uint32_t acc = 0;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            /* a repeated slot's code (that of member 0) is stored as 0 */
            const uint32_t code = i < m ? vk_kivi_code_rcp(GT ? r[GT ? i : 0u] : vk_daz(x[(uint64_t)li[i] * d], daz),
                                                           sc, rcp, z, 3u, away, f)
                                        : 0u;
            acc |= code << kvq_code_shift(i, 2u);
            if (i % 4u == 3u) {
                grp[kvq_code_byte(i, 2u)] = (uint8_t)acc;
                acc = 0u;
            }
        }
        psc[gid] = sc;
        pzr[gid] = z;
    }
    vk_publish(st, f, err);
}

template <uint32_t G>
static void tern_fast_launch(uint8_t *tern, float *beta, vk_state *st, const float *v, uint64_t ng,
                             const kvq_vidkv_params *p, bool daz, bool nanpol, cudaStream_t s)
{
    const unsigned int nb = vk_blocks(ng, TERN_BS);
    const bool scaled = p->vdeq == KVQ_VIDKV_VDEQ_SCALED;
#define VK_TERN_FAST(PK, SC, DZ)                                                                        \
    vk_tern_fast_kernel<G, PK, SC, DZ><<<nb, TERN_BS, 0, s>>>(tern, beta, st, v, ng, p->dim, p->gamma,   \
                                                              p->meta, nanpol)
#define VK_TERN_FAST_PK(PK)                                                                             \
    do {                                                                                                \
        if (scaled) { if (daz) VK_TERN_FAST(PK, true, true); else VK_TERN_FAST(PK, true, false); }      \
        else { if (daz) VK_TERN_FAST(PK, false, true); else VK_TERN_FAST(PK, false, false); }           \
    } while (0)
    if (p->vpack == KVQ_VIDKV_PACK_BASE3) VK_TERN_FAST_PK(KVQ_VIDKV_PACK_BASE3);
    else VK_TERN_FAST_PK(KVQ_VIDKV_PACK_BITS2);
#undef VK_TERN_FAST_PK
#undef VK_TERN_FAST
}

kvq_status kvq_cuda_vidkv_quantize_values(const kvq_vidkv_values *d_out, uint32_t *np_out,
                                          uint32_t *flags, const float *d_v,
                                          const kvq_vidkv_params *p, const kvq_vidkv_stp *sp,
                                          const kvq_policy *pol, uint32_t opts,
                                          cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    vk_state h = {0u, 0u};
    uint32_t np = 0u;
    bool drained = false; /* the stream synchronized with nothing enqueued after but the free */
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    if (d_out == NULL || np_out == NULL || d_v == NULL || p == NULL || d_out->tern == NULL)
        return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    const bool stp = p->protect > 0.0f, scaled = p->vdeq == KVQ_VIDKV_VDEQ_SCALED;
    if (scaled && d_out->beta == NULL) return KVQ_E_PARAM;
    if (stp) {
        if (d_out->prot == NULL || d_out->p_codes == NULL || d_out->p_scale == NULL || d_out->p_zero == NULL)
            return KVQ_E_PARAM;
        if ((st = vk_stp_check(p, sp)) != KVQ_OK) return st;
        np = kvq_vidkv_prot_count(p->protect, sp->vis_count);
    }
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint32_t T = p->tokens, nt = T - np;
    const uint64_t tcb = kvq_vidkv_tern_code_bytes(p, np), ntg = kvq_vidkv_tern_groups(p, np),
                   npg = kvq_vidkv_prot_groups(p, np), pcb = kvq_vidkv_prot_code_bytes(p, np);
    const uint32_t pmb = kvq_vidkv_prot_mask_bytes(p);
    /* scratch: state, then (unless direct) the outputs, then the lists and STP's own */
    const size_t sb = stp ? vk_stp_scratch(p, sp) : 0u;
    if (stp && sb == 0u) return KVQ_E_DEVICE;
    const size_t o_t = 256u, o_b = o_t + (direct ? 0u : up256(tcb)),
                 o_m = o_b + (direct || !scaled ? 0u : up256(ntg * 4u)),
                 o_pc = o_m + (direct || !stp ? 0u : up256(pmb)), o_ps = o_pc + (direct ? 0u : up256(pcb)),
                 o_pz = o_ps + (direct ? 0u : up256(npg * 4u)), o_lt = o_pz + (direct ? 0u : up256(npg * 4u)),
                 o_lp = o_lt + (stp ? up256((size_t)T * 4u) : 0u), o_s = o_lp + (stp ? up256((size_t)T * 4u) : 0u),
                 tot = o_s + sb;
    if (cudaMallocAsync(&ws, tot, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        vk_state *dst = (vk_state *)w;
        uint8_t *tern = direct ? d_out->tern : w + o_t;
        float *beta = direct ? d_out->beta : (float *)(w + o_b);
        uint8_t *prot = direct ? d_out->prot : w + o_m;
        uint8_t *pc = direct ? d_out->p_codes : w + o_pc;
        float *psc = direct ? d_out->p_scale : (float *)(w + o_ps), *pzr = direct ? d_out->p_zero : (float *)(w + o_pz);
        uint32_t *lt = stp ? (uint32_t *)(w + o_lt) : NULL, *lp = stp ? (uint32_t *)(w + o_lp) : NULL;
        const bool daz = pol->subnormal == KVQ_SUBNORMAL_DAZ, nanpol = pol->overflow == KVQ_OVERFLOW_NAN,
                   away = pol->ties == KVQ_TIES_AWAY;
        VK_CK(cudaMemsetAsync(dst, 0, sizeof *dst, stream));
        if (stp && (st = vk_stp_enqueue(prot, NULL, lt, lp, dst, p, sp, daz, w + o_s, stream)) != KVQ_OK)
            goto out;
        if (!stp && p->group == 32u) tern_fast_launch<32u>(tern, beta, dst, d_v, ntg, p, daz, nanpol, stream);
        else if (!stp && p->group == 64u) tern_fast_launch<64u>(tern, beta, dst, d_v, ntg, p, daz, nanpol, stream);
        else if (ntg > 0u && (p->group == 32u || p->group == 64u)) {
            const unsigned int lb = vk_blocks(ntg, TERN_BS);
            const bool b3 = p->vpack == KVQ_VIDKV_PACK_BASE3;
#define VK_LISTG(G, PK, SC) \
    vk_tern_listg_kernel<G, PK, SC><<<lb, TERN_BS, 0, stream>>>(tern, beta, dst, d_v, lt, nt, *p, daz, nanpol)
            if (p->group == 32u) {
                if (b3) { if (scaled) VK_LISTG(32u, KVQ_VIDKV_PACK_BASE3, true); else VK_LISTG(32u, KVQ_VIDKV_PACK_BASE3, false); }
                else { if (scaled) VK_LISTG(32u, KVQ_VIDKV_PACK_BITS2, true); else VK_LISTG(32u, KVQ_VIDKV_PACK_BITS2, false); }
            } else {
                if (b3) { if (scaled) VK_LISTG(64u, KVQ_VIDKV_PACK_BASE3, true); else VK_LISTG(64u, KVQ_VIDKV_PACK_BASE3, false); }
                else { if (scaled) VK_LISTG(64u, KVQ_VIDKV_PACK_BITS2, true); else VK_LISTG(64u, KVQ_VIDKV_PACK_BITS2, false); }
            }
#undef VK_LISTG
        } else if (ntg > 0u)
            vk_tern_list_kernel<0u><<<vk_blocks(ntg, TERN_BS), TERN_BS, 0, stream>>>(tern, beta, dst, d_v, lt, nt,
                                                                                    *p, daz, nanpol);
        if (npg > 0u && p->group == 32u)
            vk_prot_kernel<32u><<<vk_blocks(npg, TERN_BS), TERN_BS, 0, stream>>>(pc, psc, pzr, dst, d_v, lp, np, *p,
                                                                                daz, away, nanpol);
        else if (npg > 0u && p->group == 64u)
            vk_prot_kernel<64u><<<vk_blocks(npg, TERN_BS), TERN_BS, 0, stream>>>(pc, psc, pzr, dst, d_v, lp, np, *p,
                                                                                daz, away, nanpol);
        else if (npg > 0u)
            vk_prot_kernel<0u><<<vk_blocks(npg, TERN_BS), TERN_BS, 0, stream>>>(pc, psc, pzr, dst, d_v, lp, np, *p,
                                                                               daz, away, nanpol);
        VK_CK(cudaGetLastError());
        VK_CK(vk_readback(&h, dst, sizeof h, stream));
        drained = true;
        if ((st = vk_state_status(&h)) != KVQ_OK) goto out;
        if (!direct) {
            drained = false;
            VK_CK(cudaMemcpyAsync(d_out->tern, tern, tcb, cudaMemcpyDeviceToDevice, stream));
            if (scaled) VK_CK(cudaMemcpyAsync(d_out->beta, beta, ntg * 4u, cudaMemcpyDeviceToDevice, stream));
            if (stp) {
                VK_CK(cudaMemcpyAsync(d_out->prot, prot, pmb, cudaMemcpyDeviceToDevice, stream));
                VK_CK(cudaMemcpyAsync(d_out->p_codes, pc, pcb, cudaMemcpyDeviceToDevice, stream));
                VK_CK(cudaMemcpyAsync(d_out->p_scale, psc, npg * 4u, cudaMemcpyDeviceToDevice, stream));
                VK_CK(cudaMemcpyAsync(d_out->p_zero, pzr, npg * 4u, cudaMemcpyDeviceToDevice, stream));
            }
        }
        *np_out = np;
        if (flags != NULL) *flags = h.flags;
    }
out:
    /* the scratch is freed in stream order; a second wait only when work was enqueued after
     * the status was read (the copy-out) or the call left before reading it */
    cudaFreeAsync(ws, stream);
    if (!drained && cudaStreamSynchronize(stream) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}

/* ---- dequantizer input checks [VIDKV-D-02..03] --------------------------------- */

/* The check words: the first bad ternary group; the first bad beta, p_scale,
 * p_zero as group * 16 + status; the protection mask's set bits below T (held
 * complemented: ~count) and whether one lies at or beyond T (all ones: none).
 * One memset of all ones clears every word. */
typedef struct vk_vcheck {
    unsigned long long key[4];
    uint32_t count, beyond;
} vk_vcheck;

__device__ __forceinline__ bool vk_vcheck_ok(const vk_vcheck *k, bool stp, uint32_t np)
{
    return (k->key[0] & k->key[1] & k->key[2] & k->key[3]) == ~0ull &&
           (!stp || (~k->count == np && k->beyond == ~0u));
}

/* Bytes of four holding an invalid code: a BASE3 byte above 242, a BITS2 field 3. */
__device__ __forceinline__ uint32_t vk_bad4(uint32_t w, uint32_t pack)
{
    return pack == KVQ_VIDKV_PACK_BASE3 ? __vcmpgtu4(w, 0xF2F2F2F2u) : (w & (w >> 1) & 0x55555555u);
}

/* Full groups (no STP): every byte of every group holds a used slot, so the
 * groups are valid iff every byte is; 16 bytes a load when aligned. */
__global__ void vk_tern_check_bytes_kernel(unsigned long long *key, const uint8_t *tern, uint64_t nbytes,
                                           uint32_t gb, uint32_t pack)
{
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, nth = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t nw = ((uintptr_t)tern & 15u) == 0u ? nbytes / 16u : 0u;
    for (uint64_t w = tid; w < nw; w += nth) {
        const uint4 q = __ldcs((const uint4 *)tern + w);
        if (vk_bad4(q.x, pack) | vk_bad4(q.y, pack) | vk_bad4(q.z, pack) | vk_bad4(q.w, pack))
            for (uint32_t k = 0; k < 16u; k++)
                if (vk_bad4(tern[w * 16u + k], pack)) {
                    atomicMin(key, (unsigned long long)((w * 16u + k) / gb));
                    break;
                }
    }
    for (uint64_t e = nw * 16u + tid; e < nbytes; e += nth)
        if (vk_bad4(tern[e], pack)) atomicMin(key, (unsigned long long)(e / gb));
}

/* Groups of a list of nt tokens, the short last one checked on its used slots. */
__global__ void vk_tern_check_list_kernel(unsigned long long *key, const uint8_t *tern, uint64_t ng,
                                          kvq_vidkv_params p, uint32_t nt)
{
    const uint32_t gb = kvq_vidkv_tern_group_bytes(&p), nb = kvq_vidkv_list_blocks(nt, p.group);
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < ng;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t m = kvq_vidkv_block_members(nt, p.group, (uint32_t)((g / p.dim) % nb));
        if (!kvq_vidkv_tern_group_ok(tern + g * gb, m, p.vpack)) atomicMin(key, (unsigned long long)g);
    }
}

__global__ void vk_meta_check_kernel_v(unsigned long long *key, const float *a, uint64_t n, bool is_scale,
                                       uint32_t meta)
{
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t s = vk_meta_ok(a[g], is_scale, meta);
        if (s != KVQ_OK) atomicMin(key, (unsigned long long)g * 16u + s);
    }
}

/* The protection mask's set bits [VIDKV-D-02]. */
__global__ void vk_protmask_check_kernel(vk_vcheck *k, const uint8_t *prot, uint32_t T)
{
    uint32_t cnt = 0, beyond = 0;
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < (T + 7u) / 8u; b += gridDim.x * blockDim.x) {
        const uint32_t valid = 8u * b + 8u <= T ? 0xFFu : (1u << (T - 8u * b)) - 1u;
        cnt += __popc(prot[b] & valid);
        beyond |= prot[b] & ~valid;
    }
    if (cnt) atomicSub(&k->count, cnt);  /* count holds ~(set bits) */
    if (beyond) atomicAnd(&k->beyond, 0u); /* all ones: no bit at or past T */
}

/* ---- dequantization ---------------------------------------------------------- */

/* The bits of a ternary value: digit 0 -> +0, 1 -> bb, 2 -> bb with the sign
 * flipped (bb: 1.0f under RAW, the stored beta under SCALED) [VIDKV-V-03]. */
__device__ __forceinline__ float vk_tval(uint32_t dg, uint32_t bb)
{
    return __uint_as_float(dg == 0u ? 0u : bb ^ (dg == 2u ? 0x80000000u : 0u));
}

template <uint32_t G, uint32_t PACK, bool SCALED>
__global__ void __launch_bounds__(DEQ_BS)
vk_tern_deq_fast_kernel(float *y, const uint8_t *tern, const float *beta, const vk_vcheck *ck, uint64_t ng,
                        uint32_t d)
{
    constexpr uint32_t GB = PACK == KVQ_VIDKV_PACK_BASE3 ? (G + 4u) / 5u : G / 4u;
    constexpr uint32_t PER = PACK == KVQ_VIDKV_PACK_BASE3 ? 5u : 4u;
#if !(defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 3) /* planted: written whatever the checks found */
    if (!vk_vcheck_ok(ck, false, 0u)) return;
#endif
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= ng) return;
    uint64_t hb;
    uint32_t c;
    vk_divmod(gid, ng, d, hb, c);
    const uint8_t *grp = tern + gid * GB;
    float *out = y + hb * G * d + c;
    const uint32_t bb = SCALED ? __float_as_uint(beta[gid]) : 0x3F800000u;
#pragma unroll
    for (uint32_t j = 0; j < GB; j++) {
        uint32_t by = grp[j];
#pragma unroll
        for (uint32_t k = 0; k < PER; k++) {
            const uint32_t i = j * PER + k;
            if (i < G) {
                uint32_t dg;
                if (PACK == KVQ_VIDKV_PACK_BASE3) {
                    const uint32_t q = (by * 171u) >> 9; /* floor(by / 3) for by < 256 */
                    dg = by - 3u * q;
                    by = q;
                } else {
                    dg = (by >> (2u * k)) & 3u;
                }
                __stcs(out + i * d, vk_tval(dg, bb));
            }
        }
    }
}

/* The ternary groups of a token list of l tokens (list NULL: all T). */
/* The elements of a token list's groups (list NULL: all T tokens).  GT = 32, 64
 * (G at compile time) with PACK: the group's bytes read once and expanded as the
 * full-group kernel expands them (a base-3 digit by q = (y * 171) >> 9), the
 * list entries loaded ahead of the stores; GT = 0: any G, digit by digit. */
template <uint32_t GT, uint32_t PACK>
__global__ void __launch_bounds__(DEQ_BS)
vk_tern_deq_list_kernel(float *y, const uint8_t *tern, const float *beta, const vk_vcheck *ck, bool stp,
                        uint32_t np, const uint32_t *list, uint32_t l, kvq_vidkv_params p)
{
    if (!vk_vcheck_ok(ck, stp, np)) return;
    const uint32_t G = GT ? GT : p.group, d = p.dim, nb = kvq_vidkv_list_blocks(l, G);
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, ng = (uint64_t)p.heads * nb * d;
    if (gid >= ng) return;
    uint64_t hb;
    uint32_t c;
    vk_divmod(gid, ng, d, hb, c);
    const uint32_t h = (uint32_t)(hb / nb), b = (uint32_t)(hb - (uint64_t)h * nb), m = kvq_vidkv_block_members(l, G, b);
    const uint8_t *grp = tern + gid * kvq_vidkv_tern_group_bytes(&p);
    float *out = y + (uint64_t)h * p.tokens * d + c;
    const uint32_t bb = p.vdeq == KVQ_VIDKV_VDEQ_SCALED ? __float_as_uint(beta[gid]) : 0x3F800000u;
    if (GT) {
        constexpr uint32_t GB = GT == 0u ? 1u : PACK == KVQ_VIDKV_PACK_BASE3 ? (GT + 4u) / 5u : GT / 4u;
        constexpr uint32_t PER = PACK == KVQ_VIDKV_PACK_BASE3 ? 5u : 4u;
        uint32_t tk[GT ? GT : 1u];
#pragma unroll
        for (uint32_t i = 0; i < (GT ? GT : 1u); i++) tk[i] = i < m ? vk_tok(list, b, G, i) : 0u;
#pragma unroll
        for (uint32_t j = 0; j < GB; j++) {
            uint32_t by = grp[j];
#pragma unroll
            for (uint32_t k = 0; k < PER; k++) {
                const uint32_t i = j * PER + k;
                if (i < (GT ? GT : 1u)) {
                    uint32_t dg;
                    if (PACK == KVQ_VIDKV_PACK_BASE3) {
                        const uint32_t q = (by * 171u) >> 9; /* floor(by / 3) for by < 256 */
                        dg = by - 3u * q;
                        by = q;
                    } else {
                        dg = (by >> (2u * k)) & 3u;
                    }
                    if (i < m) out[(uint64_t)tk[i < (GT ? GT : 1u) ? i : 0u] * d] = vk_tval(dg, bb);
                }
            }
        }
    } else {
#pragma unroll 8 /* the list entries' loads ahead of the stores */
        for (uint32_t i = 0; i < m; i++)
            out[(uint64_t)vk_tok(list, b, G, i) * d] = vk_tval(kvq_vidkv_tern_get(grp, i, p.vpack), bb);
    }
}
__global__ void __launch_bounds__(DEQ_BS)
vk_prot_deq_kernel(float *y, const uint8_t *pc, const float *psc, const float *pzr, const vk_vcheck *ck,
                   uint32_t np, const uint32_t *lp, kvq_vidkv_params p)
{
    if (!vk_vcheck_ok(ck, true, np)) return;
    const uint32_t G = p.group, d = p.dim, nb = kvq_vidkv_list_blocks(np, G);
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= (uint64_t)p.heads * nb * d) return;
    const uint32_t c = (uint32_t)(gid % d);
    const uint64_t hb = gid / d;
    const uint32_t h = (uint32_t)(hb / nb), b = (uint32_t)(hb % nb), m = kvq_vidkv_block_members(np, G, b);
    const uint8_t *grp = pc + gid * (G / 4u);
    float *out = y + (uint64_t)h * p.tokens * d + c;
    const float s = psc[gid], z = pzr[gid];
#pragma unroll 8 /* the list entries' loads ahead of the stores */
    for (uint32_t i = 0; i < m; i++)
        out[(uint64_t)lp[(uint64_t)b * G + i] * d] = __fmaf_rn((float)kvq_unpack_code(grp, i, 2u), s, z);
}

template <uint32_t G>
static void tern_deq_fast_launch(float *y, const uint8_t *tern, const float *beta, const vk_vcheck *ck,
                                 uint64_t ng, const kvq_vidkv_params *p, cudaStream_t s)
{
    const unsigned int nb = vk_blocks(ng, DEQ_BS);
    const bool scaled = p->vdeq == KVQ_VIDKV_VDEQ_SCALED;
#define VK_DEQ_FAST(PK, SC) vk_tern_deq_fast_kernel<G, PK, SC><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, ng, p->dim)
    if (p->vpack == KVQ_VIDKV_PACK_BASE3) {
        if (scaled) VK_DEQ_FAST(KVQ_VIDKV_PACK_BASE3, true);
        else VK_DEQ_FAST(KVQ_VIDKV_PACK_BASE3, false);
    } else {
        if (scaled) VK_DEQ_FAST(KVQ_VIDKV_PACK_BITS2, true);
        else VK_DEQ_FAST(KVQ_VIDKV_PACK_BITS2, false);
    }
#undef VK_DEQ_FAST
}

static unsigned int check_blocks(uint64_t n)
{
    unsigned int b = vk_blocks(n, 256u);
    return b > 4096u ? 4096u : b;
}

static void tern_deq_list_launch(float *y, const uint8_t *tern, const float *beta, const vk_vcheck *ck, bool stp,
                                 uint32_t np, const uint32_t *list, uint32_t l, const kvq_vidkv_params *p,
                                 uint64_t ng, cudaStream_t s)
{
    const unsigned int nb = vk_blocks(ng, DEQ_BS);
    const bool b3 = p->vpack == KVQ_VIDKV_PACK_BASE3;
    if (p->group == 32u && b3)
        vk_tern_deq_list_kernel<32u, KVQ_VIDKV_PACK_BASE3><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, stp, np, list, l, *p);
    else if (p->group == 32u)
        vk_tern_deq_list_kernel<32u, KVQ_VIDKV_PACK_BITS2><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, stp, np, list, l, *p);
    else if (p->group == 64u && b3)
        vk_tern_deq_list_kernel<64u, KVQ_VIDKV_PACK_BASE3><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, stp, np, list, l, *p);
    else if (p->group == 64u)
        vk_tern_deq_list_kernel<64u, KVQ_VIDKV_PACK_BITS2><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, stp, np, list, l, *p);
    else
        vk_tern_deq_list_kernel<0u, 0u><<<nb, DEQ_BS, 0, s>>>(y, tern, beta, ck, stp, np, list, l, *p);
}

kvq_status kvq_cuda_vidkv_dequantize_values(float *d_y, uint32_t *flags,
                                            const kvq_vidkv_values *d_in, uint32_t np,
                                            const kvq_vidkv_params *p, const kvq_policy *pol,
                                            cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    vk_vcheck hk;
    bool drained = false;
    if (d_y == NULL || d_in == NULL || p == NULL || d_in->tern == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    const bool stp = p->protect > 0.0f, scaled = p->vdeq == KVQ_VIDKV_VDEQ_SCALED;
    if ((scaled && d_in->beta == NULL) ||
        (stp && (d_in->prot == NULL || d_in->p_codes == NULL || d_in->p_scale == NULL || d_in->p_zero == NULL)))
        return KVQ_E_PARAM;
    if ((!stp && np != 0u) || np > p->tokens) return KVQ_E_PARAM;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const uint32_t T = p->tokens, nt = T - np;
    const uint64_t ntg = kvq_vidkv_tern_groups(p, np), npg = kvq_vidkv_prot_groups(p, np);
    const size_t lb = stp ? up256((size_t)T * 4u) : 0u, sb = stp ? vk_mask_lists_scratch(T) : 0u;
    if (stp && sb == 0u) return KVQ_E_DEVICE;
    if (cudaMallocAsync(&ws, 256u + 2u * lb + sb, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        vk_vcheck *ck = (vk_vcheck *)w;
        /* both lists hold T entries: a malformed mask cannot write past them */
        uint32_t *lt = stp ? (uint32_t *)(w + 256u) : NULL, *lp = stp ? (uint32_t *)(w + 256u + lb) : NULL;
        VK_CK(cudaMemsetAsync(ck, 0xFF, sizeof *ck, stream)); /* every word all ones: nothing found */
        /* the checks, in the stream before every element kernel [VIDKV-D-02..03] */
        if (stp) {
            vk_protmask_check_kernel<<<check_blocks((T + 7u) / 8u), 256u, 0, stream>>>(ck, d_in->prot, T);
            if (ntg > 0u)
                vk_tern_check_list_kernel<<<check_blocks(ntg), 256u, 0, stream>>>(&ck->key[0], d_in->tern, ntg,
                                                                                   *p, nt);
        } else {
            const uint64_t nbytes = kvq_vidkv_tern_code_bytes(p, 0u);
            vk_tern_check_bytes_kernel<<<check_blocks(nbytes / 16u + 1u), 256u, 0, stream>>>(
                &ck->key[0], d_in->tern, nbytes, kvq_vidkv_tern_group_bytes(p), p->vpack);
        }
        if (scaled && ntg > 0u)
            vk_meta_check_kernel_v<<<check_blocks(ntg), 256u, 0, stream>>>(&ck->key[1], d_in->beta, ntg, true,
                                                                            p->meta);
        if (stp && npg > 0u) {
            vk_meta_check_kernel_v<<<check_blocks(npg), 256u, 0, stream>>>(&ck->key[2], d_in->p_scale, npg, true,
                                                                            p->meta);
            vk_meta_check_kernel_v<<<check_blocks(npg), 256u, 0, stream>>>(&ck->key[3], d_in->p_zero, npg, false,
                                                                            p->meta);
        }
        VK_CK(cudaGetLastError());
        if (stp) {
            if ((st = vk_prot_lists_enqueue(lt, lp, d_in->prot, T, w + 256u + 2u * lb, stream)) != KVQ_OK) goto out;
            if (ntg > 0u) tern_deq_list_launch(d_y, d_in->tern, d_in->beta, ck, true, np, lt, nt, p, ntg, stream);
            if (npg > 0u)
                vk_prot_deq_kernel<<<vk_blocks(npg, DEQ_BS), DEQ_BS, 0, stream>>>(d_y, d_in->p_codes, d_in->p_scale,
                                                                                 d_in->p_zero, ck, np, lp, *p);
        } else if (p->group == 32u) {
            tern_deq_fast_launch<32u>(d_y, d_in->tern, d_in->beta, ck, ntg, p, stream);
        } else if (p->group == 64u) {
            tern_deq_fast_launch<64u>(d_y, d_in->tern, d_in->beta, ck, ntg, p, stream);
        } else {
            tern_deq_list_launch(d_y, d_in->tern, d_in->beta, ck, false, 0u, NULL, T, p, ntg, stream);
        }
        VK_CK(cudaGetLastError());
        VK_CK(vk_readback(&hk, ck, sizeof hk, stream));
        drained = true;
        /* the reference's order: mask, ternary groups, beta, p_scale, p_zero */
        if (stp && (~hk.count != np || hk.beyond != ~0u)) st = KVQ_E_PARAM;
        else if (hk.key[0] != ~0ull) st = KVQ_E_PARAM;
        else if (hk.key[1] != ~0ull) st = (kvq_status)(hk.key[1] % 16u);
        else if (hk.key[2] != ~0ull) st = (kvq_status)(hk.key[2] % 16u);
        else if (hk.key[3] != ~0ull) st = (kvq_status)(hk.key[3] % 16u);
        else if (flags != NULL) *flags = 0u;
    }
out:
    cudaFreeAsync(ws, stream);
    if (!drained && cudaStreamSynchronize(stream) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}
